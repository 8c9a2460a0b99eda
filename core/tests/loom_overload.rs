//! Loom models of the overload protocols, through the public API only.
//!
//! Run with `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p weir-lb --release --test
//! loom_overload`.
//!
//! - The shared [`Backoff`]: its interval and success streak live in one word updated by compare-and-swap
//!   while its metrics are separate counters; racing calls must leave the state of some sequential order,
//!   hand each caller the delay of that order, and count every call exactly once.
//! - The rolling window's rotation, through the [`Shedder`]: a writer whose `now` is a whole window old
//!   races a writer that reuses its bucket for a new epoch. The old record (a response time and a pass, two
//!   lanes) is either written again into the newest bucket or replaced with its bucket, never half of each
//!   (this model found the split: a record whose first lane stayed in the replaced epoch while its second
//!   was moved to the new one). A reader racing both never sees a pass without its response time.
//! - The window's jump back, through the [`Shedder`]: after a write at a wild `now` (`u64::MAX`), two sane
//!   writers race to move the window back (each may sweep the ring and rewind `last`) while a reader
//!   reads at a sane time. Both records are conserved, whole, in whichever bucket they land, and no reading
//!   at a sane time (nor, afterwards, at the wild one) ever includes the wild record.
//!
//! - The shared [`RetryBudget`]: callers racing for its last retry while others count requests. Every
//!   call is counted exactly once (admitted or denied, in the totals and in the window), and the budget
//!   is exceeded by at most the callers that raced past its check together, as documented.
//!
//! Each model also checks that its executions reached every outcome it names.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use weir::{
    backoff::BackoffConfig, backoff::Delay, backoff::Jitter, backoff::Step, overload::RetryBudget,
    overload::RetryBudgetConfig, overload::ShedderConfig, Backoff, Rng, Shedder,
};

/// Which outcomes the models reached, over all their executions: each must be reached, or the model did
/// not explore the race it claims to.
static SEEN: [AtomicUsize; 8] = [const { AtomicUsize::new(0) }; 8];

fn seen(i: usize) {
    SEEN[i].fetch_add(1, SeqCst);
}

fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.max_branches = 100_000;
    builder.check(f);
}

/// initial 10, ×2 up, ×0.5 down after 2 consecutive successes, cap 1000, no jitter.
fn backoff() -> Backoff {
    Backoff::new(BackoffConfig {
        initial_ns: 10,
        max_ns: 1000,
        up_multiplier: 2.0,
        down_multiplier: 0.5,
        down_threshold: 2,
        jitter: Jitter::None,
    })
    .unwrap()
}

fn d(ns: u64, step: Step) -> Delay {
    Delay { ns, step }
}

#[test]
fn backoff_racing_failures() {
    model(3, || {
        let b = Arc::new(backoff());
        b.on_failure(&mut Rng::with_seed(0)); // 10
        let t = {
            let b = b.clone();
            thread::spawn(move || b.on_failure(&mut Rng::with_seed(1)))
        };
        let mine = b.on_failure(&mut Rng::with_seed(2));
        let theirs = t.join().unwrap();
        // Either order: 10 → 20 → 40; each caller gets one of the two steps.
        let mut got = [mine.ns, theirs.ns];
        got.sort_unstable();
        assert_eq!(got, [20, 40]);
        assert_eq!(b.interval_ns(), 40);
        let m = b.stats();
        assert_eq!(
            (m.invocations, m.went_up, m.went_down, m.slept, m.sleep_ns),
            (3, 3, 0, 3, 70)
        );
    });
}

