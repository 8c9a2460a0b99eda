//! SplitMix64, the small generator behind the documented shuffle and the limiters' probe jitter.

/// The SplitMix64 generator (Steele, Lea and Flood, 2014; Vigna's constants), specified in the [`subset`](crate::subset) module
/// docs so that other languages reproduce [`shuffle`](crate::subset::shuffle) exactly.
///
/// ```
/// let mut g = weir::subset::SplitMix64::new(0);
/// assert_eq!(g.next_u64(), 0xE220_A839_7B1D_CDAF); // the reference implementation's first output
/// assert!(g.below(10) < 10);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose state starts at `seed`.
    ///
    /// ```
    /// let (mut a, mut b) = (weir::subset::SplitMix64::new(5), weir::subset::SplitMix64::new(5));
    /// assert_eq!(a.next_u64(), b.next_u64());
    /// ```
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    ///
    /// ```
    /// let mut g = weir::subset::SplitMix64::new(1234567);
    /// assert_eq!(g.next_u64(), 6457827717110365317); // the reference implementation's
    /// ```
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..m` (0 when `m` is 0): `(next_u64() × m) >> 64`.
    ///
    /// ```
    /// let mut g = weir::subset::SplitMix64::new(7);
    /// assert!((0..100).all(|_| g.below(3) < 3));
    /// assert_eq!(g.below(0), 0);
    /// ```
    pub fn below(&mut self, m: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(m)) >> 64) as u64
    }
}
