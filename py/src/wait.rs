//! Waiting for room without a thread per waiter: the lease in waiting.
//!
//! # What waits
//! A waiting acquire that no node can serve at once (`Balancer.acquire_async`, and `Balancer.acquire(
//! timeout=...)` called on a thread that runs an asyncio event loop) returns a lease *in waiting*: a
//! `Lease` whose node is not known yet, holding the core's waiting future (`WaitOwned`). That future is a
//! place in the core's queue of waiters, bounded by `max_waiters` and shared with the threads that
//! block in `acquire(timeout=...)`, so fairness and the bound hold across both. Nothing runs while it
//! waits: no thread, no polling; the only timer is the event loop's, for the deadline.
//!
//! # Who wakes whom
//! The core serves its queue on the thread that frees a slot (a release, a node entering rotation, a
//! joiner's drain): it acquires for the front waiter, keeps that lease in the queue for it, and calls the
//! waiter's `Waker` once the queue's lock is released. A lease in waiting has one of two wakers:
//! - [`LoopWake`], set by `weir._wait` when a task awaits the lease: a Python callable that calls
//!   `loop.call_soon_threadsafe`, so the releasing thread (any thread, the loop's own included) schedules a
//!   poll on the loop; that poll picks the lease up and resolves the task's future.
//! - [`Unpark`], for a lease in waiting used synchronously (`with`, `lease.node`, a release): the thread
//!   parks, detached from the interpreter, until it is woken or its deadline passes.
//!
//! The first poll (which joins the queue) uses a no-op waker: a lease handed over before the real waker
//! is set is found by the next poll, which swaps the waker in under the queue's lock, so no wake-up is
//! lost.
//!
//! # Cancellation and races
//! [`Pending::cancel`] drops the core's future at once: the waiter leaves the queue, or, if a lease was
//! handed to it and not picked up yet, the core releases that lease as IGNORED, which serves the next
//! waiter. So a cancelled waiter never takes a later release. A wake that arrives after a cancel finds
//! nothing to do. A lease picked up just before its task was cancelled is released as IGNORED by
//! `Lease._cancel` (called by `weir._wait`). At the deadline, a lease handed over at that same instant is
//! kept (the core's rule). A lease is never lost or leaked.

use crate::balancer::Inner;
use crate::convert::weir_err;
use crate::lease::Granted;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};
use weir::rt::{WaitError, WaitOwned};
use weir::NodeSlot;

/// The core's waiting future, owning an `Arc` of the balancer.
type CoreWait = WaitOwned<Box<[NodeSlot]>>;

/// The longest a blocked thread parks before it looks at the clock again (a deadline "for ever" is
/// reached by parking this long repeatedly).
const MAX_PARK: Duration = Duration::from_secs(3600);

/// The core's waiting future for a waiter, `bounded` when it has a deadline: a standing queue may then
/// shed it (`WaitError::Shed`, raised as `NoCapacity`); one that waits for ever is never shed.
fn core_wait(inner: &Inner, bounded: bool) -> CoreWait {
    let wait = Arc::clone(&inner.core).acquire_async_owned();
    if bounded {
        wait.bounded()
    } else {
        wait
    }
}

/// Why a waiting acquire got no lease, as the Python exception it raises.
pub fn wait_error(py: Python<'_>, e: WaitError, timeout_ns: Option<u64>) -> PyErr {
    match e {
        WaitError::Timeout => weir_err(
            py,
            "NoCapacity",
            match timeout_ns {
                Some(ns) => format!(
                    "no node had room within the timeout ({} s)",
                    ns as f64 / 1e9
                ),
                None => "no node had room within the timeout".into(),
            },
        ),
        WaitError::NoActiveNodes => weir_err(
            py,
            "NoNodes",
            "no node is in rotation (none added, all removed, or all in lame duck)",
        ),
        WaitError::Shed => weir_err(
            py,
            "NoCapacity",
            "the queue stood and newer callers were served first: answered before the timeout \
             (an overload answer: answer the request, or retry)",
        ),
        other => weir_err(py, "NoCapacity", other.to_string()),
    }
}

