//! Footprint binary: a balancer of 8 nodes with `Config::cascade()`. `cargo xtask embedded` reads its
//! flash and RAM from the linked ELF, runs it once under QEMU and reads its peak stack from its output.
#![no_std]
#![no_main]

use cortex_m_rt::entry;

#[entry]
fn main() -> ! {
    let (granted, stacks) = weir_embedded::footprint(weir::Config::cascade());
    weir_embedded::report("footprint-cascade", granted, stacks)
}
