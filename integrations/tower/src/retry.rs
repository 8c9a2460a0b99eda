//! Retrying a failed request on another node, within a budget: [`Retry`], given to
//! [`Builder::retry`](crate::Builder::retry).
//!
//! A request whose attempt failed (the classifier's outcome is `Failure`, `Dropped` or `Throttled`:
//! a refused or reset connection, a 5xx, a 429, a timeout; never a success, another 4xx or an
//! `Ignored`) is sent again, on a node it has not tried (the core's
//! [`acquire_excluding`](weir::Balancer::acquire_excluding), which falls back to the ordinary acquire
//! when no other node has room), when all of these hold:
//!
//! - it may be sent twice: [`RetryRequest::clone_request`] gave a copy of it before its first try.
//!   Idempotency is the caller's decision. The default, [`Idempotent`], copies `http::Request`s whose
//!   method is idempotent (GET, HEAD, OPTIONS, PUT, DELETE, TRACE) and whose body is `Clone`; a closure
//!   `Fn(&Req) -> Option<Req>` decides for any other request. A POST is never retried by default;
//! - it has tries left: at most [`Retry::retries`] more (default [`DEFAULT_RETRIES`], 1: HAProxy's
//!   `retries 1` with `option redispatch`, nginx's `proxy_next_upstream_tries 2`, Caddy's `lb_retries 1`);
//! - the [`RetryBudget`] shared by every balance built from the builder (and its layer) admits it
//!   (default: 20 % of the requests plus 10 a second, over 10 s). A spent budget ends the request with
//!   its last attempt's answer or error, and counts the refusal in the budget's `denied`. The budget is
//!   asked once the retry has a lease on another node (after the pause), so that the retries it counts
//!   are the ones sent; a budget already spent is not paused for, and ends the request at once;
//! - a node has room: when none has (every other node is tried or full, and so is the one tried), the
//!   request ends with its last answer, and the budget is not charged;
//! - the pause before it, from a shared [`Backoff`] ([`DEFAULT_BACKOFF`]: fully jittered, from 25 ms up
//!   to 250 ms while failures go on; [`Retry::backoff`] with `None` retries at once), still ends before
//!   the call's deadline ([`Builder::deadline`](crate::Builder::deadline)), if it has one.
//!
//! Every attempt's lease is released with its own outcome: the failed attempt counts against its node,
//! the retry is a lease of its own. The deadline bounds the whole request: the wait for room before the
//! first try, the retries and the pauses.
//! The answer is the last attempt's: its response (a 500 too) or its error.
//!
//! # What retries need
//! - The request is copied before it is sent (the inner service consumes it), so a request that may be
//!   retried costs a copy whether or not it is retried, as with tower's `Retry`.
//! - The inner services are `Clone` (as tower's `Retry` asks of its service): the balance keeps a copy
//!   of each member's service for the retries, which are sent from the response future, away from the
//!   balance. Its table is behind a lock that only membership changes and retries take; a request that
//!   is not retried never touches it. A copy is asked to be ready before the retry is sent.
//! - A retry's pause is a tokio timer: polled where tokio has no time driver, a request that would
//!   pause ends with its last answer instead.
//! - A balance without retries ([`NoRetry`], the default) asks none of this: any request, any
//!   service, and no allocation per request.

use crate::classify::Classify;
use crate::deadline::{timer_until, Deadline};
use crate::error::Error;
use crate::future::{poll_attempt, Attempt, Held};
use futures_core::TryFuture;
use pin_project_lite::pin_project;
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{ready, Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};
use tower::{BoxError, Service};
use weir::backoff::{BackoffConfig, Jitter};
use weir::limit::ServerLoad;
use weir::rt::{monotonic_now, with_thread_rng};
use weir::{Backoff, HeapBalancer, Outcome, RetryBudget};

/// Extra tries per request unless [`Retry::retries`] says otherwise: one.
///
/// ```
/// assert_eq!(weir_tower::retry::DEFAULT_RETRIES, 1);
/// ```
pub const DEFAULT_RETRIES: u32 = 1;

