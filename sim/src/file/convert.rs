//! From a file as written ([`super::schema`]) to a [`Scenario`]: every rule the engine relies on is checked
//! here, and a broken one fails at the place in the file that breaks it.

use std::collections::HashMap;
use std::ops::Range;

use weir::backoff::{BackoffConfig, BackoffConfigError, Jitter, MAX_BACKOFF_NS};
use weir::overload::{ThrottleConfig, ThrottleConfigError};

use super::duration::{show, Dur, MAX};
use super::schema::{self as f, S};
use crate::model::{
    Action, Arrivals, Behavior, ClientSpec, Crash, Fault, JavaSeeds, Latency, Phase, Retries,
    RetryBackoff, RetryOn, Scenario, ServerSpec, Spacing, StatusFn, Subsetting, MIN, SEC,
};
use crate::scenarios::SEED;

/// A rule broken at `span` (byte offsets into the file).
#[derive(Debug)]
pub(super) struct Fail {
    pub span: Range<usize>,
    pub message: String,
}

type R<T> = Result<T, Fail>;

fn fail<T>(span: Range<usize>, message: impl Into<String>) -> R<T> {
    Err(Fail {
        span,
        message: message.into(),
    })
}

/// The most requests a file may offer in all: the engine keeps every request in memory.
pub const MAX_REQUESTS: u64 = 10_000_000;
/// The most chart buckets a run may have (`abort / bucket`).
pub const MAX_BUCKETS: u64 = 100_000;
/// The longest run (`abort`): 1,000 hours, the longest built-in scenario's. The engine keeps a per-second
/// series per server, as long as the run.
pub const MAX_ABORT: u64 = 1_000 * 60 * MIN;

