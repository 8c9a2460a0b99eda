//! What the default's tests share: the lowest-score family's default constants and its penalty, computed
//! as the documentation states them; and, in [`conservation`], the stress and property tests' exact
//! checks of a balancer's counters against what its callers saw; in [`load`], the virtual-time load of
//! the default's scenario tests. Each test file that needs them declares `mod common;`.

#![allow(dead_code)]

pub mod conservation;
pub mod load;

use weir::balance::{Algorithm, LowestScore, Weighted};
use weir::Config;

/// The lowest-score family's default constants, as `LowestScore::DEFAULT` holds them: every expected
/// number of the default's tests is derived from these (the comments quote the values they give with the
/// defaults).
pub struct Constants {
    /// Penalty per recent failure, `penalty` (10).
    pub a: f64,
    /// Penalty per doubling of failures over successes, `ratio_penalty` (16).
    pub b: f64,
    /// Half-lives in nanoseconds: successes (1 s) and failures (30 s).
    pub hs: u64,
    pub hf: u64,
    /// What a 503 or timeout (0.1), a 429 (0.1) and another 4xx (0.01) add to the failures.
    pub dropped: f32,
    pub throttled: f32,
    pub client_error: f32,
}

/// The lowest-score family's default constants (see [`Constants`]).
pub const K: Constants = {
    let LowestScore {
        success_half_life_ns,
        failure_half_life_ns,
        dropped_cost,
        throttled_cost,
        client_error_cost,
        penalty,
        ratio_penalty,
        // Probation is off in the default: no probes, timed or drawn, no forgiveness.
        probe_fraction: _,
        forgiveness: _,
        probe_after_ns: _,
        // The slowness term reads latencies, which the penalty's model leaves out.
        slow_ratio: _,
    } = LowestScore::DEFAULT;
    Constants {
        a: penalty as f64,
        b: ratio_penalty as f64,
        hs: success_half_life_ns,
        hf: failure_half_life_ns,
        dropped: dropped_cost,
        throttled: throttled_cost,
        client_error: client_error_cost,
    }
};

/// The lowest-score family's default penalty, `a F + b log2(1 + F / (S + 1))` (a = 10, b = 16), as the
/// documentation states it, in `f64`.
pub fn penalty(failures: f64, successes: f64) -> f64 {
    if failures == 0.0 {
        return 0.0;
    }
    K.a * failures + K.b * (1.0 + failures / (successes + 1.0)).log2()
}

/// The failure count `F*` at which a node with no successes has penalty 1 (one request in flight):
/// `a F + b log2(1 + F) = 1`, by bisection: 0.030546 with the defaults (0.04699 with `ratio_penalty` 8).
pub fn f_at_penalty_one() -> f64 {
    let (mut lo, mut hi) = (0.0, 1.0);
    assert!(penalty(hi, 0.0) >= 1.0);
    for _ in 0..100 {
        let mid = (lo + hi) / 2.0;
        if penalty(mid, 0.0) < 1.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The original cascade, `Config::cascade()`, with the weighted family's parameters `w` (most often
/// `Weighted::CASCADE` with a field or two changed).
pub fn weighted(w: Weighted) -> Config {
    Config {
        algorithm: Algorithm::Weighted(w),
        ..Config::cascade()
    }
}

/// A lease on node `id`, taken at `now`: every other node the acquires land on first is released at once
/// as a success (so it stays healthy and free).
pub fn lease_on(b: &weir::HeapBalancer, id: u64, now: u64, rng: &mut weir::Rng) -> weir::Lease {
    loop {
        let l = b.acquire(now, rng).unwrap();
        if l.node_id() == id {
            return l;
        }
        b.release(l, weir::Outcome::Success, now).unwrap();
    }
}
