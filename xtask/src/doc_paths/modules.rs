//! The module names of Rust comments (see `doc_paths/mod.rs`, "How a module name resolves"): which
//! backticked names are read as modules, and the repository's modules, crates and words they resolve
//! against.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

use super::lexer::is_ident;
use super::manifest::Crates;

/// A backticked name in a Rust comment that names a module, or may.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Named {
    /// "the `<m>` module": a module of the crate, or of a crate it depends on.
    Module(String),
    /// "see `<m>`": such a module, or an identifier of those crates' code (a function, a field, a crate).
    Seen(String),
    /// `a::b::c`, by segment: modules down from the first, then a module or an item.
    Path(Vec<String>),
}

impl Named {
    /// What a stale name of this kind names none of.
    pub(super) fn missing(&self) -> &'static str {
        match self {
            Named::Module(_) => "no module",
            Named::Seen(_) => "no module, and nothing in the code",
            Named::Path(_) => "no module or item",
        }
    }
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Named::Module(n) | Named::Seen(n) => f.write_str(n),
            Named::Path(segments) => f.write_str(&segments.join("::")),
        }
    }
}

/// A code span being read: it opened on `line` with `run` backticks after `before`.
struct Span {
    line: usize,
    run: usize,
    before: String,
    text: String,
}

/// The module names in a file's comment lines (as `lexer::lex` gives them), each with the line its span
/// opens on. A code span may go on over the next line, and the words around it too ("see" at the end of
/// one line, "module" at the start of the next); fenced code blocks are not read.
pub(super) fn named(comments: &[(usize, String)]) -> Vec<(usize, Named)> {
    // Past the doc comment's third character (`///`, `//!`, `/**`, `/*!`).
    let bodies: Vec<(usize, &str)> = comments
        .iter()
        .map(|(line, text)| {
            let body = text.trim_start();
            (*line, body.strip_prefix(['/', '!', '*']).unwrap_or(body))
        })
        .collect();
    let fence = |body: &str| body.trim_start().starts_with("```");
    // The text of line `k`'s neighbour at `j` when both are in one paragraph.
    let neighbour = |k: usize, j: Option<usize>| {
        let line = bodies[k].0;
        let (other, text) = *bodies.get(j?)?;
        let apart = line.abs_diff(other) != 1 || text.trim().is_empty() || fence(text);
        (!apart).then_some(text)
    };
    let mut out = Vec::new();
    let mut fenced = false;
    let mut open: Option<Span> = None;
    for (k, &(line, body)) in bodies.iter().enumerate() {
        if fence(body) {
            fenced = !fenced;
            open = None;
            continue;
        }
        // A span ends with its paragraph: at a blank line or a gap between comments.
        if neighbour(k, k.checked_sub(1)).is_none() {
            open = None;
        }
        if fenced {
            continue;
        }
        let chars: Vec<char> = body.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] != '`' {
                if let Some(span) = &mut open {
                    span.text.push(chars[i]);
                }
                i += 1;
                continue;
            }
            let run = chars[i..].iter().take_while(|&&c| c == '`').count();
            match &mut open {
                Some(span) if span.run == run => {
                    let mut after: String = chars[i + run..].iter().collect();
                    if after.trim().is_empty() {
                        after =
                            format!(" {}", neighbour(k, Some(k + 1)).unwrap_or("").trim_start());
                    }
                    if let Some(n) = classify(&span.before, &span.text, &after) {
                        out.push((span.line, n));
                    }
                    open = None;
                }
                Some(span) => span.text.extend(&chars[i..i + run]),
                None => {
                    let mut before: String = chars[..i].iter().collect();
                    if before.trim().is_empty() {
                        let previous = neighbour(k, k.checked_sub(1)).unwrap_or("");
                        before = format!("{} ", previous.trim_end());
                    }
                    open = Some(Span {
                        line,
                        run,
                        before,
                        text: String::new(),
                    })
                }
            }
            i += run;
        }
        if let Some(span) = &mut open {
            span.text.push(' ');
        }
    }
    out
}

