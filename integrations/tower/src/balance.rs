//! [`Balance`]: the tower `Service` that asks weir which inner service takes each request.
//!
//! # How `poll_ready` and `call` share a lease
//! tower's contract is that `poll_ready` reserves the capacity that the next `call` uses. Here the
//! capacity is a weir lease: `poll_ready` acquires it (weir picks the node), keeps it, and returns
//! `Ready`; `call` takes that very lease, calls the node it names, and moves the lease into the response
//! future, which releases it with the classified outcome. A `poll_ready` that already holds a lease keeps
//! it (after checking that its node is still there and ready); dropping the `Balance` releases it as
//! `Ignored`.
//!
//! # The inner services' own readiness
//! weir picks; the picked service must then be ready too. `poll_ready` polls the picked service only (one
//! inner `poll_ready` per request, whatever the node count):
//!
//! - `Ready(Ok)`: the lease is kept, `poll_ready` is ready.
//! - `Pending`: the lease goes back as `Ignored`, the node goes out of weir's rotation (lame duck, so
//!   weir stops picking it while its calls in flight finish normally), and weir picks again. Every later
//!   `poll_ready` polls the services that are out of rotation this way (which registers the task's waker
//!   with them); one that turns ready comes back into rotation. This is tower's `ReadyCache` (its
//!   "pending" set) expressed as weir membership.
//! - `Ready(Err)`: the service is dropped and its node removed, as tower's `Balance` drops a failed
//!   endpoint, until discovery inserts it again.
//!
//! The tradeoff: a service that is ready almost always (hyper-util's pooled client, a `Buffer` with
//! room) costs nothing more than its own `poll_ready`. A service that flips to `Pending` often costs one
//! more pick and two membership changes each time (a membership change recomputes every member's cached
//! weight). Put a pool or a buffer beneath rather than a single-connection sender.
//!
//! # Waiting for room
//! When weir refuses because every node in rotation is at its limit, `poll_ready` waits in the core's
//! queue (the async waiting acquire, newest first once the queue stands: see `weir::rt`) until a lease
//! frees up or the wait's deadline passes ([`Refused::Timeout`]); a wait that a standing queue passes
//! over for newer requests, once it has waited more than 100 ms, is answered then ([`Refused::Shed`]);
//! with a wait of zero it gives up at once
//! ([`Refused::AllBusy`]). When no node is in rotation only because services are not ready, it waits for
//! them under the same deadline. When no node is in rotation at all, it gives up at once with
//! [`Refused::NoActiveNodes`]. Giving up is a refusal (below). A request's deadline
//! ([`Builder::deadline`](crate::Builder::deadline)) covers its wait: the wait ends at the deadline if
//! that comes first, and the call has what the wait left of it. The wait's deadline is a tokio timer, so a
//! `poll_ready` that waits needs a tokio runtime with its time driver (without one it is refused with
//! `Refused::NoTimer`, not a panic); one that never waits (a lease at once, or a wait of zero) needs no
//! runtime.
//!
//! # Refusals
//! A refusal is the answer of the one request it refuses, as tower's `LoadShed` answers `Overloaded`:
//! `poll_ready` keeps it and returns `Ready(Ok)`, and the next `call` sends nothing and returns a future
//! that fails with [`Error::Refused`]. It is never an error of `poll_ready`, which tower reads as the
//! service failing for good (a `Buffer` in front would answer every later call with that error). A
//! `poll_ready` again before that `call` is ready at once and keeps the refusal for it; the request after
//! it asks weir afresh. A refusal holds no lease, so there is nothing to leak.
//!
//! The balancer's `stats()` count the answers: a refusal (`rejected_all_busy`, `rejected_no_active`)
//! once per refused request, never for the attempts `poll_ready` makes on the way; a wait in the core's
//! queue as a wait (`waits`), granted when a lease comes, timed out when the deadline ends it.
//! Waiting for services to turn ready is no wait in the core's queue. (The one over-count: a wait the
//! core refuses for want of active nodes at the instant it joins, because a node left rotation
//! concurrently, is counted as a refusal even if `poll_ready` then goes on waiting for services.)
//!
//! # Membership
//! Each poll drains the `Discover` stream first: `Insert(key, service)` adds a weir node (replacing the
//! key's previous node, whose leases then release as stale), `Remove(key)` removes it at once (its calls
//! in flight complete; their outcomes are no longer recorded). tower's `Change` has no lame duck: that is
//! [`Balance::set_lame_duck`], or the inner service answering `Pending` (above).

