//! `cowkit s3 serve` against real clients: runs the boto3 / aws CLI suite
//! in `crates/cowkit-s3/tests/clients` (pytest collects every `test_*.py`
//! there, from the virtualenv that `scripts/setup.sh` makes in `.venv`)
//! with this build's binary, on the rig's XFS, Btrfs and ext4 mounts:
//! `test_s3.py` every operation on each filesystem, `test_conditional.py`
//! conditional requests, `test_checksums_and_refusals.py` checksums,
//! refusals, auth edge cases, partNumber, directory objects and listings,
//! `test_tagging.py` object and bucket tagging,
//! `test_owner_checksum_chunking.py` expected bucket owners, SHA-512 and
//! the aws-chunked framing, `test_keys_and_values.py` keys that are not
//! paths and the values the VersityGW suite checks, `test_get_body.py` the
//! GetObject body paths, `test_slow_connections.py` slow, idle and too
//! many connections, `test_accounts.py` accounts, the admin API and
//! ListBuckets pages, `test_versioning.py` versioning and object lock,
//! `test_post_object.py` POST (browser form) uploads
//! (`docs/testing.md` says more of each);
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
