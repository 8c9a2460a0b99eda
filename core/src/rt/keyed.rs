//! A balancer over keys of the caller's type (addresses, names, URLs): [`Keyed`] maps each key to a weir
//! node id, so that a lease says which key to call and no caller keeps its own id-to-key map.
//!
//! # Costs
//! Membership ([`Keyed::add`], [`Keyed::remove`]) takes a `Mutex` and may allocate (the key's `Arc`, the
//! map's growth): it is rare. The hot path allocates nothing and takes no `Mutex`: an acquire is the
//! balancer's, then one read of the chosen node's own entry, a `RwLock` that only membership writes, to
//! clone the key's `Arc` into the guard (an uncontended read-lock and unlock, two atomic read-modify-writes
//! on the node's own entry, not a lock shared by all nodes). A safe, dependency-free reader of a shared
//! pointer that a writer can replace does not exist in `std`; the entry's lock is that reader, and
//! writers hold it for one pointer's store. Measured against a plain [`OwnedLeaseGuard`] acquire and
//! release over 8 nodes, single-threaded on a loaded 2-core x86 machine: about 300 ns a pair against
//! 240–270 ns, 40–60 ns more.
//!
//! [`OwnedLeaseGuard`]: crate::rt::OwnedLeaseGuard
//!
//! A node id is `generation << 32 | index`: the index is the key's entry, so finding the key of a lease
//! is one bounds-checked index and one comparison, no hashing. Every addition takes a new generation, so
//! a key added again is a new weir node: leases of the old one release as stale, and the old node's
//! history never passes to the new one.

use super::heap::{HeapBalancer, HeapOwnedLeaseGuard};
use super::wait::WaitError;
use crate::balance::{Config, ConfigError, MembershipError, Outcome, Rejected, ReleaseError};
use crate::limit::ServerLoad;
use core::fmt;
use core::future::Future;
use core::hash::Hash;
use std::boxed::Box;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;
use std::vec::Vec;

/// How many times an acquire tries again when the node it got was removed before its key was read: each
/// retry needs a removal that raced it, so more than a few means the membership churns faster than
/// calls are made.
const STALE_RETRIES: usize = 4;

/// A key and the node id it was added as.
struct Entry<K> {
    id: u64,
    key: Arc<K>,
}

/// What membership changes keep under the `Mutex`.
struct Members<K> {
    by_key: HashMap<Arc<K>, u64>,
    free: Vec<u32>,
    generation: u32,
}

/// A balancer over keys: any `Hash + Eq` type (a `SocketAddr`, a `String`, an `http::Uri`'s authority).
/// Leases come as [`KeyedGuard`]s, which say the key to call and release like the other guards.
///
/// Thread safety: `Keyed<K>` is `Send + Sync` when `K` is (share it by reference or in an `Arc`; every
/// method takes `&self`), and its guards are `Send + 'static`, so a call can move into a spawned task.
///
/// ```
/// use std::net::SocketAddr;
/// use weir::rt::Keyed;
/// use weir::{Config, Outcome};
///
/// let backends: Keyed<SocketAddr> = Keyed::with_capacity(16, Config::default()).unwrap();
/// let a: SocketAddr = "10.0.0.1:80".parse().unwrap();
/// backends.add(a).unwrap();
/// let guard = backends.acquire().unwrap();
/// assert_eq!(*guard.key(), a);
/// guard.complete(Outcome::Success).unwrap();
/// assert!(backends.remove(&a).is_some());
/// assert!(backends.acquire().is_err());
/// ```
pub struct Keyed<K> {
    balancer: Arc<HeapBalancer>,
    entries: Box<[RwLock<Option<Entry<K>>>]>,
    members: Mutex<Members<K>>,
}

/// The index of an id: its low 32 bits.
fn index(id: u64) -> usize {
    (id & u64::from(u32::MAX)) as usize
}

