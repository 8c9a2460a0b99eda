//! The tower baseline: tower 0.5's power-of-two-choices `Balance` over `n` always-ready services, with
//! either `PeakEwma` or `PendingRequests` load, driven without a runtime (a no-op waker: every service
//! is always ready, so nothing ever waits).
//!
//! One pair is what a caller does per request: `poll_ready` (tower draws two services and compares their
//! loads), `call`, and later the completion of the response future, which drops the load handle (for
//! `PeakEwma` that records the RTT; for `PendingRequests` it lowers the count). As in weir's workload, a
//! ring of [`OUTSTANDING`] response futures stays in flight, so each pair completes the oldest one.
//! Tower measures latency with its own clock (`tokio::time::Instant::now`, the system clock without a
//! runtime) and takes no outcomes; that is its design, so its pair includes those clock reads.
//!
//! Included as a module by `hot_path.rs` and `pairs.rs`: tower is a dev-dependency of the benchmarks only.

use std::convert::Infallible;
use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tower::balance::p2c::Balance;
use tower::discover::ServiceList;
use tower::load::{CompleteOnResponse, PeakEwma, PendingRequests};
use tower::Service;
use weir_benches::{Workload, OUTSTANDING};

/// Peak-EWMA's RTT assumed before the first response, and its decay: linkerd's defaults.
const DEFAULT_RTT: Duration = Duration::from_millis(30);
const DECAY_NS: f64 = 10e9;

/// A backend that is always ready and answers at once.
#[derive(Clone, Copy, Debug)]
pub struct Backend;

impl Service<()> for Backend {
    type Response = ();
    type Error = Infallible;
    type Future = Ready<Result<(), Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _: ()) -> Self::Future {
        ready(Ok(()))
    }
}

/// tower's balancer over a fixed list of services.
pub type TowerBalance<S> = Balance<ServiceList<Vec<S>>, ()>;

/// A tower balancer under the pair workload.
pub struct TowerLoad<S>
where
    S: Service<()>,
    TowerBalance<S>: Service<()>,
{
    balance: TowerBalance<S>,
    ring: Vec<Option<<TowerBalance<S> as Service<()>>::Future>>,
    next: usize,
}

/// `Balance` + `PeakEwma` over `n` backends.
pub fn peak_ewma(n: usize) -> TowerLoad<PeakEwma<Backend>> {
    TowerLoad::new(
        (0..n)
            .map(|_| {
                PeakEwma::new(
                    Backend,
                    DEFAULT_RTT,
                    DECAY_NS,
                    CompleteOnResponse::default(),
                )
            })
            .collect(),
    )
}

/// `Balance` + `PendingRequests` over `n` backends.
pub fn pending_requests(n: usize) -> TowerLoad<PendingRequests<Backend>> {
    TowerLoad::new(
        (0..n)
            .map(|_| PendingRequests::new(Backend, CompleteOnResponse::default()))
            .collect(),
    )
}

impl<S> TowerLoad<S>
where
    S: Service<(), Error = Infallible>,
    TowerBalance<S>: Service<(), Response = ()>,
    <TowerBalance<S> as Service<()>>::Future: Unpin,
    <TowerBalance<S> as Service<()>>::Error: std::fmt::Debug,
{
    fn new(services: Vec<S>) -> Self {
        let mut load = TowerLoad {
            balance: Balance::new(ServiceList::new::<()>(services)),
            ring: Vec::with_capacity(OUTSTANDING),
            next: 0,
        };
        for _ in 0..OUTSTANDING {
            let call = load.call();
            load.ring.push(Some(call));
        }
        load
    }

    /// `poll_ready` + `call`; panics if the balancer is not ready (it always is: every backend is).
    #[inline]
    fn call(&mut self) -> <TowerBalance<S> as Service<()>>::Future {
        let mut cx = Context::from_waker(Waker::noop());
        match self.balance.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => {}
            other => panic!("tower's balancer was not ready over always-ready services: {other:?}"),
        }
        self.balance.call(())
    }
}

impl<S> Workload for TowerLoad<S>
where
    S: Service<(), Error = Infallible>,
    TowerBalance<S>: Service<(), Response = ()>,
    <TowerBalance<S> as Service<()>>::Future: Unpin,
    <TowerBalance<S> as Service<()>>::Error: std::fmt::Debug,
{
    #[inline]
    fn pair(&mut self) {
        let call = self.call();
        let Some(mut old) = self.ring.get_mut(self.next).and_then(|f| f.replace(call)) else {
            panic!("the ring of calls is always full");
        };
        self.next = (self.next + 1) % OUTSTANDING;
        let mut cx = Context::from_waker(Waker::noop());
        match Pin::new(&mut old).poll(&mut cx) {
            Poll::Ready(Ok(())) => {}
            other => panic!("an always-ready backend's response did not complete: {other:?}"),
        }
    }
}
