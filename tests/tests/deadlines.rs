//! Calls and waits under a deadline, with tokio's timers (issue 28's traps 1, 3 and 4): a call that an
//! outside timer abandons records `Dropped`, one the caller cancels `Ignored`; the async wait ends at its
//! deadline with `WaitError::Timeout`; the heap balancer's guards have names a struct can use.
//!
//! The timers are tokio's paused clock where the code under test reads none of its own (`within`), and
//! real short ones where it reads `Instant::now` (`with_deadline`): a tokio timer never fires before its
//! deadline, so those tests assert nothing about how late it fires.

use std::future::pending;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::{sleep_until, timeout_at, Instant};
use weir::limit::{FixedLimit, LimitAlgorithm};
use weir::rt::{DeadlinePassed, HeapOwnedLeaseGuard, Keyed, WaitError};
use weir::{Config, HeapBalancer, Outcome};

fn one_node(limit: u32) -> Arc<HeapBalancer> {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit }),
        max_waiters: 8,
        ..Config::default()
    };
    let b = Arc::new(HeapBalancer::with_capacity(1, config).unwrap());
    b.add(1).unwrap();
    b
}

/// A backend call that never answers (a black hole), holding its lease as a real call would.
async fn black_hole(_lease: HeapOwnedLeaseGuard) {
    pending::<()>().await
}

#[tokio::test]
async fn a_timeout_that_abandons_a_call_records_dropped() {
    let b = one_node(4);
    let deadline = Instant::now() + Duration::from_millis(20);
    let guard = Arc::clone(&b)
        .acquire_owned()
        .unwrap()
        .with_deadline(deadline.into_std());
    assert!(timeout_at(deadline, black_hole(guard)).await.is_err());
    let st = b.stats();
    assert_eq!(
        (
            st.released(Outcome::Dropped),
            st.released(Outcome::Ignored),
            st.in_flight
        ),
        (1, 0, 0)
    );
}

