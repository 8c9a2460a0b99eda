//! Responsive exponential backoff ([AutoSleeper's](crate#vocabulary)): the delay goes up by a multiplier on each
//! failure and down by another after every N consecutive successes, dropping to zero once it falls below
//! the initial interval. Unlike AutoSleeper, one [`Backoff`] is safe to share between many workers: its
//! whole state (the current interval and the success streak) is one atomic word updated by
//! compare-and-swap, and its statistics are atomic counters, so they stay exact under any interleaving.
//!
//! It returns the delay ([`Delay`]); the caller sleeps (with `std`, [`Backoff::sleep_on_failure`] and
//! [`Backoff::sleep_on_success`] do it for you).
//!
//! # The rule, exactly (times in ns, `u` uniform in [0, 1) from the caller's generator)
//! - **Failure** (going up): from 0 the interval becomes `initial_ns` (not randomized); otherwise
//!   `x = current × up_multiplier`, jittered (below), and `max_ns` if above `max_ns`.
//! - **Success**: if not backing off (interval 0), nothing happens and no sleep is counted. Otherwise the
//!   streak grows; when it reaches `down_threshold` the interval goes down (`x = current × down_multiplier`,
//!   jittered, and 0 if below `initial_ns`) and the streak restarts. Either way the caller sleeps the
//!   (new) interval, even if it is 0: the seed counts that as a sleep.
//! - Fractions of a nanosecond are truncated, as Go's `time.Duration(float)` does.
//!
//! [`Jitter`] chooses the randomization: AutoSleeper's proportional jitter (the default), none, or the AWS
//! "Exponential Backoff and Jitter" formulas (full, equal, decorrelated).
//!
//! # AutoSleeper's quirks
//! - **A failure restarts the success streak: corrected.** The seed only counts successes, so
//!   `S×9, F, S` goes down although no 10 successes were consecutive; the specification says "after N
//!   consecutive successes", so a failure resets the streak here. (None of AutoSleeper's test vectors
//!   tells the two apart; `failure_restarts_the_streak` below shows the difference.)
//! - **A threshold of 0 never goes down** (the seed compares with `==`): rejected at construction instead.
//! - **Compounding jitter, no floor when going up, first step not randomized: kept.** They are the
//!   AutoSleeper's design (its vectors depend on them) and harmless within the validated ranges.
//!
//! # Memory ordering
//! The state word and the metrics are standalone values with no data published through them: `Relaxed`
//! throughout. Each metric is incremented exactly once per call, after that call's state change.

use crate::internal::sync::{AtomicU64, Ordering::Relaxed};
use crate::internal::time::saturating_ns;
use core::fmt;
use core::time::Duration;
use fastrand::Rng;

/// The longest interval a [`Backoff`] can hold: 2^48 − 1 ns, about 78 hours (the interval shares one
/// atomic word with the success streak).
///
/// ```
/// assert_eq!(weir::backoff::MAX_BACKOFF_NS, (1 << 48) - 1);
/// ```
pub const MAX_BACKOFF_NS: u64 = (1 << 48) - 1;

const STREAK_SHIFT: u32 = 48;

#[inline]
fn interval(state: u64) -> u64 {
    state & MAX_BACKOFF_NS
}
#[inline]
fn streak(state: u64) -> u64 {
    state >> STREAK_SHIFT
}
#[inline]
fn pack(interval: u64, streak: u64) -> u64 {
    (streak << STREAK_SHIFT) | (interval & MAX_BACKOFF_NS)
}

/// How a [`Backoff`] randomizes its delays (`u` is uniform in [0, 1) from the caller's generator).
///
/// ```
/// use weir::backoff::Jitter;
/// assert_eq!(Jitter::default(), Jitter::Proportional { factor: 0.3, max_ns: 120_000_000_000 });
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Jitter {
    /// No randomization: the interval is exactly the multiplied one.
    None,
    /// AutoSleeper's: each new interval `x` becomes `x − d + 2·d·u` with `d = min(factor·x, max_ns)`, and
    /// the randomized value is the base of the next step (the jitter compounds).
    Proportional {
        /// The randomization factor, in [0, 1] (seed default 0.3).
        factor: f64,
        /// The most a delay is moved either way, in ns (seed default 2 minutes; or
        /// [`Jitter::proportional`]).
        max_ns: u64,
    },
    /// AWS "full jitter": the interval grows without jitter; each delay is `u × interval`.
    Full,
    /// AWS "equal jitter": each delay is `interval/2 + u × interval/2`.
    Equal,
    /// AWS "decorrelated jitter": going up, the interval becomes `initial + u × (current × up −
    /// initial)` (AWS: `min(cap, U(base, sleep × 3))`, so use `up_multiplier: 3.0` for their formula),
    /// starting from `current = initial`; going down is not randomized. The delay is the interval.
    Decorrelated,
}

