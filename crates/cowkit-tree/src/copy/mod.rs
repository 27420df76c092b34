//! The parallel tree copy: see [`copy()`].
//!
//! - `dir`: destination directories (created with their final
//!   permissions, listed, given their metadata once their children are
//!   done), walked with the crate's shared walk (module `walk`);
//! - `entry`: what is not a directory (regular files through the
//!   `Copier`, symlinks, special files), and metadata;
//! - `links`: hardlink groups, shared between the sources of one command.

mod dir;
mod entry;
mod links;
mod listed;

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cowkit_fs::dir::{self as fsdir, dev_ino, process_umask, statx_at};
use cowkit_fs::meta::{self, XattrBuf};
use cowkit_fs::{Chain, Copier, IoError, Tally};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};
use rustix::io::Errno;
use serde::Serialize;

use crate::entry_error::{self, entry_error, entry_error_fs};
use crate::queue::{Lanes, Tasks, MAX_LANES};
use crate::walk::{self, Budget};
use crate::{EntryError, Error, Progress};

use dir::{Child, DirNode, NewEntries};
pub use links::Links;
use listed::{Entry, EntryPaths, Src};

/// Which parts of the metadata are copied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preserve {
    /// Owner and group.
    pub owner: bool,
    /// The full mode, setuid/setgid/sticky included; otherwise the
    /// permission bits less the umask, as `cp` without `-p`.
    pub mode: bool,
    /// Access and modification times, to the nanosecond.
    pub times: bool,
    /// Every extended attribute (POSIX ACLs and file capabilities too).
    pub xattrs: bool,
    /// Hardlink groups inside the copied tree.
    pub links: bool,
}

impl Preserve {
    /// Everything (`cp --preserve=all`).
    pub const ALL: Preserve = Preserve {
        owner: true,
        mode: true,
        times: true,
        xattrs: true,
        links: true,
    };
    /// Nothing but the permission bits less the umask (`cp -r`).
    pub const NONE: Preserve = Preserve {
        owner: false,
        mode: false,
        times: false,
        xattrs: false,
        links: false,
    };
}

/// How [`copy()`] works.
#[derive(Clone, Debug)]
pub struct CopyOptions {
    /// Methods allowed for file data.
    pub chain: Chain,
    /// Worker threads.
    pub threads: usize,
    /// Metadata to keep.
    pub preserve: Preserve,
    /// Copy directories (without it, a directory source is refused).
    pub recursive: bool,
    /// Follow the source if it is itself a symlink (`cp` without `-R`).
    pub follow_top: bool,
    /// The umask applied when the mode is not preserved; `None`: the
    /// process's.
    pub umask: Option<u32>,
    /// Files up to this size, without holes, are written instead of
    /// cloned (0: always clone). Not used with `Chain::only(Clone)`.
    pub small_file_max: u64,
}

impl CopyOptions {
    /// `cp -a`: recursive, everything preserved, symlinks not followed.
    pub fn archive() -> Self {
        CopyOptions {
            chain: Chain::AUTO,
            threads: crate::default_threads(),
            preserve: Preserve::ALL,
            recursive: true,
            follow_top: false,
            umask: None,
            small_file_max: 0,
        }
    }
}

/// What a copy did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Regular files created.
    pub files: u64,
    /// Directories copied.
    pub directories: u64,
    /// Symbolic links.
    pub symlinks: u64,
    /// Extra names of hardlink groups, linked rather than copied.
    pub hardlinks: u64,
    /// Named pipes.
    pub fifos: u64,
    /// Unix sockets.
    pub sockets: u64,
    /// Character and block devices.
    pub devices: u64,
    /// File data moved: bytes and regular files per method, fallbacks
    /// taken (the shape `cowkit install` reports too).
    #[serde(flatten)]
    pub tally: Tally,
    /// Small files written instead of cloned.
    pub small_written: u64,
    /// Extended attributes the destination filesystem does not support.
    pub xattrs_unsupported: u64,
    /// Entries that failed; the walk went on.
    pub errors: Vec<EntryError>,
    /// Why the walk stopped early (destination full or read-only).
    pub aborted: Option<String>,
}