/// The file's scenario, checked.
pub(super) fn scenario(file: f::File) -> R<Scenario> {
    let name = file.name.get_ref();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return fail(
            file.name.span(),
            format!("\"{name}\" is not a scenario name: use lowercase letters, digits and `_`"),
        );
    }
    let (servers, names) = servers(&file.servers)?;
    let clients = match &file.clients {
        Some(c) => clients(c, servers.len())?,
        None => ClientSpec::plain(1),
    };
    let mut arrivals = Vec::new();
    for stream in file.arrivals.get_ref() {
        arrivals.push(self::stream(stream, &clients)?);
    }
    if arrivals.is_empty() {
        return fail(
            file.arrivals.span(),
            "no request streams: give at least one [[arrivals]]",
        );
    }
    let requests: u64 = arrivals.iter().map(|a| a.count).sum();
    if requests > MAX_REQUESTS {
        return fail(
            file.arrivals.span(),
            format!("{requests} requests in all: at most {MAX_REQUESTS}"),
        );
    }
    let abort = match &file.abort {
        Some(a) if a.get_ref().0 > MAX_ABORT => {
            return fail(
                a.span(),
                format!(
                    "at most {} (the run keeps a series per second)",
                    show(MAX_ABORT)
                ),
            )
        }
        Some(a) => positive(a)?,
        None => 10 * MIN,
    };
    for (a, stream) in arrivals.iter().zip(file.arrivals.get_ref()) {
        let d = match a.spacing {
            Spacing::Fixed(d) | Spacing::Poisson(d) => u128::from(d),
        };
        let gaps = match a.spacing {
            Spacing::Fixed(_) => a.count.saturating_sub(1),
            Spacing::Poisson(_) => a.count,
        };
        let end = u128::from(a.start) + d * u128::from(gaps);
        if end > u128::from(abort) {
            let why = if file.abort.is_some() {
                "`abort`"
            } else {
                "the default `abort`"
            };
            return fail(
                stream.span(),
                format!(
                    "the stream's last request is due at {}, after {why} ({}): the run would stop \
                     before its load ends",
                    show(u64::try_from(end).unwrap_or(u64::MAX)),
                    show(abort)
                ),
            );
        }
    }
    let bucket = match &file.bucket {
        Some(b) => positive(b)?,
        None => SEC,
    };
    if abort / bucket > MAX_BUCKETS {
        let at = file.bucket.as_ref().map_or(file.name.span(), S::span);
        return fail(
            at,
            format!(
                "{} buckets of {} until `abort` ({}): at most {MAX_BUCKETS}",
                abort / bucket,
                show(bucket),
                show(abort)
            ),
        );
    }
    let mut present: Vec<bool> = servers.iter().map(|s| s.present).collect();
    if !present.contains(&true) {
        return fail(
            file.servers.span(),
            "no server is present at the start: every one has `present = false`",
        );
    }
    let mut actions = Vec::new();
    let mut last = 0;
    for a in &file.actions {
        let (t, action) = self::action(a, &names)?;
        if t < last {
            return fail(
                a.get_ref().at.span(),
                format!(
                    "actions must be in time order: this one is before the previous one ({})",
                    show(last)
                ),
            );
        }
        last = t;
        match action {
            Action::Add(i) if present[i] => {
                return fail(
                    a.span(),
                    format!(
                    "`{}` is present at {} already: only an absent or removed server can be added",
                    servers[i].name,
                    show(t)
                ),
                )
            }
            Action::Remove(i) if !present[i] => {
                return fail(
                    a.span(),
                    format!(
                        "`{}` is not present at {}: it cannot be removed",
                        servers[i].name,
                        show(t)
                    ),
                )
            }
            Action::Add(i) | Action::Remove(i) => present[i] = matches!(action, Action::Add(_)),
            Action::Drain(..) => {}
        }
        actions.push((t, action));
    }
    let mut faults = Vec::new();
    for fault in &file.faults {
        let ft = fault.get_ref();
        let server = match &ft.server {
            Some(n) => Some(server_index(n, &names)?),
            None => None,
        };
        let (from, to) = (ft.from.get_ref().0, ft.to.get_ref().0);
        if to <= from {
            return fail(
                ft.to.span(),
                format!("a fault must end after it starts ({})", show(from)),
            );
        }
        faults.push(Fault { server, from, to });
    }
    let not_comparable = match &file.not_comparable {
        Some(why) if why.get_ref().trim().is_empty() => {
            return fail(
                why.span(),
                "say why the policies cannot be compared, or leave it out",
            )
        }
        other => other.as_ref().map(|w| w.get_ref().clone()),
    };
    let java = file.java.as_ref().map(|j| match j.get_ref() {
        f::Java::Dialogue => JavaSeeds::DIALOGUE,
        f::Java::Seeds(s) => JavaSeeds {
            shared: s.shared,
            chooser: s.chooser,
            server: s.server,
        },
    });
    Ok(Scenario {
        name: name.clone(),
        about: file.about,
        servers,
        clients,
        arrivals,
        actions,
        abort,
        bucket,
        seed: file.seed.map_or(SEED, S::into_inner),
        java,
        not_comparable,
        faults,
        at_capacity: file.at_capacity,
    })
}

/// The servers, `names`/`count` expanded, with each name's index.
fn servers(list: &S<Vec<S<f::Server>>>) -> R<(Vec<ServerSpec>, HashMap<String, usize>)> {
    let mut out: Vec<ServerSpec> = Vec::new();
    let mut names = HashMap::new();
    if list.get_ref().is_empty() {
        return fail(list.span(), "no servers: give at least one [[servers]]");
    }
    for s in list.get_ref() {
        let spec = server(s)?;
        for (name, at) in server_names(s)? {
            if !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
                || name.is_empty()
            {
                return fail(
                    at,
                    format!(
                        "\"{name}\" is not a server name: use letters, digits, `_`, `-` and `.`"
                    ),
                );
            }
            if names.insert(name.clone(), out.len()).is_some() {
                return fail(at, format!("a server is already named `{name}`"));
            }
            out.push(ServerSpec {
                name,
                ..spec.clone()
            });
        }
    }
    Ok((out, names))
}

