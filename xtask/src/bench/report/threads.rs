//! The section "Two threads on one balancer": the two configurations and the Mutex baseline shared by two
//! threads, read against the core-to-core round trip; then more threads, where a run measured them.

use super::super::{CASCADE, DEFAULT};
use super::data::{ns, opt, ratio, Data};
use super::{slot, Slot};

/// The columns: the threads benchmark's name and the single-thread pair's workload.
const COLUMNS: [(&str, &str); 3] = [
    ("default", DEFAULT),
    ("cascade", CASCADE),
    ("mutex", "mutex"),
];

/// Thread counts beyond two that a run may have measured.
const MORE: [usize; 3] = [4, 8, 16];

pub(super) fn threads(d: &Data) -> Vec<Slot> {
    let batches = d.t.get("threads.round_trip.batches");
    vec![
        slot(
            "round_trip_batches",
            batches.map_or("?", String::as_str).into(),
        ),
        slot("threads", table(d)),
        slot("round_trip", ns(d.ns("threads/round-trip"))),
        slot("round_trip_p10", ns(d.fact("threads.round_trip.p10_ns"))),
        slot("round_trip_p50", ns(d.fact("threads.round_trip.p50_ns"))),
        slot("one_transfer", ns(d.one_transfer())),
        ("more_threads", more_threads(d)),
    ]
}

fn table(d: &Data) -> String {
    // A row: a label, then the cell of each column from the threads benchmark's name and the pair's.
    let row = |label: &str, f: &dyn Fn(&str, &str) -> String| {
        let cells = COLUMNS.map(|(t, p)| f(t, p));
        format!("| {label} | {} |", cells.join(" | "))
    };
    let one = |p: &str| d.pair(p, 16);
    [
        row("one thread, ns per pair", &|_, p| ns(one(p))),
        row("two threads, ns per pair of the timed thread", &|t, _| {
            ns(d.two_threads(t))
        }),
        row("two threads, ns per pair of the other thread", &|t, _| {
            ns(d.fact(&format!("threads.{t}-t2.16.helpers_ns")))
        }),
        row("extra ns per pair from sharing", &|t, p| {
            ns(d.two_threads(t).zip(one(p)).map(|(a, b)| a - b))
        }),
        row("cache-line transfers per pair", &|t, p| {
            opt(d.transfers(d.two_threads(t), one(p)), |x| format!("{x:.1}"))
        }),
        row("two threads: it / Mutex", &|t, _| {
            if t == "mutex" {
                String::new()
            } else {
                ratio(d.two_threads(t), d.two_threads("mutex"))
            }
        }),
    ]
    .join("\n")
}

/// A paragraph for each thread count beyond two that the run measured.
fn more_threads(d: &Data) -> Option<String> {
    let paragraphs: Vec<String> = MORE
        .into_iter()
        .filter_map(|k| {
            let at = |name: &str| d.ns(&format!("threads/{name}-t{k}/16"));
            let default = at("default")?;
            Some(format!(
                "{k} threads: new default {} ns per pair per thread, cascade {} ns, Mutex {} ns.",
                ns(Some(default)),
                ns(at("cascade")),
                ns(at("mutex"))
            ))
        })
        .collect();
    (!paragraphs.is_empty()).then(|| paragraphs.join("\n\n"))
}
