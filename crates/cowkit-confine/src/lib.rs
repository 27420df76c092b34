//! Seccomp confinement for the worker process that decompresses untrusted
//! payloads.
//!
//! The zstd, xz, gzip and bzip2 decoders are C code fed with bytes from an
//! untrusted package. The worker that runs them confines itself with a
//! seccomp filter **before it reads the first untrusted byte**, so that an
//! exploited decoder cannot open a file, execute a program, use the network,
//! create a process, signal or trace another process, mount, or change its
//! credentials. What remains is what a stream transcoder needs: reading and
//! writing descriptors that are already open, memory, futexes, time,
//! randomness, signal returns, and exit.
//!
//! - [`Policy::stream_worker`] is the policy; [`Policy::allow_threads`] adds
//!   thread creation (off by default).
//! - [`Policy::apply`] sets `no_new_privs` and installs the filter for every
//!   thread of the process.
//! - [`self_check`] proves from inside, with one system call, that the filter
//!   is in force; [`mode_of`] lets the parent check from outside.
//! - [`worker`]: the protocol between the unconfined parent and its worker
//!   ([`worker::Worker::start`] on the parent's side, [`worker::serve`] on
//!   the worker's): the worker confines itself and says so, the parent
//!   checks `/proc/<pid>/status` before it lets the worker read anything,
//!   and the result or the error chain comes back as JSON.
//!
//! A call outside the allowlist fails with `EPERM` rather than killing the
//! process: Rust code gets an ordinary [`std::io::Error`] it can report
//! through the result pipe, and the denial can be tested. The design, the
//! list and its reasons are in `docs/confinement.md`.
//!
//! ```no_run
//! use std::io::{Read, Write};
//!
//! // Open everything the worker needs first: confinement forbids open().
//! let mut input = std::io::stdin().lock();
//! let mut output = std::io::stdout().lock();
//!
//! let applied = cowkit_confine::Policy::stream_worker().apply()?;
//! cowkit_confine::self_check()?; // fail closed
//! eprintln!("confined: {} system calls allowed", applied.allowed);
//!
//! let mut buf = [0u8; 64 * 1024];
//! loop {
//!     let n = input.read(&mut buf)?;
//!     if n == 0 {
//!         break;
//!     }
//!     output.write_all(&buf[..n])?; // decode here
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod allowlist;
pub mod error;
pub mod limits;
mod status;
pub mod worker;

use std::collections::BTreeMap;

use rustix::io::Errno;
use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, SeccompRule};

pub use error::Error;
pub use limits::Limits;
pub use status::{mode, mode_of, self_check, Mode};

use allowlist::Entry;

/// What the confined process may do.
///
/// Built for one use, the stream worker: see [`Policy::stream_worker`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    threads: bool,
}

/// What [`Policy::apply`] installed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Applied {
    /// The architecture the filter was built for.
    pub arch: &'static str,
    /// How many system calls are allowed (some only with certain arguments).
    pub allowed: usize,
    /// Whether new threads may be created.
    pub threads: bool,
}

impl Policy {
    /// The policy of the single-threaded worker that reads an untrusted
    /// package from descriptors opened before confinement and writes the
    /// result to descriptors opened before confinement.
    ///
    /// Allowed: `read`, `readv`, `pread64`, `write`, `writev`, `pwrite64`,
    /// `lseek`, `ftruncate`, `fallocate`, `fstat`, `fcntl` (`F_GETFL`, `F_GETFD`),
    /// `close`; `brk`, `mmap` and `mprotect` without `PROT_EXEC`, `munmap`,
    /// `mremap`, `madvise` (common advice only); `futex` (wait and wake),
    /// `sched_yield`, `clock_gettime`, `gettimeofday`, `getrandom`;
    /// `rt_sigreturn`, `rt_sigprocmask`, `rt_sigaction`, `sigaltstack`,
    /// `restart_syscall`, `getpid`, `gettid`, `tgkill` (this process only);
    /// `exit`, `exit_group`. Everything else fails with `EPERM`.
    ///
    /// Not allowed, among others: every call that takes a path (`open`,
    /// `openat`, `stat`, `statx`, `newfstatat`, `unlink`, `rename`, ...),
    /// `execve`, `socket`, `connect`, `clone`/`fork`, `ptrace`, `kill`,
    /// `mount`, `setuid`, `ioctl`, `prctl`, `seccomp`.
    ///
    /// `fstat` is allowed, `newfstatat` and `statx` are not: with
    /// `AT_EMPTY_PATH` they can act on a descriptor, but seccomp cannot see
    /// whether the path is empty, and an absolute path ignores the
    /// descriptor. So once confined `std::fs::File::metadata` (which uses
    /// `statx`) fails with `EPERM`, and so does glibc's `fstat()` in the
    /// releases that implement it with `newfstatat` (2.33 onwards, Debian
    /// 12's 2.36 among them; newer ones went back to `fstat`). Take the
    /// metadata the worker needs before [`apply`](Self::apply), or use
    /// `rustix::fs::fstat`, which makes the `fstat` call.
    pub fn stream_worker() -> Self {
        Policy { threads: false }
    }

