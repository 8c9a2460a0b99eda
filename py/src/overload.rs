//! Overload protection: go-zero's adaptive `Shedder` (server side) with its `Promise`s and the
//! `CpuSampler` that feeds it, the SRE book's adaptive `Throttle` (client side), and Finagle's
//! `RetryBudget`.
//!
//! The Python package (`weir/__init__.py`) subclasses `Shedder` to add `with shedder:` and the `@shedder`
//! decorator; everything that touches the core is here.

use crate::convert::{float, int_in, now_ns, opt_duration_ns, secs, weir_err};
use crate::metrics::Format;
use crate::rng::{draw, Rng};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use weir::overload::{
    CpuSource, Criticality, RawPromise, RetryBudgetConfig, RetryBudgetConfigError,
    RetryBudgetExhausted, RetryDenied, ShedderConfig, ShedderConfigError, ThrottleConfig,
    ThrottleConfigError, MAX_WINDOW_BUCKETS,
};

/// Registers the classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CpuSampler>()?;
    m.add_class::<Shedder>()?;
    m.add_class::<Promise>()?;
    m.add_class::<Throttle>()?;
    m.add_class::<RetryBudget>()?;
    m.add_function(wrap_pyfunction!(rejection_probability, m)?)?;
    Ok(())
}

/// How often a `CpuSampler` reads the OS at most (go-zero's 250 ms refresh).
const REFRESH_NS: u64 = 250_000_000;

/// CPU usage of this process's cgroup (v2 or v1) or of the machine (`/proc/stat`), in millicpu (0..=1000),
/// as go-zero's moving average: what a `Shedder` compares with its `cpu_threshold`. Linux only; raises
/// `CpuUnavailable` elsewhere or when no source is readable.
///
/// `usage()` samples the OS at most every 250 ms (reading a few small files) and otherwise returns the
/// last average, so a shedder can call it on every request.
///
/// GIL: thread-safe; a sampling call holds a per-sampler lock for the file reads (microseconds); callers
/// that find it taken use the last average instead of waiting.
#[pyclass(frozen, module = "weir")]
pub struct CpuSampler {
    inner: Mutex<weir::overload::CpuSampler>,
    last: AtomicU64,
    usage: AtomicU32,
    source: CpuSource,
}

impl CpuSampler {
    fn current(&self, now: u64) -> u32 {
        // Relaxed: a rate limit on sampling; the lock below orders the samples themselves.
        let last = self.last.load(Ordering::Relaxed);
        if now.wrapping_sub(last) >= REFRESH_NS || last == 0 {
            if let Ok(mut s) = self.inner.try_lock() {
                self.last.store(now.max(1), Ordering::Relaxed);
                if let Ok(u) = s.sample(now) {
                    self.usage.store(u, Ordering::Relaxed);
                }
            }
        }
        self.usage.load(Ordering::Relaxed)
    }
}

fn cpu_error(py: Python<'_>, e: weir::overload::CpuError) -> PyErr {
    weir_err(py, "CpuUnavailable", e.to_string())
}

#[pymethods]
impl CpuSampler {
    #[new]
    #[pyo3(signature = (*, root=None))]
    fn new(py: Python<'_>, root: Option<std::path::PathBuf>) -> PyResult<Self> {
        let s = match root {
            Some(r) => weir::overload::CpuSampler::with_root(r),
            None => weir::overload::CpuSampler::new(),
        }
        .map_err(|e| cpu_error(py, e))?;
        let source = s.source();
        Ok(CpuSampler {
            inner: Mutex::new(s),
            last: AtomicU64::new(0),
            usage: AtomicU32::new(0),
            source,
        })
    }
    /// Where usage is read from: 'cgroup_v2', 'cgroup_v1' or 'proc_stat'.
    #[getter]
    fn source(&self) -> &'static str {
        match self.source {
            CpuSource::CgroupV2 => "cgroup_v2",
            CpuSource::CgroupV1 => "cgroup_v1",
            CpuSource::ProcStat => "proc_stat",
        }
    }
    /// The CPUs this process may use (the cgroup quota, else the CPU set, else the machine's).
    fn allowance(&self, py: Python<'_>) -> PyResult<f64> {
        let s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        s.allowance().map_err(|e| cpu_error(py, e))
    }
    /// Reads the OS now and returns the updated average (millicpu). Raises CpuUnavailable on a read error.
    #[pyo3(signature = (*, now=None))]
    fn sample(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<u32> {
        let (t, _) = now_ns(now)?;
        let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let u = s.sample(t).map_err(|e| cpu_error(py, e))?;
        self.last.store(t.max(1), Ordering::Relaxed);
        self.usage.store(u, Ordering::Relaxed);
        Ok(u)
    }
    /// The average usage in millicpu, sampling the OS first if the last sample is 250 ms old.
    fn usage(&self) -> u32 {
        self.current(weir::rt::monotonic_now())
    }
    fn __repr__(&self) -> String {
        format!("<weir.CpuSampler source={}>", self.source())
    }
}

