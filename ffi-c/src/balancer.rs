//! The balancer: construction, membership, acquire (fail fast, with the library's or the caller's
//! generator, or waiting), release, snapshots and counters.

use crate::boundary::{
    arg, arg_mut, free_handle, guard, into_handle, weir_status, write_list, Error, Out,
    WEIR_ERR_ALL_BUSY, WEIR_ERR_CAPACITY_FULL, WEIR_ERR_DUPLICATE_ID, WEIR_ERR_INVALID_LEASE,
    WEIR_ERR_NODE_REMOVED, WEIR_ERR_NOT_LOWEST_SCORE, WEIR_ERR_NO_ACTIVE_NODES,
    WEIR_ERR_QUEUE_FULL, WEIR_ERR_SHED, WEIR_ERR_TIMEOUT, WEIR_ERR_UNKNOWN_ID,
};
use crate::config::{config_error, config_from_c, config_to_c, weir_config};
use crate::metrics::{weir_metrics_format, write_text};
use crate::outcome::{outcome_from_c, weir_outcome, WEIR_OUTCOME_COUNT};
use crate::rng::{weir_rng, with_caller_rng};
use std::ffi::c_char;
use std::time::{Duration, Instant};
use weir_core::balance::{
    CheckError, MembershipError, NodeSnapshot, NodeState, RawLease, Rejected, ReleaseError, Stats,
};
use weir_core::limit::ServerLoad;
use weir_core::rt::{monotonic_now, with_thread_rng, WaitError};
use weir_core::{HeapBalancer, Lease, Outcome};

/// A load balancer over up to `capacity` nodes: an opaque handle from `weir_balancer_new`, freed with
/// `weir_balancer_free`.
///
/// Thread safety: every function that takes a `weir_balancer*` may be called from any number of threads
/// at once on the same balancer (lock-free, as the Rust core; only `weir_balancer_acquire_wait` blocks,
/// and only its caller), except `weir_balancer_free`, which must be the last call on it.
pub struct weir_balancer {
    inner: HeapBalancer,
}

/// A node's state in a snapshot: one of the `WEIR_NODE_*` values.
#[allow(non_camel_case_types)]
pub type weir_node_state = u32;
/// In rotation.
pub const WEIR_NODE_ACTIVE: weir_node_state = 0;
/// Lame duck: no new leases; leases in flight finish normally.
pub const WEIR_NODE_LAME_DUCK: weir_node_state = 1;

/// The right to make one call to node `node_id`: a plain value the caller holds and passes back to
/// `weir_balancer_release` once (which clears its `balancer` tag, so releasing it again is refused). The
/// balancer checks the identifying fields on release: a lease released already, forged, or from another
/// balancer is refused with `WEIR_ERR_INVALID_LEASE` and changes nothing. Read `node_id`, `acquired_at`
/// and `inflight`; the other fields identify the lease and must not be changed. Do not release copies of
/// a lease: see `weir_balancer_release`.
///
/// Thread safety: a plain value; a lease may be released from any thread.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct weir_lease {
    /// The id of the node to call.
    pub node_id: u64,
    /// The `now_ns` the lease was acquired at (the RTT the limiter sees is the release's `now_ns` minus
    /// this).
    pub acquired_at: u64,
    /// The node's slot in the balancer.
    pub slot: u32,
    /// Requests in flight on the node when this one was admitted, including it.
    pub inflight: u32,
    /// The slot's generation when the lease was granted.
    pub generation: u16,
    /// The tag of the balancer that granted the lease (never 0).
    pub balancer: u32,
}

impl From<RawLease> for weir_lease {
    fn from(r: RawLease) -> Self {
        weir_lease {
            node_id: r.id,
            acquired_at: r.start,
            slot: r.slot,
            inflight: r.inflight,
            generation: r.generation,
            balancer: r.balancer,
        }
    }
}

impl From<weir_lease> for RawLease {
    fn from(l: weir_lease) -> Self {
        RawLease {
            id: l.node_id,
            start: l.acquired_at,
            slot: l.slot,
            inflight: l.inflight,
            generation: l.generation,
            balancer: l.balancer,
        }
    }
}

/// What a balancer reports about one member (`weir_balancer_node_snapshot`, `weir_balancer_nodes`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct weir_node_info {
    /// The node's id.
    pub id: u64,
    /// `WEIR_NODE_ACTIVE` or `WEIR_NODE_LAME_DUCK`.
    pub state: weir_node_state,
    /// Success rate in [0, 1] (the weighted models' estimate; under the decay model `S / (S + F)`, 1 with
    /// no data).
    pub success_rate: f64,
    /// The weighted policies' weight (under the decay model, 1 / (1 + penalty)).
    pub weight: f64,
    /// The decay model's success counter at `now` (0 under the other models).
    pub successes: f64,
    /// The decay model's failure counter at `now` (0 under the other models).
    pub failures: f64,
    /// The decay model's penalty, in in-flight requests (0 under the other models).
    pub penalty: f64,
    /// The node's concurrency limit.
    pub limit: u32,
    /// Leases in flight on the node.
    pub in_flight: u32,
    /// Requests finished within the bucket window (bucket model).
    pub window_finished: u64,
    /// Of those, succeeded.
    pub window_succeeded: u64,
    /// Requests finished in the sticky bucket (bucket model).
    pub sticky_finished: u64,
    /// Of those, succeeded.
    pub sticky_succeeded: u64,
    /// Whether any outcome has been recorded for the node.
    pub has_data: bool,
    /// Leases released to the node while it was a member, indexed by `weir_outcome`, counted from its
    /// add: a node added into a slot that another node left starts at 0 (releases after a removal count
    /// in `weir_balancer_statistics.released_stale`).
    pub released: [u64; WEIR_OUTCOME_COUNT],
}

