//! Responsive exponential backoff: up by a multiplier on each failure, down by another after a streak
//! of successes. The calls return the delay; the caller sleeps.

use crate::boundary::{
    arg, arg_mut, free_handle, guard, into_handle, weir_status, Error, Out,
    WEIR_ERR_INVALID_ARGUMENT,
};
use crate::metrics::{weir_metrics_format, write_text};
use crate::rng::{weir_rng, with_caller_rng};
use std::ffi::c_char;
use weir_core::backoff::{
    BackoffConfig, BackoffConfigError, BackoffStats, Delay, Jitter, Step, MAX_BACKOFF_NS,
};
use weir_core::rt::with_thread_rng;
use weir_core::{Backoff, Rng};

/// The longest interval a backoff may have, ns (2^48 - 1, about 78 hours).
pub const WEIR_MAX_BACKOFF_NS: u64 = 281_474_976_710_655;
const _: () = assert!(WEIR_MAX_BACKOFF_NS == MAX_BACKOFF_NS);

/// How a backoff randomizes its delays (`weir_jitter.kind`): one of the `WEIR_JITTER_*` values.
#[allow(non_camel_case_types)]
pub type weir_jitter_kind = u32;
/// No randomization.
pub const WEIR_JITTER_NONE: weir_jitter_kind = 0;
/// The seed's: each new interval `x` becomes `x - d + 2 d u` with `d = min(factor x, max_ns)`; the
/// jitter compounds.
pub const WEIR_JITTER_PROPORTIONAL: weir_jitter_kind = 1;
/// AWS "full jitter": each delay is `u * interval`.
pub const WEIR_JITTER_FULL: weir_jitter_kind = 2;
/// AWS "equal jitter": each delay is `interval / 2 + u * interval / 2`.
pub const WEIR_JITTER_EQUAL: weir_jitter_kind = 3;
/// AWS "decorrelated jitter": going up, `initial + u * (current * up_multiplier - initial)`.
pub const WEIR_JITTER_DECORRELATED: weir_jitter_kind = 4;

/// A backoff's jitter: `kind`, and the proportional jitter's parameters (used only with
/// `WEIR_JITTER_PROPORTIONAL`).
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_jitter {
    /// One of the `WEIR_JITTER_*` values.
    pub kind: weir_jitter_kind,
    /// The randomization factor, in [0, 1] (default 0.3).
    pub factor: f64,
    /// The most a delay is moved either way, ns (default 2 minutes).
    pub max_ns: u64,
}

/// A backoff's configuration (the seed's defaults from `weir_backoff_config_default()`: 500 ms to 15
/// minutes, up 1.5x, down 0.9x after 10 successes, proportional jitter 0.3 up to 2 minutes). Validated
/// by `weir_backoff_new`.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct weir_backoff_config {
    /// The first interval, and the floor below which the interval drops to 0, ns; 1 ..= `max_ns`.
    pub initial_ns: u64,
    /// The longest interval, ns; 1 ..= `WEIR_MAX_BACKOFF_NS`.
    pub max_ns: u64,
    /// Multiplier on a failure; finite, >= 1.
    pub up_multiplier: f64,
    /// Multiplier after `down_threshold` consecutive successes; in (0, 1].
    pub down_multiplier: f64,
    /// Consecutive successes before the interval goes down; at least 1.
    pub down_threshold: u16,
    /// The randomization.
    pub jitter: weir_jitter,
    /// Seed of the library's per-thread generators (`weir_backoff_on_failure`,
    /// `weir_backoff_on_success`); not part of the Rust `BackoffConfig`. Default 0.
    pub seed: u64,
}

/// Which way a call moved the interval (`weir_delay.step`): one of the `WEIR_STEP_*` values.
#[allow(non_camel_case_types)]
pub type weir_step = u32;
/// A failure: the interval went up (or started).
pub const WEIR_STEP_UP: weir_step = 0;
/// A success completed a streak: the interval went down (possibly to 0).
pub const WEIR_STEP_DOWN: weir_step = 1;
/// A success within a streak: the interval held.
pub const WEIR_STEP_HOLD: weir_step = 2;
/// A success while not backing off: no delay, nothing counted as a sleep.
pub const WEIR_STEP_IDLE: weir_step = 3;

