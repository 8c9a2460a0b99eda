//! Balancer configuration, validated once at construction.

use crate::balance::error::ConfigError;
use crate::balance::health::decay::{Halving, Penalty};
use crate::balance::health::HealthModel;
use crate::balance::policy::Policy;
use crate::limit::{CiadLimit, Limit, LimitAlgorithm};

/// The most buckets a node's window can have (each bucket is one 64-bit word in the node's slot).
pub const MAX_BUCKETS: usize = 8;
/// The most node slots a balancer can have.
pub const MAX_NODES: usize = 1 << 16;

/// Everything a [`Balancer`](crate::balance::Balancer) is built from.
///
/// Two presets: [`Config::default()`], the algorithm that wins in weir's simulator (time-decayed health,
/// lowest score, an adaptive CIAD limit), and [`Config::seeds()`], [the seeds'](crate#vocabulary)
/// algorithm exactly (bucket window, weighted cascade, a fixed limit of 100). Change any field with
/// struct update syntax:
///
/// ```
/// use weir::{Config, balance::HealthModel, balance::Policy};
/// let config = Config { policy: Policy::WeightedPick, health: HealthModel::Ewma { half_life: 20 }, ..Config::seeds() };
/// assert!(config.validate().is_ok());
/// let bad = Config { weight_exponent: f64::NAN, ..Config::seeds() };
/// assert!(bad.validate().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// Health model (default: [`HealthModel::DECAY`]; seeds: [`HealthModel::SEED_BUCKETS`]).
    pub health: HealthModel,
    /// The weighted policies' weight = success rate ^ this (seeds: 3). Finite, in (0, 64]. Unused by
    /// [`Policy::LowestScore`].
    pub weight_exponent: f64,
    /// The weighted policies' recovery floor: a node with no recent data but a recorded rate is floored
    /// at `floor / active_nodes` (seeds: 0.0001). Finite, in (0, 1]. Unused by [`Policy::LowestScore`].
    pub floor: f64,
    /// Selection policy (default: [`Policy::LowestScore`]; seeds: [`Policy::Cascade`]).
    pub policy: Policy,
    /// The per-node concurrency limit (default: dialogue's CIAD with a fast start; seeds: fixed at 100).
    pub limit: LimitAlgorithm,
    /// Seed for the per-thread random generators of the `std`, C and Python layers.
    pub seed: u64,
    /// The most callers that may wait for room at once in the `std` layer's waiting acquires
    /// (`Balancer::acquire_wait` and its async form); a caller that finds the queue full fails fast.
    /// At most [`MAX_WAITERS`]; 0 turns waiting off (every waiting acquire fails fast when no node has
    /// room). Unused without `std`. Default 1,024.
    pub max_waiters: u32,
}

/// The most waiters a [`Config::max_waiters`] may allow.
pub const MAX_WAITERS: u32 = 1 << 20;

impl Default for Config {
    /// The default algorithm: [`HealthModel::DECAY`] (successes halve every second, failures every 30 s),
    /// [`Policy::LowestScore`] (the node with room whose in-flight count plus failure penalty is lowest,
    /// with dialogue's give-up rule) and a CIAD limit (dialogue's, starting at 20, with a fast start).
    ///
    /// ```
    /// use weir::{Config, balance::{HealthModel, Policy}, limit::LimitAlgorithm};
    /// let c = Config::default();
    /// assert_eq!((c.health, c.policy), (HealthModel::DECAY, Policy::LowestScore));
    /// assert!(matches!(c.limit, LimitAlgorithm::Ciad(ciad) if ciad.fast_start && ciad.initial_limit == 20));
    /// ```
    fn default() -> Self {
        Config {
            health: HealthModel::DECAY,
            weight_exponent: 3.0,
            floor: 0.0001,
            policy: Policy::LowestScore,
            limit: LimitAlgorithm::Ciad(CiadLimit {
                fast_start: true,
                ..CiadLimit::default()
            }),
            seed: 0,
            max_waiters: 1024,
        }
    }
}

