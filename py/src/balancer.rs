//! `Balancer`: the core's balancer over heap slots, with nodes that are any hashable Python objects.
//!
//! # Node objects and core ids
//! The core knows a node by a `u64` id. A node that is an `int` in `0..2**64` is its own id (so a replay
//! of the shared traces, or a C program, sees the same ids and the same limit-algorithm draws, which are
//! seeded from the id); any other object, or an int whose id is taken, gets a fresh id counting up from
//! `2**63`. Membership (`add`, `remove`, `set_lame_duck`, `in`) goes through one mutex, `Members`, holding
//! a dict from node to id and the map back; membership changes are rare, and they call the objects'
//! `__hash__` and `__eq__`, so they cannot be lock-free anyway. The lock is taken with pyo3's
//! `lock_py_attached`, which detaches from the interpreter while it waits, so a thread holding it while
//! user Python code runs (a `__hash__`) cannot deadlock with one that waits for it.
//!
//! # The lookup on acquire takes no global lock
//! Every acquire must turn the lease's id back into the node object. That path never touches `Members`:
//! `cells` holds one lock-free cell (`ArcSwapOption`) per core slot, indexed by the slot the lease names,
//! holding the (id, slot generation, object) of the member that last leased through that slot. A lease
//! whose id and generation match the cell reads the object with two atomic operations and no lock, even
//! when many threads lease the same node at once. Only the first lease through a slot after its member was
//! added misses (the core picks the slot, so it cannot be filled in advance) and fills the cell from
//! `Members` under the mutex; `remove` empties the removed node's cells under the same mutex, so a cell
//! only ever holds a current member, exactly. A lease whose node was removed between the grant and that
//! first lookup (its object is gone from `Members`) is handed back as ignored and the acquire tries again:
//! it is then ordered after the removal, as if it had started a moment later.

