//! The store's side of [`crate::multipart`]: uploads and their parts,
//! listed, committed and aborted ([`complete`]: the complete).

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use cowkit_fs::{Bytes, Chain, Copier, Handle, Method};
use md5::Digest;
use rustix::fs::AtFlags;

use super::{ObjectMeta, Store};
use crate::checksum::{Algorithm, Checksum, Hasher, Type};
use crate::error::{io, Error, Result};
use crate::fsutil::{self, NewFile};
use crate::multipart::*;
use crate::names;

mod complete;

impl Store {
    /// The lock of upload `id` in `bucket`, once the bucket is found (its
    /// absence is named first, as S3 does) and `id` has an upload id's
    /// shape.
    fn lock_known_upload(&self, id: &str, bucket: &str) -> Result<crate::fleet::Held> {
        self.bucket_dir(bucket)?;
        if !names::is_upload_id(id) {
            return Err(Error::NoSuchUpload {
                upload_id: id.to_string(),
            });
        }
        self.lock_upload(id)
    }

    fn upload_path(&self, id: &str) -> PathBuf {
        self.sys_path().join("uploads").join(id)
    }

    /// Start an upload; returns its id.
    pub fn create_upload(
        &self,
        bucket: &str,
        key: &str,
        content_type: Option<String>,
        metadata: BTreeMap<String, String>,
    ) -> Result<String> {
        self.create_upload_with(
            bucket,
            key,
            NewUpload {
                content_type,
                metadata,
                ..NewUpload::default()
            },
        )
    }

