//! `cargo xtask prometheus`: weir-tower's metrics scraped by a real Prometheus server, and read back
//! through Prometheus' HTTP API.
//!
//! It finds `prometheus` (Debian's package, installed with apt-get when missing; without it, and without
//! a way to install it, the check says SKIPPED on stderr, loudly, and passes without having run). It
//! builds weir-lb-tower's hyper example and runs it with `--serve`: a steady 200 requests a second over
//! three local servers for [`RUN`], the server "fails" healthy for its first [`FAIL_AFTER`] and answering
//! 500 from then on, the balance's metrics served on a loopback port. Prometheus scrapes that port every
//! second, listening on loopback only, its storage in `<target>/prometheus/`. Once the run is over, the
//! check asks Prometheus' query API for:
//!
//! - the outcome counters at the run's end: the balancer's `weir_released_total{outcome="failure"}`
//!   above 0, and per node `weir_node_released_total{outcome="failure"}` above 0 for the failing node
//!   and exactly 0 for the others;
//! - each node's share of the calls released in an early window (before the failures) and in the last
//!   [`WINDOW_S`] seconds of the run (`sum by (node) (increase(weir_node_released_total[5s]))`, every
//!   outcome), and its success rate averaged over each: the failing node's share falls, ending under
//!   [`MAX_LATE_SHARE`] with the healthy nodes carrying the rest, and its success rate falls.
//!
//! The numbers are printed. Both processes are killed when the check ends, whether it passed or not; the
//! whole check takes about [`RUN`] plus a few seconds beyond the build.

use crate::process::{cargo, fail};
use crate::tools::install_tool;
use crate::workspace::target_dir;
use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread::{self, sleep};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long the example balances, and when its failing server starts failing.
const RUN: Duration = Duration::from_secs(20);
const FAIL_AFTER: Duration = Duration::from_secs(8);
/// The windows the shares are taken over, in seconds from the example's start: `[FAIL_AFTER - 1 -
/// WINDOW_S, FAIL_AFTER - 1]` (every server healthy) and the last `WINDOW_S` seconds of the run.
const WINDOW_S: u64 = 5;
/// The failing node's most share of the calls in the last window.
const MAX_LATE_SHARE: f64 = 0.10;
/// The failing node's name (its key in the example).
const FAILING: &str = "fails";
const NODES: [&str; 3] = ["healthy", FAILING, "slow"];
/// How long to wait for Prometheus to be ready, for the example's address and for the first scrape.
const START_LIMIT: Duration = Duration::from_secs(30);

pub(crate) fn prometheus() {
    let start = Instant::now();
    if let Err(e) = install_tool(
        "prometheus",
        "prometheus",
        "`apt-get install prometheus` on Debian and Ubuntu, or a release from prometheus.io on the PATH",
    ) {
        eprintln!("\n!!!!! SKIPPED: prometheus check: no Prometheus server: {e} !!!!!");
        return;
    }
    cargo(&["build", "-p", "weir-lb-tower", "--example", "hyper"]);
    let dir = target_dir().join("prometheus");
    let _ = fs::remove_dir_all(&dir);
    if let Err(e) = fs::create_dir_all(&dir) {
        fail(&format!("cannot create {}: {e}", dir.display()));
    }
    let example = target_dir()
        .join("debug")
        .join("examples")
        .join(format!("hyper{}", std::env::consts::EXE_SUFFIX));
    match check(&example, &dir) {
        Ok(report) => eprintln!(
            "{report}\n    prometheus passed in {:.1} s",
            start.elapsed().as_secs_f64()
        ),
        Err(e) => fail(&format!("prometheus: {e}")),
    }
}

/// A child process killed (and reaped) when this is dropped, on every path out of the check.
struct Running {
    name: &'static str,
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Running {
    /// An error if it has exited.
    fn alive(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!("{} exited early with {status}", self.name)),
            Err(e) => Err(format!("cannot check on {}: {e}", self.name)),
        }
    }
}

/// The example's stdout, line by line, from a thread that reads it to its end (so its pipe never fills).
fn lines_of(child: &mut Child) -> Result<mpsc::Receiver<String>, String> {
    let stdout = child
        .stdout
        .take()
        .ok_or("the example's stdout is not piped")?;
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    Ok(rx)
}

