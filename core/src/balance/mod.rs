//! The balancer: which node to call, and what it learns from each call.
//!
//! A [`Balancer`] works over caller-provided [`NodeSlot`] storage. [`Balancer::acquire`] grants a
//! [`Lease`] on a node chosen by the configured [`Algorithm`] from each node's health and concurrency
//! limit ([`crate::limit`]), or fails fast ([`Rejected`]); [`Balancer::release`] reports the call's
//! [`Outcome`]. Membership changes ([`Balancer::add`], [`Balancer::remove`],
//! [`Balancer::set_lame_duck`]) run concurrently with traffic.
//!
//! | file | concept |
//! |---|---|
//! | `balancer.rs` | [`Balancer`]: acquire, release, snapshots |
//! | `check.rs` | [`Balancer::due_check`], [`Balancer::report_check`]: health checks that bring an avoided node back |
//! | `membership.rs` | [`Balancer::add`], [`Balancer::remove`], [`Balancer::set_lame_duck`]; the span of slots the scans read |
//! | `algorithm.rs` | [`Algorithm`]: the families, and the one dispatch to the configured one |
//! | `lowest/` | the lowest-score family ([`LowestScore`], the default's): decayed counters, a penalty, the lowest-score scans |
//! | `weighted/` | the weighted family ([`Weighted`], the original cascade's): [`BucketHealth`], [`EwmaHealth`], the weight, the three [`Draw`]s |
//! | `health.rs` | one node's health words and the cached value the scans read, as every family keeps them |
//! | `clock.rs` | the balancer's clock, which dates releases and paces the rotation of the cached values |
//! | `waiting.rs` | [`Waiting`]: who hears that room may have come (the `std` layer's queue of waiting callers) |
//! | `config.rs` | [`Config`]: the algorithm, the limit, the waiters' bound and the seed, validated once |
//! | `lease.rs` | [`Lease`] and its plain parts [`RawLease`] |
//! | `outcome.rs` | [`Outcome`] and the HTTP status table |
//! | `word.rs` | the two words the acquire scan reads per node: the control word and the scan word |
//! | `slot.rs` | [`NodeSlot`]: one node's storage |
//! | `snapshot.rs` | [`NodeSnapshot`], [`NodeState`], [`Stats`] |
//! | `error.rs` | [`Rejected`], [`MembershipError`], [`ReleaseError`], [`CheckError`] ([`ConfigError`] is shared with [`crate::limit`]) |
//!
//! The files depend on each other in one direction: `word.rs` and `outcome.rs` on nothing of the
//! balancer; `health.rs` on them; each family (`lowest/`, `weighted/`) on those and the slot, and never
//! on the other family; `algorithm.rs` on the families; `config.rs` on `algorithm.rs` and the limits; the
//! balancer on all of them. Nothing here depends on the `std` layer (`rt`): it hears of room through
//! [`Waiting`].

mod algorithm;
mod balancer;
#[cfg(feature = "probation")]
mod check;
mod clock;
mod config;
mod error;
pub(crate) mod health;
mod lease;
#[cfg(feature = "decay")]
mod lowest;
mod membership;
mod outcome;
pub(crate) mod slot;
mod snapshot;
mod waiting;
#[cfg(any(feature = "buckets", feature = "ewma"))]
mod weighted;
pub(crate) mod word;

pub use crate::error::ConfigError;
pub use algorithm::Algorithm;
pub use balancer::Balancer;
pub use config::{Config, MAX_NODES, MAX_WAITERS};
pub use error::{CheckError, MembershipError, Rejected, ReleaseError};
pub use lease::{Lease, RawLease};
#[cfg(feature = "decay")]
pub use lowest::LowestScore;
pub use outcome::{InvalidStatus, Outcome};
pub use slot::NodeSlot;
pub use snapshot::{NodeSnapshot, NodeState, Stats};
pub use waiting::Waiting;
#[cfg(any(feature = "buckets", feature = "ewma"))]
pub use weighted::{
    BucketHealth, Draw, EwmaHealth, Weighted, WeightedHealth, CLOCK_EPOCH_NS, MAX_BUCKETS,
};