/// The pause between tries unless [`Retry::backoff`] says otherwise (Envoy's retry backoff): 25 ms on
/// a first failure, doubling on each failure that follows up to 250 ms, halved after 10 successes in a
/// row (back to no pause below 25 ms); each pause is drawn uniformly below the interval (full jitter).
/// The interval is shared by every request of the balance, so pauses grow while a fleet keeps failing.
///
/// ```
/// let c = weir_tower::retry::DEFAULT_BACKOFF;
/// assert_eq!((c.initial_ns, c.max_ns), (25_000_000, 250_000_000));
/// assert!(c.validate().is_ok());
/// ```
pub const DEFAULT_BACKOFF: BackoffConfig = BackoffConfig {
    initial_ns: 25_000_000,
    max_ns: 250_000_000,
    up_multiplier: 2.0,
    down_multiplier: 0.5,
    down_threshold: 10,
    jitter: Jitter::Full,
};

/// How many of a request's tried nodes a retry avoids: the most recent ones. A request with more tries
/// than this may go back to a node it tried long before, as it may anyway when no other has room.
const TRIED: usize = 8;

/// Whether an attempt that ended with `outcome` may be retried: `Failure` (an error of the node, a
/// 5xx), `Dropped` (a timeout, 503, 504) and `Throttled` (a 429). Never `Success`, `ClientError` (the
/// request's own fault: it would fail anywhere) or `Ignored`. The core's
/// [`Outcome::is_retryable`], the one definition that C and Python share.
///
/// ```
/// use weir::Outcome;
/// use weir_tower::retry::is_retryable;
/// assert!(is_retryable(Outcome::Failure) && is_retryable(Outcome::Dropped) && is_retryable(Outcome::Throttled));
/// assert!(!is_retryable(Outcome::Success) && !is_retryable(Outcome::ClientError) && !is_retryable(Outcome::Ignored));
/// ```
pub fn is_retryable(outcome: Outcome) -> bool {
    outcome.is_retryable()
}

/// Whether an HTTP method is idempotent (RFC 9110, 9.2.2): GET, HEAD, OPTIONS, PUT, DELETE, TRACE.
///
/// ```
/// use weir_tower::retry::is_idempotent;
/// assert!(is_idempotent(&http::Method::PUT));
/// assert!(!is_idempotent(&http::Method::POST) && !is_idempotent(&http::Method::PATCH));
/// ```
pub fn is_idempotent(method: &http::Method) -> bool {
    use http::Method;
    [
        Method::GET,
        Method::HEAD,
        Method::OPTIONS,
        Method::PUT,
        Method::DELETE,
        Method::TRACE,
    ]
    .contains(method)
}

/// Which requests may be sent again, and how: a copy of the request to retry it with, or `None` when it
/// must not be sent twice (it is not idempotent, or cannot be copied). Asked once before each try that
/// could be followed by a retry. Implemented by [`Idempotent`] and by closures `Fn(&Req) -> Option<Req>`.
///
/// ```
/// use weir_tower::retry::RetryRequest;
/// // Requests numbered by the caller: the even ones are safe to repeat.
/// let even = |r: &u32| (r % 2 == 0).then_some(*r);
/// assert_eq!(even.clone_request(&4), Some(4));
/// assert_eq!(even.clone_request(&5), None);
/// ```
pub trait RetryRequest<Req> {
    /// A copy of `request` to send if its try fails, or `None` if it must not be sent again.
    fn clone_request(&self, request: &Req) -> Option<Req>;
}

impl<Req, F: Fn(&Req) -> Option<Req>> RetryRequest<Req> for F {
    fn clone_request(&self, request: &Req) -> Option<Req> {
        self(request)
    }
}

/// The default [`RetryRequest`]: `http::Request`s with an idempotent method ([`is_idempotent`]) are
/// copied (method, URI, headers, extensions and body), any other is not retried. The body must be
/// `Clone` (`Empty`, `Full`, `String`, ...); for a streamed body (hyper's `Incoming`), give
/// [`Retry::requests`] a closure that decides, or leave retries off.
///
/// ```
/// use weir_tower::retry::{Idempotent, RetryRequest};
/// let get = http::Request::get("/a").body(()).unwrap();
/// let post = http::Request::post("/a").body(()).unwrap();
/// assert_eq!(Idempotent.clone_request(&get).map(|r| r.uri().clone()), Some("/a".parse().unwrap()));
/// assert!(Idempotent.clone_request(&post).is_none());
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct Idempotent;

