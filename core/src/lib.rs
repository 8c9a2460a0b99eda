//! # weir
//!
//! The package is `weir-lb` (the name is reserved on crates.io for the first release; until then
//! `cargo add --path path/to/weir/core` from a checkout); the library is `weir`. The default features give
//! the `std` conveniences and every algorithm; `--no-default-features --features decay,ciad` the `no_std`
//! core with only [`Config::default()`]'s algorithms (README.md, "Feature flags and targets").
//!
//! Adaptive load balancing as one exact, lock-free, allocation-free core. A client asks a [`Balancer`] which
//! backend node to call; the balancer answers from each node's recent failures and concurrency limit,
//! fails fast when no node can take the call (or, with `std`, waits for room in a bounded queue), and
//! learns from every [`Outcome`].
//!
//! An algorithm is a family with its parameters ([`Algorithm`](balance::Algorithm)). The default
//! ([`Config::default()`], the lowest-score family) scores each node in calls in flight: its calls in
//! flight plus a penalty for its recent failures, from two time-decayed counters per node; each call goes
//! to the node with room whose score is lowest, under an adaptive concurrency limit per node (dialogue's
//! CIAD with a fast start). The original cascade, the "success-weighted, concurrency-limited fallback
//! cascade" (a window of success statistics per node, weights `rate³`, a weighted random order, the
//! first node with room), is [`Config::cascade()`], exactly (the weighted family).
//!
//! ```
//! use weir::{Balancer, Config, NodeSlot, Outcome, Rng};
//!
//! static SLOTS: [NodeSlot; 8] = [const { NodeSlot::new() }; 8];
//! let balancer = Balancer::new(&SLOTS[..], Config::default()).unwrap();
//! balancer.add(1).unwrap();
//! balancer.add(2).unwrap();
//!
//! let mut rng = Rng::with_seed(42); // one per thread
//! let now = 1_000_000; // monotonic nanoseconds, from your clock
//! let lease = balancer.acquire(now, &mut rng).unwrap();
//! // ... call node `lease.node_id()` ...
//! balancer.release(lease, Outcome::Success, now + 250_000).unwrap();
//! ```
//!
//! Time and randomness are parameters: the core never reads a clock and never shares a generator. Every
//! call that needs the time takes `now` (monotonic nanoseconds) as its last argument, before a random
//! generator where it takes one.
//!
//! # Vocabulary
//! weir implements public texts exactly, and its documentation names them by a short word:
//! - **the cascade's**, **the original cascade** (its buckets, window, weights): the algorithm of the
//!   blog post "Adaptive load balancing" (2019) that weir implements to the letter, [`Config::cascade()`]:
//!   per-node success-rate buckets with a sticky bucket, weights `success_rate³`, a weighted random
//!   fallback cascade over the nodes with a concurrency limit each, fail fast when none has room. Its
//!   author's **later variant** replaces the buckets by one exponentially weighted average
//!   ([`WeightedHealth::Ewma`](balance::WeightedHealth::Ewma)) and the cascade by one weighted pick
//!   ([`Draw::WeightedPick`](balance::Draw::WeightedPick)).
//! - **the gist's**: the gist "Success-prioritized, concurrency-limited stochastic fallback cascade",
//!   the same algorithm as a checklist, whose cheaper approximate shuffle is
//!   [`Draw::CascadeApprox`](balance::Draw::CascadeApprox).
//! - **AutoSleeper's** (in [`backoff`]): the blog post "Responsive exponential backoff in Go", whose
//!   `AutoSleeper` backs off on failure and comes down after a run of successes.
//! - **go-zero's** (in [`overload`]): the adaptive load shedder of the go-zero framework; **the SRE
//!   book's**: Google's *Site Reliability Engineering*, chapters 20 and 21 (subsetting, lame duck,
//!   flow control, adaptive throttling).
//!
//! # Where things are
//! | module | what it holds |
//! |---|---|
//! | [`balance`] | the [`Balancer`], its [`Lease`]s, [`Outcome`]s, configuration, algorithm families, errors and snapshots |
//! | [`limit`] | the per-node concurrency limit algorithms (Fixed, AIMD, Vegas, Gradient, Gradient2, CIAD, windowed) |
//! | [`overload`] | server-side [`Shedder`] (go-zero's), client-side [`Throttle`] (the SRE book's) and [`RetryBudget`] (Finagle's), their rolling window and (`std`) the CPU sampler |
//! | [`backoff`] | AutoSleeper's responsive exponential [`Backoff`] |
//! | [`metrics`] | one metric set for all of them, written in the Prometheus text format without allocating |
//! | [`subset`] | the SRE book's deterministic subsetting, specified so that any language reproduces it |
//! | `rt` (`std`) | a monotonic clock, per-thread generators, the lease and promise guards, [`HeapBalancer`], the queue of callers waiting for room |
//!
//! The root re-exports the headline types; everything else is under its module.
#![no_std]
#![forbid(unsafe_code)]
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "std")]
extern crate std;

#[cfg(not(any(feature = "decay", feature = "buckets", feature = "ewma")))]
compile_error!(
    "weir needs an algorithm family: enable `decay` (the lowest-score family, the default's), `buckets` \
     or `ewma` (the weighted family: the cascade's window, or its average), or \
     `algorithms` for every one (see README.md, \"Feature flags\")"
);
#[cfg(not(any(
    feature = "fixed",
    feature = "aimd",
    feature = "vegas",
    feature = "gradient",
    feature = "gradient2",
    feature = "ciad",
    feature = "knee"
)))]
compile_error!(
    "weir needs a limit algorithm: enable `ciad` (the default's), `fixed` (the cascade's), `aimd`, `vegas`, \
     `gradient`, `gradient2`, `knee`, or `algorithms` for every one (see README.md, \"Feature flags\")"
);

pub mod backoff;
pub mod balance;
mod error;
mod internal;
pub mod limit;
pub mod metrics;
pub mod overload;
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod rt;
pub mod subset;

pub use backoff::Backoff;
pub use balance::{Balancer, Config, Lease, NodeSlot, Outcome};
pub use error::ConfigError;
/// The random generator the core draws from (re-exported so callers need not depend on `fastrand`).
pub use fastrand::Rng;
pub use internal::sync::LOCK_FREE;
pub use overload::{RetryBudget, Shedder, Throttle};
#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub use rt::HeapBalancer;

/// The repository README's Rust examples (its quick starts), compiled and run as doc tests so that the
/// front page stays true.
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

/// This crate's README, the Rust guide (what crates.io shows): every Rust example runs as a doc test.
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../README.md")]
pub struct CoreReadmeDoctests;

/// The firmware guide's Rust example (`examples/embedded/README.md`), run on the host as a doc test; the
/// firmware itself runs it under QEMU (`cargo xtask embedded`).
#[cfg(all(doctest, feature = "std"))]
#[doc = include_str!("../../examples/embedded/README.md")]
pub struct EmbeddedReadmeDoctests;
