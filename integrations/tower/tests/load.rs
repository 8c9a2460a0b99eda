//! Load reports through the balance: a classifier that reads the server's report ([`OrcaLoad`]) has
//! the lease released with it, and the knee limit, armed by a drop, eases a node whose server says it
//! is past its knee where the same answers below it (or without a report read) do not; with retries
//! on, the same.

use std::convert::Infallible;
use std::sync::Arc;
use tower::{service_fn, BoxError, Service, ServiceExt};
use weir::limit::{KneeLimit, LimitAlgorithm};
use weir::rt::monotonic_now;
use weir::{Config, HeapBalancer, Outcome};
use weir_tower::classify::ENDPOINT_LOAD_METRICS;
use weir_tower::retry::Retry;
use weir_tower::{Builder, HttpStatus, OrcaLoad};

/// What the backend answers: a status and its `endpoint-load-metrics` header.
type Answer = (u16, &'static str);

/// Calls in flight at once: below the knee limit's initial limit (20), so none waits. One drops and 15
/// answer, fewer than the 16 answers the knee's latency tracker needs before it has a no-load RTT: the
/// latency cannot move the limit here, only a report can, whatever the calls' timing.
const CALLS: usize = 16;

/// The limit after the drop: 0.9 x min(limit 20, 16 in flight) = 14.4.
const AFTER_DROP: u32 = 14;

fn knee() -> Config {
    Config {
        limit: LimitAlgorithm::Knee(KneeLimit::default()),
        ..Config::default()
    }
}

/// One node whose server answers what each request asks for.
fn backend(
) -> impl Service<http::Request<Answer>, Response = http::Response<()>, Error = Infallible> + Clone
{
    service_fn(|request: http::Request<Answer>| async move {
        let (status, report) = *request.body();
        Ok::<_, Infallible>(
            http::Response::builder()
                .status(status)
                .header(ENDPOINT_LOAD_METRICS, report)
                .body(())
                .unwrap(),
        )
    })
}

/// The node's limit.
fn limit(balancer: &HeapBalancer) -> u32 {
    balancer.nodes(monotonic_now()).next().unwrap().limit
}

/// Sends `CALLS` requests at once to the balance's one node; the last one sent answers 503 (a drop,
/// which cuts the limit to [`AFTER_DROP`] and arms the knee), then the others answer 200 with
/// `report`, the most recent first. Returns the node's limit at the end.
async fn drop_then_report<S>(
    balance: &mut S,
    balancer: &HeapBalancer,
    report: &'static str,
) -> Result<u32, BoxError>
where
    S: Service<http::Request<Answer>, Response = http::Response<()>, Error = weir_tower::Error>,
{
    let mut calls = Vec::new();
    for i in 0..CALLS {
        let status = if i + 1 == CALLS { 503 } else { 200 };
        let request = http::Request::new((status, report));
        calls.push(balance.ready().await?.call(request));
    }
    assert_eq!(balancer.stats().in_flight, CALLS as u64);
    let dropped = calls.pop().unwrap().await?;
    assert_eq!(dropped.status(), 503);
    assert_eq!(limit(balancer), AFTER_DROP, "{report}");
    while let Some(call) = calls.pop() {
        assert_eq!(call.await?.status(), 200);
    }
    let stats = balancer.stats();
    assert_eq!(
        (
            stats.in_flight,
            stats.released(Outcome::Dropped),
            stats.released(Outcome::Success)
        ),
        (0, 1, CALLS as u64 - 1)
    );
    Ok(limit(balancer))
}

/// The reports the tests send, and whether they ease the node: past the knee in both spellings; at
/// half of it, where the limit grows back if anything; and one that does not parse, which is no report.
/// Every later answer past the knee eases the limit by 0.1 (from what was in flight, if that was
/// lower): 15 of them, from 14.4 to 12.9.
const REPORTS: [(&str, bool); 4] = [
    ("application_utilization:1.2", true),
    (
        "TEXT application_utilization=1.2, cpu_utilization=0.3",
        true,
    ),
    ("application_utilization:0.5, cpu_utilization:1.2", false),
    ("application_utilization:1.2x", false),
];

#[tokio::test]
async fn a_report_past_the_knee_eases_an_armed_node() -> Result<(), BoxError> {
    for (report, eases) in REPORTS {
        let mut balance = Builder::new(knee())
            .classify(OrcaLoad(HttpStatus))
            .build_list([("a", backend())])?;
        let balancer = Arc::clone(balance.balancer());
        let end = drop_then_report(&mut balance, &balancer, report).await?;
        assert_eq!(end < AFTER_DROP, eases, "{report}: {end}");
    }
    Ok(())
}

#[tokio::test]
async fn a_report_is_not_read_without_a_classifier_that_reads_it() -> Result<(), BoxError> {
    // The same answers, past the knee, through the default classifier: released without the report,
    // as before, so the knee reads only the latency, which has no baseline yet (see CALLS).
    let mut balance = Builder::new(knee())
        .classify(HttpStatus)
        .build_list([("a", backend())])?;
    let balancer = Arc::clone(balance.balancer());
    let end = drop_then_report(&mut balance, &balancer, REPORTS[0].0).await?;
    assert!(end >= AFTER_DROP, "{end}");
    Ok(())
}

#[tokio::test]
async fn a_retrying_balance_releases_with_the_report_too() -> Result<(), BoxError> {
    for (report, eases) in REPORTS {
        // The 503 is not retried (its request is not copied), so the one drop is the one sent.
        let retry = Retry::new()
            .backoff(None)
            .requests(|r: &http::Request<Answer>| {
                (r.body().0 == 200).then(|| http::Request::new(*r.body()))
            });
        let mut balance = Builder::new(knee())
            .classify(OrcaLoad(HttpStatus))
            .retry(retry)
            .build_list([("a", backend())])?;
        let balancer = Arc::clone(balance.balancer());
        let end = drop_then_report(&mut balance, &balancer, report).await?;
        assert_eq!(end < AFTER_DROP, eases, "{report}: {end}");
        let budget = balance.retry_budget().unwrap().stats(monotonic_now());
        assert_eq!(budget.retries, 0);
    }
    Ok(())
}

/// The headers of `tests/vectors/load-headers.txt`, which the Python integrations' reader
/// (`weir._http.server_load`) is checked against too: both read every one alike.
#[test]
fn the_shared_header_cases_read_as_the_python_reader_reads_them() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/vectors/load-headers.txt"
    );
    let text = std::fs::read_to_string(path).expect("tests/vectors/load-headers.txt");
    let mut cases = 0;
    for (n, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#'))
    {
        let (want, rest) = line.split_once('|').expect("expected|header|");
        let header = rest.strip_suffix('|').expect("a header ends with |");
        let want = (want != "none").then(|| want.parse::<u32>().expect("thousandths"));
        let mut headers = http::HeaderMap::new();
        headers.insert(
            ENDPOINT_LOAD_METRICS,
            header.parse().expect("a header value"),
        );
        let got = weir_tower::classify::orca_load(&headers).map(weir::limit::ServerLoad::permille);
        assert_eq!(got, want, "line {}: {header:?}", n + 1);
        cases += 1;
    }
    assert!(cases >= 60, "{cases} cases");
}
