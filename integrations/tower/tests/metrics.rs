//! The balance's metrics as Prometheus reads them: nodes named by their keys, the released calls counted
//! by outcome, per balancer and per node, exactly as the callers saw them and the failing node told
//! apart, the handle's names following membership, and a handle read from another thread while the
//! balance is in use.

#[allow(dead_code)]
mod support;

use std::convert::Infallible;
use std::fmt;
use std::future::{ready, Ready};
use std::sync::Arc;
use std::task::{Context, Poll};
use support::Channel;
use tokio::sync::mpsc;
use tower::discover::Change;
use tower::{Service, ServiceExt};
use weir::metrics::MetricsFormat;
use weir::{Config, Outcome};
use weir_tower::{Builder, Metrics};

/// A key that is not a string: nodes are named by its `Display`.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct Key(u16);

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "backend-{}", self.0)
    }
}

/// A backend that answers its own key at once.
#[derive(Clone)]
struct Backend(Key);

impl Service<()> for Backend {
    type Response = Key;
    type Error = Infallible;
    type Future = Ready<Result<Key, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, (): ()) -> Self::Future {
        ready(Ok(self.0))
    }
}

fn backend(key: Key) -> Backend {
    Backend(key)
}

/// Backend 2 fails every call; the others succeed.
fn classify(key: &Key) -> Outcome {
    if key.0 == 2 {
        Outcome::Failure
    } else {
        Outcome::Success
    }
}

/// The value of the sample of `family` whose labels include every one of `labels`; `None` if there is
/// none, a panic if there are several.
fn sample(text: &str, family: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let found: Vec<f64> = text
        .lines()
        .filter_map(|l| {
            let (series, value) = l.strip_prefix(family)?.rsplit_once(' ')?;
            let set = match series.strip_prefix('{') {
                Some(set) => set.strip_suffix('}')?,
                None if series.is_empty() => "",
                None => return None, // another family that starts with this one's name
            };
            labels
                .iter()
                .all(|(k, v)| set.contains(&format!("{k}=\"{v}\"")))
                .then(|| value.parse().ok())?
        })
        .collect();
    assert!(found.len() <= 1, "{family} {labels:?}: {found:?}\n{text}");
    found.first().copied()
}

fn text(metrics: &Metrics) -> String {
    let mut out = String::new();
    metrics.write(&mut out, &MetricsFormat::default()).unwrap();
    out
}

