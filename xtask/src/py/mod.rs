//! The Python package (`py/`): `cargo xtask py` checks it, `cargo xtask wheel` builds and checks its abi3
//! wheel and its sdist (`--test`: installs the wheel where no Rust is in reach and tests it, and builds the
//! sdist; see `py/wheel.rs`), `cargo xtask bench-py` times it against the same algorithm in pure Python.
//!
//! Everything runs in a virtual environment of its own, `target/py-venv` (`python3 -m venv`), with pinned
//! tools ([`TOOLS`]). The crate `weir-lb-py` is not a workspace member (an extension module links against the
//! interpreter that loads it; see `py/Cargo.toml`), so `cargo xtask py` also formats and lints it here.
//! Its builds go to `target/py`, beside the workspace's.
//!
//! `cargo xtask py`, in order: the venv; `cargo fmt --check` and `clippy -D warnings` on `py/`;
//! `pip install ./py` (the user's command, [`CHECKOUT_INSTALL`]: maturin as the PEP 517 backend, fetched
//! by pip); pytest (`py/tests`, warnings as errors; the HTTP integrations' tests run real local servers);
//! `python -m mypy.stubtest weir._weir`; `mypy --strict` on the package, the examples, the benchmark
//! script and the typing tests that must pass (`py/tests/typing/pass_*.py`); then each typing test that
//! must fail (`py/tests/typing/fail_*.py`) must fail with exactly the errors its `# E: ...` comments name
//! ([`typing_failures`]).

mod wheel;

pub use wheel::wheel;

use crate::process::{fail, run};
use crate::workspace::target_dir;
use std::collections::BTreeSet;
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The pinned tools of the venv (pip's requirement syntax). Bump them here; the venv is rebuilt when
/// this list changes (it is written to the venv as `weir-tools.txt`). httpx and requests are the
/// libraries `weir.httpx` and `weir.requests` integrate with (the package's optional extras), for their
/// tests against local servers and for mypy; types-requests types requests for mypy; prometheus-client is
/// what `weir.prometheus` plugs into (its tests parse the metrics text with its parser). Each pin installs
/// on Python 3.9, the oldest the package supports.
const TOOLS: [&str; 7] = [
    "maturin==1.16.0",
    "pytest==8.3.5",
    "mypy==1.15.0",
    "httpx==0.28.1",
    "requests==2.32.5",
    "types-requests==2.32.4.20250913",
    "prometheus-client==0.26.0",
];

/// The Python to build the venv with: `$PYTHON`, else `python3` (`python` on Windows).
fn system_python() -> String {
    env::var("PYTHON").unwrap_or_else(|_| {
        if cfg!(windows) {
            "python".into()
        } else {
            "python3".into()
        }
    })
}

/// A program inside the venv.
fn venv_bin(venv: &Path, program: &str) -> PathBuf {
    if cfg!(windows) {
        venv.join("Scripts").join(format!("{program}.exe"))
    } else {
        venv.join("bin").join(program)
    }
}

/// The venv with the pinned tools, created or refreshed when [`TOOLS`] changed.
fn venv() -> PathBuf {
    let venv = target_dir().join("py-venv");
    let stamp = venv.join("weir-tools.txt");
    let wanted = TOOLS.join("\n");
    let python = venv_bin(&venv, "python");
    if !python.exists() {
        run(&system_python(), &["-m", "venv", &path(&venv)], &[]);
    }
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        let mut args = vec!["-m", "pip", "install", "--quiet", "--upgrade", "pip"];
        args.extend(TOOLS);
        run(&path(&python), &args, &[]);
        std::fs::write(&stamp, &wanted)
            .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", stamp.display())));
    }
    venv
}

