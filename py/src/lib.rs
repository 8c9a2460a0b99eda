//! The native module `weir._weir`: the Python binding of weir's core.
//!
//! Python users import `weir` (py/python/weir), which re-exports these classes beside the pure-Python parts
//! (the exceptions, the enums, the snapshot dataclasses, the retry decorator). Every class is
//! `#[pyclass(frozen)]` over the core's lock-free state, and the module declares `gil_used = false`: many
//! Python threads (and free-threaded CPython) share one balancer without a Python-side lock. The GIL (or
//! the thread's attachment) is held for each core call, which takes nanoseconds; it is released only around
//! calls that can block (a waiting acquire, a backoff's sleep).
//!
//! | file | what |
//! |---|---|
//! | `convert.rs` | seconds and `timedelta` to nanoseconds, the clock, integers, the lazily imported Python types |
//! | `config/` | `Config`, the algorithm families and limit algorithms as small frozen classes |
//! | `balancer.rs` | `Balancer`: membership, acquire, snapshots; the node-object table |
//! | `lease.rs` | `Lease`: context manager, explicit outcomes, release on garbage collection |
//! | `wait.rs` | the lease in waiting: waiting for room on an asyncio loop (or a parked thread), no thread each |
//! | `rng.rs` | `Rng`: an explicit generator, for reproducing another binding's decisions |
//! | `overload.rs` | `Shedder`, `Promise`, `CpuSampler`, `Throttle`, `RetryBudget` |
//! | `backoff.rs` | `Backoff` |
//! | `metrics.rs` | the prefix and constant labels of every `metrics_text`, and node names |
//! | `subset.rs` | `deterministic_subset`, `random_subset`, `shuffle` |

use pyo3::prelude::*;

mod backoff;
mod balancer;
mod config;
mod convert;
mod lease;
mod metrics;
mod overload;
mod rng;
mod subset;
mod wait;

/// The module: every class and function, registered once.
#[pymodule(gil_used = false)]
fn _weir(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("MAX_NODES", weir::balance::MAX_NODES)?;
    m.add("MAX_WAITERS", weir::balance::MAX_WAITERS)?;
    m.add("MAX_LIMIT", weir::limit::MAX_LIMIT)?;
    config::register(m)?;
    m.add_class::<rng::Rng>()?;
    m.add_class::<balancer::Balancer>()?;
    m.add_class::<lease::Lease>()?;
    m.add_class::<lease::Ready>()?;
    m.add_function(wrap_pyfunction!(convert::monotonic, m)?)?;
    m.add_function(wrap_pyfunction!(lease::outcome_from_http_status, m)?)?;
    m.add_function(wrap_pyfunction!(lease::outcome_is_retryable, m)?)?;
    m.add_function(wrap_pyfunction!(lease::outcome_from_errno, m)?)?;
    overload::register(m)?;
    m.add_class::<backoff::Backoff>()?;
    subset::register(m)?;
    Ok(())
}
