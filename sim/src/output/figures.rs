//! What each scenario's charts show, built from a [`Report`]'s cells for [`chart`](super::chart) to draw.
//!
//! * [`servers`]: per charted policy, a row of two panels: the attempts each server was sent per second, and the
//!   success % of the attempts each server finished, per chart bucket. A bucket in which a server finished
//!   nothing is never drawn as a value: the line stops, dashed at 0 % while the server held attempts and
//!   answered none (a black hole, a hung node), blank while it had none; a lane per server under the plot
//!   shows when it had attempts at all, even where the lines lie on top of each other at 100 %.
//! * [`fleet`]: the fleet's success % and mean client latency per second of arrival, a line per policy.

use crate::metrics::{CellResult, ServerSeries};
use crate::model::SEC;
use crate::output::chart::{
    color, Figure, Key, Lane, Mark, Panel, Rgb, Scale, Series, Stroke, GREY,
};
use crate::output::report::Report;

/// Policies drawn in each scenario's per-server chart, when the report has them.
const CHARTED: [&str; 4] = [
    "weir-lowest-score",
    "dialogue-balanced",
    "p2c-peak-ewma",
    "round-robin",
];
/// Servers drawn per panel at most (subsetting scenarios have 300).
const CHARTED_SERVERS: usize = 10;
/// Policies drawn in each scenario's fleet chart after weir's default, when the report has them; the
/// scenario's best baseline joins them when it is none of these.
const FLEET_CHARTED: [&str; 4] = [
    "dialogue-balanced",
    "p2c-peak-ewma",
    "round-robin",
    "least-loaded",
];
/// Height of a per-server panel and of a fleet panel, in pixels.
const SERVER_PANEL_HEIGHT: u32 = 270;
const FLEET_PANEL_HEIGHT: u32 = 330;
/// The success panels' y range: a little above 100 % so a line at 100 % is not drawn on the frame.
const SUCCESS_RANGE: (f64, f64) = (0.0, 103.0);
/// A latency panel whose largest mean is this many times its smallest is drawn on a log scale.
const LOG_RATIO: f64 = 20.0;

/// What a server did in one chart bucket, as its success panel shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Traffic {
    /// No attempt sent, finished or open: a gap in the line, a blank in the lane.
    Idle,
    /// Attempts sent or open, none finished: drawn dashed at 0 %.
    Unanswered,
    /// `ended` attempts finished (answered, reset or timed out), `succeeded` of them with a success.
    Answered { ended: u64, succeeded: u64 },
}

/// A server's traffic in each of the first `buckets` buckets. An attempt is open from the bucket it was sent
/// in until the bucket it ended in; one never answered (a black hole's, with no client deadline) stays open
/// to the end.
pub(crate) fn traffic(series: &ServerSeries, buckets: usize) -> Vec<Traffic> {
    let at = |v: &[u64], b: usize| v.get(b).copied().unwrap_or(0);
    let mut open = 0u64;
    (0..buckets)
        .map(|b| {
            let (sent, ended) = (at(&series.sent, b), at(&series.ended, b));
            let held = open + sent;
            open = held.saturating_sub(ended);
            if ended > 0 {
                Traffic::Answered {
                    ended,
                    succeeded: at(&series.succeeded, b),
                }
            } else if held > 0 {
                Traffic::Unanswered
            } else {
                Traffic::Idle
            }
        })
        .collect()
}

/// The runs of consecutive buckets for which `keep` holds, as `(first, past the last)`.
pub(crate) fn runs<T>(states: &[T], keep: impl Fn(&T) -> bool) -> Vec<(usize, usize)> {
    let mut out: Vec<(usize, usize)> = Vec::new();
    for (b, state) in states.iter().enumerate() {
        if !keep(state) {
            continue;
        }
        match out.last_mut() {
            Some(run) if run.1 == b => run.1 = b + 1,
            _ => out.push((b, b + 1)),
        }
    }
    out
}

/// A bucket width in words: "0.17 s", "1 s".
fn width_text(secs: f64) -> String {
    let text = format!("{secs:.2}");
    format!("{} s", text.trim_end_matches('0').trim_end_matches('.'))
}

