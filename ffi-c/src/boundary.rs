//! The one boundary every export goes through: status codes, the panic guard, pointer checks and the
//! per-thread error message.
//!
//! An export's body is a closure that returns `Result<(), Error>`; [`guard`] runs it under
//! `catch_unwind`, so a panic (the core never panics; the guard makes that a guarantee at the ABI) becomes
//! [`WEIR_ERR_PANIC`] instead of unwinding into C, and every error becomes its status code with its
//! message stored for [`weir_last_error_message`], which a success clears (the rule is stated there).
//! Pointers are turned into references only through [`arg`], [`arg_mut`] and [`Out`], which refuse
//! NULL with [`WEIR_ERR_NULL`] naming the argument.
//! Outputs are written only on success: an export first checks every out-pointer (`Out::new`), computes,
//! and writes as its last step.

use std::cell::{Cell, RefCell};
use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// A status code: [`WEIR_OK`] (0) or one of the `WEIR_ERR_*` codes. Codes are stable and never reused;
/// [`weir_status_str`] names each.
#[allow(non_camel_case_types)]
pub type weir_status = i32;

/// Success.
pub const WEIR_OK: weir_status = 0;
/// A required pointer argument was NULL (the message names it).
pub const WEIR_ERR_NULL: weir_status = 1;
/// A panic was caught at the boundary (a bug in weir: please report it with the message).
pub const WEIR_ERR_PANIC: weir_status = 2;
/// An argument is out of range: an unknown enum value, a NaN, a zero where a positive value is needed,
/// an HTTP status outside 100..=599 (the message names it).
pub const WEIR_ERR_INVALID_ARGUMENT: weir_status = 3;
/// The configuration was refused; the message names the field and its valid range.
pub const WEIR_ERR_INVALID_CONFIG: weir_status = 4;
/// No node is in rotation (none added, all removed, or all in lame duck).
pub const WEIR_ERR_NO_ACTIVE_NODES: weir_status = 5;
/// Every active node is at its concurrency limit: fail fast (or wait with `weir_balancer_acquire_wait`).
pub const WEIR_ERR_ALL_BUSY: weir_status = 6;
/// The lease was already released, was forged, or belongs to another balancer; nothing changed.
pub const WEIR_ERR_INVALID_LEASE: weir_status = 7;
/// The lease's node was removed after it was granted; the lease is closed and nothing was recorded.
pub const WEIR_ERR_NODE_REMOVED: weir_status = 8;
/// `weir_balancer_add` of an id that is already a member.
pub const WEIR_ERR_DUPLICATE_ID: weir_status = 9;
/// No member has this id.
pub const WEIR_ERR_UNKNOWN_ID: weir_status = 10;
/// Every node slot is occupied (or still draining leases of removed nodes).
pub const WEIR_ERR_CAPACITY_FULL: weir_status = 11;
/// A waiting acquire found `max_waiters` callers waiting already (or waiting is off).
pub const WEIR_ERR_QUEUE_FULL: weir_status = 12;
/// A waiting acquire's deadline passed before a node had room.
pub const WEIR_ERR_TIMEOUT: weir_status = 13;
/// A caller-provided buffer is too small (the message says how large it must be); nothing was written.
pub const WEIR_ERR_BUFFER_TOO_SMALL: weir_status = 14;
/// The shedder refused the request: the server is overloaded.
pub const WEIR_ERR_OVERLOADED: weir_status = 15;
/// The promise was already completed, was forged, or belongs to another shedder; nothing changed.
pub const WEIR_ERR_INVALID_PROMISE: weir_status = 16;
/// The operation is not supported on this system (the message says why).
pub const WEIR_ERR_UNSUPPORTED: weir_status = 17;
/// Reading a system source failed (the message carries the system's error).
pub const WEIR_ERR_IO: weir_status = 18;
/// The retry budget is spent: answer the request with the failure it had.
pub const WEIR_ERR_RETRY_BUDGET_EXHAUSTED: weir_status = 19;
/// A health check's answer was refused because the balancer's algorithm is the weighted family's
/// (`WEIR_ALGORITHM_WEIGHTED`), which takes no checks: only the lowest-score family keeps the penalties
/// a check readmits a node from. Nothing changed.
pub const WEIR_ERR_NOT_LOWEST_SCORE: weir_status = 20;
/// `weir_balancer_acquire_wait` was shed: its balancer's queue stood, and newer callers were served ahead
/// of it after it had waited more than 100 ms, so it is answered before its deadline rather than held to
/// it. An overload answer, as `WEIR_ERR_ALL_BUSY` is: answer the request, or retry (a retry joins the
/// back of the queue, which a standing queue serves first).
pub const WEIR_ERR_SHED: weir_status = 21;

