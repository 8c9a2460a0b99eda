"""Lease: context managers (sync and async), explicit outcomes, HTTP statuses, double release, clocks,
garbage collection."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

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


@pytest.mark.parametrize(
    "method, code",
    [
        ("succeeded", 0),
        ("failed", 1),
        ("dropped", 2),
        ("ignore", 3),
        ("throttled", 4),
        ("client_error", 5),
    ],
)
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