impl<B: Clone> RetryRequest<http::Request<B>> for Idempotent {
    fn clone_request(&self, request: &http::Request<B>) -> Option<http::Request<B>> {
        is_idempotent(request.method()).then(|| request.clone())
    }
}

/// A balance that never retries: the builder's default.
///
/// ```
/// use weir_tower::retry::{NoRetry, RetryMode};
/// assert_eq!(RetryMode::<()>::max_retries(&NoRetry), 0);
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct NoRetry;

/// Retries for a balance ([`Builder::retry`](crate::Builder::retry)); the module docs say when a
/// request is retried. Clones share the budget and the backoff, so every balance built from one
/// builder or layer draws on the same budget.
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use weir::overload::RetryBudgetConfig;
/// use weir::RetryBudget;
/// use weir_tower::retry::Retry;
///
/// let budget = Arc::new(RetryBudget::new(RetryBudgetConfig { ratio: 0.1, ..Default::default() }).unwrap());
/// let retry = Retry::new()
///     .retries(2)                    // at most two more tries per request
///     .budget(Arc::clone(&budget))   // 10 % of the requests plus 10 a second
///     .backoff(None);                // no pause between tries
/// assert_eq!(retry.max_retries(), 2);
/// # let _ = Duration::ZERO;
/// ```
#[derive(Clone)]
pub struct Retry<P = Idempotent> {
    requests: P,
    retries: u32,
    budget: Arc<RetryBudget>,
    backoff: Option<Arc<Backoff>>,
}

impl Retry {
    /// Retries with the defaults: [`Idempotent`] requests, [`DEFAULT_RETRIES`], a new budget with the
    /// core's default [`RetryBudgetConfig`](weir::overload::RetryBudgetConfig), a new backoff with
    /// [`DEFAULT_BACKOFF`].
    ///
    /// ```
    /// let retry = weir_tower::retry::Retry::new();
    /// assert_eq!(retry.max_retries(), 1);
    /// assert_eq!(retry.retry_budget().config().ratio, 0.2);
    /// ```
    pub fn new() -> Self {
        // Both configurations are the checked defaults: neither can be refused.
        let budget = RetryBudget::new(Default::default())
            .unwrap_or_else(|e| unreachable!("the default retry budget is valid: {e}"));
        let backoff = Backoff::new(DEFAULT_BACKOFF)
            .unwrap_or_else(|e| unreachable!("DEFAULT_BACKOFF is valid: {e}"));
        Retry {
            requests: Idempotent,
            retries: DEFAULT_RETRIES,
            budget: Arc::new(budget),
            backoff: Some(Arc::new(backoff)),
        }
    }
}

impl Default for Retry {
    fn default() -> Self {
        Retry::new()
    }
}

impl<P> Retry<P> {
    /// At most `retries` more tries per request (0 turns retrying off while keeping the budget's count
    /// of requests).
    ///
    /// ```
    /// assert_eq!(weir_tower::retry::Retry::new().retries(3).max_retries(), 3);
    /// ```
    pub fn retries(mut self, retries: u32) -> Self {
        self.retries = retries;
        self
    }

    /// The budget that bounds the retries of every request together: build it with the core's
    /// `RetryBudget::new`, which says what is wrong with a configuration, and share it with other
    /// balances or clients to bound them together.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let budget = Arc::new(weir::RetryBudget::new(Default::default()).unwrap());
    /// let retry = weir_tower::retry::Retry::new().budget(Arc::clone(&budget));
    /// assert!(Arc::ptr_eq(retry.retry_budget(), &budget));
    /// ```
    pub fn budget(mut self, budget: Arc<RetryBudget>) -> Self {
        self.budget = budget;
        self
    }

