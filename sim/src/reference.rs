//! dialogue's own simulation report at commit 381f98f7 (`simulation/src/test/resources/report.md`): the
//! published figures of its three strategies in its 16 scenarios, which this simulator's dialogue rows
//! reproduce (the report sets them side by side, and `tests/fidelity.rs` holds the exact matches).

/// One line of dialogue's report.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Published {
    /// The scenario, by this simulator's name (dialogue's two sticky scenarios are
    /// `server_side_rate_limits_with_sticky_clients_…` there).
    pub scenario: &'static str,
    /// The policy, by this simulator's name: `dialogue-balanced` is dialogue's
    /// `CONCURRENCY_LIMITER_ROUND_ROBIN`, `dialogue-unlimited` its `UNLIMITED_ROUND_ROBIN`, `pin-until-error`
    /// its `CONCURRENCY_LIMITER_PIN_UNTIL_ERROR`.
    pub policy: &'static str,
    /// `success`.
    pub success_pct: f64,
    /// `client_mean`, in ms.
    pub client_mean_ms: f64,
    /// `server_cpu` (the busy time of the attempts the servers answered), in s.
    pub server_s: f64,
    /// `client_received`.
    pub received: u64,
    /// `server_resps`: the attempts the servers answered.
    pub responses: u64,
}

