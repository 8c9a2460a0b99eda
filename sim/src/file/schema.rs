//! A scenario file as written: serde structs that mirror its tables one to one, every value that is
//! checked after reading kept with its place in the file ([`Spanned`]), and unknown keys refused. The
//! `sim/README.md` reference documents each field; [`super::convert`] checks them and builds the model.

use std::fmt;

use serde::de::{self, value::MapAccessDeserializer, Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use toml::Spanned;

use super::duration::Dur;

/// A value with its place in the file.
pub(super) type S<T> = Spanned<T>;

/// The whole file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    pub name: S<String>,
    #[serde(default)]
    pub about: String,
    pub seed: Option<S<u64>>,
    pub java: Option<S<Java>>,
    pub abort: Option<S<Dur>>,
    pub bucket: Option<S<Dur>>,
    #[serde(default)]
    pub at_capacity: bool,
    pub not_comparable: Option<S<String>>,
    pub servers: S<Vec<S<Server>>>,
    pub clients: Option<S<Clients>>,
    pub arrivals: S<Vec<S<Stream>>>,
    #[serde(default)]
    pub actions: Vec<S<Action>>,
    #[serde(default)]
    pub faults: Vec<S<Fault>>,
}

/// `[[servers]]`: one server, or several alike (`names`, or `name` with `count`).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Server {
    pub name: Option<S<String>>,
    pub names: Option<S<Vec<S<String>>>>,
    pub count: Option<S<u32>>,
    pub latency: Option<S<Latency>>,
    pub status: Option<S<Status>>,
    pub endpoints: Option<S<Vec<S<Endpoint>>>>,
    #[serde(default)]
    pub phases: Vec<S<Phase>>,
    pub slowness: Option<S<f64>>,
    pub crash: Option<S<Crash>>,
    pub present: Option<bool>,
    pub shed_above: Option<S<u32>>,
}

/// `[[servers.phases]]`: what changes from `from` on.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Phase {
    pub from: S<Dur>,
    pub latency: Option<S<Latency>>,
    pub status: Option<S<Status>>,
    pub endpoints: Option<S<Vec<S<Endpoint>>>>,
}

/// One entry of `endpoints`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Endpoint {
    pub latency: Option<S<Latency>>,
    pub status: Option<S<Status>>,
}

/// A latency: `"20ms"` (fixed), `"never"`, or a table with a `kind`.
pub(super) enum Latency {
    Fixed(u64),
    Never,
    Table(Box<LatencyTable>),
}

/// The fields of every latency kind; which apply is the kind's business ([`super::convert`]).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LatencyTable {
    pub kind: S<String>,
    pub base: Option<S<Dur>>,
    pub capacity: Option<S<u32>>,
    pub low: Option<S<Dur>>,
    pub high: Option<S<Dur>>,
    pub median: Option<S<Dur>>,
    pub sigma: Option<S<f64>>,
    pub workers: Option<S<u32>>,
    pub time: Option<S<Dur>>,
}

/// A status: `503` (always), `"refuse"`, or a table with a `kind`.
pub(super) enum Status {
    Code(i64),
    Refuse,
    Table(StatusTable),
}

/// The fields of every status kind.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StatusTable {
    pub kind: S<String>,
    pub code: Option<S<i64>>,
    pub p: Option<S<f64>>,
    pub capacity: Option<S<u32>>,
    pub per_sec: Option<S<f64>>,
}

/// `crash = { ... }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Crash {
    pub active_above: S<u32>,
    pub sustained: S<Dur>,
    pub down_for: S<Dur>,
}

/// `[clients]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Clients {
    pub count: Option<S<usize>>,
    pub endpoints: Option<S<usize>>,
    #[serde(default)]
    pub sticky: bool,
    pub timeout: Option<S<Dur>>,
    pub deadline: Option<S<Dur>>,
    pub retries: Option<S<Retries>>,
    pub subset: Option<S<Subset>>,
}

/// `subset = { kind = "deterministic", size = 10 }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Subset {
    pub kind: S<String>,
    pub size: S<usize>,
}

/// `[clients.retries]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Retries {
    pub max: S<u32>,
    pub on: S<String>,
    pub safe_method: Option<S<bool>>,
    pub backoff: S<Backoff>,
    pub budget: Option<S<Budget>>,
}

/// `[clients.retries.backoff]`: the fields of both kinds.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Backoff {
    pub kind: S<String>,
    pub slot: Option<S<Dur>>,
    pub initial: Option<S<Dur>>,
    pub max: Option<S<Dur>>,
    pub up_multiplier: Option<S<f64>>,
    pub down_multiplier: Option<S<f64>>,
    pub down_threshold: Option<S<u16>>,
    pub jitter: Option<S<Jitter>>,
}

