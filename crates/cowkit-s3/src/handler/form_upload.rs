//! PostObject: a browser's HTML form POSTed to `/<bucket>` (see
//! [`crate::form`]). Taken before s3s (whose PostObject reads the whole
//! file into memory): the fields are read within [`crate::form::parse::LIMITS`],
//! the signature and the policy checked, and nothing is written unless
//! they hold. The form then becomes a PutObject of its file: the fields
//! S3 stores become the headers, the file's bytes the body (streamed,
//! never held whole), and the request goes to the second s3s service as
//! the `Detour`'s do (authenticated here, authorised there as PutObject:
//! `s3:PutObject`, WRITE on the bucket), so PutObject's own path checks
//! and stores it. Its answer becomes PostObject's (204, 200, 201 with a
//! `PostResponse`, or a 303 to `success_action_redirect`).

use super::access::Access;
use super::*;
use crate::form::parse::{self, BodyStream, FileBody, FileError};
use crate::form::policy::Policy;
use crate::form::sign::{self, Signed};
use crate::refusal::Refusal;
use crate::text::xml_escape;
use http::StatusCode;

/// What PostObject needs of the server.
#[derive(Clone)]
pub(super) struct Uploads {
    /// The second s3s service (see `Detour`).
    pub(super) inner: s3s::service::S3Service,
    pub(super) access: Access,
    pub(super) accounts: Option<Arc<Accounts>>,
    pub(super) prechecks: Arc<Prechecks>,
}

/// The fields that become PutObject's headers as they are.
fn stored_as_header(name: &str) -> bool {
    matches!(
        name,
        "content-type"
            | "cache-control"
            | "content-disposition"
            | "content-encoding"
            | "content-language"
            | "expires"
            | "x-amz-website-redirect-location"
            | "x-amz-storage-class"
    ) || [
        "x-amz-meta-",
        "x-amz-checksum-",
        "x-amz-server-side-encryption",
        "x-amz-object-lock-",
    ]
    .iter()
    .any(|p| name.starts_with(p))
}

/// A checksum field of an algorithm S3 does not know (PutObject would
/// pass over such a header; a form's field is refused, not dropped).
fn unknown_checksum(name: &str) -> bool {
    name.strip_prefix("x-amz-checksum-").is_some_and(|a| {
        !matches!(a, "algorithm" | "type") && crate::checksum::Algorithm::parse(a).is_none()
    })
}

/// How a POST is answered: `None` for s3s; `Some(Ok(bucket))` for a form
/// upload; `Some(Err)` refused at once.
pub(super) fn route(req: &s3s::HttpRequest) -> Option<std::result::Result<String, Refusal>> {
    if req.method() != http::Method::POST {
        return None;
    }
    let path = req.uri().path().trim_start_matches('/');
    let (bucket, key) = path.split_once('/').unwrap_or((path, ""));
    let ctype = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mime = ctype.split(';').next().unwrap_or("").trim();
    let form = mime.eq_ignore_ascii_case("multipart/form-data");
    let bucket_only = !bucket.is_empty() && key.is_empty();
    if form && bucket_only {
        return Some(Ok(bucket.to_string()));
    }
    if form {
        // s3s would read the form, then refuse it.
        return Some(Err(Refusal::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "The specified method is not allowed against this resource.",
        )));
    }
    (bucket_only && req.uri().query().is_none_or(str::is_empty)).then(|| {
        Err(Refusal::new(
            StatusCode::PRECONDITION_FAILED,
            "PreconditionFailed",
            "At least one of the pre-conditions you specified did not hold.",
        )
        .with(
            "Condition",
            "Bucket POST must be of the enclosure-type multipart/form-data",
        ))
    })
}

/// `s` percent-encoded but for unreserved characters and `/`.
fn encode_path(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            o.push(b as char);
        } else {
            o.push_str(&format!("%{b:02X}"));
        }
    }
    o
}

/// `s` percent-encoded for a query (`/` too).
fn encode_query(s: &str) -> String {
    encode_path(s).replace('/', "%2F")
}

