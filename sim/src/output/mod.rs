//! What a run leaves behind: the report and its charts.
//!
//! * [`report`]: runs every scenario with every policy (in threads, cells in a fixed order) and writes
//!   `report.md`, `results.csv`, `series.csv` and `charts/<scenario>.png`.
//! * [`chart`]: draws a grid of line charts into a PNG, with an embedded font so the bytes repeat.

pub mod chart;
pub mod report;
