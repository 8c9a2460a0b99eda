//! The limit algorithms: `Fixed`, `Aimd`, `Vegas`, `Gradient`, `Gradient2`, `Ciad`, `Knee` and `Windowed`.

use super::parts::{
    opt_f, queue_from, queue_repr, queue_to, step_from, step_repr, step_to, threshold_from,
    threshold_repr, threshold_to, Percentile,
};
use super::{config_error, fmt_f, hash_str, limit_arg, u32_arg};
use crate::convert::{boolean, duration_ns, float, int_in, secs};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use weir::limit::{
    AimdLimit, CiadLimit, FixedLimit, Gradient2Limit, GradientLimit, InnerAlgorithm, KneeLimit,
    Limit, LimitAlgorithm, SampleWindow, VegasLimit, WindowedLimit,
};

/// Reads an optional keyword into `$slot` with `$conv`.
macro_rules! set {
    ($arg:ident, $slot:expr, $conv:expr) => {
        if let Some(v) = $arg {
            $slot = $conv(v, stringify!($arg))?;
        }
    };
}

fn checked<L: Limit>(l: L, what: &str) -> PyResult<L> {
    l.validate().map_err(|e| config_error(e, what))?;
    Ok(l)
}

/// A constant concurrency limit per node (the SRE book's flow control): `Fixed(100)`.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir")]
pub struct Fixed {
    l: FixedLimit,
}

#[pymethods]
impl Fixed {
    #[new]
    #[pyo3(signature = (limit=None), text_signature = "(limit=100)")]
    fn new(limit: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut l = FixedLimit::default();
        set!(limit, l.limit, limit_arg);
        Ok(Fixed {
            l: checked(l, "Fixed")?,
        })
    }
    /// The cap (default 100); 0 keeps a node out of rotation.
    #[getter]
    fn limit(&self) -> u32 {
        self.l.limit
    }
    fn __repr__(&self) -> String {
        format!("Fixed({})", self.l.limit)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Fixed>().is_ok_and(|o| o.get().l == self.l)
    }
    fn __hash__(&self) -> u64 {
        u64::from(self.l.limit)
    }
}

/// Additive increase, multiplicative decrease on drops and timeouts (Netflix's AIMD).
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir")]
pub struct Aimd {
    l: AimdLimit,
}

