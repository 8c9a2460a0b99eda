//! The knee limit with the servers' load reports against the same limit reading latency alone, on the
//! at-capacity scenarios where a client cannot learn the knee from latency: clients that join a loaded
//! fleet learn a no-load RTT that is already loaded, and their knees lie past the servers' cliff.

use weir_sim::{output::report, policy::registry, scenarios};

/// Success (percent, the report's seed) of `policy` on `scenario`.
fn success(scenario: &str, policy: &str) -> f64 {
    let s = scenarios::all()
        .into_iter()
        .find(|s| s.name == scenario)
        .unwrap_or_else(|| panic!("no scenario {scenario}"));
    let p = registry::find(policy).unwrap_or_else(|| panic!("no policy {policy}"));
    report::run_cell(&s, &p).success_pct()
}

#[test]
fn reports_give_clients_that_join_a_loaded_fleet_the_knee() {
    for scenario in [
        "capacity_clients_join",
        "capacity_slower_replacement",
        "capacity_contended_step",
    ] {
        let latency = success(scenario, "weir-knee-probation");
        let reports = success(scenario, "weir-knee-probation-load");
        eprintln!("{scenario}: latency alone {latency:.1} %, with reports {reports:.1} %");
        // On the report's seed, latency alone: 92.1 to 94.7 % (the fleet still crosses the cliff
        // once the joiners are many, or the load steps up; before growth tapered below the hold band
        // and the lagging average stopped easing a drained server it was 88.8 to 91.2); with the
        // reports each stays above 98 %.
        assert!(reports > 97.0, "{scenario}: {reports}");
        assert!(
            reports > latency + 3.0,
            "{scenario}: {latency} -> {reports}"
        );
    }
}