impl From<NodeSnapshot> for weir_node_info {
    fn from(s: NodeSnapshot) -> Self {
        weir_node_info {
            id: s.id,
            state: match s.state {
                NodeState::Active => WEIR_NODE_ACTIVE,
                NodeState::LameDuck => WEIR_NODE_LAME_DUCK,
            },
            success_rate: s.success_rate,
            weight: s.weight,
            successes: s.successes,
            failures: s.failures,
            penalty: s.penalty,
            limit: s.limit,
            in_flight: s.in_flight,
            window_finished: s.window_finished,
            window_succeeded: s.window_succeeded,
            sticky_finished: s.sticky_finished,
            sticky_succeeded: s.sticky_succeeded,
            has_data: s.has_data,
            released: s.by_outcome,
        }
    }
}

/// A balancer's counters since it was built (`weir_balancer_stats`). Refusals and waits are counted
/// apart: a refusal is an acquire that returned an error to its caller; a wait is a
/// `weir_balancer_acquire_wait` that found no room and queued. A wait that ends with a lease is not a
/// refusal; one that times out is both. Conserved: `acquired == (sum of released) + released_stale +
/// in_flight`, and `waits == waits_granted + waits_timed_out + waits_cancelled + waiting`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct weir_balancer_statistics {
    /// Leases granted.
    pub acquired: u64,
    /// Acquires that returned no lease because every active node was at its limit:
    /// `WEIR_ERR_ALL_BUSY` from `weir_balancer_acquire`, `WEIR_ERR_QUEUE_FULL` or `WEIR_ERR_TIMEOUT` from
    /// `weir_balancer_acquire_wait`.
    pub rejected_all_busy: u64,
    /// Acquires that returned `WEIR_ERR_NO_ACTIVE_NODES` (no node was in rotation).
    pub rejected_no_active: u64,
    /// Releases by outcome, indexed by `WEIR_OUTCOME_*`.
    pub released: [u64; WEIR_OUTCOME_COUNT],
    /// Releases of leases whose node had been removed (`WEIR_ERR_NODE_REMOVED`).
    pub released_stale: u64,
    /// Leases in flight now.
    pub in_flight: u64,
    /// Members in rotation.
    pub active_nodes: u32,
    /// Members in lame duck.
    pub lame_duck_nodes: u32,
    /// Waiting acquires that found no room and queued (one that finds no node in rotation is refused
    /// at once and does not count).
    pub waits: u64,
    /// Waits that ended with a lease.
    pub waits_granted: u64,
    /// Waits whose deadline passed first (each also counted in `rejected_all_busy`).
    pub waits_timed_out: u64,
    /// Waits abandoned by their caller (the Rust async forms only: 0 through this API).
    pub waits_cancelled: u64,
    /// Callers waiting for room now.
    pub waiting: u64,
}

impl From<Stats> for weir_balancer_statistics {
    fn from(s: Stats) -> Self {
        let mut released = [0; WEIR_OUTCOME_COUNT];
        for outcome in Outcome::ALL {
            released[outcome as usize] = s.released(outcome);
        }
        weir_balancer_statistics {
            acquired: s.acquired,
            rejected_all_busy: s.rejected_all_busy,
            rejected_no_active: s.rejected_no_active,
            released,
            released_stale: s.released_stale,
            in_flight: s.in_flight,
            active_nodes: s.active_nodes,
            lame_duck_nodes: s.lame_duck_nodes,
            waits: s.waits,
            waits_granted: s.waits_granted,
            waits_timed_out: s.waits_timed_out,
            waits_cancelled: s.waits_cancelled,
            waiting: s.waiting,
        }
    }
}

fn rejected(e: Rejected) -> Error {
    let status = match e {
        Rejected::NoActiveNodes => WEIR_ERR_NO_ACTIVE_NODES,
        _ => WEIR_ERR_ALL_BUSY,
    };
    Error::new(status, e.to_string())
}

fn membership(e: MembershipError) -> Error {
    let status = match e {
        MembershipError::DuplicateId(_) => WEIR_ERR_DUPLICATE_ID,
        MembershipError::UnknownId(_) => WEIR_ERR_UNKNOWN_ID,
        _ => WEIR_ERR_CAPACITY_FULL,
    };
    Error::new(status, e.to_string())
}

fn release_error(e: ReleaseError) -> Error {
    let status = match e {
        ReleaseError::NodeRemoved { .. } => WEIR_ERR_NODE_REMOVED,
        _ => WEIR_ERR_INVALID_LEASE,
    };
    Error::new(status, e.to_string())
}

/// The load a server's utilization reports, or `WEIR_ERR_INVALID_ARGUMENT` with the core's reason.
fn load_from_c(utilization: f64) -> Result<ServerLoad, Error> {
    ServerLoad::from_utilization(utilization)
        .map_err(|e| Error::invalid("utilization", format_args!("{utilization} is refused: {e}")))
}

/// Builds a balancer with room for `capacity` nodes (1 ..= 65,536) from `config`, validated by the core,
/// and stores its handle in `*out`. Errors: `WEIR_ERR_NULL`; `WEIR_ERR_INVALID_ARGUMENT` (an unknown
/// tag in the config); `WEIR_ERR_INVALID_CONFIG` (a refused value or capacity; the message names it).
///
/// # Safety
/// `config` is NULL or points to a readable `weir_config`; `out` is NULL or points to a writable
/// `weir_balancer*`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_new(
    config: *const weir_config,
    capacity: usize,
    out: *mut *mut weir_balancer,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let c = unsafe { arg(config, "config") }?;
        let out = unsafe { Out::new(out, "out") }?;
        let config = config_from_c(c)?;
        let inner =
            HeapBalancer::with_capacity(capacity, config).map_err(|e| config_error(e, c))?;
        out.write(into_handle(weir_balancer { inner }));
        Ok(())
    })
}

