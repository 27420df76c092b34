//! rpm's file actions ([`crate::fate`]) carried out on what is already in
//! the root: `.rpmnew` names, `.rpmsave`/`.rpmorig` renames, files not
//! installed, and the files of erased packages.

use std::ffi::{OsStr, OsString};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use cowkit_fs::root::{RelPath, Root};
use cowkit_fs::IoError;
use cowkit_rpmdb::Installed;

use crate::action::Action;
use crate::pkg::Pkg;
use crate::prepared::{ConfigNote, TxSummary};
use crate::{Gate, Options, Passed, Result};

use crate::action::flag::GHOST;

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

/// Rename `name` to `name` + `suffix`; `false` when it is not there.
/// A change that can be seen: with rpm's check passed.
fn rename_beside(
    dir: impl AsFd,
    name: &OsStr,
    suffix: &str,
    path: &Path,
    _: &Passed,
) -> Result<bool> {
    let to = with_suffix(name, suffix);
    match rustix::fs::renameat(dir.as_fd(), name, dir.as_fd(), to.as_os_str()) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::NOENT) => Ok(false),
        Err(e) => Err(IoError::new("rename", path.to_path_buf(), e).into()),
    }
}

/// Carry out rpm's actions for the files of a package about to be placed
/// (`actions`, by header index): files not installed go into
/// `opts.skip`, `.rpmnew` names into `opts.rename`; the files on disk
/// that rpm saves (`.rpmsave`) or backs up (`.rpmorig`) are renamed now,
/// once `opts.gate`'s verdict has passed.
pub(crate) fn apply_fates(
    root: &Root,
    p: &Pkg,
    actions: &[Action],
    kept: impl Fn(u32) -> bool,
    opts: &mut Options,
    sum: &mut TxSummary,
) -> Result<()> {
    for f in &p.files.files {
        let a = actions
            .get(f.index as usize)
            .copied()
            .unwrap_or(Action::Create);
        let note = |action| ConfigNote {
            path: f.path.to_string(),
            action,
        };
        if !a.writes() {
            opts.skip.insert(f.index);
            if a == Action::Skip && kept(f.index) {
                sum.config.push(note("kept"));
            }
            if a != Action::Skip && !f.ghost {
                sum.not_installed += 1;
            }
            continue;
        }
        if f.ghost {
            continue;
        }
        match a {
            Action::AltName => {
                let Some(name) = RelPath::new(&f.path)?
                    .split()
                    .map(|(_, n)| n.to_os_string())
                else {
                    continue;
                };
                opts.rename
                    .insert(f.path.clone(), with_suffix(&name, ".rpmnew"));
                sum.config.push(note("rpmnew"));
            }
            Action::Touch => {
                opts.touch.insert(f.index);
            }
            Action::Save | Action::Backup => {
                let (suffix, what) = if a == Action::Save {
                    (".rpmsave", "rpmsave")
                } else {
                    (".rpmorig", "rpmorig")
                };
                if let Some((dir, name, path)) = parent_of(root, &f.path)? {
                    let passed = Gate::verdict_of(opts.gate.as_ref())?;
                    if rename_beside(&dir, &name, suffix, &path, &passed)? {
                        sum.config.push(note(what));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Carry out rpm's actions for the files of an erased package
/// (`actions`, by its installed file index): `erase` removes a file
/// (directories only when empty, deepest first), `save` renames an edited
/// config file to `.rpmsave`; every other action leaves the file.
/// Returns how many entries were removed. Changes that can be seen: with
/// rpm's check passed.
pub(crate) fn erase_files(
    root: &Root,
    o: &Installed,
    actions: &[Action],
    sum: &mut TxSummary,
    passed: &Passed,
) -> Result<u64> {
    let mut n = 0;
    let mut dirs = Vec::new();
    for (fx, f) in o.files.iter().enumerate() {
        let a = actions.get(fx).copied().unwrap_or(Action::Skip);
        if a != Action::Erase && a != Action::Save {
            continue;
        }
        if a == Action::Erase && f.mode & 0o170000 == 0o040000 {
            dirs.push(f.path.as_str());
            continue;
        }
        let Some((dir, name, path)) = parent_of(root, &f.path)? else {
            continue;
        };
        if a == Action::Save {
            if f.flags & GHOST == 0 && rename_beside(&dir, &name, ".rpmsave", &path, passed)? {
                sum.config.push(ConfigNote {
                    path: f.path.clone(),
                    action: "rpmsave",
                });
            }
            continue;
        }
        let Some(st) = cowkit_fs::dir::stat_at(&dir, &name)
            .map_err(|e| IoError::new("stat", path.clone(), e))?
        else {
            continue;
        };
        let removed = if st.st_mode & 0o170000 == 0o040000 {
            // The package had a file here, a directory is there now: left
            // when not empty, as rpm leaves it.
            rustix::fs::unlinkat(&dir, name.as_os_str(), rustix::fs::AtFlags::REMOVEDIR).is_ok()
        } else {
            unlink(&dir, &name, &path)?;
            true
        };
        n += u64::from(removed);
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
            | Err(rustix::io::Errno::EXIST)
            | Err(rustix::io::Errno::NOTDIR) => {}
            Err(e) => return Err(IoError::new("remove directory", path, e).into()),
        }
    }
    Ok(n)
}
