//! `cargo xtask wheel [--test]`: the artifacts of the Python package, `weir-lb` on PyPI, and their checks.
//!
//! `cargo xtask wheel` builds the abi3 wheel (`maturin build --release`: one wheel for every CPython >=
//! 3.9) and the sdist (`maturin sdist`, which copies the path dependency `core/` in beside `py/` and
//! points `py/Cargo.toml` at it) into `target/wheels`, then reads both back ([`check_wheel`],
//! [`check_sdist`]): the metadata of `py/pyproject.toml`, the extras, the licences, the README as the
//! description, every file of the Python package (`py.typed` and the stub included), and for the sdist
//! every Rust source of `py/` and `core/`.
//!
//! `--test` (which `ci` runs) then proves that the artifacts install without a Rust toolchain and build
//! with one: the wheel goes into a fresh venv, with no Rust in reach, and the test suite runs against it
//! ([`test_without_rust`]); the sdist is built into a wheel by `pip wheel` from an empty directory, and
//! that wheel is checked as the other ([`build_sdist`]).

use super::{
    path, run_in, system_python, venv, venv_bin, venv_command, venv_env, TOOLS, WHEEL_INSTALL,
};
use crate::process::{fail, run};
use crate::workspace::target_dir;
use std::collections::BTreeSet;
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The package's optional extras (`pip install "weir-lb[httpx]"`), each with the distribution it pulls in.
const EXTRAS: [(&str, &str); 3] = [
    ("httpx", "httpx"),
    ("requests", "requests"),
    ("prometheus", "prometheus-client"),
];

/// The licence files every artifact carries: at the sdist's root, and in the wheel under
/// `.dist-info/licenses/` (maturin takes them from `py/`, the directory of `pyproject.toml`).
const LICENCES: [&str; 2] = ["LICENSE-APACHE", "LICENSE-MIT"];

/// A Rust toolchain's programs: none may be on the `PATH` that the wheel is installed and tested with.
const RUST_PROGRAMS: [&str; 3] = ["cargo", "rustc", "rustup"];

/// The system's program directories on that `PATH`, after the fresh venv's own (Unix).
const SYSTEM_PATH: [&str; 2] = ["/usr/bin", "/bin"];

/// The oldest glibc that `py/README.md` promises the Linux wheel runs on: 2.34, the wheel's tag being
/// `manylinux_2_34`. maturin tags the wheel by the newest glibc symbol version it links, and that follows
/// the glibc of the machine that builds it: built against 2.36, the wheel links `pthread_key_create` as
/// of 2.34 (where libpthread moved into libc).
const README_GLIBC_MINOR: u32 = 34;

/// `cargo xtask wheel [--test]`: the abi3 wheel (CPython >= 3.9) and the sdist in `target/wheels`, each
/// checked for its metadata and files ([`check_wheel`], [`check_sdist`]). With `--test` (which `ci`
/// runs): the wheel installed into a fresh venv with no Rust in reach and the test suite run against it
/// ([`test_without_rust`]), and the sdist built into a wheel by pip from a clean directory
/// ([`build_sdist`]).
pub fn wheel(args: &[String]) {
    let test = match args {
        [] => false,
        [flag] if flag == "--test" => true,
        _ => fail("usage: cargo xtask wheel [--test]"),
    };
    let venv = venv();
    let envs = venv_env(&venv);
    let python = path(&venv_bin(&venv, "python"));
    let maturin = path(&venv_bin(&venv, "maturin"));
    let project = Project::read();
    let out = target_dir().join("wheels");
    // Only this build's artifacts, so that each is found by its exact name.
    fresh_dir(&out);
    let out_dir = path(&out);
    let build = [
        "build",
        "--release",
        "-m",
        "py/Cargo.toml",
        "--out",
        &out_dir,
    ];
    run_in(".", &maturin, &build, &envs);
    run_in(
        ".",
        &maturin,
        &["sdist", "-m", "py/Cargo.toml", "--out", &out_dir],
        &envs,
    );
    let wheel = abi3_wheel(&out, &project);
    let sdist = out.join(format!("{}.tar.gz", project.stem()));
    check_wheel(&python, &wheel, &project);
    if cfg!(target_os = "linux") {
        check_manylinux(&wheel);
    }
    check_sdist(&python, &sdist, &project);
    if test {
        let dir = target_dir().join("py-wheel-test");
        fresh_dir(&dir);
        test_without_rust(&wheel, &dir);
        build_sdist(&python, &sdist, &dir, &project);
    }
    for artifact in [&wheel, &sdist] {
        let size = std::fs::metadata(artifact).map(|m| m.len()).unwrap_or(0);
        eprintln!(
            "xtask: {} ({} KiB)",
            artifact.display(),
            size.div_ceil(1024)
        );
    }
}

