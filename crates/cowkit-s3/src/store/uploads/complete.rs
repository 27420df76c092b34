//! The complete: a part list checked against the upload's records,
//! the parts cloned into one new file, committed, and recorded for retries.

use super::*;
use crate::text::bare_etag;

impl Store {
    /// Validate a complete. Takes the upload's lock (waiting for a part
    /// commit, an abort or another complete of it, in any gateway on this
    /// root); the [`Plan`] holds it until [`Store::complete_assemble`]
    /// ends. A retry of a complete that succeeded gets [`Prepared::Done`].
    pub fn complete_prepare(
        &self,
        id: &str,
        bucket: &str,
        key: &str,
        requested: Vec<(i32, String)>,
    ) -> Result<Prepared> {
        self.complete_prepare_with(id, bucket, key, requested, &CompleteChecks::default())
    }

    /// [`Store::complete_prepare`] with the request's checksums and size
    /// checked against the upload's.
    pub fn complete_prepare_with(
        &self,
        id: &str,
        bucket: &str,
        key: &str,
        requested: Vec<(i32, String)>,
        checks: &CompleteChecks,
    ) -> Result<Prepared> {
        let lock = self.lock_known_upload(id, bucket)?;
        let (dir, upload, p) = self.upload(id, bucket, key)?;
        let requested: Vec<(i32, String)> = requested
            .into_iter()
            .map(|(n, e)| (n, bare_etag(&e).to_string()))
            .collect();
        if let Some(done) = self.completed(&dir, &p)? {
            if done.parts == requested {
                // What a crash after completed.json left.
                if !self.opts.keep_parts {
                    self.clean_completed(&dir, &p)?;
                }
                return Ok(Prepared::Done(done));
            }
            return Err(Error::NoSuchUpload {
                upload_id: id.to_string(),
            });
        }
        check_requested(&requested, upload.checksum, checks.kind)?;
        let have: BTreeMap<i32, PartRecord> = self
            .part_records(&dir, &p)?
            .into_iter()
            .map(|r| (r.number, r))
            .collect();
        let mut parts = Vec::with_capacity(requested.len());
        let last = requested.len() - 1;
        for (i, (n, etag)) in requested.iter().enumerate() {
            let bad = |why: String| Error::InvalidPart {
                upload_id: id.to_string(),
                part: *n,
                why,
            };
            let rec = have
                .get(n)
                .ok_or_else(|| bad("it was never uploaded".into()))?;
            if rec.md5 != *etag {
                return Err(bad(format!("its ETag is \"{}\", not \"{etag}\"", rec.md5)));
            }
            if i != last && rec.size < self.opts.min_part_size {
                return Err(Error::EntityTooSmall {
                    part: *n,
                    size: rec.size,
                    min: self.opts.min_part_size,
                });
            }
            if let Some((algo, kind)) = upload.checksum {
                match checks.parts.get(i).cloned().flatten() {
                    Some((a, _)) if a != algo => {
                        return Err(Error::PartChecksum {
                            algorithm: a.name(),
                            part: *n,
                        })
                    }
                    Some((_, v))
                        if rec.checksum.as_ref().map(|c| c.value.as_str()) != Some(v.as_str()) =>
                    {
                        return Err(bad("its checksum differs".into()));
                    }
                    Some(_) => {}
                    None if kind == Type::Composite => {
                        return Err(Error::InvalidRequest(format!(
                            "The upload was created using a {} checksum. The complete request must include the checksum for each part. It was missing for part {n} in the request.",
                            algo.name().to_ascii_lowercase()
                        )))
                    }
                    None => {}
                }
            }
            parts.push(rec.clone());
        }
        let checksum = object_checks(upload.checksum, &parts, checks)?;
        let etag = multipart_etag(parts.iter().map(|r| r.md5.as_str()));
        crate::fault::point("complete-prepared");
        Ok(Prepared::Assemble(Box::new(Plan {
            _lock: lock,
            id: id.to_string(),
            dir,
            dir_path: p,
            upload,
            parts,
            requested,
            etag,
            checksum,
            bypass_governance: false,
        })))
    }

    /// Assemble and commit a validated complete.
    pub fn complete_assemble(&self, plan: Box<Plan>) -> Result<Completed> {
        let (done, parts) = self.complete_commit(*plan)?;
        if let Some(parts) = parts {
            self.remove_part_files(parts)?;
        }
        Ok(done)
    }

