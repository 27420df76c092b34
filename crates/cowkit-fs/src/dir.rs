//! Operations relative to a directory descriptor, written once for every
//! cowkit crate: opening and creating directories without following a
//! symlink in the last component, `statx`, listing, the one atomic
//! new-file type ([`NewFile`]), rename-into-place ([`replace_at`]), the one
//! temporary-name generator ([`temp_name`]) and the process umask.
//!
//! Every function takes the directory as a descriptor and the name as one
//! path component, so nothing is resolved again from the working directory,
//! and the path used in errors separately (it is never opened).
//!
//! ```no_run
//! use std::os::fd::AsFd;
//! use std::path::Path;
//! use cowkit_fs::dir::{self, NewFile};
//!
//! let top = Path::new("/srv/data");
//! let fd = dir::open_dir(rustix::fs::CWD, top, top)?;
//! // Appears complete under its name, or not at all.
//! let mut f = NewFile::anonymous(fd.as_fd(), top, 0o644)?;
//! f.write_all(b"hello\n")?;
//! f.commit(fd.as_fd(), "greeting", &top.join("greeting"))?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, Statx, StatxFlags};
use rustix::io::Errno;

use crate::error::IoError;

type Result<T, E = IoError> = std::result::Result<T, E>;

/// The prefix of every temporary name cowkit creates: an interrupted run
/// leaves only names that start with it.
pub const TEMP_PREFIX: &str = ".ck";

/// A fresh temporary name, `.ck<pid>.<n>` in hex: unique within this
/// process, and between live processes. Creations under it use
/// `O_EXCL`/`linkat` and retry with the next name if a dead process left
/// the same one behind.
pub fn temp_name() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    static PID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    format!(
        "{TEMP_PREFIX}{:x}.{:x}",
        PID.get_or_init(std::process::id),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Named temporary files of this process not committed or removed yet
/// ([`NewFile::named`], and [`NewFile::anonymous`] where the filesystem has
/// no `O_TMPFILE`), so that [`remove_live_temporaries`] can take them away
/// when a signal ends the process.
static LIVE: Mutex<Vec<(u64, Arc<OwnedFd>, String)>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<(u64, Arc<OwnedFd>, String)>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

fn register(dir: &Arc<OwnedFd>, name: &str) -> u64 {
    static ID: AtomicU64 = AtomicU64::new(1);
    let id = ID.fetch_add(1, Ordering::Relaxed);
    live().push((id, Arc::clone(dir), name.to_string()));
    id
}

fn unregister(id: u64) {
    live().retain(|(i, _, _)| *i != id);
}

/// Remove every named temporary file of this process that is still
/// pending (created by a [`NewFile`] not yet committed or dropped), and
/// return how many were removed. For a signal handler thread that then
/// ends the process (SIGINT, SIGTERM, SIGHUP): unnamed `O_TMPFILE` files
/// need nothing, the kernel frees them with their last descriptor, but a
/// named fallback would stay. Files created after this call are not
/// covered; the caller ends the process right after it.
pub fn remove_live_temporaries() -> usize {
    let mut n = 0;
    for (_, dir, name) in live().drain(..) {
        if rustix::fs::unlinkat(&*dir, name.as_str(), AtFlags::empty()).is_ok() {
            n += 1;
        }
    }
    n
}

/// The pid a temporary name `.ck<pid>.<n>` was made by.
pub fn temp_name_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMP_PREFIX)?;
    let (pid, seq) = rest.split_once('.')?;
    u64::from_str_radix(seq, 16).ok()?;
    u32::from_str_radix(pid, 16).ok()
}