/// What `py/pyproject.toml` declares in `[project]`, which every artifact's metadata must repeat. The
/// file names derive from `name` (`weir-lb` gives `weir_lb-0.1.0.tar.gz`), so nothing here names it.
#[derive(Debug, PartialEq)]
struct Project {
    name: String,
    version: String,
    requires_python: String,
}

impl Project {
    fn read() -> Project {
        let file = Path::new("py/pyproject.toml");
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", file.display())));
        Project::parse(&text).unwrap_or_else(|e| fail(&format!("{}: {e}", file.display())))
    }

    /// The string fields of `[project]`, read line by line (the file keeps each on one line).
    fn parse(pyproject: &str) -> Result<Project, String> {
        let mut section = "";
        let mut fields = Vec::new();
        for line in pyproject.lines().map(str::trim) {
            if line.starts_with('[') {
                section = line;
            } else if section == "[project]" {
                let Some((key, value)) = line.split_once('=') else {
                    continue;
                };
                let value = value.trim();
                if let Some(value) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
                    fields.push((key.trim(), value));
                }
            }
        }
        let field = |key: &str| {
            fields
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
                .ok_or(format!("[project] has no string `{key}`"))
        };
        Ok(Project {
            name: field("name")?,
            version: field("version")?,
            requires_python: field("requires-python")?,
        })
    }

    /// `name-version` as artifacts spell it: the name normalized, with `_` for each run of `-`, `_` and
    /// `.` (the wheel spec's escaping), as in `weir_lb-0.1.0`.
    fn stem(&self) -> String {
        let mut name = String::new();
        for c in self.name.to_ascii_lowercase().chars() {
            match c {
                '-' | '_' | '.' if name.ends_with('_') => {}
                '-' | '_' | '.' => name.push('_'),
                c => name.push(c),
            }
        }
        format!("{name}-{}", self.version)
    }
}

/// Empties `dir`, creating it if needed.
fn fresh_dir(dir: &Path) {
    if dir.exists() {
        std::fs::remove_dir_all(dir)
            .unwrap_or_else(|e| fail(&format!("cannot remove {}: {e}", dir.display())));
    }
    std::fs::create_dir_all(dir)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", dir.display())));
}

/// The one abi3 wheel of `project` in `dir` (its platform tag is the builder's to choose).
fn abi3_wheel(dir: &Path, project: &Project) -> PathBuf {
    let prefix = format!("{}-cp39-abi3-", project.stem());
    let names: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    match &names
        .iter()
        .filter(|n| n.starts_with(&prefix) && n.ends_with(".whl"))
        .collect::<Vec<_>>()[..]
    {
        [one] => dir.join(one),
        _ => fail(&format!(
            "expected one {prefix}*.whl in {}, found {names:?}",
            dir.display()
        )),
    }
}