fn path(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The environment of the build steps: the interpreter pyo3 builds against (the venv's) and the target
/// directory for `py/` (the venv's programs are called by their paths, so `PATH` is left alone).
fn venv_env(venv: &Path) -> Vec<(String, String)> {
    vec![
        ("PYO3_PYTHON".into(), path(&venv_bin(venv, "python"))),
        ("CARGO_TARGET_DIR".into(), path(&target_dir().join("py"))),
    ]
}

/// Runs `program` with the venv's environment, in `dir`.
fn run_in(dir: &str, program: &str, args: &[&str], envs: &[(String, String)]) {
    let pairs: Vec<(&str, &str)> = envs.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let here = env::current_dir().unwrap_or_else(|e| fail(&format!("no current directory: {e}")));
    env::set_current_dir(dir).unwrap_or_else(|e| fail(&format!("cannot enter {dir}: {e}")));
    run(program, args, &pairs);
    env::set_current_dir(here).unwrap_or_else(|e| fail(&format!("cannot go back: {e}")));
}

/// The install from a checkout, as the README and `py/README.md` write it and as [`install`] runs it
/// (`cargo xtask install-check` checks that the pages hold it).
pub(crate) const CHECKOUT_INSTALL: &str = "pip install ./py";

/// The install of the built wheel where there is no Rust, as the README and `py/README.md` write it: run
/// where the wheel is, `*` standing for the rest of its name, by `cargo xtask wheel --test` (see
/// `py/wheel.rs`).
pub(crate) const WHEEL_INSTALL: &str = "pip install weir_lb-*.whl";

/// A command of the pages (`pip ...`) as the venv's program and its arguments.
fn venv_command(venv: &Path, command: &'static str) -> (String, Vec<&'static str>) {
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_else(|| fail("an empty command"));
    (path(&venv_bin(venv, program)), words.collect())
}

/// Installs the package into the venv as a user would: [`CHECKOUT_INSTALL`] with the venv's pip, which
/// builds and reinstalls a directory's package each time. A venv made before the distribution was renamed
/// `weir-lb` may still hold the old `weir` distribution, whose record names the same files: it is removed
/// first, so that neither ever deletes the other's files.
fn install(venv: &Path, envs: &[(String, String)]) {
    let python = path(&venv_bin(venv, "python"));
    run_in(
        ".",
        &python,
        &["-m", "pip", "uninstall", "--quiet", "--yes", "weir"],
        envs,
    );
    let (pip, args) = venv_command(venv, CHECKOUT_INSTALL);
    run_in(".", &pip, &args, envs);
}

/// `cargo xtask py`: lint, install, test, check the stubs and the types.
pub fn py() {
    let venv = venv();
    let envs = venv_env(&venv);
    let python = path(&venv_bin(&venv, "python"));
    run_in(
        ".",
        "cargo",
        &["fmt", "--manifest-path", "py/Cargo.toml", "--check"],
        &envs,
    );
    run_in(
        ".",
        "cargo",
        &[
            "clippy",
            "--manifest-path",
            "py/Cargo.toml",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &envs,
    );
    install(&venv, &envs);
    // From py/, so that pytest reads py/pyproject.toml (warnings are errors) and imports the installed
    // package, not the source tree.
    run_in("py", &python, &["-m", "pytest", "-q", "tests"], &envs);
    run_in("py", &python, &["-m", "mypy.stubtest", "weir._weir"], &envs);
    let (passing, failing) = typing_tests();
    let mut args = vec![
        "-m",
        "mypy",
        "--strict",
        "python/weir",
        "examples",
        "bench/bench.py",
    ];
    args.extend(passing.iter().map(String::as_str));
    run_in("py", &python, &args, &envs);
    for file in &failing {
        typing_failures(&python, file);
    }
}

/// The typing tests under `py/tests/typing`, relative to `py/`: those that must pass and those that must
/// fail, each sorted.
fn typing_tests() -> (Vec<String>, Vec<String>) {
    let dir = Path::new("py/tests/typing");
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| fail(&format!("cannot list {}: {e}", dir.display())))
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".py"))
        .collect();
    names.sort();
    let under = |prefix: &str| -> Vec<String> {
        names
            .iter()
            .filter(|n| n.starts_with(prefix))
            .map(|n| format!("tests/typing/{n}"))
            .collect()
    };
    let (passing, failing) = (under("pass_"), under("fail_"));
    if passing.is_empty() || failing.is_empty() {
        fail(&format!(
            "{} must hold pass_*.py and fail_*.py typing tests",
            dir.display()
        ));
    }
    (passing, failing)
}

/// `mypy --strict` on one typing test that must fail (`file`, relative to `py/`): it must exit with 1 and
/// report exactly the errors that the file's `# E: <message>` comments name, each on its own line, and
/// no other.
fn typing_failures(python: &str, file: &str) {
    let source = std::fs::read_to_string(Path::new("py").join(file))
        .unwrap_or_else(|e| fail(&format!("cannot read py/{file}: {e}")));
    let expected: BTreeSet<(usize, String)> = source
        .lines()
        .enumerate()
        .filter_map(|(i, line)| {
            let (_, message) = line.split_once("# E: ")?;
            Some((i + 1, message.trim().to_string()))
        })
        .collect();
    if expected.is_empty() {
        fail(&format!("py/{file} names no expected error (# E: ...)"));
    }
    eprintln!(
        "\n==> (in py) {python} -m mypy --strict {file}: must fail with exactly its # E: errors"
    );
    let out = Command::new(python)
        .args(["-m", "mypy", "--strict", "--no-error-summary", file])
        .current_dir("py")
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot start mypy: {e}")));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let prefix = format!("{file}:");
    let reported: BTreeSet<(usize, String)> = stdout
        .lines()
        .filter_map(|line| {
            let rest = line.strip_prefix(&prefix)?;
            let (n, rest) = rest.split_once(':')?;
            let message = rest.trim().strip_prefix("error: ")?;
            Some((n.parse().ok()?, message.trim().to_string()))
        })
        .collect();
    if out.status.code() != Some(1) || reported != expected {
        fail(&format!(
            "py/{file}: mypy must exit with 1 and report exactly {expected:?}; it exited with {} and \
             reported {reported:?}\n{stdout}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    eprintln!("    ok: {} expected error(s)", expected.len());
}

/// `cargo xtask bench-py`: installs the package (release build) and runs `py/bench/bench.py`, which
/// prints both timings and their ratio and rewrites the "Python" section of `benches/RESULTS.md`.
pub fn bench_py() {
    let venv = venv();
    let envs = venv_env(&venv);
    install(&venv, &envs);
    let python = path(&venv_bin(&venv, "python"));
    run_in(
        ".",
        &python,
        &["py/bench/bench.py", "--results", "benches/RESULTS.md"],
        &envs,
    );
}
