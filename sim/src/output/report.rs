//! Runs every scenario with every policy and writes the report: `report.md`, `results.csv` (every figure of
//! every cell), `series.csv` (every time series) and one PNG per scenario under `charts/`.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::engine;
use crate::metrics::CellResult;
use crate::model::{Scenario, Subsetting, SEC};
use crate::output::chart::{render_grid, ChartError, Panel, Series};
use crate::policy::registry::PolicyDef;

/// Policies drawn in each scenario's chart, when the report has them.
const CHARTED: [&str; 4] = [
    "weir-cascade",
    "dialogue-balanced",
    "p2c-peak-ewma",
    "round-robin",
];
/// Servers drawn per chart panel at most (subsetting scenarios have 300).
const CHARTED_SERVERS: usize = 10;
/// A default within this many points of the best other policy counts as tied.
pub const TIE_POINTS: f64 = 0.2;

/// Every cell of a run: `cells[scenario][policy]`.
pub struct Report {
    /// The scenarios, in order.
    pub scenarios: Vec<Scenario>,
    /// The policies, in order.
    pub policies: Vec<PolicyDef>,
    /// The results.
    pub cells: Vec<Vec<CellResult>>,
}

/// Runs one cell.
pub fn run_cell(scenario: &Scenario, policy: &PolicyDef) -> CellResult {
    let capacity = match scenario.clients.subset {
        Subsetting::None => scenario.servers.len(),
        Subsetting::Deterministic(k) | Subsetting::Random(k) => k.min(scenario.servers.len()),
    };
    engine::run(scenario, &|_, seed| (policy.make)(capacity, seed))
}

/// Runs every cell on `threads` threads (the results do not depend on the thread count).
pub fn run(scenarios: Vec<Scenario>, policies: Vec<PolicyDef>, threads: usize) -> Report {
    let n = scenarios.len() * policies.len();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            let tx = tx.clone();
            let (next, scenarios, policies) = (&next, &scenarios, &policies);
            scope.spawn(move || loop {
                // Relaxed: a work counter; the results travel through the channel.
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                let (s, p) = (i / policies.len(), i % policies.len());
                let _ = tx.send((i, run_cell(&scenarios[s], &policies[p])));
            });
        }
    });
    drop(tx);
    let mut flat: Vec<Option<CellResult>> = vec![None; n];
    for (i, r) in rx {
        flat[i] = Some(r);
    }
    let mut flat = flat.into_iter().map(Option::unwrap_or_default);
    let cells = scenarios
        .iter()
        .map(|_| flat.by_ref().take(policies.len()).collect())
        .collect();
    Report {
        scenarios,
        policies,
        cells,
    }
}

/// How weir's default did on one scenario, by success %.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The default's success %.
    pub default: f64,
    /// The best other policy and its success %.
    pub best_other: (&'static str, f64),
    /// The best baseline (not weir) and its success %.
    pub best_baseline: (&'static str, f64),
}

impl Verdict {
    /// "best", "tied" (within [`TIE_POINTS`]) or "behind".
    pub fn word(&self) -> &'static str {
        let d = self.default - self.best_other.1;
        if d > 0.0 {
            "best"
        } else if d >= -TIE_POINTS {
            "tied"
        } else {
            "behind"
        }
    }
}

impl Report {
    fn default_index(&self) -> Option<usize> {
        self.policies.iter().position(|p| p.default)
    }

    /// The verdict on scenario `s`, if the report has weir's default and another policy.
    pub fn verdict(&self, s: usize) -> Option<Verdict> {
        let d = self.default_index()?;
        let best = |weir: Option<bool>| {
            self.policies
                .iter()
                .zip(&self.cells[s])
                .enumerate()
                .filter(|(i, (p, _))| {
                    *i != d && weir.is_none_or(|w| p.name.starts_with("weir") == w)
                })
                .map(|(_, (p, c))| (p.name, c.success_pct()))
                .fold(None, |acc: Option<(&'static str, f64)>, x| match acc {
                    Some(a) if a.1 >= x.1 => Some(a),
                    _ => Some(x),
                })
        };
        Some(Verdict {
            default: self.cells[s][d].success_pct(),
            best_other: best(None)?,
            best_baseline: best(Some(false)).unwrap_or(("-", 0.0)),
        })
    }

