//! `FICLONERANGE`, which rustix does not wrap (it has `ioctl_ficlone`, the
//! whole-file `FICLONE`).
#![expect(
    unsafe_code,
    reason = "the FICLONERANGE ioctl has no safe wrapper; each call is narrow with its // SAFETY:"
)]

use std::os::fd::AsFd;

use linux_raw_sys::general::file_clone_range;
use linux_raw_sys::ioctl::FICLONERANGE;
use rustix::io;
use rustix::ioctl::{ioctl, Setter};

/// `ioctl(dst, FICLONERANGE, {src, src_offset, len, dst_offset})` — share the
/// blocks of `src[src_offset..src_offset + len]` with `dst` at `dst_offset`.
///
/// Offsets and `len` must be multiples of the filesystem block size, except
/// that the range may end at the source's end of file; `len == 0` means "to
/// the source's end of file". See `ioctl_ficlonerange(2)`.
pub fn ficlonerange<Src: AsFd, Dst: AsFd>(
    src: Src,
    src_offset: u64,
    len: u64,
    dst: Dst,
    dst_offset: u64,
) -> io::Result<()> {
    let src_fd = src.as_fd();
    let arg = file_clone_range {
        src_fd: std::os::fd::AsRawFd::as_raw_fd(&src_fd) as i64,
        src_offset,
        src_length: len,
        dest_offset: dst_offset,
    };
    // SAFETY: FICLONERANGE is a write-only (`_IOW`) ioctl whose argument is a
    // pointer to `struct file_clone_range`; `Setter` passes a pointer to a
    // properly laid out copy of that struct, which lives for the whole call.
    // `src_fd` is borrowed, so the descriptor stays open during the call.
    unsafe { ioctl(dst, Setter::<{ FICLONERANGE }, file_clone_range>::new(arg)) }
}