    /// Also allow creating threads (default: no).
    ///
    /// Adds `clone` only with the flags of a thread of this process
    /// (`CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_SIGHAND|CLONE_THREAD`, no
    /// namespace flags, no exit signal), `set_robust_list` and `rseq`.
    /// `clone3` passes its flags in memory seccomp cannot read, so it is
    /// answered with `ENOSYS`, which makes glibc fall back to `clone`; so is
    /// `sched_getaffinity`, which glibc's `pthread_getattr_np` (run by Rust
    /// in each new thread) then treats as unsupported. A new process still
    /// cannot be created.
    #[must_use]
    pub fn allow_threads(mut self, yes: bool) -> Self {
        self.threads = yes;
        self
    }

    /// The names of the allowed system calls, in allowlist order (for logs and
    /// documentation). Empty on an architecture without an allowlist.
    pub fn allowed_syscalls(&self) -> Vec<&'static str> {
        self.entries().map(|e| e.name).collect()
    }

    /// Confines the calling process, irreversibly.
    ///
    /// Sets `PR_SET_NO_NEW_PRIVS` (required to install a filter without
    /// `CAP_SYS_ADMIN`; harmless for the worker, which never executes
    /// anything), then installs the filter with `SECCOMP_FILTER_FLAG_TSYNC`,
    /// so that every thread of the process is confined, not just the caller.
    /// With [`allow_threads`](Self::allow_threads), a small filter answering
    /// `clone3` and `sched_getaffinity` with `ENOSYS` is installed first.
    ///
    /// Open every descriptor the worker needs before calling this: nothing
    /// can be opened afterwards. The filter is compiled for the architecture
    /// this crate was built for (`std::env::consts::ARCH`); a call made
    /// through another ABI (x86 32-bit `int 0x80`) kills the process, and one
    /// through x32 numbers fails with `EPERM`.
    ///
    /// # Errors
    ///
    /// [`Error::UnsupportedArch`] off x86_64 and aarch64, before anything is
    /// changed. [`Error::NoNewPrivs`], [`Error::Install`],
    /// [`Error::ThreadSync`] or [`Error::Seccompiler`] if the kernel refused;
    /// the process may then be partly restricted and must exit.
    pub fn apply(&self) -> Result<Applied, Error> {
        let built = self.build(std::process::id())?;
        if let Some(enosys) = &built.enosys {
            seccompiler::apply_filter_all_threads(enosys)?;
        }
        seccompiler::apply_filter_all_threads(&built.main)?;
        Ok(built.applied)
    }

    /// Compiles the filters for a process with id `pid`, changing nothing.
    fn build(&self, pid: u32) -> Result<Built, Error> {
        let arch_name = std::env::consts::ARCH;
        let arch = allowlist::target_arch(arch_name)?;

        let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
        for entry in self.entries() {
            rules.insert(
                i64::from(entry.nr),
                allowlist::rules(entry, pid).map_err(Error::Compile)?,
            );
        }
        let allowed = rules.len();
        let enosys = if self.threads {
            // Seccomp runs every filter, newest first, and the strictest
            // answer wins (an errno beats "allow"). The main filter is
            // installed last (it forbids `seccomp` itself), so it lets these
            // calls through and this older filter answers them with ENOSYS.
            let mut only: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
            for entry in allowlist::THREADS_ENOSYS {
                only.insert(i64::from(entry.nr), Vec::new());
                rules.insert(i64::from(entry.nr), Vec::new());
            }
            Some(compile(
                only,
                SeccompAction::Allow,
                SeccompAction::Errno(errno(Errno::NOSYS)),
                arch,
            )?)
        } else {
            None
        };
        let main = compile(
            rules,
            SeccompAction::Errno(errno(Errno::PERM)),
            SeccompAction::Allow,
            arch,
        )?;
        Ok(Built {
            enosys,
            main,
            applied: Applied {
                arch: arch_name,
                allowed,
                threads: self.threads,
            },
        })
    }

    fn entries(&self) -> impl Iterator<Item = &'static Entry> {
        let threads: &'static [Entry] = if self.threads {
            allowlist::THREADS
        } else {
            &[]
        };
        allowlist::STREAM_WORKER.iter().chain(threads)
    }
}

/// The compiled filters, in the order they are installed.
struct Built {
    /// With threads: `clone3` and `sched_getaffinity` answered with ENOSYS.
    enosys: Option<BpfProgram>,
    main: BpfProgram,
    applied: Applied,
}

fn compile(
    rules: BTreeMap<i64, Vec<SeccompRule>>,
    mismatch: SeccompAction,
    matched: SeccompAction,
    arch: seccompiler::TargetArch,
) -> Result<BpfProgram, Error> {
    SeccompFilter::new(rules, mismatch, matched, arch)
        .and_then(BpfProgram::try_from)
        .map_err(Error::Compile)
}

fn errno(e: Errno) -> u32 {
    e.raw_os_error().unsigned_abs()
}

#[cfg(test)]
mod tests;
