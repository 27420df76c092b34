//! A cache of extents files, shared by builds: one file per package,
//! named by the SHA-256 of its main header (rpm's `%{SHA256HEADER}`,
//! verified against the signature header when the package is read), so a
//! package downloaded again under another name, or by another build, is
//! found without transcoding.
//!
//! Layout: `DIR/rpme/<first two hex digits>/<digest>.rpme`. An entry is
//! written unnamed ([`NewEntry`]: `O_TMPFILE`), given its mode on the
//! descriptor, and named only when complete (under concurrent writers of
//! the same package: the same content either way). An entry is only used
//! after [`crate::open::ExtentsFile::open`] checked it and its header
//! digest is the name it is stored under; a damaged entry is reported and
//! can be replaced.
//!
//! Installs trust what is in the cache, and its entry names are public
//! (header digests), so nobody but the user running cowkit (or root) may
//! be able to change it: [`Cache::open`] refuses a cache whose directories
//! (`DIR`, `DIR/rpme`, every fan-out directory) belong to someone else or
//! are writable by their group or by others, and one whose parent
//! directories someone else could rename it in (writable by others and not
//! sticky). Every later step works on the descriptors checked then, and
//! entries are opened without following symlinks.
//!
//! Beside the entries, `DIR/by-checksum/<type>/<first two hex digits>/<hex>`
//! records which header digest the `.rpm` with that whole-file checksum
//! (the repository's `primary.xml` checksum) has ([`Cache::record_checksum`],
//! [`Cache::checksum_record`]): written only after a download whose bytes
//! matched that checksum, it lets `cowkit dnf` find a package in the cache
//! before downloading anything. Records are checked like entries (regular
//! files that only the user or root can change, read within bounds); one
//! that fails is ignored.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use cowkit_fs::dir::{self, NewFile};
use cowkit_fs::IoError;
use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;

use crate::open::ExtentsFile;
use crate::Error;

/// Why a cache cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// A directory of the cache, or one above it, can be changed by
    /// another user.
    #[error("the cache directory `{}` {why}", path.display())]
    Unsafe {
        /// The directory.
        path: PathBuf,
        /// What is wrong with it.
        why: Unsafe,
    },
    /// A digest that is not lower-case hex.
    #[error("`{0}` is not a hex digest")]
    BadDigest(String),
    /// A filesystem operation failed.
    #[error(transparent)]
    Io(#[from] IoError),
}

