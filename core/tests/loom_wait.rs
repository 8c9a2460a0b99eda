//! Loom models of the waiting acquires (`rt::wait`, over the queue of `rt::queue`): no lost wake-up, no
//! lost or leaked lease, and a shed waiter answered and woken.
//!
//! Run with `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p weir-lb --release --test
//! loom_wait`.
//!
//! The models run the real code paths: `acquire_wait`, `acquire_async` (polled by a `block_on` over
//! loom's park and unpark),
//! `release`, `add` and the future's drop, over a tiny balancer built inside the model. Under
//! `cfg(loom)` the queue's lock and the blocked waiters' condition variables are loom's (they come
//! through `internal::sync`), so loom explores the interleavings of the lock with the atomics. A waiter
//! whose wake-up is lost blocks forever; loom then reports a deadlock, which fails the model. (loom has
//! no clock: a condition variable's timed wait is an untimed wait under loom, so the models give their
//! waiters deadlines that never pass, and a lost wake-up cannot hide behind a time-out.)
//!
//! The guards release at `monotonic_now`, a clock that moves from one of loom's replays of a schedule
//! to the next; a model must take the same path in every replay, so the waiters here release as
//! `Ignored` (which records nothing dated), and the waiting layer dates its own acquires and joins at a
//! time the model sets under `cfg(loom)` (`weir::rt::set_loom_clock`, 0 unless it does: the shedding
//! model moves it between two joins it orders itself). For the same reason the fast path draws from a fresh generator under loom rather
//! than the thread's (loom's threads share one OS thread, and its thread-locals).
//!
//! What loom cannot model, and how the models stand in for it: loom treats `SeqCst` loads, stores and
//! read-modify-writes as `AcqRel` (its README: "`SeqCst` accesses ... are regarded as `AcqRel`";
//! `fence(SeqCst)` is supported). The release side of the protocol is exactly such a pair of accesses:
//! the `SeqCst` decrement of the node's control word and the `SeqCst` load of the waiter count. Under
//! `cfg(loom)`, `Waiters::wake` therefore issues a `fence(SeqCst)` before that load: in C++20 the pair
//! orders the decrement before the load in the `SeqCst` total order exactly as the fence does, for the
//! store-buffering pattern at hand (see `rt/queue.rs`, "Memory ordering"), and loom checks the fence. The
//! joiner's side (`SeqCst` increment, `fence(SeqCst)`, then its reads) is modeled as it is. The two
//! protocol-only models at the end show that loom does catch the lost wake-up when the joiner's fence
//! is missing. The model of a node entering rotation (`add_races_a_join`) runs under the fence that
//! `Waiting::entered` issues before its load in every build (the node is published with `AcqRel`, not
//! `SeqCst`: see `rt/queue.rs`, "Memory ordering").
#![cfg(loom)]

use loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering::*};
use loom::sync::Arc;
use loom::thread;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};
use weir::{
    balance::Stats, limit::FixedLimit, limit::LimitAlgorithm, rt::Waiters, Balancer, Config,
    NodeSlot, Outcome, Rng,
};

/// A balancer over a vector of slots whose callers can wait for room.
type B = Balancer<Vec<NodeSlot>, Waiters>;

fn balancer(slots: usize, limit: u32) -> B {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit }),
        max_waiters: 4,
        ..Config::default()
    };
    B::with_waiting((0..slots).map(|_| NodeSlot::new()).collect(), config).unwrap()
}

fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.max_branches = 100_000;
    builder.check(f);
}

/// A deadline no model reaches (and under loom a timed wait never times out anyway).
fn never() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

/// Every lease accounted for and none in flight; every wait ended, and counted once.
fn assert_settled(st: &Stats, acquired: u64) {
    assert_eq!(st.in_flight, 0, "{st:?}");
    assert_eq!(st.acquired, acquired, "{st:?}");
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
}

/// Every waiter got its lease, whether it waited or not: no refusal, and every wait granted.
fn assert_all_served(st: &Stats, waiters: u64) {
    assert_eq!(
        (st.rejected_all_busy, st.rejected_no_active),
        (0, 0),
        "{st:?}"
    );
    assert!(st.waits <= waiters, "{st:?}");
    assert_eq!(st.waits, st.waits_granted, "{st:?}");
}

