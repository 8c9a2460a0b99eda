//! What one run of one policy on one scenario measured.

use std::collections::BTreeMap;
use std::fmt;

use crate::policy::Reply;

/// How a request ended: its final answer, by kind.
///
/// Ordered as the texts sort ([`Display`](fmt::Display): `200`, `failfast`, ...), so that the answer
/// histograms list them as they always did: a status is a three-digit number (a scenario file's are 100
/// to 599, and so are the engine's own), so the statuses come first, in numeric order, then the words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestEnd {
    /// The final answer was this HTTP status.
    Status(u16),
    /// The policy's client refused it (weir's fail-fast, or its waiting acquire's queue was full or had
    /// no node in rotation), and no retry followed.
    FailFast,
    /// dialogue's client failed it itself (a full queue, no URIs).
    Rejected,
    /// The final attempt's connection was refused or reset.
    Reset,
    /// A deadline passed: the final attempt's, the request's own, or its wait in the engine's queue.
    Timeout,
    /// Still open when the run stopped.
    Unfinished,
}

impl fmt::Display for RequestEnd {
    /// The text the report and the CSVs print: the status, or `failfast`, `rejected`, `reset`, `timeout`,
    /// `unfinished`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestEnd::Status(s) => write!(f, "{s}"),
            RequestEnd::FailFast => f.write_str("failfast"),
            RequestEnd::Rejected => f.write_str("rejected"),
            RequestEnd::Reset => f.write_str("reset"),
            RequestEnd::Timeout => f.write_str("timeout"),
            RequestEnd::Unfinished => f.write_str("unfinished"),
        }
    }
}

impl From<Reply> for RequestEnd {
    /// A request whose final attempt came back with `reply`.
    fn from(reply: Reply) -> Self {
        match reply {
            Reply::Status(s) => RequestEnd::Status(s),
            Reply::Refused => RequestEnd::Reset,
            Reply::Timeout => RequestEnd::Timeout,
        }
    }
}

/// Per server, per chart bucket: attempts sent, and attempts answered and succeeded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerSeries {
    /// Attempts sent to the server, by the bucket of their send time.
    pub sent: Vec<u64>,
    /// Attempts that ended (answer, reset or timeout), by the bucket of their end.
    pub ended: Vec<u64>,
    /// Of those, the successes.
    pub succeeded: Vec<u64>,
}

impl ServerSeries {
    pub(crate) fn bump(v: &mut Vec<u64>, bucket: usize) {
        if v.len() <= bucket {
            v.resize(bucket + 1, 0);
        }
        v[bucket] += 1;
    }
}

/// The whole fleet per second of arrival: the requests that arrived in each second, and of those, the ones
/// that ended (with their client-observed latencies summed) and the ones that succeeded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FleetSeries {
    /// Requests that arrived.
    pub arrived: Vec<u64>,
    /// Of those, requests that got a final answer.
    pub ended: Vec<u64>,
    /// Of those, the successes.
    pub succeeded: Vec<u64>,
    /// Σ client-observed latency of the ended ones, ns.
    pub latency_ns: Vec<u64>,
}

impl FleetSeries {
    /// Success % of the requests that arrived in second `s` (`None` when none did).
    pub fn success_pct(&self, s: usize) -> Option<f64> {
        let arrived = *self.arrived.get(s)?;
        (arrived > 0)
            .then(|| 100.0 * self.succeeded.get(s).copied().unwrap_or(0) as f64 / arrived as f64)
    }

    /// Mean client latency, ms, of the requests that arrived in second `s` and ended (`None`: none did).
    pub fn mean_ms(&self, s: usize) -> Option<f64> {
        let ended = *self.ended.get(s)?;
        (ended > 0)
            .then(|| self.latency_ns.get(s).copied().unwrap_or(0) as f64 / ended as f64 / 1e6)
    }
}

