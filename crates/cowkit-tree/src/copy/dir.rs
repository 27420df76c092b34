//! Directories of the copy: made, listed, finished once their children
//! are done, in the queued walk or, past the descriptor budget, in the
//! depth-first descent ([`walk::descend`]).

use std::ffi::{CStr, CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cowkit_fs::dir as fsdir;
use cowkit_fs::meta::{Current, On, Xattr};
use rustix::fs::{FileType, Mode};
use rustix::io::Errno;

use super::listed::{stat_entry, Entry, Src};
use super::{fail, fail_io, Ctx, Fail, Task, Worker};
use crate::walk::{self, Descent, Held, Id};

/// What new entries of a destination directory get from it.
#[derive(Clone, Copy, Debug)]
pub(super) struct NewEntries {
    /// Their group (the directory's if it is setgid).
    pub gid: u32,
    /// The directory is setgid: new subdirectories are too.
    pub setgid: bool,
    /// They get exactly the creation mode less the umask (no default ACL
    /// can apply).
    pub exact_modes: bool,
}

/// A destination directory being filled.
pub(super) struct DirNode {
    pub dst: OwnedFd,
    /// Counted in the budget while the queued walk holds it.
    _held: Option<Held>,
    /// The directory holding it, in the queued walk.
    parent: Option<Arc<DirNode>>,
    /// 1 while it is being listed, plus one per subdirectory not done.
    pending: AtomicUsize,
    /// Path relative to the top of the copy.
    pub rel: PathBuf,
    pub new: NewEntries,
    /// Metadata to give the directory once its children are done.
    finish: Option<DirFinish>,
}

impl walk::Node for DirNode {
    fn pending(&self) -> &AtomicUsize {
        &self.pending
    }
    fn parent(&self) -> Option<&Arc<Self>> {
        self.parent.as_ref()
    }
}

impl DirNode {
    /// The node of the open directory `dst`, with nothing to finish.
    pub fn open(dst: OwnedFd, rel: PathBuf, new: NewEntries) -> DirNode {
        DirNode {
            dst,
            _held: None,
            parent: None,
            pending: AtomicUsize::new(1),
            rel,
            new,
            finish: None,
        }
    }

    /// This node in the queued walk: below `parent`, counted by `held`.
    pub fn below(self, parent: Arc<DirNode>, held: Held) -> DirNode {
        DirNode {
            _held: Some(held),
            parent: Some(parent),
            ..self
        }
    }
}

/// The metadata a directory gets once its children are done.
pub(super) struct DirFinish {
    src: Src,
    xattrs: Vec<Xattr>,
    /// What the directory has now.
    owner: (u32, u32),
    mode: u32,
}

/// A source subdirectory met in a listing: the queued walk's work item.
pub(super) struct Child {
    parent: Arc<DirNode>,
    src_dir: Arc<OwnedFd>,
    name: CString,
    st: Src,
}

/// A source directory, open, to be made in a destination directory.
pub(super) struct SrcDir<'a> {
    fd: OwnedFd,
    name: &'a CStr,
    st: Src,
    /// Its path relative to the top of the copy.
    rel: PathBuf,
}

impl<'a> SrcDir<'a> {
    pub fn new(fd: OwnedFd, name: &'a CStr, st: Src, rel: PathBuf) -> SrcDir<'a> {
        SrcDir { fd, name, st, rel }
    }
}

/// A directory of the descent, while the walk is below it.
struct Level {
    src_id: Id,
    dst_id: Id,
    rel: PathBuf,
    new: NewEntries,
    finish: Option<DirFinish>,
    /// Its subdirectories, listed when it was entered, and the next one.
    subdirs: Vec<(CString, Src)>,
    next: usize,
}

/// The copy's side of [`walk::descend`]: one worker, one directory's two
/// descriptors (source and destination) open at a time.
struct Frugal<'c, 'a> {
    ctx: &'c Ctx<'a>,
    w: &'c mut Worker,
}

impl Descent for Frugal<'_, '_> {
    type Open = (DirNode, OwnedFd);
    type Level = Level;

    fn next_child(&mut self, level: &mut Level, open: &Self::Open) -> Option<(Self::Open, Level)> {
        let (node, src) = open;
        while let Some((name, st)) = level.subdirs.get(level.next).cloned() {
            level.next += 1;
            let rel = node.rel.join(OsStr::from_bytes(name.to_bytes()));
            let path = self.ctx.src_root.join(&rel);
            let entered = walk::open_subdir(src.as_fd(), &name)
                .map_err(|e| fail(&path, "open directory", e))
                .and_then(|fd| match walk::identity(fd.as_fd()) {
                    Ok(id) if id == (st.dev, st.ino) => Ok(fd),
                    _ => Err(fail(
                        &path,
                        "open directory (it was replaced)",
                        Errno::STALE,
                    )),
                })
                .and_then(|fd| {
                    let made = SrcDir::new(fd, &name, st, rel);
                    self.ctx.make_dir(self.w, node, made)
                })
                .and_then(|(node, src)| self.ctx.enter(self.w, node, src));
            match entered {
                Ok(child) => return Some(child),
                Err(f) => self.ctx.fail(self.w, f),
            }
        }
        None
    }

