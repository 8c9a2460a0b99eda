//! Netflix concurrency-limits' `WindowedLimit`: samples are aggregated over a time window and the inner
//! algorithm sees one sample per window.
//!
//! ```text
//! if rtt < min_rtt_threshold: return                      # ignored entirely, drops too
//! window.add(rtt, inflight, dropped)                      # count, RTT sum or samples, max in-flight, OR of drops, min RTT
//! if now > next_close and this sample wins the close:     # Java: tryLock; losers keep accumulating
//!     w = take the window, leave an empty one
//!     next_close = now + clamp(2 * w.min_rtt, min_window, max_window)
//!     if w.count >= min_samples:                          # else the whole window is discarded
//!         inner.update(rtt = w.tracked_rtt, inflight = w.max_inflight, dropped = w.dropped)
//! ```
//! Windows close on sample timestamps ([`Sample::now_ns`], Java's `startTime + rtt`), never on a clock, so
//! a run is deterministic. The first sample closes a window at once (Java starts with `nextUpdateTime =
//! 0`), which then holds only that sample and is discarded unless `min_samples` is 1.
//!
//! The tracked RTT is the window's average (integer division, ns, drops included, as in Java since
//! `e3e1039`) or a percentile ([`SampleWindow`]): `sorted[round(count * p) - 1]`.
//!
//! # Lock-free window
//! Java swaps an immutable window object; here the window is three words after the inner algorithm's
//! (see [`LimitState`]): the aggregate (average: count 16 bits | RTT sum 48 bits; percentile: generation
//! 8 | count 8), the extremes (drop 1 | max in-flight 24 | min RTT 39) and the next close time. A sample
//! adds itself to the aggregate and then the extremes, each by a compare-and-swap. A close first swings
//! the close-time word from a past time to `u64::MAX` (only one thread can; the others see a future time
//! and just keep accumulating, as Java's `tryLock` losers do), swaps the aggregate and the extremes for
//! empty ones, then stores the next close time. No thread ever waits for another.
//!
//! A sample racing with a close may land its aggregate part in the closing window and its extremes in the
//! next one (or the reverse): the average is always a true `sum / count` of the samples it counts, and
//! the in-flight maximum or drop flag moves by at most one window. The inner algorithm clamps whatever it
//! is fed, so the limit stays in bounds.
//!
//! A percentile sample claims a slot in the aggregate word, then writes its RTT there tagged with the
//! window's generation. A close freezes the aggregate (a full count: claims fail) while it reads the
//! slots, then thaws it into the next generation, so no slot is reused while it is being read; a sample
//! arriving during those few instructions is ignored, as if the window were full. The close reads only
//! samples tagged with the closing generation, so a slot claimed but not yet written is left out; written
//! late, it never overwrites a newer generation's sample (the write is a compare-and-swap that yields to
//! newer tags) and is never read as part of a later window.
//!
//! Limits of the fixed-size words: an average window counts at most 65,535 samples and 2^48 ns (78 hours)
//! of summed RTT; later samples of a full window still count for max in-flight, drops and min RTT. A
//! percentile window stores at most `capacity` (<= [`PERCENTILE_CAPACITY`]) samples and ignores the rest
//! entirely, like Java's bounded percentile window. In-flight counts saturate at 2^24 - 1 and the min RTT
//! at 2^39 - 1 ns (550 s), which is exact for window lengths up to [`WindowedLimit::MAX_WINDOW_NS`].

use super::state::{W_AGG, W_EXT, W_NEXT, W_SAMPLES};
use super::{InnerAlgorithm, Limit, LimitState, Sample, VegasLimit, PERCENTILE_CAPACITY};
use crate::error::ConfigError;
use crate::internal::time::saturating_ns;
use core::time::Duration;

