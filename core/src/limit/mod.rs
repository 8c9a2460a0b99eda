//! Per-node concurrency limits.
//!
//! Admission itself is not here: it is one compare-and-swap on the node's control word that reserves a
//! slot only while `in_flight < limit` (see `slot.rs`), so a limit can never be overshot by a
//! check-then-increment race. This module decides what the limit *is*, from the samples that releases
//! feed it: [`FixedLimit`] (the SRE flow-control cap) and [`AimdLimit`] (Netflix concurrency-limits AIMD).

mod aimd;
mod fixed;

pub use aimd::AimdLimit;
pub use fixed::FixedLimit;

use crate::error::ConfigError;

/// The largest concurrency limit a node can have (the limit is stored in 24 bits of the node's control word).
pub const MAX_LIMIT: u32 = (1 << 24) - 1;

/// One observation fed to a limit algorithm when a lease is released with
/// [`Outcome::Success`](crate::Outcome::Success) (`dropped == false`) or
/// [`Outcome::Dropped`](crate::Outcome::Dropped) (`dropped == true`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Round-trip time: release `now` minus acquire `now`, saturating at 0.
    pub rtt_ns: u64,
    /// Requests in flight on the node when this one was admitted, including itself (Netflix's semantics).
    pub inflight: u32,
    /// Whether the request timed out or was rejected for overload.
    pub dropped: bool,
}

/// A concurrency-limit algorithm: a pure function from the node's current limit and one sample to its next
/// limit. The balancer applies it inside the compare-and-swap that returns the lease's slot, so concurrent
/// samples each apply exactly once and the limit always stays within the algorithm's bounds.
///
/// ```
/// use weir::limit::{AimdLimit, Limit, Sample};
/// let aimd = AimdLimit::default();
/// let s = Sample { rtt_ns: 1_000_000, inflight: 10, dropped: false };
/// assert_eq!(aimd.update(20, &s), 21);
/// ```
pub trait Limit {
    /// The limit a fresh node starts with.
    fn initial_limit(&self) -> u32;
    /// Checks the parameters; called when a balancer is built.
    fn validate(&self) -> Result<(), ConfigError>;
    /// The next limit after `sample`, given the current one.
    fn update(&self, current: u32, sample: &Sample) -> u32;
}

/// The limit algorithm every node of a balancer uses, chosen in [`Config`](crate::Config).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LimitAlgorithm {
    /// A constant cap ([`FixedLimit`]); the default, with a cap of 100.
    Fixed(FixedLimit),
    /// Additive increase, multiplicative decrease on drops and timeouts ([`AimdLimit`]).
    Aimd(AimdLimit),
}

impl Default for LimitAlgorithm {
    fn default() -> Self {
        LimitAlgorithm::Fixed(FixedLimit::default())
    }
}

impl Limit for LimitAlgorithm {
    fn initial_limit(&self) -> u32 {
        match self {
            LimitAlgorithm::Fixed(l) => l.initial_limit(),
            LimitAlgorithm::Aimd(l) => l.initial_limit(),
        }
    }

    fn validate(&self) -> Result<(), ConfigError> {
        match self {
            LimitAlgorithm::Fixed(l) => l.validate(),
            LimitAlgorithm::Aimd(l) => l.validate(),
        }
    }

    #[inline]
    fn update(&self, current: u32, sample: &Sample) -> u32 {
        match self {
            LimitAlgorithm::Fixed(l) => l.update(current, sample),
            LimitAlgorithm::Aimd(l) => l.update(current, sample),
        }
    }
}
