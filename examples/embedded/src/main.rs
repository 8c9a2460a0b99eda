//! weir on a microcontroller: a gateway balances calls over 8 uplinks while one of them fails.
//!
//! The firmware builds a balancer over `static` node slots (no allocator, no `std`), and drives it with a
//! software clock (one call per millisecond, lasting 4 to 12 ms) and seeded generators, so every run
//! makes the same decisions. Node 3 answers every call with a failure, in 1 ms, from t = 1 s. Under
//! `Config::default()` and then `Config::cascade()`, it prints each node's share of the calls before the
//! failure, while the balancer learns (1 s to 2 s) and once it has (2 s to 4 s), and the balancer's own
//! stats, then checks:
//!
//! - before the failure, every node carries at least 5 % of the calls (a fair share is 12.5 %);
//! - once the balancer has learnt, the failing node carries less than its bound (default 1 %, cascade
//!   5 %: the cascade's window still holds node 3's successes from its first second, so its rate falls
//!   only as failures outnumber them) and every healthy node at least 8 % (a fair share of 7 is 14.3 %);
//! - every counter is conserved: the balancer's acquired, released-by-outcome, rejected and in-flight
//!   counts equal the firmware's own, nothing is left in flight on any node, and nothing was stale.
//!
//! Then it times 2,000 acquire+release pairs with SysTick (meaningful under QEMU's `-icount`, where
//! virtual time counts instructions, and calibrated by a loop of known length), reports its peak stack
//! (and fails if less than 1 KiB of it was never used), and exits through semihosting: status 0 when
//! every check passed.
//!
//! Run it with `cargo run --release` in this folder (QEMU's mps2-an386, a Cortex-M4F), or
//! `cargo run --release --target thumbv6m-none-eabi` (QEMU's microbit, a Cortex-M0), or, from the
//! repository root, `cargo xtask embedded` (both boards, checked, with the flash/RAM/instruction table).
#![no_std]
#![no_main]
#![deny(unsafe_code)]

use core::fmt;
use cortex_m::peripheral::{syst::SystClkSource, SYST};
use cortex_m_rt::entry;
use cortex_m_semihosting::hprintln;
use weir::balance::Stats;
use weir::{Balancer, Config, Lease, NodeSlot, Outcome, Rng};
use weir_embedded::{exit, MS, NODES};

/// The node slots: 8 × 352 bytes of `.bss` on a 32-bit Cortex-M, shared by the balancers below one at a
/// time (a storage serves one balancer while it lives).
static SLOTS: [NodeSlot; NODES] = [const { NodeSlot::new() }; NODES];

/// The node that fails, and from when.
const FAILING: u64 = 3;
const FAIL_FROM_MS: u64 = 1_000;
/// From here on the balancer is expected to have learnt.
const SETTLED_FROM_MS: u64 = 2_000;
const END_MS: u64 = 4_000;
/// A call to a working node lasts 4 to 12 ms (drawn by the workload's own seeded generator); a call to the
/// failing node fails fast, in 1 ms (connection refused), the case that makes a least-loaded balancer
/// pour calls into the failing node.
const CALL_MS: core::ops::RangeInclusive<u64> = 4..=12;
const FAIL_MS: u64 = 1;
/// Room for the calls in flight: one starts per millisecond and none lasts more than 12 ms.
const IN_FLIGHT: usize = 16;
/// Pairs timed by the SysTick measurement.
const BENCH_PAIRS: u32 = 2_000;

/// The three periods the shares are counted in.
const PERIODS: [&str; 3] = ["before", "learning", "settled"];

/// A call in flight: its lease, the outcome it will report and when it finishes.
struct Call {
    lease: Lease,
    outcome: Outcome,
    done: u64,
}

/// The firmware's own count of what it did, to hold the balancer's counters against.
#[derive(Default)]
struct Tally {
    /// Calls per period and node (index = id - 1).
    picks: [[u64; NODES]; 3],
    acquired: u64,
    rejected: u64,
    succeeded: u64,
    failed: u64,
    release_errors: u64,
}

/// Counts failed checks and prints each check.
struct Checks {
    failed: u32,
}

impl Checks {
    fn check(&mut self, ok: bool, what: fmt::Arguments) {
        hprintln!("  {} {}", if ok { "ok  " } else { "FAIL" }, what);
        if !ok {
            self.failed += 1;
        }
    }
}

