//! `cargo xtask embedded`: weir's firmware example (`examples/embedded/`) built for two Cortex-M boards
//! that QEMU emulates and run there as a test, and what the core costs on them.
//!
//! It installs the two rustup targets and checks the crate's formatting and clippy's lints (the crate is
//! outside the workspace). For each board it builds the firmware and its footprint binaries (release
//! profile of the example: `opt-level = "s"`, LTO), reads their flash and RAM from the linked ELF files'
//! section headers, runs the firmware under `qemu-system-arm` with `-icount shift=0` (installed from
//! Debian's packages when missing) and checks its exit status and its `PASS` line: the failing node
//! avoided, the healthy ones sharing its calls, every counter conserved and 1 KiB of stack to spare,
//! under `Config::default()` and `Config::seeds()` (the checks themselves are in the firmware,
//! `examples/embedded/src/main.rs`). It runs the firmware twice and requires the two runs to report the
//! same (instruction counts and peak stack included), requires both boards to print the same decisions,
//! and runs each footprint binary (each checks that every call was granted and reports its peak stack
//! and the deepest stack of each of weir's calls) twice: built with every algorithm, and built alone with
//! only its preset's algorithms (`--no-default-features --features default-config` or `seeds-config`).
//! On the Cortex-M0, with only the preset's algorithms, a call that uses more than [`CALL_STACK_BOUND`]
//! bytes of stack fails the run.
//!
//! Then it prints the firmware guide's table of flash, static RAM, peak stack, each call's stack and
//! instructions per acquire+release, and the budgets on the Cortex-M0, met or missed.
//! `cargo xtask embedded --bless` also writes that table into the guide (`examples/embedded/README.md`),
//! between its two marker comments. Exact byte counts change with the compiler, so CI does not fail when
//! the guide's table differs from a fresh one: it prints the fresh table, says that it differs, and the
//! guide names the toolchain that produced its figures.

