//! The sections on one thread's pairs: the new default against the cascade, the C ABI, weir against its
//! baselines, every configuration, the limit algorithms and the floors.

use super::super::{CASCADE, DEFAULT, DEFAULT_FIXED};
use super::data::{count, div, ns, ratio, signed, times, Data};
use super::{rows, slot, Slot, CONFIGURATIONS, CONFIGURATION_NODES, LIMITERS, NODES};

/// "The new default against the cascade": each step's cost at 16 nodes and per added node.
pub(super) fn against_cascade(d: &Data) -> Vec<Slot> {
    let (s16, cascade_i16) = (d.pair(CASCADE, 16), d.instr(CASCADE, 16));
    let row = |(label, name): (&str, &str)| {
        let v = d.pair(name, 16);
        let iv = d.instr(name, 16);
        format!(
            "| {label} | {} | {} | {} | {} | {} | {} |",
            ns(v),
            signed(v.zip(s16).map(|(a, b)| a - b), 1),
            count(iv),
            signed(iv.zip(cascade_i16).map(|(a, b)| a - b), 0),
            signed(d.pair_per_node(name), 2),
            signed(d.instr_per_node(name), 1),
        )
    };
    let steps = [
        ("cascade (`Config::cascade()`)", CASCADE),
        ("new default, Fixed(100)", DEFAULT_FIXED),
        ("new default (`Config::default()`)", DEFAULT),
    ];
    vec![slot("default_vs_cascade", steps.map(row).join("\n"))]
}

/// "The C ABI": the Rust pair and the two C pairs, criterion and interleaved.
pub(super) fn c_abi(d: &Data) -> Vec<Slot> {
    let rust = d.ns("c_abi/rust/16");
    let row = |(label, name): (&str, &str)| {
        let v = d.ns(&format!("c_abi/{name}/16"));
        let interleaved_ratio = if name == "rust" {
            Some(1.0)
        } else {
            d.fact(&format!("c_abi.{name}.vs_rust"))
        };
        format!(
            "| {label} | {} | {} | {} | {} |",
            ns(v),
            times(div(v, rust)),
            ns(d.fact(&format!("c_abi.{name}.p10_ns"))),
            times(interleaved_ratio),
        )
    };
    let pairs = [
        ("Rust: `Balancer::acquire` + `release`", "rust"),
        (
            "C: `weir_balancer_acquire_with_rng` + `weir_balancer_release`",
            "c-rng",
        ),
        (
            "C: `weir_balancer_acquire` + `weir_balancer_release`",
            "c-thread-rng",
        ),
    ];
    vec![slot("c_abi", pairs.map(row).join("\n"))]
}

/// "One pair, one thread": the two configurations and the baselines at each node count, and the
/// interleaved cross-check.
pub(super) fn one_pair(d: &Data) -> Vec<Slot> {
    let row = |n: usize| {
        let (dv, sv) = (d.pair(DEFAULT, n), d.pair(CASCADE, n));
        let (m, p, q) = (
            d.pair("mutex", n),
            d.pair("tower-peak-ewma", n),
            d.pair("tower-pending", n),
        );
        format!(
            "| {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            ns(dv),
            ns(sv),
            ns(m),
            ns(p),
            ns(q),
            ratio(dv, sv),
            ratio(dv, m),
            ratio(sv, m),
            ratio(dv, p),
            ratio(dv, q)
        )
    };
    let cross = |name: &str, n: usize| {
        let v = d.interleaved_p10(name, n);
        let r = d.interleaved(&format!("{name}.{n}.vs_default"));
        match (v, r) {
            (Some(v), Some(r)) if r > 0.0 => format!(
                "{} ns (new default / it {:.2}, {r:.1}x)",
                ns(Some(v)),
                1.0 / r
            ),
            (Some(v), _) => format!("{} ns", ns(Some(v))),
            _ => "—".into(),
        }
    };
    vec![
        slot("one_pair", NODES.map(row).join("\n")),
        slot("cross_default_16", cross(DEFAULT, 16)),
        slot("cross_cascade_16", cross(CASCADE, 16)),
        slot("cross_mutex_16", cross("mutex", 16)),
        slot("cross_peak_ewma_16", cross("tower-peak-ewma", 16)),
        slot("cross_pending_16", cross("tower-pending", 16)),
        slot("cross_default_64", cross(DEFAULT, 64)),
        slot("cross_cascade_64", cross(CASCADE, 64)),
        slot("cross_mutex_64", cross("mutex", 64)),
        slot("cross_default_3", cross(DEFAULT, 3)),
        slot("cross_cascade_3", cross(CASCADE, 3)),
        slot("cross_mutex_3", cross("mutex", 3)),
    ]
}

