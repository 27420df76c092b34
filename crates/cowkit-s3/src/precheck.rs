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

/// The most user metadata (`x-amz-meta-*` names and values) S3 accepts.
pub const MAX_METADATA: usize = 2048;
/// The longest `X-Amz-Expires` S3 accepts (7 days).
pub const MAX_EXPIRES: i64 = 604_800;
/// How far a presigned URL's date may be in the future.
const MAX_SKEW: Duration = Duration::from_secs(15 * 60);

/// An S3 error answered without going further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// HTTP status.
    pub status: StatusCode,
    /// S3 error code.
    pub code: &'static str,
    /// The message S3 gives.
    pub message: String,
    /// Extra elements of the `<Error>` document.
    pub extra: Vec<(&'static str, String)>,
}

impl Refusal {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            code,
            message: message.into(),
            extra: Vec::new(),
        }
    }

    fn with(mut self, name: &'static str, value: impl Into<String>) -> Refusal {
        self.extra.push((name, value.into()));
        self
    }

    /// The `<Error>` XML document.
    pub fn to_xml(&self) -> String {
        let mut s = String::from(r#"<?xml version="1.0" encoding="UTF-8"?><Error>"#);
        s += &format!("<Code>{}</Code>", self.code);
        s += &format!("<Message>{}</Message>", xml_escape(&self.message));
        for (k, v) in &self.extra {
            s += &format!("<{k}>{}</{k}>", xml_escape(v));
        }
        s += "</Error>";
        s
    }
}

/// Escape text for XML.
pub fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// What the checks need to know about the server.
#[derive(Debug, Clone)]
pub struct Prechecks {
    /// The region requests must be signed for.
    pub region: String,
    /// The access key, when credentials are configured.
    pub access_key: Option<String>,
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

/// Go's `%q` for the ASCII strings these messages quote.
fn q(s: &str) -> String {
    format!("{s:?}")
}

fn unsupported_mechanism() -> Refusal {
    bad_request(
        "InvalidRequest",
        "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
    )
}

fn invalid_access_key(ak: &str) -> Refusal {
    forbidden(
        "InvalidAccessKeyId",
        "The AWS Access Key Id you provided does not exist in our records.",
    )
    .with("AWSAccessKeyId", ak)
}

/// `yyyyMMdd'T'HHmmss'Z'` → seconds since the epoch.
fn parse_amz_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (h, mi, se) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se)
}

fn valid_ymd(s: &str) -> bool {
    s.len() == 8 && parse_amz_date(&format!("{s}T000000Z")).is_some()
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

fn http_date(secs: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_secs(secs.max(0) as u64);
    let mut buf = Vec::new();
    match s3s::dto::Timestamp::from(t).format(s3s::dto::TimestampFormat::DateTime, &mut buf) {
        Ok(()) => String::from_utf8_lossy(&buf).into_owned(),
        Err(_) => String::new(),
    }
}

/// The credential scope's five parts, checked in S3's order. `malformed`,
/// `prefix` make the messages of the header and the query forms.
fn check_scope<'a>(
    cred: &'a str,
    region: &str,
    err: &dyn Fn(String) -> Refusal,
) -> Result<(&'a str, &'a str), Refusal> {
    let parts: Vec<&str> = cred.split('/').collect();
    if parts.len() != 5 {
        return Err(err(
            "the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\"."
                .into(),
        ));
    }
    if parts[4] != "aws4_request" {
        return Err(err(format!(
            "incorrect terminal {}. This endpoint uses \"aws4_request\".",
            q(parts[4])
        )));
    }
    if parts[3] != "s3" {
        return Err(err(format!(
            "incorrect service {}. This endpoint belongs to \"s3\".",
            q(parts[3])
        )));
    }
    if parts[2] != region {
        return Err(err(format!(
            "the region {} is wrong; expecting {}",
            q(parts[2]),
            q(region)
        ))
        .with("Region", region));
    }
    if !valid_ymd(parts[1]) {
        return Err(err(format!(
            "incorrect date format {}. This date in the credential must be in the format \"yyyyMMdd\".",
            q(parts[1])
        )));
    }
    Ok((parts[0], parts[1]))
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

fn unsigned_amz_headers(headers: &HeaderMap, signed: &str) -> Result<(), Refusal> {
    let signed: Vec<&str> = signed.split(';').map(str::trim).collect();
    let mut missing: Vec<&str> = headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with("x-amz-") && !signed.contains(k))
        // Trailer-carrying uploads and the SDKs' own unsigned extras.
        .filter(|k| !matches!(*k, "x-amz-content-sha256" | "x-amz-user-agent"))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if missing.is_empty() {
        return Ok(());
    }
    Err(forbidden(
        "AccessDenied",
        "There were headers present in the request which were not signed",
    )
    .with("HeadersNotSigned", missing.join(", ")))
}

