//! `FS_IOC_FIEMAP` with its flexible array of extents, which rustix does
//! not wrap; [`crate::fiemap`] is the safe reading on top.
#![expect(
    unsafe_code,
    reason = "FS_IOC_FIEMAP and its flexible array have no safe wrapper; each call is narrow with its // SAFETY:"
)]

use std::os::fd::AsFd;

use linux_raw_sys::ioctl::FS_IOC_FIEMAP;
use rustix::io;
use rustix::ioctl::{ioctl, Updater};

/// The `struct fiemap` header from `<linux/fiemap.h>`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct FiemapHeader {
    fm_start: u64,
    fm_length: u64,
    fm_flags: u32,
    fm_mapped_extents: u32,
    fm_extent_count: u32,
    fm_reserved: u32,
}

/// `struct fiemap_extent` from `<linux/fiemap.h>`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct RawExtent {
    /// Byte offset of the extent in the file.
    pub fe_logical: u64,
    /// Byte offset of the extent on disk.
    pub fe_physical: u64,
    /// Length of the extent in bytes.
    pub fe_length: u64,
    fe_reserved64: [u64; 2],
    /// `FIEMAP_EXTENT_*` flags.
    pub fe_flags: u32,
    fe_reserved: [u32; 3],
}

/// How many extents one `FS_IOC_FIEMAP` call returns at most.
pub const FIEMAP_BATCH: usize = 64;

/// A `struct fiemap` followed by room for [`FIEMAP_BATCH`] extents, as the
/// kernel expects the flexible array member to be laid out.
#[repr(C)]
struct FiemapBuf {
    header: FiemapHeader,
    extents: [RawExtent; FIEMAP_BATCH],
}

/// `ioctl(fd, FS_IOC_FIEMAP, ...)` — map the file's bytes from `start` to
/// `start + len` onto disk extents, up to [`FIEMAP_BATCH`] at a time.
///
/// `flags` are `FIEMAP_FLAG_*` (e.g. `FIEMAP_FLAG_SYNC` to flush dirty pages
/// first). Returns the extents found; fewer than the batch means the range
/// is exhausted. See the kernel's `Documentation/filesystems/fiemap.rst`.
pub fn fiemap<Fd: AsFd>(fd: Fd, start: u64, len: u64, flags: u32) -> io::Result<Vec<RawExtent>> {
    let mut buf = Box::new(FiemapBuf {
        header: FiemapHeader {
            fm_start: start,
            fm_length: len,
            fm_flags: flags,
            fm_extent_count: FIEMAP_BATCH as u32,
            ..FiemapHeader::default()
        },
        extents: [RawExtent::default(); FIEMAP_BATCH],
    });
    // SAFETY: FS_IOC_FIEMAP is a read-write (`_IOWR`) ioctl taking a pointer
    // to `struct fiemap` followed by `fm_extent_count` `struct
    // fiemap_extent`s. `FiemapBuf` is `#[repr(C)]` with exactly that layout
    // and `fm_extent_count` equals the array's length, so the kernel writes
    // only inside the buffer, which outlives the call.
    unsafe { ioctl(fd, Updater::<{ FS_IOC_FIEMAP }, FiemapBuf>::new(&mut buf))? };
    let n = (buf.header.fm_mapped_extents as usize).min(FIEMAP_BATCH);
    Ok(buf.extents[..n].to_vec())
}