/// Remove from `dir` (shown as `path`) the temporary names (`.ck<pid>.<n>`)
/// left by cowkit processes that no longer exist (killed with SIGKILL
/// between creating and renaming one); a directory under such a name goes
/// with everything in it ([`remove_tree`]). A name whose process is alive (in
/// this pid namespace), or is ourselves, is kept. Returns how many were
/// removed.
pub fn remove_stale_temporaries(dir: BorrowedFd<'_>, path: &Path) -> Result<usize> {
    let me = std::process::id();
    let mut n = 0;
    for (name, ft) in read_names(dir, path)? {
        let Some(name) = name.to_str() else { continue };
        let Some(pid) = temp_name_pid(name) else {
            continue;
        };
        if pid == me || pid_alive(pid) {
            continue;
        }
        if ft == FileType::Directory {
            // A directory built under a temporary name and never renamed
            // into place (an install's new directories).
            remove_tree(dir, name, &path.join(name))?;
            n += 1;
            continue;
        }
        match rustix::fs::unlinkat(dir, name, AtFlags::empty()) {
            Ok(()) => n += 1,
            Err(Errno::NOENT) => {}
            Err(Errno::ISDIR) => {
                remove_tree(dir, name, &path.join(name))?;
                n += 1;
            }
            Err(e) => return Err(IoError::new("remove the stale temporary file in", path, e)),
        }
    }
    Ok(n)
}

/// Whether the process `pid` exists (in our pid namespace): `kill(pid, 0)`
/// succeeds or is refused with `EPERM`.
fn pid_alive(pid: u32) -> bool {
    let Some(p) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    !matches!(rustix::process::test_kill_process(p), Err(Errno::SRCH))
}

/// How many fresh temporary names are tried before `EEXIST` is an error.
const TEMP_TRIES: usize = 16;

/// Run `f` with fresh temporary names until it does not fail with
/// `EEXIST`; returns the name used.
fn with_temp_name(mut f: impl FnMut(&str) -> rustix::io::Result<()>) -> rustix::io::Result<String> {
    let mut last = Errno::EXIST;
    for _ in 0..TEMP_TRIES {
        let name = temp_name();
        match f(&name) {
            Ok(()) => return Ok(name),
            Err(Errno::EXIST) => last = Errno::EXIST,
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// The process umask, read from `/proc/self/status` (asking `umask(2)`
/// would change it for a moment under other threads); `None` if unknown.
pub fn process_umask() -> Option<u32> {
    std::fs::read_to_string("/proc/self/status")
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .and_then(|v| u32::from_str_radix(v.trim(), 8).ok())
}

const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::RDONLY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOFOLLOW);

/// Open the directory `name` in `dir` without following a symlink in the
/// last component. `path` names it in errors.
pub fn open_dir<P: rustix::path::Arg>(dir: impl AsFd, name: P, path: &Path) -> Result<OwnedFd> {
    rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty())
        .map_err(|e| IoError::new("open directory", path, e))
}

/// [`open_dir`], or `None` when there is no such directory (`ENOENT`,
/// `ENOTDIR`).
pub fn open_dir_opt<P: rustix::path::Arg>(
    dir: impl AsFd,
    name: P,
    path: &Path,
) -> Result<Option<OwnedFd>> {
    match rustix::fs::openat(dir, name, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT | Errno::NOTDIR) => Ok(None),
        Err(e) => Err(IoError::new("open directory", path, e)),
    }
}

/// Open the directory `name` in `dir`, creating it with `mode` (before the
/// umask) if it does not exist.
pub fn mkdir_open(
    dir: impl AsFd,
    name: impl AsRef<OsStr>,
    mode: u32,
    path: &Path,
) -> Result<OwnedFd> {
    let name = name.as_ref();
    match rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(mode)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(IoError::new("create directory", path, e)),
    }
    open_dir(dir, name, path)
}

/// Open the regular file `name` in `dir` read-only without following a
/// symlink; `None` when absent. Anything but a regular file (a fifo
/// that would block) is refused ([`open_regular`]).
pub fn open_read_opt(dir: impl AsFd, name: impl AsRef<OsStr>, path: &Path) -> Result<Option<File>> {
    let name = name.as_ref();
    match open_regular(|f| rustix::fs::openat(&dir, name, f | OFlags::NOFOLLOW, Mode::empty())) {
        Ok((fd, _)) => Ok(Some(File::from(fd))),
        Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => Ok(None),
        Err(e) => Err(IoError::new("open", path, e)),
    }
}

