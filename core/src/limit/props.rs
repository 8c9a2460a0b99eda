//! Property tests over every algorithm: for any sample sequence the limit stays within the algorithm's
//! bounds and its estimate finite; drops never raise AIMD, CIAD or the knee limit, and successes never lower
//! the loss-only ones; runs are
//! deterministic under a seed; validation accepts exactly the initial limits within the bounds;
//! unvalidated parameters (NaN, infinities, min > max, a start out of bounds) never panic.

use super::*;
use proptest::prelude::*;
use std::vec::Vec;

const RAMP_OVER: u64 = 1 << 63;

/// The algorithm itself, or the one a windowed wrapper holds.
fn as_inner(a: &LimitAlgorithm) -> InnerAlgorithm {
    match *a {
        LimitAlgorithm::Fixed(l) => InnerAlgorithm::Fixed(l),
        LimitAlgorithm::Aimd(l) => InnerAlgorithm::Aimd(l),
        LimitAlgorithm::Vegas(l) => InnerAlgorithm::Vegas(l),
        LimitAlgorithm::Gradient(l) => InnerAlgorithm::Gradient(l),
        LimitAlgorithm::Gradient2(l) => InnerAlgorithm::Gradient2(l),
        LimitAlgorithm::Ciad(l) => InnerAlgorithm::Ciad(l),
        LimitAlgorithm::Knee(l) => InnerAlgorithm::Knee(l),
        LimitAlgorithm::Windowed(w) => w.inner,
    }
}

/// The smallest and largest limit an algorithm can report: its bounds (validation keeps the initial
/// limit within them).
fn bounds(a: &LimitAlgorithm) -> (u32, u32) {
    match as_inner(a) {
        InnerAlgorithm::Fixed(f) => (f.limit, f.limit),
        other => start_bounds(other),
    }
}

/// The initial limits that validation accepts (all other parameters being valid): `[min_limit,
/// max_limit]`, Vegas' minimum being 1 and a fixed cap's range `[0, MAX_LIMIT]`.
fn start_bounds(a: InnerAlgorithm) -> (u32, u32) {
    match a {
        InnerAlgorithm::Fixed(_) => (0, MAX_LIMIT),
        InnerAlgorithm::Aimd(l) => (l.min_limit, l.max_limit),
        InnerAlgorithm::Vegas(l) => (1, l.max_limit),
        InnerAlgorithm::Gradient(l) => (l.min_limit, l.max_limit),
        InnerAlgorithm::Gradient2(l) => (l.min_limit, l.max_limit),
        InnerAlgorithm::Ciad(l) => (l.min_limit, l.max_limit),
        InnerAlgorithm::Knee(l) => (l.min_limit, l.max_limit),
    }
}

/// `a` with its (inner algorithm's) initial limit replaced by `initial`, its bounds kept.
fn with_initial(a: &LimitAlgorithm, initial: u32) -> LimitAlgorithm {
    let inner = as_inner(a);
    let (lo, hi) = start_bounds(inner);
    let inner = tests::with_limits(inner, initial, lo, hi);
    match *a {
        LimitAlgorithm::Windowed(w) => LimitAlgorithm::Windowed(WindowedLimit { inner, ..w }),
        _ => LimitAlgorithm::from(inner),
    }
}

/// The algorithm's `f64` estimate, if it keeps one.
fn estimate(a: &LimitAlgorithm, st: &LimitState) -> Option<f64> {
    match as_inner(a) {
        // The knee limit's is fixed point: an integer, never NaN.
        InnerAlgorithm::Fixed(_) | InnerAlgorithm::Aimd(_) | InnerAlgorithm::Knee(_) => None,
        InnerAlgorithm::Ciad(_) => Some(f64::from_bits(st.load(0) & !RAMP_OVER)),
        _ => Some(st.load_f64(0)),
    }
}

fn ratio() -> impl Strategy<Value = f64> {
    0.5..0.999f64
}

fn limits() -> impl Strategy<Value = (u32, u32, u32)> {
    // (initial, min, max) with min <= initial <= max, the edges often.
    (0u32..50, 0u32..300, any::<u32>()).prop_map(|(min, extra, pick)| {
        let initial = match pick % 4 {
            0 => min,
            1 => min + extra,
            _ => min + pick % (extra + 1),
        };
        (initial, min, min + extra)
    })
}

fn queue() -> impl Strategy<Value = QueueSize> {
    prop_oneof![
        (0u32..10).prop_map(QueueSize::Constant),
        (0u32..10).prop_map(|min| QueueSize::Sqrt { min }),
    ]
}

