//! Byte-range locks owned by an open file description (OFD locks,
//! `F_OFD_SETLK`/`F_OFD_SETLKW`): they exclude threads of one process as
//! well as other processes and hosts. `rustix::fs::fcntl_lock` takes
//! process-associated locks (`F_SETLK`), which two threads of one process
//! share and any `close` of the file drops.
#![expect(
    unsafe_code,
    reason = "OFD locks (F_OFD_SETLK) have no safe wrapper; each call is narrow with its // SAFETY:"
)]

use std::os::fd::AsFd;

use rustix::io;

/// `fcntl(fd, F_OFD_SETLKW or F_OFD_SETLK, {F_WRLCK, SEEK_SET, start, len})`:
/// an exclusive lock on bytes `start..start + len` of `fd`'s file, owned by
/// the open file description (not the process). It conflicts with the
/// locks of every other open file description, in this process or another
/// (and, on NFS and CephFS, on other hosts), and goes when the last
/// descriptor of that description is closed, or the process dies. With
/// `wait`, blocks until granted; without, a held range is `EAGAIN`. `fd`
/// must be open for writing. `len` 0 means "to the end of any file size".
pub fn write<Fd: AsFd>(fd: Fd, start: u64, len: u64, wait: bool) -> io::Result<()> {
    let start = libc::off_t::try_from(start).map_err(|_| io::Errno::INVAL)?;
    let len = libc::off_t::try_from(len).map_err(|_| io::Errno::INVAL)?;
    // SAFETY: `struct flock` is plain data; all-zero is a valid value
    // (l_pid must be 0 for OFD locks).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = libc::F_WRLCK as _;
    fl.l_whence = libc::SEEK_SET as _;
    fl.l_start = start;
    fl.l_len = len;
    let cmd = if wait {
        libc::F_OFD_SETLKW
    } else {
        libc::F_OFD_SETLK
    };
    let raw = std::os::fd::AsRawFd::as_raw_fd(&fd.as_fd());
    loop {
        // SAFETY: `raw` is a borrowed open descriptor; `fl` is a properly
        // laid out `struct flock` that outlives the call, which reads it.
        let r = unsafe { libc::fcntl(raw, cmd, &mut fl as *mut libc::flock) };
        if r == 0 {
            return Ok(());
        }
        match last_errno() {
            // A signal handler ran while waiting: wait again.
            io::Errno::INTR => continue,
            io::Errno::ACCESS => return Err(io::Errno::AGAIN),
            e => return Err(e),
        }
    }
}

/// The `errno` of the call that just failed.
fn last_errno() -> io::Errno {
    io::Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}
