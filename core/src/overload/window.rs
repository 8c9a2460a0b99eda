//! A lock-free rolling window of time buckets, shared by the [`Shedder`](crate::overload::Shedder) and the
//! [`Throttle`](crate::overload::Throttle): go-zero's `RollingWindow` without its lock.
//!
//! # Layout
//! `count` buckets of `width` nanoseconds each; bucket epoch `e = now / width` lives at index
//! `e % count`. A bucket has `L` lanes (independent counters, such as "response-time sum" and "passes").
//! Each lane is one 64-bit word: the low 32 bits of the epoch it belongs to (the tag) in the high half and a
//! saturating 32-bit value in the low half, so resetting a stale lane and adding to it is one
//! compare-and-swap and an update is never lost to a concurrent reset.
//!
//! `last` holds the newest epoch written plus one (0: never written). A writer first raises `last` to its
//! own epoch (it loads before it writes, so the shared word is written once per bucket width, not per call),
//! then adds into the bucket of `max(its epoch, newest)`: a `now` older than the newest bucket (threads
//! race, clocks jitter) counts in the newest bucket, as in the health window. A lane whose tag is older than
//! the target epoch is stale and is replaced. A lane tagged *newer* means this writer stalled for a whole
//! rotation (or its `now` is a whole window old): its target epoch has left the window, taking with it any
//! lanes of this record already written, so it re-reads `last` and writes the whole record again into the
//! newest bucket. A record (one call's lanes) therefore always lands whole in one bucket, never split
//! between two and never dropped (found by the loom model `window_rotation_keeps_lanes_together`).
//!
//! # Reading
//! [`Window::fold`] visits exactly the buckets go-zero's `Reduce` visits (see the function) and reports
//! each lane whose tag is the visited epoch, else 0. It reads `last`, the buckets, then `last` again, and
//! starts over if a writer advanced the window meanwhile: a lane tagged with an epoch newer than the first
//! reading of `last` can only have been written after that writer raised `last` (its `AcqRel` raise is
//! sequenced before its `Release` write, which our `Acquire` load synchronises with), so an unchanged
//! `last` proves every lane read belongs to the window we think it does. A reader therefore retries at
//! most once per bucket width in practice.
//!
//! Lanes of one bucket are written in index order and read in reverse order: a reader that sees a
//! writer's contribution to lane `i` (an `Acquire` load of a `Release` write) also sees its contributions
//! to lanes `< i`. The shedder relies on it: a pass counted in lane 1 always has its response time in
//! lane 0, so an average is never computed from a count without its sum.
//!
//! # Limits
//! Values saturate at `u32::MAX` per lane per bucket. Tags are 32 bits: a lane untouched for exactly a
//! multiple of 2^32 epochs (13.6 years with 100 ms buckets) would be read as current; a writer that
//! stalled for 2^31 epochs writes into the newest bucket.

use crate::internal::div::Divisor;
use crate::internal::sync::{AtomicU64, Ordering::*};

/// The most buckets a [`Shedder`](crate::overload::Shedder) or [`Throttle`](crate::overload::Throttle) window can have
/// (storage is inline: no allocation). Loom builds use 8 to keep the models small.
///
/// ```
/// assert!(weir::overload::MAX_WINDOW_BUCKETS >= 120); // the throttle's default 2 minutes of 1 s buckets
/// ```
#[cfg(not(loom))]
pub const MAX_WINDOW_BUCKETS: usize = 128;
/// The most buckets a window can have (reduced under loom to keep the models small).
#[cfg(loom)]
pub const MAX_WINDOW_BUCKETS: usize = 8;

const VALUE_MASK: u64 = 0xFFFF_FFFF;

#[inline]
fn word(epoch: u64, value: u64) -> u64 {
    (epoch << 32) | value.min(VALUE_MASK)
}
#[inline]
fn tag(w: u64) -> u32 {
    (w >> 32) as u32
}
#[inline]
fn value(w: u64) -> u64 {
    w & VALUE_MASK
}

