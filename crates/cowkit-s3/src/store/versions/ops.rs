//! What versioning and object lock do to a key: a write's commit, a
//! delete, reads and changes of one version, the listing of versions.

use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd};

use rustix::fs::AtFlags;
use rustix::io::Errno;

use super::*;
use crate::versions::listing::{self, Entry, Page};
use crate::versions::{check_id, lock, now_secs};

/// The key's current version, as a read finds it (`None`: no file).
fn current(s: &Store, bucket: &str, key: &str) -> Result<Option<ObjectMeta>> {
    Ok(s.stat_object(bucket, key)?.map(|i| i.meta))
}

/// Refuse when retention or a legal hold protects `m`.
fn check_unlocked(m: &ObjectMeta, bypass: bool) -> Result<()> {
    if lock::may_remove(
        m.retention.as_ref(),
        m.legal_hold == Some(true),
        bypass,
        now_secs(),
    ) {
        Ok(())
    } else {
        Err(VersionError::ObjectLocked { key: m.key.clone() }.into())
    }
}

/// Give the key's current file (`name` in `pfd`) the second name
/// `versions/<bucket>/<h>/<id>` and write its record there. The same
/// inode: nothing is copied, and the old version shares every block it
/// had. A file that is not the one its record describes (another tool
/// replaced it) is kept under its own inode anyway, with what a read
/// showed of it.
fn keep(s: &Store, bucket: &str, pfd: BorrowedFd<'_>, name: &str, cur: &ObjectMeta) -> Result<()> {
    let d = key_dir(s, bucket, &cur.key, true)?.expect("made");
    let v = version_of(cur).to_string();
    // A null version being kept replaces an older null one.
    remove_in(&d, cur)?;
    match rustix::fs::linkat(pfd, name, &d.fd, v.as_str(), AtFlags::empty()) {
        Ok(()) => {}
        // Nothing left to keep (a racing delete by another tool).
        Err(Errno::NOENT) => return Ok(()),
        Err(e) => return Err(io("link an old version", d.path.join(&v), e)),
    }
    let mut rec = cur.clone();
    rec.prev = None;
    let name = format!("{v}.json");
    s.write_json(d.fd.as_fd(), &name, &d.path.join(&name), &rec)
}

/// Write a delete marker `v` (its order `seq`) for `key`.
fn mark(s: &Store, bucket: &str, key: &str, v: Option<String>, seq: String) -> Result<()> {
    let d = key_dir(s, bucket, key, true)?.expect("made");
    let rec = ObjectMeta {
        key: key.to_string(),
        version_id: v,
        seq,
        delete_marker: true,
        ..Default::default()
    };
    remove_in(&d, &rec)?;
    let name = format!("{}.json", version_of(&rec));
    s.write_json(d.fd.as_fd(), &name, &d.path.join(&name), &rec)
}

/// Remove the older `null` version of `key`, if it has one (a write or
/// delete in a suspended bucket replaces it); refused when it is locked.
fn drop_null(s: &Store, bucket: &str, key: &str, bypass: bool) -> Result<()> {
    if let Some(d) = key_dir(s, bucket, key, false)? {
        if let Some(old) = read_in(&d, key, id::NULL)? {
            if !old.delete_marker {
                check_unlocked(&old, bypass)?;
            }
            remove_in(&d, &old)?;
        }
    }
    Ok(())
}

impl Store {
    /// Called by [`Store::commit_object`] under the key's lock, before the new
    /// record and rename: gives `meta` its version id, order and default
    /// retention, keeps the current version (`name` in `pfd`) where the
    /// bucket keeps versions, and refuses to replace a locked one where it
    /// does not.
    pub(crate) fn before_commit(
        &self,
        bucket: &str,
        key: &str,
        pfd: BorrowedFd<'_>,
        name: &str,
        meta: &mut ObjectMeta,
    ) -> Result<()> {
        let s = self;
        let st = bucket_state(s, bucket)?;
        if st.status == Status::Off && st.lock.is_none() {
            return Ok(());
        }
        if let Some(rule) = st.lock.as_ref().and_then(|l| l.rule) {
            if meta.retention.is_none() {
                meta.retention = Some(rule.at(now_secs()));
            }
        }
        let bypass = meta.bypass_governance;
        let cur = current(s, bucket, key)?;
        match st.status {
            Status::Off => {
                if let Some(cur) = &cur {
                    check_unlocked(cur, bypass)?;
                }
            }
            Status::Enabled => {
                let v = id::new_id();
                meta.version_id = Some(v.clone());
                meta.seq = v;
                if let Some(cur) = &cur {
                    keep(s, bucket, pfd, name, cur)?;
                }
            }
            Status::Suspended => {
                meta.version_id = None;
                meta.seq = id::new_id();
                match &cur {
                    Some(c) if c.version_id.is_some() => keep(s, bucket, pfd, name, c)?,
                    Some(c) => check_unlocked(c, bypass)?,
                    None => {}
                }
                drop_null(s, bucket, key, bypass)?;
            }
        }
        Ok(())
    }
}

