"""Waiting for room on an asyncio event loop, with no thread per waiter.

A lease in waiting (from ``Balancer.acquire_async``, or ``Balancer.acquire(timeout=...)`` called on the
loop's thread) holds a place in the core's queue of waiters. :func:`granted` awaits it: it gives the
core a waker that calls ``loop.call_soon_threadsafe``, so the release that hands the lease over (on any
thread) schedules a poll on the loop, and the poll resolves a future the task awaits. The deadline is a
``loop.call_later`` timer. Cancelling the task cancels the future, and :meth:`_Waiter.cancel` takes the
lease out of the queue at that moment (not when the task next runs), so a release that follows serves the
next waiter.
"""

from __future__ import annotations

import asyncio
import functools
import weakref
from typing import Any, Optional, TypeVar

from weir._weir import Lease

__all__ = ["granted"]

L = TypeVar("L", bound="Lease[Any]")


class _Waiter(asyncio.Future[None]):
    """The future a task awaits while its lease waits; done when the lease has its node (result None) or
    the wait ended (NoCapacity, NoNodes)."""

    def __init__(self, lease: Lease[Any], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self.lease = lease
        self.timer: Optional[asyncio.TimerHandle] = None

    def cancel(self, msg: Optional[Any] = None) -> bool:
        # Task.cancel() calls this at once: leave the queue now, before the task resumes.
        if not self.done():
            self.lease._cancel()
            self._stop_timer()
        return super().cancel(msg)

    def _stop_timer(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def settle(self, error: Optional[BaseException]) -> None:
        """Ends the wait: a result (the lease has its node) or ``error``."""
        self._stop_timer()
        if error is None:
            self.set_result(None)
        else:
            self.set_exception(error)


def _wake_soon(loop: asyncio.AbstractEventLoop, ref: weakref.ReferenceType[_Waiter]) -> None:
    """The core's waker (any thread): schedules :func:`_woken` on the loop."""
    try:
        loop.call_soon_threadsafe(_woken, ref)
    except RuntimeError:
        # The loop is closed: nobody awaits this waiter any more; it leaves the queue when collected.
        pass


def _woken(ref: weakref.ReferenceType[_Waiter]) -> None:
    """On the loop: the lease may have been handed over; pick it up."""
    waiter = ref()
    if waiter is None or waiter.done():
        return
    try:
        if not waiter.lease._poll():
            return
    except Exception as e:  # NoCapacity (queue full), NoNodes: the task raises it
        waiter.settle(e)
        return
    waiter.settle(None)


def _timed_out(ref: weakref.ReferenceType[_Waiter]) -> None:
    """On the loop, at the deadline: keep a lease handed over by now, else leave with NoCapacity."""
    waiter = ref()
    if waiter is None or waiter.done():
        return
    waiter.timer = None
    try:
        waiter.lease._expire()
    except Exception as e:  # NoCapacity: no room within the timeout
        waiter.settle(e)
        return
    waiter.settle(None)


async def granted(lease: L) -> L:
    """Waits on the running loop, without blocking it, until ``lease`` has its node; returns it. Raises
    NoCapacity when the lease's deadline passes (or NoNodes); if the awaiting task is cancelled, the lease
    leaves the queue at once, or goes back as IGNORED if it got its node meanwhile."""
    if lease._poll():
        return lease
    loop = asyncio.get_running_loop()
    waiter = _Waiter(lease, loop)
    # The waker holds the waiter weakly: a task that is dropped takes its waiter with it, and the lease
    # leaves the queue as it is collected.
    ref = weakref.ref(waiter)
    if lease._poll(functools.partial(_wake_soon, loop, ref)):
        return lease
    remaining = lease._remaining()
    if remaining is not None:
        waiter.timer = loop.call_later(remaining, _timed_out, ref)
    try:
        await waiter
    except BaseException:
        # Cancelled (or anything thrown in): no lease may stay with a caller that never sees it.
        lease._cancel()
        raise
    return lease
