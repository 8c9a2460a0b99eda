//! The queue of callers waiting for room ([`Waiters`]) and its drain: what the waiting acquires
//! (`wait.rs`) join, and what the releases serve.
//!
//! # How a release reaches the queue
//! The core knows nothing of this queue. A [`Balancer`] is generic over who hears that room may have come
//! ([`Waiting`]); a [`HeapBalancer`](crate::HeapBalancer) has a `Waiters` (a balancer over other storage
//! gets one with `Balancer::<_, Waiters>::with_waiting`). The balancer calls [`Waiting::freed`] from
//! every release, after the decrement that frees its in-flight slot, and [`Waiting::entered`] when a node
//! enters rotation (an add, or the end of a lame duck). Both come here, to `Waiters::wake`: one load of
//! the waiter count, and when someone waits, a drain under the queue's lock (`Waiters::drain`): while a
//! caller waits at the front (or, once the queue stands, at the back), an acquire is made for it and the
//! lease it gets is handed over; a grant at the back sheds the bounded waiters it passed over
//! (`Waiters::shed_passed_over`), who pick up their answer where the served pick up their lease. The rules a caller sees are in the module docs of `rt` ("Waiting for
//! room"); how they are kept is here.
//!
//! # Memory ordering
//! The lost wake-up to rule out: a release frees the only slot and finds nobody waiting, while a caller
//! that is joining finds the slot still taken, so it waits although a slot is free. The release
//! decrements in-flight (a read-modify-write of the node's control word) and then loads the waiter count;
//! the joiner increments the count and then reads the control words (the drain's acquire). That is the
//! store-buffering pattern, which only sequential consistency rules out:
//!
//! - the release's decrement is a `SeqCst` read-modify-write (`Balancer::release`), after which it calls
//!   `Waiting::freed`, where `Waiters::wake` loads the count with `SeqCst`;
//! - the joiner increments the count with a `SeqCst` read-modify-write, then issues a `SeqCst` fence,
//!   then drains (every control-word read of the drain's acquire comes after the fence).
//!
//! Call the release's decrement D and count load L, the joiner's increment I, fence F and a control-word
//! read R. Suppose R misses D (reads a value before D in the word's modification order). As F comes
//! before R and D is `SeqCst`, F precedes D in the single total order S of `SeqCst` operations (C++20
//! \[atomics.order\] p4.3); D precedes L and I precedes F (program order), so I precedes L in S, and L, a
//! `SeqCst` load, cannot read a value from before I (p4.1). So L sees the joiner, or a later value, and
//! a later count of 0 means the joiner has left the queue already (count changes are made under the
//! lock, in queue order, and each waiter's decrement follows its increment). Either the joiner's drain
//! sees the free slot, or the release sees the joiner and drains for it: never neither.
//!
//! The drain needs nothing more: it runs under the lock, which orders it with every join and leave, and
//! a lease it grants is the core's (the admitting compare-and-swap's `Acquire`). The count's decrements
//! are made under the lock too and only their value matters (`Relaxed`).
//!
//! A node entering rotation is published by `AcqRel` writes, not `SeqCst` ones, so in the C++ model the
//! argument above does not cover it as it stands. In hardware it holds: on x86 every read-modify-write
//! is a full barrier, and on aarch64 a `SeqCst` load (`ldar`) is not reordered with an earlier
//! store-release, which the read-modify-writes that publish the node end with. So `Waiting::entered` (a
//! membership change, never on the hot path) issues a `SeqCst` fence before its load, which closes it in
//! the model too.
//!
//! loom treats `SeqCst` accesses as `AcqRel` (its README: fences are supported, `SeqCst` accesses are
//! not), so under `cfg(loom)` `Waiters::wake` issues a `SeqCst` fence before its load: the guarantee that
//! the release's `SeqCst` decrement-and-load pair has in C++20, stated in the form loom checks (see
//! `tests/loom_wait.rs`).

#[cfg(not(loom))]
use super::clock::monotonic_now;
use super::rng::thread_seed;
#[cfg(not(loom))]
use super::rng::with_thread_rng;
use super::wait::WaitError;
use crate::balance::{Balancer, Lease, NodeSlot, Rejected, Stats, Waiting};
use crate::internal::sync::Condvar;
use crate::internal::sync::{fence, AtomicU64, Mutex, MutexGuard, Ordering::*};
use core::fmt;
use core::task::Waker;
use fastrand::Rng;
use std::collections::VecDeque;
use std::sync::{Arc, PoisonError};
use std::vec::Vec;

