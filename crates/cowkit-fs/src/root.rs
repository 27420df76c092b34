//! Paths resolved inside a root directory, never outside it.
//!
//! An installer writes into a directory that may already hold symlinks
//! (absolute ones pointing at the host's `/etc`, or `..` chains), and a
//! package may create symlinks and then write "through" them. A [`Root`]
//! resolves every directory with `openat2(RESOLVE_IN_ROOT |
//! RESOLVE_NO_MAGICLINKS)`: the kernel treats the root as `/` for absolute
//! symlinks and clamps `..` at it, so resolution cannot leave it. The last
//! component of a path is then handled by `*at` calls relative to its
//! parent's descriptor (create under a temporary name, rename into place),
//! which never follow a symlink in that component.
//!
//! Names are validated by [`RelPath::new`]: no `..`, no `.`, no empty
//! component, no NUL.

use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::error::{io, Result};

/// A path relative to a [`Root`], checked to hold only normal components.
/// Its bytes need not be UTF-8: rpm installs names byte for byte.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RelPath(Vec<u8>);

/// A path that cannot be used inside a root.
#[derive(Debug, thiserror::Error)]
#[error("`{path}` is not a safe path inside the root: {why}")]
pub struct BadPath {
    /// The path, shown escaped ([`escape`]).
    pub path: String,
    /// What is wrong with it.
    pub why: &'static str,
}

/// `name` for a message: its UTF-8 text with control characters,
/// backquotes and backslashes escaped, every byte that is not UTF-8 as
/// `\xNN`.
pub fn escape(name: &[u8]) -> String {
    let mut out = String::new();
    for chunk in name.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c.is_control() || c == '`' || c == '\\' {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        for x in chunk.invalid() {
            out.push_str(&format!("\\x{x:02X}"));
        }
    }
    out
}

impl RelPath {
    /// `path` with leading `/` removed (`/usr/bin/x` → `usr/bin/x`); the
    /// empty path is the root itself. `path` is bytes (a `&str`, or a
    /// name from a package that need not be UTF-8).
    pub fn new(path: impl AsRef<[u8]>) -> Result<RelPath, BadPath> {
        let path = path.as_ref();
        let bad = |why| BadPath {
            path: escape(path),
            why,
        };
        let start = path.iter().position(|&b| b != b'/').unwrap_or(path.len());
        let rel = &path[start..];
        if rel.contains(&0) {
            return Err(bad("it contains a NUL byte"));
        }
        if rel.is_empty() {
            return Ok(RelPath(Vec::new()));
        }
        let end = rel.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
        let rel = &rel[..end];
        for c in rel.split(|&b| b == b'/') {
            match c {
                b"" => return Err(bad("it has an empty component")),
                b"." => return Err(bad("it has a `.` component")),
                b".." => return Err(bad("it has a `..` component")),
                _ if c.len() > 255 => return Err(bad("a component is longer than 255 bytes")),
                _ => {}
            }
        }
        Ok(RelPath(rel.to_vec()))
    }

    /// The path's bytes (no leading `/`).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The path as an `OsStr` (no leading `/`).
    pub fn as_os_str(&self) -> &OsStr {
        OsStr::from_bytes(&self.0)
    }

    /// The path as text when it is UTF-8.
    pub fn to_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// The path escaped for a message ([`escape`]).
    pub fn escaped(&self) -> String {
        escape(&self.0)
    }

    /// `self/name`.
    pub fn join(&self, name: impl AsRef<[u8]>) -> Result<RelPath, BadPath> {
        let name = name.as_ref();
        if self.0.is_empty() {
            return RelPath::new(name);
        }
        RelPath::new([self.0.as_slice(), b"/", name].concat())
    }