/// Wakes a task on an event loop: calls a Python callable (`weir._wait` gives one that calls
/// `loop.call_soon_threadsafe`) from whatever thread the core wakes on.
pub struct LoopWake {
    callback: Py<PyAny>,
}

impl LoopWake {
    pub fn waker(callback: Py<PyAny>) -> Waker {
        Waker::from(Arc::new(LoopWake { callback }))
    }
}

impl Wake for LoopWake {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        // The core wakes outside its locks, on the thread that freed the slot, attached or not. During
        // interpreter shutdown nothing is left to wake (`try_attach` declines).
        let _ = Python::try_attach(|py| {
            if let Err(e) = self.callback.call0(py) {
                // The callback handles a closed loop itself; anything else is a bug worth seeing.
                e.write_unraisable(py, Some(self.callback.bind(py)));
            }
        });
    }
}

/// Wakes a thread parked in [`Pending::block`].
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Where a lease in waiting stands.
enum Step {
    /// In the core's queue (or served there, not picked up yet).
    Waiting(CoreWait),
    /// Picked up: `grant` is set.
    Granted,
    /// Ended without a lease.
    Ended(Ended),
}

/// Why a lease in waiting ended without a node.
#[derive(Clone, Copy, Debug)]
enum Ended {
    Refused(WaitError),
    Cancelled,
}

struct State {
    step: Step,
    /// The waker the core calls; the latest given.
    waker: Waker,
}

/// A lease in waiting: the core's future, its waker and its deadline (see the module docs).
pub struct Pending {
    /// `None` waits for ever.
    deadline: Option<Instant>,
    /// The timeout as given, for messages.
    timeout_ns: Option<u64>,
    /// The lease and its node, once served and picked up.
    grant: OnceLock<Granted>,
    state: Mutex<State>,
}

impl Pending {
    /// A waiter that has not joined the queue yet: its first [`poll`](Self::poll) joins it.
    pub fn new(inner: &Inner, timeout_ns: Option<u64>) -> Self {
        // A deadline past what the platform's clock can hold is no deadline.
        let deadline =
            timeout_ns.and_then(|ns| Instant::now().checked_add(Duration::from_nanos(ns)));
        Pending {
            deadline,
            timeout_ns,
            grant: OnceLock::new(),
            state: Mutex::new(State {
                step: Step::Waiting(core_wait(inner, deadline.is_some())),
                waker: Waker::noop().clone(),
            }),
        }
    }

