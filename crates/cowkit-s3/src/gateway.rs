//! The `s3s::S3` implementation: S3 requests mapped onto [`Store`]. Every
//! filesystem call runs on tokio's blocking pool.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::StreamExt;
use md5::Digest;
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Response, S3Result, S3};

use crate::checksum::{Algorithm, Checksum, Hasher, Type};
use crate::conditions::{Conditions, Current, Outcome, WriteOutcome};
use crate::error::Error;
use crate::fsutil::NewFile;
use crate::list::{self, Listing};
use crate::multipart::{bare_etag, Completed, Prepared};
use crate::store::Store;

/// A response header carrying an extra element of an error document
/// (`Name=value`; s3s 0.14 writes only Code, Message, Resource and
/// RequestId): the server moves them into the XML.
pub const ERROR_ELEMENT: &str = "x-cowkit-error-element";

/// Give `err` extra `<Error>` elements (see [`ERROR_ELEMENT`]).
fn with_error_elements(err: &mut S3Error, elements: &[(&str, &str)]) {
    let mut h = http::HeaderMap::new();
    for (k, v) in elements {
        if let Ok(v) = http::HeaderValue::from_str(&format!("{k}={v}")) {
            h.append(ERROR_ELEMENT, v);
        }
    }
    err.set_headers(h);
}

/// A response header asking the server to add an element to a successful
/// response's XML document: `Parent#n/Name=value` puts
/// `<Name>value</Name>` at the end of the `n`-th (from 1) `Parent`
/// element. s3s 0.14's DTOs have no field for the checksums of SHA-512,
/// MD5 and the XXHASH family, and always quote an ETag.
pub const XML_ELEMENT: &str = "x-cowkit-xml-element";

/// A response header carrying the HTTP status a successful response must
/// have where s3s 0.14 writes another (PutBucketTagging: S3 answers 204,
/// s3s 200); the server applies it.
pub const STATUS: &str = "x-cowkit-status";

/// Ask for `<name>value</name>` in the `nth` `parent` of the response's XML
/// (see [`XML_ELEMENT`]).
fn add_xml_element<T>(res: &mut S3Response<T>, parent: &str, nth: usize, name: &str, value: &str) {
    if let Ok(v) = http::HeaderValue::from_str(&format!("{parent}#{nth}/{name}={value}")) {
        res.headers.append(XML_ELEMENT, v);
    }
}

/// The checksum element of `c` in the `nth` `parent`, when s3s has no
/// field for its algorithm.
fn add_xml_checksum<T>(res: &mut S3Response<T>, parent: &str, nth: usize, c: Option<&Checksum>) {
    if let Some(c) = c.filter(|c| !c.algorithm.in_s3s()) {
        let name = format!("Checksum{}", c.algorithm.name());
        add_xml_element(res, parent, nth, &name, &c.value);
    }
}

/// GetObject bodies up to this size are read whole and sent with the
/// response head.
const SMALL_BODY: u64 = 16 << 10;

/// Log target of the structured access log (one JSON object per line).
pub const ACCESS_LOG: &str = "cowkit_s3::access";

/// The gateway: an [`S3`] implementation on a [`Store`].
#[derive(Debug, Clone)]
pub struct S3Gateway {
    store: Arc<Store>,
    /// The region buckets are in (`us-east-1` unless set).
    region: String,
}

/// Map a store error to the S3 error a client expects.
pub fn to_s3_error(e: Error) -> S3Error {
    use S3ErrorCode as C;
    let (code, status) = match &e {
        Error::Fs(fe)
            if matches!(
                cowkit_fs::error::errno_of(fe),
                Some(rustix::io::Errno::NOSPC | rustix::io::Errno::DQUOT)
            ) =>
        {
            log::error!("{}", crate::error_chain(&e));
            let mut err = S3Error::with_message(
                C::Custom("InsufficientStorage".into()),
                "No space left on device.",
            );
            err.set_status_code(hyper::StatusCode::INSUFFICIENT_STORAGE);
            return err;
        }
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
        Error::KeyPath { .. } => {
            // S3 answers a dot segment in the path with a bare 400, which
            // clients report as code `400`, message `Bad Request` (the
            // aws CLI's "An error occurred (400) ... Bad Request"); the
            // same in an error document, for clients that need one.
            let mut err = S3Error::with_message(C::Custom("400".into()), "Bad Request");
            err.set_status_code(hyper::StatusCode::BAD_REQUEST);
            log::debug!("{e}");
            return err;
        }
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
        Error::BadDigest { expected, actual } => {
            // S3 names both digests: the one computed in base64, the one
            // given in hex.
            use base64::Engine as _;
            let calculated = hex::decode(actual)
                .map(|b| base64::engine::general_purpose::STANDARD.encode(b))
                .unwrap_or_else(|_| actual.clone());
            let given = base64_lite::decode(expected)
                .map(hex::encode)
                .unwrap_or_else(|| expected.clone());
            let mut err = S3Error::with_message(
                C::BadDigest,
                "The Content-MD5 you specified did not match what we received.",
            );
            with_error_elements(
                &mut err,
                &[
                    ("CalculatedDigest", &calculated),
                    ("ExpectedDigest", &given),
                ],
            );
            return err;
        }
        Error::InvalidRequest(m) => return S3Error::with_message(C::InvalidRequest, m.clone()),
        Error::ChecksumMismatch { .. } | Error::PartChecksum { .. } => {
            return S3Error::with_message(C::BadDigest, e.to_string())
        }
        Error::MalformedXml => (C::MalformedXML, None),
        Error::InvalidTag(t) => return tag_error(*t),
        Error::DirectoryObjectContainsData => {
            let mut err = S3Error::with_message(
                C::Custom("DirectoryObjectContainsData".into()),
                e.to_string(),
            );
            err.set_status_code(hyper::StatusCode::BAD_REQUEST);
            return err;
        }
    };
    let msg = match code {
        C::InternalError => "internal error; see the server log".to_string(),
        _ => match standard_message(&code) {
            Some(m) => {
                log::debug!("{code:?}: {e}");
                m.to_string()
            }
            None => e.to_string(),
        },
    };
    let mut err = S3Error::with_message(code, msg);
    if let Some(s) = status {
        err.set_status_code(s);
    }
    err
}

/// The message S3 gives with `code` (clients and conformance suites compare
/// it); the details go to the debug log.
pub fn standard_message(code: &S3ErrorCode) -> Option<&'static str> {
    use S3ErrorCode as C;
    Some(match code {
        C::NoSuchBucket => "The specified bucket does not exist.",
        C::NoSuchKey => "The specified key does not exist.",
        C::NoSuchUpload => "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
        C::BucketNotEmpty => "The bucket you tried to delete is not empty.",
        C::BucketAlreadyOwnedByYou => "Your previous request to create the named bucket succeeded and you already own it.",
        C::InvalidBucketName => "The specified bucket is not valid.",
        C::InvalidPart => "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
        C::InvalidPartOrder => "The list of parts was not in ascending order. Parts must be ordered by part number.",
        C::EntityTooSmall => "Your proposed upload is smaller than the minimum allowed size",
        C::BadDigest => "The Content-MD5 you specified did not match what we received.",
        C::InvalidRange => "The requested range is not satisfiable",
        C::KeyTooLongError => "Your key is too long.",
        C::InvalidDigest => "The Content-Md5 you specified is not valid.",
        C::MalformedXML => "The XML you provided was not well-formed or did not validate against our published schema.",
        C::MetadataTooLarge => "Your metadata headers exceed the maximum allowed metadata size",
        C::PreconditionFailed => "At least one of the pre-conditions you specified did not hold.",
        C::SignatureDoesNotMatch => "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
        C::MethodNotAllowed => "The specified method is not allowed against this resource.",
        C::InvalidAccessKeyId => "The AWS Access Key Id you provided does not exist in our records.",
        _ => return None,
    })
}

/// S3's answer to a refused tag set.
fn tag_error(t: crate::tagging::TagError) -> S3Error {
    use crate::tagging::TagError as T;
    let msg = t.to_string();
    match t {
        T::Encoding => {
            let mut e = S3Error::with_message(S3ErrorCode::InvalidArgument, msg);
            with_error_elements(&mut e, &[("ArgumentName", "x-amz-tagging")]);
            e
        }
        T::Key | T::Value | T::Duplicate => S3Error::with_message(S3ErrorCode::InvalidTag, msg),
        T::TooMany | T::TooManyOnBucket => {
            let mut e = S3Error::with_message(S3ErrorCode::Custom("BadRequest".into()), msg);
            e.set_status_code(http::StatusCode::BAD_REQUEST);
            e
        }
    }
}

