//! The shim in `/etc/ld.so.preload` of a root, for installer environments
//! where every process should get it without `LD_PRELOAD`.
//!
//! [`install`] writes the shim to `R/usr/lib/libcowkit-nosync-<hash>.so`
//! (temporary name, then rename) and adds that path, as seen inside `R`, to
//! `R/etc/ld.so.preload` as a line of its own, keeping every other entry,
//! the file's mode and owner. [`remove`] takes out only entries of ours
//! (any `libcowkit-nosync-*.so` in `/usr/lib`, so older builds too) and
//! their files; a preload file left empty is deleted. Both are idempotent.
//! Every path is resolved inside `R` (`openat2 RESOLVE_IN_ROOT`), and the
//! last components are opened with `O_NOFOLLOW`: a symlink planted in the
//! root cannot send a write outside it.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

use cowkit_fs::dir::NewFile;
use cowkit_fs::meta::{self, Meta};
use cowkit_fs::root::{RelPath, Root};
use cowkit_fs::Handle;
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

use crate::error::{io_err, Result};
use crate::shim::{file_name, SHIM};

/// The directory of the shim inside the root.
pub const LIB_DIR: &str = "/usr/lib";
/// The preload list inside the root.
pub const PRELOAD_FILE: &str = "/etc/ld.so.preload";

/// The shim's path inside a root: `/usr/lib/libcowkit-nosync-<hash>.so`.
pub fn shim_path() -> String {
    format!("{LIB_DIR}/{}", file_name())
}

/// Whether a preload entry is one of ours (this build or an older one).
pub fn is_ours(entry: &str) -> bool {
    entry
        .strip_prefix(LIB_DIR)
        .and_then(|r| r.strip_prefix("/libcowkit-nosync"))
        .is_some_and(|r| r.ends_with(".so") && !r.contains('/'))
}

/// What [`install`] or [`remove`] changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// The shim's path inside the root.
    pub shim: String,
    /// Whether the shim file was written (install) or deleted (remove).
    pub shim_changed: bool,
    /// Whether `/etc/ld.so.preload` changed.
    pub preload_changed: bool,
    /// Old entries of ours taken out (and their files deleted).
    pub stale_removed: Vec<String>,
}

/// The most of a preload file or an old shim that is read (both are small;
/// a huge file in a hostile root is refused rather than read whole).
const MAX_READ: u64 = 16 << 20;

fn rel(p: &str) -> RelPath {
    RelPath::new(p).expect("constant paths are valid")
}

fn read_at(
    dir: impl AsFd,
    name: &str,
    shown: &Path,
) -> Result<Option<(Vec<u8>, rustix::fs::Stat)>> {
    // Non-blocking and regular files only: a fifo at `etc/ld.so.preload`
    // would otherwise hang the install.
    let opened = cowkit_fs::dir::open_regular(|f| {
        rustix::fs::openat(&dir, name, f | OFlags::NOFOLLOW, Mode::empty())
    });
    match opened {
        Ok((fd, st)) => {
            let mut v = Vec::new();
            File::from(fd)
                .take(MAX_READ)
                .read_to_end(&mut v)
                .map_err(|e| io_err("read", shown, e))?;
            if v.len() as u64 >= MAX_READ {
                return Err(io_err(
                    "read",
                    shown,
                    std::io::Error::other(format!("it is larger than {MAX_READ} bytes")),
                ));
            }
            Ok(Some((v, st)))
        }
        Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => Ok(None),
        Err(e) => Err(io_err("open", shown, e)),
    }
}

/// Write `data` to `dir/name` through a temporary file and a rename, with
/// `mode` and, if given, the owner.
fn replace_at(
    dir: &OwnedFd,
    name: &str,
    data: &[u8],
    mode: u32,
    owner: Option<(u32, u32)>,
    shown: &Path,
) -> Result<()> {
    let parent = shown.parent().unwrap_or(shown);
    let mut f = NewFile::named(dir.as_fd(), parent, 0o600)?;
    f.write_all(data)?;
    let meta = Meta {
        uid: owner.map(|o| o.0),
        gid: owner.map(|o| o.1),
        mode: Some(mode),
        ..Meta::default()
    };
    meta::apply(Handle::new(f.file(), shown), &meta, None)?;
    f.sync()?;
    f.commit(dir.as_fd(), name, shown)?;
    Ok(())
}

