//! Cautious increase, aggressive decrease: palantir dialogue's per-host concurrency limiter
//! (`CautiousIncreaseAggressiveDecreaseConcurrencyLimiter`), the closest prior art to a client-side
//! per-backend limit.
//!
//! The limit `L` is an `f64`; admission uses `trunc(L)`.
//! - Success: if the request's in-flight snapshot is at least `floor(L * backoff_ratio)` (the node was
//!   nearly full), `L = min(max, L + 1/L)`: about +1 per round trip of a full window, so growth is linear
//!   in time rather than exponential. Otherwise nothing changes.
//! - Drop: `L = max(min, floor(L * backoff_ratio))`; the floor makes decreases bite even near 1.
//! - Opt-in ([`rtt_tolerance`](CiadLimit::rtt_tolerance), not dialogue's): a success also counts as a
//!   drop while the node's smoothed RTT is more than `rtt_tolerance` times its baseline, so the limit
//!   finds the node's latency knee, not only its 503 cliff.
//!
//! State: word 0 holds the `f64` limit with the sign bit (a limit is never negative) marking the end of
//! the [`fast_start`](CiadLimit::fast_start) ramp, so the limit and the ramp flag change together in one
//! compare-and-swap and each sample applies exactly once. With `rtt_tolerance` on, word 1 holds the
//! smoothed RTT (integer ns, 0 = no sample yet) and word 2 the baseline (integer ns, bits 63..24) with
//! the tick it was written at (bits 23..0, in ticks of 2^20 ns). The three words change in separate
//! compare-and-swaps: a sample that interleaves with another reads a smoothed RTT or a baseline one
//! sample older, which only moves the moment a drop is seen by one sample. Every value written is an
//! integer number of nanoseconds below 2^40, so no interleaving can overflow or wrap; the limit word
//! keeps its own bounds as before.
//!
//! # Latency as a load signal
//! Loss alone (503s, timeouts) lets each client of a shared server grow its limit until the server
//! refuses, which is its cliff, not its knee: past the knee a server's latency climbs while it still
//! answers, every call holds its slot longer, and the fleet can settle in an overload that no single
//! failure explains. With `rtt_tolerance = t`, each success moves the node's smoothed RTT
//! 1/[`RTT_SMOOTHING`](super::RTT_SMOOTHING) (1/16) of the way to its own RTT; the baseline is the lowest smoothed RTT, which
//! drifts up towards the current one over [`BASELINE_DRIFT_NS`] (about 6 s half-life), so a node that
//! stays slower (a new deploy, a farther zone) becomes the new normal within seconds instead of being
//! throttled for good. A success whose smoothed RTT exceeds `t` times the baseline (compared in
//! fixed point, `t` to 1/256) decreases the limit as a drop does. `t = 2` reads "the node queues as long as it serves" as full: Vegas's and
//! Gradient's no-load comparison, on an average rather than single samples, so a noisy latency
//! distribution does not read as load.

use super::{check_limits, floor, publish, Limit, LimitState, Sample};
use crate::error::ConfigError;

const RAMP_OVER: u64 = 1 << 63;

#[cfg(feature = "ciad-latency")]
mod latency;
#[cfg(feature = "ciad-latency")]
pub use latency::BASELINE_DRIFT_NS;

