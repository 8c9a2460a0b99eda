//! Decision traces shared by the Rust, C and Python suites: the text format of `tests/vectors/*.trace`
//! (its writer and parser), the runner that plays a trace's operations on a real balancer, the replay
//! that compares what the balancer answers with what a file expects, and the generator of the files.
//!
//! The format is specified for a C programmer in `tests/vectors/README.md`; this module is its Rust
//! implementation. It depends on nothing but `std` and `weir`, and the parser never looks at the
//! generator: a replay is parse → run → compare, so it checks the files themselves.
//!
//! ```
//! use weir_tests::vectors::{generate, parse, replay, write};
//! let spec = generate::specs().into_iter().find(|s| s.name == "edges-decay").unwrap();
//! let text = write(&generate::generate(&spec));
//! let trace = parse(&text).unwrap();
//! assert_eq!(write(&trace), text);
//! let summary = replay(&trace).unwrap();
//! assert!(summary.steps > 0);
//! ```

mod config;
pub mod generate;
mod run;

pub use run::{replay, replay_file, replay_text, Mismatch, Runner, Summary};

use std::fmt::{self, Write as _};
use weir::balance::{NodeSnapshot, NodeState, Stats};
use weir::limit::ServerLoad;
use weir::{Config, Outcome};

/// The first line of every trace file.
pub const MAGIC: &str = "weir-trace 6";
/// The longest line a trace may hold, in bytes, newline included (a C replay can read lines with
/// `fgets` into a buffer of this size).
pub const MAX_LINE: usize = 512;

/// A whole trace: its description, the balancer it runs on and its steps.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// Comment lines written after the first line (without the leading `# `); ignored by the replay.
    pub about: Vec<String>,
    /// The balancer's configuration (`config` lines).
    pub config: Config,
    /// The balancer's capacity (`capacity` line).
    pub capacity: usize,
    /// The seed of the trace's generator (the first `rng` line).
    pub seed: u64,
    /// Reseeds and steps, in file order.
    pub items: Vec<Item>,
}

/// What follows the header.
// A step is a few hundred bytes and a reseed eight; but a file holds hundreds of steps and a handful of
// reseeds, so boxing the steps would cost an allocation per step to save a little on the reseeds.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `rng <seed>`: the generator is replaced by `weir::Rng::with_seed(seed)`.
    Reseed(u64),
    /// One operation and the state expected after it.
    Step(Step),
}

/// One operation at time `t`, its expected answer, and the snapshot expected after it.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The operation's `now`, and the `now` of the snapshot after it (`Balancer::nodes(t)`).
    pub t: u64,
    /// What is done.
    pub op: Op,
    /// What the balancer answers.
    pub answer: Answer,
    /// `Balancer::nodes(t)` after the operation, in slot order.
    pub nodes: Vec<NodeSnapshot>,
    /// `Balancer::stats()` after the operation.
    pub stats: StatsLine,
    /// Where the step's lines are in its file (all zero for a trace built in memory).
    pub lines: Lines,
}

/// The line numbers (1-based) of a step's lines, for error messages. Always equal to any other `Lines`,
/// so that a parsed trace compares equal to the one it was written from.
#[derive(Clone, Debug, Default)]
pub struct Lines {
    /// The operation line.
    pub op: usize,
    /// Each `node` line.
    pub nodes: Vec<usize>,
    /// The `stats` line.
    pub stats: usize,
}

impl PartialEq for Lines {
    fn eq(&self, _: &Lines) -> bool {
        true
    }
}

/// The most ids an `acquire_excluding` line names.
pub const MAX_EXCLUDE: usize = 8;

/// The ids an `acquire_excluding` excludes: at most [`MAX_EXCLUDE`], in the file's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Exclude {
    ids: [u64; MAX_EXCLUDE],
    len: usize,
}

impl Exclude {
    /// The first [`MAX_EXCLUDE`] of `ids`.
    pub fn new(ids: &[u64]) -> Exclude {
        let mut e = Exclude::default();
        for (slot, &id) in e.ids.iter_mut().zip(ids) {
            *slot = id;
            e.len += 1;
        }
        e
    }

    /// The ids.
    pub fn ids(&self) -> &[u64] {
        &self.ids[..self.len]
    }
}

