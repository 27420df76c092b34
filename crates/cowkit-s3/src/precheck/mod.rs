//! Checks made on a request's head before s3s sees it, answered as S3
//! answers them: the shape of a SigV4 `Authorization` header and of a
//! presigned URL's query (credential scope, region, dates, `X-Amz-Expires`
//! bounds, expiry), SigV2 `Authorization` headers refused, `x-amz-*` headers that were not signed,
//! and request headers that ask for what the gateway does not do
//! (server-side encryption: refused with `NotImplemented` rather than
//! storing the data unencrypted), user metadata over 2 KB, an empty or
//! malformed `Content-MD5`, aws-chunked bodies where S3 takes none or
//! without their decoded length, a payload hash that cannot be an empty
//! body's, and the shape of `x-amz-copy-source`.
//!
//! The signature itself is verified by s3s afterwards.

use http::{HeaderMap, Method, StatusCode, Uri};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub(crate) mod auth;

use auth::*;

use crate::refusal::Refusal;
use crate::text::query_pairs;

/// The most user metadata (`x-amz-meta-*` names and values) S3 accepts.
pub const MAX_METADATA: usize = 2048;
/// The longest `X-Amz-Expires` S3 accepts (7 days).
pub const MAX_EXPIRES: i64 = 604_800;
/// How far a presigned URL's date may be in the future.
const MAX_SKEW: Duration = Duration::from_secs(15 * 60);

/// What the checks need to know about the server.
#[derive(Debug, Clone)]
pub struct Prechecks {
    /// The region requests must be signed for.
    pub region: String,
    /// The access key, when credentials are configured.
    pub access_key: Option<String>,
    /// The other accounts, when there are credentials.
    pub accounts: Option<std::sync::Arc<crate::accounts::Accounts>>,
}

fn bad_request(code: &'static str, m: impl Into<String>) -> Refusal {
    Refusal::new(StatusCode::BAD_REQUEST, code, m)
}

fn forbidden(code: &'static str, m: impl Into<String>) -> Refusal {
    Refusal::new(StatusCode::FORBIDDEN, code, m)
}

fn not_implemented() -> Refusal {
    Refusal::new(
        StatusCode::NOT_IMPLEMENTED,
        "NotImplemented",
        "A header you provided implies functionality that is not implemented.",
    )
}

/// SHA-256 of no bytes.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

const PAYLOAD_HASHES: [&str; 6] = [
    "UNSIGNED-PAYLOAD",
    "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
    "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD",
    "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER",
];

/// Whether the request's body is known to be empty from its head (a
/// `Content-Length: 0`, or neither length nor transfer coding).
fn body_known_empty(headers: &HeaderMap) -> bool {
    headers.get(http::header::CONTENT_LENGTH).map_or(
        !headers.contains_key(http::header::TRANSFER_ENCODING),
        |v| v.as_bytes() == b"0",
    )
}

/// S3's refusal of a body whose SHA-256 is not the declared one.
pub(crate) fn sha256_mismatch(declared: &str, computed: &str) -> Refusal {
    bad_request(
        "XAmzContentSHA256Mismatch",
        "The provided 'x-amz-content-sha256' header does not match what was computed.",
    )
    .with("ClientComputedContentSHA256", declared)
    .with("S3ComputedContentSHA256", computed)
}

/// Whether the request carries no signature (no `Authorization`, no
/// presigned query): one a public bucket may take.
pub(crate) fn is_unsigned(uri: &Uri, headers: &HeaderMap) -> bool {
    let query: Vec<(String, String)> = uri.query().map(query_pairs).unwrap_or_default();
    !headers.contains_key(http::header::AUTHORIZATION)
        && param(&query, "X-Amz-Signature").is_none()
        && param(&query, "Signature").is_none()
}

