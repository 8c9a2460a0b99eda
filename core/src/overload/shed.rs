//! Server-side adaptive load shedding: go-zero's `adaptiveShedder`, lock-free, with time and CPU passed in.
//!
//! A server asks [`Shedder::allow`] before it starts a request. The shedder drops the request
//! ([`Overloaded`]) only when the CPU is hot **and** more requests are in flight than the server has shown
//! it can complete: by Little's law, `max_flight = max pass rate × min response time`, both measured over a
//! rolling window (5 s of 50 buckets by default), then scaled down by how far the CPU is over its threshold.
//! Otherwise it grants a [`Promise`], which the server completes exactly once: [`Shedder::success`] (the
//! request finished; its response time is recorded) or [`Shedder::failure`] (it failed or timed out;
//! nothing is recorded but the in-flight count drops).
//!
//! # The rule, exactly
//! With `cpu` in millicpu (0..=1000 of the container's allowance, from [`CpuSampler`](crate::overload::CpuSampler)
//! or anywhere else; larger values count as 1000):
//! - `max_pass` = the largest number of passes in one complete bucket of the window (at least 1);
//! - `min_rt` = the smallest average response time of a complete bucket with passes, in whole ms
//!   (each response time is rounded up to a whole ms, each bucket's average rounded half away from zero),
//!   or 1000 ms when there is none;
//! - `max_flight = max(max_pass × min_rt × buckets_per_second / 1000, 1)`;
//! - `factor = clamp((1000 − cpu) / (1000 − cpu_threshold), 0.1, 1)`, so at least 10 % of `max_flight`
//!   is always admitted;
//! - `overloaded = cpu >= cpu_threshold` (which also records the time of this overload);
//! - `hot` = a request was dropped recently and the last overload was less than `cool_off_ns` ago;
//! - drop iff `(overloaded || hot) && avg_in_flight > max_flight × factor && in_flight > max_flight × factor`,
//!   where `in_flight` excludes the request being decided and `avg_in_flight` is the moving average
//!   `0.9 × avg + 0.1 × in_flight`, updated when a request completes.
//!
//! # go-zero's quirks: what is kept, what is corrected
//! - **Strict comparisons: kept.** "More in flight than the limit" means `>`: at exactly the limit the
//!   request is admitted, and with nothing in flight a request is always admitted (even at the 0.1 floor).
//!   This matches go-zero bit for bit (its test vectors pass unchanged here).
//! - **The 1 s cool-off: kept as the default, made configurable** ([`ShedderConfig::cool_off_ns`]). Its
//!   semantics are go-zero's since #2476: measured from the *last CPU overload observed*, and only after a
//!   drop; once it has lapsed the "dropped recently" mark is cleared. go-zero uses `overloadTime == 0` for
//!   "never overloaded"; here `now = 0` is a valid time, so "never" is a separate state.
//! - **The truncating CPU average that saturates at 981: corrected**, in the sampler
//!   ([`CpuSampler`](crate::overload::CpuSampler)), which keeps its exponential average in full precision and rounds
//!   only when it reports. With go-zero's truncation a steady 100 % load reads 981 forever, so thresholds
//!   of 982..=999 can never fire and the overload factor never drops below 0.19 at the default threshold;
//!   here a steady 100 % load reaches 1000. The shedder itself takes whatever `cpu` it is given.
//! - **The floor of 1 before the CPU factor: kept.** `max_flight` is at least 1 and the factor at least
//!   0.1, so the limit can be 0.1: under full overload only one request at a time is admitted (never
//!   zero, since `0 > 0.1` is false).
//! - **The in-flight average moves only on completions: kept.** go-zero does this on purpose: a sudden
//!   rise is admitted a little longer, a sudden fall rejected a little longer.
//! - **Not carried over:** the global `Disable()` (do not call the shedder), `ShedderGroup` (keep one
//!   shedder per key), and logging: [`Overloaded`] carries what go-zero logs on a drop.
//! - **Time as an input**, not `timex.Now()`: a `now` older than one seen before counts at the newest time
//!   already seen (the window, up to a whole window back; further back the window jumps back to it: see
//!   `window.rs`) or as no time elapsed (response times, the cool-off); nothing panics. The last
//!   overload's time follows the same rule: a mark more than a window ahead of `now` (a wild `now`
//!   before) neither keeps the shedder hot nor stops a sane overload from moving it back.
//! - **Promises**: a Rust [`Promise`] is neither `Clone` nor `Copy` and is consumed by its completion,
//!   so it completes at most once (go-zero's decrements twice on a double `Pass`). Completing more promises
//!   than are in flight (a forged [`RawPromise`]) is refused with [`NotInFlight`] instead of driving the
//!   count negative.
//!
//! Admission is a decision, not a reservation: two threads deciding at once may both be admitted at the
//! limit, exactly as in go-zero (whose check and increment are separate too). The shedder bounds load
//! statistically; a hard cap is the balancer's concurrency limiter.
//!
//! # Memory ordering
//! Every word here is an independent statistic (in-flight count, its average, counters, the overload time,
//! the dropped mark): a thread that reads a slightly older value decides as it would have a moment earlier.
//! They use `Relaxed`. The rolling window has its own protocol (see `window.rs`). A drop racing with the
//! lapse of a cool-off may lose its "dropped recently" mark, exactly as in go-zero; the next drop sets it.

