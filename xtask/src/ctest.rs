//! `cargo xtask ctest`: the C ABI from C and C++, under AddressSanitizer and UBSan.
//!
//! 1. Builds `libweir.a` (debug: the checks are about behaviour at the boundary, not speed).
//! 2. Compiles every `ffi-c/tests/c/test_*.c` (C11) and `test_*.cpp` (C++17) as its own program with
//!    warnings as errors and `-fsanitize=address,undefined`, into `target/ctest/`, and runs each one
//!    (LeakSanitizer on when it works here); a failure prints the program's whole output.
//! 3. Checks the header alone: a translation unit that includes `include/weir.h` twice, as C99, C11 and
//!    C++17 with warnings as errors, and a C++ program that calls into the library and links (the
//!    `extern "C"` guard).
//! 4. `cargo test -p weir-lb-ffi`: the crate's unit tests and the header drift test.
//!
//! `cargo xtask header` writes the header cbindgen generates over `include/weir.h`.
//!
//! The compilers are `cc` and `c++` (or `$CC` and `$CXX`); a missing sanitizer runtime fails the run
//! with a message saying so, never a silent skip.

use crate::process::{cargo, fail, run};
use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const TESTS: &str = "ffi-c/tests/c";
const OUT: &str = "target/ctest";
const LIB: &str = "target/debug/libweir.a";
/// What a Rust static library needs from the system on Linux.
const SYSTEM_LIBS: [&str; 3] = ["-lpthread", "-ldl", "-lm"];
const WARNINGS: [&str; 4] = ["-Wall", "-Wextra", "-Wpedantic", "-Werror"];
const SANITIZE: [&str; 3] = [
    "-fsanitize=address,undefined",
    "-fno-sanitize-recover=all",
    "-g",
];
/// A hung program (a lost wake-up in a waiting test) fails the run instead of stalling CI.
const RUN_LIMIT: Duration = Duration::from_secs(120);
const UBSAN_OPTIONS: &str = "print_stacktrace=1:halt_on_error=1";

/// `cargo xtask header`: regenerates `include/weir.h` (the drift test, told to write instead of compare).
pub fn header() {
    run(
        "cargo",
        &[
            "test",
            "-p",
            "weir-lb-ffi",
            "--lib",
            "header::committed_header_is_current",
        ],
        &[("WEIR_BLESS", "1")],
    );
}

/// `cargo xtask ctest`: see the module's documentation.
pub fn ctest() {
    cargo(&["build", "-p", "weir-lb-ffi"]);
    let start = Instant::now();
    let out = Path::new(OUT);
    fs::create_dir_all(out)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", out.display())));
    let cc = env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    let cxx = env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    let asan_options = sanitizer_runtime(&cc, out);

    let programs = discover(&cc, &cxx);
    eprintln!(
        "\n==> compiling {} C/C++ test programs into {OUT}/",
        programs.len()
    );
    // Compiling is most of the time: all at once, then run one by one (the thread tests want the cores).
    thread::scope(|scope| {
        let builds: Vec<_> = programs
            .iter()
            .map(|p| scope.spawn(move || compile(p)))
            .collect();
        let errors: Vec<String> = builds
            .into_iter()
            .filter_map(|b| {
                b.join()
                    .unwrap_or_else(|_| Some("a compile thread panicked".into()))
            })
            .collect();
        if !errors.is_empty() {
            fail(&errors.join("\n"));
        }
    });
    for program in &programs {
        let envs = [
            ("ASAN_OPTIONS", asan_options.as_str()),
            ("UBSAN_OPTIONS", UBSAN_OPTIONS),
        ];
        run_program(&program.exe, &envs);
    }

    header_alone(&cc, &cxx, out, &asan_options);
    eprintln!(
        "\n    C and C++ programs and header checks ok in {:.1} s",
        start.elapsed().as_secs_f64()
    );
    cargo(&["test", "-p", "weir-lb-ffi"]);
}

/// One test program: its source, the compiler and standard it is built with, and the executable.
struct Program {
    source: PathBuf,
    compiler: String,
    std: &'static str,
    exe: PathBuf,
}

