//! Calls and waits bounded by the caller's timer: [`LeaseGuard::within`] runs a call under a lease and
//! records the deadline's passing as [`Outcome::Dropped`]; [`Wait::within`] ends a wait for room at a
//! deadline with [`WaitError::Timeout`].
//!
//! Why the caller's timer and not one of ours: the core depends on no runtime, and a future can be woken
//! at a deadline only by a timer that its executor drives (tokio's `sleep_until`, async-std's, embassy's).
//! So these take that timer as a future, any future that completes at the deadline, and race it against
//! the call: one adapter for every runtime, and paused or simulated time works as the runtime's does.

use super::guard::{LeaseGuard, OwnedLeaseGuard};
use super::queue::Waiters;
use super::wait::{Wait, WaitError, WaitOwned};
use crate::balance::{NodeSlot, Outcome, Waiting};
use core::fmt;
use core::future::{poll_fn, Future};
use core::pin::pin;
use core::task::Poll;

/// The call's deadline passed before it finished: its lease was released as [`Outcome::Dropped`].
///
/// ```
/// assert_eq!(weir::rt::DeadlinePassed.to_string(), "the deadline passed before the call finished");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeadlinePassed;

impl fmt::Display for DeadlinePassed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the deadline passed before the call finished")
    }
}

impl std::error::Error for DeadlinePassed {}

