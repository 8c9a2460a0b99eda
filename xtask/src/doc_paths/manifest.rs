//! The crates of the repository as a module path's first segment sees them: what each `Cargo.toml`
//! says of its package, its library and its dependencies, and so which crate, or which outside one, a
//! crate's code calls by a name.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use super::lexer::is_ident;

/// The standard library's crates and the modules code names without their `std::`: a path that starts
/// with one of these may be theirs.
const STD: [&str; 33] = [
    "std",
    "core",
    "alloc",
    "any",
    "borrow",
    "boxed",
    "cell",
    "cmp",
    "collections",
    "convert",
    "env",
    "error",
    "ffi",
    "fmt",
    "fs",
    "future",
    "hash",
    "hint",
    "io",
    "iter",
    "marker",
    "mem",
    "net",
    "num",
    "ops",
    "panic",
    "path",
    "pin",
    "process",
    "ptr",
    "sync",
    "thread",
    "time",
];

/// What one `Cargo.toml` says that module paths need.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Manifest {
    /// `[package] name`.
    package: Option<String>,
    /// `[lib] name` and `path`.
    lib_name: Option<String>,
    lib_path: Option<String>,
    /// `[dependencies]`, `[dev-dependencies]`, `[build-dependencies]`, their `target.*` and
    /// `[dependencies.KEY]` forms.
    deps: Vec<Dep>,
    /// `[workspace.dependencies]`.
    workspace_deps: Vec<Dep>,
}

/// One dependency.
#[derive(Debug, PartialEq, Eq)]
struct Dep {
    /// The key, as written (`weir-tower`).
    key: String,
    /// The package the key renames (`package = "weir-lb-tower"`), if it does.
    package: Option<String>,
    /// `workspace = true`: the rest is in the workspace's entry of the same key.
    workspace: bool,
}

impl Manifest {
    /// Reads the lines of a `Cargo.toml` that matter here; the rest of TOML is not needed.
    pub(super) fn parse(text: &str) -> Manifest {
        let mut m = Manifest::default();
        let mut section = String::new();
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.starts_with('[') {
                section = line.trim_matches(['[', ']']).trim().to_owned();
                // `[dependencies.KEY]`: one dependency, its fields on the lines below.
                if let Some(at) = section.rfind("dependencies.") {
                    let key = section[at + "dependencies.".len()..].to_owned();
                    let dep = Dep {
                        key,
                        package: None,
                        workspace: false,
                    };
                    m.table(&section).push(dep);
                }
                continue;
            }
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let (key, value) = (key.trim(), value.trim());
            match (section.as_str(), key) {
                ("package", "name") => m.package = quoted(value),
                ("lib", "name") => m.lib_name = quoted(value),
                ("lib", "path") => m.lib_path = quoted(value),
                (s, _) if s.ends_with("dependencies") => {
                    let (key, workspace) = match key.strip_suffix(".workspace") {
                        Some(key) => (key, value == "true"),
                        None => (key, field(value, "workspace").is_some_and(|v| v == "true")),
                    };
                    let package = field(value, "package").and_then(|v| quoted(&v));
                    let dep = Dep {
                        key: key.to_owned(),
                        package,
                        workspace,
                    };
                    m.table(s).push(dep);
                }
                (s, "package" | "workspace") if s.contains("dependencies.") => {
                    if let Some(dep) = m.table(s).last_mut() {
                        if key == "package" {
                            dep.package = quoted(value);
                        } else {
                            dep.workspace = value == "true";
                        }
                    }
                }
                _ => {}
            }
        }
        m
    }

    /// The list a dependency section's entries go to.
    fn table(&mut self, section: &str) -> &mut Vec<Dep> {
        if section.starts_with("workspace.") {
            &mut self.workspace_deps
        } else {
            &mut self.deps
        }
    }

    /// The name code calls this crate's library by.
    fn code_name(&self) -> Option<String> {
        self.lib_name
            .as_deref()
            .or(self.package.as_deref())
            .map(rust_name)
    }
}

