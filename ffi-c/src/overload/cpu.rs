//! The CPU sampler that feeds the shedder. Unlike the shedder and the throttle it is not lock-free:
//! sampling reads files and keeps a running average (`&mut self` in Rust), so its handle puts the sampler
//! behind a lock and keeps the latest reading in an atomic word that `weir_cpu_sampler_usage` reads
//! without the lock.

use crate::boundary::{
    arg, free_handle, guard, into_handle, weir_status, Error, Out, WEIR_ERR_IO,
    WEIR_ERR_UNSUPPORTED,
};
use std::ffi::{c_char, CStr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Mutex, PoisonError};
use weir_core::overload::{CpuError, CpuSampler, CpuSource};

/// Where a CPU sampler reads: one of the `WEIR_CPU_SOURCE_*` values.
#[allow(non_camel_case_types)]
pub type weir_cpu_source = u32;
/// cgroup v2 (`cpu.stat`, `cpu.max`, `cpuset.cpus.effective`).
pub const WEIR_CPU_SOURCE_CGROUP_V2: weir_cpu_source = 0;
/// cgroup v1 (`cpuacct.usage`, `cpu.cfs_quota_us`, `cpuset.cpus`).
pub const WEIR_CPU_SOURCE_CGROUP_V1: weir_cpu_source = 1;
/// The whole machine, from `/proc/stat`.
pub const WEIR_CPU_SOURCE_PROC_STAT: weir_cpu_source = 2;

/// The process's CPU usage in millicpu (0 ..= 1000 of what it may use), read from Linux cgroups or
/// `/proc/stat` and smoothed, to feed `weir_shedder_allow`: an opaque handle from `weir_cpu_sampler_new`
/// or `weir_cpu_sampler_with_root`, freed with `weir_cpu_sampler_free`.
///
/// Thread safety: every function may be called from any thread at once, except
/// `weir_cpu_sampler_free` (the last call). Not lock-free: `weir_cpu_sampler_sample` and
/// `weir_cpu_sampler_allowance` read files under a lock, so concurrent samples run one at a time
/// (sample from one thread, e.g. every 250 ms); `weir_cpu_sampler_usage` and `weir_cpu_sampler_source`
/// take no lock.
pub struct weir_cpu_sampler {
    /// Sampling mutates the running average (`&mut self` in Rust): one sample at a time.
    inner: Mutex<CpuSampler>,
    source: CpuSource,
    /// The latest `usage()`, for lock-free readers.
    usage: AtomicU32,
}

fn cpu_error(e: CpuError) -> Error {
    let status = match e {
        CpuError::Unsupported { .. } | CpuError::NoSource { .. } => WEIR_ERR_UNSUPPORTED,
        _ => WEIR_ERR_IO,
    };
    Error::new(status, e.to_string())
}

fn sampler_handle(result: Result<CpuSampler, CpuError>) -> Result<*mut weir_cpu_sampler, Error> {
    let sampler = result.map_err(cpu_error)?;
    let source = sampler.source();
    let usage = AtomicU32::new(sampler.usage());
    Ok(into_handle(weir_cpu_sampler {
        inner: Mutex::new(sampler),
        source,
        usage,
    }))
}

/// Builds a sampler for this process from the system's files (cgroup v2, then v1, then `/proc/stat`),
/// reading them once, and stores its handle in `*out`. Errors: `WEIR_ERR_UNSUPPORTED` (not Linux, or none
/// of the sources exists: shedding on CPU is then impossible, and weir says so instead of reading 0
/// forever), `WEIR_ERR_IO` (a source exists but cannot be read or parsed; the message names the file),
/// `WEIR_ERR_NULL`.
///
/// # Safety
/// `out` is NULL or points to a writable `weir_cpu_sampler*`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_new(out: *mut *mut weir_cpu_sampler) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let out = unsafe { Out::new(out, "out") }?;
        out.write(sampler_handle(CpuSampler::new())?);
        Ok(())
    })
}

/// As `weir_cpu_sampler_new`, reading the files under the directory `root` instead of `/` (a container's
/// host mount, or a fake tree in tests), on any system. Errors as `weir_cpu_sampler_new`, plus
/// `WEIR_ERR_INVALID_ARGUMENT` for a path that is not UTF-8 where the system needs it (not on Unix).
///
/// # Safety
/// `root` is NULL or a NUL-terminated string; `out` is NULL or points to a writable
/// `weir_cpu_sampler*`.
///
/// Thread safety: safe from any thread.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_with_root(
    root: *const c_char,
    out: *mut *mut weir_cpu_sampler,
) -> weir_status {
    guard(|| {
        if root.is_null() {
            return Err(crate::boundary::null("root"));
        }
        // SAFETY: non-NULL and NUL-terminated (the caller's contract above).
        let root = path_from_c(unsafe { CStr::from_ptr(root) })?;
        let out = unsafe { Out::new(out, "out") }?;
        out.write(sampler_handle(CpuSampler::with_root(root))?);
        Ok(())
    })
}