/// Every status code with its name and meaning, in code order (the one table `weir_status_str` and the
/// tests read).
pub(crate) const STATUS_TEXT: [&CStr; 22] = [
    c"WEIR_OK: success",
    c"WEIR_ERR_NULL: a required pointer argument was NULL",
    c"WEIR_ERR_PANIC: a panic was caught at the C boundary (a bug in weir)",
    c"WEIR_ERR_INVALID_ARGUMENT: an argument is out of range",
    c"WEIR_ERR_INVALID_CONFIG: the configuration was refused",
    c"WEIR_ERR_NO_ACTIVE_NODES: no node is in rotation",
    c"WEIR_ERR_ALL_BUSY: every active node is at its concurrency limit",
    c"WEIR_ERR_INVALID_LEASE: the lease was already released, forged, or belongs to another balancer",
    c"WEIR_ERR_NODE_REMOVED: the lease's node was removed; nothing recorded",
    c"WEIR_ERR_DUPLICATE_ID: the node id is already a member",
    c"WEIR_ERR_UNKNOWN_ID: no member has this node id",
    c"WEIR_ERR_CAPACITY_FULL: every node slot is occupied",
    c"WEIR_ERR_QUEUE_FULL: too many callers are waiting for room",
    c"WEIR_ERR_TIMEOUT: the deadline passed before a node had room",
    c"WEIR_ERR_BUFFER_TOO_SMALL: the buffer is too small; nothing written",
    c"WEIR_ERR_OVERLOADED: the shedder refused the request",
    c"WEIR_ERR_INVALID_PROMISE: the promise was already completed, forged, or belongs to another shedder",
    c"WEIR_ERR_UNSUPPORTED: not supported on this system",
    c"WEIR_ERR_IO: reading a system source failed",
    c"WEIR_ERR_RETRY_BUDGET_EXHAUSTED: the retry budget is spent",
    c"WEIR_ERR_NOT_LOWEST_SCORE: health checks are read by the lowest-score family only",
    c"WEIR_ERR_SHED: the queue stood and newer callers were served first: answered before the deadline",
];

/// What an export's body returns on failure: a status code and the message for
/// [`weir_last_error_message`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Error {
    pub(crate) status: weir_status,
    pub(crate) message: String,
}

impl Error {
    pub(crate) fn new(status: weir_status, message: impl Into<String>) -> Self {
        Error {
            status,
            message: message.into(),
        }
    }

    /// A configuration refused, saying why in the header's words (`config/error.rs` words the core's
    /// refusals of a `weir_config`).
    pub(crate) fn config(why: impl core::fmt::Display) -> Self {
        Error::new(WEIR_ERR_INVALID_CONFIG, format!("invalid config: {why}"))
    }

    /// A configuration field refused: `field` must be `range`, both as the header states them. With no
    /// `field` (a refusal the caller's table does not know yet), the core's own text `core`, which is
    /// written for Rust and may name what a C program cannot see.
    pub(crate) fn config_field(field: &str, range: &str, core: impl core::fmt::Display) -> Self {
        if field.is_empty() {
            Error::config(core)
        } else {
            Error::config(format_args!("{field} must be {range}"))
        }
    }

    /// An out-of-range argument, naming it.
    pub(crate) fn invalid(argument: &str, why: impl core::fmt::Display) -> Self {
        Error::new(WEIR_ERR_INVALID_ARGUMENT, format!("{argument}: {why}"))
    }
}

thread_local! {
    /// The text of this thread's most recent error, NUL-terminated; current only while [`HAS_ERROR`].
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// Whether the most recent call that returned a status on this thread failed. A success clears
    /// this flag, not the text: one store, no allocation on the hot path, and a pointer the caller
    /// still holds to the old text stays valid until the next failure replaces it.
    static HAS_ERROR: Cell<bool> = const { Cell::new(false) };
}

fn set_last_error(message: &str) {
    // An interior NUL would cut the message short in C; replace it rather than lose the message.
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    // `try_with`: during thread teardown the slot may be gone; the status code still tells the caller.
    if LAST_ERROR
        .try_with(|cell| *cell.borrow_mut() = text)
        .is_ok()
    {
        HAS_ERROR.set(true);
    }
}

