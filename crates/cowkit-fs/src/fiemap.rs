//! Reading a file's extent map (`FS_IOC_FIEMAP`), to see which blocks are
//! shared with other files.

use std::os::fd::AsFd;

use linux_raw_sys::ioctl::{
    FIEMAP_EXTENT_DELALLOC, FIEMAP_EXTENT_LAST, FIEMAP_EXTENT_SHARED, FIEMAP_EXTENT_UNWRITTEN,
    FIEMAP_FLAG_SYNC,
};
use serde::Serialize;

use crate::sys::fiemap as sys;

/// One extent of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Extent {
    /// Offset in the file, in bytes.
    pub logical: u64,
    /// Offset on the device, in bytes.
    pub physical: u64,
    /// Length, in bytes.
    pub length: u64,
    /// `FIEMAP_EXTENT_*` flags.
    pub flags: u32,
}

impl Extent {
    /// The blocks are shared with another file (a reflink).
    pub fn is_shared(&self) -> bool {
        self.flags & FIEMAP_EXTENT_SHARED != 0
    }

    /// Allocated but not yet written (reads as zeros).
    pub fn is_unwritten(&self) -> bool {
        self.flags & FIEMAP_EXTENT_UNWRITTEN != 0
    }

    /// Not yet allocated on disk (dirty page cache).
    pub fn is_delalloc(&self) -> bool {
        self.flags & FIEMAP_EXTENT_DELALLOC != 0
    }
}

/// The extents of all of `fd`. With `sync`, dirty pages are written back
/// first so that delayed allocations show as real extents.
pub fn extents<Fd: AsFd>(fd: Fd, sync: bool) -> rustix::io::Result<Vec<Extent>> {
    let flags = if sync { FIEMAP_FLAG_SYNC } else { 0 };
    let mut out = Vec::new();
    let mut start = 0u64;
    loop {
        let batch = sys::fiemap(&fd, start, u64::MAX - start, flags)?;
        let full = batch.len() == sys::FIEMAP_BATCH;
        let mut last = false;
        for e in &batch {
            last |= e.fe_flags & FIEMAP_EXTENT_LAST != 0;
            out.push(Extent {
                logical: e.fe_logical,
                physical: e.fe_physical,
                length: e.fe_length,
                flags: e.fe_flags,
            });
        }
        match out.last() {
            Some(e) if full && !last => start = e.logical + e.length,
            _ => return Ok(out),
        }
    }
}

/// Bytes in shared extents, and bytes in all extents, of `fd`.
pub fn shared_bytes<Fd: AsFd>(fd: Fd) -> rustix::io::Result<(u64, u64)> {
    let ext = extents(fd, true)?;
    let shared = ext.iter().filter(|e| e.is_shared()).map(|e| e.length).sum();
    let total = ext.iter().map(|e| e.length).sum();
    Ok((shared, total))
}