/// The tags of an `x-amz-tagging` header (none without one).
fn header_tags(h: Option<&str>) -> S3Result<Vec<crate::tagging::Tag>> {
    h.map_or(Ok(Vec::new()), |h| {
        crate::tagging::parse_header(h).map_err(tag_error)
    })
}

/// The owner S3 reports: the access key the request was signed with.
fn owner_of<T>(req: &S3Request<T>) -> Owner {
    let id = req
        .credentials
        .as_ref()
        .map(|c| c.access_key.clone())
        .unwrap_or_else(|| "anonymous".into());
    Owner {
        display_name: Some(id.clone()),
        id: Some(id),
    }
}

/// The headers S3 stores with an object, from a request.
fn stored_headers(h: &http::HeaderMap) -> BTreeMap<String, String> {
    crate::store::STORED_HEADERS
        .iter()
        .filter_map(|n| {
            let v = h.get(*n)?.to_str().ok()?;
            Some((n.to_string(), v.to_string()))
        })
        .collect()
}

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
        .map(crate::precheck::query_pairs)
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

/// `?partNumber=` on GET and HEAD: in range, and not with a Range.
fn check_part_number(n: Option<i32>, has_range: bool) -> S3Result<()> {
    let Some(n) = n else {
        return Ok(());
    };
    if !(1..=crate::multipart::MAX_PARTS).contains(&n) {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "Part number must be an integer between 1 and 10000, inclusive.",
        ));
    }
    if has_range {
        return Err(invalid_request(
            "Cannot specify both Range header and partNumber query parameter",
        ));
    }
    Ok(())
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

/// The content type of a directory object put without one.
pub const DIRECTORY_CONTENT_TYPE: &str = "application/x-directory";

/// A negative `max-keys`, `max-parts`, `max-uploads`, `max-buckets` or
/// `part-number-marker`.
fn check_max(name: &str, v: Option<i32>) -> S3Result<()> {
    match v {
        Some(n) if n < 0 => {
            log::debug!("negative {name}");
            Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                format!("Argument {n} must be an integer between 0 and 2147483647"),
            ))
        }
        _ => Ok(()),
    }
}

fn internal(e: impl std::fmt::Display) -> S3Error {
    log::error!("{e}");
    s3_error!(InternalError, "internal error; see the server log")
}

/// A request's conditional headers: handed over by the server (which takes
/// them off before s3s parses them), or as s3s let them through.
fn conditions_of<T>(req: &S3Request<T>) -> Option<Conditions> {
    req.extensions
        .get::<Conditions>()
        .cloned()
        .or_else(|| Conditions::from_headers(&req.headers))
}

/// A request's streaming trailer (handed over as an extension by the
/// server's detour, see `server.rs`).
fn trailing_of<T>(req: &S3Request<T>) -> Option<&s3s::TrailingHeaders> {
    req.trailing_headers
        .as_ref()
        .or_else(|| req.extensions.get::<s3s::TrailingHeaders>())
}

/// Marks a request whose aws-chunked body came without `x-amz-trailer`
/// (the server adds one for s3s and takes it off again): a trailer in
/// its body was not declared.
#[derive(Debug, Clone, Copy)]
pub struct UndeclaredTrailer;

/// Part checksums a CompleteMultipartUpload document gave for algorithms
/// s3s 0.14 cannot parse there (the server took them out of it).
#[derive(Debug, Clone)]
pub struct PartChecksums(pub Vec<crate::checksum::PartChecksum>);

/// The `<Tags>` of a CreateBucket document (the server took them out of
/// it: s3s 0.14 has no field for them).
#[derive(Debug, Clone)]
pub struct CreateBucketTags(pub crate::tagging::TagPairs);

/// S3's ARN of a bucket (`x-amz-bucket-arn` on CreateBucket and
/// HeadBucket).
fn with_bucket_arn<T>(mut res: S3Response<T>, bucket: &str) -> S3Response<T> {
    if let Ok(v) = http::HeaderValue::from_str(&format!("arn:aws:s3:::{bucket}")) {
        res.headers.insert("x-amz-bucket-arn", v);
    }
    res
}

fn tag_set_out(tags: Vec<crate::tagging::Tag>) -> TagSet {
    tags.into_iter()
        .map(|t| Tag {
            key: Some(t.key),
            value: Some(t.value),
        })
        .collect()
}

/// A trailer `x-amz-trailer` declares must arrive, and one it does not
/// declare must not.
fn check_trailer<T>(want: &WantChecksum, req: &S3Request<T>) -> S3Result<()> {
    let malformed = || {
        S3Error::with_message(
            S3ErrorCode::Custom("MalformedTrailerError".into()),
            "The request contained trailing data that was not well-formed or did not conform to our published schema.",
        )
    };
    let trailers = trailing_of(req);
    if let Some(a) = want.trailer {
        let name = a.header();
        let arrived = trailers
            .and_then(|t| t.read(|h| h.contains_key(name.as_str())))
            .unwrap_or(false);
        if !arrived {
            return Err(with_status(malformed(), http::StatusCode::BAD_REQUEST));
        }
    }
    let undeclared = req.extensions.get::<UndeclaredTrailer>().is_some()
        && trailers
            .and_then(|t| t.read(|h| !h.is_empty()))
            .unwrap_or(false);
    if undeclared {
        return Err(with_status(malformed(), http::StatusCode::BAD_REQUEST));
    }
    Ok(())
}

fn with_status(mut e: S3Error, status: http::StatusCode) -> S3Error {
    e.set_status_code(status);
    e
}

/// What conditions compare an object with.
fn current(info: &crate::store::ObjectInfo) -> Current<'_> {
    Current {
        etag: &info.meta.etag,
        mtime: info.mtime,
        size: info.meta.size,
    }
}

fn not_implemented_header() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NotImplemented,
        "A header you provided implies functionality that is not implemented.",
    )
}

fn precondition_failed() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::PreconditionFailed,
        "At least one of the pre-conditions you specified did not hold.",
    )
}

fn write_outcome(o: WriteOutcome, bucket: &str, key: &str) -> S3Result<()> {
    match o {
        WriteOutcome::Proceed => Ok(()),
        WriteOutcome::PreconditionFailed => Err(precondition_failed()),
        WriteOutcome::NotImplemented => Err(not_implemented_header()),
        WriteOutcome::NoSuchKey => Err(to_s3_error(Error::NoSuchKey {
            bucket: bucket.to_string(),
            key: key.to_string(),
        })),
    }
}

