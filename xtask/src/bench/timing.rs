//! The timing runs: `cargo xtask bench` (criterion's `hot_path`, `c_abi`, `tower_service` and
//! `metrics`, then the `pairs` bench's allocation count and interleaved rounds) and `cargo xtask bench --c-abi` (the C ABI's
//! bench alone), their facts saved in [`TIMING`].

use super::facts::{
    load, load_average, machine, run_facts, save, Facts, C_ABI_META, RUN_FACTS, TIMING,
};
use super::{metrics, tower};
use crate::process::{fail, run};
use std::fs;
use std::path::Path;
use std::time::{Instant, SystemTime};
use walkdir::WalkDir;

/// `cargo xtask bench [CRITERION ARGS..]`: every bench, with the criterion arguments passed to each
/// criterion bench.
pub(super) fn time(target: &Path, out: &Path, criterion_args: &[&str]) {
    let started = SystemTime::now();
    let t0 = Instant::now();
    let mut facts = machine();
    facts.extend(run_facts("cargo", &bench_args("hot_path", criterion_args)));
    facts.extend(c_abi(target, criterion_args));
    facts.extend(run_facts(
        "cargo",
        &bench_args(tower::BENCH, criterion_args),
    ));
    facts.extend(run_facts(
        "cargo",
        &bench_args(metrics::BENCH, criterion_args),
    ));
    for mode in ["allocations", "interleave"] {
        facts.extend(run_facts(
            "cargo",
            &[
                "bench",
                "-p",
                "weir-lb-benches",
                "--bench",
                "pairs",
                "--",
                mode,
            ],
        ));
    }
    facts.insert("meta.load_after".into(), load_average());
    facts.insert(
        "meta.wall_s".into(),
        format!("{:.0}", t0.elapsed().as_secs_f64()),
    );
    let mut command = "cargo xtask bench".to_string();
    for a in criterion_args {
        command.push(' ');
        command.push_str(a);
    }
    facts.insert("meta.command".into(), command);
    let found = medians(&target.join("criterion"), started, &mut facts);
    if found == 0 {
        fail("criterion wrote no estimates in this run");
    }
    save(&out.join(TIMING), &facts);
    eprintln!("xtask: {found} benchmark medians from this run");
}

/// `cargo bench`'s arguments for one criterion bench of `weir-lb-benches`.
fn bench_args<'a>(bench: &'a str, criterion_args: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["bench", "-p", "weir-lb-benches", "--bench", bench];
    if !criterion_args.is_empty() {
        args.push("--");
        args.extend_from_slice(criterion_args);
    }
    args
}

