use super::*;
use crate::backoff::{Backoff, BackoffConfig};
use crate::balance::{Balancer, Config, NodeSlot, Outcome};
use crate::overload::{Criticality, Shedder, ShedderConfig, Throttle, ThrottleConfig};
use fastrand::Rng;
extern crate std;
use std::string::String;
use std::vec::Vec;

fn balancer() -> Balancer<[NodeSlot; 4]> {
    let b = Balancer::new([const { NodeSlot::new() }; 4], Config::default()).unwrap();
    for id in [1, 2, 3] {
        b.add(id).unwrap();
    }
    b.set_lame_duck(3, true).unwrap();
    let mut rng = Rng::with_seed(9);
    let l = b.acquire(0, &mut rng).unwrap();
    b.release(l, Outcome::Failure, 10).unwrap();
    let _held = b.acquire(20, &mut rng).unwrap();
    b
}

fn all_text(format: &MetricsFormat<'_>) -> Result<String, fmt::Error> {
    let mut s = String::new();
    balancer().write_metrics(&mut s, format, &node_id_name, 20)?;
    Shedder::new(ShedderConfig::default())
        .unwrap()
        .write_metrics(&mut s, format, 500, 20)?;
    Throttle::new(ThrottleConfig::default())
        .unwrap()
        .write_metrics(&mut s, format, 20)?;
    crate::RetryBudget::new(Default::default())
        .unwrap()
        .write_metrics(&mut s, format, 20)?;
    Backoff::new(BackoffConfig::default())
        .unwrap()
        .write_metrics(&mut s, format, 20)?;
    Ok(s)
}

#[test]
fn the_writers_emit_exactly_the_families_in_order() {
    let text = all_text(&MetricsFormat::default()).unwrap();
    let typed: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE weir_"))
        .map(|l| l.split_once(' ').unwrap())
        .collect();
    let expected: Vec<(&str, &str)> = FAMILIES.iter().map(|f| (f.name, f.kind.name())).collect();
    assert_eq!(typed, expected);
    // Every sample line belongs to the family whose header precedes it.
    let mut current = "";
    for l in text.lines() {
        if let Some(t) = l.strip_prefix("# TYPE ") {
            current = t.split_once(' ').unwrap().0;
        } else if !l.starts_with('#') {
            let name = l.split(['{', ' ']).next().unwrap();
            assert_eq!(name, current, "{l}");
        }
    }
}

#[test]
fn the_docs_table_is_the_families_table() {
    let mut table = String::new();
    write_table(&mut table).unwrap();
    let doc = include_str!("../../../docs/metrics.md");
    assert!(
        doc.contains(&table),
        "docs/metrics.md must hold this table (from metrics::FAMILIES):\n{table}"
    );
}

#[test]
fn values_are_the_snapshot_and_stats_values() {
    let text = all_text(&MetricsFormat {
        prefix: "",
        labels: &[],
    })
    .unwrap();
    for line in [
        "acquired_total 2",
        "rejected_total{cause=\"all_busy\"} 0",
        "released_total{outcome=\"failure\"} 1",
        "released_total{outcome=\"success\"} 0",
        "in_flight 1",
        "nodes{state=\"active\"} 2",
        "nodes{state=\"lame_duck\"} 1",
        "waits_ended_total{result=\"granted\"} 0",
        "node_state{node=\"3\",state=\"active\"} 0",
        "node_state{node=\"3\",state=\"lame_duck\"} 1",
        "node_state{node=\"1\",state=\"active\"} 1",
        "node_limit{node=\"3\"} 20",
        "node_success_rate{node=\"3\"} 1.0",
        "shedder_cpu_usage_ratio 0.5",
        "throttle_rejected_total{criticality=\"SHEDDABLE_PLUS\"} 0",
        "backoff_delay_seconds 0.0",
        "backoff_steps_total{direction=\"down\"} 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in\n{text}"
        );
    }
    // The failed call's node carries the failure: its counters and penalty as its snapshot says.
    let b = balancer();
    let failed = b.nodes(20).find(|n| n.failures > 0.0).unwrap();
    let mut s = String::new();
    b.write_metrics(&mut s, &MetricsFormat::default(), &node_id_name, 20)
        .unwrap();
    let want = std::format!(
        "weir_node_penalty{{node=\"{}\"}} {:?}\n",
        failed.id,
        failed.penalty
    );
    assert!(s.contains(&want), "{want} in\n{s}");
    // Its outcome counters hold the one failure; the other nodes' hold none.
    for n in b.nodes(20) {
        let failures = u64::from(n.id == failed.id);
        let want = std::format!(
            "weir_node_released_total{{node=\"{}\",outcome=\"failure\"}} {failures}\n",
            n.id
        );
        assert!(s.contains(&want), "{want} in\n{s}");
        let want = std::format!(
            "weir_node_released_total{{node=\"{}\",outcome=\"success\"}} 0\n",
            n.id
        );
        assert!(s.contains(&want), "{want} in\n{s}");
    }
}