fn read_outcome(o: Outcome) -> S3Result<()> {
    match o {
        Outcome::Proceed => Ok(()),
        Outcome::PreconditionFailed => Err(precondition_failed()),
        Outcome::NotModified => Err(S3Error::with_message(
            S3ErrorCode::NotModified,
            "Not Modified",
        )),
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
            region: "us-east-1".into(),
        }
    }

    /// The region buckets report (`GetBucketLocation`, `HeadBucket`).
    pub fn with_region(mut self, region: &str) -> Self {
        self.region = region.to_string();
        self
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
        sum: Option<Algorithm>,
        default_crc: bool,
    ) -> S3Result<Received> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(4);
        let writer = tokio::task::spawn_blocking(move || {
            let mut file = file;
            let mut h = md5::Md5::new();
            let mut c = sum.map(Hasher::new);
            // S3's default CRC64NVME, when another checksum is computed.
            let mut d = (default_crc && sum != Some(Algorithm::Crc64Nvme))
                .then(|| Hasher::new(Algorithm::Crc64Nvme));
            let mut n = 0u64;
            while let Some(chunk) = rx.blocking_recv() {
                h.update(&chunk);
                if let Some(c) = &mut c {
                    c.update(&chunk);
                }
                if let Some(d) = &mut d {
                    d.update(&chunk);
                }
                n += chunk.len() as u64;
                file.write_all(&chunk)?;
            }
            let c = c.map(|c| (c.algorithm(), crate::checksum::b64(&c.finish())));
            let d = d.map(|d| crate::checksum::b64(&d.finish()));
            Ok::<_, Error>(Received {
                file,
                md5: hex::encode(h.finalize()),
                size: n,
                checksum: c,
                default_crc: d,
            })
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
            log::debug!("request body: {e}");
            return Err(s3_error!(
                IncompleteBody,
                "The request body terminated unexpectedly"
            ));
        }
        if let Some(want) = content_md5 {
            use base64_lite::decode;
            let got = hex::decode(&res.md5).unwrap_or_default();
            if decode(want).as_deref() != Some(&got[..]) {
                return Err(to_s3_error(Error::BadDigest {
                    expected: want.to_string(),
                    actual: res.md5,
                }));
            }
        }
        Ok(res)
    }

    /// The object checksum recorded by a finished complete.
    async fn completed_checksum(&self, id: &str, bucket: &str, key: &str) -> Option<Checksum> {
        let (id, b, k) = (id.to_string(), bucket.to_string(), key.to_string());
        self.run(move |s| s.completed_record(&id, &b, &k))
            .await
            .ok()
            .flatten()
            .and_then(|r| r.checksum)
    }

    /// S3's conditional writes (see [`Conditions::write`]): checked
    /// before the body is received; a writer racing in between wins.
    async fn check_write_conditions(
        &self,
        bucket: &str,
        key: &str,
        cond: Option<&Conditions>,
    ) -> S3Result<()> {
        let Some(cond) = cond.filter(|c| c.has_write()) else {
            return Ok(());
        };
        if cond.write(None) == WriteOutcome::NotImplemented {
            return Err(not_implemented_header());
        }
        let (b, k) = (bucket.to_string(), key.to_string());
        let cur = self.run(move |s| s.stat_object(&b, &k)).await?;
        write_outcome(cond.write(cur.as_ref().map(current)), bucket, key)
    }

    /// `x-amz-copy-source-if-*` on the source object: checked before the
    /// copy; a writer racing in between wins.
    async fn check_copy_source(&self, cond: &Conditions, bucket: &str, key: &str) -> S3Result<()> {
        let (b, k) = (bucket.to_string(), key.to_string());
        let Some(info) = self.run(move |s| s.stat_object(&b, &k)).await? else {
            // The copy itself reports the missing source.
            return Ok(());
        };
        read_outcome(cond.copy_source(current(&info)))
    }
}

/// Read and drop (up to 8 MiB of) a body the request is refused before
/// reading: an unread body makes hyper close the connection, and clients
/// that reuse it fail their next request.
async fn drain(body: Option<StreamingBlob>) {
    let Some(mut body) = body else {
        return;
    };
    let mut n = 0usize;
    while let Some(Ok(chunk)) = body.next().await {
        n += chunk.len();
        if n > 8 << 20 {
            break;
        }
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

/// A body as received.
struct Received {
    file: NewFile,
    md5: String,
    size: u64,
    checksum: Option<(Algorithm, String)>,
    /// CRC64NVME when asked for besides `checksum`.
    default_crc: Option<String>,
}

/// What a request says about its additional checksum.
#[derive(Debug, Default)]
struct WantChecksum {
    /// `x-amz-checksum-*` header: algorithm and value.
    value: Option<(Algorithm, String)>,
    /// `x-amz-sdk-checksum-algorithm`.
    sdk: Option<Algorithm>,
    /// The algorithm of `x-amz-trailer`.
    trailer: Option<Algorithm>,
}

impl WantChecksum {
    /// The algorithm the body's checksum is computed with.
    fn algorithm(&self) -> Option<Algorithm> {
        self.value
            .as_ref()
            .map(|v| v.0)
            .or(self.trailer)
            .or(self.sdk)
    }
}

fn invalid_request(m: impl Into<String>) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidRequest, m.into())
}

const UNSUPPORTED_ALGORITHM: &str = "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, MD5, SHA1, SHA256, SHA512, XXHASH128, XXHASH3, XXHASH64]";

/// The checksum headers of a request, checked as S3 checks them.
fn want_checksum(h: &http::HeaderMap) -> S3Result<WantChecksum> {
    want_checksum_of(h, false)
}

/// [`want_checksum`]; `composite` accepts `BASE64-N` values (the object
/// checksum a CompleteMultipartUpload may give).
fn want_checksum_of(h: &http::HeaderMap, composite: bool) -> S3Result<WantChecksum> {
    let hv = |k: &str| h.get(k).map(|v| v.to_str().unwrap_or("").to_string());
    let mut values = Vec::new();
    for a in crate::checksum::ALL {
        if let Some(v) = hv(&a.header()) {
            values.push((a, v));
        }
    }
    if values.len() > 1 {
        return Err(invalid_request(
            "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
        ));
    }
    let mut w = WantChecksum::default();
    if let Some((a, v)) = values.pop() {
        let bare = match v.rsplit_once('-') {
            Some((b, n)) if composite && n.parse::<u32>().is_ok() => b,
            _ => v.as_str(),
        };
        if crate::checksum::decode(a, bare).is_none() {
            return Err(invalid_request(format!(
                "Value for {} header is invalid.",
                a.header()
            )));
        }
        w.value = Some((a, v));
    }
    if let Some(t) = hv("x-amz-trailer") {
        let a = t
            .trim()
            .strip_prefix("x-amz-checksum-")
            .and_then(Algorithm::parse)
            .ok_or_else(|| {
                invalid_request("The value specified in the x-amz-trailer header is not supported")
            })?;
        w.trailer = Some(a);
    }
    // A checksum in a header and another in the trailer are two as well.
    if w.value.is_some() && w.trailer.is_some() {
        return Err(invalid_request(
            "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
        ));
    }
    if let Some(sdk) = hv("x-amz-sdk-checksum-algorithm") {
        let a = Algorithm::parse(&sdk).ok_or_else(|| invalid_request(UNSUPPORTED_ALGORITHM))?;
        if let Some((v, _)) = &w.value {
            if *v != a {
                return Err(invalid_request(
                    "Value for x-amz-sdk-checksum-algorithm header is invalid.",
                ));
            }
        }
        if let Some(t) = w.trailer {
            if t != a {
                return Err(invalid_request(
                    "Value for x-amz-sdk-checksum-algorithm header is invalid.",
                ));
            }
        }
        if w.value.is_none() && w.trailer.is_none() {
            return Err(invalid_request("x-amz-sdk-checksum-algorithm specified, but no corresponding x-amz-checksum-* or x-amz-trailer headers were found."));
        }
        w.sdk = Some(a);
    }
    Ok(w)
}

