//! Files already in the root that a transaction's package meets: config
//! files decided as rpm decides them (`.rpmnew`, `.rpmsave`, `.rpmorig`),
//! and the files of an old version that the new one no longer has.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use cowkit_archive::files::{DigestAlgo, Kind};
use cowkit_fs::root::{RelPath, Root};
use cowkit_fs::IoError;
use cowkit_rpmdb::{Installed, Rpm};

use crate::txn::{ConfigNote, Pkg, TxSummary};
use crate::{Options, Result};

/// rpm's `%config(noreplace)` file flag.
const NOREPLACE: u32 = 1 << 4;
/// rpm's `%config` file flag.
pub(crate) const CONFIG: u32 = 1;
/// rpm's `%ghost` file flag.
const GHOST: u32 = 1 << 6;

/// Who else owns files: the transaction's packages, and the database.
pub(crate) struct Others<'a> {
    pub(crate) pkgs: &'a [Pkg],
    pub(crate) rpm: Option<&'a Rpm>,
}

impl Others<'_> {
    /// Of `paths` (files of the installed `name`), those another package
    /// of the transaction or another installed package owns.
    fn owned(&self, paths: &[&str], name: &str) -> Result<HashSet<String>> {
        let mut out: HashSet<String> = paths
            .iter()
            .filter(|path| {
                self.pkgs
                    .iter()
                    .any(|p| p.name != name && p.files.find(path).is_some())
            })
            .map(|p| p.to_string())
            .collect();
        if let Some(rpm) = self.rpm {
            for (path, owner) in rpm.owners(paths)? {
                if owner != name {
                    out.insert(path);
                }
            }
        }
        Ok(out)
    }
}