#[test]
fn backoff_success_races_failure() {
    model(3, || {
        let b = Arc::new(backoff());
        let mut rng = Rng::with_seed(0);
        b.on_failure(&mut rng); // 10
        b.on_failure(&mut rng); // 20, streak 0
        assert_eq!(b.on_success(&mut rng), d(20, Step::Hold)); // streak 1
        let t = {
            let b = b.clone();
            thread::spawn(move || b.on_success(&mut Rng::with_seed(1)))
        };
        let fail = b.on_failure(&mut Rng::with_seed(2));
        let ok = t.join().unwrap();
        let m = b.stats();
        match ok.step {
            // Success first: its streak completes, 20 → 10; then the failure doubles it: 20.
            Step::Down => {
                seen(2);
                assert_eq!((ok, fail), (d(10, Step::Down), d(20, Step::Up)));
                assert_eq!(b.interval_ns(), 20);
                assert_eq!(m.went_down, 1);
            }
            // Failure first: 40 and the streak restarts; the success only holds.
            _ => {
                seen(3);
                assert_eq!((ok, fail), (d(40, Step::Hold), d(40, Step::Up)));
                assert_eq!(b.interval_ns(), 40);
                assert_eq!(m.went_down, 0);
            }
        }
        assert_eq!((m.invocations, m.went_up, m.slept), (5, 3, 5));
        assert_eq!(m.sleep_ns, 10 + 20 + 20 + ok.ns + fail.ns);
    });
    assert!(
        SEEN[2].load(SeqCst) > 0 && SEEN[3].load(SeqCst) > 0,
        "{SEEN:?}"
    );
}

const MS: u64 = 1_000_000;

/// Two buckets of 10 ms: epoch 2 reuses epoch 0's bucket.
fn shedder() -> Shedder {
    Shedder::new(ShedderConfig {
        window_ns: 20 * MS,
        buckets: 2,
        cpu_threshold: 900,
        cool_off_ns: 0,
    })
    .unwrap()
}

/// The late writer: admitted at 0, done at 5 ms (epoch 0), response time 5 ms. The new epoch's writer:
/// admitted at 20 ms, done at 21 ms (epoch 2, the same bucket), response time 1 ms.
fn race(s: &Arc<Shedder>) -> thread::JoinHandle<()> {
    let late = s.allow(0, 0).unwrap();
    let new = s.allow(0, 20 * MS).unwrap();
    let writer = {
        let s = s.clone();
        thread::spawn(move || s.success(late, 5 * MS).unwrap())
    };
    s.success(new, 21 * MS).unwrap();
    writer
}

#[test]
fn window_rotation_keeps_lanes_together() {
    model(3, || {
        let s = Arc::new(shedder());
        race(&s).join().unwrap();
        // At 30 ms the window's complete bucket is epoch 2. The late pass was either written again into
        // it (it found the bucket taken by epoch 2) or replaced with its bucket: both lanes or neither.
        let st = s.stats(30 * MS);
        match (st.max_pass, st.min_rt_ms) {
            (1, 1) => seen(0),
            (2, 3) => seen(1),
            _ => panic!("a record was split between buckets: {st:?}"),
        }
        assert_eq!((st.succeeded, st.in_flight), (2, 0));
    });
    assert!(
        SEEN[0].load(SeqCst) > 0 && SEEN[1].load(SeqCst) > 0,
        "{SEEN:?}"
    );
}

#[test]
fn window_reader_never_sees_a_pass_without_its_response_time() {
    model(1, || {
        let s = Arc::new(shedder());
        let reader = {
            let s = s.clone();
            thread::spawn(move || {
                let st = s.stats(30 * MS);
                // An average is never 0 (a count read without its sum), and two passes are always read
                // complete (5 + 1 ms over 2 → 3).
                assert_ne!(st.min_rt_ms, 0, "{st:?}");
                if st.max_pass == 2 {
                    assert_eq!(st.min_rt_ms, 3, "{st:?}");
                }
            })
        };
        race(&s).join().unwrap();
        reader.join().unwrap();
    });
}

/// `(max_pass, min_rt_ms)` at `now`.
fn window(s: &Shedder, now: u64) -> (u64, u64) {
    let st = s.stats(now);
    (st.max_pass, st.min_rt_ms)
}

