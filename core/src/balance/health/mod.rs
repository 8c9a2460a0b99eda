//! Per-node health: what a node's outcomes say of it, and the cached value the acquire scan reads.
//!
//! | model | file | source | cached value |
//! |---|---|---|---|
//! | [`DecayHealth`] (the default) | `decay.rs` | dialogue's failure penalty, made time-decayed and exact | the penalty, in in-flight requests |
//! | [`BucketHealth`] | `buckets.rs` | [the seeds'](crate#vocabulary) bucket window with its sticky bucket | the weight `rate ^ exponent` |
//! | [`EwmaHealth`] | `ewma.rs` | [the seeds' later variant](crate#vocabulary): one success average | the weight `rate ^ exponent` |
//!
//! Each model's file holds its public configuration, its runtime form (`Prepared`, computed once by
//! [`Config::validate`](crate::Config::validate)'s checks) and its code; this file holds the choice
//! among them ([`HealthModel`]) and the node's cached value, which is what the acquire scan reads: the
//! scan weight under the seeds' models, the penalty under the decayed counters (the cache and scan words
//! below hold it in place of the weight, and everything said of the weight's refresh holds for it).
//!
//! # The cached value
//! `cache` holds the node's *cached value* as an `f32`: the value the acquire scan uses as it is, so that
//! the scan reads one word per node and nothing else. Under the weighted models it is the node's weight, floored at
//! `(floor / active_nodes) ^ exponent` where the floor applies (the sticky and average cases), and 0 for a
//! node that is not active (lame duck, removed, being added). It is recomputed by every release that
//! records an outcome, by every membership change (the floor and the states change then), and by the
//! rotation that the balancer runs once per bucket epoch (`Balancer::rotate`): the weighted rate of a
//! window changes only when a write lands or when the clock enters a new epoch (a bucket may leave the
//! window then), so an acquire never checks an expiry. The balancer's rotation word holds the epoch the
//! caches were last rotated to; a reading is taken at that epoch or later, never earlier, so a release
//! whose `now` lags behind the rotation cannot put back a reading that the rotation aged. The low 32 bits
//! are a sequence number that every store advances (see `refresh`).
//!
//! Beside the cache, `scan` holds the same value as an integer (the scan word, see `word.rs`): the weight
//! times `2^46`, rounded down, or the penalty in fixed point. The acquire's first draw sums these
//! integers, which is exact and costs one integer add per node; the exact `f32` weights in `cache` serve
//! the draws whose total is too small for that precision (see `policy/weighted.rs`). A refresh stores `scan` before its compare-and-swap on `cache` and stores it again
//! whenever that fails, so the last `scan` store belongs to the last successful compare-and-swap: once the
//! node's writes have finished, the two words hold the same weight (see `try_refresh`).

// A model left out by its feature is not part of `HealthModel` and `Model`: its code is then never
// called, but the module stays, for the parameters' types and the helpers the others share (the bucket
// clock, `MAX_BUCKETS`).
#[cfg_attr(not(feature = "buckets"), allow(dead_code))]
mod buckets;
#[cfg_attr(not(feature = "decay"), allow(dead_code))]
mod decay;
#[cfg_attr(not(feature = "ewma"), allow(dead_code))]
mod ewma;

pub(crate) use buckets::epoch_at;
pub use buckets::{BucketHealth, MAX_BUCKETS};
pub use decay::DecayHealth;
#[cfg(feature = "decay")]
pub(crate) use decay::TICK_SHIFT;
pub use ewma::{EwmaHealth, CLOCK_EPOCH_NS};

use crate::balance::outcome::Outcome;
use crate::balance::word;
use crate::error::ConfigError;
use crate::internal::sync::{AtomicU64, Ordering::*};

