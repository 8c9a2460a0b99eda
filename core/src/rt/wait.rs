//! Waiting for room: bounded waiting acquires, first come first served until the queue stands, blocking
//! ([`Balancer::acquire_wait`]) or async ([`Balancer::acquire_async`]), for callers that would rather wait
//! a little for a lease than fail fast with [`Rejected::AllBusy`].
//!
//! The rules (what a waiting acquire does, draining, cancellation, costs) are public: see the module docs
//! of `rt` (`mod.rs`), "Waiting for room". This file has the acquires that wait, blocking and async, and
//! their futures; the queue they join and its drain, and how a release reaches them, are `queue.rs`'s.

use super::guard::{LeaseGuard, OwnedLeaseGuard};
use super::queue::{clock, Entered, Tally, Waiter, Waiters, Wake};
use crate::balance::{Balancer, Lease, NodeSlot, Outcome, Rejected};
use crate::internal::sync::Condvar;
use core::fmt;
use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use std::sync::Arc;
use std::sync::PoisonError;
use std::time::Instant;

/// Why a waiting acquire ([`Balancer::acquire_wait`], [`Balancer::acquire_async`] and their owned
/// forms) granted no lease.
///
/// ```
/// use std::time::{Duration, Instant};
/// use weir::limit::{FixedLimit, LimitAlgorithm};
/// use weir::rt::WaitError;
/// use weir::{Config, HeapBalancer};
///
/// let config = Config { limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }), ..Config::default() };
/// let b = HeapBalancer::with_capacity(1, config).unwrap();
/// let soon = Instant::now() + Duration::from_millis(5);
/// assert_eq!(b.acquire_wait(soon).err(), Some(WaitError::NoActiveNodes));
/// b.add(1).unwrap();
/// let _held = b.acquire_guard().unwrap();
/// let err = b.acquire_wait(soon).unwrap_err();
/// assert_eq!(err, WaitError::Timeout);
/// assert_eq!(err.to_string(), "the deadline passed before a node had room");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WaitError {
    /// No node had room and `max_waiters` callers were waiting already
    /// ([`Config::max_waiters`](crate::Config::max_waiters); 0 turns waiting off).
    QueueFull {
        /// The balancer's bound on waiting callers.
        max_waiters: u32,
    },
    /// The deadline passed before a node had room.
    Timeout,
    /// No node is in rotation (none added, all removed, or all in lame duck): a waiting acquire waits
    /// for room, not for membership.
    NoActiveNodes,
    /// The queue stood, and newer callers were served ahead of this one after it had waited more than
    /// [`STANDING_NS`](crate::rt::STANDING_NS): it is answered now rather than held to its deadline (see
    /// the module docs of [`rt`](crate::rt), "Draining"). Only a wait with a deadline is shed: a
    /// blocking one, or an async one given its timer ([`Wait::within`], [`Wait::bounded`]). An overload
    /// answer, as a fail-fast refusal is: a retry joins the back of the queue, which a standing queue
    /// serves first.
    Shed,
}

impl fmt::Display for WaitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WaitError::QueueFull { max_waiters: 0 } => {
                f.write_str("no node has room and waiting is off (max_waiters is 0)")
            }
            WaitError::QueueFull { max_waiters } => write!(
                f,
                "no node has room and {max_waiters} callers are waiting already (max_waiters)"
            ),
            WaitError::Timeout => f.write_str("the deadline passed before a node had room"),
            WaitError::NoActiveNodes => f.write_str("no active nodes"),
            WaitError::Shed => f.write_str(
                "the queue stood and newer callers were served first: answered before the deadline",
            ),
        }
    }
}

impl std::error::Error for WaitError {}

impl From<WaitError> for Rejected {
    /// The refusal a waiting acquire's error is counted as in [`Stats`](crate::balance::Stats): [`Rejected::NoActiveNodes`] for
    /// [`WaitError::NoActiveNodes`], [`Rejected::AllBusy`] for the others (no room came in time, or
    /// there was no room to wait in).
    ///
    /// ```
    /// use weir::balance::Rejected;
    /// use weir::rt::WaitError;
    /// assert_eq!(Rejected::from(WaitError::Timeout), Rejected::AllBusy);
    /// assert_eq!(Rejected::from(WaitError::NoActiveNodes), Rejected::NoActiveNodes);
    /// ```
    fn from(e: WaitError) -> Rejected {
        match e {
            WaitError::NoActiveNodes => Rejected::NoActiveNodes,
            WaitError::QueueFull { .. } | WaitError::Timeout | WaitError::Shed => Rejected::AllBusy,
        }
    }
}