/// What a delete did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Deleted {
    /// The version removed, or the delete marker made.
    pub version_id: Option<String>,
    /// A delete marker was made or removed.
    pub delete_marker: bool,
}

/// DeleteObject (with or without a version id) in any bucket; `bypass`:
/// the caller asked to bypass governance retention and may.
pub fn delete(
    s: &Store,
    bucket: &str,
    key: &str,
    version: Option<&str>,
    bypass: bool,
) -> Result<Deleted> {
    let st = bucket_state(s, bucket)?;
    if let Some(v) = version {
        check_id(v)?;
    }
    // A directory object has no versions (a directory cannot have a
    // second name): it goes as in an unversioned bucket.
    let plain = st.status == Status::Off && st.lock.is_none();
    if crate::names::is_dir_key(key) || (plain && version.is_none_or(|v| v == id::NULL)) {
        s.delete_object(bucket, key)?;
        return Ok(Deleted {
            version_id: version.map(str::to_string),
            delete_marker: false,
        });
    }
    Store::rel(bucket, key)?;
    let _held = s.lock_object(bucket, key)?;
    let cur = current(s, bucket, key)?;
    match version {
        None => delete_current(s, bucket, key, st.status, cur, bypass),
        Some(v) => delete_version(s, bucket, key, v, cur, bypass),
    }
}

fn delete_current(
    s: &Store,
    bucket: &str,
    key: &str,
    status: Status,
    cur: Option<ObjectMeta>,
    bypass: bool,
) -> Result<Deleted> {
    if status == Status::Off {
        if let Some(c) = &cur {
            check_unlocked(c, bypass)?;
        }
        s.delete_object_locked(bucket, key)?;
        return Ok(Deleted::default());
    }
    if let Some(c) = &cur {
        if status == Status::Enabled || c.version_id.is_some() {
            let (pfd, _, name) = key_parent(s, bucket, key)?;
            keep(s, bucket, pfd.as_fd(), &name, c)?;
        } else {
            check_unlocked(c, bypass)?;
        }
        s.delete_object_locked(bucket, key)?;
    }
    let (v, seq) = if status == Status::Enabled {
        let v = id::new_id();
        (Some(v.clone()), v)
    } else {
        drop_null(s, bucket, key, bypass)?;
        (None, id::new_id())
    };
    mark(s, bucket, key, v.clone(), seq)?;
    Ok(Deleted {
        version_id: Some(v.unwrap_or_else(|| id::NULL.to_string())),
        delete_marker: true,
    })
}

fn delete_version(
    s: &Store,
    bucket: &str,
    key: &str,
    v: &str,
    cur: Option<ObjectMeta>,
    bypass: bool,
) -> Result<Deleted> {
    let done = |marker| {
        Ok(Deleted {
            version_id: Some(v.to_string()),
            delete_marker: marker,
        })
    };
    if let Some(c) = cur.as_ref().filter(|c| version_of(c) == v) {
        check_unlocked(c, bypass)?;
        s.delete_object_locked(bucket, key)?;
        promote(s, bucket, key)?;
        return done(false);
    }
    let Some(d) = key_dir(s, bucket, key, false)? else {
        return done(false);
    };
    let Some(old) = read_in(&d, key, v)? else {
        return done(false);
    };
    if !old.delete_marker {
        check_unlocked(&old, bypass)?;
    }
    remove_in(&d, &old)?;
    if cur.is_none() {
        promote(s, bucket, key)?;
    }
    done(old.delete_marker)
}

/// After the current version went: the newest older version, when it is
/// not a delete marker, becomes the key's file again (by rename).
fn promote(s: &Store, bucket: &str, key: &str) -> Result<()> {
    let Some(d) = key_dir(s, bucket, key, false)? else {
        return Ok(());
    };
    let mut older: Vec<Entry<ObjectMeta>> = older_in(&d, key)?
        .into_iter()
        .map(|m| Entry {
            version: version_of(&m).to_string(),
            seq: m.seq.clone(),
            item: m,
        })
        .collect();
    listing::newest_first(&mut older);
    let Some(newest) = older.into_iter().next().map(|e| e.item) else {
        return Ok(());
    };
    if newest.delete_marker {
        return Ok(());
    }
    let rel = Store::rel(bucket, key)?;
    let (parent, name) = rel.split().expect("a key is not the root");
    let pfd = s.root.create_dirs(&parent, 0o755)?;
    s.write_record(bucket, &newest)?;
    let v = version_of(&newest).to_string();
    rustix::fs::renameat(&d.fd, v.as_str(), &pfd, name)
        .map_err(|e| io("rename an old version into place", s.root.display(&rel), e))?;
    let _ = rustix::fs::unlinkat(&d.fd, format!("{v}.json").as_str(), AtFlags::empty());
    Ok(())
}

