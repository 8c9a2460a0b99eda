//! Who hears that room may have come: the one thing a balancer tells the layers that wait for room.
//!
//! The core fails fast: an acquire that finds no node with room is refused. Waiting for room (a bounded
//! queue, blocking or async) is the `std` layer's (`rt::queue`), and the core knows nothing of it: a
//! [`Balancer`] is generic over a [`Waiting`], which it tells when room may have come (a release freed
//! an in-flight slot, a node entered rotation) and asks for the waiting counters of [`Stats`]. `()` hears
//! nothing and costs nothing; `rt::Waiters`, the `std` layer's queue, drains itself when told.

use crate::balance::balancer::Balancer;
use crate::balance::slot::NodeSlot;
use crate::balance::snapshot::Stats;

/// Who a [`Balancer`] tells that room may have come. `()` (the default) is nobody; with `std`,
/// `rt::Waiters` is the queue of callers waiting for room (what a [`HeapBalancer`](crate::HeapBalancer)
/// has). Another implementation can wake the tasks of an executor of one's own, in `no_std` too.
///
/// # Memory ordering
/// [`freed`](Waiting::freed) is called after the release's `SeqCst` decrement of the node's control
/// word, so an implementation that loads a waiter count with `SeqCst` there, against a joining waiter
/// that increments that count (`SeqCst`), fences (`SeqCst`) and then acquires, has one of the two see
/// the other: a slot freed is never missed by both (the store-buffering pattern; see `rt::queue`).
/// [`entered`](Waiting::entered) is called after the node's publication, which is `AcqRel`, not
/// `SeqCst`: such an implementation fences (`SeqCst`) before its load there. Neither is called with a
/// lock held or on a path the balancer's own decisions depend on.
///
/// ```
/// use weir::balance::{Stats, Waiting};
/// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// /// Counts the times room may have come.
/// #[derive(Debug, Default)]
/// struct Bell(AtomicU64);
///
/// impl Waiting for Bell {
///     fn new(_max_waiters: u32) -> Self {
///         Bell::default()
///     }
///     fn freed<S: AsRef<[NodeSlot]>>(&self, _: &Balancer<S, Self>) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
///     fn entered<S: AsRef<[NodeSlot]>>(&self, _: &Balancer<S, Self>) {
///         self.0.fetch_add(1, Ordering::Relaxed);
///     }
///     fn tally(&self, _: &mut Stats) {}
/// }
///
/// let b = Balancer::<_, Bell>::with_waiting([const { NodeSlot::new() }; 2], Config::default()).unwrap();
/// b.add(1).unwrap(); // a node entered rotation
/// let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
/// b.release(lease, Outcome::Success, 10).unwrap(); // a slot came free
/// assert_eq!(b.waiting().0.load(Ordering::Relaxed), 2);
/// ```
pub trait Waiting: Sized {
    /// Built with the balancer, with the configuration's
    /// [`max_waiters`](crate::Config::max_waiters).
    fn new(max_waiters: u32) -> Self;
    /// A release freed an in-flight slot of `balancer` (after its `SeqCst` decrement).
    fn freed<S: AsRef<[NodeSlot]>>(&self, balancer: &Balancer<S, Self>);
    /// A node of `balancer` entered rotation: added, or back from lame duck.
    fn entered<S: AsRef<[NodeSlot]>>(&self, balancer: &Balancer<S, Self>);
    /// Adds the waiting counters to `stats` (see [`Stats::waits`]).
    fn tally(&self, stats: &mut Stats);
}

/// Nobody waits: the core alone fails fast, and a release pays nothing for waiting.
impl Waiting for () {
    #[inline(always)]
    fn new(_: u32) -> Self {}
    #[inline(always)]
    fn freed<S: AsRef<[NodeSlot]>>(&self, _: &Balancer<S, Self>) {}
    #[inline(always)]
    fn entered<S: AsRef<[NodeSlot]>>(&self, _: &Balancer<S, Self>) {}
    #[inline(always)]
    fn tally(&self, _: &mut Stats) {}
}
