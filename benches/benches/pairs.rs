//! The noise-free half of the benchmark: runs a workload's pairs outside criterion, so that
//! `cargo xtask bench --instructions` can count their instructions under valgrind, and counts the
//! allocations each pair makes.
//!
//! ```text
//! pairs run NAME N COUNT    build workload NAME over N nodes, run COUNT pairs (under valgrind, twice
//!                           with two counts: the difference divided by the difference of the counts is
//!                           the instructions per pair, construction cancelling out)
//! pairs allocations         allocations per pair of every workload at N = 16, as `weir-bench-fact:` lines
//! pairs interleave          weir's new default and the cascade (3, 16 and 64 nodes, every
//!                           limiter on each, 3 members in the largest capacity), the Mutex baseline
//!                           (3, 16 and 64 nodes) and tower (16) in interleaved rounds of about 2 ms each: per
//!                           workload the median and 10th percentile time per pair over rounds, and
//!                           the median over rounds of each one's time over the new default's pair
//!                           (`vs_default`) and over the cascade's (`vs_cascade`) in the same round, as
//!                           `weir-bench-fact:` lines
//! pairs list                the workload names
//! ```
//!
//! `interleave` is the cross-check of criterion's same-run ratios on a busy machine: criterion measures
//! one benchmark after another, seconds apart, so a neighbour's load that comes and goes lands on some
//! benchmarks and not on others; rounds of 2 ms, alternating, see the same load, and a median over
//! rounds drops the rounds that a preemption hit.
//!
//! With no arguments (`cargo bench --bench pairs`, or `cargo test --benches`) it does `allocations`.
//! Names are the criterion ids' function names: `weir-default` (`Config::default()`),
//! `weir-default-fixed` (the same with the cascade's fixed limit of 100), `weir-{cascade,approx,pick}-
//! {buckets,ewma}` (`Config::cascade()` with that draw and success-rate model), `sparse-{default,cascade}`
//! (N members in a balancer of `SPARSE_CAPACITY` slots), `mutex`, `tower-peak-ewma`, `tower-pending`,
//! `limiter-{default,cascade}-{fixed,aimd,...}`, and the floors `driver`, `cas`, `fastrand`, `scan`. The
//! counting allocator installed here costs a few instructions per allocation (weir and the Mutex
//! baseline make none per pair; tower's count includes them).

use std::hint::black_box;
use std::process::exit;
use std::time::Instant;
use weir::Config;
use weir_alloc_counter::{allocations, CountingAlloc};
use weir_benches::{
    bases, config, default_fixed, limiters, with_limit, Cas, DriverLoad, MutexLoad, PaddedScan,
    WeirLoad, Workload, DRAWS, HEALTHS, SPARSE_CAPACITY,
};

mod tower_load;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// One uncontended CAS per "pair".
struct CasLoad(Cas);
impl Workload for CasLoad {
    fn pair(&mut self) {
        black_box(self.0.step());
    }
}

/// One random draw per "pair".
struct RandLoad(fastrand::Rng);
impl Workload for RandLoad {
    fn pair(&mut self) {
        black_box(self.0.f64());
    }
}

/// One padded scan per "pair".
struct ScanLoad(PaddedScan);
impl Workload for ScanLoad {
    fn pair(&mut self) {
        black_box(black_box(&self.0).sum());
    }
}

/// What to do with a workload, monomorphised per workload type so that no dynamic call is counted.
trait Act {
    fn on<W: Workload + 'static>(&mut self, w: W);
}

