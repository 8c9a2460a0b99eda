//! `cargo xtask sim`: the simulator's full report, every scenario with every policy (release build of
//! `weir-lb-sim`), and `--scenarios DIR` for the scenario files of a directory.

use crate::process::{cargo, fail};
use std::path::PathBuf;

/// The simulator's full report (release build), with `extra` arguments passed to `weir-sim` (checked by
/// `cli`); `--scenarios DIR` becomes a `--scenario-file` for every `*.toml` in DIR.
pub(crate) fn sim(extra: &[String]) {
    let extra = scenario_files(extra).unwrap_or_else(|e| fail(&e));
    let mut args = vec!["run", "--release", "--quiet", "-p", "weir-lb-sim", "--"];
    if !extra.iter().any(|a| a == "--out") {
        args.extend(["--out", "target/sim"]);
    }
    args.extend(extra.iter().map(String::as_str));
    cargo(&args);
}

/// `args` with each `--scenarios DIR` replaced by `--scenario-file F` for every `*.toml` file F in DIR, in
/// sorted order (not recursive).
fn scenario_files(args: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a != "--scenarios" {
            out.push(a.clone());
            continue;
        }
        let dir = it.next().ok_or("--scenarios needs a directory")?;
        let entries = std::fs::read_dir(dir)
            .map_err(|e| format!("--scenarios {dir}: cannot read it: {e}"))?;
        let mut files: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml"))
            .collect();
        if files.is_empty() {
            return Err(format!("--scenarios {dir}: no *.toml file there"));
        }
        files.sort();
        for f in files {
            out.push("--scenario-file".into());
            out.push(f.display().to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenarios_dir_becomes_one_scenario_file_per_toml_in_order() {
        let dir = std::env::temp_dir().join(format!("xtask-sim-scenarios-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("nested.toml")).unwrap();
        for f in ["b.toml", "a.toml", "notes.md", "c.toml.bak"] {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let args = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let d = dir.display().to_string();
        let got = scenario_files(&args(&["--threads", "2", "--scenarios", &d, "--no-charts"]));
        let a = dir.join("a.toml").display().to_string();
        let b = dir.join("b.toml").display().to_string();
        assert_eq!(
            got,
            Ok(args(&[
                "--threads",
                "2",
                "--scenario-file",
                &a,
                "--scenario-file",
                &b,
                "--no-charts"
            ]))
        );
        // Without --scenarios, the arguments pass as they are (so `cargo xtask sim` is unchanged).
        assert_eq!(scenario_files(&[]), Ok(vec![]));
        assert_eq!(
            scenario_files(&args(&["--out", "x"])),
            Ok(args(&["--out", "x"]))
        );
        assert_eq!(
            scenario_files(&args(&["--scenarios"])),
            Err("--scenarios needs a directory".into())
        );
        let empty = dir.join("nested.toml");
        let e = scenario_files(&args(&["--scenarios", &empty.display().to_string()])).unwrap_err();
        assert!(e.ends_with("no *.toml file there"), "{e}");
        let e = scenario_files(&args(&[
            "--scenarios",
            &dir.join("nope").display().to_string(),
        ]))
        .unwrap_err();
        assert!(e.contains("cannot read it"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
