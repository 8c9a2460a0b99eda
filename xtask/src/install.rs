//! `cargo xtask install-check`: the install commands of the README and of the guides, as a user types
//! them from a clean clone. Nothing is on crates.io or PyPI before the first release, so the pages lead
//! with a checkout, and `cargo xtask ci` runs each checkout command they write:
//!
//! - `cargo add --path path/to/weir/core` ([`CARGO_ADD_PATH`]): here, in a scratch cargo project outside
//!   the workspace, `path/to/weir` standing for this checkout; the dependency line it writes must be the
//!   one `core/README.md` shows, and a main that builds a `weir::Config::default()` must `cargo check`.
//!   Offline, from the registry cache (`cargo fetch` fills it first; in `ci` the workspace's build has).
//! - `pip install ./py` (`py::CHECKOUT_INSTALL`): `cargo xtask py`, in its venv.
//! - `cargo xtask wheel`, then `pip install weir_lb-*.whl` where the wheel is (`py::WHEEL_INSTALL`):
//!   `cargo xtask wheel --test`, in a fresh venv with no Rust in reach.
//!
//! Stated, not run: the git dependency (CI reaches no git host, and the remote may not exist yet), the
//! tower crate's `--path` (its `Cargo.toml` must exist) and the registry commands of the first release.
//!
//! Every command above must stand, exactly, in the README and in its guide ([`missing`]): the check
//! looks first, and a unit test looks at the repository's pages, so that a page and what CI runs cannot
//! drift apart. The git command's URL and the line it writes come from the core package's `repository` and
//! `version`, as `cargo metadata` reads them.

use crate::process::{fail, run};
use crate::py::{CHECKOUT_INSTALL, WHEEL_INSTALL};
use crate::workspace::{cargo_metadata, target_dir};
use std::env;
use std::path::{Path, PathBuf};

/// What the pages write for the reader's checkout of weir.
const CHECKOUT: &str = "path/to/weir";

/// The Rust dependency on a checkout, as the pages write it.
const CARGO_ADD_PATH: &str = "cargo add --path path/to/weir/core";

/// The tower crate's, as the pages write it.
const TOWER_ADD_PATH: &str = "cargo add --path path/to/weir/integrations/tower";

/// The wheel's build (`ci` runs it with `--test`).
const WHEEL_BUILD: &str = "cargo xtask wheel";

const README: &str = "README.md";
const CORE: &str = "core/README.md";
const TOWER: &str = "integrations/tower/README.md";
const PY: &str = "py/README.md";

/// The scratch project's program, `cargo check`ed: it uses the core.
const MAIN: &str = "fn main() {\n    let _config = weir::Config::default();\n}\n";

/// `cargo xtask install-check`: the pages first ([`missing`]), then [`CARGO_ADD_PATH`] in a scratch
/// project, the line it wrote against `core/README.md`, and `cargo check`.
pub(crate) fn install_check() {
    let root = canonical(Path::new("."));
    let core = core_package(&cargo_metadata()).unwrap_or_else(|e| fail(&e));
    let problems = missing(&commands(&core), |page| {
        std::fs::read_to_string(root.join(page)).map_err(|e| e.to_string())
    });
    let problems = problems
        .into_iter()
        .chain(missing_checkouts(&root))
        .collect::<Vec<_>>();
    if !problems.is_empty() {
        fail(&format!(
            "the install commands of the pages:\n  {}",
            problems.join("\n  ")
        ));
    }
    eprintln!("    ok: the pages write the install commands that CI runs");

    // Every crate the scratch project resolves to is then in the registry cache.
    run("cargo", &["fetch"], &[]);
    let offline = [("CARGO_NET_OFFLINE", "true")];
    // The workspace's, asked before leaving it: the scratch project's builds are kept between runs.
    let target = path(&target_dir().join("install-check"));
    let scratch = env::temp_dir().join(format!("weir-install-check-{}", std::process::id()));
    remove(&scratch);
    run(
        "cargo",
        &[
            "new",
            "--quiet",
            "--vcs",
            "none",
            "--name",
            "weir-install-check",
            &path(&scratch),
        ],
        &offline,
    );
    let checkout = path(&root);
    let add: Vec<String> = CARGO_ADD_PATH
        .split_whitespace()
        .map(|word| match word.strip_prefix(CHECKOUT) {
            Some(rest) => format!("{checkout}{rest}"),
            None => word.to_string(),
        })
        .collect();
    let Some((program, args)) = add.split_first() else {
        fail("CARGO_ADD_PATH is empty");
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    enter(&scratch);
    run(program, &args, &offline);
    let written = dependency_line(&read(&scratch, "Cargo.toml"))
        .unwrap_or_else(|e| fail(&format!("{}: {e}", scratch.join("Cargo.toml").display())));
    if !read(&root, CORE).contains(&written) {
        fail(&format!(
            "`{CARGO_ADD_PATH}` writes `{written}` (path as the pages write it), which {CORE} does not show"
        ));
    }
    eprintln!("    ok: {CORE} shows the line it writes: {written}");
    std::fs::write(scratch.join("src/main.rs"), MAIN)
        .unwrap_or_else(|e| fail(&format!("cannot write the scratch main: {e}")));
    run(
        "cargo",
        &["check"],
        &[offline[0], ("CARGO_TARGET_DIR", target.as_str())],
    );
    enter(&root);
    remove(&scratch);
}

/// The commands the pages must write, each exactly, with the pages that must hold it. The git dependency
/// names the core's `repository` and writes its `version` ([`core_package`]).
fn commands((repository, version): &(String, String)) -> Vec<(String, &'static [&'static str])> {
    vec![
        (CARGO_ADD_PATH.into(), &[README, CORE]),
        (
            format!("cargo add --git {repository} weir-lb"),
            &[README, CORE],
        ),
        (
            format!("weir-lb = {{ git = \"{repository}\", version = \"{version}\" }}"),
            &[CORE],
        ),
        (TOWER_ADD_PATH.into(), &[README, TOWER]),
        (CHECKOUT_INSTALL.into(), &[README, PY]),
        (WHEEL_BUILD.into(), &[README, PY]),
        (WHEEL_INSTALL.into(), &[README, PY]),
    ]
}

