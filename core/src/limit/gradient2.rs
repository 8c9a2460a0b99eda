//! Netflix concurrency-limits' recommended algorithm (`Gradient2Limit.java`), with its rules and defaults.
//!
//! Per sample, with `E` the `f64` estimate, `q = queue_size(trunc E)` and `long` an exponential average
//! of the RTT (`ExpAvgMeasurement(long_window, 10)`: the plain mean of the first 10 samples):
//! ```text
//! long = long_rtt.add(rtt)                          # the value after adding this sample
//! if long / rtt > 2: long_rtt.value *= 0.95         # faster return to baseline after overload;
//!                                                   # `long` below keeps the pre-decay value
//! if inflight < E / 2: return trunc(E)              # app-limited (against the f64 estimate)
//! gradient = clamp(rtt_tolerance * long / rtt, 0.5, 1.0)
//! new = E * gradient + q
//! E = clamp(E * (1 - smoothing) + new * smoothing, min_limit, max_limit); return trunc(E)
//! ```
//! With a steady RTT the gradient is 1 and `E` grows by `smoothing * q` (0.8) per sample; under full
//! back-off `E' = 0.9 E + 0.8`, whose fixed point 8 sits below the default `min_limit` of 20.
//!
//! Netflix ignores `dropped` entirely (NCL#176); [`Gradient2Limit::drop_backoff`] is the opt-in fix.
//! Deviation: a sample with `rtt_ns == 0` is ignored (Java would divide by zero and store NaN).
//!
//! State: word 0 = `f64` estimate, word 1 = the long-RTT average (warm-up count and exact sum, then the
//! `f64` average). The average's add and its decay are one compare-and-swap, so no sample's RTT is lost
//! and each decay applies once; the estimate is a second compare-and-swap. Interleaved samples may each
//! step the estimate with the long RTT their own add produced rather than the latest one, but any long RTT
//! is a positive finite average of real RTTs, the gradient is clamped to `[0.5, 1]`, and every step ends
//! with the clamp to `[min_limit, max_limit]`, so the estimate stays finite and in bounds.

use super::measure::ExpAvg;
use super::{
    check_limits, check_smoothing, check_tolerance, clamp_f, load_estimate, publish, step_estimate,
    Limit, LimitState, QueueSize, Sample, MAX_LIMIT,
};
use crate::error::ConfigError;

const LONG_RTT: usize = 1;
/// Java: `new ExpAvgMeasurement(longWindow, 10)`.
const WARMUP: u32 = 10;
/// Java: `longRtt.update(current -> current * 0.95)` when `long / short > 2`.
const DECAY: f64 = 0.95;

/// Gradient2 limit parameters. Defaults are Netflix's: initial 20, min 20, max 200, smoothing 0.2,
/// queue 4, long window 600, RTT tolerance 1.5, drops ignored.
///
/// ```
/// use weir::limit::{Gradient2Limit, Limit, LimitState, Sample};
/// let g2 = Gradient2Limit { drop_backoff: Some(0.9), ..Gradient2Limit::default() };
/// g2.validate().unwrap();
/// let state = LimitState::new();
/// g2.reset(&state);
/// let drop = Sample { rtt_ns: 1_000, inflight: 20, dropped: true, now_ns: 0, load: None, failed: false };
/// assert_eq!(g2.update(&state, &drop, 0), 20); // 20 * 0.9 = 18, floored at min_limit 20
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gradient2Limit {
    /// The limit of a fresh node: `min_limit <= initial_limit <= max_limit`, or
    /// [`validate`](Limit::validate) refuses it with [`ConfigError::LimitRange`] (not clamped).
    pub initial_limit: u32,
    /// The estimate never goes below this.
    pub min_limit: u32,
    /// The estimate never goes above this (Java's `maxConcurrency`); at most [`MAX_LIMIT`].
    pub max_limit: u32,
    /// Weight of the new value against the old estimate, in [0, 1], in both directions.
    pub smoothing: f64,
    /// Allowed queue, added to the gradient-scaled estimate on every sample (Netflix: constant 4, NCL#189).
    pub queue_size: QueueSize,
    /// Window of the long-RTT exponential average (factor `2 / (long_window + 1)`); at least 1.
    pub long_window: u32,
    /// How much longer than the long-term average an RTT may be before it counts as queueing; at least 1.
    pub rtt_tolerance: f64,
    /// Opt-in multiplicative back-off on dropped samples, in [0.5, 1.0); `None` (Netflix) ignores drops.
    ///
    /// Netflix's Gradient2 never looks at `dropped` (NCL#176): when a backend answers overload quickly
    /// (429s, 503s, fast timeouts) the RTTs stay short, the gradient stays 1 and the limit keeps growing
    /// into the overload (NCL#137). With `Some(ratio)` a dropped sample sets
    /// `E = clamp(E * ratio, min_limit, max_limit)` at once (no smoothing, no app-limited check, as AIMD
    /// does) and leaves the long RTT alone, since a rejection's RTT says nothing about the service time.
    pub drop_backoff: Option<f64>,
}

