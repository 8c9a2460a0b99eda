//! Per-node limiter state: a fixed array of atomic words, const-constructible, no allocation.
//!
//! # Layout
//! [`LIMIT_WORDS`] = 16 words (128 bytes). Words 0..3 belong to the limit algorithm, words 3..16 to the
//! windowed wrapper ([`WindowedLimit`](super::WindowedLimit)), which puts any algorithm in the first three:
//!
//! | word | Fixed | AIMD | CIAD | Vegas | Gradient | Gradient2 |
//! |---|---|---|---|---|---|---|
//! | 0 | – | limit (`u32`) | `f64` limit, sign bit = ramp over | `f64` estimate | `f64` estimate | `f64` estimate |
//! | 1 | – | – | smoothed RTT (`f64` ns, 0 = none; with `rtt_tolerance`) | no-load RTT (ns, 0 = unknown) | minimum RTT (ns, 0 = empty) | long-RTT average ([`ExpAvg`](super::measure) encoding) |
//! | 2 | – | – | baseline RTT (`f32` ns) \| its tick (32; with `rtt_tolerance`) | probe: jitter (32) \| drawn (1) \| count (31) | probe countdown (32) \| drawn (1) | – |
//!
//! Words 3..16, windowed wrapper: 3 = window aggregate (average: count 16 \| RTT sum 48; percentile:
//! generation 8 \| count 8, count 255 while a close reads the samples), 4 = drop 1 \| max in-flight 24 \|
//! min RTT 39, 5 = next close time (ns;
//! `u64::MAX` while a close is in progress), 6..16 = the percentile window's samples
//! ([`PERCENTILE_CAPACITY`]), each written 1 \| generation 8 \| RTT 55.
//!
//! Ten of the sixteen words exist only for the optional percentile window. Without them the state (48
//! bytes) would fit in the padding of a 128-byte-aligned [`NodeSlot`](crate::balance::NodeSlot); with them a slot
//! grows from 256 to 384 bytes. Java's percentile window holds as many samples as configured; a small
//! fixed capacity is the price of allocation-free storage.
//!
//! # Memory ordering
//! Every access to these words is `Relaxed`. The words are statistics: each word's own read-modify-write
//! is atomic, a thread that reads a slightly older value computes the update it would have computed had
//! it run a moment earlier, and no word publishes the contents of another (the percentile window's
//! claimed-then-written samples are tagged, so a close that cannot see a sample yet leaves it out). Where an algorithm keeps
//! several words, its module explains why interleaving two of them can never produce an out-of-bounds,
//! NaN or infinite limit. The slot's control word publishes a freshly [`reset`](super::Limit::reset)
//! state to other threads (a `Release` store in `Balancer::add`).

use crate::internal::sync::{AtomicU64, Ordering::Relaxed};

/// Number of atomic words in a [`LimitState`].
///
/// ```
/// use weir::limit::{LimitState, LIMIT_WORDS};
/// assert_eq!(core::mem::size_of::<LimitState>(), 8 * LIMIT_WORDS); // 128 bytes
/// ```
pub const LIMIT_WORDS: usize = 16;

/// How many samples a percentile window ([`SampleWindow::Percentile`](super::SampleWindow::Percentile))
/// can hold. Java's holds its configured size, whatever it is; this one has fixed storage in
/// [`LimitState`]. As in Java, a full window ignores further samples (it keeps the first ones).
///
/// ```
/// use weir::limit::{Limit, SampleWindow, WindowedLimit, PERCENTILE_CAPACITY};
/// let p99 = |capacity| WindowedLimit {
///     window: SampleWindow::Percentile { percentile: 0.99, capacity },
///     ..WindowedLimit::default()
/// };
/// assert!(p99(PERCENTILE_CAPACITY as u32).validate().is_ok());
/// assert!(p99(PERCENTILE_CAPACITY as u32 + 1).validate().is_err());
/// ```
pub const PERCENTILE_CAPACITY: usize = 10;