/// `part / whole` in tenths of a percent (0 when `whole` is 0).
fn permille(part: u64, whole: u64) -> u64 {
    (part * 1000).checked_div(whole).unwrap_or(0)
}

/// Tenths of a percent, printed as a percentage.
struct Pct(u64);

impl fmt::Display for Pct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>3}.{}%", self.0 / 10, self.0 % 10)
    }
}

fn period(ms: u64) -> usize {
    match ms {
        _ if ms < FAIL_FROM_MS => 0,
        _ if ms < SETTLED_FROM_MS => 1,
        _ => 2,
    }
}

fn release(balancer: &Balancer<&[NodeSlot]>, call: Call, tally: &mut Tally) {
    match call.outcome {
        Outcome::Success => tally.succeeded += 1,
        _ => tally.failed += 1,
    }
    if balancer
        .release(call.lease, call.outcome, call.done)
        .is_err()
    {
        tally.release_errors += 1;
    }
}

/// The failover scenario under `config`; returns the number of failed checks. Not inlined: its frame (the
/// balancer, the calls in flight) is on the stack only while it runs, not beside `bench`'s.
#[inline(never)]
fn scenario(name: &str, config: Config, failing_bound_permille: u64) -> u32 {
    let mut checks = Checks { failed: 0 };
    let balancer = match Balancer::new(&SLOTS[..], config) {
        Ok(b) => b,
        Err(e) => {
            checks.check(false, format_args!("{name}: Balancer::new: {e}"));
            return checks.failed;
        }
    };
    for id in 1..=NODES as u64 {
        if let Err(e) = balancer.add(id) {
            checks.check(false, format_args!("{name}: add({id}): {e}"));
        }
    }
    // The balancer's generator, and the workload's (call durations): both seeded, so every run and every
    // board makes the same decisions.
    let mut rng = Rng::with_seed(7);
    let mut workload = Rng::with_seed(11);
    let mut tally = Tally::default();
    let mut calls: [Option<Call>; IN_FLIGHT] = [const { None }; IN_FLIGHT];
    for ms in 1..=END_MS {
        let now = ms * MS;
        for slot in calls.iter_mut() {
            if slot.as_ref().is_some_and(|c| c.done <= now) {
                if let Some(call) = slot.take() {
                    release(&balancer, call, &mut tally);
                }
            }
        }
        match balancer.acquire(now, &mut rng) {
            Ok(lease) => {
                let id = lease.node_id();
                tally.acquired += 1;
                match tally.picks[period(ms)].get_mut((id as usize).wrapping_sub(1)) {
                    Some(n) => *n += 1,
                    None => {
                        checks.check(false, format_args!("{name}: lease for unknown node {id}"))
                    }
                }
                let (outcome, duration) = if id == FAILING && ms >= FAIL_FROM_MS {
                    (Outcome::Failure, FAIL_MS)
                } else {
                    (Outcome::Success, workload.u64(CALL_MS))
                };
                let call = Call {
                    lease,
                    outcome,
                    done: now + duration * MS,
                };
                match calls.iter_mut().find(|slot| slot.is_none()) {
                    Some(slot) => *slot = Some(call),
                    None => {
                        checks.check(
                            false,
                            format_args!("{name}: more than {IN_FLIGHT} calls in flight"),
                        );
                        release(&balancer, call, &mut tally);
                    }
                }
            }
            Err(_) => tally.rejected += 1,
        }
    }
    // The calls still in flight finish.
    let mut end = END_MS * MS;
    for call in calls.iter_mut().filter_map(Option::take) {
        end = end.max(call.done);
        release(&balancer, call, &mut tally);
    }

    hprintln!(
        "\n{name}: {END_MS} ms, one call per ms lasting {} to {} ms, node {FAILING} failing (in {FAIL_MS} ms) from {FAIL_FROM_MS} ms",
        CALL_MS.start(),
        CALL_MS.end()
    );
    let totals: [u64; 3] = core::array::from_fn(|p| tally.picks[p].iter().sum());
    hprintln!(
        "  node |  {} | {} |  {} |  calls | success  limit  in flight",
        PERIODS[0],
        PERIODS[1],
        PERIODS[2]
    );
    for node in balancer.nodes(end) {
        let i = (node.id as usize).wrapping_sub(1);
        if i >= NODES {
            continue;
        }
        let share = |p: usize| Pct(permille(tally.picks[p][i], totals[p]));
        let calls: u64 = tally.picks.iter().map(|p| p[i]).sum();
        hprintln!(
            "  {:>4} |  {} |   {} |  {} | {:>6} | {}  {:>5}  {:>9}",
            node.id,
            share(0),
            share(1),
            share(2),
            calls,
            Pct((node.success_rate * 1000.0) as u64),
            node.limit,
            node.in_flight
        );
    }
    let stats = balancer.stats();
    print_stats(&stats);

    // The failing node is avoided, the healthy ones share its calls.
    let f = (FAILING - 1) as usize;
    for i in 0..NODES {
        let before = permille(tally.picks[0][i], totals[0]);
        checks.check(
            before >= 50,
            format_args!(
                "node {} carried {} of the calls before the failure (>= 5.0%)",
                i + 1,
                Pct(before)
            ),
        );
    }
    let failing = permille(tally.picks[2][f], totals[2]);
    checks.check(
        failing < failing_bound_permille,
        format_args!(
            "failing node {FAILING} carried {} of the calls once learnt (< {})",
            Pct(failing),
            Pct(failing_bound_permille)
        ),
    );
    for i in (0..NODES).filter(|&i| i != f) {
        let settled = permille(tally.picks[2][i], totals[2]);
        checks.check(
            settled >= 80,
            format_args!(
                "healthy node {} carried {} of the calls once learnt (>= 8.0%)",
                i + 1,
                Pct(settled)
            ),
        );
    }

    // Every counter is conserved.
    let picks: u64 = totals.iter().sum();
    checks.check(
        stats.acquired == tally.acquired && picks == tally.acquired,
        format_args!(
            "acquired: balancer {}, firmware {}, per node {picks}",
            stats.acquired, tally.acquired
        ),
    );
    checks.check(
        stats.acquired + stats.rejected_all_busy + stats.rejected_no_active == END_MS
            && stats.rejected_all_busy + stats.rejected_no_active == tally.rejected,
        format_args!(
            "every call acquired or rejected: {} + {} + {} = {END_MS}, firmware rejected {}",
            stats.acquired, stats.rejected_all_busy, stats.rejected_no_active, tally.rejected
        ),
    );
    checks.check(
        stats.released(Outcome::Success) == tally.succeeded
            && stats.released(Outcome::Failure) == tally.failed,
        format_args!(
            "released: balancer {} succeeded + {} failed, firmware {} + {}",
            stats.released(Outcome::Success),
            stats.released(Outcome::Failure),
            tally.succeeded,
            tally.failed
        ),
    );
    checks.check(
        stats.released_total() == stats.acquired
            && stats.in_flight == 0
            && stats.released_stale == 0
            && tally.release_errors == 0
            && balancer.nodes(end).all(|n| n.in_flight == 0),
        format_args!(
            "nothing left: {} released of {} acquired, {} in flight, {} stale, {} refused releases",
            stats.released_total(),
            stats.acquired,
            stats.in_flight,
            stats.released_stale,
            tally.release_errors
        ),
    );
    checks.check(
        stats.active_nodes == NODES as u32 && stats.lame_duck_nodes == 0,
        format_args!("{} nodes active", stats.active_nodes),
    );
    checks.failed
}

