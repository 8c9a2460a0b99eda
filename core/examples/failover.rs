//! Balances traffic across three in-process fake nodes and prints what the balancer learns.
//!
//! Virtual time, 1,000 requests per second for 60 s, each call taking 20 ms, under the default
//! configuration (decayed success and failure counters, lowest score, CIAD limit). Node 1 is healthy; node 2
//! fails 10% of its calls; node 3 fails every call from t = 10 s to t = 40 s. From t = 45 s to 50 s the
//! calls slow to 40 ms. Every 5 s the program prints each node's share of the last 5 s of traffic, its
//! decayed failure count and the penalty it adds to its in-flight count.
//!
//! Run with `cargo run --example failover`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use weir::{Balancer, Config, Outcome, Rng};

const MS: u64 = 1_000_000;

fn main() {
    let config = Config {
        seed: 7,
        ..Config::default()
    };
    let balancer = Balancer::with_capacity(8, config).expect("valid config");
    for id in 1..=3 {
        balancer.add(id).expect("free slot");
    }
    let mut rng = Rng::with_seed(7);
    let mut picks = [0u64; 3];
    let mut rejected = 0u64;
    // Calls in flight, by completion time.
    let mut in_flight = BinaryHeap::new();
    let mut seq = 0u64;
    let mut leases = std::collections::HashMap::new();
    println!("    t | node 1: share failures penalty | node 2: share failures penalty | node 3: share failures penalty");
    for ms in 1..=60_000u64 {
        let now = ms * MS;
        while let Some(&Reverse((done, key))) = in_flight.peek() {
            if done > now {
                break;
            }
            in_flight.pop();
            let (lease, outcome) = leases.remove(&key).expect("tracked lease");
            balancer.release(lease, outcome, done).expect("live lease");
        }
        match balancer.acquire(now, &mut rng) {
            Ok(lease) => {
                let id = lease.node_id();
                picks[(id - 1) as usize] += 1;
                let outcome = match id {
                    2 if rng.u32(..10) == 0 => Outcome::Failure,
                    3 if (10_000..40_000).contains(&ms) => Outcome::Failure,
                    _ => Outcome::Success,
                };
                let latency = if (45_000..50_000).contains(&ms) {
                    40 * MS
                } else {
                    20 * MS
                };
                seq += 1;
                leases.insert(seq, (lease, outcome));
                in_flight.push(Reverse((now + latency, seq)));
            }
            Err(_) => rejected += 1,
        }
        if ms % 5_000 == 0 {
            let total: u64 = picks.iter().sum::<u64>().max(1);
            let mut line = format!("{:>3} s", ms / 1_000);
            for node in balancer.nodes(now) {
                let share = picks[(node.id - 1) as usize] as f64 / total as f64;
                line += &format!(
                    " | {:>11.1}% {:>8.2} {:>7.1}",
                    share * 100.0,
                    node.failures,
                    node.penalty
                );
            }
            let note = match ms {
                10_000 => "  <- node 3 goes down",
                15_000 => "  <- its first failures moved its traffic to node 1",
                40_000 => "  <- node 3 is healthy again; its penalty fades as its failures halve every 30 s",
                50_000 => "  <- calls slowed to 40 ms: node 1's 40 in flight still score below the penalties",
                _ => "",
            };
            println!("{line}{note}");
            picks = [0; 3];
        }
    }
    let stats = balancer.stats();
    println!(
        "\nacquired {} | succeeded {} | failed {} | rejected (all nodes at their limits) {}",
        stats.acquired,
        stats.released(Outcome::Success),
        stats.released(Outcome::Failure),
        rejected
    );
}
