//! Balancer configuration, validated once at construction: each mechanism (the health model, the weight,
//! the policy, the limit) checks its own fields and prepares its own runtime form; this file combines
//! them and adds the balancer's clock.

use crate::balance::health::{self, HealthModel, Weight};
use crate::balance::outcome::Outcome;
use crate::balance::policy::Policy;
use crate::balance::word::UNIT_SHIFT;
use crate::error::ConfigError;
use crate::internal::div::Divisor;
use crate::limit::{Limit, LimitAlgorithm};

/// The most node slots a balancer can have.
pub const MAX_NODES: usize = 1 << 16;
// The scan words of every node sum without overflow (see `word.rs`).
const _: () = assert!(MAX_NODES as u64 <= 1 << (62 - UNIT_SHIFT));

/// Everything a [`Balancer`](crate::balance::Balancer) is built from.
///
/// Two presets: [`Config::default()`], the algorithm that wins in weir's simulator (time-decayed health,
/// lowest score, an adaptive CIAD limit), and [`Config::seeds()`], [the seeds'](crate#vocabulary)
/// algorithm exactly (bucket window, weighted cascade, a fixed limit of 100). Change any field with
/// struct update syntax:
///
/// ```
/// use weir::{Config, balance::{EwmaHealth, HealthModel, Policy}};
/// let config = Config { policy: Policy::WeightedPick, health: HealthModel::Ewma(EwmaHealth { half_life: 20 }), ..Config::seeds() };
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
    /// Seed for the per-thread random generators of the `std`, C and Python layers (not to be confused
    /// with [`Config::seeds()`], the preset named after [the seeds](crate#vocabulary)).
    pub rng_seed: u64,
    /// The most callers that may wait for room at once in the `std` layer's waiting acquires
    /// (`Balancer::acquire_wait` and its async form); a caller that finds the queue full fails fast.
    /// At most [`MAX_WAITERS`]; 0 turns waiting off (every waiting acquire fails fast when no node has
    /// room). Unused without `std`. Default 1,024.
    pub max_waiters: u32,
}

/// The most waiters a [`Config::max_waiters`] may allow.
pub const MAX_WAITERS: u32 = 1 << 20;

#[cfg(all(feature = "decay", feature = "ciad"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "decay", feature = "ciad"))))]
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
            limit: LimitAlgorithm::Ciad(crate::limit::CiadLimit {
                fast_start: true,
                ..crate::limit::CiadLimit::default()
            }),
            rng_seed: 0,
            max_waiters: 1024,
        }
    }
}

#[cfg(all(feature = "buckets", feature = "fixed"))]
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
    #[cfg_attr(docsrs, doc(cfg(all(feature = "buckets", feature = "fixed"))))]
    pub const fn seeds() -> Config {
        Config {
            health: HealthModel::SEED_BUCKETS,
            weight_exponent: 3.0,
            floor: 0.0001,
            policy: Policy::Cascade,
            limit: LimitAlgorithm::Fixed(crate::limit::FixedLimit { limit: 100 }),
            rng_seed: 0,
            max_waiters: 1024,
        }
    }
}

/// A validated configuration with its derived constants.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    pub(crate) config: Config,
    /// The health model's runtime form and the weight.
    pub(crate) health: health::Prepared,
    /// The balancer's clock: epochs of this width (the bucket width; [`CLOCK_EPOCH_NS`] for the average
    /// model), kept in the rotation word by the acquires (see `Balancer::rotate`).
    ///
    /// [`CLOCK_EPOCH_NS`]: crate::balance::CLOCK_EPOCH_NS
    pub(crate) clock: Divisor,
    pub(crate) clock_ns: u64,
    /// How far past the clock's epoch start a release is dated at the latest: to the last nanosecond of
    /// the epoch after the clock's, `2 * width - 1` (see [`Balancer::release`](crate::Balancer::release)).
    pub(crate) reach: u64,
}

impl Config {
    /// Checks every parameter and returns the first problem found.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.prepare().map(|_| ())
    }

    pub(crate) fn prepare(&self) -> Result<Prepared, ConfigError> {
        let mut prepared = Prepared::unprepared(*self);
        prepared.prepare()?;
        Ok(prepared)
    }
}

