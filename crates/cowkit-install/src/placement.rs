//! Where an install puts each entry, and how: a validated path of the
//! package (`Place`); whether the entry is made unseen, in a new tree not
//! renamed into place yet, or visible, with the verdict of rpm's check
//! (`Way`, decided by `crate::target::Target::way`); and each kind of entry
//! made either way (`Make`: regular files, hardlinks, symlinks and nodes).
//! Every change that can be seen takes the verdict ([`Passed`]).

use std::collections::HashMap;
use std::ffi::{CString, OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use cowkit_archive::files::{FileInfo, Kind, Name};
use cowkit_fs::dir::{self, NewFile};
use cowkit_fs::meta::{self, Current, Meta, On, Policy};
use cowkit_fs::root::RelPath;
use cowkit_fs::{Handle, IoError};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::{Error, Passed, Result};

pub(crate) fn sys(op: &'static str, path: PathBuf) -> impl FnOnce(Errno) -> Error {
    move |e| Error::from(IoError::new(op, path, e))
}

/// Remove the entry `name` in `parent` (an existing directory, which can
/// be seen) that stands where the package puts a directory, as rpm's
/// `fsmVerify` does: only once rpm's check has passed.
pub(crate) fn remove_in_the_way(
    parent: impl AsFd,
    name: &OsStr,
    path: &std::path::Path,
    _: &Passed,
) -> Result<()> {
    rustix::fs::unlinkat(parent, name, AtFlags::empty()).map_err(sys("remove", path.to_path_buf()))
}

/// A validated path of the package, with its parent and name.
pub(crate) struct Place {
    pub rel: RelPath,
    pub parent: Vec<u8>,
    pub name: OsString,
}

impl Place {
    /// Where `f` goes: its header path, or the name `rename` gives it in
    /// the same directory.
    pub fn of(f: &FileInfo, rename: &HashMap<Name, OsString>) -> Result<Place> {
        let rel = RelPath::new(&f.path)?;
        if rel.is_root() {
            // A package that owns `/` (Fedora's `filesystem`) owns the
            // root directory itself: nothing is created there, its
            // metadata is applied to the root as rpm applies it. Anything
            // but a directory cannot be the root.
            if f.kind != Kind::Directory {
                return Err(Error::BadPath(cowkit_fs::root::BadPath {
                    path: f.path.to_string(),
                    why: "it names the root itself, and is not a directory",
                }));
            }
            return Ok(Place {
                rel,
                parent: Vec::new(),
                name: OsString::new(),
            });
        }
        let rel = match rename.get(&f.path) {
            Some(name) => {
                let (parent, _) = rel.split().ok_or_else(|| {
                    Error::BadPath(cowkit_fs::root::BadPath {
                        path: f.path.to_string(),
                        why: "it names the root itself",
                    })
                })?;
                parent.join(name.as_bytes())?
            }
            None => rel,
        };
        let (parent, name) = rel.split().ok_or_else(|| {
            Error::BadPath(cowkit_fs::root::BadPath {
                path: f.path.to_string(),
                why: "it names the root itself",
            })
        })?;
        Ok(Place {
            parent: parent.as_bytes().to_vec(),
            name: name.to_os_string(),
            rel,
        })
    }
}

/// How an entry is made at its place, decided once for each by
/// [`Target::way`](crate::target::Target::way).
pub(crate) enum Way {
    /// Its directory belongs to a new tree not published yet (a `Stage` of the target):
    /// nobody can see it, so the entry is made under its final name
    /// directly, while rpm's check may still be running.
    Unseen,
    /// Its directory can be seen: the entry is put over its final name in
    /// one step, rpm's check passed.
    Visible(Passed),
}

/// Where an entry is made: the directory, open, that holds it; its place
/// there; its path as messages show it.
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub dir: BorrowedFd<'a>,
    pub place: &'a Place,
    pub path: &'a std::path::Path,
}

