//! Multi-thread stress of the waiting acquires (`weir::rt`, "Waiting for room"): eight threads contend for
//! the four leases of two nodes with a fixed limit of 2. Most threads wait blocking with short or long
//! deadlines, two wait through the async form and end the wait at their deadline, one by dropping the
//! future (a cancellation: a lease handed to a dropped future must go back), the other with
//! `Wait::time_out`, and now and then a thread tries the fail-fast acquire. Afterwards every lease must
//! be accounted for exactly, nothing may be in flight or left in the queue, no thread may have hung, no
//! more than four leases may ever have been held at once, and the refusals and the waits' outcomes in
//! `Stats` must match what the callers saw.

mod common;
use common::conservation::check_snapshot;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};
use weir::limit::{FixedLimit, LimitAlgorithm};
use weir::rt::{HeapLeaseGuard, WaitError};
use weir::{Config, HeapBalancer, Outcome, Rng};

const THREADS: usize = 8;
/// Threads `ASYNC_FROM..` wait through `acquire_async`; the others through `acquire_wait`.
const ASYNC_FROM: usize = 6;
/// The async thread that ends its waits with `Wait::time_out` (the other drops the future).
const TIME_OUT: usize = 7;
const NODES: u64 = 2;
const LIMIT: u32 = 2;
const ROUNDS: u64 = 2_000;
/// How long a lease is held: longer than a short deadline, so that short waits time out.
const HOLD: Duration = Duration::from_micros(150);
const SHORT: Duration = Duration::from_micros(100);
const LONG: Duration = Duration::from_millis(100);
/// Far beyond the few hundred milliseconds the run takes: only a hung waiter reaches it.
const HUNG: Duration = Duration::from_secs(60);

/// What one thread saw.
#[derive(Clone, Copy, Debug, Default)]
struct Report {
    /// Leases the waiting acquires returned.
    waited: u64,
    /// Leases the fail-fast acquire returned.
    fast: u64,
    /// Released with `Success` (the others with `Failure`).
    successes: u64,
    failures: u64,
    /// `WaitError::Timeout` answers (blocking, and `time_out`), `WaitError::Shed` ones, and futures
    /// dropped at their deadline.
    timeouts: u64,
    /// Of those, the `WaitError::Timeout` answers: refusals.
    timeout_answers: u64,
    /// Fail-fast refusals.
    refused: u64,
}

