//! The lowest-score family's decayed counters: two per node, successes and failures, and the penalty
//! they add to a node's in-flight count.
//!
//! # The counters
//! Each counter is one 64-bit word: an `f32` value (bits 63..32) and the tick it was last written at
//! (bits 31..0), a tick being [`TICK_NS`] nanoseconds (about 1.05 ms). Read at a later tick, a counter
//! is its value times `2^(-age / half_life)`: successes halve every second by default, failures every
//! 30 s. A record decays the stored value to its own tick, adds its amount and stores the sum with that
//! tick, in one compare-and-swap, so concurrent records are never lost and decay is applied exactly once
//! per interval whatever the interleaving (the decays of consecutive intervals multiply).
//!
//! A record or read dated before the stored tick (threads race, clocks jitter) treats the age as 0: the
//! amount is added undecayed at the stored tick. Ages are taken modulo 2^32 ticks (52 days) and read as
//! negative above 2^31 (26 days); no counter lives that long, because a counter that has decayed below
//! [`SETTLED`] reads as exactly 0 and the balancer's rotation (at least once per clock epoch of traffic)
//! writes it back as the zero word, which has no age. A rotation after a silence of more than 2^31 ticks
//! zeroes every counter outright (see `Balancer::rotate`).
//!
//! # The penalty
//! `P = penalty * F + ratio_penalty * log2(1 + F / (S + 1))`, with `F` and `S` the decayed failure and
//! success counters: 10 per recent failure, plus 16 more per doubling of failures over successes (the
//! defaults). The `log2` is `internal/log2.rs`'s, from the bits, a table and a polynomial: within 4e-15
//! of the exact value below a ratio of 2 (within `2^-48` plus half an ulp of the result anywhere),
//! exact at powers of two, and the same bits on every target.
//! A node's score is `in_flight + P`. The cached `P` (an `f32` in the cache word, and in fixed point with
//! `P_FRACTION` fractional bits in the scan word, see `word.rs`) is recomputed by each of the node's failures
//! and by every rotation, which is what makes a failing node's penalty fade as its failures decay.
//!
//! A success does not recompute it (unless it forgives, see `forgive`): its success is in the counter at
//! once and in the cached `P` from the next rotation, at most a clock epoch later (a quarter of the
//! shorter half-life: 250 ms by default), as the successes' decay already is. Only a failure must move
//! a node's calls at once; a success lowers `P`, and at a few calls per epoch the acquire that rotates
//! reads it before it chooses. Recomputing `P` on each success was half of a release's time on a node
//! with failures (a division, a `log2` and a compare-and-swap on the release's critical path: 99 ns
//! against 51 ns per pair at 3 nodes, on the benchmarks' workload).

use super::Prepared;
use crate::balance::health::{Health, View};
use crate::balance::outcome::Outcome;
use crate::balance::word::P_MAX;
use crate::internal::log2::log2;
use crate::internal::sync::{AtomicU64, Ordering::*};

/// Nanoseconds per tick of the counters' timestamps: 2^20 (1.048576 ms).
pub const TICK_NS: u64 = 1 << TICK_SHIFT;
pub(crate) const TICK_SHIFT: u32 = 20;
/// A counter whose decayed value is below this reads as 0 (and is written back as 0 by a rotation).
pub(crate) const SETTLED: f64 = 1.0 / (1u64 << 20) as f64;
/// Ages below this many ticks take their decay factor from a table computed once (the same `exp2`, so
/// the same bits). On 64-bit targets the table spans 64 ticks (about 67 ms, two tables of 512 bytes in
/// the balancer), so a node called every few milliseconds never calls `exp2`; on smaller targets it spans
/// 4, so the balancer stays small (a Cortex-M0's `Balancer::new` within 1 KiB of stack).
#[cfg(target_pointer_width = "64")]
pub(crate) const TABLE: usize = 64;
/// See above: 4 ticks on targets below 64 bits.
#[cfg(not(target_pointer_width = "64"))]
pub(crate) const TABLE: usize = 4;

/// One counter's decay: a factor per age in ticks.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Halving {
    /// Half-lives per tick: `TICK_NS / half_life_ns`.
    per_tick: f64,
    /// `2^(-age * per_tick)` for ages below [`TABLE`].
    table: [f64; TABLE],
}