/// The race of the module docs, blocking form: a waiter joins while the only slot is released. Either
/// the waiter's own drain sees the free slot, or the release sees the waiter and hands it the slot; if
/// neither, the waiter blocks forever and loom reports the deadlock.
#[test]
fn release_races_a_blocking_join() {
    model(3, || {
        let b = Arc::new(balancer(1, 1));
        b.add(1).unwrap();
        let held = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
        let waiter = {
            let b = b.clone();
            thread::spawn(move || {
                let lease = b.acquire_wait(never()).expect("a lease, never a time-out");
                assert_eq!(lease.node_id(), 1);
                lease.complete(Outcome::Ignored).unwrap();
            })
        };
        b.release(held, Outcome::Success, 0).unwrap();
        waiter.join().unwrap();
        let st = b.stats();
        assert_settled(&st, 2);
        assert_all_served(&st, 1);
        assert_eq!(st.released(Outcome::Ignored), 1);
    });
}

/// The smallest executor, over loom's threads: polls `f`, parking between wakes; its waker unparks. A
/// wake-up that nobody sends leaves the thread parked forever, which loom reports.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(std::sync::Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        thread::park();
    }
}

/// The same race, async form: the future is polled by `block_on` above, so a wake-up the release
/// forgets leaves the task parked forever.
#[test]
fn release_races_an_async_join() {
    model(3, || {
        let b = Arc::new(balancer(1, 1));
        b.add(1).unwrap();
        let held = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
        let waiter = {
            let b = b.clone();
            thread::spawn(move || {
                let lease = block_on(b.acquire_async()).unwrap();
                lease.complete(Outcome::Ignored).unwrap();
            })
        };
        b.release(held, Outcome::Success, 0).unwrap();
        waiter.join().unwrap();
        assert_settled(&b.stats(), 2);
        assert_all_served(&b.stats(), 1);
    });
}

/// A node entering rotation while a waiter joins (node 1's only slot stays held throughout): the waiter
/// gets node 2, whichever goes first. Runs under the stand-in fence (see the module docs).
#[test]
fn add_races_a_join() {
    model(2, || {
        let b = Arc::new(balancer(2, 1));
        b.add(1).unwrap();
        let held = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
        let waiter = {
            let b = b.clone();
            thread::spawn(move || b.acquire_wait(never()).map(|lease| lease.node_id()))
        };
        b.add(2).unwrap();
        assert_eq!(waiter.join().unwrap(), Ok(2));
        b.release(held, Outcome::Success, 0).unwrap();
        assert_settled(&b.stats(), 2);
        assert_all_served(&b.stats(), 1);
    });
}

/// A future that joined is dropped while the slot it waits for is released: whether the release came
/// first (the future was served at once), handed it the lease (the drop gives it back, as `Ignored`), or
/// came after it left, no lease is lost or leaked and the queue is empty after.
#[test]
fn drop_races_a_release() {
    model(3, || {
        let b = Arc::new(balancer(1, 1));
        b.add(1).unwrap();
        let held = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
        let waiter = {
            let b = b.clone();
            thread::spawn(move || {
                let mut wait = pin!(b.acquire_async());
                let first = wait.as_mut().poll(&mut Context::from_waker(Waker::noop()));
                match first {
                    // Served at once: the guard releases as Ignored when it goes.
                    Poll::Ready(r) => assert_eq!(r.map(|lease| lease.node_id()), Ok(1)),
                    Poll::Pending => {}
                }
            })
        };
        b.release(held, Outcome::Success, 0).unwrap();
        waiter.join().unwrap();
        let st = b.stats();
        assert_settled(&st, st.acquired);
        // Dropped, never answered: a wait granted or cancelled, never a refusal.
        assert_eq!(
            (st.rejected_all_busy, st.rejected_no_active),
            (0, 0),
            "{st:?}"
        );
        assert!(st.waits <= 1, "{st:?}");
        // The queue is empty and the slot free: a waiting acquire is served at once.
        let again = b.acquire_wait(Instant::now()).expect("the slot is free");
        drop(again);
        assert_eq!(b.stats().in_flight, 0);
    });
}

/// Two waiters join while two slots are released: both are served (each release, or each join, drains
/// for the front waiter), none waits forever.
#[test]
fn two_releases_race_two_joins() {
    model(1, || {
        let b = Arc::new(balancer(1, 2));
        b.add(1).unwrap();
        let mut rng = Rng::with_seed(1);
        let held = [
            b.acquire(0, &mut rng).unwrap(),
            b.acquire(0, &mut rng).unwrap(),
        ];
        let waiters: Vec<_> = (0..2)
            .map(|_| {
                let b = b.clone();
                thread::spawn(move || {
                    let lease = b.acquire_wait(never()).unwrap();
                    lease.complete(Outcome::Ignored).unwrap();
                })
            })
            .collect();
        for lease in held {
            b.release(lease, Outcome::Success, 0).unwrap();
        }
        for w in waiters {
            w.join().unwrap();
        }
        assert_settled(&b.stats(), 4);
        assert_all_served(&b.stats(), 2);
    });
}