/// Frees a balancer. NULL is a no-op. Leases still outstanding become invalid (their releases must not
/// be attempted: the handle is gone).
///
/// # Safety
/// `balancer` is NULL or a handle from `weir_balancer_new` not yet freed, and no other call on it is in
/// progress or follows.
///
/// Thread safety: must be the last call on the balancer, from one thread.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_free(balancer: *mut weir_balancer) {
    // SAFETY: the caller's contract above is `free_handle`'s.
    unsafe { free_handle(balancer) }
}

/// The balancer behind a handle, or `WEIR_ERR_NULL`.
///
/// # Safety
/// `balancer` is NULL or a live handle from `weir_balancer_new`.
unsafe fn balancer<'a>(balancer: *const weir_balancer) -> Result<&'a HeapBalancer, Error> {
    // SAFETY: forwarded from the export's contract.
    unsafe { arg(balancer, "balancer") }.map(|b| &b.inner)
}

/// Writes the balancer's node capacity to `*out`.
///
/// # Safety
/// `balancer` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_capacity(
    balancer: *const weir_balancer,
    out: *mut usize,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        unsafe { Out::new(out, "out") }?.write(b.capacity());
        Ok(())
    })
}

/// Writes the balancer's configuration to `*out`.
///
/// # Safety
/// `balancer` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_config(
    balancer: *const weir_balancer,
    out: *mut weir_config,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        unsafe { Out::new(out, "out") }?.write(config_to_c(b.config()));
        Ok(())
    })
}

/// Adds node `id`, fully trusted and in rotation at once. Errors: `WEIR_ERR_DUPLICATE_ID`,
/// `WEIR_ERR_CAPACITY_FULL`, `WEIR_ERR_NULL`.
///
/// # Safety
/// `balancer` is NULL or a live handle.
///
/// Thread safety: safe from any thread, concurrently with traffic.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_add(balancer: *const weir_balancer, id: u64) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        unsafe { self::balancer(balancer) }?
            .add(id)
            .map_err(membership)
    })
}

/// Removes node `id`: no new leases; its leases in flight, when released, get `WEIR_ERR_NODE_REMOVED`
/// and change nothing. Errors: `WEIR_ERR_UNKNOWN_ID`, `WEIR_ERR_NULL`.
///
/// # Safety
/// `balancer` is NULL or a live handle.
///
/// Thread safety: safe from any thread, concurrently with traffic.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_remove(
    balancer: *const weir_balancer,
    id: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        unsafe { self::balancer(balancer) }?
            .remove(id)
            .map_err(membership)
    })
}

/// Puts node `id` into lame duck (`lame_duck` true: no new leases, leases in flight finish normally)
/// or back into rotation (false). Errors: `WEIR_ERR_UNKNOWN_ID`, `WEIR_ERR_NULL`.
///
/// # Safety
/// `balancer` is NULL or a live handle.
///
/// Thread safety: safe from any thread, concurrently with traffic.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_set_lame_duck(
    balancer: *const weir_balancer,
    id: u64,
    lame_duck: bool,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        unsafe { self::balancer(balancer) }?
            .set_lame_duck(id, lame_duck)
            .map_err(membership)
    })
}

/// Chooses a node at `now_ns` (monotonic nanoseconds: `weir_now_ns()` or the caller's own clock, used
/// consistently) and writes the lease to `*out`, drawing from this thread's generator for the
/// balancer's seed (as the Rust `std` layer does: a single-threaded program decides the same on every
/// run). Fails fast: `WEIR_ERR_ALL_BUSY` when every active node is at its limit,
/// `WEIR_ERR_NO_ACTIVE_NODES` when none is in rotation; `WEIR_ERR_NULL`.
///
/// # Safety
/// `balancer` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_acquire(
    balancer: *const weir_balancer,
    now_ns: u64,
    out: *mut weir_lease,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        let out = unsafe { Out::new(out, "out") }?;
        // The lease is written inside the closure: only a one-byte result leaves it (moving the lease
        // out through the thread-local access costs a store-forwarding stall on x86).
        with_thread_rng(b.config().seed, |rng| match b.acquire(now_ns, rng) {
            Ok(lease) => {
                out.write(lease.into_raw().into());
                Ok(())
            }
            Err(e) => Err(e),
        })
        .map_err(rejected)
    })
}

/// As `weir_balancer_acquire`, drawing from the caller's generator `*rng` (advanced in place), for
/// deterministic replay: the same seed and calls give the same leases in Rust, C and Python.
///
/// # Safety
/// `balancer` is NULL or a live handle; `rng` is NULL or points to a `weir_rng` no other thread uses
/// during the call; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free (each thread with its own generator).
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_acquire_with_rng(
    balancer: *const weir_balancer,
    now_ns: u64,
    rng: *mut weir_rng,
    out: *mut weir_lease,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        // SAFETY: the caller's contract above.
        let rng = unsafe { arg_mut(rng, "rng") }?;
        let out = unsafe { Out::new(out, "out") }?;
        // The generator advances whether or not a lease was granted, as the Rust caller's would.
        with_caller_rng(rng, |draw| match b.acquire(now_ns, draw) {
            Ok(lease) => {
                out.write(lease.into_raw().into());
                Ok(())
            }
            Err(e) => Err(rejected(e)),
        })
    })
}

