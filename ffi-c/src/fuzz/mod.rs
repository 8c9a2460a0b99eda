//! The fuzz target over the C ABI: [`run`] decodes bytes into a sequence of calls to the `extern "C"`
//! functions, with random and hostile arguments, exactly as a C program could make them, and checks the
//! contract after every call against a shadow model of the balancers and the leases the program holds.
//!
//! Two drivers feed it the same way: cargo-fuzz (`ffi-c/fuzz/`, nightly, `cfg(fuzzing)`) with the
//! fuzzer's bytes, and the stable driver (`fuzz/tests.rs`, `cfg(test)`) with bytes from a seeded
//! generator: a fixed number of sequences in `cargo test`, and the `#[ignore]`d `tests::for_a_while` that
//! `cargo xtask fuzz [--seconds N]` runs in release for N seconds. Either stops on the first violated
//! check with a panic naming it (the stable driver also names the seed that reproduces it).
//!
//! What is checked after every call:
//! - no call returns `WEIR_ERR_PANIC`; every status is one its function documents, and where the model
//!   knows the answer (membership, releases, buffers, NULL arguments) the exact one;
//! - an error leaves every output untouched (outputs are pre-filled with a pattern) and sets a non-empty
//!   `weir_last_error_message` that names nothing a C program cannot see; a success empties it;
//! - the counters: `in_flight` is the number of leases the model holds, each member's `in_flight` the
//!   number it holds on that node, `released` and `released_stale` count the model's successful and stale
//!   releases, `acquired` its grants, the member counts its membership;
//! - a lease is granted only by an active member with room: its `inflight` equals the node's count and
//!   is at most the node's limit;
//! - a lease released, forged, mutated or from another balancer is refused, except where it is
//!   indistinguishable from a held one (see [`Stats::twins`]).
//! - a node `weir_balancer_due_check` names is a member in rotation that the program holds no lease on,
//!   under the lowest-score family only; `weir_balancer_report_check` refuses an unknown id, then every
//!   check under the weighted family, moves no counter, and a healthy check leaves the node no penalty.
//!
//! Pointers passed are always NULL or valid: the contract makes anything else the caller's undefined
//! behaviour, so a fuzzer that passed them would find only itself.

use crate::*;
use std::ffi::CStr;

/// What a run did, for the drivers' reports.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Stats {
    /// Calls into the C ABI.
    pub calls: u64,
    /// Leases granted.
    pub granted: u64,
    /// Releases that succeeded.
    pub released: u64,
    /// Of those, releases with a load report (`weir_balancer_release_loaded`).
    pub loaded: u64,
    /// Releases refused as expected (invalid, stale, bad outcome or load report).
    pub refused: u64,
    /// Releases of a lease already released that succeeded because another lease with the same identity
    /// (balancer, slot, generation, node id) was in flight: the balancer keeps no per-lease record, so it
    /// cannot tell the two apart (the contract asks to release each lease once). The model then retires
    /// one of the held twins in its place, so the counters still match exactly.
    pub twins: u64,
    /// Health checks: `weir_balancer_due_check` calls that named a node.
    pub named: u64,
    /// `weir_balancer_report_check` calls recorded.
    pub reported: u64,
    /// Of the reports, those refused as `WEIR_ERR_NOT_LOWEST_SCORE`.
    pub not_lowest_score: u64,
}

/// Decodes `data` into calls of the C ABI and checks the contract after each; panics on a violation.
/// Returns what the run did.
pub fn run(data: &[u8]) -> Stats {
    let mut f = Fuzz {
        input: Bytes { data, pos: 0 },
        sides: [None, None],
        dead: Vec::new(),
        now: 1_000_000,
        rng: weir_rng_seed(u64::from_le_bytes(
            data.get(..8)
                .and_then(|b| b.try_into().ok())
                .unwrap_or([7; 8]),
        )),
        stats: Stats::default(),
    };
    while !f.input.done() {
        f.step();
        f.check_all();
    }
    for side in &mut f.sides {
        if let Some(s) = side.take() {
            // SAFETY: a live handle from `weir_balancer_new`, freed once; its leases die with it.
            unsafe { weir_balancer_free(s.handle) };
        }
    }
    f.stats
}

mod checks;
mod input;
mod leases;
mod membership;
mod reads;
#[cfg(test)]
mod tests;

use input::Bytes;

/// A lease the program holds, as the model sees it.
#[derive(Clone, Copy, Debug)]
struct Held {
    lease: weir_lease,
    /// Its node was removed after the grant: its release is `WEIR_ERR_NODE_REMOVED`.
    removed: bool,
}

/// One balancer and what the model knows of it.
struct Side {
    handle: *mut weir_balancer,
    capacity: usize,
    /// Members in slot-independent order: (id, lame duck).
    members: Vec<(u64, bool)>,
    held: Vec<Held>,
    acquired: u64,
    released: [u64; WEIR_OUTCOME_COUNT],
    stale: u64,
    /// Refusals returned: `WEIR_ERR_ALL_BUSY`, and `weir_balancer_acquire_wait`'s `WEIR_ERR_TIMEOUT` and
    /// `WEIR_ERR_QUEUE_FULL`.
    busy: u64,
    /// `WEIR_ERR_NO_ACTIVE_NODES` returned, by either acquire.
    empty: u64,
    /// The family is the lowest-score one (`WEIR_ALGORITHM_LOWEST_SCORE`), which alone takes health
    /// checks.
    lowest_score: bool,
}

struct Fuzz<'a> {
    input: Bytes<'a>,
    sides: [Option<Side>; 2],
    /// Leases released already, or held when their balancer was freed: never valid again except as a
    /// held lease's twin.
    dead: Vec<weir_lease>,
    now: u64,
    rng: weir_rng,
    stats: Stats,
}