/// The SHA-256 an unsigned request declares for a body that is not known
/// to be empty (any `x-amz-content-sha256` but S3's markers): the body is
/// held to it as it streams ([`crate::payload`]).
pub fn declared_unsigned_hash(uri: &Uri, headers: &HeaderMap) -> Option<String> {
    let v = headers.get("x-amz-content-sha256")?.to_str().unwrap_or("");
    (is_unsigned(uri, headers) && !PAYLOAD_HASHES.contains(&v) && !body_known_empty(headers))
        .then(|| v.to_string())
}

impl Prechecks {
    /// Check a request's head; `Err` is the answer to send.
    pub fn check(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        check_header_size(headers)?;
        let query: Vec<(String, String)> = uri.query().map(query_pairs).unwrap_or_default();
        let get = |k: &str| param(&query, k);
        check_route(method, uri, &query, headers)?;
        if let Some(auth) = headers.get(http::header::AUTHORIZATION) {
            self.check_header_auth(auth.to_str().unwrap_or(""), headers)?;
        } else if get("X-Amz-Algorithm").is_some()
            || get("X-Amz-Credential").is_some()
            || get("X-Amz-Signature").is_some()
        {
            self.check_presigned(&query, headers)?;
        }
        // SigV2 presigned URLs (`AWSAccessKeyId`, `Expires`, `Signature`:
        // what boto3 makes by default) are verified by s3s, expiry included.
        if is_unsigned(uri, headers) {
            check_unsigned_payload(headers)?;
        }
        check_streaming(method, uri, &query, headers)?;
        check_access_body(method, &query, headers)?;
        // ACL headers on a bucket's PUT (CreateBucket, PutBucketAcl) are
        // the operation's; PutObjectAcl is authorised, then
        // `NotImplemented`; an object write's by its bucket's ownership
        // setting once authorised (`object_acl_refusal`).
        check_headers(method, headers)
    }
}

/// Whether S3 ignores this `Range` header (answering with the whole
/// object, 200): anything but one `bytes=FIRST-[LAST]` or `bytes=-SUFFIX`
/// with `FIRST <= LAST`.
pub fn range_is_ignored(v: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    let Some(r) = v.strip_prefix("bytes=") else {
        return true;
    };
    let Some((a, b)) = r.split_once('-') else {
        return true;
    };
    match (a, b) {
        ("", b) => !digits(b),
        (a, "") => !digits(a),
        (a, b) if digits(a) && digits(b) => {
            let (a, b) = (a.trim_start_matches('0'), b.trim_start_matches('0'));
            // Compare as numbers of any length.
            (a.len(), a) > (b.len(), b)
        }
        _ => true,
    }
}

/// Whether the request's signature covers header `name` (lowercase).
pub fn signs_header(uri: &Uri, headers: &HeaderMap, name: &str) -> bool {
    let list = match headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
    {
        Some(a) => a
            .split([',', ' '])
            .find_map(|c| c.trim().strip_prefix("SignedHeaders="))
            .map(str::to_string),
        None => uri.query().and_then(|q| {
            query_pairs(q)
                .into_iter()
                .find(|(k, _)| k == "X-Amz-SignedHeaders")
                .map(|(_, v)| v)
        }),
    };
    list.is_some_and(|l| l.split(';').any(|h| h.trim() == name))
}

fn method_not_allowed(method: &Method, resource: &str) -> Refusal {
    Refusal::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "MethodNotAllowed",
        "The specified method is not allowed against this resource.",
    )
    .with("Method", method.as_str())
    .with("ResourceType", resource)
}

