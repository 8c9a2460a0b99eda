//! A constant concurrency cap: the SRE book's flow control (ch. 20), default 100 active requests.

use super::{Limit, Sample, MAX_LIMIT};
use crate::error::ConfigError;

/// A constant per-node cap on requests in flight.
///
/// ```
/// use weir::limit::{FixedLimit, Limit, Sample};
/// let fixed = FixedLimit::default();
/// assert_eq!(fixed.initial_limit(), 100);
/// let drop = Sample { rtt_ns: 0, inflight: 1, dropped: true };
/// assert_eq!(fixed.update(100, &drop), 100);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedLimit {
    /// The cap, 0..=[`MAX_LIMIT`]. A cap of 0 keeps the node out of rotation while still a member.
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
        if self.limit > MAX_LIMIT {
            return Err(ConfigError::LimitRange);
        }
        Ok(())
    }

    #[inline]
    fn update(&self, _current: u32, _sample: &Sample) -> u32 {
        self.limit
    }
}
