//! CPU usage for the [`Shedder`](crate::overload::Shedder), in millicpu (0..=1000 of what this process may use),
//! read from the operating system (`std` only).
//!
//! Sources, tried in this order under a root directory (`/` normally; a fake tree in tests):
//! 1. **cgroup v2** (`sys/fs/cgroup/cgroup.controllers` exists): usage `usage_usec` from `cpu.stat`; limit
//!    `cpu.max` (`max` or `quota period`, the smallest over the cgroup and its ancestors) and the count of
//!    `cpuset.cpus.effective`.
//! 2. **cgroup v1** (a `cpuacct` line in `proc/self/cgroup`): usage `cpuacct.usage` (ns); limit
//!    `cpu.cfs_quota_us / cpu.cfs_period_us` (−1: none) and the count of `cpuset.cpus`.
//! 3. **`proc/stat`**: the whole machine; usage = busy jiffies / all jiffies of the aggregate `cpu` line
//!    (a ratio of two jiffy counts, so no `USER_HZ = 100` assumption as in go-zero).
//!
//! The cgroup is the one named in `proc/self/cgroup` under the controller's mount; inside a container
//! whose cgroup namespace makes that path absent, the mount root itself (go-zero always reads the root).
//! The allowance is `min(cpus in the cpuset, quota)` CPUs; a cgroup sample is
//! `Δusage / (Δnow × allowance)`, with `now` the caller's monotonic clock, so a restricted cpuset is
//! measured against its own CPUs (go-zero divides by the whole host's `/proc/stat` time instead, which
//! under-reads by `cpuset / host CPUs`). Samples are capped at 1000.
//!
//! # Smoothing, and go-zero's truncation
//! Samples are smoothed by an exponential moving average with go-zero's constants: every 250 ms the average
//! keeps 95 % of itself (`β = 0.95`, a time constant of about 5 s). Samples taken at other intervals
//! weigh by their length: `β = 0.95^(Δt / 250 ms)`. go-zero stores `int64(prev·0.95 + cur·0.05)`,
//! truncating at every step, so a constant load `c` stalls at `c − 19` and a full load reads 981 forever;
//! this sampler keeps the average as an `f64` and rounds only what it reports, so a full load reaches
//! 1000 (after 149 samples, 37 s, from an idle start).
//!
//! On an operating system without these files, [`CpuSampler::new`] fails with [`CpuError::Unsupported`]
//! rather than reporting 0 forever (go-zero's behaviour off Linux, which disables shedding silently), and
//! a file that cannot be read or parsed is an error, not the silent 0 go-zero reports once its cgroup
//! setup has failed.

use std::collections::BTreeSet;
use std::fmt;
use std::format;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::string::{String, ToString};
use std::vec::Vec;

/// go-zero's `cpuRefreshInterval`.
const REFRESH_NS: f64 = 250_000_000.0;
/// go-zero's `beta`, per refresh interval.
const BETA: f64 = 0.95;

/// Where a [`CpuSampler`] reads usage from.
///
/// ```
/// if let Ok(s) = weir::overload::CpuSampler::new() {
///     println!("CPU usage from {:?}", s.source()); // CgroupV2 in most containers today
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CpuSource {
    /// cgroup v2 (`cpu.stat`, `cpu.max`, `cpuset.cpus.effective`).
    CgroupV2,
    /// cgroup v1 (`cpuacct.usage`, `cpu.cfs_quota_us`, `cpuset.cpus`).
    CgroupV1,
    /// The whole machine (`/proc/stat`).
    ProcStat,
}

/// Why CPU usage could not be read.
///
/// ```
/// let missing = std::env::temp_dir().join("weir-no-such-root");
/// let e = weir::overload::CpuSampler::with_root(&missing).unwrap_err();
/// assert!(matches!(e, weir::overload::CpuError::NoSource { .. }));
/// assert!(e.to_string().starts_with("no cgroup v2, cgroup v1 or /proc/stat CPU statistics under"));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum CpuError {
    /// This operating system has no supported source (only Linux does); the shedder would never see
    /// overload, so say so instead of reporting 0.
    Unsupported {
        /// `std::env::consts::OS`.
        os: &'static str,
    },
    /// None of the sources exists under the root directory.
    NoSource {
        /// The root searched.
        root: PathBuf,
    },
    /// A file could not be read.
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        error: io::Error,
    },
    /// A file did not have the expected format.
    Parse {
        /// The file.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
}

