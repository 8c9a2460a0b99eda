//! Choosing a node from the nodes' weights: one scan that reads each node's control word and cached weight,
//! then a draw.
//!
//! # Why one draw is the exact cascade
//! The seeds' cascade draws a weighted random shuffle of the active nodes lazily (draw a node with
//! probability proportional to its weight among the nodes not yet tried, try its limiter, draw again on a
//! refusal) and takes the first node whose limiter grants a lease. A limiter refuses exactly when the node is
//! at its limit, so the walk ends at the first node *with room* in the shuffle order, and in a weighted
//! shuffle the first member of any subset appears with probability `w_i / Σ_subset w`. Drawing that node
//! directly from the nodes with room is therefore the same distribution as the walk, without the wasted
//! draws on full nodes; zero-weight nodes come after every positive-weight node, in uniform random order,
//! exactly as in the shuffle. If the drawn node fills up before its compare-and-swap lands (another thread
//! took the last slot), the scan runs again: that is the walk continuing past a refusal.

use crate::config::{Policy, Prepared};
use crate::slot::{self, NodeSlot};
use fastrand::Rng;

/// Weights of the first `SCAN` nodes are kept on the stack between the scan and the draw; nodes beyond it
/// are read again (a concurrent change can then shift the draw slightly, never out of the active set).
const SCAN: usize = 64;

/// Not a candidate (vacant, lame duck, being added).
const ABSENT: f64 = f64::NEG_INFINITY;

/// The result of the scan: each active node's weight, with nodes at their limit encoded as `-w` (the sign
/// bit marks a full node, so `-0.0` is a full node of zero weight and no weight is rounded away).
struct Scan {
    head: [f64; SCAN],
    /// Σ weight over nodes with room.
    total_room: f64,
    /// Nodes with room and zero weight.
    zero_room: u32,
    /// Σ weight over all active nodes.
    total_all: f64,
    any_active: bool,
}

/// What a scan found to try next.
pub(crate) enum Choice {
    Try(usize),
    Reject(crate::Rejected),
}

#[inline]
fn entry(p: &Prepared, s: &NodeSlot, now: u64, floor_weight: f64) -> f64 {
    // Relaxed: the scan is a snapshot for choosing; admission re-checks with a compare-and-swap.
    let c = s.ctl.load(crate::sync::Ordering::Relaxed);
    if slot::state(c) != slot::ACTIVE {
        return ABSENT;
    }
    let w = s.health.weight(p, now, floor_weight);
    if slot::inflight(c) < slot::limit(c) {
        w
    } else {
        -w
    }
}

#[inline]
fn has_room(e: f64) -> bool {
    e.is_sign_positive()
}

#[inline]
fn weight(e: f64) -> f64 {
    e.abs()
}

/// Picks the node to try, or the reason to fail fast.
pub(crate) fn choose(
    p: &Prepared,
    slots: &[NodeSlot],
    now: u64,
    floor_weight: f64,
    rng: &mut Rng,
) -> Choice {
    let mut scan = Scan {
        head: [ABSENT; SCAN],
        total_room: 0.0,
        zero_room: 0,
        total_all: 0.0,
        any_active: false,
    };
    for (i, s) in slots.iter().enumerate() {
        let e = entry(p, s, now, floor_weight);
        if let Some(h) = scan.head.get_mut(i) {
            *h = e;
        }
        if e == ABSENT {
            continue;
        }
        scan.any_active = true;
        let w = weight(e);
        scan.total_all += w;
        if has_room(e) {
            scan.total_room += w;
            if w == 0.0 {
                scan.zero_room += 1;
            }
        }
    }
    if !scan.any_active {
        return Choice::Reject(crate::Rejected::NoActiveNodes);
    }
    let at = |i: usize| -> f64 {
        match scan.head.get(i) {
            Some(e) => *e,
            None => slots
                .get(i)
                .map_or(ABSENT, |s| entry(p, s, now, floor_weight)),
        }
    };
    let picked = match p.config.policy {
        Policy::Cascade => {
            if scan.total_room > 0.0 {
                weighted(slots.len(), &at, scan.total_room, true, rng)
            } else {
                nth_zero(slots.len(), &at, scan.zero_room, rng)
            }
        }
        Policy::WeightedPick => {
            if scan.total_room > 0.0 {
                weighted(slots.len(), &at, scan.total_room, true, rng)
            } else if scan.total_all == 0.0 {
                // Every active node is at zero weight: all equally bad, spread evenly.
                nth_zero(slots.len(), &at, scan.zero_room, rng)
            } else {
                // The only nodes with room have zero weight while better ones are full: no fallback.
                None
            }
        }
        Policy::CascadeApprox => {
            let promoted = if scan.total_all > 0.0 {
                weighted(slots.len(), &at, scan.total_all, false, rng).filter(|&i| has_room(at(i)))
            } else {
                None
            };
            promoted.or_else(|| best_with_room(slots.len(), &at, rng))
        }
    };
    match picked {
        Some(i) => Choice::Try(i),
        None => Choice::Reject(crate::Rejected::AllBusy),
    }
}

/// Draws index `i` with probability `w_i / total` among candidates (nodes with room when `room_only`,
/// every active node otherwise).
fn weighted(
    n: usize,
    at: &impl Fn(usize) -> f64,
    total: f64,
    room_only: bool,
    rng: &mut Rng,
) -> Option<usize> {
    let target = rng.f64() * total;
    let mut acc = 0.0;
    let mut last = None;
    for i in 0..n {
        let e = at(i);
        if e == ABSENT || (room_only && !has_room(e)) {
            continue;
        }
        let w = weight(e);
        if w <= 0.0 {
            continue;
        }
        acc += w;
        last = Some(i);
        if acc > target {
            return last;
        }
    }
    // Rounding (or a node beyond the stack buffer that changed meanwhile) left the target unreached.
    last
}

/// The `k`-th (uniformly drawn) node with room and zero weight.
fn nth_zero(n: usize, at: &impl Fn(usize) -> f64, zero_room: u32, rng: &mut Rng) -> Option<usize> {
    if zero_room == 0 {
        return None;
    }
    let mut k = rng.u32(..zero_room);
    let mut last = None;
    for i in 0..n {
        let e = at(i);
        if has_room(e) && e == 0.0 {
            last = Some(i);
            if k == 0 {
                return last;
            }
            k -= 1;
        }
    }
    last
}

/// The node with room and the highest weight, ties broken uniformly at random: the first node with room
/// after a uniform shuffle and a stable sort by descending success rate.
fn best_with_room(n: usize, at: &impl Fn(usize) -> f64, rng: &mut Rng) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    let mut ties = 0u32;
    for i in 0..n {
        let e = at(i);
        if !has_room(e) {
            continue;
        }
        match best {
            Some((_, b)) if e < b => {}
            Some((_, b)) if e == b => {
                ties += 1;
                if rng.u32(..ties) == 0 {
                    best = Some((i, e));
                }
            }
            _ => {
                best = Some((i, e));
                ties = 1;
            }
        }
    }
    best.map(|(i, _)| i)
}
