//! Scenario files: a scenario written in TOML, so that anyone can describe their own fleet and its failure
//! and get the report and charts (`weir-sim --scenario-file F`). The file speaks the whole vocabulary of
//! [`crate::model`]; `sim/README.md` documents every field, and `sim/scenarios/` holds the built-in
//! scenarios written as files (a test checks that each gives the same [`Scenario`] as its built-in twin).
//!
//! ```
//! let s = weir_sim::file::parse(r#"
//!     name = "one_slow_node"
//!     about = "c is five times slower from 10 s to 20 s."
//!     abort = "40s"
//!
//!     [[servers]]
//!     names = ["a", "b"]
//!     latency = { kind = "linear", base = "20ms", capacity = 50 }
//!
//!     [[servers]]
//!     name = "c"
//!     latency = { kind = "linear", base = "20ms", capacity = 50 }
//!     phases = [
//!         { from = "10s", latency = { kind = "linear", base = "100ms", capacity = 50 } },
//!         { from = "20s" },
//!     ]
//!
//!     [clients]
//!     count = 10
//!     timeout = "1s"
//!
//!     [[arrivals]]
//!     kind = "poisson"
//!     rps = 300
//!     duration = "30s"
//! "#).unwrap();
//! assert_eq!(s.servers.len(), 3);
//! assert_eq!(s.servers[2].phases.len(), 3);
//! assert_eq!(s.requests(), 9_000);
//! ```
//!
//! A mistake is an [`Error`] that names the file, the line and column, and the field:
//!
//! ```
//! let e = weir_sim::file::parse("name = \"x\"\nabort = \"10 parsecs\"\n").unwrap_err();
//! assert_eq!((e.line, e.field.as_str()), (2, "abort"));
//! assert!(e.to_string().starts_with("2:9: abort: \"10 parsecs\" is not a duration"));
//! ```
//!
//! | file | holds |
//! |---|---|
//! | `mod.rs` | reading a file, the error type, and finding the field an error points at |
//! | `schema.rs` | the file's tables as serde structs, each checked value kept with its place |
//! | `convert.rs` | the [`Scenario`] built from a file: the rules the engine relies on, streams, actions, faults |
//! | `servers.rs` | servers: names, latency and status kinds, phases, endpoints |
//! | `clients.rs` | clients: subsetting, retries, backoff and budget |
//! | `duration.rs` | durations such as `"250ms"`, read exactly |

mod clients;
mod convert;
pub mod duration;
mod schema;
mod servers;
#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::model::Scenario;

pub use clients::{MAX_CLIENTS, MAX_ENDPOINTS};
pub use convert::{MAX_ABORT, MAX_BUCKETS, MAX_REQUESTS};
pub use servers::MAX_SERVERS;

/// What is wrong with a scenario file, and where.
///
/// ```
/// let text = "name = \"x\"\n[[servers]]\nname = \"a\"\nlatency = \"2 ms\"\nslowness = -1\n\
///             [[arrivals]]\nrps = 10\ncount = 5\n";
/// let e = weir_sim::file::parse(text).unwrap_err();
/// assert_eq!((e.line, e.column, e.field.as_str()), (5, 12, "servers[0].slowness"));
/// assert_eq!(e.message, "must be a positive number (1 = nominal, 2 = half as fast)");
/// assert_eq!(e.source_line, "slowness = -1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    /// The file, when the scenario was read from one.
    pub file: Option<PathBuf>,
    /// The line (from 1), or 0 when the mistake has no place (the file could not be read).
    pub line: usize,
    /// The column (from 1, in characters), or 0.
    pub column: usize,
    /// The field, as a path into the file (`servers[2].phases[0].latency`; from 0), or empty for the
    /// file as a whole.
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// The text of the line, to show under the message.
    pub source_line: String,
}

impl fmt::Display for Error {
    /// `file:line:column: field: message`, then the line itself.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{}:", file.display())?;
        }
        if self.line > 0 {
            write!(f, "{}:{}:", self.line, self.column)?;
        }
        if !self.field.is_empty() {
            write!(f, " {}:", self.field)?;
        }
        write!(f, " {}", self.message)?;
        if !self.source_line.is_empty() {
            write!(f, "\n{:>6} | {}", self.line, self.source_line)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// Reads a scenario from TOML text.
///
/// ```
/// let e = weir_sim::file::parse("name = \"x\"\n[[servers]]\nname = \"a\"\nlatency = \"1ms\"\n").unwrap_err();
/// assert_eq!(e.message, "missing field `arrivals`");
/// ```
pub fn parse(text: &str) -> Result<Scenario, Error> {
    let raw: schema::File = toml::from_str(text).map_err(|e| {
        let message = e.message().trim_end().to_string();
        locate(text, e.span(), message)
    })?;
    convert::scenario(raw).map_err(|f| locate(text, Some(f.span), f.message))
}

/// Reads the scenario in file `path`.
///
/// ```
/// use std::path::Path;
/// let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/cascade");
/// let s = weir_sim::file::load(&dir.join("flaky.toml")).unwrap();
/// assert_eq!(s, weir_sim::scenarios::flaky());
/// let e = weir_sim::file::load(&dir.join("no_such_file.toml")).unwrap_err();
/// assert!(e.to_string().contains("no_such_file.toml: cannot read it"));
/// ```
pub fn load(path: &Path) -> Result<Scenario, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error {
        file: Some(path.to_path_buf()),
        line: 0,
        column: 0,
        field: String::new(),
        message: format!("cannot read it: {e}"),
        source_line: String::new(),
    })?;
    parse(&text).map_err(|e| Error {
        file: Some(path.to_path_buf()),
        ..e
    })
}