    /// The backoff that gives the pause before each retry (build it with the core's `Backoff::new`),
    /// or `None` to retry at once.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use weir::backoff::BackoffConfig;
    /// use std::time::Duration;
    /// let quick = BackoffConfig { max_ns: 20_000_000, ..weir_tower::retry::DEFAULT_BACKOFF }
    ///     .initial(Duration::from_millis(2));
    /// let retry = weir_tower::retry::Retry::new().backoff(Some(Arc::new(weir::Backoff::new(quick).unwrap())));
    /// assert_eq!(retry.retry_backoff().unwrap().config().initial_ns, 2_000_000);
    /// assert!(weir_tower::retry::Retry::new().backoff(None).retry_backoff().is_none());
    /// ```
    pub fn backoff(mut self, backoff: Option<Arc<Backoff>>) -> Self {
        self.backoff = backoff;
        self
    }

    /// Which requests may be retried, and how they are copied: [`Idempotent`] by default, or a closure
    /// `Fn(&Req) -> Option<Req>` (see [`RetryRequest`]).
    ///
    /// ```
    /// // Every request of this client is idempotent (the caller knows its API).
    /// let retry = weir_tower::retry::Retry::new().requests(|r: &u64| Some(*r));
    /// # drop(retry);
    /// ```
    pub fn requests<P2>(self, requests: P2) -> Retry<P2> {
        Retry {
            requests,
            retries: self.retries,
            budget: self.budget,
            backoff: self.backoff,
        }
    }

    /// The most retries per request.
    ///
    /// ```
    /// assert_eq!(weir_tower::retry::Retry::new().max_retries(), 1);
    /// ```
    pub fn max_retries(&self) -> u32 {
        self.retries
    }

    /// The budget: its `stats(now)` (requests, retries admitted and refused), its `write_metrics`.
    ///
    /// ```
    /// let retry = weir_tower::retry::Retry::new();
    /// assert_eq!(retry.retry_budget().stats(0).retries, 0);
    /// ```
    pub fn retry_budget(&self) -> &Arc<RetryBudget> {
        &self.budget
    }

    /// The backoff, if the retries pause.
    ///
    /// ```
    /// assert!(weir_tower::retry::Retry::new().retry_backoff().is_some());
    /// ```
    pub fn retry_backoff(&self) -> Option<&Arc<Backoff>> {
        self.backoff.as_ref()
    }
}

impl<P> fmt::Debug for Retry<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("retries", &self.retries)
            .field("budget", &self.budget.config())
            .field("backoff", &self.backoff.as_ref().map(|b| b.config()))
            .finish_non_exhaustive()
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::NoRetry {}
    impl<P> Sealed for super::Retry<P> {}
}

/// What a balance does about retries: [`NoRetry`] (the default) or [`Retry`], the builder's `R`
/// parameter. Sealed: implemented by those two only. `S` is the inner service: retries need it `Clone`.
///
/// ```
/// use weir_tower::retry::{Retry, RetryMode};
/// assert_eq!(RetryMode::<()>::max_retries(&Retry::new()), 1);
/// assert!(RetryMode::<()>::retry_budget(&weir_tower::retry::NoRetry).is_none());
/// ```
pub trait RetryMode<S>: sealed::Sealed {
    /// The most retries per request (0 without retries).
    fn max_retries(&self) -> u32;
    /// The retry budget, if retries are on.
    fn retry_budget(&self) -> Option<&Arc<RetryBudget>>;
    /// The backoff between tries, if retries are on and pause.
    fn retry_backoff(&self) -> Option<&Arc<Backoff>>;
    /// How a member's service is copied for the retries: `Clone::clone` where retries are on.
    #[doc(hidden)]
    fn clone_service() -> Option<fn(&S) -> S>;
}

impl<S> RetryMode<S> for NoRetry {
    fn max_retries(&self) -> u32 {
        0
    }
    fn retry_budget(&self) -> Option<&Arc<RetryBudget>> {
        None
    }
    fn retry_backoff(&self) -> Option<&Arc<Backoff>> {
        None
    }
    fn clone_service() -> Option<fn(&S) -> S> {
        None
    }
}

