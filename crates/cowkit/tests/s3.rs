//! `cowkit s3 serve` against real clients: runs the boto3 / aws CLI suite
//! in `crates/cowkit-s3/tests/clients` (pytest, from the virtualenv that
//! `scripts/setup.sh` makes in `.venv`) with this build's binary, on the
//! rig's XFS, Btrfs and ext4 mounts (`test_conditional.py`: conditional
//! requests and the other round-2 conformance fixes). `test_issue16.py` there holds the
//! checks of issue 16 (checksums, refusals, auth edge cases, partNumber,
//! directory objects, listings), `test_tagging.py` object and bucket
//! tagging, `test_round3.py` the other round-3 fixes, `test_round4.py` round 4's,
//! `test_accounts.py` issue 27's accounts, admin API and ListBuckets pages;
//! the full conformance suite is
//! `scripts/s3-conformance.sh` (not run here: it needs Go and minutes).
//!
//! Without the virtualenv the test says SKIPPED, except under `CI` or
//! `COWKIT_RIG`, where it fails.

use std::path::PathBuf;
use std::process::Command;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn s3_clients_boto3_and_aws_cli() {
    let python = std::env::var_os("COWKIT_S3_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".venv/bin/python"));
    let strict = std::env::var_os("CI").is_some() || std::env::var_os("COWKIT_RIG").is_some();
    if !python.exists() {
        assert!(
            !strict,
            "{} is missing: run scripts/setup.sh (it makes the venv with boto3, awscli and pytest)",
            python.display()
        );
        eprintln!("SKIPPED: no {} (run scripts/setup.sh)", python.display());
        return;
    }
    let status = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs"])
        .arg(repo().join("crates/cowkit-s3/tests/clients"))
        .env("COWKIT_BIN", env!("CARGO_BIN_EXE_cowkit"))
        .status()
        .expect("run pytest");
    assert!(status.success(), "the S3 client tests failed (see above)");
}
