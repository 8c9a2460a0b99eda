//! Cache-line padding per target, by the rule of crossbeam-utils' `CachePadded`: 128 bytes where the
//! prefetcher pulls lines in pairs (x86_64, aarch64, powerpc64), 256 on s390x, 32 on 32-bit ARM, MIPS,
//! SPARC and Hexagon (Cortex-M parts have no data cache at all, or 32-byte lines), 16 on m68k, 64
//! elsewhere (riscv64 among them). A node's slot is padded to this, so a microcontroller does not spend
//! 384 bytes a node on padding meant for a server.

/// Puts the target's cache-line alignment ([`LINE`]) on a struct.
macro_rules! cache_padded {
    ($(#[$meta:meta])* $vis:vis struct $name:ident $body:tt) => {
        $(#[$meta])*
        #[cfg_attr(
            any(target_arch = "x86_64", target_arch = "aarch64", target_arch = "powerpc64"),
            repr(align(128))
        )]
        #[cfg_attr(target_arch = "s390x", repr(align(256)))]
        #[cfg_attr(
            any(
                target_arch = "arm",
                target_arch = "mips",
                target_arch = "mips64",
                target_arch = "sparc",
                target_arch = "hexagon"
            ),
            repr(align(32))
        )]
        #[cfg_attr(target_arch = "m68k", repr(align(16)))]
        #[cfg_attr(
            not(any(
                target_arch = "x86_64",
                target_arch = "aarch64",
                target_arch = "powerpc64",
                target_arch = "s390x",
                target_arch = "arm",
                target_arch = "mips",
                target_arch = "mips64",
                target_arch = "sparc",
                target_arch = "hexagon",
                target_arch = "m68k"
            )),
            repr(align(64))
        )]
        $vis struct $name $body
    };
}
pub(crate) use cache_padded;

cache_padded! {
    /// An empty struct that only carries the alignment.
    #[allow(dead_code, reason = "read only by a const assertion, which rustc 1.85 (the MSRV) misses")]
    struct Probe {}
}

/// The alignment [`cache_padded`] gives on this target, in bytes.
#[allow(
    dead_code,
    reason = "read only by a const assertion, which rustc 1.85 (the MSRV) misses"
)]
pub(crate) const LINE: usize = core::mem::align_of::<Probe>();
