//! The walk that copy and remove share.
//!
//! Both walk a tree the same way. A directory is *entered* (opened relative
//! to its parent's descriptor, without following a symlink), *listed*
//! (`getdents64` into a large buffer: what is not a directory is handled
//! on the spot, each subdirectory becomes a child to enter), and *left*
//! once its last child is done (the copy gives it its metadata, the remove
//! unlinks it).
//!
//! How the children are scheduled is a property of the walk, set by the
//! descriptor [`Budget`]:
//! - within it, children go to a queue shared by the workers; a directory
//!   keeps its descriptors until its last child is done, and finishing
//!   walks up the chain of [`Node`]s ([`child_done`]);
//! - past it, the worker that meets a child walks that subtree itself,
//!   depth first ([`descend`]), with the descriptors of one directory open
//!   at a time: the directories above are closed and found again through
//!   `..` ([`reopen_parent`]), checked to be the directory they were.

use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::ops::ControlFlow;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use cowkit_fs::dir::{dev_ino, statx_at};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, RawDirEntry};
use rustix::io::Errno;

/// Device and inode: what a directory found again must still be.
pub(crate) type Id = (u64, u64);

/// The size of the buffer `getdents64` fills.
const DIRBUF: usize = 256 * 1024;

/// The device and inode of the open file `fd`.
pub(crate) fn identity(fd: BorrowedFd<'_>) -> rustix::io::Result<Id> {
    rustix::fs::statx(
        fd,
        c"",
        AtFlags::EMPTY_PATH,
        rustix::fs::StatxFlags::BASIC_STATS,
    )
    .map(|s| dev_ino(&s))
}

/// Open the directory `name` of `dir`, without following a symlink.
pub(crate) fn open_subdir(dir: BorrowedFd<'_>, name: &CStr) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// Open the parent of the open directory `dir` again, through `..`, and
/// check that it is the directory `want`: `ESTALE` when the tree was moved
/// meanwhile, so that a walk never goes on somewhere else.
pub(crate) fn reopen_parent(dir: BorrowedFd<'_>, want: Id) -> rustix::io::Result<OwnedFd> {
    let up = open_subdir(dir, c"..")?;
    if identity(up.as_fd())? != want {
        return Err(Errno::STALE);
    }
    Ok(up)
}

/// What a failed [`reopen_parent`] was doing, for its error.
pub(crate) fn reopen_op(e: Errno) -> &'static str {
    if e == Errno::STALE {
        "find the directory again (the tree moved)"
    } else {
        "open the parent directory again"
    }
}

/// Whether the entry `name` of `dir`, listed as `listed`, is a directory
/// (asked with `statx` where the filesystem does not say; an entry that
/// cannot be stat'd is not one).
pub(crate) fn is_dir(dir: BorrowedFd<'_>, name: &CStr, listed: FileType) -> bool {
    match listed {
        FileType::Directory => true,
        FileType::Unknown => statx_at(dir, name)
            .is_ok_and(|s| FileType::from_raw_mode(s.stx_mode.into()) == FileType::Directory),
        _ => false,
    }
}