/// The parent directory of `path` (absolute, from a header) inside the
/// root, opened, and the last component; `None` when the parent is
/// missing.
fn parent_of(
    root: &Root,
    path: impl AsRef<[u8]>,
) -> Result<Option<(std::os::fd::OwnedFd, OsString, PathBuf)>> {
    let rel = RelPath::new(path)?;
    let Some((parent, name)) = rel.split() else {
        return Ok(None);
    };
    let host = root.display(&rel);
    match root.open_dir(&parent) {
        Ok(fd) => Ok(Some((fd, name.to_os_string(), host))),
        Err(e) if cowkit_fs::error::errno_of(&e) == Some(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The digest of the regular file `name` in `dir` with `algo`, or `None`
/// when it is missing or not a regular file.
fn digest_on_disk(
    dir: impl AsFd,
    name: &OsStr,
    path: &Path,
    algo: DigestAlgo,
) -> Result<Option<String>> {
    let Some(st) = cowkit_fs::dir::stat_at(dir.as_fd(), name)
        .map_err(|e| IoError::new("stat", path.to_path_buf(), e))?
    else {
        return Ok(None);
    };
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Ok(None);
    }
    let Some(mut f) = cowkit_fs::dir::open_read_opt(dir, name, path)? else {
        return Ok(None);
    };
    let mut h = algo.hasher();
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let n = f
            .read(&mut buf)
            .map_err(|e| IoError::new("read", path.to_path_buf(), e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(Some(hex::encode(h.finish())))
}

pub(crate) fn unlink(dir: impl AsFd, name: impl rustix::path::Arg, path: &Path) -> Result<()> {
    match rustix::fs::unlinkat(dir, name, rustix::fs::AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(IoError::new("remove", path.to_path_buf(), e).into()),
    }
}

/// `name` followed by `suffix` (`.rpmnew`), byte for byte.
fn with_suffix(name: &OsStr, suffix: &str) -> OsString {
    let mut to = name.to_os_string();
    to.push(suffix);
    to
}

fn rename_beside(dir: impl AsFd, name: &OsStr, suffix: &str, path: &Path) -> Result<()> {
    let to = with_suffix(name, suffix);
    rustix::fs::renameat(dir.as_fd(), name, dir.as_fd(), to.as_os_str())
        .map_err(|e| IoError::new("rename", path.to_path_buf(), e))?;
    Ok(())
}

type Discard = Vec<(std::os::fd::OwnedFd, String, PathBuf)>;

/// rpm's decisions for the package's config files that exist on disk:
/// an unchanged one is replaced; one the user edited is kept with the new
/// version beside it (`%config(noreplace)`: `.rpmnew`) or saved
/// (`%config`: `.rpmsave`, or `.rpmorig` when no installed package owned
/// it) and replaced. Renames of new files go into `opts.rename`; files
/// to drop after the install (new versions that change nothing) are
/// returned.
pub(crate) fn decide_config(
    root: &Root,
    p: &Pkg,
    old: Option<&Installed>,
    opts: &mut Options,
    sum: &mut TxSummary,
) -> Result<Discard> {
    let mut discard = Vec::new();
    let old_files: HashMap<&str, &cowkit_rpmdb::InstalledFile> = old
        .map(|o| o.files.iter().map(|f| (f.path.as_str(), f)).collect())
        .unwrap_or_default();
    for f in &p.files.files {
        let flags = p.flags.get(f.index as usize).copied().unwrap_or(0);
        if flags & CONFIG == 0
            || f.ghost
            || f.kind != Kind::Regular
            || !p.files.link_set(f).is_empty()
        {
            continue;
        }
        let Some((dir, name, path)) = parent_of(root, &f.path)? else {
            continue;
        };
        let new = f.digest.as_deref().map(hex::encode).unwrap_or_default();
        // The database's file lists are text: a name that is not UTF-8
        // is not found there, and counts as not owned before.
        let owned = f
            .path
            .to_str()
            .and_then(|p| old_files.get(p))
            .filter(|o| o.flags & CONFIG != 0);
        let algo = match owned {
            Some(_) => old
                .and_then(|o| DigestAlgo::from_rpm(o.digest_algo))
                .unwrap_or(p.files.algo),
            None => p.files.algo,
        };
        let Some(disk) = digest_on_disk(&dir, &name, &path, algo)? else {
            continue;
        };
        let note = |action| ConfigNote {
            path: f.path.to_string(),
            action,
        };
        match owned {
            Some(o) => {
                // Unchanged, or already the new version (an interrupted
                // transaction placed it): replaced, as rpm does.
                if disk == o.digest || (p.files.algo == algo && disk == new) {
                    continue;
                }
                if new == o.digest {
                    // Edited, and the new version changes nothing: keep.
                    let tmp = cowkit_fs::dir::temp_name();
                    opts.rename.insert(f.path.clone(), OsString::from(&tmp));
                    discard.push((dir, tmp, path));
                    sum.config.push(note("kept"));
                } else if flags & NOREPLACE != 0 {
                    opts.rename
                        .insert(f.path.clone(), with_suffix(&name, ".rpmnew"));
                    sum.config.push(note("rpmnew"));
                } else {
                    rename_beside(&dir, &name, ".rpmsave", &path)?;
                    sum.config.push(note("rpmsave"));
                }
            }
            None => {
                if p.files.algo == algo && disk == new {
                    continue;
                }
                if flags & NOREPLACE != 0 {
                    opts.rename
                        .insert(f.path.clone(), with_suffix(&name, ".rpmnew"));
                    sum.config.push(note("rpmnew"));
                } else {
                    rename_beside(&dir, &name, ".rpmorig", &path)?;
                    sum.config.push(note("rpmorig"));
                }
            }
        }
    }
    Ok(discard)
}

/// Remove the old version's files that the new one does not have (an
/// edited config file is saved as `.rpmsave`); directories only when
/// empty, deepest first. Files in another state than "normal" (replaced
/// by another package, not installed) are left.
pub(crate) fn remove_old_files(
    root: &Root,
    p: &Pkg,
    o: &Installed,
    others: &Others<'_>,
    sum: &mut TxSummary,
) -> Result<u64> {
    let mut n = 0;
    let mut dirs = Vec::new();
    let algo = DigestAlgo::from_rpm(o.digest_algo).unwrap_or(p.files.algo);
    let gone: Vec<&str> = o
        .files
        .iter()
        .filter(|f| p.files.find(&f.path).is_none() && f.state == 0)
        .map(|f| f.path.as_str())
        .collect();
    // Files another package owns stay: one of the transaction's (a file
    // that moved between packages), or another installed one (rpm skips
    // those too).
    let kept = others.owned(&gone, &o.name)?;
    for f in &o.files {
        if p.files.find(&f.path).is_some() || f.state != 0 || kept.contains(f.path.as_str()) {
            continue;
        }
        if f.mode & 0o170000 == 0o040000 {
            dirs.push(f.path.as_str());
            continue;
        }
        let Some((dir, name, path)) = parent_of(root, &f.path)? else {
            continue;
        };
        if f.flags & CONFIG != 0 && f.flags & GHOST == 0 {
            if let Some(d) = digest_on_disk(&dir, &name, &path, algo)? {
                if d != f.digest {
                    rename_beside(&dir, &name, ".rpmsave", &path)?;
                    sum.config.push(ConfigNote {
                        path: f.path.clone(),
                        action: "rpmsave",
                    });
                    continue;
                }
            }
        }
        if cowkit_fs::dir::stat_at(&dir, &name)
            .map_err(|e| IoError::new("stat", path.clone(), e))?
            .is_some()
        {
            unlink(&dir, &name, &path)?;
            n += 1;
        }
    }
    dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
    for d in dirs {
        let Some((dir, name, path)) = parent_of(root, d)? else {
            continue;
        };
        match rustix::fs::unlinkat(&dir, name.as_os_str(), rustix::fs::AtFlags::REMOVEDIR) {
            Ok(()) => n += 1,
            Err(rustix::io::Errno::NOENT)
            | Err(rustix::io::Errno::NOTEMPTY)
            | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(IoError::new("remove directory", path, e).into()),
        }
    }
    Ok(n)
}