/// A panic's payload as an error: [`WEIR_ERR_PANIC`] with the panic's message.
#[cold]
fn panicked(payload: Box<dyn std::any::Any + Send>) -> Error {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".to_owned());
    Error::new(
        WEIR_ERR_PANIC,
        format!("panic caught at the C boundary: {what}"),
    )
}

/// Runs an export's body and returns its status: a panic becomes [`WEIR_ERR_PANIC`], an error its
/// status, and either one's message becomes this thread's [`weir_last_error_message`]; a success
/// clears it (the header's rule: the message describes the most recent call that returned a status).
// Always inlined: as a call of its own per export it cost about 20 instructions of each call's hot path
// (`benches/benches/c_abi.rs`); the panic path stays out of line in `catch_unwind`'s landing pad.
#[inline(always)]
pub(crate) fn guard(body: impl FnOnce() -> Result<(), Error>) -> weir_status {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(())) => {
            // One thread-local byte store per successful call (in `libweir.so` on x86_64, a call of
            // `__tls_get_addr` and a store): the price of a message that never outlives its call.
            HAS_ERROR.set(false);
            WEIR_OK
        }
        Ok(Err(error)) => {
            set_last_error(&error.message);
            error.status
        }
        Err(payload) => {
            set_last_error(&panicked(payload).message);
            WEIR_ERR_PANIC
        }
    }
}

/// Runs the body of an export that returns no status (the `*_free` functions, the getters that return
/// a value) and must not unwind into C: a panic is caught, recorded as this thread's message, and
/// `fallback` returned. A success leaves the message alone: only calls that return a status set it.
pub(crate) fn guard_value<T>(fallback: T, body: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|payload| {
        set_last_error(&panicked(payload).message);
        fallback
    })
}

/// Hands a new object to C as an opaque handle (a leaked `Box`), to be freed by [`free_handle`].
pub(crate) fn into_handle<T>(value: T) -> *mut T {
    Box::into_raw(Box::new(value))
}

/// Frees a handle from [`into_handle`]: NULL is a no-op, and a panic in the object's drop is caught
/// (every `weir_*_free` is this).
///
/// # Safety
/// `handle` is NULL or a handle of this type from [`into_handle`], not yet freed, with no other call on
/// it in progress or to follow.
pub(crate) unsafe fn free_handle<T>(handle: *mut T) {
    guard_value((), || {
        if !handle.is_null() {
            // SAFETY: a leaked Box from `into_handle`, freed once (the contract above).
            drop(unsafe { Box::from_raw(handle) });
        }
    });
}

/// Writes `items` into a caller's buffer `buf` with room for `cap`, and their number to `len`: with
/// `buf` NULL and `cap` 0 only the number (a size query); a NULL `buf` with room is [`WEIR_ERR_NULL`]; a
/// buffer too small is [`WEIR_ERR_BUFFER_TOO_SMALL`] with `too_small()`'s message and nothing written.
/// `weir_balancer_nodes` and the subsets write their lists through this.
///
/// # Safety
/// `buf` is NULL or points to `cap` writable `T`s that do not overlap `items`.
pub(crate) unsafe fn write_list<T: Copy>(
    items: &[T],
    buf: *mut T,
    cap: usize,
    len: Out<usize>,
    buf_name: &str,
    too_small: impl FnOnce() -> String,
) -> Result<(), Error> {
    if buf.is_null() && cap == 0 {
        len.write(items.len());
        return Ok(());
    }
    if buf.is_null() {
        return Err(null(buf_name));
    }
    if items.len() > cap {
        return Err(Error::new(WEIR_ERR_BUFFER_TOO_SMALL, too_small()));
    }
    // SAFETY: `buf` is non-NULL with room for `cap >= items.len()` elements and does not overlap
    // `items` (the contract above); a copy does not read the destination, which may be uninitialised
    // C memory.
    unsafe { core::ptr::copy_nonoverlapping(items.as_ptr(), buf, items.len()) };
    len.write(items.len());
    Ok(())
}

/// A shared reference to a caller's object, or [`WEIR_ERR_NULL`] naming the argument.
///
/// The caller of the export promises (the header's contract) that a non-NULL pointer points to a live,
/// properly aligned object of the right type for the duration of the call.
///
/// # Safety
/// `pointer` is NULL or points to a live, aligned `T` that nothing mutates during `'a`.
pub(crate) unsafe fn arg<'a, T>(pointer: *const T, name: &str) -> Result<&'a T, Error> {
    // SAFETY: NULL is checked here; validity and alignment of a non-NULL pointer are the C caller's
    // contract, stated for every pointer argument in the header.
    unsafe { pointer.as_ref() }.ok_or_else(|| null(name))
}

