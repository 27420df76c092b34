//! Object operations: put, get, head, delete (one or many), attributes,
//! copy, tagging.

use super::versioning::{bypass_of, shown_version, version_param, written_version, LockHeaders};
use super::*;

/// GetObject bodies up to this size are read whole and sent with the
/// response head.
const SMALL_BODY: u64 = 16 << 10;

/// Add an object's stored headers and its content type (S3's default
/// `binary/octet-stream` when it has none) to a GET or HEAD response, then
/// the `response-*` overrides of the query.
fn add_object_headers<T>(
    res: &mut S3Response<T>,
    info: &crate::store::ObjectInfo,
    uri: &http::Uri,
) {
    let mut set = |k: &str, v: &str| {
        if let (Ok(k), Ok(v)) = (
            http::HeaderName::from_bytes(k.as_bytes()),
            http::HeaderValue::from_str(v),
        ) {
            res.headers.insert(k, v);
        }
    };
    for (k, v) in &info.meta.headers {
        set(k, v);
    }
    if !info.meta.tags.is_empty() {
        set("x-amz-tagging-count", &info.meta.tags.len().to_string());
    }
    set(
        "content-type",
        info.meta
            .content_type
            .as_deref()
            .unwrap_or("binary/octet-stream"),
    );
    for (k, v) in uri
        .query()
        .map(crate::text::query_pairs)
        .unwrap_or_default()
    {
        if let Some(h) = k.strip_prefix("response-") {
            if matches!(
                h,
                "cache-control"
                    | "content-disposition"
                    | "content-encoding"
                    | "content-language"
                    | "content-type"
                    | "expires"
            ) {
                set(h, &v);
            }
        }
    }
}

/// The byte range and part count of `?partNumber=` on GET and HEAD.
fn part_of(
    n: Option<i32>,
    has_range: bool,
    info: &crate::store::ObjectInfo,
) -> S3Result<Option<(u64, u64, usize)>> {
    let Some(n) = n else {
        return Ok(None);
    };
    check_part_number(Some(n), has_range)?;
    if info.meta.size == 0 && n == 1 {
        // The whole (empty) object, without a Content-Range.
        return Ok(None);
    }
    match info.meta.part_range(n) {
        Some(r) => Ok(Some(r)),
        None => {
            let mut e = S3Error::with_message(
                S3ErrorCode::Custom("InvalidPartNumber".into()),
                "The requested partnumber is not satisfiable.",
            );
            e.set_status_code(http::StatusCode::RANGE_NOT_SATISFIABLE);
            Err(e)
        }
    }
}

/// The range a read serves: S3 sends an empty object whole for a suffix
/// range (`bytes=-N`, N > 0) rather than refusing it.
fn effective_range(r: Option<Range>, size: u64) -> Option<Range> {
    match r {
        Some(Range::Suffix { length }) if size == 0 && length > 0 => None,
        r => r,
    }
}

/// GetObject's and HeadObject's `If-*` headers.
fn check_read_conditions(
    cond: Option<&Conditions>,
    info: &crate::store::ObjectInfo,
) -> S3Result<()> {
    match cond {
        Some(c) => read_outcome(c.read(current(info))),
        None => Ok(()),
    }
}

/// The stored checksum, when the request asked for it
/// (`x-amz-checksum-mode: ENABLED`) and reads the whole object.
fn checksum_wanted<'a>(
    mode: Option<&ChecksumMode>,
    whole: bool,
    info: &'a crate::store::ObjectInfo,
) -> Option<&'a Checksum> {
    let enabled = mode.is_some_and(|m| m.as_str().eq_ignore_ascii_case(ChecksumMode::ENABLED));
    info.meta.checksum.as_ref().filter(|_| enabled && whole)
}

