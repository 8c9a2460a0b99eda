//! Internals shared by the public modules: where atomics come from, division by a constant, the
//! penalty's `log2`, cache-line padding per target, the SplitMix64 generator, and `Duration` conversion.

pub(crate) mod div;
#[cfg(feature = "decay")]
pub(crate) mod log2;
pub(crate) mod pad;
pub(crate) mod splitmix;
pub(crate) mod sync;
pub(crate) mod time;
