//! The balancer's configuration as small frozen classes with keyword parameters and the core's defaults:
//! `Config` (the whole of it), the algorithm families (`LowestScore`, `Weighted` with its success-rate
//! models `Buckets` and `Ewma`), limit algorithms (`Fixed`, `Aimd`, `Vegas`, `Gradient`, `Gradient2`,
//! `Ciad`, `Knee`, `Windowed`) and their parts (`Log10`, `Sqrt`, `Percentile`). Each constructor checks its
//! values with the core's own validation and raises `ValueError` or `TypeError` naming the parameter.
//! Durations are float seconds (or `datetime.timedelta`), as everywhere in the package.
//!
//! | file | what |
//! |---|---|
//! | `lowest.rs` | `LowestScore`: the lowest-score family (the default's) |
//! | `weighted.rs` | `Weighted` (the original cascade's family), its draws, `Buckets`, `Ewma` |
//! | `parts.rs` | `Log10`, `Sqrt`, `Percentile`: the parts some limit algorithms take |
//! | `limit.rs` | `Fixed`, `Aimd`, `Vegas`, `Gradient`, `Gradient2`, `Ciad`, `Knee`, `Windowed` |
//! | here | `Config`, the refused-configuration message, the argument readers |

mod limit;
mod lowest;
mod parts;
mod weighted;

use crate::convert::{float, int_in};
use limit::{limit_from, limit_to, Aimd, Ciad, Fixed, Gradient, Gradient2, Knee, Vegas, Windowed};
use lowest::LowestScore;
use parts::{Log10, Percentile, Sqrt};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyType;
use weighted::{Buckets, Ewma, Weighted};
use weir::balance::{Algorithm, ConfigError, MAX_WAITERS};
use weir::limit::{LimitAlgorithm, MAX_LIMIT};

/// Registers the configuration classes.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Config>()?;
    m.add_class::<LowestScore>()?;
    m.add_class::<Weighted>()?;
    m.add_class::<Buckets>()?;
    m.add_class::<Ewma>()?;
    m.add_class::<Fixed>()?;
    m.add_class::<Aimd>()?;
    m.add_class::<Vegas>()?;
    m.add_class::<Gradient>()?;
    m.add_class::<Gradient2>()?;
    m.add_class::<Ciad>()?;
    m.add_class::<Knee>()?;
    m.add_class::<Windowed>()?;
    m.add_class::<Log10>()?;
    m.add_class::<Sqrt>()?;
    m.add_class::<Percentile>()?;
    Ok(())
}

/// Everything a balancer is built from: the algorithm (a family with its parameters), the per-node
/// limit, how many callers may wait for room, and the generator seed. `Config()` is weir's default
/// algorithm; `Config.cascade()` is the original cascade exactly.
///
/// `seed=None` leaves the seed to each balancer built from the configuration, which draws one at random
/// (`balancer.config.seed` tells which); an int makes the decisions reproducible.
///
/// GIL: immutable; safe to share between threads.
#[pyclass(frozen, module = "weir")]
pub struct Config {
    /// The configuration: its seed is `seed`, or 0 where `seed` is None.
    config: weir::Config,
    seed: Option<u64>,
}

impl Config {
    /// The configuration of a balancer: its seed is known.
    pub fn of_balancer(config: weir::Config) -> Config {
        Config {
            config,
            seed: Some(config.seed),
        }
    }

    /// The core's configuration, with `seed` for a configuration that leaves it to the balancer.
    pub fn resolved(&self, seed: impl FnOnce() -> u64) -> weir::Config {
        weir::Config {
            seed: self.seed.unwrap_or_else(seed),
            ..self.config
        }
    }

    /// A checked configuration; `what` names the constructor in the error.
    fn checked(config: weir::Config, seed: Option<u64>, what: &str) -> PyResult<Config> {
        config.validate().map_err(|e| config_error(e, what))?;
        Ok(Config {
            config: weir::Config {
                seed: seed.unwrap_or(0),
                ..config
            },
            seed,
        })
    }
}

#[pymethods]
impl Config {
    #[new]
    #[pyo3(signature = (*, algorithm=None, limit=None, max_waiters=None, seed=None), text_signature = "(*, algorithm=None, limit=None, max_waiters=1024, seed=None)")]
    fn new(
        algorithm: Option<&Bound<'_, PyAny>>,
        limit: Option<&Bound<'_, PyAny>>,
        max_waiters: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut config = weir::Config::default();
        if let Some(v) = algorithm.filter(|v| !v.is_none()) {
            config.algorithm = algorithm_from(v)?;
        }
        if let Some(v) = limit.filter(|v| !v.is_none()) {
            config.limit = limit_from(v)?;
        }
        if let Some(v) = max_waiters {
            config.max_waiters = max_waiters_arg(v)?;
        }
        let seed = seed_arg(seed)?;
        Config::checked(config, seed, "Config")
    }