impl Jitter {
    /// AutoSleeper's proportional jitter ([`Jitter::Proportional`]) with the cap given as a [`Duration`]:
    /// each new interval `x` moves by up to `min(factor·x, max)` either way. A `max` longer than
    /// `u64::MAX` ns (about 584 years) saturates to `u64::MAX`, which caps nothing.
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::backoff::Jitter;
    /// let j = Jitter::proportional(0.3, Duration::from_secs(120));
    /// assert_eq!(j, Jitter::default());
    /// assert_eq!(j, Jitter::Proportional { factor: 0.3, max_ns: 120_000_000_000 });
    /// ```
    #[must_use]
    pub const fn proportional(factor: f64, max: Duration) -> Jitter {
        Jitter::Proportional {
            factor,
            max_ns: saturating_ns(max),
        }
    }
}

impl Default for Jitter {
    fn default() -> Self {
        Jitter::Proportional {
            factor: 0.3,
            max_ns: 120_000_000_000,
        }
    }
}

/// Configuration of a [`Backoff`]; the defaults are [AutoSleeper's](crate#vocabulary) `NewAutoSleeper`.
///
/// ```
/// let c = weir::backoff::BackoffConfig::default();
/// assert_eq!((c.initial_ns, c.max_ns), (500_000_000, 900_000_000_000));
/// assert_eq!((c.up_multiplier, c.down_multiplier, c.down_threshold), (1.5, 0.9, 10));
/// assert!(c.validate().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BackoffConfig {
    /// The first interval, and the floor below which the interval drops to 0 (default 500 ms); at least
    /// 1 ns and at most `max_ns`. Or [`BackoffConfig::initial`].
    pub initial_ns: u64,
    /// The longest interval (default 15 minutes); at most [`MAX_BACKOFF_NS`]. Or [`BackoffConfig::max`].
    pub max_ns: u64,
    /// The factor applied on failure, finite and at least 1 (default 1.5).
    pub up_multiplier: f64,
    /// The factor applied after `down_threshold` consecutive successes, in (0, 1] (default 0.9).
    pub down_multiplier: f64,
    /// Consecutive successes per step down, at least 1 (default 10).
    pub down_threshold: u16,
    /// Randomization (default: AutoSleeper's, factor 0.3 capped at 2 minutes).
    pub jitter: Jitter,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial_ns: 500_000_000,
            max_ns: 900_000_000_000,
            up_multiplier: 1.5,
            down_multiplier: 0.9,
            down_threshold: 10,
            jitter: Jitter::default(),
        }
    }
}

impl BackoffConfig {
    /// Sets [`initial_ns`](Self::initial_ns), the first interval and the floor below which the interval
    /// drops to 0, from a [`Duration`]. A duration longer than `u64::MAX` ns (about 584 years) saturates
    /// to `u64::MAX`; validation checks the result as any `initial_ns` (1 ns to `max_ns`).
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::backoff::BackoffConfig;
    /// let c = BackoffConfig::default()
    ///     .initial(Duration::from_millis(10))
    ///     .max(Duration::from_secs(30));
    /// assert_eq!((c.initial_ns, c.max_ns), (10_000_000, 30_000_000_000));
    /// assert!(c.validate().is_ok());
    /// assert!(c.initial(Duration::from_secs(31)).validate().is_err()); // above max
    /// ```
    #[must_use]
    pub const fn initial(self, initial: Duration) -> Self {
        BackoffConfig {
            initial_ns: saturating_ns(initial),
            ..self
        }
    }

    /// Sets [`max_ns`](Self::max_ns), the longest interval, from a [`Duration`]. A duration longer than
    /// `u64::MAX` ns saturates to `u64::MAX`; validation refuses anything above [`MAX_BACKOFF_NS`]
    /// (about 78 hours).
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::backoff::{BackoffConfig, BackoffConfigError, MAX_BACKOFF_NS};
    /// let c = BackoffConfig::default().max(Duration::from_nanos(MAX_BACKOFF_NS));
    /// assert!(c.validate().is_ok());
    /// let c = c.max(Duration::MAX);
    /// assert_eq!(c.max_ns, u64::MAX);
    /// assert_eq!(c.validate(), Err(BackoffConfigError::Max));
    /// ```
    #[must_use]
    pub const fn max(self, max: Duration) -> Self {
        BackoffConfig {
            max_ns: saturating_ns(max),
            ..self
        }
    }

