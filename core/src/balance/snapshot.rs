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
    /// Success rate: under the seeds' models the rate used for selection, with the recovery floor applied
    /// where it applies; under the decay model `S / (S + F)` of the decayed counters (1.0 with neither).
    pub success_rate: f64,
    /// `success_rate ^ weight_exponent` (what the weighted policies draw by).
    pub weight: f64,
    /// The decay model's success counter at the snapshot's time (0 under the other models).
    pub successes: f64,
    /// The decay model's failure counter at the snapshot's time (0 under the other models).
    pub failures: f64,
    /// The decay model's penalty from those counters, in in-flight requests: the node's score is
    /// `in_flight + penalty` (0 under the other models).
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
}

/// Balancer-wide counters since construction. Conserved: `acquired == released_total() + released_stale + in_flight`.
///
/// `acquired` is that sum: every lease granted is either still in flight (counted in the nodes' control
/// words) or was released (counted by outcome), so the acquire path needs no counter write of its own.
/// Each term is counted exactly; the multi-thread stress tests check all of them against the callers' own
/// counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Leases granted (`released_total() + released_stale + in_flight`).
    pub acquired: u64,
    /// Acquires refused because every active node was at its limit.
    pub rejected_all_busy: u64,
    /// Acquires refused because no node was active.
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
