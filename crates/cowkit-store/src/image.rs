//! Images: a metadata layer over the store's objects, mounted read-only
//! with overlayfs.
//!
//! An image is a directory `STORE/images/NAME`, made under a temporary
//! name and renamed into place complete. It holds every entry of its tree
//! with the tree's owners, modes, times (ns) and extended attributes:
//! directories, symlinks, devices, fifos, sockets and hardlinks as such; a
//! regular file with content as a sparse file of its size with
//! `trusted.overlay.metacopy` (empty) and `trusted.overlay.redirect` =
//! `/ab/cdef…`, the object's path from the objects directory (it must be
//! absolute: overlayfs refuses a relative one there). An empty file stays
//! an empty file.
//!
//! [`mount`] mounts an overlay of the image over the objects, read-only,
//! from descriptors ([`crate::mount`]): the objects are a data-only lower
//! layer (`datadir+`), found only through redirects. Two images whose
//! files redirect to one object read it through one inode, so its pages
//! are cached once.
//!
//! Redirects cannot leave the objects: overlayfs looks a data-only layer's
//! redirect up beneath that layer's root, following no symlink and
//! crossing no mount. The objects directory itself is opened without
//! following a symlink, so a store whose `objects` was replaced by a link
//! to `/` is refused. Unless the caller asks for a trusted mount (and the
//! store, `images` and the image are the caller's or root's and nobody
//! else may write them), the mount is `nosuid,nodev`.

use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cowkit_fs::dir;
use cowkit_fs::meta::{self, Current, Meta, On, Policy};
use cowkit_fs::IoError;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::tree::{Entry, Kind};
use crate::{is_symlink, Error, Result, Store};

/// Where the store keeps images.
pub fn images_dir(store: &Store) -> PathBuf {
    store.dir().join("images")
}

fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b));
    if ok {
        Ok(())
    } else {
        Err(Error::BadName(name.to_string()))
    }
}

/// `STORE/images`, opened without following a symlink; created when
/// `create` (and then refused if someone other than the caller and root can
/// change it). `None` when it does not exist.
fn open_images(store: &Store, create: bool) -> Result<Option<OwnedFd>> {
    let path = images_dir(store);
    if create {
        let fd = dir::mkdir_open(store.dir_fd(), "images", 0o755, &path)
            .map_err(|e| crate::no_symlink(e, store.dir_fd(), "images", &path))?;
        Store::check_writable_by_us(fd.as_fd(), &path)?;
        return Ok(Some(fd));
    }
    match rustix::fs::openat(
        store.dir_fd(),
        "images",
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::empty(),
    ) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(Errno::LOOP | Errno::NOTDIR) if is_symlink(store.dir_fd(), "images") => {
            Err(Error::Symlink(path))
        }
        Err(e) => Err(IoError::new("open directory", path, e).into()),
    }
}

/// An image, opened.
enum Opened {
    /// `images/NAME.erofs`, read-only.
    Erofs(std::fs::File),
    /// `images/NAME`, `O_PATH`.
    Dir(OwnedFd),
}

/// Open the image `name` without following a symlink: its `images`
/// directory, the image, and the image's path.
fn open_image(store: &Store, name: &str) -> Result<(OwnedFd, Opened, PathBuf)> {
    let none = || Error::Image(format!("no image `{name}` in `{}`", store.dir().display()));
    let images = open_images(store, false)?.ok_or_else(none)?;
    let file = erofs_file(store, name)?;
    let fname = format!("{name}.erofs");
    match dir::open_read_opt(&images, &fname, &file) {
        Ok(Some(f)) => return Ok((images, Opened::Erofs(f), file)),
        Ok(None) => {}
        Err(_) if is_symlink(&images, &fname) => return Err(Error::Symlink(file)),
        Err(e) => return Err(e.into()),
    }
    let path = image_dir(store, name)?;
    match rustix::fs::openat(
        &images,
        name,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => Ok((images, Opened::Dir(fd), path)),
        Err(_) if is_symlink(&images, name) => Err(Error::Symlink(path)),
        Err(Errno::NOENT | Errno::NOTDIR) => Err(none()),
        Err(e) => Err(IoError::new("open", path, e).into()),
    }
}

