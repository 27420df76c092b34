//! Scriptlets of a root being built run without sync calls.
//!
//! A root other than `/` is being built: a crash in the middle leaves a
//! root that is thrown away, so its scriptlets' `fsync`, `sync`,
//! `syncfs`, ... buy nothing. The transaction starts one
//! [`cowkit_nosync::scoped::Session`] (when a scriptlet will run, or
//! rpm's check registers a new root's packages into its new database:
//! then it starts before that check, whose `fdatasync`s and closing
//! `syncfs` buy nothing either), applies it to every scriptlet's command
//! and to that check, and finishes it at the end,
//! also when the transaction fails: one `syncfs` of each filesystem the
//! root spans makes what was written durable. `/` is the running system
//! and keeps its syncs, and so does any root with
//! [`TxOptions::keep_syncs`](crate::TxOptions::keep_syncs).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use cowkit_nosync::scoped::{Report, Session};
use serde::Serialize;

use crate::{Error, Result};

/// Whether the scriptlets of a transaction in `root` run without sync
/// calls: not with `keep_syncs`, and never for the running system (a root
/// that is `/`, whatever path names it: a bind mount of `/` or a symlink
/// to it too). A root whose identity cannot be read keeps its syncs.
pub fn suppress_syncs(root: &Path, keep_syncs: bool) -> bool {
    if keep_syncs {
        return false;
    }
    let id = |p: &Path| rustix::fs::stat(p).ok().map(|s| (s.st_dev, s.st_ino));
    match (id(root), id(Path::new("/"))) {
        (Some(r), Some(slash)) => r != slash,
        _ => false,
    }
}

/// What the session did, in the transaction's summary.
#[derive(Debug, Default, Serialize)]
pub struct NosyncSummary {
    /// Commands whose calls were answered and counted: scriptlets' (and
    /// the Lua host's), and rpm's registration into a new root.
    pub processes: u64,
    /// Commands under an outer supervisor's filter: answered, not counted.
    pub uncounted: u64,
    /// Sync calls answered without running, per system call.
    pub answered: BTreeMap<&'static str, u64>,
    /// Scriptlets' processes still running at the end (daemons).
    pub still_running: u64,
    /// The final syncs: (mount point, type, seconds).
    pub final_sync: Vec<(PathBuf, String, f64)>,
    /// Why `sync(2)` ran first, if it did.
    pub full_sync_reason: Option<String>,
    /// No final sync: cowkit itself runs under a filter that answers sync
    /// calls (a nested `cowkit nosync`), which syncs at its end.
    pub final_sync_suppressed: bool,
    /// Setting the session up, in seconds.
    pub setup_seconds: f64,
    /// The final sync failed (a writeback error, as an error chain): what
    /// the scriptlets and the placement wrote may not be on disk. The
    /// transaction is done, but it failed.
    pub final_sync_error: Option<Vec<String>>,
}

impl From<Report> for NosyncSummary {
    fn from(r: Report) -> Self {
        NosyncSummary {
            processes: r.processes,
            uncounted: r.uncounted,
            answered: r.answered.into_iter().collect(),
            still_running: r.still_running,
            final_sync: r
                .syncs
                .into_iter()
                .map(|s| (s.mount_point, s.fs_type, s.elapsed.as_secs_f64()))
                .collect(),
            full_sync_reason: r.full_sync.map(|f| f.to_string()),
            final_sync_suppressed: r.sync_suppressed,
            setup_seconds: r.setup.as_secs_f64(),
            final_sync_error: None,
        }
    }
}

/// Start the session for `root` when scriptlets will run and their syncs
/// are to be suppressed.
pub(crate) fn start(root: &Path, keep_syncs: bool, scripts: bool) -> Result<Option<Session>> {
    if !scripts || !suppress_syncs(root, keep_syncs) {
        return Ok(None);
    }
    Ok(Some(Session::start(root).map_err(Error::Nosync)?))
}

/// Finish the session after the transaction: its final sync runs in any
/// case (`None`: there was no session). A failed final sync is reported in
/// [`NosyncSummary::final_sync_error`]: the root was changed, it is not an
/// error of the whole transaction. Also the final sync's time, in seconds.
pub(crate) fn finish(session: Option<Session>) -> Option<(NosyncSummary, f64)> {
    Some(match session?.finish() {
        Ok(r) => {
            let secs = r.sync_time.as_secs_f64();
            (r.into(), secs)
        }
        Err(e) => (
            NosyncSummary {
                final_sync_error: Some(cowkit_fs::error::chain(&e)),
                ..NosyncSummary::default()
            },
            0.0,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_system_keeps_its_syncs() {
        assert!(!suppress_syncs(Path::new("/"), false));
        assert!(!suppress_syncs(Path::new("/."), false));
        assert!(!suppress_syncs(Path::new("/usr/.."), false));
        let d = tempfile::tempdir().unwrap();
        let link = d.path().join("slash");
        std::os::unix::fs::symlink("/", &link).unwrap();
        assert!(!suppress_syncs(&link, false));
        assert!(suppress_syncs(d.path(), false));
        assert!(!suppress_syncs(d.path(), true));
        assert!(!suppress_syncs(&d.path().join("missing"), false));
    }
}