/// What makes a cache directory unsafe to use.
#[derive(Debug, thiserror::Error)]
pub enum Unsafe {
    /// It belongs to another user.
    #[error("belongs to uid {owner}, not to you (uid {me}) or root")]
    Owner {
        /// Its owner.
        owner: u32,
        /// The user running cowkit.
        me: u32,
    },
    /// Its group or everyone may write it.
    #[error("is writable by {} (mode {mode:04o})", if mode & 0o002 != 0 { "others" } else { "its group" })]
    Writable {
        /// Its permission bits.
        mode: u32,
    },
    /// A parent directory in which others may rename the cache (writable
    /// by its group or others, no sticky bit).
    #[error("is writable by its group or others and not sticky (mode {mode:04o}): they could replace the cache below it")]
    Parent {
        /// The parent's permission bits.
        mode: u32,
    },
    /// A symlink or another file where a directory belongs.
    #[error("is a {0}, not a directory")]
    NotDir(&'static str),
}

/// A cache directory, checked and held open.
#[derive(Debug)]
pub struct Cache {
    dir: PathBuf,
    fd: OwnedFd,
    rpme: OwnedFd,
    me: u32,
}

/// What a lookup found.
#[derive(Debug)]
pub enum Lookup {
    /// A checked entry.
    Hit(PathBuf),
    /// No entry.
    Miss(PathBuf),
    /// An entry that fails its checks (the path, and why): transcode again
    /// over it.
    Damaged(PathBuf, Error),
}

/// The mode of a cache entry: installs trust it, so never writable by
/// others, and readable by every build whatever the umask.
pub const ENTRY_MODE: u32 = 0o644;

/// The mode cache directories are made with (before the umask).
const DIR_MODE: u32 = 0o755;

impl Cache {
    /// Open the cache at `dir`, creating it (and `dir/rpme`) if missing,
    /// and check it and its existing fan-out directories (see the module
    /// doc): [`CacheError::Unsafe`] names the first that others can
    /// change.
    pub fn open(dir: &Path) -> Result<Cache, CacheError> {
        use std::os::unix::fs::DirBuilderExt;
        let me = rustix::process::geteuid().as_raw();
        let dir = &std::path::absolute(dir).map_err(|e| IoError::new("find", dir, e))?;
        if !dir.is_dir() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(DIR_MODE)
                .create(dir)
                .map_err(|e| IoError::new("create directory", dir, e))?;
        }
        // The path as given (a symlinked cache is fine): what is checked
        // is the directory it leads to and the directories above that.
        let fd = rustix::fs::open(
            dir,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| IoError::new("open directory", dir, e))?;
        check_dir(fd.as_fd(), dir, me)?;
        check_parents(fd.as_fd(), dir, me)?;
        let rpme_path = dir.join("rpme");
        let rpme = dir::mkdir_open(&fd, "rpme", DIR_MODE, &rpme_path)?;
        check_dir(rpme.as_fd(), &rpme_path, me)?;
        let cache = Cache {
            dir: dir.to_path_buf(),
            fd,
            rpme,
            me,
        };
        for (name, _) in dir::read_names(&cache.rpme, &rpme_path)? {
            let path = rpme_path.join(&name);
            let fan = open_checked_dir(cache.rpme.as_fd(), name.as_os_str(), &path)?;
            check_dir(fan.as_fd(), &path, me)?;
        }
        Ok(cache)
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Its directory, open (checked).
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// The fan-out directory of `digest`, created if missing, checked;
    /// with the entry's name and path.
    fn fan_out(&self, digest: &str) -> Result<(OwnedFd, String, PathBuf), CacheError> {
        if digest.len() < 3 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(CacheError::BadDigest(digest.to_string()));
        }
        let fan = &digest[..2];
        let path = self.dir.join("rpme").join(fan);
        match rustix::fs::mkdirat(&self.rpme, fan, Mode::from_raw_mode(DIR_MODE)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(IoError::new("create directory", &path, e).into()),
        }
        let fd = open_checked_dir(self.rpme.as_fd(), fan, &path)?;
        check_dir(fd.as_fd(), &path, self.me)?;
        let name = format!("{digest}.rpme");
        let entry = path.join(&name);
        Ok((fd, name, entry))
    }

    /// Where the entry for the header digest `digest` (lower-case hex)
    /// lives; its fan-out directory is created (and checked).
    pub fn path_for(&self, digest: &str) -> Result<PathBuf, CacheError> {
        Ok(self.fan_out(digest)?.2)
    }

