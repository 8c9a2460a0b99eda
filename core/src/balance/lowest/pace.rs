//! The lowest-score family's slowness term ([`LowestScore::slow_ratio`](super::LowestScore::slow_ratio)):
//! a node much slower than the fastest counts each of its calls in flight several times over.
//!
//! # The estimate
//! Each node keeps an average of its successes' RTTs in `ring[2]`: an `f32` in nanoseconds (bits 63..32)
//! and the tick of its last sample (bits 31..0), the counters' format (`decay.rs`). The first success sets
//! it; each later one moves it a quarter of the way to its own RTT, so that a node that turns slow is
//! read as slow within a few calls, and one outlier moves it by a quarter of its excess. Only successes
//! count: a node that fails fast is not fast, and its failures are the penalty's. The word is written
//! with a load and a store, not a compare-and-swap: two releases of one node at the same moment may keep
//! one of their two samples, which moves an average, never a count.
//!
//! # The reference and the multiplier
//! The balancer's clock rotation (once per epoch, 250 ms by default) takes the least estimate over the
//! active nodes it refreshes and keeps it in the balancer's `fastest` word (above 64 nodes, the least over
//! the rotation's parts in turn since its first part). A node's ratio is its estimate over that; the ratio
//! beyond 1 fades with the time since the node's last success, at the failure counter's half-life (30 s by
//! default): slowness is read as a health signal, and fades as a failure does, so a node that stopped
//! getting calls because it was slow is tried again as its ratio fades (at light load, about once per
//! half-life), while at higher load it is tried whenever its peers hold enough calls, and a success that
//! shows it fast again lowers its estimate at once. At `slow_ratio` or more, the node's calls in flight count `m =
//! ratio` times each (in steps of a quarter, at most 64.75): its score is `(in_flight + 1) * m - 1 +
//! penalty` (`word::lowest_units`), the peak-EWMA cost of tower and Finagle over the fastest node's
//! latency. Below `slow_ratio`, `m = 1`: nodes of one kind, whose latencies differ by their load and by
//! chance, keep the plain `in_flight + penalty`, so an idle fleet is not herded onto the node that
//! happened to answer fastest.

use super::decay::{age, pack, tick, unpack, SETTLED};
use super::Prepared;
use crate::balance::health::Health;
use crate::balance::slot::NodeSlot;
use crate::balance::word;
use crate::internal::sync::{AtomicU64, Ordering::*};

/// The history word that holds the latency estimate.
const ESTIMATE: usize = 2;
/// What a new sample moves the estimate by: a quarter of the way.
const NEW: f32 = 0.25;
/// The most the slowness code holds (a multiplier of 64.75).
const CODE_MAX: u64 = 0xFF;

impl Health {
    /// Folds a success's RTT (at least 1 ns) into the node's estimate at `now`; whether the node's
    /// slowness code (`fastest` the balancer's reference) is no longer the one its scan word holds.
    #[inline]
    pub(crate) fn note_rtt(
        &self,
        d: &Prepared,
        now: u64,
        rtt_ns: u64,
        fastest: &AtomicU64,
    ) -> bool {
        let word = &self.ring[ESTIMATE];
        let rtt = rtt_ns.max(1) as f32;
        // Relaxed, both: an average that the scan word carries as a code, published by the refresh that
        // a change of code brings about (see the module docs for the race between two releases).
        let old = word.load(Relaxed);
        let estimate = if old == 0 {
            rtt
        } else {
            let (e, _) = unpack(old);
            e + (rtt - e) * NEW
        };
        let at = tick(now);
        word.store(pack(estimate, at), Relaxed);
        code(d, estimate, 0, fastest_of(fastest))
            != (self.units() & word::SLOW_BITS) >> word::SLOW_SHIFT
    }

