//! The storage backend: buckets are directories under the root, objects are
//! plain files, the gateway's own records live in `DIR/.cowkit-s3/`.
//! Every `impl Store` is here or in the files below `store/`: buckets
//! (`buckets`), uploads and the complete (`uploads`), the fleet's locks and
//! sweep (`fleet`), what versioning keeps on disk (`versions`).
//!
//! ```text
//! DIR/<bucket>/<key>                         the object's bytes
//! DIR/.cowkit-s3/meta/<bucket>/bucket.json   creation time
//! DIR/.cowkit-s3/meta/<bucket>/tags.json     the bucket's tags, when it has any
//! DIR/.cowkit-s3/meta/<bucket>/<h2>/<h>.json the object's record: key, inode, size,
//!                                            ETag, content type, user metadata,
//!                                            tags
//!                                            (h = SHA-256 of the key)
//! DIR/.cowkit-s3/tmp/<gateway>/              files being written by one running gateway
//! DIR/.cowkit-s3/uploads/<id>/               one multipart upload (see `multipart`)
//! DIR/.cowkit-s3/lock                        the gateways' byte-range locks (see `fleet`)
//! ```
//!
//! Every object is written as an unnamed file (`O_TMPFILE`) in `tmp/`,
//! then named there, its record written (with the new file's inode
//! number), and renamed over `DIR/<bucket>/<key>`: readers see the old or
//! the new object, never a partial one. A record whose inode does not match
//! the file (the file was replaced by another tool, or a writer raced) is
//! ignored and the object gets an ETag made from inode, size and mtime.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use cowkit_fs::root::{RelPath, Root};
use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

mod buckets;
mod fleet;
mod uploads;
pub mod versions;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use crate::error::{io, Error, Result};
use crate::fsutil::{self, NewFile};
use crate::names::{self, SYS_DIR};
use crate::stale::Try;
use cowkit_fs::error::errno_of;

/// How the store behaves.
#[derive(Clone, Debug)]
pub struct Options {
    /// Make data and directory entries durable before answering.
    pub fsync: bool,
    /// Smallest size of every part but the last (S3: 5 MiB).
    pub min_part_size: u64,
    /// Keep part files after a complete (for tests that look at shared
    /// extents); normally they are removed.
    pub keep_parts: bool,
    /// How long the record of a completed upload is kept, so that a
    /// retried complete gets the same answer.
    pub completed_ttl: Duration,
    /// How long a complete may run before its response starts and
    /// whitespace keeps the connection alive until the XML is ready.
    pub keepalive_after: Duration,
    /// How often a running server sweeps what dead gateways and
    /// interrupted completes left (see [`Store::sweep`]); it also sweeps at
    /// start.
    pub sweep_every: Duration,
    /// Buckets made with object lock are not versioned (as VersityGW
    /// serves them without `--versioning-dir`): a locked object cannot be
    /// overwritten, and object lock may be configured on any bucket. By
    /// default, as on S3, object lock turns versioning on.
    pub object_lock_without_versioning: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fsync: false,
            min_part_size: 5 << 20,
            keep_parts: false,
            completed_ttl: Duration::from_secs(24 * 3600),
            keepalive_after: Duration::from_millis(500),
            sweep_every: Duration::from_secs(600),
            object_lock_without_versioning: false,
        }
    }
}

/// What is kept about an object besides its bytes.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ObjectMeta {
    /// The key (checked on read: the record's name is a hash).
    pub key: String,
    /// Inode of the file the record describes.
    pub ino: u64,
    /// Size in bytes.
    pub size: u64,
    /// ETag without quotes.
    pub etag: String,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `x-amz-meta-*`, names lowercase.
    pub metadata: BTreeMap<String, String>,
    /// The additional checksum (`x-amz-checksum-*`), when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<crate::checksum::Checksum>,
    /// Stored response headers ([`STORED_HEADERS`]), names lowercase.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// The sizes of the parts of a multipart object, in order (for GET and
    /// HEAD with `partNumber`); empty for other objects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<u64>,
    /// The object's tags, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<crate::tagging::Tag>,
    /// The version id (`None`: the `null` version; see [`crate::versions`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// The version's order among the key's (a version id; empty: oldest).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub seq: String,
    /// An older version's record that is a delete marker (no data).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delete_marker: bool,
    /// Object lock retention of this version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<crate::versions::lock::Retention>,
    /// Object lock legal hold of this version (`None`: never set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal_hold: Option<bool>,
    /// A write's caller bypasses governance retention; never stored.
    #[serde(skip)]
    pub bypass_governance: bool,
    /// The record this one replaced, kept until the new file is renamed
    /// into place: a reader (or a restart after a crash) that still finds
    /// the old file gets the old record. Never set on a record handed out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prev: Option<Box<ObjectMeta>>,
}