/// Each command that a page lacks, as `page lacks `command``; `read` gives a page's text.
fn missing(
    commands: &[(String, &[&str])],
    read: impl Fn(&str) -> Result<String, String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (command, pages) in commands {
        for page in *pages {
            match read(page) {
                Ok(text) if holds(&text, command) => {}
                Ok(_) => problems.push(format!("{page} lacks `{command}`")),
                Err(e) => problems.push(format!("cannot read {page}: {e}")),
            }
        }
    }
    problems
}

/// Whether `text` holds `command` as a whole: not as the start of a longer word, path or argument
/// (`cargo xtask wheels`, `./py[httpx]`, `./py/x`), nor as the end of a longer word.
fn holds(text: &str, command: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || "-_".contains(c);
    text.match_indices(command).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + command.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(|c| word(c) || "./*[".contains(c))
    })
}

/// Each `--path` of the pages that is no crate of this checkout (under `root`).
fn missing_checkouts(root: &Path) -> Vec<String> {
    [CARGO_ADD_PATH, TOWER_ADD_PATH]
        .iter()
        .filter_map(|command| {
            let dir = command.split_whitespace().last()?.strip_prefix(CHECKOUT)?;
            let manifest = root.join(dir.trim_start_matches('/')).join("Cargo.toml");
            (!manifest.is_file()).then(|| format!("`{command}`: {} is missing", manifest.display()))
        })
        .collect()
}

/// The `repository` and `version` of `weir-lb`, from `cargo metadata --format-version 1` output.
fn core_package(metadata: &str) -> Result<(String, String), String> {
    let v: serde_json::Value =
        serde_json::from_str(metadata).map_err(|e| format!("cargo metadata: {e}"))?;
    let package = v["packages"]
        .as_array()
        .and_then(|packages| packages.iter().find(|p| p["name"] == "weir-lb"))
        .ok_or("cargo metadata names no package weir-lb")?;
    let field = |key: &str| {
        package[key]
            .as_str()
            .map(String::from)
            .ok_or(format!("weir-lb declares no {key}"))
    };
    Ok((field("repository")?, field("version")?))
}

/// The `weir-lb` line of a manifest that `cargo add --path` wrote, its path as the pages write it.
fn dependency_line(manifest: &str) -> Result<String, String> {
    let line = manifest
        .lines()
        .find(|l| l.starts_with("weir-lb = "))
        .ok_or("no `weir-lb = ...` line")?;
    let (before, after) = line
        .split_once("path = \"")
        .ok_or(format!("no path in `{line}`"))?;
    let (_, after) = after
        .split_once('"')
        .ok_or(format!("an unterminated path in `{line}`"))?;
    Ok(format!("{before}path = \"{CHECKOUT}/core\"{after}"))
}