/// The image `name`'s directory.
pub fn image_dir(store: &Store, name: &str) -> Result<PathBuf> {
    check_name(name)?;
    Ok(images_dir(store).join(name))
}

fn cstr(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| Error::Unsupported {
        path: p.to_path_buf(),
        why: "a NUL byte in its name",
    })
}

/// Write the image `name` of `entries` (from [`crate::tree::read_tree`])
/// into the store. Refuses a name that exists.
pub fn create(
    store: &Store,
    name: &str,
    entries: &[Entry],
    verity: &HashMap<String, [u8; 32]>,
) -> Result<PathBuf> {
    let final_dir = image_dir(store, name)?;
    if erofs_file(store, name)?.exists() {
        return Err(Error::Image(format!("the image `{name}` exists already")));
    }
    let images = images_dir(store);
    let images_fd = open_images(store, true)?.expect("created");
    if dir::stat_at(&images_fd, name)
        .map_err(|e| IoError::new("stat", final_dir.clone(), e))?
        .is_some()
    {
        return Err(Error::Image(format!(
            "the image `{name}` exists already ({})",
            final_dir.display()
        )));
    }
    let tmp = dir::temp_name();
    let tmp_path = images.join(&tmp);
    let root = dir::mkdir_open(&images_fd, &tmp, 0o700, &tmp_path)?;
    let r = write(&root, &tmp_path, entries, verity);
    let r = r.and_then(|()| {
        rustix::fs::renameat_with(
            &images_fd,
            tmp.as_str(),
            &images_fd,
            name,
            rustix::fs::RenameFlags::NOREPLACE,
        )
        .map_err(|e| IoError::new("rename into place", final_dir.clone(), e).into())
    });
    if r.is_err() {
        let _ = dir::remove_tree(&images_fd, &tmp, &tmp_path);
    }
    r.map(|()| final_dir)
}

/// The metadata the tree gave `e`: owner, mode, times, xattrs.
fn meta_of(e: &Entry) -> Meta {
    Meta {
        uid: Some(e.uid),
        gid: Some(e.gid),
        mode: Some(e.perm),
        atime: Some(e.atime),
        mtime: Some(e.mtime),
        xattrs: e.xattrs.clone(),
    }
}

fn write(
    root: &OwnedFd,
    root_path: &Path,
    entries: &[Entry],
    verity: &HashMap<String, [u8; 32]>,
) -> Result<()> {
    let mut dirs: HashMap<PathBuf, OwnedFd> = HashMap::new();
    dirs.insert(
        PathBuf::new(),
        rustix::io::fcntl_dupfd_cloexec(root, 0)
            .map_err(|e| IoError::new("open", root_path.to_path_buf(), e))?,
    );
    for e in entries.iter().skip(1) {
        let parent_rel = e.path.parent().unwrap_or(Path::new("")).to_path_buf();
        let name = e
            .path
            .file_name()
            .expect("entries below the root have names");
        let cname = cstr(Path::new(name))?;
        let path = root_path.join(&e.path);
        let parent = &dirs[&parent_rel];
        let mut meta = meta_of(e);
        let io = |op: &'static str| {
            let path = path.clone();
            move |err| IoError::new(op, path, err)
        };
        match e.kind {
            Kind::Dir => {
                rustix::fs::mkdirat(parent, cname.as_c_str(), Mode::from_raw_mode(0o700))
                    .map_err(io("create directory"))?;
                let fd = dir::open_dir(parent, cname.as_c_str(), &path)?;
                dirs.insert(e.path.clone(), fd);
                continue; // metadata after its entries
            }
            Kind::File => {
                if let Some(first) = e.link {
                    let f = &entries[first];
                    let fp = &dirs[&f.path.parent().unwrap_or(Path::new("")).to_path_buf()];
                    let fname = cstr(Path::new(f.path.file_name().expect("named")))?;
                    rustix::fs::linkat(
                        fp,
                        fname.as_c_str(),
                        parent,
                        cname.as_c_str(),
                        AtFlags::empty(),
                    )
                    .map_err(io("link"))?;
                    continue;
                }
                metacopy_file(parent, &cname, &path, e, meta, verity)?;
                continue;
            }
            Kind::Symlink => {
                let target = e.target.as_deref().expect("read");
                rustix::fs::symlinkat(target.as_bytes(), parent, cname.as_c_str())
                    .map_err(io("create symlink"))?;
                meta.mode = None;
            }
            Kind::Fifo | Kind::Socket | Kind::Char | Kind::Block => {
                let t = match e.kind {
                    Kind::Fifo => rustix::fs::FileType::Fifo,
                    Kind::Socket => rustix::fs::FileType::Socket,
                    Kind::Char => rustix::fs::FileType::CharacterDevice,
                    _ => rustix::fs::FileType::BlockDevice,
                };
                rustix::fs::mknodat(
                    parent,
                    cname.as_c_str(),
                    t,
                    Mode::from_raw_mode(0o600),
                    e.rdev,
                )
                .map_err(io("create node"))?;
            }
        }
        meta::apply_on(
            On::At(parent.as_fd(), cname.as_c_str()),
            &path,
            &meta,
            Current::default(),
            Policy::STRICT,
        )?;
    }
    dirs_meta(root_path, entries, &dirs)
}