/// Words owned by the limit algorithm (the windowed wrapper's inner algorithm).
pub(crate) const ALGO_WORDS: usize = 3;
/// Windowed wrapper: count and RTT sum (average) or generation and count (percentile).
#[cfg_attr(not(feature = "algorithms"), allow(dead_code))]
pub(crate) const W_AGG: usize = ALGO_WORDS;
/// Windowed wrapper: drop flag, max in-flight, min RTT.
#[cfg_attr(not(feature = "algorithms"), allow(dead_code))]
pub(crate) const W_EXT: usize = ALGO_WORDS + 1;
/// Windowed wrapper: the timestamp after which the next sample closes the window.
#[cfg_attr(not(feature = "algorithms"), allow(dead_code))]
pub(crate) const W_NEXT: usize = ALGO_WORDS + 2;
/// Windowed wrapper: first percentile sample word.
pub(crate) const W_SAMPLES: usize = ALGO_WORDS + 3;
const _: () = assert!(W_SAMPLES + PERCENTILE_CAPACITY == LIMIT_WORDS);

/// The mutable state of one node's limiter: [`LIMIT_WORDS`] atomic words, updated lock-free by
/// compare-and-swap. Which word means what depends on the [`Limit`](super::Limit) algorithm (see the
/// module source for the layout); the state is only meaningful to the algorithm that
/// [`reset`](super::Limit::reset) it.
///
/// Thread safety: every method of every algorithm may be called on one state from any number of threads
/// at once, except `reset`, which needs exclusive use (a node that is being added).
///
/// ```
/// use weir::limit::{AimdLimit, Limit, LimitState, Sample};
///
/// static STATE: LimitState = LimitState::new(); // const: it can live in a `static`
/// let aimd = AimdLimit::default();
/// aimd.reset(&STATE);
/// let s = Sample { rtt_ns: 1_000_000, inflight: 10, dropped: false, now_ns: 1_000_000, load: None, failed: false };
/// assert_eq!(aimd.update(&STATE, &s, 0), 21);
/// assert_eq!(aimd.limit(&STATE), 21);
/// ```
#[derive(Debug)]
pub struct LimitState {
    words: [AtomicU64; LIMIT_WORDS],
}

impl LimitState {
    /// A zeroed state; [`Limit::reset`](super::Limit::reset) puts an algorithm's initial values in place.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: AtomicU64 = AtomicU64::new(0);
        LimitState {
            words: [ZERO; LIMIT_WORDS],
        }
    }

    /// A zeroed state; [`Limit::reset`](super::Limit::reset) puts an algorithm's initial values in place.
    #[cfg(loom)]
    pub fn new() -> Self {
        LimitState {
            words: core::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Word `i`, or 0 past the end (indices come from validated parameters; this never panics).
    #[inline]
    pub(crate) fn load(&self, i: usize) -> u64 {
        // Relaxed: see "Memory ordering" above.
        self.words.get(i).map_or(0, |w| w.load(Relaxed))
    }

    #[inline]
    pub(crate) fn store(&self, i: usize, v: u64) {
        if let Some(w) = self.words.get(i) {
            // Relaxed: see "Memory ordering" above.
            w.store(v, Relaxed);
        }
    }

    #[cfg_attr(not(feature = "algorithms"), allow(dead_code))]
    #[inline]
    pub(crate) fn swap(&self, i: usize, v: u64) -> u64 {
        // Relaxed: see "Memory ordering" above.
        self.words.get(i).map_or(0, |w| w.swap(v, Relaxed))
    }

    #[cfg_attr(not(feature = "algorithms"), allow(dead_code))]
    #[inline]
    pub(crate) fn compare_exchange(&self, i: usize, current: u64, new: u64) -> bool {
        self.words.get(i).is_some_and(|w| {
            // Relaxed: see "Memory ordering" above; the word carries no other data.
            w.compare_exchange(current, new, Relaxed, Relaxed).is_ok()
        })
    }

    /// A compare-and-swap loop on word `i`: `f` maps the current value to the next (`None` = leave it);
    /// returns `Ok(previous)` when it wrote, `Err(current)` when `f` declined.
    #[inline]
    pub(crate) fn update(&self, i: usize, f: impl FnMut(u64) -> Option<u64>) -> Result<u64, u64> {
        match self.words.get(i) {
            // Relaxed: see "Memory ordering" above.
            Some(w) => w.fetch_update(Relaxed, Relaxed, f),
            None => Err(0),
        }
    }

    #[inline]
    pub(crate) fn load_f64(&self, i: usize) -> f64 {
        f64::from_bits(self.load(i))
    }
}

impl Default for LimitState {
    fn default() -> Self {
        Self::new()
    }
}
