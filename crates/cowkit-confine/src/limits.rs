//! Resource limits of a worker: address space, CPU time, file size.
//!
//! Seccomp decides which system calls a worker may make, not how much
//! memory, time or disk it may use. A decompression bomb or a decoder told
//! to allocate gigabytes is bounded here instead, with `setrlimit`, which
//! the worker must call before it confines itself (the filter denies
//! `setrlimit` and `prlimit64`). Soft and hard limits are set alike, so
//! the confined process cannot raise them again.

use std::io;

use rustix::process::{setrlimit, Resource, Rlimit};

/// Limits for a worker process. See `docs/confinement.md` for how the
/// transcoder's values were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_AS`, bytes of virtual address space: an allocation past it
    /// fails (Rust aborts with "memory allocation failed", C decoders
    /// report an error).
    pub address_space: u64,
    /// `RLIMIT_CPU`, seconds of CPU time, all threads together; past it
    /// the kernel sends `SIGXCPU`, then `SIGKILL` a second later.
    pub cpu_seconds: u64,
    /// `RLIMIT_FSIZE`, bytes: no file may be written past this offset;
    /// the writer gets `SIGXFSZ`. Pipes are not files: it does not apply
    /// to them.
    pub file_size: u64,
}

/// A limit that could not be set.
#[derive(Debug, thiserror::Error)]
#[error("cannot set {resource} to {value}")]
pub struct LimitError {
    /// The resource (`RLIMIT_AS`, …).
    pub resource: &'static str,
    /// The value asked for.
    pub value: u64,
    /// Why.
    #[source]
    pub source: io::Error,
}

impl Limits {
    /// Set the limits on this process (soft = hard). Limits can only be
    /// lowered by an unprivileged process, and never raised by a confined
    /// one.
    pub fn apply(&self) -> Result<(), LimitError> {
        for (resource, name, value) in [
            (Resource::As, "RLIMIT_AS", self.address_space),
            (Resource::Cpu, "RLIMIT_CPU", self.cpu_seconds),
            (Resource::Fsize, "RLIMIT_FSIZE", self.file_size),
        ] {
            let limit = Rlimit {
                current: Some(value),
                maximum: Some(value),
            };
            setrlimit(resource, limit).map_err(|e| LimitError {
                resource: name,
                value,
                source: e.into(),
            })?;
        }
        Ok(())
    }
}