/// An operation on the balancer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `Balancer::acquire(t, &mut rng)`; a lease granted is named `L<lease>`.
    Acquire {
        /// The lease's number: the acquire's ordinal in the file (the k-th acquire names `L<k>`).
        lease: u32,
    },
    /// `Balancer::acquire_excluding(t, &mut rng, ids)`, numbered with the acquires.
    AcquireExcluding {
        /// The lease's number, as an acquire's.
        lease: u32,
        /// The ids excluded.
        exclude: Exclude,
    },
    /// `Balancer::release(Lease::from_raw(raw of L<lease>), outcome, t)`, or `release_loaded` with
    /// the load.
    Release {
        /// The lease's number.
        lease: u32,
        /// The outcome reported.
        outcome: Outcome,
        /// The server's load report in thousandths (`release_loaded`: `Balancer::release_loaded` with
        /// `ServerLoad::from_permille`), or none (`release`).
        load: Option<u32>,
    },
    /// `Balancer::add(id)`.
    Add {
        /// The node id.
        id: u64,
    },
    /// `Balancer::remove(id)`.
    Remove {
        /// The node id.
        id: u64,
    },
    /// `Balancer::set_lame_duck(id, on)`.
    LameDuck {
        /// The node id.
        id: u64,
        /// Into lame duck (`true`) or back into rotation.
        on: bool,
    },
    /// `Balancer::due_check(t, quiet_ns)`: the node due for a health check, or none.
    DueCheck {
        /// How long the node's failures must have been quiet.
        quiet_ns: u64,
    },
    /// `Balancer::report_check(id, healthy, t)`.
    ReportCheck {
        /// The node id.
        id: u64,
        /// The check's answer.
        healthy: bool,
    },
}

/// What an operation answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// An acquire granted a lease on this node, or `due_check` named it.
    Node(u64),
    /// `due_check` named no node (`none` in the files).
    Nothing,
    /// A release or membership change succeeded.
    Ok,
    /// The operation was refused.
    Err(ErrorKind),
}

/// Why an operation was refused, by its stable name in the files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// `Rejected::NoActiveNodes` (acquire).
    NoActiveNodes,
    /// `Rejected::AllBusy` (acquire).
    AllBusy,
    /// `ReleaseError::InvalidLease` (release).
    InvalidLease,
    /// `ReleaseError::NodeRemoved` (release).
    NodeRemoved,
    /// `MembershipError::DuplicateId` (add).
    DuplicateId,
    /// `MembershipError::UnknownId` (remove, lame_duck).
    UnknownId,
    /// `MembershipError::CapacityFull` (add).
    CapacityFull,
    /// `CheckError::NotLowestScore` (report_check).
    NotLowestScore,
}

impl ErrorKind {
    /// Every kind, in the order of the README's table.
    pub const ALL: [ErrorKind; 8] = [
        ErrorKind::NoActiveNodes,
        ErrorKind::AllBusy,
        ErrorKind::InvalidLease,
        ErrorKind::NodeRemoved,
        ErrorKind::DuplicateId,
        ErrorKind::UnknownId,
        ErrorKind::CapacityFull,
        ErrorKind::NotLowestScore,
    ];

    /// The name written in the files.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::NoActiveNodes => "no_active_nodes",
            ErrorKind::AllBusy => "all_busy",
            ErrorKind::InvalidLease => "invalid_lease",
            ErrorKind::NodeRemoved => "node_removed",
            ErrorKind::DuplicateId => "duplicate_id",
            ErrorKind::UnknownId => "unknown_id",
            ErrorKind::CapacityFull => "capacity_full",
            ErrorKind::NotLowestScore => "not_lowest_score",
        }
    }

    fn from_name(s: &str) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.name() == s)
    }
}

/// The name of an outcome in the files (its code is `outcome as u8`).
pub fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Success => "success",
        Outcome::Failure => "failure",
        Outcome::Dropped => "dropped",
        Outcome::Ignored => "ignored",
        Outcome::Throttled => "throttled",
        Outcome::ClientError => "client_error",
    }
}

/// `Balancer::stats()` as written on a `stats` line ([`Stats`] keeps its per-outcome counts private).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StatsLine {
    /// `Stats::acquired`.
    pub acquired: u64,
    /// `Stats::rejected_all_busy`.
    pub rejected_all_busy: u64,
    /// `Stats::rejected_no_active`.
    pub rejected_no_active: u64,
    /// `Stats::released(o)` for each outcome, by code.
    pub released: [u64; 6],
    /// `Stats::released_stale`.
    pub released_stale: u64,
    /// `Stats::in_flight`.
    pub in_flight: u64,
    /// `Stats::active_nodes`.
    pub active_nodes: u32,
    /// `Stats::lame_duck_nodes`.
    pub lame_duck_nodes: u32,
    /// `Stats::waits`.
    pub waits: u64,
    /// `Stats::waits_granted`.
    pub waits_granted: u64,
    /// `Stats::waits_timed_out`.
    pub waits_timed_out: u64,
    /// `Stats::waits_cancelled`.
    pub waits_cancelled: u64,
    /// `Stats::waiting`.
    pub waiting: u64,
}