/// Open version `v` of `key` (GET, HEAD, a copy source): the current file
/// when it is that version, else the older one; opened again by name when
/// another host replaced the key meanwhile (see `stale`). A delete marker
/// is refused as S3 refuses it (405).
pub fn open_version(s: &Store, bucket: &str, key: &str, v: &str) -> Result<(File, ObjectInfo)> {
    check_id(v)?;
    crate::stale::reopen(
        || format!("{bucket}/{key}?versionId={v}"),
        || open_version_once(s, bucket, key, v),
    )
}

/// One attempt of [`open_version`].
pub(crate) fn open_version_once(
    s: &Store,
    bucket: &str,
    key: &str,
    v: &str,
) -> Result<crate::stale::Try<(File, ObjectInfo)>> {
    use crate::stale::Try;
    check_id(v)?;
    let (again, current) = match s.open_object_once(bucket, key) {
        Ok(Try::Done(r)) => (false, Ok(r)),
        Ok(Try::Again(r)) => (true, r),
        Err(e) => (false, Err(e)),
    };
    match current {
        Ok((f, info)) if version_of(&info.meta) == v => {
            return Ok(if again {
                Try::Again(Ok((f, info)))
            } else {
                Try::Done((f, info))
            })
        }
        Ok(_) | Err(Error::NoSuchKey { .. }) => {}
        Err(e) => return Err(e),
    }
    let older = older_version(s, bucket, key, v);
    Ok(match older {
        // Not found while the current file was being replaced: it may be
        // the version being moved out of the key's name.
        Err(e) if again && !crate::stale::is_stale(&e) => Try::Again(Err(e)),
        r => Try::Done(r?),
    })
}

/// Version `v` among the older versions of `key`.
fn older_version(s: &Store, bucket: &str, key: &str, v: &str) -> Result<(File, ObjectInfo)> {
    let missing = || -> Error {
        if v == id::NULL {
            Error::NoSuchKey {
                bucket: bucket.to_string(),
                key: key.to_string(),
            }
        } else {
            VersionError::NoSuchVersion {
                key: key.to_string(),
                version: v.to_string(),
            }
            .into()
        }
    };
    let Some(d) = key_dir(s, bucket, key, false)? else {
        return Err(missing());
    };
    let Some(m) = read_in(&d, key, v)? else {
        return Err(missing());
    };
    if m.delete_marker {
        return Err(VersionError::DeleteMarker {
            version: v.to_string(),
            by_id: true,
        }
        .into());
    }
    open_in(&d, m)?.ok_or_else(missing)
}

/// A key without a file: when its newest version is a delete marker, the
/// error S3 gives for a GET or HEAD (404 with `x-amz-delete-marker`);
/// else `e` (the `NoSuchKey` the read found).
pub fn missing_key(s: &Store, bucket: &str, key: &str, e: Error) -> Error {
    let newest = (|| -> Result<Option<ObjectMeta>> {
        let Some(d) = key_dir(s, bucket, key, false)? else {
            return Ok(None);
        };
        Ok(older_in(&d, key)?
            .into_iter()
            .max_by(|a, b| a.seq.cmp(&b.seq)))
    })();
    match newest {
        Ok(Some(m)) if m.delete_marker => VersionError::DeleteMarker {
            version: version_of(&m).to_string(),
            by_id: false,
        }
        .into(),
        _ => e,
    }
}

/// Change version `v` (or the current one) of `key` with `f`, under the
/// key's lock: retention and legal hold. A delete marker has neither
/// (405).
pub fn update(
    s: &Store,
    bucket: &str,
    key: &str,
    v: Option<&str>,
    f: impl FnOnce(&mut ObjectMeta) -> Result<()>,
) -> Result<()> {
    if let Some(v) = v {
        check_id(v)?;
    }
    let _held = s.lock_object(bucket, key)?;
    let cur = s.stat_object(bucket, key)?;
    if let Some(info) = cur.filter(|i| v.is_none_or(|v| version_of(&i.meta) == v)) {
        let mut m = info.meta;
        f(&mut m)?;
        m.prev = None;
        return s.write_record(bucket, &m);
    }
    let Some(v) = v else {
        return Err(missing_key(
            s,
            bucket,
            key,
            Error::NoSuchKey {
                bucket: bucket.to_string(),
                key: key.to_string(),
            },
        ));
    };
    let (_, info) = open_version(s, bucket, key, v)?;
    let mut m = info.meta;
    f(&mut m)?;
    let d = key_dir(s, bucket, key, false)?.expect("the version was found there");
    let name = format!("{v}.json");
    s.write_json(d.fd.as_fd(), &name, &d.path.join(&name), &m)
}