impl Halving {
    pub(super) const UNPREPARED: Halving = Halving {
        per_tick: 0.0,
        table: [1.0; TABLE],
    };

    #[cfg(test)]
    pub(crate) fn new(half_life_ns: u64) -> Halving {
        let mut h = Halving::UNPREPARED;
        h.fill(half_life_ns);
        h
    }

    /// Prepares the decay with `half_life_ns`, in place.
    pub(super) fn fill(&mut self, half_life_ns: u64) {
        let per_tick = TICK_NS as f64 / half_life_ns as f64;
        self.per_tick = per_tick;
        for (age, f) in self.table.iter_mut().enumerate() {
            *f = Self::compute(per_tick, age as u32);
        }
    }

    #[inline]
    fn compute(per_tick: f64, age: u32) -> f64 {
        libm::exp2(-(f64::from(age) * per_tick))
    }

    /// The factor for `age` ticks.
    #[inline]
    pub(crate) fn factor(&self, age: u32) -> f64 {
        match self.table.get(age as usize) {
            Some(&f) => f,
            None => Self::compute(self.per_tick, age),
        }
    }
}

/// The readmission word's mark (see `Health::readmit`): bit 31 of its low half.
#[cfg(feature = "probation")]
const READMITTED: u32 = 1 << 31;

/// The tick of `now`: its nanoseconds over [`TICK_NS`], modulo 2^32.
#[inline]
pub(crate) fn tick(now: u64) -> u32 {
    (now >> TICK_SHIFT) as u32
}

/// `(value, tick)` of a counter word.
#[inline]
pub(super) fn unpack(w: u64) -> (f32, u32) {
    (f32::from_bits((w >> 32) as u32), w as u32)
}

#[inline]
pub(super) fn pack(value: f32, tick: u32) -> u64 {
    (u64::from(value.to_bits()) << 32) | u64::from(tick)
}

/// The age from `from` to `to` in ticks, 0 if `to` is earlier (see the module docs).
#[inline]
pub(super) fn age(from: u32, to: u32) -> u32 {
    let a = to.wrapping_sub(from);
    if a > i32::MAX as u32 {
        0
    } else {
        a
    }
}

/// The counter word `w` read at tick `at`: its decayed value, 0 once below [`SETTLED`].
#[inline]
pub(crate) fn read(w: u64, at: u32, h: &Halving) -> f64 {
    if w == 0 {
        // The zero word (never written, or settled) reads 0 at any age: no decay factor to compute, which
        // for the age of a word without a tick is an `exp2` (a clean node's failure counter, at every
        // rotation).
        return 0.0;
    }
    let (v, t) = unpack(w);
    let v = f64::from(v) * h.factor(age(t, at));
    if v < SETTLED {
        0.0
    } else {
        v
    }
}

/// The word after adding `amount` at tick `at`.
#[inline]
fn added(w: u64, at: u32, amount: f64, h: &Halving) -> u64 {
    if w == 0 {
        return pack(amount as f32, at);
    }
    stored(w, at, read(w, at, h) + amount)
}

/// The word `w` (not the zero word) holding `value` as read at tick `at`.
#[inline]
fn stored(w: u64, at: u32, value: f64) -> u64 {
    let (_, t) = unpack(w);
    // A record dated before the stored tick keeps that tick (age 0).
    let at = if age(t, at) == 0 { t } else { at };
    // An `f32` counter saturates at its largest finite value, never at infinity.
    pack((value as f32).min(f32::MAX), at)
}

/// The penalty of `failures` against `successes` (see the module docs).
#[inline]
pub(crate) fn penalty(failures: f64, successes: f64, k: &Penalty) -> f64 {
    if failures == 0.0 {
        return 0.0;
    }
    let p = k.per_failure * failures + k.per_doubling * log2(1.0 + failures / (successes + 1.0));
    p.min(P_MAX)
}

/// The penalty's two coefficients.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Penalty {
    pub(crate) per_failure: f64,
    pub(crate) per_doubling: f64,
}

