//! What one run of one policy on one scenario measured.

use std::collections::BTreeMap;

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
    /// Final answers by kind: HTTP status, `reset`, `timeout`, `failfast`; `unfinished` for requests still
    /// open when the run stopped.
    pub codes: BTreeMap<String, u64>,
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
}
