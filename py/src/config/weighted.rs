//! The weighted family, the original cascade's: `Weighted`, its draws (`weir.Draw`, a Python enum), and
//! the success-rate models it takes, `Buckets` (the cascade's window) and `Ewma` (its later variant).

use super::{check_algorithm, fmt_f, hash_str};
use crate::convert::{duration_ns, float, int_in, secs, weir_type};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use weir::balance::{
    Algorithm, BucketHealth, Draw, EwmaHealth, Weighted as Params, WeightedHealth,
};

/// The weighted family, the original cascade's: a success rate per node (`health`, `Buckets()` or
/// `Ewma()`), a weight `success_rate ** weight_exponent` (at least `floor / active nodes` for a node
/// whose rate is old), and a draw from the weights among the nodes with room (`draw`, a `weir.Draw`).
/// `Weighted()` is the cascade exactly.
///
/// GIL: immutable; safe to share between threads.
#[pyclass(frozen, module = "weir")]
pub struct Weighted {
    pub(super) params: Params,
}

#[pymethods]
impl Weighted {
    #[new]
    #[pyo3(signature = (*, health=None, draw=None, weight_exponent=None, floor=None), text_signature = "(*, health=None, draw='cascade', weight_exponent=3.0, floor=0.0001)")]
    fn new(
        health: Option<&Bound<'_, PyAny>>,
        draw: Option<&Bound<'_, PyAny>>,
        weight_exponent: Option<&Bound<'_, PyAny>>,
        floor: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut p = Params::CASCADE;
        if let Some(v) = health.filter(|v| !v.is_none()) {
            p.health = health_from(v)?;
        }
        if let Some(v) = draw {
            p.draw = draw_from(v)?;
        }
        if let Some(v) = weight_exponent {
            p.weight_exponent = float(v, "weight_exponent")?;
        }
        if let Some(v) = floor {
            p.floor = float(v, "floor")?;
        }
        check_algorithm(Algorithm::Weighted(p), "Weighted")?;
        Ok(Weighted { params: p })
    }

