//! The request path, from the HTTP request to the HTTP answer
//! ([`Handler::handle`]; `docs/s3.md`, "A request through the code"):
//!
//! 1. `Handler::prepare`: the head read once: the prechecks
//!    ([`crate::precheck`]) refuse what S3 refuses before looking further;
//!    what s3s 0.14 cannot parse is noted in one `Rewrite` (headers to
//!    take off once the signature is verified, a document to take apart),
//!    the conditions handed over as a [`Conditions`] extension, an
//!    aws-chunked body watched ([`crate::chunked`]).
//! 2. s3s verifies the signature (SigV4, presigned or streaming) and
//!    `Access` checks who may; then either s3s parses the request and
//!    calls the gateway's operation ([`crate::gateway`]: the `impl S3` is
//!    the route table), or, for a request with a `Rewrite`, the
//!    `Detour` applies it and hands the request to a second s3s service
//!    over the same gateway, one without authentication (the first one has
//!    done it), which parses it and calls the operation.
//! 3. `crate::respond::shape`: every answer shaped in one place, and one
//!    access-log line.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use s3s::service::S3ServiceBuilder;

use crate::accounts::{Accounts, KeyAuth};

mod access;
use access::{Access, DetourAccess, NoKeys};
mod form_upload;
mod leftover;

use crate::conditions::Conditions;
use crate::error::Result;
use crate::gateway::{S3Gateway, ACCESS_LOG};
use crate::precheck::{Prechecks, Refusal};
use crate::respond::{refusal_response, shape};
use crate::server::Config;
use crate::store::Store;

/// What the `Detour` does to a request once s3s has verified its
/// signature (a request extension `Handler::prepare` adds): what s3s
/// 0.14 would refuse or drop, and the signature covers.
#[derive(Debug, Clone, Default)]
struct Rewrite {
    /// Headers to take off.
    strip: Vec<http::HeaderName>,
    /// A document to take apart before s3s parses it.
    document: Option<Document>,
}

/// A request document s3s 0.14 cannot parse whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Document {
    /// A CompleteMultipartUpload: the part checksums s3s cannot parse are
    /// taken out (see [`crate::checksum::take_part_checksums`]) and handed
    /// to the gateway as [`crate::gateway::PartChecksums`], while s3s
    /// verifies the payload's hash.
    Complete,
    /// A CreateBucket with a body: its `<Tags>` (which s3s would drop) are
    /// taken out and handed to the gateway as
    /// [`crate::gateway::CreateBucketTags`].
    CreateBucket,
}

/// The longest document the `Detour` reads whole (a CompleteMultipartUpload
/// of 10,000 parts with every element comes to about 3 MiB).
const MAX_DOCUMENT: usize = 16 << 20;