impl fmt::Display for CpuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuError::Unsupported { os } => write!(
                f,
                "CPU usage sampling is not supported on {os} (needs Linux cgroups or /proc/stat)"
            ),
            CpuError::NoSource { root } => write!(
                f,
                "no cgroup v2, cgroup v1 or /proc/stat CPU statistics under {}",
                root.display()
            ),
            CpuError::Io { path, error } => write!(f, "cannot read {}: {error}", path.display()),
            CpuError::Parse { path, reason } => {
                write!(f, "bad format in {}: {reason}", path.display())
            }
        }
    }
}

impl std::error::Error for CpuError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CpuError::Io { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// Which files to read, found once at construction.
#[derive(Clone, Debug)]
enum Files {
    CgroupV2 {
        /// The cgroup's directory (its `cpu.stat`).
        dir: PathBuf,
        /// The mount root: `cpu.max` is read from `dir` up to here.
        mount: PathBuf,
    },
    CgroupV1 {
        usage: PathBuf,
        /// `cpu` controller directory (`cpu.cfs_quota_us`), if any.
        cpu: Option<PathBuf>,
        /// `cpuset` controller directory (`cpuset.cpus`), if any.
        cpuset: Option<PathBuf>,
    },
    ProcStat,
}

/// Samples this process's CPU usage and smooths it; see the module docs. Keep one per process, call
/// [`CpuSampler::sample`] every 250 ms or so (a background thread is typical), and pass its result to
/// [`Shedder::allow`](crate::overload::Shedder::allow).
///
/// ```
/// match weir::overload::CpuSampler::new() {
///     Ok(mut sampler) => {
///         if let Ok(first) = sampler.sample(weir::rt::monotonic_now()) {
///             assert_eq!(first, 0); // the first sample only primes the counters
///         }
///     }
///     Err(e) => println!("no CPU signal here: {e}"),
/// }
/// ```
#[derive(Debug)]
pub struct CpuSampler {
    root: PathBuf,
    files: Files,
    /// `(now, usage, total)` of the previous sample: ns of CPU and unused for cgroups, busy and all
    /// jiffies for `/proc/stat`.
    prev: Option<(u64, u64, u64)>,
    /// The moving average, millicpu.
    average: f64,
}

impl CpuSampler {
    /// A sampler of this machine (root `/`). Fails with [`CpuError::Unsupported`] off Linux.
    ///
    /// ```
    /// match weir::overload::CpuSampler::new() {
    ///     Ok(s) => assert_eq!(s.usage(), 0), // nothing sampled yet
    ///     Err(e) => println!("{e}"),
    /// }
    /// ```
    pub fn new() -> Result<Self, CpuError> {
        if cfg!(target_os = "linux") {
            Self::with_root("/")
        } else {
            Err(CpuError::Unsupported {
                os: std::env::consts::OS,
            })
        }
    }

    /// A sampler reading the same files under `root` instead of `/` (for tests and chroots).
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("weir-cpu-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(dir.join("proc")).unwrap();
    /// std::fs::write(dir.join("proc/stat"), "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 100 0 100 800 0 0 0 0 0 0\n").unwrap();
    /// let mut s = weir::overload::CpuSampler::with_root(&dir).unwrap();
    /// assert_eq!(s.source(), weir::overload::CpuSource::ProcStat);
    /// s.sample(0).unwrap();
    /// // 250 ms later: 50 busy of 100 jiffies → 500 millicpu, smoothed: 5 % of it.
    /// std::fs::write(dir.join("proc/stat"), "cpu  125 0 125 850 0 0 0 0 0 0\n").unwrap();
    /// assert_eq!(s.sample(250_000_000).unwrap(), 25);
    /// std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn with_root(root: impl AsRef<Path>) -> Result<Self, CpuError> {
        let root = root.as_ref().to_path_buf();
        let files = detect(&root)?;
        let sampler = CpuSampler {
            root,
            files,
            prev: None,
            average: 0.0,
        };
        // Fail now, not at the first sample, if the files are unreadable.
        sampler.read()?;
        Ok(sampler)
    }

