"""Waiting for room in asyncio: natively (no thread per waiter, the loop never blocked), first come first
served with the threads, bounded by max_waiters, with timeouts, cancellation that leaves the queue at once,
and every lease conserved under a churn of both."""

from __future__ import annotations

import asyncio
import gc
import inspect
import random
import sys
import threading
import time
import warnings
from datetime import timedelta
from typing import Any, Awaitable, Callable, List, Optional, Tuple

import pytest

import weir


def full(nodes: Tuple[str, ...] = ("n",), max_waiters: int = 1024) -> Tuple[weir.Balancer[str], weir.Lease[str]]:
    """A balancer whose only slot is held (Fixed(1) on one node), and the lease that holds it."""
    b = weir.Balancer(list(nodes), weir.Config(limit=weir.Fixed(1), max_waiters=max_waiters, seed=3))
    return b, b.acquire()


async def until(cond: Callable[[], bool], what: str) -> None:
    """Lets the loop run until ``cond()`` holds (bounded: fails after 10 s)."""
    deadline = time.monotonic() + 10
    while not cond():
        assert time.monotonic() < deadline, f"never saw {what}"
        await asyncio.sleep(0.001)


def settled(b: weir.Balancer[Any]) -> weir.Stats:
    """The exact conservation of every lease, nothing in flight, nobody waiting."""
    st = b.stats()
    assert st.in_flight == 0, st
    assert st.waiting == 0, st
    assert st.acquired == st.released_total + st.released_stale, st
    assert st.waits == st.waits_granted + st.waits_timed_out + st.waits_cancelled, st
    return st


def ignored(b: weir.Balancer[Any]) -> int:
    return b.stats().released(weir.Outcome.IGNORED)


async def worst_lateness(work: Awaitable[Any], period: float = 0.01) -> Tuple[Any, float, int]:
    """Runs ``work`` beside a task scheduled every ``period`` seconds; returns the work's result, the
    ticker's worst lateness (seconds) and its number of ticks."""
    stop = False
    late: List[float] = []

    async def ticker() -> None:
        due = time.monotonic() + period
        while not stop:
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            now = time.monotonic()
            late.append(now - due)
            due = max(due + period, now)

    t = asyncio.ensure_future(ticker())
    await asyncio.sleep(period)
    try:
        result = await work
    finally:
        stop = True
        await t
    return result, max(late), len(late)


# A waiter that blocked the loop would block it for its whole timeout (the old acquire_async did so per
# executor thread, and `async with b.acquire(timeout=...)` for every waiter in turn: 100 x 0.5 s).
TIMEOUT = 0.5
# The ticker's worst lateness allowed: half of TIMEOUT, so a single blocked wait fails the test, with
# room for a loaded machine.
LATE_BOUND = TIMEOUT / 2


@pytest.mark.parametrize("form", ["acquire_async", "async_with_acquire"])
def test_the_loop_keeps_ticking_while_100_tasks_wait(form: str) -> None:
    b, held = full()

    async def waiter() -> str:
        try:
            if form == "acquire_async":
                lease = await b.acquire_async(timeout=TIMEOUT)
                async with lease:
                    await asyncio.sleep(0.001)
            else:
                async with b.acquire(timeout=TIMEOUT):
                    await asyncio.sleep(0.001)
        except weir.NoCapacity:
            return "timeout"
        return "ok"

    async def scenario() -> List[str]:
        threads = threading.active_count()
        tasks = [asyncio.ensure_future(waiter()) for _ in range(100)]
        await until(lambda: b.stats().waiting == 100, "100 waiting")
        assert b.stats().in_flight == 1
        # No thread waits for them.
        assert threading.active_count() == threads
        await asyncio.sleep(0.05)
        held.succeeded()
        return list(await asyncio.gather(*tasks))

    outcomes, late, ticks = asyncio.run(worst_lateness(scenario()))
    # Each waiter holds the slot for 1 ms: about 100 ms for all, well within TIMEOUT for the last one.
    assert outcomes.count("ok") + outcomes.count("timeout") == 100
    assert outcomes.count("ok") >= 50, outcomes
    assert late < LATE_BOUND, f"the loop was blocked for {late:.3f} s"
    assert ticks >= 10
    st = settled(b)
    assert st.acquired == 1 + outcomes.count("ok")