    /// [`Store::complete_assemble`] up to the commit and its record
    /// (`completed.json`): the object is in place and a retried complete
    /// answers from the record. The part files are left to the caller
    /// (`None` with `keep_parts`): the gateway answers first, then
    /// removes them ([`Store::remove_part_files`]); a crash in between
    /// leaves them to a retried complete or the sweep.
    pub fn complete_commit(&self, plan: Plan) -> Result<(Completed, Option<PartFiles>)> {
        let t0 = Instant::now();
        let dst = self.new_file()?;
        let bs =
            cowkit_fs::align::block_size(dst.file()).map_err(|e| io("statfs", dst.path(), e))?;
        // Aligned parts: clone, falling back down the chain where refused.
        let mut aligned = Copier::new(Chain::AUTO).with_block_size(bs);
        // Unaligned parts cannot share blocks: copy_file_range first.
        let mut unaligned = Copier::new(Chain::starting_at(Method::CopyFileRange));
        let mut bytes = Bytes::default();
        let mut unaligned_parts = 0;
        let mut off = 0u64;
        for rec in &plan.parts {
            let name = part_name(rec.number);
            let path = plan.dir_path.join(&name);
            let bad = |why: String| Error::InvalidPart {
                upload_id: plan.id.clone(),
                part: rec.number,
                why,
            };
            let src = fsutil::open_opt(plan.dir.as_fd(), &name, &path)?
                .ok_or_else(|| bad("its file is gone".into()))?;
            let st = rustix::fs::fstat(&src).map_err(|e| io("stat", &path, e))?;
            if st.st_ino != rec.ino || st.st_size as u64 != rec.size {
                return Err(bad("it was replaced while the complete ran; retry".into()));
            }
            let copier = if off.is_multiple_of(bs) {
                &mut aligned
            } else {
                unaligned_parts += 1;
                &mut unaligned
            };
            let c = copier.copy_range(
                Handle::new(&src, &path),
                0,
                Handle::new(dst.file(), &dst.path()),
                off,
                rec.size,
            )?;
            bytes.add(c.bytes);
            off += rec.size;
        }
        let meta = ObjectMeta {
            etag: plan.etag.clone(),
            content_type: plan.upload.content_type.clone(),
            metadata: plan.upload.metadata.clone(),
            checksum: plan.checksum.clone(),
            headers: plan.upload.headers.clone(),
            tags: plan.upload.tags.clone(),
            parts: plan.parts.iter().map(|p| p.size).collect(),
            retention: plan.upload.retention,
            legal_hold: plan.upload.legal_hold,
            bypass_governance: plan.bypass_governance,
            ..ObjectMeta::default()
        };
        crate::fault::point("complete-assembled");
        let meta = self.commit_object(&plan.upload.bucket, &plan.upload.key, dst, meta)?;
        crate::fault::point("complete-committed");
        let record = CompletedRecord {
            bucket: plan.upload.bucket.clone(),
            key: plan.upload.key.clone(),
            etag: plan.etag.clone(),
            size: meta.size,
            parts: plan.requested.clone(),
            checksum: plan.checksum.clone(),
            version_id: meta.version_id.clone(),
        };
        self.write_json(
            plan.dir.as_fd(),
            "completed.json",
            &plan.dir_path.join("completed.json"),
            &record,
        )?;
        if self.opts.fsync {
            fsutil::sync_dir(&plan.dir, &plan.dir_path)?;
        }
        crate::fault::point("complete-recorded");
        let parts = if self.opts.keep_parts {
            None
        } else {
            let dir = plan
                .dir
                .try_clone()
                .map_err(|e| io("duplicate", &plan.dir_path, e))?;
            Some(PartFiles {
                dir,
                path: plan.dir_path.clone(),
            })
        };
        let done = Completed {
            record,
            bytes,
            unaligned_parts,
            elapsed: t0.elapsed(),
        };
        Ok((done, parts))
    }

    /// Remove the part files of a committed complete (its upload's
    /// `upload.json` and `completed.json` stay for retries until the
    /// sweep). Files already gone (a racing retry or sweep) are skipped.
    pub fn remove_part_files(&self, parts: PartFiles) -> Result<()> {
        self.clean_completed(&parts.dir, &parts.path)?;
        crate::fault::point("complete-cleaned");
        Ok(())
    }
}