use crate::internal::sync::{AtomicBool, AtomicU64, Ordering::Relaxed};
use crate::internal::time::saturating_ns;
use crate::overload::window::{Window, MAX_WINDOW_BUCKETS};
use core::fmt;
use core::time::Duration;

/// go-zero's `defaultMinRt`: the response time assumed when the window has none (large, so it never
/// causes drops by itself).
const DEFAULT_MIN_RT_MS: u64 = 1000;
/// go-zero's `flyingBeta`.
const FLYING_BETA: f64 = 0.9;
/// go-zero's `overloadFactorLowerBound`.
const FACTOR_FLOOR: f64 = 0.1;
/// go-zero's `cpuMax`.
const CPU_MAX: u32 = 1000;
const NS_PER_MS: u64 = 1_000_000;

/// Configuration of a [`Shedder`]; the defaults are go-zero's.
///
/// ```
/// let c = weir::overload::ShedderConfig::default();
/// assert_eq!((c.window_ns, c.buckets, c.cpu_threshold, c.cool_off_ns), (5_000_000_000, 50, 900, 1_000_000_000));
/// assert!(c.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ShedderConfig {
    /// The rolling window's length in nanoseconds (default 5 s; or [`ShedderConfig::window`]).
    pub window_ns: u64,
    /// Buckets in the window, 1..=[`MAX_WINDOW_BUCKETS`] (default 50, so 100 ms each). Bucket width is
    /// `window_ns / buckets` and must be at least 1 ns.
    pub buckets: u32,
    /// CPU usage, in millicpu (0..1000), at and above which the server counts as overloaded (default
    /// 900). 0 makes the CPU always count as overloaded, so shedding depends on in-flight load alone.
    pub cpu_threshold: u32,
    /// How long after the last overload observation a shedder that has dropped keeps shedding (default
    /// 1 s; 0 disables the cool-off; or [`ShedderConfig::cool_off`]).
    pub cool_off_ns: u64,
}

impl Default for ShedderConfig {
    fn default() -> Self {
        ShedderConfig {
            window_ns: 5_000_000_000,
            buckets: 50,
            cpu_threshold: 900,
            cool_off_ns: 1_000_000_000,
        }
    }
}

impl ShedderConfig {
    /// Sets [`window_ns`](Self::window_ns), the rolling window's length, from a [`Duration`]. A duration
    /// longer than `u64::MAX` ns (about 584 years) saturates to `u64::MAX`; validation checks the
    /// result as any `window_ns` (at least 1 ns per bucket).
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::overload::ShedderConfig;
    /// let c = ShedderConfig::default()
    ///     .window(Duration::from_secs(10))
    ///     .cool_off(Duration::from_millis(500));
    /// assert_eq!((c.window_ns, c.cool_off_ns), (10_000_000_000, 500_000_000));
    /// assert!(c.validate().is_ok());
    /// assert!(c.window(Duration::from_nanos(49)).validate().is_err()); // < 1 ns per bucket
    /// ```
    #[must_use]
    pub const fn window(self, window: Duration) -> Self {
        ShedderConfig {
            window_ns: saturating_ns(window),
            ..self
        }
    }

    /// Sets [`cool_off_ns`](Self::cool_off_ns) from a [`Duration`]: how long after the last overload a
    /// shedder that has dropped keeps shedding ([`Duration::ZERO`] disables the cool-off). A duration
    /// longer than `u64::MAX` ns saturates to `u64::MAX`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::overload::ShedderConfig;
    /// let c = ShedderConfig::default().cool_off(Duration::ZERO);
    /// assert_eq!(c.cool_off_ns, 0);
    /// assert_eq!(c.cool_off(Duration::MAX).cool_off_ns, u64::MAX);
    /// ```
    #[must_use]
    pub const fn cool_off(self, cool_off: Duration) -> Self {
        ShedderConfig {
            cool_off_ns: saturating_ns(cool_off),
            ..self
        }
    }

    /// Checks every parameter and returns the first problem found.
    ///
    /// ```
    /// use weir::{overload::ShedderConfig, overload::ShedderConfigError};
    /// let bad = ShedderConfig { cpu_threshold: 1000, ..ShedderConfig::default() };
    /// assert_eq!(bad.validate(), Err(ShedderConfigError::CpuThreshold));
    /// ```
    pub fn validate(&self) -> Result<(), ShedderConfigError> {
        if self.buckets == 0 || self.buckets as usize > MAX_WINDOW_BUCKETS {
            return Err(ShedderConfigError::Buckets);
        }
        if self.window_ns / u64::from(self.buckets) == 0 {
            return Err(ShedderConfigError::Window);
        }
        if self.cpu_threshold >= CPU_MAX {
            return Err(ShedderConfigError::CpuThreshold);
        }
        Ok(())
    }
}

