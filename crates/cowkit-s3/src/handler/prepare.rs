//! Step 1 of the request path ([`super`]): a request's head read once.
//! The prechecks ([`crate::precheck`]) and the checks that need the store
//! (a copy source, an object ACL, a missing retention document) refuse
//! what S3 refuses before looking further; what s3s 0.14 cannot parse is
//! noted in one [`Rewrite`] for the `Detour`; conditions are handed over
//! as a [`Conditions`] extension; an aws-chunked body is watched
//! ([`crate::chunked`]) and an unsigned body hashed ([`crate::payload`]).

use super::{access, Document, Handler, Rewrite};
use crate::conditions::Conditions;
use crate::refusal::Refusal;

impl Handler {
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
    pub(super) fn prepare(&self, mut req: s3s::HttpRequest) -> (s3s::HttpRequest, Option<Refusal>) {
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
        // An unsigned aws-chunked body, which s3s does not decode: the
        // `Detour` does once the request is authorised.
        if refused.is_none()
            && req
                .headers()
                .get("x-amz-content-sha256")
                .is_some_and(|v| v.as_bytes() == b"STREAMING-UNSIGNED-PAYLOAD-TRAILER")
            && crate::precheck::is_unsigned(req.uri(), req.headers())
        {
            rewrite.unchunk = true;
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
        if !rewrite.strip.is_empty() || rewrite.document.is_some() || rewrite.unchunk {
            req.extensions_mut().insert(rewrite);
        }
        (req, refused)
    }
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
            crate::text::query_pairs(q)
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
    use crate::handler::tests::headers;

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
