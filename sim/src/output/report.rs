//! Runs every scenario with every policy and writes the report: `report.md`, `results.csv` (every figure of
//! every cell), `series.csv` (every time series) and one PNG per scenario under `charts/`.

use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use crate::engine::{self, Clients};
use crate::measures::{seconds_text, Measures};
use crate::metrics::CellResult;
use crate::model::{Scenario, Subsetting, SEC};
use crate::output::chart::{self, ChartError};
use crate::output::figures;
use crate::policy::registry::{Kind, PolicyDef};
use crate::policy::Refusal;
use crate::reference;

/// A default within this many points of the best other policy counts as tied.
pub const TIE_POINTS: f64 = 0.2;
/// The goal: weir's default within this many points of the best baseline's success %...
pub const GOAL_POINTS: f64 = 0.5;
/// ... with a client mean latency at most this multiple of dialogue Balanced's ...
pub const GOAL_LATENCY: f64 = 1.10;
/// ... the latency reference.
pub const LATENCY_REFERENCE: &str = "dialogue-balanced";

/// Each cell runs on the scenario's own seed and on this many more.
pub const EXTRA_SEEDS: u64 = 3;
/// ... and an at-capacity scenario's on this many more: its runs are 30-60 times longer, and one more
/// seed keeps the whole report within its time budget.
pub const CAPACITY_EXTRA_SEEDS: u64 = 1;

/// The seeds a scenario's cells run on: its own and the extra ones.
pub fn runs_of(scenario: &Scenario) -> usize {
    1 + if scenario.at_capacity {
        CAPACITY_EXTRA_SEEDS
    } else {
        EXTRA_SEEDS
    } as usize
}
/// A figure whose seeds differ by more than this many points is flagged.
pub const SPREAD_POINTS: f64 = 2.0;

/// Every cell of a run: `cells[scenario][policy]` on the scenario's seed, `seeds[scenario][policy]` over it
/// and the extra seeds.
pub struct Report {
    /// The scenarios, in order.
    pub scenarios: Vec<Scenario>,
    /// The policies, in order.
    pub policies: Vec<PolicyDef>,
    /// The results on each scenario's own seed.
    pub cells: Vec<Vec<CellResult>>,
    /// The figures over every seed.
    pub seeds: Vec<Vec<Seeds>>,
    /// The recovery and herding measures of every seed's run: `measures[scenario][policy][seed]`, the
    /// scenario's own seed first.
    pub measures: Vec<Vec<Vec<Measures>>>,
}

/// Mean, least and greatest of one figure over a cell's seeds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spread {
    /// The mean.
    pub mean: f64,
    /// The least.
    pub min: f64,
    /// The greatest.
    pub max: f64,
}

impl Spread {
    fn of(values: &[f64]) -> Spread {
        let n = values.len().max(1) as f64;
        Spread {
            mean: values.iter().sum::<f64>() / n,
            min: values.iter().copied().fold(f64::INFINITY, f64::min),
            max: values.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }
    }

    /// `max − min`.
    pub fn width(&self) -> f64 {
        self.max - self.min
    }
}

/// One cell's figures over its seeds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Seeds {
    /// Success %.
    pub success: Spread,
    /// Client mean latency, ms.
    pub client_mean_ms: Spread,
}

/// Runs one cell.
pub fn run_cell(scenario: &Scenario, policy: &PolicyDef) -> CellResult {
    let capacity = match scenario.clients.subset {
        Subsetting::None => scenario.servers.len(),
        Subsetting::Deterministic(k) | Subsetting::Random(k) => k.min(scenario.servers.len()),
    };
    match policy.kind {
        Kind::Balancer(make) => engine::run(scenario, &|_, seed| make(capacity, seed)),
        Kind::Dialogue(strategy) => engine::run_with(scenario, Clients::Dialogue(strategy)),
    }
}

