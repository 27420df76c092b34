//! fs-verity: enable it on a file (`FS_IOC_ENABLE_VERITY`), read a file's
//! digest (`FS_IOC_MEASURE_VERITY`). rustix wraps neither.
#![expect(
    unsafe_code,
    reason = "the fs-verity ioctls have no safe wrapper; each call is narrow with its // SAFETY:"
)]

use std::os::fd::AsFd;

use linux_raw_sys::ioctl::{FS_IOC_ENABLE_VERITY, FS_IOC_MEASURE_VERITY};
use rustix::io;
use rustix::ioctl::{ioctl, Setter, Updater};

/// `struct fsverity_enable_arg` from `<linux/fsverity.h>`.
#[repr(C)]
#[derive(Clone, Copy)]
struct FsverityEnableArg {
    version: u32,
    hash_algorithm: u32,
    block_size: u32,
    salt_size: u32,
    salt_ptr: u64,
    sig_size: u32,
    reserved1: u32,
    sig_ptr: u64,
    reserved2: [u64; 11],
}

/// `FS_VERITY_HASH_ALG_SHA256`.
pub const FS_VERITY_HASH_ALG_SHA256: u8 = 1;

/// `ioctl(fd, FS_IOC_ENABLE_VERITY)` with SHA-256, no salt, no signature
/// and `block_size` (the page size is what every filesystem accepts). `fd`
/// must be open read-only with no writer left. See the kernel's
/// `Documentation/filesystems/fsverity.rst`.
pub fn enable<Fd: AsFd>(fd: Fd, block_size: u32) -> io::Result<()> {
    let arg = FsverityEnableArg {
        version: 1,
        hash_algorithm: u32::from(FS_VERITY_HASH_ALG_SHA256),
        block_size,
        salt_size: 0,
        salt_ptr: 0,
        sig_size: 0,
        reserved1: 0,
        sig_ptr: 0,
        reserved2: [0; 11],
    };
    // SAFETY: FS_IOC_ENABLE_VERITY is a write-only (`_IOW`) ioctl whose
    // argument is a pointer to `struct fsverity_enable_arg`; `Setter`
    // passes a pointer to a `#[repr(C)]` copy with that exact layout (128
    // bytes), living for the whole call. Salt and signature are absent
    // (null pointers with size 0), so the kernel reads no other memory.
    unsafe {
        ioctl(
            fd,
            Setter::<{ FS_IOC_ENABLE_VERITY }, FsverityEnableArg>::new(arg),
        )
    }
}

/// `struct fsverity_digest` with room for a 64-byte digest.
#[repr(C)]
struct FsverityDigest {
    digest_algorithm: u16,
    digest_size: u16,
    digest: [u8; 64],
}

/// `ioctl(fd, FS_IOC_MEASURE_VERITY)`: the file's fs-verity digest as
/// (algorithm, digest), or `ENODATA` when verity is not enabled on it.
pub fn measure<Fd: AsFd>(fd: Fd) -> io::Result<(u8, Vec<u8>)> {
    let mut d = FsverityDigest {
        digest_algorithm: 0,
        digest_size: 64,
        digest: [0; 64],
    };
    // SAFETY: FS_IOC_MEASURE_VERITY is a read-write (`_IOWR`) ioctl taking
    // a pointer to `struct fsverity_digest`, whose `digest_size` says how
    // many bytes follow (64 here, the size of the array of this
    // `#[repr(C)]` struct); the kernel writes at most that many and fails
    // with EOVERFLOW otherwise. The buffer outlives the call.
    unsafe {
        ioctl(
            fd,
            Updater::<{ FS_IOC_MEASURE_VERITY }, FsverityDigest>::new(&mut d),
        )?
    };
    let n = usize::from(d.digest_size).min(64);
    Ok((d.digest_algorithm as u8, d.digest[..n].to_vec()))
}