@pytest.mark.parametrize("form", ["acquire_async", "async_with_acquire"])
def test_100_waiters_time_out_together_without_blocking_the_loop(form: str) -> None:
    b, held = full()

    async def waiter() -> float:
        start = time.monotonic()
        with pytest.raises(weir.NoCapacity, match=r"no node had room within the timeout \(0.2 s\)"):
            if form == "acquire_async":
                await b.acquire_async(timeout=0.2)
            else:
                async with b.acquire(timeout=0.2):
                    pass
        return time.monotonic() - start

    async def scenario() -> List[float]:
        return list(await asyncio.gather(*(waiter() for _ in range(100))))

    waited, late, _ = asyncio.run(worst_lateness(scenario()))
    # Every one waited its own timeout, concurrently: none waited for another.
    assert min(waited) >= 0.2 - 0.01
    assert max(waited) < 0.2 + LATE_BOUND
    assert late < LATE_BOUND
    held.succeeded()
    st = settled(b)
    assert (st.acquired, st.released(weir.Outcome.SUCCESS)) == (1, 1)
    # Each one waited, timed out, and was refused once (the NoCapacity it raised).
    assert (st.waits, st.waits_timed_out, st.rejected_all_busy) == (100, 100, 100)


def test_waiters_are_served_in_arrival_order_with_threads() -> None:
    b, held = full(nodes=("n",))
    order: List[str] = []

    def thread_waiter() -> None:
        with b.acquire(timeout=10):
            order.append("thread")

    async def task_waiter(name: str) -> None:
        async with await b.acquire_async(timeout=10):
            order.append(name)

    async def main() -> None:
        first = asyncio.ensure_future(task_waiter("task1"))
        await until(lambda: b.stats().waiting == 1, "task1 waiting")
        t = threading.Thread(target=thread_waiter)
        t.start()
        await until(lambda: b.stats().waiting == 2, "the thread waiting")
        second = asyncio.ensure_future(task_waiter("task2"))
        await until(lambda: b.stats().waiting == 3, "task2 waiting")
        held.succeeded()
        await asyncio.gather(first, second)
        await asyncio.get_running_loop().run_in_executor(None, t.join)

    asyncio.run(main())
    assert order == ["task1", "thread", "task2"]
    settled(b)


def test_cancellation_leaves_the_queue_at_once() -> None:
    b, held = full(max_waiters=2)

    async def main() -> None:
        a = asyncio.ensure_future(b.acquire_async(timeout=None))
        c = asyncio.ensure_future(b.acquire_async(timeout=None))
        await until(lambda: b.stats().waiting == 2, "two waiting")
        with pytest.raises(weir.NoCapacity, match="2 callers are waiting already"):
            await b.acquire_async(timeout=1.0)
        a.cancel()
        # At once, before `a` runs again: its place is free, and the next release is c's.
        assert b.stats().waiting == 1
        d = asyncio.ensure_future(b.acquire_async(timeout=None))
        await until(lambda: b.stats().waiting == 2, "d waiting in a's place")
        held.succeeded()
        st = b.stats()
        # The release went to c: no lease was granted to the cancelled waiter and handed back.
        assert (st.acquired, st.in_flight, st.waiting, ignored(b)) == (2, 1, 1, 0)
        with pytest.raises(asyncio.CancelledError):
            await a
        lease = await c
        assert lease.node == "n"
        lease.succeeded()
        (await d).succeeded()

    asyncio.run(main())
    st = settled(b)
    assert (st.acquired, st.released(weir.Outcome.SUCCESS), ignored(b)) == (3, 3, 0)
    # a, c, d waited (a cancelled, c and d granted); the fourth found the queue full: a refusal.
    assert (st.waits, st.waits_granted, st.waits_cancelled, st.rejected_all_busy) == (3, 2, 1, 1)