/// Runs every cell on every seed on `threads` threads (the results do not depend on the thread count).
pub fn run(scenarios: Vec<Scenario>, policies: Vec<PolicyDef>, threads: usize) -> Report {
    // Every (scenario, policy, seed) job, in report order.
    let jobs: Vec<(usize, usize, u64)> = scenarios
        .iter()
        .enumerate()
        .flat_map(|(s, scenario)| {
            let runs = runs_of(scenario) as u64;
            (0..policies.len()).flat_map(move |p| (0..runs).map(move |k| (s, p, k)))
        })
        .collect();
    let n = jobs.len();
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            let tx = tx.clone();
            let (next, scenarios, policies, jobs) = (&next, &scenarios, &policies, &jobs);
            scope.spawn(move || loop {
                // Relaxed: a work counter; the results travel through the channel.
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(s, p, k)) = jobs.get(i) else {
                    break;
                };
                let scenario = scenarios[s].reseeded(k);
                let _ = tx.send((i, run_cell(&scenario, &policies[p])));
            });
        }
    });
    drop(tx);
    let mut flat: Vec<Option<CellResult>> = vec![None; n];
    for (i, r) in rx {
        flat[i] = Some(r);
    }
    let mut flat = flat.into_iter().map(Option::unwrap_or_default);
    let mut cells = Vec::new();
    let mut seeds = Vec::new();
    let mut measures = Vec::new();
    for scenario in &scenarios {
        let mut row = Vec::new();
        let mut spreads = Vec::new();
        let mut measured = Vec::new();
        for _ in &policies {
            let runs: Vec<CellResult> = flat.by_ref().take(runs_of(scenario)).collect();
            let success: Vec<f64> = runs.iter().map(CellResult::success_pct).collect();
            let mean: Vec<f64> = runs.iter().map(|c| c.client_mean_ns / 1e6).collect();
            spreads.push(Seeds {
                success: Spread::of(&success),
                client_mean_ms: Spread::of(&mean),
            });
            // Each seed's run against its own scenario (the faults do not move with the seed).
            measured.push(runs.iter().map(|c| Measures::of(scenario, c)).collect());
            row.push(runs.into_iter().next().unwrap_or_default());
        }
        cells.push(row);
        seeds.push(spreads);
        measures.push(measured);
    }
    Report {
        scenarios,
        policies,
        cells,
        seeds,
        measures,
    }
}

/// How weir's default did on one scenario, by mean success % over the seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// The default's mean success %.
    pub default: f64,
    /// The best other policy and its mean success %.
    pub best_other: (&'static str, f64),
    /// The best baseline (not weir) and its mean success %.
    pub best_baseline: (&'static str, f64),
    /// The widest seed spread of the default's and the best other policy's success %.
    pub spread: f64,
    /// The goal's check, when the report has baselines and dialogue Balanced.
    pub goal: Option<Goal>,
}

/// The goal on one scenario, on the report's seed and on the mean over the seeds: success within
/// [`GOAL_POINTS`] of the best baseline's, client mean at most [`GOAL_LATENCY`] times dialogue
/// Balanced's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Goal {
    /// Default minus best baseline, success points: on the mean over seeds, and on the report's seed.
    pub gap: (f64, f64),
    /// Default / dialogue Balanced client mean latency: on the mean over seeds, and on the report's seed.
    pub latency: (f64, f64),
}

impl Goal {
    /// Whether both parts hold on both measures.
    pub fn met(&self) -> bool {
        self.gap.0 >= -GOAL_POINTS
            && self.gap.1 >= -GOAL_POINTS
            && self.latency.0 <= GOAL_LATENCY
            && self.latency.1 <= GOAL_LATENCY
    }