pub(super) async fn put_object(
    g: &S3Gateway,
    mut req: S3Request<PutObjectInput>,
) -> S3Result<S3Response<PutObjectOutput>> {
    let mut i = std::mem::take(&mut req.input);
    let body = i.body.take();
    let who = crate::authz::Caller::of(&req).principal;
    let lock = LockHeaders::of(
        i.object_lock_mode.as_ref(),
        i.object_lock_retain_until_date.as_ref(),
        i.object_lock_legal_hold_status.as_ref(),
    );
    let (bucket, key) = (i.bucket, i.key);
    let checked = async {
        let (b, k) = (bucket.clone(), key.clone());
        g.run(move |s| {
            crate::names::check_key(&k)?;
            s.head_bucket(&b)
        })
        .await?;
        let want = want_checksum(&req.headers)?;
        let tags = header_tags(i.tagging.as_deref())?;
        g.check_write_conditions(&bucket, &key, conditions_of(&req).as_ref())
            .await?;
        Ok((want, tags))
    }
    .await;
    let (want, tags) = match checked {
        Ok(w) => w,
        Err(e) => {
            drain(body).await;
            return Err(e);
        }
    };
    // Every object gets a checksum: S3's default is CRC64NVME.
    let algo = want.algorithm().unwrap_or(Algorithm::Crc64Nvme);
    let file = g.run(|s| s.new_file()).await?;
    let got = g
        .receive(body, file, i.content_md5.as_deref(), Some(algo), false)
        .await
        .map_err(|e| chunk_refusal(&req.extensions, e))?;
    check_received(&req, &want, &got, i.content_length)?;
    let (file, md5, size) = (got.file, got.md5, got.size);
    let checksum = got.checksum.map(|(algorithm, value)| Checksum {
        algorithm,
        value,
        kind: Type::FullObject,
    });
    let mut meta = crate::store::ObjectMeta {
        etag: md5.clone(),
        content_type: i.content_type.or_else(|| {
            // A directory object is a directory here: given no type, it
            // gets the one file-system tools on S3 (s3fs, rclone) give
            // directories, not S3's binary/octet-stream.
            crate::names::is_dir_key(&key).then(|| DIRECTORY_CONTENT_TYPE.to_string())
        }),
        metadata: metadata_of(i.metadata),
        checksum: checksum.clone(),
        headers: stored_headers(&req.headers),
        tags,
        ..Default::default()
    };
    let (b, k) = (bucket.clone(), key.clone());
    let committed = g
        .run(move |s| {
            let bypass = crate::authz::may_bypass_governance(s, &who, &b, &k, false)?;
            lock.apply(s, &b, &mut meta, bypass)?;
            s.commit_object(&b, &k, file, meta)
        })
        .await?;
    access(serde_json::json!({"op": "PutObject", "bucket": bucket, "key": key, "size": size}));
    let mut out = PutObjectOutput {
        e_tag: Some(etag(&md5)),
        size: Some(size as i64),
        version_id: written_version(&committed),
        ..Default::default()
    };
    put_checksum!(out, checksum.as_ref());
    Ok(with_checksum_header(out, checksum.as_ref()))
}

/// What a GET or HEAD reads: the object, opened with its conditions
/// checked, and the bytes `[start, end)` it serves when not all of them
/// (a `Range`, or the part `?partNumber=` names).
struct Read {
    file: std::fs::File,
    info: crate::store::ObjectInfo,
    /// The bytes served, read whole with the open (a GET of at most
    /// `SMALL_BODY` bytes).
    body: Option<bytes::Bytes>,
    range: Option<(u64, u64)>,
    /// The part `?partNumber=` names: its range and the object's part count.
    part: Option<(u64, u64, usize)>,
    /// The bucket is (or was) versioned: a version without an id is `null`.
    versioned: bool,
}

/// The version id a GET or HEAD of `r` answers with.
fn read_version(r: &Read) -> Option<String> {
    shown_version(&r.info.meta).or_else(|| r.versioned.then(|| "null".to_string()))
}

/// The object a GET or HEAD names.
struct Target<'a> {
    bucket: &'a str,
    key: &'a str,
    version_id: Option<&'a str>,
    part_number: Option<i32>,
}