impl Prepared {
    /// `config` as given, its runtime form still to compute: [`prepare`](Self::prepare) computes it in
    /// place, where the balancer keeps it (see `DecayHealth::prepare_into` for why in place).
    pub(crate) fn unprepared(config: Config) -> Prepared {
        Prepared {
            config,
            health: health::Prepared {
                model: config.health.unprepared(),
                weight: Weight::UNPREPARED,
            },
            clock: Divisor::ONE,
            clock_ns: 1,
            reach: 1,
        }
    }

    /// Checks the configuration and computes its runtime form, in place. Never inlined: its locals (the
    /// checks of every mechanism) then take stack only while it runs, not for the whole of
    /// `Balancer::new`.
    #[inline(never)]
    pub(crate) fn prepare(&mut self) -> Result<(), ConfigError> {
        // By reference: the configuration is not copied.
        let c = &self.config;
        // The checks run in this order, so that the first problem found is the same in every surface.
        c.health.prepare_into(&mut self.health.model)?;
        if c.health.is_decay() != c.policy.is_lowest_score() {
            return Err(ConfigError::ModelPolicy);
        }
        self.health.weight = Weight::new(c.weight_exponent)?;
        if !(c.floor.is_finite() && c.floor > 0.0 && c.floor <= 1.0) {
            return Err(ConfigError::Floor);
        }
        c.limit.validate()?;
        if c.max_waiters > MAX_WAITERS {
            return Err(ConfigError::MaxWaiters);
        }
        self.clock_ns = c.health.clock_ns();
        self.reach = self.clock_ns.saturating_mul(2) - 1;
        // `width_ns >= 1` was checked with the model.
        self.clock = Divisor::new(self.clock_ns).ok_or(ConfigError::BucketWidth)?;
        Ok(())
    }

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
        health::epoch_at(now, self.clock).saturating_mul(self.clock_ns)
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
    pub(crate) fn limit_reading(&self, outcome: Outcome) -> Option<bool> {
        match self.health.model {
            #[cfg(feature = "decay")]
            health::Model::Decay(_) => {
                use Outcome::*;
                match outcome {
                    Success | ClientError => Some(false),
                    Failure | Dropped => Some(true),
                    Throttled | Ignored => None,
                }
            }
            #[cfg(feature = "buckets")]
            health::Model::Buckets(_) => seeds_limit_reading(outcome),
            #[cfg(feature = "ewma")]
            health::Model::Ewma(_) => seeds_limit_reading(outcome),
        }
    }
}

/// What a limiter reads from an outcome under the seeds' models: only successes and drops.
#[cfg(any(feature = "buckets", feature = "ewma"))]
#[inline]
fn seeds_limit_reading(outcome: Outcome) -> Option<bool> {
    match outcome.as_seeds() {
        Outcome::Success => Some(false),
        Outcome::Dropped => Some(true),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::balance::{BucketHealth, EwmaHealth};

    #[test]
    fn rejects_each_bad_parameter() {
        let d = Config::seeds();
        let cases = [
            (
                Config {
                    health: HealthModel::Buckets(BucketHealth {
                        count: 0,
                        width_ns: 1,
                        decay: 3.0,
                    }),
                    ..d
                },
                ConfigError::BucketCount,
            ),
            (
                Config {
                    health: HealthModel::Buckets(BucketHealth {
                        count: 9,
                        width_ns: 1,
                        decay: 3.0,
                    }),
                    ..d
                },
                ConfigError::BucketCount,
            ),
            (
                Config {
                    health: HealthModel::Buckets(BucketHealth {
                        count: 6,
                        width_ns: 0,
                        decay: 3.0,
                    }),
                    ..d
                },
                ConfigError::BucketWidth,
            ),
            (
                Config {
                    health: HealthModel::Buckets(BucketHealth {
                        count: 6,
                        width_ns: 1,
                        decay: 0.5,
                    }),
                    ..d
                },
                ConfigError::Decay,
            ),
            (
                Config {
                    health: HealthModel::Buckets(BucketHealth {
                        count: 6,
                        width_ns: 1,
                        decay: f64::NAN,
                    }),
                    ..d
                },
                ConfigError::Decay,
            ),
            (
                Config {
                    health: HealthModel::Buckets(BucketHealth {
                        count: 6,
                        width_ns: 1,
                        decay: f64::INFINITY,
                    }),
                    ..d
                },
                ConfigError::Decay,
            ),
            (
                Config {
                    health: HealthModel::Ewma(EwmaHealth { half_life: 0 }),
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
}
