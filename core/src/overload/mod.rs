//! Overload protection, with the balancer's rules (lock-free, no allocation, time, CPU and randomness
//! passed in):
//! - [`Shedder`]: server side, go-zero's adaptive shedder (drops work when the CPU is hot and more is in
//!   flight than the server has shown it can complete);
//! - [`Throttle`]: client side, the SRE book's adaptive throttling with criticalities and a retry budget;
//! - [`RetryBudget`]: client side, Finagle's retry budget shared by a balancer's callers;
//! - their lock-free rolling window (`window.rs`);
//! - [`CpuSampler`] (`std`): the process's CPU usage from cgroup v2, v1 or `/proc/stat`, to feed the shedder.

#[cfg(feature = "std")]
mod cpu;
mod retry;
mod shed;
mod throttle;
pub(crate) mod window;

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use cpu::{CpuError, CpuSampler, CpuSource};
pub use retry::{
    RetryBudget, RetryBudgetConfig, RetryBudgetConfigError, RetryBudgetExhausted, RetryBudgetStats,
    MAX_RETRIES_PER_SECOND, MAX_RETRY_RATIO,
};
pub use shed::{
    NotInFlight, Overloaded, Promise, RawPromise, Shedder, ShedderConfig, ShedderConfigError,
    ShedderStats,
};
pub use throttle::{
    rejection_probability, Criticality, RetryDenied, Throttle, ThrottleConfig, ThrottleConfigError,
    ThrottleStats, Throttled,
};
pub use window::MAX_WINDOW_BUCKETS;
