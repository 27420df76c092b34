//! The one place where cowkit issues raw `ioctl`s.
//!
//! Everything else in cowkit goes through safe `rustix` calls. The two
//! `ioctl`s that rustix does not wrap, `FICLONERANGE`, `FS_IOC_FIEMAP` and
//! the fs-verity pair `FS_IOC_ENABLE_VERITY` / `FS_IOC_MEASURE_VERITY`, are
//! written here once as typed calls with opcodes from `linux-raw-sys`.
//! Also `fanotify_init` and `fanotify_mark` (not in rustix), through libc.
//! Also the `seccomp(SECCOMP_SET_MODE_FILTER)` call that installs a filter
//! without `no_new_privs` (for `cowkit nosync` as root), which rustix does
//! not have, and a `syncfs` on a descriptor number that cannot be open (to
//! tell whether sync calls are answered by a filter), and the same
//! installed by a child between `fork` and `exec` (`pre_exec`).
//! Also open-file-description byte-range locks (`F_OFD_SETLK`,
//! `F_OFD_SETLKW`): `rustix::fs::fcntl_lock` takes process-associated
//! locks (`F_SETLK`), which two threads of one process share and any
//! `close` of the file drops.
#![allow(unsafe_code)]

use std::os::fd::AsFd;

use linux_raw_sys::general::file_clone_range;
use linux_raw_sys::ioctl::{
    FICLONERANGE, FS_IOC_ENABLE_VERITY, FS_IOC_FIEMAP, FS_IOC_MEASURE_VERITY,
};
use rustix::io;
use rustix::ioctl::{ioctl, Setter, Updater};

/// `ioctl(dst, FICLONERANGE, {src, src_offset, len, dst_offset})` — share the
/// blocks of `src[src_offset..src_offset + len]` with `dst` at `dst_offset`.
///
/// Offsets and `len` must be multiples of the filesystem block size, except
/// that the range may end at the source's end of file; `len == 0` means "to
/// the source's end of file". See `ioctl_ficlonerange(2)`.
pub fn ficlonerange<Src: AsFd, Dst: AsFd>(
    src: Src,
    src_offset: u64,
    len: u64,
    dst: Dst,
    dst_offset: u64,
) -> io::Result<()> {
    let src_fd = src.as_fd();
    let arg = file_clone_range {
        src_fd: std::os::fd::AsRawFd::as_raw_fd(&src_fd) as i64,
        src_offset,
        src_length: len,
        dest_offset: dst_offset,
    };
    // SAFETY: FICLONERANGE is a write-only (`_IOW`) ioctl whose argument is a
    // pointer to `struct file_clone_range`; `Setter` passes a pointer to a
    // properly laid out copy of that struct, which lives for the whole call.
    // `src_fd` is borrowed, so the descriptor stays open during the call.
    unsafe { ioctl(dst, Setter::<{ FICLONERANGE }, file_clone_range>::new(arg)) }
}

/// The `struct fiemap` header from `<linux/fiemap.h>`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapHeader {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
}

/// `struct fiemap_extent` from `<linux/fiemap.h>`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct RawExtent {
    /// Byte offset of the extent in the file.
    pub fe_logical: u64,
    /// Byte offset of the extent on disk.
    pub fe_physical: u64,
    /// Length of the extent in bytes.
    pub fe_length: u64,
    fe_reserved64: [u64; 2],
    /// `FIEMAP_EXTENT_*` flags.
    pub fe_flags: u32,
    fe_reserved: [u32; 3],
}

/// How many extents one `FS_IOC_FIEMAP` call returns at most.
pub const FIEMAP_BATCH: usize = 64;

/// A `struct fiemap` followed by room for [`FIEMAP_BATCH`] extents, as the
/// kernel expects the flexible array member to be laid out.
#[repr(C)]
struct FiemapBuf {
    header: FiemapHeader,
    extents: [RawExtent; FIEMAP_BATCH],
}