/// The figures of one cell (scenario × policy).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CellResult {
    /// Requests offered.
    pub sent: u64,
    /// Requests that got a final answer (success, error, or fail-fast) before the run stopped.
    pub received: u64,
    /// Requests whose final answer was a 2xx.
    pub succeeded: u64,
    /// Requests the policy refused at once (weir's fail-fast).
    pub fail_fast: u64,
    /// Attempts the servers saw (more than `sent` means retries; fewer means fail-fast or queued).
    pub server_attempts: u64,
    /// Attempts the servers answered (dialogue's `server_resps`).
    pub server_answers: u64,
    /// Of those, the answers that say "busy": 503 and 429 (overload answers the policy's traffic drew).
    pub overload_answers: u64,
    /// Server time as dialogue defines it: Σ over attempts the server finished (answered, or reset by a
    /// crash) of the time it held them, arrival to completion.
    pub server_busy_ns: u128,
    /// The same plus the attempts the server never finished, held until the run's end (a black hole's).
    pub server_held_ns: u128,
    /// Mean client-observed time of received requests, from arrival to final answer (queueing, backoff
    /// and retries included; a fail-fast counts its ~0 time, as dialogue's `client_mean` does).
    pub client_mean_ns: f64,
    /// 99th percentile of the same.
    pub client_p99_ns: u64,
    /// Requests by how they ended (their final answer's kind; [`RequestEnd::Unfinished`] for requests still
    /// open when the run stopped).
    pub codes: BTreeMap<RequestEnd, u64>,
    /// Upper bound on success % for a client that sends each request when it arrives: every try sent to the
    /// server most likely to succeed at the request's arrival, load ignored (so load-dependent errors and
    /// crashes cannot lower it), retries counted. A policy that queues can pass it by waiting out an outage.
    pub oracle_pct: f64,
    /// Attempts per server, whole run.
    pub per_server_attempts: Vec<u64>,
    /// Time series per server.
    pub series: Vec<ServerSeries>,
    /// The fleet per second (1 s buckets, whatever the chart's bucket): what recovery is measured on.
    pub fleet: FleetSeries,
    /// Attempts sent to each server per second: what ramp-back and concentration are measured on.
    pub sent_per_second: Vec<Vec<u64>>,
    /// Width of a series bucket.
    pub bucket_ns: u64,
    /// Virtual time the run ended.
    pub end_ns: u64,
    /// Health checks the clients sent (their policies' [`due_check`](crate::policy::Balance::due_check)):
    /// none of them is a request or an attempt, so no other figure counts them. Not in the report's
    /// tables.
    pub checks: u64,
}

impl CellResult {
    /// Success % of sent requests, rounded to one decimal as dialogue reports it.
    pub fn success_pct(&self) -> f64 {
        if self.sent == 0 {
            return 0.0;
        }
        (1000.0 * self.succeeded as f64 / self.sent as f64).round() / 10.0
    }

    /// Load spread: the busiest server's attempts over the mean of the servers that could receive any
    /// (SRE ch. 20's measure of subsetting quality); 0 when nothing was sent.
    pub fn spread(&self) -> f64 {
        let n = self.per_server_attempts.len();
        let total: u64 = self.per_server_attempts.iter().sum();
        if n == 0 || total == 0 {
            return 0.0;
        }
        let max = *self.per_server_attempts.iter().max().unwrap_or(&0);
        max as f64 * n as f64 / total as f64
    }
}

/// The `q` quantile (0..=1) of `v` by the nearest-rank method; reorders `v`. 0 when empty.
pub fn quantile(v: &mut [u64], q: f64) -> u64 {
    if v.is_empty() {
        return 0;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    *v.select_nth_unstable(rank - 1).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let mut v: Vec<u64> = (1..=100).rev().collect();
        assert_eq!(quantile(&mut v, 0.99), 99);
        assert_eq!(quantile(&mut v, 1.0), 100);
        assert_eq!(quantile(&mut v, 0.0), 1);
        assert_eq!(quantile(&mut [], 0.5), 0);
        assert_eq!(quantile(&mut [7], 0.99), 7);
    }

    #[test]
    fn success_and_spread() {
        let r = CellResult {
            sent: 3,
            succeeded: 2,
            per_server_attempts: vec![6, 2, 0, 0],
            ..CellResult::default()
        };
        assert_eq!(r.success_pct(), 66.7);
        assert_eq!(r.spread(), 3.0);
        assert_eq!(CellResult::default().spread(), 0.0);
    }

    /// The histograms print each end's text in the map's order: that order must be the texts' own, as
    /// when the map's keys were the texts.
    #[test]
    fn request_ends_print_and_sort_as_their_texts() {
        use RequestEnd::*;
        let words = [FailFast, Rejected, Reset, Timeout, Unfinished];
        let texts: Vec<String> = words.iter().map(ToString::to_string).collect();
        assert_eq!(
            texts,
            ["failfast", "rejected", "reset", "timeout", "unfinished"]
        );
        let replies = [Reply::Status(503), Reply::Refused, Reply::Timeout];
        let ends: Vec<RequestEnd> = replies.into_iter().map(RequestEnd::from).collect();
        assert_eq!(ends, [Status(503), Reset, Timeout]);
        assert_eq!(Status(429).to_string(), "429");
        let mut all: Vec<RequestEnd> = (100..=599).map(Status).chain(words).rev().collect();
        let mut by_text = all.clone();
        by_text.sort_by_key(ToString::to_string);
        all.sort();
        assert_eq!(all, by_text);
    }
}