use crate::process::{fail, run};
use crate::tools::{ensure_target, ensure_tool};
use crate::workspace::target_dir;
use std::fmt::Write as _;
use std::fs;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

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
/// Budgets on the Cortex-M0 with only a preset's algorithms, in bytes: weir's flash with `default()`,
/// its peak stack with `default()`, its flash with `seeds()`. Printed, met or missed, with the table;
/// exact byte counts follow the compiler, so a miss is reported, not failed (the guide says what each
/// missed figure costs and why).
const BUDGETS: [(&str, u64); 3] = [
    ("weir's flash, `default()`", 24 * 1024),
    ("weir's peak stack, `default()`", 1536),
    ("weir's flash, `seeds()`", 16 * 1024),
];
/// The example's binaries: the firmware, then the footprint baseline and the two configurations.
const FIRMWARE: &str = "weir-embedded";
const FOOTPRINTS: [&str; 3] = ["footprint-none", "footprint-default", "footprint-seeds"];
/// A run takes a few seconds; past this it is hung (semihosting exit never reached).
const QEMU_LIMIT: Duration = Duration::from_secs(120);
/// The firmware guide, which holds the table.
const README: &str = "examples/embedded/README.md";
/// The firmware's decisions (its shares, stats and checks, the same on every board) from before the
/// flash and stack work of issue 32, which must not change them: a run that decides differently fails,
/// and only `--bless` rewrites the file (an intended change of the algorithms).
const DECISIONS: &str = "examples/embedded/decisions.txt";
/// The guide's table lies between these two lines.
const BEGIN: &str = "<!-- embedded-table: begin (cargo xtask embedded --bless) -->";
const END: &str = "<!-- embedded-table: end -->";

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
            "seeds-config",
        ]);
        let seeds = footprint(FOOTPRINTS[2]);
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
            seeds,
            run: first,
        });
    }
    // The bound on each call's stack, on the Cortex-M0.
    let mut over = Vec::new();
    for row in rows.iter().filter(|r| r.board.target == BUDGET_TARGET) {
        // What a firmware that names its algorithms links. With every algorithm linked the `Balancer`
        // is larger (its configuration holds every limiter's parameters) and `Balancer::new` goes a
        // few bytes past the bound; the table shows it.
        for (preset, binary) in [("default()", &row.default), ("seeds()", &row.seeds)] {
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

/// `qemu-system-arm`, installed with apt-get when it is missing.
fn ensure_qemu() -> String {
    const QEMU: &str = "qemu-system-arm";
    ensure_tool(
        QEMU,
        QEMU,
        "`apt-get install qemu-system-arm` on Debian and Ubuntu, `dnf install qemu-system-arm` on \
         Fedora, `brew install qemu` on macOS",
    );
    QEMU.into()
}

/// What the firmware reported about itself.
#[derive(Debug, PartialEq)]
struct FirmwareRun {
    /// `(configuration, pairs, SysTick ticks)` per timed configuration, in the firmware's order.
    benches: Vec<(String, u64, u64)>,
    /// `(instructions, SysTick ticks)` of the firmware's calibration loop.
    calibration: (u64, u64),
    /// `size_of::<Balancer<&[NodeSlot]>>()` on the target.
    balancer_bytes: u64,
    /// The peak stack, in bytes.
    stack: u64,
    /// The scenarios' output (shares, stats, checks): the same on every board, since the core decides the
    /// same from the same seed and calls on every target.
    decisions: String,
}

/// Runs the firmware and checks it: exit status 0, a `weir-embedded: PASS` line, the calibration and both
/// timings, and a calibration that matches the board's clock (one instruction per nanosecond of
/// virtual time).
fn run_firmware(qemu: &str, board: &Board, elf: &Path) -> FirmwareRun {
    let text = match qemu_run(qemu, board, elf) {
        Ok(text) => text,
        Err(e) => fail(&format!("the firmware on {}: {e}", board.machine)),
    };
    eprint!("{text}");
    let parsed = parse_firmware(&text)
        .unwrap_or_else(|e| fail(&format!("the firmware on {}: {e}", board.machine)));
    let (instructions, ticks) = parsed.calibration;
    // Instructions per tick should be 1e9 / core_hz; allow 1 % for the loop's entry and exit.
    let expected = ticks * 1_000_000_000 / board.core_hz;
    if instructions.abs_diff(expected) * 100 > expected {
        fail(&format!(
            "{}: the calibration loop ran {instructions} instructions in {ticks} SysTick ticks, not the \
             {expected} that one instruction per ns at {} Hz gives: is -icount shift=0 in effect?",
            board.machine, board.core_hz
        ));
    }
    eprintln!("    ok: {} passed its checks", board.machine);
    parsed
}

fn parse_firmware(text: &str) -> Result<FirmwareRun, String> {
    if !text.lines().any(|l| l == "weir-embedded: PASS") {
        return Err("no `weir-embedded: PASS` line".into());
    }
    let number = |line: &str, s: &str| s.parse::<u64>().map_err(|e| format!("`{line}`: {e}"));
    let mut benches = Vec::new();
    let mut calibration = None;
    let mut stack = None;
    let mut decisions = String::new();
    for line in text.lines().skip(1) {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[..] {
            // "bench default: 2000 acquire+release pairs in 123456 SysTick ticks"
            ["bench", config, pairs, "acquire+release", "pairs", "in", ticks, "SysTick", "ticks"] =>
            {
                let config = config.trim_end_matches(':').to_string();
                benches.push((config, number(line, pairs)?, number(line, ticks)?));
            }
            // "calibration: 2000000 instructions in 50000 SysTick ticks"
            ["calibration:", instructions, "instructions", "in", ticks, "SysTick", "ticks"] => {
                calibration = Some((number(line, instructions)?, number(line, ticks)?));
            }
            // "stack: 9728 of 4189536 bytes at most in use"
            ["stack:", peak, "of", _, "bytes", "at", "most", "in", "use"] => {
                stack = Some(number(line, peak)?);
            }
            ["bench" | "calibration:" | "stack:", ..] => {
                return Err(format!("unexpected line `{line}`"))
            }
            _ => {
                decisions.push_str(line);
                decisions.push('\n');
            }
        }
    }
    if benches
        .iter()
        .map(|b| b.0.as_str())
        .ne(["default", "seeds"])
    {
        return Err(format!(
            "expected timings for default and seeds, got {benches:?}"
        ));
    }
    let calibration = calibration.ok_or("no calibration line")?;
    let stack = stack.ok_or("no stack line")?;
    if calibration.1 == 0 || benches.iter().any(|b| b.1 == 0) {
        return Err("a timing of 0 ticks or 0 pairs".into());
    }
    let balancer_bytes = text
        .lines()
        .next()
        .and_then(|l| l.split("Balancer ").nth(1)?.split(' ').next()?.parse().ok())
        .ok_or("no `Balancer N bytes` in the first line")?;
    Ok(FirmwareRun {
        benches,
        calibration,
        balancer_bytes,
        stack,
        decisions,
    })
}

/// What a footprint binary reports: "footprint-x: ...; stack N bytes at most; calls: new A add B
/// acquire C release D bytes at most; Balancer E bytes".
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct FootprintReport {
    /// The binary's peak stack.
    stack: u64,
    /// The deepest stack of `Balancer::new`, `add`, `acquire` and `release`, each measured alone.
    new: u64,
    add: u64,
    acquire: u64,
    release: u64,
    /// `size_of::<Balancer<&[NodeSlot]>>()` in that build.
    balancer: u64,
}

impl FootprintReport {
    fn parse(text: &str) -> Option<FootprintReport> {
        let line = text.lines().find(|l| l.contains("; stack "))?;
        let after = |key: &str| -> Option<u64> {
            line.split(key)
                .nth(1)?
                .split([' ', ';'])
                .next()?
                .parse()
                .ok()
        };
        Some(FootprintReport {
            stack: after("; stack ")?,
            new: after("calls: new ")?,
            add: after(" add ")?,
            acquire: after(" acquire ")?,
            release: after(" release ")?,
            balancer: after("; Balancer ")?,
        })
    }

    fn calls(&self) -> [(&'static str, u64); 4] {
        [
            ("Balancer::new", self.new),
            ("add", self.add),
            ("acquire", self.acquire),
            ("release", self.release),
        ]
    }
}

/// Runs one ELF under QEMU with semihosting and the instruction-counting clock; its output if it exits
/// with status 0 within [`QEMU_LIMIT`].
fn qemu_run(qemu: &str, board: &Board, elf: &Path) -> Result<String, String> {
    let args = [
        "-machine",
        board.machine,
        "-nographic",
        "-monitor",
        "none",
        "-serial",
        "none",
        "-semihosting-config",
        "enable=on,target=native",
        "-icount",
        "shift=0",
        "-kernel",
    ];
    eprintln!("\n==> {qemu} {} {}", args.join(" "), elf.display());
    let mut child = Command::new(qemu)
        .args(args)
        .arg(elf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {qemu}: {e}"))?;
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() > QEMU_LIMIT => {
                // Our own child, by its handle.
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "still running after {} s: killed",
                    QEMU_LIMIT.as_secs()
                ));
            }
            Ok(None) => sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("cannot wait for {qemu}: {e}")),
        }
    };
    let mut text = String::new();
    let mut err = String::new();
    // The output is small (a few KiB), so the pipes never filled while QEMU ran.
    if let Some(mut out) = child.stdout.take() {
        let _ = out.read_to_string(&mut text);
    }
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    text.push_str(&err);
    if status.success() {
        Ok(text)
    } else {
        Err(format!("{qemu} exited with {status}; its output:\n{text}"))
    }
}