    /// Where usage is read from.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("weir-cpu-src-{}", std::process::id()));
    /// # std::fs::create_dir_all(dir.join("proc")).unwrap();
    /// # std::fs::write(dir.join("proc/stat"), "cpu  1 0 1 8 0 0 0 0\n").unwrap();
    /// let s = weir::overload::CpuSampler::with_root(&dir).unwrap(); // a tree with only proc/stat
    /// assert_eq!(s.source(), weir::overload::CpuSource::ProcStat);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn source(&self) -> CpuSource {
        match self.files {
            Files::CgroupV2 { .. } => CpuSource::CgroupV2,
            Files::CgroupV1 { .. } => CpuSource::CgroupV1,
            Files::ProcStat => CpuSource::ProcStat,
        }
    }

    /// The CPUs this process may use (cpuset count, lowered by a quota), as read now.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("weir-cpu-allow-{}", std::process::id()));
    /// # let cg = dir.join("sys/fs/cgroup");
    /// # std::fs::create_dir_all(&cg).unwrap();
    /// # std::fs::write(cg.join("cgroup.controllers"), "cpu cpuset\n").unwrap();
    /// # std::fs::write(cg.join("cpu.stat"), "usage_usec 0\n").unwrap();
    /// // cgroup v2 with cpu.max "250000 100000" and cpuset.cpus.effective "0-7":
    /// # std::fs::write(cg.join("cpu.max"), "250000 100000\n").unwrap();
    /// # std::fs::write(cg.join("cpuset.cpus.effective"), "0-7\n").unwrap();
    /// let s = weir::overload::CpuSampler::with_root(&dir).unwrap();
    /// assert_eq!(s.allowance().unwrap(), 2.5);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn allowance(&self) -> Result<f64, CpuError> {
        match &self.files {
            Files::CgroupV2 { dir, mount } => {
                let cpus = match read_opt(&dir.join("cpuset.cpus.effective"))? {
                    Some(list) => count_cpus(&list)
                        .map_err(|reason| parse_err(&dir.join("cpuset.cpus.effective"), reason))?,
                    None => self.host_cpus()?,
                };
                let quota = v2_quota(dir, mount)?;
                Ok(allowance(cpus, quota))
            }
            Files::CgroupV1 { cpu, cpuset, .. } => {
                let cpus = match cpuset {
                    Some(d) => {
                        let path = d.join("cpuset.cpus");
                        let list = read(&path)?;
                        count_cpus(&list).map_err(|reason| parse_err(&path, reason))?
                    }
                    None => self.host_cpus()?,
                };
                let quota = match cpu {
                    Some(d) => v1_quota(d)?,
                    None => None,
                };
                Ok(allowance(cpus, quota))
            }
            Files::ProcStat => Ok(f64::from(self.host_cpus()?)),
        }
    }

    /// Reads the counters at `now` (monotonic ns, e.g. [`monotonic_now`](crate::rt::monotonic_now)) and
    /// returns the smoothed usage in millicpu. The first call only primes the counters and returns the
    /// current average (0). A call with no time elapsed, or with counters that went backwards (a
    /// recreated cgroup), re-primes and leaves the average as it is.
    pub fn sample(&mut self, now: u64) -> Result<u32, CpuError> {
        let (usage, total) = self.read()?;
        let instant = match self.prev {
            Some((t0, u0, a0)) if now > t0 && usage >= u0 && total >= a0 => {
                let dt = now - t0;
                let du = (usage - u0) as f64;
                let v = match self.files {
                    Files::ProcStat if total > a0 => 1000.0 * du / (total - a0) as f64,
                    Files::ProcStat => 0.0,
                    _ => 1000.0 * du / (dt as f64 * self.allowance()?),
                };
                Some((dt, v.clamp(0.0, 1000.0)))
            }
            _ => None,
        };
        self.prev = Some((now, usage, total));
        if let Some((dt, v)) = instant {
            let beta = libm::pow(BETA, dt as f64 / REFRESH_NS);
            self.average = beta * self.average + (1.0 - beta) * v;
        }
        Ok(self.usage())
    }

    /// The smoothed usage in millicpu, as of the last sample (rounded to nearest, at most 1000).
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("weir-cpu-usage-{}", std::process::id()));
    /// # std::fs::create_dir_all(dir.join("proc")).unwrap();
    /// # std::fs::write(dir.join("proc/stat"), "cpu  0 0 0 0 0 0 0 0\n").unwrap();
    /// let mut s = weir::overload::CpuSampler::with_root(&dir).unwrap();
    /// s.sample(0).unwrap();
    /// # std::fs::write(dir.join("proc/stat"), "cpu  100 0 0 0 0 0 0 0\n").unwrap();
    /// assert_eq!(s.sample(5_000_000_000).unwrap(), 642); // 5 s of full load: 1000 × (1 − 0.95^20)
    /// assert_eq!(s.usage(), 642);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn usage(&self) -> u32 {
        libm::round(self.average).clamp(0.0, 1000.0) as u32
    }

    /// `(usage, total)` counters: CPU ns and 0 for cgroups; busy and all jiffies for `/proc/stat`.
    fn read(&self) -> Result<(u64, u64), CpuError> {
        match &self.files {
            Files::CgroupV2 { dir, .. } => {
                let path = dir.join("cpu.stat");
                let text = read(&path)?;
                let usec = text
                    .lines()
                    .find_map(|l| l.strip_prefix("usage_usec "))
                    .ok_or_else(|| parse_err(&path, "no usage_usec line".to_string()))?;
                let usec = parse_uint(usec.trim()).map_err(|r| parse_err(&path, r))?;
                Ok((usec.saturating_mul(1000), 0))
            }
            Files::CgroupV1 { usage, .. } => {
                let ns = parse_uint(read(usage)?.trim()).map_err(|r| parse_err(usage, r))?;
                Ok((ns, 0))
            }
            Files::ProcStat => {
                let path = self.root.join("proc/stat");
                proc_stat(&read(&path)?).map_err(|r| parse_err(&path, r))
            }
        }
    }

    /// CPUs listed in `/proc/stat` (`cpuN` lines), else what the OS reports.
    fn host_cpus(&self) -> Result<u32, CpuError> {
        if let Some(text) = read_opt(&self.root.join("proc/stat"))? {
            let n = text
                .lines()
                .filter(|l| {
                    l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit)
                })
                .count();
            if n > 0 {
                return Ok(n as u32);
            }
        }
        Ok(std::thread::available_parallelism().map_or(1, |n| n.get() as u32))
    }
}