impl Default for Gradient2Limit {
    fn default() -> Self {
        Gradient2Limit {
            initial_limit: 20,
            min_limit: 20,
            max_limit: 200,
            smoothing: 0.2,
            queue_size: QueueSize::Constant(4),
            long_window: 600,
            rtt_tolerance: 1.5,
            drop_backoff: None,
        }
    }
}

impl Gradient2Limit {
    fn bounds(&self) -> (f64, f64) {
        let max = self.max_limit.min(MAX_LIMIT);
        (f64::from(self.min_limit.min(max)), f64::from(max))
    }

    fn long_rtt(&self) -> ExpAvg {
        ExpAvg {
            window: self.long_window,
            warmup: WARMUP,
        }
    }
}

impl Limit for Gradient2Limit {
    fn initial_limit(&self) -> u32 {
        self.initial_limit
    }

    fn validate(&self) -> Result<(), ConfigError> {
        check_limits(self.initial_limit, self.min_limit, self.max_limit)?;
        check_smoothing(self.smoothing)?;
        check_tolerance(self.rtt_tolerance)?;
        self.queue_size.validate()?;
        if self.long_window == 0 {
            return Err(ConfigError::LongWindow);
        }
        match self.drop_backoff {
            // NaN is not contained either.
            Some(r) if !(0.5..1.0).contains(&r) => Err(ConfigError::BackoffRatio),
            _ => Ok(()),
        }
    }

    fn reset(&self, state: &LimitState) {
        state.store(0, f64::from(self.initial_limit.min(MAX_LIMIT)).to_bits());
        state.store(LONG_RTT, self.long_rtt().empty());
    }

