//! A source entry as the walk met it: what the copy needs of its `statx`
//! ([`Src`], read by [`stat_entry`]), the entry with its names and paths
//! ([`Entry`], [`EntryPaths`]). Below `dir`, which lists entries, and
//! `entry`, which copies them.

use std::ffi::{CStr, OsStr};
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use cowkit_fs::dir::{dev_ino, statx_at};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Timespec};
use rustix::io::Errno;

/// What the copy needs of a source entry's `statx`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Src {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub nlink: u32,
    pub size: u64,
    pub blocks: u64,
    pub dev: u64,
    pub ino: u64,
    pub rdev: u64,
    pub atime: Timespec,
    pub mtime: Timespec,
}

impl From<rustix::fs::Statx> for Src {
    fn from(s: rustix::fs::Statx) -> Self {
        let (dev, ino) = dev_ino(&s);
        let ts = |t: rustix::fs::StatxTimestamp| Timespec {
            tv_sec: t.tv_sec,
            tv_nsec: t.tv_nsec as _,
        };
        Src {
            mode: u32::from(s.stx_mode),
            uid: s.stx_uid,
            gid: s.stx_gid,
            nlink: s.stx_nlink,
            size: s.stx_size,
            blocks: s.stx_blocks,
            dev,
            ino,
            rdev: rustix::fs::makedev(s.stx_rdev_major, s.stx_rdev_minor),
            atime: ts(s.stx_atime),
            mtime: ts(s.stx_mtime),
        }
    }
}

impl Src {
    pub fn kind(&self) -> FileType {
        FileType::from_raw_mode(self.mode)
    }
}

/// Open a source regular file for reading: `O_NONBLOCK`, so that an
/// entry swapped for a fifo since it was listed or stat'd cannot block the
/// copy (the caller checks what it opened); `O_NOATIME` where we may.
/// `O_NONBLOCK` is left set: it has no effect on regular files (open(2)).
pub(super) fn open_src(dir: BorrowedFd<'_>, name: &CStr) -> rustix::io::Result<OwnedFd> {
    let base = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    match rustix::fs::openat(dir, name, base | OFlags::NOATIME, Mode::empty()) {
        Err(Errno::PERM) => rustix::fs::openat(dir, name, base, Mode::empty()),
        r => r,
    }
}

/// The `statx` of the entry `name` of `dir`. An entry listed as a regular
/// file is opened first and stat'd through its descriptor (as many system
/// calls as a `statx` by name, and no window in which it can be swapped
/// for a fifo between the stat and the open); its descriptor comes back
/// with it when it is still a regular file. Anything else, or an open
/// that fails, is stat'd by name.
pub(super) fn stat_entry(
    dir: BorrowedFd<'_>,
    name: &CStr,
    listed: FileType,
) -> rustix::io::Result<(Src, Option<OwnedFd>)> {
    if listed == FileType::RegularFile {
        if let Ok(fd) = open_src(dir, name) {
            let st = Src::from(rustix::fs::statx(
                &fd,
                c"",
                AtFlags::EMPTY_PATH,
                rustix::fs::StatxFlags::BASIC_STATS,
            )?);
            if st.kind() == FileType::RegularFile {
                return Ok((st, Some(fd)));
            }
        }
    }
    Ok((Src::from(statx_at(dir, name)?), None))
}

/// One entry of a source directory, as the walk met it, and where its
/// copy goes.
pub(super) struct Entry<'a> {
    /// The source directory holding it, and its name there.
    pub src_dir: BorrowedFd<'a>,
    pub name: &'a CStr,
    /// Its name in the destination directory (the same but for a single
    /// file copied under another name).
    pub dst_name: &'a CStr,
    pub st: Src,
    /// The source, opened already by [`stat_entry`].
    pub opened: Option<OwnedFd>,
    /// Where the entry and its copy are, in errors.
    pub src_path: &'a Path,
    pub dst_path: &'a Path,
}

/// The paths of the entry being copied, written into buffers a worker
/// keeps, so that naming an entry for its errors allocates nothing.
#[derive(Default)]
pub(super) struct EntryPaths {
    pub src: PathBuf,
    pub dst: PathBuf,
}

impl EntryPaths {
    /// Point both at `name` in the directory `rel` below the two roots.
    pub fn set(&mut self, roots: (&Path, &Path), rel: &Path, name: &OsStr) {
        for (buf, root) in [(&mut self.src, roots.0), (&mut self.dst, roots.1)] {
            buf.clear();
            buf.push(root);
            if !rel.as_os_str().is_empty() {
                buf.push(rel);
            }
            buf.push(name);
        }
    }
}