/// The protocol alone, over two words: `ctl` (a node's in-flight count, limit 1) and `count` (the
/// waiter count). The releaser frees the slot, then looks for a waiter; the joiner counts itself in,
/// then (with `joiner_fence`) fences, then looks for the free slot. Asserts that one of them sees the
/// other. The releaser's fence is the stand-in for its `SeqCst` pair (see the module docs).
fn protocol(joiner_fence: bool) {
    model(3, move || {
        let ctl = Arc::new(AtomicU64::new(1));
        let count = Arc::new(AtomicU64::new(0));
        let saw_waiter = Arc::new(AtomicBool::new(false));
        let releaser = {
            let (ctl, count, saw_waiter) = (ctl.clone(), count.clone(), saw_waiter.clone());
            thread::spawn(move || {
                ctl.fetch_sub(1, SeqCst);
                fence(SeqCst);
                if count.load(SeqCst) != 0 {
                    saw_waiter.store(true, Relaxed);
                }
            })
        };
        count.fetch_add(1, SeqCst);
        if joiner_fence {
            fence(SeqCst);
        }
        let saw_room = ctl.load(Relaxed) == 0;
        releaser.join().unwrap();
        assert!(
            saw_room || saw_waiter.load(Relaxed),
            "lost wake-up: the joiner saw no room and the releaser saw no waiter"
        );
    });
}

/// The protocol as the code has it: no lost wake-up.
#[test]
fn protocol_keeps_the_wake_up() {
    protocol(true);
}

/// Without the joiner's fence the store-buffering outcome is possible, and loom finds it: the models
/// above would catch the same mistake in the real code.
#[test]
#[should_panic(expected = "lost wake-up")]
fn protocol_without_the_joiners_fence_loses_it() {
    protocol(false);
}

/// A standing queue sheds the waiter it passes over: A (bounded) joined at 0; at twice the standing
/// interval B joins, blocking (bounded too), while the only slot is released. Whichever drain takes the
/// slot (the release's or B's join), either A is served (B had not joined yet: B then waits, and A's
/// lease, given back, serves it) or B is, and A is shed and answered at once: never both, never
/// neither, and no wake-up lost (B's condition variable, A's waker).
#[test]
fn a_grant_to_a_newcomer_sheds_the_oldest() {
    model(3, || {
        weir::rt::set_loom_clock(0);
        let b = Arc::new(balancer(1, 1));
        b.add(1).unwrap();
        let held = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
        let mut a = pin!(b.acquire_async().bounded());
        let woken = std::sync::Arc::new(Woken(std::sync::atomic::AtomicBool::new(false)));
        let waker = Waker::from(std::sync::Arc::clone(&woken));
        assert!(a
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending());
        weir::rt::set_loom_clock(2 * weir::rt::STANDING_NS);
        let newer = {
            let b = b.clone();
            thread::spawn(move || {
                let lease = b.acquire_wait(never()).expect("the newest is never shed");
                lease.complete(Outcome::Ignored).unwrap();
            })
        };
        b.release(held, Outcome::Success, 0).unwrap();
        // One of the two drains took the slot the release freed, for A or for B: A has its answer.
        let shed = match a.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(Ok(lease)) => {
                lease.complete(Outcome::Ignored).unwrap();
                false
            }
            Poll::Ready(Err(e)) => {
                assert_eq!(e, weir::rt::WaitError::Shed);
                true
            }
            Poll::Pending => panic!("the release answered nobody"),
        };
        // Served or shed, A's task was woken to pick its answer up.
        assert!(
            woken.0.load(std::sync::atomic::Ordering::SeqCst),
            "A was not woken"
        );
        newer.join().unwrap();
        let st = b.stats();
        assert_settled(&st, if shed { 2 } else { 3 });
        if shed {
            // B waited and was served; A waited and was shed, its answer a refusal.
            assert_eq!(st.waits, 2, "{st:?}");
            assert_eq!(
                (st.waits_granted, st.waits_timed_out, st.rejected_all_busy),
                (1, 1, 1),
                "{st:?}"
            );
        } else {
            // A was served; B waited for A's lease, or came after it and took the free slot at once.
            assert!((1..=2).contains(&st.waits), "{st:?}");
            assert_all_served(&st, 2);
        }
    });
}

/// A waker that records that it was called (the models poll on the model's own thread, so a plain
/// atomic will do).
struct Woken(std::sync::atomic::AtomicBool);

impl std::task::Wake for Woken {
    fn wake(self: std::sync::Arc<Self>) {
        self.0.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