/// Flash and RAM of a linked firmware, from its section headers: flash holds every allocated section
/// that is not written (`.vector_table`, `.text`, `.rodata`) plus the initial values of `.data`; RAM holds
/// `.data` and every allocated section without contents (`.bss`, `.uninit`). The stack is not counted
/// (it is the rest of RAM).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Footprint {
    flash: u64,
    ram: u64,
}

impl Footprint {
    /// Reads a little-endian ELF32 file's section headers.
    fn of(elf: &[u8]) -> Result<Footprint, String> {
        const SHF_WRITE: u32 = 1;
        const SHF_ALLOC: u32 = 2;
        const SHT_NOBITS: u32 = 8;
        if elf.get(..6) != Some(b"\x7fELF\x01\x01".as_slice()) {
            return Err("not a little-endian ELF32 file".into());
        }
        let u16_at = |at: usize| -> Result<u64, String> {
            elf.get(at..at + 2)
                .map(|b| u64::from(u16::from_le_bytes([b[0], b[1]])))
                .ok_or_else(|| format!("truncated at {at}"))
        };
        let u32_at = |at: usize| -> Result<u64, String> {
            elf.get(at..at + 4)
                .map(|b| u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                .ok_or_else(|| format!("truncated at {at}"))
        };
        let (shoff, shentsize, shnum) = (u32_at(0x20)?, u16_at(0x2E)?, u16_at(0x30)?);
        if shentsize < 40 {
            return Err(format!("section header entries of {shentsize} bytes"));
        }
        let mut size = Footprint::default();
        for i in 0..shnum {
            let at = (shoff + i * shentsize) as usize;
            let (kind, flags, bytes) = (u32_at(at + 4)?, u32_at(at + 8)? as u32, u32_at(at + 20)?);
            if flags & SHF_ALLOC == 0 {
                continue;
            }
            let (in_flash, in_ram) = match (flags & SHF_WRITE != 0, kind as u32 == SHT_NOBITS) {
                (false, _) => (true, false),
                (true, false) => (true, true),
                (true, true) => (false, true),
            };
            size.flash += if in_flash { bytes } else { 0 };
            size.ram += if in_ram { bytes } else { 0 };
        }
        Ok(size)
    }

    fn minus(self, base: Footprint) -> Footprint {
        Footprint {
            flash: self.flash.saturating_sub(base.flash),
            ram: self.ram.saturating_sub(base.ram),
        }
    }
}

/// One board's figures.
struct Row<'a> {
    board: &'a Board,
    firmware: Binary,
    none: Binary,
    /// The `default()` and `seeds()` footprint binaries with every algorithm linked.
    every: (Binary, Binary),
    /// Each with only its preset's algorithms.
    default: Binary,
    seeds: Binary,
    run: FirmwareRun,
}