/// A responsive backoff's jitter: `"none"`, `"full"`, `"equal"`, `"decorrelated"`, or
/// `{ factor = 0.3, max = "2m" }` (proportional).
pub(super) enum Jitter {
    Named(String),
    Proportional(Proportional),
}

/// `jitter = { factor, max }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Proportional {
    pub factor: S<f64>,
    pub max: S<Dur>,
}

/// `[clients.retries.budget]`: weir's `ThrottleConfig`, every field defaulting to weir's default.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Budget {
    pub retry_ratio: Option<S<f64>>,
    pub window: Option<S<Dur>>,
    pub buckets: Option<S<u32>>,
    pub k: Option<S<f64>>,
    pub max_rejection: Option<S<f64>>,
}

/// `[[arrivals]]`: one request stream.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Stream {
    pub kind: Option<S<String>>,
    pub start: Option<S<Dur>>,
    pub rps: Option<S<f64>>,
    pub spacing: Option<S<Dur>>,
    pub duration: Option<S<Dur>>,
    pub count: Option<S<u64>>,
    pub client: Option<S<usize>>,
    pub bad: Option<S<f64>>,
    pub heavy: Option<S<Heavy>>,
}

/// `heavy = { fraction, cost }`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Heavy {
    pub fraction: S<f64>,
    pub cost: S<f64>,
}

/// `[[actions]]`: at `at`, exactly one of the four.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Action {
    pub at: S<Dur>,
    pub add: Option<S<String>>,
    pub remove: Option<S<String>>,
    pub drain: Option<S<String>>,
    pub undrain: Option<S<String>>,
}

/// `[[faults]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Fault {
    pub server: Option<S<String>>,
    pub from: S<Dur>,
    pub to: S<Dur>,
}

/// `java = "dialogue"` or `java = { shared, chooser, server }`.
pub(super) enum Java {
    Dialogue,
    Seeds(JavaSeeds),
}

/// The three seeds.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct JavaSeeds {
    pub shared: i64,
    pub chooser: i64,
    pub server: i64,
}

/// A value written either as a scalar or as a table: the visitor's scalar cases, and the table read as
/// `T` (so that its own fields keep their places and unknown keys are refused).
macro_rules! scalar_or_table {
    (
        $ty:ident,
        $expecting:literal,
        |$table:ident: $tt:ty| $from_table:expr,
        { $($scalar:tt)* }
    ) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<$ty, A::Error> {
                        let $table = <$tt>::deserialize(MapAccessDeserializer::new(map))?;
                        Ok($from_table)
                    }
                    $($scalar)*
                }
                d.deserialize_any(V)
            }
        }
    };
}

scalar_or_table!(
    Latency,
    "a duration such as \"20ms\", \"never\", or a table with a `kind`",
    |t: LatencyTable| Latency::Table(Box::new(t)),
    {
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Latency, E> {
            if s == "never" {
                return Ok(Latency::Never);
            }
            super::duration::parse(s)
                .map(Latency::Fixed)
                .map_err(|e| E::custom(format!("{e}, or \"never\"")))
        }
    }
);

scalar_or_table!(
    Status,
    "a status code such as 503, \"refuse\", or a table with a `kind`",
    |t: StatusTable| Status::Table(t),
    {
        fn visit_i64<E: de::Error>(self, n: i64) -> Result<Status, E> {
            Ok(Status::Code(n))
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Status, E> {
            match s {
                "refuse" => Ok(Status::Refuse),
                _ => Err(E::custom(format!(
                    "\"{s}\" is not a status: write a code such as 503, \"refuse\", or a table \
                     with a `kind`"
                ))),
            }
        }
    }
);

scalar_or_table!(
    Jitter,
    "\"none\", \"full\", \"equal\", \"decorrelated\" or { factor, max }",
    |t: Proportional| Jitter::Proportional(t),
    {
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Jitter, E> {
            Ok(Jitter::Named(s.to_string()))
        }
    }
);

scalar_or_table!(
    Java,
    "\"dialogue\" or { shared, chooser, server }",
    |t: JavaSeeds| Java::Seeds(t),
    {
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Java, E> {
            match s {
                "dialogue" => Ok(Java::Dialogue),
                _ => Err(E::custom(format!(
                    "\"{s}\" is not a set of seeds: write \"dialogue\" or \
                     {{ shared, chooser, server }}"
                ))),
            }
        }
    }
);
