//! The weighted family ([`Weighted`], the original cascade's): a success rate per node, from a window of
//! buckets ([`BucketHealth`]) or one exponentially weighted average ([`EwmaHealth`]); a weight per node,
//! `success_rate ^ weight_exponent`; and a draw from the weights among the nodes with room ([`Draw`]).
//!
//! | file | what |
//! |---|---|
//! | here | [`Weighted`], [`WeightedHealth`], [`Draw`], their runtime form, how the family reads an outcome (the success rate and the limiter), the weight and the recovery floor |
//! | `buckets.rs` | [`BucketHealth`]: [the cascade's](crate#vocabulary) bucket window with its sticky bucket |
//! | `ewma.rs` | [`EwmaHealth`]: [the cascade's later variant](crate#vocabulary), one success average |
//! | `draw.rs` | the three draws: the weighted random cascade, its approximation, one weighted pick |
//!
//! The family caches each node's weight in its health words (`balance/health.rs`): the `f32` weight in the
//! cache word, floored at `(floor / active_nodes) ^ exponent` where the floor applies (the sticky and
//! average cases), and as an integer, the weight times `2^46` rounded down, in the scan word (`word.rs`).
//! The acquire's first draw sums these integers, which is exact and costs one integer add per node; the
//! exact `f32` weights serve the draws whose total is too small for that precision (see `draw.rs`).

// A success-rate model left out by its feature is not part of `WeightedHealth` and `Model`: its code is
// then never called, but the module stays, for its parameters' type.
#[cfg_attr(not(feature = "buckets"), allow(dead_code))]
mod buckets;
mod draw;
#[cfg_attr(not(feature = "ewma"), allow(dead_code))]
mod ewma;

pub use buckets::{BucketHealth, MAX_BUCKETS};
pub use ewma::{EwmaHealth, CLOCK_EPOCH_NS};

use crate::balance::algorithm::Choice;
use crate::balance::health::{Family, Health, Scope, View};
use crate::balance::outcome::Outcome;
use crate::balance::slot::NodeSlot;
use crate::balance::word;
use crate::error::ConfigError;
use crate::internal::sync::Ordering::*;
use fastrand::Rng;

/// The weighted family's parameters: how each node's success rate is measured ([`WeightedHealth`]), how
/// a node is drawn from the weights ([`Draw`]), the weight's exponent and the recovery floor.
///
/// ```
/// use weir::balance::{Algorithm, Draw, EwmaHealth, Weighted, WeightedHealth};
/// let pick = Weighted { health: WeightedHealth::Ewma(EwmaHealth { half_life: 20 }), draw: Draw::WeightedPick, ..Weighted::CASCADE };
/// let config = weir::Config { algorithm: Algorithm::Weighted(pick), ..weir::Config::cascade() };
/// assert!(config.validate().is_ok());
/// let bad = Weighted { weight_exponent: f64::NAN, ..Weighted::CASCADE };
/// assert!(weir::Config { algorithm: Algorithm::Weighted(bad), ..weir::Config::cascade() }.validate().is_err());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Weighted {
    /// How a node's success rate is measured (the cascade's: [`WeightedHealth::BUCKETS`]).
    pub health: WeightedHealth,
    /// How a node is drawn from the weights (the cascade's: [`Draw::Cascade`]).
    pub draw: Draw,
    /// A node's weight is its success rate to this power (the cascade's: 3). Finite, in (0, 64].
    pub weight_exponent: f64,
    /// The recovery floor: a node with no recent data but a recorded rate (the sticky bucket, or the
    /// average) is floored at `floor / active_nodes` (the cascade's: 0.0001). Finite, in (0, 1].
    pub floor: f64,
}

#[cfg(feature = "buckets")]
impl Weighted {
    /// [The cascade](crate#vocabulary) exactly: 6 buckets of 5 s with decay 3 and a sticky bucket,
    /// weights `success_rate³`, the weighted random cascade, a floor of 0.0001.
    ///
    /// ```
    /// use weir::balance::{Draw, Weighted, WeightedHealth};
    /// let w = Weighted::CASCADE;
    /// assert_eq!((w.health, w.draw, w.weight_exponent, w.floor), (WeightedHealth::BUCKETS, Draw::Cascade, 3.0, 0.0001));
    /// ```
    pub const CASCADE: Weighted = Weighted {
        health: WeightedHealth::BUCKETS,
        draw: Draw::Cascade,
        weight_exponent: 3.0,
        floor: 0.0001,
    };
}

