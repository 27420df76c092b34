//! The install target: the root being installed into (`Target`), and its
//! entries created inside it, in their parent directory (resolved
//! inside the root); metadata through `cowkit_fs::meta`.
//!
//! Nothing is seen before the verdict the install waits for (rpm's check,
//! [`crate::Gate`]). How an entry is made is decided in one place,
//! `Target::way`: in a new directory tree still under a temporary name
//! (`Stage`) it is made under its final name, unseen
//! (`placement::Way::Unseen`); anywhere else it is visible, which needs
//! the verdict (`Way::Visible` holds a [`Passed`]), and it is made
//! complete without a name and put over its final name in one step:
//! regular files as unnamed `cowkit_fs::dir::NewFile`s linked in place,
//! symlinks, hardlinks and nodes under a temporary name
//! (`cowkit_fs::dir::create_replacing`) renamed into place.
//! `Target::put` makes every kind of entry (`placement::Make`) that way.
//! The other visible changes (a touched entry, an entry removed where the
//! package has a directory) take the verdict too, and so does
//! `Target::publish`, which renames the new trees into place.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use cowkit_archive::files::{FileInfo, FileList, Kind, Name};
use cowkit_fs::dir;
use cowkit_fs::meta::{self, Meta};
use cowkit_fs::root::{RelPath, Root};
use cowkit_fs::Handle;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, Timespec};
use rustix::io::Errno;

use crate::owners::Owners;
pub(crate) use crate::placement::Place;
use crate::placement::{
    c_name, meta_at, remove_in_the_way, retouch, sys, At, Link, Make, NewRegular, Special, Way,
};
use crate::{Error, Passed, Result};

/// A directory of the root, and what entries created in it inherit.
struct Dir {
    /// Held open while the descriptor budget allows; opened again (inside
    /// the root) for each use otherwise.
    fd: Option<OwnedFd>,
    /// The group new entries get: the directory's own when it is setgid.
    new_gid: Option<u32>,
    /// Whether a default ACL (which replaces the umask) applies to new
    /// entries: then the creation mode cannot be trusted.
    default_acl: bool,
    /// Made by this install inside a tree still under a temporary name
    /// ([`Stage`]): nobody can see it yet, so entries are created in it
    /// directly under their final names.
    fresh: bool,
}

/// A directory the package brings that did not exist: built under a
/// temporary name in its (existing) parent, with everything the package
/// puts below it, and renamed into place by [`Target::publish`] once
/// complete. Until then no path of the root leads into it, so a file in
/// it can be created under its final name and still never be seen
/// partial; a failed install removes the whole tree, and one killed
/// leaves only the temporary name, which the next install sweeps.
struct Stage {
    /// The existing parent (relative to the root).
    parent: Vec<u8>,
    /// The directory's name there once published.
    name: OsString,
    /// Its temporary name until then.
    temp: String,
}

fn join(parent: &[u8], name: &[u8]) -> Vec<u8> {
    if parent.is_empty() {
        name.to_vec()
    } else {
        [parent, b"/", name].concat()
    }
}

/// The parent of the relative path `rel` and its last component.
fn split_last(rel: &[u8]) -> Option<(&[u8], &[u8])> {
    let i = rel.iter().rposition(|&b| b == b'/')?;
    Some((&rel[..i], &rel[i + 1..]))
}

/// `rel` with the prefix `top` replaced by `by`, when `top` is `rel` or
/// one of its parents.
fn replace_prefix(rel: &[u8], top: &[u8], by: &[u8]) -> Option<Vec<u8>> {
    let rest = rel.strip_prefix(top)?;
    if rest.is_empty() || rest.starts_with(b"/") {
        Some([by, rest].concat())
    } else {
        None
    }
}

/// A directory's descriptor: held, or opened again for one use.
pub(crate) enum DirFd<'a> {
    Held(&'a OwnedFd),
    Again(OwnedFd),
}