/// The s3s route of requests with a `Rewrite`: headers S3 accepts and
/// s3s 0.14 would refuse to parse (unquoted entity tags in `If-Match` and
/// its relatives, a malformed `Range` S3 ignores), a trailer added for s3s,
/// documents with what s3s cannot parse. The signature covers them, so
/// they can only change after s3s has verified it: this route changes
/// them then and passes the request on to a second s3s service over the
/// same gateway, one without authentication (the first one has done it).
/// The gateway reads the conditions from the [`Conditions`] extension.
struct Detour {
    inner: s3s::service::S3Service,
    /// Who may do what.
    access: Access,
    /// The admin API (a `PATCH`), when there are accounts.
    admin: Option<crate::admin::Admin>,
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
        method: &http::Method,
        _uri: &http::Uri,
        _headers: &http::HeaderMap,
        extensions: &mut http::Extensions,
    ) -> bool {
        crate::admin::is_admin_request(method) || extensions.get::<Rewrite>().is_some()
    }

    async fn check_access(&self, req: &mut s3s::S3Request<s3s::Body>) -> s3s::S3Result<()> {
        if crate::admin::is_admin_request(&req.method) {
            let admin = self.admin.as_ref().ok_or_else(|| {
                crate::admin::admin_error(
                    "XAdminAccessDenied",
                    "Only admin users have access to this resource.",
                    http::StatusCode::FORBIDDEN,
                )
            })?;
            return admin.check_access(req.credentials.as_ref()).map(drop);
        }
        let who = self.access.authenticate(
            req.credentials.as_ref(),
            &req.method,
            &req.uri,
            &req.headers,
        )?;
        req.extensions.insert(who);
        Ok(())
    }

    async fn call(
        &self,
        req: s3s::S3Request<s3s::Body>,
    ) -> s3s::S3Result<s3s::S3Response<s3s::Body>> {
        if let (true, Some(admin)) = (crate::admin::is_admin_request(&req.method), &self.admin) {
            return admin.call(req).await;
        }
        let s3s::S3Request {
            input: mut body,
            method,
            uri,
            mut headers,
            mut extensions,
            trailing_headers,
            ..
        } = req;
        let rewrite = extensions.remove::<Rewrite>().unwrap_or_default();
        for n in rewrite.strip {
            if n == "x-amz-trailer" {
                extensions.insert(crate::gateway::UndeclaredTrailer);
            }
            headers.remove(n);
        }
        headers.remove(http::header::AUTHORIZATION);
        if let Some(d) = rewrite.document {
            body = take_apart(d, body, &mut headers, &mut extensions).await?;
        }
        decoded_body_headers(&mut headers);
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

/// Read `body` (a [`Document`]) whole, hand what s3s cannot parse to the
/// gateway as an extension, and give s3s the rest.
async fn take_apart(
    d: Document,
    body: s3s::Body,
    headers: &mut http::HeaderMap,
    extensions: &mut http::Extensions,
) -> s3s::S3Result<s3s::Body> {
    let mut body = body;
    let doc = body
        .store_all_limited(MAX_DOCUMENT)
        .await
        .map_err(body_error)?;
    let text = String::from_utf8_lossy(&doc);
    let doc = match d {
        Document::Complete => {
            let (doc, found) = crate::checksum::take_part_checksums(&text);
            if !found.is_empty() {
                extensions.insert(crate::gateway::PartChecksums(found));
            }
            doc
        }
        Document::CreateBucket => {
            let (doc, tags) = crate::tagging::take_create_bucket_tags(&text)
                .map_err(crate::error::to_s3_error)?;
            if let Some(t) = tags {
                extensions.insert(crate::gateway::CreateBucketTags(t));
            }
            doc
        }
    };
    headers.insert(http::header::CONTENT_LENGTH, doc.len().into());
    headers.remove("content-md5");
    Ok(s3s::Body::from(doc))
}

/// An aws-chunked body has been decoded by now: its headers come off
/// (`aws-chunked` from `Content-Encoding`, keeping any other coding).
fn decoded_body_headers(headers: &mut http::HeaderMap) {
    let streaming = headers
        .get("x-amz-content-sha256")
        .is_some_and(|v| v.as_bytes().starts_with(b"STREAMING-"));
    if !streaming {
        return;
    }
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

/// The S3 error for a request body that could not be read whole (s3s
/// 0.14 does not export its error type: its text names the mismatch).
pub(crate) fn body_error(e: s3s::StdError) -> s3s::S3Error {
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
/// gateway, and the fixes applied to s3s's answers. [`crate::server::Server`] feeds it
/// requests from its connections; tests and fuzz targets call
/// [`Handler::handle`] directly.
#[derive(Clone)]
pub struct Handler {
    service: s3s::service::S3Service,
    /// PostObject (browser form uploads).
    uploads: form_upload::Uploads,
    pub(crate) store: Arc<Store>,
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
        let accounts = open_accounts(cfg, &store)?;
        let root_owner = cfg
            .credentials
            .as_ref()
            .map_or("anonymous", |c| c.0.as_str());
        let gateway = S3Gateway::new(store)
            .with_region(&cfg.region)
            .with_root_owner(root_owner);
        let store = gateway.store().clone();
        let accounts_named: Arc<dyn crate::authz::Accounts> = match &accounts {
            Some(a) => a.clone(),
            None => Arc::new(crate::authz::OneKey(None)),
        };
        let access = Access {
            open: cfg.anonymous || cfg.credentials.is_none(),
            accounts: accounts.clone(),
            store: store.clone(),
            authz: Arc::new(crate::authz::Authz {
                store: store.clone(),
                default_owner: root_owner.to_string(),
                accounts: accounts_named,
            }),
        };
        let mut inner = S3ServiceBuilder::new(gateway.clone());
        let mut b = S3ServiceBuilder::new(gateway);
        if let Some(a) = &accounts {
            b.set_auth(KeyAuth(a.clone()));
            inner.set_auth(NoKeys);
            inner.set_access(DetourAccess(access.clone()));
        }
        b.set_access(access.clone());
        let inner = inner.build();
        let prechecks = Arc::new(Prechecks {
            region: cfg.region.clone(),
            access_key: cfg.credentials.as_ref().map(|c| c.0.clone()),
            accounts: accounts.clone(),
        });
        let uploads = form_upload::Uploads {
            inner: inner.clone(),
            access: access.clone(),
            accounts: accounts.clone(),
            prechecks: prechecks.clone(),
        };
        b.set_route(Detour {
            inner,
            access,
            admin: accounts.clone().map(|a| crate::admin::Admin {
                accounts: a,
                store: store.clone(),
                region: cfg.region.clone(),
            }),
        });
        Ok(Handler {
            service: b.build(),
            uploads,
            store,
            prechecks,
        })
    }

    /// A copy's `x-amz-copy-source` of the wrong shape (refused after the
    /// destination bucket is found, as S3 does). A key that is empty or
    /// has dot segments is refused only once the request is authorised
    /// (the source read as [`crate::names::lexical_key`] resolves it):
    /// noted on the request as [`access::RefuseOnceAuthorised`].
    fn check_copy_source(&self, req: &mut s3s::HttpRequest) -> Option<Refusal> {
        if req.method() != http::Method::PUT {
            return None;
        }
        let raw = req.headers().get("x-amz-copy-source")?;
        let raw = String::from_utf8_lossy(raw.as_bytes()).into_owned();
        let (refusal, deferred) = match crate::precheck::copy_source_key(&raw) {
            Err(r) => (r, false),
            Ok(key) => (crate::precheck::check_copy_source_key(&key).err()?, true),
        };
        let path = req.uri().path().trim_start_matches('/');
        let bucket = path.split('/').next().unwrap_or("");
        match self.store.head_bucket(bucket) {
            Err(crate::Error::NoSuchBucket { .. }) => Some(crate::precheck::no_such_bucket(bucket)),
            _ if deferred => {
                req.extensions_mut()
                    .insert(access::RefuseOnceAuthorised(refusal));
                None
            }
            _ => Some(refusal),
        }
    }

    /// An object write asking for an ACL: refused once the request is
    /// authorised, as its bucket's ownership setting says
    /// ([`crate::precheck::object_acl_refusal`]); a missing bucket is the
    /// operation's to answer.
    fn check_object_acl(&self, req: &mut s3s::HttpRequest) {
        let path = req.uri().path().trim_start_matches('/');
        let Some((bucket, key)) = path.split_once('/') else {
            return;
        };
        let query = req.uri().query().unwrap_or("");
        let asks = |p: &str| query.split('&').any(|kv| kv.split('=').next() == Some(p));
        let write = match *req.method() {
            // PutObject and CopyObject, not a PUT of a subresource.
            http::Method::PUT => ![
                "acl",
                "partNumber",
                "uploadId",
                "tagging",
                "retention",
                "legal-hold",
            ]
            .iter()
            .any(|p| asks(p)),
            http::Method::POST => asks("uploads"),
            _ => false,
        };
        if key.is_empty() || !write || self.store.head_bucket(bucket).is_err() {
            return;
        }
        // Without an ownership record (a bucket made before ACLs or by
        // another tool) ACLs are not disabled.
        let enforced = crate::authz::bucket_ownership(&self.store, bucket)
            .ok()
            .flatten()
            == Some(crate::acl::Ownership::BucketOwnerEnforced);
        let first = req
            .extensions()
            .get::<access::RefuseOnceAuthorised>()
            .is_none();
        if let Some(r) = crate::precheck::object_acl_refusal(req.headers(), enforced) {
            if first {
                req.extensions_mut().insert(access::RefuseOnceAuthorised(r));
            }
        }
    }

    /// A PutObjectRetention or PutObjectLegalHold without its document on
    /// a bucket that does not exist: S3 answers `NoSuchBucket` first (s3s
    /// would refuse the empty body as `MalformedXML` before the gateway
    /// sees the bucket).
    fn check_missing_document(&self, req: &s3s::HttpRequest) -> Option<Refusal> {
        let asks = |p: &str| {
            req.uri()
                .query()
                .is_some_and(|q| q.split('&').any(|kv| kv.split('=').next() == Some(p)))
        };
        let empty = req
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .is_none_or(|v| v.as_bytes() == b"0");
        if req.method() != http::Method::PUT || !empty || !(asks("retention") || asks("legal-hold"))
        {
            return None;
        }
        let bucket = req.uri().path().trim_start_matches('/').split('/').next()?;
        match self.store.head_bucket(bucket) {
            Err(crate::Error::NoSuchBucket { .. }) => Some(crate::precheck::no_such_bucket(bucket)),
            _ => None,
        }
    }

    /// Read a request's head once: refuse it (the prechecks), or note
    /// what the `Detour` must do after the signature is verified, hand
    /// its conditions over, watch its aws-chunked body.
    fn prepare(&self, mut req: s3s::HttpRequest) -> (s3s::HttpRequest, Option<Refusal>) {
        join_repeated_metadata(req.headers_mut());
        // Whether the client declared a trailer (one may be added for s3s below).
        let declared = req.headers().contains_key("x-amz-trailer");
        let mut rewrite = Rewrite::default();
        // S3 answers a malformed Range with the whole object (dropped here
        // unless it is signed: then after s3s has checked the signature).
        if req
            .headers()
            .get(http::header::RANGE)
            .is_some_and(|r| crate::precheck::range_is_ignored(r.to_str().unwrap_or("")))
        {
            if crate::precheck::signs_header(req.uri(), req.headers(), "range") {
                rewrite.strip.push(http::header::RANGE);
            } else {
                req.headers_mut().remove(http::header::RANGE);
            }
        }
        let mut refused = self
            .prechecks
            .check(req.method(), req.uri(), req.headers())
            .err();
        if refused.is_none() {
            refused = self
                .check_copy_source(&mut req)
                .or_else(|| self.check_missing_document(&req));
        }
        if refused.is_none() {
            self.check_object_acl(&mut req);
        }
        if takes_conditions(req.method(), req.uri()) {
            if let Some(c) = Conditions::from_headers(req.headers()) {
                req.extensions_mut().insert(c);
                rewrite.strip.extend(
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
            rewrite
                .strip
                .push(http::HeaderName::from_static("x-amz-trailer"));
        }
        // An unsigned request's declared body hash, which s3s does not check.
        if let Some(declared) = refused
            .is_none()
            .then(|| crate::precheck::declared_unsigned_hash(req.uri(), req.headers()))
            .flatten()
        {
            let verdict = crate::payload::HashVerdict::default();
            req.extensions_mut().insert(verdict.clone());
            let (parts, body) = req.into_parts();
            let check = crate::payload::HashCheck::new(&declared);
            let body = s3s::Body::http_body(crate::payload::Hashed::new(body, check, verdict));
            req = http::Request::from_parts(parts, body);
        }
        // S3's rule on chunk sizes, which s3s' decoder does not check.
        if refused.is_none() && crate::precheck::is_streaming(req.headers()) {
            let verdict = crate::chunked::ChunkVerdict::default();
            req.extensions_mut().insert(verdict.clone());
            let (parts, body) = req.into_parts();
            let watch = crate::chunked::Watch::new(declared);
            let body = s3s::Body::http_body(crate::chunked::Watched::new(body, watch, verdict));
            req = http::Request::from_parts(parts, body);
        }
        rewrite.document = document_of(req.method(), req.uri(), req.headers());
        if !rewrite.strip.is_empty() || rewrite.document.is_some() {
            req.extensions_mut().insert(rewrite);
        }
        (req, refused)
    }

    /// The request, or its refusal (its body drained): a PutBucketCors
    /// document too large or not matching its `Content-MD5` (read whole
    /// here, [`crate::config_doc`]).
    async fn take_document(
        &self,
        req: s3s::HttpRequest,
    ) -> std::result::Result<s3s::HttpRequest, Refusal> {
        let Some(max) = crate::config_doc::limit_of(req.method(), req.uri(), req.headers()) else {
            return Ok(req);
        };
        match crate::config_doc::read(req, max).await {
            Ok(req) => Ok(req),
            Err((r, rest)) => {
                drain(rest).await;
                Err(r)
            }
        }
    }

    /// Answer a CORS preflight (unauthenticated, as on S3: it carries no
    /// signature and reveals only whether the bucket's rules allow it).
    async fn preflight(&self, req: s3s::HttpRequest) -> s3s::HttpResponse {
        let answer = crate::cors::serve::preflight(&self.store, &req).await;
        drain(req.into_body()).await;
        match answer {
            Ok(a) => crate::cors::serve::allowed_response(&a),
            Err(r) => refusal_response(&r),
        }
    }

    /// Hand the request to s3s; a body of a small declared length that
    /// s3s leaves unread is read before the answer goes out, so that the
    /// connection stays open (see [`leftover`]).
    async fn call_reading_leftover(
        &self,
        req: s3s::HttpRequest,
    ) -> std::result::Result<s3s::HttpResponse, s3s::HttpError> {
        let len = req
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if !leftover::worth_reading(len) {
            return self.service.call(req).await;
        }
        let slot = leftover::Slot::default();
        let (parts, body) = req.into_parts();
        let body = s3s::Body::http_body(leftover::Returned::new(body, slot.clone()));
        let res = self
            .service
            .call(http::Request::from_parts(parts, body))
            .await;
        if let Some(rest) = slot.take() {
            drain(rest).await;
        }
        res
    }

    /// Answer one request (`peer` is for the access log).
    pub async fn handle(
        &self,
        req: s3s::HttpRequest,
        peer: SocketAddr,
    ) -> std::result::Result<s3s::HttpResponse, s3s::HttpError> {
        // A form upload (PostObject) takes its own path.
        let form = form_upload::route(&req);
        let (req, refused) = match form {
            Some(_) => (req, None),
            None => self.prepare(req),
        };
        let method = req.method().clone();
        let path = req.uri().path().to_string();
        let query = req.uri().query().map(str::to_string);
        let t0 = Instant::now();
        let mut req = req;
        req.extensions_mut().insert(crate::authz::Peer(peer));
        let cors = crate::cors::serve::actual_of(&req);
        let hash = req
            .extensions()
            .get::<crate::payload::HashVerdict>()
            .cloned();
        let res = match (refused.or(form.clone().and_then(Result::err)), form) {
            (Some(r), _) => {
                drain(req.into_body()).await;
                Ok(refusal_response(&r))
            }
            (None, Some(Ok(bucket))) => Ok(self.uploads.answer(req, bucket).await),
            (None, _) => match self.take_document(req).await {
                Err(r) => Ok(refusal_response(&r)),
                Ok(req) if req.method() == http::Method::OPTIONS => Ok(self.preflight(req).await),
                Ok(req) => self.call_reading_leftover(req).await,
            },
        };
        let res = res.map(|r| declared_hash_answer(r, hash.as_ref()));
        let mut res = res.map(|r| shape(r, &method));
        if let (Some(asked), Ok(r)) = (cors, &mut res) {
            crate::cors::serve::add_to_actual(&self.store, asked, r).await;
        }
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

/// The account store of a server with credentials: in `--accounts-dir`,
/// else in the root's `.cowkit-s3/`.
fn open_accounts(cfg: &Config, store: &Store) -> Result<Option<Arc<Accounts>>> {
    let Some(root) = &cfg.credentials else {
        return Ok(None);
    };
    let fsync = cfg.store.fsync;
    let a = match &cfg.accounts_dir {
        Some(d) => Accounts::open_dir(d, Some(root.clone()), fsync)?,
        None => {
            let sys = store
                .sys
                .try_clone()
                .map_err(|e| crate::error::io("open", store.sys_path(), e))?;
            Accounts::open_at(sys, &store.sys_path(), Some(root.clone()), fsync)?
        }
    };
    Ok(Some(Arc::new(a)))
}

/// The answer to a request whose body did not have the SHA-256 its
/// unsigned request declared: S3's `XAmzContentSHA256Mismatch`, whatever
/// error the operation met when its body failed (for the operations whose
/// XML body s3s reads itself, an `InternalError`). A success stands: the
/// body was not read whole, so the check never ran.
fn declared_hash_answer(
    res: s3s::HttpResponse,
    hash: Option<&crate::payload::HashVerdict>,
) -> s3s::HttpResponse {
    match hash.and_then(|v| v.get()) {
        Some(m) if !res.status().is_success() => {
            refusal_response(&crate::precheck::sha256_mismatch(&m.declared, &m.computed))
        }
        _ => res,
    }
}

/// Read (up to 8 MiB of) the body of a refused request: an unread body
/// closes the connection under a client still sending it.
async fn drain(mut body: s3s::Body) {
    let mut n = 0usize;
    while let Some(Ok(chunk)) = futures_util::StreamExt::next(&mut body).await {
        n += chunk.len();
        if n > 8 << 20 {
            break;
        }
    }
}

/// The document of a request that s3s 0.14 cannot parse whole: a
/// CompleteMultipartUpload (a POST with `uploadId`), a CreateBucket with
/// a body (a PUT of a bucket, no query, a body that is not empty).
fn document_of(
    method: &http::Method,
    uri: &http::Uri,
    headers: &http::HeaderMap,
) -> Option<Document> {
    if method == http::Method::POST
        && uri.query().is_some_and(|q| {
            crate::precheck::query_pairs(q)
                .iter()
                .any(|(k, _)| k == "uploadId")
        })
    {
        return Some(Document::Complete);
    }
    let create_bucket = method == http::Method::PUT
        && uri.query().is_none_or(str::is_empty)
        && !uri.path().trim_matches('/').contains('/')
        && match headers.get(http::header::CONTENT_LENGTH) {
            Some(v) => v.as_bytes() != b"0",
            None => headers.contains_key(http::header::TRANSFER_ENCODING),
        };
    create_bucket.then_some(Document::CreateBucket)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                http::HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn documents_taken_apart() {
        let uri = |s: &str| s.parse::<http::Uri>().unwrap();
        let (post, put) = (http::Method::POST, http::Method::PUT);
        let body = headers(&[("content-length", "10")]);
        assert_eq!(
            document_of(&post, &uri("/b/k?uploadId=x"), &body),
            Some(Document::Complete)
        );
        assert_eq!(document_of(&post, &uri("/b/k?uploads"), &body), None);
        assert_eq!(
            document_of(&put, &uri("/b"), &body),
            Some(Document::CreateBucket)
        );
        assert_eq!(
            document_of(
                &put,
                &uri("/b/"),
                &headers(&[("transfer-encoding", "chunked")])
            ),
            Some(Document::CreateBucket)
        );
        // No body, an object, a sub-resource: none.
        assert_eq!(
            document_of(&put, &uri("/b"), &headers(&[("content-length", "0")])),
            None
        );
        assert_eq!(document_of(&put, &uri("/b"), &headers(&[])), None);
        assert_eq!(document_of(&put, &uri("/b/k"), &body), None);
        assert_eq!(document_of(&put, &uri("/b?tagging"), &body), None);
    }

    #[test]
    fn presign_parameters_come_off() {
        let u: http::Uri = "/b/k?X-Amz-Signature=s&partNumber=2&X-Amz-Date=d"
            .parse()
            .unwrap();
        assert_eq!(without_presign(&u).to_string(), "/b/k?partNumber=2");
        let u: http::Uri = "/b/k?X-Amz-Signature=s".parse().unwrap();
        assert_eq!(without_presign(&u).to_string(), "/b/k");
    }

    #[test]
    fn repeated_metadata_joined() {
        let mut h = headers(&[
            ("x-amz-meta-a", "1"),
            ("x-amz-meta-a", " 2 "),
            ("x-amz-meta-b", "3"),
        ]);
        join_repeated_metadata(&mut h);
        assert_eq!(h.get_all("x-amz-meta-a").iter().count(), 1);
        assert_eq!(h["x-amz-meta-a"], "1,2");
        assert_eq!(h["x-amz-meta-b"], "3");
    }

    #[test]
    fn decoded_aws_chunked_headers_come_off() {
        let mut h = headers(&[
            ("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
            ("x-amz-decoded-content-length", "5"),
            ("content-encoding", "aws-chunked, gzip"),
        ]);
        decoded_body_headers(&mut h);
        assert!(!h.contains_key("x-amz-content-sha256"));
        assert!(!h.contains_key("x-amz-decoded-content-length"));
        assert_eq!(h["content-encoding"], "gzip");
        let mut h = headers(&[
            ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
            ("content-encoding", "aws-chunked"),
        ]);
        decoded_body_headers(&mut h);
        assert_eq!(h["content-encoding"], "aws-chunked");
    }

    #[test]
    fn which_requests_take_conditions() {
        let uri = |s: &str| s.parse::<http::Uri>().unwrap();
        assert!(takes_conditions(&http::Method::GET, &uri("/b/k")));
        assert!(takes_conditions(
            &http::Method::POST,
            &uri("/b/k?uploadId=1")
        ));
        assert!(!takes_conditions(&http::Method::POST, &uri("/b/k?uploads")));
        assert!(!takes_conditions(&http::Method::OPTIONS, &uri("/b/k")));
    }
}
