//! Overload protection: the server's shedder (with its promises), the CPU sampler that feeds it, and the
//! client's adaptive throttle (per criticality, with a retry budget).
//!
//! The shedder and the throttle are the core's lock-free objects behind a handle. The CPU sampler is
//! not: sampling reads files and keeps a running average (`&mut self` in Rust), so its handle puts the
//! sampler behind a lock and keeps the latest reading in an atomic word that `weir_cpu_sampler_usage`
//! reads without the lock.

use crate::balancer::weir_rng;
use crate::boundary::{
    arg, arg_mut, free_handle, guard, guard_value, into_handle, weir_status, Error, Out,
    WEIR_ERR_INVALID_ARGUMENT, WEIR_ERR_INVALID_CONFIG, WEIR_ERR_INVALID_PROMISE, WEIR_ERR_IO,
    WEIR_ERR_OVERLOADED, WEIR_ERR_UNSUPPORTED,
};
use std::ffi::{c_char, CStr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};
use weir_core::overload::{
    CpuError, CpuSampler, CpuSource, Criticality, NotInFlight, Overloaded, Promise, RawPromise,
    RetryDenied, ShedderConfig, ShedderConfigError, ShedderStats, ThrottleConfig,
    ThrottleConfigError, ThrottleStats, MAX_WINDOW_BUCKETS,
};
use weir_core::rt::with_thread_rng;
use weir_core::{Rng, Shedder, Throttle};

/// The most buckets a shedder's or throttle's rolling window may have.
pub const WEIR_MAX_WINDOW_BUCKETS: u32 = 128;
const _: () = assert!(WEIR_MAX_WINDOW_BUCKETS as usize == MAX_WINDOW_BUCKETS);

/// Runs `f` with the caller's generator and stores its advanced state back, whatever `f` decided (as a
/// Rust caller's generator would advance).
pub(crate) fn with_caller_rng<T>(rng: &mut weir_rng, f: impl FnOnce(&mut Rng) -> T) -> T {
    let mut draw = Rng::with_seed(rng.state);
    let result = f(&mut draw);
    rng.state = draw.get_seed();
    result
}

// ---------------------------------------------------------------------------------------------------
// Shedder
// ---------------------------------------------------------------------------------------------------

/// An adaptive load shedder (go-zero's): an opaque handle from `weir_shedder_new`, freed with
/// `weir_shedder_free`. Ask `weir_shedder_allow` before starting a request; complete its promise once
/// with `weir_shedder_success` or `weir_shedder_failure`.
///
/// Thread safety: every function that takes a `weir_shedder*` may be called from any number of threads
/// at once on the same shedder (lock-free, as the Rust core), except `weir_shedder_free`, which must be
/// the last call on it.
pub struct weir_shedder {
    inner: Shedder,
    /// Stamped into every promise this shedder grants, so that a promise of another shedder is refused.
    tag: u32,
}

/// A shedder's configuration (go-zero's defaults from `weir_shedder_config_default()`: 5 s of 50
/// buckets, threshold 900, cool-off 1 s). Validated by `weir_shedder_new`.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct weir_shedder_config {
    /// The rolling window's length, ns; at least 1 ns per bucket.
    pub window_ns: u64,
    /// Buckets in the window, 1 ..= `WEIR_MAX_WINDOW_BUCKETS`.
    pub buckets: u32,
    /// CPU usage, in millicpu (0 ..= 999), at and above which the server counts as overloaded; 0 makes
    /// shedding depend on in-flight load alone.
    pub cpu_threshold: u32,
    /// How long after the last overload a shedder that has dropped keeps shedding, ns; 0 disables it.
    pub cool_off_ns: u64,
}

impl From<ShedderConfig> for weir_shedder_config {
    fn from(c: ShedderConfig) -> Self {
        weir_shedder_config {
            window_ns: c.window_ns,
            buckets: c.buckets,
            cpu_threshold: c.cpu_threshold,
            cool_off_ns: c.cool_off_ns,
        }
    }
}

/// An admitted request: a plain value the caller holds and completes once, with `weir_shedder_success`
/// or `weir_shedder_failure`. Read `started_at`; `shedder` identifies the shedder that granted it and
/// must not be changed. A promise of another shedder (or a zeroed one) is refused with
/// `WEIR_ERR_INVALID_PROMISE` and changes nothing. The shedder counts promises but does not keep each
/// one, so a promise completed twice is refused only when nothing is in flight: complete each once.
///
/// Thread safety: a plain value; a promise may be completed from any thread.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct weir_promise {
    /// The `now_ns` the request was admitted at.
    pub started_at: u64,
    /// The tag of the shedder that granted the promise (never 0).
    pub shedder: u32,
}

/// A shedder's counters and window at one time (`weir_shedder_get_stats`).
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct weir_shedder_stats {
    /// Requests admitted.
    pub allowed: u64,
    /// Requests dropped (`WEIR_ERR_OVERLOADED`).
    pub dropped: u64,
    /// Promises completed with `weir_shedder_success`.
    pub succeeded: u64,
    /// Promises completed with `weir_shedder_failure`.
    pub failed: u64,
    /// Requests in flight now.
    pub in_flight: u64,
    /// The moving average of requests in flight (moves on completions).
    pub avg_in_flight: f64,
    /// The most passes in one complete bucket of the window (at least 1).
    pub max_pass: u64,
    /// The smallest average response time of a complete bucket, ms (1000 with no data).
    pub min_rt_ms: u64,
    /// `max(max_pass * min_rt * buckets_per_second / 1000, 1)`, before the CPU factor.
    pub max_flight: f64,
}

impl From<ShedderStats> for weir_shedder_stats {
    fn from(s: ShedderStats) -> Self {
        weir_shedder_stats {
            allowed: s.allowed,
            dropped: s.dropped,
            succeeded: s.succeeded,
            failed: s.failed,
            in_flight: s.in_flight,
            avg_in_flight: s.avg_in_flight,
            max_pass: s.max_pass,
            min_rt_ms: s.min_rt_ms,
            max_flight: s.max_flight,
        }
    }
}

fn shedder_config_from_c(c: &weir_shedder_config) -> Result<ShedderConfig, Error> {
    let config = ShedderConfig {
        window_ns: c.window_ns,
        buckets: c.buckets,
        cpu_threshold: c.cpu_threshold,
        cool_off_ns: c.cool_off_ns,
    };
    config.validate().map_err(|e| {
        let (field, range) = match e {
            ShedderConfigError::Buckets => ("buckets", "1 ..= WEIR_MAX_WINDOW_BUCKETS (128)"),
            ShedderConfigError::Window => ("window_ns", "at least 1 ns per bucket"),
            ShedderConfigError::CpuThreshold => ("cpu_threshold", "0 ..= 999 millicpu"),
            _ => ("", ""),
        };
        invalid_config(field, range, e)
    })?;
    Ok(config)
}

/// A refused configuration, naming the field and its range ahead of the core's own text.
fn invalid_config(field: &str, range: &str, e: impl core::fmt::Display) -> Error {
    let message = if field.is_empty() {
        format!("invalid config: {e}")
    } else {
        format!("invalid config: {field} must be {range} ({e})")
    };
    Error::new(WEIR_ERR_INVALID_CONFIG, message)
}

/// A fresh nonzero shedder tag (wrapping after 2^32 - 1 shedders).
fn next_shedder_tag() -> u32 {
    static NEXT: AtomicU32 = AtomicU32::new(1);
    loop {
        // Relaxed: the counter publishes nothing; only the values' distinctness matters.
        let tag = NEXT.fetch_add(1, Relaxed);
        if tag != 0 {
            return tag;
        }
    }
}

/// go-zero's defaults: a window of 5 s in 50 buckets, CPU threshold 900 millicpu, cool-off 1 s.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_shedder_config_default() -> weir_shedder_config {
    ShedderConfig::default().into()
}

/// Checks a shedder configuration as `weir_shedder_new` would: `WEIR_OK`, `WEIR_ERR_NULL` or
/// `WEIR_ERR_INVALID_CONFIG` (the message names the field and its range).
///
/// # Safety
/// `config` is NULL or points to a readable `weir_shedder_config`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_shedder_config_validate(
    config: *const weir_shedder_config,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        shedder_config_from_c(unsafe { arg(config, "config") }?).map(|_| ())
    })
}

/// Builds a shedder from `config`, validated by the core, and stores its handle in `*out`. Errors:
/// `WEIR_ERR_NULL`, `WEIR_ERR_INVALID_CONFIG` (the message names the field).
///
/// # Safety
/// `config` is NULL or points to a readable `weir_shedder_config`; `out` is NULL or points to a
/// writable `weir_shedder*`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_shedder_new(
    config: *const weir_shedder_config,
    out: *mut *mut weir_shedder,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let config = shedder_config_from_c(unsafe { arg(config, "config") }?)?;
        let out = unsafe { Out::new(out, "out") }?;
        let inner = Shedder::new(config).map_err(Error::config)?;
        out.write(into_handle(weir_shedder {
            inner,
            tag: next_shedder_tag(),
        }));
        Ok(())
    })
}

