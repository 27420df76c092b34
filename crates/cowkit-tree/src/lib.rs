//! Parallel tree clone with `cp -a` fidelity, and the matching parallel
//! remove.
//!
//! - [`copy()`]: clone a file or a directory tree. Regular files go through
//!   the cowkit-fs fallback chain (clone → `copy_file_range` → read/write,
//!   holes kept); directories, symlinks, hardlink groups, fifos, sockets
//!   and device nodes are recreated; owner, mode (setuid/setgid/sticky
//!   included), nanosecond times and every extended attribute (POSIX ACLs
//!   and `security.capability` included) are preserved. Directory metadata
//!   is applied once all their children are done, times last.
//! - [`remove()`]: `rm -r`, directories removed after their children.
//!
//! Both walk the tree the same way (module `walk`): a directory is
//! entered, listed, and left once its children are done. Subdirectories go
//! to a work queue shared by N threads, or, past a budget of open
//! directories, are walked depth first with one directory open at a time,
//! the ones above found again through `..` and checked to be the same
//! directory. Every system call is relative to an open directory
//! (`openat`, `mkdirat`, `statx`, `getdents64` in large batches), so no
//! path is resolved again from the working directory and names are plain
//! bytes. A failure on one
//! entry is recorded with its path and the walk goes on; a full or
//! read-only destination stops it ([`Summary::aborted`]). Libraries never
//! print: progress and errors go to a [`Progress`].
//!
//! ```no_run
//! use std::path::Path;
//! use cowkit_tree::{copy, CopyOptions, NoProgress};
//!
//! let summary = copy(Path::new("rootfs"), Path::new("snapshot"), &CopyOptions::archive(), &NoProgress)?;
//! println!(
//!     "{} files, {} bytes cloned, errors: {}",
//!     summary.files,
//!     summary.tally.bytes.cloned,
//!     summary.errors.len()
//! );
//! # Ok::<(), cowkit_tree::Error>(())
//! ```
#![deny(missing_docs)]

pub mod copy;
mod entry_error;
mod queue;
pub mod remove;
mod walk;

use std::path::PathBuf;

use serde::Serialize;

pub use copy::{copy, copy_linked, CopyOptions, Links, Preserve, Summary};
pub use remove::{remove, RemoveOptions, RemoveSummary};

/// Errors that stop a whole [`copy()`] or [`remove()`] before it starts.
/// Failures on single entries during the walk are [`EntryError`]s.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call on the top-level source or destination failed.
    #[error(transparent)]
    Io(#[from] cowkit_fs::IoError),
    /// The destination is the source or lies inside it.
    #[error("cannot copy the directory `{src}` into itself (`{dst}`)")]
    IntoItself {
        /// The source directory.
        src: PathBuf,
        /// The destination.
        dst: PathBuf,
    },
    /// The source and the destination are the same file.
    #[error("`{src}` and `{dst}` are the same file")]
    SameFile {
        /// The source.
        src: PathBuf,
        /// The destination.
        dst: PathBuf,
    },
    /// A path that cannot be operated on (`.`, `..`, `/`, no file name).
    #[error("refusing to {op} `{path}`")]
    Refused {
        /// What was asked.
        op: &'static str,
        /// The path.
        path: PathBuf,
    },
}

/// One entry that could not be copied or removed; the walk went on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EntryError {
    /// The entry (in the source tree for a copy).
    pub path: PathBuf,
    /// What failed and why, outermost first.
    pub error: Vec<String>,
    /// The errno's symbolic name, when the kernel gave one.
    pub errno: Option<&'static str>,
}

impl std::fmt::Display for EntryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.error.join(": "))
    }
}

/// Receives progress from a walk; called from several threads at once.
pub trait Progress: Sync {
    /// One entry is done; `bytes` of file data were moved for it.
    fn on_entry(&self, bytes: u64) {
        let _ = bytes;
    }
    /// One entry failed; the walk goes on.
    fn on_error(&self, error: &EntryError) {
        let _ = error;
    }
}

/// A [`Progress`] that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;

impl Progress for NoProgress {}

/// Raise the soft limit on open files to the hard limit: a walk keeps one
/// descriptor open per directory being worked on. Call it once from the
/// program, not from a library.
pub use cowkit_fs::dir::raise_fd_limit;

/// The default number of workers: the number of CPUs.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
