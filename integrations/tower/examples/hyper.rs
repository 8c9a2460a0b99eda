//! A hyper client balancing over three local hyper servers with weir-tower: one healthy, one that answers
//! 500 to everything, one that takes 50 ms. Prints each server's share of the requests and how many
//! succeeded.
//!
//! ```sh
//! cargo run -p weir-lb-tower --example hyper
//! cargo run -p weir-lb-tower --example hyper -- --serve 20 --fail-after 8
//! ```
//!
//! With `--serve SECONDS`, it balances a steady 200 requests a second for that long instead, with the
//! failing server healthy for its first `--fail-after` seconds (default 8) and answering 500 from then on,
//! and serves the balance's metrics in Prometheus' text format on `http://127.0.0.1:PORT/metrics` (a port
//! the system picks, or `--metrics-port PORT`) on the same runtime, printing that address first. After
//! the run it prints the summary and goes on serving the metrics for another minute, so that a scraper
//! sees the final counts; `cargo xtask prometheus` scrapes it with a real Prometheus.
//!
//! The servers and the per-server client service (hyper-util's pooled client, sending to one address)
//! are the test suite's (`tests/support/mod.rs`); what this file shows is the balance in front of them.

#[allow(dead_code)]
#[path = "../tests/support/mod.rs"]
mod support;

use http::{Request, Response};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use support::{get, node_of, serve, Behaviour, Node};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tower::BoxError;
use tower::{Service, ServiceExt};
use weir_tower::{Builder, Error, Fixed, HttpStatus, Metrics, ResponseFuture};

const REQUESTS: usize = 2_000;
const CONCURRENCY: usize = 16;
/// `--serve`'s request rate: one request every this long.
const PERIOD: Duration = Duration::from_millis(5);
/// How long `--serve` goes on serving the metrics after its run.
const LINGER: Duration = Duration::from_secs(60);

const USAGE: &str = "usage: hyper [--serve SECONDS [--fail-after SECONDS] [--metrics-port PORT]]";

/// What the command line asks for.
enum Mode {
    /// [`REQUESTS`] requests as fast as [`CONCURRENCY`] allows.
    Burst,
    /// A steady rate for `run`, the failing server failing from `fail_after` on, `/metrics` served on
    /// `port` (0: the system picks).
    Serve {
        run: Duration,
        fail_after: Duration,
        port: u16,
    },
}

