//! A retry budget shared by a balancer's callers (Finagle's `RetryBudget`, Envoy's retry budget),
//! lock-free, with time passed in.
//!
//! Each request is counted once with [`RetryBudget::request`]; before a retry, [`RetryBudget::try_retry`]
//! admits it while the retries in the rolling window (10 s by default) are fewer than
//!
//! `ratio × requests + per_second × window_seconds`
//!
//! (20 % and 10 per second by default: Finagle's `RetryBudget` defaults, a deposit of 0.2 per request
//! and a reserve of 10 per second over a 10 s window). The ratio bounds the extra load retries add when
//! a backend fails (at most 1.2× the requests); the floor lets a client with little traffic retry at all.
//! A refused retry is not counted, and the caller answers its request with the failure it had.
//!
//! Which requests may be sent twice (are idempotent) is the caller's decision, as is how many tries one
//! request gets: the budget only bounds the retries of all the callers together. Between tries, a
//! [`Backoff`](crate::Backoff) gives the delay; [`Balancer::acquire_excluding`] sends the retry to
//! another node than those tried.
//!
//! # Cost and precision
//! A request is one window write (two lanes); a retry's decision sums the window (`buckets` × 2 words).
//! The decision reads, then writes: callers racing for the last retries of the budget can each be
//! admitted, so the budget can be passed by as many retries as there are concurrent callers at that
//! moment, never more.
//!
//! # Memory ordering
//! All counters are independent statistics (`Relaxed`); the window has its own protocol (`window.rs`).
//!
//! [`Balancer::acquire_excluding`]: crate::Balancer::acquire_excluding

use crate::internal::sync::{AtomicU64, Ordering::Relaxed};
use crate::internal::time::saturating_ns;
use crate::overload::window::{Window, MAX_WINDOW_BUCKETS};
use core::fmt;
use core::time::Duration;

/// Window lanes: requests, then retries (a reader of the retries also sees their requests).
const LANES: usize = 2;
const REQUESTS: usize = 0;
const RETRIES: usize = 1;

/// The largest [`RetryBudgetConfig::ratio`]: 1000 retries per request (Finagle's bound).
pub const MAX_RETRY_RATIO: f64 = 1000.0;
/// The largest [`RetryBudgetConfig::per_second`]: a billion retries a second.
pub const MAX_RETRIES_PER_SECOND: f64 = 1e9;

/// Configuration of a [`RetryBudget`]; the defaults are Finagle's.
///
/// ```
/// let c = weir::overload::RetryBudgetConfig::default();
/// assert_eq!((c.window_ns, c.buckets, c.ratio, c.per_second), (10_000_000_000, 10, 0.2, 10.0));
/// assert!(c.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryBudgetConfig {
    /// The rolling window's length in nanoseconds (default 10 s; or [`RetryBudgetConfig::window`]).
    pub window_ns: u64,
    /// Buckets in the window, 1..=[`MAX_WINDOW_BUCKETS`] (default 10, so 1 s each).
    pub buckets: u32,
    /// Retries allowed per request in the window, finite, in [0, [`MAX_RETRY_RATIO`]] (default 0.2).
    pub ratio: f64,
    /// Retries allowed per second of the window whatever the requests, finite, in
    /// [0, [`MAX_RETRIES_PER_SECOND`]] (default 10).
    pub per_second: f64,
}

impl Default for RetryBudgetConfig {
    fn default() -> Self {
        RetryBudgetConfig {
            window_ns: 10_000_000_000,
            buckets: 10,
            ratio: 0.2,
            per_second: 10.0,
        }
    }
}

impl RetryBudgetConfig {
    /// Sets [`window_ns`](Self::window_ns) from a [`Duration`] (saturating at `u64::MAX` ns).
    ///
    /// ```
    /// use core::time::Duration;
    /// let c = weir::overload::RetryBudgetConfig::default().window(Duration::from_secs(60));
    /// assert_eq!(c.window_ns, 60_000_000_000);
    /// ```
    #[must_use]
    pub const fn window(self, window: Duration) -> Self {
        RetryBudgetConfig {
            window_ns: saturating_ns(window),
            ..self
        }
    }