impl From<Stats> for StatsLine {
    fn from(s: Stats) -> StatsLine {
        StatsLine {
            acquired: s.acquired,
            rejected_all_busy: s.rejected_all_busy,
            rejected_no_active: s.rejected_no_active,
            released: Outcome::ALL.map(|o| s.released(o)),
            released_stale: s.released_stale,
            in_flight: s.in_flight,
            active_nodes: s.active_nodes,
            lame_duck_nodes: s.lame_duck_nodes,
            waits: s.waits,
            waits_granted: s.waits_granted,
            waits_timed_out: s.waits_timed_out,
            waits_cancelled: s.waits_cancelled,
            waiting: s.waiting,
        }
    }
}

/// One value of a `node` or `stats` line. Equality is exact: floats compare by their bits.
#[derive(Clone, Copy, Debug)]
pub enum Field {
    /// An unsigned integer (`u64`, or `u32` where the field is one).
    U(u64),
    /// A float (`f64`), compared bit for bit.
    F(f64),
    /// `true` or `false`.
    B(bool),
    /// `active` or `lame_duck`.
    State(NodeState),
}

impl PartialEq for Field {
    fn eq(&self, other: &Field) -> bool {
        match (self, other) {
            (Field::U(a), Field::U(b)) => a == b,
            (Field::F(a), Field::F(b)) => a.to_bits() == b.to_bits(),
            (Field::B(a), Field::B(b)) => a == b,
            (Field::State(a), Field::State(b)) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for Field {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Field::U(v) => write!(f, "{v}"),
            Field::F(v) => f.write_str(&float(v)),
            Field::B(v) => write!(f, "{v}"),
            Field::State(NodeState::Active) => f.write_str("active"),
            Field::State(NodeState::LameDuck) => f.write_str("lame_duck"),
        }
    }
}

/// The fields of a `node` line, in order.
pub const NODE_FIELDS: [&str; 20] = [
    "id",
    "state",
    "success_rate",
    "weight",
    "successes",
    "failures",
    "penalty",
    "limit",
    "in_flight",
    "window_finished",
    "window_succeeded",
    "sticky_finished",
    "sticky_succeeded",
    "has_data",
    "released.success",
    "released.failure",
    "released.dropped",
    "released.ignored",
    "released.throttled",
    "released.client_error",
];

/// The fields of a `stats` line, in order.
pub const STATS_FIELDS: [&str; 18] = [
    "acquired",
    "rejected_all_busy",
    "rejected_no_active",
    "released.success",
    "released.failure",
    "released.dropped",
    "released.ignored",
    "released.throttled",
    "released.client_error",
    "released_stale",
    "in_flight",
    "active_nodes",
    "lame_duck_nodes",
    "waits",
    "waits_granted",
    "waits_timed_out",
    "waits_cancelled",
    "waiting",
];

/// A snapshot's fields in [`NODE_FIELDS`] order.
pub fn node_fields(n: &NodeSnapshot) -> [Field; 20] {
    let r = n.by_outcome;
    [
        Field::U(n.id),
        Field::State(n.state),
        Field::F(n.success_rate),
        Field::F(n.weight),
        Field::F(n.successes),
        Field::F(n.failures),
        Field::F(n.penalty),
        Field::U(n.limit.into()),
        Field::U(n.in_flight.into()),
        Field::U(n.window_finished),
        Field::U(n.window_succeeded),
        Field::U(n.sticky_finished),
        Field::U(n.sticky_succeeded),
        Field::B(n.has_data),
        Field::U(r[0]),
        Field::U(r[1]),
        Field::U(r[2]),
        Field::U(r[3]),
        Field::U(r[4]),
        Field::U(r[5]),
    ]
}

/// Stats in [`STATS_FIELDS`] order.
pub fn stats_fields(s: &StatsLine) -> [Field; 18] {
    let r = s.released;
    [
        s.acquired,
        s.rejected_all_busy,
        s.rejected_no_active,
        r[0],
        r[1],
        r[2],
        r[3],
        r[4],
        r[5],
        s.released_stale,
        s.in_flight,
        s.active_nodes.into(),
        s.lame_duck_nodes.into(),
        s.waits,
        s.waits_granted,
        s.waits_timed_out,
        s.waits_cancelled,
        s.waiting,
    ]
    .map(Field::U)
}

/// A finite float as the files write it: the shortest decimal that reads back as exactly `x`
/// (Rust's `{:?}`), e.g. `0.1`, `1.0`, `2.5e-5`.
///
/// # Panics
/// On NaN or an infinity: the format has no spelling for them, and no valid balancer state holds one.
pub fn float(x: f64) -> String {
    assert!(x.is_finite(), "a trace cannot hold {x}");
    format!("{x:?}")
}

/// A finite `f32` (the decay model's costs and penalties), likewise.
fn float32(x: f32) -> String {
    assert!(x.is_finite(), "a trace cannot hold {x}");
    format!("{x:?}")
}

/// A problem in a trace's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// The line (1-based).
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

fn bad(line: usize, message: impl Into<String>) -> ParseError {
    ParseError {
        line,
        message: message.into(),
    }
}

/// Writes a trace in the format of `tests/vectors/README.md`.
///
/// # Panics
/// If a float is not finite or a line would exceed [`MAX_LINE`].
pub fn write(trace: &Trace) -> String {
    let mut out = String::new();
    let line = |out: &mut String, s: &str| {
        assert!(s.len() < MAX_LINE, "line too long: {s}");
        out.push_str(s);
        out.push('\n');
    };
    line(&mut out, MAGIC);
    for a in &trace.about {
        line(&mut out, format!("# {a}").trim_end_matches(' '));
    }
    for (k, v) in config::tokens(&trace.config) {
        line(&mut out, &format!("config {k}={v}"));
    }
    line(&mut out, &format!("capacity {}", trace.capacity));
    line(&mut out, &format!("rng {}", trace.seed));
    let mut steps = 0;
    for item in &trace.items {
        match item {
            Item::Reseed(seed) => line(&mut out, &format!("rng {seed}")),
            Item::Step(s) => {
                steps += 1;
                line(&mut out, &op_line(s));
                for n in &s.nodes {
                    line(&mut out, &join("node", &node_fields(n)));
                }
                line(&mut out, &join("stats", &stats_fields(&s.stats)));
            }
        }
    }
    line(&mut out, &format!("end {steps}"));
    out
}

fn join(kind: &str, fields: &[Field]) -> String {
    let mut s = String::from(kind);
    for f in fields {
        let _ = write!(s, " {f}");
    }
    s
}

fn answer_token(a: Answer) -> String {
    match a {
        Answer::Node(id) => id.to_string(),
        Answer::Nothing => "none".into(),
        Answer::Ok => "ok".into(),
        Answer::Err(k) => k.name().into(),
    }
}

fn op_line(s: &Step) -> String {
    let t = s.t;
    let a = answer_token(s.answer);
    match s.op {
        Op::Acquire { lease } => format!("acquire {t} L{lease} {a}"),
        Op::AcquireExcluding { lease, exclude } => {
            let ids: Vec<String> = exclude.ids().iter().map(u64::to_string).collect();
            let ids = if ids.is_empty() {
                "-".to_string()
            } else {
                ids.join(",")
            };
            format!("acquire_excluding {t} L{lease} {ids} {a}")
        }
        Op::Release {
            lease,
            outcome,
            load: None,
        } => format!(
            "release {t} L{lease} {} {} {a}",
            outcome as u8,
            outcome_name(outcome)
        ),
        Op::Release {
            lease,
            outcome,
            load: Some(load),
        } => format!(
            "release_loaded {t} L{lease} {} {} {load} {a}",
            outcome as u8,
            outcome_name(outcome)
        ),
        Op::Add { id } => format!("add {t} {id} {a}"),
        Op::Remove { id } => format!("remove {t} {id} {a}"),
        Op::LameDuck { id, on } => {
            format!("lame_duck {t} {id} {} {a}", if on { "on" } else { "off" })
        }
        Op::DueCheck { quiet_ns } => format!("due_check {t} {quiet_ns} {a}"),
        Op::ReportCheck { id, healthy } => format!("report_check {t} {id} {healthy} {a}"),
    }
}

/// Reads a trace written in the format of `tests/vectors/README.md`, checking its grammar and its
/// internal consistency (lease numbering, which answers each operation may have, the step count), not
/// what the balancer would answer: that is [`replay`]'s job.
pub fn parse(text: &str) -> Result<Trace, ParseError> {
    let lines = text
        .split_inclusive('\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l));
    let mut about = Vec::new();
    let mut config_tokens = Vec::new();
    let mut header: (Option<usize>, Option<u64>) = (None, None);
    let mut items = Vec::new();
    // Per lease number: the node its acquire expects, or None if it expects a refusal.
    let mut leases: Vec<Option<u64>> = Vec::new();
    let mut current: Option<Step> = None;
    let mut end = None;
    let mut first = true;
    for (n, raw) in lines {
        if raw.len() > MAX_LINE {
            return Err(bad(n, format!("longer than {MAX_LINE} bytes")));
        }
        let Some(l) = raw.strip_suffix('\n') else {
            return Err(bad(n, "the last line has no newline"));
        };
        if l.contains('\r') || l.contains('\t') {
            return Err(bad(
                n,
                "carriage return or tab (lines end in \\n; tokens are separated by one space)",
            ));
        }
        if first {
            if l != MAGIC {
                return Err(bad(n, format!("the first line must be `{MAGIC}`")));
            }
            first = false;
            continue;
        }
        if end.is_some() {
            return Err(bad(n, "text after the `end` line"));
        }
        if let Some(c) = l.strip_prefix('#') {
            if header.0.is_none() && config_tokens.is_empty() {
                about.push(c.strip_prefix(' ').unwrap_or(c).to_string());
            }
            continue;
        }
        if l.is_empty() {
            continue;
        }
        let tokens: Vec<&str> = l.split(' ').collect();
        if tokens.iter().any(|t| t.is_empty()) {
            return Err(bad(n, "tokens are separated by exactly one space"));
        }
        let kind = tokens[0];
        let args = &tokens[1..];
        // A step ends with its `stats` line; inside a step only `node` and `stats` lines may come.
        if let Some(step) = current.as_mut() {
            match kind {
                "node" => {
                    step.nodes.push(parse_node(n, args)?);
                    step.lines.nodes.push(n);
                    continue;
                }
                "stats" => {
                    step.stats = parse_stats(n, args)?;
                    step.lines.stats = n;
                    let done = current.take().expect("a step is open");
                    check_nodes(&done)?;
                    items.push(Item::Step(done));
                    continue;
                }
                _ => {
                    return Err(bad(
                        n,
                        format!(
                        "`{kind}` inside a step: a step's `node` lines end with one `stats` line"
                    ),
                    ))
                }
            }
        }
        let header_done = header.0.is_some() && header.1.is_some();
        match kind {
            "config" if header.0.is_none() => {
                if args.is_empty() {
                    return Err(bad(n, "`config` with no key=value token"));
                }
                for a in args {
                    let Some((k, v)) = a.split_once('=') else {
                        return Err(bad(n, format!("`{a}` is not key=value")));
                    };
                    config_tokens.push((k.to_string(), v.to_string(), n));
                }
            }
            "capacity" if header.0.is_none() => {
                let [c] = args else {
                    return Err(bad(n, "`capacity <n>`"));
                };
                header.0 = Some(
                    uint(n, "capacity", c)?
                        .try_into()
                        .map_err(|_| bad(n, "capacity too large"))?,
                );
            }
            "rng" if header.0.is_some() => {
                let [s] = args else {
                    return Err(bad(n, "`rng <seed>`"));
                };
                let seed = uint(n, "seed", s)?;
                if header.1.is_none() {
                    header.1 = Some(seed);
                } else {
                    items.push(Item::Reseed(seed));
                }
            }
            "end" if header_done => {
                let [c] = args else {
                    return Err(bad(n, "`end <steps>`"));
                };
                let steps = items.iter().filter(|i| matches!(i, Item::Step(_))).count();
                if uint(n, "steps", c)? != steps as u64 {
                    return Err(bad(n, format!("`end {c}` but the file has {steps} steps")));
                }
                end = Some(n);
            }
            "acquire" | "acquire_excluding" | "release" | "release_loaded" | "add" | "remove"
            | "lame_duck" | "due_check" | "report_check"
                if header_done =>
            {
                current = Some(parse_op(n, kind, args, &mut leases)?);
            }
            _ => {
                return Err(bad(
                    n,
                    format!(
                    "unexpected `{kind}` (order: {MAGIC}, config lines, capacity, rng, steps, end)"
                ),
                ))
            }
        }
    }
    if first {
        return Err(bad(1, "empty file"));
    }
    if current.is_some() {
        return Err(bad(
            text.lines().count(),
            "the last step has no `stats` line",
        ));
    }
    if end.is_none() {
        return Err(bad(text.lines().count(), "no `end` line (truncated file?)"));
    }
    let config = config::parse(config_tokens)?;
    Ok(Trace {
        about,
        config,
        capacity: header.0.expect("checked by `end`"),
        seed: header.1.expect("checked by `end`"),
        items,
    })
}

/// The ids on a step's `node` lines are distinct.
fn check_nodes(step: &Step) -> Result<(), ParseError> {
    for (i, a) in step.nodes.iter().enumerate() {
        if step.nodes[..i].iter().any(|b| b.id == a.id) {
            return Err(bad(
                step.lines.nodes[i],
                format!("node {} listed twice", a.id),
            ));
        }
    }
    Ok(())
}

fn uint(line: usize, what: &str, s: &str) -> Result<u64, ParseError> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return Err(bad(line, format!("{what}: `{s}` is not a decimal integer")));
    }
    s.parse()
        .map_err(|_| bad(line, format!("{what}: `{s}` is out of range")))
}