use crate::check::Checks;
use crate::classify::Classify;
use crate::deadline::Deadline;
use crate::error::{Error, Refused};
use crate::future::{Held, ResponseFuture};
use crate::members::Mirrors;
use crate::metrics::Metrics;
use crate::nodes::Nodes;
use crate::retry::{NoRetry, Retry, RetryFuture, RetryMode, RetryRequest, Shared};
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::Instant;
use tower::discover::{Change, Discover};
use tower::{BoxError, Service};
use weir::balance::{NodeSnapshot, Rejected};
use weir::metrics::{node_id_name, MetricsFormat};
use weir::rt::{monotonic_now, thread_seed, WaitError, WaitOwned};
use weir::{HeapBalancer, Lease, NodeSlot, Outcome, Rng};

/// A tower `Service` that balances requests over keyed inner services with weir: see the crate docs
/// for an example and the module docs for how it works. Build it with [`Builder`](crate::Builder) or
/// [`BalanceLayer`](crate::BalanceLayer).
///
/// Like tower's `Balance`, it is not `Clone` (it owns the inner services and the `Discover` stream):
/// share it behind `tower::buffer::Buffer`. Its weir balancer is shared ([`Balance::balancer`]) and
/// lock-free, so reading its statistics from another thread costs the calls nothing.
pub struct Balance<D: Discover, C, R = NoRetry> {
    discover: D,
    discover_ended: bool,
    balancer: Arc<HeapBalancer>,
    nodes: Nodes<D::Key, D::Service>,
    classify: C,
    wait: Duration,
    /// The lease `poll_ready` reserved for the next `call`.
    reserved: Option<Lease>,
    /// The refusal `poll_ready` answered for the next `call`, which fails with it.
    refused: Option<Refused>,
    /// The acquires' generator: this balance's own (`&mut self` makes it exclusive), seeded from
    /// `Config::seed` as the std layer seeds a thread's (`thread_seed(seed, 0)`).
    rng: Rng,
    /// The wait `poll_ready` is in, if no node had room.
    waiting: Option<Waiting>,
    /// The members' names for [`Balance::metrics`]' handles and their keys for [`Balance::checks`]':
    /// each table is kept from the first handle that reads it on.
    mirrors: Mirrors<D::Key>,
    /// Each request's deadline ([`Builder::deadline`](crate::Builder::deadline)), if any: it covers
    /// the wait for room in `poll_ready` too.
    deadline: Option<Duration>,
    /// When `poll_ready` began waiting for room for the request it is reserving (tokio's clock), if it
    /// had to wait.
    waiting_since: Option<Instant>,
    /// How long `poll_ready` waited for the reserved lease (set with it): what the request's deadline
    /// has left for its call is the rest.
    waited: Duration,
    /// The retries ([`Builder::retry`](crate::Builder::retry)): [`NoRetry`] or [`Retry`].
    retry: R,
    /// What the response futures of a retrying balance share: a copy of each member's service, the
    /// budget and the backoff. `None` without retries.
    shared: Option<Arc<Shared<D::Service>>>,
}

/// A `poll_ready` waiting for room.
struct Waiting {
    /// The core's waiting acquire; `None` while no node is in rotation because services are not ready.
    lease: Option<WaitOwned<Box<[NodeSlot]>>>,
    deadline: Pin<Box<tokio::time::Sleep>>,
}

