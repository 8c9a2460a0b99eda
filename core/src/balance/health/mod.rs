//! Per-node health: the default model's time-decayed success and failure counters (`decay.rs`), the
//! seeds' bucket window with its sticky bucket (`buckets.rs`) or a single success average (`ewma.rs`),
//! and the node's cached value (here), which is what the acquire scan reads: the scan weight under the
//! seeds' models, the penalty under the decayed counters (see `decay.rs`; the cache and scan words below
//! hold it in place of the weight, and everything said of the weight's refresh holds for it).
//!
//! # The cached weight
//! `cache` holds the node's *scan weight* as an `f32`: the weight the acquire scan uses as it is, so that
//! the scan reads one word per node and nothing else. It is the node's weight, floored at
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
//! Beside the cache, `scan` holds the same weight as an integer: `weight * 2^46`, rounded down (see
//! [`UNIT_SHIFT`]). The acquire's first draw sums these integers, which is exact and costs one integer add
//! per node; the exact `f32` weights in `cache` serve the draws whose total is too small for that precision
//! (see `select.rs`). A refresh stores `scan` before its compare-and-swap on `cache` and stores it again
//! whenever that fails, so the last `scan` store belongs to the last successful compare-and-swap: once the
//! node's writes have finished, the two words hold the same weight (see `try_refresh`).

mod buckets;
pub(crate) mod decay;
mod ewma;

use crate::balance::config::{Prepared, PreparedModel, MAX_BUCKETS};
use crate::balance::slot;
use crate::balance::Outcome;
use crate::internal::sync::{AtomicU64, Ordering::*};
pub(crate) use buckets::epoch_at;
#[cfg(all(test, not(loom)))]
use buckets::{bucket, bumped, epoch_of, fin, succ, tag, COUNT_MAX};

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
/// | `Dropped`     | failures + 1      | a failure                      |
/// | `Throttled`   | failures + `throttled_cost` (0.1) | a failure (as `Dropped`) |
/// | `ClientError` | failures + `client_error_cost` (0.01) | nothing (as `Ignored`) |
/// | `Ignored`     | nothing           | nothing                        |
///
/// [`Policy::LowestScore`]: crate::balance::Policy::LowestScore
/// [`Policy::Cascade`]: crate::balance::Policy::Cascade
/// [`ConfigError::ModelPolicy`]: crate::balance::ConfigError::ModelPolicy
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum HealthModel {
    /// The default: two time-decayed counters per node, successes and failures, each one word (an `f32`
    /// and a 1 ms tick). A counter read `t` ns after its last write is its value times
    /// `2^(-t / half_life)`. The node's penalty, in in-flight requests, is
    /// `penalty * F + ratio_penalty * log2(1 + F / (S + 1))`; the [`LowestScore`] policy sends each call to
    /// the node with room whose `in_flight + penalty` is lowest.
    ///
    /// Counting in time rather than in outcomes is what moves traffic off a node that starts failing at
    /// once even at a few requests per second, and what brings a recovered node back as its failures
    /// fade: a failure's weight halves every `failure_half_life_ns` (30 s), a success's every
    /// `success_half_life_ns` (1 s).
    ///
    /// [`LowestScore`]: crate::balance::Policy::LowestScore
    Decay {
        /// Half-life of the success counter in nanoseconds (default 1 s); 1 ms ..= 1 hour.
        success_half_life_ns: u64,
        /// Half-life of the failure counter in nanoseconds (default 30 s); 1 ms ..= 1 hour.
        failure_half_life_ns: u64,
        /// What a `Throttled` outcome (429) adds to the failures (default 0.1); finite, in [0, 1].
        throttled_cost: f32,
        /// What a `ClientError` outcome (another 4xx) adds to the failures (default 0.01): a node that
        /// answers 400 to everything is broken, and must still lose its traffic. Finite, in [0, 1].
        client_error_cost: f32,
        /// Penalty per recent failure, in in-flight requests (default 10); finite, in [0, 10^6].
        penalty: f32,
        /// Penalty per doubling of failures over successes (default 16); finite, in [0, 10^6].
        ratio_penalty: f32,
    },
    /// [The seeds'](crate#vocabulary) model: a window of `count` buckets of `width_ns` each, plus a sticky bucket.
    ///
    /// Success rate: with finished requests in the window, `Σ w_a·succeeded / Σ w_a·finished` with
    /// `w_a = decay^-age` (age 0 = the newest bucket, the one being written); with none in the window but
    /// data in the sticky bucket, the sticky bucket's rate floored at `floor / active_nodes`; with no data
    /// ever, 1.0.
    Buckets {
        /// Buckets in the window, 1..=[`MAX_BUCKETS`] (seeds: 6).
        count: usize,
        /// Width of one bucket in nanoseconds (seeds: 5 s).
        width_ns: u64,
        /// Each bucket weighs `decay` times the next older one (seeds: 3).
        decay: f64,
    },
    /// The seeds' author's [later variant](crate#vocabulary): one exponentially weighted success average per node. Each outcome
    /// moves the average toward 1 (success) or 0 (failure) by `1 - 2^(-1/half_life)`, so an outcome's
    /// influence halves every `half_life` outcomes (like Finagle's success-rate EMA, the half-life is counted
    /// in outcomes, which makes the average exact under concurrency: each outcome is one compare-and-swap).
    /// A fresh node starts at 1.0; the rate is floored at `floor / active_nodes` so a node that failed
    /// completely keeps a slight chance to show it recovered.
    Ewma {
        /// Outcomes after which an outcome's influence has halved (at least 1).
        half_life: u32,
    },
}

