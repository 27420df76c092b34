//! Small file helpers on directory descriptors: unnamed new files, atomic
//! JSON records, random names.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use serde::{de::DeserializeOwned, Serialize};

use crate::error::{io, Error, Result};

/// `n` random bytes as lowercase hex.
pub fn rand_hex(n: usize) -> String {
    let mut buf = vec![0u8; n];
    // /dev/urandom never blocks and never fails short on Linux.
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .expect("/dev/urandom is readable");
    hex::encode(buf)
}

/// A new file that has no name yet (`O_TMPFILE`), or a temporary name where
/// the filesystem lacks `O_TMPFILE`.
#[derive(Debug)]
pub struct NewFile {
    /// The open file.
    pub file: File,
    /// Its temporary name in `dir`, if it has one.
    named: Option<String>,
    /// For messages.
    pub path: PathBuf,
}

impl NewFile {
    /// Create an empty file in `dir` (shown as `dir_path` in messages).
    pub fn create(dir: BorrowedFd<'_>, dir_path: &Path) -> Result<NewFile> {
        let flags = OFlags::RDWR | OFlags::CLOEXEC;
        let mode = Mode::from_raw_mode(0o644);
        match rustix::fs::openat(dir, ".", flags | OFlags::TMPFILE, mode) {
            Ok(fd) => Ok(NewFile {
                file: File::from(fd),
                named: None,
                path: dir_path.join("(new file)"),
            }),
            Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {
                let name = format!(".new.{}", rand_hex(8));
                let fd = rustix::fs::openat(
                    dir,
                    name.as_str(),
                    flags | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW,
                    mode,
                )
                .map_err(|e| io("create", dir_path.join(&name), e))?;
                Ok(NewFile {
                    file: File::from(fd),
                    path: dir_path.join(&name),
                    named: Some(name),
                })
            }
            Err(e) => Err(io("create a file in", dir_path, e)),
        }
    }

    /// Give the file a fresh temporary name in `dir` (the directory it was
    /// created in) and return the name.
    pub fn name_it(&mut self, dir: BorrowedFd<'_>) -> Result<String> {
        if let Some(n) = &self.named {
            return Ok(n.clone());
        }
        let name = format!(".new.{}", rand_hex(8));
        let r = match rustix::fs::linkat(&self.file, "", dir, name.as_str(), AtFlags::EMPTY_PATH) {
            // AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH; /proc/self/fd does not.
            Err(Errno::NOENT | Errno::PERM) => {
                let via = format!("/proc/self/fd/{}", self.file.as_raw_fd());
                rustix::fs::linkat(
                    rustix::fs::CWD,
                    via.as_str(),
                    dir,
                    name.as_str(),
                    AtFlags::SYMLINK_FOLLOW,
                )
            }
            r => r,
        };
        r.map_err(|e| io("link", &self.path, e))?;
        self.named = Some(name.clone());
        Ok(name)
    }

    /// Write `data` at the end.
    pub fn write_all(&mut self, data: &[u8]) -> Result<()> {
        self.file
            .write_all(data)
            .map_err(|e| io("write", &self.path, e))
    }

    /// `fsync` the file.
    pub fn sync(&self) -> Result<()> {
        rustix::fs::fsync(&self.file).map_err(|e| io("fsync", &self.path, e))
    }
}

/// Open `name` in `dir` read-only, without following a symlink; `None`
/// when absent.
pub fn open_opt(dir: BorrowedFd<'_>, name: &str, path: &Path) -> Result<Option<File>> {
    match rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(Some(File::from(fd))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(io("open", path, e)),
    }
}

/// Open (creating) the directory `name` in `dir`.
pub fn mkdir_open(dir: BorrowedFd<'_>, name: &str, path: &Path) -> Result<OwnedFd> {
    match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o755)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(io("create directory", path, e)),
    }
    rustix::fs::openat(
        dir,
        name,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    )
    .map_err(|e| io("open directory", path, e))
}

