//! gRPC's ORCA load report, read from an HTTP response header: [`OrcaLoad`] and [`orca_load`].
//!
//! ORCA (Open Request Cost Aggregation) is how gRPC servers tell their clients how loaded they are:
//! each answer may carry the server's `application_utilization` and `cpu_utilization`, which gRPC's
//! and Envoy's weighted round robin read. HTTP servers send it as the `endpoint-load-metrics` response
//! header in its native HTTP encoding, comma-separated `name:value` pairs, which Envoy parses:
//!
//! ```text
//! endpoint-load-metrics: application_utilization:0.62, cpu_utilization:0.55, rps_fractional:120
//! ```
//!
//! Envoy's newer releases ask for a `TEXT ` prefix before the pairs (older ones read the pairs bare),
//! and some servers (vLLM's) write each pair `name=value`; all of these are read, in any mix:
//! `TEXT application_utilization=0.62, cpu_utilization=0.55`. Unlike Envoy, which refuses a report with
//! a name it does not know, names other than the two utilizations are skipped (their values must still
//! be numbers), so a server may send metrics of its own.
//!
//! The classifier is named as the crate's others are, by what it reads: [`HttpStatus`] the status,
//! [`GrpcStatus`](super::GrpcStatus) the `grpc-status` header, [`OrcaLoad`] the ORCA load report.

use super::{Classify, HttpStatus};
use std::error::Error as StdError;
use weir::limit::ServerLoad;
use weir::Outcome;

/// The response header that carries an ORCA load report in its native HTTP encoding.
///
/// ```
/// let response = http::Response::builder()
///     .header(weir_tower::classify::ENDPOINT_LOAD_METRICS, "application_utilization:0.7")
///     .body(())
///     .unwrap();
/// let load = weir_tower::classify::orca_load(response.headers());
/// assert_eq!(load.map(weir::limit::ServerLoad::permille), Some(700));
/// ```
pub const ENDPOINT_LOAD_METRICS: &str = "endpoint-load-metrics";

/// The prefix Envoy's newer releases ask for before the pairs (`TEXT name:value, ...`).
const TEXT_PREFIX: &str = "TEXT ";

/// A classifier of `http::Response`s that also reads the server's load report: outcomes and errors
/// as `C` classifies them ([`HttpStatus`] by default), and the load from the response's
/// `endpoint-load-metrics` header ([`orca_load`]), or `C`'s own report where the header is absent.
///
/// The lease is then released with the report ([`Classify::load`]), which only the knee limit
/// ([`KneeLimit`](weir::limit::KneeLimit), in `LimitAlgorithm::Knee`) reads, in place of the call's
/// latency and within a minute of the node's last drop
/// ([`armed_for_ns`](weir::limit::KneeLimit::armed_for_ns)): every client of a server reads the same
/// report, so a client that starts while the fleet is loaded finds the servers' knee, where their
/// latency alone would teach it a loaded RTT as the no-load one. Under any other limit the report
/// changes nothing.
///
/// The report is read from the response head, when the lease is released: a gRPC server's report in
/// the trailers (`endpoint-load-metrics-bin`, a serialized protobuf) is not seen.
///
/// ```
/// use weir::limit::ServerLoad;
/// use weir::Outcome;
/// use weir_tower::classify::OrcaLoad;
/// use weir_tower::{Classify, GrpcStatus, HttpStatus};
///
/// let answer = |status: u16, report: &str| {
///     http::Response::builder()
///         .status(status)
///         .header("endpoint-load-metrics", report)
///         .body(())
///         .unwrap()
/// };
/// let classify = OrcaLoad(HttpStatus);
/// let busy = answer(200, "application_utilization:1.2, cpu_utilization:0.9");
/// assert_eq!(classify.response(&busy), Outcome::Success);
/// assert_eq!(classify.load(&busy).map(ServerLoad::utilization), Some(1.2));
/// assert_eq!(classify.response(&answer(503, "cpu_utilization:0.4")), Outcome::Dropped);
/// assert_eq!(classify.load(&answer(503, "cpu_utilization:0.4")), ServerLoad::from_utilization(0.4).ok());
/// assert_eq!(classify.load(&answer(200, "garbage")), None);
/// // Any classifier of responses: gRPC's status, with the load report.
/// let grpc = OrcaLoad(GrpcStatus);
/// # assert_eq!(grpc.response(&answer(200, "")), Outcome::Success);
/// ```
///
/// In a balance, with the knee limit:
///
/// ```
/// use weir::limit::{KneeLimit, LimitAlgorithm};
/// use weir_tower::{classify::OrcaLoad, Builder, HttpStatus};
/// # let backend = tower::service_fn(|_: http::Request<()>| async {
/// #     Ok::<_, std::convert::Infallible>(http::Response::new(()))
/// # });
/// let config = weir::Config { limit: LimitAlgorithm::Knee(KneeLimit::default()), ..Default::default() };
/// let balance = Builder::new(config).classify(OrcaLoad(HttpStatus)).build_list([("a", backend)]);
/// # assert!(balance.is_ok());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OrcaLoad<C = HttpStatus>(pub C);

