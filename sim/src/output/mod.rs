//! What a run leaves behind: the report and its charts.
//!
//! * [`report`]: runs every scenario with every policy (in threads, cells in a fixed order) and writes
//!   `report.md`, `results.csv`, `series.csv`, `charts/<scenario>.png` and `charts/<scenario>-fleet.png`.
//! * [`figures`]: what those charts show: the per-server panels and the fleet's, built from the cells.
//! * [`chart`]: draws a figure (title, caption, legend, a grid of line charts) into a PNG, with an embedded
//!   font so the bytes repeat.

pub mod chart;
pub mod figures;
pub mod report;
