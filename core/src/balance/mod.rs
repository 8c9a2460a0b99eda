//! The balancer: which node to call, and what it learns from each call.
//!
//! A [`Balancer`] works over caller-provided [`NodeSlot`] storage. [`Balancer::acquire`] grants a
//! [`Lease`] on a node chosen by the configured [`Policy`] from each node's health ([`HealthModel`]) and
//! concurrency limit ([`crate::limit`]), or fails fast ([`Rejected`]); [`Balancer::release`] reports the
//! call's [`Outcome`]. Membership changes ([`Balancer::add`], [`Balancer::remove`],
//! [`Balancer::set_lame_duck`]) run concurrently with traffic.
//!
//! | file | concept |
//! |---|---|
//! | `balancer.rs` | [`Balancer`]: membership, acquire, release |
//! | `lease.rs` | [`Lease`] and its plain parts [`RawLease`] |
//! | `outcome.rs` | [`Outcome`] and the HTTP status table |
//! | `config.rs` | [`Config`], validated once |
//! | `health/` | the per-node health models: `decay.rs` (the default's decayed counters and penalty), `buckets.rs` (the seeds' window), `ewma.rs` |
//! | `policy.rs` | [`Policy`]: the lowest-score scan and the weighted draws |
//! | `slot.rs` | [`NodeSlot`]: one node's storage and its control word |
//! | `snapshot.rs` | [`NodeSnapshot`], [`NodeState`], [`Stats`] |
//! | `error.rs` | [`Rejected`], [`MembershipError`], [`ReleaseError`], [`ConfigError`] |

mod balancer;
pub(crate) mod config;
pub(crate) mod error;
pub(crate) mod health;
mod lease;
mod outcome;
pub(crate) mod policy;
pub(crate) mod slot;
mod snapshot;

pub use balancer::Balancer;
pub use config::{Config, CLOCK_EPOCH_NS, MAX_BUCKETS, MAX_NODES, MAX_WAITERS};
pub use error::{ConfigError, MembershipError, Rejected, ReleaseError};
pub use health::HealthModel;
pub use lease::{Lease, RawLease};
pub use outcome::{InvalidStatus, Outcome};
pub use policy::Policy;
pub use slot::NodeSlot;
pub use snapshot::{NodeSnapshot, NodeState, Stats};