fn allowance(cpus: u32, quota: Option<f64>) -> f64 {
    let cpus = f64::from(cpus.max(1));
    match quota {
        Some(q) if q > 0.0 && q < cpus => q,
        _ => cpus,
    }
}

fn parse_err(path: &Path, reason: String) -> CpuError {
    CpuError::Parse {
        path: path.to_path_buf(),
        reason,
    }
}

fn read(path: &Path) -> Result<String, CpuError> {
    fs::read_to_string(path).map_err(|error| CpuError::Io {
        path: path.to_path_buf(),
        error,
    })
}

/// `Ok(None)` when the file does not exist.
fn read_opt(path: &Path) -> Result<Option<String>, CpuError> {
    match fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(CpuError::Io {
            path: path.to_path_buf(),
            error,
        }),
    }
}

/// Finds the source under `root`; see the module docs.
fn detect(root: &Path) -> Result<Files, CpuError> {
    let mount = root.join("sys/fs/cgroup");
    let membership = read_opt(&root.join("proc/self/cgroup"))?.unwrap_or_default();
    if mount.join("cgroup.controllers").is_file() {
        let rel = membership
            .lines()
            .find_map(|l| l.strip_prefix("0::"))
            .unwrap_or("/");
        let dir = join_cgroup(&mount, rel);
        let dir = if dir.join("cpu.stat").is_file() {
            dir
        } else {
            mount.clone()
        };
        return Ok(Files::CgroupV2 { dir, mount });
    }
    // cgroup v1: `id:controller,controller:path`.
    let v1 = |name: &str| -> Option<PathBuf> {
        membership.lines().find_map(|line| {
            let mut parts = line.splitn(3, ':');
            let (_, controllers, rel) = (parts.next()?, parts.next()?, parts.next()?);
            if !controllers.split(',').any(|c| c == name) {
                return None;
            }
            [mount.join(controllers), mount.join(name)]
                .into_iter()
                .filter(|m| m.is_dir())
                .flat_map(|m| [join_cgroup(&m, rel), m])
                .find(|d| d.is_dir())
        })
    };
    if let Some(dir) = v1("cpuacct") {
        let usage = dir.join("cpuacct.usage");
        if usage.is_file() {
            return Ok(Files::CgroupV1 {
                usage,
                cpu: v1("cpu").filter(|d| d.join("cpu.cfs_quota_us").is_file()),
                cpuset: v1("cpuset").filter(|d| d.join("cpuset.cpus").is_file()),
            });
        }
    }
    if root.join("proc/stat").is_file() {
        return Ok(Files::ProcStat);
    }
    Err(CpuError::NoSource {
        root: root.to_path_buf(),
    })
}

