//! A content store and read-only images over it.
//!
//! - [`Store`]: files named by the SHA-256 of their content, in fan-out
//!   directories (`objects/ab/cdef…`), written once and never changed
//!   (mode 0444). An object is a clone of its source where the filesystem
//!   shares blocks (XFS, Btrfs), a copy elsewhere, made with `O_TMPFILE`
//!   and linked in place only if no object of that name exists: two
//!   imports of one file race to one object and both succeed. A file
//!   already in the store costs a hash and no data write.
//! - [`tree`]: a source tree read into [`tree::Entry`]s (metadata, xattrs,
//!   hardlinks), its regular files imported.
//! - [`image`]: the metadata layer of an image, as a directory: every
//!   entry with its metadata, regular files as sparse files carrying
//!   `trusted.overlay.metacopy` and `trusted.overlay.redirect=/ab/cdef…`;
//!   mounted read-only by overlayfs over the objects as a data-only lower
//!   layer, so images that hold the same content share one page-cache copy
//!   of it.
//! - [`mount`]: the mount itself, from descriptors (`fsopen`, `fsmount`,
//!   `move_mount`), `nosuid,nodev` unless trusted.
//!
//! Everything inside the store's directory is opened from its descriptor
//! without following symlinks. A store that someone other than the caller
//! and root can change is never written into ([`Error::Untrusted`]); it
//! can be opened with [`Store::open_read`] and its images mounted
//! `nosuid,nodev`, never trusted.
#![deny(missing_docs)]

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use cowkit_fs::dir::{self, NewFile};
use cowkit_fs::trust::WalkError;
use cowkit_fs::{Copier, Handle, IoError, Method};
use serde::Serialize;
use sha2::{Digest, Sha256};

pub mod digests;
pub mod erofs;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod image;
pub mod mount;
pub mod package;
pub mod tree;

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A filesystem operation failed.
    #[error(transparent)]
    Fs(#[from] cowkit_fs::Error),
    /// A source file changed while it was imported.
    #[error("`{0}` changed while it was imported")]
    Changed(PathBuf),
    /// Something in a source tree cannot be represented.
    #[error("`{path}` cannot be put in an image: {why}")]
    Unsupported {
        /// The entry.
        path: PathBuf,
        /// Why.
        why: &'static str,
    },
    /// Another process uses the store.
    #[error("the store `{0}` is in use by another process (an import or image creation)")]
    Busy(PathBuf),
    /// An image name that is not a plain name.
    #[error("`{0}` is not a valid image name (letters, digits, `.`, `_`, `-`, `+`)")]
    BadName(String),
    /// Image creation or mounting failed otherwise.
    #[error("{0}")]
    Image(String),
    /// Someone other than the caller and root can change part of the
    /// store: it is not written into, and its images are not mounted
    /// trusted.
    #[error("`{path}` can be changed by someone else: {why}")]
    Untrusted {
        /// The directory or image.
        path: PathBuf,
        /// Who else can change it.
        why: String,
    },
    /// A store's directory or image is a symlink: never followed.
    #[error("`{0}` is a symlink: cowkit follows no link inside a store")]
    Symlink(PathBuf),
    /// An EROFS image that cannot be read: damaged, past the reader's
    /// bounds, or using what the reader does not handle.
    #[error("`{path}` is not a readable EROFS image: {why}")]
    Erofs {
        /// The image file (`(in memory)` for bytes).
        path: PathBuf,
        /// Why.
        why: erofs::ReadError,
    },
    /// fs-verity cannot be enabled on the store's objects.
    #[error("the store's filesystem cannot keep fs-verity on `{0}` (Btrfs, and ext4 made with `-O verity`, can; XFS on this kernel cannot)")]
    NoVerity(PathBuf),
}

