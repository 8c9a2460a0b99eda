//! `Lease`: the right to make one call to one node, released exactly once with the call's outcome.
//!
//! A lease is a context manager (`with` and `async with`): a normal exit records SUCCESS, an exception the
//! outcome its balancer's classifier gives (`Balancer(classify=...)`, by default
//! `weir.outcome_for_exception`: a timeout DROPPED, a cancellation IGNORED, an HTTP status error its
//! status's outcome, anything else FAILURE); an explicit `succeeded()`, `failed()`, `dropped()`,
//! `ignore()`, `throttled()`, `client_error()`, `http_status(code)`, `raised(exc)` or `release(outcome)`
//! inside the block wins. A second release raises `LeaseError` and changes nothing. A lease
//! garbage-collected unreleased is released as IGNORED (`Drop`). A release by hand (but `raised`) may carry
//! the load the server reported with its answer (`load=`, the core's `Balancer::release_loaded`).
//!
//! A classifier that raises, or returns something that is not an outcome, still releases the lease (with
//! `weir.outcome_for_exception`'s answer), then its error propagates, chained to the block's exception:
//! counters stay conserved and the bug is seen.
//!
//! Clocks never mix: a lease acquired with an explicit `now=` must be released with an explicit `now=`,
//! and one acquired on the monotonic clock without one, or the release raises `ClockMismatch` (and
//! records nothing). A context exit cannot know the time of a test clock, so it hands such a lease back
//! as IGNORED and raises `ClockMismatch`.
//!
//! A lease may be *in waiting* (`wait.rs`): its node is not known yet. `async with` (and `weir._wait`)
//! wait for it on the event loop; any other use (`with`, an attribute, a release) waits for it with the
//! thread, as a blocking `acquire(timeout=...)` would have.