/// The C ABI's pairs beside the Rust pair (`benches/benches/c_abi.rs`): builds `libweir` as shipped
/// (profile `release-c`, see the root Cargo.toml) and runs the bench with `WEIR_LIBWEIR` naming the
/// shared library, so it is called as C calls it.
fn c_abi(target: &Path, criterion_args: &[&str]) -> Facts {
    run(
        "cargo",
        &["build", "--profile", "release-c", "-p", "weir-lb-ffi"],
        &[],
    );
    let lib = target.join("release-c").join(format!(
        "{}weir{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    // Inherited by the bench (edition 2021: `set_var` is safe; xtask is single-threaded here).
    std::env::set_var("WEIR_LIBWEIR", &lib);
    run_facts("cargo", &bench_args("c_abi", criterion_args))
}

/// `cargo xtask bench --c-abi`: only the C ABI's bench; its medians replace the C ABI's in the saved
/// timings (the rest of the file, and its run's description, stay those of the last full run; this run's own
/// description is saved under `c_abi.meta.*` and shown beside it).
pub(super) fn c_abi_only(target: &Path, out: &Path) {
    let started = SystemTime::now();
    let clock = Instant::now();
    let path = out.join(TIMING);
    let mut facts = load(&path);
    facts.retain(|k, _| !k.starts_with("median.c_abi/") && !k.starts_with(C_ABI_META));
    // This run's own description, beside the full run's.
    let mut own = machine();
    own.insert("meta.command".into(), "cargo xtask bench --c-abi".into());
    facts.extend(c_abi(target, &[]));
    own.insert("meta.load_after".into(), load_average());
    own.insert(
        "meta.wall_s".into(),
        format!("{:.0}", clock.elapsed().as_secs_f64()),
    );
    facts.extend(
        own.into_iter()
            .filter(|(k, _)| RUN_FACTS.contains(&k.as_str()))
            .map(|(k, v)| (format!("{C_ABI_META}{k}"), v)),
    );
    let mut fresh = Facts::new();
    medians(&target.join("criterion"), started, &mut fresh);
    let found = fresh
        .keys()
        .filter(|k| k.starts_with("median.c_abi/"))
        .count();
    if found == 0 {
        fail("the C ABI's bench wrote no estimates (is libweir.so built?)");
    }
    facts.extend(
        fresh
            .into_iter()
            .filter(|(k, _)| k.starts_with("median.c_abi/")),
    );
    save(&path, &facts);
    eprintln!("xtask: {found} C ABI medians from this run");
}

/// Adds `median.<id>` for every criterion benchmark whose estimates were written since `since`.
///
/// Criterion keeps `<id>/new/estimates.json` for each benchmark it has ever run (`<id>` may have several
/// levels: `pair/weir-cascade-buckets/16`); only those written by this run count, so a filtered run
/// does not pass off old medians as its own. Directories or files that cannot be read are skipped,
/// and symbolic links are followed (a loop is reported by walkdir as an error and skipped).
fn medians(dir: &Path, since: SystemTime, facts: &mut Facts) -> usize {
    let mut found = 0;
    for e in WalkDir::new(dir)
        .follow_links(true)
        .into_iter()
        .filter_map(Result::ok)
    {
        let p = e.path();
        if e.file_type().is_dir() || !p.ends_with("new/estimates.json") {
            continue;
        }
        let fresh = e
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .is_some_and(|t| t >= since);
        if !fresh {
            continue;
        }
        let (Some(id), Ok(text)) = (
            p.parent()
                .and_then(Path::parent)
                .and_then(|q| q.strip_prefix(dir).ok()),
            fs::read_to_string(p),
        ) else {
            continue;
        };
        if let Some(m) = median_estimate(&text) {
            let id = id.to_string_lossy().replace('\\', "/");
            facts.insert(format!("median.{id}"), format!("{m:.3}"));
            found += 1;
        }
    }
    found
}

/// The median's point estimate (ns) in one of criterion's `estimates.json`; `None` when the file is
/// not JSON or has no such number (a half-written file, another criterion format), so that the
/// benchmark is left out instead of the run failing.
fn median_estimate(json: &str) -> Option<f64> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v["median"]["point_estimate"].as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// The shape criterion 0.8 writes to `<id>/new/estimates.json` (one line, keys in this order).
    const ESTIMATES: &str = r#"{"mean":{"confidence_interval":{"confidence_level":0.95,"lower_bound":40.1,"upper_bound":42.9},"point_estimate":41.5,"standard_error":0.7},"median":{"confidence_interval":{"confidence_level":0.95,"lower_bound":122.9,"upper_bound":124.0},"point_estimate":123.4,"standard_error":1.0},"median_abs_dev":{"confidence_interval":{"confidence_level":0.95,"lower_bound":0.1,"upper_bound":0.3},"point_estimate":0.2,"standard_error":0.05},"slope":null,"std_dev":{"confidence_interval":{"confidence_level":0.95,"lower_bound":1.0,"upper_bound":2.0},"point_estimate":1.5,"standard_error":0.2}}"#;

    #[test]
    fn median_is_the_medians_point_estimate() {
        assert_eq!(median_estimate(ESTIMATES), Some(123.4));
        // Pretty-printed, with an integer estimate and the median first.
        let pretty = "{\n  \"median\": {\n    \"point_estimate\": 97,\n    \"standard_error\": 1.0\n  },\n  \"mean\": {\"point_estimate\": 5.0}\n}";
        assert_eq!(median_estimate(pretty), Some(97.0));
    }

    #[test]
    fn median_is_none_without_one() {
        assert_eq!(median_estimate(""), None);
        assert_eq!(median_estimate(&ESTIMATES[..ESTIMATES.len() / 2]), None);
        assert_eq!(median_estimate(r#"{"mean":{"point_estimate":1.0}}"#), None);
        assert_eq!(
            median_estimate(r#"{"median":{"point_estimate":null}}"#),
            None
        );
        assert_eq!(
            median_estimate(r#"{"median":{"point_estimate":"1.0"}}"#),
            None
        );
        // The median absolute deviation is not the median.
        assert_eq!(
            median_estimate(r#"{"median_abs_dev":{"point_estimate":0.2}}"#),
            None
        );
    }

    #[test]
    fn medians_reads_the_new_estimates_of_every_level() {
        let dir = std::env::temp_dir().join(format!("xtask-medians-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let write = |rel: &str, text: &str| {
            let p = dir.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        write("pair/weir-cascade-buckets/16/new/estimates.json", ESTIMATES);
        write(
            "pair/weir-cascade-buckets/16/base/estimates.json",
            &ESTIMATES.replace("123.4", "1.0"),
        );
        write(
            "floor/cas/new/estimates.json",
            r#"{"median":{"point_estimate":2.25}}"#,
        );
        write("floor/cas/change/estimates.json", ESTIMATES);
        write("floor/broken/new/estimates.json", "{");
        write("report/index.html", "<html>");

        let mut facts = Facts::new();
        assert_eq!(medians(&dir, UNIX_EPOCH, &mut facts), 2);
        let want: Facts = [
            ("median.floor/cas", "2.250"),
            ("median.pair/weir-cascade-buckets/16", "123.400"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(facts, want);

        // Nothing was written since an hour from now.
        let later = SystemTime::now() + Duration::from_secs(3600);
        assert_eq!(medians(&dir, later, &mut Facts::new()), 0);
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(medians(&dir, UNIX_EPOCH, &mut Facts::new()), 0);
    }
}