impl HealthModel {
    /// The default model's defaults: successes halve every second, failures every 30 s; a 429 costs 0.1
    /// of a failure, another 4xx 0.01; penalty 10 per failure plus 16 per doubling of failures over
    /// successes.
    pub const DECAY: HealthModel = HealthModel::Decay {
        success_half_life_ns: 1_000_000_000,
        failure_half_life_ns: 30_000_000_000,
        throttled_cost: 0.1,
        client_error_cost: 0.01,
        penalty: 10.0,
        ratio_penalty: 16.0,
    };

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
    pub const fn decay(
        success: core::time::Duration,
        failure: core::time::Duration,
    ) -> HealthModel {
        let HealthModel::Decay {
            throttled_cost,
            client_error_cost,
            penalty,
            ratio_penalty,
            ..
        } = HealthModel::DECAY
        else {
            unreachable!()
        };
        HealthModel::Decay {
            success_half_life_ns: crate::internal::time::saturating_ns(success),
            failure_half_life_ns: crate::internal::time::saturating_ns(failure),
            throttled_cost,
            client_error_cost,
            penalty,
            ratio_penalty,
        }
    }

    /// [The seeds'](crate#vocabulary) bucket window: 6 buckets of 5 s, decay 3.
    pub const SEED_BUCKETS: HealthModel = HealthModel::Buckets {
        count: 6,
        width_ns: 5_000_000_000,
        decay: 3.0,
    };

    /// [The seeds' later variant](crate#vocabulary): one exponentially weighted success rate per node,
    /// with a half-life of 32 outcomes (the value the Python and C layers start from).
    ///
    /// ```
    /// use weir::balance::{HealthModel, Policy};
    /// assert_eq!(HealthModel::EWMA, HealthModel::Ewma { half_life: 32 });
    /// let config = weir::Config { health: HealthModel::EWMA, policy: Policy::WeightedPick, ..weir::Config::seeds() };
    /// assert!(config.validate().is_ok());
    /// ```
    pub const EWMA: HealthModel = HealthModel::Ewma { half_life: 32 };