    /// The original cascade exactly, as its blog post describes it: `Weighted()` (a window of 6 buckets of
    /// 5 s with decay 3 and a sticky bucket, weights `success_rate ** 3`, the weighted random cascade) and
    /// `Fixed(100)`. Choose it to reproduce that behaviour, or where a call's cost does not depend on
    /// the node it goes to and a fixed cap is what you want; `Config()` does better in every scenario of
    /// weir's simulator.
    #[classmethod]
    #[pyo3(signature = (*, seed=None, max_waiters=None), text_signature = "($cls, *, seed=None, max_waiters=1024)")]
    fn cascade(
        _cls: &Bound<'_, PyType>,
        seed: Option<&Bound<'_, PyAny>>,
        max_waiters: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut config = weir::Config::cascade();
        if let Some(v) = max_waiters {
            config.max_waiters = max_waiters_arg(v)?;
        }
        let seed = seed_arg(seed)?;
        Config::checked(config, seed, "Config.cascade")
    }

    /// The algorithm: `LowestScore(...)` (the default) or `Weighted(...)`.
    #[getter]
    fn algorithm(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        algorithm_to(py, self.config.algorithm)
    }
    /// The per-node concurrency limit (default `Ciad(fast_start=True)`).
    #[getter]
    fn limit(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        limit_to(py, self.config.limit)
    }
    /// The most callers that may wait for room at once (default 1024; 0: nobody waits).
    #[getter]
    fn max_waiters(&self) -> u32 {
        self.config.max_waiters
    }
    /// The generator seed, or None: each balancer built from this configuration draws its own.
    #[getter]
    fn seed(&self) -> Option<u64> {
        self.seed
    }
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Config(algorithm={}, limit={}, max_waiters={}, seed={})",
            self.algorithm(py)?.bind(py).repr()?,
            self.limit(py)?.bind(py).repr()?,
            self.config.max_waiters,
            self.seed.map_or("None".into(), |s| s.to_string())
        ))
    }
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .cast::<Config>()
            .is_ok_and(|o| o.get().config == self.config && o.get().seed == self.seed)
    }
    fn __hash__(&self, py: Python<'_>) -> PyResult<u64> {
        Ok(hash_str(&self.__repr__(py)?))
    }
}

/// The configuration behind a Python value given as a balancer's `config`.
pub fn config_from<'py>(v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, Config>> {
    v.cast::<Config>().cloned().map_err(|_| {
        let shown = v
            .get_type()
            .name()
            .map_or_else(|_| "?".into(), |n| n.to_string());
        let hint = if algorithm_from(v).is_ok() {
            " (an algorithm goes in weir.Config(algorithm=...))"
        } else if limit_from(v).is_ok() {
            " (a limit goes in weir.Config(limit=...))"
        } else {
            ""
        };
        PyTypeError::new_err(format!("config must be a weir.Config, not {shown}{hint}"))
    })
}

/// The algorithm behind a Python value (`LowestScore` or `Weighted`).
fn algorithm_from(v: &Bound<'_, PyAny>) -> PyResult<Algorithm> {
    if let Ok(l) = v.cast::<LowestScore>() {
        return Ok(Algorithm::LowestScore(l.get().params));
    }
    if let Ok(w) = v.cast::<Weighted>() {
        return Ok(Algorithm::Weighted(w.get().params));
    }
    let hint = if v.is_instance_of::<Buckets>() || v.is_instance_of::<Ewma>() {
        " (a success-rate model goes in weir.Weighted(health=...))"
    } else {
        ""
    };
    Err(PyTypeError::new_err(format!(
        "algorithm must be weir.LowestScore or weir.Weighted, not {}{hint}",
        v.get_type().name()?
    )))
}

/// The Python value of an algorithm.
fn algorithm_to(py: Python<'_>, a: Algorithm) -> PyResult<Py<PyAny>> {
    Ok(match a {
        Algorithm::LowestScore(params) => Py::new(py, LowestScore { params })?.into_any(),
        Algorithm::Weighted(params) => Py::new(py, Weighted { params })?.into_any(),
    })
}

