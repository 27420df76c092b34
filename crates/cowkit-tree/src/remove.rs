//! The parallel tree remove: see [`remove()`].
//!
//! On the crate's shared walk (module `walk`): a directory is opened
//! relative to its parent, listed (what is not a directory is unlinked on
//! the spot), and removed once its last subdirectory is gone; past the
//! descriptor budget a subtree is removed depth first, one directory open
//! at a time.

use std::ffi::{CStr, CString, OsStr};
use std::ops::ControlFlow;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use cowkit_fs::dir::{self as fsdir, dev_ino, statx_at};
use cowkit_fs::IoError;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, CWD};
use rustix::io::Errno;
use serde::Serialize;

use crate::entry_error::{self, entry_error};
use crate::queue::{Lanes, Tasks, MAX_LANES};
use crate::walk::{self, Budget, Descent, Held, Id};
use crate::{EntryError, Error, Progress};

/// How [`remove()`] works.
#[derive(Clone, Debug)]
pub struct RemoveOptions {
    /// Worker threads.
    pub threads: usize,
    /// A missing path, or an entry that vanished meanwhile, is not an
    /// error (`rm -f`).
    pub force: bool,
    /// Pin each worker to its own CPU when there are no more workers than
    /// CPUs this process may run on. On XFS the inodes a thread unlinks
    /// are inactivated by a kernel worker of the CPU it ran on; a pinned
    /// worker keeps its allocation group's inactivation on its own CPU
    /// instead of racing the other worker for that group's AGI buffer
    /// (1.50× against 1.46× over `rm -rf` on a quiet machine). Off by
    /// default: a pinned worker cannot move away from a CPU another
    /// process keeps busy (2.2× slower then).
    pub pin: bool,
}

impl Default for RemoveOptions {
    fn default() -> Self {
        RemoveOptions {
            threads: crate::default_threads(),
            force: false,
            pin: false,
        }
    }
}

/// What a remove did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RemoveSummary {
    /// Entries other than directories removed.
    pub files: u64,
    /// Directories removed.
    pub directories: u64,
    /// Entries that could not be removed; the walk went on.
    pub errors: Vec<EntryError>,
}

impl RemoveSummary {
    fn add(&mut self, o: RemoveSummary) {
        self.files += o.files;
        self.directories += o.directories;
        self.errors.extend(o.errors);
    }
}

/// A directory being emptied.
struct Node {
    fd: OwnedFd,
    _held: Held,
    /// The directory holding this one, and this one's name in it.
    parent: Parent,
    name: CString,
    rel: PathBuf,
    /// 1 while listed, plus one per subdirectory not removed yet.
    pending: AtomicUsize,
    /// Something below could not be removed: this one cannot be either.
    failed: AtomicBool,
}

enum Parent {
    Node(Arc<Node>),
    Top(OwnedFd),
}

impl walk::Node for Node {
    fn pending(&self) -> &AtomicUsize {
        &self.pending
    }
    fn parent(&self) -> Option<&Arc<Self>> {
        match &self.parent {
            Parent::Node(p) => Some(p),
            Parent::Top(_) => None,
        }
    }
}

impl Node {
    fn parent_fd(&self) -> BorrowedFd<'_> {
        match &self.parent {
            Parent::Node(p) => p.fd.as_fd(),
            Parent::Top(fd) => fd.as_fd(),
        }
    }
}

/// A subdirectory met in a listing: the queued walk's work item.
struct Child {
    parent: Arc<Node>,
    name: CString,
}

struct Ctx<'a> {
    o: &'a RemoveOptions,
    progress: &'a dyn Progress,
    /// Directories to empty, in one lane per XFS allocation group (the
    /// group is in the inode number: `ino >> shift`), one lane elsewhere.
    queue: Lanes<Child>,
    shift: Option<u32>,
    root: PathBuf,
    /// The mount the removal stays on (`None`: the kernel does not say).
    mount: Option<u64>,
    /// Directory descriptors held by nodes: past the budget, subtrees are
    /// removed depth first with few descriptors ([`walk::descend`]).
    budget: Budget,
}