def test_a_lease_handed_over_to_a_cancelled_waiter_goes_to_the_next() -> None:
    b, held = full()

    async def main() -> None:
        a = asyncio.ensure_future(b.acquire_async(timeout=None))
        c = asyncio.ensure_future(b.acquire_async(timeout=None))
        await until(lambda: b.stats().waiting == 2, "two waiting")
        # The release hands the slot to a (the core's queue), whose task has not picked it up yet...
        held.succeeded()
        assert b.stats().waiting == 1
        # ... and a is cancelled: the lease goes back as IGNORED, which serves c.
        a.cancel()
        assert (b.stats().in_flight, ignored(b)) == (1, 1)
        with pytest.raises(asyncio.CancelledError):
            await a
        (await c).succeeded()

    asyncio.run(main())
    st = settled(b)
    assert (st.acquired, st.released(weir.Outcome.SUCCESS), ignored(b)) == (3, 2, 1)


def test_a_lease_picked_up_by_a_task_cancelled_before_it_resumes_goes_back() -> None:
    b, held = full()

    async def main() -> None:
        a = asyncio.ensure_future(b.acquire_async(timeout=None))
        await until(lambda: b.stats().waiting == 1, "a waiting")
        held.succeeded()
        # The wake runs (picks the lease up and resolves a's future); a has not resumed yet.
        await asyncio.sleep(0)
        assert not a.done() and b.stats().in_flight == 1
        a.cancel()
        with pytest.raises(asyncio.CancelledError):
            await a

    asyncio.run(main())
    st = settled(b)
    assert (st.acquired, st.released(weir.Outcome.SUCCESS), ignored(b)) == (2, 1, 1)


def test_timeout_means_the_same_in_both_forms() -> None:
    # One default, 0: neither form waits, and neither counts a wait.
    defaults = {inspect.signature(weir.Balancer.acquire_async).parameters["timeout"].default}
    if sys.version_info >= (3, 10):  # the abi3 module's methods have no text signature on 3.9
        defaults.add(inspect.signature(weir.Balancer.acquire).parameters["timeout"].default)
    assert defaults == {0}
    b, held = full()
    with pytest.raises(weir.NoCapacity, match="every node is at its concurrency limit"):
        b.acquire()
    with pytest.raises(weir.NoCapacity, match="every node is at its concurrency limit"):
        b.acquire(timeout=0)

    async def no_wait() -> None:
        with pytest.raises(weir.NoCapacity, match="every node is at its concurrency limit"):
            await b.acquire_async()
        with pytest.raises(weir.NoCapacity, match="every node is at its concurrency limit"):
            await b.acquire_async(timeout=timedelta(0))

    asyncio.run(no_wait())
    assert (b.stats().rejected_all_busy, b.stats().waits) == (4, 0)

    # A short timeout: both wait, and give up with the same NoCapacity.
    with pytest.raises(weir.NoCapacity, match=r"within the timeout \(0.05 s\)"):
        b.acquire(timeout=0.05)

    async def short() -> None:
        with pytest.raises(weir.NoCapacity, match=r"within the timeout \(0.05 s\)"):
            await b.acquire_async(timeout=0.05)
        with pytest.raises(weir.NoCapacity, match="within the timeout"):
            await b.acquire_async(timeout=timedelta(milliseconds=20))

    asyncio.run(short())
    assert (b.stats().waits, b.stats().waits_timed_out) == (3, 3)

    # None: both wait for as long as it takes, here until another thread releases the slot. The
    # blocking form also warns that its None used to fail at once.
    def release_once_waited() -> threading.Thread:
        def run() -> None:
            deadline = time.monotonic() + 10
            while b.stats().waiting == 0 and time.monotonic() < deadline:
                time.sleep(0.001)
            held.succeeded()

        t = threading.Thread(target=run)
        t.start()
        return t

    releaser = release_once_waited()
    with pytest.warns(DeprecationWarning, match=r"acquire\(timeout=None\) now waits for room"):
        lease = b.acquire(timeout=None)
    releaser.join()
    assert lease.node == "n" and b.stats().waits_granted == 1
    held = lease

    async def forever() -> weir.Lease[str]:
        return await b.acquire_async(timeout=None)

    releaser = release_once_waited()
    lease = asyncio.run(forever())
    releaser.join()
    assert lease.node == "n" and b.stats().waits_granted == 2
    lease.succeeded()
    settled(b)