    /// Whether this is the root itself.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    /// The parent and the last component; `None` for the root.
    pub fn split(&self) -> Option<(RelPath, &OsStr)> {
        if self.0.is_empty() {
            return None;
        }
        Some(match self.0.iter().rposition(|&b| b == b'/') {
            Some(i) => (
                RelPath(self.0[..i].to_vec()),
                OsStr::from_bytes(&self.0[i + 1..]),
            ),
            None => (RelPath(Vec::new()), OsStr::from_bytes(&self.0)),
        })
    }
}

/// A directory that all paths are resolved inside.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
}

const RESOLVE: ResolveFlags = ResolveFlags::IN_ROOT.union(ResolveFlags::NO_MAGICLINKS);

impl Root {
    /// Open the directory at `path` as a root.
    pub fn open(path: &Path) -> Result<Root> {
        let fd = rustix::fs::open(
            path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| io("open the root directory", path, e))?;
        Ok(Root {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// The root's path (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The root's descriptor.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// `rel` as a host path, for messages only (never opened).
    pub fn display(&self, rel: &RelPath) -> PathBuf {
        self.path.join(rel.as_os_str())
    }

    fn openat2(&self, rel: &RelPath, flags: OFlags) -> rustix::io::Result<OwnedFd> {
        let p: &OsStr = if rel.is_root() {
            OsStr::new(".")
        } else {
            rel.as_os_str()
        };
        loop {
            match rustix::fs::openat2(&self.fd, p, flags | OFlags::CLOEXEC, Mode::empty(), RESOLVE)
            {
                Err(Errno::AGAIN) | Err(Errno::INTR) => continue,
                r => return r,
            }
        }
    }

    /// Open the directory `rel`, resolving symlinks as if the root were `/`.
    pub fn open_dir(&self, rel: &RelPath) -> Result<OwnedFd> {
        self.openat2(rel, OFlags::DIRECTORY | OFlags::RDONLY)
            .map_err(|e| io("open directory", &self.display(rel), e))
    }

    /// Open the regular file `rel` for reading (following symlinks inside
    /// the root). Anything else is refused without blocking: a fifo
    /// planted at `etc/passwd` cannot hang the caller
    /// ([`crate::dir::open_regular`]).
    pub fn open_read(&self, rel: &RelPath) -> Result<OwnedFd> {
        crate::dir::open_regular(|f| self.openat2(rel, f))
            .map(|(fd, _)| fd)
            .map_err(|e| io("open", &self.display(rel), e))
    }

    /// The regular text file `rel` (symlinks followed inside the root), at
    /// most `limit` bytes of it; `None` when it is missing, unreadable, not
    /// a regular file or not UTF-8 (configuration files a root may or may
    /// not have).
    pub fn read_text(&self, rel: &str, limit: u64) -> Option<String> {
        use std::io::Read;
        let fd = self.open_read(&RelPath::new(rel).ok()?).ok()?;
        let mut s = String::new();
        std::fs::File::from(fd)
            .take(limit)
            .read_to_string(&mut s)
            .ok()?;
        Some(s)
    }

    /// Open the directory `rel`, creating it and any missing parents with
    /// `mode` (before umask). An existing symlink to a directory (inside
    /// the root) counts as the directory, as it does for rpm.
    ///
    /// Another process may remove a directory it found empty (an S3
    /// gateway pruning after a delete) between its creation here and the
    /// next step: a missing directory is made again, up to 100 times,
    /// each after a pause twice as long as the last (1 µs to 1 ms). A
    /// writer that puts and deletes in a loop beside this one can remove
    /// the directories again and again while its removal is under way:
    /// retried at once, the loser met it more than 100 times in a row (on
    /// a loaded 2-core machine).
    pub fn create_dirs(&self, rel: &RelPath, mode: u32) -> Result<OwnedFd> {
        let mut tries = 0u32;
        loop {
            match self.create_dirs_once(rel, mode) {
                Err(crate::Error::Io(e))
                    if e.errno() == Some(Errno::NOENT) && tries < PRUNED_RETRIES =>
                {
                    pause_before_retry(tries);
                    tries += 1;
                }
                r => return r,
            }
        }
    }

    fn create_dirs_once(&self, rel: &RelPath, mode: u32) -> Result<OwnedFd> {
        match self.openat2(rel, OFlags::DIRECTORY | OFlags::RDONLY) {
            Ok(fd) => return Ok(fd),
            Err(Errno::NOENT) => {}
            Err(e) => return Err(io("open directory", &self.display(rel), e)),
        }
        let (parent, name) = rel.split().expect("the root exists");
        let pfd = self.create_dirs_once(&parent, mode)?;
        match rustix::fs::mkdirat(&pfd, name, Mode::from_raw_mode(mode)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(io("create directory", &self.display(rel), e)),
        }
        self.open_dir(rel)
    }
}

/// How many times a step that another process's pruning of empty
/// directories undid is tried again ([`Root::create_dirs`], and a rename
/// into a directory made by it).
pub const PRUNED_RETRIES: u32 = 100;

/// The pause before try number `tries` + 1 of such a step: twice as long
/// as the last, 1 µs to 1 ms, so that the other writer's removal (under
/// way while an immediate retry would meet it again) can finish.
pub fn pause_before_retry(tries: u32) {
    std::thread::sleep(std::time::Duration::from_micros(1 << tries.min(10)));
}

impl Root {
    /// Where the directory `rel` really is inside the root, as an absolute
    /// path with no symlinks (`/usr/lib/sysimage/rpm` for a
    /// `var/lib/rpm -> ../../usr/lib/sysimage/rpm` link), or `None` when
    /// it does not exist. The result is safe to hand to a tool that
    /// prefixes it with the root and follows symlinks on the host (rpm's
    /// `--root` with `--dbpath`): no component of it is a symlink.
    pub fn real_path(&self, rel: &RelPath) -> Result<Option<String>> {
        let fd = match self.openat2(rel, OFlags::DIRECTORY | OFlags::PATH) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(io("open directory", &self.display(rel), e)),
        };
        let of = |fd: BorrowedFd<'_>, what: &Path| -> Result<PathBuf> {
            let link = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd));
            std::fs::read_link(&link)
                .map_err(|e| crate::IoError::new("resolve", what.to_path_buf(), e).into())
        };
        let base: PathBuf = of(self.fd.as_fd(), &self.path)?;
        let real: PathBuf = of(fd.as_fd(), &self.display(rel))?;
        let inside = real.strip_prefix(&base).map_err(|_| {
            crate::Error::from(crate::IoError::new(
                "resolve",
                self.display(rel),
                std::io::Error::other("it resolves outside the root"),
            ))
        })?;
        let s = inside.to_str().ok_or_else(|| {
            crate::Error::from(crate::IoError::new(
                "resolve",
                self.display(rel),
                std::io::Error::other("the path is not UTF-8"),
            ))
        })?;
        Ok(Some(format!("/{s}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_bytes_checked_as_before_and_shown_escaped() {
        let r = RelPath::new(b"/usr/caf\xE9/x\xFF".as_slice()).unwrap();
        assert_eq!(r.as_bytes(), b"usr/caf\xE9/x\xFF");
        let (parent, name) = r.split().unwrap();
        assert_eq!(parent.as_bytes(), b"usr/caf\xE9");
        assert_eq!(name.as_bytes(), b"x\xFF");
        assert_eq!(r.escaped(), "usr/caf\\xE9/x\\xFF");
        assert_eq!(RelPath::new("/").unwrap(), RelPath::new("").unwrap());
        assert_eq!(RelPath::new("a/b/").unwrap().as_bytes(), b"a/b");
        for bad in [&b"a/../b"[..], b"a//b", b"./a", b"a\0b"] {
            assert!(RelPath::new(bad).is_err(), "{bad:?}");
        }
        let e = RelPath::new(b"caf\xE9/..".as_slice()).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`caf\\xE9/..` is not a safe path inside the root: it has a `..` component"
        );
    }
}
