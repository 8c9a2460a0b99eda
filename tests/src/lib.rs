//! Workspace-level tests of the `weir` core that need more than the core: the replay of the decision
//! traces in `tests/vectors/`, which the C and Python suites replay too, and the tests under a counting
//! global allocator (`weir-lb-alloc-counter`): no allocation on the hot paths, and the overload protection
//! hammered by threads.
//!
//! The tests live in `tests/tests/`; the [`vectors`] module holds the traces' format, runner, replay and
//! generator. The tests that need only the core (the balancer's multi-thread stress with exact
//! conservation checks, the property tests, determinism) are the core's own, in `core/tests/`.

pub mod vectors;