/// Frees a shedder. NULL is a no-op. Its outstanding promises must not be completed afterwards.
///
/// # Safety
/// `shedder` is NULL or a handle from `weir_shedder_new` not yet freed, and no other call on it is in
/// progress or follows.
///
/// Thread safety: must be the last call on the shedder, from one thread.
#[no_mangle]
pub unsafe extern "C" fn weir_shedder_free(shedder: *mut weir_shedder) {
    // SAFETY: the caller's contract above is `free_handle`'s.
    unsafe { free_handle(shedder) }
}

/// The shedder behind a handle, or `WEIR_ERR_NULL`.
///
/// # Safety
/// `shedder` is NULL or a live handle from `weir_shedder_new`.
unsafe fn shedder<'a>(shedder: *const weir_shedder) -> Result<&'a weir_shedder, Error> {
    // SAFETY: forwarded from the export's contract.
    unsafe { arg(shedder, "shedder") }
}

/// Decides whether to admit a request at `now_ns` with the CPU at `cpu` millicpu (0 ..= 1000 of the
/// allowance, e.g. from `weir_cpu_sampler_usage`; larger values count as 1000). Admitted: `WEIR_OK` and
/// the promise in `*out`, counted in flight until completed. Dropped: `WEIR_ERR_OVERLOADED` (answer 503
/// or RESOURCE_EXHAUSTED; the message says what the shedder saw) and nothing written. `WEIR_ERR_NULL`.
///
/// # Safety
/// `shedder` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_shedder_allow(
    shedder: *const weir_shedder,
    cpu: u32,
    now_ns: u64,
    out: *mut weir_promise,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::shedder(shedder) }?;
        let out = unsafe { Out::new(out, "out") }?;
        let promise = s.inner.allow(cpu, now_ns).map_err(overloaded)?;
        out.write(weir_promise {
            started_at: promise.into_raw().start,
            shedder: s.tag,
        });
        Ok(())
    })
}

fn overloaded(e: Overloaded) -> Error {
    Error::new(WEIR_ERR_OVERLOADED, e.to_string())
}

fn not_in_flight(e: NotInFlight) -> Error {
    Error::new(WEIR_ERR_INVALID_PROMISE, e.to_string())
}

/// The core promise a C one stands for, after checking that this shedder granted it.
fn promise_from_c(s: &weir_shedder, p: weir_promise) -> Result<Promise, Error> {
    if p.shedder != s.tag {
        return Err(Error::new(
            WEIR_ERR_INVALID_PROMISE,
            format!(
                "promise: granted by shedder {}, not by this one ({}): forged, zeroed, or another \
                 shedder's; nothing changed",
                p.shedder, s.tag
            ),
        ));
    }
    Ok(Promise::from_raw(RawPromise {
        start: p.started_at,
    }))
}

/// Completes a promise whose request succeeded at `now_ns`: records its response time (`now_ns` minus
/// `started_at`, rounded up to a whole ms) and one pass, and clears `*promise`'s shedder tag, so the same
/// promise completed again is always refused. Errors: `WEIR_ERR_INVALID_PROMISE` (completed already,
/// another shedder's or forged, or nothing in flight: nothing changes), `WEIR_ERR_NULL`. Do not complete
/// copies of a promise: the shedder keeps counts, not a list, so a copy of a completed promise is refused
/// only while nothing else is in flight.
///
/// # Safety
/// `shedder` is NULL or a live handle; `promise` is NULL or points to a `weir_promise` that no other
/// thread uses during the call.
///
/// Thread safety: safe from any thread, lock-free; complete each promise once.
#[no_mangle]
pub unsafe extern "C" fn weir_shedder_success(
    shedder: *const weir_shedder,
    promise: *mut weir_promise,
    now_ns: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::shedder(shedder) }?;
        // SAFETY: the caller's contract above.
        let c_promise = unsafe { arg_mut(promise, "promise") }?;
        let promise = promise_from_c(s, *c_promise)?;
        s.inner.success(promise, now_ns).map_err(not_in_flight)?;
        // Completed: tag 0 belongs to no shedder, so this promise is never completed again, whatever
        // else is in flight.
        c_promise.shedder = 0;
        Ok(())
    })
}

/// Completes a promise whose request failed, timed out or was cancelled: it leaves the in-flight count
/// and nothing else is recorded; the tag is cleared as by `weir_shedder_success`. Errors as
/// `weir_shedder_success`.
///
/// # Safety
/// `shedder` is NULL or a live handle; `promise` is NULL or points to a `weir_promise` that no other
/// thread uses during the call.
///
/// Thread safety: safe from any thread, lock-free; complete each promise once.
#[no_mangle]
pub unsafe extern "C" fn weir_shedder_failure(
    shedder: *const weir_shedder,
    promise: *mut weir_promise,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::shedder(shedder) }?;
        // SAFETY: the caller's contract above.
        let c_promise = unsafe { arg_mut(promise, "promise") }?;
        let promise = promise_from_c(s, *c_promise)?;
        s.inner.failure(promise).map_err(not_in_flight)?;
        c_promise.shedder = 0; // as in `weir_shedder_success`
        Ok(())
    })
}

/// Writes the shedder's counters and window at `now_ns` to `*out`.
///
/// # Safety
/// `shedder` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, concurrently with traffic.
#[no_mangle]
pub unsafe extern "C" fn weir_shedder_get_stats(
    shedder: *const weir_shedder,
    now_ns: u64,
    out: *mut weir_shedder_stats,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::shedder(shedder) }?;
        unsafe { Out::new(out, "out") }?.write(s.inner.stats(now_ns).into());
        Ok(())
    })
}

/// Writes the CPU headroom factor the shedder scales its in-flight limit by at `cpu` millicpu,
/// `clamp((1000 - cpu) / (1000 - cpu_threshold), 0.1, 1)`, to `*out`.
///
/// # Safety
/// `shedder` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_shedder_overload_factor(
    shedder: *const weir_shedder,
    cpu: u32,
    out: *mut f64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::shedder(shedder) }?;
        unsafe { Out::new(out, "out") }?.write(s.inner.overload_factor(cpu));
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------------
// CPU sampler
// ---------------------------------------------------------------------------------------------------

/// Where a CPU sampler reads: one of the `WEIR_CPU_SOURCE_*` values.
#[allow(non_camel_case_types)]
pub type weir_cpu_source = u32;
/// cgroup v2 (`cpu.stat`, `cpu.max`, `cpuset.cpus.effective`).
pub const WEIR_CPU_SOURCE_CGROUP_V2: weir_cpu_source = 0;
/// cgroup v1 (`cpuacct.usage`, `cpu.cfs_quota_us`, `cpuset.cpus`).
pub const WEIR_CPU_SOURCE_CGROUP_V1: weir_cpu_source = 1;
/// The whole machine, from `/proc/stat`.
pub const WEIR_CPU_SOURCE_PROC_STAT: weir_cpu_source = 2;

/// The process's CPU usage in millicpu (0 ..= 1000 of what it may use), read from Linux cgroups or
/// `/proc/stat` and smoothed, to feed `weir_shedder_allow`: an opaque handle from `weir_cpu_sampler_new`
/// or `weir_cpu_sampler_with_root`, freed with `weir_cpu_sampler_free`.
///
/// Thread safety: every function may be called from any thread at once, except
/// `weir_cpu_sampler_free` (the last call). Not lock-free: `weir_cpu_sampler_sample` and
/// `weir_cpu_sampler_allowance` read files under a lock, so concurrent samples run one at a time
/// (sample from one thread, e.g. every 250 ms); `weir_cpu_sampler_usage` and `weir_cpu_sampler_source`
/// take no lock.
pub struct weir_cpu_sampler {
    /// Sampling mutates the running average (`&mut self` in Rust): one sample at a time.
    inner: Mutex<CpuSampler>,
    source: CpuSource,
    /// The latest `usage()`, for lock-free readers.
    usage: AtomicU32,
}

fn cpu_error(e: CpuError) -> Error {
    let status = match e {
        CpuError::Unsupported { .. } | CpuError::NoSource { .. } => WEIR_ERR_UNSUPPORTED,
        _ => WEIR_ERR_IO,
    };
    Error::new(status, e.to_string())
}

fn sampler_handle(result: Result<CpuSampler, CpuError>) -> Result<*mut weir_cpu_sampler, Error> {
    let sampler = result.map_err(cpu_error)?;
    let source = sampler.source();
    let usage = AtomicU32::new(sampler.usage());
    Ok(into_handle(weir_cpu_sampler {
        inner: Mutex::new(sampler),
        source,
        usage,
    }))
}

/// Builds a sampler for this process from the system's files (cgroup v2, then v1, then `/proc/stat`),
/// reading them once, and stores its handle in `*out`. Errors: `WEIR_ERR_UNSUPPORTED` (not Linux, or none
/// of the sources exists: shedding on CPU is then impossible, and weir says so instead of reading 0
/// forever), `WEIR_ERR_IO` (a source exists but cannot be read or parsed; the message names the file),
/// `WEIR_ERR_NULL`.
///
/// # Safety
/// `out` is NULL or points to a writable `weir_cpu_sampler*`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_new(out: *mut *mut weir_cpu_sampler) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let out = unsafe { Out::new(out, "out") }?;
        out.write(sampler_handle(CpuSampler::new())?);
        Ok(())
    })
}

