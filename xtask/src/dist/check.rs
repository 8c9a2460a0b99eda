//! `cargo xtask dist-c --check` (run by `cargo xtask ci`): the C guide, `ffi-c/README.md`, run as a new
//! user would run it, then what it promises checked. Linux only (sonames, ELF sections).
//!
//! 1. cmake and pkg-config, installed with apt-get when missing (a clear failure when that cannot be
//!    done, never a silent skip).
//! 2. The guide's fenced blocks, in order, as one `sh -eux` script (`<target>/dist-c/guide/guide.sh`),
//!    run in `<target>/dist-c/guide/` with `HOME` at `<target>/dist-c/home/` (so its `$HOME/.local` is a
//!    scratch prefix) and none of the variables that could find a library the guide did not say how to
//!    find (`PKG_CONFIG_PATH`, `LD_LIBRARY_PATH`, `CMAKE_PREFIX_PATH`, ...). `sh` blocks are run as
//!    written; a `c` or `cmake` block is saved under the file name its first line gives (`/* app.c: ...`,
//!    `# CMakeLists.txt: ...`); `cargo` runs in the checkout, as the guide says. The one `text` block is
//!    the install's layout. A block of any other kind fails the check: nothing in the guide goes
//!    unchecked.
//! 3. The prefix holds exactly the layout's files and links; the installed libraries have no `.debug_*`
//!    section; the CMake package names no absolute path.
//! 4. Every program the guide built (an ELF executable under its folders, CMake's own probes aside)
//!    whose name ends in `-static` does not need `libweir.so`; every other one needs it by its soname.
//!    There must be at least one of each.
//! 5. Each C file of the guide compiles again with `-std=c11 -Wall -Wextra -Wpedantic -Werror` against
//!    the static library, and runs; `pkg-config --libs weir-static` is `-L$PREFIX/lib/weir-static -lweir`
//!    and the system libraries (no path to the archive), the same with `--static`.
//! 6. The prefix is moved away (`<target>/dist-c/moved/`): the static programs still run, and the example
//!    (`ffi-c/examples/CMakeLists.txt`) builds with CMake against the moved prefix (relocatable), with
//!    warnings as errors; `client` (shared: found through the rpath CMake gives programs in the build
//!    tree) and `client-static` each check header and library versions (`client -V`) and balance a short
//!    run over the example's servers without losing a call.

use super::{soname, STATIC_DIR};
use crate::example::{check_no_loss, run_client, Summary};
use crate::process::{fail, run};
use crate::tools::ensure_tool;
use std::env;
use std::ffi::OsString;
use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;
use walkdir::WalkDir;

const GUIDE: &str = "ffi-c/README.md";
const EXAMPLES: &str = "ffi-c/examples";
/// Where the guide installs, under its `HOME`.
const GUIDE_PREFIX: &str = ".local";
/// A program whose name ends so must not need `libweir.so`.
const STATIC_SUFFIX: &str = "-static";
/// The second compile of the guide's C files.
const STRICT_FLAGS: [&str; 6] = [
    "-std=c11",
    "-Wall",
    "-Wextra",
    "-Wpedantic",
    "-Werror",
    "-O2",
];
/// Variables that would let a program or build find libweir without the guide saying how.
const CLEARED: [&str; 9] = [
    "PKG_CONFIG_PATH",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    "C_INCLUDE_PATH",
    "CMAKE_PREFIX_PATH",
    "weir_DIR",
    "CFLAGS",
    "LDFLAGS",
];
/// The heredoc delimiter for the guide's files.
const EOF: &str = "WEIR_GUIDE_EOF";

