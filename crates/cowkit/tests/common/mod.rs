//! Running the `cowkit` binary in tests: exit status, stdout, stderr, and
//! stdout as JSON.
#![allow(dead_code)]

use std::process::Command;

use serde_json::Value;

/// What a command did.
pub struct Run {
    pub ok: bool,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Run {
    /// Stdout as JSON, or a panic that shows both outputs.
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&self.stdout),
                self.stderr
            )
        })
    }
}

/// The `cowkit` binary of this build.
pub fn cowkit() -> Command {
    Command::new(env!("CARGO_BIN_EXE_cowkit"))
}

/// Run `cmd` to its end.
pub fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().unwrap();
    Run {
        ok: out.status.success(),
        stdout: out.stdout,
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// This test binary's scratch directory.
pub fn tmp() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
}

/// Whether the test runs as root (`why`: what needs it). Without root it
/// is skipped, saying so, except where the rig is required (CI), where
/// that is a failure.
pub fn as_root(test: &str, why: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    assert!(!cowkit_testutil::required(), "{test} needs root ({why})");
    eprintln!("SKIPPED: {test} needs root");
    false
}

/// The arguments the test repository's `dnf` (`cowkit_testutil::repo::dnf`)
/// gets for `repo`, without `--installroot` (`cowkit dnf` passes the root
/// itself).
pub fn dnf_args(
    repo: &std::path::Path,
    root: &std::path::Path,
    dnf_cache: &std::path::Path,
) -> Vec<std::ffi::OsString> {
    cowkit_testutil::repo::dnf(repo, root, dnf_cache)
        .get_args()
        .filter(|a| !a.to_string_lossy().starts_with("--installroot="))
        .map(|a| a.to_os_string())
        .collect()
}

/// `cowkit dnf --json --root ROOT --cache CK_CACHE --dbpath` (the test
/// database path) `-- ARGS` with the arguments plain dnf gets for `repo`
/// ([`dnf_args`]) and `cmd`.
pub fn cowkit_dnf(
    repo: &std::path::Path,
    root: &std::path::Path,
    dnf_cache: &std::path::Path,
    ck_cache: &std::path::Path,
    cmd: &[&str],
) -> Run {
    run(cowkit()
        .args(["dnf", "--json", "--root"])
        .arg(root)
        .arg("--cache")
        .arg(ck_cache)
        .arg("--dbpath")
        .arg(cowkit_testutil::repo::dbpath())
        .arg("--")
        .args(dnf_args(repo, root, dnf_cache))
        .args(cmd))
}