/// As `weir_cpu_sampler_new`, reading the files under the directory `root` instead of `/` (a container's
/// host mount, or a fake tree in tests), on any system. Errors as `weir_cpu_sampler_new`, plus
/// `WEIR_ERR_INVALID_ARGUMENT` for a path that is not UTF-8 where the system needs it (not on Unix).
///
/// # Safety
/// `root` is NULL or a NUL-terminated string; `out` is NULL or points to a writable
/// `weir_cpu_sampler*`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_with_root(
    root: *const c_char,
    out: *mut *mut weir_cpu_sampler,
) -> weir_status {
    guard(|| {
        if root.is_null() {
            return Err(crate::boundary::null("root"));
        }
        // SAFETY: non-NULL and NUL-terminated (the caller's contract above).
        let root = path_from_c(unsafe { CStr::from_ptr(root) })?;
        let out = unsafe { Out::new(out, "out") }?;
        out.write(sampler_handle(CpuSampler::with_root(root))?);
        Ok(())
    })
}

#[cfg(unix)]
fn path_from_c(root: &CStr) -> Result<PathBuf, Error> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(root.to_bytes())))
}

#[cfg(not(unix))]
fn path_from_c(root: &CStr) -> Result<PathBuf, Error> {
    root.to_str()
        .map(PathBuf::from)
        .map_err(|e| Error::invalid("root", format_args!("not UTF-8: {e}")))
}

/// Frees a sampler. NULL is a no-op.
///
/// # Safety
/// `sampler` is NULL or a handle from `weir_cpu_sampler_new` or `weir_cpu_sampler_with_root` not yet
/// freed, and no other call on it is in progress or follows.
///
/// Thread safety: must be the last call on the sampler, from one thread.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_free(sampler: *mut weir_cpu_sampler) {
    // SAFETY: the caller's contract above is `free_handle`'s.
    unsafe { free_handle(sampler) }
}

/// The sampler behind a handle, or `WEIR_ERR_NULL`.
///
/// # Safety
/// `sampler` is NULL or a live handle.
unsafe fn sampler<'a>(sampler: *const weir_cpu_sampler) -> Result<&'a weir_cpu_sampler, Error> {
    // SAFETY: forwarded from the export's contract.
    unsafe { arg(sampler, "sampler") }
}

/// Writes where the sampler reads (`WEIR_CPU_SOURCE_*`) to `*out`.
///
/// # Safety
/// `sampler` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread; takes no lock.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_source(
    sampler: *const weir_cpu_sampler,
    out: *mut weir_cpu_source,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::sampler(sampler) }?;
        let source = match s.source {
            CpuSource::CgroupV2 => WEIR_CPU_SOURCE_CGROUP_V2,
            CpuSource::CgroupV1 => WEIR_CPU_SOURCE_CGROUP_V1,
            CpuSource::ProcStat => WEIR_CPU_SOURCE_PROC_STAT,
        };
        unsafe { Out::new(out, "out") }?.write(source);
        Ok(())
    })
}

/// Writes how many CPUs the process may use to `*out` (the cgroup's quota or cpuset, whichever is
/// smaller; the machine's CPUs under `WEIR_CPU_SOURCE_PROC_STAT`), read now. Errors: `WEIR_ERR_IO`,
/// `WEIR_ERR_NULL`.
///
/// # Safety
/// `sampler` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread; takes the sampler's lock while it reads.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_allowance(
    sampler: *const weir_cpu_sampler,
    out: *mut f64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::sampler(sampler) }?;
        let out = unsafe { Out::new(out, "out") }?;
        let allowance = s
            .inner
            .lock()
            // The core does not panic while holding the lock; if it ever did, its state is still a
            // valid (if stale) average.
            .unwrap_or_else(PoisonError::into_inner)
            .allowance()
            .map_err(cpu_error)?;
        out.write(allowance);
        Ok(())
    })
}

/// Reads the usage counters at `now_ns` (monotonic; the same clock every time), folds the usage since
/// the previous sample into the smoothed average (5 s time constant; the first sample only records a
/// starting point), and writes the average, in millicpu, to `*out`. Errors: `WEIR_ERR_IO` (the message
/// names the file), `WEIR_ERR_NULL`.
///
/// # Safety
/// `sampler` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread; samples are taken one at a time under the sampler's lock.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_sample(
    sampler: *const weir_cpu_sampler,
    now_ns: u64,
    out: *mut u32,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::sampler(sampler) }?;
        let out = unsafe { Out::new(out, "out") }?;
        let mut inner = s.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let usage = inner.sample(now_ns).map_err(cpu_error)?;
        // Relaxed: a standalone reading; stored under the lock, so readers see samples in order.
        s.usage.store(usage, Relaxed);
        out.write(usage);
        Ok(())
    })
}

/// Writes the smoothed usage of the latest successful `weir_cpu_sampler_sample`, in millicpu (0 before
/// any), to `*out`, without reading any file.
///
/// # Safety
/// `sampler` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_usage(
    sampler: *const weir_cpu_sampler,
    out: *mut u32,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::sampler(sampler) }?;
        // Relaxed: a standalone reading (see `weir_cpu_sampler_sample`).
        unsafe { Out::new(out, "out") }?.write(s.usage.load(Relaxed));
        Ok(())
    })
}

// ---------------------------------------------------------------------------------------------------
// Throttle
// ---------------------------------------------------------------------------------------------------

/// A request's criticality (the SRE book's four levels): one of the `WEIR_CRITICALITY_*` values
/// (validated as an integer: any other value is `WEIR_ERR_INVALID_ARGUMENT`). Lower criticalities are
/// throttled first.
#[allow(non_camel_case_types)]
pub type weir_criticality = u32;
/// The most critical: throttled only by its own failures.
pub const WEIR_CRITICALITY_CRITICAL_PLUS: weir_criticality = 0;
/// The default for production traffic.
pub const WEIR_CRITICALITY_CRITICAL: weir_criticality = 1;
/// Traffic that tolerates some unavailability.
pub const WEIR_CRITICALITY_SHEDDABLE_PLUS: weir_criticality = 2;
/// Traffic that tolerates frequent unavailability (batch jobs): throttled first.
pub const WEIR_CRITICALITY_SHEDDABLE: weir_criticality = 3;
/// How many criticalities there are (the length of the arrays in `weir_throttle_stats`).
pub const WEIR_CRITICALITY_COUNT: usize = 4;

/// What `weir_throttle_allow_retry` decided: one of the `WEIR_RETRY_*` values.
#[allow(non_camel_case_types)]
pub type weir_retry_verdict = u32;
/// Send the retry.
pub const WEIR_RETRY_ALLOWED: weir_retry_verdict = 0;
/// Do not retry: the client's retries in the window have reached `retry_ratio` of its requests.
pub const WEIR_RETRY_DENIED_BUDGET: weir_retry_verdict = 1;
/// Do not retry: within budget, but throttled like any request of its criticality.
pub const WEIR_RETRY_DENIED_THROTTLED: weir_retry_verdict = 2;

/// Client-side adaptive throttling (the SRE book's): an opaque handle from `weir_throttle_new`, freed
/// with `weir_throttle_free`. Ask `weir_throttle_allow` before sending; call `weir_throttle_accepted`
/// when the backend accepted a request.
///
/// Thread safety: every function that takes a `weir_throttle*` may be called from any number of
/// threads at once on the same throttle (lock-free, as the Rust core), except `weir_throttle_free`,
/// which must be the last call on it.
pub struct weir_throttle {
    inner: Throttle,
    seed: u64,
}

/// A throttle's configuration (the book's defaults from `weir_throttle_config_default()`: 2 minutes of
/// 120 buckets, K 2, no cap on rejection, a 10 % retry budget). Validated by `weir_throttle_new`.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_throttle_config {
    /// The rolling window's length, ns; at least 1 ns per bucket.
    pub window_ns: u64,
    /// Buckets in the window, 1 ..= `WEIR_MAX_WINDOW_BUCKETS`.
    pub buckets: u32,
    /// The book's K: the client sends up to K times what the backend accepts; finite, >= 1.
    pub k: f64,
    /// The highest rejection probability; in [0, 1] (1: no cap).
    pub max_rejection: f64,
    /// Retries allowed, as a fraction of requests in the window; in [0, 1].
    pub retry_ratio: f64,
    /// Seed of the library's per-thread generators (`weir_throttle_allow`, `weir_throttle_allow_retry`);
    /// not part of the Rust `ThrottleConfig`. Default 0.
    pub seed: u64,
}

