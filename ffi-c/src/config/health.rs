//! Health models: the `WEIR_HEALTH_*` tags, `weir_health` with each model's parameters, their
//! `weir_health_*_default()` fillers, and the conversions to and from the core's [`HealthModel`].

use super::unknown;
use crate::boundary::Error;
use weir_core::balance::{BucketHealth, DecayHealth, EwmaHealth, HealthModel};

/// Health model (a `weir_health`'s `model`): one of the `WEIR_HEALTH_*` values.
#[allow(non_camel_case_types)]
pub type weir_health_model = u32;
/// Two time-decayed counters per node (the default; `weir_health.decay`).
pub const WEIR_HEALTH_DECAY: weir_health_model = 0;
/// The seeds' bucket window with a sticky bucket (`weir_health.buckets`).
pub const WEIR_HEALTH_BUCKETS: weir_health_model = 1;
/// One exponentially weighted success rate per node (`weir_health.ewma`).
pub const WEIR_HEALTH_EWMA: weir_health_model = 2;

/// The decay model's parameters (defaults: 1 s, 30 s, 1, 0.1, 0.01, 10, 16).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_decay_health {
    /// Half-life of the success counter, ns; 1 ms ..= 1 hour.
    pub success_half_life_ns: u64,
    /// Half-life of the failure counter, ns; 1 ms ..= 1 hour.
    pub failure_half_life_ns: u64,
    /// What a Dropped outcome (503, 504, a timeout) adds to the failures; in [0, 1]. 1 (a whole
    /// failure) by default; 0.1 reads a shedding node as busy rather than broken (see the Rust docs of
    /// `DecayHealth::dropped_cost`).
    pub dropped_cost: f32,
    /// What a Throttled outcome (429) adds to the failures; in [0, 1].
    pub throttled_cost: f32,
    /// What a ClientError outcome (another 4xx) adds to the failures; in [0, 1].
    pub client_error_cost: f32,
    /// Penalty per recent failure, in in-flight requests; in [0, 1e6].
    pub penalty: f32,
    /// Penalty per doubling of failures over successes; in [0, 1e6].
    pub ratio_penalty: f32,
}

/// The seeds' bucket window (defaults: 6 buckets of 5 s, decay 3).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_buckets_health {
    /// Buckets in the window, 1..=8.
    pub count: u32,
    /// Width of one bucket, ns; at least 1.
    pub width_ns: u64,
    /// Each bucket weighs `decay` times the next older one; finite, >= 1.
    pub decay: f64,
}

/// The exponentially weighted success rate (default half-life: 32 outcomes).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_ewma_health {
    /// Outcomes after which an outcome's influence has halved; at least 1.
    pub half_life: u32,
}

/// A health model: `model` says which of the three parameter sets is used.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_health {
    /// `WEIR_HEALTH_DECAY`, `WEIR_HEALTH_BUCKETS` or `WEIR_HEALTH_EWMA`.
    pub model: weir_health_model,
    /// Used when `model` is `WEIR_HEALTH_DECAY`.
    pub decay: weir_decay_health,
    /// Used when `model` is `WEIR_HEALTH_BUCKETS`.
    pub buckets: weir_buckets_health,
    /// Used when `model` is `WEIR_HEALTH_EWMA`.
    pub ewma: weir_ewma_health,
}

impl From<DecayHealth> for weir_decay_health {
    fn from(d: DecayHealth) -> Self {
        weir_decay_health {
            success_half_life_ns: d.success_half_life_ns,
            failure_half_life_ns: d.failure_half_life_ns,
            dropped_cost: d.dropped_cost,
            throttled_cost: d.throttled_cost,
            client_error_cost: d.client_error_cost,
            penalty: d.penalty,
            ratio_penalty: d.ratio_penalty,
        }
    }
}

impl From<weir_decay_health> for DecayHealth {
    fn from(d: weir_decay_health) -> Self {
        DecayHealth {
            success_half_life_ns: d.success_half_life_ns,
            failure_half_life_ns: d.failure_half_life_ns,
            dropped_cost: d.dropped_cost,
            throttled_cost: d.throttled_cost,
            client_error_cost: d.client_error_cost,
            penalty: d.penalty,
            ratio_penalty: d.ratio_penalty,
        }
    }
}