/// A retry's acquire: as `weir_balancer_acquire_with_rng`, over the members whose ids are not among
/// the `exclude_len` ids at `exclude` (the nodes the request tried), so that a retry goes to another
/// node while one has room; if none of them has room (or all are excluded), the ordinary acquire over
/// all the members decides. `exclude` may be NULL when `exclude_len` is 0; ids that are not members
/// are ignored. `rng` NULL draws from this thread's generator for the balancer's seed, as
/// `weir_balancer_acquire` does; otherwise from `*rng`, advanced in place (the same seed and calls give
/// the same leases in Rust, C and Python). Whether a request may be sent twice is the caller's
/// decision; bound the retries with a `weir_retry_budget`. Errors as `weir_balancer_acquire`'s, and
/// `WEIR_ERR_INVALID_ARGUMENT` for a length no array can have.
///
/// # Safety
/// `balancer` is NULL or a live handle; `exclude` is NULL or points to `exclude_len` readable ids that
/// nothing changes during the call; `rng` is NULL or points to a `weir_rng` no other thread uses during
/// the call; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_acquire_excluding(
    balancer: *const weir_balancer,
    now_ns: u64,
    exclude: *const u64,
    exclude_len: usize,
    rng: *mut weir_rng,
    out: *mut weir_lease,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        let exclude = unsafe { crate::subset::ids(exclude, exclude_len, "exclude") }?;
        let out = unsafe { Out::new(out, "out") }?;
        let lease = if rng.is_null() {
            with_thread_rng(b.config().seed, |draw| {
                b.acquire_excluding(now_ns, draw, exclude)
            })
        } else {
            // SAFETY: non-NULL; the caller's contract above.
            let rng = unsafe { arg_mut(rng, "rng") }?;
            with_caller_rng(rng, |draw| b.acquire_excluding(now_ns, draw, exclude))
        };
        out.write(lease.map_err(rejected)?.into_raw().into());
        Ok(())
    })
}

/// Waits for room: a lease as `weir_balancer_acquire` gives when a node has room now; otherwise the
/// caller blocks, in a bounded queue (`weir_config.max_waiters`; first come first served, newest first
/// once the oldest waiter has waited more than 100 ms), until a release makes room or
/// `deadline_ns` (on the `weir_now_ns()` clock) passes. The lease is acquired at `weir_now_ns()`:
/// release it with times from the same clock. Errors: `WEIR_ERR_TIMEOUT`, `WEIR_ERR_SHED` (the queue
/// stood and served newer callers first, once this one had waited more than 100 ms: answered before the
/// deadline), `WEIR_ERR_QUEUE_FULL` (too many waiting, or waiting off), `WEIR_ERR_NO_ACTIVE_NODES` (a
/// waiting acquire waits for room, not for membership), `WEIR_ERR_NULL`.
///
/// # Safety
/// `balancer` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread; blocks only the caller.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_acquire_wait(
    balancer: *const weir_balancer,
    deadline_ns: u64,
    out: *mut weir_lease,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        let out = unsafe { Out::new(out, "out") }?;
        let now = monotonic_now();
        let start = Instant::now();
        // A deadline past the representable instants waits as long as a deadline can.
        let deadline = start
            .checked_add(Duration::from_nanos(deadline_ns.saturating_sub(now)))
            .unwrap_or_else(|| start + Duration::from_secs(86_400 * 365));
        let lease = b.acquire_wait(deadline).map_err(|e| {
            let status = match e {
                WaitError::QueueFull { .. } => WEIR_ERR_QUEUE_FULL,
                WaitError::Timeout => WEIR_ERR_TIMEOUT,
                WaitError::Shed => WEIR_ERR_SHED,
                WaitError::NoActiveNodes => WEIR_ERR_NO_ACTIVE_NODES,
                // The core's error is non-exhaustive: a refusal it adds later is a want of room.
                _ => WEIR_ERR_ALL_BUSY,
            };
            Error::new(status, e.to_string())
        })?;
        out.write(lease.into_lease().into_raw().into());
        Ok(())
    })
}

/// Releases a lease with its outcome at `now_ns` (the clock its `acquired_at` came from) and clears
/// `*lease`'s balancer tag, so the same `weir_lease` released again is always refused. Errors:
/// `WEIR_ERR_INVALID_LEASE` (released already, forged, or from another balancer: nothing changes),
/// `WEIR_ERR_NODE_REMOVED` (its node was removed: the lease is closed and its tag cleared, nothing
/// recorded), `WEIR_ERR_INVALID_ARGUMENT` (an outcome outside `WEIR_OUTCOME_*`: the lease stays in flight
/// and untouched; release it again with a valid outcome), `WEIR_ERR_NULL`.
///
/// Release each lease once, and not through a copy: the balancer keeps counts, not a list of leases, so
/// a copy of a released lease is refused only while its node has no other lease in flight; while it has
/// others, the copy is taken as one of them.
///
/// # Safety
/// `balancer` is NULL or a live handle; `lease` is NULL or points to a `weir_lease` that no other thread
/// uses during the call.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_release(
    balancer: *const weir_balancer,
    lease: *mut weir_lease,
    outcome: weir_outcome,
    now_ns: u64,
) -> weir_status {
    // SAFETY: the caller's contract above is `release`'s.
    unsafe { release(balancer, lease, outcome, now_ns, None) }
}

