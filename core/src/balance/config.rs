//! Balancer configuration, validated once at construction: the algorithm (a family and its parameters)
//! and the limit each check their own fields and prepare their own runtime form; this file combines them.

use crate::balance::algorithm::{self, Algorithm};
use crate::balance::word::UNIT_SHIFT;
use crate::error::ConfigError;
use crate::limit::{Limit, LimitAlgorithm};

/// The most node slots a balancer can have.
pub const MAX_NODES: usize = 1 << 16;
// The scan words of every node sum without overflow (see `word.rs`).
const _: () = assert!(MAX_NODES as u64 <= 1 << (62 - UNIT_SHIFT));

/// Everything a [`Balancer`](crate::balance::Balancer) is built from: the algorithm, the per-node limit,
/// how many callers may wait for room, and the seed of the generators.
///
/// Two presets: [`Config::default()`], the algorithm that wins in weir's simulator (the lowest-score
/// family over time-decayed counters, an adaptive CIAD limit), and [`Config::cascade()`], [the original
/// cascade](crate#vocabulary) exactly (a bucket window, a weighted random cascade, a fixed limit of 100).
/// Change any field with struct update syntax:
///
/// ```
/// use weir::{Config, balance::{Algorithm, Draw, EwmaHealth, Weighted, WeightedHealth}};
/// let pick = Weighted { health: WeightedHealth::Ewma(EwmaHealth { half_life: 20 }), draw: Draw::WeightedPick, ..Weighted::CASCADE };
/// let config = Config { algorithm: Algorithm::Weighted(pick), ..Config::cascade() };
/// assert!(config.validate().is_ok());
/// let bad = Config { algorithm: Algorithm::Weighted(Weighted { weight_exponent: f64::NAN, ..Weighted::CASCADE }), ..Config::cascade() };
/// assert!(bad.validate().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Config {
    /// The algorithm: a family and its parameters (default: [`Algorithm::LOWEST_SCORE`]; the cascade:
    /// [`Algorithm::CASCADE`]).
    pub algorithm: Algorithm,
    /// The per-node concurrency limit (default: dialogue's CIAD with a fast start,
    /// [`LimitAlgorithm::default()`]; the cascade: fixed at 100).
    pub limit: LimitAlgorithm,
    /// The most callers that may wait for room at once in the `std` layer's waiting acquires
    /// (`Balancer::acquire_wait` and its async form); a caller that finds the queue full fails fast.
    /// At most [`MAX_WAITERS`]; 0 turns waiting off (every waiting acquire fails fast when no node has
    /// room). Unused without `std`. Default 1,024.
    pub max_waiters: u32,
    /// Seed for the per-thread random generators of the `std`, C and Python layers, and for the limit
    /// algorithms' probe jitter (default 0).
    pub seed: u64,
}

/// The most waiters a [`Config::max_waiters`] may allow.
pub const MAX_WAITERS: u32 = 1 << 20;

#[cfg(all(feature = "decay", feature = "ciad"))]
#[cfg_attr(docsrs, doc(cfg(all(feature = "decay", feature = "ciad"))))]
impl Default for Config {
    /// The default algorithm: [`Algorithm::LOWEST_SCORE`] (the node with room whose in-flight count plus
    /// failure penalty is lowest, with dialogue's give-up rule; successes halve every second, failures
    /// every 30 s) and a CIAD limit (dialogue's, starting at 20, with a fast start).
    ///
    /// ```
    /// use weir::{Config, balance::Algorithm, limit::LimitAlgorithm};
    /// let c = Config::default();
    /// assert_eq!(c.algorithm, Algorithm::LOWEST_SCORE);
    /// assert!(matches!(c.limit, LimitAlgorithm::Ciad(ciad) if ciad.fast_start && ciad.initial_limit == 20));
    /// assert_eq!((c.max_waiters, c.seed), (1024, 0));
    /// ```
    fn default() -> Self {
        Config {
            algorithm: Algorithm::LOWEST_SCORE,
            limit: LimitAlgorithm::default(),
            max_waiters: 1024,
            seed: 0,
        }
    }
}