impl From<IoError> for Error {
    fn from(e: IoError) -> Self {
        Error::Fs(e.into())
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A content store.
///
/// An open store holds a shared `flock` on `STORE/lock`; [`Store::gc`]
/// needs it exclusive, so it never runs while an import or image creation
/// of another process could still need an object it would remove.
///
/// The store's directory is opened once, resolved one component at a time
/// ([`cowkit_fs::trust::open_dir_walked`]): for root, a directory on the
/// way that another user can change makes the store theirs. Everything in
/// it is opened from that descriptor without following symlinks. A store
/// that someone other than the caller and root can change (owned by
/// another user, or group- or world-writable: the store's directory,
/// `objects`, `images`) is refused for writing ([`Error::Untrusted`]); it
/// can be opened for reading with [`Store::open_read`], whose
/// [`Store::untrusted`] says why it is not trusted.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    dir_fd: OwnedFd,
    objects: OwnedFd,
    untrusted: Option<(PathBuf, String)>,
    _lock: Option<OwnedFd>,
    digests: digests::Cache,
    trust_digests: bool,
}

/// One file imported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Imported {
    /// SHA-256 of the content, lower-case hex.
    pub digest: String,
    /// A new object (false: it was in the store already).
    pub new: bool,
    /// How a new object's bytes were made.
    pub method: Option<Method>,
    /// The content was hashed (false: the digest cache knew it).
    pub hashed: bool,
}

/// Totals of an import.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Regular files imported.
    pub files: u64,
    /// New objects.
    pub objects_new: u64,
    /// Files whose content was in the store already.
    pub objects_reused: u64,
    /// Empty files (no object: an image keeps them as empty files).
    pub empty_files: u64,
    /// Bytes of new objects by method (clone, copy_file_range, read_write).
    pub bytes_by_method: std::collections::BTreeMap<String, u64>,
    /// Bytes hashed.
    pub bytes_hashed: u64,
    /// Files whose digest came from the digest cache (not read).
    pub digests_cached: u64,
    /// Files whose digest came from a package's verified header.
    pub digests_from_header: u64,
}

impl Summary {
    /// Add `other`'s counts to these.
    pub fn add(&mut self, other: &Summary) {
        self.files += other.files;
        self.objects_new += other.objects_new;
        self.objects_reused += other.objects_reused;
        self.empty_files += other.empty_files;
        for (m, b) in &other.bytes_by_method {
            *self.bytes_by_method.entry(m.clone()).or_default() += b;
        }
        self.bytes_hashed += other.bytes_hashed;
        self.digests_cached += other.digests_cached;
        self.digests_from_header += other.digests_from_header;
    }
}

/// Who other than the caller and root can change `fd` (named `path`), if
/// anyone: the path and why.
pub(crate) fn untrusted_why(fd: &impl AsFd, path: &Path) -> Result<Option<(PathBuf, String)>> {
    let st = rustix::fs::fstat(fd).map_err(|e| IoError::new("stat", path, e))?;
    let me = rustix::process::geteuid().as_raw();
    Ok(cowkit_fs::trust::others_can_change(&st, me).map(|why| (path.to_path_buf(), why)))
}

/// `e` (from opening `name` in `dir`, named `path`, with `O_NOFOLLOW`),
/// or [`Error::Symlink`] when `name` is a symlink.
pub(crate) fn no_symlink(e: IoError, dir: impl AsFd, name: &str, path: &Path) -> Error {
    let link = matches!(
        e.errno(),
        Some(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR)
    ) && is_symlink(dir, name);
    if link {
        Error::Symlink(path.to_path_buf())
    } else {
        e.into()
    }
}

/// Whether `name` in `dir` is a symlink.
pub(crate) fn is_symlink(dir: impl AsFd, name: &str) -> bool {
    dir::stat_at(dir, name).ok().flatten().is_some_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
    })
}

/// SHA-256 of everything readable from `f`, and the byte count.
fn hash(mut f: &File, path: &Path) -> Result<(String, u64)> {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 256 << 10];
    let mut n = 0u64;
    loop {
        let k = match f.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(IoError::new("read", path.to_path_buf(), e).into()),
        };
        h.update(&buf[..k]);
        n += k as u64;
    }
    Ok((hex::encode(h.finalize()), n))
}

/// SHA-256 of `len` bytes of `f` at `off` (lower-case hex).
fn hash_range(f: &File, path: &Path, off: u64, len: u64) -> Result<String> {
    use std::os::unix::fs::FileExt;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; (256 << 10).min(len as usize).max(1)];
    let mut done = 0;
    while done < len {
        let k = buf.len().min((len - done) as usize);
        f.read_exact_at(&mut buf[..k], off + done)
            .map_err(|e| IoError::new("read", path.to_path_buf(), e))?;
        h.update(&buf[..k]);
        done += k as u64;
    }
    Ok(hex::encode(h.finalize()))
}