/// A policy's name as the charts show it, marking weir's default.
fn policy_label(report: &Report, p: usize) -> String {
    let policy = &report.policies[p];
    if policy.default {
        format!("{} (default)", policy.name)
    } else {
        policy.name.to_owned()
    }
}

/// The per-server figure of scenario `s`: per charted policy a row of two panels, attempts/s and success %
/// per server over simulated time, with a lane per server under the success panel.
pub fn servers(report: &Report, s: usize) -> Figure {
    let scenario = &report.scenarios[s];
    let mut chosen: Vec<usize> = CHARTED
        .iter()
        .filter_map(|name| report.policies.iter().position(|p| p.name == *name))
        .collect();
    if chosen.is_empty() {
        chosen = (0..report.policies.len().min(CHARTED.len())).collect();
    }
    let shown = scenario.servers.len().min(CHARTED_SERVERS);
    // Up to the last bucket with any activity in a charted cell (a run may idle until its abort time).
    let active = |v: &ServerSeries| {
        (0..v.sent.len().min(v.ended.len()))
            .rev()
            .find(|&b| v.sent[b] + v.ended[b] > 0)
            .map_or(0, |b| b + 2)
    };
    let buckets = chosen
        .iter()
        .flat_map(|&p| report.cells[s][p].series.iter().map(active))
        .max()
        .unwrap_or(0);
    let mut panels = Vec::new();
    let mut bucket_secs = 1.0;
    for &p in &chosen {
        let cell = &report.cells[s][p];
        let secs = cell.bucket_ns as f64 / SEC as f64;
        bucket_secs = secs;
        let start = |b: usize| b as f64 * secs;
        let mid = |b: usize| (b as f64 + 0.5) * secs;
        let servers = cell.series.iter().take(shown).enumerate();
        let rates = servers
            .clone()
            .map(|(i, series)| Series {
                color: color(i),
                stroke: Stroke::Solid,
                width: 2,
                points: (0..buckets)
                    .map(|b| {
                        let sent = series.sent.get(b).copied().unwrap_or(0);
                        (mid(b), sent as f64 / secs)
                    })
                    .collect(),
            })
            .collect();
        let mut successes = Vec::new();
        let mut unanswered = Vec::new();
        let mut lanes = Vec::new();
        for (i, series) in servers {
            let states = traffic(series, buckets);
            successes.push(Series {
                color: color(i),
                stroke: Stroke::Solid,
                width: 2,
                points: states
                    .iter()
                    .enumerate()
                    .map(|(b, state)| match *state {
                        Traffic::Answered { ended, succeeded } => {
                            (mid(b), 100.0 * succeeded as f64 / ended as f64)
                        }
                        _ => (mid(b), f64::NAN),
                    })
                    .collect(),
            });
            // Each stretch of unanswered buckets spans its buckets at 0 %, then a gap.
            unanswered.push(Series {
                color: color(i),
                stroke: Stroke::Dashed,
                width: 2,
                points: runs(&states, |t| *t == Traffic::Unanswered)
                    .into_iter()
                    .flat_map(|(a, b)| [(start(a), 0.0), (start(b), 0.0), (f64::NAN, f64::NAN)])
                    .collect(),
            });
            lanes.push(Lane {
                color: color(i),
                spans: runs(&states, |t| *t != Traffic::Idle)
                    .into_iter()
                    .map(|(a, b)| (start(a), start(b)))
                    .collect(),
            });
        }
        // Dashed stretches first, so a server's success line is drawn over another's dashes.
        unanswered.extend(successes);
        let name = policy_label(report, p);
        panels.push(Panel {
            title: format!("{name}: attempts/s"),
            y_label: "attempts/s".into(),
            y_range: None,
            scale: Scale::Linear,
            series: rates,
            lanes: Vec::new(),
        });
        panels.push(Panel {
            title: format!("{name}: success %"),
            y_label: "success %".into(),
            y_range: Some(SUCCESS_RANGE),
            scale: Scale::Linear,
            series: unanswered,
            lanes,
        });
    }
    let more = if shown < scenario.servers.len() {
        format!(" (first {shown} of {} servers)", scenario.servers.len())
    } else {
        String::new()
    };
    let mut legend: Vec<Key> = scenario
        .servers
        .iter()
        .take(shown)
        .enumerate()
        .map(|(i, server)| Key {
            mark: Mark::Line(color(i), 3),
            label: server.name.clone(),
        })
        .collect();
    legend.extend([
        Key {
            mark: Mark::Dashed(GREY),
            label: "held attempts, answered none".into(),
        },
        Key {
            mark: Mark::Filled(GREY),
            label: "lane: had attempts".into(),
        },
        Key {
            mark: Mark::Empty,
            label: "lane: had none".into(),
        },
    ]);
    Figure {
        title: format!("{}: attempts/s and success % per server{more}", scenario.name),
        caption: format!(
            "A row per policy. Left: attempts sent per second. Right: success % of the attempts each server \
             finished per {} bucket; no line where it finished none.",
            width_text(bucket_secs)
        ),
        x_label: "simulated time (s)".into(),
        x_range: Some((0.0, (buckets as f64 * bucket_secs).max(bucket_secs))),
        columns: 2,
        panel_height: SERVER_PANEL_HEIGHT,
        legend,
        panels,
    }
}

