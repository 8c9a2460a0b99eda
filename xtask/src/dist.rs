//! `cargo xtask dist-c --prefix DIR`: installs the C library for C programs that find it with
//! pkg-config:
//!
//! ```text
//! DIR/include/weir.h
//! DIR/lib/libweir.a
//! DIR/lib/libweir.so.X.Y.Z, with the links libweir.so.SONAME-VERSION and libweir.so (Linux)
//! DIR/lib/pkgconfig/weir.pc
//! ```
//!
//! The libraries are built with the `release-c` profile (release with whole-program LTO: see the root
//! Cargo.toml), the build `cargo xtask bench --c-abi` measures. On Linux the shared library gets a soname, which it has only
//! here (a plain `cargo build` leaves it out, so programs linked against `target/*/libweir.so` still
//! find it by that name): `libweir.so.0.MINOR` while the version is 0.x (a minor release may break the
//! ABI then), `libweir.so.MAJOR` from 1.0 on. `weir.pc`'s `Libs.private` is what rustc says a program
//! linking the static library also needs (`--print native-static-libs`).
//!
//! `cargo xtask dist-c --check` (run by `cargo xtask ci`) installs into `<target>/dist-c/prefix` and
//! builds `ffi-c/examples/client.c` against it twice, with the flags pkg-config gives: once against the
//! shared library (run with `LD_LIBRARY_PATH`), once against the static one (`pkg-config --static`, the
//! archive chosen with `-l:libweir.a`); each build checks header and library versions (`client -V`) and
//! balances a short run over the example's servers without losing a call. Without pkg-config the flags
//! are read from `weir.pc` directly (and it says so).

use crate::example::{build_server, check_no_loss, run_client, Summary};
use crate::{fail, run};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// What the example's client is compiled with in the check (no sanitizers: the installed library is a
/// release build, and the point is the link).
const C_FLAGS: [&str; 6] = [
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Wpedantic",
    "-Werror",
    "-O2",
];

pub(crate) fn dist(args: &[String]) {
    match args {
        [flag, prefix] if flag == "--prefix" => {
            // xtask runs in the workspace root: a relative DIR means the caller's folder (the shell's
            // PWD), as it would for any install command.
            let prefix = Path::new(prefix);
            let prefix = match std::env::var_os("PWD") {
                Some(pwd) if prefix.is_relative() => PathBuf::from(pwd).join(prefix),
                _ => prefix.to_path_buf(),
            };
            install(&prefix);
        }
        [flag] if flag == "--check" => check(),
        _ => {
            eprintln!("usage: cargo xtask dist-c --prefix DIR | --check");
            std::process::exit(2);
        }
    }
}