/// A `[[servers]]` entry's names: `name`, `names`, or `name` with `count` (`b0`, `b1`, ...).
fn server_names(s: &S<f::Server>) -> R<Vec<(String, Range<usize>)>> {
    let t = s.get_ref();
    match (&t.name, &t.names, &t.count) {
        (Some(n), None, None) => Ok(vec![(n.get_ref().clone(), n.span())]),
        (Some(n), None, Some(c)) => {
            if *c.get_ref() == 0 {
                return fail(c.span(), "must be at least 1");
            }
            Ok((0..*c.get_ref())
                .map(|i| (format!("{}{i}", n.get_ref()), n.span()))
                .collect())
        }
        (None, Some(list), None) => {
            if list.get_ref().is_empty() {
                return fail(list.span(), "no names");
            }
            Ok(list
                .get_ref()
                .iter()
                .map(|n| (n.get_ref().clone(), n.span()))
                .collect())
        }
        (None, None, _) => fail(s.span(), "a server needs `name` (or `names`)"),
        (Some(_), Some(list), _) => fail(list.span(), "give `name` or `names`, not both"),
        (None, Some(_), Some(c)) => fail(
            c.span(),
            "`count` goes with `name` (names `name0`, `name1`, ...), not with `names`",
        ),
    }
}

/// One server's behaviour over time and its other properties (its name is set by the caller).
fn server(s: &S<f::Server>) -> R<ServerSpec> {
    let t = s.get_ref();
    let top = Inherit {
        latency: t.latency.as_ref().map(latency).transpose()?,
        status: t.status.as_ref().map(status).transpose()?,
    };
    let mut phases = vec![Phase {
        from: 0,
        endpoints: behaviors(&top, &top, t.endpoints.as_ref(), s.span())?,
    }];
    for p in &t.phases {
        let pt = p.get_ref();
        let from = pt.from.get_ref().0;
        let previous = phases.last().map_or(0, |q| q.from);
        if from <= previous {
            return fail(
                pt.from.span(),
                if previous == 0 {
                    "a phase starts after 0 (the server's own latency and status are its behaviour \
                     from 0)"
                        .to_string()
                } else {
                    format!(
                        "phases must be in time order: this one starts at or before the previous \
                         one ({})",
                        show(previous)
                    )
                },
            );
        }
        let here = Inherit {
            latency: pt.latency.as_ref().map(latency).transpose()?,
            status: pt.status.as_ref().map(status).transpose()?,
        };
        phases.push(Phase {
            from,
            endpoints: behaviors(&here, &top, pt.endpoints.as_ref(), p.span())?,
        });
    }
    let slowness = match &t.slowness {
        Some(x) if !(x.get_ref().is_finite() && *x.get_ref() > 0.0) => {
            return fail(
                x.span(),
                "must be a positive number (1 = nominal, 2 = half as fast)",
            )
        }
        Some(x) => *x.get_ref(),
        None => 1.0,
    };
    let crash = match &t.crash {
        Some(c) => {
            let c = c.get_ref();
            Some(Crash {
                active_above: *c.active_above.get_ref(),
                sustained: c.sustained.get_ref().0,
                down_for: positive(&c.down_for)?,
            })
        }
        None => None,
    };
    let shed_above = match &t.shed_above {
        Some(n) => Some(at_least_one(n)?),
        None => None,
    };
    Ok(ServerSpec {
        name: String::new(),
        phases,
        slowness,
        crash,
        present: t.present.unwrap_or(true),
        shed_above,
    })
}

/// A level's `latency` and `status`, which the levels below take when they leave one out.
struct Inherit {
    latency: Option<Latency>,
    status: Option<StatusFn>,
}

/// A phase's behaviours: one per `endpoints` entry, else one for every endpoint. A value left out is
/// the phase's, then the server's; a status left out everywhere is 200.
fn behaviors(
    phase: &Inherit,
    server: &Inherit,
    endpoints: Option<&S<Vec<S<f::Endpoint>>>>,
    at: Range<usize>,
) -> R<Vec<Behavior>> {
    let pick = |latency: Option<Latency>, status: Option<StatusFn>, at: Range<usize>| {
        let Some(latency) = latency.or(phase.latency).or(server.latency) else {
            return fail(
                at,
                "no `latency`: give one here or on the server (a status alone needs one too)",
            );
        };
        Ok(Behavior {
            latency,
            status: status
                .or(phase.status)
                .or(server.status)
                .unwrap_or(StatusFn::Fixed(200)),
        })
    };
    let Some(list) = endpoints else {
        return Ok(vec![pick(None, None, at)?]);
    };
    if list.get_ref().is_empty() {
        return fail(
            list.span(),
            "no endpoints: leave `endpoints` out, or give at least one",
        );
    }
    list.get_ref()
        .iter()
        .map(|e| {
            let et = e.get_ref();
            pick(
                et.latency.as_ref().map(latency).transpose()?,
                et.status.as_ref().map(status).transpose()?,
                e.span(),
            )
        })
        .collect()
}

