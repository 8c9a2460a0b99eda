//! Timed probes (`LowestScore::probe_after_ns`) against drawn probes alone, where each client sends few
//! calls: a recovered node is heard of only by the calls that reach it, and a drawn probe is a share of
//! the client's own calls.

use weir_sim::measures::Measures;
use weir_sim::{output::report, policy::registry, scenarios};

/// The ramp-back measures (seconds to 90 % of the fair share for 5 s, `None` for never; the kept share)
/// of `policy` on `scenario`, on the report's seed.
fn ramp_back(scenario: &str, policy: &str) -> (Option<f64>, f64) {
    let s = scenarios::all()
        .into_iter()
        .find(|s| s.name == scenario)
        .unwrap_or_else(|| panic!("no scenario {scenario}"));
    let p = registry::find(policy).unwrap_or_else(|| panic!("no policy {policy}"));
    let m = Measures::of(&s, &report::run_cell(&s, &p));
    let back = m
        .ramp_back
        .unwrap_or_else(|| panic!("{scenario}: no ramp-back to measure"));
    (back, m.kept_share.unwrap_or(0.0))
}

#[test]
fn timed_probes_bring_the_recovered_node_back_to_many_clients_of_few_calls() {
    // 200 clients of about 8 calls/s each: a 1 % drawn probe reaches the recovered node about once a
    // minute per client, so it never holds 90 % of its share in the 25 s left (0.23 of it on the
    // report's seed); a timed probe every 5 s reaches it from every client within seconds.
    let drawn = ramp_back("capacity_many_clients", "weir-knee-probation");
    let timed = ramp_back("capacity_many_clients", "weir-knee-probation-timed");
    eprintln!("capacity_many_clients: drawn probes {drawn:?}, timed probes {timed:?}");
    assert_eq!(drawn.0, None, "{drawn:?}");
    assert!(timed.0.is_some_and(|s| s <= 5.0), "{timed:?}");
    assert!(timed.1 >= 0.9, "{timed:?}");
}