    /// How a node's success rate is measured: `Buckets()` (the default, the cascade's window) or `Ewma()`.
    #[getter]
    fn health(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        health_to(py, self.params.health)
    }
    /// How a node is drawn from the weights, a `weir.Draw` (default `Draw.CASCADE`).
    #[getter]
    fn draw(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(weir_type(py, "Draw")?
            .call1((draw_name(self.params.draw),))?
            .unbind())
    }
    /// A node's weight is its success rate to this power (default 3.0).
    #[getter]
    fn weight_exponent(&self) -> f64 {
        self.params.weight_exponent
    }
    /// The recovery floor (default 0.0001): a node whose rate is old weighs at least `floor / active
    /// nodes`.
    #[getter]
    fn floor(&self) -> f64 {
        self.params.floor
    }
    fn __repr__(&self) -> String {
        format!(
            "Weighted(health={}, draw=Draw.{}, weight_exponent={}, floor={})",
            health_repr(self.params.health),
            draw_name(self.params.draw).to_uppercase(),
            fmt_f(self.params.weight_exponent),
            fmt_f(self.params.floor)
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Weighted>()
            .is_ok_and(|o| o.get().params == self.params)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// The cascade's success-rate model: a window of `count` buckets of `width` seconds, each weighing
/// `decay` times the next older one, plus a sticky bucket. For `Weighted(health=...)`.
///
/// GIL: immutable; safe to share between threads.
#[pyclass(frozen, module = "weir")]
pub struct Buckets {
    health: BucketHealth,
}

#[pymethods]
impl Buckets {
    #[new]
    #[pyo3(signature = (*, count=None, width=None, decay=None), text_signature = "(*, count=6, width=5.0, decay=3.0)")]
    fn new(
        count: Option<&Bound<'_, PyAny>>,
        width: Option<&Bound<'_, PyAny>>,
        decay: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut health = BucketHealth::DEFAULT;
        if let Some(v) = count {
            health.count = int_in(v, "count", 1, weir::balance::MAX_BUCKETS as u64)? as usize;
        }
        if let Some(v) = width {
            health.width_ns = duration_ns(v, "width")?;
        }
        if let Some(v) = decay {
            health.decay = float(v, "decay")?;
        }
        let algorithm = Algorithm::Weighted(Params {
            health: WeightedHealth::Buckets(health),
            ..Params::CASCADE
        });
        check_algorithm(algorithm, "Buckets")?;
        Ok(Buckets { health })
    }
    /// Buckets in the window (default 6).
    #[getter]
    fn count(&self) -> usize {
        self.health.count
    }
    /// Seconds per bucket (default 5.0).
    #[getter]
    fn width(&self) -> f64 {
        secs(self.health.width_ns)
    }
    /// Each bucket weighs this many times the next older one (default 3.0).
    #[getter]
    fn decay(&self) -> f64 {
        self.health.decay
    }
    fn __repr__(&self) -> String {
        health_repr(WeightedHealth::Buckets(self.health))
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Buckets>()
            .is_ok_and(|o| o.get().health == self.health)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// The cascade's later variant: one exponentially weighted success average per node, whose outcomes'
/// influence halves every `half_life` outcomes. For `Weighted(health=...)`.
///
/// GIL: immutable; safe to share between threads.
#[pyclass(frozen, module = "weir")]
pub struct Ewma {
    /// Outcomes after which an outcome's influence has halved (default 32).
    #[pyo3(get)]
    half_life: u32,
}

#[pymethods]
impl Ewma {
    #[new]
    #[pyo3(signature = (*, half_life=None), text_signature = "(*, half_life=32)")]
    fn new(half_life: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let h = match half_life {
            Some(v) => int_in(v, "half_life", 1, u64::from(u32::MAX))? as u32,
            None => EwmaHealth::DEFAULT.half_life,
        };
        Ok(Ewma { half_life: h })
    }
    fn __repr__(&self) -> String {
        health_repr(WeightedHealth::Ewma(EwmaHealth {
            half_life: self.half_life,
        }))
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

/// The success-rate model behind a Python value (`Buckets` or `Ewma`).
fn health_from(v: &Bound<'_, PyAny>) -> PyResult<WeightedHealth> {
    if let Ok(b) = v.cast::<Buckets>() {
        return Ok(WeightedHealth::Buckets(b.get().health));
    }
    if let Ok(e) = v.cast::<Ewma>() {
        return Ok(WeightedHealth::Ewma(EwmaHealth {
            half_life: e.get().half_life,
        }));
    }
    Err(PyTypeError::new_err(format!(
        "health must be weir.Buckets or weir.Ewma, not {}",
        v.get_type().name()?
    )))
}

/// The Python value of a success-rate model.
fn health_to(py: Python<'_>, health: WeightedHealth) -> PyResult<Py<PyAny>> {
    Ok(match health {
        WeightedHealth::Buckets(health) => Py::new(py, Buckets { health })?.into_any(),
        WeightedHealth::Ewma(EwmaHealth { half_life }) => {
            Py::new(py, Ewma { half_life })?.into_any()
        }
    })
}

fn health_repr(health: WeightedHealth) -> String {
    match health {
        WeightedHealth::Buckets(b) => format!(
            "Buckets(count={}, width={}, decay={})",
            b.count,
            fmt_f(secs(b.width_ns)),
            fmt_f(b.decay)
        ),
        WeightedHealth::Ewma(e) => format!("Ewma(half_life={})", e.half_life),
    }
}

/// The draw behind a Python value: a `weir.Draw` member or its string value.
fn draw_from(v: &Bound<'_, PyAny>) -> PyResult<Draw> {
    let name = if let Ok(s) = v.cast::<PyString>() {
        s.to_string()
    } else if v.is_instance(weir_type(v.py(), "Draw")?.as_any())? {
        v.getattr("value")?.extract::<String>()?
    } else {
        return Err(PyTypeError::new_err(format!(
            "draw must be a weir.Draw, not {}",
            v.get_type().name()?
        )));
    };
    Ok(match name.as_str() {
        "cascade" => Draw::Cascade,
        "cascade_approx" => Draw::CascadeApprox,
        "weighted_pick" => Draw::WeightedPick,
        "lowest_score" => {
            return Err(PyValueError::new_err(
                "draw 'lowest_score' is no draw of the weighted family: it is the other family, weir.LowestScore()",
            ))
        }
        other => {
            return Err(PyValueError::new_err(format!(
                "draw must be one of 'cascade', 'cascade_approx', 'weighted_pick', got {other:?}"
            )))
        }
    })
}

/// The string value of a draw (`weir.Draw(value)` in Python).
pub(super) fn draw_name(d: Draw) -> &'static str {
    match d {
        Draw::Cascade => "cascade",
        Draw::CascadeApprox => "cascade_approx",
        Draw::WeightedPick => "weighted_pick",
    }
}