/// Read version `v` (or the current one) of `key`: its record.
pub fn read(s: &Store, bucket: &str, key: &str, v: Option<&str>) -> Result<ObjectMeta> {
    match v {
        Some(v) => Ok(open_version(s, bucket, key, v)?.1.meta),
        None => match s.open_object(bucket, key) {
            Ok((_, i)) => Ok(i.meta),
            Err(e @ Error::NoSuchKey { .. }) => Err(missing_key(s, bucket, key, e)),
            Err(e) => Err(e),
        },
    }
}

/// A version as listed: its record and time.
#[derive(Debug)]
pub struct Listed {
    /// The record.
    pub meta: ObjectMeta,
    /// Its time.
    pub mtime: std::time::SystemTime,
}

/// One page of ListObjectVersions.
pub fn list(s: &Store, bucket: &str, q: &listing::Query) -> Result<Page<Listed>> {
    let mut keys: std::collections::BTreeMap<String, Vec<Entry<Listed>>> = Default::default();
    let entry = |meta: ObjectMeta, mtime| Entry {
        version: version_of(&meta).to_string(),
        seq: meta.seq.clone(),
        item: Listed { meta, mtime },
    };
    for key in s.keys(bucket, &q.prefix)? {
        if let Some(info) = s.stat_object(bucket, &key)? {
            keys.entry(key)
                .or_default()
                .push(entry(info.meta, info.mtime));
        }
    }
    if let Some((b, bp)) = bucket_versions(s, bucket, false)? {
        for (h, _) in fsutil::read_names(b.as_fd(), &bp)? {
            let Some(fd) = fsutil::open_dir_opt(b.as_fd(), h.as_str(), &bp.join(&h))? else {
                continue;
            };
            let d = KeyDir {
                fd,
                path: bp.join(&h),
            };
            for (name, _) in fsutil::read_names(d.fd.as_fd(), &d.path)? {
                let Some(v) = name.strip_suffix(".json").filter(|v| id::check(v)) else {
                    continue;
                };
                let name = format!("{v}.json");
                let m: Option<ObjectMeta> =
                    fsutil::read_json(d.fd.as_fd(), &name, &d.path.join(&name)).unwrap_or(None);
                let Some(m) = m.filter(|m| {
                    m.key.starts_with(&q.prefix) && version_of(m) == v && key_hash(&m.key) == h
                }) else {
                    continue;
                };
                let t = time_in(&d, &m);
                keys.entry(m.key.clone()).or_default().push(entry(m, t));
            }
        }
    }
    let keys = keys
        .into_iter()
        .map(|(k, mut v)| {
            listing::newest_first(&mut v);
            (k, v)
        })
        .collect();
    Ok(listing::page(keys, q))
}

/// Whether the bucket holds older versions or delete markers (it cannot
/// be deleted then, as on S3).
pub fn has_versions(s: &Store, bucket: &str) -> Result<bool> {
    let Some((b, bp)) = bucket_versions(s, bucket, false)? else {
        return Ok(false);
    };
    for (h, _) in fsutil::read_names(b.as_fd(), &bp)? {
        let p = bp.join(&h);
        if let Some(fd) = fsutil::open_dir_opt(b.as_fd(), h.as_str(), &p)? {
            if !fsutil::read_names(fd.as_fd(), &p)?.is_empty() {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Remove the bucket's (empty) versions directories, after the bucket.
pub fn forget_bucket(s: &Store, bucket: &str) {
    if let Ok(Some((b, bp))) = bucket_versions(s, bucket, false) {
        if let Ok(names) = fsutil::read_names(b.as_fd(), &bp) {
            for (h, _) in names {
                let _ = fsutil::remove_flat_dir(b.as_fd(), &h, &bp.join(&h));
            }
        }
        let vp = s.sys_path().join(VERSIONS);
        if let Ok(Some(v)) = fsutil::open_dir_opt(s.sys.as_fd(), VERSIONS, &vp) {
            let _ = rustix::fs::unlinkat(&v, bucket, AtFlags::REMOVEDIR);
        }
    }
}
