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
//! `cache` holds the node's weight as an `f32` and how long it stays valid, so that acquire reads one word per
//! node instead of looping over buckets. The weighted rate does not change as the window slides (every
//! weight shrinks by the same factor) until the oldest bucket with data leaves the window, so the cache
//! stores that moment as an offset from `last`, beside a sequence number that every store advances (see
//! `refresh`). The sign bit of the weight (never set by a weight, which
//! is >= 0) marks a weight that is valid until the next write and must be floored at
//! `(floor / active_nodes) ^ exponent` when used: the sticky and average cases.

use crate::config::{Prepared, PreparedModel, MAX_BUCKETS};
use crate::div::Divisor;
use crate::sync::{AtomicU64, Ordering::*};

const COUNT_BITS: u32 = 24;
const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;
const TAG_SHIFT: u32 = 48;
const TAG_MASK: u64 = 0xFFFF;
const SIGN: u32 = 1 << 31;
// Bucket ages index the weight table with a mask instead of a bounds check.
const _: () = assert!(MAX_BUCKETS.is_power_of_two());
/// Cache word: `f32` weight (bits 63..32) | sequence (31..4) | expiry offset (3..0, at most `MAX_BUCKETS`).
const OFFSET_MASK: u64 = 0xF;
const SEQ_ONE: u64 = 0x10;
const SEQ_MASK: u64 = 0xFFFF_FFF0;
const _: () = assert!(MAX_BUCKETS as u64 <= OFFSET_MASK);
/// A fresh node: weight 1.0, valid until the first write.
const CACHE_FRESH: u64 = ((1.0f32.to_bits() | SIGN) as u64) << 32;

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
    /// Epochs after `last` at which the windowed rate changes; 0 = not until the next write.
    pub(crate) expiry_offset: u64,
    /// The newest epoch with data (`last - 1`), meaningful for the bucket model only.
    pub(crate) newest: u64,
    /// Finished and succeeded outcomes in the window (unweighted).
    pub(crate) window: (u64, u64),
    /// Finished and succeeded outcomes in the sticky bucket (0, 0 when the window has data).
    pub(crate) sticky: (u64, u64),
    /// Whether the node has recorded any outcome.
    pub(crate) has_data: bool,
}