/// How a node's health is measured.
///
/// The default, [`HealthModel::Decay`], serves the default policy, [`Policy::LowestScore`]; the seeds'
/// models, [`Buckets`](HealthModel::Buckets) and [`Ewma`](HealthModel::Ewma), serve the weighted
/// policies ([`Policy::Cascade`] and the others). The pairing is checked by
/// [`Config::validate`](crate::Config::validate) ([`ConfigError::ModelPolicy`]).
///
/// How each model reads an [`Outcome`]:
///
/// | outcome       | `Decay`           | `Buckets`, `Ewma` (the seeds') |
/// |---------------|-------------------|--------------------------------|
/// | `Success`     | successes + 1     | a success                      |
/// | `Failure`     | failures + 1      | a failure                      |
/// | `Dropped`     | failures + `dropped_cost` (1) | a failure          |
/// | `Throttled`   | failures + `throttled_cost` (0.1) | a failure (as `Dropped`) |
/// | `ClientError` | failures + `client_error_cost` (0.01) | nothing (as `Ignored`) |
/// | `Ignored`     | nothing           | nothing                        |
///
/// [`Policy::LowestScore`]: crate::balance::Policy::LowestScore
/// [`Policy::Cascade`]: crate::balance::Policy::Cascade
/// [`ConfigError::ModelPolicy`]: crate::balance::ConfigError::ModelPolicy
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HealthModel {
    /// The default: two time-decayed counters per node, successes and failures, and the failure penalty
    /// they give (see [`DecayHealth`]); the [`LowestScore`] policy sends each call to the node with room
    /// whose `in_flight + penalty` is lowest.
    ///
    /// [`LowestScore`]: crate::balance::Policy::LowestScore
    #[cfg(feature = "decay")]
    Decay(DecayHealth),
    /// [The seeds'](crate#vocabulary) model: a window of buckets plus a sticky bucket (see
    /// [`BucketHealth`]).
    #[cfg(feature = "buckets")]
    Buckets(BucketHealth),
    /// [The seeds' author's later variant](crate#vocabulary): one exponentially weighted success average
    /// per node (see [`EwmaHealth`]).
    #[cfg(feature = "ewma")]
    Ewma(EwmaHealth),
}

impl HealthModel {
    /// The default model with its defaults ([`DecayHealth::DEFAULT`]).
    #[cfg(feature = "decay")]
    pub const DECAY: HealthModel = HealthModel::Decay(DecayHealth::DEFAULT);

    /// [`HealthModel::DECAY`] with other half-lives, given as [`Duration`]s (saturating at `u64::MAX` ns;
    /// validation checks the range).
    ///
    /// [`Duration`]: core::time::Duration
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::balance::HealthModel;
    /// let m = HealthModel::decay(Duration::from_secs(1), Duration::from_secs(30));
    /// assert_eq!(m, HealthModel::DECAY);
    /// let slow = HealthModel::decay(Duration::from_secs(2), Duration::from_secs(120));
    /// assert!(weir::Config { health: slow, ..weir::Config::default() }.validate().is_ok());
    /// ```
    #[must_use]
    #[cfg(feature = "decay")]
    pub const fn decay(
        success: core::time::Duration,
        failure: core::time::Duration,
    ) -> HealthModel {
        HealthModel::Decay(DecayHealth::with_half_lives(success, failure))
    }

    /// [The seeds'](crate#vocabulary) bucket window: 6 buckets of 5 s, decay 3 ([`BucketHealth::SEEDS`]).
    #[cfg(feature = "buckets")]
    pub const SEED_BUCKETS: HealthModel = HealthModel::Buckets(BucketHealth::SEEDS);

    /// [The seeds' later variant](crate#vocabulary): one exponentially weighted success rate per node,
    /// with a half-life of 32 outcomes ([`EwmaHealth::DEFAULT`]).
    #[cfg(feature = "ewma")]
    pub const EWMA: HealthModel = HealthModel::Ewma(EwmaHealth::DEFAULT);

    /// The bucket window with the bucket width given as a [`Duration`] (see [`BucketHealth::new`]).
    ///
    /// [`Duration`]: core::time::Duration
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::balance::HealthModel;
    /// const SEEDS: HealthModel = HealthModel::buckets(6, Duration::from_secs(5), 3.0);
    /// assert_eq!(SEEDS, HealthModel::SEED_BUCKETS);
    /// ```
    #[must_use]
    #[cfg(feature = "buckets")]
    pub const fn buckets(count: usize, width: core::time::Duration, decay: f64) -> HealthModel {
        HealthModel::Buckets(BucketHealth::new(count, width, decay))
    }

