//! A node's latency against its own no-load latency, in two limit words, for the limiters that read
//! latency as load: CIAD's opt-in [`rtt_tolerance`](super::CiadLimit::rtt_tolerance) and
//! [`KneeLimit`](super::KneeLimit).
//!
//! - Word 1: the smoothed RTT (integer ns, bits 39..0; 0 = no sample yet) and how many samples it has
//!   seen (bits 47..40, saturating at 255). Each success moves it `1 /` [`RTT_SMOOTHING`] of the way to
//!   its own RTT.
//! - Word 2: the baseline (integer ns, bits 63..24; 0 = not yet learnt) and the tick it was written at
//!   (bits 23..0, ticks of 2^20 ns, modulo 2^24). The baseline is the lowest smoothed RTT once the
//!   average has seen `warmup` samples; it drifts up towards a higher smoothed RTT by the fraction of
//!   the gap that the time since its tick is of the tracker's drift time.
//!
//! The words change in separate compare-and-swaps: a sample that interleaves with another reads a
//! smoothed RTT or a baseline one sample older, which only moves by one sample the moment a limiter
//! reads load. Every value written is below 2^40 ns, so no interleaving can overflow or wrap. Integer
//! nanoseconds throughout: on a microcontroller without an FPU every `f64` operation is a library call.

use super::{LimitState, Sample};

/// Each success moves a node's smoothed RTT `1 / RTT_SMOOTHING` of the way to its own RTT: about the
/// last sixteen calls.
pub const RTT_SMOOTHING: u64 = 16;

/// The baseline's timestamps are in ticks of 2^20 ns (about 1.05 ms), modulo 2^24 (about 4.9 hours),
/// in the low bits of its word.
pub(super) const TICK_SHIFT: u32 = 20;
const TICK_BITS: u32 = 24;
const TICK_MASK: u64 = (1 << TICK_BITS) - 1;
/// RTTs are read up to 2^40 - 1 ns (about 18 minutes), so that the baseline fits beside its tick.
const MAX_RTT_NS: u64 = (1 << 40) - 1;
const COUNT_SHIFT: u32 = 40;
const COUNT_MAX: u64 = 255;

/// Word of the smoothed RTT and its sample count.
pub(super) const SMOOTHED: usize = 1;
/// Word of the baseline RTT and its tick.
pub(super) const BASELINE: usize = 2;

/// How a limiter learns its node's baseline.
#[derive(Clone, Copy)]
pub(super) struct Tracker {
    /// The time, in ticks of 2^20 ns, over which the baseline catches up with a smoothed RTT above it;
    /// at most 2^18 (so that a gap below 2^40 times it fits in 64 bits).
    pub drift_ticks: u64,
    /// How many samples the smoothed RTT must have seen before it may become the baseline (1: the
    /// first sample is the first baseline).
    pub warmup: u64,
}

/// A node's latency as one success leaves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Reading {
    /// The smoothed RTT, ns.
    pub smoothed: u64,
    /// The baseline, ns; 0 while the tracker warms up.
    pub baseline: u64,
}

impl Reading {
    /// Whether the smoothed RTT is more than `ratio` times the baseline (see
    /// [`rtt_above`](Self::rtt_above)).
    #[inline]
    pub fn above(self, ratio: f64) -> bool {
        self.rtt_above(self.smoothed, ratio)
    }

    /// Whether `rtt_ns` is more than `ratio` times the baseline, compared in fixed point: the ratio to
    /// 1/256, a ratio above 2^12 (which no RTT can exceed in practice) acting as 2^12, and an RTT above
    /// [`MAX_RTT_NS`] as it, so neither product overflows. `false` while there is no baseline.
    #[inline]
    pub fn rtt_above(self, rtt_ns: u64, ratio: f64) -> bool {
        self.baseline != 0 && rtt_ns.min(MAX_RTT_NS) * 256 > fixed_ratio(ratio) * self.baseline
    }

    /// The smoothed RTT over the baseline in fixed point, to 1/256 and rounded down (the scale
    /// [`rtt_above`](Self::rtt_above) compares in); `None` while there is no baseline.
    #[cfg(feature = "knee")]
    #[inline]
    pub fn ratio(self) -> Option<u64> {
        (self.smoothed.min(MAX_RTT_NS) * 256).checked_div(self.baseline)
    }
}

/// `ratio` in fixed point, to 1/256; a ratio above 2^12 acts as 2^12 (see [`Reading::rtt_above`]).
#[inline]
pub(super) fn fixed_ratio(ratio: f64) -> u64 {
    ((ratio * 256.0) as u64).min(1 << 20)
}

