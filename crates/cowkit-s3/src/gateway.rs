//! The `s3s::S3` implementation: S3 requests mapped onto [`Store`]. Every
//! filesystem call runs on tokio's blocking pool.

use std::collections::{BTreeMap, HashMap};
use std::io::{Seek, SeekFrom};
use std::sync::{Arc, Mutex, Weak};

use futures_util::StreamExt;
use md5::Digest;
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Response, S3Result, S3};
use tokio::io::AsyncReadExt;

use crate::error::Error;
use crate::fsutil::NewFile;
use crate::list::{self, Listing};
use crate::multipart::{bare_etag, Completed, Prepared};
use crate::store::Store;

/// Log target of the structured access log (one JSON object per line).
pub const ACCESS_LOG: &str = "cowkit_s3::access";

/// The gateway: an [`S3`] implementation on a [`Store`].
#[derive(Debug, Clone)]
pub struct S3Gateway {
    store: Arc<Store>,
    /// One lock per upload id being completed.
    locks: Arc<Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>>,
}

/// Map a store error to the S3 error a client expects.
pub fn to_s3_error(e: Error) -> S3Error {
    use S3ErrorCode as C;
    let (code, status) = match &e {
        Error::Fs(_) | Error::Corrupt { .. } => {
            log::error!("{}", crate::error_chain(&e));
            (C::InternalError, None)
        }
        Error::NoSuchBucket { .. } => (C::NoSuchBucket, None),
        Error::BucketExists { .. } => (C::BucketAlreadyOwnedByYou, None),
        Error::BucketNotEmpty { .. } => (C::BucketNotEmpty, None),
        Error::InvalidBucketName { .. } => (C::InvalidBucketName, None),
        Error::InvalidKey { key, .. } if key.len() > crate::names::MAX_KEY_LEN => {
            (C::KeyTooLongError, None)
        }
        Error::InvalidKey { .. } => (C::InvalidArgument, None),
        Error::KeyConflict { .. } => (
            C::Custom("KeyConflict".into()),
            Some(hyper::StatusCode::CONFLICT),
        ),
        Error::NoSuchKey { .. } => (C::NoSuchKey, None),
        Error::NoSuchUpload { .. } => (C::NoSuchUpload, None),
        Error::InvalidPart { .. } => (C::InvalidPart, None),
        Error::InvalidPartOrder { .. } => (C::InvalidPartOrder, None),
        Error::EntityTooSmall { .. } => (C::EntityTooSmall, None),
        Error::InvalidArgument(_) => (C::InvalidArgument, None),
        Error::InvalidRange { .. } => (C::InvalidRange, None),
        Error::BadDigest { .. } => (C::BadDigest, None),
    };
    let msg = match code {
        C::InternalError => "internal error; see the server log".to_string(),
        _ => e.to_string(),
    };
    let mut err = S3Error::with_message(code, msg);
    if let Some(s) = status {
        err.set_status_code(s);
    }
    err
}

fn internal(e: impl std::fmt::Display) -> S3Error {
    log::error!("{e}");
    s3_error!(InternalError, "internal error; see the server log")
}

fn etag(s: &str) -> ETag {
    ETag::Strong(s.to_string())
}

fn metadata_of(m: Option<Metadata>) -> BTreeMap<String, String> {
    m.unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect()
}