impl<K: Hash + Eq> Keyed<K> {
    /// Builds a keyed balancer over a [`HeapBalancer`] of `capacity` slots: at most `capacity` keys at
    /// once. Allocates here, once.
    ///
    /// ```
    /// use weir::rt::Keyed;
    /// let keyed: Keyed<String> = Keyed::with_capacity(4, weir::Config::default()).unwrap();
    /// assert_eq!(keyed.balancer().capacity(), 4);
    /// assert!(Keyed::<String>::with_capacity(0, weir::Config::default()).is_err());
    /// ```
    pub fn with_capacity(capacity: usize, config: Config) -> Result<Self, ConfigError> {
        let balancer = Arc::new(HeapBalancer::with_capacity(capacity, config)?);
        let entries = (0..capacity).map(|_| RwLock::new(None)).collect();
        // Indexes are handed out from the back: the first key gets index 0.
        let free = (0..capacity)
            .rev()
            .filter_map(|i| u32::try_from(i).ok())
            .collect();
        Ok(Keyed {
            balancer,
            entries,
            members: Mutex::new(Members {
                by_key: HashMap::new(),
                free,
                generation: 0,
            }),
        })
    }

    /// The balancer underneath: its stats, snapshots, lame duck by node id ([`Keyed::id_of`]).
    ///
    /// ```
    /// let keyed = weir::rt::Keyed::with_capacity(2, weir::Config::default()).unwrap();
    /// let id = keyed.add("a").unwrap();
    /// keyed.balancer().set_lame_duck(id, true).unwrap();
    /// assert!(keyed.acquire().is_err()); // out of rotation
    /// ```
    pub fn balancer(&self) -> &Arc<HeapBalancer> {
        &self.balancer
    }

    /// Adds `key` as a new node and returns its node id. A key already here is
    /// [`MembershipError::DuplicateId`] with its id; [`MembershipError::CapacityFull`] when every slot
    /// is taken or still draining leases of removed nodes.
    ///
    /// ```
    /// use weir::balance::MembershipError;
    /// let keyed = weir::rt::Keyed::with_capacity(1, weir::Config::default()).unwrap();
    /// let id = keyed.add("a").unwrap();
    /// assert_eq!(keyed.add("a"), Err(MembershipError::DuplicateId(id)));
    /// assert_eq!(keyed.add("b"), Err(MembershipError::CapacityFull { capacity: 1 }));
    /// ```
    pub fn add(&self, key: K) -> Result<u64, MembershipError> {
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(&id) = members.by_key.get(&key) {
            return Err(MembershipError::DuplicateId(id));
        }
        let full = MembershipError::CapacityFull {
            capacity: self.entries.len(),
        };
        let i = members.free.pop().ok_or(full)?;
        let entry = match self.entries.get(i as usize) {
            Some(entry) => entry,
            None => return Err(full), // never: the free list holds indexes of `entries` only
        };
        // Never 0, even after wrapping: no id is 0 (`set_lame_duck`'s unknown key says 0).
        members.generation = members.generation.wrapping_add(1).max(1);
        let id = u64::from(members.generation) << 32 | u64::from(i);
        let key = Arc::new(key);
        // The entry first: a lease of the node, granted as soon as `add` returns, finds its key.
        *entry.write().unwrap_or_else(PoisonError::into_inner) = Some(Entry {
            id,
            key: Arc::clone(&key),
        });
        if let Err(e) = self.balancer.add(id) {
            *entry.write().unwrap_or_else(PoisonError::into_inner) = None;
            members.free.push(i);
            return Err(e);
        }
        members.by_key.insert(key, id);
        Ok(id)
    }

    /// Removes `key`: it leaves rotation at once, its leases in flight release as stale. Returns the
    /// node id it had, or `None` if it was not here.
    ///
    /// ```
    /// let keyed = weir::rt::Keyed::with_capacity(1, weir::Config::default()).unwrap();
    /// let id = keyed.add("a").unwrap();
    /// assert_eq!(keyed.remove(&"a"), Some(id));
    /// assert_eq!(keyed.remove(&"a"), None);
    /// ```
    pub fn remove(&self, key: &K) -> Option<u64> {
        let mut members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        let id = members.by_key.remove(key)?;
        // A member by the map, so of the balancer too: its removal cannot fail.
        let _ = self.balancer.remove(id);
        if let Some(entry) = self.entries.get(index(id)) {
            *entry.write().unwrap_or_else(PoisonError::into_inner) = None;
        }
        // Index reuse is safe: the next key there gets another generation, so another id.
        if let Ok(i) = u32::try_from(index(id)) {
            members.free.push(i);
        }
        Some(id)
    }