/// How the weighted family measures a node's success rate.
///
/// How each reads an [`Outcome`]: `Success` is a success; `Failure`, `Dropped` and `Throttled` (as
/// `Dropped`) are failures; `ClientError` and `Ignored` count nothing (see
/// [`Outcome::as_cascade`](crate::Outcome::as_cascade)).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum WeightedHealth {
    /// [The cascade's](crate#vocabulary) window of buckets plus a sticky bucket (see [`BucketHealth`]).
    #[cfg(feature = "buckets")]
    Buckets(BucketHealth),
    /// [The cascade's later variant](crate#vocabulary): one exponentially weighted success average per
    /// node (see [`EwmaHealth`]).
    #[cfg(feature = "ewma")]
    Ewma(EwmaHealth),
}

impl WeightedHealth {
    /// [The cascade's](crate#vocabulary) window: 6 buckets of 5 s, decay 3 ([`BucketHealth::DEFAULT`]).
    #[cfg(feature = "buckets")]
    pub const BUCKETS: WeightedHealth = WeightedHealth::Buckets(BucketHealth::DEFAULT);

    /// [The cascade's later variant](crate#vocabulary): one exponentially weighted success rate per node,
    /// with a half-life of 32 outcomes ([`EwmaHealth::DEFAULT`]).
    #[cfg(feature = "ewma")]
    pub const EWMA: WeightedHealth = WeightedHealth::Ewma(EwmaHealth::DEFAULT);

    /// The bucket window with the bucket width given as a [`Duration`] (see [`BucketHealth::new`]).
    ///
    /// [`Duration`]: core::time::Duration
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::balance::WeightedHealth;
    /// const CASCADE: WeightedHealth = WeightedHealth::buckets(6, Duration::from_secs(5), 3.0);
    /// assert_eq!(CASCADE, WeightedHealth::BUCKETS);
    /// ```
    #[must_use]
    #[cfg(feature = "buckets")]
    pub const fn buckets(count: usize, width: core::time::Duration, decay: f64) -> WeightedHealth {
        WeightedHealth::Buckets(BucketHealth::new(count, width, decay))
    }
}

/// How the weighted family draws a node from the weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Draw {
    /// [The cascade's](crate#vocabulary) algorithm: a weighted random shuffle of the active nodes
    /// (iterated weighted sampling without replacement, drawn lazily), zero-weight nodes last in uniform
    /// random order; the first node whose limiter grants a lease wins; if none does, fail fast.
    #[default]
    Cascade,
    /// [The gist's](crate#vocabulary) approximation: uniform shuffle, stable sort by descending success
    /// rate, one weighted random pick promoted to the front, then the same walk.
    CascadeApprox,
    /// [The later variant](crate#vocabulary): one weighted random pick among the nodes whose limiter has
    /// room; zero-weight nodes are never picked.
    WeightedPick,
}

/// The family's runtime form.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    pub(crate) model: Model,
    pub(crate) draw: Draw,
    pub(crate) weight: Weight,
    pub(crate) floor: f64,
}

/// A success-rate model's runtime form.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Model {
    #[cfg(feature = "buckets")]
    Buckets(buckets::Prepared),
    #[cfg(feature = "ewma")]
    Ewma(ewma::Prepared),
}

impl Weighted {
    /// The runtime form that [`prepare_into`](Self::prepare_into) overwrites.
    pub(crate) fn unprepared(&self) -> Prepared {
        Prepared {
            model: self.health.unprepared(),
            draw: self.draw,
            weight: Weight::UNPREPARED,
            floor: self.floor,
        }
    }

    /// Checks every field, in order (the success-rate model's, the weight exponent, the floor), and
    /// writes the runtime form into `out`, in place (see `LowestScore::prepare_into`).
    pub(crate) fn prepare_into(&self, out: &mut Prepared) -> Result<(), ConfigError> {
        self.health.prepare_into(&mut out.model)?;
        out.weight = Weight::new(self.weight_exponent)?;
        if !(self.floor.is_finite() && self.floor > 0.0 && self.floor <= 1.0) {
            return Err(ConfigError::Floor);
        }
        out.draw = self.draw;
        out.floor = self.floor;
        Ok(())
    }

    /// The width of the balancer's clock epoch: the bucket width, [`CLOCK_EPOCH_NS`] for the average.
    pub(crate) fn clock_ns(&self) -> u64 {
        match self.health {
            #[cfg(feature = "buckets")]
            WeightedHealth::Buckets(b) => b.width_ns,
            #[cfg(feature = "ewma")]
            WeightedHealth::Ewma(_) => CLOCK_EPOCH_NS,
        }
    }
}

