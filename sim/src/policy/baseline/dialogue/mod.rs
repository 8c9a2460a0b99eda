//! palantir/dialogue's client, modelled class by class from its source at commit 381f98f7
//! (<https://github.com/palantir/dialogue/tree/381f98f7015a5fb3582f46b396002c9779739b0a>), the version whose
//! simulation report (`simulation/src/test/resources/report.md` there) [`crate::reference`] reproduces.
//!
//! dialogue's client is more than a node-selection rule: a request passes through a stack of channels, and
//! several of them hold requests back. [`DialogueClient`] models the whole stack of one `DialogueChannel`:
//!
//! | dialogue | here |
//! |---|---|
//! | `RetryingChannel` (max 4 retries, full-jitter exponential backoff from the shared generator) | the scenario's retry rule, asked through [`Retry`] ([`retrying`]) |
//! | `StickyEndpointChannels2` (router, `StickyConcurrencyLimitedChannel`, per-session `QueuedChannel`) | sticky sessions ([`sticky`]) |
//! | `QueuedChannel` (multi-host FIFO, fast path only when empty, drained on every completion) | the channel's queue ([`queued`]) |
//! | `NodeSelectionStrategyChannel`, the attempts on the wire | [`DialogueClient`] ([`client`]) |
//! | `BalancedNodeSelectionStrategyChannel` + `BalancedScoreTracker` | [`balanced::Tracker`] |
//! | `PinUntilErrorNodeSelectionStrategyChannel` + `ReshufflingNodeList` | [`pin::Pin`] |
//! | host-level `ConcurrencyLimitedChannel` | [`limiter::Ciad`] at [`limiter::Level::Host`] |
//! | per endpoint: `QueuedChannel` + endpoint-level `ConcurrencyLimitedChannel` | a stage per host and endpoint ([`stage`]), [`limiter::Level::Endpoint`] |
//! | `RefreshingChannel` (a new `DialogueChannel` at the first request after the URIs change) | channel generations ([`refreshing`]) |
//! | `java.util.Random`, `HashMap` key order | [`java`] |
//!
//! `DANGEROUS_DISABLE_SYMPATHETIC_CLIENT_QOS` (dialogue's `UNLIMITED_ROUND_ROBIN` strategy) removes the
//! host and endpoint levels; the sticky sessions' own limiter stays.

pub mod balanced;
pub mod client;
pub mod java;
pub mod limiter;
pub mod pin;
pub mod queued;
pub mod refreshing;
pub mod retrying;
pub mod stage;
pub mod sticky;
#[cfg(test)]
mod testing;

pub use client::{DialogueClient, Effect, Strategy};
pub use java::JavaRandom;
pub use retrying::Retry;

use crate::policy::Reply;

/// How an attempt ended, as dialogue's future callbacks see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A response with this status (`onSuccess`).
    Response(u16),
    /// An `IOException` (`onFailure`): a reset or refused connection, or a read timeout.
    Io {
        /// A read timeout (`SocketTimeoutException`), which dialogue does not retry by default.
        timeout: bool,
    },
    /// Another exception, raised by the client itself (a full queue, no URIs): never retried.
    Failed,
}

impl Outcome {
    /// The outcome of a simulated reply.
    pub fn of(reply: Reply) -> Self {
        match reply {
            Reply::Status(s) => Outcome::Response(s),
            Reply::Refused => Outcome::Io { timeout: false },
            Reply::Timeout => Outcome::Io { timeout: true },
        }
    }
}
