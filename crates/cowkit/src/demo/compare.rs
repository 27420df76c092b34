//! The demo's proof that two roots are equal: every entry's type, mode,
//! owner, size, link target, extended attributes (file capabilities
//! included), content and hardlink group, and the mtime of what the
//! packages placed; and the blocks a root shares (FIEMAP).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use cowkit_fs::meta::list_xattrs;
use cowkit_fs::Handle;

use crate::output::CliError;

/// One entry of a root, as compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// `d`, `f`, `l` or `o` (anything else).
    kind: char,
    /// Permission bits with setuid, setgid and sticky.
    mode: u32,
    uid: u32,
    gid: u32,
    /// Size of a regular file (0 for the others).
    size: u64,
    /// Seconds.
    mtime: i64,
    /// A symlink's target.
    target: Option<PathBuf>,
    /// Names and values of the extended attributes of files and
    /// directories.
    xattrs: Vec<(String, Vec<u8>)>,
    /// Device and inode, for hardlink groups.
    ino: (u64, u64),
}

/// A root's entries by path relative to it.
pub type Listing = BTreeMap<String, Entry>;

/// Whether `p` is `prefix` or below it.
fn at_or_below(p: &str, prefix: &str) -> bool {
    p == prefix || p.strip_prefix(prefix).is_some_and(|r| r.starts_with('/'))
}

/// The entries of `root`, without those at or below `excluded` (paths
/// relative to the root).
pub fn list(root: &Path, excluded: &[String]) -> Result<Listing, CliError> {
    let mut out = Listing::new();
    let mut todo = vec![String::new()];
    while let Some(rel) = todo.pop() {
        let dir = root.join(&rel);
        let err = |e| CliError::new(format!("cannot read `{}`", dir.display()), e);
        for item in std::fs::read_dir(&dir).map_err(err)? {
            let name = item.map_err(err)?.file_name();
            let name = name.to_string_lossy();
            let p = if rel.is_empty() {
                name.into_owned()
            } else {
                format!("{rel}/{name}")
            };
            if excluded.iter().any(|x| at_or_below(&p, x)) {
                continue;
            }
            let e = entry(&root.join(&p))?;
            if e.kind == 'd' {
                todo.push(p.clone());
            }
            out.insert(p, e);
        }
    }
    Ok(out)
}

fn entry(path: &Path) -> Result<Entry, CliError> {
    let err = |e| CliError::new(format!("cannot read `{}`", path.display()), e);
    let m = std::fs::symlink_metadata(path).map_err(err)?;
    let t = m.file_type();
    let kind = match () {
        _ if t.is_dir() => 'd',
        _ if t.is_file() => 'f',
        _ if t.is_symlink() => 'l',
        _ => 'o',
    };
    let target = t
        .is_symlink()
        .then(|| std::fs::read_link(path))
        .transpose()
        .map_err(err)?;
    let xattrs = if kind == 'd' || kind == 'f' {
        let f = open(path)?;
        let mut all: Vec<(String, Vec<u8>)> = list_xattrs(Handle::new(&f, path))
            .map_err(|e| CliError::new(format!("cannot read `{}`", path.display()), e))?
            .into_iter()
            .map(|x| (x.name.to_string_lossy().into_owned(), x.value))
            .collect();
        all.sort();
        all
    } else {
        Vec::new()
    };
    Ok(Entry {
        kind,
        mode: m.mode() & 0o7777,
        uid: m.uid(),
        gid: m.gid(),
        size: if kind == 'f' { m.len() } else { 0 },
        mtime: m.mtime(),
        target,
        xattrs,
        ino: (m.dev(), m.ino()),
    })
}

/// `path` opened for reading, not following a symlink.
fn open(path: &Path) -> Result<File, CliError> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| CliError::new(format!("cannot open `{}`", path.display()), e))
}

/// Directories of `l` that are parents of an excluded path, hold no
/// compared entry and are missing from `other`: made by dnf for what is
/// excluded (its cache path, its logs), not by the packages.
fn only_for_excluded(l: &Listing, other: &Listing, excluded: &[String]) -> Vec<String> {
    l.iter()
        .filter(|(p, e)| {
            let below = format!("{p}/");
            e.kind == 'd'
                && !other.contains_key(*p)
                && excluded.iter().any(|x| x.starts_with(&below))
                && !l.keys().any(|k| k.starts_with(&below))
        })
        .map(|(p, _)| p.clone())
        .collect()
}

