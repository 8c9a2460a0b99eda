//! The outcomes of calls that did not get an answer: an I/O error, a timeout, a cancellation. HTTP
//! answers have [`Outcome::from_http_status`]; together they leave no failure to each caller's guess.
//! [`Outcome::TIMEOUT`] and [`Outcome::CANCELLED`] need no `std` and live beside the outcome itself.

use crate::balance::Outcome;
use std::io::{Error, ErrorKind};

#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
impl Outcome {
    /// Maps the kind of an I/O error that ended a call to a node:
    ///
    /// | kind | outcome | why |
    /// |---|---|---|
    /// | `ConnectionRefused`, `ConnectionReset`, `ConnectionAborted`, `NotConnected`, `BrokenPipe`, `UnexpectedEof`, `AddrNotAvailable` | `Failure` | the node (or the way to it) is broken |
    /// | `TimedOut`, `WouldBlock` | `Dropped` ([`TIMEOUT`](Self::TIMEOUT)) | a timeout: a socket's read or write timeout ends with `WouldBlock` on Unix, `TimedOut` on Windows |
    /// | `Interrupted` | `Ignored` | a signal interrupted the call: the node did nothing wrong, retry |
    /// | `InvalidInput`, `OutOfMemory`, `Unsupported` | `Ignored` | a local fault: the call never reached the node |
    /// | `InvalidData` | `Failure` | the node answered with something unreadable |
    /// | any other | `Failure` | an I/O error on a call to a node is taken as the node's |
    ///
    /// ```
    /// use std::io::ErrorKind;
    /// use weir::Outcome;
    /// assert_eq!(Outcome::from_io_kind(ErrorKind::ConnectionRefused), Outcome::Failure);
    /// assert_eq!(Outcome::from_io_kind(ErrorKind::TimedOut), Outcome::Dropped);
    /// assert_eq!(Outcome::from_io_kind(ErrorKind::Interrupted), Outcome::Ignored);
    /// ```
    pub const fn from_io_kind(kind: ErrorKind) -> Outcome {
        match kind {
            ErrorKind::TimedOut | ErrorKind::WouldBlock => Outcome::TIMEOUT,
            ErrorKind::Interrupted
            | ErrorKind::InvalidInput
            | ErrorKind::OutOfMemory
            | ErrorKind::Unsupported => Outcome::Ignored,
            _ => Outcome::Failure,
        }
    }

    /// [`from_io_kind`](Self::from_io_kind) of the error's kind; an error that wraps another I/O error
    /// (as `io::Error::other(inner)` does) is read by the innermost one's kind.
    ///
    /// ```
    /// use std::io::{Error, ErrorKind};
    /// use weir::Outcome;
    /// let reset = Error::from(ErrorKind::ConnectionReset);
    /// assert_eq!(Outcome::from_io_error(&reset), Outcome::Failure);
    /// let wrapped = Error::other(Error::from(ErrorKind::TimedOut));
    /// assert_eq!(Outcome::from_io_error(&wrapped), Outcome::Dropped);
    /// ```
    ///
    /// An error that carries an OS error number is read by it, as
    /// [`from_raw_os_error`](Self::from_raw_os_error) reads it.
    pub fn from_io_error(error: &Error) -> Outcome {
        let mut error = error;
        // Bounded by the chain's length, which the error's owner built.
        while let Some(inner) = error.get_ref().and_then(|e| e.downcast_ref::<Error>()) {
            error = inner;
        }
        match error.raw_os_error().and_then(Outcome::from_raw_os_error) {
            Some(outcome) => outcome,
            None => Outcome::from_io_kind(error.kind()),
        }
    }