impl ObjectMeta {
    /// The record of a new object made from it (a copy): its version
    /// and object lock are its own.
    pub fn as_new(self) -> ObjectMeta {
        ObjectMeta {
            version_id: None,
            seq: String::new(),
            delete_marker: false,
            retention: None,
            legal_hold: None,
            ..self
        }
    }

    /// This record, or the one it replaced when that one describes the
    /// file `st` (a writer between its record and its rename, or a crash
    /// there); without `prev` either way.
    fn describing(mut self, st: &rustix::fs::Stat) -> ObjectMeta {
        let fits = |m: &ObjectMeta| m.ino == st.st_ino && m.size == st.st_size as u64;
        if !fits(&self) {
            if let Some(p) = self.prev.take().filter(|p| fits(p)) {
                return *p;
            }
        }
        self.prev = None;
        self
    }

    /// Byte range `[start, end)` of part `n` (1-based), and the part count;
    /// an object uploaded in one piece is one part.
    pub fn part_range(&self, n: i32) -> Option<(u64, u64, usize)> {
        if self.parts.is_empty() {
            return (n == 1).then_some((0, self.size, 1));
        }
        let i = usize::try_from(n).ok()?.checked_sub(1)?;
        let start: u64 = self.parts.get(..i)?.iter().sum();
        Some((start, start + *self.parts.get(i)?, self.parts.len()))
    }
}

/// The bucket's tags, in its directory of records.
const BUCKET_TAGS: &str = "tags.json";

/// The request headers S3 keeps with an object and returns on GET and HEAD.
pub const STORED_HEADERS: [&str; 6] = [
    "cache-control",
    "content-disposition",
    "content-encoding",
    "content-language",
    "expires",
    "x-amz-website-redirect-location",
];

/// An object as read: its record and file status.
#[derive(Debug)]
pub struct ObjectInfo {
    /// The record (synthetic when none matched the file).
    pub meta: ObjectMeta,
    /// Modification time.
    pub mtime: SystemTime,
}

/// A bucket as listed.
#[derive(Debug, Clone)]
pub struct BucketInfo {
    /// Name.
    pub name: String,
    /// Creation time.
    pub created: SystemTime,
    /// The account that owns it (`bucket.json`'s `owner`); `None` for a
    /// bucket made before buckets had owners or by another tool: the
    /// server's own key pair owns those.
    pub owner: Option<String>,
}

/// The part of `bucket.json` the store reads back.
#[derive(Debug, Default, Deserialize)]
struct BucketRecord {
    #[serde(default)]
    owner: Option<String>,
    /// Seconds since the epoch.
    #[serde(default)]
    created: Option<u64>,
}

/// The storage backend on one root directory.
#[derive(Debug)]
pub struct Store {
    pub(crate) root: Root,
    pub(crate) dir: PathBuf,
    /// `DIR/.cowkit-s3`, where the lock file is.
    pub(crate) sys: OwnedFd,
    /// `tmp/<instance>/`: this gateway's temporary files.
    pub(crate) tmp: OwnedFd,
    /// `tmp/`.
    pub(crate) tmp_all: OwnedFd,
    /// This gateway's id (its directory in `tmp/`).
    pub(crate) instance: String,
    pub(crate) meta: OwnedFd,
    pub(crate) uploads: OwnedFd,
    pub(crate) opts: Options,
    /// Held while the store is open: tells other gateways that `tmp`
    /// is in use.
    _alive: crate::fleet::Held,
}

pub(crate) fn mtime(st: &rustix::fs::Stat) -> SystemTime {
    SystemTime::UNIX_EPOCH
        + Duration::new(
            st.st_mtime.max(0) as u64,
            st.st_mtime_nsec.clamp(0, 999_999_999) as u32,
        )
}

