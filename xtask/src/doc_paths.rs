//! `cargo xtask doc-paths`: every `.rs` file that a comment names exists.
//!
//! Files are moved and split; the comments that name them are not updated by the compiler. This check
//! reads the comments of every Rust, C and C++ file (`//`, `///`, `//!`, `/* */`) and the comments and
//! triple-quoted strings (docstrings) of every Python file, takes each name ending in `.rs` there, and
//! reports every one that resolves to no file, as `path:line: name`, all of them before failing.
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
//! Directories named `target` and hidden directories (`.git`, `.venv`) are not read.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use walkdir::WalkDir;

use crate::process::fail;

/// A comment's name of a `.rs` file that does not exist.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Stale {
    /// The commenting file, relative to the repository root.
    file: PathBuf,
    /// 1-based line of the name.
    line: usize,
    /// The name looked up (one alternative of a `{x,y}` group).
    name: String,
}

impl fmt::Display for Stale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}: `{}` names no file",
            self.file.display(),
            self.line,
            self.name
        )
    }
}

/// The command: prints every stale name and fails if there is one.
pub(crate) fn doc_paths() {
    eprintln!("\n==> doc-paths (every .rs file a comment names exists)");
    let start = Instant::now();
    let root = std::env::current_dir()
        .unwrap_or_else(|e| fail(&format!("cannot read the current directory: {e}")));
    let stale = check(&root);
    for s in &stale {
        eprintln!("{s}");
    }
    if !stale.is_empty() {
        fail(&format!(
            "{} comment(s) name a .rs file that does not exist (see `xtask/src/doc_paths.rs` for how \
             a name resolves)",
            stale.len()
        ));
    }
    eprintln!("    ok in {:.1} s", start.elapsed().as_secs_f64());
}

/// Comment syntax of a source file.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lang {
    /// `//`, nested `/* */`, strings, raw strings, char literals.
    Rust,
    /// `//`, `/* */` (not nested), strings, char literals.
    C,
    /// `#` comments; triple-quoted strings count as comments (docstrings).
    Python,
}

/// The comment syntax of a file, by its extension; `None` for a file whose comments are not read.
fn lang_of(path: &Path) -> Option<Lang> {
    match path.extension()?.to_str()? {
        "rs" => Some(Lang::Rust),
        "c" | "h" | "cc" | "cpp" | "hpp" => Some(Lang::C),
        "py" | "pyi" => Some(Lang::Python),
        _ => None,
    }
}

/// Every stale name in the repository at `root`, in file order then line order.
pub(crate) fn check(root: &Path) -> Vec<Stale> {
    let mut sources = Vec::new();
    // Every `.rs` file by file name, for bare names.
    let mut by_name: HashMap<String, Vec<PathBuf>> = HashMap::new();
    let walk = WalkDir::new(root)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !skipped_dir(e));
    for e in walk.filter_map(Result::ok) {
        if !e.file_type().is_file() {
            continue;
        }
        let p = e.into_path();
        if p.extension().is_some_and(|x| x == "rs") {
            if let Some(n) = p.file_name().and_then(|n| n.to_str()) {
                by_name.entry(n.to_owned()).or_default().push(p.clone());
            }
        }
        if let Some(lang) = lang_of(&p) {
            sources.push((p, lang));
        }
    }
    let mut stale = Vec::new();
    for (path, lang) in sources {
        // A file that is not UTF-8 has no comments this check can read.
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let dir = path.parent().unwrap_or(root);
        let krate = crate_dir(root, dir);
        for (line, comment) in comments(&text, lang) {
            for name in names(&comment) {
                if !resolves(root, dir, &krate, &name, &by_name) {
                    stale.push(Stale {
                        file: path.strip_prefix(root).unwrap_or(&path).to_path_buf(),
                        line,
                        name,
                    });
                }
            }
        }
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

/// The comment text of each line that has some, with its 1-based line number. Two comments on one line
/// are joined by a space, so that their words stay apart.
fn comments(text: &str, lang: Lang) -> Vec<(usize, String)> {
    #[derive(Clone, Copy, PartialEq)]
    enum S {
        Code,
        Line,
        /// Rust nests block comments; C does not (depth stays 1).
        Block(u32),
        /// A string closed by this quote (`"` or `'`); Python's end at the line's end too.
        Str(char),
        /// A Rust raw string closed by `"` and this many `#`.
        Raw(usize),
        /// A Python triple-quoted string closed by three of this quote.
        Triple(char),
    }
    let chars: Vec<char> = text.chars().collect();
    // The line of each character, so that skipping characters never miscounts lines.
    let line_of: Vec<usize> = chars
        .iter()
        .scan(1, |line, &c| {
            let this = *line;
            *line += usize::from(c == '\n');
            Some(this)
        })
        .collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let c_like = matches!(lang, Lang::Rust | Lang::C);
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut push = |i: usize, c: char| {
        let line = line_of[i];
        match out.last_mut() {
            Some((l, s)) if *l == line => s.push(c),
            _ => out.push((line, c.to_string())),
        }
    };
    let mut state = S::Code;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match state {
            S::Code => {
                if c_like && c == '/' && at(i + 1) == '/' {
                    state = S::Line;
                    push(i, ' ');
                    i += 1;
                } else if c_like && c == '/' && at(i + 1) == '*' {
                    state = S::Block(1);
                    push(i, ' ');
                    i += 1;
                } else if c_like && c == '"' {
                    state = S::Str(c);
                } else if c_like && c == '\'' {
                    // A char literal ('x', '\n', '\'', '"'); otherwise a lifetime or a label ('a).
                    if at(i + 1) == '\\' {
                        i += 3;
                        while i < chars.len() && chars[i] != '\'' && chars[i] != '\n' {
                            i += 1;
                        }
                    } else if at(i + 2) == '\'' {
                        i += 2;
                    }
                } else if lang == Lang::Rust && c == 'r' && raw_prefix(&chars, i) {
                    let mut j = i + 1;
                    while at(j) == '#' {
                        j += 1;
                    }
                    if at(j) == '"' {
                        state = S::Raw(j - i - 1);
                        i = j;
                    }
                } else if lang == Lang::Python && c == '#' {
                    state = S::Line;
                    push(i, ' ');
                } else if lang == Lang::Python && (c == '"' || c == '\'') {
                    if at(i + 1) == c && at(i + 2) == c {
                        state = S::Triple(c);
                        push(i, ' ');
                        i += 2;
                    } else {
                        state = S::Str(c);
                    }
                }
            }
            S::Line => {
                if c == '\n' {
                    state = S::Code;
                } else {
                    push(i, c);
                }
            }
            S::Block(depth) => {
                if c == '*' && at(i + 1) == '/' {
                    state = if depth == 1 {
                        S::Code
                    } else {
                        S::Block(depth - 1)
                    };
                    push(i, ' ');
                    i += 1;
                } else if lang == Lang::Rust && c == '/' && at(i + 1) == '*' {
                    state = S::Block(depth + 1);
                    push(i, ' ');
                    i += 1;
                } else if c != '\n' {
                    push(i, c);
                }
            }
            S::Str(q) => {
                if c == '\\' {
                    i += 1;
                } else if c == q || (lang == Lang::Python && c == '\n') {
                    state = S::Code;
                }
            }
            S::Raw(hashes) => {
                if c == '"' && (1..=hashes).all(|k| at(i + k) == '#') {
                    state = S::Code;
                    i += hashes;
                }
            }
            S::Triple(q) => {
                if c == q && at(i + 1) == q && at(i + 2) == q {
                    state = S::Code;
                    push(i, ' ');
                    i += 2;
                } else if c == '\\' {
                    i += 1;
                } else if c != '\n' {
                    push(i, c);
                }
            }
        }
        i += 1;
    }
    out
}