impl From<BucketHealth> for weir_buckets_health {
    fn from(b: BucketHealth) -> Self {
        weir_buckets_health {
            // A count above `u32::MAX` stays invalid (validation refuses any above MAX_BUCKETS).
            count: u32::try_from(b.count).unwrap_or(u32::MAX),
            width_ns: b.width_ns,
            decay: b.decay,
        }
    }
}

impl From<weir_buckets_health> for BucketHealth {
    fn from(b: weir_buckets_health) -> Self {
        BucketHealth {
            count: usize::try_from(b.count).unwrap_or(usize::MAX),
            width_ns: b.width_ns,
            decay: b.decay,
        }
    }
}

/// Every health model's defaults, with `model` chosen.
fn health_with(model: weir_health_model) -> weir_health {
    weir_health {
        model,
        decay: DecayHealth::DEFAULT.into(),
        buckets: BucketHealth::DEFAULT.into(),
        ewma: weir_ewma_health {
            half_life: EwmaHealth::DEFAULT.half_life,
        },
    }
}

/// The C form of a core health model: its parameters over the other models' defaults.
pub(super) fn health_to_c(model: HealthModel) -> weir_health {
    match model {
        HealthModel::Decay(d) => weir_health {
            decay: d.into(),
            ..health_with(WEIR_HEALTH_DECAY)
        },
        HealthModel::Buckets(b) => weir_health {
            buckets: b.into(),
            ..health_with(WEIR_HEALTH_BUCKETS)
        },
        HealthModel::Ewma(EwmaHealth { half_life }) => weir_health {
            ewma: weir_ewma_health { half_life },
            ..health_with(WEIR_HEALTH_EWMA)
        },
    }
}

/// The core health model a C one describes (validated with the whole configuration); an unknown
/// `model` is `WEIR_ERR_INVALID_ARGUMENT`.
pub(super) fn health_from_c(c: &weir_health) -> Result<HealthModel, Error> {
    Ok(match c.model {
        WEIR_HEALTH_DECAY => HealthModel::Decay(c.decay.into()),
        WEIR_HEALTH_BUCKETS => HealthModel::Buckets(c.buckets.into()),
        WEIR_HEALTH_EWMA => HealthModel::Ewma(EwmaHealth {
            half_life: c.ewma.half_life,
        }),
        k => {
            return Err(unknown(
                "health.model",
                k,
                "WEIR_HEALTH_DECAY (0), WEIR_HEALTH_BUCKETS (1), WEIR_HEALTH_EWMA (2)",
            ))
        }
    })
}

/// The decay model with its defaults (successes halve every 1 s, failures every 30 s; 0.1, 0.01, 10,
/// 16). The other models' parameters hold their defaults too.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_health_decay_default() -> weir_health {
    health_with(WEIR_HEALTH_DECAY)
}

/// The seeds' bucket model with its defaults (6 buckets of 5 s, decay 3).
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_health_buckets_default() -> weir_health {
    health_with(WEIR_HEALTH_BUCKETS)
}

/// The average model with its default (a half-life of 32 outcomes).
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_health_ewma_default() -> weir_health {
    health_with(WEIR_HEALTH_EWMA)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{config_from_c, config_to_c, WEIR_POLICY_LOWEST_SCORE};
    use weir_core::Config;

    #[test]
    fn health_defaults_are_the_cores() {
        let base = Config::cascade();
        for (h, core) in [
            (weir_health_decay_default(), HealthModel::DECAY),
            (weir_health_buckets_default(), HealthModel::SEED_BUCKETS),
            (weir_health_ewma_default(), HealthModel::EWMA),
        ] {
            let mut c = config_to_c(&base);
            c.health = h;
            if h.model == WEIR_HEALTH_DECAY {
                c.policy = WEIR_POLICY_LOWEST_SCORE;
            }
            assert_eq!(config_from_c(&c).unwrap().health, core);
        }
    }
}
