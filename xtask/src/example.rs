//! `cargo xtask c-example`: the C example of `ffi-c/examples/` as a test. It builds `libweir.a`
//! (debug), compiles `server.c` and `client.c` as the C suite compiles its tests (C11, warnings as
//! errors, ASan and UBSan), starts three servers on ports the system picks (one that answers at once,
//! one that resets every connection, one that answers after 50 ms), runs the client over them and checks
//! its `SUMMARY` lines:
//! - no call lost: every request started was completed, every lease granted was released, and
//!   `weir_balancer_stats` agree (in flight 0, granted = released); the client exits 0;
//! - the resetting server was tried and failed, and after its warm-up (its first failure, see
//!   `client.c`) it got under 5 % of the calls;
//! - the other two never failed, and at least 95 % of all requests succeeded.
//!
//! The servers are killed when the check ends, whether it passed or not.

use crate::dist::metadata;
use crate::process::{cargo, fail, run};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// The C suite's flags: C11, warnings as errors, sanitizers that stop at the first report.
pub(crate) const C_FLAGS: [&str; 8] = [
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Wpedantic",
    "-Werror",
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-g",
];
/// Requests and worker threads of the run.
const REQUESTS: &str = "2000";
const THREADS: &str = "4";
/// The server modes, in node order: node 1 is the one that fails.
pub(crate) const MODES: [&str; 3] = ["ok", "reset", "slow"];
const FAILING_NODE: usize = 1;
/// The failing node's most share of the calls after its warm-up, and the least success rate overall.
const MAX_FAILING_SHARE: f64 = 0.05;
const MIN_SUCCESS_RATE: f64 = 0.95;
/// How long the client may run before it is killed (it takes well under a second).
const CLIENT_LIMIT: Duration = Duration::from_secs(60);
/// Servers end themselves after this, should this process die without killing them.
const SERVER_LIFETIME_S: &str = "300";

pub(crate) fn c_example() {
    let start = Instant::now();
    cargo(&["build", "-p", "weir-lb-ffi"]);
    let (target, _) = metadata();
    let out = target.join("c-example");
    fs::create_dir_all(&out)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", out.display())));
    let server = build_server(&out, &C_FLAGS);
    let client = out.join("client");
    let lib = target.join("debug").join("libweir.a");
    let mut args: Vec<String> = C_FLAGS.iter().map(|s| s.to_string()).collect();
    args.extend(
        [
            "-Iinclude",
            "ffi-c/examples/client.c",
            &lib.to_string_lossy(),
            "-lpthread",
            "-ldl",
            "-lm",
            "-o",
            &client.to_string_lossy(),
        ]
        .map(String::from),
    );
    run(
        "cc",
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &[],
    );
    let checked = run_client(&server, &client, &[], &["-n", REQUESTS, "-c", THREADS])
        .and_then(|text| check(&text));
    if let Err(e) = checked {
        fail(&format!("c-example: {e}"));
    }
    eprintln!(
        "    c-example passed in {:.1} s",
        start.elapsed().as_secs_f64()
    );
}

/// Compiles `ffi-c/examples/server.c` into `out/server` with `flags`.
pub(crate) fn build_server(out: &Path, flags: &[&str]) -> PathBuf {
    let server = out.join("server");
    let server_path = server.to_string_lossy();
    let mut args = flags.to_vec();
    args.extend([
        "ffi-c/examples/server.c",
        "-lpthread",
        "-o",
        server_path.as_ref(),
    ]);
    run("cc", &args, &[]);
    server
}