    /// The bucket window ([`HealthModel::Buckets`]) with the bucket width given as a [`Duration`]:
    /// `count` buckets of `width` each, each weighing `decay` times the next older one. A width longer
    /// than `u64::MAX` ns (about 584 years) saturates to `u64::MAX`; the balancer's validation checks
    /// the result as any `width_ns` (at least 1 ns, so [`Duration::ZERO`] is refused).
    ///
    /// [`Duration`]: core::time::Duration
    /// [`Duration::ZERO`]: core::time::Duration::ZERO
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::balance::HealthModel;
    /// const SEEDS: HealthModel = HealthModel::buckets(6, Duration::from_secs(5), 3.0);
    /// assert_eq!(SEEDS, HealthModel::SEED_BUCKETS);
    /// let fine = HealthModel::buckets(8, Duration::from_millis(100), 2.0);
    /// assert_eq!(fine, HealthModel::Buckets { count: 8, width_ns: 100_000_000, decay: 2.0 });
    /// let config = weir::Config { health: fine, ..weir::Config::seeds() };
    /// assert!(config.validate().is_ok());
    /// ```
    #[must_use]
    pub const fn buckets(count: usize, width: core::time::Duration, decay: f64) -> HealthModel {
        HealthModel::Buckets {
            count,
            width_ns: crate::internal::time::saturating_ns(width),
            decay,
        }
    }
}

impl Default for HealthModel {
    /// [`HealthModel::DECAY`], the default configuration's model.
    fn default() -> Self {
        HealthModel::DECAY
    }
}

/// Cache word: `f32` scan weight (bits 63..32) | sequence (31..0).
const SEQ_MASK: u64 = 0xFFFF_FFFF;
/// A slot that holds no active node: scan weight 0.
const CACHE_ABSENT: u64 = 0;
/// Scan units per unit of weight, as a power of two: a weight of 1.0 is `2^46` units, so the units of
/// [`MAX_NODES`](crate::balance::MAX_NODES) nodes sum to at most `2^62` and never overflow.
pub(crate) const UNIT_SHIFT: u32 = 46;
const _: () = assert!(crate::balance::MAX_NODES as u64 <= 1 << (62 - UNIT_SHIFT));

/// A scan weight in units (`weight * 2^UNIT_SHIFT`, rounded down; weights lie in [0, 1]).
#[inline]
fn units_of(weight: f32) -> u64 {
    // Exact: an `f32` times a power of two is exact in `f64`, and at most `2^46` converts exactly.
    (f64::from(weight) * (1u64 << UNIT_SHIFT) as f64) as u64
}

