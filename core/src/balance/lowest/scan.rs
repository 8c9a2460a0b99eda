//! The lowest-score scans: the node with room whose `in_flight + penalty` is lowest, ties uniformly at
//! random, with dialogue's give-up rule (every full node counting, scored at least 6: see
//! [`GIVE_UP_FLOOR`]). Above [`SAMPLE_ABOVE`] slots, the first try compares a random sample (see
//! [`sampled`]).

use crate::balance::algorithm::Choice;
use crate::balance::error::Rejected;
use crate::balance::slot::NodeSlot;
use crate::balance::word::{self, P_FRACTION, SCAN_ABSENT as KEY_ABSENT};
use fastrand::Rng;

/// Stack buffer of keys: 64 on 64-bit targets. On 32-bit
/// ones (microcontrollers, whose balancers are small) 16, the small balancers' size: one copy of the scan
/// instead of two, and 128 bytes of stack instead of 512; keys beyond the buffer are read again, as
/// they are beyond 64 on the others.
const SCAN: usize = if usize::BITS >= 64 { 64 } else { SMALL };
/// The buffer of balancers of at most this many nodes.
const SMALL: usize = 16;

/// A node's key for the scans: its score in fixed point (`in_flight * 2^16 + penalty`,
/// below 2^49) if it is active with room; with [`FULL`] set if it is active and full; [`ABSENT`]
/// otherwise. So the least key is the best node with room, and a least key at or above [`FULL`] means
/// none has room.
#[inline(always)]
fn key(s: &NodeSlot) -> u64 {
    // Relaxed: the scan is a snapshot for choosing; admission re-checks with a compare-and-swap.
    let c = s.ctl.load(crate::internal::sync::Ordering::Relaxed);
    if word::state(c) != word::ACTIVE {
        return KEY_ABSENT;
    }
    let inflight = word::inflight(c);
    // A node made active a moment ago may still hold the absent scan word until its membership refresh
    // lands: read it as a fresh node's (no penalty), not as absent.
    let score = word::score(inflight, penalty_units(s));
    if inflight < word::limit(c) {
        score
    } else {
        score | FULL
    }
}

/// The penalty part of a slot's scan word (its penalty and slowness code): 0 for a node that carries
/// neither, and for a node made active a moment ago whose scan word still reads absent.
#[inline(always)]
pub(super) fn penalty_units(s: &NodeSlot) -> u64 {
    s.health.units() & (KEY_ABSENT - 1)
}

/// Key flag: the node is active and full.
const FULL: u64 = 1 << 61;
// The key of a slot that is not a candidate is the scan word of such a slot in this family,
// `KEY_ABSENT`: above every other key, and without the flag.
const _: () = assert!(KEY_ABSENT > FULL | SCORE && KEY_ABSENT & FULL == 0);
/// The score bits of a key.
const SCORE: u64 = FULL - 1;
/// dialogue's `UNHEALTHY_SCORE_MULTIPLIER`.
const GIVE_UP_MULTIPLIER: u64 = 2;
/// The least score a full node counts with in the give-up rule: 6 calls in flight. dialogue lets only a
/// node with more than 5 in flight (its `INFLIGHT_COMPARISON_THRESHOLD`) set the threshold, so that a
/// few calls in flight never refuse a node for one old failure; weir counts every full node, scored at
/// least this, so that the rule also holds at a limit of 5 or less, where no node can have more than 5 in
/// flight. Without it, waiters at a low limit were all served by the one node that frees its slots
/// fastest: the node that fails every call at once (`core/tests/sinkhole.rs`).
const GIVE_UP_FLOOR: u64 = 6 << P_FRACTION;

/// The first try of an acquire: the lowest `in_flight * 2^16 + scan word` over all
/// the nodes, room or not, ties uniformly at random. Two loads and an add per node: no state, limit or
/// flag (a slot without an active node has a scan word above every key, see `word.rs`).
///
/// Exact. If the node it picks has room, it is the lowest of the nodes with room, and the give-up rule cannot apply (a full node scoring no more than it scores
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
#[inline]
pub(crate) fn lowest_fast<const SLOW: bool>(slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    if slots.len() > SAMPLE_ABOVE {
        return sampled(slots, rng);
    }
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
            least.add_chunk::<SLOW>(nodes, c * CHUNK);
        }
        if let Some(mark) = marks.get_mut(c) {
            // Exact: a mark counts at most the `MARKS * CHUNK` nodes of the marked chunks.
            *mark = least.ties as u16;
        }
    }
    let tail = slots.len() - chunks.remainder().len();
    for (j, s) in chunks.remainder().iter().enumerate() {
        least.add(fast_key::<SLOW>(s), tail + j);
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
    match nth_tie::<SLOW>(slots, best, first, nth, &marks) {
        Some(i) => Choice::Try(i),
        // The keys changed meanwhile: the full rules decide.
        None => lowest(slots, rng),
    }
}

