//! The balancer's configuration as small frozen classes with keyword parameters and the core's defaults:
//! health models (`Decay`, `Buckets`, `Ewma`), limit algorithms (`Fixed`, `Aimd`, `Vegas`, `Gradient`,
//! `Gradient2`, `Ciad`, `Windowed`) and their parts (`Log10`, `Sqrt`, `Percentile`). Each constructor checks
//! its values with the core's own validation and raises `ValueError` or `TypeError` naming the parameter.
//! Durations are float seconds (or `datetime.timedelta`), as everywhere in the package.

use crate::convert::{boolean, duration_ns, float, int_in, secs};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use weir::balance::{ConfigError, HealthModel, Policy};
use weir::limit::{
    AimdLimit, CiadLimit, FixedLimit, Gradient2Limit, GradientLimit, InnerAlgorithm, Limit,
    LimitAlgorithm, QueueSize, SampleWindow, VegasLimit, VegasStep, VegasThreshold, WindowedLimit,
    MAX_LIMIT,
};

/// Registers the configuration classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Decay>()?;
    m.add_class::<Buckets>()?;
    m.add_class::<Ewma>()?;
    m.add_class::<Fixed>()?;
    m.add_class::<Aimd>()?;
    m.add_class::<Vegas>()?;
    m.add_class::<Gradient>()?;
    m.add_class::<Gradient2>()?;
    m.add_class::<Ciad>()?;
    m.add_class::<Windowed>()?;
    m.add_class::<Log10>()?;
    m.add_class::<Sqrt>()?;
    m.add_class::<Percentile>()?;
    Ok(())
}

/// A refused configuration as a `ValueError` that names the Python parameter (`what` is the class).
pub fn config_error(e: ConfigError, what: &str) -> PyErr {
    let rule = match e {
        ConfigError::Capacity => "capacity must be between 1 and MAX_NODES (65536)",
        ConfigError::BucketCount => "count must be between 1 and 8",
        ConfigError::BucketWidth => "width must be at least 1 ns",
        ConfigError::Decay => "decay must be finite and >= 1",
        ConfigError::Floor => "floor must be finite and in (0, 1]",
        ConfigError::WeightExponent => "weight_exponent must be finite and in (0, 64]",
        ConfigError::HalfLife => "half_life must be at least 1 outcome",
        ConfigError::LimitRange => {
            "the limits must satisfy min_limit <= initial_limit <= max_limit <= MAX_LIMIT \
             (Vegas: min_limit is 1; Ciad: min_limit >= 1; Fixed: limit <= MAX_LIMIT)"
        }
        ConfigError::BackoffRatio => {
            "backoff_ratio must be in [0.5, 1.0) ([0.5, 1.0] for Gradient; drop_backoff for Gradient2)"
        }
        ConfigError::Timeout => "timeout must be at least 1 ns",
        ConfigError::Smoothing => "smoothing must be in [0, 1]",
        ConfigError::RttTolerance => "rtt_tolerance must be finite and >= 1",
        ConfigError::ProbeInterval => "probe_interval must be between 1 and 2**30 (or None)",
        ConfigError::ProbeMultiplier => "probe_multiplier must be at least 1",
        ConfigError::VegasStep => "increase/decrease factors must be finite and > 0",
        ConfigError::QueueSize => "queue_size must be <= MAX_LIMIT",
        ConfigError::LongWindow => "long_window must be at least 1",
        ConfigError::WindowTime => {
            "min_window and max_window must satisfy 1 ns <= min_window <= max_window <= 1000 s"
        }
        ConfigError::WindowSamples => {
            "min_samples must be at least 1, and at most the percentile window's capacity"
        }
        ConfigError::Percentile => {
            "percentile must be in (0, 1) and capacity between 1 and 10"
        }
        ConfigError::MaxWaiters => "max_waiters must be at most MAX_WAITERS (2**20)",
        ConfigError::DecayHalfLife => {
            "success_half_life and failure_half_life must be between 1 ms and 1 hour"
        }
        ConfigError::OutcomeCost => {
            "throttled_cost and client_error_cost must be finite and in [0, 1]"
        }
        ConfigError::Penalty => "penalty and ratio_penalty must be finite and in [0, 1e6]",
        ConfigError::ModelPolicy => {
            "policy LOWEST_SCORE goes with health Decay; the weighted policies need Buckets or Ewma"
        }
        _ => return PyValueError::new_err(format!("{what}: {e}")),
    };
    PyValueError::new_err(format!("{what}: {rule}"))
}

