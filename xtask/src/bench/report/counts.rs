//! The sections of counts: "Instructions per pair" (valgrind, with callgrind's breakdown by function) and
//! "Memory and allocations".

use super::super::instructions::{BREAKDOWN, BROKEN_DOWN, LONG_RUN, SHORT_RUN};
use super::super::{CASCADE, DEFAULT, DEFAULT_FIXED};
use super::data::{count, per_node, ratio, signed, Data};
use super::{fill, rows, slot, Slot, CONFIGURATIONS};

/// The breakdown's paragraph and table, shown when the counts include it.
const BREAKDOWN_TEMPLATE: &str = include_str!("breakdown.md");

/// "Instructions per pair": every workload at 16 nodes, the main ones at each node count, and the
/// breakdown.
pub(super) fn instructions(d: &Data) -> Vec<Slot> {
    let i16 = d.instr(DEFAULT, 16);
    let workloads = CONFIGURATIONS
        .iter()
        .map(|c| format!("weir-{c}"))
        .chain(["mutex", "tower-peak-ewma", "tower-pending"].map(String::from));
    let at_16 = workloads.map(|c| {
        let r = if c == DEFAULT {
            String::new()
        } else {
            ratio(i16, d.instr(&c, 16))
        };
        format!("| {c} | {} | {r} |", count(d.instr(&c, 16)))
    });
    let by_nodes = [
        ("new default", DEFAULT),
        ("new default, Fixed(100)", DEFAULT_FIXED),
        ("cascade", CASCADE),
        ("Mutex<Vec> baseline", "mutex"),
    ]
    .map(|(label, name)| {
        let at = |n: usize| d.instr(name, n);
        format!(
            "| {label} | {} | {} | {} | {} | {} | {} |",
            count(at(3)),
            count(at(16)),
            count(at(64)),
            count(at(256)),
            signed(per_node(at(16), at(64)), 1),
            signed(at(64).zip(at(256)).map(|(a, b)| (b - a) / 192.0), 1),
        )
    });
    vec![
        slot("short_run", SHORT_RUN.to_string()),
        slot("long_run", LONG_RUN.to_string()),
        slot("run_difference", (LONG_RUN - SHORT_RUN).to_string()),
        slot("instructions", at_16.collect::<Vec<_>>().join("\n")),
        slot("instructions_by_nodes", by_nodes.join("\n")),
        ("breakdown", breakdown(d)),
    ]
}

/// Callgrind's inclusive counts of [`BREAKDOWN`]'s functions in each [`BROKEN_DOWN`] pair at 16 and 64
/// nodes; none if the counts have none for the new default.
fn breakdown(d: &Data) -> Option<String> {
    if !BREAKDOWN
        .iter()
        .any(|(f, _, _)| d.breakdown(DEFAULT, 16, f).is_some())
    {
        return None;
    }
    let row = |(func, short, label): &(&str, &str, &str)| {
        let cells = BROKEN_DOWN.map(|name| {
            let (a, b) = (d.breakdown(name, 16, func), d.breakdown(name, 64, func));
            [count(a), count(b), signed(per_node(a, b), 1)].join(" | ")
        });
        format!("| {label} | `{short}` | {} |", cells.join(" | "))
    };
    let table = fill(
        BREAKDOWN_TEMPLATE,
        &[("rows", rows(BREAKDOWN.iter().map(row)))],
    );
    Some(table.trim_end_matches('\n').to_string())
}

/// "Memory and allocations": bytes per node and per balancer, allocations per pair.
pub(super) fn memory(d: &Data) -> Vec<Slot> {
    let bytes = |key: &str| d.t.get(key).map_or("?", String::as_str).to_string();
    let allocations =
        d.t.iter()
            .filter(|(k, _)| k.starts_with("allocations."))
            .map(|(k, v)| {
                let name = k.trim_start_matches("allocations.").trim_end_matches(".16");
                format!("| {name} | {v} |")
            });
    vec![
        slot("memory_weir_slot", bytes("memory.weir.slot")),
        slot("memory_weir_64", bytes("memory.weir.balancer64")),
        slot("memory_mutex_node", bytes("memory.mutex.node")),
        slot("memory_mutex_64", bytes("memory.mutex.balancer64")),
        ("allocations", rows(allocations)),
    ]
}
