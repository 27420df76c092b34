//! What versioning and object lock keep on disk, the store's side of
//! [`crate::versions`]: a bucket's states, and the versions directory of a
//! key.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use cowkit_fs::root::RelPath;
use rustix::fs::AtFlags;
use rustix::io::Errno;
use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::{ObjectInfo, ObjectMeta, Store};
use crate::error::{io, Error, Result, VersionError};
use crate::fsutil;
use crate::versions::{id, version_of, BucketState, LockConfig, Status};

mod ops;
pub use ops::*;

#[derive(Serialize, Deserialize)]
struct VersioningRecord {
    status: Status,
}

const VERSIONING: &str = "versioning.json";
const OBJECT_LOCK: &str = "object-lock.json";
const VERSIONS: &str = "versions";

fn meta_path(s: &Store, bucket: &str) -> PathBuf {
    s.sys_path().join("meta").join(bucket)
}

/// The bucket's versioning and object lock (the bucket must exist).
pub fn bucket_state(s: &Store, bucket: &str) -> Result<BucketState> {
    s.bucket_dir(bucket)?;
    let p = meta_path(s, bucket);
    let v: Option<VersioningRecord> = fsutil::read_json(
        s.meta.as_fd(),
        &format!("{bucket}/{VERSIONING}"),
        &p.join(VERSIONING),
    )?;
    let lock: Option<LockConfig> = fsutil::read_json(
        s.meta.as_fd(),
        &format!("{bucket}/{OBJECT_LOCK}"),
        &p.join(OBJECT_LOCK),
    )?;
    Ok(BucketState {
        status: v.map(|v| v.status).unwrap_or_default(),
        lock: lock.filter(|l| l.enabled),
    })
}

fn write_bucket_record<T: Serialize>(s: &Store, bucket: &str, name: &str, v: &T) -> Result<()> {
    let p = meta_path(s, bucket);
    let m = fsutil::mkdir_open(s.meta.as_fd(), bucket, &p)?;
    s.write_json(m.as_fd(), name, &p.join(name), v)
}

/// Set the bucket's versioning status (`Off` is not a status one can set).
pub fn set_status(s: &Store, bucket: &str, status: Status) -> Result<()> {
    s.bucket_dir(bucket)?;
    write_bucket_record(s, bucket, VERSIONING, &VersioningRecord { status })
}

/// Set the bucket's object lock configuration.
pub fn set_lock(s: &Store, bucket: &str, lock: &LockConfig) -> Result<()> {
    s.bucket_dir(bucket)?;
    write_bucket_record(s, bucket, OBJECT_LOCK, lock)
}

/// Object lock on a bucket being made: as on S3, it turns versioning on
/// (unless the server keeps lock buckets unversioned, as VersityGW
/// without versioning does).
pub fn enable_lock_on_new_bucket(s: &Store, bucket: &str) -> Result<()> {
    set_lock(s, bucket, &LockConfig::enabled())?;
    if !s.options().object_lock_without_versioning {
        set_status(s, bucket, Status::Enabled)?;
    }
    Ok(())
}

// ---- the versions directory of a key ------------------------------------

/// `versions/<bucket>/<h>`, shown as a path; opened (and made, with
/// `create`) below the gateway's own directory.
struct KeyDir {
    fd: OwnedFd,
    path: PathBuf,
}

fn key_hash(key: &str) -> String {
    hex::encode(sha2::Sha256::digest(key.as_bytes()))
}

fn bucket_versions(s: &Store, bucket: &str, create: bool) -> Result<Option<(OwnedFd, PathBuf)>> {
    let vp = s.sys_path().join(VERSIONS);
    let bp = vp.join(bucket);
    if create {
        let v = fsutil::mkdir_open(s.sys.as_fd(), VERSIONS, &vp)?;
        return Ok(Some((fsutil::mkdir_open(v.as_fd(), bucket, &bp)?, bp)));
    }
    let Some(v) = fsutil::open_dir_opt(s.sys.as_fd(), VERSIONS, &vp)? else {
        return Ok(None);
    };
    Ok(fsutil::open_dir_opt(v.as_fd(), bucket, &bp)?.map(|fd| (fd, bp)))
}