/// The health words of one node.
#[derive(Debug)]
pub(crate) struct Health {
    /// Cached weight, see the module docs. Written by releases and by acquires that find it expired.
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
            cache: AtomicU64::new(CACHE_FRESH),
            last: ZERO,
            ring: [ZERO; MAX_BUCKETS],
        }
    }

    #[cfg(loom)]
    pub(crate) fn new() -> Self {
        Health {
            cache: AtomicU64::new(CACHE_FRESH),
            last: AtomicU64::new(0),
            ring: core::array::from_fn(|_| AtomicU64::new(0)),
        }
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
        self.cache.store(CACHE_FRESH, Relaxed);
    }

    /// Records one finished outcome (success or not) at `now`, then refreshes the cached weight.
    pub(crate) fn record(&self, p: &Prepared, now: u64, success: bool) {
        match p.model {
            PreparedModel::Buckets { count, width, .. } => {
                let advanced = self.record_bucket(count, epoch_at(now, width), success);
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
        self.refresh(p, now);
    }

    /// Records one outcome; returns whether this call advanced the window.
    fn record_bucket(&self, count: u64, epoch: u64, success: bool) -> bool {
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
            if self.try_write_bucket(count, l1, success) {
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
    fn try_write_bucket(&self, count: u64, l1: u64, success: bool) -> bool {
        let epoch = l1 - 1;
        let w = &self.ring[(epoch % count) as usize];
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
                    expiry_offset: 0,
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
            } => loop {
                let l1 = self.last.load(Acquire);
                if l1 == 0 {
                    return View {
                        rate: 1.0,
                        floored: false,
                        expiry_offset: 0,
                        newest: 0,
                        window: (0, 0),
                        sticky: (0, 0),
                        has_data: false,
                    };
                }
                let newest = l1 - 1;
                let now_epoch = epoch_at(now, width).max(newest);
                let (mut num, mut den) = (0.0f64, 0.0f64);
                let (mut wf, mut ws) = (0u64, 0u64);
                let mut oldest_in_window = u64::MAX;
                let mut sticky = (0u64, 0u64, 0u64); // (epoch + 1, finished, succeeded)
                for w in &self.ring[..count as usize] {
                    let v = w.load(Acquire);
                    let f = fin(v);
                    if f == 0 {
                        continue;
                    }
                    let s = succ(v);
                    let e = epoch_of(tag(v), newest);
                    if e > newest {
                        // Near epoch 0 a tag newer than `newest` resolves past it: a writer advanced `last`
                        // after we read it, and the check below retries the whole reading.
                        continue;
                    }
                    if now_epoch - e < count {
                        // Ages are counted from the newest bucket with data: the same ratio as from `now`
                        // (every weight shrinks by the same factor), and bit-identical whenever it is read.
                        let a = weights[(newest - e) as usize & (MAX_BUCKETS - 1)];
                        num += a * s as f64;
                        den += a * f as f64;
                        wf += f;
                        ws += s;
                        oldest_in_window = oldest_in_window.min(e);
                    } else if e + 1 > sticky.0 {
                        sticky = (e + 1, f, s);
                    }
                }
                if self.last.load(Acquire) != l1 {
                    continue;
                }
                return if den > 0.0 {
                    View {
                        rate: num / den,
                        floored: false,
                        // `newest - oldest < count` (both in the window), so this is in 1..=count.
                        expiry_offset: count - (newest - oldest_in_window),
                        newest,
                        window: (wf, ws),
                        sticky: (0, 0),
                        has_data: true,
                    }
                } else {
                    let (_, f, s) = sticky;
                    View {
                        rate: if f == 0 { 1.0 } else { s as f64 / f as f64 },
                        floored: f != 0,
                        expiry_offset: 0,
                        newest,
                        window: (0, 0),
                        sticky: (f, s),
                        has_data: true,
                    }
                };
            },
        }
    }

    /// Recomputes the cached weight after a write; retries until the stored value was computed after the
    /// last concurrent change, so the cache never keeps an older reading than the newest write.
    ///
    /// Every store to the cache is a compare-and-swap that also advances its sequence field, so a writer
    /// whose reading was overtaken by another writer's store always fails and reads again, even when the
    /// two readings are equal words (no ABA). Of all stores, the last one was therefore computed after
    /// every earlier store, and every write's own store comes after that write: the last reading
    /// includes every write.
    fn refresh(&self, p: &Prepared, now: u64) {
        while !self.try_refresh(p, now).2 {}
    }

    /// One attempt to store a reading taken now: returns the reading, its cache word, and whether the
    /// store landed (a failure means another store came first; that one is at least as fresh).
    fn try_refresh(&self, p: &Prepared, now: u64) -> (View, u64, bool) {
        // Acquire: pairs with the AcqRel of the store we read, so our reading sees the writes behind it.
        let seen = self.cache.load(Acquire);
        let v = self.view(p, now);
        let next = encode(p, &v, seen);
        // AcqRel: publishes our reading.
        let stored = self
            .cache
            .compare_exchange(seen, next, AcqRel, Acquire)
            .is_ok();
        (v, next, stored)
    }

    /// After a success recorded into the newest bucket without advancing the window: if the cache holds
    /// a windowed weight of exactly 1.0, the success leaves both the weight and its expiry as they are (the
    /// oldest bucket did not move, and a rate that rounds to 1.0 only rises). Then the cache is kept with
    /// its sequence advanced (so that a concurrent refresh that read before our write retries), without
    /// recomputing the window: the healthy node's common case. Returns `false` when a refresh is needed.
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

    /// The node's weight for a decision at `now`, with `floor_weight` applied where the floor applies.
    /// `next_epoch` is `epoch(now) + 1` for the bucket model (computed once per decision; unused otherwise).
    /// Reads one word (two for a windowed weight); recomputes only when the window moved past the cache.
    #[inline]
    pub(crate) fn weight(&self, p: &Prepared, now: u64, next_epoch: u64, floor_weight: f64) -> f64 {
        // Relaxed: the cache is a standalone statistic; the check against `last` below only decides whether
        // to trust it, and a stale pair at worst makes the decision of a moment earlier (see sync.rs).
        let c = self.cache.load(Relaxed);
        let bits = (c >> 32) as u32;
        if bits & SIGN != 0 {
            return (f32::from_bits(bits & !SIGN) as f64).max(floor_weight);
        }
        // Valid while `epoch(now) < newest + offset`, i.e. `epoch(now) + 1 < last + offset`. Near the end of
        // time the sum saturates and the slow path decides, which is merely slower.
        if next_epoch < self.last.load(Relaxed).saturating_add(c & OFFSET_MASK) {
            return f32::from_bits(bits) as f64;
        }
        self.weight_slow(p, now, floor_weight)
    }

    #[cold]
    fn weight_slow(&self, p: &Prepared, now: u64, floor_weight: f64) -> f64 {
        // Publishing follows the `refresh` protocol; losing the race to another store is fine.
        let (v, c, _) = self.try_refresh(p, now);
        let w = f32::from_bits(((c >> 32) as u32) & !SIGN) as f64;
        if v.floored {
            w.max(floor_weight)
        } else {
            w
        }
    }
}

/// The cache word with its sequence advanced by one (wrapping inside its field).
#[inline]
fn bump(c: u64) -> u64 {
    (c & !SEQ_MASK) | (c.wrapping_add(SEQ_ONE) & SEQ_MASK)
}

/// Packs a view into a cache word that replaces `seen`: `f32` weight (sign bit = floored, valid until the
/// next write), `seen`'s sequence plus one, and the expiry offset.
fn encode(p: &Prepared, v: &View, seen: u64) -> u64 {
    let w = p.weight_of(v.rate) as f32;
    let mut bits = w.to_bits();
    if v.floored || v.expiry_offset == 0 {
        bits |= SIGN;
    }
    (u64::from(bits) << 32) | (bump(seen) & SEQ_MASK) | v.expiry_offset
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::config::{Config, HealthModel};

    const W: u64 = 5_000_000_000;

    fn prepared() -> Prepared {
        Config::default().prepare().unwrap()
    }

    fn rec(h: &Health, p: &Prepared, t: u64, ok: u64, bad: u64) {
        for _ in 0..ok {
            h.record(p, t, true);
        }
        for _ in 0..bad {
            h.record(p, t, false);
        }
    }

    #[test]
    fn fresh_node_is_fully_trusted() {
        let (p, h) = (prepared(), Health::new());
        let v = h.view(&p, 0);
        assert_eq!((v.rate, v.has_data, v.floored), (1.0, false, false));
        assert_eq!(h.weight(&p, 123, p.next_epoch(123), 0.5), 1.0);
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
        assert_eq!(v.expiry_offset, 6 - 2);
        // Reading later, before the oldest bucket ages out, gives the bit-identical rate.
        assert_eq!(h.view(&p, 5 * W + 7).rate, num / den);
        // At epoch 6 the oldest (epoch 0) leaves the window.
        let v6 = h.view(&p, 6 * W);
        assert_eq!(v6.rate, (5.0 / 3.0) / (4.0 + 10.0 / 3.0) * 1.0);
        assert_eq!(v6.window, (14, 5));
        let cached = h.weight(&p, 2 * W + 3, p.next_epoch(2 * W + 3), 0.0);
        assert_eq!(cached, ((num / den).powi(3)) as f32 as f64);
        // The cache expires exactly when epoch 0 leaves the window.
        assert_eq!(
            h.weight(&p, 6 * W, p.next_epoch(6 * W), 0.0),
            (v6.rate * v6.rate * v6.rate) as f32 as f64
        );
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
        assert_eq!(h.weight(&p, 9 * W, p.next_epoch(9 * W), floor_w), floor_w);
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
        h.reset(&p.model);
        assert_eq!(h.view(&p, 0).rate, 1.0);
        h.record(&p, 0, false);
        assert_eq!(h.view(&p, 0).rate, 0.5);
        h.record(&p, 0, false);
        assert_eq!(h.view(&p, 0).rate, 0.25);
        h.record(&p, 9, true);
        assert_eq!(h.view(&p, 0).rate, 0.625);
        assert_eq!(
            h.weight(&p, 0, p.next_epoch(0), 0.0),
            0.625f64.powi(3) as f32 as f64
        );
        assert_eq!(h.weight(&p, 0, p.next_epoch(0), 0.5), 0.5);
    }
}
