//! The request path, from the HTTP request to the HTTP answer
//! ([`Handler::handle`]; `docs/s3.md`, "A request through the code"):
//!
//! 1. `Handler::prepare`: the head read once: the prechecks
//!    ([`crate::precheck`]) refuse what S3 refuses before looking further;
//!    what s3s 0.14 cannot parse is noted in one `Rewrite` (headers to
//!    take off once the signature is verified, a document to take apart),
//!    the conditions handed over as a [`crate::conditions::Conditions`] extension, an
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
pub(crate) mod leftover;
use leftover::drain;
mod prepare;

use crate::config::Config;
use crate::error::Result;
use crate::gateway::{S3Gateway, ACCESS_LOG};
use crate::precheck::Prechecks;
use crate::refusal::Refusal;
use crate::respond::{refusal_response, shape};
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
    /// An unsigned aws-chunked body to decode ([`crate::unchunk`]; s3s
    /// decodes only a signed one).
    unchunk: bool,
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
/// The gateway reads the conditions from the [`crate::conditions::Conditions`] extension.
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
            let admin = self
                .admin
                .as_ref()
                .ok_or(crate::admin::AdminError::AccessDenied)?;
            return admin
                .check_access(req.credentials.as_ref(), &req.headers)
                .map(drop);
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
        if rewrite.unchunk {
            body = unchunk(body, &mut headers, &mut extensions)?;
        }
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
        .map_err(crate::answer::body_error)?;
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
                .map_err(crate::answer::to_s3_error)?;
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

/// Decode an unsigned aws-chunked `body` (see [`crate::unchunk`]): its
/// `Content-Length` becomes the declared decoded length, its trailer a
/// [`crate::unchunk::DecodedTrailers`] extension for the gateway.
fn unchunk(
    body: s3s::Body,
    headers: &mut http::HeaderMap,
    extensions: &mut http::Extensions,
) -> s3s::S3Result<s3s::Body> {
    // The prechecks made sure it is there, in digits.
    let declared = headers
        .get("x-amz-decoded-content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .ok_or_else(|| {
            s3s::s3_error!(
                MissingContentLength,
                "You must provide the Content-Length HTTP header."
            )
        })?;
    headers.insert(http::header::CONTENT_LENGTH, declared.into());
    let trailers = crate::unchunk::DecodedTrailers::default();
    extensions.insert(trailers.clone());
    let stream: s3s::stream::DynByteStream =
        Box::pin(crate::unchunk::Unchunked::new(body, declared, trailers));
    Ok(s3s::Body::from(stream))
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
        let body = s3s::Body::http_body(leftover::Returned::with_tap(body, slot.clone()));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A header map of `pairs`, in order (repeats kept).
    pub(super) fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
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
    fn presign_parameters_come_off() {
        let u: http::Uri = "/b/k?X-Amz-Signature=s&partNumber=2&X-Amz-Date=d"
            .parse()
            .unwrap();
        assert_eq!(without_presign(&u).to_string(), "/b/k?partNumber=2");
        let u: http::Uri = "/b/k?X-Amz-Signature=s".parse().unwrap();
        assert_eq!(without_presign(&u).to_string(), "/b/k");
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
}
