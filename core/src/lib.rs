//! # weir
//!
//! Adaptive load balancing as one exact, lock-free, allocation-free core. A client asks a [`Balancer`] which
//! backend node to call; the balancer answers from each node's recent success rate and concurrency limit,
//! fails fast when no node can take the call, and learns from every [`Outcome`].
//!
//! The algorithm is the "success-weighted, concurrency-limited fallback cascade": each node keeps a window
//! of success statistics ([`HealthModel`]); its weight is its success rate cubed; nodes are tried in a
//! weighted random order and the first whose concurrency limit has room takes the call ([`Policy`]).
//!
//! ```
//! use weir::{Balancer, Config, NodeSlot, Outcome};
//!
//! static SLOTS: [NodeSlot; 8] = [const { NodeSlot::new() }; 8];
//! let balancer = Balancer::new(&SLOTS[..], Config::default()).unwrap();
//! balancer.add(1).unwrap();
//! balancer.add(2).unwrap();
//!
//! let mut rng = fastrand::Rng::with_seed(42); // one per thread
//! let now = 1_000_000; // monotonic nanoseconds, from your clock
//! let lease = balancer.acquire(now, &mut rng).unwrap();
//! // ... call node `lease.node_id()` ...
//! balancer.release(lease, Outcome::Success, now + 250_000).unwrap();
//! ```
//!
//! Time and randomness are parameters: the core never reads a clock and never shares a generator. The `std`
//! feature adds [`monotonic_now`], per-thread generators and [`LeaseGuard`].
//!
//! Overload protection, with the same rules (lock-free, no allocation, time, CPU and randomness passed in):
//! [`Shedder`] (server side, go-zero's adaptive shedder; `std` adds the [`CpuSampler`] that feeds it),
//! [`Throttle`] (client side, the SRE book's adaptive throttling with criticalities and a retry budget),
//! [`Backoff`] (the seeds' responsive exponential backoff, shareable between threads) and
//! [`deterministic_subset`] (the SRE book's subsetting, specified so any language reproduces it).
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

mod backoff;
mod balancer;
mod config;
#[cfg(feature = "std")]
mod cpu;
mod div;
mod error;
mod health;
pub mod limit;
mod outcome;
#[cfg(feature = "std")]
mod rt;
mod select;
mod shed;
mod slot;
mod subset;
mod sync;
mod throttle;
mod window;

pub use backoff::{
    Backoff, BackoffConfig, BackoffConfigError, BackoffMetrics, Delay, Jitter, Step, MAX_BACKOFF_NS,
};
pub use balancer::{Balancer, Lease, NodeSnapshot, NodeState, RawLease, Stats};
pub use config::{Config, HealthModel, Policy, MAX_BUCKETS, MAX_NODES};
#[cfg(feature = "std")]
pub use cpu::{CpuError, CpuSampler, CpuSource};
pub use error::{ConfigError, MembershipError, Rejected, ReleaseError};
/// The random generator the core draws from (re-exported so callers need not depend on `fastrand`).
pub use fastrand::Rng;
pub use limit::{
    AimdLimit, CiadLimit, FixedLimit, Gradient2Limit, GradientLimit, InnerAlgorithm, Limit,
    LimitAlgorithm, LimitState, QueueSize, Sample, SampleWindow, VegasLimit, VegasStep,
    VegasThreshold, WindowedLimit, MAX_LIMIT,
};
pub use outcome::{InvalidStatus, Outcome};
#[cfg(feature = "std")]
pub use rt::{monotonic_now, thread_seed, with_thread_rng, HeapBalancer, LeaseGuard};
#[cfg(feature = "std")]
pub use shed::PromiseGuard;
pub use shed::{
    NotInFlight, Overloaded, Promise, RawPromise, Shedder, ShedderConfig, ShedderConfigError,
    ShedderStats,
};
pub use slot::NodeSlot;
pub use subset::{deterministic_subset, random_subset, shuffle, SplitMix64, SubsetError};
pub use sync::LOCK_FREE;
pub use throttle::{
    rejection_probability, Criticality, RetryDenied, Throttle, ThrottleConfig, ThrottleConfigError,
    ThrottleStats, Throttled,
};
pub use window::MAX_WINDOW_BUCKETS;
