//! Client-side adaptive throttling (Google SRE book, ch. 21), lock-free, with time and randomness passed in.
//!
//! A client asks [`Throttle::allow`] before it sends a request and tells [`Throttle::accepted`] when the
//! backend accepted one (answered anything but "overloaded"). Over a rolling window (2 minutes by default)
//! it counts `requests` (every attempt, including those it rejected locally: the book's "preferred
//! behavior", so rejection rises while the backend keeps refusing) and `accepts`, and rejects a new request
//! locally with probability
//!
//! `p = max(0, (requests − K × accepts) / (requests + 1))`, optionally capped at `max_rejection`.
//!
//! With `K = 2` (the book's preference) the client sends up to twice what the backend accepts; a lower `K`
//! (1.1) is more aggressive.
//!
//! # Criticality
//! Statistics are kept per [`Criticality`] (the book's four levels). Lower criticalities are rejected
//! first: for criticality `c`, `requests` also counts every request of a *higher* criticality that was not
//! accepted (`requests_h − accepts_h`, never negative), and `accepts` is `c`'s own. So when CRITICAL
//! traffic starts failing, SHEDDABLE traffic is throttled harder than CRITICAL, and CRITICAL_PLUS only by
//! its own failures. (This spill-over is Bulwark's rule, itself from Braden Walker's `backpressure`.)
//!
//! # Retries
//! [`Throttle::allow_retry`] admits a retry only while the client's retries in the window are below
//! `retry_ratio` (10 % by default) of its requests in the window, all criticalities together (the book's
//! per-client retry budget: with at most 3 attempts per request as well, about 1.1× load in the worst
//! case). A retry within budget is then throttled like any request, and counts as one.
//!
//! # Randomness and cost
//! A decision draws one `f64` from the caller's generator, and only when `p > 0`: with no throttling the
//! generator is untouched. Each decision sums the window: `buckets` × 2 words per criticality up to the
//! request's own (120 × 4 for CRITICAL by default), all 9 lanes for a retry.
//!
//! # Memory ordering
//! All counters are independent statistics (`Relaxed`); the window has its own protocol (`window.rs`).

use crate::internal::sync::{AtomicU64, Ordering::Relaxed};
use crate::internal::time::saturating_ns;
use crate::overload::window::{Window, MAX_WINDOW_BUCKETS};
use core::fmt;
use core::time::Duration;
use fastrand::Rng;

/// Window lanes: requests and accepts per criticality, then retries.
const LANES: usize = 9;
const RETRY_LANE: usize = 8;

/// How much a request matters, from the SRE book; lower criticalities are throttled first.
///
/// ```
/// use weir::overload::Criticality;
/// assert_eq!(Criticality::default(), Criticality::Critical);
/// assert_eq!(Criticality::from_code(3), Some(Criticality::Sheddable));
/// assert_eq!(Criticality::Sheddable.to_string(), "SHEDDABLE");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Criticality {
    /// The most critical: failures have serious user impact.
    CriticalPlus = 0,
    /// The default for production requests.
    #[default]
    Critical = 1,
    /// Partial unavailability expected; the default for batch jobs.
    SheddablePlus = 2,
    /// Frequent partial and occasional full unavailability expected.
    Sheddable = 3,
}

impl Criticality {
    /// All four, most critical first (their codes are their indices).
    pub const ALL: [Criticality; 4] = [
        Criticality::CriticalPlus,
        Criticality::Critical,
        Criticality::SheddablePlus,
        Criticality::Sheddable,
    ];

    /// The criticality with this code (0 = CRITICAL_PLUS … 3 = SHEDDABLE), for bindings.
    ///
    /// ```
    /// assert_eq!(weir::overload::Criticality::from_code(4), None);
    /// ```
    pub fn from_code(code: u8) -> Option<Criticality> {
        Criticality::ALL.get(usize::from(code)).copied()
    }

    /// The SRE book's name, e.g. `"CRITICAL_PLUS"`.
    ///
    /// ```
    /// assert_eq!(weir::overload::Criticality::SheddablePlus.name(), "SHEDDABLE_PLUS");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Criticality::CriticalPlus => "CRITICAL_PLUS",
            Criticality::Critical => "CRITICAL",
            Criticality::SheddablePlus => "SHEDDABLE_PLUS",
            Criticality::Sheddable => "SHEDDABLE",
        }
    }
}

