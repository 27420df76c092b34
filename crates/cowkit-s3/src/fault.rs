//! Test hooks.
//!
//! Crash safety: with `COWKIT_S3_CRASH_AT=<step>` in its environment, the
//! process sends itself `SIGKILL` when it reaches the named step (as
//! `kill -9` would, with no destructor and no flush), so that a test can
//! restart the gateway on what that step left and check that nothing
//! leaked and a client's retry succeeds. Unset (the normal case), each
//! step costs one comparison.
//!
//! Stale handles: with `COWKIT_S3_STALE_AT=<site>:<n>[,<site>:<n>…]`, the
//! first `n` times the process reaches a site, the call there fails with
//! `ESTALE` before it is made, as NFS or GlusterFS answer for a file that
//! another host replaced or removed between the lookup and the call. Local
//! filesystems never answer `ESTALE`; this is how the tests get it. Unset,
//! each site costs one comparison.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The environment variable naming the step.
pub const CRASH_ENV: &str = "COWKIT_S3_CRASH_AT";

/// Every step the hook knows, in the order a multipart upload reaches
/// them. The `commit-*` steps are those of every object commit (PutObject,
/// CopyObject, a complete).
pub const STEPS: [&str; 12] = [
    // CreateMultipartUpload: the upload's directory is ready in tmp/.
    "create-staged",
    // UploadPart: the part's record is written, its data not renamed yet.
    "part-recorded",
    // Complete: validated, with the upload's lock held.
    "complete-prepared",
    // The object is assembled in an unnamed file.
    "complete-assembled",
    // The object's file has a temporary name in tmp/.
    "commit-named",
    // The object's record is written, the file not renamed yet.
    "commit-recorded",
    // The object is in place; no completed.json yet.
    "complete-committed",
    // completed.json is written; the parts are still there; the answer
    // is not sent yet.
    "complete-recorded",
    // The first part file is removed (the gateway removes them after it
    // has answered: the client may have its answer).
    "complete-cleaning",
    // Every part file is removed (after the answer).
    "complete-cleaned",
    // AbortMultipartUpload (or the expiry of a completed upload): the
    // upload's directory is moved into tmp/, not removed yet.
    "upload-discarding",
    // The same, after its first file is removed.
    "upload-discarded-one",
];

/// Kill the process if `COWKIT_S3_CRASH_AT` names `step`.
pub(crate) fn point(step: &'static str) {
    static AT: OnceLock<Option<String>> = OnceLock::new();
    debug_assert!(STEPS.contains(&step), "unknown crash step {step}");
    if AT.get_or_init(|| std::env::var(CRASH_ENV).ok()).as_deref() == Some(step) {
        log::error!("{CRASH_ENV}={step}: killing this process with SIGKILL");
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort();
    }
}

/// The environment variable of the stale-handle hook.
pub const STALE_ENV: &str = "COWKIT_S3_STALE_AT";

/// Every site the stale-handle hook knows.
pub const STALE_SITES: [&str; 3] = [
    // The open of an object's file (or a directory object) by its key's
    // name, for a GET, HEAD, copy source, tagging or listing.
    "open-object",
    // The open of an object's record by name (`meta/<bucket>/…/<h>.json`).
    "open-record",
    // A read of an object's body through a descriptor already open:
    // `pread` of a body read whole or read ahead, or a `sendfile`.
    "read-object",
];

/// `ESTALE` (as an I/O error on `path()` while doing `op`) when the hook
/// says `site` fails this time; `Ok` otherwise.
pub(crate) fn stale(
    site: &'static str,
    op: &'static str,
    path: impl FnOnce() -> std::path::PathBuf,
) -> crate::error::Result<()> {
    static AT: OnceLock<Vec<(String, AtomicU64)>> = OnceLock::new();
    debug_assert!(STALE_SITES.contains(&site), "unknown stale site {site}");
    let at = AT.get_or_init(|| {
        std::env::var(STALE_ENV)
            .unwrap_or_default()
            .split(',')
            .filter_map(|s| s.split_once(':'))
            .filter_map(|(s, n)| Some((s.to_string(), AtomicU64::new(n.parse().ok()?))))
            .collect()
    });
    let Some((_, left)) = at.iter().find(|(s, _)| s == site) else {
        return Ok(());
    };
    if left
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
        .is_ok()
    {
        let path = path();
        log::warn!(
            "{STALE_ENV}: {site}: answering ESTALE for {}",
            path.display()
        );
        return Err(crate::error::io(op, path, rustix::io::Errno::STALE));
    }
    Ok(())
}
