//! Typed errors that carry the paths involved, and the helpers every cowkit
//! crate uses to read them.
//!
//! [`IoError`] is the one shape of "a system call on one file failed"; no
//! crate declares its own `Io { op, path, source }`. How the other crates
//! hold it:
//! - those that also call cowkit-fs functions returning [`Error`]
//!   (`cowkit-install`, `cowkit-nosync`, `cowkit-rpmdb`, `cowkit-s3`,
//!   `cowkit-store`) have one variant `Fs(#[from] cowkit_fs::Error)` and
//!   `impl From<cowkit_fs::IoError>` putting an `IoError` there
//!   (`Error::Fs(e.into())`, as [`Error::Io`]), so `?` takes both;
//! - those that meet only single system-call failures (`cowkit-tree`,
//!   `cowkit_extents::cache`) have `Io(#[from] cowkit_fs::IoError)`
//!   (`cowkit_extents::confined` names it `Output`, the file it writes).
//!
//! [`chain`] and [`errno_of`] walk any error's causes.

use std::path::{Path, PathBuf};

use rustix::io::Errno;

use crate::method::{Method, Reason};

/// A system call on one file or directory failed: what was being done, the
/// path concerned, and the kernel's answer.
#[derive(Debug, thiserror::Error)]
#[error("cannot {op} `{}`", path.display())]
pub struct IoError {
    /// What was being done, e.g. "read", "set owner of".
    pub op: &'static str,
    /// The file concerned.
    pub path: PathBuf,
    /// The kernel's answer.
    #[source]
    pub source: std::io::Error,
}

impl IoError {
    /// `op` on `path` failed with `source` (an [`Errno`] or an
    /// [`std::io::Error`]).
    pub fn new(
        op: &'static str,
        path: impl Into<PathBuf>,
        source: impl Into<std::io::Error>,
    ) -> Self {
        IoError {
            op,
            path: path.into(),
            source: source.into(),
        }
    }

    /// The errno, when the kernel gave one.
    pub fn errno(&self) -> Option<Errno> {
        self.source.raw_os_error().map(Errno::from_raw_os_error)
    }
}

/// Everything that can go wrong in `cowkit-fs`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call on one file failed.
    #[error(transparent)]
    Io(#[from] IoError),

    /// A data-moving system call between two files failed with an error
    /// that is not a reason to fall back (e.g. `ENOSPC`, `EIO`).
    #[error("{method} from `{src}` to `{dst}` failed")]
    Transfer {
        /// The method that failed.
        method: Method,
        /// Source file.
        src: PathBuf,
        /// Destination file.
        dst: PathBuf,
        /// The kernel's answer.
        #[source]
        source: std::io::Error,
    },

    /// A method that had already worked for this source/destination pair
    /// failed later: cowkit does not silently switch methods mid-way.
    #[error("{method} from `{src}` to `{dst}` failed after it had already worked for this pair ({reason})")]
    ConfirmedMethodFailed {
        /// The confirmed method.
        method: Method,
        /// Source file.
        src: PathBuf,
        /// Destination file.
        dst: PathBuf,
        /// Why it failed this time.
        reason: Reason,
    },

    /// The only method allowed was refused by the kernel.
    #[error("{method} from `{src}` to `{dst}` is not possible ({reason})")]
    MethodRefused {
        /// The method that was required.
        method: Method,
        /// Source file.
        src: PathBuf,
        /// Destination file.
        dst: PathBuf,
        /// Why the kernel refused it.
        reason: Reason,
    },

    /// The source ended before the requested range did.
    #[error("`{path}` ended at byte {at}, before the {wanted} bytes asked for")]
    UnexpectedEof {
        /// The source file.
        path: PathBuf,
        /// Where its data stopped.
        at: u64,
        /// The end of the requested range.
        wanted: u64,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io(op: &'static str, path: &Path, e: impl Into<std::io::Error>) -> Error {
    Error::Io(IoError::new(op, path, e))
}

/// `e` and its causes as text, outermost first.
pub fn chain(e: &(dyn std::error::Error + 'static)) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = Some(e);
    while let Some(c) = cur {
        out.push(c.to_string());
        cur = c.source();
    }
    out
}

/// The first errno found in `e` or its causes.
pub fn errno_of(e: &(dyn std::error::Error + 'static)) -> Option<Errno> {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if let Some(n) = c
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::raw_os_error)
        {
            return Some(Errno::from_raw_os_error(n));
        }
        cur = c.source();
    }
    None
}
