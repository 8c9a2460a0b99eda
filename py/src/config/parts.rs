//! The parts some limit algorithms take: Vegas' thresholds (`Log10` or an int) and steps (`'log10'` or a
//! factor), the gradients' queue size (`Sqrt` or an int), and the windowed limit's `Percentile`.

use super::{fmt_f, hash_str, limit_arg, u32_arg};
use crate::convert::{float, int_in};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use weir::limit::{QueueSize, VegasStep, VegasThreshold};

/// A Vegas threshold that grows with the limit: `k * LOG10(limit)`, Netflix's `max(1, floor(log10 L))`.
///
/// GIL: immutable.
#[pyclass(frozen, module = "weir")]
pub struct Log10 {
    /// The multiplier.
    #[pyo3(get)]
    pub(super) k: u32,
}

#[pymethods]
impl Log10 {
    #[new]
    #[pyo3(signature = (k=None), text_signature = "(k=1)")]
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
#[pyclass(frozen, module = "weir")]
pub struct Sqrt {
    /// The smallest queue allowed.
    #[pyo3(get)]
    pub(super) min: u32,
}

#[pymethods]
impl Sqrt {
    #[new]
    #[pyo3(signature = (min=None), text_signature = "(min=4)")]
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
#[pyclass(frozen, module = "weir")]
pub struct Percentile {
    /// In (0, 1).
    #[pyo3(get)]
    pub(super) percentile: f64,
    /// Samples kept per window, 1..=10.
    #[pyo3(get)]
    pub(super) capacity: u32,
}

#[pymethods]
impl Percentile {
    #[new]
    #[pyo3(signature = (percentile, capacity=None), text_signature = "(percentile, capacity=10)")]
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

pub(super) fn threshold_from(v: &Bound<'_, PyAny>, name: &str) -> PyResult<VegasThreshold> {
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

pub(super) fn threshold_to(py: Python<'_>, t: VegasThreshold) -> PyResult<Py<PyAny>> {
    Ok(match t {
        VegasThreshold::Constant(c) => c.into_pyobject(py)?.into_any().unbind(),
        VegasThreshold::Log10(k) => Py::new(py, Log10 { k })?.into_any(),
    })
}

pub(super) fn threshold_repr(t: VegasThreshold) -> String {
    match t {
        VegasThreshold::Constant(c) => c.to_string(),
        VegasThreshold::Log10(k) => format!("Log10({k})"),
    }
}

pub(super) fn step_from(v: &Bound<'_, PyAny>, name: &str) -> PyResult<VegasStep> {
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

pub(super) fn step_to(py: Python<'_>, s: VegasStep) -> PyResult<Py<PyAny>> {
    Ok(match s {
        VegasStep::Log10 => "log10".into_pyobject(py)?.into_any().unbind(),
        VegasStep::Factor(f) => f.into_pyobject(py)?.into_any().unbind(),
    })
}

pub(super) fn step_repr(s: VegasStep) -> String {
    match s {
        VegasStep::Log10 => "'log10'".into(),
        VegasStep::Factor(f) => fmt_f(f),
    }
}

pub(super) fn queue_from(v: &Bound<'_, PyAny>) -> PyResult<QueueSize> {
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

pub(super) fn queue_to(py: Python<'_>, q: QueueSize) -> PyResult<Py<PyAny>> {
    Ok(match q {
        QueueSize::Constant(c) => c.into_pyobject(py)?.into_any().unbind(),
        QueueSize::Sqrt { min } => Py::new(py, Sqrt { min })?.into_any(),
    })
}

pub(super) fn queue_repr(q: QueueSize) -> String {
    match q {
        QueueSize::Constant(c) => c.to_string(),
        QueueSize::Sqrt { min } => format!("Sqrt(min={min})"),
    }
}

pub(super) fn opt_f(x: Option<f64>) -> String {
    x.map_or("None".into(), fmt_f)
}