/// The bucket range a reader visits, oldest first, or `None` when nothing is visited.
#[inline]
fn visited(last: u64, epoch: u64, count: u64, skip_current: bool) -> Option<(u64, u64)> {
    // A window never written reads as if written at `now` (go-zero: `lastTime` is the construction time).
    let newest = if last == 0 { epoch } else { last - 1 };
    let now = epoch.max(newest);
    let span = now - newest;
    if span >= count {
        return None;
    }
    let lo = (now + 1).saturating_sub(count);
    let hi = if span == 0 && skip_current {
        newest.checked_sub(1)?
    } else {
        newest
    };
    (lo <= hi).then_some((lo, hi))
}

/// A rolling window of `count` buckets with `L` lanes each; see the module docs.
#[derive(Debug)]
pub(crate) struct Window<const L: usize> {
    ring: [[AtomicU64; L]; MAX_WINDOW_BUCKETS],
    /// Newest epoch written + 1; 0 = never written.
    last: AtomicU64,
    count: u64,
    width: Divisor,
}

impl<const L: usize> Window<L> {
    /// A window of `count` buckets covering `window_ns`; `None` if `count` is not in
    /// `1..=MAX_WINDOW_BUCKETS` or the buckets would be narrower than 1 ns.
    pub(crate) fn new(count: u32, window_ns: u64) -> Option<Self> {
        let count = count as usize;
        if count == 0 || count > MAX_WINDOW_BUCKETS {
            return None;
        }
        let width = Divisor::new(window_ns / count as u64)?;
        Some(Window {
            ring: Self::ring(),
            last: AtomicU64::new(0),
            count: count as u64,
            width,
        })
    }

    #[cfg(not(loom))]
    fn ring() -> [[AtomicU64; L]; MAX_WINDOW_BUCKETS] {
        [const { [const { AtomicU64::new(0) }; L] }; MAX_WINDOW_BUCKETS]
    }

    #[cfg(loom)]
    fn ring() -> [[AtomicU64; L]; MAX_WINDOW_BUCKETS] {
        core::array::from_fn(|_| core::array::from_fn(|_| AtomicU64::new(0)))
    }

    /// The bucket epoch of `now`. The last epoch is folded into the one before so `epoch + 1` never
    /// overflows (only 1 ns buckets reach it).
    #[inline]
    fn epoch(&self, now: u64) -> u64 {
        self.width.div(now).min(u64::MAX - 1)
    }

    #[inline]
    fn lane(&self, epoch: u64, lane: usize) -> Option<&AtomicU64> {
        self.ring.get((epoch % self.count) as usize)?.get(lane)
    }