fn u32_arg(v: &Bound<'_, PyAny>, name: &str) -> PyResult<u32> {
    Ok(int_in(v, name, 0, u64::from(u32::MAX))? as u32)
}

fn limit_arg(v: &Bound<'_, PyAny>, name: &str) -> PyResult<u32> {
    Ok(int_in(v, name, 0, u64::from(MAX_LIMIT))? as u32)
}

fn f32_arg(v: &Bound<'_, PyAny>, name: &str) -> PyResult<f32> {
    let f = float(v, name)?;
    if !f.is_finite() || f.abs() > f64::from(f32::MAX) {
        return Err(PyValueError::new_err(format!(
            "{name} must be finite, got {f}"
        )));
    }
    Ok(f as f32)
}

/// An `f32` parameter as the float a Python user wrote: its shortest decimal, read back as an `f64`
/// (`0.1`, not `0.10000000149011612`).
fn f32_shown(x: f32) -> f64 {
    format!("{x:?}").parse().unwrap_or(f64::from(x))
}

fn fmt_f(x: f64) -> String {
    format!("{x:?}")
}

// ---------------------------------------------------------------------------------------------------------
// Health models

/// The default health model: time-decayed success and failure counters per node, the penalty in
/// in-flight requests that the LOWEST_SCORE policy adds to each node's score.
///
/// GIL: immutable; safe to share between threads.
#[pyclass(frozen, module = "weir._weir")]
pub struct Decay {
    model: HealthModel,
}

#[pymethods]
impl Decay {
    #[new]
    #[pyo3(signature = (*, success_half_life=None, failure_half_life=None, throttled_cost=None, client_error_cost=None, penalty=None, ratio_penalty=None))]
    fn new(
        success_half_life: Option<&Bound<'_, PyAny>>,
        failure_half_life: Option<&Bound<'_, PyAny>>,
        throttled_cost: Option<&Bound<'_, PyAny>>,
        client_error_cost: Option<&Bound<'_, PyAny>>,
        penalty: Option<&Bound<'_, PyAny>>,
        ratio_penalty: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let HealthModel::Decay {
            success_half_life_ns: mut s,
            failure_half_life_ns: mut f,
            throttled_cost: mut tc,
            client_error_cost: mut cc,
            penalty: mut p,
            ratio_penalty: mut rp,
        } = HealthModel::DECAY
        else {
            return Err(PyValueError::new_err("unreachable: DECAY is a Decay model"));
        };
        if let Some(v) = success_half_life {
            s = duration_ns(v, "success_half_life")?;
        }
        if let Some(v) = failure_half_life {
            f = duration_ns(v, "failure_half_life")?;
        }
        if let Some(v) = throttled_cost {
            tc = f32_arg(v, "throttled_cost")?;
        }
        if let Some(v) = client_error_cost {
            cc = f32_arg(v, "client_error_cost")?;
        }
        if let Some(v) = penalty {
            p = f32_arg(v, "penalty")?;
        }
        if let Some(v) = ratio_penalty {
            rp = f32_arg(v, "ratio_penalty")?;
        }
        let model = HealthModel::Decay {
            success_half_life_ns: s,
            failure_half_life_ns: f,
            throttled_cost: tc,
            client_error_cost: cc,
            penalty: p,
            ratio_penalty: rp,
        };
        check_health(model, "Decay")?;
        Ok(Decay { model })
    }

