//! Block-size and alignment helpers.

use std::os::fd::AsFd;

/// Round `x` down to a multiple of `block` (a power of two).
#[inline]
pub fn align_down(x: u64, block: u64) -> u64 {
    debug_assert!(block.is_power_of_two());
    x & !(block - 1)
}

/// Round `x` up to a multiple of `block` (a power of two).
#[inline]
pub fn align_up(x: u64, block: u64) -> u64 {
    debug_assert!(block.is_power_of_two());
    x.div_ceil(block) * block
}

/// Whether `x` is a multiple of `block` (a power of two).
#[inline]
pub fn is_aligned(x: u64, block: u64) -> bool {
    x & (block - 1) == 0
}

/// The block size that clones on `fd`'s filesystem must be aligned to
/// (`statfs.f_bsize`: the filesystem block size on XFS, Btrfs and ext4).
pub fn block_size<Fd: AsFd>(fd: Fd) -> rustix::io::Result<u64> {
    let st = rustix::fs::fstatfs(fd)?;
    let bs = st.f_bsize as u64;
    // A filesystem that reports something odd still gets a usable answer.
    Ok(if bs.is_power_of_two() { bs } else { 4096 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding() {
        assert_eq!(align_down(0, 4096), 0);
        assert_eq!(align_down(4095, 4096), 0);
        assert_eq!(align_down(4096, 4096), 4096);
        assert_eq!(align_up(0, 4096), 0);
        assert_eq!(align_up(1, 4096), 4096);
        assert_eq!(align_up(4096, 4096), 4096);
        assert_eq!(align_up(4097, 4096), 8192);
        assert!(is_aligned(8192, 4096));
        assert!(!is_aligned(8193, 4096));
    }
}