    fn update(&self, state: &LimitState, sample: &Sample, _random: u64) -> u32 {
        let rtt = sample.rtt_ns;
        if rtt == 0 {
            return self.limit(state);
        }
        let (min, max) = self.bounds();
        if let (true, Some(ratio)) = (sample.dropped, self.drop_backoff) {
            return publish(step_estimate(state, |e| Some(clamp_f(e * ratio, min, max))));
        }
        let avg = self.long_rtt();
        let short = rtt as f64;
        let mut long = 0.0;
        // The closure always writes, so the update cannot fail.
        let _ = state.update(LONG_RTT, |w| {
            let (added, v) = avg.add(w, rtt);
            long = v;
            Some(if v / short > 2.0 {
                avg.scale(added, DECAY)
            } else {
                added
            })
        });
        publish(step_estimate(state, |e| {
            let q = f64::from(self.queue_size.at(e as u32));
            if f64::from(sample.inflight) < e / 2.0 {
                return None;
            }
            // Java: Math.max(0.5, Math.min(1.0, tolerance * longRtt / shortRtt)).
            let gradient = clamp_f(self.rtt_tolerance * long / short, 0.5, 1.0);
            let new = e * gradient + q;
            let new = e * (1.0 - self.smoothing) + new * self.smoothing;
            // Java: Math.max(minLimit, Math.min(maxLimit, newLimit)).
            Some(clamp_f(new, min, max))
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

    fn s(rtt_ns: u64, inflight: u32) -> Sample {
        Sample {
            rtt_ns,
            inflight,
            dropped: false,
            now_ns: 0,
            load: None,
            failed: false,
        }
    }

    fn long(st: &LimitState) -> f64 {
        Gradient2Limit::default()
            .long_rtt()
            .value(st.load(LONG_RTT))
    }

    // No published Gradient2 vectors exist; this sequence is computed by hand from Java's rules.
    #[test]
    fn multi_step_sequence_in_warmup() {
        let g = Gradient2Limit {
            min_limit: 1,
            ..Gradient2Limit::default()
        };
        let st = LimitState::new();
        g.reset(&st);
        let e = || load_estimate(&st);
        // (1) long = mean(10) = 10 ms; gradient clamp(1.5 * 10/10) = 1; 10 < 20/2 is false;
        //     new = 20 + 4 = 24; E = 20 * 0.8 + 24 * 0.2 = 20.8.
        assert_eq!(g.update(&st, &s(10 * MS, 10), 0), 20);
        assert_eq!(e(), 20.0 * 0.8 + 24.0 * 0.2);
        // (2) long = mean(10, 30) = 20 ms; gradient clamp(1.5 * 20/30 = 1.0) = 1;
        //     E = 20.8 * 0.8 + (20.8 + 4) * 0.2 = 21.6.
        assert_eq!(g.update(&st, &s(30 * MS, 15), 0), 21);
        let e1 = 20.0 * 0.8 + 24.0 * 0.2;
        let e2 = e1 * 0.8 + (e1 + 4.0) * 0.2;
        assert_eq!(e(), e2);
        // (3) long = mean(10, 30, 60) = 33.33 ms; gradient 1.5 * 33.33/60 = 0.8333;
        //     new = 21.6 * 0.8333 + 4 = 22; E = 21.6 * 0.8 + 22 * 0.2 = 21.68.
        assert_eq!(g.update(&st, &s(60 * MS, 15), 0), 21);
        let l3 = 100.0 * MS as f64 / 3.0;
        let e3 = e2 * 0.8 + (e2 * (1.5 * l3 / (60 * MS) as f64) + 4.0) * 0.2;
        assert_eq!(e(), e3);
        assert!((e3 - 21.68).abs() < 1e-9);
        // (4) long = mean(10, 30, 60, 200) = 75 ms; gradient 1.5 * 75/200 = 0.5625;
        //     new = 21.68 * 0.5625 + 4 = 16.195; E = 21.68 * 0.8 + 16.195 * 0.2 = 20.583.
        assert_eq!(g.update(&st, &s(200 * MS, 15), 0), 20);
        let e4 = e3 * 0.8 + (e3 * 0.5625 + 4.0) * 0.2;
        assert_eq!(e(), e4);
        assert!((e4 - 20.583).abs() < 1e-9);
        // (5) long = mean(.., 5) = 305/5 = 61 ms; 61/5 > 2 decays, but during warm-up the next add
        //     recomputes sum/count, so the decay is lost (as in Java); gradient clamp(18.3) = 1;
        //     E = 20.583 + 0.2 * 4 = 21.383.
        assert_eq!(g.update(&st, &s(5 * MS, 15), 0), 21);
        let e5 = e4 * 0.8 + (e4 + 4.0) * 0.2;
        assert_eq!(e(), e5);
        // (6) app-limited: 3 < 21.383 / 2; E unchanged, but long = 310/6 ms.
        assert_eq!(g.update(&st, &s(5 * MS, 3), 0), 21);
        assert_eq!(e(), e5);
        assert_eq!(long(&st), 310.0 * MS as f64 / 6.0);
    }

    #[test]
    fn long_rtt_decays_after_warmup() {
        let g = Gradient2Limit::default();
        let st = LimitState::new();
        g.reset(&st);
        // Ten app-limited samples of 100 ms warm the average up to exactly 100 ms; E stays 20.
        for _ in 0..10 {
            assert_eq!(g.update(&st, &s(100 * MS, 1), 0), 20);
        }
        assert_eq!(long(&st), 100.0 * MS as f64);
        // 10 ms: long = 100 * (1 - 2/601) + 10 * 2/601 = 99.70 ms; 99.70/10 > 2, so the stored value
        // decays to 99.70 * 0.95 = 94.72 ms; the gradient uses the pre-decay 99.70: clamp(14.96) = 1.
        let f = 2.0 / 601.0;
        let l1 = (100 * MS) as f64 * (1.0 - f) + (10 * MS) as f64 * f;
        assert_eq!(g.update(&st, &s(10 * MS, 20), 0), 20); // 20 * 0.8 + 24 * 0.2 = 20.8
        assert_eq!(long(&st), l1 * DECAY);
        assert!((long(&st) / MS as f64 - 94.715).abs() < 1e-3);
        // Again: 94.72 * (1 - f) + 10 * f = 94.43 ms, decayed to 89.71 ms.
        let l2 = l1 * DECAY * (1.0 - f) + (10 * MS) as f64 * f;
        assert_eq!(g.update(&st, &s(10 * MS, 20), 0), 21); // 20.8 + 0.8 = 21.6
        assert_eq!(long(&st), l2 * DECAY);
        // A 40 ms RTT: long = 89.71 * (1 - f) + 40 * f = 89.55 ms; 89.55/40 > 2 decays again; the
        // gradient clamp(1.5 * 89.55/40) = 1: 21.6 -> 22.4.
        assert_eq!(g.update(&st, &s(40 * MS, 20), 0), 22);
        // 200 ms: long = 85.07 * (1 - f) + 200 * f = 85.45 ms; no decay; gradient 1.5 * 85.45/200 = 0.641;
        // new = 22.4 * 0.641 + 4 = 18.35; E = 22.4 * 0.8 + 18.35 * 0.2 = 21.59.
        let l3 = l2 * DECAY * (1.0 - f) + (40 * MS) as f64 * f;
        let l4 = l3 * DECAY * (1.0 - f) + (200 * MS) as f64 * f;
        assert_eq!(g.update(&st, &s(200 * MS, 20), 0), 21);
        assert_eq!(long(&st), l4);
        let e = 22.4f64;
        let e_next = e * 0.8 + (e * (1.5 * l4 / (200 * MS) as f64) + 4.0) * 0.2;
        assert!(
            (load_estimate(&st) - e_next).abs() < 1e-9,
            "{}",
            load_estimate(&st)
        );
    }

    #[test]
    fn drops_are_ignored_unless_drop_backoff_is_set() {
        let g = Gradient2Limit {
            initial_limit: 100,
            ..Gradient2Limit::default()
        };
        let (a, b) = (LimitState::new(), LimitState::new());
        g.reset(&a);
        g.reset(&b);
        let drop = Sample {
            dropped: true,
            ..s(10 * MS, 100)
        };
        // Netflix: a drop is just another sample.
        assert_eq!(g.update(&a, &drop, 0), g.update(&b, &s(10 * MS, 100), 0));
        assert_eq!(a.load(0), b.load(0));

        let g = Gradient2Limit {
            drop_backoff: Some(0.5),
            ..g
        };
        g.reset(&a);
        // 100 -> 50 -> 25 -> 20 (min), the long RTT untouched.
        let got = [(); 3].map(|_| g.update(&a, &drop, 0));
        assert_eq!(got, [50, 25, 20]);
        assert_eq!(a.load(LONG_RTT), g.long_rtt().empty());
        assert_eq!(g.update(&a, &s(0, 100), 0), 20); // zero RTT ignored
    }

    #[test]
    fn refuses_an_initial_limit_outside_min_max() {
        let d = InnerAlgorithm::Gradient2(Gradient2Limit::default());
        check_start_rule(d, &[(20, 200), (2, 2), (0, 0), (0, MAX_LIMIT)]);
    }

    #[test]
    fn rejects_bad_parameters() {
        let d = Gradient2Limit::default();
        assert_eq!(d.validate(), Ok(()));
        let check = |g: Gradient2Limit| g.validate();
        assert_eq!(
            check(Gradient2Limit { max_limit: 10, ..d }),
            Err(ConfigError::LimitRange)
        );
        assert_eq!(
            check(Gradient2Limit {
                smoothing: f64::NAN,
                ..d
            }),
            Err(ConfigError::Smoothing)
        );
        assert_eq!(
            check(Gradient2Limit {
                rtt_tolerance: f64::NAN,
                ..d
            }),
            Err(ConfigError::RttTolerance)
        );
        assert_eq!(
            check(Gradient2Limit {
                long_window: 0,
                ..d
            }),
            Err(ConfigError::LongWindow)
        );
        for r in [f64::NAN, 1.0, 0.3] {
            let bad = Gradient2Limit {
                drop_backoff: Some(r),
                ..d
            };
            assert_eq!(bad.validate(), Err(ConfigError::BackoffRatio));
        }
    }
}
