//! `cargo xtask publish-check`: the crates a user depends on, packaged as crates.io will get them.
//!
//! 1. The licences: the root's `LICENSE-MIT` and `LICENSE-APACHE` are copied into every published package
//!    and into `py/` (the sdist and the wheel take them from there). Copies, not links: a link does not
//!    survive a checkout everywhere, and a package would then ship a file holding a path. A copy that
//!    differs from the root's fails.
//! 2. What each package holds (`cargo package --list`): its licences, the README its manifest names
//!    (cargo copies it in by its file name), its library root, and none of its tests (they need the
//!    repository: the allocation counter, loom's settings, the README).
//! 3. `cargo package --locked -p weir-lb -p weir-lb-ffi -p weir-lb-tower`: cargo packs the three and
//!    builds each from its `.crate`, resolving the others from their `.crate` files (a local registry
//!    overlay), so that a crate that depends on an unpublished sibling still verifies. The packages are
//!    the workspace's publishable members, read from `cargo metadata`; [`PUBLISHED`] must name them.
//!
//! Publishing order, dependencies first: `weir-lb`, then `weir-lb-ffi` and `weir-lb-tower`.

use crate::process::{cargo, fail};
use crate::workspace::cargo_metadata;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The crates a user depends on (`cargo xtask msrv` builds these).
pub(crate) const PUBLISHED: [&str; 3] = ["weir-lb", "weir-lb-ffi", "weir-lb-tower"];
/// The licence texts at the root, copied into every published package.
const LICENCES: [&str; 2] = ["LICENSE-MIT", "LICENSE-APACHE"];
/// Besides the published crates' folders, the Python package's holds the copies too.
const PYTHON: &str = "py";

