//! Choosing a node: the default's lowest score (one scan over each node's control word and cached
//! penalty, then the minimum; see [`Policy::LowestScore`]), or the weighted policies' draw from the nodes'
//! weights (one scan that reads each node's control word and cached weight, then a draw).
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

use crate::balance::config::Prepared;
use crate::balance::slot::{self, NodeSlot};
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
    /// [`HealthModel::Decay`]: crate::balance::HealthModel::Decay
    /// [`Rejected::AllBusy`]: crate::balance::Rejected::AllBusy
    #[default]
    LowestScore,
    /// [The seeds'](crate#vocabulary) algorithm: a weighted random shuffle of the active nodes (iterated weighted sampling
    /// without replacement, drawn lazily), zero-weight nodes last in uniform random order; the first node
    /// whose limiter grants a lease wins; if none does, fail fast.
    Cascade,
    /// [The gist's](crate#vocabulary) approximation: uniform shuffle, stable sort by descending success rate, one weighted
    /// random pick promoted to the front, then the same walk.
    CascadeApprox,
    /// The later variant: one weighted random pick among the nodes whose limiter has room; zero-weight nodes
    /// are never picked.
    WeightedPick,
}

/// Weights of the first `SCAN` nodes are kept on the stack between the scan and the draw; nodes beyond it
/// are read again (a concurrent change can then shift the draw slightly, never out of the active set).
const SCAN: usize = 64;

/// Not a candidate (vacant, lame duck, being added).
const ABSENT: f64 = f64::NEG_INFINITY;

/// What a scan found to try next.
pub(crate) enum Choice {
    Try(usize),
    Reject(crate::balance::Rejected),
}

