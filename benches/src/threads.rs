//! Several threads on one balancer, and the core-to-core round trip that makes their result readable.
//!
//! A [`Crew`] runs a *main* workload on the calling thread, timed, while helper threads run theirs on
//! the same balancer without pause. Each timed run starts only once every helper is running, and the
//! helpers stop only after the main thread's last pair, so every timed pair is contended. The helpers
//! sleep (on a barrier) between runs, so an idle benchmark burns no CPU on a shared 2-core machine.
//! The result is the main thread's time per pair: the *per-thread* cost; the helpers' own time per pair
//! is kept too ([`Crew::helper_ns_per_pair`]), since the threads need not be placed alike.
//!
//! [`RoundTrip`] is a crew of two: a [`Ping`] that writes an odd number into one padded word and waits
//! for the [`Pong`] thread to answer with the next even one. One iteration is one round trip: two
//! cache-line transfers between the two cores, whichever cores the VM gave the threads.
//!
//! ```
//! use weir_benches::{Crew, RoundTrip, WeirLoad};
//! use std::sync::Arc;
//!
//! let main = WeirLoad::new(16, weir::Config::default()); // or Config::cascade(): the multi-thread benchmarks run both
//! let helper = WeirLoad::on(Arc::clone(main.balancer()), 1);
//! let mut crew = Crew::new(main, vec![helper]);
//! let per_thread = crew.run(1_000); // 1,000 pairs on this thread, contended by the helper's
//! assert!(per_thread.as_nanos() > 0);
//!
//! let mut rt = RoundTrip::new();
//! rt.run(100);
//! ```

use crate::floors::Padded;
use crate::Workload;
use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// What the main thread and the helpers share.
#[derive(Debug)]
struct Control {
    start: Barrier,
    end: Barrier,
    stop: AtomicBool,
    quit: AtomicBool,
    running: AtomicUsize,
    helper_pairs: AtomicU64,
    helper_ns: AtomicU64,
}

/// A timed workload on this thread, contended by helper threads (see the [module](self) docs).
#[derive(Debug)]
pub struct Crew<M, H> {
    /// `None` only after `finish`.
    main: Option<M>,
    ctl: Arc<Control>,
    helpers: Vec<JoinHandle<H>>,
}

