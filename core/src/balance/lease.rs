//! A lease: the right to make one call to one node, and its plain parts for the bindings.

/// The right to make one call to one node. Obtained from [`Balancer::acquire`] and consumed by
/// [`Balancer::release`]; neither `Clone` nor `Copy`, so it is released at most once. Dropping it without
/// releasing leaks the node's in-flight slot: with the `std` feature, prefer [`LeaseGuard`](crate::rt::LeaseGuard),
/// which releases as [`Outcome::Ignored`] on drop.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a lease holds a concurrency slot until it is released"]
pub struct Lease {
    pub(crate) id: u64,
    pub(crate) start: u64,
    pub(crate) slot: u32,
    pub(crate) inflight: u32,
    pub(crate) generation: u16,
}

/// The plain fields of a lease, for bindings that must hand it across a language boundary.
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
}

impl Lease {
    /// The id of the node to call.
    pub fn node_id(&self) -> u64 {
        self.id
    }
    /// The `now` passed to `acquire`.
    pub fn acquired_at(&self) -> u64 {
        self.start
    }
    /// Requests in flight on the node when this one was admitted, including it.
    pub fn inflight_at_acquire(&self) -> u32 {
        self.inflight
    }
    /// Gives up the lease's fields (the lease is consumed; pass them back with [`Lease::from_raw`]).
    ///
    /// ```
    /// # use weir::{Balancer, Config, NodeSlot, Outcome, Lease};
    /// # let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// # b.add(1).unwrap();
    /// let raw = b.acquire(0, &mut fastrand::Rng::with_seed(1)).unwrap().into_raw();
    /// b.release(Lease::from_raw(raw), Outcome::Success, 5).unwrap();
    /// ```
    pub fn into_raw(self) -> RawLease {
        RawLease {
            id: self.id,
            start: self.start,
            slot: self.slot,
            inflight: self.inflight,
            generation: self.generation,
        }
    }
    /// Rebuilds a lease from [`Lease::into_raw`]. A forged or twice-used raw lease is caught where the
    /// balancer can tell ([`ReleaseError::InvalidLease`]); bindings must still release each raw lease once.
    pub fn from_raw(raw: RawLease) -> Lease {
        Lease {
            id: raw.id,
            start: raw.start,
            slot: raw.slot,
            inflight: raw.inflight,
            generation: raw.generation,
        }
    }
}
