//! The HTTP server: s3s on hyper, one task per connection, an access log
//! line per request, graceful shutdown.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use hyper_util::rt::TokioExecutor;
use hyper_util::server::conn::auto::Builder as ConnBuilder;
use s3s::auth::SimpleAuth;
use s3s::service::S3ServiceBuilder;
use tokio::net::TcpListener;

use std::sync::Arc;

use crate::conditions::Conditions;
use crate::error::{io, Result};
use crate::gateway::{S3Gateway, ACCESS_LOG};
use crate::limits::{admit, refuse, Answer, Guarded, Limits, Registry, Slot, Throttle, TimedBody};
use crate::precheck::{Prechecks, Refusal};
use crate::sendfile::SendfileIo;
use crate::store::{Options, Store};

/// Everything `cowkit s3 serve` needs.
#[derive(Debug, Clone)]
pub struct Config {
    /// The directory served.
    pub root: PathBuf,
    /// Where to listen.
    pub listen: SocketAddr,
    /// Access key and secret key; requests must be signed with them.
    pub credentials: Option<(String, String)>,
    /// Allow unsigned requests.
    pub anonymous: bool,
    /// The region requests must be signed for (`us-east-1` by default).
    pub region: String,
    /// Storage options.
    pub store: Options,
    /// Send GET bodies with `sendfile` on HTTP/1 connections
    /// ([`crate::sendfile`]; `cowkit s3 serve` turns it on unless given
    /// `--no-sendfile`); otherwise the `pread` body ([`crate::body`]).
    pub sendfile: bool,
    /// Timeouts for peers that stop talking, and the connection caps
    /// ([`crate::limits`]).
    pub limits: Limits,
}

/// The answer to a request refused by the prechecks.
fn refusal_response(r: &Refusal) -> s3s::HttpResponse {
    let mut res = hyper::Response::new(s3s::Body::from(r.to_xml()));
    *res.status_mut() = r.status;
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/xml"),
    );
    res
}

/// An error document with S3's message for its code (s3s writes its own
/// words, or none; clients and conformance suites compare S3's).
fn standard_error(mut res: s3s::HttpResponse) -> s3s::HttpResponse {
    if res.status().as_u16() < 400 {
        return res;
    }
    let Some(body) = res.body().bytes() else {
        return res;
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        return res;
    };
    let between = |a: &str, b: &str| -> Option<(usize, usize)> {
        let s = text.find(a)? + a.len();
        let e = s + text[s..].find(b)?;
        Some((s, e))
    };
    let Some((cs, ce)) = between("<Code>", "</Code>") else {
        return res;
    };
    // Only codes s3s answers itself: the gateway's own errors carry their
    // messages already.
    use s3s::S3ErrorCode as C;
    let code = s3s::S3ErrorCode::from_bytes(&text.as_bytes()[cs..ce]).filter(|c| {
        matches!(
            c,
            C::SignatureDoesNotMatch
                | C::InvalidBucketName
                | C::MalformedXML
                | C::MethodNotAllowed
                | C::InvalidAccessKeyId
                | C::InvalidRange
        )
    });
    let Some(msg) = code.as_ref().and_then(crate::error::standard_message) else {
        return res;
    };
    let msg = crate::precheck::xml_escape(msg);
    let fixed = match between("<Message>", "</Message>") {
        Some((ms, me)) => format!("{}{msg}{}", &text[..ms], &text[me..]),
        None => {
            let at = ce + "</Code>".len();
            format!("{}<Message>{msg}</Message>{}", &text[..at], &text[at..])
        }
    };
    res.headers_mut().remove(http::header::CONTENT_LENGTH);
    *res.body_mut() = s3s::Body::from(fixed);
    res
}

