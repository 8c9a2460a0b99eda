//! Retries in front of real hyper servers on 127.0.0.1, through hyper-util's client: a request that meets
//! a server answering 500, or an address that refuses connections, succeeds on another server and the
//! failure counts against the node that failed; a fleet where every server fails retries no more than
//! its budget (20 % of the requests plus the floor); POSTs are not retried. Each test sends a bounded
//! number of requests; none asserts a time.

#[allow(
    dead_code,
    reason = "the servers' other behaviours and the Discover channel are for tests/http.rs"
)]
mod support;

use http::{Method, Request};
use http_body_util::Empty;
use std::sync::Arc;
use std::time::Duration;
use support::{get, node_of, serve, Behaviour, Body, Node};
use tokio::task::JoinSet;
use tower::{Service, ServiceExt};
use weir::overload::RetryBudgetConfig;
use weir::{Config, Outcome, RetryBudget};
use weir_tower::retry::Retry;
use weir_tower::{Builder, Error};

/// Requests in flight at once.
const CONCURRENCY: usize = 8;

/// Runs a test's body, failing it rather than hanging if it has not finished in a minute.
async fn bounded(body: impl std::future::Future<Output = ()>) {
    if tokio::time::timeout(Duration::from_secs(60), body)
        .await
        .is_err()
    {
        panic!("the test did not finish within 60 s: something hangs");
    }
}