impl Health {
    /// Records `outcome` of a call sent at `sent` as the family reads it (see
    /// [`Algorithm`](crate::balance::Algorithm)); returns whether the cached penalty must be
    /// recomputed. Only forgiveness reads `sent` (see [`forgive`](Self::forgive)).
    #[inline(always)]
    pub(crate) fn record_decay(&self, d: &Prepared, now: u64, outcome: Outcome, sent: u64) -> bool {
        // Only forgiveness reads when the call was sent.
        #[cfg(not(feature = "probation"))]
        let _ = sent;
        let (is_failure, amount) = match outcome {
            Outcome::Success => (false, 1.0),
            Outcome::Failure => (true, 1.0),
            Outcome::Dropped => (true, d.dropped),
            Outcome::Throttled => (true, d.throttled),
            Outcome::ClientError => (true, d.client_error),
            Outcome::Ignored => return false,
        };
        let halving = if is_failure { &d.failure } else { &d.success };
        self.add_decayed(is_failure, amount, now, halving);
        #[cfg(feature = "probation")]
        if is_failure {
            self.note_relapse(d, now);
        }
        #[cfg(feature = "probation")]
        if !is_failure && d.keep < 1.0 && !self.no_failures() {
            self.forgive(d, now, sent);
            // Refresh even where the forgiveness emptied the counter: the cached penalty is the old one.
            return true;
        }
        // A success leaves the cached penalty to the next rotation (see the module docs): only a failure
        // must move the node's calls at once.
        is_failure
    }

    /// The counters' reading at `now`.
    pub(super) fn view_decay(&self, d: &Prepared, now: u64) -> View {
        let (s, f, pen) = self.decayed(now, d);
        View {
            rate: if s + f > 0.0 { s / (s + f) } else { 1.0 },
            // Relaxed: a statistic.
            has_data: self.last.load(Relaxed) != 0,
            decayed: (s, f, pen),
            ..View::EMPTY
        }
    }

    /// Adds `amount` to the success (`ring[0]`) or failure (`ring[1]`) counter at `now`.
    fn add_decayed(&self, failure: bool, amount: f64, now: u64, h: &Halving) {
        let word = &self.ring[usize::from(failure)];
        let at = tick(now);
        // SeqCst: a forgiving success (see `record_decay`) loads the failure counter after its own write,
        // and a failure's refresh loads the success counter after its own: with both sides SeqCst, at
        // least one of them sees the other's write (the store-buffering pattern), so a failure that the
        // forgiveness missed is in the failure's own refresh, with the success. On x86 these are the same
        // instructions as weaker orderings.
        let _ = word.fetch_update(SeqCst, SeqCst, |w| Some(added(w, at, amount, h)));
        // loom models SeqCst accesses as AcqRel; this fence is the guarantee the SeqCst accesses above and
        // below have in C++20, in the form loom checks (as in `rt::queue`).
        #[cfg(loom)]
        crate::internal::sync::fence(SeqCst);
        if self.last.load(Relaxed) == 0 {
            // Relaxed: `has_data` is a statistic for snapshots.
            self.last.store(1, Relaxed);
        }
    }

    /// A success's [`forgiveness`](super::LowestScore::forgiveness), for a call sent at `sent`: nothing
    /// if the failure counter was written after the call was sent (at a later tick); else the counter
    /// keeps `d.keep` of its value at `now`, or nothing once what it keeps would weigh less than one
    /// call in flight (against the successes as they read now) or once the counter was last written
    /// more than a clock epoch (`d.quiet` ticks) before the call was sent, in one compare-and-swap (a
    /// failure recorded meanwhile is kept whole: the loop reads it again). The caller refreshes the
    /// penalty, as for any success on a node with failures.
    #[cfg(feature = "probation")]
    #[inline(never)]
    fn forgive(&self, d: &Prepared, now: u64, sent: u64) {
        let (at, sent) = (tick(now), tick(sent));
        // SeqCst: as the counters' other accesses (see `add_decayed`).
        let successes = read(self.ring[0].load(SeqCst), at, &d.success);
        let _ = self.ring[1].fetch_update(SeqCst, SeqCst, |w| {
            // A counter settled meanwhile stays the zero word.
            let written = unpack(w).1;
            // A call sent before the counter's last write tells nothing of the node since: the calls
            // in flight when a node starts to fail still succeed, and must not forgive it.
            if w == 0 || age(sent, written) > 0 {
                return None;
            }
            // Sent a whole epoch after the last failure (or forgiveness), and a success: the node
            // answered well after a rotation of penalties had passed its last failure, as a probe to a
            // recovered node does. A node that keeps failing writes the counter again with each failure.
            if age(written, sent) > d.quiet {
                return Some(0);
            }
            let left = read(w, at, &d.failure) * d.keep;
            // What would weigh less than one call in flight is forgiven whole: at light load any
            // penalty loses to an idle peer, and halving alone takes some 20 successes to reach 0.
            Some(if penalty(left, successes, &d.penalty) < 1.0 {
                0
            } else {
                stored(w, at, left)
            })
        });
    }