const AVG_COUNT_SHIFT: u32 = 48;
const AVG_SUM_MASK: u64 = (1 << AVG_COUNT_SHIFT) - 1;
const AVG_COUNT_MAX: u64 = (1 << 16) - 1;
const PCT_COUNT_MASK: u64 = 0xFF;
const PCT_GEN_SHIFT: u32 = 8;
/// A percentile window's count while it is being closed: above any capacity, so claims fail.
const FROZEN: u64 = PCT_COUNT_MASK;
const DROP: u64 = 1 << 63;
const INFLIGHT_SHIFT: u32 = 39;
const INFLIGHT_MAX: u64 = (1 << 24) - 1;
const MIN_RTT_MASK: u64 = (1 << INFLIGHT_SHIFT) - 1;
/// An empty window's extremes: no drop, no in-flight, min RTT "infinite".
const EMPTY_EXT: u64 = MIN_RTT_MASK;
/// The close-time word while a close is in progress.
const CLOSING: u64 = u64::MAX;
const WRITTEN: u64 = 1 << 63;
const SAMPLE_GEN_SHIFT: u32 = 55;
const SAMPLE_RTT_MASK: u64 = (1 << SAMPLE_GEN_SHIFT) - 1;

/// How a window turns its samples' RTTs into the one RTT the inner algorithm sees.
///
/// ```
/// use weir::limit::{SampleWindow, WindowedLimit};
/// let p90 = WindowedLimit {
///     window: SampleWindow::Percentile { percentile: 0.9, capacity: 10 },
///     ..WindowedLimit::default()
/// };
/// assert!(p90.validate().is_ok());
/// # use weir::limit::Limit;
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SampleWindow {
    /// The average RTT, `sum / count` in integer nanoseconds (Netflix's default).
    Average,
    /// The `percentile` RTT of the first `capacity` samples of the window (`PercentileSampleWindowFactory
    /// .of(percentile, capacity)`): `sorted[round(count * percentile) - 1]`, the index clamped to the
    /// samples (Java throws when it is -1). Samples past `capacity` are ignored entirely.
    Percentile {
        /// In (0, 1).
        percentile: f64,
        /// 1..=[`PERCENTILE_CAPACITY`], and at least `min_samples`.
        capacity: u32,
    },
}

/// The windowed wrapper's parameters. Defaults are Netflix's: 1 s windows, at least 10 samples, RTTs
/// under 100 µs ignored, average RTT; the inner algorithm defaults to Vegas, the default limit of
/// Netflix's limiters.
///
/// Netflix's builder also rejects windows under 100 ms and fewer than 10 samples; this one accepts any
/// positive values, so fast-reacting configurations and tests are possible (defaults are unchanged).
///
/// Known weaknesses, as users report them: with 1 s windows an algorithm moves one step per second
/// (AIMD: +1/s, NCL#147), and discarding windows with too few samples freezes the limit at low load
/// (NCL#152); lower `min_samples` or the window times for low-traffic nodes. dialogue removed its
/// windowing because it delayed reactions (dialogue#638). (`NCL#n`, `dialogue#n`: see the
/// [module docs](super#conformance-with-netflix-concurrency-limits).)
///
/// ```
/// use weir::limit::{AimdLimit, InnerAlgorithm, Limit, LimitState, Sample, WindowedLimit};
/// let w = WindowedLimit {
///     inner: InnerAlgorithm::Aimd(AimdLimit { initial_limit: 10, min_limit: 1, ..AimdLimit::default() }),
///     min_samples: 2,
///     ..WindowedLimit::default()
/// };
/// w.validate().unwrap();
/// let state = LimitState::new();
/// w.reset(&state);
/// let s = |now_ns| Sample { rtt_ns: 1_000_000, inflight: 8, dropped: false, now_ns, load: None, failed: false };
/// assert_eq!(w.update(&state, &s(1_000_000), 0), 10); // first window: 1 sample, discarded
/// assert_eq!(w.update(&state, &s(500_000_000), 0), 10); // accumulating until 1.001 s
/// assert_eq!(w.update(&state, &s(1_600_000_000), 0), 11); // closes with 2 samples: AIMD +1
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowedLimit {
    /// The algorithm fed one aggregate sample per window. Its initial limit is the wrapper's, under the
    /// inner algorithm's rule (`min_limit <= initial_limit <= max_limit`; see each algorithm):
    /// [`validate`](Limit::validate) refuses an inner start outside its bounds with
    /// [`ConfigError::LimitRange`].
    pub inner: InnerAlgorithm,
    /// Shortest window, ns: a window lasts `clamp(2 * min RTT, min_window_ns, max_window_ns)`; at least 1
    /// (default 1 s; or [`WindowedLimit::min_window`]).
    pub min_window_ns: u64,
    /// Longest window, ns; at most [`WindowedLimit::MAX_WINDOW_NS`] (default 1 s; or
    /// [`WindowedLimit::max_window`]).
    pub max_window_ns: u64,
    /// Windows with fewer samples are discarded (Java's `windowSize`); at least 1.
    pub min_samples: u32,
    /// Samples faster than this are ignored entirely, drops included (Java's `minRttThreshold`; default
    /// 100 µs; or [`WindowedLimit::min_rtt_threshold`]).
    pub min_rtt_threshold_ns: u64,
    /// Average or percentile RTT.
    pub window: SampleWindow,
}