    /// The node id of `key`, if it is here.
    ///
    /// ```
    /// let keyed = weir::rt::Keyed::with_capacity(1, weir::Config::default()).unwrap();
    /// let id = keyed.add("a").unwrap();
    /// assert_eq!((keyed.id_of(&"a"), keyed.id_of(&"b")), (Some(id), None));
    /// ```
    pub fn id_of(&self, key: &K) -> Option<u64> {
        let members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        members.by_key.get(key).copied()
    }

    /// The key of node `id`, if it is still here (lock-free of the membership `Mutex`: see "Costs").
    ///
    /// ```
    /// let keyed = weir::rt::Keyed::with_capacity(1, weir::Config::default()).unwrap();
    /// let id = keyed.add("a").unwrap();
    /// assert_eq!(keyed.key_of(id).as_deref(), Some(&"a"));
    /// keyed.remove(&"a");
    /// assert_eq!(keyed.key_of(id), None);
    /// ```
    pub fn key_of(&self, id: u64) -> Option<Arc<K>> {
        let entry = self.entries.get(index(id))?;
        let entry = entry.read().unwrap_or_else(PoisonError::into_inner);
        match &*entry {
            Some(e) if e.id == id => Some(Arc::clone(&e.key)),
            _ => None,
        }
    }

    /// Acquires a lease at once ([`Balancer::acquire_owned`](crate::Balancer::acquire_owned)): the guard
    /// says the key to call. Allocates nothing.
    ///
    /// ```
    /// use weir::{Config, Outcome};
    /// let keyed = weir::rt::Keyed::with_capacity(2, Config::default()).unwrap();
    /// assert!(keyed.acquire().is_err()); // no keys yet
    /// keyed.add("10.0.0.1:80").unwrap();
    /// let guard = keyed.acquire().unwrap();
    /// assert_eq!(*guard.key(), "10.0.0.1:80");
    /// guard.complete(Outcome::Success).unwrap();
    /// ```
    pub fn acquire(&self) -> Result<KeyedGuard<K>, Rejected> {
        for _ in 0..STALE_RETRIES {
            let guard = Arc::clone(&self.balancer).acquire_owned()?;
            if let Some(guard) = self.keyed(guard) {
                return Ok(guard);
            }
        }
        Err(Rejected::NoActiveNodes)
    }

    /// Waits for a lease until `timer` completes ([`WaitOwned::within`](crate::rt::WaitOwned::within)):
    /// the async acquire with a deadline. `timer` is the caller's runtime's (for tokio,
    /// `tokio::time::sleep_until(deadline)`).
    ///
    /// ```
    /// use std::future::{pending, Future};
    /// use std::pin::pin;
    /// use std::task::{Context, Poll, Waker};
    /// let keyed = weir::rt::Keyed::with_capacity(2, weir::Config::default()).unwrap();
    /// keyed.add("a").unwrap();
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let wait = keyed.acquire_within(pending::<()>());
    /// match pin!(wait).poll(&mut cx) {
    ///     Poll::Ready(Ok(guard)) => assert_eq!(*guard.key(), "a"),
    ///     other => panic!("expected a lease, got {other:?}"),
    /// };
    /// ```
    pub async fn acquire_within(&self, timer: impl Future) -> Result<KeyedGuard<K>, WaitError> {
        let guard = Arc::clone(&self.balancer)
            .acquire_async_owned()
            .within(timer)
            .await?;
        match self.keyed(guard) {
            Some(guard) => Ok(guard),
            // Its node was removed while the lease was on its way: that node is gone, not a timeout.
            None => Err(WaitError::NoActiveNodes),
        }
    }

