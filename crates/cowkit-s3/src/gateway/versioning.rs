//! Versioning and object lock operations (see [`crate::versions`]):
//! Put/GetBucketVersioning, ListObjectVersions, the object lock
//! configuration, retention and legal hold; and what the object operations
//! ask of them (version ids shown, lock headers, the governance bypass).

use super::*;
use crate::error::VersionError;
use crate::store::ObjectMeta;
use crate::versions::{self, listing, lock, LockConfig, Retention, Status};

/// Whether the request asked to override a GOVERNANCE retention on
/// `bucket`/`key` (`x-amz-bypass-governance-retention: true`: deletes,
/// PutObjectRetention) and its caller may ([`crate::authz::may_bypass_governance`];
/// writes that replace an object decide it where they commit).
pub(super) async fn bypass_of<T>(
    g: &S3Gateway,
    req: &S3Request<T>,
    bucket: &str,
    key: &str,
) -> S3Result<bool> {
    let asked = req
        .headers
        .get("x-amz-bypass-governance-retention")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if !asked {
        return Ok(false);
    }
    let who = crate::authz::Caller::of(req).principal;
    let (b, k) = (bucket.to_string(), key.to_string());
    g.run(move |s| crate::authz::may_bypass_governance(s, &who, &b, &k, true))
        .await
}

/// The version id a GET or HEAD shows for `m`: its own, or `null` when
/// the bucket is (or was) versioned; none for a bucket never versioned.
pub(super) fn shown_version(m: &ObjectMeta) -> Option<String> {
    (m.version_id.is_some() || !m.seq.is_empty()).then(|| versions::version_of(m).to_string())
}

/// The version id a write answers with: the new version's, none for a
/// `null` version (as VersityGW answers; S3 leaves it out too).
pub(super) fn written_version(m: &ObjectMeta) -> Option<String> {
    m.version_id.clone()
}

/// A version id of a request: an empty one (`versionId=`) is none, as
/// clients send it for "the current version".
pub(super) fn version_param(v: Option<&str>) -> Option<&str> {
    v.filter(|v| !v.is_empty())
}

/// Seconds since the epoch of an s3s timestamp.
fn secs_of(t: &Timestamp) -> Option<i64> {
    let mut buf = Vec::new();
    t.format(s3s::dto::TimestampFormat::EpochSeconds, &mut buf)
        .ok()?;
    let s = String::from_utf8(buf).ok()?;
    s.parse::<f64>().ok().map(|f| f.floor() as i64)
}

/// An s3s timestamp of `secs`.
fn timestamp(secs: i64) -> Timestamp {
    Timestamp::from(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64))
}

/// `secs` as RFC 3339 (`2026-11-26T10:00:00Z`).
fn rfc3339(secs: i64) -> String {
    let mut buf = Vec::new();
    let _ = timestamp(secs).format(s3s::dto::TimestampFormat::DateTime, &mut buf);
    let s = String::from_utf8(buf).unwrap_or_default();
    // s3s writes milliseconds; S3's argument value has none.
    match s.split_once('.') {
        Some((a, _)) => format!("{a}Z"),
        None => s,
    }
}

/// The object lock a write asks for in its headers (`x-amz-object-lock-*`,
/// checked by `precheck`).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LockHeaders {
    retention: Option<Retention>,
    legal_hold: Option<bool>,
    any: bool,
}

impl LockHeaders {
    pub(super) fn of(
        mode: Option<&ObjectLockMode>,
        until: Option<&Timestamp>,
        hold: Option<&ObjectLockLegalHoldStatus>,
    ) -> LockHeaders {
        let retention = match (
            mode.and_then(|m| lock::Mode::parse(m.as_str())),
            until.and_then(secs_of),
        ) {
            (Some(mode), Some(until)) => Some(Retention { mode, until }),
            _ => None,
        };
        LockHeaders {
            retention,
            legal_hold: hold.map(|h| h.as_str() == "ON"),
            any: mode.is_some() || until.is_some() || hold.is_some(),
        }
    }

    /// Refuse them on a bucket without object lock; else give them to
    /// `meta`, with the caller's governance bypass (blocking).
    pub(super) fn apply(
        self,
        s: &Store,
        bucket: &str,
        meta: &mut ObjectMeta,
        bypass: bool,
    ) -> crate::Result<()> {
        meta.bypass_governance = bypass;
        if !self.any {
            return Ok(());
        }
        if crate::store::versions::bucket_state(s, bucket)?
            .lock
            .is_none()
        {
            return Err(Error::InvalidRequest(
                "Bucket is missing ObjectLockConfiguration".into(),
            ));
        }
        meta.retention = self.retention;
        meta.legal_hold = self.legal_hold;
        Ok(())
    }
}

