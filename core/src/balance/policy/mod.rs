//! Choosing a node: the default's lowest score (`lowest.rs`: one scan over each node's control word and
//! cached penalty, then the minimum, or above 64 nodes a sample of 16; see [`Policy::LowestScore`]), or the weighted policies' draw from the
//! nodes' weights (`weighted.rs`: one scan that reads each node's control word and cached weight, then a
//! draw).
//!
//! | policy | file | source |
//! |---|---|---|
//! | [`Policy::LowestScore`] (the default) | `lowest.rs` | dialogue's `Balanced` channel: in-flight plus a failure penalty, with its give-up rule |
//! | [`Policy::Cascade`] | `weighted.rs` | [the seeds'](crate#vocabulary) weighted random cascade |
//! | [`Policy::CascadeApprox`] | `weighted.rs` | [the gist's](crate#vocabulary) approximate shuffle |
//! | [`Policy::WeightedPick`] | `weighted.rs` | [the seeds' later variant](crate#vocabulary): one weighted pick |
//!
//! A policy reads the node slots and the caller's generator, nothing else: the balancer passes the
//! configured [`Policy`].

// Each policy is compiled with the health models it reads (see `Config::validate`): `LowestScore` with
// `decay`, the weighted ones with `buckets` or `ewma`.
#[cfg(feature = "decay")]
mod lowest;
#[cfg(feature = "decay")]
pub(crate) use lowest::SAMPLE_ABOVE;
#[cfg(any(feature = "buckets", feature = "ewma"))]
mod weighted;

use crate::balance::slot::NodeSlot;
use fastrand::Rng;

/// How a node is chosen: by lowest score (the default, over [`HealthModel::Decay`]), or from the nodes'
/// weights (`success_rate ^ weight_exponent`, over the seeds' models).
///
/// [`HealthModel::Decay`]: crate::balance::HealthModel::Decay
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Policy {
    /// The default: each node scores `in_flight + penalty` ([`HealthModel::Decay`]'s cached failure
    /// penalty, in in-flight requests), and the call goes to the node with room whose score is lowest,
    /// ties broken uniformly at random. The in-flight term moves calls off a slow or black-holed node as
    /// its calls pile up; the penalty moves them off a failing one.
    ///
    /// Give-up rule (dialogue's): if a full node with more than 5 calls in flight scores no more than the
    /// best node with room, and the best node with room scores more than twice the highest such full
    /// node, the acquire is refused ([`Rejected::AllBusy`]) rather than sent to a node that much worse:
    /// with a waiting acquire, it waits for the better node to have room.
    ///
    /// Large fleets: above 64 members, the first try of an acquire compares 16 members drawn at random
    /// (the power of d choices, as P2C is the power of two) instead of every member, and takes the best
    /// of them only if it has room and scores at most 12 (where the give-up rule never refuses); else
    /// every member is compared, as above. The clock's rotation then refreshes the cached penalties of
    /// 64 members in turn per epoch instead of every member's. So an acquire's cost stops growing with
    /// the fleet, and a node scoring above 12 (one with a recent failure) is taken only when every
    /// member is compared. At 64 members and fewer the decisions are exactly those described above.
    ///
    /// [`HealthModel::Decay`]: crate::balance::HealthModel::Decay
    /// [`Rejected::AllBusy`]: crate::balance::Rejected::AllBusy
    #[cfg(feature = "decay")]
    #[default]
    LowestScore,
    /// [The seeds'](crate#vocabulary) algorithm: a weighted random shuffle of the active nodes (iterated weighted sampling
    /// without replacement, drawn lazily), zero-weight nodes last in uniform random order; the first node
    /// whose limiter grants a lease wins; if none does, fail fast.
    #[cfg(any(feature = "buckets", feature = "ewma"))]
    #[cfg_attr(not(feature = "decay"), default)]
    Cascade,
    /// [The gist's](crate#vocabulary) approximation: uniform shuffle, stable sort by descending success rate, one weighted
    /// random pick promoted to the front, then the same walk.
    #[cfg(any(feature = "buckets", feature = "ewma"))]
    CascadeApprox,
    /// The later variant: one weighted random pick among the nodes whose limiter has room; zero-weight nodes
    /// are never picked.
    #[cfg(any(feature = "buckets", feature = "ewma"))]
    WeightedPick,
}

