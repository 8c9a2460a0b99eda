//! The dialogue rows reproduce dialogue's own published simulation figures (commit 381f98f7) exactly:
//! success %, client mean to 0.1 ms, server time to 0.1 s, requests received and server answers. The 15 of
//! 48 that differ are listed with the report's explanation (dialogue's scheduler nests same-instant events).

use weir_sim::output::report::run_cell;
use weir_sim::policy::registry;
use weir_sim::{reference, scenarios};

/// (scenario, policy) whose published figures this simulator does not reproduce exactly.
const DIFFER: [(&str, &str); 15] = [
    ("slowdown_and_error_thresholds", "dialogue-balanced"),
    ("slowdown_and_error_thresholds", "pin-until-error"),
    ("short_outage_on_one_node", "dialogue-balanced"),
    ("all_nodes_500", "dialogue-balanced"),
    ("all_nodes_500", "pin-until-error"),
    ("one_endpoint_dies_on_each_server", "dialogue-balanced"),
    ("one_endpoint_dies_on_each_server", "pin-until-error"),
    ("server_side_rate_limits", "dialogue-balanced"),
    ("server_side_rate_limits", "dialogue-unlimited"),
    ("server_side_rate_limits", "pin-until-error"),
    ("sticky_steady_vs_bursty_client", "dialogue-balanced"),
    ("sticky_steady_vs_bursty_client", "dialogue-unlimited"),
    ("sticky_steady_vs_bursty_client", "pin-until-error"),
    ("sticky_fairness_across_clients", "dialogue-balanced"),
    ("sticky_fairness_across_clients", "pin-until-error"),
];

#[test]
fn dialogue_rows_match_dialogues_published_figures() {
    let mut checked = 0;
    for published in &reference::DIALOGUE {
        let (name, policy) = (published.scenario, published.policy);
        if DIFFER.contains(&(name, policy)) {
            continue;
        }
        let scenario = scenarios::find(name).unwrap();
        let p = registry::find(policy).unwrap();
        let ours = run_cell(&scenario, &p);
        assert!(
            reference::matches(published, &ours),
            "{name} {policy}: dialogue {published:?}, ours: success {} mean {} ms server {} s received {} \
             answers {}",
            ours.success_pct(),
            ours.client_mean_ns / 1e6,
            ours.server_busy_ns as f64 / 1e9,
            ours.received,
            ours.server_answers
        );
        checked += 1;
    }
    assert_eq!(checked, 33);
}