impl<S: Clone, P> RetryMode<S> for Retry<P> {
    fn max_retries(&self) -> u32 {
        self.retries
    }
    fn retry_budget(&self) -> Option<&Arc<RetryBudget>> {
        Some(&self.budget)
    }
    fn retry_backoff(&self) -> Option<&Arc<Backoff>> {
        self.backoff.as_ref()
    }
    fn clone_service() -> Option<fn(&S) -> S> {
        Some(S::clone)
    }
}

impl<P> Retry<P> {
    /// The copy of the request for a retry, if one may follow.
    pub(crate) fn spare<Req>(&self, request: &Req) -> Option<Req>
    where
        P: RetryRequest<Req>,
    {
        if self.retries == 0 {
            return None;
        }
        self.requests.clone_request(request)
    }

    pub(crate) fn requests_policy(&self) -> &P {
        &self.requests
    }
}

/// What a balance with retries shares with its response futures: a copy of each member's service,
/// the budget, the backoff.
pub(crate) struct Shared<S> {
    services: Mutex<HashMap<u64, S>>,
    clone: fn(&S) -> S,
    pub(crate) budget: Arc<RetryBudget>,
    backoff: Option<Arc<Backoff>>,
    pub(crate) retries: u32,
    /// The key of the thread's generator that retries draw from: not the balance's own seed, whose
    /// generator on the first thread would repeat the balance's draws.
    seed: u64,
}

