//! What a call's result teaches the balancer: [`Classify`] turns a response or an error into a weir
//! [`Outcome`], which the lease is released with.
//!
//! | classifier | responses | errors |
//! |---|---|---|
//! | [`HttpStatus`] (the default) | `http::Response`: the status through [`Outcome::from_http_status`] (the outcome table of `core/README.md`) | [`error_outcome`] |
//! | [`GrpcStatus`] | `http::Response`: its `grpc-status` header through [`grpc_outcome`], else as [`HttpStatus`] | [`error_outcome`] (with the `tonic` feature, a `tonic::Status` in the chain by its code) |
//! | [`ByResult`] | any response: `Success` | [`error_outcome`] |
//! | a closure `Fn(&Res) -> Outcome` | what it returns | [`error_outcome`] |
//! | [`OrcaLoad<C>`](OrcaLoad) | as `C`, and the server's load report from its `endpoint-load-metrics` header ([`orca_load`]) | as `C` |
//!
//! A classifier may also read the server's own report of its load in a response
//! ([`Classify::load`]): the lease is then released with it
//! ([`Balancer::release_loaded`](weir::Balancer::release_loaded)), and the knee limit reads it in place
//! of the call's latency. Only [`OrcaLoad`] reads one; the others report none.
//!
//! Errors reach a classifier as `&(dyn Error + 'static)`, the inner service's error converted into a
//! `tower::BoxError` (tower's convention), so one rule serves every service: [`error_outcome`] walks the
//! error's source chain and answers [`Outcome::Dropped`] for a timeout, [`Outcome::Failure`] for anything
//! else.

use std::error::Error as StdError;
use std::io;
use weir::limit::ServerLoad;
use weir::Outcome;

mod orca;
pub use orca::{orca_load, OrcaLoad, ENDPOINT_LOAD_METRICS};

/// Turns what an inner service returned into the [`Outcome`] its lease is released with.
///
/// Implement it for your own responses, or pass a closure `Fn(&Res) -> Outcome`:
///
/// ```
/// use weir::Outcome;
/// use weir_tower::Classify;
///
/// /// A service that answers with a status byte.
/// struct ByCode;
/// impl Classify<u8> for ByCode {
///     fn response(&self, code: &u8) -> Outcome {
///         if *code == 0 { Outcome::Success } else { Outcome::Failure }
///     }
/// }
/// assert_eq!(ByCode.response(&0), Outcome::Success);
/// let closure = |code: &u8| if *code == 0 { Outcome::Success } else { Outcome::ClientError };
/// assert_eq!(closure.response(&7), Outcome::ClientError);
/// // Errors: a timeout anywhere in the chain is Dropped, anything else a Failure.
/// let timeout = std::io::Error::from(std::io::ErrorKind::TimedOut);
/// assert_eq!(ByCode.error(&timeout), Outcome::Dropped);
/// ```
pub trait Classify<Res> {
    /// The outcome of a call that returned `response`.
    fn response(&self, response: &Res) -> Outcome;