/// A form's `tagging` document as an `x-amz-tagging` header value.
fn tagging_header(xml: &str) -> std::result::Result<String, Refusal> {
    let mut d = s3s::xml::Deserializer::new(xml.as_bytes());
    let t: s3s::dto::Tagging = s3s::xml::Deserialize::deserialize(&mut d)
        .ok()
        .filter(|_| d.expect_eof().is_ok())
        .ok_or_else(|| {
            Refusal::new(
                StatusCode::BAD_REQUEST,
                "MalformedXML",
                "The XML you provided was not well-formed or did not validate against our published schema.",
            )
        })?;
    Ok(t.tag_set
        .iter()
        .map(|t| {
            let (k, v) = (
                t.key.as_deref().unwrap_or(""),
                t.value.as_deref().unwrap_or(""),
            );
            format!("{}={}", encode_query(k), encode_query(v))
        })
        .collect::<Vec<_>>()
        .join("&"))
}

/// PutObject's head for the form: its URI and headers.
fn put_head(
    bucket: &str,
    key: &str,
    fields: &parse::Fields,
) -> std::result::Result<(http::Uri, http::HeaderMap), Refusal> {
    let bad = |name: &str, value: &str| {
        crate::form::invalid_argument(format!("Invalid value for field '{name}'."), name, value)
    };
    let uri: http::Uri = format!("/{}/{}", encode_path(bucket), encode_path(key))
        .parse()
        .map_err(|_| bad("key", key))?;
    let mut h = http::HeaderMap::new();
    for (name, value) in &fields.fields {
        let (header, value) = match name.as_str() {
            "acl" => ("x-amz-acl".to_string(), value.clone()),
            "tagging" => ("x-amz-tagging".to_string(), tagging_header(value)?),
            "content-type" if value.is_empty() => continue,
            n if unknown_checksum(n) => {
                return Err(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    "InvalidRequest",
                    "The algorithm type you specified in x-amz-checksum- header is invalid.",
                ))
            }
            n if stored_as_header(n) => (n.to_string(), value.clone()),
            _ => continue,
        };
        let hn = http::HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| bad(name, value.as_str()))?;
        let hv = http::HeaderValue::from_str(&value).map_err(|_| bad(name, value.as_str()))?;
        h.insert(hn, hv);
    }
    Ok((uri, h))
}

/// An s3s error as an answer (its extra elements go with it, for `shape`).
fn error_response(e: &s3s::S3Error) -> s3s::HttpResponse {
    let xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Error><Code>{}</Code><Message>{}</Message></Error>"#,
        xml_escape(e.code().as_str()),
        xml_escape(e.message().unwrap_or(""))
    );
    let mut res = hyper::Response::new(s3s::Body::from(xml));
    *res.status_mut() = e.status_code().unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if let Some(h) = e.headers() {
        res.headers_mut().extend(h.clone());
    }
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/xml"),
    );
    res
}

/// S3's answer to a file outside `content-length-range`.
fn file_refusal(e: FileError) -> Refusal {
    match e {
        FileError::TooLarge { size, max } => Refusal::new(
            StatusCode::BAD_REQUEST,
            "EntityTooLarge",
            "Your proposed upload exceeds the maximum allowed object size.",
        )
        .with("ProposedSize", size.to_string())
        .with("MaxSizeAllowed", max.to_string()),
        FileError::TooSmall { size, min } => Refusal::new(
            StatusCode::BAD_REQUEST,
            "EntityTooSmall",
            "Your proposed upload is smaller than the minimum allowed size",
        )
        .with("ProposedSize", size.to_string())
        .with("MinSizeAllowed", min.to_string()),
        FileError::Unterminated => crate::form::malformed(),
    }
}

