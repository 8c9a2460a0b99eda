//! Additive increase, multiplicative decrease, with Netflix concurrency-limits' rules and defaults
//! (`AIMDLimit.java`): on a drop or an RTT above `timeout_ns` the limit becomes `trunc(L * backoff_ratio)`;
//! otherwise, when the request saw at least half the limit in flight (`inflight * 2 >= L`, on the integer
//! limit), it becomes `L + 1`; then it is clamped to `[min_limit, max_limit]`. Netflix's builder only
//! warns about an initial limit outside `[min_limit, max_limit]` (its first update clamps it); here
//! [`Limit::validate`] refuses it.
//!
//! State: word 0 holds the integer limit; one compare-and-swap loop applies each sample exactly once.

use super::{check_limits, Limit, LimitState, Sample, MAX_LIMIT};
use crate::error::ConfigError;
use crate::internal::time::saturating_ns;
use core::time::Duration;

/// AIMD limit parameters. Defaults are Netflix's: initial 20, min 20, max 200, backoff 0.9, timeout 5 s.
///
/// ```
/// use weir::limit::{AimdLimit, Limit, LimitState, Sample};
/// let aimd = AimdLimit { initial_limit: 30, ..AimdLimit::default() };
/// let state = LimitState::new();
/// aimd.reset(&state);
/// let drop = Sample { rtt_ns: 0, inflight: 0, dropped: true, now_ns: 0, load: None, failed: false };
/// assert_eq!(aimd.update(&state, &drop, 0), 27);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AimdLimit {
    /// The limit of a fresh node: `min_limit <= initial_limit <= max_limit`, or
    /// [`validate`](Limit::validate) refuses it with [`ConfigError::LimitRange`] (not clamped).
    pub initial_limit: u32,
    /// The limit never goes below this.
    ///
    /// Netflix's default of 20 ([`AIMDLimit.java`](https://github.com/Netflix/concurrency-limits/blob/39c74f7ef47fb48cd605be98870b51896f4b2fae/concurrency-limits-core/src/main/java/com/netflix/concurrency/limits/limit/AIMDLimit.java#L34))
    /// is a common surprise: however many drops a node returns, it keeps being offered 20 concurrent
    /// requests. Set it to 1 to let drops throttle a struggling node all the way down, as
    /// congestion-limiter and dialogue's CIAD do; the default stays Netflix's so that the same samples
    /// give the same limits.
    pub min_limit: u32,
    /// The limit never goes above this; at most [`MAX_LIMIT`].
    pub max_limit: u32,
    /// Multiplier applied on a drop, in [0.5, 1.0).
    pub backoff_ratio: f64,
    /// A success slower than this counts as a drop; at least 1 ns (default 5 s). Also settable from a
    /// [`Duration`] with [`AimdLimit::timeout`].
    pub timeout_ns: u64,
}

impl Default for AimdLimit {
    fn default() -> Self {
        AimdLimit {
            initial_limit: 20,
            min_limit: 20,
            max_limit: 200,
            backoff_ratio: 0.9,
            timeout_ns: 5_000_000_000,
        }
    }
}

impl AimdLimit {
    /// Sets [`timeout_ns`](Self::timeout_ns) from a [`Duration`]: a success slower than `timeout` counts
    /// as a drop. A duration longer than `u64::MAX` ns (about 584 years) saturates to `u64::MAX`;
    /// [`Duration::ZERO`] gives 0, which validation refuses.
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::limit::{AimdLimit, Limit};
    /// let aimd = AimdLimit::default().timeout(Duration::from_millis(5));
    /// assert_eq!(aimd.timeout_ns, 5_000_000);
    /// assert!(aimd.validate().is_ok());
    /// assert_eq!(aimd.timeout(Duration::MAX).timeout_ns, u64::MAX);
    /// assert!(aimd.timeout(Duration::ZERO).validate().is_err());
    /// ```
    #[must_use]
    pub const fn timeout(self, timeout: Duration) -> Self {
        AimdLimit {
            timeout_ns: saturating_ns(timeout),
            ..self
        }
    }

    /// The next limit after `sample`, given the current one (Java's `_update`).
    #[inline]
    fn next(&self, current: u32, sample: &Sample) -> u32 {
        let next = if sample.dropped || sample.rtt_ns > self.timeout_ns {
            // Java: (int) (limit * backoffRatio), truncation toward zero; exact in f64 for 24-bit limits.
            (f64::from(current) * self.backoff_ratio) as u32
        } else if u64::from(sample.inflight) * 2 >= u64::from(current) {
            current.saturating_add(1)
        } else {
            current
        };
        // Java: Math.min(maxLimit, Math.max(minLimit, limit)); no panic if min > max (unvalidated).
        next.max(self.min_limit).min(self.max_limit).min(MAX_LIMIT)
    }
}

impl Limit for AimdLimit {
    fn initial_limit(&self) -> u32 {
        self.initial_limit
    }

    fn validate(&self) -> Result<(), ConfigError> {
        check_limits(self.initial_limit, self.min_limit, self.max_limit)?;
        // Written so that NaN fails too.
        if !(self.backoff_ratio >= 0.5 && self.backoff_ratio < 1.0) {
            return Err(ConfigError::BackoffRatio);
        }
        if self.timeout_ns == 0 {
            return Err(ConfigError::Timeout);
        }
        Ok(())
    }

    fn reset(&self, state: &LimitState) {
        state.store(0, u64::from(self.initial_limit.min(MAX_LIMIT)));
    }

