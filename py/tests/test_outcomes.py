"""Outcomes from exceptions: `weir.outcome_for_exception` class by class, the same through a lease's `with`
and `async with` exits and `lease.raised`, and a balancer's own `classify=`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import socket
import subprocess
import sys
import urllib.error
from email.message import Message
from typing import Any, Callable, List, Tuple, Type

import httpx
import pytest
import requests
import urllib3.exceptions

import weir

O = weir.Outcome


def test_outcomes_and_criticalities_print_their_names() -> None:
    # str() and format() give the name on every Python version (3.11 made an IntEnum's the bare number);
    # int() and comparisons keep the code shared with Rust and C.
    assert str(O.SUCCESS) == f"{O.SUCCESS}" == "Outcome.SUCCESS"
    assert str(O.TIMEOUT) == "Outcome.DROPPED" and f"{O.CLIENT_ERROR:>20}" == "Outcome.CLIENT_ERROR".rjust(20)
    assert str(weir.Criticality.SHEDDABLE) == "Criticality.SHEDDABLE"
    assert repr(O.THROTTLED) == "<Outcome.THROTTLED: 4>"
    assert int(O.THROTTLED) == O.THROTTLED == 4 and f"{int(O.THROTTLED)}" == "4"
    assert [str(o) for o in O] == [f"Outcome.{o.name}" for o in O]


def http_error(status: int) -> urllib.error.HTTPError:
    return urllib.error.HTTPError("http://n/", status, "status", Message(), None)


def httpx_status_error(status: int) -> httpx.HTTPStatusError:
    request = httpx.Request("GET", "http://n/")
    response = httpx.Response(status, request=request)
    return httpx.HTTPStatusError("status", request=request, response=response)


def requests_http_error(status: int) -> requests.HTTPError:
    response = requests.Response()
    response.status_code = status
    return requests.HTTPError("status", response=response)


def caused(exc: BaseException, cause: BaseException) -> BaseException:
    exc.__cause__ = cause
    return exc


def refused_by_urllib3() -> requests.ConnectionError:
    """What requests raises for a refused connection: its ConnectionError of urllib3's MaxRetryError of a
    NewConnectionError (which urllib3 derives from its ConnectTimeoutError)."""
    new = urllib3.exceptions.NewConnectionError(None, "refused")  # type: ignore[arg-type]
    retries = urllib3.exceptions.MaxRetryError(None, "/", new)  # type: ignore[arg-type]
    return requests.ConnectionError(retries)


READ_TIMEOUT = urllib3.exceptions.ReadTimeoutError(None, "/", "t")  # type: ignore[arg-type]

# (exception, outcome): one row per class of the table in py/README.md.
TABLE: List[Tuple[BaseException, O]] = [
    # Cancellation and the other exceptions that are not Exception: not the node's fault.
    (asyncio.CancelledError(), O.IGNORED),
    (KeyboardInterrupt(), O.IGNORED),
    (SystemExit(1), O.IGNORED),
    (GeneratorExit(), O.IGNORED),
    (concurrent.futures.CancelledError(), O.IGNORED),
    # Timeouts: DROPPED.
    (TimeoutError(), O.DROPPED),
    (socket.timeout("timed out"), O.DROPPED),
    (asyncio.TimeoutError(), O.DROPPED),
    (concurrent.futures.TimeoutError(), O.DROPPED),
    (OSError(errno.ETIMEDOUT, "timed out"), O.DROPPED),
    (httpx.ConnectTimeout("t"), O.DROPPED),
    (httpx.ReadTimeout("t"), O.DROPPED),
    (httpx.WriteTimeout("t"), O.DROPPED),
    (requests.ConnectTimeout("t"), O.DROPPED),
    (requests.ReadTimeout("t"), O.DROPPED),
    (READ_TIMEOUT, O.DROPPED),
    (requests.ConnectionError(READ_TIMEOUT), O.DROPPED),
    (urllib.error.URLError(TimeoutError("timed out")), O.DROPPED),
    # Refused, reset, aborted connections: FAILURE.
    (ConnectionRefusedError(), O.FAILURE),
    (ConnectionResetError(), O.FAILURE),
    (ConnectionAbortedError(), O.FAILURE),
    (BrokenPipeError(), O.FAILURE),
    (OSError(errno.ECONNREFUSED, "refused"), O.FAILURE),
    (OSError(errno.EHOSTUNREACH, "unreachable"), O.FAILURE),
    (httpx.ConnectError("refused"), O.FAILURE),
    (httpx.ReadError("reset"), O.FAILURE),
    (httpx.RemoteProtocolError("closed"), O.FAILURE),
    (requests.ConnectionError("refused"), O.FAILURE),
    (refused_by_urllib3(), O.FAILURE),
    (urllib.error.URLError(ConnectionRefusedError()), O.FAILURE),
    # OSErrors by errno, as Rust's Outcome::from_io_kind and C's weir_outcome_from_errno read them.
    (OSError(errno.ENOTCONN, "not connected"), O.FAILURE),
    (OSError(errno.EADDRNOTAVAIL, "no address"), O.FAILURE),
    (OSError(errno.EPIPE, "broken pipe"), O.FAILURE),
    (BlockingIOError(), O.DROPPED),
    (OSError(errno.EAGAIN, "would block"), O.DROPPED),
    (InterruptedError(), O.IGNORED),
    (OSError(errno.EINTR, "interrupted"), O.IGNORED),
    (OSError(errno.EINVAL, "invalid"), O.IGNORED),
    (OSError(errno.ENOMEM, "no memory"), O.IGNORED),
    (MemoryError(), O.IGNORED),
    (OSError(errno.ENOSYS, "no such call"), O.IGNORED),
    (OSError(errno.EOPNOTSUPP, "not supported"), O.IGNORED),
    (urllib.error.URLError(InterruptedError()), O.IGNORED),
    # HTTP status errors: the status's outcome.
    (http_error(500), O.FAILURE),
    (http_error(503), O.DROPPED),
    (http_error(429), O.THROTTLED),
    (http_error(404), O.CLIENT_ERROR),
    (httpx_status_error(502), O.FAILURE),
    (httpx_status_error(504), O.DROPPED),
    (httpx_status_error(429), O.THROTTLED),
    (httpx_status_error(400), O.CLIENT_ERROR),
    (requests_http_error(500), O.FAILURE),
    (requests_http_error(503), O.DROPPED),
    (requests_http_error(429), O.THROTTLED),
    (requests_http_error(403), O.CLIENT_ERROR),
    (requests_http_error(700), O.FAILURE),
    (requests.HTTPError("no response"), O.FAILURE),
    # The caller's own mistakes and its own full pool: IGNORED.
    (httpx.PoolTimeout("pool"), O.IGNORED),
    (httpx.InvalidURL("bad"), O.IGNORED),
    (httpx.UnsupportedProtocol("ftp"), O.IGNORED),
    (httpx.LocalProtocolError("bad header"), O.IGNORED),
    (httpx.StreamConsumed(), O.IGNORED),
    (requests.exceptions.MissingSchema("no scheme"), O.IGNORED),
    (requests.exceptions.InvalidURL("bad"), O.IGNORED),
    (urllib3.exceptions.EmptyPoolError(None, "full"), O.IGNORED),  # type: ignore[arg-type]
    # Anything else: FAILURE, unless its cause says otherwise.
    (RuntimeError("boom"), O.FAILURE),
    (ValueError("bad json"), O.FAILURE),
    (OSError(errno.ENOENT, "no such file"), O.FAILURE),
    (caused(RuntimeError("wrapped"), TimeoutError()), O.DROPPED),
    (caused(RuntimeError("wrapped"), caused(ValueError(), asyncio.CancelledError())), O.IGNORED),
    (caused(ConnectionResetError(), TimeoutError()), O.FAILURE),
]
IDS = [f"{type(e).__module__}.{type(e).__qualname__}-{o.name}" for e, o in TABLE]


@pytest.mark.parametrize("exc, outcome", TABLE, ids=IDS)
def test_outcome_for_exception(exc: BaseException, outcome: O) -> None:
    assert weir.outcome_for_exception(exc) is outcome


# The errno table of the C test (ffi-c/tests/c/test_balancer.c) and the header's
# weir_outcome_from_errno, which is Rust's Outcome::from_io_kind of the errno's kind; any other errno is a
# FAILURE in all three.
ERRNO_TABLE = {
    "ECONNREFUSED": O.FAILURE,
    "ECONNRESET": O.FAILURE,
    "ECONNABORTED": O.FAILURE,
    "ENOTCONN": O.FAILURE,
    "EPIPE": O.FAILURE,
    "EADDRNOTAVAIL": O.FAILURE,
    "EHOSTUNREACH": O.FAILURE,
    "ENETUNREACH": O.FAILURE,
    "EACCES": O.FAILURE,
    "EIO": O.FAILURE,
    "ENOENT": O.FAILURE,
    "ETIMEDOUT": O.TIMEOUT,
    "EAGAIN": O.DROPPED,
    "EWOULDBLOCK": O.DROPPED,
    "EINTR": O.IGNORED,
    "EINVAL": O.IGNORED,
    "ENOMEM": O.IGNORED,
    "ENOSYS": O.IGNORED,
    "EOPNOTSUPP": O.IGNORED,
    "ENOTSUP": O.IGNORED,
}


def test_every_errno_is_read_as_c_and_rust_read_it() -> None:
    from weir._weir import outcome_from_errno

    named = {getattr(errno, name): outcome for name, outcome in ERRNO_TABLE.items() if hasattr(errno, name)}
    assert len(named) >= 17  # EWOULDBLOCK is EAGAIN and ENOTSUP EOPNOTSUPP on Linux
    for number in errno.errorcode:
        exc = OSError(number, "x")  # Python picks the subclass: ConnectionRefusedError, TimeoutError, ...
        # The core's table (Rust's Outcome::from_raw_os_error, C's weir_outcome_from_errno), read
        # through the native module: Python's own table cannot drift from it.
        want = O(outcome_from_errno(number))
        assert named.get(number, O.FAILURE) is want, errno.errorcode[number]
        assert weir.outcome_for_exception(exc) is want, errno.errorcode[number]
        # The same through a lease, as the HTTP integrations release theirs.
        b = weir.Balancer(["n"], weir.Config(seed=1))
        b.acquire().raised(exc)
        assert b.stats().by_outcome == one_hot(want), errno.errorcode[number]


def test_outcome_from_errno_refuses_what_is_no_errno() -> None:
    from weir._weir import outcome_from_errno

    for bad in (0, -1, -errno.ECONNREFUSED, 2**31, 2**70):
        with pytest.raises(ValueError, match="errnum"):
            outcome_from_errno(bad)
    with pytest.raises(TypeError, match="errnum must be an int"):
        outcome_from_errno(True)


def test_timeout_and_cancelled_are_aliases() -> None:
    assert O.TIMEOUT is O.DROPPED and O.CANCELLED is O.IGNORED
    assert (O.TIMEOUT.value, O.CANCELLED.value) == (2, 3)
    assert O["TIMEOUT"] is O.DROPPED and O(3) is O.IGNORED and O(3).name == "IGNORED"
    assert list(O) == [O.SUCCESS, O.FAILURE, O.DROPPED, O.IGNORED, O.THROTTLED, O.CLIENT_ERROR]
    b = weir.Balancer(["n"], weir.Config(seed=1))
    b.acquire().release(O.TIMEOUT)
    b.acquire().release(O.CANCELLED)
    assert b.stats().by_outcome == (0, 0, 1, 1, 0, 0)


def one_hot(outcome: O) -> Tuple[int, ...]:
    counts = [0] * 6
    counts[outcome] = 1
    return tuple(counts)


@pytest.mark.parametrize("exc, outcome", TABLE, ids=IDS)
def test_a_with_block_records_the_table(exc: BaseException, outcome: O) -> None:
    b = weir.Balancer(["n"], weir.Config(seed=1))
    with pytest.raises(type(exc)):
        with b.acquire():
            raise exc
    assert b.stats().by_outcome == one_hot(outcome)
    assert b.stats().in_flight == 0


@pytest.mark.parametrize("exc, outcome", TABLE, ids=IDS)
def test_an_async_with_block_records_the_table(exc: BaseException, outcome: O) -> None:
    b = weir.Balancer(["n"], weir.Config(seed=1))

    async def call() -> None:
        async with b.acquire():
            await asyncio.sleep(0)
            raise exc

    with pytest.raises(type(exc)):
        asyncio.run(call())
    assert b.stats().by_outcome == one_hot(outcome)


@pytest.mark.parametrize("exc, outcome", TABLE, ids=IDS)
def test_lease_raised_records_the_table(exc: BaseException, outcome: O) -> None:
    b = weir.Balancer(["n"], weir.Config(seed=1))
    assert b.acquire().raised(exc) is True
    assert b.stats().by_outcome == one_hot(outcome)


def test_a_task_cancelled_inside_async_with_is_ignored() -> None:
    b = weir.Balancer(["n"], weir.Config(seed=1))
    entered = asyncio.Event()

    async def call() -> None:
        async with b.acquire():
            entered.set()
            await asyncio.sleep(10)

    async def main() -> None:
        task = asyncio.ensure_future(call())
        await asyncio.wait_for(entered.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert b.stats().by_outcome == one_hot(O.IGNORED)
    assert b.stats().in_flight == 0


def test_an_asyncio_deadline_is_dropped_inside_the_block_and_ignored_outside() -> None:
    """`asyncio.wait_for` (or `asyncio.timeout`) cancels the work it bounds and raises TimeoutError outside
    it: around the lease's block, the block sees only the cancellation (IGNORED); inside, the exit sees
    the TimeoutError (DROPPED). Deadlines belong inside the block."""
    b = weir.Balancer(["n"], weir.Config(seed=1))

    async def inside() -> None:
        async with b.acquire():
            await asyncio.wait_for(asyncio.sleep(10), 0.01)

    async def outside() -> None:
        async with b.acquire():
            await asyncio.sleep(10)

    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(inside())
    assert b.stats().by_outcome == one_hot(O.DROPPED)
    with pytest.raises(asyncio.TimeoutError):
        asyncio.run(asyncio.wait_for(outside(), 0.01))
    assert b.stats().by_outcome == (0, 0, 1, 1, 0, 0)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout is Python 3.11's")
def test_a_deadline_inside_the_block_is_dropped_and_the_callers_cancel_ignored() -> None:
    """The deadline form needs nothing of weir's own: `asyncio.timeout` inside a lease's block records
    TIMEOUT (DROPPED) when it passes, and the caller cancelling the task before then records CANCELLED
    (IGNORED), whichever way the lease is held (`async with`, or `lease.raised` by hand)."""
    b = weir.Balancer(["n"], weir.Config(seed=1))
    entered = asyncio.Event()

    async def call(deadline: float) -> None:
        async with b.acquire():
            async with asyncio.timeout(deadline):  # type: ignore[attr-defined,unused-ignore]
                entered.set()
                await asyncio.sleep(10)

    async def by_hand(deadline: float) -> None:
        lease = await b.acquire_async()
        try:
            async with asyncio.timeout(deadline):  # type: ignore[attr-defined,unused-ignore]
                entered.set()
                await asyncio.sleep(10)
        except BaseException as exc:
            lease.raised(exc)
            raise

    async def cancelled(form: Callable[[float], Any]) -> None:
        entered.clear()
        task = asyncio.ensure_future(form(10.0))
        await asyncio.wait_for(entered.wait(), 5)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    for form in (call, by_hand):
        with pytest.raises(TimeoutError):
            asyncio.run(form(0.01))
        asyncio.run(cancelled(form))
    assert b.stats().by_outcome == (0, 0, 2, 2, 0, 0) and b.stats().in_flight == 0
    assert (O.TIMEOUT, O.CANCELLED) == (O.DROPPED, O.IGNORED)


class QuotaExceeded(Exception):
    pass


def classify(exc: BaseException) -> O:
    if isinstance(exc, QuotaExceeded):
        return O.THROTTLED
    return weir.outcome_for_exception(exc)


def test_a_balancers_classify_decides_sync_and_async() -> None:
    b = weir.Balancer(["n"], weir.Config(seed=1), classify=classify)
    assert b.classify is classify
    with pytest.raises(QuotaExceeded):
        with b.acquire():
            raise QuotaExceeded

    async def call() -> None:
        async with b.acquire():
            raise QuotaExceeded

    with pytest.raises(QuotaExceeded):
        asyncio.run(call())
    assert b.acquire().raised(QuotaExceeded()) is True
    with pytest.raises(TimeoutError):
        with b.acquire():
            raise TimeoutError
    assert b.stats().by_outcome == (0, 0, 1, 0, 3, 0)
    # A normal exit is a success whatever the classifier.
    with b.acquire():
        pass
    assert b.stats().released(O.SUCCESS) == 1


def test_the_default_classifier_and_the_cascade() -> None:
    assert weir.Balancer().classify is weir.outcome_for_exception
    b = weir.Balancer(["n"], weir.Config.cascade(seed=1), classify=lambda e: O.IGNORED)
    with pytest.raises(RuntimeError):
        with b.acquire():
            raise RuntimeError
    assert b.stats().by_outcome == one_hot(O.IGNORED)


@pytest.mark.parametrize(
    "bad, error",
    [
        (lambda e: 9, ValueError),
        (lambda e: None, TypeError),
        (lambda e: 1 / 0, ZeroDivisionError),
    ],
)
def test_a_failing_classifier_still_releases_then_raises(
    bad: Callable[[BaseException], Any], error: Type[BaseException]
) -> None:
    b = weir.Balancer(["n"], weir.Config(seed=1), classify=bad)
    with pytest.raises(error) as raised:
        with b.acquire():
            raise TimeoutError
    # The block's exception is the context of the classifier's, and the lease went back with the
    # default's outcome.
    assert isinstance(raised.value.__context__, TimeoutError)
    assert b.stats().by_outcome == one_hot(O.DROPPED)
    lease = b.acquire()
    with pytest.raises(error):
        lease.raised(ConnectionResetError())
    assert lease.released
    assert b.stats().by_outcome == (0, 1, 1, 0, 0, 0)
    assert b.stats().in_flight == 0


def test_bad_classify_and_raised_arguments() -> None:
    with pytest.raises(TypeError, match="classify must be a callable"):
        weir.Balancer(["n"], classify=3)  # type: ignore[arg-type]
    b = weir.Balancer(["n"], weir.Config(seed=1))
    lease = b.acquire()
    with pytest.raises(TypeError, match="exc must be an exception"):
        lease.raised("timeout")  # type: ignore[arg-type]
    assert not lease.released
    assert lease.raised(TimeoutError()) is True
    with pytest.raises(weir.LeaseError):
        lease.raised(TimeoutError())
    assert b.stats().by_outcome == one_hot(O.DROPPED)


def test_an_exit_given_only_the_type_classifies_an_instance() -> None:
    b = weir.Balancer(["n"], weir.Config(seed=1))
    b.acquire().__exit__(TimeoutError, None, None)
    b.acquire().__exit__(asyncio.CancelledError, None, None)
    b.acquire().__exit__(int, None, None)
    assert b.stats().by_outcome == (0, 1, 1, 1, 0, 0)


def test_a_cause_cycle_ends_the_walk() -> None:
    a, b = RuntimeError("a"), RuntimeError("b")
    a.__cause__, b.__cause__ = b, a
    assert weir.outcome_for_exception(a) is O.FAILURE


def test_the_rule_imports_no_http_library() -> None:
    code = (
        "import sys, weir\n"
        "assert weir.outcome_for_exception(TimeoutError()) is weir.Outcome.DROPPED\n"
        "assert weir.outcome_for_exception(RuntimeError()) is weir.Outcome.FAILURE\n"
        "loaded = {'httpx', 'requests', 'urllib3'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
