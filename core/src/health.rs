//! Per-node health: the seeds' bucket window (with its sticky bucket) or a single success average, and the
//! node's cached weight.
//!
//! # The bucket window, lock-free
//! Each bucket is one 64-bit word: a 16-bit epoch tag, 24-bit `finished` and 24-bit `succeeded`, so the
//! two counters always change together in one compare-and-swap. `last` holds the full epoch of the newest
//! bucket written (plus one; 0 = no data ever). Bucket `i` holds epoch `e` with `e % count == i`; a tag is
//! read as the most recent epoch `<= last` with those low 16 bits.
//!
//! Rotation is lazy and keyed by the `now` of the writer. A writer whose epoch is past `last` first
//! *advances* the node: it clears every bucket that falls out of the new window, except the newest bucket
//! (epoch `last`), then publishes the new `last` with a compare-and-swap, then records its outcome in the new
//! bucket, then clears the old newest bucket if that one has aged out too. The newest bucket that holds data
//! is therefore always present in the ring, and it is exactly the seeds' sticky bucket: the last bucket that
//! left the window with requests in it (buckets leave oldest first). An idle node keeps its last known rate
//! this way without any write. A writer whose `now` is older than `last` (threads race, clocks jitter)
//! records into the newest bucket. Every read of the ring is validated against `last` and retried if a
//! writer advanced it meanwhile, so a tag is always interpreted against the epoch it was written under.
//!
//! Counters saturate at 2^24 - 1 per bucket (3.3 million outcomes per second per node with 5 s buckets):
//! once `finished` is full, further outcomes in that bucket are not counted, so the rate is kept from the
//! 16.7 million counted instead of wrapping. A 16-bit tag could alias only if a thread stalled inside one
//! release for 65,530 bucket widths, or for the few instructions between an advance and its own write
//! after a node was idle for that long (91 hours with 5 s buckets); the second case can mislead one
//! decision and is repaired by that same release.
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

use crate::config::{Prepared, PreparedModel, MAX_BUCKETS};
use crate::div::Divisor;
use crate::slot;
use crate::sync::{AtomicU64, Ordering::*};

const COUNT_BITS: u32 = 24;
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;
const TAG_SHIFT: u32 = 48;
const TAG_MASK: u64 = 0xFFFF;
// Bucket ages index the weight table with a mask instead of a bounds check.
const _: () = assert!(MAX_BUCKETS.is_power_of_two());
/// Cache word: `f32` scan weight (bits 63..32) | sequence (31..0).
const SEQ_MASK: u64 = 0xFFFF_FFFF;
/// A slot that holds no active node: scan weight 0.
const CACHE_ABSENT: u64 = 0;
/// Scan units per unit of weight, as a power of two: a weight of 1.0 is `2^46` units, so the units of
/// [`MAX_NODES`](crate::MAX_NODES) nodes sum to at most `2^62` and never overflow.
pub(crate) const UNIT_SHIFT: u32 = 46;
const _: () = assert!(crate::MAX_NODES as u64 <= 1 << (62 - UNIT_SHIFT));

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

