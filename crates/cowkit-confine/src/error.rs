//! The error type of confinement itself (the worker protocol's is
//! [`WorkerError`](crate::worker::WorkerError)).

use std::io;
use std::path::PathBuf;

/// Why confinement could not be set up or proven.
///
/// Every variant means the same thing to the caller: the process is **not**
/// known to be confined, so it must not go on to parse untrusted input. After
/// a failed [`Policy::apply`](crate::Policy::apply) the process may be
/// partly restricted; treat the error as fatal and exit.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The allowlist was only written and checked for x86_64 and aarch64.
    #[error(
        "seccomp confinement is not available on `{arch}`: the allowlist exists for x86_64 and aarch64 only"
    )]
    UnsupportedArch {
        /// The architecture this binary was built for.
        arch: &'static str,
    },

    /// seccompiler rejected the filter while compiling it to BPF.
    #[error("cannot compile the seccomp filter")]
    Compile(#[source] seccompiler::BackendError),

    /// `prctl(PR_SET_NO_NEW_PRIVS)` failed.
    #[error("cannot set no_new_privs before installing the seccomp filter")]
    NoNewPrivs(#[source] io::Error),

    /// `seccomp(SECCOMP_SET_MODE_FILTER)` failed, for example because the
    /// kernel was built without `CONFIG_SECCOMP_FILTER`.
    #[error("cannot install the seccomp filter (is seccomp enabled in this kernel?)")]
    Install(#[source] io::Error),

    /// With `SECCOMP_FILTER_FLAG_TSYNC`, another thread of the process could
    /// not be given the filter.
    #[error("cannot give the seccomp filter to thread {tid} of this process")]
    ThreadSync {
        /// The thread that could not be synchronized.
        tid: std::ffi::c_long,
    },

    /// Any other failure reported by seccompiler.
    #[error("cannot install the seccomp filter")]
    Seccompiler(#[source] seccompiler::Error),

    /// [`self_check`](crate::self_check) could open `/`: no filter of ours is
    /// in force.
    #[error("the process is not confined: opening `/` succeeded")]
    NotConfined,

    /// [`self_check`](crate::self_check) saw opening `/` fail with an error
    /// other than the `EPERM` our filter returns, so something other than our
    /// filter is in force.
    #[error("cannot prove confinement: opening `/` failed with an unexpected error")]
    SelfCheck(#[source] io::Error),

    /// `/proc/<pid>/status` could not be read or has no `Seccomp:` line.
    #[error("cannot read the seccomp mode from `{}`", path.display())]
    Status {
        /// The status file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
}

impl From<seccompiler::Error> for Error {
    fn from(e: seccompiler::Error) -> Self {
        match e {
            seccompiler::Error::Backend(e) => Error::Compile(e),
            seccompiler::Error::Prctl(e) => Error::NoNewPrivs(e),
            seccompiler::Error::Seccomp(e) => Error::Install(e),
            seccompiler::Error::ThreadSync(tid) => Error::ThreadSync { tid },
            other => Error::Seccompiler(other),
        }
    }
}
