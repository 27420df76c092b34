//! A source tree read for an image: every entry's metadata and extended
//! attributes, hardlink sets, and its regular files imported into the
//! store. Nothing is followed: symlinks are read as links (their targets
//! are data, wherever they point), every lookup is relative to an open
//! directory with `O_NOFOLLOW`, names are bytes (newlines included).

use std::collections::HashMap;
use std::ffi::{CStr, CString, OsStr, OsString};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use cowkit_fs::dir;
use cowkit_fs::meta::{On, Which, Xattr, XattrBuf};
use cowkit_fs::{Copier, IoError, Method};
use rustix::fs::{FileType, Statx, Timespec};

use crate::{Error, Result, Store, Summary};

/// An entry's type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symlink.
    Symlink,
    /// A fifo.
    Fifo,
    /// A socket.
    Socket,
    /// A character device.
    Char,
    /// A block device.
    Block,
}

/// One entry of a tree, in walk order (a directory before its entries).
#[derive(Clone, Debug)]
pub struct Entry {
    /// Path relative to the tree (empty for the tree's own directory).
    pub path: PathBuf,
    /// Type.
    pub kind: Kind,
    /// Permission bits with setuid, setgid and sticky.
    pub perm: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Access time.
    pub atime: Timespec,
    /// Modification time.
    pub mtime: Timespec,
    /// Extended attributes (ACLs and capabilities included).
    pub xattrs: Vec<Xattr>,
    /// A symlink's target.
    pub target: Option<OsString>,
    /// A device's number.
    pub rdev: u64,
    /// A regular file's size.
    pub size: u64,
    /// A regular file's object.
    pub digest: Option<String>,
    /// For a hardlink: the index of the first entry of its set.
    pub link: Option<usize>,
}

fn kind_of(t: FileType) -> Kind {
    match t {
        FileType::Directory => Kind::Dir,
        FileType::RegularFile => Kind::File,
        FileType::Symlink => Kind::Symlink,
        FileType::Fifo => Kind::Fifo,
        FileType::Socket => Kind::Socket,
        FileType::CharacterDevice => Kind::Char,
        _ => Kind::Block,
    }
}

/// Read the tree at `src`, importing its regular files into `store`.
pub fn read_tree(store: &Store, src: &Path) -> Result<(Vec<Entry>, Summary)> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Job>(64);
    let rx = std::sync::Mutex::new(rx);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let failed = std::sync::atomic::AtomicBool::new(false);
    let (walked, results) = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut copier = Copier::new(cowkit_fs::Chain::AUTO).with_retry_down(true);
                    let mut out = Vec::new();
                    loop {
                        let job = rx.lock().unwrap_or_else(|e| e.into_inner()).recv();
                        let Ok((idx, f, path)) = job else { break };
                        if failed.load(std::sync::atomic::Ordering::Relaxed) {
                            continue; // drain: the walk stops at its next send
                        }
                        let r = store.import_file(&f, &path, &mut copier);
                        if r.is_err() {
                            failed.store(true, std::sync::atomic::Ordering::Relaxed);
                        }
                        out.push((idx, r));
                    }
                    out
                })
            })
            .collect();
        let walked = walk(src, tx);
        let results: Vec<_> = handles
            .into_iter()
            .flat_map(|h| h.join().expect("an import worker panicked"))
            .collect();
        (walked, results)
    });
    let (mut entries, mut sum) = walked?;
    for (idx, r) in results {
        let imp = r?;
        let size = entries[idx].size;
        sum.files += 1;
        if imp.hashed {
            sum.bytes_hashed += size;
        } else {
            sum.digests_cached += 1;
        }
        if imp.new {
            sum.objects_new += 1;
            let m = match imp.method {
                Some(Method::Clone) => "clone",
                Some(Method::CopyFileRange) => "copy_file_range",
                _ => "read_write",
            };
            *sum.bytes_by_method.entry(m.into()).or_default() += size;
        } else {
            sum.objects_reused += 1;
        }
        entries[idx].digest = Some(imp.digest);
    }
    for i in 0..entries.len() {
        if let Some(first) = entries[i].link {
            entries[i].digest = entries[first].digest.clone();
        }
    }
    Ok((entries, sum))
}

/// A regular file to import: its entry, the open file, its path.
type Job = (usize, std::fs::File, PathBuf);

/// Walk `src`, sending its non-empty regular files to `jobs`.
fn walk(src: &Path, jobs: std::sync::mpsc::SyncSender<Job>) -> Result<(Vec<Entry>, Summary)> {
    let root = rustix::fs::open(
        src,
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(|e| IoError::new("open", src.to_path_buf(), e))?;
    let mut w = Walk {
        src,
        jobs,
        xbuf: XattrBuf::new(),
        entries: Vec::new(),
        links: HashMap::new(),
        sum: Summary::default(),
    };
    let st = rustix::fs::fstat(&root).map_err(|e| IoError::new("stat", src.to_path_buf(), e))?;
    let xattrs = w
        .xbuf
        .read(On::Fd(root.as_fd()), Which::Copyable)
        .map_err(|e| IoError::new("read extended attributes of", src.to_path_buf(), e))?;
    w.entries.push(Entry {
        path: PathBuf::new(),
        kind: Kind::Dir,
        perm: st.st_mode & 0o7777,
        uid: st.st_uid,
        gid: st.st_gid,
        atime: Timespec {
            tv_sec: st.st_atime,
            tv_nsec: st.st_atime_nsec as _,
        },
        mtime: Timespec {
            tv_sec: st.st_mtime,
            tv_nsec: st.st_mtime_nsec as _,
        },
        xattrs,
        target: None,
        rdev: 0,
        size: 0,
        digest: None,
        link: None,
    });
    w.dir(&root, Path::new(""))?;
    Ok((w.entries, w.sum))
}

struct Walk<'a> {
    src: &'a Path,
    jobs: std::sync::mpsc::SyncSender<Job>,
    xbuf: XattrBuf,
    entries: Vec<Entry>,
    links: HashMap<(u64, u64), usize>,
    sum: Summary,
}