    /// Checks every parameter and returns the first problem found.
    ///
    /// ```
    /// use weir::{backoff::BackoffConfig, backoff::BackoffConfigError};
    /// let bad = BackoffConfig { down_multiplier: f64::NAN, ..BackoffConfig::default() };
    /// assert_eq!(bad.validate(), Err(BackoffConfigError::DownMultiplier));
    /// ```
    pub fn validate(&self) -> Result<(), BackoffConfigError> {
        if self.max_ns == 0 || self.max_ns > MAX_BACKOFF_NS {
            return Err(BackoffConfigError::Max);
        }
        if self.initial_ns == 0 || self.initial_ns > self.max_ns {
            return Err(BackoffConfigError::Initial);
        }
        if !(self.up_multiplier.is_finite() && self.up_multiplier >= 1.0) {
            return Err(BackoffConfigError::UpMultiplier);
        }
        if !(self.down_multiplier > 0.0 && self.down_multiplier <= 1.0) {
            return Err(BackoffConfigError::DownMultiplier);
        }
        if self.down_threshold == 0 {
            return Err(BackoffConfigError::DownThreshold);
        }
        if let Jitter::Proportional { factor, .. } = self.jitter {
            if !(0.0..=1.0).contains(&factor) {
                return Err(BackoffConfigError::JitterFactor);
            }
        }
        Ok(())
    }
}

/// A [`BackoffConfig`] that was rejected.
///
/// ```
/// use weir::{backoff::BackoffConfig, backoff::BackoffConfigError};
/// let e = BackoffConfig { up_multiplier: 0.5, ..BackoffConfig::default() }.validate().unwrap_err();
/// assert_eq!(e, BackoffConfigError::UpMultiplier);
/// assert_eq!(e.to_string(), "backoff up_multiplier must be finite and >= 1");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackoffConfigError {
    /// `initial_ns` must be at least 1 and at most `max_ns`.
    Initial,
    /// `max_ns` must be at least 1 and at most [`MAX_BACKOFF_NS`].
    Max,
    /// `up_multiplier` must be finite and at least 1.
    UpMultiplier,
    /// `down_multiplier` must be in (0, 1].
    DownMultiplier,
    /// `down_threshold` must be at least 1.
    DownThreshold,
    /// A proportional jitter's `factor` must be in [0, 1].
    JitterFactor,
}

impl fmt::Display for BackoffConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackoffConfigError::Initial => "backoff initial_ns must be between 1 and max_ns",
            BackoffConfigError::Max => "backoff max_ns must be between 1 and MAX_BACKOFF_NS",
            BackoffConfigError::UpMultiplier => "backoff up_multiplier must be finite and >= 1",
            BackoffConfigError::DownMultiplier => "backoff down_multiplier must be in (0, 1]",
            BackoffConfigError::DownThreshold => "backoff down_threshold must be at least 1",
            BackoffConfigError::JitterFactor => "backoff jitter factor must be in [0, 1]",
        })
    }
}

#[cfg(feature = "std")]
impl std::error::Error for BackoffConfigError {}

/// What one call did to the interval.
///
/// ```
/// use weir::{Backoff, backoff::BackoffConfig, backoff::Step};
/// let b = Backoff::new(BackoffConfig { down_threshold: 1, ..BackoffConfig::default() }).unwrap();
/// let mut rng = weir::Rng::with_seed(1);
/// assert_eq!(b.on_success(&mut rng).step, Step::Idle);
/// assert_eq!(b.on_failure(&mut rng).step, Step::Up);
/// assert_eq!(b.on_success(&mut rng).step, Step::Down); // 500 ms × 0.9 ± 30 % may drop below 500 ms → 0
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// A failure: the interval went up (or started).
    Up,
    /// The success that completed a streak: the interval went down (possibly to 0).
    Down,
    /// A success within a streak: the interval stayed.
    Hold,
    /// A success while not backing off: nothing changed and there is nothing to sleep.
    Idle,
}

/// The delay to sleep before the next call, and what the call did.
///
/// ```
/// use weir::{Backoff, backoff::BackoffConfig, backoff::Jitter, backoff::Step};
/// let b = Backoff::new(BackoffConfig { jitter: Jitter::None, ..BackoffConfig::default() }).unwrap();
/// let d = b.on_failure(&mut weir::Rng::with_seed(1));
/// assert_eq!((d.ns, d.step), (500_000_000, Step::Up));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Delay {
    /// Nanoseconds to sleep (0: go on at once).
    pub ns: u64,
    /// What the call did to the interval.
    pub step: Step,
}

/// AutoSleeper's statistics, counted exactly even when many threads share the backoff.
///
/// ```
/// let b = weir::Backoff::new(weir::backoff::BackoffConfig::default()).unwrap();
/// let mut rng = weir::Rng::with_seed(1);
/// b.on_failure(&mut rng);
/// b.on_success(&mut rng);
/// let m = b.stats();
/// assert_eq!((m.invocations, m.went_up, m.went_down, m.slept), (2, 1, 0, 2));
/// assert_eq!(m.sleep_ns, 1_000_000_000); // 500 ms twice
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct BackoffStats {
    /// Calls of `on_failure` and `on_success`.
    pub invocations: u64,
    /// Steps up (one per failure).
    pub went_up: u64,
    /// Steps down.
    pub went_down: u64,
    /// Delays handed out to sleep (every call except an [`Step::Idle`] success), zero delays included.
    pub slept: u64,
    /// The sum of those delays, in ns (saturating).
    pub sleep_ns: u64,
}

