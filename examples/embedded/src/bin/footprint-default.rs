//! Footprint binary: a balancer of 8 nodes with `Config::default()`. `cargo xtask embedded` reads its
//! flash and RAM from the linked ELF, runs it once under QEMU and reads its peak stack from its output.
#![no_std]
#![no_main]

use cortex_m_rt::entry;
use cortex_m_semihosting::hprintln;

#[entry]
fn main() -> ! {
    let granted = weir_embedded::footprint(weir::Config::default());
    let (stack, _) = weir_embedded::stack_use();
    hprintln!(
        "footprint-default: {granted} of {} calls granted; stack {stack} bytes at most",
        weir_embedded::FOOTPRINT_PAIRS
    );
    weir_embedded::exit(granted == weir_embedded::FOOTPRINT_PAIRS)
}