/// Every line of dialogue's report.
#[rustfmt::skip]
pub const DIALOGUE: [Published; 48] = [
    Published { scenario: "all_nodes_500", policy: "pin-until-error", success_pct: 73.9, client_mean_ms: 4245.750000, server_s: 1200.000000, received: 2000, responses: 2000 },
    Published { scenario: "all_nodes_500", policy: "dialogue-balanced", success_pct: 74.1, client_mean_ms: 3347.395000, server_s: 1200.000000, received: 2000, responses: 2000 },
    Published { scenario: "all_nodes_500", policy: "dialogue-unlimited", success_pct: 50.0, client_mean_ms: 600.000000, server_s: 1200.000000, received: 2000, responses: 2000 },
    Published { scenario: "black_hole", policy: "pin-until-error", success_pct: 59.2, client_mean_ms: 600.870667, server_s: 709.800000, received: 1183, responses: 1183 },
    Published { scenario: "black_hole", policy: "dialogue-balanced", success_pct: 91.5, client_mean_ms: 600.005464, server_s: 1098.000000, received: 1830, responses: 1830 },
    Published { scenario: "black_hole", policy: "dialogue-unlimited", success_pct: 91.4, client_mean_ms: 600.000000, server_s: 1096.800000, received: 1828, responses: 1828 },
    Published { scenario: "drastic_slowdown", policy: "pin-until-error", success_pct: 100.0, client_mean_ms: 3120.674249, server_s: 2467.682333, received: 4000, responses: 4000 },
    Published { scenario: "drastic_slowdown", policy: "dialogue-balanced", success_pct: 100.0, client_mean_ms: 251.969999, server_s: 1007.880000, received: 4000, responses: 4000 },
    Published { scenario: "drastic_slowdown", policy: "dialogue-unlimited", success_pct: 100.0, client_mean_ms: 251.969999, server_s: 1007.880000, received: 4000, responses: 4000 },
    Published { scenario: "fast_400s_then_revert", policy: "pin-until-error", success_pct: 82.2, client_mean_ms: 102.200000, server_s: 613.200000, received: 6000, responses: 6000 },
    Published { scenario: "fast_400s_then_revert", policy: "dialogue-balanced", success_pct: 93.6, client_mean_ms: 113.583333, server_s: 681.500000, received: 6000, responses: 6000 },
    Published { scenario: "fast_400s_then_revert", policy: "dialogue-unlimited", success_pct: 93.6, client_mean_ms: 113.583333, server_s: 681.500000, received: 6000, responses: 6000 },
    Published { scenario: "fast_503s_then_revert", policy: "pin-until-error", success_pct: 100.0, client_mean_ms: 120.012009, server_s: 5400.000000, received: 45000, responses: 45004 },
    Published { scenario: "fast_503s_then_revert", policy: "dialogue-balanced", success_pct: 100.0, client_mean_ms: 120.107163, server_s: 5400.000000, received: 45000, responses: 45040 },
    Published { scenario: "fast_503s_then_revert", policy: "dialogue-unlimited", success_pct: 100.0, client_mean_ms: 120.107163, server_s: 5400.000000, received: 45000, responses: 45040 },
    Published { scenario: "live_reloading", policy: "pin-until-error", success_pct: 94.3, client_mean_ms: 7191.924800, server_s: 6952.150000, received: 2500, responses: 2500 },
    Published { scenario: "live_reloading", policy: "dialogue-balanced", success_pct: 92.9, client_mean_ms: 5351.497600, server_s: 6920.280000, received: 2500, responses: 2500 },
    Published { scenario: "live_reloading", policy: "dialogue-unlimited", success_pct: 86.9, client_mean_ms: 2802.124000, server_s: 7005.310000, received: 2500, responses: 2500 },
    Published { scenario: "one_big_spike", policy: "pin-until-error", success_pct: 100.0, client_mean_ms: 2667.606696, server_s: 150.000000, received: 1000, responses: 1000 },
    Published { scenario: "one_big_spike", policy: "dialogue-balanced", success_pct: 100.0, client_mean_ms: 1579.726259, server_s: 150.000000, received: 1000, responses: 1000 },
    Published { scenario: "one_big_spike", policy: "dialogue-unlimited", success_pct: 99.9, client_mean_ms: 1220.762244, server_s: 508.200000, received: 1000, responses: 3388 },
    Published { scenario: "one_endpoint_dies_on_each_server", policy: "pin-until-error", success_pct: 66.0, client_mean_ms: 2095.011200, server_s: 1500.000000, received: 2500, responses: 2500 },
    Published { scenario: "one_endpoint_dies_on_each_server", policy: "dialogue-balanced", success_pct: 66.2, client_mean_ms: 2027.828800, server_s: 1500.000000, received: 2500, responses: 2500 },
    Published { scenario: "one_endpoint_dies_on_each_server", policy: "dialogue-unlimited", success_pct: 65.1, client_mean_ms: 600.000000, server_s: 1500.000000, received: 2500, responses: 2500 },
    Published { scenario: "server_side_rate_limits", policy: "pin-until-error", success_pct: 100.0, client_mean_ms: 3364917.379451, server_s: 36276400.000000, received: 150000, responses: 181382 },
    Published { scenario: "server_side_rate_limits", policy: "dialogue-balanced", success_pct: 99.7, client_mean_ms: 333766753.517663, server_s: 43442800.000000, received: 150000, responses: 217214 },
    Published { scenario: "server_side_rate_limits", policy: "dialogue-unlimited", success_pct: 99.0, client_mean_ms: 325209.932580, server_s: 48322000.000000, received: 150000, responses: 241610 },
    Published { scenario: "sticky_fairness_across_clients", policy: "pin-until-error", success_pct: 88.3, client_mean_ms: 32039.365780, server_s: 358.950000, received: 1591, responses: 2393 },
    Published { scenario: "sticky_fairness_across_clients", policy: "dialogue-balanced", success_pct: 88.3, client_mean_ms: 32039.365780, server_s: 358.950000, received: 1591, responses: 2393 },
    Published { scenario: "sticky_fairness_across_clients", policy: "dialogue-unlimited", success_pct: 0.7, client_mean_ms: 2693.485967, server_s: 1348.800000, received: 1800, responses: 8992 },
    Published { scenario: "sticky_steady_vs_bursty_client", policy: "pin-until-error", success_pct: 96.9, client_mean_ms: 24927.819953, server_s: 97.475000, received: 10060, responses: 19495 },
    Published { scenario: "sticky_steady_vs_bursty_client", policy: "dialogue-balanced", success_pct: 96.9, client_mean_ms: 24927.819953, server_s: 97.475000, received: 10060, responses: 19495 },
    Published { scenario: "sticky_steady_vs_bursty_client", policy: "dialogue-unlimited", success_pct: 6.4, client_mean_ms: 3873.525187, server_s: 241.570000, received: 10060, responses: 48314 },
    Published { scenario: "short_outage_on_one_node", policy: "pin-until-error", success_pct: 99.8, client_mean_ms: 18248.406257, server_s: 3194.000000, received: 1600, responses: 1600 },
    Published { scenario: "short_outage_on_one_node", policy: "dialogue-balanced", success_pct: 99.4, client_mean_ms: 4351.031250, server_s: 3180.000000, received: 1600, responses: 1600 },
    Published { scenario: "short_outage_on_one_node", policy: "dialogue-unlimited", success_pct: 99.6, client_mean_ms: 1992.500000, server_s: 3188.000000, received: 1600, responses: 1600 },
    Published { scenario: "simplest_possible_case", policy: "pin-until-error", success_pct: 100.0, client_mean_ms: 834.469696, server_s: 11015.000000, received: 13200, responses: 13200 },
    Published { scenario: "simplest_possible_case", policy: "dialogue-balanced", success_pct: 100.0, client_mean_ms: 785.757575, server_s: 10372.000000, received: 13200, responses: 13200 },
    Published { scenario: "simplest_possible_case", policy: "dialogue-unlimited", success_pct: 100.0, client_mean_ms: 785.757575, server_s: 10372.000000, received: 13200, responses: 13200 },
    Published { scenario: "slow_503s_then_revert", policy: "pin-until-error", success_pct: 100.0, client_mean_ms: 135.264504, server_s: 394.279333, received: 3000, responses: 3076 },
    Published { scenario: "slow_503s_then_revert", policy: "dialogue-balanced", success_pct: 100.0, client_mean_ms: 88.828705, server_s: 262.364667, received: 3000, responses: 3031 },
    Published { scenario: "slow_503s_then_revert", policy: "dialogue-unlimited", success_pct: 100.0, client_mean_ms: 88.828705, server_s: 262.364667, received: 3000, responses: 3031 },
    Published { scenario: "slowdown_and_error_thresholds", policy: "pin-until-error", success_pct: 100.0, client_mean_ms: 155929.422047, server_s: 34258.573333, received: 10000, responses: 11140 },
    Published { scenario: "slowdown_and_error_thresholds", policy: "dialogue-balanced", success_pct: 100.0, client_mean_ms: 178655.204751, server_s: 44225.373333, received: 10000, responses: 12003 },
    Published { scenario: "slowdown_and_error_thresholds", policy: "dialogue-unlimited", success_pct: 3.6, client_mean_ms: 21551.691121, server_s: 197157.900000, received: 10000, responses: 49335 },
    Published { scenario: "uncommon_flakes", policy: "pin-until-error", success_pct: 99.0, client_mean_ms: 0.001000, server_s: 0.010000, received: 10000, responses: 10000 },
    Published { scenario: "uncommon_flakes", policy: "dialogue-balanced", success_pct: 99.0, client_mean_ms: 0.001000, server_s: 0.010000, received: 10000, responses: 10000 },
    Published { scenario: "uncommon_flakes", policy: "dialogue-unlimited", success_pct: 99.0, client_mean_ms: 0.001000, server_s: 0.010000, received: 10000, responses: 10000 },
];

/// dialogue's published figures for `policy` in `scenario`.
pub fn published(scenario: &str, policy: &str) -> Option<&'static Published> {
    DIALOGUE
        .iter()
        .find(|p| p.scenario == scenario && p.policy == policy)
}

/// Whether a cell's figures are dialogue's published ones: the same success % and answers, the client mean
/// within 0.05 ms and the server time within 0.05 s (the published figures' own rounding).
pub fn matches(p: &Published, c: &crate::metrics::CellResult) -> bool {
    (c.success_pct() - p.success_pct).abs() < 0.05
        && (c.client_mean_ns / 1e6 - p.client_mean_ms).abs() < 0.05
        && (c.server_busy_ns as f64 / 1e9 - p.server_s).abs() < 0.05
        && c.received == p.received
        && c.server_answers == p.responses
}