/// Builds workload `name` over `n` nodes and hands it to `act`; false if there is no such workload.
fn with_workload(name: &str, n: usize, act: &mut impl Act) -> bool {
    for (dn, draw) in DRAWS {
        for (hn, health) in HEALTHS {
            if name == format!("weir-{dn}-{hn}") {
                act.on(WeirLoad::new(n, config(draw, health)));
                return true;
            }
        }
    }
    for (base, base_config) in bases() {
        for (ln, limit) in limiters() {
            if name == format!("limiter-{base}-{ln}") {
                act.on(WeirLoad::new(n, with_limit(base_config, limit)));
                return true;
            }
        }
        if name == format!("sparse-{base}") {
            act.on(WeirLoad::sparse(n, SPARSE_CAPACITY, base_config));
            return true;
        }
    }
    match name {
        "weir-default" => act.on(WeirLoad::new(n, Config::default())),
        "weir-default-fixed" => act.on(WeirLoad::new(n, default_fixed())),
        "mutex" => act.on(MutexLoad::new(n)),
        "tower-peak-ewma" => act.on(tower_load::peak_ewma(n)),
        "tower-pending" => act.on(tower_load::pending_requests(n)),
        "driver" => act.on(DriverLoad::new(n)),
        "cas" => act.on(CasLoad(Cas::default())),
        "fastrand" => act.on(RandLoad(fastrand::Rng::with_seed(1))),
        "scan" => act.on(ScanLoad(PaddedScan::new(n))),
        _ => return false,
    }
    true
}

fn names() -> Vec<String> {
    let mut out: Vec<String> = vec!["weir-default".into(), "weir-default-fixed".into()];
    for (dn, _) in DRAWS {
        for (hn, _) in HEALTHS {
            out.push(format!("weir-{dn}-{hn}"));
        }
    }
    for (base, _) in bases() {
        out.push(format!("sparse-{base}"));
    }
    out.extend(["mutex", "tower-peak-ewma", "tower-pending"].map(String::from));
    for (base, _) in bases() {
        out.extend(limiters().map(|(ln, _)| format!("limiter-{base}-{ln}")));
    }
    out.extend(["driver", "cas", "fastrand", "scan"].map(String::from));
    out
}

struct Run(u64);
impl Act for Run {
    fn on<W: Workload + 'static>(&mut self, mut w: W) {
        for _ in 0..self.0 {
            w.pair();
        }
        black_box(&mut w);
    }
}

/// Allocations per pair over `PAIRS` pairs after `WARM` pairs of warm-up.
struct Allocs(f64);
impl Act for Allocs {
    fn on<W: Workload + 'static>(&mut self, mut w: W) {
        const WARM: u64 = 1_000;
        const PAIRS: u64 = 20_000;
        for _ in 0..WARM {
            w.pair();
        }
        let before = allocations();
        for _ in 0..PAIRS {
            w.pair();
        }
        self.0 = (allocations() - before) as f64 / PAIRS as f64;
        black_box(&mut w);
    }
}

/// A workload behind a pointer, called once per batch of pairs (so no dynamic call per pair).
trait Batch {
    fn batch(&mut self, pairs: u64);
}
impl<W: Workload> Batch for W {
    fn batch(&mut self, pairs: u64) {
        for _ in 0..pairs {
            self.pair();
        }
    }
}

struct Boxed(Option<Box<dyn Batch>>);
impl Act for Boxed {
    fn on<W: Workload + 'static>(&mut self, w: W) {
        self.0 = Some(Box::new(w));
    }
}

