//! The service's contract without a network: the lease `poll_ready` reserves is the one `call` uses,
//! refusals are typed and answer their own call (never `poll_ready`, so a `Buffer` in front survives
//! them), waiting is served by a release, the inner services' readiness moves nodes out of
//! and back into rotation, a failed service is evicted, and every lease comes back (dropped futures,
//! dropped balances) with the counters conserved: refusals counted once per refused call, waits in the
//! core's queue once each.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tokio::sync::oneshot;
use tower::buffer::Buffer;
use tower::{BoxError, Service, ServiceExt};
use weir::balance::Stats;
use weir::limit::{FixedLimit, LimitAlgorithm};
use weir::{Config, HeapBalancer, Outcome};
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

/// Polls a future once with a no-op waker.
fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

/// Waits (on tokio's clock, a millisecond at a time) until `done`; fails after 30 s of the real clock
/// rather than hang.
async fn until(what: &str, done: impl Fn() -> bool) {
    let start = std::time::Instant::now();
    while !done() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never saw {what}"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Asserts the counters are conserved and nothing is in flight or waiting; returns them.
fn settled(b: &HeapBalancer) -> Stats {
    let st = b.stats();
    assert_eq!(st.in_flight, 0, "{st:?}");
    assert_eq!(
        st.acquired,
        st.released_total() + st.released_stale,
        "{st:?}"
    );
    assert_eq!(st.waiting, 0, "{st:?}");
    assert_eq!(
        st.waits,
        st.waits_granted + st.waits_timed_out + st.waits_cancelled,
        "{st:?}"
    );
    st
}

/// `(rejected_all_busy, rejected_no_active, waits, waits_granted, waits_timed_out, waits_cancelled)`.
fn counts(st: &Stats) -> (u64, u64, u64, u64, u64, u64) {
    (
        st.rejected_all_busy,
        st.rejected_no_active,
        st.waits,
        st.waits_granted,
        st.waits_timed_out,
        st.waits_cancelled,
    )
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
    let st = settled(svc.balancer());
    assert_eq!((st.acquired, st.released(Outcome::Success)), (2, 2));
    assert!(["a", "b"].contains(&name) && ["a", "b"].contains(&other));
}

#[tokio::test]
async fn call_without_poll_ready_sends_nothing() {
    let a = Backend::new("a");
    let mut svc = balance(limit(1), Duration::ZERO, &[&a]);
    assert!(matches!(svc.call(None).await, Err(Error::NotReady)));
    assert_eq!(a.calls.load(SeqCst), 0);
    assert_eq!(settled(svc.balancer()).acquired, 0);
}

#[tokio::test]
async fn refusals_are_typed() {
    let a = Backend::new("a");
    // Nothing to balance over.
    let mut empty = balance(limit(1), Duration::ZERO, &[]);
    let err = empty.ready().await.unwrap().call(None).await.unwrap_err();
    assert_eq!(err.refused(), Some(Refused::NoActiveNodes));
    assert_eq!(counts(&settled(empty.balancer())), (0, 1, 0, 0, 0, 0));

    // One node at its limit: no wait, then a 10 ms wait, then waiting turned off in the core. Each
    // refusal is counted once (a wait that timed out is also a wait, timed out).
    for (wait, max_waiters, refused, counted) in [
        (Duration::ZERO, 8, Refused::AllBusy, (1, 0, 0, 0, 0, 0)),
        (
            Duration::from_millis(10),
            8,
            Refused::Timeout,
            (1, 0, 1, 0, 1, 0),
        ),
        (
            Duration::from_millis(10),
            0,
            Refused::QueueFull { max_waiters: 0 },
            (1, 0, 0, 0, 0, 0),
        ),
    ] {
        let config = Config {
            max_waiters,
            ..limit(1)
        };
        let mut svc = balance(config, wait, &[&a]);
        let (tx, rx) = oneshot::channel();
        let held = svc.ready().await.unwrap().call(Some(rx));
        let err = svc.ready().await.unwrap().call(None).await.unwrap_err();
        assert_eq!(err.refused(), Some(refused), "{err}");
        assert_eq!(a.calls.load(SeqCst), 1, "a refused call sends nothing");
        tx.send(()).unwrap();
        assert_eq!(held.await.unwrap(), "a");
        // Refused, not broken: the next call goes through.
        svc.ready().await.unwrap().call(None).await.unwrap();
        let st = settled(svc.balancer());
        assert_eq!(st.released(Outcome::Success), 2);
        assert_eq!(counts(&st), counted, "{refused:?}");
        a.calls.store(0, SeqCst);
    }
}

/// Many concurrent calls through a `Buffer` (how a `Balance` is shared) to one node with room for one:
/// each `poll_ready` finds room at once or waits its turn in the core's queue, and every call gets
/// through. The balancer counts those waits, all granted, and no refusal (it used to count a refusal
/// for every attempt on the way).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_calls_that_all_get_through_are_waits_not_refusals() {
    const CALLS: u64 = 64;
    let a = Backend::new("a");
    let svc = balance(limit(1), Duration::from_secs(30), &[&a]);
    let balancer = Arc::clone(svc.balancer());
    let buffered = Buffer::new(svc, CALLS as usize + 1);
    // A first call holds the only lease until the next poll_ready waits for it: at least one wait.
    let (release_first, rx) = oneshot::channel();
    let mut svc = buffered.clone();
    let first = tokio::spawn(async move { svc.ready().await.unwrap().call(Some(rx)).await });
    until("the first lease taken", || balancer.stats().in_flight == 1).await;
    let calls: Vec<_> = (0..CALLS)
        .map(|_| {
            let mut svc = buffered.clone();
            tokio::spawn(async move {
                // Each call holds its lease a moment, so that the next poll_ready may find none free.
                let (tx, rx) = oneshot::channel();
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    let _ = tx.send(());
                });
                svc.ready().await.unwrap().call(Some(rx)).await.unwrap()
            })
        })
        .collect();
    until("a poll_ready waiting", || balancer.stats().waiting == 1).await;
    release_first.send(()).unwrap();
    assert_eq!(first.await.unwrap().unwrap(), "a");
    for call in calls {
        assert_eq!(call.await.unwrap(), "a");
    }
    let st = balancer.stats();
    let all = CALLS + 1;
    assert_eq!((st.acquired, st.released(Outcome::Success)), (all, all));
    assert_eq!((st.in_flight, st.waiting), (0, 0), "{st:?}");
    let (all_busy, no_active, waits, granted, timed_out, cancelled) = counts(&st);
    assert_eq!(
        (all_busy, no_active, timed_out, cancelled),
        (0, 0, 0, 0),
        "{st:?}"
    );
    // The first call found room; of the others, at least the one behind it waited.
    assert!((1..all).contains(&waits), "{st:?}");
    assert_eq!(granted, waits, "{st:?}");
}

