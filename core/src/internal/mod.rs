//! Internals shared by the public modules: where atomics come from, division by a constant, cache-line
//! padding per target, the SplitMix64 generator, and `Duration` conversion.

pub(crate) mod div;
pub(crate) mod pad;
pub(crate) mod splitmix;
pub(crate) mod sync;
pub(crate) mod time;
