//! Retries and deadlines without a network: which answers are retried and where, the tries and the budget
//! that bound them, the requests that may be sent twice, every attempt's lease released with its own
//! outcome, and a deadline that covers the whole request (the wait for room in `poll_ready` too, timed
//! exactly under paused time) and ends a call as `Dropped` while a caller's own timeout still records
//! `Ignored`.

use http::{Method, Request, Response};
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tower::{Service, ServiceExt};
use weir::backoff::{BackoffConfig, Jitter};
use weir::balance::Stats;
use weir::limit::{FixedLimit, LimitAlgorithm};
use weir::overload::RetryBudgetConfig;
use weir::{Backoff, Config, Outcome, RetryBudget};
use weir_tower::retry::{Retry, RetryRequest};
use weir_tower::{Balance, Builder, Error, Fixed, HttpStatus};

/// How a test backend answers every request.
#[derive(Clone, Copy, Debug)]
enum Answer {
    /// This status.
    Status(u16),
    /// An `io::Error` of this kind.
    Fails(io::ErrorKind),
    /// Never.
    Stuck,
}

/// A backend that answers as told and counts its calls (clones share the count).
#[derive(Clone)]
struct Backend {
    name: &'static str,
    answer: Answer,
    calls: Arc<AtomicU64>,
}

impl Backend {
    fn new(name: &'static str, answer: Answer) -> Self {
        Backend {
            name,
            answer,
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    fn calls(&self) -> u64 {
        self.calls.load(SeqCst)
    }
}

type Reply = Pin<Box<dyn Future<Output = Result<Response<()>, io::Error>> + Send>>;

impl Service<Request<()>> for Backend {
    type Response = Response<()>;
    type Error = io::Error;
    type Future = Reply;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), io::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<()>) -> Reply {
        self.calls.fetch_add(1, SeqCst);
        // A request can ask to hang, to hold a call in flight.
        let answer = match request.headers().contains_key("x-hang") {
            true => Answer::Stuck,
            false => self.answer,
        };
        match answer {
            Answer::Status(s) => Box::pin(std::future::ready(Ok(Response::builder()
                .status(s)
                .body(())
                .unwrap()))),
            Answer::Fails(kind) => Box::pin(std::future::ready(Err(io::Error::from(kind)))),
            Answer::Stuck => Box::pin(std::future::pending()),
        }
    }
}

type Retrying<P> = Balance<Fixed<&'static str, Backend>, HttpStatus, Retry<P>>;

/// A budget that admits every retry: the tests that are not about the budget.
fn ample() -> Arc<RetryBudget> {
    Arc::new(
        RetryBudget::new(RetryBudgetConfig {
            ratio: 1.0,
            per_second: 1000.0,
            ..RetryBudgetConfig::default()
        })
        .unwrap(),
    )
}

/// A balance over `backends` retrying with `retry` (and an ample budget, no pause, unless it says).
fn retrying<P>(retry: Retry<P>, backends: &[&Backend]) -> Retrying<P> {
    Builder::new(Config::default())
        .retry(retry)
        .build_list(backends.iter().map(|b| (b.name, (*b).clone())))
        .unwrap()
}

fn quick() -> Retry {
    Retry::new().budget(ample()).backoff(None)
}

fn get() -> Request<()> {
    Request::new(())
}

/// A request that its backend never answers: a call that holds its lease.
fn hang() -> Request<()> {
    Request::get("/").header("x-hang", "1").body(()).unwrap()
}

fn request(method: Method) -> Request<()> {
    Request::builder().method(method).body(()).unwrap()
}

/// Sends `request` with its first try on `first`: the other nodes are in lame duck while `poll_ready`
/// reserves the lease, and back in rotation for the retries.
async fn first_on<P>(
    balance: &mut Retrying<P>,
    first: &Backend,
    others: &[&Backend],
    request: Request<()>,
) -> Result<Response<()>, Error>
where
    P: RetryRequest<Request<()>> + Clone,
{
    for b in others {
        assert!(balance.set_lame_duck(&b.name, true));
    }
    let call = balance.ready().await.unwrap().call(request);
    for b in others {
        balance.set_lame_duck(&b.name, false);
    }
    let answer = call.await;
    assert_eq!(first.calls(), 1, "{} had one try, the first", first.name);
    answer
}