impl Default for WindowedLimit {
    fn default() -> Self {
        WindowedLimit {
            inner: InnerAlgorithm::Vegas(VegasLimit::default()),
            min_window_ns: 1_000_000_000,
            max_window_ns: 1_000_000_000,
            min_samples: 10,
            min_rtt_threshold_ns: 100_000,
            window: SampleWindow::Average,
        }
    }
}

/// A closed window's aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Closed {
    count: u64,
    rtt_ns: u64,
    max_inflight: u32,
    dropped: bool,
}

impl WindowedLimit {
    /// The longest window accepted: 1000 s (the min RTT is stored in 39 bits, exact up to here).
    pub const MAX_WINDOW_NS: u64 = 1_000_000_000_000;

    /// Sets [`min_window_ns`](Self::min_window_ns), the shortest window, from a [`Duration`]. A duration
    /// longer than `u64::MAX` ns saturates to `u64::MAX` (which validation refuses, as any window above
    /// [`MAX_WINDOW_NS`](Self::MAX_WINDOW_NS)).
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::limit::{Limit, WindowedLimit};
    /// let w = WindowedLimit::default()
    ///     .min_window(Duration::from_millis(10))
    ///     .max_window(Duration::from_millis(500))
    ///     .min_rtt_threshold(Duration::from_micros(50));
    /// assert_eq!((w.min_window_ns, w.max_window_ns), (10_000_000, 500_000_000));
    /// assert_eq!(w.min_rtt_threshold_ns, 50_000);
    /// assert!(w.validate().is_ok());
    /// ```
    #[must_use]
    pub const fn min_window(self, min_window: Duration) -> Self {
        WindowedLimit {
            min_window_ns: saturating_ns(min_window),
            ..self
        }
    }

    /// Sets [`max_window_ns`](Self::max_window_ns), the longest window, from a [`Duration`]. A duration
    /// longer than `u64::MAX` ns saturates to `u64::MAX`; validation refuses anything above
    /// [`MAX_WINDOW_NS`](Self::MAX_WINDOW_NS) (1000 s).
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::limit::{Limit, WindowedLimit};
    /// let w = WindowedLimit::default().max_window(Duration::from_secs(2));
    /// assert_eq!(w.max_window_ns, 2_000_000_000);
    /// assert!(w.validate().is_ok());
    /// assert!(w.max_window(Duration::from_secs(1001)).validate().is_err());
    /// assert_eq!(w.max_window(Duration::MAX).max_window_ns, u64::MAX);
    /// ```
    #[must_use]
    pub const fn max_window(self, max_window: Duration) -> Self {
        WindowedLimit {
            max_window_ns: saturating_ns(max_window),
            ..self
        }
    }

