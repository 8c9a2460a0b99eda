//! Guards that give back what they hold: a lease on a balancer borrowed ([`LeaseGuard`]) or shared through
//! an `Arc` ([`OwnedLeaseGuard`]), and a shedder's promise ([`PromiseGuard`]).
//!
//! All three behave alike: a method names the outcome and returns the core's result for it (the error the
//! core would give for a manual release or completion); dropping the guard without one gives the neutral
//! outcome (`Ignored` for a lease, failure for a promise), so a panic or an early return never leaks a
//! concurrency slot. Time is [`monotonic_now`] and randomness the thread's generator ([`with_thread_rng`]).
//!
//! A lease guard given a deadline ([`LeaseGuard::with_deadline`]) drops as [`Outcome::Dropped`] once the
//! deadline has passed: a call abandoned by an outside timer (`tokio::time::timeout`, a `select!` on a
//! sleep) is the node's timeout, not a cancellation, and has to count against it. Dropped before its
//! deadline, it is a cancellation: [`Outcome::Ignored`].

use super::clock::monotonic_now;
use super::rng::with_thread_rng;
use crate::balance::{Balancer, Lease, NodeSlot, Outcome, Rejected, ReleaseError, Waiting};
use crate::limit::ServerLoad;
use crate::overload::{NotInFlight, Overloaded, Promise, Shedder};
use core::ops::Deref;
use std::sync::Arc;
use std::time::Instant;

/// What a lease guard needs of its balancer, whatever holds it (a reference or an `Arc`).
trait TakesLeases {
    fn release_now(
        &self,
        lease: Lease,
        outcome: Outcome,
        load: Option<ServerLoad>,
    ) -> Result<(), ReleaseError>;
}

impl<S: AsRef<[NodeSlot]>, W: Waiting> TakesLeases for Balancer<S, W> {
    fn release_now(
        &self,
        lease: Lease,
        outcome: Outcome,
        load: Option<ServerLoad>,
    ) -> Result<(), ReleaseError> {
        self.release_loaded(lease, outcome, monotonic_now(), load)
    }
}

/// The body both lease guards share: the balancer handle and the lease, `None` once given back.
#[derive(Debug)]
struct Held<B: Deref>
where
    B::Target: TakesLeases,
{
    balancer: B,
    lease: Option<Lease>,
    /// Past this instant a drop without an outcome is a timeout (`Dropped`), before it a cancellation.
    deadline: Option<Instant>,
}

impl<B: Deref> Held<B>
where
    B::Target: TakesLeases,
{
    fn lease(&self) -> &Lease {
        // Only `complete` and `drop` take the lease, and both consume the guard.
        self.lease
            .as_ref()
            .unwrap_or_else(|| unreachable!("a guard's lease is taken only as the guard goes"))
    }

    fn take(&mut self) -> Lease {
        // As in `lease`: the lease is there until the guard goes, and `take` consumes the guard.
        self.lease
            .take()
            .unwrap_or_else(|| unreachable!("a guard's lease is taken only as the guard goes"))
    }

    fn complete(mut self, outcome: Outcome, load: Option<ServerLoad>) -> Result<(), ReleaseError> {
        match self.lease.take() {
            Some(lease) => self.balancer.release_now(lease, outcome, load),
            None => Err(ReleaseError::InvalidLease),
        }
    }
}