/// The refusal a call through a `Buffer` failed with: weir's typed error, boxed by the buffer.
fn refusal(e: &BoxError) -> Option<Refused> {
    e.downcast_ref::<Error>().and_then(Error::refused)
}

/// tower's `Buffer` (how tasks share a `Balance`) takes an error from `poll_ready` as its service failing
/// for good, and fails every later call with it ("buffered service failed"). A refusal is the refused
/// request's answer instead: after the saturated balance refused one at the end of its 100 ms wait, the
/// calls that come once there is room go through.
#[tokio::test(start_paused = true)]
async fn a_refusal_behind_a_buffer_fails_its_request_not_the_buffer() {
    let a = Backend::new("a");
    let svc = balance(limit(1), Duration::from_millis(100), &[&a]);
    let balancer = Arc::clone(svc.balancer());
    let buffered = Buffer::new(svc, 8);
    let (release, rx) = oneshot::channel();
    let held = tokio::spawn(buffered.clone().oneshot(Some(rx)));
    until("the only lease taken", || balancer.stats().in_flight == 1).await;

    let err = buffered.clone().oneshot(None).await.unwrap_err();
    assert_eq!(refusal(&err), Some(Refused::Timeout), "{err}");
    assert_eq!(
        err.to_string(),
        "weir refused the call: no node had room before the wait's deadline"
    );
    release.send(()).unwrap();
    assert_eq!(held.await.unwrap().unwrap(), "a");
    for _ in 0..3 {
        assert_eq!(buffered.clone().oneshot(None).await.unwrap(), "a");
    }
    let st = settled(&balancer);
    assert_eq!((st.acquired, st.released(Outcome::Success)), (4, 4));
    assert_eq!(counts(&st), (1, 0, 1, 0, 1, 0));
    assert_eq!(a.calls.load(SeqCst), 4);
}

/// `ServiceExt::oneshot` (`poll_ready`, then `call`) on a full balance: ready, and the call answers the
/// refusal. A `poll_ready` again before that call keeps the refusal for it and reserves nothing.
#[tokio::test]
async fn oneshot_gets_the_refusal_from_its_call() {
    let a = Backend::new("a");
    let mut svc = balance(limit(1), Duration::ZERO, &[&a]);
    let (release, rx) = oneshot::channel();
    let held = svc.ready().await.unwrap().call(Some(rx));
    let err = (&mut svc).oneshot(None).await.unwrap_err();
    assert_eq!(err.refused(), Some(Refused::AllBusy), "{err}");

    assert!(matches!(poll_ready_once(&mut svc), Poll::Ready(Ok(()))));
    release.send(()).unwrap();
    assert_eq!(held.await.unwrap(), "a");
    assert!(matches!(poll_ready_once(&mut svc), Poll::Ready(Ok(()))));
    assert_eq!(svc.balancer().stats().in_flight, 0);
    let err = svc.call(None).await.unwrap_err();
    assert_eq!(err.refused(), Some(Refused::AllBusy), "{err}");

    // The refusal answered, the next request finds the room.
    assert_eq!((&mut svc).oneshot(None).await.unwrap(), "a");
    let st = settled(svc.balancer());
    assert_eq!((st.acquired, st.released(Outcome::Success)), (2, 2));
    assert_eq!(counts(&st), (2, 0, 0, 0, 0, 0));
    assert_eq!(a.calls.load(SeqCst), 2);
}