fn uint32(line: usize, what: &str, s: &str) -> Result<u32, ParseError> {
    uint(line, what, s)?
        .try_into()
        .map_err(|_| bad(line, format!("{what}: `{s}` is out of range for 32 bits")))
}

/// A float token: digits, `.`, `e`, `-`, `+` only (no `inf`, `nan` or hexadecimal), read with the
/// correctly rounding parser (as `strtod` is).
fn floating(line: usize, what: &str, s: &str) -> Result<f64, ParseError> {
    let ok = s.bytes().any(|b| b.is_ascii_digit())
        && s.bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'-' | b'+'));
    match s.parse::<f64>() {
        Ok(v) if ok && v.is_finite() => Ok(v),
        _ => Err(bad(
            line,
            format!("{what}: `{s}` is not a finite decimal float"),
        )),
    }
}

fn floating32(line: usize, what: &str, s: &str) -> Result<f32, ParseError> {
    floating(line, what, s)?;
    // Parsed again as an `f32` (`strtof`): through an `f64` would round twice.
    match s.parse::<f32>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(bad(
            line,
            format!("{what}: `{s}` is not a finite 32-bit float"),
        )),
    }
}

fn boolean(line: usize, what: &str, s: &str) -> Result<bool, ParseError> {
    match s {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(bad(line, format!("{what}: `{s}` is not true or false"))),
    }
}