    /// Sets [`min_rtt_threshold_ns`](Self::min_rtt_threshold_ns) from a [`Duration`]: samples faster
    /// than this are ignored. A duration longer than `u64::MAX` ns saturates to `u64::MAX`.
    ///
    /// ```
    /// use core::time::Duration;
    /// use weir::limit::WindowedLimit;
    /// let w = WindowedLimit::default().min_rtt_threshold(Duration::ZERO);
    /// assert_eq!(w.min_rtt_threshold_ns, 0); // no sample is ignored
    /// ```
    #[must_use]
    pub const fn min_rtt_threshold(self, min_rtt_threshold: Duration) -> Self {
        WindowedLimit {
            min_rtt_threshold_ns: saturating_ns(min_rtt_threshold),
            ..self
        }
    }

    fn capacity(&self) -> u64 {
        match self.window {
            SampleWindow::Average => 0,
            SampleWindow::Percentile { capacity, .. } => {
                u64::from(capacity).min(PERCENTILE_CAPACITY as u64)
            }
        }
    }

    /// Adds one sample to the open window.
    fn add(&self, state: &LimitState, sample: &Sample) {
        let rtt = sample.rtt_ns;
        match self.window {
            SampleWindow::Average => {
                // A sample that would overflow the count or the sum stays out of the average only.
                let _ = state.update(W_AGG, |a| {
                    let (count, sum) = (a >> AVG_COUNT_SHIFT, a & AVG_SUM_MASK);
                    (count < AVG_COUNT_MAX && rtt <= AVG_SUM_MASK - sum)
                        .then(|| a + (1 << AVG_COUNT_SHIFT) + rtt)
                });
            }
            SampleWindow::Percentile { .. } => {
                let cap = self.capacity();
                let Ok(a) = state.update(W_AGG, |a| ((a & PCT_COUNT_MASK) < cap).then_some(a + 1))
                else {
                    // A full window ignores the sample entirely, as Java's does.
                    return;
                };
                let slot = (a & PCT_COUNT_MASK) as usize;
                let generation = (a >> PCT_GEN_SHIFT) & 0xFF;
                let tagged = WRITTEN | (generation << SAMPLE_GEN_SHIFT) | rtt.min(SAMPLE_RTT_MASK);
                // A writer delayed past its window's close must not clobber a later window's sample in
                // the same slot: write only over an empty slot or an older generation's (8-bit tags,
                // compared modulo 256, so a writer would have to stall for 128 windows to misjudge).
                let _ = state.update(W_SAMPLES + slot, |cur| {
                    let ahead = (cur >> SAMPLE_GEN_SHIFT).wrapping_sub(generation) & 0xFF;
                    (cur & WRITTEN == 0 || ahead == 0 || ahead >= 128).then_some(tagged)
                });
            }
        }
        let inflight = u64::from(sample.inflight).min(INFLIGHT_MAX);
        let drop = if sample.dropped { DROP } else { 0 };
        // The closure always writes, so the update cannot fail.
        let _ = state.update(W_EXT, |b| {
            let max_inflight = ((b >> INFLIGHT_SHIFT) & INFLIGHT_MAX).max(inflight);
            let min_rtt = (b & MIN_RTT_MASK).min(rtt);
            Some((b & DROP) | drop | (max_inflight << INFLIGHT_SHIFT) | min_rtt)
        });
    }