/// How many slots a probe draws before it gives up (see [`probe`]).
#[cfg(feature = "probation")]
const PROBE_DRAWS: usize = 8;

/// Probation ([`LowestScore::probe_fraction`](super::LowestScore::probe_fraction), `threshold` in units
/// of 2^-32, above 0): with that chance, the first try of an acquire is a probe, a member drawn
/// uniformly at random instead of the lowest score, if it has room. Slots are drawn until one holds an
/// active node, at most [`PROBE_DRAWS`] of them, so every member is equally likely however sparse the
/// slots (a balancer with spare capacity); a full member is not drawn again, so each member gets
/// `threshold / n` of the acquires whatever the others hold (drawing again until one had room sent
/// every probe to the one node with room while its peers were full: a broken one). `None` (no probe, a
/// full member, or no member in the draws) leaves the acquire to decide as usual. Out of line: only
/// probes pay for it.
#[cfg(feature = "probation")]
#[inline(never)]
pub(crate) fn probe(slots: &[NodeSlot], rng: &mut Rng, threshold: u64) -> Option<usize> {
    if u64::from(rng.u32(..)) >= threshold || slots.is_empty() {
        return None;
    }
    let (i, k) = (0..PROBE_DRAWS)
        .map(|_| rng.usize(..slots.len()))
        .map(|i| (i, slots.get(i).map_or(KEY_ABSENT, key)))
        .find(|&(_, k)| k < KEY_ABSENT)?;
    (k < FULL).then_some(i)
}

/// Above this many slots, the first try of an acquire compares [`SAMPLES`] members drawn at random
/// instead of scanning every one (see [`sampled`]); at or below it, every member, exactly. The
/// balancer's rotation refreshes at most this many slots' penalties at a time (`Balancer::rotate`), so
/// that a balancer this small decides and works exactly as it did before either bound existed.
pub(crate) const SAMPLE_ABOVE: usize = 64;
/// Members drawn by [`sampled`].
const SAMPLES: usize = 16;
/// The highest score that [`sampled`] takes from its sample: the give-up rule's least threshold
/// ([`GIVE_UP_FLOOR`] times [`GIVE_UP_MULTIPLIER`], 12 calls in flight). A node with room scoring no
/// more than this is never refused by the rule, whatever the other nodes score.
const SAMPLE_TRUSTED: u64 = GIVE_UP_FLOOR * GIVE_UP_MULTIPLIER;

