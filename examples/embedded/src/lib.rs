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
    let mut lowest_used = top;
    let mut at = bottom;
    while at < top {
        // SAFETY: `bottom..top` is the stack region of RAM, word-aligned (the linker script asserts it),
        // and every word of it was written at reset; a volatile read of one word is a plain load.
        let word = unsafe { core::ptr::read_volatile(at as *const u32) };
        if word != cortex_m_rt::STACK_PAINT_VALUE {
            lowest_used = at;
            break;
        }
        at += 4;
    }
    (top - lowest_used, top - bottom)
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
/// leases granted from the balancer's stats. What it links is what a firmware that balances calls links:
/// construction, membership, acquire, release and the counters.
///
/// `black_box` hides the inputs from the optimiser, so that the binary keeps the code a real firmware,
/// whose inputs come from its radios, would keep.
pub fn footprint(config: Config) -> u64 {
    static SLOTS: [NodeSlot; NODES] = [const { NodeSlot::new() }; NODES];
    let Ok(balancer) = Balancer::new(&SLOTS[..], config) else {
        return 0;
    };
    for id in 1..=NODES as u64 {
        if balancer.add(black_box(id)).is_err() {
            return 0;
        }
    }
    let mut rng = Rng::with_seed(black_box(1));
    let mut now = 0;
    for i in 0..black_box(FOOTPRINT_PAIRS) {
        now += MS;
        if let Ok(lease) = balancer.acquire(now, &mut rng) {
            let outcome = if i % 10 == 0 {
                Outcome::Failure
            } else {
                Outcome::Success
            };
            if balancer.release(lease, outcome, now + MS / 2).is_err() {
                return 0;
            }
        }
    }
    balancer.stats().acquired
}

/// The footprint binaries' baseline: the same skeleton (the loop, the count, the output and the exit)
/// without a balancer, so that the difference in size between a `footprint-*` binary and
/// `footprint-none` is what weir adds.
pub fn no_balancer() -> u64 {
    let mut granted = 0;
    for i in 0..black_box(FOOTPRINT_PAIRS) {
        granted += u64::from(black_box(i) % 10 != 10);
    }
    granted
}