/// Nanoseconds per pair of one batch.
fn time_batch(w: &mut dyn Batch, pairs: u64) -> f64 {
    let t0 = Instant::now();
    w.batch(pairs);
    t0.elapsed().as_nanos() as f64 / pairs as f64
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The interleaved workloads' name in the report: the fixed-limit limiter pairs are the pairs of
/// `weir-default-fixed` and of the cascade (`weir-cascade-buckets`), and are reported under those names.
fn reported_name(name: &str) -> &str {
    match name {
        "limiter-default-fixed" => "weir-default-fixed",
        "limiter-cascade-fixed" => "weir-cascade-buckets",
        _ => name,
    }
}

/// The references of the same-round ratios: `vs_default` against the new default's pair over the same
/// number of nodes, `vs_cascade` against the cascade's pair.
const REFERENCES: [(&str, &str); 2] = [
    ("vs_default", "weir-default"),
    ("vs_cascade", "weir-cascade-buckets"),
];

/// See the module docs.
fn interleave() {
    const ROUNDS: usize = 150;
    const BATCH_NS: f64 = 2e6;
    let mut set: Vec<(String, usize)> = vec![("weir-default".into(), 16)];
    for (base, _) in bases() {
        set.extend(limiters().map(|(l, _)| (format!("limiter-{base}-{l}"), 16)));
    }
    set.extend(
        [
            ("mutex", 16),
            ("tower-peak-ewma", 16),
            ("tower-pending", 16),
            ("weir-default", 64),
            ("limiter-cascade-fixed", 64),
            ("mutex", 64),
            ("weir-default", 3),
            ("limiter-cascade-fixed", 3),
            ("mutex", 3),
            ("sparse-default", 3),
            ("sparse-cascade", 3),
        ]
        .map(|(n, k)| (n.to_string(), k)),
    );
    let mut loads: Vec<(String, Box<dyn Batch>, u64)> = set
        .into_iter()
        .map(|(name, n)| {
            let mut b = Boxed(None);
            with_workload(&name, n, &mut b);
            let mut w = b.0.expect("every interleaved workload exists");
            // Warm up, then size the batch to about BATCH_NS.
            let per = time_batch(w.as_mut(), 2_000).max(1.0);
            let pairs = ((BATCH_NS / per) as u64).max(100);
            (format!("{}.{n}", reported_name(&name)), w, pairs)
        })
        .collect();
    let k = loads.len();
    let mut times = vec![Vec::with_capacity(ROUNDS); k];
    for round in 0..ROUNDS {
        // Rotate the order so that no workload always follows the same one.
        for j in 0..k {
            let i = (j + round) % k;
            let (_, w, pairs) = &mut loads[i];
            times[i].push(time_batch(w.as_mut(), *pairs));
        }
    }
    for (i, (name, _, _)) in loads.iter().enumerate() {
        let mut t = times[i].clone();
        println!(
            "weir-bench-fact: interleaved.{name}.ns {:.2}",
            median(&mut t)
        );
        // The least disturbed rounds: the code's own speed while it had a core to itself.
        println!(
            "weir-bench-fact: interleaved.{name}.p10_ns {:.2}",
            t[t.len() / 10]
        );
        // The same-round ratios against each configuration's pair over the same number of nodes.
        let nodes = name.rsplit('.').next().unwrap_or("16");
        for (key, reference) in REFERENCES {
            let r = loads
                .iter()
                .position(|(n, _, _)| *n == format!("{reference}.{nodes}"));
            if let Some(r) = r.filter(|&r| r != i) {
                let mut ratios: Vec<f64> =
                    times[i].iter().zip(&times[r]).map(|(a, b)| a / b).collect();
                println!(
                    "weir-bench-fact: interleaved.{name}.{key} {:.3}",
                    median(&mut ratios)
                );
            }
        }
    }
}

fn usage() -> ! {
    eprintln!("usage: pairs [run NAME N COUNT | allocations | interleave | list]");
    exit(2);
}

fn main() {
    // `cargo bench` appends `--bench`; criterion-style flags mean nothing here.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["run", name, n, count] => {
            let (Ok(n), Ok(count)) = (n.parse(), count.parse()) else {
                usage()
            };
            if !with_workload(name, n, &mut Run(count)) {
                eprintln!("pairs: no workload named {name:?}; `pairs list` shows them");
                exit(2);
            }
        }
        ["interleave"] => interleave(),
        ["list"] => {
            for name in names() {
                println!("{name}");
            }
        }
        ["allocations"] | [] => {
            for name in names() {
                let mut a = Allocs(f64::NAN);
                with_workload(&name, 16, &mut a);
                println!("weir-bench-fact: allocations.{name}.16 {:.3}", a.0);
            }
        }
        _ => usage(),
    }
}