fn threshold() -> impl Strategy<Value = VegasThreshold> {
    prop_oneof![
        (0u32..20).prop_map(VegasThreshold::Constant),
        (0u32..8).prop_map(VegasThreshold::Log10),
    ]
}

fn step() -> impl Strategy<Value = VegasStep> {
    prop_oneof![
        Just(VegasStep::Log10),
        (0.1..3.0f64).prop_map(VegasStep::Factor)
    ]
}

fn aimd() -> impl Strategy<Value = AimdLimit> {
    (limits(), ratio(), 1u64..10_000_000).prop_map(
        |((initial_limit, min_limit, max_limit), backoff_ratio, timeout_ns)| AimdLimit {
            initial_limit,
            min_limit,
            max_limit,
            backoff_ratio,
            timeout_ns,
        },
    )
}

fn ciad() -> impl Strategy<Value = CiadLimit> {
    let tolerance = prop_oneof![Just(0.0), 1.0..4.0f64];
    (
        1u32..20,
        0u32..300,
        any::<u32>(),
        ratio(),
        any::<bool>(),
        tolerance,
    )
        .prop_map(
            |(min_limit, extra, pick, backoff_ratio, fast_start, rtt_tolerance)| CiadLimit {
                initial_limit: min_limit + pick % (extra + 1),
                min_limit,
                max_limit: min_limit + extra,
                backoff_ratio,
                fast_start,
                rtt_tolerance,
            },
        )
}

fn knee() -> impl Strategy<Value = KneeLimit> {
    (
        1u32..20,
        0u32..300,
        any::<u32>(),
        ratio(),
        1.0..4.0f64,
        0.0..=1.0f64,
        prop_oneof![Just(0), 1..=super::KNEE_MAX_ARMED_NS],
    )
        .prop_map(
            |(min_limit, extra, pick, backoff_ratio, knee, at, armed_for_ns)| KneeLimit {
                initial_limit: min_limit + pick % (extra + 1),
                min_limit,
                max_limit: min_limit + extra,
                backoff_ratio,
                knee,
                hold: 1.0 + (knee - 1.0) * at,
                armed_for_ns,
            },
        )
}

fn vegas() -> impl Strategy<Value = VegasLimit> {
    (
        (any::<u32>(), 1u32..400, 0.0..=1.0f64, 1u32..40),
        (
            threshold(),
            threshold(),
            threshold(),
            step(),
            step(),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (pick, max_limit, smoothing, probe_multiplier),
                (alpha, beta, threshold, increase, decrease, baseline_from_drops),
            )| VegasLimit {
                // In [1, max_limit].
                initial_limit: 1 + pick % max_limit,
                max_limit,
                smoothing,
                probe_multiplier,
                alpha,
                beta,
                threshold,
                increase,
                decrease,
                baseline_from_drops,
            },
        )
}

fn gradient() -> impl Strategy<Value = GradientLimit> {
    (
        limits(),
        (0.0..=1.0f64, queue(), 1.0..5.0f64),
        (prop::option::of(1u32..50), 0.5..=1.0f64),
    )
        .prop_map(
            |(
                (initial_limit, min_limit, max_limit),
                (smoothing, queue_size, rtt_tolerance),
                (probe_interval, backoff_ratio),
            )| {
                GradientLimit {
                    initial_limit,
                    min_limit,
                    max_limit,
                    smoothing,
                    queue_size,
                    rtt_tolerance,
                    probe_interval,
                    backoff_ratio,
                }
            },
        )
}

fn gradient2() -> impl Strategy<Value = Gradient2Limit> {
    (
        limits(),
        (
            0.0..=1.0f64,
            queue(),
            1u32..1000,
            1.0..5.0f64,
            prop::option::of(ratio()),
        ),
    )
        .prop_map(
            |(
                (initial_limit, min_limit, max_limit),
                (smoothing, queue_size, long_window, rtt_tolerance, drop_backoff),
            )| {
                Gradient2Limit {
                    initial_limit,
                    min_limit,
                    max_limit,
                    smoothing,
                    queue_size,
                    long_window,
                    rtt_tolerance,
                    drop_backoff,
                }
            },
        )
}

fn inner() -> impl Strategy<Value = InnerAlgorithm> {
    prop_oneof![
        (0u32..300).prop_map(|limit| InnerAlgorithm::Fixed(FixedLimit { limit })),
        aimd().prop_map(InnerAlgorithm::Aimd),
        vegas().prop_map(InnerAlgorithm::Vegas),
        gradient().prop_map(InnerAlgorithm::Gradient),
        gradient2().prop_map(InnerAlgorithm::Gradient2),
        ciad().prop_map(InnerAlgorithm::Ciad),
        knee().prop_map(InnerAlgorithm::Knee),
    ]
}