/// What a code span `text` names, read with the words `before` and `after` it on its lines.
fn classify(before: &str, text: &str, after: &str) -> Option<Named> {
    let text = text.trim();
    let text = text
        .strip_suffix("()")
        .or_else(|| text.strip_suffix('!'))
        .unwrap_or(text);
    if text.contains("::") {
        // A path wrapped over two lines has a space after its `::`.
        let segments: Vec<String> = text.split("::").map(|s| s.trim().to_owned()).collect();
        let well_formed = segments.iter().all(|s| identifier(s));
        return (well_formed && lowercase(&segments[0])).then_some(Named::Path(segments));
    }
    if !identifier(text) || !lowercase(text) {
        return None;
    }
    let module = after
        .strip_prefix(" module")
        .map(|rest| rest.strip_prefix('s').unwrap_or(rest))
        .is_some_and(|rest| !rest.starts_with(is_ident));
    let before = before.to_lowercase();
    let seen = ["see ", "see also "].iter().any(|see| {
        before
            .strip_suffix(see)
            .is_some_and(|start| !start.ends_with(is_ident))
    });
    if module {
        Some(Named::Module(text.to_owned()))
    } else if seen {
        Some(Named::Seen(text.to_owned()))
    } else {
        None
    }
}

/// A Rust identifier (ASCII): letters, digits and `_`, not starting with a digit, not `_` alone.
fn identifier(s: &str) -> bool {
    s.chars().all(is_ident) && s.chars().next().is_some_and(|c| !c.is_ascii_digit()) && s != "_"
}

/// A module's (or a function's) spelling: no capital letter.
fn lowercase(s: &str) -> bool {
    !s.chars().any(|c| c.is_ascii_uppercase())
}

/// A module: the file that holds its code and the directory that holds its children's files.
#[derive(Clone, Debug)]
struct Module {
    file: PathBuf,
    /// `None` for an inline `mod x { ... }`, whose children are inline too.
    dir: Option<PathBuf>,
}

/// What one source file (Rust, C or Python) brings to the index.
struct SourceFile {
    /// The directory of its crate (the nearest `Cargo.toml` above it).
    krate: PathBuf,
    /// A Rust file, which may be a module.
    rust: bool,
    /// Every identifier of its code.
    idents: HashSet<String>,
    /// The modules it declares inline (`mod x {`).
    inline: Vec<String>,
}

/// The repository's modules, crates and code words that module names resolve against.
#[derive(Default)]
pub(super) struct Modules {
    files: BTreeMap<PathBuf, SourceFile>,
    crates: Crates,
}

impl Modules {
    /// Adds a source file's code (comments and literals left out): its identifiers, and for a Rust file
    /// its inline modules.
    pub(super) fn add_code(&mut self, path: &Path, krate: &Path, rust: bool, code: &str) {
        let tokens = tokens(code);
        let inline = tokens
            .windows(3)
            .filter(|w| rust && w[0] == "mod" && identifier(w[1]) && w[2] == "{")
            .map(|w| w[1].to_owned())
            .collect();
        // Each identifier once before it is copied: most are repeated.
        let unique: HashSet<&str> = tokens.iter().copied().filter(|t| identifier(t)).collect();
        let idents = unique.into_iter().map(str::to_owned).collect();
        self.files.insert(
            path.to_path_buf(),
            SourceFile {
                krate: krate.to_path_buf(),
                rust,
                idents,
                inline,
            },
        );
    }

    /// Adds a crate's `Cargo.toml`, in directory `dir`.
    pub(super) fn add_manifest(&mut self, dir: &Path, text: &str) {
        self.crates.add(dir, text);
    }

    /// Whether `named`, in a comment of a file of the crate in directory `krate`, names what it should.
    pub(super) fn resolves(&self, krate: &Path, named: &Named) -> bool {
        let reach = || self.crates.reach(krate);
        match named {
            Named::Module(name) => self.is_module(&reach(), name),
            Named::Seen(name) => {
                let reach = reach();
                self.is_module(&reach, name)
                    || self
                        .files
                        .values()
                        .any(|f| f.idents.contains(name) && reach.contains(&f.krate))
            }
            Named::Path(segments) => self.path_resolves(krate, segments),
        }
    }

