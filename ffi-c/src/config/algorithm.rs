//! The algorithm families: the `WEIR_ALGORITHM_*` tags, `weir_algorithm` with each family's parameters,
//! the lowest-score family's `weir_lowest_score`, the `weir_algorithm_*_default()` fillers, and the
//! conversions to and from the core's [`Algorithm`]. The weighted family's parameters are in
//! `weighted.rs`.

use super::unknown;
use super::weighted::{weighted_from_c, weighted_to_c, weir_weighted};
use crate::boundary::Error;
use weir_core::balance::{Algorithm, LowestScore, Weighted};

/// Algorithm family (a `weir_algorithm`'s `family`): one of the `WEIR_ALGORITHM_*` values.
#[allow(non_camel_case_types)]
pub type weir_algorithm_family = u32;
/// The default: the node with room whose in-flight count plus failure penalty is lowest
/// (`weir_algorithm.lowest_score`).
pub const WEIR_ALGORITHM_LOWEST_SCORE: weir_algorithm_family = 0;
/// The original cascade and its variants: a weight per node from its success rate, and a weighted
/// random draw among the nodes with room (`weir_algorithm.weighted`).
pub const WEIR_ALGORITHM_WEIGHTED: weir_algorithm_family = 1;

/// The lowest-score family's parameters: two time-decayed counters per node, successes and failures,
/// the failure penalty they give, probation, timed probes and the slowness term (defaults: 1 s, 30 s,
/// 0.1, 0.1, 0.01, 10, 16, 0, 0, 0, 0).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_lowest_score {
    /// Half-life of the success counter, ns; 1 ms ..= 1 hour.
    pub success_half_life_ns: u64,
    /// Half-life of the failure counter, ns; 1 ms ..= 1 hour.
    pub failure_half_life_ns: u64,
    /// What a Dropped outcome (503, 504, a timeout) adds to the failures; in [0, 1]. 0.1 by default,
    /// as a 429: a shedding node is busy rather than broken, and its limit backs off on each drop; 1
    /// counts a drop as a whole failure, as a 500 (see the Rust docs of `LowestScore::dropped_cost`).
    pub dropped_cost: f32,
    /// What a Throttled outcome (429) adds to the failures; in [0, 1].
    pub throttled_cost: f32,
    /// What a ClientError outcome (another 4xx) adds to the failures; in [0, 1].
    pub client_error_cost: f32,
    /// Penalty per recent failure, in in-flight requests; in [0, 1e6].
    pub penalty: f32,
    /// Penalty per doubling of failures over successes; in [0, 1e6].
    pub ratio_penalty: f32,
    /// Probation: the fraction of acquires whose first try is a member with room drawn at random
    /// instead of the lowest score, so an avoided node gets a trickle of calls that tell whether it has
    /// recovered; in [0, 1]. 0 (none) by default, and then no acquire draws from its generator for it,
    /// so the decisions are those without the field (see the Rust docs of
    /// `LowestScore::probe_fraction`).
    pub probe_fraction: f32,
    /// The fraction of a node's decayed failures each of its successes takes away; in [0, 1]. 0
    /// (nothing) by default; 0.5 halves them, so a node that answers well again is forgiven within a few
    /// calls rather than over the failure half-life. A success takes all of them where they were last
    /// written more than a clock epoch before (250 ms by default): a probe answered well by a node
    /// avoided since its last failure.
    pub forgiveness: f32,
    /// Timed probes: 0 (off, the default), or 1 ms to 1 hour in nanoseconds. A member that carries a
    /// penalty, has no call in flight and has not failed for this long is the next acquire's first try
    /// (as nginx's `fail_timeout`): a client hears of a recovered node within about this long whatever
    /// its call rate, and a node that stays broken costs it one call per period (see the Rust docs of
    /// `LowestScore::probe_after_ns`).
    pub probe_after_ns: u64,
    /// Slow nodes: 0 (off, the default), or in [1, 64]. A node whose recent successes took at least this
    /// many times as long as the fastest node's counts each of its calls in flight that many times over
    /// (in steps of a quarter): the peak-EWMA cost `(in_flight + 1) * latency` over the fastest node's
    /// latency, so a node five times slower takes a call only when its peers have about five times its
    /// calls in flight. Below the ratio a node scores as without it. Each node's latency is an average
    /// of its successes' RTTs; the ratio beyond 1 fades at the failure half-life while the node gets no
    /// calls, so a slow node is tried again now and then. 2 reads a node as slow once it takes twice the
    /// fastest's time (see the Rust docs of `LowestScore::slow_ratio`).
    pub slow_ratio: f32,
}