/// A node's scan entry: its weight if it is active with room, `-weight` if it is active and full (the sign
/// bit marks a full node, so `-0.0` is a full node of zero weight and no weight is rounded away), `ABSENT`
/// otherwise.
#[inline(always)]
fn entry(s: &NodeSlot) -> f64 {
    // Relaxed: the scan is a snapshot for choosing; admission re-checks with a compare-and-swap.
    let c = s.ctl.load(crate::internal::sync::Ordering::Relaxed);
    if slot::state(c) != slot::ACTIVE {
        return ABSENT;
    }
    let w = s.health.weight();
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
fn room_units(s: &NodeSlot) -> u64 {
    // Relaxed: as in `entry`.
    let c = s.ctl.load(crate::internal::sync::Ordering::Relaxed);
    if slot::state(c) == slot::ACTIVE && slot::inflight(c) < slot::limit(c) {
        s.health.units()
    } else {
        0
    }
}

/// The least total, in units, that the integer draw takes: `2^-16` of weight. Below it (every node
/// nearly dead, or only floored ones) the draw runs over the exact `f32` weights instead.
const UNITS_MIN: u64 = 1 << (crate::balance::health::UNIT_SHIFT - 16);

/// The first draw of an acquire: over the nodes' scan weights alone, one load per node (a node that is
/// not active has scan weight 0; see `health.rs`). The drawn node may turn out to be full: its
/// admission then fails and the acquire goes on with [`choose`], over the nodes with room only.
///
/// This two-stage draw is exact. With `R` and `F` the total weights of the nodes with room and of the
/// full ones, a node `j` with room is taken at once with probability `w_j / (R + F)`, or after a full
/// node was drawn (probability `F / (R + F)`) with probability `w_j / R`; the sum is `w_j / R`, the
/// cascade's probability. `CascadeApprox` and the zero-weight cases take the full scan at once.
pub(crate) fn choose_fast(p: &Prepared, slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    if p.config.policy == Policy::LowestScore {
        return lowest_fast(slots, rng);
    }
    draw_by(p, slots, rng, |s| s.health.units())
}

/// Picks the node to try among the nodes with room, or the reason to fail fast.
///
/// `Cascade` and `WeightedPick` first scan for the weights of nodes with room only (the common case: one
/// load of the control word and one of the cached weight per node, nothing written) and draw among
/// them. Only when no node with room has a positive weight does the full scan run, which tells apart
/// zero-weight, full and absent nodes for the fallbacks and the rejection reason.
pub(crate) fn choose(p: &Prepared, slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    if p.config.policy == Policy::LowestScore {
        return lowest(slots, rng);
    }
    draw_by(p, slots, rng, room_units)
}

/// A node's key for [`Policy::LowestScore`]: its score in fixed point (`in_flight * 2^16 + penalty`,
/// below 2^49) if it is active with room; with [`FULL`] set (and [`HEAVY`] if more than
/// [`HEAVY_INFLIGHT`] are in flight) if it is active and full; [`ABSENT`] otherwise. So the least key is
/// the best node with room, and a least key at or above [`FULL`] means none has room.
#[inline(always)]
fn key(s: &NodeSlot) -> u64 {
    // Relaxed: as in `entry`; admission re-checks with a compare-and-swap.
    let c = s.ctl.load(crate::internal::sync::Ordering::Relaxed);
    if slot::state(c) != slot::ACTIVE {
        return KEY_ABSENT;
    }
    let inflight = slot::inflight(c);
    // A node made active a moment ago may still hold the absent scan word until its membership refresh
    // lands: read it as a fresh node's (no penalty), not as absent.
    let score = (inflight << P_FRACTION) + (s.health.units() & (KEY_ABSENT - 1));
    if inflight < slot::limit(c) {
        score
    } else if inflight > HEAVY_INFLIGHT {
        score | FULL | HEAVY
    } else {
        score | FULL
    }
}

use crate::balance::health::decay::P_FRACTION;
/// Key flag: the node is active and full.
const FULL: u64 = 1 << 61;
/// Key flag: a full node with more than [`HEAVY_INFLIGHT`] in flight (dialogue's
/// `INFLIGHT_COMPARISON_THRESHOLD`), which sets the give-up threshold.
const HEAVY: u64 = 1 << 60;
/// The key of a slot that is not a candidate: above every other key, and without the other flags. Also
/// the scan word of such a slot under the decay model (see `health::absent_units`).
pub(crate) const KEY_ABSENT: u64 = 1 << 62;
/// The score bits of a key.
const SCORE: u64 = HEAVY - 1;
const HEAVY_INFLIGHT: u64 = 5;
/// dialogue's `UNHEALTHY_SCORE_MULTIPLIER`.
const GIVE_UP_MULTIPLIER: u64 = 2;

/// The first try of a [`Policy::LowestScore`] acquire: the lowest `in_flight * 2^16 + scan word` over all
/// the nodes, room or not, ties uniformly at random. Two loads and an add per node: no state, limit or
/// flag (a slot without an active node has a scan word above every key, see `health::absent_units`).
///
/// Exact, as the weighted policies' two-stage draw is. If the node it picks has room, it is the lowest
/// of the nodes with room, and the give-up rule cannot apply (a full node scoring no more than it scores
/// the same, so the threshold is at least twice its score). If it is full, its admission fails and the
/// acquire goes on with [`lowest`], over the nodes with room. With `T` the nodes of least key, `R` those
/// among them with room and `F` the full ones, a node of `R` is taken at once with probability `1/|T|`,
/// or after a node of `F` was picked (probability `|F|/|T|`) with probability `1/|R|`; the sum is
/// `1/|R|`, the uniform tie-break among the nodes with room.
///
/// The pass branches only where a chunk holds a key below the least so far (a few times per scan, at the
/// first nodes): where ties are common, as among idle healthy nodes, a branch per tie mispredicts at
/// random, which cost more than the rest of the pass. So ties are counted with a compare and a carry, and
/// their places are kept only as the count at the end of each chunk of [`CHUNK`] nodes; the tie drawn is
/// found again from those marks.
fn lowest_fast(slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    // `marks[c]`: the ties counted up to the end of chunk `c` (slots `c * CHUNK..`), since the last new
    // least key; the marks before the chunk of `first` are stale.
    let mut marks = [0u16; MARKS];
    let mut least = Least {
        best: u64::MAX,
        first: 0,
        ties: 0,
    };
    let mut chunks = slots.chunks_exact(CHUNK);
    for (c, nodes) in chunks.by_ref().enumerate() {
        // Always a whole chunk (`chunks_exact`), as an array so that its nodes are read unrolled.
        if let Some(nodes) = nodes.first_chunk() {
            least.add_chunk(nodes, c * CHUNK);
        }
        if let Some(mark) = marks.get_mut(c) {
            // Exact: a mark counts at most the `MARKS * CHUNK` nodes of the marked chunks.
            *mark = least.ties as u16;
        }
    }
    let tail = slots.len() - chunks.remainder().len();
    for (j, s) in chunks.remainder().iter().enumerate() {
        least.add(fast_key(s), tail + j);
    }
    let Least { best, first, ties } = least;
    if best >= KEY_ABSENT {
        // No active node (or only slots being added): the full rules give the reason.
        return lowest(slots, rng);
    }
    let nth = if ties > 1 { rng.usize(..ties) } else { 0 };
    if nth == 0 {
        return Choice::Try(first);
    }
    match nth_tie(slots, best, first, nth, &marks) {
        Some(i) => Choice::Try(i),
        // The keys changed meanwhile: the full rules decide.
        None => lowest(slots, rng),
    }
}

/// The least key of [`lowest_fast`]'s pass so far, the place of its first node, and how many have it.
struct Least {
    best: u64,
    first: usize,
    ties: usize,
}

impl Least {
    /// One node's key, at slot `at`.
    #[inline(always)]
    fn add(&mut self, k: u64, at: usize) {
        if k < self.best {
            (self.best, self.first, self.ties) = (k, at, 0);
        }
        self.ties += usize::from(k == self.best);
    }

    /// A chunk's keys, its first at slot `at`.
    #[inline(always)]
    fn add_chunk(&mut self, nodes: &[NodeSlot; CHUNK], at: usize) {
        let keys = nodes.each_ref().map(fast_key);
        if keys.iter().any(|&k| k < self.best) {
            // A new least key: node by node.
            for (j, &k) in keys.iter().enumerate() {
                self.add(k, at + j);
            }
        } else {
            // Every key is at or above `best`, so `k <= best` is `k == best`: one compare, whose carry
            // the count adds.
            let mut ties = 0;
            for &k in &keys {
                ties += usize::from(k <= self.best);
            }
            self.ties += ties;
        }
    }
}

/// Nodes per chunk of [`lowest_fast`]'s pass.
const CHUNK: usize = 4;
/// Chunks marked (the first `MARKS * CHUNK` slots, so that a mark fits a `u16`); a tie beyond them is
/// found by reading on.
const MARKS: usize = 64;

/// The place of the `nth` node (from 0, in slot order) whose key is `best`, `first` being the 0th, from
/// the marks of [`lowest_fast`]'s pass: the chunk that holds it is the first whose mark passes `nth`,
/// and in it, its keys are read again. `None` if the keys changed meanwhile.
fn nth_tie(
    slots: &[NodeSlot],
    best: u64,
    first: usize,
    nth: usize,
    marks: &[u16; MARKS],
) -> Option<usize> {
    // The marks from the chunk of `first` on, of whole chunks only.
    let from = first / CHUNK;
    let marks = marks
        .get(from..(slots.len() / CHUNK).min(MARKS))
        .unwrap_or_default();
    // The marks never decrease, so those at or below `nth` come first: a binary search (branch-free in
    // the standard library, so no misprediction however the ties fall).
    let passed = marks.partition_point(|&m| usize::from(m) <= nth);
    let before = passed
        .checked_sub(1)
        .and_then(|c| marks.get(c))
        .map_or(0, |&m| usize::from(m));
    // Ties to pass over from the start of the chunk (`first` is the 0th tie, and every key before it is
    // above `best`).
    let mut skip = nth.checked_sub(before)?;
    let start = (from + passed) * CHUNK;
    if passed < marks.len() {
        // In a marked chunk: the `skip`th of its nodes whose key is `best`, with no branch per node.
        let (mut seen, mut at) = (0, None);
        for (i, s) in slots.iter().enumerate().skip(start).take(CHUNK) {
            let hit = fast_key(s) == best;
            at = if hit && seen == skip { Some(i) } else { at };
            seen += usize::from(hit);
        }
        return at;
    }
    // Past the marked chunks: read on.
    for (i, s) in slots.iter().enumerate().skip(start) {
        if fast_key(s) == best {
            if skip == 0 {
                return Some(i);
            }
            skip -= 1;
        }
    }
    None
}

/// A node's key for the fast scan (see [`lowest_fast`]).
#[inline(always)]
fn fast_key(s: &NodeSlot) -> u64 {
    // Relaxed: as in `key`.
    let c = s.ctl.load(crate::internal::sync::Ordering::Relaxed);
    (slot::inflight(c) << P_FRACTION) + s.health.units()
}

/// [`Policy::LowestScore`] over the nodes' keys, with a stack buffer sized to the balancer.
fn lowest(slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    match slots.len() {
        0..=8 => lowest_in::<8>(slots, rng),
        9..=16 => lowest_in::<16>(slots, rng),
        _ => lowest_in::<SCAN>(slots, rng),
    }
}

/// The lowest key among `K` buffered keys and the slots beyond them (read again where needed: a
/// concurrent change can shift the choice slightly, never out of the active set).
#[inline(always)]
fn lowest_in<const K: usize>(slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    let mut keys = [KEY_ABSENT; K];
    let (mut best, mut best_at) = (KEY_ABSENT, 0);
    let mut heavy = 0;
    for (i, (k, s)) in keys.iter_mut().zip(slots).enumerate() {
        *k = key(s);
        if *k < best {
            (best, best_at) = (*k, i);
        }
        heavy |= *k;
    }
    for (i, s) in slots.iter().enumerate().skip(K) {
        let k = key(s);
        if k < best {
            (best, best_at) = (k, i);
        }
        heavy |= k;
    }
    let keys = &keys[..slots.len().min(K)];
    let key_at = |i: usize| keys.get(i).copied().unwrap_or_else(|| key(&slots[i]));
    if best >= FULL {
        return Choice::Reject(if best == KEY_ABSENT {
            crate::balance::Rejected::NoActiveNodes
        } else {
            crate::balance::Rejected::AllBusy
        });
    }
    // The give-up rule needs a heavy full node: rare, so its pass runs only then.
    if heavy & HEAVY != 0 {
        // The give-up threshold: twice the highest score of a heavy full node that scores no more than the
        // best node with room (dialogue walks the nodes by score and the last such node before the best
        // one sets it).
        let threshold = (0..slots.len())
            .map(key_at)
            .filter(|&k| k & (FULL | HEAVY) == FULL | HEAVY)
            .map(|k| k & SCORE)
            .filter(|&score| score <= best)
            .max();
        if let Some(t) = threshold {
            if best > t * GIVE_UP_MULTIPLIER {
                return Choice::Reject(crate::balance::Rejected::AllBusy);
            }
        }
    }
    // Ties: the `nth` of the nodes with the best key, `nth` uniform (the first is `best_at`).
    let ties = keys.iter().filter(|&&k| k == best).count()
        + slots.iter().skip(K).filter(|s| key(s) == best).count();
    if ties <= 1 {
        return Choice::Try(best_at);
    }
    let mut nth = rng.usize(..ties);
    for i in best_at..slots.len() {
        if key_at(i) == best {
            if nth == 0 {
                return Choice::Try(i);
            }
            nth -= 1;
        }
    }
    // A node beyond the buffer changed meanwhile: the first best found.
    Choice::Try(best_at)
}

/// A weighted draw over `weight(slot)` for `Cascade` and `WeightedPick`; the full scan for
/// `CascadeApprox`.
#[inline(always)]
fn draw_by(
    p: &Prepared,
    slots: &[NodeSlot],
    rng: &mut Rng,
    units: impl Fn(&NodeSlot) -> u64,
) -> Choice {
    if p.config.policy == Policy::CascadeApprox {
        return choose_full(p, slots, rng);
    }
    // The stack buffer fits the balancer, so that small balancers do not clear a large one.
    match slots.len() {
        0..=8 => choose_room::<8>(p, slots, rng, units),
        9..=16 => choose_room::<16>(p, slots, rng, units),
        _ => choose_room::<SCAN>(p, slots, rng, units),
    }
}

/// A weighted draw over `units(slot)`, with a buffer of `K` running totals; the full scan when the
/// total is below [`UNITS_MIN`].
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
    p: &Prepared,
    slots: &[NodeSlot],
    rng: &mut Rng,
    units: impl Fn(&NodeSlot) -> u64,
) -> Choice {
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
            return Choice::Try(prefix[..buffered].partition_point(|&t| t <= target));
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
                    return Choice::Try(i);
                }
            }
        }
        // A node beyond the buffer that changed meanwhile left the target unreached: the last positive
        // weight takes it.
        if let Some(i) = last {
            return Choice::Try(i);
        }
        if head_total > 0 {
            // The first running total that reaches the buffer's total is the last positive weight.
            return Choice::Try(prefix[..buffered].partition_point(|&t| t < head_total));
        }
    }
    choose_full(p, slots, rng)
}