pub(crate) fn check() {
    if !cfg!(target_os = "linux") {
        fail("dist-c --check checks the Linux layout (sonames, ELF sections): run it on Linux");
    }
    let start = Instant::now();
    ensure_tool(
        "cmake",
        "cmake",
        "`apt-get install cmake` on Debian and Ubuntu, `dnf install cmake` on Fedora, \
         `brew install cmake` on macOS",
    );
    ensure_tool(
        "pkg-config",
        "pkg-config",
        "`apt-get install pkg-config` on Debian and Ubuntu, `dnf install pkgconf` on Fedora",
    );
    let (target, version) = super::metadata();
    let soname = soname(&version);
    let out = target.join("dist-c");
    let _ = fs::remove_dir_all(&out);
    let dir = out.join("guide");
    let home = out.join("home");
    for d in [&dir, &home] {
        fs::create_dir_all(d)
            .unwrap_or_else(|e| fail(&format!("cannot create {}: {e}", d.display())));
    }

    let guide = run_guide(&dir, &home);
    let prefix = home.join(GUIDE_PREFIX);
    check_install(&prefix, &guide, &version);
    let (fixed, shared) = check_programs(&[&dir, &home], &prefix, &soname);
    check_static_flags(&prefix);
    for file in &guide.c_files {
        compile_strictly(&dir.join(file), &prefix, &out);
    }

    let moved = out.join("moved");
    fs::rename(&prefix, &moved).unwrap_or_else(|e| {
        fail(&format!(
            "cannot move {} to {}: {e}",
            prefix.display(),
            moved.display()
        ))
    });
    for p in &fixed {
        run_clean(p, &[]);
    }
    check_example(&out.join("examples"), &moved, &soname);
    eprintln!(
        "    dist-c --check passed ({GUIDE} run, {} static and {} shared programs, the example with \
         CMake) in {:.1} s",
        fixed.len(),
        shared.len(),
        start.elapsed().as_secs_f64()
    );
}

/// Step 2: runs the guide in `dir` with `HOME` at `home`.
fn run_guide(dir: &Path, home: &Path) -> Guide {
    let checkout =
        env::current_dir().unwrap_or_else(|e| fail(&format!("cannot read the checkout: {e}")));
    let text =
        fs::read_to_string(GUIDE).unwrap_or_else(|e| fail(&format!("cannot read {GUIDE}: {e}")));
    let guide = Guide::parse(&text, &checkout).unwrap_or_else(|e| fail(&e));
    let script = dir.join("guide.sh");
    fs::write(&script, &guide.script)
        .unwrap_or_else(|e| fail(&format!("cannot write {}: {e}", script.display())));
    eprintln!(
        "\n==> sh -eux {} (in {}, HOME={})",
        script.display(),
        dir.display(),
        home.display()
    );
    let status = clean(Command::new("sh").args(["-eux", "guide.sh"]))
        .current_dir(dir)
        .env("HOME", home)
        .env("CARGO_HOME", tool_home("CARGO_HOME", ".cargo"))
        .env("RUSTUP_HOME", tool_home("RUSTUP_HOME", ".rustup"))
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot run sh: {e}")));
    if !status.success() {
        fail(&format!(
            "{GUIDE}: a command of the guide failed ({status}): see its trace above and {}",
            script.display()
        ));
    }
    guide
}

/// Step 3: the layout, the libraries without debug sections, the CMake package without the prefix.
fn check_install(prefix: &Path, guide: &Guide, version: &str) {
    let installed = listing(prefix);
    if installed != guide.layout {
        let only = |a: &[String], b: &[String]| -> Vec<String> {
            a.iter().filter(|e| !b.contains(e)).cloned().collect()
        };
        fail(&format!(
            "{GUIDE}'s layout block differs from what `dist-c` installed into {}: only in the guide: \
             {:?}; only installed: {:?}",
            prefix.display(),
            only(&guide.layout, &installed),
            only(&installed, &guide.layout)
        ));
    }
    for lib in [
        prefix.join("lib").join(format!("libweir.so.{version}")),
        prefix.join("lib").join(STATIC_DIR).join("libweir.a"),
    ] {
        let sections = output("readelf", &["-S", "-W", &lib.to_string_lossy()]);
        if sections.contains(".debug_") {
            fail(&format!("{} still has debug sections", lib.display()));
        }
        let size = fs::metadata(&lib).map(|m| m.len()).unwrap_or(0);
        eprintln!("    {}: {size} bytes, no debug sections", lib.display());
    }
    let cmake = prefix.join("lib/cmake/weir");
    for entry in fs::read_dir(&cmake).into_iter().flatten().flatten() {
        let text = fs::read_to_string(entry.path()).unwrap_or_default();
        if text.contains(&*prefix.to_string_lossy()) {
            fail(&format!(
                "{} names the prefix: the package would not survive a move",
                entry.path().display()
            ));
        }
    }
}

