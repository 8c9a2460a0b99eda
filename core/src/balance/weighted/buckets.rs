//! [The cascade's](crate#vocabulary) bucket window ([`BucketHealth`]), lock-free.
//!
//! Each bucket is one 64-bit word: a 16-bit epoch tag, 24-bit `finished` and 24-bit `succeeded`, so the
//! two counters always change together in one compare-and-swap. `last` holds the full epoch of the newest
//! bucket written (plus one; 0 = no data ever). Bucket `i` holds epoch `e` with `e % count == i`; a tag is
//! read as the most recent epoch `<= last` with those low 16 bits.
//!
//! Rotation is lazy and keyed by the `now` of the writer. A writer whose epoch is past `last` first
//! *advances* the node: it clears every bucket that falls out of the new window, except the newest bucket
//! (epoch `last`), then publishes the new `last` with a compare-and-swap, then records its outcome in the new
//! bucket, then clears the old newest bucket if that one has aged out too. The newest bucket that holds data
//! is therefore always present in the ring, and it is exactly the cascade's sticky bucket: the last bucket that
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

use super::cascade_reading;
use crate::balance::health::{Health, View, RING};
use crate::balance::outcome::Outcome;
use crate::error::ConfigError;
use crate::internal::div::Divisor;
use crate::internal::sync::Ordering::*;

/// The most buckets a node's window can have (each bucket is one 64-bit word in the node's slot).
pub const MAX_BUCKETS: usize = 8;
const _: () = assert!(MAX_BUCKETS <= RING);

/// [The cascade's](crate#vocabulary) success rate: a window of `count` buckets of `width_ns` each, plus a
/// sticky bucket (see [`WeightedHealth::Buckets`](super::WeightedHealth::Buckets)).
///
/// Success rate: with finished requests in the window, `Σ w_a·succeeded / Σ w_a·finished` with
/// `w_a = decay^-age` (age 0 = the newest bucket, the one being written); with none in the window but
/// data in the sticky bucket, the sticky bucket's rate floored at `floor / active_nodes`; with no data
/// ever, 1.0.
///
/// ```
/// use core::time::Duration;
/// use weir::balance::{Algorithm, BucketHealth, Weighted, WeightedHealth};
/// assert_eq!(WeightedHealth::BUCKETS, WeightedHealth::Buckets(BucketHealth::DEFAULT));
/// let fine = BucketHealth::new(8, Duration::from_millis(100), 2.0);
/// assert_eq!(fine, BucketHealth { count: 8, width_ns: 100_000_000, decay: 2.0 });
/// let weighted = Weighted { health: WeightedHealth::Buckets(fine), ..Weighted::CASCADE };
/// let config = weir::Config { algorithm: Algorithm::Weighted(weighted), ..weir::Config::cascade() };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BucketHealth {
    /// Buckets in the window, 1..=[`MAX_BUCKETS`] (the cascade's: 6).
    pub count: usize,
    /// Width of one bucket in nanoseconds (the cascade's: 5 s).
    pub width_ns: u64,
    /// Each bucket weighs `decay` times the next older one (the cascade's: 3).
    pub decay: f64,
}

impl BucketHealth {
    /// [The cascade's](crate#vocabulary) window: 6 buckets of 5 s, decay 3.
    pub const DEFAULT: BucketHealth = BucketHealth {
        count: 6,
        width_ns: 5_000_000_000,
        decay: 3.0,
    };

    /// `count` buckets of `width` each, each weighing `decay` times the next older one. A width longer
    /// than `u64::MAX` ns (about 584 years) saturates to `u64::MAX`; validation checks the result as any
    /// `width_ns` (at least 1 ns, so [`Duration::ZERO`] is refused).
    ///
    /// [`Duration::ZERO`]: core::time::Duration::ZERO
    #[must_use]
    pub const fn new(count: usize, width: core::time::Duration, decay: f64) -> BucketHealth {
        BucketHealth {
            count,
            width_ns: crate::internal::time::saturating_ns(width),
            decay,
        }
    }

