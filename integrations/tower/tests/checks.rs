//! Health checks through the balance ([`Balance::checks`](weir_tower::Balance::checks)): a backend that
//! fails every call is avoided, and while it stays broken a checker task behind the balance's `Buffer`
//! checks it once a period and no caller's call goes to it; once it recovers, the next check answers
//! healthy and it is called again, with its share, within a period. The handle follows membership: it
//! names a node by the key it joined under, a node that left is neither named nor reported, and a node
//! the balance does not know is not named.
//!
//! The balance reads the process's monotonic clock (`weir::rt::monotonic_now`), which tokio's paused time
//! does not move, so these tests run on real time with a short period (20 ms). Their bounds are counted
//! in the caller's rounds, each of which sleeps at least a quarter of the period: a slow machine makes
//! more time pass per round, never less, so no bound depends on how fast the test runs.

#[allow(dead_code)]
mod support;

use std::collections::HashMap;
use std::future::{ready, Ready};
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use support::Channel;
use tokio::sync::mpsc;
use tokio::time::sleep;
use tower::buffer::Buffer;
use tower::discover::Change;
use tower::{Service, ServiceExt};
use weir::rt::monotonic_now;
use weir::{Config, Outcome, Rng};
use weir_tower::{Builder, ByResult, CheckError};

/// The checks' quiet period: a node is checked once per `QUIET` at most.
const QUIET: Duration = Duration::from_millis(20);
/// The caller's round: its calls, then a sleep this long (the checker looks as often).
const ROUND: Duration = Duration::from_millis(5);
/// The caller's calls per round, one after another.
const CALLS: usize = 12;

/// A backend that answers its key, or fails every call while `broken`, counting its calls.
#[derive(Clone)]
struct Backend {
    key: &'static str,
    broken: Arc<AtomicBool>,
    calls: Arc<AtomicU64>,
}