/// What to sleep after a call, and why.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct weir_delay {
    /// How long to sleep, ns (may be 0).
    pub ns: u64,
    /// One of the `WEIR_STEP_*` values.
    pub step: weir_step,
}

impl From<Delay> for weir_delay {
    fn from(d: Delay) -> Self {
        weir_delay {
            ns: d.ns,
            step: match d.step {
                Step::Up => WEIR_STEP_UP,
                Step::Down => WEIR_STEP_DOWN,
                Step::Hold => WEIR_STEP_HOLD,
                Step::Idle => WEIR_STEP_IDLE,
            },
        }
    }
}

/// A backoff's counters since it was built (`weir_backoff_stats`); exact under any interleaving.
///
/// Thread safety: a plain value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct weir_backoff_statistics {
    /// Calls of `weir_backoff_on_failure` and `weir_backoff_on_success` (all forms).
    pub invocations: u64,
    /// Steps up.
    pub went_up: u64,
    /// Steps down.
    pub went_down: u64,
    /// Delays returned that count as sleeps (every call but an idle success).
    pub slept: u64,
    /// Their total, ns (saturating).
    pub sleep_ns: u64,
}

impl From<BackoffStats> for weir_backoff_statistics {
    fn from(s: BackoffStats) -> Self {
        weir_backoff_statistics {
            invocations: s.invocations,
            went_up: s.went_up,
            went_down: s.went_down,
            slept: s.slept,
            sleep_ns: s.sleep_ns,
        }
    }
}

/// Responsive exponential backoff shared by any number of workers: an opaque handle from
/// `weir_backoff_new`, freed with `weir_backoff_free`.
///
/// Thread safety: every function that takes a `weir_backoff*` may be called from any number of threads
/// at once on the same backoff (lock-free: its state is one atomic word), except `weir_backoff_free`,
/// which must be the last call on it.
pub struct weir_backoff {
    inner: Backoff,
    seed: u64,
}

fn jitter_from_c(j: &weir_jitter) -> Result<Jitter, Error> {
    Ok(match j.kind {
        WEIR_JITTER_NONE => Jitter::None,
        WEIR_JITTER_PROPORTIONAL => Jitter::Proportional {
            factor: j.factor,
            max_ns: j.max_ns,
        },
        WEIR_JITTER_FULL => Jitter::Full,
        WEIR_JITTER_EQUAL => Jitter::Equal,
        WEIR_JITTER_DECORRELATED => Jitter::Decorrelated,
        k => {
            return Err(Error::new(
                WEIR_ERR_INVALID_ARGUMENT,
                format!(
                    "jitter.kind: {k} is not one of WEIR_JITTER_NONE (0), WEIR_JITTER_PROPORTIONAL \
                     (1), WEIR_JITTER_FULL (2), WEIR_JITTER_EQUAL (3), WEIR_JITTER_DECORRELATED (4)"
                ),
            ))
        }
    })
}

fn backoff_config_from_c(c: &weir_backoff_config) -> Result<BackoffConfig, Error> {
    let config = BackoffConfig {
        initial_ns: c.initial_ns,
        max_ns: c.max_ns,
        up_multiplier: c.up_multiplier,
        down_multiplier: c.down_multiplier,
        down_threshold: c.down_threshold,
        jitter: jitter_from_c(&c.jitter)?,
    };
    config.validate().map_err(refused)?;
    Ok(config)
}

/// A refused configuration, by its C field and range.
fn refused(e: BackoffConfigError) -> Error {
    let (field, range) = match e {
        BackoffConfigError::Initial => ("initial_ns", "1 ..= max_ns"),
        BackoffConfigError::Max => ("max_ns", "1 ..= WEIR_MAX_BACKOFF_NS (2^48 - 1)"),
        BackoffConfigError::UpMultiplier => ("up_multiplier", "finite and >= 1"),
        BackoffConfigError::DownMultiplier => ("down_multiplier", "in (0, 1]"),
        BackoffConfigError::DownThreshold => ("down_threshold", "at least 1"),
        BackoffConfigError::JitterFactor => ("jitter.factor", "in [0, 1]"),
        _ => ("", ""),
    };
    Error::config_field(field, range, e)
}