impl Config {
    /// [The seeds'](crate#vocabulary) algorithm, exactly as the seeds describe it: 6 buckets of 5 s with
    /// decay 3 and a sticky bucket, weights `success_rate³`, the weighted random cascade, a fixed limit of
    /// 100 per node, fail fast. Choose it to reproduce the seeds' behaviour, or where a call's cost does
    /// not depend on the node it goes to and a fixed cap is what you want; [`Config::default()`] does
    /// better in every scenario of weir's simulator.
    ///
    /// ```
    /// use weir::{Config, balance::{HealthModel, Policy}, limit::{FixedLimit, LimitAlgorithm}};
    /// let c = Config::seeds();
    /// assert_eq!((c.health, c.policy), (HealthModel::SEED_BUCKETS, Policy::Cascade));
    /// assert_eq!(c.limit, LimitAlgorithm::Fixed(FixedLimit { limit: 100 }));
    /// assert_eq!((c.weight_exponent, c.floor), (3.0, 0.0001));
    /// ```
    pub const fn seeds() -> Config {
        Config {
            health: HealthModel::SEED_BUCKETS,
            weight_exponent: 3.0,
            floor: 0.0001,
            policy: Policy::Cascade,
            limit: LimitAlgorithm::Fixed(crate::limit::FixedLimit { limit: 100 }),
            seed: 0,
            max_waiters: 1024,
        }
    }
}

/// A validated configuration with its derived constants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    pub(crate) config: Config,
    pub(crate) model: PreparedModel,
    /// `Some(n)` when the exponent is a small whole number: the weight is then `rate^n` by multiplication.
    pub(crate) int_exponent: Option<u32>,
    /// The balancer's clock: epochs of this width (the bucket width; [`CLOCK_EPOCH_NS`] for the average
    /// model), kept in the rotation word by the acquires (see `Balancer::rotate`).
    pub(crate) clock: crate::internal::div::Divisor,
    pub(crate) clock_ns: u64,
    /// How far past the clock's epoch start a release is dated at the latest: to the last nanosecond of
    /// the epoch after the clock's, `2 * width - 1` (see [`Balancer::release`](crate::Balancer::release)).
    pub(crate) reach: u64,
}

/// The balancer's clock epoch under the average model, which has no buckets of its own: the clock that
/// dates releases keeps epochs of this width, as the seeds' 5 s buckets would (see
/// [`Balancer::release`](crate::Balancer::release)). Under the decay model the epoch is a quarter of the
/// shorter half-life (250 ms by default).
pub const CLOCK_EPOCH_NS: u64 = 5_000_000_000;

// The decay model's factor tables make it the large variant; one `Prepared` lives in each balancer, and
// the core cannot box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
pub(crate) enum PreparedModel {
    Buckets {
        count: u64,
        /// The bucket width, for `now / width` without a division instruction.
        width: crate::internal::div::Divisor,
        /// `count`, for a bucket's place in the ring (`epoch % count`) on every outcome, likewise.
        ring: crate::internal::div::Divisor,
        /// `decay^-age` for age 0..count.
        weights: [f64; MAX_BUCKETS],
    },
    Ewma {
        /// Step toward each new outcome: `1 - 2^(-1/half_life)`.
        alpha: f64,
    },
    Decay {
        success: Halving,
        failure: Halving,
        throttled: f64,
        client_error: f64,
        penalty: Penalty,
    },
}

/// The decay model's half-lives: 1 ms ..= 1 hour.
const HALF_LIFE_NS: core::ops::RangeInclusive<u64> = 1_000_000..=3_600_000_000_000;