    fn lock(&self, py: Python<'_>) -> MutexGuard<'_, State> {
        // Nothing panics while the state is changed, and each change is complete before the next.
        self.state
            .lock_py_attached(py)
            .unwrap_or_else(|p| p.into_inner())
    }

    /// The lease and its node, once picked up.
    pub fn granted(&self) -> Option<&Granted> {
        self.grant.get()
    }

    /// Seconds left until the deadline (0.0 once passed), or `None` without one.
    pub fn remaining(&self) -> Option<f64> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()).as_secs_f64())
    }

    /// Whether the deadline has passed.
    pub fn passed(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn error(&self, py: Python<'_>, ended: Ended) -> PyErr {
        match ended {
            Ended::Refused(e) => wait_error(py, e, self.timeout_ns),
            Ended::Cancelled => weir_err(
                py,
                "LeaseError",
                "this lease's wait for room was cancelled: it has no node",
            ),
        }
    }

    /// Polls the core's future with `waker` (if given, it replaces the last one). `Ok(true)`: granted
    /// ([`granted`](Self::granted) has it); `Ok(false)`: still waiting; `Err`: ended without a lease (for good).
    pub fn poll(&self, py: Python<'_>, inner: &Inner, waker: Option<Waker>) -> PyResult<bool> {
        let mut st = self.lock(py);
        if let Some(w) = waker {
            if !st.waker.will_wake(&w) {
                st.waker = w;
            }
        }
        self.poll_locked(py, inner, &mut st)
    }

    fn poll_locked(&self, py: Python<'_>, inner: &Inner, st: &mut State) -> PyResult<bool> {
        let State { step, waker } = st;
        loop {
            let wait = match step {
                Step::Waiting(wait) => wait,
                Step::Granted => return Ok(true),
                Step::Ended(e) => return Err(self.error(py, *e)),
            };
            match Pin::new(wait).poll(&mut Context::from_waker(waker)) {
                Poll::Pending => return Ok(false),
                Poll::Ready(Ok(guard)) => match inner.grant(py, guard.into_lease()) {
                    Some(g) => {
                        // Set under the state's lock: whoever sees `Granted` sees the grant.
                        let _ = self.grant.set(g);
                        *step = Step::Granted;
                        return Ok(true);
                    }
                    // Its node was removed before it was picked up (the lease went back): wait again,
                    // at the back of the queue, as if it had arrived a moment later.
                    None => *step = Step::Waiting(core_wait(inner, self.deadline.is_some())),
                },
                Poll::Ready(Err(e)) => {
                    *step = Step::Ended(Ended::Refused(e));
                    return Err(self.error(py, Ended::Refused(e)));
                }
            }
        }
    }

    /// The deadline has passed: `Ok` if a lease was handed over by now (it wins), else leaves the queue
    /// and raises `NoCapacity`.
    pub fn expire(&self, py: Python<'_>, inner: &Inner) -> PyResult<()> {
        let mut st = self.lock(py);
        let timed_out = Step::Ended(Ended::Refused(WaitError::Timeout));
        let wait = match std::mem::replace(&mut st.step, timed_out) {
            Step::Waiting(wait) => wait,
            other => {
                // Granted or ended already: nothing to time out.
                st.step = other;
                drop(st);
                return self.poll(py, inner, None).map(|_| ());
            }
        };
        // The core's `time_out` counts the wait as timed out (and the answer as a refusal) in `stats()`,
        // where dropping it would count it as cancelled; it releases nothing, so it wakes nobody.
        match wait.time_out() {
            Ok(guard) => match inner.grant(py, guard.into_lease()) {
                Some(g) => {
                    let _ = self.grant.set(g);
                    st.step = Step::Granted;
                    Ok(())
                }
                // Handed over at the deadline, its node removed since: no time left to wait again.
                None => Err(self.error(py, Ended::Refused(WaitError::Timeout))),
            },
            Err(e) => {
                st.step = Step::Ended(Ended::Refused(e));
                Err(self.error(py, Ended::Refused(e)))
            }
        }
    }

    /// Gives up: leaves the queue at once, and the core gives back a lease handed over meanwhile (as
    /// IGNORED, serving the next waiter). Returns whether it was still waiting.
    pub fn cancel(&self, py: Python<'_>) -> bool {
        let left = {
            let mut st = self.lock(py);
            if !matches!(st.step, Step::Waiting(_)) {
                return false;
            }
            std::mem::replace(&mut st.step, Step::Ended(Ended::Cancelled))
        };
        drop(left);
        true
    }

    /// Waits with this thread until the lease is granted (`Ok`) or the deadline passes (`NoCapacity`),
    /// parked and detached from the interpreter: what `acquire(timeout=...)` does without a loop.
    pub fn block(&self, py: Python<'_>, inner: &Inner) -> PyResult<()> {
        let waker = Waker::from(Arc::new(Unpark(thread::current())));
        loop {
            if self.poll(py, inner, Some(waker.clone()))? {
                return Ok(());
            }
            let left = match self.deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => MAX_PARK,
            };
            if left.is_zero() {
                return self.expire(py, inner);
            }
            // Spurious and early wake-ups only go round again; a wake before the park makes it return.
            py.detach(|| thread::park_timeout(left.min(MAX_PARK)));
        }
    }
}
