//! Building a [`Balance`]: the [`Builder`] (the core's `Config`, the slot capacity, the wait for room,
//! the classifier, each call's deadline, the retries), the [`BalanceLayer`] that builds one per `Discover` in a `ServiceBuilder` stack, and
//! [`Fixed`], the discovery of a fixed list.

use crate::balance::Balance;
use crate::classify::HttpStatus;
use crate::error::Error;
use crate::retry::{NoRetry, Retry, RetryMode};
use futures_core::Stream;
use std::convert::Infallible;
use std::fmt;
use std::hash::Hash;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::discover::{Change, Discover};
use tower::{BoxError, Layer};
use weir::{Config, HeapBalancer};

/// The weir balancer's slot capacity unless [`Builder::capacity`] says otherwise: room for 256 members
/// (a removed member's slot is reused once its calls in flight have finished).
///
/// ```
/// assert_eq!(weir_tower::DEFAULT_CAPACITY, 256);
/// ```
pub const DEFAULT_CAPACITY: usize = 256;

/// How long `poll_ready` waits for room unless [`Builder::wait`] says otherwise.
///
/// ```
/// assert_eq!(weir_tower::DEFAULT_WAIT, std::time::Duration::from_millis(100));
/// ```
pub const DEFAULT_WAIT: Duration = Duration::from_millis(100);

/// Builds a [`Balance`] from the core's [`Config`].
///
/// ```
/// use std::time::Duration;
/// use weir_tower::{Builder, GrpcStatus};
///
/// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(http::Response::new(())) });
/// let balance = Builder::new(weir::Config::default())
///     .capacity(64)                       // weir slots: members plus those still draining
///     .wait(Duration::from_millis(20))    // wait up to 20 ms for room, then Refused::Timeout
///     .classify(GrpcStatus)               // the default is HttpStatus
///     .build_list([("a", svc.clone()), ("b", svc)])
///     .unwrap();
/// assert_eq!(balance.balancer().stats().active_nodes, 2);
/// ```
///
/// `C` is the classifier, `R` the retries: [`NoRetry`] until [`Builder::retry`] turns them on.
#[derive(Clone, Debug)]
pub struct Builder<C = HttpStatus, R = NoRetry> {
    config: Config,
    capacity: usize,
    wait: Duration,
    classify: C,
    deadline: Option<Duration>,
    retry: R,
}

impl Builder {
    /// A builder with `config`, [`DEFAULT_CAPACITY`], [`DEFAULT_WAIT`] and the [`HttpStatus`]
    /// classifier.
    pub fn new(config: Config) -> Self {
        Builder {
            config,
            capacity: DEFAULT_CAPACITY,
            wait: DEFAULT_WAIT,
            classify: HttpStatus,
            deadline: None,
            retry: NoRetry,
        }
    }
}