#[tokio::test(flavor = "current_thread")]
async fn outcomes_are_counted_and_nodes_named_by_key() {
    const CALLS: usize = 60;
    let keys = [Key(1), Key(2), Key(3)];
    let mut balance = Builder::new(Config::default())
        .classify(classify as fn(&Key) -> Outcome)
        .build_list(keys.map(|k| (k, backend(k))))
        .unwrap();
    let metrics = balance.metrics();
    let mut answered = [0u32; 3];
    for _ in 0..CALLS {
        let key = balance.ready().await.unwrap().call(()).await.unwrap();
        answered[usize::from(key.0 - 1)] += 1;
    }
    // Backend 2 failed at least its first call, and weir then sends it less.
    assert!(answered[1] >= 1, "{answered:?}");

    let mut direct = String::new();
    balance
        .write_metrics(&mut direct, &MetricsFormat::default())
        .unwrap();
    for text in [direct, text(&metrics), metrics.to_string()] {
        // Outcomes are counted per balancer and per node, exactly as the callers saw them; the decay
        // model's counters say which node failed too (a node that only ever failed has a success rate
        // of 0, one that never did of 1).
        let released =
            |outcome: &str| sample(&text, "weir_released_total", &[("outcome", outcome)]);
        let failed = answered[1];
        assert_eq!(released("failure"), Some(f64::from(failed)), "{text}");
        assert_eq!(
            released("success"),
            Some((CALLS - failed as usize) as f64),
            "{text}"
        );
        assert_eq!(
            sample(&text, "weir_acquired_total", &[]),
            Some(CALLS as f64),
            "{text}"
        );
        for key in keys {
            let name = key.to_string();
            let node = |family: &str| sample(&text, family, &[("node", &name)]);
            let (rate, failures) = (node("weir_node_success_rate"), node("weir_node_failures"));
            if key.0 == 2 {
                assert_eq!(rate, Some(0.0), "{name}\n{text}");
                assert!(failures.is_some_and(|f| f > 0.0), "{name}\n{text}");
            } else {
                assert_eq!(rate, Some(1.0), "{name}\n{text}");
                assert_eq!(failures, Some(0.0), "{name}\n{text}");
            }
            let counted = |outcome: &str| {
                sample(
                    &text,
                    "weir_node_released_total",
                    &[("node", &name), ("outcome", outcome)],
                )
            };
            let calls = f64::from(answered[usize::from(key.0 - 1)]);
            let (failures, successes) = if key.0 == 2 {
                (calls, 0.0)
            } else {
                (0.0, calls)
            };
            assert_eq!(counted("failure"), Some(failures), "{name}\n{text}");
            assert_eq!(counted("success"), Some(successes), "{name}\n{text}");
            assert_eq!(counted("dropped"), Some(0.0), "{name}\n{text}");
            assert_eq!(node("weir_node_in_flight"), Some(0.0), "{text}");
            assert!(node("weir_node_limit").is_some_and(|l| l >= 1.0), "{text}");
            assert_eq!(
                sample(
                    &text,
                    "weir_node_state",
                    &[("node", &name), ("state", "active")]
                ),
                Some(1.0),
                "{text}"
            );
        }
        assert!(
            !text.contains("node=\"1\""),
            "named by id, not key:\n{text}"
        );
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_handle_follows_membership_and_reads_from_another_thread() {
    let (tx, rx) = mpsc::unbounded_channel();
    let mut balance = Builder::new(Config::default())
        .classify(classify as fn(&Key) -> Outcome)
        .build(Channel(rx))
        .unwrap();
    // Taken before any node joined: the names come as they join.
    let metrics = balance.metrics();
    for k in [Key(1), Key(3)] {
        tx.send(Change::Insert(k, backend(k))).unwrap();
    }
    balance.ready().await.unwrap();
    // A lease is reserved (the `ready` above): one call in flight, seen from another thread.
    let scraper = Arc::new(metrics.clone());
    let seen = std::thread::spawn(move || text(&scraper)).join().unwrap();
    let in_flight = |text: &str, k: u16| {
        sample(
            text,
            "weir_node_in_flight",
            &[("node", &Key(k).to_string())],
        )
    };
    assert_eq!(
        in_flight(&seen, 1)
            .zip(in_flight(&seen, 3))
            .map(|(a, b)| a + b),
        Some(1.0),
        "{seen}"
    );
    balance.call(()).await.unwrap();

    tx.send(Change::Remove(Key(1))).unwrap();
    tx.send(Change::Insert(Key(4), backend(Key(4)))).unwrap();
    balance.ready().await.unwrap();
    let now = text(&metrics);
    assert_eq!(in_flight(&now, 1), None, "{now}");
    assert!(in_flight(&now, 3).is_some(), "{now}");
    assert!(in_flight(&now, 4).is_some(), "{now}");
    // A second handle shares the table.
    assert!(in_flight(&text(&balance.metrics()), 4).is_some());

    // A node added on the balancer directly has no key: it is named by its id.
    balance.balancer().add(77).unwrap();
    let now = text(&metrics);
    assert_eq!(
        sample(&now, "weir_node_in_flight", &[("node", "77")]),
        Some(0.0),
        "{now}"
    );
}

#[test]
fn the_format_sets_the_prefix_and_constant_labels_or_is_refused() {
    let mut balance = Builder::new(Config::default())
        .classify(classify as fn(&Key) -> Outcome)
        .build_list([(Key(1), backend(Key(1)))])
        .unwrap();
    let format = MetricsFormat {
        prefix: "edge",
        labels: &[("zone", "eu-1")],
    };
    let mut out = String::new();
    balance.metrics().write(&mut out, &format).unwrap();
    assert_eq!(
        sample(
            &out,
            "edge_node_in_flight",
            &[("zone", "eu-1"), ("node", "backend-1")]
        ),
        Some(0.0),
        "{out}"
    );
    assert!(!out.contains("weir_"), "{out}");

    // A prefix Prometheus cannot take: an error, and nothing written.
    let bad = MetricsFormat {
        prefix: "edge-1",
        labels: &[],
    };
    let mut out = String::new();
    assert!(balance.metrics().write(&mut out, &bad).is_err());
    assert!(balance.write_metrics(&mut out, &bad).is_err());
    assert_eq!(out, "");
}

#[test]
fn a_key_is_escaped_as_a_label_value() {
    let svc = tower::service_fn(|()| async { Ok::<_, Infallible>(()) });
    let mut balance = Builder::new(Config::default())
        .classify(weir_tower::ByResult)
        .build_list([("say \"hi\"\\\n", svc)])
        .unwrap();
    let text = balance.metrics().to_string();
    assert!(
        text.contains("weir_node_in_flight{node=\"say \\\"hi\\\"\\\\\\n\"} 0\n"),
        "{text}"
    );
}
