//! The xtask binary as a user calls it: every command's `--help` and `-h` print its usage and exit 0,
//! and an argument a command does not take exits 2, both without running anything (every step xtask
//! runs is announced on stderr with `==>`, so an empty stderr means nothing ran).

use std::process::{Command, Output};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("the xtask binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The command names, from the list `cargo xtask --help` prints.
fn commands() -> Vec<String> {
    let out = xtask(&["--help"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let list = text(&out.stdout);
    let names: Vec<String> = list
        .split_once("commands:\n")
        .expect("a command list")
        .1
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(String::from))
        .collect();
    assert!(names.len() >= 17, "{list}");
    names
}

#[test]
fn help_lists_the_commands() {
    let names = commands();
    for spelling in [&["help"][..], &["-h"], &["--help"]] {
        let out = xtask(spelling);
        assert_eq!(out.status.code(), Some(0), "{spelling:?}");
        for name in &names {
            assert!(text(&out.stdout).contains(name.as_str()), "{spelling:?}");
        }
    }
    for name in ["ci", "publish-check", "msrv", "dist-c", "py", "wheel"] {
        assert!(names.iter().any(|n| n == name), "{names:?}");
    }
}

#[test]
fn every_command_prints_its_usage_on_help_and_runs_nothing() {
    for name in commands() {
        for flag in ["--help", "-h"] {
            let out = xtask(&[&name, flag]);
            let stdout = text(&out.stdout);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{name} {flag}: {}",
                text(&out.stderr)
            );
            assert!(
                stdout.starts_with(&format!("usage: cargo xtask {name}")),
                "{name} {flag}: {stdout}"
            );
            assert_eq!(text(&out.stderr), "", "{name} {flag}");
        }
        let out = xtask(&["help", &name]);
        assert_eq!(out.status.code(), Some(0), "help {name}");
        assert!(text(&out.stdout).starts_with(&format!("usage: cargo xtask {name}")));
    }
}

#[test]
fn an_unknown_argument_exits_2_and_runs_nothing() {
    for name in commands() {
        let out = xtask(&[&name, "--no-such-flag"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
        assert!(
            stderr.starts_with(&format!("xtask: {name}: ")),
            "{name}: {stderr}"
        );
        assert!(stderr.contains("--no-such-flag"), "{name}: {stderr}");
        assert!(
            stderr.contains(&format!("usage: cargo xtask {name}")),
            "{stderr}"
        );
        assert!(!stderr.contains("==>"), "{name} ran something: {stderr}");
        assert_eq!(text(&out.stdout), "", "{name}");
    }
    for args in [&[][..], &["no-such-command"], &["help", "no-such-command"]] {
        let out = xtask(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(text(&out.stderr).contains("commands:"), "{args:?}");
    }
}