fn parse(args: &[String]) -> Result<Mode, String> {
    let mut serve = None;
    let mut fail_after = 8.0;
    let mut port = 0;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        let seconds = |v: &String| match v.parse::<f64>() {
            Ok(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => Ok(s),
            _ => Err(format!("{a} takes seconds (0 to 86400), got {v:?}")),
        };
        match a.as_str() {
            "--serve" => serve = Some(seconds(value()?)?),
            "--fail-after" => fail_after = seconds(value()?)?,
            "--metrics-port" => {
                let v = value()?;
                port = v
                    .parse()
                    .map_err(|_| format!("--metrics-port takes a port, got {v:?}"))?;
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(match serve {
        None if args.is_empty() => Mode::Burst,
        None => return Err("--fail-after and --metrics-port go with --serve".into()),
        Some(run) => Mode::Serve {
            run: Duration::from_secs_f64(run),
            fail_after: Duration::from_secs_f64(fail_after),
            port,
        },
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match parse(&args) {
        Ok(mode) => mode,
        Err(e) => {
            eprintln!("hyper: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let result = match mode {
        Mode::Burst => burst().await,
        Mode::Serve {
            run,
            fail_after,
            port,
        } => serve_metrics(run, fail_after, port).await,
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("hyper: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The three servers, the failing one failing from `fail_from` on.
async fn servers(fail_from: Instant) -> [(&'static str, support::Server); 3] {
    [
        ("healthy", serve("healthy", Behaviour::Healthy).await),
        (
            "fails",
            serve("fails", Behaviour::FailsFrom(fail_from)).await,
        ),
        (
            "slow",
            serve("slow", Behaviour::Slow(Duration::from_millis(50))).await,
        ),
    ]
}

type Balance = weir_tower::Balance<Fixed<&'static str, Node>, HttpStatus>;
type Call = ResponseFuture<hyper_util::client::legacy::ResponseFuture, HttpStatus>;

/// The balance: weir's default algorithm, HTTP statuses classified by the outcome table of
/// core/README.md, and up to 100 ms of waiting for room when every server is at its concurrency limit.
fn balance(servers: &[(&'static str, support::Server)]) -> Result<Balance, Error> {
    Builder::new(weir::Config::default())
        .wait(Duration::from_millis(100))
        .build_list(servers.iter().map(|(name, s)| (*name, Node::new(s.addr))))
}

/// One call: the server that answered ("refused" when weir granted no lease, "error" when the call
/// failed) and whether it succeeded.
async fn answer(call: Call) -> (String, bool) {
    match call.await {
        Ok(response) => (node_of(&response), response.status().is_success()),
        Err(e) if e.refused().is_some() => ("refused".to_owned(), false),
        Err(_) => ("error".to_owned(), false),
    }
}

async fn burst() -> Result<(), BoxError> {
    let servers = servers(Instant::now()).await;
    let mut balance = balance(&servers)?;
    let mut calls = JoinSet::new();
    let mut answers = Vec::with_capacity(REQUESTS);
    for _ in 0..REQUESTS {
        if calls.len() >= CONCURRENCY {
            answers.extend(calls.join_next().await);
        }
        calls.spawn(answer(balance.ready().await?.call(get())));
    }
    while let Some(done) = calls.join_next().await {
        answers.push(done);
    }
    println!("{REQUESTS} requests, {CONCURRENCY} at a time, over three servers on 127.0.0.1:\n");
    summary(&servers, &balance, answers.into_iter().flatten().collect());
    Ok(())
}

async fn serve_metrics(run: Duration, fail_after: Duration, port: u16) -> Result<(), BoxError> {
    let start = Instant::now();
    let servers = servers(start + fail_after).await;
    let mut balance = balance(&servers)?;
    let listener = TcpListener::bind(("127.0.0.1", port)).await?;
    let addr = listener.local_addr()?;
    println!("metrics: http://{addr}/metrics");
    tokio::spawn(metrics_server(listener, balance.metrics()));

    let mut calls = JoinSet::new();
    let mut answers = Vec::new();
    let mut tick = tokio::time::interval(PERIOD);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while start.elapsed() < run {
        tick.tick().await;
        while calls.len() >= CONCURRENCY {
            answers.extend(calls.join_next().await);
        }
        // A refusal (every server at its limit past the wait) is that call's answer, counted by weir
        // and in the summary, and the run goes on.
        calls.spawn(answer(balance.ready().await?.call(get())));
    }
    while let Some(done) = calls.join_next().await {
        answers.push(done);
    }
    let answers: Vec<(String, bool)> = answers.into_iter().flatten().collect();
    let refused = answers.iter().filter(|(n, _)| n == "refused").count();
    println!(
        "{} requests over {:.0} s, one every {} ms (\"fails\" failing from {:.0} s on), {refused} refused:\n",
        answers.len(),
        run.as_secs_f64(),
        PERIOD.as_millis(),
        fail_after.as_secs_f64(),
    );
    summary(&servers, &balance, answers);
    println!("\nserving the metrics for {} s more", LINGER.as_secs());
    tokio::time::sleep(LINGER).await;
    Ok(())
}

/// Serves `/metrics` (the balance's metrics in Prometheus' text format) and 404 for every other path,
/// until the runtime ends.
async fn metrics_server(listener: TcpListener, metrics: Metrics) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of descriptors, say: try again in a while rather than spin.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let metrics = metrics.clone();
        let service = hyper::service::service_fn(move |request: Request<Incoming>| {
            let response = if request.uri().path() == "/metrics" {
                // One String per scrape, off the balance's path; writing it cannot fail.
                Response::builder()
                    .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
                    .body(Full::new(Bytes::from(metrics.to_string())))
            } else {
                Response::builder()
                    .status(404)
                    .body(Full::new(Bytes::from_static(b"not found: try /metrics\n")))
            };
            async move { response }
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// Each server's share of `answers` and the balance's view.
fn summary(
    servers: &[(&'static str, support::Server)],
    balance: &Balance,
    answers: Vec<(String, bool)>,
) {
    let total = answers.len().max(1) as f64;
    println!(
        "{:<8} {:>9} {:>7} {:>10}",
        "server", "requests", "share", "succeeded"
    );
    for (name, _) in servers {
        let mine: Vec<_> = answers.iter().filter(|(n, _)| n == name).collect();
        let ok = mine.iter().filter(|(_, ok)| *ok).count();
        println!(
            "{name:<8} {:>9} {:>6.1}% {:>10}",
            mine.len(),
            100.0 * mine.len() as f64 / total,
            ok
        );
    }
    let ok = answers.iter().filter(|(_, ok)| *ok).count();
    println!(
        "\nsucceeded: {ok} of {} ({:.1}%)",
        answers.len(),
        100.0 * ok as f64 / total
    );
    let stats = balance.balancer().stats();
    println!(
        "weir: {} leases granted, {} in flight now, {} refused",
        stats.acquired,
        stats.in_flight,
        stats.rejected_all_busy + stats.rejected_no_active
    );
    for (name, node) in balance.nodes() {
        println!(
            "  {name:<8} success rate {:.3}, penalty {:.1}, limit {}",
            node.success_rate, node.penalty, node.limit
        );
    }
}