/// Call `f` on every entry of the open directory `dir` but `.` and `..`,
/// until it breaks; `buf` is the worker's buffer, kept between calls.
pub(crate) fn for_each_entry(
    dir: BorrowedFd<'_>,
    buf: &mut Vec<MaybeUninit<u8>>,
    mut f: impl FnMut(&RawDirEntry<'_>) -> ControlFlow<()>,
) -> rustix::io::Result<()> {
    buf.resize(DIRBUF, MaybeUninit::uninit());
    let mut entries = RawDir::new(dir, buf.as_mut_slice());
    while let Some(ent) = entries.next() {
        let ent = ent?;
        let name = ent.file_name();
        if name == c"." || name == c".." {
            continue;
        }
        if f(&ent).is_break() {
            break;
        }
    }
    Ok(())
}

/// The directory descriptors a walk's nodes hold, and how many they may:
/// past that, subtrees are walked with [`descend`], so any depth works
/// within a low open-file limit.
pub(crate) struct Budget {
    held: Arc<AtomicUsize>,
    max: usize,
}

impl Budget {
    /// Half of what the open-file limit leaves after `reserve`.
    pub fn new(reserve: usize) -> Budget {
        Budget {
            held: Arc::new(AtomicUsize::new(0)),
            max: cowkit_fs::dir::dir_fd_budget(reserve),
        }
    }

    /// Count one more held descriptor, until the guard is dropped.
    pub fn hold(&self) -> Held {
        self.held.fetch_add(1, Ordering::Relaxed);
        Held(self.held.clone())
    }

    /// Whether the next subtree is walked with few descriptors.
    pub fn spent(&self) -> bool {
        self.held.load(Ordering::Relaxed) >= self.max
    }
}

/// One directory descriptor counted by a [`Budget`].
pub(crate) struct Held(Arc<AtomicUsize>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A directory of the queued walk, held by its queued children.
pub(crate) trait Node: Sized {
    /// 1 while it is being listed, plus one per child not done.
    fn pending(&self) -> &AtomicUsize;
    /// The directory holding this one, when it is a node too.
    fn parent(&self) -> Option<&Arc<Self>>;
}

/// One child of `node` is done (or its listing): `leave` each directory
/// whose last child this was, going up.
pub(crate) fn child_done<N: Node>(node: Arc<N>, mut leave: impl FnMut(&N)) {
    let mut cur = node;
    loop {
        if cur.pending().fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        leave(&cur);
        match cur.parent() {
            Some(p) => cur = p.clone(),
            None => return,
        }
    }
}

/// A subtree walked depth first with the descriptors of one directory
/// open at a time (see [`descend`]).
pub(crate) trait Descent {
    /// An entered directory's descriptors (and what its children need).
    type Open;
    /// What is kept of a directory while the walk is below it: no
    /// descriptor, its identity among the rest.
    type Level;
    /// Enter the next child of the directory `open` (at `level`); `None`
    /// when none is left. Children that fail are reported and skipped.
    fn next_child(
        &mut self,
        level: &mut Self::Level,
        open: &Self::Open,
    ) -> Option<(Self::Open, Self::Level)>;
    /// Find the directory `up` again from its child `open`, through `..`,
    /// with [`reopen_parent`].
    fn reopen(&mut self, open: &Self::Open, up: &Self::Level) -> rustix::io::Result<Self::Open>;
    /// Every child of `open` is done: finish it. `up` is its parent, found
    /// again; `None` for the directory the descent started from.
    fn leave(
        &mut self,
        level: Self::Level,
        open: Self::Open,
        up: Option<(&Self::Open, &mut Self::Level)>,
    );
    /// `up` could not be found again ([`reopen_parent`]'s error): the
    /// descent ends.
    fn lost(&mut self, up: &Self::Level, e: Errno);
    /// Whether the walk was stopped.
    fn stopped(&self) -> bool {
        false
    }
}

/// Walk the subtree of the entered directory `first` depth first: enter
/// a child and close the directory above; when a directory is done, find
/// its parent again through `..` and go on there.
pub(crate) fn descend<D: Descent>(d: &mut D, first: (D::Open, D::Level)) {
    let mut stack = vec![(Some(first.0), first.1)];
    while !d.stopped() {
        let Some((open, level)) = stack.last_mut() else {
            return;
        };
        let cur = open.as_ref().expect("the current directory is open");
        if let Some((child, child_level)) = d.next_child(level, cur) {
            // This directory's descriptors close; `..` finds them again.
            *open = None;
            stack.push((Some(child), child_level));
            continue;
        }
        let (open, level) = stack.pop().expect("a level");
        let open = open.expect("the current directory is open");
        let Some((up_open, up_level)) = stack.last_mut() else {
            d.leave(level, open, None);
            return;
        };
        match d.reopen(&open, up_level) {
            Ok(found) => {
                d.leave(level, open, Some((&found, up_level)));
                *up_open = Some(found);
            }
            Err(e) => return d.lost(up_level, e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28: the one `..` re-find that both walks use refuses a
    /// directory that was moved away from the parent it was opened in.
    #[test]
    fn reopen_parent_checks_identity() {
        let Some(t) = cowkit_testutil::scratch(cowkit_testutil::Fs::Tmpfs) else {
            return;
        };
        let top = t.path();
        std::fs::create_dir_all(top.join("a/b")).unwrap();
        std::fs::create_dir(top.join("c")).unwrap();
        let open = |p: &std::path::Path| cowkit_fs::dir::open_dir(rustix::fs::CWD, p, p).unwrap();
        let a = open(&top.join("a"));
        let b = open(&top.join("a/b"));
        let a_id = identity(a.as_fd()).unwrap();
        let up = reopen_parent(b.as_fd(), a_id).unwrap();
        assert_eq!(identity(up.as_fd()).unwrap(), a_id);
        std::fs::rename(top.join("a/b"), top.join("c/b")).unwrap();
        assert_eq!(reopen_parent(b.as_fd(), a_id).err(), Some(Errno::STALE));
    }
}
