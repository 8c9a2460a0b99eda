//! Slow nodes (issue 41, goal 5) under `LowestScore::slow_ratio`: while its peers have room, a node five
//! times slower than them gets under 1 % of the calls once learnt, from a tenth of a call to 1.5 calls in
//! flight per peer. With 5 to 20 in flight per peer it gets 1.1 % to 1.2 % among three peers: the goal's
//! "at any concurrency" holds there only for a node more than about six times slower (or more peers).

mod common;
use common::load::Load;
use weir::balance::{Algorithm, LowestScore};
use weir::{Config, Outcome};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;

/// Nodes 1 to 3 answer in 10 ms, node 4 in `slow` times that, each call's time drawn uniformly within
/// half of it either side. Calls arrive every `1 / rate` seconds of virtual time for `secs` seconds;
/// returns node 4's share (in %) of the calls after the first 5 s, and the mean calls in flight per
/// fast node.
fn slow_share(config: Config, rate: u64, slow: u64, secs: u64) -> (f64, f64) {
    let mut l = Load::new(&[1, 2, 3, 4], config, 11);
    l.run_until_refusing(secs * SEC, SEC / rate, |id, _, rng| {
        let base = if id == 4 { slow * 10 * MS } else { 10 * MS };
        Some((base / 2 + rng.u64(..base), Outcome::Success))
    });
    let (from, to) = (5 * SEC, secs * SEC + 1);
    let fast = l.picks_in(from, to) - l.picks_of(4, from, to);
    let share = l.picks_of(4, from, to) as f64 * 100.0 / l.picks_in(from, to) as f64;
    // Little's law: each fast node's calls per second times their mean time, 10 ms.
    let in_flight = fast as f64 / 3.0 / ((to - from) as f64 / SEC as f64) * 0.010;
    (share, in_flight)
}

fn with_slow_ratio(ratio: f32) -> Config {
    Config {
        algorithm: Algorithm::LowestScore(LowestScore {
            slow_ratio: ratio,
            ..LowestScore::DEFAULT
        }),
        ..Config::default()
    }
}

/// From a tenth of a call to 1.5 calls in flight per fast node: the slow node, five or twenty times
/// slower, gets under 1 % of the calls (at most 0.01 %); without the term, 8 % to 20 %.
#[test]
fn while_its_peers_have_room_a_node_five_times_slower_gets_under_1_percent() {
    for rate in [30, 150, 450] {
        for slow in [5, 20] {
            let (share, in_flight) = slow_share(with_slow_ratio(2.0), rate, slow, 60);
            eprintln!(
                "{rate}/s, {slow}x slower: {share:.2} % ({in_flight:.2} in flight per fast node)"
            );
            assert!(share < 1.0, "{rate}/s, {slow}x: {share:.2} %");
        }
        let (share, _) = slow_share(with_slow_ratio(0.0), rate, 5, 60);
        eprintln!("{rate}/s, 5x slower, without the term: {share:.2} %");
        assert!(share > 5.0, "{rate}/s without the term: {share:.2} %");
    }
}

/// At 5 and 20 calls in flight per fast node the slow node holds calls while its peers hold five times
/// as many, the peak-EWMA cost's balance: a node `r` times slower among `n` peers gets about `1 / (r^2
/// n)` of the calls as the load grows (1.3 % at 5 times among 3; measured 1.1 % and 1.2 %), and a node 20
/// times slower a few hundredths of a percent. Without the term, 6 % to 7 %.
#[test]
fn under_load_the_slow_node_holds_calls_in_proportion_to_its_speed() {
    for rate in [1_500, 6_000] {
        let (five, in_flight) = slow_share(with_slow_ratio(2.0), rate, 5, 30);
        let (twenty, _) = slow_share(with_slow_ratio(2.0), rate, 20, 30);
        let (off, _) = slow_share(with_slow_ratio(0.0), rate, 5, 30);
        eprintln!(
            "{rate}/s ({in_flight:.1} in flight per fast node): 5x slower {five:.2} %, 20x {twenty:.2} %, \
             5x without the term {off:.2} %"
        );
        assert!(five < 1.5 && twenty < 0.2 && off > 5.0, "{rate}/s");
    }
}