/// Starts one server per [`MODES`], runs `client ARGS HOST:PORT...` (with `envs` and no
/// `LD_LIBRARY_PATH` but theirs) and returns its
/// stdout, echoed; an error if it failed or ran too long. The servers are gone when this returns.
pub(crate) fn run_client(
    server: &Path,
    client: &Path,
    envs: &[(&str, &str)],
    args: &[&str],
) -> Result<String, String> {
    let servers = Servers::start(server)?;
    let stdout_path = client.with_extension("out");
    let stdout = File::create(&stdout_path)
        .map_err(|e| format!("cannot create {}: {e}", stdout_path.display()))?;
    let mut all: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    all.extend(servers.addresses.iter().cloned());
    eprintln!("\n==> {} {}", client.display(), all.join(" "));
    let start = Instant::now();
    let mut child = Command::new(client)
        .args(&all)
        // Only what the caller gives: a shared build must find libweir the way it was built to.
        .env_remove("LD_LIBRARY_PATH")
        .envs(envs.iter().copied())
        // Sanitizer reports (ASan's leak check included) end the run with an error.
        .env("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
        .stdout(stdout)
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", client.display()))?;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > CLIENT_LIMIT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("the client ran over {CLIENT_LIMIT:?}: killed"));
            }
            Ok(None) => sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot wait for the client: {e}")),
        }
    };
    drop(servers);
    let text = fs::read_to_string(&stdout_path)
        .map_err(|e| format!("cannot read {}: {e}", stdout_path.display()))?;
    eprint!("{text}");
    eprintln!("    client ran in {:.2} s", start.elapsed().as_secs_f64());
    if !status.success() {
        return Err(format!("the client exited with {status}"));
    }
    Ok(text)
}

/// The running servers, killed on drop (also when a check fails or panics).
struct Servers {
    children: Vec<Child>,
    addresses: Vec<String>,
}

impl Servers {
    fn start(server: &Path) -> Result<Servers, String> {
        let mut servers = Servers {
            children: Vec::new(),
            addresses: Vec::new(),
        };
        for mode in MODES {
            let mut child = Command::new(server)
                .args([mode, "--lifetime-s", SERVER_LIFETIME_S])
                .env("ASAN_OPTIONS", "detect_leaks=0")
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| format!("cannot start {} {mode}: {e}", server.display()))?;
            let stdout = child.stdout.take();
            servers.children.push(child);
            let mut line = String::new();
            if let Some(stdout) = stdout {
                BufReader::new(stdout)
                    .read_line(&mut line)
                    .map_err(|e| format!("cannot read the {mode} server's port: {e}"))?;
            }
            let port: u16 = line
                .trim()
                .strip_prefix("PORT ")
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| format!("the {mode} server said {line:?}, not PORT <n>"))?;
            eprintln!("    server {mode} on 127.0.0.1:{port}");
            servers.addresses.push(format!("127.0.0.1:{port}"));
        }
        Ok(servers)
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The `SUMMARY` lines of the client's output: each node's fields by node index, and the totals.
#[derive(Debug, Default)]
pub(crate) struct Summary {
    nodes: BTreeMap<usize, BTreeMap<String, String>>,
    total: BTreeMap<String, String>,
}

impl Summary {
    pub(crate) fn parse(text: &str) -> Result<Summary, String> {
        let mut summary = Summary::default();
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("SUMMARY ") else {
                continue;
            };
            let fields: BTreeMap<String, String> = rest
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            if rest.starts_with("total ") {
                summary.total = fields;
            } else {
                let node = fields
                    .get("node")
                    .and_then(|n| n.parse().ok())
                    .ok_or_else(|| format!("a SUMMARY line without a node: {line}"))?;
                summary.nodes.insert(node, fields);
            }
        }
        if summary.total.is_empty() {
            return Err("no `SUMMARY total` line".into());
        }
        Ok(summary)
    }

    fn field(&self, node: Option<usize>, key: &str) -> Result<&str, String> {
        let fields = match node {
            Some(n) => self
                .nodes
                .get(&n)
                .ok_or_else(|| format!("no SUMMARY for node {n}"))?,
            None => &self.total,
        };
        fields
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| format!("SUMMARY {node:?} has no {key}"))
    }

    pub(crate) fn number(&self, node: Option<usize>, key: &str) -> Result<f64, String> {
        let v = self.field(node, key)?;
        v.parse()
            .map_err(|_| format!("SUMMARY {node:?} {key}={v} is not a number"))
    }
}