/// The value of `name = ...` in an inline table's text (`{ package = "weir-lb", path = "core" }`), up
/// to the next `,` or `}`; strings keep their quotes.
fn field(table: &str, name: &str) -> Option<String> {
    let mut from = 0;
    while let Some(found) = table[from..].find(name) {
        let at = from + found;
        from = at + name.len();
        let whole_word = !table[..at].ends_with(|c: char| is_ident(c) || c == '-');
        let rest = table[from..].trim_start();
        if let (true, Some(value)) = (whole_word, rest.strip_prefix('=')) {
            let value = value.trim_start();
            let end = value.find([',', '}']).unwrap_or(value.len());
            return Some(value[..end].trim().to_owned());
        }
    }
    None
}

/// The text of a TOML basic string that starts `value`.
fn quoted(value: &str) -> Option<String> {
    let rest = value.strip_prefix('"')?;
    Some(rest[..rest.find('"')?].to_owned())
}

/// A crate's name as Rust code spells it: `-` as `_`.
fn rust_name(name: &str) -> String {
    name.replace('-', "_")
}

/// Every `Cargo.toml` of the repository.
#[derive(Default)]
pub(super) struct Crates {
    /// By the crate's directory.
    manifests: HashMap<PathBuf, Manifest>,
    /// Each crate's root file (`[lib] path`, else the library's or the binary's under `src/`), by its
    /// directory.
    roots: HashMap<PathBuf, PathBuf>,
    /// Each package's directory, by the package's name.
    packages: HashMap<String, PathBuf>,
    /// `[workspace.dependencies]`: the package each key renames, if it does.
    workspace_deps: HashMap<String, Option<String>>,
}

impl Crates {
    /// Adds the `Cargo.toml` of directory `dir`, its text `text`.
    pub(super) fn add(&mut self, dir: &Path, text: &str) {
        let m = Manifest::parse(text);
        for dep in &m.workspace_deps {
            self.workspace_deps
                .insert(dep.key.clone(), dep.package.clone());
        }
        if let Some(package) = &m.package {
            self.packages.insert(package.clone(), dir.to_path_buf());
            let root = m
                .lib_path
                .as_ref()
                .map(|p| normalize(&dir.join(p)))
                .into_iter()
                .chain([dir.join("src/lib.rs"), dir.join("src/main.rs")])
                .find(|p| p.is_file());
            if let Some(root) = root {
                self.roots.insert(dir.to_path_buf(), root);
            }
        }
        self.manifests.insert(dir.to_path_buf(), m);
    }

    /// The root file of the crate in directory `dir`.
    pub(super) fn root(&self, dir: &Path) -> Option<&PathBuf> {
        self.roots.get(dir)
    }

    /// The directories of the crate of directory `krate` and of the repository's crates it depends on.
    pub(super) fn reach(&self, krate: &Path) -> Vec<PathBuf> {
        let mut dirs = vec![krate.to_path_buf()];
        for dep in self.manifests.get(krate).map_or(&[][..], |m| &m.deps) {
            if let Some(dir) = self.packages.get(self.package_of(dep)) {
                dirs.push(dir.clone());
            }
        }
        dirs
    }

    /// The package a dependency names: the one it renames (there or in the workspace's entry), else its
    /// key.
    fn package_of<'a>(&'a self, dep: &'a Dep) -> &'a str {
        let renamed = dep.package.as_deref().or_else(|| {
            dep.workspace
                .then(|| self.workspace_deps.get(&dep.key)?.as_deref())
                .flatten()
        });
        renamed.unwrap_or(&dep.key)
    }

