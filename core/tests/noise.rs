//! A dead node among nodes that shed a share of their calls (issue 27, goal 6; issue 41, goal 6: rates,
//! not counts, with the default). The count penalty balances failure *counts*: with each 503 a whole
//! failure (`LowestScore::dropped_cost` 1), where healthy nodes answer a few percent of their calls with
//! 503, a node that fails every call keeps about the noise rate's share of a healthy node's calls, at any
//! request rate. The default's `dropped_cost`, 0.1, reads a 503 as busy rather than broken, and the dead
//! node's share falls below 1 % at every rate.

mod common;
use common::load::Load;
use weir::balance::{Algorithm, LowestScore};
use weir::{Config, Outcome};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;

/// Nodes 1 and 2 answer in 2 ms, `noise` of their calls with 503 (`Dropped`); node 3 fails every call
/// (a 500) in 200 us. Calls arrive every `1 / rate` seconds of virtual time for `secs` seconds; returns
/// node 3's share (in %) of the calls after the first `learn` seconds.
fn dead_share(config: Config, rate: u64, noise: f64, secs: u64, learn: u64) -> f64 {
    let mut l = Load::new(&[1, 2, 3], config, 7);
    // At the higher rates the nodes' limits fill at times: those requests are not sent.
    l.run_until_refusing(secs * SEC, SEC / rate, |id, _, rng| {
        Some(match id {
            3 => (MS / 5, Outcome::Failure),
            _ if rng.f64() < noise => (2 * MS, Outcome::Dropped),
            _ => (2 * MS, Outcome::Success),
        })
    });
    let (from, to) = (learn * SEC, secs * SEC + 1);
    l.picks_of(3, from, to) as f64 * 100.0 / l.picks_in(from, to) as f64
}

fn with_dropped_cost(cost: f32) -> Config {
    Config {
        algorithm: Algorithm::LowestScore(LowestScore {
            dropped_cost: cost,
            ..LowestScore::DEFAULT
        }),
        ..Config::default()
    }
}

/// (calls per second, seconds run, seconds learnt first): fewer seconds at the higher rates, which
/// learn sooner.
const RATES: [(u64, u64, u64); 3] = [(10, 600, 60), (1_000, 120, 20), (100_000, 12, 4)];

#[test]
fn with_the_default_a_dead_node_among_shedding_nodes_gets_under_1_percent() {
    for noise in [0.02, 0.05] {
        for (rate, secs, learn) in RATES {
            let share = dead_share(Config::default(), rate, noise, secs, learn);
            eprintln!("the default, {noise} noise, {rate}/s: the dead node got {share:.2} %");
            assert!(share < 1.0, "{noise} noise at {rate}/s: {share:.2} %");
        }
    }
}

#[test]
fn counted_as_whole_failures_the_noise_sets_the_dead_nodes_share() {
    // `dropped_cost` 1 counts a 503 as a whole failure: with 5 % noise the dead node keeps more than 1 %
    // at every rate (about 2 % to 5 %), the gap the default's 0.1 closes.
    for (rate, secs, learn) in RATES {
        let share = dead_share(with_dropped_cost(1.0), rate, 0.05, secs, learn);
        eprintln!("dropped_cost 1, 0.05 noise, {rate}/s: the dead node got {share:.2} %");
        assert!(share > 1.0, "{rate}/s: {share:.2} %");
    }
}