/// Where a [`Wait`] or [`WaitOwned`] stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not polled yet: it has not joined.
    Start,
    /// In the queue with this ticket (possibly served, the lease not picked up yet).
    Queued(u64),
    /// Returned its result.
    Done,
}

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl<S: AsRef<[NodeSlot]>> Balancer<S, Waiters> {
    /// Acquires a lease, waiting for room until `deadline` if no node has any: the lease guard of
    /// [`acquire_guard`](Self::acquire_guard), or why none came ([`WaitError`]). Waiters are served in
    /// arrival order, at most [`Config::max_waiters`](crate::Config::max_waiters) wait at once; see the
    /// module docs of [`rt`](crate::rt) for the exact rules. Blocks the calling thread (use
    /// [`acquire_async`](Self::acquire_async) in async code).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use weir::limit::{FixedLimit, LimitAlgorithm};
    /// use weir::{Config, HeapBalancer, Outcome};
    ///
    /// let config = Config { limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }), ..Config::default() };
    /// let b = HeapBalancer::with_capacity(1, config).unwrap();
    /// b.add(1).unwrap();
    /// let held = b.acquire_guard().unwrap();
    /// std::thread::scope(|s| {
    ///     // The only slot is taken: wait for it; another thread's release hands it over.
    ///     s.spawn(|| {
    ///         std::thread::sleep(Duration::from_millis(10));
    ///         held.complete(Outcome::Success).unwrap();
    ///     });
    ///     let lease = b.acquire_wait(Instant::now() + Duration::from_secs(10)).unwrap();
    ///     assert_eq!(lease.node_id(), 1);
    /// });
    /// assert_eq!(b.stats().in_flight, 0);
    /// ```
    pub fn acquire_wait(&self, deadline: Instant) -> Result<LeaseGuard<'_, S, Waiters>, WaitError> {
        self.wait_lease(deadline)
            .map(|lease| LeaseGuard::from_lease(self, lease))
    }

    /// [`acquire_wait`](Self::acquire_wait) for a balancer shared through an `Arc`: the guard holds a clone
    /// of the `Arc` (as [`acquire_owned`](Self::acquire_owned)'s does).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::{Duration, Instant};
    /// use weir::{Config, HeapBalancer, Outcome};
    ///
    /// let b = Arc::new(HeapBalancer::with_capacity(1, Config::default()).unwrap());
    /// b.add(1).unwrap();
    /// let deadline = Instant::now() + Duration::from_secs(1);
    /// let guard = Arc::clone(&b).acquire_wait_owned(deadline).unwrap();
    /// std::thread::spawn(move || guard.complete(Outcome::Success)).join().unwrap().unwrap();
    /// assert_eq!(b.stats().released(Outcome::Success), 1);
    /// ```
    pub fn acquire_wait_owned(
        self: Arc<Self>,
        deadline: Instant,
    ) -> Result<OwnedLeaseGuard<S, Waiters>, WaitError> {
        self.wait_lease(deadline)
            .map(|lease| OwnedLeaseGuard::from_lease(self, lease))
    }

    /// Acquires a lease, waiting for room as long as it takes: a future that any executor can poll
    /// (it is woken through the [`Waker`](core::task::Waker) of its latest poll; it needs no runtime). It joins the queue on
    /// its first poll. It has no timer: bound the wait with the executor's (`tokio::time::timeout(d,
    /// b.acquire_async())`); dropping the future leaves the queue, and a lease already handed to it goes
    /// back (released as [`Outcome::Ignored`], which serves the next waiter). A dropped future counts as a
    /// cancelled wait; [`Wait::time_out`] ends it as a timed-out one. Otherwise as
    /// [`acquire_wait`](Self::acquire_wait): it fails only with [`WaitError::QueueFull`] or
    /// [`WaitError::NoActiveNodes`].
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    /// use weir::limit::{FixedLimit, LimitAlgorithm};
    /// use weir::{Config, HeapBalancer, Outcome};
    ///
    /// let config = Config { limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }), ..Config::default() };
    /// let b = HeapBalancer::with_capacity(1, config).unwrap();
    /// b.add(1).unwrap();
    /// let held = b.acquire_guard().unwrap();
    ///
    /// let mut cx = Context::from_waker(Waker::noop()); // an executor would pass its own
    /// let mut wait = pin!(b.acquire_async());
    /// assert!(wait.as_mut().poll(&mut cx).is_pending()); // queued
    /// held.complete(Outcome::Success).unwrap(); // the release hands the slot over (and wakes the task)
    /// let lease = match wait.as_mut().poll(&mut cx) {
    ///     Poll::Ready(Ok(lease)) => lease,
    ///     other => panic!("expected the lease, got {other:?}"),
    /// };
    /// assert_eq!(lease.node_id(), 1);
    /// ```
    pub fn acquire_async(&self) -> Wait<'_, S> {
        Wait {
            balancer: self,
            state: State::Start,
            bounded: false,
        }
    }

    /// [`acquire_async`](Self::acquire_async) for a balancer shared through an `Arc`: the future (and its
    /// guard) hold a clone of the `Arc`, so the future is `'static` (and `Send` when the storage is), as a
    /// spawned task or a tower service needs.
    ///
    /// ```
    /// use std::future::Future;
    /// use std::sync::Arc;
    /// use weir::rt::WaitOwned;
    /// use weir::{Config, HeapBalancer, NodeSlot};
    ///
    /// fn spawnable<F: Future + Send + 'static>(f: F) -> F {
    ///     f
    /// }
    /// let b = Arc::new(HeapBalancer::with_capacity(1, Config::default()).unwrap());
    /// let wait: WaitOwned<Box<[NodeSlot]>> = spawnable(Arc::clone(&b).acquire_async_owned());
    /// drop(wait); // never polled: it never joined
    /// ```
    pub fn acquire_async_owned(self: Arc<Self>) -> WaitOwned<S> {
        WaitOwned {
            balancer: self,
            state: State::Start,
            bounded: false,
        }
    }

    /// The blocking wait, its answer counted: a refusal in `Stats`' `rejected_*`.
    fn wait_lease(&self, deadline: Instant) -> Result<Lease, WaitError> {
        let answer = self.wait_for_room(deadline);
        if let Err(e) = answer {
            self.count_refusal(e.into());
        }
        answer
    }

    /// The blocking wait: steps 1 to 5.
    fn wait_for_room(&self, deadline: Instant) -> Result<Lease, WaitError> {
        if let Some(answer) = self.waiting.try_first(self) {
            return answer;
        }
        if Instant::now() >= deadline {
            return Err(WaitError::Timeout);
        }
        let cond = Arc::new(Condvar::new());
        let ticket = match self
            .waiting
            .join(self, Wake::Thread(Arc::clone(&cond)), true)?
        {
            Entered::Served(lease) => return Ok(lease),
            Entered::Queued(ticket) => ticket,
        };
        let mut q = self.waiting.lock();
        loop {
            // A lease handed over wins over a deadline passed at the same time: it is never lost.
            if let Some(answer) = q.take_answer(ticket) {
                return answer;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                if self.waiting.leave(&mut q, ticket) {
                    Tally::bump(&self.waiting.tally.timed_out);
                }
                return Err(WaitError::Timeout);
            }
            // Spurious wake-ups and early time-outs only go round the loop again.
            q = cond
                .wait_timeout(q, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// One poll of a [`Wait`] or [`WaitOwned`].
    fn poll_wait(
        &self,
        state: &mut State,
        bounded: bool,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Lease, WaitError>> {
        let answer = match *state {
            State::Start => match self.waiting.try_first(self) {
                Some(answer) => answer,
                None => match self
                    .waiting
                    .join(self, Wake::Task(cx.waker().clone()), bounded)
                {
                    Ok(Entered::Served(lease)) => Ok(lease),
                    Ok(Entered::Queued(ticket)) => {
                        *state = State::Queued(ticket);
                        return Poll::Pending;
                    }
                    Err(e) => Err(e),
                },
            },
            State::Queued(ticket) => {
                let mut q = self.waiting.lock();
                if let Some(answer) = q.take_answer(ticket) {
                    answer
                } else {
                    let i = q.position(ticket).unwrap_or_else(|| {
                        unreachable!("a queued waiter is waiting or answered until it leaves")
                    });
                    if let Some(Waiter {
                        wake: Wake::Task(w),
                        ..
                    }) = q.waiting.get_mut(i)
                    {
                        if !w.will_wake(cx.waker()) {
                            *w = cx.waker().clone();
                        }
                    }
                    return Poll::Pending;
                }
            }
            // Polled after it returned: a future may then do anything but be unsafe; this one never
            // completes again (and does not panic).
            State::Done => return Poll::Pending,
        };
        *state = State::Done;
        if let Err(e) = answer {
            self.count_refusal(e.into());
        }
        Poll::Ready(answer)
    }

    /// A [`Wait`] or [`WaitOwned`] ended by its caller's deadline: leaves the queue, counted as timed out
    /// (and its answer as a refusal), unless a lease was handed to it, which it returns.
    fn time_out_wait(&self, state: &mut State) -> Result<Lease, WaitError> {
        let answer = match core::mem::replace(state, State::Done) {
            // Never polled: it never queued, and its deadline passed (as step 2 of the blocking form).
            State::Start => Err(WaitError::Timeout),
            State::Queued(ticket) => {
                let mut q = self.waiting.lock();
                if self.waiting.leave(&mut q, ticket) {
                    Tally::bump(&self.waiting.tally.timed_out);
                    Err(WaitError::Timeout)
                } else {
                    // A lease handed over wins over a deadline passed at the same time: never lost. A
                    // caller shed before its deadline gets that answer (counted when it was shed).
                    q.take_answer(ticket).unwrap_or(Err(WaitError::Timeout))
                }
            }
            // It gave its answer already, which was counted then.
            State::Done => return Err(WaitError::Timeout),
        };
        if let Err(e) = answer {
            self.count_refusal(e.into());
        }
        answer
    }

    /// A [`Wait`] or [`WaitOwned`] dropped: leaves the queue, and gives back a lease handed to it.
    fn cancel_wait(&self, state: &mut State) {
        let State::Queued(ticket) = core::mem::replace(state, State::Done) else {
            return;
        };
        let handed = {
            let mut q = self.waiting.lock();
            if self.waiting.leave(&mut q, ticket) {
                Tally::bump(&self.waiting.tally.cancelled);
                None
            } else {
                // Served, or shed (its answer, never picked up, is dropped with it).
                q.take_answer(ticket).and_then(Result::ok)
            }
        };
        if let Some(lease) = handed {
            // Outside the lock: the release drains the queue, so the slot goes to the next waiter. Its
            // only possible error is that the node was removed meanwhile: nothing left to do then.
            let _ = self.release(lease, Outcome::Ignored, clock());
        }
    }
}

/// The future of [`Balancer::acquire_async`]: a lease guard once a node has room, or why none will come.
/// Dropping it leaves the queue (cancellation-safe: a lease already handed to it is given back).
///
/// ```
/// use weir::rt::Wait;
/// use weir::{Config, HeapBalancer, NodeSlot};
/// let b = HeapBalancer::with_capacity(1, Config::default()).unwrap();
/// let wait: Wait<'_, Box<[NodeSlot]>> = b.acquire_async();
/// drop(wait);
/// ```
#[must_use = "a future does nothing unless polled"]
pub struct Wait<'a, S: AsRef<[NodeSlot]>> {
    balancer: &'a Balancer<S, Waiters>,
    state: State,
    /// Its caller gives up at a deadline of its own ([`Wait::bounded`]).
    bounded: bool,
}

/// The future of [`Balancer::acquire_async_owned`]: [`Wait`] holding an `Arc` of its balancer, so that it
/// is `'static`.
///
/// ```
/// use std::sync::Arc;
/// use weir::rt::WaitOwned;
/// use weir::{Config, HeapBalancer, NodeSlot};
/// let b = Arc::new(HeapBalancer::with_capacity(1, Config::default()).unwrap());
/// let wait: WaitOwned<Box<[NodeSlot]>> = b.acquire_async_owned();
/// drop(wait);
/// ```
#[must_use = "a future does nothing unless polled"]
pub struct WaitOwned<S: AsRef<[NodeSlot]>> {
    balancer: Arc<Balancer<S, Waiters>>,
    state: State,
    /// Its caller gives up at a deadline of its own ([`WaitOwned::bounded`]).
    bounded: bool,
}

impl<'a, S: AsRef<[NodeSlot]>> Wait<'a, S> {
    /// Ends the wait because the caller's deadline passed. The async forms have no timer of their own;
    /// a caller that bounds a wait with its own (a `select!` on a sleep, a service's deadline) tells the
    /// balancer here, and the wait counts as timed out in [`Stats`](crate::balance::Stats) (`waits_timed_out`, and the answer
    /// as a refusal in `rejected_all_busy`), where dropping the future counts it as cancelled (the caller
    /// stopped asking). It leaves the queue and answers [`WaitError::Timeout`], unless a lease was handed
    /// to it already: a lease handed over wins over a deadline passed at the same time (as in
    /// [`acquire_wait`](Balancer::acquire_wait)), and is returned. A future never polled never queued:
    /// `Timeout`, counted as a refusal only; one that gave its answer already gets `Timeout` and counts
    /// nothing more.
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::Pin;
    /// use std::task::{Context, Waker};
    /// use weir::limit::{FixedLimit, LimitAlgorithm};
    /// use weir::rt::WaitError;
    /// use weir::{Config, HeapBalancer};
    ///
    /// let config = Config { limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }), ..Config::default() };
    /// let b = HeapBalancer::with_capacity(1, config).unwrap();
    /// b.add(1).unwrap();
    /// let _held = b.acquire_guard().unwrap();
    /// let mut wait = b.acquire_async();
    /// assert!(Pin::new(&mut wait).poll(&mut Context::from_waker(Waker::noop())).is_pending());
    /// // ... the caller's timer fires:
    /// assert_eq!(wait.time_out().err(), Some(WaitError::Timeout));
    /// let st = b.stats();
    /// assert_eq!((st.waits, st.waits_timed_out, st.rejected_all_busy, st.waiting), (1, 1, 1, 0));
    /// ```
    pub fn time_out(mut self) -> Result<LeaseGuard<'a, S, Waiters>, WaitError> {
        let balancer = self.balancer;
        balancer
            .time_out_wait(&mut self.state)
            .map(|lease| LeaseGuard::from_lease(balancer, lease))
    }

    /// Tells the balancer that the caller bounds this wait with a deadline of its own (a timer it races,
    /// ending the wait with [`time_out`](Self::time_out)), as [`within`](Self::within) does: a standing
    /// queue may then answer it early, with [`WaitError::Shed`], once newer callers are served ahead of
    /// it (see the module docs of [`rt`](crate::rt), "Draining"). Without it, an async wait is never shed:
    /// its caller said it waits as long as it takes. Takes effect when it joins (its first poll).
    ///
    /// ```
    /// use weir::{Config, HeapBalancer};
    /// let b = HeapBalancer::with_capacity(1, Config::default()).unwrap();
    /// let wait = b.acquire_async().bounded();
    /// drop(wait);
    /// ```
    pub fn bounded(mut self) -> Self {
        self.bounded = true;
        self
    }
}

impl<S: AsRef<[NodeSlot]>> WaitOwned<S> {
    /// [`Wait::time_out`] for the owned form: ends the wait because the caller's deadline passed,
    /// counted as timed out; returns a lease handed to it already.
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::Pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Waker};
    /// use weir::limit::{FixedLimit, LimitAlgorithm};
    /// use weir::{Config, HeapBalancer, Outcome};
    ///
    /// let config = Config { limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }), ..Config::default() };
    /// let b = Arc::new(HeapBalancer::with_capacity(1, config).unwrap());
    /// b.add(1).unwrap();
    /// let held = b.acquire_guard().unwrap();
    /// let mut wait = Arc::clone(&b).acquire_async_owned();
    /// assert!(Pin::new(&mut wait).poll(&mut Context::from_waker(Waker::noop())).is_pending());
    /// held.complete(Outcome::Success).unwrap(); // hands the slot to the waiter
    /// // The deadline passes before the task runs again: the lease handed over wins.
    /// let lease = wait.time_out().unwrap();
    /// assert_eq!(lease.node_id(), 1);
    /// let st = b.stats();
    /// assert_eq!((st.waits, st.waits_granted, st.waits_timed_out, st.rejected_all_busy), (1, 1, 0, 0));
    /// ```
    pub fn time_out(mut self) -> Result<OwnedLeaseGuard<S, Waiters>, WaitError> {
        self.balancer
            .time_out_wait(&mut self.state)
            .map(|lease| OwnedLeaseGuard::from_lease(Arc::clone(&self.balancer), lease))
    }

    /// [`Wait::bounded`] for the owned form: the caller bounds this wait with a deadline of its own, so
    /// a standing queue may answer it early with [`WaitError::Shed`].
    pub fn bounded(mut self) -> Self {
        self.bounded = true;
        self
    }
}