impl Store {
    /// Open the store on `dir` (which must exist), creating its own
    /// directories and removing what interrupted runs left ([`Store::sweep`]).
    /// Other gateways may have the same `dir` open, in this process or
    /// others (see `fleet`).
    pub fn open(dir: &Path, opts: Options) -> Result<Store> {
        let root = Root::open(dir)?;
        let sp = dir.join(SYS_DIR);
        let sys = fsutil::mkdir_open(root.fd(), SYS_DIR, &sp)?;
        let tmp_all = fsutil::mkdir_open(sys.as_fd(), "tmp", &sp.join("tmp"))?;
        let meta = fsutil::mkdir_open(sys.as_fd(), "meta", &sp.join("meta"))?;
        let uploads = fsutil::mkdir_open(sys.as_fd(), "uploads", &sp.join("uploads"))?;
        let (instance, alive, tmp) =
            crate::fleet::claim_instance(sys.as_fd(), &sp, tmp_all.as_fd())?;
        let store = Store {
            root,
            dir: dir.to_path_buf(),
            sys,
            tmp,
            tmp_all,
            instance,
            meta,
            uploads,
            opts,
            _alive: alive,
        };
        store.sweep()?;
        Ok(store)
    }

    /// Replace the record `name` in `dir` (shown as `path`), atomically;
    /// its temporary file is made in this gateway's `tmp/`.
    pub(crate) fn write_json<T: Serialize>(
        &self,
        dir: BorrowedFd<'_>,
        name: &str,
        path: &Path,
        value: &T,
    ) -> Result<()> {
        fsutil::write_json(
            (self.tmp.as_fd(), &self.tmp_path()),
            dir,
            name,
            path,
            value,
            self.opts.fsync,
        )
    }