/// A file that was to be read as a regular file is something else (a
/// fifo, a device, a directory): refused instead of blocking on it.
#[derive(Debug, thiserror::Error)]
#[error("not a regular file (it is a {kind})")]
pub struct NotRegular {
    /// What it is: `fifo`, `character device`, …
    pub kind: &'static str,
}

/// A short name of a file type, for messages.
pub fn type_name(ft: FileType) -> &'static str {
    match ft {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symlink",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "file of unknown type",
    }
}

/// Open a file for reading that must be a regular file, without ever
/// blocking on one that is not: `open` is called with `O_RDONLY |
/// O_NONBLOCK | O_CLOEXEC` (plus whatever it adds), so a fifo planted
/// where a configuration file was expected cannot hang the caller; the
/// descriptor is then checked with `fstat` and anything but a regular
/// file is refused ([`NotRegular`], kind `InvalidInput`). `O_NONBLOCK` is
/// cleared again before the descriptor is returned, with its `fstat`.
pub fn open_regular(
    open: impl FnOnce(OFlags) -> rustix::io::Result<OwnedFd>,
) -> std::io::Result<(OwnedFd, rustix::fs::Stat)> {
    let fd = open(OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC)?;
    let st = rustix::fs::fstat(&fd)?;
    check_regular(&st)?;
    let fl = rustix::fs::fcntl_getfl(&fd)?;
    rustix::fs::fcntl_setfl(&fd, fl - OFlags::NONBLOCK)?;
    Ok((fd, st))
}

/// `Ok` when `st` is a regular file; otherwise [`NotRegular`] as an
/// `InvalidInput` I/O error.
pub fn check_regular(st: &rustix::fs::Stat) -> std::io::Result<()> {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => Ok(()),
        ft => Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            NotRegular {
                kind: type_name(ft),
            },
        )),
    }
}

/// Whether `e` (or one of its causes) is a [`NotRegular`] refusal.
pub fn is_not_regular(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(c) = cur {
        if c.downcast_ref::<NotRegular>().is_some()
            || c.downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .is_some_and(|inner| inner.downcast_ref::<NotRegular>().is_some())
        {
            return true;
        }
        cur = c.source();
    }
    false
}

/// `statx(dir, name, AT_SYMLINK_NOFOLLOW)` for the basic fields.
pub fn statx_at(dir: BorrowedFd<'_>, name: &CStr) -> rustix::io::Result<Statx> {
    rustix::fs::statx(
        dir,
        name,
        AtFlags::SYMLINK_NOFOLLOW,
        StatxFlags::BASIC_STATS,
    )
}

/// What `name` is in `dir`, without following a symlink; `None` when absent.
pub fn stat_at(
    dir: impl AsFd,
    name: impl AsRef<OsStr>,
) -> rustix::io::Result<Option<rustix::fs::Stat>> {
    let name = name.as_ref();
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Some(st)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Raise the soft limit on open files to the hard limit (as GNU `cp` and
/// `rm` do): tree walks hold a descriptor per directory level.
pub fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource};
    let mut lim = getrlimit(Resource::Nofile);
    if lim.current < lim.maximum {
        lim.current = lim.maximum;
        let _ = setrlimit(Resource::Nofile, lim);
    }
}

/// How many directory descriptors a walk may hold open: half of what the
/// open-file soft limit leaves after `reserve` (the process's own files,
/// and those each worker has open at once), at least 2.
pub fn dir_fd_budget(reserve: usize) -> usize {
    let lim = rustix::process::getrlimit(rustix::process::Resource::Nofile);
    let soft = lim.current.unwrap_or(1 << 20) as usize;
    (soft.saturating_sub(reserve) / 2).max(2)
}

