//! `cargo xtask doc-paths`: every `.rs` file and every module that a comment names exists.
//!
//! Files are moved and split; the comments that name them are not updated by the compiler. This check
//! reads the comments of every Rust, C and C++ file (`//`, `///`, `//!`, `/* */`) and the comments and
//! triple-quoted strings (docstrings) of every Python file, takes each name ending in `.rs` there, and
//! in Rust files each module name too (below), and reports every one that resolves to nothing, as
//! `path:line: name`, all of them before failing.
//!
//! # How a name resolves
//! - A name with a `/` is a path. It resolves when it exists relative to the commenting file's directory,
//!   to any directory above it up to the repository root, or to its crate's `src/`. From this file,
//!   `bench/tower.rs` and `core/src/rt/wait.rs` resolve; in the core crate's `tests/`, a name such as
//!   `<module>/<file>.rs` resolves in `core/src/`.
//! - A bare name resolves when a file of that name exists anywhere in the commenting file's crate (the
//!   nearest directory above it with a `Cargo.toml`; files outside any member belong to the repository's):
//!   `main.rs` here is `xtask/src/main.rs`. A file of another crate is named by a path.
//! - `{main,fuzz}.rs` names both `main.rs` and `fuzz.rs`.
//! - Not checked: names inside a URL (a word with `://`), absolute paths (they name files outside the
//!   repository), names under `target/`, and patterns: a `*`, `...`, `~`, or a placeholder such as
//!   `{name}.rs` or `<name>.rs`. `docs.rs` is the documentation host, not a file.
//!
//! # How a module name resolves
//! In the comments of Rust files, three kinds of code span (backticks; fenced code blocks are not read)
//! are module names. A module is a file `<m>.rs`, a directory with a `<m>/mod.rs`, or an inline `mod m {`,
//! in a crate's sources; the crate roots are not modules (`<crate>/src/lib.rs`, `<crate>/src/main.rs`,
//! the build script, and each file directly in `tests/`, `benches/`, `examples/`, `src/bin/`).
//! - "the `<m>` module" (a lowercase identifier followed by the word "module" or "modules") resolves
//!   when a module of that name exists in the commenting crate or in a crate of the repository that it
//!   depends on.
//! - "see `<m>`" (a lowercase identifier after "see" or "see also") resolves when such a module exists,
//!   or when the name is an identifier of the code of one of those crates (Rust, C or Python files,
//!   comments and literals left out): the function, field or crate it may name instead. Once a module
//!   has been renamed away, a comment that still sends the reader to its old name is reported; one that
//!   sends them to a method passes.
//! - A path `a::b::c` whose first segment is lowercase (`doc_paths::lexer`, `crate::process::fail`,
//!   `weir::Balancer`; a trailing `()` or `!` dropped) starts at `crate` (the commenting crate's
//!   root), at a crate's name as the commenting crate's code calls it (itself, or a dependency from the
//!   repository: its library's name, or the key that renames it), or at any module of that name in the
//!   commenting crate. Each next lowercase segment is a child module of the one before (in its
//!   directory, or an inline `mod` in its file); the last segment, or the first capitalized one (a type,
//!   a constant), may instead be an identifier of the code of that module's file or of a file under its
//!   directory. A path that does not resolve still passes when its first segment may also be the
//!   standard library's (`fmt`, `sync`, `io`, ...) or a registry dependency's (`http` in weir-lb-tower).
//! - Not checked: a path whose first segment is none of those (`u64::MAX`, and `tokio::time::timeout`
//!   in a crate with no module of that name), `self::` and `super::` paths, what follows a capitalized
//!   segment, and every other code span (`now`, `Ordering`, `acquire`).
//!
//! Directories named `target` and hidden directories (`.git`, `.venv`) are not read. The comments and
//! code of a file are split in `doc_paths/lexer.rs`, the module names read and resolved in
//! `doc_paths/modules.rs`, the crates' manifests read in `doc_paths/manifest.rs`.

mod lexer;
mod manifest;
mod modules;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use walkdir::WalkDir;

use crate::process::fail;
use lexer::{is_ident, lang_of, lex, Lang};
use modules::Modules;

/// A comment's name of a `.rs` file or a module that does not exist.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Stale {
    /// The commenting file, relative to the repository root.
    file: PathBuf,
    /// 1-based line of the name.
    line: usize,
    /// The name looked up (one alternative of a `{x,y}` group).
    name: String,
    /// What it names none of: "no file", "no module", ...
    missing: &'static str,
}

