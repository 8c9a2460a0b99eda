//! `cargo xtask dist-c --prefix DIR`: installs the C library, for C and C++ programs that find it with
//! pkg-config or CMake (the C guide, `ffi-c/README.md`, says how to use each):
//!
//! ```text
//! DIR/include/weir.h
//! DIR/lib/libweir.so.X.Y.Z, with the links libweir.so.SONAME-VERSION and libweir.so (Linux)
//! DIR/lib/weir-static/libweir.a
//! DIR/lib/pkgconfig/weir.pc, weir-static.pc
//! DIR/lib/cmake/weir/weirConfig.cmake, weirConfigVersion.cmake
//! ```
//!
//! - The libraries are built with the `release-c` profile (release with whole-program LTO: see the root
//!   Cargo.toml), the build `cargo xtask bench --c-abi` measures, and installed without their debug
//!   information (`strip -S`; the unstripped ones stay in `<target>/release-c/`).
//! - On Linux the shared library gets a soname, which it has only here (a plain `cargo build` leaves it
//!   out, so programs linked against `target/*/libweir.so` still find it by that name):
//!   `libweir.so.0.MINOR` while the version is 0.x (a minor release may break the ABI then),
//!   `libweir.so.MAJOR` from 1.0 on.
//! - The static library lies alone in `lib/weir-static/`: next to `libweir.so`, a plain `-lweir` would
//!   always mean the shared one. `weir.pc` links the shared library, `weir-static.pc` the static one with
//!   what rustc says a program linking it also needs (`--print native-static-libs`).
//! - The CMake package defines `weir::weir` (shared) and `weir::weir_static`; its paths are relative to
//!   the config file, so the installed tree may be moved. The pkg-config files name the prefix itself,
//!   as pkg-config expects.
//!
//! `cargo xtask dist-c --check` (run by `cargo xtask ci`) runs the C guide's examples: see `check.rs`.

#[cfg(unix)]
mod check;

#[cfg(unix)]
pub(crate) use check::check;

/// The check reads ELF files and runs what it builds: Linux only (it says so there too).
#[cfg(not(unix))]
pub(crate) fn check() {
    fail("dist-c --check checks the Linux layout (sonames, ELF sections): run it on Linux");
}

use crate::process::{fail, run};
use crate::workspace::{cargo_metadata, metadata_target_dir};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The static library's folder under `lib/`.
const STATIC_DIR: &str = "weir-static";
/// The CMake package's folder under `lib/`.
const CMAKE_DIR: &str = "cmake/weir";

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