    /// Checks every parameter and returns the first problem found.
    ///
    /// ```
    /// use weir::overload::{RetryBudgetConfig, RetryBudgetConfigError};
    /// let bad = RetryBudgetConfig { ratio: f64::NAN, ..RetryBudgetConfig::default() };
    /// assert_eq!(bad.validate(), Err(RetryBudgetConfigError::Ratio));
    /// ```
    pub fn validate(&self) -> Result<(), RetryBudgetConfigError> {
        if self.buckets == 0 || self.buckets as usize > MAX_WINDOW_BUCKETS {
            return Err(RetryBudgetConfigError::Buckets);
        }
        if self.window_ns / u64::from(self.buckets) == 0 {
            return Err(RetryBudgetConfigError::Window);
        }
        if !(self.ratio >= 0.0 && self.ratio <= MAX_RETRY_RATIO) {
            return Err(RetryBudgetConfigError::Ratio);
        }
        if !(self.per_second >= 0.0 && self.per_second <= MAX_RETRIES_PER_SECOND) {
            return Err(RetryBudgetConfigError::PerSecond);
        }
        Ok(())
    }

    /// The retries the window allows whatever the requests: `per_second × window_ns / 10^9`.
    ///
    /// ```
    /// assert_eq!(weir::overload::RetryBudgetConfig::default().floor(), 100.0);
    /// ```
    pub fn floor(&self) -> f64 {
        self.per_second * (self.window_ns as f64 / 1e9)
    }
}

/// A [`RetryBudgetConfig`] that was rejected.
///
/// ```
/// use weir::overload::{RetryBudgetConfig, RetryBudgetConfigError};
/// let e = RetryBudgetConfig { per_second: -1.0, ..RetryBudgetConfig::default() }.validate().unwrap_err();
/// assert_eq!(e, RetryBudgetConfigError::PerSecond);
/// assert_eq!(e.to_string(), "retry budget per_second must be in [0, 1e9]");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RetryBudgetConfigError {
    /// `buckets` must be between 1 and [`MAX_WINDOW_BUCKETS`].
    Buckets,
    /// `window_ns / buckets` must be at least 1 ns.
    Window,
    /// `ratio` must be in [0, [`MAX_RETRY_RATIO`]] (not NaN).
    Ratio,
    /// `per_second` must be in [0, [`MAX_RETRIES_PER_SECOND`]] (not NaN).
    PerSecond,
}

impl fmt::Display for RetryBudgetConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RetryBudgetConfigError::Buckets => {
                "retry budget buckets must be between 1 and MAX_WINDOW_BUCKETS"
            }
            RetryBudgetConfigError::Window => {
                "retry budget window_ns / buckets must be at least 1 ns"
            }
            RetryBudgetConfigError::Ratio => "retry budget ratio must be in [0, 1000]",
            RetryBudgetConfigError::PerSecond => "retry budget per_second must be in [0, 1e9]",
        })
    }
}

/// A retry refused by [`RetryBudget::try_retry`]: the budget is spent; answer the request with the
/// failure it had.
///
/// ```
/// let e = weir::overload::RetryBudgetExhausted { retries: 102, requests: 10 };
/// assert_eq!(e.to_string(), "retry budget exhausted: 102 retries for 10 requests in the window");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryBudgetExhausted {
    /// Retries in the window.
    pub retries: u64,
    /// Requests in the window.
    pub requests: u64,
}

impl fmt::Display for RetryBudgetExhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "retry budget exhausted: {} retries for {} requests in the window",
            self.retries, self.requests
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for RetryBudgetConfigError {}
#[cfg(feature = "std")]
impl std::error::Error for RetryBudgetExhausted {}

/// What a [`RetryBudget`] has counted: totals since construction and the window at the time asked.
///
/// ```
/// let b = weir::overload::RetryBudget::new(Default::default()).unwrap();
/// b.request(0);
/// let st = b.stats(0);
/// // 0.2 × 1 + 10 × 10 s = 100.2: 101 more retries admitted.
/// assert_eq!((st.requests, st.window_requests, st.available), (1, 1, 101));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetryBudgetStats {
    /// Requests counted since construction.
    pub requests: u64,
    /// Retries admitted since construction.
    pub retries: u64,
    /// Retries refused since construction.
    pub denied: u64,
    /// Requests in the window.
    pub window_requests: u64,
    /// Retries in the window.
    pub window_retries: u64,
    /// Retries the window admits now, before the next request: `⌈budget⌉ − retries`, at least 0.
    pub available: u64,
}

