//! What a filesystem can do: its type and block size, and whether blocks
//! can be shared between two places, found by trying it.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use serde::Serialize;

use crate::copy::{Method, Reason};
use crate::error::{io, Result};
use crate::fiemap;

/// Where a path lives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FsInfo {
    /// The path asked about.
    pub path: PathBuf,
    /// Filesystem type, e.g. `xfs`, `btrfs`, `ext4`, `tmpfs`.
    pub fs_type: String,
    /// `statfs.f_type`.
    pub magic: u64,
    /// Filesystem block size: the alignment clones need.
    pub block_size: u64,
    /// `major:minor` of the device (`st_dev`).
    pub device: String,
    /// The mount point that holds `path`, from `/proc/self/mountinfo`.
    pub mount_point: Option<PathBuf>,
    /// What is mounted there (e.g. `/dev/loop0`).
    pub mount_source: Option<String>,
}

/// Whether an operation works, as found by trying it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "result", content = "reason", rename_all = "snake_case")]
pub enum Support {
    /// It worked.
    Yes,
    /// The kernel refused it.
    No(Reason),
    /// It could not be tried (e.g. the directory is not writable).
    Untested(Reason),
}

/// What `copy_file_range` does between two places.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "result", content = "reason", rename_all = "snake_case")]
pub enum CopyFileRange {
    /// The copy shares the source's blocks (FIEMAP shows them shared).
    Clones,
    /// The kernel copies the bytes.
    Copies,
    /// The kernel refused it.
    Refused(Reason),
    /// It could not be tried.
    Untested(Reason),
}

/// What cowkit can do between a source and a destination directory.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PairProbe {
    /// Where sources would be read.
    pub src: FsInfo,
    /// Where copies would be written.
    pub dst: FsInfo,
    /// Both on one device number (Btrfs subvolumes differ yet can share).
    pub same_device: bool,
    /// `FICLONE` from a file in `src` to a file in `dst`.
    pub reflink: Support,
    /// `copy_file_range` from `src` to `dst`.
    pub copy_file_range: CopyFileRange,
    /// The method the fallback chain would settle on.
    pub best: Method,
}

/// Type, block size, device and mount of the filesystem holding `path`.
pub fn fs_info(path: &Path) -> Result<FsInfo> {
    let st = rustix::fs::statfs(path).map_err(|e| io("statfs", path, e))?;
    let stat = rustix::fs::stat(path).map_err(|e| io("stat", path, e))?;
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mounts = crate::mountinfo::read().unwrap_or_default();
    let mount = crate::mountinfo::mount_of(&mounts, &canonical);
    let magic = st.f_type as u64;
    let fs_type = match &mount {
        Some(m) => m.fs_type.clone(),
        None => magic_name(magic).to_string(),
    };
    Ok(FsInfo {
        path: path.to_path_buf(),
        fs_type,
        magic,
        block_size: st.f_bsize as u64,
        device: format!(
            "{}:{}",
            rustix::fs::major(stat.st_dev),
            rustix::fs::minor(stat.st_dev)
        ),
        mount_point: mount.map(|m| m.mount_point.clone()),
        mount_source: mount.map(|m| m.source.clone()),
    })
}

/// Probe what can be done from `src` to `dst` (directories, or files whose
/// directories are used). Creates only unnamed temporary files
/// (`O_TMPFILE`), or named ones removed at once where that is unsupported.
pub fn probe_pair(src: &Path, dst: &Path) -> Result<PairProbe> {
    let src_info = fs_info(src)?;
    let dst_info = fs_info(dst)?;
    let same_device = src_info.device == dst_info.device;
    let src_dir = dir_of(src);
    let dst_dir = dir_of(dst);
    let block = src_info
        .block_size
        .max(dst_info.block_size)
        .clamp(4096, 1 << 20);

    let (reflink, copy_file_range) = match make_source(&src_dir, block as usize * 4) {
        Err(e) => (
            Support::Untested(Reason::Errno(e)),
            CopyFileRange::Untested(Reason::Errno(e)),
        ),
        Ok(source) => (try_clone(&source, &dst_dir), try_cfr(&source, &dst_dir)),
    };
    let best = match (reflink, copy_file_range) {
        (Support::Yes, _) => Method::Clone,
        (_, CopyFileRange::Clones | CopyFileRange::Copies) => Method::CopyFileRange,
        _ => Method::ReadWrite,
    };
    Ok(PairProbe {
        src: src_info,
        dst: dst_info,
        same_device,
        reflink,
        copy_file_range,
        best,
    })
}

