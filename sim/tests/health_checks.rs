//! Health checks (`Balancer::due_check`, `report_check`) against timed probes (`probe_after_ns`): a node
//! the balancer avoids comes back by a check the client sends, not by a caller's call, so a recovered node
//! is heard of within a check period whatever the client's call rate, and a node that stays broken costs
//! the callers nothing.

use weir_sim::measures::Measures;
use weir_sim::metrics::CellResult;
use weir_sim::model::{Scenario, SEC};
use weir_sim::{output::report, policy::registry, scenarios};

/// `policy`'s run of `scenario` on the report's seed.
fn run(scenario: &Scenario, policy: &str) -> CellResult {
    let p = registry::find(policy).unwrap_or_else(|| panic!("no policy {policy}"));
    report::run_cell(scenario, &p)
}

fn scenario(name: &str) -> Scenario {
    scenarios::find(name).unwrap_or_else(|| panic!("no scenario {name}"))
}

#[test]
fn checks_bring_the_recovered_node_back_to_many_clients_of_few_calls() {
    // 200 clients of about 8 calls/s each: drawn probes alone never bring d back in the 25 s left
    // (timed_probes.rs); a check every 2 s from every client that avoids it does, with no probe at all
    // (on the report's seed: back in 3 s, holding 0.93 of its share).
    let s = scenario("capacity_many_clients");
    let r = run(&s, "weir-knee-checked");
    let m = Measures::of(&s, &r);
    let back = m.ramp_back.expect("a ramp-back to measure");
    eprintln!(
        "capacity_many_clients: {back:?}, kept {:?}, {} checks",
        m.kept_share, r.checks
    );
    assert!(back.is_some_and(|t| t <= 5.0), "{back:?}");
    assert!(m.kept_share.is_some_and(|k| k >= 0.9), "{:?}", m.kept_share);
    assert!(r.checks > 0);
}

#[test]
fn a_node_that_stays_broken_costs_the_checked_clients_no_calls() {
    // Ten clients of 30 calls/s; the broken nodes fail for 30 s (fast 500s, a black hole behind a 2 s
    // deadline). Timed probes spend one call per client every 5 s on each; checks spend none once a client
    // has heard of the failure (on the report's seed: 10 calls to the failing node and 20 to the black
    // hole, one or two per client, against 73 and 64; success 99.9 % against 99.1 and 99.6 %).
    for (name, node) in [("two_of_three_failing", 1), ("one_timing_out", 2)] {
        let s = scenario(name);
        let fault = s
            .fault_windows()
            .into_iter()
            .find(|f| f.server == Some(node))
            .unwrap_or_else(|| panic!("{name}: no fault on node {node}"));
        let (from, to) = ((fault.from / SEC) as usize, (fault.to / SEC) as usize);
        let calls = |r: &CellResult| -> u64 { r.sent_per_second[node][from..to].iter().sum() };
        let timed = run(&s, "weir-knee-probation-timed");
        let checked = run(&s, "weir-knee-checked");
        eprintln!(
            "{name}: timed probes {:.1} % and {} calls to the broken node, checks {:.1} % and {} ({} checks)",
            timed.success_pct(),
            calls(&timed),
            checked.success_pct(),
            calls(&checked),
            checked.checks
        );
        assert!(
            checked.success_pct() >= timed.success_pct(),
            "{name}: {} < {}",
            checked.success_pct(),
            timed.success_pct()
        );
        assert!(
            calls(&checked) * 2 < calls(&timed),
            "{name}: {} against {}",
            calls(&checked),
            calls(&timed)
        );
        assert!(checked.checks > 0);
    }
}
