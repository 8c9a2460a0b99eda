//! A constant concurrency cap: the SRE book's flow control (ch. 20), default 100 active requests.
//!
//! State: none; the limit is the parameter.

use super::{check_limits, Limit, LimitState, Sample, MAX_LIMIT};
use crate::error::ConfigError;

/// A constant per-node cap on requests in flight.
///
/// ```
/// use weir::limit::{FixedLimit, Limit, LimitState, Sample};
/// let fixed = FixedLimit::default();
/// assert_eq!(fixed.initial_limit(), 100);
/// let state = LimitState::new();
/// fixed.reset(&state);
/// let drop = Sample { rtt_ns: 0, inflight: 1, dropped: true, now_ns: 0, load: None, failed: false };
/// assert_eq!(fixed.update(&state, &drop, 0), 100);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedLimit {
    /// The cap, and so also the initial limit: 0..=[`MAX_LIMIT`] (its bounds are the cap itself, so the
    /// rule `min_limit <= initial_limit <= max_limit` of the other algorithms is `limit <= MAX_LIMIT`
    /// here; [`validate`](Limit::validate) refuses a larger one with
    /// [`ConfigError::LimitRange`]). A cap of 0 keeps the node out of rotation while still a member.
    pub limit: u32,
}

impl Default for FixedLimit {
    fn default() -> Self {
        FixedLimit { limit: 100 }
    }
}

impl Limit for FixedLimit {
    fn initial_limit(&self) -> u32 {
        self.limit
    }

    fn validate(&self) -> Result<(), ConfigError> {
        check_limits(self.limit, 0, MAX_LIMIT)
    }

    fn reset(&self, _state: &LimitState) {
        // No state: the limit is the parameter.
    }

    #[inline]
    fn update(&self, _state: &LimitState, _sample: &Sample, _random: u64) -> u32 {
        self.limit.min(MAX_LIMIT)
    }

    fn limit(&self, _state: &LimitState) -> u32 {
        self.limit.min(MAX_LIMIT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::{tests::check_start_rule, InnerAlgorithm};

    #[test]
    fn refuses_a_cap_above_max_limit() {
        let d = InnerAlgorithm::Fixed(FixedLimit::default());
        check_start_rule(d, &[(0, MAX_LIMIT)]);
    }
}
