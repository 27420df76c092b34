//! Metadata applied in the order the kernel requires, and extended
//! attributes.
//!
//! Order: owner first (`fchown` clears setuid/setgid and drops
//! `security.capability`), then extended attributes, then mode, then times
//! last (every earlier change touches ctime, and writing data touches
//! mtime). Calls that would change nothing are skipped when the current
//! state is known.

use std::ffi::{CString, OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use rustix::fs::{Gid, Mode, Stat, Timespec, Timestamps, Uid, XattrFlags};
use rustix::io::Errno;

use crate::copy::Handle;
use crate::error::{io, Error, Result};

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

/// What [`apply`] did, for callers that count syscalls saved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// `fchown` was called.
    pub chown: bool,
    /// Extended attributes set.
    pub xattrs: usize,
    /// `fchmod` was called.
    pub chmod: bool,
    /// `futimens` was called.
    pub times: bool,
}

/// Apply `meta` to the open file `file`, in the order owner → xattrs → mode
/// → times. `current` is the file's state if the caller already has it; it
/// lets calls that change nothing be skipped.
pub fn apply(file: Handle<'_>, meta: &Meta, current: Option<&Stat>) -> Result<Applied> {
    let mut done = Applied::default();
    let owner_differs = match current {
        Some(st) => {
            meta.uid.is_some_and(|u| u != st.st_uid) || meta.gid.is_some_and(|g| g != st.st_gid)
        }
        None => meta.uid.is_some() || meta.gid.is_some(),
    };
    // Changing the owner clears setuid/setgid, so a skipped chown only
    // allows a skipped chmod when the mode also matches.
    if owner_differs {
        rustix::fs::fchown(
            file,
            meta.uid.map(Uid::from_raw),
            meta.gid.map(Gid::from_raw),
        )
        .map_err(|e| io("set owner of", file.path(), e))?;
        done.chown = true;
    }
    for x in &meta.xattrs {
        set_xattr(file, x)?;
        done.xattrs += 1;
    }
    if let Some(mode) = meta.mode {
        let same = !done.chown && current.is_some_and(|st| st.st_mode & 0o7777 == mode & 0o7777);
        if !same {
            rustix::fs::fchmod(file, Mode::from_raw_mode(mode & 0o7777))
                .map_err(|e| io("set mode of", file.path(), e))?;
            done.chmod = true;
        }
    }
    if meta.atime.is_some() || meta.mtime.is_some() {
        rustix::fs::futimens(file, &timestamps(meta))
            .map_err(|e| io("set times of", file.path(), e))?;
        done.times = true;
    }
    Ok(done)
}

/// Apply `meta` to the symlink `name` in the directory `dir` without
/// following it: owner, then extended attributes, then times (a symlink
/// has no mode of its own on Linux, so `meta.mode` is ignored). `dir_path`
/// names the directory in errors.
pub fn apply_symlink_at<D: std::os::fd::AsFd>(
    dir: D,
    dir_path: &std::path::Path,
    name: &OsStr,
    meta: &Meta,
) -> Result<Applied> {
    use rustix::fs::AtFlags;
    let path = dir_path.join(name);
    let mut done = Applied::default();
    if meta.uid.is_some() || meta.gid.is_some() {
        rustix::fs::chownat(
            &dir,
            name,
            meta.uid.map(Uid::from_raw),
            meta.gid.map(Gid::from_raw),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .map_err(|e| io("set owner of", &path, e))?;
        done.chown = true;
    }
    if !meta.xattrs.is_empty() {
        // l*xattr take a path: reach the link through the directory fd so
        // that no component is resolved again from the working directory.
        let fd = std::os::fd::AsRawFd::as_raw_fd(&dir.as_fd());
        let mut via = std::path::PathBuf::from(format!("/proc/self/fd/{fd}"));
        via.push(name);
        for x in &meta.xattrs {
            rustix::fs::lsetxattr(&via, x.name.as_os_str(), &x.value, XattrFlags::empty())
                .map_err(|e| io("set extended attribute on", &path, e))?;
            done.xattrs += 1;
        }
    }
    if meta.atime.is_some() || meta.mtime.is_some() {
        rustix::fs::utimensat(&dir, name, &timestamps(meta), AtFlags::SYMLINK_NOFOLLOW)
            .map_err(|e| io("set times of", &path, e))?;
        done.times = true;
    }
    Ok(done)
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

/// Set one extended attribute on `file`.
pub fn set_xattr(file: Handle<'_>, x: &Xattr) -> Result<()> {
    rustix::fs::fsetxattr(file, x.name.as_os_str(), &x.value, XattrFlags::empty()).map_err(|e| {
        Error::Io {
            op: "set extended attribute on",
            path: file.path().to_path_buf(),
            source: std::io::Error::new(
                std::io::Error::from(e).kind(),
                format!("{}: {}", x.name.to_string_lossy(), std::io::Error::from(e)),
            ),
        }
    })
}

/// All extended attributes of `file`, names and values.
pub fn list_xattrs(file: Handle<'_>) -> Result<Vec<Xattr>> {
    let names = read_sized(
        |buf| rustix::fs::flistxattr(file, buf),
        || rustix::fs::flistxattr_query(file),
    )
    .map_err(|e| io("list extended attributes of", file.path(), e))?;
    let mut out = Vec::new();
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let cname = CString::new(name).expect("xattr names from the kernel have no NUL");
        let value = match read_sized(
            |buf| rustix::fs::fgetxattr(file, cname.as_c_str(), buf),
            || rustix::fs::fgetxattr_query(file, cname.as_c_str()),
        ) {
            Ok(v) => v,
            // Removed between list and get.
            Err(Errno::NODATA) => continue,
            Err(e) => return Err(io("read extended attribute of", file.path(), e)),
        };
        out.push(Xattr {
            name: OsString::from_vec(name.to_vec()),
            value,
        });
    }
    Ok(out)
}

/// Copy every extended attribute of `src` onto `dst`; returns how many.
pub fn copy_xattrs(src: Handle<'_>, dst: Handle<'_>) -> Result<usize> {
    let all = list_xattrs(src)?;
    for x in &all {
        set_xattr(dst, x)?;
    }
    Ok(all.len())
}

/// Read a variable-length kernel answer: ask for the size, read, and retry
/// if it grew in between (`ERANGE`).
fn read_sized(
    mut read: impl FnMut(&mut [u8]) -> rustix::io::Result<usize>,
    mut size: impl FnMut() -> rustix::io::Result<usize>,
) -> rustix::io::Result<Vec<u8>> {
    loop {
        let n = size()?;
        let mut buf = vec![0u8; n];
        match read(&mut buf) {
            Ok(got) => {
                buf.truncate(got);
                return Ok(buf);
            }
            Err(Errno::RANGE) => continue,
            Err(e) => return Err(e),
        }
    }
}

/// A helper for callers that name xattrs with `&str`.
pub fn xattr(name: &str, value: impl Into<Vec<u8>>) -> Xattr {
    Xattr {
        name: OsStr::from_bytes(name.as_bytes()).to_os_string(),
        value: value.into(),
    }
}