fn read(dir: &Path, file: &str) -> String {
    let at = dir.join(file);
    std::fs::read_to_string(&at)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", at.display())))
}

fn enter(dir: &Path) {
    env::set_current_dir(dir)
        .unwrap_or_else(|e| fail(&format!("cannot enter {}: {e}", dir.display())));
}

fn remove(dir: &Path) {
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .unwrap_or_else(|e| fail(&format!("cannot remove {}: {e}", dir.display())));
    }
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize()
        .unwrap_or_else(|e| fail(&format!("cannot resolve {}: {e}", p.display())))
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::workspace_root;

    fn repository_page(page: &str) -> Result<String, String> {
        std::fs::read_to_string(workspace_root().join(page)).map_err(|e| e.to_string())
    }

    #[test]
    fn the_pages_write_the_commands_that_ci_runs() {
        let core = core_package(&cargo_metadata()).unwrap();
        let none: Vec<String> = Vec::new();
        assert_eq!(missing(&commands(&core), repository_page), none);
        assert_eq!(missing_checkouts(&workspace_root()), none);
    }

    #[test]
    fn a_command_a_page_lacks_is_named() {
        let commands = vec![
            ("pip install ./py".to_string(), &[README, PY][..]),
            ("cargo xtask wheel".to_string(), &[README][..]),
        ];
        let pages = |page: &str| match page {
            README => Ok("pip install ./py, then cargo xtask wheels".to_string()),
            _ => Err("gone".to_string()),
        };
        assert_eq!(
            missing(&commands, pages),
            [
                "cannot read py/README.md: gone",
                "README.md lacks `cargo xtask wheel`"
            ]
            .map(String::from)
        );
    }

    #[test]
    fn a_command_is_held_whole_only() {
        let command = "pip install ./py";
        for text in [
            "pip install ./py",
            "`pip install ./py` (1-2 min)",
            "run pip install ./py, then",
            "# pip install ./py\n",
        ] {
            assert!(holds(text, command), "{text}");
        }
        for text in [
            "pip install ./py[httpx]",
            "pip install ./pyx",
            "pip install ./py/sub",
            "xpip install ./py",
            "pip install  ./py",
        ] {
            assert!(!holds(text, command), "{text}");
        }
        assert!(holds("then pip install ./pyz; pip install ./py;", command));
        assert!(!holds("pip install ./py.toml", command));
    }

    #[test]
    fn the_git_dependency_comes_from_the_core_package() {
        let metadata = r#"{"packages":[
            {"name":"xtask","version":"0.0.0","repository":null},
            {"name":"weir-lb","version":"0.2.0","repository":"https://example.org/w"}
        ]}"#;
        let core = core_package(metadata).unwrap();
        assert_eq!(core, ("https://example.org/w".into(), "0.2.0".into()));
        let commands = commands(&core);
        assert_eq!(
            commands[1].0,
            "cargo add --git https://example.org/w weir-lb"
        );
        assert_eq!(
            commands[2].0,
            "weir-lb = { git = \"https://example.org/w\", version = \"0.2.0\" }"
        );
        let no_repository = metadata.replace(r#""https://example.org/w""#, "null");
        assert_eq!(
            core_package(&no_repository).unwrap_err(),
            "weir-lb declares no repository"
        );
        assert!(core_package(r#"{"packages":[]}"#).is_err());
        assert!(core_package("error: no manifest").is_err());
    }

    #[test]
    fn the_written_line_shows_the_pages_path() {
        let manifest = "[package]\nname = \"app\"\n\n[dependencies]\n\
                        weir-lb = { version = \"0.1.0\", path = \"../../home/me/weir/core\" }\n";
        assert_eq!(
            dependency_line(manifest).unwrap(),
            "weir-lb = { version = \"0.1.0\", path = \"path/to/weir/core\" }"
        );
        assert_eq!(
            dependency_line("[dependencies]\nweir-lb = \"0.1\"\n").unwrap_err(),
            "no path in `weir-lb = \"0.1\"`"
        );
        assert!(dependency_line("[dependencies]\n").is_err());
    }

    #[test]
    fn a_path_that_is_no_crate_is_named() {
        let empty = env::temp_dir().join(format!("xtask-install-{}", std::process::id()));
        std::fs::create_dir_all(&empty).unwrap();
        let problems = missing_checkouts(&empty);
        std::fs::remove_dir_all(&empty).unwrap();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].starts_with(&format!("`{CARGO_ADD_PATH}`: ")));
    }
}