    /// The runtime form that [`prepare_into`](Self::prepare_into) overwrites.
    pub(crate) fn unprepared(&self) -> Model {
        match self {
            #[cfg(feature = "decay")]
            HealthModel::Decay(_) => Model::Decay(decay::Prepared::UNPREPARED),
            #[cfg(feature = "buckets")]
            HealthModel::Buckets(_) => Model::Buckets(buckets::Prepared::UNPREPARED),
            #[cfg(feature = "ewma")]
            HealthModel::Ewma(_) => Model::Ewma(ewma::Prepared { alpha: 0.0 }),
        }
    }

    /// Checks the model's parameters and writes its runtime form into `model`, in place (see
    /// `DecayHealth::prepare_into`).
    pub(crate) fn prepare_into(&self, model: &mut Model) -> Result<(), ConfigError> {
        match (self, model) {
            #[cfg(feature = "decay")]
            (HealthModel::Decay(d), Model::Decay(p)) => d.prepare_into(p),
            #[cfg(feature = "buckets")]
            (HealthModel::Buckets(b), Model::Buckets(p)) => b.prepare_into(p),
            #[cfg(feature = "ewma")]
            (HealthModel::Ewma(e), Model::Ewma(p)) => e.prepare_into(p),
            // Another model's form (never from `unprepared`): replaced by this model's, then prepared.
            #[cfg(any(
                all(feature = "decay", feature = "buckets"),
                all(feature = "decay", feature = "ewma"),
                all(feature = "buckets", feature = "ewma")
            ))]
            (this, model) => {
                *model = this.unprepared();
                this.prepare_into(model)
            }
        }
    }

    /// Checks the model's fields and computes its runtime form.
    #[cfg(test)]
    pub(crate) fn prepare(&self) -> Result<Model, ConfigError> {
        let mut model = self.unprepared();
        self.prepare_into(&mut model)?;
        Ok(model)
    }

    /// The width of the balancer's clock epoch under this model (see `Balancer::rotate`): the bucket
    /// width, [`CLOCK_EPOCH_NS`] for the average, a quarter of the shorter half-life for the decay model.
    /// The decay model, which only [`Policy::LowestScore`](crate::balance::Policy::LowestScore) reads.
    // With `decay` alone, the pattern is the only variant.
    #[allow(irrefutable_let_patterns)]
    pub(crate) fn is_decay(&self) -> bool {
        #[cfg(feature = "decay")]
        if let HealthModel::Decay(_) = self {
            return true;
        }
        false
    }

    pub(crate) fn clock_ns(&self) -> u64 {
        match self {
            #[cfg(feature = "decay")]
            HealthModel::Decay(d) => d.clock_ns(),
            #[cfg(feature = "buckets")]
            HealthModel::Buckets(b) => b.width_ns,
            #[cfg(feature = "ewma")]
            HealthModel::Ewma(_) => CLOCK_EPOCH_NS,
        }
    }
}

#[cfg(feature = "decay")]
impl Default for HealthModel {
    /// [`HealthModel::DECAY`], the default configuration's model.
    fn default() -> Self {
        HealthModel::DECAY
    }
}

/// A model's runtime form.
// The decay model's factor tables make it the large variant; one `Prepared` lives in each balancer, and
// the core cannot box.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
pub(crate) enum Model {
    #[cfg(feature = "buckets")]
    Buckets(buckets::Prepared),
    #[cfg(feature = "ewma")]
    Ewma(ewma::Prepared),
    #[cfg(feature = "decay")]
    Decay(decay::Prepared),
}

/// The weighted models' weight, `rate ^ exponent` (the configuration's `weight_exponent`).
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

/// What a node's health needs of the configuration: the model's runtime form and the weight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    pub(crate) model: Model,
    pub(crate) weight: Weight,
}