/// The seed's defaults: 500 ms initial, 15 minutes max, up 1.5x, down 0.9x after 10 consecutive
/// successes, proportional jitter (factor 0.3, at most 2 minutes); seed 0.
///
/// Thread safety: a pure function; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_backoff_config_default() -> weir_backoff_config {
    let c = BackoffConfig::default();
    let (factor, max_ns) = match Jitter::default() {
        Jitter::Proportional { factor, max_ns } => (factor, max_ns),
        _ => unreachable!("the seed's jitter is proportional"),
    };
    weir_backoff_config {
        initial_ns: c.initial_ns,
        max_ns: c.max_ns,
        up_multiplier: c.up_multiplier,
        down_multiplier: c.down_multiplier,
        down_threshold: c.down_threshold,
        jitter: weir_jitter {
            kind: WEIR_JITTER_PROPORTIONAL,
            factor,
            max_ns,
        },
        seed: 0,
    }
}

/// Checks a backoff configuration as `weir_backoff_new` would: `WEIR_OK`, `WEIR_ERR_NULL`,
/// `WEIR_ERR_INVALID_ARGUMENT` (an unknown `jitter.kind`) or `WEIR_ERR_INVALID_CONFIG` (the message
/// names the field).
///
/// # Safety
/// `config` is NULL or points to a readable `weir_backoff_config`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_config_validate(
    config: *const weir_backoff_config,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        backoff_config_from_c(unsafe { arg(config, "config") }?).map(|_| ())
    })
}

/// Builds a backoff (not backing off: interval 0) from `config`, validated by the core, and stores its
/// handle in `*out`. Errors: `WEIR_ERR_NULL`, `WEIR_ERR_INVALID_ARGUMENT` (an unknown `jitter.kind`),
/// `WEIR_ERR_INVALID_CONFIG` (the message names the field).
///
/// # Safety
/// `config` is NULL or points to a readable `weir_backoff_config`; `out` is NULL or points to a
/// writable `weir_backoff*`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_new(
    config: *const weir_backoff_config,
    out: *mut *mut weir_backoff,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let c = unsafe { arg(config, "config") }?;
        let config = backoff_config_from_c(c)?;
        let out = unsafe { Out::new(out, "out") }?;
        let inner = Backoff::new(config).map_err(refused)?;
        out.write(into_handle(weir_backoff {
            inner,
            seed: c.seed,
        }));
        Ok(())
    })
}

/// Frees a backoff. NULL is a no-op.
///
/// # Safety
/// `backoff` is NULL or a handle from `weir_backoff_new` not yet freed, and no other call on it is in
/// progress or follows.
///
/// Thread safety: must be the last call on the backoff, from one thread.
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_free(backoff: *mut weir_backoff) {
    // SAFETY: the caller's contract above is `free_handle`'s.
    unsafe { free_handle(backoff) }
}

/// The backoff behind a handle, or `WEIR_ERR_NULL`.
///
/// # Safety
/// `backoff` is NULL or a live handle from `weir_backoff_new`.
unsafe fn backoff<'a>(backoff: *const weir_backoff) -> Result<&'a weir_backoff, Error> {
    // SAFETY: forwarded from the export's contract.
    unsafe { arg(backoff, "backoff") }
}