impl Summary {
    /// Add the counts of `o` to `self`.
    pub fn add(&mut self, o: Summary) {
        self.files += o.files;
        self.directories += o.directories;
        self.symlinks += o.symlinks;
        self.hardlinks += o.hardlinks;
        self.fifos += o.fifos;
        self.sockets += o.sockets;
        self.devices += o.devices;
        self.tally.add(&o.tally);
        self.small_written += o.small_written;
        self.xattrs_unsupported += o.xattrs_unsupported;
        self.errors.extend(o.errors);
        if self.aborted.is_none() {
            self.aborted = o.aborted;
        }
    }

    /// Entries created, of every kind.
    pub fn entries(&self) -> u64 {
        self.files
            + self.directories
            + self.symlinks
            + self.hardlinks
            + self.fifos
            + self.sockets
            + self.devices
    }

    /// Whether everything was copied.
    pub fn ok(&self) -> bool {
        self.errors.is_empty() && self.aborted.is_none()
    }
}

/// A failure on one entry.
struct Fail {
    err: EntryError,
    errno: Option<Errno>,
}

fn fail(path: &Path, op: &'static str, e: Errno) -> Fail {
    Fail {
        err: entry_error(path, op, e),
        errno: Some(e),
    }
}

fn fail_io(e: &IoError) -> Fail {
    Fail {
        err: entry_error::entry_error_io(e),
        errno: e.errno(),
    }
}

fn fail_fs(path: &Path, e: &cowkit_fs::Error) -> Fail {
    Fail {
        err: entry_error_fs(path, e),
        errno: cowkit_fs::error::errno_of(e),
    }
}

/// The queue's work.
enum Task {
    /// List a directory of the copy, made already (the top, or a
    /// subdirectory).
    List { node: Arc<DirNode>, src: OwnedFd },
    /// Copy a subdirectory.
    Open(Child),
}

/// What each worker keeps between tasks.
struct Worker {
    copier: Copier,
    xb: XattrBuf,
    /// Small files are read into it.
    buf: Vec<u8>,
    dirbuf: Vec<std::mem::MaybeUninit<u8>>,
    paths: EntryPaths,
    sum: Summary,
}

struct Ctx<'a> {
    o: &'a CopyOptions,
    progress: &'a dyn Progress,
    /// The work, in one lane per XFS allocation group of the destination
    /// directory it fills (one lane elsewhere): the files of a directory
    /// get inodes in its group, whose header every such allocation locks,
    /// so workers in different lanes do not wait for each other there.
    queue: Lanes<Task>,
    /// Where a destination directory's allocation group is in its inode
    /// number (`ino >> shift`), on XFS.
    shift: Option<u32>,
    links: &'a Links,
    /// The directory that hardlink group paths are relative to: the copy
    /// itself for a directory, its parent for a single file.
    top: Option<Arc<OwnedFd>>,
    src_root: PathBuf,
    dst_root: PathBuf,
    euid: u32,
    egid: u32,
    /// The process umask: what the kernel takes off creation modes.
    pumask: Option<u32>,
    /// The umask applied when modes are not preserved.
    umask: u32,
    aborted: Mutex<Option<String>>,
    /// Destination directory descriptors held by nodes: past the budget,
    /// subtrees are copied depth first with few descriptors
    /// ([`walk::descend`]).
    budget: Budget,
}

/// Copy `src` to `dst` (which becomes the copy; GNU `cp`'s "into an
/// existing directory" is for the caller to decide). A directory is copied
/// recursively by `o.threads` workers; an existing destination directory
/// is merged into, existing files are replaced.
///
/// Fails before copying anything when `src` cannot be read, `dst`'s parent
/// cannot be opened, or `dst` is `src` or inside it. Failures on single
/// entries are in [`Summary::errors`].
pub fn copy(
    src: &Path,
    dst: &Path,
    o: &CopyOptions,
    progress: &dyn Progress,
) -> Result<Summary, Error> {
    copy_linked(src, dst, o, &Links::new(), progress)
}