/// The cargo target directory (`CARGO_TARGET_DIR` or a config file may move it) and weir-lb-ffi's version.
pub(crate) fn metadata() -> (PathBuf, String) {
    let json = cargo_metadata();
    let target = metadata_target_dir(&json)
        .unwrap_or_else(|| fail("cargo metadata gave no target_directory"));
    let v: serde_json::Value = serde_json::from_str(&json)
        .unwrap_or_else(|e| fail(&format!("cargo metadata gave no JSON: {e}")));
    let version = v["packages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == "weir-lb-ffi"))
        .and_then(|p| p["version"].as_str())
        .map(String::from)
        .unwrap_or_else(|| fail("cargo metadata has no weir-lb-ffi version"));
    (target, version)
}

/// The installed shared library: its file name, and its soname where it has one (Linux).
struct Shared {
    file: String,
    soname: Option<String>,
}

impl Shared {
    fn for_version(version: &str) -> Shared {
        if cfg!(target_os = "linux") {
            Shared {
                file: format!("libweir.so.{version}"),
                soname: Some(soname(version)),
            }
        } else {
            Shared {
                file: format!(
                    "{}weir{}",
                    std::env::consts::DLL_PREFIX,
                    std::env::consts::DLL_SUFFIX
                ),
                soname: None,
            }
        }
    }
}

fn install(prefix: &Path) {
    let start = Instant::now();
    let (target, version) = metadata();
    let shared = Shared::for_version(&version);
    // `cargo rustc` rather than `cargo build`: only the final crate gets the extra flags (the soname
    // affects only the cdylib's link), and rustc's note on the native libraries is replayed by cargo
    // when the build is already fresh.
    let mut args = vec![
        "rustc",
        "-p",
        "weir-lb-ffi",
        "--profile",
        "release-c",
        "--lib",
        "--",
        "--print",
        "native-static-libs",
    ];
    let link_arg = shared
        .soname
        .as_ref()
        .map(|soname| format!("link-arg=-Wl,-soname,{soname}"));
    if let Some(link_arg) = &link_arg {
        args.extend(["-C", link_arg]);
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
            "the release-c build of weir-lb-ffi exited with {}",
            out.status
        ));
    }
    let system_libs = native_static_libs(&stderr)
        .unwrap_or_else(|| fail("rustc printed no `native-static-libs` note"));

    if prefix.to_string_lossy().chars().any(char::is_whitespace) {
        fail("the prefix must not contain whitespace (pkg-config splits flags on it)");
    }
    let include = prefix.join("include");
    let lib = prefix.join("lib");
    let static_dir = lib.join(STATIC_DIR);
    let pkgconfig = lib.join("pkgconfig");
    let cmake = lib.join(CMAKE_DIR);
    for dir in [&include, &static_dir, &pkgconfig, &cmake] {
        fs::create_dir_all(dir)
            .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", dir.display())));
    }
    // Absolute, for the .pc files' prefix.
    let prefix = fs::canonicalize(prefix)
        .unwrap_or_else(|e| fail(&format!("cannot resolve {}: {e}", prefix.display())));
    let built = target.join("release-c");
    copy(Path::new("include/weir.h"), &include.join("weir.h"));
    let archive = static_dir.join("libweir.a");
    copy(&built.join("libweir.a"), &archive);
    strip(&archive);
    let built_shared = format!(
        "{}weir{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    );
    copy(&built.join(built_shared), &lib.join(&shared.file));
    strip(&lib.join(&shared.file));
    if let Some(soname) = &shared.soname {
        // libweir.so -> libweir.so.0.1 (the soname) -> libweir.so.0.1.0 (the file).
        link(&shared.file, &lib.join(soname));
        link(soname, &lib.join("libweir.so"));
    }
    let system_libs: Vec<&str> = system_libs.split_whitespace().collect();
    for (path, text) in [
        (
            pkgconfig.join("weir.pc"),
            pkg_config_shared(&prefix, &version),
        ),
        (
            pkgconfig.join("weir-static.pc"),
            pkg_config_static(&prefix, &version, &system_libs),
        ),
        (
            cmake.join("weirConfig.cmake"),
            cmake_config(&shared, &system_libs),
        ),
        (
            cmake.join("weirConfigVersion.cmake"),
            cmake_config_version(&version),
        ),
    ] {
        fs::write(&path, text)
            .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
    }
    eprintln!(
        "    installed weir {version} into {} in {:.1} s",
        prefix.display(),
        start.elapsed().as_secs_f64()
    );
}

/// The shared library's soname for `version`: the part of the version that an ABI break must change.
fn soname(version: &str) -> String {
    format!("libweir.so.{}", abi_line(version))
}

