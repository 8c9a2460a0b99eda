//! The one place atomics come from.
//!
//! Every atomic in the core is imported from here so that the loom model checker can swap in its own
//! types (`RUSTFLAGS="--cfg loom"`), and so that the lock-freedom claim is made, and checked, in one place.
//!
//! # Lock-freedom
//! Without the `critical-section` feature the core uses `portable-atomic` with its default features off:
//! no lock-based fallback is compiled in, so a target without native 64-bit atomics fails to build instead
//! of silently taking a lock. The assertion below turns that into a compile-time proof. With
//! `critical-section` (32-bit microcontrollers) 64-bit atomics are emulated by masking interrupts: correct
//! and wait-free on a single core, but no longer lock-free in the strict sense.
//!
//! # Memory ordering (shared reasoning for the whole crate)
//! - A node slot's control word (`ctl`: state, limit, in-flight) is the synchronisation point of a slot.
//!   Membership changes publish a slot with `Release` writes to `ctl`; readers `Acquire` it before they
//!   read the slot's id or health. Two adders of one id find each other through a `SeqCst` fence between
//!   publishing their own slot and scanning the others (the store-buffering pattern: of two fenced
//!   threads, at least one sees the other's store). A fence, not `SeqCst` accesses, because the fence
//!   states the requirement exactly and is what the loom models check.
//! - Health words (buckets, cached weight) are independent statistics: a reader that sees a slightly older
//!   value makes the decision it would have made a moment earlier, which is indistinguishable from a
//!   scheduling delay. They use `Relaxed` except where a value read from one word must be interpreted
//!   against another (the bucket tags against the node's newest epoch), which uses `Acquire`/`Release`.
//! - A release decrements in-flight last, with `Release` semantics, so that every write it made to the
//!   node's health happens-before a membership change that observes the slot drained (`Acquire`). The
//!   decrement is in fact `SeqCst` (the same instruction on x86; on aarch64 the compare-and-swap also gains acquire semantics): with the
//!   `SeqCst` load of the waiter count that follows it, it is one side of a store-buffering pattern with
//!   the waiting acquires (`rt::wait`, `std`); see that module's "Memory ordering" section.
//! - Overload protection (`shed.rs`, `throttle.rs`, `backoff.rs`): counters, averages and the backoff's
//!   state word are standalone values (`Relaxed`). Their rolling window (`window.rs`) publishes lanes with
//!   `Release` and validates every reading against its newest epoch with `Acquire`; see its module docs.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
#[cfg(not(loom))]
pub(crate) use portable_atomic::{fence, AtomicBool, AtomicU64, Ordering};

// The waiting acquires' queue (`rt::wait`, `std` only) is the one place a lock is taken, on the waiting
// path only; it comes from here too, so that the loom models check it with the atomics it pairs with.
#[cfg(all(feature = "std", loom))]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(all(feature = "std", not(loom)))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// `true` when 64-bit atomics on this build are native instructions, with no lock and no interrupt masking.
#[cfg(not(loom))]
pub const LOCK_FREE: bool = AtomicU64::is_always_lock_free();
/// Under loom the question is moot; the models check the protocols, not the hardware.
#[cfg(loom)]
pub const LOCK_FREE: bool = true;

// The claim in the README: without `critical-section`, every atomic in the core is a native instruction.
#[cfg(all(not(loom), not(feature = "critical-section")))]
const _: () = assert!(
    LOCK_FREE,
    "weir requires native 64-bit atomics without the critical-section feature"
);

/// The next number of a process-wide counter that tags balancers (see `Balancer::new`), wrapping.
///
/// Not part of any protocol the loom models check, so it is a plain `portable-atomic` counter in every
/// build (loom's atomics cannot live in a `static`). Relaxed: the tags only need to differ.
pub(crate) fn next_tag() -> u32 {
    static NEXT: portable_atomic::AtomicU32 = portable_atomic::AtomicU32::new(1);
    NEXT.fetch_add(1, portable_atomic::Ordering::Relaxed)
}
