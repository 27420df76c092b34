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
    Ok(open_all(candidates(&cowkit_fs::mountinfo::read()?)))
}

/// Open the root of each mount.
pub fn open_all(mounts: Vec<Mount>) -> (Vec<Target>, Vec<Skipped>) {
    let mut targets = Vec::new();
    let mut skipped = Vec::new();
    for mount in mounts {
        match open_dir(&mount.mount_point) {
            Ok(file) => targets.push(Target { mount, file }),
            Err(error) => skipped.push(Skipped { mount, error }),
        }
    }
    (targets, skipped)
}

/// Why the final sync falls back to `sync(2)`: a filesystem the command
/// may have written cannot be reached with `syncfs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fallback {
    /// A namespace was pinned during the run (an `nsfs` mount appeared, as
    /// `unshare --mount=FILE` makes): the mounts of such a mount namespace
    /// outlive its processes and are not in this process's table.
    PinnedNamespace {
        /// Where the namespace file is mounted.
        at: std::path::PathBuf,
    },
    /// A filesystem mounted during the run could not be opened.
    Unopenable {
        /// Its mount point.
        at: std::path::PathBuf,
        /// Why.
        error: String,
    },
    /// A process left running lives in another mount namespace, whose
    /// mounts this process cannot see.
    ForeignNamespace {
        /// The process.
        pid: i32,
    },
    /// The mount table could not be read again at the end.
    Unreadable {
        /// Why.
        error: String,
    },
}

impl std::fmt::Display for Fallback {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fallback::PinnedNamespace { at } => write!(
                f,
                "a namespace was pinned at `{}` during the run: its mounts are not visible here",
                at.display()
            ),
            Fallback::Unopenable { at, error } => write!(
                f,
                "`{}`, mounted during the run, cannot be opened: {error}",
                at.display()
            ),
            Fallback::ForeignNamespace { pid } => write!(
                f,
                "process {pid}, left running, is in another mount namespace: its mounts are not visible here"
            ),
            Fallback::Unreadable { error } => write!(
                f,
                "the mount table cannot be read again to find what the run mounted: {error}"
            ),
        }
    }
}

/// What the run changed in the mount table, found by comparing it before
/// and after: the candidate filesystems ([`candidates`]) whose device was
/// not a candidate before (mounted, or remounted read-write, during the
/// run), and the first change no `syncfs` here can cover.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Diff {
    /// New candidates, one per device.
    pub added: Vec<Mount>,
    /// A reason to fall back to `sync(2)`.
    pub fallback: Option<Fallback>,
}

/// Compare the table before the run with the one after. Mounts that went
/// away need nothing: a filesystem that was a candidate stays reachable
/// through the descriptor opened before the run, and unmounting the last
/// mount of any other filesystem writes it back (the kernel syncs a
/// filesystem when it shuts it down).
pub fn diff(before: &[Mount], after: &[Mount]) -> Diff {
    let known: std::collections::HashSet<_> = candidates(before).iter().map(|m| m.dev).collect();
    let mut was: Vec<&Mount> = before.iter().collect();
    let mut fallback = None;
    for m in after {
        match was.iter().position(|b| *b == m) {
            Some(i) => {
                was.swap_remove(i);
            }
            None if m.fs_type == "nsfs" && fallback.is_none() => {
                fallback = Some(Fallback::PinnedNamespace {
                    at: m.mount_point.clone(),
                });
            }
            None => {}
        }
    }
    let added = candidates(after)
        .into_iter()
        .filter(|m| !known.contains(&m.dev))
        .collect();
    Diff { added, fallback }
}

/// The identity (device, inode) of the mount namespace of `pid`, or of
/// this process; `None` when it cannot be read (the process is gone).
pub fn mount_namespace(pid: Option<i32>) -> Option<(u64, u64)> {
    let p = match pid {
        Some(pid) => format!("/proc/{pid}/ns/mnt"),
        None => "/proc/self/ns/mnt".to_string(),
    };
    let st = rustix::fs::stat(p.as_str()).ok()?;
    Some((st.st_dev, st.st_ino))
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

    #[test]
    fn diff_finds_new_filesystems_and_pinned_namespaces() {
        let before = cowkit_fs::mountinfo::parse(SAMPLE);
        assert_eq!(diff(&before, &before), Diff::default());
        // A bind mount of a known device, a tmpfs, and /ro remounted
        // read-write, a new ext4, a pinned namespace; /srv went away.
        let extra = "\
40 22 7:0 / /bind rw - xfs /dev/loop0 rw
41 22 0:40 / /t rw - tmpfs tmpfs rw
42 22 7:1 / /ro rw - ext4 /dev/loop1 rw
43 22 7:9 / /target rw - ext4 /dev/loop9 rw
44 22 0:4 mnt:[4026532] /pin rw - nsfs nsfs rw
";
        let mut after = cowkit_fs::mountinfo::parse(SAMPLE);
        after.retain(|m| m.mount_point != Path::new("/srv"));
        after.extend(cowkit_fs::mountinfo::parse(extra));
        let d = diff(&before, &after);
        let points: Vec<_> = d.added.iter().map(|m| m.mount_point.clone()).collect();
        assert_eq!(points, [PathBuf::from("/ro"), PathBuf::from("/target")]);
        assert_eq!(
            d.fallback,
            Some(Fallback::PinnedNamespace {
                at: PathBuf::from("/pin")
            })
        );
    }
}
