//! The weighted family's draws ([`Draw::Cascade`], [`Draw::CascadeApprox`], [`Draw::WeightedPick`]): a
//! draw from the nodes' weights (`success_rate ^ weight_exponent`, cached in their health words).
//!
//! # Why one draw is the exact cascade
//! The cascade draws a weighted random shuffle of the active nodes lazily (draw a node with
//! probability proportional to its weight among the nodes not yet tried, try its limiter, draw again on a
//! refusal) and takes the first node whose limiter grants a lease. A limiter refuses exactly when the node is
//! at its limit, so the walk ends at the first node *with room* in the shuffle order, and in a weighted
//! shuffle the first member of any subset appears with probability `w_i / Σ_subset w`. Drawing that node
//! directly from the nodes with room is therefore the same distribution as the walk, without the wasted
//! draws on full nodes; zero-weight nodes come after every positive-weight node, in uniform random order,
//! exactly as in the shuffle. If the drawn node fills up before its compare-and-swap lands (another thread
//! took the last slot), the scan runs again: that is the walk continuing past a refusal.

use super::Draw;
use crate::balance::algorithm::Choice;
use crate::balance::error::Rejected;
use crate::balance::slot::NodeSlot;
use crate::balance::word::{self, UNIT_SHIFT};
use fastrand::Rng;

/// Weights of the first `SCAN` nodes are kept on the stack between the scan and the draw; nodes beyond it
/// are read again (a concurrent change can then shift the draw slightly, never out of the active set).
/// 64 on 64-bit targets; 16 on 32-bit ones (microcontrollers, whose balancers are small): a quarter of
/// the stack, and one copy of each scan instead of three.
const SCAN: usize = if usize::BITS >= 64 { 64 } else { 16 };
/// The smallest buffer of the draw: 8 where the others are 16 and 64, `SCAN` where there is one size.
const SMALLEST: usize = if SCAN > 16 { 8 } else { SCAN };

/// Not a candidate (vacant, lame duck, being added).
const ABSENT: f64 = f64::NEG_INFINITY;

/// A node's scan entry: its weight if it is active with room, `-weight` if it is active and full (the sign
/// bit marks a full node, so `-0.0` is a full node of zero weight and no weight is rounded away), `ABSENT`
/// otherwise.
#[inline(always)]
fn entry(s: &NodeSlot) -> f64 {
    // Relaxed: the scan is a snapshot for choosing; admission re-checks with a compare-and-swap.
    let c = s.ctl.load(crate::internal::sync::Ordering::Relaxed);
    if word::state(c) != word::ACTIVE {
        return ABSENT;
    }
    let w = s.health.cached();
    if word::inflight(c) < word::limit(c) {
        w
    } else {
        -w
    }
}

#[inline]
fn has_room(e: f64) -> bool {
    e.is_sign_positive()
}

/// The scan's totals, kept in registers.
#[derive(Clone, Copy)]
struct Totals {
    /// Σ weight over nodes with room.
    room: f64,
    /// Σ weight over all active nodes.
    all: f64,
    /// Nodes with room and zero weight.
    zero_room: u32,
    any_active: bool,
}

impl Totals {
    #[inline(always)]
    fn add(&mut self, e: f64) {
        if e == ABSENT {
            return;
        }
        self.any_active = true;
        self.all += e.abs();
        if has_room(e) {
            self.room += e;
            self.zero_room += u32::from(e == 0.0);
        }
    }
}

/// A node's scan weight in units if it is active with room, else 0: all the cascade's common case needs.
/// The same test as `entry`.
#[inline(always)]
pub(super) fn room_units(s: &NodeSlot) -> u64 {
    // Relaxed: as in `entry`.
    let c = s.ctl.load(crate::internal::sync::Ordering::Relaxed);
    if word::state(c) == word::ACTIVE && word::inflight(c) < word::limit(c) {
        s.health.units()
    } else {
        0
    }
}

/// The least total, in units, that the integer draw takes: `2^-16` of weight. Below it (every node
/// nearly dead, or only floored ones) the draw runs over the exact `f32` weights instead.
const UNITS_MIN: u64 = 1 << (UNIT_SHIFT - 16);