/// Checks that a `kind`'s table gives only the fields the kind takes: `fields` are every field with
/// where it is written, `takes` those of this kind.
fn only(what: &str, kind: &str, fields: &[(&str, Option<Range<usize>>)], takes: &[&str]) -> R<()> {
    for (field, at) in fields {
        if let Some(at) = at {
            if !takes.contains(field) {
                let list = if takes.is_empty() {
                    "no other fields".to_string()
                } else {
                    takes
                        .iter()
                        .map(|t| format!("`{t}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                return fail(
                    at.clone(),
                    format!(
                        "`{field}` does not apply to a {what} of kind \"{kind}\" (it takes {list})"
                    ),
                );
            }
        }
    }
    Ok(())
}

/// A field a kind needs.
fn need<'a, T>(
    value: &'a Option<S<T>>,
    field: &str,
    what: &str,
    kind: &str,
    table: Range<usize>,
) -> R<&'a S<T>> {
    match value {
        Some(v) => Ok(v),
        None => fail(
            table,
            format!("a {what} of kind \"{kind}\" needs `{field}`"),
        ),
    }
}

fn span<T>(v: &Option<S<T>>) -> Option<Range<usize>> {
    v.as_ref().map(S::span)
}

fn latency(l: &S<f::Latency>) -> R<Latency> {
    let t = match l.get_ref() {
        f::Latency::Fixed(ns) => return Ok(Latency::Fixed(*ns)),
        f::Latency::Never => return Ok(Latency::Never),
        f::Latency::Table(t) => t,
    };
    let kind = t.kind.get_ref().as_str();
    let fields = [
        ("time", span(&t.time)),
        ("base", span(&t.base)),
        ("capacity", span(&t.capacity)),
        ("low", span(&t.low)),
        ("high", span(&t.high)),
        ("median", span(&t.median)),
        ("sigma", span(&t.sigma)),
        ("workers", span(&t.workers)),
    ];
    let at = l.span();
    let need_dur = |v: &Option<S<Dur>>, field| {
        need(v, field, "latency", kind, at.clone()).map(|d| d.get_ref().0)
    };
    Ok(match kind {
        "fixed" => {
            only("latency", kind, &fields, &["time"])?;
            Latency::Fixed(need_dur(&t.time, "time")?)
        }
        "never" => {
            only("latency", kind, &fields, &[])?;
            Latency::Never
        }
        "linear" => {
            only("latency", kind, &fields, &["base", "capacity"])?;
            Latency::Linear {
                base: need_dur(&t.base, "base")?,
                capacity: at_least_one(need(
                    &t.capacity,
                    "capacity",
                    "latency",
                    kind,
                    at.clone(),
                )?)?,
            }
        }
        "uniform" => {
            only("latency", kind, &fields, &["low", "high"])?;
            let (low, high) = (need_dur(&t.low, "low")?, need_dur(&t.high, "high")?);
            if high < low {
                return fail(
                    span(&t.high).unwrap_or(at),
                    format!("`high` ({}) is below `low` ({})", show(high), show(low)),
                );
            }
            Latency::Uniform { low, high }
        }
        "log_normal" => {
            only("latency", kind, &fields, &["median", "sigma"])?;
            Latency::LogNormal {
                median: need_dur(&t.median, "median")?,
                sigma: sigma(need(&t.sigma, "sigma", "latency", kind, at.clone())?)?,
            }
        }
        "queue" => {
            only("latency", kind, &fields, &["workers", "median", "sigma"])?;
            Latency::Queue {
                workers: at_least_one(need(&t.workers, "workers", "latency", kind, at.clone())?)?,
                median: need_dur(&t.median, "median")?,
                sigma: t.sigma.as_ref().map(sigma).transpose()?.unwrap_or(0.0),
            }
        }
        other => {
            return fail(
                t.kind.span(),
                format!(
                    "\"{other}\" is not a latency kind: fixed, linear, uniform, log_normal, queue \
                     or never"
                ),
            )
        }
    })
}

