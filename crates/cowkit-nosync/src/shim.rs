//! The preload shim, embedded at build time, and where it is put on disk.
//!
//! `build.rs` compiles `crates/cowkit-nosync-shim/src/shim.rs` into a
//! cdylib; [`SHIM`] holds its bytes. [`file_name`] is content-addressed
//! (`libcowkit-nosync-<16 hex of SHA-256>.so`), so a new build never
//! overwrites a copy that running processes have mapped.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{io_err, Error, Result};

pub use cowkit_nosync_shim::{KINDS, STATS_ENV, STATS_PREFIX};

/// The shim: a shared object for `LD_PRELOAD` or `/etc/ld.so.preload`.
pub static SHIM: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/libcowkit-nosync.so"));

/// The oldest glibc the shim loads with: every symbol version it needs is at
/// most this (`__errno_location`: `GLIBC_2.2.5` on x86_64, `GLIBC_2.17`, the
/// first aarch64 glibc, on aarch64).
pub const OLDEST_GLIBC: (u32, u32) = (2, 17);

/// The hex SHA-256 of [`SHIM`].
pub fn digest() -> String {
    hex::encode(Sha256::digest(SHIM))
}

/// The shim's file name: `libcowkit-nosync-<16 hex digits>.so`.
pub fn file_name() -> String {
    format!("libcowkit-nosync-{}.so", &digest()[..16])
}

/// Where [`materialize`] puts the shim by default: `/run/cowkit` for root,
/// `$XDG_RUNTIME_DIR/cowkit` for a user who has one. `None` otherwise:
/// then each run makes a fresh private directory ([`private_dir`]), because
/// a fixed name in a shared `/tmp` (`/tmp/cowkit-<uid>`) could be created
/// first by another user.
pub fn default_cache_dir() -> Option<PathBuf> {
    let uid = rustix::process::getuid();
    if uid.is_root() {
        return Some(PathBuf::from("/run/cowkit"));
    }
    match std::env::var_os("XDG_RUNTIME_DIR") {
        Some(d) if !d.is_empty() && Path::new(&d).is_absolute() => {
            Some(PathBuf::from(d).join("cowkit"))
        }
        _ => None,
    }
}

/// A fresh directory with a random name in the temporary directory, made
/// by us with mode 0700 (`mkdtemp`: it cannot have existed before), and
/// checked to be ours; removed when dropped.
pub fn private_dir() -> Result<tempfile::TempDir> {
    let tmp = std::env::temp_dir();
    let dir = tempfile::Builder::new()
        .prefix("cowkit-nosync.")
        .permissions(fs::Permissions::from_mode(0o700))
        .tempdir_in(&tmp)
        .map_err(|e| io_err("create a directory in", &tmp, e))?;
    check_private(dir.path())?;
    Ok(dir)
}

/// Check that `dir` belongs to us and nobody else can write to it: a library
/// loaded into every process must not be replaceable by another user.
pub fn check_private(dir: &Path) -> Result<()> {
    let md = fs::symlink_metadata(dir).map_err(|e| io_err("inspect", dir, e))?;
    let uid = rustix::process::getuid().as_raw();
    let why = if !md.is_dir() {
        Some("it is not a directory".to_string())
    } else if md.uid() != uid {
        Some(format!("it belongs to uid {}, not {uid}", md.uid()))
    } else if md.mode() & 0o022 != 0 {
        Some(format!(
            "group or others may write to it (mode {:o})",
            md.mode() & 0o7777
        ))
    } else {
        None
    };
    match why {
        Some(why) => Err(Error::Unsafe {
            path: dir.to_path_buf(),
            why,
        }),
        None => Ok(()),
    }
}

/// Write the shim into `dir` (created with mode 0755 if missing) unless an
/// identical copy is there; return its path. The file is 0644 so that
/// processes that drop privileges can still load it. Written to a temporary
/// name and renamed into place.
pub fn materialize(dir: &Path) -> Result<PathBuf> {
    match fs::create_dir(dir) {
        Ok(()) => {
            fs::set_permissions(dir, fs::Permissions::from_mode(0o755))
                .map_err(|e| io_err("set the mode of", dir, e))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io_err("create", dir, e)),
    }
    check_private(dir)?;
    let path = dir.join(file_name());
    if let Ok(existing) = fs::read(&path) {
        let md = fs::symlink_metadata(&path).map_err(|e| io_err("inspect", &path, e))?;
        if existing == SHIM && md.is_file() && md.mode() & 0o7777 == 0o644 {
            return Ok(path);
        }
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(".libcowkit-nosync")
        .tempfile_in(dir)
        .map_err(|e| io_err("create a temporary file in", dir, e))?;
    tmp.write_all(SHIM)
        .map_err(|e| io_err("write", tmp.path().to_path_buf(), e))?;
    tmp.as_file()
        .set_permissions(fs::Permissions::from_mode(0o644))
        .map_err(|e| io_err("set the mode of", tmp.path().to_path_buf(), e))?;
    tmp.persist(&path)
        .map_err(|e| io_err("rename into place", &path, e.error))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_is_an_elf_shared_object() {
        assert_eq!(&SHIM[..4], b"\x7fELF");
        assert!(SHIM.len() < 64 * 1024, "{} bytes", SHIM.len());
        assert!(file_name().starts_with("libcowkit-nosync-"));
    }

    #[test]
    fn materialize_is_idempotent_and_refuses_open_directories() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("c");
        let a = materialize(&dir).unwrap();
        let ino = fs::metadata(&a).unwrap().ino();
        let b = materialize(&dir).unwrap();
        assert_eq!(a, b);
        assert_eq!(fs::metadata(&b).unwrap().ino(), ino, "rewritten");
        assert_eq!(fs::read(&a).unwrap(), SHIM);
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(materialize(&dir), Err(Error::Unsafe { .. })));
    }
}