/// Step 4: the programs under `dirs`, split into the static ones and the shared ones, each checked.
fn check_programs(dirs: &[&Path], prefix: &Path, soname: &str) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (fixed, shared): (Vec<PathBuf>, Vec<PathBuf>) =
        programs(dirs, prefix).into_iter().partition(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(STATIC_SUFFIX))
        });
    if fixed.is_empty() || shared.is_empty() {
        fail(&format!(
            "the guide built {} static and {} shared programs: it should show both",
            fixed.len(),
            shared.len()
        ));
    }
    for (programs, should_need) in [(&fixed, false), (&shared, true)] {
        for p in programs {
            let needs = needed(p).iter().any(|lib| lib == soname);
            let what = format!(
                "{} {} {soname}",
                p.display(),
                if needs { "needs" } else { "does not need" }
            );
            if needs != should_need {
                fail(&what);
            }
            eprintln!("    {what}");
        }
    }
    (fixed, shared)
}

/// Step 5, what the guide says of the static flags: plain `-lweir` from its own folder, the same with
/// or without `--static`.
fn check_static_flags(prefix: &Path) {
    let static_libs = pkg_config(prefix, &["--static", "--libs", "weir-static"]);
    let static_dir = format!("-L{}/lib/{STATIC_DIR}", prefix.display());
    let plain = static_libs.contains(&static_dir)
        && static_libs.iter().any(|f| f == "-lweir")
        && !static_libs
            .iter()
            .any(|f| f.ends_with(".a") || f.starts_with("-l:"));
    if !plain || static_libs != pkg_config(prefix, &["--libs", "weir-static"]) {
        fail(&format!(
            "pkg-config --static --libs weir-static gave {static_libs:?}: expected {static_dir} -lweir \
             and the system libraries, the same as without --static"
        ));
    }
    eprintln!(
        "    pkg-config --libs weir: {}\n    pkg-config --static --libs weir-static: {}",
        pkg_config(prefix, &["--libs", "weir"]).join(" "),
        static_libs.join(" ")
    );
}

/// Step 5: `source` compiled with warnings as errors against the static library, and run.
fn compile_strictly(source: &Path, prefix: &Path, out: &Path) {
    let stem = source.file_stem().unwrap_or_default().to_string_lossy();
    let exe = out.join(format!("strict-{stem}"));
    let mut args: Vec<String> = STRICT_FLAGS.iter().map(|s| s.to_string()).collect();
    args.push(source.to_string_lossy().into_owned());
    args.extend(pkg_config(prefix, &["--cflags", "--libs", "weir-static"]));
    args.extend(["-o".into(), exe.to_string_lossy().into_owned()]);
    run(
        "cc",
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        &[],
    );
    run_clean(&exe, &[]);
}