    /// The outcome of a call that failed with `error`; by default [`error_outcome`].
    fn error(&self, error: &(dyn StdError + 'static)) -> Outcome {
        error_outcome(error)
    }

    /// The server's own report of its load, if `response` carries one: the lease is then released
    /// with it ([`Balancer::release_loaded`](weir::Balancer::release_loaded)) rather than without
    /// ([`release`](weir::Balancer::release)). By default `None`: no report. [`OrcaLoad`] reads gRPC's
    /// ORCA report from a response header.
    ///
    /// Only the knee limit reads a report ([`KneeLimit`](weir::limit::KneeLimit), in place of the
    /// call's latency, within [`armed_for_ns`](weir::limit::KneeLimit::armed_for_ns) of the node's last
    /// drop); every other limiter ignores it. Asked once per response, after [`response`](Self::response);
    /// never for an error.
    ///
    /// ```
    /// use weir::limit::ServerLoad;
    /// use weir::Outcome;
    /// use weir_tower::Classify;
    ///
    /// /// Answers of (status, utilization in thousandths).
    /// struct Reported;
    /// impl Classify<(u16, u32)> for Reported {
    ///     fn response(&self, &(status, _): &(u16, u32)) -> Outcome {
    ///         Outcome::from_http_status(status).unwrap_or(Outcome::Failure)
    ///     }
    ///     fn load(&self, &(_, permille): &(u16, u32)) -> Option<ServerLoad> {
    ///         ServerLoad::from_permille(permille).ok()
    ///     }
    /// }
    /// assert_eq!(Reported.load(&(200, 1_200)).map(ServerLoad::utilization), Some(1.2));
    /// let closure = |_: &(u16, u32)| Outcome::Success;
    /// assert_eq!(closure.load(&(200, 1_200)), None); // a closure reports no load
    /// ```
    fn load(&self, response: &Res) -> Option<ServerLoad> {
        let _ = response;
        None
    }
}

/// The rule for errors: the first error of the chain that says what it is decides, [`Outcome::Failure`]
/// if none does (a protocol error: the node's fault as far as a client can tell).
///
/// | error in the chain | outcome |
/// |---|---|
/// | tower's `timeout::error::Elapsed`, tokio's `time::error::Elapsed` | `Dropped` (a timeout) |
/// | an `io::Error` of a kind other than `Other`: [`Outcome::from_io_kind`] | refused, reset, aborted, broken pipe: `Failure`; `TimedOut`, `WouldBlock`: `Dropped`; `Interrupted`, `InvalidInput`, `Unsupported`, `OutOfMemory`: `Ignored` |
/// | a `tonic::Status` (with the `tonic` feature) | by its code, [`grpc_outcome`] |
/// | a `hyper::Error` (with the `hyper` feature) | `is_timeout()`: `Dropped`; `is_user()` (the caller's own fault: its request body failed, a header it set is invalid): `Ignored`; else read down the chain |
///
/// An `io::Error` of kind `Other` is read by what it wraps. hyper-util's client errors carry their cause
/// in the chain: a refused connection (`is_connect()`) ends in an `io::Error` of kind
/// `ConnectionRefused`, `Failure`; a connect timeout (`HttpConnector::set_connect_timeout`) in one of
/// kind `TimedOut`, `Dropped`.
///
/// ```
/// use weir::Outcome;
/// use weir_tower::classify::error_outcome;
/// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
/// assert_eq!(error_outcome(&refused), Outcome::Failure);
/// let wrapped = std::io::Error::other(std::io::Error::from(std::io::ErrorKind::TimedOut));
/// assert_eq!(error_outcome(&wrapped), Outcome::Dropped);
/// assert_eq!(error_outcome(&tower::timeout::error::Elapsed::new()), Outcome::Dropped);
/// ```
pub fn error_outcome(error: &(dyn StdError + 'static)) -> Outcome {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(outcome) = known_error(e) {
            return outcome;
        }
        // An `io::Error` that wraps another reports the wrapped one's sources, not the wrapped one.
        next = match e.downcast_ref::<io::Error>().and_then(io::Error::get_ref) {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => e.source(),
        };
    }
    Outcome::Failure
}

