//! The parallel tree copy: see [`copy()`].

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use cowkit_fs::dir::{self, dev_ino, process_umask, statx_at};
use cowkit_fs::meta::{self, Current, Meta, On, Policy, Which, Xattr, XattrBuf};
use cowkit_fs::{Chain, Copier, Handle, IoError, Method, Tally};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, Timespec, CWD};
use rustix::io::Errno;
use serde::Serialize;

use crate::queue::Queue;
use crate::sys::{self, entry_error, entry_error_fs};
use crate::{EntryError, Error, Progress};

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

/// Hardlink groups seen so far, by source device and inode: shared by
/// every [`copy_linked()`] call that is given the same map, so that names
/// of one group in several sources stay linked in the copies (as `cp -a`
/// does across its arguments).
#[derive(Default)]
pub struct Links {
    map: Mutex<HashMap<(u64, u64), Link>>,
    /// Signalled when a group's first member is done, or failed.
    changed: Condvar,
}

impl std::fmt::Debug for Links {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.lock().len();
        f.debug_struct("Links").field("groups", &n).finish()
    }
}

enum Link {
    /// The first member is being copied: other members wait, so that none
    /// is linked to a file whose data is not complete.
    Pending,
    /// Copied: further members are linked to `rel` below `top`.
    Done { top: Arc<OwnedFd>, rel: PathBuf },
}

impl Links {
    /// An empty map.
    pub fn new() -> Self {
        Links::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(u64, u64), Link>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Where the group `key` was copied to; `None`: the caller is now the
    /// group's first member and must call [`Links::done`].
    fn claim(&self, key: (u64, u64)) -> Option<(Arc<OwnedFd>, PathBuf)> {
        let mut map = self.lock();
        loop {
            match map.get(&key) {
                Some(Link::Done { top, rel }) => return Some((top.clone(), rel.clone())),
                Some(Link::Pending) => {
                    map = self.changed.wait(map).unwrap_or_else(|e| e.into_inner());
                }
                None => {
                    map.insert(key, Link::Pending);
                    return None;
                }
            }
        }
    }

    /// The first member of `key` is copied to `at` (or failed: `None`, and
    /// the next member to come along tries in its turn).
    fn done(&self, key: (u64, u64), at: Option<(Arc<OwnedFd>, PathBuf)>) {
        let mut map = self.lock();
        match at {
            Some((top, rel)) => map.insert(key, Link::Done { top, rel }),
            None => map.remove(&key),
        };
        drop(map);
        self.changed.notify_all();
    }
}

/// A hardlink group being copied by this worker: dropped without
/// [`Links::done`] (a panic), it marks the group failed.
struct Claim<'a> {
    links: &'a Links,
    key: (u64, u64),
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.links.done(self.key, None);
    }
}

/// What the copy needs of a source entry's `statx`.
#[derive(Clone, Copy, Debug)]
struct Src {
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    size: u64,
    blocks: u64,
    dev: u64,
    ino: u64,
    rdev: u64,
    atime: Timespec,
    mtime: Timespec,
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
    fn kind(&self) -> FileType {
        FileType::from_raw_mode(self.mode)
    }
}

/// Counts the destination directory descriptors nodes hold.
struct Held(Option<Arc<AtomicUsize>>);

