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
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "std")]
extern crate std;

mod balancer;
mod config;
mod div;
mod error;
mod health;
pub mod limit;
mod outcome;
#[cfg(feature = "std")]
mod rt;
mod select;
mod slot;
mod sync;

pub use balancer::{Balancer, Lease, NodeSnapshot, NodeState, RawLease, Stats};
pub use config::{Config, HealthModel, Policy, MAX_BUCKETS, MAX_NODES};
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
pub use slot::NodeSlot;
pub use sync::LOCK_FREE;
