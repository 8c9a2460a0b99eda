//! One node's storage: a control word, the health words and the outcome counters, padded to its own
//! cache lines so that nodes never share one.
//!
//! The control word packs everything admission must see at once:
//! `in_flight` (24 bits) | `limit` (24 bits) | `generation` (13 bits) | `state` (3 bits).
//! A lease is granted by one compare-and-swap that increments `in_flight` only while the state is
//! active and `in_flight < limit`, so a limit is never overshot. A slot is reused for a new node only once
//! every lease of its previous occupant has been released (`in_flight == 0`), so a late release can never
//! touch the counters of the new occupant; the generation additionally rejects leases forged through the
//! raw-parts interface of the bindings.

use crate::balance::health::Health;
use crate::internal::pad::cache_padded;
use crate::internal::sync::AtomicU64;
use crate::limit::LimitState;

pub(crate) const INFLIGHT_BITS: u32 = 24;
pub(crate) const FIELD_MASK: u64 = (1 << INFLIGHT_BITS) - 1;
const LIMIT_SHIFT: u32 = 24;
const GEN_SHIFT: u32 = 48;
pub(crate) const GEN_MASK: u64 = (1 << 13) - 1;
const STATE_SHIFT: u32 = 61;

/// Slot states. Only the adder that claimed a slot moves it out of `CLAIMED`, `REGISTERING` or `KILLED`,
/// except that a competing adder of the same id may move `REGISTERING` to `KILLED`.
pub(crate) const VACANT: u64 = 0;
pub(crate) const CLAIMED: u64 = 1;
pub(crate) const REGISTERING: u64 = 2;
pub(crate) const KILLED: u64 = 3;
pub(crate) const ACTIVE: u64 = 4;
pub(crate) const LAME_DUCK: u64 = 5;

#[inline]
pub(crate) const fn inflight(c: u64) -> u64 {
    c & FIELD_MASK
}
#[inline]
pub(crate) const fn limit(c: u64) -> u64 {
    (c >> LIMIT_SHIFT) & FIELD_MASK
}
#[inline]
pub(crate) const fn generation(c: u64) -> u64 {
    (c >> GEN_SHIFT) & GEN_MASK
}
#[inline]
pub(crate) const fn state(c: u64) -> u64 {
    c >> STATE_SHIFT
}
#[inline]
pub(crate) const fn is_member(c: u64) -> bool {
    matches!(state(c), ACTIVE | LAME_DUCK)
}
#[inline]
pub(crate) const fn pack(state: u64, generation: u64, limit: u64, inflight: u64) -> u64 {
    (state << STATE_SHIFT)
        | ((generation & GEN_MASK) << GEN_SHIFT)
        | ((limit & FIELD_MASK) << LIMIT_SHIFT)
        | (inflight & FIELD_MASK)
}
#[inline]
pub(crate) const fn with_state(c: u64, s: u64) -> u64 {
    (c & !(0b111 << STATE_SHIFT)) | (s << STATE_SHIFT)
}
#[inline]
pub(crate) const fn with_limit(c: u64, l: u64) -> u64 {
    (c & !(FIELD_MASK << LIMIT_SHIFT)) | ((l & FIELD_MASK) << LIMIT_SHIFT)
}

cache_padded! {
    /// Storage for one node of a [`Balancer`](crate::balance::Balancer). Build an array or boxed slice of these and
    /// hand it to the balancer; its contents are private.
    ///
    /// A slot is padded to the target's cache line so that nodes never share one (see the README for the
    /// size per target: 384 bytes on x86_64 and aarch64, 320 on riscv64 and 32-bit ARM).
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
        /// Leases released with each [`Outcome`](crate::balance::Outcome), by its code.
        pub(crate) released: [AtomicU64; 6],
        /// Leases released after their node was removed.
        pub(crate) stale: AtomicU64,
        /// The limit algorithm's state, reset on add and updated by `Success`/`Dropped` releases.
        pub(crate) limit: LimitState,
        /// The tag of the balancer that holds this slot, 0 when none does (see `Balancer::new`).
        pub(crate) owner: AtomicU64,
    }
}

/// The bytes a slot holds before padding: the sizes the README states per target follow from it
/// (384 with 128-byte lines, 320 with 64 and with 32), and every target the build runs for checks them.
#[cfg(not(loom))]
const SLOT_CONTENT: usize = 296;
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
    fn control_word_round_trips() {
        let c = pack(ACTIVE, 0x1ABC, 200, 17);
        assert_eq!(
            (state(c), generation(c), limit(c), inflight(c)),
            (ACTIVE, 0x1ABC, 200, 17)
        );
        let c = with_limit(with_state(c, LAME_DUCK), FIELD_MASK);
        assert_eq!(
            (state(c), generation(c), limit(c), inflight(c)),
            (LAME_DUCK, 0x1ABC, FIELD_MASK, 17)
        );
        assert!(is_member(c) && !is_member(with_state(c, VACANT)));
    }

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