impl Config {
    /// Checks every parameter and returns the first problem found.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.prepare().map(|_| ())
    }

    pub(crate) fn prepare(&self) -> Result<Prepared, ConfigError> {
        let model = match self.health {
            HealthModel::Buckets {
                count,
                width_ns,
                decay,
            } => {
                if count == 0 || count > MAX_BUCKETS {
                    return Err(ConfigError::BucketCount);
                }
                let Some(width) = crate::internal::div::Divisor::new(width_ns) else {
                    return Err(ConfigError::BucketWidth);
                };
                if !(decay.is_finite() && decay >= 1.0) {
                    return Err(ConfigError::Decay);
                }
                let mut weights = [0.0; MAX_BUCKETS];
                for (age, slot) in weights.iter_mut().enumerate().take(count) {
                    // decay^age is exact for whole decays and these ages; one rounding in the division.
                    *slot = 1.0 / libm::pow(decay, age as f64);
                }
                PreparedModel::Buckets {
                    count: count as u64,
                    width,
                    // `count >= 1` was checked above.
                    ring: crate::internal::div::Divisor::new(count as u64)
                        .ok_or(ConfigError::BucketCount)?,
                    weights,
                }
            }
            HealthModel::Ewma { half_life } => {
                if half_life == 0 {
                    return Err(ConfigError::HalfLife);
                }
                PreparedModel::Ewma {
                    alpha: 1.0 - libm::exp2(-1.0 / f64::from(half_life)),
                }
            }
            HealthModel::Decay {
                success_half_life_ns,
                failure_half_life_ns,
                throttled_cost,
                client_error_cost,
                penalty,
                ratio_penalty,
            } => {
                if !HALF_LIFE_NS.contains(&success_half_life_ns)
                    || !HALF_LIFE_NS.contains(&failure_half_life_ns)
                {
                    return Err(ConfigError::DecayHalfLife);
                }
                // NaN is in no range.
                let cost = |c: f32| (0.0..=1.0).contains(&c);
                if !(cost(throttled_cost) && cost(client_error_cost)) {
                    return Err(ConfigError::OutcomeCost);
                }
                let coefficient = |c: f32| (0.0..=1e6).contains(&c);
                if !(coefficient(penalty) && coefficient(ratio_penalty)) {
                    return Err(ConfigError::Penalty);
                }
                PreparedModel::Decay {
                    success: Halving::new(success_half_life_ns),
                    failure: Halving::new(failure_half_life_ns),
                    throttled: f64::from(throttled_cost),
                    client_error: f64::from(client_error_cost),
                    penalty: Penalty {
                        per_failure: f64::from(penalty),
                        per_doubling: f64::from(ratio_penalty),
                    },
                }
            }
        };
        let decay = matches!(self.health, HealthModel::Decay { .. });
        if decay != (self.policy == Policy::LowestScore) {
            return Err(ConfigError::ModelPolicy);
        }
        if !(self.weight_exponent.is_finite()
            && self.weight_exponent > 0.0
            && self.weight_exponent <= 64.0)
        {
            return Err(ConfigError::WeightExponent);
        }
        if !(self.floor.is_finite() && self.floor > 0.0 && self.floor <= 1.0) {
            return Err(ConfigError::Floor);
        }
        self.limit.validate()?;
        if self.max_waiters > MAX_WAITERS {
            return Err(ConfigError::MaxWaiters);
        }
        let e = self.weight_exponent;
        let int_exponent = if e == libm::trunc(e) && e <= 8.0 {
            Some(e as u32)
        } else {
            None
        };
        let clock_ns = match self.health {
            HealthModel::Buckets { width_ns, .. } => width_ns,
            HealthModel::Ewma { .. } => CLOCK_EPOCH_NS,
            // A quarter of the shorter half-life: the rotation recomputes every penalty this often, so a
            // cached penalty is never more than 16 % (2^(1/4)) away from its decayed value.
            HealthModel::Decay {
                success_half_life_ns,
                failure_half_life_ns,
                ..
            } => success_half_life_ns.min(failure_half_life_ns) / 4,
        };
        let reach = clock_ns.saturating_mul(2) - 1;
        // `width_ns >= 1` was checked with the model.
        let clock = crate::internal::div::Divisor::new(clock_ns).ok_or(ConfigError::BucketWidth)?;
        Ok(Prepared {
            config: *self,
            model,
            int_exponent,
            clock,
            clock_ns,
            reach,
        })
    }
}

impl Prepared {
    /// Whether an acquire at `now` moves the clock (the rotation word, which holds the start of the epoch
    /// the caches were last rotated to): `now` outside `[start - width, start + width)`. The caches are
    /// kept for one epoch, `[start, start + width)`; an acquire up to one epoch earlier trusts them too, so
    /// that a thread whose clock reading is up to one epoch older than another's does not rotate the
    /// caches back (see `Balancer::rotate`).
    #[inline]
    pub(crate) fn rotation_due(&self, start: u64, now: u64) -> bool {
        now >= start.saturating_add(self.clock_ns) || now < start.saturating_sub(self.clock_ns)
    }

    /// The first nanosecond of the clock epoch of `now` (`<= now`: the product cannot overflow).
    #[inline]
    pub(crate) fn epoch_start(&self, now: u64) -> u64 {
        crate::balance::health::epoch_at(now, self.clock).saturating_mul(self.clock_ns)
    }

    /// The latest `now` a release is dated at while the rotation word is `rotation`: the end of the epoch
    /// after the rotation's (see [`Balancer::release`](crate::Balancer::release)).
    #[inline]
    pub(crate) fn horizon(&self, rotation: u64) -> u64 {
        rotation.saturating_add(self.reach)
    }