/// `mount` joined with a cgroup path from `/proc/self/cgroup`, without letting `..` climb out.
fn join_cgroup(mount: &Path, rel: &str) -> PathBuf {
    let mut dir = mount.to_path_buf();
    for part in rel
        .split('/')
        .filter(|p| !p.is_empty() && *p != "." && *p != "..")
    {
        dir.push(part);
    }
    dir
}

/// The smallest `cpu.max` quota (in CPUs) from `dir` up to `mount`, or `None` without one.
fn v2_quota(dir: &Path, mount: &Path) -> Result<Option<f64>, CpuError> {
    let mut best: Option<f64> = None;
    let mut cur = Some(dir);
    while let Some(d) = cur {
        let path = d.join("cpu.max");
        if let Some(text) = read_opt(&path)? {
            let mut fields = text.split_whitespace();
            let (quota, period) = (fields.next(), fields.next());
            let q = match (quota, period) {
                (Some("max"), _) => None,
                (Some(q), Some(p)) => {
                    let q = parse_uint(q).map_err(|r| parse_err(&path, r))?;
                    let p = parse_uint(p).map_err(|r| parse_err(&path, r))?;
                    (p > 0 && q > 0).then(|| q as f64 / p as f64)
                }
                _ => return Err(parse_err(&path, bad_cpu_max(&text))),
            };
            if let Some(q) = q {
                best = Some(best.map_or(q, |b: f64| b.min(q)));
            }
        }
        if d == mount {
            break;
        }
        cur = d.parent().filter(|p| p.starts_with(mount));
    }
    Ok(best)
}

fn bad_cpu_max(text: &str) -> String {
    let mut s = String::from("expected \"max PERIOD\" or \"QUOTA PERIOD\", found ");
    s.push_str(text.trim());
    s
}

/// `cpu.cfs_quota_us / cpu.cfs_period_us`, `None` for −1 (no quota).
fn v1_quota(dir: &Path) -> Result<Option<f64>, CpuError> {
    let qpath = dir.join("cpu.cfs_quota_us");
    let quota = read(&qpath)?;
    let quota = quota.trim();
    if quota.starts_with('-') {
        return Ok(None);
    }
    let q = parse_uint(quota).map_err(|r| parse_err(&qpath, r))?;
    let ppath = dir.join("cpu.cfs_period_us");
    let p = parse_uint(read(&ppath)?.trim()).map_err(|r| parse_err(&ppath, r))?;
    Ok((p > 0 && q > 0).then(|| q as f64 / p as f64))
}

/// go-zero's `parseUint`: a decimal `u64`; negative integers (even out of range) read as 0.
fn parse_uint(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(v) => Ok(v),
        Err(_) if is_negative_integer(s) => Ok(0),
        Err(_) => Err(format!("bad int format: {s}")),
    }
}

fn is_negative_integer(s: &str) -> bool {
    s.strip_prefix('-')
        .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
}

/// The number of distinct CPUs in a list such as `0-3,5,7-9` (go-zero's `parseUints`, counted).
fn count_cpus(list: &str) -> Result<u32, String> {
    let list = list.trim();
    let mut cpus = BTreeSet::new();
    if list.is_empty() {
        return Ok(0);
    }
    for part in list.split(',') {
        let bad = || format!("bad int list format: {list}");
        match part.split_once('-') {
            Some((lo, hi)) => {
                let lo: u32 = lo.parse().map_err(|_| bad())?;
                let hi: u32 = hi.parse().map_err(|_| bad())?;
                if hi < lo || hi - lo > 65_535 {
                    return Err(bad());
                }
                cpus.extend(lo..=hi);
            }
            None => {
                cpus.insert(part.parse::<u32>().map_err(|_| bad())?);
            }
        }
    }
    Ok(cpus.len() as u32)
}