use crate::balancer::Inner;
use crate::convert::{int_in, now_ns, secs, server_load, weir_err};
use crate::wait::{LoopWake, Pending};
use pyo3::exceptions::{PyBaseException, PyStopIteration, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use weir::balance::{RawLease, ReleaseError};
use weir::limit::ServerLoad;
use weir::Outcome;

/// A lease the core granted, and its node object.
pub struct Granted {
    pub raw: RawLease,
    pub node: Py<PyAny>,
}

/// A granted lease on one node. Obtained from `Balancer.acquire()` or `Balancer.try_acquire()`.
/// `acquire(timeout=...)` called on an asyncio loop's thread may return it *in waiting* (no node yet):
/// `async with` waits for its node on the loop, any other use waits with the thread. A lease in waiting
/// belongs to one caller: use it from one task or thread.
///
/// GIL: thread-safe; a lease may be released from another thread than the one that acquired it (exactly
/// once, whichever thread tries first).
#[pyclass(frozen, generic, module = "weir")]
pub struct Lease {
    inner: Arc<Inner>,
    /// The lease and its node, for a lease granted at once (`None` for a lease in waiting: its
    /// `Pending` gets them).
    granted: Option<Granted>,
    /// A lease in waiting's place in the queue (`wait.rs`). Boxed, and the later grant kept there: the
    /// lease moves on every acquire, and a larger struct (or a `OnceLock` set at construction) costs the
    /// hot path a `memcpy` (or a `Once` call).
    pending: Option<Box<Pending>>,
    explicit: bool,
    released: AtomicBool,
}

impl Lease {
    /// Wraps a lease the core granted.
    pub fn new(inner: Arc<Inner>, raw: RawLease, node: Py<PyAny>, explicit: bool) -> Self {
        Lease {
            inner,
            granted: Some(Granted { raw, node }),
            pending: None,
            explicit,
            released: AtomicBool::new(false),
        }
    }

    /// A waiting acquire on the monotonic clock that never blocks: the lease if a node has room and
    /// nobody waits, else a lease in waiting, in the queue (`timeout_ns`: `None` waits for ever). Raises
    /// at once what cannot wait: no node in rotation, a full queue, or no room with no time left.
    pub fn waiting(py: Python<'_>, inner: &Arc<Inner>, timeout_ns: Option<u64>) -> PyResult<Self> {
        let pending = Pending::new(inner, timeout_ns);
        let now = pending.poll(py, inner, None)?;
        if !now && pending.passed() {
            pending.expire(py, inner)?;
        }
        Ok(Lease {
            inner: Arc::clone(inner),
            granted: None,
            pending: Some(Box::new(pending)),
            explicit: false,
            released: AtomicBool::new(false),
        })
    }

    /// The lease and its node if it has them (a lease in waiting gets them when served).
    fn got(&self) -> Option<&Granted> {
        match &self.granted {
            Some(g) => Some(g),
            None => self.pending.as_ref().and_then(|p| p.granted()),
        }
    }

    /// The lease and its node; a lease in waiting waits for them with this thread first.
    pub(crate) fn grant(&self, py: Python<'_>) -> PyResult<&Granted> {
        match self.got() {
            Some(g) => Ok(g),
            None => self.block(py),
        }
    }

    #[cold]
    fn block(&self, py: Python<'_>) -> PyResult<&Granted> {
        let waited = match &self.pending {
            Some(p) => p.block(py, &self.inner),
            None => Ok(()),
        };
        self.settle(waited)?;
        self.got()
            .ok_or_else(|| weir_err(py, "LeaseError", "this lease has no node"))
    }

    /// A wait that ended without a lease leaves nothing to release: the lease counts as released.
    fn settle<T>(&self, waited: PyResult<T>) -> PyResult<T> {
        if waited.is_err() {
            // Release: pairs with the loads of `released`; nothing else to publish.
            self.released.store(true, Ordering::Release);
        }
        waited
    }

    /// Marks the lease released, or fails if it was already (the first caller wins).
    fn take(&self, py: Python<'_>) -> PyResult<()> {
        // AcqRel: a release on another thread that won the swap happened-before our failure.
        if self.released.swap(true, Ordering::AcqRel) {
            return Err(weir_err(py, "LeaseError", "lease already released"));
        }
        Ok(())
    }

    /// Releases with `outcome` at `now_ns`, with the server's load report if there is one (the flag
    /// already taken). Ok(false): the node was removed.
    fn finish(
        &self,
        py: Python<'_>,
        outcome: Outcome,
        now_ns: u64,
        load: Option<ServerLoad>,
    ) -> PyResult<bool> {
        let lease = weir::Lease::from_raw(self.grant(py)?.raw);
        match self.inner.core.release_loaded(lease, outcome, now_ns, load) {
            Ok(()) => Ok(true),
            Err(ReleaseError::NodeRemoved { .. }) => Ok(false),
            Err(e) => Err(weir_err(py, "LeaseError", e.to_string())),
        }
    }

    /// Releases with `outcome` at `now` (checked against the lease's clock) and the load report `load`
    /// (`load=`, checked first: a refused one leaves the lease unreleased, as a refused outcome does).
    fn release_with(
        &self,
        py: Python<'_>,
        outcome: Outcome,
        now: Option<&Bound<'_, PyAny>>,
        load: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let load = server_load(load)?;
        // A lease in waiting gets its node first (so the release is dated after the grant).
        self.grant(py)?;
        let given = now.filter(|n| !n.is_none());
        if given.is_some() != self.explicit {
            return Err(self.mismatch(py));
        }
        let (t, _) = now_ns(given)?;
        self.take(py)?;
        self.finish(py, outcome, t, load)
    }

    fn mismatch(&self, py: Python<'_>) -> PyErr {
        if self.explicit {
            weir_err(
                py,
                "ClockMismatch",
                "this lease was acquired with an explicit now=; release it with an explicit now= too (lease.succeeded(now=...))",
            )
        } else {
            weir_err(
                py,
                "ClockMismatch",
                "this lease was acquired on the monotonic clock; release it without now= (or acquire it with now=)",
            )
        }
    }

    fn exit(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        if self.released.load(Ordering::Acquire) {
            return Ok(false);
        }
        if self.explicit {
            if self.released.swap(true, Ordering::AcqRel) {
                return Ok(false);
            }
            self.finish(py, Outcome::Ignored, self.grant(py)?.raw.start, None)?;
            return Err(weir_err(
                py,
                "ClockMismatch",
                "a lease acquired with an explicit now= cannot be released by its context exit (the exit has no time to give): call lease.succeeded(now=...) (or another outcome) inside the block; it was released as IGNORED",
            ));
        }
        let (outcome, error) = if exc_type.is_none() {
            (Outcome::Success, None)
        } else {
            match exception_of(exc_type, exc_value) {
                Some(exc) => self.classify(py, &exc),
                None => (Outcome::Failure, None),
            }
        };
        if !self.released.swap(true, Ordering::AcqRel) {
            self.finish(py, outcome, weir::rt::monotonic_now(), None)?;
        }
        match error {
            Some(e) => Err(e),
            // Never swallow the block's exception.
            None => Ok(false),
        }
    }

    /// The outcome of `exc` by the balancer's classifier, and the classifier's error if it raised or
    /// answered something that is not an outcome (the outcome is then `weir.outcome_for_exception`'s).
    fn classify(&self, py: Python<'_>, exc: &Bound<'_, PyAny>) -> (Outcome, Option<PyErr>) {
        let by_default = || -> PyResult<Outcome> {
            outcome_arg(&default_classifier(py)?.bind(py).call1((exc,))?)
        };
        let answer = match &self.inner.classify {
            Some(classify) => classify
                .bind(py)
                .call1((exc,))
                .and_then(|o| outcome_arg(&o)),
            None => by_default(),
        };
        match answer {
            Ok(outcome) => (outcome, None),
            Err(e) => (by_default().unwrap_or(Outcome::Failure), Some(e)),
        }
    }
}

/// `weir.outcome_for_exception`, imported once.
pub fn default_classifier(py: Python<'_>) -> PyResult<Py<PyAny>> {
    static DEFAULT: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    DEFAULT
        .import(py, "weir._outcomes", "outcome_for_exception")
        .map(|f| f.clone().unbind())
}

/// The exception a context exit was given: the value, or, when a caller passed only a type (Python's own
/// `with` always passes the value), an instance of it built without arguments; `None` if neither exists.
fn exception_of<'py>(
    exc_type: &Bound<'py, PyAny>,
    exc_value: &Bound<'py, PyAny>,
) -> Option<Bound<'py, PyAny>> {
    if exc_value.is_instance_of::<PyBaseException>() {
        return Some(exc_value.clone());
    }
    let t = exc_type.cast::<PyType>().ok()?;
    if !t.is_subclass_of::<PyBaseException>().unwrap_or(false) {
        return None;
    }
    t.call0()
        .ok()
        .filter(|e| e.is_instance_of::<PyBaseException>())
}