/// The [`Target`] of a GetObject or HeadObject input (s3s's two types
/// have the same fields).
macro_rules! target_of {
    ($($input:ty),*) => {$(
        impl<'a> From<&'a $input> for Target<'a> {
            fn from(i: &'a $input) -> Self {
                Target {
                    bucket: &i.bucket,
                    key: &i.key,
                    version_id: i.version_id.as_deref(),
                    part_number: i.part_number,
                }
            }
        }
    )*};
}
target_of!(GetObjectInput, HeadObjectInput);

/// The bytes `[start, end)` a GET or HEAD of `info` serves when not all
/// of them (a `Range`, or the part `?partNumber=` names), and that part
/// with the object's part count.
type Served = (Option<(u64, u64)>, Option<(u64, u64, usize)>);

/// What of `info` a read with `range` and `part_number` serves.
fn served(
    info: &crate::store::ObjectInfo,
    range: Option<Range>,
    part_number: Option<i32>,
) -> S3Result<Served> {
    let size = info.meta.size;
    let range = effective_range(range, size);
    let part = part_of(part_number, range.is_some(), info)?;
    let range = match (&range, part) {
        (Some(r), _) => {
            let rr = r.check(size).map_err(|_| {
                to_s3_error(Error::InvalidRange {
                    range: r.to_header_string(),
                    size,
                })
            })?;
            Some((rr.start, rr.end))
        }
        (None, Some((a, b, _))) => Some((a, b)),
        (None, None) => None,
    };
    Ok((range, part))
}

/// Open `bucket/key` for a GET or HEAD and find the bytes it serves; a
/// body of at most `whole_up_to` bytes (a GET's) is read with the open. The open,
/// its record and that read are one attempt of `stale::reopen`: when
/// another gateway replaced the object meanwhile, it starts again from
/// the name, so the answer is one version, whole.
async fn read(
    g: &S3Gateway,
    cond: Option<&Conditions>,
    t: Target<'_>,
    range: Option<Range>,
    whole_up_to: Option<u64>,
) -> S3Result<Read> {
    let Target {
        bucket,
        key,
        version_id,
        part_number,
    } = t;
    let version_id = version_param(version_id);
    check_version_id(version_id)?;
    check_part_number(part_number, range.is_some())?;
    let (b, k, v) = (
        bucket.to_string(),
        key.to_string(),
        version_id.map(str::to_string),
    );
    let name = std::path::PathBuf::from(format!("{bucket}/{key}"));
    let (file, info, body, versioned) = g
        .run(move |s| {
            use crate::stale::Try;
            // The bytes served, when few enough to read now.
            let with_body = |(f, i): (std::fs::File, crate::store::ObjectInfo)| {
                let body = match served(&i, range, part_number) {
                    Ok((r, _)) => {
                        let (start, end) = r.unwrap_or((0, i.meta.size));
                        whole_up_to
                            .is_some_and(|w| end - start <= w)
                            .then(|| crate::body::read_range(&f, &name, start, end))
                            .transpose()?
                    }
                    // Answered after the conditions, as before.
                    Err(_) => None,
                };
                Ok((f, i, body))
            };
            let attempt = || {
                let opened = match &v {
                    Some(v) => crate::store::versions::open_version_once(s, &b, &k, v)?,
                    None => s.open_object_once(&b, &k)?,
                };
                Ok(match opened {
                    Try::Done(r) => Try::Done(with_body(r)?),
                    Try::Again(r) => Try::Again(r.and_then(&with_body)),
                })
            };
            let shown = || match &v {
                Some(v) => format!("{b}/{k}?versionId={v}"),
                None => format!("{b}/{k}"),
            };
            let (f, i, body) = crate::stale::reopen(shown, attempt).map_err(|e| match &v {
                Some(_) => e,
                None => crate::store::versions::missing_key(s, &b, &k, e),
            })?;
            let versioned =
                crate::store::versions::bucket_state(s, &b)?.status != crate::versions::Status::Off;
            Ok((f, i, body, versioned))
        })
        .await?;
    check_read_conditions(cond, &info)?;
    let (range, part) = served(&info, range, part_number)?;
    Ok(Read {
        file,
        info,
        body,
        range,
        part,
        versioned,
    })
}