/// CIAD limit parameters. Defaults are dialogue's: initial 20, min 1, max 1,000,000, ratio 0.9, no fast
/// start, no RTT tolerance (loss only).
///
/// ```
/// use weir::limit::{CiadLimit, Limit, LimitState, Sample};
/// let ciad = CiadLimit::default();
/// let state = LimitState::new();
/// ciad.reset(&state);
/// let drop = Sample { rtt_ns: 1_000, inflight: 20, dropped: true, now_ns: 1_000, load: None, failed: false };
/// assert_eq!(ciad.update(&state, &drop, 0), 18); // floor(20 * 0.9)
/// // 19 in flight >= floor(18 * 0.9) = 16: 18 + 1/18 = 18.055...
/// let ok = Sample { dropped: false, inflight: 19, ..drop };
/// assert_eq!(ciad.update(&state, &ok, 0), 18);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CiadLimit {
    /// The limit of a fresh node: `min_limit <= initial_limit <= max_limit`, or
    /// [`validate`](Limit::validate) refuses it with [`ConfigError::LimitRange`] (not clamped).
    pub initial_limit: u32,
    /// The limit never goes below this; at least 1 (the increase is `1/L`).
    pub min_limit: u32,
    /// The limit never goes above this; at most [`MAX_LIMIT`](super::MAX_LIMIT).
    pub max_limit: u32,
    /// The decrease factor on a drop, and the fraction of the limit in flight that a success must have
    /// seen to raise the limit; in [0.5, 1.0).
    pub backoff_ratio: f64,
    /// Opt-in exponential ramp: until the node's first drop, a success that raises the limit adds 1
    /// instead of `1/L`, so the limit doubles per round trip like TCP slow start.
    ///
    /// Fixes the slow climb from the initial limit (and after an outage, once a node is re-added) that
    /// dialogue#3052 describes: `+1/L` per success is about `+1` per round trip, so reaching 200 from 20
    /// takes some 180 round trips. Off by default (dialogue's behaviour).
    pub fast_start: bool,
    /// Opt-in latency signal (not dialogue's): `0.0` off (the default), or a factor, finite and at
    /// least 1, by which a node's smoothed RTT may exceed its baseline before a success counts as a
    /// drop (see the module docs; 2 reads "queueing as long as serving" as full). Anything else is
    /// refused with [`ConfigError::RttTolerance`].
    ///
    /// ```
    /// use weir::limit::{CiadLimit, Limit, LimitState, Sample};
    /// let ciad = CiadLimit { rtt_tolerance: 2.0, ..CiadLimit::default() };
    /// let state = LimitState::new();
    /// ciad.reset(&state);
    /// let ok = |rtt_ms: u64| Sample { rtt_ns: rtt_ms * 1_000_000, inflight: 1, dropped: false, now_ns: 0, load: None, failed: false };
    /// assert_eq!(ciad.update(&state, &ok(20), 0), 20); // the baseline: 20 ms
    /// // The smoothed RTT climbs 25, 29.7, 34.1, 38.2, 42.1 ms...: past 40 ms (2 x 20) each success is
    /// // a drop (the baseline cannot drift here: every sample is dated 0).
    /// let limits: Vec<u32> = (0..12).map(|_| ciad.update(&state, &ok(100), 0)).collect();
    /// assert_eq!(limits, [20, 20, 20, 20, 18, 16, 14, 12, 10, 9, 8, 7]);
    /// ```
    ///
    /// Needs the `ciad-latency` feature (in `algorithms`, so in every default, C and Python build).
    #[cfg(feature = "ciad-latency")]
    pub rtt_tolerance: f64,
}

impl Default for CiadLimit {
    fn default() -> Self {
        CiadLimit {
            initial_limit: 20,
            min_limit: 1,
            max_limit: 1_000_000,
            backoff_ratio: 0.9,
            fast_start: false,
            #[cfg(feature = "ciad-latency")]
            rtt_tolerance: 0.0,
        }
    }
}

impl CiadLimit {
    /// The next (limit, ramp over) after `sample`, or `None` for no change.
    #[inline]
    fn next(&self, l: f64, ramp_over: bool, sample: &Sample) -> Option<(f64, bool)> {
        let (min, max) = (f64::from(self.min_limit), f64::from(self.max_limit));
        let (next, over) = if sample.dropped {
            // dialogue: Math.max(MIN_LIMIT, Math.floor(limit * BACKOFF_RATIO)).
            (floor(l * self.backoff_ratio).max(min), true)
        } else if f64::from(sample.inflight) >= floor(l * self.backoff_ratio) {
            let inc = if self.fast_start && !ramp_over {
                1.0
            } else {
                // max(1): a guard for a never-reset (zero) state; dialogue's limit is always >= 1.
                1.0 / l.max(1.0)
            };
            (l + inc, ramp_over)
        } else {
            return None;
        };
        // dialogue clamps only at the side it moves toward; both sides are a no-op for valid states.
        Some((super::clamp_f(next, min, max.max(min)), over))
    }
}

