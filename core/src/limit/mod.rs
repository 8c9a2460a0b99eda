//! Per-node concurrency limits.
//!
//! Admission itself is not here: it is one compare-and-swap on the node's control word that reserves a
//! slot only while `in_flight < limit` (see `slot.rs`), so a limit can never be overshot by a
//! check-then-increment race. This module decides what the limit *is*, from the samples that releases
//! feed it:
//!
//! | algorithm | source | signal |
//! |---|---|---|
//! | [`FixedLimit`] | SRE book flow control | none: a constant cap |
//! | [`AimdLimit`] | Netflix `AIMDLimit` | drops and timeouts |
//! | [`VegasLimit`] | Netflix `VegasLimit` | estimated queue from RTT vs. no-load RTT; drops |
//! | [`GradientLimit`] | Netflix `GradientLimit` (v1) | RTT vs. minimum RTT; drops |
//! | [`Gradient2Limit`] | Netflix `Gradient2Limit` (recommended there) | RTT vs. long-term average RTT |
//! | [`CiadLimit`] | palantir dialogue's per-host limiter | drops; cautious `1/limit` increase |
//! | [`KneeLimit`] | weir's; the knee as TCP Vegas and BBR read it | RTT vs. a slow-drifting no-load RTT, shared by every client of a server; drops |
//! | [`WindowedLimit`] | Netflix `WindowedLimit` | any of the above, fed one aggregate per time window |
//!
//! # Conformance with Netflix concurrency-limits
//! The Java source is [Netflix/concurrency-limits at v0.5.4][ncl]. `NCL#n` is its issue or pull request
//! `n` (`https://github.com/Netflix/concurrency-limits/issues/n`), and `dialogue#n` palantir/dialogue's
//! (`https://github.com/palantir/dialogue/issues/n`).
//!
//! The Netflix algorithms follow Java's update rules, defaults and numeric semantics: the estimate is an
//! `f64`, the reported limit is its truncation (`(int) estimate`), Vegas' queue is `ceil`ed, the `LOG10`
//! and `SQRT` helpers are Java's integer ones, and the app-limited checks compare the in-flight count with
//! the `f64` estimate. The in-flight count of a [`Sample`] is the count when that request was admitted,
//! including itself, as in Java. So the same samples give the same limits, with these exceptions, each
//! documented on its algorithm:
//! - a sample with `rtt_ns == 0` is ignored by Vegas, Gradient and Gradient2 (Java's Vegas throws; its
//!   Gradients would compute `0/0` and store NaN);
//! - every estimate Gradient (v1) computes is also clamped to `[min_limit, max_limit]`; Java's exceeds
//!   `max_limit` when that is below the queue size (its probe value and its floor are the queue size,
//!   NCL#135);
//! - randomness (Vegas' probe jitter, Gradient's probe countdown) comes from the caller's `random` bits,
//!   so a seeded run is reproducible; its distribution is Java's;
//! - the windowed wrapper's percentile window holds at most [`PERCENTILE_CAPACITY`] samples, a
//!   percentile index below 0 is clamped to the smallest sample (Java throws), and Java's builder limits
//!   (windows of at least 100 ms, at least 10 samples) are not enforced, only positivity.
//!
//! # The initial limit lies within the bounds
//! Every algorithm's [`validate`](Limit::validate) refuses, with [`ConfigError::LimitRange`], an initial
//! limit outside the bounds the algorithm keeps its limit in: `min_limit <= initial_limit <= max_limit`
//! (Vegas: `1 <= initial_limit <= max_limit`; Fixed: `limit <= MAX_LIMIT`), so a node of a balancer never
//! starts outside them. Java's AIMD builder only warns, and Java reports such a limit until an update
//! moves it; here it is neither accepted nor clamped, but refused.
//!
//! Options for the algorithms' known weaknesses exist but are off by default, so the defaults stay
//! Netflix's: [`Gradient2Limit::drop_backoff`], [`VegasLimit::baseline_from_drops`],
//! [`AimdLimit::min_limit`] (documents Netflix's surprising default of 20), [`CiadLimit::fast_start`].
//!
//! # Concurrency
//! Java serialises every update with a monitor. Here [`Limit::update`] is lock-free: each algorithm's
//! state lives in a [`LimitState`] of atomic words, updated by compare-and-swap loops. Concurrent samples
//! may interleave, but every update of every word is a complete step of the algorithm computed from values
//! that word really held, and every estimate is clamped, so the limit always stays within the algorithm's
//! bounds and is never NaN or infinite. Algorithms whose state is one word (AIMD, CIAD) apply each sample
//! exactly once, as some serial order would.
//!
//! [ncl]: https://github.com/Netflix/concurrency-limits/tree/39c74f7ef47fb48cd605be98870b51896f4b2fae/concurrency-limits-core/src/main/java/com/netflix/concurrency/limits

