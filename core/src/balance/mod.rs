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
//! | `word.rs` | the two words the acquire scan reads per node: the control word and the scan word |
//! | `health/` | [`HealthModel`]: `decay.rs` ([`DecayHealth`], the default's decayed counters and penalty), `buckets.rs` ([`BucketHealth`], the seeds' window), `ewma.rs` ([`EwmaHealth`]), and the cached value the scan reads (`mod.rs`) |
//! | `slot.rs` | [`NodeSlot`]: one node's storage |
//! | `policy/` | [`Policy`]: `lowest.rs` (the default's lowest-score scan), `weighted.rs` (the weighted draws) |
//! | `config.rs` | [`Config`]: combines the mechanisms' settings, validated once |
//! | `snapshot.rs` | [`NodeSnapshot`], [`NodeState`], [`Stats`] |
//! | `error.rs` | [`Rejected`], [`MembershipError`], [`ReleaseError`] ([`ConfigError`] is shared with [`crate::limit`]) |
//!
//! The files depend on each other in one direction: `word.rs` and `outcome.rs` on nothing of the
//! balancer, the health models on them, the slot on the health words, the policies on the slots,
//! `config.rs` on every mechanism, and the balancer on all of them.

mod balancer;
pub(crate) mod config;
mod error;
pub(crate) mod health;
mod lease;
mod outcome;
pub(crate) mod policy;
pub(crate) mod slot;
mod snapshot;
pub(crate) mod word;

pub use crate::error::ConfigError;
pub use balancer::Balancer;
pub use config::{Config, MAX_NODES, MAX_WAITERS};
pub use error::{MembershipError, Rejected, ReleaseError};
pub use health::{BucketHealth, DecayHealth, EwmaHealth, HealthModel, CLOCK_EPOCH_NS, MAX_BUCKETS};
pub use lease::{Lease, RawLease};
pub use outcome::{InvalidStatus, Outcome};
pub use policy::Policy;
pub use slot::NodeSlot;
pub use snapshot::{NodeSnapshot, NodeState, Stats};
