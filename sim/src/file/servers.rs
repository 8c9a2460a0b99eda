//! The servers of a file: names expanded (`names`, `name` with `count`), latency and status kinds with the
//! fields each takes, phases in time order, and the values a phase or endpoint leaves out taken from the
//! level above.

use std::collections::HashMap;
use std::ops::Range;

use super::convert::{
    at_least_one, fail, need, only, positive, positive_f64, probability, span, R,
};
use super::duration::{show, Dur};
use super::schema::{self as f, S};
use crate::model::{Behavior, Crash, Latency, Phase, ServerSpec, StatusFn};

/// The most servers a scenario may have.
pub const MAX_SERVERS: usize = 10_000;

/// The servers, `names`/`count` expanded, with each name's index.
pub(super) fn servers(list: &S<Vec<S<f::Server>>>) -> R<(Vec<ServerSpec>, HashMap<String, usize>)> {
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
            if out.len() == MAX_SERVERS {
                return fail(at, format!("more than {MAX_SERVERS} servers"));
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
            if *c.get_ref() == 0 || *c.get_ref() as usize > MAX_SERVERS {
                return fail(c.span(), format!("must be from 1 to {MAX_SERVERS}"));
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