/// The cargo target directory (`CARGO_TARGET_DIR` or a config file may move it) and weir-ffi's version.
pub(crate) fn metadata() -> (PathBuf, String) {
    let json = crate::cargo_metadata();
    let target = crate::metadata_target_dir(&json)
        .unwrap_or_else(|| fail("cargo metadata gave no target_directory"));
    let v: serde_json::Value = serde_json::from_str(&json)
        .unwrap_or_else(|e| fail(&format!("cargo metadata gave no JSON: {e}")));
    let version = v["packages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "weir-ffi"))
        .and_then(|p| p["version"].as_str())
        .map(String::from)
        .unwrap_or_else(|| fail("cargo metadata has no weir-ffi version"));
    (target, version)
}

/// What `install` put where.
struct Installed {
    prefix: PathBuf,
    lib: PathBuf,
}

fn install(prefix: &Path) -> Installed {
    let start = Instant::now();
    let (target, version) = metadata();
    let soname = soname(&version);
    // `cargo rustc` rather than `cargo build`: only the final crate gets the extra flags (the soname
    // affects only the cdylib's link), and rustc's note on the native libraries is replayed by cargo
    // when the build is already fresh.
    let mut args = vec![
        "rustc",
        "-p",
        "weir-ffi",
        "--profile",
        "release-c",
        "--lib",
        "--",
        "--print",
        "native-static-libs",
    ];
    let link_arg = format!("link-arg=-Wl,-soname,{soname}");
    if cfg!(target_os = "linux") {
        args.extend(["-C", &link_arg]);
    }
    eprintln!("\n==> cargo {}", args.join(" "));
    let out = Command::new("cargo")
        .args(&args)
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run cargo: {e}")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    eprint!("{stderr}");
    if !out.status.success() {
        fail(&format!(
            "the release-c build of weir-ffi exited with {}",
            out.status
        ));
    }
    let private_libs = native_static_libs(&stderr)
        .unwrap_or_else(|| fail("rustc printed no `native-static-libs` note"));

    if prefix.to_string_lossy().chars().any(char::is_whitespace) {
        fail("the prefix must not contain whitespace (pkg-config splits flags on it)");
    }
    let include = prefix.join("include");
    let lib = prefix.join("lib");
    let pkgconfig = lib.join("pkgconfig");
    for dir in [&include, &pkgconfig] {
        fs::create_dir_all(dir)
            .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", dir.display())));
    }
    // Absolute, for weir.pc's prefix.
    let prefix = fs::canonicalize(prefix)
        .unwrap_or_else(|e| fail(&format!("cannot resolve {}: {e}", prefix.display())));
    let built = target.join("release-c");
    copy(Path::new("include/weir.h"), &include.join("weir.h"));
    copy(&built.join("libweir.a"), &lib.join("libweir.a"));
    if cfg!(target_os = "linux") {
        // libweir.so -> libweir.so.0.1 (the soname) -> libweir.so.0.1.0 (the file).
        let file = format!("libweir.so.{version}");
        copy(&built.join("libweir.so"), &lib.join(&file));
        link(&file, &lib.join(&soname));
        link(&soname, &lib.join("libweir.so"));
    } else {
        let name = format!(
            "{}weir{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        );
        copy(&built.join(&name), &lib.join(&name));
    }
    let pc = pkg_config_file(&prefix, &version, &private_libs);
    let pc_path = pkgconfig.join("weir.pc");
    fs::write(&pc_path, pc)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", pc_path.display())));
    eprintln!(
        "    installed weir {version} into {} in {:.1} s",
        prefix.display(),
        start.elapsed().as_secs_f64()
    );
    Installed {
        lib: prefix.join("lib"),
        prefix,
    }
}

/// The shared library's soname for `version`: the part of the version that an ABI break must change.
fn soname(version: &str) -> String {
    let mut parts = version.split('.');
    match (parts.next(), parts.next()) {
        (Some("0"), Some(minor)) => format!("libweir.so.0.{minor}"),
        (Some(major), _) => format!("libweir.so.{major}"),
        _ => fail(&format!("not a version: {version}")),
    }
}

/// The libraries rustc's `native-static-libs` note names, from its output.
fn native_static_libs(rustc_output: &str) -> Option<String> {
    rustc_output
        .lines()
        .find_map(|l| l.split_once("native-static-libs: "))
        .map(|(_, libs)| libs.trim().to_string())
}

fn pkg_config_file(prefix: &Path, version: &str, private_libs: &str) -> String {
    format!(
        "# Installed by `cargo xtask dist-c`.\n\
         prefix={}\n\
         exec_prefix=${{prefix}}\n\
         libdir=${{exec_prefix}}/lib\n\
         includedir=${{prefix}}/include\n\
         \n\
         Name: weir\n\
         Description: Adaptive load balancing and overload protection (the C API of weir)\n\
         URL: https://github.com/weir-lb/weir\n\
         Version: {version}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} -lweir\n\
         Libs.private: {private_libs}\n",
        prefix.display()
    )
}

fn copy(from: &Path, to: &Path) {
    // Removed first: copying onto a link left by an earlier install would write through it.
    let _ = fs::remove_file(to);
    fs::copy(from, to).unwrap_or_else(|e| {
        fail(&format!(
            "cannot copy {} to {}: {e}",
            from.display(),
            to.display()
        ))
    });
}

#[cfg(unix)]
fn link(target: &str, at: &Path) {
    let _ = fs::remove_file(at);
    std::os::unix::fs::symlink(target, at)
        .unwrap_or_else(|e| fail(&format!("cannot link {} -> {target}: {e}", at.display())));
}

#[cfg(not(unix))]
fn link(target: &str, at: &Path) {
    fail(&format!(
        "cannot link {} -> {target}: not a unix",
        at.display()
    ));
}

pub(crate) fn check() {
    let start = Instant::now();
    let (target, _) = metadata();
    let out = target.join("dist-c");
    let _ = fs::remove_dir_all(&out);
    let installed = install(&out.join("prefix"));
    let pc_dir = installed.lib.join("pkgconfig");
    let pkg_config = PkgConfig::find(&pc_dir);

    let server = build_server(&out, &C_FLAGS);
    let lib_path = installed.lib.to_string_lossy().into_owned();
    let cflags = pkg_config.flags(&["--cflags"]);
    // Dynamic: `cc app.c $(pkg-config --cflags --libs weir)`.
    let dynamic = compile(
        &out,
        "client-shared",
        &cflags,
        &pkg_config.flags(&["--libs"]),
    );
    // Static: the same with `--static`, the archive chosen by name (with both libraries in one folder,
    // `-lweir` means the shared one).
    let static_libs: Vec<String> = pkg_config
        .flags(&["--static", "--libs"])
        .into_iter()
        .map(|f| {
            if f == "-lweir" {
                "-l:libweir.a".into()
            } else {
                f
            }
        })
        .collect();
    let fixed = compile(&out, "client-static", &cflags, &static_libs);

    for (client, envs) in [
        (&dynamic, vec![("LD_LIBRARY_PATH", lib_path.as_str())]),
        // No LD_LIBRARY_PATH: it must not need the shared library at all.
        (&fixed, vec![]),
    ] {
        let client_s = client.to_string_lossy();
        run(&client_s, &["-V"], &envs);
        let checked = run_client(&server, client, &envs, &["-n", "300", "-c", "4"])
            .and_then(|text| check_no_loss(&Summary::parse(&text)?));
        if let Err(e) = checked {
            fail(&format!("dist-c --check: {}: {e}", client.display()));
        }
    }
    eprintln!(
        "    dist-c --check passed ({} in {}) in {:.1} s",
        pkg_config.describe(),
        installed.prefix.display(),
        start.elapsed().as_secs_f64()
    );
}

/// Compiles the example's client as a user would: `cc FLAGS client.c CFLAGS LIBS -lpthread`.
fn compile(out: &Path, name: &str, cflags: &[String], libs: &[String]) -> PathBuf {
    let exe = out.join(name);
    let mut args: Vec<String> = C_FLAGS.iter().map(|s| s.to_string()).collect();
    args.extend(cflags.iter().cloned());
    args.push("ffi-c/examples/client.c".into());
    args.extend(libs.iter().cloned());
    args.extend([
        "-lpthread".into(),
        "-o".into(),
        exe.to_string_lossy().into(),
    ]);
    run(
        "cc",
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &[],
    );
    exe
}

/// pkg-config itself, or, where it is missing, `weir.pc` read directly.
enum PkgConfig {
    Tool(PathBuf),
    File(PathBuf),
}

impl PkgConfig {
    fn find(pc_dir: &Path) -> PkgConfig {
        let works = Command::new("pkg-config")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if works {
            PkgConfig::Tool(pc_dir.to_path_buf())
        } else {
            eprintln!(
                "\n!!!!! pkg-config not found: the check reads weir.pc directly instead !!!!!"
            );
            PkgConfig::File(pc_dir.join("weir.pc"))
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            PkgConfig::Tool(_) => "flags from pkg-config",
            PkgConfig::File(_) => "flags read from weir.pc without pkg-config",
        }
    }

    /// `pkg-config ARGS weir`, split into flags.
    fn flags(&self, args: &[&str]) -> Vec<String> {
        let text = match self {
            PkgConfig::Tool(dir) => {
                let out = Command::new("pkg-config")
                    .args(args)
                    .arg("weir")
                    .env("PKG_CONFIG_PATH", dir)
                    .output()
                    .unwrap_or_else(|e| fail(&format!("cannot run pkg-config: {e}")));
                if !out.status.success() {
                    fail(&format!(
                        "pkg-config {} weir: {}",
                        args.join(" "),
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
                String::from_utf8_lossy(&out.stdout).into_owned()
            }
            PkgConfig::File(path) => {
                let text = fs::read_to_string(path)
                    .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", path.display())));
                pc_flags(&text, args)
            }
        };
        eprintln!("    pkg-config {} weir: {}", args.join(" "), text.trim());
        text.split_whitespace().map(String::from).collect()
    }
}

/// What pkg-config prints for `args` (`--cflags`, `--libs`, `--static`), from a `.pc` file as simple as
/// ours: `name=value` variables, `Field: value` lines, `${name}` references.
fn pc_flags(pc: &str, args: &[&str]) -> String {
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    let mut fields: BTreeMap<String, String> = BTreeMap::new();
    let expand = |text: &str, vars: &BTreeMap<String, String>| {
        let mut text = text.to_string();
        // Each pass resolves one level; variables refer only to earlier ones.
        for _ in 0..8 {
            for (k, v) in vars {
                text = text.replace(&format!("${{{k}}}"), v);
            }
        }
        text
    };
    for line in pc.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let var = line.split_once('=');
        let field = line.split_once(':');
        match (var, field) {
            (Some((k, v)), f) if f.is_none_or(|(fk, _)| fk.len() > k.len()) => {
                let v = expand(v.trim(), &vars);
                vars.insert(k.trim().to_string(), v);
            }
            (_, Some((k, v))) => {
                fields.insert(k.trim().to_string(), expand(v.trim(), &vars));
            }
            _ => {}
        }
    }
    let get = |k: &str| fields.get(k).cloned().unwrap_or_default();
    let mut out = Vec::new();
    if args.contains(&"--cflags") {
        out.push(get("Cflags"));
    }
    if args.contains(&"--libs") {
        out.push(get("Libs"));
        if args.contains(&"--static") {
            out.push(get("Libs.private"));
        }
    }
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sonames_follow_the_abi() {
        assert_eq!(soname("0.1.0"), "libweir.so.0.1");
        assert_eq!(soname("0.12.3"), "libweir.so.0.12");
        assert_eq!(soname("2.4.1"), "libweir.so.2");
    }

    #[test]
    fn the_native_libraries_come_from_rustcs_note() {
        let out = "   Compiling weir-ffi\nnote: Link against the following native artifacts when linking against this static library. The order and any duplication can be significant on some platforms.\n\nnote: native-static-libs: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc\n\n    Finished";
        assert_eq!(
            native_static_libs(out).as_deref(),
            Some("-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc")
        );
        assert_eq!(native_static_libs("    Finished"), None);
    }

    #[test]
    fn the_pc_file_reads_as_pkg_config_would() {
        let pc = pkg_config_file(Path::new("/opt/w"), "0.1.0", "-lpthread -ldl -lm");
        assert!(pc.contains("\nVersion: 0.1.0\n"), "{pc}");
        assert_eq!(pc_flags(&pc, &["--cflags"]), "-I/opt/w/include");
        assert_eq!(pc_flags(&pc, &["--libs"]), "-L/opt/w/lib -lweir");
        assert_eq!(
            pc_flags(&pc, &["--static", "--cflags", "--libs"]),
            "-I/opt/w/include -L/opt/w/lib -lweir -lpthread -ldl -lm"
        );
    }
}
