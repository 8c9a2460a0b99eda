//! The service's contract without a network: the lease `poll_ready` reserves is the one `call` uses,
//! refusals are typed, waiting is served by a release, the inner services' readiness moves nodes out of
//! and back into rotation, a failed service is evicted, and every lease comes back (dropped futures,
//! dropped balances) with the counters conserved.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::sync::oneshot;
use tower::{Service, ServiceExt};
use weir::balance::Stats;
use weir::limit::{FixedLimit, LimitAlgorithm};
use weir::{Config, Outcome};
use weir_tower::{Balance, Builder, ByResult, Error, Fixed, Refused};

/// A request: answer at once (`None`), or when the sender fires or is dropped.
type Req = Option<oneshot::Receiver<()>>;

/// What a test backend's `poll_ready` answers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Readiness {
    Ready,
    Pending,
    Failed,
}

/// A backend whose readiness the test sets, counting its calls; it answers its name, or an error if
/// `fails`.
#[derive(Clone)]
struct Backend {
    name: &'static str,
    fails: bool,
    state: Arc<Mutex<(Readiness, Option<Waker>)>>,
    calls: Arc<AtomicU64>,
}

impl Backend {
    fn new(name: &'static str) -> Self {
        Backend {
            name,
            fails: false,
            state: Arc::new(Mutex::new((Readiness::Ready, None))),
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    fn set(&self, readiness: Readiness) {
        let mut s = self.state.lock().unwrap();
        s.0 = readiness;
        if let Some(w) = s.1.take() {
            w.wake();
        }
    }
}

type Answer = Pin<Box<dyn Future<Output = Result<&'static str, io::Error>> + Send>>;

impl Service<Req> for Backend {
    type Response = &'static str;
    type Error = io::Error;
    type Future = Answer;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        let mut s = self.state.lock().unwrap();
        match s.0 {
            Readiness::Ready => Poll::Ready(Ok(())),
            Readiness::Failed => Poll::Ready(Err(io::Error::other("broken"))),
            Readiness::Pending => {
                s.1 = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }

    fn call(&mut self, req: Req) -> Answer {
        self.calls.fetch_add(1, SeqCst);
        let (name, fails) = (self.name, self.fails);
        Box::pin(async move {
            if let Some(rx) = req {
                let _ = rx.await;
            }
            if fails {
                Err(io::Error::from(io::ErrorKind::ConnectionReset))
            } else {
                Ok(name)
            }
        })
    }
}

fn limit(n: u32) -> Config {
    Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: n }),
        ..Config::default()
    }
}

fn balance(
    config: Config,
    wait: Duration,
    backends: &[&Backend],
) -> Balance<Fixed<&'static str, Backend>, ByResult> {
    Builder::new(config)
        .classify(ByResult)
        .wait(wait)
        .build_list(backends.iter().map(|b| (b.name, (*b).clone())))
        .unwrap()
}

/// Polls `poll_ready` once with a no-op waker.
fn poll_ready_once<S: Service<Req>>(s: &mut S) -> Poll<Result<(), S::Error>> {
    s.poll_ready(&mut Context::from_waker(Waker::noop()))
}

/// Asserts the counters are conserved and nothing is in flight; returns them.
fn settled(b: &Balance<Fixed<&'static str, Backend>, ByResult>) -> Stats {
    let st = b.balancer().stats();
    assert_eq!(st.in_flight, 0, "{st:?}");
    assert_eq!(
        st.acquired,
        st.released_total() + st.released_stale,
        "{st:?}"
    );
    st
}