    /// What the limiter is told of `outcome`: a sample marked dropped (`Some(true)`), a success sample
    /// (`Some(false)`), or nothing. The seeds' models: `Success` and `Dropped` only (and `Throttled` as
    /// `Dropped`); the decay model: a drop on `Failure` and `Dropped` as dialogue's endpoint limiter does
    /// on a 500, a success on `Success` and `ClientError` (the node answered), nothing on `Throttled` (a
    /// 429 asks to try elsewhere; backing off on it starves a node that rate-limits fairly). See
    /// [`Outcome`](crate::Outcome).
    #[inline]
    pub(crate) fn limit_reading(&self, outcome: crate::Outcome) -> Option<bool> {
        use crate::Outcome::*;
        match self.model {
            PreparedModel::Decay { .. } => match outcome {
                Success | ClientError => Some(false),
                Failure | Dropped => Some(true),
                Throttled | Ignored => None,
            },
            PreparedModel::Buckets { .. } | PreparedModel::Ewma { .. } => {
                match outcome.as_seeds() {
                    Success => Some(false),
                    Dropped => Some(true),
                    _ => None,
                }
            }
        }
    }

    /// `rate ^ weight_exponent`, for a rate in [0, 1].
    #[inline]
    pub(crate) fn weight_of(&self, rate: f64) -> f64 {
        match self.int_exponent {
            // The default, written out: the same two products as the loop below, without its branches.
            Some(3) => rate * rate * rate,
            Some(n) => {
                let mut w = 1.0;
                for _ in 0..n {
                    w *= rate;
                }
                w
            }
            None => libm::pow(rate, self.config.weight_exponent),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_each_bad_parameter() {
        let d = Config::seeds();
        let cases = [
            (
                Config {
                    health: HealthModel::Buckets {
                        count: 0,
                        width_ns: 1,
                        decay: 3.0,
                    },
                    ..d
                },
                ConfigError::BucketCount,
            ),
            (
                Config {
                    health: HealthModel::Buckets {
                        count: 9,
                        width_ns: 1,
                        decay: 3.0,
                    },
                    ..d
                },
                ConfigError::BucketCount,
            ),
            (
                Config {
                    health: HealthModel::Buckets {
                        count: 6,
                        width_ns: 0,
                        decay: 3.0,
                    },
                    ..d
                },
                ConfigError::BucketWidth,
            ),
            (
                Config {
                    health: HealthModel::Buckets {
                        count: 6,
                        width_ns: 1,
                        decay: 0.5,
                    },
                    ..d
                },
                ConfigError::Decay,
            ),
            (
                Config {
                    health: HealthModel::Buckets {
                        count: 6,
                        width_ns: 1,
                        decay: f64::NAN,
                    },
                    ..d
                },
                ConfigError::Decay,
            ),
            (
                Config {
                    health: HealthModel::Buckets {
                        count: 6,
                        width_ns: 1,
                        decay: f64::INFINITY,
                    },
                    ..d
                },
                ConfigError::Decay,
            ),
            (
                Config {
                    health: HealthModel::Ewma { half_life: 0 },
                    ..d
                },
                ConfigError::HalfLife,
            ),
            (
                Config {
                    weight_exponent: 0.0,
                    ..d
                },
                ConfigError::WeightExponent,
            ),
            (
                Config {
                    weight_exponent: -1.0,
                    ..d
                },
                ConfigError::WeightExponent,
            ),
            (
                Config {
                    weight_exponent: f64::NAN,
                    ..d
                },
                ConfigError::WeightExponent,
            ),
            (Config { floor: 0.0, ..d }, ConfigError::Floor),
            (Config { floor: 1.5, ..d }, ConfigError::Floor),
            (
                Config {
                    floor: f64::NAN,
                    ..d
                },
                ConfigError::Floor,
            ),
        ];
        for (config, err) in cases {
            assert_eq!(config.validate(), Err(err), "{config:?}");
        }
        assert_eq!(d.validate(), Ok(()));
    }

    #[test]
    fn decay_weights_and_exponent() {
        let p = Config::seeds().prepare().unwrap();
        match p.model {
            PreparedModel::Buckets { weights, count, .. } => {
                assert_eq!(count, 6);
                assert_eq!(
                    &weights[..6],
                    &[
                        1.0,
                        1.0 / 3.0,
                        1.0 / 9.0,
                        1.0 / 27.0,
                        1.0 / 81.0,
                        1.0 / 243.0
                    ]
                );
            }
            _ => unreachable!(),
        }
        assert_eq!(p.int_exponent, Some(3));
        assert_eq!(p.weight_of(0.5), 0.125);
        let p = Config {
            weight_exponent: 2.5,
            ..Config::seeds()
        }
        .prepare()
        .unwrap();
        assert_eq!(p.int_exponent, None);
        assert!((p.weight_of(0.25) - 0.03125).abs() < 1e-15);
        let p = Config {
            health: HealthModel::Ewma { half_life: 1 },
            ..Config::seeds()
        }
        .prepare()
        .unwrap();
        match p.model {
            PreparedModel::Ewma { alpha } => assert_eq!(alpha, 0.5),
            _ => unreachable!(),
        }
    }
}
