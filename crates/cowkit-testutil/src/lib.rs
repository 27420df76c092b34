//! Test helpers shared by the crates' integration tests.
//!
//! The crate root hands out a fresh directory on a real filesystem of the
//! kind a test asks for, deterministic data, and small helpers (hex and
//! SHA-256, byte search, error chains, running a command that must
//! succeed). [`rpm`] builds and edits packages (the fixture package,
//! packages from spec text, signed packages, what `rpm -qp` says about a
//! header, `rpm2cpio | cpio` extraction); [`repo`] builds a local RPM
//! repository (dependencies, scriptlets, users, configs, upgrades) and
//! runs `dnf` and `rpm` on a root; [`tree`] snapshots directory trees and
//! compares them; [`process`] reaps a child with its peak memory (`wait4`).
//!
//! `scripts/rig.sh` loop-mounts scratch XFS (two of them, for cross-device
//! pairs of one type), Btrfs and ext4 images and a tmpfs, and names their
//! mount points in `COWKIT_TEST_XFS`, `COWKIT_TEST_XFS2`, `COWKIT_TEST_BTRFS`,
//! `COWKIT_TEST_EXT4` and `COWKIT_TEST_TMPFS`. [`scratch`] checks that the
//! mount really is of that type and hands out a temporary directory on it.
//!
//! When `CI` or `COWKIT_RIG` is set, a missing mount panics: the run fails,
//! it never skips. Elsewhere the test is skipped with a message on stderr.
//!
//! ```no_run
//! use cowkit_testutil::{scratch, Fs};
//! if let Some(dir) = scratch(Fs::Xfs) {
//!     std::fs::write(dir.path().join("a"), b"data").unwrap();
//! }
//! ```
//!
//! This crate depends on no cowkit crate: it is a dev-dependency of all of
//! them, and a test crate must see only one copy of its own crate's types.
//! Helpers that need cowkit types stay in the tests of their crate.
#![deny(missing_docs)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use sha2::{Digest, Sha256};
pub use tempfile::TempDir;

pub mod fedora;
pub mod forge;
pub mod process;
pub mod repo;
pub mod rpm;
pub mod tree;

/// The filesystems of the rig.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fs {
    /// XFS made with `-m reflink=1`.
    Xfs,
    /// A second, separate XFS, for cross-device pairs of one type.
    Xfs2,
    /// Btrfs.
    Btrfs,
    /// ext4: no reflinks; `copy_file_range` copies in the kernel.
    Ext4,
    /// tmpfs: no reflinks, no FIEMAP.
    Tmpfs,
}

impl Fs {
    /// The four kinds every behaviour is tested on.
    pub const MAIN: [Fs; 4] = [Fs::Xfs, Fs::Btrfs, Fs::Ext4, Fs::Tmpfs];

    /// The environment variable naming this filesystem's mount point.
    pub fn env_var(self) -> &'static str {
        match self {
            Fs::Xfs => "COWKIT_TEST_XFS",
            Fs::Xfs2 => "COWKIT_TEST_XFS2",
            Fs::Btrfs => "COWKIT_TEST_BTRFS",
            Fs::Ext4 => "COWKIT_TEST_EXT4",
            Fs::Tmpfs => "COWKIT_TEST_TMPFS",
        }
    }

    /// The type name `/proc/self/mountinfo` gives.
    pub fn type_name(self) -> &'static str {
        match self {
            Fs::Xfs | Fs::Xfs2 => "xfs",
            Fs::Btrfs => "btrfs",
            Fs::Ext4 => "ext4",
            Fs::Tmpfs => "tmpfs",
        }
    }

    /// `statfs.f_type` of this kind.
    pub fn magic(self) -> u64 {
        match self {
            Fs::Xfs | Fs::Xfs2 => 0x5846_5342,
            Fs::Btrfs => 0x9123_683E,
            Fs::Ext4 => 0xEF53,
            Fs::Tmpfs => 0x0102_1994,
        }
    }

    /// Whether files on it can share blocks.
    pub fn reflinks(self) -> bool {
        matches!(self, Fs::Xfs | Fs::Xfs2 | Fs::Btrfs)
    }
}

/// Whether a missing mount must fail the run (in CI, or under the rig).
pub fn required() -> bool {
    ["CI", "COWKIT_RIG"]
        .iter()
        .any(|v| std::env::var_os(v).is_some_and(|s| !s.is_empty() && s != "false" && s != "0"))
}

/// The mount point of `fs`, checked to be of that type.
pub fn mount_point(fs: Fs) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os(fs.env_var()).map(PathBuf::from) else {
        if required() {
            panic!(
                "{} is not set: the {} test mount is missing (run the tests through scripts/test.sh)",
                fs.env_var(),
                fs.type_name()
            );
        }
        eprintln!(
            "SKIPPED: {} not set; run through scripts/test.sh to test on {}",
            fs.env_var(),
            fs.type_name()
        );
        return None;
    };
    let st = rustix::fs::statfs(&dir)
        .unwrap_or_else(|e| panic!("{} = {}: statfs failed: {e}", fs.env_var(), dir.display()));
    assert_eq!(
        st.f_type as u64,
        fs.magic(),
        "{} = {} is not {}",
        fs.env_var(),
        dir.display(),
        fs.type_name()
    );
    Some(dir)
}

/// A fresh, empty directory on `fs`, removed when dropped; `None` only
/// outside CI and the rig, when the mount is not there.
pub fn scratch(fs: Fs) -> Option<TempDir> {
    let dir = mount_point(fs)?;
    Some(
        tempfile::Builder::new()
            .prefix("t-")
            .tempdir_in(&dir)
            .unwrap_or_else(|e| panic!("cannot make a directory in {}: {e}", dir.display())),
    )
}

/// Bytes of a deterministic pseudo-random pattern (xorshift), so that
/// copies can be compared and no two blocks are alike.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Lower-case hex of `b` (`hex::encode`, for bytes of any kind).
pub fn hex(b: &[u8]) -> String {
    hex::encode(b)
}

/// Lower-case hex SHA-256 of `b`.
pub fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// Lower-case hex SHA-256 of the content of the file `p`.
pub fn file_sha(p: &Path) -> String {
    sha256_hex(&std::fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display())))
}

/// Where `needle` first occurs in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// How often `needle` occurs in `haystack`.
pub fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// An error and its causes on one line, joined with `: `.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

/// Run `cmd` to completion and return its output; panics, naming `what`
/// (say, the program and the package that has it) and showing its stderr,
/// when it cannot be started or does not exit 0.
pub fn run_ok(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    out
}