/// The algorithm a balancer decides by: `family` says which of the two parameter sets is used.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_algorithm {
    /// `WEIR_ALGORITHM_LOWEST_SCORE` or `WEIR_ALGORITHM_WEIGHTED`.
    pub family: weir_algorithm_family,
    /// Used when `family` is `WEIR_ALGORITHM_LOWEST_SCORE`.
    pub lowest_score: weir_lowest_score,
    /// Used when `family` is `WEIR_ALGORITHM_WEIGHTED`.
    pub weighted: weir_weighted,
}

impl From<LowestScore> for weir_lowest_score {
    fn from(l: LowestScore) -> Self {
        weir_lowest_score {
            success_half_life_ns: l.success_half_life_ns,
            failure_half_life_ns: l.failure_half_life_ns,
            dropped_cost: l.dropped_cost,
            throttled_cost: l.throttled_cost,
            client_error_cost: l.client_error_cost,
            penalty: l.penalty,
            ratio_penalty: l.ratio_penalty,
            probe_fraction: l.probe_fraction,
            forgiveness: l.forgiveness,
            probe_after_ns: l.probe_after_ns,
            slow_ratio: l.slow_ratio,
        }
    }
}

impl From<weir_lowest_score> for LowestScore {
    fn from(l: weir_lowest_score) -> Self {
        LowestScore {
            success_half_life_ns: l.success_half_life_ns,
            failure_half_life_ns: l.failure_half_life_ns,
            dropped_cost: l.dropped_cost,
            throttled_cost: l.throttled_cost,
            client_error_cost: l.client_error_cost,
            penalty: l.penalty,
            ratio_penalty: l.ratio_penalty,
            probe_fraction: l.probe_fraction,
            forgiveness: l.forgiveness,
            probe_after_ns: l.probe_after_ns,
            slow_ratio: l.slow_ratio,
        }
    }
}

/// Both families' defaults (the weighted family's are the original cascade's), with `family` chosen.
fn algorithm_with(family: weir_algorithm_family) -> weir_algorithm {
    weir_algorithm {
        family,
        lowest_score: LowestScore::DEFAULT.into(),
        weighted: weighted_to_c(Weighted::CASCADE),
    }
}

/// The C form of a core algorithm: its family's parameters over the other family's defaults.
pub(super) fn algorithm_to_c(algorithm: Algorithm) -> weir_algorithm {
    match algorithm {
        Algorithm::LowestScore(l) => weir_algorithm {
            lowest_score: l.into(),
            ..algorithm_with(WEIR_ALGORITHM_LOWEST_SCORE)
        },
        Algorithm::Weighted(w) => weir_algorithm {
            weighted: weighted_to_c(w),
            ..algorithm_with(WEIR_ALGORITHM_WEIGHTED)
        },
    }
}

/// The core algorithm a C one describes (validated with the whole configuration); an unknown tag of
/// the chosen family is `WEIR_ERR_INVALID_ARGUMENT`, naming its field. The other family's parameters
/// are not read.
pub(super) fn algorithm_from_c(c: &weir_algorithm) -> Result<Algorithm, Error> {
    Ok(match c.family {
        WEIR_ALGORITHM_LOWEST_SCORE => Algorithm::LowestScore(c.lowest_score.into()),
        WEIR_ALGORITHM_WEIGHTED => Algorithm::Weighted(weighted_from_c(&c.weighted)?),
        k => {
            return Err(unknown(
                "algorithm.family",
                k,
                "WEIR_ALGORITHM_LOWEST_SCORE (0), WEIR_ALGORITHM_WEIGHTED (1)",
            ))
        }
    })
}

/// The lowest-score family with its defaults (successes halve every 1 s, failures every 30 s; costs 1,
/// 0.1, 0.01; penalties 10 and 16; no probation: probe fraction and forgiveness 0; no timed probes:
/// probe_after_ns 0; no slowness term: slow ratio 0), the default configuration's. The weighted
/// family's parameters hold the original cascade's.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_algorithm_lowest_score_default() -> weir_algorithm {
    algorithm_with(WEIR_ALGORITHM_LOWEST_SCORE)
}