    fn reopen(&mut self, open: &Self::Open, up: &Level) -> rustix::io::Result<Self::Open> {
        let src = walk::reopen_parent(open.1.as_fd(), up.src_id)?;
        let dst = walk::reopen_parent(open.0.dst.as_fd(), up.dst_id)?;
        Ok((DirNode::open(dst, up.rel.clone(), up.new), src))
    }

    fn leave(&mut self, level: Level, open: Self::Open, _up: Option<(&Self::Open, &mut Level)>) {
        if let (Some(f), false) = (&level.finish, self.stopped()) {
            self.ctx.finish_meta(self.w, &open.0, f);
        }
    }

    fn lost(&mut self, up: &Level, e: Errno) {
        let path = self.ctx.src_root.join(&up.rel);
        self.ctx.fail(self.w, fail(&path, walk::reopen_op(e), e));
    }

    fn stopped(&self) -> bool {
        self.ctx.queue.stopped()
    }
}

impl Ctx<'_> {
    /// Copy the subdirectory `c`: make it, then list it in the queued
    /// walk, or, past the descriptor budget, copy its subtree depth first.
    pub(super) fn open_child(&self, w: &mut Worker, c: Child) {
        let Child {
            parent,
            src_dir,
            name,
            st,
        } = c;
        let rel = parent.rel.join(OsStr::from_bytes(name.to_bytes()));
        let path = self.src_root.join(&rel);
        let made = fsdir::open_dir(&*src_dir, name.as_c_str(), &path)
            .map_err(|e| fail_io(&e))
            .and_then(|fd| self.make_dir(w, &parent, SrcDir::new(fd, &name, st, rel)));
        drop(src_dir);
        match made {
            Ok((node, src)) if self.budget.spent() => {
                match self.enter(w, node, src) {
                    Ok(first) => walk::descend(
                        &mut Frugal {
                            ctx: self,
                            w: &mut *w,
                        },
                        first,
                    ),
                    Err(f) => self.fail(w, f),
                }
                self.finish_dir(w, parent);
            }
            Ok((node, src)) => {
                // Listed in the lane of its allocation group.
                let node = Arc::new(node.below(parent, self.budget.hold()));
                self.queue.push(self.lane(&node), Task::List { node, src });
            }
            Err(f) => {
                self.fail(w, f);
                self.finish_dir(w, parent);
            }
        }
    }

    /// Enter a directory of the descent: its subdirectories listed, the
    /// rest of its entries copied.
    fn enter(
        &self,
        w: &mut Worker,
        mut node: DirNode,
        src: OwnedFd,
    ) -> Result<((DirNode, OwnedFd), Level), Fail> {
        let dst_id = walk::identity(node.dst.as_fd())
            .map_err(|e| fail(&self.dst_root.join(&node.rel), "stat", e))?;
        let finish = node.finish.take();
        let src_id = finish.as_ref().map_or((0, 0), |f| (f.src.dev, f.src.ino));
        let mut subdirs = Vec::new();
        self.list_entries(w, &node, &src, |n, st| subdirs.push((n.to_owned(), st)));
        let level = Level {
            src_id,
            dst_id,
            rel: node.rel.clone(),
            new: node.new,
            finish,
            subdirs,
            next: 0,
        };
        Ok(((node, src), level))
    }

