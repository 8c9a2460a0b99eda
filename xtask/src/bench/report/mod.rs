//! `benches/RESULTS.md`, written from the saved facts: the Markdown template `report/template.md` (the
//! document as it reads, its prose included), with its slots (`{{name}}`) filled by one function per
//! section: the runs and the machine here, the rest in `report/*.rs`, `tower.rs` and `metrics.rs`.

mod counts;
mod data;
mod one_thread;
mod targets;
mod threads;

use super::facts::{Facts, C_ABI_META};
use super::{metrics, tower};
use data::Data;

/// The document, with a slot wherever a value goes.
const TEMPLATE: &str = include_str!("template.md");

/// The heading of the section `cargo xtask bench-py` writes into RESULTS.md (`py/bench/bench.py`).
const PYTHON_SECTION: &str = "## Python\n";

/// The configurations benchmarked, by workload name less `weir-`, in the order of the template's columns.
const CONFIGURATIONS: [&str; 8] = [
    "default",
    "default-fixed",
    "cascade-buckets",
    "cascade-ewma",
    "approx-buckets",
    "approx-ewma",
    "pick-buckets",
    "pick-ewma",
];
const LIMITERS: [&str; 8] = [
    "fixed",
    "aimd",
    "vegas",
    "gradient",
    "gradient2",
    "ciad",
    "knee",
    "windowed",
];
const NODES: [usize; 5] = [3, 16, 64, 256, 1_024];
/// The node counts of every configuration's row (1,024 nodes run only the new default, the cascade and
/// the baselines).
const CONFIGURATION_NODES: [usize; 4] = [3, 16, 64, 256];