mod aimd;
mod ciad;
mod fixed;
mod gradient;
mod gradient2;
#[cfg(feature = "knee")]
mod knee;
mod load;
mod measure;
#[cfg(any(feature = "ciad-latency", feature = "knee"))]
mod rtt;
mod state;
mod vegas;
#[cfg(feature = "windowed")]
mod windowed;

pub use aimd::AimdLimit;
pub use ciad::CiadLimit;
#[cfg(feature = "ciad-latency")]
pub use ciad::BASELINE_DRIFT_NS;
pub use fixed::FixedLimit;
pub use gradient::GradientLimit;
pub use gradient2::Gradient2Limit;
#[cfg(feature = "knee")]
pub use knee::{KneeLimit, KNEE_BASELINE_DRIFT_NS, KNEE_MAX_ARMED_NS};
pub use load::{InvalidLoad, ServerLoad};
pub use measure::QueueSize;
#[cfg(any(feature = "ciad-latency", feature = "knee"))]
pub use rtt::RTT_SMOOTHING;
pub use state::{LimitState, LIMIT_WORDS, PERCENTILE_CAPACITY};
pub use vegas::{VegasLimit, VegasStep, VegasThreshold};
#[cfg(feature = "windowed")]
pub use windowed::{SampleWindow, WindowedLimit};

use crate::error::ConfigError;

/// The largest concurrency limit a node can have (the limit is stored in 24 bits of the node's control word).
pub const MAX_LIMIT: u32 = (1 << 24) - 1;

/// One observation fed to a limit algorithm when a lease is released with an outcome its family feeds
/// the limiter (see [`Outcome`](crate::balance::Outcome)): a success (`dropped == false`), or a
/// timeout, an overload answer or, in the lowest-score family, an error (`dropped == true`; an error
/// also sets `failed`).
///
/// ```
/// use weir::limit::Sample;
/// // Acquired at t = 1 ms as the 3rd request in flight, released at t = 3.5 ms.
/// let s = Sample { rtt_ns: 2_500_000, inflight: 3, dropped: false, now_ns: 3_500_000, load: None, failed: false };
/// assert_eq!(s.now_ns - s.rtt_ns, 1_000_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    /// Round-trip time: release `now` minus acquire `now`, saturating at 0.
    pub rtt_ns: u64,
    /// Requests in flight on the node when this one was admitted, including itself (Netflix's semantics).
    pub inflight: u32,
    /// Whether the request timed out or was rejected for overload.
    pub dropped: bool,
    /// The release time, monotonic nanoseconds (Java's `startTime + rtt`). Only [`WindowedLimit`] reads
    /// it, to close its windows on sample timestamps rather than on a clock.
    pub now_ns: u64,
    /// The load the server reported with its answer, if it sent one
    /// ([`Balancer::release_loaded`](crate::Balancer::release_loaded)). Only [`KneeLimit`] reads it.
    pub load: Option<ServerLoad>,
    /// With `dropped`: the drop was the node's own error
    /// ([`Outcome::Failure`](crate::balance::Outcome::Failure): a 500, a reset), not a timeout or an
    /// overload answer. Only [`KneeLimit`] reads it: an error says nothing of how many calls the node
    /// can serve, so its cut is CIAD's, from the limit, not the overload's, to what was in flight.
    pub failed: bool,
}