    /// The node's slowness code at `now`, against the balancer's reference `fastest`.
    #[inline]
    pub(crate) fn slowness(&self, d: &Prepared, now: u64, fastest: &AtomicU64) -> u64 {
        // Relaxed: see `note_rtt`.
        let w = self.ring[ESTIMATE].load(Relaxed);
        if w == 0 {
            return 0;
        }
        let (estimate, t) = unpack(w);
        code(d, estimate, age(t, tick(now)), fastest_of(fastest))
    }

    /// Forgets the estimate once its excess has faded to nothing (the failure factor of its age below
    /// [`SETTLED`]), or with `forget` (see `decay.rs`): the next success sets it afresh, and its age never
    /// grows past what a tick can tell.
    pub(super) fn settle_estimate(&self, at: u32, d: &Prepared, forget: bool) {
        let word = &self.ring[ESTIMATE];
        // Relaxed: as `note_rtt`; a sample stored meanwhile fails the compare-and-swap and stays.
        let w = word.load(Relaxed);
        if w != 0 && (forget || d.failure.factor(age(unpack(w).1, at)) < SETTLED) {
            let _ = word.compare_exchange(w, 0, Relaxed, Relaxed);
        }
    }

    /// The node's latency estimate in nanoseconds, 0 if it has none.
    #[inline]
    pub(crate) fn estimate(&self) -> f32 {
        // Relaxed: see `note_rtt`.
        unpack(self.ring[ESTIMATE].load(Relaxed)).0
    }
}

/// The reference held by the balancer's `fastest` word (`f32` bits; 0, none yet).
#[inline]
fn fastest_of(fastest: &AtomicU64) -> f32 {
    // Relaxed: the rotation stores it before it refreshes the nodes, whose compare-and-swaps publish
    // what they read; a reading with an older reference is the decision of a moment earlier.
    f32::from_bits(fastest.load(Relaxed) as u32)
}

/// The slowness code of an estimate `age` ticks after its last sample, against `fastest`: 0 below
/// `slow_ratio`, else the faded ratio's excess over 1 in quarters (the ratio fades at the failure
/// half-life: see the module docs).
#[inline]
fn code(d: &Prepared, estimate: f32, age: u32, fastest: f32) -> u64 {
    if d.slow == 0.0 || fastest.is_nan() || fastest <= 0.0 {
        return 0;
    }
    let ratio = f64::from(estimate) / f64::from(fastest);
    let faded = 1.0 + (ratio - 1.0) * d.failure.factor(age);
    // NaN-free (both positive and finite), and false below the threshold.
    if faded >= d.slow {
        // Saturating: an `f64` beyond the range converts to the largest `u64`.
        (((faded - 1.0) * 4.0) as u64).min(CODE_MAX)
    } else {
        0
    }
}