/// What a signed form's signature and policy allow; the credentials it
/// was signed with.
fn verify(accounts: &Accounts, s: &Signed) -> std::result::Result<s3s::auth::Credentials, Refusal> {
    let secret = match accounts.find(&s.access_key) {
        Ok(Some(a)) => a.secret,
        Ok(None) => {
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "InvalidAccessKeyId",
                "The AWS Access Key Id you provided does not exist in our records.",
            )
            .with("AWSAccessKeyId", &s.access_key))
        }
        Err(e) => {
            log::error!("accounts: {}", crate::error_chain(&e));
            return Err(Refusal::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                "the account store cannot be read; see the server log",
            ));
        }
    };
    if !sign::verify(s, &secret) {
        return Err(Refusal::new(
            StatusCode::FORBIDDEN,
            "SignatureDoesNotMatch",
            "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
        )
        .with("AWSAccessKeyId", &s.access_key)
        .with("StringToSign", &s.policy)
        .with("SignatureProvided", &s.signature)
        .with("StringToSignBytes", sign::hex_bytes(&s.policy)));
    }
    Ok(s3s::auth::Credentials {
        access_key: s.access_key.clone(),
        secret_key: secret.into(),
    })
}

/// A form read and checked, ready to become a PutObject.
struct Checked {
    key: String,
    fields: parse::Fields,
    creds: Option<s3s::auth::Credentials>,
    /// `content-length-range`.
    range: (u64, u64),
}

impl Uploads {
    /// The policy and signature of `fields` for `bucket`.
    fn check(&self, bucket: &str, fields: parse::Fields) -> std::result::Result<Checked, Refusal> {
        let get = |f: &str| fields.get(f).map(str::to_string);
        let signed = sign::signed_fields(&get, &self.prechecks.region)?;
        let key = fields
            .get("key")
            .ok_or_else(|| crate::form::missing_field("key"))?;
        let name = fields.file_name.as_deref().unwrap_or("");
        let name = name.rsplit(['/', '\\']).next().unwrap_or("");
        let key = key.replace("${filename}", name);
        if key.is_empty() {
            return Err(crate::form::invalid_argument(
                "User key must have a length greater than 0.".into(),
                "key",
                "",
            ));
        }
        let (creds, policy) = match (&signed, &self.accounts) {
            (Some(s), Some(a)) => (Some(verify(a, s)?), Some(s.policy.as_str())),
            // A server without credentials takes every request unsigned.
            (Some(s), None) => (None, Some(s.policy.as_str())),
            (None, _) => (None, fields.get("policy")),
        };
        let now = crate::precheck::auth::now_secs();
        if signed
            .as_ref()
            .and_then(|s| s.time)
            .is_some_and(|t| now - t > sign::MAX_AGE)
        {
            let v = crate::form::policy::Violation::Expired;
            return Err(Refusal::new(
                StatusCode::FORBIDDEN,
                "AccessDenied",
                v.to_string(),
            ));
        }
        let mut range = (0, u64::MAX);
        if let Some(p) = policy {
            let p = Policy::parse(p).map_err(|e| {
                Refusal::new(
                    StatusCode::BAD_REQUEST,
                    "InvalidPolicyDocument",
                    e.to_string(),
                )
            })?;
            let value = |f: &str| match f {
                "bucket" => bucket.to_string(),
                "key" => key.clone(),
                f => fields.get(f).unwrap_or("").to_string(),
            };
            let names: Vec<&str> = fields.fields.iter().map(|(n, _)| n.as_str()).collect();
            p.check(now, &value, &names)
                .map_err(|v| Refusal::new(StatusCode::FORBIDDEN, "AccessDenied", v.to_string()))?;
            range = p.length_range();
        }
        Ok(Checked {
            key,
            fields,
            creds,
            range,
        })
    }