/// The words besides a node's own health that its scan weight depends on.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    /// The balancer's rotation word (see `Balancer::rotate`).
    pub(crate) rotation: &'a AtomicU64,
    /// The balancer's active word: active node count (high 32 bits) | floor weight (`f32` bits).
    pub(crate) active: &'a AtomicU64,
    /// The node's control word: only an active node has a scan weight.
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
    /// The scan weight in units (see [`UNIT_SHIFT`]): what the acquire's first draw reads.
    scan: AtomicU64,
    /// Cached weight, see the module docs. Written by releases, membership changes and rotations.
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
    pub(crate) fn reset(&self, model: &PreparedModel) {
        // Relaxed: the slot is published afterwards by a Release/SeqCst write to its control word.
        let first = match model {
            PreparedModel::Buckets { .. } | PreparedModel::Decay { .. } => 0,
            PreparedModel::Ewma { .. } => 1.0f64.to_bits(),
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
        match p.model {
            PreparedModel::Buckets {
                count, width, ring, ..
            } => {
                let Some(success) = seeds_reading(outcome) else {
                    return;
                };
                let advanced = self.record_bucket(count, ring, epoch_at(now, width), success);
                if success && !advanced && self.keep_full_weight() {
                    return;
                }
            }
            PreparedModel::Ewma { alpha } => {
                let Some(success) = seeds_reading(outcome) else {
                    return;
                };
                self.record_ewma(alpha, success);
            }
            PreparedModel::Decay {
                ref success,
                ref failure,
                throttled,
                client_error,
                ..
            } => {
                let (is_failure, amount) = match outcome {
                    Outcome::Success => (false, 1.0),
                    Outcome::Failure | Outcome::Dropped => (true, 1.0),
                    Outcome::Throttled => (true, throttled),
                    Outcome::ClientError => (true, client_error),
                    Outcome::Ignored => return,
                };
                let halving = if is_failure { failure } else { success };
                self.record_decay(is_failure, amount, now, halving);
                // With no failures the penalty is 0 whatever the successes: nothing to recompute (see
                // `record_decay` for why a failure recorded meanwhile cannot miss this success).
                if !is_failure && self.no_failures() {
                    return;
                }
            }
        }
        self.refresh(p, now, scope);
    }

    /// Settles the decayed counters (see `decay.rs`); nothing for the other models.
    pub(crate) fn settle(&self, p: &Prepared, now: u64, forget: bool) {
        if let PreparedModel::Decay {
            ref success,
            ref failure,
            ..
        } = p.model
        {
            self.settle_counters(now, success, failure, forget);
        }
    }

    /// A consistent reading of the node at `now`.
    pub(crate) fn view(&self, p: &Prepared, now: u64) -> View {
        match p.model {
            PreparedModel::Ewma { .. } => self.view_ewma(),
            PreparedModel::Decay {
                ref success,
                ref failure,
                ref penalty,
                ..
            } => {
                let (s, f, pen) = self.decayed(now, success, failure, penalty);
                View {
                    rate: if s + f > 0.0 { s / (s + f) } else { 1.0 },
                    floored: false,
                    newest: 0,
                    window: (0, 0),
                    sticky: (0, 0),
                    // Relaxed: a statistic.
                    has_data: self.last.load(Relaxed) != 0,
                    decayed: (s, f, pen),
                }
            }
            // By reference: the weight table is not copied.
            PreparedModel::Buckets {
                count,
                width,
                ref weights,
                ..
            } => self.view_buckets(count, width, weights, now),
        }
    }

    /// The success rate at `at` and whether the recovery floor applies to it: what a refresh needs of
    /// [`view`](Self::view), with the same arithmetic, so the same bits.
    #[inline]
    fn rate(&self, p: &Prepared, at: u64) -> (f64, bool) {
        match p.model {
            PreparedModel::Ewma { .. } => {
                let v = self.view_ewma();
                (v.rate, v.floored)
            }
            PreparedModel::Buckets {
                count,
                width,
                ref weights,
                ..
            } => self.rate_buckets(count, width, weights, at),
            // The decay model's reading is its penalty (see `try_refresh`).
            PreparedModel::Decay { .. } => (1.0, false),
        }
    }

    /// The cached value and its scan word for an active node read at `at`: the weight and its units, or
    /// under the decay model the penalty and its fixed point.
    #[inline]
    fn reading(&self, p: &Prepared, at: u64, scope: Scope<'_>) -> (f32, u64) {
        if let PreparedModel::Decay {
            ref success,
            ref failure,
            ref penalty,
            ..
        } = p.model
        {
            let pen = self.decayed(at, success, failure, penalty).2 as f32;
            return (pen, decay::fixed(pen));
        }
        let (rate, floored) = self.rate(p, at);
        let w = p.weight_of(rate) as f32;
        let w = if floored {
            // Read only when it applies; still after the cache, as `refresh` needs.
            // Acquire: see `try_refresh`.
            w.max(f32::from_bits(scope.active.load(Acquire) as u32))
        } else {
            w
        };
        (w, units_of(w))
    }

    /// Recomputes the scan weight after a write, a membership change or a rotation; retries until the
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
        let (weight, units) = if slot::state(scope.ctl.load(Acquire)) == slot::ACTIVE {
            let start = scope.rotation.load(Acquire);
            self.reading(p, now.max(start), scope)
        } else {
            (0.0, absent_units(&p.model))
        };
        let next = (u64::from(weight.to_bits()) << 32) | (bump(seen) & SEQ_MASK);
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

    /// The node's scan weight in units (see [`UNIT_SHIFT`]): one load.
    #[inline(always)]
    pub(crate) fn units(&self) -> u64 {
        // Relaxed: as `weight`.
        self.scan.load(Relaxed)
    }

    /// The node's scan weight: one load.
    #[inline(always)]
    pub(crate) fn weight(&self) -> f64 {
        // Relaxed: the cache is a standalone statistic; a stale value at worst makes the decision of a
        // moment earlier (see sync.rs).
        f32::from_bits((self.cache.load(Relaxed) >> 32) as u32) as f64
    }
}

