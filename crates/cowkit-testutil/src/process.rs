//! Reaping a child with its resource usage (`wait4`, which rustix does not
//! wrap with its `rusage`), for tests that bound the memory of what they
//! run.
#![expect(
    unsafe_code,
    reason = "wait4 with its rusage has no safe wrapper; the call with its // SAFETY:"
)]

/// How a child ended, and the most memory it (or a descendant it waited
/// for) had resident, from `wait4(2)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reaped {
    /// The raw wait status (`WIFEXITED`, `WTERMSIG`, … apply).
    pub status: i32,
    /// `ru_maxrss`, in KiB.
    pub max_rss_kib: u64,
}

/// `wait4(pid, &status, WNOHANG, &rusage)` — reap the child `pid` if it has
/// ended (`None` while it runs), with its peak resident memory
/// ([wait4(2)](https://man7.org/linux/man-pages/man2/wait4.2.html)). The
/// tests use it to bound the memory of a process tree.
pub fn wait4_nohang(pid: u32) -> std::io::Result<Option<Reaped>> {
    let mut status = 0;
    // SAFETY: an all-zero `rusage` is a valid value of this plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `status` and `usage` are valid, writable and live for the
    // call; `pid` names one process (never 0 or -1, which would mean a
    // group).
    let r = unsafe { libc::wait4(pid as libc::pid_t, &mut status, libc::WNOHANG, &mut usage) };
    match r {
        -1 => Err(std::io::Error::last_os_error()),
        0 => Ok(None),
        _ => Ok(Some(Reaped {
            status,
            max_rss_kib: usage.ru_maxrss as u64,
        })),
    }
}