/// A [`ShedderConfig`] that was rejected.
///
/// ```
/// use weir::{overload::ShedderConfig, overload::ShedderConfigError};
/// let e = ShedderConfig { window_ns: 10, ..ShedderConfig::default() }.validate().unwrap_err();
/// assert_eq!(e, ShedderConfigError::Window);
/// assert_eq!(e.to_string(), "shedder window_ns / buckets must be at least 1 ns");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ShedderConfigError {
    /// `buckets` must be between 1 and [`MAX_WINDOW_BUCKETS`].
    Buckets,
    /// `window_ns / buckets` must be at least 1 ns.
    Window,
    /// `cpu_threshold` must be below 1000 millicpu (at 1000 the overload factor divides by zero).
    CpuThreshold,
}

impl fmt::Display for ShedderConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShedderConfigError::Buckets => {
                "shedder buckets must be between 1 and MAX_WINDOW_BUCKETS"
            }
            ShedderConfigError::Window => "shedder window_ns / buckets must be at least 1 ns",
            ShedderConfigError::CpuThreshold => "shedder cpu_threshold must be below 1000 millicpu",
        })
    }
}

/// Why [`Shedder::allow`] dropped a request (HTTP 503, gRPC `RESOURCE_EXHAUSTED`), with what it saw.
///
/// ```
/// use weir::{Shedder, overload::ShedderConfig};
/// let s = Shedder::new(ShedderConfig::default()).unwrap();
/// let mut held: Vec<_> = (0..20).map(|_| s.allow(0, 0).unwrap()).collect();
/// for p in held.drain(..10) {
///     s.failure(p).unwrap(); // the in-flight average rises with each completion
/// }
/// // Cold start: max_flight 10; at cpu 1000 the factor is 0.1, so the limit is 1.
/// let e = s.allow(1000, 0).unwrap_err();
/// assert_eq!((e.in_flight, e.limit, e.hot), (10, 1.0, false));
/// assert!(e.avg_in_flight > 1.0);
/// assert!(e.to_string().starts_with("service overloaded: cpu 1000/1000, 10 in flight"));
/// # for p in held { s.failure(p).unwrap(); }
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Overloaded {
    /// The CPU usage passed to `allow` (millicpu, capped at 1000).
    pub cpu: u32,
    /// Whether the shedder was in its cool-off rather than over the CPU threshold.
    pub hot: bool,
    /// Requests in flight when the request was dropped.
    pub in_flight: u64,
    /// The moving average of requests in flight.
    pub avg_in_flight: f64,
    /// The in-flight limit both exceeded: `max_flight × factor`.
    pub limit: f64,
}

impl fmt::Display for Overloaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "service overloaded: cpu {}/1000{}, {} in flight (average {:.2}) over a limit of {:.2}",
            self.cpu,
            if self.hot { " (cooling off)" } else { "" },
            self.in_flight,
            self.avg_in_flight,
            self.limit
        )
    }
}

/// A completion that the shedder refused: no request was in flight, so the promise was already
/// completed (through [`RawPromise`]) or belongs to another shedder. Nothing was recorded.
///
/// ```
/// use weir::{overload::NotInFlight, overload::Promise, overload::RawPromise, Shedder, overload::ShedderConfig};
/// let s = Shedder::new(ShedderConfig::default()).unwrap();
/// let forged = Promise::from_raw(RawPromise { start: 0 });
/// assert_eq!(s.failure(forged), Err(NotInFlight));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NotInFlight;

impl fmt::Display for NotInFlight {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "no request in flight: the promise was already completed or belongs to another shedder",
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ShedderConfigError {}
#[cfg(feature = "std")]
impl std::error::Error for Overloaded {}
#[cfg(feature = "std")]
impl std::error::Error for NotInFlight {}

/// An admitted request. Complete it exactly once with [`Shedder::success`] or [`Shedder::failure`];
/// neither `Clone` nor `Copy`, so it cannot be completed twice. Dropping it without completing leaves the
/// request counted in flight.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a promise counts as in flight until it is completed"]
pub struct Promise {
    start: u64,
}

/// The plain fields of a [`Promise`], for bindings that hand it across a language boundary.
///
/// ```
/// let s = weir::Shedder::new(weir::overload::ShedderConfig::default()).unwrap();
/// let raw: weir::overload::RawPromise = s.allow(0, 7).unwrap().into_raw();
/// assert_eq!(raw.start, 7);
/// # s.failure(weir::overload::Promise::from_raw(raw)).unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct RawPromise {
    /// `now` at admission.
    pub start: u64,
}

impl Promise {
    /// The `now` passed to [`Shedder::allow`].
    ///
    /// ```
    /// let s = weir::Shedder::new(weir::overload::ShedderConfig::default()).unwrap();
    /// let p = s.allow(0, 42).unwrap();
    /// assert_eq!(p.started_at(), 42);
    /// s.failure(p).unwrap();
    /// ```
    pub fn started_at(&self) -> u64 {
        self.start
    }

    /// Gives up the promise's fields (pass them back with [`Promise::from_raw`]).
    ///
    /// ```
    /// use weir::{overload::Promise, Shedder, overload::ShedderConfig};
    /// let s = Shedder::new(ShedderConfig::default()).unwrap();
    /// let raw = s.allow(0, 0).unwrap().into_raw();
    /// s.success(Promise::from_raw(raw), 3_000_000).unwrap();
    /// assert_eq!(s.stats(3_000_000).succeeded, 1);
    /// ```
    pub fn into_raw(self) -> RawPromise {
        RawPromise { start: self.start }
    }

