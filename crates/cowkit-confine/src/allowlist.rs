//! The system calls the stream worker may make, and the argument checks on
//! some of them.
//!
//! The list was taken from `strace -f` of a program that decodes
//! zstd/xz/gzip/bzip2 from stdin to stdout, `pwrite`s and `ftruncate`s an
//! open file, allocates 64 MiB and hashes, counting only the calls made after
//! the point where the worker confines itself (the dynamic loader and Rust's
//! start-up code run before). `docs/confinement.md` explains each entry.
//!
//! Syscall numbers come from `linux-raw-sys` for the architecture this crate
//! is compiled for, which is why the filter is always built for
//! `std::env::consts::ARCH`.

use linux_raw_sys::general as k;
use seccompiler::{
    BackendError, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompRule, TargetArch,
};

/// What an allowed system call may be called with.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Args {
    /// Any arguments.
    Any,
    /// 32-bit argument `idx` equals one of `values`.
    OneOf { idx: u8, values: &'static [u32] },
    /// 32-bit argument `idx`, masked with `mask`, equals `value`.
    Masked { idx: u8, mask: u32, value: u32 },
    /// 32-bit argument `idx`, masked with `mask`, equals one of `values`.
    MaskedOneOf {
        idx: u8,
        mask: u32,
        values: &'static [u32],
    },
    /// Argument 0 is this process's id (`tgkill` to our own threads only).
    OwnProcess,
}

/// One allowed system call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    /// The name without `__NR_`, as in `man 2`.
    pub name: &'static str,
    /// The number on the architecture being compiled for.
    pub nr: u32,
    /// The argument checks.
    pub args: Args,
}

/// `sc!(__NR_read)` or `sc!(__NR_mmap, Args::…)`.
macro_rules! sc {
    ($nr:ident) => {
        sc!($nr, Args::Any)
    };
    ($nr:ident, $args:expr) => {
        Entry {
            name: strip_nr(stringify!($nr)),
            nr: k::$nr,
            args: $args,
        }
    };
}