/// Step 6: the example built with CMake in `build` against the prefix at `moved`, and run.
fn check_example(build: &Path, moved: &Path, soname: &str) {
    let build_s = build.to_string_lossy();
    run(
        "cmake",
        &[
            "-S",
            EXAMPLES,
            "-B",
            &build_s,
            &format!("-DCMAKE_PREFIX_PATH={}", moved.display()),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCMAKE_C_FLAGS=-Wall -Wextra -Wpedantic -Werror",
        ],
        &[],
    );
    run("cmake", &["--build", &build_s], &[]);
    let server = build.join("server");
    for (name, should_need) in [("client", true), ("client-static", false)] {
        let client = build.join(name);
        if needed(&client).iter().any(|lib| lib == soname) != should_need {
            fail(&format!(
                "{} should {}need {soname}",
                client.display(),
                if should_need { "" } else { "not " }
            ));
        }
        run_clean(&client, &["-V"]);
        let checked = run_client(&server, &client, &[], &["-n", "300", "-c", "4"])
            .and_then(|text| check_no_loss(&Summary::parse(&text)?));
        if let Err(e) = checked {
            fail(&format!("dist-c --check: {}: {e}", client.display()));
        }
    }
}

/// The guide as a script, and what its blocks say.
#[derive(Debug)]
struct Guide {
    /// The `sh` blocks in order, with the files saved between them.
    script: String,
    /// The layout block's entries (`path` or `path -> target`), sorted.
    layout: Vec<String>,
    /// The C files it saves.
    c_files: Vec<String>,
}

impl Guide {
    fn parse(md: &str, checkout: &Path) -> Result<Guide, String> {
        let mut script = format!(
            "# Generated by `cargo xtask dist-c --check` from {GUIDE}: its blocks, in order.\n\
             # The guide runs `cargo` in a checkout of weir: this one.\n\
             cargo() {{ (cd {} && command cargo \"$@\"); }}\n",
            sh_quote(&checkout.to_string_lossy())
        );
        let mut layout = None;
        let mut c_files = Vec::new();
        let mut commands = 0;
        for b in blocks(md)? {
            let at = format!("{GUIDE}:{}", b.line);
            match b.lang.as_str() {
                "sh" => {
                    script.push_str(&format!("\n# {at}\n{}", b.text));
                    commands += 1;
                }
                "c" | "cmake" => {
                    let name = file_name(&b.text).ok_or_else(|| {
                        format!("{at}: a {} block whose first line names no file", b.lang)
                    })?;
                    if b.text.lines().any(|l| l == EOF) {
                        return Err(format!("{at}: the block has a line `{EOF}`"));
                    }
                    script.push_str(&format!(
                        "\n# {at}\ncat > {name} <<'{EOF}'\n{}{EOF}\n",
                        b.text
                    ));
                    if b.lang == "c" {
                        c_files.push(name);
                    }
                }
                "text" if layout.is_none() => layout = Some(layout_entries(&b.text)),
                other => {
                    return Err(format!(
                        "{at}: a `{other}` block, which no check runs: make it sh, c or cmake (the \
                         one text block is the install's layout)"
                    ))
                }
            }
        }
        let layout = layout.ok_or_else(|| format!("{GUIDE} has no layout (text) block"))?;
        if commands == 0 {
            return Err(format!("{GUIDE} has no sh block"));
        }
        Ok(Guide {
            script,
            layout,
            c_files,
        })
    }
}

/// A fenced block: the first word of its info string, its text (dedented as far as its fence), the line
/// it starts on.
#[derive(Debug, PartialEq)]
struct Block {
    lang: String,
    text: String,
    line: usize,
}

fn blocks(md: &str) -> Result<Vec<Block>, String> {
    let mut out = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (i, raw) in md.lines().enumerate() {
        let trimmed = raw.trim_start();
        let indent = &raw[..raw.len() - trimmed.len()];
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let lang = info.split_whitespace().next().unwrap_or("").to_string();
                    let block = Block {
                        lang,
                        text: String::new(),
                        line: i + 1,
                    };
                    open = Some((indent.to_string(), block));
                }
            }
            Some((fence_indent, mut block)) => {
                if trimmed.trim_end() == "```" {
                    out.push(block);
                } else {
                    block
                        .text
                        .push_str(raw.strip_prefix(fence_indent.as_str()).unwrap_or(trimmed));
                    block.text.push('\n');
                    open = Some((fence_indent, block));
                }
            }
        }
    }
    match open {
        Some((_, b)) => Err(format!("{GUIDE}:{}: a block that never ends", b.line)),
        None => Ok(out),
    }
}