impl Limit for CiadLimit {
    fn initial_limit(&self) -> u32 {
        self.initial_limit
    }

    fn validate(&self) -> Result<(), ConfigError> {
        check_limits(self.initial_limit, self.min_limit, self.max_limit)?;
        if self.min_limit == 0 {
            return Err(ConfigError::LimitRange);
        }
        // Written so that NaN fails too.
        if !(self.backoff_ratio >= 0.5 && self.backoff_ratio < 1.0) {
            return Err(ConfigError::BackoffRatio);
        }
        #[cfg(feature = "ciad-latency")]
        {
            let t = self.rtt_tolerance;
            if !(t == 0.0 || (t >= 1.0 && t.is_finite())) {
                return Err(ConfigError::RttTolerance);
            }
        }
        Ok(())
    }

    fn reset(&self, state: &LimitState) {
        state.store(0, f64::from(self.initial_limit).to_bits());
        #[cfg(feature = "ciad-latency")]
        latency::reset(state);
    }

    #[inline]
    fn update(&self, state: &LimitState, sample: &Sample, _random: u64) -> u32 {
        #[cfg(feature = "ciad-latency")]
        let sample = &Sample {
            dropped: sample.dropped || self.too_slow(state, sample),
            ..*sample
        };
        let mut after = 0.0;
        let r = state.update(0, |w| {
            let (l, over) = (f64::from_bits(w & !RAMP_OVER), w & RAMP_OVER != 0);
            after = l;
            let (next, over) = self.next(l, over, sample)?;
            after = next;
            Some(next.to_bits() | if over { RAMP_OVER } else { 0 })
        });
        match r {
            Ok(_) => publish(after),
            Err(w) => publish(f64::from_bits(w & !RAMP_OVER)),
        }
    }

    fn limit(&self, state: &LimitState) -> u32 {
        publish(f64::from_bits(state.load(0) & !RAMP_OVER))
    }
}