    /// Answer a form upload to `bucket`.
    pub(super) async fn answer(&self, req: s3s::HttpRequest, bucket: String) -> s3s::HttpResponse {
        let (parts, body) = req.into_parts();
        let mut body: BodyStream = Box::pin(body);
        let boundary = parts
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                v.split(';').skip(1).find_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    k.trim()
                        .eq_ignore_ascii_case("boundary")
                        .then(|| v.trim().trim_matches('"').to_string())
                })
            })
            .filter(|b| !b.is_empty() && b.len() <= 70);
        let refuse = |r: Refusal, body: BodyStream| async move {
            drain(body).await;
            refusal_response(&r)
        };
        let Some(boundary) = boundary else {
            return refuse(crate::form::malformed(), body).await;
        };
        let (fields, first) = match parse::read_fields(&mut body, &boundary, parse::LIMITS).await {
            Ok(f) => f,
            Err(r) => return refuse(r, body).await,
        };
        let checked = match self.check(&bucket, fields) {
            Ok(c) => c,
            Err(r) => return refuse(r, body).await,
        };
        let file = FileBody::new(body, first, &boundary, checked.range);
        self.put(&parts, &bucket, checked, file).await
    }

    /// The form as a PutObject of its file, and PutObject's answer as
    /// PostObject's.
    async fn put(
        &self,
        parts: &http::request::Parts,
        bucket: &str,
        c: Checked,
        file: FileBody,
    ) -> s3s::HttpResponse {
        let (uri, headers) = match put_head(bucket, &c.key, &c.fields) {
            Ok(h) => h,
            Err(r) => return refusal_response(&r),
        };
        if let Err(r) = self.prechecks.check(&http::Method::PUT, &uri, &headers) {
            return refusal_response(&r);
        }
        let mut ext = http::Extensions::new();
        if let Some(p) = parts.extensions.get::<crate::authz::Peer>() {
            ext.insert(*p);
        }
        if self.accounts.is_some() {
            match self
                .access
                .authenticate(c.creds.as_ref(), &http::Method::PUT, &uri, &headers)
            {
                Ok(who) => {
                    ext.insert(who);
                }
                Err(e) => return error_response(&e),
            }
        }
        let verdict = file.verdict();
        let stream: s3s::stream::DynByteStream = Box::pin(file);
        let mut inner = http::Request::new(s3s::Body::from(stream));
        *inner.method_mut() = http::Method::PUT;
        *inner.uri_mut() = uri;
        *inner.headers_mut() = headers;
        *inner.extensions_mut() = ext;
        let res = match self.inner.call(inner).await {
            Ok(r) => r,
            Err(e) => {
                let e: s3s::StdError = e.into();
                return error_response(&crate::answer::internal(e));
            }
        };
        if !res.status().is_success() {
            let failed = verdict.lock().ok().and_then(|v| *v);
            return match failed {
                Some(f) => refusal_response(&file_refusal(f)),
                None => res,
            };
        }
        answer_of(parts, bucket, &c, res)
    }
}

