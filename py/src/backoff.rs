//! `Backoff`: AutoSleeper's responsive exponential backoff. It goes up on each failure and down after a
//! run of consecutive successes, randomized and capped; each call returns the seconds to sleep. The Python
//! package (`weir/__init__.py`) subclasses it to add `sleep()`, `await asleep()` and the `@weir.retry`
//! decorator.

use crate::convert::{float, int_in, opt_duration_ns, secs};
use crate::metrics::Format;
use crate::rng::{draw, Rng};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use weir::backoff::{BackoffConfig, BackoffConfigError, Jitter, Step, MAX_BACKOFF_NS};

fn config_error(e: BackoffConfigError) -> PyErr {
    PyValueError::new_err(match e {
        BackoffConfigError::Initial => {
            "Backoff: initial must be at least 1 ns and at most max".to_string()
        }
        BackoffConfigError::Max => {
            "Backoff: max must be at least 1 ns and at most 2**48 - 1 ns (about 78 hours)".into()
        }
        BackoffConfigError::UpMultiplier => "Backoff: up_multiplier must be finite and >= 1".into(),
        BackoffConfigError::DownMultiplier => "Backoff: down_multiplier must be in (0, 1]".into(),
        BackoffConfigError::DownThreshold => "Backoff: down_threshold must be at least 1".into(),
        BackoffConfigError::JitterFactor => "Backoff: jitter_factor must be in [0, 1]".into(),
        other => format!("Backoff: {other}"),
    })
}

fn step_name(s: Step) -> &'static str {
    match s {
        Step::Up => "up",
        Step::Down => "down",
        Step::Hold => "hold",
        Step::Idle => "idle",
    }
}

/// Responsive exponential backoff: `on_failure()` and `on_success()` return the seconds to wait before the
/// next call. The interval starts at `initial` on the first failure, grows by `up_multiplier` per failure
/// up to `max`, shrinks by `down_multiplier` after `down_threshold` consecutive successes, and drops to 0
/// once below `initial`. `jitter` is 'proportional' (AutoSleeper's: `jitter_factor`, at most `jitter_max`
/// seconds either way), 'full', 'equal', 'decorrelated' or 'none'.
///
/// GIL: thread-safe and lock-free (one atomic word); draws from the thread's generator (seeded from
/// `seed`) or `rng=`.
#[pyclass(frozen, subclass, module = "weir._weir")]
pub struct Backoff {
    core: weir::Backoff,
    seed: u64,
}

#[pymethods]
impl Backoff {
    #[new]
    #[pyo3(signature = (*, initial=None, max=None, up_multiplier=None, down_multiplier=None, down_threshold=None, jitter=Some(None), jitter_factor=None, jitter_max=None, seed=None), text_signature = "(*, initial=0.5, max=900.0, up_multiplier=1.5, down_multiplier=0.9, down_threshold=10, jitter='proportional', jitter_factor=0.3, jitter_max=120.0, seed=None)")]
    #[allow(clippy::too_many_arguments)]
    fn new(
        initial: Option<&Bound<'_, PyAny>>,
        max: Option<&Bound<'_, PyAny>>,
        up_multiplier: Option<&Bound<'_, PyAny>>,
        down_multiplier: Option<&Bound<'_, PyAny>>,
        down_threshold: Option<&Bound<'_, PyAny>>,
        jitter: Option<Option<&Bound<'_, PyAny>>>,
        jitter_factor: Option<&Bound<'_, PyAny>>,
        jitter_max: Option<&Bound<'_, PyAny>>,
        seed: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let d = BackoffConfig::default();
        let Jitter::Proportional {
            factor: d_factor,
            max_ns: d_jmax,
        } = Jitter::default()
        else {
            return Err(PyValueError::new_err(
                "unreachable: the default jitter is proportional",
            ));
        };
        // Some(None): not given (AutoSleeper's proportional jitter); None: `jitter=None` (no jitter).
        let kind = match jitter {
            Some(None) => "proportional".to_string(),
            None => "none".to_string(),
            Some(Some(j)) => match j.cast::<PyString>() {
                Ok(s) => s.to_string(),
                Err(_) => {
                    return Err(PyTypeError::new_err(format!(
                        "jitter must be a str, not {}",
                        j.get_type().name()?
                    )))
                }
            },
        };
        let factor = match jitter_factor {
            Some(f) => float(f, "jitter_factor")?,
            None => d_factor,
        };
        let jmax = opt_duration_ns(jitter_max, "jitter_max", d_jmax)?;
        let jitter = match kind.as_str() {
            "proportional" => Jitter::Proportional { factor, max_ns: jmax },
            "none" => Jitter::None,
            "full" => Jitter::Full,
            "equal" => Jitter::Equal,
            "decorrelated" => Jitter::Decorrelated,
            other => {
                return Err(PyValueError::new_err(format!(
                    "jitter must be 'proportional', 'full', 'equal', 'decorrelated' or 'none', got {other:?}"
                )))
            }
        };
        if kind != "proportional" && (jitter_factor.is_some() || jitter_max.is_some()) {
            return Err(PyValueError::new_err(
                "jitter_factor and jitter_max apply to jitter='proportional' only",
            ));
        }
        let config = BackoffConfig {
            initial_ns: opt_duration_ns(initial, "initial", d.initial_ns)?,
            max_ns: opt_duration_ns(max, "max", d.max_ns)?,
            up_multiplier: match up_multiplier {
                Some(v) => float(v, "up_multiplier")?,
                None => d.up_multiplier,
            },
            down_multiplier: match down_multiplier {
                Some(v) => float(v, "down_multiplier")?,
                None => d.down_multiplier,
            },
            down_threshold: match down_threshold {
                Some(v) => int_in(v, "down_threshold", 1, u64::from(u16::MAX))? as u16,
                None => d.down_threshold,
            },
            jitter,
        };
        if config.max_ns > MAX_BACKOFF_NS {
            return Err(config_error(BackoffConfigError::Max));
        }
        let seed = match seed.filter(|s| !s.is_none()) {
            Some(s) => int_in(s, "seed", 0, u64::MAX)?,
            None => fastrand::u64(..),
        };
        let core = weir::Backoff::new(config).map_err(config_error)?;
        Ok(Backoff { core, seed })
    }

