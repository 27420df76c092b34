//! Metadata applied in the order the kernel requires, and extended
//! attributes: the one metadata apply and the one xattr reader of cowkit.
//!
//! [`apply_on`] gives an entry its metadata, on an open file
//! ([`On::Fd`]) or on a name in a directory without following it
//! ([`On::At`]: symlinks, device nodes, fifos), with a [`Policy`] for what
//! may be skipped (a user cannot give files away; a filesystem may not
//! take every attribute). [`XattrBuf`] reads all attributes of an entry
//! with one call per attribute into reused buffers.
//!
//! Order: owner first (`fchown` clears setuid/setgid and drops
//! `security.capability`), then extended attributes, then mode, then times
//! last (every earlier change touches ctime, and writing data touches
//! mtime). Calls that would change nothing are skipped when the current
//! state is known.

use std::ffi::{CStr, CString, OsStr, OsString};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Gid, Mode, Stat, Timespec, Timestamps, Uid, XattrFlags};
use rustix::io::Errno;

use crate::copy::Handle;
use crate::error::{io, Error, IoError, Result};

/// One extended attribute.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xattr {
    /// Full name with namespace, e.g. `security.capability`.
    pub name: OsString,
    /// Raw value.
    pub value: Vec<u8>,
}

/// Metadata to give a file. `None` leaves that part as it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    /// Owner.
    pub uid: Option<u32>,
    /// Group.
    pub gid: Option<u32>,
    /// Permission bits including setuid, setgid and sticky (`0o7777`).
    pub mode: Option<u32>,
    /// Access time.
    pub atime: Option<Timespec>,
    /// Modification time.
    pub mtime: Option<Timespec>,
    /// Extended attributes to set (others are left alone).
    pub xattrs: Vec<Xattr>,
}

impl Meta {
    /// Everything `stat` says about a file: owner, mode, times.
    pub fn from_stat(st: &Stat) -> Meta {
        Meta {
            uid: Some(st.st_uid),
            gid: Some(st.st_gid),
            mode: Some(st.st_mode & 0o7777),
            atime: Some(Timespec {
                tv_sec: st.st_atime,
                tv_nsec: st.st_atime_nsec as _,
            }),
            mtime: Some(Timespec {
                tv_sec: st.st_mtime,
                tv_nsec: st.st_mtime_nsec as _,
            }),
            xattrs: Vec::new(),
        }
    }
}

/// What [`apply`] / [`apply_on`] did, for callers that count syscalls
/// saved and attributes skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// `fchown` was called (and worked).
    pub chown: bool,
    /// Extended attributes set.
    pub xattrs: usize,
    /// `fchmod` was called.
    pub chmod: bool,
    /// `futimens` was called.
    pub times: bool,
    /// The owner could not be given away (`EPERM`, allowed by
    /// [`Policy::owner_may_fail`]).
    pub chown_refused: bool,
    /// Extended attributes the filesystem does not support (`EOPNOTSUPP`,
    /// allowed by [`Policy::unsupported_xattrs_ok`]).
    pub xattrs_unsupported: usize,
}

/// Where metadata or extended attributes go.
#[derive(Clone, Copy, Debug)]
pub enum On<'a> {
    /// An open file.
    Fd(BorrowedFd<'a>),
    /// `name` in the directory `dir`, never followed (symlinks, fifos,
    /// devices). Extended attributes reach it as `/proc/self/fd/DIR/NAME`,
    /// so that only the last component is looked up.
    At(BorrowedFd<'a>, &'a CStr),
}

impl On<'_> {
    fn proc_path(dir: BorrowedFd<'_>, name: &CStr) -> PathBuf {
        let mut p = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        p.push(OsStr::from_bytes(name.to_bytes()));
        p
    }
}

/// What the entry is known to have now; lets calls that change nothing be
/// skipped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Current {
    /// Owner and group.
    pub owner: Option<(u32, u32)>,
    /// Permission bits (`0o7777`).
    pub mode: Option<u32>,
}

