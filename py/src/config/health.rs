//! Health models: `Decay` (the default's decayed counters), `Buckets` (the seeds' window) and `Ewma`.

use super::{config_error, f32_arg, f32_shown, fmt_f, hash_str};
use crate::convert::{duration_ns, float, int_in, secs};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use weir::balance::{BucketHealth, DecayHealth, EwmaHealth, HealthModel, Policy};

/// The default health model: time-decayed success and failure counters per node, the penalty in
/// in-flight requests that the LOWEST_SCORE policy adds to each node's score.
///
/// GIL: immutable; safe to share between threads.
#[pyclass(frozen, module = "weir")]
pub struct Decay {
    health: DecayHealth,
}

#[pymethods]
impl Decay {
    #[new]
    #[pyo3(signature = (*, success_half_life=None, failure_half_life=None, dropped_cost=None, throttled_cost=None, client_error_cost=None, penalty=None, ratio_penalty=None), text_signature = "(*, success_half_life=1.0, failure_half_life=30.0, dropped_cost=1.0, throttled_cost=0.1, client_error_cost=0.01, penalty=10.0, ratio_penalty=16.0)")]
    fn new(
        success_half_life: Option<&Bound<'_, PyAny>>,
        failure_half_life: Option<&Bound<'_, PyAny>>,
        dropped_cost: Option<&Bound<'_, PyAny>>,
        throttled_cost: Option<&Bound<'_, PyAny>>,
        client_error_cost: Option<&Bound<'_, PyAny>>,
        penalty: Option<&Bound<'_, PyAny>>,
        ratio_penalty: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let DecayHealth {
            success_half_life_ns: mut s,
            failure_half_life_ns: mut f,
            dropped_cost: mut dc,
            throttled_cost: mut tc,
            client_error_cost: mut cc,
            penalty: mut p,
            ratio_penalty: mut rp,
        } = DecayHealth::DEFAULT;
        if let Some(v) = success_half_life {
            s = duration_ns(v, "success_half_life")?;
        }
        if let Some(v) = failure_half_life {
            f = duration_ns(v, "failure_half_life")?;
        }
        if let Some(v) = dropped_cost {
            dc = f32_arg(v, "dropped_cost")?;
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
        let health = DecayHealth {
            success_half_life_ns: s,
            failure_half_life_ns: f,
            dropped_cost: dc,
            throttled_cost: tc,
            client_error_cost: cc,
            penalty: p,
            ratio_penalty: rp,
        };
        check_health(HealthModel::Decay(health), "Decay")?;
        Ok(Decay { health })
    }

    /// Seconds after which a success counts half (default 1.0).
    #[getter]
    fn success_half_life(&self) -> f64 {
        secs(self.health.success_half_life_ns)
    }
    /// Seconds after which a failure counts half (default 30.0).
    #[getter]
    fn failure_half_life(&self) -> f64 {
        secs(self.health.failure_half_life_ns)
    }
    /// What a DROPPED outcome (503, 504, a timeout) adds to the failures (default 1.0: a whole
    /// failure; 0.1 reads a node that sheds as busy rather than broken).
    #[getter]
    fn dropped_cost(&self) -> f64 {
        f32_shown(self.health.dropped_cost)
    }
    /// What a THROTTLED outcome (429) adds to the failures (default 0.1).
    #[getter]
    fn throttled_cost(&self) -> f64 {
        f32_shown(self.health.throttled_cost)
    }
    /// What a CLIENT_ERROR outcome (another 4xx) adds to the failures (default 0.01).
    #[getter]
    fn client_error_cost(&self) -> f64 {
        f32_shown(self.health.client_error_cost)
    }
    /// Penalty per recent failure, in in-flight requests (default 10).
    #[getter]
    fn penalty(&self) -> f64 {
        f32_shown(self.health.penalty)
    }
    /// Penalty per doubling of failures over successes (default 16).
    #[getter]
    fn ratio_penalty(&self) -> f64 {
        f32_shown(self.health.ratio_penalty)
    }
    fn __repr__(&self) -> String {
        format!(
            "Decay(success_half_life={}, failure_half_life={}, dropped_cost={}, throttled_cost={}, client_error_cost={}, penalty={}, ratio_penalty={})",
            fmt_f(self.success_half_life()),
            fmt_f(self.failure_half_life()),
            fmt_f(self.dropped_cost()),
            fmt_f(self.throttled_cost()),
            fmt_f(self.client_error_cost()),
            fmt_f(self.penalty()),
            fmt_f(self.ratio_penalty())
        )
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Decay>()
            .is_ok_and(|o| o.get().health == self.health)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// The seeds' health model: a window of `count` buckets of `width` seconds, each weighing `decay` times
/// the next older one, plus a sticky bucket. Goes with the weighted policies.
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
        check_health(HealthModel::Buckets(health), "Buckets")?;
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
            .is_ok_and(|o| o.get().health == self.health)
    }
    fn __hash__(&self) -> u64 {
        hash_str(&self.__repr__())
    }
}

/// The seeds' later variant: one exponentially weighted success average per node, whose outcomes' influence
/// halves every `half_life` outcomes. Goes with the weighted policies.
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
        HealthModel::Decay(_) => Policy::LowestScore,
        HealthModel::Buckets(_) | HealthModel::Ewma(_) => Policy::Cascade,
    };
    let config = weir::Config {
        health: model,
        policy,
        ..weir::Config::default()
    };
    config.validate().map_err(|e| config_error(e, what))
}

/// The health model behind a Python value (`Decay`, `Buckets` or `Ewma`).
pub fn health_from(v: &Bound<'_, PyAny>) -> PyResult<HealthModel> {
    if let Ok(d) = v.cast::<Decay>() {
        return Ok(HealthModel::Decay(d.get().health));
    }
    if let Ok(b) = v.cast::<Buckets>() {
        return Ok(HealthModel::Buckets(b.get().health));
    }
    if let Ok(e) = v.cast::<Ewma>() {
        return Ok(HealthModel::Ewma(EwmaHealth {
            half_life: e.get().half_life,
        }));
    }
    Err(PyTypeError::new_err(format!(
        "health must be weir.Decay, weir.Buckets or weir.Ewma, not {}",
        v.get_type().name()?
    )))
}

/// The Python value of a health model.
pub fn health_to(py: Python<'_>, model: HealthModel) -> PyResult<Py<PyAny>> {
    Ok(match model {
        HealthModel::Decay(health) => Py::new(py, Decay { health })?.into_any(),
        HealthModel::Buckets(health) => Py::new(py, Buckets { health })?.into_any(),
        HealthModel::Ewma(EwmaHealth { half_life }) => Py::new(py, Ewma { half_life })?.into_any(),
    })
}
