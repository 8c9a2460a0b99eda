//! `cargo xtask embedded`: weir's firmware example (`examples/embedded/`) built for two Cortex-M boards
//! that QEMU emulates and run there as a test, and what the core costs on them.
//!
//! It installs the two rustup targets and checks the crate's formatting and clippy's lints (the crate is
//! outside the workspace). For each board it builds the firmware and its footprint binaries (release
//! profile of the example: `opt-level = "s"`, LTO), reads their flash and RAM from the linked ELF files'
//! section headers, runs the firmware under `qemu-system-arm` with `-icount shift=0` (installed from
//! Debian's packages when missing) and checks its exit status and its `PASS` line: the failing node
//! avoided, the healthy ones sharing its calls, every counter conserved and 1 KiB of stack to spare,
//! under `Config::default()` and `Config::cascade()` (the checks themselves are in the firmware,
//! `examples/embedded/src/main.rs`). It runs the firmware twice and requires the two runs to report the
//! same (instruction counts and peak stack included), requires both boards to print the same decisions,
//! and runs each footprint binary (each checks that every call was granted and reports its peak stack
//! and the deepest stack of each of weir's calls) twice: built with every algorithm, and built alone with
//! only its preset's algorithms (`--no-default-features --features default-config` or `cascade-config`).
//! On the Cortex-M0, with only the preset's algorithms, a call that uses more than [`CALL_STACK_BOUND`]
//! bytes of stack fails the run.
//!
//! Then it prints the firmware guide's table of flash, static RAM, peak stack, each call's stack and
//! instructions per acquire+release, and the budgets on the Cortex-M0, met or missed.
//! `cargo xtask embedded --bless` also writes that table into the guide (`examples/embedded/README.md`),
//! between its two marker comments. Exact byte counts change with the compiler, so CI does not fail when
//! the guide's table differs from a fresh one: it prints the fresh table, says that it differs, and the
//! guide names the toolchain that produced its figures.
//!
//! This file is the sequence and its checks; running an ELF under QEMU and reading what it reports is in
//! `embedded/qemu.rs`, the flash and RAM figures and the guide's table in `embedded/footprint.rs`.

mod footprint;
mod qemu;

use crate::process::{fail, run};
use crate::tools::ensure_target;
use crate::workspace::target_dir;
use footprint::{replace_between, table, toolchain, Binary, Footprint, Row, BEGIN, END};
use qemu::{ensure_qemu, qemu_run, run_firmware, FootprintReport};
use std::fs;
use std::time::Instant;

/// A board QEMU emulates and the Rust target for its core.
struct Board {
    target: &'static str,
    /// `qemu-system-arm -machine` name.
    machine: &'static str,
    /// What the firmware guide calls it.
    name: &'static str,
    /// The frequency of the clock SysTick counts with `CLKSOURCE = core` in QEMU's model of the board:
    /// with `-icount shift=0` each instruction advances virtual time by 1 ns, so a tick is
    /// `1e9 / core_hz` instructions.
    core_hz: u64,
}

const BOARDS: [Board; 2] = [
    Board {
        target: "thumbv7em-none-eabihf",
        machine: "mps2-an386",
        name: "Cortex-M4F (QEMU mps2-an386)",
        // QEMU clocks the board's CPU (and SysTick) at 25 MHz; the firmware's calibration confirms it.
        core_hz: 25_000_000,
    },
    Board {
        target: "thumbv6m-none-eabi",
        machine: "microbit",
        name: "Cortex-M0 (QEMU microbit, nRF51822)",
        // QEMU clocks the nRF51's CPU (and SysTick) at 16 MHz; the calibration confirms it.
        core_hz: 16_000_000,
    },
];