/// Requests S3's router turns away before authentication: a method a
/// resource does not have, sub-resources that need or forbid a key.
fn check_route(
    method: &Method,
    uri: &Uri,
    query: &[(String, String)],
    headers: &HeaderMap,
) -> Result<(), Refusal> {
    let path = uri.path().trim_start_matches('/');
    let (bucket, key) = match path.split_once('/') {
        Some((b, k)) => (b, k),
        None => (path, ""),
    };
    let has = |k: &str| query.iter().any(|(n, _)| n == k);
    if *method == Method::POST && bucket.is_empty() {
        return Err(method_not_allowed(method, "SERVICE"));
    }
    if *method == Method::POST
        && !key.is_empty()
        && !has("uploads")
        && !has("uploadId")
        && !has("restore")
        && !has("select")
    {
        return Err(method_not_allowed(method, "SERVICE"));
    }
    if headers.contains_key("x-amz-copy-source")
        && (*method != Method::PUT || key.is_empty())
        && !bucket.is_empty()
    {
        let value = headers
            .get("x-amz-copy-source")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        return Err(bad_request(
            "InvalidArgument",
            "You can only specify a copy source header for copy requests.",
        )
        .with("ArgumentName", "x-amz-copy-source")
        .with("ArgumentValue", value));
    }
    if key.is_empty() {
        return Ok(());
    }
    // An empty version id names no version: S3 refuses it rather than
    // read it as "the current version" (a DELETE would otherwise make a
    // delete marker), on every object request that takes a version id.
    let takes_version = matches!(*method, Method::GET | Method::HEAD | Method::DELETE)
        || (*method == Method::PUT
            && ["tagging", "retention", "legal-hold", "acl"]
                .iter()
                .any(|s| has(s)))
        || (*method == Method::POST && has("restore"));
    if takes_version && param(query, "versionId") == Some("") {
        return Err(empty_version_id("versionId"));
    }
    if *method == Method::PUT && has("uploadId") && !has("partNumber") {
        return Err(method_not_allowed(method, "UPLOAD"));
    }
    if *method == Method::PUT && has("partNumber") && !has("uploadId") {
        return Err(bad_request(
            "InvalidArgument",
            "This operation does not accept partNumber without uploadId",
        )
        // S3 (and VersityGW's suite, checked against it) names the
        // argument in both fields here, not the number given.
        .with("ArgumentName", "partNumber")
        .with("ArgumentValue", "partNumber"));
    }
    if *method == Method::GET && has("uploads") {
        return Err(bad_request(
            "InvalidRequest",
            "Key is not expected for the GET method ?uploads subresource",
        ));
    }
    if *method == Method::GET && has("uploadId") {
        // ListParts' integers: one s3s cannot parse would get its own
        // message; S3's names the value (a negative one is the gateway's).
        for name in ["max-parts", "part-number-marker"] {
            if let Some(v) = param(query, name).filter(|v| v.parse::<i32>().is_err()) {
                return Err(invalid_argument(
                    &format!("Provided {v} not an integer or within integer range"),
                    name,
                    v,
                ));
            }
        }
    }
    if *method == Method::GET && has("versions") {
        return Err(bad_request(
            "InvalidRequest",
            "There is no such thing as the ?versions sub-resource for a key",
        ));
    }
    Ok(())
}

/// An unsigned request (one a public bucket may take) cannot carry a
/// signed stream: there is no signature to chain its chunks to. Any other
/// value but S3's markers is the body's SHA-256, whatever it looks like:
/// for an empty body, compared here.
fn check_unsigned_payload(headers: &HeaderMap) -> Result<(), Refusal> {
    let sha = headers
        .get("x-amz-content-sha256")
        .map(|v| v.to_str().unwrap_or(""));
    match sha {
        Some(v)
            if !PAYLOAD_HASHES.contains(&v)
                && body_known_empty(headers)
                && !v.eq_ignore_ascii_case(EMPTY_SHA256) =>
        {
            Err(sha256_mismatch(v, EMPTY_SHA256))
        }
        Some(v) if v.starts_with("STREAMING-") && v != "STREAMING-UNSIGNED-PAYLOAD-TRAILER" => {
            Err(bad_request(
                "InvalidRequest",
                "Anonymous requests don't support this x-amz-content-sha256 value. Please use UNSIGNED-PAYLOAD or STREAMING-UNSIGNED-PAYLOAD-TRAILER.",
            ))
        }
        _ => Ok(()),
    }
}

