//! The core's refusal of a configuration, in the header's words: each field by its path in
//! `weir_config` and its range as the header states it. The core's own text is written for Rust and
//! names what a C program cannot see (`MAX_NODES`, `MAX_LIMIT`, `LowestScore`), so it is not passed
//! on; Python has its own table for the same reason (`py/src/config/mod.rs`).

use super::{
    weir_config, weir_limit, WEIR_LIMIT_AIMD, WEIR_LIMIT_CIAD, WEIR_LIMIT_FIXED,
    WEIR_LIMIT_GRADIENT, WEIR_LIMIT_GRADIENT2, WEIR_LIMIT_KNEE, WEIR_LIMIT_VEGAS,
    WEIR_LIMIT_WINDOWED,
};
use crate::boundary::Error;
use weir_core::balance::{ConfigError, MAX_BUCKETS, MAX_NODES, MAX_WAITERS};
use weir_core::limit::{KNEE_MAX_ARMED_NS, MAX_LIMIT, PERCENTILE_CAPACITY};

// The numbers the messages below (and the header's field comments) state, checked against the core.
const _: () = assert!(MAX_NODES == 65_536);
const _: () = assert!(MAX_BUCKETS == 8);
const _: () = assert!(MAX_LIMIT == (1 << 24) - 1);
const _: () = assert!(PERCENTILE_CAPACITY == 10);
const _: () = assert!(MAX_WAITERS == 1 << 20);
const _: () = assert!(KNEE_MAX_ARMED_NS == 1_000_000_000_000);