#[pymethods]
impl Aimd {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, min_limit=None, max_limit=None, backoff_ratio=None, timeout=None), text_signature = "(*, initial_limit=20, min_limit=20, max_limit=200, backoff_ratio=0.9, timeout=5.0)")]
    fn new(
        initial_limit: Option<&Bound<'_, PyAny>>,
        min_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        backoff_ratio: Option<&Bound<'_, PyAny>>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut l = AimdLimit::default();
        set!(initial_limit, l.initial_limit, limit_arg);
        set!(min_limit, l.min_limit, limit_arg);
        set!(max_limit, l.max_limit, limit_arg);
        set!(backoff_ratio, l.backoff_ratio, float);
        set!(timeout, l.timeout_ns, duration_ns);
        Ok(Aimd {
            l: checked(l, "Aimd")?,
        })
    }
    /// A fresh node's limit (default 20).
    #[getter]
    fn initial_limit(&self) -> u32 {
        self.l.initial_limit
    }
    /// The lowest limit (default 20, Netflix's).
    #[getter]
    fn min_limit(&self) -> u32 {
        self.l.min_limit
    }
    /// The highest limit (default 200).
    #[getter]
    fn max_limit(&self) -> u32 {
        self.l.max_limit
    }
    /// Multiplier on a drop, in [0.5, 1) (default 0.9).
    #[getter]
    fn backoff_ratio(&self) -> f64 {
        self.l.backoff_ratio
    }
    /// A success slower than this many seconds counts as a drop (default 5.0).
    #[getter]
    fn timeout(&self) -> f64 {
        secs(self.l.timeout_ns)
    }
    fn __repr__(&self) -> String {
        format!(
            "Aimd(initial_limit={}, min_limit={}, max_limit={}, backoff_ratio={}, timeout={})",
            self.l.initial_limit,
            self.l.min_limit,
            self.l.max_limit,
            fmt_f(self.l.backoff_ratio),
            fmt_f(self.timeout())
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Aimd>().is_ok_and(|o| o.get().l == self.l)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// TCP Vegas-style queue estimation from RTT against the no-load RTT (Netflix's Vegas). Thresholds are an
/// int (a constant) or `Log10(k)`; steps are `'log10'` or a float factor.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir")]
pub struct Vegas {
    l: VegasLimit,
}

#[pymethods]
impl Vegas {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, max_limit=None, smoothing=None, probe_multiplier=None, alpha=None, beta=None, threshold=None, increase=None, decrease=None, baseline_from_drops=None), text_signature = "(*, initial_limit=20, max_limit=1000, smoothing=1.0, probe_multiplier=30, alpha=None, beta=None, threshold=None, increase='log10', decrease='log10', baseline_from_drops=True)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        initial_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        smoothing: Option<&Bound<'_, PyAny>>,
        probe_multiplier: Option<&Bound<'_, PyAny>>,
        alpha: Option<&Bound<'_, PyAny>>,
        beta: Option<&Bound<'_, PyAny>>,
        threshold: Option<&Bound<'_, PyAny>>,
        increase: Option<&Bound<'_, PyAny>>,
        decrease: Option<&Bound<'_, PyAny>>,
        baseline_from_drops: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut l = VegasLimit::default();
        set!(initial_limit, l.initial_limit, limit_arg);
        set!(max_limit, l.max_limit, limit_arg);
        set!(smoothing, l.smoothing, float);
        set!(probe_multiplier, l.probe_multiplier, u32_arg);
        set!(alpha, l.alpha, threshold_from);
        set!(beta, l.beta, threshold_from);
        set!(threshold, l.threshold, threshold_from);
        set!(increase, l.increase, step_from);
        set!(decrease, l.decrease, step_from);
        set!(baseline_from_drops, l.baseline_from_drops, boolean);
        Ok(Vegas {
            l: checked(l, "Vegas")?,
        })
    }
    /// A fresh node's limit (default 20).
    #[getter]
    fn initial_limit(&self) -> u32 {
        self.l.initial_limit
    }
    /// The highest limit (default 1000).
    #[getter]
    fn max_limit(&self) -> u32 {
        self.l.max_limit
    }
    /// Weight of the new value, in [0, 1] (default 1.0: no smoothing).
    #[getter]
    fn smoothing(&self) -> f64 {
        self.l.smoothing
    }
    /// The no-load RTT is re-probed every `jitter * probe_multiplier * limit` samples (default 30).
    #[getter]
    fn probe_multiplier(&self) -> u32 {
        self.l.probe_multiplier
    }
    /// Below this queue the limit grows by `increase` (default Log10(3)).
    #[getter]
    fn alpha(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        threshold_to(py, self.l.alpha)
    }
    /// Above this queue the limit shrinks by `decrease` (default Log10(6)).
    #[getter]
    fn beta(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        threshold_to(py, self.l.beta)
    }
    /// At or below this queue the limit grows by `beta` (default Log10(1)).
    #[getter]
    fn threshold(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        threshold_to(py, self.l.threshold)
    }
    /// `'log10'` or a factor (default 'log10').
    #[getter]
    fn increase(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        step_to(py, self.l.increase)
    }
    /// `'log10'` or a factor (default 'log10').
    #[getter]
    fn decrease(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        step_to(py, self.l.decrease)
    }
    /// Whether dropped samples may set the no-load RTT (default True, Netflix's).
    #[getter]
    fn baseline_from_drops(&self) -> bool {
        self.l.baseline_from_drops
    }
    fn __repr__(&self) -> String {
        let l = &self.l;
        format!(
            "Vegas(initial_limit={}, max_limit={}, smoothing={}, probe_multiplier={}, alpha={}, beta={}, threshold={}, increase={}, decrease={}, baseline_from_drops={})",
            l.initial_limit,
            l.max_limit,
            fmt_f(l.smoothing),
            l.probe_multiplier,
            threshold_repr(l.alpha),
            threshold_repr(l.beta),
            threshold_repr(l.threshold),
            step_repr(l.increase),
            step_repr(l.decrease),
            if l.baseline_from_drops { "True" } else { "False" }
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Vegas>().is_ok_and(|o| o.get().l == self.l)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// Netflix's first gradient algorithm: RTT against the minimum RTT.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir")]
pub struct Gradient {
    l: GradientLimit,
}

#[pymethods]
impl Gradient {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, min_limit=None, max_limit=None, smoothing=None, queue_size=None, rtt_tolerance=None, probe_interval=Some(None), backoff_ratio=None), text_signature = "(*, initial_limit=50, min_limit=1, max_limit=1000, smoothing=0.2, queue_size=None, rtt_tolerance=2.0, probe_interval=1000, backoff_ratio=0.9)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        initial_limit: Option<&Bound<'_, PyAny>>,
        min_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        smoothing: Option<&Bound<'_, PyAny>>,
        queue_size: Option<&Bound<'_, PyAny>>,
        rtt_tolerance: Option<&Bound<'_, PyAny>>,
        probe_interval: Option<Option<&Bound<'_, PyAny>>>,
        backoff_ratio: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut l = GradientLimit::default();
        set!(initial_limit, l.initial_limit, limit_arg);
        set!(min_limit, l.min_limit, limit_arg);
        set!(max_limit, l.max_limit, limit_arg);
        set!(smoothing, l.smoothing, float);
        if let Some(v) = queue_size {
            l.queue_size = queue_from(v)?;
        }
        set!(rtt_tolerance, l.rtt_tolerance, float);
        // Some(None): the parameter was not given (keeps 1000); None: `probe_interval=None` (never probe).
        match probe_interval {
            Some(None) => {}
            None => l.probe_interval = None,
            Some(Some(v)) => {
                l.probe_interval = Some(int_in(v, "probe_interval", 1, 1 << 30)? as u32)
            }
        }
        set!(backoff_ratio, l.backoff_ratio, float);
        Ok(Gradient {
            l: checked(l, "Gradient")?,
        })
    }
    /// A fresh node's limit (default 50).
    #[getter]
    fn initial_limit(&self) -> u32 {
        self.l.initial_limit
    }
    /// The lowest limit (default 1).
    #[getter]
    fn min_limit(&self) -> u32 {
        self.l.min_limit
    }
    /// The highest limit (default 1000).
    #[getter]
    fn max_limit(&self) -> u32 {
        self.l.max_limit
    }
    /// Weight of a decrease, in [0, 1] (default 0.2).
    #[getter]
    fn smoothing(&self) -> f64 {
        self.l.smoothing
    }
    /// An int or Sqrt(min) (default Sqrt(min=4)).
    #[getter]
    fn queue_size(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        queue_to(py, self.l.queue_size)
    }
    /// How much longer than the minimum an RTT may be (default 2.0).
    #[getter]
    fn rtt_tolerance(&self) -> f64 {
        self.l.rtt_tolerance
    }
    /// Samples between probes, or None for never (default 1000).
    #[getter]
    fn probe_interval(&self) -> Option<u32> {
        self.l.probe_interval
    }
    /// Multiplier on a drop, in [0.5, 1] (default 0.9).
    #[getter]
    fn backoff_ratio(&self) -> f64 {
        self.l.backoff_ratio
    }
    fn __repr__(&self) -> String {
        let l = &self.l;
        format!(
            "Gradient(initial_limit={}, min_limit={}, max_limit={}, smoothing={}, queue_size={}, rtt_tolerance={}, probe_interval={}, backoff_ratio={})",
            l.initial_limit,
            l.min_limit,
            l.max_limit,
            fmt_f(l.smoothing),
            queue_repr(l.queue_size),
            fmt_f(l.rtt_tolerance),
            l.probe_interval.map_or("None".into(), |p| p.to_string()),
            fmt_f(l.backoff_ratio)
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Gradient>().is_ok_and(|o| o.get().l == self.l)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// Netflix's recommended gradient algorithm: RTT against a long-term average RTT.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir")]
pub struct Gradient2 {
    l: Gradient2Limit,
}

#[pymethods]
impl Gradient2 {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, min_limit=None, max_limit=None, smoothing=None, queue_size=None, long_window=None, rtt_tolerance=None, drop_backoff=None), text_signature = "(*, initial_limit=20, min_limit=20, max_limit=200, smoothing=0.2, queue_size=4, long_window=600, rtt_tolerance=1.5, drop_backoff=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        initial_limit: Option<&Bound<'_, PyAny>>,
        min_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        smoothing: Option<&Bound<'_, PyAny>>,
        queue_size: Option<&Bound<'_, PyAny>>,
        long_window: Option<&Bound<'_, PyAny>>,
        rtt_tolerance: Option<&Bound<'_, PyAny>>,
        drop_backoff: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut l = Gradient2Limit::default();
        set!(initial_limit, l.initial_limit, limit_arg);
        set!(min_limit, l.min_limit, limit_arg);
        set!(max_limit, l.max_limit, limit_arg);
        set!(smoothing, l.smoothing, float);
        if let Some(v) = queue_size {
            l.queue_size = queue_from(v)?;
        }
        set!(long_window, l.long_window, u32_arg);
        set!(rtt_tolerance, l.rtt_tolerance, float);
        if let Some(v) = drop_backoff {
            l.drop_backoff = Some(float(v, "drop_backoff")?);
        }
        Ok(Gradient2 {
            l: checked(l, "Gradient2")?,
        })
    }
    /// A fresh node's limit (default 20).
    #[getter]
    fn initial_limit(&self) -> u32 {
        self.l.initial_limit
    }
    /// The lowest limit (default 20).
    #[getter]
    fn min_limit(&self) -> u32 {
        self.l.min_limit
    }
    /// The highest limit (default 200).
    #[getter]
    fn max_limit(&self) -> u32 {
        self.l.max_limit
    }
    /// Weight of the new value, in [0, 1] (default 0.2).
    #[getter]
    fn smoothing(&self) -> f64 {
        self.l.smoothing
    }
    /// An int or Sqrt(min) (default 4).
    #[getter]
    fn queue_size(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        queue_to(py, self.l.queue_size)
    }
    /// Window of the long-RTT average, in samples (default 600).
    #[getter]
    fn long_window(&self) -> u32 {
        self.l.long_window
    }
    /// How much longer than the long-term RTT an RTT may be (default 1.5).
    #[getter]
    fn rtt_tolerance(&self) -> f64 {
        self.l.rtt_tolerance
    }
    /// Multiplier on a drop, in [0.5, 1), or None to ignore drops (default None, Netflix's).
    #[getter]
    fn drop_backoff(&self) -> Option<f64> {
        self.l.drop_backoff
    }
    fn __repr__(&self) -> String {
        let l = &self.l;
        format!(
            "Gradient2(initial_limit={}, min_limit={}, max_limit={}, smoothing={}, queue_size={}, long_window={}, rtt_tolerance={}, drop_backoff={})",
            l.initial_limit,
            l.min_limit,
            l.max_limit,
            fmt_f(l.smoothing),
            queue_repr(l.queue_size),
            l.long_window,
            fmt_f(l.rtt_tolerance),
            opt_f(l.drop_backoff)
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Gradient2>().is_ok_and(|o| o.get().l == self.l)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// Cautious increase, aggressive decrease (palantir dialogue's per-host limiter), with an opt-in fast start
/// and an opt-in latency signal (`rtt_tolerance`). The balancer's default limit is `Ciad(fast_start=True)`.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir")]
pub struct Ciad {
    l: CiadLimit,
}

#[pymethods]
impl Ciad {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, min_limit=None, max_limit=None, backoff_ratio=None, fast_start=None, rtt_tolerance=None), text_signature = "(*, initial_limit=20, min_limit=1, max_limit=1000000, backoff_ratio=0.9, fast_start=False, rtt_tolerance=0.0)")]
    fn new(
        initial_limit: Option<&Bound<'_, PyAny>>,
        min_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        backoff_ratio: Option<&Bound<'_, PyAny>>,
        fast_start: Option<&Bound<'_, PyAny>>,
        rtt_tolerance: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut l = CiadLimit::default();
        set!(initial_limit, l.initial_limit, limit_arg);
        set!(min_limit, l.min_limit, limit_arg);
        set!(max_limit, l.max_limit, limit_arg);
        set!(backoff_ratio, l.backoff_ratio, float);
        set!(fast_start, l.fast_start, boolean);
        set!(rtt_tolerance, l.rtt_tolerance, float);
        Ok(Ciad {
            l: checked(l, "Ciad")?,
        })
    }
    /// A fresh node's limit (default 20).
    #[getter]
    fn initial_limit(&self) -> u32 {
        self.l.initial_limit
    }
    /// The lowest limit, at least 1 (default 1).
    #[getter]
    fn min_limit(&self) -> u32 {
        self.l.min_limit
    }
    /// The highest limit (default 1000000).
    #[getter]
    fn max_limit(&self) -> u32 {
        self.l.max_limit
    }
    /// Decrease factor on a drop, in [0.5, 1) (default 0.9).
    #[getter]
    fn backoff_ratio(&self) -> f64 {
        self.l.backoff_ratio
    }
    /// Whether the limit doubles per round trip until the first drop (default False, dialogue's).
    #[getter]
    fn fast_start(&self) -> bool {
        self.l.fast_start
    }
    /// 0.0 (off, the default), or a factor >= 1: a success counts as a drop while the node's smoothed
    /// RTT exceeds this many times its baseline, so the limit finds the node's latency knee.
    #[getter]
    fn rtt_tolerance(&self) -> f64 {
        self.l.rtt_tolerance
    }
    fn __repr__(&self) -> String {
        let l = &self.l;
        format!(
            "Ciad(initial_limit={}, min_limit={}, max_limit={}, backoff_ratio={}, fast_start={}, rtt_tolerance={})",
            l.initial_limit,
            l.min_limit,
            l.max_limit,
            fmt_f(l.backoff_ratio),
            if l.fast_start { "True" } else { "False" },
            fmt_f(l.rtt_tolerance)
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Ciad>().is_ok_and(|o| o.get().l == self.l)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// A cap at each server's latency knee, which every client of the server reads alike: the limit is cut
/// towards what was in flight when one call's RTT is over `knee` times the node's slowly drifting
/// no-load RTT, or its smoothed RTT is while the call is over `hold` times (to `backoff_ratio` of it on
/// a timeout or a 503); it holds between `hold` and `knee` times, and grows below `hold`, the more
/// slowly the nearer it is. An error (`lease.failure()`) cuts it by `backoff_ratio` of the limit,
/// tapered alike. The latency is read so only within `armed_for` seconds of the node's last drop;
/// outside it the limit grows on successes and is cut by drops alone.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir")]
pub struct Knee {
    l: KneeLimit,
}

#[pymethods]
impl Knee {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, min_limit=None, max_limit=None, backoff_ratio=None, knee=None, hold=None, armed_for=None), text_signature = "(*, initial_limit=20, min_limit=1, max_limit=1000, backoff_ratio=0.9, knee=2.0, hold=1.75, armed_for=60.0)")]
    fn new(
        initial_limit: Option<&Bound<'_, PyAny>>,
        min_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        backoff_ratio: Option<&Bound<'_, PyAny>>,
        knee: Option<&Bound<'_, PyAny>>,
        hold: Option<&Bound<'_, PyAny>>,
        armed_for: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut l = KneeLimit::default();
        set!(initial_limit, l.initial_limit, limit_arg);
        set!(min_limit, l.min_limit, limit_arg);
        set!(max_limit, l.max_limit, limit_arg);
        set!(backoff_ratio, l.backoff_ratio, float);
        set!(knee, l.knee, float);
        set!(hold, l.hold, float);
        set!(armed_for, l.armed_for_ns, duration_ns);
        Ok(Knee {
            l: checked(l, "Knee")?,
        })
    }
    /// A fresh node's limit (default 20).
    #[getter]
    fn initial_limit(&self) -> u32 {
        self.l.initial_limit
    }
    /// The lowest limit, at least 1 (default 1).
    #[getter]
    fn min_limit(&self) -> u32 {
        self.l.min_limit
    }
    /// The highest limit (default 1000).
    #[getter]
    fn max_limit(&self) -> u32 {
        self.l.max_limit
    }
    /// The factor of a cut, and the fraction of the limit in flight that a success must have seen to
    /// raise it, in [0.5, 1) (default 0.9).
    #[getter]
    fn backoff_ratio(&self) -> f64 {
        self.l.backoff_ratio
    }
    /// The ratio of smoothed RTT to no-load RTT above which a success cuts the limit, finite and >= 1
    /// (default 2.0).
    #[getter]
    fn knee(&self) -> f64 {
        self.l.knee
    }
    /// The ratio at or below which a success may raise the limit (between it and `knee` the limit
    /// holds), finite, >= 1 and <= `knee` (default 1.75).
    #[getter]
    fn hold(&self) -> f64 {
        self.l.hold
    }
    /// How many seconds after the node's last drop its latency is read as load, at most 1000 (default
    /// 60.0; kept to ticks of 2**30 ns, about a second). Outside it a success grows the limit as one
    /// below `hold` does and only drops cut it: a latency that rose while the node still answers every
    /// call (a farther zone, a server that queues but serves all it is sent) is not an overload. 0.0
    /// reads the latency always.
    #[getter]
    fn armed_for(&self) -> f64 {
        secs(self.l.armed_for_ns)
    }
    fn __repr__(&self) -> String {
        let l = &self.l;
        format!(
            "Knee(initial_limit={}, min_limit={}, max_limit={}, backoff_ratio={}, knee={}, hold={}, armed_for={})",
            l.initial_limit,
            l.min_limit,
            l.max_limit,
            fmt_f(l.backoff_ratio),
            fmt_f(l.knee),
            fmt_f(l.hold),
            fmt_f(self.armed_for())
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Knee>().is_ok_and(|o| o.get().l == self.l)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// Any other algorithm fed one aggregate sample per time window (Netflix's WindowedLimit).
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir")]
pub struct Windowed {
    l: WindowedLimit,
}

#[pymethods]
impl Windowed {
    #[new]
    #[pyo3(signature = (inner=None, *, min_window=None, max_window=None, min_samples=None, min_rtt_threshold=None, window=None), text_signature = "(inner=None, *, min_window=1.0, max_window=1.0, min_samples=10, min_rtt_threshold=0.0001, window=None)")]
    fn new(
        inner: Option<&Bound<'_, PyAny>>,
        min_window: Option<&Bound<'_, PyAny>>,
        max_window: Option<&Bound<'_, PyAny>>,
        min_samples: Option<&Bound<'_, PyAny>>,
        min_rtt_threshold: Option<&Bound<'_, PyAny>>,
        window: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut l = WindowedLimit::default();
        if let Some(v) = inner {
            l.inner = match limit_from(v)? {
                LimitAlgorithm::Fixed(x) => InnerAlgorithm::Fixed(x),
                LimitAlgorithm::Aimd(x) => InnerAlgorithm::Aimd(x),
                LimitAlgorithm::Vegas(x) => InnerAlgorithm::Vegas(x),
                LimitAlgorithm::Gradient(x) => InnerAlgorithm::Gradient(x),
                LimitAlgorithm::Gradient2(x) => InnerAlgorithm::Gradient2(x),
                LimitAlgorithm::Ciad(x) => InnerAlgorithm::Ciad(x),
                LimitAlgorithm::Knee(x) => InnerAlgorithm::Knee(x),
                LimitAlgorithm::Windowed(_) => {
                    return Err(PyValueError::new_err(
                        "inner must not be another Windowed limit",
                    ))
                }
            };
        }
        set!(min_window, l.min_window_ns, duration_ns);
        set!(max_window, l.max_window_ns, duration_ns);
        set!(min_samples, l.min_samples, u32_arg);
        set!(min_rtt_threshold, l.min_rtt_threshold_ns, duration_ns);
        if let Some(v) = window {
            if let Ok(p) = v.cast::<Percentile>() {
                let p = p.get();
                l.window = SampleWindow::Percentile {
                    percentile: p.percentile,
                    capacity: p.capacity,
                };
            } else if v.is_none() {
                l.window = SampleWindow::Average;
            } else {
                return Err(PyTypeError::new_err(format!(
                    "window must be None (the average RTT) or weir.Percentile, not {}",
                    v.get_type().name()?
                )));
            }
        }
        Ok(Windowed {
            l: checked(l, "Windowed")?,
        })
    }
    /// The algorithm fed one sample per window (default Vegas()).
    #[getter]
    fn inner(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        limit_to(py, LimitAlgorithm::from(self.l.inner))
    }
    /// Shortest window in seconds (default 1.0).
    #[getter]
    fn min_window(&self) -> f64 {
        secs(self.l.min_window_ns)
    }
    /// Longest window in seconds (default 1.0).
    #[getter]
    fn max_window(&self) -> f64 {
        secs(self.l.max_window_ns)
    }
    /// Windows with fewer samples are discarded (default 10).
    #[getter]
    fn min_samples(&self) -> u32 {
        self.l.min_samples
    }
    /// Samples faster than this many seconds are ignored (default 0.0001).
    #[getter]
    fn min_rtt_threshold(&self) -> f64 {
        secs(self.l.min_rtt_threshold_ns)
    }
    /// None (the average RTT) or a Percentile.
    #[getter]
    fn window(&self, py: Python<'_>) -> PyResult<Option<Py<Percentile>>> {
        match self.l.window {
            SampleWindow::Average => Ok(None),
            SampleWindow::Percentile {
                percentile,
                capacity,
            } => Ok(Some(Py::new(
                py,
                Percentile {
                    percentile,
                    capacity,
                },
            )?)),
        }
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let l = &self.l;
        let inner = self.inner(py)?.bind(py).repr()?.to_string();
        let window = match l.window {
            SampleWindow::Average => "None".to_string(),
            SampleWindow::Percentile {
                percentile,
                capacity,
            } => {
                format!("Percentile({}, capacity={capacity})", fmt_f(percentile))
            }
        };
        Ok(format!(
            "Windowed({inner}, min_window={}, max_window={}, min_samples={}, min_rtt_threshold={}, window={window})",
            fmt_f(self.min_window()),
            fmt_f(self.max_window()),
            l.min_samples,
            fmt_f(self.min_rtt_threshold())
        ))
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Windowed>().is_ok_and(|o| o.get().l == self.l)
    }
    fn __hash__(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(hash_str(&self.__repr__(py)?))
    }
}

/// The limit algorithm behind a Python value.
pub fn limit_from(v: &Bound<'_, PyAny>) -> PyResult<LimitAlgorithm> {
    if let Ok(x) = v.cast::<Fixed>() {
        return Ok(LimitAlgorithm::Fixed(x.get().l));
    }
    if let Ok(x) = v.cast::<Aimd>() {
        return Ok(LimitAlgorithm::Aimd(x.get().l));
    }
    if let Ok(x) = v.cast::<Vegas>() {
        return Ok(LimitAlgorithm::Vegas(x.get().l));
    }
    if let Ok(x) = v.cast::<Gradient>() {
        return Ok(LimitAlgorithm::Gradient(x.get().l));
    }
    if let Ok(x) = v.cast::<Gradient2>() {
        return Ok(LimitAlgorithm::Gradient2(x.get().l));
    }
    if let Ok(x) = v.cast::<Ciad>() {
        return Ok(LimitAlgorithm::Ciad(x.get().l));
    }
    if let Ok(x) = v.cast::<Knee>() {
        return Ok(LimitAlgorithm::Knee(x.get().l));
    }
    if let Ok(x) = v.cast::<Windowed>() {
        return Ok(LimitAlgorithm::Windowed(x.get().l));
    }
    Err(PyTypeError::new_err(format!(
        "limit must be weir.Fixed, Aimd, Vegas, Gradient, Gradient2, Ciad, Knee or Windowed, not {}",
        v.get_type().name()?
    )))
}

/// The Python value of a limit algorithm.
pub fn limit_to(py: Python<'_>, l: LimitAlgorithm) -> PyResult<Py<PyAny>> {
    Ok(match l {
        LimitAlgorithm::Fixed(l) => Py::new(py, Fixed { l })?.into_any(),
        LimitAlgorithm::Aimd(l) => Py::new(py, Aimd { l })?.into_any(),
        LimitAlgorithm::Vegas(l) => Py::new(py, Vegas { l })?.into_any(),
        LimitAlgorithm::Gradient(l) => Py::new(py, Gradient { l })?.into_any(),
        LimitAlgorithm::Gradient2(l) => Py::new(py, Gradient2 { l })?.into_any(),
        LimitAlgorithm::Ciad(l) => Py::new(py, Ciad { l })?.into_any(),
        LimitAlgorithm::Knee(l) => Py::new(py, Knee { l })?.into_any(),
        LimitAlgorithm::Windowed(l) => Py::new(py, Windowed { l })?.into_any(),
    })
}