/// `$out { fields }` with the fields a GET and a HEAD answer alike for
/// the object `info`.
macro_rules! read_output {
    ($out:ident, $info:expr, { $($field:ident: $value:expr),* $(,)? }) => {
        $out {
            $($field: $value,)*
            storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
            accept_ranges: Some("bytes".into()),
            e_tag: Some(etag(&$info.meta.etag)),
            last_modified: Some(Timestamp::from($info.mtime)),
            metadata: metadata_out(&$info.meta.metadata),
            version_id: shown_version(&$info.meta),
            object_lock_mode: $info
                .meta
                .retention
                .map(|r| ObjectLockMode::from(r.mode.name().to_string())),
            object_lock_retain_until_date: $info.meta.retention.map(|r| {
                Timestamp::from(std::time::UNIX_EPOCH + std::time::Duration::from_secs(r.until.max(0) as u64))
            }),
            object_lock_legal_hold_status: $info
                .meta
                .legal_hold
                .map(|on| ObjectLockLegalHoldStatus::from(if on { "ON" } else { "OFF" }.to_string())),
            ..Default::default()
        }
    };
}

/// A GET's or HEAD's response: the checksum header s3s has no field for,
/// 206 when `partial`, the object's stored headers.
fn read_response<T>(
    out: T,
    checksum: Option<&Checksum>,
    partial: bool,
    info: &crate::store::ObjectInfo,
    uri: &http::Uri,
) -> S3Response<T> {
    let mut res = with_checksum_header(out, checksum);
    if partial {
        res.status = Some(http::StatusCode::PARTIAL_CONTENT);
    }
    add_object_headers(&mut res, info, uri);
    res
}

/// `Content-Range` of the bytes `[start, end)` of an object of `size`.
fn content_range((start, end): (u64, u64), size: u64) -> String {
    format!("bytes {start}-{}/{size}", end.saturating_sub(1))
}

/// The part count a `?partNumber=` read reports (a multipart object's).
fn parts_count(part: Option<(u64, u64, usize)>, info: &crate::store::ObjectInfo) -> Option<i32> {
    part.filter(|_| !info.meta.parts.is_empty())
        .map(|p| p.2 as i32)
}

pub(super) async fn get_object(
    g: &S3Gateway,
    req: S3Request<GetObjectInput>,
) -> S3Result<S3Response<GetObjectOutput>> {
    let uri = req.uri.clone();
    let cond = conditions_of(&req);
    let splicer = req.extensions.get::<crate::sendfile::Splicer>().cloned();
    let i = req.input;
    let name = std::path::PathBuf::from(format!("{}/{}", i.bucket, i.key));
    let r = read(
        g,
        cond.as_ref(),
        Target::from(&i),
        i.range,
        Some(SMALL_BODY),
    )
    .await?;
    let version_id = read_version(&r);
    let Read {
        file,
        info,
        body,
        range,
        part,
        ..
    } = r;
    let (start, end) = range.unwrap_or((0, info.meta.size));
    let content_range = range.map(|r| content_range(r, info.meta.size));
    // Once the head is out, a body stays on the descriptor `read` opened:
    // an error there (a stale handle too) ends the connection, short,
    // rather than sending bytes of another version.
    let body = match (body, splicer) {
        // A small body was read with the open and goes with the head, in
        // one write: cheaper than a sendfile of its own, and the client
        // has the whole response at once.
        (Some(data), _) => StreamingBlob::from(s3s::Body::from(data)),
        (None, Some(sp)) => {
            StreamingBlob::wrap(crate::sendfile::file_range(sp, file, name, start, end))
        }
        (None, None) => StreamingBlob::wrap(crate::body::file_range(file, name, start, end)),
    };
    let checksum = checksum_wanted(i.checksum_mode.as_ref(), content_range.is_none(), &info);
    let mut out = read_output!(GetObjectOutput, info, {
        body: Some(body),
        content_length: Some((end - start) as i64),
        content_range: content_range,
    });
    out.parts_count = parts_count(part, &info);
    out.version_id = version_id;
    put_checksum!(out, checksum);
    Ok(read_response(out, checksum, part.is_some(), &info, &uri))
}