/// The Linux wheel must run where `py/README.md` says it does: its tag a `manylinux_2_N` with N at most
/// [`README_GLIBC_MINOR`].
fn check_manylinux(wheel: &Path) {
    let name = wheel.file_name().unwrap_or_default().to_string_lossy();
    match manylinux_glibc(&name) {
        Some(minor) if minor <= README_GLIBC_MINOR => {
            eprintln!("    ok: the wheel needs glibc 2.{minor}")
        }
        found => fail(&format!(
            "{name} needs glibc 2.{} while py/README.md promises 2.{README_GLIBC_MINOR}: build it \
             against an older glibc (a manylinux container, or `maturin build --zig --compatibility \
             manylinux2014`), or change the promise",
            found.map_or("?".into(), |m| m.to_string())
        )),
    }
}

/// The glibc minor version of a wheel name's `manylinux_2_N` tag (the oldest, if it has several).
fn manylinux_glibc(wheel_name: &str) -> Option<u32> {
    wheel_name
        .split("manylinux_2_")
        .skip(1)
        .filter_map(|rest| rest.split('_').next()?.parse().ok())
        .min()
}

/// Lists an archive (a wheel or an sdist) with the build venv's Python and reads one member: the names
/// of its files and that member's text, if present.
const LIST_ARCHIVE: &str = r#"
import json, sys, tarfile, zipfile
archive, member = sys.argv[1:]
if archive.endswith(".whl"):
    with zipfile.ZipFile(archive) as z:
        names = z.namelist()
        text = z.read(member).decode() if member in names else None
else:
    with tarfile.open(archive) as t:
        names = [m.name for m in t.getmembers() if m.isfile()]
        text = t.extractfile(member).read().decode() if member in names else None
print(json.dumps({"names": names, "text": text}))
"#;

fn list_archive(python: &str, archive: &Path, member: &str) -> (Vec<String>, Option<String>) {
    let out = Command::new(python)
        .args(["-c", LIST_ARCHIVE, &path(archive), member])
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot start {python}: {e}")));
    let listing: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        fail(&format!(
            "cannot list {}: {e}\n{}",
            archive.display(),
            String::from_utf8_lossy(&out.stderr)
        ))
    });
    let names = listing["names"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| n.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    (names, listing["text"].as_str().map(String::from))
}

/// The files under `dir` (relative to it, `/`-separated) whose names pass `keep`, sorted.
fn files_under(dir: &str, keep: fn(&str) -> bool) -> Vec<String> {
    let mut files: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let relative = e.path().strip_prefix(dir).ok()?;
            let parts: Vec<_> = relative.iter().map(|p| p.to_string_lossy()).collect();
            Some(parts.join("/"))
        })
        .filter(|name| keep(name))
        .collect();
    if files.is_empty() {
        fail(&format!("{dir} holds no file to ship"));
    }
    files.sort();
    files
}

/// The Python package's files that ship, relative to `py/python`: its modules, the stub of the native
/// module and `py.typed` (not caches or a module built in place).
fn package_files() -> Vec<String> {
    let files = files_under("py/python", |name| {
        !name.contains("__pycache__")
            && (name.ends_with(".py") || name.ends_with(".pyi") || name.ends_with("/py.typed"))
    });
    for needed in ["weir/__init__.py", "weir/_weir.pyi", "weir/py.typed"] {
        if !files.iter().any(|f| f == needed) {
            fail(&format!("py/python/{needed} is missing"));
        }
    }
    files
}

/// The wheel: its metadata ([`metadata_problems`]), every file of the package, the native module and the
/// licences.
fn check_wheel(python: &str, wheel: &Path, project: &Project) {
    let dist_info = format!("{}.dist-info", project.stem());
    let (names, metadata) = list_archive(python, wheel, &format!("{dist_info}/METADATA"));
    let mut needed = package_files();
    needed.extend(LICENCES.map(|l| format!("{dist_info}/licenses/{l}")));
    let mut problems = missing(&names, &needed);
    if !names
        .iter()
        .any(|n| n.starts_with("weir/_weir.") && (n.ends_with(".so") || n.ends_with(".pyd")))
    {
        problems.push("no native module weir/_weir.*.so".into());
    }
    problems.extend(metadata_problems(metadata.as_deref(), project, &readme()));
    report(wheel, &names, &problems);
}