/// As `weir_balancer_release`, with the load the node's server reported in its answer: its
/// `utilization`, the calls it has in progress over the most it serves well (its knee), so 1.0 is at
/// its knee and above 1.0 past it (as gRPC's ORCA reports carry it, or a response header of the
/// server's own), kept to the nearest thousandth. Only the knee limit (`WEIR_LIMIT_KNEE`) reads it, in
/// place of the call's latency and, as the latency, only within `weir_knee_limit.armed_for_ns` of the
/// node's last drop: a utilization above 1.0 eases the node's limit, one above `hold / knee` holds it.
/// Every other limit, and the health models, ignore it. Errors as `weir_balancer_release`'s, and
/// `WEIR_ERR_INVALID_ARGUMENT` for a `utilization` that is NaN, infinite, negative or above 1000 (the
/// message says which): the lease stays in flight and untouched, as with an invalid outcome.
///
/// # Safety
/// As `weir_balancer_release`'s.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_release_loaded(
    balancer: *const weir_balancer,
    lease: *mut weir_lease,
    outcome: weir_outcome,
    now_ns: u64,
    utilization: f64,
) -> weir_status {
    // SAFETY: the caller's contract above is `release`'s.
    unsafe { release(balancer, lease, outcome, now_ns, Some(utilization)) }
}

/// The body of both releases: `utilization` is the server's report (`weir_balancer_release_loaded`),
/// or none (`weir_balancer_release`). Every argument is checked before the lease is released, so a
/// refused one leaves it in flight and untouched.
///
/// # Safety
/// `weir_balancer_release`'s contract.
#[inline]
unsafe fn release(
    balancer: *const weir_balancer,
    lease: *mut weir_lease,
    outcome: weir_outcome,
    now_ns: u64,
    utilization: Option<f64>,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        // SAFETY: the caller's contract above.
        let lease = unsafe { arg_mut(lease, "lease") }?;
        let outcome = outcome_from_c(outcome)?;
        let load = utilization.map(load_from_c).transpose()?;
        let result = b.release_loaded(Lease::from_raw((*lease).into()), outcome, now_ns, load);
        if !matches!(result, Err(ReleaseError::InvalidLease)) {
            // Closed (released, or its node gone): tag 0 belongs to no balancer, so this copy of the
            // lease can never be released again, whatever else is in flight on its node.
            lease.balancer = 0;
        }
        result.map_err(release_error)
    })
}

/// The health-check refusals as statuses: the weighted family's names the family the check needs.
fn check_error(e: CheckError) -> Error {
    match e {
        CheckError::UnknownId(_) => Error::new(WEIR_ERR_UNKNOWN_ID, e.to_string()),
        _ => Error::new(
            WEIR_ERR_NOT_LOWEST_SCORE,
            format!(
                "{e}: this balancer's algorithm.family is WEIR_ALGORITHM_WEIGHTED, not \
                 WEIR_ALGORITHM_LOWEST_SCORE"
            ),
        ),
    }
}

/// Names a node to send a health check to at `now_ns`, if one is due: writes `*due` (true or false)
/// and, when true, the node's id to `*node_id` (left alone otherwise). No node due is not an error: the
/// status is `WEIR_OK`. Send the check (a connect, a health endpoint: your own), then report its answer
/// with `weir_balancer_report_check`.
///
/// Health checks readmit a node that passive health (the outcomes of real calls) took out, without
/// spending a caller's call on a node that may still be broken. A node is due when the lowest-score
/// family avoids it (it carries a penalty), it is in rotation with no call in flight, and its failures
/// were last recorded `quiet_ns` or more before `now_ns`; of several, the one quiet longest. Naming it
/// dates its failures `now_ns` again, so no call names it again (nor takes it as a timed probe,
/// `weir_lowest_score.probe_after_ns`) within another `quiet_ns`. `quiet_ns` is counted in the
/// counters' ticks (2^20 ns, about 1.05 ms), rounded down; any value is valid: 0 makes every avoided
/// node due at once (each call names one), `UINT64_MAX` never. Under `WEIR_ALGORITHM_WEIGHTED` no node
/// is ever due. A node that fails again within the failure half-life of a healthy check's readmission
/// (a relapse) needs `quiet_ns` doubled once per relapse, up to 2^6 times, before it is due again.
///
/// Call it on a timer (a tenth of `quiet_ns` is plenty), not per call: it reads every member. It moves
/// the balancer's clock as an acquire does, so a checker on its own timer finds nodes due while no
/// call is made. Errors: `WEIR_ERR_NULL` (nothing changed).
///
/// # Safety
/// `balancer` is NULL or a live handle; `due` and `node_id` are NULL or writable.
///
/// Thread safety: safe from any thread, concurrently with traffic, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_due_check(
    balancer: *const weir_balancer,
    now_ns: u64,
    quiet_ns: u64,
    due: *mut bool,
    node_id: *mut u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        let due = unsafe { Out::new(due, "due") }?;
        let node_id = unsafe { Out::new(node_id, "node_id") }?;
        let named = b.due_check(now_ns, quiet_ns);
        due.write(named.is_some());
        if let Some(id) = named {
            node_id.write(id);
        }
        Ok(())
    })
}

/// Records the answer of a health check of node `id` at `now_ns` (see `weir_balancer_due_check`):
/// `healthy` true forgives every failure the node has, so its penalty is 0 and the next acquires call
/// it as any idle node; false records one failure, as a call released with `WEIR_OUTCOME_FAILURE`
/// does, and dates the node's failures `now_ns`, so it is due again `quiet_ns` later. A check is not a
/// call: it counts in no statistic and no concurrency limit. Any member may be reported, whether or not
/// `weir_balancer_due_check` named it, and in lame duck too. Errors: `WEIR_ERR_UNKNOWN_ID`,
/// `WEIR_ERR_NOT_LOWEST_SCORE` (the balancer's family is `WEIR_ALGORITHM_WEIGHTED`, which takes no
/// checks), `WEIR_ERR_NULL`; each leaves the state as it was.
///
/// # Safety
/// `balancer` is NULL or a live handle.
///
/// Thread safety: safe from any thread, concurrently with traffic, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_report_check(
    balancer: *const weir_balancer,
    id: u64,
    healthy: bool,
    now_ns: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        unsafe { self::balancer(balancer) }?
            .report_check(id, healthy, now_ns)
            .map_err(check_error)
    })
}