fn sigma(s: &S<f64>) -> R<f64> {
    let v = *s.get_ref();
    if v.is_finite() && v >= 0.0 {
        Ok(v)
    } else {
        fail(s.span(), "must be a finite number at least 0")
    }
}

fn code(c: &S<i64>) -> R<u16> {
    match u16::try_from(*c.get_ref()) {
        Ok(code @ 100..=599) => Ok(code),
        _ => fail(
            c.span(),
            format!("{} is not an HTTP status (100 to 599)", c.get_ref()),
        ),
    }
}

fn status(s: &S<f::Status>) -> R<StatusFn> {
    let t = match s.get_ref() {
        f::Status::Code(n) => return code(&S::new(s.span(), *n)).map(StatusFn::Fixed),
        f::Status::Refuse => return Ok(StatusFn::Refuse),
        f::Status::Table(t) => t,
    };
    let kind = t.kind.get_ref().as_str();
    let fields = [
        ("code", span(&t.code)),
        ("p", span(&t.p)),
        ("capacity", span(&t.capacity)),
        ("per_sec", span(&t.per_sec)),
    ];
    let at = s.span();
    let need_code = || code(need(&t.code, "code", "status", kind, at.clone())?);
    Ok(match kind {
        "fixed" => {
            only("status", kind, &fields, &["code"])?;
            StatusFn::Fixed(need_code()?)
        }
        "refuse" => {
            only("status", kind, &fields, &[])?;
            StatusFn::Refuse
        }
        "error_rate" => {
            only("status", kind, &fields, &["code", "p"])?;
            StatusFn::ErrorRate {
                code: need_code()?,
                p: probability(need(&t.p, "p", "status", kind, at.clone())?)?,
            }
        }
        "above_capacity" => {
            only("status", kind, &fields, &["code", "capacity"])?;
            StatusFn::AboveCapacity {
                code: need_code()?,
                capacity: *need(&t.capacity, "capacity", "status", kind, at.clone())?.get_ref(),
            }
        }
        "one_minute_rate" => {
            only("status", kind, &fields, &["per_sec"])?;
            let r = need(&t.per_sec, "per_sec", "status", kind, at.clone())?;
            StatusFn::OneMinuteRate {
                per_sec: positive_f64(r)?,
            }
        }
        other => {
            return fail(
                t.kind.span(),
                format!(
                    "\"{other}\" is not a status kind: fixed, refuse, error_rate, above_capacity \
                     or one_minute_rate"
                ),
            )
        }
    })
}

fn probability(p: &S<f64>) -> R<f64> {
    let v = *p.get_ref();
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        fail(p.span(), format!("{v} is not a probability (0 to 1)"))
    }
}

fn positive_f64(x: &S<f64>) -> R<f64> {
    let v = *x.get_ref();
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        fail(x.span(), format!("{v}: must be a positive number"))
    }
}

fn positive(d: &S<Dur>) -> R<u64> {
    match d.get_ref().0 {
        0 => fail(d.span(), "must be longer than 0"),
        ns => Ok(ns),
    }
}

fn at_least_one<T: Copy + Into<u64>>(n: &S<T>) -> R<T> {
    if (*n.get_ref()).into() == 0 {
        fail(n.span(), "must be at least 1")
    } else {
        Ok(*n.get_ref())
    }
}

