//! The retry budget shared by a balancer's callers (Finagle's): the core's lock-free `RetryBudget`
//! behind a handle. Retries go elsewhere with `weir_balancer_acquire_excluding`.

use crate::boundary::{
    arg, free_handle, guard, into_handle, weir_status, Error, Out, WEIR_ERR_RETRY_BUDGET_EXHAUSTED,
};
use crate::metrics::{weir_metrics_format, write_text};
use std::ffi::c_char;
use weir_core::overload::{
    RetryBudget, RetryBudgetConfig, RetryBudgetConfigError, RetryBudgetStats,
};

/// A retry budget: an opaque handle from `weir_retry_budget_new`, freed with `weir_retry_budget_free`.
/// Count each request once with `weir_retry_budget_request`; ask `weir_retry_budget_try_retry` before
/// each retry. Whether a request may be sent twice (is idempotent) is the caller's decision.
///
/// Thread safety: every function that takes a `weir_retry_budget*` may be called from any number of
/// threads at once on the same budget (lock-free, as the Rust core), except `weir_retry_budget_free`,
/// which must be the last call on it.
pub struct weir_retry_budget {
    inner: RetryBudget,
}

/// A retry budget's configuration (Finagle's defaults from `weir_retry_budget_config_default()`: 10 s
/// in 10 buckets, 20 % of requests, 10 retries a second). Validated by `weir_retry_budget_new`.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_retry_budget_config {
    /// The rolling window's length, ns; at least 1 ns per bucket.
    pub window_ns: u64,
    /// Buckets in the window, 1 ..= `WEIR_MAX_WINDOW_BUCKETS`.
    pub buckets: u32,
    /// Retries allowed per request in the window; in [0, 1000].
    pub ratio: f64,
    /// Retries allowed per second of the window whatever the requests; in [0, 1e9].
    pub per_second: f64,
}

/// A retry budget's counters (since it was built) and window sums (at one time), from
/// `weir_retry_budget_stats`.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct weir_retry_budget_statistics {
    /// Requests counted.
    pub requests: u64,
    /// Retries admitted.
    pub retries: u64,
    /// Retries refused.
    pub denied: u64,
    /// Requests in the window.
    pub window_requests: u64,
    /// Retries in the window.
    pub window_retries: u64,
    /// Retries the window admits now, before the next request.
    pub available: u64,
}

impl From<RetryBudgetStats> for weir_retry_budget_statistics {
    fn from(s: RetryBudgetStats) -> Self {
        weir_retry_budget_statistics {
            requests: s.requests,
            retries: s.retries,
            denied: s.denied,
            window_requests: s.window_requests,
            window_retries: s.window_retries,
            available: s.available,
        }
    }
}

fn config_from_c(c: &weir_retry_budget_config) -> Result<RetryBudgetConfig, Error> {
    let config = RetryBudgetConfig {
        window_ns: c.window_ns,
        buckets: c.buckets,
        ratio: c.ratio,
        per_second: c.per_second,
    };
    config.validate().map_err(refused)?;
    Ok(config)
}

/// A refused configuration, by its C field and range.
fn refused(e: RetryBudgetConfigError) -> Error {
    let (field, range) = match e {
        RetryBudgetConfigError::Buckets => ("buckets", "1 ..= WEIR_MAX_WINDOW_BUCKETS (128)"),
        RetryBudgetConfigError::Window => ("window_ns", "at least 1 ns per bucket"),
        RetryBudgetConfigError::Ratio => ("ratio", "in [0, 1000]"),
        RetryBudgetConfigError::PerSecond => ("per_second", "in [0, 1e9]"),
        _ => ("", ""),
    };
    Error::config_field(field, range, e)
}

/// Finagle's defaults: a window of 10 s in 10 buckets, ratio 0.2, 10 retries a second.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_retry_budget_config_default() -> weir_retry_budget_config {
    let c = RetryBudgetConfig::default();
    weir_retry_budget_config {
        window_ns: c.window_ns,
        buckets: c.buckets,
        ratio: c.ratio,
        per_second: c.per_second,
    }
}

/// Builds a retry budget from `config`, validated by the core, and stores its handle in `*out`.
/// Errors: `WEIR_ERR_NULL`, `WEIR_ERR_INVALID_CONFIG` (the message names the field).
///
/// # Safety
/// `config` is NULL or points to a readable `weir_retry_budget_config`; `out` is NULL or points to a
/// writable `weir_retry_budget*`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_retry_budget_new(
    config: *const weir_retry_budget_config,
    out: *mut *mut weir_retry_budget,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let config = config_from_c(unsafe { arg(config, "config") }?)?;
        let out = unsafe { Out::new(out, "out") }?;
        let inner = RetryBudget::new(config).map_err(refused)?;
        out.write(into_handle(weir_retry_budget { inner }));
        Ok(())
    })
}

/// Frees a retry budget. NULL is a no-op.
///
/// # Safety
/// `budget` is NULL or a handle from `weir_retry_budget_new` not yet freed, and no other call on it is
/// in progress or follows.
///
/// Thread safety: must be the last call on the budget, from one thread.
#[no_mangle]
pub unsafe extern "C" fn weir_retry_budget_free(budget: *mut weir_retry_budget) {
    // SAFETY: the caller's contract above is `free_handle`'s.
    unsafe { free_handle(budget) }
}