impl fmt::Display for Criticality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The SRE book's equation 21-1: `max(0, (requests − k × accepts) / (requests + 1))`.
///
/// ```
/// use weir::overload::rejection_probability;
/// assert_eq!(rejection_probability(100, 50, 2.0), 0.0);
/// assert!((rejection_probability(100, 25, 2.0) - 0.49505).abs() < 1e-5);
/// assert!((rejection_probability(100, 50, 1.1) - 0.44554).abs() < 1e-5);
/// ```
pub fn rejection_probability(requests: u64, accepts: u64, k: f64) -> f64 {
    let r = requests as f64;
    let p = (r - k * accepts as f64) / (r + 1.0);
    // `max` also maps a NaN (from a NaN k) to 0: never reject on nonsense.
    p.max(0.0)
}

/// Configuration of a [`Throttle`]; the defaults are the SRE book's.
///
/// ```
/// let c = weir::overload::ThrottleConfig::default();
/// assert_eq!((c.window_ns, c.buckets, c.k, c.max_rejection, c.retry_ratio), (120_000_000_000, 120, 2.0, 1.0, 0.1));
/// assert!(c.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ThrottleConfig {
    /// The rolling window's length in nanoseconds (default 2 minutes; or [`ThrottleConfig::window`]).
    pub window_ns: u64,
    /// Buckets in the window, 1..=[`MAX_WINDOW_BUCKETS`] (default 120, so 1 s each).
    pub buckets: u32,
    /// The accepts multiplier `K`, finite and at least 1 (default 2; 1.1 is aggressive).
    pub k: f64,
    /// The largest rejection probability, in [0, 1] (default 1: no cap). Several libraries use 0.9 so that
    /// some traffic always reaches the backend.
    pub max_rejection: f64,
    /// Retries are allowed while they are below this fraction of requests, in [0, 1] (default 0.1).
    pub retry_ratio: f64,
}

impl Default for ThrottleConfig {
    fn default() -> Self {
        ThrottleConfig {
            window_ns: 120_000_000_000,
            buckets: 120,
            k: 2.0,
            max_rejection: 1.0,
            retry_ratio: 0.1,
        }
    }
}

impl ThrottleConfig {
    /// Sets [`window_ns`](Self::window_ns), the rolling window's length, from a [`Duration`]. A duration
    /// longer than `u64::MAX` ns (about 584 years) saturates to `u64::MAX`; validation checks the
    /// result as any `window_ns` (at least 1 ns per bucket).
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::overload::ThrottleConfig;
    /// let c = ThrottleConfig::default().window(Duration::from_secs(60));
    /// assert_eq!(c.window_ns, 60_000_000_000);
    /// assert!(c.validate().is_ok());
    /// assert_eq!(c.window(Duration::MAX).window_ns, u64::MAX);
    /// ```
    #[must_use]
    pub const fn window(self, window: Duration) -> Self {
        ThrottleConfig {
            window_ns: saturating_ns(window),
            ..self
        }
    }

    /// Checks every parameter and returns the first problem found.
    ///
    /// ```
    /// use weir::{overload::ThrottleConfig, overload::ThrottleConfigError};
    /// let bad = ThrottleConfig { k: 0.5, ..ThrottleConfig::default() };
    /// assert_eq!(bad.validate(), Err(ThrottleConfigError::K));
    /// ```
    pub fn validate(&self) -> Result<(), ThrottleConfigError> {
        if self.buckets == 0 || self.buckets as usize > MAX_WINDOW_BUCKETS {
            return Err(ThrottleConfigError::Buckets);
        }
        if self.window_ns / u64::from(self.buckets) == 0 {
            return Err(ThrottleConfigError::Window);
        }
        if !(self.k.is_finite() && self.k >= 1.0) {
            return Err(ThrottleConfigError::K);
        }
        if !(self.max_rejection >= 0.0 && self.max_rejection <= 1.0) {
            return Err(ThrottleConfigError::MaxRejection);
        }
        if !(self.retry_ratio >= 0.0 && self.retry_ratio <= 1.0) {
            return Err(ThrottleConfigError::RetryRatio);
        }
        Ok(())
    }
}