/// The mount id of the open file `fd` (`statx` `STATX_MNT_ID`, Linux
/// 5.8+): two directories are on one mount exactly when their ids are
/// equal (bind mounts of one filesystem included, unlike `st_dev`).
pub fn mount_id(fd: BorrowedFd<'_>) -> rustix::io::Result<Option<u64>> {
    let st = rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, rustix::fs::StatxFlags::MNT_ID)?;
    Ok((st.stx_mask & rustix::fs::StatxFlags::MNT_ID.bits() != 0).then_some(st.stx_mnt_id))
}

/// Device and inode of a `statx` answer.
pub fn dev_ino(st: &Statx) -> (u64, u64) {
    (
        rustix::fs::makedev(st.stx_dev_major, st.stx_dev_minor),
        st.stx_ino,
    )
}

/// The names in the directory `dir` (without `.` and `..`), with their
/// `d_type` (`Unknown` where the filesystem does not say).
pub fn read_names(dir: impl AsFd, path: &Path) -> Result<Vec<(OsString, FileType)>> {
    let fd = rustix::fs::openat(
        dir,
        ".",
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| IoError::new("open directory", path, e))?;
    let mut d = rustix::fs::Dir::new(fd).map_err(|e| IoError::new("read directory", path, e))?;
    let mut out = Vec::new();
    for ent in d.by_ref() {
        let ent = ent.map_err(|e| IoError::new("read directory", path, e))?;
        let name = ent.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push((OsString::from_vec(name.to_vec()), ent.file_type()));
        }
    }
    Ok(out)
}

/// Create a directory in `dir` (shown as `dir_path`) under a fresh
/// temporary name with `mode` (before the umask), and open it: a tree is
/// built there unseen and renamed into place when complete. Returns the
/// name and the descriptor. [`remove_stale_temporaries`] takes it away if
/// the process dies first.
pub fn mkdir_temp(dir: impl AsFd, mode: u32, dir_path: &Path) -> Result<(String, OwnedFd)> {
    let name = with_temp_name(|name| rustix::fs::mkdirat(&dir, name, Mode::from_raw_mode(mode)))
        .map_err(|e| IoError::new("create a directory in", dir_path, e))?;
    let fd = open_dir(&dir, name.as_str(), &dir_path.join(&name))?;
    Ok((name, fd))
}

/// Remove `name` in `dir` (shown as `path`) and, when it is a directory,
/// everything below it, without following symlinks or leaving the
/// filesystem of `dir` (a mount point below is an error, not crossed). A
/// missing name is fine. Depth-first through directory descriptors, so
/// nothing is resolved from a path.
pub fn remove_tree(dir: impl AsFd, name: impl AsRef<std::ffi::OsStr>, path: &Path) -> Result<()> {
    let name = name.as_ref();
    match rustix::fs::unlinkat(&dir, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => return Ok(()),
        Err(Errno::ISDIR | Errno::PERM) => {}
        Err(e) => return Err(IoError::new("remove", path, e)),
    }
    let Some(fd) = open_dir_opt(&dir, name, path)? else {
        return Ok(());
    };
    let outer = mount_id(dir.as_fd()).ok().flatten();
    if outer.is_some() && mount_id(fd.as_fd()).ok().flatten() != outer {
        return Err(IoError::new("remove (a mount point)", path, Errno::XDEV));
    }
    for (n, ft) in read_names(&fd, path)? {
        let child = path.join(&n);
        if ft == FileType::Directory {
            remove_tree(&fd, &n, &child)?;
            continue;
        }
        match rustix::fs::unlinkat(&fd, n.as_os_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(Errno::ISDIR | Errno::PERM) => remove_tree(&fd, &n, &child)?,
            Err(e) => return Err(IoError::new("remove", child, e)),
        }
    }
    match rustix::fs::unlinkat(&dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(IoError::new("remove directory", path, e)),
    }
}

