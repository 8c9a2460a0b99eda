//! # weir-lb-tower
//!
//! `cargo add --path path/to/weir/integrations/tower` and `cargo add --path path/to/weir/core` from a
//! checkout (`cargo add weir-lb-tower weir-lb` after the first release): the library is `weir_tower`, the
//! core it builds on `weir`.
//!
//! weir as a tower [`Service`](tower::Service): [`Balance`] sends each request to the inner service that
//! weir picks (its node with room whose recent failures and calls in flight score lowest, under an
//! adaptive concurrency limit per node), learns from each response, and waits for room in weir's bounded
//! queue when every node is at its limit. It replaces tower's own `Balance` (power of two choices over
//! `PeakEwma` or `PendingRequests`), which never sees a response's status and so sends more and more
//! traffic to a node that fails fast.
//!
//! ```
//! use std::convert::Infallible;
//! use tower::{service_fn, Service, ServiceExt};
//! use weir_tower::{Builder, HttpStatus};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), weir_tower::Error> {
//! // Two inner services; in a real stack, hyper clients to two backends.
//! let backend = |status: u16| {
//!     service_fn(move |_req: http::Request<()>| async move {
//!         Ok::<_, Infallible>(http::Response::builder().status(status).body(()).unwrap())
//!     })
//! };
//! let mut balance = Builder::new(weir::Config::default())
//!     .classify(HttpStatus) // the default: the outcome table of the core's README
//!     .build_list([("good", backend(200)), ("bad", backend(500))])?;
//! let mut ok = 0;
//! for _ in 0..100 {
//!     let response = balance.ready().await?.call(http::Request::new(())).await?;
//!     ok += usize::from(response.status() == 200);
//! }
//! assert!(ok >= 95); // "bad" loses its traffic after its first failures
//! let stats = balance.balancer().stats();
//! assert_eq!((stats.in_flight, stats.acquired), (0, 100)); // every lease came back
//! # Ok(())
//! # }
//! ```
//!
//! The way to call a backend: a deadline on each request, its wait for room included
//! ([`Builder::deadline`]: past it the call ends
//! with [`Error::DeadlinePassed`] and its node learns a timeout, `Dropped`) and retries of idempotent
//! requests on another node within a shared budget ([`Builder::retry`], [`retry`]):
//!
//! ```
//! # use std::convert::Infallible;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tower::BoxError> {
//! # let backend = |s: u16| tower::service_fn(move |_: http::Request<()>| async move {
//! #     Ok::<_, Infallible>(http::Response::builder().status(s).body(()).unwrap())
//! # });
//! # let (a, b) = (backend(200), backend(500));
//! use std::time::Duration;
//! use tower::{Service, ServiceExt};
//! use weir_tower::{retry::Retry, Builder};
//!
//! // a, b: any Clone tower services, such as hyper-util clients to two backends.
//! let mut balance = Builder::new(weir::Config::default())
//!     .deadline(Duration::from_secs(2)) // then Error::DeadlinePassed, released as Dropped
//!     .retry(Retry::new()) // idempotent requests: 1 more try elsewhere, within 20 % + 10/s
//!     .build_list([("a", a), ("b", b)])?;
//! let response = balance.ready().await?.call(http::Request::new(())).await?; // a GET
//! assert_eq!(response.status(), 200); // from "a", or from "a" after "b" answered 500
//! # Ok(())
//! # }
//! ```
//!
//! In a stack, with a timeout beneath the balance (so that a timeout teaches weir, as `Dropped`):
//!
//! ```
//! # use std::convert::Infallible;
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), tower::BoxError> {
//! # let backend = || tower::service_fn(|_: http::Request<()>| async { Ok::<_, Infallible>(http::Response::new(())) });
//! # let (a, b, request) = (backend(), backend(), http::Request::new(()));
//! use std::time::Duration;
//! use tower::{timeout::Timeout, Service, ServiceExt};
//! use weir_tower::Builder;
//!
//! // a, b: any tower services, such as hyper-util clients to two backends.
//! let node = |client| Timeout::new(client, Duration::from_secs(1)); // a timeout counts as Dropped
//! let mut balance = Builder::new(weir::Config::default()) // the core's Config
//!     .wait(Duration::from_millis(100)) // wait for room up to 100 ms, then Refused::Timeout
//!     .build_list([("a", node(a)), ("b", node(b))])?; // or .build(discover)
//! let response = balance.ready().await?.call(request).await?; // 5xx, 429, errors: classified
//! # assert_eq!(response.status(), 200);
//! # Ok(())
//! # }
//! ```
//!
//! # Where things are
//! | item | what |
//! |---|---|
//! | [`Balance`] | the service: `poll_ready` reserves a weir lease (waiting for room up to a deadline) or takes weir's refusal, `call` sends on the lease (or answers the refusal), the response future releases it; the module docs of `balance.rs` say how the inner services' readiness and membership are handled |
//! | [`Builder`], [`BalanceLayer`], [`Fixed`] | building one from the core's [`Config`](weir::Config): from a `tower::discover::Discover` stream, from a fixed list, or as a layer; each call's deadline ([`Builder::deadline`]) |
//! | [`retry`]: [`Retry`], [`RetryFuture`] | retrying failed idempotent requests on another node within a [`RetryBudget`](weir::RetryBudget) ([`Builder::retry`]) |
//! | [`Classify`], [`HttpStatus`], [`GrpcStatus`], [`ByResult`], [`classify::error_outcome`] | responses and errors into weir [`Outcome`](weir::Outcome)s |
//! | [`OrcaLoad`], [`classify::orca_load`] | a classifier's reading of the server's own load report (gRPC's ORCA, the `endpoint-load-metrics` header), released with the lease ([`Classify::load`]) for the knee limit: see "Load reports" |
//! | [`Error`], [`Refused`] | why a call was refused or failed |
//! | [`ResponseFuture`] | the call in flight, holding its lease |
//! | [`Checks`], [`CheckError`] | health checks: a handle from [`Balance::checks`] for a checker task that sends the application's health request to the nodes the balance stopped calling, and brings back those that answer well (see "Health checks") |
//! | [`Metrics`] | the balance's metrics in Prometheus' text format, nodes named by key: [`Balance::write_metrics`], or a handle from [`Balance::metrics`] for a `/metrics` handler on another task |
//!
//! # Contract
//! - Every lease comes back exactly once: with the classified outcome when the response future
//!   completes, as `Dropped` when the call's deadline passes first, as `Ignored` when it is dropped first (cancellation, a timeout layer above), when the
//!   `Balance` is dropped holding a lease `poll_ready` reserved, or when that lease's node turns out not
//!   ready. The balancer's `stats()` stay conserved, and count a refusal once per refused request;
//!   its waits for room are counted as waits (see [`balance`], "Waiting for room").
//! - A refusal is the refused request's answer, never an error of `poll_ready`: `poll_ready` is ready
//!   and the `call` it admits fails with [`Error::Refused`], sending nothing (as tower's `LoadShed`
//!   answers `Overloaded`). To tower an error from `poll_ready` means the service is dead: a `Buffer`
//!   would fail every later call with it. `poll_ready` returns errors of discovery and membership only.
//! - The lease is released when the response *head* arrives (the inner future completes), as tower's
//!   `CompleteOnResponse` does; a streamed body's later failure is not seen.
//! - `call` without a successful `poll_ready` sends nothing and fails with [`Error::NotReady`].
//! - With retries, each attempt holds a lease of its own, released with its own outcome; the answer is
//!   the last attempt's.
//! - Inner errors are converted into `tower::BoxError` (tower's convention) and returned as
//!   [`Error::Inner`]; downcast to get yours back.
//! - Not `Clone`, like tower's `Balance`: share it behind `tower::buffer::Buffer`.
//!
//! # Load reports
//! A server may say how loaded it is in each answer: gRPC's ORCA load report, which HTTP servers send
//! as the `endpoint-load-metrics` header (`application_utilization:0.62, cpu_utilization:0.55`).
//! [`OrcaLoad`] wraps any classifier of `http::Response`s and reads it ([`classify::orca_load`]); the
//! lease is then released with the report ([`Balancer::release_loaded`](weir::Balancer::release_loaded)).
//! Only the knee limit ([`KneeLimit`](weir::limit::KneeLimit), `LimitAlgorithm::Knee`) reads it, in
//! place of the call's latency, and only within a minute of the node's last drop; under any other
//! limit it changes nothing. Every client of a server reads the same report, so a client that starts
//! while the fleet is loaded finds the servers' knee, where its latency alone would not. A classifier
//! of your own reports one through [`Classify::load`]; the others report none, and release as before.
//!
//! # Health checks
//! The outcomes of real calls take a failing node out of rotation; under `Config::default()` it then
//! stays out while its failures fade (a half-life of 30 s). A checker task brings it back as soon as it
//! answers well, without spending any caller's call on it while it is still broken (HAProxy's `observe`
//! with its checks): [`Balance::checks`] gives it a handle, [`Checks::due`] names a node whose failures
//! have been quiet for a period, the checker sends it the application's own health request, and
//! [`Checks::report`] records the answer (healthy: forgiven, called again at once; failed: checked again a
//! period later). Only the lowest-score family (the default) has checks; the [`Checks`] docs show the loop.
//!
//! # Features
//! - `tonic`: [`classify::error_outcome`] also reads a `tonic::Status` in an error's chain by its code
//!   ([`classify::grpc_outcome`]). gRPC responses are classified without it ([`GrpcStatus`]).

pub mod balance;
mod builder;
mod check;
pub mod classify;
mod deadline;
mod error;
mod future;
mod members;
mod metrics;
mod nodes;
pub mod retry;

pub use balance::Balance;
pub use builder::{BalanceLayer, Builder, Fixed, DEFAULT_CAPACITY, DEFAULT_WAIT};
pub use check::Checks;
pub use classify::{ByResult, Classify, GrpcStatus, HttpStatus, OrcaLoad};
pub use error::{CheckError, Error, Refused};
pub use future::ResponseFuture;
pub use metrics::Metrics;
pub use retry::{Retry, RetryFuture};

/// The crate's README (`integrations/tower/README.md`, the tower guide): every Rust example runs as a doc
/// test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