impl WeightedHealth {
    fn unprepared(&self) -> Model {
        match self {
            #[cfg(feature = "buckets")]
            WeightedHealth::Buckets(_) => Model::Buckets(buckets::Prepared::UNPREPARED),
            #[cfg(feature = "ewma")]
            WeightedHealth::Ewma(_) => Model::Ewma(ewma::Prepared { alpha: 0.0 }),
        }
    }

    fn prepare_into(&self, model: &mut Model) -> Result<(), ConfigError> {
        match (self, model) {
            #[cfg(feature = "buckets")]
            (WeightedHealth::Buckets(b), Model::Buckets(p)) => b.prepare_into(p),
            #[cfg(feature = "ewma")]
            (WeightedHealth::Ewma(e), Model::Ewma(p)) => e.prepare_into(p),
            // Another model's form (never from `unprepared`): replaced by this model's, then prepared.
            #[cfg(all(feature = "buckets", feature = "ewma"))]
            (this, model) => {
                *model = this.unprepared();
                this.prepare_into(model)
            }
        }
    }
}

/// A node's weight, `rate ^ exponent` ([`Weighted::weight_exponent`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Weight {
    exponent: f64,
    /// `Some(n)` when the exponent is a small whole number: the weight is then `rate^n` by multiplication.
    int_exponent: Option<u32>,
}

impl Weight {
    /// What [`Weight::new`] replaces.
    pub(crate) const UNPREPARED: Weight = Weight {
        exponent: 1.0,
        int_exponent: Some(1),
    };

    /// Checks the exponent: finite, in (0, 64].
    pub(crate) fn new(exponent: f64) -> Result<Weight, ConfigError> {
        if !(exponent.is_finite() && exponent > 0.0 && exponent <= 64.0) {
            return Err(ConfigError::WeightExponent);
        }
        let int_exponent = if exponent == libm::trunc(exponent) && exponent <= 8.0 {
            Some(exponent as u32)
        } else {
            None
        };
        Ok(Weight {
            exponent,
            int_exponent,
        })
    }

    /// `rate ^ exponent`, for a rate in [0, 1].
    #[inline]
    pub(crate) fn of(&self, rate: f64) -> f64 {
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
            None => libm::pow(rate, self.exponent),
        }
    }
}

impl Prepared {
    /// What the limiter is told of `outcome`: only successes and drops, as the cascade reads them (see
    /// [`Outcome::as_cascade`](crate::Outcome::as_cascade)).
    #[inline]
    pub(crate) fn limit_reading(outcome: Outcome) -> Option<bool> {
        match outcome.as_cascade() {
            Outcome::Success => Some(false),
            Outcome::Dropped => Some(true),
            _ => None,
        }
    }

    /// [`Family::reading`] under the buckets model. Never inlined: its frame (the window's
    /// sums) is then not part of every refresh's, the lowest-score family's included (see `cargo xtask
    /// embedded`: with every algorithm linked, a Cortex-M0's acquire that rotates the clock went past
    /// 1 KiB of stack), and on the hosts the default's refresh keeps a smaller frame.
    #[cfg(feature = "buckets")]
    #[inline(never)]
    fn bucket_reading(
        &self,
        h: &Health,
        b: &buckets::Prepared,
        at: u64,
        scope: Scope<'_>,
    ) -> (f32, u64) {
        let (rate, floored) = h.rate_buckets(b, at);
        self.weighed(rate, floored, scope)
    }

    /// The weight of a success rate and its units, the recovery floor applied when `floored`.
    #[inline]
    fn weighed(&self, rate: f64, floored: bool, scope: Scope<'_>) -> (f32, u64) {
        let w = self.weight.of(rate) as f32;
        let w = if floored {
            // Read only when it applies; still after the cache, as `Health::refresh` needs.
            // Acquire: see `Health::try_refresh`.
            w.max(f32::from_bits(scope.active.load(Acquire) as u32))
        } else {
            w
        };
        (w, word::units_of(w))
    }

    /// The recovery floor's rate with `active` nodes in rotation: `floor / active`.
    #[inline]
    fn floor_rate(&self, active: u32) -> f64 {
        self.floor / f64::from(active.max(1))
    }

    /// The recovery floor's weight with `active` nodes in rotation: `(floor / active) ^ exponent`.
    #[inline]
    pub(crate) fn floor_weight(&self, active: u32) -> f32 {
        self.weight.of(self.floor_rate(active)) as f32
    }

