//! Typed errors that carry the paths involved.

use std::path::PathBuf;

use crate::copy::{Method, Reason};

/// Everything that can go wrong in `cowkit-fs`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call on one file failed.
    #[error("cannot {op} `{path}`")]
    Io {
        /// What was being done, e.g. "read", "set owner of".
        op: &'static str,
        /// The file concerned.
        path: PathBuf,
        /// The kernel's answer.
        #[source]
        source: std::io::Error,
    },

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

pub(crate) fn io(op: &'static str, path: &std::path::Path, e: rustix::io::Errno) -> Error {
    Error::Io {
        op,
        path: path.to_path_buf(),
        source: e.into(),
    }
}