/// `fsync` a directory (after names in it changed).
pub fn sync_dir(dir: impl AsFd, path: &Path) -> Result<()> {
    rustix::fs::fsync(dir).map_err(|e| IoError::new("fsync directory", path, e))
}

/// Rename `from` in `from_dir` to `to` in `to_dir`, replacing what is
/// there; if that fails, `from` is removed so that nothing is left behind.
/// `path` (the destination) names it in errors; the error keeps the errno
/// ([`IoError::errno`]) for callers that tell conflicts apart.
pub fn replace_at(
    from_dir: impl AsFd,
    from: &str,
    to_dir: impl AsFd,
    to: impl AsRef<OsStr>,
    path: &Path,
) -> Result<()> {
    let to = to.as_ref();
    rustix::fs::renameat(&from_dir, from, to_dir, to).map_err(|e| {
        let _ = rustix::fs::unlinkat(&from_dir, from, AtFlags::empty());
        IoError::new("rename into place", path, e)
    })
}

/// Make `name` in `dir` with `create` under a fresh temporary name, then
/// `finish` it (metadata), then rename it over `name`. On any failure the
/// temporary name is removed. For entries that cannot be created unnamed:
/// symlinks, hardlinks, device nodes.
pub fn create_replacing(
    dir: BorrowedFd<'_>,
    name: impl AsRef<OsStr>,
    path: &Path,
    op: &'static str,
    create: impl FnMut(&str) -> rustix::io::Result<()>,
    finish: impl FnOnce(&str) -> crate::Result<()>,
) -> crate::Result<()> {
    let tmp = with_temp_name(create).map_err(|e| IoError::new(op, path, e))?;
    if let Err(e) = finish(&tmp) {
        let _ = rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
        return Err(e);
    }
    Ok(replace_at(dir, &tmp, dir, name, path)?)
}

/// Give the open file `file` the name `name` in `dir` (`linkat`): an
/// `O_TMPFILE` file gets its first name this way. `AT_EMPTY_PATH` needs
/// `CAP_DAC_READ_SEARCH`; everyone else goes through `/proc/self/fd`.
pub fn link_fd(file: impl AsFd, dir: impl AsFd, name: impl AsRef<OsStr>) -> rustix::io::Result<()> {
    let name = name.as_ref();
    match rustix::fs::linkat(&file, "", &dir, name, AtFlags::EMPTY_PATH) {
        Err(Errno::NOENT | Errno::PERM) => {
            let via = format!("/proc/self/fd/{}", file.as_fd().as_raw_fd());
            rustix::fs::linkat(
                rustix::fs::CWD,
                via.as_str(),
                dir,
                name,
                AtFlags::SYMLINK_FOLLOW,
            )
        }
        r => r,
    }
}

/// A new regular file that appears under its final name complete or not at
/// all.
///
/// [`NewFile::anonymous`] makes it with `O_TMPFILE`, so it has no name
/// until [`NewFile::commit`] links it in place in one directory operation
/// (or, when the name exists, links it under a temporary name and renames
/// that over the old file). Filesystems without `O_TMPFILE`, and
/// [`NewFile::named`] (for files that always replace an existing one),
/// get a temporary name from the start and a rename at the end. A
/// `NewFile` dropped without being committed leaves nothing behind.
///
/// The directory is passed again at the end, so a file can be made in one
/// place and committed later (after the directory was opened again), or
/// into another directory of the same filesystem.
#[derive(Debug)]
pub struct NewFile {
    /// `None` only once handed over.
    file: Option<File>,
    /// Its temporary name and the directory holding it, once it has one,
    /// and its entry in the list of live temporaries.
    temp: Option<Temp>,
    /// For messages: the directory it was created in.
    dir_path: PathBuf,
}

/// A temporary name of a [`NewFile`], listed for [`remove_live_temporaries`]
/// while it exists.
#[derive(Debug)]
struct Temp {
    dir: Arc<OwnedFd>,
    name: String,
    id: u64,
}