/// How the roots `a` (with `la`) and `b` (with `lb`) differ, one line per
/// difference (empty when they are equal). Mtimes are compared for what
/// is not a directory and was not written at or after `since` in both
/// roots (what scriptlets write carries the time of its run).
pub fn differences(
    (a, la): (&Path, &Listing),
    (b, lb): (&Path, &Listing),
    excluded: &[String],
    since: i64,
) -> Result<Vec<String>, CliError> {
    let (mut la, mut lb) = (la.clone(), lb.clone());
    for p in only_for_excluded(&la, &lb, excluded) {
        la.remove(&p);
    }
    for p in only_for_excluded(&lb, &la, excluded) {
        lb.remove(&p);
    }
    let mut out = Vec::new();
    for p in la.keys().filter(|p| !lb.contains_key(*p)) {
        out.push(format!("{p}: only in `{}`", a.display()));
    }
    for p in lb.keys().filter(|p| !la.contains_key(*p)) {
        out.push(format!("{p}: only in `{}`", b.display()));
    }
    for (p, ea) in &la {
        let Some(eb) = lb.get(p) else { continue };
        let (mut ma, mut mb) = (ea.clone(), eb.clone());
        (ma.ino, mb.ino) = ((0, 0), (0, 0));
        if ea.kind == 'd' || (ea.mtime >= since && eb.mtime >= since) {
            (ma.mtime, mb.mtime) = (0, 0);
        }
        if ma != mb {
            out.push(format!("{p}: {ea:?} against {eb:?}"));
        } else if ea.kind == 'f' && !same_content(&a.join(p), &b.join(p))? {
            out.push(format!("{p}: the contents differ"));
        }
    }
    if hardlink_groups(&la) != hardlink_groups(&lb) {
        out.push(format!(
            "hardlinks: {:?} against {:?}",
            hardlink_groups(&la),
            hardlink_groups(&lb)
        ));
    }
    Ok(out)
}

/// The groups of paths that name one inode (with two names or more).
fn hardlink_groups(l: &Listing) -> BTreeSet<Vec<String>> {
    let mut by_ino: BTreeMap<(u64, u64), Vec<String>> = BTreeMap::new();
    for (p, e) in l.iter().filter(|(_, e)| e.kind == 'f') {
        by_ino.entry(e.ino).or_default().push(p.clone());
    }
    by_ino.into_values().filter(|g| g.len() > 1).collect()
}

fn same_content(a: &Path, b: &Path) -> Result<bool, CliError> {
    let (mut fa, mut fb) = (open(a)?, open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    let err = |e| CliError::new(format!("cannot read `{}`", a.display()), e);
    loop {
        let n = fa.read(&mut ba).map_err(err)?;
        if n == 0 {
            return Ok(fb.read(&mut bb).map_err(err)? == 0);
        }
        if fb.read_exact(&mut bb[..n]).is_err() || ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

/// Bytes of the regular files of `l` (each inode once), and how many of
/// them sit in extents shared with other files (FIEMAP).
pub fn shared(root: &Path, l: &Listing) -> Result<(u64, u64), CliError> {
    let mut seen = BTreeSet::new();
    let (mut shared, mut bytes) = (0, 0);
    for (p, e) in l.iter().filter(|(_, e)| e.kind == 'f') {
        if !seen.insert(e.ino) {
            continue;
        }
        let path = root.join(p);
        let f = open(&path)?;
        let (s, _) = cowkit_fs::fiemap::shared_bytes(&f)
            .map_err(|e| CliError::new(format!("FIEMAP of `{}`", path.display()), e))?;
        shared += s.min(e.size);
        bytes += e.size;
    }
    Ok((shared, bytes))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn tree(dir: &Path) {
        std::fs::create_dir_all(dir.join("etc/demo")).unwrap();
        std::fs::write(dir.join("etc/demo/a.conf"), "a = 1\n").unwrap();
        std::fs::hard_link(dir.join("etc/demo/a.conf"), dir.join("etc/demo/b.conf")).unwrap();
        std::os::unix::fs::symlink("demo/a.conf", dir.join("etc/link")).unwrap();
        std::fs::create_dir_all(dir.join("var/log/dnf")).unwrap();
    }

    fn diffs(a: &Path, b: &Path) -> Vec<String> {
        let excluded = vec!["var/log/dnf".to_string()];
        let la = list(a, &excluded).unwrap();
        let lb = list(b, &excluded).unwrap();
        differences((a, &la), (b, &lb), &excluded, 0).unwrap()
    }

    /// Issue 28: the demo's comparison finds equal roots equal, and a
    /// changed mode, content, link target, hardlink or a missing entry
    /// different.
    #[test]
    fn demo_comparison_sees_every_difference() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        tree(&a);
        tree(&b);
        std::fs::remove_dir_all(b.join("var/log")).unwrap();
        assert_eq!(diffs(&a, &b), Vec::<String>::new());

        let conf = b.join("etc/demo/a.conf");
        let mode = std::fs::metadata(&conf).unwrap().permissions();
        std::fs::set_permissions(&conf, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(diffs(&a, &b)
            .iter()
            .any(|l| l.starts_with("etc/demo/a.conf:")));
        std::fs::set_permissions(&conf, mode).unwrap();
        assert_eq!(diffs(&a, &b), Vec::<String>::new());

        std::fs::write(&conf, "a = 2\n").unwrap();
        assert!(diffs(&a, &b).contains(&"etc/demo/a.conf: the contents differ".to_string()));
        std::fs::write(&conf, "a = 1\n").unwrap();

        std::fs::remove_file(b.join("etc/demo/b.conf")).unwrap();
        std::fs::write(b.join("etc/demo/b.conf"), "a = 1\n").unwrap();
        assert!(diffs(&a, &b).iter().any(|l| l.starts_with("hardlinks:")));

        std::fs::remove_file(b.join("etc/link")).unwrap();
        std::os::unix::fs::symlink("demo/b.conf", b.join("etc/link")).unwrap();
        assert!(diffs(&a, &b).iter().any(|l| l.starts_with("etc/link:")));
        std::fs::remove_file(b.join("etc/link")).unwrap();
        assert!(diffs(&a, &b)
            .iter()
            .any(|l| l.starts_with("etc/link: only in")));
    }
}
