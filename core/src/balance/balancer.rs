//! The balancer: membership, leases and outcomes over a fixed set of node slots.

use crate::balance::config::{Config, Prepared, MAX_NODES};
use crate::balance::error::{MembershipError, Rejected, ReleaseError};
use crate::balance::health::{self, Scope};
use crate::balance::lease::Lease;
use crate::balance::outcome::Outcome;
use crate::balance::policy::{self, Choice};
use crate::balance::slot::NodeSlot;
use crate::balance::snapshot::{NodeSnapshot, NodeState, Stats};
use crate::balance::word::{self, ACTIVE, CLAIMED, KILLED, LAME_DUCK, REGISTERING, VACANT};
use crate::error::ConfigError;
use crate::internal::pad::cache_padded;
use crate::internal::splitmix::SplitMix64;
use crate::internal::sync::{fence, AtomicU64, Ordering::*};
use crate::limit::{Limit, Sample};
use fastrand::Rng;

/// A health-weighted, concurrency-limited load balancer over a fixed set of node slots.
///
/// `S` is the slot storage: a `&'static [NodeSlot]` or `[NodeSlot; N]` without allocation, or a
/// `Box<[NodeSlot]>` with the `std` feature ([`Balancer::with_capacity`]). Every method takes `&self` and is
/// safe to call from many threads at once; none takes a lock or allocates.
///
/// ```
/// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
/// let balancer = Balancer::new([const { NodeSlot::new() }; 3], Config::default()).unwrap();
/// for id in [10, 20, 30] {
///     balancer.add(id).unwrap();
/// }
/// let mut rng = Rng::with_seed(7);
/// let lease = balancer.acquire(1_000, &mut rng).unwrap();
/// assert!([10, 20, 30].contains(&lease.node_id()));
/// balancer.release(lease, Outcome::Success, 2_000).unwrap();
/// assert_eq!(balancer.stats().released(Outcome::Success), 1);
/// ```
#[derive(Debug)]
pub struct Balancer<S: AsRef<[NodeSlot]>> {
    slots: S,
    prepared: Prepared,
    /// Active (non lame duck) member count in the high 32 bits, the recovery floor's weight
    /// `(floor / count)^exponent` as `f32` bits in the low 32: one word, so the two never disagree.
    active: AtomicU64,
    /// The balancer's clock: the first nanosecond of the epoch the weight caches were last rotated to
    /// (see `rotate`). Read by every
    /// acquire, written once per epoch: it shares a line only with `active`, which is as read-mostly.
    rotation: AtomicU64,
    /// The slots the scans read, `..hi`, with `hi` in the low 32 bits: every slot from `hi` on is vacant
    /// and drained, so what an acquire, a release or a membership change costs follows the members (and
    /// the slots still draining), not the capacity. The high 32 bits are a version that every change
    /// advances, so that a shrink computed from an older reading never lands (see `shrink`). Read by
    /// every acquire, written by membership changes only.
    span: AtomicU64,
    /// The most slots ever in use (`hi`'s highest value): slots from here on were never claimed since
    /// construction, so their counters are 0 and `stats` need not read them.
    peak: AtomicU64,
    /// This balancer's tag, carried by its leases and checked on release; also the owner mark it puts on
    /// its slots (see `claim`).
    tag: u32,
    /// Written on every refusal, which under overload is most acquires: on its own cache line, so that
    /// refusals do not slow the acquires that read `active` and `rotation`.
    rejected: Rejections,
    /// The callers waiting for room (`std`'s waiting acquires, see `rt::wait`).
    #[cfg(feature = "std")]
    pub(crate) waiters: crate::rt::wait::Waiters,
}

/// The low 32 bits of the span word: `hi`.
const SPAN_HI: u64 = 0xFFFF_FFFF;

/// The span word after `w` with `hi` and the version advanced by one.
#[inline]
fn span_word(w: u64, hi: u64) -> u64 {
    (w & !SPAN_HI).wrapping_add(1 << 32) | hi
}

/// A slot that holds nothing: no member, no lease in flight, no adder.
#[inline]
fn is_free(c: u64) -> bool {
    word::state(c) == VACANT && word::inflight(c) == 0
}

cache_padded! {
    /// The refusal counters, padded to their own cache lines.
    #[derive(Debug)]
    struct Rejections {
        busy: AtomicU64,
        empty: AtomicU64,
    }
}

