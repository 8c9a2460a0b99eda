//! Floors: the costs below which no balancer on this machine can go, measured in the same run so that a
//! pair's time can be read against them. A pair makes five atomic read-modify-writes (admission, the
//! bucket, the cached weight, the in-flight release, the outcome counter), scans one word per node and
//! draws at least one random number.
//!
//! ```
//! use weir_benches::{Cas, PaddedScan};
//! let cas = Cas::default();
//! assert_eq!(cas.step(), 1);
//! let scan = PaddedScan::new(16);
//! assert_eq!(scan.sum(), 0);
//! ```

use std::sync::atomic::{AtomicU64, Ordering};

/// One atomic word alone on its 128-byte pair of cache lines (the prefetcher fetches lines in pairs).
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct Padded(pub AtomicU64);

/// One uncontended compare-and-swap on a padded word.
#[derive(Debug, Default)]
pub struct Cas {
    word: Padded,
    seen: std::cell::Cell<u64>,
}

impl Cas {
    /// Increments the word by one compare-and-swap from the value this thread last saw; returns the new
    /// value. (weir's admission uses the weak form; on x86_64 both are the same `lock cmpxchg`.)
    #[inline]
    pub fn step(&self) -> u64 {
        let seen = self.seen.get();
        // Acquire/Relaxed: the orderings of weir's admission CAS, so the floor costs what it costs there.
        let now =
            match self
                .word
                .0
                .compare_exchange(seen, seen + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => seen + 1,
                // Only another thread could have moved the word: resynchronise from what it holds.
                Err(actual) => actual,
            };
        self.seen.set(now);
        now
    }
}

/// `n` atomic words, each on its own 128 bytes, like weir's node slots: the scan an acquire makes.
#[derive(Debug)]
pub struct PaddedScan {
    words: Box<[Padded]>,
}

impl PaddedScan {
    /// `n` padded words, all 0.
    pub fn new(n: usize) -> Self {
        PaddedScan {
            words: (0..n).map(|_| Padded::default()).collect(),
        }
    }

    /// Loads every word once and sums them.
    #[inline]
    pub fn sum(&self) -> u64 {
        // Relaxed: the ordering of weir's scan loads.
        self.words
            .iter()
            .map(|w| w.0.load(Ordering::Relaxed))
            .fold(0, u64::wrapping_add)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cas_counts_and_scan_reads_every_word() {
        let cas = Cas::default();
        for k in 1..=100 {
            assert_eq!(cas.step(), k);
        }
        let scan = PaddedScan::new(5);
        for (i, w) in scan.words.iter().enumerate() {
            w.0.store(i as u64 + 1, Ordering::Relaxed);
        }
        assert_eq!(scan.sum(), 15);
        assert_eq!(std::mem::size_of::<Padded>(), 128);
    }
}