#[derive(Default)]
struct Worker {
    dirbuf: Vec<std::mem::MaybeUninit<u8>>,
    sum: RemoveSummary,
}

/// Remove `path` and everything below it, like `rm -r`: entries are
/// unlinked relative to their open directory, directories after their
/// children, by `o.threads` workers sharing a queue of directories.
/// Symlinks are removed, never followed.
///
/// Fails before removing anything when `path` cannot be looked at (unless
/// it is missing and `o.force`), or is `.`, `..` or `/`.
pub fn remove(
    path: &Path,
    o: &RemoveOptions,
    progress: &dyn Progress,
) -> Result<RemoveSummary, Error> {
    let io = |op, e: Errno| Error::Io(IoError::new(op, path, e));
    let mut sum = RemoveSummary::default();
    let Some((pfd, name, st)) = look_up(path, o)? else {
        return Ok(sum);
    };
    if FileType::from_raw_mode(st.stx_mode.into()) != FileType::Directory {
        rustix::fs::unlinkat(&pfd, &name, AtFlags::empty()).map_err(|e| io("remove", e))?;
        sum.files = 1;
        progress.on_entry(0);
        return Ok(sum);
    }
    let root_id = rustix::fs::statx(
        CWD,
        "/",
        AtFlags::empty(),
        rustix::fs::StatxFlags::BASIC_STATS,
    )
    .map(|s| dev_ino(&s))
    .map_err(|e| io("stat /", e))?;
    if dev_ino(&st) == root_id {
        return Err(refused(path));
    }
    let fd = fsdir::open_dir(&pfd, name.as_c_str(), path)?;
    let shift = fsdir::inode_group_shift(&fd);
    let ctx = Ctx {
        o,
        progress,
        queue: Lanes::new(if shift.is_some() { MAX_LANES } else { 1 }),
        shift,
        root: path.to_path_buf(),
        mount: fsdir::mount_id(fd.as_fd()).map_err(|e| io("stat", e))?,
        budget: Budget::new(32 + 4 * o.threads),
    };
    let top = Arc::new(Node {
        fd,
        _held: ctx.budget.hold(),
        parent: Parent::Top(pfd),
        name,
        rel: PathBuf::new(),
        pending: AtomicUsize::new(1),
        failed: AtomicBool::new(false),
    });
    let mut w = Worker::default();
    ctx.list(&mut w, top);
    sum.add(w.sum);
    for w in ctx.run() {
        sum.add(w.sum);
    }
    sum.errors.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(sum)
}

fn refused(path: &Path) -> Error {
    Error::Refused {
        op: "remove",
        path: path.to_path_buf(),
    }
}

/// The parent directory of `path`, its name there, and what it is; `None`
/// when it is missing and `o.force`. `.`, `..` and names that are not one
/// are refused.
fn look_up(
    path: &Path,
    o: &RemoveOptions,
) -> Result<Option<(OwnedFd, CString, rustix::fs::Statx)>, Error> {
    let io = |op, e: Errno| Error::Io(IoError::new(op, path, e));
    // `Path` drops a trailing `.` (`DIR/.` has the file name `DIR`): look
    // at the bytes, as GNU rm refuses `.` and `..` as the last component.
    let last = path
        .as_os_str()
        .as_bytes()
        .rsplit(|&b| b == b'/')
        .find(|c| !c.is_empty());
    if matches!(last, Some(b".") | Some(b"..")) {
        return Err(refused(path));
    }
    let name = match path.file_name() {
        Some(n) if n != ".." && n != "." => {
            CString::new(n.as_bytes()).map_err(|_| refused(path))?
        }
        _ => return Err(refused(path)),
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let pfd = match rustix::fs::openat(
        CWD,
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) if o.force => return Ok(None),
        Err(e) => return Err(io("open the parent directory of", e)),
    };
    match statx_at(pfd.as_fd(), &name) {
        Ok(st) => Ok(Some((pfd, name, st))),
        Err(Errno::NOENT) if o.force => Ok(None),
        Err(e) => Err(io("stat", e)),
    }
}