/// Extra elements the gateway gave an error (see
/// [`crate::respond::ERROR_ELEMENT`]) moved into its XML document.
fn error_elements(mut res: s3s::HttpResponse) -> s3s::HttpResponse {
    let name = crate::respond::ERROR_ELEMENT;
    if !res.headers().contains_key(name) {
        return res;
    }
    let extra: String = res
        .headers()
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok()?.split_once('='))
        .filter(|(k, _)| !k.is_empty() && k.bytes().all(|c| c.is_ascii_alphanumeric()))
        .map(|(k, v)| format!("<{k}>{}</{k}>", crate::precheck::xml_escape(v)))
        .collect();
    res.headers_mut().remove(name);
    let Some(body) = res.body().bytes() else {
        return res;
    };
    let text = String::from_utf8_lossy(&body);
    let Some(at) = text.rfind("</Error>") else {
        return res;
    };
    let fixed = format!("{}{extra}{}", &text[..at], &text[at..]);
    res.headers_mut().remove(http::header::CONTENT_LENGTH);
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/xml"),
    );
    *res.body_mut() = s3s::Body::from(fixed);
    res
}

/// Elements the gateway asked for (see [`crate::respond::XML_ELEMENT`])
/// put into a successful response's XML document.
fn xml_elements(mut res: s3s::HttpResponse) -> s3s::HttpResponse {
    let name = crate::respond::XML_ELEMENT;
    if !res.headers().contains_key(name) {
        return res;
    }
    let wanted: Vec<String> = res
        .headers()
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_string))
        .collect();
    res.headers_mut().remove(name);
    let Some(body) = res.body().bytes() else {
        return res;
    };
    let mut text = String::from_utf8_lossy(&body).into_owned();
    for w in &wanted {
        if let Some(at) = insert_at(&text, w) {
            text.insert_str(at.0, &at.1);
        }
    }
    res.headers_mut().remove(http::header::CONTENT_LENGTH);
    *res.body_mut() = s3s::Body::from(text);
    res
}

/// Where in `text` the element `want` (`Parent#n/Name=value`) goes, and
/// its XML.
fn insert_at(text: &str, want: &str) -> Option<(usize, String)> {
    let (place, value) = want.split_once('=')?;
    let (parent, name) = place.split_once('/')?;
    let (parent, nth) = parent.split_once('#')?;
    let nth: usize = nth.parse().ok()?;
    let ok = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric());
    if !ok(parent) || !ok(name) || nth == 0 {
        return None;
    }
    let close = format!("</{parent}>");
    let (at, _) = text.match_indices(&close).nth(nth - 1)?;
    Some((
        at,
        format!("<{name}>{}</{name}>", crate::precheck::xml_escape(value)),
    ))
}

/// The status the gateway asked for (see [`crate::respond::STATUS`]).
fn forced_status(mut res: s3s::HttpResponse) -> s3s::HttpResponse {
    let Some(v) = res.headers_mut().remove(crate::respond::STATUS) else {
        return res;
    };
    if res.status().is_success() {
        if let Some(s) = std::str::from_utf8(v.as_bytes())
            .ok()
            .and_then(|s| s.parse::<u16>().ok())
            .and_then(|s| http::StatusCode::from_u16(s).ok())
        {
            *res.status_mut() = s;
        }
    }
    res
}

/// A 304 has no body (s3s writes an error document).
fn not_modified(mut res: s3s::HttpResponse) -> s3s::HttpResponse {
    if res.status() == http::StatusCode::NOT_MODIFIED {
        res.headers_mut().remove(http::header::CONTENT_LENGTH);
        res.headers_mut().remove(http::header::CONTENT_TYPE);
        *res.body_mut() = s3s::Body::empty();
    }
    res
}

