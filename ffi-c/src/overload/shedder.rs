//! The server's adaptive load shedder (go-zero's), with its promises: the core's lock-free `Shedder`
//! behind a handle, and each granted promise stamped with its shedder's tag.

use crate::boundary::{
    arg, arg_mut, free_handle, guard, into_handle, weir_status, Error, Out,
    WEIR_ERR_INVALID_PROMISE, WEIR_ERR_OVERLOADED,
};
use crate::metrics::{weir_metrics_format, write_text};
use std::ffi::c_char;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use weir_core::overload::{
    NotInFlight, Overloaded, Promise, RawPromise, ShedderConfig, ShedderConfigError, ShedderStats,
};
use weir_core::Shedder;

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

/// A shedder's counters and window at one time (`weir_shedder_stats`).
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct weir_shedder_statistics {
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

impl From<ShedderStats> for weir_shedder_statistics {
    fn from(s: ShedderStats) -> Self {
        weir_shedder_statistics {
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
    config.validate().map_err(refused)?;
    Ok(config)
}

/// A refused configuration, by its C field and range.
fn refused(e: ShedderConfigError) -> Error {
    let (field, range) = match e {
        ShedderConfigError::Buckets => ("buckets", "1 ..= WEIR_MAX_WINDOW_BUCKETS (128)"),
        ShedderConfigError::Window => ("window_ns", "at least 1 ns per bucket"),
        ShedderConfigError::CpuThreshold => ("cpu_threshold", "0 ..= 999 millicpu"),
        _ => ("", ""),
    };
    Error::config_field(field, range, e)
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
        let inner = Shedder::new(config).map_err(refused)?;
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
pub unsafe extern "C" fn weir_shedder_stats(
    shedder: *const weir_shedder,
    now_ns: u64,
    out: *mut weir_shedder_statistics,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::shedder(shedder) }?;
        unsafe { Out::new(out, "out") }?.write(s.inner.stats(now_ns).into());
        Ok(())
    })
}

/// Writes the shedder's metrics at `now_ns` as Prometheus text (the `shedder_*` families of
/// docs/metrics.md), exactly as `weir_balancer_write_metrics` writes its own: `format` NULL means the
/// defaults, `buf`, `cap` and `*len` work the same (a size query with `buf` NULL and `cap` 0;
/// `WEIR_ERR_BUFFER_TOO_SMALL` with the length in `*len`). `cpu` is the CPU usage in millicpu (0 to
/// 1000) the caller passes to `weir_shedder_allow`: the shedder keeps none. Lock-free.
///
/// # Safety
/// `shedder` is NULL or a live handle; `format`, `buf` and `len` as for `weir_balancer_write_metrics`.
///
/// Thread safety: safe from any thread, concurrently with the shedder's other calls.
#[no_mangle]
pub unsafe extern "C" fn weir_shedder_write_metrics(
    shedder: *const weir_shedder,
    format: *const weir_metrics_format,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
    cpu: u32,
    now_ns: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let x = unsafe { self::shedder(shedder) }?;
        unsafe {
            write_text(format, buf, cap, len, |out, f| {
                x.inner.write_metrics(out, &f.core(), cpu, now_ns)
            })
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::testing::fails;
    use crate::boundary::{WEIR_ERR_INVALID_CONFIG, WEIR_ERR_NULL, WEIR_OK};
    use std::ptr::{null, null_mut};

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
        let mut st = weir_shedder_statistics::default();
        assert_eq!(unsafe { weir_shedder_stats(s, 0, &mut st) }, WEIR_OK);
        assert_eq!((st.allowed, st.in_flight), (2, 2));
        assert_eq!(unsafe { weir_shedder_success(s, &mut p, 25 * MS) }, WEIR_OK);
        assert_eq!(unsafe { weir_shedder_failure(s, &mut q) }, WEIR_OK);
        // The 15 ms response time shows once its bucket (100 ms wide) is complete.
        assert_eq!(unsafe { weir_shedder_stats(s, 100 * MS, &mut st) }, WEIR_OK);
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
        let mut st = weir_shedder_statistics::default();
        assert_eq!(unsafe { weir_shedder_stats(s, 0, &mut st) }, WEIR_OK);
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
            let mut st = weir_shedder_statistics::default();
            assert_eq!(unsafe { weir_shedder_stats(s, 0, &mut st) }, WEIR_OK);
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
        let mut st = weir_shedder_statistics::default();
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
                unsafe { weir_shedder_stats(null(), 0, &mut st) },
                "`shedder`",
            ),
            (unsafe { weir_shedder_stats(s, 0, null_mut()) }, "`out`"),
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
        assert_eq!(unsafe { weir_shedder_stats(s, 0, &mut st) }, WEIR_OK);
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
        let mut st = weir_shedder_statistics::default();
        assert_eq!(unsafe { weir_shedder_stats(s.0, 0, &mut st) }, WEIR_OK);
        assert_eq!(allowed + dropped, THREADS * ROUNDS);
        assert_eq!((st.allowed, st.dropped), (allowed, dropped));
        assert_eq!(st.succeeded + st.failed, allowed);
        assert_eq!(st.in_flight, 0);
        assert!(dropped > 0, "the test must exercise drops");
        unsafe { weir_shedder_free(s.0) };
    }
}