/// The sdist: its metadata, and everything a build needs: the Rust sources of `py/` and of `core/`
/// (the path dependency, which maturin copies in beside `py/` and the workspace manifest it inherits
/// from), the Python package, `pyproject.toml`, the README and the licences.
fn check_sdist(python: &str, sdist: &Path, project: &Project) {
    let root = project.stem();
    let (names, metadata) = list_archive(python, sdist, &format!("{root}/PKG-INFO"));
    let mut needed: Vec<String> = [
        "pyproject.toml",
        "README.md",
        "Cargo.toml",
        "py/Cargo.toml",
        "py/Cargo.lock",
        "core/Cargo.toml",
    ]
    .iter()
    .map(|f| f.to_string())
    .chain(LICENCES.map(String::from))
    .chain(
        files_under("py/src", |_| true)
            .into_iter()
            .map(|f| format!("py/src/{f}")),
    )
    .chain(
        files_under("core/src", |_| true)
            .into_iter()
            .map(|f| format!("core/src/{f}")),
    )
    .chain(package_files().into_iter().map(|f| format!("python/{f}")))
    .map(|f| format!("{root}/{f}"))
    .collect();
    needed.sort();
    let mut problems = missing(&names, &needed);
    problems.extend(metadata_problems(metadata.as_deref(), project, &readme()));
    report(sdist, &names, &problems);
}

/// The PyPI page: `py/README.md`.
fn readme() -> String {
    std::fs::read_to_string("py/README.md")
        .unwrap_or_else(|e| fail(&format!("cannot read py/README.md: {e}")))
}

fn missing(names: &[String], needed: &[String]) -> Vec<String> {
    needed
        .iter()
        .filter(|n| !names.contains(n))
        .map(|n| format!("{n} is missing"))
        .collect()
}

fn report(archive: &Path, names: &[String], problems: &[String]) {
    if !problems.is_empty() {
        fail(&format!(
            "{}:\n  {}\n(it holds {names:?})",
            archive.display(),
            problems.join("\n  ")
        ));
    }
    eprintln!("    ok: {} ({} files)", archive.display(), names.len());
}

/// What is wrong with an artifact's core metadata (a wheel's `METADATA`, an sdist's `PKG-INFO`): the
/// name, version and `Requires-Python` of `pyproject.toml`, exactly the [`EXTRAS`] (each requiring its
/// library), the [`LICENCES`], and `readme` as the Markdown description.
fn metadata_problems(metadata: Option<&str>, project: &Project, readme: &str) -> Vec<String> {
    let Some(metadata) = metadata else {
        return vec!["no metadata file".into()];
    };
    let (headers, body) = metadata.split_once("\n\n").unwrap_or((metadata, ""));
    let values = |key: &str| -> Vec<&str> {
        headers
            .lines()
            .filter_map(|line| line.split_once(": "))
            .filter(|(k, _)| *k == key)
            .map(|(_, v)| v.trim())
            .collect()
    };
    let mut problems = Vec::new();
    for (key, want) in [
        ("Name", &project.name),
        ("Version", &project.version),
        ("Requires-Python", &project.requires_python),
    ] {
        if values(key) != [want.as_str()] {
            problems.push(format!("{key}: {:?}, expected [{want:?}]", values(key)));
        }
    }
    let extras: BTreeSet<&str> = values("Provides-Extra").into_iter().collect();
    let names = EXTRAS.map(|(extra, _)| extra);
    if extras != BTreeSet::from(names) {
        problems.push(format!("Provides-Extra: {extras:?}, expected {names:?}"));
    }
    for (extra, dist) in EXTRAS {
        let marker = format!("extra == '{extra}'");
        let requires = |r: &&str| {
            let mut name = r.split(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)));
            name.next() == Some(dist) && r.contains(&marker)
        };
        if !values("Requires-Dist").iter().any(requires) {
            problems.push(format!("no Requires-Dist: {dist}... ; {marker}"));
        }
    }
    let licences: BTreeSet<&str> = values("License-File").into_iter().collect();
    if !LICENCES.iter().all(|l| licences.contains(l)) {
        problems.push(format!("License-File: {licences:?}, expected {LICENCES:?}"));
    }
    if !values("Description-Content-Type")
        .iter()
        .any(|t| t.starts_with("text/markdown"))
        || body.trim_end() != readme.trim_end()
    {
        problems.push("the description is not py/README.md as Markdown".into());
    }
    problems
}