/// The time the waiting acquires date their calls at: [`monotonic_now`]. Under loom, a time the model
/// sets ([`set_loom_clock`], 0 until it does): a model must take the same path each time loom replays a
/// schedule, and a clock that moves between replays (into a new epoch of the balancer's clock, say)
/// would change it.
#[inline]
pub(super) fn clock() -> u64 {
    #[cfg(loom)]
    return LOOM_CLOCK.with(core::cell::Cell::get);
    #[cfg(not(loom))]
    monotonic_now()
}

#[cfg(loom)]
std::thread_local! {
    /// The waiting acquires' clock under loom. A model's threads run on the OS thread of its test, so
    /// they all read the value the model set, and the tests that run at once each have their own.
    static LOOM_CLOCK: core::cell::Cell<u64> = const { core::cell::Cell::new(0) };
}

/// Under loom, sets the time the waiting acquires read (the models' stand-in for time passing between
/// two steps they order themselves, such as a waiter's join and a later one's).
#[cfg(loom)]
#[doc(hidden)]
pub fn set_loom_clock(now_ns: u64) {
    LOOM_CLOCK.with(|c| c.set(now_ns));
}

/// The generator ordinal of the queue's draws: `thread_seed(seed, QUEUE_ORDINAL)`, one no thread gets.
const QUEUE_ORDINAL: u64 = u64::MAX;

/// The queue of callers waiting for room: who a balancer's releases tell that room may have come (the
/// [`Waiting`] of a [`HeapBalancer`](crate::HeapBalancer), or of
/// `Balancer::<_, Waiters>::with_waiting`), and the waiting acquires' queue (see the module docs).
pub struct Waiters {
    /// How many callers are in `Queue::waiting`: the one word a release loads (see "Memory ordering").
    /// Changed under the lock only.
    pub(super) count: AtomicU64,
    /// `Config::max_waiters`.
    pub(super) bound: u32,
    /// [`STANDING_NS`] (a test may set another).
    pub(super) standing_ns: u64,
    /// What became of the callers that queued ([`Stats`]' wait counters).
    pub(super) tally: Tally,
    queue: Mutex<Queue>,
}

/// The wait counters of [`Stats`]. Each is changed under the queue's lock, in the same critical section
/// as the `count` change it goes with, so `waits == granted + timed_out + cancelled + count` holds
/// whenever the lock is free. `stats` reads them without the lock (`Relaxed`: statistics, which no other
/// value is read against; a reading during a join or leave may be a moment apart from `count`).
/// Only the waiting path writes them: a fail-fast acquire, and a release when nobody waits, never do.
pub(super) struct Tally {
    /// Callers that took a place in the queue (step 4) and stayed past its drain.
    pub(super) waits: AtomicU64,
    /// Callers a drain handed a lease to.
    pub(super) granted: AtomicU64,
    /// Callers that left because of their deadline: it passed, or a standing queue shed them before it
    /// (see [`Waiters::shed_passed_over`]).
    pub(super) timed_out: AtomicU64,
    /// Futures dropped while they waited.
    pub(super) cancelled: AtomicU64,
}

impl Tally {
    /// Counts one in `counter`: called under the queue's lock.
    pub(super) fn bump(counter: &AtomicU64) {
        // Relaxed: a statistic (see the type's docs); the lock orders it with the queue changes.
        counter.fetch_add(1, Relaxed);
    }
}

/// What the lock guards.
pub(super) struct Queue {
    /// The callers not served yet, in arrival order (so in ticket order).
    pub(super) waiting: VecDeque<Waiter>,
    /// Answers handed to callers that have not picked them up yet, in ticket order: a lease, or
    /// [`WaitError::Shed`].
    pub(super) answered: VecDeque<(u64, Result<Lease, WaitError>)>,
    /// How many of `waiting` are bounded (a drain looks for callers to shed only while some are).
    pub(super) bounded: usize,
    next_ticket: u64,
    /// The drains' generator, seeded on first use (the balancer's seed is not known at construction).
    pub(super) rng: Option<Rng>,
}

