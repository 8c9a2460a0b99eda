//! What the firmware costs and the firmware guide's table of it: flash and static RAM read from the
//! linked ELF files' section headers, weir's share of them (the difference from `footprint-none`), and
//! the table with the budgets on the Cortex-M0, written between the guide's two marker lines.

use super::qemu::{FirmwareRun, FootprintReport};
use super::{Board, BUDGET_TARGET, CALL_STACK_BOUND};
use std::fmt::Write as _;
use std::process::Command;

/// Budgets on the Cortex-M0 with only a preset's algorithms, in bytes: weir's flash with `default()`,
/// its peak stack with `default()`, its flash with `cascade()`. Printed, met or missed, with the table;
/// exact byte counts follow the compiler, so a miss is reported, not failed (the guide says what each
/// missed figure costs and why).
const BUDGETS: [(&str, u64); 3] = [
    ("weir's flash, `default()`", 24 * 1024),
    ("weir's peak stack, `default()`", 1536),
    ("weir's flash, `cascade()`", 16 * 1024),
];
/// The guide's table lies between these two lines.
pub(super) const BEGIN: &str = "<!-- embedded-table: begin (cargo xtask embedded --bless) -->";
pub(super) const END: &str = "<!-- embedded-table: end -->";

/// Flash and RAM of a linked firmware, from its section headers: flash holds every allocated section
/// that is not written (`.vector_table`, `.text`, `.rodata`) plus the initial values of `.data`; RAM holds
/// `.data` and every allocated section without contents (`.bss`, `.uninit`). The stack is not counted
/// (it is the rest of RAM).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Footprint {
    flash: u64,
    ram: u64,
}

impl Footprint {
    /// Reads a little-endian ELF32 file's section headers.
    pub(super) fn of(elf: &[u8]) -> Result<Footprint, String> {
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
pub(super) struct Row<'a> {
    pub(super) board: &'a Board,
    pub(super) firmware: Binary,
    pub(super) none: Binary,
    /// The `default()` and `cascade()` footprint binaries with every algorithm linked.
    pub(super) every: (Binary, Binary),
    /// Each with only its preset's algorithms.
    pub(super) default: Binary,
    pub(super) cascade: Binary,
    pub(super) run: FirmwareRun,
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
pub(super) struct Binary {
    pub(super) size: Footprint,
    pub(super) report: FootprintReport,
}

/// The compiler and emulator that produced the figures.
pub(super) fn toolchain(qemu: &str) -> String {
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
pub(super) fn table(rows: &[Row], toolchain: &str) -> String {
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
        "weir's flash, only the preset's algorithms, `default()` / `cascade()`",
        &|r| pair(r.weir(&r.default).0.flash, r.weir(&r.cascade).0.flash),
    );
    line(
        "weir's flash, every algorithm linked, `default()` / `cascade()`",
        &|r| pair(r.weir(&r.every.0).0.flash, r.weir(&r.every.1).0.flash),
    );
    line("weir's static RAM (8 slots and its statics)", &|r| {
        pair(r.weir(&r.default).0.ram, r.weir(&r.cascade).0.ram)
    });
    line(
        "weir's peak stack, only the preset's algorithms, `default()` / `cascade()`",
        &|r| pair(r.weir(&r.default).1, r.weir(&r.cascade).1),
    );
    line(
        "the `Balancer` value (in the stack above), `default()` / `cascade()` (the example: both)",
        &|r| {
            format!(
                "{} ({} B)",
                pair(r.default.report.balancer, r.cascade.report.balancer),
                thousands(r.run.balancer_bytes)
            )
        },
    );
    for (preset, pick) in [
        (
            "`default()`",
            (|r: &Row| r.default.report) as fn(&Row) -> FootprintReport,
        ),
        ("`cascade()`", |r: &Row| r.cascade.report),
        ("`default()`, every algorithm linked", |r: &Row| {
            r.every.0.report
        }),
        ("`cascade()`, every algorithm linked", |r: &Row| {
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
        "instructions per acquire+release, `default()` / `cascade()`",
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
            r.weir(&r.cascade).0.flash,
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
pub(super) fn replace_between(readme: &str, table: &str) -> Option<String> {
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
    fn instructions_per_pair_from_the_calibration() {
        // 150,000 ticks of 40 instructions (2,000,000 in 50,000 ticks) over 2,000 pairs.
        assert_eq!(instructions((2_000_000, 50_000), 2000, 150_000), "3,000.0");
        // 62.5 instructions per tick (16 MHz), rounded to a tenth.
        assert_eq!(instructions((2_000_000, 32_000), 3, 1), "20.8");
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
