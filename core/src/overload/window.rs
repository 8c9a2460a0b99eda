//! A lock-free rolling window of time buckets, shared by the [`Shedder`](crate::overload::Shedder) and the
//! [`Throttle`](crate::overload::Throttle): go-zero's `RollingWindow` without its lock.
//!
//! # Layout
//! `count` buckets of `width` nanoseconds each; bucket epoch `e = now / width` lives at index
//! `e % count`. A bucket has `L` lanes (independent counters, such as "response-time sum" and "passes").
//! Each lane is one 64-bit word: the low 32 bits of the epoch it belongs to (the tag) in the high half and a
//! saturating 32-bit value in the low half, so resetting a stale lane and adding to it is one
//! compare-and-swap and an update is never lost to a concurrent reset. A lane whose value is 0 is empty,
//! whatever its tag.
//!
//! `last` holds the newest epoch written plus one (0: never written). A writer first places itself against
//! `last` (it loads before it writes, so the shared word is written once per bucket width, not per call):
//! a newer epoch raises `last` to its own; an epoch at most a whole window (`count` epochs) older than the
//! newest adds into the newest bucket (threads race, clocks jitter: as in the health window); an epoch
//! further back moves the window back (see "Jumps in time"). A lane whose tag is older than the target
//! epoch is stale and is replaced. A lane tagged *newer* means this writer stalled for a whole rotation (or
//! its `now` is a whole window old): its target epoch has left the window, taking with it any lanes of this
//! record already written, so it places itself again and writes the whole record again into the bucket it
//! is given. A record (one call's lanes) therefore always lands whole in one bucket, never split between
//! two and never dropped (found by the loom model `window_rotation_keeps_lanes_together`).
//!
//! # Reading
//! [`Window::fold`] visits exactly the buckets go-zero's `Reduce` visits (see the function) and reports
//! each lane whose tag is the visited epoch, else 0. It reads `last`, the buckets, then `last` again, and
//! starts over if a writer moved the window meanwhile: a lane tagged with an epoch newer than the first
//! reading of `last` can only have been written after that writer raised `last` (its `AcqRel` raise is
//! sequenced before its `Release` write, which our `Acquire` load synchronises with), so an unchanged
//! `last` proves every lane read belongs to the window we think it does. A reader therefore retries at
//! most once per bucket width in practice. (`last` moves back only by a rewind, which empties the ring
//! first: see "Jumps in time".)
//!
//! Lanes of one bucket are written in index order and read in reverse order: a reader that sees a
//! writer's contribution to lane `i` (an `Acquire` load of a `Release` write) also sees its contributions
//! to lanes `< i`. The shedder relies on it: a pass counted in lane 1 always has its response time in
//! lane 0, so an average is never computed from a count without its sum.
//!
//! # Jumps in time
//! As in the balancer, a single wild `now` (a caller's bad value such as `u64::MAX`, days ahead, or a
//! clock that jumped) misleads at most until the next call with a sane one. A jump forward needs nothing
//! of its own: an advance past the whole window leaves every lane stale, so the window reads and fills
//! as a fresh one. Without a rule for the way back, though, every sane `now` after a wild future one
//! would be "older than the newest bucket" and be added into the wild bucket: the window would stop
//! ageing for good.
//!
//! **The rule.** A write or read at epoch `e` is a jump back when `e + count < newest`, i.e. `e` is more
//! than a whole window behind the newest epoch written. In time, that is more than `window_ns` between the
//! two `now`s (`newest × width <= t_newest` and `t_e < (e + 1) × width`, so
//! `t_newest − t_e > (newest − e − 1) × width >= count × width`). Threads race by microseconds, not by a
//! whole window, so it is not a late thread but a clock that jumped back, a wild earlier `now`, or a
//! newest epoch that was itself the wild one (a writer that stalls for more than a whole window between
//! reading its clock and writing is taken for one too). At exactly a whole window back
//! (`e + count == newest`) two readings can be as little as `count − 1` widths apart, and a writer there
//! is the late writer of the rotation model above: it keeps landing in the newest bucket.
//!
//! **Moving back.** The window moves back to `e` and is then a fresh window at `e`, exactly as an advance
//! to a far-future epoch discards everything (the wild data, and the window's past with it):
//! - A writer *rewinds*: it empties every lane of the ring (the sweep) while `last` still holds the value
//!   `seen` it read, then sets `last` back to `e + 1` with a compare-and-swap from `seen` (not `fetch_max`),
//!   and writes its record into the fresh bucket `e`. The sweep reloads `last` after loading each non-empty
//!   lane and before clearing it, and a clear is a compare-and-swap from the value loaded; if `last`
//!   changed, the sweep stops, the compare-and-swap fails, and the writer places itself again against the
//!   new value (it may then find the window already moved back, and add as a late or newer writer). The
//!   clears are `Relaxed`: the rewind's `AcqRel` compare-and-swap, sequenced after them, publishes them to
//!   every thread that reads the rewound `last` with `Acquire`.
//! - A reader at such an epoch reads a fresh window at `e` (as a window never written reads, and as the
//!   window will read once the next writer has rewound it, before its own write), without reading the ring:
//!   no lane of the wild epoch can be taken for a current one.
//!
//! **Why records stay whole.** A sweep never clears a lane written under the rewound `last`: such a write
//! comes after the rewind in happens-before (its writer placed itself by an `Acquire` read of the rewound
//! value, or made it), so a sweep whose `Acquire` lane load sees it also sees the rewind when it reloads
//! `last` and stops; and a write that lands after the sweep's load fails the sweep's compare-and-swap.
//! After a rewind, a lane that is neither empty nor written under it was written by a call that placed
//! itself before the rewind and raced it, typically one within a window of the wild epoch (wild itself):
//! readers skip it unless its tag is an epoch they visit, and writers replace it. A writer about to reset a
//! non-empty lane of another epoch therefore reloads `last` first:
//! - its target inside the window: the lane is stale or foreign, replace it;
//! - its target *ahead* of the window (it placed itself before a rewind): it raises `last` back to its
//!   target and looks again, so it never resets a lane written under the rewound window;
//! - its target behind the window and the lane tagged newer: its bucket was taken; it places itself
//!   again, by the rule (so it rewinds rather than follow `last` to a wild epoch), and writes the whole
//!   record again. If it was the one that rewound, its sweep emptied what it had written.
//!
//! Every retry of a writer or reader follows a change of `last` or of a lane made by another thread since
//! it last looked, so the window stays lock-free. A record whose call begins after a wild write is over
//! lands whole, whether it rewinds, races the rewind or follows it, and a reading at a sane time that
//! begins after it never includes the wild data: the loom model `window_rewind_keeps_records_whole` races
//! two such writers (each may rewind) and a reader. What is *not* promised concerns calls that overlap
//! the wild call itself, or a rewind they placed themselves before: such a record may be counted in part
//! (a sweep can empty the lanes it wrote before the sweep and not those after), such a call may move the
//! window forward again (its target is ahead of the rewound window), and such a reading may be torn (a
//! rewind can return `last` to the value the reading began with, so its check passes). They all overlap
//! a wild call, which may mislead until the next sane call is over.
//!
//! # Limits
//! Values saturate at `u32::MAX` per lane per bucket. Tags are 32 bits: a lane untouched for exactly a
//! multiple of 2^32 epochs (13.6 years with 100 ms buckets) would be read as current, and so would a lane
//! written by a call racing a rewind whose epoch is a multiple of 2^32 epochs from a visited one; a writer
//! that stalls for 2^31 epochs or more can misjudge a lane's age by its tag.

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