impl fmt::Display for Stale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}` names {}",
            self.file.display(),
            self.line,
            self.name,
            self.missing
        )
    }
}

/// The command: prints every stale name and fails if there is one.
pub(crate) fn doc_paths() {
    eprintln!("\n==> doc-paths (every .rs file and module a comment names exists)");
    let start = Instant::now();
    let root = std::env::current_dir()
        .unwrap_or_else(|e| fail(&format!("cannot read the current directory: {e}")));
    let stale = check(&root);
    for s in &stale {
        eprintln!("{s}");
    }
    if !stale.is_empty() {
        fail(&format!(
            "{} comment(s) name a .rs file or a module that does not exist (see \
             `xtask/src/doc_paths/mod.rs` for how a name resolves)",
            stale.len()
        ));
    }
    eprintln!("    ok in {:.1} s", start.elapsed().as_secs_f64());
}

/// Every stale name in the repository at `root`, in file order then line order.
pub(crate) fn check(root: &Path) -> Vec<Stale> {
    let mut sources = Vec::new();
    // Every `.rs` file by file name, for bare names.
    let mut by_name: HashMap<String, Vec<PathBuf>> = HashMap::new();
    // Every module, crate and identifier, for module names: all of them before any is looked up.
    let mut modules = Modules::default();
    let walk = WalkDir::new(root)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !skipped_dir(e));
    for e in walk.filter_map(Result::ok) {
        if !e.file_type().is_file() {
            continue;
        }
        let p = e.into_path();
        let dir = p.parent().unwrap_or(root);
        if p.file_name().is_some_and(|n| n == "Cargo.toml") {
            if let Ok(text) = std::fs::read_to_string(&p) {
                modules.add_manifest(dir, &text);
            }
        }
        if p.extension().is_some_and(|x| x == "rs") {
            if let Some(n) = p.file_name().and_then(|n| n.to_str()) {
                by_name.entry(n.to_owned()).or_default().push(p.clone());
            }
        }
        let Some(lang) = lang_of(&p) else {
            continue;
        };
        // A file that is not UTF-8 has no comments this check can read.
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        let lexed = lex(&text, lang);
        let krate = crate_dir(root, dir);
        modules.add_code(&p, &krate, lang == Lang::Rust, &lexed.code);
        sources.push((p, lang, krate, lexed.comments));
    }
    let mut stale = Vec::new();
    for (path, lang, krate, comments) in sources {
        let dir = path.parent().unwrap_or(root);
        let file = path.strip_prefix(root).unwrap_or(&path).to_path_buf();
        let mut found = Vec::new();
        for (line, comment) in &comments {
            for name in names(comment) {
                if !resolves(root, dir, &krate, &name, &by_name) {
                    found.push((*line, name, "no file"));
                }
            }
        }
        if lang == Lang::Rust {
            for (line, named) in modules::named(&comments) {
                if !modules.resolves(&krate, &named) {
                    found.push((line, named.to_string(), named.missing()));
                }
            }
        }
        // Stable: on one line, file names before module names, each in the order written.
        found.sort_by_key(|(line, _, _)| *line);
        stale.extend(found.into_iter().map(|(line, name, missing)| Stale {
            file: file.clone(),
            line,
            name,
            missing,
        }));
    }
    stale
}

/// Build outputs and hidden directories.
fn skipped_dir(e: &walkdir::DirEntry) -> bool {
    e.file_type().is_dir()
        && e.file_name()
            .to_str()
            .is_some_and(|n| n == "target" || n.starts_with('.'))
}

/// The nearest directory from `dir` up to `root` that holds a `Cargo.toml`, else `root`.
fn crate_dir(root: &Path, dir: &Path) -> PathBuf {
    let mut d = dir;
    loop {
        if d.join("Cargo.toml").is_file() || d == root {
            return d.to_path_buf();
        }
        match d.parent() {
            Some(p) if p.starts_with(root) => d = p,
            _ => return root.to_path_buf(),
        }
    }
}

/// Whether `name`, written in a file of directory `dir` in crate directory `krate`, names a file (see
/// the module docs).
fn resolves(
    root: &Path,
    dir: &Path,
    krate: &Path,
    name: &str,
    by_name: &HashMap<String, Vec<PathBuf>>,
) -> bool {
    if name.contains('/') {
        let mut d = Some(dir);
        while let Some(at) = d {
            if at.join(name).is_file() {
                return true;
            }
            if at == root {
                break;
            }
            d = at.parent().filter(|p| p.starts_with(root));
        }
        krate.join("src").join(name).is_file()
    } else {
        name == "docs.rs"
            || by_name
                .get(name)
                .is_some_and(|found| found.iter().any(|p| p.starts_with(krate)))
    }
}

/// The `.rs` names in one line of comment text, `{a,b}` groups expanded, the unchecked ones left out.
fn names(comment: &str) -> Vec<String> {
    let chars: Vec<char> = comment.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i + 3 <= chars.len() {
        let ends_rs = chars[i..i + 3] == ['.', 'r', 's'];
        if !ends_rs || chars.get(i + 3).is_some_and(|&c| is_ident(c)) {
            i += 1;
            continue;
        }
        let end = i + 3;
        // Back to the name's start: path characters, and commas only inside a `{}` group.
        let mut start = i;
        let mut depth = 0u32;
        while start > 0 {
            let c = chars[start - 1];
            match c {
                '}' => depth += 1,
                '{' if depth > 0 => depth -= 1,
                ',' if depth > 0 => {}
                c if is_ident(c) || matches!(c, '.' | '/' | '-' | '*' | '~') => {}
                _ => break,
            }
            start -= 1;
        }
        i = end;
        // The whitespace-separated word around the name: a URL if it has a scheme.
        let word_start = chars[..start]
            .iter()
            .rposition(|c| c.is_whitespace())
            .map_or(0, |p| p + 1);
        let word: String = chars[word_start..end].iter().collect();
        if word.contains("://") {
            continue;
        }
        let name: String = chars[start..end].iter().collect();
        let name = name.strip_prefix("./").unwrap_or(&name);
        for n in expand(name) {
            if checked(&n) {
                out.push(n);
            }
        }
    }
    out
}

/// Whether a name is a file name to resolve rather than a pattern, an outside path or a build output.
fn checked(name: &str) -> bool {
    let file = name.rsplit('/').next().unwrap_or(name);
    !(file == ".rs"
        || name.starts_with('/')
        || name.starts_with('~')
        || name.contains('*')
        || name.contains("...")
        || name.contains(['{', '}'])
        || name.starts_with("target/")
        || name.contains("/target/"))
}

/// The name once per alternative of its first `{x,y}` group, recursively; a group without a comma is a
/// placeholder and stays.
fn expand(name: &str) -> Vec<String> {
    let group = name.find('{').and_then(|open| {
        let close = open + name[open..].find('}')?;
        name[open + 1..close].contains(',').then_some((open, close))
    });
    match group {
        None => vec![name.to_owned()],
        Some((open, close)) => name[open + 1..close]
            .split(',')
            .flat_map(|alt| expand(&format!("{}{alt}{}", &name[..open], &name[close + 1..])))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn names_skip_urls_patterns_and_outside_paths() {
        assert_eq!(
            names(" see `slot.rs`, core/src/{a,b}.rs and ./rt/wait.rs; lib.rs's header"),
            [
                "slot.rs",
                "core/src/a.rs",
                "core/src/b.rs",
                "rt/wait.rs",
                "lib.rs"
            ]
        );
        assert!(names(
            " https://github.com/o/r/blob/0123/src/x.rs#L3 [x](https://h/y.rs) <https://h/z.rs>"
        )
        .is_empty());
        assert!(names(
            " *.rs, {name}.rs, .../x.rs, /rustc/lib.rs, ~/a.rs, target/debug/build.rs, a.rsx"
        )
        .is_empty());
        assert_eq!(names(" a.rs,b.rs"), ["a.rs", "b.rs"]);
    }

    /// A throwaway repository under the system's temporary directory, removed on drop.
    struct Repo(PathBuf);

    impl Repo {
        fn new(tag: &str, files: &[(&str, &str)]) -> Repo {
            let root =
                std::env::temp_dir().join(format!("xtask-doc-paths-{tag}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&root);
            for (path, text) in files {
                let p = root.join(path);
                fs::create_dir_all(p.parent().unwrap()).unwrap();
                fs::write(p, text).unwrap();
            }
            Repo(root)
        }
    }

    impl Drop for Repo {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn names_that_exist_pass() {
        let repo = Repo::new(
            "pass",
            &[
                ("Cargo.toml", ""),
                ("core/Cargo.toml", ""),
                (
                    "core/src/lib.rs",
                    "//! `rt/wait.rs`, `slot.rs`, `tests/t.rs`, core/src/rt/wait.rs, mod.rs\n",
                ),
                ("core/src/balance/slot.rs", ""),
                (
                    "core/src/rt/wait.rs",
                    "// ../lib.rs, and bare names anywhere in the crate: `slot.rs`, `t.rs`\n",
                ),
                ("core/tests/t.rs", "//! rt/wait.rs (the crate's src/)\n"),
                ("core/src/rt/mod.rs", "/* wait.rs */\n"),
                ("include/x.h", "/* core/src/balance/slot.rs */\n"),
                ("py/x.py", "\"\"\"core/src/lib.rs\"\"\"\n"),
                ("target/junk.rs", "// gone.rs\n"),
                (".venv/junk.py", "# gone.rs\n"),
            ],
        );
        assert_eq!(check(&repo.0), []);
    }

    #[test]
    fn missing_names_fail_with_file_and_line() {
        let repo = Repo::new(
            "fail",
            &[
                ("Cargo.toml", ""),
                ("core/Cargo.toml", ""),
                (
                    "core/src/lib.rs",
                    "//! fine: `slot.rs`\n//! moved: `gone.rs`, `rt/{wait,gone}.rs`\n",
                ),
                ("core/src/slot.rs", ""),
                ("core/src/rt/wait.rs", ""),
                ("ffi-c/Cargo.toml", ""),
                (
                    "ffi-c/src/lib.rs",
                    "fn f() {}\n/// another crate's bare name: `slot.rs`\n",
                ),
            ],
        );
        let stale = check(&repo.0);
        let shown: Vec<String> = stale.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                "core/src/lib.rs:2: `gone.rs` names no file",
                "core/src/lib.rs:2: `rt/gone.rs` names no file",
                "ffi-c/src/lib.rs:2: `slot.rs` names no file",
            ]
        );
    }

    /// Two crates: the core (`weir`), and the simulator, which depends on it through the workspace's
    /// renaming entry; `extra` adds files.
    fn two_crates(tag: &str, extra: &[(&str, &str)]) -> Repo {
        let mut files = vec![
            (
                "Cargo.toml",
                "[workspace.dependencies]\nweir = { package = \"weir-lb\", path = \"core\" }\n",
            ),
            (
                "core/Cargo.toml",
                "[package]\nname = \"weir-lb\"\n[lib]\nname = \"weir\"\n",
            ),
            (
                "core/src/lib.rs",
                "pub mod balance;\nmod sync;\npub mod rt {\n    pub mod wait {}\n}\n",
            ),
            (
                "core/src/balance/mod.rs",
                "pub mod policy;\npub use policy::Config;\nfn rotate() {}\n",
            ),
            (
                "core/src/balance/policy.rs",
                "pub struct Config;\npub fn choose() {}\n",
            ),
            ("core/src/sync.rs", "pub(crate) use portable_atomic as atomic;\n"),
            // A test crate, not a module: its name is no module's.
            ("core/tests/select.rs", "#[test]\nfn t() {}\n"),
            (
                "sim/Cargo.toml",
                "[package]\nname = \"weir-lb-sim\"\n[dependencies]\nweir.workspace = true\nhttp = \"1\"\n",
            ),
            ("sim/src/lib.rs", "mod http;\npub fn select() {}\n"),
            ("sim/src/http.rs", ""),
        ];
        files.extend_from_slice(extra);
        Repo::new(tag, &files)
    }

    #[test]
    fn live_module_names_and_ordinary_words_pass() {
        let repo = two_crates(
            "modules-pass",
            &[
                (
                    "core/src/balance/slot.rs",
                    "//! The `policy` module; see `rotate`, see `choose`, see `balance`; `now`, `Ordering`,\n\
                     //! see `Ordering`, `balance::policy::choose()`, `crate::balance::Config`, `rt::wait`,\n\
                     //! [`weir::balance::policy`], `sync::atomic::AtomicU64` (std's), `tokio::time::timeout`,\n\
                     //! `u64::MAX`, `self::gone`, `super::gone`.\n\
                     //! ```\n//! // see `gone`\n//! ```\n",
                ),
                (
                    "sim/src/report.rs",
                    "// see `select`, see `choose` (the core's), `weir::balance::Config`, `http::Request`\n",
                ),
            ],
        );
        assert_eq!(check(&repo.0), []);
    }

    #[test]
    fn stale_module_names_fail_with_file_and_line() {
        let repo = two_crates(
            "modules-fail",
            &[(
                "core/src/balance/slot.rs",
                "fn f() {}\n// The draws go on over the nodes with room (see `select`), as in the `select`\n\
                 // module: `balance::select::choose`, `balance::policy::gone`, `crate::gone::x`,\n\
                 /// [`weir::balance::Gone`], `rt::wait::gone` and `rt::gone::x`; `slot.rs` and `gone.rs`.\n",
            )],
        );
        let shown: Vec<String> = check(&repo.0).iter().map(ToString::to_string).collect();
        let at = |line: usize, name: &str, missing: &str| {
            format!("core/src/balance/slot.rs:{line}: `{name}` names {missing}")
        };
        assert_eq!(
            shown,
            [
                at(2, "select", "no module, and nothing in the code"),
                at(2, "select", "no module"),
                at(3, "balance::select::choose", "no module or item"),
                at(3, "balance::policy::gone", "no module or item"),
                at(3, "crate::gone::x", "no module or item"),
                at(4, "gone.rs", "no file"),
                at(4, "weir::balance::Gone", "no module or item"),
                at(4, "rt::wait::gone", "no module or item"),
                at(4, "rt::gone::x", "no module or item"),
            ]
        );
    }
}
