//! Conversions at the boundary: durations and times in float seconds (or `datetime.timedelta`) to the
//! core's nanoseconds, checked integers, the monotonic clock, and the Python types this module raises or
//! builds, imported once from the pure-Python part of the package.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyFloat, PyInt, PyType};
use weir::limit::ServerLoad;

/// Seconds since an arbitrary start, from the clock every call of this module uses when `now=` is omitted
/// (the core's monotonic clock: the same clock as the Rust `std` layer).
///
/// GIL: held (a clock read).
#[pyfunction]
pub fn monotonic() -> f64 {
    weir::rt::monotonic_now() as f64 / 1e9
}

/// The most nanoseconds a duration may have: `u64::MAX`.
const MAX_NS: f64 = 18_446_744_073_709_551_615.0;

/// `value` (float or int seconds, or a `datetime.timedelta`) as nanoseconds, rounded to the nearest.
/// `name` names the parameter in the error. NaN, infinities, negative values, more than `u64::MAX` ns, and
/// other types (bool included) are refused.
pub fn duration_ns(value: &Bound<'_, PyAny>, name: &str) -> PyResult<u64> {
    if let Ok(f) = value.cast::<PyFloat>() {
        return seconds_ns(f.value(), name);
    }
    if value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a number of seconds (float or int) or a datetime.timedelta, not bool"
        )));
    }
    if value.is_instance_of::<PyInt>() {
        let secs: i128 = value.extract().map_err(|_| too_large(name))?;
        if secs < 0 {
            return Err(PyValueError::new_err(format!(
                "{name} must not be negative, got {secs}"
            )));
        }
        return u64::try_from(secs)
            .ok()
            .and_then(|s| s.checked_mul(1_000_000_000))
            .ok_or_else(|| too_large(name));
    }
    let delta = timedelta_type(value.py())?;
    if value.is_instance(delta)? {
        // days, seconds and microseconds are exact integers: no rounding through a float.
        let days: i128 = value.getattr("days")?.extract()?;
        let secs: i128 = value.getattr("seconds")?.extract()?;
        let micros: i128 = value.getattr("microseconds")?.extract()?;
        let ns = ((days * 86_400 + secs) * 1_000_000 + micros) * 1_000;
        if ns < 0 {
            return Err(PyValueError::new_err(format!(
                "{name} must not be negative, got {}",
                value.repr()?
            )));
        }
        return u64::try_from(ns).map_err(|_| too_large(name));
    }
    Err(PyTypeError::new_err(format!(
        "{name} must be a number of seconds (float or int) or a datetime.timedelta, not {}",
        value.get_type().name()?
    )))
}

/// The `timeout=` of `Balancer.acquire` and `Balancer.acquire_async`: how long to wait for room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timeout {
    /// `None`: for as long as it takes.
    Forever,
    /// Seconds (a float, an int or a timedelta), in nanoseconds; 0, the default, never waits.
    Within(u64),
}

impl Timeout {
    /// The default, `timeout=0`: the fail-fast acquire.
    pub const NO_WAIT: Timeout = Timeout::Within(0);

    /// The nanoseconds to wait, `None` for ever.
    pub fn ns(self) -> Option<u64> {
        match self {
            Timeout::Forever => None,
            Timeout::Within(ns) => Some(ns),
        }
    }
}

/// A `timeout=` argument (pyo3's `from_py_with`, which also passes an explicit `None`): `None` waits for
/// ever, anything else is a duration, checked as in [`duration_ns`].
pub fn timeout(value: &Bound<'_, PyAny>) -> PyResult<Timeout> {
    if value.is_none() {
        Ok(Timeout::Forever)
    } else {
        duration_ns(value, "timeout").map(Timeout::Within)
    }
}

/// Float seconds as nanoseconds, checked as in [`duration_ns`].
pub fn seconds_ns(secs: f64, name: &str) -> PyResult<u64> {
    if secs.is_nan() {
        return Err(PyValueError::new_err(format!("{name} must not be NaN")));
    }
    if secs < 0.0 {
        return Err(PyValueError::new_err(format!(
            "{name} must not be negative, got {secs}"
        )));
    }
    let ns = (secs * 1e9).round();
    if ns.is_nan() || ns > MAX_NS {
        return Err(too_large(name));
    }
    // In range and not NaN: the cast is exact up to the float's own rounding.
    Ok(ns as u64)
}

fn too_large(name: &str) -> PyErr {
    PyValueError::new_err(format!(
        "{name} is too large (at most 2**64 - 1 nanoseconds, about 584 years)"
    ))
}

/// An optional duration parameter (`None` keeps `default`).
pub fn opt_duration_ns(
    value: Option<&Bound<'_, PyAny>>,
    name: &str,
    default: u64,
) -> PyResult<u64> {
    match value {
        Some(v) if !v.is_none() => duration_ns(v, name),
        _ => Ok(default),
    }
}

