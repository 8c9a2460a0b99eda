//! Running the commands a job is made of, and failing: every step is echoed on stderr as `==> ...` and
//! timed, and the first failure stops everything with one `xtask: FAILED: ...` line and exit status 1.

use std::process::{exit, Command};
use std::time::Instant;

/// Stops xtask: prints `xtask: FAILED: {msg}` and exits with status 1.
pub(crate) fn fail(msg: &str) -> ! {
    eprintln!("xtask: FAILED: {msg}");
    exit(1);
}

/// Runs a command, echoing it, and stops everything on failure.
pub(crate) fn run(program: &str, args: &[&str], envs: &[(&str, &str)]) {
    let shown = format!("{program} {}", args.join(" "));
    let prefix: String = envs.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    eprintln!("\n==> {prefix}{shown}");
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot start `{shown}`: {e}")));
    if !status.success() {
        fail(&format!("`{prefix}{shown}` exited with {status}"));
    }
    eprintln!("    ok in {:.1} s", start.elapsed().as_secs_f64());
}

/// [`run`] for `cargo` without environment variables.
pub(crate) fn cargo(args: &[&str]) {
    run("cargo", args, &[]);
}