    /// Rebuilds a promise from [`Promise::into_raw`]. Bindings must complete each raw promise once; the
    /// shedder refuses a completion only when nothing at all is in flight ([`NotInFlight`]).
    ///
    /// ```
    /// let p = weir::overload::Promise::from_raw(weir::overload::RawPromise { start: 9 });
    /// assert_eq!(p.started_at(), 9);
    /// ```
    pub fn from_raw(raw: RawPromise) -> Promise {
        Promise { start: raw.start }
    }
}

/// A point-in-time view of a [`Shedder`].
///
/// ```
/// let s = weir::Shedder::new(weir::overload::ShedderConfig::default()).unwrap();
/// let st = s.stats(0);
/// assert_eq!((st.max_pass, st.min_rt_ms, st.max_flight), (1, 1000, 10.0)); // cold start
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShedderStats {
    /// Requests admitted.
    pub allowed: u64,
    /// Requests dropped.
    pub dropped: u64,
    /// Promises completed with success.
    pub succeeded: u64,
    /// Promises completed with failure.
    pub failed: u64,
    /// Requests in flight now (`allowed − succeeded − failed` once all completions have returned).
    pub in_flight: u64,
    /// The moving average of requests in flight.
    pub avg_in_flight: f64,
    /// The most passes in one complete bucket of the window (at least 1).
    pub max_pass: u64,
    /// The smallest average response time of a complete bucket, in ms (1000 with no data).
    pub min_rt_ms: u64,
    /// `max(max_pass × min_rt × buckets_per_second / 1000, 1)`, before the CPU factor.
    pub max_flight: f64,
}

/// go-zero's adaptive shedder; see the module docs for the exact rule. Thread-safe: share it by
/// reference (`&Shedder` is all every method needs).
///
/// ```
/// use weir::{Shedder, overload::ShedderConfig};
///
/// let shedder = Shedder::new(ShedderConfig::default()).unwrap();
/// let now = 1_000_000_000; // monotonic ns from your clock
/// let cpu = 350;           // millicpu, e.g. from weir::overload::CpuSampler
/// match shedder.allow(cpu, now) {
///     Ok(promise) => {
///         // ... serve the request ...
///         shedder.success(promise, now + 20_000_000).unwrap(); // finished after 20 ms
///     }
///     Err(overloaded) => { /* answer 503 / RESOURCE_EXHAUSTED */ let _ = overloaded; }
/// }
/// assert_eq!(shedder.stats(now).succeeded, 1);
/// ```
#[derive(Debug)]
pub struct Shedder {
    config: ShedderConfig,
    /// Lane 0: sum of response times (ms); lane 1: passes.
    window: Window<2>,
    /// `buckets per second / 1000` (go-zero's `windowScale`).
    scale: f64,
    flying: AtomicU64,
    /// `f64` bits of the in-flight moving average.
    avg_flying: AtomicU64,
    /// `now + 1` of the newest overload observed; 0 = never.
    overload_at: AtomicU64,
    dropped_recently: AtomicBool,
    allowed: AtomicU64,
    dropped: AtomicU64,
    succeeded: AtomicU64,
    failed: AtomicU64,
}

impl Shedder {
    /// Builds a shedder, or says which parameter is wrong.
    ///
    /// ```
    /// use weir::{Shedder, overload::ShedderConfig, overload::ShedderConfigError};
    /// assert!(Shedder::new(ShedderConfig::default()).is_ok());
    /// let zero = ShedderConfig { buckets: 0, ..ShedderConfig::default() };
    /// assert_eq!(Shedder::new(zero).unwrap_err(), ShedderConfigError::Buckets);
    /// ```
    pub fn new(config: ShedderConfig) -> Result<Self, ShedderConfigError> {
        config.validate()?;
        let window =
            Window::new(config.buckets, config.window_ns).ok_or(ShedderConfigError::Window)?;
        let width = config.window_ns / u64::from(config.buckets);
        Ok(Shedder {
            config,
            window,
            // go-zero: float64(time.Second) / float64(bucketDuration) / 1000, in that order.
            scale: 1e9 / width as f64 / 1000.0,
            flying: AtomicU64::new(0),
            avg_flying: AtomicU64::new(0),
            overload_at: AtomicU64::new(0),
            dropped_recently: AtomicBool::new(false),
            allowed: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            succeeded: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        })
    }

    /// The configuration this shedder was built with.
    ///
    /// ```
    /// let s = weir::Shedder::new(weir::overload::ShedderConfig::default()).unwrap();
    /// assert_eq!(s.config().buckets, 50);
    /// ```
    pub fn config(&self) -> &ShedderConfig {
        &self.config
    }