impl CiadLimit {
    /// The exact `f64` limit (tests).
    #[cfg(test)]
    fn exact(state: &LimitState) -> f64 {
        f64::from_bits(state.load(0) & !RAMP_OVER)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::MAX_LIMIT;
    use crate::limit::{tests::check_start_rule, InnerAlgorithm};

    fn sample(inflight: u32, dropped: bool) -> Sample {
        Sample {
            rtt_ns: 1_000,
            inflight,
            dropped,
            now_ns: 1_000,
            load: None,
            failed: false,
        }
    }

    // dialogue's CautiousIncreaseAggressiveDecreaseConcurrencyLimiterTest: one drop from 20 gives 18.0;
    // from 20, the success of a request admitted as the 19th gives 20.05.
    #[test]
    fn dialogue_vectors() {
        let c = CiadLimit::default();
        let st = LimitState::new();
        c.reset(&st);
        assert_eq!(c.update(&st, &sample(1, true), 0), 18);
        assert_eq!(CiadLimit::exact(&st), 18.0);

        c.reset(&st);
        // 19 >= floor(20 * 0.9) = 18: 20 + 1/20.
        assert_eq!(c.update(&st, &sample(19, false), 0), 20);
        assert_eq!(CiadLimit::exact(&st), 20.05);
    }

    #[test]
    fn multi_step_sequence() {
        let c = CiadLimit {
            initial_limit: 3,
            ..CiadLimit::default()
        };
        let st = LimitState::new();
        c.reset(&st);
        // L = 3: threshold floor(3 * 0.9) = floor(2.7) = 2.
        // (1) inflight 1 < 2: no change, L = 3.
        assert_eq!(c.update(&st, &sample(1, false), 0), 3);
        assert_eq!(CiadLimit::exact(&st), 3.0);
        // (2) inflight 2 >= 2: L = 3 + 1/3 = 3.333...
        assert_eq!(c.update(&st, &sample(2, false), 0), 3);
        let l2 = 3.0 + 1.0 / 3.0;
        assert_eq!(CiadLimit::exact(&st), l2);
        // (3) threshold floor(3.333... * 0.9) = floor(3.0) = 3;
        //     inflight 3 >= 3: L = l2 + 1/l2 = 3.333 + 0.3 = 3.6333...
        assert_eq!(c.update(&st, &sample(3, false), 0), 3);
        let l3 = l2 + 1.0 / l2;
        assert_eq!(CiadLimit::exact(&st), l3);
        // (4) inflight 4 >= floor(3.27) = 3: L = l3 + 1/l3 = 3.6333 + 0.27523 = 3.9085...
        let l4 = l3 + 1.0 / l3;
        assert_eq!(c.update(&st, &sample(4, false), 0), 3);
        assert_eq!(CiadLimit::exact(&st), l4);
        // (5) inflight 4 >= floor(3.5177) = 3: L = l4 + 1/l4 = 3.9085 + 0.25585 = 4.1644: reported 4.
        let l5 = l4 + 1.0 / l4;
        assert_eq!(c.update(&st, &sample(4, false), 0), 4);
        assert_eq!(CiadLimit::exact(&st), l5);
        // (6) drop: floor(4.1644 * 0.9) = floor(3.748) = 3.
        assert_eq!(c.update(&st, &sample(4, true), 0), 3);
        // (7), (8) drops: floor(2.7) = 2, floor(1.8) = 1; (9) floor(0.9) = 0, floored at min 1.
        assert_eq!(c.update(&st, &sample(1, true), 0), 2);
        assert_eq!(c.update(&st, &sample(1, true), 0), 1);
        assert_eq!(c.update(&st, &sample(1, true), 0), 1);
        // (10) at L = 1 the threshold is floor(0.9) = 0, so any success grows: 1 + 1/1 = 2.
        assert_eq!(c.update(&st, &sample(1, false), 0), 2);
    }

    #[test]
    fn fast_start_ramps_until_the_first_drop() {
        let c = CiadLimit {
            initial_limit: 4,
            max_limit: 9,
            fast_start: true,
            ..CiadLimit::default()
        };
        let st = LimitState::new();
        c.reset(&st);
        // Ramp: +1 per success at the threshold (floor(4 * 0.9) = 3, then 4, 5, ...), capped at max 9.
        let got = [3, 4, 5, 6, 7, 8, 9].map(|i| c.update(&st, &sample(i, false), 0));
        assert_eq!(got, [5, 6, 7, 8, 9, 9, 9]);
        // Drop: floor(9 * 0.9) = 8; the ramp is over: 8 + 1/8 = 8.125.
        assert_eq!(c.update(&st, &sample(9, true), 0), 8);
        assert_eq!(c.update(&st, &sample(8, false), 0), 8);
        assert_eq!(CiadLimit::exact(&st), 8.125);
        // A reset restarts the ramp.
        c.reset(&st);
        assert_eq!(c.update(&st, &sample(4, false), 0), 5);
    }

    #[test]
    fn refuses_an_initial_limit_outside_min_max() {
        // CIAD refused these starts already; the rule is now every algorithm's.
        let d = InnerAlgorithm::Ciad(CiadLimit::default());
        check_start_rule(d, &[(1, 1_000_000), (5, 10), (5, 5), (1, MAX_LIMIT)]);
    }

    #[test]
    fn rejects_bad_parameters() {
        let base = CiadLimit::default();
        assert_eq!(base.validate(), Ok(()));
        for bad in [
            CiadLimit {
                min_limit: 0,
                ..base
            },
            CiadLimit {
                initial_limit: 0,
                ..base
            },
            CiadLimit {
                initial_limit: 2_000_000,
                ..base
            },
            CiadLimit {
                min_limit: 30,
                ..base
            },
            CiadLimit {
                max_limit: 1 << 24,
                ..base
            },
        ] {
            assert_eq!(bad.validate(), Err(ConfigError::LimitRange), "{bad:?}");
        }
        for r in [f64::NAN, 1.0, 0.49, f64::INFINITY] {
            let bad = CiadLimit {
                backoff_ratio: r,
                ..base
            };
            assert_eq!(bad.validate(), Err(ConfigError::BackoffRatio));
        }
    }
}