    /// Closes the window if `now` is past its end and this caller wins the close.
    fn close(&self, state: &LimitState, now: u64) -> Option<Closed> {
        let next = state.load(W_NEXT);
        // `next == CLOSING` is never below `now`: only one close at a time.
        if now <= next || !state.compare_exchange(W_NEXT, next, CLOSING) {
            return None;
        }
        let agg = match self.window {
            SampleWindow::Average => state.swap(W_AGG, 0),
            // Freeze: a full count makes new claims fail until the samples are read, so no slot of the
            // closing window is reused (and overwritten) while this close reads it.
            SampleWindow::Percentile { .. } => state
                .update(W_AGG, |a| Some((a & !PCT_COUNT_MASK) | FROZEN))
                .unwrap_or(0),
        };
        let ext = state.swap(W_EXT, EMPTY_EXT);
        let (count, rtt_ns) = match self.window {
            SampleWindow::Average => {
                let (count, sum) = (agg >> AVG_COUNT_SHIFT, agg & AVG_SUM_MASK);
                (count, sum.checked_div(count).unwrap_or(0))
            }
            SampleWindow::Percentile { percentile, .. } => {
                let read = self.percentile(state, agg, percentile);
                // Thaw into the next generation, empty.
                let generation = ((agg >> PCT_GEN_SHIFT) + 1) & 0xFF;
                state.store(W_AGG, generation << PCT_GEN_SHIFT);
                read
            }
        };
        // Java: endTime + Math.min(Math.max(candidateRtt * 2, minWindowTime), maxWindowTime).
        let length = (ext & MIN_RTT_MASK)
            .saturating_mul(2)
            .max(self.min_window_ns)
            .min(self.max_window_ns);
        state.store(W_NEXT, now.saturating_add(length).min(CLOSING - 1));
        Some(Closed {
            count,
            rtt_ns,
            max_inflight: ((ext >> INFLIGHT_SHIFT) & INFLIGHT_MAX) as u32,
            dropped: ext & DROP != 0,
        })
    }

    /// Reads (and clears) the closing window's samples; returns their count and the percentile RTT.
    fn percentile(&self, state: &LimitState, agg: u64, p: f64) -> (u64, u64) {
        let claimed = (agg & PCT_COUNT_MASK).min(self.capacity()) as usize;
        let generation = (agg >> PCT_GEN_SHIFT) & 0xFF;
        let mut rtts = [0u64; PERCENTILE_CAPACITY];
        let mut n = 0;
        for i in 0..claimed {
            let s = state.swap(W_SAMPLES + i, 0);
            let mine = s & WRITTEN != 0 && (s >> SAMPLE_GEN_SHIFT) & 0xFF == generation;
            if let (true, Some(slot)) = (mine, rtts.get_mut(n)) {
                *slot = s & SAMPLE_RTT_MASK;
                n += 1;
            }
        }
        let sorted = rtts.get_mut(..n).unwrap_or_default();
        sorted.sort_unstable();
        // Java: sorted.get((int) Math.round(count * percentile) - 1); Math.round = floor(x + 0.5).
        let rank = libm::floor(n as f64 * p + 0.5) as usize;
        let rtt = sorted
            .get(rank.clamp(1, n.max(1)) - 1)
            .copied()
            .unwrap_or(0);
        (n as u64, rtt)
    }
}

impl Limit for WindowedLimit {
    fn initial_limit(&self) -> u32 {
        self.inner.initial_limit()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        self.inner.validate()?;
        if self.min_window_ns == 0
            || self.min_window_ns > self.max_window_ns
            || self.max_window_ns > Self::MAX_WINDOW_NS
        {
            return Err(ConfigError::WindowTime);
        }
        if self.min_samples == 0 {
            return Err(ConfigError::WindowSamples);
        }
        if let SampleWindow::Percentile {
            percentile,
            capacity,
        } = self.window
        {
            // Written so that NaN fails too.
            if !(percentile > 0.0 && percentile < 1.0)
                || capacity == 0
                || capacity as usize > PERCENTILE_CAPACITY
            {
                return Err(ConfigError::Percentile);
            }
            if self.min_samples > capacity {
                return Err(ConfigError::WindowSamples);
            }
        }
        Ok(())
    }

    fn reset(&self, state: &LimitState) {
        self.inner.reset(state);
        state.store(W_AGG, 0);
        state.store(W_EXT, EMPTY_EXT);
        // Java: nextUpdateTime = 0, so the first sample closes the first window.
        state.store(W_NEXT, 0);
        // Only a percentile window reads the sample words; clear a previous occupant's.
        if let SampleWindow::Percentile { .. } = self.window {
            for i in 0..PERCENTILE_CAPACITY {
                state.store(W_SAMPLES + i, 0);
            }
        }
    }