impl AsFd for DirFd<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            DirFd::Held(f) => f.as_fd(),
            DirFd::Again(f) => f.as_fd(),
        }
    }
}

/// The root being installed into, with the directories of the packages
/// opened once (as many as the open-file limit allows; the others are
/// opened again when used).
pub(crate) struct Target<'r> {
    pub root: &'r Root,
    pub owners: &'r Owners,
    dirs: HashMap<Vec<u8>, Dir>,
    /// New directory trees not renamed into place yet.
    stages: Vec<Stage>,
    /// The directories the package lists (relative paths): where one
    /// finds a file or a symlink that does not lead to a directory, it
    /// replaces it, as rpm does.
    pkg_dirs: std::collections::HashSet<Vec<u8>>,
    /// Regular files and hardlinks made in them (reported placed, and
    /// taken away again if the install fails before they are published).
    fresh_files: std::sync::atomic::AtomicU64,
    progress: &'r dyn crate::Progress,
    gate: Option<&'r crate::Gate>,
    euid: u32,
    egid: u32,
    umask: u32,
    /// Set no file capabilities (rpm's `--nocaps`).
    nocaps: bool,
}

/// Remove the temporary names (`.ck<pid>.<n>`) that an install killed
/// with SIGKILL left in `dir` (links and symlinks are made under one and
/// renamed into place; so is a file that replaces an existing one), once
/// per directory and process: one directory read each.
fn sweep_once(dir: &OwnedFd, st: &rustix::fs::Stat, path: &std::path::Path) -> Result<()> {
    use std::collections::HashSet;
    use std::sync::Mutex;
    static SWEPT: Mutex<Option<HashSet<(u64, u64)>>> = Mutex::new(None);
    let first = SWEPT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get_or_insert_with(HashSet::new)
        .insert((st.st_dev, st.st_ino));
    if first {
        dir::remove_stale_temporaries(dir.as_fd(), path)?;
    }
    Ok(())
}

/// `Some` refusal when `name` in `parent` is a symlink (now opened as
/// the directory `target`) that rpm 4.18 would not follow: one owned by
/// neither root nor the directory's owner (`fsmOpenat`, the fix for
/// CVE-2021-35939). As rpm does, the directory is opened before the link
/// is looked at: a link changed in between was changed by its owner or
/// root.
fn unsafe_symlink(
    parent: impl AsFd,
    name: &OsStr,
    target: &OwnedFd,
    path: &std::path::Path,
) -> Result<Option<Error>> {
    let link = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(sys("stat", path.to_path_buf()))?;
    if FileType::from_raw_mode(link.st_mode) != FileType::Symlink || link.st_uid == 0 {
        return Ok(None);
    }
    let dir = rustix::fs::fstat(target).map_err(sys("stat", path.to_path_buf()))?;
    Ok((link.st_uid != dir.st_uid).then(|| Error::UnsafeSymlink {
        path: path.to_path_buf(),
        link_uid: link.st_uid,
        dir_uid: dir.st_uid,
    }))
}