/// The full scan: every policy's complete rules, including the fallbacks and the rejection reasons.
#[inline(never)]
fn choose_full(p: &Prepared, slots: &[NodeSlot], rng: &mut Rng) -> Choice {
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
        return Choice::Reject(crate::balance::Rejected::NoActiveNodes);
    }
    let entries = Entries {
        head: &head[..slots.len().min(SCAN)],
        rest: slots.get(SCAN..).unwrap_or(&[]),
        entry: &entry,
    };
    let picked = match p.config.policy {
        Policy::LowestScore => return lowest(slots, rng),
        Policy::Cascade => {
            if t.room > 0.0 {
                weighted_room(&entries, t.room, rng)
            } else {
                nth_zero(&entries, t.zero_room, rng)
            }
        }
        Policy::WeightedPick => {
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
        Policy::CascadeApprox => {
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
        None => Choice::Reject(crate::balance::Rejected::AllBusy),
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::internal::sync::Ordering::Relaxed;
    extern crate std;
    use std::vec::Vec;

    /// `lowest_fast` against its definition: the node of least key, the `nth` of the ties in slot order
    /// with `nth` drawn as `rng.usize(..ties)` when there are several, over balancer sizes around the
    /// chunks and the marked range, and keys from a few values so that ties are many.
    #[test]
    fn fast_scan_picks_the_drawn_tie_in_slot_order() {
        let mut gen = Rng::with_seed(7);
        for &n in &[
            1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 63, 64, 65, 255, 256, 257, 259, 300, 700,
        ] {
            let slots: Vec<NodeSlot> = (0..n).map(|_| NodeSlot::new()).collect();
            for round in 0..200 {
                // Few distinct keys, a key absent now and then, and rounds where most nodes tie.
                let spread = 1 + round % 4;
                for s in &slots {
                    let inflight = gen.u64(..spread);
                    let units = match gen.u8(..8) {
                        0 => KEY_ABSENT,
                        1 => 21_600,
                        2 => 1 << P_FRACTION,
                        _ => 0,
                    };
                    s.ctl
                        .store(slot::pack(slot::ACTIVE, 0, 100, inflight), Relaxed);
                    s.health.set_units(units);
                }
                let keys: Vec<u64> = slots.iter().map(fast_key).collect();
                let best = keys.iter().copied().min().unwrap_or(u64::MAX);
                if best >= KEY_ABSENT {
                    continue;
                }
                let ties: Vec<usize> = (0..n).filter(|&i| keys[i] == best).collect();
                let mut expected_rng = gen.clone();
                let nth = if ties.len() > 1 {
                    expected_rng.usize(..ties.len())
                } else {
                    0
                };
                let mut rng = gen.clone();
                match lowest_fast(&slots, &mut rng) {
                    Choice::Try(i) => assert_eq!(i, ties[nth], "n {n}, round {round}"),
                    Choice::Reject(r) => panic!("n {n}, round {round}: rejected {r:?}"),
                }
                assert_eq!(rng.u64(..), expected_rng.u64(..), "n {n}: the same draws");
                gen = rng;
            }
        }
    }
}
