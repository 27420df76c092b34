//! The one error type of this crate.

use std::io;
use std::path::PathBuf;

/// A `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong; variants carry the paths involved.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file operation failed (cowkit-fs; an `IoError` converts into
    /// this).
    #[error(transparent)]
    Fs(#[from] cowkit_fs::Error),
    /// A cache or stats directory is not safe to load a library from.
    #[error("`{}` is not safe to load the shim from: {why}", path.display())]
    Unsafe {
        /// The directory.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The seccomp filter could not be built.
    #[error("cannot build the seccomp filter")]
    Filter(#[source] seccompiler::BackendError),
    /// The architecture has no filter.
    #[error("no nosync seccomp filter for architecture `{0}`")]
    UnsupportedArch(&'static str),
    /// The kernel refused the seccomp filter.
    #[error("cannot install the seccomp filter ({how})")]
    Install {
        /// Which way it was installed.
        how: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The command could not be started.
    #[error("cannot run `{}`", program.display())]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// The final `syncfs` of a filesystem reported a writeback error.
    #[error("final syncfs of `{}` ({fs_type}) failed", mount_point.display())]
    FinalSync {
        /// Its mount point.
        mount_point: PathBuf,
        /// Its type.
        fs_type: String,
        /// The error.
        #[source]
        source: io::Error,
    },
    /// A process-management call failed.
    #[error("cannot {what}")]
    Process {
        /// What was being done.
        what: &'static str,
        /// The error.
        #[source]
        source: io::Error,
    },
}

pub(crate) fn io_err(what: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Error {
    Error::from(cowkit_fs::IoError::new(what, path, source))
}

pub(crate) fn proc_err(what: &'static str, source: impl Into<io::Error>) -> Error {
    Error::Process {
        what,
        source: source.into(),
    }
}

impl From<cowkit_fs::IoError> for Error {
    fn from(e: cowkit_fs::IoError) -> Self {
        Error::Fs(e.into())
    }
}