impl Prechecks {
    /// Check a request's head; `Err` is the answer to send.
    pub fn check(&self, method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<(), Refusal> {
        check_header_size(headers)?;
        let query: Vec<(String, String)> = uri.query().map(url_decode_pairs).unwrap_or_default();
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
        check_streaming(method, uri, &query, headers)?;
        check_headers(method, headers)
    }

    fn check_header_auth(&self, auth: &str, headers: &HeaderMap) -> Result<(), Refusal> {
        if auth.starts_with("AWS ") {
            return Err(unsupported_mechanism());
        }
        let Some((algo, rest)) = auth.split_once(' ') else {
            return Err(bad_request(
                "InvalidArgument",
                "Authorization header is invalid -- one and only one ' ' (space) required.",
            )
            .with("ArgumentName", "Authorization")
            .with("ArgumentValue", auth));
        };
        if algo != "AWS4-HMAC-SHA256" {
            return Err(
                bad_request("InvalidArgument", "Unsupported Authorization Type")
                    .with("ArgumentName", "Authorization")
                    .with("ArgumentValue", algo),
            );
        }
        let malformed = |m: String| {
            bad_request(
                "AuthorizationHeaderMalformed",
                format!("The authorization header is malformed; {m}"),
            )
        };
        let comps: Vec<&str> = rest
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if comps.len() != 3 {
            return Err(malformed(
                "the authorization header requires three components: Credential, SignedHeaders, and Signature."
                    .into(),
            ));
        }
        let (mut cred, mut signed, mut sig) = (None, None, None);
        for c in &comps {
            let Some((k, v)) = c.split_once('=') else {
                return Err(malformed(format!(
                    "the authorization component {} is malformed.",
                    q(c)
                )));
            };
            match k {
                "Credential" => cred = Some(v),
                "SignedHeaders" => signed = Some(v),
                "Signature" => sig = Some(v),
                _ => {}
            }
        }
        let cred = cred.ok_or_else(|| malformed("missing Credential.".into()))?;
        let signed = signed.ok_or_else(|| malformed("missing SignedHeaders.".into()))?;
        sig.ok_or_else(|| malformed("missing Signature.".into()))?;
        let (ak, cred_date) = check_scope(cred, &self.region, &malformed)?;
        if let Some(mine) = &self.access_key {
            if ak != mine {
                return Err(invalid_access_key(ak));
            }
        }
        let amz_date = headers
            .get("x-amz-date")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let missing_date = || {
            forbidden(
                "AccessDenied",
                "AWS authentication requires a valid Date or x-amz-date header.",
            )
        };
        if amz_date.is_empty() {
            if !headers.contains_key(http::header::DATE) {
                return Err(missing_date());
            }
        } else {
            parse_amz_date(amz_date).ok_or_else(missing_date)?;
            if &amz_date[..8] != cred_date {
                return Err(malformed(
                    "The authorization header is malformed; Invalid credential date. Date is not the same as X-Amz-Date."
                        .into(),
                ));
            }
        }
        if let Some(h) = headers.get("x-amz-content-sha256") {
            let h = h.to_str().unwrap_or("");
            let hex64 = h.len() == 64 && h.bytes().all(|c| c.is_ascii_hexdigit());
            if !hex64 && !PAYLOAD_HASHES.contains(&h) {
                return Err(bad_request(
                    "InvalidArgument",
                    "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD, STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER or a valid sha256 value.",
                )
                .with("ArgumentName", "x-amz-content-sha256")
                .with("ArgumentValue", h));
            }
            // A body known to be empty has a known hash.
            let empty = headers.get(http::header::CONTENT_LENGTH).map_or(
                !headers.contains_key(http::header::TRANSFER_ENCODING),
                |v| v.as_bytes() == b"0",
            );
            if hex64 && empty && !h.eq_ignore_ascii_case(EMPTY_SHA256) {
                return Err(bad_request(
                    "XAmzContentSHA256Mismatch",
                    "The provided 'x-amz-content-sha256' header does not match what was computed.",
                )
                .with("ClientComputedContentSHA256", h)
                .with("S3ComputedContentSHA256", EMPTY_SHA256));
            }
        }
        unsigned_amz_headers(headers, signed)
    }

    fn check_presigned(
        &self,
        query: &[(String, String)],
        headers: &HeaderMap,
    ) -> Result<(), Refusal> {
        let get = |k: &str| param(query, k);
        let qerr = |m: String| bad_request("AuthorizationQueryParametersError", m);
        if get("X-Amz-Security-Token").is_some() {
            return Err(bad_request(
                "InvalidToken",
                "The provided token is malformed or otherwise invalid.",
            ));
        }
        match get("X-Amz-Algorithm") {
            Some("AWS4-HMAC-SHA256") | None => {}
            Some("AWS4-ECDSA-P256-SHA256") => {
                return Err(qerr(
                    "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"".into(),
                ))
            }
            Some(_) => {
                return Err(qerr(
                    "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256 and AWS4-ECDSA-P256-SHA256\""
                        .into(),
                ))
            }
        }
        let need = [
            "X-Amz-Algorithm",
            "X-Amz-Credential",
            "X-Amz-Signature",
            "X-Amz-Date",
            "X-Amz-SignedHeaders",
            "X-Amz-Expires",
        ];
        if need.iter().any(|k| get(k).is_none()) {
            return Err(qerr("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.".into()));
        }
        let cred = get("X-Amz-Credential").unwrap_or("");
        let scope_err =
            |m: String| qerr(format!("Error parsing the X-Amz-Credential parameter; {m}"));
        let (ak, cred_date) = check_scope(cred, &self.region, &scope_err)?;
        let amz_date = get("X-Amz-Date").unwrap_or("");
        let date = parse_amz_date(amz_date).ok_or_else(|| {
            qerr("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"".into())
        })?;
        if &amz_date[..8] != cred_date {
            return Err(qerr(format!(
                "Invalid credential date {}. This date is not the same as X-Amz-Date: {}.",
                q(cred_date),
                q(&amz_date[..8])
            )));
        }
        let expires_s = get("X-Amz-Expires").unwrap_or("");
        let expires: i64 = expires_s
            .parse()
            .map_err(|_| qerr("X-Amz-Expires should be a number".into()))?;
        if expires < 0 {
            return Err(qerr("X-Amz-Expires must be non-negative".into()));
        }
        if expires == 0 {
            return Err(qerr("X-Amz-Expires must be at least 1 second".into()));
        }
        if expires > MAX_EXPIRES {
            return Err(qerr("X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds".into()));
        }
        if let Some(mine) = &self.access_key {
            if ak != mine {
                return Err(invalid_access_key(ak));
            }
        }
        let now = now_secs();
        if date - now > MAX_SKEW.as_secs() as i64 {
            return Err(forbidden("AccessDenied", "Request is not valid yet."));
        }
        if now > date + expires {
            return Err(forbidden("AccessDenied", "Request has expired.")
                .with("X-Amz-Expires", expires.to_string())
                .with("Expires", http_date(date + expires))
                .with("ServerTime", http_date(now)));
        }
        unsigned_amz_headers(headers, get("X-Amz-SignedHeaders").unwrap_or(""))
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
            url_decode_pairs(q)
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
    if *method == Method::PUT && has("uploadId") && !has("partNumber") {
        return Err(method_not_allowed(method, "UPLOAD"));
    }
    if *method == Method::PUT && has("partNumber") && !has("uploadId") {
        return Err(bad_request(
            "InvalidArgument",
            "This operation does not accept partNumber without uploadId",
        )
        .with("ArgumentName", "partNumber")
        .with("ArgumentValue", param(query, "partNumber").unwrap_or("")));
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

fn invalid_argument(m: &str, name: &str, value: &str) -> Refusal {
    bad_request("InvalidArgument", m)
        .with("ArgumentName", name)
        .with("ArgumentValue", value)
}

/// Features the gateway does not have, asked for in headers: refused rather
/// than ignored. Object lock values are checked first as S3 checks them;
/// valid ones get S3's answer for a bucket without object lock (no bucket
/// here has it).
fn check_unsupported(method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
    let h = |k: &str| headers.get(k).map(|v| v.to_str().unwrap_or(""));
    if h("x-amz-bucket-object-lock-enabled").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Err(not_implemented());
    }
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
    if acl {
        return Err(not_implemented());
    }
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
    Err(bad_request(
        "InvalidRequest",
        "Bucket is missing ObjectLockConfiguration",
    ))
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
    let invalid = |desc: &str, value: &str| {
        bad_request("InvalidArgument", desc)
            .with("ArgumentName", "x-amz-copy-source")
            .with("ArgumentValue", value)
    };
    let s = raw.strip_prefix('/').unwrap_or(raw);
    let path = s.find("?versionId=").map_or(s, |i| &s[..i]);
    let decoded =
        strict_percent_decode(path).ok_or_else(|| invalid("Invalid copy source encoding", raw))?;
    // A client that percent-encoded the whole source, `?versionId=` with
    // it, still means a version id: split there too, and refuse the
    // version as the gateway refuses every version but `null` (no bucket
    // is versioned), rather than read it as part of the key.
    let (decoded, version) = match decoded.split_once("?versionId=") {
        Some((p, v)) => (p.to_string(), Some(v.to_string())),
        None => (decoded, None),
    };
    if let Some(v) = version.filter(|v| v != "null") {
        return Err(
            bad_request("InvalidArgument", "Invalid version id specified")
                .with("ArgumentName", "versionId")
                .with("ArgumentValue", v),
        );
    }
    let (bucket, key) = decoded.split_once('/').unwrap_or((&decoded, ""));
    if crate::names::check_bucket(bucket).is_err() {
        return Err(invalid("Invalid copy source bucket name", raw));
    }
    let traverses = key
        .strip_suffix('/')
        .unwrap_or(key)
        .split('/')
        .any(|c| c == "." || c == "..");
    if key.is_empty() || traverses {
        return Err(invalid("Invalid copy source object key", key));
    }
    Ok(())
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
        use base64::Engine as _;
        let ok = base64::engine::general_purpose::STANDARD
            .decode(v.trim())
            .is_ok_and(|d| d.len() == 16);
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

/// A query string's pairs, percent-decoded.
pub fn query_pairs(q: &str) -> Vec<(String, String)> {
    url_decode_pairs(q)
}

/// `a=b&c=d` with percent-decoding (`+` stays a plus, as in S3 queries).
fn url_decode_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (pct_decode(k), pct_decode(v))
        })
        .collect()
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // Bytes, not `&s[..]`: a `%` followed by a multi-byte character
        // is no escape, and must not split the character (found by the
        // `s3_request` fuzzer: a panic in the request's task).
        if b[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (
                b.get(i + 1).copied().and_then(hex),
                b.get(i + 2).copied().and_then(hex),
            ) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_before_a_multibyte_character_is_kept() {
        // Found by the `s3_request` fuzzer: `%2` then U+FEFF panicked.
        assert_eq!(pct_decode("a%2\u{feff}Fs3%2F"), "a%2\u{feff}Fs3/");
        assert_eq!(pct_decode("%41%4"), "A%4");
        assert_eq!(pct_decode("%"), "%");
        assert_eq!(pct_decode("%zz%e2%82%ac"), "%zz\u{20ac}");
    }

    fn pc() -> Prechecks {
        Prechecks {
            region: "us-east-1".into(),
            access_key: Some("AK".into()),
        }
    }

    fn run(uri: &str, hs: &[(&str, &str)]) -> Result<(), Refusal> {
        let mut h = HeaderMap::new();
        for (k, v) in hs {
            h.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        pc().check(&Method::GET, &uri.parse().unwrap(), &h)
    }

    #[test]
    fn header_section_over_8_kib() {
        let big = "d".repeat(8 << 10);
        let e = run("/b/k", &[("x-amz-custom-header", &big)]).unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code),
            (400, "RequestHeaderSectionTooLarge")
        );
        assert_eq!(e.extra, [("MaxSizeAllowed", "8192".to_string())]);
        let fits = "d".repeat(7 << 10);
        assert!(run("/b/k", &[("x-amz-meta-a", &fits)]).is_ok());
    }

    #[test]
    fn ranges() {
        for r in [
            "bytes=,",
            "bytes= -1",
            "bytes=--1",
            "bytes=0 -1",
            "bytes=0--1",
            "bytes=10-5",
            "bytes=abc",
            "foo=0-1",
            "bytes=100-x",
            "bytes=0-0,1-2",
        ] {
            assert!(range_is_ignored(r), "{r}");
        }
        for r in [
            "bytes=00-01",
            "bytes=-1",
            "bytes=0-",
            "bytes=0-999999",
            "bytes=-0",
            "bytes=100-110",
        ] {
            assert!(!range_is_ignored(r), "{r}");
        }
    }

    #[test]
    fn object_lock_and_acl() {
        let e = run("/b", &[("x-amz-bucket-object-lock-enabled", "true")]).unwrap_err();
        assert_eq!(e.status, StatusCode::NOT_IMPLEMENTED);
        let e = run("/b/k", &[("x-amz-acl", "public-read")]).unwrap_err();
        assert_eq!(e.status, StatusCode::NOT_IMPLEMENTED);
        assert!(run("/b/k", &[("x-amz-acl", "private")]).is_ok());
        // Values S3 refuses come before NotImplemented.
        let e = run("/b", &[("x-amz-acl", "invalid_acl")]).unwrap_err();
        assert_eq!((e.status.as_u16(), e.code), (400, "InvalidArgument"));
        assert_eq!(e.extra[1], ("ArgumentValue", "invalid_acl".to_string()));
        let e = run("/b", &[("x-amz-object-ownership", "invalid_ownership")]).unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code, e.message.as_str()),
            (
                400,
                "InvalidArgument",
                "Invalid x-amz-object-ownership header: invalid_ownership"
            )
        );
        for acl in [("x-amz-acl", "public-read"), ("x-amz-grant-read", "id=x")] {
            let e = run(
                "/b",
                &[("x-amz-object-ownership", "BucketOwnerEnforced"), acl],
            )
            .unwrap_err();
            assert_eq!(
                (e.status.as_u16(), e.code),
                (400, "InvalidBucketAclWithObjectOwnership")
            );
            // With ACLs enabled, an ACL is what the gateway does not do.
            let e = run("/b", &[("x-amz-object-ownership", "ObjectWriter"), acl]).unwrap_err();
            assert_eq!(e.status, StatusCode::NOT_IMPLEMENTED);
        }
        for o in [
            "BucketOwnerEnforced",
            "BucketOwnerPreferred",
            "ObjectWriter",
        ] {
            assert!(run("/b", &[("x-amz-object-ownership", o)]).is_ok(), "{o}");
            assert!(run(
                "/b",
                &[("x-amz-object-ownership", o), ("x-amz-acl", "private")]
            )
            .is_ok());
        }
        let put = |hs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in hs {
                h.insert(
                    http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            pc().check(&Method::PUT, &"/b/k".parse().unwrap(), &h)
        };
        assert_eq!(
            put(&[("x-amz-storage-class", "GLACIER")])
                .unwrap_err()
                .status,
            StatusCode::NOT_IMPLEMENTED
        );
        assert!(put(&[("x-amz-storage-class", "STANDARD")]).is_ok());
        let e = put(&[("x-amz-object-lock-legal-hold", "maybe")]).unwrap_err();
        assert!(e.message.contains("Legal Hold"));
        let e = put(&[("x-amz-object-lock-legal-hold", "ON")]).unwrap_err();
        assert_eq!(e.message, "Bucket is missing ObjectLockConfiguration");
        let e = put(&[
            ("x-amz-object-lock-mode", "GOVERNANCE"),
            (
                "x-amz-object-lock-retain-until-date",
                "2001-01-01T00:00:00Z",
            ),
        ])
        .unwrap_err();
        assert!(e.message.contains("future"));
        assert_eq!(parse_iso8601("1970-01-02T00:00:01.5Z"), Some(86401));
    }

    #[test]
    fn dates() {
        assert_eq!(parse_amz_date("19700101T000000Z"), Some(0));
        assert_eq!(parse_amz_date("20000301T000001Z"), Some(951_868_801));
        assert_eq!(parse_amz_date("03032006"), None);
        assert!(!valid_ymd("32234Z34"));
    }

    #[test]
    fn presigned_bounds() {
        let base = "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20250101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250101T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=00";
        let e = run(&format!("{base}&X-Amz-Expires=604801"), &[]).unwrap_err();
        assert_eq!(e.code, "AuthorizationQueryParametersError");
        let e = run(&format!("{base}&X-Amz-Expires=-1"), &[]).unwrap_err();
        assert!(e.message.contains("non-negative"));
        let e = run(&format!("{base}&X-Amz-Expires=x"), &[]).unwrap_err();
        assert!(e.message.contains("number"));
        let e = run(&format!("{base}&X-Amz-Expires=60"), &[]).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("AccessDenied", "Request has expired.")
        );
        let e = run(&format!("{base}&X-Amz-Expires=0"), &[]).unwrap_err();
        assert!(e.message.contains("at least 1 second"), "{e:?}");
        // Dated a day ahead of the clock: not valid yet.
        let tomorrow: String = http_date(now_secs() + 86_400)
            .chars()
            .filter(char::is_ascii_digit)
            .take(8)
            .collect();
        assert_eq!(tomorrow.len(), 8, "{tomorrow}");
        // The credential scope's date and X-Amz-Date both.
        let future = base.replace("20250101", &tomorrow);
        let e = run(&format!("{future}&X-Amz-Expires=60"), &[]).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            ("AccessDenied", "Request is not valid yet.")
        );
        let e = run(
            &base
                .replace("us-east-1", "eu-west-1")
                .replace("&X-Amz-Signature", "&X-Amz-Expires=60&X-Amz-Signature"),
            &[],
        )
        .unwrap_err();
        assert!(e.message.contains("region \"eu-west-1\" is wrong"), "{e:?}");
        let e = run("/b/k", &[("authorization", "AWS AK:sig")]).unwrap_err();
        assert_eq!(e.code, "InvalidRequest");
    }

    #[test]
    fn list_parts_integers() {
        for (q, name, v) in [
            (
                "part-number-marker=invalid",
                "part-number-marker",
                "invalid",
            ),
            (
                "part-number-marker=2736457823532448723",
                "part-number-marker",
                "2736457823532448723",
            ),
            ("max-parts=x", "max-parts", "x"),
        ] {
            let e = run(&format!("/b/k?uploadId=u&{q}"), &[]).unwrap_err();
            assert_eq!((e.status.as_u16(), e.code), (400, "InvalidArgument"));
            assert_eq!(
                e.message,
                format!("Provided {v} not an integer or within integer range")
            );
            assert_eq!(e.extra[0], ("ArgumentName", name.to_string()));
        }
        // Negative numbers parse: the gateway refuses them (its own message).
        assert!(run("/b/k?uploadId=u&part-number-marker=-14", &[]).is_ok());
        assert!(run("/b/k?uploadId=u&part-number-marker=3&max-parts=2", &[]).is_ok());
    }

    #[test]
    fn sse_and_metadata() {
        let e = run("/b/k", &[("x-amz-server-side-encryption", "AES256")]).unwrap_err();
        assert_eq!(e.status, StatusCode::NOT_IMPLEMENTED);
        let e = run("/b/k", &[("content-md5", "")]).unwrap_err();
        assert_eq!(e.code, "InvalidDigest");
        let big = "v".repeat(2100);
        let mut h = HeaderMap::new();
        h.insert("x-amz-meta-a", big.parse().unwrap());
        let e = pc()
            .check(&Method::PUT, &"/b/k".parse().unwrap(), &h)
            .unwrap_err();
        assert_eq!(e.code, "MetadataTooLarge");
    }

    #[test]
    fn copy_sources() {
        for ok in [
            "b1k/obj",
            "/b1k/a/b/c",
            "b1k/a%20b",
            "b1k/%E2%82%AC",
            "b1k/k?versionId=x%",
            "b1k/dir/",
        ] {
            assert_eq!(check_copy_source(ok), Ok(()), "{ok}");
        }
        let arg = |e: Refusal| {
            assert_eq!((e.status.as_u16(), e.code), (400, "InvalidArgument"));
            (e.message, e.extra[1].1.clone())
        };
        for enc in [
            "bucket/%ZZ",
            "100%/foo",
            "bucket/%A/bar",
            "%",
            "bucket/%1",
            "bucket/%C3%",
            "bucket/%C3%28",
        ] {
            let (m, v) = arg(check_copy_source(enc).unwrap_err());
            assert_eq!(
                (m.as_str(), v.as_str()),
                ("Invalid copy source encoding", enc)
            );
        }
        for b in ["192.168.1.1/foo", "my-buc@k&()t/obj", "Copy-Source", "ab/k"] {
            let (m, v) = arg(check_copy_source(b).unwrap_err());
            assert_eq!(
                (m.as_str(), v.as_str()),
                ("Invalid copy source bucket name", b)
            );
        }
        // A `?versionId=` that came percent-encoded is still the version.
        let e = check_copy_source("bucket/src-obj%3FversionId%3D..%2f..%2fsecret.txt").unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code, e.message.as_str()),
            (400, "InvalidArgument", "Invalid version id specified")
        );
        assert_eq!(
            e.extra[1],
            ("ArgumentValue", "../../secret.txt".to_string())
        );
        assert_eq!(check_copy_source("bucket/k%3FversionId%3Dnull"), Ok(()));
        for (k, key) in [
            ("bucket", ""),
            ("bucket/", ""),
            ("bucket/.", "."),
            ("bucket/../", "../"),
            ("bucket/a/../../b", "a/../../b"),
        ] {
            let (m, v) = arg(check_copy_source(k).unwrap_err());
            assert_eq!(
                (m.as_str(), v.as_str()),
                ("Invalid copy source object key", key)
            );
        }
    }

    #[test]
    fn empty_body_hash() {
        let auth = "AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=00";
        let wrong = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b854";
        let h = |sha: &'static str, len: Option<&'static str>| {
            let mut v = vec![
                ("authorization", auth),
                ("x-amz-date", "20250101T000000Z"),
                ("x-amz-content-sha256", sha),
            ];
            v.extend(len.map(|l| ("content-length", l)));
            v
        };
        let e = run("/b/k?tagging", &h(wrong, None)).unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code),
            (400, "XAmzContentSHA256Mismatch")
        );
        assert!(e
            .extra
            .contains(&("S3ComputedContentSHA256", EMPTY_SHA256.to_string())));
        assert!(e
            .extra
            .contains(&("ClientComputedContentSHA256", wrong.to_string())));
        let e = run("/b/k", &h(wrong, Some("0"))).unwrap_err();
        assert_eq!(e.code, "XAmzContentSHA256Mismatch");
        // A body of some length is hashed later (by s3s).
        assert!(run("/b/k", &h(wrong, Some("3"))).is_ok());
        assert!(run("/b/k", &h(EMPTY_SHA256, None)).is_ok());
        assert!(run("/b/k", &h("UNSIGNED-PAYLOAD", Some("0"))).is_ok());
    }

    #[test]
    fn streaming_bodies() {
        let put = |uri: &str, hs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in hs {
                h.insert(
                    http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            pc().check(&Method::PUT, &uri.parse().unwrap(), &h)
        };
        let unsigned = ("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
        let signed = (
            "x-amz-content-sha256",
            "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
        );
        let len = ("x-amz-decoded-content-length", "5");
        assert!(put("/b/k", &[unsigned, len]).is_ok());
        assert!(put("/b/k?partNumber=1&uploadId=u", &[unsigned, len]).is_ok());
        assert!(put("/b/k", &[("x-amz-content-sha256", "UNSIGNED-PAYLOAD")]).is_ok());
        for uri in ["/b?cors", "/b?tagging", "/b", "/b/k?tagging"] {
            let e = put(uri, &[unsigned, len]).unwrap_err();
            assert_eq!(
                (e.status.as_u16(), e.code),
                (400, "InvalidRequest"),
                "{uri}"
            );
        }
        for bad in ["", "abc", "12x"] {
            let e = put("/b/k", &[unsigned, ("x-amz-decoded-content-length", bad)]).unwrap_err();
            assert_eq!(
                (e.status.as_u16(), e.code),
                (411, "MissingContentLength"),
                "{bad}"
            );
        }
        let e = put("/b/k", &[unsigned]).unwrap_err();
        assert_eq!(e.code, "MissingContentLength");
        let e = put("/b/k", &[signed, len]).unwrap_err();
        assert_eq!(e.code, "MalformedTrailerError");
        assert!(put(
            "/b/k",
            &[signed, len, ("x-amz-trailer", "x-amz-checksum-crc32")]
        )
        .is_ok());
    }
}