/// Cache word: `f32` cached value (bits 63..32) | sequence (31..0).
const SEQ_MASK: u64 = 0xFFFF_FFFF;
/// A slot that holds no active node: cached value 0.
const CACHE_ABSENT: u64 = 0;

/// The words besides a node's own health that its scan weight depends on.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    /// The balancer's rotation word (see `Balancer::rotate`).
    pub(crate) rotation: &'a AtomicU64,
    /// The balancer's active word: active node count (high 32 bits) | floor weight (`f32` bits).
    #[cfg_attr(not(any(feature = "buckets", feature = "ewma")), allow(dead_code))]
    pub(crate) active: &'a AtomicU64,
    /// The node's control word: only an active node has a cached value.
    pub(crate) ctl: &'a AtomicU64,
}

/// A consistent reading of a node's health.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct View {
    /// The success rate before any floor.
    pub(crate) rate: f64,
    /// Whether `rate` is subject to the recovery floor (sticky bucket, or the average model).
    pub(crate) floored: bool,
    /// The newest epoch with data (`last - 1`), meaningful for the bucket model only.
    pub(crate) newest: u64,
    /// Finished and succeeded outcomes in the window (unweighted).
    pub(crate) window: (u64, u64),
    /// Finished and succeeded outcomes in the sticky bucket (0, 0 when the window has data).
    pub(crate) sticky: (u64, u64),
    /// Whether the node has recorded any outcome.
    pub(crate) has_data: bool,
    /// The decayed success and failure counters and the penalty (the decay model; zeros otherwise).
    pub(crate) decayed: (f64, f64, f64),
}

/// The health words of one node. `repr(C)` keeps `cache` first, beside the slot's control word: the
/// acquire scan reads those two words of every node and nothing else, so they share one cache line.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct Health {
    /// The scan word (see `word.rs`): what the acquire's first pass reads.
    scan: AtomicU64,
    /// The cached value, see the module docs. Written by releases, membership changes and rotations.
    cache: AtomicU64,
    /// Newest epoch written + 1 (buckets), or 1 once any outcome was recorded (average); 0 = no data.
    last: AtomicU64,
    /// Bucket words, or the average's `f64` bits in `ring[0]`.
    ring: [AtomicU64; MAX_BUCKETS],
}