fn clients(c: &S<f::Clients>, servers: usize) -> R<ClientSpec> {
    let t = c.get_ref();
    let count = |v: &Option<S<usize>>| match v {
        Some(n) if *n.get_ref() == 0 => fail(n.span(), "must be at least 1"),
        Some(n) => Ok(*n.get_ref()),
        None => Ok(1),
    };
    let subset = match &t.subset {
        None => Subsetting::None,
        Some(s) => {
            let st = s.get_ref();
            let size = *st.size.get_ref();
            if size == 0 || size > servers {
                return fail(
                    st.size.span(),
                    format!("a subset has 1 to {servers} servers (the scenario's)"),
                );
            }
            match st.kind.get_ref().as_str() {
                "deterministic" => Subsetting::Deterministic(size),
                "random" => Subsetting::Random(size),
                other => {
                    return fail(
                        st.kind.span(),
                        format!("\"{other}\" is not a subsetting: deterministic or random"),
                    )
                }
            }
        }
    };
    Ok(ClientSpec {
        count: count(&t.count)?,
        endpoints: count(&t.endpoints)?,
        sticky: t.sticky,
        timeout: t.timeout.as_ref().map(positive).transpose()?,
        deadline: t.deadline.as_ref().map(positive).transpose()?,
        retries: t.retries.as_ref().map(retries).transpose()?,
        subset,
    })
}

fn retries(r: &S<f::Retries>) -> R<Retries> {
    let t = r.get_ref();
    let on = match (t.on.get_ref().as_str(), &t.safe_method) {
        ("retryable", None) => RetryOn::Retryable,
        ("retryable", Some(s)) => {
            return fail(s.span(), "`safe_method` goes with on = \"dialogue\" only")
        }
        ("dialogue", safe) => RetryOn::Dialogue {
            safe_method: safe.as_ref().is_some_and(|s| *s.get_ref()),
        },
        (other, _) => {
            return fail(
                t.on.span(),
                format!("\"{other}\" is not a retry rule: retryable or dialogue"),
            )
        }
    };
    let max = *t.max.get_ref();
    Ok(Retries {
        max,
        backoff: backoff(&t.backoff, max)?,
        budget: t.budget.as_ref().map(budget).transpose()?,
        on,
    })
}

