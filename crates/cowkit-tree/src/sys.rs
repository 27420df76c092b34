//! Small helpers over rustix: `statx` without following, extended
//! attributes read with one call each into reused buffers, and errors.

use std::ffi::{CStr, OsStr};
use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use cowkit_fs::meta::Xattr;
use rustix::fs::{AtFlags, Statx, StatxFlags, XattrFlags};
use rustix::io::Errno;

use crate::EntryError;

/// The largest value an extended attribute can have on Linux.
const XATTR_VALUE_MAX: usize = 64 * 1024;

/// `statx(dir, name, AT_SYMLINK_NOFOLLOW)` for the fields a copy needs.
pub fn statx_at(dir: BorrowedFd<'_>, name: &CStr) -> rustix::io::Result<Statx> {
    rustix::fs::statx(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::BASIC_STATS,
    )
}

/// Device and inode of a `statx` answer.
pub fn dev_ino(st: &Statx) -> (u64, u64) {
    (
        rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
        st.stx_ino,
    )
}

/// Where extended attributes are read from or written to.
#[derive(Clone, Copy)]
pub enum On<'a> {
    /// An open file.
    Fd(BorrowedFd<'a>),
    /// `name` in the directory `dir`, not followed (symlinks, fifos,
    /// devices), reached as `/proc/self/fd/DIR/NAME` so that only the last
    /// component is looked up.
    At(BorrowedFd<'a>, &'a CStr),
}

impl On<'_> {
    fn proc_path(dir: BorrowedFd<'_>, name: &CStr) -> PathBuf {
        let mut p = PathBuf::from(format!("/proc/self/fd/{}", dir.as_raw_fd()));
        p.push(OsStr::from_bytes(name.to_bytes()));
        p
    }
}

/// Reusable buffers for reading extended attributes.
pub struct XattrBuf {
    names: Vec<u8>,
    value: Vec<u8>,
}

impl XattrBuf {
    pub fn new() -> Self {
        XattrBuf {
            names: vec![0; 16 * 1024],
            value: vec![0; XATTR_VALUE_MAX],
        }
    }

    /// All extended attributes of `on`: one `listxattr`, then one
    /// `getxattr` per name (none for the common file without any).
    pub fn read(&mut self, on: On<'_>) -> rustix::io::Result<Vec<Xattr>> {
        let n = loop {
            let r = match on {
                On::Fd(fd) => rustix::fs::flistxattr(fd, &mut self.names[..]),
                On::At(dir, name) => {
                    rustix::fs::llistxattr(On::proc_path(dir, name), &mut self.names[..])
                }
            };
            match r {
                Ok(n) => break n,
                Err(Errno::RANGE) => {
                    let len = self.names.len() * 4;
                    self.names.resize(len, 0);
                }
                Err(e) => return Err(e),
            }
        };
        let mut out = Vec::new();
        if n == 0 {
            return Ok(out);
        }
        let names = self.names[..n].to_vec();
        for name in names
            .split(|&b| b == 0)
            .filter(|n| !n.is_empty() && !skipped(n))
        {
            let name = OsStr::from_bytes(name);
            let r = match on {
                On::Fd(fd) => rustix::fs::fgetxattr(fd, name, &mut self.value[..]),
                On::At(dir, file) => {
                    rustix::fs::lgetxattr(On::proc_path(dir, file), name, &mut self.value[..])
                }
            };
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

/// Names that are not attributes of the file but another view of its
/// metadata, or that only the kernel may write: XFS lists its on-disk ACLs
/// as `trusted.SGI_ACL_*` next to `system.posix_acl_*` (copied as such),
/// and `security.evm` is computed by the kernel.
fn skipped(name: &[u8]) -> bool {
    name.starts_with(b"trusted.SGI_") || name.starts_with(b"xfsroot.") || name == b"security.evm"
}

/// Set one extended attribute.
pub fn set_xattr(on: On<'_>, x: &Xattr) -> rustix::io::Result<()> {
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

/// The errno behind an error, if there is one.
pub fn errno_of(e: &(dyn std::error::Error + 'static)) -> Option<Errno> {
    let mut cur = Some(e);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if let Some(n) = io.raw_os_error() {
                return Some(Errno::from_raw_os_error(n));
            }
        }
        cur = e.source();
    }
    None
}

/// An [`EntryError`] from what was being done and the kernel's answer.
pub fn entry_error(path: &Path, op: &str, e: Errno) -> EntryError {
    EntryError {
        path: path.to_path_buf(),
        error: vec![
            format!("cannot {op} `{}`", path.display()),
            std::io::Error::from(e).to_string(),
        ],
        errno: Some(cowkit_fs::copy::errno_name(e)).filter(|n| *n != "errno"),
    }
}

/// An [`EntryError`] from a cowkit-fs error.
pub fn entry_error_fs(path: &Path, e: &cowkit_fs::Error) -> EntryError {
    let mut error = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cur {
        error.push(c.to_string());
        cur = c.source();
    }
    EntryError {
        path: path.to_path_buf(),
        error,
        errno: errno_of(e)
            .map(cowkit_fs::copy::errno_name)
            .filter(|n| *n != "errno"),
    }
}

/// Errors after which going on is pointless: the destination is full or
/// read-only.
pub fn is_fatal(e: Option<Errno>) -> bool {
    matches!(e, Some(Errno::NOSPC | Errno::DQUOT | Errno::ROFS))
}

/// The process umask, read from `/proc/self/status` (asking umask(2) would
/// change it for a moment under other threads); `None` if unknown.
pub fn process_umask() -> Option<u32> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
}