fn parse_node(n: usize, args: &[&str]) -> Result<NodeSnapshot, ParseError> {
    let [id, state, rate, weight, s, f, pen, limit, inflight, wf, ws, sf, ss, data, r0, r1, r2, r3, r4, r5] =
        args
    else {
        return Err(bad(
            n,
            format!(
                "a node line has {} fields ({}), not {}",
                NODE_FIELDS.len(),
                NODE_FIELDS.join(" "),
                args.len()
            ),
        ));
    };
    let state = match *state {
        "active" => NodeState::Active,
        "lame_duck" => NodeState::LameDuck,
        other => {
            return Err(bad(
                n,
                format!("state: `{other}` is not active or lame_duck"),
            ))
        }
    };
    let mut by_outcome = [0; 6];
    for (k, (count, text)) in by_outcome
        .iter_mut()
        .zip([r0, r1, r2, r3, r4, r5])
        .enumerate()
    {
        *count = uint(n, NODE_FIELDS[14 + k], text)?;
    }
    Ok(NodeSnapshot {
        id: uint(n, "id", id)?,
        state,
        success_rate: floating(n, "success_rate", rate)?,
        weight: floating(n, "weight", weight)?,
        successes: floating(n, "successes", s)?,
        failures: floating(n, "failures", f)?,
        penalty: floating(n, "penalty", pen)?,
        limit: uint32(n, "limit", limit)?,
        in_flight: uint32(n, "in_flight", inflight)?,
        window_finished: uint(n, "window_finished", wf)?,
        window_succeeded: uint(n, "window_succeeded", ws)?,
        sticky_finished: uint(n, "sticky_finished", sf)?,
        sticky_succeeded: uint(n, "sticky_succeeded", ss)?,
        has_data: boolean(n, "has_data", data)?,
        by_outcome,
    })
}

