//! The C ABI's pair next to the Rust pair, in one run: `cargo xtask bench` builds `libweir.so` as shipped
//! (`cargo build --profile release-c -p weir-lb-ffi`) and runs this with `WEIR_LIBWEIR` naming it.
//!
//! The library is loaded with `dlopen` (libloading) and called through its exported symbols, as a C
//! program linked against `libweir.so` calls it: nothing of it is inlined into this benchmark. Every
//! benchmark runs the workload of `weir_benches::workload` (8 leases outstanding, scripted virtual time
//! and outcomes) over 16 nodes with `Config::default()` (the library's `weir_config_default()`):
//!
//! - `c_abi/rust/16`: `Balancer::acquire(now, &mut rng)` + `Balancer::release` (the `pair/weir-default/16`
//!   workload);
//! - `c_abi/c-rng/16`: `weir_balancer_acquire_with_rng` + `weir_balancer_release`, with the same seed,
//!   so the two make the same choices;
//! - `c_abi/c-thread-rng/16`: `weir_balancer_acquire` (the library's per-thread generator) +
//!   `weir_balancer_release`.
//!
//! Then the same three in interleaved rounds of 2 ms: `weir-bench-fact: c_abi.{c-rng,c-thread-rng}.vs_rust`
//! (the median over rounds of the same-round ratio) and `c_abi.{rust,c-rng,c-thread-rng}.p10_ns`.
//!
//! Without `WEIR_LIBWEIR`, it looks for `target/release-c/libweir.so`; without either it says so and
//! measures nothing (so `cargo bench --workspace` does not fail before the library is built).
//!
//! This is the only code of the workspace outside `ffi-c` with `unsafe`: calling a C library is unsafe.
//! The declarations below mirror `include/weir.h`.
#![allow(unsafe_code)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use libloading::{Library, Symbol};
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::path::PathBuf;
use std::time::Instant;
use weir::Config;
use weir_benches::workload::SEED;
use weir_benches::{Driver, WeirLoad, Workload, OUTSTANDING};

const N: usize = 16;

/// `weir_lease` (include/weir.h).
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct Lease {
    node_id: u64,
    acquired_at: u64,
    slot: u32,
    inflight: u32,
    generation: u16,
    balancer: u32,
}

/// `weir_rng`.
#[repr(C)]
struct Rng {
    state: u64,
}

/// Room for a `weir_config`, which this benchmark only passes from `weir_config_default()` back to
/// `weir_balancer_new` without reading it: aligned as it (8), larger (4,096 bytes; `weir_config` has 456
/// on x86_64), and so returned the same way, through a hidden pointer to the caller's room (both are
/// larger than 16 bytes); kept `MaybeUninit` because the library writes only its first bytes.
#[repr(C, align(8))]
struct ConfigRoom([u8; 4096]);

type Status = i32;
type Handle = *mut c_void;

/// The library's functions, resolved once.
struct Abi {
    _lib: &'static Library,
    config_default: unsafe extern "C" fn() -> MaybeUninit<ConfigRoom>,
    balancer_new: unsafe extern "C" fn(*const ConfigRoom, usize, *mut Handle) -> Status,
    add: unsafe extern "C" fn(Handle, u64) -> Status,
    acquire: unsafe extern "C" fn(Handle, u64, *mut Lease) -> Status,
    acquire_with_rng: unsafe extern "C" fn(Handle, u64, *mut Rng, *mut Lease) -> Status,
    release: unsafe extern "C" fn(Handle, *const Lease, u32, u64) -> Status,
    rng_seed: unsafe extern "C" fn(u64) -> Rng,
}

fn library() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WEIR_LIBWEIR") {
        return Some(PathBuf::from(p));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/release-c/libweir.so");
    p.exists().then_some(p)
}

impl Abi {
    fn load() -> Option<Abi> {
        let path = library()?;
        // SAFETY: loading libweir runs no initialisers with preconditions; it stays loaded for the
        // process (leaked), so the function pointers below never dangle.
        let lib: &'static Library = Box::leak(Box::new(
            unsafe { Library::new(&path) }
                .unwrap_or_else(|e| panic!("cannot load {}: {e}", path.display())),
        ));
        fn get<T: Copy + 'static>(lib: &'static Library, name: &str) -> T {
            // SAFETY: each symbol is declared above with its signature from include/weir.h.
            let s: Symbol<'static, T> = unsafe { lib.get(name.as_bytes()) }
                .unwrap_or_else(|e| panic!("libweir has no {name}: {e}"));
            *s
        }
        Some(Abi {
            _lib: lib,
            config_default: get(lib, "weir_config_default"),
            balancer_new: get(lib, "weir_balancer_new"),
            add: get(lib, "weir_balancer_add"),
            acquire: get(lib, "weir_balancer_acquire"),
            acquire_with_rng: get(lib, "weir_balancer_acquire_with_rng"),
            release: get(lib, "weir_balancer_release"),
            rng_seed: get(lib, "weir_rng_seed"),
        })
    }

    /// A balancer over nodes `0..n` with the library's default configuration.
    fn balancer(&self, n: usize) -> Handle {
        // SAFETY: the signatures of include/weir.h; `room` outsizes `weir_config`.
        unsafe {
            let room = (self.config_default)();
            let mut b: Handle = std::ptr::null_mut();
            assert_eq!((self.balancer_new)(room.as_ptr(), n, &mut b), 0);
            for id in 0..n as u64 {
                assert_eq!((self.add)(b, id), 0);
            }
            b
        }
    }
}