impl<B, C: Classify<http::Response<B>>> Classify<http::Response<B>> for OrcaLoad<C> {
    fn response(&self, response: &http::Response<B>) -> Outcome {
        self.0.response(response)
    }

    fn error(&self, error: &(dyn StdError + 'static)) -> Outcome {
        self.0.error(error)
    }

    fn load(&self, response: &http::Response<B>) -> Option<ServerLoad> {
        if response.headers().contains_key(ENDPOINT_LOAD_METRICS) {
            orca_load(response.headers())
        } else {
            self.0.load(response)
        }
    }
}

/// The server's utilization from the `endpoint-load-metrics` headers, in the native HTTP encoding
/// (see the module docs of [`classify`](super)): `application_utilization` where it is above 0, else
/// `cpu_utilization` (the order in which gRPC's and Envoy's weighted round robin read them), as a
/// [`ServerLoad`]. Allocates nothing. The rules are those of the Python integrations' reader
/// (`weir._http.server_load`), so both read a header alike:
///
/// - The header lines are one comma-separated list (as HTTP joins them); empty items are skipped.
///   Each item is `name:value` or `name=value` (split at the first of the two), after an optional
///   `TEXT ` prefix, with whitespace around either.
/// - Names other than those two (`rps_fractional`, `named_metrics.*`, ...) are skipped, but their
///   values must be numbers too.
/// - `None`, with no report recorded: no header, or no utilization in it (an
///   `application_utilization` of 0 with no `cpu_utilization`, as gRPC reads an unset field); a header
///   that is not visible ASCII; an item that is not a name and a finite decimal number (so the `BIN `
///   and `JSON ` encodings too); a name given twice; a utilization below 0; the one read above
///   [`ServerLoad::MAX_UTILIZATION`]. A report with any of these is broken, and none of it is trusted.
///
/// ```
/// use weir::limit::ServerLoad;
/// use weir_tower::classify::orca_load;
///
/// let load = |lines: &[&str]| {
///     let mut headers = http::HeaderMap::new();
///     for line in lines {
///         headers.append("endpoint-load-metrics", line.parse().unwrap());
///     }
///     orca_load(&headers).map(ServerLoad::permille)
/// };
/// assert_eq!(load(&["application_utilization:0.62, cpu_utilization:0.55, rps_fractional:120"]), Some(620));
/// assert_eq!(load(&["TEXT cpu_utilization=0.55"]), Some(550));
/// assert_eq!(load(&["application_utilization:0, cpu_utilization:0.3"]), Some(300));
/// assert_eq!(load(&["rps_fractional:120", "cpu_utilization: 2"]), Some(2_000));
/// assert_eq!(load(&["cpu_utilization:NaN"]), None);
/// assert_eq!(load(&[]), None);
/// ```
pub fn orca_load(headers: &http::HeaderMap) -> Option<ServerLoad> {
    let values = headers.get_all(ENDPOINT_LOAD_METRICS);
    // Every line visible ASCII, or no report.
    for line in &values {
        line.to_str().ok()?;
    }
    // The items of every line, in order (a line that is not visible ASCII was refused above).
    let items = || {
        values
            .iter()
            .flat_map(|line| line.to_str().unwrap_or_default().split(','))
            .map(str::trim)
            .filter(|item| !item.is_empty())
    };
    let (mut application, mut cpu) = (None, None);
    for (n, item) in items().enumerate() {
        let (name, value) = pair(item)?;
        // A name given twice: which one the server meant cannot be told, so the report is broken.
        if items()
            .take(n)
            .any(|earlier| pair(earlier).map(|p| p.0) == Some(name))
        {
            return None;
        }
        match name {
            "application_utilization" => application = Some(value),
            "cpu_utilization" => cpu = Some(value),
            _ => {}
        }
    }
    // A utilization below 0 is a broken report, whichever is read.
    if application.is_some_and(|u: f64| u < 0.0) || cpu.is_some_and(|u: f64| u < 0.0) {
        return None;
    }
    let utilization = match (application, cpu) {
        (Some(application), _) if application > 0.0 => application,
        (_, Some(cpu)) => cpu,
        _ => return None,
    };
    ServerLoad::from_utilization(utilization).ok()
}

/// One item's name and value: `name:value` or `name=value` (split at the first of the two), after an
/// optional `TEXT ` prefix, whitespace trimmed; `None` if the name is empty or the value is not a
/// finite decimal number.
fn pair(item: &str) -> Option<(&str, f64)> {
    let item = item.strip_prefix(TEXT_PREFIX).unwrap_or(item);
    let (name, value) = item.split_once([':', '='])?;
    let (name, value) = (name.trim(), value.trim());
    // Digits, one point, an exponent and signs only: no `inf`, `NaN` or `infinity`, which Rust's
    // parser would read.
    let decimal = value
        .bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'));
    let value: f64 = value.parse().ok().filter(|_| decimal)?;
    (!name.is_empty() && value.is_finite()).then_some((name, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    /// The report of a response with these `endpoint-load-metrics` lines, in thousandths.
    fn permille(lines: &[&str]) -> Option<u32> {
        let mut headers = http::HeaderMap::new();
        for line in lines {
            headers.append(ENDPOINT_LOAD_METRICS, HeaderValue::from_str(line).unwrap());
        }
        orca_load(&headers).map(ServerLoad::permille)
    }

    #[test]
    fn both_spellings_are_read() {
        let native = "application_utilization:0.62, cpu_utilization:0.55, rps_fractional:120";
        assert_eq!(permille(&[native]), Some(620));
        assert_eq!(permille(&["TEXT application_utilization:0.62"]), Some(620));
        assert_eq!(
            permille(&["TEXT application_utilization=0.62, cpu_utilization=0.55"]),
            Some(620)
        );
        assert_eq!(permille(&["cpu_utilization=0.55"]), Some(550));
        // Whitespace around every token, a trailing comma, a mix of separators.
        assert_eq!(
            permille(&["  TEXT   cpu_utilization =  0.25 ,eps: 3 ,, named_metrics.q=9 ,"]),
            Some(250)
        );
        // A tab is whitespace too.
        assert_eq!(permille(&["cpu_utilization:\t0.5"]), Some(500));
        // Either utilization below 0 breaks the report, even the one not read.
        assert_eq!(
            permille(&["application_utilization:0.4, cpu_utilization:-1"]),
            None
        );
        // The prefix is a word of its own: without the space it is a malformed item.
        assert_eq!(permille(&["TEXTcpu_utilization:0.25"]), None);
    }

    #[test]
    fn the_application_utilization_comes_first_where_above_zero() {
        let both = "cpu_utilization:0.9, application_utilization:0.4";
        assert_eq!(permille(&[both]), Some(400));
        assert_eq!(
            permille(&["application_utilization:0, cpu_utilization:0.9"]),
            Some(900)
        );
        assert_eq!(permille(&["cpu_utilization:0.9"]), Some(900));
        assert_eq!(permille(&["application_utilization:1.2"]), Some(1_200));
        // An application utilization of 0 is gRPC's unset field: no utilization without the CPU's.
        assert_eq!(permille(&["application_utilization:0"]), None);
        assert_eq!(permille(&["application_utilization:-0.0"]), None);
        // A CPU utilization of 0 is one: an idle server.
        assert_eq!(permille(&["cpu_utilization:0"]), Some(0));
        // Other metrics alone are no utilization.
        assert_eq!(
            permille(&["mem_utilization:0.5, rps_fractional:10, eps:1"]),
            None
        );
    }

    #[test]
    fn garbage_gives_no_report() {
        for line in [
            "garbage",
            "cpu_utilization",
            "cpu_utilization:",
            ":0.5",
            "=0.5, cpu_utilization:0.5",
            "cpu_utilization:abc",
            "cpu_utilization:0.5 0.6",
            "cpu_utilization:0.5;q=1",
            "cpu_utilization:NaN",
            "cpu_utilization:inf",
            "cpu_utilization:-infinity",
            "cpu_utilization:-0.1",
            "application_utilization:-1, cpu_utilization:0.5",
            "application_utilization:x, cpu_utilization:0.5",
            "cpu_utilization:0.5, garbage",
            "JSON {\"cpu_utilization\": 0.5}",
            "BIN CAESCgoKBAgBEAI=",
            "TEXT",
        ] {
            assert_eq!(permille(&[line]), None, "{line:?}");
        }
        // An empty value is a malformed item, whatever the name.
        assert_eq!(
            permille(&["named_metrics.queue:1, cpu_utilization:0.5, x-y:"]),
            None
        );
        // Unknown names are skipped, but their values must be numbers (negative ones too).
        assert_eq!(
            permille(&["named_metrics.queue:abc, cpu_utilization:0.5"]),
            None
        );
        assert_eq!(
            permille(&["named_metrics.queue:7, cpu_utilization:0.5, mem_utilization:-3"]),
            Some(500)
        );
        assert_eq!(permille(&["rps_fractional:inf, cpu_utilization:0.5"]), None);
    }

    #[test]
    fn a_name_given_twice_gives_no_report() {
        assert_eq!(
            permille(&["cpu_utilization:0.5, cpu_utilization:0.5"]),
            None
        );
        assert_eq!(
            permille(&["application_utilization:0.5", "application_utilization:0.7"]),
            None
        );
        // Any name twice, even one not read, in two spellings or on two lines.
        assert_eq!(permille(&["eps:1, eps:2, cpu_utilization:0.5"]), None);
        assert_eq!(
            permille(&["cpu_utilization:0.5", "TEXT eps=1, eps:1"]),
            None
        );
    }

    #[test]
    fn huge_values_give_no_report() {
        assert_eq!(permille(&["cpu_utilization:1000"]), Some(1_000_000));
        assert_eq!(permille(&["cpu_utilization:1e3"]), Some(1_000_000));
        assert_eq!(permille(&["cpu_utilization:1000.001"]), None);
        assert_eq!(permille(&["application_utilization:1e300"]), None);
        assert_eq!(permille(&["application_utilization:1e400"]), None);
        let digits = format!("cpu_utilization:{}", "9".repeat(5_000));
        assert_eq!(permille(&[&digits]), None);
        // The smallest that rounds to a thousandth, and one that rounds to nothing.
        assert_eq!(permille(&["cpu_utilization:0.0005"]), Some(1));
        assert_eq!(permille(&["cpu_utilization:1e-9"]), Some(0));
    }

    #[test]
    fn an_empty_header_or_none_gives_no_report() {
        assert_eq!(permille(&[]), None);
        assert_eq!(permille(&[""]), None);
        assert_eq!(permille(&["TEXT "]), None);
        assert_eq!(permille(&[" , ,"]), None);
    }

    #[test]
    fn several_header_lines_are_one_list() {
        assert_eq!(
            permille(&["rps_fractional:120", "TEXT cpu_utilization=0.8"]),
            Some(800)
        );
        assert_eq!(
            permille(&["cpu_utilization:0.8", "application_utilization:0.3"]),
            Some(300)
        );
        // A broken line breaks the report; the prefix may start any item.
        assert_eq!(permille(&["cpu_utilization:0.8", "garbage"]), None);
        assert_eq!(
            permille(&["rps_fractional:1, TEXT cpu_utilization=0.7"]),
            Some(700)
        );
        // A line that is not visible ASCII.
        let mut headers = http::HeaderMap::new();
        headers.append(
            ENDPOINT_LOAD_METRICS,
            "cpu_utilization:0.8".parse().unwrap(),
        );
        headers.append(
            ENDPOINT_LOAD_METRICS,
            HeaderValue::from_bytes(b"cpu_utilization:\xff").unwrap(),
        );
        assert_eq!(orca_load(&headers), None);
    }

    #[test]
    fn the_classifier_delegates_and_falls_back_to_its_inner_report() {
        /// Reports 0.5 for any response, and classifies every one as a failure.
        struct Half;
        impl Classify<http::Response<()>> for Half {
            fn response(&self, _: &http::Response<()>) -> Outcome {
                Outcome::Failure
            }
            fn error(&self, _: &(dyn StdError + 'static)) -> Outcome {
                Outcome::Ignored
            }
            fn load(&self, _: &http::Response<()>) -> Option<ServerLoad> {
                ServerLoad::from_permille(500).ok()
            }
        }
        let plain = http::Response::new(());
        let reported = http::Response::builder()
            .header(ENDPOINT_LOAD_METRICS, "cpu_utilization:0.9")
            .body(())
            .unwrap();
        let broken = http::Response::builder()
            .header(ENDPOINT_LOAD_METRICS, "cpu_utilization:x")
            .body(())
            .unwrap();
        let classify = OrcaLoad(Half);
        assert_eq!(classify.response(&reported), Outcome::Failure);
        let timeout = std::io::Error::from(std::io::ErrorKind::TimedOut);
        assert_eq!(classify.error(&timeout), Outcome::Ignored);
        assert_eq!(
            classify.load(&reported).map(ServerLoad::permille),
            Some(900)
        );
        assert_eq!(classify.load(&plain).map(ServerLoad::permille), Some(500));
        // A header that is there but broken is no report, not the inner one.
        assert_eq!(classify.load(&broken), None);
        // The default: HttpStatus, which reports nothing of its own.
        assert_eq!(OrcaLoad::<HttpStatus>::default().load(&plain), None);
        let default: &dyn Classify<http::Response<()>> = &OrcaLoad::<HttpStatus>::default();
        assert_eq!(default.error(&timeout), Outcome::Dropped);
    }
}