fn parse_stats(n: usize, args: &[&str]) -> Result<StatsLine, ParseError> {
    if args.len() != STATS_FIELDS.len() {
        return Err(bad(
            n,
            format!(
                "a stats line has {} fields ({}), not {}",
                STATS_FIELDS.len(),
                STATS_FIELDS.join(" "),
                args.len()
            ),
        ));
    }
    let mut v = [0u64; STATS_FIELDS.len()];
    for (i, (a, name)) in args.iter().zip(STATS_FIELDS).enumerate() {
        v[i] = uint(n, name, a)?;
    }
    let small = |i: usize| -> Result<u32, ParseError> { uint32(n, STATS_FIELDS[i], args[i]) };
    Ok(StatsLine {
        acquired: v[0],
        rejected_all_busy: v[1],
        rejected_no_active: v[2],
        released: [v[3], v[4], v[5], v[6], v[7], v[8]],
        released_stale: v[9],
        in_flight: v[10],
        active_nodes: small(11)?,
        lame_duck_nodes: small(12)?,
        waits: v[13],
        waits_granted: v[14],
        waits_timed_out: v[15],
        waits_cancelled: v[16],
        waiting: v[17],
    })
}

/// An acquire's lease name, which must be the next number (`L<k>` for the k-th acquire).
fn next_lease(n: usize, s: &str, leases: &[Option<u64>]) -> Result<u32, ParseError> {
    let lease = lease_name(n, s)?;
    let next = leases.len() + 1;
    if lease as usize != next {
        return Err(bad(
            n,
            format!("the acquire number {next} must name L{next}, not L{lease}"),
        ));
    }
    Ok(lease)
}

/// An acquire's answer, its lease (if granted) kept for the releases that name it.
fn acquired(n: usize, a: &str, leases: &mut Vec<Option<u64>>) -> Result<Answer, ParseError> {
    use ErrorKind::*;
    let answer = parse_answer(n, a, &[NoActiveNodes, AllBusy], true)?;
    leases.push(match answer {
        Answer::Node(id) => Some(id),
        _ => None,
    });
    Ok(answer)
}

fn lease_name(n: usize, s: &str) -> Result<u32, ParseError> {
    let Some(num) = s.strip_prefix('L') else {
        return Err(bad(n, format!("`{s}` is not a lease name (L<number>)")));
    };
    let k = uint32(n, "lease", num)?;
    if k == 0 {
        return Err(bad(n, "lease numbers start at L1"));
    }
    Ok(k)
}

