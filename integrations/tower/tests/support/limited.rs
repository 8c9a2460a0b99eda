//! A backend with a fixed capacity, as a real server has: a few workers, each request holding one for its
//! service time; a bounded queue of requests waiting for a worker, past which a request is answered 503
//! at once; and a switch that makes it answer 500 at once, without a worker, while it is on. It records
//! when each request arrived, so that a test can compute each backend's share of the calls over time.

use super::{answer, listen};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;

/// What a limited backend can do: `workers / service` requests a second.
#[derive(Clone, Copy, Debug)]
pub struct Capacity {
    /// Requests served at once.
    pub workers: usize,
    /// Requests that may wait for a worker; one more is answered 503 at once.
    pub queue: usize,
    /// How long a worker takes over each request.
    pub service: Duration,
}

impl Capacity {
    /// Requests a second it serves when every worker is busy.
    pub fn per_second(&self) -> f64 {
        self.workers as f64 / self.service.as_secs_f64()
    }
}

/// A running limited backend (its clones share it).
#[derive(Clone)]
pub struct Limited {
    pub addr: SocketAddr,
    state: Arc<State>,
}

struct State {
    name: &'static str,
    capacity: Capacity,
    workers: Semaphore,
    /// Requests being served or waiting for a worker.
    in_progress: AtomicUsize,
    failing: AtomicBool,
    shed: AtomicU64,
    arrivals: Mutex<Vec<Instant>>,
}

impl Limited {
    /// Turns the switch on (500 to every request, at once) or off.
    pub fn fail(&self, failing: bool) {
        self.state.failing.store(failing, SeqCst);
    }

    /// When each request arrived, in order.
    pub fn arrivals(&self) -> Vec<Instant> {
        self.state.arrivals.lock().unwrap().clone()
    }

    /// Requests answered 503 because the queue was full.
    pub fn shed(&self) -> u64 {
        self.state.shed.load(SeqCst)
    }
}

/// Starts a limited backend named `name` (its `x-node` header) on 127.0.0.1 in the current runtime.
pub async fn serve_limited(name: &'static str, capacity: Capacity) -> Limited {
    let state = Arc::new(State {
        name,
        capacity,
        workers: Semaphore::new(capacity.workers),
        in_progress: AtomicUsize::new(0),
        failing: AtomicBool::new(false),
        shed: AtomicU64::new(0),
        arrivals: Mutex::new(Vec::new()),
    });
    let serving = Arc::clone(&state);
    let addr = listen(move |_| {
        let state = Arc::clone(&serving);
        async move { answer(state.name, state.status().await) }
    })
    .await;
    Limited { addr, state }
}

impl State {
    async fn status(&self) -> u16 {
        self.arrivals.lock().unwrap().push(Instant::now());
        if self.failing.load(SeqCst) {
            return 500;
        }
        let Some(_place) = Place::take(
            &self.in_progress,
            self.capacity.workers + self.capacity.queue,
        ) else {
            self.shed.fetch_add(1, SeqCst);
            return 503;
        };
        // tokio's semaphore is fair: the queue is served in arrival order.
        let _worker = self.workers.acquire().await.unwrap();
        tokio::time::sleep(self.capacity.service).await;
        200
    }
}

/// A request's place among those in progress, given back when it is answered or its client goes away
/// (hyper drops the service's future).
struct Place<'a>(&'a AtomicUsize);

impl<'a> Place<'a> {
    fn take(in_progress: &'a AtomicUsize, bound: usize) -> Option<Self> {
        in_progress
            .fetch_update(SeqCst, SeqCst, |n| (n < bound).then_some(n + 1))
            .ok()
            .map(|_| Place(in_progress))
    }
}

impl Drop for Place<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}
