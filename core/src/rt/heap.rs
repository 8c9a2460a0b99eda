//! A balancer over heap-allocated slots, sized at run time.

use crate::balance::{Balancer, Config, ConfigError, NodeSlot, MAX_NODES};
use std::boxed::Box;

/// A balancer over a boxed slice of slots, allocated once by [`HeapBalancer::with_capacity`]: what a
/// `std` service keeps in a struct or an `Arc`.
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
pub type HeapBalancer = Balancer<Box<[NodeSlot]>>;

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl Balancer<Box<[NodeSlot]>> {
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
        Balancer::new(slots, config)
    }
}