#[tokio::test]
async fn the_lease_poll_ready_reserves_is_the_one_call_uses() {
    let (a, b) = (Backend::new("a"), Backend::new("b"));
    let mut svc = balance(limit(1), Duration::ZERO, &[&a, &b]);
    assert!(poll_ready_once(&mut svc).is_ready());
    // Reserved: one lease in flight before any call; polling again keeps it.
    assert_eq!(svc.balancer().stats().in_flight, 1);
    assert!(poll_ready_once(&mut svc).is_ready());
    assert_eq!(svc.balancer().stats().acquired, 1);
    let name = svc.call(None).await.unwrap();
    let other = svc.ready().await.unwrap().call(None).await.unwrap();
    assert_eq!(a.calls.load(SeqCst) + b.calls.load(SeqCst), 2);
    let st = settled(&svc);
    assert_eq!((st.acquired, st.released(Outcome::Success)), (2, 2));
    assert!(["a", "b"].contains(&name) && ["a", "b"].contains(&other));
}

#[tokio::test]
async fn call_without_poll_ready_sends_nothing() {
    let a = Backend::new("a");
    let mut svc = balance(limit(1), Duration::ZERO, &[&a]);
    assert!(matches!(svc.call(None).await, Err(Error::NotReady)));
    assert_eq!(a.calls.load(SeqCst), 0);
    assert_eq!(settled(&svc).acquired, 0);
}

#[tokio::test]
async fn refusals_are_typed() {
    let a = Backend::new("a");
    // Nothing to balance over.
    let mut empty = balance(limit(1), Duration::ZERO, &[]);
    let err = empty.ready().await.unwrap_err();
    assert_eq!(err.refused(), Some(Refused::NoActiveNodes));

    // One node at its limit: no wait, then a 10 ms wait, then waiting turned off in the core.
    for (wait, max_waiters, refused) in [
        (Duration::ZERO, 8, Refused::AllBusy),
        (Duration::from_millis(10), 8, Refused::Timeout),
        (
            Duration::from_millis(10),
            0,
            Refused::QueueFull { max_waiters: 0 },
        ),
    ] {
        let config = Config {
            max_waiters,
            ..limit(1)
        };
        let mut svc = balance(config, wait, &[&a]);
        let (tx, rx) = oneshot::channel();
        let held = svc.ready().await.unwrap().call(Some(rx));
        let err = svc.ready().await.unwrap_err();
        assert_eq!(err.refused(), Some(refused), "{err}");
        tx.send(()).unwrap();
        assert_eq!(held.await.unwrap(), "a");
        // Refused, not broken: the next call goes through.
        svc.ready().await.unwrap().call(None).await.unwrap();
        let st = settled(&svc);
        assert_eq!(st.released(Outcome::Success), 2);
    }
}

/// Waiting needs tokio's timer: without a runtime, or in one built without its time driver, a full
/// balance refuses with `NoTimer` (tokio itself would panic), reserves nothing, and works again once
/// a node has room.
#[test]
fn waiting_without_a_timer_is_refused_not_a_panic() {
    let a = Backend::new("a");
    let mut svc = balance(limit(1), Duration::from_millis(10), &[&a]);
    assert!(matches!(poll_ready_once(&mut svc), Poll::Ready(Ok(()))));
    let (tx, rx) = oneshot::channel();
    let mut held = svc.call(Some(rx));
    // No runtime on this thread.
    match poll_ready_once(&mut svc) {
        Poll::Ready(Err(e)) => assert_eq!(e.refused(), Some(Refused::NoTimer), "{e}"),
        other => panic!("expected NoTimer, got {:?}", other.map(|r| r.is_ok())),
    }
    // A runtime without its time driver.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        match poll_ready_once(&mut svc) {
            Poll::Ready(Err(e)) => assert_eq!(e.refused(), Some(Refused::NoTimer), "{e}"),
            other => panic!("expected NoTimer, got {:?}", other.map(|r| r.is_ok())),
        }
        tx.send(()).unwrap();
        assert_eq!((&mut held).await.unwrap(), "a");
        assert!(matches!(poll_ready_once(&mut svc), Poll::Ready(Ok(()))));
        svc.call(None).await.unwrap();
    });
    let st = settled(&svc);
    assert_eq!(st.released(Outcome::Success), 2);
}