pub(crate) fn publish_check() {
    let start = Instant::now();
    let packages =
        publishable(&cargo_metadata()).unwrap_or_else(|| fail("cargo metadata gave no packages"));
    let names: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
    if names != PUBLISHED {
        fail(&format!(
            "the publishable packages are {names:?}, xtask's PUBLISHED says {PUBLISHED:?}: make one \
             agree with the other (and `cargo xtask msrv` with both)"
        ));
    }
    let root =
        std::env::current_dir().unwrap_or_else(|e| fail(&format!("no current directory: {e}")));
    let mut dirs: Vec<PathBuf> = packages.iter().map(|p| p.dir.clone()).collect();
    dirs.push(root.join(PYTHON));
    let drift = licence_drift(&root, &dirs);
    if !drift.is_empty() {
        fail(&format!(
            "{}\n(the copies must equal the root's: `cp LICENSE-MIT LICENSE-APACHE DIR/`)",
            drift.join("\n")
        ));
    }
    eprintln!(
        "\n==> the licences of {} packages and py/ equal the root's",
        packages.len()
    );
    for Package { name, readme, .. } in &packages {
        let out = std::process::Command::new("cargo")
            .args(["package", "--list", "--allow-dirty", "-p", name])
            .output()
            .unwrap_or_else(|e| fail(&format!("cannot run cargo package --list: {e}")));
        if !out.status.success() {
            fail(&format!(
                "cargo package --list -p {name}: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let list = String::from_utf8_lossy(&out.stdout);
        let Some(readme) = readme else {
            fail(&format!("{name} declares no readme"));
        };
        let wrong = contents_problems(&list, readme);
        if !wrong.is_empty() {
            fail(&format!("the package {name}: {}", wrong.join("; ")));
        }
        eprintln!(
            "    {name}: {} files, licences, {readme}, no tests",
            list.lines().count()
        );
    }
    forget_unpacked_overlays(&names);
    // --allow-dirty: a check, not a release, so it runs on a working tree with changes too.
    let mut args = vec!["package", "--locked", "--allow-dirty"];
    for name in &names {
        args.extend(["-p", name]);
    }
    cargo(&args);
    eprintln!(
        "    publish-check passed ({}) in {:.0} s",
        names.join(", "),
        start.elapsed().as_secs_f64()
    );
}

/// Removes the copies of our packages that cargo unpacked from earlier runs' local overlays.
///
/// Cargo unpacks a registry's crates under `$CARGO_HOME/registry/src/<registry>/<name>-<version>` and
/// trusts an unpacked copy on the next run. A local overlay's registry is named after the checkout's
/// path (its folders start with `-`, crates.io's with `index.`), so a checkout at the same path one
/// commit later would verify against the earlier commit's `weir-lb`, not the one just packed.
fn forget_unpacked_overlays(names: &[&str]) {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let Some(src) = home.map(|h| h.join("registry").join("src")) else {
        return;
    };
    let Ok(registries) = fs::read_dir(&src) else {
        return;
    };
    for registry in registries.flatten() {
        if !registry.file_name().to_string_lossy().starts_with('-') {
            continue;
        }
        let Ok(crates) = fs::read_dir(registry.path()) else {
            continue;
        };
        for unpacked in crates.flatten() {
            let file = unpacked.file_name();
            let file = file.to_string_lossy();
            if is_unpacked_copy(&file, names) {
                if let Err(e) = fs::remove_dir_all(unpacked.path()) {
                    fail(&format!(
                        "cannot remove the stale {}: {e}",
                        unpacked.path().display()
                    ));
                }
            }
        }
    }
}

/// Whether `dir` is `<name>-<version>` for one of `names` (`weir-lb-0.1.0` is weir-lb's, not
/// weir-lb-ffi's).
fn is_unpacked_copy(dir: &str, names: &[&str]) -> bool {
    names.iter().any(|name| {
        dir.strip_prefix(name)
            .and_then(|rest| rest.strip_prefix('-'))
            .is_some_and(|version| version.starts_with(|c: char| c.is_ascii_digit()))
    })
}

/// A publishable package of the workspace.
#[derive(Debug, PartialEq)]
struct Package {
    name: String,
    /// Its folder.
    dir: PathBuf,
    /// The file name of its `readme`: cargo copies the file into the package under this name.
    readme: Option<String>,
}

/// The workspace's publishable packages (no `publish = false`) from `cargo metadata --no-deps` output,
/// sorted by name; `None` when the output is not metadata.
fn publishable(json: &str) -> Option<Vec<Package>> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let mut found: Vec<Package> = v["packages"]
        .as_array()?
        .iter()
        // `publish = false` is `[]`; no `publish` key is `null` (any registry).
        .filter(|p| p["publish"].as_array().is_none_or(|r| !r.is_empty()))
        .filter_map(|p| {
            let readme = p["readme"].as_str().and_then(|r| Path::new(r).file_name());
            Some(Package {
                name: p["name"].as_str()?.to_string(),
                dir: Path::new(p["manifest_path"].as_str()?)
                    .parent()?
                    .to_path_buf(),
                readme: readme.map(|r| r.to_string_lossy().into_owned()),
            })
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Some(found)
}

/// Each licence copy under `dirs` that is missing or differs from the one in `root`, said in a line.
fn licence_drift(root: &Path, dirs: &[PathBuf]) -> Vec<String> {
    let mut problems = Vec::new();
    for licence in LICENCES {
        let Ok(original) = fs::read(root.join(licence)) else {
            problems.push(format!("{licence} is missing at the root"));
            continue;
        };
        for dir in dirs {
            let copy = dir.join(licence);
            match fs::read(&copy) {
                Ok(bytes) if bytes == original => {}
                Ok(_) => problems.push(format!("{} differs from the root's", copy.display())),
                Err(e) => problems.push(format!("{}: {e}", copy.display())),
            }
        }
    }
    problems
}

/// What is wrong with a package's file list (`cargo package --list`): the files it must hold and lacks
/// (`readme` is its README's file name), and the test files it must not ship.
fn contents_problems(list: &str, readme: &str) -> Vec<String> {
    let files: Vec<&str> = list.lines().map(str::trim).collect();
    let mut problems: Vec<String> = ["Cargo.toml", readme, "src/lib.rs"]
        .iter()
        .chain(LICENCES.iter())
        .filter(|f| !files.contains(f))
        .map(|f| format!("{f} is missing"))
        .collect();
    problems.extend(
        files
            .iter()
            .filter(|f| f.starts_with("tests/"))
            .map(|f| format!("{f} is a test, which needs the repository")),
    );
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpacked_copies_are_named_by_package_and_version() {
        let names = ["weir-lb", "weir-lb-ffi"];
        assert!(is_unpacked_copy("weir-lb-0.1.0", &names));
        assert!(is_unpacked_copy("weir-lb-ffi-0.1.0", &names));
        assert!(!is_unpacked_copy("weir-lb-tower-0.1.0", &names));
        assert!(!is_unpacked_copy("weir-lbx-0.1.0", &names));
        assert!(!is_unpacked_copy("libm-0.2.16", &names));
    }

    #[test]
    fn publishable_packages_come_from_the_metadata() {
        let json = r#"{"packages":[
            {"name":"weir-lb-tower","publish":null,"manifest_path":"/w/integrations/tower/Cargo.toml","readme":"../../docs/tower.md"},
            {"name":"weir-lb-sim","publish":[],"manifest_path":"/w/sim/Cargo.toml","readme":"README.md"},
            {"name":"weir-lb","publish":null,"manifest_path":"/w/core/Cargo.toml","readme":"../README.md"},
            {"name":"weir-lb-ffi","publish":["crates-io"],"manifest_path":"/w/ffi-c/Cargo.toml","readme":null}]}"#;
        let package = |name: &str, dir: &str, readme: Option<&str>| Package {
            name: name.into(),
            dir: dir.into(),
            readme: readme.map(String::from),
        };
        assert_eq!(
            publishable(json).unwrap(),
            vec![
                package("weir-lb", "/w/core", Some("README.md")),
                package("weir-lb-ffi", "/w/ffi-c", None),
                package("weir-lb-tower", "/w/integrations/tower", Some("tower.md")),
            ]
        );
        assert_eq!(publishable("error: no Cargo.toml"), None);
    }

    #[test]
    fn the_licence_copies_equal_the_roots() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let dirs: Vec<PathBuf> = ["core", "ffi-c", "integrations/tower", PYTHON]
            .iter()
            .map(|d| root.join(d))
            .collect();
        assert_eq!(licence_drift(&root, &dirs), Vec::<String>::new());
        let mit = fs::read_to_string(root.join("LICENSE-MIT")).unwrap();
        assert!(mit.contains("Copyright (c) 2026 The weir authors"), "{mit}");
        let apache = fs::read_to_string(root.join("LICENSE-APACHE")).unwrap();
        assert!(apache.contains("Apache License\n                           Version 2.0"));
        assert!(apache.contains("Copyright (c) 2026 The weir authors"));
    }

    #[test]
    fn a_changed_or_missing_copy_is_found() {
        let dir = std::env::temp_dir().join(format!("xtask-licences-{}", std::process::id()));
        let copy = dir.join("pkg");
        fs::create_dir_all(&copy).unwrap();
        fs::write(dir.join("LICENSE-MIT"), "mit").unwrap();
        fs::write(dir.join("LICENSE-APACHE"), "apache").unwrap();
        fs::write(copy.join("LICENSE-MIT"), "mit, edited").unwrap();
        let problems = licence_drift(&dir, std::slice::from_ref(&copy));
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(
            problems[0].ends_with("LICENSE-MIT differs from the root's"),
            "{problems:?}"
        );
        assert!(problems[1].contains("LICENSE-APACHE: "), "{problems:?}");
        fs::write(copy.join("LICENSE-MIT"), "mit").unwrap();
        fs::write(copy.join("LICENSE-APACHE"), "apache").unwrap();
        assert_eq!(licence_drift(&dir, &[copy]), Vec::<String>::new());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_package_holds_its_licences_and_readme_and_no_tests() {
        let good =
            "Cargo.toml\nCargo.toml.orig\nLICENSE-APACHE\nLICENSE-MIT\nREADME.md\nsrc/lib.rs\n";
        assert_eq!(contents_problems(good, "README.md"), Vec::<String>::new());
        let bad = "Cargo.toml\nLICENSE-MIT\nsrc/lib.rs\ntests/http.rs\n";
        assert_eq!(
            contents_problems(bad, "README.md"),
            vec![
                "README.md is missing",
                "LICENSE-APACHE is missing",
                "tests/http.rs is a test, which needs the repository"
            ]
        );
    }
}