    /// The success and failure counters read at `now`, and the penalty they give. Always inlined: a
    /// refresh computes it on every failure and every rotation, and as a call it would spill what
    /// the refresh holds in registers.
    #[inline(always)]
    pub(super) fn decayed(&self, now: u64, d: &Prepared) -> (f64, f64, f64) {
        let at = tick(now);
        // SeqCst: see `add_decayed`.
        let successes = read(self.ring[0].load(SeqCst), at, &d.success);
        let failures = read(self.ring[1].load(SeqCst), at, &d.failure);
        (
            successes,
            failures,
            penalty(failures, successes, &d.penalty),
        )
    }

    /// How many ticks before `now` the failure counter was last written (by a failure, or by
    /// forgiveness); `None` while it is empty (the zero word: no failures, or settled).
    #[cfg(feature = "probation")]
    pub(super) fn failures_quiet_for(&self, now: u64) -> Option<u32> {
        // SeqCst: see `add_decayed`.
        let w = self.ring[1].load(SeqCst);
        (w != 0).then(|| age(unpack(w).1, tick(now)))
    }

    /// Claims the node for a health check (see `Balancer::due_check`): the failure counter, if it reads
    /// above 0 at `now` and was last written at least `quiet` ticks before, is written again with the
    /// same reading at `now`, so the node is not due again (for another check, or a timed probe) for
    /// `quiet` more ticks. False if a failure or another claim wrote it meanwhile, or it has settled.
    #[cfg(feature = "probation")]
    pub(super) fn claim_check(&self, now: u64, quiet: u32, d: &Prepared) -> bool {
        let at = tick(now);
        // SeqCst: as the counters' other accesses (see `add_decayed`).
        self.ring[1]
            .fetch_update(SeqCst, SeqCst, |w| {
                let value = read(w, at, &d.failure);
                (value > 0.0 && age(unpack(w).1, at) >= quiet).then(|| stored(w, at, value))
            })
            .is_ok()
    }

    /// A health check answered well on a node with failures (see `Balancer::report_check`): marks it
    /// readmitted at `now` in the readmission word (`ring[3]`: the relapses counted so far in bits
    /// 63..32, bit 31 set while a readmission is marked, its tick's low 31 bits below), keeping its
    /// relapses. A healthy report on a node without failures readmits nothing.
    #[cfg(feature = "probation")]
    pub(super) fn readmit(&self, now: u64) {
        if self.no_failures() {
            return;
        }
        let at = u64::from(tick(now) & !READMITTED);
        // Relaxed: the readmission word is read and written by this node's failures and checks only,
        // each a read-modify-write on it alone; what it holds paces the checks and orders nothing else.
        let _ = self.ring[3].fetch_update(Relaxed, Relaxed, |w| {
            Some((w & !0xFFFF_FFFF) | u64::from(READMITTED) | at)
        });
    }

    /// A failure at `now`: if the node was readmitted by a health check (a mark in the readmission word,
    /// see [`readmit`](Self::readmit)), the mark is spent, and the node relapsed if the failure came
    /// within the failure half-life (`d.relapse` ticks) of it (one more relapse), or recovered for good
    /// in between if later (the relapses start again from 0). One load of a word that stays 0 where no
    /// health check ever readmitted the node.
    #[cfg(feature = "probation")]
    fn note_relapse(&self, d: &Prepared, now: u64) {
        // Relaxed: see `readmit`.
        if self.ring[3].load(Relaxed) as u32 & READMITTED == 0 {
            return;
        }
        let at = tick(now) & !READMITTED;
        let _ = self.ring[3].fetch_update(Relaxed, Relaxed, |w| {
            let mark = w as u32;
            if mark & READMITTED == 0 {
                return None;
            }
            // Ticks modulo 2^31; a failure dated before the mark (threads race, clocks jitter) came
            // at it.
            let since = at.wrapping_sub(mark & !READMITTED) & !READMITTED;
            let since = if since >= 1 << 30 { 0 } else { since };
            let relapses = (w >> 32) as u32;
            Some(if since < d.relapse {
                u64::from(relapses.saturating_add(1)) << 32
            } else {
                0
            })
        });
    }