    /// The entry for `digest`, opened without following a symlink and
    /// checked: a symlink, anything but a regular file, a file others may
    /// write, or one that fails [`ExtentsFile::open`] is
    /// [`Lookup::Damaged`].
    pub fn lookup(&self, digest: &str) -> Result<Lookup, CacheError> {
        let (fan, name, path) = self.fan_out(digest)?;
        let opened = dir::open_regular(|f| {
            rustix::fs::openat(&fan, name.as_str(), f | OFlags::NOFOLLOW, Mode::empty())
        });
        let (fd, st) = match opened {
            Ok(x) => x,
            Err(e) if e.raw_os_error() == Some(Errno::NOENT.raw_os_error()) => {
                return Ok(Lookup::Miss(path))
            }
            Err(e) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
                let why = Error::Corrupt("it is a symlink".into());
                return Ok(Lookup::Damaged(path, why));
            }
            Err(e) if dir::is_not_regular(&e) => {
                return Ok(Lookup::Damaged(path, Error::Corrupt(e.to_string())))
            }
            Err(e) => return Err(IoError::new("open", &path, e).into()),
        };
        if let Some(why) = unsafe_mode(&st, self.me) {
            return Ok(Lookup::Damaged(path, Error::Corrupt(format!("it {why}"))));
        }
        Ok(match ExtentsFile::open(File::from(fd), &path) {
            Ok(x) if x.package().header_digest() == digest => Lookup::Hit(path),
            Ok(x) => {
                let found = x.package().header_digest().to_string();
                Lookup::Damaged(
                    path,
                    Error::Corrupt(format!(
                        "it holds the package with header digest {found}, not {digest}"
                    )),
                )
            }
            Err(e) => Lookup::Damaged(path, e),
        })
    }

    /// A new entry for `digest`: write it through [`NewEntry::file`], then
    /// [`NewEntry::commit`] it. Dropped uncommitted, it leaves nothing.
    pub fn new_entry(&self, digest: &str) -> Result<NewEntry, CacheError> {
        let (fan, name, path) = self.fan_out(digest)?;
        let dir_path = path.parent().unwrap_or(&self.dir).to_path_buf();
        let new = NewFile::anonymous(fan.as_fd(), &dir_path, ENTRY_MODE)?;
        Ok(NewEntry {
            new,
            fan,
            name,
            path,
        })
    }
}

/// An entry being written ([`Cache::new_entry`]).
#[derive(Debug)]
pub struct NewEntry {
    new: NewFile,
    fan: OwnedFd,
    name: String,
    path: PathBuf,
}

impl NewEntry {
    /// The file to write (empty, unnamed).
    pub fn file(&self) -> &File {
        self.new.file()
    }

    /// Where it goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Give the file [`ENTRY_MODE`] (on its descriptor), then its name,
    /// replacing a damaged entry there. Returns its path.
    pub fn commit(self) -> Result<PathBuf, CacheError> {
        rustix::fs::fchmod(self.new.file(), Mode::from_raw_mode(ENTRY_MODE))
            .map_err(|e| IoError::new("chmod", &self.path, e))?;
        self.new.commit(self.fan.as_fd(), &self.name, &self.path)?;
        Ok(self.path)
    }
}

