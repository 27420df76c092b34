//! A test hook for crash safety: with `COWKIT_S3_CRASH_AT=<step>` in its
//! environment, the process sends itself `SIGKILL` when it reaches the
//! named step (as `kill -9` would, with no destructor and no flush), so
//! that a test can restart the gateway on what that step left and check
//! that nothing leaked and a client's retry succeeds. Unset (the normal
//! case), each step costs one comparison.

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