/// A retry budget shared by many callers: retries at most `ratio` of the requests plus a floor per
/// second, over a rolling window. Thread-safe: share it by reference; every method takes `&self`.
///
/// ```
/// use weir::overload::{RetryBudget, RetryBudgetConfig};
/// let budget = RetryBudget::new(RetryBudgetConfig { per_second: 0.0, ..Default::default() }).unwrap();
/// let now = 1_000_000_000;
/// for _ in 0..10 {
///     budget.request(now); // once per request, not per try
/// }
/// // 20 % of 10 requests: two retries, then refused.
/// assert!(budget.try_retry(now).is_ok());
/// assert!(budget.try_retry(now).is_ok());
/// assert_eq!(budget.try_retry(now).unwrap_err().retries, 2);
/// ```
#[derive(Debug)]
pub struct RetryBudget {
    config: RetryBudgetConfig,
    floor: f64,
    window: Window<LANES>,
    requests: AtomicU64,
    retries: AtomicU64,
    denied: AtomicU64,
}

impl RetryBudget {
    /// Builds a budget, or says which parameter is wrong.
    ///
    /// ```
    /// use weir::overload::{RetryBudget, RetryBudgetConfig, RetryBudgetConfigError};
    /// let huge = RetryBudgetConfig { ratio: 1e300, ..Default::default() };
    /// assert_eq!(RetryBudget::new(huge).unwrap_err(), RetryBudgetConfigError::Ratio);
    /// ```
    pub fn new(config: RetryBudgetConfig) -> Result<Self, RetryBudgetConfigError> {
        config.validate()?;
        let window =
            Window::new(config.buckets, config.window_ns).ok_or(RetryBudgetConfigError::Window)?;
        Ok(RetryBudget {
            config,
            floor: config.floor(),
            window,
            requests: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            denied: AtomicU64::new(0),
        })
    }

    /// The configuration this budget was built with.
    ///
    /// ```
    /// let b = weir::overload::RetryBudget::new(Default::default()).unwrap();
    /// assert_eq!(b.config().ratio, 0.2);
    /// ```
    pub fn config(&self) -> &RetryBudgetConfig {
        &self.config
    }

    /// Counts one request at `now` (its first try; a retry is counted by [`try_retry`](Self::try_retry)).
    ///
    /// ```
    /// let b = weir::overload::RetryBudget::new(Default::default()).unwrap();
    /// b.request(5);
    /// assert_eq!(b.stats(5).window_requests, 1);
    /// ```
    pub fn request(&self, now: u64) {
        let mut lanes = [0u64; LANES];
        lanes[REQUESTS] = 1;
        self.window.add(now, lanes);
        // Relaxed: statistics.
        self.requests.fetch_add(1, Relaxed);
    }

    /// Admits a retry at `now` and counts it, while the window's retries are below
    /// `ratio × requests + floor`; otherwise refuses it, uncounted in the window.
    ///
    /// ```
    /// use weir::overload::{RetryBudget, RetryBudgetConfig};
    /// let b = RetryBudget::new(RetryBudgetConfig { ratio: 0.0, per_second: 0.5, ..Default::default() }).unwrap();
    /// // The floor: 0.5 a second over 10 s, 5 retries with no request at all.
    /// assert_eq!((0..8).filter(|_| b.try_retry(0).is_ok()).count(), 5);
    /// assert_eq!(b.stats(0).denied, 3);
    /// ```
    pub fn try_retry(&self, now: u64) -> Result<(), RetryBudgetExhausted> {
        let sums = self.window.sums(now, false, LANES);
        let (requests, retries) = (sums[REQUESTS], sums[RETRIES]);
        // The configuration is validated (no NaN), so `>=` is the exact negation of "below the budget".
        if retries as f64 >= self.budget(requests) {
            // Relaxed: statistics.
            self.denied.fetch_add(1, Relaxed);
            return Err(RetryBudgetExhausted { retries, requests });
        }
        let mut lanes = [0u64; LANES];
        lanes[RETRIES] = 1;
        self.window.add(now, lanes);
        // Relaxed: statistics.
        self.retries.fetch_add(1, Relaxed);
        Ok(())
    }

    /// The retries the window allows for `requests` requests.
    fn budget(&self, requests: u64) -> f64 {
        self.config.ratio * requests as f64 + self.floor
    }