impl Row<'_> {
    /// weir's flash, static RAM and peak stack in `binary`: the difference from `footprint-none`.
    fn weir(&self, binary: &Binary) -> (Footprint, u64) {
        (
            binary.size.minus(self.none.size),
            binary.report.stack.saturating_sub(self.none.report.stack),
        )
    }
}

/// A linked binary's flash and static RAM, and what it reported (its peak stack at least).
struct Binary {
    size: Footprint,
    report: FootprintReport,
}

/// The compiler and emulator that produced the figures.
fn toolchain(qemu: &str) -> String {
    let first_line = |program: &str, arg: &str| {
        Command::new(program)
            .arg(arg)
            .output()
            .ok()
            .and_then(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .lines()
                    .next()
                    .map(str::to_string)
            })
            .unwrap_or_else(|| format!("{program} (version unknown)"))
    };
    format!(
        "{}, {}",
        first_line("rustc", "-V"),
        first_line(qemu, "--version")
    )
}

/// `n` with thousands separators.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Instructions per pair, one decimal: `ticks` SysTick ticks over `pairs`, at the calibration's
/// instructions per tick.
fn instructions(calibration: (u64, u64), pairs: u64, ticks: u64) -> String {
    let (cal_instructions, cal_ticks) = calibration;
    let (num, den) = (ticks * cal_instructions * 10, cal_ticks * pairs);
    let tenths = (num + den / 2) / den;
    format!("{}.{}", thousands(tenths / 10), tenths % 10)
}

