//! Playing a trace's operations on a real balancer, and comparing its answers and snapshots with a file.

use super::{
    node_fields, parse, stats_fields, Answer, ErrorKind, Item, Op, StatsLine, Trace, NODE_FIELDS,
    STATS_FIELDS,
};
use std::fmt;
use std::path::Path;
use weir::balance::{CheckError, MembershipError, NodeSnapshot, RawLease, Rejected, ReleaseError};
use weir::limit::ServerLoad;
use weir::{HeapBalancer, Lease, Rng};

/// A balancer, the trace's one generator, and the raw leases by number: what both the generator and
/// the replay drive.
#[derive(Debug)]
pub struct Runner {
    balancer: HeapBalancer,
    rng: Rng,
    /// `leases[k - 1]` is `L<k>`'s raw lease, kept after its release so that it can be released again.
    leases: Vec<Option<RawLease>>,
}

impl Runner {
    /// A balancer of `trace`'s configuration and capacity, and its generator.
    ///
    /// # Panics
    /// If the configuration or capacity is refused (a parsed trace's configuration is validated).
    pub fn new(trace: &Trace) -> Runner {
        Runner {
            balancer: HeapBalancer::with_capacity(trace.capacity, trace.config)
                .unwrap_or_else(|e| panic!("the trace's balancer cannot be built: {e}")),
            rng: Rng::with_seed(trace.seed),
            leases: Vec::new(),
        }
    }

    /// The balancer the trace drives.
    pub fn balancer(&self) -> &HeapBalancer {
        &self.balancer
    }

    /// Replaces the generator (`rng <seed>`).
    pub fn reseed(&mut self, seed: u64) {
        self.rng = Rng::with_seed(seed);
    }

    /// The node of lease `L<k>`, if it was granted.
    pub fn lease_node(&self, k: u32) -> Option<u64> {
        self.leases
            .get(k as usize - 1)
            .copied()
            .flatten()
            .map(|r| r.id)
    }

    /// Does `op` at `t` and returns the balancer's answer, or why the operation cannot be done or its
    /// answer is inconsistent (an acquire out of numbering order, a release of a lease never granted, a
    /// `NodeRemoved` naming another node than the lease's).
    pub fn apply(&mut self, t: u64, op: Op) -> Result<Answer, String> {
        let b = &self.balancer;
        Ok(match op {
            Op::Acquire { lease } | Op::AcquireExcluding { lease, .. } => {
                if lease as usize != self.leases.len() + 1 {
                    return Err(format!(
                        "acquire names L{lease}, not L{}",
                        self.leases.len() + 1
                    ));
                }
                let got = match op {
                    Op::AcquireExcluding { exclude, .. } => {
                        b.acquire_excluding(t, &mut self.rng, exclude.ids())
                    }
                    _ => b.acquire(t, &mut self.rng),
                };
                match got {
                    Ok(l) => {
                        let raw = l.into_raw();
                        self.leases.push(Some(raw));
                        Answer::Node(raw.id)
                    }
                    Err(e) => {
                        self.leases.push(None);
                        Answer::Err(match e {
                            Rejected::AllBusy => ErrorKind::AllBusy,
                            Rejected::NoActiveNodes => ErrorKind::NoActiveNodes,
                            other => {
                                return Err(format!(
                                    "acquire refused for an unknown reason: {other}"
                                ))
                            }
                        })
                    }
                }
            }
            Op::Release {
                lease,
                outcome,
                load,
            } => {
                let Some(Some(raw)) = self.leases.get(lease as usize - 1).copied() else {
                    return Err(format!("L{lease} was never granted"));
                };
                let load = load
                    .map(|p| {
                        ServerLoad::from_permille(p)
                            .map_err(|e| format!("L{lease}'s load {p}: {e}"))
                    })
                    .transpose()?;
                match b.release_loaded(Lease::from_raw(raw), outcome, t, load) {
                    Ok(()) => Answer::Ok,
                    Err(ReleaseError::InvalidLease) => Answer::Err(ErrorKind::InvalidLease),
                    Err(ReleaseError::NodeRemoved { id }) if id == raw.id => {
                        Answer::Err(ErrorKind::NodeRemoved)
                    }
                    Err(ReleaseError::NodeRemoved { id }) => {
                        return Err(format!(
                            "node_removed names node {id}, but L{lease} is on node {}",
                            raw.id
                        ))
                    }
                    Err(other) => {
                        return Err(format!("release refused for an unknown reason: {other}"))
                    }
                }
            }
            Op::Add { id } => membership(b.add(id))?,
            Op::Remove { id } => membership(b.remove(id))?,
            Op::LameDuck { id, on } => membership(b.set_lame_duck(id, on))?,
            Op::DueCheck { quiet_ns } => b
                .due_check(t, quiet_ns)
                .map_or(Answer::Nothing, Answer::Node),
            Op::ReportCheck { id, healthy } => match b.report_check(id, healthy, t) {
                Ok(()) => Answer::Ok,
                Err(CheckError::UnknownId(_)) => Answer::Err(ErrorKind::UnknownId),
                Err(CheckError::NotLowestScore) => Answer::Err(ErrorKind::NotLowestScore),
                Err(other) => {
                    return Err(format!(
                        "report_check refused for an unknown reason: {other}"
                    ))
                }
            },
        })
    }