/// A shareable responsive exponential backoff; see the module docs. Thread-safe: every method takes
/// `&self`, each thread passes its own generator.
///
/// ```
/// use weir::{Backoff, backoff::BackoffConfig, backoff::Jitter};
///
/// let backoff = Backoff::new(BackoffConfig {
///     initial_ns: 1_000_000,
///     up_multiplier: 2.0,
///     down_multiplier: 0.5,
///     down_threshold: 2,
///     jitter: Jitter::None,
///     ..BackoffConfig::default()
/// })
/// .unwrap();
/// let mut rng = weir::Rng::with_seed(1);
/// let delays: Vec<u64> = [false, false, true, true, true, true, true]
///     .iter()
///     .map(|&ok| if ok { backoff.on_success(&mut rng) } else { backoff.on_failure(&mut rng) }.ns)
///     .collect();
/// assert_eq!(delays, [1_000_000, 2_000_000, 2_000_000, 1_000_000, 1_000_000, 0, 0]);
/// ```
#[derive(Debug)]
pub struct Backoff {
    config: BackoffConfig,
    /// `streak << 48 | interval_ns`.
    state: AtomicU64,
    invocations: AtomicU64,
    went_up: AtomicU64,
    went_down: AtomicU64,
    slept: AtomicU64,
    sleep_ns: AtomicU64,
}

impl Backoff {
    /// Builds a backoff, or says which parameter is wrong.
    ///
    /// ```
    /// use weir::{Backoff, backoff::BackoffConfig, backoff::BackoffConfigError};
    /// let zero = BackoffConfig { down_threshold: 0, ..BackoffConfig::default() };
    /// assert_eq!(Backoff::new(zero).unwrap_err(), BackoffConfigError::DownThreshold);
    /// ```
    pub fn new(config: BackoffConfig) -> Result<Self, BackoffConfigError> {
        config.validate()?;
        Ok(Backoff {
            config,
            state: AtomicU64::new(0),
            invocations: AtomicU64::new(0),
            went_up: AtomicU64::new(0),
            went_down: AtomicU64::new(0),
            slept: AtomicU64::new(0),
            sleep_ns: AtomicU64::new(0),
        })
    }

    /// The configuration this backoff was built with.
    ///
    /// ```
    /// let b = weir::Backoff::new(weir::backoff::BackoffConfig::default()).unwrap();
    /// assert_eq!(b.config().down_threshold, 10);
    /// ```
    pub fn config(&self) -> &BackoffConfig {
        &self.config
    }

    /// Reports a failure: the interval goes up; returns the delay to sleep.
    ///
    /// ```
    /// use weir::{Backoff, backoff::BackoffConfig};
    /// let b = Backoff::new(BackoffConfig::default()).unwrap();
    /// let mut rng = weir::Rng::with_seed(1);
    /// assert_eq!(b.on_failure(&mut rng).ns, 500_000_000); // the first step is not randomized
    /// let second = b.on_failure(&mut rng).ns; // 750 ms ± 30 %
    /// assert!((525_000_000..975_000_000).contains(&second));
    /// ```
    pub fn on_failure(&self, rng: &mut Rng) -> Delay {
        // Relaxed: the word publishes nothing but itself (module docs); the CAS below re-checks it.
        let mut state = self.state.load(Relaxed);
        let mut draw = Draw::new(rng);
        let next = loop {
            let next = self.up(interval(state), &mut draw);
            // Relaxed: see the module docs. A failure restarts the streak.
            match self
                .state
                .compare_exchange_weak(state, pack(next, 0), Relaxed, Relaxed)
            {
                Ok(_) => break next,
                Err(seen) => state = seen,
            }
        };
        // Relaxed: metrics.
        self.invocations.fetch_add(1, Relaxed);
        self.went_up.fetch_add(1, Relaxed);
        self.sleep(next, Step::Up, rng)
    }

    /// Reports a success: after `down_threshold` consecutive ones the interval goes down; returns the
    /// delay to sleep (0 with [`Step::Idle`] when not backing off).
    ///
    /// ```
    /// use weir::{Backoff, backoff::BackoffConfig, backoff::Step};
    /// let b = Backoff::new(BackoffConfig::default()).unwrap();
    /// let mut rng = weir::Rng::with_seed(1);
    /// assert_eq!(b.on_success(&mut rng).step, Step::Idle);
    /// b.on_failure(&mut rng);
    /// assert_eq!(b.on_success(&mut rng).step, Step::Hold);
    /// ```
    pub fn on_success(&self, rng: &mut Rng) -> Delay {
        // Relaxed: the word publishes nothing but itself (module docs); the CAS below re-checks it.
        let mut state = self.state.load(Relaxed);
        let mut draw = Draw::new(rng);
        let (next, step) = loop {
            let current = interval(state);
            if current == 0 {
                break (0, Step::Idle);
            }
            let run = streak(state) + 1;
            let (next, run, step) = if run >= u64::from(self.config.down_threshold) {
                (self.down(current, &mut draw), 0, Step::Down)
            } else {
                (current, run, Step::Hold)
            };
            // Relaxed: see the module docs.
            match self
                .state
                .compare_exchange_weak(state, pack(next, run), Relaxed, Relaxed)
            {
                Ok(_) => break (next, step),
                Err(seen) => state = seen,
            }
        };
        // Relaxed: metrics.
        self.invocations.fetch_add(1, Relaxed);
        match step {
            Step::Idle => Delay { ns: 0, step },
            Step::Down => {
                self.went_down.fetch_add(1, Relaxed);
                self.sleep(next, step, rng)
            }
            _ => self.sleep(next, step, rng),
        }
    }

