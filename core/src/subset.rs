//! Subsetting (Google SRE book, ch. 20): which few backends each client connects to, so that no client
//! talks to every backend and no backend hears from every client.
//!
//! [`deterministic_subset`] is the book's algorithm, specified here exactly so that a client written in
//! any language computes the same subset:
//!
//! 1. `n` = number of backends (every client must list them in the same order, e.g. sorted),
//!    `subset_count = n / subset_size` (integer division).
//! 2. `round = client_id / subset_count`, `subset_id = client_id % subset_count`.
//! 3. Shuffle a copy of the backends with [`shuffle`]`(copy, seed = round)`: clients of one round share
//!    one shuffle, and each round shuffles differently.
//! 4. The subset is `shuffled[start..end]` with `start = subset_id·n / subset_count` and
//!    `end = (subset_id + 1)·n / subset_count` (integer division, 128-bit intermediate). When `n` is a
//!    multiple of `subset_size` this is the book's `shuffled[subset_id·size .. (subset_id+1)·size]`;
//!    otherwise some subsets are one larger, as the book allows, instead of leaving backends unused.
//!
//! Within a round every backend is therefore given to exactly one client; over many rounds each backend
//! gets the same number of clients (±1 where rounds are incomplete).
//!
//! The shuffle is a Fisher–Yates (Durstenfeld) shuffle driven by [`SplitMix64`]:
//!
//! ```text
//! state = seed
//! next():  state = state + 0x9E3779B97F4A7C15 (mod 2^64)
//!          z = state
//!          z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9 (mod 2^64)
//!          z = (z ^ (z >> 27)) * 0x94D049BB133111EB (mod 2^64)
//!          return z ^ (z >> 31)
//! below(m): return (next() * m) >> 64      (128-bit product: Lemire's multiply-shift, in 0..m)
//! shuffle(a): for i = len(a) − 1 down to 1: j = below(i + 1); swap a[i], a[j]
//! ```
//!
//! [`random_subset`] is the book's naive alternative, kept for comparison: each client shuffles with its
//! own random seed and takes the first `subset_size` backends. Its load spread is wide (the book: with
//! 300 clients, 300 backends and 30 % subsets, the least loaded backend gets 63 % of the average and the
//! most loaded 121 %).
//!
//! Neither allocates: the caller provides a scratch buffer at least as long as the backend list, and
//! the subset is returned as a slice of it.

use core::fmt;
use fastrand::Rng;

pub use crate::internal::splitmix::SplitMix64;

/// Shuffles `items` in place with the documented Fisher–Yates shuffle seeded by `seed` (module docs).
///
/// ```
/// let mut a: Vec<u32> = (0..12).collect();
/// weir::subset::shuffle(&mut a, 0);
/// assert_eq!(a, [5, 11, 6, 7, 3, 1, 2, 9, 8, 0, 4, 10]);
/// ```
pub fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut g = SplitMix64::new(seed);
    for i in (1..items.len()).rev() {
        let j = g.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
}

/// Bad arguments to [`deterministic_subset`] or [`random_subset`].
///
/// ```
/// use weir::{subset::deterministic_subset, subset::SubsetError};
/// let mut scratch = [0u8; 4];
/// let e = deterministic_subset(&[1u8, 2, 3], 0, 5, &mut scratch).unwrap_err();
/// assert_eq!(e, SubsetError::SubsetTooLarge { subset_size: 5, backends: 3 });
/// assert_eq!(e.to_string(), "subset_size 5 is larger than the 3 backends");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SubsetError {
    /// The backend list is empty.
    NoBackends,
    /// `subset_size` must be at least 1.
    ZeroSubsetSize,
    /// `subset_size` is larger than the number of backends.
    SubsetTooLarge {
        /// The subset size asked for.
        subset_size: usize,
        /// The number of backends.
        backends: usize,
    },
    /// The scratch buffer is shorter than the backend list.
    ScratchTooSmall {
        /// The length needed (the number of backends).
        needed: usize,
        /// The length given.
        got: usize,
    },
}

impl fmt::Display for SubsetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubsetError::NoBackends => f.write_str("subsetting needs at least one backend"),
            SubsetError::ZeroSubsetSize => f.write_str("subset_size must be at least 1"),
            SubsetError::SubsetTooLarge {
                subset_size,
                backends,
            } => write!(
                f,
                "subset_size {subset_size} is larger than the {backends} backends"
            ),
            SubsetError::ScratchTooSmall { needed, got } => write!(
                f,
                "scratch buffer holds {got} items but the backend list has {needed}"
            ),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for SubsetError {}

fn check<T>(backends: &[T], subset_size: usize, scratch: &[T]) -> Result<(), SubsetError> {
    if backends.is_empty() {
        return Err(SubsetError::NoBackends);
    }
    if subset_size == 0 {
        return Err(SubsetError::ZeroSubsetSize);
    }
    if subset_size > backends.len() {
        return Err(SubsetError::SubsetTooLarge {
            subset_size,
            backends: backends.len(),
        });
    }
    if scratch.len() < backends.len() {
        return Err(SubsetError::ScratchTooSmall {
            needed: backends.len(),
            got: scratch.len(),
        });
    }
    Ok(())
}