/// [`copy()`], with hardlink groups looked up in (and added to) `links`:
/// give several calls the same map to keep hardlinks between their
/// sources.
pub fn copy_linked(
    src: &Path,
    dst: &Path,
    o: &CopyOptions,
    links: &Links,
    progress: &dyn Progress,
) -> Result<Summary, Error> {
    let top = Top::check(src, dst, o)?;
    let mut ctx = Ctx::new(o, progress, links, src, dst);
    let holder = ctx.holder(top.dpfd, &top.dparent)?;
    let mut w = ctx.worker();
    ctx.start(&mut w, &holder, top.st, &top.dname)?;
    let workers = ctx
        .queue
        .run(o.threads, || ctx.worker(), |w, t| ctx.task(w, t));
    let mut sum = w.sum;
    for w in workers {
        sum.add(w.sum);
    }
    sum.aborted = ctx.aborted.into_inner().unwrap_or_else(|e| e.into_inner());
    sum.errors.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(sum)
}

/// The error of a failed system call on a top-level path.
fn io(op: &'static str, path: &Path) -> impl FnOnce(Errno) -> Error {
    let path = path.to_path_buf();
    move |e| Error::Io(IoError::new(op, path, e))
}

/// The source and where its copy goes, checked before anything is
/// written.
struct Top {
    st: Src,
    dparent: PathBuf,
    dpfd: OwnedFd,
    dname: CString,
}

impl Top {
    /// Refuse a copy onto itself, into itself, or of a directory without
    /// recursion.
    fn check(src: &Path, dst: &Path, o: &CopyOptions) -> Result<Top, Error> {
        let flags = if o.follow_top {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        let st = Src::from(
            rustix::fs::statx(CWD, src, flags, rustix::fs::StatxFlags::BASIC_STATS)
                .map_err(io("stat", src))?,
        );
        let (dparent, dname) = split(dst).ok_or_else(|| Error::Refused {
            op: "copy to",
            path: dst.to_path_buf(),
        })?;
        let dpfd = rustix::fs::openat(
            CWD,
            dparent,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(io("open directory", dparent))?;
        let is_dir = st.kind() == FileType::Directory;
        let (src, dst) = (src.to_path_buf(), dst.to_path_buf());
        if let Ok(d) = statx_at(dpfd.as_fd(), &dname) {
            if dev_ino(&d) == (st.dev, st.ino) {
                return Err(if is_dir {
                    Error::IntoItself { src, dst }
                } else {
                    Error::SameFile { src, dst }
                });
            }
        }
        if is_dir {
            if !o.recursive {
                return Err(Error::Refused {
                    op: "copy a directory without recursion:",
                    path: src,
                });
            }
            let below = inside(dpfd.as_fd(), (st.dev, st.ino))
                .map_err(io("look up the parents of", &dst))?;
            if below {
                return Err(Error::IntoItself { src, dst });
            }
        }
        Ok(Top {
            st,
            dparent: dparent.to_path_buf(),
            dpfd,
            dname,
        })
    }
}

/// `path`'s parent directory (`.` when it has none) and last component.
fn split(path: &Path) -> Option<(&Path, CString)> {
    let name = path.file_name()?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    Some((parent, CString::new(name.as_bytes()).ok()?))
}

/// Whether the directory `dir` is the directory `id` or lies below it:
/// walks `..` up to the root, comparing device and inode. `..` is opened
/// with `O_PATH`, which needs search permission only; a directory the
/// user cannot search ends the walk: a source above it could not be
/// copied down to `dir` anyway.
fn inside(dir: BorrowedFd<'_>, id: walk::Id) -> rustix::io::Result<bool> {
    let mut cur = rustix::io::fcntl_dupfd_cloexec(dir, 0)?;
    let mut here = walk::identity(cur.as_fd())?;
    loop {
        if here == id {
            return Ok(true);
        }
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let up = match rustix::fs::openat(&cur, c"..", flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ACCESS) => return Ok(false),
            Err(e) => return Err(e),
        };
        let there = walk::identity(up.as_fd())?;
        if there == here {
            return Ok(false);
        }
        (cur, here) = (up, there);
    }
}

impl<'a> Ctx<'a> {
    fn new(
        o: &'a CopyOptions,
        progress: &'a dyn Progress,
        links: &'a Links,
        src: &Path,
        dst: &Path,
    ) -> Ctx<'a> {
        let pumask = process_umask();
        Ctx {
            o,
            progress,
            queue: Lanes::new(MAX_LANES),
            shift: None,
            links,
            top: None,
            src_root: src.to_path_buf(),
            dst_root: dst.to_path_buf(),
            euid: rustix::process::geteuid().as_raw(),
            egid: rustix::process::getegid().as_raw(),
            pumask,
            umask: o.umask.or(pumask).unwrap_or(0o022),
            aborted: Mutex::new(None),
            budget: Budget::new(32 + 8 * o.threads),
        }
    }