fn shedder_config_error(e: ShedderConfigError) -> PyErr {
    PyValueError::new_err(match e {
        ShedderConfigError::Buckets => {
            format!("Shedder: buckets must be between 1 and {MAX_WINDOW_BUCKETS}")
        }
        ShedderConfigError::Window => "Shedder: window / buckets must be at least 1 ns".to_string(),
        ShedderConfigError::CpuThreshold => {
            "Shedder: cpu_threshold must be below 1000 millicpu".to_string()
        }
        other => format!("Shedder: {other}"),
    })
}

/// go-zero's adaptive load shedder: `allow()` admits a request or raises `weir.Overloaded` when the CPU
/// (or its cool-off) says the server is overloaded and both the requests in flight and their average
/// exceed what the server has recently shown it can pass. Each admitted request gets a `Promise`,
/// completed with `success()` (with its response time) or `failure()`.
///
/// `cpu` is where `allow()` reads CPU usage when it is not given one: a `CpuSampler`, a callable returning
/// millicpu, or None (0: never CPU-overloaded unless `cpu_threshold=0`).
///
/// GIL: thread-safe, lock-free (the core's atomics); each call holds the GIL for the core call only.
#[pyclass(frozen, subclass, module = "weir._weir")]
pub struct Shedder {
    core: Arc<weir::Shedder>,
    cpu: Option<Py<PyAny>>,
}

impl Shedder {
    fn cpu_now(&self, py: Python<'_>, cpu: Option<&Bound<'_, PyAny>>, now: u64) -> PyResult<u32> {
        if let Some(c) = cpu.filter(|c| !c.is_none()) {
            return Ok(int_in(c, "cpu", 0, 1000)? as u32);
        }
        match &self.cpu {
            None => Ok(0),
            Some(src) => {
                let src = src.bind(py);
                if let Ok(s) = src.cast::<CpuSampler>() {
                    return Ok(s.get().current(now));
                }
                let v = src.call0()?;
                Ok(int_in(&v, "cpu() result", 0, 1000)? as u32)
            }
        }
    }
}

#[pymethods]
impl Shedder {
    #[new]
    #[pyo3(signature = (*, window=None, buckets=None, cpu_threshold=None, cool_off=None, cpu=None), text_signature = "(*, window=5.0, buckets=50, cpu_threshold=900, cool_off=1.0, cpu=None)")]
    fn new(
        window: Option<&Bound<'_, PyAny>>,
        buckets: Option<&Bound<'_, PyAny>>,
        cpu_threshold: Option<&Bound<'_, PyAny>>,
        cool_off: Option<&Bound<'_, PyAny>>,
        cpu: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let d = ShedderConfig::default();
        let config = ShedderConfig {
            window_ns: opt_duration_ns(window, "window", d.window_ns)?,
            buckets: match buckets {
                Some(b) => int_in(b, "buckets", 1, MAX_WINDOW_BUCKETS as u64)? as u32,
                None => d.buckets,
            },
            cpu_threshold: match cpu_threshold {
                Some(c) => int_in(c, "cpu_threshold", 0, 999)? as u32,
                None => d.cpu_threshold,
            },
            cool_off_ns: opt_duration_ns(cool_off, "cool_off", d.cool_off_ns)?,
        };
        let cpu = match cpu.filter(|c| !c.is_none()) {
            Some(c) if c.cast::<CpuSampler>().is_ok() || c.is_callable() => {
                Some(c.clone().unbind())
            }
            Some(c) => {
                return Err(PyTypeError::new_err(format!(
                    "cpu must be a weir.CpuSampler, a callable returning millicpu, or None, not {}",
                    c.get_type().name()?
                )))
            }
            None => None,
        };
        let core = weir::Shedder::new(config).map_err(shedder_config_error)?;
        Ok(Shedder {
            core: Arc::new(core),
            cpu,
        })
    }

