//! A balancer over heap-allocated slots, sized at run time, and the names of its guards and waits (so
//! that a struct field need not spell the storage).

use super::guard::{LeaseGuard, OwnedLeaseGuard};
use super::queue::Waiters;
use super::wait::{Wait, WaitOwned};
use crate::balance::{Balancer, Config, ConfigError, NodeSlot, MAX_NODES};
use std::boxed::Box;

/// A balancer over a boxed slice of slots, allocated once by [`HeapBalancer::with_capacity`], whose
/// callers can wait for room ([`Waiters`]): what a `std` service keeps in a struct or an `Arc`.
///
/// ```
/// use std::sync::Arc;
/// use weir::{Config, HeapBalancer};
///
/// struct Client {
///     backends: Arc<HeapBalancer>,
/// }
///
/// let client = Client { backends: Arc::new(HeapBalancer::with_capacity(64, Config::default()).unwrap()) };
/// client.backends.add(1).unwrap();
/// assert_eq!(client.backends.capacity(), 64);
/// ```
pub type HeapBalancer = Balancer<Box<[NodeSlot]>, Waiters>;

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl Balancer<Box<[NodeSlot]>, Waiters> {
    /// Builds a balancer with `capacity` heap-allocated slots (allocated once, here).
    ///
    /// ```
    /// let b = weir::HeapBalancer::with_capacity(16, weir::Config::default()).unwrap();
    /// assert_eq!(b.capacity(), 16);
    /// assert!(weir::HeapBalancer::with_capacity(0, weir::Config::default()).is_err());
    /// ```
    pub fn with_capacity(capacity: usize, config: Config) -> Result<Self, ConfigError> {
        if capacity == 0 || capacity > MAX_NODES {
            return Err(ConfigError::Capacity);
        }
        let slots: Box<[NodeSlot]> = (0..capacity).map(|_| NodeSlot::new()).collect();
        Balancer::with_waiting(slots, config)
    }
}

/// The lease guard of a [`HeapBalancer`] ([`LeaseGuard`] over its boxed slots), borrowing it.
///
/// ```
/// use weir::rt::HeapLeaseGuard;
/// use weir::{Config, HeapBalancer};
/// let b = HeapBalancer::with_capacity(1, Config::default()).unwrap();
/// b.add(1).unwrap();
/// let guard: HeapLeaseGuard<'_> = b.acquire_guard().unwrap();
/// assert_eq!(guard.node_id(), 1);
/// ```
pub type HeapLeaseGuard<'a> = LeaseGuard<'a, Box<[NodeSlot]>, Waiters>;

/// The owned lease guard of a [`HeapBalancer`] shared through an `Arc`: what a struct field that holds a
/// call in progress names.
///
/// ```
/// use std::sync::Arc;
/// use weir::rt::HeapOwnedLeaseGuard;
/// use weir::{Config, HeapBalancer, Outcome};
///
/// struct Pending {
///     lease: HeapOwnedLeaseGuard,
/// }
/// let b = Arc::new(HeapBalancer::with_capacity(1, Config::default()).unwrap());
/// b.add(1).unwrap();
/// let pending = Pending { lease: Arc::clone(&b).acquire_owned().unwrap() };
/// pending.lease.complete(Outcome::Success).unwrap();
/// ```
pub type HeapOwnedLeaseGuard = OwnedLeaseGuard<Box<[NodeSlot]>, Waiters>;

/// The future of a [`HeapBalancer`]'s [`acquire_async`](Balancer::acquire_async).
///
/// ```
/// let b = weir::HeapBalancer::with_capacity(1, weir::Config::default()).unwrap();
/// let wait: weir::rt::HeapWait<'_> = b.acquire_async();
/// drop(wait);
/// ```
pub type HeapWait<'a> = Wait<'a, Box<[NodeSlot]>>;

/// The future of a [`HeapBalancer`]'s [`acquire_async_owned`](Balancer::acquire_async_owned).
///
/// ```
/// use std::sync::Arc;
/// let b = Arc::new(weir::HeapBalancer::with_capacity(1, weir::Config::default()).unwrap());
/// let wait: weir::rt::HeapWaitOwned = b.acquire_async_owned();
/// drop(wait);
/// ```
pub type HeapWaitOwned = WaitOwned<Box<[NodeSlot]>>;