#[test]
fn label_values_and_names_are_escaped() {
    let b = balancer();
    let format = MetricsFormat {
        prefix: "app:lb",
        labels: &[("service", "a\\b\"c\nd"), ("zone", "")],
    };
    let names = |id: u64, out: &mut dyn Write| out.write_fmt(format_args!("n\"{id}\\\n"));
    let mut s = String::new();
    b.write_metrics(&mut s, &format, &names, 20).unwrap();
    assert!(
        s.contains(
            "app:lb_node_limit{service=\"a\\\\b\\\"c\\nd\",zone=\"\",node=\"n\\\"1\\\\\\n\"} 20\n"
        ),
        "{s}"
    );
    assert!(s.contains("app:lb_acquired_total{service=\"a\\\\b\\\"c\\nd\",zone=\"\"} 2\n"));
    // Every line is one line: nothing unescaped got through.
    assert_eq!(s.lines().count(), s.matches('\n').count());
}

#[test]
fn a_refused_format_writes_nothing() {
    let cases: [(MetricsFormat<'_>, MetricsError); 8] = [
        (
            MetricsFormat {
                prefix: "9a",
                labels: &[],
            },
            MetricsError::Prefix,
        ),
        (
            MetricsFormat {
                prefix: "a-b",
                labels: &[],
            },
            MetricsError::Prefix,
        ),
        (
            MetricsFormat {
                prefix: "é",
                labels: &[],
            },
            MetricsError::Prefix,
        ),
        (
            MetricsFormat {
                prefix: "w",
                labels: &[("a:b", "")],
            },
            MetricsError::LabelName(0),
        ),
        (
            MetricsFormat {
                prefix: "w",
                labels: &[("ok", ""), ("", "")],
            },
            MetricsError::LabelName(1),
        ),
        (
            MetricsFormat {
                prefix: "w",
                labels: &[("__name__", "x")],
            },
            MetricsError::LabelName(0),
        ),
        (
            MetricsFormat {
                prefix: "w",
                labels: &[("outcome", "x")],
            },
            MetricsError::ReservedLabel(0),
        ),
        (
            MetricsFormat {
                prefix: "w",
                labels: &[("a", "x"), ("a", "y")],
            },
            MetricsError::DuplicateLabel(1),
        ),
    ];
    for (format, err) in cases {
        assert_eq!(format.check(), Err(err), "{format:?}");
        let mut s = String::new();
        assert!(balancer()
            .write_metrics(&mut s, &format, &node_id_name, 0)
            .is_err());
        assert!(Backoff::new(BackoffConfig::default())
            .unwrap()
            .write_metrics(&mut s, &format, 0)
            .is_err());
        assert!(Throttle::new(ThrottleConfig::default())
            .unwrap()
            .write_metrics(&mut s, &format, 0)
            .is_err());
        assert!(Shedder::new(ShedderConfig::default())
            .unwrap()
            .write_metrics(&mut s, &format, 0, 0)
            .is_err());
        assert_eq!(s, "", "{format:?}");
    }
    for ok in ["", "_", ":", "a1", "Weir_x:y"] {
        assert_eq!(
            MetricsFormat {
                prefix: ok,
                labels: &[("_a1", "")]
            }
            .check(),
            Ok(())
        );
    }
}

/// A writer that fails once it holds `room` bytes.
struct Full {
    room: usize,
    held: usize,
}

impl Write for Full {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.held += s.len();
        if self.held > self.room {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

#[test]
fn a_failing_output_or_name_is_an_error_not_a_panic() {
    let b = balancer();
    let whole = {
        let mut s = String::new();
        b.write_metrics(&mut s, &MetricsFormat::default(), &node_id_name, 20)
            .unwrap();
        s.len()
    };
    for room in [0, 1, whole / 2, whole - 1] {
        let mut out = Full { room, held: 0 };
        assert!(b
            .write_metrics(&mut out, &MetricsFormat::default(), &node_id_name, 20)
            .is_err());
    }
    let mut out = Full {
        room: whole,
        held: 0,
    };
    assert!(b
        .write_metrics(&mut out, &MetricsFormat::default(), &node_id_name, 20)
        .is_ok());
    let refuse = |_: u64, _: &mut dyn Write| Err(fmt::Error);
    let mut s = String::new();
    assert!(b
        .write_metrics(&mut s, &MetricsFormat::default(), &refuse, 20)
        .is_err());
}

#[test]
fn special_floats_use_the_format_spellings() {
    let mut s = String::new();
    let format = MetricsFormat::default();
    let mut t = Text::new(&mut s, &format).unwrap();
    for v in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e-7, -0.0] {
        t.sample(&NODE_WEIGHT, None, None, Value::Float(v)).unwrap();
    }
    assert_eq!(
        s,
        "weir_node_weight NaN\nweir_node_weight +Inf\nweir_node_weight -Inf\nweir_node_weight 1e-7\nweir_node_weight -0.0\n"
    );
}

#[test]
fn throttle_probability_is_the_throttles() {
    let t = Throttle::new(ThrottleConfig::default()).unwrap();
    let mut rng = Rng::with_seed(4);
    for _ in 0..50 {
        let _ = t.allow(Criticality::Sheddable, 0, &mut rng);
    }
    let mut s = String::new();
    t.write_metrics(&mut s, &MetricsFormat::default(), 0)
        .unwrap();
    let p = t.probability(Criticality::Sheddable, 0);
    assert!(p > 0.0);
    let want =
        std::format!("weir_throttle_rejection_probability{{criticality=\"SHEDDABLE\"}} {p:?}\n");
    assert!(s.contains(&want), "{s}");
    let rejected = t.stats(0).total_throttled[Criticality::Sheddable as usize];
    let want =
        std::format!("weir_throttle_rejected_total{{criticality=\"SHEDDABLE\"}} {rejected}\n");
    assert!(s.contains(&want), "{s}");
}

#[test]
fn the_families_are_well_formed() {
    for (i, f) in FAMILIES.iter().enumerate() {
        // HELP would need escapes for these; the writer writes the help as it is.
        assert!(!f.help.contains(['\\', '\n']), "{}", f.name);
        assert!(is_name(f.name, true), "{}", f.name);
        assert_eq!(
            f.kind == MetricKind::Counter,
            f.name.ends_with("_total"),
            "{}",
            f.name
        );
        // Every label a family uses is one a constant label may not take.
        assert!(
            f.labels.iter().all(|l| RESERVED_LABELS.contains(l)),
            "{}",
            f.name
        );
        assert!(FAMILIES[..i].iter().all(|g| g.name != f.name), "{}", f.name);
    }
    // And every reserved name is used by some family.
    for l in RESERVED_LABELS {
        assert!(FAMILIES.iter().any(|f| f.labels.contains(&l)), "{l}");
    }
}