/// Parse a preload file into lines of whitespace- or colon-separated
/// entries (as `ld.so` reads it); rebuild it without the entries `drop`
/// rejects, keeping every other line as it was.
fn filter_lines(text: &str, drop: impl Fn(&str) -> bool) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut dropped = Vec::new();
    for line in text.lines() {
        let entries: Vec<&str> = line
            .split(|c: char| c.is_whitespace() || c == ':')
            .filter(|e| !e.is_empty())
            .collect();
        if line.trim_start().starts_with('#') || !entries.iter().any(|e| drop(e)) {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let kept: Vec<&str> = entries.iter().copied().filter(|e| !drop(e)).collect();
        dropped.extend(entries.iter().filter(|e| drop(e)).map(|e| e.to_string()));
        if !kept.is_empty() {
            out.push_str(&kept.join(" "));
            out.push('\n');
        }
    }
    (out, dropped)
}

/// Remove the file of a dropped entry (inside the root, without following
/// a symlink in its last component).
fn unlink_entry(root: &Root, entry: &str) -> Result<bool> {
    let dir = root.open_dir(&rel(LIB_DIR))?;
    let name = entry.rsplit('/').next().unwrap_or(entry);
    match rustix::fs::unlinkat(&dir, name, rustix::fs::AtFlags::empty()) {
        Ok(()) => Ok(true),
        Err(Errno::NOENT) => Ok(false),
        Err(e) => Err(io_err("remove", root.display(&rel(entry)), e.into())),
    }
}

/// Install the shim into `root` and register it in `root/etc/ld.so.preload`.
pub fn install(root: &Path) -> Result<Changes> {
    let root = Root::open(root)?;
    let mut changes = Changes {
        shim: shim_path(),
        ..Changes::default()
    };
    let lib = root.create_dirs(&rel(LIB_DIR), 0o755)?;
    let name = file_name();
    let shown = root.display(&rel(&changes.shim));
    // Whatever is there and is not our shim (a fifo, a huge file, an old
    // build) is replaced; the rename reports real errors.
    let same = read_at(&lib, &name, &shown)
        .ok()
        .flatten()
        .is_some_and(|(data, st)| data == SHIM && st.st_mode & 0o7777 == 0o644);
    if !same {
        replace_at(&lib, &name, SHIM, 0o644, None, &shown)?;
        changes.shim_changed = true;
    }

    let etc = root.create_dirs(&rel("/etc"), 0o755)?;
    let shown = root.display(&rel(PRELOAD_FILE));
    let existing = read_at(&etc, "ld.so.preload", &shown)?;
    let (text, mode, owner) = match &existing {
        Some((data, st)) => (
            String::from_utf8_lossy(data).into_owned(),
            st.st_mode & 0o7777,
            Some((st.st_uid, st.st_gid)),
        ),
        None => (String::new(), 0o644, None),
    };
    let ours = changes.shim.clone();
    let (mut new, stale) = filter_lines(&text, |e| is_ours(e) && e != ours);
    let (_, present) = filter_lines(&new, |e| e == ours);
    if present.is_empty() {
        new.push_str(&ours);
        new.push('\n');
    }
    if new != text {
        replace_at(&etc, "ld.so.preload", new.as_bytes(), mode, owner, &shown)?;
        changes.preload_changed = true;
    }
    for e in &stale {
        unlink_entry(&root, e)?;
    }
    changes.stale_removed = stale;
    Ok(changes)
}

/// Take our entries out of `root/etc/ld.so.preload` and delete their files.
pub fn remove(root: &Path) -> Result<Changes> {
    let root = Root::open(root)?;
    let mut changes = Changes {
        shim: shim_path(),
        ..Changes::default()
    };
    let shown = root.display(&rel(PRELOAD_FILE));
    if let Ok(etc) = root.open_dir(&rel("/etc")) {
        if let Some((data, st)) = read_at(&etc, "ld.so.preload", &shown)? {
            let text = String::from_utf8_lossy(&data).into_owned();
            let (new, dropped) = filter_lines(&text, is_ours);
            if !dropped.is_empty() {
                if new.trim().is_empty() {
                    rustix::fs::unlinkat(&etc, "ld.so.preload", rustix::fs::AtFlags::empty())
                        .map_err(|e| io_err("remove", &shown, e.into()))?;
                } else {
                    replace_at(
                        &etc,
                        "ld.so.preload",
                        new.as_bytes(),
                        st.st_mode & 0o7777,
                        Some((st.st_uid, st.st_gid)),
                        &shown,
                    )?;
                }
                changes.preload_changed = true;
            }
            for e in dropped.iter().filter(|e| **e != changes.shim) {
                if unlink_entry(&root, e)? {
                    changes.stale_removed.push(e.clone());
                }
            }
        }
    }
    if root.open_dir(&rel(LIB_DIR)).is_ok() {
        changes.shim_changed = unlink_entry(&root, &changes.shim)?;
    }
    Ok(changes)
}