/// Open the existing directory `name` in `dir`; `None` when absent.
pub fn open_dir_opt(dir: BorrowedFd<'_>, name: &str, path: &Path) -> Result<Option<OwnedFd>> {
    match rustix::fs::openat(
        dir,
        name,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT | Errno::NOTDIR) => Ok(None),
        Err(e) => Err(io("open directory", path, e)),
    }
}

/// Read the JSON record `name` in `dir`; `None` when absent.
pub fn read_json<T: DeserializeOwned>(
    dir: BorrowedFd<'_>,
    name: &str,
    path: &Path,
) -> Result<Option<T>> {
    let Some(mut f) = open_opt(dir, name, path)? else {
        return Ok(None);
    };
    let mut buf = Vec::new();
    f.read_to_end(&mut buf).map_err(|e| io("read", path, e))?;
    serde_json::from_slice(&buf)
        .map(Some)
        .map_err(|e| Error::Corrupt {
            path: path.to_path_buf(),
            why: e.to_string(),
        })
}

/// Replace the record `name` in `dir` with `value`, atomically (temporary
/// name, then rename); with `sync`, the record is fsynced first.
pub fn write_json<T: Serialize>(
    dir: BorrowedFd<'_>,
    name: &str,
    path: &Path,
    value: &T,
    sync: bool,
) -> Result<()> {
    let tmp = format!(".{name}.{}", rand_hex(6));
    let fd = rustix::fs::openat(
        dir,
        tmp.as_str(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| io("create", path, e))?;
    let mut f = File::from(fd);
    let data = serde_json::to_vec(value).expect("records serialize");
    let done = f
        .write_all(&data)
        .map_err(|e| io("write", path, e))
        .and_then(|()| {
            if sync {
                rustix::fs::fsync(&f).map_err(|e| io("fsync", path, e))
            } else {
                Ok(())
            }
        })
        .and_then(|()| {
            rustix::fs::renameat(dir, tmp.as_str(), dir, name).map_err(|e| io("rename", path, e))
        });
    if done.is_err() {
        let _ = rustix::fs::unlinkat(dir, tmp.as_str(), AtFlags::empty());
    }
    done
}

/// `fsync` a directory.
pub fn sync_dir(dir: impl AsFd, path: &Path) -> Result<()> {
    rustix::fs::fsync(dir).map_err(|e| io("fsync directory", path, e))
}

/// Names in `dir` (without `.` and `..`), with their `d_type` when known.
pub fn read_names(dir: BorrowedFd<'_>, path: &Path) -> Result<Vec<(String, rustix::fs::FileType)>> {
    let fd = rustix::fs::openat(
        dir,
        ".",
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| io("open directory", path, e))?;
    let mut d = rustix::fs::Dir::new(fd).map_err(|e| io("read directory", path, e))?;
    let mut out = Vec::new();
    for ent in d.by_ref() {
        let ent = ent.map_err(|e| io("read directory", path, e))?;
        let name = ent.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        // Names that are not UTF-8 were not written by the gateway: skip.
        if let Ok(s) = std::str::from_utf8(name) {
            out.push((s.to_string(), ent.file_type()));
        }
    }
    Ok(out)
}

/// Remove every entry of the flat directory `name` in `dir`, then the
/// directory itself. A missing directory is fine.
pub fn remove_flat_dir(dir: BorrowedFd<'_>, name: &str, path: &Path) -> Result<()> {
    let Some(fd) = open_dir_opt(dir, name, path)? else {
        return Ok(());
    };
    for (n, _) in read_names(fd.as_fd(), path)? {
        match rustix::fs::unlinkat(&fd, n.as_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => return Err(io("remove", path.join(&n), e)),
        }
    }
    match rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR) {
        Ok(()) | Err(Errno::NOENT) => Ok(()),
        Err(e) => Err(io("remove directory", path, e)),
    }
}
