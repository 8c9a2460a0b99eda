//! weir's simulator: a deterministic discrete-event engine in virtual nanoseconds that drives the real weir
//! core, and the field's balancers beside it, through failure scenarios.
//!
//! [`engine::run`] runs one scenario with one policy; [`output::report`] runs them all and writes the
//! report.
//!
//! | module | holds |
//! |---|---|
//! | [`model`] | what a scenario is made of: servers and their phases, crashes, clients, arrivals, retries, membership actions (plain data) |
//! | [`scenarios`] | the named scenarios the report runs |
//! | [`file`](mod@file) | scenario files: a scenario written in TOML, read into the model with errors that name the line and field |
//! | [`engine`] | the event loop that plays a scenario against a policy, one cell at a time |
//! | [`metrics`] | what one cell measured ([`CellResult`], how its requests ended, per-server and fleet time series) |
//! | [`measures`] | recovery, ramp-back, overload answers and peak concentration, read from a cell |
//! | [`policy`] | the [`Balance`] trait a simulated client's policy implements, and the types it speaks |
//! | [`policy::weir`] | the adapter that drives the real [`weir::Balancer`], one per client |
//! | [`policy::baseline`] | the field's balancers (round robin, random, least loaded, peak EWMA P2C, WRR, dialogue's) |
//! | [`policy::registry`] | the table of named policies a report compares ([`PolicyDef`]) |
//! | [`output::report`] | runs every scenario with every policy and writes `report.md`, the CSVs and the charts ([`Report`]) |
//! | [`output::figures`] | what each scenario's charts show: per-server panels and the fleet's |
//! | [`output::chart`] | the PNG line charts |
//! | [`reference`](mod@reference) | dialogue's own published simulation figures, which its rows here reproduce |
//!
//! The binary (`src/main.rs`) parses the command line and calls [`output::report`].

pub mod engine;
pub mod file;
pub mod measures;
pub mod metrics;
pub mod model;
pub mod output;
pub mod policy;
pub mod reference;
pub mod scenarios;

pub use metrics::CellResult;
pub use model::Scenario;
pub use output::report::Report;
pub use policy::registry::PolicyDef;
pub use policy::Balance;