impl Temp {
    fn new(dir: OwnedFd, name: String) -> Temp {
        let dir = Arc::new(dir);
        let id = register(&dir, &name);
        Temp { dir, name, id }
    }

    /// The name is gone (renamed or removed): no longer listed.
    fn done(self) -> (Arc<OwnedFd>, String) {
        unregister(self.id);
        (self.dir, self.name)
    }
}

impl NewFile {
    /// An unnamed file in `dir` (shown as `dir_path` in messages), opened
    /// read-write with permission bits `mode` (before the umask).
    pub fn anonymous(dir: BorrowedFd<'_>, dir_path: &Path, mode: u32) -> Result<NewFile> {
        match rustix::fs::openat(
            dir,
            ".",
            OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC,
            Mode::from_raw_mode(mode),
        ) {
            Ok(fd) => Ok(NewFile {
                file: Some(File::from(fd)),
                temp: None,
                dir_path: dir_path.to_path_buf(),
            }),
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => Self::named(dir, dir_path, mode),
            Err(e) => Err(IoError::new("create a file in", dir_path, e)),
        }
    }

    /// A file in `dir` under a fresh temporary name, opened read-write.
    pub fn named(dir: BorrowedFd<'_>, dir_path: &Path, mode: u32) -> Result<NewFile> {
        let held = rustix::io::fcntl_dupfd_cloexec(dir, 0)
            .map_err(|e| IoError::new("open directory", dir_path, e))?;
        let mut fd = None;
        let name = with_temp_name(|name| {
            fd = Some(rustix::fs::openat(
                &held,
                name,
                OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(mode),
            )?);
            Ok(())
        })
        .map_err(|e| IoError::new("create a file in", dir_path, e))?;
        Ok(NewFile {
            file: fd.map(File::from),
            temp: Some(Temp::new(held, name)),
            dir_path: dir_path.to_path_buf(),
        })
    }

    /// The open file.
    pub fn file(&self) -> &File {
        self.file
            .as_ref()
            .expect("a NewFile holds its file until handed over")
    }

    /// The path of the file for messages: its temporary name, or
    /// `(new file)` in its directory.
    pub fn path(&self) -> PathBuf {
        self.dir_path
            .join(self.temp.as_ref().map_or("(new file)", |t| t.name.as_str()))
    }

    /// Write all of `data` at the current offset.
    pub fn write_all(&mut self, data: &[u8]) -> Result<()> {
        self.file()
            .write_all(data)
            .map_err(|e| IoError::new("write", self.path(), e))
    }

    /// `fsync` the file.
    pub fn sync(&self) -> Result<()> {
        rustix::fs::fsync(self.file()).map_err(|e| IoError::new("fsync", self.path(), e))
    }

    /// Give the file a temporary name in `dir` (where it was created) if
    /// it has none, and hand over the file and the name: from then on the
    /// caller moves it ([`replace_at`]) or removes it.
    pub fn into_named(mut self, dir: BorrowedFd<'_>) -> Result<(File, String)> {
        let name = match self.temp.take() {
            // From here on the caller owns the name.
            Some(t) => t.done().1,
            None => {
                let file = self.file();
                with_temp_name(|name| link_fd(file, dir, name))
                    .map_err(|e| IoError::new("link", self.path(), e))?
            }
        };
        Ok((self.file.take().expect("held"), name))
    }

