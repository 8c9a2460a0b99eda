//! Netflix concurrency-limits' first gradient algorithm (`GradientLimit.java`, "v1"), with its rules and
//! defaults. Netflix recommends [`Gradient2Limit`](super::Gradient2Limit) instead (NCL#135 proposes
//! deprecating this one); it is here so that users moving from concurrency-limits get the same limits.
//!
//! Per sample, with `E` the `f64` estimate and `q = queue_size(trunc E)`:
//! ```text
//! if probing is on and countdown-- == 0:               # countdown starts at interval + U[0, interval)
//!     countdown = interval + U[0, interval); E = max(min_limit, q); forget the minimum RTT; return
//! rtt_noload = min(rtt_noload, rtt)
//! gradient = clamp(rtt_tolerance * rtt_noload / rtt, 0.5, 1.0)
//! if dropped:               new = E * backoff_ratio
//! elif inflight < E / 2:    return trunc(E)              # app-limited
//! else:                     new = E * gradient + q
//! if new < E:               new = max(min_limit, E * (1 - smoothing) + smoothing * new)   # down only
//! E = max(q, min(max_limit, new)); return trunc(E)
//! ```
//!
//! Deviations: a sample with `rtt_ns == 0` is ignored (Java would compute `0/0` and store NaN); after
//! every update the estimate is also clamped to `[min_limit, max_limit]`, which differs from Java only when
//! `max_limit` is below the queue size (Java's probe and floor `q` then exceed `max_limit`, NCL#135)
//! (an initial limit outside the bounds, which Java accepts, is refused by [`Limit::validate`]); the
//! probe countdown is drawn from the caller's `random` bits
//! (on a node's first sample, as [`Limit::reset`] takes no randomness).
//!
//! State: word 0 = `f64` estimate, word 1 = minimum RTT (ns, 0 = empty), word 2 = probe countdown (low 32
//! bits) | drawn (bit 32). Each word changes by its own compare-and-swap; the countdown's makes exactly
//! one sample the probe. Interleaved samples may pair the estimate with a minimum RTT another sample just
//! changed or a probe just cleared, but the gradient is clamped to `[0.5, 1]` from any such value (an
//! empty minimum is replaced by the sample's own RTT first), and each estimate step ends with the clamp,
//! so the estimate stays finite and in bounds.

use super::{
    check_limits, check_smoothing, check_tolerance, clamp_f, load_estimate, publish, step_estimate,
    Limit, LimitState, QueueSize, Sample, MAX_LIMIT,
};
use crate::error::ConfigError;

const MIN_RTT: usize = 1;
const COUNTDOWN: usize = 2;
const DRAWN: u64 = 1 << 32;
/// The largest probe interval: `2 * interval` must fit the 32-bit countdown.
const MAX_PROBE_INTERVAL: u32 = 1 << 30;

/// Gradient (v1) limit parameters. Defaults are Netflix's: initial 50, min 1, max 1000, smoothing 0.2,
/// queue `max(4, SQRT(L))`, RTT tolerance 2.0, probe interval 1000, backoff 0.9.
///
/// ```
/// use weir::limit::{GradientLimit, Limit, LimitState, Sample};
/// let g = GradientLimit::default();
/// let state = LimitState::new();
/// g.reset(&state);
/// // No queueing (gradient 1): 50 + max(4, SQRT(50)) = 57.
/// let s = Sample { rtt_ns: 10_000_000, inflight: 25, dropped: false, now_ns: 0, load: None, failed: false };
/// assert_eq!(g.update(&state, &s, 0), 57);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GradientLimit {
    /// The limit of a fresh node: `min_limit <= initial_limit <= max_limit`, or
    /// [`validate`](Limit::validate) refuses it with [`ConfigError::LimitRange`] (not clamped).
    pub initial_limit: u32,
    /// The estimate never goes below this after an update (Java: only the smoothed decrease and the
    /// probe; see the module docs).
    pub min_limit: u32,
    /// The estimate never goes above this (Java's `maxConcurrency`); at most [`MAX_LIMIT`].
    pub max_limit: u32,
    /// Weight of a decrease against the old estimate, in [0, 1]; increases are not smoothed.
    pub smoothing: f64,
    /// Allowed queue, added on every unqueued sample and the floor of the estimate.
    pub queue_size: QueueSize,
    /// How much longer than the minimum an RTT may be before it counts as queueing; at least 1.
    pub rtt_tolerance: f64,
    /// Every `interval + U[0, interval)` samples the estimate drops to `max(min_limit, queue)` and the
    /// minimum RTT is forgotten (Java: `probeInterval`; `None` is Java's -1, never probe). 1..=2^30.
    pub probe_interval: Option<u32>,
    /// Multiplier on a drop, in [0.5, 1.0] (1.0: drops do not back off).
    pub backoff_ratio: f64,
}