/// Asserts nothing is in flight and every lease came back; returns the balancer's counters.
fn settled<P>(balance: &Retrying<P>) -> Stats {
    let st = balance.balancer().stats();
    assert_eq!(st.in_flight, 0, "{st:?}");
    assert_eq!(st.acquired, st.released_total(), "{st:?}");
    st
}

fn retries<P>(balance: &Retrying<P>) -> (u64, u64) {
    let st = balance
        .retry_budget()
        .unwrap()
        .stats(weir::rt::monotonic_now());
    (st.retries, st.denied)
}

#[tokio::test]
async fn a_failed_request_is_retried_on_a_node_it_has_not_tried() {
    let bad = Backend::new("bad", Answer::Status(500));
    let good = Backend::new("good", Answer::Status(200));
    let mut balance = retrying(quick(), &[&bad, &good]);
    let response = first_on(&mut balance, &bad, &[&good], get()).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!((bad.calls(), good.calls()), (1, 1));
    // Each attempt's lease with its own outcome: the failure counts against "bad".
    let st = settled(&balance);
    assert_eq!(
        (st.released(Outcome::Failure), st.released(Outcome::Success)),
        (1, 1)
    );
    assert!(balance.node(&"bad").unwrap().penalty > 1.0);
    assert_eq!(retries(&balance), (1, 0));

    // Many more: every request succeeds, each failure was retried once.
    for _ in 0..50 {
        let response = balance.ready().await.unwrap().call(get()).await.unwrap();
        assert_eq!(response.status(), 200);
    }
    let st = settled(&balance);
    assert_eq!(st.released(Outcome::Failure), bad.calls());
    assert_eq!(retries(&balance), (bad.calls(), 0));
    assert_eq!(good.calls(), 51);
}

#[tokio::test]
async fn a_retry_avoids_the_node_it_tried_even_where_that_one_scores_best() {
    let bad = Backend::new("bad", Answer::Status(500));
    let busy = Backend::new("busy", Answer::Status(200));
    // Room for 100 calls a node.
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 100 }),
        ..Config::default()
    };
    let mut balance = Builder::new(config)
        .retry(quick())
        .build_list([("bad", bad.clone()), ("busy", busy.clone())])
        .unwrap();
    // Forty calls held in flight on "busy": its score (calls in flight plus its failure penalty) is 40.
    balance.set_lame_duck(&"bad", true);
    let mut held = Vec::new();
    for _ in 0..40 {
        held.push(balance.ready().await.unwrap().call(hang()));
    }
    balance.set_lame_duck(&"bad", false);
    let response = first_on(&mut balance, &bad, &[&busy], get()).await.unwrap();
    // The ordinary acquire would now pick "bad" again (one failure scores less than 40 calls)...
    let penalty = balance.node(&"bad").unwrap().penalty;
    assert!(penalty < 40.0, "the test's premise: {penalty}");
    // ...the retry went to the node it had not tried.
    assert_eq!(response.status(), 200);
    assert_eq!((bad.calls(), busy.calls()), (1, 41));
    drop(held);
    settled(&balance);
}