/// The policies of scenario `s`'s fleet chart, with their labels and colours: weir's default, those of
/// [`FLEET_CHARTED`] and the scenario's best baseline, each once, in that order; a policy keeps its colour
/// from scenario to scenario (the best baseline's is its own when it is not one of the others).
fn fleet_policies(report: &Report, s: usize) -> Vec<(usize, String, Rgb)> {
    let best = report.verdict(s).map(|v| v.best_baseline.0);
    let by_name = |name: &str| report.policies.iter().position(|p| p.name == name);
    let default = report.policies.iter().position(|p| p.default);
    let mut chosen: Vec<(usize, String, Rgb)> = Vec::new();
    let named = FLEET_CHARTED.iter().map(|name| by_name(name));
    for (slot, p) in [default].into_iter().chain(named).enumerate() {
        if let Some(p) = p {
            chosen.push((p, policy_label(report, p), color(slot)));
        }
    }
    if let Some(best) = best.and_then(by_name) {
        match chosen.iter_mut().find(|(p, _, _)| *p == best) {
            Some((_, label, _)) => label.push_str(" (best baseline)"),
            None => chosen.push((
                best,
                format!("{} (best baseline)", report.policies[best].name),
                color(FLEET_CHARTED.len() + 1),
            )),
        }
    }
    if chosen.is_empty() {
        chosen = (0..report.policies.len().min(FLEET_CHARTED.len() + 1))
            .map(|p| (p, policy_label(report, p), color(p)))
            .collect();
    }
    chosen
}

