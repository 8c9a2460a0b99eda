//! The balancer: leases and outcomes over a fixed set of node slots (its membership is `membership.rs`).

use crate::balance::algorithm::Choice;
use crate::balance::clock::Clock;
use crate::balance::config::{Config, Prepared};
use crate::balance::error::{Rejected, ReleaseError};
use crate::balance::health::Scope;
use crate::balance::lease::Lease;
use crate::balance::membership::{is_free, take_slots, SPAN_HI};
use crate::balance::outcome::Outcome;
use crate::balance::slot::NodeSlot;
use crate::balance::snapshot::{NodeSnapshot, NodeState, Stats};
use crate::balance::waiting::Waiting;
use crate::balance::word::{self, ACTIVE, LAME_DUCK};
use crate::error::ConfigError;
use crate::internal::pad::cache_padded;
use crate::internal::splitmix::SplitMix64;
use crate::internal::sync::{fence, AtomicU64, Ordering::*};
use crate::limit::{Limit, Sample, ServerLoad};
use fastrand::Rng;

/// A health-weighted, concurrency-limited load balancer over a fixed set of node slots.
///
/// `S` is the slot storage: a `&'static [NodeSlot]` or `[NodeSlot; N]` without allocation, or a
/// `Box<[NodeSlot]>` with the `std` feature ([`Balancer::with_capacity`]). `W` is who hears that room may
/// have come ([`Waiting`]): nobody (`()`, the default: the core fails fast), or with `std` the queue of
/// callers waiting for room, `rt::Waiters`, which a [`HeapBalancer`](crate::HeapBalancer) has. Every
/// method takes `&self` and is safe to call from many threads at once; none takes a lock or allocates.
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
pub struct Balancer<S: AsRef<[NodeSlot]>, W: Waiting = ()> {
    pub(crate) slots: S,
    pub(crate) prepared: Prepared,
    /// Active (non lame duck) member count in the high 32 bits, the weighted family's recovery floor
    /// weight `(floor / count)^exponent` as `f32` bits in the low 32 (0 in the lowest-score family): one
    /// word, so the two never disagree.
    pub(crate) active: AtomicU64,
    /// The lowest-score family's fastest latency estimate, `f32` bits (see `lowest/pace.rs`): written by
    /// the clock's rotation, read by the refreshes of the nodes' scan words.
    #[cfg(feature = "slow")]
    pub(crate) fastest: AtomicU64,
    /// The balancer's clock (see `clock.rs`): its rotation word is read by every acquire and written once
    /// per epoch, as read-mostly as `active`.
    pub(crate) clock: Clock,
    /// The slots the scans read, `..hi`, with `hi` in the low 32 bits: every slot from `hi` on is vacant
    /// and drained, so what an acquire, a release or a membership change costs follows the members (and
    /// the slots still draining), not the capacity. The high 32 bits are a version that every change
    /// advances, so that a shrink computed from an older reading never lands (see `shrink`). Read by
    /// every acquire, written by membership changes only.
    pub(crate) span: AtomicU64,
    /// The most slots ever in use (`hi`'s highest value): slots from here on were never claimed since
    /// construction, so their counters are 0 and `stats` need not read them.
    pub(crate) peak: AtomicU64,
    /// This balancer's tag, carried by its leases and checked on release; also the owner mark it puts on
    /// its slots (see `claim`).
    pub(crate) tag: u32,
    /// Written on every refusal, which under overload is most acquires: on its own cache line, so that
    /// refusals do not slow the acquires that read `active` and `rotation`.
    rejected: Rejections,
    /// Who hears that room may have come (see [`Waiting`]).
    pub(crate) waiting: W,
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
    /// Builds a balancer over `slots`, which it claims for its lifetime and resets to empty; nobody waits
    /// for room in it (see [`with_waiting`](Self::with_waiting)). Fails on a bad configuration, on a
    /// storage of 0 or more than [`MAX_NODES`](crate::balance::MAX_NODES) slots, and on slots that another
    /// live balancer holds ([`ConfigError::SlotsInUse`]): two balancers never share storage. Dropping the
    /// balancer gives its slots back.
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
        Self::with_waiting(slots, config)
    }
}