/// `e`, the core's refusal of `c` (or of a balancer's capacity), as a `WEIR_ERR_INVALID_CONFIG` whose
/// message names the C field and the range the header gives it.
pub(crate) fn config_error(e: ConfigError, c: &weir_config) -> Error {
    let limit = limit_path(&c.limit);
    let why = match e {
        ConfigError::Capacity => "capacity must be between 1 and 65,536".to_owned(),
        ConfigError::BucketCount => {
            "algorithm.weighted.health.buckets.count must be between 1 and 8".to_owned()
        }
        ConfigError::BucketWidth => {
            "algorithm.weighted.health.buckets.width_ns must be at least 1".to_owned()
        }
        ConfigError::Decay => {
            "algorithm.weighted.health.buckets.decay must be finite and >= 1".to_owned()
        }
        ConfigError::Floor => "algorithm.weighted.floor must be finite and in (0, 1]".to_owned(),
        ConfigError::WeightExponent => {
            "algorithm.weighted.weight_exponent must be finite and in (0, 64]".to_owned()
        }
        ConfigError::HalfLife => {
            "algorithm.weighted.health.ewma.half_life must be at least 1".to_owned()
        }
        ConfigError::DecayHalfLife => "algorithm.lowest_score.success_half_life_ns and \
                                       failure_half_life_ns must be between 1 ms and 1 hour"
            .to_owned(),
        ConfigError::OutcomeCost => "algorithm.lowest_score.dropped_cost, throttled_cost and \
                                     client_error_cost must be finite and in [0, 1]"
            .to_owned(),
        ConfigError::Penalty => "algorithm.lowest_score.penalty and ratio_penalty must be finite \
                                 and in [0, 1e6], slow_ratio 0 or in [1, 64]"
            .to_owned(),
        ConfigError::Probation => "algorithm.lowest_score.probe_fraction and forgiveness must be \
                                   finite and in [0, 1], probe_after_ns 0 or between 1 ms and 1 \
                                   hour"
            .to_owned(),
        ConfigError::MaxWaiters => "max_waiters must be at most 2^20 (1,048,576)".to_owned(),
        ConfigError::LimitRange => match inner_algorithm(&c.limit) {
            WEIR_LIMIT_FIXED => {
                "limit.fixed.limit must be at most 2^24 - 1 (16,777,215)".to_owned()
            }
            WEIR_LIMIT_VEGAS => "limit.vegas: initial_limit must be within [1, max_limit] and \
                                 max_limit at most 2^24 - 1 (16,777,215)"
                .to_owned(),
            WEIR_LIMIT_CIAD | WEIR_LIMIT_KNEE => format!(
                "{limit}: min_limit must be at least 1, and min_limit <= initial_limit <= \
                 max_limit <= 2^24 - 1 (16,777,215)"
            ),
            _ => format!(
                "{limit}: the limits must satisfy min_limit <= initial_limit <= max_limit <= \
                 2^24 - 1 (16,777,215)"
            ),
        },
        ConfigError::BackoffRatio => match inner_algorithm(&c.limit) {
            WEIR_LIMIT_GRADIENT => "limit.gradient.backoff_ratio must be in [0.5, 1]".to_owned(),
            WEIR_LIMIT_GRADIENT2 => "limit.gradient2.drop_backoff must be in [0.5, 1)".to_owned(),
            _ => format!("{limit}.backoff_ratio must be in [0.5, 1)"),
        },
        ConfigError::Timeout => "limit.aimd.timeout_ns must be at least 1".to_owned(),
        ConfigError::Smoothing => format!("{limit}.smoothing must be in [0, 1]"),
        ConfigError::RttTolerance => match inner_algorithm(&c.limit) {
            WEIR_LIMIT_CIAD => {
                "limit.ciad.rtt_tolerance must be 0 (off) or finite and >= 1".to_owned()
            }
            WEIR_LIMIT_KNEE => {
                "limit.knee: knee and hold must be finite and >= 1, and hold <= knee".to_owned()
            }
            _ => format!("{limit}.rtt_tolerance must be finite and >= 1"),
        },
        ConfigError::ProbeInterval => {
            "limit.gradient.probe_interval must be between 1 and 2^30".to_owned()
        }
        ConfigError::ProbeMultiplier => {
            "limit.vegas.probe_multiplier must be at least 1".to_owned()
        }
        ConfigError::VegasStep => {
            "limit.vegas.increase.factor and decrease.factor must be finite and > 0".to_owned()
        }
        ConfigError::QueueSize => {
            format!("{limit}.queue_size.value must be at most 2^24 - 1 (16,777,215)")
        }
        ConfigError::LongWindow => "limit.gradient2.long_window must be at least 1".to_owned(),
        // The core checks a wrapped algorithm before the wrapper's windows, so a knee whose arm is out
        // of range is the refusal whenever it is.
        ConfigError::WindowTime
            if inner_algorithm(&c.limit) == WEIR_LIMIT_KNEE
                && c.limit.knee.armed_for_ns > KNEE_MAX_ARMED_NS =>
        {
            "limit.knee.armed_for_ns must be at most 1000 s (10^12 ns)".to_owned()
        }
        ConfigError::WindowTime => "limit.windowed: the windows must satisfy 1 <= min_window_ns \
                                    <= max_window_ns <= 1000 s"
            .to_owned(),
        ConfigError::WindowSamples => "limit.windowed.min_samples must be at least 1, and at most \
                                       window.capacity for WEIR_SAMPLE_WINDOW_PERCENTILE"
            .to_owned(),
        ConfigError::Percentile => "limit.windowed.window: percentile must be in (0, 1) and \
                                    capacity between 1 and 10"
            .to_owned(),
        // A refusal added to the core after this table (or one a C program cannot cause, such as
        // slots shared between balancers): the core's own text rather than none.
        _ => e.to_string(),
    };
    Error::config(why)
}

/// The algorithm whose parameters a refusal is about: the windowed wrapper's inner one, whose
/// parameters sit beside the wrapper's in `weir_limit`.
fn inner_algorithm(limit: &weir_limit) -> u32 {
    if limit.algorithm == WEIR_LIMIT_WINDOWED {
        limit.windowed.inner
    } else {
        limit.algorithm
    }
}

/// The path of those parameters in `weir_config`.
fn limit_path(limit: &weir_limit) -> &'static str {
    match inner_algorithm(limit) {
        WEIR_LIMIT_FIXED => "limit.fixed",
        WEIR_LIMIT_AIMD => "limit.aimd",
        WEIR_LIMIT_VEGAS => "limit.vegas",
        WEIR_LIMIT_GRADIENT => "limit.gradient",
        WEIR_LIMIT_GRADIENT2 => "limit.gradient2",
        WEIR_LIMIT_CIAD => "limit.ciad",
        WEIR_LIMIT_KNEE => "limit.knee",
        _ => "limit",
    }
}

