//! Seccomp (`seccomp(2)`), for `cowkit nosync`: installing a filter
//! without `no_new_privs` (rustix has no `seccomp`), or with a
//! user-notification listener, also in a child between `fork` and `exec`
//! ([`on_exec`]); answering the listener's notifications; telling whether
//! this process's sync calls reach the kernel.
#![expect(
    unsafe_code,
    reason = "seccomp(2) and its listener have no safe wrapper; each call with its // SAFETY:"
)]

use std::os::fd::AsFd;

use rustix::io;

use crate::last_errno;

/// One classic BPF instruction, `struct sock_filter` from `<linux/filter.h>`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpfInsn {
    /// Operation.
    pub code: u16,
    /// Jump offset if true.
    pub jt: u8,
    /// Jump offset if false.
    pub jf: u8,
    /// Operand.
    pub k: u32,
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, flags, &prog)`: the raw return value.
fn seccomp_filter(prog: &[BpfInsn], flags: libc::c_ulong) -> std::io::Result<libc::c_long> {
    let len =
        u16::try_from(prog.len()).map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    let fprog = libc::sock_fprog {
        len,
        filter: prog.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: `BpfInsn` has the layout of `struct sock_filter` (repr(C),
    // u16/u8/u8/u32). `fprog` points at `len` such instructions, which the
    // kernel copies (`copy_from_user`) during the call and does not keep;
    // both `prog` and `fprog` outlive the call. No memory is written.
    Ok(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            flags,
            &fprog as *const libc::sock_fprog,
        )
    })
}

/// `seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog)` —
/// install a seccomp filter on every thread of this process, **without**
/// setting `no_new_privs` first. See `seccomp(2)`.
///
/// The kernel accepts this only from a caller with `CAP_SYS_ADMIN` in its
/// user namespace (or with `no_new_privs` already set); otherwise it fails
/// with `EACCES`. The filter stays for the life of the process and is
/// inherited across `fork` and kept across `execve`; setuid programs and
/// file capabilities keep working because `no_new_privs` stays off.
pub fn set_mode_filter(prog: &[BpfInsn]) -> std::io::Result<()> {
    let rc = seccomp_filter(prog, libc::SECCOMP_FILTER_FLAG_TSYNC)?;
    match rc {
        0 => Ok(()),
        // With TSYNC, a positive value is the id of a thread that could not
        // be synchronised.
        r if r > 0 => Err(std::io::Error::from_raw_os_error(libc::ESRCH)),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Install `prog` on the calling thread (not `TSYNC`: the caller is
/// single-threaded) with `SECCOMP_FILTER_FLAG_NEW_LISTENER`, returning the
/// listener descriptor of its `SECCOMP_RET_USER_NOTIF` answers. Needs
/// `CAP_SYS_ADMIN` or `no_new_privs` (`EACCES` otherwise); `EBUSY` when a
/// filter with a listener is already installed (a nested supervisor).
pub fn filter_with_listener(prog: &[BpfInsn]) -> std::io::Result<std::os::fd::OwnedFd> {
    // With NEW_LISTENER the value is a new descriptor or -1.
    let rc = seccomp_filter(prog, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)?;
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `rc` is the listener descriptor the kernel just created for
    // this call; nothing else owns it.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(rc as i32) })
}

/// One system call waiting for the supervisor's answer.
#[derive(Clone, Copy, Debug)]
pub struct Notif {
    /// The notification's id (for the answer).
    pub id: u64,
    /// The calling thread (in the listener's pid namespace).
    pub pid: u32,
    /// The system call number.
    pub nr: i32,
    /// Its arguments.
    pub args: [u64; 6],
}

/// `ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV)`: wait for the next call.
pub fn notif_recv<Fd: AsFd>(listener: Fd) -> io::Result<Notif> {
    // SAFETY: an all-zero `seccomp_notif` is a valid value (integers and
    // an array of integers), and the kernel requires the buffer zeroed.
    let mut n: libc::seccomp_notif = unsafe { std::mem::zeroed() };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&listener.as_fd());
    // SAFETY: SECCOMP_IOCTL_NOTIF_RECV is `_IOWR` on `struct
    // seccomp_notif`; `n` is such a struct, writable, living for the call.
    let rc = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_RECV, &mut n as *mut _) };
    if rc < 0 {
        return Err(last_errno());
    }
    Ok(Notif {
        id: n.id,
        pid: n.pid,
        nr: n.data.nr,
        args: n.data.args,
    })
}

/// `ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND)`: answer the call `id` with
/// the return value `val`, or with the error `errno` when it is not 0.
pub fn notif_send<Fd: AsFd>(listener: Fd, id: u64, val: i64, errno: i32) -> io::Result<()> {
    let mut r = libc::seccomp_notif_resp {
        id,
        val,
        error: -errno,
        flags: 0,
    };
    let fd = std::os::fd::AsRawFd::as_raw_fd(&listener.as_fd());
    // SAFETY: SECCOMP_IOCTL_NOTIF_SEND is `_IOWR` on `struct
    // seccomp_notif_resp`; `r` is such a struct living for the call.
    let rc = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_SEND, &mut r as *mut _) };
    if rc < 0 {
        return Err(last_errno());
    }
    Ok(())
}