/// Whether the `r` at `i` starts a raw string's prefix (`r"`, `r#"`, `br"`): not the end of a longer
/// identifier.
fn raw_prefix(chars: &[char], i: usize) -> bool {
    let before = |k: usize| i.checked_sub(k).and_then(|j| chars.get(j)).copied();
    match before(1) {
        Some('b') => !before(2).is_some_and(is_ident),
        Some(c) => !is_ident(c),
        None => true,
    }
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
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

    /// The names each comment line gives, for the lines that give some.
    fn found(text: &str, lang: Lang) -> Vec<(usize, Vec<String>)> {
        comments(text, lang)
            .into_iter()
            .map(|(l, s)| (l, names(&s)))
            .filter(|(_, n)| !n.is_empty())
            .collect()
    }

    fn at(line: usize, names: &[&str]) -> (usize, Vec<String>) {
        (line, names.iter().map(|n| n.to_string()).collect())
    }

    #[test]
    fn rust_comments_and_not_strings() {
        let src = "//! a.rs\nlet s = \"// no.rs\"; // c.rs\nlet c = '\"'; // d.rs\n\
                   let r = r#\"x \" // no.rs\"#; /* f.rs /* g.rs */ h.rs */ i\n\
                   fn f<'a>(x: &'a str) -> char { '\\'' } // j.rs\n\
                   let s = \"a\\\n // no.rs\"; /// k.rs\n";
        assert_eq!(
            found(src, Lang::Rust),
            [
                at(1, &["a.rs"]),
                at(2, &["c.rs"]),
                at(3, &["d.rs"]),
                at(4, &["f.rs", "g.rs", "h.rs"]),
                at(5, &["j.rs"]),
                at(7, &["k.rs"]),
            ]
        );
    }

    #[test]
    fn c_block_comments_do_not_nest_and_span_lines() {
        let src = "/* a.rs /* b.rs */ int x = 1; // c.rs\n\
                   char *s = \"/* no.rs */\"; /* d\n e.rs */ int y; /* f.rs */\n";
        assert_eq!(
            found(src, Lang::C),
            [at(1, &["a.rs", "b.rs", "c.rs"]), at(3, &["e.rs", "f.rs"])]
        );
    }

    #[test]
    fn python_comments_and_docstrings() {
        let src =
            "\"\"\"a.rs\nb.rs\"\"\"\nx = \"# no.rs\"  # c.rs\ny = 'it''s' + 'no.rs'\n'''d.rs'''\n";
        assert_eq!(
            found(src, Lang::Python),
            [
                at(1, &["a.rs"]),
                at(2, &["b.rs"]),
                at(3, &["c.rs"]),
                at(5, &["d.rs"])
            ]
        );
    }

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
}
