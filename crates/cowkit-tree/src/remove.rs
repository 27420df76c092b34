//! The parallel tree remove: see [`remove()`].

use std::ffi::{CStr, CString, OsStr};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use cowkit_fs::dir::{self, dev_ino, statx_at};
use cowkit_fs::IoError;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, CWD};
use rustix::io::Errno;
use serde::Serialize;

use crate::queue::Lanes;
use crate::sys::{self, entry_error};
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
    /// Counts the descriptors nodes hold ([`Ctx::held`]).
    held: Arc<AtomicUsize>,
    /// The directory holding this one, and this one's name in it.
    parent: Parent,
    name: CString,
    rel: PathBuf,
    /// 1 while listed, plus one per subdirectory not removed yet.
    pending: AtomicUsize,
    /// Something below could not be removed: this one cannot be either.
    failed: AtomicBool,
}

impl Drop for Node {
    fn drop(&mut self) {
        self.held.fetch_sub(1, Ordering::Relaxed);
    }
}

enum Parent {
    Node(Arc<Node>),
    Top(OwnedFd),
}

enum Task {
    Open { parent: Arc<Node>, name: CString },
}

struct Ctx<'a> {
    o: &'a RemoveOptions,
    progress: &'a dyn Progress,
    /// Directories to empty, in one lane per XFS allocation group (the
    /// group is in the inode number: `ino >> shift`), one lane elsewhere.
    queue: Lanes<Task>,
    shift: Option<u32>,
    root: PathBuf,
    /// The mount the removal stays on (`None`: the kernel does not say).
    mount: Option<u64>,
    /// Directory descriptors held by nodes, and how many may be: past
    /// that, a subtree is removed depth-first holding two descriptors
    /// ([`Ctx::remove_frugally`]), so any depth works within a low limit.
    held: Arc<AtomicUsize>,
    budget: usize,
}

/// Lanes of the queue at most (allocation groups beyond share lanes).
const MAX_LANES: usize = 64;

struct Worker {
    dirbuf: Vec<MaybeUninit<u8>>,
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
    let refused = || Error::Refused {
        op: "remove",
        path: path.to_path_buf(),
    };
    // `Path` drops a trailing `.` (`DIR/.` has the file name `DIR`): look
    // at the bytes, as GNU rm refuses `.` and `..` as the last component.
    let last = path
        .as_os_str()
        .as_bytes()
        .rsplit(|&b| b == b'/')
        .find(|c| !c.is_empty());
    if matches!(last, Some(b".") | Some(b"..")) {
        return Err(refused());
    }
    let name = match path.file_name() {
        Some(n) if n != ".." && n != "." => CString::new(n.as_bytes()).map_err(|_| refused())?,
        _ => return Err(refused()),
    };
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut sum = RemoveSummary::default();
    let pfd = match rustix::fs::openat(
        CWD,
        parent,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) if o.force => return Ok(sum),
        Err(e) => return Err(io("open the parent directory of", e)),
    };
    let st = match statx_at(pfd.as_fd(), &name) {
        Ok(s) => s,
        Err(Errno::NOENT) if o.force => return Ok(sum),
        Err(e) => return Err(io("stat", e)),
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
        return Err(refused());
    }
    let fd = dir::open_dir(&pfd, name.as_c_str(), path)?;
    let shift = dir::inode_group_shift(&fd);
    let ctx = Ctx {
        o,
        progress,
        queue: Lanes::new(if shift.is_some() { MAX_LANES } else { 1 }),
        shift,
        root: path.to_path_buf(),
        mount: dir::mount_id(fd.as_fd()).map_err(|e| io("stat", e))?,
        held: Arc::new(AtomicUsize::new(1)),
        budget: dir::dir_fd_budget(32 + 4 * o.threads),
    };
    let top = Arc::new(Node {
        fd,
        held: ctx.held.clone(),
        parent: Parent::Top(pfd),
        name,
        rel: PathBuf::new(),
        pending: AtomicUsize::new(1),
        failed: AtomicBool::new(false),
    });
    let mut w = Worker {
        dirbuf: Vec::new(),
        sum: RemoveSummary::default(),
    };
    ctx.list(&mut w, top);
    let cpus: Vec<usize> = rustix::thread::sched_getaffinity(None)
        .map(|set| {
            (0..rustix::thread::CpuSet::MAX_CPU)
                .filter(|&c| set.is_set(c))
                .collect()
        })
        .unwrap_or_default();
    let next_cpu = AtomicUsize::new(0);
    let workers = ctx.queue.run(
        o.threads,
        || {
            let i = next_cpu.fetch_add(1, Ordering::Relaxed);
            if o.pin && o.threads > 1 && o.threads <= cpus.len() {
                let mut set = rustix::thread::CpuSet::new();
                set.set(cpus[i % cpus.len()]);
                let _ = rustix::thread::sched_setaffinity(None, &set);
            }
            Worker {
                dirbuf: Vec::new(),
                sum: RemoveSummary::default(),
            }
        },
        |w, t| ctx.task(w, t),
    );
    sum.add(w.sum);
    for w in workers {
        sum.add(w.sum);
    }
    sum.errors.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(sum)
}