fn post() -> Request<Body> {
    Request::builder()
        .method(Method::POST)
        .uri("/")
        .body(Empty::new())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_meets_a_failing_server_succeeds_on_the_next() {
    bounded(async {
        const REQUESTS: u64 = 400;
        let healthy = [
            serve("healthy-1", Behaviour::Healthy).await,
            serve("healthy-2", Behaviour::Healthy).await,
        ];
        let failing = serve("failing", Behaviour::Fails).await;
        let refused = support::refusing().await;
        // Two more tries: a request can meet both bad nodes before a healthy one.
        let retry = Retry::new().retries(2);
        let budget = Arc::clone(retry.retry_budget());
        let mut balance = Builder::new(Config::default())
            .wait(Duration::from_secs(10))
            .deadline(Duration::from_secs(10))
            .retry(retry)
            .build_list([
                ("healthy-1", Node::new(healthy[0].addr)),
                ("healthy-2", Node::new(healthy[1].addr)),
                ("failing", Node::new(failing.addr)),
                ("refused", Node::new(refused)),
            ])
            .unwrap();
        let mut calls = JoinSet::new();
        let mut answers = Vec::new();
        for _ in 0..REQUESTS {
            if calls.len() >= CONCURRENCY {
                answers.push(calls.join_next().await.unwrap().unwrap());
            }
            let call = balance.ready().await.unwrap().call(get());
            calls.spawn(async move {
                let response = call.await.expect("a healthy server answers every request");
                (response.status().as_u16(), node_of(&response))
            });
        }
        while let Some(done) = calls.join_next().await {
            answers.push(done.unwrap());
        }
        // Every request succeeded, on a healthy server.
        assert_eq!(answers.len() as u64, REQUESTS);
        assert!(
            answers
                .iter()
                .all(|(status, node)| *status == 200 && node.starts_with("healthy")),
            "{answers:?}"
        );
        assert_eq!(healthy[0].hits() + healthy[1].hits(), REQUESTS);
        // The bad nodes were met (the test's premise), and every failure was recorded against its node
        // and retried: one retry per failed attempt.
        let st = balance.balancer().stats();
        let budget = budget.stats(weir::rt::monotonic_now());
        eprintln!(
            "failing hits {}, retries {}, failures {}",
            failing.hits(),
            budget.retries,
            st.released(Outcome::Failure)
        );
        assert!(failing.hits() > 0, "no request met the failing server");
        assert_eq!(st.in_flight, 0);
        assert_eq!(st.released(Outcome::Success), REQUESTS);
        assert_eq!(st.released(Outcome::Failure), budget.retries);
        assert!(
            budget.retries > failing.hits(),
            "no request met the refusing address"
        );
        assert_eq!(budget.denied, 0);
        assert_eq!(
            balance.node(&"failing").unwrap().released(Outcome::Failure),
            failing.hits()
        );
        let refused_node = balance.node(&"refused").unwrap();
        assert_eq!(
            refused_node.released(Outcome::Failure),
            budget.retries - failing.hits()
        );
        assert!(refused_node.penalty > 1.0, "{refused_node:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_budget_bounds_the_retries_when_every_server_fails() {
    bounded(async {
        const REQUESTS: u64 = 300;
        // The default ratio (20 %) with a floor of 10 retries (1 a second over 10 s).
        let budget = Arc::new(
            RetryBudget::new(RetryBudgetConfig {
                per_second: 1.0,
                ..RetryBudgetConfig::default()
            })
            .unwrap(),
        );
        let servers = [
            serve("a", Behaviour::Fails).await,
            serve("b", Behaviour::Fails).await,
            serve("c", Behaviour::Fails).await,
        ];
        let mut balance = Builder::new(Config::default())
            .wait(Duration::from_secs(10))
            .retry(Retry::new().budget(Arc::clone(&budget)).backoff(None))
            .build_list([
                ("a", Node::new(servers[0].addr)),
                ("b", Node::new(servers[1].addr)),
                ("c", Node::new(servers[2].addr)),
            ])
            .unwrap();
        let mut calls = JoinSet::new();
        let mut failed = 0;
        for _ in 0..REQUESTS {
            if calls.len() >= CONCURRENCY {
                failed += calls.join_next().await.unwrap().unwrap();
            }
            let call = balance.ready().await.unwrap().call(get());
            calls.spawn(async move { u64::from(call.await.unwrap().status() == 500) });
        }
        while let Some(done) = calls.join_next().await {
            failed += done.unwrap();
        }
        assert_eq!(failed, REQUESTS);
        let st = budget.stats(weir::rt::monotonic_now());
        let hits: u64 = servers.iter().map(support::Server::hits).sum();
        eprintln!("{st:?}; {hits} hits");
        assert_eq!(st.requests, REQUESTS);
        // Each retry the budget admitted was sent (one more hit); the others were refused by the
        // budget, or found no node with room (every server's limit fell with its failures).
        assert_eq!(hits, REQUESTS + st.retries);
        assert!(st.retries + st.denied <= REQUESTS, "{st:?}");
        assert!(st.denied > 0, "{st:?}");
        // At most 20 % of the requests plus the floor, and as many callers as race for the last one.
        assert!(
            st.retries <= REQUESTS / 5 + 10 + CONCURRENCY as u64,
            "{st:?}"
        );
        assert!(st.retries >= 10, "{st:?}");
        let bst = balance.balancer().stats();
        assert_eq!(bst.released(Outcome::Failure), hits);
        assert_eq!(bst.in_flight, 0);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_are_not_retried() {
    bounded(async {
        const REQUESTS: u64 = 200;
        let healthy = serve("healthy", Behaviour::Healthy).await;
        let failing = serve("failing", Behaviour::Fails).await;
        let retry = Retry::new();
        let budget = Arc::clone(retry.retry_budget());
        let mut balance = Builder::new(Config::default())
            .wait(Duration::from_secs(10))
            .retry(retry)
            .build_list([
                ("healthy", Node::new(healthy.addr)),
                ("failing", Node::new(failing.addr)),
            ])
            .unwrap();
        let mut calls = JoinSet::new();
        let mut failed = 0;
        for _ in 0..REQUESTS {
            if calls.len() >= CONCURRENCY {
                failed += calls.join_next().await.unwrap().unwrap();
            }
            let call = balance.ready().await.unwrap().call(post());
            calls.spawn(async move {
                let answer: Result<_, Error> = call.await;
                u64::from(answer.unwrap().status() == 500)
            });
        }
        while let Some(done) = calls.join_next().await {
            failed += done.unwrap();
        }
        assert!(failing.hits() > 0, "no POST met the failing server");
        // Each POST was sent once: the failing server's answers reached the callers.
        assert_eq!(healthy.hits() + failing.hits(), REQUESTS);
        assert_eq!(failed, failing.hits());
        let st = budget.stats(weir::rt::monotonic_now());
        assert_eq!((st.requests, st.retries, st.denied), (REQUESTS, 0, 0));
    })
    .await;
}