/// Installs `wheel` into a fresh venv (`dir/venv`, not the build venv) and runs the test suite against
/// it, with no Rust in reach: [`without_rust`]'s environment, for pip too (`--only-binary :all:`, so it
/// can build nothing), from `dir`, where `import weir` cannot find the source tree's package. The wheel
/// is installed first as the pages say ([`install_as_the_pages_say`]), then with its extras, which bring
/// the pinned httpx, requests and prometheus-client of [`TOOLS`]; the suite's own `test_package.py`
/// checks that it imports the installed package, as this function does before.
fn test_without_rust(wheel: &Path, dir: &Path) {
    let venv = dir.join("venv");
    run(&system_python(), &["-m", "venv", &path(&venv)], &[]);
    let python = path(&venv_bin(&venv, "python"));
    let requirement = format!(
        "{}[{}]",
        path(wheel),
        EXTRAS.map(|(extra, _)| extra).join(",")
    );
    let mut install = vec![
        "-m",
        "pip",
        "install",
        "--quiet",
        "--only-binary",
        ":all:",
        &requirement,
    ];
    install.extend(["pytest", "httpx", "requests", "prometheus-client"].map(pinned));
    let cmd = without_rust(&python, &install, &venv, dir);
    let (mut set, mut unset) = (Vec::new(), Vec::new());
    for (key, value) in cmd.get_envs() {
        let key = key.to_string_lossy();
        match value {
            Some(v) => set.push(format!("{key}={}", v.to_string_lossy())),
            None => unset.push(key),
        }
    }
    eprintln!(
        "\nxtask: with no Rust from here on: {}; unset: {}",
        set.join(" "),
        unset.join(" ")
    );
    install_as_the_pages_say(wheel, &venv);
    run_checked(cmd);

    let out = without_rust(
        &python,
        &[
            "-c",
            "import weir, weir._weir; print(weir.__file__); print(weir._weir.__file__)",
        ],
        &venv,
        dir,
    )
    .output()
    .unwrap_or_else(|e| fail(&format!("cannot start {python}: {e}")));
    let imported = String::from_utf8_lossy(&out.stdout);
    let venv_root = canonical(&venv);
    if !out.status.success()
        || imported.lines().count() != 2
        || !imported
            .lines()
            .all(|f| canonical(Path::new(f)).starts_with(&venv_root))
    {
        fail(&format!(
            "weir must be imported from {}, not from {imported}{}",
            venv_root.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    eprintln!("    ok: weir imported from {}", venv_root.display());

    let root = canonical(Path::new("."));
    let config = path(&root.join("py/pyproject.toml"));
    let tests = path(&root.join("py/tests"));
    // The configuration names the suite's settings (warnings are errors); no cache is written into py/.
    run_checked(without_rust(
        &python,
        &[
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-c",
            &config,
            &tests,
        ],
        &venv,
        dir,
    ));
}

/// [`WHEEL_INSTALL`], the pages' command, as a user runs it with no Rust: with the venv's pip, in the
/// wheel's directory, the pattern standing for the wheel (which it must match, as a shell's would).
fn install_as_the_pages_say(wheel: &Path, venv: &Path) {
    let (pip, words) = venv_command(venv, WHEEL_INSTALL);
    let name = wheel
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut args: Vec<&str> = match words.split_last() {
        Some((pattern, rest)) if glob_matches(pattern, &name) => rest.to_vec(),
        _ => fail(&format!("`{WHEEL_INSTALL}` does not name the wheel {name}")),
    };
    args.push(&name);
    let dir = wheel
        .parent()
        .unwrap_or_else(|| fail("the wheel has no directory"));
    run_checked(without_rust(&pip, &args, venv, dir));
}

/// Whether `name` matches `pattern`, a file name with one `*` at most.
fn glob_matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        Some((start, end)) => {
            name.len() >= start.len() + end.len() && name.starts_with(start) && name.ends_with(end)
        }
        None => name == pattern,
    }
}

/// One of the [`TOOLS`] pins, by its package's name.
fn pinned(name: &str) -> &'static str {
    TOOLS
        .iter()
        .find(|t| t.split("==").next() == Some(name))
        .unwrap_or_else(|| fail(&format!("{name} is not pinned in TOOLS")))
}