impl Held {
    fn new(counter: &Arc<AtomicUsize>) -> Held {
        counter.fetch_add(1, Ordering::Relaxed);
        Held(Some(counter.clone()))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(c) = &self.0 {
            c.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// A destination directory being filled.
struct DirNode {
    dst: OwnedFd,
    _held: Held,
    parent: Option<Arc<DirNode>>,
    /// 1 while it is being listed, plus one per subdirectory not done.
    pending: AtomicUsize,
    /// Path relative to the top of the copy.
    rel: PathBuf,
    /// The group new entries get (the directory's if it is setgid).
    new_gid: u32,
    /// The directory is setgid: new subdirectories are too.
    setgid: bool,
    /// New entries get exactly the creation mode less the umask (no
    /// default ACL can apply).
    exact_modes: bool,
    /// Metadata to give the directory once its children are done.
    finish: Option<DirFinish>,
}

struct DirFinish {
    src: Src,
    xattrs: Vec<Xattr>,
    owner: (u32, u32),
    mode: u32,
}

enum Task {
    List {
        node: Arc<DirNode>,
        src: OwnedFd,
    },
    Open {
        parent: Arc<DirNode>,
        src_dir: Arc<OwnedFd>,
        name: CString,
        st: Src,
    },
}

struct Worker {
    copier: Copier,
    xb: XattrBuf,
    buf: Vec<u8>,
    dirbuf: Vec<MaybeUninit<u8>>,
    sum: Summary,
}

/// A failure on one entry.
struct Fail {
    err: EntryError,
    errno: Option<Errno>,
}

/// Open a source regular file for reading: `O_NONBLOCK`, so that an
/// entry swapped for a fifo since it was listed or stat'd cannot block the
/// copy (the caller checks what it opened); `O_NOATIME` where we may.
/// `O_NONBLOCK` is left set: it has no effect on regular files (open(2)).
fn open_src(dir: BorrowedFd<'_>, name: &CStr) -> rustix::io::Result<OwnedFd> {
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
fn stat_entry(
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

fn fail_changed(path: &Path) -> Fail {
    let e = IoError::new(
        "open",
        path,
        std::io::Error::other("it was replaced by something that is not the regular file stat'd"),
    );
    fail_io(&e)
}

fn fail(path: &Path, op: &'static str, e: Errno) -> Fail {
    Fail {
        err: entry_error(path, op, e),
        errno: Some(e),
    }
}

fn fail_io(e: &IoError) -> Fail {
    Fail {
        err: sys::entry_error_io(e),
        errno: e.errno(),
    }
}

fn fail_fs(path: &Path, e: &cowkit_fs::Error) -> Fail {
    Fail {
        err: entry_error_fs(path, e),
        errno: cowkit_fs::error::errno_of(e),
    }
}

/// Created but not filled yet.
enum Created {
    Regular { src: OwnedFd, dst: OwnedFd },
    Other,
}

struct Ctx<'a> {
    o: &'a CopyOptions,
    progress: &'a dyn Progress,
    queue: Queue<Task>,
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
    /// Destination directory descriptors held by nodes, and how many may
    /// be: past that, a subtree is copied depth-first holding a few
    /// descriptors ([`Ctx::copy_frugally`]), so any depth works within a
    /// low open-file limit.
    held: Arc<AtomicUsize>,
    budget: usize,
}

const DIRBUF: usize = 256 * 1024;

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
    let io = |op, path: &Path| {
        let path = path.to_path_buf();
        move |e: Errno| Error::Io(IoError::new(op, path, e))
    };
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
    if let Ok(d) = statx_at(dpfd.as_fd(), &dname) {
        if dev_ino(&d) == (st.dev, st.ino) {
            return Err(if is_dir {
                Error::IntoItself {
                    src: src.to_path_buf(),
                    dst: dst.to_path_buf(),
                }
            } else {
                Error::SameFile {
                    src: src.to_path_buf(),
                    dst: dst.to_path_buf(),
                }
            });
        }
    }
    if is_dir {
        if !o.recursive {
            return Err(Error::Refused {
                op: "copy a directory without recursion:",
                path: src.to_path_buf(),
            });
        }
        if inside(dpfd.as_fd(), (st.dev, st.ino)).map_err(io("look up the parents of", dst))? {
            return Err(Error::IntoItself {
                src: src.to_path_buf(),
                dst: dst.to_path_buf(),
            });
        }
    }
    let dpst = rustix::fs::fstat(&dpfd).map_err(io("stat", dparent))?;
    let euid = rustix::process::geteuid().as_raw();
    let egid = rustix::process::getegid().as_raw();
    let pumask = process_umask();
    let exact_modes = !meta::may_have_default_acl(&dpfd);
    let mut ctx = Ctx {
        o,
        progress,
        queue: Queue::new(),
        links,
        top: None,
        src_root: src.to_path_buf(),
        dst_root: dst.to_path_buf(),
        euid,
        egid,
        pumask,
        umask: o.umask.or(pumask).unwrap_or(0o022),
        aborted: Mutex::new(None),
        held: Arc::new(AtomicUsize::new(0)),
        budget: dir::dir_fd_budget(32 + 8 * o.threads),
    };
    let holder = Arc::new(DirNode {
        dst: dpfd,
        _held: Held(None),
        parent: None,
        pending: AtomicUsize::new(1),
        rel: PathBuf::new(),
        new_gid: if dpst.st_mode & 0o2000 != 0 {
            dpst.st_gid
        } else {
            egid
        },
        setgid: dpst.st_mode & 0o2000 != 0,
        exact_modes,
        finish: None,
    });
    let mut w = ctx.worker();
    if is_dir {
        let sfd = dir::open_dir(CWD, src, src)?;
        match ctx.make_dir(&mut w, &holder, sfd, &dname, st, PathBuf::new()) {
            Ok((node, sfd)) => {
                let top = rustix::io::fcntl_dupfd_cloexec(&node.dst, 0)
                    .map_err(io("open directory", dst))?;
                ctx.top = Some(Arc::new(top));
                ctx.queue.push(Task::List { node, src: sfd });
            }
            Err(f) => ctx.fail(&mut w, f),
        }
    } else {
        let real;
        let src_path = if o.follow_top {
            real = std::fs::canonicalize(src).map_err(|e| IoError::new("resolve", src, e))?;
            &real
        } else {
            src
        };
        let (sparent, sname) = split(src_path).ok_or_else(|| Error::Refused {
            op: "copy",
            path: src.to_path_buf(),
        })?;
        let spfd = dir::open_dir(CWD, sparent, sparent)?;
        let top = rustix::io::fcntl_dupfd_cloexec(&holder.dst, 0)
            .map_err(io("open directory", dparent))?;
        ctx.top = Some(Arc::new(top));
        ctx.entry(
            &mut w,
            &holder,
            spfd.as_fd(),
            None,
            &sname,
            &dname,
            &st,
            src_path,
            dst,
        );
    }
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
fn inside(dir: BorrowedFd<'_>, id: (u64, u64)) -> rustix::io::Result<bool> {
    let stat = |fd: BorrowedFd<'_>| {
        rustix::fs::statx(
            fd,
            c"",
            AtFlags::EMPTY_PATH,
            rustix::fs::StatxFlags::BASIC_STATS,
        )
        .map(|s| dev_ino(&s))
    };
    let mut cur = rustix::io::fcntl_dupfd_cloexec(dir, 0)?;
    let mut here = stat(cur.as_fd())?;
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
        let there = stat(up.as_fd())?;
        if there == here {
            return Ok(false);
        }
        (cur, here) = (up, there);
    }
}

/// `f()`, and if the name exists already, remove it and try once more.
fn replacing<T>(
    dir: BorrowedFd<'_>,
    name: &CStr,
    mut f: impl FnMut() -> rustix::io::Result<T>,
) -> rustix::io::Result<T> {
    match f() {
        Err(Errno::EXIST) => {
            rustix::fs::unlinkat(dir, name, AtFlags::empty())?;
            f()
        }
        r => r,
    }
}

impl Ctx<'_> {
    fn worker(&self) -> Worker {
        Worker {
            // A file the pair's method refuses alone (a NOCOW file on
            // Btrfs, another mount inside the tree) goes one method down.
            copier: Copier::new(self.o.chain).with_retry_down(true),
            xb: XattrBuf::new(),
            buf: Vec::new(),
            dirbuf: Vec::new(),
            sum: Summary::default(),
        }
    }

    fn fail(&self, w: &mut Worker, f: Fail) {
        if sys::is_fatal(f.errno) {
            let mut a = self.aborted.lock().unwrap_or_else(|e| e.into_inner());
            if a.is_none() {
                *a = Some(f.err.to_string());
            }
            self.queue.stop();
        }
        self.progress.on_error(&f.err);
        w.sum.errors.push(f.err);
    }

    fn task(&self, w: &mut Worker, t: Task) {
        match t {
            Task::List { node, src } => self.list(w, node, src),
            Task::Open {
                parent,
                src_dir,
                name,
                st,
            } => {
                let rel = parent.rel.join(OsStr::from_bytes(name.to_bytes()));
                let path = self.src_root.join(&rel);
                if self.held.load(Ordering::Relaxed) >= self.budget {
                    self.copy_frugally(w, &parent, &src_dir, &name, st, rel);
                    drop(src_dir);
                    self.finish_dir(w, parent);
                    return;
                }
                let made = dir::open_dir(&*src_dir, name.as_c_str(), &path)
                    .map_err(|e| fail_io(&e))
                    .and_then(|sfd| self.make_dir(w, &parent, sfd, &name, st, rel));
                drop(src_dir);
                match made {
                    Ok((node, sfd)) => self.list(w, node, sfd),
                    Err(f) => {
                        self.fail(w, f);
                        self.finish_dir(w, parent);
                    }
                }
            }
        }
    }

    /// Create (or reuse) the destination directory `name` in `parent`, and
    /// read what it will need from the open source directory `sfd`.
    fn make_dir(
        &self,
        w: &mut Worker,
        parent: &Arc<DirNode>,
        sfd: OwnedFd,
        name: &CStr,
        st: Src,
        rel: PathBuf,
    ) -> Result<(Arc<DirNode>, OwnedFd), Fail> {
        let dpath = self.dst_root.join(&rel);
        // Created with its final permissions where that is safe, so that
        // most directories need no chmod: without group and other access
        // while it still has the wrong owner, and writable by its creator
        // unless that is root, until its children are in.
        let mut perm = self.want_mode(&st) & 0o777;
        if self.o.preserve.owner && (st.uid, st.gid) != (self.euid, parent.new_gid) {
            perm &= !0o077;
        }
        if self.euid != 0 {
            perm |= 0o700;
        }
        let fresh = match rustix::fs::mkdirat(&parent.dst, name, Mode::from_raw_mode(perm)) {
            Ok(()) => true,
            Err(Errno::EXIST) => false,
            Err(e) => return Err(fail(&dpath, "create directory", e)),
        };
        let dfd = dir::open_dir(&parent.dst, name, &dpath).map_err(|e| fail_io(&e))?;
        // What the kernel gave a new directory is known without asking:
        // no default ACL can apply (`exact_modes`), the umask is known, the
        // group and setgid bit come from the parent.
        let (owner, mode, setgid) = match self.pumask {
            Some(u) if fresh && parent.exact_modes => {
                let sgid = if parent.setgid { 0o2000 } else { 0 };
                (
                    (self.euid, parent.new_gid),
                    (perm & !u) | sgid,
                    parent.setgid,
                )
            }
            _ => {
                let dst_st = rustix::fs::fstat(&dfd).map_err(|e| fail(&dpath, "stat", e))?;
                (
                    (dst_st.st_uid, dst_st.st_gid),
                    dst_st.st_mode & 0o7777,
                    dst_st.st_mode & 0o2000 != 0,
                )
            }
        };
        let xattrs = if self.o.preserve.xattrs {
            match w.xb.read(On::Fd(sfd.as_fd()), Which::Copyable) {
                Ok(x) => x,
                Err(Errno::OPNOTSUPP) => Vec::new(),
                Err(e) => {
                    let spath = self.src_root.join(&rel);
                    return Err(fail(&spath, "read extended attributes of", e));
                }
            }
        } else {
            Vec::new()
        };
        w.sum.directories += 1;
        self.progress.on_entry(0);
        let node = Arc::new(DirNode {
            dst: dfd,
            _held: Held::new(&self.held),
            parent: Some(parent.clone()),
            pending: AtomicUsize::new(1),
            rel,
            new_gid: if setgid { owner.1 } else { self.egid },
            setgid,
            exact_modes: fresh && parent.exact_modes,
            finish: Some(DirFinish {
                src: st,
                xattrs,
                owner,
                mode,
            }),
        });
        Ok((node, sfd))
    }

    /// Read the source directory `src` and copy its entries into `node`;
    /// subdirectories go to the queue.
    fn list(&self, w: &mut Worker, node: Arc<DirNode>, src: OwnedFd) {
        let src = Arc::new(src);
        self.list_entries(w, &node, &src, |name, st| {
            node.pending.fetch_add(1, Ordering::AcqRel);
            self.queue.push(Task::Open {
                parent: node.clone(),
                src_dir: src.clone(),
                name: name.to_owned(),
                st,
            });
        });
        self.finish_dir(w, node);
    }

    /// Copy the source directory `name` of `src_parent` into `parent`
    /// (at `rel`) and all below it, depth first, holding a few descriptors
    /// whatever the depth: the directories above the current one are
    /// closed, and found again through `..` (on both sides, each checked to
    /// be the directory it was) when their next subdirectory is due. A
    /// directory's metadata is applied when its last child is done.
    fn copy_frugally(
        &self,
        w: &mut Worker,
        parent: &Arc<DirNode>,
        src_parent: &OwnedFd,
        name: &CStr,
        st: Src,
        rel: PathBuf,
    ) {
        /// A directory on the way down: its descriptors while it is the
        /// current one, what it needs otherwise.
        struct Level {
            name: CString,
            src_id: (u64, u64),
            dst_id: (u64, u64),
            cur: Option<(DirNode, OwnedFd)>,
            new_gid: u32,
            setgid: bool,
            exact_modes: bool,
            finish: Option<DirFinish>,
            subdirs: Vec<(CString, Src)>,
            next: usize,
        }
        let id_of = |fd: &OwnedFd| {
            rustix::fs::statx(
                fd,
                "",
                AtFlags::EMPTY_PATH,
                rustix::fs::StatxFlags::BASIC_STATS,
            )
            .map(|s| dev_ino(&s))
        };
        let open = |dir: BorrowedFd<'_>, n: &CStr| {
            rustix::fs::openat(
                dir,
                n,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
        };
        let rel_of = |stack: &[Level]| {
            let mut r = rel.clone();
            for l in stack.iter().skip(1) {
                r.push(OsStr::from_bytes(l.name.to_bytes()));
            }
            r
        };
        // Make the destination directory for `sfd` in `into`; a level
        // holding it, and the source's subdirectories listed, the rest of
        // its entries copied.
        let enter = |w: &mut Worker,
                     into: &Arc<DirNode>,
                     sfd: OwnedFd,
                     name: &CStr,
                     st: Src,
                     rel: PathBuf|
         -> Result<Level, Fail> {
            let src_id = (st.dev, st.ino);
            let (node, sfd) = self.make_dir(w, into, sfd, name, st, rel)?;
            let Ok(node) = Arc::try_unwrap(node) else {
                unreachable!("a new node has one owner")
            };
            let DirNode {
                dst,
                _held,
                rel,
                new_gid,
                setgid,
                exact_modes,
                finish,
                ..
            } = node;
            drop(_held);
            let dst_id = id_of(&dst).map_err(|e| fail(&self.dst_root.join(&rel), "stat", e))?;
            let node = DirNode {
                dst,
                _held: Held(None),
                parent: None,
                pending: AtomicUsize::new(1),
                rel,
                new_gid,
                setgid,
                exact_modes,
                finish: None,
            };
            let mut subdirs = Vec::new();
            self.list_entries(w, &node, &sfd, |n, st| subdirs.push((n.to_owned(), st)));
            Ok(Level {
                name: name.to_owned(),
                src_id,
                dst_id,
                cur: Some((node, sfd)),
                new_gid,
                setgid,
                exact_modes,
                finish,
                subdirs,
                next: 0,
            })
        };
        let spath = self.src_root.join(&rel);
        let first = dir::open_dir(src_parent, name, &spath)
            .map_err(|e| fail_io(&e))
            .and_then(|sfd| enter(w, parent, sfd, name, st, rel.clone()));
        let mut stack = match first {
            Ok(l) => vec![l],
            Err(f) => return self.fail(w, f),
        };
        while let Some(top) = stack.last_mut() {
            if self.queue.stopped() {
                return;
            }
            if top.next < top.subdirs.len() {
                let (n, st) = top.subdirs[top.next].clone();
                top.next += 1;
                let (node, sfd) = top.cur.take().expect("the current level is open");
                let node = Arc::new(node);
                let crel = node.rel.join(OsStr::from_bytes(n.to_bytes()));
                let cpath = self.src_root.join(&crel);
                let child = open(sfd.as_fd(), &n)
                    .map_err(|e| fail(&cpath, "open directory", e))
                    .and_then(|c| {
                        if id_of(&c).ok() == Some((st.dev, st.ino)) {
                            Ok(c)
                        } else {
                            Err(fail(
                                &cpath,
                                "open directory (it was replaced)",
                                Errno::STALE,
                            ))
                        }
                    })
                    .and_then(|c| enter(w, &node, c, &n, st, crel));
                let Ok(node) = Arc::try_unwrap(node) else {
                    unreachable!("the child node was taken apart")
                };
                match child {
                    Ok(l) => {
                        // This level's descriptors close; `..` finds them.
                        drop((node, sfd));
                        stack.push(l);
                    }
                    Err(f) => {
                        self.fail(w, f);
                        top.cur = Some((node, sfd));
                    }
                }
                continue;
            }
            // Every child done: the directory's metadata, then up.
            let done = stack.pop().expect("a level");
            let (node, sfd) = done.cur.expect("the current level is open");
            if let Some(f) = &done.finish {
                self.finish_meta(w, &node, f);
            }
            let Some(up) = stack.last_mut() else { break };
            let back = (open(sfd.as_fd(), c".."), open(node.dst.as_fd(), c".."));
            let (Ok(psrc), Ok(pdst)) = back else {
                let path = self.src_root.join(rel_of(&stack));
                return self.fail(
                    w,
                    fail(&path, "open the parent directory again", Errno::NOENT),
                );
            };
            if id_of(&psrc).ok() != Some(up.src_id) || id_of(&pdst).ok() != Some(up.dst_id) {
                let path = self.src_root.join(rel_of(&stack));
                return self.fail(
                    w,
                    fail(
                        &path,
                        "find the directory again (the tree moved)",
                        Errno::STALE,
                    ),
                );
            }
            let rel_up = rel_of(&stack);
            let up = stack.last_mut().expect("a level");
            up.cur = Some((
                DirNode {
                    dst: pdst,
                    _held: Held(None),
                    parent: None,
                    pending: AtomicUsize::new(1),
                    rel: rel_up,
                    new_gid: up.new_gid,
                    setgid: up.setgid,
                    exact_modes: up.exact_modes,
                    finish: None,
                },
                psrc,
            ));
        }
    }

    /// Copy the entries of the source directory `src` that are not
    /// directories into `node`; hand each subdirectory to `on_dir`.
    fn list_entries(
        &self,
        w: &mut Worker,
        node: &DirNode,
        src: &OwnedFd,
        mut on_dir: impl FnMut(&CStr, Src),
    ) {
        let mut buf = std::mem::take(&mut w.dirbuf);
        buf.resize(DIRBUF, MaybeUninit::uninit());
        let mut dir = RawDir::new(src, &mut buf);
        while let Some(ent) = dir.next() {
            if self.queue.stopped() {
                break;
            }
            let ent = match ent {
                Ok(e) => e,
                Err(e) => {
                    let path = self.src_root.join(&node.rel);
                    self.fail(w, fail(&path, "read directory", e));
                    break;
                }
            };
            let name = ent.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let rel = node.rel.join(OsStr::from_bytes(name.to_bytes()));
            let spath = self.src_root.join(&rel);
            let (st, opened) = match stat_entry(src.as_fd(), name, ent.file_type()) {
                Ok(s) => s,
                Err(e) => {
                    self.fail(w, fail(&spath, "stat", e));
                    continue;
                }
            };
            if st.kind() == FileType::Directory {
                on_dir(name, st);
            } else {
                let dpath = self.dst_root.join(&rel);
                let (src_dir, pre) = (src.as_fd(), opened);
                self.entry(w, node, src_dir, pre, name, name, &st, &spath, &dpath);
            }
        }
        w.dirbuf = buf;
    }

    /// Give the directory `node` its metadata `f`, once its children are in.
    fn finish_meta(&self, w: &mut Worker, node: &DirNode, f: &DirFinish) {
        let path = self.dst_root.join(&node.rel);
        let r = self.apply(
            On::Fd(node.dst.as_fd()),
            &path,
            &f.src,
            f.xattrs.clone(),
            f.owner,
            Some(f.mode),
            &mut w.sum.xattrs_unsupported,
        );
        if let Err(f) = r {
            self.fail(w, f);
        }
    }

    /// One child of `node` is done (or `node`'s own listing): when nothing
    /// is left, give the directory its metadata, times last, and go up.
    fn finish_dir(&self, w: &mut Worker, node: Arc<DirNode>) {
        let mut cur = node;
        loop {
            if cur.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
                return;
            }
            if let (Some(f), false) = (&cur.finish, self.queue.stopped()) {
                self.finish_meta(w, &cur, f);
            }
            match cur.parent.clone() {
                Some(p) => cur = p,
                None => return,
            }
        }
    }

