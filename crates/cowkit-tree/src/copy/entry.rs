//! What is not a directory: regular files (data through the `Copier`, or
//! written when small), symlinks, fifos, sockets and devices, hardlink
//! group members; and the metadata of every entry.

use std::ffi::{CStr, OsStr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use cowkit_fs::meta::{self, Current, Meta, On, Policy, Which, Xattr};
use cowkit_fs::{Chain, Handle, IoError, Method};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::dir::DirNode;
use super::links::Member;
use super::listed::{open_src, Entry, Src};
use super::{fail, fail_fs, fail_io, Ctx, Fail, Worker};

fn fail_changed(path: &Path) -> Fail {
    let e = IoError::new(
        "open",
        path,
        std::io::Error::other("it was replaced by something that is not the regular file stat'd"),
    );
    fail_io(&e)
}

/// Created but not filled yet.
enum Created {
    Regular { src: OwnedFd, dst: OwnedFd },
    Other,
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
    /// Copy the entry `e` (not a directory) into `node`.
    pub(super) fn entry(&self, w: &mut Worker, node: &DirNode, e: Entry<'_>) {
        match self.link_or_copy(w, node, e) {
            Ok(bytes) => self.progress.on_entry(bytes),
            Err(f) => self.fail(w, f),
        }
    }

    /// A later member of a hardlink group is linked to the first one's
    /// copy; anything else is copied.
    fn link_or_copy(&self, w: &mut Worker, node: &DirNode, e: Entry<'_>) -> Result<u64, Fail> {
        if !self.o.preserve.links || e.st.nlink <= 1 {
            return self.create_and_fill(w, node, e);
        }
        let claim = match self.links.claim((e.st.dev, e.st.ino)) {
            Member::Later { top, rel } => {
                let dir = node.dst.as_fd();
                replacing(dir, e.dst_name, || {
                    rustix::fs::linkat(&*top, &rel, dir, e.dst_name, AtFlags::empty())
                })
                .map_err(|err| fail(e.dst_path, "link", err))?;
                w.sum.hardlinks += 1;
                return Ok(0);
            }
            Member::First(claim) => claim,
        };
        let dst_name = e.dst_name;
        let r = self.create_and_fill(w, node, e);
        let at = match (&r, &self.top) {
            (Ok(_), Some(top)) => {
                let rel = node.rel.join(OsStr::from_bytes(dst_name.to_bytes()));
                Some((top.clone(), rel))
            }
            _ => None,
        };
        claim.settle(at);
        r
    }

    /// Create the copy of a non-directory entry and give it its data and
    /// metadata; a regular file that fails half-way loses its name.
    fn create_and_fill(
        &self,
        w: &mut Worker,
        node: &DirNode,
        mut e: Entry<'_>,
    ) -> Result<u64, Fail> {
        let created = self.create(node, &mut e)?;
        // The state the kernel gave the new entry.
        let mut now = Current {
            owner: Some((self.euid, node.new.gid)),
            mode: match self.pumask {
                Some(u) if node.new.exact_modes => Some(self.create_perm(&e.st) & !u),
                _ => None,
            },
        };
        let st = &e.st;
        let (on, bytes) = match &created {
            Created::Regular { src, dst } => {
                let bytes = match self.data(w, src, dst, &e) {
                    Ok(b) => b,
                    Err(f) => {
                        // Nothing half-copied keeps the name.
                        let _ = rustix::fs::unlinkat(&node.dst, e.dst_name, AtFlags::empty());
                        return Err(f);
                    }
                };
                let xattrs = self.read_xattrs(w, On::Fd(src.as_fd()), e.src_path)?;
                (On::Fd(dst.as_fd()), Some((bytes, xattrs)))
            }
            Created::Other => (On::At(node.dst.as_fd(), e.dst_name), None),
        };
        let (bytes, xattrs) = match bytes {
            Some(b) => b,
            None => (
                0,
                self.read_xattrs(w, On::At(e.src_dir, e.name), e.src_path)?,
            ),
        };
        if st.kind() == FileType::Symlink {
            now.mode = None;
        }
        w.sum.xattrs_unsupported += self.apply(on, e.dst_path, st, xattrs, now)?;
        match st.kind() {
            FileType::RegularFile => w.sum.files += 1,
            FileType::Symlink => w.sum.symlinks += 1,
            FileType::Fifo => w.sum.fifos += 1,
            FileType::Socket => w.sum.sockets += 1,
            _ => w.sum.devices += 1,
        }
        Ok(bytes)
    }

    /// The copyable extended attributes of a source entry.
    pub(super) fn read_xattrs(
        &self,
        w: &mut Worker,
        on: On<'_>,
        spath: &Path,
    ) -> Result<Vec<Xattr>, Fail> {
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

    /// The mode the copy must end with: without `preserve.mode`, as GNU
    /// `cp` without `-p` leaves it: the permission bits less the umask, and
    /// a directory's sticky bit (cp gives it to `mkdir`, which keeps it).
    pub(super) fn want_mode(&self, st: &Src) -> u32 {
        if self.o.preserve.mode {
            st.mode & 0o7777
        } else if st.kind() == FileType::Directory {
            st.mode & 0o1777 & !self.umask
        } else {
            st.mode & 0o777 & !self.umask
        }
    }

    /// Create the destination entry (for a regular file: open both; the
    /// source may have been opened already by [`stat_entry`]).
    fn create(&self, node: &DirNode, e: &mut Entry<'_>) -> Result<Created, Fail> {
        let dir = node.dst.as_fd();
        let dname = e.dst_name;
        let perm = Mode::from_raw_mode(self.create_perm(&e.st));
        match e.st.kind() {
            FileType::RegularFile => {
                let src = match e.opened.take() {
                    Some(fd) => fd,
                    None => open_stated(e)?,
                };
                let flags = OFlags::WRONLY
                    | OFlags::CREATE
                    | OFlags::EXCL
                    | OFlags::NOFOLLOW
                    | OFlags::CLOEXEC;
                let dst = replacing(dir, dname, || rustix::fs::openat(dir, dname, flags, perm))
                    .map_err(|err| fail(e.dst_path, "create", err))?;
                Ok(Created::Regular { src, dst })
            }
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(e.src_dir, e.name, Vec::new())
                    .map_err(|err| fail(e.src_path, "read symlink", err))?;
                replacing(dir, dname, || rustix::fs::symlinkat(&target, dir, dname))
                    .map_err(|err| fail(e.dst_path, "create symlink", err))?;
                Ok(Created::Other)
            }
            kind @ (FileType::Fifo
            | FileType::Socket
            | FileType::CharacterDevice
            | FileType::BlockDevice) => {
                replacing(dir, dname, || {
                    rustix::fs::mknodat(dir, dname, kind, perm, e.st.rdev)
                })
                .map_err(|err| fail(e.dst_path, "create special file", err))?;
                Ok(Created::Other)
            }
            _ => Err(fail(e.src_path, "copy (unknown file type)", Errno::INVAL)),
        }
    }

    /// Move the data of a regular file; returns the bytes.
    fn data(
        &self,
        w: &mut Worker,
        src: &OwnedFd,
        dst: &OwnedFd,
        e: &Entry<'_>,
    ) -> Result<u64, Fail> {
        let st = &e.st;
        let size = st.size;
        if size == 0 {
            return Ok(0);
        }
        let sparse = st.blocks * 512 < size;
        if size <= self.o.small_file_max && !sparse && self.o.chain != Chain::only(Method::Clone) {
            return write_small(w, src, dst, e);
        }
        let (sh, dh) = (Handle::new(src, e.src_path), Handle::new(dst, e.dst_path));
        let done = if w.copier.confirmed() == Some(Method::Clone) {
            // The pair is known to clone: one FICLONE, without the two
            // fstat calls of a Copier round.
            w.copier.copy_new_file(sh, dh, size, st.blocks)
        } else {
            w.copier.copy_file(sh, dh)
        }
        .map_err(|err| fail_fs(e.src_path, &err))?;
        w.sum.tally.record(&done);
        Ok(done.bytes.total())
    }

    /// Give `dst` (shown as `dpath`) the metadata of `st` in the order
    /// owner → xattrs → mode → times, skipping what would change nothing.
    /// `now` is what the entry has now. Returns the extended attributes
    /// the destination does not support.
    pub(super) fn apply(
        &self,
        dst: On<'_>,
        dpath: &Path,
        st: &Src,
        xattrs: Vec<Xattr>,
        now: Current,
    ) -> Result<u64, Fail> {
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
        let done =
            meta::apply_on(dst, dpath, &meta, now, policy).map_err(|e| fail_fs(dpath, &e))?;
        Ok(done.xattrs_unsupported as u64)
    }
}

/// Open the source of `e`, a regular file stat'd by name: it may have been
/// swapped for a fifo since. Opened without blocking, and used only if it
/// is still the file that was stat'd.
fn open_stated(e: &Entry<'_>) -> Result<OwnedFd, Fail> {
    let fd = open_src(e.src_dir, e.name).map_err(|err| fail(e.src_path, "open", err))?;
    let now = rustix::fs::fstat(&fd).map_err(|err| fail(e.src_path, "stat", err))?;
    let same = FileType::from_raw_mode(now.st_mode) == FileType::RegularFile
        && (now.st_dev, now.st_ino) == (e.st.dev, e.st.ino);
    if !same {
        return Err(fail_changed(e.src_path));
    }
    Ok(fd)
}

/// Copy a small regular file by reading it whole and writing it.
fn write_small(w: &mut Worker, src: &OwnedFd, dst: &OwnedFd, e: &Entry<'_>) -> Result<u64, Fail> {
    let size = e.st.size as usize;
    if w.buf.len() < size {
        w.buf.resize(size, 0);
    }
    let mut got = 0;
    while got < size {
        match rustix::io::read(src, &mut w.buf[got..size]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(Errno::INTR) => {}
            Err(err) => return Err(fail(e.src_path, "read", err)),
        }
    }
    let mut off = 0;
    while off < got {
        match rustix::io::write(dst, &w.buf[off..got]) {
            Ok(n) => off += n,
            Err(Errno::INTR) => {}
            Err(err) => return Err(fail(e.dst_path, "write", err)),
        }
    }
    w.sum.small_written += 1;
    w.sum.tally.record_written(got as u64);
    Ok(got as u64)
}
