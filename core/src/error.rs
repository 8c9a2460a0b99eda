//! The configuration error shared by every mechanism: the limit algorithms, the algorithm families and
//! the balancer's own settings each check their fields and name the first bad one.

use core::fmt;

/// A configuration that was rejected at construction. Each variant names the field and its rule.
///
/// ```
/// use weir::balance::{Algorithm, EwmaHealth, Weighted, WeightedHealth};
/// use weir::ConfigError;
/// use weir::{Config, HeapBalancer};
/// let weighted = |w: Weighted| Config { algorithm: Algorithm::Weighted(w), ..Config::default() };
/// let bad = weighted(Weighted { weight_exponent: f64::NAN, ..Weighted::CASCADE });
/// assert_eq!(bad.validate(), Err(ConfigError::WeightExponent));
/// assert_eq!(HeapBalancer::with_capacity(0, Config::default()).err(), Some(ConfigError::Capacity));
/// let bad = weighted(Weighted { health: WeightedHealth::Ewma(EwmaHealth { half_life: 0 }), ..Weighted::CASCADE });
/// assert_eq!(bad.validate().unwrap_err().to_string(), "half_life must be at least 1 outcome");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ConfigError {
    /// `capacity` must be between 1 and [`MAX_NODES`](crate::balance::MAX_NODES).
    Capacity,
    /// The slots are held by another live balancer: a storage serves one balancer at a time (drop the
    /// other first).
    SlotsInUse,
    /// [`BucketHealth::count`](crate::balance::BucketHealth::count) must be between 1 and
    /// [`MAX_BUCKETS`](crate::balance::MAX_BUCKETS).
    BucketCount,
    /// [`BucketHealth::width_ns`](crate::balance::BucketHealth::width_ns) must be at least 1.
    BucketWidth,
    /// `decay` must be finite and at least 1.
    Decay,
    /// `floor` must be finite and in (0, 1].
    Floor,
    /// `weight_exponent` must be finite and in (0, 64].
    WeightExponent,
    /// `half_life` must be at least 1 outcome.
    HalfLife,
    /// Limits must satisfy `min_limit <= initial_limit <= max_limit <= MAX_LIMIT`
    /// ([`MAX_LIMIT`](crate::limit::MAX_LIMIT)): an initial limit outside the bounds is refused, not
    /// clamped. Vegas' `min_limit` is 1; CIAD's and the knee limit's `min_limit` must be at least 1; a
    /// fixed `limit` must be at most `MAX_LIMIT`.
    LimitRange,
    /// A backoff ratio must be in [0.5, 1.0) (AIMD, CIAD, the knee limit, Gradient2's `drop_backoff`), or [0.5, 1.0]
    /// (Gradient).
    BackoffRatio,
    /// AIMD `timeout_ns` must be at least 1.
    Timeout,
    /// `smoothing` must be in [0, 1].
    Smoothing,
    /// `rtt_tolerance` must be finite and at least 1; so must a knee limit's `knee` and `hold`, with
    /// `hold <= knee`.
    RttTolerance,
    /// Gradient `probe_interval` must be between 1 and 2^30 (or `None`).
    ProbeInterval,
    /// Vegas `probe_multiplier` must be at least 1.
    ProbeMultiplier,
    /// Vegas `increase`/`decrease` factors must be finite and positive.
    VegasStep,
    /// A queue size must be at most [`MAX_LIMIT`](crate::limit::MAX_LIMIT).
    QueueSize,
    /// Gradient2 `long_window` must be at least 1.
    LongWindow,
    /// Window times must satisfy `1 <= min_window_ns <= max_window_ns <= 1000 s`; a knee limit's
    /// `armed_for_ns` must be at most 1000 s.
    WindowTime,
    /// `min_samples` must be at least 1, and at most a percentile window's capacity.
    WindowSamples,
    /// A percentile window needs `percentile` in (0, 1) and `capacity` in
    /// 1..=[`PERCENTILE_CAPACITY`](crate::limit::PERCENTILE_CAPACITY).
    Percentile,
    /// `max_waiters` must be at most [`MAX_WAITERS`](crate::balance::MAX_WAITERS).
    MaxWaiters,
    /// [`LowestScore`](crate::balance::LowestScore) half-lives must be between 1 ms and 1 hour.
    DecayHalfLife,
    /// `dropped_cost`, `throttled_cost` and `client_error_cost` must be finite and in [0, 1].
    OutcomeCost,
    /// `penalty` and `ratio_penalty` must be finite and in [0, 10^6], and `slow_ratio` 0 or in [1, 64].
    Penalty,
    /// [`LowestScore`](crate::balance::LowestScore)'s `probe_fraction` and `forgiveness` must be finite
    /// and in [0, 1], and its `probe_after_ns` 0 or between 1 ms and 1 hour.
    Probation,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigError::Capacity => "capacity must be between 1 and MAX_NODES",
            ConfigError::SlotsInUse => {
                "these node slots belong to another live balancer; drop it before reusing them"
            }
            ConfigError::BucketCount => "buckets count must be between 1 and MAX_BUCKETS",
            ConfigError::BucketWidth => "buckets width_ns must be at least 1",
            ConfigError::Decay => "decay must be finite and >= 1",
            ConfigError::Floor => "floor must be finite and in (0, 1]",
            ConfigError::WeightExponent => "weight_exponent must be finite and in (0, 64]",
            ConfigError::HalfLife => "half_life must be at least 1 outcome",
            ConfigError::LimitRange => {
                "limits must satisfy min_limit <= initial_limit <= max_limit <= MAX_LIMIT \
                 (Vegas: min_limit is 1; CIAD, Knee: min_limit >= 1; Fixed: limit <= MAX_LIMIT)"
            }
            ConfigError::BackoffRatio => {
                "backoff_ratio must be in [0.5, 1.0) ([0.5, 1.0] for Gradient)"
            }
            ConfigError::Timeout => "timeout_ns must be at least 1",
            ConfigError::Smoothing => "smoothing must be in [0, 1]",
            ConfigError::RttTolerance => {
                "rtt_tolerance (or a knee limit's knee and hold, hold <= knee) must be finite and >= 1"
            }
            ConfigError::ProbeInterval => "probe_interval must be between 1 and 2^30",
            ConfigError::ProbeMultiplier => "probe_multiplier must be at least 1",
            ConfigError::VegasStep => "Vegas increase/decrease factors must be finite and > 0",
            ConfigError::QueueSize => "queue_size must be <= MAX_LIMIT",
            ConfigError::LongWindow => "long_window must be at least 1",
            ConfigError::WindowTime => {
                "window times must satisfy 1 <= min_window_ns <= max_window_ns <= 1000 s \
                 (a knee limit's armed_for_ns: at most 1000 s)"
            }
            ConfigError::WindowSamples => {
                "min_samples must be at least 1, and at most the percentile window's capacity"
            }
            ConfigError::Percentile => {
                "percentile must be in (0, 1) and capacity in 1..=PERCENTILE_CAPACITY"
            }
            ConfigError::MaxWaiters => "max_waiters must be at most MAX_WAITERS (2^20)",
            ConfigError::DecayHalfLife => "decay half-lives must be between 1 ms and 1 hour",
            ConfigError::OutcomeCost => {
                "dropped_cost, throttled_cost and client_error_cost must be finite and in [0, 1]"
            }
            ConfigError::Penalty => {
                "penalty and ratio_penalty must be finite and in [0, 1e6], slow_ratio 0 or in [1, 64]"
            }
            ConfigError::Probation => {
                "probe_fraction and forgiveness must be finite and in [0, 1], probe_after_ns 0 or \
                 between 1 ms and 1 hour"
            }
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ConfigError {}
