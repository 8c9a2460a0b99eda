//! Division by a divisor fixed at construction, without a division instruction.
//!
//! Every decision and every outcome turns `now` into a bucket epoch, `now / width`. A 64-bit `div` costs
//! 35–90 cycles on common x86 cores, more than the rest of a node's scan; a divisor known in advance can
//! be replaced by two multiplications. With `c = ⌈2^128 / d⌉`, `⌊n·c / 2^128⌋ = ⌊n / d⌋` for every
//! 64-bit `n` (Lemire, Kaser and Kurz, "Faster remainder by direct computation", 2019, theorem 1 with
//! F = 128, N = 64: `c·d − 2^128 < d ≤ 2^64`). `d = 1` (where `c` would need 129 bits) is kept apart.

/// A precomputed divisor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Divisor {
    /// `⌈2^128 / d⌉`, or 0 for `d = 1`.
    c: u128,
}

impl Divisor {
    /// Division by 1: what a value waiting to be prepared holds.
    pub(crate) const ONE: Divisor = Divisor { c: 0 };

    /// Prepares division by `d`; `None` for 0. Never inlined: it runs once per configuration, and
    /// its frame then lives only while it runs (see `Balancer::new`).
    #[inline(never)]
    pub(crate) const fn new(d: u64) -> Option<Self> {
        match d {
            0 => None,
            1 => Some(Divisor { c: 0 }),
            // ⌈2^128 / d⌉ = ⌊(2^128 − 1) / d⌋ + 1 for d ≥ 2 (2^128 is not a multiple of d unless d is a
            // power of two, where both sides are 2^128 / d as well).
            _ => Some(Divisor { c: max_over(d) + 1 }),
        }
    }

    /// `n / d`.
    #[inline(always)]
    pub(crate) const fn div(self, n: u64) -> u64 {
        if self.c == 0 {
            return n;
        }
        let lo = (self.c as u64) as u128 * n as u128;
        let hi = (self.c >> 64) * n as u128 + (lo >> 64);
        (hi >> 64) as u64
    }

    /// The epoch of `now` in epochs of `d`: `now / d`, the last epoch (`u64::MAX`, reached only with
    /// `d = 1`) folded into the one before it, so that `epoch + 1` never saturates (the bucket window keeps
    /// its newest epoch + 1; the balancer's clock dates its epochs as the window does).
    #[inline(always)]
    pub(crate) const fn epoch(self, now: u64) -> u64 {
        let e = self.div(now);
        if e == u64::MAX {
            u64::MAX - 1
        } else {
            e
        }
    }
}

/// `⌊(2^128 − 1) / d⌋` for `d ≥ 2`, from 64-bit operations: the high half is `⌊(2^64 − 1) / d⌋`, the
/// low half a shift-and-subtract division of the remainder and 64 one bits. The same quotient as
/// `u128::MAX / d`, whose generic 128-bit division costs about 600 bytes of code on a 32-bit core.
const fn max_over(d: u64) -> u128 {
    let hi = u64::MAX / d;
    // `rem < d` throughout; `2 * rem + 1 < 2^65`, so the bit shifted out is the 65th.
    let mut rem = u64::MAX % d;
    let mut lo = 0u64;
    let mut bit = 0;
    while bit < 64 {
        let carry = rem >> 63;
        rem = (rem << 1) | 1;
        lo <<= 1;
        if carry == 1 || rem >= d {
            // Exact modulo 2^64: the true difference is below `d`.
            rem = rem.wrapping_sub(d);
            lo |= 1;
        }
        bit += 1;
    }
    ((hi as u128) << 64) | lo as u128
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn check(d: u64, n: u64) {
        if d >= 2 {
            assert_eq!(max_over(d), u128::MAX / u128::from(d), "2^128 - 1 over {d}");
        }
        assert_eq!(Divisor::new(d).unwrap().div(n), n / d, "{n} / {d}");
    }

    #[test]
    fn exact_on_edges() {
        assert_eq!(Divisor::new(0), None);
        let ds = [
            1,
            2,
            3,
            5,
            7,
            10,
            1_000,
            5_000_000_000,
            1 << 32,
            (1 << 32) + 1,
            u64::MAX / 3,
            u64::MAX - 1,
            u64::MAX,
        ];
        for d in ds {
            for n in [
                0,
                1,
                d - 1,
                d,
                d.wrapping_add(1),
                d.wrapping_mul(2),
                u64::MAX - 1,
                u64::MAX,
                u64::MAX / d * d,
                (u64::MAX / d * d).wrapping_sub(1),
            ] {
                check(d, n);
            }
        }
    }

    #[test]
    fn exact_on_random_pairs() {
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..200_000 {
            // Divisors and numerators of every magnitude.
            let d = rng.u64(1..) >> rng.u32(0..64);
            let n = rng.u64(..) >> rng.u32(0..64);
            check(d.max(1), n);
        }
    }
}