#[tokio::test]
async fn failures_timeouts_and_throttling_are_retried_other_answers_are_not() {
    let cases = [
        (Answer::Status(500), true),
        (Answer::Status(502), true),
        (Answer::Status(503), true),
        (Answer::Status(504), true),
        (Answer::Status(429), true),
        (Answer::Fails(io::ErrorKind::ConnectionRefused), true),
        (Answer::Fails(io::ErrorKind::ConnectionReset), true),
        (Answer::Fails(io::ErrorKind::TimedOut), true),
        (Answer::Status(200), false),
        (Answer::Status(404), false),
        (Answer::Status(400), false),
        (Answer::Fails(io::ErrorKind::Interrupted), false),
    ];
    for (answer, retried) in cases {
        let first = Backend::new("first", answer);
        let other = Backend::new("other", Answer::Status(200));
        let mut balance = retrying(quick(), &[&first, &other]);
        let result = first_on(&mut balance, &first, &[&other], get()).await;
        assert_eq!(other.calls(), u64::from(retried), "{answer:?}");
        assert_eq!(retries(&balance), (u64::from(retried), 0), "{answer:?}");
        match (retried, answer, result) {
            (true, _, Ok(r)) => assert_eq!(r.status(), 200, "{answer:?}"),
            (false, Answer::Status(s), Ok(r)) => assert_eq!(r.status(), s),
            (false, Answer::Fails(kind), Err(Error::Inner(e))) => {
                assert_eq!(
                    e.downcast_ref::<io::Error>().map(io::Error::kind),
                    Some(kind)
                );
            }
            (_, _, other) => panic!("{answer:?}: unexpected {other:?}"),
        }
        let st = settled(&balance);
        assert_eq!(st.acquired, 1 + u64::from(retried), "{answer:?}");
    }
}

#[tokio::test]
async fn only_idempotent_methods_are_retried_by_default() {
    for (method, retried) in [
        (Method::GET, true),
        (Method::HEAD, true),
        (Method::OPTIONS, true),
        (Method::PUT, true),
        (Method::DELETE, true),
        (Method::TRACE, true),
        (Method::POST, false),
        (Method::PATCH, false),
        (Method::CONNECT, false),
    ] {
        let bad = Backend::new("bad", Answer::Status(500));
        let good = Backend::new("good", Answer::Status(200));
        let mut balance = retrying(quick(), &[&bad, &good]);
        let response = first_on(&mut balance, &bad, &[&good], request(method.clone()))
            .await
            .unwrap();
        let expected = if retried { 200 } else { 500 };
        assert_eq!(response.status(), expected, "{method}");
        assert_eq!(good.calls(), u64::from(retried), "{method}");
        settled(&balance);
    }
}

#[tokio::test]
async fn the_caller_decides_which_requests_are_retried() {
    // This API's POSTs are idempotent (they carry an idempotency key), its DELETEs are not.
    let decide = |r: &Request<()>| (r.method() != Method::DELETE).then(|| r.clone());
    for (method, retried) in [(Method::POST, true), (Method::DELETE, false)] {
        let bad = Backend::new("bad", Answer::Status(500));
        let good = Backend::new("good", Answer::Status(200));
        let mut balance = retrying(quick().requests(decide), &[&bad, &good]);
        first_on(&mut balance, &bad, &[&good], request(method.clone()))
            .await
            .unwrap();
        assert_eq!(good.calls(), u64::from(retried), "{method}");
    }
}

#[tokio::test]
async fn retries_stop_after_the_tries_allowed_each_on_a_node_not_tried() {
    let nodes: Vec<Backend> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|n| Backend::new(n, Answer::Status(500)))
        .collect();
    let all: Vec<&Backend> = nodes.iter().collect();
    let mut balance = retrying(quick().retries(2), &all);
    for round in 1..=2u64 {
        let response = balance.ready().await.unwrap().call(get()).await.unwrap();
        assert_eq!(response.status(), 500);
        // Three attempts per request (the try and two retries), on three different nodes.
        let calls: Vec<u64> = nodes.iter().map(Backend::calls).collect();
        assert_eq!(calls.iter().sum::<u64>(), 3 * round, "{calls:?}");
        if round == 1 {
            assert_eq!(calls.iter().filter(|&&c| c == 1).count(), 3, "{calls:?}");
        }
        assert_eq!(retries(&balance), (2 * round, 0));
    }
    let st = settled(&balance);
    assert_eq!(st.released(Outcome::Failure), 6);
}