impl Health {
    #[cfg(not(loom))]
    pub(crate) const fn new() -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: AtomicU64 = AtomicU64::new(0);
        Health {
            scan: ZERO,
            cache: AtomicU64::new(CACHE_ABSENT),
            last: ZERO,
            ring: [ZERO; MAX_BUCKETS],
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Health {
            scan: AtomicU64::new(0),
            cache: AtomicU64::new(CACHE_ABSENT),
            last: AtomicU64::new(0),
            ring: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// The address of the scan word, for the layout test.
    #[cfg(test)]
    pub(crate) fn scan_addr(&self) -> usize {
        &self.scan as *const AtomicU64 as usize
    }

    /// Sets the scan word, for the scan tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn set_units(&self, units: u64) {
        // Relaxed: single-threaded tests.
        self.scan.store(units, Relaxed);
    }

    /// Forgets everything: called by the adder that owns a claimed slot, before it publishes the slot.
    pub(crate) fn reset(&self, model: &Model) {
        // Relaxed: the slot is published afterwards by a Release/SeqCst write to its control word.
        let first = match model {
            #[cfg(feature = "buckets")]
            Model::Buckets(_) => 0,
            #[cfg(feature = "decay")]
            Model::Decay(_) => 0,
            #[cfg(feature = "ewma")]
            Model::Ewma(_) => 1.0f64.to_bits(),
        };
        self.ring[0].store(first, Relaxed);
        for w in &self.ring[1..] {
            w.store(0, Relaxed);
        }
        self.last.store(0, Relaxed);
        // A read-modify-write that advances the sequence, not a store: a refresh for the slot's previous
        // occupant may be under way, and its compare-and-swap must then fail and read again (it then
        // reads the cleared ring: Release here, Acquire in `try_refresh`). The weight is 0 until the node
        // is active and the adder's membership refresh computes it. The scan word first, as in
        // `try_refresh`.
        self.scan.store(absent_units(model), Relaxed);
        let _ = self.cache.fetch_update(Release, Relaxed, |c| {
            Some(CACHE_ABSENT | (bump(c) & SEQ_MASK))
        });
    }

    /// Records `outcome` at `now` as the model reads it (see [`HealthModel`]), then refreshes the cached
    /// value. An outcome the model does not count changes nothing.
    pub(crate) fn record(&self, p: &Prepared, now: u64, outcome: Outcome, scope: Scope<'_>) {
        let changed = match p.model {
            #[cfg(feature = "buckets")]
            Model::Buckets(ref b) => self.record_buckets(b, now, outcome),
            #[cfg(feature = "ewma")]
            Model::Ewma(ref e) => self.record_ewma(e, outcome),
            #[cfg(feature = "decay")]
            Model::Decay(ref d) => self.record_decay(d, now, outcome),
        };
        if changed {
            self.refresh(p, now, scope);
        }
    }

    /// Settles the decayed counters (see `decay.rs`); nothing for the other models.
    #[cfg(feature = "decay")]
    pub(crate) fn settle(&self, p: &Prepared, now: u64, forget: bool) {
        match p.model {
            #[cfg(feature = "decay")]
            Model::Decay(ref d) => self.settle_counters(now, d, forget),
            #[cfg(feature = "buckets")]
            Model::Buckets(_) => {}
            #[cfg(feature = "ewma")]
            Model::Ewma(_) => {}
        }
    }

    /// A consistent reading of the node at `now`.
    #[cfg_attr(not(feature = "algorithms"), allow(unused_variables))]
    pub(crate) fn view(&self, p: &Prepared, now: u64) -> View {
        match p.model {
            #[cfg(feature = "ewma")]
            Model::Ewma(_) => self.view_ewma(),
            #[cfg(feature = "decay")]
            Model::Decay(ref d) => self.view_decay(d, now),
            // By reference: the weight table is not copied.
            #[cfg(feature = "buckets")]
            Model::Buckets(ref b) => self.view_buckets(b, now),
        }
    }

    /// The cached value and its scan word for an active node read at `at`: the weight and its units, or
    /// under the decay model the penalty and its fixed point. The success rate a weight is computed from,
    /// and whether the recovery floor applies to it, are what [`view`](Self::view) reads, with the same
    /// arithmetic, so the same bits.
    #[inline]
    #[cfg_attr(not(feature = "algorithms"), allow(unused_variables))]
    fn reading(&self, p: &Prepared, at: u64, scope: Scope<'_>) -> (f32, u64) {
        match p.model {
            #[cfg(feature = "decay")]
            Model::Decay(ref d) => {
                let pen = self.decayed(at, d).2 as f32;
                (pen, word::fixed(pen))
            }
            #[cfg(feature = "buckets")]
            Model::Buckets(ref b) => self.bucket_reading(b, p, at, scope),
            #[cfg(feature = "ewma")]
            Model::Ewma(_) => {
                let v = self.view_ewma();
                Self::weighed(p, v.rate, v.floored, scope)
            }
        }
    }

    /// [`reading`](Self::reading) under the buckets model. Never inlined: its frame (the window's
    /// sums) is then not part of every refresh's, the default model's included (see `cargo xtask
    /// embedded`: with every algorithm linked, a Cortex-M0's acquire that rotates the clock went past
    /// 1 KiB of stack), and on the hosts the default's refresh keeps a smaller frame.
    #[cfg(feature = "buckets")]
    #[inline(never)]
    fn bucket_reading(
        &self,
        b: &buckets::Prepared,
        p: &Prepared,
        at: u64,
        scope: Scope<'_>,
    ) -> (f32, u64) {
        let (rate, floored) = self.rate_buckets(b, at);
        Self::weighed(p, rate, floored, scope)
    }

    /// The weight of a success rate and its units, the recovery floor applied when `floored`.
    #[inline]
    #[cfg(any(feature = "buckets", feature = "ewma"))]
    fn weighed(p: &Prepared, rate: f64, floored: bool, scope: Scope<'_>) -> (f32, u64) {
        let w = p.weight.of(rate) as f32;
        let w = if floored {
            // Read only when it applies; still after the cache, as `refresh` needs.
            // Acquire: see `try_refresh`.
            w.max(f32::from_bits(scope.active.load(Acquire) as u32))
        } else {
            w
        };
        (w, word::units_of(w))
    }

    /// Recomputes the cached value after a write, a membership change or a rotation; retries until the
    /// stored value was computed after the last concurrent change, so the cache never keeps an older
    /// reading than the newest write, membership change or rotation.
    ///
    /// Every store to the cache is a compare-and-swap that also advances its sequence field, so a writer
    /// whose reading was overtaken by another writer's store always fails and reads again, even when the
    /// two readings are equal words (no ABA). Of all stores, the last one was therefore computed after
    /// every earlier store, and every write's own store comes after that write: the last reading
    /// includes every write.
    ///
    /// The reading is taken at `max(now, rotation start)`, with the node's state and the floor of the
    /// moment. A rotation publishes its start, and a membership change its states and floor, before it
    /// refreshes every slot (this function). If another store lands after such a refresh's store, it
    /// read the cache after that store (its compare-and-swap expected it), so its reads of the rotation,
    /// active and control words, ordered after, see what the change published: no reading older than a
    /// rotation or a membership change survives it.
    pub(crate) fn refresh(&self, p: &Prepared, now: u64, scope: Scope<'_>) {
        while !self.try_refresh(p, now, scope) {}
    }

    /// One attempt to store a reading: whether it landed (a failure means another store came first).
    fn try_refresh(&self, p: &Prepared, now: u64, scope: Scope<'_>) -> bool {
        // Acquire: pairs with the AcqRel of the store we read, so our reading sees the writes behind it
        // (and the words that store's rotation or membership change published).
        let seen = self.cache.load(Acquire);
        // Acquire (all three): see above. The rotation word holds the epoch's start.
        let (value, units) = if word::state(scope.ctl.load(Acquire)) == word::ACTIVE {
            let start = scope.rotation.load(Acquire);
            self.reading(p, now.max(start), scope)
        } else {
            (0.0, absent_units(&p.model))
        };
        let next = (u64::from(value.to_bits()) << 32) | (bump(seen) & SEQ_MASK);
        // Relaxed: the compare-and-swap below publishes it. Stored before it and again on every retry, so
        // that the last store is that of the last compare-and-swap that succeeds: a store that lands after
        // ours comes from a writer whose compare-and-swap is still to come (had it succeeded before ours,
        // our Acquire load above would have ordered its store before ours).
        self.scan.store(units, Relaxed);
        // AcqRel: publishes our reading.
        self.cache
            .compare_exchange(seen, next, AcqRel, Acquire)
            .is_ok()
    }

    /// After a success recorded into the newest bucket without advancing the window: if the cache holds
    /// a scan weight of exactly 1.0, the success leaves it as it is (a rate that rounds to 1.0 only rises,
    /// the newest bucket is the one the reading's window or sticky rate came from, and a weight floored
    /// to 1.0 stays at that floor). Then the cache is kept with its sequence advanced (so that a concurrent
    /// refresh that read before our write retries), without recomputing the window: the healthy node's
    /// common case. Returns `false` when a refresh is needed.
    fn keep_full_weight(&self) -> bool {
        // Acquire: orders this read after our bucket write, as `refresh` does.
        let mut seen = self.cache.load(Acquire);
        while (seen >> 32) as u32 == 1.0f32.to_bits() {
            // AcqRel: as in `refresh`; the stored reading is unchanged, only its sequence moves.
            match self
                .cache
                .compare_exchange_weak(seen, bump(seen), AcqRel, Acquire)
            {
                Ok(_) => return true,
                Err(c) => seen = c,
            }
        }
        false
    }

    /// The node's scan word (see `word.rs`): one load.
    #[inline(always)]
    pub(crate) fn units(&self) -> u64 {
        // Relaxed: as `cached`.
        self.scan.load(Relaxed)
    }

    /// The node's cached value (the weight, or the decay model's penalty): one load.
    #[cfg_attr(not(any(feature = "buckets", feature = "ewma")), allow(dead_code))]
    #[inline(always)]
    pub(crate) fn cached(&self) -> f64 {
        // Relaxed: the cache is a standalone statistic; a stale value at worst makes the decision of a
        // moment earlier (see sync.rs).
        f32::from_bits((self.cache.load(Relaxed) >> 32) as u32) as f64
    }
}

/// The scan word of a slot that holds no active node: 0 (no weight) under the seeds' models; under the
/// decay model [`SCAN_ABSENT`](word::SCAN_ABSENT), so that the lowest-score fast scan, which reads no state, passes it over.
#[inline]
fn absent_units(model: &Model) -> u64 {
    match model {
        #[cfg(feature = "decay")]
        Model::Decay(_) => word::SCAN_ABSENT,
        #[cfg(feature = "buckets")]
        Model::Buckets(_) => 0,
        #[cfg(feature = "ewma")]
        Model::Ewma(_) => 0,
    }
}

/// How the seeds' models read an outcome: a success, a failure, or nothing (see [`HealthModel`]).
#[inline]
fn seeds_reading(outcome: Outcome) -> Option<bool> {
    // Through `as_seeds`, the one place that says how the seeds read the new outcomes.
    match outcome.as_seeds() {
        Outcome::Success => Some(true),
        Outcome::Failure | Outcome::Dropped => Some(false),
        _ => None,
    }
}

/// The cache word with its sequence advanced by one (wrapping inside its field).
#[inline]
fn bump(c: u64) -> u64 {
    (c & !SEQ_MASK) | (c.wrapping_add(1) & SEQ_MASK)
}

/// What the tests of every model share: a prepared model and the balancer's words a node's cached value
/// depends on.
#[cfg(all(test, not(loom)))]
mod testing {
    use super::*;