/// The node's latency as its last success left it, without feeding a sample (a drop's reading).
#[cfg(feature = "knee")]
pub(super) fn current(state: &LimitState) -> Reading {
    Reading {
        smoothed: state.load(SMOOTHED) & MAX_RTT_NS,
        baseline: state.load(BASELINE) >> TICK_BITS,
    }
}

/// Forgets the node's RTTs (a node being added).
pub(super) fn reset(state: &LimitState) {
    state.store(SMOOTHED, 0);
    state.store(BASELINE, 0);
}

impl Tracker {
    /// Feeds one success's RTT (the caller skips drops and zero RTTs) and returns the reading it leaves.
    /// Out of line: one copy however many times a limiter's `update` is inlined (a Cortex-M0's flash).
    #[inline(never)]
    pub fn observe(self, state: &LimitState, sample: &Sample) -> Reading {
        let rtt = sample.rtt_ns.min(MAX_RTT_NS);
        let (mut smoothed, mut count) = (rtt, 1);
        let _ = state.update(SMOOTHED, |w| {
            let (s, n) = (w & MAX_RTT_NS, w >> COUNT_SHIFT);
            if s != 0 {
                smoothed = if rtt >= s {
                    s + (rtt - s) / RTT_SMOOTHING
                } else {
                    s - (s - rtt) / RTT_SMOOTHING
                };
                count = (n + 1).min(COUNT_MAX);
            }
            Some(count << COUNT_SHIFT | smoothed)
        });
        if count < self.warmup {
            return Reading {
                smoothed,
                baseline: state.load(BASELINE) >> TICK_BITS,
            };
        }
        let at = (sample.now_ns >> TICK_SHIFT) & TICK_MASK;
        let mut baseline = smoothed;
        let _ = state.update(BASELINE, |w| {
            let (b, t) = (w >> TICK_BITS, w & TICK_MASK);
            if w != 0 && smoothed > b {
                // Ages read as negative (a sample dated before the stored tick) count as 0.
                let age = match at.wrapping_sub(t) & TICK_MASK {
                    a if a > TICK_MASK / 2 => 0,
                    a => a.min(self.drift_ticks),
                };
                // gap < 2^40 and age <= drift_ticks <= 2^18: the product fits.
                baseline = b + (smoothed - b) * age / self.drift_ticks.max(1);
            }
            Some(baseline << TICK_BITS | at)
        });
        Reading { smoothed, baseline }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ok(rtt_ms: u64, at_ms: u64) -> Sample {
        Sample {
            rtt_ns: rtt_ms * MS,
            inflight: 1,
            dropped: false,
            now_ns: at_ms * MS,
            load: None,
            failed: false,
        }
    }

    #[test]
    fn the_baseline_waits_for_the_warmup_then_keeps_the_lowest_average() {
        let t = Tracker {
            drift_ticks: 1 << 13,
            warmup: 4,
        };
        let st = LimitState::new();
        reset(&st);
        // A lucky first call of 1 ms does not become the baseline: the average has not settled.
        assert_eq!(t.observe(&st, &ok(1, 0)).baseline, 0);
        let r = (1..4).map(|i| t.observe(&st, &ok(20, i))).last().unwrap();
        // 1 + 19/16 = 2.1875, then 2.1875 + 17.8125/16 = 3.30..., then 4.34... ms: the fourth sets it.
        assert_eq!(r.baseline, r.smoothed);
        assert!(r.smoothed > 4 * MS && r.smoothed < 5 * MS, "{r:?}");
        // Slower calls raise the average but not, at once, the baseline.
        let later = t.observe(&st, &ok(40, 4));
        assert!(later.smoothed > r.smoothed && later.baseline < later.smoothed);
        // The count saturates, and huge RTTs are read as 2^40 - 1 ns without carrying into it.
        for i in 0..400 {
            t.observe(&st, &ok(u64::MAX / MS, 5 + i));
        }
        assert_eq!(st.load(SMOOTHED) >> COUNT_SHIFT, COUNT_MAX);
        assert!(st.load(SMOOTHED) & MAX_RTT_NS > MAX_RTT_NS / 2);
    }

    #[test]
    fn above_compares_in_fixed_point_and_never_without_a_baseline() {
        let r = |smoothed, baseline| Reading { smoothed, baseline };
        assert!(!r(100, 0).above(1.0));
        assert!(r(201, 100).above(2.0));
        assert!(!r(200, 100).above(2.0));
        assert!(!r(175, 100).above(1.75));
        assert!(r(176, 100).above(1.75));
        // A huge ratio acts as 2^12: nothing below 4,096x the baseline is above it, and nothing overflows.
        assert!(!r((1 << 40) - 1, 1 << 28).above(f64::MAX));
    }
}