impl Default for GradientLimit {
    fn default() -> Self {
        GradientLimit {
            initial_limit: 50,
            min_limit: 1,
            max_limit: 1000,
            smoothing: 0.2,
            queue_size: QueueSize::Sqrt { min: 4 },
            rtt_tolerance: 2.0,
            probe_interval: Some(1000),
            backoff_ratio: 0.9,
        }
    }
}

/// Java's `probeInterval + ThreadLocalRandom.nextInt(probeInterval)` from 32 random bits.
#[inline]
fn countdown(bits: u32, interval: u32) -> u32 {
    let interval = interval.clamp(1, MAX_PROBE_INTERVAL);
    interval + ((u64::from(bits) * u64::from(interval)) >> 32) as u32
}

impl GradientLimit {
    fn bounds(&self) -> (f64, f64) {
        let max = self.max_limit.min(MAX_LIMIT);
        (f64::from(self.min_limit.min(max)), f64::from(max))
    }

    /// Ticks the probe countdown; `true` when this sample is the probe.
    fn tick(&self, state: &LimitState, random: u64) -> bool {
        let Some(interval) = self.probe_interval else {
            return false;
        };
        let mut probe = false;
        // The closure always writes, so the update cannot fail.
        let _ = state.update(COUNTDOWN, |w| {
            let c = if w & DRAWN != 0 {
                w as u32
            } else {
                countdown(random as u32, interval)
            };
            // Java: resetRttCounter-- <= 0 (the countdown never goes below 0 here).
            probe = c == 0;
            let next = if probe {
                countdown((random >> 32) as u32, interval)
            } else {
                c - 1
            };
            Some(DRAWN | u64::from(next))
        });
        probe
    }
}

impl Limit for GradientLimit {
    fn initial_limit(&self) -> u32 {
        self.initial_limit
    }

    fn validate(&self) -> Result<(), ConfigError> {
        check_limits(self.initial_limit, self.min_limit, self.max_limit)?;
        check_smoothing(self.smoothing)?;
        check_tolerance(self.rtt_tolerance)?;
        self.queue_size.validate()?;
        if let Some(i) = self.probe_interval {
            if i == 0 || i > MAX_PROBE_INTERVAL {
                return Err(ConfigError::ProbeInterval);
            }
        }
        // Java: backoffRatio >= 0.5 && backoffRatio <= 1.0; written so that NaN fails too.
        if !(self.backoff_ratio >= 0.5 && self.backoff_ratio <= 1.0) {
            return Err(ConfigError::BackoffRatio);
        }
        Ok(())
    }

    fn reset(&self, state: &LimitState) {
        state.store(0, f64::from(self.initial_limit.min(MAX_LIMIT)).to_bits());
        state.store(MIN_RTT, 0);
        state.store(COUNTDOWN, 0);
    }

