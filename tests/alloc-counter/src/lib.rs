//! A counting global allocator for tests: it forwards to [`System`] and counts, per thread, every call
//! that obtains memory (`alloc`, `alloc_zeroed`, `realloc`), so a test can assert that a code path
//! allocates nothing while the test harness's other threads allocate as they please.
//!
//! ```
//! let (v, n) = weir_alloc_counter::count(|| vec![1u8; 16]);
//! # let _ = v;
//! // Only counted when `CountingAlloc` is the `#[global_allocator]` of the program.
//! assert!(n <= 1);
//! ```
//!
//! Install it in a test binary:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: weir_alloc_counter::CountingAlloc = weir_alloc_counter::CountingAlloc;
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    // `const` and without a destructor: reading it never allocates and never registers a TLS destructor,
    // so the allocator can use it from inside an allocation.
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn bump() {
    // `try_with`: during thread teardown the slot may be gone; those allocations are not ours to count.
    let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
}

/// The system allocator, counting the allocations of each thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct CountingAlloc;

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees are ours; the counting touches only a thread-local `Cell` and never allocates.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: forwarded with the caller's contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        bump();
        // SAFETY: forwarded with the caller's contract.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        bump();
        // SAFETY: forwarded with the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded with the caller's contract.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// Allocations made so far by the current thread (0 unless [`CountingAlloc`] is the global allocator).
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Runs `f` and returns its result with the number of allocations the current thread made meanwhile.
pub fn count<T>(f: impl FnOnce() -> T) -> (T, u64) {
    let before = allocations();
    let out = f();
    (out, allocations() - before)
}
