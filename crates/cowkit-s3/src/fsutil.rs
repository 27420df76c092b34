//! The gateway's records and names on top of `cowkit_fs::dir`: atomic JSON
//! records, UTF-8 listings, random upload ids.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;

use cowkit_fs::dir;
use rustix::fs::AtFlags;
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

pub use cowkit_fs::dir::{open_dir_opt, sync_dir, NewFile};

/// Open `name` in `dir` read-only, without following a symlink; `None`
/// when absent, or when it is not a regular file (a directory, a fifo):
/// that is not an object.
pub fn open_opt(dir: BorrowedFd<'_>, name: &str, path: &Path) -> Result<Option<File>> {
    match dir::open_read_opt(dir, name, path) {
        Ok(f) => Ok(f),
        Err(e) if dir::is_not_regular(&e) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Open (creating) the directory `name` in `dir`.
pub fn mkdir_open(dir: BorrowedFd<'_>, name: &str, path: &Path) -> Result<OwnedFd> {
    Ok(dir::mkdir_open(dir, name, 0o755, path)?)
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

/// Replace the record `name` in `dir` with `value`, atomically: written
/// under a temporary name in `tmp` (a directory of the same filesystem,
/// shown as `tmp_path`), then renamed into place; with `sync`, the record
/// is fsynced first. An interrupted write leaves its temporary file in
/// `tmp`, nowhere else.
pub fn write_json<T: Serialize>(
    tmp: (BorrowedFd<'_>, &Path),
    dir: BorrowedFd<'_>,
    name: &str,
    path: &Path,
    value: &T,
    sync: bool,
) -> Result<()> {
    let data = serde_json::to_vec(value).expect("records serialize");
    let mut f = NewFile::named(tmp.0, tmp.1, 0o644)?;
    f.write_all(&data)?;
    if sync {
        f.sync()?;
    }
    f.commit(dir, name, path)?;
    Ok(())
}

/// Names in `dir` (without `.` and `..`), with their `d_type` when known.
pub fn read_names(dir: BorrowedFd<'_>, path: &Path) -> Result<Vec<(String, rustix::fs::FileType)>> {
    // Names that are not UTF-8 were not written by the gateway: skip.
    Ok(dir::read_names(dir, path)?
        .into_iter()
        .filter_map(|(n, t)| Some((n.into_string().ok()?, t)))
        .collect())
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
