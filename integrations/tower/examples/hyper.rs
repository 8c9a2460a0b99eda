//! A hyper client balancing over three local hyper servers with weir-tower: one healthy, one that answers
//! 500 to everything, one that takes 50 ms. Prints each server's share of the requests and how many
//! succeeded.
//!
//! ```sh
//! cargo run -p weir-lb-tower --example hyper
//! ```
//!
//! The servers and the per-server client service (hyper-util's pooled client, sending to one address)
//! are the test suite's (`tests/support/mod.rs`); what this file shows is the balance in front of them.

#[allow(dead_code)]
#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Duration;
use support::{get, node_of, serve, Behaviour, Node};
use tokio::task::JoinSet;
use tower::{Service, ServiceExt};
use weir_tower::{Builder, Error};

const REQUESTS: usize = 2_000;
const CONCURRENCY: usize = 16;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Error> {
    let servers = [
        ("healthy", serve("healthy", Behaviour::Healthy).await),
        ("fails", serve("fails", Behaviour::Fails).await),
        (
            "slow",
            serve("slow", Behaviour::Slow(Duration::from_millis(50))).await,
        ),
    ];

    // The balance: weir's default algorithm, HTTP statuses classified by the outcome table of
    // core/README.md, and up to 100 ms of waiting for room when every server is at its concurrency limit.
    let mut balance = Builder::new(weir::Config::default())
        .wait(Duration::from_millis(100))
        .build_list(servers.iter().map(|(name, s)| (*name, Node::new(s.addr))))?;

    let mut calls = JoinSet::new();
    let mut answers = Vec::with_capacity(REQUESTS);
    for _ in 0..REQUESTS {
        if calls.len() >= CONCURRENCY {
            answers.extend(calls.join_next().await);
        }
        let call = balance.ready().await?.call(get());
        calls.spawn(async move {
            match call.await {
                Ok(response) => (node_of(&response), response.status().is_success()),
                Err(_) => ("error".to_owned(), false),
            }
        });
    }
    while let Some(done) = calls.join_next().await {
        answers.push(done);
    }

    println!("{REQUESTS} requests, {CONCURRENCY} at a time, over three servers on 127.0.0.1:\n");
    println!(
        "{:<8} {:>9} {:>7} {:>10}",
        "server", "requests", "share", "succeeded"
    );
    let answers: Vec<(String, bool)> = answers.into_iter().flatten().collect();
    for (name, _) in &servers {
        let mine: Vec<_> = answers.iter().filter(|(n, _)| n == name).collect();
        let ok = mine.iter().filter(|(_, ok)| *ok).count();
        println!(
            "{name:<8} {:>9} {:>6.1}% {:>10}",
            mine.len(),
            100.0 * mine.len() as f64 / REQUESTS as f64,
            ok
        );
    }
    let ok = answers.iter().filter(|(_, ok)| *ok).count();
    println!(
        "\nsucceeded: {ok} of {REQUESTS} ({:.1}%)",
        100.0 * ok as f64 / REQUESTS as f64
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
    Ok(())
}