/// The scan word of a slot that holds no active node: 0 (no weight) under the seeds' models; under the
/// decay model a penalty above any node's key, so that the lowest-score fast scan, which reads no state,
/// passes it over (see `policy::lowest_fast`).
#[inline]
fn absent_units(model: &PreparedModel) -> u64 {
    match model {
        PreparedModel::Decay { .. } => crate::balance::policy::KEY_ABSENT,
        PreparedModel::Buckets { .. } | PreparedModel::Ewma { .. } => 0,
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::balance::config::Config;

    const W: u64 = 5_000_000_000;

    fn prepared() -> Prepared {
        Config::seeds().prepare().unwrap()
    }

    /// The balancer's words a node's scan weight depends on: rotated to `start`, an active node, and a
    /// floor weight of `floor`.
    struct Words {
        rotation: AtomicU64,
        active: AtomicU64,
        ctl: AtomicU64,
    }

    impl Words {
        fn new(start: u64, floor: f32) -> Words {
            Words {
                rotation: AtomicU64::new(start),
                active: AtomicU64::new((1 << 32) | u64::from(floor.to_bits())),
                ctl: AtomicU64::new(slot::pack(slot::ACTIVE, 0, 100, 0)),
            }
        }

        fn scope(&self) -> Scope<'_> {
            Scope {
                rotation: &self.rotation,
                active: &self.active,
                ctl: &self.ctl,
            }
        }
    }

    fn rec(h: &Health, p: &Prepared, t: u64, ok: u64, bad: u64) {
        let words = Words::new(0, 0.0);
        for _ in 0..ok {
            h.record(p, t, Outcome::Success, words.scope());
        }
        for _ in 0..bad {
            h.record(p, t, Outcome::Failure, words.scope());
        }
    }

    #[test]
    fn fresh_node_is_fully_trusted() {
        let (p, h) = (prepared(), Health::new());
        let v = h.view(&p, 0);
        assert_eq!((v.rate, v.has_data, v.floored), (1.0, false, false));
        assert_eq!(h.weight(), 0.0, "not active yet");
        h.refresh(&p, 123, Words::new(0, 0.5).scope());
        assert_eq!(h.weight(), 1.0);
    }

    #[test]
    fn weighted_window_rate_is_exact() {
        let (p, h) = (prepared(), Health::new());
        // epoch 0: 10 finished, 10 ok; epoch 1: 10 finished, 5 ok; epoch 2: 4 finished, 0 ok.
        rec(&h, &p, 0, 10, 0);
        rec(&h, &p, W, 5, 5);
        rec(&h, &p, 2 * W + 1, 0, 4);
        let v = h.view(&p, 2 * W + 2);
        let num = 0.0 * 1.0 + 5.0 / 3.0 + 10.0 / 9.0;
        let den = 4.0 * 1.0 + 10.0 / 3.0 + 10.0 / 9.0;
        assert_eq!(v.rate, num / den);
        assert_eq!(v.window, (24, 15));
        // Reading later, before the oldest bucket ages out, gives the bit-identical rate.
        assert_eq!(h.view(&p, 5 * W + 7).rate, num / den);
        // At epoch 6 the oldest (epoch 0) leaves the window.
        let v6 = h.view(&p, 6 * W);
        assert_eq!(v6.rate, (5.0 / 3.0) / (4.0 + 10.0 / 3.0) * 1.0);
        assert_eq!(v6.window, (14, 5));
        assert_eq!(h.weight(), ((num / den).powi(3)) as f32 as f64);
        // A rotation to epoch 6 ages epoch 0 out of the cached weight.
        let rotated = Words::new(6 * W, 0.0);
        h.refresh(&p, 6 * W, rotated.scope());
        assert_eq!(h.weight(), (v6.rate * v6.rate * v6.rate) as f32 as f64);
        // A release dated before that rotation still reads the window at epoch 6.
        h.record(&p, 2 * W, Outcome::Success, rotated.scope());
        let v6 = h.view(&p, 6 * W);
        assert_eq!(h.weight(), (v6.rate * v6.rate * v6.rate) as f32 as f64);
        assert_ne!(v6.rate, h.view(&p, 2 * W).rate);
        // A node that is not active has no scan weight.
        rotated
            .ctl
            .store(slot::pack(slot::LAME_DUCK, 0, 100, 0), Relaxed);
        h.refresh(&p, 6 * W, rotated.scope());
        assert_eq!(h.weight(), 0.0);
    }

    #[test]
    fn refresh_reads_exactly_what_view_reads() {
        // Random histories, read at random later times (rotations included): the cached weight is the
        // view's rate through `weight_of`, bit for bit, and the scan units are that weight's.
        let mut rng = fastrand::Rng::with_seed(11);
        for case in 0..300 {
            let p = Config {
                health: HealthModel::Buckets {
                    count: rng.usize(1..=MAX_BUCKETS),
                    width_ns: W,
                    decay: [1.0, 2.0, 3.0, 1.7][case % 4],
                },
                ..Config::seeds()
            }
            .prepare()
            .unwrap();
            let h = Health::new();
            let mut t = 0;
            for _ in 0..rng.usize(0..40) {
                t += rng.u64(..3 * W);
                rec(&h, &p, t, rng.u64(..3), rng.u64(..3));
            }
            let at = t + rng.u64(..12 * W);
            h.refresh(&p, at, Words::new(at, 0.0).scope());
            let v = h.view(&p, at);
            assert_eq!(h.weight(), p.weight_of(v.rate) as f32 as f64, "case {case}");
            assert_eq!(h.units(), units_of(h.weight() as f32), "case {case}");
        }
    }

    #[test]
    fn scan_units_are_the_weight_rounded_down() {
        assert_eq!(units_of(1.0), 1 << UNIT_SHIFT);
        assert_eq!(units_of(0.0), 0);
        assert_eq!(units_of(0.5), 1 << (UNIT_SHIFT - 1));
        // A weight below one unit is 0 units; the draw then uses the exact weights (see select.rs).
        assert_eq!(units_of(1e-15), 0);
        let w = 0.123_456_79f32;
        assert_eq!(units_of(w), (f64::from(w) * 2f64.powi(46)).floor() as u64);
    }

    #[test]
    fn sticky_bucket_keeps_last_rate_and_floors() {
        let (p, h) = (prepared(), Health::new());
        rec(&h, &p, 0, 1, 3); // epoch 0: 25%
        rec(&h, &p, 3 * W, 0, 2); // epoch 3: 0%
                                  // At epoch 8 epoch 3 is still in the window (8 - 3 < 6): rate 0.
        assert_eq!(h.view(&p, 8 * W).rate, 0.0);
        // At epoch 9 nothing is in the window: the newest aged-out bucket (epoch 3, 0 of 2) is sticky.
        let v = h.view(&p, 9 * W);
        assert_eq!(
            (v.rate, v.floored, v.sticky, v.window),
            (0.0, true, (2, 0), (0, 0))
        );
        let floor_w = 0.0001f64 / 3.0;
        let floor_w = floor_w * floor_w * floor_w;
        h.refresh(&p, 9 * W, Words::new(0, floor_w as f32).scope());
        assert_eq!(h.weight(), floor_w as f32 as f64);
        // Far later, with no writes, the node still has its last known rate, not 1.0.
        let far = h.view(&p, u64::MAX / 2);
        assert_eq!((far.rate, far.sticky), (0.0, (2, 0)));
    }

    #[test]
    fn sticky_when_only_older_buckets_aged() {
        let (p, h) = (prepared(), Health::new());
        rec(&h, &p, 0, 3, 1); // epoch 0: 75%
        rec(&h, &p, 100 * W, 1, 1); // far later: the advance clears epoch 0
        let v = h.view(&p, 200 * W);
        assert_eq!((v.rate, v.sticky), (0.5, (2, 1)));
        // One write after a long gap forms the whole window.
        rec(&h, &p, 300 * W, 1, 0);
        let v = h.view(&p, 300 * W);
        assert_eq!((v.rate, v.window, v.floored), (1.0, (1, 1), false));
    }

    #[test]
    fn idle_for_a_tag_period_does_not_merge_buckets() {
        let (p, h) = (prepared(), Health::new());
        rec(&h, &p, 0, 0, 1); // epoch 0: one failure
                              // 6 * 65,536 epochs later: same bucket, same 16-bit tag.
        let t = 6 * 65_536 * W;
        rec(&h, &p, t, 1, 0);
        let v = h.view(&p, t);
        assert_eq!((v.window, v.sticky, v.rate), ((1, 1), (0, 0), 1.0));
    }

    #[test]
    fn stale_now_records_into_newest_bucket() {
        let (p, h) = (prepared(), Health::new());
        rec(&h, &p, 10 * W, 1, 0);
        rec(&h, &p, 0, 0, 1); // a `now` from the past
        let v = h.view(&p, 10 * W);
        assert_eq!((v.window, v.newest), ((2, 1), 10));
    }

    #[test]
    fn counters_saturate_instead_of_wrapping() {
        let v = bucket(7, COUNT_MAX, COUNT_MAX - 1);
        assert_eq!(bumped(v, true), v);
        let v = bucket(7, COUNT_MAX - 1, 3);
        let b = bumped(v, true);
        assert_eq!((fin(b), succ(b), tag(b)), (COUNT_MAX, 4, 7));
    }

    #[test]
    fn tags_resolve_relative_to_newest() {
        assert_eq!(epoch_of(5, 5), 5);
        assert_eq!(epoch_of(0xFFFF, 0x1_0002), 0xFFFF);
        assert_eq!(epoch_of(3, 0x1_0002), 3);
        assert_eq!(epoch_of(2, 0x5_0002), 0x5_0002);
        assert_eq!(epoch_of(1, 0x5_0002), 0x5_0001);
        assert_eq!(epoch_of(3, 0x5_0002), 0x4_0003);
    }

    #[test]
    fn ewma_moves_by_half_life() {
        let p = Config {
            health: HealthModel::Ewma { half_life: 1 },
            ..Config::seeds()
        }
        .prepare()
        .unwrap();
        let h = Health::new();
        let words = Words::new(0, 0.0);
        h.reset(&p.model);
        assert_eq!(h.view(&p, 0).rate, 1.0);
        h.record(&p, 0, Outcome::Failure, words.scope());
        assert_eq!(h.view(&p, 0).rate, 0.5);
        h.record(&p, 0, Outcome::Failure, words.scope());
        assert_eq!(h.view(&p, 0).rate, 0.25);
        h.record(&p, 9, Outcome::Success, words.scope());
        assert_eq!(h.view(&p, 0).rate, 0.625);
        assert_eq!(h.weight(), 0.625f64.powi(3) as f32 as f64);
        // The average is floored: with a floor weight of 0.5 the scan weight is 0.5.
        h.refresh(&p, 9, Words::new(0, 0.5).scope());
        assert_eq!(h.weight(), 0.5);
    }
}