pub(super) async fn head_object(
    g: &S3Gateway,
    req: S3Request<HeadObjectInput>,
) -> S3Result<S3Response<HeadObjectOutput>> {
    let uri = req.uri.clone();
    let cond = conditions_of(&req);
    let i = req.input;
    let r = read(g, cond.as_ref(), Target::from(&i), i.range, None).await?;
    let version_id = read_version(&r);
    let Read {
        info, range, part, ..
    } = r;
    let size = info.meta.size;
    let checksum = checksum_wanted(i.checksum_mode.as_ref(), range.is_none(), &info);
    let mut out = read_output!(HeadObjectOutput, info, {
        content_length: Some(range.map_or(size, |(a, b)| b - a) as i64),
        content_range: range.map(|r| content_range(r, size)),
        parts_count: parts_count(part, &info),
    });
    out.version_id = version_id;
    put_checksum!(out, checksum);
    Ok(read_response(out, checksum, range.is_some(), &info, &uri))
}

pub(super) async fn delete_object(
    g: &S3Gateway,
    req: S3Request<DeleteObjectInput>,
) -> S3Result<S3Response<DeleteObjectOutput>> {
    let cond = conditions_of(&req).filter(Conditions::has_delete);
    let bypass = bypass_of(g, &req, &req.input.bucket, &req.input.key).await?;
    let i = req.input;
    let (b, k) = (i.bucket, i.key);
    let v = version_param(i.version_id.as_deref()).map(str::to_string);
    if let Some(cond) = cond {
        // Checked, then deleted: a writer racing in between wins.
        let (b2, k2) = (b.clone(), k.clone());
        let cur = g.run(move |s| s.stat_object(&b2, &k2)).await?;
        write_outcome(cond.delete(cur.as_ref().map(current)), &b, &k)?;
    }
    let d = g
        .run(move |s| crate::store::versions::delete(s, &b, &k, v.as_deref(), bypass))
        .await?;
    Ok(S3Response::new(DeleteObjectOutput {
        delete_marker: d.delete_marker.then_some(true),
        version_id: d.version_id,
        ..Default::default()
    }))
}

pub(super) async fn get_object_attributes(
    g: &S3Gateway,
    req: S3Request<GetObjectAttributesInput>,
) -> S3Result<S3Response<GetObjectAttributesOutput>> {
    let i = req.input;
    let b = i.bucket.clone();
    g.run(move |s| s.head_bucket(&b)).await?;
    let attrs = object_attributes(&i.object_attributes)?;
    let want = |n: &str| attrs.iter().any(|a| a == n);
    let v = version_param(i.version_id.as_deref()).map(str::to_string);
    check_version_id(v.as_deref())?;
    let (b, k) = (i.bucket.clone(), i.key.clone());
    let (_, info) = g
        .run(move |s| match &v {
            Some(v) => crate::store::versions::open_version(s, &b, &k, v),
            None => s.open_object(&b, &k),
        })
        .await?;
    let mut out = GetObjectAttributesOutput {
        version_id: shown_version(&info.meta),
        last_modified: Some(Timestamp::from(info.mtime)),
        ..Default::default()
    };
    // S3 gives this ETag without quotes (s3s would quote it).
    let bare_etag = want("ETag").then(|| info.meta.etag.clone());
    if want("ObjectSize") {
        out.object_size = Some(info.meta.size as i64);
    }
    if want("StorageClass") {
        out.storage_class = Some(StorageClass::from_static(StorageClass::STANDARD));
    }
    let mut extra = None;
    if want("Checksum") {
        if let Some(c) = info.meta.checksum.as_ref() {
            let mut sum = s3s::dto::Checksum::default();
            put_checksum!(sum, Some(c));
            out.checksum = Some(sum);
            extra = Some(c.clone());
        }
    }
    if want("ObjectParts") && !info.meta.parts.is_empty() {
        out.object_parts = Some(GetObjectAttributesParts {
            total_parts_count: Some(info.meta.parts.len() as i32),
            ..Default::default()
        });
    }
    let mut res = S3Response::new(out);
    if let Some(e) = bare_etag {
        add_xml_element(&mut res, "GetObjectAttributesResponse", 1, "ETag", &e);
    }
    add_xml_checksum(&mut res, "Checksum", 1, extra.as_ref());
    Ok(res)
}