    /// Decides whether to admit a request at `now` with the CPU at `cpu` millicpu (values above 1000
    /// count as 1000). Admitted requests count as in flight until their [`Promise`] is completed.
    ///
    /// ```
    /// use weir::{Shedder, overload::ShedderConfig};
    /// let s = Shedder::new(ShedderConfig::default()).unwrap();
    /// // Under the CPU threshold nothing is ever dropped, however much is in flight.
    /// let held: Vec<_> = (0..1000).map(|_| s.allow(899, 0).unwrap()).collect();
    /// assert_eq!(s.stats(0).in_flight, 1000);
    /// for p in held { s.failure(p).unwrap(); }
    /// ```
    pub fn allow(&self, cpu: u32, now: u64) -> Result<Promise, Overloaded> {
        let cpu = cpu.min(CPU_MAX);
        if let Some(dropped) = self.should_drop(now, cpu) {
            // Relaxed: statistics (see the module docs).
            self.dropped_recently.store(true, Relaxed);
            self.dropped.fetch_add(1, Relaxed);
            return Err(dropped);
        }
        // Relaxed: statistics.
        self.flying.fetch_add(1, Relaxed);
        self.allowed.fetch_add(1, Relaxed);
        Ok(Promise { start: now })
    }

    /// Completes an admitted request that succeeded at `now`: records its response time, rounded up to a
    /// whole millisecond, and one pass.
    ///
    /// ```
    /// let s = weir::Shedder::new(weir::overload::ShedderConfig::default()).unwrap();
    /// let p = s.allow(0, 0).unwrap();
    /// s.success(p, 15_500_000).unwrap(); // 15.5 ms → 16 ms
    /// assert_eq!(s.stats(100_000_000).min_rt_ms, 16); // once its bucket is complete
    /// ```
    pub fn success(&self, promise: Promise, now: u64) -> Result<(), NotInFlight> {
        self.complete()?;
        let elapsed = now.saturating_sub(promise.start);
        let rt_ms = elapsed.div_ceil(NS_PER_MS);
        // The response time before the pass: see the window's lane order.
        self.window.add(now, [rt_ms, 1]);
        // Relaxed: statistics.
        self.succeeded.fetch_add(1, Relaxed);
        Ok(())
    }

    /// Completes an admitted request that failed (or timed out, or was cancelled): it leaves the in-flight
    /// count, and nothing else is recorded.
    ///
    /// ```
    /// let s = weir::Shedder::new(weir::overload::ShedderConfig::default()).unwrap();
    /// let p = s.allow(0, 0).unwrap();
    /// s.failure(p).unwrap();
    /// let st = s.stats(0);
    /// assert_eq!((st.in_flight, st.failed, st.max_pass), (0, 1, 1));
    /// ```
    pub fn failure(&self, promise: Promise) -> Result<(), NotInFlight> {
        let _ = promise;
        self.complete()?;
        // Relaxed: statistics.
        self.failed.fetch_add(1, Relaxed);
        Ok(())
    }

    /// A point-in-time view at `now`.
    ///
    /// ```
    /// let s = weir::Shedder::new(weir::overload::ShedderConfig::default()).unwrap();
    /// let p = s.allow(0, 0).unwrap();
    /// assert_eq!(s.stats(0).in_flight, 1);
    /// s.success(p, 1).unwrap();
    /// assert_eq!(s.stats(0).avg_in_flight, 0.0);
    /// ```
    pub fn stats(&self, now: u64) -> ShedderStats {
        let (max_pass, min_rt) = self.pass_and_rt(now);
        // Relaxed: statistics.
        ShedderStats {
            allowed: self.allowed.load(Relaxed),
            dropped: self.dropped.load(Relaxed),
            succeeded: self.succeeded.load(Relaxed),
            failed: self.failed.load(Relaxed),
            in_flight: self.flying.load(Relaxed),
            avg_in_flight: f64::from_bits(self.avg_flying.load(Relaxed)),
            max_pass,
            min_rt_ms: min_rt,
            max_flight: self.max_flight(max_pass, min_rt),
        }
    }

    /// The CPU headroom factor go-zero scales `max_flight` by:
    /// `clamp((1000 − cpu) / (1000 − cpu_threshold), 0.1, 1)`.
    ///
    /// ```
    /// let s = weir::Shedder::new(weir::overload::ShedderConfig::default()).unwrap(); // threshold 900
    /// assert_eq!(s.overload_factor(950), 0.5);
    /// assert_eq!(s.overload_factor(990), 0.1);
    /// assert_eq!(s.overload_factor(800), 1.0);
    /// ```
    pub fn overload_factor(&self, cpu: u32) -> f64 {
        let cpu = cpu.min(CPU_MAX);
        let f = f64::from(CPU_MAX - cpu) / f64::from(CPU_MAX - self.config.cpu_threshold);
        f.clamp(FACTOR_FLOOR, 1.0)
    }

    /// Takes one request out of flight (refusing to go below zero) and folds the new count into the
    /// moving average.
    fn complete(&self) -> Result<(), NotInFlight> {
        // Relaxed: statistics.
        let before = self
            .flying
            .fetch_update(Relaxed, Relaxed, |f| f.checked_sub(1))
            .map_err(|_| NotInFlight)?;
        let after = (before - 1) as f64;
        // Relaxed: a standalone statistic; the CAS loop replaces go-zero's spin lock.
        let _ = self.avg_flying.fetch_update(Relaxed, Relaxed, |bits| {
            let avg = f64::from_bits(bits);
            Some((avg * FLYING_BETA + after * (1.0 - FLYING_BETA)).to_bits())
        });
        Ok(())
    }