#[test]
fn window_rewind_keeps_records_whole() {
    // One preemption: 25 s here (two take minutes, and passed when tried).
    model(1, || {
        let s = Arc::new(shedder());
        // The sane records: R done at 3 ms (epoch 0, 3 ms), S done at 10 ms (epoch 1, 5 ms).
        let (rec_r, rec_s) = (s.allow(0, 0).unwrap(), s.allow(0, 5 * MS).unwrap());
        // The wild records, 1 ms each, so that any reading that includes one has an average no sane
        // combination has: at epoch W = u64::MAX / 10 ms (R's bucket, as W is even) and at W - 1 (S's),
        // so that a reading at a sane time taken as W's time would find one in a complete bucket.
        for end in [u64::MAX - 10 * MS, u64::MAX] {
            let wild = s.allow(0, end - MS).unwrap();
            s.success(wild, end).unwrap();
        }
        let writer = {
            let s = s.clone();
            thread::spawn(move || s.success(rec_r, 3 * MS).unwrap())
        };
        let reader = {
            let s = s.clone();
            thread::spawn(move || {
                // At 20 ms (epoch 2, complete bucket 1): before the rewind a fresh window; after it
                // nothing, R, S or both, where a pass is never read without its response time (one pass
                // with both response times, 8 ms, is a reading between two records). Never the wild
                // record, not even its response time alone (4, 6, 9 ms, or a 2-pass average of 5 ms).
                let got = window(&s, 20 * MS);
                assert!(
                    matches!(got, (1, 1000) | (1, 3) | (1, 5) | (1, 8) | (2, 4)),
                    "{got:?}"
                );
            })
        };
        s.success(rec_s, 10 * MS).unwrap();
        writer.join().unwrap();
        reader.join().unwrap();
        // R rewound first (to epoch 0) and S then raised the window: each in its own bucket. Or S rewound
        // first (to epoch 1) and R, a late writer, joined it there.
        match (window(&s, 10 * MS), window(&s, 20 * MS)) {
            ((1, 3), (1, 5)) => seen(4),
            ((1, 1000), (2, 4)) => seen(5),
            got => panic!("a record was split or lost in the rewind: {got:?}"),
        }
        // The wild records are gone, also at their own time.
        assert_eq!(window(&s, u64::MAX), (1, 1000));
        assert_eq!(s.stats(u64::MAX).succeeded, 4);
    });
    assert!(
        SEEN[4].load(SeqCst) > 0 && SEEN[5].load(SeqCst) > 0,
        "{SEEN:?}"
    );
}

/// A budget of 20 % and no floor over two buckets, with 5 requests counted: exactly one retry available.
fn one_retry_left() -> RetryBudget {
    let b = RetryBudget::new(RetryBudgetConfig {
        ratio: 0.2,
        per_second: 0.0,
        buckets: 2,
        ..RetryBudgetConfig::default()
    })
    .unwrap();
    (0..5).for_each(|_| b.request(MS));
    b
}

#[test]
fn retry_budget_counts_every_racing_call_once() {
    model(3, || {
        let b = Arc::new(one_retry_left());
        let racer = {
            let b = b.clone();
            thread::spawn(move || b.try_retry(MS).is_ok())
        };
        let counter = {
            let b = b.clone();
            thread::spawn(move || b.request(MS))
        };
        let mine = b.try_retry(MS).is_ok();
        let theirs = racer.join().unwrap();
        counter.join().unwrap();
        let admitted = u64::from(mine) + u64::from(theirs);
        let st = b.stats(MS);
        // Every call counted once, in the totals and in the window, whatever the interleaving.
        assert_eq!((st.retries, st.denied), (admitted, 2 - admitted), "{st:?}");
        assert_eq!((st.requests, st.window_requests), (6, 6), "{st:?}");
        assert_eq!(st.window_retries, admitted, "{st:?}");
        // At least the one retry the budget held. Two when the 6th request landed first (a budget of
        // 1.2), or when a caller checked the budget before the other's retry landed: the documented
        // overshoot, at most one per concurrent caller.
        match admitted {
            1 => seen(6),
            2 => seen(7),
            _ => panic!("the retry that was available was refused to both: {st:?}"),
        }
        // The 6th request raised the budget to 1.2: one more retry only if one was not used yet.
        assert_eq!(st.available, 2 - admitted, "{st:?}");
    });
    assert!(
        SEEN[6].load(SeqCst) > 0 && SEEN[7].load(SeqCst) > 0,
        "{SEEN:?}"
    );
}
