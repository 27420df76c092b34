//! Who besides the caller and root can change a file, and a directory
//! path walked so that each directory passed is checked.
//!
//! Root acting on a path that runs through a directory another user can
//! write acts on whatever that user puts there: they can rename the next
//! component away and put a symlink in its place. [`open_dir_walked`]
//! resolves a path one component at a time from `/`, reading symlinks
//! itself, and names the first directory passed that someone else can
//! change, so the caller can refuse (or treat what it opened as theirs).

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::error::IoError;

/// Why a process of effective uid `me` cannot trust the file or directory
/// `st` describes to stay as it is: someone other than `me` and root owns
/// it, or its group or everyone may write it. `None` when only `me` and
/// root can change it.
pub fn others_can_change(st: &rustix::fs::Stat, me: u32) -> Option<String> {
    let mode = st.st_mode & 0o7777;
    if st.st_uid != me && st.st_uid != 0 {
        return Some(format!("it is owned by uid {}", st.st_uid));
    }
    if mode & 0o002 != 0 {
        return Some(format!("it is writable by everyone (mode {mode:04o})"));
    }
    if mode & 0o020 != 0 {
        return Some(format!(
            "it is writable by its group, gid {} (mode {mode:04o})",
            st.st_gid
        ));
    }
    None
}

/// [`others_can_change`] for a directory that is passed through: a
/// sticky directory of `me` or root (`/tmp`) is fine, since others cannot
/// rename or remove what they do not own in it.
fn others_can_swap(st: &rustix::fs::Stat, me: u32) -> Option<String> {
    let sticky = st.st_mode & 0o1000 != 0 && (st.st_uid == me || st.st_uid == 0);
    others_can_change(st, me).filter(|_| !sticky)
}

/// The most symlinks one walk follows (as the kernel's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// A walk that could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum WalkError {
    /// A system call failed.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A directory had to be created beyond a directory someone else can
    /// change: not done.
    #[error("`{}` can be changed by someone else: {why}", path.display())]
    Untrusted {
        /// That directory.
        path: PathBuf,
        /// Who else can change it.
        why: String,
    },
}

/// Open the directory `path` (read-only), resolving it one component at a
/// time from `/` (a relative path from the current directory), following
/// symlinks by reading them. With `me`, every directory passed through,
/// the last one included, is checked for that uid with the sticky-aware
/// form of [`others_can_change`]; the first that fails is returned with the
/// descriptor: `(fd, Some((that directory, why)))`. With `create`, missing
/// components are made (mode 0755, before the umask), but never beyond a
/// directory that failed the check ([`WalkError::Untrusted`]).
pub fn open_dir_walked(
    path: &Path,
    me: Option<u32>,
    create: bool,
) -> Result<(OwnedFd, Option<(PathBuf, String)>), WalkError> {
    let abs = std::path::absolute(path).map_err(|e| IoError::new("resolve", path, e))?;
    let open = |dir: BorrowedFd<'_>, name: &std::ffi::OsStr, shown: &Path| {
        rustix::fs::openat(
            dir,
            name,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| IoError::new("open directory", shown, e))
    };
    let root = || open(rustix::fs::CWD, "/".as_ref(), Path::new("/"));
    let mut cur = root()?;
    let mut shown = PathBuf::from("/");
    let mut first = None;
    check(&cur, &shown, me, &mut first)?;
    let mut todo: VecDeque<OsString> = components(&abs);
    let mut links = 0;
    while let Some(c) = todo.pop_front() {
        let next = shown.join(&c);
        let st = match rustix::fs::statat(&cur, c.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Err(Errno::NOENT) if create => {
                if let Some((path, why)) = first.clone() {
                    return Err(WalkError::Untrusted { path, why });
                }
                match rustix::fs::mkdirat(&cur, c.as_os_str(), Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(IoError::new("create directory", next, e).into()),
                }
                rustix::fs::statat(&cur, c.as_os_str(), AtFlags::SYMLINK_NOFOLLOW)
            }
            r => r,
        }
        .map_err(|e| IoError::new("stat", &next, e))?;
        if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
            links += 1;
            if links > MAX_LINKS {
                return Err(IoError::new("resolve", path, Errno::LOOP).into());
            }
            let target = rustix::fs::readlinkat(&cur, c.as_os_str(), Vec::new())
                .map_err(|e| IoError::new("read the symlink", &next, e))?;
            let target = PathBuf::from(std::ffi::OsStr::from_bytes(target.to_bytes()));
            for t in components(&target).into_iter().rev() {
                todo.push_front(t);
            }
            if target.is_absolute() {
                cur = root()?;
                shown = PathBuf::from("/");
            }
            continue;
        }
        cur = open(cur.as_fd(), c.as_os_str(), &next)?;
        shown = if c == ".." {
            shown.parent().map_or(shown.clone(), Path::to_path_buf)
        } else {
            next
        };
        check(&cur, &shown, me, &mut first)?;
    }
    let fd = rustix::fs::openat(
        &cur,
        ".",
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| IoError::new("open directory", path, e))?;
    Ok((fd, first))
}