/// `ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID)`: whether the call `id`
/// still waits (its thread alive), so what was looked up in `/proc` for
/// its pid was about that thread.
pub fn notif_id_valid<Fd: AsFd>(listener: Fd, id: u64) -> bool {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&listener.as_fd());
    // SAFETY: SECCOMP_IOCTL_NOTIF_ID_VALID is `_IOW` on a `u64`, read by
    // the kernel from `id`, which lives for the call.
    let rc = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &id as *const u64) };
    rc == 0
}

/// `syncfs(INT_MAX)` — whether a `syncfs` on a descriptor that cannot be
/// open (above any `RLIMIT_NOFILE`, whose ceiling `fs.nr_open` is below
/// 2^30) succeeds. The kernel answers `EBADF`; a seccomp filter that
/// answers sync calls with 0 without running them (`cowkit nosync`'s,
/// which cannot see the descriptor table) answers success. So `true`
/// means this process's sync calls do not reach the kernel.
pub fn syncfs_answers_a_bad_descriptor() -> bool {
    // SAFETY: syncfs takes a descriptor number by value and touches no
    // memory of ours; a number that names no open file only makes the
    // kernel return EBADF. No descriptor is created, closed or borrowed.
    let rc = unsafe { libc::syscall(libc::SYS_syncfs, libc::c_int::MAX) };
    rc == 0
}

/// Seccomp programs a child installs on itself between `fork` and `exec`
/// ([`on_exec`]), prepared once by the parent.
#[derive(Debug)]
pub struct ExecFilter {
    /// Installed first, with `SECCOMP_FILTER_FLAG_NEW_LISTENER`: its
    /// `SECCOMP_RET_USER_NOTIF` answers go to the listener, which the
    /// child sends over `sock` (one `b'L'` datagram carrying it).
    pub notify: Vec<BpfInsn>,
    /// Installed instead of `notify` when the kernel refuses a second
    /// listener in the chain (`EBUSY`: an outer supervisor has one); the
    /// child then sends `b'P'` without a descriptor.
    pub plain: Vec<BpfInsn>,
    /// Installed after either of them.
    pub last: Vec<BpfInsn>,
    /// A datagram socket to the parent (close-on-exec: the program the
    /// child executes does not inherit it).
    pub sock: std::os::fd::OwnedFd,
}

/// Arrange for the child of `cmd` to install `filter`'s programs on
/// itself just before `exec` (see [`ExecFilter`]), so that the program
/// and everything it starts inherit them. As root the programs are
/// installed without `no_new_privs` (setuid programs keep working); a
/// caller the kernel refuses that (`EACCES`) sets `no_new_privs` first.
/// Any failure fails the spawn with that error: the program never runs
/// with a filter whose listener nobody holds.
pub fn on_exec(cmd: &mut std::process::Command, filter: std::sync::Arc<ExecFilter>) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe work is allowed. It reads the programs and
    // the socket the parent prepared (kept alive by the `Arc` the closure
    // owns, never dropped in the child) and makes system calls only:
    // seccomp, prctl, sendmsg (ancillary buffer on the stack), close. It
    // allocates nothing, takes no lock and touches no shared state;
    // `io::Error` values built from an errno do not allocate.
    unsafe {
        cmd.pre_exec(move || install_in_child(&filter));
    }
}

/// The child's side of [`on_exec`].
fn install_in_child(f: &ExecFilter) -> std::io::Result<()> {
    let with_listener = || -> std::io::Result<libc::c_long> {
        let rc = seccomp_filter(&f.notify, libc::SECCOMP_FILTER_FLAG_NEW_LISTENER)?;
        match rc {
            r if r < 0 => Err(std::io::Error::last_os_error()),
            r => Ok(r),
        }
    };
    let mut r = with_listener();
    if matches!(&r, Err(e) if e.raw_os_error() == Some(libc::EACCES)) {
        rustix::thread::set_no_new_privs(true)?;
        r = with_listener();
    }
    let one = |prog: &[BpfInsn]| -> std::io::Result<()> {
        match seccomp_filter(prog, 0)? {
            0 => Ok(()),
            _ => Err(std::io::Error::last_os_error()),
        }
    };
    match r {
        Ok(raw) => {
            // SAFETY: `raw` is the listener the kernel just created for
            // this process; nothing else owns it.
            let l = unsafe {
                <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(raw as i32)
            };
            one(&f.last)?;
            let fds = [l.as_fd()];
            let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
            let mut anc = rustix::net::SendAncillaryBuffer::new(&mut space);
            anc.push(rustix::net::SendAncillaryMessage::ScmRights(&fds));
            rustix::net::sendmsg(
                &f.sock,
                &[std::io::IoSlice::new(b"L")],
                &mut anc,
                rustix::net::SendFlags::empty(),
            )?;
            Ok(())
        }
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
            one(&f.plain)?;
            one(&f.last)?;
            rustix::net::send(&f.sock, b"P", rustix::net::SendFlags::empty())?;
            Ok(())
        }
        Err(e) => Err(e),
    }
}