impl From<&Stat> for Current {
    fn from(st: &Stat) -> Self {
        Current {
            owner: Some((st.st_uid, st.st_gid)),
            mode: Some(st.st_mode & 0o7777),
        }
    }
}

/// Which failures [`apply_on`] tolerates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// `EPERM` from `chown` is not an error (as `cp -a` run by a user: it
    /// cannot give files away). The setuid and setgid bits are then taken
    /// out of the mode (POSIX `cp -p`, GNU `cp`): a copy that keeps its
    /// creator as owner must not run with its creator's privileges.
    pub owner_may_fail: bool,
    /// `EOPNOTSUPP` from setting an extended attribute is counted, not an
    /// error (a destination filesystem without that namespace).
    pub unsupported_xattrs_ok: bool,
}

impl Policy {
    /// Every failure is an error.
    pub const STRICT: Policy = Policy {
        owner_may_fail: false,
        unsupported_xattrs_ok: false,
    };
}

/// Apply `meta` to the open file `file`, in the order owner → xattrs → mode
/// → times. `current` is the file's state if the caller already has it; it
/// lets calls that change nothing be skipped.
pub fn apply(file: Handle<'_>, meta: &Meta, current: Option<&Stat>) -> Result<Applied> {
    apply_on(
        On::Fd(file.as_fd()),
        file.path(),
        meta,
        current.map(Current::from).unwrap_or_default(),
        Policy::STRICT,
    )
}

/// Apply `meta` to `on` (shown as `path` in errors) in the order owner →
/// extended attributes → mode → times, skipping calls that would change
/// nothing given `current`.
///
/// Changing the owner clears setuid/setgid and `security.capability`, and
/// setting a POSIX access ACL rewrites the group bits, so either forces the
/// mode to be set again. For a symlink leave `meta.mode` at `None` (Linux
/// symlinks have no mode of their own).
pub fn apply_on(
    on: On<'_>,
    path: &Path,
    meta: &Meta,
    current: Current,
    policy: Policy,
) -> Result<Applied> {
    let mut done = Applied::default();
    let owner_differs = match current.owner {
        Some((u, g)) => meta.uid.is_some_and(|x| x != u) || meta.gid.is_some_and(|x| x != g),
        None => meta.uid.is_some() || meta.gid.is_some(),
    };
    if owner_differs {
        let (u, g) = (meta.uid.map(Uid::from_raw), meta.gid.map(Gid::from_raw));
        let r = match on {
            On::Fd(fd) => rustix::fs::fchown(fd, u, g),
            On::At(dir, name) => rustix::fs::chownat(dir, name, u, g, AtFlags::SYMLINK_NOFOLLOW),
        };
        match r {
            Ok(()) => done.chown = true,
            Err(Errno::PERM) if policy.owner_may_fail => done.chown_refused = true,
            Err(e) => return Err(io("set owner of", path, e)),
        }
    }
    let mut acl = false;
    for x in &meta.xattrs {
        match set_xattr_on(on, x) {
            Ok(()) => done.xattrs += 1,
            Err(Errno::OPNOTSUPP) if policy.unsupported_xattrs_ok => done.xattrs_unsupported += 1,
            Err(e) => return Err(xattr_error(path, x, e)),
        }
        acl |= x.name.as_bytes() == b"system.posix_acl_access";
    }
    if let Some(mode) = meta.mode {
        let mode = if done.chown_refused {
            mode & 0o1777
        } else {
            mode & 0o7777
        };
        if done.chown || acl || current.mode != Some(mode) {
            let m = Mode::from_raw_mode(mode);
            match on {
                On::Fd(fd) => rustix::fs::fchmod(fd, m),
                On::At(dir, name) => rustix::fs::chmodat(dir, name, m, AtFlags::empty()),
            }
            .map_err(|e| io("set mode of", path, e))?;
            done.chmod = true;
        }
    }
    if meta.atime.is_some() || meta.mtime.is_some() {
        let t = timestamps(meta);
        match on {
            On::Fd(fd) => rustix::fs::futimens(fd, &t),
            On::At(dir, name) => rustix::fs::utimensat(dir, name, &t, AtFlags::SYMLINK_NOFOLLOW),
        }
        .map_err(|e| io("set times of", path, e))?;
        done.times = true;
    }
    Ok(done)
}