/// The weighted family with the original cascade's parameters (6 buckets of 5 s with decay 3, the
/// weighted random cascade, weights `rate^3`, a floor of 0.0001). The lowest-score family's parameters
/// hold its defaults.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_algorithm_weighted_default() -> weir_algorithm {
    algorithm_with(WEIR_ALGORITHM_WEIGHTED)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{
        weir_health_ewma_default, WEIR_DRAW_CASCADE_APPROX, WEIR_DRAW_WEIGHTED_PICK,
    };
    use core::time::Duration;
    use weir_core::balance::{Draw, EwmaHealth, WeightedHealth};

    #[test]
    fn the_fillers_are_the_cores_families() {
        assert_eq!(
            algorithm_from_c(&weir_algorithm_lowest_score_default()),
            Ok(Algorithm::LOWEST_SCORE)
        );
        assert_eq!(
            algorithm_from_c(&weir_algorithm_weighted_default()),
            Ok(Algorithm::CASCADE)
        );
        // Each filler holds the other family's defaults too: switching the tag gives that family.
        let mut a = weir_algorithm_lowest_score_default();
        a.family = WEIR_ALGORITHM_WEIGHTED;
        assert_eq!(a, weir_algorithm_weighted_default());
    }

    #[test]
    fn every_family_and_draw_round_trips() {
        let slow = LowestScore::with_half_lives(Duration::from_secs(2), Duration::from_secs(120));
        let pick = Weighted {
            health: WeightedHealth::Ewma(EwmaHealth { half_life: 7 }),
            draw: Draw::WeightedPick,
            weight_exponent: 2.5,
            floor: 0.01,
        };
        let probation = LowestScore {
            probe_fraction: 0.01,
            forgiveness: 1.0,
            probe_after_ns: 3_600_000_000_000,
            slow_ratio: 64.0,
            ..slow
        };
        for core in [
            Algorithm::LowestScore(slow),
            Algorithm::LowestScore(probation),
            Algorithm::Weighted(pick),
            Algorithm::Weighted(Weighted {
                draw: Draw::CascadeApprox,
                ..Weighted::CASCADE
            }),
        ] {
            assert_eq!(algorithm_from_c(&algorithm_to_c(core)), Ok(core));
        }
        let mut c = weir_algorithm_weighted_default();
        c.weighted.health = weir_health_ewma_default();
        c.weighted.health.ewma.half_life = 7;
        c.weighted.draw = WEIR_DRAW_WEIGHTED_PICK;
        c.weighted.weight_exponent = 2.5;
        c.weighted.floor = 0.01;
        assert_eq!(algorithm_from_c(&c), Ok(Algorithm::Weighted(pick)));
        c.weighted.draw = WEIR_DRAW_CASCADE_APPROX;
        assert!(matches!(
            algorithm_from_c(&c),
            Ok(Algorithm::Weighted(Weighted {
                draw: Draw::CascadeApprox,
                ..
            }))
        ));
    }

    /// Each lowest-score field lands in its own core field and comes back from it (a round trip alone
    /// would not see two fields of one type swapped both ways): every value differs from the others and
    /// from its default, and the whole is valid.
    #[test]
    fn lowest_score_fields_are_the_cores_by_name() {
        let c = weir_lowest_score {
            success_half_life_ns: 2_000_000,
            failure_half_life_ns: 3_000_000,
            dropped_cost: 0.25,
            throttled_cost: 0.125,
            client_error_cost: 0.0625,
            penalty: 7.0,
            ratio_penalty: 9.0,
            probe_fraction: 0.2,
            forgiveness: 0.5,
            probe_after_ns: 4_000_000,
            slow_ratio: 2.5,
        };
        let core = LowestScore {
            success_half_life_ns: 2_000_000,
            failure_half_life_ns: 3_000_000,
            dropped_cost: 0.25,
            throttled_cost: 0.125,
            client_error_cost: 0.0625,
            penalty: 7.0,
            ratio_penalty: 9.0,
            probe_fraction: 0.2,
            forgiveness: 0.5,
            probe_after_ns: 4_000_000,
            slow_ratio: 2.5,
        };
        assert_eq!(LowestScore::from(c), core);
        assert_eq!(weir_lowest_score::from(core), c);
        let mut config = crate::config::weir_config_default();
        config.algorithm.lowest_score = c;
        let back = crate::config::config_from_c(&config).map(|k| k.algorithm);
        assert_eq!(back, Ok(Algorithm::LowestScore(core)));
        // Probation and the slowness term are off in the filler, as in the core's default.
        let d = weir_algorithm_lowest_score_default().lowest_score;
        assert_eq!(
            (
                d.probe_fraction,
                d.forgiveness,
                d.probe_after_ns,
                d.slow_ratio
            ),
            (0.0, 0.0, 0, 0.0)
        );
    }
}