    /// The backoff's metrics as Prometheus text (the `backoff_*` families of docs/metrics.md), with the
    /// `prefix` and constant `labels` of `Balancer.metrics_text`.
    ///
    /// GIL: held for the call; lock-free.
    #[pyo3(signature = (prefix="weir", labels=None))]
    fn metrics_text(&self, prefix: &str, labels: Option<&Bound<'_, PyAny>>) -> PyResult<String> {
        // A backoff keeps no clock: the writer's `now` is unused.
        Format::read(prefix, labels)?.text(|out, f| self.core.write_metrics(out, f, 0))
    }

    /// Records a failure; returns the seconds to wait before the next attempt.
    #[pyo3(signature = (*, rng=None))]
    fn on_failure(&self, rng: Option<&Bound<'_, Rng>>) -> f64 {
        secs(draw(rng, self.seed, |r| self.core.on_failure(r)).ns)
    }

    /// Records a success; returns the seconds to wait before the next call (0.0 once recovered).
    #[pyo3(signature = (*, rng=None))]
    fn on_success(&self, rng: Option<&Bound<'_, Rng>>) -> f64 {
        secs(draw(rng, self.seed, |r| self.core.on_success(r)).ns)
    }

    /// Records a failure or success and returns (seconds, step), step one of 'up', 'down', 'hold', 'idle'.
    #[pyo3(signature = (failed, *, rng=None))]
    fn step(
        &self,
        failed: &Bound<'_, PyAny>,
        rng: Option<&Bound<'_, Rng>>,
    ) -> PyResult<(f64, &'static str)> {
        let failed = crate::convert::boolean(failed, "failed")?;
        let d = draw(rng, self.seed, |r| {
            if failed {
                self.core.on_failure(r)
            } else {
                self.core.on_success(r)
            }
        });
        Ok((secs(d.ns), step_name(d.step)))
    }

    /// The current interval in seconds (0.0 when not backing off).
    #[getter]
    fn interval(&self) -> f64 {
        secs(self.core.interval_ns())
    }

    /// Back to not backing off.
    fn reset(&self) {
        self.core.reset();
    }

    /// AutoSleeper's statistics as a dict: invocations, went_up, went_down, slept, sleep (seconds).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.core.stats();
        let d = PyDict::new(py);
        d.set_item("invocations", s.invocations)?;
        d.set_item("went_up", s.went_up)?;
        d.set_item("went_down", s.went_down)?;
        d.set_item("slept", s.slept)?;
        d.set_item("sleep", secs(s.sleep_ns))?;
        Ok(d)
    }

    /// The first interval in seconds.
    #[getter]
    fn initial(&self) -> f64 {
        secs(self.core.config().initial_ns)
    }
    /// The longest interval in seconds.
    #[getter]
    fn max(&self) -> f64 {
        secs(self.core.config().max_ns)
    }
    /// The seed of the per-thread generators.
    #[getter]
    fn seed(&self) -> u64 {
        self.seed
    }
}