pub(super) async fn put_bucket_versioning(
    g: &S3Gateway,
    req: S3Request<PutBucketVersioningInput>,
) -> S3Result<S3Response<PutBucketVersioningOutput>> {
    let i = req.input;
    let status = match i
        .versioning_configuration
        .status
        .as_ref()
        .map(|s| s.as_str())
    {
        Some("Enabled") => Status::Enabled,
        Some("Suspended") => Status::Suspended,
        _ => return Err(to_s3_error(Error::MalformedXml)),
    };
    let b = i.bucket;
    g.run(move |s| {
        let st = crate::store::versions::bucket_state(s, &b)?;
        if st.lock.is_some() && status == Status::Suspended {
            return Err(VersionError::LockKeepsVersioning.into());
        }
        crate::store::versions::set_status(s, &b, status)
    })
    .await?;
    Ok(S3Response::new(PutBucketVersioningOutput::default()))
}

pub(super) async fn get_bucket_versioning(
    g: &S3Gateway,
    req: S3Request<GetBucketVersioningInput>,
) -> S3Result<S3Response<GetBucketVersioningOutput>> {
    let b = req.input.bucket;
    let st = g
        .run(move |s| crate::store::versions::bucket_state(s, &b))
        .await?;
    Ok(S3Response::new(GetBucketVersioningOutput {
        status: st
            .status
            .name()
            .map(|n| BucketVersioningStatus::from(n.to_string())),
        ..Default::default()
    }))
}

/// The default retention rule of a PutObjectLockConfiguration document.
fn lock_rule(c: &ObjectLockConfiguration) -> S3Result<Option<lock::DefaultRetention>> {
    if c.object_lock_enabled.as_ref().map(|e| e.as_str()) != Some("Enabled") {
        return Err(to_s3_error(Error::MalformedXml));
    }
    let Some(rule) = &c.rule else {
        return Ok(None);
    };
    let Some(d) = &rule.default_retention else {
        return Err(to_s3_error(Error::MalformedXml));
    };
    match lock::check_rule(d.mode.as_ref().map(|m| m.as_str()), d.days, d.years) {
        Ok(r) => Ok(Some(r)),
        Err(lock::RuleError::Malformed) => Err(to_s3_error(Error::MalformedXml)),
        Err(lock::RuleError::Period {
            name,
            value,
            too_large,
        }) => {
            let msg = if too_large {
                "Default retention period too large."
            } else {
                "Default retention period must be a positive integer value."
            };
            let mut e = S3Error::with_message(S3ErrorCode::InvalidArgument, msg);
            crate::answer::with_error_elements(
                &mut e,
                &[
                    ("ArgumentName", name),
                    ("ArgumentValue", &value.to_string()),
                ],
            );
            Err(e)
        }
    }
}

pub(super) async fn put_object_lock_configuration(
    g: &S3Gateway,
    req: S3Request<PutObjectLockConfigurationInput>,
) -> S3Result<S3Response<PutObjectLockConfigurationOutput>> {
    let i = req.input;
    let b = i.bucket.clone();
    let st = g
        .run(move |s| crate::store::versions::bucket_state(s, &b))
        .await?;
    let Some(conf) = i.object_lock_configuration else {
        return Err(S3Error::with_message(
            S3ErrorCode::MissingRequestBodyError,
            "Request Body is empty",
        ));
    };
    let rule = lock_rule(&conf)?;
    let unversioned_ok = g.store.options().object_lock_without_versioning;
    if st.lock.is_none() && st.status != Status::Enabled && !unversioned_ok {
        return Err(to_s3_error(VersionError::LockNeedsVersioning.into()));
    }
    let b = i.bucket;
    g.run(move |s| {
        crate::store::versions::set_lock(
            s,
            &b,
            &LockConfig {
                enabled: true,
                rule,
            },
        )
    })
    .await?;
    Ok(S3Response::new(PutObjectLockConfigurationOutput::default()))
}

pub(super) async fn get_object_lock_configuration(
    g: &S3Gateway,
    req: S3Request<GetObjectLockConfigurationInput>,
) -> S3Result<S3Response<GetObjectLockConfigurationOutput>> {
    let b = req.input.bucket;
    let st = g
        .run(move |s| crate::store::versions::bucket_state(s, &b))
        .await?;
    let Some(l) = st.lock else {
        return Err(to_s3_error(VersionError::LockConfigurationNotFound.into()));
    };
    let rule = l.rule.map(|r| ObjectLockRule {
        default_retention: Some(DefaultRetention {
            days: r.days,
            years: r.years,
            mode: Some(ObjectLockRetentionMode::from(r.mode.name().to_string())),
        }),
    });
    Ok(S3Response::new(GetObjectLockConfigurationOutput {
        object_lock_configuration: Some(ObjectLockConfiguration {
            object_lock_enabled: Some(ObjectLockEnabled::from("Enabled".to_string())),
            rule,
        }),
    }))
}

