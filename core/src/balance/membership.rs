//! Membership: nodes added, removed, and put into or out of lame duck at any time, concurrently with
//! traffic; the span of slots the scans read; a balancer's claim on its slots.

use crate::balance::algorithm;
use crate::balance::balancer::Balancer;
use crate::balance::config::MAX_NODES;
use crate::balance::error::MembershipError;
use crate::balance::slot::NodeSlot;
use crate::balance::waiting::Waiting;
use crate::balance::word::{self, ACTIVE, CLAIMED, KILLED, LAME_DUCK, REGISTERING, VACANT};
use crate::error::ConfigError;
use crate::internal::sync::{fence, Ordering::*};
use crate::limit::Limit;

/// The low 32 bits of the span word: `hi`.
pub(crate) const SPAN_HI: u64 = 0xFFFF_FFFF;

/// The span word after `w` with `hi` and the version advanced by one.
#[inline]
fn span_word(w: u64, hi: u64) -> u64 {
    (w & !SPAN_HI).wrapping_add(1 << 32) | hi
}

/// A slot that holds nothing: no member, no lease in flight, no adder.
#[inline]
pub(crate) fn is_free(c: u64) -> bool {
    word::state(c) == VACANT && word::inflight(c) == 0
}

impl<S: AsRef<[NodeSlot]>, W: Waiting> Balancer<S, W> {
    /// Adds a node. It starts fully trusted (success rate 1.0) with the limit algorithm's initial limit, so it
    /// is competitive at once. It takes the lowest free slot. Lock-free and safe against concurrent adds
    /// of the same id (exactly one wins).
    ///
    /// ```
    /// use weir::balance::MembershipError;
    /// use weir::{Balancer, Config, NodeSlot};
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// assert_eq!(b.add(1), Err(MembershipError::DuplicateId(1)));
    /// b.add(2).unwrap();
    /// assert_eq!(b.add(3), Err(MembershipError::CapacityFull { capacity: 2 }));
    /// assert_eq!(b.node(1, 0).unwrap().success_rate, 1.0);
    /// ```
    pub fn add(&self, id: u64) -> Result<(), MembershipError> {
        let slots = self.slots.as_ref();
        if self.find(id).is_some() {
            return Err(MembershipError::DuplicateId(id));
        }
        let initial = u64::from(self.prepared.config.limit.initial_limit());
        // Claim a vacant, drained slot.
        let mut mine = None;
        for (i, s) in slots.iter().enumerate() {
            // Acquire: a drained slot's last releases happen-before our reset of its health.
            let c = s.ctl.load(Acquire);
            if is_free(c) {
                let claimed = word::pack(CLAIMED, word::generation(c) + 1, initial, 0);
                if s.ctl.compare_exchange(c, claimed, AcqRel, Relaxed).is_ok() {
                    mine = Some((i, s, claimed));
                    break;
                }
            }
        }
        let Some((i, s, claimed)) = mine else {
            return Err(MembershipError::CapacityFull {
                capacity: slots.len(),
            });
        };
        // Into the span before anything in the slot is published (see `shrink`), and before the fence
        // below, so that a concurrent adder of the same id that misses our REGISTERING...
        self.grow(i);
        // Relaxed: published by the Release write of REGISTERING below.
        s.id.store(id, Relaxed);
        s.health.reset(&self.prepared.algorithm);
        // The new node counts its outcomes from here. Relaxed: the slot is drained, and its old node's
        // releases count before their decrement (see `release`), which our Acquire claim read after: every
        // count is visible and no other comes (a lease still out is the old generation's and counts as
        // stale). Published with the id by the Release write of REGISTERING below.
        for (base, r) in s.released_base.iter().zip(&s.released) {
            base.store(r.load(Relaxed), Relaxed);
        }
        self.prepared.config.limit.reset(&s.limit);
        let registering = word::with_state(claimed, REGISTERING);
        s.ctl.store(registering, Release);
        // SeqCst fence between our store and our loads of the other slots (two adders of one id both fence):
        // at least one of them sees the other's REGISTERING, so they never both go active. The span is read
        // after the fence too: the adder whose fence comes second in the fences' order sees the other's
        // REGISTERING and, as the other grew the span before its fence, a span that covers its slot.
        fence(SeqCst);
        for (j, other) in self.used().iter().enumerate() {
            if j == i {
                continue;
            }
            loop {
                // Acquire: pairs with the Release publication, so the id read next is the one published.
                let c = other.ctl.load(Acquire);
                let st = word::state(c);
                if !matches!(st, ACTIVE | LAME_DUCK | REGISTERING) || other.id.load(Acquire) != id {
                    break;
                }
                if st == REGISTERING && j > i {
                    // The lower slot wins a tie between two registrations.
                    if other
                        .ctl
                        .compare_exchange(c, word::with_state(c, KILLED), AcqRel, Relaxed)
                        .is_ok()
                    {
                        break;
                    }
                    continue;
                }
                self.abandon(s, claimed);
                return Err(MembershipError::DuplicateId(id));
            }
        }
        // AcqRel: publishes the slot as active; fails only if a lower-slot adder of the same id killed us.
        if s.ctl
            .compare_exchange(
                registering,
                word::with_state(claimed, ACTIVE),
                AcqRel,
                Relaxed,
            )
            .is_err()
        {
            self.abandon(s, claimed);
            return Err(MembershipError::DuplicateId(id));
        }
        self.change_active(true);
        Ok(())
    }

