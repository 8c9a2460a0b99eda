//! `cargo xtask msrv`: the crates a user depends on, built with the oldest toolchain they declare
//! (`rust-version` in the root Cargo.toml, 1.85 today): `weir-lb` with its default features and without
//! `std` (the `no_std` core, every algorithm), then `weir-lb-ffi` and `weir-lb-tower`. Not
//! weir-lb-tower's optional `tonic` feature: its MSRV is tonic's (1.88 for the lock file's tonic 0.14.9; see integrations/tower/Cargo.toml).
//!
//! The toolchain comes from rustup (`rustup toolchain install V --profile minimal`, once); where rustup
//! cannot get it the step says SKIPPED, loudly, as the `no_std` builds do for a missing target. The builds
//! use the committed lock file (`--locked`) and a target directory of their own, `target/msrv` (another
//! compiler would otherwise rebuild everything the other steps built). Warnings are not denied here:
//! lints differ between compilers, and clippy on the current one holds the code to them.

use crate::process::{fail, run};
use crate::publish::PUBLISHED;
use crate::workspace::{cargo_metadata, target_dir};
use std::process::Command;

pub(crate) fn msrv() {
    let version = rust_version(&cargo_metadata()).unwrap_or_else(|e| fail(&e));
    if !ensure_toolchain(&version) {
        return;
    }
    let target = target_dir().join("msrv");
    let target = target.to_string_lossy();
    let envs = [("CARGO_TARGET_DIR", target.as_ref())];
    let build = |args: &[&str]| {
        let mut all = vec!["run", version.as_str(), "cargo", "build", "--locked"];
        all.extend_from_slice(args);
        run("rustup", &all, &envs);
    };
    build(&["-p", "weir-lb"]);
    build(&[
        "-p",
        "weir-lb",
        "--no-default-features",
        "--features",
        "algorithms",
    ]);
    build(&["-p", "weir-lb-ffi", "-p", "weir-lb-tower"]);
}

/// The one `rust-version` the published packages declare, from `cargo metadata --no-deps` output.
fn rust_version(json: &str) -> Result<String, String> {
    let v: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("cargo metadata gave no JSON: {e}"))?;
    let packages = v["packages"].as_array().map_or(&[][..], Vec::as_slice);
    let mut versions: Vec<&str> = Vec::new();
    for name in PUBLISHED {
        let declared = packages
            .iter()
            .find(|p| p["name"] == name)
            .and_then(|p| p["rust_version"].as_str())
            .ok_or(format!("{name} declares no rust-version"))?;
        versions.push(declared);
    }
    versions.dedup();
    match versions[..] {
        [one] => Ok(one.to_string()),
        _ => Err(format!(
            "the published packages declare different rust-versions: {versions:?}"
        )),
    }
}

/// Installs the toolchain `version` with rustup unless it is there; false (with a loud line) if it
/// cannot be had.
fn ensure_toolchain(version: &str) -> bool {
    let listed = Command::new("rustup").args(["toolchain", "list"]).output();
    let installed = match listed {
        Ok(out) => String::from_utf8_lossy(&out.stdout)
            .lines()
            .any(|l| l.starts_with(&format!("{version}-"))),
        Err(e) => {
            eprintln!(
                "\n!!!!! SKIPPED: the MSRV build ({version}): rustup not available ({e}) !!!!!"
            );
            return false;
        }
    };
    if installed {
        return true;
    }
    eprintln!("\n==> rustup toolchain install {version} --profile minimal");
    let ok = Command::new("rustup")
        .args(["toolchain", "install", version, "--profile", "minimal"])
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        eprintln!(
            "\n!!!!! SKIPPED: the MSRV build: `rustup toolchain install {version}` failed !!!!!"
        );
    }
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rust_version_for_the_published_crates() {
        let metadata = |versions: [&str; 3]| {
            let packages: Vec<String> = PUBLISHED
                .iter()
                .zip(versions)
                .map(|(n, v)| format!(r#"{{"name":"{n}","rust_version":{v}}}"#))
                .collect();
            format!(
                r#"{{"packages":[{},{{"name":"xtask","rust_version":null}}]}}"#,
                packages.join(",")
            )
        };
        assert_eq!(
            rust_version(&metadata([r#""1.85""#; 3])),
            Ok("1.85".to_string())
        );
        assert_eq!(
            rust_version(&metadata([r#""1.85""#, r#""1.85""#, "null"])),
            Err("weir-lb-tower declares no rust-version".to_string())
        );
        assert!(
            rust_version(&metadata([r#""1.85""#, r#""1.88""#, r#""1.85""#]))
                .unwrap_err()
                .starts_with("the published packages declare different rust-versions")
        );
        assert!(rust_version("error").is_err());
    }
}