impl<S: AsRef<[NodeSlot]>, W: Waiting> Balancer<S, W> {
    /// [`new`](Balancer::new), with `W` told of room (see [`Waiting`]), built from the configuration's
    /// [`max_waiters`](Config::max_waiters). With `std`, `Balancer::<_, weir::rt::Waiters>::with_waiting`
    /// is a balancer whose callers can wait for room (as a [`HeapBalancer`](crate::HeapBalancer) can).
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot};
    /// static SLOTS: [NodeSlot; 2] = [const { NodeSlot::new() }; 2];
    /// let b = Balancer::<_, weir::rt::Waiters>::with_waiting(&SLOTS[..], Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// let soon = std::time::Instant::now() + std::time::Duration::from_millis(1);
    /// assert!(b.acquire_wait(soon).is_ok());
    /// ```
    pub fn with_waiting(slots: S, config: Config) -> Result<Self, ConfigError> {
        // Built where it is returned, then prepared in place: the runtime form of the configuration (the
        // lowest-score family's decay tables) is never moved, so never copied on the stack (see
        // `LowestScore::prepare_into`).
        let mut b = Balancer {
            slots,
            prepared: Prepared::unprepared(config),
            active: AtomicU64::new(0),
            #[cfg(feature = "slow")]
            fastest: AtomicU64::new(0),
            clock: Clock::unset(),
            span: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            tag: 0,
            rejected: Rejections {
                busy: AtomicU64::new(0),
                empty: AtomicU64::new(0),
            },
            waiting: W::new(config.max_waiters),
        };
        b.prepared.prepare()?;
        // After the algorithm's checks, which find a bad epoch width first (and name its field).
        b.clock = Clock::new(config.algorithm.clock_ns())?;
        b.tag = take_slots(b.slots.as_ref(), &b.prepared.algorithm)?;
        b.active.store(b.active_word(0), Relaxed);
        Ok(b)
    }

    /// The configuration this balancer was built with.
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot};
    /// let config = Config { seed: 9, ..Config::default() };
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], config).unwrap();
    /// assert_eq!(b.config().seed, 9);
    /// ```
    pub fn config(&self) -> &Config {
        &self.prepared.config
    }

    /// Who hears that room may have come (see [`Waiting`]): with `std`, a
    /// [`HeapBalancer`](crate::HeapBalancer)'s queue of waiting callers.
    pub fn waiting(&self) -> &W {
        &self.waiting
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
    pub(crate) fn used(&self) -> &[NodeSlot] {
        let slots = self.slots.as_ref();
        // Relaxed: a slot enters the span before it is published (see `add`), and a scan that reads an
        // older span makes the decision of a moment earlier; admission re-checks every slot it takes.
        let hi = (self.span.load(Relaxed) & SPAN_HI) as usize;
        slots.get(..hi).unwrap_or(slots)
    }

    /// The words a slot's cached value depends on.
    #[inline]
    pub(crate) fn scope<'a>(&'a self, s: &'a NodeSlot) -> Scope<'a> {
        Scope {
            rotation: self.clock.word(),
            active: &self.active,
            ctl: &s.ctl,
            #[cfg(feature = "slow")]
            fastest: &self.fastest,
        }
    }

    /// Recomputes every slot's cached value, reading at `now` or at the rotation's epoch if that is
    /// later. Vacant and lame-duck slots get 0; a slot being recycled meanwhile is safe to refresh (see
    /// `Health::reset`).
    pub(crate) fn refresh_all(&self, now: u64) {
        for s in self.used() {
            self.prepared
                .algorithm
                .refresh_cache(&s.health, now, self.scope(s));
        }
    }

    /// Grants a lease on a node chosen by the configured [`Algorithm`](crate::balance::Algorithm), or
    /// fails fast.
    /// `now` is monotonic nanoseconds; `rng` is the caller's (one per thread: see the module docs of
    /// [`crate`]). Never blocks, never allocates.
    ///
    /// `now` also moves the balancer's clock, which dates releases (see [`release`](Self::release)): an
    /// acquire more than one clock epoch (see `clock.rs`) before or after it moves it to its own epoch,
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
        let mut slots = self.used();
        if let Some(seen) = self.clock.due(now) {
            #[cfg(feature = "probation")]
            if let Some(lease) = self.rotate_and_probe(slots, now, seen) {
                return Ok(lease);
            }
            #[cfg(not(feature = "probation"))]
            self.rotate(now, seen);
        }
        let mut rescans = 0;
        // The first choice is over the scan words alone (one word per node); if the node it names has no
        // room, the choices go on over the nodes with room (see `Prepared::choose_fast` in
        // `algorithm.rs`).
        let mut careful = false;
        loop {
            let choice = if careful {
                self.prepared.algorithm.choose(slots, rng)
            } else {
                careful = true;
                self.prepared.algorithm.choose_fast(slots, rng)
            };
            let i = match choice {
                Choice::Try(i) => i,
                Choice::Reject(Rejected::NoActiveNodes) if self.missed_a_member(&mut rescans) => {
                    slots = self.used();
                    continue;
                }
                Choice::Reject(r) => return Err(r),
            };
            let Some(s) = slots.get(i) else { continue };
            if let Some((c, inflight)) = admit(s) {
                return Ok(self.lease(s, i, c, inflight, now));
            }
            // The node filled up (or left) after the scan: the walk goes on.
        }
    }

    /// Whether a scan that found no active node raced a membership change, and should scan again. A scan
    /// reads the slots one at a time: a node added into a slot it had passed, while the only other
    /// member leaves from a slot it had not reached yet, is seen by neither read. The active count
    /// holds a member only once it is published (`change_active` runs after the publishing
    /// compare-and-swap), so a count above 0 means the next scan can find one. At most
    /// [`RESCANS`] rescans per acquire: under membership changes that never stop, the answer is the last
    /// scan's. Single-threaded, the count and the scan always agree, so no rescan happens and the draws
    /// are those of one scan.
    #[cold]
    #[inline(never)]
    fn missed_a_member(&self, rescans: &mut u32) -> bool {
        if *rescans >= RESCANS {
            return false;
        }
        *rescans += 1;
        // Acquire fence: the scan's relaxed loads of the control words now synchronise with the
        // membership changes whose writes they read (each is a Release or AcqRel compare-and-swap). A
        // scan that read a slot emptied by a removal thus sees, from here on, everything that happened
        // before that removal: an add of the same thread that came first, published and counted.
        fence(Acquire);
        // Acquire: pairs with the AcqRel update of `change_active`, which follows the member's
        // publication, so a rescan sees the member counted.
        (self.active.load(Acquire) >> 32) != 0
    }

    /// A retry's acquire: the configured algorithm over the members whose ids are not in `exclude` (the
    /// nodes this request already tried), so that a retry goes to another node while one has room; if
    /// none of them has room (all full, all excluded, or the lowest score's give-up rule refuses them), the
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
        if let Some(seen) = self.clock.due(now) {
            // A retry takes no timed probe: the node stays due, for the next rotation's acquire.
            self.rotate(now, seen);
        }
        // Relaxed: a vacant slot's id may be stale, but such a slot is no candidate whatever it holds;
        // an admitted one is re-read below after the admitting compare-and-swap.
        let skip = |s: &NodeSlot| exclude.contains(&s.id.load(Relaxed));
        loop {
            let i = match self.prepared.algorithm.choose_excluding(slots, rng, skip) {
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

    /// Moves the cached values to the epoch of `now`: a family's reading of a node changes only with a
    /// write (which refreshes its cache) or when the clock enters a new epoch (a bucket may leave the
    /// cascade's window, the lowest-score family's counters decay). So once per epoch one acquire claims
    /// the rotation (a compare-and-swap on the rotation word, which others that raced it lose and go on)
    /// and the family refreshes the cached values it ages at `now` (see `Prepared::rotate` in
    /// `algorithm.rs`); acquires never check an expiry per node. Releases take their reading at the
    /// rotation's epoch or later (see `Health::refresh`), so a release with a lagging clock cannot undo a
    /// rotation.
    ///
    /// An acquire up to one epoch behind the rotation does not rotate back (threads' clock readings
    /// interleave around a boundary); one further away, before or after (a clock jump, or a caller's bad
    /// `now`), rotates to its own epoch, so a single wild `now` misleads at most until the next acquire
    /// with a sane one. While a rotation runs, concurrent acquires may still see the previous epoch's
    /// values for the few nodes not yet refreshed: the decision of a moment earlier.
    ///
    /// Returns the slot due for a timed probe, if any (see
    /// [`LowestScore::probe_after_ns`](crate::balance::LowestScore::probe_after_ns)): the caller, the one
    /// acquire that ran the rotation, tries it first (a health check's `due_check`, which also moves
    /// the clock, leaves it).
    #[cold]
    #[inline(never)]
    pub(crate) fn rotate(&self, now: u64, seen: u64) -> Option<usize> {
        let epoch = self.clock.claim(now, seen)?;
        let algorithm = &self.prepared.algorithm;
        let refresh = |s: &NodeSlot| algorithm.refresh_cache(&s.health, now, self.scope(s));
        let horizon = self.clock.horizon(seen);
        #[cfg(feature = "slow")]
        algorithm.rotate(self.used(), now, horizon, epoch, &self.fastest, refresh);
        #[cfg(not(feature = "slow"))]
        algorithm.rotate(self.used(), now, horizon, epoch, refresh);
        #[cfg(feature = "probation")]
        return algorithm.due(self.used(), now, epoch);
        #[cfg(not(feature = "probation"))]
        None
    }

    /// [`rotate`](Self::rotate) for an acquire over `slots`: a timed probe's lease, if the rotation
    /// found a slot due and it has room (the acquire's first try).
    #[cfg(feature = "probation")]
    #[cold]
    #[inline(never)]
    fn rotate_and_probe(&self, slots: &[NodeSlot], now: u64, seen: u64) -> Option<Lease> {
        let i = self.rotate(now, seen)?;
        let s = slots.get(i)?;
        let (c, inflight) = admit(s)?;
        Some(self.lease(s, i, c, inflight, now))
    }

    /// Reports the outcome of a lease's call; `now` is monotonic nanoseconds.
    ///
    /// The release is dated at `now`, but never later than the end of the epoch after the balancer's
    /// clock epoch. The clock is the epoch of the newest acquire (acquires keep it; an epoch is the
    /// algorithm's: a quarter of the shorter half-life in the lowest-score family, 250 ms by default; the
    /// bucket width in the cascade's window, 5 s, or [`CLOCK_EPOCH_NS`](crate::balance::CLOCK_EPOCH_NS)
    /// under the average), so a release dated at its limit is one that could have come a moment after the
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
        self.release_loaded(lease, outcome, now, None)
    }

    /// [`release`](Self::release) with the load the node's server reported in its answer, if it sent
    /// one (see [`ServerLoad`]; `None` is exactly `release`): the same release, and the limiter's sample
    /// carries the report. A
    /// [`KneeLimit`](crate::limit::KneeLimit) reads it in place of the call's latency, so every client of
    /// a server that reports its load finds the same knee, a client that joins a loaded fleet included
    /// (within a minute of the node's last drop, as it reads the latency:
    /// [`armed_for_ns`](crate::limit::KneeLimit::armed_for_ns)); the other limiters and the health
    /// models ignore it. A report with an outcome the limiter does not read (`Failure` in the weighted
    /// family, `Ignored`, `Throttled` in the lowest-score family) is dropped with it.
    ///
    /// ```
    /// use weir::limit::{KneeLimit, LimitAlgorithm, ServerLoad};
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let config = Config { limit: LimitAlgorithm::Knee(KneeLimit::default()), ..Config::default() };
    /// let b = Balancer::new([const { NodeSlot::new() }; 1], config).unwrap();
    /// b.add(1).unwrap();
    /// let mut rng = Rng::with_seed(1);
    /// let mut leases: Vec<_> = (0..20).map(|_| b.acquire(0, &mut rng).unwrap()).collect();
    /// // The 20th call times out: the limit falls to 0.9 x 20 = 18, and the drop arms the knee.
    /// b.release(leases.pop().unwrap(), Outcome::Dropped, 1_000_000).unwrap();
    /// assert_eq!(b.node(1, 1_000_000).unwrap().limit, 18);
    /// // The 19th answers with the server 20 % past its knee: eased to 18 less 0.1, 17.9.
    /// let past = ServerLoad::from_utilization(1.2).unwrap();
    /// b.release_loaded(leases.pop().unwrap(), Outcome::Success, 2_000_000, Some(past)).unwrap();
    /// assert_eq!(b.node(1, 2_000_000).unwrap().limit, 17);
    /// // At 90 % of its knee (the hold band, above 1.75 / 2): held.
    /// let near = ServerLoad::from_utilization(0.9).unwrap();
    /// b.release_loaded(leases.pop().unwrap(), Outcome::Success, 3_000_000, Some(near)).unwrap();
    /// assert_eq!(b.node(1, 3_000_000).unwrap().limit, 17);
    /// # for lease in leases { b.release(lease, Outcome::Success, 4_000_000).unwrap(); }
    /// ```
    #[inline]
    pub fn release_loaded(
        &self,
        lease: Lease,
        outcome: Outcome,
        now: u64,
        load: Option<ServerLoad>,
    ) -> Result<(), ReleaseError> {
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
        let now = now.min(self.clock.horizon_now());
        let sample = self
            .prepared
            .algorithm
            .limit_reading(outcome)
            .filter(|_| live)
            .map(|dropped| Sample {
                rtt_ns: now.saturating_sub(lease.start),
                inflight: lease.inflight,
                dropped,
                now_ns: now,
                load,
                failed: dropped && outcome == Outcome::Failure,
            });
        if live {
            self.prepared.algorithm.record_outcome(
                &s.health,
                now,
                outcome,
                now.saturating_sub(lease.start),
                self.scope(s),
            );
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
                self.prepared.config.seed
                    ^ lease.id.rotate_left(32)
                    ^ lease.start
                    ^ (u64::from(lease.inflight) << 40),
            )
            .next_u64();
            algo.update(&s.limit, sm, random);
        }
        // SeqCst success: Release for the membership changes (every write above happens-before one that
        // sees the slot drained), and SeqCst because this decrement is one side of a store-buffering
        // pattern that a queue of waiting callers relies on: the release decrements, then loads the
        // waiter count (`Waiting::freed`, SeqCst there), while a joining waiter increments the count,
        // fences, then scans; of the two, at least one sees the other, so a slot freed here is never
        // missed by both (see the `Waiting` trait, and `rt::queue`, "Memory ordering"). The same
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
        // A slot came free: tell whoever waits for room (nothing for `()`; one load of the waiter count
        // for `rt::Waiters` when none wait).
        self.waiting.freed(self);
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

    /// A snapshot of the member with this id at `now`.
    ///
    /// ```
    /// use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
    /// let b = Balancer::new([const { NodeSlot::new() }; 2], Config::cascade()).unwrap();
    /// b.add(1).unwrap();
    /// let lease = b.acquire(0, &mut Rng::with_seed(1)).unwrap();
    /// b.release(lease, Outcome::Failure, 10).unwrap();
    /// let n = b.node(1, 10).unwrap();
    /// assert_eq!((n.window_finished, n.window_succeeded, n.success_rate), (1, 0, 0.0));
    /// assert!(b.node(2, 10).is_none());
    ///
    /// // The lowest-score family reports its decayed counters and the penalty it adds to in-flight.
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
        let algorithm = &self.prepared.algorithm;
        let v = s.health.view(algorithm, now);
        // Relaxed: a statistic.
        let rate = algorithm.reported_rate(&v, (self.active.load(Relaxed) >> 32) as u32);
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
            weight: algorithm.reported_weight(rate),
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
        self.waiting.tally(&mut st);
        st
    }
}

/// The most times one acquire scans again after a scan found no active node while the active count held
/// one (see `Balancer::missed_a_member`).
const RESCANS: u32 = 2;

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

impl<S: AsRef<[NodeSlot]>, W: Waiting> Drop for Balancer<S, W> {
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