#[cfg(test)]
mod tests {
    use crate::boundary::rust_only_name;
    use crate::boundary::testing::fails;
    use crate::*;

    /// Every refusal of the core a `weir_config` can cause, through the export a C program calls: the
    /// message names the C field and the header's range, and nothing a C program cannot see.
    #[test]
    fn every_refused_config_is_named_in_the_headers_words() {
        type Case = (fn(&mut weir_config), &'static str);
        let cases: [Case; 52] = [
            (
                |c| c.algorithm.weighted.health.buckets.count = 0,
                "algorithm.weighted.health.buckets.count must be between 1 and 8",
            ),
            (
                |c| c.algorithm.weighted.health.buckets.count = 9,
                "algorithm.weighted.health.buckets.count",
            ),
            (
                |c| c.algorithm.weighted.health.buckets.width_ns = 0,
                "algorithm.weighted.health.buckets.width_ns",
            ),
            (
                |c| c.algorithm.weighted.health.buckets.decay = 0.5,
                "algorithm.weighted.health.buckets.decay",
            ),
            (
                |c| c.algorithm.weighted.floor = 0.0,
                "algorithm.weighted.floor must be finite and in (0, 1]",
            ),
            (
                |c| c.algorithm.weighted.weight_exponent = f64::NAN,
                "algorithm.weighted.weight_exponent",
            ),
            (
                |c| {
                    c.algorithm.weighted.health.model = WEIR_HEALTH_EWMA;
                    c.algorithm.weighted.health.ewma.half_life = 0;
                },
                "algorithm.weighted.health.ewma.half_life",
            ),
            (
                |c| *c = lowest_score(|l| l.success_half_life_ns = 0),
                "algorithm.lowest_score.success_half_life_ns and failure_half_life_ns must be \
                 between 1 ms",
            ),
            (
                |c| *c = lowest_score(|l| l.dropped_cost = 2.0),
                "algorithm.lowest_score.dropped_cost",
            ),
            (
                |c| *c = lowest_score(|l| l.penalty = -1.0),
                "algorithm.lowest_score.penalty",
            ),
            (
                |c| *c = lowest_score(|l| l.slow_ratio = 0.5),
                "algorithm.lowest_score.penalty and ratio_penalty must be finite and in [0, 1e6], \
                 slow_ratio 0 or in [1, 64]",
            ),
            (
                |c| *c = lowest_score(|l| l.slow_ratio = f32::NAN),
                "algorithm.lowest_score.penalty and ratio_penalty",
            ),
            (
                |c| *c = lowest_score(|l| l.slow_ratio = 65.0),
                "slow_ratio 0 or in [1, 64]",
            ),
            (
                |c| *c = lowest_score(|l| l.probe_fraction = f32::NAN),
                "algorithm.lowest_score.probe_fraction and forgiveness must be finite and in [0, 1]",
            ),
            (
                |c| *c = lowest_score(|l| l.probe_fraction = 1.01),
                "algorithm.lowest_score.probe_fraction",
            ),
            (
                |c| *c = lowest_score(|l| l.forgiveness = -0.01),
                "algorithm.lowest_score.probe_fraction and forgiveness",
            ),
            (
                |c| *c = lowest_score(|l| l.forgiveness = f32::INFINITY),
                "algorithm.lowest_score.probe_fraction and forgiveness",
            ),
            (
                |c| *c = lowest_score(|l| l.probe_after_ns = 1),
                "algorithm.lowest_score.probe_fraction and forgiveness must be finite and in [0, 1], \
                 probe_after_ns 0 or between 1 ms and 1 hour",
            ),
            (
                |c| *c = lowest_score(|l| l.probe_after_ns = 999_999),
                "probe_after_ns 0 or between 1 ms and 1 hour",
            ),
            (
                |c| *c = lowest_score(|l| l.probe_after_ns = 3_600_000_000_001),
                "probe_after_ns 0 or between 1 ms and 1 hour",
            ),
            (
                |c| *c = lowest_score(|l| l.probe_after_ns = u64::MAX),
                "probe_after_ns 0 or between 1 ms and 1 hour",
            ),
            (
                |c| c.max_waiters = (1 << 20) + 1,
                "max_waiters must be at most 2^20",
            ),
            (
                |c| c.limit.fixed.limit = 1 << 24,
                "limit.fixed.limit must be at most 2^24 - 1",
            ),
            (
                |c| c.limit = limit(weir_limit_aimd_default(), |l| l.aimd.initial_limit = 1_000),
                "limit.aimd: the limits must satisfy",
            ),
            (
                |c| c.limit = limit(weir_limit_vegas_default(), |l| l.vegas.max_limit = 0),
                "limit.vegas: initial_limit must be within [1, max_limit]",
            ),
            (
                |c| c.limit = limit(weir_limit_ciad_default(), |l| l.ciad.min_limit = 0),
                "limit.ciad: min_limit must be at least 1",
            ),
            (
                |c| c.limit = limit(weir_limit_knee_default(), |l| l.knee.min_limit = 0),
                "limit.knee: min_limit must be at least 1, and min_limit <= initial_limit",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_windowed_default(), |l| {
                        l.windowed.inner = WEIR_LIMIT_GRADIENT2;
                        l.gradient2.initial_limit = l.gradient2.max_limit + 1;
                    })
                },
                "limit.gradient2: the limits must satisfy",
            ),
            (
                |c| c.limit = limit(weir_limit_aimd_default(), |l| l.aimd.backoff_ratio = 1.0),
                "limit.aimd.backoff_ratio must be in [0.5, 1)",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_gradient_default(), |l| {
                        l.gradient.backoff_ratio = 0.4
                    })
                },
                "limit.gradient.backoff_ratio must be in [0.5, 1]",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_gradient2_default(), |l| {
                        l.gradient2.drop_backoff_enabled = true;
                        l.gradient2.drop_backoff = 1.0;
                    })
                },
                "limit.gradient2.drop_backoff must be in [0.5, 1)",
            ),
            (
                |c| c.limit = limit(weir_limit_knee_default(), |l| l.knee.backoff_ratio = 1.0),
                "limit.knee.backoff_ratio must be in [0.5, 1)",
            ),
            (
                |c| c.limit = limit(weir_limit_aimd_default(), |l| l.aimd.timeout_ns = 0),
                "limit.aimd.timeout_ns",
            ),
            (
                |c| c.limit = limit(weir_limit_vegas_default(), |l| l.vegas.smoothing = 1.5),
                "limit.vegas.smoothing must be in [0, 1]",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_gradient_default(), |l| {
                        l.gradient.rtt_tolerance = 0.5
                    })
                },
                "limit.gradient.rtt_tolerance must be finite and >= 1",
            ),
            (
                |c| c.limit = limit(weir_limit_ciad_default(), |l| l.ciad.rtt_tolerance = 0.5),
                "limit.ciad.rtt_tolerance must be 0 (off) or",
            ),
            (
                |c| c.limit = limit(weir_limit_knee_default(), |l| l.knee.hold = 2.5),
                "limit.knee: knee and hold must be finite and >= 1, and hold <= knee",
            ),
            (
                |c| c.limit = limit(weir_limit_knee_default(), |l| l.knee.knee = f64::NAN),
                "limit.knee: knee and hold must be finite",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_windowed_default(), |l| {
                        l.windowed.inner = WEIR_LIMIT_KNEE;
                        l.knee.hold = 0.5;
                    })
                },
                "limit.knee: knee and hold must be finite and >= 1",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_knee_default(), |l| {
                        l.knee.armed_for_ns = 1_000_000_000_001
                    })
                },
                "limit.knee.armed_for_ns must be at most 1000 s (10^12 ns)",
            ),
            (
                |c| c.limit = limit(weir_limit_knee_default(), |l| l.knee.armed_for_ns = u64::MAX),
                "limit.knee.armed_for_ns",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_windowed_default(), |l| {
                        l.windowed.inner = WEIR_LIMIT_KNEE;
                        l.knee.armed_for_ns = u64::MAX;
                        l.windowed.min_window_ns = 0;
                    })
                },
                "limit.knee.armed_for_ns must be at most 1000 s",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_windowed_default(), |l| {
                        l.windowed.inner = WEIR_LIMIT_KNEE;
                        l.knee.armed_for_ns = 1_000_000_000_000;
                        l.windowed.min_window_ns = 0;
                    })
                },
                "limit.windowed: the windows must satisfy 1 <= min_window_ns",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_gradient_default(), |l| {
                        l.gradient.probe = true;
                        l.gradient.probe_interval = 0;
                    })
                },
                "limit.gradient.probe_interval must be between 1 and 2^30",
            ),
            (
                |c| c.limit = limit(weir_limit_vegas_default(), |l| l.vegas.probe_multiplier = 0),
                "limit.vegas.probe_multiplier",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_vegas_default(), |l| {
                        l.vegas.increase.kind = WEIR_VEGAS_STEP_FACTOR;
                        l.vegas.increase.factor = 0.0;
                    })
                },
                "limit.vegas.increase.factor and decrease.factor",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_gradient_default(), |l| {
                        l.gradient.queue_size.kind = WEIR_QUEUE_SIZE_CONSTANT;
                        l.gradient.queue_size.value = 1 << 24;
                    })
                },
                "limit.gradient.queue_size.value must be at most 2^24 - 1",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_gradient2_default(), |l| {
                        l.gradient2.long_window = 0
                    })
                },
                "limit.gradient2.long_window",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_windowed_default(), |l| {
                        l.windowed.min_window_ns = 0
                    })
                },
                "limit.windowed: the windows must satisfy 1 <= min_window_ns",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_windowed_default(), |l| {
                        l.windowed.min_samples = 0
                    })
                },
                "limit.windowed.min_samples",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_windowed_default(), |l| {
                        l.windowed.min_samples = 1;
                        l.windowed.window.kind = WEIR_SAMPLE_WINDOW_PERCENTILE;
                        l.windowed.window.capacity = 11;
                    })
                },
                "capacity between 1 and 10",
            ),
            (
                |c| {
                    c.limit = limit(weir_limit_windowed_default(), |l| {
                        l.windowed.min_samples = 1;
                        l.windowed.window.kind = WEIR_SAMPLE_WINDOW_PERCENTILE;
                        l.windowed.window.percentile = 1.0;
                    })
                },
                "limit.windowed.window: percentile must be in (0, 1)",
            ),
        ];
        for (change, text) in cases {
            // The original cascade: the weighted family with the bucket model, so every field is checked.
            let mut c = weir_config_cascade();
            change(&mut c);
            fails(
                unsafe { weir_config_validate(&c) },
                WEIR_ERR_INVALID_CONFIG,
                text,
            );
        }
    }

    /// The default configuration with its lowest-score parameters changed by `change`.
    fn lowest_score(change: fn(&mut weir_lowest_score)) -> weir_config {
        let mut c = weir_config_default();
        change(&mut c.algorithm.lowest_score);
        c
    }

    /// The ends of `probe_after_ns`'s range, and 0 (off), pass where the values just outside them are
    /// refused above.
    #[test]
    fn the_ends_of_probe_after_ns_are_accepted() {
        for probe_after_ns in [0, 1_000_000, 1_000_000_000, 3_600_000_000_000] {
            let mut c = weir_config_default();
            c.algorithm.lowest_score.probe_after_ns = probe_after_ns;
            assert_eq!(
                unsafe { weir_config_validate(&c) },
                WEIR_OK,
                "{probe_after_ns}"
            );
        }
    }

    /// `l` changed by `change`.
    fn limit(mut l: weir_limit, change: impl FnOnce(&mut weir_limit)) -> weir_limit {
        change(&mut l);
        l
    }

    #[test]
    fn a_refused_capacity_is_the_headers_range() {
        let config = weir_config_default();
        let mut b = std::ptr::null_mut();
        for capacity in [0, 65_537] {
            fails(
                unsafe { weir_balancer_new(&config, capacity, &mut b) },
                WEIR_ERR_INVALID_CONFIG,
                "capacity must be between 1 and 65,536",
            );
            assert!(b.is_null());
        }
        // What the core says, for contrast: the reason for this table.
        let core = weir_core::HeapBalancer::with_capacity(0, weir_core::Config::default())
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            core.as_deref().and_then(rust_only_name),
            Some("MAX_NODES"),
            "{core:?}"
        );
    }
}
