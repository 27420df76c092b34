//! The parallel tree remove: see [`remove()`].

use std::ffi::{CString, OsStr};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use cowkit_fs::dir::{self, dev_ino, statx_at};
use cowkit_fs::IoError;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, CWD};
use rustix::io::Errno;
use serde::Serialize;

use crate::queue::Queue;
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
}

impl Default for RemoveOptions {
    fn default() -> Self {
        RemoveOptions {
            threads: crate::default_threads(),
            force: false,
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

enum Task {
    Open { parent: Arc<Node>, name: CString },
}

struct Ctx<'a> {
    o: &'a RemoveOptions,
    progress: &'a dyn Progress,
    queue: Queue<Task>,
    root: PathBuf,
    /// The mount the removal stays on (`None`: the kernel does not say).
    mount: Option<u64>,
}

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
    let ctx = Ctx {
        o,
        progress,
        queue: Queue::new(),
        root: path.to_path_buf(),
        mount: dir::mount_id(fd.as_fd()).map_err(|e| io("stat", e))?,
    };
    let top = Arc::new(Node {
        fd,
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
    let workers = ctx.queue.run(
        o.threads,
        || Worker {
            dirbuf: Vec::new(),
            sum: RemoveSummary::default(),
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
                let node = Arc::new(Node {
                    fd,
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
            self.queue.push(Task::Open {
                parent: node.clone(),
                name: name.to_owned(),
            });
        }
        w.dirbuf = buf;
        self.finish(w, node);
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