impl<'r> Target<'r> {
    pub fn new(
        root: &'r Root,
        owners: &'r Owners,
        progress: &'r dyn crate::Progress,
        gate: Option<&'r crate::Gate>,
    ) -> Target<'r> {
        Target {
            root,
            owners,
            dirs: HashMap::new(),
            stages: Vec::new(),
            pkg_dirs: Default::default(),
            fresh_files: Default::default(),
            progress,
            gate,
            euid: rustix::process::geteuid().as_raw(),
            egid: rustix::process::getegid().as_raw(),
            umask: dir::process_umask().unwrap_or(0o022),
            nocaps: false,
        }
    }

    /// Leave file capabilities unset, as rpm's `--nocaps` does (the
    /// database still records them).
    pub fn without_caps(mut self, nocaps: bool) -> Self {
        self.nocaps = nocaps;
        self
    }

    pub fn display(&self, p: &Place) -> PathBuf {
        self.root.display(&p.rel)
    }

    /// Validate every path, then create the package's directories and the
    /// parents of everything else (mode 0755 until [`Target::finish_dirs`]).
    /// A directory that does not exist yet is made under a temporary name
    /// in its parent, with its whole new subtree ([`Stage`]).
    pub fn prepare(
        &mut self,
        files: &FileList,
        rename: &HashMap<Name, OsString>,
        skip: &std::collections::HashSet<u32>,
    ) -> Result<Vec<Option<Place>>> {
        let places = files
            .files
            .iter()
            .map(|f| {
                if f.ghost || skip.contains(&f.index) {
                    Ok(None)
                } else {
                    Place::of(f, rename).map(Some)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        let mut wanted: Vec<&[u8]> = Vec::new();
        for (f, p) in files.files.iter().zip(&places) {
            let Some(p) = p else { continue };
            wanted.push(&p.parent);
            if f.kind == Kind::Directory {
                wanted.push(p.rel.as_bytes());
                self.pkg_dirs.insert(p.rel.as_bytes().to_vec());
            }
        }
        // With every parent, shallowest first: a directory is made after
        // its parent.
        let mut all: std::collections::HashSet<&[u8]> = std::collections::HashSet::new();
        for d in wanted {
            let mut d = d;
            while all.insert(d) {
                match split_last(d) {
                    Some((parent, _)) => d = parent,
                    None if d.is_empty() => break,
                    None => d = b"",
                }
            }
        }
        let mut all: Vec<&[u8]> = all.into_iter().collect();
        all.sort_unstable_by_key(|d| {
            (
                if d.is_empty() {
                    0
                } else {
                    d.iter().filter(|&&b| b == b'/').count() + 1
                },
                *d,
            )
        });
        // The reserve: files being written (one per worker), the root,
        // the package and the process's own.
        let budget = dir::dir_fd_budget(128);
        for d in all {
            if self.dirs.contains_key(d) {
                continue;
            }
            let (fd, fresh) = self.open_or_stage(d)?;
            let path = self.root.display(&RelPath::new(d)?);
            let st = rustix::fs::fstat(&fd).map_err(sys("stat", path.clone()))?;
            if !fresh {
                sweep_once(&fd, &st, &path)?;
            }
            let new_gid = (st.st_mode & 0o2000 != 0).then_some(st.st_gid);
            let default_acl = meta::may_have_default_acl(&fd);
            let fd = (self.dirs.len() < budget).then_some(fd);
            self.dirs.insert(
                d.to_vec(),
                Dir {
                    fd,
                    new_gid,
                    default_acl,
                    fresh,
                },
            );
        }
        Ok(places)
    }

    /// Open the directory `rel`, whose parent is known already (or which
    /// is the root): an existing one (symlinks followed inside the root,
    /// as rpm does), else a new one, made directly in a parent that is
    /// new itself or under a temporary name (a new [`Stage`]). Returns it
    /// and whether it is new.
    fn open_or_stage(&mut self, rel: &[u8]) -> Result<(OwnedFd, bool)> {
        let Some((parent, name)) =
            split_last(rel).or((!rel.is_empty()).then_some((b"".as_slice(), rel)))
        else {
            return Ok((self.root.open_dir(&RelPath::new("")?)?, false));
        };
        let path = self.root.display(&RelPath::new(rel)?);
        let pfd = self.dir_at(parent)?;
        if self.dirs[parent].fresh {
            let fd = dir::mkdir_open(&pfd, OsStr::from_bytes(name), 0o755, &path)?;
            return Ok((fd, true));
        }
        // Another package of the transaction, placed beside this one,
        // may publish the same directory between the open and the stat
        // below: a directory found there then is opened again.
        let mut tries = 0;
        loop {
            match self.root.open_dir(&RelPath::new(rel)?) {
                Ok(fd) => match unsafe_symlink(&pfd, OsStr::from_bytes(name), &fd, &path)? {
                    None => return Ok((fd, false)),
                    // rpm does not follow it. A directory of the package
                    // replaces it (`fsmVerify`); any other path through it
                    // fails as rpm's `ensureDir` fails.
                    Some(_) if self.pkg_dirs.contains(rel) => {
                        remove_in_the_way(&pfd, OsStr::from_bytes(name), &path, &self.verdict()?)?;
                    }
                    Some(e) => return Err(e),
                },
                Err(e)
                    if matches!(
                        cowkit_fs::error::errno_of(&e),
                        Some(Errno::NOENT) | Some(Errno::NOTDIR)
                    ) =>
                {
                    // A directory of the package where a file, or a
                    // symlink that leads to no directory, is: rpm removes
                    // it and makes the directory (`fsmVerify`). Elsewhere
                    // the error stands.
                    let there = dir::stat_at(&pfd, OsStr::from_bytes(name))
                        .map_err(sys("stat", path.clone()))?;
                    match there {
                        None => {}
                        Some(st) if st.st_mode & 0o170000 == 0o040000 && tries < 8 => {
                            tries += 1;
                            continue;
                        }
                        Some(st)
                            if self.pkg_dirs.contains(rel) && st.st_mode & 0o170000 != 0o040000 =>
                        {
                            remove_in_the_way(
                                &pfd,
                                OsStr::from_bytes(name),
                                &path,
                                &self.verdict()?,
                            )?;
                        }
                        Some(_) => return Err(e.into()),
                    }
                }
                Err(e) => return Err(e.into()),
            }
            break;
        }
        let ppath = self.root.display(&RelPath::new(parent)?);
        let (temp, fd) = dir::mkdir_temp(&pfd, 0o755, &ppath)?;
        self.stages.push(Stage {
            parent: parent.to_vec(),
            name: OsStr::from_bytes(name).to_os_string(),
            temp,
        });
        Ok((fd, true))
    }

    /// Where the directory `rel` is now: under its stage's temporary name
    /// until [`Target::publish`].
    fn physical(&self, rel: &[u8]) -> Vec<u8> {
        self.stages
            .iter()
            .find_map(|st| {
                replace_prefix(
                    rel,
                    &join(&st.parent, st.name.as_bytes()),
                    &join(&st.parent, st.temp.as_bytes()),
                )
            })
            .unwrap_or_else(|| rel.to_vec())
    }

    /// Rename every new directory tree into place, with the verdict of
    /// the transaction's check ([`Target::verdict`]): from now on the
    /// package's new directories and what is in them can be seen. A name
    /// that appeared meanwhile (another package of the transaction, or
    /// another process, made the same directory) gets the tree's entries
    /// moved into it instead.
    pub fn publish(&mut self, _: Passed) -> Result<()> {
        while let Some(st) = self.stages.first() {
            let top = join(&st.parent, st.name.as_bytes());
            let path = self.root.display(&RelPath::new(&top)?);
            let pfd = self.root.open_dir(&RelPath::new(&st.parent)?)?;
            match rustix::fs::renameat_with(
                &pfd,
                st.temp.as_str(),
                &pfd,
                st.name.as_os_str(),
                rustix::fs::RenameFlags::NOREPLACE,
            ) {
                Ok(()) => {}
                Err(Errno::EXIST) => {
                    // What is there now, found as rpm would (a symlink
                    // to a directory inside the root counts).
                    let dst = self.root.open_dir(&RelPath::new(&top)?)?;
                    merge(pfd.as_fd(), st.temp.as_ref(), dst.as_fd(), &path)?;
                    // Directories that existed on both sides were
                    // emptied and removed: open them again by name.
                    for (rel, d) in self.dirs.iter_mut() {
                        if replace_prefix(rel, &top, b"").is_some() {
                            d.fd = None;
                        }
                    }
                }
                Err(e) => return Err(sys("rename into place", path)(e)),
            }
            self.stages.remove(0);
        }
        Ok(())
    }

    fn dir(&self, p: &Place) -> Result<DirFd<'_>> {
        self.dir_at(&p.parent)
    }

    fn dir_at(&self, rel: &[u8]) -> Result<DirFd<'_>> {
        match &self.dirs[rel].fd {
            Some(fd) => Ok(DirFd::Held(fd)),
            None => Ok(DirFd::Again(
                self.root.open_dir(&RelPath::new(self.physical(rel))?)?,
            )),
        }
    }

    /// Whether `p`'s directory is new and not published yet.
    fn in_fresh_dir(&self, p: &Place) -> bool {
        self.dirs.get(&p.parent).is_some_and(|d| d.fresh) && !self.stages.is_empty()
    }

    /// rpm's check of the transaction, waited for if it is still running
    /// ([`crate::Gate`]): the proof every step that changes what can be
    /// seen in the root takes.
    pub fn verdict(&self) -> Result<Passed> {
        crate::Gate::verdict_of(self.gate)
    }

    /// Owner, caps, mode and times of `f` as the header says, for an entry
    /// just created in its parent (owned by us, group inherited from a
    /// setgid parent).
    fn meta(&self, f: &FileInfo, path: &std::path::Path) -> Result<Meta> {
        let parent = split_last(&f.path).map_or(b"".as_slice(), |(d, _)| {
            let start = d.iter().position(|&b| b != b'/').unwrap_or(d.len());
            &d[start..]
        });
        let new_gid = self.dirs.get(parent).and_then(|d| d.new_gid);
        self.meta_as(f, path, self.euid, new_gid.unwrap_or(self.egid))
    }

    /// Owner, caps, mode and times of `f`, for an entry owned by
    /// `cur_uid:cur_gid`.
    fn meta_as(
        &self,
        f: &FileInfo,
        path: &std::path::Path,
        cur_uid: u32,
        cur_gid: u32,
    ) -> Result<Meta> {
        let uid = self.owners.uid(&f.user);
        let gid = self.owners.gid(&f.group);
        let t = Timespec {
            tv_sec: i64::from(f.mtime),
            tv_nsec: 0,
        };
        let mut mode = f.mode & 0o7777;
        if self.euid != 0 {
            // As cpio run by a user: entries keep our ownership. One that
            // should have belonged to someone else loses its setuid and
            // setgid bits (it would run with our privileges) and its file
            // capabilities (setting them needs CAP_SETFCAP).
            if (uid, gid) != (cur_uid, cur_gid) || f.caps.is_some() {
                self.owners.note_not_root();
            }
            if (uid, gid) != (cur_uid, cur_gid) {
                mode &= 0o1777;
            }
            return Ok(Meta {
                uid: None,
                gid: None,
                mode: Some(mode),
                atime: Some(t),
                mtime: Some(t),
                xattrs: Vec::new(),
            });
        }
        let mut xattrs = Vec::new();
        if let Some(text) = f.caps.as_ref().filter(|_| !self.nocaps) {
            let value = cowkit_fs::caps::from_text(text).map_err(|source| Error::Caps {
                path: path.to_path_buf(),
                source,
            })?;
            if let Some(v) = value {
                xattrs.push(meta::xattr(cowkit_fs::caps::XATTR_NAME, v));
            }
        }
        Ok(Meta {
            uid: (uid != cur_uid).then_some(uid),
            gid: (gid != cur_gid).then_some(gid),
            mode: Some(mode),
            atime: Some(t),
            mtime: Some(t),
            xattrs,
        })
    }

    /// Create the regular file `f` at `p`: `fill` writes its content into
    /// the new (empty) file, then metadata is applied and it gets its name
    /// ([`Target::put`]).
    pub fn regular(
        &self,
        f: &FileInfo,
        p: &Place,
        fill: impl FnOnce(&File, &std::path::Path) -> Result<()>,
    ) -> Result<()> {
        let path = self.display(p);
        let mut meta = self.meta(f, &path)?;
        // Created with its final permission bits when the umask keeps them
        // and no chown (which would clear setuid) follows: no fchmod.
        let mode = meta.mode.unwrap_or(f.mode) & 0o7777;
        let exact = mode & 0o7000 == 0
            && mode & self.umask == 0
            && !self.dirs[&p.parent].default_acl
            && meta.uid.is_none()
            && meta.gid.is_none();
        let create_mode = if exact { mode } else { 0o600 };
        if exact {
            meta.mode = None;
        }
        self.put(
            p,
            &path,
            NewRegular {
                mode: create_mode,
                meta,
                fill,
            },
        )
    }

    /// rpm's touch (`FA_TOUCH`: a file whose content on disk is already
    /// the package's, with `%_minimize_writes` or a config file): the
    /// regular file or symlink at `p`, when it is there and of `f`'s type,
    /// keeps its content and inode and gets `f`'s owner, mode,
    /// capabilities and times, as rpm's `fsmSetmeta` gives them.
    /// `Ok(false)` when it is not there (removed since the decision, e.g.
    /// by a `%pre`) or is of another type: the caller creates it then, as
    /// rpm does ("vanished unexpectedly").
    pub fn touch(&self, f: &FileInfo, p: &Place) -> Result<bool> {
        if !matches!(f.kind, Kind::Regular | Kind::Symlink) {
            return Ok(false);
        }
        // Nothing to touch in a tree this install made.
        let Way::Visible(passed) = self.way(p)? else {
            return Ok(false);
        };
        let dir = self.dir(p)?;
        let path = self.display(p);
        if f.kind == Kind::Regular {
            // Through a descriptor of the file itself: an entry swapped
            // for a symlink after the decision cannot lead the owner,
            // mode and capabilities elsewhere (nor a fifo block).
            let fd = match rustix::fs::openat(
                &dir,
                p.name.as_os_str(),
                OFlags::RDONLY
                    | OFlags::NOFOLLOW
                    | OFlags::NONBLOCK
                    | OFlags::NOCTTY
                    | OFlags::CLOEXEC,
                Mode::empty(),
            ) {
                Ok(fd) => fd,
                Err(Errno::NOENT) | Err(Errno::LOOP) => return Ok(false),
                Err(e) => return Err(sys("open", path)(e)),
            };
            let st = rustix::fs::fstat(&fd).map_err(sys("stat", path.clone()))?;
            if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
                return Ok(false);
            }
            let meta = self.meta_as(f, &path, st.st_uid, st.st_gid)?;
            let file = File::from(fd);
            retouch(Handle::new(&file, &path), &meta, &st, &passed)?;
            return Ok(true);
        }
        let st = match rustix::fs::statat(&dir, p.name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => st,
            Err(Errno::NOENT) => return Ok(false),
            Err(e) => return Err(sys("stat", path)(e)),
        };
        if FileType::from_raw_mode(st.st_mode) != FileType::Symlink {
            return Ok(false);
        }
        // A symlink has no mode or capabilities of its own; owner and
        // times are set without following it.
        let mut meta = self.meta_as(f, &path, st.st_uid, st.st_gid)?;
        meta.xattrs.clear();
        meta.mode = None;
        let name = c_name(p)?;
        meta_at(dir.as_fd(), &name, &path, &meta, &passed)?;
        Ok(true)
    }

    /// Make `member` a hardlink of the already installed `first`
    /// ([`Target::put`]).
    pub fn hardlink(&self, first: &Place, member: &Place) -> Result<()> {
        let from = self.dir(first)?;
        let path = self.display(member);
        let link = Link {
            from: from.as_fd(),
            name: &first.name,
        };
        self.put(member, &path, link)
    }

    /// Create the symlink `f` ([`Target::put`]).
    pub fn symlink(&self, f: &FileInfo, p: &Place) -> Result<()> {
        let path = self.display(p);
        // Byte for byte: a target need not be UTF-8.
        let target = OsStr::from_bytes(f.link_target.as_deref().unwrap_or_default());
        let mut meta = self.meta(f, &path)?;
        meta.xattrs.clear();
        meta.mode = None;
        let symlink = Special {
            op: "create symlink",
            meta: &meta,
            create: |dir: BorrowedFd<'_>, name: &OsStr| rustix::fs::symlinkat(target, dir, name),
        };
        self.put(p, &path, symlink)
    }

    /// Create the fifo, socket or device node `f` ([`Target::put`]).
    /// Returns false (and creates nothing) for a device node when not
    /// running as root.
    pub fn node(&self, f: &FileInfo, p: &Place) -> Result<bool> {
        let (ty, dev) = match f.kind {
            Kind::Fifo => (FileType::Fifo, 0),
            Kind::Socket => (FileType::Socket, 0),
            Kind::CharDevice | Kind::BlockDevice if self.euid != 0 => return Ok(false),
            Kind::CharDevice => (FileType::CharacterDevice, f.rdev),
            Kind::BlockDevice => (FileType::BlockDevice, f.rdev),
            _ => unreachable!("not a node"),
        };
        let path = self.display(p);
        // FILERDEVS holds the old 16-bit encoding: major << 8 | minor.
        let dev = rustix::fs::makedev((dev >> 8) & 0xff, dev & 0xff);
        let mut meta = self.meta(f, &path)?;
        meta.xattrs.clear();
        let node = Special {
            op: "create node",
            meta: &meta,
            create: |dir: BorrowedFd<'_>, name: &OsStr| {
                rustix::fs::mknodat(dir, name, ty, Mode::from_raw_mode(0o600), dev)
            },
        };
        self.put(p, &path, node)?;
        Ok(true)
    }

    /// How an entry at `p` is made: the one place that decides. In a new
    /// tree not published yet, under its final name, unseen; anywhere
    /// else only with rpm's check passed (waited for if it is still
    /// running).
    fn way(&self, p: &Place) -> Result<Way> {
        if self.in_fresh_dir(p) {
            Ok(Way::Unseen)
        } else {
            Ok(Way::Visible(self.verdict()?))
        }
    }

    /// Make `entry` at `p` (shown as `path`) the way [`Target::way`]
    /// decides.
    fn put<E: Make>(&self, p: &Place, path: &std::path::Path, entry: E) -> Result<()> {
        let dir = self.dir(p)?;
        let at = At {
            dir: dir.as_fd(),
            place: p,
            path,
        };
        let (entry, passed) = match self.way(p)? {
            Way::Unseen => match entry.unseen(at)? {
                None => {
                    if E::COUNTED {
                        self.fresh_files
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    return Ok(());
                }
                // Twice in the package: the later one replaces it, as
                // anywhere else.
                Some(entry) => (entry, self.verdict()?),
            },
            Way::Visible(passed) => (entry, passed),
        };
        entry.over(at, &passed)
    }

    /// Apply the package's directories' metadata, deepest first (times
    /// after their children are in place).
    pub fn finish_dirs(&self, files: &FileList, places: &[Option<Place>]) -> Result<usize> {
        let mut dirs: Vec<(&FileInfo, &Place)> = files
            .files
            .iter()
            .zip(places)
            .filter_map(|(f, p)| Some((f, p.as_ref()?)))
            .filter(|(f, _)| f.kind == Kind::Directory)
            .collect();
        // The root itself (a package owning `/`) comes last.
        dirs.sort_by_key(|(_, p)| {
            let depth = if p.rel.is_root() {
                0
            } else {
                p.rel.as_bytes().iter().filter(|&&b| b == b'/').count() + 1
            };
            std::cmp::Reverse(depth)
        });
        for (f, p) in &dirs {
            let path = self.display(p);
            let fd = self.dir_at(p.rel.as_bytes())?;
            // The directory may have existed already, with any owner.
            let st = rustix::fs::fstat(&fd).map_err(sys("stat", path.clone()))?;
            let meta = self.meta_as(f, &path, st.st_uid, st.st_gid)?;
            meta::apply(Handle::new(&fd.as_fd(), &path), &meta, None)?;
        }
        Ok(dirs.len())
    }
}