    /// Checks every field and computes the weight table into `out`, in place (see
    /// `LowestScore::prepare_into`).
    pub(crate) fn prepare_into(&self, out: &mut Prepared) -> Result<(), ConfigError> {
        if self.count == 0 || self.count > MAX_BUCKETS {
            return Err(ConfigError::BucketCount);
        }
        let Some(width) = Divisor::new(self.width_ns) else {
            return Err(ConfigError::BucketWidth);
        };
        if !(self.decay.is_finite() && self.decay >= 1.0) {
            return Err(ConfigError::Decay);
        }
        // `count >= 1` was checked above.
        out.ring = Divisor::new(self.count as u64).ok_or(ConfigError::BucketCount)?;
        out.count = self.count as u64;
        out.width = width;
        out.weights = [0.0; MAX_BUCKETS];
        for (age, slot) in out.weights.iter_mut().enumerate().take(self.count) {
            // decay^age is exact for whole decays and these ages; one rounding in the division.
            *slot = 1.0 / libm::pow(self.decay, age as f64);
        }
        Ok(())
    }

    #[cfg(test)]
    pub(crate) fn prepare(&self) -> Result<Prepared, ConfigError> {
        let mut p = Prepared::UNPREPARED;
        self.prepare_into(&mut p)?;
        Ok(p)
    }
}

/// The model's runtime form.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Prepared {
    pub(crate) count: u64,
    /// The bucket width, for `now / width` without a division instruction.
    pub(crate) width: Divisor,
    /// `count`, for a bucket's place in the ring (`epoch % count`) on every outcome, likewise.
    pub(crate) ring: Divisor,
    /// `decay^-age` for age 0..count.
    pub(crate) weights: [f64; MAX_BUCKETS],
}

impl Prepared {
    /// What [`BucketHealth::prepare`] replaces.
    pub(crate) const UNPREPARED: Prepared = Prepared {
        count: 1,
        width: Divisor::ONE,
        ring: Divisor::ONE,
        weights: [0.0; MAX_BUCKETS],
    };
}

pub(super) const COUNT_BITS: u32 = 24;
pub(super) const COUNT_MAX: u64 = (1 << COUNT_BITS) - 1;
pub(super) const TAG_SHIFT: u32 = 48;
pub(super) const TAG_MASK: u64 = 0xFFFF;
// Bucket ages index the weight table with a mask instead of a bounds check.
const _: () = assert!(MAX_BUCKETS.is_power_of_two());
#[inline]
pub(super) fn fin(v: u64) -> u64 {
    (v >> COUNT_BITS) & COUNT_MAX
}
#[inline]
pub(super) fn succ(v: u64) -> u64 {
    v & COUNT_MAX
}
#[inline]
pub(super) fn tag(v: u64) -> u64 {
    v >> TAG_SHIFT
}
#[inline]
pub(super) fn bucket(epoch: u64, finished: u64, succeeded: u64) -> u64 {
    ((epoch & TAG_MASK) << TAG_SHIFT) | (finished << COUNT_BITS) | succeeded
}
/// The bucket epoch of `now` (see [`Divisor::epoch`]: `last = epoch + 1` never saturates).
#[inline]
pub(super) fn epoch_at(now: u64, width: Divisor) -> u64 {
    width.epoch(now)
}
/// The most recent epoch `<= newest` whose low 16 bits are `t`.
#[inline]
pub(super) fn epoch_of(t: u64, newest: u64) -> u64 {
    newest.wrapping_sub(newest.wrapping_sub(t) & TAG_MASK)
}
/// One more outcome in bucket `v`; a full bucket stays as it is (see the module docs).
#[inline]
pub(super) fn bumped(v: u64, success: bool) -> u64 {
    if fin(v) == COUNT_MAX {
        v
    } else {
        v + (1 << COUNT_BITS) + u64::from(success)
    }
}

impl Health {
    /// Records `outcome` as the cascade reads it; returns whether the cached weight must be recomputed.
    #[inline(always)]
    pub(super) fn record_buckets(&self, b: &Prepared, now: u64, outcome: Outcome) -> bool {
        let Some(success) = cascade_reading(outcome) else {
            return false;
        };
        let advanced = self.record_bucket(b.count, b.ring, epoch_at(now, b.width), success);
        !(success && !advanced && self.keep_full_weight())
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

    /// [`view`](Self::view) for the bucket model.
    pub(super) fn view_buckets(&self, b: &Prepared, now: u64) -> View {
        let Some((newest, words)) = self.snapshot() else {
            return View::EMPTY;
        };
        let span = span(b.count, b.width, newest, now);
        let (rate, floored) = rate_of(&words, newest, span, &b.weights);
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
            ..View::EMPTY
        }
    }