    /// Whether a module of this name exists in one of the crates of directories `crates`.
    fn is_module(&self, crates: &[PathBuf], name: &str) -> bool {
        crates.iter().any(|k| !self.in_crate(k, name).is_empty())
    }

    /// See the module docs of `doc_paths/mod.rs`: the first segment is `crate`, a crate's name or a module of
    /// the commenting crate (else the path is not this check's: a dependency's, the standard library's);
    /// each next segment a child module of the one before, or, last or capitalized, an item in it. A path
    /// that resolves nowhere still passes when an outside crate is called as its first segment is.
    fn path_resolves(&self, krate: &Path, segments: &[String]) -> bool {
        let Some((first, rest)) = segments.split_first() else {
            return true;
        };
        let (crates, outside) = match first.as_str() {
            "self" | "super" => return true,
            "crate" => (vec![krate.to_path_buf()], false),
            name => self.crates.named(krate, name),
        };
        let roots = crates.iter().filter_map(|dir| self.crates.root(dir));
        let mut at: Vec<Module> = roots
            .map(|file| Module {
                file: file.clone(),
                dir: file.parent().map(Path::to_path_buf),
            })
            .chain(self.in_crate(krate, first))
            .collect();
        if at.is_empty() {
            return true;
        }
        for (k, segment) in rest.iter().enumerate() {
            if !lowercase(segment) {
                return outside || at.iter().any(|m| self.holds(m, segment));
            }
            let children: Vec<Module> = at.iter().flat_map(|m| self.children(m, segment)).collect();
            if children.is_empty() {
                let last = k + 1 == rest.len();
                return outside || (last && at.iter().any(|m| self.holds(m, segment)));
            }
            at = children;
        }
        true
    }

    /// The modules named `name` in the crate of directory `krate`, at any depth.
    fn in_crate(&self, krate: &Path, name: &str) -> Vec<Module> {
        let mut out = Vec::new();
        for (path, f) in self
            .files
            .iter()
            .filter(|(_, f)| f.rust && f.krate == krate)
        {
            if module_name(path, &f.krate) == Some(name) {
                out.push(Module {
                    file: path.clone(),
                    dir: Some(children_dir(path)),
                });
            }
            if f.inline.iter().any(|m| m == name) {
                out.push(Module {
                    file: path.clone(),
                    dir: None,
                });
            }
        }
        out
    }

    /// The child modules of `m` named `name`: a file `<name>.rs` or `<name>/mod.rs` in its directory, or an
    /// inline `mod name` in its file.
    fn children(&self, m: &Module, name: &str) -> Vec<Module> {
        let mut out = Vec::new();
        if let Some(dir) = &m.dir {
            for file in [
                dir.join(format!("{name}.rs")),
                dir.join(name).join("mod.rs"),
            ] {
                if self.files.contains_key(&file) {
                    out.push(Module {
                        dir: Some(children_dir(&file)),
                        file,
                    });
                }
            }
        }
        if let Some(f) = self.files.get(&m.file) {
            if f.inline.iter().any(|i| i == name) {
                out.push(Module {
                    file: m.file.clone(),
                    dir: None,
                });
            }
        }
        out
    }

    /// Whether `name` is in the code of `m`'s file or of a file under its directory (an item it
    /// defines, re-exports or uses).
    fn holds(&self, m: &Module, name: &str) -> bool {
        let in_file = |path: &Path| {
            self.files
                .get(path)
                .is_some_and(|f| f.idents.contains(name))
        };
        in_file(&m.file)
            || m.dir.as_ref().is_some_and(|dir| {
                self.files
                    .iter()
                    .any(|(path, f)| path.starts_with(dir) && f.idents.contains(name))
            })
    }
}