    /// `Some(why)` when the request at `now` must be dropped.
    fn should_drop(&self, now: u64, cpu: u32) -> Option<Overloaded> {
        let overloaded = cpu >= self.config.cpu_threshold;
        if overloaded {
            let mark = now.saturating_add(1);
            let window = self.config.window_ns;
            // Relaxed: statistics. A thread with an older `now` never moves the mark back, unless the
            // mark is more than a window ahead of it: then the mark came from a wild `now` (or the clock
            // jumped back), and it moves back, as the rolling window does (see `window.rs`).
            let _ = self.overload_at.fetch_update(Relaxed, Relaxed, |at| {
                (at < mark || at - mark > window).then_some(mark)
            });
        }
        let hot = !overloaded && self.still_hot(now);
        if !overloaded && !hot {
            return None;
        }
        // Relaxed: statistics.
        let flying = self.flying.load(Relaxed);
        let avg = f64::from_bits(self.avg_flying.load(Relaxed));
        let (max_pass, min_rt) = self.pass_and_rt(now);
        let limit = self.max_flight(max_pass, min_rt) * self.overload_factor(cpu);
        (avg > limit && flying as f64 > limit).then_some(Overloaded {
            cpu,
            hot,
            in_flight: flying,
            avg_in_flight: avg,
            limit,
        })
    }

    /// go-zero's `stillHot`: dropped recently, and the last overload was less than the cool-off ago.
    fn still_hot(&self, now: u64) -> bool {
        // Relaxed: statistics.
        if !self.dropped_recently.load(Relaxed) {
            return false;
        }
        let at = self.overload_at.load(Relaxed);
        if at == 0 {
            return false;
        }
        let last = at - 1;
        // An overload dated more than a window ahead of `now` is a wild `now`'s (see `should_drop`): it
        // does not keep the shedder hot.
        let hot = if last > now {
            last - now <= self.config.window_ns
        } else {
            now - last < self.config.cool_off_ns
        };
        if !hot {
            self.dropped_recently.store(false, Relaxed);
        }
        hot
    }

    /// `(max_pass, min_rt_ms)` over the complete buckets of the window at `now`.
    fn pass_and_rt(&self, now: u64) -> (u64, u64) {
        self.window
            .fold(now, true, (1u64, DEFAULT_MIN_RT_MS), |acc, [rt, passes]| {
                acc.0 = acc.0.max(passes);
                if passes > 0 {
                    // round(rt / passes), half away from zero, in integers (both < 2^32).
                    acc.1 = acc.1.min((2 * rt + passes) / (2 * passes));
                }
            })
    }