    /// Admits a request (a `Promise`, a context manager) or raises `weir.Overloaded`. `cpu` (millicpu)
    /// overrides the shedder's CPU source for this call.
    #[pyo3(signature = (cpu=None, *, now=None))]
    fn allow(
        &self,
        py: Python<'_>,
        cpu: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Promise> {
        let (t, explicit) = now_ns(now)?;
        let c = self.cpu_now(py, cpu, t)?;
        match self.core.allow(c, t) {
            Ok(p) => Ok(Promise {
                core: Arc::clone(&self.core),
                raw: p.into_raw(),
                explicit,
                done: AtomicBool::new(false),
            }),
            Err(o) => {
                let err = weir_err(py, "Overloaded", o.to_string());
                let v = err.value(py);
                v.setattr("cpu", o.cpu)?;
                v.setattr("hot", o.hot)?;
                v.setattr("in_flight", o.in_flight)?;
                v.setattr("avg_in_flight", o.avg_in_flight)?;
                v.setattr("limit", o.limit)?;
                Err(err)
            }
        }
    }

    /// The shedder's metrics as Prometheus text (the `shedder_*` families of docs/metrics.md), with the
    /// `prefix` and constant `labels` of `Balancer.metrics_text`. `cpu` (millicpu) is the CPU usage to
    /// report, by default the shedder's CPU source's reading (0 without one).
    ///
    /// GIL: held for the call; lock-free.
    #[pyo3(signature = (prefix="weir", labels=None, *, cpu=None, now=None))]
    fn metrics_text(
        &self,
        py: Python<'_>,
        prefix: &str,
        labels: Option<&Bound<'_, PyAny>>,
        cpu: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let (t, _) = now_ns(now)?;
        let c = self.cpu_now(py, cpu, t)?;
        Format::read(prefix, labels)?.text(|out, f| self.core.write_metrics(out, f, c, t))
    }

    /// The shedder's counters as a dict.
    #[pyo3(signature = (*, now=None))]
    fn stats<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (t, _) = now_ns(now)?;
        let s = self.core.stats(t);
        let d = PyDict::new(py);
        d.set_item("allowed", s.allowed)?;
        d.set_item("dropped", s.dropped)?;
        d.set_item("succeeded", s.succeeded)?;
        d.set_item("failed", s.failed)?;
        d.set_item("in_flight", s.in_flight)?;
        d.set_item("avg_in_flight", s.avg_in_flight)?;
        d.set_item("max_pass", s.max_pass)?;
        d.set_item("min_rt", s.min_rt_ms as f64 / 1e3)?;
        d.set_item("max_flight", s.max_flight)?;
        Ok(d)
    }

    /// go-zero's overload factor at `cpu` millicpu: the share of `max_flight` admitted (1 when idle).
    fn overload_factor(&self, cpu: &Bound<'_, PyAny>) -> PyResult<f64> {
        Ok(self
            .core
            .overload_factor(int_in(cpu, "cpu", 0, u64::from(u32::MAX))? as u32))
    }

    /// The rolling window in seconds.
    #[getter]
    fn window(&self) -> f64 {
        secs(self.core.config().window_ns)
    }
    /// Buckets in the window.
    #[getter]
    fn buckets(&self) -> u32 {
        self.core.config().buckets
    }
    /// Millicpu at and above which the server counts as overloaded.
    #[getter]
    fn cpu_threshold(&self) -> u32 {
        self.core.config().cpu_threshold
    }
    /// Seconds a shedder that dropped keeps shedding after the last overload.
    #[getter]
    fn cool_off(&self) -> f64 {
        secs(self.core.config().cool_off_ns)
    }
}

/// One admitted request of a `Shedder`: complete it once with `success()` or `failure()`, or use it as a
/// context manager (success on a normal exit, failure on an exception). A second completion raises
/// `LeaseError` and changes nothing; a promise garbage-collected uncompleted counts as a failure.
///
/// GIL: thread-safe; completed exactly once, whichever thread is first.
#[pyclass(frozen, module = "weir")]
pub struct Promise {
    core: Arc<weir::Shedder>,
    raw: RawPromise,
    explicit: bool,
    done: AtomicBool,
}