    /// Acquires a lease, blocking until `deadline` for room
    /// ([`Balancer::acquire_wait_owned`](crate::Balancer::acquire_wait_owned)): the blocking acquire with
    /// a deadline.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use weir::rt::WaitError;
    /// let keyed = weir::rt::Keyed::with_capacity(2, weir::Config::default()).unwrap();
    /// let soon = Instant::now() + Duration::from_millis(5);
    /// assert_eq!(keyed.acquire_wait(soon).err(), Some(WaitError::NoActiveNodes));
    /// keyed.add("a").unwrap();
    /// assert_eq!(*keyed.acquire_wait(soon).unwrap().key(), "a");
    /// ```
    pub fn acquire_wait(&self, deadline: Instant) -> Result<KeyedGuard<K>, WaitError> {
        let guard = Arc::clone(&self.balancer).acquire_wait_owned(deadline)?;
        // As in `acquire_within`: a node removed while its lease was on its way is gone.
        self.keyed(guard).ok_or(WaitError::NoActiveNodes)
    }

    /// Takes `key` out of rotation (`true`) or puts it back (`false`): its leases in flight finish
    /// ([`Balancer::set_lame_duck`](crate::Balancer::set_lame_duck)). A key that is not here is
    /// [`MembershipError::UnknownId`] with id 0 (no node has id 0: every id has a generation of 1 or
    /// more).
    ///
    /// ```
    /// let keyed = weir::rt::Keyed::with_capacity(2, weir::Config::default()).unwrap();
    /// keyed.add("a").unwrap();
    /// keyed.set_lame_duck(&"a", true).unwrap();
    /// assert!(keyed.acquire().is_err());
    /// keyed.set_lame_duck(&"a", false).unwrap();
    /// assert!(keyed.acquire().is_ok());
    /// assert!(keyed.set_lame_duck(&"b", true).is_err());
    /// ```
    pub fn set_lame_duck(&self, key: &K, lame_duck: bool) -> Result<(), MembershipError> {
        self.with_id(key, MembershipError::UnknownId(0), |id| {
            self.balancer.set_lame_duck(id, lame_duck)
        })
    }

    /// `f` of `key`'s id, under the members' lock, so that a concurrent `remove` and `add` of the key
    /// cannot slip between the lookup and `f`; `unknown` if the key is not here.
    fn with_id<T, E>(
        &self,
        key: &K,
        unknown: E,
        f: impl FnOnce(u64) -> Result<T, E>,
    ) -> Result<T, E> {
        let members = self.members.lock().unwrap_or_else(PoisonError::into_inner);
        let id = members.by_key.get(key).copied().ok_or(unknown)?;
        let done = f(id);
        drop(members);
        done
    }

    /// The key due for a health check now ([`Balancer::due_check`](crate::Balancer::due_check) at
    /// [`monotonic_now`](crate::rt::monotonic_now)): a key whose calls failed, quiet for `quiet` since,
    /// with no call in flight; naming it holds it from every other caller for `quiet`. Send the key your
    /// own health request and give its answer to [`report_check`](Self::report_check). Call it on a
    /// timer (a tenth of `quiet` is plenty): it reads every node.
    ///
    /// ```
    /// use std::time::Duration;
    /// use weir::{Config, Outcome};
    /// let keyed = weir::rt::Keyed::with_capacity(2, Config::default()).unwrap();
    /// keyed.add("a").unwrap();
    /// keyed.acquire().unwrap().complete(Outcome::Failure).unwrap();
    /// // With no quiet asked, "a" is due at once; its check answered well, it is forgiven.
    /// let due = keyed.due_check(Duration::ZERO).unwrap();
    /// assert_eq!(*due, "a");
    /// keyed.report_check(&due, true).unwrap();
    /// assert_eq!(keyed.due_check(Duration::ZERO), None);
    /// assert!(keyed.report_check(&"b", true).is_err());
    /// ```
    #[cfg(feature = "probation")]
    pub fn due_check(&self, quiet: std::time::Duration) -> Option<Arc<K>> {
        let quiet_ns = u64::try_from(quiet.as_nanos()).unwrap_or(u64::MAX);
        let id = self.balancer.due_check(super::monotonic_now(), quiet_ns)?;
        self.key_of(id)
    }