    /// `Balancer::nodes(t)`.
    pub fn nodes(&self, t: u64) -> Vec<NodeSnapshot> {
        self.balancer.nodes(t).collect()
    }

    /// `Balancer::stats()`.
    pub fn stats(&self) -> StatsLine {
        self.balancer.stats().into()
    }
}

fn membership(r: Result<(), MembershipError>) -> Result<Answer, String> {
    Ok(match r {
        Ok(()) => Answer::Ok,
        Err(MembershipError::DuplicateId(_)) => Answer::Err(ErrorKind::DuplicateId),
        Err(MembershipError::UnknownId(_)) => Answer::Err(ErrorKind::UnknownId),
        Err(MembershipError::CapacityFull { .. }) => Answer::Err(ErrorKind::CapacityFull),
        Err(other) => {
            return Err(format!(
                "membership change refused for an unknown reason: {other}"
            ))
        }
    })
}

/// The first difference between a file and the balancer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mismatch {
    /// The file's line (1-based).
    pub line: usize,
    /// Which value: `result`, `node[i].<field>`, `nodes` (their number), `stats.<field>`.
    pub field: String,
    /// What the file says.
    pub expected: String,
    /// What the balancer did.
    pub actual: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}: {}: expected {}, got {}",
            self.line, self.field, self.expected, self.actual
        )
    }
}

/// What a successful replay went through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Summary {
    /// Steps replayed.
    pub steps: usize,
    /// Node snapshots compared.
    pub snapshots: usize,
}

fn answer_text(a: Answer) -> String {
    match a {
        Answer::Node(id) => format!("node {id}"),
        Answer::Nothing => "none".into(),
        Answer::Ok => "ok".into(),
        Answer::Err(k) => k.name().into(),
    }
}

/// Plays `trace` on a fresh balancer and compares every answer, snapshot and stats line with it, in
/// file order; returns the first difference.
pub fn replay(trace: &Trace) -> Result<Summary, Mismatch> {
    let mut runner = Runner::new(trace);
    let mut summary = Summary::default();
    for item in &trace.items {
        let step = match item {
            Item::Reseed(seed) => {
                runner.reseed(*seed);
                continue;
            }
            Item::Step(s) => s,
        };
        let at = |line: usize, field: String, expected: String, actual: String| Mismatch {
            line,
            field,
            expected,
            actual,
        };
        let answer = runner.apply(step.t, step.op).map_err(|why| {
            at(
                step.lines.op,
                "result".into(),
                answer_text(step.answer),
                why,
            )
        })?;
        if answer != step.answer {
            return Err(at(
                step.lines.op,
                "result".into(),
                answer_text(step.answer),
                answer_text(answer),
            ));
        }
        let nodes = runner.nodes(step.t);
        for (i, (want, got)) in step.nodes.iter().zip(&nodes).enumerate() {
            let line = step.lines.nodes.get(i).copied().unwrap_or(step.lines.op);
            for ((name, w), g) in NODE_FIELDS
                .iter()
                .zip(node_fields(want))
                .zip(node_fields(got))
            {
                if w != g {
                    return Err(at(
                        line,
                        format!("node[{i}].{name}"),
                        w.to_string(),
                        g.to_string(),
                    ));
                }
            }
        }
        if nodes.len() != step.nodes.len() {
            return Err(at(
                step.lines.stats,
                "nodes".into(),
                format!("{} node lines", step.nodes.len()),
                format!("{} members", nodes.len()),
            ));
        }
        let stats = runner.stats();
        for ((name, w), g) in STATS_FIELDS
            .iter()
            .zip(stats_fields(&step.stats))
            .zip(stats_fields(&stats))
        {
            if w != g {
                return Err(at(
                    step.lines.stats,
                    format!("stats.{name}"),
                    w.to_string(),
                    g.to_string(),
                ));
            }
        }
        summary.steps += 1;
        summary.snapshots += nodes.len();
    }
    Ok(summary)
}

/// Parses and replays a trace's text; an error names `name`, the line and the field.
pub fn replay_text(name: &str, text: &str) -> Result<Summary, String> {
    let trace =
        parse(text).map_err(|e| format!("{name}:{}: parse error: {}", e.line, e.message))?;
    replay(&trace).map_err(|m| {
        format!(
            "{name}:{}: {}: expected {}, got {}",
            m.line, m.field, m.expected, m.actual
        )
    })
}

/// Reads, parses and replays a trace file; an error names the file, the line and the field.
pub fn replay_file(path: &Path) -> Result<Summary, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    replay_text(&path.display().to_string(), &text)
}