/// The workload of `WeirLoad` through the C ABI: `own_rng` picks `weir_balancer_acquire_with_rng`
/// (seeded as `WeirLoad`'s generator) over `weir_balancer_acquire`.
struct CLoad<'a> {
    abi: &'a Abi,
    b: Handle,
    ring: [Lease; OUTSTANDING],
    next: usize,
    rng: Rng,
    own_rng: bool,
    d: Driver,
}

impl<'a> CLoad<'a> {
    fn new(abi: &'a Abi, n: usize, own_rng: bool) -> Self {
        let mut load = CLoad {
            abi,
            b: abi.balancer(n),
            ring: [Lease::default(); OUTSTANDING],
            next: 0,
            // SAFETY: a pure function.
            rng: unsafe { (abi.rng_seed)(SEED) },
            own_rng,
            d: Driver::new(n, SEED),
        };
        for slot in 0..OUTSTANDING {
            let now = load.d.tick();
            load.ring[slot] = load.acquire(now);
        }
        load
    }

    #[inline]
    fn acquire(&mut self, now: u64) -> Lease {
        // As a C caller: the output is not initialised before the call (the library writes it on
        // success, and an error stops the benchmark).
        let mut lease = MaybeUninit::<Lease>::uninit();
        // SAFETY: a live handle, valid pointers.
        let status = unsafe {
            if self.own_rng {
                (self.abi.acquire_with_rng)(self.b, now, &mut self.rng, lease.as_mut_ptr())
            } else {
                (self.abi.acquire)(self.b, now, lease.as_mut_ptr())
            }
        };
        if status != 0 {
            refused("an acquire", status);
        }
        // SAFETY: written by the library on success.
        unsafe { lease.assume_init() }
    }
}

#[cold]
#[inline(never)]
fn refused(what: &str, status: Status) -> ! {
    panic!("libweir refused {what} (status {status}): the benchmark must measure grants")
}

impl Workload for CLoad<'_> {
    #[inline]
    fn pair(&mut self) {
        let now = self.d.tick();
        let lease = self.acquire(now);
        let old = std::mem::replace(&mut self.ring[self.next], lease);
        self.next = (self.next + 1) % OUTSTANDING;
        let outcome = self.d.outcome(old.node_id as usize) as u32;
        // SAFETY: a live handle, a lease it granted.
        let status = unsafe { (self.abi.release)(self.b, &old, outcome, now) };
        if status != 0 {
            refused("a valid release", status);
        }
    }
}

fn c_abi(c: &mut Criterion) {
    let Some(abi) = Abi::load() else {
        eprintln!(
            "c_abi: SKIPPED: no libweir.so (set WEIR_LIBWEIR, or `cargo build --profile release-c -p weir-lb-ffi`)"
        );
        return;
    };
    let mut g = c.benchmark_group("c_abi");
    g.throughput(Throughput::Elements(1));
    let mut rust = WeirLoad::new(N, Config::default());
    let mut c_rng = CLoad::new(&abi, N, true);
    let mut c_thread = CLoad::new(&abi, N, false);
    g.bench_function(BenchmarkId::new("rust", N), |b| b.iter(|| rust.pair()));
    g.bench_function(BenchmarkId::new("c-rng", N), |b| b.iter(|| c_rng.pair()));
    g.bench_function(BenchmarkId::new("c-thread-rng", N), |b| {
        b.iter(|| c_thread.pair())
    });
    g.finish();
}

/// The same three pairs in interleaved rounds of about 2 ms (as `pairs interleave` does for the other
/// workloads): per C pair, the median over rounds of its time over the Rust pair's in the same round, and
/// each pair's 10th-percentile time, as `weir-bench-fact:` lines. On a shared machine a neighbour's load
/// then falls on both sides of a ratio alike.
fn interleaved(_: &mut Criterion) {
    const ROUNDS: usize = 150;
    const BATCH_NS: f64 = 2e6;
    let Some(abi) = Abi::load() else { return };
    let mut loads: Vec<(&str, Box<dyn Workload + '_>)> = vec![
        ("rust", Box::new(WeirLoad::new(N, Config::default()))),
        ("c-rng", Box::new(CLoad::new(&abi, N, true))),
        ("c-thread-rng", Box::new(CLoad::new(&abi, N, false))),
    ];
    let time = |w: &mut dyn Workload, pairs: u64| {
        let t0 = Instant::now();
        for _ in 0..pairs {
            w.pair();
        }
        t0.elapsed().as_nanos() as f64 / pairs as f64
    };
    let sizes: Vec<u64> = loads
        .iter_mut()
        .map(|(_, w)| ((BATCH_NS / time(w.as_mut(), 2_000).max(1.0)) as u64).max(100))
        .collect();
    let mut times = vec![Vec::with_capacity(ROUNDS); loads.len()];
    for round in 0..ROUNDS {
        for j in 0..loads.len() {
            let i = (j + round) % loads.len();
            times[i].push(time(loads[i].1.as_mut(), sizes[i]));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    for (i, (name, _)) in loads.iter().enumerate() {
        let mut t = times[i].clone();
        t.sort_by(f64::total_cmp);
        println!(
            "weir-bench-fact: c_abi.{name}.p10_ns {:.2}",
            t[t.len() / 10]
        );
        if i > 0 {
            let ratios = times[i].iter().zip(&times[0]).map(|(c, r)| c / r).collect();
            println!(
                "weir-bench-fact: c_abi.{name}.vs_rust {:.3}",
                median(ratios)
            );
        }
    }
}

criterion_group! {
    name = benches;
    config = weir_benches::criterion_defaults();
    targets = c_abi, interleaved
}
criterion_main!(benches);