    /// The options.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// The root directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn sys_path(&self) -> PathBuf {
        self.dir.join(SYS_DIR)
    }

    pub(crate) fn tmp_path(&self) -> PathBuf {
        self.sys_path().join("tmp").join(&self.instance)
    }

    fn meta_path(&self, bucket: &str) -> PathBuf {
        self.sys_path().join("meta").join(bucket)
    }

    /// A new unnamed file for an object's data.
    pub fn new_file(&self) -> Result<NewFile> {
        Ok(NewFile::anonymous(
            self.tmp.as_fd(),
            &self.tmp_path(),
            0o644,
        )?)
    }

    // ---- buckets ----------------------------------------------------------

    /// The bucket's directory; [`Error::NoSuchBucket`] when absent.
    pub(crate) fn bucket_dir(&self, bucket: &str) -> Result<OwnedFd> {
        names::check_bucket(bucket).map_err(|_| Error::NoSuchBucket {
            bucket: bucket.to_string(),
        })?;
        fsutil::open_dir_opt(self.root.fd(), bucket, &self.dir.join(bucket))?.ok_or_else(|| {
            Error::NoSuchBucket {
                bucket: bucket.to_string(),
            }
        })
    }

    fn bucket_meta_dir(&self, bucket: &str) -> Result<OwnedFd> {
        fsutil::mkdir_open(self.meta.as_fd(), bucket, &self.meta_path(bucket))
    }

    // ---- object records -----------------------------------------------------

    fn record_name(key: &str) -> (String, String) {
        let h = hex::encode(sha2::Sha256::digest(key.as_bytes()));
        (h[..2].to_string(), format!("{h}.json"))
    }

    pub(crate) fn read_record(&self, bucket: &str, key: &str) -> Result<Option<ObjectMeta>> {
        let (sub, name) = Self::record_name(key);
        let p = self.meta_path(bucket).join(&sub).join(&name);
        let rel = format!("{bucket}/{sub}/{name}");
        crate::fault::stale("open-record", "open", || p.clone())?;
        let m: Option<ObjectMeta> = match fsutil::read_json(self.meta.as_fd(), &rel, &p) {
            Ok(m) => m,
            // A damaged record is as good as none: the object stays readable.
            Err(Error::Corrupt { .. }) => None,
            Err(e) => return Err(e),
        };
        Ok(m.filter(|m| m.key == key))
    }

    pub(crate) fn write_record(&self, bucket: &str, meta: &ObjectMeta) -> Result<()> {
        let (sub, name) = Self::record_name(&meta.key);
        let bm = self.bucket_meta_dir(bucket)?;
        let sp = self.meta_path(bucket).join(&sub);
        let sd = fsutil::mkdir_open(bm.as_fd(), &sub, &sp)?;
        self.write_json(sd.as_fd(), &name, &sp.join(&name), meta)?;
        if self.opts.fsync {
            fsutil::sync_dir(&sd, &sp)?;
        }
        Ok(())
    }

    pub(crate) fn remove_record(&self, bucket: &str, key: &str) {
        let (sub, name) = Self::record_name(key);
        let _ = rustix::fs::unlinkat(
            &self.meta,
            format!("{bucket}/{sub}/{name}").as_str(),
            AtFlags::empty(),
        );
    }

    // ---- objects ------------------------------------------------------------

    pub(crate) fn rel(bucket: &str, key: &str) -> Result<RelPath> {
        names::check_key(key)?;
        let path = key.strip_suffix('/').unwrap_or(key);
        RelPath::new(format!("{bucket}/{path}")).map_err(|e| Error::InvalidKey {
            key: key.to_string(),
            why: e.why,
        })
    }

    /// Give `file` (made by [`Store::new_file`]) the name `key` in `bucket`,
    /// replacing any object there, with the record `meta` (its inode and
    /// size are filled in here). Returns the record written.
    pub fn commit_object(
        &self,
        bucket: &str,
        key: &str,
        file: NewFile,
        mut meta: ObjectMeta,
    ) -> Result<ObjectMeta> {
        let rel = Self::rel(bucket, key)?;
        let _bucket = self.bucket_dir(bucket)?;
        let st = rustix::fs::fstat(file.file()).map_err(|e| io("stat", file.path(), e))?;
        // Record and rename are one change for every gateway on this root.
        let _held = self.lock_object(bucket, key)?;
        if names::is_dir_key(key) {
            if st.st_size != 0 {
                return Err(Error::DirectoryObjectContainsData);
            }
            return self.commit_dir_object(bucket, key, &rel, meta);
        }
        meta.key = key.to_string();
        meta.ino = st.st_ino;
        meta.size = st.st_size as u64;
        if self.opts.fsync {
            file.sync()?;
        }
        let (_, tmpname) = file.into_named(self.tmp.as_fd())?;
        crate::fault::point("commit-named");
        let unlink_tmp = || {
            let _ = rustix::fs::unlinkat(&self.tmp, tmpname.as_str(), AtFlags::empty());
        };
        let (parent, name) = rel.split().expect("a key is not the root");
        let conflict = |path: PathBuf| Error::KeyConflict {
            key: key.to_string(),
            path,
        };
        let make_parent = || match self.root.create_dirs(&parent, 0o755) {
            Ok(fd) => Ok(fd),
            Err(e) => {
                unlink_tmp();
                Err(match errno_of(&e) {
                    Some(Errno::NOTDIR | Errno::EXIST) => conflict(self.root.display(&parent)),
                    _ => e.into(),
                })
            }
        };
        let mut pfd = make_parent()?;
        if let Err(e) = self.before_commit(
            bucket,
            key,
            pfd.as_fd(),
            name.to_str().unwrap_or_default(),
            &mut meta,
        ) {
            unlink_tmp();
            return Err(e);
        }
        // Until the rename, readers that find the old file get the old
        // record from `prev` (and so does a restart after a crash here).
        meta.prev = match self.read_record(bucket, key) {
            Ok(Some(mut old)) => {
                old.prev = None;
                Some(Box::new(old))
            }
            _ => None,
        };
        if let Err(e) = self.write_record(bucket, &meta) {
            unlink_tmp();
            return Err(e);
        }
        meta.prev = None;
        crate::fault::point("commit-recorded");
        let path = self.root.display(&rel);
        let mut tries = 0;
        // Not `replace_at`: it removes the source on failure, and a retry
        // needs it.
        while let Err(e) = rustix::fs::renameat(&self.tmp, tmpname.as_str(), &pfd, name) {
            // A delete of another key under the same directory removed
            // it (empty) after `create_dirs`: make it again.
            if e == Errno::NOENT && tries < cowkit_fs::root::PRUNED_RETRIES {
                cowkit_fs::root::pause_before_retry(tries);
                tries += 1;
                pfd = make_parent()?;
                continue;
            }
            unlink_tmp();
            return Err(match e {
                Errno::ISDIR | Errno::NOTEMPTY | Errno::EXIST | Errno::NOTDIR => conflict(path),
                _ => io("rename into place", path, e),
            });
        }
        if self.opts.fsync {
            fsutil::sync_dir(&pfd, &self.root.display(&parent))?;
        }
        Ok(meta)
    }

    /// A directory object: the directory (made with its parents), and a
    /// record naming its inode.
    fn commit_dir_object(
        &self,
        bucket: &str,
        key: &str,
        rel: &RelPath,
        mut meta: ObjectMeta,
    ) -> Result<ObjectMeta> {
        let fd = self
            .root
            .create_dirs(rel, 0o755)
            .map_err(|e| match errno_of(&e) {
                Some(Errno::NOTDIR | Errno::EXIST) => Error::KeyConflict {
                    key: key.to_string(),
                    path: self.root.display(rel),
                },
                _ => e.into(),
            })?;
        let st = rustix::fs::fstat(&fd).map_err(|e| io("stat", self.root.display(rel), e))?;
        meta.key = key.to_string();
        meta.ino = st.st_ino;
        meta.size = 0;
        self.write_record(bucket, &meta)?;
        Ok(meta)
    }

    /// Whether `dir` (a key without its trailing `/`) is a directory object.
    fn is_dir_object(&self, bucket: &str, dir: &str) -> bool {
        matches!(self.read_record(bucket, &format!("{dir}/")), Ok(Some(_)))
    }

    /// Open the object for reading, with its record; opened again by name
    /// when another host replaced it meanwhile (see `stale`).
    pub fn open_object(&self, bucket: &str, key: &str) -> Result<(File, ObjectInfo)> {
        crate::stale::reopen(
            || format!("{bucket}/{key}"),
            || self.open_object_once(bucket, key),
        )
    }

    /// One attempt of [`Store::open_object`]: the file opened by name and
    /// its record, or what says to open it again.
    pub(crate) fn open_object_once(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Try<(File, ObjectInfo)>> {
        let rel = Self::rel(bucket, key)?;
        let _bucket = self.bucket_dir(bucket)?;
        let missing = || Error::NoSuchKey {
            bucket: bucket.to_string(),
            key: key.to_string(),
        };
        if names::is_dir_key(key) {
            let fd = match self.root.open_dir(&rel) {
                Ok(fd) => fd,
                Err(e) => {
                    return Err(match errno_of(&e) {
                        Some(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => missing(),
                        _ => e.into(),
                    })
                }
            };
            let st = rustix::fs::fstat(&fd).map_err(|e| io("stat", self.root.display(&rel), e))?;
            let mut meta = self.read_record(bucket, key)?.ok_or_else(missing)?;
            meta.prev = None;
            return Ok(Try::Done((
                File::from(fd),
                ObjectInfo {
                    meta,
                    mtime: mtime(&st),
                },
            )));
        }
        crate::fault::stale("open-object", "open", || self.root.display(&rel))?;
        let fd = match self.root.open_read(&rel) {
            Ok(fd) => fd,
            Err(e) => {
                return match errno_of(&e) {
                    // A name being replaced by another host can be missing
                    // for a moment on a shared filesystem: its record says
                    // the object is there.
                    Some(Errno::NOENT) if self.read_record(bucket, key)?.is_some() => {
                        Ok(Try::Again(Err(missing())))
                    }
                    Some(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => Err(missing()),
                    // A directory or a fifo under the key's name is not
                    // an object.
                    _ if cowkit_fs::dir::is_not_regular(&e) => Err(missing()),
                    _ => Err(e.into()),
                };
            }
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| io("stat", self.root.display(&rel), e))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(missing());
        }
        let rec = self.read_record(bucket, key)?.map(|m| m.describing(&st));
        let info = |meta| ObjectInfo {
            meta,
            mtime: mtime(&st),
        };
        let synthetic = |rec: Option<ObjectMeta>| ObjectMeta {
            key: key.to_string(),
            ino: st.st_ino,
            size: st.st_size as u64,
            etag: synthetic_etag(&st),
            content_type: rec.and_then(|r| r.content_type),
            metadata: BTreeMap::new(),
            checksum: None,
            headers: BTreeMap::new(),
            parts: Vec::new(),
            ..Default::default()
        };
        Ok(match rec {
            Some(m) if m.ino == st.st_ino && m.size == st.st_size as u64 => {
                Try::Done((File::from(fd), info(m)))
            }
            // A writer may be between its record and its rename: again;
            // when that lasts, the file is another tool's.
            Some(m) => Try::Again(Ok((File::from(fd), info(synthetic(Some(m)))))),
            None => Try::Done((File::from(fd), info(synthetic(None)))),
        })
    }

    /// Replace the object's tags (PutObjectTagging; an empty set is
    /// DeleteObjectTagging). The record is rewritten under the object's
    /// fleet lock, so no commit of another gateway lands in between; an
    /// object without a matching record gets one (with the ETag it was
    /// shown with).
    pub fn set_tags(&self, bucket: &str, key: &str, tags: Vec<crate::tagging::Tag>) -> Result<()> {
        let _held = self.lock_object(bucket, key)?;
        let (_file, info) = self.open_object(bucket, key)?;
        let mut meta = info.meta;
        if meta.tags == tags {
            return Ok(());
        }
        meta.tags = tags;
        meta.prev = None;
        self.write_record(bucket, &meta)
    }

    /// Delete the object; a missing object is not an error (S3 semantics).
    /// Directories left empty are removed up to the bucket.
    pub fn delete_object(&self, bucket: &str, key: &str) -> Result<()> {
        Self::rel(bucket, key)?;
        self.bucket_dir(bucket)?;
        let _held = self.lock_object(bucket, key)?;
        self.delete_object_locked(bucket, key)
    }

    /// [`Store::delete_object`], the caller holding the key's lock.
    pub(crate) fn delete_object_locked(&self, bucket: &str, key: &str) -> Result<()> {
        let rel = Self::rel(bucket, key)?;
        let _bucket = self.bucket_dir(bucket)?;
        let (parent, name) = rel.split().expect("a key is not the root");
        let pfd = match self.root.open_dir(&parent) {
            Ok(fd) => fd,
            Err(e) if matches!(errno_of(&e), Some(Errno::NOENT | Errno::NOTDIR)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        if names::is_dir_key(key) {
            // The directory goes only when nothing else is in it.
            let _ = rustix::fs::unlinkat(&pfd, name, AtFlags::REMOVEDIR);
        } else {
            match rustix::fs::unlinkat(&pfd, name, AtFlags::empty()) {
                Ok(()) | Err(Errno::NOENT) | Err(Errno::ISDIR) => {}
                Err(e) => return Err(io("remove", self.root.display(&rel), e)),
            }
        }
        self.remove_record(bucket, key);
        if self.opts.fsync {
            fsutil::sync_dir(&pfd, &self.root.display(&parent))?;
        }
        // Remove now-empty directories, deepest first, never the bucket nor
        // a directory object.
        let mut p = parent;
        while let Some((up, name)) = p.split() {
            if up.is_root() {
                break;
            }
            // S3 keys are UTF-8, and so is every path made from them.
            let Some(text) = p.to_str() else { break };
            let dir_key = text.split_once('/').map(|x| x.1).unwrap_or("");
            if self.is_dir_object(bucket, dir_key) {
                break;
            }
            let Ok(ufd) = self.root.open_dir(&up) else {
                break;
            };
            if rustix::fs::unlinkat(&ufd, name, AtFlags::REMOVEDIR).is_err() {
                break;
            }
            p = up;
        }
        Ok(())
    }

    /// Every key in `bucket` that starts with `prefix`, sorted bytewise (as
    /// S3 sorts), with nothing else read.
    pub fn keys(&self, bucket: &str, prefix: &str) -> Result<Vec<String>> {
        let bfd = self.bucket_dir(bucket)?;
        // Walk only below the directory part of the prefix.
        let base = match prefix.rfind('/') {
            Some(i) => &prefix[..i],
            None => "",
        };
        let mut out = Vec::new();
        let start = if base.is_empty() {
            Some(bfd)
        } else {
            match RelPath::new(format!("{bucket}/{base}")) {
                Ok(r) => self.root.open_dir(&r).ok(),
                Err(_) => None,
            }
        };
        if let Some(fd) = start {
            let dir_key = format!("{base}/");
            if !base.is_empty() && dir_key.starts_with(prefix) && self.is_dir_object(bucket, base) {
                out.push(dir_key);
            }
            let mut stack = vec![(fd, base.to_string())];
            while let Some((fd, dir)) = stack.pop() {
                let shown = self.dir.join(bucket).join(&dir);
                for (name, mut ft) in fsutil::read_names(fd.as_fd(), &shown)? {
                    let key = if dir.is_empty() {
                        name.clone()
                    } else {
                        format!("{dir}/{name}")
                    };
                    if !key.starts_with(prefix) && !prefix.starts_with(&format!("{key}/")) {
                        continue;
                    }
                    if ft == FileType::Unknown {
                        match fsutil_stat_type(fd.as_fd(), &name) {
                            Some(t) => ft = t,
                            None => continue,
                        }
                    }
                    if ft == FileType::Directory {
                        let dir_key = format!("{key}/");
                        if dir_key.starts_with(prefix) && self.is_dir_object(bucket, &key) {
                            out.push(dir_key);
                        }
                        if let Some(sub) =
                            fsutil::open_dir_opt(fd.as_fd(), &name, &shown.join(&name))?
                        {
                            stack.push((sub, key));
                        }
                    } else if ft == FileType::RegularFile && key.starts_with(prefix) {
                        out.push(key);
                    }
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }

    /// The record and mtime of `key`, for listings; `None` when it vanished.
    pub fn stat_object(&self, bucket: &str, key: &str) -> Result<Option<ObjectInfo>> {
        match self.open_object(bucket, key) {
            Ok((_, info)) => Ok(Some(info)),
            Err(Error::NoSuchKey { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Copy the object `src_key` of `src_bucket` to `key` in `bucket` by
    /// cloning (or the cowkit-fs fallback chain). `meta` replaces the
    /// source's content type and metadata when given.
    pub fn copy_object(
        &self,
        src_bucket: &str,
        src_key: &str,
        bucket: &str,
        key: &str,
        replace: Option<(Option<String>, BTreeMap<String, String>)>,
    ) -> Result<(ObjectMeta, cowkit_fs::Copied)> {
        let source = self.open_object(src_bucket, src_key)?;
        self.copy_from(source, src_bucket, src_key, bucket, key, |meta, _| {
            if let Some((ct, md)) = replace {
                meta.content_type = ct;
                meta.metadata = md;
            }
            Ok(())
        })
    }

    /// Copy the opened object `source` (`src_key` of `src_bucket`, or one
    /// of its versions) to `key` in `bucket`; `edit` changes the copy's
    /// record before it is committed (given the source file, to compute a
    /// checksum from).
    pub fn copy_from(
        &self,
        (src, info): (File, ObjectInfo),
        src_bucket: &str,
        src_key: &str,
        bucket: &str,
        key: &str,
        edit: impl FnOnce(&mut ObjectMeta, &File) -> Result<()>,
    ) -> Result<(ObjectMeta, cowkit_fs::Copied)> {
        let dst = self.new_file()?;
        let src_path = self.dir.join(src_bucket).join(src_key);
        let mut copier = cowkit_fs::Copier::new(cowkit_fs::Chain::AUTO);
        let copied = copier.copy_file(
            cowkit_fs::Handle::new(&src, &src_path),
            cowkit_fs::Handle::new(dst.file(), &dst.path()),
        )?;
        let mut meta = info.meta.as_new();
        edit(&mut meta, &src)?;
        let meta = self.commit_object(bucket, key, dst, meta)?;
        Ok((meta, copied))
    }
}

impl Drop for Store {
    /// This gateway's temporary directory goes (it is empty unless a
    /// writer was abandoned); the sweep of the next start would take it
    /// otherwise.
    fn drop(&mut self) {
        let p = self.tmp_path();
        if let Err(e) = cowkit_fs::dir::remove_tree(&self.tmp_all, &self.instance, &p) {
            log::warn!("cannot remove {}: {}", p.display(), crate::error_chain(&e));
        }
    }
}

/// The checksum of a whole file.
pub fn file_checksum(
    f: &File,
    path: &Path,
    algo: crate::checksum::Algorithm,
) -> Result<crate::checksum::Checksum> {
    let mut h = crate::checksum::Hasher::new(algo);
    let mut buf = vec![0u8; 1 << 20];
    let mut off = 0u64;
    loop {
        let n = rustix::io::pread(f, &mut buf, off).map_err(|e| io("read", path, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        off += n as u64;
    }
    Ok(crate::checksum::Checksum {
        algorithm: algo,
        value: crate::checksum::b64(&h.finish()),
        kind: crate::checksum::Type::FullObject,
    })
}

fn fsutil_stat_type(dir: BorrowedFd<'_>, name: &str) -> Option<FileType> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|st| FileType::from_raw_mode(st.st_mode))
}

/// An ETag for a file without a matching record: changes whenever the file
/// does.
pub(crate) fn synthetic_etag(st: &rustix::fs::Stat) -> String {
    format!(
        "{:x}-{:x}-{:x}.{:x}",
        st.st_ino, st.st_size, st.st_mtime, st.st_mtime_nsec
    )
}