/// Reads every file in `paths`, in order; two files may not name the same scenario (the report's charts
/// and tables are by name).
///
/// ```
/// use std::path::Path;
/// let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/cascade");
/// let two = [dir.join("flaky.toml"), dir.join("combination.toml")];
/// let names: Vec<String> = weir_sim::file::load_all(&two).unwrap().into_iter().map(|s| s.name).collect();
/// assert_eq!(names, ["flaky", "combination"]);
/// assert!(weir_sim::file::load_all(&[dir.join("flaky.toml"), dir.join("flaky.toml")]).is_err());
/// ```
pub fn load_all(paths: &[PathBuf]) -> Result<Vec<Scenario>, Error> {
    let mut out: Vec<(Scenario, &PathBuf)> = Vec::new();
    for path in paths {
        let s = load(path)?;
        if let Some((_, first)) = out.iter().find(|(o, _)| o.name == s.name) {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let at = DeTable::parse_recoverable(&text)
                .0
                .get_ref()
                .get("name")
                .map(Spanned::span);
            return Err(Error {
                file: Some(path.clone()),
                ..locate(
                    &text,
                    at,
                    format!(
                        "scenario `{}` is already read from {}: each needs its own name",
                        s.name,
                        first.display()
                    ),
                )
            });
        }
        out.push((s, path));
    }
    Ok(out.into_iter().map(|(s, _)| s).collect())
}

/// An error at byte `span` of `text`: its line, column, line text and field.
fn locate(text: &str, span: Option<Range<usize>>, message: String) -> Error {
    let mut e = Error {
        file: None,
        line: 0,
        column: 0,
        field: String::new(),
        message,
        source_line: String::new(),
    };
    let Some(span) = span else { return e };
    let mut pos = span.start.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[pos..].find('\n').map_or(text.len(), |i| pos + i);
    e.line = text[..pos].matches('\n').count() + 1;
    e.column = text[line_start..pos].chars().count() + 1;
    e.source_line = text[line_start..line_end].trim_end().to_string();
    // toml places a field missing from the document's top level at 0..0: the document, not its first key.
    if span != (0..0) {
        e.field = field_at(text, &(pos..span.end.max(pos)));
    }
    e
}

/// The path of the deepest key whose name or value holds all of `at`: `servers[2].phases[0].latency`.
fn field_at(text: &str, at: &Range<usize>) -> String {
    // Recoverable: a file with a syntax error still names the fields before it.
    let (root, _) = DeTable::parse_recoverable(text);
    let mut best = (0, String::new());
    table(root.get_ref(), "", 1, at, &mut best);
    best.1
}

/// Whether `outer` holds all of `inner` (an empty span counts as its first byte).
fn holds(outer: &Range<usize>, inner: &Range<usize>) -> bool {
    outer.start <= inner.start && inner.end.max(inner.start + 1) <= outer.end.max(outer.start + 1)
}

fn table(t: &DeTable<'_>, path: &str, depth: usize, at: &Range<usize>, best: &mut (usize, String)) {
    for (k, v) in t {
        let here = if path.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{path}.{}", k.get_ref())
        };
        if (holds(&k.span(), at) || holds(&v.span(), at)) && depth > best.0 {
            *best = (depth, here.clone());
        }
        value(v, &here, depth + 1, at, best);
    }
}

fn value(
    v: &Spanned<DeValue<'_>>,
    path: &str,
    depth: usize,
    at: &Range<usize>,
    best: &mut (usize, String),
) {
    match v.get_ref() {
        DeValue::Table(t) => table(t, path, depth, at, best),
        DeValue::Array(a) => {
            for (i, item) in a.iter().enumerate() {
                let here = format!("{path}[{i}]");
                if holds(&item.span(), at) && depth > best.0 {
                    *best = (depth, here.clone());
                }
                value(item, &here, depth + 1, at, best);
            }
        }
        _ => {}
    }
}