/// Apply `meta` to the symlink `name` in the directory `dir` without
/// following it: owner, then extended attributes, then times (a symlink
/// has no mode of its own on Linux, so `meta.mode` is ignored). `dir_path`
/// names the directory in errors.
pub fn apply_symlink_at<D: AsFd>(
    dir: D,
    dir_path: &Path,
    name: &OsStr,
    meta: &Meta,
) -> Result<Applied> {
    let path = dir_path.join(name);
    let cname =
        CString::new(name.as_bytes()).map_err(|_| io("set metadata of", &path, Errno::INVAL))?;
    let meta = Meta {
        mode: None,
        ..meta.clone()
    };
    apply_on(
        On::At(dir.as_fd(), &cname),
        &path,
        &meta,
        Current::default(),
        Policy::STRICT,
    )
}

fn timestamps(meta: &Meta) -> Timestamps {
    let omit = Timespec {
        tv_sec: 0,
        tv_nsec: rustix::fs::UTIME_OMIT,
    };
    Timestamps {
        last_access: meta.atime.unwrap_or(omit),
        last_modification: meta.mtime.unwrap_or(omit),
    }
}

fn xattr_error(path: &Path, x: &Xattr, e: Errno) -> Error {
    let e = std::io::Error::from(e);
    Error::Io(IoError::new(
        "set extended attribute on",
        path,
        std::io::Error::new(e.kind(), format!("{}: {e}", x.name.to_string_lossy())),
    ))
}

/// `fsetxattr`/`lsetxattr` of one attribute on `on`.
pub fn set_xattr_on(on: On<'_>, x: &Xattr) -> rustix::io::Result<()> {
    match on {
        On::Fd(fd) => rustix::fs::fsetxattr(fd, &x.name, &x.value, XattrFlags::empty()),
        On::At(dir, name) => rustix::fs::lsetxattr(
            On::proc_path(dir, name),
            &x.name,
            &x.value,
            XattrFlags::empty(),
        ),
    }
}

/// Set one extended attribute on `file`.
pub fn set_xattr(file: Handle<'_>, x: &Xattr) -> Result<()> {
    set_xattr_on(On::Fd(file.as_fd()), x).map_err(|e| xattr_error(file.path(), x, e))
}

/// All extended attributes of `file`, names and values.
pub fn list_xattrs(file: Handle<'_>) -> Result<Vec<Xattr>> {
    XattrBuf::new()
        .read(On::Fd(file.as_fd()), Which::All)
        .map_err(|e| io("read extended attributes of", file.path(), e))
}

/// Copy every extended attribute of `src` onto `dst`; returns how many.
pub fn copy_xattrs(src: Handle<'_>, dst: Handle<'_>) -> Result<usize> {
    let all = list_xattrs(src)?;
    for x in &all {
        set_xattr(dst, x)?;
    }
    Ok(all.len())
}

/// Which attributes [`XattrBuf::read`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// Every name the kernel lists.
    All,
    /// What a copy should carry over: not the names that are another view
    /// of metadata copied anyway, or that only the kernel may write. XFS
    /// lists its on-disk ACLs as `trusted.SGI_ACL_*` next to
    /// `system.posix_acl_*` (copied as such), and `security.evm` is
    /// computed by the kernel.
    Copyable,
}

fn copyable(name: &[u8]) -> bool {
    !(name.starts_with(b"trusted.SGI_") || name.starts_with(b"xfsroot.") || name == b"security.evm")
}

/// Reusable buffers for reading extended attributes: one `listxattr`, then
/// one `getxattr` per name (none for the common entry without any).
///
/// The kernel allocates as many bytes as the buffer it is given, before
/// it knows the answer (and zeroes them for a value): a 64 KiB buffer costs
/// a page allocation per call, even for the entry without attributes. So
/// each call first passes a small window of the buffer (256 bytes);
/// only an `ERANGE` asks the exact size and calls again.
#[derive(Debug)]
pub struct XattrBuf {
    names: Vec<u8>,
    value: Vec<u8>,
}