impl<C, R> Builder<C, R> {
    /// The weir balancer's slot count (1 to 65,536): members at once, plus removed members whose calls
    /// are still in flight. [`Builder::build_list`] raises it to the list's length if that is more.
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity;
        self
    }

    /// How long `poll_ready` waits for room when every node is at its limit (or when no node is in
    /// rotation only because their services are not ready) before it gives up: it is ready then, and
    /// the call fails with [`Refused::Timeout`](crate::Refused::Timeout), sending nothing. Zero gives
    /// up at once: [`Refused::AllBusy`](crate::Refused::AllBusy). With a [`deadline`](Self::deadline),
    /// the wait counts against it and ends at it if that comes first. Waiting uses a tokio timer: it needs a tokio
    /// runtime with its time driver.
    pub fn wait(mut self, wait: Duration) -> Self {
        self.wait = wait;
        self
    }

    /// The classifier that turns responses and errors into outcomes.
    pub fn classify<C2>(self, classify: C2) -> Builder<C2, R> {
        Builder {
            config: self.config,
            capacity: self.capacity,
            wait: self.wait,
            classify,
            deadline: self.deadline,
            retry: self.retry,
        }
    }

    /// Each request's deadline, covering the whole request: from the moment `poll_ready` begins
    /// waiting for room for it (from `call` if it found room at once) to its answer, every attempt and
    /// the pauses between retries included. The wait for room ([`Builder::wait`]) ends at the deadline
    /// if that comes first ([`Refused::Timeout`](crate::Refused::Timeout)); a request that waited 300 ms
    /// under a deadline of 1 s has 700 ms left for its call. A call still unanswered when it passes is
    /// dropped, its lease released as `Dropped` (`Outcome::TIMEOUT`: a timeout counts against the
    /// node), and the caller gets [`Error::DeadlinePassed`]. A caller that drops the response future
    /// first (its own `tokio::time::timeout`, a `select!`) cancels instead: `Ignored`, as ever. So put
    /// the deadline here rather than in a timeout around the balance, which weir cannot tell from a
    /// cancellation. The timer is tokio's: a call with a deadline is polled on a tokio runtime with its
    /// time driver (elsewhere it fails with [`Error::NoTimer`]). No deadline by default.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tower::{Service, ServiceExt};
    /// use weir::Outcome;
    /// use weir_tower::{Builder, ByResult, Error};
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let stuck = tower::service_fn(|()| std::future::pending::<Result<(), std::convert::Infallible>>());
    /// let mut balance = Builder::new(weir::Config::default())
    ///     .classify(ByResult)
    ///     .deadline(Duration::from_millis(20))
    ///     .build_list([("stuck", stuck)])
    ///     .unwrap();
    /// let answer = balance.ready().await.unwrap().call(()).await;
    /// assert!(matches!(answer, Err(Error::DeadlinePassed)));
    /// assert_eq!(balance.balancer().stats().released(Outcome::Dropped), 1);
    /// # }
    /// ```
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Turns retries on: a request whose attempt failed is sent again, on a node it has not tried,
    /// within `retry`'s budget (see [`retry`](crate::retry) for the rules). The inner services must
    /// then be `Clone`, and the requests copyable by `retry`'s [`RetryRequest`](crate::retry::RetryRequest)
    /// (by default `http::Request`s with an idempotent method and a `Clone` body).
    ///
    /// ```
    /// use std::time::Duration;
    /// use weir_tower::{retry::Retry, Builder};
    /// # let svc = tower::service_fn(|_: http::Request<()>| async { Ok::<_, std::convert::Infallible>(http::Response::new(())) });
    /// let balance = Builder::new(weir::Config::default())
    ///     .deadline(Duration::from_secs(2))
    ///     .retry(Retry::new()) // idempotent requests, one more try, 20 % + 10/s
    ///     .build_list([("a", svc.clone()), ("b", svc)])
    ///     .unwrap();
    /// assert!(balance.retry_budget().is_some());
    /// ```
    pub fn retry<P>(self, retry: Retry<P>) -> Builder<C, Retry<P>> {
        Builder {
            config: self.config,
            capacity: self.capacity,
            wait: self.wait,
            classify: self.classify,
            deadline: self.deadline,
            retry,
        }
    }

    /// A balance fed by `discover`.
    ///
    /// ```
    /// use std::convert::Infallible;
    /// use tower::discover::ServiceList;
    /// use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, Infallible>(()) });
    /// // tower's ServiceList: keys are the positions in the list.
    /// let balance = Builder::new(weir::Config::default())
    ///     .classify(ByResult)
    ///     .build(ServiceList::new::<()>(vec![svc.clone(), svc]))
    ///     .unwrap();
    /// assert_eq!(balance.balancer().stats().active_nodes, 0); // discovered at the first poll_ready
    /// ```
    pub fn build<D>(self, discover: D) -> Result<Balance<D, C, R>, Error>
    where
        D: Discover + Unpin,
        D::Key: Hash + Eq + Clone,
        D::Error: Into<BoxError>,
        R: RetryMode<D::Service>,
    {
        let balancer =
            HeapBalancer::with_capacity(self.capacity, self.config).map_err(Error::Config)?;
        Ok(Balance::from_parts(
            discover,
            balancer,
            self.classify,
            self.wait,
            self.deadline,
            self.retry,
        ))
    }

    /// A balance over a fixed list of keyed services, all members at once. A key listed twice keeps
    /// its last service.
    pub fn build_list<K, S, I>(mut self, services: I) -> Result<Balance<Fixed<K, S>, C, R>, Error>
    where
        I: IntoIterator<Item = (K, S)>,
        K: Hash + Eq + Clone,
        R: RetryMode<S>,
    {
        let services: Vec<(K, S)> = services.into_iter().collect();
        self.capacity = self.capacity.max(services.len());
        let mut balance = self.build(Fixed(PhantomData))?;
        for (key, service) in services {
            balance.insert(key, service)?;
        }
        Ok(balance)
    }

    /// A layer that builds a balance over each `Discover` it wraps. The configuration is checked here,
    /// once.
    ///
    /// ```
    /// use tower::discover::ServiceList;
    /// use tower::ServiceBuilder;
    /// use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// let layer = Builder::new(weir::Config::default()).classify(ByResult).layer().unwrap();
    /// let balance = ServiceBuilder::new().layer(layer).service(ServiceList::new::<()>(vec![svc]));
    /// # drop(balance);
    /// assert!(Builder::new(weir::Config::default()).capacity(0).layer().is_err());
    /// ```
    pub fn layer(self) -> Result<BalanceLayer<C, R>, Error> {
        HeapBalancer::with_capacity(self.capacity, self.config).map_err(Error::Config)?;
        Ok(BalanceLayer { builder: self })
    }
}