/// A weighted draw over `weight(slot)` for `Cascade` and `WeightedPick`; `None` when the full scan
/// ([`choose_full`]) decides instead, always for `CascadeApprox`. The caller runs that scan, once this
/// draw's buffer is off the stack.
#[inline(always)]
pub(super) fn draw_by(
    draw: Draw,
    slots: &[NodeSlot],
    rng: &mut Rng,
    units: impl Fn(&NodeSlot) -> u64,
) -> Option<Choice> {
    if draw == Draw::CascadeApprox {
        return None;
    }
    // The stack buffer fits the balancer, so that small balancers do not clear a large one.
    match slots.len() {
        0..=8 => choose_room::<SMALLEST>(slots, rng, units),
        9..=16 => choose_room::<16>(slots, rng, units),
        _ => choose_room::<SCAN>(slots, rng, units),
    }
}

/// A weighted draw over `units(slot)`, with a buffer of `K` running totals; `None` (the full scan) when
/// the total is below [`UNITS_MIN`].
///
/// The scan stores the running total of the units after each buffered node; the draw then finds the
/// first total above a uniform integer below the total, by binary search. That node has positive units
/// (the total rises only there), and it is the node a walk over the weights in slot order would stop at,
/// so the distribution is that of the cascade (see the module docs), with weights rounded down to whole
/// units (`2^-46`): with a total of at least `2^-16`, that moves no node's probability by more than
/// `2^-30`, the rounding of summing the weights in `f64` at the same scale. Integers add exactly and in
/// one instruction, and a draw below the total is exactly uniform.
#[inline(always)]
fn choose_room<const K: usize>(
    slots: &[NodeSlot],
    rng: &mut Rng,
    units: impl Fn(&NodeSlot) -> u64,
) -> Option<Choice> {
    let mut prefix = [0u64; K];
    let mut total = 0u64;
    let buffered = slots.len().min(K);
    for (h, s) in prefix.iter_mut().zip(slots) {
        total += units(s);
        *h = total;
    }
    let head_total = total;
    for s in slots.iter().skip(K) {
        total += units(s);
    }
    if total >= UNITS_MIN {
        let target = rng.u64(..total);
        if target < head_total {
            // `partition_point` is a binary search: the first index whose total exceeds the target.
            return Some(Choice::Try(
                prefix[..buffered].partition_point(|&t| t <= target),
            ));
        }
        // Beyond the buffer the nodes are read again: a concurrent change can shift the draw slightly,
        // never out of the active set.
        let mut acc = head_total;
        let mut last = None;
        for (i, s) in slots.iter().enumerate().skip(K) {
            let w = units(s);
            if w > 0 {
                acc += w;
                last = Some(i);
                if acc > target {
                    return Some(Choice::Try(i));
                }
            }
        }
        // A node beyond the buffer that changed meanwhile left the target unreached: the last positive
        // weight takes it.
        if let Some(i) = last {
            return Some(Choice::Try(i));
        }
        if head_total > 0 {
            // The first running total that reaches the buffer's total is the last positive weight.
            return Some(Choice::Try(
                prefix[..buffered].partition_point(|&t| t < head_total),
            ));
        }
    }
    None
}

/// The full scan: every draw's complete rules, including the fallbacks and the rejection reasons.
#[inline(never)]
pub(super) fn choose_full(draw: Draw, slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    choose_full_by(draw, slots, rng, entry)
}

/// [`choose_full`] over the nodes that `skip` does not name, which it treats as absent: an acquire that
/// retries elsewhere (see `Balancer::acquire_excluding`). The full rules over the other nodes; one call
/// of `skip` per entry read.
pub(super) fn choose_excluding(
    draw: Draw,
    slots: &[NodeSlot],
    rng: &mut Rng,
    skip: impl Fn(&NodeSlot) -> bool,
) -> Choice {
    choose_full_by(
        draw,
        slots,
        rng,
        |s| if skip(s) { ABSENT } else { entry(s) },
    )
}