    /// Records the answer of `key`'s health check
    /// ([`Balancer::report_check`](crate::Balancer::report_check) at the monotonic clock's now):
    /// healthy forgives its failures, so it takes calls again; failed is one more failure, and the key
    /// waits another `quiet`. A key that is not here is
    /// [`CheckError::UnknownId`](crate::balance::CheckError::UnknownId) with id 0 (as in
    /// [`set_lame_duck`](Self::set_lame_duck)).
    #[cfg(feature = "probation")]
    pub fn report_check(&self, key: &K, healthy: bool) -> Result<(), crate::balance::CheckError> {
        self.with_id(key, crate::balance::CheckError::UnknownId(0), |id| {
            self.balancer
                .report_check(id, healthy, super::monotonic_now())
        })
    }

    /// The guard with its key, or `None` (the lease released as `Ignored`) if the node was removed.
    fn keyed(&self, guard: HeapOwnedLeaseGuard) -> Option<KeyedGuard<K>> {
        let key = self.key_of(guard.node_id())?;
        Some(KeyedGuard { key, guard })
    }
}

impl<K: fmt::Debug> fmt::Debug for Keyed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Keyed")
            .field("balancer", &self.balancer)
            .finish_non_exhaustive()
    }
}

/// A lease of a [`Keyed`] balancer: the key to call and an owned lease guard, which releases as
/// [`OwnedLeaseGuard`](crate::rt::OwnedLeaseGuard) does (dropped without an outcome: `Ignored`, or `Dropped` past a deadline).
///
/// ```
/// use std::future::{ready, Future};
/// use std::pin::pin;
/// use std::task::{Context, Poll, Waker};
/// use weir::{Config, Outcome};
/// let keyed = weir::rt::Keyed::with_capacity(2, Config::default()).unwrap();
/// keyed.add("a").unwrap();
/// let guard = keyed.acquire().unwrap();
/// let key = guard.shared_key();
/// let call = async move { if *key == "a" { 200 } else { 404 } }; // the call to `key`
/// let answer = guard.within(std::future::pending::<()>(), call, |s| {
///     Outcome::from_http_status(*s).unwrap_or(Outcome::Failure)
/// });
/// let mut cx = Context::from_waker(Waker::noop());
/// assert_eq!(pin!(answer).poll(&mut cx), Poll::Ready(Ok(200)));
/// assert_eq!(keyed.balancer().stats().released(Outcome::Success), 1);
/// ```
#[derive(Debug)]
#[must_use = "dropping the guard at once releases the lease as Ignored"]
pub struct KeyedGuard<K> {
    key: Arc<K>,
    guard: HeapOwnedLeaseGuard,
}

impl<K> KeyedGuard<K> {
    /// The key to call.
    pub fn key(&self) -> &K {
        &self.key
    }

    /// The key to call, shared: for a call that moves into a task of its own while the guard waits.
    pub fn shared_key(&self) -> Arc<K> {
        Arc::clone(&self.key)
    }

    /// The node id the key was added as.
    pub fn node_id(&self) -> u64 {
        self.guard.node_id()
    }

    /// Releases the lease with `outcome`: [`OwnedLeaseGuard::complete`](crate::rt::OwnedLeaseGuard::complete).
    pub fn complete(self, outcome: Outcome) -> Result<(), ReleaseError> {
        self.guard.complete(outcome)
    }

    /// Releases the lease with `outcome` and the server's load report:
    /// [`OwnedLeaseGuard::complete_loaded`](crate::rt::OwnedLeaseGuard::complete_loaded).
    pub fn complete_loaded(self, outcome: Outcome, load: ServerLoad) -> Result<(), ReleaseError> {
        self.guard.complete_loaded(outcome, load)
    }

    /// Gives the call a deadline: [`OwnedLeaseGuard::with_deadline`](crate::rt::OwnedLeaseGuard::with_deadline).
    pub fn with_deadline(self, deadline: impl Into<Instant>) -> Self {
        KeyedGuard {
            key: self.key,
            guard: self.guard.with_deadline(deadline),
        }
    }