    /// The counts since construction and in the window at `now`.
    ///
    /// ```
    /// use weir::overload::{RetryBudget, RetryBudgetConfig};
    /// let b = RetryBudget::new(RetryBudgetConfig { per_second: 0.0, ..Default::default() }).unwrap();
    /// (0..10).for_each(|_| b.request(0));
    /// b.try_retry(0).unwrap();
    /// let st = b.stats(0);
    /// assert_eq!((st.window_requests, st.window_retries, st.available), (10, 1, 1));
    /// ```
    pub fn stats(&self, now: u64) -> RetryBudgetStats {
        let sums = self.window.sums(now, false, LANES);
        let (window_requests, window_retries) = (sums[REQUESTS], sums[RETRIES]);
        // The retries `try_retry` still admits: the least `n` with `retries + n >= budget`, so the
        // budget rounded up (no `ceil` without `std`: the truncation, plus one below a fraction). The
        // budget is finite and at least 0; `as` saturates.
        let budget = self.budget(window_requests);
        let whole = budget as u64;
        let ceil = whole.saturating_add(u64::from((whole as f64) < budget));
        let available = ceil.saturating_sub(window_retries);
        // Relaxed: statistics.
        RetryBudgetStats {
            requests: self.requests.load(Relaxed),
            retries: self.retries.load(Relaxed),
            denied: self.denied.load(Relaxed),
            window_requests,
            window_retries,
            available,
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    const SEC: u64 = 1_000_000_000;

    fn budget(ratio: f64, per_second: f64) -> RetryBudget {
        RetryBudget::new(RetryBudgetConfig {
            ratio,
            per_second,
            ..RetryBudgetConfig::default()
        })
        .unwrap()
    }

    /// Admitted while `retries < ratio × requests + floor`, exactly at the boundary.
    #[test]
    fn admits_up_to_the_ratio_plus_the_floor() {
        let b = budget(0.2, 0.1); // floor 1 over 10 s
        for _ in 0..50 {
            b.request(0);
        }
        // 0.2 × 50 + 1 = 11 retries.
        let admitted = (0..20).filter(|_| b.try_retry(SEC).is_ok()).count();
        assert_eq!(admitted, 11);
        assert_eq!(
            b.try_retry(SEC),
            Err(RetryBudgetExhausted {
                retries: 11,
                requests: 50
            })
        );
        let st = b.stats(SEC);
        assert_eq!((st.retries, st.denied, st.available), (11, 10, 0));
        // Five more requests: one more retry (0.2 × 55 + 1 = 12).
        (0..5).for_each(|_| b.request(SEC));
        assert_eq!(b.stats(SEC).available, 1);
        assert!(b.try_retry(SEC).is_ok());
        assert!(b.try_retry(SEC).is_err());
    }

    /// The window forgets: after a whole window without traffic, the floor is back.
    #[test]
    fn the_window_rolls() {
        let b = budget(0.0, 0.2); // floor 2
        assert!(b.try_retry(0).is_ok());
        assert!(b.try_retry(0).is_ok());
        assert!(b.try_retry(0).is_err());
        assert!(b.try_retry(5 * SEC).is_err());
        assert!(b.try_retry(11 * SEC).is_ok());
        assert_eq!(b.stats(11 * SEC).window_retries, 1);
    }

    /// A budget of zero refuses every retry; no panic on wild times.
    #[test]
    fn zero_budget_and_wild_times() {
        let b = budget(0.0, 0.0);
        b.request(u64::MAX);
        assert!(b.try_retry(u64::MAX).is_err());
        assert!(b.try_retry(0).is_err());
        assert_eq!(b.stats(0).available, 0);
        let big = budget(MAX_RETRY_RATIO, MAX_RETRIES_PER_SECOND);
        assert!(big.try_retry(0).is_ok());
        assert_eq!(big.stats(0).available, 10_000_000_000 - 1);
    }

    #[test]
    fn bad_configurations_are_refused() {
        let d = RetryBudgetConfig::default();
        let cases = [
            (
                RetryBudgetConfig { buckets: 0, ..d },
                RetryBudgetConfigError::Buckets,
            ),
            (
                RetryBudgetConfig { buckets: 129, ..d },
                RetryBudgetConfigError::Buckets,
            ),
            (
                RetryBudgetConfig { window_ns: 5, ..d },
                RetryBudgetConfigError::Window,
            ),
            (
                RetryBudgetConfig { ratio: -0.1, ..d },
                RetryBudgetConfigError::Ratio,
            ),
            (
                RetryBudgetConfig {
                    ratio: f64::INFINITY,
                    ..d
                },
                RetryBudgetConfigError::Ratio,
            ),
            (
                RetryBudgetConfig {
                    per_second: f64::NAN,
                    ..d
                },
                RetryBudgetConfigError::PerSecond,
            ),
            (
                RetryBudgetConfig {
                    per_second: 2e9,
                    ..d
                },
                RetryBudgetConfigError::PerSecond,
            ),
        ];
        for (c, e) in cases {
            assert_eq!(RetryBudget::new(c).err(), Some(e), "{c:?}");
        }
    }
}