#[tokio::test]
async fn a_spent_budget_answers_with_the_last_attempt() {
    let none = Arc::new(
        RetryBudget::new(RetryBudgetConfig {
            ratio: 0.0,
            per_second: 0.0,
            ..RetryBudgetConfig::default()
        })
        .unwrap(),
    );
    let bad = Backend::new("bad", Answer::Status(500));
    let refused = Backend::new("refused", Answer::Fails(io::ErrorKind::ConnectionRefused));
    let good = Backend::new("good", Answer::Status(200));
    let retry = Retry::new().budget(Arc::clone(&none)).backoff(None);
    let mut balance = retrying(retry.clone(), &[&bad, &good]);
    let response = first_on(&mut balance, &bad, &[&good], get()).await.unwrap();
    assert_eq!(response.status(), 500);
    // An error is answered as itself.
    let mut balance = retrying(retry, &[&refused, &good]);
    match first_on(&mut balance, &refused, &[&good], get()).await {
        Err(Error::Inner(e)) => assert_eq!(
            e.downcast_ref::<io::Error>().map(io::Error::kind),
            Some(io::ErrorKind::ConnectionRefused)
        ),
        other => panic!("expected the refused connection's error, got {other:?}"),
    }
    assert_eq!(good.calls(), 0);
    // Both balances share the budget: two requests, two refusals, no retry.
    let st = none.stats(weir::rt::monotonic_now());
    assert_eq!((st.requests, st.retries, st.denied), (2, 0, 2));
}

#[tokio::test]
async fn the_budget_bounds_the_retries_of_a_failing_fleet() {
    const REQUESTS: u64 = 200;
    // 20 % of the requests plus a floor of 5 (0.5 a second over 10 s).
    let budget = Arc::new(
        RetryBudget::new(RetryBudgetConfig {
            per_second: 0.5,
            ..RetryBudgetConfig::default()
        })
        .unwrap(),
    );
    let nodes: Vec<Backend> = ["a", "b", "c"]
        .into_iter()
        .map(|n| Backend::new(n, Answer::Status(503)))
        .collect();
    let all: Vec<&Backend> = nodes.iter().collect();
    let mut balance = retrying(Retry::new().budget(Arc::clone(&budget)).backoff(None), &all);
    for _ in 0..REQUESTS {
        let response = balance.ready().await.unwrap().call(get()).await.unwrap();
        assert_eq!(response.status(), 503);
    }
    let st = budget.stats(weir::rt::monotonic_now());
    let calls: u64 = nodes.iter().map(Backend::calls).sum();
    assert_eq!(st.requests, REQUESTS);
    assert_eq!(calls, REQUESTS + st.retries);
    // Every request asked for one retry: admitted or refused.
    assert_eq!(st.retries + st.denied, REQUESTS);
    assert!(st.retries * 5 <= REQUESTS + 25, "{st:?}");
    assert!(st.denied > 0, "{st:?}");
    let bst = settled(&balance);
    assert_eq!(bst.released(Outcome::Dropped), calls);
}

#[tokio::test]
async fn every_balance_of_a_builder_shares_its_budget() {
    let bad = Backend::new("bad", Answer::Status(500));
    let good = Backend::new("good", Answer::Status(200));
    let builder = Builder::new(Config::default()).retry(quick());
    let list = || [("bad", bad.clone()), ("good", good.clone())];
    let mut one = builder.clone().build_list(list()).unwrap();
    let mut two = builder.build_list(list()).unwrap();
    let budget = Arc::clone(one.retry_budget().unwrap());
    assert!(Arc::ptr_eq(&budget, two.retry_budget().unwrap()));
    first_on(&mut one, &bad, &[&good], get()).await.unwrap();
    two.ready().await.unwrap().call(get()).await.unwrap();
    let st = budget.stats(weir::rt::monotonic_now());
    assert_eq!((st.requests, st.retries), (2, 1));
}