/// A response whose body started before its result was known (the
/// keepalive of a slow CompleteMultipartUpload) gets its result's XML
/// declaration removed: s3s writes one before the whitespace and another
/// one with an error document, and a document has one.
fn one_declaration(res: s3s::HttpResponse) -> s3s::HttpResponse {
    let chunked = res
        .headers()
        .get(http::header::TRANSFER_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"));
    if !chunked {
        return res;
    }
    res.map(|inner| s3s::Body::http_body(OneDeclaration { inner, first: true }))
}

struct OneDeclaration {
    inner: s3s::Body,
    first: bool,
}

impl http_body::Body for OneDeclaration {
    type Data = bytes::Bytes;
    type Error = s3s::StdError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<std::result::Result<http_body::Frame<bytes::Bytes>, s3s::StdError>>>
    {
        let this = &mut *self;
        let frame = std::task::ready!(std::pin::Pin::new(&mut this.inner).poll_frame(cx));
        let Some(Ok(frame)) = frame else {
            return std::task::Poll::Ready(frame);
        };
        let frame = match frame.into_data() {
            Ok(data) if this.first => {
                this.first = false;
                http_body::Frame::data(data)
            }
            Ok(data) => http_body::Frame::data(strip_declaration(data)),
            Err(f) => f,
        };
        std::task::Poll::Ready(Some(Ok(frame)))
    }
}

/// `data` without a leading `<?xml …?>`.
fn strip_declaration(data: bytes::Bytes) -> bytes::Bytes {
    let start = data
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(data.len());
    if data[start..].starts_with(b"<?xml") {
        if let Some(end) = data[start..].windows(2).position(|w| w == b"?>") {
            return data.slice(start + end + 2..);
        }
    }
    data
}

/// Who may do what, once s3s has checked the signature: a signed request
/// (or any request when `open`: `--anonymous` or no credentials), whose
/// `x-amz-expected-bucket-owner` and `x-amz-source-expected-bucket-owner`
/// name the owner of every bucket here (the access key; `anonymous`
/// without one, as the gateway reports owners).
struct Access {
    open: bool,
}

impl Access {
    fn check(
        &self,
        creds: Option<&s3s::auth::Credentials>,
        headers: &http::HeaderMap,
    ) -> s3s::S3Result<()> {
        if !self.open && creds.is_none() {
            return Err(s3s::s3_error!(AccessDenied, "Signature is required"));
        }
        let owner = creds.map_or("anonymous", |c| c.access_key.as_str());
        for h in [
            "x-amz-expected-bucket-owner",
            "x-amz-source-expected-bucket-owner",
        ] {
            if headers
                .get(h)
                .is_some_and(|v| v.as_bytes() != owner.as_bytes())
            {
                // With the full stop, as the conformance suite compares it
                // (the code and the 403 are S3's either way).
                return Err(s3s::s3_error!(AccessDenied, "Access Denied."));
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl s3s::access::S3Access for Access {
    async fn check(&self, cx: &mut s3s::access::S3AccessContext<'_>) -> s3s::S3Result<()> {
        Access::check(self, cx.credentials(), cx.headers())
    }
}

/// Headers to take off a request once s3s has verified its signature (a
/// request extension the [`Handler`] adds; see [`Detour`]).
#[derive(Debug, Clone)]
struct Strip(Vec<http::HeaderName>);

/// Marks a CompleteMultipartUpload: its document goes through the
/// [`Detour`], which takes out the part checksums s3s 0.14 cannot parse
/// (see [`crate::checksum::take_part_checksums`]) once s3s has verified the
/// signature and while it verifies the payload's hash.
#[derive(Debug, Clone, Copy)]
struct CompleteDocument;

/// Marks a CreateBucket with a body: its `<Tags>` (which s3s 0.14 would
/// drop) are taken out of the document in the [`Detour`] and handed to
/// the gateway.
#[derive(Debug, Clone, Copy)]
struct CreateBucketDocument;

/// The longest document the [`Detour`] reads whole (a CompleteMultipartUpload
/// of 10,000 parts with every element comes to about 3 MiB).
const MAX_DOCUMENT: usize = 16 << 20;

/// The s3s route of requests with headers S3 accepts and s3s 0.14 would
/// refuse to parse (unquoted entity tags in `If-Match` and its relatives, a
/// malformed `Range` S3 ignores). The signature covers them, so they can
/// only come off after s3s has verified it: this route takes them off then
/// and passes the request on to a second s3s service over the same gateway,
/// one without authentication (the first one has done it). The gateway
/// reads the conditions from the [`Conditions`] extension.
struct Detour {
    inner: s3s::service::S3Service,
    /// Whether requests without credentials are served.
    open: bool,
}

/// Query parameters of presigned URLs (already verified when the detour
/// sees them; the inner service would try to verify them again).
const PRESIGN_PARAMS: [&str; 10] = [
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
    "X-Amz-Security-Token",
    "AWSAccessKeyId",
    "Signature",
    "Expires",
];

/// `uri` without the presigned URL's parameters.
fn without_presign(uri: &http::Uri) -> http::Uri {
    let Some(q) = uri.query() else {
        return uri.clone();
    };
    let kept: Vec<&str> = q
        .split('&')
        .filter(|p| {
            let name = p.split('=').next().unwrap_or("");
            !PRESIGN_PARAMS.contains(&name)
        })
        .collect();
    let pq = if kept.is_empty() {
        uri.path().to_string()
    } else {
        format!("{}?{}", uri.path(), kept.join("&"))
    };
    let mut parts = uri.clone().into_parts();
    match pq.parse() {
        Ok(pq) => {
            parts.path_and_query = Some(pq);
            http::Uri::from_parts(parts).unwrap_or_else(|_| uri.clone())
        }
        Err(_) => uri.clone(),
    }
}

#[async_trait::async_trait]
impl s3s::route::S3Route for Detour {
    fn is_match(
        &self,
        _method: &http::Method,
        _uri: &http::Uri,
        _headers: &http::HeaderMap,
        extensions: &mut http::Extensions,
    ) -> bool {
        extensions.get::<Strip>().is_some()
            || extensions.get::<CompleteDocument>().is_some()
            || extensions.get::<CreateBucketDocument>().is_some()
    }

    async fn check_access(&self, req: &mut s3s::S3Request<s3s::Body>) -> s3s::S3Result<()> {
        Access { open: self.open }.check(req.credentials.as_ref(), &req.headers)
    }

    async fn call(
        &self,
        req: s3s::S3Request<s3s::Body>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::Body>> {
        let s3s::S3Request {
            input: mut body,
            method,
            uri,
            mut headers,
            mut extensions,
            trailing_headers,
            ..
        } = req;
        if let Some(Strip(names)) = extensions.remove::<Strip>() {
            for n in names {
                if n == "x-amz-trailer" {
                    extensions.insert(crate::gateway::UndeclaredTrailer);
                }
                headers.remove(n);
            }
        }
        headers.remove(http::header::AUTHORIZATION);
        if extensions.remove::<CompleteDocument>().is_some() {
            let doc = body
                .store_all_limited(MAX_DOCUMENT)
                .await
                .map_err(body_error)?;
            let (doc, found) = crate::checksum::take_part_checksums(&String::from_utf8_lossy(&doc));
            if !found.is_empty() {
                extensions.insert(crate::gateway::PartChecksums(found));
            }
            headers.insert(http::header::CONTENT_LENGTH, doc.len().into());
            headers.remove("content-md5");
            body = s3s::Body::from(doc);
        }
        if extensions.remove::<CreateBucketDocument>().is_some() {
            let doc = body
                .store_all_limited(MAX_DOCUMENT)
                .await
                .map_err(body_error)?;
            let (doc, tags) =
                crate::tagging::take_create_bucket_tags(&String::from_utf8_lossy(&doc))
                    .map_err(crate::error::to_s3_error)?;
            if let Some(t) = tags {
                extensions.insert(crate::gateway::CreateBucketTags(t));
            }
            headers.insert(http::header::CONTENT_LENGTH, doc.len().into());
            headers.remove("content-md5");
            body = s3s::Body::from(doc);
        }
        // An aws-chunked body has been decoded by now.
        let streaming = headers
            .get("x-amz-content-sha256")
            .is_some_and(|v| v.as_bytes().starts_with(b"STREAMING-"));
        if streaming {
            headers.remove("x-amz-content-sha256");
            headers.remove("x-amz-decoded-content-length");
            let rest: Option<String> = headers
                .get(http::header::CONTENT_ENCODING)
                .and_then(|v| v.to_str().ok())
                .map(|v| {
                    v.split(',')
                        .map(str::trim)
                        .filter(|e| !e.eq_ignore_ascii_case("aws-chunked") && !e.is_empty())
                        .collect::<Vec<_>>()
                        .join(", ")
                });
            match rest.filter(|r| !r.is_empty()) {
                Some(r) => {
                    if let Ok(v) = http::HeaderValue::from_str(&r) {
                        headers.insert(http::header::CONTENT_ENCODING, v);
                    }
                }
                None => {
                    headers.remove(http::header::CONTENT_ENCODING);
                }
            }
        }
        if let Some(t) = trailing_headers {
            extensions.insert(t);
        }
        let mut inner = http::Request::new(body);
        *inner.method_mut() = method;
        *inner.uri_mut() = without_presign(&uri);
        *inner.headers_mut() = headers;
        *inner.extensions_mut() = extensions;
        let res = self.inner.call(inner).await.map_err(|e| {
            let e: s3s::StdError = e.into();
            s3s::S3Error::with_message(s3s::S3ErrorCode::InternalError, e.to_string())
        })?;
        let (parts, body) = res.into_parts();
        let mut out = s3s::S3Response::new(body);
        out.status = Some(parts.status);
        out.headers = parts.headers;
        out.extensions = parts.extensions;
        Ok(out)
    }
}

/// The S3 error for a request body that could not be read whole (s3s
/// 0.14 does not export its error type: its text names the mismatch).
fn body_error(e: s3s::StdError) -> s3s::S3Error {
    log::debug!("request body: {e}");
    if e.to_string().contains("Sha256Mismatch") {
        let mut err = s3s::S3Error::with_message(
            s3s::S3ErrorCode::Custom("XAmzContentSHA256Mismatch".into()),
            "The provided 'x-amz-content-sha256' header does not match what was computed.",
        );
        err.set_status_code(http::StatusCode::BAD_REQUEST);
        return err;
    }
    s3s::s3_error!(IncompleteBody, "The request body terminated unexpectedly")
}

/// Repeated `x-amz-meta-*` headers become one, their values joined with
/// `,` as S3 stores them (s3s refuses repeated headers). The signature is
/// the same: SigV4 canonicalises repeated headers that way too.
fn join_repeated_metadata(headers: &mut http::HeaderMap) {
    let repeated: Vec<http::HeaderName> = headers
        .keys()
        .filter(|k| k.as_str().starts_with("x-amz-meta-") && headers.get_all(*k).iter().count() > 1)
        .cloned()
        .collect();
    for name in repeated {
        let joined: Vec<u8> = headers
            .get_all(&name)
            .iter()
            .map(|v| v.as_bytes().trim_ascii())
            .collect::<Vec<_>>()
            .join(&b","[..]);
        if let Ok(v) = http::HeaderValue::from_bytes(&joined) {
            headers.insert(name, v);
        }
    }
}

/// Whether a request is one the conditional headers apply to (an object's
/// GET, HEAD, PUT, DELETE or a multipart POST; a form upload's body has
/// been read by the time the detour would see it).
fn takes_conditions(method: &http::Method, uri: &http::Uri) -> bool {
    match *method {
        http::Method::GET | http::Method::HEAD | http::Method::PUT | http::Method::DELETE => true,
        http::Method::POST => uri
            .query()
            .is_some_and(|q| q.split('&').any(|p| p.starts_with("uploadId="))),
        _ => false,
    }
}

/// Everything that answers one request: the prechecks, s3s with the
/// gateway, and the fixes applied to s3s's answers. [`Server`] feeds it
/// requests from its connections; tests and fuzz targets call
/// [`Handler::handle`] directly.
#[derive(Clone)]
pub struct Handler {
    service: s3s::service::S3Service,
    store: Arc<Store>,
    prechecks: Arc<Prechecks>,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handler")
            .field("region", &self.prechecks.region)
            .finish()
    }
}

impl Handler {
    /// Open the store at `cfg.root` and build the request handler
    /// (`cfg.listen` is not used).
    pub fn new(cfg: &Config) -> Result<Handler> {
        let store = Store::open(&cfg.root, cfg.store.clone())?;
        let gateway = S3Gateway::new(store).with_region(&cfg.region);
        let store = gateway.store().clone();
        let inner = S3ServiceBuilder::new(gateway.clone()).build();
        let mut b = S3ServiceBuilder::new(gateway);
        if let Some((ak, sk)) = &cfg.credentials {
            b.set_auth(SimpleAuth::from_single(ak.clone(), sk.clone()));
        }
        b.set_access(Access {
            open: cfg.anonymous || cfg.credentials.is_none(),
        });
        b.set_route(Detour {
            inner,
            open: cfg.anonymous || cfg.credentials.is_none(),
        });
        Ok(Handler {
            service: b.build(),
            store,
            prechecks: Arc::new(Prechecks {
                region: cfg.region.clone(),
                access_key: cfg.credentials.as_ref().map(|c| c.0.clone()),
            }),
        })
    }

    /// A copy's `x-amz-copy-source` of the wrong shape (refused after the
    /// destination bucket is found, as S3 does).
    fn check_copy_source(&self, req: &s3s::HttpRequest) -> Option<Refusal> {
        if req.method() != http::Method::PUT {
            return None;
        }
        let raw = req.headers().get("x-amz-copy-source")?;
        let refusal =
            crate::precheck::check_copy_source(&String::from_utf8_lossy(raw.as_bytes())).err()?;
        let path = req.uri().path().trim_start_matches('/');
        let bucket = path.split('/').next().unwrap_or("");
        match self.store.head_bucket(bucket) {
            Err(crate::Error::NoSuchBucket { .. }) => Some(crate::precheck::no_such_bucket(bucket)),
            _ => Some(refusal),
        }
    }

    /// Answer one request (`peer` is for the access log).
    pub async fn handle(
        &self,
        mut req: s3s::HttpRequest,
        peer: SocketAddr,
    ) -> std::result::Result<s3s::HttpResponse, s3s::HttpError> {
        join_repeated_metadata(req.headers_mut());
        // Whether the client declared a trailer (one may be added for s3s below).
        let declared = req.headers().contains_key("x-amz-trailer");
        // S3 answers a malformed Range with the whole object (dropped here
        // unless it is signed: then after s3s has checked the signature).
        let mut strip = Vec::new();
        if req
            .headers()
            .get(http::header::RANGE)
            .is_some_and(|r| crate::precheck::range_is_ignored(r.to_str().unwrap_or("")))
        {
            if crate::precheck::signs_header(req.uri(), req.headers(), "range") {
                strip.push(http::header::RANGE);
            } else {
                req.headers_mut().remove(http::header::RANGE);
            }
        }
        let refused = self
            .prechecks
            .check(req.method(), req.uri(), req.headers())
            .err()
            .or_else(|| self.check_copy_source(&req));
        if takes_conditions(req.method(), req.uri()) {
            if let Some(c) = Conditions::from_headers(req.headers()) {
                req.extensions_mut().insert(c);
                strip.extend(
                    crate::conditions::HEADERS
                        .iter()
                        .map(|h| http::HeaderName::from_static(h)),
                );
            }
        }
        // S3 takes an unsigned aws-chunked body without `x-amz-trailer`
        // (and no trailer); s3s wants the header. Not being signed, it can
        // be added for s3s and taken off again before the gateway.
        if refused.is_none()
            && req
                .headers()
                .get("x-amz-content-sha256")
                .is_some_and(|v| v.as_bytes() == b"STREAMING-UNSIGNED-PAYLOAD-TRAILER")
            && !req.headers().contains_key("x-amz-trailer")
        {
            req.headers_mut().insert(
                "x-amz-trailer",
                http::HeaderValue::from_static("x-amz-checksum-crc64nvme"),
            );
            strip.push(http::HeaderName::from_static("x-amz-trailer"));
        }
        if !strip.is_empty() {
            req.extensions_mut().insert(Strip(strip));
        }
        // S3's rule on chunk sizes, which s3s' decoder does not check.
        if refused.is_none() && crate::precheck::is_streaming(req.headers()) {
            let verdict = crate::chunked::ChunkVerdict::default();
            req.extensions_mut().insert(verdict.clone());
            let (parts, body) = req.into_parts();
            let body = s3s::Body::http_body(crate::chunked::Watched::new(body, declared, verdict));
            req = http::Request::from_parts(parts, body);
        }
        if req.method() == http::Method::POST
            && req.uri().query().is_some_and(|q| {
                crate::precheck::query_pairs(q)
                    .iter()
                    .any(|(k, _)| k == "uploadId")
            })
        {
            req.extensions_mut().insert(CompleteDocument);
        }
        if req.method() == http::Method::PUT
            && req.uri().query().is_none_or(str::is_empty)
            && !req.uri().path().trim_matches('/').contains('/')
            && match req.headers().get(http::header::CONTENT_LENGTH) {
                Some(v) => v.as_bytes() != b"0",
                None => req.headers().contains_key(http::header::TRANSFER_ENCODING),
            }
        {
            req.extensions_mut().insert(CreateBucketDocument);
        }
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let query = req.uri().query().map(str::to_string);
        let t0 = Instant::now();
        let res = match refused {
            Some(r) => {
                // Read (up to 8 MiB of) the body first: an unread body
                // closes the connection under a client still sending it.
                let mut body = req.into_body();
                let mut n = 0usize;
                while let Some(Ok(chunk)) = futures_util::StreamExt::next(&mut body).await {
                    n += chunk.len();
                    if n > 8 << 20 {
                        break;
                    }
                }
                Ok(refusal_response(&r))
            }
            None => self.service.call(req).await,
        };
        let res = res
            .map(one_declaration)
            .map(xml_elements)
            .map(forced_status)
            .map(error_elements)
            .map(standard_error)
            .map(not_modified)
            .map(|mut r| {
                // s3s answers HEAD with 200 whatever the output says.
                if method == http::Method::HEAD
                    && r.status() == http::StatusCode::OK
                    && r.headers().contains_key(http::header::CONTENT_RANGE)
                {
                    *r.status_mut() = http::StatusCode::PARTIAL_CONTENT;
                }
                r
            });
        if let Ok(r) = &res {
            log::info!(target: ACCESS_LOG, "{}", serde_json::json!({
                "remote": peer.to_string(),
                "method": method.as_str(),
                "path": path,
                "query": query,
                "status": r.status().as_u16(),
                "ms": t0.elapsed().as_secs_f64() * 1e3,
            }));
        }
        res
    }
}

/// A bound, not yet running server.
pub struct Server {
    listener: TcpListener,
    handler: Handler,
    addr: SocketAddr,
    store: Arc<Store>,
    sendfile: bool,
    limits: Limits,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server").field("addr", &self.addr).finish()
    }
}

impl Server {
    /// Open the store and bind the listening socket.
    pub async fn bind(cfg: Config) -> Result<Server> {
        let handler = Handler::new(&cfg)?;
        let store = handler.store.clone();
        let listener = TcpListener::bind(cfg.listen)
            .await
            .map_err(|e| io("listen on", cfg.listen.to_string(), e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| io("listen on", cfg.listen.to_string(), e))?;
        Ok(Server {
            listener,
            handler,
            addr,
            store,
            sendfile: cfg.sendfile,
            limits: cfg.limits,
        })
    }

    /// The address actually bound (a port of 0 is chosen by the kernel).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The future serving one admitted connection: hyper over its
    /// [`Guarded`] I/O, raced against its [`crate::limits::Conn::watch`].
    fn serve_connection(
        &self,
        conn: &ConnBuilder<TokioExecutor>,
        graceful: &hyper_util::server::graceful::GracefulShutdown,
        sock: tokio::net::TcpStream,
        peer: SocketAddr,
        slot: Slot,
    ) -> impl Future<Output = ()> + Send + 'static {
        let handler = self.handler.clone();
        let sendfile = self.sendfile;
        let limits = self.limits.clone();
        let io = SendfileIo::new(sock);
        let splicer = io.splicer();
        let state = slot.conn().clone();
        let io = Guarded::new(io, state.clone(), &limits);
        let l = limits.clone();
        let service =
            hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                let handler = handler.clone();
                let busy = state.busy();
                let mut req = req.map(|b| s3s::Body::http_body(TimedBody::new(b, &l)));
                // HTTP/1 only: HTTP/2 copies frames into its own
                // buffers, where stand-ins would be sent as they are.
                if sendfile && req.version() <= http::Version::HTTP_11 {
                    req.extensions_mut().insert(splicer.clone());
                }
                async move {
                    let res = handler.handle(req, peer).await?;
                    Ok::<_, s3s::HttpError>(res.map(|b| Answer::new(b, busy)))
                }
            });
        let c = graceful.watch(conn.serve_connection(io, service).into_owned());
        async move {
            tokio::select! {
                r = c => if let Err(e) = r {
                    log::debug!("connection from {peer}: {e}");
                },
                why = slot.conn().watch(&limits) => log::debug!("connection from {peer}: {why}"),
            }
            drop(slot);
        }
    }

    /// Serve until `shutdown` resolves, then stop accepting and wait up to
    /// `grace` for requests in flight.
    pub async fn run(self, shutdown: impl Future<Output = ()>, grace: Duration) -> Result<()> {
        let graceful = hyper_util::server::graceful::GracefulShutdown::new();
        let mut conn = ConnBuilder::new(TokioExecutor::new());
        // Body frames queued as they are, never copied into hyper's own
        // buffer: the sendfile stand-ins depend on it (crate::sendfile).
        // Heads, idle connections and stalled peers are timed by
        // crate::limits (hyper's header timer also runs while a keep-alive
        // connection is idle, so it cannot tell the two apart).
        conn.http1().writev(true).header_read_timeout(None);
        // What other gateways on this root leave when they die is swept
        // by the survivors, not only at the next start.
        let every = self.store.options().sweep_every;
        let store = self.store.clone();
        let sweeper = (!every.is_zero()).then(|| {
            tokio::spawn(async move {
                let mut t = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                loop {
                    t.tick().await;
                    let s = store.clone();
                    match tokio::task::spawn_blocking(move || s.sweep()).await {
                        Ok(Err(e)) => log::warn!("sweep: {}", crate::error_chain(&e)),
                        Err(e) => log::warn!("sweep: {e}"),
                        Ok(Ok(_)) => {}
                    }
                }
            })
        });
        tokio::pin!(shutdown);
        let registry = Registry::new(&self.limits);
        let mut accept_errors = Throttle::default();
        let mut refusals = Throttle::default();
        loop {
            let (sock, peer) = tokio::select! {
                r = self.listener.accept() => match r {
                    Ok(x) => x,
                    Err(e) => {
                        // Out of descriptors (EMFILE, ENFILE) or memory:
                        // the backlog waits, the loop does not spin.
                        accept_errors.warn(|n| format!("accept: {e} ({n} times)"));
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                () = &mut shutdown => break,
            };
            let Some(slot) = admit(&registry, peer).await else {
                refuse(sock);
                refusals.warn(|n| {
                    format!(
                        "refused {n} connection(s), the last from {peer}: all {} \
                         connections busy (--max-connections {}, --max-connections-per-ip {})",
                        registry.len(),
                        self.limits.max_connections,
                        self.limits.max_connections_per_ip
                    )
                });
                continue;
            };
            // Responses are often written in two pieces (headers, then a
            // body or keepalive whitespace): Nagle would hold the second
            // one back for a delayed ACK (40 ms).
            let _ = sock.set_nodelay(true);
            tokio::spawn(self.serve_connection(&conn, &graceful, sock, peer, slot));
        }
        drop(self.listener);
        if let Some(s) = sweeper {
            s.abort();
        }
        tokio::select! {
            () = graceful.shutdown() => {}
            () = tokio::time::sleep(grace) => log::warn!("shutdown: requests still running after {grace:?}, stopping anyway"),
        }
        Ok(())
    }
}
