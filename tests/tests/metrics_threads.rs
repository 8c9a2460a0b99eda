//! Metrics read while threads acquire, release and wait: every reading parses as whole lines, and once the
//! threads are done the text holds exactly the counters the callers counted themselves, waits included.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use weir::limit::{FixedLimit, LimitAlgorithm};
use weir::metrics::{node_id_name, MetricsFormat};
use weir::{Config, HeapBalancer, Outcome};

const THREADS: u64 = 4;
const CALLS: u64 = 2_000;

/// The value of the sample `name` (with its labels) in `text`.
fn value(text: &str, sample: &str) -> u64 {
    let line = text
        .lines()
        .find(|l| l.rsplit_once(' ').is_some_and(|(s, _)| s == sample))
        .unwrap_or_else(|| panic!("no sample {sample} in\n{text}"));
    line.rsplit_once(' ').unwrap().1.parse().unwrap()
}

#[test]
fn metrics_under_traffic_end_with_the_callers_counts() {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }),
        ..Config::default()
    };
    let b = Arc::new(HeapBalancer::with_capacity(4, config).unwrap());
    for id in 1..=2 {
        b.add(id).unwrap();
    }
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let b = Arc::clone(&b);
            thread::spawn(move || {
                let (mut granted, mut failed, mut refused) = (0_u64, 0_u64, 0_u64);
                for i in 0..CALLS {
                    // Waiting acquires with a short deadline: some wait, some time out.
                    let deadline = Instant::now() + Duration::from_micros(50);
                    match b.acquire_wait(deadline) {
                        Ok(lease) => {
                            granted += 1;
                            let outcome = if (i + t) % 7 == 0 {
                                failed += 1;
                                Outcome::Failure
                            } else {
                                Outcome::Success
                            };
                            // Hold it a moment, so that the others find no room and wait.
                            thread::yield_now();
                            lease.complete(outcome).unwrap();
                        }
                        Err(_) => refused += 1,
                    }
                }
                (granted, failed, refused)
            })
        })
        .collect();
    // Read all the while: every reading is whole lines of one format.
    let mut readings = 0;
    while !workers.iter().all(|w| w.is_finished()) {
        let mut text = String::new();
        b.write_metrics(
            &mut text,
            &MetricsFormat::default(),
            &node_id_name,
            weir::rt::monotonic_now(),
        )
        .unwrap();
        assert!(text
            .lines()
            .all(|l| l.starts_with("# ") || l.starts_with("weir_")));
        readings += 1;
    }
    let (mut granted, mut failed, mut refused) = (0, 0, 0);
    for w in workers {
        let (g, f, r) = w.join().unwrap();
        granted += g;
        failed += f;
        refused += r;
    }
    let mut text = String::new();
    b.write_metrics(
        &mut text,
        &MetricsFormat::default(),
        &node_id_name,
        weir::rt::monotonic_now(),
    )
    .unwrap();
    assert!(readings > 0);
    assert_eq!(value(&text, "weir_acquired_total"), granted);
    assert_eq!(
        value(&text, "weir_released_total{outcome=\"failure\"}"),
        failed
    );
    assert_eq!(
        value(&text, "weir_released_total{outcome=\"success\"}"),
        granted - failed
    );
    assert_eq!(
        value(&text, "weir_rejected_total{cause=\"all_busy\"}"),
        refused
    );
    assert_eq!(value(&text, "weir_in_flight"), 0);
    assert_eq!(value(&text, "weir_waiting"), 0);
    let st = b.stats();
    assert_eq!(value(&text, "weir_waits_total"), st.waits);
    assert_eq!(
        st.waits,
        value(&text, "weir_waits_ended_total{result=\"granted\"}")
            + value(&text, "weir_waits_ended_total{result=\"timed_out\"}")
            + value(&text, "weir_waits_ended_total{result=\"cancelled\"}")
    );
    assert_eq!(
        value(&text, "weir_waits_ended_total{result=\"timed_out\"}"),
        st.waits_timed_out
    );
}