use crate::config::{algorithm_name, config_from, limit_name, Config};
use crate::convert::{boolean, duration_ns, int_in, now_ns, weir_err, weir_type, Timeout};
use crate::lease::{Granted, Lease};
use crate::metrics::{node_name, Format};
use crate::rng::{draw, Rng};
use crate::wait::wait_error;
use arc_swap::ArcSwapOption;
use pyo3::exceptions::{PyDeprecationWarning, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::{MutexExt, PyOnceLock};
use pyo3::types::{PyDict, PyInt, PyTuple};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use weir::balance::{
    CheckError, MembershipError, NodeSnapshot, NodeState, RawLease, Rejected, MAX_NODES,
};
use weir::{HeapBalancer, Outcome};

/// The first id given to a node that is not its own id.
const AUTO_ID_START: u64 = 1 << 63;

/// One slot's cached member: the id and slot generation of its leases, and the object.
struct Cell {
    id: u64,
    generation: u16,
    node: Py<PyAny>,
}

/// The membership tables, changed only under the mutex.
struct Members {
    /// node object -> id.
    by_node: Py<PyDict>,
    /// id -> node object.
    by_id: HashMap<u64, Py<PyAny>>,
    next_auto: u64,
}

/// What a `Balancer` and its leases share.
pub struct Inner {
    pub core: Arc<HeapBalancer>,
    /// The user's exception classifier (`classify=`), or `None` for `weir.outcome_for_exception`.
    pub classify: Option<Py<PyAny>>,
    cells: Box<[ArcSwapOption<Cell>]>,
    members: Mutex<Members>,
}

impl Inner {
    fn members(&self, py: Python<'_>) -> std::sync::MutexGuard<'_, Members> {
        // A poisoned lock means a panic while the tables were being changed; both tables are changed
        // after the core, in an order that leaves them consistent at every step, so carry on.
        self.members
            .lock_py_attached(py)
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The node object of a lease just granted, or `None` if its node was removed meanwhile.
    fn node_of(&self, py: Python<'_>, raw: &RawLease) -> Option<Py<PyAny>> {
        let cell = self.cells.get(raw.slot as usize)?;
        if let Some(c) = cell.load().as_ref() {
            if c.id == raw.id && c.generation == raw.generation {
                return Some(c.node.clone_ref(py));
            }
        }
        let members = self.members(py);
        let node = members.by_id.get(&raw.id)?.clone_ref(py);
        cell.store(Some(Arc::new(Cell {
            id: raw.id,
            generation: raw.generation,
            node: node.clone_ref(py),
        })));
        Some(node)
    }

    /// Wraps a granted lease, or hands it back if its node is gone (see the module docs).
    fn wrap(self: &Arc<Self>, py: Python<'_>, lease: weir::Lease, explicit: bool) -> Option<Lease> {
        let g = self.grant(py, lease)?;
        Some(Lease::new(Arc::clone(self), g.raw, g.node, explicit))
    }

    /// A granted lease with its node object, or `None` (the lease handed back) if its node is gone.
    #[inline]
    pub fn grant(&self, py: Python<'_>, lease: weir::Lease) -> Option<Granted> {
        let raw = lease.into_raw();
        match self.node_of(py, &raw) {
            Some(node) => Some(Granted { raw, node }),
            None => {
                // Removed after the grant: the core counts it as a stale release.
                let _ = self
                    .core
                    .release(weir::Lease::from_raw(raw), Outcome::Ignored, raw.start);
                None
            }
        }
    }
}

/// An adaptive load balancer over nodes that are any hashable objects.
///
/// `Balancer(nodes=(), config=None, *, capacity=None, classify=None)`. `config` is a `weir.Config`, by
/// default `Config()`: weir's default algorithm (`LowestScore()`, `Ciad(fast_start=True)`); a config whose
/// seed is None gets a random one, which `balancer.config.seed` tells. `capacity` is the number of node
/// slots (default: twice the nodes given, at least 16): removed nodes hold their slot until their leases
/// finish. `classify` turns the exception that ends a lease's `with` block (or `lease.raised`) into an
/// outcome: a callable `(BaseException) -> weir.Outcome`, by default `weir.outcome_for_exception`.
///
/// GIL: thread-safe without a Python-side lock (free-threading included). Each call holds the GIL only for
/// the core call (nanoseconds); `acquire(timeout=...)` releases it while it waits.
#[pyclass(frozen, subclass, generic, module = "weir._weir")]
pub struct Balancer {
    inner: Arc<Inner>,
}

fn membership_error(py: Python<'_>, e: MembershipError, node: &Bound<'_, PyAny>) -> PyErr {
    let shown = node
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into());
    match e {
        MembershipError::DuplicateId(_) => {
            weir_err(py, "DuplicateNode", format!("node {shown} is already a member"))
        }
        MembershipError::UnknownId(_) => {
            weir_err(py, "UnknownNode", format!("node {shown} is not a member"))
        }
        MembershipError::CapacityFull { capacity } => weir_err(
            py,
            "CapacityFull",
            format!(
                "cannot add {shown}: all {capacity} node slots are occupied or still draining leases of removed nodes"
            ),
        ),
        other => weir_err(py, "WeirError", other.to_string()),
    }
}

/// Whether this thread runs an asyncio event loop (where a waiting acquire must not block).
fn on_event_loop(py: Python<'_>) -> PyResult<bool> {
    static RUNNING: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    Ok(!RUNNING
        .import(py, "asyncio", "_get_running_loop")?
        .call0()?
        .is_none())
}

fn state_name(s: NodeState) -> &'static str {
    match s {
        NodeState::Active => "active",
        NodeState::LameDuck => "lame_duck",
    }
}

/// A `weir.OutcomeCounts` (a named tuple, one field per outcome in the order of their codes) of the
/// leases `released` with each outcome: the `by_outcome` of `stats()` and of a `NodeInfo`.
fn outcome_counts(py: Python<'_>, released: impl Fn(Outcome) -> u64) -> PyResult<Bound<'_, PyAny>> {
    let counts = PyTuple::new(py, Outcome::ALL.iter().map(|o| released(*o)))?;
    weir_type(py, "OutcomeCounts")?.call1(counts)
}

impl Balancer {
    fn add_locked(
        &self,
        py: Python<'_>,
        members: &mut Members,
        node: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let by_node = members.by_node.bind(py);
        // Also refuses an unhashable node with Python's own TypeError.
        if by_node.contains(node)? {
            return Err(membership_error(py, MembershipError::DuplicateId(0), node));
        }
        let own = if node.is_exact_instance_of::<PyInt>() {
            node.extract::<u64>()
                .ok()
                .filter(|id| !members.by_id.contains_key(id))
        } else {
            None
        };
        let id = match own {
            Some(id) => id,
            None => {
                let mut id = members.next_auto;
                while members.by_id.contains_key(&id) {
                    id = id.wrapping_add(1);
                }
                members.next_auto = id.wrapping_add(1);
                id
            }
        };
        self.inner
            .core
            .add(id)
            .map_err(|e| membership_error(py, e, node))?;
        by_node.set_item(node, id)?;
        members.by_id.insert(id, node.clone().unbind());
        Ok(())
    }

    fn id_of(&self, py: Python<'_>, members: &Members, node: &Bound<'_, PyAny>) -> PyResult<u64> {
        match members.by_node.bind(py).get_item(node)? {
            Some(id) => id.extract(),
            None => Err(membership_error(py, MembershipError::UnknownId(0), node)),
        }
    }

    fn info(&self, py: Python<'_>, node: Py<PyAny>, s: &NodeSnapshot) -> PyResult<Py<PyAny>> {
        let kwargs = PyDict::new(py);
        kwargs.set_item("node", node)?;
        kwargs.set_item("id", s.id)?;
        kwargs.set_item("state", state_name(s.state))?;
        kwargs.set_item("success_rate", s.success_rate)?;
        kwargs.set_item("weight", s.weight)?;
        kwargs.set_item("successes", s.successes)?;
        kwargs.set_item("failures", s.failures)?;
        kwargs.set_item("penalty", s.penalty)?;
        kwargs.set_item("limit", s.limit)?;
        kwargs.set_item("in_flight", s.in_flight)?;
        kwargs.set_item("window_finished", s.window_finished)?;
        kwargs.set_item("window_succeeded", s.window_succeeded)?;
        kwargs.set_item("sticky_finished", s.sticky_finished)?;
        kwargs.set_item("sticky_succeeded", s.sticky_succeeded)?;
        kwargs.set_item("has_data", s.has_data)?;
        kwargs.set_item("by_outcome", outcome_counts(py, |o| s.released(o))?)?;
        Ok(weir_type(py, "NodeInfo")?.call((), Some(&kwargs))?.unbind())
    }

    fn refused(py: Python<'_>, r: Rejected) -> PyErr {
        match r {
            Rejected::NoActiveNodes => weir_err(
                py,
                "NoNodes",
                "no node is in rotation (none added, all removed, or all in lame duck)",
            ),
            _ => weir_err(
                py,
                "NoCapacity",
                "every node is at its concurrency limit (or much worse than a busy one): shed the call, or pass timeout= to wait",
            ),
        }
    }

    /// The fail-fast acquire (`timeout=0`): the lease, or NoCapacity or NoNodes at once.
    fn fail_fast(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, Rng>>,
    ) -> PyResult<Lease> {
        self.try_once(py, now, rng)?
            .ok_or_else(|| Self::refused(py, Rejected::AllBusy))
    }

    /// One fail-fast acquire: `Ok(None)` when every node is busy, an answer counted as a refusal in the
    /// core's stats. A retry after a lease whose node was removed (see the module docs) is part of the
    /// same acquire, so each call counts at most once. (The waiting acquires are counted by the core's
    /// waiting forms, which `acquire(timeout=...)` and the leases in waiting go through.)
    fn try_once(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, Rng>>,
    ) -> PyResult<Option<Lease>> {
        let (t, explicit) = now_ns(now)?;
        let core = &self.inner.core;
        let seed = core.config().seed;
        loop {
            match draw(rng, seed, |r| core.acquire_uncounted(t, r)) {
                Ok(lease) => {
                    if let Some(l) = self.inner.wrap(py, lease, explicit) {
                        return Ok(Some(l));
                    }
                }
                Err(Rejected::AllBusy) => {
                    core.count_refusal(Rejected::AllBusy);
                    return Ok(None);
                }
                Err(r) => {
                    core.count_refusal(r);
                    return Err(Self::refused(py, r));
                }
            }
        }
    }
}

#[pymethods]
impl Balancer {
    #[new]
    #[pyo3(signature = (nodes=None, config=None, *, capacity=None, classify=None), text_signature = "(nodes=(), config=None, *, capacity=None, classify=None)")]
    fn new(
        py: Python<'_>,
        nodes: Option<&Bound<'_, PyAny>>,
        config: Option<&Bound<'_, PyAny>>,
        capacity: Option<&Bound<'_, PyAny>>,
        classify: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let classify = match classify.filter(|c| !c.is_none()) {
            Some(c) if !c.is_callable() => {
                return Err(PyTypeError::new_err(format!(
                    "classify must be a callable (BaseException) -> weir.Outcome, not {}",
                    c.get_type().name()?
                )))
            }
            c => c.map(|c| c.clone().unbind()),
        };
        let draw_seed = || fastrand::u64(..);
        let config = match config.filter(|c| !c.is_none()) {
            Some(c) => config_from(c)?.get().resolved(draw_seed),
            None => weir::Config {
                seed: draw_seed(),
                ..weir::Config::default()
            },
        };
        // Collect the nodes first: an iterator is consumed once, and a bad node fails before any state.
        let nodes: Vec<Bound<'_, PyAny>> = match nodes.filter(|n| !n.is_none()) {
            Some(n) => {
                if n.is_instance_of::<pyo3::types::PyString>() {
                    return Err(PyTypeError::new_err(
                        "nodes must be an iterable of nodes, not a str (did you mean [\"...\"]?)",
                    ));
                }
                n.try_iter()?.collect::<PyResult<_>>()?
            }
            None => Vec::new(),
        };
        let capacity = match capacity.filter(|c| !c.is_none()) {
            Some(c) => int_in(c, "capacity", 1, MAX_NODES as u64)? as usize,
            None => (nodes.len().saturating_mul(2)).clamp(16, MAX_NODES),
        };
        if nodes.len() > capacity {
            return Err(PyValueError::new_err(format!(
                "capacity ({capacity}) is smaller than the {} nodes given",
                nodes.len()
            )));
        }
        let core = HeapBalancer::with_capacity(capacity, config)
            .map_err(|e| crate::config::config_error(e, "Balancer"))?;
        let cells = (0..capacity).map(|_| ArcSwapOption::empty()).collect();
        let b = Balancer {
            inner: Arc::new(Inner {
                core: Arc::new(core),
                classify,
                cells,
                members: Mutex::new(Members {
                    by_node: PyDict::new(py).unbind(),
                    by_id: HashMap::new(),
                    next_auto: AUTO_ID_START,
                }),
            }),
        };
        {
            let mut members = b.inner.members(py);
            for n in &nodes {
                b.add_locked(py, &mut members, n)?;
            }
        }
        Ok(b)
    }

    /// Adds a node (any hashable object). It starts fully trusted, with the limit's initial value.
    /// Raises DuplicateNode if it is a member, CapacityFull if no slot is free.
    fn add(&self, py: Python<'_>, node: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut members = self.inner.members(py);
        self.add_locked(py, &mut members, node)
    }

    /// Removes a node; its leases in flight finish normally (their release records nothing and returns
    /// False). Raises UnknownNode if it is not a member.
    fn remove(&self, py: Python<'_>, node: &Bound<'_, PyAny>) -> PyResult<()> {
        let mut members = self.inner.members(py);
        let id = self.id_of(py, &members, node)?;
        self.inner
            .core
            .remove(id)
            .map_err(|e| membership_error(py, e, node))?;
        members.by_node.bind(py).del_item(node)?;
        members.by_id.remove(&id);
        for cell in self.inner.cells.iter() {
            if cell.load().as_ref().is_some_and(|c| c.id == id) {
                cell.store(None);
            }
        }
        Ok(())
    }

    /// Puts a node into lame duck (no new leases; those in flight finish normally) or back into rotation.
    #[pyo3(signature = (node, lame_duck=None))]
    fn set_lame_duck(
        &self,
        py: Python<'_>,
        node: &Bound<'_, PyAny>,
        lame_duck: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let on = match lame_duck {
            Some(v) => boolean(v, "lame_duck")?,
            None => true,
        };
        let members = self.inner.members(py);
        let id = self.id_of(py, &members, node)?;
        self.inner
            .core
            .set_lame_duck(id, on)
            .map_err(|e| membership_error(py, e, node))
    }

    /// The node due for a health check, or None. Health checks bring back a node the balancer avoids
    /// since it failed, without sending it a caller's call: a member in rotation that carries a penalty,
    /// has no call in flight and whose last failure is `quiet` or more old (seconds or a timedelta) is
    /// due, the one quiet longest first. Naming it restarts its quiet period, so it is not named again
    /// within `quiet`: send it your own health request and give the answer to `report_check`. Call it on
    /// a timer (a tenth of `quiet` is plenty), not per call: it reads every node. A node that fails again
    /// within the failure half-life of a healthy check's readmission (a relapse) waits `quiet` doubled
    /// once per relapse, up to 2**6 times. Always None under the weighted family (`Config.cascade()`).
    /// `now` dates it as it dates an acquire.
    ///
    /// GIL: held for the call; lock-free but for the lookup of the node object.
    #[pyo3(signature = (quiet, *, now=None))]
    fn due_check(
        &self,
        py: Python<'_>,
        quiet: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let quiet_ns = duration_ns(quiet, "quiet")?;
        let (t, _) = now_ns(now)?;
        let Some(id) = self.inner.core.due_check(t, quiet_ns) else {
            return Ok(None);
        };
        // A node removed since the core named it is no longer due.
        let members = self.inner.members(py);
        Ok(members.by_id.get(&id).map(|n| n.clone_ref(py)))
    }

    /// Records the answer of a health check of `node` (see `due_check`): `healthy=True` forgives all its
    /// failures (penalty 0), so the next calls take it as any idle node; False records one failure and
    /// restarts its quiet period. A check is not a call: no statistic and no concurrency limit counts
    /// it. Any member may be reported, whether or not `due_check` named it. Raises UnknownNode if it is
    /// not a member, WeirError under the weighted family (`Config.cascade()`), which takes no checks.
    #[pyo3(signature = (node, healthy, *, now=None))]
    fn report_check(
        &self,
        py: Python<'_>,
        node: &Bound<'_, PyAny>,
        healthy: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let healthy = boolean(healthy, "healthy")?;
        let (t, _) = now_ns(now)?;
        let members = self.inner.members(py);
        let id = self.id_of(py, &members, node)?;
        self.inner
            .core
            .report_check(id, healthy, t)
            .map_err(|e| match e {
                CheckError::UnknownId(id) => {
                    membership_error(py, MembershipError::UnknownId(id), node)
                }
                other => weir_err(py, "WeirError", other.to_string()),
            })
    }

    fn __contains__(&self, py: Python<'_>, node: &Bound<'_, PyAny>) -> PyResult<bool> {
        let members = self.inner.members(py);
        let found = members.by_node.bind(py).contains(node);
        // An unhashable object is simply not a member.
        Ok(found.unwrap_or(false))
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.inner.members(py).by_id.len()
    }

    fn __iter__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let members = self.inner.members(py);
        let keys = members.by_node.bind(py).keys();
        Ok(keys.try_iter()?.into_any().unbind())
    }

    /// Grants a lease, or raises NoCapacity (every node busy) or NoNodes (none in rotation).
    ///
    /// `timeout` is how long to wait for room, in seconds or a timedelta: 0, the default, never waits
    /// (NoCapacity at once), None waits for as long as it takes; the same in `acquire_async`.
    /// A wait is first come first served (newest first once the queue has stood 100 ms; a wait with a
    /// timeout that it then passes over for callers that came more than 100 ms later raises NoCapacity
    /// at once, an overload answer, where one with None waits on), with the GIL released, on the monotonic clock, so it cannot be combined with `now` or `rng`. Called on the
    /// thread of a running asyncio event loop, it never blocks: with no room at once it returns a lease
    /// in waiting, which `async with` waits for on the loop (any other use waits with the thread). `now`
    /// (seconds) dates the acquire for tests, and the lease must then be released with an explicit time
    /// too; `rng` draws from an explicit `weir.Rng`. (`timeout=None` failed at once before it waited for
    /// ever: a DeprecationWarning says so while code may still count on that.)
    #[pyo3(
        signature = (*, timeout = Timeout::NO_WAIT, now=None, rng=None),
        text_signature = "($self, *, timeout=0, now=None, rng=None)"
    )]
    fn acquire(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = crate::convert::timeout)] timeout: Timeout,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, Rng>>,
    ) -> PyResult<Lease> {
        if timeout == Timeout::NO_WAIT {
            return self.fail_fast(py, now, rng);
        }
        if timeout == Timeout::Forever {
            PyErr::warn(
                py,
                &py.get_type::<PyDeprecationWarning>(),
                c"Balancer.acquire(timeout=None) now waits for room for as long as it takes, as acquire_async(timeout=None) does; it used to fail at once, which timeout=0, the default, does",
                1,
            )?;
        }
        if now.is_some_and(|n| !n.is_none()) || rng.is_some() {
            return Err(PyTypeError::new_err(
                "timeout= waits on the monotonic clock and the thread's generator: it cannot be combined with now= or rng=",
            ));
        }
        if on_event_loop(py)? {
            return Lease::waiting(py, &self.inner, timeout.ns());
        }
        let deadline = timeout
            .ns()
            .and_then(|ns| Instant::now().checked_add(Duration::from_nanos(ns)));
        let Some(deadline) = deadline else {
            // No deadline (None, or one past what the platform's clock can hold): the core's blocking
            // wait has one, so a standing queue could shed it; a lease in waiting, whose core wait has
            // none, waits with this thread instead, for as long as it takes.
            let lease = Lease::waiting(py, &self.inner, timeout.ns())?;
            lease.grant(py)?;
            return Ok(lease);
        };
        loop {
            let core = Arc::clone(&self.inner.core);
            let waited =
                py.detach(move || core.acquire_wait_owned(deadline).map(|g| g.into_lease()));
            match waited {
                Ok(lease) => {
                    if let Some(l) = self.inner.wrap(py, lease, false) {
                        return Ok(l);
                    }
                }
                Err(e) => return Err(wait_error(py, e, timeout.ns())),
            }
        }
    }

    /// (For `Balancer.acquire_async`.) An acquire that never blocks, with `acquire`'s meaning of
    /// `timeout`: 0 is the fail-fast acquire; otherwise the lease if a node has room and nobody waits,
    /// else a lease in waiting, in the queue.
    #[pyo3(signature = (timeout))]
    fn _enqueue(
        &self,
        py: Python<'_>,
        #[pyo3(from_py_with = crate::convert::timeout)] timeout: Timeout,
    ) -> PyResult<Lease> {
        if timeout == Timeout::NO_WAIT {
            return self.fail_fast(py, None, None);
        }
        Lease::waiting(py, &self.inner, timeout.ns())
    }

    /// A retry's lease: the algorithm's choice among the members not in `tried` (the nodes the request
    /// already tried), so that a retry goes to another node while one has room; if none of them has room
    /// (or all are tried), the ordinary acquire over all decides. Raises NoCapacity or NoNodes as
    /// `acquire` does; objects in `tried` that are not members are ignored. Whether a request may be
    /// sent twice is the caller's decision; bound the retries with a `weir.RetryBudget`. `now` and
    /// `rng` as for `acquire`.
    ///
    /// GIL: held for the call; lock-free, never blocks.
    #[pyo3(signature = (tried, *, now=None, rng=None))]
    fn acquire_excluding(
        &self,
        py: Python<'_>,
        tried: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, Rng>>,
    ) -> PyResult<Lease> {
        let exclude: Vec<u64> = {
            let members = self.inner.members(py);
            let by_node = members.by_node.bind(py);
            let mut ids = Vec::new();
            for node in tried.try_iter()? {
                // An unhashable object is no member, so nothing to exclude.
                if let Ok(Some(id)) = by_node.get_item(node?) {
                    ids.push(id.extract::<u64>()?);
                }
            }
            ids
        };
        let (t, explicit) = now_ns(now)?;
        let core = &self.inner.core;
        let seed = core.config().seed;
        loop {
            match draw(rng, seed, |r| core.acquire_excluding(t, r, &exclude)) {
                Ok(lease) => {
                    if let Some(l) = self.inner.wrap(py, lease, explicit) {
                        return Ok(l);
                    }
                }
                Err(r) => return Err(Self::refused(py, r)),
            }
        }
    }

    /// Grants a lease, or returns None when every node is busy; raises NoNodes when none is in rotation.
    #[pyo3(signature = (*, now=None, rng=None))]
    fn try_acquire(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, Rng>>,
    ) -> PyResult<Option<Lease>> {
        self.try_once(py, now, rng)
    }

    /// A snapshot of every member, in slot order, as `weir.NodeInfo` dataclasses.
    #[pyo3(signature = (*, now=None))]
    fn nodes(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Py<PyAny>>> {
        let (t, _) = now_ns(now)?;
        let snaps: Vec<NodeSnapshot> = self.inner.core.nodes(t).collect();
        let objects: Vec<Option<Py<PyAny>>> = {
            let members = self.inner.members(py);
            snaps
                .iter()
                .map(|s| members.by_id.get(&s.id).map(|n| n.clone_ref(py)))
                .collect()
        };
        snaps
            .iter()
            .zip(objects)
            .filter_map(|(s, o)| o.map(|o| self.info(py, o, s)))
            .collect()
    }

    /// A snapshot of one member as a `weir.NodeInfo`; raises UnknownNode if it is not one.
    #[pyo3(signature = (node, *, now=None))]
    fn node(
        &self,
        py: Python<'_>,
        node: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let (t, _) = now_ns(now)?;
        let (id, object) = {
            let members = self.inner.members(py);
            let id = self.id_of(py, &members, node)?;
            (id, members.by_id.get(&id).map(|n| n.clone_ref(py)))
        };
        match (self.inner.core.node(id, t), object) {
            (Some(s), Some(o)) => self.info(py, o, &s),
            _ => Err(membership_error(py, MembershipError::UnknownId(id), node)),
        }
    }

    /// Balancer-wide counters as a `weir.Stats` dataclass.
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let s = self.inner.core.stats();
        let by_outcome = outcome_counts(py, |o| s.released(o))?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("acquired", s.acquired)?;
        kwargs.set_item("rejected_all_busy", s.rejected_all_busy)?;
        kwargs.set_item("rejected_no_active", s.rejected_no_active)?;
        kwargs.set_item("by_outcome", by_outcome)?;
        kwargs.set_item("released_stale", s.released_stale)?;
        kwargs.set_item("in_flight", s.in_flight)?;
        kwargs.set_item("active_nodes", s.active_nodes)?;
        kwargs.set_item("lame_duck_nodes", s.lame_duck_nodes)?;
        kwargs.set_item("waits", s.waits)?;
        kwargs.set_item("waits_granted", s.waits_granted)?;
        kwargs.set_item("waits_timed_out", s.waits_timed_out)?;
        kwargs.set_item("waits_cancelled", s.waits_cancelled)?;
        kwargs.set_item("waiting", s.waiting)?;
        Ok(weir_type(py, "Stats")?.call((), Some(&kwargs))?.unbind())
    }

    /// The balancer's and its members' metrics as Prometheus text (docs/metrics.md has the table):
    /// every name starts with `prefix` and `_`, every sample carries the constant `labels` (a mapping or
    /// (name, value) pairs of str). A member's `node` label is `names[node]` (a mapping; a node it lacks
    /// gets `str(node)`), `names(node)` (a callable), or by default `str(node)`. `ValueError` for a refused
    /// prefix or label name. Reads what `stats()` and `nodes()` read, without a lock on the hot path.
    ///
    /// GIL: held throughout (names may call Python code).
    #[pyo3(signature = (prefix="weir", labels=None, names=None, *, now=None))]
    fn metrics_text(
        &self,
        py: Python<'_>,
        prefix: &str,
        labels: Option<&Bound<'_, PyAny>>,
        names: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let (t, _) = now_ns(now)?;
        let format = Format::read(prefix, labels)?;
        // Copied out of the lock first: `names` and `str` may run Python code.
        let members: Vec<(u64, Py<PyAny>)> = {
            let m = self.inner.members(py);
            m.by_id
                .iter()
                .map(|(id, o)| (*id, o.clone_ref(py)))
                .collect()
        };
        let mut by_id = HashMap::with_capacity(members.len());
        for (id, node) in members {
            by_id.insert(id, node_name(py, node.bind(py), names)?);
        }
        let name = |id: u64, o: &mut dyn std::fmt::Write| match by_id.get(&id) {
            Some(n) => o.write_str(n),
            // A node added since the names were read.
            None => weir::metrics::node_id_name(id, o),
        };
        format.text(|out, f| self.inner.core.write_metrics(out, f, &name, t))
    }

    /// The number of node slots.
    #[getter]
    fn capacity(&self) -> usize {
        self.inner.core.capacity()
    }
    /// Slots holding a member or a removed node whose leases are still in flight.
    #[getter]
    fn slots_in_use(&self) -> usize {
        self.inner.core.slots_in_use()
    }
    /// The configuration, as a `weir.Config` with the seed in use (drawn at random when the one given had
    /// none): given to another balancer, it configures that one the same way.
    #[getter]
    fn config(&self) -> Config {
        Config::of_balancer(*self.inner.core.config())
    }
    /// The exception classifier of this balancer's leases: the `classify=` given, else
    /// `weir.outcome_for_exception`.
    #[getter]
    fn classify(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match &self.inner.classify {
            Some(c) => Ok(c.clone_ref(py)),
            None => crate::lease::default_classifier(py),
        }
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let c = self.inner.core.config();
        format!(
            "<weir.Balancer {} nodes, capacity {}, algorithm {}, limit {}>",
            self.__len__(py),
            self.inner.core.capacity(),
            algorithm_name(c.algorithm),
            limit_name(c.limit)
        )
    }
}
