//! The bucket-level half of [`Store`]: listing, creating (with tags and an
//! owner), recording, the owner, tags, and deleting buckets.

use std::os::fd::AsFd;

use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;

use super::*;

impl Store {
    /// All buckets, by name.
    pub fn list_buckets(&self) -> Result<Vec<BucketInfo>> {
        let mut out = Vec::new();
        for (name, ft) in fsutil::read_names(self.root.fd(), &self.dir)? {
            if names::check_bucket(&name).is_err()
                || !(ft == FileType::Directory || ft == FileType::Unknown)
            {
                continue;
            }
            let Ok(st) =
                rustix::fs::statat(self.root.fd(), name.as_str(), AtFlags::SYMLINK_NOFOLLOW)
            else {
                continue;
            };
            if FileType::from_raw_mode(st.st_mode) != FileType::Directory {
                continue;
            }
            let rec = self.bucket_json(&name).unwrap_or_default();
            // The record's time (kept when the owner changes), else its
            // file's, else the directory's.
            let created = match rec.created {
                Some(s) => SystemTime::UNIX_EPOCH + Duration::from_secs(s),
                None => rustix::fs::statat(
                    &self.meta,
                    format!("{name}/bucket.json").as_str(),
                    AtFlags::empty(),
                )
                .map_or(mtime(&st), |m| mtime(&m)),
            };
            let owner = rec.owner;
            out.push(BucketInfo {
                name,
                created,
                owner,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Create the bucket.
    pub fn create_bucket(&self, bucket: &str) -> Result<()> {
        self.create_bucket_with_tags(bucket, Vec::new())
    }

    /// Create the bucket with tags (checked by the caller).
    pub fn create_bucket_with_tags(
        &self,
        bucket: &str,
        tags: Vec<crate::tagging::Tag>,
    ) -> Result<()> {
        self.create_bucket_owned(bucket, tags, None)
    }

    /// Create the bucket with tags (checked by the caller), owned by the
    /// account `owner` (`None`: the server's own key pair).
    pub fn create_bucket_owned(
        &self,
        bucket: &str,
        tags: Vec<crate::tagging::Tag>,
        owner: Option<&str>,
    ) -> Result<()> {
        names::check_bucket(bucket)?;
        let path = self.dir.join(bucket);
        match rustix::fs::mkdirat(
            self.root.fd(),
            bucket,
            rustix::fs::Mode::from_raw_mode(0o755),
        ) {
            Ok(()) => {}
            Err(Errno::EXIST) => {
                return Err(Error::BucketExists {
                    bucket: bucket.to_string(),
                })
            }
            Err(e) => return Err(io("create directory", path, e)),
        }
        let m = self.bucket_meta_dir(bucket)?;
        let created = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        self.write_json(
            m.as_fd(),
            "bucket.json",
            &self.meta_path(bucket).join("bucket.json"),
            &serde_json::json!({ "name": bucket, "created": created, "owner": owner }),
        )?;
        // Tags a PutBucketTagging racing with the delete of an earlier
        // bucket of this name may have left are not this bucket's.
        self.set_bucket_tags_in(m.as_fd(), bucket, tags)?;
        if self.opts.fsync {
            fsutil::sync_dir(self.root.fd(), &self.dir)?;
        }
        Ok(())
    }

    /// Whether the bucket exists.
    pub fn head_bucket(&self, bucket: &str) -> Result<()> {
        self.bucket_dir(bucket).map(drop)
    }

    /// `bucket.json` as far as the store reads it (empty when absent).
    fn bucket_json(&self, bucket: &str) -> Result<BucketRecord> {
        Ok(fsutil::read_json(
            self.meta.as_fd(),
            &format!("{bucket}/bucket.json"),
            &self.meta_path(bucket).join("bucket.json"),
        )?
        .unwrap_or_default())
    }

    /// The account owning the bucket ([`Error::NoSuchBucket`] when there
    /// is no such bucket; `None`: the server's own key pair).
    pub fn bucket_owner(&self, bucket: &str) -> Result<Option<String>> {
        self.bucket_dir(bucket)?;
        Ok(self.bucket_json(bucket)?.owner)
    }

    /// A small record of the bucket's (`meta/<bucket>/<name>`: its ACL,
    /// policy, CORS or website configuration), read whole if it is at most
    /// `max` bytes (a longer one is [`Error::Corrupt`]); `None` when absent.
    pub(crate) fn bucket_record<T: serde::de::DeserializeOwned>(
        &self,
        bucket: &str,
        name: &str,
        max: u64,
    ) -> Result<Option<T>> {
        use std::io::Read;
        let path = self.meta_path(bucket).join(name);
        let Some(f) = fsutil::open_opt(self.meta.as_fd(), &format!("{bucket}/{name}"), &path)?
        else {
            return Ok(None);
        };
        let mut buf = Vec::new();
        f.take(max + 1)
            .read_to_end(&mut buf)
            .map_err(|e| io("read", &path, e))?;
        if buf.len() as u64 > max {
            return Err(Error::Corrupt {
                path,
                why: format!("longer than {max} bytes"),
            });
        }
        serde_json::from_slice(&buf)
            .map(Some)
            .map_err(|e| Error::Corrupt {
                path,
                why: e.to_string(),
            })
    }

    /// Replace the bucket's record `name` by rename (`None`: remove it);
    /// the bucket must exist.
    pub(crate) fn set_bucket_record<T: Serialize>(
        &self,
        bucket: &str,
        name: &str,
        value: Option<&T>,
    ) -> Result<()> {
        self.bucket_dir(bucket)?;
        let m = self.bucket_meta_dir(bucket)?;
        let path = self.meta_path(bucket).join(name);
        if let Some(v) = value {
            return self.write_json(m.as_fd(), name, &path, v);
        }
        match rustix::fs::unlinkat(&m, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(io("remove", path, e)),
        }
    }

    /// Give the bucket to the account `owner` (`bucket.json` replaced by
    /// rename, its other fields kept; under the bucket's fleet lock, so two
    /// gateways changing it do not lose each other's fields).
    pub fn set_bucket_owner(&self, bucket: &str, owner: &str) -> Result<()> {
        self.bucket_dir(bucket)?;
        let _held = self.lock_object(bucket, "")?;
        let path = self.meta_path(bucket).join("bucket.json");
        let mut rec: serde_json::Map<String, serde_json::Value> =
            fsutil::read_json(self.meta.as_fd(), &format!("{bucket}/bucket.json"), &path)?
                .unwrap_or_default();
        rec.insert("name".into(), bucket.into());
        rec.insert("owner".into(), owner.into());
        let m = self.bucket_meta_dir(bucket)?;
        self.write_json(m.as_fd(), "bucket.json", &path, &rec)
    }

    /// Delete the bucket, which must hold no object and no upload.
    pub fn delete_bucket(&self, bucket: &str) -> Result<()> {
        let fd = self.bucket_dir(bucket)?;
        let not_empty = || Error::BucketNotEmpty {
            bucket: bucket.to_string(),
        };
        if !fsutil::read_names(fd.as_fd(), &self.dir.join(bucket))?.is_empty() {
            return Err(not_empty());
        }
        match rustix::fs::unlinkat(self.root.fd(), bucket, AtFlags::REMOVEDIR) {
            Ok(()) => {}
            Err(Errno::NOTEMPTY | Errno::EXIST) => return Err(not_empty()),
            Err(e) => return Err(io("remove directory", self.dir.join(bucket), e)),
        }
        // As S3 does, uploads still in progress go with the bucket (they
        // are not objects); a complete racing with this finds its bucket
        // gone and fails.
        for u in self.list_uploads(bucket)? {
            let _ = self.remove_upload(&u.id);
        }
        self.remove_meta_tree(bucket);
        Ok(())
    }

    /// The bucket's tags (`None`: it has none, S3's `NoSuchTagSet`).
    pub fn bucket_tags(&self, bucket: &str) -> Result<Option<Vec<crate::tagging::Tag>>> {
        self.bucket_dir(bucket)?;
        fsutil::read_json(
            self.meta.as_fd(),
            &format!("{bucket}/{BUCKET_TAGS}"),
            &self.meta_path(bucket).join(BUCKET_TAGS),
        )
    }

    /// Replace the bucket's tags (an empty set removes them); the record is
    /// replaced by rename, so readers in every gateway see the old set or
    /// the new one.
    pub fn set_bucket_tags(&self, bucket: &str, tags: Vec<crate::tagging::Tag>) -> Result<()> {
        self.bucket_dir(bucket)?;
        let m = self.bucket_meta_dir(bucket)?;
        self.set_bucket_tags_in(m.as_fd(), bucket, tags)
    }

    fn set_bucket_tags_in(
        &self,
        m: BorrowedFd<'_>,
        bucket: &str,
        tags: Vec<crate::tagging::Tag>,
    ) -> Result<()> {
        let path = self.meta_path(bucket).join(BUCKET_TAGS);
        if !tags.is_empty() {
            return self.write_json(m, BUCKET_TAGS, &path, &tags);
        }
        match rustix::fs::unlinkat(m, BUCKET_TAGS, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(io("remove", path, e)),
        }
    }

    fn remove_meta_tree(&self, bucket: &str) {
        let p = self.meta_path(bucket);
        if let Ok(Some(fd)) = fsutil::open_dir_opt(self.meta.as_fd(), bucket, &p) {
            if let Ok(names) = fsutil::read_names(fd.as_fd(), &p) {
                for (n, ft) in names {
                    if ft == FileType::Directory {
                        let _ = fsutil::remove_flat_dir(fd.as_fd(), &n, &p.join(&n));
                    } else {
                        let _ = rustix::fs::unlinkat(&fd, n.as_str(), AtFlags::empty());
                    }
                }
            }
        }
        let _ = rustix::fs::unlinkat(&self.meta, bucket, AtFlags::REMOVEDIR);
    }
}