/// A [`ThrottleConfig`] that was rejected.
///
/// ```
/// use weir::{overload::ThrottleConfig, overload::ThrottleConfigError};
/// let e = ThrottleConfig { buckets: 0, ..ThrottleConfig::default() }.validate().unwrap_err();
/// assert_eq!(e, ThrottleConfigError::Buckets);
/// assert_eq!(e.to_string(), "throttle buckets must be between 1 and MAX_WINDOW_BUCKETS");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThrottleConfigError {
    /// `buckets` must be between 1 and [`MAX_WINDOW_BUCKETS`].
    Buckets,
    /// `window_ns / buckets` must be at least 1 ns.
    Window,
    /// `k` must be finite and at least 1.
    K,
    /// `max_rejection` must be in [0, 1] (not NaN).
    MaxRejection,
    /// `retry_ratio` must be in [0, 1] (not NaN).
    RetryRatio,
}

impl fmt::Display for ThrottleConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ThrottleConfigError::Buckets => {
                "throttle buckets must be between 1 and MAX_WINDOW_BUCKETS"
            }
            ThrottleConfigError::Window => "throttle window_ns / buckets must be at least 1 ns",
            ThrottleConfigError::K => "throttle k must be finite and >= 1",
            ThrottleConfigError::MaxRejection => "throttle max_rejection must be in [0, 1]",
            ThrottleConfigError::RetryRatio => "throttle retry_ratio must be in [0, 1]",
        })
    }
}

/// A request rejected locally by [`Throttle::allow`]: do not send it, and do not retry it.
///
/// ```
/// use weir::{overload::Criticality, Throttle, overload::ThrottleConfig};
/// let t = Throttle::new(ThrottleConfig::default()).unwrap();
/// let mut rng = weir::Rng::with_seed(2);
/// let e = (0..100).find_map(|_| t.allow(Criticality::Sheddable, 0, &mut rng).err()).unwrap();
/// assert_eq!(e.criticality, Criticality::Sheddable);
/// assert!(e.probability > 0.0 && e.probability < 1.0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throttled {
    /// The request's criticality.
    pub criticality: Criticality,
    /// The rejection probability it was rejected with.
    pub probability: f64,
}

impl fmt::Display for Throttled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "throttled locally: the backend is rejecting requests; {} requests are dropped with probability {:.3}",
            self.criticality, self.probability
        )
    }
}

/// Why [`Throttle::allow_retry`] refused a retry.
///
/// ```
/// let e = weir::overload::RetryDenied::Budget { retries: 3, requests: 30 };
/// assert_eq!(e.to_string(), "retry budget exhausted: 3 retries for 30 requests in the window");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum RetryDenied {
    /// Retries are already at `retry_ratio` of requests in the window; not counted as a request.
    Budget {
        /// Retries in the window.
        retries: u64,
        /// Requests in the window, all criticalities.
        requests: u64,
    },
    /// Within budget, but throttled like any request (and counted as one).
    Throttled(Throttled),
}