impl Ctx<'_> {
    fn fail(&self, w: &mut Worker, node: &Node, err: EntryError) {
        node.failed.store(true, Ordering::Relaxed);
        self.progress.on_error(&err);
        w.sum.errors.push(err);
    }

    fn task(&self, w: &mut Worker, t: Task) {
        let Task::Open { parent, name } = t;
        let rel = parent.rel.join(OsStr::from_bytes(name.to_bytes()));
        let path = self.root.join(&rel);
        if self.held.load(Ordering::Relaxed) >= self.budget {
            if !self.remove_frugally(w, &parent.fd, &name, &path) {
                parent.failed.store(true, Ordering::Relaxed);
            }
            self.finish(w, parent);
            return;
        }
        match dir::open_dir(&parent.fd, name.as_c_str(), &path) {
            Ok(fd) => {
                // Another filesystem (or bind mount) mounted inside the
                // tree is not entered: its files are not this tree's.
                let here = dir::mount_id(fd.as_fd()).ok().flatten();
                if self.mount.is_some() && here != self.mount {
                    let err = EntryError {
                        path: path.clone(),
                        error: vec![format!(
                            "`{}` is a mount point: not entered (unmount it first)",
                            path.display()
                        )],
                        errno: None,
                    };
                    self.fail(w, &parent, err);
                    self.finish(w, parent);
                    return;
                }
                self.held.fetch_add(1, Ordering::Relaxed);
                let node = Arc::new(Node {
                    fd,
                    held: self.held.clone(),
                    parent: Parent::Node(parent),
                    name,
                    rel,
                    pending: AtomicUsize::new(1),
                    failed: AtomicBool::new(false),
                });
                self.list(w, node);
            }
            Err(e) if e.errno() == Some(Errno::NOENT) && self.o.force => self.finish(w, parent),
            Err(e) => {
                self.fail(w, &parent, sys::entry_error_io(&e));
                self.finish(w, parent);
            }
        }
    }

    fn list(&self, w: &mut Worker, node: Arc<Node>) {
        let mut buf = std::mem::take(&mut w.dirbuf);
        buf.resize(256 * 1024, MaybeUninit::uninit());
        let mut dir = RawDir::new(&node.fd, &mut buf);
        while let Some(ent) = dir.next() {
            let ent = match ent {
                Ok(e) => e,
                Err(e) => {
                    let err = entry_error(&self.root.join(&node.rel), "read directory", e);
                    self.fail(w, &node, err);
                    break;
                }
            };
            let name = ent.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            let is_dir = match ent.file_type() {
                FileType::Directory => true,
                FileType::Unknown => match statx_at(node.fd.as_fd(), name) {
                    Ok(s) => FileType::from_raw_mode(s.stx_mode.into()) == FileType::Directory,
                    Err(_) => false,
                },
                _ => false,
            };
            if !is_dir {
                match rustix::fs::unlinkat(&node.fd, name, AtFlags::empty()) {
                    Ok(()) => {
                        w.sum.files += 1;
                        self.progress.on_entry(0);
                        continue;
                    }
                    Err(Errno::NOENT) if self.o.force => continue,
                    // It became a directory meanwhile.
                    Err(Errno::ISDIR) => {}
                    Err(e) => {
                        let path = self
                            .root
                            .join(&node.rel)
                            .join(OsStr::from_bytes(name.to_bytes()));
                        self.fail(w, &node, entry_error(&path, "remove", e));
                        continue;
                    }
                }
            }
            node.pending.fetch_add(1, Ordering::AcqRel);
            let lane = self.shift.map_or(0, |s| (ent.ino() >> s) as usize);
            self.queue.push(
                lane,
                Task::Open {
                    parent: node.clone(),
                    name: name.to_owned(),
                },
            );
        }
        w.dirbuf = buf;
        self.finish(w, node);
    }

    /// Remove the directory `name` of `parent` (shown as `path`) and all
    /// below it, depth first, holding at most two descriptors whatever the
    /// depth: go down into the first subdirectory, and when a directory is
    /// empty, open its parent again through `..` (checked to be the
    /// directory we came from), remove it, and list the parent again.
    /// Entries that cannot be removed are reported and skipped. Returns
    /// whether everything went.
    fn remove_frugally(
        &self,
        w: &mut Worker,
        parent: &OwnedFd,
        name: &CString,
        path: &Path,
    ) -> bool {
        // The names from `parent` down, each with its directory's identity
        // and the entries below it that must stay.
        struct Level {
            name: CString,
            id: (u64, u64),
            skip: Vec<CString>,
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
        let path_of = |stack: &[Level], leaf: Option<&CStr>| {
            let mut p = path.parent().unwrap_or(Path::new("")).to_path_buf();
            for l in stack {
                p.push(OsStr::from_bytes(l.name.to_bytes()));
            }
            if let Some(n) = leaf {
                p.push(OsStr::from_bytes(n.to_bytes()));
            }
            p
        };
        let mut ok = true;
        let fail = |w: &mut Worker, p: PathBuf, op: &'static str, e: Errno| {
            let err = entry_error(&p, op, e);
            self.progress.on_error(&err);
            w.sum.errors.push(err);
        };
        let open = |dir: BorrowedFd<'_>, n: &CStr| {
            rustix::fs::openat(
                dir,
                n,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::empty(),
            )
        };
        let mut cur = match open(parent.as_fd(), name) {
            Ok(fd) => fd,
            Err(Errno::NOENT) if self.o.force => return true,
            Err(e) => {
                fail(w, path.to_path_buf(), "open directory", e);
                return false;
            }
        };
        let Ok(id) = id_of(&cur) else {
            fail(w, path.to_path_buf(), "stat", Errno::IO);
            return false;
        };
        let mut stack = vec![Level {
            name: name.clone(),
            id,
            skip: Vec::new(),
        }];
        let mut buf = std::mem::take(&mut w.dirbuf);
        buf.resize(256 * 1024, MaybeUninit::uninit());
        loop {
            // Unlink what is not a directory; find a subdirectory to enter.
            let mut sub: Option<CString> = None;
            let mut stays: Vec<CString> = Vec::new();
            {
                let skip = &stack.last().expect("a level").skip;
                let mut d = RawDir::new(&cur, &mut buf);
                while let Some(ent) = d.next() {
                    let ent = match ent {
                        Ok(e) => e,
                        Err(e) => {
                            fail(w, path_of(&stack, None), "read directory", e);
                            ok = false;
                            break;
                        }
                    };
                    let n = ent.file_name();
                    if n == c"." || n == c".." || skip.iter().any(|s| s.as_c_str() == n) {
                        continue;
                    }
                    let is_dir = match ent.file_type() {
                        FileType::Directory => true,
                        FileType::Unknown => statx_at(cur.as_fd(), n).is_ok_and(|s| {
                            FileType::from_raw_mode(s.stx_mode.into()) == FileType::Directory
                        }),
                        _ => false,
                    };
                    if !is_dir {
                        match rustix::fs::unlinkat(&cur, n, AtFlags::empty()) {
                            Ok(()) => {
                                w.sum.files += 1;
                                self.progress.on_entry(0);
                                continue;
                            }
                            Err(Errno::NOENT) if self.o.force => continue,
                            Err(Errno::ISDIR) => {}
                            Err(e) => {
                                fail(w, path_of(&stack, Some(n)), "remove", e);
                                ok = false;
                                stays.push(n.to_owned());
                                continue;
                            }
                        }
                    }
                    sub = Some(n.to_owned());
                    break;
                }
            }
            stack.last_mut().expect("a level").skip.extend(stays);
            if let Some(n) = sub {
                let entered = open(cur.as_fd(), &n)
                    .map_err(|e| (e, "open directory"))
                    .and_then(|fd| {
                        let here = dir::mount_id(fd.as_fd()).ok().flatten();
                        if self.mount.is_some() && here != self.mount {
                            return Err((Errno::XDEV, "not entered (a mount point)"));
                        }
                        let id = id_of(&fd).map_err(|e| (e, "stat"))?;
                        Ok((fd, id))
                    });
                match entered {
                    Ok((fd, id)) => {
                        cur = fd;
                        stack.push(Level {
                            name: n,
                            id,
                            skip: Vec::new(),
                        });
                    }
                    Err((Errno::NOENT, _)) if self.o.force => {}
                    Err((e, op)) => {
                        fail(w, path_of(&stack, Some(&n)), op, e);
                        ok = false;
                        stack.last_mut().expect("a level").skip.push(n);
                    }
                }
                continue;
            }
            // `cur` is empty but for what must stay: remove it, go up.
            let done = stack.pop().expect("a level");
            let up = if stack.is_empty() {
                None
            } else {
                match open(cur.as_fd(), c"..") {
                    Ok(fd) if id_of(&fd).ok() == Some(stack.last().expect("a level").id) => {
                        Some(fd)
                    }
                    Ok(_) => {
                        // Moved meanwhile: stop rather than remove elsewhere.
                        fail(
                            w,
                            path_of(&stack, None),
                            "find the parent again (the tree moved)",
                            Errno::STALE,
                        );
                        w.dirbuf = buf;
                        return false;
                    }
                    Err(e) => {
                        fail(w, path_of(&stack, None), "open directory", e);
                        w.dirbuf = buf;
                        return false;
                    }
                }
            };
            let pfd = up.as_ref().unwrap_or(parent);
            if done.skip.is_empty() {
                match rustix::fs::unlinkat(pfd, &done.name, AtFlags::REMOVEDIR) {
                    Ok(()) => {
                        w.sum.directories += 1;
                        self.progress.on_entry(0);
                    }
                    Err(Errno::NOENT) if self.o.force => {}
                    Err(e) => {
                        fail(w, path_of(&stack, Some(&done.name)), "remove directory", e);
                        ok = false;
                        if let Some(l) = stack.last_mut() {
                            l.skip.push(done.name.clone());
                        }
                    }
                }
            } else if let Some(l) = stack.last_mut() {
                l.skip.push(done.name.clone());
            }
            match up {
                Some(fd) => cur = fd,
                None => break,
            }
        }
        w.dirbuf = buf;
        ok
    }

    /// One child of `node` is done: when none is left, remove the directory
    /// from its parent and go up.
    fn finish(&self, w: &mut Worker, node: Arc<Node>) {
        let mut cur = node;
        loop {
            if cur.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
                return;
            }
            let failed = cur.failed.load(Ordering::Relaxed);
            let (pfd, up) = match &cur.parent {
                Parent::Node(p) => (p.fd.as_fd(), Some(p.clone())),
                Parent::Top(fd) => (fd.as_fd(), None),
            };
            if failed {
                // The error below is the one to report.
                if let Some(p) = &up {
                    p.failed.store(true, Ordering::Relaxed);
                }
            } else {
                match rustix::fs::unlinkat(pfd, &cur.name, AtFlags::REMOVEDIR) {
                    Ok(()) => {
                        w.sum.directories += 1;
                        self.progress.on_entry(0);
                    }
                    Err(Errno::NOENT) if self.o.force => {}
                    Err(e) => {
                        let err = entry_error(&self.root.join(&cur.rel), "remove directory", e);
                        self.progress.on_error(&err);
                        w.sum.errors.push(err);
                        if let Some(p) = &up {
                            p.failed.store(true, Ordering::Relaxed);
                        }
                    }
                }
            }
            match up {
                Some(p) => cur = p,
                None => return,
            }
        }
    }
}
