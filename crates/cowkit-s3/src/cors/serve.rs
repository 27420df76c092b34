//! CORS on the wire: the answer to a preflight (`OPTIONS /<bucket>/<key>`,
//! unauthenticated, as on S3) and the headers added to an actual request
//! that carries an `Origin` a rule of its bucket allows.

use std::sync::Arc;

use http::StatusCode;

use super::{allow, forbidden, not_enabled, request_headers, Preflight};
use crate::error::Error;
use crate::refusal::Refusal;
use crate::store::Store;

/// The bucket a path-style request names (`None`: the service).
fn bucket_of(uri: &http::Uri) -> Option<String> {
    let b = uri.path().trim_start_matches('/').split('/').next()?;
    (!b.is_empty()).then(|| b.to_string())
}

/// The CORS rules kept for `bucket` (`None`: it has none).
pub(crate) fn stored_rules(s: &Store, bucket: &str) -> crate::Result<Option<s3s::dto::CORSRules>> {
    s.bucket_record(bucket, super::RECORD, super::MAX_RECORD)
}

/// The bucket's rules, read on the blocking pool; the bucket must exist.
async fn rules_of(
    store: &Arc<Store>,
    bucket: String,
) -> Result<Option<s3s::dto::CORSRules>, Refusal> {
    let store = store.clone();
    let read = move || {
        store.head_bucket(&bucket)?;
        stored_rules(&store, &bucket)
    };
    tokio::task::spawn_blocking(read)
        .await
        .map_err(|e| internal(&e))?
        .map_err(store_refusal)
}

fn internal(e: &dyn std::fmt::Display) -> Refusal {
    log::warn!("CORS rules unreadable: {e}");
    Refusal::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "InternalError",
        "We encountered an internal error. Please try again.",
    )
}

fn store_refusal(e: Error) -> Refusal {
    match e {
        Error::NoSuchBucket { .. } | Error::InvalidBucketName { .. } => Refusal::new(
            StatusCode::NOT_FOUND,
            "NoSuchBucket",
            "The specified bucket does not exist.",
        ),
        e => internal(&e),
    }
}

/// Answer a preflight: the bucket must exist, the request name an origin
/// and one of the five methods and well-formed headers, and a rule of the
/// bucket's allow it.
pub async fn preflight(
    store: &Arc<Store>,
    req: &s3s::HttpRequest,
) -> Result<crate::cors::Allowed, Refusal> {
    let Some(bucket) = bucket_of(req.uri()) else {
        return Err(forbidden());
    };
    let rules = rules_of(store, bucket).await?;
    let p = Preflight::from_headers(req.headers())?;
    let rules = rules.ok_or_else(not_enabled)?;
    allow(&rules, &p).ok_or_else(forbidden)
}

/// An allowed preflight's answer: 200, its headers, no body.
pub fn allowed_response(a: &crate::cors::Allowed) -> s3s::HttpResponse {
    let mut res = http::Response::new(s3s::Body::empty());
    add(res.headers_mut(), a);
    res
}

fn add(h: &mut http::HeaderMap, a: &crate::cors::Allowed) {
    for (k, v) in a.header_pairs() {
        if let Ok(v) = http::HeaderValue::from_str(&v) {
            h.insert(k, v);
        }
    }
}

/// What an actual request with an `Origin` asks of CORS (`None`: no
/// `Origin`, no bucket, or a preflight itself).
pub fn actual_of(req: &s3s::HttpRequest) -> Option<(String, Preflight)> {
    let origin = req.headers().get("origin")?.to_str().ok()?;
    if origin.is_empty() || req.method() == http::Method::OPTIONS {
        return None;
    }
    let headers = req
        .headers()
        .get("access-control-request-headers")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    Some((
        bucket_of(req.uri())?,
        Preflight {
            origin: origin.to_string(),
            method: req.method().as_str().to_string(),
            headers: request_headers(headers).ok()?,
        },
    ))
}

/// Add the CORS headers to the answer of an actual request a rule of its
/// bucket allows (nothing otherwise: the browser then refuses it).
pub async fn add_to_actual(
    store: &Arc<Store>,
    asked: (String, Preflight),
    res: &mut s3s::HttpResponse,
) {
    let (bucket, p) = asked;
    let Ok(Some(rules)) = rules_of(store, bucket).await else {
        return;
    };
    if let Some(a) = allow(&rules, &p) {
        add(res.headers_mut(), &a);
    }
}