    /// The summary table (markdown): per scenario the oracle, weir's default, the best other policy, the
    /// best baseline and the verdict.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "| scenario | oracle ≤ | weir default | best other | best baseline | default is |\n",
        );
        out.push_str("|---|---:|---:|---|---|---|\n");
        let mut counts = [0usize; 3];
        for (s, scenario) in self.scenarios.iter().enumerate() {
            let Some(v) = self.verdict(s) else { continue };
            let oracle = self.cells[s].first().map_or(0.0, |c| c.oracle_pct);
            let word = v.word();
            counts[["best", "tied", "behind"]
                .iter()
                .position(|w| *w == word)
                .unwrap_or(2)] += 1;
            let _ = writeln!(
                out,
                "| {} | {:.1} | {:.1} | {} {:.1} | {} {:.1} | {}{} |",
                scenario.name,
                oracle,
                v.default,
                v.best_other.0,
                v.best_other.1,
                v.best_baseline.0,
                v.best_baseline.1,
                word,
                if word == "behind" {
                    format!(" ({:+.1})", v.default - v.best_other.1)
                } else {
                    String::new()
                },
            );
        }
        let _ = writeln!(
            out,
            "\nweir's default is best on {}, tied (within {TIE_POINTS} points) on {}, behind on {} of {} \
             scenarios.",
            counts[0],
            counts[1],
            counts[2],
            counts.iter().sum::<usize>()
        );
        out
    }

    /// The whole report as markdown; `charts` links each scenario's chart (under `charts/`).
    pub fn markdown(&self, charts: bool) -> String {
        let mut out = String::new();
        out.push_str("# weir simulator report\n\n");
        out.push_str(
            "Made by `cargo xtask sim`: a deterministic discrete-event simulation in virtual time that drives \
             the real weir core and the field's balancers through the same scenarios; the same seed gives \
             this file byte for byte. Success % = final 2xx answers / requests sent. The oracle is an upper \
             bound for a client that sends each request when it arrives: every try sent to the server most \
             likely to succeed at that moment, load ignored (a policy that queues requests can pass it by \
             waiting out an outage). Fail-fast counts refusals (retried when the scenario retries); mean \
             and p99 are over received requests, fail-fasts included; spread = busiest server's attempts / \
             mean attempts per server.\n\n",
        );
        out.push_str("## Summary (success %)\n\n");
        out.push_str(&self.summary());
        out.push_str("\n## Success % by scenario and policy\n\n| scenario |");
        for p in &self.policies {
            let _ = write!(out, " {} |", p.name);
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(self.policies.len()));
        out.push('\n');
        for (s, scenario) in self.scenarios.iter().enumerate() {
            let _ = write!(out, "| {} |", scenario.name);
            for c in &self.cells[s] {
                let _ = write!(out, " {:.1} |", c.success_pct());
            }
            out.push('\n');
        }
        out.push_str("\n## Policies\n\n");
        for p in &self.policies {
            let mark = if p.default { " **(default)**" } else { "" };
            let _ = writeln!(out, "- `{}`{mark}: {}", p.name, p.about);
        }
        out.push_str("\n## Scenarios\n");
        for (s, scenario) in self.scenarios.iter().enumerate() {
            let _ = writeln!(out, "\n### {}\n\n{}\n", scenario.name, scenario.about);
            if let Some(c) = self.cells[s].first() {
                let _ = writeln!(
                    out,
                    "{} requests, {} servers, {} clients; oracle ≤ {:.1} %.\n",
                    c.sent,
                    scenario.servers.len(),
                    scenario.clients.count,
                    c.oracle_pct
                );
            }
            if charts {
                let _ = writeln!(out, "![{0}](charts/{0}.png)\n", scenario.name);
            }
            out.push_str(
                "| policy | success % | fail-fast | mean ms | p99 ms | server busy s | received/sent | \
                 attempts | spread | answers |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
            );
            for (p, c) in self.policies.iter().zip(&self.cells[s]) {
                let _ = writeln!(
                    out,
                    "| {}{} | {:.1} | {} | {:.1} | {:.1} | {:.1} | {}/{} | {} | {:.2} | {} |",
                    p.name,
                    if p.default { " (default)" } else { "" },
                    c.success_pct(),
                    c.fail_fast,
                    c.client_mean_ns / 1e6,
                    c.client_p99_ns as f64 / 1e6,
                    c.server_busy_ns as f64 / 1e9,
                    c.received,
                    c.sent,
                    c.server_attempts,
                    c.spread(),
                    codes(c),
                );
            }
        }
        out
    }

    /// Every figure of every cell, one line per cell.
    pub fn results_csv(&self) -> String {
        let mut out = String::from(
            "scenario,policy,default,sent,received,succeeded,success_pct,fail_fast,server_attempts,\
             server_busy_s,client_mean_ms,client_p99_ms,spread,oracle_pct,answers\n",
        );
        for (s, scenario) in self.scenarios.iter().enumerate() {
            for (p, c) in self.policies.iter().zip(&self.cells[s]) {
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{},{:.1},{},{},{:.3},{:.3},{:.3},{:.3},{:.1},{}",
                    scenario.name,
                    p.name,
                    p.default,
                    c.sent,
                    c.received,
                    c.succeeded,
                    c.success_pct(),
                    c.fail_fast,
                    c.server_attempts,
                    c.server_busy_ns as f64 / 1e9,
                    c.client_mean_ns / 1e6,
                    c.client_p99_ns as f64 / 1e6,
                    c.spread(),
                    c.oracle_pct,
                    codes(c).replace(", ", ";"),
                );
            }
        }
        out
    }

    /// Every time series: per cell, server and bucket, attempts sent, ended and succeeded.
    pub fn series_csv(&self) -> String {
        let mut out = String::from("scenario,policy,server,bucket_start_s,sent,ended,succeeded\n");
        for (s, scenario) in self.scenarios.iter().enumerate() {
            for (p, c) in self.policies.iter().zip(&self.cells[s]) {
                for (server, series) in scenario.servers.iter().zip(&c.series) {
                    for (b, ((sent, ended), ok)) in series
                        .sent
                        .iter()
                        .zip(&series.ended)
                        .zip(&series.succeeded)
                        .enumerate()
                    {
                        if sent + ended > 0 {
                            let _ = writeln!(
                                out,
                                "{},{},{},{},{sent},{ended},{ok}",
                                scenario.name,
                                p.name,
                                server.name,
                                b as f64 * c.bucket_ns as f64 / 1e9
                            );
                        }
                    }
                }
            }
        }
        out
    }

    /// Draws scenario `s`'s chart: per charted policy, request rate and success rate per server over time.
    pub fn chart(&self, s: usize, path: &Path) -> Result<(), ChartError> {
        let scenario = &self.scenarios[s];
        let mut chosen: Vec<usize> = CHARTED
            .iter()
            .filter_map(|name| self.policies.iter().position(|p| p.name == *name))
            .collect();
        if chosen.is_empty() {
            chosen = (0..self.policies.len().min(CHARTED.len())).collect();
        }
        let shown = scenario.servers.len().min(CHARTED_SERVERS);
        // Up to the last bucket with any activity in a charted cell (a run may idle until its abort time).
        let active = |v: &crate::metrics::ServerSeries| {
            (0..v.sent.len())
                .rev()
                .find(|&b| v.sent[b] + v.ended[b] > 0)
                .map_or(0, |b| b + 2)
        };
        let buckets = chosen
            .iter()
            .flat_map(|&p| self.cells[s][p].series.iter().map(active))
            .max()
            .unwrap_or(0);
        let mut rates = Vec::new();
        let mut successes = Vec::new();
        for &p in &chosen {
            let c = &self.cells[s][p];
            let secs = c.bucket_ns as f64 / SEC as f64;
            let t = |b: usize| b as f64 * secs;
            let lines = |f: &dyn Fn(&crate::metrics::ServerSeries, usize) -> f64| {
                scenario
                    .servers
                    .iter()
                    .zip(&c.series)
                    .take(shown)
                    .map(|(server, series)| Series {
                        label: server.name.clone(),
                        points: (0..buckets.min(series.sent.len()))
                            .map(|b| (t(b), f(series, b)))
                            .collect(),
                    })
                    .collect()
            };
            let name = self.policies[p].name;
            rates.push(Panel {
                title: format!("{name}: requests/s per server"),
                y_label: "requests/s".into(),
                y_range: None,
                series: lines(&|v, b| v.sent[b] as f64 / secs),
            });
            successes.push(Panel {
                title: format!("{name}: success rate per server"),
                y_label: "success rate".into(),
                y_range: Some((0.0, 1.0)),
                series: lines(&|v, b| v.succeeded[b] as f64 / v.ended[b] as f64),
            });
        }
        let columns = rates.len();
        rates.extend(successes);
        let more = if shown < scenario.servers.len() {
            format!(" (first {shown} of {} servers)", scenario.servers.len())
        } else {
            String::new()
        };
        render_grid(
            path,
            &format!("{}{more}", scenario.name),
            "simulated seconds",
            columns,
            &rates,
        )
    }

    /// Writes `report.md`, `results.csv`, `series.csv` and, with `charts`, `charts/<scenario>.png` under
    /// `dir`.
    pub fn write(&self, dir: &Path, charts: bool) -> Result<(), Box<dyn std::error::Error>> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("report.md"), self.markdown(charts))?;
        std::fs::write(dir.join("results.csv"), self.results_csv())?;
        std::fs::write(dir.join("series.csv"), self.series_csv())?;
        if charts {
            let charts_dir = dir.join("charts");
            std::fs::create_dir_all(&charts_dir)?;
            for (s, scenario) in self.scenarios.iter().enumerate() {
                self.chart(s, &charts_dir.join(format!("{}.png", scenario.name)))?;
            }
        }
        Ok(())
    }
}

/// The answer histogram as `200: 9, 500: 1`.
fn codes(c: &CellResult) -> String {
    c.codes
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}