    /// Seconds after which a success counts half (default 1.0).
    #[getter]
    fn success_half_life(&self) -> f64 {
        match self.model {
            HealthModel::Decay {
                success_half_life_ns,
                ..
            } => secs(success_half_life_ns),
            _ => 0.0,
        }
    }
    /// Seconds after which a failure counts half (default 30.0).
    #[getter]
    fn failure_half_life(&self) -> f64 {
        match self.model {
            HealthModel::Decay {
                failure_half_life_ns,
                ..
            } => secs(failure_half_life_ns),
            _ => 0.0,
        }
    }
    /// What a THROTTLED outcome (429) adds to the failures (default 0.1).
    #[getter]
    fn throttled_cost(&self) -> f64 {
        match self.model {
            HealthModel::Decay { throttled_cost, .. } => f32_shown(throttled_cost),
            _ => 0.0,
        }
    }
    /// What a CLIENT_ERROR outcome (another 4xx) adds to the failures (default 0.01).
    #[getter]
    fn client_error_cost(&self) -> f64 {
        match self.model {
            HealthModel::Decay {
                client_error_cost, ..
            } => f32_shown(client_error_cost),
            _ => 0.0,
        }
    }
    /// Penalty per recent failure, in in-flight requests (default 10).
    #[getter]
    fn penalty(&self) -> f64 {
        match self.model {
            HealthModel::Decay { penalty, .. } => f32_shown(penalty),
            _ => 0.0,
        }
    }
    /// Penalty per doubling of failures over successes (default 16).
    #[getter]
    fn ratio_penalty(&self) -> f64 {
        match self.model {
            HealthModel::Decay { ratio_penalty, .. } => f32_shown(ratio_penalty),
            _ => 0.0,
        }
    }
    fn __repr__(&self) -> String {
        format!(
            "Decay(success_half_life={}, failure_half_life={}, throttled_cost={}, client_error_cost={}, penalty={}, ratio_penalty={})",
            fmt_f(self.success_half_life()),
            fmt_f(self.failure_half_life()),
            fmt_f(self.throttled_cost()),
            fmt_f(self.client_error_cost()),
            fmt_f(self.penalty()),
            fmt_f(self.ratio_penalty())
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Decay>()
            .is_ok_and(|o| o.get().model == self.model)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// The seeds' health model: a window of `count` buckets of `width` seconds, each weighing `decay` times
/// the next older one, plus a sticky bucket. Goes with the weighted policies.
///
/// GIL: immutable; safe to share between threads.
#[pyclass(frozen, module = "weir._weir")]
pub struct Buckets {
    model: HealthModel,
}

#[pymethods]
impl Buckets {
    #[new]
    #[pyo3(signature = (*, count=None, width=None, decay=None))]
    fn new(
        count: Option<&Bound<'_, PyAny>>,
        width: Option<&Bound<'_, PyAny>>,
        decay: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let (mut c, mut w, mut d) = (6usize, 5_000_000_000u64, 3.0f64);
        if let Some(v) = count {
            c = int_in(v, "count", 1, weir::balance::MAX_BUCKETS as u64)? as usize;
        }
        if let Some(v) = width {
            w = duration_ns(v, "width")?;
        }
        if let Some(v) = decay {
            d = float(v, "decay")?;
        }
        let model = HealthModel::Buckets {
            count: c,
            width_ns: w,
            decay: d,
        };
        check_health(model, "Buckets")?;
        Ok(Buckets { model })
    }
    /// Buckets in the window (default 6).
    #[getter]
    fn count(&self) -> usize {
        match self.model {
            HealthModel::Buckets { count, .. } => count,
            _ => 0,
        }
    }
    /// Seconds per bucket (default 5.0).
    #[getter]
    fn width(&self) -> f64 {
        match self.model {
            HealthModel::Buckets { width_ns, .. } => secs(width_ns),
            _ => 0.0,
        }
    }
    /// Each bucket weighs this many times the next older one (default 3.0).
    #[getter]
    fn decay(&self) -> f64 {
        match self.model {
            HealthModel::Buckets { decay, .. } => decay,
            _ => 0.0,
        }
    }
    fn __repr__(&self) -> String {
        format!(
            "Buckets(count={}, width={}, decay={})",
            self.count(),
            fmt_f(self.width()),
            fmt_f(self.decay())
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Buckets>()
            .is_ok_and(|o| o.get().model == self.model)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// The seeds' later variant: one exponentially weighted success average per node, whose outcomes' influence
/// halves every `half_life` outcomes. Goes with the weighted policies.
///
/// GIL: immutable; safe to share between threads.
#[pyclass(frozen, module = "weir._weir")]
pub struct Ewma {
    /// Outcomes after which an outcome's influence has halved (default 32).
    #[pyo3(get)]
    half_life: u32,
}

#[pymethods]
impl Ewma {
    #[new]
    #[pyo3(signature = (*, half_life=None))]
    fn new(half_life: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let h = match half_life {
            Some(v) => int_in(v, "half_life", 1, u64::from(u32::MAX))? as u32,
            None => 32,
        };
        Ok(Ewma { half_life: h })
    }
    fn __repr__(&self) -> String {
        format!("Ewma(half_life={})", self.half_life)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Ewma>()
            .is_ok_and(|o| o.get().half_life == self.half_life)
    }
    fn __hash__(&self) -> u64 {
        u64::from(self.half_life)
    }
}

fn check_health(model: HealthModel, what: &str) -> PyResult<()> {
    let policy = match model {
        HealthModel::Decay { .. } => Policy::LowestScore,
        _ => Policy::Cascade,
    };
    let config = weir::Config {
        health: model,
        policy,
        ..weir::Config::default()
    };
    config.validate().map_err(|e| config_error(e, what))
}

fn hash_str(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}

/// The health model behind a Python value (`Decay`, `Buckets` or `Ewma`).
pub fn health_from(v: &Bound<'_, PyAny>) -> PyResult<HealthModel> {
    if let Ok(d) = v.cast::<Decay>() {
        return Ok(d.get().model);
    }
    if let Ok(b) = v.cast::<Buckets>() {
        return Ok(b.get().model);
    }
    if let Ok(e) = v.cast::<Ewma>() {
        return Ok(HealthModel::Ewma {
            half_life: e.get().half_life,
        });
    }
    Err(PyTypeError::new_err(format!(
        "health must be weir.Decay, weir.Buckets or weir.Ewma, not {}",
        v.get_type().name()?
    )))
}

/// The Python value of a health model.
pub fn health_to(py: Python<'_>, model: HealthModel) -> PyResult<Py<PyAny>> {
    Ok(match model {
        HealthModel::Decay { .. } => Py::new(py, Decay { model })?.into_any(),
        HealthModel::Buckets { .. } => Py::new(py, Buckets { model })?.into_any(),
        HealthModel::Ewma { half_life } => Py::new(py, Ewma { half_life })?.into_any(),
    })
}

/// The policy behind a Python value: a `weir.Policy` member or its string value.
pub fn policy_from(v: &Bound<'_, PyAny>) -> PyResult<Policy> {
    let s = if let Ok(s) = v.cast::<PyString>() {
        s.to_string()
    } else {
        match v
            .getattr("value")
            .ok()
            .and_then(|x| x.extract::<String>().ok())
        {
            Some(s) => s,
            None => {
                return Err(PyTypeError::new_err(format!(
                    "policy must be a weir.Policy, not {}",
                    v.get_type().name()?
                )))
            }
        }
    };
    Ok(match s.as_str() {
        "lowest_score" => Policy::LowestScore,
        "cascade" => Policy::Cascade,
        "cascade_approx" => Policy::CascadeApprox,
        "weighted_pick" => Policy::WeightedPick,
        other => {
            return Err(PyValueError::new_err(format!(
                "policy must be one of 'lowest_score', 'cascade', 'cascade_approx', 'weighted_pick', got {other:?}"
            )))
        }
    })
}

/// The string value of a policy (`weir.Policy(value)` in Python).
pub fn policy_name(p: Policy) -> &'static str {
    match p {
        Policy::LowestScore => "lowest_score",
        Policy::Cascade => "cascade",
        Policy::CascadeApprox => "cascade_approx",
        Policy::WeightedPick => "weighted_pick",
    }
}

// ---------------------------------------------------------------------------------------------------------
// Limit parts

/// A Vegas threshold that grows with the limit: `k * LOG10(limit)`, Netflix's `max(1, floor(log10 L))`.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir._weir")]
pub struct Log10 {
    /// The multiplier.
    #[pyo3(get)]
    k: u32,
}

#[pymethods]
impl Log10 {
    #[new]
    #[pyo3(signature = (k=None))]
    fn new(k: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(Log10 {
            k: match k {
                Some(v) => u32_arg(v, "k")?,
                None => 1,
            },
        })
    }
    fn __repr__(&self) -> String {
        format!("Log10({})", self.k)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Log10>().is_ok_and(|o| o.get().k == self.k)
    }
    fn __hash__(&self) -> u64 {
        u64::from(self.k)
    }
}

/// A queue size that grows with the limit: `max(min, SQRT(limit))`.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir._weir")]
pub struct Sqrt {
    /// The smallest queue allowed.
    #[pyo3(get)]
    min: u32,
}

#[pymethods]
impl Sqrt {
    #[new]
    #[pyo3(signature = (min=None))]
    fn new(min: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Ok(Sqrt {
            min: match min {
                Some(v) => limit_arg(v, "min")?,
                None => 4,
            },
        })
    }
    fn __repr__(&self) -> String {
        format!("Sqrt(min={})", self.min)
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Sqrt>().is_ok_and(|o| o.get().min == self.min)
    }
    fn __hash__(&self) -> u64 {
        u64::from(self.min)
    }
}

/// A windowed limit's percentile RTT: the `percentile` RTT of the window's first `capacity` samples.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir._weir")]
pub struct Percentile {
    /// In (0, 1).
    #[pyo3(get)]
    percentile: f64,
    /// Samples kept per window, 1..=10.
    #[pyo3(get)]
    capacity: u32,
}

#[pymethods]
impl Percentile {
    #[new]
    #[pyo3(signature = (percentile, capacity=None))]
    fn new(percentile: &Bound<'_, PyAny>, capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let p = float(percentile, "percentile")?;
        if !(p > 0.0 && p < 1.0) {
            return Err(PyValueError::new_err(format!(
                "percentile must be in (0, 1), got {p}"
            )));
        }
        let cap = weir::limit::PERCENTILE_CAPACITY as u64;
        let c = match capacity {
            Some(v) => int_in(v, "capacity", 1, cap)? as u32,
            None => cap as u32,
        };
        Ok(Percentile {
            percentile: p,
            capacity: c,
        })
    }
    fn __repr__(&self) -> String {
        format!(
            "Percentile({}, capacity={})",
            fmt_f(self.percentile),
            self.capacity
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Percentile>().is_ok_and(|o| {
            let o = o.get();
            o.percentile == self.percentile && o.capacity == self.capacity
        })
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

fn threshold_from(v: &Bound<'_, PyAny>, name: &str) -> PyResult<VegasThreshold> {
    if let Ok(l) = v.cast::<Log10>() {
        return Ok(VegasThreshold::Log10(l.get().k));
    }
    if v.is_instance_of::<pyo3::types::PyInt>() {
        return Ok(VegasThreshold::Constant(u32_arg(v, name)?));
    }
    Err(PyTypeError::new_err(format!(
        "{name} must be an int (a constant) or weir.Log10(k), not {}",
        v.get_type().name()?
    )))
}

fn threshold_to(py: Python<'_>, t: VegasThreshold) -> PyResult<Py<PyAny>> {
    Ok(match t {
        VegasThreshold::Constant(c) => c.into_pyobject(py)?.into_any().unbind(),
        VegasThreshold::Log10(k) => Py::new(py, Log10 { k })?.into_any(),
    })
}

fn threshold_repr(t: VegasThreshold) -> String {
    match t {
        VegasThreshold::Constant(c) => c.to_string(),
        VegasThreshold::Log10(k) => format!("Log10({k})"),
    }
}

fn step_from(v: &Bound<'_, PyAny>, name: &str) -> PyResult<VegasStep> {
    if let Ok(s) = v.cast::<PyString>() {
        if *s == "log10" {
            return Ok(VegasStep::Log10);
        }
        return Err(PyValueError::new_err(format!(
            "{name} must be 'log10' or a float factor, got {:?}",
            s.to_string()
        )));
    }
    Ok(VegasStep::Factor(float(v, name)?))
}

fn step_to(py: Python<'_>, s: VegasStep) -> PyResult<Py<PyAny>> {
    Ok(match s {
        VegasStep::Log10 => "log10".into_pyobject(py)?.into_any().unbind(),
        VegasStep::Factor(f) => f.into_pyobject(py)?.into_any().unbind(),
    })
}

fn step_repr(s: VegasStep) -> String {
    match s {
        VegasStep::Log10 => "'log10'".into(),
        VegasStep::Factor(f) => fmt_f(f),
    }
}

fn queue_from(v: &Bound<'_, PyAny>) -> PyResult<QueueSize> {
    if let Ok(s) = v.cast::<Sqrt>() {
        return Ok(QueueSize::Sqrt { min: s.get().min });
    }
    if v.is_instance_of::<pyo3::types::PyInt>() {
        return Ok(QueueSize::Constant(limit_arg(v, "queue_size")?));
    }
    Err(PyTypeError::new_err(format!(
        "queue_size must be an int (a constant) or weir.Sqrt(min), not {}",
        v.get_type().name()?
    )))
}

fn queue_to(py: Python<'_>, q: QueueSize) -> PyResult<Py<PyAny>> {
    Ok(match q {
        QueueSize::Constant(c) => c.into_pyobject(py)?.into_any().unbind(),
        QueueSize::Sqrt { min } => Py::new(py, Sqrt { min })?.into_any(),
    })
}

fn queue_repr(q: QueueSize) -> String {
    match q {
        QueueSize::Constant(c) => c.to_string(),
        QueueSize::Sqrt { min } => format!("Sqrt(min={min})"),
    }
}

fn opt_f(x: Option<f64>) -> String {
    x.map_or("None".into(), fmt_f)
}

// ---------------------------------------------------------------------------------------------------------
// Limit algorithms

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
#[pyclass(frozen, module = "weir._weir")]
pub struct Fixed {
    l: FixedLimit,
}

#[pymethods]
impl Fixed {
    #[new]
    #[pyo3(signature = (limit=None))]
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
#[pyclass(frozen, module = "weir._weir")]
pub struct Aimd {
    l: AimdLimit,
}

#[pymethods]
impl Aimd {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, min_limit=None, max_limit=None, backoff_ratio=None, timeout=None))]
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
#[pyclass(frozen, module = "weir._weir")]
pub struct Vegas {
    l: VegasLimit,
}

#[pymethods]
impl Vegas {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, max_limit=None, smoothing=None, probe_multiplier=None, alpha=None, beta=None, threshold=None, increase=None, decrease=None, baseline_from_drops=None))]
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
#[pyclass(frozen, module = "weir._weir")]
pub struct Gradient {
    l: GradientLimit,
}

#[pymethods]
impl Gradient {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, min_limit=None, max_limit=None, smoothing=None, queue_size=None, rtt_tolerance=None, probe_interval=Some(None), backoff_ratio=None))]
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
#[pyclass(frozen, module = "weir._weir")]
pub struct Gradient2 {
    l: Gradient2Limit,
}

#[pymethods]
impl Gradient2 {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, min_limit=None, max_limit=None, smoothing=None, queue_size=None, long_window=None, rtt_tolerance=None, drop_backoff=None))]
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

/// Cautious increase, aggressive decrease (palantir dialogue's per-host limiter), with an opt-in fast start.
/// The balancer's default limit is `Ciad(fast_start=True)`.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir._weir")]
pub struct Ciad {
    l: CiadLimit,
}

#[pymethods]
impl Ciad {
    #[new]
    #[pyo3(signature = (*, initial_limit=None, min_limit=None, max_limit=None, backoff_ratio=None, fast_start=None))]
    fn new(
        initial_limit: Option<&Bound<'_, PyAny>>,
        min_limit: Option<&Bound<'_, PyAny>>,
        max_limit: Option<&Bound<'_, PyAny>>,
        backoff_ratio: Option<&Bound<'_, PyAny>>,
        fast_start: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut l = CiadLimit::default();
        set!(initial_limit, l.initial_limit, limit_arg);
        set!(min_limit, l.min_limit, limit_arg);
        set!(max_limit, l.max_limit, limit_arg);
        set!(backoff_ratio, l.backoff_ratio, float);
        set!(fast_start, l.fast_start, boolean);
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
    fn __repr__(&self) -> String {
        let l = &self.l;
        format!(
            "Ciad(initial_limit={}, min_limit={}, max_limit={}, backoff_ratio={}, fast_start={})",
            l.initial_limit,
            l.min_limit,
            l.max_limit,
            fmt_f(l.backoff_ratio),
            if l.fast_start { "True" } else { "False" }
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other.cast::<Ciad>().is_ok_and(|o| o.get().l == self.l)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// Any other algorithm fed one aggregate sample per time window (Netflix's WindowedLimit).
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir._weir")]
pub struct Windowed {
    l: WindowedLimit,
}

#[pymethods]
impl Windowed {
    #[new]
    #[pyo3(signature = (inner=None, *, min_window=None, max_window=None, min_samples=None, min_rtt_threshold=None, window=None))]
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
    if let Ok(x) = v.cast::<Windowed>() {
        return Ok(LimitAlgorithm::Windowed(x.get().l));
    }
    Err(PyTypeError::new_err(format!(
        "limit must be weir.Fixed, Aimd, Vegas, Gradient, Gradient2, Ciad or Windowed, not {}",
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
        LimitAlgorithm::Windowed(l) => Py::new(py, Windowed { l })?.into_any(),
    })
}