fn key_dir(s: &Store, bucket: &str, key: &str, create: bool) -> Result<Option<KeyDir>> {
    let Some((b, bp)) = bucket_versions(s, bucket, create)? else {
        return Ok(None);
    };
    let h = key_hash(key);
    let path = bp.join(&h);
    let fd = if create {
        Some(fsutil::mkdir_open(b.as_fd(), &h, &path)?)
    } else {
        fsutil::open_dir_opt(b.as_fd(), h.as_str(), &path)?
    };
    Ok(fd.map(|fd| KeyDir { fd, path }))
}

/// The record of version `v` (checked: a version id) in `d`, when it is
/// one of `key`'s.
fn read_in(d: &KeyDir, key: &str, v: &str) -> Result<Option<ObjectMeta>> {
    let name = format!("{v}.json");
    let m: Option<ObjectMeta> = match fsutil::read_json(d.fd.as_fd(), &name, &d.path.join(&name)) {
        Ok(m) => m,
        Err(Error::Corrupt { .. }) => None,
        Err(e) => return Err(e),
    };
    Ok(m.filter(|m| m.key == key && version_of(m) == v))
}

/// Every older version and delete marker of `key` (records), in no order.
fn older_in(d: &KeyDir, key: &str) -> Result<Vec<ObjectMeta>> {
    let mut out = Vec::new();
    for (name, _) in fsutil::read_names(d.fd.as_fd(), &d.path)? {
        let Some(v) = name.strip_suffix(".json").filter(|v| id::check(v)) else {
            continue;
        };
        if let Some(m) = read_in(d, key, v)? {
            out.push(m);
        }
    }
    Ok(out)
}

/// The file time of an older version (its data file's, or a delete
/// marker's record's).
fn time_in(d: &KeyDir, m: &ObjectMeta) -> SystemTime {
    let v = version_of(m);
    let name = if m.delete_marker {
        format!("{v}.json")
    } else {
        v.to_string()
    };
    rustix::fs::statat(&d.fd, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
        .map_or(UNIX_EPOCH, |st| super::mtime(&st))
}

fn remove_in(d: &KeyDir, m: &ObjectMeta) -> Result<()> {
    let v = version_of(m);
    for name in [v.to_string(), format!("{v}.json")] {
        match rustix::fs::unlinkat(&d.fd, name.as_str(), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => {}
            Err(e) => return Err(io("remove", d.path.join(&name), e)),
        }
    }
    Ok(())
}

/// Open an older version's bytes, checked to be the file its record
/// describes.
fn open_in(d: &KeyDir, m: ObjectMeta) -> Result<Option<(File, ObjectInfo)>> {
    let v = version_of(&m).to_string();
    crate::fault::stale("open-object", "open", || d.path.join(&v))?;
    let Some(f) = fsutil::open_opt(d.fd.as_fd(), &v, &d.path.join(&v))? else {
        return Ok(None);
    };
    let st = rustix::fs::fstat(&f).map_err(|e| io("stat", d.path.join(&v), e))?;
    if st.st_ino != m.ino || st.st_size as u64 != m.size {
        return Ok(None);
    }
    Ok(Some((
        f,
        ObjectInfo {
            meta: m,
            mtime: super::mtime(&st),
        },
    )))
}

/// The key's parent directory and file name (the key must exist as a
/// path: the caller found its file).
fn key_parent(s: &Store, bucket: &str, key: &str) -> Result<(OwnedFd, RelPath, String)> {
    let rel = Store::rel(bucket, key)?;
    let (parent, name) = rel.split().expect("a key is not the root");
    let name = name.to_string_lossy().into_owned();
    Ok((s.root.open_dir(&parent)?, rel, name))
}