impl Promise {
    fn take(&self, py: Python<'_>) -> PyResult<()> {
        if self.done.swap(true, Ordering::AcqRel) {
            return Err(weir_err(py, "LeaseError", "promise already completed"));
        }
        Ok(())
    }
    fn check_clock(&self, py: Python<'_>, given: bool) -> PyResult<()> {
        if given != self.explicit {
            return Err(weir_err(
                py,
                "ClockMismatch",
                if self.explicit {
                    "this promise was allowed with an explicit now=; complete it with now= too"
                } else {
                    "this promise was allowed on the monotonic clock; complete it without now="
                },
            ));
        }
        Ok(())
    }
}

impl Drop for Promise {
    fn drop(&mut self) {
        if !self.done.swap(true, Ordering::AcqRel) {
            let _ = self
                .core
                .failure(weir::overload::Promise::from_raw(self.raw));
        }
    }
}

#[pymethods]
impl Promise {
    /// Completes as a success, recording the response time (now - allowed_at).
    #[pyo3(signature = (*, now=None))]
    fn success(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let given = now.filter(|n| !n.is_none());
        self.check_clock(py, given.is_some())?;
        let (t, _) = now_ns(given)?;
        self.take(py)?;
        self.core
            .success(weir::overload::Promise::from_raw(self.raw), t)
            .map_err(|e| weir_err(py, "LeaseError", e.to_string()))
    }
    /// Completes as a failure (no response time recorded).
    fn failure(&self, py: Python<'_>) -> PyResult<()> {
        self.take(py)?;
        self.core
            .failure(weir::overload::Promise::from_raw(self.raw))
            .map_err(|e| weir_err(py, "LeaseError", e.to_string()))
    }
    /// When the request was allowed, in seconds.
    #[getter]
    fn allowed_at(&self) -> f64 {
        secs(self.raw.start)
    }
    /// Whether the promise has been completed.
    #[getter]
    fn done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }
    #[pyo3(signature = (exc_type, exc_value, traceback))]
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        exc_value: &Bound<'_, PyAny>,
        traceback: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        let _ = (exc_value, traceback);
        if self.done.load(Ordering::Acquire) {
            return Ok(false);
        }
        if exc_type.is_none() && !self.explicit {
            if !self.done.swap(true, Ordering::AcqRel) {
                let _ = self.core.success(
                    weir::overload::Promise::from_raw(self.raw),
                    weir::rt::monotonic_now(),
                );
            }
        } else if !self.done.swap(true, Ordering::AcqRel) {
            let _ = self
                .core
                .failure(weir::overload::Promise::from_raw(self.raw));
            if exc_type.is_none() {
                return Err(weir_err(
                    py,
                    "ClockMismatch",
                    "a promise allowed with an explicit now= cannot complete as a success on its context exit: call promise.success(now=...) inside the block; it was completed as a failure",
                ));
            }
        }
        Ok(false)
    }
}

/// The core's criticality from a `weir.Criticality` (an int code 0..=3).
fn criticality(v: Option<&Bound<'_, PyAny>>) -> PyResult<Criticality> {
    match v {
        None => Ok(Criticality::Critical),
        Some(v) => {
            let code = int_in(v, "criticality", 0, 3)?;
            Criticality::from_code(code as u8)
                .ok_or_else(|| PyValueError::new_err("criticality must be 0..=3"))
        }
    }
}

fn throttle_config_error(e: ThrottleConfigError) -> PyErr {
    PyValueError::new_err(match e {
        ThrottleConfigError::Buckets => {
            format!("Throttle: buckets must be between 1 and {MAX_WINDOW_BUCKETS}")
        }
        ThrottleConfigError::Window => "Throttle: window / buckets must be at least 1 ns".into(),
        ThrottleConfigError::K => "Throttle: k must be finite and >= 1".into(),
        ThrottleConfigError::MaxRejection => "Throttle: max_rejection must be in [0, 1]".into(),
        ThrottleConfigError::RetryRatio => "Throttle: retry_ratio must be in [0, 1]".into(),
        other => format!("Throttle: {other}"),
    })
}