    #[inline]
    fn update(&self, state: &LimitState, sample: &Sample, _random: u64) -> u32 {
        let mut next = 0;
        let r = state.update(0, |w| {
            next = self.next(w as u32, sample);
            Some(u64::from(next))
        });
        match r {
            Ok(_) => next,
            Err(w) => (w as u32).min(MAX_LIMIT),
        }
    }

    fn limit(&self, state: &LimitState) -> u32 {
        (state.load(0) as u32).min(MAX_LIMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::{tests::check_start_rule, InnerAlgorithm};

    fn ok(rtt_ns: u64, inflight: u32) -> Sample {
        Sample {
            rtt_ns,
            inflight,
            dropped: false,
            now_ns: rtt_ns,
            load: None,
            failed: false,
        }
    }

    fn drop(rtt_ns: u64, inflight: u32) -> Sample {
        Sample {
            dropped: true,
            ..ok(rtt_ns, inflight)
        }
    }

    /// One sample applied to a fresh node whose limit is `from`.
    fn step(l: AimdLimit, from: u32, s: Sample) -> u32 {
        let l = AimdLimit {
            initial_limit: from,
            ..l
        };
        let state = LimitState::new();
        l.reset(&state);
        let got = l.update(&state, &s, 0);
        assert_eq!(l.limit(&state), got);
        got
    }

    // The published Netflix vectors (AIMDLimitTest.java).
    #[test]
    fn netflix_vectors() {
        // testDefault: initial 10 (below the default min of 20: Java reports it until the first update).
        // Validation refuses this start; unvalidated, it behaves as Java's.
        let d = AimdLimit {
            initial_limit: 10,
            ..AimdLimit::default()
        };
        assert_eq!(d.validate(), Err(ConfigError::LimitRange));
        let state = LimitState::new();
        d.reset(&state);
        assert_eq!((d.initial_limit(), d.limit(&state)), (10, 10));

        // increaseOnSuccess: initial 20, (0, 1 ms, 10, false) -> 21.
        let l = AimdLimit::default();
        assert_eq!(step(l, 20, ok(1_000_000, 10)), 21);

        // decreaseOnDrops: initial 30, (0, 0, 0, true) -> trunc(30 * 0.9) = 27.
        assert_eq!(step(l, 30, drop(0, 0)), 27);

        // successOverflow: initial 21, max 21, min 0, (0, 1 ms, 10, false) -> 21.
        let l = AimdLimit {
            max_limit: 21,
            min_limit: 0,
            ..AimdLimit::default()
        };
        assert_eq!(step(l, 21, ok(1_000_000, 10)), 21);
    }

    #[test]
    fn timeout_counts_as_drop_and_app_limited_holds() {
        let l = AimdLimit::default();
        assert_eq!(step(l, 100, ok(5_000_000_001, 90)), 90);
        assert_eq!(step(l, 100, ok(5_000_000_000, 50)), 101);
        assert_eq!(step(l, 100, ok(1, 49)), 100);
        assert_eq!(step(l, 21, drop(1, 1)), 20);
        // The first update clamps an (unvalidated) initial limit below min_limit, as Java's does.
        assert_eq!(step(l, 10, ok(1, 1)), 20);
    }

    #[test]
    fn sequence_applies_every_sample_once() {
        let l = AimdLimit {
            min_limit: 1,
            ..AimdLimit::default()
        };
        let state = LimitState::new();
        l.reset(&state);
        // 20 -> 21 -> 22 -> trunc(22 * 0.9) = trunc(19.8) = 19 -> 19 (4 * 2 < 19) -> 20 (10 * 2 >= 19).
        let got = [ok(1, 10), ok(1, 11), drop(1, 5), ok(1, 4), ok(1, 10)]
            .map(|s| l.update(&state, &s, 0));
        assert_eq!(got, [21, 22, 19, 19, 20]);
        // An unvalidated min > max never panics: max wins, as in Java.
        let bad = AimdLimit {
            min_limit: 50,
            max_limit: 10,
            ..l
        };
        assert_eq!(bad.update(&state, &ok(1, 10), 0), 10);
    }

    #[test]
    fn rejects_bad_parameters() {
        let base = AimdLimit::default();
        assert_eq!(
            AimdLimit {
                backoff_ratio: f64::NAN,
                ..base
            }
            .validate(),
            Err(ConfigError::BackoffRatio)
        );
        assert_eq!(
            AimdLimit {
                backoff_ratio: 1.0,
                ..base
            }
            .validate(),
            Err(ConfigError::BackoffRatio)
        );
        assert_eq!(
            AimdLimit {
                backoff_ratio: 0.49,
                ..base
            }
            .validate(),
            Err(ConfigError::BackoffRatio)
        );
        assert_eq!(
            AimdLimit {
                min_limit: 300,
                ..base
            }
            .validate(),
            Err(ConfigError::LimitRange)
        );
        assert_eq!(
            AimdLimit {
                max_limit: MAX_LIMIT + 1,
                ..base
            }
            .validate(),
            Err(ConfigError::LimitRange)
        );
        assert_eq!(
            AimdLimit {
                timeout_ns: 0,
                ..base
            }
            .validate(),
            Err(ConfigError::Timeout)
        );
        assert_eq!(base.validate(), Ok(()));
    }

    #[test]
    fn refuses_an_initial_limit_outside_min_max() {
        let d = AimdLimit::default();
        check_start_rule(
            InnerAlgorithm::Aimd(d),
            &[(20, 200), (0, 0), (7, 7), (0, MAX_LIMIT)],
        );
        // Validated (and started at 500) before the rule.
        let high = AimdLimit {
            initial_limit: 500,
            ..d
        };
        assert_eq!(high.validate(), Err(ConfigError::LimitRange));
    }
}