/// One waiting caller.
pub(super) struct Waiter {
    ticket: u64,
    /// When it joined, at [`clock`].
    since: u64,
    /// Its caller gives up at a deadline of its own: it may be shed (see [`Waiters::shed_passed_over`]).
    bounded: bool,
    pub(super) wake: Wake,
}

/// How long the oldest waiter of a balancer's queue must have waited for the queue to count as
/// standing, and be served newest first (see the module docs of [`rt`](crate::rt), "Draining"): 100 ms,
/// CoDel's interval (the time it gives a queue to drain before it counts as standing rather than a
/// burst).
pub const STANDING_NS: u64 = 100_000_000;

/// How to wake a waiting caller.
pub(super) enum Wake {
    /// A blocked thread, waiting on its own condition variable with the queue's lock.
    Thread(Arc<Condvar>),
    /// A task: the waker of its latest poll.
    Task(Waker),
}

impl Wake {
    fn wake(self) {
        match self {
            Wake::Thread(c) => c.notify_one(),
            Wake::Task(w) => w.wake(),
        }
    }
}

/// Where a caller stands after step 1 to 4 (see the module docs).
pub(super) enum Entered {
    Served(Lease),
    Queued(u64),
}

impl Queue {
    /// The answer handed to `ticket`, if a drain gave it one; picks it up.
    pub(super) fn take_answer(&mut self, ticket: u64) -> Option<Result<Lease, WaitError>> {
        let i = self.answered.binary_search_by_key(&ticket, |a| a.0).ok()?;
        self.answered.remove(i).map(|a| a.1)
    }

    /// Hands `answer` to the waiter `w` took out of `waiting`, and queues its wake-up.
    fn answer(
        &mut self,
        w: Waiter,
        answer: Result<Lease, WaitError>,
        woken: &mut Vec<(u64, Wake)>,
    ) {
        // `answered` stays in ticket order (its lookups are binary searches).
        let at = self.answered.partition_point(|a| a.0 < w.ticket);
        self.answered.insert(at, (w.ticket, answer));
        woken.push((w.ticket, w.wake));
    }

    /// Takes the waiter at `i` out of `waiting`, keeping the bounded count.
    fn take_waiter(&mut self, i: usize) -> Option<Waiter> {
        let w = self.waiting.remove(i)?;
        self.bounded -= usize::from(w.bounded);
        Some(w)
    }

    pub(super) fn position(&self, ticket: u64) -> Option<usize> {
        self.waiting
            .binary_search_by_key(&ticket, |w| w.ticket)
            .ok()
    }
}

impl Waiting for Waiters {
    fn new(bound: u32) -> Self {
        Waiters {
            count: AtomicU64::new(0),
            bound,
            standing_ns: STANDING_NS,
            tally: Tally {
                waits: AtomicU64::new(0),
                granted: AtomicU64::new(0),
                timed_out: AtomicU64::new(0),
                cancelled: AtomicU64::new(0),
            },
            queue: Mutex::new(Queue {
                waiting: VecDeque::new(),
                answered: VecDeque::new(),
                bounded: 0,
                next_ticket: 0,
                rng: None,
            }),
        }
    }

    #[inline]
    fn freed<S: AsRef<[NodeSlot]>>(&self, b: &Balancer<S, Self>) {
        self.wake(b);
    }

    /// The SeqCst fence orders the node's publication (the control word written before this call) before
    /// the load of the waiter count, as the release's SeqCst decrement does: with a joining waiter's
    /// SeqCst increment and fence, at least one of the two sees the other (see "Memory ordering"). Never
    /// hot.
    fn entered<S: AsRef<[NodeSlot]>>(&self, b: &Balancer<S, Self>) {
        fence(SeqCst);
        self.wake(b);
    }

    /// Fills in the wait counters of `st`, without the lock.
    fn tally(&self, st: &mut Stats) {
        let t = &self.tally;
        // Relaxed: statistics (see `Tally`).
        st.waits = t.waits.load(Relaxed);
        st.waits_granted = t.granted.load(Relaxed);
        st.waits_timed_out = t.timed_out.load(Relaxed);
        st.waits_cancelled = t.cancelled.load(Relaxed);
        st.waiting = self.count.load(Relaxed);
    }
}

