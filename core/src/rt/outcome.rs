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
    pub fn from_io_error(error: &Error) -> Outcome {
        let mut error = error;
        // Bounded by the chain's length, which the error's owner built.
        while let Some(inner) = error.get_ref().and_then(|e| e.downcast_ref::<Error>()) {
            error = inner;
        }
        Outcome::from_io_kind(error.kind())
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
}