    /// Runs `call` under the lease until `timer` completes: [`OwnedLeaseGuard::within`](crate::rt::OwnedLeaseGuard::within).
    pub async fn within<T>(
        self,
        timer: impl Future,
        call: impl Future<Output = T>,
        classify: impl FnOnce(&T) -> Outcome,
    ) -> Result<T, super::DeadlinePassed> {
        self.guard.within(timer, call, classify).await
    }

    /// The key and the lease guard apart.
    pub fn into_parts(self) -> (Arc<K>, HeapOwnedLeaseGuard) {
        (self.key, self.guard)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::balance::NodeState;
    use std::string::{String, ToString};
    use std::thread;

    #[test]
    fn a_key_added_again_is_a_new_node_and_old_leases_are_stale() {
        let keyed = Keyed::with_capacity(2, Config::default()).unwrap();
        let a = keyed.add("a").unwrap();
        let old = keyed.acquire().unwrap();
        assert_eq!((*old.key(), old.node_id()), ("a", a));
        assert_eq!(keyed.remove(&"a"), Some(a));
        let a2 = keyed.add("a").unwrap();
        assert_ne!(a2, a);
        assert_eq!(index(a2), index(a)); // the entry is reused, the id is not
        assert_eq!(keyed.key_of(a), None);
        assert_eq!(keyed.key_of(a2).as_deref(), Some(&"a"));
        assert!(old.complete(Outcome::Success).is_err()); // the old node is gone
        assert_eq!(keyed.balancer().stats().released_stale, 1);
        let new = keyed.acquire().unwrap();
        assert_eq!(new.node_id(), a2);
        assert_eq!(keyed.key_of(u64::MAX), None);
    }

    #[test]
    fn capacity_counts_keys_and_a_failed_add_gives_its_entry_back() {
        let keyed = Keyed::with_capacity(1, Config::default()).unwrap();
        let a = keyed.add(1u32).unwrap();
        let held = keyed.acquire().unwrap();
        assert_eq!(keyed.remove(&1), Some(a));
        // The slot still drains `held`: the balancer refuses, and the entry is free again.
        assert_eq!(
            keyed.add(2),
            Err(MembershipError::CapacityFull { capacity: 1 })
        );
        assert_eq!(keyed.id_of(&2), None);
        drop(held);
        let b = keyed.add(2).unwrap();
        assert_eq!(
            keyed.balancer().node(b, 0).map(|s| s.state),
            Some(NodeState::Active)
        );
    }

    #[test]
    fn threads_calling_while_keys_come_and_go_always_get_a_live_key() {
        let keyed = Keyed::with_capacity(8, Config::default()).unwrap();
        for k in 0..4 {
            keyed.add(k.to_string()).unwrap();
        }
        let calls = thread::scope(|s| {
            let workers: Vec<_> = (0..3)
                .map(|_| {
                    s.spawn(|| {
                        let mut calls = 0u64;
                        for _ in 0..2_000 {
                            if let Ok(g) = keyed.acquire() {
                                // The key is the one this node was added with.
                                let key: String = g.key().clone();
                                assert!(key.parse::<u32>().is_ok_and(|k| k < 8), "{key}");
                                calls += 1;
                                let _ = g.complete(Outcome::Success);
                            }
                        }
                        calls
                    })
                })
                .collect();
            for round in 0..200u32 {
                let k = (4 + round % 4).to_string();
                let _ = keyed.add(k.clone());
                let _ = keyed.remove(&(round % 4).to_string());
                let _ = keyed.add((round % 4).to_string());
                let _ = keyed.remove(&k);
            }
            workers.into_iter().map(|w| w.join().unwrap()).sum::<u64>()
        });
        let st = keyed.balancer().stats();
        assert_eq!(st.in_flight, 0);
        // Every call released as a success, stale if its node was removed meanwhile (and the leases of
        // removed nodes that an acquire got before reading their key, then gave back, stale too).
        assert!(calls > 0);
        assert!(st.released(Outcome::Success) <= calls);
        assert!(calls <= st.released(Outcome::Success) + st.released_stale);
    }
}
