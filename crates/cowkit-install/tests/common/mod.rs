//! Helpers for the install tests that need this crate's types or this test
//! crate's `CARGO_TARGET_TMPDIR`; the rest (packages, header edits, tree
//! snapshots) are `cowkit_testutil`'s, re-exported here.
#![allow(dead_code)]

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cowkit_fs::root::Root;
use cowkit_install::{install, Error, NoProgress, Options, Owners, Summary};
pub use cowkit_testutil::rpm::*;
pub use cowkit_testutil::tree::*;
pub use cowkit_testutil::{chain, file_sha, find};

/// The shared temporary directory of the test binaries.
pub fn tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

/// The fixture package `cowkit-fixture` with `payload`, built once.
pub fn fixture(payload: &str) -> PathBuf {
    fixture_in(tmp(), payload)
}

/// The package of [`spec`]`(name, install, files)` with `payload`, built
/// once and kept in the target's temporary directory.
pub fn build_rpm(name: &str, install: &str, files: &str, payload: &str) -> PathBuf {
    build_rpm_cached(tmp(), name, install, files, payload)
}

/// The fixture's files as `rpm2cpio | cpio -idm` extracts them (ufdio
/// payload; every payload has the same files), once per process.
pub fn cpio_tree() -> &'static Tree {
    static T: OnceLock<Tree> = OnceLock::new();
    T.get_or_init(|| {
        let dir = tempfile::tempdir_in(tmp()).unwrap();
        cpio_extract(&fixture("w.ufdio"), dir.path());
        snapshot(dir.path())
    })
}

/// The expected content hash of a fixture file (`rel` under [`FIXTURE`]).
pub fn expected_sha(rel: &str) -> String {
    cpio_tree()[&format!("{FIXTURE}/{rel}")]
        .sha256
        .clone()
        .unwrap()
}

/// Transcode `rpm` into `out` with the library, default options.
pub fn transcode(rpm: &Path, out: &Path) -> cowkit_extents::transcode::Summary {
    transcode_with(rpm, out, &cowkit_extents::transcode::Options::default())
}

/// Transcode `rpm` into `out` with the library and `opts`.
pub fn transcode_with(
    rpm: &Path,
    out: &Path,
    opts: &cowkit_extents::transcode::Options,
) -> cowkit_extents::transcode::Summary {
    let input = BufReader::new(File::open(rpm).unwrap());
    let begun = cowkit_extents::transcode::begin(input)
        .unwrap_or_else(|e| panic!("transcode {}: {e}", rpm.display()));
    begun
        .write(
            File::create(out).unwrap(),
            opts,
            &cowkit_extents::transcode::NoProgress,
        )
        .unwrap_or_else(|e| panic!("transcode {}: {e}", rpm.display()))
}

/// Install `pkg` into `root` with `opts`, owners from the root's own
/// `etc/passwd` and `etc/group`.
pub fn install_with(root: &Path, pkg: &Path, opts: &Options) -> Result<Summary, Error> {
    let r = Root::open(root).expect("open the root");
    let owners = Owners::load(&r);
    install(&r, &owners, pkg, opts, &NoProgress)
}

/// [`install_with`] default options; panics with the error chain.
pub fn install_ok(root: &Path, pkg: &Path) -> Summary {
    install_with(root, pkg, &Options::default()).unwrap_or_else(|e| {
        panic!(
            "install {} into {}: {}",
            pkg.display(),
            root.display(),
            chain(&e)
        )
    })
}
