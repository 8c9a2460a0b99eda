//! Internals shared by the public modules: where atomics come from, division by a constant, cache-line
//! padding per target, and the SplitMix64 generator.

pub(crate) mod div;
pub(crate) mod pad;
pub(crate) mod splitmix;
pub(crate) mod sync;