#[cfg(all(feature = "buckets", feature = "fixed"))]
impl Config {
    /// [The original cascade](crate#vocabulary), exactly as its source describes it: 6 buckets of 5 s with
    /// decay 3 and a sticky bucket, weights `success_rate³`, the weighted random cascade, a fixed limit of
    /// 100 per node, fail fast. Choose it to reproduce that behaviour, or where a call's cost does not
    /// depend on the node it goes to and a fixed cap is what you want; [`Config::default()`] does better
    /// in every scenario of weir's simulator.
    ///
    /// ```
    /// use weir::{Config, balance::Algorithm, limit::{FixedLimit, LimitAlgorithm}};
    /// let c = Config::cascade();
    /// assert_eq!(c.algorithm, Algorithm::CASCADE);
    /// assert_eq!(c.limit, LimitAlgorithm::Fixed(FixedLimit { limit: 100 }));
    /// ```
    #[cfg_attr(docsrs, doc(cfg(all(feature = "buckets", feature = "fixed"))))]
    pub const fn cascade() -> Config {
        Config {
            algorithm: Algorithm::CASCADE,
            limit: LimitAlgorithm::Fixed(crate::limit::FixedLimit { limit: 100 }),
            max_waiters: 1024,
            seed: 0,
        }
    }
}

/// A validated configuration with the algorithm's runtime form.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    pub(crate) config: Config,
    pub(crate) algorithm: algorithm::Prepared,
}

impl Config {
    /// Checks every parameter and returns the first problem found: the algorithm's, then the limit's,
    /// then `max_waiters`.
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
    /// place, where the balancer keeps it (see `LowestScore::prepare_into` for why in place).
    pub(crate) fn unprepared(config: Config) -> Prepared {
        Prepared {
            config,
            algorithm: config.algorithm.unprepared(),
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
        c.algorithm.prepare_into(&mut self.algorithm)?;
        c.limit.validate()?;
        if c.max_waiters > MAX_WAITERS {
            return Err(ConfigError::MaxWaiters);
        }
        Ok(())
    }
}

#[cfg(all(test, feature = "buckets", feature = "ewma", feature = "fixed"))]
mod tests {
    use super::*;
    use crate::balance::{BucketHealth, EwmaHealth, Weighted, WeightedHealth};

    /// The cascade with its weighted parameters changed by `change`.
    fn cascade_with(change: impl FnOnce(&mut Weighted)) -> Config {
        let mut w = Weighted::CASCADE;
        change(&mut w);
        Config {
            algorithm: Algorithm::Weighted(w),
            ..Config::cascade()
        }
    }

    #[test]
    fn rejects_each_bad_parameter() {
        let buckets = |count, width_ns, decay| {
            cascade_with(|w| {
                w.health = WeightedHealth::Buckets(BucketHealth {
                    count,
                    width_ns,
                    decay,
                })
            })
        };
        let cases = [
            (buckets(0, 1, 3.0), ConfigError::BucketCount),
            (buckets(9, 1, 3.0), ConfigError::BucketCount),
            (buckets(6, 0, 3.0), ConfigError::BucketWidth),
            (buckets(6, 1, 0.5), ConfigError::Decay),
            (buckets(6, 1, f64::NAN), ConfigError::Decay),
            (buckets(6, 1, f64::INFINITY), ConfigError::Decay),
            (
                cascade_with(|w| w.health = WeightedHealth::Ewma(EwmaHealth { half_life: 0 })),
                ConfigError::HalfLife,
            ),
            (
                cascade_with(|w| w.weight_exponent = 0.0),
                ConfigError::WeightExponent,
            ),
            (
                cascade_with(|w| w.weight_exponent = -1.0),
                ConfigError::WeightExponent,
            ),
            (
                cascade_with(|w| w.weight_exponent = f64::NAN),
                ConfigError::WeightExponent,
            ),
            (cascade_with(|w| w.floor = 0.0), ConfigError::Floor),
            (cascade_with(|w| w.floor = 1.5), ConfigError::Floor),
            (cascade_with(|w| w.floor = f64::NAN), ConfigError::Floor),
            (
                Config {
                    max_waiters: MAX_WAITERS + 1,
                    ..Config::cascade()
                },
                ConfigError::MaxWaiters,
            ),
        ];
        for (config, err) in cases {
            assert_eq!(config.validate(), Err(err), "{config:?}");
        }
        assert_eq!(Config::cascade().validate(), Ok(()));
    }

    /// The first problem found is the algorithm's before the limit's and `max_waiters`.
    #[test]
    fn checks_run_in_the_documented_order() {
        let all_bad = Config {
            limit: LimitAlgorithm::Fixed(crate::limit::FixedLimit {
                limit: crate::limit::MAX_LIMIT + 1,
            }),
            max_waiters: MAX_WAITERS + 1,
            ..cascade_with(|w| w.floor = 0.0)
        };
        assert_eq!(all_bad.validate(), Err(ConfigError::Floor));
        let limit_bad = Config {
            algorithm: Algorithm::CASCADE,
            ..all_bad
        };
        assert_eq!(limit_bad.validate(), Err(ConfigError::LimitRange));
    }
}
