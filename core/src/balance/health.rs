//! One node's health words, as every algorithm family keeps them: what a node's outcomes say of it, and
//! the cached value the acquire scan reads. What the words mean is the family's (`lowest/`: decayed
//! counters and a penalty; `weighted/`: a bucket window or an average, and a weight); how they are
//! published is this file's, the same for every family ([`Family`] is what it needs of one).
//!
//! # The cached value
//! `cache` holds the node's *cached value* as an `f32`: the value the acquire scan uses as it is, so that
//! the scan reads one word per node and nothing else, and 0 for a node that is not active (lame duck,
//! removed, being added). It is recomputed by every release that records an outcome (in the lowest-score
//! family, every failure: a success waits for the rotation, see `lowest/decay.rs`), by every membership
//! change (the states change then, and the weighted family's floor), and by the rotation that the
//! balancer runs once per clock epoch (`Balancer::rotate`): a family's reading changes only when a write
//! lands or when the clock enters a new epoch, so an acquire never checks an expiry. The balancer's
//! rotation word (`clock.rs`) holds the epoch the caches were last rotated to; a reading is taken at that
//! epoch or later, never earlier, so a release whose `now` lags behind the rotation cannot put back a
//! reading that the rotation aged. The low 32 bits are a sequence number that every store advances (see
//! `refresh`).
//!
//! Beside the cache, `scan` holds the same value as an integer, the scan word (see `word.rs`), which the
//! acquire's first pass reads. A refresh stores `scan` before its compare-and-swap on `cache` and stores
//! it again whenever that fails, so the last `scan` store belongs to the last successful compare-and-swap:
//! once the node's writes have finished, the two words hold the same value (see `try_refresh`).

use crate::balance::outcome::Outcome;
use crate::balance::word;
use crate::internal::sync::{AtomicU64, Ordering::*};

/// The most words of outcome history a node keeps (each family reads them its own way: the bucket window
/// holds one bucket per word).
pub(crate) const RING: usize = 8;

/// What the health words need of an algorithm family: how it reads an outcome, a node, and its cached
/// value. Each family implements it over its runtime form, and `algorithm.rs` over the configured one
/// (the one dispatch).
pub(crate) trait Family {
    /// Records `outcome` at `now` into `h`'s history; whether the cached value must be recomputed. The
    /// lowest-score family records through its own path, which knows when the call was sent (see
    /// `algorithm::Prepared::record_outcome`), so a build with only that family calls this in tests alone.
    #[cfg_attr(not(any(feature = "buckets", feature = "ewma")), allow(dead_code))]
    fn record(&self, h: &Health, now: u64, outcome: Outcome) -> bool;
    /// The cached value of an active node read at `at` (`f32`), and its scan word.
    fn reading(&self, h: &Health, at: u64, scope: Scope<'_>) -> (f32, u64);
    /// A consistent reading of `h` at `now`, for snapshots.
    fn view(&self, h: &Health, now: u64) -> View;
    /// The scan word of a slot that holds no active node.
    fn absent_units(&self) -> u64;
    /// What a fresh node's first history word holds.
    fn first_word(&self) -> u64;
}

/// Cache word: `f32` cached value (bits 63..32) | sequence (31..0).
const SEQ_MASK: u64 = 0xFFFF_FFFF;
/// A slot that holds no active node: cached value 0.
const CACHE_ABSENT: u64 = 0;

/// The words besides a node's own health that its scan weight depends on.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    /// The balancer's rotation word (see `clock.rs`).
    pub(crate) rotation: &'a AtomicU64,
    /// The balancer's active word: active node count (high 32 bits) | the weighted family's floor weight
    /// (`f32` bits).
    #[cfg_attr(not(any(feature = "buckets", feature = "ewma")), allow(dead_code))]
    pub(crate) active: &'a AtomicU64,
    /// The node's control word: only an active node has a cached value.
    pub(crate) ctl: &'a AtomicU64,
    /// The balancer's fastest latency estimate (`f32` bits; the lowest-score family's slowness term, see
    /// `lowest/pace.rs`).
    #[cfg(feature = "slow")]
    pub(crate) fastest: &'a AtomicU64,
}

/// A consistent reading of a node's health: each family fills in what it keeps, over [`View::EMPTY`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct View {
    /// The success rate before any floor.
    pub(crate) rate: f64,
    /// Whether `rate` is subject to the weighted family's recovery floor (sticky bucket, or the average).
    pub(crate) floored: bool,
    /// The newest epoch with data (`last - 1`), meaningful for the bucket window only.
    pub(crate) newest: u64,
    /// Finished and succeeded outcomes in the window (unweighted).
    pub(crate) window: (u64, u64),
    /// Finished and succeeded outcomes in the sticky bucket (0, 0 when the window has data).
    pub(crate) sticky: (u64, u64),
    /// Whether the node has recorded any outcome.
    pub(crate) has_data: bool,
    /// The decayed success and failure counters and the penalty (the lowest-score family; zeros
    /// otherwise).
    pub(crate) decayed: (f64, f64, f64),
}