impl Drop for Lease {
    fn drop(&mut self) {
        // Garbage-collected unreleased: hand the slot back as IGNORED (nothing recorded). A test-clock
        // lease is dated at its own acquire time, so no monotonic reading mixes into its clock.
        // A lease in waiting that never got its node leaves the queue as its `Pending` is dropped.
        if !self.released.swap(true, Ordering::AcqRel) {
            if let Some(g) = self.got() {
                let now = if self.explicit {
                    g.raw.start
                } else {
                    weir::rt::monotonic_now()
                };
                let lease = weir::Lease::from_raw(g.raw);
                let _ = self.inner.core.release(lease, Outcome::Ignored, now);
            }
        }
    }
}

fn outcome_arg(v: &Bound<'_, PyAny>) -> PyResult<Outcome> {
    let code = int_in(v, "outcome", 0, 5)?;
    Outcome::from_code(code as u8).ok_or_else(|| PyValueError::new_err("outcome must be 0..=5"))
}

/// Whether a call that ended with the outcome code `outcome` (`weir.Outcome`) may be tried again on
/// another node (the core's `Outcome::is_retryable`): FAILURE, DROPPED and THROTTLED. Raises
/// ValueError for a code that is no outcome.
#[pyfunction]
pub fn outcome_is_retryable(outcome: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(outcome_arg(outcome)?.is_retryable())
}

/// The outcome code (`weir.Outcome`) of a call that ended with the OS error `errnum` (the core's
/// `Outcome::from_raw_os_error`, C's `weir_outcome_from_errno`): the table `outcome_for_exception`
/// follows for an `OSError`, and its tests check it errno by errno against this. Raises ValueError for
/// 0 and negative numbers.
#[pyfunction]
pub fn outcome_from_errno(errnum: &Bound<'_, PyAny>) -> PyResult<u8> {
    let n = int_in(errnum, "errnum", 1, i32::MAX as u64)?;
    let outcome = i32::try_from(n)
        .ok()
        .and_then(Outcome::from_raw_os_error)
        .ok_or_else(|| {
            PyValueError::new_err(format!("errnum must be a positive errno, got {n}"))
        })?;
    Ok(outcome as u8)
}

/// The outcome code (`weir.Outcome`) for an HTTP status: 100-399 SUCCESS, 429 THROTTLED, 503 and 504
/// DROPPED, other 4xx CLIENT_ERROR, other 5xx FAILURE. Raises ValueError for any int outside 100..=599,
/// with one message whatever the int (negative, 999 or past every integer type alike).
#[pyfunction]
pub fn outcome_from_http_status(status: &Bound<'_, PyAny>) -> PyResult<u8> {
    if status.is_instance_of::<pyo3::types::PyBool>()
        || !status.is_instance_of::<pyo3::types::PyInt>()
    {
        return Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "status must be an int, not {}",
            status.get_type().name()?
        )));
    }
    status
        .extract::<u16>()
        .ok()
        .and_then(|s| Outcome::from_http_status(s).ok())
        .map(|o| o as u8)
        .ok_or_else(|| {
            PyValueError::new_err(format!(
                "status must be an HTTP status code, between 100 and 599, got {status}"
            ))
        })
}

