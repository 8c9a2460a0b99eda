//! Generates the C header from this crate's exports with cbindgen, into `OUT_DIR/weir.h`. The committed
//! `include/weir.h` must equal it: the `header` test in `src/lib.rs` compares them, and
//! `cargo xtask header` writes the fresh one over the committed one.

use std::env;
use std::path::PathBuf;

fn main() {
    let crate_dir =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("weir.h");
    let part = |name: &str| env::var(name).expect("cargo sets the version parts");
    let (major, minor, patch) = (
        part("CARGO_PKG_VERSION_MAJOR"),
        part("CARGO_PKG_VERSION_MINOR"),
        part("CARGO_PKG_VERSION_PATCH"),
    );
    let number: u64 = major.parse::<u64>().expect("a numeric major") * 1_000_000
        + minor.parse::<u64>().expect("a numeric minor") * 1_000
        + patch.parse::<u64>().expect("a numeric patch");
    // The version macros come from Cargo's version, never typed by hand.
    let version = format!(
        "\n/* The version of the header; compare WEIR_VERSION_NUMBER with weir_version() at run time. */\n\
         #define WEIR_VERSION_MAJOR {major}\n\
         #define WEIR_VERSION_MINOR {minor}\n\
         #define WEIR_VERSION_PATCH {patch}\n\
         #define WEIR_VERSION_NUMBER {number}\n\
         #define WEIR_VERSION_STRING \"{}\"\n",
        part("CARGO_PKG_VERSION")
    );
    let mut config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml"))
        .expect("ffi-c/cbindgen.toml is readable and valid");
    config.after_includes = Some(version);
    // From the sources alone (the crate root and the modules it declares), not `with_crate`: that runs
    // `cargo metadata`, which needs the registry (offline builds fail) and, for the packaged crate before its
    // core is published, cannot resolve the core at all. The header needs nothing from the dependencies
    // (`parse_deps = false` in cbindgen.toml).
    cbindgen::Builder::new()
        .with_src(crate_dir.join("src").join("lib.rs"))
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header from the crate")
        .write_to_file(&out);
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=Cargo.toml");
}