/// `(busy, all)` jiffies from the aggregate `cpu` line of `/proc/stat`: all = user nice system idle
/// iowait irq softirq steal; busy = all − idle − iowait (guest time is already in user and nice).
fn proc_stat(text: &str) -> Result<(u64, u64), String> {
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))
        .ok_or_else(|| "no aggregate cpu line".to_string())?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(8)
        .map(|f| {
            f.parse::<u64>()
                .map_err(|_| format!("bad cpu line: {line}"))
        })
        .collect::<Result<_, _>>()?;
    if fields.len() < 7 {
        return Err(format!("bad cpu line (fewer than 7 counters): {line}"));
    }
    let all = fields.iter().fold(0u64, |a, &f| a.saturating_add(f));
    let idle = fields[3].saturating_add(fields[4]);
    Ok((all.saturating_sub(idle), all))
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    const MS: u64 = 1_000_000;

    /// A fresh fake filesystem root under the system temp dir, removed on drop.
    struct Fake(PathBuf);

    impl Fake {
        fn new(name: &str) -> Fake {
            static N: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "weir-cpu-{name}-{}-{}",
                std::process::id(),
                N.fetch_add(1, Ordering::Relaxed)
            ));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            Fake(dir)
        }
        fn write(&self, rel: &str, text: &str) {
            let p = self.0.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn parse_uint_vectors() {
        assert!(parse_uint("123456789012345678901234567890").is_err()); // too large is not negative
        assert_eq!(parse_uint("0"), Ok(0));
        assert_eq!(parse_uint("123"), Ok(123));
        assert_eq!(parse_uint("-1"), Ok(0));
        assert_eq!(parse_uint("-18446744073709551616"), Ok(0));
        assert_eq!(parse_uint("foo"), Err("bad int format: foo".to_string()));
    }

    #[test]
    fn cpu_list_vectors() {
        assert_eq!(count_cpus(""), Ok(0));
        assert_eq!(count_cpus("1,2,3"), Ok(3));
        assert_eq!(count_cpus("1-3"), Ok(3));
        assert_eq!(count_cpus("1-3,5,7-9"), Ok(7));
        assert_eq!(count_cpus("1-3,2,3-4\n"), Ok(4)); // duplicates removed
        for bad in ["1-bar", "bar-3", "3-1", "1,,2", "0-4294967295"] {
            assert!(
                count_cpus(bad)
                    .unwrap_err()
                    .starts_with("bad int list format"),
                "{bad}"
            );
        }
    }

    #[test]
    fn cgroup_v2_with_quota_and_cpuset() {
        let fs = Fake::new("v2");
        fs.write("proc/self/cgroup", "0::/kubepods/pod1\n");
        fs.write("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory\n");
        fs.write("sys/fs/cgroup/cpu.max", "max 100000\n");
        // The pod allows 4 CPUs by cpuset, 1.5 by quota: the allowance is 1.5 CPUs.
        fs.write("sys/fs/cgroup/kubepods/cpu.max", "400000 100000\n");
        fs.write("sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n");
        fs.write("sys/fs/cgroup/kubepods/pod1/cpuset.cpus.effective", "0-3\n");
        let stat = |usec: u64| std::format!("usage_usec {usec}\nuser_usec 1\nsystem_usec 2\n");
        fs.write("sys/fs/cgroup/kubepods/pod1/cpu.stat", &stat(1_000_000));
        let mut s = CpuSampler::with_root(&fs.0).unwrap();
        assert_eq!(s.source(), CpuSource::CgroupV2);
        assert_eq!(s.allowance().unwrap(), 1.5);
        assert_eq!(s.sample(0).unwrap(), 0); // primes
                                             // 250 ms at 1.5 CPUs = 375,000 µs: a full load. Smoothed: 5 % of 1000.
        fs.write("sys/fs/cgroup/kubepods/pod1/cpu.stat", &stat(1_375_000));
        assert_eq!(s.sample(250 * MS).unwrap(), 50);
        // Half load for 250 ms: 0.95 × 50 + 0.05 × 500 = 72.5 → 73 (rounded, not truncated).
        fs.write("sys/fs/cgroup/kubepods/pod1/cpu.stat", &stat(1_562_500));
        assert_eq!(s.sample(500 * MS).unwrap(), 73);
        // The parent's quota is used when lower than the cgroup's own.
        fs.write("sys/fs/cgroup/kubepods/cpu.max", "50000 100000\n");
        assert_eq!(s.allowance().unwrap(), 0.5);
    }

    #[test]
    fn cgroup_v2_in_a_namespace_reads_the_mount_root() {
        let fs = Fake::new("v2ns");
        fs.write("proc/self/cgroup", "0::/somewhere/not/mounted\n");
        fs.write(
            "proc/stat",
            "cpu  1 1 1 1 1 1 1 0\ncpu0 1 1 1 1 1 1 1 0\ncpu1 0 0 0 0 0 0 0 0\n",
        );
        fs.write("sys/fs/cgroup/cgroup.controllers", "cpu\n");
        fs.write("sys/fs/cgroup/cpu.stat", "usage_usec 0\n");
        let mut s = CpuSampler::with_root(&fs.0).unwrap();
        assert_eq!(s.source(), CpuSource::CgroupV2);
        // No cpu.max, no cpuset: the host's 2 CPUs from /proc/stat.
        assert_eq!(s.allowance().unwrap(), 2.0);
        s.sample(0).unwrap();
        fs.write("sys/fs/cgroup/cpu.stat", "usage_usec 2000000\n"); // 2 CPU-s in 1 s on 2 CPUs
        assert_eq!(s.sample(1_000 * MS).unwrap(), 185); // 1000 × (1 − 0.95^4), rounded
    }

    #[test]
    fn cgroup_v1() {
        let fs = Fake::new("v1");
        fs.write(
            "proc/self/cgroup",
            "12:cpuset:/docker/abc\n4:cpu,cpuacct:/docker/abc\n1:name=systemd:/docker/abc\n",
        );
        // Inside the container the hierarchy is mounted at its own cgroup: the path is absent.
        fs.write("sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", "5000000000\n");
        fs.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "200000\n");
        fs.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n");
        fs.write("sys/fs/cgroup/cpuset/docker/abc/cpuset.cpus", "0-7\n");
        let mut s = CpuSampler::with_root(&fs.0).unwrap();
        assert_eq!(s.source(), CpuSource::CgroupV1);
        assert_eq!(s.allowance().unwrap(), 2.0);
        s.sample(10 * MS).unwrap();
        fs.write("sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", "5250000000\n"); // 0.25 CPU-s in 250 ms
        assert_eq!(s.sample(260 * MS).unwrap(), 25); // 500 millicpu, smoothed
        fs.write("sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n");
        assert_eq!(s.allowance().unwrap(), 8.0);
        // Counters that go backwards re-prime instead of reading nonsense.
        fs.write("sys/fs/cgroup/cpu,cpuacct/cpuacct.usage", "1\n");
        assert_eq!(s.sample(510 * MS).unwrap(), 25);
        // No time elapsed: nothing changes.
        assert_eq!(s.sample(510 * MS).unwrap(), 25);
    }

    #[test]
    fn proc_stat_fallback_and_errors() {
        let fs = Fake::new("proc");
        assert!(matches!(
            CpuSampler::with_root(&fs.0),
            Err(CpuError::NoSource { .. })
        ));
        fs.write("proc/stat", "cpu  1 2 3\n");
        let e = CpuSampler::with_root(&fs.0).unwrap_err();
        assert!(e.to_string().contains("fewer than 7 counters"), "{e}");
        fs.write("proc/stat", "cpu  0 0 0 0 0 0 0 0\n");
        let mut s = CpuSampler::with_root(&fs.0).unwrap();
        s.sample(0).unwrap();
        fs.write("proc/stat", "cpu  100 0 0 0 0 0 0 0\n"); // all busy
        assert_eq!(s.sample(250 * MS).unwrap(), 50);
        fs.write("proc/stat", "garbage\n");
        assert!(matches!(s.sample(500 * MS), Err(CpuError::Parse { .. })));
        // cgroup v2 detected but cpu.stat unreadable: an error at construction, not a silent 0.
        let v2 = Fake::new("v2bad");
        v2.write("sys/fs/cgroup/cgroup.controllers", "cpu\n");
        let e = CpuSampler::with_root(&v2.0).unwrap_err();
        assert!(matches!(e, CpuError::Io { .. }), "{e}");
        assert!(e.to_string().contains("cpu.stat"), "{e}");
        v2.write("sys/fs/cgroup/cpu.stat", "user_usec 5\n");
        assert!(CpuSampler::with_root(&v2.0)
            .unwrap_err()
            .to_string()
            .contains("no usage_usec"));
        v2.write("sys/fs/cgroup/cpu.stat", "usage_usec 5\n");
        v2.write("sys/fs/cgroup/cpu.max", "lots\n");
        let s = CpuSampler::with_root(&v2.0).unwrap();
        assert!(s.allowance().unwrap_err().to_string().contains("cpu.max"));
    }

    #[test]
    fn unsupported_os_says_so() {
        let linux = std::env::consts::OS == "linux";
        match CpuSampler::new() {
            Err(CpuError::Unsupported { os }) => {
                assert!(!linux);
                assert_eq!(os, std::env::consts::OS);
            }
            // On Linux: a real source, or (in a bare sandbox) an honest error.
            other => assert!(linux, "{other:?}"),
        }
        let e = CpuError::Unsupported { os: "plan9" };
        assert_eq!(
            e.to_string(),
            "CPU usage sampling is not supported on plan9 (needs Linux cgroups or /proc/stat)"
        );
    }

    /// go-zero's truncating average, for comparison: `int64(prev·0.95 + cur·0.05)`
    /// ([`core/stat/usage.go`](https://github.com/zeromicro/go-zero/blob/f29c8612e86fca4ac1c6b718fd83f73fbe7235eb/core/stat/usage.go#L38)).
    fn go_zero_ema(prev: i64, cur: i64) -> i64 {
        (prev as f64 * 0.95 + cur as f64 * (1.0 - 0.95)) as i64
    }

    #[test]
    fn full_load_reaches_1000_unlike_go_zero() {
        // go-zero's average under a steady full load: 50, 97, 142, 184, 224, 262, …, 902 at sample 47,
        // 981 forever.
        let mut g = 0i64;
        let mut seq = Vec::new();
        for _ in 0..1000 {
            g = go_zero_ema(g, 1000);
            seq.push(g);
        }
        assert_eq!(seq[..6], [50, 97, 142, 184, 224, 262]);
        assert_eq!(seq.iter().position(|&v| v >= 900), Some(46));
        assert_eq!(seq[46], 902);
        assert_eq!(*seq.last().unwrap(), 981);
        assert_eq!(go_zero_ema(500, 500), 500);
        let mut c = 0;
        for _ in 0..1000 {
            c = go_zero_ema(c, 500);
        }
        assert_eq!(c, 481);

        // This sampler: a fake cgroup at full load for 160 samples of 250 ms.
        let fs = Fake::new("ema");
        fs.write("sys/fs/cgroup/cgroup.controllers", "cpu\n");
        fs.write("sys/fs/cgroup/cpu.max", "100000 100000\n");
        fs.write("sys/fs/cgroup/cpuset.cpus.effective", "0\n");
        fs.write("sys/fs/cgroup/cpu.stat", "usage_usec 0\n");
        let mut s = CpuSampler::with_root(&fs.0).unwrap();
        s.sample(0).unwrap();
        let mut ours = Vec::new();
        for i in 1..=160u64 {
            fs.write(
                "sys/fs/cgroup/cpu.stat",
                &std::format!("usage_usec {}\n", i * 250_000),
            );
            ours.push(s.sample(i * 250 * MS).unwrap());
        }
        assert_eq!(ours[..6], [50, 98, 143, 185, 226, 265]);
        assert_eq!(ours.iter().position(|&v| v == 1000), Some(148)); // the 149th sample
        assert_eq!(*ours.last().unwrap(), 1000);
        assert!(ours.windows(2).all(|w| w[0] <= w[1]));
    }
}