impl Store {
    /// Open (creating) the store at `dir`, shared with other processes.
    pub fn open(dir: &Path) -> Result<Store> {
        Self::open_with(dir, rustix::fs::FlockOperation::LockShared)
    }

    /// Open the store at `dir` for [`Store::gc`]: alone, or
    /// [`Error::Busy`].
    pub fn open_exclusive(dir: &Path) -> Result<Store> {
        Self::open_with(dir, rustix::fs::FlockOperation::NonBlockingLockExclusive)
    }

    /// Open the existing store at `dir` to read it (mount its images,
    /// list them): nothing is created but its lock file, nothing inside it
    /// is followed if a symlink, and a store someone else can change is
    /// opened all the same, without its lock and creating nothing
    /// ([`Store::untrusted`] says why).
    pub fn open_read(dir: &Path) -> Result<Store> {
        Self::open_as(dir, rustix::fs::FlockOperation::LockShared, false)
    }

    fn open_with(dir: &Path, lock: rustix::fs::FlockOperation) -> Result<Store> {
        Self::open_as(dir, lock, true)
    }

    fn open_as(dir: &Path, lock: rustix::fs::FlockOperation, write: bool) -> Result<Store> {
        // Resolved one component at a time: as root, a directory on the
        // way that another user can change makes the store theirs.
        let me = rustix::process::geteuid().as_raw();
        let (dir_fd, along) = cowkit_fs::trust::open_dir_walked(dir, (me == 0).then_some(0), write)
            .map_err(|e| match e {
                WalkError::Io(e) => e.into(),
                WalkError::Untrusted { path, why } => Error::Untrusted { path, why },
            })?;
        let objects_path = dir.join("objects");
        let objects = if write {
            dir::mkdir_open(&dir_fd, "objects", 0o755, &objects_path)
        } else {
            dir::open_dir(&dir_fd, "objects", &objects_path)
        }
        .map_err(|e| no_symlink(e, &dir_fd, "objects", &objects_path))?;
        let mut untrusted = along;
        for (fd, path) in [(&dir_fd, dir), (&objects, objects_path.as_path())] {
            untrusted = untrusted.or(untrusted_why(fd, path)?);
        }
        if let (true, Some((path, why))) = (write, untrusted.clone()) {
            return Err(Error::Untrusted { path, why });
        }
        let lock_fd = if untrusted.is_none() {
            Some(Self::lock(&dir_fd, &dir.join("lock"), lock, dir)?)
        } else {
            None
        };
        Ok(Store {
            dir: dir.to_path_buf(),
            dir_fd,
            objects,
            untrusted,
            _lock: lock_fd,
            digests: digests::Cache::new(&dir.join("digests")),
            trust_digests: true,
        })
    }

    /// `STORE/lock`, locked as `op` asks.
    fn lock(
        dir_fd: &OwnedFd,
        path: &Path,
        op: rustix::fs::FlockOperation,
        dir: &Path,
    ) -> Result<OwnedFd> {
        use rustix::fs::OFlags;
        let fd = rustix::fs::openat(
            dir_fd,
            "lock",
            OFlags::CREATE | OFlags::RDWR | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK,
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .map_err(|e| IoError::new("open", path, e))?;
        match rustix::fs::flock(&fd, op) {
            Ok(()) => Ok(fd),
            Err(rustix::io::Errno::WOULDBLOCK) => Err(Error::Busy(dir.to_path_buf())),
            Err(e) => Err(IoError::new("lock", path, e).into()),
        }
    }

    /// Why the store cannot be trusted, when someone other than the
    /// caller and root can change it: the first such directory and who.
    /// Such a store is only ever opened by [`Store::open_read`].
    pub fn untrusted(&self) -> Option<(&Path, &str)> {
        self.untrusted
            .as_ref()
            .map(|(p, w)| (p.as_path(), w.as_str()))
    }

    /// The store's directory, opened.
    pub fn dir_fd(&self) -> BorrowedFd<'_> {
        self.dir_fd.as_fd()
    }