/// The buffer size a `listxattr` or `getxattr` is tried with first: enough
/// for the usual SELinux label, ACL or capability.
const FIRST_TRY: usize = 256;

/// How many times a name list or value that keeps growing between the
/// size query and the read is asked again before `ERANGE` is returned.
const SIZE_RETRIES: usize = 8;

impl Default for XattrBuf {
    fn default() -> Self {
        Self::new()
    }
}

/// `get(Some(buf))` with `FIRST_TRY` bytes, then, on `ERANGE`, with the
/// size `get(None)` (the size query) reports, which the kernel bounds to
/// 64 KiB. `buf` grows as needed and is kept.
fn read_sized(
    buf: &mut Vec<u8>,
    mut get: impl FnMut(Option<&mut [u8]>) -> rustix::io::Result<usize>,
) -> rustix::io::Result<usize> {
    let mut want = FIRST_TRY;
    for _ in 0..SIZE_RETRIES {
        if buf.len() < want {
            buf.resize(want, 0);
        }
        match get(Some(&mut buf[..want])) {
            Err(Errno::RANGE) => want = want.max(get(None)?),
            r => return r,
        }
    }
    Err(Errno::RANGE)
}

impl XattrBuf {
    /// Empty buffers, grown to the largest name list and value met.
    pub fn new() -> Self {
        XattrBuf {
            names: Vec::new(),
            value: Vec::new(),
        }
    }

    /// The extended attributes of `on` that `which` selects.
    pub fn read(&mut self, on: On<'_>, which: Which) -> rustix::io::Result<Vec<Xattr>> {
        let n = read_sized(&mut self.names, |buf| match (on, buf) {
            (On::Fd(fd), Some(buf)) => rustix::fs::flistxattr(fd, buf),
            (On::Fd(fd), None) => rustix::fs::flistxattr_query(fd),
            (On::At(dir, name), Some(buf)) => rustix::fs::llistxattr(On::proc_path(dir, name), buf),
            (On::At(dir, name), None) => rustix::fs::llistxattr_query(On::proc_path(dir, name)),
        })?;
        let mut out = Vec::new();
        if n == 0 {
            return Ok(out);
        }
        let names = self.names[..n].to_vec();
        for name in names
            .split(|&b| b == 0)
            .filter(|n| !n.is_empty() && (which == Which::All || copyable(n)))
        {
            let name = OsStr::from_bytes(name);
            let r = read_sized(&mut self.value, |buf| match (on, buf) {
                (On::Fd(fd), Some(buf)) => rustix::fs::fgetxattr(fd, name, buf),
                (On::Fd(fd), None) => rustix::fs::fgetxattr_query(fd, name),
                (On::At(dir, file), Some(buf)) => {
                    rustix::fs::lgetxattr(On::proc_path(dir, file), name, buf)
                }
                (On::At(dir, file), None) => {
                    rustix::fs::lgetxattr_query(On::proc_path(dir, file), name)
                }
            });
            match r {
                Ok(len) => out.push(Xattr {
                    name: name.to_os_string(),
                    value: self.value[..len].to_vec(),
                }),
                Err(Errno::NODATA) => continue, // removed in between
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }
}

/// Whether a default ACL may apply to entries created in the directory
/// `dir`: then it, not the umask, decides their creation mode, which cannot
/// be trusted to be final. Any answer but "no such attribute" or "no
/// extended attributes here" counts as yes.
pub fn may_have_default_acl(dir: impl AsFd) -> bool {
    !matches!(
        rustix::fs::fgetxattr(dir, "system.posix_acl_default", &mut [0u8; 0][..]),
        Err(Errno::NODATA | Errno::OPNOTSUPP)
    )
}

/// A helper for callers that name xattrs with `&str`.
pub fn xattr(name: &str, value: impl Into<Vec<u8>>) -> Xattr {
    Xattr {
        name: OsStr::from_bytes(name.as_bytes()).to_os_string(),
        value: value.into(),
    }
}