impl<S> Shared<S> {
    /// The retries' share of a balance whose retry mode is `mode`, if it retries.
    pub(crate) fn of<R: RetryMode<S>>(mode: &R, balancer_seed: u64) -> Option<Self> {
        let clone = R::clone_service()?;
        Some(Shared {
            services: Mutex::new(HashMap::new()),
            clone,
            budget: Arc::clone(mode.retry_budget()?),
            backoff: mode.retry_backoff().cloned(),
            retries: mode.max_retries(),
            seed: !balancer_seed,
        })
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, S>> {
        // A panic while the lock is held can only come from a service's `clone` or drop; the map is
        // consistent between operations either way.
        self.services.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Keeps a copy of a new member's service.
    pub(crate) fn insert(&self, id: u64, service: &S) {
        let copy = (self.clone)(service);
        let old = self.lock().insert(id, copy);
        drop(old);
    }

    /// Forgets a member's service.
    pub(crate) fn remove(&self, id: u64) {
        let old = self.lock().remove(&id);
        drop(old);
    }

    /// A copy of the service of node `id`, if it is a member.
    fn service(&self, id: u64) -> Option<S> {
        self.lock().get(&id).map(self.clone)
    }

    /// Tells the backoff of a success (only while it is backing off: one load otherwise).
    fn succeeded(&self) {
        if let Some(b) = self.backoff.as_deref() {
            if b.interval_ns() != 0 {
                with_thread_rng(self.seed, |rng| b.on_success(rng));
            }
        }
    }

    /// Tells the backoff of a failure that may be retried; the pause before the retry.
    fn pause(&self) -> Duration {
        match self.backoff.as_deref() {
            Some(b) => Duration::from_nanos(with_thread_rng(self.seed, |rng| b.on_failure(rng)).ns),
            None => Duration::ZERO,
        }
    }
}

/// The ids of the nodes a request tried, the most recent [`TRIED`].
#[derive(Clone, Copy)]
struct Tried {
    ids: [u64; TRIED],
    count: usize,
}

impl Tried {
    fn new(first: u64) -> Self {
        Tried {
            ids: [first; TRIED],
            count: 1,
        }
    }

    fn push(&mut self, id: u64) {
        if let Some(slot) = self.ids.get_mut(self.count % TRIED) {
            *slot = id;
        }
        self.count = self.count.saturating_add(1);
    }

    fn as_slice(&self) -> &[u64] {
        self.ids.get(..self.count.min(TRIED)).unwrap_or(&[])
    }
}

/// Where a [`RetryFuture`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    /// An attempt is in flight under its lease.
    Calling,
    /// An attempt failed and may be retried: pausing, then acquiring a lease elsewhere, which the budget
    /// admits or refuses.
    Pausing,
    /// The retry's lease is held: waiting for the node's service to be ready.
    Readying,
    /// Answered (or `call` had no lease).
    Done,
}

pin_project! {
    /// The future of a retrying balance's `call` ([`Builder::retry`](crate::Builder::retry)): its
    /// attempts, each under its own lease, until one answers in a way that is not retried, the tries or
    /// the budget run out, or the deadline passes. Dropping it releases the lease it holds as `Ignored`.
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use tower::{Service, ServiceExt};
    /// use weir::Outcome;
    /// use weir_tower::retry::Retry;
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let backend = |status: u16| tower::service_fn(move |_: http::Request<()>| async move {
    ///     Ok::<_, Infallible>(http::Response::builder().status(status).body(()).unwrap())
    /// });
    /// let mut balance = weir_tower::Builder::new(weir::Config::default())
    ///     .retry(Retry::new().backoff(None))
    ///     .build_list([("fails", backend(500)), ("works", backend(200))])
    ///     .unwrap();
    /// balance.set_lame_duck(&"works", true); // the first try can only go to "fails"...
    /// let call = balance.ready().await.unwrap().call(http::Request::new(()));
    /// balance.set_lame_duck(&"works", false); // ...and its retry to "works"
    /// assert_eq!(call.await.unwrap().status(), 200);
    /// let stats = balance.balancer().stats();
    /// assert_eq!((stats.released(Outcome::Failure), stats.released(Outcome::Success)), (1, 1));
    /// # }
    /// ```
    #[must_use = "futures do nothing unless polled; dropping this one releases its lease as Ignored"]
    //
    // `F` is `S`'s future for `Req`, a parameter rather than `S::Future`: the compiler cannot prove
    // the auto traits (`Send`) of a projection through `Service<Req>` where `Req` holds a lifetime
    // (a `Request<Empty<&'static [u8]>>` in a spawned task), but it can for `F`'s own.
    pub struct RetryFuture<S, Req, F, C, P>
    where
        F: TryFuture,
    {
        #[pin]
        attempt: Option<F>,
        lease: Option<Held>,
        deadline: Deadline,
        // Boxed, as the deadline's timer, so that the future is `Unpin` where the inner one is.
        pause: Option<Pin<Box<Sleep>>>,
        step: Step,
        // The copy of the service a retry goes to, until it is sent.
        service: Option<S>,
        // The copy of the request for the next retry, if one may follow.
        spare: Option<Req>,
        // The failed attempt's answer, kept until a retry is sent: the request's answer if none is.
        last: Option<Result<F::Ok, BoxError>>,
        retries_left: u32,
        tried: Tried,
        shared: Option<Arc<Shared<S>>>,
        balancer: Option<Arc<HeapBalancer>>,
        requests: P,
        classify: C,
        // Without an attempt: the error to answer with (a refusal, or `NotReady`).
        failed: Option<Error>,
    }
}

impl<S, Req, F: TryFuture, C, P> RetryFuture<S, Req, F, C, P> {
    #[allow(
        clippy::too_many_arguments,
        reason = "one constructor, called from one place"
    )]
    pub(crate) fn new(
        attempt: F,
        lease: Held,
        node: u64,
        spare: Option<Req>,
        shared: Arc<Shared<S>>,
        requests: P,
        classify: C,
        deadline: Deadline,
    ) -> Self {
        RetryFuture {
            attempt: Some(attempt),
            balancer: Some(Arc::clone(lease.balancer())),
            lease: Some(lease),
            deadline,
            pause: None,
            step: Step::Calling,
            service: None,
            spare,
            last: None,
            retries_left: shared.retries,
            tried: Tried::new(node),
            shared: Some(shared),
            requests,
            classify,
            failed: None,
        }
    }

    /// The future of a `call` that sends nothing: it fails with `error` (a refusal `poll_ready`
    /// answered for this call, or [`Error::NotReady`]).
    pub(crate) fn failed(error: Error, requests: P, classify: C) -> Self {
        RetryFuture {
            attempt: None,
            lease: None,
            deadline: Deadline::after(None),
            pause: None,
            step: Step::Done,
            service: None,
            spare: None,
            last: None,
            retries_left: 0,
            tried: Tried::new(0),
            shared: None,
            balancer: None,
            requests,
            classify,
            failed: Some(error),
        }
    }
}

impl<S, Req, F, C, P> Future for RetryFuture<S, Req, F, C, P>
where
    S: Service<Req, Future = F, Response = F::Ok>,
    F: TryFuture + Future<Output = Result<F::Ok, F::Error>>,
    F::Error: Into<BoxError>,
    C: Classify<F::Ok>,
    P: RetryRequest<Req>,
{
    type Output = Result<F::Ok, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match *this.step {
                Step::Done => {
                    return Poll::Ready(Err(this.failed.take().unwrap_or(Error::NotReady)))
                }
                Step::Calling => {
                    let Some(attempt) = this.attempt.as_mut().as_pin_mut() else {
                        *this.step = Step::Done;
                        return Poll::Ready(Err(Error::NotReady));
                    };
                    let (answer, outcome, load) =
                        match ready!(poll_attempt(attempt, this.classify, this.deadline, cx)) {
                            Attempt::Answered(answer, outcome, load) => (answer, outcome, load),
                            Attempt::Abandoned(outcome, error) => {
                                // The attempt is abandoned: dropping its future cancels it beneath.
                                this.attempt.set(None);
                                release(this.lease, outcome, None);
                                *this.step = Step::Done;
                                return Poll::Ready(Err(error));
                            }
                        };
                    this.attempt.set(None);
                    release(this.lease, outcome, load);
                    let Some(shared) = this.shared.as_deref() else {
                        *this.step = Step::Done;
                        return Poll::Ready(answer.map_err(Error::Inner));
                    };
                    if outcome == Outcome::Success {
                        shared.succeeded();
                    }
                    let may_retry =
                        is_retryable(outcome) && *this.retries_left > 0 && this.spare.is_some();
                    if !may_retry {
                        *this.step = Step::Done;
                        return Poll::Ready(answer.map_err(Error::Inner));
                    }
                    // The pause is the backoff's answer to this failure; the retry goes ahead if it
                    // ends before the deadline. A budget already spent is not paused for: the lease is
                    // asked for at once, and the budget refuses the retry there (or admits it, if the
                    // window moved on meanwhile), so that it is still asked only with a node to go to.
                    let pause = if shared.budget.stats(monotonic_now()).available == 0 {
                        Duration::ZERO
                    } else {
                        shared.pause()
                    };
                    if !this.deadline.allows(pause) {
                        *this.step = Step::Done;
                        return Poll::Ready(answer.map_err(Error::Inner));
                    }
                    if !pause.is_zero() {
                        match Instant::now().checked_add(pause).and_then(timer_until) {
                            Some(timer) => *this.pause = Some(Box::pin(timer)),
                            // No timer to pause with: the request ends with its answer.
                            None => {
                                *this.step = Step::Done;
                                return Poll::Ready(answer.map_err(Error::Inner));
                            }
                        }
                    }
                    *this.last = Some(answer);
                    *this.step = Step::Pausing;
                }
                Step::Pausing => {
                    if let Some(pause) = this.pause.as_mut() {
                        if pause.as_mut().poll(cx).is_pending() {
                            // The pause ends before the deadline; a deadline is still a deadline.
                            return match this.deadline.poll(cx) {
                                Poll::Pending => Poll::Pending,
                                Poll::Ready(r) => {
                                    *this.step = Step::Done;
                                    *this.last = None;
                                    Poll::Ready(Err(r.err().unwrap_or(Error::DeadlinePassed)))
                                }
                            };
                        }
                        *this.pause = None;
                    }
                    let (Some(shared), Some(balancer)) =
                        (this.shared.as_deref(), this.balancer.as_ref())
                    else {
                        return Poll::Ready(finish(this.step, this.last));
                    };
                    // Another node than those tried, while one has room; uncounted, because a refusal
                    // here is not the caller's answer (the last attempt's is).
                    let got = with_thread_rng(shared.seed, |rng| {
                        balancer.acquire_excluding_uncounted(
                            monotonic_now(),
                            rng,
                            this.tried.as_slice(),
                        )
                    });
                    let Ok(lease) = got else {
                        return Poll::Ready(finish(this.step, this.last));
                    };
                    let id = lease.node_id();
                    let held = Held::new(Arc::clone(balancer), lease);
                    // The budget admits the retry once it has a node to go to, so that the retries
                    // it counts are the ones sent. Refused (spent, or by a caller that raced for its
                    // last retry), the lease goes back unused (`Ignored`, with `held`).
                    if shared.budget.try_retry(monotonic_now()).is_err() {
                        drop(held);
                        return Poll::Ready(finish(this.step, this.last));
                    }
                    // A member without a service (added on the balancer directly, or leaving): the
                    // lease goes back as `Ignored` with `held`.
                    let Some(service) = shared.service(id) else {
                        drop(held);
                        return Poll::Ready(finish(this.step, this.last));
                    };
                    this.tried.push(id);
                    *this.lease = Some(held);
                    *this.service = Some(service);
                    *this.step = Step::Readying;
                }
                Step::Readying => {
                    let ready = match this.service.as_mut() {
                        Some(service) => service.poll_ready(cx),
                        None => Poll::Ready(Ok(())),
                    };
                    match ready {
                        Poll::Pending => {
                            return match this.deadline.poll(cx) {
                                Poll::Pending => Poll::Pending,
                                // Nothing was sent: not the node's timeout.
                                Poll::Ready(r) => {
                                    release(this.lease, Outcome::Ignored, None);
                                    *this.step = Step::Done;
                                    *this.last = None;
                                    Poll::Ready(Err(r.err().unwrap_or(Error::DeadlinePassed)))
                                }
                            };
                        }
                        Poll::Ready(Err(_)) => {
                            // The copy failed before anything was sent: the node is not blamed here
                            // (the balance evicts a failed service at its own next poll of it).
                            release(this.lease, Outcome::Ignored, None);
                            *this.service = None;
                            return Poll::Ready(finish(this.step, this.last));
                        }
                        Poll::Ready(Ok(())) => {}
                    }
                    let (Some(mut service), Some(request)) =
                        (this.service.take(), this.spare.take())
                    else {
                        release(this.lease, Outcome::Ignored, None);
                        return Poll::Ready(finish(this.step, this.last));
                    };
                    *this.retries_left -= 1;
                    if *this.retries_left > 0 {
                        *this.spare = this.requests.clone_request(&request);
                    }
                    this.attempt.set(Some(service.call(request)));
                    *this.last = None;
                    *this.step = Step::Calling;
                }
            }
        }
    }
}

