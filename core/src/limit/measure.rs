//! Netflix's integer helper functions and measurements, with their exact numeric semantics.
//!
//! - `LOG10` (`Log10RootIntFunction.create(0)`): `max(1, floor(log10 x))`, so `LOG10(0) = 1`.
//! - `SQRT` (`SquareRootFunction`): `max(1, floor(sqrt x))` below 1000, `floor(sqrt x)` above.
//! - [`QueueSize`]: the Gradient algorithms' allowed queue as a function of the truncated limit.
//! - `ExpAvg` (`ExpAvgMeasurement(window, warmup)`): the arithmetic mean of the first `warmup` samples,
//!   then an exponential average with factor `2 / (window + 1)`, packed into one atomic word.

use crate::error::ConfigError;

/// Netflix's `Log10RootIntFunction.create(0)`: `max(1, floor(log10(x)))`, computed on integers (no float
/// rounding at powers of ten), with `LOG10(0) = 1`.
#[inline]
pub(crate) fn log10_int(x: u32) -> u32 {
    if x < 10 {
        1
    } else {
        x.ilog10()
    }
}

/// Netflix's `SquareRootFunction`: `max(1, floor(sqrt(x)))` (the `max` only matters below 1000, where Java
/// uses a lookup table, and there only for `x = 0`).
#[inline]
pub(crate) fn sqrt_int(x: u32) -> u32 {
    x.isqrt().max(1)
}

/// How much queueing the Gradient algorithms allow: the `queueSize` function of Netflix's builders,
/// applied to the truncated current limit.
///
/// ```
/// use weir::limit::QueueSize;
/// assert_eq!(QueueSize::Constant(4).at(1_000), 4); // Gradient2's default
/// let v1 = QueueSize::Sqrt { min: 4 }; // Gradient (v1)'s default, SquareRootFunction.create(4)
/// assert_eq!((v1.at(0), v1.at(999), v1.at(2500)), (4, 31, 50));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueSize {
    /// A constant (`queueSize(int)` in Java).
    Constant(u32),
    /// `max(min, SQRT(limit))` (`SquareRootFunction.create(min)`): grows with the limit, so large limits
    /// are not starved of queueing room, but more slowly than the limit itself.
    Sqrt {
        /// The smallest queue allowed.
        min: u32,
    },
}

impl QueueSize {
    /// The allowed queue when the truncated limit is `limit`.
    #[inline]
    pub fn at(self, limit: u32) -> u32 {
        match self {
            QueueSize::Constant(q) => q,
            QueueSize::Sqrt { min } => sqrt_int(limit).max(min),
        }
    }

    pub(crate) fn validate(self) -> Result<(), ConfigError> {
        let q = match self {
            QueueSize::Constant(q) => q,
            QueueSize::Sqrt { min } => min,
        };
        if q > super::MAX_LIMIT {
            return Err(ConfigError::QueueSize);
        }
        Ok(())
    }
}

/// Netflix's `ExpAvgMeasurement(window, warmup)` in one word.
///
/// During warm-up the word holds bit 63 set, the count in bits 59..63 and the exact integer sum of the
/// samples (ns, saturating) in bits 0..59, so the mean `sum / count` is computed exactly as Java does
/// (Java sums doubles; both are exact below 2^53 ns, 104 days). Afterwards it holds the `f64` bits of the
/// average, which is never negative, so bit 63 is clear. Java's `update(fn)` during warm-up rewrites a
/// value that the next `add` overwrites with `sum / count`; [`ExpAvg::scale`] is likewise a no-op then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ExpAvg {
    pub(crate) window: u32,
    /// At most [`ExpAvg::MAX_WARMUP`].
    pub(crate) warmup: u32,
}

const WARM: u64 = 1 << 63;
const COUNT_SHIFT: u32 = 59;
const SUM_MASK: u64 = (1 << COUNT_SHIFT) - 1;

impl ExpAvg {
    pub(crate) const MAX_WARMUP: u32 = 15;

    /// The empty measurement (Java's `reset()`).
    #[inline]
    pub(crate) fn empty(self) -> u64 {
        if self.warmup == 0 {
            0.0f64.to_bits()
        } else {
            WARM
        }
    }