impl Policy {
    /// [`Policy::LowestScore`], the one policy that reads [`HealthModel::Decay`].
    // Without `buckets` and `ewma`, the pattern is the only variant.
    #[allow(irrefutable_let_patterns)]
    pub(crate) fn is_lowest_score(self) -> bool {
        #[cfg(feature = "decay")]
        if let Policy::LowestScore = self {
            return true;
        }
        false
    }
}

/// What a scan found to try next.
pub(crate) enum Choice {
    Try(usize),
    Reject(crate::balance::Rejected),
}

/// The first draw of an acquire: over the nodes' scan weights alone, one load per node (a node that is
/// not active has scan weight 0; see `health/mod.rs`). The drawn node may turn out to be full: its
/// admission then fails and the acquire goes on with [`choose`], over the nodes with room only.
///
/// This two-stage draw is exact. With `R` and `F` the total weights of the nodes with room and of the
/// full ones, a node `j` with room is taken at once with probability `w_j / (R + F)`, or after a full
/// node was drawn (probability `F / (R + F)`) with probability `w_j / R`; the sum is `w_j / R`, the
/// cascade's probability. `CascadeApprox` and the zero-weight cases take the full scan at once.
pub(crate) fn choose_fast(policy: Policy, slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    match policy {
        #[cfg(feature = "decay")]
        Policy::LowestScore => lowest::lowest_fast(slots, rng),
        #[cfg(any(feature = "buckets", feature = "ewma"))]
        Policy::Cascade | Policy::CascadeApprox | Policy::WeightedPick => {
            weighted_fast(policy, slots, rng)
                .unwrap_or_else(|| weighted::choose_full(policy, slots, rng))
        }
    }
}

/// The weighted policies' draws keep their buffers in a frame of their own, which the lowest-score
/// path (the default's) never holds, and which is off the stack before the full scan runs (`None`):
/// inlined into the acquire beside `LowestScore`'s, or holding its buffer under the full scan's, the
/// frames would add up past 1 KiB on a Cortex-M0 (see `cargo xtask embedded`). Only below 64 bits: on
/// the hosts, where stacks are large, the call would cost the seeds' pair instructions for no gain.
#[cfg(any(feature = "buckets", feature = "ewma"))]
#[cfg_attr(not(target_pointer_width = "64"), inline(never))]
fn weighted_fast(policy: Policy, slots: &[NodeSlot], rng: &mut Rng) -> Option<Choice> {
    weighted::draw_by(policy, slots, rng, |s| s.health.units())
}

/// As [`weighted_fast`], for [`choose`].
#[cfg(any(feature = "buckets", feature = "ewma"))]
#[cfg_attr(not(target_pointer_width = "64"), inline(never))]
fn weighted_room(policy: Policy, slots: &[NodeSlot], rng: &mut Rng) -> Option<Choice> {
    weighted::draw_by(policy, slots, rng, weighted::room_units)
}

/// Picks the node to try among the nodes with room, or the reason to fail fast.
///
/// `Cascade` and `WeightedPick` first scan for the weights of nodes with room only (the common case: one
/// load of the control word and one of the cached weight per node, nothing written) and draw among
/// them. Only when no node with room has a positive weight does the full scan run, which tells apart
/// zero-weight, full and absent nodes for the fallbacks and the rejection reason.
pub(crate) fn choose(policy: Policy, slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    match policy {
        #[cfg(feature = "decay")]
        Policy::LowestScore => lowest::lowest(slots, rng),
        #[cfg(any(feature = "buckets", feature = "ewma"))]
        Policy::Cascade | Policy::CascadeApprox | Policy::WeightedPick => {
            weighted_room(policy, slots, rng)
                .unwrap_or_else(|| weighted::choose_full(policy, slots, rng))
        }
    }
}

/// [`choose`] over the nodes that `skip` does not name, which count as absent: the full scan of each
/// policy (no first draw over the scan weights), for an acquire that retries elsewhere. A separate path,
/// so the plain acquire's scans read no exclusion at all.
pub(crate) fn choose_excluding(
    policy: Policy,
    slots: &[NodeSlot],
    rng: &mut Rng,
    skip: impl Fn(&NodeSlot) -> bool,
) -> Choice {
    match policy {
        #[cfg(feature = "decay")]
        Policy::LowestScore => lowest::lowest_excluding(slots, rng, skip),
        #[cfg(any(feature = "buckets", feature = "ewma"))]
        Policy::Cascade | Policy::CascadeApprox | Policy::WeightedPick => {
            weighted::choose_excluding(policy, slots, rng, skip)
        }
    }
}