    /// The seeds' bucket width.
    pub(super) const W: u64 = 5_000_000_000;

    /// `model` with the seeds' weight exponent, 3.
    pub(super) fn prepared(model: HealthModel) -> Prepared {
        Prepared {
            model: model.prepare().unwrap(),
            weight: Weight::new(3.0).unwrap(),
        }
    }

    /// The seeds' bucket window.
    pub(super) fn seeds() -> Prepared {
        prepared(HealthModel::SEED_BUCKETS)
    }

    /// The balancer's words a node's cached value depends on: rotated to `start`, an active node, and a
    /// floor weight of `floor`.
    pub(super) struct Words {
        pub(super) rotation: AtomicU64,
        pub(super) active: AtomicU64,
        pub(super) ctl: AtomicU64,
    }

    impl Words {
        pub(super) fn new(start: u64, floor: f32) -> Words {
            Words {
                rotation: AtomicU64::new(start),
                active: AtomicU64::new((1 << 32) | u64::from(floor.to_bits())),
                ctl: AtomicU64::new(word::pack(word::ACTIVE, 0, 100, 0)),
            }
        }

        pub(super) fn scope(&self) -> Scope<'_> {
            Scope {
                rotation: &self.rotation,
                active: &self.active,
                ctl: &self.ctl,
            }
        }
    }

    /// Records `ok` successes and `bad` failures at `t`.
    pub(super) fn rec(h: &Health, p: &Prepared, t: u64, ok: u64, bad: u64) {
        let words = Words::new(0, 0.0);
        for _ in 0..ok {
            h.record(p, t, Outcome::Success, words.scope());
        }
        for _ in 0..bad {
            h.record(p, t, Outcome::Failure, words.scope());
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn fresh_node_is_fully_trusted() {
        let (p, h) = (seeds(), Health::new());
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