/// Record in `first`, if it is still empty, why `fd` (named `shown`)
/// fails the check for `me`.
fn check(
    fd: &OwnedFd,
    shown: &Path,
    me: Option<u32>,
    first: &mut Option<(PathBuf, String)>,
) -> Result<(), IoError> {
    let st = rustix::fs::fstat(fd).map_err(|e| IoError::new("stat", shown, e))?;
    if let (None, Some(me)) = (&first, me) {
        *first = others_can_swap(&st, me).map(|why| (shown.to_path_buf(), why));
    }
    Ok(())
}

/// The names of `p`'s components (`..` kept, `.` and `/` left out).
fn components(p: &Path) -> VecDeque<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{symlink, PermissionsExt};

    fn ino(fd: &OwnedFd) -> u64 {
        rustix::fs::fstat(fd).unwrap().st_ino
    }

    #[test]
    fn walks_through_symlinks_to_the_same_directory() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real/deep");
        std::fs::create_dir_all(&real).unwrap();
        symlink("real", t.path().join("abs-not")).unwrap();
        symlink(t.path().join("real"), t.path().join("abs")).unwrap();
        let want = std::fs::metadata(&real).unwrap();
        let me = rustix::process::geteuid().as_raw();
        for p in ["abs-not/deep", "abs/deep", "real/../real/deep"] {
            let (fd, why) = open_dir_walked(&t.path().join(p), Some(me), false).unwrap();
            assert_eq!(ino(&fd), std::os::unix::fs::MetadataExt::ino(&want), "{p}");
            assert_eq!(why, None, "{p}");
        }
    }

    #[test]
    fn names_the_first_directory_others_can_change() {
        let t = tempfile::tempdir().unwrap();
        let open = t.path().join("open");
        std::fs::create_dir_all(open.join("inner")).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let me = rustix::process::geteuid().as_raw();
        let (_, why) = open_dir_walked(&open.join("inner"), Some(me), false).unwrap();
        let (path, why) = why.expect("a world-writable directory on the way");
        assert_eq!(path, open);
        assert!(why.contains("writable by everyone"), "{why}");
        // Nothing is created past it.
        let e = open_dir_walked(&open.join("new/deeper"), Some(me), true).unwrap_err();
        assert!(matches!(e, WalkError::Untrusted { .. }), "{e}");
        assert!(!open.join("new").exists());
        // Sticky, like /tmp: others cannot swap what is in it.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let (_, why) = open_dir_walked(&open.join("inner"), Some(me), false).unwrap();
        assert_eq!(why, None);
        // Unchecked: created.
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        open_dir_walked(&open.join("new/deeper"), None, true).unwrap();
        assert!(open.join("new/deeper").is_dir());
    }
}