    fn update(&self, state: &LimitState, sample: &Sample, random: u64) -> u32 {
        if sample.rtt_ns < self.min_rtt_threshold_ns {
            return self.inner.limit(state);
        }
        self.add(state, sample);
        match self.close(state, sample.now_ns) {
            Some(w) if w.count >= u64::from(self.min_samples.max(1)) => {
                let aggregate = Sample {
                    rtt_ns: w.rtt_ns,
                    inflight: w.max_inflight,
                    dropped: w.dropped,
                    now_ns: sample.now_ns,
                    load: None,
                    failed: false,
                };
                self.inner.update(state, &aggregate, random)
            }
            _ => self.inner.limit(state),
        }
    }

    fn limit(&self, state: &LimitState) -> u32 {
        self.inner.limit(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limit::tests::check_start_rule;
    use crate::limit::{AimdLimit, FixedLimit};

    fn s(rtt_ns: u64, inflight: u32, dropped: bool, now_ns: u64) -> Sample {
        Sample {
            rtt_ns,
            inflight,
            dropped,
            now_ns,
            load: None,
            failed: false,
        }
    }

    fn window(kind: SampleWindow) -> WindowedLimit {
        WindowedLimit {
            inner: InnerAlgorithm::Fixed(FixedLimit::default()),
            min_samples: 1,
            window: kind,
            ..WindowedLimit::default()
        }
    }

    /// Adds `rtts` (with their drop flags) to a fresh window and closes it.
    fn aggregate(w: &WindowedLimit, rtts: &[(u64, bool)]) -> Closed {
        let st = LimitState::new();
        w.reset(&st);
        for (i, &(rtt, dropped)) in rtts.iter().enumerate() {
            w.add(&st, &s(rtt, i as u32 + 1, dropped, 0));
        }
        w.close(&st, 1).expect("the first close wins")
    }

    // ImmutableAverageSampleWindowTest: rtts 5000, 500, 10 ns average 1836 (integer division); adding a
    // dropped 5000 gives 2627.
    #[test]
    fn average_window_vectors() {
        let w = window(SampleWindow::Average);
        let three = [(5000, false), (500, false), (10, false)];
        let c = aggregate(&w, &three);
        assert_eq!(
            (c.count, c.rtt_ns, c.max_inflight, c.dropped),
            (3, 1836, 3, false)
        );
        let c = aggregate(
            &w,
            &[(5000, false), (500, false), (10, false), (5000, true)],
        );
        assert_eq!(
            (c.count, c.rtt_ns, c.max_inflight, c.dropped),
            (4, 2627, 4, true)
        );
    }

    // ImmutablePercentileSampleWindowTest.
    #[test]
    fn percentile_window_vectors() {
        let p50 = window(SampleWindow::Percentile {
            percentile: 0.5,
            capacity: 10,
        });
        // {5000, 500, 10}: sorted [10, 500, 5000], round(1.5) = 2 -> 500.
        let c = aggregate(&p50, &[(5000, false), (500, false), (10, false)]);
        assert_eq!((c.count, c.rtt_ns, c.dropped), (3, 500, false));
        // {10, 5000 (drop), 5000 (drop)} -> 5000.
        let c = aggregate(&p50, &[(10, false), (5000, true), (5000, true)]);
        assert_eq!((c.count, c.rtt_ns, c.dropped), (3, 5000, true));
        let p999 = window(SampleWindow::Percentile {
            percentile: 0.999,
            capacity: 10,
        });
        // round(2.997) = 3 -> 5000; round(3.996) = 4 of [10, 10, 500, 5000] -> 5000.
        let c = aggregate(&p999, &[(5000, false), (500, false), (10, false)]);
        assert_eq!(c.rtt_ns, 5000);
        let c = aggregate(
            &p999,
            &[(500, false), (10, false), (5000, false), (10, false)],
        );
        assert_eq!(c.rtt_ns, 5000);
        // A tiny percentile: Java's index would be round(0.03) - 1 = -1; clamped to the smallest.
        let p01 = window(SampleWindow::Percentile {
            percentile: 0.01,
            capacity: 10,
        });
        assert_eq!(
            aggregate(&p01, &[(7, false), (3, false), (9, false)]).rtt_ns,
            3
        );
        // Capacity 2: the third sample is ignored entirely (its drop and in-flight too).
        let cap2 = window(SampleWindow::Percentile {
            percentile: 0.5,
            capacity: 2,
        });
        let c = aggregate(&cap2, &[(10, false), (20, false), (1, true)]);
        assert_eq!(
            (c.count, c.rtt_ns, c.max_inflight, c.dropped),
            (2, 10, 2, false)
        );
    }

    // No published WindowedLimit vectors exist; this sequence is computed by hand from Java's rules.
    #[test]
    fn multi_step_sequence_over_aimd() {
        let w = WindowedLimit {
            inner: InnerAlgorithm::Aimd(AimdLimit {
                initial_limit: 10,
                min_limit: 1,
                max_limit: 100,
                ..AimdLimit::default()
            }),
            min_window_ns: 100,
            max_window_ns: 1000,
            min_samples: 3,
            min_rtt_threshold_ns: 5,
            window: SampleWindow::Average,
        };
        w.validate().unwrap();
        let st = LimitState::new();
        w.reset(&st);
        let run = |rtt, inflight, dropped, now| w.update(&st, &s(rtt, inflight, dropped, now), 0);
        // (1) t=100 > next 0: closes a 1-sample window, discarded; next = 100 + clamp(2*10, 100, 1000).
        assert_eq!(run(10, 8, false, 100), 10);
        // (2) t=150 <= 200: accumulate (count 1, sum 20).
        assert_eq!(run(20, 6, false, 150), 10);
        // (3) rtt 3 < threshold 5: ignored, drop and all.
        assert_eq!(run(3, 9, true, 160), 10);
        // (4) accumulate: count 2, sum 60, max in-flight 6, min RTT 20.
        assert_eq!(run(40, 4, false, 190), 10);
        // (5) t=201 > 200: close with count 3, average 150/3 = 50, in-flight 6: AIMD 6*2 >= 10 -> 11;
        //     next = 201 + clamp(2*20, 100, 1000) = 301.
        assert_eq!(run(90, 5, false, 201), 11);
        // (6) t=400 > 301: a 1-sample window with a drop, discarded (the drop is lost, as in Java);
        //     next = 400 + clamp(2*700, 100, 1000) = 1400.
        assert_eq!(run(700, 3, true, 400), 11);
        // (7)-(9) accumulate up to t=1400 (not past it): count 3, one drop, max in-flight 7.
        assert_eq!(run(10, 2, false, 500), 11);
        assert_eq!(run(10, 7, true, 600), 11);
        assert_eq!(run(10, 1, false, 1400), 11);
        // (10) t=1401: close with count 4, average 10, in-flight 7, dropped: trunc(11 * 0.9) = 9.
        assert_eq!(run(10, 3, false, 1401), 9);
        assert_eq!(st.load(W_NEXT), 1401 + 100);
        assert_eq!(w.limit(&st), 9);
    }

    #[test]
    fn percentile_sequence_over_aimd() {
        // AIMD counts an RTT above timeout_ns as a drop: here it tells the percentile from the average.
        let w = WindowedLimit {
            inner: InnerAlgorithm::Aimd(AimdLimit {
                initial_limit: 10,
                min_limit: 1,
                timeout_ns: 100,
                ..AimdLimit::default()
            }),
            min_window_ns: 1000,
            max_window_ns: 1000,
            min_samples: 3,
            min_rtt_threshold_ns: 0,
            window: SampleWindow::Percentile {
                percentile: 0.5,
                capacity: 3,
            },
        };
        w.validate().unwrap();
        let st = LimitState::new();
        w.reset(&st);
        let run = |rtt, dropped, now| w.update(&st, &s(rtt, 9, dropped, now), 0);
        assert_eq!(run(1, false, 1), 10); // first window discarded; next close after t = 1001
                                          // 50, 500, 60, then a dropped 1000 that the full window ignores entirely.
        assert_eq!(run(50, false, 10), 10);
        assert_eq!(run(500, false, 20), 10);
        assert_eq!(run(60, false, 30), 10);
        assert_eq!(run(1000, true, 40), 10);
        // t=1002: the window is full, this sample is ignored too, but it closes the window:
        // sorted [50, 60, 500], round(1.5) = 2 -> 60 <= timeout; no drop; 9 * 2 >= 10: 10 -> 11.
        // (The average, 203, would have been a timeout: 10 -> 9.)
        assert_eq!(run(7, true, 1002), 11);
        // The next window: generation 2; 3 samples, p50 of [100, 200, 300] = 200 > timeout: 11 -> 9.
        assert_eq!(run(300, false, 1100), 11);
        assert_eq!(run(200, false, 1200), 11);
        assert_eq!(run(100, false, 2003), 9);
    }

    #[test]
    fn refuses_an_inner_initial_limit_outside_its_bounds() {
        use crate::limit::{CiadLimit, Gradient2Limit, GradientLimit, MAX_LIMIT};
        // Each algorithm's rule holds inside the wrapper too (`check_start_rule` wraps every case).
        let every = [
            (InnerAlgorithm::Fixed(FixedLimit::default()), (0, MAX_LIMIT)),
            (InnerAlgorithm::Aimd(AimdLimit::default()), (20, 200)),
            (InnerAlgorithm::Vegas(VegasLimit::default()), (1, 1000)),
            (
                InnerAlgorithm::Gradient(GradientLimit::default()),
                (1, 1000),
            ),
            (
                InnerAlgorithm::Gradient2(Gradient2Limit::default()),
                (20, 200),
            ),
            (InnerAlgorithm::Ciad(CiadLimit::default()), (1, 1_000_000)),
        ];
        for (inner, bounds) in every {
            check_start_rule(inner, &[bounds]);
        }
        assert_eq!(WindowedLimit::default().validate(), Ok(()));
    }

    #[test]
    fn rejects_bad_parameters() {
        let d = WindowedLimit::default();
        assert_eq!(d.validate(), Ok(()));
        let check = |w: WindowedLimit| w.validate();
        assert_eq!(
            check(WindowedLimit {
                min_window_ns: 0,
                ..d
            }),
            Err(ConfigError::WindowTime)
        );
        assert_eq!(
            check(WindowedLimit {
                max_window_ns: 10,
                ..d
            }),
            Err(ConfigError::WindowTime)
        );
        assert_eq!(
            check(WindowedLimit {
                max_window_ns: WindowedLimit::MAX_WINDOW_NS + 1,
                ..d
            }),
            Err(ConfigError::WindowTime)
        );
        assert_eq!(
            check(WindowedLimit {
                min_samples: 0,
                ..d
            }),
            Err(ConfigError::WindowSamples)
        );
        let pct = |percentile, capacity| WindowedLimit {
            window: SampleWindow::Percentile {
                percentile,
                capacity,
            },
            min_samples: 1,
            ..d
        };
        assert_eq!(check(pct(0.5, 10)), Ok(()));
        for bad in [
            pct(0.0, 10),
            pct(1.0, 10),
            pct(f64::NAN, 10),
            pct(0.5, 0),
            pct(0.5, 11),
        ] {
            assert_eq!(check(bad), Err(ConfigError::Percentile));
        }
        let too_few = WindowedLimit {
            min_samples: 6,
            ..pct(0.5, 5)
        };
        assert_eq!(check(too_few), Err(ConfigError::WindowSamples));
        let bad_inner = WindowedLimit {
            inner: InnerAlgorithm::Aimd(AimdLimit {
                backoff_ratio: 2.0,
                ..AimdLimit::default()
            }),
            ..d
        };
        assert_eq!(check(bad_inner), Err(ConfigError::BackoffRatio));
    }
}
