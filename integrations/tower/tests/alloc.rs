//! A request through the balance allocates nothing: `poll_ready` (the acquire), `call` (the inner
//! call and the response future) and the response's completion (the release), over a service whose own
//! calls allocate nothing. tower's `Balance` allocates once per request (`benches/RESULTS.md`). With
//! retries on, a request that fails and is retried on another node allocates nothing either (its
//! request is copied by the caller's function, here a `Copy`).

use std::convert::Infallible;
use std::future::{ready, Future, Ready};
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tower::Service;
use weir::overload::RetryBudgetConfig;
use weir::{Config, Outcome, RetryBudget};
use weir_alloc_counter::{count, CountingAlloc};
use weir_tower::retry::Retry;
use weir_tower::{Builder, ByResult};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Answers at once, allocating nothing.
#[derive(Clone, Copy)]
struct Backend;

impl Service<u32> for Backend {
    type Response = u32;
    type Error = Infallible;
    type Future = Ready<Result<u32, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> Self::Future {
        ready(Ok(request))
    }
}

#[test]
fn a_request_allocates_nothing() {
    const REQUESTS: u32 = 1_000;
    let mut balance = Builder::new(Config::default())
        .classify(ByResult)
        .wait(Duration::ZERO)
        .build_list((0..16u32).map(|i| (i, Backend)))
        .unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let mut one = |i: u32| {
        assert!(matches!(balance.poll_ready(&mut cx), Poll::Ready(Ok(()))));
        let call = pin!(balance.call(i));
        assert!(matches!(call.poll(&mut cx), Poll::Ready(Ok(r)) if r == i));
    };
    // The first poll ends the (empty) discovery; the thread's first clock read sets the clock's origin.
    one(0);
    let ((), allocations) = count(|| (1..=REQUESTS).for_each(&mut one));
    assert_eq!(allocations, 0);
    // The counter works in this binary: one box is one allocation.
    assert_eq!(count(|| drop(std::hint::black_box(Box::new(0u64)))).1, 1);
    let stats = balance.balancer().stats();
    assert_eq!(
        (stats.in_flight, stats.released(Outcome::Success)),
        (0, u64::from(REQUESTS) + 1)
    );
}

/// Answers `FAILED` to every other call (the count shared by its clones), the request otherwise.
#[derive(Clone)]
struct Flaky(Arc<AtomicU64>);

const FAILED: u32 = u32::MAX;

impl Service<u32> for Flaky {
    type Response = u32;
    type Error = Infallible;
    type Future = Ready<Result<u32, Infallible>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: u32) -> Self::Future {
        // Relaxed: one thread.
        let n = self.0.fetch_add(1, Relaxed);
        ready(Ok(if n % 2 == 1 { FAILED } else { request }))
    }
}

#[test]
fn a_retried_request_allocates_nothing() {
    const REQUESTS: u32 = 1_000;
    let calls = Arc::new(AtomicU64::new(0));
    let budget = RetryBudget::new(RetryBudgetConfig {
        ratio: 1.0,
        ..RetryBudgetConfig::default()
    })
    .unwrap();
    let budget = Arc::new(budget);
    let retry = Retry::new()
        .requests(|r: &u32| Some(*r))
        .budget(Arc::clone(&budget))
        .backoff(None);
    let classify = |r: &u32| {
        if *r == FAILED {
            Outcome::Failure
        } else {
            Outcome::Success
        }
    };
    let mut balance = Builder::new(Config::default())
        .classify(classify)
        .wait(Duration::ZERO)
        .retry(retry)
        .build_list((0..16u32).map(|i| (i, Flaky(Arc::clone(&calls)))))
        .unwrap();
    let mut cx = Context::from_waker(Waker::noop());
    let mut one = |i: u32| {
        assert!(matches!(balance.poll_ready(&mut cx), Poll::Ready(Ok(()))));
        let call = pin!(balance.call(i));
        assert!(matches!(call.poll(&mut cx), Poll::Ready(Ok(r)) if r == i));
    };
    // The first requests: the empty discovery ends, the clock's origin is set, and the thread's
    // generator for the retries is made (the first retry is the second request's).
    one(0);
    one(1);
    let ((), allocations) = count(|| (2..=REQUESTS).for_each(&mut one));
    assert_eq!(allocations, 0);
    // Every request after the first failed once and was retried: the path measured is the retry's.
    let stats = budget.stats(weir::rt::monotonic_now());
    assert_eq!(
        (stats.requests, stats.retries),
        (u64::from(REQUESTS) + 1, u64::from(REQUESTS))
    );
    let st = balance.balancer().stats();
    assert_eq!(st.in_flight, 0);
    assert_eq!(st.released(Outcome::Failure), u64::from(REQUESTS));
}

#[test]
fn reading_a_load_report_allocates_nothing() {
    use weir_tower::classify::{OrcaLoad, ENDPOINT_LOAD_METRICS};
    use weir_tower::{Classify, HttpStatus};
    let answer = |lines: &[&'static str]| {
        let mut response = http::Response::new(());
        for line in lines {
            let value = http::HeaderValue::from_static(line);
            response.headers_mut().append(ENDPOINT_LOAD_METRICS, value);
        }
        response
    };
    let responses = [
        answer(&["application_utilization:0.62, cpu_utilization:0.55, rps_fractional:120"]),
        answer(&["TEXT named_metrics.q=3", "TEXT cpu_utilization=1.5"]),
        answer(&["cpu_utilization:0.5, garbage"]),
        answer(&[]),
    ];
    let classify = OrcaLoad(HttpStatus);
    let (loads, allocations) = count(|| responses.each_ref().map(|r| classify.load(r)));
    assert_eq!(allocations, 0);
    let permille = loads.map(|l| l.map(weir::limit::ServerLoad::permille));
    assert_eq!(permille, [Some(620), Some(1_500), None, None]);
}