    /// The outcome of a call that ended with the OS error `errnum` (an `errno` on Unix, a
    /// `GetLastError` code on Windows): [`from_io_kind`](Self::from_io_kind) of the kind the standard
    /// library gives it, except that "operation not supported" (`EOPNOTSUPP`, `ENOTSUP`), which the
    /// standard library leaves uncategorised, is `Unsupported` by meaning: a local fault, `Ignored`.
    /// `None` for 0 (no error) and negative numbers (an API that returns `-errno`, as io_uring and
    /// libuv do, wants its value negated first).
    ///
    /// The one errno table of every surface: C's `weir_outcome_from_errno` and Python's
    /// `outcome_for_exception` (checked errno by errno against this) read errors alike.
    ///
    /// ```
    /// use weir::Outcome;
    /// # #[cfg(unix)] {
    /// assert_eq!(Outcome::from_raw_os_error(libc::ECONNREFUSED), Some(Outcome::Failure));
    /// assert_eq!(Outcome::from_raw_os_error(libc::ETIMEDOUT), Some(Outcome::Dropped));
    /// assert_eq!(Outcome::from_raw_os_error(libc::EOPNOTSUPP), Some(Outcome::Ignored));
    /// # }
    /// assert_eq!(Outcome::from_raw_os_error(0), None);
    /// ```
    pub fn from_raw_os_error(errnum: i32) -> Option<Outcome> {
        if errnum <= 0 {
            return None;
        }
        #[cfg(unix)]
        if errnum == libc::EOPNOTSUPP || errnum == libc::ENOTSUP {
            return Some(Outcome::from_io_kind(ErrorKind::Unsupported));
        }
        Some(Outcome::from_io_kind(
            Error::from_raw_os_error(errnum).kind(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_kinds_map_as_documented() {
        let failure = [
            ErrorKind::ConnectionRefused,
            ErrorKind::ConnectionReset,
            ErrorKind::ConnectionAborted,
            ErrorKind::NotConnected,
            ErrorKind::BrokenPipe,
            ErrorKind::UnexpectedEof,
            ErrorKind::AddrNotAvailable,
            ErrorKind::InvalidData,
            ErrorKind::PermissionDenied,
            ErrorKind::Other,
        ];
        for kind in failure {
            assert_eq!(Outcome::from_io_kind(kind), Outcome::Failure, "{kind:?}");
        }
        for kind in [ErrorKind::TimedOut, ErrorKind::WouldBlock] {
            assert_eq!(Outcome::from_io_kind(kind), Outcome::Dropped, "{kind:?}");
        }
        for kind in [
            ErrorKind::Interrupted,
            ErrorKind::InvalidInput,
            ErrorKind::OutOfMemory,
            ErrorKind::Unsupported,
        ] {
            assert_eq!(Outcome::from_io_kind(kind), Outcome::Ignored, "{kind:?}");
        }
    }

    #[test]
    fn io_errors_are_read_by_their_innermost_kind() {
        let deep = Error::other(Error::new(
            ErrorKind::ConnectionAborted,
            Error::from(ErrorKind::ConnectionRefused),
        ));
        assert_eq!(Outcome::from_io_error(&deep), Outcome::Failure);
        let timed_out = Error::new(ErrorKind::Interrupted, Error::from(ErrorKind::TimedOut));
        assert_eq!(Outcome::from_io_error(&timed_out), Outcome::Dropped);
        // A custom error that is not an I/O error: its own kind.
        let custom = Error::new(ErrorKind::Interrupted, "signal");
        assert_eq!(Outcome::from_io_error(&custom), Outcome::Ignored);
    }

    #[cfg(unix)]
    #[test]
    fn os_errors_are_read_by_their_number() {
        let table = [
            (libc::ECONNREFUSED, Outcome::Failure),
            (libc::ECONNRESET, Outcome::Failure),
            (libc::EPIPE, Outcome::Failure),
            (libc::EIO, Outcome::Failure),
            (libc::ETIMEDOUT, Outcome::Dropped),
            (libc::EAGAIN, Outcome::Dropped),
            (libc::EINTR, Outcome::Ignored),
            (libc::EINVAL, Outcome::Ignored),
            (libc::ENOMEM, Outcome::Ignored),
            (libc::ENOSYS, Outcome::Ignored),
            (libc::EOPNOTSUPP, Outcome::Ignored),
            (libc::ENOTSUP, Outcome::Ignored),
        ];
        for (errnum, outcome) in table {
            assert_eq!(
                Outcome::from_raw_os_error(errnum),
                Some(outcome),
                "{errnum}"
            );
            // An `io::Error` carrying the number, bare or wrapped, reads the same: "operation not
            // supported" too, which its kind (uncategorised) alone would read as a failure.
            let e = Error::from_raw_os_error(errnum);
            assert_eq!(Outcome::from_io_error(&e), outcome, "{errnum}");
            assert_eq!(
                Outcome::from_io_error(&Error::other(e)),
                outcome,
                "{errnum}"
            );
        }
        for bad in [0, -1, -libc::ECONNREFUSED, i32::MIN] {
            assert_eq!(Outcome::from_raw_os_error(bad), None);
        }
    }
}