/// A PutBucketPolicy, PutBucketAcl or PutBucketWebsite body longer than
/// the gateway takes (`limits.rs`, `website.rs`), refused before it is read.
fn check_access_body(
    method: &Method,
    query: &[(String, String)],
    headers: &HeaderMap,
) -> Result<(), Refusal> {
    if *method != Method::PUT {
        return Ok(());
    }
    let len = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let has = |k: &str| query.iter().any(|(n, _)| n == k);
    match len {
        Some(n) if has("policy") && n > crate::limits::MAX_POLICY_BODY as u64 => Err(bad_request(
            "MalformedPolicy",
            crate::policy::PolicyError::TooLarge.to_string(),
        )),
        Some(n) if has("website") && n > crate::website::MAX_BODY as u64 => {
            Err(
                bad_request("MaxMessageLengthExceeded", "Your request was too big.").with(
                    "MaxMessageLengthBytes",
                    crate::website::MAX_BODY.to_string(),
                ),
            )
        }
        Some(n) if has("acl") && n > crate::limits::MAX_ACL_BODY as u64 => Err(bad_request(
            "MalformedACLError",
            format!(
                "An access control policy document may be at most {} bytes",
                crate::limits::MAX_ACL_BODY
            ),
        )),
        _ => Ok(()),
    }
}

/// S3's answer to `versionId=` (empty) in the query or a copy source
/// (`argument` names which).
fn empty_version_id(argument: &str) -> Refusal {
    invalid_argument("Version id cannot be the empty string", argument, "")
}

fn invalid_argument(m: &str, name: &str, value: &str) -> Refusal {
    bad_request("InvalidArgument", m)
        .with("ArgumentName", name)
        .with("ArgumentValue", value)
}

/// Features the gateway does not have, asked for in headers: refused rather
/// than ignored. Object lock values are checked as S3 checks them; valid
/// ones go on to the gateway, which knows whether the bucket has object
/// lock.
fn check_unsupported(method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
    let h = |k: &str| headers.get(k).map(|v| v.to_str().unwrap_or(""));
    // ACLs are not implemented, but a value S3 would refuse is refused as
    // S3 refuses it first, and so is an ACL on a bucket made with ACLs
    // disabled (`BucketOwnerEnforced`); what is left asks for ACLs.
    let canned = h("x-amz-acl").filter(|v| !v.is_empty());
    if let Some(v) = canned.filter(|v| !CANNED_ACLS.contains(v)) {
        // S3's document gives no message for this one.
        return Err(invalid_argument("", "x-amz-acl", v));
    }
    let ownership = h("x-amz-object-ownership").filter(|v| !v.is_empty());
    if let Some(v) = ownership.filter(|v| !OBJECT_OWNERSHIPS.contains(v)) {
        return Err(bad_request(
            "InvalidArgument",
            format!("Invalid x-amz-object-ownership header: {v}"),
        )
        .with("ArgumentName", "x-amz-object-ownership"));
    }
    let grants = headers
        .keys()
        .any(|k| k.as_str().starts_with("x-amz-grant-"));
    let acl = grants || canned.is_some_and(|v| v != "private");
    if acl && ownership == Some("BucketOwnerEnforced") {
        return Err(bad_request(
            "InvalidBucketAclWithObjectOwnership",
            "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting",
        ));
    }
    // An object write's ACL depends on its bucket's ownership setting:
    // decided once the request is authorised (`object_acl_refusal`).
    if !matches!(*method, Method::PUT | Method::POST) {
        return Ok(());
    }
    // Every object is STANDARD here; another class would be a promise.
    if h("x-amz-storage-class").is_some_and(|v| !v.is_empty() && v != "STANDARD") {
        return Err(not_implemented());
    }
    let hold = h("x-amz-object-lock-legal-hold");
    let mode = h("x-amz-object-lock-mode");
    let until = h("x-amz-object-lock-retain-until-date");
    if hold.is_none() && mode.is_none() && until.is_none() {
        return Ok(());
    }
    if let Some(v) = hold {
        if v != "ON" && v != "OFF" {
            return Err(invalid_argument(
                "Legal Hold must be either of 'ON' or 'OFF'",
                "x-amz-object-lock-legal-hold",
                v,
            ));
        }
    }
    if let Some(v) = mode {
        if v != "GOVERNANCE" && v != "COMPLIANCE" {
            return Err(invalid_argument(
                "Unknown wormMode directive.",
                "x-amz-object-lock-mode",
                v,
            ));
        }
    }
    if let Some(v) = until {
        let when = parse_iso8601(v).ok_or_else(|| {
            invalid_argument(
                "The retain until date must be provided in ISO 8601 format",
                "x-amz-object-lock-retain-until-date",
                v,
            )
        })?;
        if when <= now_secs() {
            return Err(invalid_argument(
                "The retain until date must be in the future!",
                "x-amz-object-lock-retain-until-date",
                v,
            ));
        }
    }
    match (mode, until) {
        (Some(_), None) => return Err(invalid_argument(
            "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied.",
            "x-amz-object-lock-retain-until-date",
            "",
        )),
        (None, Some(_)) => return Err(invalid_argument(
            "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied.",
            "x-amz-object-lock-mode",
            "",
        )),
        _ => {}
    }
    Ok(())
}