/// The firmware guide's table (Markdown), from the measured rows, and the budgets on the Cortex-M0.
fn table(rows: &[Row], toolchain: &str) -> String {
    let mut t = String::new();
    let mut line = |label: &str, cell: &dyn Fn(&Row) -> String| {
        let cells: Vec<String> = rows.iter().map(cell).collect();
        let _ = writeln!(t, "| {label} | {} |", cells.join(" | "));
    };
    line("", &|r| format!("`{}`: {}", r.board.target, r.board.name));
    line("---", &|_| "---:".into());
    let pair = |a: u64, b: u64| {
        if a == b {
            format!("{} B", thousands(a))
        } else {
            format!("{} / {} B", thousands(a), thousands(b))
        }
    };
    line(
        "weir's flash, only the preset's algorithms, `default()` / `seeds()`",
        &|r| pair(r.weir(&r.default).0.flash, r.weir(&r.seeds).0.flash),
    );
    line(
        "weir's flash, every algorithm linked, `default()` / `seeds()`",
        &|r| pair(r.weir(&r.every.0).0.flash, r.weir(&r.every.1).0.flash),
    );
    line("weir's static RAM (8 slots and its statics)", &|r| {
        pair(r.weir(&r.default).0.ram, r.weir(&r.seeds).0.ram)
    });
    line(
        "weir's peak stack, only the preset's algorithms, `default()` / `seeds()`",
        &|r| pair(r.weir(&r.default).1, r.weir(&r.seeds).1),
    );
    line(
        "the `Balancer` value (in the stack above), `default()` / `seeds()` (the example: both)",
        &|r| {
            format!(
                "{} ({} B)",
                pair(r.default.report.balancer, r.seeds.report.balancer),
                thousands(r.run.balancer_bytes)
            )
        },
    );
    for (preset, pick) in [
        (
            "`default()`",
            (|r: &Row| r.default.report) as fn(&Row) -> FootprintReport,
        ),
        ("`seeds()`", |r: &Row| r.seeds.report),
        ("`default()`, every algorithm linked", |r: &Row| {
            r.every.0.report
        }),
        ("`seeds()`, every algorithm linked", |r: &Row| {
            r.every.1.report
        }),
    ] {
        line(
            &format!("deepest stack of `new` / `add` / `acquire` / `release`, {preset}"),
            &|r| {
                let c = pick(r);
                format!(
                    "{} / {} / {} / {} B",
                    thousands(c.new),
                    thousands(c.add),
                    thousands(c.acquire),
                    thousands(c.release)
                )
            },
        );
    }
    line(
        "instructions per acquire+release, `default()` / `seeds()`",
        &|r| {
            let per_pair: Vec<String> = r
                .run
                .benches
                .iter()
                .map(|(_, pairs, ticks)| instructions(r.run.calibration, *pairs, *ticks))
                .collect();
            per_pair.join(" / ")
        },
    );
    line(
        "the whole example firmware: flash / static RAM / peak stack",
        &|r| {
            format!(
                "{} / {} / {} B",
                thousands(r.firmware.size.flash),
                thousands(r.firmware.size.ram),
                thousands(r.firmware.report.stack)
            )
        },
    );
    if let Some(r) = rows.iter().find(|r| r.board.target == BUDGET_TARGET) {
        let measured = [
            r.weir(&r.default).0.flash,
            r.weir(&r.default).1,
            r.weir(&r.seeds).0.flash,
        ];
        let _ = write!(
            t,
            "\nBudgets on `{BUDGET_TARGET}`, only the preset's algorithms linked (each call's stack is \
             also bounded: at most {} B, which `cargo xtask embedded` enforces):\n\n\
             | budget | at most | measured | |\n| --- | ---: | ---: | --- |\n",
            thousands(CALL_STACK_BOUND)
        );
        for ((name, budget), got) in BUDGETS.iter().zip(measured) {
            let verdict = if got <= *budget { "met" } else { "**missed**" };
            let _ = writeln!(
                t,
                "| {name} | {} B | {} B | {verdict} |",
                thousands(*budget),
                thousands(got)
            );
        }
    }
    let _ = write!(t, "\nProduced by `cargo xtask embedded` with {toolchain}.");
    t
}