impl View {
    /// A node that recorded nothing: rate 1.0, every count 0.
    pub(crate) const EMPTY: View = View {
        rate: 1.0,
        floored: false,
        newest: 0,
        window: (0, 0),
        sticky: (0, 0),
        has_data: false,
        decayed: (0.0, 0.0, 0.0),
    };
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
    /// The family's: 0 until the node has recorded an outcome (so `has_data`); the bucket window keeps
    /// its newest epoch + 1 here.
    pub(crate) last: AtomicU64,
    /// The family's history words: the bucket window's buckets, the average's `f64` bits in `ring[0]`, the
    /// decayed success and failure counters in `ring[0]` and `ring[1]`.
    pub(crate) ring: [AtomicU64; RING],
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
            ring: [ZERO; RING],
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
    pub(crate) fn reset(&self, family: &impl Family) {
        // Relaxed: the slot is published afterwards by a Release/SeqCst write to its control word.
        self.ring[0].store(family.first_word(), Relaxed);
        for w in &self.ring[1..] {
            w.store(0, Relaxed);
        }
        self.last.store(0, Relaxed);
        // A read-modify-write that advances the sequence, not a store: a refresh for the slot's previous
        // occupant may be under way, and its compare-and-swap must then fail and read again (it then
        // reads the cleared ring: Release here, Acquire in `try_refresh`). The weight is 0 until the node
        // is active and the adder's membership refresh computes it. The scan word first, as in
        // `try_refresh`.
        self.scan.store(family.absent_units(), Relaxed);
        let _ = self.cache.fetch_update(Release, Relaxed, |c| {
            Some(CACHE_ABSENT | (bump(c) & SEQ_MASK))
        });
    }

    /// Records `outcome` at `now` as `family` reads it, then refreshes the cached value. An outcome the
    /// family does not count changes nothing.
    #[cfg_attr(not(any(feature = "buckets", feature = "ewma")), allow(dead_code))]
    #[inline]
    pub(crate) fn record(
        &self,
        family: &impl Family,
        now: u64,
        outcome: Outcome,
        scope: Scope<'_>,
    ) {
        if family.record(self, now, outcome) {
            self.refresh(family, now, scope);
        }
    }

    /// A consistent reading of the node at `now`, as `family` reads it.
    pub(crate) fn view(&self, family: &impl Family, now: u64) -> View {
        family.view(self, now)
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
    pub(crate) fn refresh(&self, family: &impl Family, now: u64, scope: Scope<'_>) {
        while !self.try_refresh(family, now, scope) {}
    }

    /// One attempt to store a reading: whether it landed (a failure means another store came first).
    fn try_refresh(&self, family: &impl Family, now: u64, scope: Scope<'_>) -> bool {
        // Acquire: pairs with the AcqRel of the store we read, so our reading sees the writes behind it
        // (and the words that store's rotation or membership change published).
        let seen = self.cache.load(Acquire);
        // Acquire (all three): see above. The rotation word holds the epoch's start.
        let (value, units) = if word::state(scope.ctl.load(Acquire)) == word::ACTIVE {
            let start = scope.rotation.load(Acquire);
            family.reading(self, now.max(start), scope)
        } else {
            (0.0, family.absent_units())
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
    #[cfg_attr(not(feature = "buckets"), allow(dead_code))]
    pub(crate) fn keep_full_weight(&self) -> bool {
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

    /// The node's cached value (the weight, or the penalty): one load.
    #[cfg_attr(not(any(feature = "buckets", feature = "ewma")), allow(dead_code))]
    #[inline(always)]
    pub(crate) fn cached(&self) -> f64 {
        // Relaxed: the cache is a standalone statistic; a stale value at worst makes the decision of a
        // moment earlier (see sync.rs).
        f32::from_bits((self.cache.load(Relaxed) >> 32) as u32) as f64
    }
}

/// The cache word with its sequence advanced by one (wrapping inside its field).
#[inline]
fn bump(c: u64) -> u64 {
    (c & !SEQ_MASK) | (c.wrapping_add(1) & SEQ_MASK)
}

/// What the families' tests share: the balancer's words a node's cached value depends on.
#[cfg(all(test, not(loom)))]
pub(crate) mod testing {
    use super::*;

    /// The balancer's words a node's cached value depends on: rotated to `start`, an active node, and a
    /// floor weight of `floor`.
    pub(crate) struct Words {
        pub(crate) rotation: AtomicU64,
        pub(crate) active: AtomicU64,
        pub(crate) ctl: AtomicU64,
        #[cfg(feature = "slow")]
        pub(crate) fastest: AtomicU64,
    }

    impl Words {
        pub(crate) fn new(start: u64, floor: f32) -> Words {
            Words {
                rotation: AtomicU64::new(start),
                active: AtomicU64::new((1 << 32) | u64::from(floor.to_bits())),
                ctl: AtomicU64::new(word::pack(word::ACTIVE, 0, 100, 0)),
                #[cfg(feature = "slow")]
                fastest: AtomicU64::new(0),
            }
        }

        pub(crate) fn scope(&self) -> Scope<'_> {
            Scope {
                rotation: &self.rotation,
                active: &self.active,
                ctl: &self.ctl,
                #[cfg(feature = "slow")]
                fastest: &self.fastest,
            }
        }
    }

    /// Records `ok` successes and `bad` failures at `t`.
    pub(crate) fn rec(h: &Health, family: &impl Family, t: u64, ok: u64, bad: u64) {
        let words = Words::new(0, 0.0);
        for _ in 0..ok {
            h.record(family, t, Outcome::Success, words.scope());
        }
        for _ in 0..bad {
            h.record(family, t, Outcome::Failure, words.scope());
        }
    }
}
