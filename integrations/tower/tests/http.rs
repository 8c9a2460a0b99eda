//! weir-tower in front of real hyper servers on 127.0.0.1, through hyper-util's client: a failing
//! server loses its traffic, every lease comes back after cancellations, timeouts and errors (the
//! counters match the test's own count outcome by outcome), and membership follows a `Discover` stream
//! while requests run. Each test sends a bounded number of requests; none asserts a time.

mod support;

use http::Response;
use hyper::body::Incoming;
use std::collections::HashMap;
use std::time::Duration;
use support::{get, node_of, serve, Behaviour, Channel, Node};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tower::discover::Change;
use tower::timeout::error::Elapsed;
use tower::timeout::Timeout;
use tower::{Service, ServiceExt};
use weir::{Config, Outcome};
use weir_tower::{Builder, Error};

/// Requests in flight at once in each test.
const CONCURRENCY: usize = 8;

/// Runs a test's body, failing it rather than hanging if it has not finished in a minute (each takes
/// well under a second).
async fn bounded(body: impl std::future::Future<Output = ()>) {
    if tokio::time::timeout(Duration::from_secs(60), body)
        .await
        .is_err()
    {
        panic!("the test did not finish within 60 s: something hangs");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_server_loses_its_traffic() {
    bounded(a_failing_server_loses_its_traffic_body()).await;
}

async fn a_failing_server_loses_its_traffic_body() {
    const REQUESTS: u64 = 1_000;
    let healthy = serve("healthy", Behaviour::Healthy).await;
    let failing = serve("failing", Behaviour::Fails).await;
    let slow = serve("slow", Behaviour::Slow(Duration::from_millis(20))).await;
    let mut balance = Builder::new(Config::default())
        .wait(Duration::from_secs(10))
        .build_list([
            ("healthy", Node::new(healthy.addr)),
            ("failing", Node::new(failing.addr)),
            ("slow", Node::new(slow.addr)),
        ])
        .unwrap();
    let mut calls = JoinSet::new();
    let mut ok = 0;
    for _ in 0..REQUESTS {
        if calls.len() >= CONCURRENCY {
            ok += u64::from(calls.join_next().await.unwrap().unwrap());
        }
        let call = balance.ready().await.unwrap().call(get());
        calls.spawn(async move { call.await.is_ok_and(|r| r.status() == 200) });
    }
    while let Some(done) = calls.join_next().await {
        ok += u64::from(done.unwrap());
    }
    let hits = [healthy.hits(), failing.hits(), slow.hits()];
    eprintln!("hits (healthy, failing, slow): {hits:?}; {ok} of {REQUESTS} succeeded");
    assert_eq!(hits.iter().sum::<u64>(), REQUESTS, "{hits:?}");
    // The failing server: under 5 % of the requests, its first failures included.
    assert!(failing.hits() * 20 < REQUESTS, "{hits:?}");
    assert!(
        ok * 100 >= REQUESTS * 99,
        "{ok} of {REQUESTS} succeeded; {hits:?}"
    );
    let st = balance.balancer().stats();
    assert_eq!(st.in_flight, 0);
    assert_eq!(st.released(Outcome::Failure), failing.hits());
    assert_eq!(st.released(Outcome::Success), ok);
    let failing_node = balance.node(&"failing").unwrap();
    assert!(failing_node.penalty > 1.0, "{failing_node:?}");
}

/// What became of one request, as the test sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Seen {
    /// Completed with this outcome of the status or error.
    Completed(Outcome),
    /// The response future was dropped before it completed.
    Cancelled,
}

fn seen(result: Result<Response<Incoming>, Error>) -> Seen {
    Seen::Completed(match result {
        Ok(r) => Outcome::from_http_status(r.status().as_u16()).unwrap(),
        Err(Error::Inner(e)) if e.is::<Elapsed>() => Outcome::Dropped,
        Err(Error::Inner(_)) => Outcome::Failure,
        Err(e) => panic!("a call failed outside its service: {e}"),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_lease_comes_back_after_cancellations_timeouts_and_errors() {
    bounded(every_lease_comes_back_after_cancellations_timeouts_and_errors_body()).await;
}

async fn every_lease_comes_back_after_cancellations_timeouts_and_errors_body() {
    const REQUESTS: usize = 300;
    let healthy = serve("healthy", Behaviour::Healthy).await;
    let stuck = serve("stuck", Behaviour::Slow(Duration::from_secs(30))).await;
    let refused = support::refusing().await;
    // Each backend behind tower's timeout: the stuck server's calls end as `Elapsed` errors.
    let timeout = |node| Timeout::new(node, Duration::from_millis(50));
    let mut balance = Builder::new(Config::default())
        .wait(Duration::from_secs(10))
        .build_list([
            ("healthy", timeout(Node::new(healthy.addr))),
            ("stuck", timeout(Node::new(stuck.addr))),
            ("refused", timeout(Node::new(refused))),
        ])
        .unwrap();
    let mut calls = JoinSet::new();
    let mut seen_counts: HashMap<Seen, u64> = HashMap::new();
    for i in 0..REQUESTS {
        if calls.len() >= CONCURRENCY {
            *seen_counts
                .entry(calls.join_next().await.unwrap().unwrap())
                .or_default() += 1;
        }
        // Every tenth poll_ready is abandoned with its lease reserved: the next one keeps that lease.
        if i % 10 == 5 {
            balance.ready().await.unwrap();
        }
        let call = balance.ready().await.unwrap().call(get());
        if i % 10 == 0 {
            // Cancelled before it is ever polled.
            drop(call);
            *seen_counts.entry(Seen::Cancelled).or_default() += 1;
            continue;
        }
        calls.spawn(async move {
            if i % 10 == 3 {
                // A caller's deadline above the balance: dropped unless it completes within 1 ms.
                match tokio::time::timeout(Duration::from_millis(1), call).await {
                    Ok(result) => seen(result),
                    Err(_) => Seen::Cancelled,
                }
            } else {
                seen(call.await)
            }
        });
    }
    while let Some(done) = calls.join_next().await {
        *seen_counts.entry(done.unwrap()).or_default() += 1;
    }
    // A reserved lease left in a balance that is dropped comes back too.
    balance.ready().await.unwrap();
    let balancer = std::sync::Arc::clone(balance.balancer());
    drop(balance);

    eprintln!("seen: {seen_counts:?}");
    let count = |s: Seen| seen_counts.get(&s).copied().unwrap_or(0);
    let st = balancer.stats();
    assert_eq!(st.in_flight, 0, "{st:?}");
    assert_eq!(st.released_stale, 0);
    assert_eq!(st.acquired, REQUESTS as u64 + 1, "{st:?}");
    for outcome in [Outcome::Success, Outcome::Dropped, Outcome::Failure] {
        assert_eq!(
            st.released(outcome),
            count(Seen::Completed(outcome)),
            "{outcome:?}: {seen_counts:?}"
        );
    }
    assert_eq!(st.released(Outcome::Ignored), count(Seen::Cancelled) + 1);
    // Every kind happened: the test exercised what it claims.
    assert!(
        count(Seen::Completed(Outcome::Dropped)) > 0,
        "{seen_counts:?}"
    );
    assert!(
        count(Seen::Completed(Outcome::Failure)) > 0,
        "{seen_counts:?}"
    );
    assert!(count(Seen::Cancelled) >= (REQUESTS / 10) as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn membership_follows_a_discover_stream_while_requests_run() {
    bounded(membership_follows_a_discover_stream_while_requests_run_body()).await;
}

async fn membership_follows_a_discover_stream_while_requests_run_body() {
    const REQUESTS: usize = 400;
    let servers = [
        serve("a", Behaviour::Healthy).await,
        serve("b", Behaviour::Healthy).await,
        serve("c", Behaviour::Slow(Duration::from_millis(2))).await,
    ];
    let (tx, rx) = mpsc::unbounded_channel();
    let node = |i: usize| Node::new(servers[i].addr);
    tx.send(Change::Insert("a", node(0))).unwrap();
    tx.send(Change::Insert("b", node(1))).unwrap();
    let mut balance = Builder::new(Config::default())
        .wait(Duration::from_secs(10))
        .build(Channel(rx))
        .unwrap();
    let mut calls = JoinSet::new();
    let mut answers: Vec<(usize, String)> = Vec::new();
    for i in 0..REQUESTS {
        // Each change lands while calls are in flight; the next poll_ready applies it.
        match i {
            100 => tx.send(Change::Insert("c", node(2))).unwrap(),
            200 => tx.send(Change::Remove("a")).unwrap(),
            300 => {
                tx.send(Change::Insert("a", node(0))).unwrap();
                tx.send(Change::Remove("b")).unwrap();
            }
            _ => {}
        }
        if calls.len() >= CONCURRENCY {
            answers.push(calls.join_next().await.unwrap().unwrap());
        }
        let call = balance.ready().await.unwrap().call(get());
        calls.spawn(async move {
            let response = call.await.unwrap();
            assert_eq!(response.status(), 200);
            (i, node_of(&response))
        });
    }
    while let Some(done) = calls.join_next().await {
        answers.push(done.unwrap());
    }
    let went = |node: &str, range: std::ops::Range<usize>| {
        answers
            .iter()
            .filter(|(i, n)| n == node && range.contains(i))
            .count()
    };
    assert_eq!(answers.len(), REQUESTS);
    assert_eq!(went("c", 0..100), 0);
    assert!(went("c", 100..REQUESTS) > 0);
    assert_eq!(went("a", 200..300), 0);
    assert!(went("a", 300..REQUESTS) > 0);
    assert_eq!(went("b", 300..REQUESTS), 0);
    let st = balance.balancer().stats();
    assert_eq!(st.in_flight, 0);
    assert_eq!(st.acquired, REQUESTS as u64);
    assert_eq!(st.acquired, st.released_total() + st.released_stale);
    assert_eq!(
        st.released(Outcome::Success) + st.released_stale,
        REQUESTS as u64
    );
    assert_eq!((st.active_nodes, balance.nodes().count()), (2, 2));
}

/// hyper-util's client errors, as `error_outcome` reads them: a refused connection is the node's
/// failure (its chain ends in an `io::Error` of kind `ConnectionRefused`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyper_client_errors_are_classified_by_their_cause() {
    bounded(async {
        let mut node = Node::new(support::refusing().await);
        let error = node.ready().await.unwrap().call(get()).await.unwrap_err();
        assert!(error.is_connect(), "{error:?}");
        assert_eq!(
            weir_tower::classify::error_outcome(&error),
            Outcome::Failure
        );
        let boxed: tower::BoxError = Box::new(error);
        let io = std::iter::successors(Some(&*boxed as &(dyn std::error::Error + 'static)), |e| {
            e.source()
        })
        .find_map(|e| e.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::ConnectionRefused)
        );
    })
    .await;
}