/// Client `client_id`'s subset of `backends` (the SRE book's deterministic subsetting, specified exactly
/// in the module docs), computed in `scratch` (at least `backends.len()` long) and returned as a slice of
/// it: `subset_size` backends, or one more when `backends.len()` is not a multiple of `subset_size`.
///
/// ```
/// use weir::subset::deterministic_subset;
/// let backends: Vec<u32> = (0..12).collect();
/// let mut scratch = [0u32; 12];
/// // 12 backends in subsets of 3: rounds of 4 clients; clients 0..4 share round 0's shuffle.
/// let mut seen = Vec::new();
/// for client in 0..4 {
///     seen.extend_from_slice(deterministic_subset(&backends, client, 3, &mut scratch).unwrap());
/// }
/// seen.sort();
/// assert_eq!(seen, backends); // each backend exactly once per round
/// assert_eq!(deterministic_subset(&backends, 0, 3, &mut scratch).unwrap(), [5, 11, 6]);
/// ```
pub fn deterministic_subset<'a, T: Copy>(
    backends: &[T],
    client_id: u64,
    subset_size: usize,
    scratch: &'a mut [T],
) -> Result<&'a [T], SubsetError> {
    check(backends, subset_size, scratch)?;
    let n = backends.len();
    let scratch = &mut scratch[..n];
    scratch.copy_from_slice(backends);
    let subset_count = (n / subset_size) as u64;
    let round = client_id / subset_count;
    let subset_id = client_id % subset_count;
    shuffle(scratch, round);
    // subset_id < subset_count, so start < end <= n.
    let start = (u128::from(subset_id) * n as u128 / u128::from(subset_count)) as usize;
    let end = (u128::from(subset_id + 1) * n as u128 / u128::from(subset_count)) as usize;
    Ok(&scratch[start..end])
}