/// The directory `..`-found descent's view of one directory.
struct Level {
    name: CString,
    id: Id,
    path: PathBuf,
    /// Entries below it that could not be removed.
    skip: Vec<CString>,
}

/// The remove's side of [`walk::descend`]: one worker, one directory open
/// at a time, listed again after each subdirectory is gone.
struct Frugal<'c, 'a> {
    ctx: &'c Ctx<'a>,
    w: &'c mut Worker,
    /// The directory holding the subtree.
    top: BorrowedFd<'c>,
    /// Whether everything went.
    ok: bool,
}

impl Frugal<'_, '_> {
    fn fail(&mut self, path: &Path, op: &'static str, e: Errno) {
        let err = entry_error(path, op, e);
        self.ctx.progress.on_error(&err);
        self.w.sum.errors.push(err);
        self.ok = false;
    }

    /// Unlink what is not a directory in `dir`; the first subdirectory not
    /// to skip.
    fn clear(&mut self, level: &mut Level, dir: &OwnedFd) -> Option<CString> {
        let mut buf = std::mem::take(&mut self.w.dirbuf);
        let mut sub = None;
        let mut failed = Vec::new();
        let listed = walk::for_each_entry(dir.as_fd(), &mut buf, |ent| {
            let n = ent.file_name();
            if level.skip.iter().any(|s| s.as_c_str() == n) {
                return ControlFlow::Continue(());
            }
            match self
                .ctx
                .unlink_entry(self.w, dir.as_fd(), n, ent.file_type())
            {
                Ok(false) => ControlFlow::Continue(()),
                Ok(true) => {
                    sub = Some(n.to_owned());
                    ControlFlow::Break(())
                }
                Err(e) => {
                    failed.push((n.to_owned(), e));
                    ControlFlow::Continue(())
                }
            }
        });
        self.w.dirbuf = buf;
        for (n, e) in failed {
            self.fail(
                &level.path.join(OsStr::from_bytes(n.to_bytes())),
                "remove",
                e,
            );
            level.skip.push(n);
        }
        if let Err(e) = listed {
            self.fail(&level.path, "read directory", e);
        }
        sub
    }

    /// Open the subdirectory `name` of `dir`, on the same mount.
    fn enter(&self, dir: &OwnedFd, name: &CStr) -> Result<(OwnedFd, Id), (Errno, &'static str)> {
        let fd = walk::open_subdir(dir.as_fd(), name).map_err(|e| (e, "open directory"))?;
        if !self.ctx.same_mount(&fd) {
            return Err((Errno::XDEV, "not entered (a mount point)"));
        }
        let id = walk::identity(fd.as_fd()).map_err(|e| (e, "stat"))?;
        Ok((fd, id))
    }
}

impl Descent for Frugal<'_, '_> {
    type Open = OwnedFd;
    type Level = Level;

    fn next_child(&mut self, level: &mut Level, open: &OwnedFd) -> Option<(OwnedFd, Level)> {
        loop {
            let sub = self.clear(level, open)?;
            let path = level.path.join(OsStr::from_bytes(sub.to_bytes()));
            match self.enter(open, &sub) {
                Ok((fd, id)) => {
                    let skip = Vec::new();
                    return Some((
                        fd,
                        Level {
                            name: sub,
                            id,
                            path,
                            skip,
                        },
                    ));
                }
                Err((Errno::NOENT, _)) if self.ctx.o.force => {}
                Err((e, op)) => {
                    self.fail(&path, op, e);
                    level.skip.push(sub);
                }
            }
        }
    }

