//! `XFS_IOC_FSGEOMETRY_V1`, the XFS geometry (allocation groups, inode
//! size), which neither rustix nor linux-raw-sys knows.
#![expect(
    unsafe_code,
    reason = "XFS_IOC_FSGEOMETRY_V1 has no safe wrapper; each call is narrow with its // SAFETY:"
)]

use std::os::fd::AsFd;

use rustix::io;
use rustix::ioctl::ioctl;

/// The start of `struct xfs_fsop_geom_v1` from `<xfs/xfs_fs.h>`: the
/// version-1 geometry every XFS kernel answers (112 bytes).
#[repr(C)]
#[derive(Clone, Copy)]
struct XfsFsopGeomV1 {
    blocksize: u32,
    rtextsize: u32,
    agblocks: u32,
    agcount: u32,
    logblocks: u32,
    sectsize: u32,
    inodesize: u32,
    imaxpct: u32,
    datablocks: u64,
    rtblocks: u64,
    rtextents: u64,
    logstart: u64,
    uuid: [u8; 16],
    sunit: u32,
    swidth: u32,
    version: i32,
    flags: u32,
    logsectsize: u32,
    rtsectsize: u32,
    dirblocksize: u32,
}

const _: () = assert!(std::mem::size_of::<XfsFsopGeomV1>() == 112);

/// `XFS_IOC_FSGEOMETRY_V1`: `_IOR('X', 100, struct xfs_fsop_geom_v1)`.
const XFS_IOC_FSGEOMETRY_V1: rustix::ioctl::Opcode =
    rustix::ioctl::opcode::read::<XfsFsopGeomV1>(b'X', 100);

/// `ioctl(fd, XFS_IOC_FSGEOMETRY_V1)`: `(blocksize, agblocks, agcount,
/// inodesize)` of the XFS filesystem holding `fd`. Other filesystems
/// answer `ENOTTY` (or `EINVAL`).
pub fn geometry<Fd: AsFd>(fd: Fd) -> io::Result<(u32, u32, u32, u32)> {
    // SAFETY: XFS_IOC_FSGEOMETRY_V1 is a read-only (`_IOR`) ioctl that fills
    // a `struct xfs_fsop_geom_v1`, whose layout `XfsFsopGeomV1` repeats (its
    // size, 112, is part of the opcode and checked above); `Getter` passes a
    // pointer to an uninitialised buffer of exactly that type, alive for the
    // call, and reads it only after the kernel reported success.
    let g = unsafe {
        ioctl(
            fd,
            rustix::ioctl::Getter::<{ XFS_IOC_FSGEOMETRY_V1 }, XfsFsopGeomV1>::new(),
        )?
    };
    Ok((g.blocksize, g.agblocks, g.agcount, g.inodesize))
}