    /// Start an upload whose object gets `new`'s attributes (and whose
    /// parts carry its checksum algorithm); returns its id.
    pub fn create_upload_with(&self, bucket: &str, key: &str, new: NewUpload) -> Result<String> {
        names::check_key(key)?;
        self.bucket_dir(bucket)?;
        if names::is_dir_key(key) {
            return Err(Error::DirectoryObjectContainsData);
        }
        let id = fsutil::rand_hex(16);
        let p = self.upload_path(&id);
        // Made complete in this gateway's tmp/, then renamed into uploads/:
        // no upload directory is ever seen without its upload.json.
        let staged = self.tmp_path().join(&id);
        let dir = fsutil::mkdir_open(self.tmp.as_fd(), &id, &staged)?;
        let rec = UploadRecord {
            bucket: bucket.to_string(),
            key: key.to_string(),
            content_type: new.content_type,
            metadata: new.metadata,
            initiated: now_secs(),
            initiated_nanos: SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0),
            checksum: new.checksum,
            headers: new.headers,
            tags: new.tags,
            retention: new.retention,
            legal_hold: new.legal_hold,
            initiator: new.initiator,
        };
        self.write_json(dir.as_fd(), "upload.json", &p.join("upload.json"), &rec)?;
        if self.opts.fsync {
            fsutil::sync_dir(&dir, &staged)?;
        }
        crate::fault::point("create-staged");
        rustix::fs::renameat(&self.tmp, id.as_str(), &self.uploads, id.as_str())
            .map_err(|e| io("rename into place", &p, e))?;
        if self.opts.fsync {
            fsutil::sync_dir(&self.uploads, &self.sys_path().join("uploads"))?;
        }
        Ok(id)
    }

    /// The upload's directory and record; [`Error::NoSuchUpload`] unless it
    /// exists for this bucket and key.
    fn upload(
        &self,
        id: &str,
        bucket: &str,
        key: &str,
    ) -> Result<(OwnedFd, UploadRecord, PathBuf)> {
        let none = || Error::NoSuchUpload {
            upload_id: id.to_string(),
        };
        self.bucket_dir(bucket)?;
        if !names::is_upload_id(id) {
            return Err(none());
        }
        let p = self.upload_path(id);
        let dir = fsutil::open_dir_opt(self.uploads.as_fd(), id, &p)?.ok_or_else(none)?;
        let rec: UploadRecord =
            fsutil::read_json(dir.as_fd(), "upload.json", &p.join("upload.json"))?
                .ok_or_else(none)?;
        if rec.bucket != bucket || rec.key != key {
            return Err(none());
        }
        Ok((dir, rec, p))
    }

    fn completed(&self, dir: &OwnedFd, p: &std::path::Path) -> Result<Option<CompletedRecord>> {
        fsutil::read_json(dir.as_fd(), "completed.json", &p.join("completed.json"))
    }

    /// An open upload (not completed).
    fn open_upload(
        &self,
        id: &str,
        bucket: &str,
        key: &str,
    ) -> Result<(OwnedFd, UploadRecord, PathBuf)> {
        let (dir, rec, p) = self.upload(id, bucket, key)?;
        if self.completed(&dir, &p)?.is_some() {
            return Err(Error::NoSuchUpload {
                upload_id: id.to_string(),
            });
        }
        Ok((dir, rec, p))
    }

    /// The answer a complete of this upload recorded, if it finished.
    pub fn completed_record(
        &self,
        id: &str,
        bucket: &str,
        key: &str,
    ) -> Result<Option<CompletedRecord>> {
        let (dir, _, p) = self.upload(id, bucket, key)?;
        self.completed(&dir, &p)
    }

    /// The record of an upload in progress.
    pub fn upload_record(&self, id: &str, bucket: &str, key: &str) -> Result<UploadRecord> {
        Ok(self.open_upload(id, bucket, key)?.1)
    }

    fn check_part_number(n: i32) -> Result<()> {
        if !(1..=MAX_PARTS).contains(&n) {
            return Err(Error::InvalidArgument(
                "Part number must be an integer between 1 and 10000, inclusive.".into(),
            ));
        }
        Ok(())
    }

    /// A new unnamed file for a part's data (in this gateway's `tmp/`;
    /// [`Store::commit_part`] renames it into the upload's directory).
    pub fn new_part_file(&self, id: &str, bucket: &str, key: &str, number: i32) -> Result<NewFile> {
        Self::check_part_number(number)?;
        self.open_upload(id, bucket, key)?;
        Ok(NewFile::anonymous(
            self.tmp.as_fd(),
            &self.tmp_path(),
            0o644,
        )?)
    }

    /// Give `file` (from [`Store::new_part_file`]) its place as part
    /// `number`, replacing an earlier upload of that part.
    pub fn commit_part(
        &self,
        id: &str,
        bucket: &str,
        key: &str,
        number: i32,
        file: NewFile,
        sums: PartSums,
    ) -> Result<PartRecord> {
        Self::check_part_number(number)?;
        // Record and rename are one change; a complete or an abort waits.
        let _held = self.lock_known_upload(id, bucket)?;
        let (dir, _, p) = self.open_upload(id, bucket, key)?;
        let st = rustix::fs::fstat(file.file()).map_err(|e| io("stat", file.path(), e))?;
        if self.opts.fsync {
            file.sync()?;
        }
        let (_, tmp) = file.into_named(self.tmp.as_fd())?;
        let rec = PartRecord {
            number,
            size: st.st_size as u64,
            md5: sums.md5,
            ino: st.st_ino,
            modified: now_secs(),
            checksum: sums.checksum,
            crc64nvme: sums.crc64nvme,
        };
        let name = part_name(number);
        let rec_name = format!("{name}.json");
        let done = self
            .write_json(dir.as_fd(), &rec_name, &p.join(&rec_name), &rec)
            .and_then(|()| {
                crate::fault::point("part-recorded");
                Ok(cowkit_fs::dir::replace_at(
                    &self.tmp,
                    &tmp,
                    &dir,
                    &name,
                    &p.join(&name),
                )?)
            });
        if done.is_err() {
            let _ = rustix::fs::unlinkat(&self.tmp, tmp.as_str(), AtFlags::empty());
        }
        done?;
        if self.opts.fsync {
            fsutil::sync_dir(&dir, &p)?;
        }
        Ok(rec)
    }

    /// Make part `number` a copy of `len` bytes of an object from `start`,
    /// cloned where the source offset is block-aligned. The part's MD5 is
    /// computed by reading the source range (no data is written for it).
    #[expect(
        clippy::too_many_arguments,
        reason = "a part is its upload, bucket, key, number, file and checksums: each call names them all"
    )]
    pub fn copy_part(
        &self,
        id: &str,
        bucket: &str,
        key: &str,
        number: i32,
        src_bucket: &str,
        src_key: &str,
        src_version: Option<&str>,
        range: Option<(u64, u64)>,
    ) -> Result<(PartRecord, cowkit_fs::Copied)> {
        let (src, info) = match src_version {
            Some(v) => crate::store::versions::open_version(self, src_bucket, src_key, v)?,
            None => self.open_object(src_bucket, src_key)?,
        };
        let size = info.meta.size;
        let (start, end) = match range {
            None => (0, size),
            Some((a, b)) if a <= b && b < size => (a, b + 1),
            Some((a, b)) => {
                log::debug!("copy range bytes={a}-{b} of {size} bytes");
                return Err(Error::InvalidArgument(format!(
                    "Range specified is not valid for source object of size: {size}"
                )));
            }
        };
        let algo = self
            .upload_record(id, bucket, key)?
            .checksum
            .map_or(Algorithm::Crc64Nvme, |c| c.0);
        let mut sum = Some(Hasher::new(algo));
        let dst = self.new_part_file(id, bucket, key, number)?;
        let src_path = self.dir().join(src_bucket).join(src_key);
        let mut copier = Copier::new(Chain::AUTO);
        let copied = copier.copy_range(
            Handle::new(&src, &src_path),
            start,
            Handle::new(dst.file(), &dst.path()),
            0,
            end - start,
        )?;
        let mut h = md5::Md5::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut off = start;
        while off < end {
            let want = ((end - off) as usize).min(buf.len());
            let n = rustix::io::pread(&src, &mut buf[..want], off)
                .map_err(|e| io("read", &src_path, e))?;
            if n == 0 {
                return Err(cowkit_fs::Error::UnexpectedEof {
                    path: src_path,
                    at: off,
                    wanted: end,
                }
                .into());
            }
            h.update(&buf[..n]);
            if let Some(s) = &mut sum {
                s.update(&buf[..n]);
            }
            off += n as u64;
        }
        let checksum = sum.map(|s| Checksum {
            algorithm: s.algorithm(),
            value: crate::checksum::b64(&s.finish()),
            kind: Type::FullObject,
        });
        let sums = PartSums {
            md5: hex::encode(h.finalize()),
            checksum,
            crc64nvme: None,
        };
        let rec = self.commit_part(id, bucket, key, number, dst, sums)?;
        Ok((rec, copied))
    }

    /// The parts uploaded so far, by number.
    pub fn list_parts(&self, id: &str, bucket: &str, key: &str) -> Result<Vec<PartRecord>> {
        let (dir, _, p) = self.open_upload(id, bucket, key)?;
        self.part_records(&dir, &p)
    }

    fn part_records(&self, dir: &OwnedFd, p: &std::path::Path) -> Result<Vec<PartRecord>> {
        let mut out = Vec::new();
        for (name, _) in fsutil::read_names(dir.as_fd(), p)? {
            if name.len() == 11 && name.starts_with('p') && name.ends_with(".json") {
                if let Some(r) =
                    fsutil::read_json::<PartRecord>(dir.as_fd(), &name, &p.join(&name))?
                {
                    out.push(r);
                }
            }
        }
        out.sort_by_key(|r| r.number);
        Ok(out)
    }

    /// Abort the upload: its parts are removed. Waits for a complete of
    /// it in progress (anywhere), and is then `NoSuchUpload`.
    pub fn abort_upload(&self, id: &str, bucket: &str, key: &str) -> Result<()> {
        // A missing bucket is named before a malformed id, as S3 does.
        let _held = self.lock_known_upload(id, bucket)?;
        self.open_upload(id, bucket, key)?;
        self.discard_upload(id)
    }

    /// Remove an upload's directory, whatever state it is in.
    pub(crate) fn remove_upload(&self, id: &str) -> Result<()> {
        let _held = self.lock_upload(id)?;
        self.discard_upload(id)
    }

    /// The uploads of `bucket`, sorted by key then start.
    pub fn list_uploads(&self, bucket: &str) -> Result<Vec<UploadInfo>> {
        let up = self.sys_path().join("uploads");
        let mut out = Vec::new();
        for (id, _) in fsutil::read_names(self.uploads.as_fd(), &up)? {
            if !names::is_upload_id(&id) {
                continue;
            }
            let p = up.join(&id);
            let Some(dir) = fsutil::open_dir_opt(self.uploads.as_fd(), &id, &p)? else {
                continue;
            };
            let Ok(Some(rec)) = fsutil::read_json::<UploadRecord>(dir.as_fd(), "upload.json", &p)
            else {
                continue;
            };
            if rec.bucket != bucket {
                continue;
            }
            let completed = crate::fsutil::open_opt(dir.as_fd(), "completed.json", &p)?.is_some();
            out.push(UploadInfo {
                id,
                key: rec.key,
                initiated: SystemTime::UNIX_EPOCH
                    + Duration::new(rec.initiated, rec.initiated_nanos),
                completed,
                checksum: rec.checksum,
            });
        }
        out.sort_by(|a, b| {
            (a.key.as_str(), a.initiated, &a.id).cmp(&(b.key.as_str(), b.initiated, &b.id))
        });
        Ok(out)
    }
}