/// The budget behind a handle, or `WEIR_ERR_NULL`.
///
/// # Safety
/// `budget` is NULL or a live handle from `weir_retry_budget_new`.
unsafe fn budget<'a>(budget: *const weir_retry_budget) -> Result<&'a RetryBudget, Error> {
    // SAFETY: forwarded from the export's contract.
    unsafe { arg(budget, "budget") }.map(|b| &b.inner)
}

/// Counts one request at `now_ns` (its first try; retries are counted by `weir_retry_budget_try_retry`).
/// Errors: `WEIR_ERR_NULL`.
///
/// # Safety
/// `budget` is NULL or a live handle.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_retry_budget_request(
    budget: *const weir_retry_budget,
    now_ns: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        unsafe { self::budget(budget) }?.request(now_ns);
        Ok(())
    })
}

/// Admits a retry at `now_ns` and counts it (`WEIR_OK`) while the window's retries are below
/// `ratio × requests + per_second × window`; otherwise `WEIR_ERR_RETRY_BUDGET_EXHAUSTED` (the message
/// gives the window's counts), the retry not counted. Errors: `WEIR_ERR_NULL`.
///
/// # Safety
/// `budget` is NULL or a live handle.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_retry_budget_try_retry(
    budget: *const weir_retry_budget,
    now_ns: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        unsafe { self::budget(budget) }?
            .try_retry(now_ns)
            .map_err(|e| Error::new(WEIR_ERR_RETRY_BUDGET_EXHAUSTED, e.to_string()))
    })
}

/// Writes the budget's counters and its window's sums at `now_ns` to `*out`. Errors: `WEIR_ERR_NULL`.
///
/// # Safety
/// `budget` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, concurrently with traffic.
#[no_mangle]
pub unsafe extern "C" fn weir_retry_budget_stats(
    budget: *const weir_retry_budget,
    now_ns: u64,
    out: *mut weir_retry_budget_statistics,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::budget(budget) }?;
        unsafe { Out::new(out, "out") }?.write(b.stats(now_ns).into());
        Ok(())
    })
}

/// Writes the budget's metrics at `now_ns` as Prometheus text (the `retry_budget_*` families of
/// docs/metrics.md), exactly as `weir_balancer_write_metrics` writes its own: `format` NULL means the
/// defaults, `buf`, `cap` and `*len` work the same (a size query with `buf` NULL and `cap` 0;
/// `WEIR_ERR_BUFFER_TOO_SMALL` with the length in `*len`). Lock-free.
///
/// # Safety
/// `budget` is NULL or a live handle; `format`, `buf` and `len` as for `weir_balancer_write_metrics`.
///
/// Thread safety: safe from any thread, concurrently with the budget's other calls.
#[no_mangle]
pub unsafe extern "C" fn weir_retry_budget_write_metrics(
    budget: *const weir_retry_budget,
    format: *const weir_metrics_format,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
    now_ns: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::budget(budget) }?;
        unsafe {
            write_text(format, buf, cap, len, |out, f| {
                b.write_metrics(out, &f.core(), now_ns)
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::testing::{fails, last};
    use crate::boundary::{WEIR_ERR_INVALID_CONFIG, WEIR_ERR_NULL, WEIR_OK};
    use core::ptr;

    #[test]
    fn admits_within_the_budget_then_refuses() {
        let config = weir_retry_budget_config {
            per_second: 0.0,
            ..weir_retry_budget_config_default()
        };
        let mut b = ptr::null_mut();
        unsafe {
            assert_eq!(weir_retry_budget_new(&config, &mut b), WEIR_OK);
            for _ in 0..10 {
                assert_eq!(weir_retry_budget_request(b, 0), WEIR_OK);
            }
            assert_eq!(weir_retry_budget_try_retry(b, 0), WEIR_OK);
            assert_eq!(weir_retry_budget_try_retry(b, 0), WEIR_OK);
            assert_eq!(
                weir_retry_budget_try_retry(b, 0),
                WEIR_ERR_RETRY_BUDGET_EXHAUSTED
            );
            assert!(last().contains("2 retries for 10 requests"), "{}", last());
            let mut st = weir_retry_budget_statistics::default();
            assert_eq!(weir_retry_budget_stats(b, 0, &mut st), WEIR_OK);
            assert_eq!((st.requests, st.retries, st.denied), (10, 2, 1));
            weir_retry_budget_free(b);
        }
    }

    #[test]
    fn null_and_bad_configurations() {
        let mut b = ptr::null_mut();
        unsafe {
            fails(
                weir_retry_budget_request(ptr::null(), 0),
                WEIR_ERR_NULL,
                "budget",
            );
            fails(
                weir_retry_budget_try_retry(ptr::null(), 0),
                WEIR_ERR_NULL,
                "budget",
            );
            fails(
                weir_retry_budget_new(ptr::null(), &mut b),
                WEIR_ERR_NULL,
                "config",
            );
            let nan = weir_retry_budget_config {
                ratio: f64::NAN,
                ..weir_retry_budget_config_default()
            };
            fails(
                weir_retry_budget_new(&nan, &mut b),
                WEIR_ERR_INVALID_CONFIG,
                "ratio",
            );
            assert!(b.is_null());
            weir_retry_budget_free(ptr::null_mut());
        }
    }
}