fn canonical(p: &Path) -> PathBuf {
    p.canonicalize()
        .unwrap_or_else(|e| fail(&format!("cannot resolve {}: {e}", p.display())))
}

/// `python args` run in `dir` with no Rust in reach: this process's environment less every variable of
/// cargo, rustup, rustc, pyo3 and maturin and every one that points Python elsewhere (`PYTHONPATH`,
/// `PYTHONHOME`, `VIRTUAL_ENV`) or at libraries (`LD_LIBRARY_PATH`, where `cargo run` adds the
/// toolchain's); `PATH` is the venv's programs and [`SYSTEM_PATH`], checked to hold none of the
/// [`RUST_PROGRAMS`]; `CARGO_HOME` and `RUSTUP_HOME` name a directory that does not exist (so a rustup
/// proxy, if one were found, would find no toolchain); the user's site-packages are off.
fn without_rust(python: &str, args: &[&str], venv: &Path, dir: &Path) -> Command {
    let bin = venv_bin(venv, "python")
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| fail("the venv has no bin directory"));
    let path_dirs: Vec<PathBuf> = std::iter::once(bin)
        .chain(SYSTEM_PATH.iter().map(PathBuf::from))
        .collect();
    let found = rust_programs_in(&path_dirs);
    if !found.is_empty() {
        fail(&format!(
            "{found:?} on the PATH meant to have no Rust: the wheel cannot be tested without Rust here"
        ));
    }
    let nowhere = dir.join("no-rust-here");
    if nowhere.exists() {
        fail(&format!("{} must not exist", nowhere.display()));
    }
    let mut cmd = Command::new(python);
    cmd.args(args).current_dir(dir);
    for (key, _) in env::vars_os() {
        let name = key.to_string_lossy().to_ascii_uppercase();
        if ["CARGO", "RUST", "PYO3", "MATURIN"]
            .iter()
            .any(|p| name.starts_with(p))
            || ["PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "LD_LIBRARY_PATH"]
                .contains(&name.as_str())
        {
            cmd.env_remove(key);
        }
    }
    let joined =
        env::join_paths(&path_dirs).unwrap_or_else(|e| fail(&format!("cannot build a PATH: {e}")));
    cmd.env("PATH", joined)
        .env("CARGO_HOME", &nowhere)
        .env("RUSTUP_HOME", &nowhere)
        .env("PYTHONNOUSERSITE", "1");
    cmd
}

/// The [`RUST_PROGRAMS`] in `dirs`.
fn rust_programs_in(dirs: &[PathBuf]) -> Vec<PathBuf> {
    dirs.iter()
        .flat_map(|d| RUST_PROGRAMS.map(|p| d.join(p)))
        .filter(|p| p.exists())
        .collect()
}