#[cfg(unix)]
fn path_from_c(root: &CStr) -> Result<PathBuf, Error> {
    use std::os::unix::ffi::OsStrExt;
    Ok(PathBuf::from(std::ffi::OsStr::from_bytes(root.to_bytes())))
}

#[cfg(not(unix))]
fn path_from_c(root: &CStr) -> Result<PathBuf, Error> {
    root.to_str()
        .map(PathBuf::from)
        .map_err(|e| Error::invalid("root", format_args!("not UTF-8: {e}")))
}

/// Frees a sampler. NULL is a no-op.
///
/// # Safety
/// `sampler` is NULL or a handle from `weir_cpu_sampler_new` or `weir_cpu_sampler_with_root` not yet
/// freed, and no other call on it is in progress or follows.
///
/// Thread safety: must be the last call on the sampler, from one thread.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_free(sampler: *mut weir_cpu_sampler) {
    // SAFETY: the caller's contract above is `free_handle`'s.
    unsafe { free_handle(sampler) }
}

/// The sampler behind a handle, or `WEIR_ERR_NULL`.
///
/// # Safety
/// `sampler` is NULL or a live handle.
unsafe fn sampler<'a>(sampler: *const weir_cpu_sampler) -> Result<&'a weir_cpu_sampler, Error> {
    // SAFETY: forwarded from the export's contract.
    unsafe { arg(sampler, "sampler") }
}

/// Writes where the sampler reads (`WEIR_CPU_SOURCE_*`) to `*out`.
///
/// # Safety
/// `sampler` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread; takes no lock.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_source(
    sampler: *const weir_cpu_sampler,
    out: *mut weir_cpu_source,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::sampler(sampler) }?;
        let source = match s.source {
            CpuSource::CgroupV2 => WEIR_CPU_SOURCE_CGROUP_V2,
            CpuSource::CgroupV1 => WEIR_CPU_SOURCE_CGROUP_V1,
            CpuSource::ProcStat => WEIR_CPU_SOURCE_PROC_STAT,
        };
        unsafe { Out::new(out, "out") }?.write(source);
        Ok(())
    })
}

/// Writes how many CPUs the process may use to `*out` (the cgroup's quota or cpuset, whichever is
/// smaller; the machine's CPUs under `WEIR_CPU_SOURCE_PROC_STAT`), read now. Errors: `WEIR_ERR_IO`,
/// `WEIR_ERR_NULL`.
///
/// # Safety
/// `sampler` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread; takes the sampler's lock while it reads.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_allowance(
    sampler: *const weir_cpu_sampler,
    out: *mut f64,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::sampler(sampler) }?;
        let out = unsafe { Out::new(out, "out") }?;
        let allowance = s
            .inner
            .lock()
            // The core does not panic while holding the lock; if it ever did, its state is still a
            // valid (if stale) average.
            .unwrap_or_else(PoisonError::into_inner)
            .allowance()
            .map_err(cpu_error)?;
        out.write(allowance);
        Ok(())
    })
}

/// Reads the usage counters at `now_ns` (monotonic; the same clock every time), folds the usage since
/// the previous sample into the smoothed average (5 s time constant; the first sample only records a
/// starting point), and writes the average, in millicpu, to `*out`. Errors: `WEIR_ERR_IO` (the message
/// names the file), `WEIR_ERR_NULL`.
///
/// # Safety
/// `sampler` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread; samples are taken one at a time under the sampler's lock.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_sample(
    sampler: *const weir_cpu_sampler,
    now_ns: u64,
    out: *mut u32,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::sampler(sampler) }?;
        let out = unsafe { Out::new(out, "out") }?;
        let mut inner = s.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let usage = inner.sample(now_ns).map_err(cpu_error)?;
        // Relaxed: a standalone reading; stored under the lock, so readers see samples in order.
        s.usage.store(usage, Relaxed);
        out.write(usage);
        Ok(())
    })
}