/// An entry [`Target::put`](crate::target::Target::put) makes at a place
/// ([`At`]).
pub(crate) trait Make: Sized {
    /// Counted among the files reported placed, and taken away again with
    /// their tree (the target's `fresh_files`).
    const COUNTED: bool;
    /// Make it under its final name in `dir`, a directory of a tree
    /// nobody can see yet ([`Way::Unseen`]). `Ok(Some(self))`, nothing
    /// made, when the name is taken.
    fn unseen(self, at: At<'_>) -> Result<Option<Self>>;
    /// Make it without a name, or under a temporary one, complete, and
    /// put it over its final name in `dir` in one step (replacing what is
    /// there): nothing partial is ever seen under the name. Nothing is
    /// left behind on error.
    fn over(self, at: At<'_>, _: &Passed) -> Result<()>;
}

/// A regular file, created with `mode`, its content written by `fill`,
/// then given `meta`.
pub(crate) struct NewRegular<F> {
    pub mode: u32,
    pub meta: Meta,
    pub fill: F,
}

impl<F: FnOnce(&File, &std::path::Path) -> Result<()>> Make for NewRegular<F> {
    const COUNTED: bool = true;

    fn unseen(self, at: At<'_>) -> Result<Option<Self>> {
        let fd = match rustix::fs::openat(
            at.dir,
            at.place.name.as_os_str(),
            OFlags::CREATE | OFlags::EXCL | OFlags::RDWR | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(self.mode),
        ) {
            Ok(fd) => fd,
            Err(Errno::EXIST) => return Ok(Some(self)),
            Err(e) => return Err(sys("create", at.path.to_path_buf())(e)),
        };
        let file = File::from(fd);
        (self.fill)(&file, at.path)?;
        meta::apply(Handle::new(&file, at.path), &self.meta, None)?;
        Ok(None)
    }

    /// The file is a [`NewFile`]: made with `O_TMPFILE`, so it has no name
    /// at all until it is complete; `linkat` then gives it its real name in
    /// one directory operation (or, when the name exists, a temporary name
    /// that is renamed over it). Filesystems without `O_TMPFILE` get a
    /// named temporary file and a rename.
    fn over(self, at: At<'_>, _: &Passed) -> Result<()> {
        let new = NewFile::anonymous(at.dir, at.path.parent().unwrap_or(at.path), self.mode)?;
        (self.fill)(new.file(), at.path)?;
        meta::apply(Handle::new(new.file(), at.path), &self.meta, None)?;
        new.commit(at.dir, &at.place.name, at.path)?;
        Ok(())
    }
}

/// A hardlink of the entry `name` in the directory `from`.
pub(crate) struct Link<'a> {
    pub from: BorrowedFd<'a>,
    pub name: &'a OsStr,
}

impl Make for Link<'_> {
    const COUNTED: bool = true;

    fn unseen(self, at: At<'_>) -> Result<Option<Self>> {
        match rustix::fs::linkat(
            self.from,
            self.name,
            at.dir,
            at.place.name.as_os_str(),
            AtFlags::empty(),
        ) {
            Ok(()) => Ok(None),
            Err(Errno::EXIST) => Ok(Some(self)),
            Err(e) => Err(sys("link", at.path.to_path_buf())(e)),
        }
    }

    fn over(self, at: At<'_>, _: &Passed) -> Result<()> {
        let link =
            |tmp: &str| rustix::fs::linkat(self.from, self.name, at.dir, tmp, AtFlags::empty());
        dir::create_replacing(at.dir, &at.place.name, at.path, "link", link, |_| Ok(()))?;
        Ok(())
    }
}

/// A symlink or a node: made by `create` (`op` in messages), then given
/// `meta` without following it.
pub(crate) struct Special<'a, C> {
    pub op: &'static str,
    pub meta: &'a Meta,
    pub create: C,
}

impl<C: FnMut(BorrowedFd<'_>, &OsStr) -> rustix::io::Result<()>> Make for Special<'_, C> {
    const COUNTED: bool = false;

    fn unseen(mut self, at: At<'_>) -> Result<Option<Self>> {
        match (self.create)(at.dir, &at.place.name) {
            Ok(()) => {
                let on = On::At(at.dir, &c_name(at.place)?);
                meta::apply_on(on, at.path, self.meta, Current::default(), Policy::STRICT)?;
                Ok(None)
            }
            Err(Errno::EXIST) => Ok(Some(self)),
            Err(e) => Err(sys(self.op, at.path.to_path_buf())(e)),
        }
    }

    fn over(mut self, at: At<'_>, _: &Passed) -> Result<()> {
        let meta = self.meta;
        let create = |tmp: &str| (self.create)(at.dir, OsStr::new(tmp));
        dir::create_replacing(at.dir, &at.place.name, at.path, self.op, create, |tmp| {
            let name = CString::new(tmp).expect("temporary names have no NUL");
            let on = On::At(at.dir, &name);
            meta::apply_on(on, at.path, meta, Current::default(), Policy::STRICT).map(|_| ())
        })?;
        Ok(())
    }
}

/// `p`'s name as the C string the calls on names take.
pub(crate) fn c_name(p: &Place) -> Result<CString> {
    CString::new(p.name.as_bytes()).map_err(|_| {
        Error::BadPath(cowkit_fs::root::BadPath {
            path: p.rel.escaped(),
            why: "it contains a NUL byte",
        })
    })
}

/// rpm's touch of a regular file that can be seen: `meta` applied
/// through its descriptor (`st`: what it has now).
pub(crate) fn retouch(
    file: Handle<'_>,
    meta: &Meta,
    st: &rustix::fs::Stat,
    _: &Passed,
) -> Result<()> {
    meta::apply(file, meta, Some(st))?;
    Ok(())
}

/// rpm's touch of a symlink that can be seen: `meta` applied to `name` in
/// `dir` without following it.
pub(crate) fn meta_at(
    dir: BorrowedFd<'_>,
    name: &CString,
    path: &std::path::Path,
    meta: &Meta,
    _: &Passed,
) -> Result<()> {
    let on = On::At(dir, name);
    meta::apply_on(on, path, meta, Current::default(), Policy::STRICT)?;
    Ok(())
}