impl Waiters {
    /// The queue. Nothing that runs under the lock panics (the core's acquire never does, and wakers are
    /// called after it is released), and every change to the queue is complete before the next, so a
    /// poisoned lock still guards a consistent queue.
    pub(super) fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes `ticket` out of the waiting callers; `false` if it is not there (it was answered: served, or
    /// shed).
    pub(super) fn leave(&self, q: &mut Queue, ticket: u64) -> bool {
        let Some(i) = q.position(ticket) else {
            return false;
        };
        q.take_waiter(i);
        // Relaxed: under the lock, and only the value matters (see "Memory ordering").
        self.count.fetch_sub(1, Relaxed);
        true
    }

    /// Serves the waiting callers after a slot may have come free: called by every release and by a node
    /// entering rotation (see [`Waiting`]). One load when nobody waits.
    #[inline]
    fn wake<S: AsRef<[NodeSlot]>>(&self, b: &Balancer<S, Waiters>) {
        // loom models SeqCst accesses as AcqRel; this fence is the guarantee the release's SeqCst
        // decrement and the SeqCst load below have in C++20, in the form loom checks (see "Memory ordering").
        #[cfg(loom)]
        fence(SeqCst);
        // SeqCst: the load of the store-buffering pattern with the joiners' increment (see "Memory ordering").
        if self.count.load(SeqCst) != 0 {
            self.serve(b);
        }
    }

    #[cold]
    #[inline(never)]
    fn serve<S: AsRef<[NodeSlot]>>(&self, b: &Balancer<S, Waiters>) {
        let mut woken = Vec::new();
        self.drain(b, &mut self.lock(), &mut woken);
        for (_, w) in woken {
            w.wake();
        }
    }

    /// While a caller waits at the front, acquires for it and hands it the lease; stops at the first
    /// refusal, which it returns. Runs under the lock; the callers to wake are pushed to `woken`, to be
    /// woken once the lock is released (a waker is the executor's code: it must not run under our lock).
    fn drain<S: AsRef<[NodeSlot]>>(
        &self,
        b: &Balancer<S, Waiters>,
        q: &mut Queue,
        woken: &mut Vec<(u64, Wake)>,
    ) -> Option<Rejected> {
        let seed = b.config().seed;
        let now = clock();
        // While the oldest waiter has waited less than `STANDING_NS`, the front; once it has waited
        // longer, the back: the newest waiter, whose caller has the most of its time left.
        let limit = self.standing_ns;
        loop {
            let newest = q
                .waiting
                .front()
                .is_some_and(|w| now.saturating_sub(w.since) > limit);
            let at = if newest { q.waiting.len() - 1 } else { 0 };
            let w = q.take_waiter(at)?;
            let rng = q
                .rng
                .get_or_insert_with(|| Rng::with_seed(thread_seed(seed, QUEUE_ORDINAL)));
            // Uncounted: an attempt on the waiter's behalf, not an answer to it (see `Stats`).
            match b.acquire_uncounted(now, rng) {
                Ok(lease) => {
                    // Relaxed: under the lock, and only the value matters (see "Memory ordering").
                    self.count.fetch_sub(1, Relaxed);
                    Tally::bump(&self.tally.granted);
                    let since = w.since;
                    q.answer(w, Ok(lease), woken);
                    if newest {
                        self.shed_passed_over(q, since, woken);
                    }
                }
                Err(refused) => {
                    q.bounded += usize::from(w.bounded);
                    if newest {
                        q.waiting.push_back(w);
                    } else {
                        q.waiting.push_front(w);
                    }
                    return Some(refused);
                }
            }
        }
    }

    /// A standing queue has just served the caller that joined at `served_since`, ahead of its oldest:
    /// each bounded caller that joined more than `STANDING_NS` before it was passed over by a newcomer,
    /// and leaves now, answered [`WaitError::Shed`] (counted as timed out), woken. Callers without a
    /// deadline stay, and so does a burst that joined together, however long it takes to drain (see the
    /// module docs of [`rt`](crate::rt), "Draining").
    fn shed_passed_over(&self, q: &mut Queue, served_since: u64, woken: &mut Vec<(u64, Wake)>) {
        let mut i = 0;
        // The earliest callers are at the front (arrival order): stop at the first that is not.
        while q.bounded != 0 {
            let Some(w) = q.waiting.get(i) else { break };
            if served_since.saturating_sub(w.since) <= self.standing_ns {
                break;
            }
            if !w.bounded {
                i += 1;
                continue;
            }
            let Some(w) = q.take_waiter(i) else { break };
            // Relaxed: under the lock, and only the value matters (see "Memory ordering").
            self.count.fetch_sub(1, Relaxed);
            Tally::bump(&self.tally.timed_out);
            q.answer(w, Err(WaitError::Shed), woken);
        }
    }

    /// Step 1 of the module docs: `Some` with the answer if nobody waits and it is final (a lease, or no
    /// node in rotation).
    pub(super) fn try_first<S: AsRef<[NodeSlot]>>(
        &self,
        b: &Balancer<S, Waiters>,
    ) -> Option<Result<Lease, WaitError>> {
        // Relaxed: only decides whether to try before queueing. A caller that reads a count a moment old
        // overtakes a waiter that joined that moment ago at most, which no caller could tell from arriving
        // a moment earlier; a joiner never misses a free slot (see "Memory ordering").
        if self.count.load(Relaxed) != 0 {
            return None;
        }
        let now = clock();
        let seed = b.config().seed;
        // Uncounted: a refusal here is not the caller's answer yet; the answer is counted where it is given.
        #[cfg(not(loom))]
        let first = with_thread_rng(seed, |rng| b.acquire_uncounted(now, rng));
        // loom runs its model threads on one OS thread, where they would share (and borrow twice) the
        // thread's generator: the models draw from a fresh one (the protocol does not depend on the draw).
        #[cfg(loom)]
        let first = b.acquire_uncounted(now, &mut Rng::with_seed(seed));
        match first {
            Ok(lease) => Some(Ok(lease)),
            Err(Rejected::NoActiveNodes) => Some(Err(WaitError::NoActiveNodes)),
            Err(_) => None,
        }
    }

    /// Steps 3 and 4 of the module docs: joins the queue (to be woken by `wake`) and drains it once.
    /// A `bounded` caller gives up at a deadline of its own, and may be shed.
    pub(super) fn join<S: AsRef<[NodeSlot]>>(
        &self,
        b: &Balancer<S, Waiters>,
        wake: Wake,
        bounded: bool,
    ) -> Result<Entered, WaitError> {
        let bound = self.bound;
        if bound == 0 {
            return Err(WaitError::QueueFull { max_waiters: 0 });
        }
        let mut woken = Vec::new();
        let (entered, ticket) = {
            let mut q = self.lock();
            if q.waiting.len() >= bound as usize {
                return Err(WaitError::QueueFull { max_waiters: bound });
            }
            let ticket = q.next_ticket;
            q.next_ticket += 1;
            q.waiting.push_back(Waiter {
                ticket,
                since: clock(),
                bounded,
                wake,
            });
            q.bounded += usize::from(bounded);
            // SeqCst: the increment of the store-buffering pattern with the releases' load (see "Memory
            // ordering").
            self.count.fetch_add(1, SeqCst);
            // SeqCst: every control word the drain below reads is read after this fence, so a release that
            // missed our increment is seen by the drain (see "Memory ordering").
            fence(SeqCst);
            let refused = self.drain(b, &mut q, &mut woken);
            // A caller the drain answered (counted granted, or shed) or left waiting has waited; one that
            // leaves for want of members has not (it is answered as at step 1).
            let entered = if let Some(answer) = q.take_answer(ticket) {
                Tally::bump(&self.tally.waits);
                answer.map(Entered::Served)
            } else if refused == Some(Rejected::NoActiveNodes) {
                self.leave(&mut q, ticket);
                Err(WaitError::NoActiveNodes)
            } else {
                Tally::bump(&self.tally.waits);
                Ok(Entered::Queued(ticket))
            };
            (entered, ticket)
        };
        for (answered, w) in woken {
            // Not ourselves: we are awake, and a task that woke itself would only be polled again.
            if answered != ticket {
                w.wake();
            }
        }
        entered
    }
}

impl fmt::Debug for Waiters {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Waiters")
            // Relaxed: a reading for display.
            .field("waiting", &self.count.load(Relaxed))
            .field("max_waiters", &self.bound)
            .finish()
    }
}