impl<S: AsRef<[NodeSlot]>> Balancer<S> {
    /// Builds a balancer over `slots`, which it claims for its lifetime and resets to empty. Fails on a
    /// bad configuration, on a storage of 0 or more than [`MAX_NODES`](crate::balance::MAX_NODES) slots,
    /// and on slots that another live balancer holds ([`ConfigError::SlotsInUse`]): two balancers never
    /// share storage. Dropping the balancer gives its slots back.
    ///
    /// ```
    /// use weir::balance::ConfigError;
    /// use weir::{Balancer, Config, NodeSlot};
    ///
    /// static SLOTS: [NodeSlot; 4] = [const { NodeSlot::new() }; 4];
    /// let first = Balancer::new(&SLOTS[..], Config::default()).unwrap();
    /// // The same storage, or any part of it, cannot serve a second balancer at the same time.
    /// assert_eq!(Balancer::new(&SLOTS[2..], Config::default()).err(), Some(ConfigError::SlotsInUse));
    /// drop(first);
    /// let second = Balancer::new(&SLOTS[..], Config::default()).unwrap();
    /// assert_eq!(second.capacity(), 4);
    /// ```
    pub fn new(slots: S, config: Config) -> Result<Self, ConfigError> {
        // Built where it is returned, then prepared in place: the runtime form of the configuration (the
        // decay tables) is never moved, so never copied on the stack (see `DecayHealth::prepare_into`).
        let mut b = Balancer {
            slots,
            prepared: Prepared::unprepared(config),
            active: AtomicU64::new(0),
            rotation: AtomicU64::new(0),
            span: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            tag: 0,
            rejected: Rejections {
                busy: AtomicU64::new(0),
                empty: AtomicU64::new(0),
            },
            #[cfg(feature = "std")]
            waiters: crate::rt::wait::Waiters::new(config.max_waiters),
        };
        b.prepared.prepare()?;
        b.tag = take_slots(b.slots.as_ref(), &b.prepared.health.model)?;
        b.active.store(b.active_word(0), Relaxed);
        Ok(b)
    }

