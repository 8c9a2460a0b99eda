//! Rust examples of the repository README that cannot run there (its Rust blocks are the core's doc
//! tests, which have neither this crate nor tokio), marked `rust,ignore` there and checked here: the
//! tower quick start, each of whose lines must be a line of this crate's README (whose example runs as a
//! doc test, `ReadmeDoctests` in `src/lib.rs`), and the lease under an outside tokio timer, each of whose
//! lines must be a line of this file, where it runs. A test file rather than a unit test: it reads the
//! repository's README, which the published package does not hold.

use std::future::pending;
use std::time::Duration;
use weir::balance::Rejected;
use weir::rt::Keyed;
use weir::{Config, Outcome};

const ROOT: &str = include_str!("../../../README.md");

/// The first `rust,ignore` block of `text` after `marker`.
fn block_after<'a>(text: &'a str, marker: &str) -> &'a str {
    text.split(marker)
        .nth(1)
        .and_then(|section| section.split("```rust,ignore\n").nth(1))
        .and_then(|b| b.split("```").next())
        .unwrap_or_else(|| panic!("the repository README has a Rust block after {marker:?}"))
}

/// Asserts that every line of `block` (at least `min` of them) is a line of `text`.
fn each_line_is_in(block: &str, text: &str, min: usize, what: &str) {
    let lines: Vec<&str> = block.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(lines.len() >= min, "{block}");
    for line in lines {
        assert!(
            text.lines().any(|t| t.trim() == line.trim()),
            "a line of the repository README's {what} is not where it runs: {line}"
        );
    }
}

#[test]
fn the_root_readme_quick_start_is_the_tower_readme_example() {
    let block = block_after(ROOT, "\n### tower\n");
    each_line_is_in(block, include_str!("../README.md"), 6, "tower quick start");
}

#[test]
fn the_root_readme_tokio_deadline_is_the_test_below() {
    let block = block_after(ROOT, "`integrations/tower/tests/readme.rs`)");
    each_line_is_in(
        block,
        include_str!("readme.rs"),
        4,
        "lease under a tokio timer",
    );
}

/// A call that never answers.
async fn slow_call(_addr: &str) -> u16 {
    pending().await
}

/// The README's lease under `tokio::time::timeout_at`: `with_deadline` takes tokio's `Instant` (it used
/// to take std's only, E0308), and the timer's drop of the lease past that instant records `Dropped`.
#[tokio::test]
async fn a_lease_under_a_tokio_timer_takes_its_instant() -> Result<(), Rejected> {
    let backends: Keyed<&str> = Keyed::with_capacity(4, Config::default()).unwrap();
    backends.add("10.0.0.1:8080").unwrap();
    // The README's lines:
    let deadline = tokio::time::Instant::now() + Duration::from_millis(20); // or a std Instant
    let lease = backends.acquire()?.with_deadline(deadline);
    let call = async move { slow_call(lease.key()).await }; // holds the lease until it ends or drops
    assert!(tokio::time::timeout_at(deadline, call).await.is_err()); // the timer dropped it: Dropped

    let st = backends.balancer().stats();
    assert_eq!((st.released(Outcome::Dropped), st.in_flight), (1, 0));
    Ok(())
}