const fn strip_nr(s: &'static str) -> &'static str {
    match s.as_bytes() {
        [b'_', b'_', b'N', b'R', b'_', rest @ ..] => match std::str::from_utf8(rest) {
            Ok(name) => name,
            Err(_) => s,
        },
        _ => s,
    }
}

/// `mmap`/`mprotect` with `PROT_EXEC` clear: no new executable memory once
/// confined (the program's code was mapped before).
const NO_EXEC: Args = Args::Masked {
    idx: 2,
    mask: k::PROT_EXEC,
    value: 0,
};

/// The `madvise` advice values glibc's allocator and thread stacks use, and
/// the harmless hints. Not `MADV_HWPOISON`, `MADV_SOFT_OFFLINE` (root could
/// take pages out of service), `MADV_DONTFORK` and the like.
const MADVISE: Args = Args::OneOf {
    idx: 2,
    values: &[
        k::MADV_NORMAL,
        k::MADV_RANDOM,
        k::MADV_SEQUENTIAL,
        k::MADV_WILLNEED,
        k::MADV_DONTNEED,
        k::MADV_FREE,
        k::MADV_HUGEPAGE,
        k::MADV_NOHUGEPAGE,
    ],
};

/// `futex` wait and wake only (with or without `FUTEX_PRIVATE_FLAG` and
/// `FUTEX_CLOCK_REALTIME`): what Rust's `Mutex`/`Condvar`/`Once` and glibc's
/// pthread objects use. The priority-inheritance and requeue operations, the
/// history of futex privilege escalations, are denied.
const FUTEX: Args = Args::MaskedOneOf {
    idx: 1,
    mask: k::FUTEX_CMD_MASK as u32,
    values: &[
        k::FUTEX_WAIT,
        k::FUTEX_WAKE,
        k::FUTEX_WAIT_BITSET,
        k::FUTEX_WAKE_BITSET,
    ],
};

/// The flags that make a `clone` a thread of this process.
const THREAD_FLAGS: u32 =
    k::CLONE_VM | k::CLONE_FS | k::CLONE_FILES | k::CLONE_SIGHAND | k::CLONE_THREAD;

/// Flags a thread `clone` must not carry: new namespaces, vfork, a different
/// parent, tracing, and an exit signal (which only a new process has).
const NOT_THREAD_FLAGS: u32 = k::CSIGNAL
    | k::CLONE_VFORK
    | k::CLONE_PARENT
    | k::CLONE_PTRACE
    | k::CLONE_NEWNS
    | k::CLONE_NEWCGROUP
    | k::CLONE_NEWUTS
    | k::CLONE_NEWIPC
    | k::CLONE_NEWUSER
    | k::CLONE_NEWPID
    | k::CLONE_NEWNET;

pub(crate) use table::{STREAM_WORKER, THREADS, THREADS_ENOSYS};

/// The tables name syscalls by their number on the architecture being
/// compiled for; they exist for the architectures they were checked on.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
mod table {
    use super::*;

    /// Everything the single-threaded stream worker needs once confined.
    pub(crate) const STREAM_WORKER: &[Entry] = &[
        // I/O on descriptors that are already open (stdin, stdout, stderr, the
        // result pipe, the output file).
        sc!(__NR_read),
        sc!(__NR_readv),
        sc!(__NR_pread64),
        sc!(__NR_write),
        sc!(__NR_writev),
        sc!(__NR_pwrite64),
        sc!(__NR_lseek),
        sc!(__NR_ftruncate),
        sc!(__NR_fallocate),
        sc!(__NR_fstat),
        // F_GETFL: the output's access mode and O_APPEND. F_GETFD: Rust's
        // std checks that a descriptor is still open when dropping it.
        sc!(
            __NR_fcntl,
            Args::OneOf {
                idx: 1,
                values: &[k::F_GETFL, k::F_GETFD]
            }
        ),
        sc!(__NR_close),
        // Memory.
        sc!(__NR_brk),
        sc!(__NR_mmap, NO_EXEC),
        sc!(__NR_munmap),
        sc!(__NR_mremap),
        sc!(__NR_mprotect, NO_EXEC),
        sc!(__NR_madvise, MADVISE),
        // Locks, time, randomness.
        sc!(__NR_futex, FUTEX),
        sc!(__NR_sched_yield),
        sc!(__NR_clock_gettime),
        sc!(__NR_gettimeofday),
        sc!(__NR_getrandom),
        // Signals: returning from handlers, masks, the alternate stack Rust's
        // stack-overflow handler uses, and what `abort()` needs to kill this
        // process with SIGABRT (not any other process).
        sc!(__NR_rt_sigreturn),
        sc!(__NR_rt_sigprocmask),
        sc!(__NR_rt_sigaction),
        sc!(__NR_sigaltstack),
        sc!(__NR_restart_syscall),
        sc!(__NR_getpid),
        sc!(__NR_gettid),
        sc!(__NR_tgkill, Args::OwnProcess),
        // Ending a thread and the process.
        sc!(__NR_exit),
        sc!(__NR_exit_group),
    ];

    /// Added by `Policy::allow_threads(true)`. `clone3` is not here: its flags
    /// are behind a pointer seccomp cannot read (see [`THREADS_ENOSYS`]).
    pub(crate) const THREADS: &[Entry] = &[
        sc!(
            __NR_clone,
            Args::Masked {
                idx: 0,
                mask: THREAD_FLAGS | NOT_THREAD_FLAGS,
                value: THREAD_FLAGS,
            }
        ),
        sc!(__NR_set_robust_list),
        sc!(__NR_rseq),
    ];

    /// Answered with `ENOSYS` when threads are allowed, so that glibc takes
    /// its fallback: `clone3` (glibc then uses `clone`, whose flags the
    /// filter can check) and `sched_getaffinity` (called by
    /// `pthread_getattr_np`, which Rust runs in every new thread to find its
    /// stack guard; glibc reads ENOSYS as "no affinity support" and goes on,
    /// and no other process's CPU mask is revealed).
    pub(crate) const THREADS_ENOSYS: &[Entry] = &[sc!(__NR_clone3), sc!(__NR_sched_getaffinity)];
}

/// Other architectures: no tables; [`target_arch`] refuses them before the
/// tables are looked at.
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod table {
    use super::*;

    pub(crate) const STREAM_WORKER: &[Entry] = &[];
    pub(crate) const THREADS: &[Entry] = &[];
    pub(crate) const THREADS_ENOSYS: &[Entry] = &[];
}

/// The seccompiler architecture for the architecture this crate was compiled
/// for, if the allowlist exists for it.
pub(crate) fn target_arch(arch: &'static str) -> Result<TargetArch, crate::Error> {
    match arch {
        "x86_64" if cfg!(target_arch = "x86_64") => Ok(TargetArch::x86_64),
        "aarch64" if cfg!(target_arch = "aarch64") => Ok(TargetArch::aarch64),
        _ => Err(crate::Error::UnsupportedArch { arch }),
    }
}

fn cond(idx: u8, op: SeccompCmpOp, value: u32) -> Result<SeccompCondition, BackendError> {
    SeccompCondition::new(idx, SeccompCmpArgLen::Dword, op, u64::from(value))
}

/// The seccompiler rules of one entry; an empty list allows any arguments.
pub(crate) fn rules(entry: &Entry, own_pid: u32) -> Result<Vec<SeccompRule>, BackendError> {
    let one = |c: SeccompCondition| SeccompRule::new(vec![c]);
    match entry.args {
        Args::Any => Ok(Vec::new()),
        Args::OneOf { idx, values } => values
            .iter()
            .map(|&v| one(cond(idx, SeccompCmpOp::Eq, v)?))
            .collect(),
        Args::Masked { idx, mask, value } => Ok(vec![one(cond(
            idx,
            SeccompCmpOp::MaskedEq(u64::from(mask)),
            value,
        )?)?]),
        Args::MaskedOneOf { idx, mask, values } => values
            .iter()
            .map(|&v| one(cond(idx, SeccompCmpOp::MaskedEq(u64::from(mask)), v)?))
            .collect(),
        Args::OwnProcess => Ok(vec![one(cond(0, SeccompCmpOp::Eq, own_pid)?)?]),
    }
}
