//! The client's adaptive throttle (the SRE book's), per criticality and with a retry budget: the
//! core's lock-free `Throttle` behind a handle, drawing from the library's per-thread generator or the
//! caller's.

use crate::boundary::{
    arg, arg_mut, free_handle, guard, guard_value, into_handle, weir_status, Error, Out,
    WEIR_ERR_INVALID_ARGUMENT,
};
use crate::metrics::{weir_metrics_format, write_text};
use crate::rng::{weir_rng, with_caller_rng};
use std::ffi::c_char;
use weir_core::overload::{
    Criticality, RetryDenied, ThrottleConfig, ThrottleConfigError, ThrottleStats,
};
use weir_core::rt::with_thread_rng;
use weir_core::Throttle;

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
/// How many criticalities there are (the length of the arrays in `weir_throttle_statistics`).
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
/// `weir_throttle_stats`. Arrays are indexed by `WEIR_CRITICALITY_*`.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct weir_throttle_statistics {
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

impl From<ThrottleStats> for weir_throttle_statistics {
    fn from(s: ThrottleStats) -> Self {
        weir_throttle_statistics {
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
    config.validate().map_err(refused)?;
    Ok(config)
}

/// A refused configuration, by its C field and range.
fn refused(e: ThrottleConfigError) -> Error {
    let (field, range) = match e {
        ThrottleConfigError::Buckets => ("buckets", "1 ..= WEIR_MAX_WINDOW_BUCKETS (128)"),
        ThrottleConfigError::Window => ("window_ns", "at least 1 ns per bucket"),
        ThrottleConfigError::K => ("k", "finite and >= 1"),
        ThrottleConfigError::MaxRejection => ("max_rejection", "in [0, 1]"),
        ThrottleConfigError::RetryRatio => ("retry_ratio", "in [0, 1]"),
        _ => ("", ""),
    };
    Error::config_field(field, range, e)
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
        let inner = Throttle::new(config).map_err(refused)?;
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
pub unsafe extern "C" fn weir_throttle_stats(
    throttle: *const weir_throttle,
    now_ns: u64,
    out: *mut weir_throttle_statistics,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let t = unsafe { self::throttle(throttle) }?;
        unsafe { Out::new(out, "out") }?.write(t.inner.stats(now_ns).into());
        Ok(())
    })
}

/// Writes the throttle's metrics at `now_ns` as Prometheus text (the `throttle_*` families of
/// docs/metrics.md), exactly as `weir_balancer_write_metrics` writes its own: `format` NULL means the
/// defaults, `buf`, `cap` and `*len` work the same (a size query with `buf` NULL and `cap` 0;
/// `WEIR_ERR_BUFFER_TOO_SMALL` with the length in `*len`). Lock-free.
///
/// # Safety
/// `throttle` is NULL or a live handle; `format`, `buf` and `len` as for `weir_balancer_write_metrics`.
///
/// Thread safety: safe from any thread, concurrently with the throttle's other calls.
#[no_mangle]
pub unsafe extern "C" fn weir_throttle_write_metrics(
    throttle: *const weir_throttle,
    format: *const weir_metrics_format,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
    now_ns: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let x = unsafe { self::throttle(throttle) }?;
        unsafe {
            write_text(format, buf, cap, len, |out, f| {
                x.inner.write_metrics(out, &f.core(), now_ns)
            })
        }
    })
}

/// The book's client-side rejection probability, `max(0, (requests - k * accepts) / (requests + 1))`
/// (0 for a NaN `k`): the equation a throttle applies to its window (`weir_throttle_probability`), here
/// for counts the caller keeps.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_throttle_rejection_probability(requests: u64, accepts: u64, k: f64) -> f64 {
    guard_value(0.0, || {
        weir_core::overload::rejection_probability(requests, accepts, k)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::testing::{fails, last};
    use crate::boundary::{WEIR_ERR_INVALID_CONFIG, WEIR_ERR_NULL, WEIR_OK};
    use std::ptr::{null, null_mut};
    use weir_core::Rng;

    const MS: u64 = 1_000_000;

    fn new_throttle(c: weir_throttle_config) -> *mut weir_throttle {
        let mut t = null_mut();
        assert_eq!(unsafe { weir_throttle_new(&c, &mut t) }, WEIR_OK);
        t
    }

    fn throttle_stats(t: *const weir_throttle, now: u64) -> weir_throttle_statistics {
        let mut st = weir_throttle_statistics::default();
        assert_eq!(unsafe { weir_throttle_stats(t, now, &mut st) }, WEIR_OK);
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
        let mut rng = crate::rng::weir_rng_seed(42);
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
        let mut rng = crate::rng::weir_rng_seed(5);
        let (mut allowed, mut v, mut p) = (false, 0u32, 0.0f64);
        let mut st = weir_throttle_statistics::default();
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
        assert_eq!(throttle_stats(t, 0), weir_throttle_statistics::default());
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
                unsafe { weir_throttle_stats(null(), 0, &mut st) },
                "throttle",
            ),
            (unsafe { weir_throttle_stats(t, 0, null_mut()) }, "out"),
        ];
        for (status, name) in cases {
            assert_eq!(status, WEIR_ERR_NULL, "{name}");
        }
        assert_eq!(throttle_stats(t, 0), weir_throttle_statistics::default());
        assert_eq!(rng.state, 5);
        unsafe { weir_throttle_free(t) };
    }

    #[test]
    fn rejection_probability_is_the_books() {
        assert_eq!(weir_throttle_rejection_probability(100, 50, 2.0), 0.0);
        assert_eq!(
            weir_throttle_rejection_probability(100, 0, 2.0),
            100.0 / 101.0
        );
        assert_eq!(weir_throttle_rejection_probability(10, 0, f64::NAN), 0.0);
    }
}
