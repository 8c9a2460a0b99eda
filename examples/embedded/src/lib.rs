//! The pieces that weir's firmware example (`src/main.rs`) and its footprint binaries (`src/bin/`)
//! share: how a run ends (a semihosting exit that QEMU turns into its own exit status), the panic
//! handler, and the footprint workload.
//!
//! Everything here is what a firmware author writes around weir; weir itself brings no runtime, no
//! allocator, no clock and no critical section of its own (this crate picks cortex-m's single-core one).
#![no_std]
#![deny(unsafe_code)]

use core::hint::black_box;
use core::panic::PanicInfo;
use cortex_m_semihosting::{debug, hprintln};
use weir::{Balancer, Config, NodeSlot, Outcome, Rng};

/// Nodes in every balancer of the example: a gateway's radios, uplinks or peer MCUs.
pub const NODES: usize = 8;

/// One millisecond in the core's unit of time.
pub const MS: u64 = 1_000_000;

/// Ends the run: QEMU exits with status 0 when `ok`, 1 otherwise (semihosting's `SYS_EXIT` with
/// "application exit" or "run-time error"). On a board without a debugger attached this would stop in a
/// breakpoint; firmware for the field would reset or park instead.
pub fn exit(ok: bool) -> ! {
    debug::exit(if ok {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    // Only reached when no debugger (or emulator) takes the exit call.
    loop {
        cortex_m::asm::wfi();
    }
}

/// The stack's peak use since reset, and its size, in bytes: cortex-m-rt's `paint-stack` filled the stack
/// with [`cortex_m_rt::STACK_PAINT_VALUE`] before `main`; the lowest word that no longer holds it is as deep
/// as the stack has been.
#[allow(unsafe_code)]
pub fn stack_use() -> (usize, usize) {
    extern "C" {
        // cortex-m-rt's linker script: the stack grows down from `_stack_start` to `_stack_end`.
        static _stack_start: u32;
        static _stack_end: u32;
    }
    let top = core::ptr::addr_of!(_stack_start) as usize;
    let bottom = core::ptr::addr_of!(_stack_end) as usize;
    // `bottom..top` is the stack region of RAM, word-aligned (the linker script asserts it), and every
    // word of it was written at reset.
    (top - lowest_written(bottom, top), top - bottom)
}

/// The lowest word of `from..to` (word-aligned, within the stack region, every word of it painted once)
/// that no longer holds [`cortex_m_rt::STACK_PAINT_VALUE`], or `to` if every word still does. Inlined:
/// it writes no stack of its own below the region's top.
#[inline(always)]
#[allow(unsafe_code)]
fn lowest_written(from: usize, to: usize) -> usize {
    let mut at = from;
    while at < to {
        // SAFETY: the caller passes a word-aligned part of the stack region; a volatile read of one
        // word is a plain load.
        let word = unsafe { core::ptr::read_volatile(at as *const u32) };
        if word != cortex_m_rt::STACK_PAINT_VALUE {
            return at;
        }
        at += 4;
    }
    to
}

/// How far below its caller's frame a measured call may go before [`stack_of`] stops telling how far:
/// twice the bound `cargo xtask embedded` holds weir's calls to (1 KiB on thumbv6m).
pub const STACK_WINDOW: usize = 2048;

/// Runs `f` and returns what it returned and the stack it used, in bytes: the region below the
/// caller's frame is painted with [`cortex_m_rt::STACK_PAINT_VALUE`] ([`STACK_WINDOW`] bytes of it), and
/// after the call the lowest word that no longer holds it is as deep as `f` went. A call that went
/// deeper than the window reads as the whole window. Inlined, so that what `f` returns goes straight to
/// the caller's frame, which is not counted (a `Balancer` returned by `Balancer::new` is the caller's, as
/// in a firmware that keeps it); `f` itself runs in a frame of its own, below.
#[inline(always)]
#[allow(unsafe_code)]
pub fn stack_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    extern "C" {
        // cortex-m-rt's linker script: the lowest address of the stack.
        static _stack_end: u32;
    }
    let bottom = core::ptr::addr_of!(_stack_end) as usize;
    // Everything below the stack pointer is free: the painting loop below writes no stack of its own.
    let top = cortex_m::register::msp::read() as usize & !3;
    let floor = top.saturating_sub(STACK_WINDOW).max(bottom);
    let mut at = floor;
    while at < top {
        // SAFETY: `floor..top` lies within the stack region (between `_stack_end` and the stack
        // pointer), word-aligned, and below every live frame, so no one reads what is written there.
        unsafe { core::ptr::write_volatile(at as *mut u32, cortex_m_rt::STACK_PAINT_VALUE) };
        at += 4;
    }
    let r = call(f);
    (r, top - lowest_written(floor, top))
}

/// `f()` in a frame of its own, below the measuring one: inlined into [`stack_of`], its locals would sit
/// in that frame, above the painted region, and go uncounted.
#[inline(never)]
fn call<R>(f: impl FnOnce() -> R) -> R {
    f()
}

/// The deepest stack each of weir's calls used in the footprint workload, in bytes.
#[derive(Clone, Copy, Default)]
pub struct CallStacks {
    /// `Balancer::new`.
    pub new: usize,
    /// `Balancer::add`.
    pub add: usize,
    /// `Balancer::acquire`.
    pub acquire: usize,
    /// `Balancer::release`.
    pub release: usize,
}

#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    hprintln!("weir-embedded: PANIC: {}", info);
    exit(false)
}