pub(super) async fn copy_object(
    g: &S3Gateway,
    req: S3Request<CopyObjectInput>,
) -> S3Result<S3Response<CopyObjectOutput>> {
    let headers = stored_headers(&req.headers);
    let cond = conditions_of(&req);
    let who = crate::authz::Caller::of(&req).principal;
    let i = req.input;
    let (sb, sk) = copy_source(&i.copy_source)?;
    let sv = copy_source_version(&i.copy_source);
    let replace = replaces_metadata(i.metadata_directive.as_ref())?;
    let new_tags = replaced_tags(i.tagging_directive.as_ref(), i.tagging.as_deref())?;
    let algo = checksum_algorithm(i.checksum_algorithm.as_ref())?;
    if sb == i.bucket && sk == i.key && !replace && algo.is_none() && sv.is_none() {
        return Err(invalid_request("This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes."));
    }
    if let Some(c) = &cond {
        g.check_copy_source(c, &sb, &sk).await?;
        g.check_write_conditions(&i.bucket, &i.key, Some(c)).await?;
    }
    let (ct, md) = (i.content_type.clone(), metadata_of(i.metadata.clone()));
    let (b, k) = (i.bucket.clone(), i.key.clone());
    let lock = LockHeaders::of(
        i.object_lock_mode.as_ref(),
        i.object_lock_retain_until_date.as_ref(),
        i.object_lock_legal_hold_status.as_ref(),
    );
    let shown_source = sv.clone();
    let (meta, copied) = g
        .run(move |s| {
            let src_path = s.dir().join(&sb).join(&sk);
            let source = match &sv {
                Some(v) => crate::store::versions::open_version(s, &sb, &sk, v)?,
                None => s.open_object(&sb, &sk)?,
            };
            let bypass = crate::authz::may_bypass_governance(s, &who, &b, &k, false)?;
            s.copy_from(source, &sb, &sk, &b, &k, |meta, src| {
                lock.apply(s, &b, meta, bypass)?;
                if replace {
                    meta.content_type = ct;
                    meta.metadata = md;
                    meta.headers = headers;
                } else {
                    // S3 does not copy a website redirect.
                    meta.headers.remove("x-amz-website-redirect-location");
                }
                if let Some(a) = algo {
                    meta.checksum = Some(crate::store::file_checksum(src, &src_path, a)?);
                }
                if let Some(t) = new_tags {
                    meta.tags = t;
                }
                Ok(())
            })
        })
        .await?;
    access(serde_json::json!({
        "op": "CopyObject", "bucket": i.bucket, "key": i.key, "size": meta.size,
        "method": copied.method.name(), "bytes": copied.bytes,
    }));
    let mut result = CopyObjectResult {
        e_tag: Some(etag(&meta.etag)),
        last_modified: Some(Timestamp::from(std::time::SystemTime::now())),
        ..Default::default()
    };
    put_checksum!(result, meta.checksum.as_ref());
    let mut res = S3Response::new(CopyObjectOutput {
        copy_object_result: Some(result),
        version_id: written_version(&meta),
        copy_source_version_id: shown_source,
        ..Default::default()
    });
    add_xml_checksum(&mut res, "CopyObjectResult", 1, meta.checksum.as_ref());
    Ok(res)
}

pub(super) async fn put_object_tagging(
    g: &S3Gateway,
    req: S3Request<PutObjectTaggingInput>,
) -> S3Result<S3Response<PutObjectTaggingOutput>> {
    let i = req.input;
    let tags = crate::tagging::check_set(tag_pairs(&i.tagging)).map_err(tag_error)?;
    let v = version_param(i.version_id.as_deref()).map(str::to_string);
    let (b, k) = (i.bucket, i.key);
    let version_id = set_version_tags(g, b, k, v, tags).await?;
    Ok(S3Response::new(PutObjectTaggingOutput { version_id }))
}

