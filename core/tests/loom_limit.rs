//! Loom models of the limit algorithms' lock-free updates: two samples racing on one node's state.
//!
//! Run with `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p weir-lb --release --test
//! loom_limit`.
//!
//! Single-word algorithms (AIMD, CIAD) must apply each sample exactly once, as some serial order would.
//! Multi-word algorithms (Vegas, Gradient2, the windowed wrapper) may interleave their words, but the
//! limit must stay within bounds, agree with what the state reports, and a window must close once.
#![cfg(loom)]

use loom::sync::Arc;
use loom::thread;
use weir::limit::{
    AimdLimit, CiadLimit, Gradient2Limit, InnerAlgorithm, KneeLimit, Limit, LimitAlgorithm,
    LimitState, Sample, SampleWindow, VegasLimit, WindowedLimit,
};

fn model(preemptions: usize, f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(preemptions);
    builder.check(f);
}

fn sample(rtt_ns: u64, inflight: u32, dropped: bool, now_ns: u64) -> Sample {
    Sample {
        rtt_ns,
        inflight,
        dropped,
        now_ns,
        load: None,
        failed: false,
    }
}

/// Resets a fresh state, applies `before` serially, then races `a` (spawned) against `b`; returns what
/// each racer's update returned and the final limit.
fn race(algo: LimitAlgorithm, before: &[Sample], a: Sample, b: Sample) -> (u32, u32, u32) {
    let state = Arc::new(LimitState::new());
    algo.reset(&state);
    for s in before {
        algo.update(&state, s, 0);
    }
    let st = state.clone();
    let t = thread::spawn(move || algo.update(&st, &a, 0));
    let got_b = algo.update(&state, &b, 0);
    let got_a = t.join().unwrap();
    (got_a, got_b, algo.limit(&state))
}

fn aimd() -> LimitAlgorithm {
    LimitAlgorithm::Aimd(AimdLimit {
        initial_limit: 20,
        min_limit: 1,
        ..AimdLimit::default()
    })
}

#[test]
fn aimd_two_successes_apply_exactly_once() {
    model(3, || {
        let ok = sample(1_000, 20, false, 1_000);
        let (a, b, end) = race(aimd(), &[], ok, ok);
        // 20 -> 21 -> 22 in either order; a lost update would end at 21.
        assert_eq!(end, 22);
        assert_eq!((a.min(b), a.max(b)), (21, 22));
    });
}

#[test]
fn aimd_success_and_drop_serialize() {
    model(3, || {
        let ok = sample(1_000, 20, false, 1_000);
        let drop = sample(1_000, 20, true, 1_000);
        let (a, b, end) = race(aimd(), &[], ok, drop);
        // Success first: 21, then trunc(21 * 0.9) = 18. Drop first: trunc(18.0) = 18, then 20 * 2 >= 18: 19.
        assert!(
            (a, b, end) == (21, 18, 18) || (a, b, end) == (19, 18, 19),
            "{a} {b} {end}"
        );
    });
}

#[test]
fn ciad_two_drops_apply_exactly_once() {
    model(3, || {
        let ciad = LimitAlgorithm::Ciad(CiadLimit::default());
        let drop = sample(1_000, 20, true, 1_000);
        let (a, b, end) = race(ciad, &[], drop, drop);
        // floor(20 * 0.9) = 18, floor(18 * 0.9) = floor(16.2) = 16.
        assert_eq!(end, 16);
        assert_eq!((a.min(b), a.max(b)), (16, 18));
    });
}

#[test]
fn knee_two_drops_apply_exactly_once() {
    model(3, || {
        let knee = LimitAlgorithm::Knee(KneeLimit::default());
        let drop = sample(1_000, 8, true, 1_000);
        let (a, b, end) = race(knee, &[], drop, drop);
        // 0.9 x min(8, 8) = 7.2, then 0.9 x 7.2 = 6.48 in either order; a lost update would end at 7.
        assert_eq!(end, 6);
        assert_eq!((a.min(b), a.max(b)), (6, 7));
    });
}

#[test]
fn knee_a_slow_success_racing_a_drop_stays_in_bounds() {
    model(3, || {
        // A fresh node's limit of 8 (the default's is 20), as the figures below assume.
        let knee = LimitAlgorithm::Knee(KneeLimit {
            initial_limit: 8,
            ..KneeLimit::default()
        });
        // 16 full calls at 1 us teach the baseline and grow the limit 8 -> 10 (slow start, until the
        // 8 in flight are below 0.9 x 10); then a success at 1.8 us (below twice the baseline on its
        // own, smoothed 1.05 us: below the hold band, so it grows the limit) races a drop.
        let fast: Vec<Sample> = (0..16)
            .map(|i| sample(1_000, 8, false, 1_000 + i))
            .collect();
        let slow = sample(1_800, 24, false, 2_000);
        let drop = sample(1_000, 24, true, 2_000);
        let (a, b, end) = race(knee, &fast, slow, drop);
        for v in [a, b, end] {
            assert!((1..=1_000).contains(&v), "{a} {b} {end}");
        }
        // Serially: grow to 11 then cut to 9.9, or cut to 9 then grow by 1/9 (the slow start is over).
        assert_eq!(end, 9, "{a} {b}");
    });
}