    fn reopen(&mut self, open: &OwnedFd, up: &Level) -> rustix::io::Result<OwnedFd> {
        walk::reopen_parent(open.as_fd(), up.id)
    }

    fn leave(&mut self, level: Level, open: OwnedFd, up: Option<(&OwnedFd, &mut Level)>) {
        drop(open);
        let (pfd, up) = match up {
            Some((fd, l)) => (fd.as_fd(), Some(l)),
            None => (self.top, None),
        };
        if level.skip.is_empty() {
            match rustix::fs::unlinkat(pfd, &level.name, AtFlags::REMOVEDIR) {
                Ok(()) => {
                    self.w.sum.directories += 1;
                    self.ctx.progress.on_entry(0);
                    return;
                }
                Err(Errno::NOENT) if self.ctx.o.force => return,
                Err(e) => self.fail(&level.path, "remove directory", e),
            }
        }
        if let Some(up) = up {
            up.skip.push(level.name);
        }
    }

    fn lost(&mut self, up: &Level, e: Errno) {
        self.fail(&up.path, walk::reopen_op(e), e);
    }
}

impl Ctx<'_> {
    /// Run the workers; with `o.pin`, each on its own CPU.
    fn run(&self) -> Vec<Worker> {
        let cpus: Vec<usize> = rustix::thread::sched_getaffinity(None)
            .map(|set| {
                (0..rustix::thread::CpuSet::MAX_CPU)
                    .filter(|&c| set.is_set(c))
                    .collect()
            })
            .unwrap_or_default();
        let next_cpu = AtomicUsize::new(0);
        let threads = self.o.threads;
        self.queue.run(
            threads,
            || {
                let i = next_cpu.fetch_add(1, Ordering::Relaxed);
                if self.o.pin && threads > 1 && threads <= cpus.len() {
                    let mut set = rustix::thread::CpuSet::new();
                    set.set(cpus[i % cpus.len()]);
                    let _ = rustix::thread::sched_setaffinity(None, &set);
                }
                Worker::default()
            },
            |w, c| self.open_child(w, c),
        )
    }

    fn fail(&self, w: &mut Worker, node: &Node, err: EntryError) {
        node.failed.store(true, Ordering::Relaxed);
        self.progress.on_error(&err);
        w.sum.errors.push(err);
    }

    /// Whether the open directory `fd` is on the mount the removal
    /// started on: another filesystem (or bind mount) mounted inside the
    /// tree is not entered, its files are not this tree's.
    fn same_mount(&self, fd: &OwnedFd) -> bool {
        self.mount.is_none() || fsdir::mount_id(fd.as_fd()).ok().flatten() == self.mount
    }

    /// Empty and remove the subdirectory `c`: listed in the queued walk,
    /// or, past the descriptor budget, removed depth first.
    fn open_child(&self, w: &mut Worker, c: Child) {
        let Child { parent, name } = c;
        let rel = parent.rel.join(OsStr::from_bytes(name.to_bytes()));
        let path = self.root.join(&rel);
        let fd = match fsdir::open_dir(&parent.fd, name.as_c_str(), &path) {
            Ok(fd) => fd,
            Err(e) if e.errno() == Some(Errno::NOENT) && self.o.force => {
                return self.finish(w, parent)
            }
            Err(e) => {
                self.fail(w, &parent, entry_error::entry_error_io(&e));
                return self.finish(w, parent);
            }
        };
        if !self.same_mount(&fd) {
            let err = EntryError {
                path: path.clone(),
                error: vec![format!(
                    "`{}` is a mount point: not entered (unmount it first)",
                    path.display()
                )],
                errno: None,
            };
            self.fail(w, &parent, err);
            return self.finish(w, parent);
        }
        if self.budget.spent() {
            if !self.descend(w, &parent, fd, name, path) {
                parent.failed.store(true, Ordering::Relaxed);
            }
            return self.finish(w, parent);
        }
        let node = Arc::new(Node {
            fd,
            _held: self.budget.hold(),
            parent: Parent::Node(parent),
            name,
            rel,
            pending: AtomicUsize::new(1),
            failed: AtomicBool::new(false),
        });
        self.list(w, node);
    }

    /// Remove the open directory `fd` (`name` in `parent`, shown as
    /// `path`) and all below it depth first, holding one descriptor more
    /// than the parent whatever the depth. Returns whether everything went.
    fn descend(
        &self,
        w: &mut Worker,
        parent: &Node,
        fd: OwnedFd,
        name: CString,
        path: PathBuf,
    ) -> bool {
        let mut d = Frugal {
            ctx: self,
            w,
            top: parent.fd.as_fd(),
            ok: true,
        };
        let id = walk::identity(fd.as_fd());
        match id {
            Ok(id) => {
                let skip = Vec::new();
                walk::descend(
                    &mut d,
                    (
                        fd,
                        Level {
                            name,
                            id,
                            path,
                            skip,
                        },
                    ),
                );
            }
            Err(e) => d.fail(&path, "stat", e),
        }
        d.ok
    }

    /// Unlink the entry `name` of `dir`, listed as `listed`, unless it is
    /// a directory: whether it is one.
    fn unlink_entry(
        &self,
        w: &mut Worker,
        dir: BorrowedFd<'_>,
        name: &CStr,
        listed: FileType,
    ) -> Result<bool, Errno> {
        if !walk::is_dir(dir, name, listed) {
            match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
                Ok(()) => {
                    w.sum.files += 1;
                    self.progress.on_entry(0);
                    return Ok(false);
                }
                Err(Errno::NOENT) if self.o.force => return Ok(false),
                // It became a directory meanwhile.
                Err(Errno::ISDIR) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Unlink what is not a directory in `node`; queue its subdirectories.
    fn list(&self, w: &mut Worker, node: Arc<Node>) {
        let mut buf = std::mem::take(&mut w.dirbuf);
        let listed = walk::for_each_entry(node.fd.as_fd(), &mut buf, |ent| {
            let name = ent.file_name();
            match self.unlink_entry(w, node.fd.as_fd(), name, ent.file_type()) {
                Ok(false) => {}
                Ok(true) => {
                    node.pending.fetch_add(1, Ordering::AcqRel);
                    let lane = self.shift.map_or(0, |s| (ent.ino() >> s) as usize);
                    let child = Child {
                        parent: node.clone(),
                        name: name.to_owned(),
                    };
                    self.queue.push(lane, child);
                }
                Err(e) => {
                    let rel = node.rel.join(OsStr::from_bytes(name.to_bytes()));
                    self.fail(w, &node, entry_error(&self.root.join(rel), "remove", e));
                }
            }
            ControlFlow::Continue(())
        });
        if let Err(e) = listed {
            let err = entry_error(&self.root.join(&node.rel), "read directory", e);
            self.fail(w, &node, err);
        }
        w.dirbuf = buf;
        self.finish(w, node);
    }

    /// One child of `node` is done: when none is left, remove the directory
    /// from its parent and go up.
    fn finish(&self, w: &mut Worker, node: Arc<Node>) {
        walk::child_done(node, |cur| {
            let up = walk::Node::parent(cur);
            let mark_up = || {
                if let Some(p) = up {
                    p.failed.store(true, Ordering::Relaxed);
                }
            };
            if cur.failed.load(Ordering::Relaxed) {
                // The error below is the one to report.
                return mark_up();
            }
            match rustix::fs::unlinkat(cur.parent_fd(), &cur.name, AtFlags::REMOVEDIR) {
                Ok(()) => {
                    w.sum.directories += 1;
                    self.progress.on_entry(0);
                }
                Err(Errno::NOENT) if self.o.force => {}
                Err(e) => {
                    let err = entry_error(&self.root.join(&cur.rel), "remove directory", e);
                    self.progress.on_error(&err);
                    w.sum.errors.push(err);
                    mark_up();
                }
            }
        });
    }
}