/// S3's canned ACLs (`x-amz-acl`), for buckets and objects.
const CANNED_ACLS: [&str; 8] = [
    "private",
    "public-read",
    "public-read-write",
    "authenticated-read",
    "aws-exec-read",
    "bucket-owner-read",
    "bucket-owner-full-control",
    "log-delivery-write",
];

/// S3's object ownership settings (`x-amz-object-ownership`).
const OBJECT_OWNERSHIPS: [&str; 3] = [
    "BucketOwnerPreferred",
    "ObjectWriter",
    "BucketOwnerEnforced",
];

/// `2025-01-02T03:04:05Z` (fractions and `+00:00` accepted) → seconds.
fn parse_iso8601(v: &str) -> Option<i64> {
    let v = v.trim();
    let (date, time) = v.split_once('T')?;
    let d: Vec<&str> = date.split('-').collect();
    if d.len() != 3 {
        return None;
    }
    let t = time
        .trim_end_matches('Z')
        .trim_end_matches("+00:00")
        .split('.')
        .next()?
        .replace(':', "");
    parse_amz_date(&format!("{}{}{}T{t}Z", d[0], d[1], d[2]))
}

/// Header checks that do not depend on authentication.
/// `%XX`-decode `s`; `None` for a bad escape or bytes that are not UTF-8.
fn strict_percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3)?;
            let v = std::str::from_utf8(hex).ok()?;
            if !v.bytes().all(|c| c.is_ascii_hexdigit()) {
                return None;
            }
            out.push(u8::from_str_radix(v, 16).ok()?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The shape of `x-amz-copy-source` (`[/]BUCKET/KEY[?versionId=…]`,
/// percent-encoded): its encoding, the bucket name, and a key that is not
/// empty and has no `.` or `..` component. The source's existence is the
/// copy's business.
pub fn check_copy_source(raw: &str) -> Result<(), Refusal> {
    check_copy_source_key(&copy_source_key(raw)?)
}

fn copy_source_refusal(desc: &str, value: &str) -> Refusal {
    bad_request("InvalidArgument", desc)
        .with("ArgumentName", "x-amz-copy-source")
        .with("ArgumentValue", value)
}

/// The key of `x-amz-copy-source`, decoded, once its encoding, version id
/// and bucket name are checked (refused before the request is
/// authorised: they name no object).
pub fn copy_source_key(raw: &str) -> Result<String, Refusal> {
    let s = raw.strip_prefix('/').unwrap_or(raw);
    let path = s.find("?versionId=").map_or(s, |i| &s[..i]);
    if s.ends_with("?versionId=") && path.len() + "?versionId=".len() == s.len() {
        return Err(empty_version_id("x-amz-copy-source"));
    }
    let decoded = strict_percent_decode(path)
        .ok_or_else(|| copy_source_refusal("Invalid copy source encoding", raw))?;
    // A client that percent-encoded the whole source, `?versionId=` with
    // it, still means a version id: split there too, and refuse what is
    // not a version id (it would name a file), rather than read it as
    // part of the key.
    let (decoded, version) = match decoded.split_once("?versionId=") {
        Some((p, v)) => (p.to_string(), Some(v.to_string())),
        None => (decoded, None),
    };
    if version.as_deref() == Some("") {
        return Err(empty_version_id("x-amz-copy-source"));
    }
    if let Some(v) = version.filter(|v| !crate::versions::id::check(v)) {
        return Err(
            bad_request("InvalidArgument", "Invalid version id specified")
                .with("ArgumentName", "versionId")
                .with("ArgumentValue", v),
        );
    }
    let (bucket, key) = decoded.split_once('/').unwrap_or((&decoded, ""));
    if crate::names::check_bucket(bucket).is_err() {
        return Err(copy_source_refusal("Invalid copy source bucket name", raw));
    }
    Ok(key.to_string())
}

/// A copy source key that is empty or has a `.` or `..` component. The
/// handler refuses it after the request is authorised, the key read with
/// its dot segments resolved ([`crate::names::lexical_key`]): a caller
/// not allowed to read what it names is told only that.
pub fn check_copy_source_key(key: &str) -> Result<(), Refusal> {
    let traverses = key
        .strip_suffix('/')
        .unwrap_or(key)
        .split('/')
        .any(|c| c == "." || c == "..");
    if key.is_empty() || traverses {
        return Err(copy_source_refusal("Invalid copy source object key", key));
    }
    Ok(())
}

/// What an object write (PutObject, CopyObject, CreateMultipartUpload)
/// asking for an ACL gets, by its bucket's ownership setting; `None`: it
/// goes on. Under `BucketOwnerEnforced` ACLs have no effect and S3 takes
/// only `bucket-owner-full-control` (what tools that upload into another
/// account's bucket send), refusing any other as
/// `AccessControlListNotSupported`; elsewhere an object ACL would have to
/// be kept, which this gateway does not do: `NotImplemented`, never
/// silently dropped.
pub fn object_acl_refusal(headers: &HeaderMap, enforced: bool) -> Option<Refusal> {
    let canned = headers
        .get("x-amz-acl")
        .map(|v| v.to_str().unwrap_or(""))
        .filter(|v| !v.is_empty());
    let grants = headers
        .keys()
        .any(|k| k.as_str().starts_with("x-amz-grant-"));
    if !grants && canned.is_none_or(|v| v == "private") {
        return None;
    }
    if !enforced {
        return Some(not_implemented());
    }
    if !grants && canned == Some("bucket-owner-full-control") {
        return None;
    }
    Some(bad_request(
        "AccessControlListNotSupported",
        "The bucket does not allow ACLs",
    ))
}

/// The most bytes of request headers S3 takes (names, values, `: ` and
/// line ends).
pub const MAX_HEADER_SECTION: usize = 8 << 10;

fn check_header_size(headers: &HeaderMap) -> Result<(), Refusal> {
    let size: usize = headers
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum();
    if size > MAX_HEADER_SECTION {
        return Err(bad_request(
            "RequestHeaderSectionTooLarge",
            "Your request header section exceeds the maximum allowed size.",
        )
        .with("MaxSizeAllowed", MAX_HEADER_SECTION.to_string()));
    }
    Ok(())
}

/// The answer for a bucket that is not there.
pub fn no_such_bucket(bucket: &str) -> Refusal {
    Refusal::new(
        StatusCode::NOT_FOUND,
        "NoSuchBucket",
        "The specified bucket does not exist.",
    )
    .with("BucketName", bucket)
}

/// Whether the request's body is aws-chunked (`x-amz-content-sha256:
/// STREAMING-…`).
pub fn is_streaming(headers: &HeaderMap) -> bool {
    headers
        .get("x-amz-content-sha256")
        .is_some_and(|v| v.as_bytes().starts_with(b"STREAMING-"))
}

/// aws-chunked bodies: only PutObject and UploadPart take one; they need
/// `x-amz-decoded-content-length`; a signed one with a trailer needs
/// `x-amz-trailer` to say what the trailer holds.
fn check_streaming(
    method: &Method,
    uri: &Uri,
    query: &[(String, String)],
    headers: &HeaderMap,
) -> Result<(), Refusal> {
    if !is_streaming(headers) {
        return Ok(());
    }
    let path = uri.path().trim_start_matches('/');
    let is_object = path.split_once('/').is_some_and(|(_, k)| !k.is_empty());
    let upload = *method == Method::PUT
        && is_object
        && query.iter().all(|(k, _)| {
            matches!(
                k.as_str(),
                "partNumber"
                    | "uploadId"
                    | "x-id"
                    | "X-Amz-Algorithm"
                    | "X-Amz-Credential"
                    | "X-Amz-Date"
                    | "X-Amz-Expires"
                    | "X-Amz-SignedHeaders"
                    | "X-Amz-Signature"
            )
        });
    if !upload {
        return Err(bad_request(
            "InvalidRequest",
            "The value of x-amz-content-sha256 header is invalid.",
        ));
    }
    let decoded = headers
        .get("x-amz-decoded-content-length")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit()));
    if !decoded {
        return Err(Refusal::new(
            StatusCode::LENGTH_REQUIRED,
            "MissingContentLength",
            "You must provide the Content-Length HTTP header.",
        ));
    }
    let sha = headers
        .get("x-amz-content-sha256")
        .map(|v| v.as_bytes())
        .unwrap_or_default();
    if sha.ends_with(b"-TRAILER")
        && sha != b"STREAMING-UNSIGNED-PAYLOAD-TRAILER"
        && !headers.contains_key("x-amz-trailer")
    {
        return Err(bad_request(
            "MalformedTrailerError",
            "The request contained trailing data that was not well-formed or did not conform to our published schema.",
        ));
    }
    Ok(())
}

