//! Which filesystems the final `syncfs` covers.
//!
//! Which filesystems a command wrote to cannot be known for static binaries
//! (nothing sees their writes but the kernel), so the default is every
//! filesystem the command *could* have written to: each writable mount in
//! `/proc/self/mountinfo` whose type stores data somewhere (not `proc`,
//! `sysfs`, `cgroup2`, `tmpfs` and the like), one per device (bind mounts
//! of one filesystem count once). `syncfs` on a filesystem with nothing
//! dirty costs little. The root directory of each is opened **before** the
//! command starts: `syncfs` reports a writeback error that happened after
//! the descriptor was opened (errseq, Linux 5.8 and later), so errors during
//! the command are seen even if something else synced the data first.

use std::fs::File;
use std::path::Path;

use crate::error::Result;

/// Filesystem types never synced: in-memory, pseudo, or read-only by nature.
/// `tmpfs`/`ramfs` are here because `syncfs` on them does nothing.
pub const SKIPPED_TYPES: &[&str] = &[
    "proc",
    "sysfs",
    "cgroup",
    "cgroup2",
    "devpts",
    "devtmpfs",
    "mqueue",
    "tracefs",
    "debugfs",
    "securityfs",
    "pstore",
    "bpf",
    "configfs",
    "fusectl",
    "hugetlbfs",
    "autofs",
    "binfmt_misc",
    "efivarfs",
    "rpc_pipefs",
    "nsfs",
    "tmpfs",
    "ramfs",
    "squashfs",
    "iso9660",
    "erofs",
];

pub use cowkit_fs::mountinfo::Mount;

/// The mounts the default final sync covers: writable, storing data, one per
/// device (the first mount of each, in mountinfo order).
pub fn candidates(mounts: &[Mount]) -> Vec<Mount> {
    let mut seen = std::collections::HashSet::new();
    mounts
        .iter()
        .filter(|m| !m.read_only && !SKIPPED_TYPES.contains(&m.fs_type.as_str()))
        .filter(|m| seen.insert(m.dev))
        .cloned()
        .collect()
}

/// A filesystem to sync at the end, its root opened before the command ran.
#[derive(Debug)]
pub struct Target {
    /// The mount.
    pub mount: Mount,
    /// Its mount point, opened read-only.
    pub file: File,
}

/// A candidate that could not be opened (another namespace's mount, a
/// permission, a stale mount); it is not synced.
#[derive(Debug)]
pub struct Skipped {
    /// The mount.
    pub mount: Mount,
    /// Why.
    pub error: std::io::Error,
}

/// Open the root of every candidate filesystem of this process.
pub fn open_targets() -> Result<(Vec<Target>, Vec<Skipped>)> {
    let mut targets = Vec::new();
    let mut skipped = Vec::new();
    for mount in candidates(&cowkit_fs::mountinfo::read()?) {
        match open_dir(&mount.mount_point) {
            Ok(file) => targets.push(Target { mount, file }),
            Err(error) => skipped.push(Skipped { mount, error }),
        }
    }
    Ok((targets, skipped))
}

fn open_dir(p: &Path) -> std::io::Result<File> {
    cowkit_fs::dir::open_dir(rustix::fs::CWD, p, p)
        .map(File::from)
        .map_err(|e| e.source)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    const SAMPLE: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw,errors=remount-ro
23 22 0:21 / /proc rw,nosuid shared:2 - proc proc rw
24 22 0:22 / /tmp rw shared:3 - tmpfs tmpfs rw,size=100k
25 22 7:0 / /mnt/my\\040disk rw master:4 - xfs /dev/loop0 rw,attr2
26 22 7:0 /sub /srv rw - xfs /dev/loop0 rw,attr2
27 22 7:1 / /ro ro - ext4 /dev/loop1 rw
28 22 7:2 / /ro2 rw - btrfs /dev/loop2 ro
garbage line
";

    #[test]
    fn parses_and_picks_writable_storage_once_per_device() {
        let m = cowkit_fs::mountinfo::parse(SAMPLE);
        assert_eq!(m.len(), 7);
        assert_eq!(m[3].mount_point, PathBuf::from("/mnt/my disk"));
        assert!(m[5].read_only && m[6].read_only && !m[0].read_only);
        let c = candidates(&m);
        let points: Vec<_> = c.iter().map(|m| m.mount_point.clone()).collect();
        assert_eq!(points, [PathBuf::from("/"), PathBuf::from("/mnt/my disk")]);
    }
}