/// The outcome of one error of the chain that says what it is, if it does.
fn known_error(e: &(dyn StdError + 'static)) -> Option<Outcome> {
    if e.is::<tower::timeout::error::Elapsed>() || e.is::<tokio::time::error::Elapsed>() {
        return Some(Outcome::Dropped);
    }
    if let Some(io) = e.downcast_ref::<io::Error>() {
        // `Other` is the kind of a wrapper (`io::Error::other(inner)`): the wrapped error says more.
        if io.kind() != io::ErrorKind::Other {
            return Some(Outcome::from_io_kind(io.kind()));
        }
    }
    #[cfg(feature = "hyper")]
    if let Some(error) = e.downcast_ref::<hyper::Error>() {
        if error.is_timeout() {
            return Some(Outcome::Dropped);
        }
        if error.is_user() {
            return Some(Outcome::Ignored);
        }
    }
    #[cfg(feature = "tonic")]
    if let Some(status) = e.downcast_ref::<tonic::Status>() {
        return Some(grpc_outcome(status.code() as i32));
    }
    None
}

/// HTTP responses by status: [`Outcome::from_http_status`], the outcome table of `core/README.md`
/// (100–399 `Success`, 429 `Throttled`, 503 and 504 `Dropped`, other 4xx `ClientError`, other 5xx
/// `Failure`); a status of 600 or more, which `http` accepts and no server should send, is a `Failure`.
///
/// ```
/// use weir::Outcome;
/// use weir_tower::{Classify, HttpStatus};
/// let answer = |status: u16| http::Response::builder().status(status).body(()).unwrap();
/// assert_eq!(HttpStatus.response(&answer(204)), Outcome::Success);
/// assert_eq!(HttpStatus.response(&answer(429)), Outcome::Throttled);
/// assert_eq!(HttpStatus.response(&answer(500)), Outcome::Failure);
/// assert_eq!(HttpStatus.response(&answer(503)), Outcome::Dropped);
/// assert_eq!(HttpStatus.response(&answer(404)), Outcome::ClientError);
/// assert_eq!(HttpStatus.response(&answer(700)), Outcome::Failure);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpStatus;

impl<B> Classify<http::Response<B>> for HttpStatus {
    fn response(&self, response: &http::Response<B>) -> Outcome {
        http_outcome(response.status().as_u16())
    }
}

fn http_outcome(status: u16) -> Outcome {
    Outcome::from_http_status(status).unwrap_or(Outcome::Failure)
}

/// gRPC responses: the `grpc-status` header (a trailers-only response, which is how servers answer an
/// error at once) through [`grpc_outcome`]; without one, the HTTP status as [`HttpStatus`] reads it. The
/// lease is released when the response head arrives, so a status sent in the trailers after a streamed
/// body is not seen.
///
/// ```
/// use weir::Outcome;
/// use weir_tower::{Classify, GrpcStatus};
/// let answer = |code: &str| http::Response::builder().header("grpc-status", code).body(()).unwrap();
/// assert_eq!(GrpcStatus.response(&answer("0")), Outcome::Success);
/// assert_eq!(GrpcStatus.response(&answer("14")), Outcome::Dropped); // UNAVAILABLE
/// assert_eq!(GrpcStatus.response(&answer("8")), Outcome::Throttled); // RESOURCE_EXHAUSTED
/// assert_eq!(GrpcStatus.response(&answer("x")), Outcome::Failure); // not a code: UNKNOWN
/// let no_header = http::Response::builder().status(200).body(()).unwrap();
/// assert_eq!(GrpcStatus.response(&no_header), Outcome::Success);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GrpcStatus;

impl<B> Classify<http::Response<B>> for GrpcStatus {
    fn response(&self, response: &http::Response<B>) -> Outcome {
        match response.headers().get("grpc-status") {
            Some(code) => grpc_outcome(
                code.to_str()
                    .ok()
                    .and_then(|c| c.trim().parse().ok())
                    .unwrap_or(UNKNOWN),
            ),
            None => http_outcome(response.status().as_u16()),
        }
    }
}

/// gRPC's `UNKNOWN`, what an unreadable code is taken for.
const UNKNOWN: i32 = 2;

/// The outcome of a gRPC status code: the HTTP status that `google.rpc.Code` documents for it, through
/// [`Outcome::from_http_status`], so gRPC and HTTP calls teach the balancer alike. One exception:
/// `CANCELLED` (documented as 499, "client closed request") is the caller's cancellation, so
/// [`Outcome::Ignored`]. A code outside 0..=16 is read as `UNKNOWN` (500).
///
/// | code | HTTP | outcome |
/// |---|---|---|
/// | 0 `OK` | 200 | `Success` |
/// | 1 `CANCELLED` | 499 | `Ignored` |
/// | 2 `UNKNOWN`, 13 `INTERNAL`, 15 `DATA_LOSS` | 500 | `Failure` |
/// | 12 `UNIMPLEMENTED` | 501 | `Failure` |
/// | 4 `DEADLINE_EXCEEDED` | 504 | `Dropped` |
/// | 14 `UNAVAILABLE` | 503 | `Dropped` |
/// | 8 `RESOURCE_EXHAUSTED` | 429 | `Throttled` |
/// | 3, 9, 11 (`INVALID_ARGUMENT`, `FAILED_PRECONDITION`, `OUT_OF_RANGE`) | 400 | `ClientError` |
/// | 5 `NOT_FOUND`, 6 `ALREADY_EXISTS`, 10 `ABORTED`, 7 `PERMISSION_DENIED`, 16 `UNAUTHENTICATED` | 404, 409, 409, 403, 401 | `ClientError` |
///
/// ```
/// use weir::Outcome;
/// use weir_tower::classify::grpc_outcome;
/// assert_eq!(grpc_outcome(0), Outcome::Success);
/// assert_eq!(grpc_outcome(1), Outcome::Ignored);
/// assert_eq!(grpc_outcome(4), Outcome::Dropped);
/// assert_eq!(grpc_outcome(99), Outcome::Failure);
/// ```
pub fn grpc_outcome(code: i32) -> Outcome {
    let status = match code {
        0 => 200,
        1 => return Outcome::Ignored,
        3 | 9 | 11 => 400,
        4 => 504,
        5 => 404,
        6 | 10 => 409,
        7 => 403,
        8 => 429,
        12 => 501,
        14 => 503,
        16 => 401,
        // 2 UNKNOWN, 13 INTERNAL, 15 DATA_LOSS, and any code gRPC does not define.
        _ => 500,
    };
    http_outcome(status)
}

/// Any response is a [`Outcome::Success`]; errors by [`error_outcome`]. For services whose responses
/// carry no status (the error says it all).
///
/// ```
/// use weir::Outcome;
/// use weir_tower::{ByResult, Classify};
/// assert_eq!(ByResult.response(&"anything"), Outcome::Success);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByResult;

impl<Res> Classify<Res> for ByResult {
    fn response(&self, _: &Res) -> Outcome {
        Outcome::Success
    }
}

impl<Res, F: Fn(&Res) -> Outcome> Classify<Res> for F {
    fn response(&self, response: &Res) -> Outcome {
        self(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fmt;

    #[test]
    fn every_grpc_code_maps_through_the_http_table() {
        let expected = [
            (0, Outcome::Success),
            (1, Outcome::Ignored),
            (2, Outcome::Failure),
            (3, Outcome::ClientError),
            (4, Outcome::Dropped),
            (5, Outcome::ClientError),
            (6, Outcome::ClientError),
            (7, Outcome::ClientError),
            (8, Outcome::Throttled),
            (9, Outcome::ClientError),
            (10, Outcome::ClientError),
            (11, Outcome::ClientError),
            (12, Outcome::Failure),
            (13, Outcome::Failure),
            (14, Outcome::Dropped),
            (15, Outcome::Failure),
            (16, Outcome::ClientError),
            (17, Outcome::Failure),
            (-1, Outcome::Failure),
        ];
        for (code, outcome) in expected {
            assert_eq!(grpc_outcome(code), outcome, "code {code}");
        }
    }

    #[test]
    fn http_statuses_follow_the_core() {
        for status in 100..=999u16 {
            let response = http::Response::builder().status(status).body(()).unwrap();
            let want = Outcome::from_http_status(status).unwrap_or(Outcome::Failure);
            assert_eq!(HttpStatus.response(&response), want);
            assert_eq!(GrpcStatus.response(&response), want);
        }
    }

    /// An error that wraps another, to build chains.
    #[derive(Debug)]
    struct Wrap(Box<dyn StdError + Send + Sync>);
    impl fmt::Display for Wrap {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("wrapped")
        }
    }
    impl StdError for Wrap {
        fn source(&self) -> Option<&(dyn StdError + 'static)> {
            Some(&*self.0)
        }
    }

    #[cfg(feature = "tonic")]
    #[test]
    fn a_tonic_status_in_the_chain_is_read_by_its_code() {
        for (status, outcome) in [
            (tonic::Status::unavailable("down"), Outcome::Dropped),
            (tonic::Status::deadline_exceeded("late"), Outcome::Dropped),
            (
                tonic::Status::resource_exhausted("busy"),
                Outcome::Throttled,
            ),
            (tonic::Status::cancelled("gone"), Outcome::Ignored),
            (tonic::Status::internal("bug"), Outcome::Failure),
            (tonic::Status::not_found("no"), Outcome::ClientError),
        ] {
            assert_eq!(grpc_outcome(status.code() as i32), outcome);
            assert_eq!(error_outcome(&Wrap(Box::new(status))), outcome);
        }
    }

    #[test]
    fn a_timeout_deep_in_the_chain_is_dropped() {
        let deep = Wrap(Box::new(Wrap(Box::new(
            tower::timeout::error::Elapsed::new(),
        ))));
        assert_eq!(error_outcome(&deep), Outcome::Dropped);
        let reset = Wrap(Box::new(io::Error::from(io::ErrorKind::ConnectionReset)));
        assert_eq!(error_outcome(&reset), Outcome::Failure);
        let boxed: tower::BoxError = Box::new(reset);
        let classify: &dyn Classify<http::Response<()>> = &HttpStatus;
        assert_eq!(classify.error(&*boxed), Outcome::Failure);
    }

    /// A request body whose source fails: hyper's user error.
    #[cfg(feature = "hyper")]
    struct FailingBody;

    #[cfg(feature = "hyper")]
    impl hyper::body::Body for FailingBody {
        type Data = hyper::body::Bytes;
        type Error = io::Error;
        fn poll_frame(
            self: std::pin::Pin<&mut Self>,
            _: &mut std::task::Context<'_>,
        ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, io::Error>>> {
            std::task::Poll::Ready(Some(Err(io::Error::other("the body's source failed"))))
        }
    }

    #[cfg(feature = "hyper")]
    #[tokio::test]
    async fn a_hyper_user_error_is_ignored() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // A peer that accepts and reads nothing: the failure is the client's own.
        let peer = tokio::spawn(async move {
            let accepted = listener.accept().await;
            std::future::pending::<()>().await;
            drop(accepted);
        });
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let io = hyper_util::rt::TokioIo::new(stream);
        let (mut send, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
        let conn = tokio::spawn(conn);
        let request = http::Request::post("/")
            .header("host", "test")
            .body(FailingBody)
            .unwrap();
        let error = send.send_request(request).await.unwrap_err();
        assert!(error.is_user(), "{error:?}");
        assert_eq!(error_outcome(&error), Outcome::Ignored);
        // Without the feature its chain (an `Other` io::Error around a message) reads as the node's failure.
        assert_eq!(
            error_outcome(&Wrap(Box::new(io::Error::other("x")))),
            Outcome::Failure
        );
        let boxed: tower::BoxError = Box::new(error);
        assert_eq!(error_outcome(&Wrap(boxed)), Outcome::Ignored);
        peer.abort();
        let _ = conn.await;
    }

    #[test]
    fn io_errors_in_the_chain_map_as_the_core_maps_them() {
        for (kind, outcome) in [
            (io::ErrorKind::ConnectionRefused, Outcome::Failure),
            (io::ErrorKind::BrokenPipe, Outcome::Failure),
            (io::ErrorKind::TimedOut, Outcome::Dropped),
            (io::ErrorKind::WouldBlock, Outcome::Dropped),
            (io::ErrorKind::Interrupted, Outcome::Ignored),
            (io::ErrorKind::InvalidInput, Outcome::Ignored),
        ] {
            let chain = Wrap(Box::new(io::Error::other(io::Error::from(kind))));
            assert_eq!(error_outcome(&chain), outcome, "{kind:?}");
        }
        // A kind that says something wins over what the error wraps.
        let timed_out = io::Error::new(
            io::ErrorKind::TimedOut,
            Wrap(Box::new(io::Error::from(io::ErrorKind::ConnectionRefused))),
        );
        assert_eq!(error_outcome(&timed_out), Outcome::Dropped);
        // `Other` with nothing inside: a failure.
        assert_eq!(error_outcome(&io::Error::other("?")), Outcome::Failure);
    }
}
