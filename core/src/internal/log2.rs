//! `log2` of a double of at least 1, from its bits, a table and a short polynomial: what the
//! lowest-score family's penalty spends on each failure and each rotation (see `balance/lowest/decay.rs`).
//!
//! # The rule
//! `x = 2^e · m` with `m` in [1, 2): `e` is the exponent field of `x`'s bits, and the top 6 bits of the
//! mantissa, rounded, name the nearest of the 33 points `c = 1 + i/32` (`i` in 0..=32). Then
//! `log2(x) = e + log2(c) + log2(1 + r)`, with `r = m · (1/c) − 1`, `|r| ≤ 1/64`, and `log2(1 + r)` is
//! its Taylor series cut after `r^7` (`(r − r²/2 + … + r^7/7) / ln 2`). The table holds `1/c` and
//! `−log2` of that very `1/c`, both rounded to the nearest double, so that the reduction holds exactly for
//! the doubles the table holds.
//!
//! Only `+`, `−`, `×` and integer operations, in a fixed order (Rust never contracts them into fused
//! multiply-adds): the same bits on every target and under every libm, unlike `libm::log2`, which is
//! also three times the instructions and special-cases what a penalty never meets (0, negatives,
//! subnormals, NaN, infinities).
//!
//! # Error
//! At most [`ERROR`] (`2^-48`, 3.6e-15) plus half a unit in the last place of the result from the exact
//! `log2(x)`: the series' tail is below `|r|^8 / (8 ln 2) ≤ 2^-48 · 0.181`, the rounding of `r` adds at
//! most `1.5 · 2^-53`, that of the table's logarithm `2^-54`, and the polynomial's own roundings less
//! than `2^-56`; then the sum with `e` rounds once more. Powers of two are exact (`m = c = 1`, `r = 0`).
//! The tests check the bound against `libm::log2` over a sweep.

/// The bound on the error before the final rounding (see the module docs).
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) const ERROR: f64 = 1.0 / (1u64 << 48) as f64;

/// `(1/c, −log2(1/c))` for `c = 1 + i/32`, `i` in 0..=32, each the double nearest to its exact value
/// (`1/c` nearest to the quotient, the logarithm nearest to that of the double `1/c`).
const TABLE: [(f64, f64); 33] = [
    (1.0, 0.0),
    (0.9696969696969697, 0.044394119358453395),
    (0.9411764705882353, 0.08746284125033943),
    (0.9142857142857143, 0.1292830169449665),
    (0.8888888888888888, 0.16992500144231246),
    (0.8648648648648649, 0.2094533656289497),
    (0.8421052631578947, 0.24792751344358557),
    (0.8205128205128205, 0.28540221886224837),
    (0.8, 0.3219280948873623),
    (0.7804878048780488, 0.3575520046180836),
    (0.7619047619047619, 0.39231742277876036),
    (0.7441860465116279, 0.42626475470209796),
    (0.7272727272727273, 0.4594316186372972),
    (0.7111111111111111, 0.49185309632967467),
    (0.6956521739130435, 0.523561956057013),
    (0.6808510638297872, 0.5545888516776374),
    (0.6666666666666666, 0.5849625007211563),
    (0.6530612244897959, 0.6147098441152083),
    (0.64, 0.6438561897747247),
    (0.6274509803921569, 0.6724253419714956),
    (0.6153846153846154, 0.7004397181410921),
    (0.6037735849056604, 0.7279204545631992),
    (0.5925925925925926, 0.7548875021634687),
    (0.5818181818181818, 0.7813597135246597),
    (0.5714285714285714, 0.8073549220576042),
    (0.5614035087719298, 0.8328900141647417),
    (0.5517241379310345, 0.8579809951275721),
    (0.5423728813559322, 0.8826430493618412),
    (0.5333333333333333, 0.9068905956085186),
    (0.5245901639344263, 0.9307373375628862),
    (0.5161290322580645, 0.9541963103868752),
    (0.5079365079365079, 0.9772799234999165),
    (0.5, 1.0),
];

