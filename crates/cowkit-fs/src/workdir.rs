//! Working directories that go with the process using them: made under a
//! prefix and a fresh suffix in a parent directory, held under an
//! exclusive `flock` for as long as they are in use, and removed
//!
//! - on drop;
//! - on SIGINT, SIGTERM or SIGHUP, by [`remove_live`] (the CLI's signal
//!   thread calls it before the process dies of the signal);
//! - after a SIGKILL (or a crash), by the next [`sweep`] of the parent:
//!   a directory under the prefix whose lock can be taken has no owner.
//!
//! The lock, unlike a pid in the name, does not depend on pid namespaces
//! or pid reuse: it belongs to the open file description, which the
//! kernel closes with the owner's last descriptor (close-on-exec, so no
//! child keeps it).
//!
//! ```no_run
//! use std::os::fd::AsFd;
//! use std::path::Path;
//! use cowkit_fs::{dir, workdir};
//!
//! let cache = Path::new("/var/cache/cowkit");
//! let fd = dir::open_dir(rustix::fs::CWD, cache, cache)?;
//! workdir::sweep(fd.as_fd(), cache, "download.")?;
//! let w = workdir::WorkDir::create(fd.as_fd(), cache, "download.", 0o700)?;
//! println!("working in {}", w.path().display());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode};
use rustix::io::Errno;

use crate::dir::{open_dir_opt, read_names, remove_tree};
use crate::error::IoError;

type Result<T, E = IoError> = std::result::Result<T, E>;

/// How many fresh names are tried before giving up.
const TRIES: usize = 16;

/// A working directory in use by this process (see the module doc).
#[derive(Debug)]
pub struct WorkDir {
    parent: Arc<OwnedFd>,
    name: String,
    path: PathBuf,
    /// The directory, open and locked.
    fd: OwnedFd,
    id: u64,
}

/// The working directories of this process not removed yet.
type Live = Vec<(u64, Arc<OwnedFd>, String, PathBuf)>;
static LIVE: Mutex<Live> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A suffix unique among live processes of this pid namespace, and
/// unlikely to be taken in another (`mkdir` fails on a taken one anyway).
fn suffix() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "{:x}.{nanos:x}.{:x}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// Whether `name` in `parent` is still the directory open as `fd`.
fn still_named(parent: BorrowedFd<'_>, name: &str, fd: &OwnedFd) -> rustix::io::Result<bool> {
    let held = rustix::fs::fstat(fd)?;
    match rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(st.st_dev == held.st_dev && st.st_ino == held.st_ino),
        Err(Errno::NOENT) => Ok(false),
        Err(e) => Err(e),
    }
}

impl WorkDir {
    /// Make a directory `<prefix><suffix>` in `parent` (shown as
    /// `parent_path`) with `mode` (before the umask), open it and lock it.
    pub fn create(
        parent: BorrowedFd<'_>,
        parent_path: &Path,
        prefix: &str,
        mode: u32,
    ) -> Result<WorkDir> {
        let held = rustix::io::fcntl_dupfd_cloexec(parent, 0)
            .map_err(|e| IoError::new("open directory", parent_path, e))?;
        let parent = Arc::new(held);
        for _ in 0..TRIES {
            let name = format!("{prefix}{}", suffix());
            let path = parent_path.join(&name);
            match rustix::fs::mkdirat(&*parent, name.as_str(), Mode::from_raw_mode(mode)) {
                Ok(()) => {}
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(IoError::new("create a directory in", parent_path, e)),
            }
            let Some(fd) = open_dir_opt(&*parent, name.as_str(), &path)? else {
                continue;
            };
            match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                // A sweep took it for a leftover: it removes it.
                Err(Errno::WOULDBLOCK) => continue,
                Err(e) => return Err(IoError::new("lock", &path, e)),
            }
            // A sweep may have locked, removed and released it between
            // the mkdir and the lock.
            if !still_named(parent.as_fd(), &name, &fd)
                .map_err(|e| IoError::new("stat", &path, e))?
            {
                continue;
            }
            static ID: AtomicU64 = AtomicU64::new(1);
            let id = ID.fetch_add(1, Ordering::Relaxed);
            live().push((id, Arc::clone(&parent), name.clone(), path.clone()));
            return Ok(WorkDir {
                parent,
                name,
                path,
                fd,
                id,
            });
        }
        Err(IoError::new(
            "create a directory in",
            parent_path,
            Errno::EXIST,
        ))
    }

    /// The open directory.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// Its name in the parent.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its path (the parent's path and the name).
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        live().retain(|(i, ..)| *i != self.id);
        let _ = remove_tree(&*self.parent, self.name.as_str(), &self.path);
    }
}

/// Remove every working directory of this process that is still in use,
/// with its content; returns how many were removed. For a signal handler
/// thread that then ends the process: directories made after this call
/// are not covered.
pub fn remove_live() -> usize {
    let mut n = 0;
    for (_, parent, name, path) in live().drain(..) {
        if remove_tree(&*parent, name.as_str(), &path).is_ok() {
            n += 1;
        }
    }
    n
}

/// Remove from `parent` (shown as `parent_path`) the directories named
/// `<prefix>…` that no process holds (their owner was killed), with their
/// content; returns how many. One in use is left alone; a name under the
/// prefix that is not a directory is not touched.
pub fn sweep(parent: BorrowedFd<'_>, parent_path: &Path, prefix: &str) -> Result<usize> {
    let mut n = 0;
    for (name, ft) in read_names(parent, parent_path)? {
        let Some(name) = name.to_str().filter(|n| n.starts_with(prefix)) else {
            continue;
        };
        if !matches!(ft, FileType::Directory | FileType::Unknown) {
            continue;
        }
        let path = parent_path.join(name);
        let fd = match open_dir_opt(parent, name, &path) {
            Ok(Some(fd)) => fd,
            Ok(None) => continue,
            Err(e) if e.errno() == Some(Errno::LOOP) => continue,
            Err(e) => return Err(e),
        };
        match rustix::fs::flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => {}
            Err(Errno::WOULDBLOCK) => continue,
            Err(e) => return Err(IoError::new("lock", &path, e)),
        }
        // Held by us now: nobody makes a new one under this name, and the
        // name is checked to be the directory locked.
        if still_named(parent, name, &fd).map_err(|e| IoError::new("stat", &path, e))? {
            remove_tree(parent, name, &path)?;
            n += 1;
        }
    }
    Ok(n)
}