/// The SRE book's client-side adaptive throttling: `allow()` rejects a request locally (raising
/// `weir.Throttled`) with probability `max(0, (requests - k * accepts) / (requests + 1))` over a rolling
/// window, per criticality; call `accepted()` when the backend accepted a request. `allow_retry()` also
/// keeps retries under `retry_ratio` of requests (raising `weir.RetryBudgetExhausted`).
///
/// GIL: thread-safe, lock-free; draws from the calling thread's generator (seeded from `seed`) or `rng=`.
#[pyclass(frozen, module = "weir")]
pub struct Throttle {
    core: weir::Throttle,
    seed: u64,
}

fn throttled_err(py: Python<'_>, t: &weir::overload::Throttled, retry: bool) -> PyResult<PyErr> {
    let msg = if retry {
        format!("retry {t}")
    } else {
        t.to_string()
    };
    let err = weir_err(py, "Throttled", msg);
    let v = err.value(py);
    v.setattr("criticality", weir_criticality(py, t.criticality)?)?;
    v.setattr("probability", t.probability)?;
    Ok(err)
}

fn weir_criticality(py: Python<'_>, c: Criticality) -> PyResult<Py<PyAny>> {
    Ok(crate::convert::weir_type(py, "Criticality")?
        .call1((c as u8,))?
        .unbind())
}

#[pymethods]
impl Throttle {
    #[new]
    #[pyo3(signature = (*, window=None, buckets=None, k=None, max_rejection=None, retry_ratio=None, seed=None), text_signature = "(*, window=120.0, buckets=120, k=2.0, max_rejection=1.0, retry_ratio=0.1, seed=None)")]
    fn new(
        window: Option<&Bound<'_, PyAny>>,
        buckets: Option<&Bound<'_, PyAny>>,
        k: Option<&Bound<'_, PyAny>>,
        max_rejection: Option<&Bound<'_, PyAny>>,
        retry_ratio: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let d = ThrottleConfig::default();
        let config = ThrottleConfig {
            window_ns: opt_duration_ns(window, "window", d.window_ns)?,
            buckets: match buckets {
                Some(b) => int_in(b, "buckets", 1, MAX_WINDOW_BUCKETS as u64)? as u32,
                None => d.buckets,
            },
            k: match k {
                Some(v) => float(v, "k")?,
                None => d.k,
            },
            max_rejection: match max_rejection {
                Some(v) => float(v, "max_rejection")?,
                None => d.max_rejection,
            },
            retry_ratio: match retry_ratio {
                Some(v) => float(v, "retry_ratio")?,
                None => d.retry_ratio,
            },
        };
        let seed = match seed.filter(|s| !s.is_none()) {
            Some(s) => int_in(s, "seed", 0, u64::MAX)?,
            None => fastrand::u64(..),
        };
        let core = weir::Throttle::new(config).map_err(throttle_config_error)?;
        Ok(Throttle { core, seed })
    }

    /// Admits a request of `criticality` (default CRITICAL) or raises `weir.Throttled` (do not send it,
    /// and do not retry it).
    #[pyo3(signature = (criticality=None, *, now=None, rng=None))]
    fn allow(
        &self,
        py: Python<'_>,
        criticality: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, Rng>>,
    ) -> PyResult<()> {
        let c = self::criticality(criticality)?;
        let (t, _) = now_ns(now)?;
        match draw(rng, self.seed, |r| self.core.allow(c, t, r)) {
            Ok(()) => Ok(()),
            Err(e) => Err(throttled_err(py, &e, false)?),
        }
    }

    /// Admits a retry: raises `weir.RetryBudgetExhausted` when retries are already at `retry_ratio` of the
    /// window's requests, or `weir.Throttled` as `allow` would.
    #[pyo3(signature = (criticality=None, *, now=None, rng=None))]
    fn allow_retry(
        &self,
        py: Python<'_>,
        criticality: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
        rng: Option<&Bound<'_, Rng>>,
    ) -> PyResult<()> {
        let c = self::criticality(criticality)?;
        let (t, _) = now_ns(now)?;
        match draw(rng, self.seed, |r| self.core.allow_retry(c, t, r)) {
            Ok(()) => Ok(()),
            Err(RetryDenied::Throttled(e)) => Err(throttled_err(py, &e, true)?),
            Err(e @ RetryDenied::Budget { retries, requests }) => {
                Err(exhausted(py, e.to_string(), retries, requests)?)
            }
            Err(other) => Err(weir_err(py, "WeirError", other.to_string())),
        }
    }