impl<B: Deref> Drop for Held<B>
where
    B::Target: TakesLeases,
{
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            let outcome = match self.deadline {
                // Read the clock only for a guard that has a deadline: a plain guard's drop stays free.
                Some(deadline) if Instant::now() >= deadline => Outcome::Dropped,
                _ => Outcome::Ignored,
            };
            // The only possible error is that the node was removed meanwhile: nothing left to do.
            let _ = self.balancer.release_now(lease, outcome, None);
        }
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl<S: AsRef<[NodeSlot]>, W: Waiting> Balancer<S, W> {
    /// Acquires at [`monotonic_now`] with this thread's generator and returns a guard that releases the
    /// lease when told the outcome, or as [`Outcome::Ignored`] if dropped without one.
    ///
    /// ```
    /// use weir::{Config, HeapBalancer, Outcome};
    /// let b = HeapBalancer::with_capacity(2, Config::default()).unwrap();
    /// b.add(1).unwrap();
    /// {
    ///     let guard = b.acquire_guard().unwrap();
    ///     assert_eq!(guard.node_id(), 1);
    ///     guard.complete(Outcome::Success).unwrap();
    /// }
    /// drop(b.acquire_guard().unwrap()); // released as Ignored
    /// let stats = b.stats();
    /// assert_eq!((stats.released(Outcome::Success), stats.released(Outcome::Ignored)), (1, 1));
    /// ```
    pub fn acquire_guard(&self) -> Result<LeaseGuard<'_, S, W>, Rejected> {
        let now = monotonic_now();
        let lease = with_thread_rng(self.config().seed, |rng| self.acquire(now, rng))?;
        Ok(LeaseGuard(Held {
            balancer: self,
            lease: Some(lease),
            deadline: None,
        }))
    }

    /// [`acquire_guard`](Self::acquire_guard) for a balancer shared through an `Arc`: the guard holds a
    /// clone of the `Arc`, so it can move into a spawned task or live in a struct (tokio's
    /// `acquire_owned`, for leases).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use weir::{Config, HeapBalancer, Outcome};
    /// let b = Arc::new(HeapBalancer::with_capacity(2, Config::default()).unwrap());
    /// b.add(7).unwrap();
    /// let guard = Arc::clone(&b).acquire_owned().unwrap();
    /// std::thread::spawn(move || guard.complete(Outcome::Success))
    ///     .join()
    ///     .unwrap()
    ///     .unwrap();
    /// assert_eq!(b.stats().released(Outcome::Success), 1);
    /// ```
    pub fn acquire_owned(self: Arc<Self>) -> Result<OwnedLeaseGuard<S, W>, Rejected> {
        let now = monotonic_now();
        let lease = with_thread_rng(self.config().seed, |rng| self.acquire(now, rng))?;
        Ok(OwnedLeaseGuard(Held {
            balancer: self,
            lease: Some(lease),
            deadline: None,
        }))
    }
}

/// A lease that releases itself, borrowing its balancer: from [`Balancer::acquire_guard`].
/// [`complete`](LeaseGuard::complete) reports the outcome at [`monotonic_now`]; dropping the guard
/// without completing reports [`Outcome::Ignored`].
#[derive(Debug)]
#[must_use = "dropping the guard at once releases the lease as Ignored"]
pub struct LeaseGuard<'a, S: AsRef<[NodeSlot]>, W: Waiting = ()>(Held<&'a Balancer<S, W>>);

/// A lease that releases itself, holding an `Arc` of its balancer: from [`Balancer::acquire_owned`].
/// It is `Send` and `'static` when the storage is, so it can outlive the scope that acquired it.
///
/// ```
/// use std::sync::Arc;
/// use weir::rt::{OwnedLeaseGuard, Waiters};
/// use weir::{Config, HeapBalancer, NodeSlot, Outcome};
///
/// /// A call in progress, kept in a struct until its response arrives (`HeapOwnedLeaseGuard` names the
/// /// same type).
/// struct Pending {
///     lease: OwnedLeaseGuard<Box<[NodeSlot]>, Waiters>,
/// }
///
/// let b = Arc::new(HeapBalancer::with_capacity(4, Config::default()).unwrap());
/// b.add(1).unwrap();
/// let pending = Pending { lease: Arc::clone(&b).acquire_owned().unwrap() };
/// assert_eq!(pending.lease.node_id(), 1);
/// pending.lease.complete(Outcome::Failure).unwrap();
/// ```
#[derive(Debug)]
#[must_use = "dropping the guard at once releases the lease as Ignored"]
pub struct OwnedLeaseGuard<S: AsRef<[NodeSlot]>, W: Waiting = ()>(Held<Arc<Balancer<S, W>>>);

impl<'a, S: AsRef<[NodeSlot]>, W: Waiting> LeaseGuard<'a, S, W> {
    /// Wraps a lease that `balancer` granted (the waiting acquires hand leases over this way).
    pub(crate) fn from_lease(balancer: &'a Balancer<S, W>, lease: Lease) -> Self {
        LeaseGuard(Held {
            balancer,
            lease: Some(lease),
            deadline: None,
        })
    }
}

impl<S: AsRef<[NodeSlot]>, W: Waiting> OwnedLeaseGuard<S, W> {
    /// Wraps a lease that `balancer` granted (the waiting acquires hand leases over this way).
    pub(crate) fn from_lease(balancer: Arc<Balancer<S, W>>, lease: Lease) -> Self {
        OwnedLeaseGuard(Held {
            balancer,
            lease: Some(lease),
            deadline: None,
        })
    }
}

