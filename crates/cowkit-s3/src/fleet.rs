//! Several gateways on one root: the locks they share and the sweep of
//! what a dead one left.
//!
//! Every change that takes more than one filesystem call holds a lock
//! that other processes see: an open-file-description byte-range lock
//! (`F_OFD_SETLKW`, through `cowkit_fs::lock`) on one byte of
//! `DIR/.cowkit-s3/lock`, at an offset made from what it protects:
//!
//! ```text
//! [0, 2^32)        an upload id: its part commits, complete (prepare,
//!                  assembly, commit, cleanup), abort, expiry
//! [2^32, 2^33)     bucket/key: an object's record and rename, a delete
//! [2^33, 2^34)     a running gateway: held for its life; its temporary
//!                  files are in DIR/.cowkit-s3/tmp/<that id>/
//! ```
//!
//! Each lock is taken on a descriptor opened for it alone, so it excludes
//! threads of one process as well as other processes; the kernel drops it
//! when that descriptor is closed or the process dies (`kill -9`
//! included). Two names may hash to one offset: they then wait for each
//! other, which costs time, never correctness. A complete holds an upload
//! lock and then an object lock; nothing takes them the other way round.
//!
//! The sweep (at start and every `Options::sweep_every`) removes the
//! temporary directories of gateways whose lock is free (they died), the
//! part files of completed uploads, and completed uploads past
//! `Options::completed_ttl`.

use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use sha2::Digest;

use crate::error::{io, Result};
use crate::fsutil;

/// The lock file in `DIR/.cowkit-s3/`.
pub const LOCK_FILE: &str = "lock";

/// What a lock protects (the range of its offset).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Slot {
    Upload = 0,
    Object = 1,
    Instance = 2,
}

fn offset(slot: Slot, name: &str) -> u64 {
    let h = sha2::Sha256::digest(name.as_bytes());
    ((slot as u64) << 32) | u64::from(u32::from_be_bytes([h[0], h[1], h[2], h[3]]))
}

/// A lock held; dropping it releases it.
#[derive(Debug)]
pub struct Held {
    _fd: OwnedFd,
}

/// Take the lock `slot`/`name`: waiting for it with `wait`, else `None`
/// when another holder has it.
pub(crate) fn lock(
    sys: BorrowedFd<'_>,
    sys_path: &Path,
    slot: Slot,
    name: &str,
    wait: bool,
) -> Result<Option<Held>> {
    let path = sys_path.join(LOCK_FILE);
    let fd = rustix::fs::openat(
        sys,
        LOCK_FILE,
        OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(0o644),
    )
    .map_err(|e| io("open the lock file", &path, e))?;
    match cowkit_fs::lock::write(&fd, offset(slot, name), 1, wait) {
        Ok(()) => Ok(Some(Held { _fd: fd })),
        Err(Errno::AGAIN) if !wait => Ok(None),
        Err(e) => Err(io("lock a range of", path, e)),
    }
}

/// Whether `name` is a gateway id (16 hex digits).
pub(crate) fn is_instance_id(name: &str) -> bool {
    name.len() == 16 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A fresh gateway id, its lock (held) and its temporary directory
/// `tmp/<id>/`.
pub(crate) fn claim_instance(
    sys: BorrowedFd<'_>,
    sys_path: &Path,
    tmp_all: BorrowedFd<'_>,
) -> Result<(String, Held, OwnedFd)> {
    let tmp_path = sys_path.join("tmp");
    for _ in 0..16 {
        let id = fsutil::rand_hex(8);
        let Some(held) = lock(sys, sys_path, Slot::Instance, &id, false)? else {
            continue;
        };
        match rustix::fs::mkdirat(tmp_all, id.as_str(), Mode::from_raw_mode(0o755)) {
            Ok(()) => {}
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(io("create a directory in", &tmp_path, e)),
        }
        let fd = cowkit_fs::dir::open_dir(tmp_all, id.as_str(), &tmp_path.join(&id))?;
        return Ok((id, held, fd));
    }
    Err(io("create a directory in", tmp_path, Errno::EXIST))
}

/// What a sweep removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Swept {
    /// Temporary directories of gateways that died (and stray files).
    pub dead_tmp: usize,
    /// Completed uploads whose part files were still there.
    pub completed_cleaned: usize,
    /// Completed uploads past the TTL, removed.
    pub expired: usize,
    /// Upload directories without `upload.json` (left by older versions).
    pub incomplete: usize,
}
