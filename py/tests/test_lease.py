"""Lease: context managers (sync and async), explicit outcomes, HTTP statuses, double release, clocks,
garbage collection."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any, Optional

import pytest

import weir


def one(limit: int = 5) -> weir.Balancer:
    return weir.Balancer(["n"], weir.Config(limit=weir.Fixed(limit), seed=4))


def released(b: weir.Balancer) -> tuple[int, ...]:
    return b.stats().by_outcome


def test_with_records_success_and_failure() -> None:
    b = one()
    with b.acquire() as lease:
        assert lease.node == "n" and not lease.released
    assert lease.released
    with pytest.raises(ZeroDivisionError):
        with b.acquire():
            1 / 0
    assert released(b) == (1, 1, 0, 0, 0, 0)


def test_cancellation_is_ignored() -> None:
    b = one()
    for exc in (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit):
        with pytest.raises(exc):
            with b.acquire():
                raise exc()
    assert released(b) == (0, 0, 0, 3, 0, 0)


def test_explicit_outcome_inside_the_block_wins() -> None:
    b = one()
    with b.acquire() as lease:
        assert lease.dropped() is True
    with pytest.raises(RuntimeError):
        with b.acquire() as lease:
            lease.succeeded()
            raise RuntimeError
    assert released(b) == (1, 0, 1, 0, 0, 0)


OUTCOME_METHODS = [
    ("succeeded", 0),
    ("failed", 1),
    ("dropped", 2),
    ("ignore", 3),
    ("throttled", 4),
    ("client_error", 5),
]


@pytest.mark.parametrize("method, code", OUTCOME_METHODS)
def test_each_outcome_method(method: str, code: int) -> None:
    b = one()
    lease = b.acquire()
    assert getattr(lease, method)() is True
    want = [0] * 6
    want[code] = 1
    assert released(b) == tuple(want)


def test_which_outcomes_are_retried() -> None:
    # The core's rule, through the native function: the node's failures, drops and 429s.
    retryable = {o for o in weir.Outcome if o.is_retryable}
    assert retryable == {weir.Outcome.FAILURE, weir.Outcome.DROPPED, weir.Outcome.THROTTLED}
    assert weir.Outcome.TIMEOUT.is_retryable and not weir.Outcome.CANCELLED.is_retryable
    from weir._weir import outcome_is_retryable

    for bad in (6, -1, 2**70):
        with pytest.raises(ValueError):
            outcome_is_retryable(bad)
    with pytest.raises(TypeError):
        outcome_is_retryable("failure")


def test_release_with_outcome_and_http_status() -> None:
    b = one()
    assert b.acquire().release(weir.Outcome.THROTTLED) is True
    assert b.acquire().release(2) is True
    for status, code in [(200, 0), (302, 0), (429, 4), (503, 2), (504, 2), (404, 5), (500, 1), (502, 1)]:
        assert b.acquire().http_status(status)
        assert weir.Outcome.from_http_status(status) == code
    assert released(b) == (2, 2, 3, 0, 2, 1)
    lease = b.acquire()
    for bad in (99, 600, 999, 0, -1, 2**16, 2**70):
        # One message for every status out of range, naming it and the range.
        message = rf"^status must be an HTTP status code, between 100 and 599, got {bad}$"
        with pytest.raises(ValueError, match=message):
            lease.http_status(bad)
        with pytest.raises(ValueError, match=message):
            weir.Outcome.from_http_status(bad)
    with pytest.raises(TypeError):
        lease.http_status("200")
    for bad_outcome in (6, -1):
        with pytest.raises(ValueError, match="outcome must be between 0 and 5"):
            lease.release(bad_outcome)
    with pytest.raises(TypeError, match="outcome must be an int"):
        lease.release("success")
    assert not lease.released  # every refusal left it in flight
    lease.succeeded()


def test_double_release_raises_and_changes_nothing() -> None:
    b = one()
    lease = b.acquire()
    lease.succeeded()
    before = b.stats()
    for again in (lease.succeeded, lease.failed, lease.ignore, lambda: lease.release(weir.Outcome.DROPPED)):
        with pytest.raises(weir.LeaseError, match="already released"):
            again()
    assert b.stats() == before
    # A context exit after an explicit release does nothing.
    with b.acquire() as l2:
        l2.failed()
    assert b.stats().released_total == before.released_total + 1


def test_release_from_another_thread_exactly_once() -> None:
    b = one(limit=64)
    leases = [b.acquire() for _ in range(64)]
    wins: list[bool] = []
    errors: list[BaseException] = []

    def release_all() -> None:
        for lease in leases:
            try:
                wins.append(lease.succeeded())
            except weir.LeaseError as e:
                errors.append(e)

    threads = [threading.Thread(target=release_all) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(wins), len(errors)) == (64, 64 * 3)
    assert b.stats().in_flight == 0 and b.stats().released_total == 64


@pytest.mark.parametrize("method, code", OUTCOME_METHODS)
def test_a_loaded_release_is_counted_as_a_release(method: str, code: int) -> None:
    b = one()
    for load in (0.8, 1, 0, 1000, 0.0005):
        assert getattr(b.acquire(), method)(load=load) is True
    assert b.acquire().release(weir.Outcome(code), load=2.5) is True
    assert getattr(b.acquire(), method)(load=None) is True  # no report: the plain release
    want = [0] * 6
    want[code] = 7
    assert released(b) == tuple(want)
    assert b.stats().in_flight == 0


def test_a_loaded_http_status_is_counted_as_its_outcome() -> None:
    b = one()
    assert b.acquire().http_status(503, load=1.5) is True
    assert b.acquire().http_status(200, load=0.25) is True
    assert released(b) == (1, 0, 1, 0, 0, 0)


@pytest.mark.parametrize(
    "bad, error, message",
    [
        (float("nan"), ValueError, "a server load must be a finite number, got nan"),
        (float("inf"), ValueError, "a server load must be a finite number, got inf"),
        (float("-inf"), ValueError, "a server load must be a finite number, got -inf"),
        (-0.5, ValueError, "a server load must not be negative, got -0.5"),
        (-1, ValueError, "a server load must not be negative, got -1"),
        (-(2**2000), ValueError, "a server load must not be negative, got -"),
        (1000.5, ValueError, "a server load must be at most 1000 (a utilization of 1000x), got 1000.5"),
        (2**2000, ValueError, "a server load must be at most 1000 (a utilization of 1000x), got "),
        ("x", TypeError, "load must be a float, not str"),
        ("0.5", TypeError, "load must be a float, not str"),
        (True, TypeError, "load must be a float, not bool"),
        ([0.5], TypeError, "load must be a float, not list"),
    ],
    ids=repr,
)
def test_a_refused_load_leaves_the_lease_releasable(bad: Any, error: type, message: str) -> None:
    b = one()
    lease = b.acquire()
    for release in (
        lambda: lease.succeeded(load=bad),
        lambda: lease.dropped(load=bad),
        lambda: lease.ignore(load=bad),
        lambda: lease.release(weir.Outcome.FAILURE, load=bad),
        lambda: lease.http_status(503, load=bad),
    ):
        with pytest.raises(error) as refused:
            release()
        assert str(refused.value).startswith(message)
        assert not isinstance(refused.value, weir.WeirError)
    assert not lease.released and b.stats().in_flight == 1  # every refusal left it in flight
    assert released(b) == (0, 0, 0, 0, 0, 0)
    assert lease.succeeded(load=0.5) is True
    assert released(b) == (1, 0, 0, 0, 0, 0) and b.stats().in_flight == 0


def test_a_test_clock_lease_refuses_a_bad_load_before_its_clock() -> None:
    # The load is an argument checked first, as the outcome is: a bad one on a test-clock lease released
    # without now= is a ValueError, not a ClockMismatch, and the lease is still releasable.
    b = one()
    lease = b.acquire(now=1.0)
    with pytest.raises(ValueError, match="finite") as refused:
        lease.succeeded(load=float("nan"))
    assert not isinstance(refused.value, weir.ClockMismatch)
    with pytest.raises(weir.ClockMismatch):
        lease.succeeded(load=0.5)
    assert lease.succeeded(now=1.5, load=0.5) is True


def test_a_released_lease_released_again_with_a_load() -> None:
    b = one()
    lease = b.acquire()
    lease.succeeded(load=0.5)
    before = b.stats()
    for again in (
        lambda: lease.succeeded(load=0.5),
        lambda: lease.dropped(load=1.5),
        lambda: lease.release(weir.Outcome.FAILURE, load=0),
        lambda: lease.http_status(200, load=1),
    ):
        with pytest.raises(weir.LeaseError, match="already released"):
            again()
    # A bad load is refused as an argument first, as a bad outcome is on a released lease.
    with pytest.raises(ValueError, match="outcome must be between 0 and 5"):
        lease.release(6)
    with pytest.raises(ValueError, match="must not be negative"):
        lease.succeeded(load=-1.0)
    assert b.stats() == before


def knee_node_after(load: Optional[float]) -> int:
    """The limit of a node under the knee limit (initial limit 20) after a drop arms it (the limit falls
    to 0.9 x 20 = 18) and one success 1 ms later reports `load`."""
    b = weir.Balancer([1], weir.Config(limit=weir.Knee(), seed=1))
    leases = [b.acquire(now=0.0) for _ in range(20)]
    assert b.node(1, now=0.0).limit == 20
    leases.pop().dropped(now=0.001)
    assert b.node(1, now=0.001).limit == 18
    leases.pop().succeeded(now=0.002, load=load)
    limit = b.node(1, now=0.002).limit
    for lease in leases:
        lease.ignore(now=0.003)
    return limit


def test_the_knee_limit_reads_the_servers_load() -> None:
    # Armed by the drop, the knee reads the report in place of the latency: 20 % past the server's knee
    # eases the limit by 0.1 (18 - 0.1 = 17.9: 17 whole calls), half its knee grows it (past 18, still 18
    # whole calls), as the success without a report at this latency does.
    assert knee_node_after(1.2) == 17
    assert knee_node_after(0.5) == 18
    assert knee_node_after(None) == 18


def test_other_limits_ignore_the_servers_load() -> None:
    for limit in (weir.Fixed(20), weir.Aimd(initial_limit=20)):
        b = weir.Balancer([1], weir.Config(limit=limit, seed=1))
        leases = [b.acquire(now=0.0) for _ in range(20)]
        for lease in leases[:10]:
            lease.succeeded(now=0.002, load=1000)
        plain = weir.Balancer([1], weir.Config(limit=limit, seed=1))
        others = [plain.acquire(now=0.0) for _ in range(20)]
        for lease in others[:10]:
            lease.succeeded(now=0.002)
        assert b.node(1, now=0.002) == plain.node(1, now=0.002)


def test_clocks_never_mix() -> None:
    b = one()
    test_clock = b.acquire(now=5.0)
    assert test_clock.acquired_at == 5.0
    with pytest.raises(weir.ClockMismatch, match="explicit now="):
        test_clock.succeeded()
    assert not test_clock.released
    assert test_clock.succeeded(now=5.25) is True
    mono = b.acquire()
    with pytest.raises(weir.ClockMismatch, match="monotonic clock"):
        mono.failed(now=1.0)
    mono.failed()
    # A context exit cannot date a test-clock lease: it hands it back as IGNORED and says so.
    with pytest.raises(weir.ClockMismatch, match="released as IGNORED"):
        with b.acquire(now=6.0):
            pass
    assert released(b) == (1, 1, 0, 1, 0, 0)
    assert isinstance(weir.ClockMismatch(), ValueError)


def test_bad_release_time() -> None:
    b = one()
    lease = b.acquire(now=1.0)
    with pytest.raises(ValueError, match="now must not be NaN"):
        lease.succeeded(now=float("nan"))
    with pytest.raises(TypeError):
        lease.succeeded(now="2")
    assert not lease.released
    assert lease.succeeded(now=2.0)


def test_garbage_collected_lease_is_released_as_ignored() -> None:
    b = one(limit=1)
    lease = b.acquire()
    assert b.try_acquire() is None
    del lease
    gc.collect()
    assert released(b) == (0, 0, 0, 1, 0, 0) and b.stats().in_flight == 0
    # Even in a reference cycle.
    cycle: list[Any] = [b.acquire()]
    cycle.append(cycle)
    del cycle
    gc.collect()
    assert b.stats().in_flight == 0
    # A test-clock lease too (dated at its own acquire).
    b.acquire(now=3.0)
    gc.collect()
    assert b.stats().in_flight == 0 and released(b)[3] == 3


def test_lease_attributes_and_repr() -> None:
    b = weir.Balancer([42], weir.Config(limit=weir.Fixed(5), seed=1))
    lease = b.acquire(now=1.5)
    assert (lease.node, lease.id, lease.acquired_at, lease.in_flight) == (42, 42, 1.5, 1)
    assert "node=42 in flight" in repr(lease)
    lease.succeeded(now=2.0)
    assert "released" in repr(lease)


def test_async_with_and_acquire_async() -> None:
    b = one(limit=1)

    async def main() -> None:
        async with b.acquire() as lease:
            assert lease.node == "n"
            # The slot is held: a waiting acquire gets it once the block exits (on another task).
            waiter = asyncio.ensure_future(b.acquire_async(timeout=5.0))
            await asyncio.sleep(0.01)
            assert not waiter.done()
        got = await waiter
        got.succeeded()
        with pytest.raises(ValueError):
            async with b.acquire():
                raise ValueError
        with pytest.raises(weir.NoCapacity):
            held = b.acquire()
            try:
                await b.acquire_async(timeout=0.02)
            finally:
                held.ignore()
        fast = await b.acquire_async(timeout=0)
        fast.succeeded()

    asyncio.run(main())
    assert released(b) == (3, 1, 0, 1, 0, 0)