/// Runs a prepared command, echoing it, and stops everything on failure (as `run` does).
fn run_checked(mut cmd: Command) {
    let dir = cmd.get_current_dir().map(|d| d.display().to_string());
    let args: Vec<_> = cmd.get_args().map(|a| a.to_string_lossy()).collect();
    let shown = format!(
        "(in {}) {} {}",
        dir.unwrap_or_else(|| ".".into()),
        cmd.get_program().to_string_lossy(),
        args.join(" ")
    );
    eprintln!("\n==> {shown}");
    let start = std::time::Instant::now();
    let status = cmd
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot start `{shown}`: {e}")));
    if !status.success() {
        fail(&format!("`{shown}` exited with {status}"));
    }
    eprintln!("    ok in {:.1} s", start.elapsed().as_secs_f64());
}

/// Builds the sdist into a wheel as pip does for a platform with no wheel (`pip wheel <sdist>`, maturin
/// fetched by pip, cargo's target directory inside pip's unpacked copy, so nothing is reused) from an
/// empty directory, then checks that wheel as the released one.
fn build_sdist(python: &str, sdist: &Path, dir: &Path, project: &Project) {
    let built = dir.join("from-sdist");
    std::fs::create_dir_all(&built)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", built.display())));
    let mut cmd = Command::new(python);
    cmd.args(["-m", "pip", "wheel", "--no-deps", "--wheel-dir", "."])
        .arg(sdist)
        .current_dir(&built)
        .env_remove("CARGO_TARGET_DIR");
    run_checked(cmd);
    check_wheel(python, &abi3_wheel(&built, project), project);
}

#[cfg(test)]
mod tests {
    use super::*;

    const PYPROJECT: &str = r#"[build-system]
requires = ["maturin>=1.9.4,<2.0"]
name = "not-the-project"

[project]
name = "weir-lb"
version = "0.1.0"
requires-python = ">=3.9"
license = { text = "MIT OR Apache-2.0" }

[tool.maturin]
module-name = "weir._weir"
"#;

    fn project() -> Project {
        Project::parse(PYPROJECT).unwrap()
    }

    /// A wheel's METADATA as maturin 1.16 writes it for `project()`, with `README` as its description.
    const README: &str = "# weir for Python\n\nText.\n";
    const METADATA: &str = "Metadata-Version: 2.4
Name: weir-lb
Version: 0.1.0
Classifier: Typing :: Typed
Requires-Dist: httpx>=0.27,<1 ; extra == 'httpx'
Requires-Dist: requests>=2.28,<3 ; extra == 'requests'
Requires-Dist: prometheus-client>=0.17,<1 ; extra == 'prometheus'
Provides-Extra: httpx
Provides-Extra: requests
Provides-Extra: prometheus
License-File: LICENSE-APACHE
License-File: LICENSE-MIT
Summary: Adaptive load balancing
License: MIT OR Apache-2.0
Requires-Python: >=3.9
Description-Content-Type: text/markdown; charset=UTF-8; variant=GFM

# weir for Python

Text.

";

    #[test]
    fn the_project_table_is_read_and_nothing_else() {
        assert_eq!(
            project(),
            Project {
                name: "weir-lb".into(),
                version: "0.1.0".into(),
                requires_python: ">=3.9".into(),
            }
        );
        let err = Project::parse("[project]\nname = \"weir\"\nversion = \"0.1.0\"\n").unwrap_err();
        assert_eq!(err, "[project] has no string `requires-python`");
    }

    #[test]
    fn file_names_use_the_normalized_name() {
        assert_eq!(project().stem(), "weir_lb-0.1.0");
        let odd = Project {
            name: "Weir.-LB".into(),
            ..project()
        };
        assert_eq!(odd.stem(), "weir_lb-0.1.0");
    }

    #[test]
    fn complete_metadata_has_no_problem() {
        let none: Vec<String> = Vec::new();
        assert_eq!(metadata_problems(Some(METADATA), &project(), README), none);
    }