fn metadata_out(m: &BTreeMap<String, String>) -> Option<Metadata> {
    (!m.is_empty()).then(|| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

fn access(v: serde_json::Value) {
    log::info!(target: ACCESS_LOG, "{v}");
}

impl S3Gateway {
    /// A gateway on `store`.
    pub fn new(store: Store) -> Self {
        S3Gateway {
            store: Arc::new(store),
            locks: Arc::default(),
        }
    }

    /// The store.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    async fn run<T, F>(&self, f: F) -> S3Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Store) -> crate::Result<T> + Send + 'static,
    {
        let store = self.store.clone();
        tokio::task::spawn_blocking(move || f(&store))
            .await
            .map_err(internal)?
            .map_err(to_s3_error)
    }

    /// Stream `body` into `file` on the blocking pool, computing its MD5.
    async fn receive(
        &self,
        body: Option<StreamingBlob>,
        file: NewFile,
        content_md5: Option<&str>,
    ) -> S3Result<(NewFile, String, u64)> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(4);
        let writer = tokio::task::spawn_blocking(move || {
            let mut file = file;
            let mut h = md5::Md5::new();
            let mut n = 0u64;
            while let Some(chunk) = rx.blocking_recv() {
                h.update(&chunk);
                n += chunk.len() as u64;
                file.write_all(&chunk)?;
            }
            Ok::<_, Error>((file, hex::encode(h.finalize()), n))
        });
        let mut failed = None;
        if let Some(mut body) = body {
            while let Some(chunk) = body.next().await {
                match chunk {
                    Ok(c) => {
                        if tx.send(c).await.is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
        }
        drop(tx);
        let res = writer.await.map_err(internal)?.map_err(to_s3_error)?;
        if let Some(e) = failed {
            return Err(s3_error!(
                IncompleteBody,
                "the request body ended early: {e}"
            ));
        }
        if let Some(want) = content_md5 {
            use base64_lite::decode;
            let got = hex::decode(&res.1).unwrap_or_default();
            if decode(want).as_deref() != Some(&got[..]) {
                return Err(to_s3_error(Error::BadDigest {
                    expected: want.to_string(),
                    actual: res.1,
                }));
            }
        }
        Ok(res)
    }

    async fn lock_upload(&self, id: &str) -> tokio::sync::OwnedMutexGuard<()> {
        let m = {
            let mut map = self.locks.lock().expect("lock map");
            map.retain(|_, w| w.strong_count() > 0);
            match map.get(id).and_then(Weak::upgrade) {
                Some(m) => m,
                None => {
                    let m = Arc::new(tokio::sync::Mutex::new(()));
                    map.insert(id.to_string(), Arc::downgrade(&m));
                    m
                }
            }
        };
        m.lock_owned().await
    }
}

/// Minimal base64 decoding for `Content-MD5`.
mod base64_lite {
    pub fn decode(s: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let mut acc = 0u32;
        let mut bits = 0;
        for c in s.trim().bytes() {
            let v = match c {
                b'A'..=b'Z' => c - b'A',
                b'a'..=b'z' => c - b'a' + 26,
                b'0'..=b'9' => c - b'0' + 52,
                b'+' => 62,
                b'/' => 63,
                b'=' => break,
                _ => return None,
            };
            acc = (acc << 6) | u32::from(v);
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        Some(out)
    }
}

fn copy_source(cs: &CopySource) -> S3Result<(String, String)> {
    match cs {
        CopySource::Bucket { bucket, key, .. } => Ok((bucket.to_string(), key.to_string())),
        _ => Err(s3_error!(
            NotImplemented,
            "only bucket/key copy sources are supported"
        )),
    }
}

fn parse_range(r: &str, what: &str) -> S3Result<(u64, u64)> {
    let bad = || S3Error::with_message(S3ErrorCode::InvalidArgument, format!("bad {what} `{r}`"));
    let rest = r.trim().strip_prefix("bytes=").ok_or_else(bad)?;
    let (a, b) = rest.split_once('-').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
}

#[async_trait::async_trait]
impl S3 for S3Gateway {
    async fn list_buckets(
        &self,
        _req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let buckets = self.run(|s| s.list_buckets()).await?;
        let buckets = buckets
            .into_iter()
            .map(|b| Bucket {
                name: Some(b.name),
                creation_date: Some(Timestamp::from(b.created)),
                ..Default::default()
            })
            .collect();
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            owner: Some(Owner {
                display_name: Some("cowkit".into()),
                id: Some("cowkit".into()),
            }),
            ..Default::default()
        }))
    }

    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let b = req.input.bucket;
        let loc = format!("/{b}");
        self.run(move |s| s.create_bucket(&b)).await?;
        Ok(S3Response::new(CreateBucketOutput {
            location: Some(loc),
        }))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        let b = req.input.bucket;
        self.run(move |s| s.head_bucket(&b)).await?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let b = req.input.bucket;
        self.run(move |s| s.delete_bucket(&b)).await?;
        Ok(S3Response::new(DeleteBucketOutput::default()))
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let i = req.input;
        let (bucket, key) = (i.bucket, i.key);
        {
            let (b, k) = (bucket.clone(), key.clone());
            self.run(move |s| {
                crate::names::check_key(&k)?;
                s.head_bucket(&b)
            })
            .await?;
        }
        let file = self.run(|s| s.new_file()).await?;
        let (file, md5, size) = self.receive(i.body, file, i.content_md5.as_deref()).await?;
        if let Some(len) = i.content_length {
            if len as u64 != size {
                return Err(s3_error!(IncompleteBody, "got {size} bytes of {len}"));
            }
        }
        let meta = crate::store::ObjectMeta {
            etag: md5.clone(),
            content_type: i.content_type,
            metadata: metadata_of(i.metadata),
            ..Default::default()
        };
        let (b, k) = (bucket.clone(), key.clone());
        self.run(move |s| s.commit_object(&b, &k, file, meta))
            .await?;
        access(serde_json::json!({"op": "PutObject", "bucket": bucket, "key": key, "size": size}));
        Ok(S3Response::new(PutObjectOutput {
            e_tag: Some(etag(&md5)),
            size: Some(size as i64),
            ..Default::default()
        }))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let i = req.input;
        let (b, k) = (i.bucket, i.key);
        let (file, info) = self.run(move |s| s.open_object(&b, &k)).await?;
        let size = info.meta.size;
        let (start, end, content_range) = match &i.range {
            None => (0, size, None),
            Some(r) => {
                let rr = r.check(size).map_err(|_| {
                    to_s3_error(Error::InvalidRange {
                        range: r.to_header_string(),
                        size,
                    })
                })?;
                let cr = format!("bytes {}-{}/{size}", rr.start, rr.end.saturating_sub(1));
                (rr.start, rr.end, Some(cr))
            }
        };
        let mut file = file;
        file.seek(SeekFrom::Start(start)).map_err(internal)?;
        let reader = tokio::fs::File::from_std(file).take(end - start);
        let stream = tokio_util::io::ReaderStream::with_capacity(reader, 1 << 20);
        Ok(S3Response::new(GetObjectOutput {
            body: Some(StreamingBlob::wrap(stream)),
            content_length: Some((end - start) as i64),
            content_range,
            accept_ranges: Some("bytes".into()),
            content_type: info.meta.content_type.clone(),
            e_tag: Some(etag(&info.meta.etag)),
            last_modified: Some(Timestamp::from(info.mtime)),
            metadata: metadata_out(&info.meta.metadata),
            ..Default::default()
        }))
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let i = req.input;
        let (b, k) = (i.bucket, i.key);
        let (_, info) = self.run(move |s| s.open_object(&b, &k)).await?;
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(info.meta.size as i64),
            accept_ranges: Some("bytes".into()),
            content_type: info.meta.content_type.clone(),
            e_tag: Some(etag(&info.meta.etag)),
            last_modified: Some(Timestamp::from(info.mtime)),
            metadata: metadata_out(&info.meta.metadata),
            ..Default::default()
        }))
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let i = req.input;
        let (b, k) = (i.bucket, i.key);
        self.run(move |s| s.delete_object(&b, &k)).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let i = req.input;
        let bucket = i.bucket;
        let quiet = i.delete.quiet.unwrap_or(false);
        let keys: Vec<String> = i.delete.objects.into_iter().map(|o| o.key).collect();
        let results = self
            .run(move |s| {
                s.head_bucket(&bucket)?;
                Ok(keys
                    .into_iter()
                    .map(|k| {
                        let r = s.delete_object(&bucket, &k);
                        (k, r)
                    })
                    .collect::<Vec<_>>())
            })
            .await?;
        let mut deleted = Vec::new();
        let mut errors = Vec::new();
        for (k, r) in results {
            match r {
                Ok(()) if !quiet => deleted.push(DeletedObject {
                    key: Some(k),
                    ..Default::default()
                }),
                Ok(()) => {}
                Err(e) => {
                    let se = to_s3_error(e);
                    errors.push(s3s::dto::Error {
                        code: Some(se.code().as_str().to_string()),
                        key: Some(k),
                        message: se.message().map(str::to_string),
                        version_id: None,
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

    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        let i = req.input;
        let (sb, sk) = copy_source(&i.copy_source)?;
        let replace = i
            .metadata_directive
            .as_ref()
            .is_some_and(|d| d.as_str() == MetadataDirective::REPLACE)
            .then(|| (i.content_type.clone(), metadata_of(i.metadata.clone())));
        let (b, k) = (i.bucket.clone(), i.key.clone());
        let (meta, copied) = self
            .run(move |s| s.copy_object(&sb, &sk, &b, &k, replace))
            .await?;
        access(serde_json::json!({
            "op": "CopyObject", "bucket": i.bucket, "key": i.key, "size": meta.size,
            "method": copied.method.name(), "bytes": copied.bytes,
        }));
        Ok(S3Response::new(CopyObjectOutput {
            copy_object_result: Some(CopyObjectResult {
                e_tag: Some(etag(&meta.etag)),
                last_modified: Some(Timestamp::from(std::time::SystemTime::now())),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let i = req.input;
        let q = list::Query {
            prefix: i.prefix.clone().unwrap_or_default(),
            delimiter: i.delimiter.clone().filter(|d| !d.is_empty()),
            after: i.marker.clone().filter(|m| !m.is_empty()),
            max_keys: i.max_keys.unwrap_or(1000),
        };
        let bucket = i.bucket.clone();
        let l: Listing = self.run(move |s| list::list(s, &bucket, &q)).await?;
        let enc = list::Encoder::new(i.encoding_type.as_ref().map(|e| e.as_str()));
        let next_marker = l.truncated.then(|| l.last.clone()).flatten();
        Ok(S3Response::new(ListObjectsOutput {
            name: Some(i.bucket),
            prefix: Some(enc.enc(&i.prefix.unwrap_or_default())),
            marker: i.marker.map(|m| enc.enc(&m)),
            max_keys: i.max_keys.or(Some(1000)),
            is_truncated: Some(l.truncated),
            next_marker: next_marker.map(|m| enc.enc(&m)),
            delimiter: i.delimiter.map(|d| enc.enc(&d)),
            encoding_type: i.encoding_type,
            contents: Some(l.objects(&enc)),
            common_prefixes: Some(l.prefixes(&enc)),
            ..Default::default()
        }))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let i = req.input;
        let after = match &i.continuation_token {
            Some(t) => Some(list::decode_token(t).ok_or_else(|| {
                s3_error!(InvalidArgument, "the continuation token is not valid")
            })?),
            None => i.start_after.clone().filter(|s| !s.is_empty()),
        };
        let q = list::Query {
            prefix: i.prefix.clone().unwrap_or_default(),
            delimiter: i.delimiter.clone().filter(|d| !d.is_empty()),
            after,
            max_keys: i.max_keys.unwrap_or(1000),
        };
        let bucket = i.bucket.clone();
        let l: Listing = self.run(move |s| list::list(s, &bucket, &q)).await?;
        let enc = list::Encoder::new(i.encoding_type.as_ref().map(|e| e.as_str()));
        let contents = l.objects(&enc);
        let prefixes = l.prefixes(&enc);
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(i.bucket),
            prefix: Some(enc.enc(&i.prefix.unwrap_or_default())),
            max_keys: i.max_keys.or(Some(1000)),
            key_count: Some((contents.len() + prefixes.len()) as i32),
            continuation_token: i.continuation_token,
            is_truncated: Some(l.truncated),
            next_continuation_token: if l.truncated {
                l.last.as_deref().map(list::encode_token)
            } else {
                None
            },
            delimiter: i.delimiter.map(|d| enc.enc(&d)),
            encoding_type: i.encoding_type,
            start_after: i.start_after.map(|s| enc.enc(&s)),
            contents: Some(contents),
            common_prefixes: Some(prefixes),
            ..Default::default()
        }))
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let i = req.input;
        let (b, k) = (i.bucket.clone(), i.key.clone());
        let (ct, md) = (i.content_type, metadata_of(i.metadata));
        let id = self.run(move |s| s.create_upload(&b, &k, ct, md)).await?;
        Ok(S3Response::new(CreateMultipartUploadOutput {
            bucket: Some(i.bucket),
            key: Some(i.key),
            upload_id: Some(id),
            ..Default::default()
        }))
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let i = req.input;
        let (id, b, k, n) = (
            i.upload_id.clone(),
            i.bucket.clone(),
            i.key.clone(),
            i.part_number,
        );
        let file = self.run(move |s| s.new_part_file(&id, &b, &k, n)).await?;
        let (file, md5, size) = self.receive(i.body, file, i.content_md5.as_deref()).await?;
        if let Some(len) = i.content_length {
            if len as u64 != size {
                return Err(s3_error!(IncompleteBody, "got {size} bytes of {len}"));
            }
        }
        let (id, b, k) = (i.upload_id, i.bucket, i.key);
        let rec = self
            .run(move |s| s.commit_part(&id, &b, &k, n, file, md5))
            .await?;
        Ok(S3Response::new(UploadPartOutput {
            e_tag: Some(etag(&rec.md5)),
            ..Default::default()
        }))
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        let i = req.input;
        let (sb, sk) = copy_source(&i.copy_source)?;
        let range = match &i.copy_source_range {
            Some(r) => Some(parse_range(r, "x-amz-copy-source-range")?),
            None => None,
        };
        let (id, b, k, n) = (
            i.upload_id.clone(),
            i.bucket.clone(),
            i.key.clone(),
            i.part_number,
        );
        let (rec, copied) = self
            .run(move |s| s.copy_part(&id, &b, &k, n, &sb, &sk, range))
            .await?;
        access(serde_json::json!({
            "op": "UploadPartCopy", "bucket": i.bucket, "key": i.key, "upload_id": i.upload_id,
            "part": n, "size": rec.size, "method": copied.method.name(), "bytes": copied.bytes,
        }));
        Ok(S3Response::new(UploadPartCopyOutput {
            copy_part_result: Some(CopyPartResult {
                e_tag: Some(etag(&rec.md5)),
                last_modified: Some(Timestamp::from(std::time::SystemTime::now())),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        let i = req.input;
        let (id, b, k) = (i.upload_id.clone(), i.bucket.clone(), i.key.clone());
        let parts = self.run(move |s| s.list_parts(&id, &b, &k)).await?;
        let marker = i.part_number_marker.unwrap_or(0);
        let max = i.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
        let rest: Vec<_> = parts.into_iter().filter(|p| p.number > marker).collect();
        let truncated = rest.len() > max;
        let page: Vec<_> = rest.into_iter().take(max).collect();
        let next = page.last().map(|p| p.number);
        Ok(S3Response::new(ListPartsOutput {
            bucket: Some(i.bucket),
            key: Some(i.key),
            upload_id: Some(i.upload_id),
            max_parts: Some(max as i32),
            part_number_marker: i.part_number_marker,
            is_truncated: Some(truncated),
            next_part_number_marker: if truncated { next } else { None },
            parts: Some(
                page.into_iter()
                    .map(|p| Part {
                        e_tag: Some(etag(&p.md5)),
                        part_number: Some(p.number),
                        size: Some(p.size as i64),
                        last_modified: Some(Timestamp::from(
                            std::time::SystemTime::UNIX_EPOCH
                                + std::time::Duration::from_secs(p.modified),
                        )),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }))
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        let i = req.input;
        let b = i.bucket.clone();
        let ups = self
            .run(move |s| {
                s.head_bucket(&b)?;
                s.list_uploads(&b)
            })
            .await?;
        let prefix = i.prefix.clone().unwrap_or_default();
        let key_marker = i.key_marker.clone().unwrap_or_default();
        let id_marker = i.upload_id_marker.clone().unwrap_or_default();
        let max = i.max_uploads.unwrap_or(1000).clamp(0, 1000) as usize;
        let enc = list::Encoder::new(i.encoding_type.as_ref().map(|e| e.as_str()));
        let rest: Vec<_> = ups
            .into_iter()
            .filter(|u| !u.completed && u.key.starts_with(&prefix))
            .filter(|u| {
                key_marker.is_empty()
                    || u.key > key_marker
                    || (u.key == key_marker && !id_marker.is_empty() && u.id > id_marker)
            })
            .collect();
        let truncated = rest.len() > max;
        let page: Vec<_> = rest.into_iter().take(max).collect();
        let last = page.last().map(|u| (u.key.clone(), u.id.clone()));
        Ok(S3Response::new(ListMultipartUploadsOutput {
            bucket: Some(i.bucket),
            prefix: i.prefix.map(|p| enc.enc(&p)),
            key_marker: i.key_marker.map(|m| enc.enc(&m)),
            upload_id_marker: i.upload_id_marker,
            max_uploads: Some(max as i32),
            is_truncated: Some(truncated),
            next_key_marker: last.as_ref().filter(|_| truncated).map(|l| enc.enc(&l.0)),
            next_upload_id_marker: last.filter(|_| truncated).map(|l| l.1),
            encoding_type: i.encoding_type,
            uploads: Some(
                page.into_iter()
                    .map(|u| MultipartUpload {
                        key: Some(enc.enc(&u.key)),
                        upload_id: Some(u.id),
                        initiated: Some(Timestamp::from(u.initiated)),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }))
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let i = req.input;
        let guard = self.lock_upload(&i.upload_id).await;
        let (id, b, k) = (i.upload_id, i.bucket, i.key);
        self.run(move |s| s.abort_upload(&id, &b, &k)).await?;
        drop(guard);
        Ok(S3Response::new(AbortMultipartUploadOutput::default()))
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let i = req.input;
        let requested: Vec<(i32, String)> = i
            .multipart_upload
            .and_then(|m| m.parts)
            .unwrap_or_default()
            .into_iter()
            .map(|p| {
                (
                    p.part_number.unwrap_or(0),
                    p.e_tag
                        .map(|e| bare_etag(e.value()).to_string())
                        .unwrap_or_default(),
                )
            })
            .collect();
        // Completes of one upload run one at a time; a second one waits and
        // then finds the first one's answer.
        let guard = self.lock_upload(&i.upload_id).await;
        let (id, b, k) = (i.upload_id.clone(), i.bucket.clone(), i.key.clone());
        let prepared = self
            .run(move |s| s.complete_prepare(&id, &b, &k, requested))
            .await?;
        let output = |r: &crate::multipart::CompletedRecord| CompleteMultipartUploadOutput {
            bucket: Some(r.bucket.clone()),
            key: Some(r.key.clone()),
            e_tag: Some(etag(&r.etag)),
            location: Some(format!("/{}/{}", r.bucket, r.key)),
            ..Default::default()
        };
        let plan = match prepared {
            Prepared::Done(r) => {
                drop(guard);
                access(serde_json::json!({
                    "op": "CompleteMultipartUpload", "bucket": r.bucket, "key": r.key,
                    "upload_id": i.upload_id, "retry": true, "etag": r.etag,
                }));
                return Ok(S3Response::new(output(&r)));
            }
            Prepared::Assemble(plan) => plan,
        };
        // The guard goes with the work: a client that hangs up does not
        // release the lock while the assembly still runs.
        let store = self.store.clone();
        let mut work = tokio::task::spawn_blocking(move || {
            let _guard = guard;
            store.complete_assemble(plan)
        });
        let upload_id = i.upload_id.clone();
        let finish =
            move |res: crate::Result<Completed>| -> S3Result<CompleteMultipartUploadOutput> {
                let c = res.map_err(to_s3_error)?;
                access(serde_json::json!({
                    "op": "CompleteMultipartUpload", "bucket": c.record.bucket, "key": c.record.key,
                    "upload_id": upload_id, "parts": c.record.parts.len(), "size": c.record.size,
                    "etag": c.record.etag, "bytes_cloned": c.bytes.cloned,
                    "bytes_copied": c.bytes.copied, "bytes_written": c.bytes.written,
                    "unaligned_parts": c.unaligned_parts, "ms": c.elapsed.as_secs_f64() * 1e3,
                }));
                Ok(output(&c.record))
            };
        // A complete that clones is done in milliseconds: answer it plainly
        // (an error keeps its HTTP status). One that copies may take long:
        // after `Options::keepalive_after` the response starts and s3s sends whitespace
        // until the XML is ready, as S3 does.
        if let Ok(res) = tokio::time::timeout(self.store.options().keepalive_after, &mut work).await
        {
            return Ok(S3Response::new(finish(res.map_err(internal)?)?));
        }
        let fut = async move { finish(work.await.map_err(internal)?) };
        Ok(S3Response::new(CompleteMultipartUploadOutput {
            future: Some(Box::pin(fut)),
            ..Default::default()
        }))
    }
}
