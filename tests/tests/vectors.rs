//! The shared decision traces in `tests/vectors/` (format: `tests/vectors/README.md`): every file is
//! parsed and replayed on the real core, and must match it exactly, answer for answer and bit for bit.
//! The C and Python suites replay the same files.
//!
//! `WEIR_BLESS=1 cargo test -p weir-lb-tests --test vectors` regenerates the files from the generator
//! (`weir_tests::vectors::generate`) instead of failing on a difference, and says so on stderr. A normal
//! run fails on the first mismatch, naming the file, line and field, and also when a committed file is
//! not what the generator produces now (run the bless command and review the diff).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use weir::balance::{Algorithm, Draw, LowestScore, Weighted, WeightedHealth};
use weir::limit::{KneeLimit, LimitAlgorithm, KNEE_MAX_ARMED_NS};
use weir::{Config, Outcome};
use weir_tests::vectors::generate::{Loads, Random, Script};
use weir_tests::vectors::{
    generate, parse, replay, replay_file, replay_text, write, Answer, ErrorKind, Item, Op, Trace,
};

/// Committed trace files in all: the format stays cheap to keep in the repository.
const MAX_TOTAL_BYTES: u64 = 3 << 20;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors")
}

/// The `.trace` files in `tests/vectors/`, sorted.
fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("tests/vectors/ exists")
        .map(|e| e.expect("readable directory").path())
        .filter(|p| p.extension().is_some_and(|e| e == "trace"))
        .collect();
    v.sort();
    v
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn blessing() -> bool {
    std::env::var_os("WEIR_BLESS").is_some_and(|v| v == "1")
}

/// Writes every generated file (through a temporary file and a rename, so a test reading concurrently
/// sees the old file or the new one) and deletes `.trace` files no spec generates.
fn bless() {
    let specs = generate::specs();
    let mut written = 0;
    for spec in &specs {
        let text = write(&generate::generate(spec));
        let path = dir().join(format!("{}.trace", spec.name));
        if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        let tmp = dir().join(format!(".{}.trace.tmp", spec.name));
        std::fs::write(&tmp, &text).expect("write the trace");
        std::fs::rename(&tmp, &path).expect("move the trace in place");
        written += 1;
    }
    for f in files() {
        let stem = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
        if !specs.iter().any(|s| s.name == stem) {
            std::fs::remove_file(&f).expect("delete a stale trace");
            written += 1;
        }
    }
    // Straight to stderr, past the test harness's capture: blessing must never pass unnoticed.
    let _ = writeln!(
        std::io::stderr(),
        "WEIR_BLESS=1: blessed {} trace files in {} ({written} changed); review the diff before committing",
        specs.len(),
        dir().display()
    );
}

#[test]
fn every_file_replays_exactly() {
    if blessing() {
        bless();
    }
    let files = files();
    assert!(!files.is_empty(), "no .trace files in {}", dir().display());
    let mut steps = 0;
    for f in &files {
        let summary = replay_file(f).unwrap_or_else(|e| panic!("{e}"));
        assert!(summary.steps > 0, "{}: no steps", f.display());
        steps += summary.steps;
    }
    // The files are what the generator makes now: a script changed without blessing is caught here.
    let specs = generate::specs();
    for spec in &specs {
        let path = dir().join(format!("{}.trace", spec.name));
        let committed = read(&path);
        let fresh = write(&generate::generate(spec));
        if committed != fresh {
            let (n, (a, b)) = committed
                .lines()
                .zip(fresh.lines())
                .enumerate()
                .find(|(_, (a, b))| a != b)
                .unwrap_or((
                    committed.lines().count().min(fresh.lines().count()),
                    ("<end>", "<end>"),
                ));
            panic!(
                "{}:{}: the file differs from what the generator makes now\n  file:      {a}\n  generator: {b}\n\
                 run `WEIR_BLESS=1 cargo test -p weir-lb-tests --test vectors` and review the diff",
                path.display(),
                n + 1
            );
        }
    }
    assert_eq!(
        files.len(),
        specs.len(),
        "a .trace file that no spec generates"
    );
    assert!(steps > 1_000, "{steps} steps in all");
}