/// A short name of the algorithm, for a balancer's repr: `LowestScore`, `Weighted(cascade)`.
pub fn algorithm_name(a: Algorithm) -> String {
    match a {
        Algorithm::LowestScore(_) => "LowestScore".into(),
        Algorithm::Weighted(w) => format!("Weighted({})", weighted::draw_name(w.draw)),
    }
}

/// A short name of the limit algorithm, for a balancer's repr.
pub fn limit_name(l: LimitAlgorithm) -> &'static str {
    match l {
        LimitAlgorithm::Fixed(_) => "Fixed",
        LimitAlgorithm::Aimd(_) => "Aimd",
        LimitAlgorithm::Vegas(_) => "Vegas",
        LimitAlgorithm::Gradient(_) => "Gradient",
        LimitAlgorithm::Gradient2(_) => "Gradient2",
        LimitAlgorithm::Ciad(_) => "Ciad",
        LimitAlgorithm::Knee(_) => "Knee",
        LimitAlgorithm::Windowed(_) => "Windowed",
    }
}

/// Checks an algorithm's parameters with the core's validation, in the default configuration; `what`
/// names the class in the error.
fn check_algorithm(algorithm: Algorithm, what: &str) -> PyResult<()> {
    let config = weir::Config {
        algorithm,
        ..weir::Config::default()
    };
    config.validate().map_err(|e| config_error(e, what))
}

fn max_waiters_arg(v: &Bound<'_, PyAny>) -> PyResult<u32> {
    Ok(int_in(v, "max_waiters", 0, u64::from(MAX_WAITERS))? as u32)
}

fn seed_arg(v: Option<&Bound<'_, PyAny>>) -> PyResult<Option<u64>> {
    v.filter(|s| !s.is_none())
        .map(|s| int_in(s, "seed", 0, u64::MAX))
        .transpose()
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
             (Vegas: min_limit is 1; Ciad and Knee: min_limit >= 1; Fixed: limit <= MAX_LIMIT)"
        }
        ConfigError::BackoffRatio => {
            "backoff_ratio must be in [0.5, 1.0) ([0.5, 1.0] for Gradient; drop_backoff for Gradient2)"
        }
        ConfigError::Timeout => "timeout must be at least 1 ns",
        ConfigError::Smoothing => "smoothing must be in [0, 1]",
        // The one class whose parameters the core's RTT tolerance rule checks under other names.
        ConfigError::RttTolerance if what == "Knee" => {
            "knee and hold must be finite and >= 1, and hold <= knee"
        }
        ConfigError::RttTolerance => "rtt_tolerance must be finite and >= 1",
        ConfigError::ProbeInterval => "probe_interval must be between 1 and 2**30 (or None)",
        ConfigError::ProbeMultiplier => "probe_multiplier must be at least 1",
        ConfigError::VegasStep => "increase/decrease factors must be finite and > 0",
        ConfigError::QueueSize => "queue_size must be <= MAX_LIMIT",
        ConfigError::LongWindow => "long_window must be at least 1",
        // Only a Knee's own check refuses its arm: a Windowed or a Config holds Knees already checked.
        ConfigError::WindowTime if what == "Knee" => "armed_for must be at most 1000 s",
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
            "dropped_cost, throttled_cost and client_error_cost must be finite and in [0, 1]"
        }
        ConfigError::Penalty => {
            "penalty and ratio_penalty must be finite and in [0, 1e6], slow_ratio 0 or in [1, 64]"
        }
        ConfigError::Probation => {
            "probe_fraction and forgiveness must be finite and in [0, 1], probe_after 0 or between 1 ms \
             and 1 hour"
        }
        _ => return PyValueError::new_err(format!("{what}: {e}")),
    };
    PyValueError::new_err(format!("{what}: {rule}"))
}

pub(super) fn u32_arg(v: &Bound<'_, PyAny>, name: &str) -> PyResult<u32> {
    Ok(int_in(v, name, 0, u64::from(u32::MAX))? as u32)
}

pub(super) fn limit_arg(v: &Bound<'_, PyAny>, name: &str) -> PyResult<u32> {
    Ok(int_in(v, name, 0, u64::from(MAX_LIMIT))? as u32)
}

pub(super) fn f32_arg(v: &Bound<'_, PyAny>, name: &str) -> PyResult<f32> {
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
pub(super) fn f32_shown(x: f32) -> f64 {
    format!("{x:?}").parse().unwrap_or(f64::from(x))
}

pub(super) fn fmt_f(x: f64) -> String {
    format!("{x:?}")
}

pub(super) fn hash_str(s: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    s.hash(&mut h);
    h.finish()
}
