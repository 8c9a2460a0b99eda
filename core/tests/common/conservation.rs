//! The conservation checks of the stress and property tests: a tally of what callers observed
//! ([`Tally`]), the exact comparison of that tally with the balancer's own counters ([`assert_conserved`]),
//! and the range checks every snapshot must pass ([`check_snapshot`]).

use weir::{
    balance::NodeSnapshot, balance::Rejected, balance::ReleaseError, balance::Waiting, Balancer,
    Lease, NodeSlot, Outcome,
};

/// What the callers of one balancer saw, counted on their side; compared exactly with [`Balancer::stats`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// Leases granted.
    pub acquired: u64,
    /// `Err(Rejected::AllBusy)` answers.
    pub rejected_all_busy: u64,
    /// `Err(Rejected::NoActiveNodes)` answers.
    pub rejected_no_active: u64,
    /// `Ok(())` releases, by outcome code.
    pub released: [u64; 6],
    /// `Err(ReleaseError::NodeRemoved)` releases.
    pub stale: u64,
    /// `Err(ReleaseError::InvalidLease)` releases: never expected from a Rust `Lease`.
    pub invalid: u64,
}

impl Tally {
    /// Counts the answer of one `acquire` and hands it back.
    pub fn acquired(&mut self, r: Result<Lease, Rejected>) -> Result<Lease, Rejected> {
        match &r {
            Ok(_) => self.acquired += 1,
            Err(Rejected::AllBusy) => self.rejected_all_busy += 1,
            Err(Rejected::NoActiveNodes) => self.rejected_no_active += 1,
            Err(other) => panic!("acquire refused for a reason this tally does not know: {other}"),
        }
        r
    }

    /// Counts the answer of one `release` of a lease on node `id` with `outcome`, and hands it back.
    /// A `NodeRemoved` error must name the lease's node.
    pub fn released(
        &mut self,
        outcome: Outcome,
        id: u64,
        r: Result<(), ReleaseError>,
    ) -> Result<(), ReleaseError> {
        match r {
            Ok(()) => self.released[outcome as usize] += 1,
            Err(ReleaseError::NodeRemoved { id: got }) => {
                assert_eq!(got, id, "NodeRemoved names another node than the lease's");
                self.stale += 1;
            }
            Err(ReleaseError::InvalidLease) => self.invalid += 1,
            Err(other) => panic!("release refused for a reason this tally does not know: {other}"),
        }
        r
    }

    /// Releases (all outcomes) that returned, successfully or as stale.
    pub fn releases(&self) -> u64 {
        self.released.iter().sum::<u64>() + self.stale + self.invalid
    }

    /// Adds another tally into this one.
    pub fn merge(&mut self, other: &Tally) {
        self.acquired += other.acquired;
        self.rejected_all_busy += other.rejected_all_busy;
        self.rejected_no_active += other.rejected_no_active;
        for (a, b) in self.released.iter_mut().zip(other.released) {
            *a += b;
        }
        self.stale += other.stale;
        self.invalid += other.invalid;
    }
}

/// Asserts that the balancer's counters equal `tally` exactly, and that nothing is in flight: in the
/// balancer-wide stats and in every member's snapshot at `now`. Call it once every lease is released.
pub fn assert_conserved<S: AsRef<[NodeSlot]>, W: Waiting>(
    b: &Balancer<S, W>,
    tally: &Tally,
    now: u64,
) {
    let st = b.stats();
    assert_eq!(tally.invalid, 0, "a Rust Lease was refused as invalid");
    assert_eq!(st.acquired, tally.acquired, "acquired: {st:?} vs {tally:?}");
    assert_eq!(
        Outcome::ALL.map(|o| st.released(o)),
        tally.released,
        "released: {st:?} vs {tally:?}"
    );
    assert_eq!(st.released_stale, tally.stale, "stale: {st:?} vs {tally:?}");
    assert_eq!(
        st.rejected_all_busy, tally.rejected_all_busy,
        "all busy: {st:?} vs {tally:?}"
    );
    assert_eq!(
        st.rejected_no_active, tally.rejected_no_active,
        "no active: {st:?} vs {tally:?}"
    );
    assert_eq!(
        st.in_flight, 0,
        "in flight after releasing everything: {st:?}"
    );
    assert_eq!(
        st.acquired,
        st.released_total() + st.released_stale,
        "acquired == Σ released + stale: {st:?}"
    );
    let mut members = 0;
    for n in b.nodes(now) {
        members += 1;
        assert_eq!(
            n.in_flight, 0,
            "node in flight after releasing everything: {n:?}"
        );
        check_snapshot(&n);
    }
    assert_eq!(
        members,
        st.active_nodes + st.lame_duck_nodes,
        "nodes() and stats() disagree on membership: {st:?}"
    );
}

/// Asserts the ranges every snapshot keeps whatever happened: success rate and weight in [0, 1] and not
/// NaN, succeeded <= finished, and no window and sticky data at once.
pub fn check_snapshot(n: &NodeSnapshot) {
    assert!(
        (0.0..=1.0).contains(&n.success_rate),
        "success rate out of [0, 1]: {n:?}"
    );
    assert!(
        (0.0..=1.0).contains(&n.weight),
        "weight out of [0, 1]: {n:?}"
    );
    assert!(
        n.window_succeeded <= n.window_finished,
        "more successes than outcomes in the window: {n:?}"
    );
    assert!(
        n.sticky_succeeded <= n.sticky_finished,
        "more successes than outcomes in the sticky bucket: {n:?}"
    );
    assert!(
        n.window_finished == 0 || n.sticky_finished == 0,
        "window and sticky data at once: {n:?}"
    );
    if n.window_finished > 0 || n.sticky_finished > 0 {
        assert!(n.has_data, "data in the buckets but has_data false: {n:?}");
    }
}