#[test]
fn files_round_trip_through_the_parser() {
    for f in files() {
        let text = read(&f);
        let trace = parse(&text).unwrap_or_else(|e| panic!("{}:{e}", f.display()));
        assert_eq!(
            write(&trace),
            text,
            "{}: written back differently",
            f.display()
        );
    }
    for spec in generate::specs() {
        let trace = generate::generate(&spec);
        let text = write(&trace);
        assert_eq!(parse(&text).unwrap(), trace, "{}", spec.name);
    }
}

/// A copy of a committed file with one expectation altered must fail, at that line and field.
#[test]
fn an_altered_expectation_is_detected() {
    let name = "edges-decay.trace";
    let original = read(&dir().join(name));
    let lines: Vec<&str> = original.lines().collect();
    let find = |pred: &dyn Fn(&str) -> bool| {
        lines
            .iter()
            .position(|l| pred(l))
            .expect("the file has such a line")
    };
    let mut cases: Vec<(usize, String, &str)> = Vec::new();

    // One ulp off in a float: the comparison is bit for bit.
    let i =
        find(&|l: &str| l.starts_with("node ") && l.split(' ').nth(7).is_some_and(|p| p != "0.0"));
    let mut t: Vec<String> = lines[i].split(' ').map(str::to_string).collect();
    let penalty: f64 = t[7].parse().unwrap();
    t[7] = format!("{:?}", f64::from_bits(penalty.to_bits() + 1));
    cases.push((i, t.join(" "), ".penalty: expected"));

    // Another node for an acquire.
    let i = find(&|l: &str| l.starts_with("acquire ") && l.ends_with(" 1"));
    let mut t: Vec<&str> = lines[i].split(' ').collect();
    t[3] = "0";
    cases.push((i, t.join(" "), "result"));

    // A counter off by one.
    let i = find(&|l: &str| l.starts_with("stats ") && l.split(' ').nth(1) == Some("1"));
    cases.push((
        i,
        lines[i].replacen("stats 1 ", "stats 2 ", 1),
        "stats.acquired",
    ));

    // A release that succeeds said to be refused.
    let i = find(&|l: &str| l.starts_with("release ") && l.ends_with(" ok"));
    cases.push((i, lines[i].replace(" ok", " node_removed"), "result"));

    // A has_data flag flipped.
    let i = find(&|l: &str| l.starts_with("node ") && l.split(' ').nth(14) == Some("true"));
    let mut t: Vec<&str> = lines[i].split(' ').collect();
    t[14] = "false";
    cases.push((i, t.join(" "), ".has_data"));

    // A node's failure count off by one.
    let i = find(&|l: &str| l.starts_with("node ") && l.split(' ').nth(16) != Some("0"));
    let mut t: Vec<String> = lines[i].split(' ').map(str::to_string).collect();
    let failures: u64 = t[16].parse().unwrap();
    t[16] = (failures + 1).to_string();
    cases.push((i, t.join(" "), ".released.failure"));

    let tmp = std::env::temp_dir();
    for (k, (i, altered, field)) in cases.into_iter().enumerate() {
        assert_ne!(lines[i], altered);
        let mut copy = lines.clone();
        copy[i] = &altered;
        let path = tmp.join(format!("weir-vectors-{}-{k}.trace", std::process::id()));
        std::fs::write(&path, copy.join("\n") + "\n").unwrap();
        let r = replay_file(&path);
        let _ = std::fs::remove_file(&path);
        let e = r.expect_err("an altered expectation must fail the replay");
        let at = format!(":{}: ", i + 1);
        assert!(
            e.contains(&at) && e.contains(field),
            "case {k}: {e} (expected line {} and {field})",
            i + 1
        );
        assert!(e.contains(&path.display().to_string()), "{e}");
    }

    // A missing node line fails too (on the next line's id, or on the count).
    let i = find(&|l: &str| l.starts_with("node "));
    let mut copy = lines.clone();
    copy.remove(i);
    assert!(replay_text(name, &(copy.join("\n") + "\n")).is_err());
}

