//! The SRE book's subsetting over Python sequences: the core computes over indices, so any objects work and
//! the result is the same as Rust's and C's for the same backend order, client id and seed.

use crate::convert::int_in;
use crate::rng::Rng;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use weir::subset::SubsetError;

/// Registers the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(deterministic_subset, m)?)?;
    m.add_function(wrap_pyfunction!(random_subset, m)?)?;
    m.add_function(wrap_pyfunction!(shuffle, m)?)?;
    Ok(())
}

fn items<'py>(backends: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if backends.is_instance_of::<pyo3::types::PyString>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "backends must be a sequence of backends, not a str",
        ));
    }
    backends.try_iter()?.collect()
}

fn subset_error(e: SubsetError) -> PyErr {
    PyValueError::new_err(e.to_string())
}

fn pick<'py>(all: &[Bound<'py, PyAny>], idx: &[u32]) -> Vec<Bound<'py, PyAny>> {
    idx.iter()
        .filter_map(|&i| all.get(i as usize).cloned())
        .collect()
}

fn indices(n: usize) -> PyResult<Vec<u32>> {
    if n > u32::MAX as usize {
        return Err(PyValueError::new_err("too many backends"));
    }
    Ok((0..n as u32).collect())
}

/// Client `client_id`'s subset of `backends` (the SRE book's deterministic subsetting): `subset_size`
/// backends, or one more when the count is not a multiple of `subset_size`. Every client of a round of
/// `len(backends) // subset_size` clients gets a disjoint subset.
///
/// GIL: held (pure computation).
#[pyfunction]
fn deterministic_subset<'py>(
    backends: &Bound<'py, PyAny>,
    client_id: &Bound<'py, PyAny>,
    subset_size: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let all = items(backends)?;
    let client = int_in(client_id, "client_id", 0, u64::MAX)?;
    let size = int_in(subset_size, "subset_size", 0, u64::from(u32::MAX))? as usize;
    let idx = indices(all.len())?;
    let mut scratch = vec![0u32; idx.len()];
    let chosen = weir::subset::deterministic_subset(&idx, client, size, &mut scratch)
        .map_err(subset_error)?;
    Ok(pick(&all, chosen))
}

/// A random subset of `subset_size` backends (the SRE book's naive random subsetting, for comparison).
///
/// GIL: held (pure computation).
#[pyfunction]
#[pyo3(signature = (backends, subset_size, *, rng=None))]
fn random_subset<'py>(
    backends: &Bound<'py, PyAny>,
    subset_size: &Bound<'py, PyAny>,
    rng: Option<&Bound<'py, Rng>>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let all = items(backends)?;
    let size = int_in(subset_size, "subset_size", 0, u64::from(u32::MAX))? as usize;
    let idx = indices(all.len())?;
    let mut scratch = vec![0u32; idx.len()];
    let chosen = match rng {
        Some(r) => r
            .get()
            .with(|g| weir::subset::random_subset(&idx, size, g, &mut scratch)),
        None => {
            let mut g = fastrand::Rng::new();
            weir::subset::random_subset(&idx, size, &mut g, &mut scratch)
        }
    }
    .map_err(subset_error)?;
    Ok(pick(&all, chosen))
}

/// `backends` shuffled by the documented Fisher-Yates shuffle seeded with `seed` (a new list).
///
/// GIL: held (pure computation).
#[pyfunction]
fn shuffle<'py>(
    backends: &Bound<'py, PyAny>,
    seed: &Bound<'py, PyAny>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    let all = items(backends)?;
    let seed = int_in(seed, "seed", 0, u64::MAX)?;
    let mut idx = indices(all.len())?;
    weir::subset::shuffle(&mut idx, seed);
    Ok(pick(&all, &idx))
}