/// PostObject's answer to a stored form (`res`: PutObject's).
fn answer_of(
    parts: &http::request::Parts,
    bucket: &str,
    c: &Checked,
    res: s3s::HttpResponse,
) -> s3s::HttpResponse {
    let etag = res.headers().get(http::header::ETAG).cloned();
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let path = format!("/{}/{}", encode_path(bucket), encode_path(&c.key));
    let location = if host.is_empty() {
        path
    } else {
        format!("http://{host}{path}")
    };
    let redirect = c
        .fields
        .get("success_action_redirect")
        .or_else(|| c.fields.get("redirect"))
        .filter(|r| r.starts_with("http://") || r.starts_with("https://"));
    let etag_text = etag
        .as_ref()
        .and_then(|e| e.to_str().ok())
        .unwrap_or("")
        .to_string();
    let (status, body) = match (redirect, c.fields.get("success_action_status")) {
        (Some(r), _) => {
            let sep = if r.contains('?') { '&' } else { '?' };
            let to = format!(
                "{r}{sep}bucket={}&key={}&etag={}",
                encode_query(bucket),
                encode_query(&c.key),
                encode_query(&etag_text)
            );
            let mut out = hyper::Response::new(s3s::Body::empty());
            *out.status_mut() = StatusCode::SEE_OTHER;
            if let Ok(v) = http::HeaderValue::from_str(&to) {
                out.headers_mut().insert(http::header::LOCATION, v);
            }
            return out;
        }
        (None, Some("200")) => (StatusCode::OK, String::new()),
        (None, Some("201")) => (
            StatusCode::CREATED,
            format!(
                r#"<?xml version="1.0" encoding="UTF-8"?><PostResponse xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Location>{}</Location><Bucket>{}</Bucket><Key>{}</Key><ETag>{}</ETag></PostResponse>"#,
                xml_escape(&location),
                xml_escape(bucket),
                xml_escape(&c.key),
                xml_escape(&etag_text)
            ),
        ),
        _ => (StatusCode::NO_CONTENT, String::new()),
    };
    let mut out = hyper::Response::new(if body.is_empty() {
        s3s::Body::empty()
    } else {
        s3s::Body::from(body)
    });
    *out.status_mut() = status;
    for (k, v) in res.headers() {
        let n = k.as_str();
        if n == "etag" || n.starts_with("x-amz-") {
            out.headers_mut().append(k.clone(), v.clone());
        }
    }
    if let Ok(v) = http::HeaderValue::from_str(&location) {
        out.headers_mut().insert(http::header::LOCATION, v);
    }
    if status == StatusCode::CREATED {
        out.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/xml"),
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(uri: &str, ctype: Option<&str>) -> s3s::HttpRequest {
        let mut r = http::Request::new(s3s::Body::empty());
        *r.method_mut() = http::Method::POST;
        *r.uri_mut() = uri.parse().unwrap();
        if let Some(c) = ctype {
            r.headers_mut()
                .insert(http::header::CONTENT_TYPE, c.parse().unwrap());
        }
        r
    }

    #[test]
    fn which_posts_are_form_uploads() {
        let form = Some("multipart/form-data; boundary=x");
        assert_eq!(route(&post("/b", form)), Some(Ok("b".into())));
        assert_eq!(route(&post("/b/", form)), Some(Ok("b".into())));
        assert_eq!(
            route(&post("/b/k", form)).unwrap().unwrap_err().code,
            "MethodNotAllowed"
        );
        assert_eq!(
            route(&post("/b", Some("application/json")))
                .unwrap()
                .unwrap_err()
                .code,
            "PreconditionFailed"
        );
        assert!(route(&post("/b?delete", Some("application/xml"))).is_none());
        assert!(route(&post("/b/k?uploads", None)).is_none());
    }

    #[test]
    fn fields_become_headers() {
        let fields = parse::Fields {
            fields: vec![
                ("key".into(), "a b/c".into()),
                ("content-type".into(), String::new()),
                ("x-amz-meta-foo".into(), "bar".into()),
                ("acl".into(), "private".into()),
                ("tagging".into(), "<Tagging><TagSet><Tag><Key>k 1</Key><Value>v/2</Value></Tag></TagSet></Tagging>".into()),
                ("success_action_status".into(), "201".into()),
                ("x-amz-date".into(), "20260101T000000Z".into()),
            ],
            file_name: None,
        };
        let (uri, h) = put_head("b", "a b/c", &fields).unwrap();
        assert_eq!(uri.path(), "/b/a%20b/c");
        assert_eq!(h["x-amz-meta-foo"], "bar");
        assert_eq!(h["x-amz-acl"], "private");
        assert_eq!(h["x-amz-tagging"], "k%201=v%2F2");
        assert!(!h.contains_key("content-type"));
        assert!(!h.contains_key("x-amz-date"));
        assert!(!h.contains_key("success_action_status"));
        assert_eq!(tagging_header("invalid").unwrap_err().code, "MalformedXML");
        let odd = parse::Fields {
            fields: vec![("x-amz-checksum-invalid".into(), "x".into())],
            file_name: None,
        };
        assert_eq!(put_head("b", "k", &odd).unwrap_err().code, "InvalidRequest");
        assert!(!unknown_checksum("x-amz-checksum-crc64nvme"));
    }
}