/// Every `test_*.c` and `test_*.cpp` under `ffi-c/tests/c`, sorted by name; none is an error.
fn discover(cc: &str, cxx: &str) -> Vec<Program> {
    let entries =
        fs::read_dir(TESTS).unwrap_or_else(|e| fail(&format!("cannot read {TESTS}: {e}")));
    let mut programs: Vec<Program> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter_map(|source| {
            let name = source.file_name()?.to_str()?.to_owned();
            let (stem, compiler, std) = if let Some(stem) = name.strip_suffix(".c") {
                (stem.to_owned(), cc, "-std=c11")
            } else if let Some(stem) = name.strip_suffix(".cpp") {
                (format!("{stem}_cpp"), cxx, "-std=c++17")
            } else {
                return None;
            };
            name.starts_with("test_").then(|| Program {
                exe: Path::new(OUT).join(stem),
                source,
                compiler: compiler.to_owned(),
                std,
            })
        })
        .collect();
    programs.sort_by(|a, b| a.source.cmp(&b.source));
    if programs.is_empty() {
        fail(&format!("no test_*.c or test_*.cpp in {TESTS}"));
    }
    programs
}

/// Compiles one program; the compiler's output on failure.
fn compile(p: &Program) -> Option<String> {
    let mut args: Vec<String> = vec![p.std.to_owned()];
    args.extend(WARNINGS.iter().chain(&SANITIZE).map(|s| s.to_string()));
    args.extend([
        "-Iinclude".to_owned(),
        format!("-I{TESTS}"),
        p.source.display().to_string(),
        LIB.to_owned(),
    ]);
    args.extend(SYSTEM_LIBS.iter().map(|s| s.to_string()));
    args.extend(["-o".to_owned(), p.exe.display().to_string()]);
    let shown = format!("{} {}", p.compiler, args.join(" "));
    eprintln!("    {shown}");
    match Command::new(&p.compiler).args(&args).output() {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`{shown}` exited with {}:\n{}{}",
            o.status,
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Some(format!("cannot start `{shown}`: {e}")),
    }
}

/// Runs a built program with its output in `<exe>.log`: prints its last line on success, all of it on
/// failure (and fails), and kills it after [`RUN_LIMIT`].
fn run_program(exe: &Path, envs: &[(&str, &str)]) {
    let shown: String = envs.iter().map(|(k, v)| format!("{k}={v} ")).collect();
    eprintln!("\n==> {shown}{}", exe.display());
    let log_path = exe.with_extension("log");
    let log = fs::File::create(&log_path)
        .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", log_path.display())));
    let err = log
        .try_clone()
        .unwrap_or_else(|e| fail(&format!("cannot share {}: {e}", log_path.display())));
    let start = Instant::now();
    let mut child = Command::new(exe)
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .unwrap_or_else(|e| fail(&format!("cannot start {}: {e}", exe.display())));
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() > RUN_LIMIT => {
                // The child is ours; an error here means it has just exited, which the wait reports.
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => thread::sleep(Duration::from_millis(20)),
            Err(e) => fail(&format!("cannot wait for {}: {e}", exe.display())),
        }
    };
    let output = fs::read_to_string(&log_path).unwrap_or_default();
    match status {
        Some(s) if s.success() => {
            let last = output.lines().last().unwrap_or("(no output)");
            eprintln!(
                "    {last}\n    ok in {:.1} s",
                start.elapsed().as_secs_f64()
            );
        }
        Some(s) => fail(&format!(
            "{} exited with {s}; its output:\n{output}",
            exe.display()
        )),
        None => fail(&format!(
            "{} ran past {} s and was killed; its output:\n{output}",
            exe.display(),
            RUN_LIMIT.as_secs()
        )),
    }
}

/// Checks that the sanitizers link and run here, and returns the `ASAN_OPTIONS` to use: leak checks on
/// when LeakSanitizer works (it needs ptrace, which some containers forbid), off with a loud line if not.
fn sanitizer_runtime(cc: &str, out: &Path) -> String {
    let source = out.join("probe_sanitizers.c");
    let exe = out.join("probe_sanitizers");
    write(&source, "int main(void) { return 0; }\n");
    let built = Command::new(cc)
        .args(["-std=c11"])
        .args(SANITIZE)
        .arg(&source)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot start the C compiler `{cc}`: {e}")));
    if !built.status.success() {
        fail(&format!(
            "`{cc}` cannot build with -fsanitize=address,undefined: the sanitizer runtimes are missing \
             (on Debian/Ubuntu they come with gcc: libasan and libubsan; install them, e.g. \
             `apt-get install gcc g++`). The C tests never run without them.\n{}",
            String::from_utf8_lossy(&built.stderr)
        ));
    }
    let leaks = Command::new(&exe)
        .env("ASAN_OPTIONS", "detect_leaks=1")
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run {}: {e}", exe.display())));
    if leaks.status.success() {
        "detect_leaks=1".to_owned()
    } else {
        let plain = Command::new(&exe)
            .env("ASAN_OPTIONS", "detect_leaks=0")
            .status()
            .is_ok_and(|s| s.success());
        if !plain {
            fail(&format!(
                "a sanitized empty program does not run here:\n{}",
                String::from_utf8_lossy(&leaks.stderr)
            ));
        }
        eprintln!(
            "\n!!!!! LeakSanitizer does not work here (it needs ptrace); the C tests run WITHOUT leak \
             checks !!!!!\n{}",
            String::from_utf8_lossy(&leaks.stderr)
        );
        "detect_leaks=0".to_owned()
    }
}

