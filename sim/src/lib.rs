//! weir's simulator: a deterministic discrete-event engine in virtual nanoseconds that drives the real weir
//! core, and the field's balancers beside it, through failure scenarios.

pub mod baseline;
pub mod chart;
pub mod policy;
