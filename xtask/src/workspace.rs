//! The workspace xtask works in: its root (every job runs from there) and what `cargo metadata` says of
//! it (its packages, its target directory).

use crate::process::fail;
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The workspace's root: the directory above this crate's manifest.
pub(crate) fn workspace_root() -> PathBuf {
    let manifest = env::var("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from("xtask"));
    manifest
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// The output of `cargo metadata --format-version 1 --no-deps` (the workspace's packages and its target
/// directory).
pub(crate) fn cargo_metadata() -> String {
    let out = Command::new("cargo")
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run cargo metadata: {e}")));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The cargo target directory (it may be moved by `CARGO_TARGET_DIR` or a config file).
pub(crate) fn target_dir() -> PathBuf {
    metadata_target_dir(&cargo_metadata())
        .unwrap_or_else(|| fail("cargo metadata gave no target_directory"))
}

/// `target_directory` of `cargo metadata --format-version 1` output; `None` when the output is not
/// JSON (cargo failed) or lacks it.
pub(crate) fn metadata_target_dir(json: &str) -> Option<PathBuf> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v["target_directory"].as_str().map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_dir_from_metadata() {
        let metadata = r#"{"packages":[{"name":"xtask","targets":[{"name":"xtask"}]}],"workspace_members":[],"target_directory":"/work/weir/target","version":1,"workspace_root":"/work/weir"}"#;
        assert_eq!(
            metadata_target_dir(metadata),
            Some(PathBuf::from("/work/weir/target"))
        );
        // Escapes are decoded.
        assert_eq!(
            metadata_target_dir(r#"{"target_directory":"C:\\weir \"x\"\\target"}"#),
            Some(PathBuf::from(r#"C:\weir "x"\target"#))
        );
        assert_eq!(metadata_target_dir(r#"{"workspace_root":"/w"}"#), None);
        assert_eq!(
            metadata_target_dir("error: could not find Cargo.toml"),
            None
        );
    }
}
