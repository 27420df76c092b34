//! Mounting an image from descriptors, with the new mount API
//! (`fsopen`/`fsconfig`/`fsmount`/`move_mount`).
//!
//! No path inside the store reaches the kernel: the metadata layer (the
//! image directory, or the EROFS file) and the objects directory are
//! opened by the caller without following symlinks, and handed over as
//! `/proc/self/fd/N`, which names exactly the open file. An EROFS file is
//! mounted file-backed (Linux 6.12+) as a detached mount that is never
//! attached anywhere: overlayfs takes it as a layer (Linux 6.15+ accepts a
//! detached mount) and keeps its own private clone. Overlayfs takes
//! `lowerdir+`/`datadir+` one layer at a time (Linux 6.7+), so no path is
//! split at `:` or `,`.
//!
//! The overlay is mounted read-only and, unless the caller trusts the
//! image, `nosuid,nodev`: a setuid file or a file capability in the image
//! gives nothing when run, and its device nodes cannot be opened.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::io::Errno;
use rustix::mount::{
    fsconfig_create, fsconfig_set_string, fsmount, fsopen, move_mount, FsMountFlags, FsOpenFlags,
    MountAttrFlags, MoveMountFlags,
};

use crate::{Error, Result};

/// How an image is mounted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Honour setuid and setgid bits, file capabilities and device nodes
    /// (no `nosuid,nodev`). Only for an image whose store root trusts.
    pub trusted: bool,
    /// Require the fs-verity digests the image records (`verity=require`).
    pub verity: bool,
}

/// A `/proc/self/fd/N` name of `fd`: the open file itself, whatever its
/// path has become since.
fn fd_path(fd: BorrowedFd<'_>) -> String {
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}

/// What the kernel logged on the filesystem context `fs` (`e …`/`w …`
/// lines), at most a few.
fn log_of(fs: &OwnedFd) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    for _ in 0..8 {
        match rustix::io::read(fs, &mut buf) {
            Ok(n) if n > 0 => out.push(String::from_utf8_lossy(&buf[..n]).trim().to_string()),
            _ => break,
        }
    }
    out.join("; ")
}

fn failed(what: &str, step: &str, e: Errno, fs: Option<&OwnedFd>) -> Error {
    let log = fs.map(log_of).filter(|l| !l.is_empty());
    Error::Image(format!(
        "{what}: {step} failed: {e}{}",
        log.map(|l| format!(" (the kernel says: {l})"))
            .unwrap_or_default()
    ))
}

/// A new filesystem context of `fstype` with `params` set, created and
/// mounted detached with `attrs`.
fn detached(
    fstype: &str,
    params: &[(&str, &str)],
    attrs: MountAttrFlags,
    what: &str,
) -> Result<OwnedFd> {
    let fs = fsopen(fstype, FsOpenFlags::FSOPEN_CLOEXEC)
        .map_err(|e| failed(what, &format!("fsopen({fstype})"), e, None))?;
    for (k, v) in params {
        fsconfig_set_string(&fs, *k, *v)
            .map_err(|e| failed(what, &format!("setting `{k}={v}`"), e, Some(&fs)))?;
    }
    fsconfig_create(&fs).map_err(|e| failed(what, "creating the filesystem", e, Some(&fs)))?;
    fsmount(&fs, FsMountFlags::FSMOUNT_CLOEXEC, attrs)
        .map_err(|e| failed(what, "fsmount", e, Some(&fs)))
}

/// The EROFS file `file` (open, a regular file) mounted read-only,
/// detached: `nosuid,nodev` too unless `opts.trusted`, like the overlay
/// over it.
pub fn erofs(file: BorrowedFd<'_>, path: &Path, opts: Options) -> Result<OwnedFd> {
    let source = fd_path(file);
    detached(
        "erofs",
        &[("source", source.as_str())],
        attrs(opts),
        &format!("cannot mount `{}` (EROFS, file-backed)", path.display()),
    )
}

/// Read-only, and `nosuid,nodev` unless trusted.
fn attrs(opts: Options) -> MountAttrFlags {
    let mut attrs = MountAttrFlags::MOUNT_ATTR_RDONLY;
    if !opts.trusted {
        attrs |= MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV;
    }
    attrs
}

/// The overlay of `meta` (the metadata layer: an image directory or a
/// detached EROFS mount) over `objects` (a data-only layer), read-only,
/// attached at `target`.
///
/// `source` is what `/proc/self/mountinfo` and `findmnt` show as the
/// mount's source (the layers show as `/proc/self/fd/N` there).
pub fn overlay(
    meta: BorrowedFd<'_>,
    objects: BorrowedFd<'_>,
    source: &Path,
    target: &Path,
    opts: Options,
) -> Result<()> {
    let (lower, data) = (fd_path(meta), fd_path(objects));
    let source = source.to_string_lossy();
    let mut params = vec![
        ("source", source.as_ref()),
        ("lowerdir+", lower.as_str()),
        ("datadir+", data.as_str()),
        ("metacopy", "on"),
    ];
    if opts.verity {
        params.push(("verity", "require"));
    }
    let what = format!("cannot mount the overlay at `{}`", target.display());
    let mnt = detached("overlay", &params, attrs(opts), &what)?;
    // The mount point as the caller named it (root's own choice).
    move_mount(
        mnt.as_fd(),
        "",
        rustix::fs::CWD,
        target,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )
    .map_err(|e| failed(&what, "move_mount", e, None))
}