/// Runs one step with this thread's generator (`rng` NULL) or the caller's, and writes its delay.
///
/// # Safety
/// As the exports that call it.
unsafe fn step(
    backoff: *const weir_backoff,
    rng: Option<*mut weir_rng>,
    out: *mut weir_delay,
    f: fn(&Backoff, &mut Rng) -> Delay,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract.
        let b = unsafe { self::backoff(backoff) }?;
        let rng = match rng {
            // SAFETY: the caller's contract.
            Some(rng) => Some(unsafe { arg_mut(rng, "rng") }?),
            None => None,
        };
        let out = unsafe { Out::new(out, "out") }?;
        let delay = match rng {
            Some(rng) => with_caller_rng(rng, |rng| f(&b.inner, rng)),
            None => with_thread_rng(b.seed, |rng| f(&b.inner, rng)),
        };
        out.write(delay.into());
        Ok(())
    })
}

/// Records a failure and writes the delay to sleep to `*out` (`WEIR_STEP_UP`): from 0 the interval
/// becomes `initial_ns`, otherwise it is multiplied by `up_multiplier`, jittered, and capped at
/// `max_ns`. Draws from this thread's generator for the backoff's seed. Errors: `WEIR_ERR_NULL`.
///
/// # Safety
/// `backoff` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_on_failure(
    backoff: *const weir_backoff,
    out: *mut weir_delay,
) -> weir_status {
    // SAFETY: the caller's contract above.
    unsafe { step(backoff, None, out, Backoff::on_failure) }
}

/// As `weir_backoff_on_failure`, drawing from the caller's generator `*rng` (advanced in place).
///
/// # Safety
/// `backoff` is NULL or a live handle; `rng` is NULL or points to a `weir_rng` no other thread uses
/// during the call; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free (each thread with its own generator).
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_on_failure_with_rng(
    backoff: *const weir_backoff,
    rng: *mut weir_rng,
    out: *mut weir_delay,
) -> weir_status {
    // SAFETY: the caller's contract above.
    unsafe { step(backoff, Some(rng), out, Backoff::on_failure) }
}

/// Records a success and writes the delay to sleep to `*out`: `WEIR_STEP_IDLE` and 0 when not backing
/// off; otherwise the streak grows, and at `down_threshold` consecutive successes the interval is
/// multiplied by `down_multiplier`, jittered, and dropped to 0 below `initial_ns` (`WEIR_STEP_DOWN`),
/// else it holds (`WEIR_STEP_HOLD`). Draws from this thread's generator. Errors: `WEIR_ERR_NULL`.
///
/// # Safety
/// `backoff` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_on_success(
    backoff: *const weir_backoff,
    out: *mut weir_delay,
) -> weir_status {
    // SAFETY: the caller's contract above.
    unsafe { step(backoff, None, out, Backoff::on_success) }
}

/// As `weir_backoff_on_success`, drawing from the caller's generator `*rng` (advanced in place).
///
/// # Safety
/// `backoff` is NULL or a live handle; `rng` is NULL or points to a `weir_rng` no other thread uses
/// during the call; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free (each thread with its own generator).
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_on_success_with_rng(
    backoff: *const weir_backoff,
    rng: *mut weir_rng,
    out: *mut weir_delay,
) -> weir_status {
    // SAFETY: the caller's contract above.
    unsafe { step(backoff, Some(rng), out, Backoff::on_success) }
}

/// Writes the current interval, ns (0 when not backing off), to `*out`.
///
/// # Safety
/// `backoff` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_interval_ns(
    backoff: *const weir_backoff,
    out: *mut u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::backoff(backoff) }?;
        unsafe { Out::new(out, "out") }?.write(b.inner.interval_ns());
        Ok(())
    })
}

/// Stops backing off: the interval and the success streak go to 0; the counters are kept.
///
/// # Safety
/// `backoff` is NULL or a live handle.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_reset(backoff: *const weir_backoff) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        unsafe { self::backoff(backoff) }?.inner.reset();
        Ok(())
    })
}

/// Writes the backoff's counters to `*out`.
///
/// # Safety
/// `backoff` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, concurrently with traffic.
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_stats(
    backoff: *const weir_backoff,
    out: *mut weir_backoff_statistics,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let b = unsafe { self::backoff(backoff) }?;
        unsafe { Out::new(out, "out") }?.write(b.inner.stats().into());
        Ok(())
    })
}