/// The file `e` as overlay's metadata-only copy: empty, its size, its
/// metadata, and for content the `metacopy` (with the object's fs-verity
/// digest when known) and `redirect` (to the object) attributes.
fn metacopy_file(
    parent: &OwnedFd,
    cname: &CStr,
    path: &Path,
    e: &Entry,
    mut meta: Meta,
    verity: &HashMap<String, [u8; 32]>,
) -> Result<()> {
    let io = |op: &'static str| move |err| IoError::new(op, path.to_path_buf(), err);
    let fd = rustix::fs::openat(
        parent,
        cname,
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(io("create"))?;
    if e.size > 0 {
        rustix::fs::ftruncate(&fd, e.size).map_err(io("truncate"))?;
        let digest = e.digest.as_deref().expect("imported");
        meta.xattrs.push(meta::xattr(
            "trusted.overlay.metacopy",
            crate::erofs::metacopy_value(verity.get(digest)),
        ));
        meta.xattrs.push(meta::xattr(
            "trusted.overlay.redirect",
            format!("/{}", Store::object_rel(digest)),
        ));
    }
    meta::apply_on(
        On::Fd(fd.as_fd()),
        path,
        &meta,
        Current::default(),
        Policy::STRICT,
    )?;
    Ok(())
}

/// The directories' metadata, last and deepest first, so that their times
/// stay.
fn dirs_meta(root_path: &Path, entries: &[Entry], dirs: &HashMap<PathBuf, OwnedFd>) -> Result<()> {
    let mut ds: Vec<&Entry> = entries.iter().filter(|e| e.kind == Kind::Dir).collect();
    ds.sort_by_key(|e| std::cmp::Reverse(e.path.components().count()));
    for e in ds {
        let meta = meta_of(e);
        let path = root_path.join(&e.path);
        meta::apply_on(
            On::Fd(dirs[&e.path].as_fd()),
            &path,
            &meta,
            Current::default(),
            Policy::STRICT,
        )?;
    }
    Ok(())
}

/// fs-verity digests of every object `entries` refer to, enabling
/// fs-verity on objects that lack it ([`Store::verity_of`]).
pub fn verity_digests(store: &Store, entries: &[Entry]) -> Result<HashMap<String, [u8; 32]>> {
    let mut out = HashMap::new();
    for e in entries {
        if let Some(d) = e.digest.as_deref().filter(|_| e.size > 0) {
            if !out.contains_key(d) {
                out.insert(d.to_string(), store.verity_of(d)?);
            }
        }
    }
    Ok(out)
}

/// Whether the image `name` carries fs-verity digests (its metacopy
/// xattrs are not empty): it is then mounted with `verity=require`.
pub fn carries_verity(store: &Store, name: &str) -> Result<bool> {
    let (_, image, path) = open_image(store, name)?;
    verity_recorded(&image, &path)
}

fn verity_recorded(image: &Opened, path: &Path) -> Result<bool> {
    let top = match image {
        Opened::Erofs(f) => {
            let f = f.try_clone().map_err(|e| IoError::new("reopen", path, e))?;
            let r = crate::erofs::Reader::from_file(f, path)?;
            return Ok(r.walk()?.iter().any(|(_, i)| {
                i.xattrs
                    .get(&b"trusted.overlay.metacopy"[..])
                    .is_some_and(|v| !v.is_empty())
            }));
        }
        // The open directory itself, whatever its path has become.
        Opened::Dir(fd) => PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())),
    };
    let mut stack = vec![top];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => {
                    let mut buf = [0u8; 64];
                    if let Ok(n) = rustix::fs::lgetxattr(&p, "trusted.overlay.metacopy", &mut buf) {
                        return Ok(n > 0);
                    }
                }
                _ => {}
            }
        }
    }
    Ok(false)
}

