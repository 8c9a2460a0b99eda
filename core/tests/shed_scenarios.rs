//! Shedder scenarios on a virtual clock: one request per millisecond, each answered after a response time
//! the phase chooses, with the CPU reading the phase chooses. Each test asserts numbers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use weir::{overload::Promise, overload::RawPromise, overload::ShedderConfig, Rng, Shedder};

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;

/// Drives a shedder with one request per ms; completions are delivered in time order.
struct Sim {
    s: Shedder,
    now: u64,
    /// (due, start) of admitted requests.
    pending: BinaryHeap<Reverse<(u64, u64)>>,
    /// Drops per whole second of virtual time.
    drops: Vec<u64>,
    max_in_flight: Vec<u64>,
}

impl Sim {
    fn new() -> Sim {
        Sim {
            s: Shedder::new(ShedderConfig::default()).unwrap(),
            now: 0,
            pending: BinaryHeap::new(),
            drops: Vec::new(),
            max_in_flight: Vec::new(),
        }
    }

    /// Runs until `until`, with `rt(now)` response times and `cpu(now)` readings.
    fn run(&mut self, until: u64, mut rt: impl FnMut(u64) -> u64, mut cpu: impl FnMut(u64) -> u32) {
        while self.now < until {
            self.now += MS;
            while let Some(&Reverse((due, start))) = self.pending.peek() {
                if due > self.now {
                    break;
                }
                self.pending.pop();
                let p = Promise::from_raw(RawPromise { start });
                self.s.success(p, due).unwrap();
            }
            let sec = (self.now / SEC) as usize;
            if self.drops.len() <= sec {
                self.drops.resize(sec + 1, 0);
                self.max_in_flight.resize(sec + 1, 0);
            }
            match self.s.allow(cpu(self.now), self.now) {
                Ok(p) => {
                    let start = p.into_raw().start;
                    self.pending.push(Reverse((self.now + rt(self.now), start)));
                }
                Err(_) => self.drops[sec] += 1,
            }
            let f = self.s.stats(self.now).in_flight;
            self.max_in_flight[sec] = self.max_in_flight[sec].max(f);
        }
    }

    /// Completes everything still pending and checks the counters balance.
    fn drain(&mut self) {
        while let Some(Reverse((due, start))) = self.pending.pop() {
            self.s
                .success(Promise::from_raw(RawPromise { start }), due)
                .unwrap();
        }
        let st = self.s.stats(self.now);
        assert_eq!(st.in_flight, 0, "{st:?}");
        assert_eq!(st.allowed, st.succeeded + st.failed, "{st:?}");
        assert_eq!(st.allowed + st.dropped, self.now / MS, "{st:?}");
        assert_eq!(st.dropped, self.drops.iter().sum::<u64>());
    }
}

#[test]
fn steady_load_under_the_threshold_never_drops() {
    let mut sim = Sim::new();
    let mut rng = Rng::with_seed(4);
    let mut cpu_rng = Rng::with_seed(5);
    // 60 s of 1,000 requests/s, alternating every 5 s between fast (1–10 ms) and slow (300–500 ms)
    // responses, so in flight swings between a few and several hundred, with the CPU anywhere below the
    // 900 threshold.
    let rt = |now: u64| {
        if (now / (5 * SEC)) % 2 == 0 {
            rng.u64(1..=10) * MS
        } else {
            rng.u64(300..=500) * MS
        }
    };
    sim.run(60 * SEC, rt, |_| cpu_rng.u32(0..900));
    assert_eq!(sim.drops.iter().sum::<u64>(), 0);
    assert!(
        *sim.max_in_flight.iter().max().unwrap() > 350,
        "{:?}",
        sim.max_in_flight
    );
    sim.drain();
}

#[test]
fn cpu_spike_with_in_flight_growth_drops_then_recovers_after_the_cool_off() {
    let mut sim = Sim::new();
    // A: 10 s healthy: 20 ms responses, CPU 400. Little's law: 20 in flight, max_flight 100 × 20 / 100 = 20.
    sim.run(10 * SEC, |_| 20 * MS, |_| 400);
    assert_eq!(sim.drops.iter().sum::<u64>(), 0);
    let st = sim.s.stats(sim.now);
    assert_eq!((st.max_pass, st.min_rt_ms, st.max_flight), (100, 20, 20.0));
    assert!((19..=21).contains(&st.in_flight), "{st:?}");

    // B: 5 s overloaded: CPU 950 (factor 0.5) and responses slow to 100 ms, so in flight would reach 100.
    sim.run(15 * SEC, |_| 100 * MS, |_| 950);
    let b_drops: u64 = sim.drops[10..15].iter().sum();
    assert!(b_drops > 3_000, "dropped {b_drops} of 5,000");
    // The shedder holds in flight near the limit (10, then lower as the window learns the new rates).
    let held = sim.max_in_flight[11..15].iter().max().unwrap();
    assert!(*held <= 12, "max in flight {held} (100 without shedding)");

    // C: the CPU is back to 500 at 15 s but responses stay slow (in flight still over the limit): the
    // shedder keeps dropping through the 1 s cool-off after the last overload reading, then stops.
    sim.run(20 * SEC, |_| 100 * MS, |_| 500);
    println!("drops per second, 10–20 s: {:?}", &sim.drops[10..20]);
    println!(
        "max in flight per second, 10–20 s: {:?}",
        &sim.max_in_flight[10..20]
    );
    assert!(
        sim.drops[15] > 0,
        "no drops in the cool-off: {:?}",
        &sim.drops[10..20]
    );
    assert_eq!(
        sim.drops[16..20].iter().sum::<u64>(),
        0,
        "{:?}",
        &sim.drops[10..20]
    );
    // Everything is admitted again: in flight climbs to 100 (1 request/ms × 100 ms).
    assert!(
        sim.max_in_flight[19] >= 99,
        "{:?}",
        &sim.max_in_flight[15..20]
    );

    // D: healthy again.
    sim.run(30 * SEC, |_| 20 * MS, |_| 400);
    assert_eq!(sim.drops[20..30].iter().sum::<u64>(), 0);
    sim.drain();
}

#[test]
fn a_cpu_spike_without_in_flight_growth_drops_little() {
    // The CPU goes over the threshold but the work does not pile up: both the instant in-flight count and
    // its average must exceed the (CPU-scaled) limit before anything is dropped.
    let mut sim = Sim::new();
    sim.run(10 * SEC, |_| 20 * MS, |_| 400);
    // Slightly hot (910: factor 0.9, limit 18) while in flight stays at 20: go-zero drops the excess.
    sim.run(12 * SEC, |_| 20 * MS, |_| 910);
    let hot: u64 = sim.drops[10..12].iter().sum();
    println!("drops per second, 10–12 s: {:?}", &sim.drops[10..12]);
    assert!(hot > 0 && hot < 300, "dropped {hot} of 2,000");
    // Fewer, faster requests while hot: in flight stays under the limit, nothing is dropped.
    sim.run(20 * SEC, |_| 5 * MS, |_| 910);
    assert_eq!(
        sim.drops[13..20].iter().sum::<u64>(),
        0,
        "{:?}",
        &sim.drops[10..20]
    );
    sim.drain();
}