/// The retention a PutObjectRetention document asks for.
fn retention_of(r: Option<&ObjectLockRetention>) -> S3Result<Retention> {
    let r = r.ok_or_else(|| to_s3_error(Error::MalformedXml))?;
    let mode = r
        .mode
        .as_ref()
        .and_then(|m| lock::Mode::parse(m.as_str()))
        .ok_or_else(|| to_s3_error(Error::MalformedXml))?;
    let until = r
        .retain_until_date
        .as_ref()
        .and_then(secs_of)
        .ok_or_else(|| to_s3_error(Error::MalformedXml))?;
    if until <= versions::now_secs() {
        let mut e = S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "The retain until date must be in the future!",
        );
        crate::answer::with_error_elements(
            &mut e,
            &[
                ("ArgumentName", "x-amz-object-lock-retain-until-date"),
                ("ArgumentValue", &rfc3339(until)),
            ],
        );
        return Err(e);
    }
    Ok(Retention { mode, until })
}

/// The bucket exists and has object lock (blocking).
fn lock_enabled(s: &Store, bucket: &str) -> crate::Result<()> {
    match crate::store::versions::bucket_state(s, bucket)?.lock {
        Some(_) => Ok(()),
        None => Err(VersionError::MissingLockConfiguration.into()),
    }
}

pub(super) async fn put_object_retention(
    g: &S3Gateway,
    req: S3Request<PutObjectRetentionInput>,
) -> S3Result<S3Response<PutObjectRetentionOutput>> {
    let bypass = bypass_of(g, &req, &req.input.bucket, &req.input.key).await?;
    let i = req.input;
    let b = i.bucket.clone();
    g.run(move |s| s.head_bucket(&b)).await?;
    let new = retention_of(i.retention.as_ref())?;
    let v = version_param(i.version_id.as_deref()).map(str::to_string);
    let (b, k) = (i.bucket, i.key);
    g.run(move |s| {
        lock_enabled(s, &b)?;
        crate::store::versions::update(s, &b, &k, v.as_deref(), |m| {
            if !lock::may_replace(
                m.retention.as_ref(),
                Some(&new),
                bypass,
                versions::now_secs(),
            ) {
                return Err(VersionError::ObjectLocked { key: m.key.clone() }.into());
            }
            m.retention = Some(new);
            Ok(())
        })
    })
    .await?;
    Ok(S3Response::new(PutObjectRetentionOutput::default()))
}

/// The record of the version GetObjectRetention and GetObjectLegalHold
/// read, in a bucket with object lock.
async fn lock_record(
    g: &S3Gateway,
    b: String,
    k: String,
    version_id: Option<String>,
) -> S3Result<ObjectMeta> {
    let v = version_param(version_id.as_deref()).map(str::to_string);
    g.run(move |s| {
        let m = crate::store::versions::read(s, &b, &k, v.as_deref())?;
        lock_enabled(s, &b)?;
        Ok(m)
    })
    .await
}

pub(super) async fn get_object_retention(
    g: &S3Gateway,
    req: S3Request<GetObjectRetentionInput>,
) -> S3Result<S3Response<GetObjectRetentionOutput>> {
    let i = req.input;
    let m = lock_record(g, i.bucket, i.key, i.version_id).await?;
    let Some(r) = m.retention else {
        return Err(to_s3_error(VersionError::NoObjectLock.into()));
    };
    Ok(S3Response::new(GetObjectRetentionOutput {
        retention: Some(ObjectLockRetention {
            mode: Some(ObjectLockRetentionMode::from(r.mode.name().to_string())),
            retain_until_date: Some(timestamp(r.until)),
        }),
    }))
}

pub(super) async fn put_object_legal_hold(
    g: &S3Gateway,
    req: S3Request<PutObjectLegalHoldInput>,
) -> S3Result<S3Response<PutObjectLegalHoldOutput>> {
    let i = req.input;
    let b = i.bucket.clone();
    g.run(move |s| s.head_bucket(&b)).await?;
    let on = match i
        .legal_hold
        .as_ref()
        .and_then(|h| h.status.as_ref())
        .map(|s| s.as_str())
    {
        Some("ON") => true,
        Some("OFF") => false,
        _ => return Err(to_s3_error(Error::MalformedXml)),
    };
    let v = version_param(i.version_id.as_deref()).map(str::to_string);
    let (b, k) = (i.bucket, i.key);
    g.run(move |s| {
        lock_enabled(s, &b)?;
        crate::store::versions::update(s, &b, &k, v.as_deref(), |m| {
            m.legal_hold = Some(on);
            Ok(())
        })
    })
    .await?;
    Ok(S3Response::new(PutObjectLegalHoldOutput::default()))
}

