//! From a file as written ([`super::schema`]) to a [`Scenario`]: every rule the engine relies on is checked
//! (here, in `servers.rs` and in `clients.rs`), and a broken one fails at the place in the file that breaks
//! it. This file holds the scenario as a whole, its streams, actions and faults, and the checks the others
//! share.

use std::collections::HashMap;
use std::ops::Range;

use super::clients::clients;
use super::duration::{show, Dur};
use super::schema::{self as f, S};
use super::servers::servers;
use crate::model::{Action, Arrivals, ClientSpec, Fault, JavaSeeds, Scenario, Spacing, MIN, SEC};
use crate::scenarios::SEED;

/// A rule broken at `span` (byte offsets into the file).
#[derive(Debug)]
pub(super) struct Fail {
    pub span: Range<usize>,
    pub message: String,
}

pub(super) type R<T> = Result<T, Fail>;

pub(super) fn fail<T>(span: Range<usize>, message: impl Into<String>) -> R<T> {
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

/// Checks that a `kind`'s table gives only the fields the kind takes: `fields` are every field with
/// where it is written, `takes` those of this kind.
pub(super) fn only(
    what: &str,
    kind: &str,
    fields: &[(&str, Option<Range<usize>>)],
    takes: &[&str],
) -> R<()> {
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
pub(super) fn need<'a, T>(
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

pub(super) fn span<T>(v: &Option<S<T>>) -> Option<Range<usize>> {
    v.as_ref().map(S::span)
}

/// The value given, or `default`.
pub(super) fn or<T: Copy>(v: &Option<S<T>>, default: T) -> T {
    v.as_ref().map_or(default, |v| *v.get_ref())
}

/// The duration given, or `default`.
pub(super) fn ns_or(v: &Option<S<Dur>>, default: u64) -> u64 {
    v.as_ref().map_or(default, |v| v.get_ref().0)
}

pub(super) fn probability(p: &S<f64>) -> R<f64> {
    let v = *p.get_ref();
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        fail(p.span(), format!("{v} is not a probability (0 to 1)"))
    }
}

pub(super) fn positive_f64(x: &S<f64>) -> R<f64> {
    let v = *x.get_ref();
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        fail(x.span(), format!("{v}: must be a positive number"))
    }
}

pub(super) fn positive(d: &S<Dur>) -> R<u64> {
    match d.get_ref().0 {
        0 => fail(d.span(), "must be longer than 0"),
        ns => Ok(ns),
    }
}

pub(super) fn at_least_one<T: Copy + Into<u64>>(n: &S<T>) -> R<T> {
    if (*n.get_ref()).into() == 0 {
        fail(n.span(), "must be at least 1")
    } else {
        Ok(*n.get_ref())
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
        start: ns_or(&t.start, 0),
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
