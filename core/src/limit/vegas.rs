//! TCP Vegas-style limit, with Netflix concurrency-limits' rules and defaults (`VegasLimit.java`).
//!
//! The queue is estimated as `queue = ceil(E * (1 - rtt_noload / rtt))`, with `E` the `f64` estimate and
//! `rtt_noload` the no-load RTT (the minimum seen since the last probe). Per sample:
//! ```text
//! probe_count += 1
//! if jitter * probe_multiplier * E <= probe_count:     # probe: jitter uniform in [0.5, 1)
//!     redraw jitter; probe_count = 0; rtt_noload = rtt; return trunc(E)
//! if rtt_noload == 0 or rtt < rtt_noload: rtt_noload = rtt; return trunc(E)
//! if dropped:               new = decrease(E)
//! elif inflight * 2 < E:    return trunc(E)            # app-limited
//! else (L = trunc(E)):
//!     if   queue <= threshold(L): new = E + beta(L)
//!     elif queue <  alpha(L):     new = increase(E)
//!     elif queue >  beta(L):      new = decrease(E)
//!     else:                       return trunc(E)
//! E = (1 - smoothing) * E + smoothing * clamp(new, 1, max_limit); return trunc(E)
//! ```
//!
//! Deviations: a sample with `rtt_ns == 0` is ignored (Java throws `IllegalArgumentException`); the probe
//! jitter comes from the caller's `random` bits (the first one when a node's first sample arrives, since
//! [`Limit::reset`] takes no randomness).
//!
//! State: word 0 = `f64` estimate, word 1 = `rtt_noload` (ns, 0 = unknown), word 2 = probe jitter (bits
//! 63..32, `jitter = 0.5 + bits / 2^33`) | drawn (bit 31) | probe count (bits 30..0, saturating). Each
//! word changes by its own compare-and-swap. Interleaved samples can pair an estimate with a no-load RTT
//! or probe count that another sample just moved, but every value read is one that word really held:
//! `rtt_noload` is an observed RTT no larger than the sample's (else the sample becomes the new minimum),
//! so `1 - rtt_noload / rtt` is in `[0, 1)` and finite; and the estimate step always ends with the clamp
//! to `[1, max_limit]` and a convex combination with the old estimate, so it stays finite and in bounds.

use super::measure::log10_int;
use super::{
    check_limits, check_smoothing, clamp_f, load_estimate, publish, step_estimate, Limit,
    LimitState, Sample, MAX_LIMIT,
};
use crate::error::ConfigError;

const NOLOAD: usize = 1;
const PROBE: usize = 2;
const DRAWN: u64 = 1 << 31;
const COUNT_MASK: u64 = DRAWN - 1;

/// Vegas' `alpha`, `beta` and `threshold`: integer functions of the truncated estimate.
///
/// ```
/// use weir::limit::VegasThreshold;
/// assert_eq!(VegasThreshold::Log10(3).at(100), 6); // 3 * LOG10(100)
/// assert_eq!(VegasThreshold::Log10(6).at(5), 6); // LOG10 is at least 1
/// assert_eq!(VegasThreshold::Constant(3).at(10_000), 3);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VegasThreshold {
    /// A constant (`alpha(int)` / `beta(int)` in Java's builder).
    Constant(u32),
    /// `k * LOG10(L)` with Netflix's `LOG10(x) = max(1, floor(log10 x))`.
    Log10(u32),
}

impl VegasThreshold {
    /// The value at truncated estimate `limit`.
    #[inline]
    pub fn at(self, limit: u32) -> u32 {
        match self {
            VegasThreshold::Constant(c) => c,
            VegasThreshold::Log10(k) => k.saturating_mul(log10_int(limit)),
        }
    }
}

/// Vegas' `increase` and `decrease` functions of the `f64` estimate.
///
/// ```
/// use weir::limit::VegasStep;
/// assert_eq!(VegasStep::Log10.increase(100.5), 102.5); // E + LOG10(trunc E)
/// assert_eq!(VegasStep::Log10.decrease(100.5), 98.5);
/// assert_eq!(VegasStep::Factor(0.5).decrease(75.0), 37.5); // `decrease(l -> l / 2)` in Java
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum VegasStep {
    /// `E + LOG10(trunc E)` to increase, `E - LOG10(trunc E)` to decrease (Netflix's defaults).
    Log10,
    /// `E * factor`, in either direction; finite and positive.
    Factor(f64),
}