#[tokio::test]
async fn a_waiting_poll_ready_is_served_by_a_release() {
    let a = Backend::new("a");
    let mut svc = balance(limit(1), Duration::from_secs(30), &[&a]);
    let (tx, rx) = oneshot::channel();
    let held = svc.ready().await.unwrap().call(Some(rx));
    let task = tokio::spawn(held);
    assert!(poll_ready_once(&mut svc).is_pending());
    tx.send(()).unwrap();
    assert_eq!(task.await.unwrap().unwrap(), "a");
    // The release handed the lease to the waiting poll_ready.
    svc.ready().await.unwrap();
    assert_eq!(svc.balancer().stats().in_flight, 1);
    svc.call(None).await.unwrap();
    assert_eq!(settled(&svc).released(Outcome::Success), 2);
}

#[tokio::test]
async fn an_unready_service_leaves_rotation_until_it_is_ready() {
    let (a, b) = (Backend::new("a"), Backend::new("b"));
    a.set(Readiness::Pending);
    let mut svc = balance(Config::default(), Duration::from_secs(30), &[&a, &b]);
    for _ in 0..20 {
        assert_eq!(svc.ready().await.unwrap().call(None).await.unwrap(), "b");
    }
    assert_eq!(svc.balancer().stats().lame_duck_nodes, 1);
    assert_eq!(a.calls.load(SeqCst), 0);
    // Ready again: back into rotation at the next poll_ready.
    a.set(Readiness::Ready);
    svc.ready().await.unwrap().call(None).await.unwrap();
    assert_eq!(svc.balancer().stats().lame_duck_nodes, 0);
    // Both not ready: poll_ready waits for them, and a ready one serves it.
    a.set(Readiness::Pending);
    b.set(Readiness::Pending);
    let mut ready = svc.ready();
    assert!(futures_poll(&mut ready).await.is_none());
    b.set(Readiness::Ready);
    ready.await.unwrap().call(None).await.unwrap();
    let st = settled(&svc);
    assert_eq!(st.released(Outcome::Success), 22);
}

/// Polls a future once, in the test's task.
async fn futures_poll<F: Future + Unpin>(f: &mut F) -> Option<F::Output> {
    std::future::poll_fn(|cx| {
        Poll::Ready(match Pin::new(&mut *f).poll(cx) {
            Poll::Ready(v) => Some(v),
            Poll::Pending => None,
        })
    })
    .await
}

#[tokio::test]
async fn services_that_stay_unready_time_out() {
    let a = Backend::new("a");
    a.set(Readiness::Pending);
    let mut svc = balance(Config::default(), Duration::from_millis(10), &[&a]);
    let err = svc.ready().await.unwrap_err();
    assert_eq!(err.refused(), Some(Refused::Timeout));
    assert_eq!(settled(&svc).released(Outcome::Ignored), 1);
}

#[tokio::test]
async fn a_failed_service_is_evicted() {
    let (a, b) = (Backend::new("a"), Backend::new("b"));
    a.set(Readiness::Failed);
    let mut svc = balance(Config::default(), Duration::ZERO, &[&a, &b]);
    for _ in 0..10 {
        assert_eq!(svc.ready().await.unwrap().call(None).await.unwrap(), "b");
    }
    assert!(svc.node(&"a").is_none());
    assert_eq!(svc.balancer().stats().active_nodes, 1);
    settled(&svc);
}

#[tokio::test]
async fn errors_and_cancellations_release_their_leases() {
    let a = Backend {
        fails: true,
        ..Backend::new("a")
    };
    let mut svc = balance(limit(4), Duration::ZERO, &[&a]);
    let err = svc.ready().await.unwrap().call(None).await.unwrap_err();
    let Error::Inner(inner) = err else {
        panic!("{err}")
    };
    assert_eq!(
        inner.downcast_ref::<io::Error>().unwrap().kind(),
        io::ErrorKind::ConnectionReset
    );
    // A response future dropped before its answer: Ignored.
    let (_tx, rx) = oneshot::channel();
    let mut cancelled = svc.ready().await.unwrap().call(Some(rx));
    assert!(futures_poll(&mut cancelled).await.is_none());
    drop(cancelled);
    let st = settled(&svc);
    assert_eq!(
        (st.released(Outcome::Failure), st.released(Outcome::Ignored)),
        (1, 1)
    );
    // A balance dropped with a reserved lease: Ignored.
    svc.ready().await.unwrap();
    let balancer = Arc::clone(svc.balancer());
    drop(svc);
    let st = balancer.stats();
    assert_eq!((st.in_flight, st.released(Outcome::Ignored)), (0, 2));
}