    /// Records that the backend accepted a request of `criticality`.
    #[pyo3(signature = (criticality=None, *, now=None))]
    fn accepted(
        &self,
        criticality: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let c = self::criticality(criticality)?;
        let (t, _) = now_ns(now)?;
        self.core.accepted(c, t);
        Ok(())
    }

    /// The current rejection probability for `criticality`.
    #[pyo3(signature = (criticality=None, *, now=None))]
    fn probability(
        &self,
        criticality: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<f64> {
        let c = self::criticality(criticality)?;
        let (t, _) = now_ns(now)?;
        Ok(self.core.probability(c, t))
    }

    /// The throttle's metrics as Prometheus text (the `throttle_*` families of docs/metrics.md), with the
    /// `prefix` and constant `labels` of `Balancer.metrics_text`.
    ///
    /// GIL: held for the call; lock-free.
    #[pyo3(signature = (prefix="weir", labels=None, *, now=None))]
    fn metrics_text(
        &self,
        prefix: &str,
        labels: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let (t, _) = now_ns(now)?;
        Format::read(prefix, labels)?.text(|out, f| self.core.write_metrics(out, f, t))
    }

    /// The throttle's counters as a dict (per-criticality counts as 4-tuples indexed by criticality).
    #[pyo3(signature = (*, now=None))]
    fn stats<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (t, _) = now_ns(now)?;
        let s = self.core.stats(t);
        let d = PyDict::new(py);
        d.set_item("total_requests", PyTuple::new(py, s.total_requests)?)?;
        d.set_item("total_accepts", PyTuple::new(py, s.total_accepts)?)?;
        d.set_item("total_throttled", PyTuple::new(py, s.total_throttled)?)?;
        d.set_item("total_retries", s.total_retries)?;
        d.set_item("total_retries_denied", s.total_retries_denied)?;
        d.set_item("window_requests", PyTuple::new(py, s.window_requests)?)?;
        d.set_item("window_accepts", PyTuple::new(py, s.window_accepts)?)?;
        d.set_item("window_retries", s.window_retries)?;
        Ok(d)
    }

    /// The rolling window in seconds.
    #[getter]
    fn window(&self) -> f64 {
        secs(self.core.config().window_ns)
    }
    /// The accepts multiplier K.
    #[getter]
    fn k(&self) -> f64 {
        self.core.config().k
    }
    /// The largest rejection probability.
    #[getter]
    fn max_rejection(&self) -> f64 {
        self.core.config().max_rejection
    }
    /// Retries allowed as a fraction of requests.
    #[getter]
    fn retry_ratio(&self) -> f64 {
        self.core.config().retry_ratio
    }
    /// Buckets in the window.
    #[getter]
    fn buckets(&self) -> u32 {
        self.core.config().buckets
    }
    /// The seed of the per-thread generators.
    #[getter]
    fn seed(&self) -> u64 {
        self.seed
    }
}

/// `weir.RetryBudgetExhausted` with its window's counts.
fn exhausted(py: Python<'_>, msg: String, retries: u64, requests: u64) -> PyResult<PyErr> {
    let err = weir_err(py, "RetryBudgetExhausted", msg);
    let v = err.value(py);
    v.setattr("retries", retries)?;
    v.setattr("requests", requests)?;
    Ok(err)
}

fn retry_budget_config_error(e: RetryBudgetConfigError) -> PyErr {
    PyValueError::new_err(match e {
        RetryBudgetConfigError::Buckets => {
            format!("RetryBudget: buckets must be between 1 and {MAX_WINDOW_BUCKETS}")
        }
        RetryBudgetConfigError::Window => {
            "RetryBudget: window / buckets must be at least 1 ns".into()
        }
        RetryBudgetConfigError::Ratio => "RetryBudget: ratio must be in [0, 1000]".into(),
        RetryBudgetConfigError::PerSecond => "RetryBudget: per_second must be in [0, 1e9]".into(),
        other => format!("RetryBudget: {other}"),
    })
}

/// Finagle's retry budget, shared by a balancer's callers: `request()` once per request,
/// `try_retry()` before each retry, which raises `weir.RetryBudgetExhausted` once the window's retries
/// reach `ratio` of its requests plus `per_second` for each second of the window (defaults 20 % and
/// 10 a second over 10 s). Whether a request may be sent twice is the caller's decision; send the
/// retry elsewhere with `Balancer.acquire_excluding`.
///
/// GIL: thread-safe, lock-free.
#[pyclass(frozen, module = "weir")]
pub struct RetryBudget {
    core: weir::overload::RetryBudget,
}

