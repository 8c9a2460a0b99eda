//! One random generator per thread and balancer seed, numbered so that runs are reproducible.

use crate::internal::splitmix::SplitMix64;
use fastrand::Rng;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread_local;
use std::vec::Vec;

/// SplitMix64's increment (the golden ratio in 64 bits).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

// Each thread numbers itself the first time it draws, so a single-threaded program (ordinal 0) makes the same
// decisions on every run, and every binding that runs the same calls on one thread makes the same ones.
static NEXT_THREAD: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static THREAD_ORDINAL: u64 = NEXT_THREAD.fetch_add(1, Ordering::Relaxed);
    // (seed, generator) pairs: one generator per balancer seed on this thread, a handful at most.
    static RNGS: RefCell<Vec<(u64, Rng)>> = const { RefCell::new(Vec::new()) };
}

/// The seed of the generator that thread number `ordinal` uses for a balancer seeded with `seed`
/// (SplitMix64 of the pair; documented so that other implementations can reproduce it).
///
/// ```
/// // The first output of SplitMix64 whose first state is `seed ^ ordinal * 0x9E3779B97F4A7C15`.
/// assert_eq!(weir::rt::thread_seed(0, 0), 0);
/// assert_ne!(weir::rt::thread_seed(7, 0), weir::rt::thread_seed(7, 1));
/// ```
pub fn thread_seed(seed: u64, ordinal: u64) -> u64 {
    // SplitMix64 adds its increment before mixing: start one increment back so that the mixed word is
    // `seed ^ ordinal * increment` itself.
    SplitMix64::new((seed ^ ordinal.wrapping_mul(GOLDEN)).wrapping_sub(GOLDEN)).next_u64()
}

/// Runs `f` with this thread's generator for `seed`: the generator the guards and the bindings draw from.
///
/// ```
/// let b = weir::HeapBalancer::with_capacity(2, weir::Config::default()).unwrap();
/// b.add(1).unwrap();
/// let lease = weir::rt::with_thread_rng(b.config().seed, |rng| b.acquire(0, rng)).unwrap();
/// assert_eq!(lease.node_id(), 1);
/// # b.release(lease, weir::Outcome::Success, 1).unwrap();
/// ```
pub fn with_thread_rng<T>(seed: u64, f: impl FnOnce(&mut Rng) -> T) -> T {
    let ordinal = THREAD_ORDINAL.with(|o| *o);
    RNGS.with(|cell| {
        let mut rngs = cell.borrow_mut();
        let pos = match rngs.iter().position(|(s, _)| *s == seed) {
            Some(p) => p,
            None => {
                if rngs.len() >= 32 {
                    rngs.remove(0);
                }
                rngs.push((seed, Rng::with_seed(thread_seed(seed, ordinal))));
                rngs.len() - 1
            }
        };
        f(&mut rngs[pos].1)
    })
}
