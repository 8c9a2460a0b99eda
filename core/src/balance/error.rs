//! Errors: every failure is a value with a clear message; nothing in the core panics on user input.

use core::fmt;

/// Why [`Balancer::acquire`](crate::balance::Balancer::acquire) granted no lease. Both are fail-fast answers:
/// return an error to your own caller, or (with `std`) wait for room with the waiting acquires.
///
/// ```
/// use weir::balance::Rejected;
/// use weir::limit::{FixedLimit, LimitAlgorithm};
/// use weir::{Balancer, Config, NodeSlot, Rng};
/// let config = Config { limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }), ..Config::default() };
/// let b = Balancer::new([const { NodeSlot::new() }; 1], config).unwrap();
/// let mut rng = Rng::with_seed(1);
/// assert_eq!(b.acquire(0, &mut rng), Err(Rejected::NoActiveNodes));
/// b.add(1).unwrap();
/// let _held = b.acquire(0, &mut rng).unwrap();
/// let refused = b.acquire(0, &mut rng).unwrap_err();
/// assert_eq!(refused, Rejected::AllBusy);
/// assert_eq!(refused.to_string(), "every active node is at its concurrency limit");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Rejected {
    /// There are active nodes, but none takes the call: every one is at its concurrency limit, or, under
    /// [`Algorithm::LowestScore`](crate::balance::Algorithm::LowestScore), the nodes with room score more
    /// than twice a full node and carry a penalty (the give-up rule).
    AllBusy,
    /// There is no node in rotation (none added, all removed, or all in lame duck).
    NoActiveNodes,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejected::AllBusy => f.write_str("every active node is at its concurrency limit"),
            Rejected::NoActiveNodes => f.write_str("no active nodes"),
        }
    }
}

/// A membership change that was refused. State is left exactly as it was.
///
/// ```
/// use weir::balance::MembershipError;
/// use weir::{Balancer, Config, NodeSlot};
/// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
/// assert_eq!(b.remove(4), Err(MembershipError::UnknownId(4)));
/// b.add(4).unwrap();
/// assert_eq!(b.add(4).unwrap_err().to_string(), "node 4 is already a member");
/// assert_eq!(b.add(5), Err(MembershipError::CapacityFull { capacity: 1 }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MembershipError {
    /// A node with this id is already a member.
    DuplicateId(u64),
    /// No member has this id.
    UnknownId(u64),
    /// Every slot is occupied, or still draining leases of removed nodes.
    CapacityFull {
        /// The number of slots the balancer was built with.
        capacity: usize,
    },
}

impl fmt::Display for MembershipError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MembershipError::DuplicateId(id) => write!(f, "node {id} is already a member"),
            MembershipError::UnknownId(id) => write!(f, "no node with id {id}"),
            MembershipError::CapacityFull { capacity } => write!(
                f,
                "all {capacity} node slots are occupied or still draining leases of removed nodes"
            ),
        }
    }
}

/// A release that recorded nothing. In every case the balancer's state is intact and counted.
///
/// ```
/// use weir::balance::ReleaseError;
/// use weir::{Balancer, Config, Lease, NodeSlot, Outcome, Rng};
/// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
/// b.add(1).unwrap();
/// let raw = b.acquire(0, &mut Rng::with_seed(1)).unwrap().into_raw();
/// b.remove(1).unwrap();
/// // The node left: the in-flight slot comes back, nothing else is recorded.
/// assert_eq!(b.release(Lease::from_raw(raw), Outcome::Success, 5), Err(ReleaseError::NodeRemoved { id: 1 }));
/// // Released already: refused.
/// assert_eq!(b.release(Lease::from_raw(raw), Outcome::Success, 5), Err(ReleaseError::InvalidLease));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReleaseError {
    /// The lease's node was removed (or removed and replaced) after the lease was granted. The lease's
    /// in-flight slot is returned, but no health or limiter update is made, so the removed node's history
    /// never leaks into the new occupant. Counted as `released_stale`.
    NodeRemoved {
        /// The id the lease was granted for.
        id: u64,
    },
    /// The lease does not belong to this balancer, or was already released (possible only through the
    /// raw-parts interface used by the C and Python bindings; a Rust `Lease` is consumed by `release`).
    InvalidLease,
}

impl fmt::Display for ReleaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReleaseError::NodeRemoved { id } => {
                write!(
                    f,
                    "node {id} was removed after the lease was granted; nothing recorded"
                )
            }
            ReleaseError::InvalidLease => {
                f.write_str("lease does not belong to this balancer or was already released")
            }
        }
    }
}

/// A health check's answer that was not recorded ([`Balancer::report_check`](crate::balance::Balancer::report_check)).
/// The balancer's state is left exactly as it was.
///
/// ```
/// use weir::balance::CheckError;
/// use weir::{Balancer, Config, NodeSlot};
/// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
/// assert_eq!(b.report_check(7, true, 0), Err(CheckError::UnknownId(7)));
/// let cascade = Balancer::new([const { NodeSlot::new() }; 1], Config::cascade()).unwrap();
/// cascade.add(7).unwrap();
/// assert_eq!(cascade.report_check(7, true, 0).unwrap_err().to_string(),
///     "health checks are read by the lowest-score family only");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CheckError {
    /// No member has this id.
    UnknownId(u64),
    /// The balancer's algorithm is not the lowest-score family's, which alone keeps the penalties that
    /// checks readmit from (the weighted family's window comes back by its own trickle).
    NotLowestScore,
}

impl fmt::Display for CheckError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckError::UnknownId(id) => write!(f, "no node with id {id}"),
            CheckError::NotLowestScore => {
                f.write_str("health checks are read by the lowest-score family only")
            }
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Rejected {}
#[cfg(feature = "std")]
impl std::error::Error for MembershipError {}
#[cfg(feature = "std")]
impl std::error::Error for ReleaseError {}
#[cfg(feature = "std")]
impl std::error::Error for CheckError {}
