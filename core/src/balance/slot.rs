//! One node's storage: a control word (see `word.rs`), the health words and the outcome counters, padded
//! to its own cache lines so that nodes never share one.

use crate::balance::health::Health;
use crate::internal::pad::cache_padded;
use crate::internal::sync::AtomicU64;
use crate::limit::LimitState;

cache_padded! {
    /// Storage for one node of a [`Balancer`](crate::balance::Balancer). Build an array or boxed slice of these and
    /// hand it to the balancer; its contents are private.
    ///
    /// A slot is padded to the target's cache line so that nodes never share one (see the README for the
    /// size per target: 384 bytes on x86_64, aarch64 and riscv64, 352 on 32-bit ARM).
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot};
    /// // no_std style: a fixed array (it can live in a `static`).
    /// static SLOTS: [NodeSlot; 4] = [const { NodeSlot::new() }; 4];
    /// let balancer = Balancer::new(&SLOTS[..], Config::default()).unwrap();
    /// assert_eq!(balancer.capacity(), 4);
    /// ```
    #[derive(Debug)]
    #[repr(C)]
    pub struct NodeSlot {
        // The scan reads `ctl` and the first word of `health`: both in the slot's first 32 bytes, one line
        // on every target.
        pub(crate) ctl: AtomicU64,
        pub(crate) health: Health,
        pub(crate) id: AtomicU64,
        /// Leases released with each [`Outcome`](crate::balance::Outcome), by its code, since the balancer
        /// was built: the slot's every occupant together.
        pub(crate) released: [AtomicU64; 6],
        /// `released` when the slot's occupant was added: its own counts are the difference.
        pub(crate) released_base: [AtomicU64; 6],
        /// Leases released after their node was removed.
        pub(crate) stale: AtomicU64,
        /// The limit algorithm's state, reset on add and updated by `Success`/`Dropped` releases.
        pub(crate) limit: LimitState,
        /// The tag of the balancer that holds this slot, 0 when none does (see `Balancer::new`).
        pub(crate) owner: AtomicU64,
    }
}

/// The bytes a slot holds before padding: the sizes the README states per target follow from it
/// (384 with 128-byte lines and with 64, 352 with 32), and every target the build runs for checks them.
#[cfg(not(loom))]
#[allow(
    dead_code,
    reason = "read only by a const assertion, which rustc 1.85 (the MSRV) misses"
)]
const SLOT_CONTENT: usize = 344;
#[cfg(not(loom))]
const _: () = assert!(
    core::mem::size_of::<NodeSlot>()
        == SLOT_CONTENT.div_ceil(crate::internal::pad::LINE) * crate::internal::pad::LINE
);

impl NodeSlot {
    /// An empty slot.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: AtomicU64 = AtomicU64::new(0);
        NodeSlot {
            ctl: ZERO,
            health: Health::new(),
            id: ZERO,
            released: [ZERO; 6],
            released_base: [ZERO; 6],
            stale: ZERO,
            limit: LimitState::new(),
            owner: ZERO,
        }
    }

    /// An empty slot.
    #[cfg(loom)]
    pub fn new() -> Self {
        NodeSlot {
            ctl: AtomicU64::new(0),
            health: Health::new(),
            id: AtomicU64::new(0),
            released: core::array::from_fn(|_| AtomicU64::new(0)),
            released_base: core::array::from_fn(|_| AtomicU64::new(0)),
            stale: AtomicU64::new(0),
            limit: LimitState::new(),
            owner: AtomicU64::new(0),
        }
    }
}

impl Default for NodeSlot {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn slot_is_padded() {
        use crate::internal::pad::LINE;
        assert_eq!(core::mem::align_of::<NodeSlot>(), LINE);
        assert_eq!(core::mem::size_of::<NodeSlot>() % LINE, 0);
    }

    #[test]
    fn scan_reads_one_line_per_node() {
        // The acquire scan reads `ctl` and the scan weight (the first word of `health`): both must lie in
        // the slot's first 64 bytes.
        let s = NodeSlot::new();
        let base = &s as *const NodeSlot as usize;
        let ctl = &s.ctl as *const AtomicU64 as usize - base;
        let cache = s.health.scan_addr() - base;
        assert!(
            ctl < 64 && cache + 8 <= 64,
            "ctl at {ctl}, cache at {cache}"
        );
    }
}
