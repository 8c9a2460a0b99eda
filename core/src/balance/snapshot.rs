//! What a balancer reports about itself: per-node snapshots and balancer-wide counters.

use crate::balance::outcome::Outcome;

/// Whether a member node takes new leases.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeState {
    /// In rotation.
    Active,
    /// No new leases; leases in flight finish normally.
    LameDuck,
}

/// A point-in-time view of one member node.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NodeSnapshot {
    /// The caller's id of the node.
    pub id: u64,
    /// Active or lame duck.
    pub state: NodeState,
    /// Success rate: in the weighted family the rate its draws use, with the recovery floor applied where
    /// it applies; in the lowest-score family `S / (S + F)` of the decayed counters (1.0 with neither).
    pub success_rate: f64,
    /// `success_rate ^ weight_exponent`, what the weighted family draws by; in the lowest-score family,
    /// which draws by no weight, `success_rate³` (the cascade's weight of the same rate).
    pub weight: f64,
    /// The lowest-score family's success counter at the snapshot's time (0 in the weighted family).
    pub successes: f64,
    /// The lowest-score family's failure counter at the snapshot's time (0 in the weighted family).
    pub failures: f64,
    /// The lowest-score family's penalty from those counters, in in-flight requests: the node's score is
    /// `in_flight + penalty` (0 in the weighted family).
    pub penalty: f64,
    /// Current concurrency limit.
    pub limit: u32,
    /// Leases in flight.
    pub in_flight: u32,
    /// Finished outcomes in the window (unweighted; 0 for the average model).
    pub window_finished: u64,
    /// Succeeded outcomes in the window.
    pub window_succeeded: u64,
    /// Finished outcomes in the sticky bucket, when the window is empty.
    pub sticky_finished: u64,
    /// Succeeded outcomes in the sticky bucket.
    pub sticky_succeeded: u64,
    /// Whether the node has any recorded outcome (a node without is fully trusted).
    pub has_data: bool,
    /// Leases released to this node while it was a member, by [`Outcome`] code, counted from its add (a
    /// node added into a slot that served another starts at 0): read with [`NodeSnapshot::released`].
    /// Releases after its removal count in [`Stats::released_stale`] instead.
    pub by_outcome: [u64; 6],
}

impl NodeSnapshot {
    /// Leases released with `outcome` to this node while it was a member, since its add.
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
    /// b.release(lease, Outcome::Failure, 10).unwrap();
    /// assert_eq!(b.node(1, 10).unwrap().released(Outcome::Failure), 1);
    ///
    /// // Node 2 takes node 1's slot and counts from its own add.
    /// b.remove(1).unwrap();
    /// b.add(2).unwrap();
    /// assert_eq!(b.node(2, 10).unwrap().released(Outcome::Failure), 0);
    /// assert_eq!(b.stats().released(Outcome::Failure), 1);
    /// ```
    pub fn released(&self, outcome: Outcome) -> u64 {
        self.by_outcome[outcome as usize]
    }
}