    /// Give the file the name `name` in `dir`, replacing what is there;
    /// `path` (the final name) is used in errors. On failure nothing is
    /// left behind. Returns the open file.
    pub fn commit(
        mut self,
        dir: BorrowedFd<'_>,
        name: impl AsRef<OsStr>,
        path: &Path,
    ) -> Result<File> {
        let name = name.as_ref();
        let temp = match self.temp.take() {
            Some(t) => t,
            None => {
                match link_fd(self.file(), dir, name) {
                    Ok(()) => return Ok(self.file.take().expect("held")),
                    Err(Errno::EXIST) => {}
                    Err(e) => return Err(IoError::new("link into place", path, e)),
                }
                let file = self.file();
                let tmp = with_temp_name(|t| link_fd(file, dir, t))
                    .map_err(|e| IoError::new("link into place", path, e))?;
                let file = self.file.take().expect("held");
                replace_at(dir, &tmp, dir, name, path)?;
                return Ok(file);
            }
        };
        let file = self.file.take().expect("held");
        let r = replace_at(&*temp.dir, &temp.name, dir, name, path);
        temp.done();
        r?;
        Ok(file)
    }
}

impl NewFile {
    /// Give the file the name `name` in `dir` unless that name exists:
    /// `Ok(None)` then, and nothing is left behind (content-addressed
    /// stores, where an existing name already holds the same bytes).
    pub fn commit_new(
        mut self,
        dir: BorrowedFd<'_>,
        name: &str,
        path: &Path,
    ) -> Result<Option<File>> {
        match self.temp.take() {
            None => match link_fd(self.file(), dir, name) {
                Ok(()) => Ok(self.file.take()),
                Err(Errno::EXIST) => Ok(None),
                Err(e) => Err(IoError::new("link into place", path, e)),
            },
            Some(temp) => {
                let (from, tmp) = (Arc::clone(&temp.dir), temp.name.clone());
                let r = rustix::fs::renameat_with(
                    &*from,
                    tmp.as_str(),
                    dir,
                    name,
                    rustix::fs::RenameFlags::NOREPLACE,
                );
                if r.is_err() {
                    let _ = rustix::fs::unlinkat(&*from, tmp.as_str(), AtFlags::empty());
                }
                temp.done();
                match r {
                    Ok(()) => Ok(self.file.take()),
                    Err(e) => {
                        if e == Errno::EXIST {
                            Ok(None)
                        } else {
                            Err(IoError::new("rename into place", path, e))
                        }
                    }
                }
            }
        }
    }
}

impl Drop for NewFile {
    fn drop(&mut self) {
        if let Some(t) = self.temp.take() {
            let _ = rustix::fs::unlinkat(&*t.dir, t.name.as_str(), AtFlags::empty());
            t.done();
        }
    }
}

/// Replace `name` in `dir` with a file holding `data`, atomically (written
/// under a temporary name, optionally fsynced, renamed into place).
pub fn write_file_at(
    dir: impl AsFd,
    name: &str,
    path: &Path,
    data: &[u8],
    mode: u32,
    sync: bool,
) -> Result<()> {
    let dir = dir.as_fd();
    let mut f = NewFile::named(dir, path.parent().unwrap_or(Path::new("")), mode)?;
    f.write_all(data)
        .map_err(|e| IoError::new("write", path, e.source))?;
    if sync {
        f.sync()
            .map_err(|e| IoError::new("fsync", path, e.source))?;
    }
    f.commit(dir, name, path)?;
    Ok(())
}

/// How inode numbers of the filesystem holding `dir` encode their
/// allocation group: on XFS an inode number is `agno << shift | agino`, with
/// `shift` = log2 of the AG size in blocks (rounded up) + log2 of the inodes
/// per block, so `ino >> shift` is its AG, whose header buffers (AGI, AGF)
/// every unlink and inode free of that AG locks. `None` on other
/// filesystems (or when the geometry makes no sense).
pub fn inode_group_shift(dir: impl AsFd) -> Option<u32> {
    let (blocksize, agblocks, agcount, inodesize) = crate::sys::xfs::geometry(dir).ok()?;
    if agblocks < 2 || agcount == 0 || inodesize == 0 || blocksize < inodesize {
        return None;
    }
    let inopb = blocksize / inodesize;
    if !inopb.is_power_of_two() {
        return None;
    }
    let agblklog = 32 - (agblocks - 1).leading_zeros();
    Some(agblklog + inopb.trailing_zeros())
}