pub(super) async fn get_object_tagging(
    g: &S3Gateway,
    req: S3Request<GetObjectTaggingInput>,
) -> S3Result<S3Response<GetObjectTaggingOutput>> {
    let i = req.input;
    let v = version_param(i.version_id.as_deref()).map(str::to_string);
    let (b, k) = (i.bucket, i.key);
    let m = g
        .run(move |s| match &v {
            Some(v) => crate::store::versions::read(s, &b, &k, Some(v)),
            None => s.open_object(&b, &k).map(|(_, i)| i.meta),
        })
        .await?;
    Ok(S3Response::new(GetObjectTaggingOutput {
        version_id: shown_version(&m),
        tag_set: tag_set_out(m.tags),
    }))
}

pub(super) async fn delete_object_tagging(
    g: &S3Gateway,
    req: S3Request<DeleteObjectTaggingInput>,
) -> S3Result<S3Response<DeleteObjectTaggingOutput>> {
    let i = req.input;
    let v = version_param(i.version_id.as_deref()).map(str::to_string);
    let (b, k) = (i.bucket, i.key);
    let version_id = set_version_tags(g, b, k, v, Vec::new()).await?;
    Ok(S3Response::new(DeleteObjectTaggingOutput { version_id }))
}

/// Replace the tags of version `v` of `k` (the current one without `v`);
/// the version id to answer with.
async fn set_version_tags(
    g: &S3Gateway,
    b: String,
    k: String,
    v: Option<String>,
    tags: Vec<crate::tagging::Tag>,
) -> S3Result<Option<String>> {
    g.run(move |s| match v {
        Some(v) => {
            crate::store::versions::update(s, &b, &k, Some(&v), |m| {
                m.tags = tags;
                Ok(())
            })?;
            Ok(Some(v))
        }
        None => s.set_tags(&b, &k, tags).map(|()| None),
    })
    .await
}

pub(super) async fn delete_objects(
    g: &S3Gateway,
    req: S3Request<DeleteObjectsInput>,
) -> S3Result<S3Response<DeleteObjectsOutput>> {
    // One decision for every key (the policy's resource `bucket/*`).
    let bypass = bypass_of(g, &req, &req.input.bucket, "*").await?;
    let i = req.input;
    let bucket = i.bucket;
    let quiet = i.delete.quiet.unwrap_or(false);
    if i.delete.objects.len() > 1000 {
        return Err(to_s3_error(Error::MalformedXml));
    }
    let keys: Vec<(String, Option<String>)> = i
        .delete
        .objects
        .into_iter()
        .map(|o| {
            (
                o.key,
                version_param(o.version_id.as_deref()).map(str::to_string),
            )
        })
        .collect();
    let results = g
        .run(move |s| {
            s.head_bucket(&bucket)?;
            Ok(keys
                .into_iter()
                .map(|(k, v)| {
                    let r = crate::store::versions::delete(s, &bucket, &k, v.as_deref(), bypass);
                    (k, v, r)
                })
                .collect::<Vec<_>>())
        })
        .await?;
    let mut deleted = Vec::new();
    let mut errors = Vec::new();
    for (k, v, r) in results {
        match r {
            Ok(d) if !quiet => deleted.push(DeletedObject {
                key: Some(k),
                delete_marker: (d.delete_marker || v.is_some()).then_some(d.delete_marker),
                delete_marker_version_id: d
                    .version_id
                    .clone()
                    .filter(|_| d.delete_marker && v.is_none()),
                version_id: v,
            }),
            Ok(_) => {}
            Err(e) => {
                let se = to_s3_error(e);
                errors.push(s3s::dto::Error {
                    code: Some(se.code().as_str().to_string()),
                    key: Some(k),
                    message: se.message().map(str::to_string),
                    version_id: v,
                });
            }
        }
    }
    Ok(S3Response::new(DeleteObjectsOutput {
        deleted: Some(deleted),
        errors: (!errors.is_empty()).then_some(errors),
        ..Default::default()
    }))
}