fn print_stats(stats: &Stats) {
    hprintln!(
        "  stats: acquired {} | succeeded {} | failed {} | rejected {} busy, {} no node | in flight {} | stale {}",
        stats.acquired,
        stats.released(Outcome::Success),
        stats.released(Outcome::Failure),
        stats.rejected_all_busy,
        stats.rejected_no_active,
        stats.in_flight,
        stats.released_stale
    );
}

/// Times `BENCH_PAIRS` acquire+release pairs (8 healthy nodes, each lease released at once as a success,
/// 100 µs of software time apart) in SysTick ticks of the core clock. `None` if the balancer cannot be
/// built or the 24-bit counter wrapped.
#[inline(never)]
fn bench(config: Config, syst: &mut SYST) -> Option<u32> {
    let balancer = Balancer::new(&SLOTS[..], config).ok()?;
    for id in 1..=NODES as u64 {
        balancer.add(id).ok()?;
    }
    let mut rng = Rng::with_seed(3);
    let mut now = 0;
    let mut pair = |now: u64| {
        if let Ok(lease) = balancer.acquire(now, &mut rng) {
            let _ = balancer.release(lease, Outcome::Success, now + MS / 10);
        }
    };
    // Warm up: the nodes' limits and weights settle as they would in a running gateway.
    for _ in 0..BENCH_PAIRS {
        now += MS / 10;
        pair(now);
    }
    // Clearing the counter leaves it at 0 until its next tick reloads it: start from a reloaded count.
    syst.clear_current();
    while SYST::get_current() == 0 {}
    let _ = syst.has_wrapped();
    let start = SYST::get_current();
    for _ in 0..BENCH_PAIRS {
        now += MS / 10;
        pair(now);
    }
    let stop = SYST::get_current();
    (!syst.has_wrapped()).then(|| start - stop)
}

