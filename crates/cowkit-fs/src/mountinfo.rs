//! The one parser of `/proc/self/mountinfo` (see `proc_pid_mountinfo(5)`).
//!
//! Used by the filesystem probe (which mount holds a path) and by
//! `cowkit nosync` (which filesystems to sync).

use std::path::{Path, PathBuf};

use crate::error::IoError;

/// One line of `/proc/PID/mountinfo`, the fields cowkit uses.
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
fn unescape(s: &str) -> Vec<u8> {
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
    out
}

/// One line; `None` when it is malformed.
pub fn parse_line(line: &str) -> Option<Mount> {
    use std::os::unix::ffi::OsStringExt;
    let (left, right) = line.split_once(" - ")?;
    let l: Vec<&str> = left.split(' ').collect();
    let r: Vec<&str> = right.split(' ').collect();
    if l.len() < 6 || r.len() < 3 {
        return None;
    }
    let (maj, min) = l[2].split_once(':')?;
    let ro = |opts: &str| opts.split(',').any(|o| o == "ro");
    Some(Mount {
        dev: (maj.parse().ok()?, min.parse().ok()?),
        mount_point: PathBuf::from(std::ffi::OsString::from_vec(unescape(l[4]))),
        fs_type: r[0].to_string(),
        source: String::from_utf8_lossy(&unescape(r[1])).into_owned(),
        read_only: ro(l[5]) || ro(r[2]),
    })
}

/// Parse the text of `/proc/PID/mountinfo`; malformed lines are skipped.
pub fn parse(text: &str) -> Vec<Mount> {
    text.lines().filter_map(parse_line).collect()
}

/// The mounts of this process, in mountinfo order.
pub fn read() -> Result<Vec<Mount>, IoError> {
    let p = Path::new("/proc/self/mountinfo");
    let text = std::fs::read_to_string(p).map_err(|e| IoError::new("read", p, e))?;
    Ok(parse(&text))
}

/// The mount whose mount point is the longest prefix of `path` (which
/// should be absolute and canonical); the last one wins among equals (the
/// mount on top).
pub fn mount_of<'a>(mounts: &'a [Mount], path: &Path) -> Option<&'a Mount> {
    mounts
        .iter()
        .filter(|m| path.starts_with(&m.mount_point))
        .max_by_key(|m| m.mount_point.as_os_str().len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line() {
        let m =
            parse_line("36 35 7:0 / /mnt/a\\040b rw,relatime shared:1 - xfs /dev/loop0 rw,attr2")
                .unwrap();
        assert_eq!(m.mount_point, PathBuf::from("/mnt/a b"));
        assert_eq!(m.fs_type, "xfs");
        assert_eq!(m.source, "/dev/loop0");
        assert_eq!(m.dev, (7, 0));
        assert!(!m.read_only);
        assert!(parse_line("garbage").is_none());
    }

    #[test]
    fn longest_prefix_wins() {
        let all = parse(
            "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n\
             2 1 7:0 / /mnt rw - xfs /dev/loop0 rw\n\
             3 1 7:1 / /mnt/in rw - btrfs /dev/loop1 ro\n",
        );
        assert_eq!(
            mount_of(&all, Path::new("/mnt/in/x")).unwrap().fs_type,
            "btrfs"
        );
        assert_eq!(
            mount_of(&all, Path::new("/mnt/inx")).unwrap().fs_type,
            "xfs"
        );
        assert_eq!(mount_of(&all, Path::new("/etc")).unwrap().fs_type, "ext4");
        assert!(all[2].read_only);
    }
}