/// Writes the backoff's metrics as Prometheus text (the `backoff_*` families of docs/metrics.md),
/// exactly as `weir_balancer_write_metrics` writes its own: `format` NULL means the defaults, `buf`,
/// `cap` and `*len` work the same (a size query with `buf` NULL and `cap` 0;
/// `WEIR_ERR_BUFFER_TOO_SMALL` with the length in `*len`). `now_ns` is unused (a backoff keeps no
/// clock); it is there so that every writer has the same shape. Lock-free.
///
/// # Safety
/// `backoff` is NULL or a live handle; `format`, `buf` and `len` as for `weir_balancer_write_metrics`.
///
/// Thread safety: safe from any thread, concurrently with the backoff's other calls.
#[no_mangle]
pub unsafe extern "C" fn weir_backoff_write_metrics(
    backoff: *const weir_backoff,
    format: *const weir_metrics_format,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
    now_ns: u64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let x = unsafe { self::backoff(backoff) }?;
        unsafe {
            write_text(format, buf, cap, len, |out, f| {
                x.inner.write_metrics(out, &f.core(), now_ns)
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::testing::{fails, last};
    use crate::boundary::{WEIR_ERR_INVALID_CONFIG, WEIR_ERR_NULL, WEIR_OK};
    use crate::rng::weir_rng_seed;
    use std::ptr::{null, null_mut};

    fn new_backoff(c: weir_backoff_config) -> *mut weir_backoff {
        let mut b = null_mut();
        assert_eq!(
            unsafe { weir_backoff_new(&c, &mut b) },
            WEIR_OK,
            "{}",
            last()
        );
        b
    }

    fn stats(b: *const weir_backoff) -> weir_backoff_statistics {
        let mut st = weir_backoff_statistics::default();
        assert_eq!(unsafe { weir_backoff_stats(b, &mut st) }, WEIR_OK);
        st
    }

    #[test]
    fn config_default_is_the_cores_and_bad_fields_are_named() {
        let d = weir_backoff_config_default();
        assert_eq!(backoff_config_from_c(&d).unwrap(), BackoffConfig::default());
        assert_eq!(unsafe { weir_backoff_config_validate(&d) }, WEIR_OK);
        type Case = (fn(&mut weir_backoff_config), weir_status, &'static str);
        let cases: [Case; 8] = [
            (|c| c.initial_ns = 0, WEIR_ERR_INVALID_CONFIG, "initial_ns"),
            (
                |c| c.max_ns = WEIR_MAX_BACKOFF_NS + 1,
                WEIR_ERR_INVALID_CONFIG,
                "max_ns must be 1 ..= WEIR_MAX_BACKOFF_NS",
            ),
            (
                |c| c.up_multiplier = f64::INFINITY,
                WEIR_ERR_INVALID_CONFIG,
                "up_multiplier",
            ),
            (
                |c| c.down_multiplier = 0.0,
                WEIR_ERR_INVALID_CONFIG,
                "down_multiplier",
            ),
            (
                |c| c.down_threshold = 0,
                WEIR_ERR_INVALID_CONFIG,
                "down_threshold",
            ),
            (
                |c| c.jitter.factor = 1.5,
                WEIR_ERR_INVALID_CONFIG,
                "jitter.factor",
            ),
            (
                |c| c.jitter.kind = 5,
                WEIR_ERR_INVALID_ARGUMENT,
                "jitter.kind: 5",
            ),
            (
                |c| c.jitter.kind = 99,
                WEIR_ERR_INVALID_ARGUMENT,
                "jitter.kind: 99",
            ),
        ];
        for (change, status, field) in cases {
            let mut c = d;
            change(&mut c);
            fails(unsafe { weir_backoff_config_validate(&c) }, status, field);
            let mut out = std::ptr::dangling_mut::<weir_backoff>();
            fails(unsafe { weir_backoff_new(&c, &mut out) }, status, field);
            assert_eq!(out, std::ptr::dangling_mut::<weir_backoff>());
        }
        // A factor out of range is fine when the jitter is not proportional.
        let mut c = d;
        c.jitter = weir_jitter {
            kind: WEIR_JITTER_FULL,
            factor: 9.0,
            max_ns: 0,
        };
        assert_eq!(unsafe { weir_backoff_config_validate(&c) }, WEIR_OK);
        assert_eq!(
            unsafe { weir_backoff_config_validate(null()) },
            WEIR_ERR_NULL
        );
        assert_eq!(
            unsafe { weir_backoff_new(null(), &mut null_mut()) },
            WEIR_ERR_NULL
        );
        assert_eq!(unsafe { weir_backoff_new(&d, null_mut()) }, WEIR_ERR_NULL);
        assert_eq!(last(), "argument `out` is NULL");
    }

    #[test]
    fn steps_match_the_core_draw_for_draw_for_every_jitter() {
        for kind in [
            WEIR_JITTER_NONE,
            WEIR_JITTER_PROPORTIONAL,
            WEIR_JITTER_FULL,
            WEIR_JITTER_EQUAL,
            WEIR_JITTER_DECORRELATED,
        ] {
            let mut c = weir_backoff_config_default();
            c.jitter.kind = kind;
            c.down_threshold = 3;
            let b = new_backoff(c);
            let core = Backoff::new(backoff_config_from_c(&c).unwrap()).unwrap();
            let mut rng = weir_rng_seed(7);
            let mut draw = Rng::with_seed(7);
            // Up 6 times, then successes down to idle.
            for i in 0..40 {
                let mut d = weir_delay { ns: 1, step: 99 };
                let want = if i < 6 {
                    assert_eq!(
                        unsafe { weir_backoff_on_failure_with_rng(b, &mut rng, &mut d) },
                        WEIR_OK
                    );
                    core.on_failure(&mut draw)
                } else {
                    assert_eq!(
                        unsafe { weir_backoff_on_success_with_rng(b, &mut rng, &mut d) },
                        WEIR_OK
                    );
                    core.on_success(&mut draw)
                };
                assert_eq!(d, want.into(), "jitter {kind}, call {i}");
                assert_eq!(rng.state, draw.get_seed());
                let mut interval = 0;
                assert_eq!(
                    unsafe { weir_backoff_interval_ns(b, &mut interval) },
                    WEIR_OK
                );
                assert_eq!(interval, core.interval_ns());
            }
            assert_eq!(stats(b), core.stats().into());
            assert_eq!(stats(b).invocations, 40);
            unsafe { weir_backoff_free(b) };
        }
        unsafe { weir_backoff_free(null_mut()) };
    }

    #[test]
    fn thread_generator_steps_and_reset() {
        let mut c = weir_backoff_config_default();
        c.jitter.kind = WEIR_JITTER_NONE;
        c.down_threshold = 2;
        let b = new_backoff(c);
        let mut d = weir_delay::default();
        assert_eq!(unsafe { weir_backoff_on_success(b, &mut d) }, WEIR_OK);
        assert_eq!((d.ns, d.step), (0, WEIR_STEP_IDLE));
        assert_eq!(unsafe { weir_backoff_on_failure(b, &mut d) }, WEIR_OK);
        assert_eq!((d.ns, d.step), (500_000_000, WEIR_STEP_UP));
        assert_eq!(unsafe { weir_backoff_on_failure(b, &mut d) }, WEIR_OK);
        assert_eq!((d.ns, d.step), (750_000_000, WEIR_STEP_UP));
        assert_eq!(unsafe { weir_backoff_on_success(b, &mut d) }, WEIR_OK);
        assert_eq!((d.ns, d.step), (750_000_000, WEIR_STEP_HOLD));
        assert_eq!(unsafe { weir_backoff_on_success(b, &mut d) }, WEIR_OK);
        assert_eq!((d.ns, d.step), (675_000_000, WEIR_STEP_DOWN));
        assert_eq!(unsafe { weir_backoff_reset(b) }, WEIR_OK);
        let mut interval = 1;
        assert_eq!(
            unsafe { weir_backoff_interval_ns(b, &mut interval) },
            WEIR_OK
        );
        assert_eq!(interval, 0);
        let st = stats(b);
        assert_eq!(
            (
                st.invocations,
                st.went_up,
                st.went_down,
                st.slept,
                st.sleep_ns
            ),
            (5, 2, 1, 4, 500_000_000 + 750_000_000 * 2 + 675_000_000)
        );
        unsafe { weir_backoff_free(b) };
    }

    #[test]
    fn every_function_refuses_null_and_changes_nothing() {
        let b = new_backoff(weir_backoff_config_default());
        let mut rng = weir_rng_seed(3);
        let mut d = weir_delay::default();
        let mut n = 0u64;
        let mut st = weir_backoff_statistics::default();
        let cases = [
            (
                unsafe { weir_backoff_on_failure(null(), &mut d) },
                "backoff",
            ),
            (unsafe { weir_backoff_on_failure(b, null_mut()) }, "out"),
            (
                unsafe { weir_backoff_on_failure_with_rng(null(), &mut rng, &mut d) },
                "backoff",
            ),
            (
                unsafe { weir_backoff_on_failure_with_rng(b, null_mut(), &mut d) },
                "rng",
            ),
            (
                unsafe { weir_backoff_on_failure_with_rng(b, &mut rng, null_mut()) },
                "out",
            ),
            (
                unsafe { weir_backoff_on_success(null(), &mut d) },
                "backoff",
            ),
            (unsafe { weir_backoff_on_success(b, null_mut()) }, "out"),
            (
                unsafe { weir_backoff_on_success_with_rng(null(), &mut rng, &mut d) },
                "backoff",
            ),
            (
                unsafe { weir_backoff_on_success_with_rng(b, null_mut(), &mut d) },
                "rng",
            ),
            (
                unsafe { weir_backoff_on_success_with_rng(b, &mut rng, null_mut()) },
                "out",
            ),
            (
                unsafe { weir_backoff_interval_ns(null(), &mut n) },
                "backoff",
            ),
            (unsafe { weir_backoff_interval_ns(b, null_mut()) }, "out"),
            (unsafe { weir_backoff_reset(null()) }, "backoff"),
            (unsafe { weir_backoff_stats(null(), &mut st) }, "backoff"),
            (unsafe { weir_backoff_stats(b, null_mut()) }, "out"),
        ];
        for (status, name) in cases {
            assert_eq!(status, WEIR_ERR_NULL, "{name}");
        }
        assert_eq!(stats(b), weir_backoff_statistics::default());
        assert_eq!(rng.state, 3);
        assert_eq!(unsafe { weir_backoff_interval_ns(b, &mut n) }, WEIR_OK);
        assert_eq!(n, 0);
        unsafe { weir_backoff_free(b) };
    }

    /// Many threads fail and succeed on one backoff: the counters are exact.
    #[test]
    fn counters_are_exact_across_threads() {
        struct Handle(*mut weir_backoff);
        // SAFETY: the handle is documented as usable from any thread at once.
        unsafe impl Sync for Handle {}
        let b = Handle(new_backoff(weir_backoff_config_default()));
        std::thread::scope(|scope| {
            for t in 0..8u64 {
                let b = &b;
                scope.spawn(move || {
                    let mut rng = weir_rng_seed(t);
                    for i in 0..1000 {
                        let mut d = weir_delay::default();
                        let status = if i % 2 == 0 {
                            unsafe { weir_backoff_on_failure_with_rng(b.0, &mut rng, &mut d) }
                        } else {
                            unsafe { weir_backoff_on_success(b.0, &mut d) }
                        };
                        assert_eq!(status, WEIR_OK);
                    }
                });
            }
        });
        let st = stats(b.0);
        assert_eq!((st.invocations, st.went_up), (8000, 4000));
        let mut n = 0;
        assert_eq!(unsafe { weir_backoff_interval_ns(b.0, &mut n) }, WEIR_OK);
        assert!(n <= weir_backoff_config_default().max_ns);
        unsafe { weir_backoff_free(b.0) };
    }
}