/// The file a `c` or `cmake` block's first line names (`/* app.c: ...`, `# CMakeLists.txt: ...`): a
/// plain name with an extension, nothing that could leave the folder.
fn file_name(text: &str) -> Option<String> {
    let first = text.lines().next()?;
    let rest = first
        .strip_prefix("/*")
        .or_else(|| first.strip_prefix('#'))?
        .trim_start();
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        .collect();
    let plain = name.contains('.') && !name.starts_with('.');
    plain.then_some(name)
}

/// A layout block's entries: each line's path, with ` -> target` for a link; what follows is prose.
fn layout_entries(text: &str) -> Vec<String> {
    let mut entries: Vec<String> = text
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            let path = words.next()?;
            Some(match (words.next(), words.next()) {
                (Some("->"), Some(to)) => format!("{path} -> {to}"),
                _ => path.to_string(),
            })
        })
        .collect();
    entries.sort();
    entries
}

/// Every file and link under `prefix`, as the layout block writes them, sorted.
fn listing(prefix: &Path) -> Vec<String> {
    let mut entries = Vec::new();
    for entry in WalkDir::new(prefix).follow_links(false) {
        let entry =
            entry.unwrap_or_else(|e| fail(&format!("cannot list {}: {e}", prefix.display())));
        if entry.file_type().is_dir() {
            continue;
        }
        let rel = entry
            .path()
            .strip_prefix(prefix)
            .unwrap_or(entry.path())
            .to_string_lossy()
            .into_owned();
        entries.push(match fs::read_link(entry.path()) {
            Ok(to) => format!("{rel} -> {}", to.display()),
            Err(_) => rel,
        });
    }
    entries.sort();
    entries
}

/// The ELF executables under `dirs` (CMake's compiler probes and the prefix aside).
fn programs(dirs: &[&Path], prefix: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for dir in dirs {
        let walk = WalkDir::new(dir)
            .follow_links(false)
            .into_iter()
            .filter_entry(|e| e.file_name() != "CMakeFiles" && e.path() != prefix);
        for entry in walk.flatten() {
            let executable = entry.file_type().is_file()
                && entry
                    .metadata()
                    .is_ok_and(|m| m.permissions().mode() & 0o111 != 0);
            let mut magic = [0u8; 4];
            let elf = executable
                && fs::File::open(entry.path())
                    .and_then(|mut f| f.read_exact(&mut magic))
                    .is_ok()
                && &magic == b"\x7fELF";
            if elf {
                found.push(entry.into_path());
            }
        }
    }
    found.sort();
    found
}

/// The libraries an ELF file needs (its `NEEDED` entries).
fn needed(exe: &Path) -> Vec<String> {
    output("readelf", &["-d", "-W", &exe.to_string_lossy()])
        .lines()
        .filter(|l| l.contains("(NEEDED)"))
        .filter_map(|l| {
            let (_, rest) = l.split_once('[')?;
            rest.split_once(']').map(|(lib, _)| lib.to_string())
        })
        .collect()
}