/// `(−1)^(k+1) / (k ln 2)` for `k` in 1..=7: the series of `log2(1 + r)`, each the nearest double.
const A: [f64; 7] = [
    core::f64::consts::LOG2_E,
    -0.7213475204444817,
    0.4808983469629878,
    -0.36067376022224085,
    0.28853900817779266,
    -0.2404491734814939,
    0.2060992915555662,
];

/// Bits of a double's mantissa field.
const MANTISSA: u32 = 52;
/// The exponent field of 1.0.
const BIAS: u64 = 1023;

/// `log2(x)` for a finite `x ≥ 1`, within [`ERROR`] plus half an ulp of the result (see the module
/// docs). Below 1 (or NaN) the answer is meaningless but finite or NaN, never a panic: the exponent
/// wraps.
#[inline]
pub(crate) fn log2(x: f64) -> f64 {
    let bits = x.to_bits();
    let e = ((bits >> MANTISSA).wrapping_sub(BIAS)) as i64 as f64;
    // The top 6 bits of the mantissa, rounded to 5: the nearest `c` (ties up), 0..=32.
    let i = (((bits >> (MANTISSA - 6)) & 63) + 1) >> 1;
    // `m`: the mantissa with 1.0's exponent.
    let m = f64::from_bits((bits & ((1 << MANTISSA) - 1)) | (BIAS << MANTISSA));
    // `i` is at most 32: the lookup never misses (a checked read all the same, so that no panic path is
    // linked).
    let (inv, log) = TABLE.get(i as usize).copied().unwrap_or((1.0, 0.0));
    let r = m * inv - 1.0;
    // Estrin's scheme: three independent pairs, then two levels, so the chain is short.
    let r2 = r * r;
    let r4 = r2 * r2;
    let q = (A[0] + A[1] * r) + r2 * (A[2] + A[3] * r) + r4 * ((A[4] + A[5] * r) + r2 * A[6]);
    e + (log + r * q)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    /// The gap from `y` (a positive normal double) to the next double up.
    fn ulp(y: f64) -> f64 {
        f64::from_bits(y.to_bits() + 1) - y
    }

    /// Against `libm::log2` (itself within 0.55 ulp of the exact value): within the bound plus both
    /// roundings, over every table interval at fine steps, both sides of each rounding point of the
    /// index, and exponents up to the largest an `f32` counter gives.
    #[test]
    fn within_the_bound_of_libm() {
        // Fewer under miri, which interprets every step.
        const STEPS: u64 = if cfg!(miri) { 1 << 8 } else { 1 << 20 };
        let mut worst = 0.0f64;
        let mut check = |x: f64| {
            let (ours, theirs) = (log2(x), libm::log2(x));
            let err = (ours - theirs).abs();
            assert!(
                err <= ERROR + 2.0 * ulp(theirs.max(1.0)),
                "log2({x:e}) = {ours:e}, libm {theirs:e}"
            );
            if theirs < 1.0 {
                worst = worst.max(err);
            }
        };
        // Mantissas evenly over [1, 2), each also shifted to one of 127 exponents.
        for k in 0..STEPS {
            let m = 1.0 + k as f64 / STEPS as f64;
            check(m);
            check(m * power(k % 128));
        }
        for j in 0..=64 {
            let point = 1.0 + f64::from(j) / 64.0;
            for d in [-2i64, -1, 0, 1, 2] {
                let x = f64::from_bits(point.to_bits().wrapping_add_signed(d));
                if (1.0..2.0).contains(&x) {
                    check(x);
                    check(x * 1e30);
                }
            }
        }
        check(f64::from(f32::MAX));
        // Below 1, where the result's own rounding is finest, the error is within the bound alone.
        assert!(worst <= ERROR, "{worst:e}");
    }

    /// `2^k`.
    fn power(k: u64) -> f64 {
        f64::from_bits((BIAS + k) << MANTISSA)
    }

    #[test]
    fn exact_at_powers_of_two() {
        for k in 0..=128 {
            assert_eq!(log2(power(k)), k as f64, "2^{k}");
        }
        assert_eq!(log2(1.0).to_bits(), 0.0f64.to_bits());
    }
}