impl<'a, S: AsRef<[NodeSlot]>> Future for Wait<'a, S> {
    type Output = Result<LeaseGuard<'a, S, Waiters>, WaitError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let balancer = this.balancer;
        balancer
            .poll_wait(&mut this.state, this.bounded, cx)
            .map(|r| r.map(|lease| LeaseGuard::from_lease(balancer, lease)))
    }
}

impl<S: AsRef<[NodeSlot]>> Future for WaitOwned<S> {
    type Output = Result<OwnedLeaseGuard<S, Waiters>, WaitError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        this.balancer
            .poll_wait(&mut this.state, this.bounded, cx)
            .map(|r| r.map(|lease| OwnedLeaseGuard::from_lease(Arc::clone(&this.balancer), lease)))
    }
}

impl<S: AsRef<[NodeSlot]>> Drop for Wait<'_, S> {
    fn drop(&mut self) {
        self.balancer.cancel_wait(&mut self.state);
    }
}

impl<S: AsRef<[NodeSlot]>> Drop for WaitOwned<S> {
    fn drop(&mut self) {
        self.balancer.cancel_wait(&mut self.state);
    }
}

impl<S: AsRef<[NodeSlot]>> fmt::Debug for Wait<'_, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Wait")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

impl<S: AsRef<[NodeSlot]>> fmt::Debug for WaitOwned<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitOwned")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::balance::Stats;
    use crate::internal::sync::Ordering::Relaxed;
    use crate::limit::{FixedLimit, LimitAlgorithm};
    use crate::rt::HeapBalancer;
    use crate::rt::STANDING_NS;
    use crate::Config;
    use core::pin::pin;
    use core::task::Waker;
    use std::string::ToString;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc;
    use std::task::Wake as TaskWake;
    use std::thread;
    use std::time::Duration;
    use std::vec::Vec;

    /// A balancer of `slots` slots with a fixed `limit` per node and room for `max_waiters` waiters,
    /// whose queue never counts as standing: these tests check the order of a queue that drains,
    /// whatever a loaded machine's scheduling makes the waits (see
    /// `a_standing_queue_serves_the_newest_first`).
    fn balancer(slots: usize, limit: u32, max_waiters: u32) -> HeapBalancer {
        let mut b = with_standing(slots, limit, max_waiters);
        b.waiting.standing_ns = u64::MAX;
        b
    }

    /// A balancer whose queue stands after the real [`STANDING_NS`].
    fn with_standing(slots: usize, limit: u32, max_waiters: u32) -> HeapBalancer {
        let config = Config {
            limit: LimitAlgorithm::Fixed(FixedLimit { limit }),
            max_waiters,
            ..Config::default()
        };
        HeapBalancer::with_capacity(slots, config).unwrap()
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    fn waiting<S: AsRef<[NodeSlot]>>(b: &Balancer<S, Waiters>) -> u64 {
        b.waiting.count.load(Relaxed)
    }

    /// Waits (really) until `n` callers wait on `b`.
    fn until_waiting<S: AsRef<[NodeSlot]>>(b: &Balancer<S, Waiters>, n: u64) {
        let start = Instant::now();
        while waiting(b) != n {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "never saw {n} waiting"
            );
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// The exact conservation of every lease and every wait, and nothing queued or held for a waiter.
    fn assert_settled<S: AsRef<[NodeSlot]>>(b: &Balancer<S, Waiters>) -> Stats {
        let st = b.stats();
        assert_eq!(st.in_flight, 0, "{st:?}");
        assert_eq!(
            st.acquired,
            st.released_total() + st.released_stale,
            "{st:?}"
        );
        assert_eq!((waiting(b), st.waiting), (0, 0));
        assert_waits_conserved(&st);
        let q = b.waiting.lock();
        assert!(q.waiting.is_empty() && q.answered.is_empty());
        assert_eq!(q.bounded, 0);
        st
    }

    /// Every wait that queued is granted, timed out, cancelled, or waiting still.
    fn assert_waits_conserved(st: &Stats) {
        assert_eq!(
            st.waits,
            st.waits_granted + st.waits_timed_out + st.waits_cancelled + st.waiting,
            "{st:?}"
        );
    }

    /// The wait counters and the refusals: `(waits, granted, timed_out, cancelled, all_busy, no_active)`.
    fn counts(st: &Stats) -> (u64, u64, u64, u64, u64, u64) {
        (
            st.waits,
            st.waits_granted,
            st.waits_timed_out,
            st.waits_cancelled,
            st.rejected_all_busy,
            st.rejected_no_active,
        )
    }

    /// A waker that counts its wakes and unparks the thread that made it.
    struct Unpark {
        thread: thread::Thread,
        wakes: AtomicUsize,
    }

    impl TaskWake for Unpark {
        fn wake(self: Arc<Self>) {
            self.wake_by_ref();
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.wakes.fetch_add(1, Ordering::SeqCst);
            self.thread.unpark();
        }
    }

    fn unpark_waker() -> (Waker, Arc<Unpark>) {
        let u = Arc::new(Unpark {
            thread: thread::current(),
            wakes: AtomicUsize::new(0),
        });
        (Waker::from(Arc::clone(&u)), u)
    }

    /// The smallest executor: polls `f` on this thread, parking between wakes.
    fn block_on<F: Future>(f: F) -> F::Output {
        let (waker, _) = unpark_waker();
        let mut cx = Context::from_waker(&waker);
        let mut f = pin!(f);
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
            thread::park();
        }
    }

    fn poll_once<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
        Pin::new(f).poll(&mut Context::from_waker(waker))
    }

    /// Waiters 0, 1 and 2 join a full node (limit 3, three leases held), 0 `first_waits` before the
    /// others; each release of a held lease then serves one of them, who holds its lease until the end.
    /// Blocking waiters where `blocking`, else async ones with no deadline (a standing queue never sheds
    /// those). Returns the order they were served in and the settled stats.
    fn served_order(b: &HeapBalancer, first_waits: Duration, blocking: bool) -> (Vec<u64>, Stats) {
        b.add(1).unwrap();
        let held: Vec<_> = (0..3).map(|_| b.acquire_guard().unwrap()).collect();
        let (tx, rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let done_rx = std::sync::Mutex::new(done_rx);
        let mut order = Vec::new();
        thread::scope(|s| {
            for k in 0..3u64 {
                let tx = tx.clone();
                let done_rx = &done_rx;
                s.spawn(move || {
                    let lease = if blocking {
                        b.acquire_wait(far()).unwrap()
                    } else {
                        block_on(b.acquire_async()).unwrap()
                    };
                    tx.send(k).unwrap();
                    // Hold the lease until the main thread is done, so that each release frees one.
                    let _ = done_rx.lock().unwrap().recv();
                    lease.complete(Outcome::Success).unwrap();
                });
                // The next waiter arrives only once this one waits.
                until_waiting(b, k + 1);
                if k == 0 {
                    thread::sleep(first_waits);
                }
            }
            for (k, lease) in held.into_iter().enumerate() {
                assert!(rx.try_recv().is_err(), "served before a slot came free");
                lease.complete(Outcome::Success).unwrap();
                // The release handed the slot to a waiter before it returned.
                assert_eq!(waiting(b), 2 - k as u64);
                order.push(rx.recv_timeout(Duration::from_secs(10)).unwrap());
            }
            drop(done_tx);
        });
        (order, assert_settled(b))
    }

    #[test]
    fn blocking_waiters_are_served_in_arrival_order() {
        let (order, st) = served_order(&balancer(1, 3, 16), Duration::ZERO, true);
        assert_eq!(order, [0, 1, 2]);
        assert_eq!((st.acquired, st.released(Outcome::Success)), (6, 6));
        // Three waits, all granted: no refusal, although every drain before a release was refused.
        assert_eq!(counts(&st), (3, 3, 0, 0, 0, 0));
    }

    /// Once the oldest waiter has waited longer than `STANDING_NS`, each release serves the newest
    /// waiter: 2, then 1, then 0 (whose wait is still the longest; with no deadline, it is not shed).
    /// The same waits with the queue never standing are served in arrival order.
    #[test]
    fn a_standing_queue_serves_the_newest_first() {
        let long = Duration::from_nanos(STANDING_NS) + Duration::from_millis(50);
        let (order, st) = served_order(&with_standing(1, 3, 16), long, false);
        assert_eq!(order, [2, 1, 0]);
        assert_eq!(counts(&st), (3, 3, 0, 0, 0, 0));
        assert_eq!(served_order(&balancer(1, 3, 16), long, true).0, [0, 1, 2]);
    }

    /// A standing queue that serves a newer waiter ahead of the oldest sheds each waiter with a deadline
    /// that has waited more than `STANDING_NS` (a blocking one, an async one marked bounded), and keeps
    /// those without: the shed answer is `Shed`, counted as timed out and as a refusal, once.
    #[test]
    fn a_standing_queue_sheds_the_bounded_waiters_it_passes_over() {
        let mut b = with_standing(1, 1, 16);
        b.waiting.standing_ns = Duration::from_millis(20).as_nanos() as u64;
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        let (waker, _) = unpark_waker();
        thread::scope(|s| {
            // 0: blocking (it has a deadline), 1: async with no deadline, 2: async bounded, 3: async
            // bounded and dropped unpolled once shed, all old; 4: a newer async waiter.
            let blocking = s.spawn(|| b.acquire_wait(far()).err());
            until_waiting(&b, 1);
            let mut free = b.acquire_async();
            let mut bounded = b.acquire_async().bounded();
            let mut dropped = b.acquire_async().bounded();
            for w in [&mut free, &mut bounded, &mut dropped] {
                assert!(poll_once(w, &waker).is_pending());
            }
            thread::sleep(Duration::from_millis(60));
            // Standing, but nothing was granted: nobody is shed for waiting alone.
            assert_eq!(waiting(&b), 4);
            let mut newer = b.acquire_async();
            assert!(poll_once(&mut newer, &waker).is_pending());
            held.complete(Outcome::Success).unwrap();
            // The release served the newest, and shed the bounded old ones; the free one waits on.
            assert_eq!(blocking.join().unwrap(), Some(WaitError::Shed));
            assert_eq!(waiting(&b), 1);
            let lease = match poll_once(&mut newer, &waker) {
                Poll::Ready(Ok(lease)) => lease,
                other => panic!("the newest waiter: {other:?}"),
            };
            assert!(matches!(
                poll_once(&mut bounded, &waker),
                Poll::Ready(Err(WaitError::Shed))
            ));
            drop(dropped);
            assert!(poll_once(&mut free, &waker).is_pending());
            let st = b.stats();
            // 5 waits: 1 granted, 3 shed (as timed out), 1 waiting; 2 answers given so far.
            assert_eq!(counts(&st), (5, 1, 3, 0, 2, 0));
            assert_waits_conserved(&st);
            assert!(b.waiting.lock().answered.is_empty());
            // The next release serves the one left (the newest now), which sheds nobody.
            lease.complete(Outcome::Success).unwrap();
            let last = match poll_once(&mut free, &waker) {
                Poll::Ready(Ok(lease)) => lease,
                other => panic!("the free waiter: {other:?}"),
            };
            last.complete(Outcome::Success).unwrap();
        });
        let st = assert_settled(&b);
        assert_eq!(counts(&st), (5, 2, 3, 0, 2, 0));
        assert_eq!(
            WaitError::Shed.to_string(),
            "the queue stood and newer callers were served first: answered before the deadline"
        );
    }

    /// A shed wait ended by its caller's timer answers `Shed` (not `Timeout`), counted once.
    #[test]
    fn time_out_after_shed_answers_shed() {
        let mut b = with_standing(1, 1, 16);
        b.waiting.standing_ns = 0;
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        let waker = Waker::noop();
        let mut old = b.acquire_async().bounded();
        assert!(poll_once(&mut old, waker).is_pending());
        thread::sleep(Duration::from_millis(2));
        let mut newer = b.acquire_async();
        assert!(poll_once(&mut newer, waker).is_pending());
        held.complete(Outcome::Success).unwrap();
        assert_eq!(old.time_out().err(), Some(WaitError::Shed));
        let Poll::Ready(Ok(lease)) = poll_once(&mut newer, waker) else {
            panic!("the newest waiter was not served");
        };
        lease.complete(Outcome::Success).unwrap();
        let st = assert_settled(&b);
        assert_eq!(counts(&st), (2, 1, 1, 0, 1, 0));
    }

    #[test]
    fn async_waiters_are_served_in_arrival_order() {
        let b = balancer(1, 3, 16);
        b.add(1).unwrap();
        let mut held: Vec<_> = (0..3).map(|_| b.acquire_guard().unwrap()).collect();
        let (waker, _) = unpark_waker();
        let mut waits: Vec<_> = (0..3).map(|_| b.acquire_async()).collect();
        for w in &mut waits {
            assert!(poll_once(w, &waker).is_pending());
        }
        assert_eq!(waiting(&b), 3);
        let mut got = Vec::new();
        for k in 0..3 {
            held.pop().unwrap().complete(Outcome::Success).unwrap();
            // Exactly the k-th waiter became ready.
            for (j, w) in waits.iter_mut().enumerate().skip(k) {
                match poll_once(w, &waker) {
                    Poll::Ready(Ok(lease)) => {
                        assert_eq!(j, k);
                        got.push(lease);
                    }
                    Poll::Ready(Err(e)) => panic!("waiter {j}: {e}"),
                    Poll::Pending => assert_ne!(j, k, "waiter {k} not served"),
                }
            }
        }
        assert_eq!(got.len(), 3);
        drop(got);
        drop(waits);
        let st = assert_settled(&b);
        assert_eq!(st.released(Outcome::Ignored), 3);
        assert_eq!(counts(&st), (3, 3, 0, 0, 0, 0));
    }

    #[test]
    fn queue_full_at_the_bound() {
        let b = balancer(1, 1, 2);
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        let waker = Waker::noop();
        let mut first = b.acquire_async();
        let mut second = b.acquire_async();
        assert!(poll_once(&mut first, waker).is_pending());
        assert!(poll_once(&mut second, waker).is_pending());
        let full = WaitError::QueueFull { max_waiters: 2 };
        assert_eq!(b.acquire_wait(far()).err(), Some(full));
        let mut third = b.acquire_async();
        assert!(matches!(poll_once(&mut third, waker), Poll::Ready(Err(e)) if e == full));
        assert_eq!(
            full.to_string(),
            "no node has room and 2 callers are waiting already (max_waiters)"
        );
        // One leaves: there is room in the queue again.
        drop(first);
        assert_eq!(waiting(&b), 1);
        let mut fourth = b.acquire_async();
        assert!(poll_once(&mut fourth, waker).is_pending());
        assert_eq!(waiting(&b), 2);
        // Three queued, one left; the two refused by the full queue are refusals, not waits.
        let st = b.stats();
        assert_eq!((counts(&st), st.waiting), ((3, 0, 0, 1, 2, 0), 2));
        assert_waits_conserved(&st);
        drop((second, fourth, held));
        let st = assert_settled(&b);
        assert_eq!(counts(&st), (3, 0, 0, 3, 2, 0));
    }

    #[test]
    fn no_waiting_with_max_waiters_zero() {
        let b = balancer(1, 1, 0);
        b.add(1).unwrap();
        // A free slot is still granted at once.
        let held = b.acquire_wait(far()).unwrap();
        let start = Instant::now();
        let off = WaitError::QueueFull { max_waiters: 0 };
        assert_eq!(b.acquire_wait(far()).err(), Some(off));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(block_on(b.acquire_async()).err(), Some(off));
        assert_eq!(
            off.to_string(),
            "no node has room and waiting is off (max_waiters is 0)"
        );
        drop(held);
        let st = assert_settled(&b);
        assert_eq!(st.acquired, 1);
        assert_eq!(counts(&st), (0, 0, 0, 0, 2, 0));
    }

    #[test]
    fn timeout_leaves_the_queue_and_the_state_intact() {
        let b = balancer(2, 1, 8);
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        let before = b.stats();
        let start = Instant::now();
        let deadline = start + Duration::from_millis(30);
        assert_eq!(b.acquire_wait(deadline).err(), Some(WaitError::Timeout));
        assert!(Instant::now() >= deadline);
        assert_eq!(waiting(&b), 0);
        // A deadline already past: no wait at all.
        assert_eq!(b.acquire_wait(start).err(), Some(WaitError::Timeout));
        let after = b.stats();
        assert_eq!((after.acquired, after.in_flight), (before.acquired, 1));
        assert_eq!(after.released_total(), 0);
        // The balancer works as before: the slot comes free, and a waiter gets it at once.
        held.complete(Outcome::Success).unwrap();
        b.acquire_wait(far())
            .unwrap()
            .complete(Outcome::Success)
            .unwrap();
        let st = assert_settled(&b);
        assert_eq!((st.acquired, st.released(Outcome::Success)), (2, 2));
        // The first waited and timed out; the second's deadline had passed before it could queue.
        assert_eq!(counts(&st), (1, 0, 1, 0, 2, 0));
    }

    #[test]
    fn no_active_nodes_fails_at_once() {
        let b = balancer(2, 1, 8);
        let start = Instant::now();
        assert_eq!(b.acquire_wait(far()).err(), Some(WaitError::NoActiveNodes));
        assert_eq!(
            block_on(b.acquire_async()).err(),
            Some(WaitError::NoActiveNodes)
        );
        b.add(1).unwrap();
        b.set_lame_duck(1, true).unwrap();
        assert_eq!(b.acquire_wait(far()).err(), Some(WaitError::NoActiveNodes));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(WaitError::NoActiveNodes.to_string(), "no active nodes");
        let st = assert_settled(&b);
        assert_eq!(counts(&st), (0, 0, 0, 0, 0, 3));
    }

    #[test]
    fn no_active_nodes_behind_a_waiter_fails_at_once() {
        let b = balancer(2, 1, 8);
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        let waker = Waker::noop();
        let mut first = b.acquire_async();
        assert!(poll_once(&mut first, waker).is_pending());
        // The only node leaves rotation: the waiter stays, a newcomer fails at once.
        b.set_lame_duck(1, true).unwrap();
        let mut second = b.acquire_async();
        assert!(matches!(
            poll_once(&mut second, waker),
            Poll::Ready(Err(WaitError::NoActiveNodes))
        ));
        assert_eq!(waiting(&b), 1);
        // It comes back: the waiter that stayed is served (its slot is still held: a new node).
        b.add(2).unwrap();
        match poll_once(&mut first, waker) {
            Poll::Ready(Ok(lease)) => assert_eq!(lease.node_id(), 2),
            other => panic!("{other:?}"),
        }
        drop(held);
        // The newcomer joined behind the waiter but left at once: a refusal, not a wait.
        let st = assert_settled(&b);
        assert_eq!(counts(&st), (1, 1, 0, 0, 0, 1));
    }

    #[test]
    fn an_added_node_serves_the_waiters() {
        let b = balancer(2, 1, 8);
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        thread::scope(|s| {
            let waiter = s.spawn(|| b.acquire_wait(far()).map(|lease| lease.node_id()));
            until_waiting(&b, 1);
            b.add(2).unwrap();
            assert_eq!(waiter.join().unwrap(), Ok(2));
        });
        drop(held);
        assert_settled(&b);
    }

    #[test]
    fn a_node_back_from_lame_duck_serves_the_waiters() {
        let b = balancer(2, 1, 8);
        b.add(1).unwrap();
        b.add(2).unwrap();
        b.set_lame_duck(2, true).unwrap();
        let held = b.acquire_guard().unwrap();
        assert_eq!(held.node_id(), 1);
        let (waker, wakes) = unpark_waker();
        let mut wait = b.acquire_async();
        assert!(poll_once(&mut wait, &waker).is_pending());
        b.set_lame_duck(2, false).unwrap();
        assert_eq!(wakes.wakes.load(Ordering::SeqCst), 1);
        match poll_once(&mut wait, &waker) {
            Poll::Ready(Ok(lease)) => assert_eq!(lease.node_id(), 2),
            other => panic!("{other:?}"),
        }
        drop(held);
        assert_settled(&b);
    }

    #[test]
    fn block_on_is_woken_by_a_release_on_another_thread() {
        let b = balancer(1, 1, 8);
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        thread::scope(|s| {
            s.spawn(|| {
                until_waiting(&b, 1);
                held.complete(Outcome::Failure).unwrap();
            });
            let lease = block_on(b.acquire_async()).unwrap();
            lease.complete(Outcome::Success).unwrap();
        });
        let st = assert_settled(&b);
        assert_eq!(
            (st.released(Outcome::Failure), st.released(Outcome::Success)),
            (1, 1)
        );
    }

    #[test]
    fn the_latest_waker_is_woken() {
        let b = balancer(1, 1, 8);
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        let (first, first_wakes) = unpark_waker();
        let (second, second_wakes) = unpark_waker();
        let mut wait = b.acquire_async();
        assert!(poll_once(&mut wait, &first).is_pending());
        assert!(poll_once(&mut wait, &second).is_pending());
        held.complete(Outcome::Success).unwrap();
        assert_eq!(first_wakes.wakes.load(Ordering::SeqCst), 0);
        assert_eq!(second_wakes.wakes.load(Ordering::SeqCst), 1);
        assert!(matches!(poll_once(&mut wait, &second), Poll::Ready(Ok(_))));
        // Polled again after completing: never ready again, and no panic.
        assert!(poll_once(&mut wait, &second).is_pending());
        drop(wait);
        assert_settled(&b);
    }

    #[test]
    fn a_dropped_future_hands_its_lease_to_the_next_waiter() {
        let b = balancer(1, 1, 8);
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        let waker = Waker::noop();
        let mut first = b.acquire_async();
        let mut second = b.acquire_async();
        let mut third = b.acquire_async();
        for w in [&mut first, &mut second, &mut third] {
            assert!(poll_once(w, waker).is_pending());
        }
        held.complete(Outcome::Success).unwrap();
        // The lease is the first's now; it is dropped before it picks it up.
        assert_eq!(b.waiting.lock().answered.len(), 1);
        drop(first);
        assert_eq!(b.stats().released(Outcome::Ignored), 1);
        assert_eq!(b.stats().in_flight, 1);
        // The second was served by that release; the third still waits and leaves unserved.
        let lease = match poll_once(&mut second, waker) {
            Poll::Ready(Ok(lease)) => lease,
            other => panic!("{other:?}"),
        };
        assert_eq!(waiting(&b), 1);
        drop(third);
        assert_eq!(waiting(&b), 0);
        lease.complete(Outcome::Success).unwrap();
        let st = assert_settled(&b);
        assert_eq!(
            (
                st.acquired,
                st.released(Outcome::Success),
                st.released(Outcome::Ignored)
            ),
            (3, 2, 1)
        );
        // The first was handed a lease (granted, given back as Ignored), the third left waiting.
        assert_eq!(counts(&st), (3, 2, 0, 1, 0, 0));
    }

    #[test]
    fn a_dropped_future_with_nobody_behind_releases_its_lease() {
        let b = balancer(1, 1, 8);
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        let mut wait = b.acquire_async();
        assert!(poll_once(&mut wait, Waker::noop()).is_pending());
        held.complete(Outcome::Success).unwrap();
        drop(wait);
        let st = assert_settled(&b);
        assert_eq!((st.acquired, st.released(Outcome::Ignored)), (2, 1));
        // A future never polled never joined.
        drop(b.acquire_async());
        let st = assert_settled(&b);
        assert_eq!(counts(&st), (1, 1, 0, 0, 0, 0));
    }

    #[test]
    fn time_out_counts_a_timeout_and_keeps_a_lease_handed_over() {
        let b = balancer(1, 1, 8);
        b.add(1).unwrap();
        let held = b.acquire_guard().unwrap();
        let waker = Waker::noop();
        // Queued, then timed out by the caller's timer.
        let mut timed = b.acquire_async();
        assert!(poll_once(&mut timed, waker).is_pending());
        assert_eq!(timed.time_out().err(), Some(WaitError::Timeout));
        assert_eq!(waiting(&b), 0);
        assert_eq!(counts(&b.stats()), (1, 0, 1, 0, 1, 0));
        // Never polled: it never queued; its deadline passed all the same.
        assert_eq!(b.acquire_async().time_out().err(), Some(WaitError::Timeout));
        assert_eq!(counts(&b.stats()), (1, 0, 1, 0, 2, 0));
        // Handed a lease before the timer fired: the lease wins, and the wait was granted.
        let mut served = b.acquire_async();
        assert!(poll_once(&mut served, waker).is_pending());
        held.complete(Outcome::Success).unwrap();
        let lease = served.time_out().unwrap();
        assert_eq!(counts(&b.stats()), (2, 1, 1, 0, 2, 0));
        drop(lease);
        // Answered already (a lease at once, which is no wait): nothing more is counted.
        let mut done = b.acquire_async();
        let got = poll_once(&mut done, waker);
        assert!(matches!(got, Poll::Ready(Ok(_))), "{got:?}");
        drop(got);
        assert_eq!(done.time_out().err(), Some(WaitError::Timeout));
        let st = assert_settled(&b);
        assert_eq!(counts(&st), (2, 1, 1, 0, 2, 0));
        assert_eq!(st.released(Outcome::Ignored), 2);
    }

    #[test]
    fn owned_forms_outlive_the_borrow() {
        let b = Arc::new(balancer(1, 1, 8));
        b.add(1).unwrap();
        let held = Arc::clone(&b).acquire_wait_owned(far()).unwrap();
        let wait = Arc::clone(&b).acquire_async_owned();
        let task = thread::spawn(move || block_on(wait).map(|lease| lease.node_id()));
        until_waiting(&b, 1);
        held.complete(Outcome::Success).unwrap();
        assert_eq!(task.join().unwrap(), Ok(1));
        let soon = Instant::now() + Duration::from_millis(1);
        let again = Arc::clone(&b).acquire_wait_owned(soon).unwrap();
        let blocked = Arc::clone(&b).acquire_wait_owned(soon);
        assert_eq!(blocked.err(), Some(WaitError::Timeout));
        drop(again);
        let st = assert_settled(&b);
        assert_eq!(st.acquired, 3);
    }

    #[test]
    fn nobody_waiting_costs_a_release_nothing_more() {
        let b = balancer(1, 1, 8);
        b.add(1).unwrap();
        b.acquire_guard()
            .unwrap()
            .complete(Outcome::Success)
            .unwrap();
        // A fail-fast refusal is counted as one and touches no wait counter.
        let held = b.acquire_guard().unwrap();
        assert_eq!(b.acquire_guard().err(), Some(Rejected::AllBusy));
        drop(held);
        assert_eq!(counts(&assert_settled(&b)), (0, 0, 0, 0, 1, 0));
        // No waiter ever joined: the queue never allocated, and its generator was never seeded.
        let q = b.waiting.lock();
        assert_eq!((q.waiting.capacity(), q.answered.capacity()), (0, 0));
        assert!(q.rng.is_none());
    }

    #[test]
    fn futures_are_send_and_owned_ones_static() {
        fn send<T: Send>(_: &T) {}
        fn send_static<T: Send + 'static>(_: &T) {}
        let b = Arc::new(balancer(1, 1, 8));
        send(&b.acquire_async());
        send_static(&Arc::clone(&b).acquire_async_owned());
    }

    /// Six threads contend for two leases through a queue that stands after 100 µs: blocking waiters
    /// (deadline 50 ms), an async one marked bounded, an async one with no deadline, and a fail-fast
    /// caller. Every answer is accounted for exactly: each wait that queued is granted, timed out or
    /// shed (counted together), and each refusal answered is counted once; the waiter with no deadline
    /// is never shed.
    #[test]
    fn shedding_under_contention_conserves_every_wait() {
        let mut b = with_standing(2, 1, 64);
        b.waiting.standing_ns = 100_000;
        b.add(1).unwrap();
        b.add(2).unwrap();
        let hold = Duration::from_micros(200);
        // (leases, shed, timed out, fail-fast refusals) per thread.
        let seen: Vec<(u64, u64, u64, u64)> = thread::scope(|s| {
            let b = &b;
            let threads: Vec<_> = (0..6)
                .map(|t| {
                    s.spawn(move || {
                        let mut seen = (0, 0, 0, 0);
                        for _ in 0..300 {
                            // Each lease is held a while, so that the others queue behind it.
                            let work = |g: LeaseGuard<'_, _, Waiters>| {
                                thread::sleep(hold);
                                g.complete(Outcome::Success).unwrap();
                            };
                            let answer = match t {
                                0..=2 => b
                                    .acquire_wait(Instant::now() + Duration::from_millis(50))
                                    .map(work),
                                3 => block_on(b.acquire_async().bounded()).map(work),
                                4 => block_on(b.acquire_async()).map(work),
                                _ => match b.acquire_guard() {
                                    Ok(g) => {
                                        work(g);
                                        Ok(())
                                    }
                                    Err(_) => {
                                        seen.3 += 1;
                                        thread::sleep(hold);
                                        continue;
                                    }
                                },
                            };
                            match answer {
                                Ok(()) => seen.0 += 1,
                                Err(WaitError::Shed) => {
                                    assert_ne!(t, 4, "a wait with no deadline was shed");
                                    seen.1 += 1;
                                }
                                Err(WaitError::Timeout) => seen.2 += 1,
                                Err(e) => panic!("thread {t}: {e}"),
                            }
                        }
                        seen
                    })
                })
                .collect();
            threads.into_iter().map(|t| t.join().unwrap()).collect()
        });
        let st = assert_settled(&b);
        let sum = |f: fn(&(u64, u64, u64, u64)) -> u64| seen.iter().map(f).sum::<u64>();
        let (leases, shed, timed_out, refused) =
            (sum(|s| s.0), sum(|s| s.1), sum(|s| s.2), sum(|s| s.3));
        assert_eq!(st.acquired, leases, "{st:?}");
        assert_eq!(st.waits_timed_out, shed + timed_out, "{st:?}");
        assert_eq!(st.waits_cancelled, 0);
        assert_eq!(st.rejected_all_busy, shed + timed_out + refused, "{st:?}");
        assert_eq!(leases + shed + timed_out + refused, 6 * 300);
        // Five callers hold two leases back to back: the queue stands (about 500 shed in a run here).
        assert!(shed > 0, "the queue never stood: nothing tested");
    }
}
