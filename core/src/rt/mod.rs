//! `std` conveniences: a monotonic clock, per-thread random generators, guards that release what they
//! hold, calls under a deadline, heap-allocated slot storage, a balancer over the caller's keys, the
//! outcomes of I/O errors, and acquires that wait for room. Nothing here is needed to use the core; it
//! saves `std` users the plumbing.
//!
//! | file | what |
//! |---|---|
//! | `clock.rs` | [`monotonic_now`], the `now` every core call takes |
//! | `rng.rs` | [`with_thread_rng`] and [`thread_seed`]: one generator per thread and balancer seed |
//! | `guard.rs` | [`LeaseGuard`], [`OwnedLeaseGuard`] and [`PromiseGuard`]: release on completion or drop |
//! | `heap.rs` | [`HeapBalancer`]: a balancer over a boxed slice of slots; its guards' and waits' names ([`HeapOwnedLeaseGuard`], ...) |
//! | `keyed.rs` | [`Keyed`]: a balancer over the caller's keys (addresses, names), its guards say the key to call |
//! | `call.rs` | [`LeaseGuard::within`] and [`Wait::within`]: a call or a wait bounded by the caller's timer |
//! | `outcome.rs` | [`Outcome::from_io_error`](crate::Outcome::from_io_error): the outcome of a failed I/O call |
//! | `queue.rs` | [`Waiters`]: the queue of callers waiting for room, its drain, and how a release reaches it |
//! | `wait.rs` | [`acquire_wait`], [`acquire_async`] ([`Wait`]), their owned forms, [`WaitError`]: waiting for room |
//!
//! # Calling a backend
//! The way to call a backend is under a lease, until a deadline: [`LeaseGuard::within`] (and
//! [`OwnedLeaseGuard::within`], [`KeyedGuard::within`]) races the call against the caller's timer, a
//! future that completes at the deadline (with tokio, `tokio::time::sleep_until(deadline)`). The answer
//! is released with the caller's classification of it; the timer winning releases
//! [`Outcome::Dropped`] (a timeout counts against the node); dropping the call (a cancellation) releases
//! [`Outcome::Ignored`]. The timer is the caller's because the core depends on no runtime: one adapter
//! serves every executor, and simulated or paused time works as the runtime's does. Where an outside
//! timer ends the call instead (`tokio::time::timeout_at(deadline, ...)` around code holding the
//! lease), [`LeaseGuard::with_deadline`] gives the lease the same deadline, and its drop records
//! `Dropped` once the deadline has passed. [`Keyed`] balances over the caller's own keys.
//!
//! ```
//! use std::future::{pending, ready, Future};
//! use std::pin::pin;
//! use std::task::{Context, Poll, Waker};
//! use weir::rt::{DeadlinePassed, Keyed};
//! use weir::{Config, Outcome};
//!
//! let backends = Keyed::with_capacity(8, Config::default()).unwrap();
//! backends.add("10.0.0.1:80").unwrap();
//! let classify = |status: &u16| Outcome::from_http_status(*status).unwrap_or(Outcome::Failure);
//! let mut cx = Context::from_waker(Waker::noop()); // an executor would pass its own
//!
//! // A backend that never answers, and a deadline that has passed (tokio: sleep_until(deadline)):
//! let lease = backends.acquire().unwrap();
//! let call = lease.within(ready(()), pending::<u16>(), classify);
//! assert_eq!(pin!(call).poll(&mut cx), Poll::Ready(Err(DeadlinePassed)));
//! assert_eq!(backends.balancer().stats().released(Outcome::Dropped), 1);
//! ```
//!
//! # Waiting for room
//! [`acquire`] fails fast. The waiting acquires wait in a bounded queue, first come first served until
//! the queue stands, then newest first (see "Draining" below): blocking until
//! a deadline ([`acquire_wait`], [`acquire_wait_owned`]), or as a future that any executor can poll
//! ([`acquire_async`], [`acquire_async_owned`]). They return the guards of [`acquire_guard`].
//!
//! ```
//! use std::time::{Duration, Instant};
//! use weir::limit::{FixedLimit, LimitAlgorithm};
//! use weir::rt::WaitError;
//! use weir::{Config, HeapBalancer, Outcome};
//!
//! let config = Config {
//!     limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }),
//!     max_waiters: 64,
//!     ..Config::default()
//! };
//! let b = HeapBalancer::with_capacity(2, config).unwrap();
//! b.add(1).unwrap();
//! let held = b.acquire_guard().unwrap();
//! // Node 1 is at its limit: wait up to 5 ms for room. None comes.
//! let soon = Instant::now() + Duration::from_millis(5);
//! assert_eq!(b.acquire_wait(soon).err(), Some(WaitError::Timeout));
//! let later = Instant::now() + Duration::from_secs(10);
//! std::thread::scope(|s| {
//!     let waiter = s.spawn(|| b.acquire_wait(later).map(|lease| lease.node_id()));
//!     std::thread::sleep(Duration::from_millis(5));
//!     b.add(2).unwrap(); // a node entering rotation serves the waiter (a release would too)
//!     assert_eq!(waiter.join().unwrap(), Ok(2));
//! });
//! held.complete(Outcome::Success).unwrap();
//! ```
//!
//! **What a waiting acquire does**, in this order:
//! 1. If nobody waits, it tries [`acquire`] at once (at [`monotonic_now`], with the thread's generator,
//!    as [`acquire_guard`] does) and returns the lease it gets. A refusal for want of members
//!    ([`Rejected::NoActiveNodes`]) fails at once with [`WaitError::NoActiveNodes`]: a waiting acquire
//!    waits for room, not for membership.
//! 2. (Blocking forms) If its deadline has passed, it fails with [`WaitError::Timeout`].
//! 3. If [`Config::max_waiters`] callers wait already, it fails fast with [`WaitError::QueueFull`]. With
//!    `max_waiters == 0` nobody ever waits: every waiting acquire that step 1 cannot serve gets
//!    `QueueFull`.
//! 4. It joins the back of the queue, then drains the queue once (below). If that served it, it returns
//!    the lease. If the drain stopped because no node is in rotation, it leaves with
//!    [`WaitError::NoActiveNodes`] (as in step 1).
//! 5. It waits until a drain hands it a lease, or sheds it ([`WaitError::Shed`], below), or (blocking
//!    forms) its deadline passes: it then leaves the queue with [`WaitError::Timeout`], unless a lease
//!    was handed to it at that same instant, which it keeps. The async forms have no timer of their own: the deadline is the caller's timer, given to
//!    [`Wait::within`] (which then ends the wait as a timeout) or raced outside (`tokio::time::timeout`,
//!    a `select!`: dropping the future is a cancellation); they join on their first poll, and dropping
//!    the future leaves the queue.
//!
//! **Draining.** Whenever a slot may have come free (every [`release`], a node entering rotation through
//! [`add`] or [`set_lame_duck`], and each join), the queue is drained: while a caller waits at its
//! front, an [`acquire`] is made for that caller; a lease it grants is handed over and the caller woken;
//! the drain stops at the first refusal. So waiters are served in arrival order, and a new waiting caller
//! never overtakes one that waits (step 1 tries at once only when nobody waits), while the queue is a
//! burst that drains.
//!
//! **A standing queue is served newest first.** Once the oldest waiter has waited more than 100 ms
//! (CoDel's interval: a queue that has not drained in that time is standing, not a burst), each drain
//! serves the back of the queue instead, the newest waiter, until the oldest has waited less again. A
//! standing queue means the nodes take fewer calls than arrive; served in arrival order, every caller
//! would wait as long as the queue is deep, and the calls sent would be the ones with the least time
//! left, sent to time out at a node that then works for nobody (so the overload outlasts its cause).
//! Newest first, the calls sent have the most time left. In the simulator's at-capacity scenarios, where
//! the client's deadline covers the wait, this took the default from 33.5 % to 83.8 % of requests
//! answered after a 3 s blip of one node (`capacity_blip`), and from 25.6 % to 72.2 % after a cold
//! restart.
//!
//! **A standing queue sheds the waiters it passes over** (CoDel's queue timeout, in the form Facebook
//! pairs with adaptive LIFO). Served newest first, the oldest waiters would sit until their deadline,
//! unsent: each costs its caller the whole deadline, where a fail-fast refusal costs nothing. So whenever
//! a drain of a standing queue serves a waiter that joined more than 100 ms (the same interval) after the
//! oldest, every waiter with a deadline that joined more than 100 ms before the one served leaves at
//! once with [`WaitError::Shed`], woken, and counted in `waits_timed_out` (it leaves for its deadline,
//! before it passes). A caller may answer it as a fail-fast refusal, or retry: a retry joins the back,
//! which a standing queue serves first. Only a newcomer served ahead sheds: a queue that waits out an
//! outage (no room for anyone) keeps its waiters until room comes or their deadlines pass, and a burst
//! that joined together drains whole, however long it takes. A waiter with a deadline is a blocking one
//! ([`acquire_wait`]) or an async one given its timer ([`Wait::within`], or [`Wait::bounded`] where the
//! caller races its own); an async one without one said it waits as long as it takes, and is never shed
//! (it can then wait as long as the queue stands). In the simulator's at-capacity scenarios this halves
//! the default's client mean (`capacity_flapping` 288 to 111 ms) and brings the knee rows' within the
//! bound the baselines set on all but two, at 0.4 point of success at most (1.1 for the default on one;
//! see `sim/README.md`). The fail-fast calls
//! ([`acquire`], [`acquire_guard`]) do not queue: they may take a slot that a waiter wanted, but they
//! never wait. Callers that were already waiting when the last node left rotation keep waiting (for
//! their deadline, or for a node to come back).
//!
//! The drain runs on the thread that released (or added, or joined), under the queue's lock. Its
//! acquires are dated at [`monotonic_now`], so a balancer that is waited on should take that clock
//! everywhere. They draw from the queue's own generator, seeded [`thread_seed`]`(seed, u64::MAX)` (an
//! ordinal no thread gets), so the drains' draws follow the balancer's seed whichever thread runs them.
//!
//! **Cancellation.** Dropping a [`Wait`] or [`WaitOwned`] leaves the queue. If a lease had been handed
//! to it already, that lease is released as [`Outcome::Ignored`] (no health or limit update), and that
//! release drains the queue: the slot goes to the next waiter. A lease is never lost or leaked. (A
//! future that is forgotten, `mem::forget`, rather than dropped keeps its place, and a lease handed to
//! it, for good: as with any guard, forgetting it leaks what it holds.) A caller whose own timer ends
//! the wait can say so instead of dropping: [`Wait::time_out`] leaves the queue as a timeout (and
//! returns a lease handed over meanwhile).
//!
//! **Counting.** [`Stats`] counts refusals and waits apart. A waiting acquire's answer is counted once:
//! a lease as any lease; an error as a refusal ([`Stats::rejected_all_busy`] for
//! [`WaitError::QueueFull`] and [`WaitError::Timeout`], [`Stats::rejected_no_active`] for
//! [`WaitError::NoActiveNodes`]). The attempts it makes for its caller on the way (step 1, and each
//! drain) are not refusals. One that queues at step 4 (and stays past that join's drain) counts in
//! [`Stats::waits`], and then in exactly one of: [`Stats::waits_granted`] when a drain hands it a lease
//! (its own join's drain included; a lease handed to a future dropped before it picked it up counts
//! here too, and goes back as [`Outcome::Ignored`]), [`Stats::waits_timed_out`] when it leaves at its
//! deadline (or [`Wait::time_out`]), [`Stats::waits_cancelled`] when its future is dropped while it
//! waits; until then it is one of the [`Stats::waiting`]. So `waits == waits_granted + waits_timed_out +
//! waits_cancelled + waiting`. A future ended by `tokio::time::timeout` is dropped: cancelled, not a
//! refusal (it gave its caller no answer).
//!
//! **Costs.** When nobody waits, a release or a node entering rotation pays one load of the waiter count
//! (a plain `mov` on x86), and the fail-fast calls pay nothing (a refusal's one relaxed increment, as
//! ever). The wait counters are written only on the waiting path, under the lock. The lock (a `std::sync::Mutex` around a
//! `VecDeque` of waiters) and any allocation are on the waiting path only: joining, leaving, and the
//! drains of the releases that find the count non-zero.
//!
//! [`acquire`]: crate::Balancer::acquire
//! [`acquire_guard`]: crate::Balancer::acquire_guard
//! [`acquire_wait`]: crate::Balancer::acquire_wait
//! [`acquire_wait_owned`]: crate::Balancer::acquire_wait_owned
//! [`acquire_async`]: crate::Balancer::acquire_async
//! [`acquire_async_owned`]: crate::Balancer::acquire_async_owned
//! [`release`]: crate::Balancer::release
//! [`add`]: crate::Balancer::add
//! [`set_lame_duck`]: crate::Balancer::set_lame_duck
//! [`Rejected::NoActiveNodes`]: crate::balance::Rejected::NoActiveNodes
//! [`Config::max_waiters`]: crate::Config::max_waiters
//! [`Stats`]: crate::balance::Stats
//! [`Stats::rejected_all_busy`]: crate::balance::Stats::rejected_all_busy
//! [`Stats::rejected_no_active`]: crate::balance::Stats::rejected_no_active
//! [`Stats::waits`]: crate::balance::Stats::waits
//! [`Stats::waits_granted`]: crate::balance::Stats::waits_granted
//! [`Stats::waits_timed_out`]: crate::balance::Stats::waits_timed_out
//! [`Stats::waits_cancelled`]: crate::balance::Stats::waits_cancelled
//! [`Stats::waiting`]: crate::balance::Stats::waiting
//! [`Outcome::Ignored`]: crate::Outcome::Ignored
//! [`Outcome::Dropped`]: crate::Outcome::Dropped

mod call;
mod clock;
mod guard;
mod heap;
mod keyed;
mod outcome;
mod queue;
mod rng;
mod wait;

pub use call::DeadlinePassed;
pub use clock::monotonic_now;
pub use guard::{LeaseGuard, OwnedLeaseGuard, PromiseGuard};
pub use heap::{HeapBalancer, HeapLeaseGuard, HeapOwnedLeaseGuard, HeapWait, HeapWaitOwned};
pub use keyed::{Keyed, KeyedGuard};
#[cfg(loom)]
pub use queue::set_loom_clock;
pub use queue::{Waiters, STANDING_NS};
pub use rng::{thread_seed, with_thread_rng};
pub use wait::{Wait, WaitError, WaitOwned};