fn windowed() -> impl Strategy<Value = WindowedLimit> {
    let kind = prop_oneof![
        Just(SampleWindow::Average),
        (0.01..0.99f64, 1u32..=PERCENTILE_CAPACITY as u32).prop_map(|(percentile, capacity)| {
            SampleWindow::Percentile {
                percentile,
                capacity,
            }
        }),
    ];
    (
        inner(),
        1u64..1000,
        0u64..1000,
        any::<u32>(),
        0u64..100,
        kind,
    )
        .prop_map(
            |(inner, min_window_ns, extra, pick, min_rtt_threshold_ns, window)| {
                let most = match window {
                    SampleWindow::Percentile { capacity, .. } => capacity,
                    SampleWindow::Average => 5,
                };
                WindowedLimit {
                    inner,
                    min_window_ns,
                    max_window_ns: min_window_ns + extra,
                    min_samples: 1 + pick % most,
                    min_rtt_threshold_ns,
                    window,
                }
            },
        )
}

fn algorithm() -> impl Strategy<Value = LimitAlgorithm> {
    prop_oneof![
        inner().prop_map(LimitAlgorithm::from),
        windowed().prop_map(LimitAlgorithm::Windowed),
    ]
}

/// Samples with RTTs from zero to huge, in-flight counts from small to `u32::MAX`, time that mostly moves
/// forward but sometimes back, drops that are errors or overloads, and random bits.
fn samples() -> impl Strategy<Value = Vec<(Sample, u64)>> {
    let rtt = prop_oneof![Just(0u64), 0u64..2_000, 0u64..10_000_000_000, any::<u64>()];
    let inflight = prop_oneof![0u32..64, 0u32..400, any::<u32>()];
    prop::collection::vec(
        (
            rtt,
            inflight,
            any::<(bool, bool)>(),
            -100i64..2_000,
            any::<u64>(),
        ),
        0..80,
    )
    .prop_map(|v| {
        let mut now = 1_000u64;
        v.into_iter()
            .map(|(rtt_ns, inflight, (dropped, error), dt, random)| {
                now = now.saturating_add_signed(dt);
                (
                    Sample {
                        rtt_ns,
                        inflight,
                        dropped,
                        now_ns: now,
                        load: None,
                        failed: dropped && error,
                    },
                    random,
                )
            })
            .collect()
    })
}