    /// The configuration this balancer was built with.
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot};
    /// let config = Config { rng_seed: 9, ..Config::default() };
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], config).unwrap();
    /// assert_eq!(b.config().rng_seed, 9);
    /// ```
    pub fn config(&self) -> &Config {
        &self.prepared.config
    }

    /// The number of node slots.
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot};
    /// let b = Balancer::new([const { NodeSlot::new() }; 5], Config::default()).unwrap();
    /// assert_eq!(b.capacity(), 5);
    /// ```
    pub fn capacity(&self) -> usize {
        self.slots.as_ref().len()
    }

    /// How many slots every scan reads: one past the highest slot that holds a member, an adder, or
    /// leases of a removed node still in flight. Acquires, releases and membership changes cost in
    /// proportion to this, never to the capacity. [`add`](Self::add) takes the lowest free slot, so this
    /// is the number of members and draining slots, plus any holes that removals left below the highest
    /// one until adds fill them; it shrinks as the highest slots empty.
    ///
    /// ```
    /// use weir::{Config, HeapBalancer};
    /// let b = HeapBalancer::with_capacity(65_536, Config::default()).unwrap();
    /// for id in [1, 2, 3] {
    ///     b.add(id).unwrap();
    /// }
    /// assert_eq!(b.slots_in_use(), 3);
    /// b.remove(3).unwrap();
    /// assert_eq!(b.slots_in_use(), 2);
    /// ```
    pub fn slots_in_use(&self) -> usize {
        self.used().len()
    }

    /// The slots the scans read (see [`slots_in_use`](Self::slots_in_use)).
    #[inline]
    fn used(&self) -> &[NodeSlot] {
        let slots = self.slots.as_ref();
        // Relaxed: a slot enters the span before it is published (see `add`), and a scan that reads an
        // older span makes the decision of a moment earlier; admission re-checks every slot it takes.
        let hi = (self.span.load(Relaxed) & SPAN_HI) as usize;
        slots.get(..hi).unwrap_or(slots)
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
    fn shrink(&self) {
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

    fn active_word(&self, count: u32) -> u64 {
        // Only the weighted models read the floor's weight: without them it is 0, and its `pow` is not
        // linked.
        #[cfg(any(feature = "buckets", feature = "ewma"))]
        let w = {
            let rate = self.prepared.config.floor / f64::from(count.max(1));
            self.prepared.health.weight.of(rate) as f32
        };
        #[cfg(not(any(feature = "buckets", feature = "ewma")))]
        let w = 0.0f32;
        (u64::from(count) << 32) | u64::from(w.to_bits())
    }

    /// Counts a node into or out of rotation, then refreshes every slot's scan weight: the floor and the
    /// node's state changed (see `Health::refresh`).
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
        // A node came into rotation: the callers waiting for room may have some now. The SeqCst fence
        // orders the node's publication (the control word written before this call) before the load of
        // the waiter count, as the release's SeqCst decrement does: with a joining waiter's SeqCst
        // increment and fence, at least one of the two sees the other (see `rt::wait`). Never hot.
        #[cfg(feature = "std")]
        if up {
            fence(SeqCst);
            self.wake_waiters();
        }
    }

    /// The words a slot's scan weight depends on.
    #[inline]
    fn scope<'a>(&'a self, s: &'a NodeSlot) -> Scope<'a> {
        Scope {
            rotation: &self.rotation,
            active: &self.active,
            ctl: &s.ctl,
        }
    }

    /// Recomputes every slot's scan weight, reading at `now` or at the rotation's epoch if that is later.
    /// Vacant and lame-duck slots get 0; a slot being recycled meanwhile is safe to refresh (see
    /// `Health::reset`).
    fn refresh_all(&self, now: u64) {
        for s in self.used() {
            s.health.refresh(&self.prepared.health, now, self.scope(s));
        }
    }

    /// Grants a lease on a node chosen by the configured [`Policy`](crate::balance::Policy), or fails fast.
    /// `now` is monotonic nanoseconds; `rng` is the caller's (one per thread: see the module docs of
    /// [`crate`]). Never blocks, never allocates.
    ///
    /// `now` also moves the balancer's clock, which dates releases (see [`release`](Self::release)): an
    /// acquire more than one clock epoch (the bucket width) before or after it moves it to its own epoch,
    /// so a wild `now` misleads until the next acquire with a sane one.
    ///
    /// ```
    /// use weir::balance::Rejected;
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::default()).unwrap();
    /// let mut rng = Rng::with_seed(3);
    /// assert_eq!(b.acquire(0, &mut rng), Err(Rejected::NoActiveNodes));
    /// b.add(1).unwrap();
    /// let lease = b.acquire(0, &mut rng).unwrap();
    /// assert_eq!(lease.node_id(), 1);
    /// b.release(lease, Outcome::Success, 1_000).unwrap();
    /// assert_eq!(b.stats().rejected_no_active, 1); // the refusal it returned
    /// ```
    pub fn acquire(&self, now: u64, rng: &mut Rng) -> Result<Lease, Rejected> {
        let got = self.acquire_uncounted(now, rng);
        if let Err(refused) = got {
            self.count_refusal(refused);
        }
        got
    }

    /// [`acquire`](Self::acquire), the same decision from the same draws, without counting a refusal in
    /// [`Stats`]: for a layer that does not hand a refusal to its caller but answers it itself, by waiting
    /// for room (the waiting acquires of [`rt`](crate::rt), weir-tower's `poll_ready`, the Python
    /// binding's `acquire_async`). Such a layer counts what it finally answers its caller: a refusal with
    /// [`count_refusal`](Self::count_refusal) (a lease needs no counting), so that
    /// [`Stats::rejected_all_busy`] and [`Stats::rejected_no_active`] stay the number of callers refused.
    ///
    /// ```
    /// use weir::balance::Rejected;
    /// use weir::{Balancer, Config, NodeSlot, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// let mut rng = Rng::with_seed(3);
    /// // A layer that would wait for members tries first, and its caller is refused only if it gives up.
    /// assert_eq!(b.acquire_uncounted(0, &mut rng), Err(Rejected::NoActiveNodes));
    /// assert_eq!(b.stats().rejected_no_active, 0);
    /// b.count_refusal(Rejected::NoActiveNodes); // it gave up: its caller is refused
    /// assert_eq!(b.stats().rejected_no_active, 1);
    /// ```
    #[inline]
    pub fn acquire_uncounted(&self, now: u64, rng: &mut Rng) -> Result<Lease, Rejected> {
        let slots = self.used();
        // Relaxed: a rotation publishes through the caches it refreshes (see `rotate`); this load only
        // decides whether one is due.
        let rotation = self.rotation.load(Relaxed);
        if self.prepared.rotation_due(rotation, now) {
            self.rotate(now, rotation);
        }
        // The first draw is over the scan weights alone (one word per node); if the node it draws has no
        // room, the draws go on over the nodes with room (see `select`).
        let mut careful = false;
        loop {
            let choice = if careful {
                policy::choose(self.prepared.config.policy, slots, rng)
            } else {
                careful = true;
                policy::choose_fast(self.prepared.config.policy, slots, rng)
            };
            let i = match choice {
                Choice::Try(i) => i,
                Choice::Reject(r) => return Err(r),
            };
            let Some(s) = slots.get(i) else { continue };
            if let Some((c, inflight)) = admit(s) {
                return Ok(self.lease(s, i, c, inflight, now));
            }
            // The node filled up (or left) after the scan: the walk goes on.
        }
    }

    /// A retry's acquire: the configured policy over the members whose ids are not in `exclude` (the
    /// nodes this request already tried), so that a retry goes to another node while one has room; if
    /// none of them has room (all full, all excluded, or the policy's give-up rule refuses them), the
    /// ordinary [`acquire`](Self::acquire) over all the members decides, so a retry goes back to a node
    /// it tried only when no other can take it. Refusals are counted as `acquire` counts them.
    ///
    /// The same draws from `rng` for the same state, so a trace can record the decision. Ids in
    /// `exclude` that are not members are ignored; an empty `exclude` is [`acquire`](Self::acquire)
    /// itself. The exclusion costs a scan of `exclude` per node read, on this path only: `acquire`
    /// reads none. Whether a request may be sent twice (is idempotent) is the caller's decision, and so
    /// is whether to retry at all: [`RetryBudget`](crate::overload::RetryBudget) bounds the retries of
    /// all the callers together.
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 3], Config::default()).unwrap();
    /// for id in [1, 2, 3] {
    ///     b.add(id).unwrap();
    /// }
    /// let mut rng = Rng::with_seed(5);
    /// let first = b.acquire(0, &mut rng).unwrap();
    /// let tried = first.node_id();
    /// b.release(first, Outcome::Failure, 1_000).unwrap();
    /// // The retry goes elsewhere.
    /// let retry = b.acquire_excluding(2_000, &mut rng, &[tried]).unwrap();
    /// assert_ne!(retry.node_id(), tried);
    /// b.release(retry, Outcome::Success, 3_000).unwrap();
    /// // With every node tried, the ordinary acquire decides.
    /// assert!(b.acquire_excluding(4_000, &mut rng, &[1, 2, 3]).is_ok());
    /// ```
    pub fn acquire_excluding(
        &self,
        now: u64,
        rng: &mut Rng,
        exclude: &[u64],
    ) -> Result<Lease, Rejected> {
        let got = self.acquire_excluding_uncounted(now, rng, exclude);
        if let Err(refused) = got {
            self.count_refusal(refused);
        }
        got
    }

    /// [`acquire_excluding`](Self::acquire_excluding) without counting a refusal, as
    /// [`acquire_uncounted`](Self::acquire_uncounted) is to [`acquire`](Self::acquire).
    ///
    /// ```
    /// use weir::balance::Rejected;
    /// let b = weir::HeapBalancer::with_capacity(1, weir::Config::default()).unwrap();
    /// let mut rng = weir::Rng::with_seed(3);
    /// assert_eq!(b.acquire_excluding_uncounted(0, &mut rng, &[7]), Err(Rejected::NoActiveNodes));
    /// assert_eq!(b.stats().rejected_no_active, 0);
    /// ```
    pub fn acquire_excluding_uncounted(
        &self,
        now: u64,
        rng: &mut Rng,
        exclude: &[u64],
    ) -> Result<Lease, Rejected> {
        if exclude.is_empty() {
            return self.acquire_uncounted(now, rng);
        }
        let slots = self.used();
        // Relaxed: as in `acquire_uncounted`.
        let rotation = self.rotation.load(Relaxed);
        if self.prepared.rotation_due(rotation, now) {
            self.rotate(now, rotation);
        }
        // Relaxed: a vacant slot's id may be stale, but such a slot is no candidate whatever it holds;
        // an admitted one is re-read below after the admitting compare-and-swap.
        let skip = |s: &NodeSlot| exclude.contains(&s.id.load(Relaxed));
        loop {
            let i = match policy::choose_excluding(self.prepared.config.policy, slots, rng, skip) {
                Choice::Try(i) => i,
                // None of the others can take it: the ordinary acquire over all.
                Choice::Reject(_) => return self.acquire_uncounted(now, rng),
            };
            let Some(s) = slots.get(i) else { continue };
            if let Some((c, inflight)) = admit(s) {
                return Ok(self.lease(s, i, c, inflight, now));
            }
            // The node filled up (or left) after the scan: the walk goes on.
        }
    }

    /// The lease on slot `i` (`s`) that `admit` granted: `c` the control word it admitted from.
    #[inline(always)]
    fn lease(&self, s: &NodeSlot, i: usize, c: u64, inflight: u64, now: u64) -> Lease {
        Lease {
            // Relaxed is enough: the Acquire of the admitting CAS already synchronised with the Release
            // that published this occupant, and the id cannot change while we hold a lease.
            id: s.id.load(Relaxed),
            start: now,
            slot: i as u32,
            inflight: inflight as u32,
            generation: word::generation(c) as u16,
            balancer: self.tag,
        }
    }

    /// Counts a refusal handed to a caller: in [`Stats::rejected_all_busy`] for
    /// [`Rejected::AllBusy`], in [`Stats::rejected_no_active`] for [`Rejected::NoActiveNodes`].
    /// [`acquire`](Self::acquire) and the waiting acquires count their own; this is for a layer over
    /// [`acquire_uncounted`](Self::acquire_uncounted) that refuses its caller (see there). One relaxed
    /// increment.
    ///
    /// ```
    /// use weir::balance::Rejected;
    /// let b = weir::HeapBalancer::with_capacity(1, weir::Config::default()).unwrap();
    /// b.count_refusal(Rejected::AllBusy);
    /// assert_eq!((b.stats().rejected_all_busy, b.stats().rejected_no_active), (1, 0));
    /// ```
    #[inline]
    pub fn count_refusal(&self, refused: Rejected) {
        let counter = match refused {
            Rejected::AllBusy => &self.rejected.busy,
            Rejected::NoActiveNodes => &self.rejected.empty,
        };
        // Relaxed: a statistic; no other value is read against it.
        counter.fetch_add(1, Relaxed);
    }

    /// Moves the weight caches to the epoch of `now`: a node's weighted rate changes only with a write
    /// (which refreshes its cache) or when a bucket leaves the window, which can happen only when the clock
    /// enters a new epoch. So once per epoch one acquire claims the rotation (a compare-and-swap on the
    /// rotation word, which others that raced it lose and go on) and refreshes every slot's cache at
    /// `now` (under the decay model, every slot of a balancer of at most 64, and 64 in turn in a larger
    /// one: see [`rotated`]); acquires never check an expiry per node. Releases take their reading at the rotation's epoch
    /// or later (see `Health::refresh`), so a release with a lagging clock cannot undo a rotation.
    ///
    /// An acquire up to one epoch behind the rotation does not rotate back (threads' clock readings
    /// interleave around a boundary); one further away, before or after (a clock jump, or a caller's bad
    /// `now`), rotates to its own epoch, so a single wild `now` misleads at most until the next acquire
    /// with a sane one. While a rotation runs, concurrent acquires may still see the previous epoch's
    /// weights for the few nodes not yet refreshed: the decision of a moment earlier.
    ///
    /// The average model has no buckets, so nothing to refresh: its rotation only keeps the clock that
    /// dates releases.
    #[cold]
    #[inline(never)]
    fn rotate(&self, now: u64, seen: u64) {
        let word = self.prepared.epoch_start(now);
        // AcqRel: orders our refreshes after the claim, and the claim after the rotation it replaces.
        if word == seen
            || self
                .rotation
                .compare_exchange(seen, word, AcqRel, Relaxed)
                .is_err()
        {
            return;
        }
        match self.prepared.health.model {
            #[cfg(feature = "buckets")]
            health::Model::Buckets(_) => self.refresh_all(now),
            #[cfg(feature = "decay")]
            health::Model::Decay(_) => {
                // Releases are dated no later than the horizon of the rotation they read, so after a
                // silence of 2^31 ticks every counter is older than its tick can tell (see `decay.rs`).
                let forget = now.saturating_sub(self.prepared.horizon(seen))
                    >= (1u64 << 31) << health::TICK_SHIFT;
                let part = if forget {
                    self.used()
                } else {
                    rotated(self.used(), health::epoch_at(now, self.prepared.clock))
                };
                for s in part {
                    s.health.settle(&self.prepared.health, now, forget);
                    s.health.refresh(&self.prepared.health, now, self.scope(s));
                }
            }
            #[cfg(feature = "ewma")]
            health::Model::Ewma(_) => {}
        }
    }

    /// Reports the outcome of a lease's call; `now` is monotonic nanoseconds.
    ///
    /// The release is dated at `now`, but never later than the end of the epoch after the balancer's
    /// clock epoch. The clock is the epoch of the newest acquire (acquires keep it; an epoch is the bucket
    /// width, 5 s in the seeds' window, or [`CLOCK_EPOCH_NS`](crate::balance::CLOCK_EPOCH_NS) under the
    /// average model), so a release dated at its limit is one that could have come a moment after the
    /// newest acquire: a wild `now` (days ahead, `u64::MAX`) cannot move a node's window into the future,
    /// erase its earlier outcomes or stop its window from ageing. The price: a call that outlasts the
    /// next epoch while nothing else is acquired is dated at that epoch's end, and the RTT fed to the
    /// limiter, the dated `now - acquired_at` (0 if `now` is earlier), is cut there too.
    ///
    /// A lease whose node was removed meanwhile returns its in-flight slot and records nothing else
    /// ([`ReleaseError::NodeRemoved`]). A lease from another balancer, or a raw lease that matches no
    /// lease in flight (forged, or released before), is refused ([`ReleaseError::InvalidLease`]) and
    /// changes nothing.
    ///
    /// ```
    /// use weir::balance::ReleaseError;
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let a = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// let b = Balancer::new([const { NodeSlot::new() }; 1], Config::default()).unwrap();
    /// a.add(1).unwrap();
    /// b.add(1).unwrap();
    /// let mut rng = Rng::with_seed(5);
    /// let lease = a.acquire(0, &mut rng).unwrap();
    /// let raw = lease.into_raw();
    /// // Not b's lease, even though b has a node 1 in the same slot.
    /// assert_eq!(b.release(weir::Lease::from_raw(raw), Outcome::Success, 10), Err(ReleaseError::InvalidLease));
    /// assert_eq!(a.release(weir::Lease::from_raw(raw), Outcome::Success, 10), Ok(()));
    /// ```
    pub fn release(&self, lease: Lease, outcome: Outcome, now: u64) -> Result<(), ReleaseError> {
        if lease.balancer != self.tag {
            return Err(ReleaseError::InvalidLease);
        }
        let s = self
            .slots
            .as_ref()
            .get(lease.slot as usize)
            .ok_or(ReleaseError::InvalidLease)?;
        // Acquire: pairs with the Release that published the occupant, before we touch its health.
        let c = s.ctl.load(Acquire);
        // The occupant's id cannot change while one of its leases is in flight (a slot is reused only once
        // drained), so a lease whose id differs is not one of them.
        if word::inflight(c) == 0
            || word::generation(c) != u64::from(lease.generation)
            || s.id.load(Relaxed) != lease.id
        {
            return Err(ReleaseError::InvalidLease);
        }
        let live = word::is_member(c);
        // Relaxed: the clock is an estimate; a release that reads an older rotation dates itself no
        // later than that rotation allowed, at most one epoch earlier than the newest would.
        let now = now.min(self.prepared.horizon(self.rotation.load(Relaxed)));
        let sample = self
            .prepared
            .limit_reading(outcome)
            .filter(|_| live)
            .map(|dropped| Sample {
                rtt_ns: now.saturating_sub(lease.start),
                inflight: lease.inflight,
                dropped,
                now_ns: now,
            });
        if live {
            s.health
                .record(&self.prepared.health, now, outcome, self.scope(s));
            // Counted before the decrement below, like the health: the decrement that drains a removed
            // node's slot is then the last write of its node, so an add that claims the slot reads every
            // count of the node it replaces (see `add`). Relaxed: statistics, ordered by that decrement.
            s.released[outcome as usize].fetch_add(1, Relaxed);
        }
        // The algorithm's state lives in `s.limit`. Its probe jitter draws from bits derived from the
        // balancer's seed and the lease, so the same calls give the same limits (no shared generator).
        // A lease released twice at once through its raw parts (the bindings) can feed its sample twice
        // before one of the two is refused below; the limit stays within the algorithm's bounds.
        let algo = &self.prepared.config.limit;
        // A fixed limit has no state and never changes: nothing to feed or publish.
        let sample = sample.filter(|_| !algo.is_fixed());
        if let Some(sm) = &sample {
            let random = SplitMix64::new(
                self.prepared.config.rng_seed
                    ^ lease.id.rotate_left(32)
                    ^ lease.start
                    ^ (u64::from(lease.inflight) << 40),
            )
            .next_u64();
            algo.update(&s.limit, sm, random);
        }
        // SeqCst success: Release for the membership changes (every write above happens-before one that
        // sees the slot drained), and SeqCst because this decrement and the SeqCst load of the waiter count
        // in `wake_waiters` below are one side of a store-buffering pattern with a joining waiter (SeqCst
        // increment of that count, SeqCst fence, then its scan): of the two, at least one sees the other,
        // so a slot freed here is never missed by both (see `rt::wait`, "Memory ordering"). The same
        // `lock cmpxchg` as Release on x86. Acquire on every load of the word (the first and each failed
        // attempt's): the closure reads the limiter's state after it, and when our compare-and-swap lands
        // on another release's write, that load read the write, so the other release's state update
        // happens-before our read: of two racing releases, the one that lands last publishes a limit at
        // least as new as the other's.
        let done = s.ctl.fetch_update(SeqCst, Acquire, |c| {
            if word::inflight(c) == 0 || word::generation(c) != u64::from(lease.generation) {
                return None;
            }
            let c = c - 1;
            // The limit is read from the state inside the compare-and-swap, so of two racing releases
            // the one that lands last publishes a limit at least as new as the other's.
            Some(if sample.is_some() {
                word::with_limit(
                    c,
                    u64::from(algo.limit(&s.limit).min(crate::limit::MAX_LIMIT)),
                )
            } else {
                c
            })
        });
        let Ok(before) = done else {
            if live {
                // The count above was for a lease released before (the same raw lease twice, at once):
                // taken back. Only such misuse comes here, and only when it also races the slot's re-add
                // can the new node's counts be one off.
                s.released[outcome as usize].fetch_sub(1, Relaxed);
            }
            return Err(ReleaseError::InvalidLease);
        };
        // A slot came free: hand it to the callers waiting for room, if any (one load when none wait).
        #[cfg(feature = "std")]
        self.wake_waiters();
        if live {
            Ok(())
        } else {
            // Relaxed: statistics.
            s.stale.fetch_add(1, Relaxed);
            if is_free(before - 1) {
                // The last lease of a removed node: its slot is free.
                self.shrink();
            }
            Err(ReleaseError::NodeRemoved { id: lease.id })
        }
    }

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
            if word::state(c) == VACANT && word::inflight(c) == 0 {
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
        s.health.reset(&self.prepared.health.model);
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
    /// [`ReleaseError::NodeRemoved`]); its slot is reused only once they all are.
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

    fn find(&self, id: u64) -> Option<(usize, &NodeSlot)> {
        self.used().iter().enumerate().find(|(_, s)| {
            // Acquire: the id of a published slot is read after its state.
            word::is_member(s.ctl.load(Acquire)) && s.id.load(Relaxed) == id
        })
    }

    /// A snapshot of the member with this id at `now`.
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::seeds()).unwrap();
    /// b.add(1).unwrap();
    /// let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
    /// b.release(lease, Outcome::Failure, 10).unwrap();
    /// let n = b.node(1, 10).unwrap();
    /// assert_eq!((n.window_finished, n.window_succeeded, n.success_rate), (1, 0, 0.0));
    /// assert!(b.node(2, 10).is_none());
    ///
    /// // The default model reports its decayed counters and the penalty the policy adds to in-flight.
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
    /// b.release(lease, Outcome::Failure, 10).unwrap();
    /// let n = b.node(1, 10).unwrap();
    /// assert_eq!((n.successes, n.failures, n.penalty), (0.0, 1.0, 26.0));
    /// ```
    pub fn node(&self, id: u64, now: u64) -> Option<NodeSnapshot> {
        self.find(id).and_then(|(_, s)| self.snapshot(s, now))
    }

    /// Snapshots of every member at `now`, in slot order. Allocation-free.
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot};
    /// let b = Balancer::new([const { NodeSlot::new() }; 4], Config::default()).unwrap();
    /// for id in [5, 6, 7] {
    ///     b.add(id).unwrap();
    /// }
    /// let ids: Vec<u64> = b.nodes(0).map(|n| n.id).collect();
    /// assert_eq!(ids, [5, 6, 7]);
    /// ```
    pub fn nodes(&self, now: u64) -> impl Iterator<Item = NodeSnapshot> + '_ {
        self.used()
            .iter()
            .filter_map(move |s| self.snapshot(s, now))
    }

    fn snapshot(&self, s: &NodeSlot, now: u64) -> Option<NodeSnapshot> {
        let c = s.ctl.load(Acquire);
        let state = match word::state(c) {
            ACTIVE => NodeState::Active,
            LAME_DUCK => NodeState::LameDuck,
            _ => return None,
        };
        let v = s.health.view(&self.prepared.health, now);
        let floor = self.prepared.config.floor
            / f64::from(((self.active.load(Relaxed) >> 32) as u32).max(1));
        let rate = if v.floored { v.rate.max(floor) } else { v.rate };
        let mut by_outcome = [0; 6];
        for ((n, r), base) in by_outcome.iter_mut().zip(&s.released).zip(&s.released_base) {
            // Relaxed: statistics; the base was published with the node, which the Acquire load of the
            // control word above ordered, and the add read the same count before storing it, so the count
            // read here is no older. Saturating for a slot re-added between our loads.
            *n = r.load(Relaxed).saturating_sub(base.load(Relaxed));
        }
        Some(NodeSnapshot {
            id: s.id.load(Relaxed),
            state,
            success_rate: rate,
            weight: self.prepared.health.weight.of(rate),
            successes: v.decayed.0,
            failures: v.decayed.1,
            penalty: v.decayed.2,
            limit: word::limit(c) as u32,
            in_flight: word::inflight(c) as u32,
            window_finished: v.window.0,
            window_succeeded: v.window.1,
            sticky_finished: v.sticky.0,
            sticky_succeeded: v.sticky.1,
            has_data: v.has_data,
            by_outcome,
        })
    }

    /// Balancer-wide counters, summed over the slots ever used (each counter is read once; under
    /// concurrent traffic the sums are from slightly different instants).
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
    /// assert_eq!((b.stats().acquired, b.stats().in_flight), (1, 1));
    /// b.release(lease, Outcome::Success, 10).unwrap();
    /// let st = b.stats();
    /// assert_eq!((st.acquired, st.in_flight, st.released(Outcome::Success)), (1, 0, 1));
    /// ```
    pub fn stats(&self) -> Stats {
        let mut st = Stats {
            rejected_all_busy: self.rejected.busy.load(Relaxed),
            rejected_no_active: self.rejected.empty.load(Relaxed),
            ..Stats::default()
        };
        let slots = self.slots.as_ref();
        // Relaxed: a slot's counters start at 0 and every count was made under a lease granted after the
        // slot entered the peak, which the Acquire loads of the control words below order.
        let peak = self.peak.load(Relaxed) as usize;
        for s in slots.get(..peak).unwrap_or(slots) {
            let c = s.ctl.load(Acquire);
            for (total, r) in st.by_outcome.iter_mut().zip(&s.released) {
                *total += r.load(Relaxed);
            }
            st.released_stale += s.stale.load(Relaxed);
            st.in_flight += word::inflight(c);
            match word::state(c) {
                ACTIVE => st.active_nodes += 1,
                LAME_DUCK => st.lame_duck_nodes += 1,
                _ => {}
            }
        }
        st.acquired = st.released_total() + st.released_stale + st.in_flight;
        #[cfg(feature = "std")]
        self.waiters.tally(&mut st);
        st
    }
}