#[tokio::test]
async fn a_retry_pauses_as_the_backoff_says() {
    let backoff = Arc::new(
        Backoff::new(BackoffConfig {
            jitter: Jitter::None,
            ..BackoffConfig::default().initial(Duration::from_millis(5))
        })
        .unwrap(),
    );
    let bad = Backend::new("bad", Answer::Status(500));
    let good = Backend::new("good", Answer::Status(200));
    let retry = Retry::new()
        .budget(ample())
        .backoff(Some(Arc::clone(&backoff)));
    let mut balance = retrying(retry, &[&bad, &good]);
    let response = first_on(&mut balance, &bad, &[&good], get()).await.unwrap();
    assert_eq!(response.status(), 200);
    let st = backoff.stats();
    // The failure raised the interval and paused 5 ms; the success began the way down.
    assert_eq!((st.went_up, st.slept, st.sleep_ns), (1, 2, 10_000_000));
    assert_eq!(backoff.interval_ns(), 5_000_000);
}

/// A balance with room for one call at a time (its node's limit), waiting `wait` for room, with a
/// deadline of 1 s.
fn one_slot(wait: Duration) -> Builder {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }),
        ..Config::default()
    };
    Builder::new(config)
        .wait(wait)
        .deadline(Duration::from_secs(1))
}

/// The deadline covers the whole request, the wait for room in `poll_ready` included: a request that
/// waited 300 ms for the only slot has 700 ms left for its call, and ends 1 s after it began (it used to
/// end at 1.3 s), with or without retries. Paused time: the instants are exact.
#[tokio::test(start_paused = true)]
async fn the_deadline_counts_the_wait_for_room() {
    async fn ends_at<S>(mut balance: S) -> (Duration, Result<Response<()>, Error>)
    where
        S: Service<Request<()>, Response = Response<()>, Error = Error>,
    {
        let start = tokio::time::Instant::now();
        let held = balance.ready().await.unwrap().call(hang());
        let release = async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            drop(held);
        };
        let request = async {
            let answer = balance.ready().await.unwrap().call(hang()).await;
            (start.elapsed(), answer)
        };
        tokio::join!(release, request).1
    }
    let a = Backend::new("a", Answer::Status(200));
    let plain = one_slot(Duration::from_millis(500))
        .build_list([("a", a.clone())])
        .unwrap();
    let balancer = Arc::clone(plain.balancer());
    let (took, answer) = ends_at(plain).await;
    assert!(matches!(answer, Err(Error::DeadlinePassed)), "{answer:?}");
    assert_eq!(took, Duration::from_secs(1));
    let st = balancer.stats();
    assert_eq!((st.waits_granted, st.released(Outcome::Dropped)), (1, 1));

    let retrying = one_slot(Duration::from_millis(500))
        .retry(quick())
        .build_list([("a", a.clone())])
        .unwrap();
    let (took, answer) = ends_at(retrying).await;
    assert!(matches!(answer, Err(Error::DeadlinePassed)), "{answer:?}");
    assert_eq!(took, Duration::from_secs(1));
    assert_eq!(a.calls(), 4);
}

/// A wait for room longer than the deadline ends at the deadline: refused then (`Timeout`), nothing
/// sent (it used to wait its whole 2 s).
#[tokio::test(start_paused = true)]
async fn the_wait_for_room_ends_at_the_deadline() {
    let a = Backend::new("a", Answer::Status(200));
    let mut balance = one_slot(Duration::from_secs(2))
        .build_list([("a", a.clone())])
        .unwrap();
    let held = balance.ready().await.unwrap().call(hang());
    let start = tokio::time::Instant::now();
    let answer = balance.ready().await.unwrap().call(get()).await;
    assert_eq!(start.elapsed(), Duration::from_secs(1));
    assert!(
        matches!(answer, Err(Error::Refused(weir_tower::Refused::Timeout))),
        "{answer:?}"
    );
    drop(held);
    assert_eq!(a.calls(), 1);
    let st = balance.balancer().stats();
    assert_eq!((st.in_flight, st.waits_timed_out), (0, 1));
}