impl VegasStep {
    /// The estimate after an increase from `e`.
    #[inline]
    pub fn increase(self, e: f64) -> f64 {
        match self {
            VegasStep::Log10 => e + f64::from(log10_int(e as u32)),
            VegasStep::Factor(f) => e * f,
        }
    }

    /// The estimate after a decrease from `e`.
    #[inline]
    pub fn decrease(self, e: f64) -> f64 {
        match self {
            VegasStep::Log10 => e - f64::from(log10_int(e as u32)),
            VegasStep::Factor(f) => e * f,
        }
    }

    fn validate(self) -> Result<(), ConfigError> {
        match self {
            VegasStep::Log10 => Ok(()),
            VegasStep::Factor(f) if f > 0.0 && f.is_finite() => Ok(()),
            VegasStep::Factor(_) => Err(ConfigError::VegasStep),
        }
    }
}

/// Vegas limit parameters. Defaults are Netflix's: initial 20, max 1000, smoothing 1.0, probe multiplier
/// 30, `alpha = 3 * LOG10`, `beta = 6 * LOG10`, `threshold = LOG10`, `increase`/`decrease` by `LOG10`.
///
/// ```
/// use weir::limit::{Limit, LimitState, Sample, VegasLimit, VegasThreshold};
/// // VegasLimitTest.increaseLimit: alpha 3, beta 6, smoothing 1, initial 10, max 20.
/// let vegas = VegasLimit {
///     initial_limit: 10,
///     max_limit: 20,
///     alpha: VegasThreshold::Constant(3),
///     beta: VegasThreshold::Constant(6),
///     ..VegasLimit::default()
/// };
/// let state = LimitState::new();
/// vegas.reset(&state);
/// let s = |rtt_ns, inflight| Sample { rtt_ns, inflight, dropped: false, now_ns: 0, load: None, failed: false };
/// assert_eq!(vegas.update(&state, &s(10_000_000, 10), 0), 10); // sets the no-load RTT
/// assert_eq!(vegas.update(&state, &s(10_000_000, 11), 0), 16); // no queue: + beta
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VegasLimit {
    /// The limit of a fresh node: `1 <= initial_limit <= max_limit` (Vegas' `min_limit` is 1), or
    /// [`validate`](Limit::validate) refuses it with [`ConfigError::LimitRange`] (not clamped). An
    /// estimate of 0 would never move: every sample would be a probe.
    pub initial_limit: u32,
    /// The estimate never goes above this (Java's `maxConcurrency`); there is no minimum other than 1.
    /// 1..=[`MAX_LIMIT`].
    pub max_limit: u32,
    /// Weight of the new value against the old estimate, in [0, 1]; 1 = no smoothing.
    pub smoothing: f64,
    /// The no-load RTT is re-probed every `jitter * probe_multiplier * E` samples; at least 1.
    pub probe_multiplier: u32,
    /// Below `alpha` queued requests (and above `threshold`), the estimate grows by `increase`.
    pub alpha: VegasThreshold,
    /// Above `beta` queued requests the estimate shrinks by `decrease`; at or below `threshold`, it grows
    /// by `beta` ("slow start").
    pub beta: VegasThreshold,
    /// At or below this queue, the estimate grows by `beta`.
    pub threshold: VegasThreshold,
    /// The increase when the queue is between `threshold` and `alpha`.
    pub increase: VegasStep,
    /// The decrease on a drop or when the queue exceeds `beta`.
    pub decrease: VegasStep,
    /// Whether dropped samples may set the no-load RTT (Netflix: yes, the default).
    ///
    /// Netflix checks for a drop only after its baseline checks, so a dropped sample whose RTT is below
    /// the no-load RTT (a fast rejection: a 429 or 503 answered in microseconds) *lowers the baseline and
    /// causes no decrease*; the lowered baseline then makes every normal RTT look like a long queue, and a
    /// probe can even set the baseline to a timeout's RTT. With `false`, dropped samples never touch the
    /// baseline or the probe count and always apply `decrease` (what congestion-limiter does).
    pub baseline_from_drops: bool,
}

impl Default for VegasLimit {
    fn default() -> Self {
        VegasLimit {
            initial_limit: 20,
            max_limit: 1000,
            smoothing: 1.0,
            probe_multiplier: 30,
            alpha: VegasThreshold::Log10(3),
            beta: VegasThreshold::Log10(6),
            threshold: VegasThreshold::Log10(1),
            increase: VegasStep::Log10,
            decrease: VegasStep::Log10,
            baseline_from_drops: true,
        }
    }
}