fn parse_answer(
    n: usize,
    s: &str,
    allowed: &[ErrorKind],
    node: bool,
) -> Result<Answer, ParseError> {
    if s.starts_with(|c: char| c.is_ascii_digit()) {
        if !node {
            return Err(bad(n, "only an acquire answers with a node id"));
        }
        return Ok(Answer::Node(uint(n, "node", s)?));
    }
    if s == "ok" && !node {
        return Ok(Answer::Ok);
    }
    match ErrorKind::from_name(s) {
        Some(k) if allowed.contains(&k) => Ok(Answer::Err(k)),
        _ => {
            let names: Vec<&str> = allowed.iter().map(|k| k.name()).collect();
            let first = if node { "a node id" } else { "ok" };
            Err(bad(
                n,
                format!(
                    "answer `{s}`: expected {first} or one of {}",
                    names.join(", ")
                ),
            ))
        }
    }
}

fn parse_op(
    n: usize,
    kind: &str,
    args: &[&str],
    leases: &mut Vec<Option<u64>>,
) -> Result<Step, ParseError> {
    use ErrorKind::*;
    let time = |s: &str| uint(n, "t", s);
    let (t, op, answer) = match (kind, args) {
        ("acquire_excluding", [t, lease, ids, a]) => {
            let lease = next_lease(n, lease, leases)?;
            let list: Vec<u64> = if *ids == "-" {
                Vec::new()
            } else {
                ids.split(',')
                    .map(|id| uint(n, "excluded id", id))
                    .collect::<Result<_, _>>()?
            };
            if list.is_empty() && *ids != "-" || list.len() > MAX_EXCLUDE {
                return Err(bad(n, format!("{ids}: 1 to {MAX_EXCLUDE} ids, or -")));
            }
            let answer = acquired(n, a, leases)?;
            let exclude = Exclude::new(&list);
            (time(t)?, Op::AcquireExcluding { lease, exclude }, answer)
        }
        ("acquire", [t, lease, a]) => {
            let lease = next_lease(n, lease, leases)?;
            let answer = acquired(n, a, leases)?;
            (time(t)?, Op::Acquire { lease }, answer)
        }
        ("release", [t, lease, code, name, a])
        | ("release_loaded", [t, lease, code, name, _, a]) => {
            let lease = lease_name(n, lease)?;
            match leases.get(lease as usize - 1) {
                Some(Some(_)) => {}
                Some(None) => return Err(bad(n, format!("L{lease}'s acquire expects no lease"))),
                None => return Err(bad(n, format!("L{lease} is not acquired yet"))),
            }
            let code = uint(n, "outcome code", code)?;
            let outcome = u8::try_from(code)
                .ok()
                .and_then(Outcome::from_code)
                .ok_or_else(|| bad(n, format!("{code} is no outcome code")))?;
            if *name != outcome_name(outcome) {
                return Err(bad(
                    n,
                    format!(
                        "outcome {code} is named {}, not {name}",
                        outcome_name(outcome)
                    ),
                ));
            }
            let load = match args {
                [_, _, _, _, load, _] => {
                    let p = uint(n, "load", load)?;
                    let p = u32::try_from(p)
                        .ok()
                        .filter(|&p| ServerLoad::from_permille(p).is_ok())
                        .ok_or_else(|| {
                            bad(
                                n,
                                format!(
                                    "load {p} is above {} thousandths",
                                    ServerLoad::MAX_PERMILLE
                                ),
                            )
                        })?;
                    Some(p)
                }
                _ => None,
            };
            let answer = parse_answer(n, a, &[InvalidLease, NodeRemoved], false)?;
            (
                time(t)?,
                Op::Release {
                    lease,
                    outcome,
                    load,
                },
                answer,
            )
        }
        ("add", [t, id, a]) => (
            time(t)?,
            Op::Add {
                id: uint(n, "id", id)?,
            },
            parse_answer(n, a, &[DuplicateId, CapacityFull], false)?,
        ),
        ("remove", [t, id, a]) => (
            time(t)?,
            Op::Remove {
                id: uint(n, "id", id)?,
            },
            parse_answer(n, a, &[UnknownId], false)?,
        ),
        ("lame_duck", [t, id, on, a]) => {
            let on = match *on {
                "on" => true,
                "off" => false,
                other => return Err(bad(n, format!("`{other}` is not on or off"))),
            };
            (
                time(t)?,
                Op::LameDuck {
                    id: uint(n, "id", id)?,
                    on,
                },
                parse_answer(n, a, &[UnknownId], false)?,
            )
        }
        ("due_check", [t, quiet, a]) => {
            let answer = if *a == "none" {
                Answer::Nothing
            } else {
                parse_answer(n, a, &[], true)?
            };
            (
                time(t)?,
                Op::DueCheck {
                    quiet_ns: uint(n, "quiet_ns", quiet)?,
                },
                answer,
            )
        }
        ("report_check", [t, id, healthy, a]) => {
            let healthy = match *healthy {
                "true" => true,
                "false" => false,
                other => return Err(bad(n, format!("`{other}` is not true or false"))),
            };
            (
                time(t)?,
                Op::ReportCheck {
                    id: uint(n, "id", id)?,
                    healthy,
                },
                parse_answer(n, a, &[UnknownId, NotLowestScore], false)?,
            )
        }
        _ => return Err(bad(n, format!("wrong number of fields for `{kind}`"))),
    };
    Ok(Step {
        t,
        op,
        answer,
        nodes: Vec::new(),
        stats: StatsLine::default(),
        lines: Lines {
            op: n,
            ..Lines::default()
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_round_trip_exactly() {
        for x in [
            0.0,
            -0.0,
            1.0,
            0.1,
            1.0 / 3.0,
            2.5e-300,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            1e16,
            0.9999999999999999,
        ] {
            let s = float(x);
            assert_eq!(floating(1, "x", &s).unwrap().to_bits(), x.to_bits(), "{s}");
        }
        for bad_token in ["inf", "NaN", "-inf", "0x1p3", "", "1e999", "."] {
            assert!(floating(1, "x", bad_token).is_err(), "{bad_token}");
        }
    }

    #[test]
    fn integers_are_plain_decimal() {
        assert_eq!(uint(1, "x", "18446744073709551615"), Ok(u64::MAX));
        for s in ["18446744073709551616", "-1", "+1", "01", "1.0", "", " 1"] {
            assert!(uint(1, "x", s).is_err(), "{s}");
        }
    }

    /// Each malformation of a valid trace is refused, at its line.
    #[test]
    fn malformed_traces_are_refused_at_their_line() {
        let spec = generate::specs()
            .into_iter()
            .find(|s| s.name == "edges-ewma")
            .unwrap();
        let text = write(&generate::generate(&spec));
        assert!(parse(&text).is_ok());
        let lines: Vec<&str> = text.lines().collect();
        let at = |pred: &dyn Fn(&str) -> bool| lines.iter().position(|l| pred(l)).unwrap();
        let edit = |i: usize, new: Option<&str>| {
            let mut v: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            match new {
                Some(n) => v[i] = n.to_string(),
                None => {
                    v.remove(i);
                }
            }
            v.join("\n") + "\n"
        };
        let cases: Vec<(usize, String)> = vec![
            // A file of a previous version (its node or stats lines are shorter): refused on its first
            // line.
            (0, edit(0, Some("weir-trace 2"))),
            (
                at(&|l| l.starts_with("config algorithm.health.half_life")),
                edit(
                    at(&|l| l.starts_with("config algorithm.health.half_life")),
                    Some("config algorithm.health.half_life=3 extra=1"),
                ),
            ),
            (
                at(&|l| l.starts_with("config seed=")),
                edit(
                    at(&|l| l.starts_with("config seed=")),
                    Some("config seed=-1"),
                ),
            ),
            (
                at(&|l| l.starts_with("acquire ")),
                edit(
                    at(&|l| l.starts_with("acquire ")),
                    Some("acquire 1000001000000 L2 no_active_nodes"),
                ),
            ),
            (
                at(&|l| l.starts_with("release ")),
                edit(
                    at(&|l| l.starts_with("release ")),
                    Some("release 1000001000000 L1 0 failure ok"),
                ),
            ),
            (
                at(&|l| l.starts_with("node ")),
                edit(
                    at(&|l| l.starts_with("node ")),
                    Some("node 1 active inf 1.0 0.0 0.0 0.0 2 0 0 0 0 0 false"),
                ),
            ),
            (
                at(&|l| l.starts_with("stats ")),
                edit(at(&|l| l.starts_with("stats ")), Some("stats 0 0")),
            ),
            (
                at(&|l| l.starts_with("add ")),
                edit(
                    at(&|l| l.starts_with("add ")),
                    Some("add 1000001000000 1  ok"),
                ),
            ),
            (lines.len() - 2, edit(lines.len() - 1, None)),
        ];
        for (k, (line, text)) in cases.into_iter().enumerate() {
            let e = parse(&text).expect_err(&format!("case {k} must be refused"));
            assert_eq!(e.line, line + 1, "case {k}: {e}");
        }
        // A key missing or unknown in the configuration.
        let i = at(&|l| l.starts_with("config max_waiters"));
        assert!(parse(&edit(i, None))
            .unwrap_err()
            .message
            .contains("max_waiters"));
        assert!(parse(&edit(i, Some("config max_waiter=0"))).is_err());
    }
}