/// `pkg-config ARGS` with the prefix's `.pc` files, split into flags.
fn pkg_config(prefix: &Path, args: &[&str]) -> Vec<String> {
    let text = clean(Command::new("pkg-config").args(args))
        .env("PKG_CONFIG_PATH", prefix.join("lib/pkgconfig"))
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run pkg-config: {e}")));
    if !text.status.success() {
        fail(&format!(
            "pkg-config {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&text.stderr)
        ));
    }
    String::from_utf8_lossy(&text.stdout)
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// A command's stdout; fails the check if it cannot run or fails.
fn output(program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run {program}: {e}")));
    if !out.status.success() {
        fail(&format!(
            "`{program} {}` exited with {}: {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs a program built here without the variables that could find libweir for it.
fn run_clean(exe: &Path, args: &[&str]) {
    eprintln!("\n==> {} {}", exe.display(), args.join(" "));
    let status = clean(&mut Command::new(exe))
        .args(args)
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot start {}: {e}", exe.display())));
    if !status.success() {
        fail(&format!("{} exited with {status}", exe.display()));
    }
}

fn clean(command: &mut Command) -> &mut Command {
    for var in CLEARED {
        command.env_remove(var);
    }
    command
}

/// `$VAR`, or `$HOME/dir` as the tool itself would default it (the guide runs with another `HOME`).
fn tool_home(var: &str, dir: &str) -> OsString {
    env::var_os(var).unwrap_or_else(|| {
        let home =
            env::var_os("HOME").unwrap_or_else(|| fail(&format!("neither {var} nor HOME is set")));
        PathBuf::from(home).join(dir).into_os_string()
    })
}

/// `text` as one single-quoted shell word.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MD: &str = "# Guide\n\n```sh\nPREFIX=\"$HOME/.local\"\n```\n\n```text\ninclude/weir.h\nlib/libweir.so -> libweir.so.0.1   what -lweir links\n```\n\n- a list:\n\n  ```sh\n  ./app\n  ```\n\n```c\n/* app.c: a program */\nint main(void) { return 0; }\n```\n";

    #[test]
    fn blocks_are_found_in_order_and_dedented() {
        let b = blocks(MD).unwrap();
        let langs: Vec<(&str, usize)> = b.iter().map(|b| (b.lang.as_str(), b.line)).collect();
        assert_eq!(langs, [("sh", 3), ("text", 7), ("sh", 14), ("c", 18)]);
        assert_eq!(b[2].text, "./app\n");
        assert!(blocks("```sh\nls\n")
            .unwrap_err()
            .contains(":1: a block that never ends"));
    }

    #[test]
    fn the_script_runs_the_commands_and_saves_the_files() {
        let g = Guide::parse(MD, Path::new("/src/we'ir")).unwrap();
        assert!(
            g.script
                .contains("cargo() { (cd '/src/we'\\''ir' && command cargo \"$@\"); }\n"),
            "{}",
            g.script
        );
        let prefix = g.script.find("PREFIX=").unwrap();
        let app = g.script.find("./app\n").unwrap();
        let saved = g
            .script
            .find("cat > app.c <<'WEIR_GUIDE_EOF'\n/* app.c: a program */\nint main(void) { return 0; }\nWEIR_GUIDE_EOF\n")
            .unwrap();
        assert!(prefix < app && app < saved, "{}", g.script);
        assert!(!g.script.contains("include/weir.h"), "{}", g.script);
        assert_eq!(
            g.layout,
            ["include/weir.h", "lib/libweir.so -> libweir.so.0.1"]
        );
        assert_eq!(g.c_files, ["app.c"]);
    }

    #[test]
    fn a_block_no_check_runs_is_refused() {
        let md = format!("{MD}\n```python\nprint(1)\n```\n");
        let err = Guide::parse(&md, Path::new("/src")).unwrap_err();
        assert!(
            err.contains("a `python` block, which no check runs"),
            "{err}"
        );
        let second_text = format!("{MD}\n```text\nmore\n```\n");
        assert!(Guide::parse(&second_text, Path::new("/src")).is_err());
        let unnamed = MD.replace("/* app.c: a program */", "/* a program */");
        let err = Guide::parse(&unnamed, Path::new("/src")).unwrap_err();
        assert!(err.contains("names no file"), "{err}");
    }

    #[test]
    fn file_names_are_plain() {
        assert_eq!(file_name("/* app.c: x */\n").as_deref(), Some("app.c"));
        assert_eq!(
            file_name("# CMakeLists.txt: x\n").as_deref(),
            Some("CMakeLists.txt")
        );
        assert_eq!(file_name("/* ../evil.c */\n"), None);
        assert_eq!(file_name("/* app */\n"), None);
        assert_eq!(file_name("int x;\n"), None);
    }
}