impl Walk<'_> {
    fn dir(&mut self, fd: &OwnedFd, rel: &Path) -> Result<()> {
        let host = self.src.join(rel);
        let mut names = dir::read_names(fd, &host)?;
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, _) in names {
            let path = host.join(&name);
            let cname = CString::new(name.as_bytes()).map_err(|_| Error::Unsupported {
                path: path.clone(),
                why: "a NUL byte in its name",
            })?;
            let st = dir::statx_at(fd.as_fd(), &cname)
                .map_err(|e| IoError::new("stat", path.clone(), e))?;
            let rel_path = rel.join(&name);
            let mut e = self.entry(fd, &cname, &path, &st, rel_path.clone())?;
            match e.kind {
                Kind::File => self.file(fd, &name, &cname, path, &st, e)?,
                Kind::Symlink => {
                    let t = rustix::fs::readlinkat(fd, cname.as_c_str(), Vec::new())
                        .map_err(|e| IoError::new("read link", path.clone(), e))?;
                    e.target = Some(OsString::from_vec(t.into_bytes()));
                    self.entries.push(e);
                }
                Kind::Dir => {
                    self.entries.push(e);
                    let sub = dir::open_dir(fd, cname.as_c_str(), &path)?;
                    self.dir(&sub, &rel_path)?;
                }
                _ => self.entries.push(e),
            }
        }
        Ok(())
    }

    /// The entry `cname` of `fd` as `st` and its extended attributes say
    /// (refused when these include overlay's own).
    fn entry(
        &mut self,
        fd: &OwnedFd,
        cname: &CStr,
        path: &Path,
        st: &Statx,
        rel_path: PathBuf,
    ) -> Result<Entry> {
        let kind = kind_of(FileType::from_raw_mode(st.stx_mode.into()));
        let xattrs = self
            .xbuf
            .read(On::At(fd.as_fd(), cname), Which::Copyable)
            .map_err(|e| IoError::new("read extended attributes of", path.to_path_buf(), e))?;
        if xattrs
            .iter()
            .any(|x| x.name.as_bytes().starts_with(b"trusted.overlay."))
        {
            return Err(Error::Unsupported {
                path: path.to_path_buf(),
                why: "it carries trusted.overlay.* attributes, which an overlay image uses itself",
            });
        }
        Ok(Entry {
            path: rel_path,
            kind,
            perm: u32::from(st.stx_mode) & 0o7777,
            uid: st.stx_uid,
            gid: st.stx_gid,
            atime: Timespec {
                tv_sec: st.stx_atime.tv_sec,
                tv_nsec: st.stx_atime.tv_nsec as _,
            },
            mtime: Timespec {
                tv_sec: st.stx_mtime.tv_sec,
                tv_nsec: st.stx_mtime.tv_nsec as _,
            },
            xattrs,
            target: None,
            rdev: rustix::fs::makedev(st.stx_rdev_major, st.stx_rdev_minor),
            size: 0,
            digest: None,
            link: None,
        })
    }

    /// A regular file: a later name of a hardlink group (its digest is its
    /// first member's, once known), an empty file, or a file handed to the
    /// import workers (the bounded queue bounds the open files).
    fn file(
        &mut self,
        fd: &OwnedFd,
        name: &OsStr,
        cname: &CStr,
        path: PathBuf,
        st: &Statx,
        mut e: Entry,
    ) -> Result<()> {
        e.size = st.stx_size;
        let id = (
            rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
            st.stx_ino,
        );
        if st.stx_nlink > 1 {
            if let Some(&first) = self.links.get(&id) {
                e.link = Some(first);
                self.entries.push(e);
                return Ok(());
            }
            self.links.insert(id, self.entries.len());
        }
        if e.size == 0 {
            self.sum.files += 1;
            self.sum.empty_files += 1;
            self.entries.push(e);
            return Ok(());
        }
        let f = open_file(fd, name, cname, &path)?;
        if self.jobs.send((self.entries.len(), f, path)).is_err() {
            return Err(Error::Image("the import workers stopped".into()));
        }
        self.entries.push(e);
        Ok(())
    }
}

/// `name` (`cname`) in `fd` opened to be read, without following a
/// symlink; `Changed` when it is no longer a regular file there.
fn open_file(fd: &OwnedFd, name: &OsStr, cname: &CStr, path: &Path) -> Result<std::fs::File> {
    match name.to_str() {
        Some(n) => dir::open_read_opt(fd, n, path)?,
        None => {
            let (f, _) = dir::open_regular(|flags| {
                rustix::fs::openat(
                    fd,
                    cname,
                    flags | rustix::fs::OFlags::NOFOLLOW,
                    rustix::fs::Mode::empty(),
                )
            })
            .map_err(|e| IoError::new("open", path.to_path_buf(), e))?;
            Some(std::fs::File::from(f))
        }
    }
    .ok_or_else(|| Error::Changed(path.to_path_buf()))
}