#[test]
fn gradient2_racing_samples_stay_in_bounds() {
    model(3, || {
        let g2 = LimitAlgorithm::Gradient2(Gradient2Limit {
            min_limit: 1,
            max_limit: 30,
            ..Gradient2Limit::default()
        });
        let fast = sample(1_000, 20, false, 1_000);
        let slow = sample(50_000, 20, false, 1_000);
        let (a, b, end) = race(g2, &[fast], fast, slow);
        for v in [a, b, end] {
            assert!((1..=30).contains(&v), "{a} {b} {end}");
        }
        // Serially, from 20.8 either order moves the estimate by less than 1 per sample.
        assert!((19..=22).contains(&end), "{end}");
    });
}

#[test]
fn vegas_racing_success_and_drop_stay_in_bounds() {
    model(3, || {
        let vegas = LimitAlgorithm::Vegas(VegasLimit {
            initial_limit: 10,
            max_limit: 20,
            ..VegasLimit::default()
        });
        let base = sample(10_000, 10, false, 1_000);
        let queued = sample(50_000, 10, false, 1_000);
        let drop = sample(20_000, 10, true, 1_000);
        let (a, b, end) = race(vegas, &[base], queued, drop);
        for v in [a, b, end] {
            assert!((1..=20).contains(&v), "{a} {b} {end}");
        }
        // Both samples decrease by LOG10 once: 10 -> 9 -> 8 in either order.
        assert_eq!(end, 8);
    });
}

fn windowed(window: SampleWindow) -> LimitAlgorithm {
    LimitAlgorithm::Windowed(WindowedLimit {
        inner: InnerAlgorithm::Aimd(AimdLimit {
            initial_limit: 10,
            min_limit: 1,
            ..AimdLimit::default()
        }),
        min_window_ns: 100,
        max_window_ns: 100,
        min_samples: 1,
        min_rtt_threshold_ns: 0,
        window,
    })
}

/// Two samples past the window's end race: exactly one closes it, so the inner AIMD moves once.
fn window_closes_once(window: SampleWindow) {
    model(3, move || {
        // The first sample closes the first window (next close after t = 101) and moves AIMD to 11.
        let first = sample(10, 10, false, 1);
        let (a, b, end) = race(
            windowed(window),
            &[first],
            sample(10, 10, false, 200),
            sample(10, 10, false, 201),
        );
        // The closer returns 12; the other returns the limit it then saw, 11 or already 12.
        assert_eq!(end, 12, "{a} {b}");
        assert_eq!(a.max(b), 12);
        assert!((11..=12).contains(&a.min(b)), "{a} {b}");
    });
}

#[test]
fn average_window_closes_once() {
    window_closes_once(SampleWindow::Average);
}

#[test]
fn percentile_window_closes_once() {
    window_closes_once(SampleWindow::Percentile {
        percentile: 0.5,
        capacity: 2,
    });
}

/// A window closes while the other thread's sample is mid-add, then the main thread tries to close the
/// next window. A close still in progress on the other thread makes that attempt a no-op (as Java's
/// `tryLock` losers), so one or two closes happen, each moving the inner AIMD exactly once; the late
/// sample never corrupts a window, and once both threads are done the next window closes normally.
fn two_closes(window: SampleWindow) {
    model(3, move || {
        let algo = windowed(window);
        let state = Arc::new(LimitState::new());
        algo.reset(&state);
        algo.update(&state, &sample(10, 10, false, 1), 0); // 10 -> 11, next close after 101
        let st = state.clone();
        let t = thread::spawn(move || algo.update(&st, &sample(10, 10, false, 200), 0));
        let first = algo.update(&state, &sample(10, 10, false, 201), 0);
        // Past any close time set above (at most 201 + 100), unless a close is still in progress.
        let second = algo.update(&state, &sample(10, 10, false, 400), 0);
        let other = t.join().unwrap();
        let end = algo.limit(&state);
        assert!((12..=13).contains(&end), "{first} {second} {other} {end}");
        for v in [first, second, other] {
            assert!((11..=end).contains(&v), "{first} {second} {other} {end}");
        }
        // Every close has finished: the next close time is at most 400 + 100.
        assert_eq!(algo.update(&state, &sample(10, 10, false, 501), 0), end + 1);
    });
}

#[test]
fn average_window_two_closes() {
    two_closes(SampleWindow::Average);
}

#[test]
fn percentile_window_two_closes() {
    two_closes(SampleWindow::Percentile {
        percentile: 0.5,
        capacity: 2,
    });
}