/// Many tasks share one balance through clones of a `Buffer` while its four slots (two nodes with a
/// limit of two, no wait) are held: four calls get a lease and every other is refused with weir's typed
/// error, none with the buffer's "service failed". Then a call from each task goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tasks_sharing_a_buffered_balance_get_an_answer_or_a_refusal() {
    const TASKS: u64 = 64;
    const SLOTS: u64 = 4;
    let (a, b) = (Backend::new("a"), Backend::new("b"));
    let svc = balance(limit(2), Duration::ZERO, &[&a, &b]);
    let balancer = Arc::clone(svc.balancer());
    let buffered = Buffer::new(svc, TASKS as usize);
    // A call that gets a lease holds it until the gate opens.
    let (open, gate) = tokio::sync::watch::channel(false);
    let answered = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let (mut svc, mut gate, answered) =
                (buffered.clone(), gate.clone(), Arc::clone(&answered));
            tokio::spawn(async move {
                let (hold, rx) = oneshot::channel::<()>();
                tokio::spawn(async move {
                    // Sent once, after every call without a lease has answered.
                    let _ = gate.changed().await;
                    drop(hold);
                });
                // `ready` and `call` rather than `oneshot`, whose future the compiler cannot prove
                // `Send` here (a higher-ranked lifetime error).
                let answer = match svc.ready().await {
                    Ok(svc) => svc.call(Some(rx)).await,
                    Err(failed) => Err(failed),
                };
                answered.fetch_add(1, SeqCst);
                answer
            })
        })
        .collect();
    until("every call without a lease answered", || {
        answered.load(SeqCst) == TASKS - SLOTS && balancer.stats().in_flight == SLOTS
    })
    .await;
    open.send(true).unwrap();
    let (mut ok, mut refused) = (0, 0);
    for task in tasks {
        match task.await.unwrap() {
            Ok(name) => {
                assert!(["a", "b"].contains(&name));
                ok += 1;
            }
            Err(e) if refusal(&e) == Some(Refused::AllBusy) => refused += 1,
            Err(e) => panic!("neither an answer nor weir's refusal: {e}"),
        }
    }
    assert_eq!((ok, refused), (SLOTS, TASKS - SLOTS));
    for _ in 0..TASKS {
        buffered.clone().oneshot(None).await.unwrap();
    }
    let st = settled(&balancer);
    let sent = SLOTS + TASKS;
    assert_eq!((st.acquired, st.released(Outcome::Success)), (sent, sent));
    assert_eq!(counts(&st), (TASKS - SLOTS, 0, 0, 0, 0, 0));
    assert_eq!(a.calls.load(SeqCst) + b.calls.load(SeqCst), sent);
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
    // No runtime on this thread: ready, and the call is refused.
    let refused_call = |svc: &mut Balance<_, _>| {
        assert!(matches!(poll_ready_once(svc), Poll::Ready(Ok(()))));
        match poll_once(&mut svc.call(None)) {
            Poll::Ready(Err(e)) => assert_eq!(e.refused(), Some(Refused::NoTimer), "{e}"),
            other => panic!("expected NoTimer, got {:?}", other.map(|r| r.is_ok())),
        }
    };
    refused_call(&mut svc);
    // A runtime without its time driver.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        refused_call(&mut svc);
        tx.send(()).unwrap();
        assert_eq!((&mut held).await.unwrap(), "a");
        assert!(matches!(poll_ready_once(&mut svc), Poll::Ready(Ok(()))));
        svc.call(None).await.unwrap();
    });
    let st = settled(svc.balancer());
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
    assert_eq!(settled(svc.balancer()).released(Outcome::Success), 2);
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
    let st = settled(svc.balancer());
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
    let err = svc.ready().await.unwrap().call(None).await.unwrap_err();
    assert_eq!(err.refused(), Some(Refused::Timeout));
    let st = settled(svc.balancer());
    assert_eq!(st.released(Outcome::Ignored), 1);
    // Waiting for services is no wait in the core's queue; the answer is a refusal for want of nodes.
    assert_eq!(counts(&st), (0, 1, 0, 0, 0, 0));
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
    settled(svc.balancer());
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
    let st = settled(svc.balancer());
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
    settled(svc.balancer());
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
    let st = settled(svc.balancer());
    assert_eq!(st.active_nodes, 1);
    assert_eq!(a.calls.load(SeqCst), 0);
}