/// A concurrency-limit algorithm. The parameters live in the implementing value (shared, read-only, in
/// the balancer's config); each node's mutable state lives in its own [`LimitState`].
///
/// The balancer calls [`reset`](Limit::reset) when a node is added, [`update`](Limit::update) on every
/// `Success` and `Dropped` release, and publishes the returned limit to the node's control word.
///
/// ```
/// use weir::limit::{Gradient2Limit, Limit, LimitState, Sample};
/// let g2 = Gradient2Limit::default();
/// g2.validate().unwrap();
/// let state = LimitState::new();
/// g2.reset(&state);
/// assert_eq!(g2.limit(&state), 20);
/// // Steady RTT and a full window: gradient 1, so the estimate grows by smoothing * queue = 0.8.
/// let s = Sample { rtt_ns: 1_000_000, inflight: 20, dropped: false, now_ns: 1_000_000, load: None, failed: false };
/// assert_eq!(g2.update(&state, &s, 0), 20); // 20.8
/// assert_eq!(g2.update(&state, &s, 0), 21); // 21.6
/// ```
pub trait Limit {
    /// The limit a fresh node starts with.
    fn initial_limit(&self) -> u32;
    /// Checks the parameters; called when a balancer is built.
    fn validate(&self) -> Result<(), ConfigError>;
    /// Puts a fresh node's state in place (called when a node is added; no concurrent samples then).
    fn reset(&self, state: &LimitState);
    /// Applies one sample; returns the limit to publish (already truncated and clamped, 0..=MAX_LIMIT).
    /// `random` is 64 random bits supplied by the caller for probe jitter (deterministic under a seed).
    /// Called concurrently from many threads for the same node: lock-free, CAS on the state words.
    /// Never panics, whatever the parameters and samples (unvalidated parameters give unspecified limits
    /// in 0..=MAX_LIMIT).
    fn update(&self, state: &LimitState, sample: &Sample, random: u64) -> u32;
    /// The current limit as the state says (for snapshots).
    fn limit(&self, state: &LimitState) -> u32;
}

/// The limit algorithms that a [`WindowedLimit`] can wrap: every algorithm except the wrapper itself.
///
/// ```
/// use weir::limit::{AimdLimit, InnerAlgorithm, Limit, LimitAlgorithm};
/// let inner = InnerAlgorithm::Aimd(AimdLimit::default());
/// // Every inner algorithm is also a top-level one.
/// assert_eq!(LimitAlgorithm::from(inner), LimitAlgorithm::Aimd(AimdLimit::default()));
/// assert_eq!(inner.initial_limit(), 20);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InnerAlgorithm {
    #[cfg(feature = "fixed")]
    /// [`FixedLimit`].
    Fixed(FixedLimit),
    #[cfg(feature = "aimd")]
    /// [`AimdLimit`].
    Aimd(AimdLimit),
    #[cfg(feature = "vegas")]
    /// [`VegasLimit`].
    Vegas(VegasLimit),
    #[cfg(feature = "gradient")]
    /// [`GradientLimit`].
    Gradient(GradientLimit),
    #[cfg(feature = "gradient2")]
    /// [`Gradient2Limit`].
    Gradient2(Gradient2Limit),
    #[cfg(feature = "ciad")]
    /// [`CiadLimit`].
    Ciad(CiadLimit),
    #[cfg(feature = "knee")]
    /// [`KneeLimit`].
    Knee(KneeLimit),
}