/// Check a received body's checksum against the header or the trailer.
fn verify_checksum(
    want: &WantChecksum,
    got: &Option<(Algorithm, String)>,
    trailers: Option<&s3s::TrailingHeaders>,
) -> S3Result<()> {
    let Some((algo, value)) = got else {
        return Ok(());
    };
    let expected = match &want.value {
        Some((a, v)) if a == algo => Some(v.clone()),
        _ if want.trailer == Some(*algo) => {
            let t = trailers
                .and_then(|t| {
                    t.read(|h| {
                        h.get(algo.header())
                            .map(|v| v.to_str().unwrap_or("").to_string())
                    })
                })
                .flatten();
            match t {
                Some(v) if crate::checksum::decode(*algo, &v).is_none() => {
                    return Err(invalid_request(format!(
                        "Value for {} trailing header is invalid.",
                        algo.header()
                    )))
                }
                t => t,
            }
        }
        _ => None,
    };
    if let Some(e) = expected {
        if e.trim() != value {
            return Err(to_s3_error(Error::ChecksumMismatch {
                algorithm: algo.name(),
            }));
        }
    }
    Ok(())
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

/// Set the `checksum_*` fields and `checksum_type` of an output.
macro_rules! put_checksum {
    ($out:expr, $c:expr) => {
        if let Some(c) = $c {
            put_checksum_value!($out, c);
            $out.checksum_type = Some(ChecksumType::from(c.kind.name().to_string()));
        }
    };
}

/// Set the `checksum_*` field of an output (or a part) for `c`.
macro_rules! put_checksum_value {
    ($out:expr, $c:expr) => {
        let v = Some($c.value.clone());
        match $c.algorithm {
            Algorithm::Crc32 => $out.checksum_crc32 = v,
            Algorithm::Crc32c => $out.checksum_crc32c = v,
            Algorithm::Crc64Nvme => $out.checksum_crc64nvme = v,
            Algorithm::Sha1 => $out.checksum_sha1 = v,
            Algorithm::Sha256 => $out.checksum_sha256 = v,
            // Not in s3s' DTOs: see `with_checksum_header`.
            _ => {}
        }
    };
}

/// A response, with the checksum header s3s has no field for
/// (`x-amz-checksum-sha512`, `-md5`, `-xxhash*`).
fn with_checksum_header<T>(out: T, c: Option<&Checksum>) -> S3Response<T> {
    let mut res = S3Response::new(out);
    if let Some(c) = c.filter(|c| !c.algorithm.in_s3s()) {
        if let (Ok(k), Ok(v)) = (
            http::HeaderName::from_bytes(c.algorithm.header().as_bytes()),
            http::HeaderValue::from_str(&c.value),
        ) {
            res.headers.insert(k, v);
            res.headers.insert(
                "x-amz-checksum-type",
                http::HeaderValue::from_static(c.kind.name()),
            );
        }
    }
    res
}

/// A body that failed because the watch of its aws-chunked framing
/// refused it (see [`crate::chunked`]) gets that refusal, not `e`.
fn chunk_refusal(ext: &http::Extensions, e: S3Error) -> S3Error {
    match ext
        .get::<crate::chunked::ChunkVerdict>()
        .and_then(|v| v.get())
    {
        Some(c) => {
            use crate::chunked::ChunkError as C;
            let code = match c {
                C::TooSmall => S3ErrorCode::Custom("InvalidChunkSizeError".into()),
                C::MalformedTrailer => S3ErrorCode::Custom("MalformedTrailerError".into()),
                C::Incomplete => S3ErrorCode::IncompleteBody,
            };
            let mut err = S3Error::with_message(code, c.to_string());
            err.set_status_code(http::StatusCode::BAD_REQUEST);
            err
        }
        None => e,
    }
}

/// A version id other than `null`, the only version an object has here
/// (no bucket is versioned), is refused as S3 refuses an invalid one.
fn check_version_id(v: Option<&str>) -> S3Result<()> {
    match v {
        Some(v) if v != "null" => {
            let mut e =
                S3Error::with_message(S3ErrorCode::InvalidArgument, "Invalid version id specified");
            with_error_elements(
                &mut e,
                &[("ArgumentName", "versionId"), ("ArgumentValue", v)],
            );
            Err(e)
        }
        _ => Ok(()),
    }
}

fn copy_source(cs: &CopySource) -> S3Result<(String, String)> {
    match cs {
        CopySource::Bucket {
            bucket,
            key,
            version_id,
        } => {
            check_version_id(version_id.as_deref())?;
            Ok((bucket.to_string(), key.to_string()))
        }
        _ => Err(s3_error!(
            NotImplemented,
            "only bucket/key copy sources are supported"
        )),
    }
}

/// `x-amz-copy-source-range: bytes=FIRST-LAST`.
fn parse_copy_range(r: &str) -> S3Result<(u64, u64)> {
    let bad = || {
        log::debug!("x-amz-copy-source-range `{r}`");
        S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy",
        )
    };
    let rest = r.trim().strip_prefix("bytes=").ok_or_else(bad)?;
    let (a, b) = rest.split_once('-').ok_or_else(bad)?;
    let (a, b): (u64, u64) = (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
    if a > b {
        return Err(bad());
    }
    Ok((a, b))
}

#[async_trait::async_trait]
impl S3 for S3Gateway {
    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let owner = owner_of(&req);
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
            owner: Some(owner),
            ..Default::default()
        }))
    }

    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        // A location constraint must name this server's region, and
        // us-east-1 is never named (as on S3).
        if let Some(lc) = req
            .input
            .create_bucket_configuration
            .as_ref()
            .and_then(|c| c.location_constraint.as_ref())
        {
            if lc.as_str() != self.region || lc.as_str() == "us-east-1" {
                let mut e = S3Error::with_message(
                    S3ErrorCode::InvalidLocationConstraint,
                    "The specified location-constraint is not valid",
                );
                e.set_status_code(hyper::StatusCode::BAD_REQUEST);
                return Err(e);
            }
        }
        let tags = match req.extensions.get::<CreateBucketTags>() {
            Some(CreateBucketTags(pairs)) => crate::tagging::check_bucket_set(
                pairs.iter().map(|(k, v)| (k.as_deref(), v.as_deref())),
            )
            .map_err(tag_error)?,
            None => Vec::new(),
        };
        let b = req.input.bucket;
        let loc = format!("/{b}");
        let name = b.clone();
        self.run(move |s| s.create_bucket_with_tags(&b, tags))
            .await?;
        Ok(with_bucket_arn(
            S3Response::new(CreateBucketOutput {
                location: Some(loc),
            }),
            &name,
        ))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        let b = req.input.bucket;
        let name = b.clone();
        self.run(move |s| s.head_bucket(&b)).await?;
        Ok(with_bucket_arn(
            S3Response::new(HeadBucketOutput {
                bucket_region: Some(self.region.clone()),
                ..Default::default()
            }),
            &name,
        ))
    }

    async fn get_object_attributes(
        &self,
        req: S3Request<GetObjectAttributesInput>,
    ) -> S3Result<S3Response<GetObjectAttributesOutput>> {
        let i = req.input;
        let b = i.bucket.clone();
        self.run(move |s| s.head_bucket(&b)).await?;
        // One header, comma-separated, or several.
        let attrs: Vec<String> = i
            .object_attributes
            .iter()
            .flat_map(|a| a.as_str().split(','))
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect();
        if attrs.is_empty() {
            return Err(invalid_request(
                "The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty",
            ));
        }
        let known = [
            "ETag",
            "Checksum",
            "ObjectParts",
            "StorageClass",
            "ObjectSize",
        ];
        if attrs.iter().any(|a| !known.contains(&a.as_str())) {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "Invalid attribute name specified.",
            ));
        }
        let want = |n: &str| attrs.iter().any(|a| a == n);
        let (b, k) = (i.bucket.clone(), i.key.clone());
        let (_, info) = self.run(move |s| s.open_object(&b, &k)).await?;
        let mut out = GetObjectAttributesOutput {
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

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        let b = req.input.bucket;
        self.run(move |s| s.head_bucket(&b)).await?;
        // S3 reports us-east-1 as no constraint.
        let loc = (self.region != "us-east-1")
            .then(|| BucketLocationConstraint::from(self.region.clone()));
        Ok(S3Response::new(GetBucketLocationOutput {
            location_constraint: loc,
        }))
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
        mut req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let mut i = std::mem::take(&mut req.input);
        let body = i.body.take();
        let (bucket, key) = (i.bucket, i.key);
        let checked = async {
            let (b, k) = (bucket.clone(), key.clone());
            self.run(move |s| {
                crate::names::check_key(&k)?;
                s.head_bucket(&b)
            })
            .await?;
            let want = want_checksum(&req.headers)?;
            let tags = header_tags(i.tagging.as_deref())?;
            self.check_write_conditions(&bucket, &key, conditions_of(&req).as_ref())
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
        let file = self.run(|s| s.new_file()).await?;
        let got = self
            .receive(body, file, i.content_md5.as_deref(), Some(algo), false)
            .await
            .map_err(|e| chunk_refusal(&req.extensions, e))?;
        let (file, md5, size) = (got.file, got.md5, got.size);
        if let Some(len) = i.content_length {
            if len as u64 != size {
                log::debug!("body: {size} bytes of {len}");
                return Err(s3_error!(
                    IncompleteBody,
                    "You did not provide the number of bytes specified by the Content-Length HTTP header"
                ));
            }
        }
        check_trailer(&want, &req)?;
        verify_checksum(&want, &got.checksum, trailing_of(&req))?;
        let checksum = got.checksum.map(|(algorithm, value)| Checksum {
            algorithm,
            value,
            kind: Type::FullObject,
        });
        let meta = crate::store::ObjectMeta {
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
        self.run(move |s| s.commit_object(&b, &k, file, meta))
            .await?;
        access(serde_json::json!({"op": "PutObject", "bucket": bucket, "key": key, "size": size}));
        let mut out = PutObjectOutput {
            e_tag: Some(etag(&md5)),
            size: Some(size as i64),
            ..Default::default()
        };
        put_checksum!(out, checksum.as_ref());
        Ok(with_checksum_header(out, checksum.as_ref()))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let uri = req.uri.clone();
        let cond = conditions_of(&req);
        let splicer = req.extensions.get::<crate::sendfile::Splicer>().cloned();
        let i = req.input;
        check_version_id(i.version_id.as_deref())?;
        check_part_number(i.part_number, i.range.is_some())?;
        let (b, k) = (i.bucket, i.key);
        let name = std::path::PathBuf::from(format!("{b}/{k}"));
        let (file, info) = self.run(move |s| s.open_object(&b, &k)).await?;
        check_read_conditions(cond.as_ref(), &info)?;
        let size = info.meta.size;
        let range = effective_range(i.range, size);
        let part = part_of(i.part_number, range.is_some(), &info)?;
        let (start, end, content_range) = match &range {
            None if part.is_some() => {
                let (a, b, _) = part.unwrap_or_default();
                (
                    a,
                    b,
                    Some(format!("bytes {a}-{}/{size}", b.saturating_sub(1))),
                )
            }
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
        let body = match splicer {
            // A small body is read here and sent with the head, in one
            // write: cheaper than a sendfile of its own, and the client
            // has the whole response at once.
            _ if end - start <= SMALL_BODY => {
                let data = tokio::task::spawn_blocking(move || {
                    crate::body::read_range(&file, &name, start, end)
                })
                .await
                .map_err(internal)?
                .map_err(to_s3_error)?;
                StreamingBlob::from(s3s::Body::from(data))
            }
            Some(sp) => {
                StreamingBlob::wrap(crate::sendfile::file_range(sp, file, name, start, end))
            }
            _ => StreamingBlob::wrap(crate::body::file_range(file, name, start, end)),
        };
        let checksum = checksum_wanted(i.checksum_mode.as_ref(), content_range.is_none(), &info);
        let mut out = GetObjectOutput {
            body: Some(body),
            content_length: Some((end - start) as i64),
            storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
            content_range,
            accept_ranges: Some("bytes".into()),
            e_tag: Some(etag(&info.meta.etag)),
            last_modified: Some(Timestamp::from(info.mtime)),
            metadata: metadata_out(&info.meta.metadata),
            ..Default::default()
        };
        out.parts_count = part
            .filter(|_| !info.meta.parts.is_empty())
            .map(|p| p.2 as i32);
        put_checksum!(out, checksum);
        let mut res = with_checksum_header(out, checksum);
        if part.is_some() {
            res.status = Some(http::StatusCode::PARTIAL_CONTENT);
        }
        add_object_headers(&mut res, &info, &uri);
        Ok(res)
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let uri = req.uri.clone();
        let cond = conditions_of(&req);
        let i = req.input;
        check_version_id(i.version_id.as_deref())?;
        check_part_number(i.part_number, i.range.is_some())?;
        let (b, k) = (i.bucket, i.key);
        let (_, info) = self.run(move |s| s.open_object(&b, &k)).await?;
        check_read_conditions(cond.as_ref(), &info)?;
        let size = info.meta.size;
        let range = effective_range(i.range, size);
        let part = part_of(i.part_number, range.is_some(), &info)?;
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
        let checksum = checksum_wanted(i.checksum_mode.as_ref(), range.is_none(), &info);
        let mut out = HeadObjectOutput {
            content_length: Some(range.map_or(size, |(a, b)| b - a) as i64),
            storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
            content_range: range.map(|(a, b)| format!("bytes {a}-{}/{size}", b.saturating_sub(1))),
            parts_count: part
                .filter(|_| !info.meta.parts.is_empty())
                .map(|p| p.2 as i32),
            accept_ranges: Some("bytes".into()),
            e_tag: Some(etag(&info.meta.etag)),
            last_modified: Some(Timestamp::from(info.mtime)),
            metadata: metadata_out(&info.meta.metadata),
            ..Default::default()
        };
        put_checksum!(out, checksum);
        let mut res = with_checksum_header(out, checksum);
        if range.is_some() {
            res.status = Some(http::StatusCode::PARTIAL_CONTENT);
        }
        add_object_headers(&mut res, &info, &uri);
        Ok(res)
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let cond = conditions_of(&req).filter(Conditions::has_delete);
        let i = req.input;
        let (b, k) = (i.bucket, i.key);
        if let Some(cond) = cond {
            // Checked, then deleted: a writer racing in between wins.
            let (b2, k2) = (b.clone(), k.clone());
            let cur = self.run(move |s| s.stat_object(&b2, &k2)).await?;
            write_outcome(cond.delete(cur.as_ref().map(current)), &b, &k)?;
        }
        self.run(move |s| s.delete_object(&b, &k)).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
    }

    async fn put_bucket_tagging(
        &self,
        req: S3Request<PutBucketTaggingInput>,
    ) -> S3Result<S3Response<PutBucketTaggingOutput>> {
        let i = req.input;
        let tags = crate::tagging::check_bucket_set(
            i.tagging
                .tag_set
                .iter()
                .map(|t| (t.key.as_deref(), t.value.as_deref())),
        )
        .map_err(tag_error)?;
        let b = i.bucket;
        self.run(move |s| s.set_bucket_tags(&b, tags)).await?;
        let mut res = S3Response::new(PutBucketTaggingOutput::default());
        res.headers
            .insert(STATUS, http::HeaderValue::from_static("204"));
        Ok(res)
    }

    async fn get_bucket_tagging(
        &self,
        req: S3Request<GetBucketTaggingInput>,
    ) -> S3Result<S3Response<GetBucketTaggingOutput>> {
        let b = req.input.bucket;
        match self.run(move |s| s.bucket_tags(&b)).await? {
            Some(tags) => Ok(S3Response::new(GetBucketTaggingOutput {
                tag_set: tag_set_out(tags),
            })),
            None => Err(S3Error::with_message(
                S3ErrorCode::NoSuchTagSet,
                "The TagSet does not exist.",
            )),
        }
    }

    async fn delete_bucket_tagging(
        &self,
        req: S3Request<DeleteBucketTaggingInput>,
    ) -> S3Result<S3Response<DeleteBucketTaggingOutput>> {
        let b = req.input.bucket;
        self.run(move |s| s.set_bucket_tags(&b, Vec::new())).await?;
        Ok(S3Response::new(DeleteBucketTaggingOutput::default()))
    }

    async fn put_object_tagging(
        &self,
        req: S3Request<PutObjectTaggingInput>,
    ) -> S3Result<S3Response<PutObjectTaggingOutput>> {
        let i = req.input;
        let tags = crate::tagging::check_set(
            i.tagging
                .tag_set
                .iter()
                .map(|t| (t.key.as_deref(), t.value.as_deref())),
        )
        .map_err(tag_error)?;
        let (b, k) = (i.bucket, i.key);
        self.run(move |s| s.set_tags(&b, &k, tags)).await?;
        Ok(S3Response::new(PutObjectTaggingOutput::default()))
    }

    async fn get_object_tagging(
        &self,
        req: S3Request<GetObjectTaggingInput>,
    ) -> S3Result<S3Response<GetObjectTaggingOutput>> {
        let i = req.input;
        let (b, k) = (i.bucket, i.key);
        let (_, info) = self.run(move |s| s.open_object(&b, &k)).await?;
        Ok(S3Response::new(GetObjectTaggingOutput {
            tag_set: tag_set_out(info.meta.tags),
            ..Default::default()
        }))
    }

    async fn delete_object_tagging(
        &self,
        req: S3Request<DeleteObjectTaggingInput>,
    ) -> S3Result<S3Response<DeleteObjectTaggingOutput>> {
        let i = req.input;
        let (b, k) = (i.bucket, i.key);
        self.run(move |s| s.set_tags(&b, &k, Vec::new())).await?;
        Ok(S3Response::new(DeleteObjectTaggingOutput::default()))
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let i = req.input;
        let bucket = i.bucket;
        let quiet = i.delete.quiet.unwrap_or(false);
        if i.delete.objects.len() > 1000 {
            return Err(to_s3_error(Error::MalformedXml));
        }
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
        let headers = stored_headers(&req.headers);
        let cond = conditions_of(&req);
        let i = req.input;
        let (sb, sk) = copy_source(&i.copy_source)?;
        let replace = match i.metadata_directive.as_ref().map(|d| d.as_str()) {
            None | Some(MetadataDirective::COPY) => false,
            Some(MetadataDirective::REPLACE) => true,
            Some(_) => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "Unknown metadata directive.",
                ))
            }
        };
        let new_tags = match i.tagging_directive.as_ref().map(|d| d.as_str()) {
            None | Some(TaggingDirective::COPY) => None,
            Some(TaggingDirective::REPLACE) => Some(header_tags(i.tagging.as_deref())?),
            Some(d) => {
                let mut e = S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "Unknown tagging directive.",
                );
                with_error_elements(
                    &mut e,
                    &[
                        ("ArgumentName", "x-amz-tagging-directive"),
                        ("ArgumentValue", d),
                    ],
                );
                return Err(e);
            }
        };
        let algo = match &i.checksum_algorithm {
            Some(a) => Some(
                Algorithm::parse(a.as_str())
                    .ok_or_else(|| invalid_request(UNSUPPORTED_ALGORITHM))?,
            ),
            None => None,
        };
        if sb == i.bucket && sk == i.key && !replace && algo.is_none() {
            return Err(invalid_request("This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes."));
        }
        if let Some(c) = &cond {
            self.check_copy_source(c, &sb, &sk).await?;
            self.check_write_conditions(&i.bucket, &i.key, Some(c))
                .await?;
        }
        let (ct, md) = (i.content_type.clone(), metadata_of(i.metadata.clone()));
        let (b, k) = (i.bucket.clone(), i.key.clone());
        let (meta, copied) = self
            .run(move |s| {
                let src_path = s.dir().join(&sb).join(&sk);
                s.copy_object_with(&sb, &sk, &b, &k, |meta, src| {
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
            ..Default::default()
        });
        add_xml_checksum(&mut res, "CopyObjectResult", 1, meta.checksum.as_ref());
        Ok(res)
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let i = req.input;
        check_max("max-keys", i.max_keys)?;
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
            prefix: i.prefix.map(|p| enc.enc(&p)),
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

    async fn list_object_versions(
        &self,
        req: S3Request<ListObjectVersionsInput>,
    ) -> S3Result<S3Response<ListObjectVersionsOutput>> {
        // No versioning: every object has one version, `null`.
        let owner = owner_of(&req);
        let i = req.input;
        check_max("max-keys", i.max_keys)?;
        let q = list::Query {
            prefix: i.prefix.clone().unwrap_or_default(),
            delimiter: i.delimiter.clone().filter(|d| !d.is_empty()),
            after: i.key_marker.clone().filter(|m| !m.is_empty()),
            max_keys: i.max_keys.unwrap_or(1000),
        };
        let bucket = i.bucket.clone();
        let l: Listing = self.run(move |s| list::list(s, &bucket, &q)).await?;
        let enc = list::Encoder::new(i.encoding_type.as_ref().map(|e| e.as_str()));
        let next = l.truncated.then(|| l.last.clone()).flatten();
        Ok(S3Response::new(ListObjectVersionsOutput {
            name: Some(i.bucket),
            prefix: i.prefix.map(|p| enc.enc(&p)),
            key_marker: i.key_marker.map(|m| enc.enc(&m)),
            version_id_marker: i.version_id_marker,
            max_keys: i.max_keys.or(Some(1000)),
            is_truncated: Some(l.truncated),
            next_key_marker: next.as_ref().map(|m| enc.enc(m)),
            next_version_id_marker: next.map(|_| "null".to_string()),
            delimiter: i.delimiter.map(|d| enc.enc(&d)),
            encoding_type: i.encoding_type,
            versions: Some(l.versions(&enc, &owner)),
            common_prefixes: Some(l.prefixes(&enc)),
            ..Default::default()
        }))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let i = req.input;
        check_max("max-keys", i.max_keys)?;
        let token = match &i.continuation_token {
            Some(t) => Some(list::decode_token(t).ok_or_else(|| {
                s3_error!(InvalidArgument, "the continuation token is not valid")
            })?),
            None => None,
        };
        // Both given: listing starts after the later of the two.
        let after = token.max(i.start_after.clone().filter(|s| !s.is_empty()));
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
            prefix: i.prefix.map(|p| enc.enc(&p)),
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
        let headers = stored_headers(&req.headers);
        let i = req.input;
        let algo = match &i.checksum_algorithm {
            Some(a) => Some(
                Algorithm::parse(a.as_str())
                    .ok_or_else(|| invalid_request(UNSUPPORTED_ALGORITHM))?,
            ),
            None => None,
        };
        let kind = match &i.checksum_type {
            Some(t) => Some(Type::parse(t.as_str()).ok_or_else(|| {
                invalid_request("Value for x-amz-checksum-type header is invalid.")
            })?),
            None => None,
        };
        let checksum = match (algo, kind) {
            (None, Some(_)) => {
                return Err(invalid_request(
                    "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.",
                ))
            }
            (None, None) => None,
            (Some(a), None) => Some((a, a.default_type())),
            (Some(a), Some(t)) if !a.supports(t) => {
                return Err(invalid_request(format!(
                    "The {} checksum type cannot be used with the {} checksum algorithm.",
                    t.name(),
                    a.name().to_ascii_lowercase()
                )))
            }
            (Some(a), Some(t)) => Some((a, t)),
        };
        let new = crate::multipart::NewUpload {
            content_type: i.content_type,
            metadata: metadata_of(i.metadata),
            checksum,
            headers,
            tags: header_tags(i.tagging.as_deref())?,
        };
        let (b, k) = (i.bucket.clone(), i.key.clone());
        let id = self.run(move |s| s.create_upload_with(&b, &k, new)).await?;
        Ok(S3Response::new(CreateMultipartUploadOutput {
            bucket: Some(i.bucket),
            key: Some(i.key),
            upload_id: Some(id),
            checksum_algorithm: checksum.map(|c| ChecksumAlgorithm::from(c.0.name().to_string())),
            checksum_type: checksum.map(|c| ChecksumType::from(c.1.name().to_string())),
            ..Default::default()
        }))
    }

    async fn upload_part(
        &self,
        mut req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let mut i = std::mem::take(&mut req.input);
        let body = i.body.take();
        let (id, b, k, n) = (
            i.upload_id.clone(),
            i.bucket.clone(),
            i.key.clone(),
            i.part_number,
        );
        let checked = async {
            let want = want_checksum(&req.headers)?;
            let (file, upload) = self
                .run(move |s| {
                    let f = s.new_part_file(&id, &b, &k, n)?;
                    Ok((f, s.upload_record(&id, &b, &k)?))
                })
                .await?;
            if let (Some((u, _)), Some(r)) = (upload.checksum, want.algorithm()) {
                if u != r {
                    return Err(invalid_request(format!(
                        "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
                        u.name(),
                        r.name()
                    )));
                }
            }
            Ok((want, file, upload))
        }
        .await;
        let (want, file, upload) = match checked {
            Ok(x) => x,
            Err(e) => {
                drain(body).await;
                return Err(e);
            }
        };
        let upload_algo = upload.checksum.map(|c| c.0);
        // Without an algorithm, parts get CRC64NVME: the complete combines
        // them into the object's default checksum, as S3 gives one.
        let algo = want
            .algorithm()
            .or(upload_algo)
            .or(Some(Algorithm::Crc64Nvme));
        let got = self
            .receive(
                body,
                file,
                i.content_md5.as_deref(),
                algo,
                upload_algo.is_none(),
            )
            .await
            .map_err(|e| chunk_refusal(&req.extensions, e))?;
        let (file, md5, size) = (got.file, got.md5, got.size);
        if let Some(len) = i.content_length {
            if len as u64 != size {
                log::debug!("body: {size} bytes of {len}");
                return Err(s3_error!(
                    IncompleteBody,
                    "You did not provide the number of bytes specified by the Content-Length HTTP header"
                ));
            }
        }
        check_trailer(&want, &req)?;
        verify_checksum(&want, &got.checksum, trailing_of(&req))?;
        // A composite upload needs each part's checksum from the client
        // (refused after the body is read, so the connection stays usable).
        if let (Some((u, Type::Composite)), None) = (upload.checksum, want.algorithm()) {
            return Err(invalid_request(format!(
                "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: null",
                u.name()
            )));
        }
        let checksum = got.checksum.map(|(algorithm, value)| Checksum {
            algorithm,
            value,
            kind: Type::FullObject,
        });
        let (id, b, k) = (i.upload_id, i.bucket, i.key);
        let default_crc = got.default_crc;
        let rec = self
            .run(move |s| s.commit_part_full(&id, &b, &k, n, file, md5, checksum, default_crc))
            .await?;
        let mut out = UploadPartOutput {
            e_tag: Some(etag(&rec.md5)),
            ..Default::default()
        };
        let shown = rec
            .checksum
            .as_ref()
            .filter(|_| upload_algo.is_some() || want.algorithm().is_some());
        if let Some(c) = shown {
            put_checksum_value!(out, c);
        }
        let mut res = with_checksum_header(out, shown);
        res.headers.remove("x-amz-checksum-type");
        Ok(res)
    }

    async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        let cond = conditions_of(&req);
        let i = req.input;
        let b = i.bucket.clone();
        self.run(move |s| s.head_bucket(&b)).await?;
        if !(1..=crate::multipart::MAX_PARTS).contains(&i.part_number) {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "Part number must be an integer between 1 and 10000, inclusive.",
            ));
        }
        let (sb, sk) = copy_source(&i.copy_source)?;
        if let Some(c) = &cond {
            self.check_copy_source(c, &sb, &sk).await?;
        }
        let range = match &i.copy_source_range {
            Some(r) => Some(parse_copy_range(r)?),
            None => None,
        };
        let (id, b, k, n) = (
            i.upload_id.clone(),
            i.bucket.clone(),
            i.key.clone(),
            i.part_number,
        );
        let (rec, copied, rec_shown) = self
            .run(move |s| {
                let shown = s.upload_record(&id, &b, &k)?.checksum.is_some();
                let (rec, copied) = s.copy_part(&id, &b, &k, n, &sb, &sk, range)?;
                Ok((rec, copied, shown))
            })
            .await?;
        access(serde_json::json!({
            "op": "UploadPartCopy", "bucket": i.bucket, "key": i.key, "upload_id": i.upload_id,
            "part": n, "size": rec.size, "method": copied.method.name(), "bytes": copied.bytes,
        }));
        let mut result = CopyPartResult {
            e_tag: Some(etag(&rec.md5)),
            last_modified: Some(Timestamp::from(std::time::SystemTime::now())),
            ..Default::default()
        };
        let shown = rec.checksum.as_ref().filter(|_| rec_shown);
        if let Some(c) = shown {
            put_checksum_value!(result, c);
        }
        let mut res = S3Response::new(UploadPartCopyOutput {
            copy_part_result: Some(result),
            ..Default::default()
        });
        add_xml_checksum(&mut res, "CopyPartResult", 1, shown);
        Ok(res)
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        let i = req.input;
        check_max("max-parts", i.max_parts)?;
        check_max("part-number-marker", i.part_number_marker)?;
        let (id, b, k) = (i.upload_id.clone(), i.bucket.clone(), i.key.clone());
        let (parts, upload) = self
            .run(move |s| Ok((s.list_parts(&id, &b, &k)?, s.upload_record(&id, &b, &k)?)))
            .await?;
        let marker = i.part_number_marker.unwrap_or(0);
        let max = i.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
        let rest: Vec<_> = parts.into_iter().filter(|p| p.number > marker).collect();
        let truncated = rest.len() > max;
        let page: Vec<_> = rest.into_iter().take(max).collect();
        let next = page.last().map(|p| p.number);
        // No checksum asked for at the start: S3 says `null`.
        let none = || "null".to_string();
        let extra: Vec<Option<Checksum>> = page
            .iter()
            .map(|p| p.checksum.clone().filter(|_| upload.checksum.is_some()))
            .collect();
        let mut res = S3Response::new(ListPartsOutput {
            bucket: Some(i.bucket),
            key: Some(i.key),
            upload_id: Some(i.upload_id),
            max_parts: Some(max as i32),
            part_number_marker: i.part_number_marker,
            is_truncated: Some(truncated),
            next_part_number_marker: if truncated { next } else { None },
            storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
            checksum_algorithm: Some(ChecksumAlgorithm::from(
                upload
                    .checksum
                    .map_or_else(none, |c| c.0.name().to_string()),
            )),
            checksum_type: Some(ChecksumType::from(
                upload
                    .checksum
                    .map_or_else(none, |c| c.1.name().to_string()),
            )),
            parts: Some(
                page.into_iter()
                    .map(|p| {
                        let mut part = Part {
                            e_tag: Some(etag(&p.md5)),
                            part_number: Some(p.number),
                            size: Some(p.size as i64),
                            last_modified: Some(Timestamp::from(
                                std::time::SystemTime::UNIX_EPOCH
                                    + std::time::Duration::from_secs(p.modified),
                            )),
                            ..Default::default()
                        };
                        if let Some(c) = p.checksum.as_ref().filter(|_| upload.checksum.is_some()) {
                            put_checksum_value!(part, c);
                        }
                        part
                    })
                    .collect(),
            ),
            ..Default::default()
        });
        for (n, c) in extra.iter().enumerate() {
            add_xml_checksum(&mut res, "Part", n + 1, c.as_ref());
        }
        Ok(res)
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        let owner = owner_of(&req);
        let i = req.input;
        check_max("max-uploads", i.max_uploads)?;
        let b = i.bucket.clone();
        let ups = self
            .run(move |s| {
                s.head_bucket(&b)?;
                s.list_uploads(&b)
            })
            .await?;
        let prefix = i.prefix.clone().unwrap_or_default();
        let key_marker = i.key_marker.clone().unwrap_or_default();
        // An upload id marker counts only with a key marker; it must name an
        // upload, and the listing goes on after it.
        let id_marker = match (&i.upload_id_marker, key_marker.is_empty()) {
            (Some(m), false) if !m.is_empty() => Some(m.clone()),
            _ => None,
        };
        let delimiter = i.delimiter.clone().filter(|d| !d.is_empty());
        let max = i.max_uploads.unwrap_or(1000).clamp(0, 1000) as usize;
        let enc = list::Encoder::new(i.encoding_type.as_ref().map(|e| e.as_str()));
        let ups: Vec<_> = ups.into_iter().filter(|u| !u.completed).collect();
        // When the key marker is a key with uploads, the id must be one of
        // them.
        let marker_is_key = ups.iter().any(|u| u.key == key_marker);
        let skip = match &id_marker {
            Some(m) => match ups
                .iter()
                .position(|u| u.id == *m && (!marker_is_key || u.key == key_marker))
            {
                Some(at) => at + 1,
                None => {
                    return Err(S3Error::with_message(
                        S3ErrorCode::InvalidArgument,
                        "Invalid uploadId marker",
                    ))
                }
            },
            None => 0,
        };
        let rest = ups
            .into_iter()
            .skip(skip)
            .filter(|u| u.key.starts_with(&prefix))
            .filter(|u| id_marker.is_some() || key_marker.is_empty() || u.key > key_marker)
            .filter(|u| {
                // After a common prefix as key marker, skip its keys.
                !(id_marker.is_none()
                    && delimiter.is_some()
                    && key_marker.ends_with(delimiter.as_deref().unwrap_or_default())
                    && u.key.starts_with(&key_marker))
            });
        // Entries: an upload, or a common prefix (with its first upload id).
        let mut uploads = Vec::new();
        let mut prefixes: Vec<String> = Vec::new();
        let mut last: Option<(String, String)> = None;
        let mut truncated = false;
        for u in rest {
            let cp = delimiter.as_deref().and_then(|d| {
                let tail = &u.key[prefix.len()..];
                tail.find(d)
                    .map(|at| format!("{prefix}{}", &tail[..at + d.len()]))
            });
            if let Some(cp) = &cp {
                if prefixes.last() == Some(cp) {
                    continue;
                }
            }
            if uploads.len() + prefixes.len() == max {
                truncated = true;
                break;
            }
            match cp {
                Some(cp) => {
                    last = Some((cp.clone(), u.id.clone()));
                    prefixes.push(cp);
                }
                None => {
                    last = Some((u.key.clone(), u.id.clone()));
                    uploads.push(u);
                }
            }
        }
        Ok(S3Response::new(ListMultipartUploadsOutput {
            bucket: Some(i.bucket),
            prefix: i.prefix.map(|p| enc.enc(&p)),
            delimiter: i.delimiter.map(|d| enc.enc(&d)),
            key_marker: i.key_marker.map(|m| enc.enc(&m)),
            upload_id_marker: i.upload_id_marker,
            max_uploads: Some(max as i32),
            is_truncated: Some(truncated),
            next_key_marker: last.as_ref().filter(|_| truncated).map(|l| enc.enc(&l.0)),
            next_upload_id_marker: last.filter(|_| truncated).map(|l| l.1),
            encoding_type: i.encoding_type,
            common_prefixes: Some(
                prefixes
                    .into_iter()
                    .map(|p| CommonPrefix {
                        prefix: Some(enc.enc(&p)),
                    })
                    .collect(),
            ),
            uploads: Some(
                uploads
                    .into_iter()
                    .map(|u| MultipartUpload {
                        key: Some(enc.enc(&u.key)),
                        upload_id: Some(u.id),
                        initiated: Some(Timestamp::from(u.initiated)),
                        storage_class: Some(StorageClass::from_static(StorageClass::STANDARD)),
                        checksum_algorithm: u
                            .checksum
                            .map(|c| ChecksumAlgorithm::from(c.0.name().to_string())),
                        checksum_type: u
                            .checksum
                            .map(|c| ChecksumType::from(c.1.name().to_string())),
                        owner: Some(owner.clone()),
                        initiator: Some(Initiator {
                            display_name: owner.display_name.clone(),
                            id: owner.id.clone(),
                        }),
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
        if let Some(t) = &i.if_match_initiated_time {
            let (id, b, k) = (i.upload_id.clone(), i.bucket.clone(), i.key.clone());
            let rec = self.run(move |s| s.upload_record(&id, &b, &k)).await?;
            let mut buf = Vec::new();
            let want: u64 = match t.format(TimestampFormat::EpochSeconds, &mut buf) {
                Ok(()) => String::from_utf8_lossy(&buf)
                    .split('.')
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0),
                Err(_) => 0,
            };
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            // A date in the future is ignored, as S3 does.
            if want <= now && want != rec.initiated {
                return Err(S3Error::with_message(
                    S3ErrorCode::PreconditionFailed,
                    "At least one of the pre-conditions you specified did not hold.",
                ));
            }
        }
        let (id, b, k) = (i.upload_id, i.bucket, i.key);
        self.run(move |s| s.abort_upload(&id, &b, &k)).await?;
        Ok(S3Response::new(AbortMultipartUploadOutput::default()))
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let want = want_checksum_of(&req.headers, true)?;
        let cond = conditions_of(&req);
        let host = req
            .headers
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or("localhost")
            .to_string();
        let taken = req
            .extensions
            .get::<PartChecksums>()
            .map(|p| p.0.clone())
            .unwrap_or_default();
        let i = req.input;
        let kind = match &i.checksum_type {
            Some(t) => Some(Type::parse(t.as_str()).ok_or_else(|| {
                invalid_request("Value for x-amz-checksum-type header is invalid.")
            })?),
            None => None,
        };
        let size = match req.headers.get("x-amz-mp-object-size") {
            Some(v) => {
                let v = v.to_str().unwrap_or("");
                Some(v.trim().parse::<i64>().map_err(|_| {
                    invalid_request(format!(
                        "Value for x-amz-mp-object-size header is invalid: '{v}'"
                    ))
                })?)
            }
            None => None,
        };
        let parts = i.multipart_upload.and_then(|m| m.parts).unwrap_or_default();
        let mut part_sums = Vec::with_capacity(parts.len());
        let mut requested: Vec<(i32, String)> = Vec::with_capacity(parts.len());
        for (n, p) in parts.into_iter().enumerate() {
            let mut given: Vec<(Algorithm, &String)> = [
                (Algorithm::Crc32, p.checksum_crc32.as_ref()),
                (Algorithm::Crc32c, p.checksum_crc32c.as_ref()),
                (Algorithm::Crc64Nvme, p.checksum_crc64nvme.as_ref()),
                (Algorithm::Sha1, p.checksum_sha1.as_ref()),
                (Algorithm::Sha256, p.checksum_sha256.as_ref()),
            ]
            .into_iter()
            .filter_map(|(a, v)| Some((a, v?)))
            .collect();
            given.extend(
                taken
                    .iter()
                    .filter(|t| t.part == n + 1)
                    .map(|t| (t.algorithm, &t.value)),
            );
            let bad_part = |v: &str| {
                let mut e = S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "Invalid Base64 or multiple checksums present in request",
                );
                e.set_status_code(hyper::StatusCode::BAD_REQUEST);
                log::debug!("complete: part checksum `{v}`");
                e
            };
            match given.as_slice() {
                [] => part_sums.push(None),
                [(a, v)] => {
                    if crate::checksum::decode(*a, v).is_none() {
                        return Err(bad_part(v));
                    }
                    part_sums.push(Some((*a, v.to_string())));
                }
                _ => return Err(bad_part("")),
            }
            if p.e_tag.is_none() || p.part_number.is_none() {
                return Err(to_s3_error(Error::MalformedXml));
            }
            requested.push((
                p.part_number.unwrap_or(0),
                p.e_tag
                    .map(|e| bare_etag(e.value()).to_string())
                    .unwrap_or_default(),
            ));
        }
        let checks = crate::multipart::CompleteChecks {
            parts: part_sums,
            object: want.value.clone(),
            kind,
            size,
        };
        // Completes of one upload run one at a time, in every gateway on
        // this root (the store's upload lock, held by the plan); a second
        // one waits and then finds the first one's answer.
        let (id, b, k) = (i.upload_id.clone(), i.bucket.clone(), i.key.clone());
        // A retried complete gets the first one's answer, whatever the
        // object's state now.
        let retry = self
            .run(move |s| s.completed_record(&id, &b, &k))
            .await
            .ok()
            .flatten()
            .is_some();
        if !retry {
            self.check_write_conditions(&i.bucket, &i.key, cond.as_ref())
                .await?;
        }
        let (id, b, k) = (i.upload_id.clone(), i.bucket.clone(), i.key.clone());
        let prepared = self
            .run(move |s| s.complete_prepare_with(&id, &b, &k, requested, &checks))
            .await?;
        let output = move |r: &crate::multipart::CompletedRecord| {
            let mut out = CompleteMultipartUploadOutput {
                bucket: Some(r.bucket.clone()),
                key: Some(r.key.clone()),
                e_tag: Some(etag(&r.etag)),
                location: Some(format!(
                    "http://{host}/{}/{}",
                    r.bucket,
                    list::Encoder::new(Some("url")).enc(&r.key)
                )),
                ..Default::default()
            };
            put_checksum!(out, r.checksum.as_ref());
            out
        };
        let plan = match prepared {
            Prepared::Done(r) => {
                access(serde_json::json!({
                    "op": "CompleteMultipartUpload", "bucket": r.bucket, "key": r.key,
                    "upload_id": i.upload_id, "retry": true, "etag": r.etag,
                }));
                let mut res = with_checksum_header(output(&r), r.checksum.as_ref());
                add_xml_checksum(
                    &mut res,
                    "CompleteMultipartUploadResult",
                    1,
                    r.checksum.as_ref(),
                );
                return Ok(res);
            }
            Prepared::Assemble(plan) => plan,
        };
        // The plan (and its lock) goes with the work: a client that hangs
        // up does not release the lock while the assembly still runs.
        let store = self.store.clone();
        let mut work = tokio::task::spawn_blocking(move || store.complete_assemble(plan));
        let upload_id = i.upload_id.clone();
        let output_later = output.clone();
        let (bucket, key) = (i.bucket.clone(), i.key.clone());
        let finish =
            move |res: crate::Result<Completed>| -> S3Result<CompleteMultipartUploadOutput> {
                // A failure is logged with its S3 code: after the keepalive
                // started, the access log's status (200) cannot say it.
                let c = res.map_err(|e| {
                    let err = to_s3_error(e);
                    access(serde_json::json!({
                        "op": "CompleteMultipartUpload", "bucket": bucket, "key": key,
                        "upload_id": upload_id, "error": err.code().as_str(),
                        "status": err.status_code().map(|s| s.as_u16()),
                    }));
                    err
                })?;
                access(serde_json::json!({
                    "op": "CompleteMultipartUpload", "bucket": c.record.bucket, "key": c.record.key,
                    "upload_id": upload_id, "parts": c.record.parts.len(), "size": c.record.size,
                    "etag": c.record.etag, "bytes_cloned": c.bytes.cloned,
                    "bytes_copied": c.bytes.copied, "bytes_written": c.bytes.written,
                    "unaligned_parts": c.unaligned_parts, "ms": c.elapsed.as_secs_f64() * 1e3,
                }));
                Ok(output_later(&c.record))
            };
        // A complete that clones is done in milliseconds: answer it plainly
        // (an error keeps its HTTP status). One that copies may take long:
        // after `Options::keepalive_after` the response starts and s3s sends whitespace
        // until the XML is ready, as S3 does.
        if let Ok(res) = tokio::time::timeout(self.store.options().keepalive_after, &mut work).await
        {
            let out = finish(res.map_err(internal)?)?;
            // The record's checksum, for algorithms s3s has no field for.
            let extra = self
                .completed_checksum(&i.upload_id, &i.bucket, &i.key)
                .await;
            let mut res = with_checksum_header(out, extra.as_ref());
            add_xml_checksum(&mut res, "CompleteMultipartUploadResult", 1, extra.as_ref());
            return Ok(res);
        }
        let fut = async move { finish(work.await.map_err(internal)?) };
        Ok(S3Response::new(CompleteMultipartUploadOutput {
            future: Some(Box::pin(fut)),
            ..Default::default()
        }))
    }
}