/// Slots a rotation under the decay model refreshes at most: a balancer of at most this many slots has
/// every slot refreshed by every rotation. The same bound as the lowest-score policy's sample, so a
/// balancer of at most 64 slots works and decides exactly as before both.
#[cfg(feature = "decay")]
pub(crate) const ROTATED: usize = policy::SAMPLE_ABOVE;

/// The slots that the rotation of clock epoch `epoch` refreshes under the decay model: all of them in a
/// balancer of at most [`ROTATED`] slots; in a larger one, one of `w` parts of at most [`ROTATED`]
/// consecutive slots in turn (`w` the least power of two that makes them small enough, the part the
/// epoch's low bits name), so that a rotation's work does not grow with the balancer. Each slot is then
/// refreshed at least every `w` epochs by the rotations (16 epochs, 4 s by default, at 1,024 slots), and
/// by each of its own releases that records a failure or follows one: what waits longer is only the
/// fading of an idle node's penalty, which moves in steps `w` epochs apart.
#[cfg(feature = "decay")]
#[inline]
fn rotated(used: &[NodeSlot], epoch: u64) -> &[NodeSlot] {
    if used.len() <= ROTATED {
        return used;
    }
    let parts = used.len().div_ceil(ROTATED).next_power_of_two();
    // `parts` is a power of two: a shift, and a mask for the epoch's part.
    let size = (used.len() + parts - 1) >> parts.trailing_zeros();
    let start = (epoch & (parts as u64 - 1)) as usize * size;
    // Checked slicing: the last parts may be short or empty.
    used.get(start..used.len().min(start + size))
        .unwrap_or_default()
}