    /// Adds `x`; returns the new word and the value after adding (Java's `add(x)` return value).
    #[inline]
    pub(crate) fn add(self, word: u64, x: u64) -> (u64, f64) {
        if word & WARM != 0 {
            let count = ((word & !WARM) >> COUNT_SHIFT) + 1;
            let sum = (word & SUM_MASK).saturating_add(x).min(SUM_MASK);
            // Java: sum / count, both doubles; exact integer sum converted once.
            let v = sum as f64 / count as f64;
            if count >= u64::from(self.warmup.min(Self::MAX_WARMUP)) {
                (v.to_bits(), v)
            } else {
                (WARM | (count << COUNT_SHIFT) | sum, v)
            }
        } else {
            // Java: factor = 2.0 / (n + 1); value = value * (1 - factor) + sample * factor.
            let f = 2.0 / (f64::from(self.window) + 1.0);
            let v = f64::from_bits(word) * (1.0 - f) + x as f64 * f;
            (v.to_bits(), v)
        }
    }

    /// Java's `update(current -> current * factor)`.
    #[inline]
    pub(crate) fn scale(self, word: u64, factor: f64) -> u64 {
        if word & WARM != 0 {
            word
        } else {
            (f64::from_bits(word) * factor).to_bits()
        }
    }

    /// The current value (Java's `get()`), the running mean during warm-up.
    #[cfg(test)]
    pub(crate) fn value(self, word: u64) -> f64 {
        if word & WARM != 0 {
            let count = (word & !WARM) >> COUNT_SHIFT;
            if count == 0 {
                0.0
            } else {
                (word & SUM_MASK) as f64 / count as f64
            }
        } else {
            f64::from_bits(word)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Log10RootIntFunctionTest / Log10RootFunctionTest.
    #[test]
    fn log10_vectors() {
        assert_eq!(log10_int(0), 1);
        assert_eq!(log10_int(100), 2);
        assert_eq!(log10_int(10_000), 4);
        // The table's edges: max(1, floor(log10 x)) below 1000, floor(log10 x) above.
        assert_eq!(
            [1, 9, 10, 99, 999, 1000, 9_999, 999_999_999, u32::MAX].map(log10_int),
            [1, 1, 1, 1, 2, 3, 3, 8, 9]
        );
    }

    // SquareRootFunctionTest (create(4)).
    #[test]
    fn sqrt_vectors() {
        let q = QueueSize::Sqrt { min: 4 };
        assert_eq!(q.at(0), 4);
        assert_eq!(q.at(999), 31);
        assert_eq!(q.at(2500), 50);
        assert_eq!(
            [0, 1, 3, 4, 15, 16, 1000].map(sqrt_int),
            [1, 1, 1, 2, 3, 4, 31]
        );
        assert_eq!(sqrt_int(u32::MAX), 65_535);
    }

    // ExpAvgMeasurementTest: ExpAvgMeasurement(100, 10), add 10..19, then 100.
    #[test]
    fn exp_avg_vectors() {
        let m = ExpAvg {
            window: 100,
            warmup: 10,
        };
        let mut w = m.empty();
        let expect = [10.0, 10.5, 11.0, 11.5, 12.0, 12.5, 13.0, 13.5, 14.0, 14.5];
        for (x, e) in (10..20).zip(expect) {
            let (next, v) = m.add(w, x);
            assert_eq!(v, e);
            assert_eq!(m.value(next), e);
            w = next;
        }
        let (w, v) = m.add(w, 100);
        // 14.5 * (1 - 2/101) + 100 * 2/101 = 16.1931...
        assert!((v - 16.2).abs() < 0.1);
        assert!((v - 16.193_069_306_930_692).abs() < 1e-12, "{v}");
        assert_eq!(m.value(w), v);
    }

    #[test]
    fn exp_avg_scale_is_a_no_op_during_warmup() {
        let m = ExpAvg {
            window: 600,
            warmup: 2,
        };
        let (w, _) = m.add(m.empty(), 10);
        let w = m.scale(w, 0.95);
        // Java: sum stays 10, so the next mean is (10 + 30) / 2 regardless of the decay.
        let (w, v) = m.add(w, 30);
        assert_eq!(v, 20.0);
        // Warm: now the decay applies to the value.
        assert_eq!(m.value(m.scale(w, 0.95)), 19.0);
        let z = ExpAvg {
            window: 1,
            warmup: 0,
        };
        // No warm-up: 0 * (1 - 1) + 8 * 1.
        assert_eq!(z.add(z.empty(), 8).1, 8.0);
    }
}
