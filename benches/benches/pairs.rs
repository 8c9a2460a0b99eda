//! The noise-free half of the benchmark: runs a workload's pairs outside criterion, so that
//! `cargo xtask bench --instructions` can count their instructions under valgrind, and counts the
//! allocations each pair makes.
//!
//! ```text
//! pairs run NAME N COUNT    build workload NAME over N nodes, run COUNT pairs (under valgrind, twice
//!                           with two counts: the difference divided by the difference of the counts is
//!                           the instructions per pair, construction cancelling out)
//! pairs allocations         allocations per pair of every workload at N = 16, as `weir-bench-fact:` lines
//! pairs list                the workload names
//! ```
//!
//! With no arguments (`cargo bench --bench pairs`, or `cargo test --benches`) it does `allocations`.
//! Names are the criterion ids' function names: `weir-{cascade,approx,pick}-{buckets,ewma}`, `mutex`,
//! `tower-peak-ewma`, `tower-pending`, `limiter-{fixed,aimd,...}`, and the floors `driver`, `cas`,
//! `fastrand`, `scan`. The counting allocator installed here costs a few instructions per allocation
//! (weir and the Mutex baseline make none per pair; tower's count includes them).

use std::hint::black_box;
use std::process::exit;
use weir::Config;
use weir_alloc_counter::{allocations, CountingAlloc};
use weir_benches::{
    config, limiters, Cas, DriverLoad, MutexLoad, PaddedScan, WeirLoad, Workload, HEALTHS, POLICIES,
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
    fn on<W: Workload>(&mut self, w: W);
}

/// Builds workload `name` over `n` nodes and hands it to `act`; false if there is no such workload.
fn with_workload(name: &str, n: usize, act: &mut impl Act) -> bool {
    for (pn, policy) in POLICIES {
        for (hn, health) in HEALTHS {
            if name == format!("weir-{pn}-{hn}") {
                act.on(WeirLoad::new(n, config(policy, health)));
                return true;
            }
        }
    }
    for (ln, limit) in limiters() {
        if name == format!("limiter-{ln}") {
            act.on(WeirLoad::new(
                n,
                Config {
                    limit,
                    ..Config::default()
                },
            ));
            return true;
        }
    }
    match name {
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
    let mut out = Vec::new();
    for (pn, _) in POLICIES {
        for (hn, _) in HEALTHS {
            out.push(format!("weir-{pn}-{hn}"));
        }
    }
    out.extend(["mutex", "tower-peak-ewma", "tower-pending"].map(String::from));
    out.extend(limiters().map(|(ln, _)| format!("limiter-{ln}")));
    out.extend(["driver", "cas", "fastrand", "scan"].map(String::from));
    out
}

struct Run(u64);
impl Act for Run {
    fn on<W: Workload>(&mut self, mut w: W) {
        for _ in 0..self.0 {
            w.pair();
        }
        black_box(&mut w);
    }
}

/// Allocations per pair over `PAIRS` pairs after `WARM` pairs of warm-up.
struct Allocs(f64);
impl Act for Allocs {
    fn on<W: Workload>(&mut self, mut w: W) {
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

fn usage() -> ! {
    eprintln!("usage: pairs [run NAME N COUNT | allocations | list]");
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