#[pymethods]
impl Lease {
    /// The node object this lease is for (the object given to the balancer).
    #[getter]
    fn node(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(self.grant(py)?.node.clone_ref(py))
    }
    /// The core's id of the node.
    #[getter]
    fn id(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(self.grant(py)?.raw.id)
    }
    /// When the lease was granted, in seconds on the clock it was acquired with.
    #[getter]
    fn acquired_at(&self, py: Python<'_>) -> PyResult<f64> {
        Ok(secs(self.grant(py)?.raw.start))
    }
    /// Calls in flight on the node when this one was admitted, including itself.
    #[getter]
    fn in_flight(&self, py: Python<'_>) -> PyResult<u32> {
        Ok(self.grant(py)?.raw.inflight)
    }
    /// Whether the lease has been released.
    #[getter]
    fn released(&self) -> bool {
        self.released.load(Ordering::Acquire)
    }

    /// Releases with `outcome` (a `weir.Outcome`). Returns True if it was recorded, False if the node was
    /// removed meanwhile (the slot is returned, nothing else is recorded). Raises LeaseError if released
    /// already, ClockMismatch if `now` is given for a monotonic lease or missing for a test-clock one.
    ///
    /// `load` is the load the server reported with its answer, if it did: its utilization, the calls it
    /// has in progress over the most it serves well (1.0 at its knee), kept in thousandths. The `Knee`
    /// limit reads it in place of the call's latency within `armed_for` of the node's last drop (above
    /// 1.0 eases the limit, above `hold / knee` holds it); the other limits ignore it. ValueError for
    /// NaN, infinities, a negative load or one above 1000, TypeError for a non-number (the lease stays
    /// unreleased).
    #[pyo3(signature = (outcome, *, now=None, load=None))]
    fn release(
        &self,
        py: Python<'_>,
        outcome: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
        load: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let o = outcome_arg(outcome)?;
        self.release_with(py, o, now, load)
    }
    /// Releases as SUCCESS (the node answered as it should); see `release`.
    #[pyo3(signature = (*, now=None, load=None))]
    fn succeeded(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        load: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.release_with(py, Outcome::Success, now, load)
    }
    /// Releases as FAILURE (a 5xx, connection refused or reset); see `release`.
    #[pyo3(signature = (*, now=None, load=None))]
    fn failed(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        load: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.release_with(py, Outcome::Failure, now, load)
    }
    /// Releases as DROPPED (timeout or overload: 503, 504, a deadline); see `release`.
    #[pyo3(signature = (*, now=None, load=None))]
    fn dropped(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        load: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.release_with(py, Outcome::Dropped, now, load)
    }
    /// Releases as IGNORED (not the node's fault: a cancelled call); see `release`. A `load` is checked
    /// as everywhere, and no limit reads it with this outcome.
    #[pyo3(signature = (*, now=None, load=None))]
    fn ignore(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        load: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.release_with(py, Outcome::Ignored, now, load)
    }
    /// Releases as THROTTLED (a 429); see `release`.
    #[pyo3(signature = (*, now=None, load=None))]
    fn throttled(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        load: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.release_with(py, Outcome::Throttled, now, load)
    }
    /// Releases as CLIENT_ERROR (another 4xx); see `release`.
    #[pyo3(signature = (*, now=None, load=None))]
    fn client_error(
        &self,
        py: Python<'_>,
        now: Option<&Bound<'_, PyAny>>,
        load: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.release_with(py, Outcome::ClientError, now, load)
    }
    /// Releases with the outcome of an HTTP status (see `weir.Outcome.from_http_status`) and the load the
    /// response reported (see `release`); ValueError for a status outside 100..=599 (the lease stays
    /// unreleased).
    #[pyo3(signature = (status, *, now=None, load=None))]
    fn http_status(
        &self,
        py: Python<'_>,
        status: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
        load: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let code = outcome_from_http_status(status)?;
        let o = Outcome::from_code(code).ok_or_else(|| PyValueError::new_err("status"))?;
        self.release_with(py, o, now, load)
    }
    /// Releases with the outcome of the exception `exc` by the balancer's classifier (`classify=`, by
    /// default `weir.outcome_for_exception`: a timeout DROPPED, a cancellation IGNORED, ...): what a `with`
    /// block's exit does, for a lease released by hand. TypeError if `exc` is not an exception (the lease
    /// stays unreleased). A classifier that fails releases with the default's outcome, then raises.
    #[pyo3(signature = (exc, *, now=None))]
    fn raised(
        &self,
        py: Python<'_>,
        exc: &Bound<'_, PyAny>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        if !exc.is_instance_of::<PyBaseException>() {
            return Err(PyTypeError::new_err(format!(
                "exc must be an exception, not {}",
                exc.get_type().name()?
            )));
        }
        let (outcome, error) = self.classify(py, exc);
        let recorded = self.release_with(py, outcome, now, None)?;
        match error {
            Some(e) => Err(e),
            None => Ok(recorded),
        }
    }

    fn __enter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, Self>> {
        slf.get().grant(slf.py())?;
        Ok(slf)
    }
    #[pyo3(signature = (exc_type, exc_value, traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let _ = traceback;
        self.exit(py, exc_type, exc_value)
    }
    /// A lease in waiting is awaited on the event loop (`weir._wait.granted`), without blocking it.
    fn __aenter__(slf: Bound<'_, Self>) -> PyResult<Bound<'_, PyAny>> {
        let py = slf.py();
        if slf.get().got().is_some() {
            return Ok(Bound::new(
                py,
                Ready {
                    value: slf.into_any().unbind(),
                },
            )?
            .into_any());
        }
        static GRANTED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
        GRANTED.import(py, "weir._wait", "granted")?.call1((slf,))
    }
    #[pyo3(signature = (exc_type, exc_value, traceback))]
    fn __aexit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<Ready> {
        let _ = traceback;
        let r = self.exit(py, exc_type, exc_value)?;
        Ok(Ready {
            value: r.into_pyobject(py)?.to_owned().into_any().unbind(),
        })
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let Some(g) = self.got() else {
            return Ok(if self.released() {
                "<weir.Lease that got no node>".into()
            } else {
                "<weir.Lease waiting for room>".into()
            });
        };
        Ok(format!(
            "<weir.Lease node={} {}>",
            g.node.bind(py).repr()?,
            if self.released() {
                "released"
            } else {
                "in flight"
            }
        ))
    }

    // The event loop's side of a lease in waiting, for `weir._wait` (see `wait.rs`).

    /// Whether the lease has its node, after one poll of its wait with `wake` (a callable the core calls,
    /// from any thread, when the lease is handed over) replacing the last one if given. Raises what ended
    /// the wait (NoCapacity, NoNodes).
    #[pyo3(signature = (wake=None))]
    fn _poll(&self, py: Python<'_>, wake: Option<Py<PyAny>>) -> PyResult<bool> {
        if self.got().is_some() {
            return Ok(true);
        }
        let Some(p) = &self.pending else {
            return Ok(false);
        };
        self.settle(p.poll(py, &self.inner, wake.map(LoopWake::waker)))
    }
    /// The deadline passed: True if the lease got its node by now, else it leaves the queue and raises
    /// NoCapacity.
    fn _expire(&self, py: Python<'_>) -> PyResult<bool> {
        if let Some(p) = self.pending.as_ref().filter(|_| self.got().is_none()) {
            self.settle(p.expire(py, &self.inner))?;
        }
        Ok(true)
    }
    /// Gives up at once: leaves the queue; a lease handed over meanwhile, or granted and not released yet,
    /// goes back as IGNORED (which serves the next waiter).
    fn _cancel(&self, py: Python<'_>) -> PyResult<()> {
        if self.pending.as_ref().is_some_and(|p| p.cancel(py)) {
            // Release: pairs with the loads of `released`; nothing else to publish.
            self.released.store(true, Ordering::Release);
            return Ok(());
        }
        if let Some(g) = self.got() {
            // AcqRel: as in `take`; whoever wins releases.
            if !self.released.swap(true, Ordering::AcqRel) {
                let now = if self.explicit {
                    g.raw.start
                } else {
                    weir::rt::monotonic_now()
                };
                self.finish(py, Outcome::Ignored, now, None)?;
            }
        }
        Ok(())
    }
    /// Seconds left until the wait's deadline (0.0 once passed), or None when it waits for ever (or never
    /// waited).
    fn _remaining(&self) -> Option<f64> {
        self.pending.as_ref().and_then(|p| p.remaining())
    }
}

/// An awaitable that is already done: what `Lease.__aenter__` and `__aexit__` return, since a lease's
/// entry and exit never wait.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir._weir")]
pub struct Ready {
    value: Py<PyAny>,
}

#[pymethods]
impl Ready {
    fn __await__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __iter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Err(PyStopIteration::new_err((self.value.clone_ref(py),)))
    }
    /// Part of the coroutine-like protocol of awaitables: a value sent in finishes at once too.
    fn send(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let _ = value;
        self.__next__(py)
    }
}