    /// Gives a slot that lost a registration back: vacant, drained, with its claim's generation. A swap,
    /// not a store: a lower-slot adder of the same id may be killing it at this moment, and the read-modify-
    /// write puts our write after that kill in the slot's modification order, never before it.
    fn abandon(&self, s: &NodeSlot, claimed: u64) {
        // AcqRel: orders the vacancy after everything this adder wrote to the slot.
        s.ctl.swap(word::with_state(claimed, VACANT), AcqRel);
        self.shrink();
    }

    /// Removes a node at once. Its leases in flight stay valid to release (they are reported as
    /// [`ReleaseError::NodeRemoved`](crate::balance::ReleaseError::NodeRemoved)); its slot is reused only
    /// once they all are.
    ///
    /// ```
    /// use weir::balance::{MembershipError, ReleaseError};
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
    /// b.remove(1).unwrap();
    /// assert_eq!(b.remove(1), Err(MembershipError::UnknownId(1)));
    /// assert_eq!(b.release(lease, Outcome::Success, 5), Err(ReleaseError::NodeRemoved { id: 1 }));
    /// assert_eq!(b.stats().released_stale, 1);
    /// ```
    pub fn remove(&self, id: u64) -> Result<(), MembershipError> {
        let replaced =
            self.transition(id, |st| matches!(st, ACTIVE | LAME_DUCK).then_some(VACANT))?;
        if word::inflight(replaced) == 0 {
            // Nothing in flight: the slot is free now (else the release that drains it shrinks).
            self.shrink();
        }
        Ok(())
    }

    /// Puts a node into lame duck (`true`: no new leases, leases in flight finish and are recorded normally)
    /// or back into rotation (`false`).
    ///
    /// ```
    /// use weir::balance::{NodeState, Rejected};
    /// use weir::{Balancer, Config, NodeSlot, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// b.set_lame_duck(1, true).unwrap();
    /// assert_eq!(b.node(1, 0).unwrap().state, NodeState::LameDuck);
    /// assert_eq!(b.acquire(0, &mut Rng::with_seed(1)), Err(Rejected::NoActiveNodes));
    /// b.set_lame_duck(1, false).unwrap();
    /// assert!(b.acquire(0, &mut Rng::with_seed(1)).is_ok());
    /// # // (the lease is leaked on purpose: the doc test ends here)
    /// ```
    pub fn set_lame_duck(&self, id: u64, lame_duck: bool) -> Result<(), MembershipError> {
        let to = if lame_duck { LAME_DUCK } else { ACTIVE };
        self.transition(id, |st| matches!(st, ACTIVE | LAME_DUCK).then_some(to))
            .map(|_| ())
    }

    /// Moves the member `id` to the state `to` gives for its current one; returns the control word it
    /// replaced.
    fn transition(&self, id: u64, to: impl Fn(u64) -> Option<u64>) -> Result<u64, MembershipError> {
        loop {
            let (_, s) = self.find(id).ok_or(MembershipError::UnknownId(id))?;
            // Acquire/AcqRel: membership changes are ordered with the adds that published the slot.
            let c = s.ctl.load(Acquire);
            let Some(next) = to(word::state(c)) else {
                continue;
            };
            if s.id.load(Relaxed) != id {
                continue;
            }
            if s.ctl
                .compare_exchange(c, word::with_state(c, next), AcqRel, Acquire)
                .is_ok()
            {
                match (word::state(c) == ACTIVE, next == ACTIVE) {
                    (true, false) => self.change_active(false),
                    (false, true) => self.change_active(true),
                    // A lame duck removed: its scan weight is 0 already.
                    _ => {}
                }
                return Ok(c);
            }
        }
    }

    pub(crate) fn find(&self, id: u64) -> Option<(usize, &NodeSlot)> {
        self.used().iter().enumerate().find(|(_, s)| {
            // Acquire: the id of a published slot is read after its state.
            word::is_member(s.ctl.load(Acquire)) && s.id.load(Relaxed) == id
        })
    }