    /// The success rate a snapshot reports for a reading: floored where the floor applies (the sticky
    /// and average rates), with `active` nodes in rotation.
    pub(crate) fn reported_rate(&self, v: &View, active: u32) -> f64 {
        if v.floored {
            v.rate.max(self.floor_rate(active))
        } else {
            v.rate
        }
    }

    /// The clock's rotation: under the window, where a bucket may leave it when the clock enters a new
    /// epoch, every slot's weight is refreshed (`refresh`); the average has no buckets, so its rotation
    /// only keeps the clock that dates releases.
    #[inline]
    #[cfg_attr(not(feature = "buckets"), allow(unused_variables))]
    pub(crate) fn rotate(&self, used: &[NodeSlot], refresh: impl Fn(&NodeSlot)) {
        match self.model {
            #[cfg(feature = "buckets")]
            Model::Buckets(_) => used.iter().for_each(refresh),
            #[cfg(feature = "ewma")]
            Model::Ewma(_) => {}
        }
    }

    /// The first draw of an acquire: over the nodes' scan weights alone, one load per node (a node that is
    /// not active has scan weight 0; see `balance/health.rs`). The drawn node may turn out to be full: its
    /// admission then fails and the acquire goes on with [`choose`](Self::choose), over the nodes with
    /// room only.
    ///
    /// This two-stage draw is exact. With `R` and `F` the total weights of the nodes with room and of the
    /// full ones, a node `j` with room is taken at once with probability `w_j / (R + F)`, or after a full
    /// node was drawn (probability `F / (R + F)`) with probability `w_j / R`; the sum is `w_j / R`, the
    /// cascade's probability. `CascadeApprox` and the zero-weight cases take the full scan at once.
    #[inline]
    pub(crate) fn choose_fast(&self, slots: &[NodeSlot], rng: &mut Rng) -> Choice {
        fast_draw(self.draw, slots, rng).unwrap_or_else(|| draw::choose_full(self.draw, slots, rng))
    }

    /// Picks the node to try among the nodes with room, or the reason to fail fast.
    ///
    /// `Cascade` and `WeightedPick` first scan for the weights of nodes with room only (the common case:
    /// one load of the control word and one of the cached weight per node, nothing written) and draw
    /// among them. Only when no node with room has a positive weight does the full scan run, which tells
    /// apart zero-weight, full and absent nodes for the fallbacks and the rejection reason.
    #[inline]
    pub(crate) fn choose(&self, slots: &[NodeSlot], rng: &mut Rng) -> Choice {
        room_draw(self.draw, slots, rng).unwrap_or_else(|| draw::choose_full(self.draw, slots, rng))
    }

    /// The full scan over the nodes that `skip` does not name, which count as absent (no first draw over
    /// the scan weights), for an acquire that retries elsewhere.
    #[inline]
    pub(crate) fn choose_excluding(
        &self,
        slots: &[NodeSlot],
        rng: &mut Rng,
        skip: impl Fn(&NodeSlot) -> bool,
    ) -> Choice {
        draw::choose_excluding(self.draw, slots, rng, skip)
    }
}

/// The draws keep their buffers in a frame of their own, which the lowest-score family's acquire never
/// holds, and which is off the stack before the full scan runs (`None`): inlined into the acquire beside
/// the lowest-score scan's, or holding its buffer under the full scan's, the frames would add up past
/// 1 KiB on a Cortex-M0 (see `cargo xtask embedded`). Only below 64 bits: on the hosts, where stacks are
/// large, the call would cost the cascade's pair instructions for no gain, so there it is inlined.
#[cfg_attr(target_pointer_width = "64", inline(always))]
#[cfg_attr(not(target_pointer_width = "64"), inline(never))]
fn fast_draw(draw: Draw, slots: &[NodeSlot], rng: &mut Rng) -> Option<Choice> {
    draw::draw_by(draw, slots, rng, |s| s.health.units())
}

/// As [`fast_draw`], over the nodes with room.
#[cfg_attr(target_pointer_width = "64", inline(always))]
#[cfg_attr(not(target_pointer_width = "64"), inline(never))]
fn room_draw(draw: Draw, slots: &[NodeSlot], rng: &mut Rng) -> Option<Choice> {
    draw::draw_by(draw, slots, rng, draw::room_units)
}