/// No call lost: started = completed = the requests, granted = released, weir's counters agree.
pub(crate) fn check_no_loss(s: &Summary) -> Result<(), String> {
    let total = |k: &str| s.number(None, k);
    let requests = total("requests")?;
    let mut problems = Vec::new();
    for (what, got, want) in [
        ("lost", total("lost")?, 0.0),
        ("started", total("started")?, requests),
        ("completed", total("completed")?, requests),
        ("released", total("released")?, total("acquired")?),
        (
            "stats_acquired",
            total("stats_acquired")?,
            total("acquired")?,
        ),
        (
            "stats_released",
            total("stats_released")?,
            total("acquired")?,
        ),
        ("stats_in_flight", total("stats_in_flight")?, 0.0),
        ("consistent", total("consistent")?, 1.0),
    ] {
        if got != want {
            problems.push(format!("{what} = {got}, expected {want}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("calls lost: {}", problems.join("; ")))
    }
}

/// Every assertion of the example's test (see the module docs).
fn check(text: &str) -> Result<(), String> {
    let s = Summary::parse(text)?;
    check_no_loss(&s)?;
    let failing = Some(FAILING_NODE);
    if s.number(failing, "failed")? < 1.0 || s.number(failing, "succeeded")? != 0.0 {
        return Err(
            "the resetting server (node 1) should have been tried and always failed".into(),
        );
    }
    let share = s.number(failing, "after_warmup_share")?;
    if share >= MAX_FAILING_SHARE {
        return Err(format!(
            "the failing server got {:.2} % of the calls after its warm-up (at most {:.0} % allowed)",
            share * 100.0,
            MAX_FAILING_SHARE * 100.0
        ));
    }
    for healthy in (0..MODES.len()).filter(|&n| n != FAILING_NODE) {
        if s.number(Some(healthy), "failed")? != 0.0 {
            return Err(format!(
                "node {healthy} ({}) should never fail",
                MODES[healthy]
            ));
        }
    }
    let rate = s.number(None, "success_rate")?;
    if rate < MIN_SUCCESS_RATE {
        return Err(format!(
            "success rate {:.2} % is under {:.0} %",
            rate * 100.0,
            MIN_SUCCESS_RATE * 100.0
        ));
    }
    eprintln!(
        "    checked: no call lost; failing server's share after warm-up {:.2} % (< {:.0} %); success {:.2} % (>= {:.0} %)",
        share * 100.0,
        MAX_FAILING_SHARE * 100.0,
        rate * 100.0,
        MIN_SUCCESS_RATE * 100.0
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
node table...
SUMMARY node=0 address=127.0.0.1:1 calls=1983 succeeded=1983 failed=0 dropped=0 share=0.9915 last80_share=0.9925 warmup_calls=none after_warmup_calls=0 after_warmup_share=none
SUMMARY node=1 address=127.0.0.1:2 calls=1 succeeded=0 failed=1 dropped=0 share=0.0005 last80_share=0.0000 warmup_calls=4 after_warmup_calls=0 after_warmup_share=0.0000
SUMMARY node=2 address=127.0.0.1:3 calls=16 succeeded=16 failed=0 dropped=0 share=0.0080 last80_share=0.0075 warmup_calls=none after_warmup_calls=0 after_warmup_share=none
SUMMARY total requests=2000 started=2000 completed=2000 lost=0 shed=0 acquired=2000 released=2000 succeeded=1999 success_rate=0.9995 stats_acquired=2000 stats_released=2000 stats_in_flight=0 consistent=1
";

    #[test]
    fn a_good_run_passes() {
        assert_eq!(check(GOOD), Ok(()));
    }

    #[test]
    fn each_broken_promise_fails() {
        for (from, to, says) in [
            (
                "after_warmup_share=0.0000",
                "after_warmup_share=0.0500",
                "after its warm-up",
            ),
            ("completed=2000", "completed=1999", "completed = 1999"),
            (
                "stats_in_flight=0",
                "stats_in_flight=1",
                "stats_in_flight = 1",
            ),
            (
                "success_rate=0.9995",
                "success_rate=0.9400",
                "success rate 94.00",
            ),
            (
                "calls=1 succeeded=0 failed=1",
                "calls=1 succeeded=1 failed=0",
                "node 1",
            ),
            (
                "calls=16 succeeded=16 failed=0",
                "calls=16 succeeded=15 failed=1",
                "node 2",
            ),
        ] {
            let broken = GOOD.replace(from, to);
            assert_ne!(broken, GOOD, "{from} is in the sample");
            let err = check(&broken).expect_err(to);
            assert!(err.contains(says), "{to}: {err}");
        }
        assert!(check("no summary here").is_err());
    }
}