#[tokio::test]
async fn lame_duck_by_key() {
    let (a, b) = (Backend::new("a"), Backend::new("b"));
    let mut svc = balance(Config::default(), Duration::ZERO, &[&a, &b]);
    assert!(svc.set_lame_duck(&"a", true));
    for _ in 0..10 {
        assert_eq!(svc.ready().await.unwrap().call(None).await.unwrap(), "b");
    }
    assert!(svc.set_lame_duck(&"a", false));
    assert!(!svc.set_lame_duck(&"c", false));
    assert_eq!(svc.nodes().count(), 2);
    settled(&svc);
}

#[test]
fn the_balance_and_its_futures_are_send() {
    fn send<T: Send>(_: &T) {}
    let a = Backend::new("a");
    let mut svc = balance(Config::default(), Duration::ZERO, &[&a]);
    send(&svc);
    let call = svc.call(None);
    send(&call);
}

/// A `Discover` stream that yields the changes of a list, then an error, then stays pending.
struct Script(Vec<Result<tower::discover::Change<&'static str, Backend>, io::Error>>);

impl futures_core::Stream for Script {
    type Item = Result<tower::discover::Change<&'static str, Backend>, io::Error>;

    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        if self.0.is_empty() {
            Poll::Pending
        } else {
            Poll::Ready(Some(self.0.remove(0)))
        }
    }
}

#[tokio::test]
async fn discovery_errors_and_a_full_balancer_are_reported() {
    use tower::discover::Change::Insert;
    let (a, b) = (Backend::new("a"), Backend::new("b"));
    let changes = vec![
        Ok(Insert("a", a.clone())),
        Ok(Insert("b", b.clone())),
        Err(io::Error::other("registry unreachable")),
    ];
    let mut svc = Builder::new(Config::default())
        .classify(ByResult)
        .capacity(1)
        .build(Script(changes))
        .unwrap();
    // "b" finds no slot: the error says so, and "a" stays.
    let full = svc.ready().await.unwrap_err();
    assert!(matches!(
        full,
        Error::Membership(weir::balance::MembershipError::CapacityFull { capacity: 1 })
    ));
    let failed = svc.ready().await.unwrap_err();
    let Error::Discover(e) = failed else {
        panic!("{failed}")
    };
    assert_eq!(e.to_string(), "registry unreachable");
    // Discovery pending, "a" serves.
    assert_eq!(svc.ready().await.unwrap().call(None).await.unwrap(), "a");
    assert_eq!(svc.nodes().count(), 1);
    assert_eq!(b.calls.load(SeqCst), 0);
}

#[tokio::test]
async fn membership_changed_on_the_balancer_directly_does_not_hang() {
    let (a, b) = (Backend::new("a"), Backend::new("b"));
    a.set(Readiness::Pending);
    let mut svc = balance(Config::default(), Duration::ZERO, &[&a, &b]);
    assert_eq!(svc.ready().await.unwrap().call(None).await.unwrap(), "b");
    // A node with no service, and every member forced back into rotation behind the balance's back.
    for id in 1_000..1_010 {
        svc.balancer().add(id).unwrap();
    }
    let ids: Vec<u64> = svc.balancer().nodes(0).map(|n| n.id).collect();
    for id in ids {
        let _ = svc.balancer().set_lame_duck(id, false);
    }
    for _ in 0..20 {
        assert_eq!(svc.ready().await.unwrap().call(None).await.unwrap(), "b");
    }
    // The service-less nodes left when picked; "a" is out of rotation again.
    let st = settled(&svc);
    assert_eq!(st.active_nodes, 1);
    assert_eq!(a.calls.load(SeqCst), 0);
}