/// "weir: every configuration": each at each node count, then the cost of an added node.
pub(super) fn configurations(d: &Data) -> Vec<Slot> {
    let row = |n: usize| {
        let cells = CONFIGURATIONS.map(|c| ns(d.pair(&format!("weir-{c}"), n)));
        format!("| {n} | {} |", cells.join(" | "))
    };
    let per_node = CONFIGURATIONS.map(|c| signed(d.pair_per_node(&format!("weir-{c}")), 2));
    let mut lines = CONFIGURATION_NODES.map(row).to_vec();
    lines.push(format!(
        "| ns per node, 16 → 64 | {} |",
        per_node.join(" | ")
    ));
    vec![slot("configurations", lines.join("\n"))]
}

/// "Limit algorithms": each limiter on either configuration's pair.
pub(super) fn limiters(d: &Data) -> Vec<Slot> {
    let table = |base: &str| {
        let fixed_i = d.instr(&format!("limiter-{base}-fixed"), 16);
        let row = |l: &str| {
            let iv = d.instr(&format!("limiter-{base}-{l}"), 16);
            format!(
                "| {l} | {} | {} | {} | {} | {} |",
                ns(d.ns(&format!("limiter/{base}-{l}/16"))),
                signed(d.over_fixed(base, l), 1),
                signed(d.interleaved_over_fixed(base, l), 1),
                count(iv),
                signed(iv.zip(fixed_i).map(|(v, f)| v - f), 0),
            )
        };
        LIMITERS.map(row).join("\n")
    };
    vec![
        slot("limiters_default", table("default")),
        slot("limiters_cascade", table("cascade")),
    ]
}

/// "Floors": what no pair can go below, and their sum beside the two configurations' pairs.
pub(super) fn floors(d: &Data) -> Vec<Slot> {
    let fixed = [
        ("one uncontended CAS (`floor/cas`)", "cas"),
        ("one fastrand draw (`floor/fastrand`)", "fastrand"),
        ("the workload alone (`floor/driver`)", "driver"),
    ]
    .map(|(label, name)| {
        format!(
            "| {label} | {} | {} |",
            ns(d.ns(&format!("floor/{name}"))),
            count(d.instr(name, 16))
        )
    });
    let scans = NODES.map(|n| {
        let instructions = if n == 16 {
            count(d.instr("scan", 16))
        } else {
            String::new()
        };
        format!(
            "| padded scan of {n} atomics (`floor/scan/{n}`) | {} | {instructions} |",
            ns(d.ns(&format!("floor/scan/{n}")))
        )
    });
    let sum = floor_sum(d);
    let one = |f: fn((f64, f64, f64)) -> f64| sum.map(|s| format!("{:.1}", f(s)));
    vec![
        ("floors", rows(fixed.into_iter().chain(scans))),
        ("floor", one(|(floor, _, _)| floor)),
        ("floor_default", one(|(_, dv, _)| dv)),
        ("floor_default_above", one(|(floor, dv, _)| dv - floor)),
        ("floor_cascade", one(|(_, _, sv)| sv)),
        ("floor_cascade_above", one(|(floor, _, sv)| sv - floor)),
    ]
}

/// At 16 nodes, five CAS + one scan + one draw + the driver (the floor of a pair), with the new default's
/// and the cascade's pairs; `None` unless all were measured.
fn floor_sum(d: &Data) -> Option<(f64, f64, f64)> {
    let floor = 5.0 * d.ns("floor/cas")?
        + d.ns("floor/scan/16")?
        + d.ns("floor/fastrand")?
        + d.ns("floor/driver")?;
    Some((floor, d.pair(DEFAULT, 16)?, d.pair(CASCADE, 16)?))
}