/// `readme` with the text between the marker lines replaced by `table`; `None` without the markers.
fn replace_between(readme: &str, table: &str) -> Option<String> {
    let begin = readme.find(BEGIN)? + BEGIN.len();
    let end = begin + readme[begin..].find(END)?;
    Some(format!("{}\n{table}\n{}", &readme[..begin], &readme[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal ELF32 with the given section headers `(type, flags, size)`.
    fn elf(sections: &[(u32, u32, u32)]) -> Vec<u8> {
        let shoff = 52u32;
        let mut f = vec![0u8; 52];
        f[..6].copy_from_slice(b"\x7fELF\x01\x01");
        f[0x20..0x24].copy_from_slice(&shoff.to_le_bytes());
        f[0x2E..0x30].copy_from_slice(&40u16.to_le_bytes());
        f[0x30..0x32].copy_from_slice(&(sections.len() as u16).to_le_bytes());
        for &(kind, flags, size) in sections {
            let mut h = [0u8; 40];
            h[4..8].copy_from_slice(&kind.to_le_bytes());
            h[8..12].copy_from_slice(&flags.to_le_bytes());
            h[20..24].copy_from_slice(&size.to_le_bytes());
            f.extend_from_slice(&h);
        }
        f
    }

    #[test]
    fn flash_and_ram_from_the_section_headers() {
        let progbits = 1;
        let nobits = 8;
        let (alloc, write, exec) = (2, 1, 4);
        let image = elf(&[
            (0, 0, 0),                        // the null section
            (progbits, alloc, 1024),          // .vector_table
            (progbits, alloc | exec, 90_000), // .text
            (progbits, alloc, 6_000),         // .rodata
            (progbits, alloc | write, 4),     // .data: flash (initial values) and RAM
            (nobits, alloc | write, 4_736),   // .bss
            (nobits, alloc | write, 0),       // .uninit
            (progbits, 0, 500_000),           // .debug_info: not loaded
        ]);
        assert_eq!(
            Footprint::of(&image),
            Ok(Footprint {
                flash: 1024 + 90_000 + 6_000 + 4,
                ram: 4 + 4_736
            })
        );
        assert!(
            Footprint::of(b"\x7fELF\x02\x01").is_err(),
            "ELF64 is refused"
        );
        let mut truncated = image.clone();
        truncated.truncate(100);
        assert!(Footprint::of(&truncated).is_err());
    }

    #[test]
    fn the_firmware_output_is_read_and_checked() {
        let text = "weir-embedded: a balancer of 8 nodes; Balancer 448 bytes, NodeSlot 352 bytes, Lease 24 bytes; lock-free 64-bit atomics: false\n\
                    default: shares\n\
                    calibration: 2000000 instructions in 50000 SysTick ticks\n\
                    bench default: 2000 acquire+release pairs in 150000 SysTick ticks\n\
                    bench seeds: 2000 acquire+release pairs in 200000 SysTick ticks\n\
                    stack: 9728 of 13776 bytes at most in use\n\
                    weir-embedded: PASS\n";
        let run = parse_firmware(text).unwrap();
        assert_eq!(run.balancer_bytes, 448);
        assert_eq!(
            run.benches,
            [
                ("default".to_string(), 2000, 150_000),
                ("seeds".to_string(), 2000, 200_000)
            ]
        );
        assert_eq!(run.calibration, (2_000_000, 50_000));
        assert_eq!(run.stack, 9728);
        assert!(parse_firmware(&text.replace("stack: 9728", "stack: x")).is_err());
        assert_eq!(
            FootprintReport::parse(
                "footprint-seeds: 1000 of 1000 calls granted; stack 1780 bytes at most; calls: new 852 \
                 add 392 acquire 836 release 476 bytes at most; Balancer 352 bytes\n"
            ),
            Some(FootprintReport {
                stack: 1780,
                new: 852,
                add: 392,
                acquire: 836,
                release: 476,
                balancer: 352
            })
        );
        assert_eq!(
            FootprintReport::parse("footprint-seeds: 1000 of 1000 calls granted\n"),
            None
        );
        assert_eq!(
            FootprintReport::parse("footprint-seeds: ...; stack 1780 bytes at most\n"),
            None
        );
        assert_eq!(run.decisions, "default: shares\nweir-embedded: PASS\n");
        // 150,000 ticks of 40 instructions over 2,000 pairs.
        assert_eq!(instructions(run.calibration, 2000, 150_000), "3,000.0");
        // 62.5 instructions per tick (16 MHz), rounded to a tenth.
        assert_eq!(instructions((2_000_000, 32_000), 3, 1), "20.8");
        assert!(parse_firmware(&text.replace("calibration: ", "")).is_err());
        assert!(parse_firmware(&text.replace("PASS", "FAIL (1 checks)")).is_err());
        assert!(parse_firmware(&text.replace("bench seeds", "bench other")).is_err());
        assert!(parse_firmware(&text.replace("150000", "x")).is_err());
    }

    #[test]
    fn the_readme_table_is_replaced_between_the_markers() {
        let readme = format!("# weir\n{BEGIN}\nold\n{END}\nrest\n");
        assert_eq!(
            replace_between(&readme, "| new |").as_deref(),
            Some(format!("# weir\n{BEGIN}\n| new |\n{END}\nrest\n").as_str())
        );
        assert_eq!(replace_between("# weir\n", "x"), None);
        assert_eq!(thousands(1_234_567), "1,234,567");
        assert_eq!(thousands(999), "999");
    }
}