fn check_headers(method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
    for (k, _) in headers {
        let k = k.as_str();
        if k.starts_with("x-amz-server-side-encryption")
            || k.starts_with("x-amz-copy-source-server-side-encryption")
        {
            return Err(not_implemented());
        }
    }
    check_unsupported(method, headers)?;
    if let Some(v) = headers.get("x-amz-website-redirect-location") {
        let v = v.to_str().unwrap_or("");
        if !(v.starts_with('/') || v.starts_with("http://") || v.starts_with("https://")) {
            return Err(bad_request(
                "InvalidRedirectLocation",
                "The website redirect location must have a prefix of 'http://' or 'https://' or '/'.",
            ));
        }
    }
    if let Some(v) = headers.get("content-md5") {
        let v = v.to_str().unwrap_or("");
        use base64::engine::{general_purpose, GeneralPurpose};
        use base64::Engine as _;
        // Non-zero bits past the 128 (`...+s==`) are taken, as S3 takes
        // them; the digest then decides (BadDigest).
        const LENIENT: GeneralPurpose = GeneralPurpose::new(
            &base64::alphabet::STANDARD,
            general_purpose::PAD.with_decode_allow_trailing_bits(true),
        );
        let ok = LENIENT.decode(v.trim()).is_ok_and(|d| d.len() == 16);
        if !ok {
            return Err(bad_request(
                "InvalidDigest",
                "The Content-Md5 you specified is not valid.",
            )
            .with("Content-MD5", v));
        }
    }
    if matches!(*method, Method::PUT | Method::POST) {
        let size: usize = headers
            .iter()
            .filter_map(|(k, v)| {
                let n = k.as_str().strip_prefix("x-amz-meta-")?;
                Some(n.len() + v.as_bytes().len())
            })
            .sum();
        if size > MAX_METADATA {
            return Err(bad_request(
                "MetadataTooLarge",
                "Your metadata headers exceed the maximum allowed metadata size",
            )
            .with("Size", size.to_string())
            .with("MaxSizeAllowed", MAX_METADATA.to_string()));
        }
    }
    Ok(())
}

fn param<'a>(query: &'a [(String, String)], k: &str) -> Option<&'a str> {
    query.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
}

#[cfg(test)]
mod tests;