    /// What code in the crate of directory `krate` calls `name`: the directories of the repository's
    /// crates (itself, or a dependency), and whether an outside crate is called so too (a dependency from
    /// a registry, the standard library).
    pub(super) fn named(&self, krate: &Path, name: &str) -> (Vec<PathBuf>, bool) {
        let mut dirs = Vec::new();
        let mut outside = STD.contains(&name);
        let Some(m) = self.manifests.get(krate) else {
            return (dirs, outside);
        };
        if m.code_name().as_deref() == Some(name) {
            dirs.push(krate.to_path_buf());
        }
        for dep in &m.deps {
            let package = self.package_of(dep);
            let renamed = package != dep.key;
            let dir = self.packages.get(package);
            // A renamed dependency is called by its key; another by its library's name.
            let code = match dir.and_then(|d| self.manifests.get(d)) {
                Some(theirs) if !renamed => theirs.code_name(),
                _ => Some(rust_name(&dep.key)),
            };
            if code.as_deref() == Some(name) {
                match dir {
                    Some(d) => dirs.push(d.clone()),
                    None => outside = true,
                }
            }
        }
        (dirs, outside)
    }
}

/// `path` with its `.` and `dir/..` components removed, without reading the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(key: &str, package: Option<&str>, workspace: bool) -> Dep {
        Dep {
            key: key.into(),
            package: package.map(Into::into),
            workspace,
        }
    }

    #[test]
    fn a_manifest_gives_its_package_library_and_dependencies() {
        let m = Manifest::parse(
            "[package]\nname = \"weir-lb-ffi-fuzz\" # the fuzz crate\n\n[lib]\nname = \"weir_ffi\"\n\
             path = \"../src/lib.rs\"\n\n[dependencies]\nlibfuzzer-sys = \"0.4\"\n\
             weir-core = { package = \"weir-lb\", path = \"../../core\" }\nhttp.workspace = true\n\
             tokio = { workspace = true, features = [\"rt\"] }\n\n[dev-dependencies.other]\n\
             package = \"weir-lb-tests\"\n\n[workspace.dependencies]\n\
             weir = { package = \"weir-lb\", path = \"core\" }\n\n[[bin]]\nname = \"c_abi\"\n",
        );
        assert_eq!(m.package.as_deref(), Some("weir-lb-ffi-fuzz"));
        assert_eq!(m.code_name().as_deref(), Some("weir_ffi"));
        assert_eq!(m.lib_path.as_deref(), Some("../src/lib.rs"));
        assert_eq!(
            m.deps,
            [
                dep("libfuzzer-sys", None, false),
                dep("weir-core", Some("weir-lb"), false),
                dep("http", None, true),
                dep("tokio", None, true),
                dep("other", Some("weir-lb-tests"), false),
            ]
        );
        assert_eq!(m.workspace_deps, [dep("weir", Some("weir-lb"), false)]);
        assert_eq!(
            Manifest::parse("[package]\nname = \"weir-lb-sim\"\n").code_name(),
            Some("weir_lb_sim".into())
        );
    }

    #[test]
    fn crates_are_called_by_their_library_or_their_renaming_key() {
        let mut c = Crates::default();
        let root = Path::new("/nowhere");
        c.add(
            root,
            "[workspace.dependencies]\nweir = { package = \"weir-lb\", path = \"core\" }\n",
        );
        c.add(
            &root.join("core"),
            "[package]\nname = \"weir-lb\"\n[lib]\nname = \"weir\"\n",
        );
        c.add(
            &root.join("sim"),
            "[package]\nname = \"weir-lb-sim\"\n[lib]\nname = \"weir_sim\"\n[dependencies]\n\
             weir.workspace = true\ntokio = \"1\"\n[dev-dependencies]\n\
             same = { package = \"weir-lb\", path = \"../core\" }\n",
        );
        let sim = root.join("sim");
        let named = |name: &str| c.named(&sim, name);
        assert_eq!(named("weir"), (vec![root.join("core")], false));
        assert_eq!(named("same"), (vec![root.join("core")], false));
        // Itself, by its library's name.
        assert_eq!(named("weir_sim"), (vec![sim.clone()], false));
        assert_eq!(named("weir_lb"), (vec![], false));
        // A registry's crate, the standard library's modules.
        assert_eq!(named("tokio"), (vec![], true));
        assert_eq!(named("fmt"), (vec![], true));
        assert_eq!(named("select"), (vec![], false));
        assert_eq!(
            normalize(Path::new("/r/ffi-c/fuzz/../src/./lib.rs")),
            PathBuf::from("/r/ffi-c/src/lib.rs")
        );
    }
}