/// Echoes the example's lines until one starts with `prefix`, which it returns; an error after `limit`.
fn wait_line(
    lines: &mpsc::Receiver<String>,
    prefix: &str,
    limit: Duration,
) -> Result<String, String> {
    let end = Instant::now() + limit;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                eprintln!("    example: {line}");
                if line.starts_with(prefix) {
                    return Ok(line);
                }
            }
            Err(_) => {
                return Err(format!(
                    "the example printed no {prefix:?} line within {} s",
                    limit.as_secs()
                ))
            }
        }
    }
}

fn check(example: &Path, dir: &Path) -> Result<String, String> {
    // Prometheus first (it takes seconds to start on a busy machine), the example's port chosen for it,
    // so that the first scrape comes within a second of the example's start.
    let target = format!("127.0.0.1:{}", free_port()?);
    let api: SocketAddr = ([127, 0, 0, 1], free_port()?).into();
    let config = dir.join("prometheus.yml");
    fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: weir\n    \
             static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .map_err(|e| format!("cannot write {}: {e}", config.display()))?;
    let log_path = dir.join("prometheus.log");
    let log = fs::File::create(&log_path)
        .map_err(|e| format!("cannot create {}: {e}", log_path.display()))?;
    let prom_args = [
        format!("--config.file={}", config.display()),
        format!("--storage.tsdb.path={}", dir.join("data").display()),
        format!("--web.listen-address={api}"),
    ];
    eprintln!("\n==> prometheus {}", prom_args.join(" "));
    let mut prometheus = Running {
        name: "prometheus",
        child: Command::new("prometheus")
            .args(&prom_args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("cannot start prometheus: {e}"))?,
    };
    let with_log = |e: String| format!("{e}\n--- {}:\n{}", log_path.display(), tail(&log_path));
    let started = Instant::now();
    // Ready, and scraping the target already (down until the example starts): Prometheus hands its
    // discovered targets to the scrape loops every 5 s, and the early window must not wait for that.
    wait_for(&mut prometheus, None, "target in Prometheus", || {
        matches!(http_get(api, "/-/ready"), Ok((200, _)))
            && http_get(api, "/api/v1/targets?state=active")
                .is_ok_and(|(status, body)| status == 200 && active_targets(&body) > 0)
    })
    .map_err(with_log)?;
    eprintln!(
        "    prometheus on {api} ready with its target in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    let port = target.trim_start_matches("127.0.0.1:");
    let run_s = RUN.as_secs().to_string();
    let fail_s = FAIL_AFTER.as_secs().to_string();
    let args = [
        "--serve",
        &run_s,
        "--fail-after",
        &fail_s,
        "--metrics-port",
        port,
    ];
    eprintln!("\n==> {} {}", example.display(), args.join(" "));
    let mut hyper = Running {
        name: "the hyper example",
        child: Command::new(example)
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", example.display()))?,
    };
    let lines = lines_of(&mut hyper.child)?;
    wait_line(&lines, "metrics: http://", START_LIMIT)?;
    // The example's start, as Prometheus' clock reads it (the same machine's wall clock).
    let t0 = unix_now();
    wait_for(
        &mut prometheus,
        Some(&mut hyper),
        "the first scrape",
        || query(api, "up{job=\"weir\"}", None).is_ok_and(|v| v.values().any(|&up| up == 1.0)),
    )
    .map_err(with_log)?;
    eprintln!(
        "    prometheus scraped {target}/metrics {:.1} s after the example's start",
        unix_now() - t0
    );

    // The run's end: the example prints its summary, then goes on serving the metrics.
    wait_line(&lines, "serving the metrics", RUN + START_LIMIT)?;
    // One more scrape, so that the last window ends with the final counts.
    sleep(Duration::from_millis(1_500));
    hyper.alive()?;
    prometheus.alive().map_err(with_log)?;

    let w = WINDOW_S;
    let early_end = t0 + FAIL_AFTER.as_secs_f64() - 1.0;
    let late_end = t0 + RUN.as_secs_f64();
    // (a) The outcome counters at the run's end: the balancer's failures, and each node's.
    let failed = query(
        api,
        "weir_released_total{outcome=\"failure\"}",
        Some(late_end),
    )?
    .values()
    .sum::<f64>();
    let node_failures = query(
        api,
        "weir_node_released_total{outcome=\"failure\"}",
        Some(late_end),
    )?;
    // (b) Each node's share of the calls released in each window, every outcome, from its own counters
    // (exact, counted from the node's add); and its success rate averaged over the window.
    let over = |expr: String, end: f64| query(api, &expr, Some(end));
    let recent = |end: f64| {
        over(
            format!("sum by (node) (increase(weir_node_released_total[{w}s]))"),
            end,
        )
    };
    let shares = |end: f64| -> Result<BTreeMap<String, f64>, String> {
        let by_node = recent(end)?;
        let total: f64 = by_node.values().sum();
        if total <= 0.0 {
            return Err(format!(
                "no calls counted in the {w} s before {:.1} s: {by_node:?}",
                end - t0
            ));
        }
        Ok(by_node.into_iter().map(|(n, v)| (n, v / total)).collect())
    };
    let (early, late) = (shares(early_end)?, shares(late_end)?);
    let rate = |end: f64| over(format!("avg_over_time(weir_node_success_rate[{w}s])"), end);
    let (early_rate, late_rate) = (rate(early_end)?, rate(late_end)?);

    let at = |m: &BTreeMap<String, f64>, node: &str| m.get(node).copied();
    let mut report = format!(
        "\n    weir_released_total{{outcome=\"failure\"}}: {failed}\n    \
         weir_node_released_total{{outcome=\"failure\"}} by node: {node_failures:?}\n    \
         share of the calls released (increase of weir_node_released_total) and success rate, over \
         {w} s, \"{FAILING}\" failing from {} s on:\n    {:<10} {:>16} {:>16}\n",
        FAIL_AFTER.as_secs(),
        "node",
        format!("{:.0}-{:.0} s", early_end - t0 - w as f64, early_end - t0),
        format!("{:.0}-{:.0} s", late_end - t0 - w as f64, late_end - t0),
    );
    for node in NODES {
        let cell = |share: &BTreeMap<String, f64>, rate: &BTreeMap<String, f64>| {
            format!(
                "{:5.1}% / {:.3}",
                100.0 * at(share, node).unwrap_or(0.0),
                at(rate, node).unwrap_or(f64::NAN)
            )
        };
        report += &format!(
            "    {node:<10} {:>16} {:>16}\n",
            cell(&early, &early_rate),
            cell(&late, &late_rate)
        );
    }

    let mut wrong = Vec::new();
    if failed <= 0.0 {
        wrong.push(format!(
            "weir_released_total{{outcome=\"failure\"}} is {failed}, not above 0"
        ));
    }
    for node in NODES {
        let f = at(&node_failures, node);
        let ok = if node == FAILING {
            f.is_some_and(|f| f > 0.0)
        } else {
            f == Some(0.0)
        };
        if !ok {
            wrong.push(format!(
                "{node}'s weir_node_released_total{{outcome=\"failure\"}} is {f:?}"
            ));
        }
        if !early.contains_key(node) {
            wrong.push(format!("no calls of {node} in the early window"));
        }
    }
    let failing = |m: &BTreeMap<String, f64>| at(m, FAILING).unwrap_or(0.0);
    if failing(&late) >= failing(&early) {
        wrong.push(format!(
            "{FAILING}'s share did not fall: {:.3} early, {:.3} late",
            failing(&early),
            failing(&late)
        ));
    }
    if failing(&late) >= MAX_LATE_SHARE {
        wrong.push(format!(
            "{FAILING}'s late share {:.3} is not under {MAX_LATE_SHARE}",
            failing(&late)
        ));
    }
    if failing(&late_rate) >= failing(&early_rate) {
        wrong.push(format!(
            "{FAILING}'s success rate did not fall: {:.3} early, {:.3} late",
            failing(&early_rate),
            failing(&late_rate)
        ));
    }
    if wrong.is_empty() {
        Ok(report)
    } else {
        Err(format!("{report}\n{}", wrong.join("; ")))
    }
}

/// Polls `ready` every 200 ms until it is true; an error if a process exits or [`START_LIMIT`] passes.
fn wait_for(
    prometheus: &mut Running,
    mut hyper: Option<&mut Running>,
    what: &str,
    ready: impl Fn() -> bool,
) -> Result<(), String> {
    let end = Instant::now() + START_LIMIT;
    loop {
        prometheus.alive()?;
        if let Some(h) = hyper.as_mut() {
            h.alive()?;
        }
        if ready() {
            return Ok(());
        }
        if Instant::now() > end {
            return Err(format!("no {what} within {} s", START_LIMIT.as_secs()));
        }
        sleep(Duration::from_millis(200));
    }
}

/// Seconds since the Unix epoch, as Prometheus' query API takes them.
fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// A loopback port free a moment ago.
fn free_port() -> Result<u16, String> {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free loopback port: {e}"))
}

/// The last lines of a log file.
fn tail(path: &Path) -> String {
    let text = fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// An instant query of Prometheus' HTTP API (at `time`, seconds since the epoch, or now): each series'
/// value by its `node` label (or its whole label set where it has none).
fn query(api: SocketAddr, expr: &str, time: Option<f64>) -> Result<BTreeMap<String, f64>, String> {
    let mut path = format!("/api/v1/query?query={}", encode(expr));
    if let Some(t) = time {
        path += &format!("&time={t:.3}");
    }
    let (status, body) = http_get(api, &path)?;
    if status != 200 {
        return Err(format!("query {expr:?}: HTTP {status}: {body}"));
    }
    vector(&body).map_err(|e| format!("query {expr:?}: {e}: {body}"))
}

/// The series of an instant query's JSON answer (`resultType` `vector`), by node; every value finite (so
/// the checks' comparisons mean what they say).
fn vector(body: &str) -> Result<BTreeMap<String, f64>, String> {
    let v: serde_json::Value = serde_json::from_str(body).map_err(|e| format!("not JSON ({e})"))?;
    if v["status"] != "success" {
        return Err("status is not success".into());
    }
    let result = v["data"]["result"]
        .as_array()
        .ok_or("no data.result array")?;
    let mut out = BTreeMap::new();
    for series in result {
        let name = match series["metric"]["node"].as_str() {
            Some(node) => node.to_string(),
            None => series["metric"].to_string(),
        };
        let value = series["value"][1]
            .as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .filter(|v| v.is_finite())
            .ok_or("a series without a finite value")?;
        out.insert(name, value);
    }
    Ok(out)
}

/// How many active targets the JSON answer of `/api/v1/targets` lists (0 if it is not one).
fn active_targets(body: &str) -> usize {
    serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v["data"]["activeTargets"].as_array().map(Vec::len))
        .unwrap_or(0)
}

/// Percent-encodes a query parameter (everything but RFC 3986's unreserved characters).
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out += &format!("%{b:02X}");
        }
    }
    out
}