/// Remove the image `name` (its objects stay until [`Store::gc`]). It is
/// renamed away first, so it disappears at once.
pub fn remove(store: &Store, name: &str) -> Result<()> {
    let (images, image, path) = open_image(store, name)?;
    Store::check_writable_by_us(images.as_fd(), &images_dir(store))?;
    if let Opened::Erofs(_) = image {
        return rustix::fs::unlinkat(&images, format!("{name}.erofs"), AtFlags::empty())
            .map_err(|e| IoError::new("remove", path, e).into());
    }
    let tmp = dir::temp_name();
    let gone = images_dir(store).join(&tmp);
    rustix::fs::renameat(&images, name, &images, tmp.as_str())
        .map_err(|e| IoError::new("remove", path, e))?;
    dir::remove_tree(&images, &tmp, &gone)?;
    Ok(())
}

/// Mount the image `name` read-only at `target`, from descriptors
/// ([`crate::mount`]): `nosuid,nodev` unless `trusted`.
///
/// `trusted` is refused ([`Error::Untrusted`]) when someone other than the
/// caller and root can change the store's directory, `objects`, `images`
/// or the image. Such a store is still mounted safely without it, except
/// where `fs.protected_hardlinks` is off: its owner could then link a file
/// they cannot read into the objects, which overlayfs reads with the
/// mounter's rights.
pub fn mount(store: &Store, name: &str, target: &Path, trusted: bool) -> Result<()> {
    let (images, image, path) = open_image(store, name)?;
    let images_path = images_dir(store);
    let untrusted = match store.untrusted() {
        Some((p, why)) => Some((p.to_path_buf(), why.to_string())),
        None => crate::untrusted_why(&images, &images_path)?.or(match &image {
            Opened::Erofs(f) => crate::untrusted_why(f, &path)?,
            Opened::Dir(fd) => crate::untrusted_why(fd, &path)?,
        }),
    };
    if let Some((path, why)) = untrusted {
        if trusted {
            return Err(Error::Untrusted { path, why });
        }
        let protected = std::fs::read_to_string("/proc/sys/fs/protected_hardlinks")
            .is_ok_and(|v| v.trim() == "1");
        if !protected {
            return Err(Error::Untrusted {
                path,
                why: format!("{why}, and `fs.protected_hardlinks` is not 1, so its owner could link files they cannot read into the objects"),
            });
        }
    }
    let opts = crate::mount::Options {
        trusted,
        verity: verity_recorded(&image, &path)?,
    };
    let path = std::path::absolute(&path).unwrap_or(path);
    match &image {
        Opened::Erofs(f) => {
            let meta = crate::mount::erofs(f.as_fd(), &path, opts)?;
            crate::mount::overlay(meta.as_fd(), store.objects_fd(), &path, target, opts)
        }
        Opened::Dir(fd) => {
            crate::mount::overlay(fd.as_fd(), store.objects_fd(), &path, target, opts)
        }
    }
}