def test_the_old_meanings_are_warned_about() -> None:
    b, held = full()
    # Under warnings as errors, the blocking acquire(timeout=None) raises before it takes or queues
    # anything.
    before = b.stats()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        with pytest.raises(DeprecationWarning, match="it used to fail at once, which timeout=0"):
            b.acquire(timeout=None)
    assert b.stats() == before
    # WAIT_TIMEOUT, acquire_async's old default, is no longer exported, and warns where it is named.
    assert "WAIT_TIMEOUT" not in weir.__all__
    with pytest.warns(DeprecationWarning, match="WAIT_TIMEOUT .* is no longer a default"):
        assert weir.WAIT_TIMEOUT == 1.0
    with pytest.raises(AttributeError, match="no attribute 'NO_SUCH_NAME'"):
        weir.NO_SUCH_NAME  # type: ignore[attr-defined]
    held.succeeded()
    settled(b)


def test_bad_timeouts_are_refused_in_both_forms() -> None:
    b, held = full()

    async def main() -> None:
        with pytest.raises(ValueError, match="timeout must not be negative"):
            await b.acquire_async(timeout=-1)
        with pytest.raises(TypeError, match="timeout must be a number"):
            await b.acquire_async(timeout="1")  # type: ignore[arg-type]

    asyncio.run(main())
    with pytest.raises(ValueError, match="timeout must not be negative"):
        b.acquire(timeout=-1)
    with pytest.raises(TypeError, match="timeout must be a number"):
        b.acquire(timeout="1")  # type: ignore[arg-type]
    held.succeeded()
    settled(b)


def test_no_nodes_and_no_waiting() -> None:
    async def main() -> None:
        with pytest.raises(weir.NoNodes):
            await weir.Balancer().acquire_async()
        b, held = full(max_waiters=0)
        with pytest.raises(weir.NoCapacity, match="waiting is off"):
            await b.acquire_async(timeout=1.0)
        with pytest.raises(weir.NoCapacity, match="waiting is off"):
            b.acquire(timeout=1.0)
        held.succeeded()
        settled(b)

    asyncio.run(main())


def test_a_waiter_whose_node_left_rotation_keeps_waiting_for_another() -> None:
    b, held = full(nodes=("a",))

    async def main() -> None:
        w = asyncio.ensure_future(b.acquire_async(timeout=10))
        await until(lambda: b.stats().waiting == 1, "waiting")
        # The release hands a lease on "a" over; "a" is removed before the task picks it up.
        held.succeeded()
        b.remove("a")
        b.add("b")
        lease = await w
        assert lease.node == "b"
        lease.succeeded()

    asyncio.run(main())
    st = settled(b)
    assert st.released_stale == 1


def test_acquire_with_timeout_on_the_loop_returns_a_lease_in_waiting() -> None:
    b, held = full()

    async def main() -> None:
        waiting = b.acquire(timeout=5.0)
        assert repr(waiting) == "<weir.Lease waiting for room>" and not waiting.released
        assert b.stats().waiting == 1
        asyncio.get_running_loop().call_later(0.05, held.succeeded)
        async with waiting as lease2:
            assert lease2 is waiting and lease2.node == "n"
        # Used synchronously, a lease in waiting waits with the thread (the loop blocks, as asked).
        other = b.acquire()
        sync = b.acquire(timeout=0.05)
        with pytest.raises(weir.NoCapacity, match=r"within the timeout \(0.05 s\)"):
            sync.node
        assert sync.released and repr(sync) == "<weir.Lease that got no node>"
        with pytest.raises(weir.NoCapacity):
            sync.succeeded()
        # ... and gets its node when another thread releases.
        sync2 = b.acquire(timeout=5.0)
        threading.Timer(0.05, other.succeeded).start()
        with sync2 as lease3:
            assert lease3.node == "n"
        # A lease in waiting that is dropped leaves the queue.
        hold = b.acquire()
        dropped = b.acquire(timeout=5.0)
        assert b.stats().waiting == 1
        del dropped
        gc.collect()
        assert b.stats().waiting == 0
        hold.succeeded()

    asyncio.run(main())
    st = settled(b)
    assert ignored(b) == 0