/// Calls in the footprint workload.
pub const FOOTPRINT_PAIRS: u64 = 1_000;

/// The footprint binaries' workload: a balancer of [`NODES`] nodes over `static` slots with `config`, the
/// nodes added, [`FOOTPRINT_PAIRS`] acquire/release pairs (every tenth a failure), and the count of
/// leases granted from the balancer's stats, with the deepest stack each call used ([`stack_of`]); one
/// acquire before the adds is refused, after the full scan.
/// What it links is what a firmware that balances calls links: construction, membership, acquire,
/// release and the counters.
///
/// `black_box` hides the inputs from the optimiser, so that the binary keeps the code a real firmware,
/// whose inputs come from its radios, would keep.
pub fn footprint(config: Config) -> (u64, CallStacks) {
    static SLOTS: [NodeSlot; NODES] = [const { NodeSlot::new() }; NODES];
    let mut stacks = CallStacks::default();
    let (built, new) = stack_of(|| Balancer::new(&SLOTS[..], config));
    stacks.new = new;
    // By reference: the balancer stays where `Balancer::new` put it.
    let Ok(balancer) = &built else {
        return (0, stacks);
    };
    let mut rng = Rng::with_seed(black_box(1));
    // Before any node is added, an acquire is refused after the full scan, which a crowded balancer
    // runs too (the pairs below never leave the fast scan).
    let (refused, used) = stack_of(|| balancer.acquire(0, &mut rng));
    stacks.acquire = used;
    if refused.is_ok() {
        return (0, stacks);
    }
    for id in 1..=NODES as u64 {
        let (added, used) = stack_of(|| balancer.add(black_box(id)));
        stacks.add = stacks.add.max(used);
        if added.is_err() {
            return (0, stacks);
        }
    }
    let mut now = 0;
    for i in 0..black_box(FOOTPRINT_PAIRS) {
        now += MS;
        let (acquired, used) = stack_of(|| balancer.acquire(now, &mut rng));
        stacks.acquire = stacks.acquire.max(used);
        if let Ok(lease) = acquired {
            let outcome = if i % 10 == 0 {
                Outcome::Failure
            } else {
                Outcome::Success
            };
            let (released, used) = stack_of(|| balancer.release(lease, outcome, now + MS / 2));
            stacks.release = stacks.release.max(used);
            if released.is_err() {
                return (0, stacks);
            }
        }
    }
    (balancer.stats().acquired, stacks)
}

/// The footprint binaries' baseline: the same skeleton (the loop, the count, the stack measurement, the
/// output and the exit) without a balancer, so that the difference in size between a `footprint-*`
/// binary and `footprint-none` is what weir adds.
pub fn no_balancer() -> u64 {
    let mut granted = 0;
    for i in 0..black_box(FOOTPRINT_PAIRS) {
        let (one, _) = stack_of(|| u64::from(black_box(i) % 10 != 10));
        granted += one;
    }
    granted
}

/// Prints a footprint binary's line, which `cargo xtask embedded` reads, and ends the run.
pub fn report(name: &str, granted: u64, stacks: CallStacks) -> ! {
    let (stack, _) = stack_use();
    hprintln!(
        "{name}: {granted} of {FOOTPRINT_PAIRS} calls granted; stack {stack} bytes at most; \
         calls: new {} add {} acquire {} release {} bytes at most; Balancer {} bytes",
        stacks.new,
        stacks.add,
        stacks.acquire,
        stacks.release,
        core::mem::size_of::<Balancer<&[NodeSlot]>>()
    );
    exit(granted == FOOTPRINT_PAIRS)
}