/// An exclusive reference to a caller's object, or [`WEIR_ERR_NULL`] naming the argument.
///
/// # Safety
/// `pointer` is NULL or points to a live, aligned `T` that nothing else uses during `'a`.
pub(crate) unsafe fn arg_mut<'a, T>(pointer: *mut T, name: &str) -> Result<&'a mut T, Error> {
    // SAFETY: as in `arg`; the header also says the object must not be used by another thread during
    // the call (the objects passed this way are the caller's own: a generator, a lease, a promise).
    unsafe { pointer.as_mut() }.ok_or_else(|| null(name))
}

pub(crate) fn null(name: &str) -> Error {
    Error::new(WEIR_ERR_NULL, format!("argument `{name}` is NULL"))
}

/// An out-parameter, checked for NULL before the export does anything and written only on success.
pub(crate) struct Out<T>(*mut T);

impl<T> Out<T> {
    /// # Safety
    /// `pointer` is NULL or points to memory where a `T` may be written (aligned, writable, not read by
    /// anyone else until the export returns).
    pub(crate) unsafe fn new(pointer: *mut T, name: &str) -> Result<Self, Error> {
        if pointer.is_null() {
            Err(null(name))
        } else {
            Ok(Out(pointer))
        }
    }

    pub(crate) fn write(self, value: T) {
        // SAFETY: non-NULL (checked in `new`); validity and alignment are the caller's contract.
        // `write` does not drop the old contents, which may be uninitialised C memory.
        unsafe { self.0.write(value) }
    }
}

/// Names a status code: a static, NUL-terminated string that is never NULL. Unknown codes get
/// `"WEIR_ERR_UNKNOWN: not a weir status code"`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub extern "C" fn weir_status_str(status: weir_status) -> *const c_char {
    usize::try_from(status)
        .ok()
        .and_then(|i| STATUS_TEXT.get(i))
        .map_or(c"WEIR_ERR_UNKNOWN: not a weir status code".as_ptr(), |s| {
            s.as_ptr()
        })
}