/// A lease that comes as the deadline passes (the wait took all of it) is not used: the call fails with
/// `DeadlinePassed` and sends nothing, its lease back as `Ignored`, not a timeout of the node.
#[tokio::test(start_paused = true)]
async fn a_lease_granted_at_the_deadline_sends_nothing() {
    let a = Backend::new("a", Answer::Status(200));
    let mut balance = one_slot(Duration::from_secs(2))
        .build_list([("a", a.clone())])
        .unwrap();
    let held = balance.ready().await.unwrap().call(hang());
    let mut ready = balance.ready();
    let mut cx = Context::from_waker(Waker::noop());
    assert!(Pin::new(&mut ready).poll(&mut cx).is_pending());
    tokio::time::advance(Duration::from_secs(1)).await;
    drop(held); // the release hands the lease to the waiting poll_ready before its timer is seen
    let answer = ready.await.unwrap().call(hang()).await;
    assert!(matches!(answer, Err(Error::DeadlinePassed)), "{answer:?}");
    assert_eq!(a.calls(), 1);
    let st = balance.balancer().stats();
    assert_eq!(
        (
            st.in_flight,
            st.waits_granted,
            st.released(Outcome::Ignored),
            st.released(Outcome::Dropped)
        ),
        (0, 1, 2, 0)
    );
}

/// A retrying balance answers a refusal as the plain one does: from the call, not from `poll_ready`.
#[tokio::test]
async fn a_refusal_is_the_answer_of_its_call() {
    let a = Backend::new("a", Answer::Status(200));
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }),
        ..Config::default()
    };
    let mut balance = Builder::new(config)
        .wait(Duration::ZERO)
        .retry(quick())
        .build_list([("a", a.clone())])
        .unwrap();
    let held = balance.ready().await.unwrap().call(hang());
    let err = (&mut balance).oneshot(get()).await.unwrap_err();
    assert_eq!(err.refused(), Some(weir_tower::Refused::AllBusy), "{err}");
    drop(held);
    let response = (&mut balance).oneshot(get()).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(a.calls(), 2);
    let st = settled(&balance);
    assert_eq!(
        (st.rejected_all_busy, st.released(Outcome::Success)),
        (1, 1)
    );
}

#[tokio::test]
async fn a_call_past_its_deadline_is_released_as_a_timeout() {
    let stuck = Backend::new("stuck", Answer::Stuck);
    let mut balance = Builder::new(Config::default())
        .deadline(Duration::from_millis(20))
        .build_list([("stuck", stuck.clone())])
        .unwrap();
    let call = balance.ready().await.unwrap().call(get());
    // Without the deadline the call never ends: this outer bound would fail the test.
    let answer = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("the deadline ended the call");
    assert!(matches!(answer, Err(Error::DeadlinePassed)), "{answer:?}");
    let st = balance.balancer().stats();
    assert_eq!(
        (
            st.in_flight,
            st.released(Outcome::Dropped),
            st.released(Outcome::Ignored)
        ),
        (0, 1, 0)
    );
    assert_eq!(
        Error::DeadlinePassed.to_string(),
        "the call's deadline passed before the balanced service answered"
    );
}

#[tokio::test]
async fn a_caller_that_drops_the_call_still_records_ignored() {
    let stuck = Backend::new("stuck", Answer::Stuck);
    let mut balance = Builder::new(Config::default())
        .deadline(Duration::from_secs(3600))
        .build_list([("stuck", stuck)])
        .unwrap();
    let call = balance.ready().await.unwrap().call(get());
    assert!(tokio::time::timeout(Duration::from_millis(10), call)
        .await
        .is_err());
    let st = balance.balancer().stats();
    assert_eq!(
        (
            st.in_flight,
            st.released(Outcome::Dropped),
            st.released(Outcome::Ignored)
        ),
        (0, 0, 1)
    );
}

#[tokio::test]
async fn the_deadline_bounds_the_retries() {
    let bad = Backend::new("bad", Answer::Status(500));
    let stuck = Backend::new("stuck", Answer::Stuck);
    let mut balance = Builder::new(Config::default())
        .deadline(Duration::from_millis(30))
        .retry(quick())
        .build_list([("bad", bad.clone()), ("stuck", stuck.clone())])
        .unwrap();
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        first_on(&mut balance, &bad, &[&stuck], get()),
    )
    .await
    .expect("the deadline ended the call");
    assert!(matches!(answer, Err(Error::DeadlinePassed)), "{answer:?}");
    assert_eq!(stuck.calls(), 1);
    let st = settled(&balance);
    assert_eq!(
        (st.released(Outcome::Failure), st.released(Outcome::Dropped)),
        (1, 1)
    );
}