/// The host path of the shim inside `root` (for messages).
pub fn host_shim_path(root: &Path) -> PathBuf {
    root.join(shim_path().trim_start_matches('/'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn recognises_our_entries_only() {
        assert!(is_ours("/usr/lib/libcowkit-nosync-0123456789abcdef.so"));
        assert!(is_ours("/usr/lib/libcowkit-nosync.so"));
        assert!(!is_ours("/usr/lib/x/libcowkit-nosync.so"));
        assert!(!is_ours("/usr/lib/libeatmydata.so"));
        assert!(!is_ours("/lib/libcowkit-nosync.so"));
    }

    #[test]
    fn install_and_remove_keep_other_entries_and_are_idempotent() {
        let t = tempfile::tempdir().unwrap();
        let r = t.path();
        std::fs::create_dir_all(r.join("etc")).unwrap();
        let orig = "# keep me\n/usr/lib/other.so\n/usr/lib/a.so /usr/lib/libcowkit-nosync-old.so\n";
        std::fs::write(r.join("etc/ld.so.preload"), orig).unwrap();
        std::fs::set_permissions(
            r.join("etc/ld.so.preload"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        let c = install(r).unwrap();
        assert!(c.shim_changed && c.preload_changed);
        assert_eq!(c.stale_removed, ["/usr/lib/libcowkit-nosync-old.so"]);
        let text = std::fs::read_to_string(r.join("etc/ld.so.preload")).unwrap();
        assert_eq!(
            text,
            format!(
                "# keep me\n/usr/lib/other.so\n/usr/lib/a.so\n{}\n",
                shim_path()
            )
        );
        let mode = std::fs::metadata(r.join("etc/ld.so.preload"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o7777, 0o600);
        assert_eq!(std::fs::read(host_shim_path(r)).unwrap(), SHIM);
        let again = install(r).unwrap();
        assert!(!again.shim_changed && !again.preload_changed);

        let c = remove(r).unwrap();
        assert!(c.shim_changed && c.preload_changed);
        let text = std::fs::read_to_string(r.join("etc/ld.so.preload")).unwrap();
        assert_eq!(text, "# keep me\n/usr/lib/other.so\n/usr/lib/a.so\n");
        assert!(!host_shim_path(r).exists());
        let again = remove(r).unwrap();
        assert!(!again.shim_changed && !again.preload_changed);
    }

    #[test]
    fn a_fresh_root_gets_a_file_that_remove_deletes() {
        let t = tempfile::tempdir().unwrap();
        install(t.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(t.path().join("etc/ld.so.preload")).unwrap(),
            format!("{}\n", shim_path())
        );
        remove(t.path()).unwrap();
        assert!(!t.path().join("etc/ld.so.preload").exists());
    }

    #[test]
    fn symlinks_in_the_root_do_not_lead_outside() {
        let t = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let r = t.path().join("root");
        std::fs::create_dir_all(r.join("usr")).unwrap();
        // /etc -> the host's (here: another directory's) etc, absolute.
        std::os::unix::fs::symlink(outside.path(), r.join("etc")).unwrap();
        std::os::unix::fs::symlink(outside.path(), r.join("usr/lib")).unwrap();
        // Dangling inside the root: refused, nothing written outside.
        assert!(install(&r).is_err());
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        // An absolute symlink resolves inside the root: R/<outside path>.
        let inside = r.join(outside.path().strip_prefix("/").unwrap());
        std::fs::create_dir_all(&inside).unwrap();
        install(&r).unwrap();
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        assert!(inside.join("ld.so.preload").exists());
    }
}