/// A throttle's counters (since it was built) and window sums (at one time), from
/// `weir_throttle_get_stats`. Arrays are indexed by `WEIR_CRITICALITY_*`.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct weir_throttle_stats {
    /// Requests decided, by criticality (admitted or throttled, retries included).
    pub total_requests: [u64; WEIR_CRITICALITY_COUNT],
    /// Requests reported accepted, by criticality.
    pub total_accepts: [u64; WEIR_CRITICALITY_COUNT],
    /// Requests throttled locally, by criticality.
    pub total_throttled: [u64; WEIR_CRITICALITY_COUNT],
    /// Retries admitted.
    pub total_retries: u64,
    /// Retries denied by the retry budget.
    pub total_retries_denied: u64,
    /// Requests in the window, by criticality.
    pub window_requests: [u64; WEIR_CRITICALITY_COUNT],
    /// Accepts in the window, by criticality.
    pub window_accepts: [u64; WEIR_CRITICALITY_COUNT],
    /// Retries admitted in the window.
    pub window_retries: u64,
}

impl From<ThrottleStats> for weir_throttle_stats {
    fn from(s: ThrottleStats) -> Self {
        weir_throttle_stats {
            total_requests: s.total_requests,
            total_accepts: s.total_accepts,
            total_throttled: s.total_throttled,
            total_retries: s.total_retries,
            total_retries_denied: s.total_retries_denied,
            window_requests: s.window_requests,
            window_accepts: s.window_accepts,
            window_retries: s.window_retries,
        }
    }
}

fn throttle_config_from_c(c: &weir_throttle_config) -> Result<ThrottleConfig, Error> {
    let config = ThrottleConfig {
        window_ns: c.window_ns,
        buckets: c.buckets,
        k: c.k,
        max_rejection: c.max_rejection,
        retry_ratio: c.retry_ratio,
    };
    config.validate().map_err(|e| {
        let (field, range) = match e {
            ThrottleConfigError::Buckets => ("buckets", "1 ..= WEIR_MAX_WINDOW_BUCKETS (128)"),
            ThrottleConfigError::Window => ("window_ns", "at least 1 ns per bucket"),
            ThrottleConfigError::K => ("k", "finite and >= 1"),
            ThrottleConfigError::MaxRejection => ("max_rejection", "in [0, 1]"),
            ThrottleConfigError::RetryRatio => ("retry_ratio", "in [0, 1]"),
            _ => ("", ""),
        };
        invalid_config(field, range, e)
    })?;
    Ok(config)
}

/// The criticality a C integer names, or `WEIR_ERR_INVALID_ARGUMENT`.
fn criticality_from_c(c: weir_criticality) -> Result<Criticality, Error> {
    u8::try_from(c)
        .ok()
        .and_then(Criticality::from_code)
        .ok_or_else(|| {
            Error::new(
                WEIR_ERR_INVALID_ARGUMENT,
                format!(
                    "criticality: {c} is not a criticality (WEIR_CRITICALITY_CRITICAL_PLUS 0 .. \
                     WEIR_CRITICALITY_SHEDDABLE 3)"
                ),
            )
        })
}

/// The book's defaults: a window of 2 minutes in 120 buckets, K 2, max rejection 1, retry ratio 0.1;
/// seed 0.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_throttle_config_default() -> weir_throttle_config {
    let c = ThrottleConfig::default();
    weir_throttle_config {
        window_ns: c.window_ns,
        buckets: c.buckets,
        k: c.k,
        max_rejection: c.max_rejection,
        retry_ratio: c.retry_ratio,
        seed: 0,
    }
}

/// Checks a throttle configuration as `weir_throttle_new` would: `WEIR_OK`, `WEIR_ERR_NULL` or
/// `WEIR_ERR_INVALID_CONFIG` (the message names the field and its range).
///
/// # Safety
/// `config` is NULL or points to a readable `weir_throttle_config`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_config_validate(
    config: *const weir_throttle_config,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        throttle_config_from_c(unsafe { arg(config, "config") }?).map(|_| ())
    })
}

/// Builds a throttle from `config`, validated by the core, and stores its handle in `*out`. Errors:
/// `WEIR_ERR_NULL`, `WEIR_ERR_INVALID_CONFIG` (the message names the field).
///
/// # Safety
/// `config` is NULL or points to a readable `weir_throttle_config`; `out` is NULL or points to a
/// writable `weir_throttle*`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_new(
    config: *const weir_throttle_config,
    out: *mut *mut weir_throttle,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let c = unsafe { arg(config, "config") }?;
        let config = throttle_config_from_c(c)?;
        let out = unsafe { Out::new(out, "out") }?;
        let inner = Throttle::new(config).map_err(Error::config)?;
        out.write(into_handle(weir_throttle {
            inner,
            seed: c.seed,
        }));
        Ok(())
    })
}

/// Frees a throttle. NULL is a no-op.
///
/// # Safety
/// `throttle` is NULL or a handle from `weir_throttle_new` not yet freed, and no other call on it is in
/// progress or follows.
///
/// Thread safety: must be the last call on the throttle, from one thread.
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_free(throttle: *mut weir_throttle) {
    // SAFETY: the caller's contract above is `free_handle`'s.
    unsafe { free_handle(throttle) }
}

/// The throttle behind a handle, or `WEIR_ERR_NULL`.
///
/// # Safety
/// `throttle` is NULL or a live handle from `weir_throttle_new`.
unsafe fn throttle<'a>(throttle: *const weir_throttle) -> Result<&'a weir_throttle, Error> {
    // SAFETY: forwarded from the export's contract.
    unsafe { arg(throttle, "throttle") }
}

/// Decides whether to send a request of `criticality` at `now_ns`, drawing from this thread's generator
/// for the throttle's seed, and writes the decision to `*allowed`: true to send, false when the request
/// is throttled locally (fail it as the backend's overload would). Either way the request is counted.
/// A throttled request is not an error: the status is `WEIR_OK`. Errors: `WEIR_ERR_INVALID_ARGUMENT`
/// (an unknown criticality; nothing counted), `WEIR_ERR_NULL`.
///
/// # Safety
/// `throttle` is NULL or a live handle; `allowed` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_allow(
    throttle: *const weir_throttle,
    criticality: weir_criticality,
    now_ns: u64,
    allowed: *mut bool,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let t = unsafe { self::throttle(throttle) }?;
        let c = criticality_from_c(criticality)?;
        let allowed = unsafe { Out::new(allowed, "allowed") }?;
        let decision = with_thread_rng(t.seed, |rng| t.inner.allow(c, now_ns, rng));
        allowed.write(decision.is_ok());
        Ok(())
    })
}

/// As `weir_throttle_allow`, drawing from the caller's generator `*rng` (advanced in place; untouched
/// while nothing is being throttled), for deterministic replay.
///
/// # Safety
/// `throttle` is NULL or a live handle; `rng` is NULL or points to a `weir_rng` no other thread uses
/// during the call; `allowed` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free (each thread with its own generator).
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_allow_with_rng(
    throttle: *const weir_throttle,
    criticality: weir_criticality,
    now_ns: u64,
    rng: *mut weir_rng,
    allowed: *mut bool,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let t = unsafe { self::throttle(throttle) }?;
        let c = criticality_from_c(criticality)?;
        // SAFETY: the caller's contract above.
        let rng = unsafe { arg_mut(rng, "rng") }?;
        let allowed = unsafe { Out::new(allowed, "allowed") }?;
        let decision = with_caller_rng(rng, |rng| t.inner.allow(c, now_ns, rng));
        allowed.write(decision.is_ok());
        Ok(())
    })
}

fn verdict(decision: Result<(), RetryDenied>) -> weir_retry_verdict {
    match decision {
        Ok(()) => WEIR_RETRY_ALLOWED,
        Err(RetryDenied::Budget { .. }) => WEIR_RETRY_DENIED_BUDGET,
        Err(_) => WEIR_RETRY_DENIED_THROTTLED,
    }
}

/// Decides whether to send a retry of `criticality` at `now_ns` (this thread's generator): denied
/// while the client's retries in the window are at `retry_ratio` of its requests
/// (`WEIR_RETRY_DENIED_BUDGET`, not counted as a request), otherwise throttled like any request
/// (`WEIR_RETRY_DENIED_THROTTLED`) or admitted (`WEIR_RETRY_ALLOWED`) and counted. The verdict goes to
/// `*out`; a denial is not an error (`WEIR_OK`). Errors: `WEIR_ERR_INVALID_ARGUMENT` (an unknown
/// criticality), `WEIR_ERR_NULL`.
///
/// # Safety
/// `throttle` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_allow_retry(
    throttle: *const weir_throttle,
    criticality: weir_criticality,
    now_ns: u64,
    out: *mut weir_retry_verdict,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let t = unsafe { self::throttle(throttle) }?;
        let c = criticality_from_c(criticality)?;
        let out = unsafe { Out::new(out, "out") }?;
        let decision = with_thread_rng(t.seed, |rng| t.inner.allow_retry(c, now_ns, rng));
        out.write(verdict(decision));
        Ok(())
    })
}