fn backoff(b: &S<f::Backoff>, retries: u32) -> R<RetryBackoff> {
    let t = b.get_ref();
    let kind = t.kind.get_ref().as_str();
    let fields = [
        ("slot", span(&t.slot)),
        ("initial", span(&t.initial)),
        ("max", span(&t.max)),
        ("up_multiplier", span(&t.up_multiplier)),
        ("down_multiplier", span(&t.down_multiplier)),
        ("down_threshold", span(&t.down_threshold)),
        ("jitter", span(&t.jitter)),
    ];
    match kind {
        "exponential" => {
            only("backoff", kind, &fields, &["slot"])?;
            let slot = need(&t.slot, "slot", "backoff", kind, b.span())?;
            // The engine's longest delay is slot × 2^(retries − 1), the exponent capped at 30.
            let longest = u128::from(slot.get_ref().0) << retries.clamp(1, 31).saturating_sub(1);
            if longest > u128::from(MAX) {
                return fail(
                    slot.span(),
                    format!("slot × 2^(max − 1) must be at most {}", show(MAX)),
                );
            }
            Ok(RetryBackoff::Exponential {
                slot: slot.get_ref().0,
            })
        }
        "responsive" => {
            only(
                "backoff",
                kind,
                &fields,
                &[
                    "initial",
                    "max",
                    "up_multiplier",
                    "down_multiplier",
                    "down_threshold",
                    "jitter",
                ],
            )?;
            let d = BackoffConfig::default();
            let jitter = match &t.jitter {
                None => d.jitter,
                Some(j) => match j.get_ref() {
                    f::Jitter::Named(n) => match n.as_str() {
                        "none" => Jitter::None,
                        "full" => Jitter::Full,
                        "equal" => Jitter::Equal,
                        "decorrelated" => Jitter::Decorrelated,
                        other => {
                            return fail(
                                j.span(),
                                format!(
                                    "\"{other}\" is not a jitter: none, full, equal, \
                                     decorrelated or {{ factor, max }}"
                                ),
                            )
                        }
                    },
                    f::Jitter::Proportional(p) => Jitter::Proportional {
                        factor: *p.factor.get_ref(),
                        max_ns: p.max.get_ref().0,
                    },
                },
            };
            let c = BackoffConfig {
                initial_ns: t.initial.as_ref().map_or(d.initial_ns, |v| v.get_ref().0),
                max_ns: t.max.as_ref().map_or(d.max_ns, |v| v.get_ref().0),
                up_multiplier: t
                    .up_multiplier
                    .as_ref()
                    .map_or(d.up_multiplier, |v| *v.get_ref()),
                down_multiplier: t
                    .down_multiplier
                    .as_ref()
                    .map_or(d.down_multiplier, |v| *v.get_ref()),
                down_threshold: t
                    .down_threshold
                    .as_ref()
                    .map_or(d.down_threshold, |v| *v.get_ref()),
                jitter,
            };
            match c.validate() {
                Ok(()) => Ok(RetryBackoff::Responsive(c)),
                Err(e) => {
                    let (field, message) = match e {
                        BackoffConfigError::Initial => (
                            span(&t.initial),
                            "`initial` must be between 1 ns and `max`".to_string(),
                        ),
                        BackoffConfigError::Max => (
                            span(&t.max),
                            format!("`max` must be between 1 ns and {}", show(MAX_BACKOFF_NS)),
                        ),
                        BackoffConfigError::UpMultiplier => (
                            span(&t.up_multiplier),
                            "`up_multiplier` must be finite and at least 1".to_string(),
                        ),
                        BackoffConfigError::DownMultiplier => (
                            span(&t.down_multiplier),
                            "`down_multiplier` must be above 0 and at most 1".to_string(),
                        ),
                        BackoffConfigError::DownThreshold => (
                            span(&t.down_threshold),
                            "`down_threshold` must be at least 1".to_string(),
                        ),
                        BackoffConfigError::JitterFactor => (
                            span(&t.jitter),
                            "the jitter's `factor` must be between 0 and 1".to_string(),
                        ),
                        other => (None, other.to_string()),
                    };
                    fail(field.unwrap_or(b.span()), message)
                }
            }
        }
        other => fail(
            t.kind.span(),
            format!("\"{other}\" is not a backoff kind: exponential or responsive"),
        ),
    }
}

fn budget(b: &S<f::Budget>) -> R<ThrottleConfig> {
    let t = b.get_ref();
    let d = ThrottleConfig::default();
    let c = ThrottleConfig {
        window_ns: t.window.as_ref().map_or(d.window_ns, |v| v.get_ref().0),
        buckets: t.buckets.as_ref().map_or(d.buckets, |v| *v.get_ref()),
        k: t.k.as_ref().map_or(d.k, |v| *v.get_ref()),
        max_rejection: t
            .max_rejection
            .as_ref()
            .map_or(d.max_rejection, |v| *v.get_ref()),
        retry_ratio: t
            .retry_ratio
            .as_ref()
            .map_or(d.retry_ratio, |v| *v.get_ref()),
    };
    match c.validate() {
        Ok(()) => Ok(c),
        Err(e) => {
            let (field, message) = match e {
                ThrottleConfigError::Buckets => (
                    span(&t.buckets),
                    format!(
                        "`buckets` must be between 1 and {}",
                        weir::overload::MAX_WINDOW_BUCKETS
                    ),
                ),
                ThrottleConfigError::Window => (
                    span(&t.window),
                    "`window` must be at least 1 ns per bucket".to_string(),
                ),
                ThrottleConfigError::K => {
                    (span(&t.k), "`k` must be finite and at least 1".to_string())
                }
                ThrottleConfigError::MaxRejection => (
                    span(&t.max_rejection),
                    "`max_rejection` must be between 0 and 1".to_string(),
                ),
                ThrottleConfigError::RetryRatio => (
                    span(&t.retry_ratio),
                    "`retry_ratio` must be between 0 and 1".to_string(),
                ),
                other => (None, other.to_string()),
            };
            fail(field.unwrap_or(b.span()), message)
        }
    }
}

