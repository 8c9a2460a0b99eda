//! CIAD's opt-in latency signal ([`CiadLimit::rtt_tolerance`], feature `ciad-latency`): the smoothed RTT
//! and its baseline in limit words 1 and 2 (kept by the shared tracker, `limit/rtt.rs`), and whether a
//! success finds the node past its knee (see the parent module's docs).

use super::CiadLimit;
use crate::limit::rtt::{Tracker, TICK_SHIFT};
use crate::limit::{LimitState, Sample};

/// With [`rtt_tolerance`](CiadLimit::rtt_tolerance) on, the time (2^33 ns, about 8.6 s) over which the
/// baseline catches up with a smoothed RTT above it: each sample moves it the fraction of the gap that
/// the time since the previous sample is of this, all of it after this long. Under steady traffic that
/// is a half-life of about 6 s: a latency that lasts longer than a few seconds is the node's new
/// normal, not a queue.
pub const BASELINE_DRIFT_NS: u64 = TRACKER.drift_ticks << TICK_SHIFT;

/// CIAD's baseline: the first success's RTT, then the lowest smoothed RTT, drifting as above.
const TRACKER: Tracker = Tracker {
    drift_ticks: 1 << 13,
    warmup: 1,
};

/// Forgets the node's RTTs (a node being added).
pub(super) fn reset(state: &LimitState) {
    crate::limit::rtt::reset(state);
}

impl CiadLimit {
    /// Whether `sample`, a success, finds the node's smoothed RTT above `rtt_tolerance` times its
    /// baseline; updates both (see the CIAD module docs). Always `false` with the tolerance off, for a drop
    /// (its RTT is a timeout's or a refusal's, not the node's service), and for an RTT of 0.
    #[inline]
    pub(super) fn too_slow(&self, state: &LimitState, sample: &Sample) -> bool {
        if self.rtt_tolerance == 0.0 || sample.dropped || sample.rtt_ns == 0 {
            return false;
        }
        TRACKER.observe(state, sample).above(self.rtt_tolerance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ConfigError;
    use crate::limit::rtt::{BASELINE, SMOOTHED};
    use crate::limit::Limit;

    const MS: u64 = 1_000_000;

    fn timed(rtt_ms: u64, inflight: u32, dropped: bool, at_ms: u64) -> Sample {
        Sample {
            rtt_ns: rtt_ms * MS,
            inflight,
            dropped,
            now_ns: at_ms * MS,
            load: None,
            failed: false,
        }
    }

    fn latency_aware() -> CiadLimit {
        CiadLimit {
            rtt_tolerance: 2.0,
            ..CiadLimit::default()
        }
    }

    #[test]
    fn a_node_past_its_knee_loses_limit_without_a_single_refusal() {
        let c = latency_aware();
        let st = LimitState::new();
        c.reset(&st);
        // 1,000 calls at 20 ms, full (19 of 20 in flight): the limit grows by about 1/L each.
        for i in 0..1_000 {
            c.update(&st, &timed(20, c.limit(&st), false, i), 0);
        }
        let grown = CiadLimit::exact(&st);
        assert!(grown > 45.0, "{grown}");
        // The node passes its knee: 100 ms per call, still answering. The limit falls back within a
        // few dozen calls, as drops would make it.
        for i in 0..40 {
            c.update(&st, &timed(100, c.limit(&st), false, 1_000 + i), 0);
        }
        assert!(c.limit(&st) < 10, "{}", c.limit(&st));
        // Loss only (dialogue's), the same calls grow the limit further.
        let loss = CiadLimit::default();
        let st = LimitState::new();
        loss.reset(&st);
        for i in 0..1_040 {
            let rtt = if i < 1_000 { 20 } else { 100 };
            loss.update(&st, &timed(rtt, loss.limit(&st), false, i), 0);
        }
        assert!(loss.limit(&st) > 45);
    }

    #[test]
    fn a_latency_that_lasts_becomes_the_baseline() {
        let c = latency_aware();
        let st = LimitState::new();
        c.reset(&st);
        assert!(!c.too_slow(&st, &timed(20, 1, false, 0)));
        // From then on the node answers in 60 ms, one call per 10 ms, for 30 s (a slower deploy).
        let mut last_slow = None;
        for i in 1..3_000u64 {
            if c.too_slow(&st, &timed(60, 1, false, i * 10)) {
                last_slow = Some(i * 10);
            }
        }
        // It reads as load at first, and as the node's normal once the baseline has drifted past half
        // the smoothed RTT: 20 + 40 * (1 - e^(-t / 8.6 s)) > 30 ms from t = 2.5 s.
        let last = last_slow.expect("a 3x latency reads as load at first");
        assert!(
            (1_500..3_000).contains(&last),
            "last slow call at {last} ms"
        );
        // Full successes at 60 ms now grow the limit (about +1/L each).
        let floor = c.limit(&st);
        for i in 0..50 {
            c.update(&st, &timed(60, c.limit(&st), false, 30_000 + i), 0);
        }
        assert!(c.limit(&st) > floor + 1, "{} after {floor}", c.limit(&st));
    }

    #[test]
    fn noise_within_the_tolerance_is_not_load() {
        let c = latency_aware();
        let st = LimitState::new();
        c.reset(&st);
        // Latency spread 15..45 ms around 30 (a uniform, deterministic sequence) once the first second
        // has set the baseline: no success ever decreases the limit.
        for i in 0..5_000u64 {
            let rtt = 15 + (i * 7_919) % 31;
            let before = CiadLimit::exact(&st);
            c.update(&st, &timed(rtt, c.limit(&st), false, i), 0);
            if i > 1_000 {
                assert!(CiadLimit::exact(&st) >= before, "call {i}");
            }
        }
    }

    #[test]
    fn drops_and_zero_rtts_leave_the_rtt_words_alone() {
        let c = latency_aware();
        let st = LimitState::new();
        c.reset(&st);
        c.update(&st, &timed(20, 1, false, 0), 0);
        let words = (st.load(SMOOTHED), st.load(BASELINE));
        // A timeout's RTT is the deadline, not the node's service time.
        assert_eq!(c.update(&st, &timed(5_000, 1, true, 1), 0), 18);
        c.update(&st, &timed(0, 1, false, 2), 0);
        assert_eq!((st.load(SMOOTHED), st.load(BASELINE)), words);
        // A reset forgets them.
        c.reset(&st);
        assert_eq!((st.load(SMOOTHED), st.load(BASELINE)), (0, 0));
    }

    #[test]
    fn rtt_tolerance_is_validated() {
        let base = CiadLimit::default();
        for t in [f64::NAN, 0.5, -1.0, f64::INFINITY, f64::MIN_POSITIVE] {
            let bad = CiadLimit {
                rtt_tolerance: t,
                ..base
            };
            assert_eq!(bad.validate(), Err(ConfigError::RttTolerance), "{t}");
        }
        for t in [0.0, 1.0, 2.0, 1e9] {
            let ok = CiadLimit {
                rtt_tolerance: t,
                ..base
            };
            assert_eq!(ok.validate(), Ok(()), "{t}");
        }
    }
}