/// The `now=` of a call: the given time, or the monotonic clock's. Returns whether it was explicit.
pub fn now_ns(now: Option<&Bound<'_, PyAny>>) -> PyResult<(u64, bool)> {
    match now {
        Some(v) if !v.is_none() => Ok((duration_ns(v, "now")?, true)),
        _ => Ok((weir::rt::monotonic_now(), false)),
    }
}

/// Nanoseconds as float seconds, for attributes and return values.
pub fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// An integer parameter in `lo..=hi`, as `u64`. Refuses bool, floats and other types with `TypeError`, and
/// values out of range with `ValueError`, naming the parameter.
pub fn int_in(value: &Bound<'_, PyAny>, name: &str, lo: u64, hi: u64) -> PyResult<u64> {
    if value.is_instance_of::<pyo3::types::PyBool>() || !value.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be an int, not {}",
            value.get_type().name()?
        )));
    }
    let v: i128 = match value.extract() {
        Ok(v) => v,
        Err(_) => {
            return Err(PyValueError::new_err(format!(
                "{name} must be between {lo} and {hi}, got {}",
                value.repr()?
            )))
        }
    };
    if v < i128::from(lo) || v > i128::from(hi) {
        return Err(PyValueError::new_err(format!(
            "{name} must be between {lo} and {hi}, got {v}"
        )));
    }
    Ok(v as u64)
}

/// A float parameter (an int is accepted too); NaN, and an int beyond a float's range, are refused
/// here, other ranges by the caller or the core.
pub fn float(value: &Bound<'_, PyAny>, name: &str) -> PyResult<f64> {
    float_type(value, name)?;
    // Only an int can fail to convert (Python's `OverflowError`): a bad value of the parameter, named as
    // every other is, not an arithmetic error.
    let Ok(f) = value.extract::<f64>() else {
        return Err(PyValueError::new_err(format!(
            "{name} is beyond a float's range, got an int of {} digits",
            value.str()?.to_string().trim_start_matches('-').len()
        )));
    };
    if f.is_nan() {
        return Err(PyValueError::new_err(format!("{name} must not be NaN")));
    }
    Ok(f)
}

/// Refuses anything but a float or an int (bool included) with `TypeError`, naming the parameter.
fn float_type(value: &Bound<'_, PyAny>, name: &str) -> PyResult<()> {
    if value.is_instance_of::<pyo3::types::PyBool>()
        || !(value.is_instance_of::<PyFloat>() || value.is_instance_of::<PyInt>())
    {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a float, not {}",
            value.get_type().name()?
        )));
    }
    Ok(())
}

/// The `load=` of a release: `None` (no report) or the server's utilization as a float or an int (1.0 at
/// its knee), as the core's [`ServerLoad::from_utilization`] takes it. Refuses other types with
/// `TypeError`, and what the core refuses (NaN, infinities, negative, above 1000) with `ValueError` and
/// the core's message.
pub fn server_load(value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<ServerLoad>> {
    let Some(v) = value.filter(|v| !v.is_none()) else {
        return Ok(None);
    };
    float_type(v, "load")?;
    // An int too large for a float is out of range either way: past the top, or below 0.
    let f = match v.extract::<f64>() {
        Ok(f) => f,
        Err(_) if v.lt(0)? => f64::MIN,
        Err(_) => f64::MAX,
    };
    match ServerLoad::from_utilization(f) {
        Ok(load) => Ok(Some(load)),
        Err(e) => Err(PyValueError::new_err(format!("{e}, got {}", v.repr()?))),
    }
}

/// A bool parameter, strictly (no truthiness: `1` and `"yes"` are refused).
pub fn boolean(value: &Bound<'_, PyAny>, name: &str) -> PyResult<bool> {
    if !value.is_instance_of::<pyo3::types::PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a bool, not {}",
            value.get_type().name()?
        )));
    }
    value.extract()
}

fn timedelta_type(py: Python<'_>) -> PyResult<&Bound<'_, PyType>> {
    static TYPE: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    TYPE.import(py, "datetime", "timedelta")
}

/// A class or exception of the pure-Python part of the package (`weir._types`), imported once.
pub fn weir_type<'py>(py: Python<'py>, name: &'static str) -> PyResult<Bound<'py, PyType>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    let m = MODULE.get_or_try_init(py, || py.import("weir._types").map(Bound::unbind))?;
    Ok(m.bind(py).getattr(name)?.cast_into::<PyType>()?)
}

/// An exception of `weir._types` with `message`.
pub fn weir_err(py: Python<'_>, name: &'static str, message: impl Into<String>) -> PyErr {
    match weir_type(py, name) {
        Ok(t) => PyErr::from_type(t, message.into()),
        Err(e) => e,
    }
}