    /// Adds `values[i]` to lane `i` of the bucket of `now` (lanes in index order; zeros are skipped).
    pub(crate) fn add(&self, now: u64, values: [u64; L]) {
        let e = self.epoch(now);
        // Acquire: pairs with the AcqRel raise below, so the bucket words we then read are interpreted
        // against a `last` at least as new as the one their writers saw.
        let seen = self.last.load(Acquire);
        let mut target = if e + 1 > seen {
            // AcqRel: publishes the new newest epoch before our bucket write (see the module docs).
            self.last.fetch_max(e + 1, AcqRel).max(e + 1) - 1
        } else {
            seen - 1
        };
        'record: loop {
            for (lane, &v) in values.iter().enumerate() {
                if v == 0 {
                    continue;
                }
                loop {
                    let Some(w) = self.lane(target, lane) else {
                        return;
                    };
                    // Acquire: a lane written under a newer `last` makes that `last` visible to our re-read.
                    let cur = w.load(Acquire);
                    let ahead = tag(cur).wrapping_sub(target as u32) as i32;
                    let next = if value(cur) != 0 && ahead == 0 {
                        word(target, value(cur).saturating_add(v))
                    } else if value(cur) != 0 && ahead > 0 {
                        // The lane belongs to a newer epoch, so `target` has left the window (and any lanes
                        // of this record already written left with it): write the whole record again into
                        // the newest bucket. If `last` shows nothing newer, the tag only looked newer (a
                        // lane idle for 2^31 epochs): it is stale, replace it.
                        // Acquire: as above.
                        let newest = self.last.load(Acquire).saturating_sub(1);
                        if newest > target {
                            target = newest;
                            continue 'record;
                        }
                        word(target, v)
                    } else {
                        word(target, v)
                    };
                    // Release: a reader that sees this word sees our raise of `last` and our lower lanes.
                    if w.compare_exchange_weak(cur, next, Release, Relaxed).is_ok() {
                        break;
                    }
                }
            }
            return;
        }
    }

    /// Folds the visited buckets, oldest first, into `init` with `f(acc, lanes)`. Visited, as go-zero's
    /// `Reduce` does (`span` = bucket epochs between the newest bucket written and `now`):
    /// - `span >= count`: nothing;
    /// - `span == 0` and `skip_current`: the `count - 1` buckets before the current one;
    /// - otherwise the buckets from `now - count + 1` up to the newest bucket written (`count - span` of
    ///   them; the expired ones in between are empty and skipped).
    ///
    /// A window never written reads as if written at `now`. A `now` older than the newest bucket reads
    /// as the newest bucket's time.
    pub(crate) fn fold<A: Copy>(
        &self,
        now: u64,
        skip_current: bool,
        init: A,
        f: impl FnMut(&mut A, [u64; L]),
    ) -> A {
        self.fold_lanes(now, skip_current, L, init, f)
    }

    /// [`Window::fold`] reading only lanes `0..upto` (the others read as 0).
    pub(crate) fn fold_lanes<A: Copy>(
        &self,
        now: u64,
        skip_current: bool,
        upto: usize,
        init: A,
        mut f: impl FnMut(&mut A, [u64; L]),
    ) -> A {
        let e = self.epoch(now);
        loop {
            // Acquire: see the module docs ("Reading").
            let l1 = self.last.load(Acquire);
            let mut acc = init;
            let Some((lo, hi)) = visited(l1, e, self.count, skip_current) else {
                return acc;
            };
            let mut idx = (lo % self.count) as usize;
            let mut epoch = lo;
            loop {
                let mut lanes = [0u64; L];
                if let Some(bucket) = self.ring.get(idx) {
                    for (lane, out) in bucket.iter().zip(lanes.iter_mut()).take(upto).rev() {
                        // Acquire: see the module docs ("Reading" and lane order).
                        let w = lane.load(Acquire);
                        if tag(w) == epoch as u32 {
                            *out = value(w);
                        }
                    }
                }
                f(&mut acc, lanes);
                if epoch == hi {
                    break;
                }
                epoch += 1;
                idx += 1;
                if idx as u64 == self.count {
                    idx = 0;
                }
            }
            // Acquire: pairs with writers' raises; unchanged means every lane read belongs to this window.
            if self.last.load(Acquire) == l1 {
                return acc;
            }
        }
    }

    /// The sum of each lane `0..upto` over the visited buckets (0 for the others).
    pub(crate) fn sums(&self, now: u64, skip_current: bool, upto: usize) -> [u64; L] {
        self.fold_lanes(now, skip_current, upto, [0u64; L], |acc, lanes| {
            for (a, v) in acc.iter_mut().zip(lanes) {
                *a += v;
            }
        })
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! go-zero's `rollingwindow_test.go` vectors (reference/overload.md §1.1). Lane 0 is `Sum`, lane 1
    //! `Count`; "sleep" is one bucket width. Time starts at a multiple of the width far from 0, as
    //! go-zero's windows start at their construction time.
    use super::*;
    extern crate std;
    use std::vec::Vec;

    const MS: u64 = 1_000_000;

    struct W {
        w: Window<2>,
        now: u64,
        width: u64,
        skip: bool,
    }

    impl W {
        fn new(size: u32, width: u64, skip: bool) -> W {
            W {
                w: Window::new(size, width * size as u64).unwrap(),
                now: 1000 * width,
                width,
                skip,
            }
        }
        fn add(&self, v: u64) {
            self.w.add(self.now, [v, 1]);
        }
        fn sleep(&mut self, intervals: u64) {
            self.now += intervals * self.width;
        }
        fn sums(&self) -> Vec<u64> {
            let mut out = Vec::new();
            let n = self.w.fold(self.now, self.skip, 0usize, |n, lanes| {
                out.push(lanes[0]);
                *n += 1;
            });
            assert_eq!(n, out.len());
            out
        }
    }

    #[test]
    fn add_without_ignore() {
        let mut r = W::new(3, 50 * MS, false);
        assert_eq!(r.sums(), [0, 0, 0]);
        r.add(1);
        assert_eq!(r.sums(), [0, 0, 1]);
        r.sleep(1);
        r.add(2);
        r.add(3);
        assert_eq!(r.sums(), [0, 1, 5]);
        r.sleep(1);
        for v in [4, 5, 6] {
            r.add(v);
        }
        assert_eq!(r.sums(), [1, 5, 15]);
        r.sleep(1);
        r.add(7);
        assert_eq!(r.sums(), [5, 15, 7]);
    }

    #[test]
    fn reset_with_ignore_current() {
        let mut r = W::new(3, 50 * MS, true);
        r.add(1);
        r.sleep(1);
        assert_eq!(r.sums(), [0, 1]);
        r.sleep(1);
        assert_eq!(r.sums(), [1]);
        r.sleep(1);
        assert_eq!(r.sums(), [] as [u64; 0]);
        r.add(1);
        r.sleep(10);
        assert_eq!(r.sums(), [] as [u64; 0]);
    }

    #[test]
    fn reduce_total() {
        for (skip, want) in [(false, 10), (true, 4)] {
            let mut r = W::new(4, 50 * MS, skip);
            for x in 0..4 {
                for v in 0..=x {
                    r.add(v);
                }
                if x != 3 {
                    r.sleep(1);
                }
            }
            assert_eq!(r.sums().iter().sum::<u64>(), want, "ignore current: {skip}");
            // Add(0) still counts: the Count lane sees every value.
            assert_eq!(r.w.sums(r.now, skip, 2)[1], if skip { 6 } else { 10 });
        }
    }

    #[test]
    fn time_boundary_is_aligned() {
        let mut r = W::new(3, 30 * MS, false);
        r.add(1);
        assert_eq!(r.sums(), [0, 0, 1]);
        r.now += 45 * MS;
        r.add(2);
        r.add(3);
        assert_eq!(r.sums(), [0, 1, 5]);
        r.now += 20 * MS; // 65 ms in: bucket 2, one after the last write
        for v in [4, 5, 6] {
            r.add(v);
        }
        assert_eq!(r.sums(), [1, 5, 15]);
        r.now += 100 * MS; // 165 ms: every bucket expired
        for v in [7, 8, 9] {
            r.add(v);
        }
        assert_eq!(r.sums(), [0, 0, 24]);
    }

    #[test]
    fn late_writer_counts_in_the_newest_bucket() {
        let r = W::new(3, 10, false);
        r.w.add(r.now + 25, [1, 1]); // epoch +2
        r.w.add(r.now, [5, 1]); // an older `now`: lands in the newest bucket
        assert_eq!(r.w.sums(r.now + 25, false, 2), [6, 2]);
        // A reader with an older `now` reads at the newest bucket's time.
        assert_eq!(r.w.sums(r.now, false, 2), [6, 2]);
        assert_eq!(r.w.sums(r.now, true, 2), [0, 0]);
        assert_eq!(r.w.sums(r.now, false, 1), [6, 0]); // lane 1 not read
    }

    #[test]
    fn stale_and_saturated_lanes() {
        let w: Window<1> = Window::new(2, 20).unwrap();
        w.add(0, [u64::MAX]);
        w.add(1, [7]);
        assert_eq!(w.sums(1, false, 1), [u64::from(u32::MAX)]);
        // Epoch 2 reuses index 0: the stale lane is replaced, not added to.
        w.add(20, [3]);
        assert_eq!(w.sums(20, false, 1), [3]);
        // Extreme times never overflow or panic.
        w.add(u64::MAX, [1]);
        assert_eq!(w.sums(u64::MAX, false, 1), [1]);
        let one: Window<1> = Window::new(1, 1).unwrap();
        one.add(u64::MAX, [2]);
        assert_eq!(one.sums(u64::MAX, false, 1), [2]);
        assert_eq!(one.sums(u64::MAX, true, 1), [0]);
    }

    #[test]
    fn construction_limits() {
        assert!(Window::<1>::new(0, 100).is_none());
        assert!(Window::<1>::new(MAX_WINDOW_BUCKETS as u32 + 1, u64::MAX).is_none());
        assert!(Window::<1>::new(10, 9).is_none()); // buckets narrower than 1 ns
        assert!(Window::<1>::new(10, 10).is_some());
    }
}