    /// Create (or reuse) the destination directory for `src` in `parent`,
    /// and read what it will need from the open source directory.
    pub(super) fn make_dir(
        &self,
        w: &mut Worker,
        parent: &DirNode,
        src: SrcDir<'_>,
    ) -> Result<(DirNode, OwnedFd), Fail> {
        let SrcDir { fd, name, st, rel } = src;
        let dpath = self.dst_root.join(&rel);
        // Created with its final permissions where that is safe, so that
        // most directories need no chmod: without group and other access
        // while it still has the wrong owner, and writable by its creator
        // unless that is root, until its children are in.
        let mut perm = self.want_mode(&st) & 0o777;
        if self.o.preserve.owner && (st.uid, st.gid) != (self.euid, parent.new.gid) {
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
        let dfd = fsdir::open_dir(&parent.dst, name, &dpath).map_err(|e| fail_io(&e))?;
        let exact_modes = fresh && parent.new.exact_modes;
        let now = if exact_modes {
            self.new_dir_state(parent, perm)
        } else {
            None
        };
        let now = match now {
            Some(now) => now,
            None => {
                let dst_st = rustix::fs::fstat(&dfd).map_err(|e| fail(&dpath, "stat", e))?;
                Current {
                    owner: Some((dst_st.st_uid, dst_st.st_gid)),
                    mode: Some(dst_st.st_mode & 0o7777),
                }
            }
        };
        let xattrs = self.read_xattrs(w, On::Fd(fd.as_fd()), &self.src_root.join(&rel))?;
        w.sum.directories += 1;
        self.progress.on_entry(0);
        let (owner, mode) = (now.owner.unwrap_or_default(), now.mode.unwrap_or_default());
        let setgid = mode & 0o2000 != 0;
        let new = NewEntries {
            gid: if setgid { owner.1 } else { self.egid },
            setgid,
            exact_modes,
        };
        let mut node = DirNode::open(dfd, rel, new);
        node.finish = Some(DirFinish {
            src: st,
            xattrs,
            owner,
            mode,
        });
        Ok((node, fd))
    }

    /// What the kernel gave a new directory, known without asking where no
    /// default ACL can apply: the umask is known, the group and the setgid
    /// bit come from the parent.
    fn new_dir_state(&self, parent: &DirNode, perm: u32) -> Option<Current> {
        let u = self.pumask?;
        let sgid = if parent.new.setgid { 0o2000 } else { 0 };
        Some(Current {
            owner: Some((self.euid, parent.new.gid)),
            mode: Some((perm & !u) | sgid),
        })
    }

    /// Read the source directory `src` and copy its entries into `node`;
    /// subdirectories go to the queue.
    pub(super) fn list(&self, w: &mut Worker, node: Arc<DirNode>, src: OwnedFd) {
        let src = Arc::new(src);
        let lane = self.lane(&node);
        self.list_entries(w, &node, &src, |name, st| {
            node.pending.fetch_add(1, Ordering::AcqRel);
            self.queue.push(
                lane,
                Task::Open(Child {
                    parent: node.clone(),
                    src_dir: src.clone(),
                    name: name.to_owned(),
                    st,
                }),
            );
        });
        self.finish_dir(w, node);
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
        let mut paths = std::mem::take(&mut w.paths);
        let roots = (self.src_root.as_path(), self.dst_root.as_path());
        let listed = walk::for_each_entry(src.as_fd(), &mut buf, |ent| {
            if self.queue.stopped() {
                return std::ops::ControlFlow::Break(());
            }
            let name = ent.file_name();
            paths.set(roots, &node.rel, OsStr::from_bytes(name.to_bytes()));
            match stat_entry(src.as_fd(), name, ent.file_type()) {
                Err(e) => self.fail(w, fail(&paths.src, "stat", e)),
                Ok((st, _)) if st.kind() == FileType::Directory => on_dir(name, st),
                Ok((st, opened)) => {
                    let e = Entry {
                        src_dir: src.as_fd(),
                        name,
                        dst_name: name,
                        st,
                        opened,
                        src_path: &paths.src,
                        dst_path: &paths.dst,
                    };
                    self.entry(w, node, e);
                }
            }
            std::ops::ControlFlow::Continue(())
        });
        if let Err(e) = listed {
            let path = self.src_root.join(&node.rel);
            self.fail(w, fail(&path, "read directory", e));
        }
        w.dirbuf = buf;
        w.paths = paths;
    }

    /// Give the directory `node` its metadata `f`, once its children are in.
    fn finish_meta(&self, w: &mut Worker, node: &DirNode, f: &DirFinish) {
        let path = self.dst_root.join(&node.rel);
        let now = Current {
            owner: Some(f.owner),
            mode: Some(f.mode),
        };
        match self.apply(
            On::Fd(node.dst.as_fd()),
            &path,
            &f.src,
            f.xattrs.clone(),
            now,
        ) {
            Ok(unsupported) => w.sum.xattrs_unsupported += unsupported,
            Err(f) => self.fail(w, f),
        }
    }

    /// One child of `node` is done (or `node`'s own listing): when nothing
    /// is left, give the directory its metadata, times last, and go up.
    pub(super) fn finish_dir(&self, w: &mut Worker, node: Arc<DirNode>) {
        walk::child_done(node, |d| {
            if let (Some(f), false) = (&d.finish, self.queue.stopped()) {
                self.finish_meta(w, d, f);
            }
        });
    }
}
