//! The weighted family: `weir_weighted` (a success-rate model, a draw, the weight's exponent and the
//! recovery floor), the `WEIR_HEALTH_*` and `WEIR_DRAW_*` tags, `weir_health` with each model's
//! parameters, the `weir_health_*_default()` fillers, and the conversions to and from the core's
//! [`Weighted`].

use super::unknown;
use crate::boundary::Error;
use weir_core::balance::{BucketHealth, Draw, EwmaHealth, Weighted, WeightedHealth};

/// Success-rate model (a `weir_health`'s `model`): one of the `WEIR_HEALTH_*` values.
#[allow(non_camel_case_types)]
pub type weir_health_model = u32;
/// The original cascade's bucket window with a sticky bucket (`weir_health.buckets`).
pub const WEIR_HEALTH_BUCKETS: weir_health_model = 0;
/// One exponentially weighted success rate per node (`weir_health.ewma`).
pub const WEIR_HEALTH_EWMA: weir_health_model = 1;

/// How the weighted family draws a node from the weights (a `weir_weighted`'s `draw`): one of the
/// `WEIR_DRAW_*` values.
#[allow(non_camel_case_types)]
pub type weir_draw = u32;
/// The original cascade's weighted random fallback cascade.
pub const WEIR_DRAW_CASCADE: weir_draw = 0;
/// The gist's cheaper approximate cascade.
pub const WEIR_DRAW_CASCADE_APPROX: weir_draw = 1;
/// One weighted pick among the nodes with room (the cascade's later variant).
pub const WEIR_DRAW_WEIGHTED_PICK: weir_draw = 2;

/// The original cascade's bucket window (defaults: 6 buckets of 5 s, decay 3).
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

/// A success-rate model: `model` says which of the two parameter sets is used.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_health {
    /// `WEIR_HEALTH_BUCKETS` or `WEIR_HEALTH_EWMA`.
    pub model: weir_health_model,
    /// Used when `model` is `WEIR_HEALTH_BUCKETS`.
    pub buckets: weir_buckets_health,
    /// Used when `model` is `WEIR_HEALTH_EWMA`.
    pub ewma: weir_ewma_health,
}

/// The weighted family's parameters: each node's weight is its success rate (from `health`) to the
/// power `weight_exponent`, and `draw` picks a node from the weights (defaults: the original
/// cascade's).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_weighted {
    /// How a node's success rate is measured.
    pub health: weir_health,
    /// One of the `WEIR_DRAW_*` values.
    pub draw: weir_draw,
    /// A node's weight = success rate ^ this; finite, in (0, 64].
    pub weight_exponent: f64,
    /// The recovery floor: a node with no recent data but a recorded rate is floored at
    /// `floor / active nodes`; finite, in (0, 1].
    pub floor: f64,
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

/// Both models' defaults, with `model` chosen.
fn health_with(model: weir_health_model) -> weir_health {
    weir_health {
        model,
        buckets: BucketHealth::DEFAULT.into(),
        ewma: weir_ewma_health {
            half_life: EwmaHealth::DEFAULT.half_life,
        },
    }
}

/// The C form of the core's weighted parameters: the model's parameters over the other model's
/// defaults.
pub(super) fn weighted_to_c(w: Weighted) -> weir_weighted {
    let health = match w.health {
        WeightedHealth::Buckets(b) => weir_health {
            buckets: b.into(),
            ..health_with(WEIR_HEALTH_BUCKETS)
        },
        WeightedHealth::Ewma(EwmaHealth { half_life }) => weir_health {
            ewma: weir_ewma_health { half_life },
            ..health_with(WEIR_HEALTH_EWMA)
        },
    };
    weir_weighted {
        health,
        draw: match w.draw {
            Draw::Cascade => WEIR_DRAW_CASCADE,
            Draw::CascadeApprox => WEIR_DRAW_CASCADE_APPROX,
            Draw::WeightedPick => WEIR_DRAW_WEIGHTED_PICK,
        },
        weight_exponent: w.weight_exponent,
        floor: w.floor,
    }
}

/// The core's weighted parameters a C struct describes (validated with the whole configuration); an
/// unknown `health.model` or `draw` is `WEIR_ERR_INVALID_ARGUMENT`.
pub(super) fn weighted_from_c(c: &weir_weighted) -> Result<Weighted, Error> {
    let health = match c.health.model {
        WEIR_HEALTH_BUCKETS => WeightedHealth::Buckets(c.health.buckets.into()),
        WEIR_HEALTH_EWMA => WeightedHealth::Ewma(EwmaHealth {
            half_life: c.health.ewma.half_life,
        }),
        k => {
            return Err(unknown(
                "algorithm.weighted.health.model",
                k,
                "WEIR_HEALTH_BUCKETS (0), WEIR_HEALTH_EWMA (1)",
            ))
        }
    };
    let draw =
        match c.draw {
            WEIR_DRAW_CASCADE => Draw::Cascade,
            WEIR_DRAW_CASCADE_APPROX => Draw::CascadeApprox,
            WEIR_DRAW_WEIGHTED_PICK => Draw::WeightedPick,
            k => return Err(unknown(
                "algorithm.weighted.draw",
                k,
                "WEIR_DRAW_CASCADE (0), WEIR_DRAW_CASCADE_APPROX (1), WEIR_DRAW_WEIGHTED_PICK (2)",
            )),
        };
    Ok(Weighted {
        health,
        draw,
        weight_exponent: c.weight_exponent,
        floor: c.floor,
    })
}

/// The original cascade's bucket model with its defaults (6 buckets of 5 s, decay 3).
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

    #[test]
    fn health_defaults_are_the_cores() {
        for (h, core) in [
            (weir_health_buckets_default(), WeightedHealth::BUCKETS),
            (weir_health_ewma_default(), WeightedHealth::EWMA),
        ] {
            let c = weir_weighted {
                health: h,
                ..weighted_to_c(Weighted::CASCADE)
            };
            assert_eq!(weighted_from_c(&c).map(|w| w.health), Ok(core));
        }
    }
}