/// Balancer-wide counters since construction. Two conservation laws hold:
///
/// - leases: `acquired == released_total() + released_stale + in_flight`;
/// - waits (`std`'s waiting acquires, see [`rt`](crate::rt)): `waits == waits_granted + waits_timed_out +
///   waits_cancelled + waiting`.
///
/// `acquired` is that sum: every lease granted is either still in flight (counted in the nodes' control
/// words) or was released (counted by outcome), so the acquire path needs no counter write of its own.
/// Each term is counted exactly; the multi-thread stress tests check all of them against the callers' own
/// counts. The wait counters change together under the queue's lock, so their law is exact whenever no
/// waiting acquire is joining or leaving the queue at the moment of the reading.
///
/// Refusals and waits are counted apart. A refusal is an acquire that answered its caller with no lease;
/// a wait is a waiting acquire that found no room and queued. A waiting acquire that queues and then gets
/// a lease is a wait (granted), never a refusal; one that gives up is both a wait (timed out) and a
/// refusal. The attempts a waiting acquire makes on its callers' behalf (at once, and each time the queue
/// is drained) are counted as neither.
///
/// ```
/// use std::time::{Duration, Instant};
/// use weir::limit::{FixedLimit, LimitAlgorithm};
/// use weir::{Config, HeapBalancer};
///
/// let config = Config { limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }), ..Config::default() };
/// let b = HeapBalancer::with_capacity(1, config).unwrap();
/// b.add(1).unwrap();
/// let held = b.acquire_guard().unwrap();
/// assert!(b.acquire_guard().is_err()); // fail fast: a refusal
/// let soon = Instant::now() + Duration::from_millis(5);
/// assert!(b.acquire_wait(soon).is_err()); // queued, then timed out: a wait and a refusal
/// let st = b.stats();
/// assert_eq!((st.rejected_all_busy, st.waits, st.waits_timed_out, st.waiting), (2, 1, 1, 0));
/// drop(held);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Leases granted (`released_total() + released_stale + in_flight`).
    pub acquired: u64,
    /// Acquires that answered their caller with no lease because every active node was at its limit: a
    /// fail-fast acquire refused with [`Rejected::AllBusy`](crate::balance::Rejected::AllBusy), and a
    /// waiting acquire that gave up for want of room (`WaitError::QueueFull` or `WaitError::Timeout`,
    /// see [`rt`](crate::rt)). A waiting acquire that got a lease in the end is not counted here.
    pub rejected_all_busy: u64,
    /// Acquires that answered their caller with no lease because no node was in rotation: a fail-fast
    /// acquire refused with [`Rejected::NoActiveNodes`](crate::balance::Rejected::NoActiveNodes), and a
    /// waiting acquire that answered `WaitError::NoActiveNodes`.
    pub rejected_no_active: u64,
    /// Leases released, by [`Outcome`] code: read with [`Stats::released`].
    pub(crate) by_outcome: [u64; 6],
    /// Leases released after their node was removed.
    pub released_stale: u64,
    /// Leases in flight now.
    pub in_flight: u64,
    /// Members in rotation.
    pub active_nodes: u32,
    /// Members in lame duck.
    pub lame_duck_nodes: u32,
    /// Waiting acquires that found no room and took a place in the queue (`std`; 0 without it). One
    /// that finds no node in rotation when it joins leaves at once (`WaitError::NoActiveNodes`) and is not
    /// counted: a waiting acquire waits for room, not for membership.
    pub waits: u64,
    /// Waits that a lease was handed to: the caller got it, or, for a future dropped before it picked
    /// it up, it went back as [`Outcome::Ignored`] (counted in `released(Ignored)`).
    pub waits_granted: u64,
    /// Waits whose deadline passed first: a blocking wait's, or the caller's timer ended an async one
    /// with `Wait::time_out` (each also counted in `rejected_all_busy`).
    pub waits_timed_out: u64,
    /// Async waits dropped while they waited (a `select!`, `tokio::time::timeout`, an aborted task): the
    /// caller stopped waiting, so this is not a refusal.
    pub waits_cancelled: u64,
    /// Callers in the queue now, waiting for room (not yet handed a lease).
    pub waiting: u64,
}

impl Stats {
    /// Leases released with `outcome` to a live node (a release to a removed node counts in
    /// [`released_stale`](Self::released_stale) instead).
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
    /// b.release(lease, Outcome::Dropped, 10).unwrap();
    /// assert_eq!(b.stats().released(Outcome::Dropped), 1);
    /// assert_eq!(b.stats().released(Outcome::Success), 0);
    /// ```
    pub fn released(&self, outcome: Outcome) -> u64 {
        self.by_outcome[outcome as usize]
    }

    /// Leases released to a live node, whatever the outcome: `Σ released(o)`.
    ///
    /// ```
    /// let stats = weir::HeapBalancer::with_capacity(1, weir::Config::default()).unwrap().stats();
    /// assert_eq!(stats.released_total(), 0);
    /// ```
    pub fn released_total(&self) -> u64 {
        self.by_outcome.iter().sum()
    }
}