    #[test]
    fn each_missing_piece_of_metadata_is_named() {
        let problems = |from: &str, to: &str| {
            assert!(METADATA.contains(from), "{from}");
            metadata_problems(Some(&METADATA.replacen(from, to, 1)), &project(), README)
        };
        assert_eq!(
            problems("Name: weir-lb", "Name: weir"),
            ["Name: [\"weir\"], expected [\"weir-lb\"]"]
        );
        assert_eq!(
            problems("Requires-Python: >=3.9\n", ""),
            ["Requires-Python: [], expected [\">=3.9\"]"]
        );
        assert_eq!(
            problems("License-File: LICENSE-MIT\n", ""),
            ["License-File: {\"LICENSE-APACHE\"}, expected [\"LICENSE-APACHE\", \"LICENSE-MIT\"]"]
        );
        assert_eq!(
            problems("Provides-Extra: requests\n", ""),
            ["Provides-Extra: {\"httpx\", \"prometheus\"}, expected [\"httpx\", \"requests\", \"prometheus\"]"]
        );
        // The extra's requirement must name its library, under its marker.
        assert_eq!(
            problems(
                "Requires-Dist: httpx>=0.27",
                "Requires-Dist: httpcore>=0.27"
            ),
            ["no Requires-Dist: httpx... ; extra == 'httpx'"]
        );
        assert_eq!(
            problems("extra == 'requests'", "extra == 'httpx'"),
            ["no Requires-Dist: requests... ; extra == 'requests'"]
        );
        assert_eq!(
            problems("Text.", "Another text."),
            ["the description is not py/README.md as Markdown"]
        );
        assert_eq!(
            problems("text/markdown", "text/plain"),
            ["the description is not py/README.md as Markdown"]
        );
        assert_eq!(
            metadata_problems(None, &project(), README),
            ["no metadata file"]
        );
    }

    #[test]
    fn the_glibc_of_a_wheel_tag() {
        let glibc = manylinux_glibc;
        assert_eq!(
            glibc("weir_lb-0.1.0-cp39-abi3-manylinux_2_34_x86_64.whl"),
            Some(34)
        );
        assert_eq!(
            glibc("w-0.1.0-cp39-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl"),
            Some(17)
        );
        assert_eq!(glibc("weir_lb-0.1.0-cp39-abi3-linux_x86_64.whl"), None);
        assert_eq!(glibc("weir_lb-0.1.0-cp39-abi3-macosx_11_0_arm64.whl"), None);
    }

    #[test]
    fn rust_programs_are_found_on_a_path() {
        let dir = env::temp_dir().join(format!("xtask-no-rust-{}", std::process::id()));
        let (empty, with_cargo) = (dir.join("empty"), dir.join("bin"));
        for d in [&empty, &with_cargo] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(with_cargo.join("cargo"), "").unwrap();
        std::fs::write(with_cargo.join("cargo-fmt"), "").unwrap();
        let none: Vec<PathBuf> = Vec::new();
        assert_eq!(rust_programs_in(std::slice::from_ref(&empty)), none);
        assert_eq!(
            rust_programs_in(&[empty, with_cargo.clone()]),
            [with_cargo.join("cargo")]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_pages_pattern_matches_the_wheel_only() {
        let wheel = "weir_lb-0.1.0-cp39-abi3-manylinux_2_34_x86_64.whl";
        let pattern = WHEEL_INSTALL.split_whitespace().last().unwrap();
        assert!(glob_matches(pattern, wheel));
        assert!(glob_matches(pattern, "weir_lb-.whl"));
        assert!(!glob_matches(pattern, "weir_lb-0.1.0.tar.gz"));
        assert!(!glob_matches(
            pattern,
            "weir-0.1.0-cp39-abi3-linux_x86_64.whl"
        ));
        assert!(!glob_matches("ab*ba", "aba"));
        assert!(glob_matches("a.whl", "a.whl"));
        assert!(!glob_matches("a.whl", "b.whl"));
    }

    #[test]
    fn missing_files_are_named() {
        let names = ["a".to_string(), "b".to_string()];
        let needed = ["a".to_string(), "c".to_string()];
        assert_eq!(missing(&names, &needed), ["c is missing"]);
    }
}