/// Move every entry of the directory `from` (in `from_dir`) into the
/// directory `dst`, then remove `from`: directories on both sides are
/// merged the same way, and any other entry replaces the one there (as a
/// file the package installs does).
fn merge(
    from_dir: BorrowedFd<'_>,
    from: &std::ffi::OsStr,
    dst: BorrowedFd<'_>,
    path: &std::path::Path,
) -> Result<()> {
    let src = dir::open_dir(from_dir, from, path)?;
    for (name, ft) in dir::read_names(&src, path)? {
        let child = path.join(&name);
        match rustix::fs::renameat_with(&src, &name, dst, &name, rustix::fs::RenameFlags::NOREPLACE)
        {
            Ok(()) => {}
            Err(Errno::EXIST) if ft == FileType::Directory => {
                // Not followed if it is a symlink: that is an error.
                let sub = dir::open_dir(dst, name.as_os_str(), &child)?;
                merge(src.as_fd(), &name, sub.as_fd(), &child)?;
            }
            Err(Errno::EXIST) => rustix::fs::renameat(&src, &name, dst, &name)
                .map_err(sys("rename into place", child))?,
            Err(e) => return Err(sys("rename into place", child)(e)),
        }
    }
    rustix::fs::unlinkat(from_dir, from, AtFlags::REMOVEDIR)
        .map_err(sys("remove directory", path.to_path_buf()))
}

