//! Footprint binary: the same skeleton without a balancer: the baseline. `cargo xtask embedded` reads its
//! flash and RAM from the linked ELF, runs it once under QEMU and reads its peak stack from its output.
#![no_std]
#![no_main]

use cortex_m_rt::entry;

#[entry]
fn main() -> ! {
    let granted = weir_embedded::no_balancer();
    weir_embedded::report(
        "footprint-none",
        granted,
        weir_embedded::CallStacks::default(),
    )
}