/// Writes the smoothed usage of the latest successful `weir_cpu_sampler_sample`, in millicpu (0 before
/// any), to `*out`, without reading any file.
///
/// # Safety
/// `sampler` is NULL or a live handle; `out` is NULL or writable.
///
/// Thread safety: safe from any thread, lock-free.
#[no_mangle]
pub unsafe extern "C" fn weir_cpu_sampler_usage(
    sampler: *const weir_cpu_sampler,
    out: *mut u32,
) -> weir_status {
    guard(|| {
        // SAFETY: the caller's contract above.
        let s = unsafe { self::sampler(sampler) }?;
        // Relaxed: a standalone reading (see `weir_cpu_sampler_sample`).
        unsafe { Out::new(out, "out") }?.write(s.usage.load(Relaxed));
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::testing::{fails, last};
    use crate::boundary::{WEIR_ERR_NULL, WEIR_OK};
    use std::ffi::CString;
    use std::ptr::{null, null_mut};

    /// A fresh fake filesystem root, removed on drop.
    struct Fake(PathBuf);

    impl Fake {
        fn new(name: &str) -> Fake {
            static N: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "weir-ffi-cpu-{}-{name}-{}",
                std::process::id(),
                N.fetch_add(1, Relaxed)
            ));
            std::fs::create_dir_all(&dir).unwrap();
            Fake(dir)
        }

        fn write(&self, path: &str, text: &str) {
            let path = self.0.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }

        fn c_root(&self) -> CString {
            CString::new(self.0.to_str().unwrap()).unwrap()
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn sampler_at(fake: &Fake) -> *mut weir_cpu_sampler {
        let mut s = null_mut();
        let root = fake.c_root();
        assert_eq!(
            unsafe { weir_cpu_sampler_with_root(root.as_ptr(), &mut s) },
            WEIR_OK,
            "{}",
            last()
        );
        s
    }

    #[test]
    fn cpu_sampler_reads_proc_stat_and_smooths() {
        let fake = Fake::new("proc");
        fake.write(
            "proc/stat",
            "cpu  0 0 0 1000 0 0 0 0\ncpu0 0 0 0 500 0 0 0\ncpu1 0 0 0 500 0 0 0\n",
        );
        let s = sampler_at(&fake);
        let mut source = 99;
        assert_eq!(unsafe { weir_cpu_sampler_source(s, &mut source) }, WEIR_OK);
        assert_eq!(source, WEIR_CPU_SOURCE_PROC_STAT);
        let mut allowance = 0.0;
        assert_eq!(
            unsafe { weir_cpu_sampler_allowance(s, &mut allowance) },
            WEIR_OK
        );
        assert_eq!(allowance, 2.0);
        let (mut sample, mut usage) = (99, 99);
        assert_eq!(unsafe { weir_cpu_sampler_usage(s, &mut usage) }, WEIR_OK);
        assert_eq!(usage, 0);
        assert_eq!(
            unsafe { weir_cpu_sampler_sample(s, 0, &mut sample) },
            WEIR_OK
        );
        assert_eq!(sample, 0, "the first sample only records a starting point");
        // Half the jiffies busy since; after 100 s the old average has no weight left.
        fake.write("proc/stat", "cpu  500 0 0 1500 0 0 0 0\n");
        let later = 100_000_000_000;
        assert_eq!(
            unsafe { weir_cpu_sampler_sample(s, later, &mut sample) },
            WEIR_OK
        );
        assert_eq!(sample, 500);
        assert_eq!(unsafe { weir_cpu_sampler_usage(s, &mut usage) }, WEIR_OK);
        assert_eq!(usage, 500);
        // The file disappears: an I/O error naming it, and the usage stays the last good one.
        std::fs::remove_file(fake.0.join("proc/stat")).unwrap();
        sample = 77;
        fails(
            unsafe { weir_cpu_sampler_sample(s, later * 2, &mut sample) },
            WEIR_ERR_IO,
            "proc/stat",
        );
        assert_eq!(sample, 77);
        assert_eq!(unsafe { weir_cpu_sampler_usage(s, &mut usage) }, WEIR_OK);
        assert_eq!(usage, 500);
        unsafe { weir_cpu_sampler_free(s) };
        unsafe { weir_cpu_sampler_free(null_mut()) };
    }

    #[test]
    fn cpu_sampler_reads_cgroup_v2_limits() {
        let fake = Fake::new("v2");
        fake.write("sys/fs/cgroup/cgroup.controllers", "cpu cpuset\n");
        fake.write("sys/fs/cgroup/cpu.stat", "usage_usec 1000\n");
        fake.write("sys/fs/cgroup/cpu.max", "200000 100000\n");
        fake.write("sys/fs/cgroup/cpuset.cpus.effective", "0-3\n");
        fake.write("proc/self/cgroup", "0::/\n");
        let s = sampler_at(&fake);
        let mut source = 99;
        assert_eq!(unsafe { weir_cpu_sampler_source(s, &mut source) }, WEIR_OK);
        assert_eq!(source, WEIR_CPU_SOURCE_CGROUP_V2);
        let mut allowance = 0.0;
        assert_eq!(
            unsafe { weir_cpu_sampler_allowance(s, &mut allowance) },
            WEIR_OK
        );
        assert_eq!(allowance, 2.0, "the quota (2 CPUs) under the cpuset (4)");
        // A malformed file is an I/O-class error naming it.
        fake.write("sys/fs/cgroup/cpu.max", "nonsense\n");
        allowance = 7.0;
        fails(
            unsafe { weir_cpu_sampler_allowance(s, &mut allowance) },
            WEIR_ERR_IO,
            "cpu.max",
        );
        assert_eq!(allowance, 7.0);
        unsafe { weir_cpu_sampler_free(s) };
    }

    #[test]
    fn cpu_sampler_errors_are_honest() {
        // No source under the root: unsupported, nothing written.
        let empty = Fake::new("empty");
        let root = empty.c_root();
        let mut s = std::ptr::dangling_mut::<weir_cpu_sampler>();
        fails(
            unsafe { weir_cpu_sampler_with_root(root.as_ptr(), &mut s) },
            WEIR_ERR_UNSUPPORTED,
            "no cgroup v2, cgroup v1 or /proc/stat",
        );
        assert_eq!(s, std::ptr::dangling_mut::<weir_cpu_sampler>());
        // A source that exists but cannot be parsed at construction: an I/O error.
        let bad = Fake::new("bad");
        bad.write("proc/stat", "cpu  1 2 3\n");
        let root = bad.c_root();
        fails(
            unsafe { weir_cpu_sampler_with_root(root.as_ptr(), &mut s) },
            WEIR_ERR_IO,
            "fewer than 7 counters",
        );
        fails(
            unsafe { weir_cpu_sampler_with_root(null(), &mut s) },
            WEIR_ERR_NULL,
            "`root`",
        );
        fails(
            unsafe { weir_cpu_sampler_with_root(root.as_ptr(), null_mut()) },
            WEIR_ERR_NULL,
            "`out`",
        );
        fails(
            unsafe { weir_cpu_sampler_new(null_mut()) },
            WEIR_ERR_NULL,
            "`out`",
        );
        // This machine: a sampler (Linux with /proc or cgroups) or an honest refusal.
        let mut real = null_mut();
        match unsafe { weir_cpu_sampler_new(&mut real) } {
            WEIR_OK => {
                let mut source = 99;
                assert_eq!(
                    unsafe { weir_cpu_sampler_source(real, &mut source) },
                    WEIR_OK
                );
                assert!(source <= WEIR_CPU_SOURCE_PROC_STAT);
                let mut usage = 0;
                assert_eq!(
                    unsafe { weir_cpu_sampler_sample(real, 1, &mut usage) },
                    WEIR_OK
                );
                assert!(usage <= 1000);
                unsafe { weir_cpu_sampler_free(real) };
            }
            status => assert!(
                status == WEIR_ERR_UNSUPPORTED || status == WEIR_ERR_IO,
                "{status}: {}",
                last()
            ),
        }
        // Every reader refuses NULL.
        let fake = Fake::new("nulls");
        fake.write("proc/stat", "cpu  0 0 0 1000 0 0 0 0\n");
        let s = sampler_at(&fake);
        let (mut u, mut a, mut src) = (0u32, 0.0f64, 0u32);
        let cases = [
            (
                unsafe { weir_cpu_sampler_source(null(), &mut src) },
                "`sampler`",
            ),
            (unsafe { weir_cpu_sampler_source(s, null_mut()) }, "`out`"),
            (
                unsafe { weir_cpu_sampler_allowance(null(), &mut a) },
                "`sampler`",
            ),
            (
                unsafe { weir_cpu_sampler_allowance(s, null_mut()) },
                "`out`",
            ),
            (
                unsafe { weir_cpu_sampler_sample(null(), 0, &mut u) },
                "`sampler`",
            ),
            (
                unsafe { weir_cpu_sampler_sample(s, 0, null_mut()) },
                "`out`",
            ),
            (
                unsafe { weir_cpu_sampler_usage(null(), &mut u) },
                "`sampler`",
            ),
            (unsafe { weir_cpu_sampler_usage(s, null_mut()) }, "`out`"),
        ];
        for (status, name) in cases {
            assert_eq!(status, WEIR_ERR_NULL, "{name}");
        }
        unsafe { weir_cpu_sampler_free(s) };
    }
}