#[inline]
fn fin(v: u64) -> u64 {
    (v >> COUNT_BITS) & COUNT_MAX
}
#[inline]
fn succ(v: u64) -> u64 {
    v & COUNT_MAX
}
#[inline]
fn tag(v: u64) -> u64 {
    v >> TAG_SHIFT
}
#[inline]
fn bucket(epoch: u64, finished: u64, succeeded: u64) -> u64 {
    ((epoch & TAG_MASK) << TAG_SHIFT) | (finished << COUNT_BITS) | succeeded
}
/// The bucket epoch of `now`. The last epoch, `u64::MAX`, is folded into the one before it so that
/// `last = epoch + 1` never saturates (only 1 ns buckets reach it).
#[inline]
pub(crate) fn epoch_at(now: u64, width: Divisor) -> u64 {
    width.div(now).min(u64::MAX - 1)
}
/// The most recent epoch `<= newest` whose low 16 bits are `t`.
#[inline]
fn epoch_of(t: u64, newest: u64) -> u64 {
    newest.wrapping_sub(newest.wrapping_sub(t) & TAG_MASK)
}
/// One more outcome in bucket `v`; a full bucket stays as it is (see the module docs).
#[inline]
fn bumped(v: u64, success: bool) -> u64 {
    if fin(v) == COUNT_MAX {
        v
    } else {
        v + (1 << COUNT_BITS) + u64::from(success)
    }
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

    /// Forgets everything: called by the adder that owns a claimed slot, before it publishes the slot.
    pub(crate) fn reset(&self, model: &PreparedModel) {
        // Relaxed: the slot is published afterwards by a Release/SeqCst write to its control word.
        let first = match model {
            PreparedModel::Buckets { .. } => 0,
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
        self.scan.store(0, Relaxed);
        let _ = self.cache.fetch_update(Release, Relaxed, |c| {
            Some(CACHE_ABSENT | (bump(c) & SEQ_MASK))
        });
    }

    /// Records one finished outcome (success or not) at `now`, then refreshes the cached weight.
    pub(crate) fn record(&self, p: &Prepared, now: u64, success: bool, scope: Scope<'_>) {
        match p.model {
            PreparedModel::Buckets {
                count, width, ring, ..
            } => {
                let advanced = self.record_bucket(count, ring, epoch_at(now, width), success);
                if success && !advanced && self.keep_full_weight() {
                    return;
                }
            }
            PreparedModel::Ewma { alpha } => {
                let target = if success { 1.0 } else { 0.0 };
                // Relaxed CAS: the average is a standalone statistic (see sync.rs).
                let _ = self.ring[0].fetch_update(Relaxed, Relaxed, |bits| {
                    let avg = f64::from_bits(bits);
                    Some((avg + alpha * (target - avg)).to_bits())
                });
                if self.last.load(Relaxed) == 0 {
                    self.last.store(1, Relaxed);
                }
            }
        }
        self.refresh(p, now, scope);
    }

    /// Records one outcome; returns whether this call advanced the window.
    fn record_bucket(&self, count: u64, ring: Divisor, epoch: u64, success: bool) -> bool {
        let mut advanced = None;
        loop {
            // Acquire: the ring words written under this `last` must be visible before we read them.
            let l1 = self.last.load(Acquire);
            if advanced.is_none() && (l1 == 0 || epoch + 1 > l1) {
                // The newest bucket is kept by an advance (it is the sticky candidate). If it sits where
                // `epoch` goes and its 16-bit tag equals `epoch`'s (a node idle for a multiple of 65,536
                // bucket widths), a write would add to it as if it were `epoch`'s. Step to `epoch - 1`
                // first: the old bucket is then no longer the newest, and the next advance clears it.
                let old = l1.wrapping_sub(1);
                let aliased = l1 != 0
                    && epoch > l1
                    && (epoch - old) % count == 0
                    && (epoch - old) & TAG_MASK == 0;
                let target = if aliased { epoch - 1 } else { epoch };
                match self.advance(count, l1, target) {
                    Some(previous) if !aliased => advanced = Some(previous),
                    _ => {}
                }
                continue;
            }
            // The outcome goes into the newest bucket: our own epoch after our advance, or a newer one if
            // another writer advanced past us (a `now` older than `last` counts as the newest bucket).
            if self.try_write_bucket(count, ring, l1, success) {
                if let Some(Some(old)) = advanced {
                    self.clear_aged_newest(count, old, l1 - 1);
                }
                return advanced.is_some();
            }
        }
    }

    /// Clears the buckets that leave the window when the newest epoch moves from `l1 - 1` to `epoch`,
    /// except the newest one (the sticky candidate), then publishes `epoch`. Returns `None` if another
    /// writer changed `last` first; otherwise `Some(the previous newest epoch, if it had data)`.
    fn advance(&self, count: u64, l1: u64, epoch: u64) -> Option<Option<u64>> {
        if l1 != 0 {
            let newest = l1 - 1;
            for w in &self.ring[..count as usize] {
                // Acquire pairs with the Release of the bucket's writer; the tag is then checked against
                // a `last` that we re-read after the bucket, so it is interpreted under the right epoch.
                let v = w.load(Acquire);
                if fin(v) == 0 {
                    continue;
                }
                if self.last.load(Acquire) != l1 {
                    return None;
                }
                let e = epoch_of(tag(v), newest);
                // `e <= newest < epoch`: `v` was written under `l1` (its Release write is ordered before our
                // re-read of `last`), so its tag resolves to an epoch no newer than `newest`.
                if e != newest && epoch.wrapping_sub(e) >= count {
                    // Release: nothing to publish, but a failed CAS simply means a writer got there.
                    if w.compare_exchange(v, 0, Release, Relaxed).is_err() {
                        return None;
                    }
                }
            }
        }
        // AcqRel: publishes our clears to writers of the new epoch, and orders us after earlier advances.
        match self.last.compare_exchange(l1, epoch + 1, AcqRel, Acquire) {
            Ok(_) => Some(if l1 == 0 { None } else { Some(l1 - 1) }),
            Err(_) => None,
        }
    }

    /// One attempt to add an outcome to the newest bucket, epoch `l1 - 1`. The bucket holds either that
    /// epoch (add to it), or nothing, or an aged epoch (replace it). The bucket is read, then `last` is
    /// checked again: if a writer advanced meanwhile, the word read may already belong to a newer epoch,
    /// which must never be replaced by an older one, so the attempt fails and the caller re-reads `last`.
    #[inline]
    fn try_write_bucket(&self, count: u64, ring: Divisor, l1: u64, success: bool) -> bool {
        let epoch = l1 - 1;
        // `epoch % count`, by multiplication (see `div.rs`).
        let w = &self.ring[(epoch - ring.div(epoch) * count) as usize];
        // Acquire: a bucket written under a newer `last` makes that `last` visible to the check below.
        let v = w.load(Acquire);
        if self.last.load(Acquire) != l1 {
            return false;
        }
        let next = if fin(v) != 0 && tag(v) == epoch & TAG_MASK {
            bumped(v, success)
        } else {
            bucket(epoch, 1, u64::from(success))
        };
        // Release: readers that Acquire this bucket see the `last` it was written under.
        w.compare_exchange(v, next, Release, Relaxed).is_ok()
    }

    /// After an advance from `old` to `epoch` and our write, the old newest bucket is no longer the sticky
    /// candidate; clear it if it left the window so that its tag can never be misread later.
    fn clear_aged_newest(&self, count: u64, old: u64, epoch: u64) {
        if epoch - old < count || old % count == epoch % count {
            return;
        }
        let w = &self.ring[(old % count) as usize];
        let v = w.load(Acquire);
        if fin(v) != 0 && tag(v) == old & TAG_MASK {
            // Relaxed: a failure means a writer replaced it, which is what we wanted.
            let _ = w.compare_exchange(v, 0, Relaxed, Relaxed);
        }
    }

    /// A consistent reading of the node at `now`.
    pub(crate) fn view(&self, p: &Prepared, now: u64) -> View {
        // By reference: the weight table is not copied.
        match &p.model {
            PreparedModel::Ewma { .. } => {
                let has_data = self.last.load(Relaxed) != 0;
                View {
                    rate: f64::from_bits(self.ring[0].load(Relaxed)),
                    floored: true,
                    newest: 0,
                    window: (0, 0),
                    sticky: (0, 0),
                    has_data,
                }
            }
            &PreparedModel::Buckets {
                count,
                width,
                ref weights,
                ..
            } => {
                let Some((newest, words)) = self.snapshot() else {
                    return View {
                        rate: 1.0,
                        floored: false,
                        newest: 0,
                        window: (0, 0),
                        sticky: (0, 0),
                        has_data: false,
                    };
                };
                let span = span(count, width, newest, now);
                let (rate, floored) = rate_of(&words, newest, span, weights);
                let (mut wf, mut ws) = (0u64, 0u64);
                for &v in &words {
                    if fin(v) != 0 && age_of(v, newest) < span {
                        wf += fin(v);
                        ws += succ(v);
                    }
                }
                View {
                    rate,
                    floored,
                    newest,
                    window: (wf, ws),
                    // With no finished outcome in the window, the rate came from the sticky bucket.
                    sticky: if wf == 0 {
                        sticky(&words, newest)
                    } else {
                        (0, 0)
                    },
                    has_data: true,
                }
            }
        }
    }

    /// A consistent copy of the ring with its newest epoch, or `None` for a node without data. Every
    /// ring word is read (those beyond the configured count are always 0), then `last` again: if a writer
    /// advanced it meanwhile, the copy may mix epochs and is taken again.
    #[inline(always)]
    fn snapshot(&self) -> Option<(u64, [u64; MAX_BUCKETS])> {
        loop {
            // Acquire: the ring words written under this `last` must be visible before we read them.
            let l1 = self.last.load(Acquire);
            if l1 == 0 {
                return None;
            }
            let mut words = [0u64; MAX_BUCKETS];
            for (v, w) in words.iter_mut().zip(&self.ring) {
                // Acquire: a bucket written under a newer `last` makes that `last` visible to the check.
                *v = w.load(Acquire);
            }
            if self.last.load(Acquire) == l1 {
                return Some((l1 - 1, words));
            }
        }
    }

    /// The success rate at `at` and whether the recovery floor applies to it: what a refresh needs of
    /// [`view`](Self::view), with the same arithmetic, so the same bits.
    #[inline]
    fn rate(&self, p: &Prepared, at: u64) -> (f64, bool) {
        let PreparedModel::Buckets {
            count,
            width,
            ref weights,
            ..
        } = p.model
        else {
            let v = self.view(p, at);
            return (v.rate, v.floored);
        };
        let Some((newest, words)) = self.snapshot() else {
            return (1.0, false);
        };
        rate_of(&words, newest, span(count, width, newest, at), weights)
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
        // Acquire (all three): see above. The rotation word holds `start - lag` (wrapping).
        let weight = if slot::state(scope.ctl.load(Acquire)) == slot::ACTIVE {
            let start = scope.rotation.load(Acquire).wrapping_add(p.rotation_lag);
            let (rate, floored) = self.rate(p, now.max(start));
            let w = p.weight_of(rate) as f32;
            if floored {
                // Read only when it applies; still after the cache, as the argument above needs.
                w.max(f32::from_bits(scope.active.load(Acquire) as u32))
            } else {
                w
            }
        } else {
            0.0
        };
        let next = (u64::from(weight.to_bits()) << 32) | (bump(seen) & SEQ_MASK);
        // Relaxed: the compare-and-swap below publishes it. Stored before it and again on every retry, so
        // that the last store is that of the last compare-and-swap that succeeds: a store that lands after
        // ours comes from a writer whose compare-and-swap is still to come (had it succeeded before ours,
        // our Acquire load above would have ordered its store before ours).
        self.scan.store(units_of(weight), Relaxed);
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

/// The cache word with its sequence advanced by one (wrapping inside its field).
#[inline]
fn bump(c: u64) -> u64 {
    (c & !SEQ_MASK) | (c.wrapping_add(1) & SEQ_MASK)
}

/// The success rate of a snapshot and whether the recovery floor applies: the window's weighted rate,
/// else the sticky bucket's (floored), else 1.0 for a node whose buckets are all empty.
#[inline(always)]
fn rate_of(
    words: &[u64; MAX_BUCKETS],
    newest: u64,
    span: u64,
    weights: &[f64; MAX_BUCKETS],
) -> (f64, bool) {
    let (num, den) = window_sums(words, newest, span, weights);
    if den > 0.0 {
        return (num / den, false);
    }
    match sticky(words, newest) {
        (0, _) => (1.0, false),
        (f, s) => (s as f64 / f as f64, true),
    }
}

/// How many epochs back from the newest the window reaches when read at `at`: a bucket `age` epochs
/// older than the newest is in it while `age < span`. Reading later than the newest epoch (an idle node
/// read by a rotation) shortens it; ages are still counted from the newest bucket with data, which gives
/// the same ratio as counting from `at` (every weight shrinks by the same factor).
#[inline(always)]
fn span(count: u64, width: Divisor, newest: u64, at: u64) -> u64 {
    count.saturating_sub(epoch_at(at, width).saturating_sub(newest))
}

/// How many epochs bucket `v` is older than `newest`: `newest - epoch_of(tag, newest)`. A tag newer than
/// `newest` cannot occur in a consistent snapshot except near epoch 0, where it gives an age of nearly
/// 2^16: outside every window, as `view` always treated it.
#[inline(always)]
fn age_of(v: u64, newest: u64) -> u64 {
    newest.wrapping_sub(tag(v)) & TAG_MASK
}

/// The window's weighted sums `(Σ w_age * succeeded, Σ w_age * finished)` over a snapshot. Without
/// branches: an empty bucket adds 0 and a bucket outside the window weighs 0. The eight terms are added
/// as a balanced tree (three additions deep instead of eight in a row), always in the same order, so
/// every reading of the same buckets gives the same bits.
#[inline(always)]
fn window_sums(
    words: &[u64; MAX_BUCKETS],
    newest: u64,
    span: u64,
    weights: &[f64; MAX_BUCKETS],
) -> (f64, f64) {
    let mut num = [0.0f64; MAX_BUCKETS];
    let mut den = [0.0f64; MAX_BUCKETS];
    for ((&v, n), d) in words.iter().zip(&mut num).zip(&mut den) {
        let age = age_of(v, newest);
        let a = if age < span {
            weights[age as usize & (MAX_BUCKETS - 1)]
        } else {
            0.0
        };
        // The counts have 24 bits: through `u32`, one conversion instruction each.
        *n = a * f64::from(succ(v) as u32);
        *d = a * f64::from(fin(v) as u32);
    }
    (tree_sum(&num), tree_sum(&den))
}

/// `((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7))`.
#[inline(always)]
fn tree_sum(x: &[f64; MAX_BUCKETS]) -> f64 {
    ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]))
}