/// The limit algorithm every node of a balancer uses, chosen in [`Config`](crate::balance::Config).
///
/// ```
/// use weir::limit::{InnerAlgorithm, LimitAlgorithm, VegasLimit, WindowedLimit};
/// use weir::Config;
/// let config = Config {
///     limit: LimitAlgorithm::Windowed(WindowedLimit {
///         inner: InnerAlgorithm::Vegas(VegasLimit::default()),
///         ..WindowedLimit::default()
///     }),
///     ..Config::default()
/// };
/// assert!(config.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LimitAlgorithm {
    #[cfg(feature = "fixed")]
    /// A constant cap ([`FixedLimit`]; the original cascade's, with a cap of 100).
    Fixed(FixedLimit),
    #[cfg(feature = "aimd")]
    /// Additive increase, multiplicative decrease on drops and timeouts ([`AimdLimit`]).
    Aimd(AimdLimit),
    #[cfg(feature = "vegas")]
    /// TCP Vegas-style queue estimation ([`VegasLimit`]).
    Vegas(VegasLimit),
    #[cfg(feature = "gradient")]
    /// Netflix's first gradient algorithm ([`GradientLimit`]).
    Gradient(GradientLimit),
    #[cfg(feature = "gradient2")]
    /// Netflix's recommended gradient algorithm ([`Gradient2Limit`]).
    Gradient2(Gradient2Limit),
    #[cfg(feature = "ciad")]
    /// Cautious increase, aggressive decrease ([`CiadLimit`]); with a fast start, the default
    /// configuration's limit ([`LimitAlgorithm::default`]).
    Ciad(CiadLimit),
    #[cfg(feature = "knee")]
    /// A cap at the server's knee, read from its latency, which every client of the server sees
    /// ([`KneeLimit`]).
    Knee(KneeLimit),
    #[cfg(feature = "windowed")]
    /// Any of the above fed one aggregate sample per time window ([`WindowedLimit`]).
    Windowed(WindowedLimit),
}

impl From<InnerAlgorithm> for LimitAlgorithm {
    fn from(a: InnerAlgorithm) -> Self {
        match a {
            #[cfg(feature = "fixed")]
            InnerAlgorithm::Fixed(l) => LimitAlgorithm::Fixed(l),
            #[cfg(feature = "aimd")]
            InnerAlgorithm::Aimd(l) => LimitAlgorithm::Aimd(l),
            #[cfg(feature = "vegas")]
            InnerAlgorithm::Vegas(l) => LimitAlgorithm::Vegas(l),
            #[cfg(feature = "gradient")]
            InnerAlgorithm::Gradient(l) => LimitAlgorithm::Gradient(l),
            #[cfg(feature = "gradient2")]
            InnerAlgorithm::Gradient2(l) => LimitAlgorithm::Gradient2(l),
            #[cfg(feature = "ciad")]
            InnerAlgorithm::Ciad(l) => LimitAlgorithm::Ciad(l),
            #[cfg(feature = "knee")]
            InnerAlgorithm::Knee(l) => LimitAlgorithm::Knee(l),
        }
    }
}

impl LimitAlgorithm {
    /// A [`FixedLimit`]: no state, never changes, so a release has nothing to feed it.
    #[inline]
    // With `fixed` alone, the pattern is the only variant.
    #[allow(irrefutable_let_patterns)]
    pub(crate) fn is_fixed(&self) -> bool {
        #[cfg(feature = "fixed")]
        if let LimitAlgorithm::Fixed(_) = self {
            return true;
        }
        false
    }
}

#[cfg(feature = "ciad")]
impl Default for LimitAlgorithm {
    /// The default configuration's limit ([`Config::default()`](crate::Config::default)): dialogue's CIAD,
    /// starting at 20, with a fast start.
    ///
    /// ```
    /// use weir::limit::{CiadLimit, LimitAlgorithm};
    /// assert_eq!(LimitAlgorithm::default(), LimitAlgorithm::Ciad(CiadLimit { fast_start: true, ..CiadLimit::default() }));
    /// ```
    fn default() -> Self {
        LimitAlgorithm::Ciad(CiadLimit {
            fast_start: true,
            ..CiadLimit::default()
        })
    }
}

