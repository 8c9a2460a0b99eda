//! A call's deadline ([`Builder::deadline`](crate::Builder::deadline)) and the tokio timers behind it
//! and behind a retry's pause.
//!
//! The instant is taken when `call` is made, less the time `poll_ready` waited for room for the request
//! (tokio's clock, so paused time works: the balance's `call_deadline`); the timer is made
//! at the first poll that finds the call unanswered, on the runtime that polls it. It is boxed, so that
//! the response future stays `Unpin` where the inner one is: one allocation for a call that has a
//! deadline and is not answered at its first poll, none for a call without one. A deadline passing is the node's timeout: the caller that owns the
//! future records `Dropped`. A caller that drops the future first (its own `tokio::time::timeout`, a
//! `select!`) cancels: `Ignored`. The core stays runtime-free: the timer is this crate's, as
//! `weir::rt`'s `within` asks of its callers.

use crate::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// A deadline, or none; its timer once a poll has needed it.
pub(crate) struct Deadline {
    at: Option<Instant>,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Deadline {
    /// `after` from now, or no deadline (`None`, or one too far away for the clock to name).
    pub(crate) fn after(after: Option<Duration>) -> Self {
        Deadline {
            at: after.and_then(|d| Instant::now().checked_add(d)),
            timer: None,
        }
    }

    /// Whether waiting `pause` from now still ends before the deadline.
    pub(crate) fn allows(&self, pause: Duration) -> bool {
        self.at
            .is_none_or(|at| Instant::now().checked_add(pause).is_some_and(|t| t < at))
    }

    /// `Ready(Ok)` once the deadline has passed, `Ready(Err(NoTimer))` if it cannot be timed here,
    /// `Pending` otherwise (never ready without a deadline).
    pub(crate) fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let Some(at) = self.at else {
            return Poll::Pending;
        };
        let timer = match &mut self.timer {
            Some(timer) => timer,
            None => match timer_until(at) {
                Some(timer) => self.timer.insert(Box::pin(timer)),
                None => return Poll::Ready(Err(Error::NoTimer)),
            },
        };
        timer.as_mut().poll(cx).map(Ok)
    }
}

/// A tokio timer that completes at `at`, or `None` where tokio cannot give one: no runtime on this
/// thread, or one built without its time driver. tokio panics then; the callers answer with an error
/// instead.
pub(crate) fn timer_until(at: Instant) -> Option<Sleep> {
    tokio::runtime::Handle::try_current().ok()?;
    // A runtime without its time driver: tokio's only signal is a panic (its hook prints the message).
    std::panic::catch_unwind(|| tokio::time::sleep_until(at)).ok()
}
