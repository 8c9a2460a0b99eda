//! The programs the checks need from the system (QEMU, CMake, pkg-config, Prometheus): found on the
//! `PATH`, or installed from Debian's packages with apt-get (as root, or through `sudo -n`); and the
//! rustup targets the builds for other machines need.
//!
//! [`ensure_tool`] fails loudly when a program cannot be had (the checks that need it cannot run without
//! it); [`install_tool`] says why instead, for a check that is skipped, loudly, without it.
//! [`ensure_target`] adds a rustup target, or says loudly that it cannot.

use crate::process::fail;
use std::process::{Command, Stdio};

/// Makes sure `program --version` runs: when it does not, installs Debian's `package` with apt-get (as
/// root, or through `sudo -n`), and fails loudly, with `how` (the ways to install it by hand), when that
/// is not possible. Never a silent skip.
pub(crate) fn ensure_tool(program: &str, package: &str, how: &str) {
    if let Err(e) = install_tool(program, package, how) {
        fail(&e);
    }
}

/// [`ensure_tool`]'s work: `Ok` once `program --version` runs, installing Debian's `package` if needed;
/// otherwise why it cannot, with `how`.
pub(crate) fn install_tool(program: &str, package: &str, how: &str) -> Result<(), String> {
    let works = || {
        Command::new(program)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if works() {
        return Ok(());
    }
    let how = format!("install it and run again: {how}");
    if Command::new("apt-get").arg("--version").output().is_err() {
        return Err(format!(
            "{program} is missing and there is no apt-get here: {how}"
        ));
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let sudo = !root
        && Command::new("sudo")
            .args(["-n", "true"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if !root && !sudo {
        return Err(format!(
            "{program} is missing, and installing it needs root (this is not root, and `sudo -n` asks \
             for a password): {how}"
        ));
    }
    let apt = |args: &[&str]| {
        let (apt_program, mut all) = if sudo {
            ("sudo", vec!["-n", "apt-get"])
        } else {
            ("apt-get", vec![])
        };
        all.extend_from_slice(args);
        eprintln!("\n==> {apt_program} {}", all.join(" "));
        Command::new(apt_program)
            .args(&all)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .is_ok_and(|s| s.success())
    };
    let install = ["install", "-y", "-q", "--no-install-recommends", package];
    // The package lists may be missing or stale (a fresh container): update them once and retry.
    let installed = apt(&install) || (apt(&["update", "-q"]) && apt(&install));
    if !installed {
        return Err(format!("apt-get could not install {package}: {how}"));
    }
    if !works() {
        return Err(format!("{program} was installed but does not run: {how}"));
    }
    Ok(())
}

/// Installs a rustup target if rustup is there; false (with a loud line) if it cannot be had.
pub(crate) fn ensure_target(target: &str) -> bool {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    match installed {
        Ok(out)
            if String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == target) =>
        {
            true
        }
        Ok(_) => {
            let ok = Command::new("rustup")
                .args(["target", "add", target])
                .status()
                .is_ok_and(|s| s.success());
            if !ok {
                eprintln!("\n!!!!! SKIPPED: no_std build for {target}: `rustup target add {target}` failed !!!!!");
            }
            ok
        }
        Err(e) => {
            eprintln!(
                "\n!!!!! SKIPPED: no_std build for {target}: rustup not available ({e}) !!!!!"
            );
            false
        }
    }
}