/// Whether `epoch` is more than a whole window behind the newest epoch of `last` (`epoch + count <
/// newest`): a jump back (see the module docs). Never for a window never written.
#[inline]
fn jumped_back(last: u64, epoch: u64, count: u64) -> bool {
    last.saturating_sub(1).saturating_sub(epoch) > count
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

    /// The epoch a write at epoch `e` goes into, given `seen`, a value of `last` just read with
    /// `Acquire`; and whether this call rewound the window (its sweep then emptied every lane written
    /// before, this writer's included). See the module docs.
    fn place(&self, e: u64, mut seen: u64) -> (u64, bool) {
        loop {
            if seen <= e {
                // AcqRel: publishes the new newest epoch before our bucket write (see the module docs).
                let prev = self.last.fetch_max(e + 1, AcqRel);
                if prev <= e + 1 {
                    return (e, false);
                }
                // Another writer got further first: place against it.
                seen = prev;
            } else if !jumped_back(seen, e, self.count) {
                // Late (at most a whole window): the newest bucket.
                return (seen - 1, false);
            } else if self.sweep(seen) {
                // AcqRel: Release publishes the sweep to every reader of the rewound `last`, and our
                // bucket write after it; Acquire (also on failure) as for the load in `add`.
                match self.last.compare_exchange(seen, e + 1, AcqRel, Acquire) {
                    Ok(_) => return (e, true),
                    Err(now) => seen = now,
                }
            } else {
                // Acquire: as for the load in `add`.
                seen = self.last.load(Acquire);
            }
        }
    }

    /// Empties every lane of the ring while `last` still reads `seen`; `false` as soon as it does not.
    #[cold]
    #[inline(never)]
    fn sweep(&self, seen: u64) -> bool {
        for bucket in self.ring.iter().take(self.count as usize) {
            for w in bucket {
                loop {
                    // Acquire: a lane written under a moved `last` makes that move visible to the check.
                    let cur = w.load(Acquire);
                    if value(cur) == 0 {
                        break;
                    }
                    // Acquire: as above.
                    if self.last.load(Acquire) != seen {
                        return false;
                    }
                    // Relaxed: the rewind's compare-and-swap publishes the emptied ring (module docs).
                    if w.compare_exchange_weak(cur, 0, Relaxed, Relaxed).is_ok() {
                        break;
                    }
                }
            }
        }
        true
    }

    /// Adds `values[i]` to lane `i` of the bucket of `now` (lanes in index order; zeros are skipped).
    pub(crate) fn add(&self, now: u64, values: [u64; L]) {
        let e = self.epoch(now);
        // Acquire: pairs with the AcqRel moves of `last`, so the bucket words we then read are interpreted
        // against a `last` at least as new as the one their writers saw.
        let (mut target, _) = self.place(e, self.last.load(Acquire));
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
                    let next = if value(cur) == 0 {
                        word(target, v)
                    } else if tag(cur) == target as u32 {
                        word(target, value(cur).saturating_add(v))
                    } else {
                        // Another epoch's data: where is the window before we reset it?
                        // Acquire: as above.
                        let seen = self.last.load(Acquire);
                        let newest = seen.saturating_sub(1);
                        if target > newest {
                            // A rewind moved the window back below our target after we placed
                            // ourselves: move it forward again rather than reset a lane written under
                            // the rewound window. AcqRel: as a raise in `place`.
                            self.last.fetch_max(target + 1, AcqRel);
                            continue;
                        }
                        let ahead = tag(cur).wrapping_sub(target as u32) as i32;
                        if ahead > 0 && newest - target >= self.count {
                            // The lane belongs to a newer epoch, so `target` has left the window (and any
                            // lanes of this record already written left with it): place again (which
                            // rewinds if `last` is wild for us) and write the whole record again there.
                            let (t, rewound) = self.place(e, seen);
                            if t != target || rewound {
                                target = t;
                                continue 'record;
                            }
                            continue;
                        }
                        // Stale, or (inside the window) foreign: a tag that only looked newer (a lane
                        // idle for 2^31 epochs, or a call racing a rewind). Replace it.
                        word(target, v)
                    };
                    // Release: a reader that sees this word sees our move of `last` and our lower lanes.
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
    /// A window never written reads as if written at `now`. A `now` older than the newest bucket by at
    /// most a whole window reads as the newest bucket's time; one further back reads a fresh window at
    /// `now` (module docs, "Jumps in time").
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
            // A jump back reads a fresh window at `now`, without the ring.
            let fresh = jumped_back(l1, e, self.count);
            let Some((lo, hi)) = visited(if fresh { 0 } else { l1 }, e, self.count, skip_current)
            else {
                return acc;
            };
            let mut idx = (lo % self.count) as usize;
            let mut epoch = lo;
            loop {
                let mut lanes = [0u64; L];
                if let Some(bucket) = self.ring.get(idx).filter(|_| !fresh) {
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
            // Acquire: pairs with writers' moves; unchanged means every lane read belongs to this window.
            if fresh || self.last.load(Acquire) == l1 {
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
    //! go-zero's [`rollingwindow_test.go`] vectors. Lane 0 is `Sum`, lane 1 `Count`; "sleep" is one
    //! bucket width. Time starts at a multiple of the width far from 0, as go-zero's windows start at
    //! their construction time.
    //!
    //! [`rollingwindow_test.go`]: https://github.com/zeromicro/go-zero/blob/f29c8612e86fca4ac1c6b718fd83f73fbe7235eb/core/collection/rollingwindow_test.go
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

    /// Every bucket a reading visits, with its lanes.
    fn buckets(w: &Window<2>, now: u64, skip: bool) -> Vec<[u64; 2]> {
        let mut out = Vec::new();
        w.fold(now, skip, (), |_, lanes| out.push(lanes));
        out
    }

    /// Asserts that `w` reads exactly as `fresh` at `at` and around it, with and without the current bucket.
    fn reads_as(w: &Window<2>, fresh: &Window<2>, at: u64, width: u64) {
        for now in [at - width, at, at + width, at + 3 * width, at + 10 * width] {
            for skip in [false, true] {
                assert_eq!(
                    buckets(w, now, skip),
                    buckets(fresh, now, skip),
                    "at {now}, skip {skip}"
                );
            }
        }
    }

    #[test]
    fn a_wild_future_write_misleads_only_until_the_next_sane_one() {
        const WIDTH: u64 = 10 * MS;
        const DAY: u64 = 86_400_000 * MS;
        let t0 = 1000 * WIDTH;
        for wild in [u64::MAX, t0 + 3 * DAY] {
            let w: Window<2> = Window::new(3, 3 * WIDTH).unwrap();
            // The window as a fresh one would be: it sees only the sane writes after the wild one.
            let fresh: Window<2> = Window::new(3, 3 * WIDTH).unwrap();
            w.add(t0, [5, 1]);
            w.add(t0 + WIDTH, [6, 1]);
            w.add(wild, [1000, 1]);
            // At the wild time the wild write is current; at sane times the window reads as a fresh one
            // (the wild write is not current there, and the window's past went with the jump).
            assert_eq!(w.sums(wild, false, 2), [1000, 1]);
            reads_as(&w, &fresh, t0 + WIDTH, WIDTH);
            // The next sane write moves the window back: from then on it is a fresh window, whose sane
            // counts age out over the next window as usual.
            let mut now = t0 + WIDTH + 1;
            for step in 0..8u64 {
                if step < 4 {
                    w.add(now, [step + 1, 1]);
                    fresh.add(now, [step + 1, 1]);
                    assert_ne!(w.sums(now, false, 2), [0, 0]);
                }
                reads_as(&w, &fresh, now, WIDTH);
                now += WIDTH;
            }
            assert_eq!(w.sums(now, false, 2), [0, 0]); // 4 idle widths: all aged out
            assert_eq!(w.sums(wild, false, 2), [0, 0]); // the wild write is gone, also at its own time
        }
    }

    #[test]
    fn a_jump_back_is_more_than_a_whole_window() {
        let w: Window<1> = Window::new(3, 30).unwrap(); // 3 buckets of 10 ns
        let n = 1000;
        w.add(n * 10, [1]);
        // Exactly a whole window back: a late write, counted in the newest bucket, and a late reading,
        // read at the newest bucket's time.
        w.add((n - 3) * 10, [2]);
        assert_eq!(w.sums(n * 10, false, 1), [3]);
        assert_eq!(w.sums((n - 3) * 10, false, 1), [3]);
        // One epoch further back: a reading there reads a fresh window (and changes nothing) ...
        assert_eq!(w.sums((n - 4) * 10, false, 1), [0]);
        assert_eq!(w.sums(n * 10, false, 1), [3]);
        // ... and a write moves the window back there, as a fresh one.
        w.add((n - 4) * 10 + 9, [4]);
        assert_eq!(w.sums((n - 4) * 10, false, 1), [4]);
        assert_eq!(w.sums((n - 2) * 10, false, 1), [4]);
        assert_eq!(w.sums(n * 10, false, 1), [0]); // now ahead of it by 4 epochs: expired
                                                   // Forward again to `n`: the bucket of `n` holds only the new write (the jump back emptied it).
        w.add(n * 10, [8]);
        assert_eq!(w.sums(n * 10, false, 1), [8]);
    }

    #[test]
    fn construction_limits() {
        assert!(Window::<1>::new(0, 100).is_none());
        assert!(Window::<1>::new(MAX_WINDOW_BUCKETS as u32 + 1, u64::MAX).is_none());
        assert!(Window::<1>::new(10, 9).is_none()); // buckets narrower than 1 ns
        assert!(Window::<1>::new(10, 10).is_some());
    }
}