impl Backend {
    fn new(key: &'static str, broken: bool) -> Self {
        Backend {
            key,
            broken: Arc::new(AtomicBool::new(broken)),
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    fn calls(&self) -> u64 {
        self.calls.load(SeqCst)
    }

    /// The answer of its health check.
    fn healthy(&self) -> bool {
        !self.broken.load(SeqCst)
    }
}

impl Service<()> for Backend {
    type Response = &'static str;
    type Error = io::Error;
    type Future = Ready<Result<&'static str, io::Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        self.calls.fetch_add(1, SeqCst);
        ready(if self.broken.load(SeqCst) {
            Err(io::Error::from(io::ErrorKind::ConnectionReset))
        } else {
            Ok(self.key)
        })
    }
}

/// One round of the caller: `CALLS` calls one after another (a failure is an answer like any other),
/// then a sleep of `ROUND`.
async fn round<S>(svc: &mut S)
where
    S: Service<(), Response = &'static str>,
    S::Error: std::fmt::Debug,
{
    for _ in 0..CALLS {
        let _ = svc.ready().await.unwrap().call(()).await;
    }
    sleep(ROUND).await;
}

/// A check the checker sent: when its answer was reported, to which key, and the answer.
type Sent = (Instant, &'static str, bool);

#[tokio::test(flavor = "current_thread")]
async fn a_broken_backend_is_checked_not_called_and_called_within_a_period_of_its_recovery() {
    let backends = [
        Backend::new("a", false),
        Backend::new("b", false),
        Backend::new("c", true),
    ];
    let c = backends[2].clone();
    let mut balance = Builder::new(Config::default())
        .classify(ByResult)
        .build_list(backends.iter().map(|b| (b.key, b.clone())))
        .unwrap();
    let checks = balance.checks();
    let mut svc = Buffer::new(balance, 32);

    // The checker: the docs' loop, its health request the backend's own answer.
    let health: HashMap<&'static str, Backend> =
        backends.iter().map(|b| (b.key, b.clone())).collect();
    let sent: Arc<Mutex<Vec<Sent>>> = Arc::default();
    let log = Arc::clone(&sent);
    let checker = tokio::spawn(async move {
        let mut every = tokio::time::interval(ROUND);
        loop {
            every.tick().await;
            while let Some(key) = checks.due(QUIET) {
                let healthy = health[key].healthy();
                checks.report(&key, healthy).unwrap();
                log.lock().unwrap().push((Instant::now(), key, healthy));
            }
        }
    });
    let sent = move || sent.lock().unwrap().clone();

    // c fails its first calls and is avoided.
    for _ in 0..50 {
        if c.calls() > 0 {
            break;
        }
        round(&mut svc).await;
    }
    let learnt = c.calls();
    assert!(learnt > 0, "c was never called");

    // While it stays broken: checked, each check failed, never twice within a period, and no call.
    for _ in 0..200 {
        if sent().len() >= 3 {
            break;
        }
        round(&mut svc).await;
    }
    let broken = sent();
    assert!(broken.len() >= 3, "{broken:?}");
    assert!(
        broken.iter().all(|s| (s.1, s.2) == ("c", false)),
        "{broken:?}"
    );
    for pair in broken.windows(2) {
        let apart = pair[1].0 - pair[0].0;
        assert!(apart >= QUIET / 2, "checks {apart:?} apart: {broken:?}");
    }
    assert_eq!(c.calls(), learnt, "a caller's call went to broken c");

    // It recovers: the next check answers healthy, and the calls after it find c, within a period
    // (the rounds a period takes, and two more for the checker's turn and the tick's rounding).
    c.broken.store(false, SeqCst);
    let within = (QUIET.as_millis() / ROUND.as_millis()) as usize + 2;
    let mut rounds = 0;
    while c.calls() == learnt && rounds <= within {
        round(&mut svc).await;
        rounds += 1;
    }
    assert!(
        c.calls() > learnt,
        "c not called {rounds} rounds after it recovered"
    );
    let after = sent();
    assert_eq!(after.len(), broken.len() + 1, "{after:?}");
    assert_eq!(after.last().map(|s| (s.1, s.2)), Some(("c", true)));

    // Then it has its share, and is not avoided: nothing is due any more.
    let calls = || backends.each_ref().map(Backend::calls);
    let before = calls();
    for _ in 0..10 {
        round(&mut svc).await;
    }
    let (now, total) = (calls(), (10 * CALLS) as f64);
    let share = (now[2] - before[2]) as f64 / total;
    assert!(
        share >= 1.0 / 6.0,
        "c's share {share}: {before:?} then {now:?}"
    );
    assert_eq!(sent().len(), after.len(), "{:?}", sent());
    checker.abort();
}

/// Calls through `balance` until `backend` has failed a call (at most 100).
async fn until_failed<S>(balance: &mut S, backend: &Backend)
where
    S: Service<(), Response = &'static str>,
    S::Error: std::fmt::Debug,
{
    for _ in 0..100 {
        if backend.calls() > 0 {
            return;
        }
        let _ = balance.ready().await.unwrap().call(()).await;
    }
    panic!("{} never called", backend.key);
}

#[tokio::test(flavor = "current_thread")]
async fn the_handle_follows_membership() {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut balance = Builder::new(Config::default())
        .classify(ByResult)
        .build(Channel(rx))
        .unwrap();
    // Taken before any node joined: the keys come as they join.
    let checks = balance.checks();
    let c = Backend::new("c", true);
    tx.send(Change::Insert("a", Backend::new("a", false)))
        .unwrap();
    tx.send(Change::Insert("c", c.clone())).unwrap();
    until_failed(&mut balance, &c).await;
    sleep(QUIET + ROUND).await;
    assert_eq!(checks.due(QUIET), Some("c"));
    assert_eq!(checks.due(QUIET), None, "named once per period");
    checks.report(&"c", false).unwrap();

    // "c" joins again with a new service: its key names the new node, which has no failure to forgive.
    tx.send(Change::Insert("c", Backend::new("c", false)))
        .unwrap();
    balance.ready().await.unwrap().call(()).await.unwrap();
    assert_eq!(balance.node(&"c").map(|n| n.penalty), Some(0.0));
    checks.report(&"c", false).unwrap();
    assert!(balance.node(&"c").is_some_and(|n| n.penalty > 0.0));
    sleep(QUIET + ROUND).await;

    // "c" leaves, due: it is not named, and its report is refused.
    tx.send(Change::Remove("c")).unwrap();
    balance.ready().await.unwrap().call(()).await.unwrap();
    assert!(balance.node(&"c").is_none());
    assert_eq!(checks.due(QUIET), None);
    assert_eq!(checks.report(&"c", true), Err(CheckError::UnknownKey));
    assert_eq!(checks.report(&"z", false), Err(CheckError::UnknownKey));

    // A node added on the balancer directly has no key: due, it is not named.
    let b = Arc::clone(balance.balancer());
    b.add(77).unwrap();
    assert!(balance.set_lame_duck(&"a", true));
    let lease = b.acquire(monotonic_now(), &mut Rng::with_seed(1)).unwrap();
    assert_eq!(lease.node_id(), 77);
    b.release(lease, Outcome::Failure, monotonic_now()).unwrap();
    assert!(balance.set_lame_duck(&"a", false));
    sleep(QUIET + ROUND).await;
    assert_eq!(checks.due(QUIET), None);
    // It was due: a quiet of 0 names any avoided node, whenever it was last named.
    assert_eq!(b.due_check(monotonic_now(), 0), Some(77));
    assert_eq!(checks.report(&"a", true), Ok(()), "a is still a member");
}

#[test]
fn the_weighted_family_has_no_checks() {
    let svc = Backend::new("a", false);
    let mut balance = Builder::new(Config::cascade())
        .classify(ByResult)
        .build_list([("a", svc)])
        .unwrap();
    let checks = balance.checks();
    assert_eq!(checks.report(&"a", false), Err(CheckError::NotLowestScore));
    assert_eq!(checks.due(Duration::ZERO), None);
    assert_eq!(checks.report(&"b", true), Err(CheckError::UnknownKey));
}
