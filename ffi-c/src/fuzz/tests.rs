//! The stable driver: seeded random sequences (a fixed number in `cargo test`, for a while in
//! `cargo xtask fuzz`), and the finding as a unit test.

use super::*;
use std::ptr::null_mut;
use std::time::{Duration, Instant};
use weir_core::Rng;

/// Bytes of one sequence from `seed`: lengths vary so short and long sequences both occur.
fn sequence(seed: u64) -> Vec<u8> {
    let mut rng = Rng::with_seed(seed);
    let len = rng.usize(16..4096);
    let mut data = vec![0; len];
    rng.fill(&mut data);
    data
}

/// Runs sequences from seeds `first..` until `stop` says so; panics naming the seed of a finding.
fn drive(first: u64, mut stop: impl FnMut(u64) -> bool) -> (u64, Stats) {
    let mut total = Stats::default();
    let mut seed = first;
    while !stop(seed - first) {
        let data = sequence(seed);
        let result = std::panic::catch_unwind(|| run(&data));
        let Ok(s) = result else {
            panic!("finding: the sequence of seed {seed} ({} bytes) violates the contract (see above); reproduce with `run(&sequence({seed}))`", data.len());
        };
        total.calls += s.calls;
        total.granted += s.granted;
        total.released += s.released;
        total.loaded += s.loaded;
        total.refused += s.refused;
        total.twins += s.twins;
        total.named += s.named;
        total.reported += s.reported;
        total.not_lowest_score += s.not_lowest_score;
        seed += 1;
    }
    (seed - first, total)
}

/// The stable driver in `cargo test`: a fixed number of sequences, a few seconds in a debug build.
#[test]
#[cfg_attr(
    miri,
    ignore = "1,000 sequences take hours under miri; the next test runs three"
)]
fn random_call_sequences_keep_the_contract() {
    let (runs, stats) = drive(1, |done| done >= 1_000);
    assert_eq!(runs, 1_000);
    // The sequences exercise what they are meant to: grants, releases (with load reports too),
    // refusals, and health checks named, recorded and refused by the weighted family.
    assert!(
        stats.granted > 1_000 && stats.released > 500 && stats.loaded > 100 && stats.refused > 500,
        "{stats:?}"
    );
    assert!(
        stats.named > 10 && stats.reported > 10 && stats.not_lowest_score > 10,
        "{stats:?}"
    );
}

/// The fuzzer's one finding, as `weir_balancer_release` documents it: a released lease is refused again
/// (its tag is cleared), but a *copy* of it, taken before the release, is refused only while its node
/// has no other lease in flight; while it has, the copy is taken for that one.
#[test]
fn a_copy_of_a_released_lease_is_refused_unless_the_node_has_another_lease_in_flight() {
    let config = weir_config_default();
    let mut b = null_mut();
    let (mut first, mut second) = (POISON_LEASE, POISON_LEASE);
    // SAFETY: valid pointers; the handle is freed last.
    unsafe {
        assert_eq!(weir_balancer_new(&config, 1, &mut b), WEIR_OK);
        assert_eq!(weir_balancer_add(b, 7), WEIR_OK);
        assert_eq!(weir_balancer_acquire(b, 10, &mut first), WEIR_OK);
        assert_eq!(weir_balancer_acquire(b, 10, &mut second), WEIR_OK);
        let mut copy = first;
        assert_eq!(
            weir_balancer_release(b, &mut first, WEIR_OUTCOME_SUCCESS, 20),
            WEIR_OK
        );
        assert_eq!(first.balancer, 0);
        assert_eq!(
            weir_balancer_release(b, &mut first, WEIR_OUTCOME_SUCCESS, 20),
            WEIR_ERR_INVALID_LEASE
        );
        // `second` is in flight on the same node: the balancer cannot tell the copy from it.
        assert_eq!(
            weir_balancer_release(b, &mut copy, WEIR_OUTCOME_SUCCESS, 20),
            WEIR_OK
        );
        // Now nothing is in flight: `second`'s own release is refused, and changes nothing.
        assert_eq!(
            weir_balancer_release(b, &mut second, WEIR_OUTCOME_SUCCESS, 20),
            WEIR_ERR_INVALID_LEASE
        );
        assert_ne!(second.balancer, 0);
        let mut st = weir_balancer_statistics::default();
        assert_eq!(weir_balancer_stats(b, &mut st), WEIR_OK);
        assert_eq!((st.in_flight, st.released[0]), (0, 2));
        weir_balancer_free(b);
    }
}

/// A few short sequences, enough for miri to see every export's pointer handling.
#[test]
fn a_few_sequences_under_miri_too() {
    let (runs, stats) = drive(1_000_000, |done| done >= 3);
    assert_eq!(runs, 3);
    assert!(stats.calls > 0);
}

/// The long stable driver: `cargo xtask fuzz [--seconds N]` runs it in release for
/// `WEIR_FUZZ_SECONDS` (default 60) and prints executions and findings.
#[test]
#[ignore = "long: run by `cargo xtask fuzz`"]
fn for_a_while() {
    let seconds: u64 = std::env::var("WEIR_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let first: u64 = std::env::var("WEIR_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            // A different start on every run (`weir_now_ns` starts near 0 in every process).
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0x5EED, |d| d.as_nanos() as u64)
        });
    let until = Instant::now() + Duration::from_secs(seconds);
    let t0 = Instant::now();
    let (runs, s) = drive(first, |_| Instant::now() >= until);
    println!(
        "weir-fuzz: {runs} executions (sequences from seed {first}) in {:.0} s: {} calls, {} leases \
         granted, {} released, {} releases refused, {} re-releases accepted as a held twin, {} nodes \
         named for a health check, {} checks recorded, {} refused by the weighted family; findings: 0 \
         (a finding stops the run, naming its seed)",
        t0.elapsed().as_secs_f64(),
        s.calls,
        s.granted,
        s.released,
        s.refused,
        s.twins,
        s.named,
        s.reported,
        s.not_lowest_score
    );
}