/// Open the directory `name` in `dir` without following a symlink; a
/// symlink or another file there is [`Unsafe::NotDir`].
fn open_checked_dir(
    dir: BorrowedFd<'_>,
    name: impl rustix::path::Arg + Copy,
    path: &Path,
) -> Result<OwnedFd, CacheError> {
    match dir::open_dir(dir, name, path) {
        Ok(fd) => Ok(fd),
        Err(e) if matches!(e.errno(), Some(Errno::LOOP | Errno::NOTDIR)) => {
            let kind = rustix::fs::statat(dir, name, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                .map_or("file of unknown type", |st| {
                    dir::type_name(FileType::from_raw_mode(st.st_mode))
                });
            Err(CacheError::Unsafe {
                path: path.to_path_buf(),
                why: Unsafe::NotDir(kind),
            })
        }
        Err(e) => Err(e.into()),
    }
}

/// What makes a file or directory with `st` changeable by someone other
/// than `me` and root.
fn unsafe_mode(st: &rustix::fs::Stat, me: u32) -> Option<Unsafe> {
    let mode = st.st_mode & 0o7777;
    if st.st_uid != me && st.st_uid != 0 {
        Some(Unsafe::Owner {
            owner: st.st_uid,
            me,
        })
    } else if mode & 0o022 != 0 {
        Some(Unsafe::Writable { mode })
    } else {
        None
    }
}

/// Refuse the open directory `fd` (`path`) if others can change it.
fn check_dir(fd: BorrowedFd<'_>, path: &Path, me: u32) -> Result<(), CacheError> {
    let st = rustix::fs::fstat(fd).map_err(|e| IoError::new("stat", path, e))?;
    match unsafe_mode(&st, me) {
        Some(why) => Err(CacheError::Unsafe {
            path: path.to_path_buf(),
            why,
        }),
        None => Ok(()),
    }
}

/// Walk up from the open directory `fd` through `..` to `/`: refuse a
/// parent that belongs to another user, or that its group or others may
/// write without the sticky bit (they could rename the cache away and put
/// their own in its place).
fn check_parents(fd: BorrowedFd<'_>, path: &Path, me: u32) -> Result<(), CacheError> {
    let top = rustix::fs::stat("/").map_err(|e| IoError::new("stat", "/", e))?;
    let mut cur = rustix::io::fcntl_dupfd_cloexec(fd, 0)
        .map_err(|e| IoError::new("open directory", path, e))?;
    // Named in messages by the real path (the cache may be a symlink).
    let mut shown = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    for _ in 0..4096 {
        let st = rustix::fs::fstat(&cur).map_err(|e| IoError::new("stat", &shown, e))?;
        if (st.st_dev, st.st_ino) == (top.st_dev, top.st_ino) {
            return Ok(());
        }
        let parent = dir::open_dir(&cur, "..", &shown)?;
        let pst = rustix::fs::fstat(&parent).map_err(|e| IoError::new("stat", &shown, e))?;
        if (pst.st_dev, pst.st_ino) == (st.st_dev, st.st_ino) {
            return Ok(());
        }
        shown = shown
            .parent()
            .map_or_else(|| shown.join(".."), Path::to_path_buf);
        let mode = pst.st_mode & 0o7777;
        let why = if pst.st_uid != me && pst.st_uid != 0 {
            Some(Unsafe::Owner {
                owner: pst.st_uid,
                me,
            })
        } else if mode & 0o022 != 0 && mode & 0o1000 == 0 {
            Some(Unsafe::Parent { mode })
        } else {
            None
        };
        if let Some(why) = why {
            return Err(CacheError::Unsafe { path: shown, why });
        }
        cur = parent;
    }
    Ok(())
}

/// What the cache knows about the `.rpm` with a given whole-file checksum
/// ([`Cache::record_checksum`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChecksumRecord {
    /// Its header digest: the entry that holds it.
    pub header_digest: String,
    /// What identifies the keys its header signature verified with, when
    /// it was checked: the caller's words, one line each, none holding a
    /// newline (`cowkit dnf`: each key file's SHA-256 and path, so that a
    /// key file whose content changed no longer matches); `None`: not
    /// checked.
    pub signed_with: Option<Vec<String>>,
}

/// The longest checksum record read.
const MAX_RECORD_BYTES: u64 = 64 << 10;

impl Cache {
    /// The directory of checksum records for (`kind`, `hex`), created and
    /// checked, with the record's name and path.
    fn checksum_dir(
        &self,
        kind: &str,
        hex: &str,
    ) -> Result<(OwnedFd, String, PathBuf), CacheError> {
        let ok = |s: &str, hex: bool| {
            s.len() >= 3
                && s.len() <= 128
                && s.bytes().all(|b| {
                    if hex {
                        b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
                    } else {
                        b.is_ascii_alphanumeric()
                    }
                })
        };
        if !ok(kind, false) || !ok(hex, true) {
            return Err(CacheError::BadDigest(format!("{kind}:{hex}")));
        }
        let mut path = self.dir.join("by-checksum");
        let mut fd = dir::mkdir_open(&self.fd, "by-checksum", DIR_MODE, &path)?;
        check_dir(fd.as_fd(), &path, self.me)?;
        for name in [kind, &hex[..2]] {
            path = path.join(name);
            fd = dir::mkdir_open(&fd, name, DIR_MODE, &path)?;
            check_dir(fd.as_fd(), &path, self.me)?;
        }
        let entry = path.join(hex);
        Ok((fd, hex.to_string(), entry))
    }