    /// The relapses counted in the readmission word (see [`readmit`](Self::readmit)).
    #[cfg(feature = "probation")]
    pub(super) fn relapses(&self) -> u32 {
        // Relaxed: see `readmit`.
        (self.ring[3].load(Relaxed) >> 32) as u32
    }

    /// A health check answered well (see `Balancer::report_check`): every failure is forgiven, as a
    /// success sent a whole epoch after the last failure forgives under `forgiveness`. The successes
    /// are left as they are: a check is not a call. The caller refreshes the penalty.
    #[cfg(feature = "probation")]
    pub(super) fn forgive_all(&self) {
        // SeqCst: see `add_decayed` (a failure's refresh must see the word this replaces, or the
        // refresh after this swap the failure).
        self.ring[1].swap(0, SeqCst);
        #[cfg(loom)]
        crate::internal::sync::fence(SeqCst);
    }

    /// Whether the failure counter is empty (the zero word): a success then has nothing to forgive, and
    /// a health check nothing to readmit.
    #[cfg(feature = "probation")]
    #[inline]
    fn no_failures(&self) -> bool {
        // SeqCst: see `add_decayed`.
        self.ring[1].load(SeqCst) == 0
    }

    /// Writes back as the zero word every counter that reads as 0 at `now` (or every counter, with
    /// `forget`); a counter written meanwhile is left alone (its writer refreshes after it).
    pub(super) fn settle_counters(&self, now: u64, d: &Prepared, forget: bool) {
        let at = tick(now);
        for (word, h) in self.ring[..2].iter().zip([&d.success, &d.failure]) {
            settle_word(word, at, h, forget);
        }
        #[cfg(feature = "slow")]
        if d.slow != 0.0 {
            self.settle_estimate(at, d, forget);
        }
    }
}

