//! A request through the balance allocates nothing: `poll_ready` (the acquire), `call` (the inner
//! call and the response future) and the response's completion (the release), over a service whose own
//! calls allocate nothing. tower's `Balance` allocates once per request (`benches/RESULTS.md`).

use std::convert::Infallible;
use std::future::{ready, Future, Ready};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;
use tower::Service;
use weir::{Config, Outcome};
use weir_alloc_counter::{count, CountingAlloc};
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