/// The fleet figure of scenario `s`: per chosen policy, the success % of the requests that arrived in each
/// second, and their mean client latency (on a log scale when the largest mean is 20 times the smallest or
/// more).
pub fn fleet(report: &Report, s: usize) -> Figure {
    let scenario = &report.scenarios[s];
    let chosen = fleet_policies(report, s);
    let cells: Vec<&CellResult> = chosen
        .iter()
        .map(|&(p, _, _)| &report.cells[s][p])
        .collect();
    let seconds = cells
        .iter()
        .map(|c| c.fleet.arrived.len())
        .max()
        .unwrap_or(0);
    let mid = |second: usize| second as f64 + 0.5;
    // weir's default (first) is drawn last, on top, and wider.
    let lines = |value: &dyn Fn(&CellResult, usize) -> Option<f64>| {
        chosen
            .iter()
            .zip(&cells)
            .enumerate()
            .rev()
            .map(|(i, ((_, _, rgb), cell))| Series {
                color: *rgb,
                stroke: Stroke::Solid,
                width: if i == 0 { 3 } else { 2 },
                points: (0..seconds)
                    .map(|t| (mid(t), value(cell, t).unwrap_or(f64::NAN)))
                    .collect(),
            })
            .collect::<Vec<_>>()
    };
    let success = lines(&|c, t| c.fleet.success_pct(t));
    let latency = lines(&|c, t| c.fleet.mean_ms(t));
    let means = latency
        .iter()
        .flat_map(|l| &l.points)
        .map(|&(_, y)| y)
        .filter(|y| y.is_finite() && *y > 0.0);
    let log = means
        .fold(None, |span: Option<(f64, f64)>, y| {
            Some(span.map_or((y, y), |(lo, hi)| (lo.min(y), hi.max(y))))
        })
        .is_some_and(|(lo, hi)| hi >= lo * LOG_RATIO);
    let legend = chosen
        .iter()
        .enumerate()
        .map(|(i, (_, label, rgb))| Key {
            mark: Mark::Line(*rgb, if i == 0 { 4 } else { 3 }),
            label: label.clone(),
        })
        .collect();
    Figure {
        title: format!("{}: the fleet by second of arrival", scenario.name),
        caption: "A line per policy; each request counts in the second it arrived. Top: the share that \
                  succeeded (a request never answered counts as failed). Bottom: the mean client latency of \
                  those answered, retries and queueing included. A gap: no request arrived, or none was \
                  answered."
            .into(),
        x_label: "arrival time (s)".into(),
        x_range: Some((0.0, seconds.max(1) as f64)),
        columns: 1,
        panel_height: FLEET_PANEL_HEIGHT,
        legend,
        panels: vec![
            Panel {
                title: "fleet success %".into(),
                y_label: "success %".into(),
                y_range: Some(SUCCESS_RANGE),
                scale: Scale::Linear,
                series: success,
                lanes: Vec::new(),
            },
            Panel {
                title: format!(
                    "fleet mean client latency{}",
                    if log { " (log scale)" } else { "" }
                ),
                y_label: "mean latency (ms)".into(),
                y_range: None,
                scale: if log { Scale::Log } else { Scale::Linear },
                series: latency,
                lanes: Vec::new(),
            },
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(sent: &[u64], ended: &[u64], succeeded: &[u64]) -> ServerSeries {
        ServerSeries {
            sent: sent.to_vec(),
            ended: ended.to_vec(),
            succeeded: succeeded.to_vec(),
        }
    }

    #[test]
    fn traffic_tells_idle_from_unanswered() {
        use Traffic::{Answered, Idle, Unanswered};
        // Sent at 0, answered at 1; idle at 2; a black hole from 3: sent, never answered, held to the end.
        let s = series(
            &[4, 0, 0, 2, 3, 0],
            &[0, 4, 0, 0, 0, 0],
            &[0, 3, 0, 0, 0, 0],
        );
        assert_eq!(
            traffic(&s, 8),
            [
                Unanswered,
                Answered {
                    ended: 4,
                    succeeded: 3
                },
                Idle,
                Unanswered,
                Unanswered,
                Unanswered,
                Unanswered,
                Unanswered,
            ]
        );
        // Timeouts end attempts: 0 % success, not a gap.
        let timeouts = series(&[2, 2], &[0, 2], &[0, 0]);
        assert_eq!(
            traffic(&timeouts, 3),
            [
                Unanswered,
                Answered {
                    ended: 2,
                    succeeded: 0
                },
                Unanswered
            ]
        );
        assert_eq!(traffic(&series(&[], &[], &[]), 2), [Idle, Idle]);
    }

    #[test]
    fn runs_group_consecutive_buckets() {
        let states = [true, true, false, true, false, false, true];
        assert_eq!(runs(&states, |&t| t), [(0, 2), (3, 4), (6, 7)]);
        assert_eq!(runs(&states, |&t| !t), [(2, 3), (4, 6)]);
        assert!(runs(&[] as &[bool], |&t| t).is_empty());
    }

    #[test]
    fn bucket_widths_read_plainly() {
        assert_eq!(width_text(1.0), "1 s");
        assert_eq!(width_text(0.1), "0.1 s");
        assert_eq!(width_text(4.0 / 3.0), "1.33 s");
    }
}