    /// The rate and floor flag of [`view_buckets`](Self::view_buckets), alone: what a refresh reads.
    #[inline]
    pub(super) fn rate_buckets(&self, b: &Prepared, at: u64) -> (f64, bool) {
        let Some((newest, words)) = self.snapshot() else {
            return (1.0, false);
        };
        rate_of(
            &words,
            newest,
            span(b.count, b.width, newest, at),
            &b.weights,
        )
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
    use super::super::testing::*;
    use super::super::WeightedHealth;
    use super::*;
    use crate::balance::word;

    #[test]
    fn weighted_window_rate_is_exact() {
        let (p, h) = (cascade(), Health::new());
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
        assert_eq!(h.cached(), ((num / den).powi(3)) as f32 as f64);
        // A rotation to epoch 6 ages epoch 0 out of the cached weight.
        let rotated = Words::new(6 * W, 0.0);
        h.refresh(&p, 6 * W, rotated.scope());
        assert_eq!(h.cached(), (v6.rate * v6.rate * v6.rate) as f32 as f64);
        // A release dated before that rotation still reads the window at epoch 6.
        h.record(&p, 2 * W, Outcome::Success, rotated.scope());
        let v6 = h.view(&p, 6 * W);
        assert_eq!(h.cached(), (v6.rate * v6.rate * v6.rate) as f32 as f64);
        assert_ne!(v6.rate, h.view(&p, 2 * W).rate);
        // A node that is not active has no scan weight.
        rotated
            .ctl
            .store(word::pack(word::LAME_DUCK, 0, 100, 0), Relaxed);
        h.refresh(&p, 6 * W, rotated.scope());
        assert_eq!(h.cached(), 0.0);
    }
    #[test]
    fn refresh_reads_exactly_what_view_reads() {
        // Random histories, read at random later times (rotations included): the cached weight is the
        // view's rate through `weight_of`, bit for bit, and the scan units are that weight's.
        let mut rng = fastrand::Rng::with_seed(11);
        for case in 0..300 {
            let p = prepared(WeightedHealth::Buckets(BucketHealth {
                count: rng.usize(1..=MAX_BUCKETS),
                width_ns: W,
                decay: [1.0, 2.0, 3.0, 1.7][case % 4],
            }));
            let h = Health::new();
            let mut t = 0;
            for _ in 0..rng.usize(0..40) {
                t += rng.u64(..3 * W);
                rec(&h, &p, t, rng.u64(..3), rng.u64(..3));
            }
            let at = t + rng.u64(..12 * W);
            h.refresh(&p, at, Words::new(at, 0.0).scope());
            let v = h.view(&p, at);
            assert_eq!(h.cached(), p.weight.of(v.rate) as f32 as f64, "case {case}");
            assert_eq!(h.units(), word::units_of(h.cached() as f32), "case {case}");
        }
    }
    #[test]
    fn sticky_bucket_keeps_last_rate_and_floors() {
        let (p, h) = (cascade(), Health::new());
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
        assert_eq!(h.cached(), floor_w as f32 as f64);
        // Far later, with no writes, the node still has its last known rate, not 1.0.
        let far = h.view(&p, u64::MAX / 2);
        assert_eq!((far.rate, far.sticky), (0.0, (2, 0)));
    }
    #[test]
    fn sticky_when_only_older_buckets_aged() {
        let (p, h) = (cascade(), Health::new());
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
        let (p, h) = (cascade(), Health::new());
        rec(&h, &p, 0, 0, 1); // epoch 0: one failure
                              // 6 * 65,536 epochs later: same bucket, same 16-bit tag.
        let t = 6 * 65_536 * W;
        rec(&h, &p, t, 1, 0);
        let v = h.view(&p, t);
        assert_eq!((v.window, v.sticky, v.rate), ((1, 1), (0, 0), 1.0));
    }
    #[test]
    fn stale_now_records_into_newest_bucket() {
        let (p, h) = (cascade(), Health::new());
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
    fn weights_per_age() {
        let b = BucketHealth::DEFAULT.prepare().unwrap();
        assert_eq!(b.count, 6);
        assert_eq!(
            &b.weights[..6],
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
}