/// Reserves one in-flight slot on `s` if it is active and below its limit; returns the control word it
/// replaced and the new in-flight count.
#[inline]
fn admit(s: &NodeSlot) -> Option<(u64, u64)> {
    let mut c = s.ctl.load(Relaxed);
    loop {
        if word::state(c) != ACTIVE || word::inflight(c) >= word::limit(c) {
            return None;
        }
        // Acquire: pairs with the Release that published the occupant (its id and health).
        match s.ctl.compare_exchange_weak(c, c + 1, Acquire, Relaxed) {
            Ok(_) => return Some((c, word::inflight(c) + 1)),
            Err(now) => c = now,
        }
    }
}

impl<S: AsRef<[NodeSlot]>> Drop for Balancer<S> {
    /// Gives the slots back, so that a new balancer can be built over them. Only the slots it owns: a
    /// construction that failed (bad configuration, slots of another balancer) owns none, and its tag
    /// is then 0 or another's.
    fn drop(&mut self) {
        if self.tag == 0 {
            return;
        }
        let tag = u64::from(self.tag);
        for s in self.slots.as_ref() {
            // Release: everything this balancer wrote to the slot happens-before the next owner's claim.
            // Relaxed on failure: not ours, nothing to publish.
            let _ = s.owner.compare_exchange(tag, 0, Release, Relaxed);
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
fn take_slots(slots: &[NodeSlot], model: &health::Model) -> Result<u32, ConfigError> {
    let n = slots.len();
    if n == 0 || n > MAX_NODES {
        return Err(ConfigError::Capacity);
    }
    let tag = next_tag();
    claim(slots, tag)?;
    for s in slots {
        // Relaxed: the balancer is not shared yet; publishing it to other threads synchronises.
        s.ctl.store(0, Relaxed);
        s.health.reset(model);
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

#[cfg(all(test, not(loom), feature = "decay"))]
mod tests {
    use super::*;
    extern crate std;
    use std::vec::Vec;

    /// Over `parts` consecutive epochs (any `parts` of them), the rotations' parts cover every slot
    /// exactly once, each part at most [`ROTATED`] slots; at most [`ROTATED`] slots, every rotation
    /// covers all.
    #[test]
    fn rotations_cover_every_slot_in_turn() {
        for n in [0usize, 1, 63, 64, 65, 100, 128, 129, 1_000, 1_024, 4_097] {
            let slots: Vec<NodeSlot> = (0..n).map(|_| NodeSlot::new()).collect();
            let parts = n.div_ceil(ROTATED).next_power_of_two().max(1);
            for first in [0u64, 5, 1 << 40] {
                let mut seen = std::vec![0u32; n];
                for epoch in first..first + parts as u64 {
                    let part = rotated(&slots, epoch);
                    assert!(part.len() <= ROTATED || n <= ROTATED, "n {n}");
                    for s in part {
                        let at = (s as *const NodeSlot as usize - slots.as_ptr() as usize)
                            / core::mem::size_of::<NodeSlot>();
                        seen[at] += 1;
                    }
                }
                assert!(seen.iter().all(|&c| c == 1), "n {n}, from epoch {first}");
            }
        }
    }
}