/// The files cover what the README promises: every algorithm (each family, each health and draw of the
/// weighted family), every limit
/// algorithm, both presets, every operation, outcome and error, reseeds and re-added ids.
#[test]
fn files_cover_every_case() {
    let traces: Vec<(PathBuf, Trace)> = files()
        .into_iter()
        .map(|f| {
            let t = parse(&read(&f)).unwrap_or_else(|e| panic!("{}:{e}", f.display()));
            (f, t)
        })
        .collect();
    let total: u64 = files().iter().map(|f| f.metadata().unwrap().len()).sum();
    assert!(total < MAX_TOTAL_BYTES, "{total} bytes of traces");
    let configs: Vec<Config> = traces.iter().map(|t| t.1.config).collect();
    assert!(configs.contains(&Config::default()));
    assert!(configs.contains(&Config::cascade()));
    // Every algorithm: the lowest-score family, and the weighted family's every health and draw.
    let weighted = |c: &Config| match c.algorithm {
        Algorithm::Weighted(Weighted { health, draw, .. }) => {
            Some((matches!(health, WeightedHealth::Buckets(_)), draw))
        }
        Algorithm::LowestScore(_) => None,
    };
    assert!(configs
        .iter()
        .any(|c| matches!(c.algorithm, Algorithm::LowestScore(_))));
    for buckets in [true, false] {
        for draw in [Draw::Cascade, Draw::CascadeApprox, Draw::WeightedPick] {
            assert!(
                configs.iter().any(|c| weighted(c) == Some((buckets, draw))),
                "weighted, buckets {buckets}, {draw:?}"
            );
        }
    }
    let algorithm = |c: &Config| match c.limit {
        LimitAlgorithm::Fixed(_) => 0,
        LimitAlgorithm::Aimd(_) => 1,
        LimitAlgorithm::Vegas(_) => 2,
        LimitAlgorithm::Gradient(_) => 3,
        LimitAlgorithm::Gradient2(_) => 4,
        LimitAlgorithm::Ciad(_) => 5,
        LimitAlgorithm::Windowed(_) => 6,
        LimitAlgorithm::Knee(_) => 7,
    };
    for a in 0..8 {
        assert!(
            configs.iter().any(|c| algorithm(c) == a),
            "limit algorithm {a}"
        );
    }

    let mut errors = std::collections::HashSet::new();
    let mut outcomes = std::collections::HashSet::new();
    let (mut reseeds, mut lame_on, mut lame_off, mut readds) = (0, 0, 0, 0);
    let (mut excluded_elsewhere, mut excluded_fallbacks) = (0, 0);
    // Health checks: nodes named and not, checks reported healthy and failed.
    let (mut named, mut unnamed, mut healthy, mut failed) = (0, 0, 0, 0);
    for (f, t) in &traces {
        let mut removed = Vec::new();
        let mut steps = 0;
        for item in &t.items {
            let s = match item {
                Item::Reseed(_) => {
                    reseeds += 1;
                    continue;
                }
                Item::Step(s) => s,
            };
            steps += 1;
            if let Answer::Err(k) = s.answer {
                errors.insert(k);
            }
            match (s.op, s.answer) {
                (Op::Release { outcome, .. }, Answer::Ok) => {
                    outcomes.insert(outcome as u8);
                }
                (Op::LameDuck { on: true, .. }, Answer::Ok) => lame_on += 1,
                (Op::DueCheck { .. }, Answer::Node(_)) => named += 1,
                (Op::DueCheck { .. }, Answer::Nothing) => unnamed += 1,
                (Op::ReportCheck { healthy: true, .. }, Answer::Ok) => healthy += 1,
                (Op::ReportCheck { healthy: false, .. }, Answer::Ok) => failed += 1,
                (Op::LameDuck { on: false, .. }, Answer::Ok) => lame_off += 1,
                (Op::Remove { id }, Answer::Ok) => removed.push(id),
                (Op::Add { id }, Answer::Ok) if removed.contains(&id) => readds += 1,
                (Op::AcquireExcluding { exclude, .. }, Answer::Node(id)) => {
                    if exclude.ids().contains(&id) {
                        excluded_fallbacks += 1;
                    } else {
                        excluded_elsewhere += 1;
                    }
                }
                _ => {}
            }
            assert!(
                s.nodes.len() <= 6,
                "{}: {} nodes",
                f.display(),
                s.nodes.len()
            );
        }
        // The hand-written scripts: the edge cases, the retries elsewhere and the health checks.
        let edges = f.file_stem().is_some_and(|s| {
            let s = s.to_string_lossy();
            s.starts_with("edges") || s == "retry-elsewhere" || s == "decay-lowest-score-checks"
        });
        assert!(
            edges || (300..=2_000).contains(&steps),
            "{}: {steps} steps",
            f.display()
        );
    }
    // Retries elsewhere: sent to a node not excluded, and back to an excluded one when no other can.
    assert!(excluded_elsewhere > 10 && excluded_fallbacks > 1);
    for k in ErrorKind::ALL {
        assert!(errors.contains(&k), "no {} answer in any file", k.name());
    }
    for o in Outcome::ALL {
        assert!(outcomes.contains(&(o as u8)), "no release with {o:?}");
    }
    assert!(reseeds > 0 && lame_on > 0 && lame_off > 0 && readds > 0);
    assert!(named > 2 && unnamed > 2 && healthy > 1 && failed > 1);
}

