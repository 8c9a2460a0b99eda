//! Outcomes: what a call's end reports to `weir_balancer_release`, and the functions that name one
//! from an HTTP status or an `errno`, or say whether it may be retried.

use crate::boundary::{guard, weir_status, Error, Out};
use std::ffi::c_int;
use weir_core::Outcome;

/// What a release reports: one of the `WEIR_OUTCOME_*` values (validated as an integer: any other value
/// is `WEIR_ERR_INVALID_ARGUMENT`).
#[allow(non_camel_case_types)]
pub type weir_outcome = u32;
/// The node answered as it should.
pub const WEIR_OUTCOME_SUCCESS: weir_outcome = 0;
/// A real error of the node: a 5xx, connection refused or reset.
pub const WEIR_OUTCOME_FAILURE: weir_outcome = 1;
/// Timeout or overload: 503, 504, a deadline hit (the limiter backs off).
pub const WEIR_OUTCOME_DROPPED: weir_outcome = 2;
/// Nobody's fault (a cancelled call): counted, recorded nowhere else.
pub const WEIR_OUTCOME_IGNORED: weir_outcome = 3;
/// The node is busy and said so: a 429.
pub const WEIR_OUTCOME_THROTTLED: weir_outcome = 4;
/// The caller's fault: another 4xx.
pub const WEIR_OUTCOME_CLIENT_ERROR: weir_outcome = 5;
/// A call that timed out (a deadline passed, a read or connect timeout): `WEIR_OUTCOME_DROPPED`, the
/// core's `Outcome::TIMEOUT`.
pub const WEIR_OUTCOME_TIMEOUT: weir_outcome = WEIR_OUTCOME_DROPPED;
/// A call the caller cancelled (it stopped waiting, for its own reasons): `WEIR_OUTCOME_IGNORED`, the
/// core's `Outcome::CANCELLED`.
pub const WEIR_OUTCOME_CANCELLED: weir_outcome = WEIR_OUTCOME_IGNORED;
/// How many outcomes there are (the length of `weir_balancer_statistics.released`).
pub const WEIR_OUTCOME_COUNT: usize = 6;

/// The outcome a C integer names, or `WEIR_ERR_INVALID_ARGUMENT`.
pub(crate) fn outcome_from_c(outcome: weir_outcome) -> Result<Outcome, Error> {
    u8::try_from(outcome)
        .ok()
        .and_then(Outcome::from_code)
        .ok_or_else(|| {
            Error::invalid(
                "outcome",
                format_args!(
                    "{outcome} is not an outcome (WEIR_OUTCOME_SUCCESS 0 .. WEIR_OUTCOME_CLIENT_ERROR 5)"
                ),
            )
        })
}

/// The outcome an HTTP status means (1xx-3xx success, 429 throttled, 503/504 dropped, other 4xx client
/// error, other 5xx failure), written to `*out`. Errors: `WEIR_ERR_INVALID_ARGUMENT` outside 100..=599,
/// `WEIR_ERR_NULL`.
///
/// # Safety
/// `out` is NULL or writable.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_outcome_from_http_status(
    status: i32,
    out: *mut weir_outcome,
) -> weir_status {
    guard(|| {
        let out = unsafe { Out::new(out, "out") }?;
        let outcome = u16::try_from(status)
            .ok()
            .and_then(|s| Outcome::from_http_status(s).ok())
            .ok_or_else(|| {
                Error::invalid(
                    "status",
                    format_args!("{status} is not an HTTP status (100..=599)"),
                )
            })?;
        out.write(outcome as weir_outcome);
        Ok(())
    })
}

/// Whether a call that ended with `outcome` may be tried again, on another node, written to `*out`:
/// true for `WEIR_OUTCOME_FAILURE`, `WEIR_OUTCOME_DROPPED` and `WEIR_OUTCOME_THROTTLED`, false for
/// `WEIR_OUTCOME_SUCCESS`, `WEIR_OUTCOME_CLIENT_ERROR` (the request's own fault) and
/// `WEIR_OUTCOME_IGNORED` (the core's `Outcome::is_retryable`, the one definition every surface shares).
/// Whether the request is safe to repeat, and whether a retry budget allows it, is the caller's to
/// decide. Errors: `WEIR_ERR_INVALID_ARGUMENT` for a code that is no outcome, `WEIR_ERR_NULL`; `*out`
/// is then left alone.
///
/// # Safety
/// `out` is NULL or writable.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_outcome_is_retryable(
    outcome: weir_outcome,
    out: *mut bool,
) -> weir_status {
    guard(|| {
        let out = unsafe { Out::new(out, "out") }?;
        out.write(outcome_from_c(outcome)?.is_retryable());
        Ok(())
    })
}