def test_a_cancelled_async_with_on_a_lease_in_waiting() -> None:
    b, held = full()

    async def main() -> None:
        async def enter() -> None:
            async with b.acquire(timeout=10):
                raise AssertionError("never entered")

        t = asyncio.ensure_future(enter())
        await until(lambda: b.stats().waiting == 1, "waiting")
        t.cancel()
        assert b.stats().waiting == 0
        with pytest.raises(asyncio.CancelledError):
            await t
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(b.acquire_async(timeout=None), 0.02)
        assert b.stats().waiting == 0

    asyncio.run(main())
    held.succeeded()
    st = settled(b)
    assert (st.acquired, ignored(b)) == (1, 0)


def test_leases_are_conserved_under_a_churn_of_cancellations_and_timeouts() -> None:
    # Two event loops on two threads and two blocking threads share one balancer of 2 x Fixed(2): tasks
    # wait with short timeouts, are cancelled at random (some at the instant of a handover), and the
    # threads wait with acquire(timeout=...). Afterwards every lease is accounted for, exactly.
    b = weir.Balancer(["a", "b"], weir.Config(limit=weir.Fixed(2), max_waiters=64, seed=5))
    LOOPS, TASKS, ROUNDS, THREADS, THREAD_ROUNDS = 2, 40, 50, 2, 300
    lock = threading.Lock()
    counted = {"success": 0, "failure": 0, "timeout": 0, "cancelled": 0, "full": 0}

    def count(key: str) -> None:
        with lock:
            counted[key] += 1

    async def task(rng: random.Random) -> None:
        for _ in range(ROUNDS):
            timeout: Optional[float] = rng.choice([None, 0.0, 0.001, 0.005, 0.05])
            cancel_after = rng.choice([None, 0.0, 0.0005, 0.002])
            w = asyncio.ensure_future(b.acquire_async(timeout=timeout))
            if cancel_after is not None:
                await asyncio.sleep(cancel_after)
                w.cancel()
            try:
                lease = await w
            except asyncio.CancelledError:
                count("cancelled")
                continue
            except weir.NoCapacity as e:
                count("full" if "waiting already" in str(e) else "timeout")
                continue
            await asyncio.sleep(rng.choice([0, 0.0002, 0.001]))
            if rng.random() < 0.5:
                lease.succeeded()
                count("success")
            else:
                lease.failed()
                count("failure")

    def loop_thread(k: int) -> None:
        async def main() -> None:
            await asyncio.gather(*(task(random.Random(k * 1000 + i)) for i in range(TASKS)))

        asyncio.run(main())

    def blocking_thread(k: int) -> None:
        rng = random.Random(-k - 1)
        for _ in range(THREAD_ROUNDS):
            try:
                lease = b.acquire(timeout=rng.choice([0.0, 0.001, 0.01]))
            except weir.NoCapacity as e:
                count("full" if "waiting already" in str(e) else "timeout")
                continue
            time.sleep(rng.choice([0, 0.0001]))
            lease.succeeded()
            count("success")

    threads = [threading.Thread(target=loop_thread, args=(k,)) for k in range(LOOPS)]
    threads += [threading.Thread(target=blocking_thread, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive()
    gc.collect()
    st = settled(b)
    assert counted["cancelled"] > 0 and counted["timeout"] > 0 and counted["success"] > 0
    assert st.released(weir.Outcome.SUCCESS) == counted["success"]
    assert st.released(weir.Outcome.FAILURE) == counted["failure"]
    # Every other grant went to a waiter that was cancelled as it was handed over, and came back IGNORED.
    assert st.released(weir.Outcome.IGNORED) == st.acquired - counted["success"] - counted["failure"]
    assert st.released(weir.Outcome.IGNORED) <= counted["cancelled"]
    assert st.released_stale == 0