impl<M: Workload, H: Workload + Send + 'static> Crew<M, H> {
    /// Starts one thread per helper workload; they wait for the first [`run`](Self::run).
    pub fn new(main: M, helpers: Vec<H>) -> Self {
        let ctl = Arc::new(Control {
            start: Barrier::new(helpers.len() + 1),
            end: Barrier::new(helpers.len() + 1),
            stop: AtomicBool::new(false),
            quit: AtomicBool::new(false),
            running: AtomicUsize::new(0),
            helper_pairs: AtomicU64::new(0),
            helper_ns: AtomicU64::new(0),
        });
        let helpers = helpers
            .into_iter()
            .map(|mut w| {
                let ctl = Arc::clone(&ctl);
                std::thread::spawn(move || {
                    loop {
                        ctl.start.wait();
                        // Relaxed: the barrier orders this load after the main thread's store.
                        if ctl.quit.load(Ordering::Relaxed) {
                            return w;
                        }
                        // Release: the main thread starts its clock once it sees every helper here.
                        ctl.running.fetch_add(1, Ordering::Release);
                        let t0 = Instant::now();
                        let mut pairs = 0u64;
                        // Relaxed: only a signal to stop; the end barrier orders everything after it.
                        while !ctl.stop.load(Ordering::Relaxed) {
                            w.pair();
                            pairs += 1;
                        }
                        let ns = u64::try_from(t0.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        // Relaxed: statistics, read after the end barrier.
                        ctl.helper_pairs.fetch_add(pairs, Ordering::Relaxed);
                        ctl.helper_ns.fetch_add(ns, Ordering::Relaxed);
                        ctl.end.wait();
                    }
                })
            })
            .collect();
        Crew {
            main: Some(main),
            ctl,
            helpers,
        }
    }

    /// Runs `iters` pairs of the main workload while every helper runs pairs without pause; returns the
    /// main thread's time for them (the per-thread time, as criterion's `iter_custom` wants it).
    pub fn run(&mut self, iters: u64) -> Duration {
        // Relaxed: the start barrier publishes these stores to the helpers.
        self.ctl.stop.store(false, Ordering::Relaxed);
        self.ctl.running.store(0, Ordering::Relaxed);
        self.ctl.start.wait();
        // Acquire: pairs with each helper's Release; waiting here keeps the helpers' wake-up latency
        // out of the timed region (yielding, in case a helper waits for this very core).
        while self.ctl.running.load(Ordering::Acquire) < self.helpers.len() {
            std::thread::yield_now();
        }
        let main = self
            .main
            .as_mut()
            .expect("the main workload is there until finish");
        let t0 = Instant::now();
        for _ in 0..iters {
            main.pair();
        }
        let elapsed = t0.elapsed();
        // Relaxed: see the helpers' loop.
        self.ctl.stop.store(true, Ordering::Relaxed);
        self.ctl.end.wait();
        elapsed
    }

    /// The helpers' mean time per pair over every run so far (`None` before any helper pair).
    pub fn helper_ns_per_pair(&self) -> Option<f64> {
        // Relaxed: read after the end barrier of the last run.
        let pairs = self.ctl.helper_pairs.load(Ordering::Relaxed);
        let ns = self.ctl.helper_ns.load(Ordering::Relaxed);
        (pairs > 0).then(|| ns as f64 / pairs as f64)
    }

    /// Stops the helpers and returns every workload, the main one first.
    pub fn finish(mut self) -> (M, Vec<H>) {
        let helpers = self.stop_helpers();
        let main = self
            .main
            .take()
            .expect("the main workload is there until finish");
        (main, helpers)
    }

    fn stop_helpers(&mut self) -> Vec<H> {
        if self.helpers.is_empty() {
            return Vec::new();
        }
        // Relaxed: the start barrier publishes it.
        self.ctl.quit.store(true, Ordering::Relaxed);
        self.ctl.start.wait();
        self.helpers
            .drain(..)
            .map(|h| h.join().expect("a helper thread panicked"))
            .collect()
    }
}

impl<M, H> Drop for Crew<M, H> {
    fn drop(&mut self) {
        if self.helpers.is_empty() {
            return;
        }
        // As in `stop_helpers` (which needs the `Workload` bounds to name the join's result).
        self.ctl.quit.store(true, Ordering::Relaxed);
        self.ctl.start.wait();
        for h in self.helpers.drain(..) {
            // A helper's panic was already reported on its thread; dropping must not panic again.
            let _ = h.join();
        }
    }
}

/// The pinging side of a [`RoundTrip`]: one `pair` is one round trip.
#[derive(Debug)]
pub struct Ping {
    word: Arc<Padded>,
    seq: u64,
}

/// Polls of the word after which a waiting side yields its core: when the VM has put both threads on
/// one core (or another process holds the other), spinning would hold the answer back for a whole time
/// slice. A round trip between two running cores takes far fewer polls.
const SPINS_BEFORE_YIELD: u32 = 1 << 8;

impl Workload for Ping {
    #[inline]
    fn pair(&mut self) {
        self.seq += 2;
        // Release/Acquire: the message is the value itself; these are the orderings a real hand-off uses.
        self.word.0.store(self.seq - 1, Ordering::Release);
        let mut spins = 0u32;
        while self.word.0.load(Ordering::Acquire) != self.seq {
            spins += 1;
            if spins % SPINS_BEFORE_YIELD == 0 {
                std::thread::yield_now();
            } else {
                spin_loop();
            }
        }
    }
}

/// The answering side of a [`RoundTrip`]: one `pair` is one look at the word, answering an odd value.
#[derive(Debug)]
pub struct Pong {
    word: Arc<Padded>,
    idle: u32,
}

impl Workload for Pong {
    #[inline]
    fn pair(&mut self) {
        // Acquire/Release: see `Ping`.
        let v = self.word.0.load(Ordering::Acquire);
        if v & 1 == 1 {
            self.word.0.store(v + 1, Ordering::Release);
            self.idle = 0;
        } else {
            self.idle += 1;
            if self.idle % SPINS_BEFORE_YIELD == 0 {
                std::thread::yield_now();
            } else {
                spin_loop();
            }
        }
    }
}