    /// The record for the `.rpm` whose `kind` checksum is `hex`, if there
    /// is a sound one (a regular file only the user or root can change,
    /// holding a digest; anything else is ignored, as if missing).
    pub fn checksum_record(
        &self,
        kind: &str,
        hex: &str,
    ) -> Result<Option<ChecksumRecord>, CacheError> {
        use std::io::Read;
        let (fd, name, path) = self.checksum_dir(kind, hex)?;
        let opened = dir::open_regular(|f| {
            rustix::fs::openat(&fd, name.as_str(), f | OFlags::NOFOLLOW, Mode::empty())
        });
        let (file, st) = match opened {
            Ok(x) => x,
            // Missing, a symlink, not a regular file: no record.
            Err(_) => return Ok(None),
        };
        if unsafe_mode(&st, self.me).is_some() {
            return Ok(None);
        }
        let mut text = String::new();
        File::from(file)
            .take(MAX_RECORD_BYTES)
            .read_to_string(&mut text)
            .map_err(|e| IoError::new("read", &path, e))?;
        Ok(parse_record(&text))
    }

    /// Record that the `.rpm` whose `kind` checksum is `hex` has the
    /// header digest (and signature check) of `record`: written unnamed,
    /// given [`ENTRY_MODE`], then named (replacing an older record).
    pub fn record_checksum(
        &self,
        kind: &str,
        hex: &str,
        record: &ChecksumRecord,
    ) -> Result<(), CacheError> {
        use std::io::Write;
        let (fd, name, path) = self.checksum_dir(kind, hex)?;
        let text = record_text(record)
            .ok_or_else(|| CacheError::BadDigest(record.header_digest.clone()))?;
        let dir_path = path.parent().unwrap_or(&self.dir).to_path_buf();
        let new = NewFile::anonymous(fd.as_fd(), &dir_path, ENTRY_MODE)?;
        new.file()
            .write_all(text.as_bytes())
            .map_err(|e| IoError::new("write", &path, e))?;
        rustix::fs::fchmod(new.file(), Mode::from_raw_mode(ENTRY_MODE))
            .map_err(|e| IoError::new("chmod", &path, e))?;
        new.commit(fd.as_fd(), &name, &path)?;
        Ok(())
    }
}

/// `digest\n` then `signed\n` and one `key KEY\n` per key when the
/// signature was checked; `None` for a digest that is not hex or a key
/// that holds a newline.
fn record_text(r: &ChecksumRecord) -> Option<String> {
    if r.header_digest.len() != 64 || !r.header_digest.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut text = format!("{}\n", r.header_digest);
    if let Some(keys) = &r.signed_with {
        text.push_str("signed\n");
        for k in keys {
            if k.contains('\n') {
                return None;
            }
            text.push_str(&format!("key {k}\n"));
        }
    }
    Some(text)
}

/// The record `text` holds ([`record_text`]'s format), or `None`.
fn parse_record(text: &str) -> Option<ChecksumRecord> {
    let mut lines = text.lines();
    let digest = lines.next()?;
    if digest.len() != 64
        || !digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return None;
    }
    let signed_with = match lines.next() {
        None => None,
        Some("signed") => Some(
            lines
                .map(|l| l.strip_prefix("key ").map(str::to_string))
                .collect::<Option<Vec<_>>>()?,
        ),
        Some(_) => return None,
    };
    Some(ChecksumRecord {
        header_digest: digest.to_string(),
        signed_with,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_records_read_back() {
        let d = "ab".repeat(32);
        let key = format!("sha256:{} /etc/pki/rpm-gpg/K", "cd".repeat(32));
        for signed_with in [None, Some(vec![key])] {
            let r = ChecksumRecord {
                header_digest: d.clone(),
                signed_with,
            };
            assert_eq!(parse_record(&record_text(&r).unwrap()), Some(r));
        }
        assert_eq!(parse_record("zz\n"), None);
        assert_eq!(parse_record(&format!("{d}\nother\n")), None);
    }
}