/// The generator's spec of the file `<name>.trace`.
fn spec(name: &str) -> generate::Spec {
    generate::specs()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no spec named {name}"))
}

/// A trace built in memory replays, and a different generator seed makes it fail: the replay really
/// depends on the trace's `rng` line.
#[test]
fn the_generator_seed_matters() {
    let spec = spec("cascade");
    let mut trace = generate::generate(&spec);
    assert!(replay(&trace).is_ok());
    trace.seed ^= 1;
    assert!(replay(&trace).is_err());
}

/// Each acquire's answer in the trace `spec` generates, in order.
fn picks(spec: &generate::Spec) -> Vec<Answer> {
    generate::generate(spec)
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Step(s) if matches!(s.op, Op::Acquire { .. }) => Some(s.answer),
            _ => None,
        })
        .collect()
}

/// The slow trace covers the slowness term: its node 1, whose calls take eight times as long as the
/// others', gets less than half the share of the acquires that the same script gives it without the
/// term (`slow_ratio` 0), and the two files' picks part within the first half of the acquires.
#[test]
fn the_slow_trace_depends_on_its_slowness_term() {
    let spec = spec("decay-lowest-score-slow");
    let mut off = spec.clone();
    off.config.algorithm = Algorithm::LowestScore(LowestScore {
        slow_ratio: 0.0,
        ..LowestScore::DEFAULT
    });
    assert_ne!(spec.config, off.config);
    let (on, without) = (picks(&spec), picks(&off));
    let share = |p: &[Answer]| {
        let granted = p.iter().filter(|a| matches!(a, Answer::Node(_))).count();
        let slow = p.iter().filter(|a| **a == Answer::Node(1)).count();
        slow as f64 / granted as f64
    };
    let first = on.iter().zip(&without).position(|(a, b)| a != b);
    let differ = on.iter().zip(&without).filter(|(a, b)| a != b).count();
    eprintln!(
        "slow trace: node 1 gets {:.3} of the acquires with the term, {:.3} without; first difference at \
         acquire {first:?}, {differ} of {} picks differ",
        share(&on),
        share(&without),
        on.len().min(without.len())
    );
    assert!(first.is_some_and(|i| i < on.len() / 2), "{first:?}");
    assert!(share(&on) < share(&without) / 2.0);
}