impl<D, C, R> Balance<D, C, R>
where
    D: Discover + Unpin,
    D::Key: Hash + Eq + Clone,
    D::Error: Into<BoxError>,
    R: RetryMode<D::Service>,
{
    pub(crate) fn from_parts(
        discover: D,
        balancer: HeapBalancer,
        classify: C,
        wait: Duration,
        deadline: Option<Duration>,
        retry: R,
    ) -> Self {
        let seed = balancer.config().seed;
        let rng = Rng::with_seed(thread_seed(seed, 0));
        let shared = Shared::of(&retry, seed).map(Arc::new);
        Balance {
            discover,
            discover_ended: false,
            rng,
            balancer: Arc::new(balancer),
            nodes: Nodes::new(),
            classify,
            wait,
            reserved: None,
            refused: None,
            waiting: None,
            mirrors: Mirrors::default(),
            deadline,
            waiting_since: None,
            waited: Duration::ZERO,
            retry,
            shared,
        }
    }

    /// The retry budget, if the balance retries ([`Builder::retry`](crate::Builder::retry)): its
    /// `stats(now)` count the requests, the retries admitted and those refused.
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// use weir_tower::retry::Retry;
    /// let plain = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
    /// assert!(plain.retry_budget().is_none());
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// let retrying = Builder::new(weir::Config::default())
    ///     .classify(ByResult)
    ///     .retry(Retry::new().requests(|r: &()| Some(*r)))
    ///     .build_list([("a", svc)])
    ///     .unwrap();
    /// assert_eq!(retrying.retry_budget().unwrap().stats(0).retries, 0);
    /// ```
    pub fn retry_budget(&self) -> Option<&Arc<weir::RetryBudget>> {
        self.retry.retry_budget()
    }

    /// The weir balancer beneath: its `stats()` and snapshots, read from anywhere. Membership belongs to
    /// the balance (its `Discover`, [`Balance::set_lame_duck`]): a node added on the balancer directly
    /// has no service, and is removed when weir first picks it.
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// let balance = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
    /// let stats = balance.balancer().stats();
    /// assert_eq!((stats.active_nodes, stats.in_flight), (1, 0));
    /// ```
    pub fn balancer(&self) -> &Arc<HeapBalancer> {
        &self.balancer
    }

    /// A snapshot of the node of `key` (its success rate, limit, calls in flight, ...), if it is a
    /// member.
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// let balance = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
    /// assert_eq!(balance.node(&"a").unwrap().success_rate, 1.0);
    /// assert!(balance.node(&"b").is_none());
    /// ```
    pub fn node(&self, key: &D::Key) -> Option<NodeSnapshot> {
        let id = self.nodes.id_of(key)?;
        self.balancer.node(id, monotonic_now())
    }

    /// Every member's key with its snapshot.
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// let balance = Builder::new(weir::Config::default())
    ///     .classify(ByResult)
    ///     .build_list([("a", svc.clone()), ("b", svc)])
    ///     .unwrap();
    /// let mut keys: Vec<&str> = balance.nodes().map(|(key, _)| *key).collect();
    /// keys.sort();
    /// assert_eq!(keys, ["a", "b"]);
    /// ```
    pub fn nodes(&self) -> impl Iterator<Item = (&D::Key, NodeSnapshot)> + '_ {
        let now = monotonic_now();
        self.nodes
            .iter()
            .filter_map(move |n| Some((&n.key, self.balancer.node(n.id, now)?)))
    }

    /// Puts the node of `key` into lame duck (`true`: weir picks it no more, its calls in flight finish
    /// and are recorded) or back into rotation (`false`; it stays out while its service is not ready).
    /// Returns `false` if no node has that key.
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// let mut balance = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
    /// assert!(balance.set_lame_duck(&"a", true));
    /// assert_eq!(balance.balancer().stats().lame_duck_nodes, 1);
    /// assert!(!balance.set_lame_duck(&"b", true));
    /// ```
    pub fn set_lame_duck(&mut self, key: &D::Key, lame_duck: bool) -> bool {
        let Some(id) = self.nodes.id_of(key) else {
            return false;
        };
        let Some(node) = self.nodes.get_mut(id) else {
            return false;
        };
        node.lame_duck = lame_duck;
        let out = node.out_of_rotation();
        // The node is a member (it is in the table): the core cannot refuse.
        let _ = self.balancer.set_lame_duck(id, out);
        true
    }

    /// Writes the balance's metrics to `out` in Prometheus' text format (0.0.4), each node named by its
    /// key's `Display`, with `format`'s prefix and constant labels: the core's
    /// [`Balancer::write_metrics`](weir::Balancer::write_metrics), which reads the same atomics a
    /// snapshot reads. An error when `out` fails, or when the core refuses `format` (a prefix or label
    /// name Prometheus cannot take: [`MetricsFormat::check`] says why; nothing is written then). To scrape
    /// from another task while the balance is busy serving, take a [`Balance::metrics`] handle instead.
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// use weir::metrics::MetricsFormat;
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// let balance = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
    /// let mut text = String::new();
    /// balance.write_metrics(&mut text, &MetricsFormat::default()).unwrap();
    /// assert!(text.contains("weir_node_in_flight{node=\"a\"} 0\n"), "{text}");
    /// ```
    pub fn write_metrics<W: fmt::Write + ?Sized>(
        &self,
        out: &mut W,
        format: &MetricsFormat<'_>,
    ) -> fmt::Result
    where
        D::Key: fmt::Display,
    {
        let names = |id: u64, w: &mut dyn fmt::Write| match self.nodes.get(id) {
            Some(node) => write!(w, "{}", node.key),
            None => node_id_name(id, w),
        };
        let now = monotonic_now();
        self.balancer.write_metrics(out, format, &names, now)?;
        crate::metrics::write_retry_metrics(
            out,
            format,
            self.retry.retry_budget().map(|b| &**b),
            self.retry.retry_backoff().map(|b| &**b),
            now,
        )
    }

    /// A handle that writes this balance's metrics from anywhere (see [`Metrics`]): cloneable, `Send`,
    /// `Sync` and `'static`, for an HTTP handler that serves `/metrics` while the balance is owned by the
    /// client. Nodes are named by their keys' `Display`, rendered once when each joins (the balance keeps
    /// the handles' table of names from the first call on); every call returns a handle on the same
    /// table.
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// let mut balance = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
    /// let metrics = balance.metrics();
    /// let scraper = std::thread::spawn(move || metrics.to_string());
    /// assert!(scraper.join().unwrap().contains("weir_node_limit{node=\"a\"}"));
    /// ```
    pub fn metrics(&mut self) -> Metrics
    where
        D::Key: fmt::Display,
    {
        let names = self
            .mirrors
            .names(self.nodes.iter().map(|n| (n.id, &n.key)));
        Metrics::new(
            Arc::clone(&self.balancer),
            names,
            self.retry.retry_budget().cloned(),
            self.retry.retry_backoff().cloned(),
        )
    }

    /// A handle for a health checker on another task (see [`Checks`]): it asks which node the balancer
    /// stopped calling is due for a check, and reports the check's answer, naming nodes by key. The
    /// balance keeps the handles' table of keys from the first call on (membership changes update it;
    /// requests never touch it); every call returns a handle on the same table. The handle is `Send`,
    /// `Sync` and `'static` when the key is `Send` and `'static`.
    ///
    /// ```
    /// # use weir_tower::{Builder, ByResult};
    /// # let svc = tower::service_fn(|_: ()| async { Ok::<_, std::convert::Infallible>(()) });
    /// use std::time::Duration;
    /// let mut balance = Builder::new(weir::Config::default()).classify(ByResult).build_list([("a", svc)]).unwrap();
    /// let checks = balance.checks();
    /// let checker = std::thread::spawn(move || checks.due(Duration::from_secs(2)));
    /// assert_eq!(checker.join().unwrap(), None); // nothing failed: nothing to check
    /// ```
    pub fn checks(&mut self) -> Checks<D::Key> {
        let keys = self.mirrors.keys(self.nodes.iter().map(|n| (n.id, &n.key)));
        Checks::new(Arc::clone(&self.balancer), keys)
    }

    /// Adds `service` under `key`, replacing the key's node if it has one.
    pub(crate) fn insert(&mut self, key: D::Key, service: D::Service) -> Result<(), Error> {
        self.remove(&key);
        let shared = self.shared.as_deref();
        let id = self.nodes.insert(key, service);
        if let (Some(shared), Some(node)) = (shared, self.nodes.get(id)) {
            shared.insert(id, &node.service);
        }
        if let Err(e) = self.balancer.add(id) {
            self.nodes.remove(id);
            if let Some(shared) = shared {
                shared.remove(id);
            }
            return Err(Error::Membership(e));
        }
        if let Some(node) = self.nodes.get(id) {
            self.mirrors.insert(id, &node.key);
        }
        Ok(())
    }

    /// Removes the node of `key`, if any.
    fn remove(&mut self, key: &D::Key) {
        if let Some(id) = self.nodes.id_of(key) {
            self.evict(id);
        }
    }

    /// Removes the node `id` from the table and from weir; a lease reserved on it goes back first, so it
    /// is released as `Ignored` rather than as stale.
    fn evict(&mut self, id: u64) {
        if self.reserved.as_ref().is_some_and(|l| l.node_id() == id) {
            self.give_back();
        }
        if self.nodes.remove(id).is_some() {
            if let Some(shared) = &self.shared {
                shared.remove(id);
            }
            // Its node is a member: the core cannot refuse.
            let _ = self.balancer.remove(id);
            self.mirrors.remove(id);
        }
    }

    /// Applies every change the `Discover` stream has ready.
    fn poll_discover(&mut self, cx: &mut Context<'_>) -> Result<(), Error> {
        while !self.discover_ended {
            match Pin::new(&mut self.discover).poll_discover(cx) {
                Poll::Pending => break,
                Poll::Ready(None) => self.discover_ended = true,
                Poll::Ready(Some(Err(e))) => return Err(Error::Discover(e.into())),
                Poll::Ready(Some(Ok(Change::Insert(key, service)))) => self.insert(key, service)?,
                Poll::Ready(Some(Ok(Change::Remove(key)))) => self.remove(&key),
            }
        }
        Ok(())
    }

    /// Takes the node `id` out of rotation because its service is not ready.
    fn set_unready(&mut self, id: u64) {
        if let Some(node) = self.nodes.get_mut(id) {
            if !node.unready {
                node.unready = true;
                self.nodes.unready.push(id);
            }
            // Always, even if it was marked already: someone may have put it back into rotation on the
            // balancer directly, and `poll_ready` terminates because each of its rounds takes a node out.
            // A member: the core cannot refuse.
            let _ = self.balancer.set_lame_duck(id, true);
        }
    }

    /// Polls the services that are out of rotation because they were not ready: a ready one comes back,
    /// a failed one is evicted.
    fn poll_unready<Req>(&mut self, cx: &mut Context<'_>)
    where
        D::Service: Service<Req>,
    {
        let mut i = 0;
        while let Some(&id) = self.nodes.unready.get(i) {
            let Some(node) = self.nodes.get_mut(id) else {
                self.nodes.unready.swap_remove(i);
                continue;
            };
            match node.service.poll_ready(cx) {
                Poll::Pending => i += 1,
                Poll::Ready(Ok(())) => {
                    node.unready = false;
                    let back = !node.out_of_rotation();
                    self.nodes.unready.swap_remove(i);
                    if back {
                        let _ = self.balancer.set_lame_duck(id, false);
                    }
                }
                Poll::Ready(Err(_)) => self.evict(id),
            }
        }
    }

    /// Whether the reserved lease's service is ready; if it is not (or its node is gone), the lease goes
    /// back and the node leaves rotation (not ready) or the balance (failed).
    fn reserved_ready<Req>(&mut self, cx: &mut Context<'_>) -> bool
    where
        D::Service: Service<Req>,
    {
        let Some(id) = self.reserved.as_ref().map(Lease::node_id) else {
            return false;
        };
        let Some(node) = self.nodes.get_mut(id) else {
            // A member without a service: added on the balancer directly, so never callable here. It
            // leaves, so that the next pick cannot fall on it again.
            self.give_back();
            let _ = self.balancer.remove(id);
            return false;
        };
        match node.service.poll_ready(cx) {
            Poll::Ready(Ok(())) => true,
            Poll::Pending => {
                self.give_back();
                self.set_unready(id);
                false
            }
            Poll::Ready(Err(_)) => {
                self.evict(id);
                false
            }
        }
    }

    /// A lease: at once if weir grants one, else after waiting (bounded by the wait's deadline).
    /// The first try is uncounted: a refusal is counted where one is answered (see "Waiting for room").
    fn poll_lease(&mut self, cx: &mut Context<'_>) -> Poll<Result<Lease, Refused>> {
        let services_pending = !self.nodes.unready.is_empty();
        if self.waiting.is_none() {
            match self
                .balancer
                .acquire_uncounted(monotonic_now(), &mut self.rng)
            {
                Ok(lease) => return Poll::Ready(Ok(lease)),
                Err(r @ Rejected::NoActiveNodes) if !services_pending => {
                    self.balancer.count_refusal(r);
                    return Poll::Ready(Err(Refused::NoActiveNodes));
                }
                Err(r) if self.wait.is_zero() => {
                    self.balancer.count_refusal(r);
                    return Poll::Ready(Err(r.into()));
                }
                Err(r) => {
                    let Some(deadline) = deadline_timer(self.wait_left()) else {
                        self.balancer.count_refusal(r);
                        return Poll::Ready(Err(Refused::NoTimer));
                    };
                    self.waiting = Some(Waiting {
                        lease: (r != Rejected::NoActiveNodes)
                            .then(|| Arc::clone(&self.balancer).acquire_async_owned().bounded()),
                        deadline,
                    })
                }
            }
        }
        let Some(waiting) = self.waiting.as_mut() else {
            return Poll::Pending;
        };
        let polled = waiting.poll(&self.balancer, &mut self.rng, services_pending, cx);
        if polled.is_ready() {
            self.waiting = None;
        }
        polled
    }
}

impl<D: Discover, C, R> Balance<D, C, R> {
    /// How long a wait for room that begins now may last: [`Builder::wait`](crate::Builder::wait), and
    /// no longer than the request's deadline leaves (its clock starts at the request's first wait).
    fn wait_left(&mut self) -> Duration {
        let now = Instant::now();
        let since = *self.waiting_since.get_or_insert(now);
        match self.deadline {
            Some(deadline) => self
                .wait
                .min(deadline.saturating_sub(now.saturating_duration_since(since))),
            None => self.wait,
        }
    }

    /// The deadline of the call being made: what the request's deadline leaves after `poll_ready`'s
    /// wait for room, or `None` when the wait used it all (the call is not sent then).
    fn call_deadline(&mut self) -> Option<Deadline> {
        let waited = std::mem::take(&mut self.waited);
        match self.deadline {
            None => Some(Deadline::after(None)),
            Some(deadline) => deadline
                .checked_sub(waited)
                .filter(|left| !left.is_zero())
                .map(|left| Deadline::after(Some(left))),
        }
    }
}

/// The wait's deadline as a tokio timer, or `None` where tokio cannot give one: no runtime on this thread,
/// or one built without its time driver. tokio panics then; the balance refuses with
/// [`Refused::NoTimer`] instead (and leaves nothing reserved).
fn deadline_timer(wait: std::time::Duration) -> Option<Pin<Box<tokio::time::Sleep>>> {
    tokio::runtime::Handle::try_current().ok()?;
    // A runtime without its time driver: tokio's only signal is a panic (its hook prints the message).
    std::panic::catch_unwind(|| Box::pin(tokio::time::sleep(wait))).ok()
}

impl Waiting {
    /// Polls the wait: the core's waiting acquire when nodes in rotation are all busy, or nothing but the
    /// deadline while no node is in rotation and `services_pending` (their services are not ready; the
    /// caller has polled them, so their readiness wakes the task). The core counts what its waiting
    /// acquire answers; the refusals answered here without it are counted here.
    fn poll(
        &mut self,
        balancer: &Arc<HeapBalancer>,
        rng: &mut Rng,
        services_pending: bool,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Lease, Refused>> {
        // Two rounds at most: a waiting acquire that ends for want of active nodes is replaced once.
        for _ in 0..2 {
            if self.lease.is_none() {
                match balancer.acquire_uncounted(monotonic_now(), rng) {
                    Ok(lease) => return Poll::Ready(Ok(lease)),
                    Err(Rejected::NoActiveNodes) if services_pending => break,
                    Err(r @ Rejected::NoActiveNodes) => {
                        balancer.count_refusal(r);
                        return Poll::Ready(Err(Refused::NoActiveNodes));
                    }
                    Err(_) => {
                        self.lease = Some(Arc::clone(balancer).acquire_async_owned().bounded())
                    }
                }
            }
            let Some(lease) = self.lease.as_mut() else {
                break;
            };
            match Pin::new(lease).poll(cx) {
                Poll::Ready(Ok(lease)) => return Poll::Ready(Ok(lease.into_lease())),
                Poll::Ready(Err(WaitError::NoActiveNodes)) if services_pending => self.lease = None,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e.into())),
                Poll::Pending => break,
            }
        }
        match self.deadline.as_mut().poll(cx) {
            // In the core's queue: it leaves as timed out, unless a lease was handed to it meanwhile,
            // which wins over the deadline (as in the core's blocking wait) rather than going back.
            Poll::Ready(()) => Poll::Ready(match self.lease.take() {
                Some(wait) => wait
                    .time_out()
                    .map(|lease| lease.into_lease())
                    .map_err(Refused::from),
                // Waiting for services that never turned ready: no node was in rotation.
                None => {
                    balancer.count_refusal(Rejected::NoActiveNodes);
                    Err(Refused::Timeout)
                }
            }),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<D, C, R> Balance<D, C, R>
where
    D: Discover + Unpin,
    D::Key: Hash + Eq + Clone,
    D::Error: Into<BoxError>,
    R: RetryMode<D::Service>,
{
    /// `poll_ready`, with or without retries: a lease reserved on a ready service, or weir's refusal,
    /// kept for the next `call` to answer with. Either way the balance is ready: a refusal is that one
    /// request's answer (as tower's `LoadShed` answers `Overloaded`), never the service failing, which
    /// is what an error from `poll_ready` means to tower (a `Buffer` would fail every later call).
    fn reserve<Req>(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>>
    where
        D::Service: Service<Req>,
    {
        if self.refused.is_some() {
            return Poll::Ready(Ok(()));
        }
        self.poll_discover(cx)?;
        if !self.nodes.unready.is_empty() {
            self.poll_unready::<Req>(cx);
        }
        // Each round either returns or takes a node out of rotation (or the balance): bounded by the
        // node count.
        loop {
            if self.reserved.is_some() {
                if self.reserved_ready::<Req>(cx) {
                    self.waiting_since = None;
                    return Poll::Ready(Ok(()));
                }
                continue;
            }
            match self.poll_lease(cx) {
                Poll::Ready(Ok(lease)) => {
                    // Nothing to read on the clock for a request that did not wait.
                    self.waited = self.waiting_since.map_or(Duration::ZERO, |t| t.elapsed());
                    self.reserved = Some(lease);
                }
                Poll::Ready(Err(refused)) => {
                    self.waiting_since = None;
                    self.refused = Some(refused);
                    return Poll::Ready(Ok(()));
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

impl<D, C, Req> Service<Req> for Balance<D, C, NoRetry>
where
    D: Discover + Unpin,
    D::Key: Hash + Eq + Clone,
    D::Error: Into<BoxError>,
    D::Service: Service<Req>,
    <D::Service as Service<Req>>::Error: Into<BoxError>,
    C: Classify<<D::Service as Service<Req>>::Response> + Clone,
{
    type Response = <D::Service as Service<Req>>::Response;
    type Error = Error;
    type Future = ResponseFuture<<D::Service as Service<Req>>::Future, C>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.reserve::<Req>(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let Some(lease) = self.reserved.take() else {
            return ResponseFuture::failed(self.unreserved(), self.classify.clone());
        };
        let id = lease.node_id();
        let held = Held::new(Arc::clone(&self.balancer), lease);
        let Some(deadline) = self.call_deadline() else {
            // The wait for room took the whole deadline: nothing is sent, `held` goes back `Ignored`.
            return ResponseFuture::failed(Error::DeadlinePassed, self.classify.clone());
        };
        match self.nodes.get_mut(id) {
            Some(node) => ResponseFuture::new(
                node.service.call(request),
                held,
                self.classify.clone(),
                deadline,
            ),
            // Unreachable: a node leaves the table only in `poll_ready`, which then gives its lease
            // back. Were it to happen, `held` releases the lease as `Ignored` here.
            None => ResponseFuture::failed(Error::NotReady, self.classify.clone()),
        }
    }
}

/// A balance with retries ([`Builder::retry`](crate::Builder::retry)): the inner services must be
/// `Clone` and the requests copyable by the retry's [`RetryRequest`] (`http::Request`s with a `Clone`
/// body, by default). See [`retry`](crate::retry) for when a request is retried.
impl<D, C, P, Req> Service<Req> for Balance<D, C, Retry<P>>
where
    D: Discover + Unpin,
    D::Key: Hash + Eq + Clone,
    D::Error: Into<BoxError>,
    D::Service: Service<Req> + Clone,
    <D::Service as Service<Req>>::Error: Into<BoxError>,
    C: Classify<<D::Service as Service<Req>>::Response> + Clone,
    P: RetryRequest<Req> + Clone,
{
    type Response = <D::Service as Service<Req>>::Response;
    type Error = Error;
    type Future = RetryFuture<D::Service, Req, <D::Service as Service<Req>>::Future, C, P>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.reserve::<Req>(cx)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        let requests = self.retry.requests_policy().clone();
        let Some(lease) = self.reserved.take() else {
            return RetryFuture::failed(self.unreserved(), requests, self.classify.clone());
        };
        let id = lease.node_id();
        let held = Held::new(Arc::clone(&self.balancer), lease);
        let Some(deadline) = self.call_deadline() else {
            // As without retries: nothing is sent, `held` goes back `Ignored`.
            return RetryFuture::failed(Error::DeadlinePassed, requests, self.classify.clone());
        };
        let (Some(shared), Some(node)) = (self.shared.as_ref(), self.nodes.get_mut(id)) else {
            // Unreachable: `shared` is there whenever the balance retries, and the node as without
            // retries. Were it to happen, `held` releases the lease as `Ignored` here.
            return RetryFuture::failed(Error::NotReady, requests, self.classify.clone());
        };
        shared.budget.request(monotonic_now());
        let spare = self.retry.spare(&request);
        RetryFuture::new(
            node.service.call(request),
            held,
            id,
            spare,
            Arc::clone(shared),
            requests,
            self.classify.clone(),
            deadline,
        )
    }
}

impl<D: Discover, C, R> Drop for Balance<D, C, R> {
    /// A lease `poll_ready` reserved and no `call` used goes back as `Ignored`.
    fn drop(&mut self) {
        self.give_back();
    }
}

impl<D: Discover, C, R> Balance<D, C, R> {
    /// Why a `call` without a reserved lease sends nothing: the refusal `poll_ready` answered for it,
    /// or no `poll_ready` before it.
    fn unreserved(&mut self) -> Error {
        self.refused.take().map_or(Error::NotReady, Error::Refused)
    }

    /// Releases the reserved lease, if any, as `Ignored`.
    fn give_back(&mut self) {
        if let Some(lease) = self.reserved.take() {
            // An error means the node was removed meanwhile: nothing to record.
            let _ = self
                .balancer
                .release(lease, Outcome::Ignored, monotonic_now());
        }
    }
}

impl<D: Discover, C, R> fmt::Debug for Balance<D, C, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Balance")
            .field("stats", &self.balancer.stats())
            .field("reserved", &self.reserved.as_ref().map(Lease::node_id))
            .field("refused", &self.refused)
            .field("waiting", &self.waiting.is_some())
            .field("wait", &self.wait)
            .field("deadline", &self.deadline)
            .field("retries", &self.shared.as_ref().map(|s| s.retries))
            .finish_non_exhaustive()
    }
}