pub(super) async fn get_object_legal_hold(
    g: &S3Gateway,
    req: S3Request<GetObjectLegalHoldInput>,
) -> S3Result<S3Response<GetObjectLegalHoldOutput>> {
    let i = req.input;
    let m = lock_record(g, i.bucket, i.key, i.version_id).await?;
    let Some(on) = m.legal_hold else {
        return Err(to_s3_error(VersionError::NoObjectLock.into()));
    };
    let status = if on { "ON" } else { "OFF" };
    Ok(S3Response::new(GetObjectLegalHoldOutput {
        legal_hold: Some(ObjectLockLegalHold {
            status: Some(ObjectLockLegalHoldStatus::from(status.to_string())),
        }),
    }))
}

pub(super) async fn list_object_versions(
    g: &S3Gateway,
    req: S3Request<ListObjectVersionsInput>,
) -> S3Result<S3Response<ListObjectVersionsOutput>> {
    let owner = owner_of(&req);
    let i = req.input;
    if let Some(n) = i.max_keys.filter(|n| *n < 0) {
        let mut e =
            S3Error::with_message(S3ErrorCode::InvalidArgument, "max-keys cannot be negative");
        crate::answer::with_error_elements(
            &mut e,
            &[
                ("ArgumentName", "maxKeys"),
                ("ArgumentValue", &n.to_string()),
            ],
        );
        return Err(e);
    }
    let q = listing::Query {
        prefix: i.prefix.clone().unwrap_or_default(),
        delimiter: i.delimiter.clone().filter(|d| !d.is_empty()),
        key_marker: i.key_marker.clone(),
        version_id_marker: i.version_id_marker.clone(),
        max_keys: i.max_keys.unwrap_or(1000).clamp(0, 1000) as usize,
    };
    let b = i.bucket.clone();
    let page = g
        .run(move |s| crate::store::versions::list(s, &b, &q))
        .await?;
    let enc = list::Encoder::new(i.encoding_type.as_ref().map(|e| e.as_str()));
    let mut out_versions = Vec::new();
    let mut markers = Vec::new();
    for (key, e, latest) in page.versions {
        let m = e.item.meta;
        let last_modified = Some(Timestamp::from(e.item.mtime));
        if m.delete_marker {
            markers.push(DeleteMarkerEntry {
                is_latest: Some(latest),
                key: Some(enc.enc(&key)),
                last_modified,
                owner: Some(owner.clone()),
                version_id: Some(e.version),
            });
            continue;
        }
        out_versions.push(ObjectVersion {
            checksum_algorithm: m
                .checksum
                .as_ref()
                .map(|c| vec![ChecksumAlgorithm::from(c.algorithm.name().to_string())]),
            checksum_type: m
                .checksum
                .as_ref()
                .map(|c| ChecksumType::from(c.kind.name().to_string())),
            e_tag: Some(etag(&m.etag)),
            is_latest: Some(latest),
            key: Some(enc.enc(&key)),
            last_modified,
            owner: Some(owner.clone()),
            size: Some(m.size as i64),
            storage_class: Some(ObjectVersionStorageClass::from_static(
                ObjectVersionStorageClass::STANDARD,
            )),
            version_id: Some(e.version),
            ..Default::default()
        });
    }
    let (next_key, next_version) = match page.next {
        Some((k, v)) => (Some(enc.enc(&k)), v),
        None => (None, None),
    };
    Ok(S3Response::new(ListObjectVersionsOutput {
        name: Some(i.bucket),
        prefix: i.prefix.map(|p| enc.enc(&p)),
        key_marker: i.key_marker.map(|m| enc.enc(&m)),
        version_id_marker: i.version_id_marker,
        max_keys: i.max_keys.or(Some(1000)),
        is_truncated: Some(page.truncated),
        next_key_marker: next_key,
        next_version_id_marker: next_version,
        delimiter: i.delimiter.map(|d| enc.enc(&d)),
        encoding_type: i.encoding_type,
        versions: Some(out_versions),
        delete_markers: (!markers.is_empty()).then_some(markers),
        common_prefixes: Some(
            page.common
                .iter()
                .map(|p| CommonPrefix {
                    prefix: Some(enc.enc(p)),
                })
                .collect(),
        ),
        ..Default::default()
    }))
}