#[tokio::test]
async fn a_call_cancelled_before_its_deadline_records_ignored() {
    let b = one_node(4);
    let deadline = Instant::now() + Duration::from_secs(3600);
    let guard = Arc::clone(&b)
        .acquire_owned()
        .unwrap()
        .with_deadline(deadline.into_std());
    let call = tokio::spawn(timeout_at(deadline, black_hole(guard)));
    tokio::task::yield_now().await;
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let st = b.stats();
    assert_eq!(
        (
            st.released(Outcome::Dropped),
            st.released(Outcome::Ignored),
            st.in_flight
        ),
        (0, 1, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn within_records_dropped_when_its_timer_wins_and_the_outcome_otherwise() {
    let b = one_node(4);
    let guard = Arc::clone(&b).acquire_owned().unwrap();
    let deadline = Instant::now() + Duration::from_secs(1);
    let late = async {
        sleep_until(deadline + Duration::from_secs(1)).await;
        200u16
    };
    let answer = guard
        .within(sleep_until(deadline), late, |_| Outcome::Success)
        .await;
    assert_eq!(answer, Err(DeadlinePassed));

    let guard = Arc::clone(&b).acquire_owned().unwrap();
    let deadline = Instant::now() + Duration::from_secs(1);
    let prompt = async {
        sleep_until(deadline - Duration::from_millis(500)).await;
        503u16
    };
    let answer = guard
        .within(sleep_until(deadline), prompt, |s| {
            Outcome::from_http_status(*s).unwrap_or(Outcome::Failure)
        })
        .await;
    assert_eq!(answer, Ok(503));
    let st = b.stats();
    // The timeout, then the 503 (also `Dropped`): two, and no success.
    assert_eq!(
        (
            st.released(Outcome::Dropped),
            st.released(Outcome::Success),
            st.in_flight
        ),
        (2, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn within_cancelled_by_its_caller_records_ignored() {
    let b = one_node(4);
    let guard = Arc::clone(&b).acquire_owned().unwrap();
    let far = Instant::now() + Duration::from_secs(3600);
    let call = guard.within(sleep_until(far), pending::<()>(), |_| Outcome::Success);
    // The caller's own, shorter timer abandons the whole call: the caller's decision, not the node's.
    let near = Instant::now() + Duration::from_secs(1);
    assert!(timeout_at(near, call).await.is_err());
    let st = b.stats();
    assert_eq!(
        (
            st.released(Outcome::Ignored),
            st.released(Outcome::Dropped),
            st.in_flight
        ),
        (1, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn the_async_wait_ends_at_its_deadline() {
    let b = one_node(1);
    let held = Arc::clone(&b).acquire_owned().unwrap();
    let deadline = Instant::now() + Duration::from_secs(1);
    let answer = Arc::clone(&b)
        .acquire_async_owned()
        .within(sleep_until(deadline))
        .await;
    assert_eq!(answer.err(), Some(WaitError::Timeout));
    assert!(Instant::now() >= deadline);
    let st = b.stats();
    assert_eq!(
        (
            st.waits,
            st.waits_timed_out,
            st.waits_cancelled,
            st.rejected_all_busy,
            st.waiting
        ),
        (1, 1, 0, 1, 0)
    );

    // A release before the deadline serves the wait.
    let waiter = tokio::spawn(
        Arc::clone(&b)
            .acquire_async_owned()
            .within(sleep_until(Instant::now() + Duration::from_secs(10))),
    );
    tokio::time::sleep(Duration::from_secs(1)).await;
    held.complete(Outcome::Success).unwrap();
    let guard = waiter.await.unwrap().unwrap();
    assert_eq!(guard.node_id(), 1);
    assert_eq!(b.stats().waits_granted, 1);
}

/// A call in progress kept in a struct: the field's type names no storage.
struct Pending {
    lease: HeapOwnedLeaseGuard,
}

#[test]
fn the_heap_guards_have_names() {
    let b = one_node(4);
    let pending = Pending {
        lease: Arc::clone(&b).acquire_owned().unwrap(),
    };
    assert_eq!(pending.lease.node_id(), 1);
    let borrowed: weir::rt::HeapLeaseGuard<'_> = b.acquire_guard().unwrap();
    assert_eq!(b.stats().in_flight, 2);
    drop((pending, borrowed));
    assert_eq!(b.stats().released(Outcome::Ignored), 2);
}

#[tokio::test(start_paused = true)]
async fn a_keyed_call_and_wait_keep_their_deadlines() {
    let config = Config {
        limit: LimitAlgorithm::Fixed(FixedLimit { limit: 1 }),
        max_waiters: 8,
        ..Config::default()
    };
    let keyed = Arc::new(Keyed::with_capacity(2, config).unwrap());
    keyed.add("10.0.0.1:80").unwrap();
    let held = keyed.acquire().unwrap();
    assert_eq!(*held.key(), "10.0.0.1:80");
    // The only node is at its limit: the wait ends at its deadline.
    let deadline = Instant::now() + Duration::from_secs(1);
    let waited = keyed.acquire_within(sleep_until(deadline)).await;
    assert_eq!(waited.err(), Some(WaitError::Timeout));
    // The held call never answers: its deadline records Dropped.
    let call = held.within(
        sleep_until(Instant::now() + Duration::from_secs(1)),
        pending::<u16>(),
        |_| Outcome::Success,
    );
    assert_eq!(call.await, Err(DeadlinePassed));
    let st = keyed.balancer().stats();
    assert_eq!(
        (
            st.released(Outcome::Dropped),
            st.waits_timed_out,
            st.in_flight
        ),
        (1, 1, 0)
    );
}

/// Keyed balancers and their guards cross threads: shared by reference or `Arc`, guards into tasks.
#[test]
fn keyed_is_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send + 'static>() {}
    send_sync::<Keyed<String>>();
    send::<weir::rt::KeyedGuard<String>>();
    send::<HeapOwnedLeaseGuard>();
    let keyed = Keyed::with_capacity(1, Config::default()).unwrap();
    keyed.add(String::from("a")).unwrap();
    let guard = keyed.acquire().unwrap();
    let key = std::thread::spawn(move || {
        let key = guard.key().clone();
        guard.complete(Outcome::Success).map(|()| key)
    })
    .join()
    .unwrap();
    assert_eq!(key.as_deref(), Ok("a"));
}