fn settle_word(word: &AtomicU64, at: u32, h: &Halving, forget: bool) {
    // Relaxed: a settled word reads the same as the word it replaces (0), and the compare-and-swap fails if
    // a record landed meanwhile; `forget` drops counters older than any tick can tell apart.
    let w = word.load(Relaxed);
    if w != 0 && (forget || read(w, at, h) == 0.0) {
        let _ = word.compare_exchange(w, 0, Relaxed, Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const S: u64 = 1_000_000_000;

    /// The runtime form of `LowestScore::DEFAULT` with `forgiveness`.
    #[cfg(feature = "probation")]
    fn forgiving(forgiveness: f32) -> Prepared {
        let mut d = Prepared::UNPREPARED;
        super::super::LowestScore {
            forgiveness,
            ..super::super::LowestScore::DEFAULT
        }
        .prepare_into(&mut d)
        .unwrap();
        d
    }

    #[cfg(feature = "probation")]
    #[test]
    fn each_success_takes_its_share_of_the_failures() {
        let h = Health::new();
        let d = forgiving(0.5);
        for _ in 0..4 {
            h.record_decay(&d, S, Outcome::Failure, S);
        }
        assert_eq!(h.decayed(S, &d).1, 4.0);
        // Each success halves the failures (read at its own time, so after their decay too).
        assert!(h.record_decay(&d, S, Outcome::Success, S));
        assert_eq!(h.decayed(S, &d).1, 2.0);
        h.record_decay(&d, S, Outcome::Success, S);
        assert_eq!(h.decayed(S, &d).1, 1.0);
        // A 4xx is an answer but not a success: nothing is forgiven.
        h.record_decay(&d, S, Outcome::ClientError, S);
        assert_eq!(h.decayed(S, &d).1, f64::from(1.01f32));
        // Without forgiveness a success leaves the failures alone.
        let (h, d) = (Health::new(), forgiving(0.0));
        h.record_decay(&d, S, Outcome::Failure, S);
        h.record_decay(&d, S, Outcome::Success, S);
        assert_eq!(h.decayed(S, &d).1, 1.0);
        // What would weigh less than one call in flight goes whole: against 3 successes, 0.125 failures
        // weigh 1.25 + 16 log2(1 + 0.125 / 4) = 1.96 and stay; against 4, 0.0625 would weigh 0.91.
        let (h, d) = (Health::new(), forgiving(0.5));
        h.record_decay(&d, S, Outcome::Failure, S);
        for _ in 0..3 {
            h.record_decay(&d, S, Outcome::Success, S);
        }
        assert_eq!(h.decayed(S, &d).1, 0.125);
        // The counter is emptied, and the cached penalty (still the old one) must be recomputed.
        assert!(h.record_decay(&d, S, Outcome::Success, S));
        assert!(h.no_failures());
        // On a node with no failures a success writes nothing to them.
        let (h, d) = (Health::new(), forgiving(1.0));
        h.record_decay(&d, S, Outcome::Success, S);
        assert!(h.no_failures());
    }

    #[cfg(feature = "probation")]
    #[test]
    fn a_success_after_an_epoch_without_failures_forgives_them_all() {
        let d = forgiving(0.5);
        // The default's epoch: a quarter of the 1 s success half-life, in ticks.
        assert_eq!(d.quiet, (250_000_000 >> TICK_SHIFT) as u32);
        let epoch = u64::from(d.quiet) << TICK_SHIFT;
        let h = Health::new();
        for _ in 0..8 {
            h.record_decay(&d, S, Outcome::Failure, S);
        }
        // Within the epoch of the last failure a success halves them.
        h.record_decay(&d, S + epoch, Outcome::Success, S + epoch);
        let left = h.decayed(S + epoch, &d).1;
        assert!(
            (left - 4.0 * d.failure.factor(d.quiet)).abs() < 1e-3,
            "{left}"
        );
        // Its forgiveness wrote the counter: an epoch later (not more) a success halves again.
        h.record_decay(&d, S + 2 * epoch, Outcome::Success, S + 2 * epoch);
        assert!(!h.no_failures());
        // Once the counter was last written more than an epoch before, a success takes the rest.
        assert!(h.record_decay(
            &d,
            S + 3 * epoch + TICK_NS * 2,
            Outcome::Success,
            S + 3 * epoch + TICK_NS * 2
        ));
        assert!(h.no_failures());
        // A node that keeps failing writes its counter each time: a success an epoch after the first of
        // its failures, but soon after the last, only halves them.
        let h = Health::new();
        for i in 0..4 {
            h.record_decay(&d, S + i * epoch, Outcome::Failure, S + i * epoch);
        }
        h.record_decay(
            &d,
            S + 3 * epoch + TICK_NS * 2,
            Outcome::Success,
            S + 3 * epoch + TICK_NS * 2,
        );
        assert!(!h.no_failures());
        // Without forgiveness a quiet epoch forgives nothing either.
        let (h, d) = (Health::new(), forgiving(0.0));
        h.record_decay(&d, S, Outcome::Failure, S);
        h.record_decay(&d, 10 * S, Outcome::Success, 10 * S);
        assert!(!h.no_failures());
    }

    /// A success forgives only if its call was sent after the failures were last written: the calls in
    /// flight when a node starts to fail still succeed, however long after its last failure they end.
    #[cfg(feature = "probation")]
    #[test]
    fn a_call_sent_before_the_last_failure_forgives_nothing() {
        let d = forgiving(0.5);
        let epoch = u64::from(d.quiet) << TICK_SHIFT;
        let h = Health::new();
        for _ in 0..8 {
            h.record_decay(&d, S, Outcome::Failure, S);
        }
        let before = h.decayed(S, &d).1;
        // Sent a second before the failures, ending two epochs after them: nothing forgiven, and the
        // refresh still asked for (the cached penalty reads the success).
        assert!(h.record_decay(&d, S + 2 * epoch, Outcome::Success, S - S / 1_000));
        let kept = h.decayed(S, &d).1;
        assert_eq!(kept, before);
        // Sent at the failures' tick: halved.
        h.record_decay(&d, S + 2 * epoch, Outcome::Success, S);
        let left = h.decayed(S + 2 * epoch, &d).1;
        assert!(
            (left - 4.0 * d.failure.factor(2 * d.quiet)).abs() < 1e-3,
            "{left}"
        );
        // Sent more than an epoch after the counter's last write (the halving, at S + 2 epochs): all.
        let sent = S + 3 * epoch + 2 * TICK_NS;
        h.record_decay(&d, sent + S, Outcome::Success, sent);
        assert!(h.no_failures());
    }

    #[cfg(feature = "probation")]
    #[test]
    fn probation_is_validated() {
        use crate::error::ConfigError;
        let lowest = |probe_fraction, forgiveness| super::super::LowestScore {
            probe_fraction,
            forgiveness,
            ..super::super::LowestScore::DEFAULT
        };
        let mut d = Prepared::UNPREPARED;
        for (p, f) in [(0.0, 0.0), (1.0, 1.0), (0.01, 0.5)] {
            assert_eq!(lowest(p, f).prepare_into(&mut d), Ok(()));
        }
        for (p, f) in [
            (f32::NAN, 0.0),
            (-0.01, 0.0),
            (1.01, 0.0),
            (0.0, f32::INFINITY),
            (0.0, -1.0),
        ] {
            assert_eq!(
                lowest(p, f).prepare_into(&mut d),
                Err(ConfigError::Probation),
                "{p} {f}"
            );
        }
    }
    #[test]
    fn decay_halves_per_half_life() {
        let h = Halving::new(TICK_NS * 100);
        let w = added(0, 1000, 8.0, &h);
        assert_eq!(read(w, 1000, &h), 8.0);
        assert_eq!(read(w, 1100, &h), 4.0);
        assert_eq!(read(w, 1300, &h), 1.0);
        // Table and formula agree: the same exp2.
        for age in [0, 1, 17, 63, 64, 65, 1000] {
            assert_eq!(h.factor(age), libm::exp2(-(f64::from(age) / 100.0)));
        }
        // Consecutive records: decay applied per interval, amounts added at their ticks.
        let w2 = added(w, 1100, 1.0, &h);
        assert_eq!(read(w2, 1100, &h), 5.0);
        assert_eq!(read(w2, 1200, &h), 2.5);
    }

    #[test]
    fn earlier_records_add_undecayed_and_keep_the_tick() {
        let h = Halving::new(TICK_NS * 10);
        let w = added(0, 500, 2.0, &h);
        let w2 = added(w, 400, 1.0, &h);
        assert_eq!(unpack(w2), (3.0, 500));
        // Across the 32-bit wrap: tick 5 is 10 ticks after tick 2^32 - 5.
        let w = added(0, u32::MAX - 4, 4.0, &h);
        assert_eq!(read(w, 5, &h), 2.0);
    }

    #[test]
    fn faded_counters_read_zero_and_settle() {
        let h = Halving::new(S);
        let w = added(0, 0, 1.0, &h);
        let t20 = tick(20 * S);
        assert!(read(w, t20, &h) > 0.0);
        assert_eq!(
            read(w, tick(21 * S), &h),
            0.0,
            "below 2^-20 after 21 half-lives"
        );
        let word = AtomicU64::new(w);
        settle_word(&word, t20, &h, false);
        assert_eq!(word.load(Relaxed), w, "not yet faded");
        settle_word(&word, tick(21 * S), &h, false);
        assert_eq!(word.load(Relaxed), 0);
        let word = AtomicU64::new(w);
        settle_word(&word, 0, &h, true);
        assert_eq!(word.load(Relaxed), 0, "forget");
        // The zero word reads +0.0 at any tick, as the formula gives.
        for at in [0, 63, 64, 1 << 20, u32::MAX] {
            assert_eq!(read(0, at, &h).to_bits(), 0.0f64.to_bits(), "at {at}");
        }
    }

    #[test]
    fn penalty_formula() {
        let k = Penalty {
            per_failure: 10.0,
            per_doubling: 8.0,
        };
        assert_eq!(penalty(0.0, 5.0, &k), 0.0);
        assert_eq!(penalty(1.0, 0.0, &k), 10.0 + 8.0); // log2(1 + 1/1) = 1
        assert_eq!(penalty(3.0, 0.0, &k), 30.0 + 16.0); // log2(1 + 3) = 2
                                                        // log2(1.5) = 0.5849625007211562 (its double nearest); within the log's bound.
        let p = penalty(1.0, 1.0, &k);
        assert!(
            (p - (10.0 + 8.0 * 0.584_962_500_721_156_2)).abs() < 1e-13,
            "{p}"
        );
        assert_eq!(penalty(1e30, 0.0, &k), P_MAX);
    }

    #[test]
    fn saturates_at_f32_max() {
        let h = Halving::new(S);
        let w = pack(f32::MAX, 7);
        assert_eq!(unpack(added(w, 7, 1e38, &h)).0, f32::MAX);
    }
}
