//! Additive increase, multiplicative decrease, with Netflix concurrency-limits' rules and defaults
//! (`AIMDLimit.java`): on a drop or an RTT above `timeout_ns` the limit becomes `trunc(L * backoff_ratio)`;
//! otherwise, when the request saw at least half the limit in flight (`inflight * 2 >= L`), it becomes
//! `L + 1`; then it is clamped to `[min_limit, max_limit]`. Like Netflix's, the initial limit is not clamped
//! until the first update.

use super::{Limit, Sample, MAX_LIMIT};
use crate::error::ConfigError;

/// AIMD limit parameters. Defaults are Netflix's: initial 20, min 20, max 200, backoff 0.9, timeout 5 s.
///
/// ```
/// use weir::limit::{AimdLimit, Limit, Sample};
/// let aimd = AimdLimit { initial_limit: 30, ..AimdLimit::default() };
/// let drop = Sample { rtt_ns: 0, inflight: 0, dropped: true };
/// assert_eq!(aimd.update(30, &drop), 27);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AimdLimit {
    /// The limit of a fresh node.
    pub initial_limit: u32,
    /// The limit never goes below this after an update (Netflix's default of 20 is a common surprise).
    pub min_limit: u32,
    /// The limit never goes above this.
    pub max_limit: u32,
    /// Multiplier applied on a drop, in [0.5, 1.0).
    pub backoff_ratio: f64,
    /// A success slower than this counts as a drop.
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

impl Limit for AimdLimit {
    fn initial_limit(&self) -> u32 {
        self.initial_limit
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.initial_limit > MAX_LIMIT
            || self.max_limit > MAX_LIMIT
            || self.min_limit > self.max_limit
        {
            return Err(ConfigError::LimitRange);
        }
        // Written so that NaN fails too.
        if !(self.backoff_ratio >= 0.5 && self.backoff_ratio < 1.0) {
            return Err(ConfigError::BackoffRatio);
        }
        if self.timeout_ns == 0 {
            return Err(ConfigError::Timeout);
        }
        Ok(())
    }

    #[inline]
    fn update(&self, current: u32, sample: &Sample) -> u32 {
        let next = if sample.dropped || sample.rtt_ns > self.timeout_ns {
            // Java: (int) (limit * backoffRatio), truncation toward zero; exact in f64 for 24-bit limits.
            (f64::from(current) * self.backoff_ratio) as u32
        } else if u64::from(sample.inflight) * 2 >= u64::from(current) {
            current.saturating_add(1)
        } else {
            current
        };
        next.clamp(self.min_limit, self.max_limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(rtt_ns: u64, inflight: u32) -> Sample {
        Sample {
            rtt_ns,
            inflight,
            dropped: false,
        }
    }

    // The published Netflix vectors (AIMDLimitTest.java).
    #[test]
    fn netflix_vectors() {
        let d = AimdLimit {
            initial_limit: 10,
            ..AimdLimit::default()
        };
        assert_eq!(d.initial_limit(), 10);

        let l = AimdLimit::default();
        assert_eq!(l.update(20, &ok(1_000_000, 10)), 21);

        let l = AimdLimit {
            initial_limit: 30,
            ..AimdLimit::default()
        };
        assert_eq!(
            l.update(
                30,
                &Sample {
                    rtt_ns: 0,
                    inflight: 0,
                    dropped: true
                }
            ),
            27
        );

        let l = AimdLimit {
            initial_limit: 21,
            max_limit: 21,
            min_limit: 0,
            ..AimdLimit::default()
        };
        assert_eq!(l.update(21, &ok(1_000_000, 10)), 21);
    }

    #[test]
    fn timeout_counts_as_drop_and_app_limited_holds() {
        let l = AimdLimit::default();
        assert_eq!(l.update(100, &ok(5_000_000_001, 90)), 90);
        assert_eq!(l.update(100, &ok(5_000_000_000, 50)), 101);
        assert_eq!(l.update(100, &ok(1, 49)), 100);
        assert_eq!(
            l.update(
                21,
                &Sample {
                    rtt_ns: 1,
                    inflight: 1,
                    dropped: true
                }
            ),
            20
        );
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
}