/// Releases the lease held, if any, with `outcome` and the server's `load` report.
fn release(lease: &mut Option<Held>, outcome: Outcome, load: Option<ServerLoad>) {
    if let Some(mut held) = lease.take() {
        held.complete(outcome, load);
    }
}

/// The request's answer: the last attempt's.
fn finish<T>(step: &mut Step, last: &mut Option<Result<T, BoxError>>) -> Result<T, Error> {
    *step = Step::Done;
    match last.take() {
        Some(answer) => answer.map_err(Error::Inner),
        None => Err(Error::NotReady),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tried_keeps_the_most_recent_ids() {
        let mut t = Tried::new(1);
        assert_eq!(t.as_slice(), [1]);
        t.push(2);
        assert_eq!(t.as_slice(), [1, 2]);
        for id in 3..=10 {
            t.push(id);
        }
        let mut kept = t.as_slice().to_vec();
        kept.sort_unstable();
        assert_eq!(kept, [3, 4, 5, 6, 7, 8, 9, 10]);
    }

    #[test]
    fn the_default_backoff_starts_small() {
        let b = Backoff::new(DEFAULT_BACKOFF).unwrap();
        let mut rng = weir::Rng::with_seed(1);
        let first = b.on_failure(&mut rng).ns;
        assert!(first < 25_000_000, "{first}");
        for _ in 0..20 {
            assert!(b.on_failure(&mut rng).ns < 250_000_000);
        }
    }
}