    /// The current interval in ns (0: not backing off).
    ///
    /// ```
    /// let b = weir::Backoff::new(weir::backoff::BackoffConfig::default()).unwrap();
    /// assert_eq!(b.interval_ns(), 0);
    /// ```
    pub fn interval_ns(&self) -> u64 {
        // Relaxed: see the module docs.
        interval(self.state.load(Relaxed))
    }

    /// Stops backing off (interval and streak to 0); the metrics are kept.
    ///
    /// ```
    /// let b = weir::Backoff::new(weir::backoff::BackoffConfig::default()).unwrap();
    /// b.on_failure(&mut weir::Rng::with_seed(1));
    /// b.reset();
    /// assert_eq!(b.interval_ns(), 0);
    /// assert_eq!(b.stats().went_up, 1);
    /// ```
    pub fn reset(&self) {
        // Relaxed: see the module docs.
        self.state.store(0, Relaxed);
    }

    /// The statistics so far. Each counter is exact; a snapshot taken while other threads are calling may
    /// mix counters from slightly different moments.
    ///
    /// ```
    /// let b = weir::Backoff::new(weir::backoff::BackoffConfig::default()).unwrap();
    /// let mut rng = weir::Rng::with_seed(1);
    /// b.on_success(&mut rng);
    /// let d = b.on_failure(&mut rng);
    /// let m = b.stats();
    /// assert_eq!((m.invocations, m.went_up, m.slept, m.sleep_ns), (2, 1, 1, d.ns));
    /// ```
    pub fn stats(&self) -> BackoffStats {
        // Relaxed: metrics.
        BackoffStats {
            invocations: self.invocations.load(Relaxed),
            went_up: self.went_up.load(Relaxed),
            went_down: self.went_down.load(Relaxed),
            slept: self.slept.load(Relaxed),
            sleep_ns: self.sleep_ns.load(Relaxed),
        }
    }

    /// Counts and returns the delay for a new interval `next`.
    fn sleep(&self, next: u64, step: Step, rng: &mut Rng) -> Delay {
        let ns = match self.config.jitter {
            _ if next == 0 => 0,
            Jitter::Full => (next as f64 * rng.f64()) as u64,
            Jitter::Equal => {
                let half = next as f64 / 2.0;
                (half + half * rng.f64()) as u64
            }
            _ => next,
        };
        // Relaxed: metrics.
        self.slept.fetch_add(1, Relaxed);
        let _ = self
            .sleep_ns
            .fetch_update(Relaxed, Relaxed, |t| Some(t.saturating_add(ns)));
        Delay { ns, step }
    }

    /// AutoSleeper's `goUp`.
    fn up(&self, current: u64, rng: &mut Draw<'_>) -> u64 {
        let c = &self.config;
        let n = if current == 0 {
            match c.jitter {
                Jitter::Decorrelated => {
                    decorrelated(c.initial_ns, c.initial_ns as f64 * c.up_multiplier, rng)
                }
                _ => return c.initial_ns,
            }
        } else {
            let x = current as f64 * c.up_multiplier;
            match c.jitter {
                Jitter::Proportional { factor, max_ns } => proportional(x, factor, max_ns, rng),
                Jitter::Decorrelated => decorrelated(c.initial_ns, x, rng),
                _ => x,
            }
        };
        if n > c.max_ns as f64 {
            c.max_ns
        } else {
            n as u64
        }
    }

    /// AutoSleeper's `goDown`.
    fn down(&self, current: u64, rng: &mut Draw<'_>) -> u64 {
        let c = &self.config;
        let x = current as f64 * c.down_multiplier;
        let n = match c.jitter {
            Jitter::Proportional { factor, max_ns } => proportional(x, factor, max_ns, rng),
            _ => x,
        };
        if n < c.initial_ns as f64 {
            0
        } else {
            // Proportional jitter can lift a step down above the cap; the interval never exceeds it.
            (n as u64).min(c.max_ns)
        }
    }
}

