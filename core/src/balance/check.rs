//! Health checks: the balancer names a node it avoids as due for a check, and the application reports the
//! check's answer, so a node that recovered is called again without spending a caller's call on a node
//! that may still be broken.

use crate::balance::balancer::Balancer;
use crate::balance::error::CheckError;
use crate::balance::slot::NodeSlot;
use crate::balance::waiting::Waiting;
use crate::internal::sync::Ordering::Relaxed;

impl<S: AsRef<[NodeSlot]>, W: Waiting> Balancer<S, W> {
    /// The node to send a health check to at `now`, if one is due: a member in service that the
    /// lowest-score family avoids (it carries a penalty), with no call in flight, whose failures were
    /// last recorded `quiet_ns` or more before `now`; of several, the one quiet longest (the first in
    /// slot order on a tie). Naming it dates its failures `now` again, so no other call names it (nor
    /// takes it as a timed probe, [`LowestScore::probe_after_ns`](crate::balance::LowestScore::probe_after_ns))
    /// for `quiet_ns` more: the caller sends the check, and reports the answer with
    /// [`report_check`](Self::report_check).
    ///
    /// This is how a client brings back a node it stopped calling without sending any caller's call to
    /// it: passive health (the outcomes of real calls) takes a node out, and an active check brings it
    /// back, as HAProxy's `observe` with its checks and Envoy's outlier detection with active checks do.
    /// Where the node stays broken, the check fails and no caller's call was lost; with timed probes
    /// instead, each client spends one call per period on it. A node with a call in flight is left to
    /// that call's outcome.
    ///
    /// A node that relapses waits longer: one that fails again within the failure half-life of a
    /// healthy check's readmission needs `quiet_ns` doubled once per relapse (up to 2^6 times) before
    /// it is due again, so a node that fails a call in two, or whose checks do not represent its calls,
    /// is let back ever more rarely; a failure after that long starts the count again.
    ///
    /// `quiet_ns` is counted in the counters' ticks (2^20 ns, about 1.05 ms), rounded down; 0 makes
    /// every avoided node due at once (each call names one, the longest quiet first). Returns `None`
    /// when no node is due, when the algorithm is not the lowest-score family's, and when what was due
    /// changed while this call claimed it (a failure landed, another caller claimed it first). Calling it
    /// costs a read of every slot in use: call it on a timer (a tenth of `quiet_ns` is plenty), not per
    /// call. It keeps the balancer's clock as an acquire does (`now` moves it forward), so a checker on
    /// its own timer finds nodes due while no call is made.
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// const S: u64 = 1_000_000_000;
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// b.add(2).unwrap();
    /// let mut rng = Rng::with_seed(3);
    /// // Node 1 fails once and is avoided; no node is due for a check until it has been quiet 2 s.
    /// let lease = loop {
    ///     let l = b.acquire(S, &mut rng).unwrap();
    ///     if l.node_id() == 1 { break l; }
    ///     b.release(l, Outcome::Success, S).unwrap();
    /// };
    /// b.release(lease, Outcome::Failure, S).unwrap();
    /// assert_eq!(b.due_check(2 * S, 2 * S), None);
    /// let _ = b.acquire(3 * S + S / 2, &mut rng).map(|l| b.release(l, Outcome::Success, 3 * S + S / 2));
    /// assert_eq!(b.due_check(3 * S + S / 2, 2 * S), Some(1));
    /// // Named once per period: the check is under way.
    /// assert_eq!(b.due_check(3 * S + S / 2, 2 * S), None);
    /// // It answered well: node 1 is forgiven, and called again.
    /// b.report_check(1, true, 3 * S + S / 2).unwrap();
    /// assert_eq!(b.node(1, 3 * S + S / 2).unwrap().penalty, 0.0);
    /// ```
    pub fn due_check(&self, now: u64, quiet_ns: u64) -> Option<u64> {
        // The clock moves as an acquire moves it, so that a checker on its own timer sees time pass
        // while no call is made (a timed probe the rotation finds due is left to the acquires).
        if let Some(seen) = self.clock.due(now) {
            let _ = self.rotate(now, seen);
        }
        let now = now.min(self.clock.horizon_now());
        let used = self.used();
        let i = self.prepared.algorithm.due_check(used, now, quiet_ns)?;
        // Relaxed: `due_check` read the slot's control word with Acquire after its claim, and a slot's id
        // is written before the Release that publishes it (see `add`).
        used.get(i).map(|s| s.id.load(Relaxed))
    }

    /// Records the answer of a health check of node `id` at `now` (see [`due_check`](Self::due_check)):
    /// `healthy` forgives every failure the node has, so its penalty is 0 and the next acquires call it
    /// as any idle node (its concurrency limit grows back with its calls' successes); a failed check
    /// records one failure, as a call's [`Outcome::Failure`](crate::Outcome::Failure) does, and dates the
    /// node's failures `now`, so it is due again `quiet_ns` later. A check is not a call: it counts in
    /// no statistic and no concurrency limit, and the successes are left as they are.
    ///
    /// Any member may be reported, whether or not `due_check` named it (a checker on its own timer may
    /// report every node), and in lame duck too. An unknown id is refused
    /// ([`CheckError::UnknownId`]), as is every check under the weighted family
    /// ([`CheckError::NotLowestScore`]); either leaves the state as it was. `now` is dated as a
    /// release's is.
    pub fn report_check(&self, id: u64, healthy: bool, now: u64) -> Result<(), CheckError> {
        let (_, s) = self.find(id).ok_or(CheckError::UnknownId(id))?;
        let now = now.min(self.clock.horizon_now());
        if self
            .prepared
            .algorithm
            .report_check(&s.health, healthy, now, self.scope(s))
        {
            Ok(())
        } else {
            Err(CheckError::NotLowestScore)
        }
    }
}