/// A `tower::Layer` that turns a `Discover` into a [`Balance`] (from [`Builder::layer`]).
///
/// Every balance it builds shares the builder's retry budget and backoff, if it retries.
#[derive(Clone, Debug)]
pub struct BalanceLayer<C = HttpStatus, R = NoRetry> {
    builder: Builder<C, R>,
}

impl BalanceLayer {
    /// A layer with `config` and the builder's defaults.
    ///
    /// ```
    /// let layer = weir_tower::BalanceLayer::new(weir::Config::default()).unwrap();
    /// # drop(layer);
    /// let bad = weir::Config { max_waiters: u32::MAX, ..weir::Config::default() };
    /// assert!(weir_tower::BalanceLayer::new(bad).is_err());
    /// ```
    pub fn new(config: Config) -> Result<Self, Error> {
        Builder::new(config).layer()
    }
}

impl<D, C, R> Layer<D> for BalanceLayer<C, R>
where
    D: Discover + Unpin,
    D::Key: Hash + Eq + Clone,
    D::Error: Into<BoxError>,
    C: Clone,
    R: RetryMode<D::Service> + Clone,
{
    type Service = Balance<D, C, R>;

    fn layer(&self, discover: D) -> Balance<D, C, R> {
        let b = &self.builder;
        // `Builder::layer` built a balancer from this very capacity and configuration: it cannot fail.
        let balancer = HeapBalancer::with_capacity(b.capacity, b.config)
            .unwrap_or_else(|e| unreachable!("checked by Builder::layer: {e}"));
        Balance::from_parts(
            discover,
            balancer,
            b.classify.clone(),
            b.wait,
            b.deadline,
            b.retry.clone(),
        )
    }
}

/// The discovery of [`Builder::build_list`]: its services are members from the start, and it reports no
/// change.
///
/// ```
/// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
/// let balance: weir_tower::Balance<weir_tower::Fixed<u8, _>, _> =
///     weir_tower::Builder::new(weir::Config::default()).build_list([(1u8, svc)]).unwrap();
/// # drop(balance);
/// ```
pub struct Fixed<K, S>(PhantomData<fn() -> (K, S)>);

impl<K, S> Stream for Fixed<K, S> {
    type Item = Result<Change<K, S>, Infallible>;

    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Poll::Ready(None)
    }
}

impl<K, S> fmt::Debug for Fixed<K, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Fixed")
    }
}