/// Polls `work`, then `timer`: `Some` with `work`'s output if it is ready (a call that finishes as the
/// deadline passes has finished), `None` once `timer` is.
async fn race<T>(timer: impl Future, work: impl Future<Output = T>) -> Option<T> {
    let mut timer = pin!(timer);
    let mut work = pin!(work);
    poll_fn(|cx| {
        if let Poll::Ready(v) = work.as_mut().poll(cx) {
            return Poll::Ready(Some(v));
        }
        match timer.as_mut().poll(cx) {
            Poll::Ready(_) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// `within` for both lease guards.
macro_rules! guard_within {
    ($guard:ident $(<$lt:lifetime>)?) => {
        impl<$($lt,)? S: AsRef<[NodeSlot]>, W: Waiting> $guard<$($lt,)? S, W> {
            /// Runs `call` under the lease until `timer` completes: the way to call a backend. If the
            /// call finishes first, the lease is released with `classify`'s outcome for its output,
            /// which is returned. If `timer` completes first, the call is dropped, the lease released
            /// as [`Outcome::Dropped`] (a timeout counts against the node) and the answer is
            /// [`DeadlinePassed`]. If the future this returns is dropped (the caller cancelled), the
            /// guard drops with it: [`Outcome::Ignored`], or `Dropped` if a
            /// [`with_deadline`](Self::with_deadline) deadline had passed.
            ///
            /// `timer` is any future that completes at the deadline, from the caller's runtime (for
            /// tokio, `tokio::time::sleep_until(deadline)`): see the module docs of [`rt`](crate::rt)
            /// for why. A release error (the node was removed during the call) is not reported: the
            /// call's output still is.
            ///
            /// ```
            /// use std::future::{pending, ready, Future};
            /// use std::pin::pin;
            /// use std::task::{Context, Poll, Waker};
            /// use weir::rt::DeadlinePassed;
            /// use weir::{Config, HeapBalancer, Outcome};
            ///
            /// let b = HeapBalancer::with_capacity(1, Config::default()).unwrap();
            /// b.add(1).unwrap();
            /// let mut cx = Context::from_waker(Waker::noop()); // an executor would pass its own
            ///
            /// // The backend answers 503 before the deadline: released as the status says.
            /// let guard = b.acquire_guard().unwrap();
            /// let call = guard.within(pending::<()>(), ready(503), |s| {
            ///     Outcome::from_http_status(*s).unwrap_or(Outcome::Failure)
            /// });
            /// assert_eq!(pin!(call).poll(&mut cx), Poll::Ready(Ok(503)));
            ///
            /// // The deadline passes first (a timer already done): the call timed out.
            /// let guard = b.acquire_guard().unwrap();
            /// let call = guard.within(ready(()), pending::<u16>(), |_| Outcome::Success);
            /// assert_eq!(pin!(call).poll(&mut cx), Poll::Ready(Err(DeadlinePassed)));
            ///
            /// let st = b.stats();
            /// assert_eq!((st.released(Outcome::Dropped), st.in_flight), (2, 0));
            /// ```
            pub async fn within<T>(
                self,
                timer: impl Future,
                call: impl Future<Output = T>,
                classify: impl FnOnce(&T) -> Outcome,
            ) -> Result<T, DeadlinePassed> {
                match race(timer, call).await {
                    Some(output) => {
                        // An error means the node was removed meanwhile: nothing left to record.
                        let _ = self.complete(classify(&output));
                        Ok(output)
                    }
                    None => {
                        let _ = self.complete(Outcome::Dropped);
                        Err(DeadlinePassed)
                    }
                }
            }
        }
    };
}
guard_within!(LeaseGuard<'a>);
guard_within!(OwnedLeaseGuard);

impl<'a, S: AsRef<[NodeSlot]>> Wait<'a, S> {
    /// Waits for room until `timer` completes, then gives up with [`WaitError::Timeout`] (counted as
    /// [`Wait::time_out`] counts it): the async wait with a deadline. `timer` is the caller's runtime's
    /// (for tokio, `tokio::time::sleep_until(deadline)`); a lease handed over as the timer completes
    /// wins, as in [`acquire_wait`](crate::Balancer::acquire_wait). Dropping the future cancels the
    /// wait, as dropping a [`Wait`] does. The wait is [`bounded`](Wait::bounded): a standing queue may
    /// answer it early, with [`WaitError::Shed`].
    ///
    /// ```
    /// use std::future::{ready, Future};
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    /// use weir::limit::{FixedLimit, LimitAlgorithm};
    /// use weir::rt::WaitError;
    /// use weir::{Config, HeapBalancer};
    ///
    /// let config = Config { limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }), ..Config::default() };
    /// let b = HeapBalancer::with_capacity(1, config).unwrap();
    /// b.add(1).unwrap();
    /// let _held = b.acquire_guard().unwrap();
    /// let wait = b.acquire_async().within(ready(())); // a timer already done
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(matches!(pin!(wait).poll(&mut cx), Poll::Ready(Err(WaitError::Timeout))));
    /// assert_eq!(b.stats().waits_timed_out, 1);
    /// ```
    pub async fn within(self, timer: impl Future) -> Result<LeaseGuard<'a, S, Waiters>, WaitError> {
        let mut this = self.bounded();
        match race(timer, &mut this).await {
            Some(answer) => answer,
            None => this.time_out(),
        }
    }
}

impl<S: AsRef<[NodeSlot]>> WaitOwned<S> {
    /// [`Wait::within`] for the owned form: waits for room until `timer` completes, then gives up with
    /// [`WaitError::Timeout`].
    ///
    /// ```
    /// use std::future::{pending, Future};
    /// use std::pin::pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Waker};
    /// use weir::{Config, HeapBalancer};
    ///
    /// let b = Arc::new(HeapBalancer::with_capacity(1, Config::default()).unwrap());
    /// b.add(1).unwrap();
    /// let wait = Arc::clone(&b).acquire_async_owned().within(pending::<()>());
    /// let mut cx = Context::from_waker(Waker::noop());
    /// match pin!(wait).poll(&mut cx) {
    ///     Poll::Ready(Ok(guard)) => assert_eq!(guard.node_id(), 1), // room at once
    ///     other => panic!("expected a lease, got {other:?}"),
    /// }
    /// ```
    pub async fn within(
        self,
        timer: impl Future,
    ) -> Result<OwnedLeaseGuard<S, Waiters>, WaitError> {
        let mut this = self.bounded();
        match race(timer, &mut this).await {
            Some(answer) => answer,
            None => this.time_out(),
        }
    }
}