/// The probation trace takes timed probes: the same script with `probe_after_ns` 0 answers some acquire
/// otherwise (a penalised node quiet for 2 s after one of the script's jumps in time is tried first).
#[test]
fn the_probation_trace_takes_timed_probes() {
    let spec = spec("decay-lowest-score-probation");
    let Algorithm::LowestScore(lowest) = spec.config.algorithm else {
        panic!("not the lowest-score family: {:?}", spec.config.algorithm)
    };
    assert_eq!(lowest.probe_after_ns, 2_000_000_000);
    let mut off = spec.clone();
    off.config.algorithm = Algorithm::LowestScore(LowestScore {
        probe_after_ns: 0,
        ..lowest
    });
    let (on, off) = (picks(&spec), picks(&off));
    let first = on.iter().zip(&off).position(|(a, b)| a != b);
    eprintln!("probation trace without timed probes: first other pick at acquire {first:?}");
    assert!(first.is_some(), "no acquire took a timed probe");
}

/// The knee trace covers the knee's rules and its arm: its nodes' limits, step by step, differ from the
/// same script's with no knee in reach (knee and hold 10^9: the latency never reads as load), with
/// the latency read always (`armed_for_ns` 0: the nodes that never drop would ease and hold too), and
/// with an arm that never lapses within the file (1000 s: the arm does lapse across the script's jumps
/// in time and is set again by a later drop), and from the same script with its server load reports
/// withheld (the reports are read on an armed node in place of the latency).
#[test]
fn the_knee_trace_depends_on_its_knee_and_its_arm() {
    let spec = spec("decay-lowest-score-knee");
    let LimitAlgorithm::Knee(knee) = spec.config.limit else {
        panic!("not a knee limit: {:?}", spec.config.limit)
    };
    assert_eq!(knee.armed_for_ns, 5_000_000_000);
    // Each step's (node, limit) pairs, in order.
    let limits = |k: KneeLimit| -> Vec<Vec<(u64, u32)>> {
        let mut s = spec.clone();
        s.config.limit = LimitAlgorithm::Knee(k);
        generate::generate(&s)
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Step(s) => Some(s.nodes.iter().map(|n| (n.id, n.limit)).collect()),
                Item::Reseed(_) => None,
            })
            .collect()
    };
    let on = limits(knee);
    let Script::Random(script) = spec.script else {
        panic!("not a random script")
    };
    assert_eq!(script.loads, Loads::Reported);
    let mut withheld = spec.clone();
    withheld.script = Script::Random(Random {
        loads: Loads::Withheld,
        ..script
    });
    let without_reports: Vec<Vec<(u64, u32)>> = generate::generate(&withheld)
        .items
        .iter()
        .filter_map(|i| match i {
            Item::Step(s) => Some(s.nodes.iter().map(|n| (n.id, n.limit)).collect()),
            Item::Reseed(_) => None,
        })
        .collect();
    let first = on.iter().zip(&without_reports).position(|(a, b)| a != b);
    eprintln!("knee trace against the same script without its load reports: first difference at step {first:?}");
    assert!(
        first.is_some_and(|i| i < on.len() / 2),
        "without the reports: {first:?}"
    );
    for (what, other) in [
        (
            "no knee in reach",
            KneeLimit {
                knee: 1e9,
                hold: 1e9,
                ..knee
            },
        ),
        (
            "the latency read always",
            KneeLimit {
                armed_for_ns: 0,
                ..knee
            },
        ),
        (
            "an arm of 1000 s",
            KneeLimit {
                armed_for_ns: KNEE_MAX_ARMED_NS,
                ..knee
            },
        ),
    ] {
        let off = limits(other);
        let first = on.iter().zip(&off).position(|(a, b)| a != b);
        let differ = on.iter().zip(&off).filter(|(a, b)| a != b).count();
        eprintln!(
            "knee trace against {what}: first difference at step {first:?}, {differ} of {} steps differ",
            on.len()
        );
        assert!(first.is_some_and(|i| i < on.len() / 2), "{what}: {first:?}");
    }
}