proptest! {
    #[test]
    fn limit_stays_in_bounds_and_finite(a in algorithm(), samples in samples()) {
        prop_assert_eq!(a.validate(), Ok(()), "{:?}", a);
        let (lo, hi) = bounds(&a);
        let st = LimitState::new();
        a.reset(&st);
        prop_assert_eq!(a.limit(&st), a.initial_limit());
        for (s, random) in &samples {
            let got = a.update(&st, s, *random);
            prop_assert!(lo <= got && got <= hi, "{} not in [{}, {}] after {:?}", got, lo, hi, s);
            prop_assert_eq!(got, a.limit(&st));
            if let Some(e) = estimate(&a, &st) {
                prop_assert!(e.is_finite() && e >= 0.0, "estimate {}", e);
                prop_assert!(f64::from(lo) <= e && e < f64::from(hi) + 1.0, "estimate {}", e);
            }
        }
    }

    #[test]
    fn same_seed_same_limits(a in algorithm(), samples in samples()) {
        let (x, y) = (LimitState::new(), LimitState::new());
        a.reset(&x);
        a.reset(&y);
        for (s, random) in &samples {
            prop_assert_eq!(a.update(&x, s, *random), a.update(&y, s, *random));
        }
    }

    #[test]
    fn drops_never_raise_aimd_ciad_or_knee(
        aimd in aimd(),
        ciad in ciad(),
        knee in knee(),
        samples in samples(),
    ) {
        // The generators keep the initial limit inside the bounds, as validation requires (unvalidated,
        // AIMD lifts one below min_limit to min_limit on its first update, drop or not, as Netflix's does).
        for a in [LimitAlgorithm::Aimd(aimd), LimitAlgorithm::Ciad(ciad), LimitAlgorithm::Knee(knee)] {
            let st = LimitState::new();
            a.reset(&st);
            for (s, random) in &samples {
                let before = a.limit(&st);
                let after = a.update(&st, s, *random);
                let timed_out = matches!(a, LimitAlgorithm::Aimd(l) if s.rtt_ns > l.timeout_ns);
                // With an RTT tolerance a slow success is a drop (ciad/mod.rs tests that rule).
                let latency = matches!(a, LimitAlgorithm::Ciad(l) if l.rtt_tolerance > 0.0)
                    || matches!(a, LimitAlgorithm::Knee(_));
                if s.dropped || timed_out {
                    prop_assert!(after <= before, "{:?}: drop raised {} to {}", a, before, after);
                } else if !latency {
                    prop_assert!(after >= before, "{:?}: success lowered {} to {}", a, before, after);
                }
            }
        }
    }

    #[test]
    fn validation_accepts_exactly_the_starts_within_bounds(
        a in algorithm(),
        initial in prop_oneof![0u32..400, 999_990u32..1_000_010, Just(MAX_LIMIT), Just(MAX_LIMIT + 1), any::<u32>()],
    ) {
        prop_assert_eq!(a.validate(), Ok(()), "{:?}", a);
        let (lo, hi) = start_bounds(as_inner(&a));
        let moved = with_initial(&a, initial);
        prop_assert_eq!(moved.initial_limit(), initial);
        let expected = if (lo..=hi).contains(&initial) { Ok(()) } else { Err(ConfigError::LimitRange) };
        prop_assert_eq!(moved.validate(), expected, "{:?}", moved);
    }

    #[test]
    fn unvalidated_parameters_never_panic(
        ints in prop::array::uniform8(any::<u32>()),
        floats in prop::array::uniform5(prop_oneof![any::<f64>(), Just(f64::NAN), Just(f64::INFINITY), Just(-1.0), Just(0.0)]),
        flags in prop::array::uniform3(any::<bool>()),
        samples in samples(),
    ) {
        let [i0, i1, i2, i3, i4, i5, i6, i7] = ints;
        let [f0, f1, f2, f3, f4] = floats;
        let vegas = VegasLimit {
            initial_limit: i0, max_limit: i1, smoothing: f0, probe_multiplier: i2,
            alpha: VegasThreshold::Log10(i3), beta: VegasThreshold::Constant(i4), threshold: VegasThreshold::Log10(i5),
            increase: VegasStep::Factor(f1), decrease: if flags[0] { VegasStep::Log10 } else { VegasStep::Factor(f2) },
            baseline_from_drops: flags[1],
        };
        let inners = [
            InnerAlgorithm::Fixed(FixedLimit { limit: i0 }),
            InnerAlgorithm::Aimd(AimdLimit { initial_limit: i0, min_limit: i1, max_limit: i2, backoff_ratio: f0, timeout_ns: u64::from(i3) }),
            InnerAlgorithm::Vegas(vegas),
            InnerAlgorithm::Gradient(GradientLimit {
                initial_limit: i0, min_limit: i1, max_limit: i2, smoothing: f0, queue_size: QueueSize::Sqrt { min: i3 },
                rtt_tolerance: f1, probe_interval: flags[2].then_some(i4), backoff_ratio: f2,
            }),
            InnerAlgorithm::Gradient2(Gradient2Limit {
                initial_limit: i0, min_limit: i1, max_limit: i2, smoothing: f0, queue_size: QueueSize::Constant(i3),
                long_window: i4, rtt_tolerance: f1, drop_backoff: flags[2].then_some(f2),
            }),
            InnerAlgorithm::Ciad(CiadLimit { initial_limit: i0, min_limit: i1, max_limit: i2, backoff_ratio: f0, fast_start: flags[0], rtt_tolerance: f1 }),
            InnerAlgorithm::Knee(KneeLimit { initial_limit: i0, min_limit: i1, max_limit: i2, backoff_ratio: f0, knee: f1, hold: f2, armed_for_ns: (u64::from(i7) << 32) | u64::from(i3) }),
        ];
        for inner in inners {
            let window = if flags[1] {
                SampleWindow::Average
            } else {
                SampleWindow::Percentile { percentile: f3, capacity: i6 }
            };
            let windowed = WindowedLimit {
                inner,
                min_window_ns: u64::from(i5),
                max_window_ns: u64::from(i6) * u64::from(i7),
                min_samples: i7,
                min_rtt_threshold_ns: u64::from(i7 % 1000),
                window,
            };
            for a in [LimitAlgorithm::Windowed(windowed), LimitAlgorithm::from(inner)] {
                let _ = a.validate();
                let st = LimitState::new();
                // Half the runs skip the reset: an all-zero state must be safe too.
                if flags[2] {
                    a.reset(&st);
                }
                for (s, random) in &samples {
                    let got = a.update(&st, s, f4.to_bits() ^ random);
                    prop_assert!(got <= MAX_LIMIT);
                    prop_assert_eq!(got, a.limit(&st));
                    if let Some(e) = estimate(&a, &st) {
                        prop_assert!(!e.is_nan(), "NaN estimate for {:?}", a);
                    }
                }
            }
        }
    }
}