/// `ioctl(fd, FS_IOC_FIEMAP, ...)` — map the file's bytes from `start` to
/// `start + len` onto disk extents, up to [`FIEMAP_BATCH`] at a time.
///
/// `flags` are `FIEMAP_FLAG_*` (e.g. `FIEMAP_FLAG_SYNC` to flush dirty pages
/// first). Returns the extents found; fewer than the batch means the range
/// is exhausted. See the kernel's `Documentation/filesystems/fiemap.rst`.
pub fn fiemap<Fd: AsFd>(fd: Fd, start: u64, len: u64, flags: u32) -> io::Result<Vec<RawExtent>> {
    let mut buf = Box::new(FiemapBuf {
        header: FiemapHeader {
            fm_start: start,
            fm_length: len,
            fm_flags: flags,
            fm_extent_count: FIEMAP_BATCH as u32,
            ..FiemapHeader::default()
        },
        extents: [RawExtent::default(); FIEMAP_BATCH],
    });
    // SAFETY: FS_IOC_FIEMAP is a read-write (`_IOWR`) ioctl taking a pointer
    // to `struct fiemap` followed by `fm_extent_count` `struct
    // fiemap_extent`s. `FiemapBuf` is `#[repr(C)]` with exactly that layout
    // and `fm_extent_count` equals the array's length, so the kernel writes
    // only inside the buffer, which outlives the call.
    unsafe { ioctl(fd, Updater::<{ FS_IOC_FIEMAP }, FiemapBuf>::new(&mut buf))? };
    let n = (buf.header.fm_mapped_extents as usize).min(FIEMAP_BATCH);
    Ok(buf.extents[..n].to_vec())
}

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
pub fn seccomp_set_mode_filter(prog: &[BpfInsn]) -> std::io::Result<()> {
    let rc = seccomp_filter(prog, libc::SECCOMP_FILTER_FLAG_TSYNC)?;
    match rc {
        0 => Ok(()),
        // With TSYNC, a positive value is the id of a thread that could not
        // be synchronised.
        r if r > 0 => Err(std::io::Error::from_raw_os_error(libc::ESRCH)),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// `struct fsverity_enable_arg` from `<linux/fsverity.h>`.
#[repr(C)]
#[derive(Clone, Copy)]
struct FsverityEnableArg {
    version: u32,
    hash_algorithm: u32,
    block_size: u32,
    salt_size: u32,
    salt_ptr: u64,
    sig_size: u32,
    reserved1: u32,
    sig_ptr: u64,
    reserved2: [u64; 11],
}

/// `FS_VERITY_HASH_ALG_SHA256`.
pub const FS_VERITY_HASH_ALG_SHA256: u8 = 1;

/// `ioctl(fd, FS_IOC_ENABLE_VERITY)` with SHA-256, no salt, no signature
/// and `block_size` (the page size is what every filesystem accepts). `fd`
/// must be open read-only with no writer left. See the kernel's
/// `Documentation/filesystems/fsverity.rst`.
pub fn enable_verity<Fd: AsFd>(fd: Fd, block_size: u32) -> io::Result<()> {
    let arg = FsverityEnableArg {
        version: 1,
        hash_algorithm: u32::from(FS_VERITY_HASH_ALG_SHA256),
        block_size,
        salt_size: 0,
        salt_ptr: 0,
        sig_size: 0,
        reserved1: 0,
        sig_ptr: 0,
        reserved2: [0; 11],
    };
    // SAFETY: FS_IOC_ENABLE_VERITY is a write-only (`_IOW`) ioctl whose
    // argument is a pointer to `struct fsverity_enable_arg`; `Setter`
    // passes a pointer to a `#[repr(C)]` copy with that exact layout (128
    // bytes), living for the whole call. Salt and signature are absent
    // (null pointers with size 0), so the kernel reads no other memory.
    unsafe {
        ioctl(
            fd,
            Setter::<{ FS_IOC_ENABLE_VERITY }, FsverityEnableArg>::new(arg),
        )
    }
}

/// `struct fsverity_digest` with room for a 64-byte digest.
#[repr(C)]
struct FsverityDigest {
    digest_algorithm: u16,
    digest_size: u16,
    digest: [u8; 64],
}

/// `ioctl(fd, FS_IOC_MEASURE_VERITY)`: the file's fs-verity digest as
/// (algorithm, digest), or `ENODATA` when verity is not enabled on it.
pub fn measure_verity<Fd: AsFd>(fd: Fd) -> io::Result<(u8, Vec<u8>)> {
    let mut d = FsverityDigest {
        digest_algorithm: 0,
        digest_size: 64,
        digest: [0; 64],
    };
    // SAFETY: FS_IOC_MEASURE_VERITY is a read-write (`_IOWR`) ioctl taking
    // a pointer to `struct fsverity_digest`, whose `digest_size` says how
    // many bytes follow (64 here, the size of the array of this
    // `#[repr(C)]` struct); the kernel writes at most that many and fails
    // with EOVERFLOW otherwise. The buffer outlives the call.
    unsafe {
        ioctl(
            fd,
            Updater::<{ FS_IOC_MEASURE_VERITY }, FsverityDigest>::new(&mut d),
        )?
    };
    let n = usize::from(d.digest_size).min(64);
    Ok((d.digest_algorithm as u8, d.digest[..n].to_vec()))
}

fn last_errno() -> io::Errno {
    io::Errno::from_raw_os_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(0))
}

/// `fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_CLOEXEC |
/// FAN_NONBLOCK, O_RDONLY)`: a notification group whose events identify
/// objects by filesystem id and file handle (no descriptors), read without
/// blocking. Needs `CAP_SYS_ADMIN`.
pub fn fanotify_init_fid() -> io::Result<std::os::fd::OwnedFd> {
    let flags =
        libc::FAN_CLASS_NOTIF | libc::FAN_REPORT_FID | libc::FAN_CLOEXEC | libc::FAN_NONBLOCK;
    // SAFETY: fanotify_init takes two integer arguments and returns a new
    // descriptor or -1; no memory is passed to the kernel.
    let fd = unsafe { libc::fanotify_init(flags, libc::O_RDONLY as libc::c_uint) };
    if fd < 0 {
        return Err(last_errno());
    }
    // SAFETY: `fd` is a descriptor the kernel just created for this call
    // and nothing else owns.
    Ok(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// `fanotify_mark(group, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, mask,
/// AT_FDCWD, path)` (or `FAN_MARK_REMOVE` when `add` is false): watch (or
/// stop watching) the whole filesystem that `path` is on.
pub fn fanotify_mark_filesystem<Fd: AsFd>(
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
        return Err(last_errno());
    }
    Ok(())
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

/// Install `prog` on the calling thread (not `TSYNC`: the caller is
/// single-threaded) with `SECCOMP_FILTER_FLAG_NEW_LISTENER`, returning the
/// listener descriptor of its `SECCOMP_RET_USER_NOTIF` answers. Needs
/// `CAP_SYS_ADMIN` or `no_new_privs` (`EACCES` otherwise); `EBUSY` when a
/// filter with a listener is already installed (a nested supervisor).
pub fn seccomp_filter_with_listener(prog: &[BpfInsn]) -> std::io::Result<std::os::fd::OwnedFd> {
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
pub struct SeccompNotif {
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
pub fn seccomp_notif_recv<Fd: AsFd>(listener: Fd) -> io::Result<SeccompNotif> {
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
    Ok(SeccompNotif {
        id: n.id,
        pid: n.pid,
        nr: n.data.nr,
        args: n.data.args,
    })
}

/// `ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND)`: answer the call `id` with
/// the return value `val`, or with the error `errno` when it is not 0.
pub fn seccomp_notif_send<Fd: AsFd>(listener: Fd, id: u64, val: i64, errno: i32) -> io::Result<()> {
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
pub fn seccomp_notif_id_valid<Fd: AsFd>(listener: Fd, id: u64) -> bool {
    let fd = std::os::fd::AsRawFd::as_raw_fd(&listener.as_fd());
    // SAFETY: SECCOMP_IOCTL_NOTIF_ID_VALID is `_IOW` on a `u64`, read by
    // the kernel from `id`, which lives for the call.
    let rc = unsafe { libc::ioctl(fd, libc::SECCOMP_IOCTL_NOTIF_ID_VALID, &id as *const u64) };
    rc == 0
}

/// Take ownership of the descriptor `n` that this process inherited from
/// its parent for one purpose (its number passed in an environment
/// variable): checked to be open, marked close-on-exec.
pub fn take_inherited_fd(n: i32) -> io::Result<std::os::fd::OwnedFd> {
    if n < 3 {
        return Err(io::Errno::BADF);
    }
    // SAFETY: F_GETFD only queries the descriptor table; an unused number
    // gives EBADF.
    if unsafe { libc::fcntl(n, libc::F_GETFD) } < 0 {
        return Err(last_errno());
    }
    // SAFETY: `n` is open (checked above) and was handed down by the
    // parent to be used here alone; nothing else in this process refers
    // to it, so owning (and eventually closing) it is sound.
    let fd = unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(n) };
    rustix::io::fcntl_setfd(&fd, rustix::io::FdFlags::CLOEXEC)?;
    Ok(fd)
}

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

/// `fcntl(fd, F_OFD_SETLKW or F_OFD_SETLK, {F_WRLCK, SEEK_SET, start, len})`:
/// an exclusive lock on bytes `start..start + len` of `fd`'s file, owned by
/// the open file description (not the process). It conflicts with the
/// locks of every other open file description, in this process or another
/// (and, on NFS and CephFS, on other hosts), and goes when the last
/// descriptor of that description is closed, or the process dies. With
/// `wait`, blocks until granted; without, a held range is `EAGAIN`. `fd`
/// must be open for writing. `len` 0 means "to the end of any file size".
pub fn ofd_lock_write<Fd: AsFd>(fd: Fd, start: u64, len: u64, wait: bool) -> io::Result<()> {
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

/// The start of `struct xfs_fsop_geom_v1` from `<xfs/xfs_fs.h>`: the
/// version-1 geometry every XFS kernel answers (112 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct XfsFsopGeomV1 {
    blocksize: u32,
    rtextsize: u32,
    agblocks: u32,
    agcount: u32,
    logblocks: u32,
    sectsize: u32,
    inodesize: u32,
    imaxpct: u32,
    datablocks: u64,
    rtblocks: u64,
    rtextents: u64,
    logstart: u64,
    uuid: [u8; 16],
    sunit: u32,
    swidth: u32,
    version: i32,
    flags: u32,
    logsectsize: u32,
    rtsectsize: u32,
    dirblocksize: u32,
}

const _: () = assert!(std::mem::size_of::<XfsFsopGeomV1>() == 112);

/// `XFS_IOC_FSGEOMETRY_V1`: `_IOR('X', 100, struct xfs_fsop_geom_v1)`.
const XFS_IOC_FSGEOMETRY_V1: rustix::ioctl::Opcode =
    rustix::ioctl::opcode::read::<XfsFsopGeomV1>(b'X', 100);

/// `ioctl(fd, XFS_IOC_FSGEOMETRY_V1)`: `(blocksize, agblocks, agcount,
/// inodesize)` of the XFS filesystem holding `fd`. Other filesystems
/// answer `ENOTTY` (or `EINVAL`).
pub fn xfs_geometry<Fd: AsFd>(fd: Fd) -> io::Result<(u32, u32, u32, u32)> {
    // SAFETY: XFS_IOC_FSGEOMETRY_V1 is a read-only (`_IOR`) ioctl that fills
    // a `struct xfs_fsop_geom_v1`, whose layout `XfsFsopGeomV1` repeats (its
    // size, 112, is part of the opcode and checked above); `Getter` passes a
    // pointer to an uninitialised buffer of exactly that type, alive for the
    // call, and reads it only after the kernel reported success.
    let g = unsafe {
        ioctl(
            fd,
            rustix::ioctl::Getter::<{ XFS_IOC_FSGEOMETRY_V1 }, XfsFsopGeomV1>::new(),
        )?
    };
    Ok((g.blocksize, g.agblocks, g.agcount, g.inodesize))
}

/// Seccomp programs a child installs on itself between `fork` and `exec`
/// ([`seccomp_on_exec`]), prepared once by the parent.
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
pub fn seccomp_on_exec(cmd: &mut std::process::Command, filter: std::sync::Arc<ExecFilter>) {
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

/// Arrange for the child of `cmd` to block `signals` just before `exec`
/// (the program starts with them blocked, as rpm starts its scriptlets).
/// A failure fails the spawn.
pub fn block_signals_on_exec(cmd: &mut std::process::Command, signals: &'static [i32]) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec and
    // calls only async-signal-safe functions (sigemptyset, sigaddset,
    // pthread_sigmask) on a set on its own stack; it allocates nothing
    // (an `io::Error` from an errno does not allocate).
    unsafe {
        cmd.pre_exec(move || {
            let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
            libc::sigemptyset(set.as_mut_ptr());
            for &sig in signals {
                libc::sigaddset(set.as_mut_ptr(), sig);
            }
            match libc::pthread_sigmask(libc::SIG_BLOCK, set.as_ptr(), std::ptr::null_mut()) {
                0 => Ok(()),
                e => Err(std::io::Error::from_raw_os_error(e)),
            }
        });
    }
}

/// Whether signal `sig` is ignored (`SIG_IGN`), as a parent may leave it
/// for its child: `nohup` ignores SIGHUP, a shell without job control
/// ignores SIGINT and SIGQUIT in a background job. A program that then
/// installs a handler undoes what its parent asked for.
pub fn signal_ignored(sig: i32) -> bool {
    let mut old = std::mem::MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a query only (no new action): the kernel writes the current
    // action into `old`, a zeroed `sigaction` we own.
    let rc = unsafe { libc::sigaction(sig, std::ptr::null(), old.as_mut_ptr()) };
    // SAFETY: zero-initialised, and filled in by the kernel when rc == 0.
    rc == 0 && unsafe { old.assume_init() }.sa_sigaction == libc::SIG_IGN
}

/// The child's side of [`seccomp_on_exec`].
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