/// Unmount an image mounted at `target`.
pub fn umount(target: &Path) -> Result<()> {
    let out = Command::new("umount")
        .arg(target)
        .output()
        .map_err(|e| IoError::new("run umount(8) for", target.to_path_buf(), e))?;
    if !out.status.success() {
        return Err(Error::Image(format!(
            "umount {} failed: {}",
            target.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Every object reference of every image: (image, path in the image,
/// object path from `objects/`), sorted.
pub fn references(store: &Store) -> Result<Vec<(String, String, String)>> {
    let mut out = Vec::new();
    let images = images_dir(store);
    let Some(images_fd) = open_images(store, false)? else {
        return Ok(out);
    };
    let mut names: Vec<String> = dir::read_names(&images_fd, &images)?
        .into_iter()
        .filter_map(|(n, _)| n.into_string().ok())
        .collect();
    names.sort();
    for name in names {
        // Images being written (temporary names) count too: an object
        // they refer to is needed.
        let top = images.join(&name);
        if let Some(image) = name.strip_suffix(".erofs") {
            let Some(f) = dir::open_read_opt(&images_fd, &name, &top)? else {
                continue;
            };
            for (path, object) in crate::erofs::Reader::from_file(f, &top)?.objects()? {
                out.push((image.to_string(), path, object));
            }
            continue;
        }
        let is_dir = dir::stat_at(&images_fd, name.as_str())
            .map_err(|e| IoError::new("stat", top.clone(), e))?
            .is_some_and(|st| {
                rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
            });
        if !is_dir {
            continue;
        }
        let mut stack = vec![top.clone()];
        while let Some(d) = stack.pop() {
            let rd =
                std::fs::read_dir(&d).map_err(|e| IoError::new("read directory", d.clone(), e))?;
            for e in rd {
                let e = e.map_err(|err| IoError::new("read directory", d.clone(), err))?;
                let p = e.path();
                let t = e
                    .file_type()
                    .map_err(|err| IoError::new("stat", p.clone(), err))?;
                if t.is_dir() {
                    stack.push(p);
                    continue;
                }
                if !t.is_file() {
                    continue;
                }
                let mut buf = vec![0u8; 256];
                let Ok(n) = rustix::fs::lgetxattr(&p, "trusted.overlay.redirect", &mut buf) else {
                    continue;
                };
                let redirect = String::from_utf8_lossy(&buf[..n]).into_owned();
                let inside = p.strip_prefix(&top).unwrap_or(&p).display().to_string();
                out.push((
                    name.clone(),
                    format!("/{inside}"),
                    redirect.trim_start_matches('/').to_string(),
                ));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Every object an image refers to that the store lacks: (image, path in
/// the image, object path from `objects/`).
pub fn missing_objects(store: &Store) -> Result<Vec<(String, String, String)>> {
    let mut out = Vec::new();
    for r in references(store)? {
        if r.0.starts_with(dir::TEMP_PREFIX) {
            continue;
        }
        if dir::stat_at(&store.objects, r.2.as_str())
            .map_err(|err| IoError::new("stat", store.objects_dir().join(&r.2), err))?
            .is_none()
        {
            out.push(r);
        }
    }
    Ok(out)
}

/// How an image is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// One EROFS file, `images/NAME.erofs` (see [`crate::erofs`]: overlay
    /// xattrs, files as holes of their size, per-file fingerprints).
    #[default]
    Erofs,
    /// A directory `images/NAME`.
    Dir,
}

/// The EROFS image `name`'s file.
pub fn erofs_file(store: &Store, name: &str) -> Result<PathBuf> {
    check_name(name)?;
    Ok(images_dir(store).join(format!("{name}.erofs")))
}

/// Write the EROFS image `name` of `entries` (`images/NAME.erofs`,
/// complete or absent). Refuses a name that exists in either format.
pub fn create_erofs(
    store: &Store,
    name: &str,
    entries: &[Entry],
    opts: &crate::erofs::Options,
) -> Result<PathBuf> {
    let file = erofs_file(store, name)?;
    if image_dir(store, name)?.exists() {
        return Err(Error::Image(format!("the image `{name}` exists already")));
    }
    let bytes = crate::erofs::write(entries, opts)?;
    let images = images_dir(store);
    let images_fd = open_images(store, true)?.expect("created");
    let mut new = dir::NewFile::anonymous(images_fd.as_fd(), &images, 0o444)?;
    new.write_all(&bytes)?;
    // Its mode before its name, whatever the umask.
    rustix::fs::fchmod(new.file(), Mode::from_raw_mode(0o444))
        .map_err(|e| IoError::new("set the mode of", file.clone(), e))?;
    match new.commit_new(images_fd.as_fd(), &format!("{name}.erofs"), &file)? {
        Some(_) => Ok(file),
        None => Err(Error::Image(format!("the image `{name}` exists already"))),
    }
}