#[tokio::test]
async fn a_pause_that_would_pass_the_deadline_is_not_taken() {
    let slow_backoff = Arc::new(
        Backoff::new(BackoffConfig {
            jitter: Jitter::None,
            ..BackoffConfig::default().initial(Duration::from_secs(60))
        })
        .unwrap(),
    );
    let bad = Backend::new("bad", Answer::Status(500));
    let good = Backend::new("good", Answer::Status(200));
    let mut balance = Builder::new(Config::default())
        .deadline(Duration::from_secs(1))
        .retry(Retry::new().budget(ample()).backoff(Some(slow_backoff)))
        .build_list([("bad", bad.clone()), ("good", good.clone())])
        .unwrap();
    let response = first_on(&mut balance, &bad, &[&good], get()).await.unwrap();
    assert_eq!(response.status(), 500);
    assert_eq!(good.calls(), 0);
    assert_eq!(retries(&balance), (0, 0));
}

#[test]
fn a_deadline_without_a_timer_is_an_error_not_a_panic() {
    let stuck = Backend::new("stuck", Answer::Stuck);
    let mut balance = Builder::new(Config::default())
        .deadline(Duration::from_millis(1))
        .build_list([("stuck", stuck)])
        .unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    assert!(matches!(balance.poll_ready(&mut cx), Poll::Ready(Ok(()))));
    let call = pin!(balance.call(get()));
    match call.poll(&mut cx) {
        Poll::Ready(Err(e @ Error::NoTimer)) => assert!(e.to_string().contains("tokio runtime")),
        other => panic!("expected NoTimer, got {other:?}"),
    }
    let st = balance.balancer().stats();
    assert_eq!((st.in_flight, st.released(Outcome::Ignored)), (0, 1));
}

/// A body that cannot be copied: such requests go through a balance without retries.
struct Streamed;

#[tokio::test]
async fn requests_that_cannot_be_copied_work_without_retries() {
    let svc =
        tower::service_fn(|_: Request<Streamed>| async { Ok::<_, Infallible>(Response::new(())) });
    let mut balance = Builder::new(Config::default())
        .build_list([("a", svc)])
        .unwrap();
    let response = balance
        .ready()
        .await
        .unwrap()
        .call(Request::new(Streamed))
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn the_metrics_name_the_retry_budget_and_the_backoff() {
    let bad = Backend::new("bad", Answer::Status(500));
    let good = Backend::new("good", Answer::Status(200));
    let retry = Retry::new().budget(ample()).backoff(Some(Arc::new(
        Backoff::new(BackoffConfig::default().initial(Duration::from_millis(1))).unwrap(),
    )));
    let mut balance = retrying(retry, &[&bad, &good]);
    let metrics = balance.metrics();
    first_on(&mut balance, &bad, &[&good], get()).await.unwrap();
    let mut text = String::new();
    balance
        .write_metrics(&mut text, &weir::metrics::MetricsFormat::default())
        .unwrap();
    for out in [text, metrics.to_string()] {
        assert!(
            out.contains("\nweir_retry_budget_requests_total 1\n"),
            "{out}"
        );
        assert!(
            out.contains("\nweir_retry_budget_retries_total 1\n"),
            "{out}"
        );
        assert!(
            out.contains("\nweir_backoff_invocations_total 2\n"),
            "{out}"
        );
        assert!(
            out.contains("weir_node_in_flight{node=\"good\"} 0\n"),
            "{out}"
        );
    }
    // Without retries, no such families.
    let plain = Builder::new(Config::default())
        .build_list([("a", good.clone())])
        .unwrap();
    let mut text = String::new();
    plain
        .write_metrics(&mut text, &weir::metrics::MetricsFormat::default())
        .unwrap();
    assert!(!text.contains("retry_budget"), "{text}");
}
