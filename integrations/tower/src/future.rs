//! The response future: the inner call's future and the lease it holds. When the inner future completes,
//! the classifier names the outcome and the lease is released with it (the RTT the limiter sees ends
//! here), and with the server's load report where the classifier reads one in the response; if the
//! future is dropped first, its [`Held`] lease is released as `Ignored`. Either way the slot comes back
//! exactly once. With a deadline ([`Builder::deadline`](crate::Builder::deadline)), one that
//! passes first drops the inner future and releases the lease as `Dropped` ([`Error::DeadlinePassed`]).
//!
//! [`Held`] is the core's `OwnedLeaseGuard` less its acquire: the balance acquires with its own generator
//! (one per `Balance`, which `&mut self` makes exclusive) rather than the thread's, which saves a
//! thread-local lookup per request.

use crate::classify::Classify;
use crate::deadline::Deadline;
use crate::error::Error;
use pin_project_lite::pin_project;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use tower::BoxError;
use weir::limit::ServerLoad;
use weir::rt::monotonic_now;
use weir::{HeapBalancer, Lease, Outcome};

/// A lease with its balancer: released with an outcome (and the server's load report, if its answer
/// carried one) by [`Held::complete`], or as `Ignored` when dropped: the one place a call's lease is
/// released, with or without retries.
pub(crate) struct Held {
    balancer: Arc<HeapBalancer>,
    lease: Option<Lease>,
}

impl Held {
    pub(crate) fn new(balancer: Arc<HeapBalancer>, lease: Lease) -> Self {
        Held {
            balancer,
            lease: Some(lease),
        }
    }

    pub(crate) fn balancer(&self) -> &Arc<HeapBalancer> {
        &self.balancer
    }

    /// Releases the lease, if it is still held, with `outcome` and the server's `load` report.
    pub(crate) fn complete(&mut self, outcome: Outcome, load: Option<ServerLoad>) {
        if let Some(lease) = self.lease.take() {
            // An error means the node was removed meanwhile: nothing to record.
            let _ = self
                .balancer
                .release_loaded(lease, outcome, monotonic_now(), load);
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.complete(Outcome::Ignored, None);
    }
}

pin_project! {
    /// The future of [`Balance::call`](crate::Balance): the inner service's response, after which its
    /// lease is released with the classified outcome. Dropping it releases the lease as `Ignored`;
    /// with a deadline ([`Builder::deadline`](crate::Builder::deadline)) that passes first, the inner
    /// future is dropped, the lease released as `Dropped` and the answer is [`Error::DeadlinePassed`].
    ///
    /// ```
    /// use tower::{Service, ServiceExt};
    /// use weir::Outcome;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// let mut balance = weir_tower::Builder::new(weir::Config::default())
    ///     .classify(weir_tower::ByResult)
    ///     .build_list([("a", svc)])
    ///     .unwrap();
    /// let call = balance.ready().await.unwrap().call(());
    /// assert_eq!(balance.balancer().stats().in_flight, 1);
    /// drop(call); // cancelled: the lease comes back as Ignored
    /// assert_eq!(balance.balancer().stats().released(Outcome::Ignored), 1);
    /// # }
    /// ```
    #[must_use = "futures do nothing unless polled; dropping this one releases its lease as Ignored"]
    pub struct ResponseFuture<F, C> {
        #[pin]
        inner: Option<F>,
        lease: Option<Held>,
        classify: C,
        deadline: Deadline,
        // Without an inner call: the error to answer with (a refusal, or `NotReady`).
        failed: Option<Error>,
    }
}

impl<F, C> ResponseFuture<F, C> {
    pub(crate) fn new(inner: F, lease: Held, classify: C, deadline: Deadline) -> Self {
        ResponseFuture {
            inner: Some(inner),
            lease: Some(lease),
            classify,
            deadline,
            failed: None,
        }
    }

    /// The future of a `call` that sends nothing: it fails with `error` (a refusal `poll_ready`
    /// answered for this call, or [`Error::NotReady`]).
    pub(crate) fn failed(error: Error, classify: C) -> Self {
        ResponseFuture {
            inner: None,
            lease: None,
            classify,
            deadline: Deadline::after(None),
            failed: Some(error),
        }
    }
}

impl<F, C, T, E> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
    C: Classify<T>,
{
    type Output = Result<T, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let Some(inner) = this.inner.as_mut().as_pin_mut() else {
            return Poll::Ready(Err(this.failed.take().unwrap_or(Error::NotReady)));
        };
        let (outcome, load, result) =
            match ready!(poll_attempt(inner, this.classify, this.deadline, cx)) {
                Attempt::Answered(answer, outcome, load) => {
                    (outcome, load, answer.map_err(Error::Inner))
                }
                Attempt::Abandoned(outcome, error) => {
                    // The call is abandoned: dropping its future cancels it beneath.
                    this.inner.set(None);
                    (outcome, None, Err(error))
                }
            };
        if let Some(lease) = this.lease.as_mut() {
            lease.complete(outcome, load);
        }
        Poll::Ready(result)
    }
}

/// How a call under a deadline ended: see [`poll_attempt`].
pub(crate) enum Attempt<T> {
    /// The call answered: its answer, the outcome the classifier gives it, and the load report the
    /// classifier reads in it (never one with an error).
    Answered(Result<T, BoxError>, Outcome, Option<ServerLoad>),
    /// The deadline passed first (`Dropped`, [`Error::DeadlinePassed`]), or cannot be timed here
    /// (`Ignored`, [`Error::NoTimer`]): the outcome to release the lease with, and the caller's error.
    /// The caller drops the call's future.
    Abandoned(Outcome, Error),
}

/// Polls a call under its deadline, the response futures' one rule (with or without retries): the call
/// answering decides, classified; while it is unanswered, the deadline, if any (a call that answers as
/// the deadline passes has answered).
pub(crate) fn poll_attempt<F, T, E, C>(
    attempt: Pin<&mut F>,
    classify: &C,
    deadline: &mut Deadline,
    cx: &mut Context<'_>,
) -> Poll<Attempt<T>>
where
    F: Future<Output = Result<T, E>>,
    E: Into<BoxError>,
    C: Classify<T>,
{
    Poll::Ready(match attempt.poll(cx) {
        Poll::Ready(Ok(response)) => {
            let outcome = classify.response(&response);
            let load = classify.load(&response);
            Attempt::Answered(Ok(response), outcome, load)
        }
        Poll::Ready(Err(error)) => {
            let error: BoxError = error.into();
            let outcome = classify.error(&*error);
            Attempt::Answered(Err(error), outcome, None)
        }
        Poll::Pending => match ready!(deadline.poll(cx)) {
            Ok(()) => Attempt::Abandoned(Outcome::TIMEOUT, Error::DeadlinePassed),
            Err(e) => Attempt::Abandoned(Outcome::Ignored, e),
        },
    })
}