/// Java's `ThreadLocalRandom.nextDouble(0.5, 1)` from 32 random bits: uniform in [0.5, 1).
#[inline]
fn jitter(bits: u32) -> f64 {
    0.5 + f64::from(bits) * (1.0 / 8_589_934_592.0)
}

impl VegasLimit {
    /// Java's `updateEstimatedLimit`: the next estimate, or `None` to keep `e`.
    #[inline]
    fn step(&self, e: f64, rtt_noload: u64, rtt: u64, sample: &Sample) -> Option<f64> {
        let new = if sample.dropped {
            self.decrease.decrease(e)
        } else if f64::from(sample.inflight) * 2.0 < e {
            return None;
        } else {
            // Java: (int) Math.ceil(estimatedLimit * (1 - (double) rtt_noload / rtt)).
            let queue = libm::ceil(e * (1.0 - rtt_noload as f64 / rtt as f64)) as i64;
            let l = e as u32;
            let alpha = i64::from(self.alpha.at(l));
            let beta = i64::from(self.beta.at(l));
            if queue <= i64::from(self.threshold.at(l)) {
                e + beta as f64
            } else if queue < alpha {
                self.increase.increase(e)
            } else if queue > beta {
                self.decrease.decrease(e)
            } else {
                return None;
            }
        };
        // Java: Math.max(1, Math.min(maxLimit, newLimit)), then smoothing.
        let max = f64::from(self.max_limit.clamp(1, MAX_LIMIT));
        let new = clamp_f(new, 1.0, max);
        Some((1.0 - self.smoothing) * e + self.smoothing * new)
    }
}

impl Limit for VegasLimit {
    fn initial_limit(&self) -> u32 {
        self.initial_limit
    }

    fn validate(&self) -> Result<(), ConfigError> {
        check_limits(self.initial_limit, 1, self.max_limit)?;
        check_smoothing(self.smoothing)?;
        if self.probe_multiplier == 0 {
            return Err(ConfigError::ProbeMultiplier);
        }
        self.increase.validate()?;
        self.decrease.validate()
    }

    fn reset(&self, state: &LimitState) {
        state.store(0, f64::from(self.initial_limit.min(MAX_LIMIT)).to_bits());
        state.store(NOLOAD, 0);
        state.store(PROBE, 0);
    }

