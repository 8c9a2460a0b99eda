//! weir's simulator: a deterministic discrete-event engine in virtual nanoseconds that drives the real weir
//! core, and the field's balancers beside it, through failure scenarios.
//!
//! [`engine::run`] runs one scenario with one policy; [`report`] runs them all and writes the report.

pub mod baseline;
pub mod chart;
pub mod engine;
pub mod metrics;
pub mod model;
pub mod policies;
pub mod policy;
pub mod report;
pub mod scenarios;
pub mod weir_policy;