/// The header alone: included twice in an otherwise empty translation unit, as C99, C11 and C++17,
/// then a C++ program that calls the library and links, which it cannot without the `extern "C"` guard.
fn header_alone(cc: &str, cxx: &str, out: &Path, asan_options: &str) {
    let c_tu = out.join("header_alone.c");
    let cxx_tu = out.join("header_alone.cpp");
    let twice = "#include \"weir.h\"\n#include \"weir.h\" /* twice: the include guard */\n";
    write(&c_tu, twice);
    write(&cxx_tu, twice);
    let syntax = |compiler: &str, std: &str, tu: &Path| {
        let tu = tu.display().to_string();
        let mut args = vec![std, "-fsyntax-only", "-Iinclude"];
        args.extend(WARNINGS);
        args.push(&tu);
        run(compiler, &args, &[]);
    };
    syntax(cc, "-std=c99", &c_tu);
    syntax(cc, "-std=c11", &c_tu);
    syntax(cxx, "-std=c++17", &cxx_tu);

    let program = out.join("header_links.cpp");
    let exe = out.join("header_links");
    write(&program, CXX_PROGRAM);
    let (program, exe) = (program.display().to_string(), exe.display().to_string());
    let mut args = vec!["-std=c++17", "-Iinclude"];
    args.extend(WARNINGS);
    args.extend(SANITIZE);
    args.extend([program.as_str(), LIB]);
    args.extend(SYSTEM_LIBS);
    args.extend(["-o", exe.as_str()]);
    run(cxx, &args, &[]);
    run_program(
        Path::new(&exe),
        &[
            ("ASAN_OPTIONS", asan_options),
            ("UBSAN_OPTIONS", UBSAN_OPTIONS),
        ],
    );
}

/// A C++ caller: compiles only if the header is valid C++, links only if its declarations have C
/// linkage, and checks what it gets back.
const CXX_PROGRAM: &str = r#"// Generated by `cargo xtask ctest`: the header from C++.
#include <cstdio>
#include <cstring>
#include "weir.h"

int main() {
    int failures = 0;
    if (weir_version() != WEIR_VERSION_NUMBER) { std::puts("weir_version() differs from the header"); failures++; }
    if (std::strcmp(weir_version_string(), WEIR_VERSION_STRING) != 0) { std::puts("version string"); failures++; }
    weir_config config = weir_config_default();
    weir_balancer *balancer = nullptr;
    if (weir_balancer_new(&config, 4, &balancer) != WEIR_OK || balancer == nullptr) { std::puts("new"); failures++; }
    if (weir_balancer_add(balancer, 7) != WEIR_OK) { std::puts("add"); failures++; }
    weir_lease lease{};
    if (weir_balancer_acquire(balancer, 1000, &lease) != WEIR_OK || lease.node_id != 7) { std::puts("acquire"); failures++; }
    if (weir_balancer_release(balancer, &lease, WEIR_OUTCOME_SUCCESS, 2000) != WEIR_OK) { std::puts("release"); failures++; }
    if (weir_balancer_add(nullptr, 1) != WEIR_ERR_NULL) { std::puts("NULL"); failures++; }
    if (std::strstr(weir_last_error_message(), "balancer") == nullptr) { std::puts("message"); failures++; }
    weir_balancer_free(balancer);
    std::printf("header_links: %s\n", failures == 0 ? "the C++ caller links and runs" : "FAILED");
    return failures == 0 ? 0 : 1;
}
"#;

fn write(path: &Path, text: &str) {
    fs::write(path, text)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", path.display())));
}