/// As `weir_throttle_allow_retry`, drawing from the caller's generator `*rng` (advanced in place).
///
/// # Safety
/// `throttle` is NULL or a live handle; `rng` is NULL or points to a `weir_rng` no other thread uses
/// during the call; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free (each thread with its own generator).
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_allow_retry_with_rng(
    throttle: *const weir_throttle,
    criticality: weir_criticality,
    now_ns: u64,
    rng: *mut weir_rng,
    out: *mut weir_retry_verdict,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let t = unsafe { self::throttle(throttle) }?;
        let c = criticality_from_c(criticality)?;
        // SAFETY: the caller's contract above.
        let rng = unsafe { arg_mut(rng, "rng") }?;
        let out = unsafe { Out::new(out, "out") }?;
        let decision = with_caller_rng(rng, |rng| t.inner.allow_retry(c, now_ns, rng));
        out.write(verdict(decision));
        Ok(())
    })
}

/// Records that the backend accepted a request of `criticality` at `now_ns` (it answered anything but
/// "overloaded"). Errors: `WEIR_ERR_INVALID_ARGUMENT` (an unknown criticality; nothing recorded),
/// `WEIR_ERR_NULL`.
///
/// # Safety
/// `throttle` is NULL or a live handle.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_accepted(
    throttle: *const weir_throttle,
    criticality: weir_criticality,
    now_ns: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let t = unsafe { self::throttle(throttle) }?;
        t.inner.accepted(criticality_from_c(criticality)?, now_ns);
        Ok(())
    })
}

/// Writes the probability in [0, 1] with which a request of `criticality` would be throttled at
/// `now_ns` to `*out` (nothing is counted). Errors: `WEIR_ERR_INVALID_ARGUMENT`, `WEIR_ERR_NULL`.
///
/// # Safety
/// `throttle` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_probability(
    throttle: *const weir_throttle,
    criticality: weir_criticality,
    now_ns: u64,
    out: *mut f64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let t = unsafe { self::throttle(throttle) }?;
        let c = criticality_from_c(criticality)?;
        unsafe { Out::new(out, "out") }?.write(t.inner.probability(c, now_ns));
        Ok(())
    })
}

/// Writes the throttle's counters and its window's sums at `now_ns` to `*out`.
///
/// # Safety
/// `throttle` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, concurrently with traffic.
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_get_stats(
    throttle: *const weir_throttle,
    now_ns: u64,
    out: *mut weir_throttle_stats,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let t = unsafe { self::throttle(throttle) }?;
        unsafe { Out::new(out, "out") }?.write(t.inner.stats(now_ns).into());
        Ok(())
    })
}