/// The accessors and the completion both lease guards share.
macro_rules! lease_guard_methods {
    ($guard:ident $(<$lt:lifetime>)?) => {
        impl<$($lt,)? S: AsRef<[NodeSlot]>, W: Waiting> $guard<$($lt,)? S, W> {
            /// The id of the node to call.
            ///
            /// ```
            /// let b = weir::HeapBalancer::with_capacity(1, weir::Config::default()).unwrap();
            /// b.add(3).unwrap();
            /// assert_eq!(b.acquire_guard().unwrap().node_id(), 3);
            /// ```
            pub fn node_id(&self) -> u64 {
                self.0.lease().node_id()
            }

            /// The lease the guard holds (to read its fields; the guard still releases it).
            ///
            /// ```
            /// let b = weir::HeapBalancer::with_capacity(1, weir::Config::default()).unwrap();
            /// b.add(3).unwrap();
            /// let guard = b.acquire_guard().unwrap();
            /// assert_eq!(guard.lease().inflight_at_acquire(), 1);
            /// ```
            pub fn lease(&self) -> &Lease {
                self.0.lease()
            }

            /// Takes the lease out of the guard, which then releases nothing: the caller releases it
            /// with [`Balancer::release`] (the C and Python layers hand waiting acquires' leases over
            /// this way).
            ///
            /// ```
            /// use weir::{Config, HeapBalancer, Outcome};
            /// let b = HeapBalancer::with_capacity(1, Config::default()).unwrap();
            /// b.add(3).unwrap();
            /// let lease = b.acquire_guard().unwrap().into_lease();
            /// assert_eq!(b.stats().in_flight, 1); // the guard's drop released nothing
            /// b.release(lease, Outcome::Success, weir::rt::monotonic_now()).unwrap();
            /// assert_eq!(b.stats().in_flight, 0);
            /// ```
            pub fn into_lease(mut self) -> Lease {
                self.0.take()
            }

            /// Releases the lease with `outcome` at [`monotonic_now`]; the result is
            /// [`Balancer::release`]'s (an error only if the node was removed meanwhile).
            ///
            /// ```
            /// use weir::{Config, HeapBalancer, Outcome};
            /// let b = HeapBalancer::with_capacity(1, Config::default()).unwrap();
            /// b.add(3).unwrap();
            /// let guard = b.acquire_guard().unwrap();
            /// b.remove(3).unwrap();
            /// assert!(guard.complete(Outcome::Success).is_err()); // NodeRemoved
            /// ```
            pub fn complete(self, outcome: Outcome) -> Result<(), ReleaseError> {
                self.0.complete(outcome, None)
            }

            /// [`complete`](Self::complete) with the load the server reported in its answer: the
            /// release is [`Balancer::release_loaded`]'s (see [`ServerLoad`]).
            ///
            /// ```
            /// use weir::limit::ServerLoad;
            /// use weir::{Config, HeapBalancer, Outcome};
            /// let b = HeapBalancer::with_capacity(1, Config::default()).unwrap();
            /// b.add(3).unwrap();
            /// let load = ServerLoad::from_utilization(0.4).unwrap();
            /// b.acquire_guard().unwrap().complete_loaded(Outcome::Success, load).unwrap();
            /// assert_eq!(b.stats().released(Outcome::Success), 1);
            /// ```
            pub fn complete_loaded(self, outcome: Outcome, load: ServerLoad) -> Result<(), ReleaseError> {
                self.0.complete(outcome, Some(load))
            }

            /// Gives the call a deadline: dropped without an outcome at or after `deadline`, the guard
            /// releases as [`Outcome::Dropped`] (the call timed out: it counts against the node and
            /// the limiter backs off); dropped before it, as [`Outcome::Ignored`] (the caller
            /// cancelled). [`complete`](Self::complete) is unchanged.
            ///
            /// This is what makes an outside timer record timeouts: `tokio::time::timeout_at(d,
            /// call(guard.with_deadline(d)))` drops the guard when `d` passes, and the drop sees the
            /// deadline passed. Give the timer the same instant (a timer fires at its deadline or
            /// after, never before): a std `Instant` or anything that converts into one, such as
            /// tokio's `tokio::time::Instant`. The drop reads [`Instant::now`] only for a guard that
            /// has a deadline, and that is the real clock: under a simulated or paused one (tokio's
            /// `start_paused`), bound the call with [`within`](Self::within) and the runtime's timer.
            ///
            /// ```
            /// use std::time::{Duration, Instant};
            /// use weir::{Config, HeapBalancer, Outcome};
            /// let b = HeapBalancer::with_capacity(1, Config::default()).unwrap();
            /// b.add(1).unwrap();
            /// // Abandoned after its deadline: a timeout.
            /// drop(b.acquire_guard().unwrap().with_deadline(Instant::now()));
            /// // Abandoned long before it: a cancellation.
            /// let later = Instant::now() + Duration::from_secs(3600);
            /// drop(b.acquire_guard().unwrap().with_deadline(later));
            /// let st = b.stats();
            /// assert_eq!((st.released(Outcome::Dropped), st.released(Outcome::Ignored)), (1, 1));
            /// ```
            pub fn with_deadline(mut self, deadline: impl Into<Instant>) -> Self {
                self.0.deadline = Some(deadline.into());
                self
            }

            /// The deadline given by [`with_deadline`](Self::with_deadline), if any.
            ///
            /// ```
            /// let b = weir::HeapBalancer::with_capacity(1, weir::Config::default()).unwrap();
            /// b.add(3).unwrap();
            /// assert_eq!(b.acquire_guard().unwrap().deadline(), None);
            /// ```
            pub fn deadline(&self) -> Option<Instant> {
                self.0.deadline
            }
        }
    };
}
lease_guard_methods!(LeaseGuard<'a>);
lease_guard_methods!(OwnedLeaseGuard);

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl Shedder {
    /// Decides at [`monotonic_now`] and returns a guard that completes the promise:
    /// [`PromiseGuard::success`] records the response time up to then; dropping the guard without
    /// completing it (an early return, a panic) completes it as a failure, so nothing leaks in flight.
    ///
    /// ```
    /// use weir::overload::ShedderConfig;
    /// let s = weir::Shedder::new(ShedderConfig::default()).unwrap();
    /// s.allow_guard(100).unwrap().success().unwrap();
    /// drop(s.allow_guard(100).unwrap()); // completed as a failure
    /// let st = s.stats(0);
    /// assert_eq!((st.succeeded, st.failed, st.in_flight), (1, 1, 0));
    /// ```
    pub fn allow_guard(&self, cpu: u32) -> Result<PromiseGuard<'_>, Overloaded> {
        let promise = self.allow(cpu, monotonic_now())?;
        Ok(PromiseGuard {
            shedder: self,
            promise: Some(promise),
        })
    }
}