/// The first try of a large balancer's acquire (more than [`SAMPLE_ABOVE`] slots): the best of
/// [`SAMPLES`] slots drawn uniformly at random, with replacement (the power of d choices, as P2C is the
/// power of two), the first drawn winning a tie. Two slots per draw of the generator, so the cost does not
/// grow with the balancer.
///
/// The sample decides only where it is sure to be right by the full rules: when its best node has room
/// and scores at most [`SAMPLE_TRUSTED`] (12 calls in flight), which no give-up threshold refuses.
/// Otherwise (every sampled node full, absent, penalised or busy) every member is scanned, exactly, by
/// [`lowest`]. So a node that fails every call is taken only when 16 random members all score above 12
/// or have no room, and a fleet whose healthy nodes carry few calls never waits on the rule.
#[inline]
fn sampled(slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    // At most `MAX_NODES` (2^16) slots, so `half * n` fits 48 bits.
    let n = slots.len() as u64;
    let (mut best, mut at) = (u64::MAX, 0);
    for _ in 0..SAMPLES / 2 {
        let r = rng.u64(..);
        // Two indices from the two halves of one draw: `half * n / 2^32`, below `n`.
        for half in [r & 0xFFFF_FFFF, r >> 32] {
            let i = ((half * n) >> 32) as usize;
            let k = slots.get(i).map_or(KEY_ABSENT, key);
            if k < best {
                (best, at) = (k, i);
            }
        }
    }
    // `key` sets `FULL` (or is `KEY_ABSENT`) for a node without room, so a best below `FULL` has room.
    if best <= SAMPLE_TRUSTED {
        Choice::Try(at)
    } else {
        lowest(slots, rng)
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
    fn add_chunk<const SLOW: bool>(&mut self, nodes: &[NodeSlot; CHUNK], at: usize) {
        let keys = nodes.each_ref().map(fast_key::<SLOW>);
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
/// Chunks marked: every chunk of a balancer the pass scans (at most [`SAMPLE_ABOVE`] slots; a larger one
/// is sampled), each mark within a `u16`; a tie beyond them would be found by reading on. Each acquire
/// zeroes the marks: 32 bytes, where marks for 256 slots took some 10 instructions of a 3-node pass.
const MARKS: usize = SAMPLE_ABOVE / CHUNK;
const _: () = assert!(MARKS * CHUNK >= SAMPLE_ABOVE && MARKS * CHUNK <= u16::MAX as usize);

/// The place of the `nth` node (from 0, in slot order) whose key is `best`, `first` being the 0th, from
/// the marks of [`lowest_fast`]'s pass: the chunk that holds it is the first whose mark passes `nth`,
/// and in it, its keys are read again. `None` if the keys changed meanwhile.
#[inline]
fn nth_tie<const SLOW: bool>(
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
            let hit = fast_key::<SLOW>(s) == best;
            at = if hit && seen == skip { Some(i) } else { at };
            seen += usize::from(hit);
        }
        return at;
    }
    // Past the marked chunks: read on.
    for (i, s) in slots.iter().enumerate().skip(start) {
        if fast_key::<SLOW>(s) == best {
            if skip == 0 {
                return Some(i);
            }
            skip -= 1;
        }
    }
    None
}

/// A node's key for the fast scan (see [`lowest_fast`]). `SLOW`: whether the slowness term is on (see
/// `pace.rs`). Without it no scan word holds a slowness code, and the key is `in_flight * 2^16 + scan
/// word`, two instructions, which is what most balancers run: the code's decoding and multiply cost a
/// 16-node scan about a tenth of its acquire and release, so only a balancer that reads slowness pays.
#[inline(always)]
fn fast_key<const SLOW: bool>(s: &NodeSlot) -> u64 {
    // Relaxed: as in `key`.
    let c = s.ctl.load(crate::internal::sync::Ordering::Relaxed);
    if SLOW {
        word::score(word::inflight(c), s.health.units())
    } else {
        (word::inflight(c) << P_FRACTION) + s.health.units()
    }
}

/// The lowest score over the nodes' keys, with a stack buffer sized to the balancer.
pub(crate) fn lowest(slots: &[NodeSlot], rng: &mut Rng) -> Choice {
    lowest_by(slots, rng, key)
}

/// [`lowest`] over the nodes that `skip` does not name, which it treats as absent: an acquire that
/// retries elsewhere (see `Balancer::acquire_excluding`). The full rules over the other nodes, give-up
/// rule included; one call of `skip` per node and key read.
pub(crate) fn lowest_excluding(
    slots: &[NodeSlot],
    rng: &mut Rng,
    skip: impl Fn(&NodeSlot) -> bool,
) -> Choice {
    lowest_by(slots, rng, |s| if skip(s) { KEY_ABSENT } else { key(s) })
}

/// [`lowest`] over the keys `key` gives.
#[inline(always)]
fn lowest_by(slots: &[NodeSlot], rng: &mut Rng, key: impl Fn(&NodeSlot) -> u64 + Copy) -> Choice {
    // Below 64 bits, two buffer sizes, not three: each is a copy of the scan (about 1.4 KB of code on a
    // Cortex-M0), and clearing 16 keys instead of 8 costs a small balancer little on this path (the fast
    // scan takes most acquires). On the hosts, three: a balancer of 3 clears 8 keys, not 16.
    match slots.len() {
        #[cfg(target_pointer_width = "64")]
        0..=8 => lowest_in::<8>(slots, rng, key),
        #[cfg(target_pointer_width = "64")]
        9..=SMALL => lowest_in::<SMALL>(slots, rng, key),
        #[cfg(not(target_pointer_width = "64"))]
        0..=SMALL => lowest_in::<SMALL>(slots, rng, key),
        _ => lowest_in::<SCAN>(slots, rng, key),
    }
}

/// The lowest key among `K` buffered keys and the slots beyond them (read again where needed: a
/// concurrent change can shift the choice slightly, never out of the active set).
// Below 64 bits never inlined: each buffer size takes a frame of its own, not one frame of both. On the
// hosts inlined, as the call would cost every small balancer's acquire.
#[cfg_attr(target_pointer_width = "64", inline(always))]
#[cfg_attr(not(target_pointer_width = "64"), inline(never))]
fn lowest_in<const K: usize>(
    slots: &[NodeSlot],
    rng: &mut Rng,
    key: impl Fn(&NodeSlot) -> u64 + Copy,
) -> Choice {
    let mut keys = [KEY_ABSENT; K];
    let (mut best, mut best_at) = (KEY_ABSENT, 0);
    let mut full = 0;
    for (i, (k, s)) in keys.iter_mut().zip(slots).enumerate() {
        *k = key(s);
        if *k < best {
            (best, best_at) = (*k, i);
        }
        full |= *k;
    }
    for (i, s) in slots.iter().enumerate().skip(K) {
        let k = key(s);
        if k < best {
            (best, best_at) = (k, i);
        }
        full |= k;
    }
    let keys = &keys[..slots.len().min(K)];
    // Callers pass `i < slots.len()`; a checked read all the same, so that no panic path is linked.
    let key_at = |i: usize| {
        keys.get(i)
            .copied()
            .unwrap_or_else(|| slots.get(i).map_or(KEY_ABSENT, &key))
    };
    if best >= FULL {
        return Choice::Reject(if best == KEY_ABSENT {
            Rejected::NoActiveNodes
        } else {
            Rejected::AllBusy
        });
    }
    // The give-up rule needs a full node (`KEY_ABSENT` has no `FULL` bit): its pass runs only then.
    if full & FULL != 0 {
        // The give-up threshold: twice the highest score of a full node that scores no more than the
        // best node with room (dialogue walks the nodes by score and the last such node before the best
        // one sets it), each counted at least `GIVE_UP_FLOOR`.
        let threshold = (0..slots.len())
            .map(key_at)
            .filter(|&k| k & FULL != 0)
            .map(|k| k & SCORE)
            .filter(|&score| score <= best)
            .map(|score| score.max(GIVE_UP_FLOOR))
            .max();
        // Only a node with a penalty (or a slowness code) is refused: one that scores more than the
        // threshold by its calls in flight alone is busier than the full node, not worse, and has room
        // under its own limit. A full node's score can be low only because its limit is (a node whose
        // limit grows back after an outage), and refusing every busier healthy node then would hold the
        // calls in the client.
        if let Some(t) = threshold {
            if best > t * GIVE_UP_MULTIPLIER
                && slots.get(best_at).is_some_and(|s| penalty_units(s) != 0)
            {
                return Choice::Reject(Rejected::AllBusy);
            }
        }
    }
    // Ties: the `nth` of the nodes with the best key, `nth` uniform (the first is `best_at`).
    let ties = keys.iter().filter(|&&k| k == best).count()
        + slots.iter().skip(K).filter(|&s| key(s) == best).count();
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::internal::sync::Ordering::Relaxed;
    extern crate std;
    use std::vec::Vec;

    /// `lowest_fast` against its definition: the node of least key, the `nth` of the ties in slot order
    /// with `nth` drawn as `rng.usize(..ties)` when there are several, over balancer sizes around the
    /// chunks and the marked range, and keys from a few values so that ties are many; with the slowness
    /// term, over scan words with slowness codes too, keyed by `word::score`.
    #[test]
    fn fast_scan_picks_the_drawn_tie_in_slot_order() {
        fast_scan_picks_the_drawn_tie::<false>();
        #[cfg(feature = "slow")]
        fast_scan_picks_the_drawn_tie::<true>();
    }

    fn fast_scan_picks_the_drawn_tie<const SLOW: bool>() {
        let mut gen = Rng::with_seed(7);
        for &n in &[1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33, 48, 63, 64] {
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
                        // Calls counting twice (code 4), so with one in flight it ties a node with
                        // penalty 1 or with three in flight and none.
                        #[cfg(feature = "slow")]
                        3 if SLOW => word::lowest_units(0, 4),
                        _ => 0,
                    };
                    s.ctl
                        .store(word::pack(word::ACTIVE, 0, 100, inflight), Relaxed);
                    s.health.set_units(units);
                }
                let keys: Vec<u64> = slots
                    .iter()
                    .map(|s| {
                        let c = s.ctl.load(Relaxed);
                        word::score(word::inflight(c), s.health.units())
                    })
                    .collect();
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
                match lowest_fast::<SLOW>(&slots, &mut rng) {
                    Choice::Try(i) => assert_eq!(i, ties[nth], "n {n}, round {round}"),
                    Choice::Reject(r) => panic!("n {n}, round {round}: rejected {r:?}"),
                }
                assert_eq!(rng.u64(..), expected_rng.u64(..), "n {n}: the same draws");
                gen = rng;
            }
        }
    }

    /// Slots whose keys are `keys` (`None`: absent; `Some((inflight, units, room))`).
    fn slots_with(keys: &[Option<(u64, u64, bool)>]) -> Vec<NodeSlot> {
        keys.iter()
            .map(|k| {
                let s = NodeSlot::new();
                match *k {
                    Some((inflight, units, room)) => {
                        let limit = if room { inflight + 1 } else { inflight.max(1) };
                        s.ctl
                            .store(word::pack(word::ACTIVE, 0, limit, inflight), Relaxed);
                        s.health.set_units(units);
                    }
                    None => s.health.set_units(KEY_ABSENT),
                }
                s
            })
            .collect()
    }

    fn pick(slots: &[NodeSlot], rng: &mut Rng) -> usize {
        match lowest_fast::<false>(slots, rng) {
            Choice::Try(i) => i,
            Choice::Reject(r) => panic!("rejected {r:?}"),
        }
    }

    /// The give-up rule refuses only a penalised node: a healthy node that is busier than a full one
    /// (a node whose limit is growing back, full at 2 calls) takes the call.
    #[test]
    fn the_give_up_rule_refuses_only_a_penalised_node() {
        let mut rng = Rng::with_seed(5);
        // Slot 0 full at 2 calls; slot 1 with room at 20, past twice the floor of 6.
        let healthy = slots_with(&[Some((2, 0, false)), Some((20, 0, true))]);
        assert!(matches!(lowest(&healthy, &mut rng), Choice::Try(1)));
        // With a penalty of one call, slot 1 is refused: the acquire waits for slot 0.
        let penalised = slots_with(&[Some((2, 0, false)), Some((20, 1 << P_FRACTION, true))]);
        assert!(matches!(
            lowest(&penalised, &mut rng),
            Choice::Reject(Rejected::AllBusy)
        ));
        // At 12 calls or fewer no node is refused, penalised or not.
        let near = slots_with(&[Some((2, 0, false)), Some((11, 1 << P_FRACTION, true))]);
        assert!(matches!(lowest(&near, &mut rng), Choice::Try(1)));
    }

    /// Probes: a penalised node gets about `probe / n` of the picks, `n` the members (one drawn
    /// uniformly, absent slots drawn again, a full one no probe), never with probes off; every probe of
    /// a fraction of 1 is a uniform draw among the members, however sparse the slots, and a full
    /// member's share goes to the lowest score, not to the members with room.
    #[cfg(feature = "probation")]
    #[test]
    fn probes_reach_a_penalised_node_in_proportion() {
        use crate::balance::lowest::PROBE_ONE;
        // Slots 0 and 4 absent, 3 full, 5 penalised (a score of 50): four members, 1, 2, 3 and 5.
        let keys = [
            None,
            Some((0, 0, true)),
            Some((0, 0, true)),
            Some((3, 0, false)),
            None,
            Some((0, 50 << P_FRACTION, true)),
        ];
        let slots = slots_with(&keys);
        let mut rng = Rng::with_seed(3);
        // As `Prepared::choose_fast` does: a probe, else the lowest score.
        let count = |rng: &mut Rng, threshold: u64| {
            let mut c = [0u32; 6];
            for _ in 0..30_000 {
                let i = match super::probe(&slots, rng, threshold) {
                    Some(i) => i,
                    None => pick(&slots, rng),
                };
                c[i] += 1;
            }
            c
        };
        assert_eq!(count(&mut rng, 0)[5], 0);
        // A tenth of the picks probe; a quarter of the probes land on slot 5 (8 draws find a member
        // but for (1/3)^8 of them): about 750 of 30,000. Drawing again past the full slot 3 would make
        // it a third, about 1,000.
        let tenth = count(&mut rng, PROBE_ONE / 10);
        assert!((620..880).contains(&tenth[5]), "{tenth:?}");
        // Every pick a probe: slot 5 a quarter; slot 3's quarter, full, goes to the lowest score (1 or
        // 2); absent and full slots never.
        let all = count(&mut rng, PROBE_ONE);
        assert_eq!((all[0], all[3], all[4]), (0, 0, 0), "{all:?}");
        assert!((7_100..7_900).contains(&all[5]), "{all:?}");
        assert!((22_100..22_900).contains(&(all[1] + all[2])), "{all:?}");
    }

    /// Above `SAMPLE_ABOVE` slots the first try takes the best of its sample only when that node has
    /// room and scores at most 12 in flight; every other pick is the full rules' (`lowest`), drawn from
    /// the generator where the sample left it. So a node scoring above 12 (a penalised one) is taken
    /// only when the full rules take it, however the sample falls.
    #[test]
    fn sampled_picks_are_trusted_or_the_full_rules() {
        let mut gen = Rng::with_seed(11);
        for &n in &[65, 100, 256, 1_000, 1_024] {
            for round in 0..100 {
                let keys: Vec<_> = (0..n)
                    .map(|_| match gen.u8(..10) {
                        0 => None,
                        1 => Some((gen.u64(..20), 30 << P_FRACTION, true)),
                        2 => Some((gen.u64(..20), 0, false)),
                        _ => Some((gen.u64(..15), gen.u64(..3) << P_FRACTION, true)),
                    })
                    .collect();
                let slots = slots_with(&keys);
                let mut rng = gen.clone();
                let i = pick(&slots, &mut rng);
                let k = key(&slots[i]);
                if k > SAMPLE_TRUSTED {
                    // Not the sample's: the full rules over every member, after the sample's draws.
                    let mut full = gen.clone();
                    for _ in 0..SAMPLES / 2 {
                        full.u64(..);
                    }
                    match lowest(&slots, &mut full) {
                        Choice::Try(j) => assert_eq!(i, j, "n {n}, round {round}"),
                        Choice::Reject(r) => panic!("n {n}, round {round}: {r:?}"),
                    }
                }
                assert!(k < FULL, "n {n}, round {round}: a node without room");
                gen = rng;
            }
        }
    }

    /// Half of a large fleet failing (a penalty of 30 each), in one contiguous range as a zone outage
    /// takes nodes added in order: no call goes to it, wherever the samples fall.
    #[test]
    fn sampled_never_picks_a_penalised_half() {
        let keys: Vec<_> = (0..1_024)
            .map(|i| Some((0, if i < 512 { 30 << P_FRACTION } else { 0 }, true)))
            .collect();
        let slots = slots_with(&keys);
        let mut rng = Rng::with_seed(5);
        for _ in 0..20_000 {
            assert!(pick(&slots, &mut rng) >= 512);
        }
    }

    /// Idle equal nodes share the calls evenly: every one of 256 idle nodes is picked within 25 % of its
    /// fair share over 256,000 picks (a binomial's standard deviation there is about 3 %).
    #[test]
    fn sampled_spreads_ties_evenly() {
        let slots = slots_with(&[Some((0, 0, true)); 256]);
        let mut rng = Rng::with_seed(9);
        let mut count = [0u32; 256];
        for _ in 0..256_000 {
            count[pick(&slots, &mut rng)] += 1;
        }
        for (i, &c) in count.iter().enumerate() {
            assert!((750..=1_250).contains(&c), "node {i}: {c} of 256,000");
        }
    }

    /// Loaded nodes lose to idle ones in the sample: with a quarter of 1,024 nodes idle and the rest at
    /// 10 in flight, a pick is an idle node unless all 16 draws missed them (0.75^16, 1 %).
    #[test]
    fn sampled_prefers_the_least_loaded() {
        let keys: Vec<_> = (0..1_024)
            .map(|i| Some((if i % 4 == 0 { 0 } else { 10 }, 0, true)))
            .collect();
        let slots = slots_with(&keys);
        let mut rng = Rng::with_seed(2);
        let idle = (0..10_000)
            .filter(|_| pick(&slots, &mut rng) % 4 == 0)
            .count();
        assert!(idle > 9_800, "{idle} of 10,000 to idle nodes");
    }
}
