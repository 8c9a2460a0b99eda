//! The caller's random generator: a plain value for deterministic replay, passed to the `*_with_rng`
//! functions of the balancer, the throttle, the backoff and the random subset.

use weir_core::Rng;

/// A random generator the caller owns (fastrand's wyrand; its whole state is `state`), for deterministic
/// replay with `weir_balancer_acquire_with_rng`. Make one with `weir_rng_seed`.
///
/// Thread safety: a plain value; give each thread its own (a generator must not be used by two threads
/// at once).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct weir_rng {
    /// The generator's state.
    pub state: u64,
}

/// A generator seeded with `seed`: the same seed gives the same draws in Rust, C and Python.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_rng_seed(seed: u64) -> weir_rng {
    weir_rng { state: seed }
}

/// Runs `f` with the caller's generator and stores its advanced state back, whatever `f` decided (as a
/// Rust caller's generator would advance).
pub(crate) fn with_caller_rng<T>(rng: &mut weir_rng, f: impl FnOnce(&mut Rng) -> T) -> T {
    let mut draw = Rng::with_seed(rng.state);
    let result = f(&mut draw);
    rng.state = draw.get_seed();
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callers_generator_draws_and_advances_as_the_cores() {
        let mut rng = weir_rng_seed(7);
        let mut core = Rng::with_seed(7);
        let drawn = with_caller_rng(&mut rng, |draw| draw.u64(..));
        assert_eq!(drawn, core.u64(..));
        assert_eq!(rng.state, core.get_seed());
        assert_ne!(rng.state, 7);
        // A call that draws nothing leaves it where it was.
        with_caller_rng(&mut rng, |_| ());
        assert_eq!(rng.state, core.get_seed());
    }
}