impl fmt::Display for RetryDenied {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryDenied::Budget { retries, requests } => write!(
                f,
                "retry budget exhausted: {retries} retries for {requests} requests in the window"
            ),
            RetryDenied::Throttled(t) => write!(f, "retry {t}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ThrottleConfigError {}
#[cfg(feature = "std")]
impl std::error::Error for Throttled {}
#[cfg(feature = "std")]
impl std::error::Error for RetryDenied {}

/// What a [`Throttle`] has counted: totals since construction and the window at the time asked.
///
/// ```
/// let t = weir::Throttle::new(weir::overload::ThrottleConfig::default()).unwrap();
/// let st = t.stats(0);
/// assert_eq!(st.total_requests, [0; 4]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ThrottleStats {
    /// Requests per criticality (index = code), including local rejections and retries, since construction.
    pub total_requests: [u64; 4],
    /// Accepts reported per criticality since construction.
    pub total_accepts: [u64; 4],
    /// Local rejections per criticality since construction (retries included).
    pub total_throttled: [u64; 4],
    /// Retries admitted since construction.
    pub total_retries: u64,
    /// Retries refused for the budget since construction.
    pub total_retries_denied: u64,
    /// Requests per criticality in the window.
    pub window_requests: [u64; 4],
    /// Accepts per criticality in the window.
    pub window_accepts: [u64; 4],
    /// Retries in the window.
    pub window_retries: u64,
}

/// The SRE book's adaptive throttle, with per-criticality statistics and a retry budget. Thread-safe:
/// share it by reference; every method takes `&self`.
///
/// ```
/// use weir::{overload::Criticality, Throttle, overload::ThrottleConfig};
///
/// let throttle = Throttle::new(ThrottleConfig::default()).unwrap();
/// let mut rng = weir::Rng::with_seed(7); // one per thread
/// let now = 1_000_000_000;
/// match throttle.allow(Criticality::Critical, now, &mut rng) {
///     Ok(()) => {
///         let backend_accepted = true; // ... send it; false if the answer was "overloaded" ...
///         if backend_accepted {
///             throttle.accepted(Criticality::Critical, now + 5_000_000);
///         }
///     }
///     Err(throttled) => { /* fail the request locally */ let _ = throttled; }
/// }
/// assert_eq!(throttle.probability(Criticality::Critical, now), 0.0);
/// ```
#[derive(Debug)]
pub struct Throttle {
    config: ThrottleConfig,
    window: Window<LANES>,
    requests: [AtomicU64; 4],
    accepts: [AtomicU64; 4],
    throttled: [AtomicU64; 4],
    retries: AtomicU64,
    retries_denied: AtomicU64,
}

fn counters() -> [AtomicU64; 4] {
    [
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
        AtomicU64::new(0),
    ]
}

fn load4(a: &[AtomicU64; 4]) -> [u64; 4] {
    // Relaxed: statistics.
    [
        a[0].load(Relaxed),
        a[1].load(Relaxed),
        a[2].load(Relaxed),
        a[3].load(Relaxed),
    ]
}

impl Throttle {
    /// Builds a throttle, or says which parameter is wrong.
    ///
    /// ```
    /// use weir::{Throttle, overload::ThrottleConfig, overload::ThrottleConfigError};
    /// let nan = ThrottleConfig { max_rejection: f64::NAN, ..ThrottleConfig::default() };
    /// assert_eq!(Throttle::new(nan).unwrap_err(), ThrottleConfigError::MaxRejection);
    /// ```
    pub fn new(config: ThrottleConfig) -> Result<Self, ThrottleConfigError> {
        config.validate()?;
        let window =
            Window::new(config.buckets, config.window_ns).ok_or(ThrottleConfigError::Window)?;
        Ok(Throttle {
            config,
            window,
            requests: counters(),
            accepts: counters(),
            throttled: counters(),
            retries: AtomicU64::new(0),
            retries_denied: AtomicU64::new(0),
        })
    }

    /// The configuration this throttle was built with.
    ///
    /// ```
    /// let t = weir::Throttle::new(weir::overload::ThrottleConfig::default()).unwrap();
    /// assert_eq!(t.config().k, 2.0);
    /// ```
    pub fn config(&self) -> &ThrottleConfig {
        &self.config
    }

    /// The probability that a request of criticality `c` is rejected at `now`.
    ///
    /// ```
    /// use weir::overload::{Criticality::*, ThrottleConfig};
    /// use weir::Throttle;
    /// let t = Throttle::new(ThrottleConfig::default()).unwrap();
    /// let mut rng = weir::Rng::with_seed(1);
    /// for _ in 0..100 {
    ///     let _ = t.allow(Critical, 0, &mut rng); // the backend accepts none of them
    /// }
    /// assert!((t.probability(Critical, 0) - 100.0 / 101.0).abs() < 1e-12);
    /// // Lower criticalities also count CRITICAL's failures; higher ones do not.
    /// assert!((t.probability(Sheddable, 0) - 100.0 / 101.0).abs() < 1e-12);
    /// assert_eq!(t.probability(CriticalPlus, 0), 0.0);
    /// ```
    pub fn probability(&self, c: Criticality, now: u64) -> f64 {
        // Only the lanes of `c` and the criticalities above it.
        let upto = 2 * c as usize + 2;
        self.probability_in(&self.window.sums(now, false, upto), c)
    }