/// The module a file of the crate in directory `krate` is, by its path: `<m>.rs` and `<m>/mod.rs` are
/// `m`. Crate roots are none: the library's and the binary's roots, the build script, and the files
/// directly in the target directories (`tests/`, `benches/`, `examples/`, `src/bin/`, a fuzz crate's
/// `fuzz_targets/`): `tests/<m>.rs` is a test crate, not a module.
fn module_name<'a>(path: &'a Path, krate: &Path) -> Option<&'a str> {
    let parent = path.parent()?;
    let target = parent == krate
        || ["tests", "benches", "examples", "src/bin"]
            .iter()
            .any(|d| parent == krate.join(d))
        || parent.ends_with("fuzz_targets");
    match path.file_stem()?.to_str()? {
        "mod" => parent.file_name()?.to_str(),
        "lib" | "main" | "build" => None,
        _ if target => None,
        stem => Some(stem),
    }
}

/// Where the children of the module in `file` live: its own directory for a `mod`, `lib` or `main` file,
/// else the directory named as the file.
fn children_dir(file: &Path) -> PathBuf {
    match file.file_name().and_then(|n| n.to_str()) {
        Some("mod.rs" | "lib.rs" | "main.rs") => file.parent().unwrap_or(file).to_path_buf(),
        _ => file.with_extension(""),
    }
}

/// Identifiers and single punctuation characters, in order.
fn tokens(code: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in code.char_indices() {
        if is_ident(c) {
            start.get_or_insert(i);
            continue;
        }
        if let Some(s) = start.take() {
            out.push(&code[s..i]);
        }
        if !c.is_whitespace() {
            out.push(&code[i..i + c.len_utf8()]);
        }
    }
    if let Some(s) = start {
        out.push(&code[s..]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module names of a Rust source's comments, by line, as written.
    fn named_in(src: &str) -> Vec<(usize, String)> {
        let comments = super::super::lexer::lex(src, super::super::lexer::Lang::Rust).comments;
        named(&comments)
            .into_iter()
            .map(|(line, n)| {
                let kind = match n {
                    Named::Module(_) => "module",
                    Named::Seen(_) => "see",
                    Named::Path(_) => "path",
                };
                (line, format!("{kind} {n}"))
            })
            .collect()
    }

    fn at(line: usize, what: &str) -> (usize, String) {
        (line, what.to_owned())
    }

    #[test]
    fn which_code_spans_are_module_names() {
        let src = "/// See `select` (see `policy`), see also `rt`; the `health` module, the `a` and `b` modules.\n\
                   // `balance::policy`, [`crate::rt::wait`], `policy::choose()`, `log!`, `sync::atomic::AtomicU64`,\n\
                   //! `u64::MAX`, `weir::Config::cascade`\n\
                   /// Ordinary words: `now`, `Ordering`, see `Ordering`, see `acquire(now, rng)`, oversee `x`,\n\
                   /// `module` alone, the `x` moduled, `Config::cascade()`, `a::<T>`, `::std::fmt`, `a::`.\n";
        assert_eq!(
            named_in(src),
            [
                at(1, "see select"),
                at(1, "see policy"),
                at(1, "see rt"),
                at(1, "module health"),
                at(1, "module b"),
                at(2, "path balance::policy"),
                at(2, "path crate::rt::wait"),
                at(2, "path policy::choose"),
                at(2, "path sync::atomic::AtomicU64"),
                at(3, "path u64::MAX"),
                at(3, "path weir::Config::cascade"),
            ]
        );
    }

    #[test]
    fn spans_go_on_over_lines_and_fenced_code_is_not_read() {
        let src = "/// A span over two lines: see `crate::\n/// balance` and then see `gone`.\n///\n\
                   /// An unclosed `span ends with its paragraph\n///\n/// see `after`\n\
                   /// ```\n/// // see `inside`, `fenced::code`\n/// ```\n/// ``see `double` `` see `last`, and see\n\
                   /// `wrapped`; the `wrapped`\n/// module.\n";
        assert_eq!(
            named_in(src),
            [
                at(1, "path crate::balance"),
                at(2, "see gone"),
                at(6, "see after"),
                at(10, "see last"),
                at(11, "see wrapped"),
                at(11, "module wrapped"),
            ]
        );
    }
}