/// Writes node `id`'s snapshot at `now_ns` to `*out`. Errors: `WEIR_ERR_UNKNOWN_ID`, `WEIR_ERR_NULL`.
///
/// # Safety
/// `balancer` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, concurrently with traffic (a snapshot is per-field consistent).
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_node_snapshot(
    balancer: *const weir_balancer,
    id: u64,
    now_ns: u64,
    out: *mut weir_node_info,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        let out = unsafe { Out::new(out, "out") }?;
        let snapshot = b
            .node(id, now_ns)
            .ok_or_else(|| Error::new(WEIR_ERR_UNKNOWN_ID, format!("no node with id {id}")))?;
        out.write(snapshot.into());
        Ok(())
    })
}

/// Writes a snapshot of every member at `now_ns` into `buf` (room for `cap`), in slot order, and their
/// number to `*len`. With `buf` NULL and `cap` 0, writes only the number of members. A buffer of
/// `weir_balancer_capacity` entries is always enough; a smaller one that cannot hold every member gets
/// `WEIR_ERR_BUFFER_TOO_SMALL`, nothing written, and the message says how many there are.
///
/// # Safety
/// `balancer` is NULL or a live handle; `buf` is NULL (only with `cap` 0) or points to `cap` writable
/// `weir_node_info`s; `len` is NULL or writable.
///
/// Thread safety: safe from any thread, concurrently with traffic.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_nodes(
    balancer: *const weir_balancer,
    now_ns: u64,
    buf: *mut weir_node_info,
    cap: usize,
    len: *mut usize,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        let len = unsafe { Out::new(len, "len") }?;
        let nodes: Vec<weir_node_info> = b.nodes(now_ns).map(Into::into).collect();
        // SAFETY: `buf`'s room is the caller's contract above, and the fresh vector cannot overlap it.
        unsafe {
            write_list(&nodes, buf, cap, len, "buf", || {
                format!("buf: room for {cap} snapshots, {} members", nodes.len())
            })
        }
    })
}

/// Writes the balancer's counters to `*out`.
///
/// # Safety
/// `balancer` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, concurrently with traffic.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_stats(
    balancer: *const weir_balancer,
    out: *mut weir_balancer_statistics,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        unsafe { Out::new(out, "out") }?.write(b.stats().into());
        Ok(())
    })
}