    /// Takes slot `i` into the span: called by an adder after it claimed the slot and before it publishes
    /// anything in it.
    fn grow(&self, i: usize) {
        let want = i as u64 + 1;
        // AcqRel: a shrink that reads this word also sees our claim of the slot (sequenced before), and
        // the version we advance makes a shrink that read an older word fail.
        let _ = self.span.fetch_update(AcqRel, Acquire, |w| {
            Some(span_word(w, (w & SPAN_HI).max(want)))
        });
        // Relaxed: `stats` only needs a bound that covers every slot with counters.
        self.peak.fetch_max(want, Relaxed);
    }

    /// Lowers the span past the free slots at its top: called when a slot may have become free (a
    /// removal, the release that drains a removed node, an abandoned add). Costs the free slots it
    /// passes.
    ///
    /// A shrink reads the span word, then the slots below its top, then swaps the word for one with a
    /// lower `hi` and the next version. An adder claims its slot, then advances the word (`grow`). If the
    /// adder's advance comes first in the word's order, either the shrink read the word after it (and so
    /// sees the claim: the slot is not free and stops the shrink) or before it (and its swap fails on the
    /// version); if it comes after the swap, it raises `hi` again. So a claimed slot is always inside the
    /// span before it is published.
    pub(crate) fn shrink(&self) {
        let slots = self.slots.as_ref();
        // Acquire: pairs with `grow`, so the claims behind the word we read are visible below.
        let mut w = self.span.load(Acquire);
        loop {
            let hi = (w & SPAN_HI) as usize;
            let mut top = hi.min(slots.len());
            // Acquire: as the claim's compare-and-swap in `add`.
            while top > 0 && is_free(slots[top - 1].ctl.load(Acquire)) {
                top -= 1;
            }
            if top == hi {
                return;
            }
            // AcqRel: orders the swap after the slot reads above, and a failure re-reads.
            match self
                .span
                .compare_exchange(w, span_word(w, top as u64), AcqRel, Acquire)
            {
                Ok(_) => return,
                Err(now) => w = now,
            }
        }
    }

    /// The active word with `count` nodes in rotation (see the field's docs).
    pub(crate) fn active_word(&self, count: u32) -> u64 {
        let w = self.prepared.algorithm.floor_weight(count);
        (u64::from(count) << 32) | u64::from(w.to_bits())
    }

    /// Counts a node into or out of rotation, then refreshes every slot's cached value: the node's state
    /// changed, and the weighted family's floor (see `Health::refresh`).
    fn change_active(&self, up: bool) {
        // AcqRel: counts and floor move together, and the refreshes below read them after this write.
        let _ = self.active.fetch_update(AcqRel, Acquire, |w| {
            let n = (w >> 32) as u32;
            Some(self.active_word(if up {
                n.saturating_add(1)
            } else {
                n.saturating_sub(1)
            }))
        });
        self.refresh_all(0);
        // A node came into rotation: whoever waits for room may have some now.
        if up {
            self.waiting.entered(self);
        }
    }
}

/// A fresh balancer tag: unique among the live balancers of a process unless 2^32 balancers are built
/// while one lives on, and never 0, so that a zeroed raw lease matches no balancer.
fn next_tag() -> u32 {
    loop {
        let tag = crate::internal::sync::next_tag();
        if tag != 0 {
            return tag;
        }
    }
}

/// Claims `slots` for a new balancer and clears them; its tag. Not generic, never inlined: one copy
/// whatever the slots' storage, and its locals take stack only while it runs.
#[inline(never)]
pub(crate) fn take_slots(
    slots: &[NodeSlot],
    algorithm: &algorithm::Prepared,
) -> Result<u32, ConfigError> {
    let n = slots.len();
    if n == 0 || n > MAX_NODES {
        return Err(ConfigError::Capacity);
    }
    let tag = next_tag();
    claim(slots, tag)?;
    for s in slots {
        // Relaxed: the balancer is not shared yet; publishing it to other threads synchronises.
        s.ctl.store(0, Relaxed);
        s.health.reset(algorithm);
        for c in [&s.id, &s.stale]
            .into_iter()
            .chain(&s.released)
            .chain(&s.released_base)
        {
            c.store(0, Relaxed);
        }
    }
    Ok(tag)
}

/// Marks every slot as owned by the balancer `tag`, or none of them if another balancer owns any.
fn claim(slots: &[NodeSlot], tag: u32) -> Result<(), ConfigError> {
    for (i, s) in slots.iter().enumerate() {
        // Acquire: the previous owner's writes (its Release on drop) happen-before our reset of the slot.
        if s.owner
            .compare_exchange(0, u64::from(tag), Acquire, Relaxed)
            .is_err()
        {
            for taken in slots.iter().take(i) {
                // Relaxed: we wrote nothing to these slots.
                taken.owner.store(0, Relaxed);
            }
            return Err(ConfigError::SlotsInUse);
        }
    }
    Ok(())
}
