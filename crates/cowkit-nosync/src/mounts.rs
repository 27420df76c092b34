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
use std::path::{Path, PathBuf};

use crate::error::{io_err, Result};

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

/// One line of `/proc/self/mountinfo`, the fields used here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// `major:minor` of the filesystem.
    pub dev: (u32, u32),
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// Filesystem type.
    pub fs_type: String,
    /// The mount source (device or description).
    pub source: String,
    /// Whether the mount or the superblock is read-only.
    pub read_only: bool,
}

/// Undo mountinfo's octal escapes (`\040` for a space, …).
fn unescape(s: &str) -> PathBuf {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            out.push(((b[i + 1] - b'0') << 6) | ((b[i + 2] - b'0') << 3) | (b[i + 3] - b'0'));
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    use std::os::unix::ffi::OsStringExt;
    PathBuf::from(std::ffi::OsString::from_vec(out))
}

/// Parse the text of `/proc/PID/mountinfo`; malformed lines are skipped.
pub fn parse_mountinfo(text: &str) -> Vec<Mount> {
    let mut v = Vec::new();
    for line in text.lines() {
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let l: Vec<&str> = left.split(' ').collect();
        let r: Vec<&str> = right.split(' ').collect();
        if l.len() < 6 || r.len() < 3 {
            continue;
        }
        let Some((maj, min)) = l[2].split_once(':') else {
            continue;
        };
        let (Ok(maj), Ok(min)) = (maj.parse(), min.parse()) else {
            continue;
        };
        let ro = |opts: &str| opts.split(',').any(|o| o == "ro");
        v.push(Mount {
            dev: (maj, min),
            mount_point: unescape(l[4]),
            fs_type: r[0].to_string(),
            source: r[1].to_string(),
            read_only: ro(l[5]) || ro(r[2]),
        });
    }
    v
}

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
    let p = Path::new("/proc/self/mountinfo");
    let text = std::fs::read_to_string(p).map_err(|e| io_err("read", p, e))?;
    let mut targets = Vec::new();
    let mut skipped = Vec::new();
    for mount in candidates(&parse_mountinfo(&text)) {
        match open_dir(&mount.mount_point) {
            Ok(file) => targets.push(Target { mount, file }),
            Err(error) => skipped.push(Skipped { mount, error }),
        }
    }
    Ok((targets, skipped))
}

fn open_dir(p: &Path) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::DIRECTORY.bits() as i32)
        .open(p)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let m = parse_mountinfo(SAMPLE);
        assert_eq!(m.len(), 7);
        assert_eq!(m[3].mount_point, PathBuf::from("/mnt/my disk"));
        assert!(m[5].read_only && m[6].read_only && !m[0].read_only);
        let c = candidates(&m);
        let points: Vec<_> = c.iter().map(|m| m.mount_point.clone()).collect();
        assert_eq!(points, [PathBuf::from("/"), PathBuf::from("/mnt/my disk")]);
    }
}
