//! The command line of `cargo xtask`: every subcommand, the arguments it takes and its `--help`.
//!
//! Everything is checked before anything runs: `-h` or `--help` after any subcommand prints its usage on
//! stdout and exits 0; an argument a subcommand does not take is an error (its usage on stderr, exit 2),
//! so a typo never starts a build. `cargo xtask help`, `--help` and `-h` print the command list (exit 0);
//! `cargo xtask help CMD` is `cargo xtask CMD --help`; no command at all is an error.

use crate::{bench, fuzz};

/// A subcommand: its name, one line for the list, and its `--help`.
pub(crate) struct Command {
    pub(crate) name: &'static str,
    pub(crate) about: &'static str,
    /// The usage lines and what the command does.
    pub(crate) usage: &'static str,
}

/// Every subcommand, in the order of the list.
pub(crate) const COMMANDS: [Command; 19] = [
    Command {
        name: "ci",
        about: "every check CI runs, failing on the first error",
        usage: "usage: cargo xtask ci
Every check CI runs, in order, stopping at the first failure: doc-paths, fmt, clippy with warnings denied,
the tests, ctest, nostd, msrv, embedded, loom, the examples, prometheus, c-example, dist-c --check,
install-check, py, wheel --test, publish-check, the API docs and sim. It installs what it needs (rustup targets and toolchains, QEMU,
Prometheus, the Python venv).",
    },
    Command {
        name: "doc-paths",
        about: "every .rs file and module that a comment names exists",
        usage: "usage: cargo xtask doc-paths
Checks that every `.rs` file a comment names exists, and every module a Rust comment names (\"see
`policy`\", \"the `policy` module\", `balance::policy`) (see xtask/src/doc_paths/mod.rs).",
    },
    Command {
        name: "sim",
        about: "the simulator: every scenario x every policy, report and charts",
        usage: "usage: cargo xtask sim [--scenarios DIR] [--out DIR] [--threads N] [--no-charts] [--policy NAME]
       cargo xtask sim --scenario-file F [--scenario-file F ...] [--out DIR] [--threads N] [--no-charts] [--policy NAME]
       cargo xtask sim --scenario NAME [--policy NAME]
       cargo xtask sim --list
The simulator's report (release build of weir-lb-sim): a summary table on stdout; the report, CSVs and
charts in DIR (target/sim). --scenarios DIR runs every DIR/*.toml scenario file (see sim/README.md);
--scenario runs one built-in scenario and prints it; --list names the scenarios and the policies.",
    },
    Command {
        name: "bench",
        about: "the criterion benchmarks, then benches/RESULTS.md",
        usage: bench::USAGE,
    },
    Command {
        name: "ctest",
        about: "the C ABI from C and C++ under ASan/UBSan, the header alone",
        usage: "usage: cargo xtask ctest
The C and C++ test programs of ffi-c/tests/c under AddressSanitizer and UBSan, the header alone as C99,
C11 and C++17, and weir-lb-ffi's Rust tests (see xtask/src/ctest.rs).",
    },
    Command {
        name: "header",
        about: "regenerates include/weir.h",
        usage: "usage: cargo xtask header
Writes the header cbindgen generates from ffi-c/ over include/weir.h.",
    },
    Command {
        name: "c-example",
        about: "the C example client over three local servers, checked",
        usage: "usage: cargo xtask c-example
Builds ffi-c/examples/ and runs the client over three local servers, checking its summary (see
xtask/src/example.rs).",
    },
    Command {
        name: "prometheus",
        about: "a real Prometheus scrapes the hyper example's /metrics, checked through its API",
        usage: "usage: cargo xtask prometheus
Runs weir-lb-tower's hyper example with --serve (three local servers, one failing after 8 s, 20 s of
steady load, /metrics on loopback) and a Prometheus server scraping it every second (loopback only;
Debian's package, installed when missing, or SKIPPED loudly), then checks through Prometheus' query API
that the failing node's failures were counted and its share of the calls fell (see
xtask/src/prometheus.rs).",
    },
    Command {
        name: "dist-c",
        about: "installs the C library: header, libraries, weir.pc",
        usage: "usage: cargo xtask dist-c --prefix DIR
       cargo xtask dist-c --check
--prefix installs include/weir.h, libweir.a, libweir.so and lib/pkgconfig/weir.pc into DIR (release-c
build); --check installs into a temporary prefix and builds the example against it (see
xtask/src/dist/mod.rs).",
    },
    Command {
        name: "fuzz",
        about: "the fuzz target over the C ABI",
        usage: fuzz::USAGE,
    },
    Command {
        name: "py",
        about: "the Python package: lint, install, pytest, stubtest, mypy",
        usage: "usage: cargo xtask py
In the venv target/py-venv: fmt and clippy on py/, `pip install ./py`, pytest, stubtest and mypy --strict
(see xtask/src/py/mod.rs).",
    },
    Command {
        name: "wheel",
        about: "the abi3 wheel and the sdist, in target/wheels; --test installs the wheel without Rust",
        usage: "usage: cargo xtask wheel [--test]
Builds the abi3 wheel (CPython >= 3.9) and the sdist into target/wheels with maturin, in the venv
target/py-venv, and checks their contents and metadata. With --test, installs the wheel into a fresh venv
with no Rust in reach and runs the test suite against it, then builds the sdist in an empty directory.",
    },
    Command {
        name: "install-check",
        about: "the README's install commands from a checkout, as a user types them",
        usage: "usage: cargo xtask install-check
Checks that the README and the guides write the install commands CI runs (this one's; `pip install ./py`,
which py runs; the wheel's, which wheel --test runs), then runs `cargo add --path path/to/weir/core` in
a scratch project with this checkout for path/to/weir, checks the line it writes against core/README.md
and `cargo check`s a main using weir::Config::default(), offline (see xtask/src/install.rs).",
    },
    Command {
        name: "bench-py",
        about: "the Python timings, then benches/RESULTS.md",
        usage: "usage: cargo xtask bench-py
Installs the package (release build) and runs py/bench/bench.py, which rewrites the \"Python\" section
of benches/RESULTS.md.",
    },
    Command {
        name: "embedded",
        about: "the firmware example under QEMU, and its footprint table",
        usage: "usage: cargo xtask embedded [--bless]
Builds examples/embedded for QEMU's Cortex-M4F and Cortex-M0 boards, runs it there as a test and prints
the table of flash, RAM and instructions; --bless writes the table into the README (see
xtask/src/embedded/mod.rs).",
    },
    Command {
        name: "nostd",
        about: "the core for bare-metal and microcontroller targets",
        usage: "usage: cargo xtask nostd
Builds weir-lb without std for aarch64-unknown-none and riscv64gc-unknown-none-elf, and with
critical-section for thumbv7em-none-eabihf and thumbv6m-none-eabi (installing the targets).",
    },
    Command {
        name: "loom",
        about: "the loom models",
        usage: "usage: cargo xtask loom
The loom models of the core (release, --cfg loom, target/loom).",
    },
    Command {
        name: "publish-check",
        about: "the published crates packaged and built together, as crates.io gets them",
        usage: "usage: cargo xtask publish-check
Checks the licence copies against the root's, then packages every publishable crate of the workspace
together (`cargo package -p weir-lb -p weir-lb-ffi -p weir-lb-tower`: each is built from its .crate,
the others resolved from their .crate files) and checks what each package holds (see
xtask/src/publish.rs).",
    },
    Command {
        name: "msrv",
        about: "the published crates built with the declared rust-version",
        usage: "usage: cargo xtask msrv
Builds weir-lb (with and without default features), weir-lb-ffi and weir-lb-tower with the toolchain the
workspace's rust-version names, installing it with rustup (see xtask/src/msrv.rs).",
    },
];

/// What `cargo xtask ...` asks for, checked.
#[derive(Debug, PartialEq)]
pub(crate) enum Parsed {
    /// The command list: `cargo xtask help`, `--help`, `-h`.
    List,
    /// One command's usage: `cargo xtask CMD --help`, `cargo xtask help CMD`.
    Help(&'static str),
    /// A command to run.
    Run(Job),
}

/// A command to run, with its arguments checked.
#[derive(Debug, PartialEq)]
pub(crate) enum Job {
    Ci,
    DocPaths,
    /// The arguments for `weir-sim` (`--scenarios DIR` still to expand).
    Sim(Vec<String>),
    Bench(bench::Mode),
    Ctest,
    Header,
    CExample,
    Prometheus,
    /// `--prefix DIR` or `--check`, as `dist::dist` takes them.
    DistC(Vec<String>),
    Fuzz(fuzz::Args),
    Py,
    Wheel {
        /// Also test the wheel in a fresh venv without Rust, and build the sdist.
        test: bool,
    },
    InstallCheck,
    BenchPy,
    Embedded {
        bless: bool,
    },
    Nostd,
    Loom,
    PublishCheck,
    Msrv,
}

/// A command line that cannot run: what is wrong, and the usage to show with it.
#[derive(Debug, PartialEq)]
pub(crate) struct Usage {
    pub(crate) error: String,
    pub(crate) usage: String,
}

/// The list `cargo xtask --help` prints.
pub(crate) fn list() -> String {
    let mut text = String::from(
        "usage: cargo xtask <command> [arguments]   (`cargo xtask <command> --help` for its usage)\n\ncommands:\n",
    );
    for c in &COMMANDS {
        text.push_str(&format!("  {:14} {}\n", c.name, c.about));
    }
    text.pop();
    text
}

fn command(name: &str) -> Option<&'static Command> {
    COMMANDS.iter().find(|c| c.name == name)
}

fn is_help(a: &str) -> bool {
    a == "-h" || a == "--help"
}

/// Checks a command line (the arguments after `cargo xtask`).
pub(crate) fn parse(args: &[String]) -> Result<Parsed, Usage> {
    let wrong = |error: String, usage: &str| Usage {
        error,
        usage: usage.to_string(),
    };
    let Some((name, rest)) = args.split_first() else {
        return Err(wrong("no command".into(), &list()));
    };
    match name.as_str() {
        "help" | "-h" | "--help" => {
            return match rest {
                [] => Ok(Parsed::List),
                [c] if command(c).is_some() => Ok(Parsed::Help(command(c).map_or("", |c| c.usage))),
                _ => Err(wrong(
                    format!("`{name}` takes one command name at most, got {rest:?}"),
                    &list(),
                )),
            };
        }
        _ => {}
    }
    let Some(cmd) = command(name) else {
        return Err(wrong(format!("unknown command {name:?}"), &list()));
    };
    if rest.iter().any(|a| is_help(a)) {
        return Ok(Parsed::Help(cmd.usage));
    }
    job(cmd.name, rest)
        .map(Parsed::Run)
        .map_err(|e| wrong(format!("{}: {e}", cmd.name), cmd.usage))
}

/// The job for command `name` with its arguments `args` (none of them `--help`).
fn job(name: &str, args: &[String]) -> Result<Job, String> {
    let none = |job: Job| match args {
        [] => Ok(job),
        [first, ..] => Err(format!("takes no arguments, got {first:?}")),
    };
    match name {
        "ci" => none(Job::Ci),
        "doc-paths" => none(Job::DocPaths),
        "sim" => sim_args(args).map(|()| Job::Sim(args.to_vec())),
        "bench" => bench::parse(args).map(Job::Bench),
        "ctest" => none(Job::Ctest),
        "header" => none(Job::Header),
        "c-example" => none(Job::CExample),
        "prometheus" => none(Job::Prometheus),
        "dist-c" => match args {
            [flag, _] if flag == "--prefix" => Ok(Job::DistC(args.to_vec())),
            [flag] if flag == "--check" => Ok(Job::DistC(args.to_vec())),
            [flag] if flag == "--prefix" => Err("--prefix needs a directory".into()),
            [] => Err("needs --prefix DIR or --check".into()),
            _ => Err(format!("takes --prefix DIR or --check, got {args:?}")),
        },
        "fuzz" => fuzz::parse(args).map(Job::Fuzz),
        "py" => none(Job::Py),
        "wheel" => match args {
            [] => Ok(Job::Wheel { test: false }),
            [flag] if flag == "--test" => Ok(Job::Wheel { test: true }),
            _ => Err(format!("takes --test at most, got {args:?}")),
        },
        "install-check" => none(Job::InstallCheck),
        "bench-py" => none(Job::BenchPy),
        "embedded" => match args {
            [] => Ok(Job::Embedded { bless: false }),
            [flag] if flag == "--bless" => Ok(Job::Embedded { bless: true }),
            _ => Err(format!("takes --bless at most, got {args:?}")),
        },
        "nostd" => none(Job::Nostd),
        "loom" => none(Job::Loom),
        "publish-check" => none(Job::PublishCheck),
        "msrv" => none(Job::Msrv),
        // Every name of COMMANDS has its arm above (a test checks it).
        other => Err(format!("no job for {other:?}")),
    }
}

/// Checks `cargo xtask sim`'s arguments as weir-sim (and `--scenarios`) read them, so that a typo fails
/// before the release build.
fn sim_args(args: &[String]) -> Result<(), String> {
    let (mut scenario, mut files) = (false, false);
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |what: &str| it.next().ok_or(format!("{a} needs {what}"));
        match a.as_str() {
            "--out" => {
                value("a directory")?;
            }
            "--threads" => {
                value("a number")?
                    .parse::<usize>()
                    .map_err(|_| "--threads needs a whole number".to_string())?;
            }
            "--no-charts" | "--list" => {}
            "--scenario" => {
                value("a scenario name")?;
                scenario = true;
            }
            "--scenario-file" => {
                value("a file")?;
                files = true;
            }
            "--scenarios" => {
                value("a directory")?;
                files = true;
            }
            "--policy" => {
                value("a policy name")?;
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if scenario && files {
        return Err(
            "--scenario names a built-in scenario: use it or scenario files, not both".into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn parse_str(v: &[&str]) -> Result<Parsed, Usage> {
        parse(&args(v))
    }

    #[test]
    fn help_and_the_list_exit_zero() {
        for v in [&["help"][..], &["--help"], &["-h"]] {
            assert_eq!(parse_str(v), Ok(Parsed::List), "{v:?}");
        }
        let list = list();
        for c in &COMMANDS {
            assert!(
                list.contains(&format!("  {:14} {}", c.name, c.about)),
                "{list}"
            );
            assert_eq!(
                parse_str(&["help", c.name]),
                Ok(Parsed::Help(c.usage)),
                "{}",
                c.name
            );
        }
        assert!(parse_str(&["help", "nope"]).is_err());
        assert!(parse_str(&["help", "ci", "sim"]).is_err());
    }

    #[test]
    fn every_command_answers_help_with_its_usage_even_after_other_arguments() {
        for c in &COMMANDS {
            assert!(
                c.usage
                    .starts_with(&format!("usage: cargo xtask {}", c.name)),
                "{}: {}",
                c.name,
                c.usage
            );
            for tail in [
                &["--help"][..],
                &["-h"],
                &["--bogus", "-h"],
                &["--out", "--help"],
            ] {
                let mut v = vec![c.name];
                v.extend_from_slice(tail);
                assert_eq!(parse_str(&v), Ok(Parsed::Help(c.usage)), "{v:?}");
            }
        }
    }

    #[test]
    fn an_unknown_argument_is_an_error_for_every_command() {
        for c in &COMMANDS {
            let e = parse_str(&[c.name, "--bogus"]).unwrap_err();
            assert!(e.error.starts_with(c.name), "{e:?}");
            assert!(e.error.contains("--bogus"), "{e:?}");
            assert_eq!(e.usage, c.usage);
        }
        let e = parse_str(&["frobnicate"]).unwrap_err();
        assert_eq!(e.error, "unknown command \"frobnicate\"");
        assert_eq!(e.usage, list());
        assert_eq!(parse_str(&[]).unwrap_err().error, "no command");
    }

    #[test]
    fn every_command_without_arguments_has_a_job_or_says_what_it_needs() {
        for c in &COMMANDS {
            match parse_str(&[c.name]) {
                Ok(Parsed::Run(_)) => {}
                Err(e) if c.name == "dist-c" => {
                    assert_eq!(e.error, "dist-c: needs --prefix DIR or --check")
                }
                other => panic!("{}: {other:?}", c.name),
            }
        }
        assert_eq!(parse_str(&["ci"]), Ok(Parsed::Run(Job::Ci)));
        assert_eq!(parse_str(&["msrv"]), Ok(Parsed::Run(Job::Msrv)));
        assert_eq!(
            parse_str(&["publish-check"]),
            Ok(Parsed::Run(Job::PublishCheck))
        );
        assert!(parse_str(&["ci", "fast"]).is_err());
        assert!(parse_str(&["wheel", "--release"]).is_err());
    }

    #[test]
    fn dist_c_takes_a_prefix_or_check() {
        assert_eq!(
            parse_str(&["dist-c", "--prefix", "/opt/w"]),
            Ok(Parsed::Run(Job::DistC(args(&["--prefix", "/opt/w"]))))
        );
        assert_eq!(
            parse_str(&["dist-c", "--check"]),
            Ok(Parsed::Run(Job::DistC(args(&["--check"]))))
        );
        for bad in [
            &["dist-c", "--prefix"][..],
            &["dist-c", "--check", "--prefix", "x"],
            &["dist-c", "--check", "x"],
            &["dist-c", "x", "y"],
        ] {
            assert!(parse_str(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn embedded_takes_bless_only() {
        assert_eq!(
            parse_str(&["embedded"]),
            Ok(Parsed::Run(Job::Embedded { bless: false }))
        );
        assert_eq!(
            parse_str(&["embedded", "--bless"]),
            Ok(Parsed::Run(Job::Embedded { bless: true }))
        );
        assert!(parse_str(&["embedded", "--bless", "--bless"]).is_err());
    }

    #[test]
    fn sim_arguments_are_weir_sims() {
        let ok = [
            &["sim"][..],
            &["sim", "--scenarios", "d", "--no-charts", "--threads", "2"],
            &["sim", "--scenario", "black_hole", "--policy", "weir"],
            &[
                "sim",
                "--scenario-file",
                "a.toml",
                "--scenario-file",
                "b.toml",
                "--out",
                "o",
            ],
            &["sim", "--list"],
        ];
        for v in ok {
            assert_eq!(
                parse_str(v),
                Ok(Parsed::Run(Job::Sim(args(&v[1..])))),
                "{v:?}"
            );
        }
        let bad: [(&[&str], &str); 5] = [
            (
                &["sim", "--threads", "many"],
                "sim: --threads needs a whole number",
            ),
            (&["sim", "--out"], "sim: --out needs a directory"),
            (
                &["sim", "--scenario", "x", "--scenarios", "d"],
                "sim: --scenario names a built-in scenario: use it or scenario files, not both",
            ),
            (&["sim", "scenario"], "sim: unknown argument \"scenario\""),
            (&["sim", "--charts"], "sim: unknown argument \"--charts\""),
        ];
        for (v, error) in bad {
            assert_eq!(parse_str(v).unwrap_err().error, error, "{v:?}");
        }
    }
}