/// What failed in the most recent call on this thread that returned a `weir_status`, and why, naming
/// the argument or configuration field; an empty string if that call returned `WEIR_OK` (or there was
/// none yet). Never NULL.
///
/// When it changes: every function that returns a `weir_status` sets it, to its error on an error and
/// to "" on `WEIR_OK`, so read it right after the failing call, before the next one. Functions that
/// return no status (the `*_default` fillers, `*_free`, `weir_rng_seed`, `weir_now_ns`,
/// `weir_status_str`, the version functions and this one) leave it as it was, unless they caught a
/// panic (a bug in weir), which they record here. The text a pointer from this function shows stays
/// valid until a later call on this thread fails; copy it to keep it.
///
/// Thread safety: each thread has its own message; safe from any thread.
#[no_mangle]
pub extern "C" fn weir_last_error_message() -> *const c_char {
    if !HAS_ERROR.get() {
        return c"".as_ptr();
    }
    LAST_ERROR
        .try_with(|cell| cell.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

/// What the unit tests of every export read back after a call.
#[cfg(test)]
pub(crate) mod testing {
    use super::{weir_last_error_message, weir_status};
    use std::ffi::CStr;

    /// This thread's last error message.
    pub(crate) fn last() -> String {
        // SAFETY: `weir_last_error_message` never returns NULL and the text is NUL-terminated.
        unsafe { CStr::from_ptr(weir_last_error_message()) }
            .to_string_lossy()
            .into_owned()
    }

    /// Checks a status, that the message contains `text`, and that it names nothing a C program
    /// cannot see.
    #[track_caller]
    pub(crate) fn fails(status: weir_status, want: weir_status, text: &str) {
        assert_eq!(status, want, "{}", last());
        assert!(last().contains(text), "{:?} lacks {text:?}", last());
        assert_eq!(super::rust_only_name(&last()), None, "{:?}", last());
    }
}

/// The first word of `message` that names a Rust item rather than what the header declares: a core
/// constant (`MAX_NODES`; the header's constants are `WEIR_MAX_*`), a path (`Config::default`), a Rust
/// type, or a core variant name (`LowestScore`; C has `WEIR_ALGORITHM_LOWEST_SCORE`). The tests and the
/// fuzz target check every message they see with it.
#[cfg(any(test, fuzzing))]
pub(crate) fn rust_only_name(message: &str) -> Option<&str> {
    const RUST: [&str; 20] = [
        "f32",
        "f64",
        "u8",
        "u16",
        "u32",
        "u64",
        "usize",
        "i32",
        "i64",
        "Option",
        "None",
        "Some",
        "Duration",
        "LowestScore",
        "Weighted",
        "WeightedPick",
        "CascadeApprox",
        "Ewma",
        "Buckets",
        "Decay",
    ];
    message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
        .map(|word| word.trim_matches(':'))
        .find(|word| word.starts_with("MAX_") || word.contains("::") || RUST.contains(word))
}

#[cfg(test)]
mod tests {
    use super::testing::last;
    use super::*;

    #[test]
    fn a_panic_becomes_a_status_with_its_message() {
        let status = guard(|| panic!("deliberately"));
        assert_eq!(status, WEIR_ERR_PANIC);
        assert_eq!(last(), "panic caught at the C boundary: deliberately");
        assert_eq!(guard_value(7_u32, || panic!("again")), 7);
        assert_eq!(last(), "panic caught at the C boundary: again");
    }

    #[test]
    fn errors_set_the_message_and_a_success_clears_it() {
        assert_eq!(
            guard(|| Err(Error::invalid("outcome", "7 is not an outcome"))),
            WEIR_ERR_INVALID_ARGUMENT
        );
        assert_eq!(last(), "outcome: 7 is not an outcome");
        let held = weir_last_error_message();
        assert_eq!(guard(|| Ok(())), WEIR_OK);
        assert_eq!(last(), "");
        // The pointer read before the success still shows the old text (valid until the next failure).
        assert_eq!(
            unsafe { CStr::from_ptr(held) }.to_str(),
            Ok("outcome: 7 is not an outcome")
        );
        assert_eq!(
            guard(|| Err(Error::new(WEIR_ERR_NULL, "a\0b"))),
            WEIR_ERR_NULL
        );
        assert_eq!(last(), "a b");
        // A call without a status leaves the message as it was, unless it panics.
        assert_eq!(guard_value(3_u32, || 4), 4);
        assert_eq!(last(), "a b");
        assert_eq!(guard(|| Ok(())), WEIR_OK);
        assert_eq!(guard_value(3_u32, || 4), 4);
        assert_eq!(last(), "");
    }

    #[test]
    fn rust_only_names_are_told_from_the_headers() {
        let cases = [
            (
                "capacity must be between 1 and MAX_NODES",
                Some("MAX_NODES"),
            ),
            ("as in Config::default()", Some("Config::default")),
            ("a finite f64", Some("f64")),
            (
                "family LowestScore and health model Decay",
                Some("LowestScore"),
            ),
            ("buckets must be 1 ..= WEIR_MAX_WINDOW_BUCKETS (128)", None),
            ("algorithm Weighted", Some("Weighted")),
            (
                "algorithm.family WEIR_ALGORITHM_WEIGHTED: argument `out` is NULL",
                None,
            ),
        ];
        for (message, name) in cases {
            assert_eq!(rust_only_name(message), name, "{message}");
        }
    }

    #[test]
    fn every_status_has_its_own_name_and_unknown_codes_have_one_too() {
        for (code, text) in STATUS_TEXT.iter().enumerate() {
            let got = unsafe { CStr::from_ptr(weir_status_str(code as i32)) };
            assert_eq!(got, *text);
            let name = text.to_str().unwrap().split(':').next().unwrap();
            assert!(name.starts_with("WEIR_"), "{name}");
        }
        for code in [-1, STATUS_TEXT.len() as i32, i32::MAX, i32::MIN] {
            let got = unsafe { CStr::from_ptr(weir_status_str(code)) };
            assert!(got.to_str().unwrap().starts_with("WEIR_ERR_UNKNOWN"));
        }
    }

    #[test]
    fn null_pointers_are_refused_by_name() {
        let e = unsafe { arg::<u64>(core::ptr::null(), "balancer") }.unwrap_err();
        assert_eq!(
            (e.status, e.message.as_str()),
            (WEIR_ERR_NULL, "argument `balancer` is NULL")
        );
        assert!(unsafe { Out::<u64>::new(core::ptr::null_mut(), "out") }.is_err());
        let mut x = 0_u64;
        unsafe { Out::new(&mut x, "out") }.unwrap().write(5);
        assert_eq!(x, 5);
    }
}