/// Iterations of the calibration loop, two instructions each.
const CALIBRATION_LOOPS: u32 = 1_000_000;

/// SysTick ticks for `2 * CALIBRATION_LOOPS` instructions: a loop of exactly two instructions
/// (`subs`, `bne`) per iteration. Under `-icount` this measures what one tick is in instructions on this
/// board, so that the timings need no assumption about the emulated clock.
#[allow(unsafe_code)]
fn calibrate(syst: &mut SYST) -> Option<u32> {
    syst.clear_current();
    while SYST::get_current() == 0 {}
    let _ = syst.has_wrapped();
    let start = SYST::get_current();
    // SAFETY: the loop only counts a register down to zero; it reads and writes no memory, uses no stack
    // and leaves the flags, which the asm! contract lets it clobber.
    unsafe {
        core::arch::asm!(
            "2:",
            "subs {n}, #1",
            "bne 2b",
            n = inout(reg) CALIBRATION_LOOPS => _,
            options(nomem, nostack),
        );
    }
    let stop = SYST::get_current();
    (!syst.has_wrapped()).then(|| start - stop)
}

#[entry]
fn main() -> ! {
    hprintln!(
        "weir-embedded: a balancer of {NODES} nodes; Balancer {} bytes, NodeSlot {} bytes, Lease {} bytes; lock-free 64-bit atomics: {}",
        core::mem::size_of::<Balancer<&[NodeSlot]>>(),
        core::mem::size_of::<NodeSlot>(),
        core::mem::size_of::<Lease>(),
        weir::LOCK_FREE
    );
    // Default: a failing node's first failures outweigh every in-flight count, so it loses its calls
    // within the learning second. Cascade: its 5 s bucket still holds about 125 successes from its healthy
    // second, so its rate^3 weight falls only as its failures outnumber them.
    let mut failed = scenario("default", Config::default(), 10);
    failed += scenario("cascade", Config::cascade(), 50);

    let Some(mut core) = cortex_m::Peripherals::take() else {
        hprintln!("weir-embedded: FAIL: the core peripherals were taken");
        exit(false)
    };
    core.SYST.set_clock_source(SystClkSource::Core);
    core.SYST.set_reload(0x00FF_FFFF);
    core.SYST.enable_counter();
    match calibrate(&mut core.SYST) {
        Some(ticks) => hprintln!(
            "calibration: {} instructions in {ticks} SysTick ticks",
            2 * CALIBRATION_LOOPS
        ),
        None => {
            hprintln!("calibration: FAIL: SysTick wrapped");
            failed += 1;
        }
    }
    for (name, config) in [
        ("default", Config::default()),
        ("cascade", Config::cascade()),
    ] {
        match bench(config, &mut core.SYST) {
            Some(ticks) => hprintln!(
                "bench {name}: {BENCH_PAIRS} acquire+release pairs in {ticks} SysTick ticks"
            ),
            None => {
                hprintln!("bench {name}: FAIL: no balancer, or SysTick wrapped");
                failed += 1;
            }
        }
    }
    // The core's `Balancer::new` is the deepest call (see the README's table); keep 1 KiB to spare on the
    // smallest board, so that CI notices when a change brings the stack near the statics.
    let (peak, size) = weir_embedded::stack_use();
    let spare = size.saturating_sub(peak);
    hprintln!("stack: {peak} of {size} bytes at most in use");
    if spare < 1024 {
        hprintln!("  FAIL only {spare} bytes of the stack were never used (>= 1024)");
        failed += 1;
    }
    if failed == 0 {
        hprintln!("weir-embedded: PASS");
    } else {
        hprintln!("weir-embedded: FAIL ({failed} checks)");
    }
    exit(failed == 0)
}
