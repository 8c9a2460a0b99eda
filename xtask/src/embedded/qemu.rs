//! The firmware under QEMU: `qemu-system-arm` found or installed, one ELF run with semihosting and the
//! instruction-counting clock, and what the firmware and the footprint binaries report, read and
//! checked.

use super::Board;
use crate::process::fail;
use crate::tools::ensure_tool;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// A run takes a few seconds; past this it is hung (semihosting exit never reached).
const QEMU_LIMIT: Duration = Duration::from_secs(120);

/// `qemu-system-arm`, installed with apt-get when it is missing.
pub(super) fn ensure_qemu() -> String {
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
pub(super) struct FirmwareRun {
    /// `(configuration, pairs, SysTick ticks)` per timed configuration, in the firmware's order.
    pub(super) benches: Vec<(String, u64, u64)>,
    /// `(instructions, SysTick ticks)` of the firmware's calibration loop.
    pub(super) calibration: (u64, u64),
    /// `size_of::<Balancer<&[NodeSlot]>>()` on the target.
    pub(super) balancer_bytes: u64,
    /// The peak stack, in bytes.
    pub(super) stack: u64,
    /// The scenarios' output (shares, stats, checks): the same on every board, since the core decides the
    /// same from the same seed and calls on every target.
    pub(super) decisions: String,
}

/// Runs the firmware and checks it: exit status 0, a `weir-embedded: PASS` line, the calibration and both
/// timings, and a calibration that matches the board's clock (one instruction per nanosecond of
/// virtual time).
pub(super) fn run_firmware(qemu: &str, board: &Board, elf: &Path) -> FirmwareRun {
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
        .ne(["default", "cascade"])
    {
        return Err(format!(
            "expected timings for default and cascade, got {benches:?}"
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
pub(super) struct FootprintReport {
    /// The binary's peak stack.
    pub(super) stack: u64,
    /// The deepest stack of `Balancer::new`, `add`, `acquire` and `release`, each measured alone.
    pub(super) new: u64,
    pub(super) add: u64,
    pub(super) acquire: u64,
    pub(super) release: u64,
    /// `size_of::<Balancer<&[NodeSlot]>>()` in that build.
    pub(super) balancer: u64,
}

impl FootprintReport {
    pub(super) fn parse(text: &str) -> Option<FootprintReport> {
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

    pub(super) fn calls(&self) -> [(&'static str, u64); 4] {
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
pub(super) fn qemu_run(qemu: &str, board: &Board, elf: &Path) -> Result<String, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_firmware_output_is_read_and_checked() {
        let text = "weir-embedded: a balancer of 8 nodes; Balancer 448 bytes, NodeSlot 352 bytes, Lease 24 bytes; lock-free 64-bit atomics: false\n\
                    default: shares\n\
                    calibration: 2000000 instructions in 50000 SysTick ticks\n\
                    bench default: 2000 acquire+release pairs in 150000 SysTick ticks\n\
                    bench cascade: 2000 acquire+release pairs in 200000 SysTick ticks\n\
                    stack: 9728 of 13776 bytes at most in use\n\
                    weir-embedded: PASS\n";
        let run = parse_firmware(text).unwrap();
        assert_eq!(run.balancer_bytes, 448);
        assert_eq!(
            run.benches,
            [
                ("default".to_string(), 2000, 150_000),
                ("cascade".to_string(), 2000, 200_000)
            ]
        );
        assert_eq!(run.calibration, (2_000_000, 50_000));
        assert_eq!(run.stack, 9728);
        assert!(parse_firmware(&text.replace("stack: 9728", "stack: x")).is_err());
        assert_eq!(
            FootprintReport::parse(
                "footprint-cascade: 1000 of 1000 calls granted; stack 1780 bytes at most; calls: new 852 \
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
            FootprintReport::parse("footprint-cascade: 1000 of 1000 calls granted\n"),
            None
        );
        assert_eq!(
            FootprintReport::parse("footprint-cascade: ...; stack 1780 bytes at most\n"),
            None
        );
        assert_eq!(run.decisions, "default: shares\nweir-embedded: PASS\n");
        assert!(parse_firmware(&text.replace("calibration: ", "")).is_err());
        assert!(parse_firmware(&text.replace("PASS", "FAIL (1 checks)")).is_err());
        assert!(parse_firmware(&text.replace("bench cascade", "bench other")).is_err());
        assert!(parse_firmware(&text.replace("150000", "x")).is_err());
    }
}