    /// The objects directory, opened (never through a symlink).
    pub fn objects_fd(&self) -> BorrowedFd<'_> {
        self.objects.as_fd()
    }

    /// Refuse to write into `fd` (named `path`) when someone other than
    /// the caller and root can change it.
    pub fn check_writable_by_us(fd: BorrowedFd<'_>, path: &Path) -> Result<()> {
        match untrusted_why(&fd, path)? {
            Some((path, why)) => Err(Error::Untrusted { path, why }),
            None => Ok(()),
        }
    }

    /// Whether imports may take a file's digest from the digest cache
    /// (default) or must hash every file (`false`). Digests are recorded
    /// either way.
    pub fn trust_digest_cache(&mut self, trust: bool) {
        self.trust_digests = trust;
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The objects directory (an image's data layer).
    pub fn objects_dir(&self) -> PathBuf {
        self.dir.join("objects")
    }

    /// The object's path relative to the objects directory: `ab/cdef…`.
    pub fn object_rel(digest: &str) -> String {
        format!("{}/{}", &digest[..2], &digest[2..])
    }

    /// Whether the object `digest` exists.
    pub fn has(&self, digest: &str) -> Result<bool> {
        Ok(
            dir::stat_at(&self.objects, Self::object_rel(digest).as_str())
                .map_err(|e| {
                    IoError::new("stat", self.objects_dir().join(Self::object_rel(digest)), e)
                })?
                .is_some(),
        )
    }

    /// Import the regular file `src` (named `path` in messages): hash it,
    /// or take its digest from the [`digests`] cache when its key is
    /// recorded there; if the store lacks its content, clone (or copy) it into a new
    /// object. The file must not change meanwhile: its inode, size, mtime
    /// and ctime are compared before and after ([`Error::Changed`]).
    pub fn import_file(&self, src: &File, path: &Path, copier: &mut Copier) -> Result<Imported> {
        let stat =
            |what| rustix::fs::fstat(src).map_err(|e| IoError::new(what, path.to_path_buf(), e));
        let start = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let before = stat("stat")?;
        let key = digests::Key::of(&before);
        let cached = if self.trust_digests {
            self.digests.get(&key)?
        } else {
            None
        };
        let (digest, hashed) = match cached {
            Some(d) => (hex::encode(d), false),
            None => {
                let (digest, n) = hash(src, path)?;
                if n != before.st_size as u64 || digests::Key::of(&stat("stat")?) != key {
                    return Err(Error::Changed(path.to_path_buf()));
                }
                if !key.is_racy(start) {
                    let raw = hex::decode(&digest).expect("hex");
                    self.digests.put(key, raw.try_into().expect("32 bytes"))?;
                }
                (digest, true)
            }
        };
        if self.has(&digest)? {
            return Ok(Imported {
                digest,
                new: false,
                method: None,
                hashed,
            });
        }
        let fan_path = self.objects_dir().join(&digest[..2]);
        let (fan, new) = self.new_object(&digest, &fan_path)?;
        let copied = copier.copy_new_file(
            Handle::new(src, path),
            Handle::new(new.file(), &fan_path),
            before.st_size as u64,
            before.st_blocks as u64,
        )?;
        let after =
            rustix::fs::fstat(src).map_err(|e| IoError::new("stat", path.to_path_buf(), e))?;
        let same = |a: &rustix::fs::Stat, b: &rustix::fs::Stat| {
            (
                a.st_ino,
                a.st_size,
                a.st_mtime,
                a.st_mtime_nsec,
                a.st_ctime,
                a.st_ctime_nsec,
            ) == (
                b.st_ino,
                b.st_size,
                b.st_mtime,
                b.st_mtime_nsec,
                b.st_ctime,
                b.st_ctime_nsec,
            )
        };
        if !same(&before, &after) {
            return Err(Error::Changed(path.to_path_buf()));
        }
        let obj_path = fan_path.join(&digest[2..]);
        Self::seal(&new, &obj_path)?;
        let committed = new.commit_new(fan.as_fd(), &digest[2..], &obj_path)?;
        Ok(Imported {
            new: committed.is_some(),
            method: committed.is_some().then_some(copied.method),
            digest,
            hashed,
        })
    }

    /// Import `len` bytes of `src` at `off` (named `path` in messages) as
    /// an object: `(digest, new, how a new object was made)`.
    /// `claimed` is the content's SHA-256 as a verified package header
    /// gives it: an object of that name that exists costs nothing, and a
    /// new one is hashed once before it is named and refused if it is not
    /// that content. Without it, the range is hashed first.
    pub fn import_range(
        &self,
        src: &File,
        path: &Path,
        off: u64,
        len: u64,
        claimed: Option<String>,
        copier: &mut Copier,
    ) -> Result<(String, bool, Option<Method>)> {
        let verify = claimed.is_some();
        let digest = match claimed {
            Some(d) if d.len() == 64 => d,
            Some(d) => return Err(Error::Image(format!("`{d}` is not a SHA-256 digest"))),
            None => hash_range(src, path, off, len)?,
        };
        if self.has(&digest)? {
            return Ok((digest, false, None));
        }
        let fan_path = self.objects_dir().join(&digest[..2]);
        let (fan, new) = self.new_object(&digest, &fan_path)?;
        let copied = copier.copy_range(
            Handle::new(src, path),
            off,
            Handle::new(new.file(), &fan_path),
            0,
            len,
        )?;
        if verify {
            let size = rustix::fs::fstat(new.file())
                .map_err(|e| IoError::new("stat", fan_path.clone(), e))?
                .st_size as u64;
            let got = hash_range(new.file(), &fan_path, 0, len)?;
            if got != digest || size != len {
                return Err(Error::Image(format!(
                    "`{}`: the {len} bytes at {off} hash to {got}, not to {digest} as the package's header says (a damaged or altered file)",
                    path.display()
                )));
            }
        }
        let obj_path = fan_path.join(&digest[2..]);
        Self::seal(&new, &obj_path)?;
        let committed = new.commit_new(fan.as_fd(), &digest[2..], &obj_path)?;
        Ok((
            digest,
            committed.is_some(),
            committed.is_some().then_some(copied.method),
        ))
    }

    /// The fan-out directory of `digest` (refused if someone else can
    /// change it) and a new unnamed file in it.
    fn new_object(&self, digest: &str, fan_path: &Path) -> Result<(OwnedFd, NewFile)> {
        let fan = dir::mkdir_open(&self.objects, &digest[..2], 0o755, fan_path)
            .map_err(|e| no_symlink(e, &self.objects, &digest[..2], fan_path))?;
        Self::check_writable_by_us(fan.as_fd(), fan_path)?;
        let new = NewFile::anonymous(fan.as_fd(), fan_path, 0o444)?;
        Ok((fan, new))
    }

    /// Give a new object its mode, 0444 whatever the umask, before it is
    /// named.
    fn seal(new: &NewFile, path: &Path) -> Result<()> {
        rustix::fs::fchmod(new.file(), rustix::fs::Mode::from_raw_mode(0o444))
            .map_err(|e| IoError::new("set the mode of", path, e).into())
    }

    /// The fs-verity digest (SHA-256, 4 KiB blocks) of the object
    /// `digest`, enabling fs-verity on it first if it has none.
    pub fn verity_of(&self, digest: &str) -> Result<[u8; 32]> {
        use rustix::io::Errno;
        let rel = Self::object_rel(digest);
        let path = self.objects_dir().join(&rel);
        let f = rustix::fs::openat(
            &self.objects,
            rel.as_str(),
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC | rustix::fs::OFlags::NOFOLLOW,
            rustix::fs::Mode::empty(),
        )
        .map_err(|e| IoError::new("open", path.clone(), e))?;
        for _ in 0..200 {
            match cowkit_fs::verity::measure(&f) {
                Ok((alg, d))
                    if alg == cowkit_fs::verity::FS_VERITY_HASH_ALG_SHA256 && d.len() == 32 =>
                {
                    return Ok(d.try_into().expect("32 bytes"));
                }
                Ok((alg, _)) => {
                    return Err(Error::Image(format!(
                        "`{}` has fs-verity with hash algorithm {alg}, not SHA-256",
                        path.display()
                    )))
                }
                Err(Errno::NODATA) => match cowkit_fs::verity::enable(&f, 4096) {
                    // Enabled, by this call or by another process.
                    Ok(()) | Err(Errno::EXIST) => {}
                    // Another process is enabling it right now.
                    Err(Errno::BUSY) => std::thread::sleep(std::time::Duration::from_millis(10)),
                    Err(Errno::OPNOTSUPP | Errno::NOTTY) => return Err(Error::NoVerity(path)),
                    Err(e) => {
                        return Err(IoError::new("enable fs-verity on", path.clone(), e).into())
                    }
                },
                Err(Errno::OPNOTSUPP | Errno::NOTTY) => return Err(Error::NoVerity(path)),
                Err(e) => return Err(IoError::new("measure fs-verity of", path.clone(), e).into()),
            }
        }
        Err(Error::Image(format!(
            "fs-verity on `{}` stayed busy",
            path.display()
        )))
    }

    /// Re-hash every object; the ones whose content is not their name, or
    /// that are not regular read-only files, with why.
    pub fn fsck(&self) -> Result<Fsck> {
        let mut out = Fsck::default();
        let top = self.objects_dir();
        let mut fans: Vec<_> = dir::read_names(&self.objects, &top)?;
        fans.sort_by(|a, b| a.0.cmp(&b.0));
        for (fan, _) in fans {
            let fan_s = fan.to_string_lossy().into_owned();
            let fan_path = top.join(&fan);
            let Some(fd) = dir::open_dir_opt(&self.objects, fan.as_os_str(), &fan_path)? else {
                continue;
            };
            let mut names = dir::read_names(&fd, &fan_path)?;
            names.sort_by(|a, b| a.0.cmp(&b.0));
            for (name, _) in names {
                let name_s = name.to_string_lossy().into_owned();
                let p = fan_path.join(&name);
                if name_s.starts_with(dir::TEMP_PREFIX) {
                    continue;
                }
                out.checked += 1;
                let want = format!("{fan_s}{name_s}");
                let bad = |why: String| (Store::object_rel(&want), why);
                let f = match dir::open_read_opt(&fd, &name_s, &p) {
                    Ok(Some(f)) => f,
                    Ok(None) => {
                        out.damaged.push(bad("not a regular file".into()));
                        continue;
                    }
                    Err(e) if dir::is_not_regular(&e) => {
                        out.damaged.push(bad(e.source.to_string()));
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                };
                let (got, n) = hash(&f, &p)?;
                out.bytes += n;
                if got != want {
                    out.damaged
                        .push(bad(format!("its content hashes to {got}")));
                }
            }
        }
        out.missing = image::missing_objects(self)?;
        Ok(out)
    }
}

impl Store {
    /// Remove every object no image refers to (images being written
    /// included). Needs the store opened with [`Store::open_exclusive`]:
    /// no import runs meanwhile.
    pub fn gc(&self) -> Result<Gc> {
        let keep: std::collections::HashSet<String> =
            image::references(self)?.into_iter().map(|r| r.2).collect();
        let mut out = Gc::default();
        let top = self.objects_dir();
        for (fan, _) in dir::read_names(&self.objects, &top)? {
            let fan_path = top.join(&fan);
            let Some(fd) = dir::open_dir_opt(&self.objects, fan.as_os_str(), &fan_path)? else {
                continue;
            };
            for (name, _) in dir::read_names(&fd, &fan_path)? {
                let rel = format!("{}/{}", fan.to_string_lossy(), name.to_string_lossy());
                if keep.contains(&rel) {
                    out.kept += 1;
                    continue;
                }
                let st = rustix::fs::statat(
                    &fd,
                    name.as_os_str(),
                    rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                )
                .map_err(|e| IoError::new("stat", fan_path.join(&name), e))?;
                rustix::fs::unlinkat(&fd, name.as_os_str(), rustix::fs::AtFlags::empty())
                    .map_err(|e| IoError::new("remove", fan_path.join(&name), e))?;
                out.removed += 1;
                out.bytes += st.st_size as u64;
            }
        }
        out.digests_kept = self
            .digests
            .compact(&self.dir, |d| self.has(&hex::encode(d)).unwrap_or(false))?;
        Ok(out)
    }
}

/// What [`Store::gc`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Gc {
    /// Objects an image refers to.
    pub kept: u64,
    /// Objects removed.
    pub removed: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Digest cache records kept (the latest of each source file whose
    /// object remains).
    pub digests_kept: u64,
}

/// What [`Store::fsck`] found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Fsck {
    /// Objects checked.
    pub checked: u64,
    /// Bytes hashed.
    pub bytes: u64,
    /// Damaged objects: (object path relative to `objects/`, why).
    pub damaged: Vec<(String, String)>,
    /// Objects images refer to that are not in the store: (image, path
    /// in the image, object).
    pub missing: Vec<(String, String, String)>,
}