    fn probability_in(&self, sums: &[u64; LANES], c: Criticality) -> f64 {
        let i = c as usize;
        let mut requests = sums[2 * i];
        for h in 0..i {
            requests = requests.saturating_add(sums[2 * h].saturating_sub(sums[2 * h + 1]));
        }
        let p = rejection_probability(requests, sums[2 * i + 1], self.config.k);
        p.min(self.config.max_rejection)
    }

    /// Decides whether to send a request of criticality `c` at `now`, and counts it as a request either
    /// way. Draws from `rng` only when the rejection probability is above 0.
    ///
    /// ```
    /// use weir::{overload::Criticality, Throttle, overload::ThrottleConfig};
    /// let t = Throttle::new(ThrottleConfig { max_rejection: 0.5, ..ThrottleConfig::default() }).unwrap();
    /// let mut rng = weir::Rng::with_seed(3);
    /// let rejected = (0..1000).filter(|_| t.allow(Criticality::Critical, 0, &mut rng).is_err()).count();
    /// assert!((400..600).contains(&rejected), "{rejected}"); // capped at 50 %
    /// ```
    pub fn allow(&self, c: Criticality, now: u64, rng: &mut Rng) -> Result<(), Throttled> {
        let p = self.probability(c, now);
        self.decide(now, c, p, rng, false)
    }

    /// Decides whether to send a retry of a request of criticality `c` at `now`: refused without being
    /// counted if the retry budget is spent, otherwise decided and counted as [`Throttle::allow`] does.
    ///
    /// ```
    /// use weir::{overload::Criticality, overload::RetryDenied, Throttle, overload::ThrottleConfig};
    /// let t = Throttle::new(ThrottleConfig::default()).unwrap();
    /// let mut rng = weir::Rng::with_seed(3);
    /// for _ in 0..10 {
    ///     t.allow(Criticality::Critical, 0, &mut rng).unwrap();
    ///     t.accepted(Criticality::Critical, 0);
    /// }
    /// t.allow_retry(Criticality::Critical, 0, &mut rng).unwrap(); // 0 retries < 10% of 10 requests
    /// t.allow_retry(Criticality::Critical, 0, &mut rng).unwrap(); // 1 < 10% of 11
    /// assert_eq!(
    ///     t.allow_retry(Criticality::Critical, 0, &mut rng),
    ///     Err(RetryDenied::Budget { retries: 2, requests: 12 }) // 2 is not below 10% of 12
    /// );
    /// ```
    pub fn allow_retry(&self, c: Criticality, now: u64, rng: &mut Rng) -> Result<(), RetryDenied> {
        let sums = self.window.sums(now, false, LANES);
        let requests = (0..4).fold(0u64, |a, i| a.saturating_add(sums[2 * i]));
        let retries = sums[RETRY_LANE];
        // retry_ratio is validated (not NaN), so `>=` is the exact negation of "below the budget".
        if retries as f64 >= self.config.retry_ratio * requests as f64 {
            // Relaxed: statistics.
            self.retries_denied.fetch_add(1, Relaxed);
            return Err(RetryDenied::Budget { retries, requests });
        }
        let p = self.probability_in(&sums, c);
        self.decide(now, c, p, rng, true)
            .map_err(RetryDenied::Throttled)
    }

    fn decide(
        &self,
        now: u64,
        c: Criticality,
        p: f64,
        rng: &mut Rng,
        retry: bool,
    ) -> Result<(), Throttled> {
        let i = c as usize;
        let reject = p > 0.0 && rng.f64() < p;
        let mut lanes = [0u64; LANES];
        lanes[2 * i] = 1;
        if retry && !reject {
            lanes[RETRY_LANE] = 1;
        }
        self.window.add(now, lanes);
        // Relaxed: statistics.
        self.requests[i].fetch_add(1, Relaxed);
        if reject {
            self.throttled[i].fetch_add(1, Relaxed);
            return Err(Throttled {
                criticality: c,
                probability: p,
            });
        }
        if retry {
            self.retries.fetch_add(1, Relaxed);
        }
        Ok(())
    }