/// One request stream. A rate and a duration give dialogue's arithmetic ([`Arrivals::steady`]): a whole
/// number of nanoseconds between requests, then `duration / spacing` requests.
fn stream(s: &S<f::Stream>, clients: &ClientSpec) -> R<Arrivals> {
    let t = s.get_ref();
    let poisson = match t.kind.as_ref().map(|k| (k.get_ref().as_str(), k.span())) {
        None | Some(("steady", _)) => false,
        Some(("poisson", _)) => true,
        Some((other, at)) => {
            return fail(
                at,
                format!("\"{other}\" is not a stream kind: steady or poisson"),
            )
        }
    };
    let spacing = match (&t.rps, &t.spacing) {
        (Some(rps), None) => {
            let v = positive_f64(rps)?;
            if v > SEC as f64 {
                return fail(rps.span(), "at most 1e9 (one request per nanosecond)");
            }
            // The model's own arithmetic, so that a file and code agree to the nanosecond.
            match Arrivals::steady(v, 0).spacing {
                Spacing::Fixed(d) | Spacing::Poisson(d) => d,
            }
        }
        (None, Some(d)) => positive(d)?,
        (Some(_), Some(d)) => return fail(d.span(), "give `rps` or `spacing`, not both"),
        (None, None) => return fail(s.span(), "a stream needs `rps` or `spacing`"),
    };
    let count = match (&t.duration, &t.count) {
        (Some(d), None) => {
            let n = positive(d)? / spacing;
            if n == 0 {
                return fail(
                    d.span(),
                    format!("shorter than one spacing ({}): no requests", show(spacing)),
                );
            }
            n
        }
        (None, Some(n)) => at_least_one(n)?,
        (Some(_), Some(n)) => return fail(n.span(), "give `duration` or `count`, not both"),
        (None, None) => return fail(s.span(), "a stream needs `duration` or `count`"),
    };
    let client = match &t.client {
        Some(c) if *c.get_ref() >= clients.count => {
            return fail(
                c.span(),
                format!(
                    "there is no client {} (clients are numbered 0 to {})",
                    c.get_ref(),
                    clients.count - 1
                ),
            )
        }
        Some(c) => Some(*c.get_ref()),
        None => None,
    };
    let heavy = match &t.heavy {
        Some(h) => {
            let h = h.get_ref();
            Some((probability(&h.fraction)?, positive_f64(&h.cost)?))
        }
        None => None,
    };
    Ok(Arrivals {
        start: t.start.as_ref().map_or(0, |d| d.get_ref().0),
        count,
        spacing: if poisson {
            Spacing::Poisson(spacing)
        } else {
            Spacing::Fixed(spacing)
        },
        client,
        bad: t.bad.as_ref().map(probability).transpose()?.unwrap_or(0.0),
        heavy,
    })
}

fn server_index(name: &S<String>, names: &HashMap<String, usize>) -> R<usize> {
    match names.get(name.get_ref()) {
        Some(&i) => Ok(i),
        None => {
            let mut known: Vec<&str> = names.keys().map(String::as_str).collect();
            known.sort_unstable();
            let shown = if known.len() > 12 {
                format!("{}, ...", known[..12].join(", "))
            } else {
                known.join(", ")
            };
            fail(
                name.span(),
                format!(
                    "no server is named `{}` (the servers: {shown})",
                    name.get_ref()
                ),
            )
        }
    }
}

fn action(a: &S<f::Action>, names: &HashMap<String, usize>) -> R<(u64, Action)> {
    let t = a.get_ref();
    let given: Vec<(&str, &S<String>)> = [
        ("add", &t.add),
        ("remove", &t.remove),
        ("drain", &t.drain),
        ("undrain", &t.undrain),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| (k, v)))
    .collect();
    let [(verb, name)] = given[..] else {
        return fail(
            a.span(),
            "an action is exactly one of `add`, `remove`, `drain` or `undrain`, with a \
             server's name",
        );
    };
    let i = server_index(name, names)?;
    let action = match verb {
        "add" => Action::Add(i),
        "remove" => Action::Remove(i),
        "drain" => Action::Drain(i, true),
        _ => Action::Drain(i, false),
    };
    Ok((t.at.get_ref().0, action))
}