/// A GET over HTTP/1.0 (so the answer is never chunked, and ends when the connection closes): the status
/// and the body.
fn http_get(addr: SocketAddr, path: &str) -> Result<(u16, String), String> {
    let limit = Duration::from_secs(5);
    let mut stream = TcpStream::connect_timeout(&addr, limit)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    stream
        .set_read_timeout(Some(limit))
        .and_then(|()| stream.set_write_timeout(Some(limit)))
        .and_then(|()| write!(stream, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n"))
        .map_err(|e| format!("cannot send to {addr}: {e}"))?;
    let mut raw = Vec::new();
    stream
        .read_to_end(&mut raw)
        .map_err(|e| format!("cannot read from {addr}: {e}"))?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("{addr}: not an HTTP answer"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("{addr}: no status in {head:?}"))?;
    Ok((status, body.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_parameter_is_percent_encoded() {
        assert_eq!(
            encode("sum by (node) (increase(x{a=\"b\"}[5s]))"),
            "sum%20by%20%28node%29%20%28increase%28x%7Ba%3D%22b%22%7D%5B5s%5D%29%29"
        );
        assert_eq!(encode("up-1._~"), "up-1._~");
    }

    #[test]
    fn a_vector_answer_is_read_by_node() {
        let body = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"node":"fails"},"value":[1700000000.5,"3"]},
            {"metric":{"node":"healthy"},"value":[1700000000.5,"97.5"]},
            {"metric":{"job":"weir"},"value":[1700000000.5,"1"]}]}}"#;
        let v = vector(body).unwrap();
        assert_eq!(v.get("fails"), Some(&3.0));
        assert_eq!(v.get("healthy"), Some(&97.5));
        assert_eq!(v.get(r#"{"job":"weir"}"#), Some(&1.0));
        assert_eq!(v.len(), 3);
        assert!(vector(r#"{"status":"error","error":"bad"}"#).is_err());
        assert!(vector("<html>").is_err());
        assert!(vector(
            r#"{"status":"success","data":{"result":[{"metric":{},"value":[1,"NaN"]}]}}"#
        )
        .is_err());
        assert!(vector(r#"{"status":"success","data":{"result":[{"metric":{}}]}}"#).is_err());
    }

    #[test]
    fn active_targets_are_counted() {
        let body = r#"{"status":"success","data":{"activeTargets":[{"scrapeUrl":"http://127.0.0.1:1/metrics","health":"unknown"}],"droppedTargets":[]}}"#;
        assert_eq!(active_targets(body), 1);
        assert_eq!(
            active_targets(r#"{"status":"success","data":{"activeTargets":[]}}"#),
            0
        );
        assert_eq!(active_targets("not json"), 0);
    }
}
