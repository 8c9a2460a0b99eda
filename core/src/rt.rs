//! `std` conveniences: a monotonic clock, per-thread random generators and an RAII lease guard.
//! Nothing here is needed to use the core; it only saves `std` users the plumbing.

use crate::{Balancer, Lease, NodeSlot, Outcome, Rejected, ReleaseError};
use fastrand::Rng;
use std::boxed::Box;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::thread_local;
use std::time::Instant;
use std::vec::Vec;

/// Monotonic nanoseconds since the first call in this process: the `now` every core call takes.
///
/// ```
/// let a = weir::monotonic_now();
/// let b = weir::monotonic_now();
/// assert!(b >= a);
/// ```
pub fn monotonic_now() -> u64 {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

/// A `std` balancer over heap-allocated slots.
pub type HeapBalancer = Balancer<Box<[NodeSlot]>>;

impl Balancer<Box<[NodeSlot]>> {
    /// Builds a balancer with `capacity` heap-allocated slots (allocated once, here).
    ///
    /// ```
    /// let b = weir::Balancer::with_capacity(16, weir::Config::default()).unwrap();
    /// assert_eq!(b.capacity(), 16);
    /// assert!(weir::Balancer::with_capacity(0, weir::Config::default()).is_err());
    /// ```
    pub fn with_capacity(
        capacity: usize,
        config: crate::Config,
    ) -> Result<Self, crate::ConfigError> {
        if capacity == 0 || capacity > crate::MAX_NODES {
            return Err(crate::ConfigError::Capacity);
        }
        let slots: Box<[NodeSlot]> = (0..capacity).map(|_| NodeSlot::new()).collect();
        Balancer::new(slots, config)
    }
}

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
pub fn thread_seed(seed: u64, ordinal: u64) -> u64 {
    let mut z = seed ^ ordinal.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Runs `f` with this thread's generator for `seed`.
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

impl<S: AsRef<[NodeSlot]>> Balancer<S> {
    /// Acquires at [`monotonic_now`] with this thread's generator and returns a guard that releases the
    /// lease when told the outcome, or as [`Outcome::Ignored`] if dropped without one.
    ///
    /// ```
    /// let b = weir::Balancer::with_capacity(2, weir::Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// {
    ///     let guard = b.acquire_guard().unwrap();
    ///     assert_eq!(guard.node_id(), 1);
    ///     guard.complete(weir::Outcome::Success).unwrap();
    /// }
    /// drop(b.acquire_guard().unwrap()); // released as Ignored
    /// assert_eq!(b.stats().released, [1, 0, 0, 1]);
    /// ```
    pub fn acquire_guard(&self) -> Result<LeaseGuard<'_, S>, Rejected> {
        let now = monotonic_now();
        let lease = with_thread_rng(self.config().seed, |rng| self.acquire(now, rng))?;
        Ok(LeaseGuard {
            balancer: self,
            lease: Some(lease),
        })
    }
}

/// A lease that releases itself: [`complete`](LeaseGuard::complete) reports the outcome at
/// [`monotonic_now`]; dropping the guard without completing reports [`Outcome::Ignored`], so a panic or an
/// early return never leaks a concurrency slot.
#[derive(Debug)]
#[must_use = "dropping the guard at once releases the lease as Ignored"]
pub struct LeaseGuard<'a, S: AsRef<[NodeSlot]>> {
    balancer: &'a Balancer<S>,
    lease: Option<Lease>,
}

impl<S: AsRef<[NodeSlot]>> LeaseGuard<'_, S> {
    /// The id of the node to call.
    pub fn node_id(&self) -> u64 {
        self.lease.as_ref().map_or(0, Lease::node_id)
    }

    /// Releases the lease with `outcome`.
    pub fn complete(mut self, outcome: Outcome) -> Result<(), ReleaseError> {
        match self.lease.take() {
            Some(lease) => self.balancer.release(lease, outcome, monotonic_now()),
            None => Err(ReleaseError::InvalidLease),
        }
    }
}

impl<S: AsRef<[NodeSlot]>> Drop for LeaseGuard<'_, S> {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            // The only possible error is that the node was removed meanwhile: nothing left to do.
            let _ = self
                .balancer
                .release(lease, Outcome::Ignored, monotonic_now());
        }
    }
}
