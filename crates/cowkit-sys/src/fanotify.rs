//! fanotify (`fanotify_init`, `fanotify_mark`; see `fanotify(7)`), which
//! rustix does not wrap: a notification group whose events name objects
//! by file handle, marks on whole filesystems.
#![expect(
    unsafe_code,
    reason = "fanotify_init and fanotify_mark have no safe wrapper; each call with its // SAFETY:"
)]

use std::os::fd::AsFd;

use rustix::io;

/// `fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_CLOEXEC |
/// FAN_NONBLOCK, O_RDONLY)`: a notification group whose events identify
/// objects by filesystem id and file handle (no descriptors), read without
/// blocking. Needs `CAP_SYS_ADMIN`.
pub fn init_fid() -> io::Result<std::os::fd::OwnedFd> {
    let flags =
        libc::FAN_CLASS_NOTIF | libc::FAN_REPORT_FID | libc::FAN_CLOEXEC | libc::FAN_NONBLOCK;
    // SAFETY: fanotify_init takes two integer arguments and returns a new
    // descriptor or -1; no memory is passed to the kernel.
    let fd = unsafe { libc::fanotify_init(flags, libc::O_RDONLY as libc::c_uint) };
    if fd < 0 {
        return Err(crate::last_errno());
    }
    // SAFETY: `fd` is a descriptor the kernel just created for this call
    // and nothing else owns.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// `fanotify_mark(group, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, mask,
/// AT_FDCWD, path)` (or `FAN_MARK_REMOVE` when `add` is false): watch (or
/// stop watching) the whole filesystem that `path` is on.
pub fn mark_filesystem<Fd: AsFd>(
    group: Fd,
    add: bool,
    mask: u64,
    path: &std::ffi::CStr,
) -> io::Result<()> {
    let how = if add {
        libc::FAN_MARK_ADD
    } else {
        libc::FAN_MARK_REMOVE
    } | libc::FAN_MARK_FILESYSTEM;
    let group = std::os::fd::AsRawFd::as_raw_fd(&group.as_fd());
    // SAFETY: `group` is a borrowed open descriptor; `path` is a valid
    // NUL-terminated string that outlives the call, which only reads it.
    let r = unsafe { libc::fanotify_mark(group, how, mask, libc::AT_FDCWD, path.as_ptr()) };
    if r < 0 {
        return Err(crate::last_errno());
    }
    Ok(())
}