#[pymethods]
impl RetryBudget {
    #[new]
    #[pyo3(signature = (*, window=None, buckets=None, ratio=None, per_second=None), text_signature = "(*, window=10.0, buckets=10, ratio=0.2, per_second=10.0)")]
    fn new(
        window: Option<&Bound<'_, PyAny>>,
        buckets: Option<&Bound<'_, PyAny>>,
        ratio: Option<&Bound<'_, PyAny>>,
        per_second: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let d = RetryBudgetConfig::default();
        let config = RetryBudgetConfig {
            window_ns: opt_duration_ns(window, "window", d.window_ns)?,
            buckets: match buckets {
                Some(b) => int_in(b, "buckets", 1, MAX_WINDOW_BUCKETS as u64)? as u32,
                None => d.buckets,
            },
            ratio: match ratio {
                Some(v) => float(v, "ratio")?,
                None => d.ratio,
            },
            per_second: match per_second {
                Some(v) => float(v, "per_second")?,
                None => d.per_second,
            },
        };
        let core = weir::overload::RetryBudget::new(config).map_err(retry_budget_config_error)?;
        Ok(RetryBudget { core })
    }

    /// Counts one request (its first try).
    #[pyo3(signature = (*, now=None))]
    fn request(&self, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let (t, _) = now_ns(now)?;
        self.core.request(t);
        Ok(())
    }

    /// Admits a retry and counts it, or raises `weir.RetryBudgetExhausted` (not counted).
    #[pyo3(signature = (*, now=None))]
    fn try_retry(&self, py: Python<'_>, now: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let (t, _) = now_ns(now)?;
        self.core.try_retry(t).map_err(|e: RetryBudgetExhausted| {
            exhausted(py, e.to_string(), e.retries, e.requests).unwrap_or_else(|err| err)
        })
    }

    /// The budget's metrics as Prometheus text (the `retry_budget_*` families of docs/metrics.md), with
    /// the `prefix` and constant `labels` of `Balancer.metrics_text`.
    ///
    /// GIL: held for the call; lock-free.
    #[pyo3(signature = (prefix="weir", labels=None, *, now=None))]
    fn metrics_text(
        &self,
        prefix: &str,
        labels: Option<&Bound<'_, PyAny>>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let (t, _) = now_ns(now)?;
        Format::read(prefix, labels)?.text(|out, f| self.core.write_metrics(out, f, t))
    }

    /// The budget's counters as a dict: `requests`, `retries`, `denied` since it was built,
    /// `window_requests`, `window_retries` and `available` (retries admitted now) in the window.
    #[pyo3(signature = (*, now=None))]
    fn stats<'py>(
        &self,
        py: Python<'py>,
        now: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (t, _) = now_ns(now)?;
        let s = self.core.stats(t);
        let d = PyDict::new(py);
        d.set_item("requests", s.requests)?;
        d.set_item("retries", s.retries)?;
        d.set_item("denied", s.denied)?;
        d.set_item("window_requests", s.window_requests)?;
        d.set_item("window_retries", s.window_retries)?;
        d.set_item("available", s.available)?;
        Ok(d)
    }

    /// The rolling window in seconds.
    #[getter]
    fn window(&self) -> f64 {
        secs(self.core.config().window_ns)
    }
    /// Buckets in the window.
    #[getter]
    fn buckets(&self) -> u32 {
        self.core.config().buckets
    }
    /// Retries allowed per request in the window.
    #[getter]
    fn ratio(&self) -> f64 {
        self.core.config().ratio
    }
    /// Retries allowed per second of the window, whatever the requests.
    #[getter]
    fn per_second(&self) -> f64 {
        self.core.config().per_second
    }
}

/// The SRE book's equation 21-1: `max(0, (requests - k * accepts) / (requests + 1))`.
#[pyfunction]
fn rejection_probability(
    requests: &Bound<'_, PyAny>,
    accepts: &Bound<'_, PyAny>,
    k: &Bound<'_, PyAny>,
) -> PyResult<f64> {
    let r = int_in(requests, "requests", 0, u64::MAX)?;
    let a = int_in(accepts, "accepts", 0, u64::MAX)?;
    let k = float(k, "k")?;
    Ok(weir::overload::rejection_probability(r, a, k))
}