    /// Records that the backend accepted a request of criticality `c` (it answered with anything but an
    /// overload rejection), at `now`.
    ///
    /// ```
    /// use weir::{overload::Criticality, Throttle, overload::ThrottleConfig};
    /// let t = Throttle::new(ThrottleConfig::default()).unwrap();
    /// t.accepted(Criticality::Sheddable, 0);
    /// assert_eq!(t.stats(0).window_accepts, [0, 0, 0, 1]);
    /// ```
    pub fn accepted(&self, c: Criticality, now: u64) {
        let i = c as usize;
        let mut lanes = [0u64; LANES];
        lanes[2 * i + 1] = 1;
        self.window.add(now, lanes);
        // Relaxed: statistics.
        self.accepts[i].fetch_add(1, Relaxed);
    }

    /// Totals since construction and the window at `now`.
    ///
    /// ```
    /// use weir::{overload::Criticality, Throttle, overload::ThrottleConfig};
    /// let t = Throttle::new(ThrottleConfig::default()).unwrap();
    /// t.allow(Criticality::Critical, 0, &mut weir::Rng::with_seed(1)).unwrap();
    /// let st = t.stats(0);
    /// assert_eq!((st.total_requests[1], st.window_requests[1]), (1, 1));
    /// // Two minutes later the window has forgotten it; the totals have not.
    /// let st = t.stats(120_000_000_000);
    /// assert_eq!((st.total_requests[1], st.window_requests[1]), (1, 0));
    /// ```
    pub fn stats(&self, now: u64) -> ThrottleStats {
        let sums = self.window.sums(now, false, LANES);
        let lane = |o: usize| [sums[o], sums[2 + o], sums[4 + o], sums[6 + o]];
        // Relaxed: statistics.
        ThrottleStats {
            total_requests: load4(&self.requests),
            total_accepts: load4(&self.accepts),
            total_throttled: load4(&self.throttled),
            total_retries: self.retries.load(Relaxed),
            total_retries_denied: self.retries_denied.load(Relaxed),
            window_requests: lane(0),
            window_accepts: lane(1),
            window_retries: sums[RETRY_LANE],
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use Criticality::*;

    const SEC: u64 = 1_000_000_000;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-6
    }

    /// Equation 21-1 of the SRE book's chapter 21, "Handling Overload"
    /// (<https://sre.google/sre-book/handling-overload/#eq2101>), worked out by hand at a few points.
    #[test]
    fn sre_vectors() {
        assert_eq!(rejection_probability(100, 50, 2.0), 0.0);
        assert!(close(rejection_probability(100, 25, 2.0), 0.49505));
        assert!(close(rejection_probability(100, 0, 2.0), 0.9901));
        assert!(close(rejection_probability(120, 40, 2.0), 0.33058));
        assert!(close(rejection_probability(100, 50, 1.1), 0.44554));
        assert_eq!(rejection_probability(0, 0, 2.0), 0.0);
        assert_eq!(rejection_probability(10, 0, f64::NAN), 0.0);
    }

    /// Records `requests` requests (never rejected: p is 0 while recording through a fresh throttle is
    /// not guaranteed, so write the window directly) and `accepts` accepts for `c` at `now`.
    fn fill(t: &Throttle, now: u64, c: Criticality, requests: u64, accepts: u64) {
        let mut lanes = [0u64; LANES];
        lanes[2 * c as usize] = requests;
        lanes[2 * c as usize + 1] = accepts;
        t.window.add(now, lanes);
    }

    #[test]
    fn sre_vectors_through_the_window() {
        for (r, a, k, want) in [
            (100, 50, 2.0, 0.0),
            (100, 25, 2.0, 0.49505),
            (100, 0, 2.0, 0.9901),
            (120, 40, 2.0, 0.33058),
            (100, 50, 1.1, 0.44554),
        ] {
            let t = Throttle::new(ThrottleConfig {
                k,
                ..ThrottleConfig::default()
            })
            .unwrap();
            fill(&t, 10 * SEC, Critical, r, a);
            assert!(
                close(t.probability(Critical, 10 * SEC), want),
                "{r} {a} {k}"
            );
            // Still there at the window's last bucket; gone once it leaves.
            assert!(close(t.probability(Critical, 129 * SEC), want));
            assert_eq!(t.probability(Critical, 130 * SEC), 0.0);
        }
    }

    #[test]
    fn lower_criticalities_are_rejected_first() {
        let t = Throttle::new(ThrottleConfig::default()).unwrap();
        fill(&t, 0, Critical, 100, 40); // 60 CRITICAL requests not accepted
        fill(&t, 0, Sheddable, 100, 40);
        let p = |c| t.probability(c, 0);
        assert_eq!(p(CriticalPlus), 0.0);
        assert!(close(p(Critical), 20.0 / 101.0));
        // SHEDDABLE_PLUS has no traffic of its own: CRITICAL's 60 failures, no accepts.
        assert!(close(p(SheddablePlus), 60.0 / 61.0));
        // SHEDDABLE: its own 100 + CRITICAL's 60, 40 accepts.
        assert!(close(p(Sheddable), 80.0 / 161.0));
        assert!(p(CriticalPlus) < p(Critical) && p(Critical) < p(Sheddable));
    }

    #[test]
    fn cap_limits_rejection() {
        let t = Throttle::new(ThrottleConfig {
            max_rejection: 0.9,
            ..ThrottleConfig::default()
        })
        .unwrap();
        fill(&t, 0, Critical, 1000, 0);
        assert_eq!(t.probability(Critical, 0), 0.9);
        let mut rng = Rng::with_seed(11);
        let sent = (0..10_000)
            .filter(|_| t.allow(Critical, 0, &mut rng).is_ok())
            .count();
        assert!((900..1100).contains(&sent), "{sent}");
    }

    #[test]
    fn requests_keep_counting_while_rejected() {
        // Beam's vectors: no throttling at first; all failing → p > 0; then all succeeding → p = 0.
        let t = Throttle::new(ThrottleConfig {
            window_ns: 60 * SEC,
            buckets: 60,
            ..ThrottleConfig::default()
        })
        .unwrap();
        let mut rng = Rng::with_seed(5);
        for i in 0..20 {
            t.allow(Critical, i * SEC / 10, &mut rng).unwrap();
            t.accepted(Critical, i * SEC / 10);
        }
        assert_eq!(t.probability(Critical, 2 * SEC), 0.0);
        let mut now = 2 * SEC;
        let mut throttled = 0;
        for _ in 0..600 {
            now += SEC / 10;
            throttled += t.allow(Critical, now, &mut rng).is_err() as u32;
        }
        assert!(t.probability(Critical, now) > 0.9);
        assert!(throttled > 400, "{throttled}");
        let st = t.stats(now);
        assert_eq!(st.total_requests[1], 620); // rejected requests count too
        assert_eq!(st.total_throttled[1], u64::from(throttled));
        // Another minute with every request accepted (Beam's vector accepts each one, sent or not): the
        // failures leave the window and throttling stops.
        for _ in 0..600 {
            now += SEC / 10;
            let _ = t.allow(Critical, now, &mut rng);
            t.accepted(Critical, now);
        }
        assert_eq!(t.probability(Critical, now), 0.0);
        assert!(t.allow(Critical, now, &mut rng).is_ok());
    }

    #[test]
    fn a_wild_now_misleads_only_until_the_next_sane_call() {
        const DAY: u64 = 86_400 * SEC;
        let config = ThrottleConfig {
            window_ns: 10 * SEC,
            buckets: 10,
            ..ThrottleConfig::default()
        };
        let t0 = 1000 * SEC;
        // Sane traffic at second `i`: `(requests, accepts)`, so that the probability moves as it ages.
        let traffic = |i: u64| (20 + i * 7 % 11, i * 3 % 8);
        for wild in [u64::MAX, t0 + 3 * DAY] {
            let t = Throttle::new(config).unwrap();
            // Sees only the sane traffic after the wild calls.
            let fresh = Throttle::new(config).unwrap();
            let mut rng = Rng::with_seed(4);
            // The window's past: 100 requests, none accepted.
            for _ in 0..100 {
                let _ = t.allow(Critical, t0, &mut rng);
            }
            assert!(close(t.probability(Critical, t0), 100.0 / 101.0));
            let _ = t.allow(Critical, wild, &mut rng);
            t.accepted(Critical, wild);
            // Until the next sane call, a sane time reads a fresh window.
            assert_eq!(t.probability(Critical, t0 + SEC), 0.0);
            assert_eq!(t.stats(t0 + SEC).window_requests, [0; 4]);
            for i in 1..=25u64 {
                let at = t0 + i * SEC;
                if i <= 5 {
                    let (requests, accepts) = traffic(i);
                    for th in [&t, &fresh] {
                        fill(th, at, Critical, requests, accepts);
                    }
                }
                // Driven by the sane traffic only, and decaying as it leaves the window.
                let in_window = |i: u64, j: u64| j <= i && j + 10 > i;
                let (r, a) = (1..=5)
                    .filter(|&j| in_window(i, j))
                    .map(traffic)
                    .fold((0, 0), |(r, a), (x, y)| (r + x, a + y));
                let p = t.probability(Critical, at);
                assert_eq!(p, rejection_probability(r, a, 2.0), "{i}");
                assert_eq!(p, fresh.probability(Critical, at), "{i}");
                assert_eq!(t.stats(at).window_requests[1], r);
                assert_eq!(t.stats(at).window_accepts[1], a);
            }
            assert_eq!(t.probability(Critical, t0 + 25 * SEC), 0.0);
        }
    }

    #[test]
    fn no_draw_without_rejection() {
        let t = Throttle::new(ThrottleConfig::default()).unwrap();
        let mut rng = Rng::with_seed(9);
        let before = rng.clone();
        t.allow(Critical, 0, &mut rng).unwrap();
        assert_eq!(rng, before);
    }

    #[test]
    fn retry_budget() {
        let t = Throttle::new(ThrottleConfig::default()).unwrap();
        let mut rng = Rng::with_seed(1);
        for _ in 0..30 {
            t.allow(Critical, 0, &mut rng).unwrap();
            t.accepted(Critical, 0);
        }
        // Retries vs 10% of requests: 0 < 3, 1 < 3.1, 2 < 3.2, 3 < 3.3, then 4 >= 3.4: refused.
        let mut ok = 0;
        for _ in 0..10 {
            match t.allow_retry(Critical, 0, &mut rng) {
                Ok(()) => ok += 1,
                Err(RetryDenied::Budget { retries, requests }) => {
                    assert_eq!((retries, requests), (4, 34));
                }
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(ok, 4);
        let st = t.stats(0);
        assert_eq!(
            (st.total_retries, st.total_retries_denied, st.window_retries),
            (4, 6, 4)
        );
        assert_eq!(st.total_requests[1], 34); // refused retries are not requests
                                              // Retry ratio 0: never.
        let none = Throttle::new(ThrottleConfig {
            retry_ratio: 0.0,
            ..ThrottleConfig::default()
        })
        .unwrap();
        none.allow(Critical, 0, &mut rng).unwrap();
        assert!(none.allow_retry(Critical, 0, &mut rng).is_err());
    }

    #[test]
    fn bad_config_is_rejected() {
        let d = ThrottleConfig::default();
        let cases = [
            (
                ThrottleConfig { buckets: 0, ..d },
                ThrottleConfigError::Buckets,
            ),
            (
                ThrottleConfig { buckets: 129, ..d },
                ThrottleConfigError::Buckets,
            ),
            (
                ThrottleConfig {
                    window_ns: 119,
                    ..d
                },
                ThrottleConfigError::Window,
            ),
            (ThrottleConfig { k: 0.99, ..d }, ThrottleConfigError::K),
            (ThrottleConfig { k: f64::NAN, ..d }, ThrottleConfigError::K),
            (
                ThrottleConfig {
                    k: f64::INFINITY,
                    ..d
                },
                ThrottleConfigError::K,
            ),
            (
                ThrottleConfig {
                    max_rejection: -0.1,
                    ..d
                },
                ThrottleConfigError::MaxRejection,
            ),
            (
                ThrottleConfig {
                    max_rejection: 1.5,
                    ..d
                },
                ThrottleConfigError::MaxRejection,
            ),
            (
                ThrottleConfig {
                    retry_ratio: f64::NAN,
                    ..d
                },
                ThrottleConfigError::RetryRatio,
            ),
        ];
        for (c, e) in cases {
            assert_eq!(Throttle::new(c).unwrap_err(), e, "{c:?}");
        }
        assert!(Throttle::new(ThrottleConfig { k: 1.0, ..d }).is_ok());
    }
}