/// The sticky bucket of a snapshot whose window is empty: the newest bucket with data, as
/// `(finished, succeeded)`, or `(0, 0)`. Every bucket with data is then outside the window, so the
/// newest of them is the one with the smallest age.
fn sticky(words: &[u64; MAX_BUCKETS], newest: u64) -> (u64, u64) {
    words
        .iter()
        .filter(|&&v| fin(v) != 0)
        .min_by_key(|&&v| age_of(v, newest))
        .map_or((0, 0), |&v| (fin(v), succ(v)))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::config::{Config, HealthModel};

    const W: u64 = 5_000_000_000;

    fn prepared() -> Prepared {
        Config::default().prepare().unwrap()
    }

    /// The balancer's words a node's scan weight depends on: rotated to `start`, an active node, and a
    /// floor weight of `floor`.
    struct Words {
        rotation: AtomicU64,
        active: AtomicU64,
        ctl: AtomicU64,
    }

    impl Words {
        fn new(p: &Prepared, start: u64, floor: f32) -> Words {
            Words {
                rotation: AtomicU64::new(p.rotation_word(start)),
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
        let words = Words::new(p, 0, 0.0);
        for _ in 0..ok {
            h.record(p, t, true, words.scope());
        }
        for _ in 0..bad {
            h.record(p, t, false, words.scope());
        }
    }

    #[test]
    fn fresh_node_is_fully_trusted() {
        let (p, h) = (prepared(), Health::new());
        let v = h.view(&p, 0);
        assert_eq!((v.rate, v.has_data, v.floored), (1.0, false, false));
        assert_eq!(h.weight(), 0.0, "not active yet");
        h.refresh(&p, 123, Words::new(&p, 0, 0.5).scope());
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
        let rotated = Words::new(&p, 6 * W, 0.0);
        h.refresh(&p, 6 * W, rotated.scope());
        assert_eq!(h.weight(), (v6.rate * v6.rate * v6.rate) as f32 as f64);
        // A release dated before that rotation still reads the window at epoch 6.
        h.record(&p, 2 * W, true, rotated.scope());
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
                ..Config::default()
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
            h.refresh(&p, at, Words::new(&p, at, 0.0).scope());
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
        h.refresh(&p, 9 * W, Words::new(&p, 0, floor_w as f32).scope());
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
            ..Config::default()
        }
        .prepare()
        .unwrap();
        let h = Health::new();
        let words = Words::new(&p, 0, 0.0);
        h.reset(&p.model);
        assert_eq!(h.view(&p, 0).rate, 1.0);
        h.record(&p, 0, false, words.scope());
        assert_eq!(h.view(&p, 0).rate, 0.5);
        h.record(&p, 0, false, words.scope());
        assert_eq!(h.view(&p, 0).rate, 0.25);
        h.record(&p, 9, true, words.scope());
        assert_eq!(h.view(&p, 0).rate, 0.625);
        assert_eq!(h.weight(), 0.625f64.powi(3) as f32 as f64);
        // The average is floored: with a floor weight of 0.5 the scan weight is 0.5.
        h.refresh(&p, 9, Words::new(&p, 0, 0.5).scope());
        assert_eq!(h.weight(), 0.5);
    }
}