    /// The node of the directory the copy goes into (`dpath`).
    fn holder(&self, dpfd: OwnedFd, dpath: &Path) -> Result<Arc<DirNode>, Error> {
        let dpst = rustix::fs::fstat(&dpfd).map_err(io("stat", dpath))?;
        let setgid = dpst.st_mode & 0o2000 != 0;
        let new = NewEntries {
            gid: if setgid { dpst.st_gid } else { self.egid },
            setgid,
            exact_modes: !meta::may_have_default_acl(&dpfd),
        };
        Ok(Arc::new(DirNode::open(dpfd, PathBuf::new(), new)))
    }

    /// Hardlink groups are found again relative to a duplicate of `dir`.
    fn set_top(&mut self, dir: &OwnedFd, path: &Path) -> Result<(), Error> {
        let top = rustix::io::fcntl_dupfd_cloexec(dir, 0).map_err(io("open directory", path))?;
        self.top = Some(Arc::new(top));
        Ok(())
    }

    /// Start the copy: the top of a directory copy is made and its
    /// listing queued; a source that is not a directory is copied here.
    fn start(
        &mut self,
        w: &mut Worker,
        holder: &Arc<DirNode>,
        st: Src,
        dname: &CStr,
    ) -> Result<(), Error> {
        if st.kind() == FileType::Directory {
            let src = fsdir::open_dir(CWD, &self.src_root, &self.src_root)?;
            let made = self.make_dir(w, holder, dir::SrcDir::new(src, dname, st, PathBuf::new()));
            match made {
                Ok((node, src)) => {
                    self.set_top(&node.dst, &self.dst_root.clone())?;
                    self.shift = fsdir::inode_group_shift(&node.dst);
                    let node = Arc::new(node.below(holder.clone(), self.budget.hold()));
                    self.queue.push(self.lane(&node), Task::List { node, src });
                }
                Err(f) => self.fail(w, f),
            }
        } else {
            let src = self.src_root.clone();
            let src_path = if self.o.follow_top {
                std::fs::canonicalize(&src).map_err(|e| IoError::new("resolve", &src, e))?
            } else {
                src.clone()
            };
            let (sparent, sname) = split(&src_path).ok_or_else(|| Error::Refused {
                op: "copy",
                path: src.clone(),
            })?;
            let spfd = fsdir::open_dir(CWD, sparent, sparent)?;
            let dparent =
                split(&self.dst_root).map_or(PathBuf::from("."), |(p, _)| p.to_path_buf());
            self.set_top(&holder.dst, &dparent)?;
            let dst_path = self.dst_root.clone();
            let e = Entry {
                src_dir: spfd.as_fd(),
                name: &sname,
                dst_name: dname,
                st,
                opened: None,
                src_path: &src_path,
                dst_path: &dst_path,
            };
            self.entry(w, holder, e);
        }
        Ok(())
    }

    fn worker(&self) -> Worker {
        Worker {
            // A file the pair's method refuses alone (a NOCOW file on
            // Btrfs, another mount inside the tree) goes one method down.
            copier: Copier::new(self.o.chain).with_retry_down(true),
            xb: XattrBuf::new(),
            buf: Vec::new(),
            dirbuf: Vec::new(),
            paths: EntryPaths::default(),
            sum: Summary::default(),
        }
    }

    fn fail(&self, w: &mut Worker, f: Fail) {
        if entry_error::is_fatal(f.errno) {
            let mut a = self.aborted.lock().unwrap_or_else(|e| e.into_inner());
            if a.is_none() {
                *a = Some(f.err.to_string());
            }
            self.queue.stop();
        }
        self.progress.on_error(&f.err);
        w.sum.errors.push(f.err);
    }

    /// The lane of the work that fills the destination directory `node`.
    fn lane(&self, node: &DirNode) -> usize {
        self.shift.map_or(0, |s| {
            rustix::fs::fstat(&node.dst).map_or(0, |st| (st.st_ino >> s) as usize)
        })
    }

    fn task(&self, w: &mut Worker, t: Task) {
        match t {
            Task::List { node, src } => self.list(w, node, src),
            Task::Open(child) => self.open_child(w, child),
        }
    }
}