    fn update(&self, state: &LimitState, sample: &Sample, random: u64) -> u32 {
        let rtt = sample.rtt_ns;
        if rtt == 0 {
            return self.limit(state);
        }
        let (min, max) = self.bounds();
        if self.tick(state, random) {
            state.store(MIN_RTT, 0);
            return publish(step_estimate(state, |e| {
                let q = f64::from(self.queue_size.at(e as u32));
                // Java: estimatedLimit = Math.max(minLimit, queueSize) (not capped at max there).
                Some(clamp_f(q.max(min), min, max))
            }));
        }
        let rtt_noload = match state.update(MIN_RTT, |n| (n == 0 || rtt < n).then_some(rtt)) {
            Ok(_) => rtt,
            Err(n) => n,
        };
        // Java: Math.max(0.5, Math.min(1.0, rttTolerance * rttNoLoad / rtt)).
        let gradient = clamp_f(
            self.rtt_tolerance * rtt_noload as f64 / rtt as f64,
            0.5,
            1.0,
        );
        publish(step_estimate(state, |e| {
            let q = f64::from(self.queue_size.at(e as u32));
            let new = if sample.dropped {
                e * self.backoff_ratio
            } else if f64::from(sample.inflight) < e / 2.0 {
                return None;
            } else {
                e * gradient + q
            };
            let new = if new < e {
                (e * (1.0 - self.smoothing) + self.smoothing * new).max(min)
            } else {
                new
            };
            // Java: Math.max(queueSize, Math.min(maxLimit, newLimit)); then our bounds.
            Some(clamp_f(new.min(max).max(q), min, max))
        }))
    }

