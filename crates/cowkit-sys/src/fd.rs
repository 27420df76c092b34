//! A descriptor inherited from the parent (its number passed in an
//! environment variable), owned once checked.
#![expect(
    unsafe_code,
    reason = "owning an inherited descriptor by number is unsafe by nature; checked first, with its // SAFETY:"
)]

use rustix::io;

/// Take ownership of the descriptor `n` that this process inherited from
/// its parent for one purpose (its number passed in an environment
/// variable): checked to be open, marked close-on-exec.
pub fn take_inherited(n: i32) -> io::Result<std::os::fd::OwnedFd> {
    if n < 3 {
        return Err(io::Errno::BADF);
    }
    // SAFETY: F_GETFD only queries the descriptor table; an unused number
    // gives EBADF.
    if unsafe { libc::fcntl(n, libc::F_GETFD) } < 0 {
        return Err(crate::last_errno());
    }
    // SAFETY: `n` is open (checked above) and was handed down by the
    // parent to be used here alone; nothing else in this process refers
    // to it, so owning (and eventually closing) it is sound.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(n) };
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
    Ok(fd)
}
