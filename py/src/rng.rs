//! `Rng`: an explicit random generator (the core's, fastrand's wyrand) for callers that must reproduce
//! another binding's decisions exactly (the shared traces in tests/vectors). Without one, every call draws
//! from the calling thread's generator, seeded from the balancer's seed and the thread (see the core's
//! `rt::with_thread_rng`).

use crate::convert::int_in;
use pyo3::prelude::*;
use std::sync::Mutex;

/// A seeded random generator: `weir.Rng(seed)`. Pass it as `rng=` to calls that draw
/// (`Balancer.acquire`, `Throttle.allow`, `Backoff.on_failure`, `random_subset`) to make their draws a
/// pure function of the seed, exactly as `weir::Rng::with_seed(seed)` in Rust and `weir_rng_seed` in C.
///
/// GIL: held while drawing; a per-generator lock makes sharing one between threads safe (but a shared
/// generator's sequence then depends on the threads' interleaving: give each thread its own).
#[pyclass(frozen, module = "weir")]
pub struct Rng {
    inner: Mutex<fastrand::Rng>,
}

impl Rng {
    /// Runs `f` with the generator.
    pub fn with<T>(&self, f: impl FnOnce(&mut fastrand::Rng) -> T) -> T {
        // A poisoned lock only means a panic elsewhere while drawing; the generator's state is still a
        // valid state.
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut g)
    }
}

#[pymethods]
impl Rng {
    #[new]
    fn new(seed: &Bound<'_, PyAny>) -> PyResult<Self> {
        let seed = int_in(seed, "seed", 0, u64::MAX)?;
        Ok(Rng {
            inner: Mutex::new(fastrand::Rng::with_seed(seed)),
        })
    }

    /// The next 64 random bits (advances the generator).
    fn next_u64(&self) -> u64 {
        self.with(|r| r.u64(..))
    }

    fn __repr__(&self) -> String {
        "Rng(...)".to_string()
    }
}

/// Runs `f` with `rng` if one was given, else with this thread's generator for `seed`.
pub fn draw<T>(
    rng: Option<&Bound<'_, Rng>>,
    seed: u64,
    f: impl FnOnce(&mut fastrand::Rng) -> T,
) -> T {
    match rng {
        Some(r) => r.get().with(f),
        None => weir::rt::with_thread_rng(seed, f),
    }
}