/// The rotation's new reference over `part`, the slots it refreshes: the least estimate of their active
/// nodes, and, where `part` is not the rotation's first part (a balancer above 64 slots), of the
/// reference it replaces. Stored before the refreshes, which read it.
pub(super) fn rotate_reference(part: &[NodeSlot], first: bool, fastest: &AtomicU64) {
    let least = part
        .iter()
        // Relaxed: as the scans' reads of the control word.
        .filter(|s| word::state(s.ctl.load(Relaxed)) == word::ACTIVE)
        .map(|s| s.health.estimate())
        .filter(|&e| e > 0.0)
        .fold(f32::INFINITY, f32::min);
    let old = fastest_of(fastest);
    let least = if !first && old > 0.0 {
        least.min(old)
    } else {
        least
    };
    let next = if least.is_finite() { least } else { 0.0 };
    // Relaxed: see `fastest_of`.
    fastest.store(u64::from(next.to_bits()), Relaxed);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::balance::lowest::LowestScore;
    extern crate std;
    use std::vec::Vec;

    const MS: u64 = 1_000_000;

    fn prepared(slow_ratio: f32) -> Prepared {
        let mut d = Prepared::UNPREPARED;
        LowestScore {
            slow_ratio,
            ..LowestScore::DEFAULT
        }
        .prepare_into(&mut d)
        .unwrap();
        d
    }

    fn reference(ns: f32) -> AtomicU64 {
        AtomicU64::new(u64::from(ns.to_bits()))
    }

    #[test]
    fn the_code_is_the_ratio_past_the_threshold_in_quarters() {
        let d = prepared(2.0);
        // Below the threshold, and without a reference, nothing.
        assert_eq!(code(&d, 19.0, 0, 10.0), 0);
        assert_eq!(code(&d, 50.0, 0, 0.0), 0);
        assert_eq!(code(&prepared(0.0), 50.0, 0, 10.0), 0);
        // At it, 4 (calls count twice); five times slower, 16 (five times).
        assert_eq!(code(&d, 20.0, 0, 10.0), 4);
        assert_eq!(code(&d, 50.0, 0, 10.0), 16);
        // Beyond 64.75 times, the largest code.
        assert_eq!(code(&d, 1e9, 0, 1.0), CODE_MAX);
        // The excess fades at the failure half-life (30 s): five times slower, 30 s after its last
        // success, reads as three times (code 8), and 60 s after as twice (code 4).
        let half = ((30_000 * MS) >> crate::balance::lowest::decay::TICK_SHIFT) as u32;
        assert_eq!(code(&d, 50.0, half, 10.0), 8);
        assert_eq!(code(&d, 50.0, 2 * half + 1, 10.0), 0);
    }

    #[test]
    fn each_success_moves_the_estimate_a_quarter_of_the_way() {
        let d = prepared(2.0);
        let h = Health::new();
        let fastest = reference(10.0 * MS as f32);
        assert_eq!(h.estimate(), 0.0);
        // The first sets it: 10 ms, not slow, so the scan word's code (0) still holds.
        assert!(!h.note_rtt(&d, 0, 10 * MS, &fastest));
        assert_eq!(h.estimate(), 10.0 * MS as f32);
        // A 90 ms call moves it to 30 ms: three times the fastest, a new code (8).
        assert!(h.note_rtt(&d, MS, 90 * MS, &fastest));
        assert_eq!(h.estimate(), 30.0 * MS as f32);
        assert_eq!(h.slowness(&d, MS, &fastest), 8);
        // An RTT of 0 counts as 1 ns, so an estimate is never 0 (which means none).
        let h = Health::new();
        h.note_rtt(&d, 0, 0, &fastest);
        assert_eq!(h.estimate(), 1.0);
    }

    #[test]
    fn the_reference_is_the_least_estimate_of_the_active_nodes() {
        let d = prepared(2.0);
        let slots: Vec<NodeSlot> = (0..4).map(|_| NodeSlot::new()).collect();
        let fastest = reference(0.0);
        for (s, rtt) in slots.iter().zip([30, 20, 5, 40]) {
            s.ctl.store(word::pack(word::ACTIVE, 0, 10, 0), Relaxed);
            s.health.note_rtt(&d, 0, rtt * MS, &fastest);
        }
        // Slot 2 is not active, slot 3 has no estimate once forgotten.
        slots[2]
            .ctl
            .store(word::pack(word::LAME_DUCK, 0, 10, 0), Relaxed);
        rotate_reference(&slots, true, &fastest);
        assert_eq!(fastest_of(&fastest), 20.0 * MS as f32);
        // A later part keeps the least since the first part.
        rotate_reference(&slots[3..], false, &fastest);
        assert_eq!(fastest_of(&fastest), 20.0 * MS as f32);
        // A first part starts afresh; one without estimates leaves none.
        rotate_reference(&slots[3..], true, &fastest);
        assert_eq!(fastest_of(&fastest), 40.0 * MS as f32);
        slots[3].health.settle_estimate(0, &d, true);
        rotate_reference(&slots[3..], true, &fastest);
        assert_eq!(fastest_of(&fastest), 0.0);
    }
}
