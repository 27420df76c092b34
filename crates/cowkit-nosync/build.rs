//! Compile the preload shim (`crates/cowkit-nosync-shim/src/shim.rs`) into
//! a cdylib with `panic=abort`, for `include_bytes!` in `src/shim.rs`.
//!
//! Cargo cannot build one crate of a workspace with `panic=abort` while the
//! others unwind, so the single source file is handed to `$RUSTC` directly.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let src = manifest.join("../cowkit-nosync-shim/src/shim.rs");
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    let so = out.join("libcowkit-nosync.so");
    println!("cargo:rerun-if-changed={}", src.display());
    println!("cargo:rerun-if-changed=build.rs");

    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = env::var("TARGET").expect("set by cargo");
    let arch = env::var("CARGO_CFG_TARGET_ARCH").expect("set by cargo");
    if arch != "x86_64" && arch != "aarch64" {
        panic!("the nosync shim has system call tables for x86_64 and aarch64 only, not {arch}");
    }
    let mut cmd = Command::new(rustc);
    cmd.args(["--edition", "2021", "--crate-type", "cdylib"])
        .args(["--crate-name", "cowkit_nosync_shim"])
        .args(["--target", &target])
        .args([
            "-C",
            "panic=abort",
            "-C",
            "opt-level=2",
            "-C",
            "debuginfo=0",
        ])
        .args(["-C", "strip=symbols", "-C", "codegen-units=1"])
        // The one libc symbol, `__errno_location`, gets its version from
        // libc.so at link time (GLIBC_2.2.5 / GLIBC_2.17).
        .args(["-l", "dylib=c"])
        .args(["-D", "warnings"])
        .arg("-o")
        .arg(&so)
        .arg(&src)
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    if let Some(linker) = env::var_os(format!(
        "CARGO_TARGET_{}_LINKER",
        target.to_uppercase().replace('-', "_")
    )) {
        cmd.arg("-C").arg({
            let mut a = std::ffi::OsString::from("linker=");
            a.push(linker);
            a
        });
    }
    let status = cmd.status().expect("run rustc for the nosync shim");
    assert!(
        status.success(),
        "building the nosync shim failed: {status}"
    );
}