/// The book's client-side rejection probability, `max(0, (requests - k * accepts) / (requests + 1))`
/// (0 for a NaN `k`).
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_rejection_probability(requests: u64, accepts: u64, k: f64) -> f64 {
    guard_value(0.0, || {
        weir_core::overload::rejection_probability(requests, accepts, k)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::{weir_last_error_message, WEIR_ERR_NULL, WEIR_OK};
    use std::ffi::CString;
    use std::ptr::{null, null_mut};

    fn last() -> String {
        // SAFETY: never NULL, NUL-terminated.
        unsafe { CStr::from_ptr(weir_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    }

    /// Checks a status and that the message contains `text`.
    #[track_caller]
    fn fails(status: weir_status, want: weir_status, text: &str) {
        assert_eq!(status, want, "{}", last());
        assert!(last().contains(text), "{:?} lacks {text:?}", last());
    }

    fn new_shedder(c: weir_shedder_config) -> *mut weir_shedder {
        let mut s = null_mut();
        assert_eq!(unsafe { weir_shedder_new(&c, &mut s) }, WEIR_OK);
        s
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn shedder_config_default_is_the_cores_and_bad_fields_are_named() {
        let d = weir_shedder_config_default();
        assert_eq!(d, ShedderConfig::default().into());
        assert_eq!(unsafe { weir_shedder_config_validate(&d) }, WEIR_OK);
        type Case = (fn(&mut weir_shedder_config), &'static str);
        let cases: [Case; 4] = [
            (
                |c| c.buckets = 0,
                "buckets must be 1 ..= WEIR_MAX_WINDOW_BUCKETS",
            ),
            (|c| c.buckets = 129, "buckets"),
            (|c| c.window_ns = 49, "window_ns"),
            (|c| c.cpu_threshold = 1000, "cpu_threshold"),
        ];
        for (change, field) in cases {
            let mut c = d;
            change(&mut c);
            fails(
                unsafe { weir_shedder_config_validate(&c) },
                WEIR_ERR_INVALID_CONFIG,
                field,
            );
            let mut out = std::ptr::dangling_mut::<weir_shedder>();
            fails(
                unsafe { weir_shedder_new(&c, &mut out) },
                WEIR_ERR_INVALID_CONFIG,
                field,
            );
            assert_eq!(
                out,
                std::ptr::dangling_mut::<weir_shedder>(),
                "nothing written on failure"
            );
        }
        fails(
            unsafe { weir_shedder_config_validate(null()) },
            WEIR_ERR_NULL,
            "`config`",
        );
        fails(
            unsafe { weir_shedder_new(null(), &mut null_mut()) },
            WEIR_ERR_NULL,
            "`config`",
        );
        fails(
            unsafe { weir_shedder_new(&d, null_mut()) },
            WEIR_ERR_NULL,
            "`out`",
        );
    }

    #[test]
    fn shedder_admits_completes_and_counts() {
        let s = new_shedder(weir_shedder_config_default());
        let mut p = weir_promise::default();
        assert_eq!(
            unsafe { weir_shedder_allow(s, 300, 10 * MS, &mut p) },
            WEIR_OK
        );
        assert_eq!(p.started_at, 10 * MS);
        assert_ne!(p.shedder, 0);
        let mut q = weir_promise::default();
        assert_eq!(
            unsafe { weir_shedder_allow(s, 300, 11 * MS, &mut q) },
            WEIR_OK
        );
        let mut st = weir_shedder_stats::default();
        assert_eq!(unsafe { weir_shedder_get_stats(s, 0, &mut st) }, WEIR_OK);
        assert_eq!((st.allowed, st.in_flight), (2, 2));
        assert_eq!(unsafe { weir_shedder_success(s, &mut p, 25 * MS) }, WEIR_OK);
        assert_eq!(unsafe { weir_shedder_failure(s, &mut q) }, WEIR_OK);
        // The 15 ms response time shows once its bucket (100 ms wide) is complete.
        assert_eq!(
            unsafe { weir_shedder_get_stats(s, 100 * MS, &mut st) },
            WEIR_OK
        );
        assert_eq!(
            (
                st.allowed,
                st.succeeded,
                st.failed,
                st.in_flight,
                st.min_rt_ms,
                st.max_pass
            ),
            (2, 1, 1, 0, 15, 1)
        );
        let mut f = 0.0;
        assert_eq!(
            unsafe { weir_shedder_overload_factor(s, 950, &mut f) },
            WEIR_OK
        );
        assert_eq!(f, 0.5);
        assert_eq!(
            unsafe { weir_shedder_overload_factor(s, 5000, &mut f) },
            WEIR_OK
        );
        assert_eq!(f, 0.1);
        unsafe { weir_shedder_free(s) };
        unsafe { weir_shedder_free(null_mut()) };
    }

    #[test]
    fn an_overloaded_shedder_refuses_and_writes_nothing() {
        // Threshold 0: always overloaded; at cpu 1000 the limit is 0.1 of the cold start's 10: 1.
        let s = new_shedder(weir_shedder_config {
            cpu_threshold: 0,
            ..weir_shedder_config_default()
        });
        let mut held = Vec::new();
        for _ in 0..20 {
            let mut p = weir_promise::default();
            assert_eq!(unsafe { weir_shedder_allow(s, 0, 0, &mut p) }, WEIR_OK);
            held.push(p);
        }
        for mut p in held.drain(..10) {
            assert_eq!(unsafe { weir_shedder_failure(s, &mut p) }, WEIR_OK);
        }
        let sentinel = weir_promise {
            started_at: 99,
            shedder: 99,
        };
        let mut p = sentinel;
        fails(
            unsafe { weir_shedder_allow(s, 1000, 0, &mut p) },
            WEIR_ERR_OVERLOADED,
            "service overloaded: cpu 1000/1000, 10 in flight",
        );
        assert_eq!(p, sentinel);
        let mut st = weir_shedder_stats::default();
        assert_eq!(unsafe { weir_shedder_get_stats(s, 0, &mut st) }, WEIR_OK);
        assert_eq!((st.allowed, st.dropped, st.in_flight), (20, 1, 10));
        for mut p in held {
            assert_eq!(unsafe { weir_shedder_failure(s, &mut p) }, WEIR_OK);
        }
        unsafe { weir_shedder_free(s) };
    }

    #[test]
    fn forged_foreign_and_twice_completed_promises_change_nothing() {
        let a = new_shedder(weir_shedder_config_default());
        let b = new_shedder(weir_shedder_config_default());
        let mut p = weir_promise::default();
        assert_eq!(unsafe { weir_shedder_allow(a, 0, 0, &mut p) }, WEIR_OK);
        let stats = |s| {
            let mut st = weir_shedder_stats::default();
            assert_eq!(unsafe { weir_shedder_get_stats(s, 0, &mut st) }, WEIR_OK);
            st
        };
        let before = stats(a);
        // Another shedder's promise, a zeroed one, a forged tag: refused by both completions.
        for (s, mut forged) in [
            (b, p),
            (a, weir_promise::default()),
            (
                a,
                weir_promise {
                    shedder: p.shedder.wrapping_add(1),
                    ..p
                },
            ),
        ] {
            fails(
                unsafe { weir_shedder_success(s, &mut forged, 5) },
                WEIR_ERR_INVALID_PROMISE,
                "promise: granted by shedder",
            );
            fails(
                unsafe { weir_shedder_failure(s, &mut forged) },
                WEIR_ERR_INVALID_PROMISE,
                "not by this one",
            );
        }
        assert_eq!(stats(a), before);
        assert_eq!(stats(b).in_flight, 0);
        // Completed once, then again while another promise is in flight: the completion cleared the
        // tag, so the second is refused and the other promise keeps its place.
        let mut other = weir_promise::default();
        assert_eq!(unsafe { weir_shedder_allow(a, 0, 0, &mut other) }, WEIR_OK);
        assert_eq!(unsafe { weir_shedder_success(a, &mut p, 5) }, WEIR_OK);
        assert_eq!(p.shedder, 0);
        let done = stats(a);
        fails(
            unsafe { weir_shedder_success(a, &mut p, 5) },
            WEIR_ERR_INVALID_PROMISE,
            "promise: granted by shedder 0",
        );
        fails(
            unsafe { weir_shedder_failure(a, &mut p) },
            WEIR_ERR_INVALID_PROMISE,
            "not by this one",
        );
        assert_eq!(stats(a), done);
        assert_eq!(done.in_flight, 1);
        assert_eq!(unsafe { weir_shedder_failure(a, &mut other) }, WEIR_OK);
        // A copy of a completed promise, with nothing else in flight: the core refuses it.
        let mut again = weir_promise::default();
        assert_eq!(unsafe { weir_shedder_allow(a, 0, 0, &mut again) }, WEIR_OK);
        let mut copy = again;
        assert_eq!(unsafe { weir_shedder_success(a, &mut again, 5) }, WEIR_OK);
        fails(
            unsafe { weir_shedder_success(a, &mut copy, 5) },
            WEIR_ERR_INVALID_PROMISE,
            "no request in flight",
        );
        let end = stats(a);
        assert_eq!((end.succeeded, end.failed, end.in_flight), (2, 1, 0));
        unsafe { weir_shedder_free(a) };
        unsafe { weir_shedder_free(b) };
    }

    #[test]
    fn every_shedder_function_refuses_null() {
        let s = new_shedder(weir_shedder_config_default());
        let mut p = weir_promise::default();
        let mut f = 0.0;
        let mut st = weir_shedder_stats::default();
        let mut out = weir_promise::default();
        let cases = [
            (
                unsafe { weir_shedder_allow(null(), 0, 0, &mut out) },
                "`shedder`",
            ),
            (unsafe { weir_shedder_allow(s, 0, 0, null_mut()) }, "`out`"),
            (
                unsafe { weir_shedder_success(null(), &mut p, 0) },
                "`shedder`",
            ),
            (
                unsafe { weir_shedder_success(s, null_mut(), 0) },
                "`promise`",
            ),
            (unsafe { weir_shedder_failure(null(), &mut p) }, "`shedder`"),
            (unsafe { weir_shedder_failure(s, null_mut()) }, "`promise`"),
            (
                unsafe { weir_shedder_get_stats(null(), 0, &mut st) },
                "`shedder`",
            ),
            (unsafe { weir_shedder_get_stats(s, 0, null_mut()) }, "`out`"),
            (
                unsafe { weir_shedder_overload_factor(null(), 0, &mut f) },
                "`shedder`",
            ),
            (
                unsafe { weir_shedder_overload_factor(s, 0, null_mut()) },
                "`out`",
            ),
        ];
        for (status, name) in cases {
            assert_eq!(status, WEIR_ERR_NULL, "{name}");
        }
        // The message names the argument (checked on the last of each kind).
        fails(
            unsafe { weir_shedder_failure(s, null_mut()) },
            WEIR_ERR_NULL,
            "argument `promise` is NULL",
        );
        assert_eq!(unsafe { weir_shedder_get_stats(s, 0, &mut st) }, WEIR_OK);
        assert_eq!((st.allowed, st.in_flight), (0, 0));
        unsafe { weir_shedder_free(s) };
    }

    /// N threads admit and complete through the C ABI on one shedder (some drops: threshold 0 and a hot
    /// CPU); at the end every counter is exact.
    #[test]
    fn shedder_conserves_requests_across_threads() {
        const THREADS: u64 = 8;
        // Fewer rounds under miri, which interprets every step (the threads still interleave there).
        const ROUNDS: u64 = if cfg!(miri) { 100 } else { 5_000 };
        struct Handle(*mut weir_shedder);
        // SAFETY: the handle is documented as usable from any thread at once.
        unsafe impl Sync for Handle {}
        let s = Handle(new_shedder(weir_shedder_config {
            cpu_threshold: 0,
            ..weir_shedder_config_default()
        }));
        let (allowed, dropped) = std::thread::scope(|scope| {
            let workers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let s = &s;
                    scope.spawn(move || {
                        let (mut allowed, mut dropped) = (0u64, 0u64);
                        let mut held = Vec::new();
                        for i in 0..ROUNDS {
                            let now = i * MS;
                            let mut p = weir_promise::default();
                            match unsafe { weir_shedder_allow(s.0, 990, now, &mut p) } {
                                WEIR_OK => {
                                    allowed += 1;
                                    held.push(p);
                                }
                                WEIR_ERR_OVERLOADED => dropped += 1,
                                other => panic!("allow: {other}"),
                            }
                            // Hold a few at a time so that the in-flight count exceeds the limit.
                            if held.len() > (t as usize % 4) + 1 {
                                for (k, mut p) in held.drain(..).enumerate() {
                                    let status = if k % 2 == 0 {
                                        unsafe { weir_shedder_success(s.0, &mut p, now + MS) }
                                    } else {
                                        unsafe { weir_shedder_failure(s.0, &mut p) }
                                    };
                                    assert_eq!(status, WEIR_OK);
                                }
                            }
                        }
                        for mut p in held {
                            assert_eq!(unsafe { weir_shedder_failure(s.0, &mut p) }, WEIR_OK);
                        }
                        (allowed, dropped)
                    })
                })
                .collect();
            workers
                .into_iter()
                .map(|w| w.join().unwrap())
                .fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
        });
        let mut st = weir_shedder_stats::default();
        assert_eq!(unsafe { weir_shedder_get_stats(s.0, 0, &mut st) }, WEIR_OK);
        assert_eq!(allowed + dropped, THREADS * ROUNDS);
        assert_eq!((st.allowed, st.dropped), (allowed, dropped));
        assert_eq!(st.succeeded + st.failed, allowed);
        assert_eq!(st.in_flight, 0);
        assert!(dropped > 0, "the test must exercise drops");
        unsafe { weir_shedder_free(s.0) };
    }

    /// A fresh fake filesystem root, removed on drop.
    struct Fake(PathBuf);

    impl Fake {
        fn new(name: &str) -> Fake {
            static N: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "weir-ffi-cpu-{}-{name}-{}",
                std::process::id(),
                N.fetch_add(1, Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            Fake(dir)
        }

        fn write(&self, path: &str, text: &str) {
            let path = self.0.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }

        fn c_root(&self) -> CString {
            CString::new(self.0.to_str().unwrap()).unwrap()
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn sampler_at(fake: &Fake) -> *mut weir_cpu_sampler {
        let mut s = null_mut();
        let root = fake.c_root();
        assert_eq!(
            unsafe { weir_cpu_sampler_with_root(root.as_ptr(), &mut s) },
            WEIR_OK,
            "{}",
            last()
        );
        s
    }

    #[test]
    fn cpu_sampler_reads_proc_stat_and_smooths() {
        let fake = Fake::new("proc");
        fake.write(
            "proc/stat",
            "cpu  0 0 0 1000 0 0 0 0\ncpu0 0 0 0 500 0 0 0\ncpu1 0 0 0 500 0 0 0\n",
        );
        let s = sampler_at(&fake);
        let mut source = 99;
        assert_eq!(unsafe { weir_cpu_sampler_source(s, &mut source) }, WEIR_OK);
        assert_eq!(source, WEIR_CPU_SOURCE_PROC_STAT);
        let mut allowance = 0.0;
        assert_eq!(
            unsafe { weir_cpu_sampler_allowance(s, &mut allowance) },
            WEIR_OK
        );
        assert_eq!(allowance, 2.0);
        let (mut sample, mut usage) = (99, 99);
        assert_eq!(unsafe { weir_cpu_sampler_usage(s, &mut usage) }, WEIR_OK);
        assert_eq!(usage, 0);
        assert_eq!(
            unsafe { weir_cpu_sampler_sample(s, 0, &mut sample) },
            WEIR_OK
        );
        assert_eq!(sample, 0, "the first sample only records a starting point");
        // Half the jiffies busy since; after 100 s the old average has no weight left.
        fake.write("proc/stat", "cpu  500 0 0 1500 0 0 0 0\n");
        let later = 100_000_000_000;
        assert_eq!(
            unsafe { weir_cpu_sampler_sample(s, later, &mut sample) },
            WEIR_OK
        );
        assert_eq!(sample, 500);
        assert_eq!(unsafe { weir_cpu_sampler_usage(s, &mut usage) }, WEIR_OK);
        assert_eq!(usage, 500);
        // The file disappears: an I/O error naming it, and the usage stays the last good one.
        std::fs::remove_file(fake.0.join("proc/stat")).unwrap();
        sample = 77;
        fails(
            unsafe { weir_cpu_sampler_sample(s, later * 2, &mut sample) },
            WEIR_ERR_IO,
            "proc/stat",
        );
        assert_eq!(sample, 77);
        assert_eq!(unsafe { weir_cpu_sampler_usage(s, &mut usage) }, WEIR_OK);
        assert_eq!(usage, 500);
        unsafe { weir_cpu_sampler_free(s) };
        unsafe { weir_cpu_sampler_free(null_mut()) };
    }

    #[test]
    fn cpu_sampler_reads_cgroup_v2_limits() {
        let fake = Fake::new("v2");
        fake.write("sys/fs/cgroup/cgroup.controllers", "cpu cpuset\n");
        fake.write("sys/fs/cgroup/cpu.stat", "usage_usec 1000\n");
        fake.write("sys/fs/cgroup/cpu.max", "200000 100000\n");
        fake.write("sys/fs/cgroup/cpuset.cpus.effective", "0-3\n");
        fake.write("proc/self/cgroup", "0::/\n");
        let s = sampler_at(&fake);
        let mut source = 99;
        assert_eq!(unsafe { weir_cpu_sampler_source(s, &mut source) }, WEIR_OK);
        assert_eq!(source, WEIR_CPU_SOURCE_CGROUP_V2);
        let mut allowance = 0.0;
        assert_eq!(
            unsafe { weir_cpu_sampler_allowance(s, &mut allowance) },
            WEIR_OK
        );
        assert_eq!(allowance, 2.0, "the quota (2 CPUs) under the cpuset (4)");
        // A malformed file is an I/O-class error naming it.
        fake.write("sys/fs/cgroup/cpu.max", "nonsense\n");
        allowance = 7.0;
        fails(
            unsafe { weir_cpu_sampler_allowance(s, &mut allowance) },
            WEIR_ERR_IO,
            "cpu.max",
        );
        assert_eq!(allowance, 7.0);
        unsafe { weir_cpu_sampler_free(s) };
    }

    #[test]
    fn cpu_sampler_errors_are_honest() {
        // No source under the root: unsupported, nothing written.
        let empty = Fake::new("empty");
        let root = empty.c_root();
        let mut s = std::ptr::dangling_mut::<weir_cpu_sampler>();
        fails(
            unsafe { weir_cpu_sampler_with_root(root.as_ptr(), &mut s) },
            WEIR_ERR_UNSUPPORTED,
            "no cgroup v2, cgroup v1 or /proc/stat",
        );
        assert_eq!(s, std::ptr::dangling_mut::<weir_cpu_sampler>());
        // A source that exists but cannot be parsed at construction: an I/O error.
        let bad = Fake::new("bad");
        bad.write("proc/stat", "cpu  1 2 3\n");
        let root = bad.c_root();
        fails(
            unsafe { weir_cpu_sampler_with_root(root.as_ptr(), &mut s) },
            WEIR_ERR_IO,
            "fewer than 7 counters",
        );
        fails(
            unsafe { weir_cpu_sampler_with_root(null(), &mut s) },
            WEIR_ERR_NULL,
            "`root`",
        );
        fails(
            unsafe { weir_cpu_sampler_with_root(root.as_ptr(), null_mut()) },
            WEIR_ERR_NULL,
            "`out`",
        );
        fails(
            unsafe { weir_cpu_sampler_new(null_mut()) },
            WEIR_ERR_NULL,
            "`out`",
        );
        // This machine: a sampler (Linux with /proc or cgroups) or an honest refusal.
        let mut real = null_mut();
        match unsafe { weir_cpu_sampler_new(&mut real) } {
            WEIR_OK => {
                let mut source = 99;
                assert_eq!(
                    unsafe { weir_cpu_sampler_source(real, &mut source) },
                    WEIR_OK
                );
                assert!(source <= WEIR_CPU_SOURCE_PROC_STAT);
                let mut usage = 0;
                assert_eq!(
                    unsafe { weir_cpu_sampler_sample(real, 1, &mut usage) },
                    WEIR_OK
                );
                assert!(usage <= 1000);
                unsafe { weir_cpu_sampler_free(real) };
            }
            status => assert!(
                status == WEIR_ERR_UNSUPPORTED || status == WEIR_ERR_IO,
                "{status}: {}",
                last()
            ),
        }
        // Every reader refuses NULL.
        let fake = Fake::new("nulls");
        fake.write("proc/stat", "cpu  0 0 0 1000 0 0 0 0\n");
        let s = sampler_at(&fake);
        let (mut u, mut a, mut src) = (0u32, 0.0f64, 0u32);
        let cases = [
            (
                unsafe { weir_cpu_sampler_source(null(), &mut src) },
                "`sampler`",
            ),
            (unsafe { weir_cpu_sampler_source(s, null_mut()) }, "`out`"),
            (
                unsafe { weir_cpu_sampler_allowance(null(), &mut a) },
                "`sampler`",
            ),
            (
                unsafe { weir_cpu_sampler_allowance(s, null_mut()) },
                "`out`",
            ),
            (
                unsafe { weir_cpu_sampler_sample(null(), 0, &mut u) },
                "`sampler`",
            ),
            (
                unsafe { weir_cpu_sampler_sample(s, 0, null_mut()) },
                "`out`",
            ),
            (
                unsafe { weir_cpu_sampler_usage(null(), &mut u) },
                "`sampler`",
            ),
            (unsafe { weir_cpu_sampler_usage(s, null_mut()) }, "`out`"),
        ];
        for (status, name) in cases {
            assert_eq!(status, WEIR_ERR_NULL, "{name}");
        }
        unsafe { weir_cpu_sampler_free(s) };
    }

    fn new_throttle(c: weir_throttle_config) -> *mut weir_throttle {
        let mut t = null_mut();
        assert_eq!(unsafe { weir_throttle_new(&c, &mut t) }, WEIR_OK);
        t
    }

    fn throttle_stats(t: *const weir_throttle, now: u64) -> weir_throttle_stats {
        let mut st = weir_throttle_stats::default();
        assert_eq!(unsafe { weir_throttle_get_stats(t, now, &mut st) }, WEIR_OK);
        st
    }

    const SEC: u64 = 1_000_000_000;

    #[test]
    fn throttle_config_default_is_the_cores_and_bad_fields_are_named() {
        let d = weir_throttle_config_default();
        let core = ThrottleConfig::default();
        assert_eq!(
            (
                d.window_ns,
                d.buckets,
                d.k,
                d.max_rejection,
                d.retry_ratio,
                d.seed
            ),
            (
                core.window_ns,
                core.buckets,
                core.k,
                core.max_rejection,
                core.retry_ratio,
                0
            )
        );
        assert_eq!(unsafe { weir_throttle_config_validate(&d) }, WEIR_OK);
        type Case = (fn(&mut weir_throttle_config), &'static str);
        let cases: [Case; 6] = [
            (|c| c.buckets = 0, "buckets"),
            (|c| c.buckets = 129, "buckets"),
            (|c| c.window_ns = 10, "window_ns"),
            (|c| c.k = 0.5, "k must be finite and >= 1"),
            (|c| c.max_rejection = f64::NAN, "max_rejection"),
            (|c| c.retry_ratio = 1.5, "retry_ratio"),
        ];
        for (change, field) in cases {
            let mut c = d;
            change(&mut c);
            fails(
                unsafe { weir_throttle_config_validate(&c) },
                WEIR_ERR_INVALID_CONFIG,
                field,
            );
            let mut out = std::ptr::dangling_mut::<weir_throttle>();
            fails(
                unsafe { weir_throttle_new(&c, &mut out) },
                WEIR_ERR_INVALID_CONFIG,
                field,
            );
            assert_eq!(out, std::ptr::dangling_mut::<weir_throttle>());
        }
        fails(
            unsafe { weir_throttle_config_validate(null()) },
            WEIR_ERR_NULL,
            "`config`",
        );
        fails(
            unsafe { weir_throttle_new(null(), &mut null_mut()) },
            WEIR_ERR_NULL,
            "`config`",
        );
        fails(
            unsafe { weir_throttle_new(&d, null_mut()) },
            WEIR_ERR_NULL,
            "`out`",
        );
    }

    #[test]
    fn throttle_matches_the_core_draw_for_draw() {
        // The C throttle with the caller's generator decides exactly as the Rust one with the same seed.
        let t = new_throttle(weir_throttle_config_default());
        let core = Throttle::new(ThrottleConfig::default()).unwrap();
        let mut rng = crate::balancer::weir_rng_seed(42);
        let mut draw = Rng::with_seed(42);
        let mut throttled = 0;
        for i in 0..300u64 {
            let now = 10 * SEC + i * MS;
            let c = (i % 4) as u32;
            let crit = Criticality::from_code(c as u8).unwrap();
            let mut allowed = false;
            assert_eq!(
                unsafe { weir_throttle_allow_with_rng(t, c, now, &mut rng, &mut allowed) },
                WEIR_OK
            );
            assert_eq!(allowed, core.allow(crit, now, &mut draw).is_ok(), "{i}");
            assert_eq!(rng.state, draw.get_seed());
            throttled += u32::from(!allowed);
            // The backend accepts one in four.
            if i % 4 == 0 {
                assert_eq!(unsafe { weir_throttle_accepted(t, c, now) }, WEIR_OK);
                core.accepted(crit, now);
            }
            let mut v = 99;
            assert_eq!(
                unsafe { weir_throttle_allow_retry_with_rng(t, c, now, &mut rng, &mut v) },
                WEIR_OK
            );
            let want = match core.allow_retry(crit, now, &mut draw) {
                Ok(()) => WEIR_RETRY_ALLOWED,
                Err(RetryDenied::Budget { .. }) => WEIR_RETRY_DENIED_BUDGET,
                Err(_) => WEIR_RETRY_DENIED_THROTTLED,
            };
            assert_eq!(v, want, "{i}");
            assert_eq!(rng.state, draw.get_seed());
        }
        assert!(throttled > 0, "the trace must throttle");
        let now = 11 * SEC;
        let st = throttle_stats(t, now);
        assert_eq!(st, core.stats(now).into());
        assert!(st.total_retries_denied > 0 && st.total_retries > 0);
        for c in 0..4 {
            let mut p = -1.0;
            assert_eq!(
                unsafe { weir_throttle_probability(t, c, now, &mut p) },
                WEIR_OK
            );
            let crit = Criticality::from_code(c as u8).unwrap();
            assert_eq!(p, core.probability(crit, now));
        }
        unsafe { weir_throttle_free(t) };
        unsafe { weir_throttle_free(null_mut()) };
    }

    #[test]
    fn throttle_with_the_thread_generator_counts_and_budgets_retries() {
        let t = new_throttle(weir_throttle_config_default());
        // No requests yet: a retry has no budget (0 retries >= 0.1 * 0 requests) and is not counted.
        let mut v = 99;
        assert_eq!(
            unsafe { weir_throttle_allow_retry(t, WEIR_CRITICALITY_CRITICAL, SEC, &mut v) },
            WEIR_OK
        );
        assert_eq!(v, WEIR_RETRY_DENIED_BUDGET);
        // No data: nothing is throttled.
        let mut allowed = false;
        assert_eq!(
            unsafe { weir_throttle_allow(t, WEIR_CRITICALITY_CRITICAL, SEC, &mut allowed) },
            WEIR_OK
        );
        assert!(allowed);
        assert_eq!(
            unsafe { weir_throttle_accepted(t, WEIR_CRITICALITY_CRITICAL, SEC) },
            WEIR_OK
        );
        // Everything accepted: never throttled; 20 requests give a budget of 2 retries.
        for _ in 0..19 {
            assert_eq!(
                unsafe { weir_throttle_allow(t, WEIR_CRITICALITY_SHEDDABLE, SEC, &mut allowed) },
                WEIR_OK
            );
            assert!(allowed);
            assert_eq!(
                unsafe { weir_throttle_accepted(t, WEIR_CRITICALITY_SHEDDABLE, SEC) },
                WEIR_OK
            );
        }
        let verdicts: Vec<_> = (0..4)
            .map(|_| {
                let mut v = 99;
                assert_eq!(
                    unsafe { weir_throttle_allow_retry(t, WEIR_CRITICALITY_CRITICAL, SEC, &mut v) },
                    WEIR_OK
                );
                if v == WEIR_RETRY_ALLOWED {
                    assert_eq!(
                        unsafe { weir_throttle_accepted(t, WEIR_CRITICALITY_CRITICAL, SEC) },
                        WEIR_OK
                    );
                }
                v
            })
            .collect();
        // Admitted retries count as requests: 1 < 2.1, 2 < 2.2, then 3 >= 2.3.
        assert_eq!(
            verdicts,
            [
                WEIR_RETRY_ALLOWED,
                WEIR_RETRY_ALLOWED,
                WEIR_RETRY_ALLOWED,
                WEIR_RETRY_DENIED_BUDGET
            ]
        );
        let st = throttle_stats(t, SEC);
        assert_eq!(st.total_requests, [0, 4, 0, 19]);
        assert_eq!(st.total_accepts, [0, 4, 0, 19]);
        assert_eq!(st.total_throttled, [0; 4]);
        assert_eq!(st.window_requests, [0, 4, 0, 19]);
        assert_eq!(st.window_accepts, [0, 4, 0, 19]);
        assert_eq!(
            (st.total_retries, st.total_retries_denied, st.window_retries),
            (3, 2, 3)
        );
        unsafe { weir_throttle_free(t) };
    }

    #[test]
    fn unknown_criticalities_and_nulls_are_refused_and_count_nothing() {
        let t = new_throttle(weir_throttle_config_default());
        let mut rng = crate::balancer::weir_rng_seed(5);
        let (mut allowed, mut v, mut p) = (false, 0u32, 0.0f64);
        let mut st = weir_throttle_stats::default();
        for bad in [4, 99, u32::MAX] {
            let statuses = [
                unsafe { weir_throttle_allow(t, bad, 0, &mut allowed) },
                unsafe { weir_throttle_allow_with_rng(t, bad, 0, &mut rng, &mut allowed) },
                unsafe { weir_throttle_allow_retry(t, bad, 0, &mut v) },
                unsafe { weir_throttle_allow_retry_with_rng(t, bad, 0, &mut rng, &mut v) },
                unsafe { weir_throttle_accepted(t, bad, 0) },
                unsafe { weir_throttle_probability(t, bad, 0, &mut p) },
            ];
            for status in statuses {
                assert_eq!(status, WEIR_ERR_INVALID_ARGUMENT);
            }
            assert_eq!(
                last(),
                format!(
                    "criticality: {bad} is not a criticality (WEIR_CRITICALITY_CRITICAL_PLUS 0 .. \
                     WEIR_CRITICALITY_SHEDDABLE 3)"
                )
            );
        }
        assert_eq!(rng.state, 5);
        assert_eq!(throttle_stats(t, 0), weir_throttle_stats::default());
        let c = WEIR_CRITICALITY_CRITICAL;
        let cases = [
            (
                unsafe { weir_throttle_allow(null(), c, 0, &mut allowed) },
                "throttle",
            ),
            (
                unsafe { weir_throttle_allow(t, c, 0, null_mut()) },
                "allowed",
            ),
            (
                unsafe { weir_throttle_allow_with_rng(null(), c, 0, &mut rng, &mut allowed) },
                "throttle",
            ),
            (
                unsafe { weir_throttle_allow_with_rng(t, c, 0, null_mut(), &mut allowed) },
                "rng",
            ),
            (
                unsafe { weir_throttle_allow_with_rng(t, c, 0, &mut rng, null_mut()) },
                "allowed",
            ),
            (
                unsafe { weir_throttle_allow_retry(null(), c, 0, &mut v) },
                "throttle",
            ),
            (
                unsafe { weir_throttle_allow_retry(t, c, 0, null_mut()) },
                "out",
            ),
            (
                unsafe { weir_throttle_allow_retry_with_rng(null(), c, 0, &mut rng, &mut v) },
                "throttle",
            ),
            (
                unsafe { weir_throttle_allow_retry_with_rng(t, c, 0, null_mut(), &mut v) },
                "rng",
            ),
            (
                unsafe { weir_throttle_allow_retry_with_rng(t, c, 0, &mut rng, null_mut()) },
                "out",
            ),
            (unsafe { weir_throttle_accepted(null(), c, 0) }, "throttle"),
            (
                unsafe { weir_throttle_probability(null(), c, 0, &mut p) },
                "throttle",
            ),
            (
                unsafe { weir_throttle_probability(t, c, 0, null_mut()) },
                "out",
            ),
            (
                unsafe { weir_throttle_get_stats(null(), 0, &mut st) },
                "throttle",
            ),
            (unsafe { weir_throttle_get_stats(t, 0, null_mut()) }, "out"),
        ];
        for (status, name) in cases {
            assert_eq!(status, WEIR_ERR_NULL, "{name}");
        }
        assert_eq!(throttle_stats(t, 0), weir_throttle_stats::default());
        assert_eq!(rng.state, 5);
        unsafe { weir_throttle_free(t) };
    }

    #[test]
    fn rejection_probability_is_the_books() {
        assert_eq!(weir_rejection_probability(100, 50, 2.0), 0.0);
        assert_eq!(weir_rejection_probability(100, 0, 2.0), 100.0 / 101.0);
        assert_eq!(weir_rejection_probability(10, 0, f64::NAN), 0.0);
    }
}