/// The outcome of a call that ended with the system error `errnum` (a POSIX `errno`), written to `*out`;
/// the table of the core's `Outcome::from_raw_os_error`:
///
/// | errno | outcome | why |
/// |---|---|---|
/// | `ETIMEDOUT`, `EAGAIN`/`EWOULDBLOCK` | `WEIR_OUTCOME_DROPPED` (`WEIR_OUTCOME_TIMEOUT`) | a timeout: `SO_RCVTIMEO`/`SO_SNDTIMEO` end a read or write with `EAGAIN` |
/// | `EINTR` | `WEIR_OUTCOME_IGNORED` | a signal interrupted the call: the node did nothing wrong, retry |
/// | `EINVAL`, `ENOMEM`, `ENOSYS`, `EOPNOTSUPP`/`ENOTSUP` | `WEIR_OUTCOME_IGNORED` | a local fault: the call never reached the node |
/// | `ECONNREFUSED`, `ECONNRESET`, `ECONNABORTED`, `ENOTCONN`, `EPIPE`, `EADDRNOTAVAIL`, `EHOSTUNREACH`, `ENETUNREACH`, any other | `WEIR_OUTCOME_FAILURE` | the node (or the way to it) is broken |
///
/// Errors: `WEIR_ERR_INVALID_ARGUMENT` for `errnum` 0 (no error) or negative (an API that returns
/// `-errno`, as io_uring and libuv do, wants its value negated first), `WEIR_ERR_NULL`.
///
/// # Safety
/// `out` is NULL or writable.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_outcome_from_errno(
    errnum: c_int,
    out: *mut weir_outcome,
) -> weir_status {
    guard(|| {
        let out = unsafe { Out::new(out, "out") }?;
        let outcome = Outcome::from_raw_os_error(errnum).ok_or_else(|| {
            Error::invalid(
                "errnum",
                format_args!("{errnum} is not an errno (a positive error number; negate a -errno)"),
            )
        })?;
        out.write(outcome as weir_outcome);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::ptr::null_mut;

    #[cfg(unix)]
    fn from_errno(errnum: i32) -> Result<weir_outcome, crate::weir_status> {
        let mut out = 99;
        match unsafe { weir_outcome_from_errno(errnum, &mut out) } {
            crate::WEIR_OK => Ok(out),
            status => {
                assert_eq!(out, 99, "written on an error");
                Err(status)
            }
        }
    }

    #[test]
    #[cfg(unix)]
    fn errnos_map_as_the_cores_io_kinds() {
        // The table as the header states it.
        let table = [
            (libc::ECONNREFUSED, WEIR_OUTCOME_FAILURE),
            (libc::ECONNRESET, WEIR_OUTCOME_FAILURE),
            (libc::ECONNABORTED, WEIR_OUTCOME_FAILURE),
            (libc::ENOTCONN, WEIR_OUTCOME_FAILURE),
            (libc::EPIPE, WEIR_OUTCOME_FAILURE),
            (libc::EADDRNOTAVAIL, WEIR_OUTCOME_FAILURE),
            (libc::EHOSTUNREACH, WEIR_OUTCOME_FAILURE),
            (libc::ENETUNREACH, WEIR_OUTCOME_FAILURE),
            (libc::EACCES, WEIR_OUTCOME_FAILURE),
            (libc::EIO, WEIR_OUTCOME_FAILURE),
            (libc::ETIMEDOUT, WEIR_OUTCOME_TIMEOUT),
            (libc::EAGAIN, WEIR_OUTCOME_DROPPED),
            (libc::EWOULDBLOCK, WEIR_OUTCOME_DROPPED),
            (libc::EINTR, WEIR_OUTCOME_IGNORED),
            (libc::EINVAL, WEIR_OUTCOME_IGNORED),
            (libc::ENOMEM, WEIR_OUTCOME_IGNORED),
            (libc::ENOSYS, WEIR_OUTCOME_IGNORED),
            (libc::EOPNOTSUPP, WEIR_OUTCOME_IGNORED),
            (libc::ENOTSUP, WEIR_OUTCOME_IGNORED),
        ];
        for (errnum, want) in table {
            assert_eq!(from_errno(errnum), Ok(want), "errno {errnum}");
        }
        // Every other errno as Rust reads the same OS error.
        for errnum in 1..=4096 {
            if errnum == libc::EOPNOTSUPP || errnum == libc::ENOTSUP {
                continue;
            }
            let rust = Outcome::from_io_error(&std::io::Error::from_raw_os_error(errnum));
            assert_eq!(
                from_errno(errnum),
                Ok(rust as weir_outcome),
                "errno {errnum}"
            );
        }
        for bad in [0, -1, -libc::ECONNREFUSED, i32::MIN] {
            assert_eq!(
                from_errno(bad),
                Err(crate::WEIR_ERR_INVALID_ARGUMENT),
                "{bad}"
            );
        }
        assert_eq!(
            unsafe { weir_outcome_from_errno(libc::EINTR, null_mut()) },
            crate::WEIR_ERR_NULL
        );
        assert_eq!(WEIR_OUTCOME_TIMEOUT, Outcome::TIMEOUT as weir_outcome);
        assert_eq!(WEIR_OUTCOME_CANCELLED, Outcome::CANCELLED as weir_outcome);
    }
}
