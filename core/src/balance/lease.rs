//! A lease: the right to make one call to one node, and its plain parts for the bindings.

/// The right to make one call to one node. Obtained from [`Balancer::acquire`](crate::Balancer::acquire)
/// and consumed by [`Balancer::release`](crate::Balancer::release); neither `Clone` nor `Copy`, so it is
/// released at most once. It is bound to the balancer that granted it: released into another balancer it
/// is refused as [`ReleaseError::InvalidLease`](crate::balance::ReleaseError::InvalidLease) and changes
/// nothing there.
///
/// Dropping a lease without releasing it leaks the node's in-flight slot: with the `std` feature, prefer
/// [`LeaseGuard`](crate::rt::LeaseGuard) or [`OwnedLeaseGuard`](crate::rt::OwnedLeaseGuard), which release
/// as [`Outcome::Ignored`](crate::Outcome::Ignored) on drop.
///
/// ```
/// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
/// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::default()).unwrap();
/// b.add(7).unwrap();
/// let lease = b.acquire(1_000, &mut Rng::with_seed(1)).unwrap();
/// assert_eq!((lease.node_id(), lease.acquired_at(), lease.inflight_at_acquire()), (7, 1_000, 1));
/// b.release(lease, Outcome::Success, 2_000).unwrap();
/// ```
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a lease holds a concurrency slot until it is released"]
pub struct Lease {
    pub(crate) id: u64,
    pub(crate) start: u64,
    pub(crate) slot: u32,
    pub(crate) inflight: u32,
    pub(crate) generation: u16,
    pub(crate) balancer: u32,
}

/// The plain fields of a lease, for bindings that must hand it across a language boundary (32 bytes,
/// `repr(C)`). Every field is checked on release: a raw lease whose balancer tag, slot, generation or
/// node id does not match a lease in flight is refused as
/// [`ReleaseError::InvalidLease`](crate::balance::ReleaseError::InvalidLease) and changes nothing.
///
/// ```
/// assert_eq!(core::mem::size_of::<weir::balance::RawLease>(), 32);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(C)]
pub struct RawLease {
    /// Node id.
    pub id: u64,
    /// `now` at acquire.
    pub start: u64,
    /// Slot index.
    pub slot: u32,
    /// In-flight count at admission, including this lease.
    pub inflight: u32,
    /// Slot generation.
    pub generation: u16,
    /// The tag of the balancer that granted the lease (unique among the balancers of a process, never 0).
    pub balancer: u32,
}

impl Lease {
    /// The id of the node to call.
    ///
    /// ```
    /// # use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// b.add(42).unwrap();
    /// let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
    /// assert_eq!(lease.node_id(), 42);
    /// # b.release(lease, Outcome::Success, 1).unwrap();
    /// ```
    pub fn node_id(&self) -> u64 {
        self.id
    }

    /// The `now` passed to `acquire`.
    ///
    /// ```
    /// # use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let lease = b.acquire(123_456, &mut Rng::with_seed(1)).unwrap();
    /// assert_eq!(lease.acquired_at(), 123_456);
    /// # b.release(lease, Outcome::Success, 200_000).unwrap();
    /// ```
    pub fn acquired_at(&self) -> u64 {
        self.start
    }

    /// Requests in flight on the node when this one was admitted, including it.
    ///
    /// ```
    /// # use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let mut rng = Rng::with_seed(1);
    /// let first = b.acquire(0, &mut rng).unwrap();
    /// let second = b.acquire(0, &mut rng).unwrap();
    /// assert_eq!((first.inflight_at_acquire(), second.inflight_at_acquire()), (1, 2));
    /// # b.release(first, Outcome::Success, 1).unwrap();
    /// # b.release(second, Outcome::Success, 1).unwrap();
    /// ```
    pub fn inflight_at_acquire(&self) -> u32 {
        self.inflight
    }

    /// Gives up the lease's fields (the lease is consumed; pass them back with [`Lease::from_raw`]).
    ///
    /// ```
    /// use weir::{Balancer, Config, Lease, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let raw = b.acquire(0, &mut Rng::with_seed(1)).unwrap().into_raw();
    /// assert_eq!(raw.id, 1);
    /// b.release(Lease::from_raw(raw), Outcome::Success, 5).unwrap();
    /// ```
    pub fn into_raw(self) -> RawLease {
        RawLease {
            id: self.id,
            start: self.start,
            slot: self.slot,
            inflight: self.inflight,
            generation: self.generation,
            balancer: self.balancer,
        }
    }

    /// Rebuilds a lease from [`Lease::into_raw`]. A raw lease whose balancer tag, slot, generation or
    /// node id matches no lease in flight (a foreign or forged one), or whose node was removed, is
    /// refused on release ([`ReleaseError::InvalidLease`](crate::balance::ReleaseError::InvalidLease) or
    /// [`NodeRemoved`](crate::balance::ReleaseError::NodeRemoved)) and changes nothing. A raw lease
    /// released a second time is refused while its node has no other lease in flight; while it has
    /// others, the balancer keeps counts, not a list of leases, so the second release cannot be told
    /// from theirs: it is taken as one of them, and that lease's own release is refused later. Bindings
    /// must therefore release each raw lease once (the C layer clears the tag of the lease it releases,
    /// so the same `weir_lease` released twice is always refused).
    ///
    /// ```
    /// use weir::balance::ReleaseError;
    /// use weir::{Balancer, Config, Lease, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let raw = b.acquire(0, &mut Rng::with_seed(1)).unwrap().into_raw();
    /// b.release(Lease::from_raw(raw), Outcome::Success, 5).unwrap();
    /// // The same raw lease again: refused, nothing counted twice.
    /// assert_eq!(b.release(Lease::from_raw(raw), Outcome::Success, 6), Err(ReleaseError::InvalidLease));
    /// ```
    pub fn from_raw(raw: RawLease) -> Lease {
        Lease {
            id: raw.id,
            start: raw.start,
            slot: raw.slot,
            inflight: raw.inflight,
            generation: raw.generation,
            balancer: raw.balancer,
        }
    }
}