const MANIFEST: &str = "examples/embedded/Cargo.toml";
/// The bound on the stack each of weir's calls (`Balancer::new`, `add`, `acquire`, `release`) may use
/// on the Cortex-M0 (`thumbv6m-none-eabi`) with only a preset's algorithms linked, in bytes: `cargo
/// xtask embedded` fails above it.
const CALL_STACK_BOUND: u64 = 1024;
/// The target whose figures the bound and the budgets apply to.
const BUDGET_TARGET: &str = "thumbv6m-none-eabi";
/// The example's binaries: the firmware, then the footprint baseline and the two configurations.
const FIRMWARE: &str = "weir-embedded";
const FOOTPRINTS: [&str; 3] = ["footprint-none", "footprint-default", "footprint-cascade"];
/// The firmware guide, which holds the table.
const README: &str = "examples/embedded/README.md";
/// The firmware's decisions (its shares, stats and checks, the same on every board) from before the
/// flash and stack work of issue 32, which must not change them: a run that decides differently fails,
/// and only `--bless` rewrites the file (an intended change of the algorithms).
const DECISIONS: &str = "examples/embedded/decisions.txt";

/// `cargo xtask embedded`; `bless`: `--bless`.
pub(crate) fn embedded(bless: bool) {
    let start = Instant::now();
    let qemu = ensure_qemu();
    let out_dir = target_dir().join("embedded");
    let out = out_dir.to_string_lossy();
    for board in &BOARDS {
        if !ensure_target(board.target) {
            fail(&format!(
                "the firmware needs the {} target: `rustup target add {}`",
                board.target, board.target
            ));
        }
    }
    // The crate is outside the workspace, so the workspace's fmt and clippy do not see it. One target is
    // enough for clippy: the code has no target-specific parts.
    run(
        "cargo",
        &["fmt", "--manifest-path", MANIFEST, "--check"],
        &[],
    );
    run(
        "cargo",
        &[
            "clippy",
            "--release",
            "--locked",
            "--manifest-path",
            MANIFEST,
            "--target",
            BOARDS[1].target,
            "--target-dir",
            &out,
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    );
    let mut rows = Vec::new();
    for board in &BOARDS {
        // `features`: the example's (both presets, every algorithm of weir's) or one preset's alone.
        let build = |features: &[&str]| {
            let mut args = vec![
                "build",
                "--release",
                "--locked",
                "--manifest-path",
                MANIFEST,
                "--target",
                board.target,
                "--target-dir",
                &out,
            ];
            args.extend_from_slice(features);
            run("cargo", &args, &[]);
        };
        // The firmware and the footprint binaries with every algorithm linked, as a firmware that
        // leaves weir's default features on (the algorithms; not `std`) links them.
        build(&["--bins", "--features", "weir/algorithms"]);
        let bin = |name: &str| out_dir.join(board.target).join("release").join(name);
        let first = run_firmware(&qemu, board, &bin(FIRMWARE));
        let second = run_firmware(&qemu, board, &bin(FIRMWARE));
        // Under -icount the emulator is deterministic: a difference is a bug in the firmware or the setup.
        if first != second {
            fail(&format!(
                "{}: two runs under -icount reported differently: {:?} then {:?}",
                board.machine, first, second
            ));
        }
        let size = |name: &str| {
            let path = bin(name);
            let bytes = fs::read(&path)
                .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", path.display())));
            Footprint::of(&bytes)
                .unwrap_or_else(|e| fail(&format!("{}: not a 32-bit ELF: {e}", path.display())))
        };
        let footprint = |name: &str| {
            let text = qemu_run(&qemu, board, &bin(name))
                .unwrap_or_else(|e| fail(&format!("{name} on {}: {e}", board.machine)));
            eprint!("{text}");
            let report = FootprintReport::parse(&text).unwrap_or_else(|| {
                fail(&format!(
                    "{name} on {}: no `stack N bytes at most; calls: ...; Balancer N bytes`",
                    board.machine
                ))
            });
            Binary {
                size: size(name),
                report,
            }
        };
        let none = footprint(FOOTPRINTS[0]);
        let every = (footprint(FOOTPRINTS[1]), footprint(FOOTPRINTS[2]));
        // Each preset's footprint binary again, with only that preset's algorithms (`--bin` builds it
        // alone, over the same file name).
        build(&[
            "--bin",
            FOOTPRINTS[1],
            "--no-default-features",
            "--features",
            "default-config",
        ]);
        let default = footprint(FOOTPRINTS[1]);
        build(&[
            "--bin",
            FOOTPRINTS[2],
            "--no-default-features",
            "--features",
            "cascade-config",
        ]);
        let cascade = footprint(FOOTPRINTS[2]);
        rows.push(Row {
            board,
            firmware: Binary {
                size: size(FIRMWARE),
                report: FootprintReport {
                    stack: first.stack,
                    ..FootprintReport::default()
                },
            },
            none,
            every,
            default,
            cascade,
            run: first,
        });
    }
    // The bound on each call's stack, on the Cortex-M0.
    let mut over = Vec::new();
    for row in rows.iter().filter(|r| r.board.target == BUDGET_TARGET) {
        // What a firmware that names its algorithms links. With every algorithm linked the `Balancer`
        // is larger (its configuration holds every limiter's parameters) and `Balancer::new` goes
        // past the bound; the table shows it.
        for (preset, binary) in [("default()", &row.default), ("cascade()", &row.cascade)] {
            for (call, bytes) in binary.report.calls() {
                if bytes > CALL_STACK_BOUND {
                    over.push(format!("{call} with {preset}: {bytes} bytes"));
                }
            }
        }
    }
    if !over.is_empty() {
        fail(&format!(
            "on {BUDGET_TARGET}, weir's calls may use at most {CALL_STACK_BOUND} bytes of stack each: {}",
            over.join(", ")
        ));
    }
    eprintln!(
        "\n    ok: Balancer::new, add, acquire and release each use at most {CALL_STACK_BOUND} bytes of \
         stack on {BUDGET_TARGET}"
    );
    // Same seed, same calls: the same decisions on the Cortex-M4F and the Cortex-M0.
    if let [first, rest @ ..] = &rows[..] {
        for other in rest {
            if other.run.decisions != first.run.decisions {
                fail(&format!(
                    "the firmware decided differently on {} and {} (compare their outputs above)",
                    first.board.machine, other.board.machine
                ));
            }
        }
        eprintln!("\n    ok: the same decisions, shares and counters on every board");
        let kept = fs::read_to_string(DECISIONS)
            .unwrap_or_else(|e| fail(&format!("cannot read {DECISIONS}: {e}")));
        if kept == first.run.decisions {
            eprintln!("    ok: the same decisions as {DECISIONS}");
        } else if bless {
            fs::write(DECISIONS, &first.run.decisions)
                .unwrap_or_else(|e| fail(&format!("cannot write {DECISIONS}: {e}")));
            eprintln!(
                "xtask: the firmware decided differently: wrote its decisions into {DECISIONS}"
            );
        } else {
            fail(&format!(
                "the firmware decided differently from {DECISIONS} (its output is above): the \
                 decisions change only with the algorithms; `cargo xtask embedded --bless` rewrites the \
                 file when that is intended"
            ));
        }
    }
    let table = table(&rows, &toolchain(&qemu));
    println!("\n{table}");
    let readme =
        fs::read_to_string(README).unwrap_or_else(|e| fail(&format!("cannot read {README}: {e}")));
    match replace_between(&readme, &table) {
        None => fail(&format!("{README} has no `{BEGIN}` ... `{END}` section")),
        Some(fresh) if fresh == readme => eprintln!("xtask: {README}'s table is up to date"),
        Some(fresh) if bless => {
            fs::write(README, fresh)
                .unwrap_or_else(|e| fail(&format!("cannot write {README}: {e}")));
            eprintln!("xtask: wrote the table above into {README}");
        }
        Some(_) => eprintln!(
            "xtask: note: {README}'s table differs from this run's (above); byte counts follow \
             the compiler, so this is not an error: `cargo xtask embedded --bless` rewrites it"
        ),
    }
    eprintln!(
        "xtask: embedded passed in {:.0} s",
        start.elapsed().as_secs_f64()
    );
}