/// How the cascade reads an outcome: a success, a failure, or nothing (see [`WeightedHealth`]).
#[inline]
fn cascade_reading(outcome: Outcome) -> Option<bool> {
    // Through `as_cascade`, the one place that says how the cascade reads the new outcomes.
    match outcome.as_cascade() {
        Outcome::Success => Some(true),
        Outcome::Failure | Outcome::Dropped => Some(false),
        _ => None,
    }
}

impl Family for Prepared {
    /// Records `outcome` on `h` as the family reads it (see [`WeightedHealth`]): whether the cached
    /// weight must be recomputed.
    #[inline(always)]
    #[cfg_attr(not(feature = "buckets"), allow(unused_variables))]
    fn record(&self, h: &Health, now: u64, outcome: Outcome) -> bool {
        match self.model {
            #[cfg(feature = "buckets")]
            Model::Buckets(ref b) => h.record_buckets(b, now, outcome),
            #[cfg(feature = "ewma")]
            Model::Ewma(ref e) => h.record_ewma(e, outcome),
        }
    }

    /// A consistent reading of `h` at `now`.
    #[cfg_attr(not(feature = "buckets"), allow(unused_variables))]
    fn view(&self, h: &Health, now: u64) -> View {
        match self.model {
            #[cfg(feature = "ewma")]
            Model::Ewma(_) => h.view_ewma(),
            // By reference: the weight table is not copied.
            #[cfg(feature = "buckets")]
            Model::Buckets(ref b) => h.view_buckets(b, now),
        }
    }

    /// The cached value of an active node read at `at`: its weight and the weight's units. The success
    /// rate a weight is computed from, and whether the recovery floor applies to it, are what
    /// [`view`](Family::view) reads, with the same arithmetic, so the same bits.
    #[inline]
    #[cfg_attr(not(feature = "buckets"), allow(unused_variables))]
    fn reading(&self, h: &Health, at: u64, scope: Scope<'_>) -> (f32, u64) {
        match self.model {
            #[cfg(feature = "buckets")]
            Model::Buckets(ref b) => self.bucket_reading(h, b, at, scope),
            #[cfg(feature = "ewma")]
            Model::Ewma(_) => {
                let v = h.view_ewma();
                self.weighed(v.rate, v.floored, scope)
            }
        }
    }

    /// 0: no weight.
    #[inline]
    fn absent_units(&self) -> u64 {
        0
    }

    /// What a fresh node's first health word holds: a full average (1.0) under the average model, an
    /// empty bucket under the window.
    fn first_word(&self) -> u64 {
        match self.model {
            #[cfg(feature = "buckets")]
            Model::Buckets(_) => 0,
            #[cfg(feature = "ewma")]
            Model::Ewma(_) => 1.0f64.to_bits(),
        }
    }
}

/// What the family's tests share: a prepared family and the balancer's words.
#[cfg(all(test, not(loom)))]
mod testing {
    pub(super) use crate::balance::health::testing::{rec, Words};

    use super::*;

    /// The cascade's bucket width.
    pub(super) const W: u64 = 5_000_000_000;

    /// `health` with the cascade's weight exponent, 3, and floor.
    pub(super) fn prepared(health: WeightedHealth) -> Prepared {
        let w = Weighted {
            health,
            draw: Draw::Cascade,
            weight_exponent: 3.0,
            floor: 0.0001,
        };
        let mut p = w.unprepared();
        w.prepare_into(&mut p).unwrap();
        p
    }

    /// The cascade's bucket window.
    #[cfg(feature = "buckets")]
    pub(super) fn cascade() -> Prepared {
        prepared(WeightedHealth::BUCKETS)
    }
}

#[cfg(all(test, not(loom), feature = "buckets"))]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn fresh_node_is_fully_trusted() {
        let (p, h) = (cascade(), Health::new());
        let v = h.view(&p, 0);
        assert_eq!((v.rate, v.has_data, v.floored), (1.0, false, false));
        assert_eq!(h.cached(), 0.0, "not active yet");
        h.refresh(&p, 123, Words::new(0, 0.5).scope());
        assert_eq!(h.cached(), 1.0);
    }

    #[test]
    fn weight_exponents() {
        let w = Weight::new(3.0).unwrap();
        assert_eq!(w.int_exponent, Some(3));
        assert_eq!(w.of(0.5), 0.125);
        let w = Weight::new(2.5).unwrap();
        assert_eq!(w.int_exponent, None);
        assert!((w.of(0.25) - 0.03125).abs() < 1e-15);
        for bad in [0.0, -1.0, 64.5, f64::NAN, f64::INFINITY] {
            assert_eq!(Weight::new(bad).err(), Some(ConfigError::WeightExponent));
        }
    }
}