/// Wakes the thread that polls.
struct Unpark(thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `acquire_async` until it is ready or `deadline` passes; then drops it (the cancellation the
/// caller's timer would do, `None`), or with `time_out` ends it as timed out.
fn wait_async(
    b: &HeapBalancer,
    deadline: Instant,
    time_out: bool,
) -> Option<Result<HeapLeaseGuard<'_>, WaitError>> {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut wait = b.acquire_async();
    loop {
        if let Poll::Ready(r) = Pin::new(&mut wait).poll(&mut cx) {
            return Some(r);
        }
        let now = Instant::now();
        if now >= deadline {
            return time_out.then(|| wait.time_out());
        }
        thread::park_timeout(deadline - now);
    }
}

fn worker(b: &HeapBalancer, t: usize, holding: &AtomicU64, peak: &AtomicU64) -> Report {
    let mut rng = Rng::with_seed(t as u64 + 1);
    let mut r = Report::default();
    for round in 0..ROUNDS {
        let deadline = Instant::now() + if rng.bool() { SHORT } else { LONG };
        let lease = if round % 16 == 15 {
            match b.acquire_guard() {
                Ok(lease) => {
                    r.fast += 1;
                    lease
                }
                Err(_) => {
                    r.refused += 1;
                    continue;
                }
            }
        } else {
            let got = if t >= ASYNC_FROM {
                wait_async(b, deadline, t == TIME_OUT)
            } else {
                Some(b.acquire_wait(deadline))
            };
            match got {
                Some(Ok(lease)) => {
                    r.waited += 1;
                    lease
                }
                Some(Err(WaitError::Timeout)) => {
                    assert!(Instant::now() >= deadline, "thread {t}: timed out early");
                    r.timeouts += 1;
                    r.timeout_answers += 1;
                    continue;
                }
                // A waiter late to wake at its deadline may be shed first, once the queue serves a
                // newcomer that came 100 ms after it: counted as a timeout, and answered as one.
                Some(Err(WaitError::Shed)) => {
                    r.timeouts += 1;
                    r.timeout_answers += 1;
                    continue;
                }
                None => {
                    r.timeouts += 1;
                    continue;
                }
                Some(Err(e)) => panic!("thread {t}: unexpected {e}"),
            }
        };
        assert!((1..=NODES).contains(&lease.node_id()));
        let now_held = holding.fetch_add(1, Ordering::SeqCst) + 1;
        peak.fetch_max(now_held, Ordering::SeqCst);
        thread::sleep(HOLD);
        holding.fetch_sub(1, Ordering::SeqCst);
        let outcome = if rng.u32(..10) == 0 {
            r.failures += 1;
            Outcome::Failure
        } else {
            r.successes += 1;
            Outcome::Success
        };
        lease.complete(outcome).unwrap();
    }
    r
}

#[test]
fn waiters_contend_for_four_leases() {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: LIMIT }),
        max_waiters: THREADS as u32,
        ..Config::default()
    };
    let b = Arc::new(HeapBalancer::with_capacity(NODES as usize, config).unwrap());
    for id in 1..=NODES {
        b.add(id).unwrap();
    }
    let holding = Arc::new(AtomicU64::new(0));
    let peak = Arc::new(AtomicU64::new(0));
    let (done, reports) = mpsc::channel();
    for t in 0..THREADS {
        let (b, holding, peak, done) = (
            Arc::clone(&b),
            Arc::clone(&holding),
            Arc::clone(&peak),
            done.clone(),
        );
        // Detached, not scoped: a hung waiter must fail the test, not hang it.
        thread::spawn(move || {
            let r = worker(&b, t, &holding, &peak);
            done.send((t, r)).unwrap();
        });
    }
    drop(done);
    let mut total = Report::default();
    for _ in 0..THREADS {
        let (t, r) = reports
            .recv_timeout(HUNG)
            .expect("a waiting thread hung (or panicked)");
        assert_eq!(
            r.waited + r.fast + r.timeouts + r.refused,
            ROUNDS,
            "thread {t}: {r:?}"
        );
        total.waited += r.waited;
        total.fast += r.fast;
        total.successes += r.successes;
        total.failures += r.failures;
        total.timeouts += r.timeouts;
        total.timeout_answers += r.timeout_answers;
        total.refused += r.refused;
    }

    let st = b.stats();
    // Every lease granted is accounted for: the callers' leases, each released with its outcome, and the
    // leases handed to futures that were dropped at the same moment, each given back as `Ignored`.
    assert_eq!(st.in_flight, 0, "{st:?}");
    assert_eq!(st.released_stale, 0, "{st:?}");
    assert_eq!(st.acquired, st.released_total(), "{st:?}");
    assert_eq!(
        st.released(Outcome::Success),
        total.successes,
        "{st:?} {total:?}"
    );
    assert_eq!(
        st.released(Outcome::Failure),
        total.failures,
        "{st:?} {total:?}"
    );
    assert_eq!(st.released(Outcome::Dropped), 0, "{st:?}");
    assert_eq!(
        st.acquired,
        total.waited + total.fast + st.released(Outcome::Ignored),
        "{st:?} {total:?}"
    );
    // Refusals are the answers without a lease, exactly: the fail-fast refusals and the time-outs answered
    // (a wait that got its lease in the end is none, and a dropped future answered nothing).
    assert_eq!(
        st.rejected_all_busy,
        total.refused + total.timeout_answers,
        "{st:?} {total:?}"
    );
    assert_eq!(st.rejected_no_active, 0, "{st:?}");
    // Every wait ended once: granted, timed out or cancelled. A dropped future was cancelled unless a
    // lease had been handed to it (granted, and given back as `Ignored`); a timed-out answer was a wait
    // unless its deadline passed before it could queue.
    assert_eq!(st.waiting, 0, "{st:?}");
    assert_eq!(
        st.waits,
        st.waits_granted + st.waits_timed_out + st.waits_cancelled,
        "{st:?}"
    );
    let dropped = total.timeouts - total.timeout_answers;
    assert_eq!(
        st.waits_cancelled + st.released(Outcome::Ignored),
        dropped,
        "{st:?} {total:?}"
    );
    assert!(
        st.waits_timed_out <= total.timeout_answers,
        "{st:?} {total:?}"
    );
    assert!(
        st.waits_granted <= total.waited + st.released(Outcome::Ignored),
        "{st:?} {total:?}"
    );
    assert!(st.waits_timed_out > 0 && st.waits_granted > 0, "{st:?}");
    // Contention was real: waits timed out, and the limit held.
    assert!(total.timeouts > 0, "no wait ever timed out: {total:?}");
    assert!(total.waited > 0, "no wait ever succeeded: {total:?}");
    let peak = peak.load(Ordering::SeqCst);
    assert!(
        (1..=NODES * u64::from(LIMIT)).contains(&peak),
        "{peak} leases held at once"
    );
    for n in b.nodes(weir::rt::monotonic_now()) {
        assert_eq!(n.in_flight, 0, "{n:?}");
        check_snapshot(&n);
    }
    // Nobody is left in the queue: a waiting acquire with a deadline already past is served at once (with
    // a waiter left, it would queue behind it and time out).
    let last = b.acquire_wait(Instant::now()).expect("the queue is empty");
    last.complete(Outcome::Success).unwrap();
    assert_eq!(b.stats().in_flight, 0);
}