/// Writes the balancer's and its members' metrics at `now_ns` as Prometheus text (docs/metrics.md has
/// the table), NUL-terminated, into `buf` (room for `cap` bytes), and the text's length without the NUL
/// into `*len`, as `strlen` would give it. `format` NULL means the defaults (prefix `weir`, no constant
/// labels, node ids in decimal). With `buf` NULL and `cap` 0, writes only the length. A buffer that
/// cannot hold the text and its NUL gets `WEIR_ERR_BUFFER_TOO_SMALL` with nothing written to `buf` but
/// the length written to `*len` all the same: retry with `cap` at least `*len + 1` (the text can grow
/// meanwhile under traffic, so leave room). A refused prefix or label name is
/// `WEIR_ERR_INVALID_ARGUMENT`, a string that is not UTF-8 too.
///
/// Reads what `weir_balancer_stats` and `weir_balancer_nodes` read: no lock, nothing the hot path
/// waits for.
///
/// # Safety
/// `balancer` is NULL or a live handle; `format` is NULL or a valid `weir_metrics_format` (its
/// documentation says what each pointer must be); `buf` is NULL or points to `cap` writable bytes;
/// `len` is NULL or writable.
///
/// Thread safety: safe from any thread, concurrently with traffic.
#[no_mangle]
pub unsafe extern "C" fn weir_balancer_write_metrics(
    balancer: *const weir_balancer,
    format: *const weir_metrics_format,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
    now_ns: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::balancer(balancer) }?;
        unsafe {
            write_text(format, buf, cap, len, |out, f| {
                b.write_metrics(out, &f.core(), &|id, o| f.name(id, o), now_ns)
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::weir_now_ns;
    use crate::config::weir_config_default;
    use crate::outcome::*;
    use crate::rng::weir_rng_seed;
    use core::ptr::{null, null_mut};

    fn balancer_with(nodes: &[u64]) -> *mut weir_balancer {
        let config = weir_config_default();
        let mut b = null_mut();
        assert_eq!(
            unsafe { weir_balancer_new(&config, 8, &mut b) },
            crate::WEIR_OK
        );
        for &id in nodes {
            assert_eq!(unsafe { weir_balancer_add(b, id) }, crate::WEIR_OK);
        }
        b
    }

    fn stats(b: *const weir_balancer) -> weir_balancer_statistics {
        let mut s = weir_balancer_statistics::default();
        assert_eq!(unsafe { weir_balancer_stats(b, &mut s) }, crate::WEIR_OK);
        s
    }

    #[test]
    fn the_same_lease_released_twice_is_refused_even_with_others_in_flight() {
        let b = balancer_with(&[1]);
        let mut rng = weir_rng_seed(7);
        let (mut first, mut second) = (weir_lease::default(), weir_lease::default());
        unsafe {
            assert_eq!(
                weir_balancer_acquire_with_rng(b, 10, &mut rng, &mut first),
                crate::WEIR_OK
            );
            assert_eq!(
                weir_balancer_acquire_with_rng(b, 10, &mut rng, &mut second),
                crate::WEIR_OK
            );
            assert_eq!(
                weir_balancer_release(b, &mut first, WEIR_OUTCOME_SUCCESS, 20),
                crate::WEIR_OK
            );
            assert_eq!(first.balancer, 0);
            let before = stats(b);
            assert_eq!(
                weir_balancer_release(b, &mut first, WEIR_OUTCOME_SUCCESS, 30),
                WEIR_ERR_INVALID_LEASE
            );
            assert_eq!(stats(b), before);
            assert_eq!(
                weir_balancer_release(b, &mut second, WEIR_OUTCOME_FAILURE, 40),
                crate::WEIR_OK
            );
            let after = stats(b);
            assert_eq!(
                (after.in_flight, after.released[0], after.released[1]),
                (0, 1, 1)
            );
            weir_balancer_free(b);
        }
    }

    #[test]
    fn an_invalid_outcome_or_utilization_leaves_the_lease_in_flight_and_untouched() {
        let b = balancer_with(&[1]);
        let mut lease = weir_lease::default();
        unsafe {
            assert_eq!(weir_balancer_acquire(b, 10, &mut lease), crate::WEIR_OK);
            let copy = lease;
            assert_eq!(
                weir_balancer_release(b, &mut lease, 6, 20),
                crate::WEIR_ERR_INVALID_ARGUMENT
            );
            assert_eq!((lease, stats(b).in_flight), (copy, 1));
            for u in [f64::NAN, f64::INFINITY, -0.5, 1_000.5] {
                assert_eq!(
                    weir_balancer_release_loaded(b, &mut lease, WEIR_OUTCOME_SUCCESS, 20, u),
                    crate::WEIR_ERR_INVALID_ARGUMENT,
                    "{u}"
                );
                assert_eq!((lease, stats(b).in_flight), (copy, 1), "{u}");
            }
            assert_eq!(
                weir_balancer_release_loaded(b, &mut lease, WEIR_OUTCOME_IGNORED, 20, 1_000.0),
                crate::WEIR_OK
            );
            let s = stats(b);
            assert_eq!((lease.balancer, s.in_flight, s.released[3]), (0, 0, 1));
            weir_balancer_free(b);
        }
    }

    #[test]
    fn a_lease_of_a_removed_node_is_closed_and_counted_stale() {
        let b = balancer_with(&[1]);
        let mut lease = weir_lease::default();
        unsafe {
            assert_eq!(weir_balancer_acquire(b, 10, &mut lease), crate::WEIR_OK);
            assert_eq!(weir_balancer_remove(b, 1), crate::WEIR_OK);
            assert_eq!(
                weir_balancer_release(b, &mut lease, WEIR_OUTCOME_SUCCESS, 20),
                WEIR_ERR_NODE_REMOVED
            );
            assert_eq!(lease.balancer, 0);
            assert_eq!(
                weir_balancer_release(b, &mut lease, WEIR_OUTCOME_SUCCESS, 20),
                WEIR_ERR_INVALID_LEASE
            );
            let s = stats(b);
            assert_eq!((s.in_flight, s.released_stale), (0, 1));
            weir_balancer_free(b);
        }
    }

    #[test]
    fn null_arguments_are_refused_and_outputs_untouched_on_errors() {
        let b = balancer_with(&[]);
        let mut lease = weir_lease {
            node_id: 99,
            ..weir_lease::default()
        };
        unsafe {
            assert_eq!(
                weir_balancer_acquire(null(), 1, &mut lease),
                crate::WEIR_ERR_NULL
            );
            assert_eq!(
                weir_balancer_acquire(b, 1, null_mut()),
                crate::WEIR_ERR_NULL
            );
            assert_eq!(
                weir_balancer_acquire(b, 1, &mut lease),
                WEIR_ERR_NO_ACTIVE_NODES
            );
            assert_eq!(lease.node_id, 99);
            let mut len = 5;
            assert_eq!(
                weir_balancer_nodes(b, 1, null_mut(), 0, &mut len),
                crate::WEIR_OK
            );
            assert_eq!(len, 0);
            assert_eq!(
                weir_balancer_nodes(b, 1, null_mut(), 3, &mut len),
                crate::WEIR_ERR_NULL
            );
            weir_balancer_free(b);
            weir_balancer_free(null_mut());
        }
    }

    #[test]
    fn health_checks_refuse_null_an_unknown_id_and_the_weighted_family_and_change_nothing() {
        use crate::boundary::testing::fails;
        let b = balancer_with(&[1]);
        let (mut due, mut id) = (true, 77_u64);
        unsafe {
            fails(
                weir_balancer_due_check(null(), 1, 0, &mut due, &mut id),
                crate::WEIR_ERR_NULL,
                "`balancer`",
            );
            fails(
                weir_balancer_due_check(b, 1, 0, null_mut(), &mut id),
                crate::WEIR_ERR_NULL,
                "`due`",
            );
            fails(
                weir_balancer_due_check(b, 1, 0, &mut due, null_mut()),
                crate::WEIR_ERR_NULL,
                "`node_id`",
            );
            assert_eq!((due, id), (true, 77));
            // Nothing is avoided: nothing is due, and the id is left alone.
            assert_eq!(
                weir_balancer_due_check(b, 1, 0, &mut due, &mut id),
                crate::WEIR_OK
            );
            assert_eq!((due, id), (false, 77));
            fails(
                weir_balancer_report_check(null(), 1, true, 1),
                crate::WEIR_ERR_NULL,
                "`balancer`",
            );
            fails(
                weir_balancer_report_check(b, 9, false, 1),
                WEIR_ERR_UNKNOWN_ID,
                "no node with id 9",
            );
            assert_eq!(
                weir_balancer_due_check(b, 2, 0, &mut due, &mut id),
                crate::WEIR_OK
            );
            assert!(!due, "a refused report recorded a failure");
            // A failed check is a failure, not a call: node 1 is avoided and due at once with a quiet of
            // 0, and no counter moved.
            let before = stats(b);
            assert_eq!(weir_balancer_report_check(b, 1, false, 3), crate::WEIR_OK);
            assert_eq!(stats(b), before);
            assert_eq!(
                weir_balancer_due_check(b, 4, 0, &mut due, &mut id),
                crate::WEIR_OK
            );
            assert_eq!((due, id), (true, 1));
            weir_balancer_free(b);
        }
        let config = crate::weir_config_cascade();
        let mut w = null_mut();
        unsafe {
            assert_eq!(weir_balancer_new(&config, 2, &mut w), crate::WEIR_OK);
            assert_eq!(weir_balancer_add(w, 1), crate::WEIR_OK);
            fails(
                weir_balancer_report_check(w, 1, false, 1),
                WEIR_ERR_NOT_LOWEST_SCORE,
                "WEIR_ALGORITHM_WEIGHTED",
            );
            fails(
                weir_balancer_report_check(w, 2, true, 1),
                WEIR_ERR_UNKNOWN_ID,
                "no node with id 2",
            );
            assert_eq!(
                weir_balancer_due_check(w, 2, 0, &mut due, &mut id),
                crate::WEIR_OK
            );
            assert!(!due, "the weighted family named a node");
            weir_balancer_free(w);
        }
    }

    #[test]
    fn waiting_times_out_and_reports_a_full_queue() {
        let mut config = weir_config_default();
        config.limit = crate::weir_limit_fixed_default();
        config.limit.fixed.limit = 1;
        config.max_waiters = 0;
        let mut b = null_mut();
        let (mut held, mut lease) = (weir_lease::default(), weir_lease::default());
        unsafe {
            assert_eq!(weir_balancer_new(&config, 2, &mut b), crate::WEIR_OK);
            assert_eq!(weir_balancer_add(b, 1), crate::WEIR_OK);
            assert_eq!(
                weir_balancer_acquire_wait(b, weir_now_ns() + 1_000_000, &mut held),
                crate::WEIR_OK
            );
            // A deadline far ahead (a full queue refuses at once), so that a slow run (miri) cannot
            // pass it first and time out instead.
            assert_eq!(
                weir_balancer_acquire_wait(b, weir_now_ns() + 60_000_000_000, &mut lease),
                WEIR_ERR_QUEUE_FULL
            );
            weir_balancer_free(b);
            config.max_waiters = 4;
            assert_eq!(weir_balancer_new(&config, 2, &mut b), crate::WEIR_OK);
            assert_eq!(weir_balancer_add(b, 1), crate::WEIR_OK);
            assert_eq!(
                weir_balancer_acquire_wait(b, weir_now_ns() + 1_000_000, &mut held),
                crate::WEIR_OK
            );
            assert_eq!(
                weir_balancer_acquire_wait(b, weir_now_ns() + 2_000_000, &mut lease),
                WEIR_ERR_TIMEOUT
            );
            assert_eq!(
                weir_balancer_release(b, &mut held, WEIR_OUTCOME_SUCCESS, weir_now_ns()),
                crate::WEIR_OK
            );
            assert_eq!(weir_balancer_acquire_wait(b, 0, &mut lease), crate::WEIR_OK);
            assert_eq!(lease.node_id, 1);
            // One wait, timed out; the answers without a lease are the refusals; nobody waits now.
            let s = stats(b);
            assert_eq!(
                (
                    s.rejected_all_busy,
                    s.rejected_no_active,
                    s.waits,
                    s.waits_timed_out
                ),
                (1, 0, 1, 1)
            );
            assert_eq!((s.waits_granted, s.waits_cancelled, s.waiting), (0, 0, 0));
            weir_balancer_free(b);
        }
    }

    #[test]
    fn a_wait_that_gets_its_lease_is_a_wait_granted_not_a_refusal() {
        let mut config = weir_config_default();
        config.limit = crate::weir_limit_fixed_default();
        config.limit.fixed.limit = 1;
        let mut b = null_mut();
        let mut held = weir_lease::default();
        unsafe {
            assert_eq!(weir_balancer_new(&config, 1, &mut b), crate::WEIR_OK);
            assert_eq!(weir_balancer_add(b, 1), crate::WEIR_OK);
            assert_eq!(weir_balancer_acquire(b, 1, &mut held), crate::WEIR_OK);
        }
        // The handle is shared with the waiting thread as an address (the API is thread-safe).
        let addr = b as usize;
        let waiter = std::thread::spawn(move || {
            let b = addr as *mut weir_balancer;
            let mut lease = weir_lease::default();
            let deadline = weir_now_ns() + 60_000_000_000;
            let status = unsafe { weir_balancer_acquire_wait(b, deadline, &mut lease) };
            (status, lease)
        });
        let start = std::time::Instant::now();
        while stats(b).waiting != 1 {
            assert!(start.elapsed().as_secs() < 30, "the waiter never queued");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        unsafe {
            assert_eq!(
                weir_balancer_release(b, &mut held, WEIR_OUTCOME_SUCCESS, 2),
                crate::WEIR_OK
            );
            let (status, mut lease) = waiter.join().unwrap();
            assert_eq!((status, lease.node_id), (crate::WEIR_OK, 1));
            assert_eq!(
                weir_balancer_release(b, &mut lease, WEIR_OUTCOME_SUCCESS, weir_now_ns()),
                crate::WEIR_OK
            );
            let s = stats(b);
            assert_eq!((s.acquired, s.in_flight), (2, 0));
            assert_eq!((s.rejected_all_busy, s.rejected_no_active), (0, 0));
            assert_eq!(
                (
                    s.waits,
                    s.waits_granted,
                    s.waits_timed_out,
                    s.waits_cancelled,
                    s.waiting
                ),
                (1, 1, 0, 0, 0)
            );
            weir_balancer_free(b);
        }
    }
}