/// [`choose_full`] over the entries `entry` gives.
#[inline(always)]
fn choose_full_by(
    draw: Draw,
    slots: &[NodeSlot],
    rng: &mut Rng,
    entry: impl Fn(&NodeSlot) -> f64,
) -> Choice {
    let mut head = [ABSENT; SCAN];
    let mut t = Totals {
        room: 0.0,
        all: 0.0,
        zero_room: 0,
        any_active: false,
    };
    for (h, s) in head.iter_mut().zip(slots) {
        let e = entry(s);
        *h = e;
        t.add(e);
    }
    for s in slots.iter().skip(SCAN) {
        t.add(entry(s));
    }
    if !t.any_active {
        return Choice::Reject(Rejected::NoActiveNodes);
    }
    let entries = Entries {
        head: &head[..slots.len().min(SCAN)],
        rest: slots.get(SCAN..).unwrap_or(&[]),
        entry: &entry,
    };
    let picked = match draw {
        Draw::Cascade => {
            if t.room > 0.0 {
                weighted_room(&entries, t.room, rng)
            } else {
                nth_zero(&entries, t.zero_room, rng)
            }
        }
        Draw::WeightedPick => {
            if t.room > 0.0 {
                weighted_room(&entries, t.room, rng)
            } else if t.all == 0.0 {
                // Every active node is at zero weight: all equally bad, spread evenly.
                nth_zero(&entries, t.zero_room, rng)
            } else {
                // The only nodes with room have zero weight while better ones are full: no fallback.
                None
            }
        }
        Draw::CascadeApprox => {
            let promoted = if t.all > 0.0 {
                weighted_all(&entries, t.all, rng).filter(|&(_, e)| has_room(e))
            } else {
                None
            };
            promoted
                .map(|(i, _)| i)
                .or_else(|| best_with_room(&entries, rng))
        }
    };
    match picked {
        Some(i) => Choice::Try(i),
        None => Choice::Reject(Rejected::AllBusy),
    }
}

/// The scan's entries: the first `SCAN` from the stack, the others read again (a concurrent change can
/// then shift the draw slightly, never out of the active set).
struct Entries<'a, F> {
    head: &'a [f64],
    rest: &'a [NodeSlot],
    entry: &'a F,
}

impl<F: Fn(&NodeSlot) -> f64> Entries<'_, F> {
    /// Visits `(index, entry)` in slot order until `f` returns `true`; returns that index.
    #[inline(always)]
    fn find(&self, mut f: impl FnMut(f64) -> bool) -> Option<usize> {
        for (i, &e) in self.head.iter().enumerate() {
            if f(e) {
                return Some(i);
            }
        }
        for (i, s) in self.rest.iter().enumerate() {
            if f((self.entry)(s)) {
                return Some(SCAN + i);
            }
        }
        None
    }
}

/// Draws a node with room with probability `w_i / total` (`total` = Σ weight over nodes with room).
#[inline(always)]
fn weighted_room<F: Fn(&NodeSlot) -> f64>(
    es: &Entries<'_, F>,
    total: f64,
    rng: &mut Rng,
) -> Option<usize> {
    let target = rng.f64() * total;
    let mut acc = 0.0;
    let mut last = None;
    let mut i = 0;
    // `e > 0.0` holds exactly for nodes with room and a positive weight (full nodes are negative, absent
    // ones negative infinity).
    es.find(|e| {
        let hit = e > 0.0 && {
            acc += e;
            last = Some(i);
            acc > target
        };
        i += 1;
        hit
    })
    // Rounding (or a node beyond the stack buffer that changed meanwhile) left the target unreached.
    .or(last)
}

/// Draws an active node (full or not) with probability `w_i / total`; returns it with its entry.
fn weighted_all<F: Fn(&NodeSlot) -> f64>(
    es: &Entries<'_, F>,
    total: f64,
    rng: &mut Rng,
) -> Option<(usize, f64)> {
    let target = rng.f64() * total;
    let mut acc = 0.0;
    let mut last = None;
    let mut i = 0;
    es.find(|e| {
        let w = e.abs();
        let hit = e != ABSENT && w > 0.0 && {
            acc += w;
            last = Some((i, e));
            acc > target
        };
        i += 1;
        hit
    });
    last
}

/// The `k`-th (uniformly drawn) node with room and zero weight.
fn nth_zero<F: Fn(&NodeSlot) -> f64>(
    es: &Entries<'_, F>,
    zero_room: u32,
    rng: &mut Rng,
) -> Option<usize> {
    if zero_room == 0 {
        return None;
    }
    let mut k = rng.u32(..zero_room);
    let mut last = None;
    let mut i = 0;
    es.find(|e| {
        let mut hit = false;
        if has_room(e) && e == 0.0 {
            last = Some(i);
            hit = k == 0;
            k = k.wrapping_sub(1);
        }
        i += 1;
        hit
    })
    .or(last)
}

/// The node with room and the highest weight, ties broken uniformly at random: the first node with room
/// after a uniform shuffle and a stable sort by descending success rate.
fn best_with_room<F: Fn(&NodeSlot) -> f64>(es: &Entries<'_, F>, rng: &mut Rng) -> Option<usize> {
    let mut best: Option<(usize, f64)> = None;
    let mut ties = 0u32;
    let mut i = 0;
    es.find(|e| {
        if has_room(e) {
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
        i += 1;
        false
    });
    best.map(|(i, _)| i)
}