    fn limit(&self, state: &LimitState) -> u32 {
        publish(load_estimate(state))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::{tests::check_start_rule, InnerAlgorithm};

    const MS: u64 = 1_000_000;

    fn s(rtt_ns: u64, inflight: u32, dropped: bool) -> Sample {
        Sample {
            rtt_ns,
            inflight,
            dropped,
            now_ns: 0,
            load: None,
            failed: false,
        }
    }

    // No published Gradient vectors exist; this sequence is computed by hand from Java's rules.
    #[test]
    fn multi_step_sequence() {
        let g = GradientLimit {
            probe_interval: Some(3),
            ..GradientLimit::default()
        };
        let st = LimitState::new();
        g.reset(&st);
        let e = || load_estimate(&st);
        // random = 0: countdown = 3 + (0 * 3 >> 32) = 3; the 4th sample probes.
        // (1) min RTT := 10 ms; gradient clamp(2 * 10/10, 0.5, 1) = 1; q = max(4, SQRT(50) = 7) = 7;
        //     25 < 50/2 is false; new = 50 * 1 + 7 = 57 (up: not smoothed).
        assert_eq!(g.update(&st, &s(10 * MS, 25, false), 0), 57);
        assert_eq!(e(), 57.0);
        // (2) gradient clamp(2 * 10/40 = 0.5) = 0.5; q = max(4, SQRT(57) = 7) = 7; new = 28.5 + 7 = 35.5 < 57:
        //     smoothed 57 * 0.8 + 0.2 * 35.5 = 45.6 + 7.1 = 52.7.
        assert_eq!(g.update(&st, &s(40 * MS, 30, false), 0), 52);
        let e2 = 57.0 * 0.8 + 0.2 * 35.5;
        assert_eq!(e(), e2);
        // (3) drop: new = 52.7 * 0.9 = 47.43 < 52.7: smoothed 52.7 * 0.8 + 0.2 * 47.43 = 51.646.
        assert_eq!(g.update(&st, &s(30 * MS, 10, true), 0), 51);
        let e3 = e2 * 0.8 + 0.2 * (e2 * 0.9);
        assert_eq!(e(), e3);
        // (4) the probe: E = max(min 1, q = max(4, SQRT(51) = 7)) = 7, minimum RTT forgotten.
        assert_eq!(g.update(&st, &s(10 * MS, 40, false), 0), 7);
        assert_eq!(st.load(MIN_RTT), 0);
        // (5) min RTT := 20 ms; gradient 1; q = max(4, SQRT(7) = 2) = 4; new = 7 + 4 = 11.
        assert_eq!(g.update(&st, &s(20 * MS, 5, false), 0), 11);
        // (6) app-limited: 2 < 11/2.
        assert_eq!(g.update(&st, &s(20 * MS, 2, false), 0), 11);
        // (7) an RTT of 100 ms: gradient clamp(40/100) = 0.5; new = 5.5 + 4 = 9.5 < 11:
        //     smoothed 11 * 0.8 + 0.2 * 9.5 = 8.8 + 1.9 = 10.7; floor q = 4 does not bind.
        assert_eq!(g.update(&st, &s(100 * MS, 6, false), 0), 10);
        assert_eq!(e(), 11.0 * 0.8 + 0.2 * 9.5);
    }

    #[test]
    fn probe_countdown_comes_from_random_bits() {
        let g = GradientLimit {
            probe_interval: Some(4),
            ..GradientLimit::default()
        };
        let st = LimitState::new();
        g.reset(&st);
        // Low 32 bits all ones: countdown = 4 + ((2^32 - 1) * 4 >> 32) = 4 + 3 = 7: the 8th sample probes.
        let r = u64::from(u32::MAX);
        // Unqueued growth: 50 -> 57 -> 64 -> 72 -> 80 -> 88 -> 97 -> 106 (+ max(4, SQRT(L)) each time).
        let grown = [(); 7].map(|_| g.update(&st, &s(10 * MS, 1000, false), r));
        assert_eq!(grown, [57, 64, 72, 80, 88, 97, 106]);
        // The probe: max(min 1, max(4, SQRT(106) = 10)) = 10.
        assert_eq!(g.update(&st, &s(10 * MS, 1000, false), r), 10);
        // The next countdown came from the high bits (0): 4, so the 5th sample after probes again.
        assert_eq!(st.load(COUNTDOWN), DRAWN | 4);
        // Disabled probing never ticks.
        let off = GradientLimit {
            probe_interval: None,
            ..g
        };
        off.reset(&st);
        off.update(&st, &s(10 * MS, 50, false), r);
        assert_eq!(st.load(COUNTDOWN), 0);
    }

    #[test]
    fn bounds_hold_where_java_would_exceed_max() {
        // max 3 < q = 4: Java would set 4 on the probe and floor every update at 4.
        let g = GradientLimit {
            initial_limit: 3,
            max_limit: 3,
            probe_interval: Some(1),
            ..GradientLimit::default()
        };
        let st = LimitState::new();
        g.reset(&st);
        for i in 0..6 {
            assert_eq!(g.update(&st, &s(10 * MS, 3, i % 2 == 0), 0), 3);
        }
        assert_eq!(g.update(&st, &s(0, 3, false), 0), 3); // zero RTT ignored
    }

    #[test]
    fn refuses_an_initial_limit_outside_min_max() {
        let d = InnerAlgorithm::Gradient(GradientLimit::default());
        check_start_rule(d, &[(1, 1000), (10, 20), (0, 0), (0, MAX_LIMIT)]);
    }

    #[test]
    fn rejects_bad_parameters() {
        let d = GradientLimit::default();
        assert_eq!(d.validate(), Ok(()));
        let check = |g: GradientLimit| g.validate();
        assert_eq!(
            check(GradientLimit {
                min_limit: 2000,
                ..d
            }),
            Err(ConfigError::LimitRange)
        );
        assert_eq!(
            check(GradientLimit {
                smoothing: -0.1,
                ..d
            }),
            Err(ConfigError::Smoothing)
        );
        assert_eq!(
            check(GradientLimit {
                rtt_tolerance: 0.9,
                ..d
            }),
            Err(ConfigError::RttTolerance)
        );
        assert_eq!(
            check(GradientLimit {
                rtt_tolerance: f64::INFINITY,
                ..d
            }),
            Err(ConfigError::RttTolerance)
        );
        assert_eq!(
            check(GradientLimit {
                probe_interval: Some(0),
                ..d
            }),
            Err(ConfigError::ProbeInterval)
        );
        assert_eq!(
            check(GradientLimit {
                probe_interval: Some((1 << 30) + 1),
                ..d
            }),
            Err(ConfigError::ProbeInterval)
        );
        assert_eq!(
            check(GradientLimit {
                backoff_ratio: 1.0,
                ..d
            }),
            Ok(())
        );
        assert_eq!(
            check(GradientLimit {
                backoff_ratio: 1.01,
                ..d
            }),
            Err(ConfigError::BackoffRatio)
        );
        assert_eq!(
            check(GradientLimit {
                queue_size: QueueSize::Constant(MAX_LIMIT + 1),
                ..d
            }),
            Err(ConfigError::QueueSize)
        );
    }
}