    /// What missed, in words ("" when met).
    pub fn misses(&self) -> String {
        let mut why = Vec::new();
        let gap = self.gap.0.min(self.gap.1);
        if gap < -GOAL_POINTS {
            why.push(format!("success {gap:+.1}"));
        }
        let lat = self.latency.0.max(self.latency.1);
        if lat > GOAL_LATENCY {
            why.push(format!("latency {lat:.2}x"));
        }
        why.join(", ")
    }
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
                .zip(&self.seeds[s])
                .enumerate()
                .filter(|(i, (p, _))| {
                    *i != d && weir.is_none_or(|w| p.name.starts_with("weir") == w)
                })
                .map(|(i, (p, c))| (i, p.name, c.success.mean))
                .fold(
                    None,
                    |acc: Option<(usize, &'static str, f64)>, x| match acc {
                        Some(a) if a.2 >= x.2 => Some(a),
                        _ => Some(x),
                    },
                )
        };
        let other = best(None)?;
        let baseline = best(Some(false));
        let cells = &self.cells[s];
        let seeds = &self.seeds[s];
        let reference = self
            .policies
            .iter()
            .position(|p| p.name == LATENCY_REFERENCE);
        let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::INFINITY };
        let goal = baseline.zip(reference).map(|(b, r)| {
            let best_seed = self
                .policies
                .iter()
                .zip(cells)
                .filter(|(p, _)| !p.name.starts_with("weir"))
                .map(|(_, c)| c.success_pct())
                .fold(0.0, f64::max);
            Goal {
                gap: (
                    seeds[d].success.mean - b.2,
                    cells[d].success_pct() - best_seed,
                ),
                latency: (
                    ratio(seeds[d].client_mean_ms.mean, seeds[r].client_mean_ms.mean),
                    ratio(cells[d].client_mean_ns, cells[r].client_mean_ns),
                ),
            }
        });
        Some(Verdict {
            default: self.seeds[s][d].success.mean,
            best_other: (other.1, other.2),
            best_baseline: baseline.map_or(("-", 0.0), |b| (b.1, b.2)),
            spread: self.seeds[s][d]
                .success
                .width()
                .max(self.seeds[s][other.0].success.width()),
            goal,
        })
    }

    /// The summary table (markdown): per scenario the oracle, weir's default, the best other policy, the
    /// best baseline (mean success % over the seeds) and the verdict, flagging a seed spread wider than
    /// [`SPREAD_POINTS`].
    pub fn summary(&self) -> String {
        let mut out = String::new();
        out.push_str(
            "| scenario | oracle ≤ | weir default | best other | best baseline | default is | seed spread | goal |\n",
        );
        out.push_str("|---|---:|---:|---|---|---|---:|---|\n");
        let mut counts = [0usize; 3];
        let mut goals = (0usize, 0usize);
        let mut missed = Vec::new();
        let mut wide = 0;
        let mut set_aside = 0;
        for (s, scenario) in self.scenarios.iter().enumerate() {
            let Some(v) = self.verdict(s) else { continue };
            let oracle = self.cells[s].first().map_or(0.0, |c| c.oracle_pct);
            if let Some(why) = &scenario.not_comparable {
                set_aside += 1;
                let _ = writeln!(
                    out,
                    "| {} | {:.1} | {:.1} | | | not comparable: {why} | | |",
                    scenario.name, oracle, v.default
                );
                continue;
            }
            let word = v.word();
            counts[["best", "tied", "behind"]
                .iter()
                .position(|w| *w == word)
                .unwrap_or(2)] += 1;
            let flag = if v.spread > SPREAD_POINTS {
                wide += 1;
                " **wide**"
            } else {
                ""
            };
            let goal = match v.goal {
                Some(g) if g.met() => {
                    goals.0 += 1;
                    "met".to_string()
                }
                Some(g) => {
                    goals.1 += 1;
                    missed.push(format!("{} ({})", scenario.name, g.misses()));
                    format!("**missed**: {}", g.misses())
                }
                None => String::new(),
            };
            let _ = writeln!(
                out,
                "| {} | {:.1} | {:.1} | {} {:.1} | {} {:.1} | {}{} | {:.1}{flag} | {goal} |",
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
                v.spread,
            );
        }
        let _ = writeln!(
            out,
            "\nweir's default is best on {}, tied (within {TIE_POINTS} points) on {}, behind on {} of {} \
             scenarios (mean success over {}; {wide} with a seed spread above {SPREAD_POINTS} points; \
             {set_aside} not comparable).",
            counts[0],
            counts[1],
            counts[2],
            counts.iter().sum::<usize>(),
            self.seeds_words(),
        );
        if goals.0 + goals.1 > 0 {
            let _ = writeln!(
                out,
                "\nThe goal (success within {GOAL_POINTS} points of the best baseline and client mean at most \
                 {GOAL_LATENCY:.2}x {LATENCY_REFERENCE}'s, on the report's seed and on the mean of {}) \
                 is met on {} of {} scenarios{}.",
                self.seeds_words(),
                goals.0,
                goals.0 + goals.1,
                if missed.is_empty() {
                    String::new()
                } else {
                    format!("; missed on {}", missed.join(", "))
                },
            );
        }
        out.push_str(&self.never_recovers());
        out.push_str(&self.at_capacity_summary());
        out
    }

    /// How many seeds the means are over, in words.
    fn seeds_words(&self) -> String {
        let family = self.scenarios.iter().any(|s| s.at_capacity);
        let others = self.scenarios.iter().any(|s| !s.at_capacity);
        match (others, family) {
            (true, true) => format!(
                "{} seeds ({} for the at-capacity family)",
                1 + EXTRA_SEEDS,
                1 + CAPACITY_EXTRA_SEEDS
            ),
            (false, true) => format!("{} seeds", 1 + CAPACITY_EXTRA_SEEDS),
            _ => format!("{} seeds", 1 + EXTRA_SEEDS),
        }
    }

    /// The policies that never recover, per scenario: on some seed, the fleet's success rate is not back
    /// within a point of its level before the fault by the end of the load.
    pub fn never_recovers(&self) -> String {
        let mut lines = Vec::new();
        for (s, scenario) in self.scenarios.iter().enumerate() {
            let never: Vec<&str> = self
                .policies
                .iter()
                .zip(&self.measures[s])
                .filter(|(_, m)| m.iter().any(|m| m.recovery == Some(None)))
                .map(|(p, _)| p.name)
                .collect();
            if !never.is_empty() {
                lines.push(format!("- {}: {}", scenario.name, never.join(", ")));
            }
        }
        if lines.is_empty() {
            return String::new();
        }
        format!(
            "\n**Never recovers** (on at least one seed the fleet's success rate, in 1 s buckets, is not back \
             within {} point of its level before the fault, for {} s running, by the end of the load):\n\n{}\n",
            crate::measures::RECOVERY_POINTS,
            crate::measures::RECOVERY_HOLD,
            lines.join("\n")
        )
    }

    /// The at-capacity family at a glance: per scenario its utilization, and weir's default beside the
    /// best baseline (by mean success %): success, client mean, recovery and ramp-back.
    pub fn at_capacity_summary(&self) -> String {
        let Some(d) = self.default_index() else {
            return String::new();
        };
        let mut rows = String::new();
        for (s, scenario) in self.scenarios.iter().enumerate() {
            if !scenario.at_capacity {
                continue;
            }
            let best = self
                .policies
                .iter()
                .enumerate()
                .filter(|(_, p)| !p.name.starts_with("weir"))
                .max_by(|a, b| {
                    let (x, y) = (
                        self.seeds[s][a.0].success.mean,
                        self.seeds[s][b.0].success.mean,
                    );
                    // The first of equals wins, as in the verdict.
                    x.total_cmp(&y).then(b.0.cmp(&a.0))
                })
                .map(|(i, _)| i);
            let cell = |i: usize| {
                let k = &self.seeds[s][i];
                let m = self.measures[s][i].first().copied().unwrap_or_default();
                format!(
                    "{:.1} | {:.0} | {} | {}{}",
                    k.success.mean,
                    k.client_mean_ms.mean,
                    seconds_text(m.recovery),
                    seconds_text(m.ramp_back),
                    kept_text(m.kept_share)
                )
            };
            let _ = writeln!(
                rows,
                "| {} | {} | {} | {} | {} |",
                scenario.name,
                scenario
                    .healthy_utilization()
                    .map_or("—".into(), |u| format!("{:.0} %", 100.0 * u)),
                cell(d),
                best.map_or("—".into(), |b| self.policies[b].name.to_string()),
                best.map_or("— | — | — | —".into(), cell),
            );
        }
        if rows.is_empty() {
            return String::new();
        }
        format!(
            "\n### At capacity\n\nServers at 50-85 % of their capacity when healthy; the client's deadline covers \
             the whole request for every policy. Success % and client mean are over {} seeds; recovery and \
             ramp-back on the report's seed (see each scenario's measures).\n\n\
             | scenario | healthy utilization | default success % | default mean ms | default recovery | \
             default ramp-back | best baseline | its success % | its mean ms | its recovery | its ramp-back |\n\
             |---|---:|---:|---:|---|---|---|---:|---:|---|---|\n{rows}",
            1 + CAPACITY_EXTRA_SEEDS
        )
    }

    /// The whole report as markdown; `charts` links each scenario's chart (under `charts/`).
    pub fn markdown(&self, charts: bool) -> String {
        let mut out = String::new();
        out.push_str("# weir simulator report\n\n");
        let _ = write!(
            out,
            "Made by `cargo xtask sim`: a deterministic discrete-event simulation in virtual time that drives \
             the real weir core and the field's balancers through the same scenarios; the same seeds give \
             this file byte for byte. Every cell runs on the scenario's seed and on {EXTRA_SEEDS} more{}: \
             the summary compares mean success %; the tables show the scenario's seed, with the mean and the range over \
             all seeds. Success % = final 2xx answers / requests sent. The oracle is an upper \
             bound for a client that sends each request when it arrives: every try sent to the server most \
             likely to succeed at that moment, load ignored (a policy that queues requests can pass it by \
             waiting out an outage). \"Refused\" says what a policy's client does with a request it cannot \
             send at once: fail it (retried as a 503 when the scenario retries) or let it wait in a queue. \
             Fail-fast counts requests failed by the client itself; mean and p99 are over received \
             requests, fail-fasts included; server s is dialogue's server time (busy time of the attempts \
             the servers finished), held s adds the attempts never finished, held until the run's end; \
             spread = busiest server's attempts / mean attempts per server. Each scenario also has the \
             measures of recovery and herding: *recovery*, after the last fault ends, the seconds until the \
             fleet's success rate (1 s buckets) is back within {} point of its level before the fault and \
             stays there {} s; *ramp-back*, for a recovered or new node that then stays healthy {} s (or until \
             the load ends), the seconds until it receives at least {:.0} % of its fair share of the attempts \
             in each of {} consecutive seconds (the slowest such node), with in brackets the share of the \
             attempts it kept over that healthy span, over its fair share (the least such node's); *overload answers*, \
             the 503 and 429 answers the policy's traffic drew; *peak concentration*, while every server \
             is healthy, the largest share of one second's attempts that one server received, over its \
             fair share (1.00: even).\n\n",
            if self.scenarios.iter().any(|s| s.at_capacity) {
                format!(" ({CAPACITY_EXTRA_SEEDS} more in the at-capacity family, whose runs are long)")
            } else {
                String::new()
            },
            crate::measures::RECOVERY_POINTS,
            crate::measures::RECOVERY_HOLD,
            crate::measures::RAMP_HEALTHY,
            100.0 * crate::measures::RAMP_SHARE,
            crate::measures::RAMP_HOLD,
        );
        out.push_str("## Summary (mean success %)\n\n");
        out.push_str(&self.summary());
        out.push_str("\n## Mean success % by scenario and policy\n\n| scenario |");
        for p in &self.policies {
            let _ = write!(out, " {} |", p.name);
        }
        out.push_str("\n|---|");
        out.push_str(&"---:|".repeat(self.policies.len()));
        out.push('\n');
        for (s, scenario) in self.scenarios.iter().enumerate() {
            let _ = write!(out, "| {} |", scenario.name);
            for c in &self.seeds[s] {
                let _ = write!(out, " {:.1} |", c.success.mean);
            }
            out.push('\n');
        }
        out.push_str(&self.dialogue_side_by_side());
        out.push_str("\n## Policies\n\n");
        for p in &self.policies {
            let mark = if p.default { " **(default)**" } else { "" };
            let _ = writeln!(out, "- `{}`{mark}: {}", p.name, p.description());
        }
        out.push_str("\n## Scenarios\n");
        for (s, scenario) in self.scenarios.iter().enumerate() {
            let _ = writeln!(out, "\n### {}\n\n{}\n", scenario.name, scenario.about);
            if let Some(c) = self.cells[s].first() {
                let _ = writeln!(
                    out,
                    "{} requests, {} servers, {} {}; oracle ≤ {:.1} %.\n",
                    c.sent,
                    scenario.servers.len(),
                    scenario.clients.count,
                    if scenario.clients.sticky {
                        "sticky sessions of one client"
                    } else {
                        "clients"
                    },
                    c.oracle_pct
                );
            }
            let _ = writeln!(out, "{}\n", conditions(scenario));
            if charts {
                let _ = writeln!(out, "![{0}](charts/{0}.png)\n", scenario.name);
                let _ = writeln!(
                    out,
                    "![{0}: the fleet](charts/{0}-fleet.png)\n",
                    scenario.name
                );
            }
            out.push_str(
                "| policy | refused | success % | over seeds | fail-fast | mean ms | over seeds | p99 ms | \
                 server s | held s | received/sent | attempts | spread | answers |\n\
                 |---|---|---:|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|\n",
            );
            for ((p, c), k) in self.policies.iter().zip(&self.cells[s]).zip(&self.seeds[s]) {
                let _ = writeln!(
                    out,
                    "| {}{} | {} | {:.1} | {:.1} ({:.1}–{:.1}) | {} | {:.1} | {:.0} ({:.0}–{:.0}) | {:.1} | \
                     {:.1} | {:.1} | {}/{} | {} | {:.2} | {} |",
                    p.name,
                    if p.default { " (default)" } else { "" },
                    refused_word(p.refused),
                    c.success_pct(),
                    k.success.mean,
                    k.success.min,
                    k.success.max,
                    c.fail_fast,
                    c.client_mean_ns / 1e6,
                    k.client_mean_ms.mean,
                    k.client_mean_ms.min,
                    k.client_mean_ms.max,
                    c.client_p99_ns as f64 / 1e6,
                    c.server_busy_ns as f64 / 1e9,
                    c.server_held_ns as f64 / 1e9,
                    c.received,
                    c.sent,
                    c.server_attempts,
                    c.spread(),
                    codes(c),
                );
            }
            out.push_str(&self.measures_table(s));
        }
        out
    }

    /// Scenario `s`'s recovery and herding measures per policy, on the report's seed ("never" on another
    /// seed is noted).
    pub fn measures_table(&self, s: usize) -> String {
        let mut out = String::from(
            "\n| policy | recovery | ramp-back | overload answers (503, 429) | peak concentration |\n\
             |---|---|---|---:|---:|\n",
        );
        for (p, m) in self.policies.iter().zip(&self.measures[s]) {
            let first = m.first().copied().unwrap_or_default();
            let elsewhere = |f: fn(&Measures) -> Option<crate::measures::Seconds>| {
                if f(&first) != Some(None) && m.iter().skip(1).any(|x| f(x) == Some(None)) {
                    " (never on another seed)"
                } else {
                    ""
                }
            };
            let _ = writeln!(
                out,
                "| {}{} | {}{} | {}{}{} | {} | {} |",
                p.name,
                if p.default { " (default)" } else { "" },
                seconds_text(first.recovery),
                elsewhere(|x| x.recovery),
                seconds_text(first.ramp_back),
                kept_text(first.kept_share),
                elsewhere(|x| x.ramp_back),
                first.overload_answers,
                first
                    .peak_concentration
                    .map_or("—".into(), |c| format!("{c:.2}")),
            );
        }
        out
    }

    /// Every cell's recovery and herding measures (on the scenario's seed), one line per cell; empty
    /// fields where there is nothing to measure, `never` where it never happened.
    pub fn measures_csv(&self) -> String {
        let mut out = String::from(
            "scenario,policy,default,healthy_utilization,recovery_s,ramp_back_s,kept_share,\
             overload_answers,peak_concentration\n",
        );
        let secs = |v: Option<crate::measures::Seconds>| match v {
            None => String::new(),
            Some(None) => "never".into(),
            Some(Some(x)) => format!("{x:.0}"),
        };
        for (s, scenario) in self.scenarios.iter().enumerate() {
            let utilization = scenario
                .healthy_utilization()
                .map_or(String::new(), |u| format!("{u:.3}"));
            for (p, m) in self.policies.iter().zip(&self.measures[s]) {
                let m = m.first().copied().unwrap_or_default();
                let _ = writeln!(
                    out,
                    "{},{},{},{utilization},{},{},{},{},{}",
                    scenario.name,
                    p.name,
                    p.default,
                    secs(m.recovery),
                    secs(m.ramp_back),
                    m.kept_share.map_or(String::new(), |k| format!("{k:.3}")),
                    m.overload_answers,
                    m.peak_concentration
                        .map_or(String::new(), |c| format!("{c:.3}")),
                );
            }
        }
        out
    }

    /// dialogue's rows next to dialogue's own published figures ([`reference`](mod@crate::reference)), on the scenario's seed;
    /// empty when the report has none of them.
    pub fn dialogue_side_by_side(&self) -> String {
        let mut rows = String::new();
        let (mut same, mut all) = (0, 0);
        for (s, scenario) in self.scenarios.iter().enumerate() {
            for (p, c) in self.policies.iter().zip(&self.cells[s]) {
                let Some(d) = reference::published(&scenario.name, p.name) else {
                    continue;
                };
                all += 1;
                let matched = reference::matches(d, c);
                same += usize::from(matched);
                let _ = writeln!(
                    rows,
                    "| {} | {} | {:.1} / {:.1} | {:.1} / {:.1} | {:.1} / {:.1} | {} / {} | {} / {} | {} |",
                    scenario.name,
                    p.name,
                    d.success_pct,
                    c.success_pct(),
                    d.client_mean_ms,
                    c.client_mean_ns / 1e6,
                    d.server_s,
                    c.server_busy_ns as f64 / 1e9,
                    d.received,
                    c.received,
                    d.responses,
                    c.server_answers,
                    if matched { "same" } else { "differs" },
                );
            }
        }
        if all == 0 {
            return String::new();
        }
        format!(
            "\n## dialogue's own report, side by side\n\n\
             dialogue's published simulation figures (commit 381f98f7) / this simulator's, on the scenario's \
             seed (dialogue's seeds). {same} of {all} are the same: success %, client mean to 0.1 ms, \
             server time to 0.1 s, received requests and server answers. Where they differ, the cause \
             known is dialogue's scheduler: scheduling any task first runs every task due at the same \
             instant, nested inside the scheduling one's callbacks, so same-instant events interleave \
             differently there.\n\n\
             | scenario | policy | success % | client mean ms | server s | received | answers | |\n\
             |---|---|---:|---:|---:|---:|---:|---|\n{rows}"
        )
    }

    /// Every figure of every cell (on the scenario's seed), with the mean and range over all seeds, one line
    /// per cell.
    pub fn results_csv(&self) -> String {
        let mut out = String::from(
            "scenario,policy,default,refused,sent,received,succeeded,success_pct,success_mean,success_min,\
             success_max,fail_fast,server_attempts,server_busy_s,server_held_s,client_mean_ms,\
             client_mean_ms_mean,client_mean_ms_min,client_mean_ms_max,client_p99_ms,spread,oracle_pct,\
             answers\n",
        );
        for (s, scenario) in self.scenarios.iter().enumerate() {
            for ((p, c), k) in self.policies.iter().zip(&self.cells[s]).zip(&self.seeds[s]) {
                let _ = writeln!(
                    out,
                    "{},{},{},{},{},{},{},{:.1},{:.2},{:.1},{:.1},{},{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},\
                     {:.3},{:.3},{:.1},{}",
                    scenario.name,
                    p.name,
                    p.default,
                    refused_word(p.refused),
                    c.sent,
                    c.received,
                    c.succeeded,
                    c.success_pct(),
                    k.success.mean,
                    k.success.min,
                    k.success.max,
                    c.fail_fast,
                    c.server_attempts,
                    c.server_busy_ns as f64 / 1e9,
                    c.server_held_ns as f64 / 1e9,
                    c.client_mean_ns / 1e6,
                    k.client_mean_ms.mean,
                    k.client_mean_ms.min,
                    k.client_mean_ms.max,
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

    /// Draws scenario `s`'s per-server chart at `path`: per charted policy, attempts/s and success % per server
    /// over time ([`figures::servers`]).
    pub fn chart(&self, s: usize, path: &Path) -> Result<(), ChartError> {
        chart::render(path, &figures::servers(self, s))
    }

    /// Draws scenario `s`'s fleet chart at `path`: success % and mean client latency by second of arrival, a
    /// line per policy ([`figures::fleet`]).
    pub fn fleet_chart(&self, s: usize, path: &Path) -> Result<(), ChartError> {
        chart::render(path, &figures::fleet(self, s))
    }

    /// Writes `report.md`, `results.csv`, `series.csv` and, with `charts`, `charts/<scenario>.png` and
    /// `charts/<scenario>-fleet.png` under `dir`.
    pub fn write(&self, dir: &Path, charts: bool) -> Result<(), Box<dyn std::error::Error>> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("report.md"), self.markdown(charts))?;
        std::fs::write(dir.join("results.csv"), self.results_csv())?;
        std::fs::write(dir.join("series.csv"), self.series_csv())?;
        std::fs::write(dir.join("measures.csv"), self.measures_csv())?;
        if charts {
            let charts_dir = dir.join("charts");
            std::fs::create_dir_all(&charts_dir)?;
            for (s, scenario) in self.scenarios.iter().enumerate() {
                self.chart(s, &charts_dir.join(format!("{}.png", scenario.name)))?;
                self.fleet_chart(s, &charts_dir.join(format!("{}-fleet.png", scenario.name)))?;
            }
        }
        Ok(())
    }
}

/// The scenario's load and deadline, as a sentence: its utilization when healthy, and which deadline
/// applies to whom.
fn conditions(s: &Scenario) -> String {
    let utilization = s.healthy_utilization().map_or(String::new(), |u| {
        format!(
            "Healthy utilization: {:.0} % (requests in progress over the servers' capacity). ",
            100.0 * u
        )
    });
    let deadline = match (s.clients.deadline, s.clients.timeout) {
        (Some(d), _) => format!(
            "Deadline: {} per request, the user's: it covers the whole request (queues, attempts, \
             retries' backoff) for every policy.",
            duration(d)
        ),
        (None, Some(t)) => format!(
            "Deadline: {} per attempt; a request in the engine's queue waits at most that long (weir's \
             waiting clients and dialogue's queues have no deadline of their own).",
            duration(t)
        ),
        (None, None) => "No deadline.".into(),
    };
    format!("{utilization}{deadline}")
}

/// A duration in the unit that reads best.
fn duration(ns: u64) -> String {
    if ns % SEC == 0 {
        format!("{} s", ns / SEC)
    } else {
        format!("{} ms", ns as f64 / 1e6)
    }
}

/// What a client does with a request it cannot send at once, in a word (the tables' column).
fn refused_word(r: Refusal) -> &'static str {
    match r {
        Refusal::FailFast => "fail",
        Refusal::Queue | Refusal::Wait { .. } => "wait",
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

/// The kept share beside a ramp-back, as the tables show it: ` (0.93)`, or nothing where there is none.
fn kept_text(k: Option<f64>) -> String {
    k.map_or(String::new(), |k| format!(" ({k:.2})"))
}