/// A random subset of `subset_size` backends (the SRE book's naive random subsetting, for comparison):
/// [`shuffle`] seeded with one `u64` drawn from `rng`, then the first `subset_size`. Computed in
/// `scratch` (at least `backends.len()` long).
///
/// ```
/// use weir::subset::random_subset;
/// let backends: Vec<u32> = (0..10).collect();
/// let mut scratch = [0u32; 10];
/// let s = random_subset(&backends, 3, &mut weir::Rng::with_seed(1), &mut scratch).unwrap();
/// assert_eq!(s.len(), 3);
/// assert!(random_subset(&backends, 11, &mut weir::Rng::with_seed(1), &mut scratch).is_err());
/// ```
pub fn random_subset<'a, T: Copy>(
    backends: &[T],
    subset_size: usize,
    rng: &mut Rng,
    scratch: &'a mut [T],
) -> Result<&'a [T], SubsetError> {
    check(backends, subset_size, scratch)?;
    let n = backends.len();
    let scratch = &mut scratch[..n];
    scratch.copy_from_slice(backends);
    shuffle(scratch, rng.u64(..));
    Ok(&scratch[..subset_size])
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// How many clients each backend gets when `clients` clients each take a subset.
    fn load(backends: usize, clients: u64, size: usize, random: Option<u64>) -> Vec<u32> {
        let list: Vec<u32> = (0..backends as u32).collect();
        let mut scratch = std::vec![0u32; backends];
        let mut counts = std::vec![0u32; backends];
        let mut rng = Rng::with_seed(random.unwrap_or(0));
        for client in 0..clients {
            let s = match random {
                None => deterministic_subset(&list, client, size, &mut scratch),
                Some(_) => random_subset(&list, size, &mut rng, &mut scratch),
            }
            .unwrap();
            for &b in s {
                counts[b as usize] += 1;
            }
        }
        counts
    }

    #[test]
    fn splitmix_reference_outputs() {
        // Vigna's splitmix64.c with x = 0: the first outputs.
        let mut g = SplitMix64::new(0);
        assert_eq!(g.next_u64(), 0xE220A8397B1DCDAF);
        assert_eq!(g.next_u64(), 0x6E789E6AA1B965F4);
        assert_eq!(g.next_u64(), 0x06C45D188009454F);
    }

    /// Vectors computed by an independent Python implementation of the module docs' specification
    /// (the book's example: 12 backends, rounds 0, 1, 2).
    #[test]
    fn cross_language_vectors() {
        let want = [
            [5, 11, 6, 7, 3, 1, 2, 9, 8, 0, 4, 10],
            [7, 0, 4, 1, 2, 11, 5, 10, 3, 9, 8, 6],
            [9, 0, 10, 1, 3, 4, 11, 2, 6, 5, 8, 7],
        ];
        for (round, w) in want.iter().enumerate() {
            let mut a: Vec<u32> = (0..12).collect();
            shuffle(&mut a, round as u64);
            assert_eq!(&a, w, "round {round}");
            let list: Vec<u32> = (0..12).collect();
            let mut scratch = [0u32; 12];
            for subset in 0..4usize {
                let client = round as u64 * 4 + subset as u64;
                let s = deterministic_subset(&list, client, 3, &mut scratch).unwrap();
                assert_eq!(s, &w[subset * 3..subset * 3 + 3]);
            }
        }
        assert_eq!(SplitMix64::new(1234567).next_u64(), 6457827717110365317);
    }

    #[test]
    fn each_round_assigns_every_backend_once() {
        for (n, size) in [
            (12usize, 3usize),
            (300, 10),
            (10, 3),
            (7, 7),
            (1, 1),
            (100, 33),
        ] {
            let list: Vec<u64> = (0..n as u64).collect();
            let mut scratch = std::vec![0u64; n];
            let count = (n / size) as u64;
            for round in [0u64, 1, 2, 1_000_000] {
                let mut seen = Vec::new();
                for client in round * count..(round + 1) * count {
                    let s = deterministic_subset(&list, client, size, &mut scratch).unwrap();
                    assert!(
                        s.len() == size || s.len() == size + 1 || n % size != 0,
                        "{n} {size}"
                    );
                    assert!(s.len() >= size && s.len() < 2 * size);
                    seen.extend_from_slice(s);
                }
                seen.sort_unstable();
                assert_eq!(seen, list, "n {n}, size {size}, round {round}");
            }
        }
    }

    #[test]
    fn rounds_shuffle_differently_and_reproducibly() {
        let list: Vec<u32> = (0..12).collect();
        let mut a = [0u32; 12];
        let mut b = [0u32; 12];
        // Round 0 and round 1 (client 4) take subset 0 of different shuffles.
        let r0: Vec<u32> = deterministic_subset(&list, 0, 3, &mut a).unwrap().to_vec();
        let r1: Vec<u32> = deterministic_subset(&list, 4, 3, &mut b).unwrap().to_vec();
        assert_ne!(r0, r1);
        assert_eq!(deterministic_subset(&list, 0, 3, &mut b).unwrap(), &r0[..]);
        // 10 clients (the book's example): every backend gets 2 or 3 of them.
        let counts = load(12, 10, 3, None);
        assert!(counts.iter().all(|&c| c == 2 || c == 3), "{counts:?}");
        assert_eq!(counts.iter().sum::<u32>(), 30);
    }

    #[test]
    fn sre_deterministic_300_300_10_is_exact() {
        let counts = load(300, 300, 10, None);
        let (min, max) = (counts.iter().min().unwrap(), counts.iter().max().unwrap());
        std::println!(
            "deterministic subsetting, 300 clients x 10 of 300 backends: min {min}, max {max}"
        );
        assert!(counts.iter().all(|&c| c == 10), "{counts:?}");
    }

    #[test]
    fn sre_random_subsetting_spreads_widely() {
        // The book: 300 clients, 300 backends, 30 % subsets (90): min 57, max 109 around an average of 90.
        let counts = load(300, 300, 90, Some(2016));
        let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
        std::println!("random subsetting, 300 clients x 90 of 300 backends (30%): min {min}, max {max}, average 90");
        assert_eq!(counts.iter().sum::<u32>(), 300 * 90);
        assert!(min <= 75 && max >= 105, "min {min}, max {max}");
        // And at 10 % (30 of 300): the book's 15 and 45 around 30.
        let counts = load(300, 300, 30, Some(2016));
        let (min, max) = (*counts.iter().min().unwrap(), *counts.iter().max().unwrap());
        std::println!("random subsetting, 300 clients x 30 of 300 backends (10%): min {min}, max {max}, average 30");
        assert!(min <= 21 && max >= 39, "min {min}, max {max}");
    }

    #[test]
    fn bad_input_is_rejected() {
        let list = [1u8, 2, 3];
        let mut scratch = [0u8; 3];
        let mut short = [0u8; 2];
        let mut rng = Rng::with_seed(1);
        assert_eq!(
            deterministic_subset(&[] as &[u8], 0, 1, &mut scratch),
            Err(SubsetError::NoBackends)
        );
        assert_eq!(
            deterministic_subset(&list, 0, 0, &mut scratch),
            Err(SubsetError::ZeroSubsetSize)
        );
        assert_eq!(
            deterministic_subset(&list, 0, 4, &mut scratch),
            Err(SubsetError::SubsetTooLarge {
                subset_size: 4,
                backends: 3
            })
        );
        assert_eq!(
            deterministic_subset(&list, 0, 1, &mut short),
            Err(SubsetError::ScratchTooSmall { needed: 3, got: 2 })
        );
        assert_eq!(
            random_subset(&list, 1, &mut rng, &mut short),
            Err(SubsetError::ScratchTooSmall { needed: 3, got: 2 })
        );
        assert_eq!(
            random_subset(&[] as &[u8], 1, &mut rng, &mut scratch),
            Err(SubsetError::NoBackends)
        );
        // Extreme client ids are fine.
        assert_eq!(
            deterministic_subset(&list, u64::MAX, 1, &mut scratch)
                .unwrap()
                .len(),
            1
        );
        assert_eq!(
            std::format!("{}", SubsetError::ScratchTooSmall { needed: 3, got: 2 }),
            "scratch buffer holds 2 items but the backend list has 3"
        );
    }
}