fn dir_of(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.to_path_buf()
    } else {
        match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        }
    }
}

/// An unnamed file in `dir`: `O_TMPFILE`, or a named file unlinked at once.
fn temp_file(dir: &Path) -> std::result::Result<File, Errno> {
    let flags = OFlags::RDWR | OFlags::CLOEXEC;
    match rustix::fs::open(dir, flags | OFlags::TMPFILE, Mode::from_raw_mode(0o600)) {
        Ok(fd) => Ok(File::from(fd)),
        Err(Errno::OPNOTSUPP | Errno::ISDIR | Errno::INVAL) => {
            let name = dir.join(format!(".cowkit-probe-{}", std::process::id()));
            let fd: OwnedFd = rustix::fs::open(
                &name,
                flags | OFlags::CREATE | OFlags::EXCL,
                Mode::from_raw_mode(0o600),
            )?;
            rustix::fs::unlink(&name)?;
            Ok(File::from(fd))
        }
        Err(e) => Err(e),
    }
}

fn make_source(dir: &Path, len: usize) -> std::result::Result<File, Errno> {
    let f = temp_file(dir)?;
    let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8 + 1).collect();
    let mut off = 0;
    while off < len {
        off += rustix::io::pwrite(&f, &data[off..], off as u64)?;
    }
    Ok(f)
}

fn try_clone(source: &File, dst_dir: &Path) -> Support {
    let dst = match temp_file(dst_dir) {
        Ok(f) => f,
        Err(e) => return Support::Untested(Reason::Errno(e)),
    };
    match rustix::fs::ioctl_ficlone(&dst, source) {
        Ok(()) => Support::Yes,
        Err(e) => Support::No(Reason::Errno(e)),
    }
}

fn try_cfr(source: &File, dst_dir: &Path) -> CopyFileRange {
    let dst = match temp_file(dst_dir) {
        Ok(f) => f,
        Err(e) => return CopyFileRange::Untested(Reason::Errno(e)),
    };
    let len = match rustix::fs::fstat(source) {
        Ok(st) => st.st_size as u64,
        Err(e) => return CopyFileRange::Untested(Reason::Errno(e)),
    };
    let (mut off_in, mut off_out) = (0u64, 0u64);
    while off_in < len {
        let want = (len - off_in) as usize;
        match rustix::fs::copy_file_range(source, Some(&mut off_in), &dst, Some(&mut off_out), want)
        {
            Ok(0) => return CopyFileRange::Refused(Reason::ShortCopy),
            Ok(_) => {}
            Err(e) => return CopyFileRange::Refused(Reason::Errno(e)),
        }
    }
    match fiemap::extents(dst.as_fd(), true) {
        Ok(ext) if ext.iter().any(|e| e.is_shared()) => CopyFileRange::Clones,
        // No FIEMAP (tmpfs) or no shared extent: the bytes were copied.
        _ => CopyFileRange::Copies,
    }
}

/// Names of the filesystems cowkit cares about, by `statfs` magic.
fn magic_name(magic: u64) -> &'static str {
    use linux_raw_sys::general as g;
    match magic as u32 {
        g::XFS_SUPER_MAGIC => "xfs",
        g::BTRFS_SUPER_MAGIC => "btrfs",
        g::EXT4_SUPER_MAGIC => "ext4",
        g::TMPFS_MAGIC => "tmpfs",
        g::NFS_SUPER_MAGIC => "nfs",
        g::OVERLAYFS_SUPER_MAGIC => "overlay",
        _ => "unknown",
    }
}