    /// Copy one non-directory entry `sname` of `src_dir` to `dname` in
    /// `node`.
    #[allow(clippy::too_many_arguments)]
    fn entry(
        &self,
        w: &mut Worker,
        node: &DirNode,
        src_dir: BorrowedFd<'_>,
        opened: Option<OwnedFd>,
        sname: &CStr,
        dname: &CStr,
        st: &Src,
        spath: &Path,
        dpath: &Path,
    ) {
        match self.entry_inner(w, node, src_dir, opened, sname, dname, st, spath, dpath) {
            Ok(bytes) => self.progress.on_entry(bytes),
            Err(f) => self.fail(w, f),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn entry_inner(
        &self,
        w: &mut Worker,
        node: &DirNode,
        src_dir: BorrowedFd<'_>,
        opened: Option<OwnedFd>,
        sname: &CStr,
        dname: &CStr,
        st: &Src,
        spath: &Path,
        dpath: &Path,
    ) -> Result<u64, Fail> {
        let key = (self.o.preserve.links && st.nlink > 1).then_some((st.dev, st.ino));
        let Some(key) = key else {
            return self.create_and_fill(w, node, src_dir, opened, sname, dname, st, spath, dpath);
        };
        if let Some((top, first)) = self.links.claim(key) {
            replacing(node.dst.as_fd(), dname, || {
                rustix::fs::linkat(&*top, &first, &node.dst, dname, AtFlags::empty())
            })
            .map_err(|e| fail(dpath, "link", e))?;
            w.sum.hardlinks += 1;
            return Ok(0);
        }
        // Released as failed if the copy unwinds, so no one waits forever.
        let claim = Claim {
            links: self.links,
            key,
        };
        let r = self.create_and_fill(w, node, src_dir, opened, sname, dname, st, spath, dpath);
        std::mem::forget(claim);
        let at = match (&r, &self.top) {
            (Ok(_), Some(top)) => {
                let rel = node.rel.join(OsStr::from_bytes(dname.to_bytes()));
                Some((top.clone(), rel))
            }
            _ => None,
        };
        self.links.done(key, at);
        r
    }

    /// Create the copy of a non-directory entry and give it its data and
    /// metadata; a regular file that fails half-way loses its name.
    #[allow(clippy::too_many_arguments)]
    fn create_and_fill(
        &self,
        w: &mut Worker,
        node: &DirNode,
        src_dir: BorrowedFd<'_>,
        opened: Option<OwnedFd>,
        sname: &CStr,
        dname: &CStr,
        st: &Src,
        spath: &Path,
        dpath: &Path,
    ) -> Result<u64, Fail> {
        let created = self.create(node, src_dir, opened, sname, dname, st, spath, dpath)?;
        // The state the kernel gave the new entry.
        let owner = (self.euid, node.new_gid);
        let mode_now = match self.pumask {
            Some(u) if node.exact_modes => Some(self.create_perm(st) & !u),
            _ => None,
        };
        match created {
            Created::Regular { src, dst } => {
                let bytes = match self.data(w, &src, &dst, st, spath, dpath) {
                    Ok(b) => b,
                    Err(f) => {
                        // Nothing half-copied keeps the name.
                        let _ = rustix::fs::unlinkat(&node.dst, dname, AtFlags::empty());
                        return Err(f);
                    }
                };
                let xattrs = self.read_xattrs(w, On::Fd(src.as_fd()), spath)?;
                self.apply(
                    On::Fd(dst.as_fd()),
                    dpath,
                    st,
                    xattrs,
                    owner,
                    mode_now,
                    &mut w.sum.xattrs_unsupported,
                )?;
                w.sum.files += 1;
                Ok(bytes)
            }
            Created::Other => {
                let xattrs = self.read_xattrs(w, On::At(src_dir, sname), spath)?;
                let mode_now = if st.kind() == FileType::Symlink {
                    None
                } else {
                    mode_now
                };
                self.apply(
                    On::At(node.dst.as_fd(), dname),
                    dpath,
                    st,
                    xattrs,
                    owner,
                    mode_now,
                    &mut w.sum.xattrs_unsupported,
                )?;
                match st.kind() {
                    FileType::Symlink => w.sum.symlinks += 1,
                    FileType::Fifo => w.sum.fifos += 1,
                    FileType::Socket => w.sum.sockets += 1,
                    _ => w.sum.devices += 1,
                }
                Ok(0)
            }
        }
    }

    fn read_xattrs(&self, w: &mut Worker, on: On<'_>, spath: &Path) -> Result<Vec<Xattr>, Fail> {
        if !self.o.preserve.xattrs {
            return Ok(Vec::new());
        }
        match w.xb.read(on, Which::Copyable) {
            Ok(x) => Ok(x),
            Err(Errno::OPNOTSUPP) => Ok(Vec::new()),
            Err(e) => Err(fail(spath, "read extended attributes of", e)),
        }
    }

    /// The permission bits an entry is created with.
    fn create_perm(&self, st: &Src) -> u32 {
        if self.o.preserve.mode {
            st.mode & 0o777
        } else {
            st.mode & 0o777 & !self.umask
        }
    }

    /// The mode the copy must end with.
    fn want_mode(&self, st: &Src) -> u32 {
        if self.o.preserve.mode {
            st.mode & 0o7777
        } else {
            st.mode & 0o777 & !self.umask
        }
    }

    /// Create the destination entry (for a regular file: open both; the
    /// source may have been opened already by [`stat_entry`]).
    #[allow(clippy::too_many_arguments)]
    fn create(
        &self,
        node: &DirNode,
        src_dir: BorrowedFd<'_>,
        opened: Option<OwnedFd>,
        sname: &CStr,
        dname: &CStr,
        st: &Src,
        spath: &Path,
        dpath: &Path,
    ) -> Result<Created, Fail> {
        let dir = node.dst.as_fd();
        let perm = Mode::from_raw_mode(self.create_perm(st));
        match st.kind() {
            FileType::RegularFile => {
                let src = match opened {
                    Some(fd) => fd,
                    None => {
                        // Stat'd by name: it may have been swapped for a
                        // fifo since. Opened without blocking, and used
                        // only if it is still the file that was stat'd.
                        let fd = open_src(src_dir, sname).map_err(|e| fail(spath, "open", e))?;
                        let now = rustix::fs::fstat(&fd).map_err(|e| fail(spath, "stat", e))?;
                        let same = FileType::from_raw_mode(now.st_mode) == FileType::RegularFile
                            && (now.st_dev, now.st_ino) == (st.dev, st.ino);
                        if !same {
                            return Err(fail_changed(spath));
                        }
                        fd
                    }
                };
                let flags = OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC;
                let dst = replacing(dir, dname, || rustix::fs::openat(dir, dname, flags, perm))
                    .map_err(|e| fail(dpath, "create", e))?;
                Ok(Created::Regular { src, dst })
            }
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(src_dir, sname, Vec::new())
                    .map_err(|e| fail(spath, "read symlink", e))?;
                replacing(dir, dname, || rustix::fs::symlinkat(&target, dir, dname))
                    .map_err(|e| fail(dpath, "create symlink", e))?;
                Ok(Created::Other)
            }
            kind @ (FileType::Fifo
            | FileType::Socket
            | FileType::CharacterDevice
            | FileType::BlockDevice) => {
                replacing(dir, dname, || {
                    rustix::fs::mknodat(dir, dname, kind, perm, st.rdev)
                })
                .map_err(|e| fail(dpath, "create special file", e))?;
                Ok(Created::Other)
            }
            _ => Err(fail(spath, "copy (unknown file type)", Errno::INVAL)),
        }
    }

    /// Move the data of a regular file; returns the bytes.
    fn data(
        &self,
        w: &mut Worker,
        src: &OwnedFd,
        dst: &OwnedFd,
        st: &Src,
        spath: &Path,
        dpath: &Path,
    ) -> Result<u64, Fail> {
        let size = st.size;
        if size == 0 {
            return Ok(0);
        }
        let sparse = st.blocks * 512 < size;
        if size <= self.o.small_file_max && !sparse && self.o.chain != Chain::only(Method::Clone) {
            return self.write_small(w, src, dst, size, spath, dpath);
        }
        let (sh, dh) = (Handle::new(src, spath), Handle::new(dst, dpath));
        let done = if w.copier.confirmed() == Some(Method::Clone) {
            // The pair is known to clone: one FICLONE, without the two
            // fstat calls of a Copier round.
            w.copier.copy_new_file(sh, dh, size, st.blocks)
        } else {
            w.copier.copy_file(sh, dh)
        }
        .map_err(|e| fail_fs(spath, &e))?;
        w.sum.tally.record(&done);
        Ok(done.bytes.total())
    }

    fn write_small(
        &self,
        w: &mut Worker,
        src: &OwnedFd,
        dst: &OwnedFd,
        size: u64,
        spath: &Path,
        dpath: &Path,
    ) -> Result<u64, Fail> {
        let size = size as usize;
        if w.buf.len() < size {
            w.buf.resize(size, 0);
        }
        let mut got = 0;
        while got < size {
            match rustix::io::read(src, &mut w.buf[got..size]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(fail(spath, "read", e)),
            }
        }
        let mut off = 0;
        while off < got {
            match rustix::io::write(dst, &w.buf[off..got]) {
                Ok(n) => off += n,
                Err(Errno::INTR) => {}
                Err(e) => return Err(fail(dpath, "write", e)),
            }
        }
        w.sum.small_written += 1;
        w.sum.tally.record_written(got as u64);
        Ok(got as u64)
    }

    /// Give `dst` (shown as `dpath`) the metadata of `st` in the order
    /// owner → xattrs → mode → times, skipping what would change nothing.
    /// `owner` and `mode_now` are what the entry has now (`None`: unknown).
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &self,
        dst: On<'_>,
        dpath: &Path,
        st: &Src,
        xattrs: Vec<Xattr>,
        owner: (u32, u32),
        mode_now: Option<u32>,
        unsupported: &mut u64,
    ) -> Result<(), Fail> {
        let p = &self.o.preserve;
        let meta = Meta {
            uid: p.owner.then_some(st.uid),
            gid: p.owner.then_some(st.gid),
            mode: (st.kind() != FileType::Symlink).then(|| self.want_mode(st)),
            atime: p.times.then_some(st.atime),
            mtime: p.times.then_some(st.mtime),
            xattrs,
        };
        // As cp: a user cannot give files away, and a destination may lack
        // an attribute namespace; neither is an error.
        let policy = Policy {
            owner_may_fail: self.euid != 0,
            unsupported_xattrs_ok: true,
        };
        let current = Current {
            owner: Some(owner),
            mode: mode_now,
        };
        let done =
            meta::apply_on(dst, dpath, &meta, current, policy).map_err(|e| fail_fs(dpath, &e))?;
        *unsupported += done.xattrs_unsupported as u64;
        Ok(())
    }
}