impl Drop for Target<'_> {
    /// An install that ends before [`Target::publish`] (an error) takes
    /// its new directory trees away: nothing of them was ever seen.
    fn drop(&mut self) {
        if !self.stages.is_empty() {
            self.progress.on_files_removed(*self.fresh_files.get_mut());
        }
        for st in self.stages.drain(..) {
            if let Ok(pfd) = RelPath::new(&st.parent)
                .map_err(drop)
                .and_then(|r| self.root.open_dir(&r).map_err(drop))
            {
                let path = self.root.display(
                    &RelPath::new(&st.parent).unwrap_or_else(|_| RelPath::new("").expect("root")),
                );
                let _ = dir::remove_tree(&pfd, &st.temp, &path.join(&st.temp));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::Gate;

    /// What keeps "nothing visible before rpm's check" in the types:
    /// publishing the new trees takes the check's verdict by value (this
    /// does not compile if it does not), and only the gate gives one:
    /// none when the check fails, one when it passes, the check asked
    /// once however many ask.
    #[test]
    fn only_a_passed_check_gives_the_verdict_publishing_takes() {
        fn publish_takes_the_verdict<'r>(_: fn(&mut Target<'r>, Passed) -> Result<()>) {}
        publish_takes_the_verdict(Target::publish);

        let failed = Gate::new(|| Err(Error::Refused));
        for _ in 0..2 {
            assert!(matches!(
                Gate::verdict_of(Some(&failed)),
                Err(Error::Refused)
            ));
        }

        let asked = Arc::new(AtomicUsize::new(0));
        let passed = {
            let asked = Arc::clone(&asked);
            Gate::new(move || {
                asked.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
        };
        for _ in 0..2 {
            assert!(Gate::verdict_of(Some(&passed)).is_ok());
        }
        assert_eq!(asked.load(Ordering::SeqCst), 1);
    }
}