/// A [`Promise`] that completes itself: see [`Shedder::allow_guard`]. Like the lease guards, its
/// completions return the core's result, and dropping it completes it with the neutral outcome (failure).
#[derive(Debug)]
#[must_use = "dropping the guard at once completes the request as a failure"]
pub struct PromiseGuard<'a> {
    shedder: &'a Shedder,
    promise: Option<Promise>,
}

impl PromiseGuard<'_> {
    /// Completes the request as a success at [`monotonic_now`]: [`Shedder::success`]'s result.
    ///
    /// ```
    /// let s = weir::Shedder::new(Default::default()).unwrap();
    /// assert_eq!(s.allow_guard(0).unwrap().success(), Ok(()));
    /// ```
    pub fn success(mut self) -> Result<(), NotInFlight> {
        match self.promise.take() {
            Some(p) => self.shedder.success(p, monotonic_now()),
            None => Err(NotInFlight),
        }
    }

    /// Completes the request as a failure: [`Shedder::failure`]'s result.
    ///
    /// ```
    /// let s = weir::Shedder::new(Default::default()).unwrap();
    /// assert_eq!(s.allow_guard(0).unwrap().failure(), Ok(()));
    /// assert_eq!(s.stats(0).failed, 1);
    /// ```
    pub fn failure(mut self) -> Result<(), NotInFlight> {
        match self.promise.take() {
            Some(p) => self.shedder.failure(p),
            None => Err(NotInFlight),
        }
    }
}

impl Drop for PromiseGuard<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.promise.take() {
            // The only error is "nothing in flight", impossible for a guard's own promise.
            let _ = self.shedder.failure(p);
        }
    }
}