    fn update(&self, state: &LimitState, sample: &Sample, random: u64) -> u32 {
        let rtt = sample.rtt_ns;
        if rtt == 0 {
            return self.limit(state);
        }
        let rtt_noload = if self.baseline_from_drops || !sample.dropped {
            let e = load_estimate(state);
            let mut probe = false;
            // The closure always writes, so the update cannot fail.
            let _ = state.update(PROBE, |w| {
                let bits = if w & DRAWN != 0 {
                    (w >> 32) as u32
                } else {
                    random as u32
                };
                let count = ((w & COUNT_MASK) + 1).min(COUNT_MASK);
                // Java: probeJitter * probeMultiplier * estimatedLimit <= probeCount.
                probe = jitter(bits) * f64::from(self.probe_multiplier) * e <= count as f64;
                Some(if probe {
                    ((random >> 32) << 32) | DRAWN
                } else {
                    (u64::from(bits) << 32) | DRAWN | count
                })
            });
            if probe {
                state.store(NOLOAD, rtt);
                return publish(e);
            }
            match state.update(NOLOAD, |n| (n == 0 || rtt < n).then_some(rtt)) {
                // A new minimum: the baseline moves, the estimate does not (even for a drop).
                Ok(_) => return publish(e),
                Err(n) => n,
            }
        } else {
            // Drops skip the baseline; the decrease does not read it.
            state.load(NOLOAD)
        };
        publish(step_estimate(state, |e| {
            self.step(e, rtt_noload, rtt, sample)
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

    fn dropped(rtt_ns: u64, inflight: u32) -> Sample {
        Sample {
            dropped: true,
            ..s(rtt_ns, inflight)
        }
    }

    /// VegasLimitTest.create(): alpha 3, beta 6 (constants), smoothing 1.0, initial 10, max 20.
    fn create() -> VegasLimit {
        VegasLimit {
            initial_limit: 10,
            max_limit: 20,
            alpha: VegasThreshold::Constant(3),
            beta: VegasThreshold::Constant(6),
            smoothing: 1.0,
            ..VegasLimit::default()
        }
    }

    fn run(v: VegasLimit, samples: &[Sample]) -> [u32; 3] {
        let st = LimitState::new();
        v.reset(&st);
        let mut out = [0; 3];
        for (o, sm) in out.iter_mut().zip(samples) {
            *o = v.update(&st, sm, 0);
            assert_eq!(v.limit(&st), *o);
        }
        out
    }

    // Every published vector of VegasLimitTest.java (and its DeprecatedBuilderMethod twins).
    #[test]
    fn netflix_vectors() {
        // increaseLimit: queue 0 <= threshold LOG10(10) = 1 -> 10 + beta 6.
        assert_eq!(
            run(create(), &[s(10 * MS, 10), s(10 * MS, 11)])[..2],
            [10, 16]
        );
        // decreaseLimit: queue ceil(10 * (1 - 10/50)) = 8 > beta 6 -> 10 - LOG10(10) = 9.
        assert_eq!(
            run(create(), &[s(10 * MS, 10), s(50 * MS, 11)])[..2],
            [10, 9]
        );
        // noChangeIfWithinThresholds: queue ceil(10 * (1 - 10/14)) = ceil(2.857) = 3, alpha 3 <= 3 <= 6.
        assert_eq!(
            run(create(), &[s(10 * MS, 10), s(14 * MS, 14)])[..2],
            [10, 10]
        );
        // largeLimitIncrease: defaults, initial 10000, max 20000: queue 0 <= LOG10 = 4 -> 10000 + 6 * 4.
        let large = VegasLimit {
            initial_limit: 10_000,
            max_limit: 20_000,
            ..VegasLimit::default()
        };
        assert_eq!(
            run(large, &[s(10_000 * MS, 5000), s(10_000 * MS, 6000)])[..2],
            [10_000, 10_024]
        );
        // decreaseSmoothing: decrease L/2, smoothing 0.5, initial 100, max 200.
        // queue ceil(100 * (1 - 10/20)) = 50 > beta 6 * 2 = 12: new 50, E = 0.5 * 100 + 0.5 * 50 = 75;
        // queue ceil(75 * 0.5) = 38 > beta 6: new 37.5, E = 0.5 * 75 + 0.5 * 37.5 = 56.25.
        let smooth = VegasLimit {
            initial_limit: 100,
            max_limit: 200,
            smoothing: 0.5,
            decrease: VegasStep::Factor(0.5),
            ..VegasLimit::default()
        };
        let three = [s(10 * MS, 100), s(20 * MS, 100), s(20 * MS, 100)];
        assert_eq!(run(smooth, &three), [100, 75, 56]);
        // decreaseWithoutSmoothing: 100 -> 50 -> 25.
        let sharp = VegasLimit {
            smoothing: 1.0,
            ..smooth
        };
        assert_eq!(run(sharp, &three), [100, 50, 25]);
    }

    #[test]
    fn probe_resets_the_baseline_with_seeded_jitter() {
        let v = VegasLimit {
            initial_limit: 4,
            max_limit: 20,
            probe_multiplier: 1,
            beta: VegasThreshold::Constant(6),
            ..VegasLimit::default()
        };
        let st = LimitState::new();
        v.reset(&st);
        // random = 0: jitter 0.5, so a probe when 0.5 * 1 * E = 2 <= count.
        // (1) count 1: no probe; baseline unknown -> 10 ms.
        assert_eq!(v.update(&st, &s(10 * MS, 4), 0), 4);
        // (2) count 2: probe: baseline := 30 ms although it is larger; count 0.
        assert_eq!(v.update(&st, &s(30 * MS, 4), 0), 4);
        assert_eq!(st.load(NOLOAD), 30 * MS);
        // (3) count 1: 20 ms < 30 ms: new minimum.
        assert_eq!(v.update(&st, &s(20 * MS, 4), 0), 4);
        assert_eq!(st.load(NOLOAD), 20 * MS);
        // (4) count 2: probe again, baseline 25 ms.
        assert_eq!(v.update(&st, &s(25 * MS, 4), 0), 4);
        assert_eq!(st.load(NOLOAD), 25 * MS);
        // (5) count 1: queue ceil(4 * (1 - 25/25)) = 0 <= threshold LOG10(4) = 1: 4 + beta 6 = 10.
        assert_eq!(v.update(&st, &s(25 * MS, 4), 0), 10);

        // Jitter drawn from the first sample's low 32 bits: all ones gives jitter 1 - 2^-33, so the
        // probe waits for count 4 (threshold 3.99999...) instead of 2.
        v.reset(&st);
        let r = u64::from(u32::MAX);
        assert_eq!(v.update(&st, &s(10 * MS, 1), r), 4);
        assert_eq!(v.update(&st, &s(30 * MS, 1), r), 4); // count 2: 30 ms is not a new minimum
        assert_eq!(v.update(&st, &s(30 * MS, 1), r), 4); // count 3 (app-limited)
        assert_eq!(st.load(NOLOAD), 10 * MS);
        assert_eq!(v.update(&st, &s(30 * MS, 1), r), 4); // count 4: probe
        assert_eq!(st.load(NOLOAD), 30 * MS);
    }

    #[test]
    fn drops_and_the_baseline_option() {
        // Netflix: a fast rejection (1 ms < baseline 10 ms) lowers the baseline and does not decrease.
        let v = create();
        let st = LimitState::new();
        v.reset(&st);
        assert_eq!(v.update(&st, &s(10 * MS, 10), 0), 10);
        assert_eq!(v.update(&st, &dropped(MS, 10), 0), 10);
        assert_eq!(st.load(NOLOAD), MS);
        // Now a normal 10 ms success looks like a queue of ceil(10 * (1 - 1/10)) = 9 > beta 6: 10 -> 9.
        assert_eq!(v.update(&st, &s(10 * MS, 10), 0), 9);

        // baseline_from_drops = false: the drop decreases (10 - LOG10(10) = 9), the baseline stays 10 ms.
        let v = VegasLimit {
            baseline_from_drops: false,
            ..create()
        };
        v.reset(&st);
        assert_eq!(v.update(&st, &s(10 * MS, 10), 0), 10);
        assert_eq!(v.update(&st, &dropped(MS, 10), 0), 9);
        assert_eq!(st.load(NOLOAD), 10 * MS);
        // ... and a 10 ms success then sees no queue: 9 + beta 6 = 15.
        assert_eq!(v.update(&st, &s(10 * MS, 10), 0), 15);
        // A drop before any baseline still decreases: 10 - LOG10(10) = 9.
        v.reset(&st);
        assert_eq!(v.update(&st, &dropped(MS, 10), 0), 9);
    }

    #[test]
    fn refuses_an_initial_limit_outside_one_to_max() {
        let d = InnerAlgorithm::Vegas(VegasLimit::default());
        // Vegas' minimum is 1: an initial limit of 0 is refused (that estimate would never move, every
        // sample being a probe).
        check_start_rule(d, &[(1, 1000), (1, 1), (1, MAX_LIMIT)]);
    }

    #[test]
    fn zero_rtt_is_ignored_and_bad_parameters_rejected() {
        let v = create();
        let st = LimitState::new();
        v.reset(&st);
        assert_eq!(v.update(&st, &s(0, 10), 0), 10);
        assert_eq!(st.load(PROBE), 0);
        assert_eq!(st.load(NOLOAD), 0);

        assert_eq!(VegasLimit::default().validate(), Ok(()));
        let bad = |v: VegasLimit| v.validate();
        let d = VegasLimit::default();
        assert_eq!(
            bad(VegasLimit { max_limit: 0, ..d }),
            Err(ConfigError::LimitRange)
        );
        assert_eq!(
            bad(VegasLimit {
                initial_limit: MAX_LIMIT + 1,
                ..d
            }),
            Err(ConfigError::LimitRange)
        );
        assert_eq!(
            bad(VegasLimit {
                smoothing: 1.5,
                ..d
            }),
            Err(ConfigError::Smoothing)
        );
        assert_eq!(
            bad(VegasLimit {
                smoothing: f64::NAN,
                ..d
            }),
            Err(ConfigError::Smoothing)
        );
        assert_eq!(
            bad(VegasLimit {
                probe_multiplier: 0,
                ..d
            }),
            Err(ConfigError::ProbeMultiplier)
        );
        let nan = VegasStep::Factor(f64::NAN);
        assert_eq!(
            bad(VegasLimit { decrease: nan, ..d }),
            Err(ConfigError::VegasStep)
        );
        let zero = VegasStep::Factor(0.0);
        assert_eq!(
            bad(VegasLimit {
                increase: zero,
                ..d
            }),
            Err(ConfigError::VegasStep)
        );
    }
}