/// A complete's part list, before any part is looked at: not empty, part
/// numbers from 1, at most [`MAX_PARTS`], ascending; the checksum type the
/// upload was made with (`upload`), if the complete names one.
fn check_requested(
    requested: &[(i32, String)],
    upload: Option<(Algorithm, Type)>,
    kind: Option<Type>,
) -> Result<()> {
    if requested.is_empty() {
        return Err(Error::MalformedXml);
    }
    if requested.iter().any(|r| r.0 < 1) {
        return Err(Error::InvalidArgument("PartNumber must be >= 1".into()));
    }
    if let (Some((_, have)), Some(want)) = (upload, kind) {
        if have != want {
            return Err(Error::InvalidRequest(format!(
                "The upload was created using the {} checksum mode. The complete request must use the same checksum mode.",
                have.name()
            )));
        }
    }
    if requested.len() > MAX_PARTS as usize {
        return Err(Error::InvalidArgument(format!(
            "a complete lists {} parts; at most {MAX_PARTS} are allowed",
            requested.len()
        )));
    }
    for w in requested.windows(2) {
        if w[1].0 <= w[0].0 {
            return Err(Error::InvalidPartOrder {
                part: w[1].0,
                after: w[0].0,
            });
        }
    }
    Ok(())
}

/// The object's size against `x-amz-mp-object-size`, and its checksum
/// (from the parts', `upload`'s algorithm, or CRC64NVME) against the one
/// the complete gives.
fn object_checks(
    upload: Option<(Algorithm, Type)>,
    parts: &[PartRecord],
    checks: &CompleteChecks,
) -> Result<Option<Checksum>> {
    let size: u64 = parts.iter().map(|r| r.size).sum();
    if let Some(want) = checks.size {
        if want < 0 {
            return Err(Error::InvalidRequest(format!(
                "Value for x-amz-mp-object-size header is less than zero: '{want}'"
            )));
        }
        if want as u64 != size {
            return Err(Error::InvalidRequest(format!(
                // S3's (and the suite's) order: computed, then given.
                "The provided 'x-amz-mp-object-size' header value {size} does not match what was computed: {want}"
            )));
        }
    }
    let checksum = match upload {
        Some((algo, kind)) => Some(object_checksum(algo, kind, parts).ok_or_else(|| {
            Error::InvalidRequest(format!(
                "The upload was created using a {} checksum, but a part has none; upload it again.",
                algo.name().to_ascii_lowercase()
            ))
        })?),
        // No algorithm asked for: CRC64NVME of the whole object, as S3
        // gives every object, when every part has one.
        None => object_checksum(Algorithm::Crc64Nvme, Type::FullObject, parts),
    };
    // An upload made without a checksum algorithm ignores the
    // complete's object checksum, as S3 does.
    let given = checks.object.as_ref().filter(|_| upload.is_some());
    if let (Some(c), Some((a, v))) = (&checksum, given) {
        if *a == c.algorithm && *v != c.value {
            let bare = c.value.split('-').next().unwrap_or("");
            if v.as_str() != bare {
                return Err(Error::ChecksumMismatch {
                    algorithm: a.name(),
                });
            }
        }
    }
    Ok(checksum)
}

/// The object checksum of a complete: the parts' checksums combined.
fn object_checksum(algo: Algorithm, kind: Type, parts: &[PartRecord]) -> Option<Checksum> {
    let mut digests = Vec::with_capacity(parts.len());
    for p in parts {
        let value = match p.checksum.as_ref().filter(|c| c.algorithm == algo) {
            Some(c) => &c.value,
            None if algo == Algorithm::Crc64Nvme => p.crc64nvme.as_ref()?,
            None => return None,
        };
        digests.push((crate::checksum::decode(algo, value)?, p.size));
    }
    let value = match kind {
        Type::FullObject => crate::checksum::full_object(algo, &digests)?,
        Type::Composite => {
            let d: Vec<Vec<u8>> = digests.into_iter().map(|d| d.0).collect();
            crate::checksum::composite(algo, &d)
        }
    };
    Some(Checksum {
        algorithm: algo,
        value,
        kind,
    })
}