/// The part of `version` that an ABI break changes: `0.MINOR` while 0.x, `MAJOR` from 1.0 on.
fn abi_line(version: &str) -> String {
    let mut parts = version.split('.');
    match (parts.next(), parts.next()) {
        (Some("0"), Some(minor)) => format!("0.{minor}"),
        (Some(major), _) if !major.is_empty() => major.to_string(),
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

/// Removes the debug information from an installed library (and prints its size before and after).
/// `-S` (debug sections only) rather than `--strip-unneeded`: the symbol table stays, so profilers and
/// backtraces still name weir's functions, for about 90 KB; GNU and Apple strip both spell it `-S`.
fn strip(path: &Path) {
    let size = |p: &Path| fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let before = size(path);
    run("strip", &["-S", &path.to_string_lossy()], &[]);
    eprintln!(
        "    {}: {} -> {} bytes without debug information",
        path.display(),
        before,
        size(path)
    );
}

fn pkg_config_shared(prefix: &Path, version: &str) -> String {
    format!(
        "# Installed by `cargo xtask dist-c`: libweir.so, the shared library (weir-static.pc: the\n\
         # static one).\n\
         prefix={}\n\
         libdir=${{prefix}}/lib\n\
         includedir=${{prefix}}/include\n\
         \n\
         Name: weir\n\
         Description: Adaptive load balancing and overload protection (the C API of weir)\n\
         URL: https://github.com/weir-lb/weir\n\
         Version: {version}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} -lweir\n",
        prefix.display()
    )
}

/// The system libraries are in `Libs`, not `Libs.private`: this library is only ever linked statically,
/// so every link needs them, with or without `--static`.
fn pkg_config_static(prefix: &Path, version: &str, system_libs: &[&str]) -> String {
    format!(
        "# Installed by `cargo xtask dist-c`: libweir.a, the static library, alone in its folder so that\n\
         # -lweir finds it (weir.pc: the shared one).\n\
         prefix={}\n\
         libdir=${{prefix}}/lib/{STATIC_DIR}\n\
         includedir=${{prefix}}/include\n\
         \n\
         Name: weir-static\n\
         Description: Adaptive load balancing and overload protection (the C API of weir), linked statically\n\
         URL: https://github.com/weir-lb/weir\n\
         Version: {version}\n\
         Cflags: -I${{includedir}}\n\
         Libs: -L${{libdir}} -lweir {}\n",
        prefix.display(),
        system_libs.join(" ")
    )
}

/// `weirConfig.cmake`: the imported targets, with paths relative to the file's own folder.
fn cmake_config(shared: &Shared, system_libs: &[&str]) -> String {
    let soname = shared
        .soname
        .as_ref()
        .map(|s| format!("\n    IMPORTED_SONAME \"{s}\""))
        .unwrap_or_default();
    // `-lm` becomes `m`: a plain name is a library to CMake, on every generator.
    let system_libs: Vec<&str> = system_libs
        .iter()
        .map(|l| l.strip_prefix("-l").unwrap_or(l))
        .collect();
    format!(
        r#"# Installed by `cargo xtask dist-c`; `find_package(weir CONFIG)` reads it. Imported targets:
#   weir::weir         libweir, the shared library
#   weir::weir_static  libweir.a, with the system libraries it needs
# Paths are relative to this file (PREFIX/{CMAKE_DIR}/), so the installed tree may be moved.
get_filename_component(_weir_prefix "${{CMAKE_CURRENT_LIST_DIR}}/../../.." ABSOLUTE)

if(NOT TARGET weir::weir)
  add_library(weir::weir SHARED IMPORTED)
  set_target_properties(weir::weir PROPERTIES
    IMPORTED_LOCATION "${{_weir_prefix}}/lib/{file}"{soname}
    INTERFACE_INCLUDE_DIRECTORIES "${{_weir_prefix}}/include")
endif()

if(NOT TARGET weir::weir_static)
  add_library(weir::weir_static STATIC IMPORTED)
  set_target_properties(weir::weir_static PROPERTIES
    IMPORTED_LOCATION "${{_weir_prefix}}/lib/{STATIC_DIR}/libweir.a"
    IMPORTED_LINK_INTERFACE_LANGUAGES "C"
    INTERFACE_INCLUDE_DIRECTORIES "${{_weir_prefix}}/include"
    INTERFACE_LINK_LIBRARIES "{libs}")
endif()

unset(_weir_prefix)
"#,
        file = shared.file,
        libs = system_libs.join(";"),
    )
}

/// `weirConfigVersion.cmake`: compatible with a request on the same ABI line (the soname's: `0.MINOR`
/// while 0.x, `MAJOR` from 1.0 on) for this version or an older one; a range must start on that line
/// and contain this version. As CMake's own version files, unsuitable for a program of another pointer
/// width.
fn cmake_config_version(version: &str) -> String {
    let line = abi_line(version);
    let bits = usize::BITS;
    let pointer_bytes = bits / 8;
    format!(
        r#"# Installed by `cargo xtask dist-c`: weir {version} serves a request for {line}.x up to {version},
# as its soname says (0.MINOR while weir is 0.x: a minor release may break the ABI; MAJOR from 1.0 on).
set(PACKAGE_VERSION "{version}")
set(PACKAGE_VERSION_COMPATIBLE FALSE)
if(PACKAGE_FIND_VERSION_RANGE)
  set(_weir_wanted "${{PACKAGE_FIND_VERSION_MIN}}")
  if(PACKAGE_FIND_VERSION_RANGE_MAX STREQUAL "INCLUDE")
    if(PACKAGE_VERSION VERSION_LESS_EQUAL PACKAGE_FIND_VERSION_MAX)
      set(_weir_below_max TRUE)
    else()
      set(_weir_below_max FALSE)
    endif()
  elseif(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION_MAX)
    set(_weir_below_max TRUE)
  else()
    set(_weir_below_max FALSE)
  endif()
else()
  set(_weir_wanted "${{PACKAGE_FIND_VERSION}}")
  set(_weir_below_max TRUE)
endif()
string(REGEX MATCH "^(0\\.[0-9]+|[1-9][0-9]*)" _weir_wanted_line "${{_weir_wanted}}")
if(_weir_wanted_line STREQUAL "{line}" AND NOT PACKAGE_VERSION VERSION_LESS _weir_wanted
   AND _weir_below_max)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
  set(PACKAGE_VERSION_EXACT TRUE)
endif()
unset(_weir_wanted)
unset(_weir_wanted_line)
unset(_weir_below_max)

if(CMAKE_SIZEOF_VOID_P AND NOT CMAKE_SIZEOF_VOID_P STREQUAL "{pointer_bytes}")
  set(PACKAGE_VERSION "${{PACKAGE_VERSION}} ({bits}bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
"#
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
        let out = "   Compiling weir-lb-ffi\nnote: Link against the following native artifacts when linking against this static library. The order and any duplication can be significant on some platforms.\n\nnote: native-static-libs: -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc\n\n    Finished";
        assert_eq!(
            native_static_libs(out).as_deref(),
            Some("-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc")
        );
        assert_eq!(native_static_libs("    Finished"), None);
    }

    #[test]
    fn the_pc_files_link_one_library_each() {
        let shared = pkg_config_shared(Path::new("/opt/w"), "0.1.0");
        assert!(shared.contains("\nprefix=/opt/w\n"), "{shared}");
        assert!(shared.contains("\nVersion: 0.1.0\n"), "{shared}");
        assert!(shared.contains("\nLibs: -L${libdir} -lweir\n"), "{shared}");
        assert!(!shared.contains("Libs.private"), "{shared}");
        let fixed = pkg_config_static(Path::new("/opt/w"), "0.1.0", &["-lpthread", "-ldl"]);
        assert!(fixed.contains("\nName: weir-static\n"), "{fixed}");
        assert!(
            fixed.contains("\nlibdir=${prefix}/lib/weir-static\n"),
            "{fixed}"
        );
        assert!(
            fixed.contains("\nLibs: -L${libdir} -lweir -lpthread -ldl\n"),
            "{fixed}"
        );
    }

    #[test]
    fn the_cmake_config_names_no_absolute_path() {
        let shared = Shared {
            file: "libweir.so.0.1.0".into(),
            soname: Some("libweir.so.0.1".into()),
        };
        let config = cmake_config(&shared, &["-lpthread", "-lm"]);
        assert!(
            config.contains(r#"IMPORTED_LOCATION "${_weir_prefix}/lib/libweir.so.0.1.0""#),
            "{config}"
        );
        assert!(
            config.contains(r#"IMPORTED_SONAME "libweir.so.0.1""#),
            "{config}"
        );
        assert!(
            config.contains(r#"INTERFACE_LINK_LIBRARIES "pthread;m")"#),
            "{config}"
        );
        // Every path starts from the file's own folder.
        for line in config.lines().filter(|l| l.contains('/')) {
            assert!(
                line.starts_with('#')
                    || line.contains("${_weir_prefix}/")
                    || line.contains("${CMAKE_CURRENT_LIST_DIR}/"),
                "{line}"
            );
        }
    }

    #[test]
    fn the_cmake_version_file_serves_its_abi_line() {
        let v = cmake_config_version("0.1.3");
        assert!(v.contains("set(PACKAGE_VERSION \"0.1.3\")"), "{v}");
        assert!(v.contains("STREQUAL \"0.1\""), "{v}");
        assert!(cmake_config_version("2.4.1").contains("STREQUAL \"2\""));
    }
}