/// The uniform draw of one step: taken from the caller's generator when a step first needs it, and the
/// same value again if the step's compare-and-swap retries. So a call draws the same whatever the retries
/// (another thread's update, or a spurious failure of the weak compare-and-swap on LL/SC machines such as
/// ARM), and one generator replays the same delays on every machine.
struct Draw<'a> {
    rng: &'a mut Rng,
    taken: Option<f64>,
}

impl<'a> Draw<'a> {
    fn new(rng: &'a mut Rng) -> Self {
        Draw { rng, taken: None }
    }

    /// Uniform in `[0, 1)`: the first call draws, later ones repeat it.
    fn f64(&mut self) -> f64 {
        match self.taken {
            Some(u) => u,
            None => {
                let u = self.rng.f64();
                self.taken = Some(u);
                u
            }
        }
    }
}

/// AutoSleeper's `getNextRandomInterval`: uniform in `[x − d, x + d)` with `d = min(factor·x, max)`.
fn proportional(x: f64, factor: f64, max_ns: u64, rng: &mut Draw<'_>) -> f64 {
    if factor == 0.0 {
        return x;
    }
    let d = (factor * x).min(max_ns as f64);
    (x - d) + 2.0 * d * rng.f64()
}

/// AWS decorrelated jitter: uniform in `[initial, hi)`.
fn decorrelated(initial: u64, hi: f64, rng: &mut Draw<'_>) -> f64 {
    let lo = initial as f64;
    lo + (hi - lo).max(0.0) * rng.f64()
}

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl Backoff {
    /// [`Backoff::on_failure`], then sleeps the delay on this thread; returns it.
    ///
    /// ```
    /// use weir::{Backoff, backoff::BackoffConfig, backoff::Jitter};
    /// let b = Backoff::new(BackoffConfig { initial_ns: 1_000, jitter: Jitter::None, ..BackoffConfig::default() }).unwrap();
    /// assert_eq!(b.sleep_on_failure(&mut weir::Rng::with_seed(1)).as_nanos(), 1_000);
    /// ```
    pub fn sleep_on_failure(&self, rng: &mut Rng) -> std::time::Duration {
        let d = std::time::Duration::from_nanos(self.on_failure(rng).ns);
        std::thread::sleep(d);
        d
    }

    /// [`Backoff::on_success`], then sleeps the delay on this thread (if any); returns it.
    ///
    /// ```
    /// let b = weir::Backoff::new(weir::backoff::BackoffConfig::default()).unwrap();
    /// assert!(b.sleep_on_success(&mut weir::Rng::with_seed(1)).is_zero());
    /// ```
    pub fn sleep_on_success(&self, rng: &mut Rng) -> std::time::Duration {
        let d = std::time::Duration::from_nanos(self.on_success(rng).ns);
        if !d.is_zero() {
            std::thread::sleep(d);
        }
        d
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    //! The AutoSleeper's [`sleeper_test.go`] vectors, all with the default threshold and maximum unless
    //! stated.
    //!
    //! [`sleeper_test.go`]: https://github.com/sakthipriyan/go-utils/blob/9b39ddee68586976fd627d635bc6d1ee6a0056c8/sleeper_test.go
    use super::*;

    const US: u64 = 1_000;

    fn backoff(initial: u64, up: f64, down: f64, threshold: u16, jitter: Jitter) -> Backoff {
        Backoff::new(BackoffConfig {
            initial_ns: initial,
            up_multiplier: up,
            down_multiplier: down,
            down_threshold: threshold,
            jitter,
            ..BackoffConfig::default()
        })
        .unwrap()
    }

    fn m(
        invocations: u64,
        went_up: u64,
        went_down: u64,
        slept: u64,
        sleep_ns: u64,
    ) -> BackoffStats {
        BackoffStats {
            invocations,
            went_up,
            went_down,
            slept,
            sleep_ns,
        }
    }

    #[test]
    fn vector_up_down_small() {
        let b = backoff(10 * US, 1.1, 0.9, 10, Jitter::None);
        let mut rng = Rng::with_seed(1);
        b.on_success(&mut rng);
        assert_eq!(b.stats(), m(1, 0, 0, 0, 0));
        b.on_failure(&mut rng);
        assert_eq!(b.stats(), m(2, 1, 0, 1, 10 * US));
        b.on_success(&mut rng);
        assert_eq!(b.stats(), m(3, 1, 0, 2, 20 * US));
        b.on_failure(&mut rng);
        assert_eq!(b.stats(), m(4, 2, 0, 3, 31 * US));
        b.on_failure(&mut rng);
        assert_eq!(b.stats(), m(5, 3, 0, 4, 43_100));
    }

    #[test]
    fn vector_five_up_thirty_down() {
        let b = backoff(US, 2.0, 0.5, 5, Jitter::None);
        let mut rng = Rng::with_seed(1);
        let mut delays = [0u64; 35];
        for (i, d) in delays.iter_mut().enumerate() {
            *d = if i < 5 {
                b.on_failure(&mut rng)
            } else {
                b.on_success(&mut rng)
            }
            .ns;
        }
        assert_eq!(b.stats(), m(35, 5, 5, 30, 170 * US));
        assert_eq!(
            delays[..9],
            [
                US,
                2 * US,
                4 * US,
                8 * US,
                16 * US,
                16 * US,
                16 * US,
                16 * US,
                16 * US
            ]
        );
        assert_eq!(delays[9], 8 * US); // the 5th success goes down
        assert_eq!(delays[29], 0); // the 25th goes to 0.5 µs < 1 µs: 0, still counted as a sleep
        assert_eq!(b.interval_ns(), 0);
    }

    #[test]
    fn vector_capped() {
        let b = Backoff::new(BackoffConfig {
            initial_ns: 100 * US,
            max_ns: 150 * US,
            up_multiplier: 2.0,
            down_multiplier: 0.5,
            down_threshold: 1,
            jitter: Jitter::None,
        })
        .unwrap();
        let mut rng = Rng::with_seed(1);
        let d: [u64; 4] = [
            b.on_failure(&mut rng).ns,
            b.on_failure(&mut rng).ns,
            b.on_success(&mut rng).ns,
            b.on_success(&mut rng).ns,
        ];
        assert_eq!(d, [100 * US, 150 * US, 0, 0]);
        assert_eq!(b.stats(), m(4, 2, 1, 3, 250 * US));
    }

    #[test]
    fn vector_first_step_not_randomized() {
        for seed in 0..100 {
            let b = backoff(
                US,
                1.5,
                0.9,
                10,
                Jitter::Proportional {
                    factor: 0.2,
                    max_ns: 120_000_000_000,
                },
            );
            b.on_failure(&mut Rng::with_seed(seed));
            assert_eq!(b.stats().sleep_ns, US);
        }
    }

    #[test]
    fn vector_randomization_capped() {
        let (mut lo, mut hi) = (u64::MAX, 0);
        for seed in 0..1000 {
            let b = backoff(
                100 * US,
                2.0,
                0.9,
                10,
                Jitter::Proportional {
                    factor: 0.2,
                    max_ns: 10 * US,
                },
            );
            let mut rng = Rng::with_seed(seed);
            b.on_failure(&mut rng);
            b.on_failure(&mut rng);
            let t = b.stats().sleep_ns;
            assert!((290 * US..=310 * US).contains(&t), "{t}");
            lo = lo.min(t);
            hi = hi.max(t);
        }
        // 200 ± min(40, 10) µs: the draws cover the range.
        assert!(lo < 292 * US && hi > 308 * US, "{lo} {hi}");
    }

    #[test]
    fn failure_restarts_the_streak() {
        let b = backoff(US, 2.0, 0.5, 3, Jitter::None);
        let mut rng = Rng::with_seed(1);
        b.on_failure(&mut rng); // 1 µs
        b.on_failure(&mut rng); // 2 µs
        b.on_success(&mut rng);
        b.on_success(&mut rng);
        b.on_failure(&mut rng); // 4 µs; the seed would keep the streak at 2...
        assert_eq!(b.on_success(&mut rng).step, Step::Hold); // ...and go down here.
        assert_eq!(b.on_success(&mut rng).step, Step::Hold);
        let d = b.on_success(&mut rng);
        assert_eq!((d.ns, d.step), (2 * US, Step::Down));
    }

    #[test]
    fn aws_jitters() {
        let mut rng = Rng::with_seed(42);
        for _ in 0..200 {
            // Full: [0, interval); Equal: [interval/2, interval); the interval itself doubles to the cap.
            let full = Backoff::new(BackoffConfig {
                initial_ns: 100,
                max_ns: 1_000,
                up_multiplier: 2.0,
                jitter: Jitter::Full,
                ..BackoffConfig::default()
            })
            .unwrap();
            let equal = Backoff::new(BackoffConfig {
                jitter: Jitter::Equal,
                ..*full.config()
            })
            .unwrap();
            for want in [100, 200, 400, 800, 1000, 1000] {
                let f = full.on_failure(&mut rng).ns;
                assert!(f < want && full.interval_ns() == want, "{f} {want}");
                let e = equal.on_failure(&mut rng).ns;
                assert!(e >= want / 2 && e < want, "{e} {want}");
            }
            // Decorrelated with up 3 is AWS's: min(cap, U(base, 3 × previous)), previous = base at first.
            let dec = Backoff::new(BackoffConfig {
                up_multiplier: 3.0,
                max_ns: 10_000,
                jitter: Jitter::Decorrelated,
                ..*full.config()
            })
            .unwrap();
            let mut prev = 100;
            for _ in 0..8 {
                let d = dec.on_failure(&mut rng).ns;
                assert!(d >= 100 && (d < 3 * prev || d == 10_000), "{d} {prev}");
                prev = d;
            }
        }
    }

    #[test]
    fn proportional_down_never_exceeds_the_cap() {
        let b = Backoff::new(BackoffConfig {
            initial_ns: 10,
            max_ns: 100,
            up_multiplier: 10.0,
            down_multiplier: 1.0,
            down_threshold: 1,
            jitter: Jitter::Proportional {
                factor: 1.0,
                max_ns: u64::MAX,
            },
        })
        .unwrap();
        let mut rng = Rng::with_seed(3);
        for _ in 0..1000 {
            b.on_failure(&mut rng);
            assert!(b.on_success(&mut rng).ns <= 100);
            assert!(b.interval_ns() <= 100);
        }
    }

    /// A step whose compare-and-swap retries (contention, or a spurious failure on LL/SC machines)
    /// computes its interval again from the same draw: a call advances the generator by the same
    /// amount whatever the retries, so one seed replays the same delays on every machine.
    #[test]
    fn a_retried_step_reuses_its_draw() {
        for jitter in [Jitter::default(), Jitter::Decorrelated] {
            let b = Backoff::new(BackoffConfig {
                jitter,
                ..BackoffConfig::default()
            })
            .unwrap();
            let mut rng = Rng::with_seed(9);
            let mut twin = rng.clone();
            let mut draw = Draw::new(&mut rng);
            let first = b.up(1_000_000_000, &mut draw);
            assert_eq!(b.up(1_000_000_000, &mut draw), first, "{jitter:?}");
            assert_eq!(
                b.down(1_000_000_000, &mut draw),
                b.down(1_000_000_000, &mut draw)
            );
            twin.f64();
            assert_eq!(rng.get_seed(), twin.get_seed(), "{jitter:?}: one draw");
        }
    }

    #[test]
    fn extremes_never_panic() {
        let b = Backoff::new(BackoffConfig {
            initial_ns: 1,
            max_ns: MAX_BACKOFF_NS,
            up_multiplier: f64::MAX,
            down_multiplier: f64::MIN_POSITIVE,
            down_threshold: 1,
            jitter: Jitter::Proportional {
                factor: 1.0,
                max_ns: u64::MAX,
            },
        })
        .unwrap();
        let mut rng = Rng::with_seed(3);
        for _ in 0..100 {
            assert!(b.on_failure(&mut rng).ns <= MAX_BACKOFF_NS);
        }
        assert_eq!(b.interval_ns(), MAX_BACKOFF_NS);
        b.on_success(&mut rng);
        assert_eq!(b.interval_ns(), 0);
        let m = b.stats();
        assert_eq!((m.went_up, m.went_down, m.slept), (100, 1, 101));
        assert!(m.sleep_ns >= 99 * MAX_BACKOFF_NS); // summed without overflow
    }

    #[test]
    fn bad_config_is_rejected() {
        let d = BackoffConfig::default();
        let cases = [
            (
                BackoffConfig { initial_ns: 0, ..d },
                BackoffConfigError::Initial,
            ),
            (
                BackoffConfig {
                    initial_ns: d.max_ns + 1,
                    ..d
                },
                BackoffConfigError::Initial,
            ),
            (BackoffConfig { max_ns: 0, ..d }, BackoffConfigError::Max),
            (
                BackoffConfig {
                    max_ns: MAX_BACKOFF_NS + 1,
                    ..d
                },
                BackoffConfigError::Max,
            ),
            (
                BackoffConfig {
                    up_multiplier: 0.5,
                    ..d
                },
                BackoffConfigError::UpMultiplier,
            ),
            (
                BackoffConfig {
                    up_multiplier: f64::NAN,
                    ..d
                },
                BackoffConfigError::UpMultiplier,
            ),
            (
                BackoffConfig {
                    up_multiplier: f64::INFINITY,
                    ..d
                },
                BackoffConfigError::UpMultiplier,
            ),
            (
                BackoffConfig {
                    down_multiplier: 0.0,
                    ..d
                },
                BackoffConfigError::DownMultiplier,
            ),
            (
                BackoffConfig {
                    down_multiplier: 1.5,
                    ..d
                },
                BackoffConfigError::DownMultiplier,
            ),
            (
                BackoffConfig {
                    down_threshold: 0,
                    ..d
                },
                BackoffConfigError::DownThreshold,
            ),
            (
                BackoffConfig {
                    jitter: Jitter::Proportional {
                        factor: f64::NAN,
                        max_ns: 1,
                    },
                    ..d
                },
                BackoffConfigError::JitterFactor,
            ),
            (
                BackoffConfig {
                    jitter: Jitter::Proportional {
                        factor: 1.01,
                        max_ns: 1,
                    },
                    ..d
                },
                BackoffConfigError::JitterFactor,
            ),
        ];
        for (c, e) in cases {
            assert_eq!(Backoff::new(c).unwrap_err(), e, "{c:?}");
        }
    }
}