    fn max_flight(&self, max_pass: u64, min_rt: u64) -> f64 {
        (max_pass as f64 * min_rt as f64 * self.scale).max(1.0)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! go-zero's [`adaptiveshedder_test.go`] vectors, replayed with time passed in.
    //!
    //! [`adaptiveshedder_test.go`]: https://github.com/zeromicro/go-zero/blob/f29c8612e86fca4ac1c6b718fd83f73fbe7235eb/core/load/adaptiveshedder_test.go
    use super::*;
    extern crate std;
    use std::vec::Vec;

    const MS: u64 = NS_PER_MS;
    const SEC: u64 = 1_000_000_000;
    /// A start far from 0 and a multiple of every bucket width used.
    const T0: u64 = 1000 * SEC;

    /// go-zero's window-test shedder: 10 buckets of 100 ms (windowScale 0.01).
    fn shedder(threshold: u32) -> Shedder {
        Shedder::new(ShedderConfig {
            window_ns: SEC,
            buckets: 10,
            cpu_threshold: threshold,
            ..ShedderConfig::default()
        })
        .unwrap()
    }

    /// Completes `n` promises with response time `rt_ms`, each finishing at `at`.
    fn passes(s: &Shedder, at: u64, n: u64, rt_ms: u64) {
        for _ in 0..n {
            let p = s.allow(0, at - rt_ms * MS).unwrap();
            s.success(p, at).unwrap();
        }
    }

    fn set_flying(s: &Shedder, flying: u64, avg: f64) {
        s.flying.store(flying, Relaxed);
        s.avg_flying.store(avg.to_bits(), Relaxed);
    }

    #[test]
    fn max_pass() {
        let s = shedder(900);
        assert_eq!(s.stats(T0).max_pass, 1); // empty
        for i in 1..=10u64 {
            passes(&s, T0 + (i - 1) * 100 * MS, i * 100, 1);
        }
        // "sleep" after the last bucket so that 1000 is complete.
        assert_eq!(s.stats(T0 + 1000 * MS).max_pass, 1000);
    }

    #[test]
    fn min_rt() {
        let s = shedder(900);
        assert_eq!(s.stats(T0).min_rt_ms, 1000); // empty
        for i in 0..10u64 {
            for j in (i * 10 + 1)..=(i * 10 + 10) {
                passes(&s, T0 + i * 100 * MS, 1, j);
            }
        }
        // Bucket 9 is current and ignored; bucket 0 averages 5.5 ms → 6.
        assert_eq!(s.stats(T0 + 900 * MS).min_rt_ms, 6);
    }

    #[test]
    fn max_flight() {
        let s = shedder(900);
        for i in 0..10u64 {
            // Bucket i: (i + 1) × 100 passes; bucket 0 averages 6 ms, the others more.
            passes(&s, T0 + i * 100 * MS, (i + 1) * 100, 6 + i);
        }
        let st = s.stats(T0 + 900 * MS); // bucket 9 (1000 passes) is current
        assert_eq!((st.max_pass, st.min_rt_ms), (900, 6));
        assert_eq!(st.max_flight, 900.0 * 6.0 * 0.01);
        assert!((st.max_flight - 54.0).abs() < 1e-9);
        // Cold start: maxPass 1, minRt 1000 → 10.
        assert_eq!(shedder(900).stats(T0).max_flight, 10.0);
    }

    /// Fills the window so that `max_flight` at `T0 + 900 ms` is 54 (the vector above).
    fn shedder_54(threshold: u32) -> (Shedder, u64) {
        let s = shedder(threshold);
        for i in 0..10u64 {
            passes(&s, T0 + i * 100 * MS, (i + 1) * 100, 6 + i);
        }
        (s, T0 + 900 * MS)
    }

    #[test]
    fn should_drop() {
        // Threshold 0: the CPU always counts as overloaded; factor (1000 − cpu) / 1000.
        let (s, now) = shedder_54(0);
        let cpu = 1; // an idle box: factor 0.999
        let factor = s.overload_factor(cpu);
        assert_eq!(factor, 0.999);
        set_flying(&s, 0, 50.0);
        assert!(s.should_drop(now, cpu).is_none());
        set_flying(&s, (54.0 * factor) as u64 - 5, 80.0);
        assert!(s.should_drop(now, cpu).is_none());
        set_flying(&s, 80, 80.0);
        let why = s.should_drop(now, cpu).expect("dropped");
        assert_eq!(
            (why.in_flight, why.avg_in_flight, why.hot),
            (80, 80.0, false)
        );
        assert_eq!(why.limit, 54.0 * factor);
        assert!(s.allow(cpu, now).is_err());
        assert_eq!(s.stats(now).dropped, 1);
        // Not overloaded: never dropped.
        let (s, now) = shedder_54(900);
        set_flying(&s, 80, 80.0);
        assert!(s.should_drop(now, cpu).is_none());
        assert!(s.allow(cpu, now).is_ok());
    }

    #[test]
    fn still_hot() {
        let s = shedder(900);
        s.dropped_recently.store(true, Relaxed);
        assert!(!s.still_hot(T0)); // never overloaded
        s.overload_at.store(T0 - 2 * SEC + 1, Relaxed); // 2 s ago
        assert!(!s.still_hot(T0));
        assert!(!s.dropped_recently.load(Relaxed)); // the lapse clears the mark
        s.dropped_recently.store(true, Relaxed);
        s.overload_at.store(T0 + 1, Relaxed); // now
        assert!(s.still_hot(T0));
        // now = 0 is a valid time here (go-zero's 0 meant "never").
        let z = shedder(900);
        z.dropped_recently.store(true, Relaxed);
        z.overload_at.store(1, Relaxed);
        assert!(z.still_hot(0));
        assert!(z.still_hot(SEC - 1));
        assert!(!z.still_hot(SEC));
    }

    #[test]
    fn derived_limits_are_strict() {
        // maxPass 50, minRt 20 → maxFlight 10 at the default scale 0.01.
        let s = Shedder::new(ShedderConfig::default()).unwrap();
        passes(&s, T0, 50, 20);
        let now = T0 + 100 * MS;
        let st = s.stats(now);
        assert_eq!((st.max_pass, st.min_rt_ms, st.max_flight), (50, 20, 10.0));
        // cpu 950 at threshold 900: factor 0.5, limit 5.
        set_flying(&s, 6, 5.5);
        assert!(s.should_drop(now, 950).is_some());
        set_flying(&s, 5, 5.5);
        assert!(s.should_drop(now, 950).is_none()); // 5 is not > 5
        set_flying(&s, 6, 5.0);
        assert!(s.should_drop(now, 950).is_none());
    }

    #[test]
    fn avg_flying_follows_completions() {
        let s = Shedder::new(ShedderConfig::default()).unwrap();
        let held: Vec<_> = (0..10).map(|_| s.allow(0, 0).unwrap()).collect();
        let mut want = 0.0f64;
        let mut seen = Vec::new();
        for (p, left) in held.into_iter().zip([9.0, 8.0, 7.0]) {
            s.failure(p).unwrap();
            want = want * 0.9 + left * (1.0 - 0.9);
            let avg = s.stats(0).avg_in_flight;
            assert_eq!(avg, want);
            seen.push(avg);
        }
        for (got, vector) in seen.iter().zip([0.9, 1.61, 2.149]) {
            assert!((got - vector).abs() < 1e-12, "{got} vs {vector}");
        }
    }

    #[test]
    fn rt_rounds_up_and_tolerates_old_now() {
        let s = shedder(900);
        let p = s.allow(0, T0).unwrap();
        s.success(p, T0 + MS + 1).unwrap(); // 1 ms + 1 ns → 2 ms
        let p = s.allow(0, T0 + 50 * MS).unwrap();
        s.success(p, T0).unwrap(); // completion "before" admission: 0 ms, no panic
        assert_eq!(s.stats(T0 + 100 * MS).min_rt_ms, 1); // (2 + 0) / 2 = 1
    }

    #[test]
    fn a_wild_now_misleads_only_until_the_next_sane_call() {
        const DAY: u64 = 86_400 * SEC;
        let window = |s: &Shedder, now: u64| {
            let st = s.stats(now);
            (st.max_pass, st.min_rt_ms, st.max_flight)
        };
        // A success at a wild time, and a request admitted and completed at one.
        let calls: [fn(&Shedder, u64, u64); 2] = [
            |s, at, wild| s.success(s.allow(0, at).unwrap(), wild).unwrap(),
            |s, _, wild| s.success(s.allow(0, wild).unwrap(), wild).unwrap(),
        ];
        for wild in [u64::MAX, T0 + 3 * DAY] {
            for call in calls {
                // `s` sees the wild call; `never` does not; `fresh` sees only the traffic after it.
                let (s, never, fresh) = (shedder(900), shedder(900), shedder(900));
                for i in 0..40u64 {
                    let at = T0 + i * 100 * MS;
                    // Varying traffic (idle after 3 s), so that the maxima and minima age visibly.
                    if i < 30 {
                        let (n, rt) = (10 + i * 7 % 13, 3 + i * 5 % 11);
                        passes(&s, at, n, rt);
                        passes(&never, at, n, rt);
                        if i > 5 {
                            passes(&fresh, at, n, rt);
                        }
                    }
                    if i == 5 {
                        call(&s, at, wild);
                        // Until the next sane call, a sane time reads a fresh window (cold start).
                        assert_eq!(window(&s, at + 100 * MS), (1, 1000, 10.0));
                    }
                    if i > 5 {
                        // Sane traffic is measured from the next sane call on, and ages as usual ...
                        assert_eq!(window(&s, at), window(&fresh, at), "{i}");
                    }
                    if i > 15 {
                        // ... and a window after the wild call, it is as if there had been none.
                        assert_eq!(window(&s, at), window(&never, at), "{i}");
                    }
                }
                assert_eq!(window(&s, T0 + 4 * SEC), (1, 1000, 10.0));
            }
        }
    }

    #[test]
    fn a_wild_overload_does_not_keep_the_shedder_hot() {
        for wild in [u64::MAX, T0 + 3 * 86_400 * SEC] {
            let s = shedder(900);
            // An overload at a wild time, after a drop: go-zero's mark would keep it hot until then.
            let _ = s.allow(950, wild);
            s.dropped_recently.store(true, Relaxed);
            assert!(!s.still_hot(T0), "{wild}");
            // A sane overload moves the mark back to its own time, and the cool-off counts from there.
            let _ = s.allow(950, T0);
            s.dropped_recently.store(true, Relaxed);
            assert!(s.still_hot(T0 + SEC / 2), "{wild}");
            assert!(!s.still_hot(T0 + 2 * SEC), "{wild}");
            // A mark slightly ahead (a racing thread's clock) still counts.
            let _ = s.allow(950, T0 + 3 * SEC + 50 * MS);
            s.dropped_recently.store(true, Relaxed);
            assert!(s.still_hot(T0 + 3 * SEC), "{wild}");
        }
    }

    #[test]
    fn forged_completion_is_refused() {
        let s = shedder(900);
        let p = s.allow(0, 0).unwrap();
        let raw = p.into_raw();
        s.failure(Promise::from_raw(raw)).unwrap();
        assert_eq!(s.failure(Promise::from_raw(raw)), Err(NotInFlight));
        assert_eq!(s.success(Promise::from_raw(raw), 5), Err(NotInFlight));
        let st = s.stats(0);
        assert_eq!((st.in_flight, st.failed, st.succeeded), (0, 1, 0));
    }

    #[test]
    fn bad_config_is_rejected() {
        let d = ShedderConfig::default();
        let cases = [
            (
                ShedderConfig { buckets: 0, ..d },
                ShedderConfigError::Buckets,
            ),
            (
                ShedderConfig {
                    buckets: MAX_WINDOW_BUCKETS as u32 + 1,
                    ..d
                },
                ShedderConfigError::Buckets,
            ),
            (
                ShedderConfig { window_ns: 49, ..d },
                ShedderConfigError::Window,
            ),
            (
                ShedderConfig { window_ns: 0, ..d },
                ShedderConfigError::Window,
            ),
            (
                ShedderConfig {
                    cpu_threshold: 1000,
                    ..d
                },
                ShedderConfigError::CpuThreshold,
            ),
            (
                ShedderConfig {
                    cpu_threshold: u32::MAX,
                    ..d
                },
                ShedderConfigError::CpuThreshold,
            ),
        ];
        for (c, e) in cases {
            assert_eq!(Shedder::new(c).unwrap_err(), e, "{c:?}");
        }
        assert!(Shedder::new(ShedderConfig {
            cpu_threshold: 999,
            window_ns: 50,
            ..d
        })
        .is_ok());
        assert_eq!(
            std::format!("{}", ShedderConfigError::CpuThreshold),
            "shedder cpu_threshold must be below 1000 millicpu"
        );
    }
}