/// Forwards every [`Limit`] method to the variant's algorithm.
macro_rules! dispatch {
    ($ty:ident { $($feature:literal $variant:ident),* }) => {
        impl Limit for $ty {
            fn initial_limit(&self) -> u32 {
                match self { $(#[cfg(feature = $feature)] $ty::$variant(l) => l.initial_limit(),)* }
            }
            fn validate(&self) -> Result<(), ConfigError> {
                match self { $(#[cfg(feature = $feature)] $ty::$variant(l) => l.validate(),)* }
            }
            fn reset(&self, state: &LimitState) {
                match self { $(#[cfg(feature = $feature)] $ty::$variant(l) => l.reset(state),)* }
            }
            #[inline]
            fn update(&self, state: &LimitState, sample: &Sample, random: u64) -> u32 {
                match self { $(#[cfg(feature = $feature)] $ty::$variant(l) => l.update(state, sample, random),)* }
            }
            #[inline]
            fn limit(&self, state: &LimitState) -> u32 {
                match self { $(#[cfg(feature = $feature)] $ty::$variant(l) => l.limit(state),)* }
            }
        }
    };
}

dispatch!(InnerAlgorithm {
    "fixed" Fixed,
    "aimd" Aimd,
    "vegas" Vegas,
    "gradient" Gradient,
    "gradient2" Gradient2,
    "ciad" Ciad,
    "knee" Knee
});
dispatch!(LimitAlgorithm {
    "fixed" Fixed,
    "aimd" Aimd,
    "vegas" Vegas,
    "gradient" Gradient,
    "gradient2" Gradient2,
    "ciad" Ciad,
    "knee" Knee,
    "windowed" Windowed
});

/// Java's `(int) estimate`: truncation toward zero, saturating, NaN as 0; then capped at [`MAX_LIMIT`].
#[inline]
pub(crate) fn publish(estimate: f64) -> u32 {
    (estimate as u32).min(MAX_LIMIT)
}

/// Java's `Math.max(lo, Math.min(hi, x))`, except that a NaN `x` gives `lo` (never happens with valid
/// inputs; a guard, not a semantic).
#[inline]
pub(crate) fn clamp_f(x: f64, lo: f64, hi: f64) -> f64 {
    let v = x.min(hi).max(lo);
    if v.is_nan() {
        lo
    } else {
        v
    }
}

/// `⌊x⌋`, the same double as `libm::floor` for every `x` but `-0.0` (which gives `+0.0`): below 2^52 in
/// magnitude a conversion to an integer and back, one less where that rounded up (a negative `x`); from
/// 2^52 up every double is an integer already, and infinities and NaN come back as they are. Two
/// conversions, where `libm::floor` without SSE4.1's `roundsd` (x86-64's baseline) is a call of about a
/// dozen instructions, on every CIAD update.
#[cfg_attr(not(feature = "ciad"), allow(dead_code))]
#[inline]
pub(crate) fn floor(x: f64) -> f64 {
    if x.abs() < 4_503_599_627_370_496.0 {
        let t = (x as i64) as f64;
        if t > x {
            t - 1.0
        } else {
            t
        }
    } else {
        x
    }
}

/// The estimate an algorithm keeps in word 0 as `f64` bits.
#[inline]
pub(crate) fn load_estimate(state: &LimitState) -> f64 {
    state.load_f64(0)
}

/// A compare-and-swap loop on the `f64` estimate in word 0: `step` maps the current estimate to the next
/// (`None` = unchanged); a non-finite result is discarded. Returns the estimate after this sample.
#[inline]
pub(crate) fn step_estimate(state: &LimitState, mut step: impl FnMut(f64) -> Option<f64>) -> f64 {
    let mut after = 0.0;
    let r = state.update(0, |bits| {
        let e = f64::from_bits(bits);
        after = e;
        let next = step(e).filter(|n| n.is_finite())?;
        after = next;
        Some(next.to_bits())
    });
    match r {
        Ok(_) => after,
        Err(bits) => f64::from_bits(bits),
    }
}

/// Checks that a limit triple is usable: `min <= initial <= max <= MAX_LIMIT` (so `min <= max` too).
pub(crate) fn check_limits(initial: u32, min: u32, max: u32) -> Result<(), ConfigError> {
    if max > MAX_LIMIT || initial < min || initial > max {
        return Err(ConfigError::LimitRange);
    }
    Ok(())
}

/// Checks a smoothing factor: finite, in [0, 1] (written so that NaN fails).
pub(crate) fn check_smoothing(s: f64) -> Result<(), ConfigError> {
    if !(0.0..=1.0).contains(&s) {
        return Err(ConfigError::Smoothing);
    }
    Ok(())
}

/// Checks an RTT tolerance: finite and at least 1 (Java: `rttTolerance >= 1.0`).
pub(crate) fn check_tolerance(t: f64) -> Result<(), ConfigError> {
    if !(t >= 1.0 && t.is_finite()) {
        return Err(ConfigError::RttTolerance);
    }
    Ok(())
}

#[cfg(all(test, feature = "std"))]
mod props;

/// Helpers for the algorithms' tests.
#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn floor_is_libm_floor() {
        let two52 = 4_503_599_627_370_496.0f64;
        let same = |x: f64| assert_eq!(floor(x).to_bits(), libm::floor(x).to_bits(), "{x:e}");
        for x in [
            0.0,
            0.5,
            0.999_999_999_999_999_9,
            1.0,
            18.0,
            17.999_999_999_999_996,
            -0.5,
            -1.0,
            -1.5,
            two52 - 0.5,
            two52,
            two52 + 1.0,
            -two52 + 0.5,
            1e300,
            -1e300,
            f64::MAX,
            f64::MIN,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            same(x);
        }
        // The products a CIAD update floors: limits up to 2,000 in steps of 1/64, times some ratios.
        for k in 0..128_000u32 {
            for ratio in [0.5, 0.9, 0.999] {
                same(f64::from(k) / 64.0 * ratio);
            }
        }
        assert!(floor(f64::NAN).is_nan());
        assert_eq!(floor(-0.0).to_bits(), 0.0f64.to_bits());
    }

    /// `a` with its initial limit set to `initial` and its bounds to `[min, max]` (Fixed: the cap is
    /// `initial`, it has no bounds; Vegas: `max` only, its minimum is 1).
    pub(crate) fn with_limits(
        a: InnerAlgorithm,
        initial: u32,
        min: u32,
        max: u32,
    ) -> InnerAlgorithm {
        let mut a = a;
        match &mut a {
            InnerAlgorithm::Fixed(l) => l.limit = initial,
            InnerAlgorithm::Aimd(l) => {
                (l.initial_limit, l.min_limit, l.max_limit) = (initial, min, max)
            }
            InnerAlgorithm::Vegas(l) => (l.initial_limit, l.max_limit) = (initial, max),
            InnerAlgorithm::Gradient(l) => {
                (l.initial_limit, l.min_limit, l.max_limit) = (initial, min, max)
            }
            InnerAlgorithm::Gradient2(l) => {
                (l.initial_limit, l.min_limit, l.max_limit) = (initial, min, max)
            }
            InnerAlgorithm::Ciad(l) => {
                (l.initial_limit, l.min_limit, l.max_limit) = (initial, min, max)
            }
            InnerAlgorithm::Knee(l) => {
                (l.initial_limit, l.min_limit, l.max_limit) = (initial, min, max)
            }
        }
        a
    }

    /// Checks the rule `min_limit <= initial_limit <= max_limit` on `a` (valid as given), alone and
    /// wrapped in a [`WindowedLimit`]: for each `[min, max]` of `bounds`, both edges and the middle are
    /// accepted; one below `min`, one above `max` and `u32::MAX` are refused with `LimitRange`.
    pub(crate) fn check_start_rule(a: InnerAlgorithm, bounds: &[(u32, u32)]) {
        assert_eq!(a.validate(), Ok(()), "{a:?}");
        for &(min, max) in bounds {
            let inside = [min, max, min + (max - min) / 2].map(Some);
            let outside = [min.checked_sub(1), max.checked_add(1), Some(u32::MAX)];
            for initial in inside.into_iter().chain(outside).flatten() {
                let inner = with_limits(a, initial, min, max);
                let expected = if (min..=max).contains(&initial) {
                    Ok(())
                } else {
                    Err(ConfigError::LimitRange)
                };
                let windowed = WindowedLimit {
                    inner,
                    ..WindowedLimit::default()
                };
                for l in [
                    LimitAlgorithm::from(inner),
                    LimitAlgorithm::Windowed(windowed),
                ] {
                    assert_eq!(l.validate(), expected, "{l:?}");
                }
            }
        }
    }
}