/// The core-to-core round trip: two threads passing one padded word back and forth (see the
/// [module](self) docs). Half a round trip is one cache-line transfer.
#[derive(Debug)]
pub struct RoundTrip {
    crew: Crew<Ping, Pong>,
}

impl RoundTrip {
    /// Starts the answering thread.
    pub fn new() -> Self {
        let word = Arc::new(Padded::default());
        let ping = Ping {
            word: Arc::clone(&word),
            seq: 0,
        };
        RoundTrip {
            crew: Crew::new(ping, vec![Pong { word, idle: 0 }]),
        }
    }

    /// Makes `iters` round trips; returns their total time.
    pub fn run(&mut self, iters: u64) -> Duration {
        self.crew.run(iters)
    }

    /// Runs batches of `per_batch` round trips for about `budget` (at least `min_batches` of them) and
    /// returns the nanoseconds per round trip of each batch, sorted. Its low quantiles are the
    /// core-to-core latency of batches during which both threads held a core, which on a busy shared
    /// machine the median of a long run is not.
    pub fn batches(&mut self, per_batch: u64, min_batches: usize, budget: Duration) -> Vec<f64> {
        let start = Instant::now();
        let mut out = Vec::new();
        while out.len() < min_batches || start.elapsed() < budget {
            out.push(self.run(per_batch).as_nanos() as f64 / per_batch as f64);
            if out.len() >= 10_000 {
                break;
            }
        }
        out.sort_by(f64::total_cmp);
        out
    }

    /// Round trips made so far.
    pub fn trips(&self) -> u64 {
        self.crew.main.as_ref().map_or(0, |p| p.seq / 2)
    }
}

impl Default for RoundTrip {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MutexBalancer, MutexLoad, WeirLoad, OUTSTANDING};
    use weir::Outcome;

    #[test]
    fn two_threads_share_one_balancer_and_conserve_counts() {
        for (name, config) in crate::bases() {
            let main = WeirLoad::new(16, config);
            let balancer = Arc::clone(main.balancer());
            let mut crew = Crew::new(main, vec![WeirLoad::on(Arc::clone(&balancer), 1)]);
            for _ in 0..5 {
                crew.run(2_000);
            }
            assert!(crew.helper_ns_per_pair().is_some());
            let helper_pairs = crew.ctl.helper_pairs.load(Ordering::Relaxed);
            let (mut main, helpers) = crew.finish();
            main.drain();
            for mut h in helpers {
                h.drain();
            }
            let st = balancer.stats();
            assert_eq!(st.in_flight, 0, "{name}");
            assert_eq!(
                st.acquired,
                10_000 + helper_pairs + 2 * OUTSTANDING as u64,
                "{name}"
            );
            assert_eq!(st.released_total(), st.acquired, "{name}");
            assert!(st.released(Outcome::Success) > st.acquired / 2, "{name}");
        }
    }

    #[test]
    fn mutex_crew_runs() {
        let shared = Arc::new(MutexBalancer::new(16));
        let main = MutexLoad::on(Arc::clone(&shared), 16, 0);
        let mut crew = Crew::new(main, vec![MutexLoad::on(shared, 16, 1)]);
        crew.run(1_000);
        // Dropping a crew without `finish` stops its helpers too.
        drop(crew);
    }

    #[test]
    fn round_trips_are_answered() {
        let mut rt = RoundTrip::new();
        rt.run(1_000);
        rt.run(500);
        assert_eq!(rt.trips(), 1_500);
        let batches = rt.batches(10, 5, Duration::ZERO);
        assert_eq!(batches.len(), 5);
        assert!(batches.windows(2).all(|w| w[0] <= w[1]) && batches[0] > 0.0);
        assert_eq!(rt.trips(), 1_550);
        // Every ping was answered: the word holds the last even value.
        assert_eq!(
            rt.crew
                .main
                .as_ref()
                .unwrap()
                .word
                .0
                .load(Ordering::Relaxed),
            3_100
        );
    }
}