const ALL_STATUSES: std::ops::RangeInclusive<weir_status> = WEIR_OK..=WEIR_ERR_SHED;

fn message() -> String {
    let p = weir_last_error_message();
    assert!(!p.is_null(), "weir_last_error_message returned NULL");
    // SAFETY: never NULL, NUL-terminated (its contract; checked here by reading it).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// A status from `call`: never a panic, one of `allowed`, and on an error a message.
fn expect_in(call: &str, status: weir_status, allowed: &[weir_status]) {
    assert_ne!(
        status,
        WEIR_ERR_PANIC,
        "{call}: WEIR_ERR_PANIC: {}",
        message()
    );
    assert!(
        allowed.contains(&status),
        "{call}: status {status} is not one of {allowed:?} ({})",
        message()
    );
    let message = message();
    if status == WEIR_OK {
        assert_eq!(message, "", "{call}: a success left an error message");
    } else {
        assert!(
            !message.is_empty(),
            "{call}: error {status} without a message"
        );
        let rust = crate::boundary::rust_only_name(&message);
        assert_eq!(rust, None, "{call}: a Rust name in {message:?}");
    }
}

/// The pattern outputs are filled with before a call, to see that an error leaves them untouched.
const POISON_LEASE: weir_lease = weir_lease {
    node_id: 0xA5A5_A5A5_A5A5_A5A5,
    acquired_at: 0x5A5A_5A5A_5A5A_5A5A,
    slot: 0xA5A5_A5A5,
    inflight: 0x5A5A_5A5A,
    generation: 0xA5A5,
    balancer: 0x5A5A_5A5A,
};

fn poison_info() -> weir_node_info {
    weir_node_info {
        id: 0xA5A5_A5A5_A5A5_A5A5,
        limit: 0x5A5A_5A5A,
        in_flight: 0xA5A5_A5A5,
        success_rate: -7.0,
        ..weir_node_info::default()
    }
}

fn same_identity(a: &weir_lease, b: &weir_lease) -> bool {
    (a.balancer, a.slot, a.generation, a.node_id) == (b.balancer, b.slot, b.generation, b.node_id)
}

impl Fuzz<'_> {
    fn step(&mut self) {
        self.stats.calls += 1;
        match self.input.u8() % 21 {
            0 => self.new_balancer(),
            1 => self.free_balancer(),
            2 | 3 => self.add(),
            4 => self.remove(),
            5 => self.lame_duck(),
            6 | 7 => self.acquire(false),
            8 | 9 => self.acquire(true),
            10 => self.acquire_wait(),
            11..=13 => self.release_held(),
            14 => self.release_dead(),
            15 => self.release_mutated(),
            16 => self.node_snapshot(),
            17 => self.nodes(),
            18 => self.config_calls(),
            19 => self.health_check(),
            _ => self.pure_calls(),
        }
    }

    /// The counters of both balancers against the model.
    fn check_all(&self) {
        for s in self.sides.iter().flatten() {
            let mut st = weir_balancer_statistics::default();
            // SAFETY: a live handle, a valid output.
            assert_eq!(unsafe { weir_balancer_stats(s.handle, &mut st) }, WEIR_OK);
            assert_eq!(st.in_flight as usize, s.held.len(), "stats.in_flight");
            assert_eq!(st.released, s.released, "stats.released");
            assert_eq!(st.released_stale, s.stale, "stats.released_stale");
            assert_eq!(st.acquired, s.acquired, "stats.acquired");
            assert_eq!(st.rejected_all_busy, s.busy, "stats.rejected_all_busy");
            assert_eq!(st.rejected_no_active, s.empty, "stats.rejected_no_active");
            // Every waiting acquire's deadline had passed already: none ever queued.
            assert_eq!(
                (
                    st.waits,
                    st.waits_granted,
                    st.waits_timed_out,
                    st.waits_cancelled,
                    st.waiting
                ),
                (0, 0, 0, 0, 0),
                "stats' wait counters"
            );
            let lame = s.members.iter().filter(|m| m.1).count();
            assert_eq!(st.lame_duck_nodes as usize, lame, "stats.lame_duck_nodes");
            assert_eq!(
                st.active_nodes as usize,
                s.members.len() - lame,
                "stats.active_nodes"
            );
            // Every member's in-flight count is the number of its leases the model holds.
            let mut buf = vec![weir_node_info::default(); s.capacity.min(16)];
            let mut len = 0;
            if s.members.len() <= buf.len() {
                // SAFETY: a live handle; `buf` has room for `buf.len()`.
                let status = unsafe {
                    weir_balancer_nodes(s.handle, self.now, buf.as_mut_ptr(), buf.len(), &mut len)
                };
                assert_eq!(status, WEIR_OK, "weir_balancer_nodes: {}", message());
                assert_eq!(len, s.members.len());
                for info in &buf[..len] {
                    let held = s
                        .held
                        .iter()
                        .filter(|h| !h.removed && h.lease.node_id == info.id)
                        .count();
                    assert_eq!(
                        info.in_flight as usize, held,
                        "node {}'s in_flight",
                        info.id
                    );
                }
            }
        }
    }
}

/// A snapshot's values are within their documented ranges.
fn check_info(info: &weir_node_info) {
    assert!(
        (0.0..=1.0).contains(&info.success_rate),
        "success_rate {}",
        info.success_rate
    );
    assert!(
        info.weight >= 0.0 && !info.weight.is_nan(),
        "weight {}",
        info.weight
    );
    assert!(info.state == WEIR_NODE_ACTIVE || info.state == WEIR_NODE_LAME_DUCK);
    assert!(info.limit < 1 << 24, "limit {}", info.limit);
}