/// A slot of the template and its value; a line that names a slot without a value is left out.
pub(super) type Slot = (&'static str, Option<String>);

/// A slot with a value.
pub(super) fn slot(name: &'static str, value: String) -> Slot {
    (name, Some(value))
}

/// Table rows, one a line; no value (so no line) when there are none.
fn rows(rows: impl IntoIterator<Item = String>) -> Option<String> {
    let rows: Vec<String> = rows.into_iter().collect();
    (!rows.is_empty()).then(|| rows.join("\n"))
}

/// RESULTS.md from the timing runs' facts `t` and the instruction counts' `i`, with the Python section of
/// `old` (the file as it is) carried over.
pub(super) fn results(old: &str, t: &Facts, i: &Facts) -> String {
    keep_section(old, &render(t, i), PYTHON_SECTION)
}

fn render(t: &Facts, i: &Facts) -> String {
    let d = Data { t, i };
    let slots = [
        runs(t, i),
        targets::targets(&d),
        one_thread::against_cascade(&d),
        one_thread::c_abi(&d),
        one_thread::one_pair(&d),
        one_thread::configurations(&d),
        one_thread::limiters(&d),
        one_thread::floors(&d),
        threads::threads(&d),
        counts::instructions(&d),
        counts::memory(&d),
        tower::slots(t),
        metrics::slots(t),
    ]
    .concat();
    fill(TEMPLATE, &slots)
}

/// The list under the introduction: which run each figure comes from, and the machine.
fn runs(t: &Facts, i: &Facts) -> Vec<Slot> {
    let machine = |k: &str| t.get(k).or_else(|| i.get(k)).map_or("?", String::as_str);
    let c_abi_run = t.contains_key(&format!("{C_ABI_META}meta.commit"));
    vec![
        slot("timings_run", run(t, "")),
        slot("instructions_run", run(i, "")),
        ("c_abi_run", c_abi_run.then(|| run(t, C_ABI_META))),
        slot("cpu", machine("meta.cpu").into()),
        slot("cores", machine("meta.cores").into()),
        slot("memory", machine("meta.memory").into()),
        slot("os", machine("meta.os").into()),
        slot("rustc", machine("meta.rustc").into()),
    ]
}

/// One run, from its facts under `prefix`: the command, the code, when, how long, the load.
fn run(f: &Facts, prefix: &str) -> String {
    let g = |k: &str| f.get(&format!("{prefix}{k}")).map_or("?", String::as_str);
    format!(
        "`{}` at commit {}, {}; {} s; load average {} before{}.",
        g("meta.command"),
        g("meta.commit"),
        g("meta.date"),
        g("meta.wall_s"),
        g("meta.load_before"),
        f.get(&format!("{prefix}meta.load_after"))
            .map_or(String::new(), |a| format!(", {a} after")),
    )
}

/// `template` with each `{{name}}` replaced by the value of that slot. A line that names a slot without a
/// value is left out, and so is the blank line after it if one is before it (a missing paragraph leaves no
/// gap). Every slot must be named by the template, and every name must be a slot.
fn fill(template: &str, slots: &[Slot]) -> String {
    let mut named = vec![false; slots.len()];
    let mut out = String::new();
    let mut after_gap = false;
    for line in template.split_inclusive('\n') {
        if std::mem::take(&mut after_gap) && line == "\n" {
            continue;
        }
        match fill_line(line, slots, &mut named) {
            Some(filled) => out.push_str(&filled),
            None => after_gap = out.is_empty() || out.ends_with("\n\n"),
        }
    }
    if let Some(unnamed) = named.iter().position(|n| !n) {
        panic!("the template has no slot {}", slots[unnamed].0);
    }
    out
}

/// One line of the template, filled; `None` if it names a slot without a value.
fn fill_line(line: &str, slots: &[Slot], named: &mut [bool]) -> Option<String> {
    let mut out = String::new();
    let mut complete = true;
    let mut rest = line;
    while let Some(start) = rest.find("{{") {
        let Some(len) = rest[start..].find("}}") else {
            panic!("unclosed slot in the template: {line}");
        };
        let name = &rest[start + 2..start + len];
        let Some(at) = slots.iter().position(|(n, _)| *n == name) else {
            panic!("no value for the template's slot {name}");
        };
        named[at] = true;
        out.push_str(&rest[..start]);
        match &slots[at].1 {
            Some(value) => out.push_str(value),
            None => complete = false,
        }
        rest = &rest[start + len + 2..];
    }
    out.push_str(rest);
    complete.then_some(out)
}

/// `new` with the section of `old` that starts with `heading` (up to the next `## ` heading), placed
/// before `new`'s "Commands" section (or at its end); `new` unchanged if `old` has no such section.
fn keep_section(old: &str, new: &str, heading: &str) -> String {
    let Some(start) = old.find(heading) else {
        return new.to_string();
    };
    let rest = &old[start + heading.len()..];
    let end = rest
        .find("\n## ")
        .map_or(old.len(), |i| start + heading.len() + i + 1);
    let section = old[start..end].trim_end();
    match new.find("\n## Commands") {
        Some(at) => format!("{}\n\n{section}\n{}", new[..at].trim_end(), &new[at..]),
        None => format!("{}\n\n{section}\n", new.trim_end()),
    }
}

#[cfg(test)]
mod tests {
    use super::super::facts::{load, INSTRUCTIONS, TIMING};
    use super::*;
    use std::fs;
    use std::path::Path;

    /// The fixtures in `xtask/testdata/bench/`: `full` (every section, the numbers of a real run) and
    /// `partial` (a third of the facts gone, no `--c-abi` run, a round trip too slow to read).
    const FIXTURES: [&str; 2] = ["full", "partial"];

    /// RESULTS.md from each fixture's facts is its `expected.md` (which is also the old file, so its Python
    /// section is carried over). `WEIR_BLESS=1 cargo test -p xtask` rewrites the expectations after an
    /// intended change to the report; review their diff.
    #[test]
    fn results_md_from_fixed_facts_is_as_expected() {
        let bless = std::env::var_os("WEIR_BLESS").is_some_and(|v| v == "1");
        for fixture in FIXTURES {
            let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("testdata/bench")
                .join(fixture);
            let path = dir.join("expected.md");
            let expected = fs::read_to_string(&path).unwrap_or_default();
            let got = results(
                &expected,
                &load(&dir.join(TIMING)),
                &load(&dir.join(INSTRUCTIONS)),
            );
            if bless {
                fs::write(&path, &got).unwrap();
                continue;
            }
            let first_difference = got.lines().zip(expected.lines()).position(|(a, b)| a != b);
            assert!(
                got == expected,
                "{fixture}: RESULTS.md differs from {} (first at line {}; {} lines against {}); \
                 after an intended change run `WEIR_BLESS=1 cargo test -p xtask` and review the diff",
                path.display(),
                first_difference.map_or(0, |l| l + 1),
                got.lines().count(),
                expected.lines().count(),
            );
        }
    }

    #[test]
    fn fill_leaves_out_the_lines_of_missing_values_and_their_gap() {
        let template = "# T\n\nA {{a}}.\n\n{{b}}\n\nC {{c}}, {{a}}.\n- {{d}}\n- end\n";
        let slots = [
            slot("a", "1".into()),
            ("b", None),
            slot("c", "3".into()),
            ("d", None),
        ];
        assert_eq!(fill(template, &slots), "# T\n\nA 1.\n\nC 3, 1.\n- end\n");
        let slots = [
            slot("a", "1".into()),
            slot("b", "2\n2".into()),
            ("c", None),
            slot("d", "4".into()),
        ];
        assert_eq!(
            fill(template, &slots),
            "# T\n\nA 1.\n\n2\n2\n\n- 4\n- end\n"
        );
    }

    #[test]
    #[should_panic(expected = "the template has no slot e")]
    fn fill_refuses_a_slot_the_template_does_not_name() {
        fill("{{a}}\n", &[slot("a", "1".into()), slot("e", "5".into())]);
    }

    #[test]
    #[should_panic(expected = "no value for the template's slot b")]
    fn fill_refuses_a_name_without_a_slot() {
        fill("{{a}} {{b}}\n", &[slot("a", "1".into())]);
    }

    #[test]
    fn the_python_section_is_carried_over_before_the_commands() {
        let old = "# R\n\n## A\n\na\n\n## Python\n\npy 1\n\n## Commands\n\nc\n";
        let new = "# R\n\n## A\n\nb\n\n## Commands\n\nc\n";
        assert_eq!(
            keep_section(old, new, "## Python\n"),
            "# R\n\n## A\n\nb\n\n## Python\n\npy 1\n\n## Commands\n\nc\n"
        );
        // At the end of the old file, and without one: unchanged.
        let old = "# R\n\n## Python\n\npy 2\n";
        assert_eq!(
            keep_section(old, "# R\n", "## Python\n"),
            "# R\n\n## Python\n\npy 2\n"
        );
        assert_eq!(keep_section("# R\n", new, "## Python\n"), new);
    }
}
