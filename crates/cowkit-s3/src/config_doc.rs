//! The document of PutBucketCors, read whole before
//! s3s parses them: bounded (S3's limits, `MaxMessageLengthExceeded`
//! past them, where s3s would take 20 MiB) and their `Content-MD5` checked
//! (s3s does not check it on XML bodies).

use http::StatusCode;
use md5::Digest;

use crate::refusal::Refusal;

/// The largest document a request may carry, when it is a PutBucketCors
/// (a `PUT` with `?cors`; PutBucketWebsite is bounded by the prechecks) whose body is
/// not aws-chunked (s3s decodes those; their size is bounded by s3s).
pub fn limit_of(method: &http::Method, uri: &http::Uri, headers: &http::HeaderMap) -> Option<u64> {
    if method != http::Method::PUT || crate::precheck::is_streaming(headers) {
        return None;
    }
    let keys = uri.query().unwrap_or("").split('&');
    let key = |k: &str| k.split('=').next().unwrap_or("").to_string();
    keys.map(key).find_map(|k| match k.as_str() {
        "cors" => Some(crate::cors::MAX_DOCUMENT),
        _ => None,
    })
}

fn too_big(max: u64) -> Refusal {
    Refusal::new(
        StatusCode::BAD_REQUEST,
        "MaxMessageLengthExceeded",
        "Your request was too big.",
    )
    .with("MaxMessageLengthBytes", max.to_string())
}

/// Check a document's `Content-MD5` (when given) against its bytes.
pub fn check_md5(given: Option<&http::HeaderValue>, body: &[u8]) -> Result<(), Refusal> {
    let Some(given) = given else {
        return Ok(());
    };
    let want = std::str::from_utf8(given.as_bytes())
        .ok()
        .and_then(crate::checksum::base64_lite::decode)
        .filter(|d| d.len() == 16);
    let Some(want) = want else {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "InvalidDigest",
            "The Content-Md5 you specified is not valid.",
        ));
    };
    if want.as_slice() != md5::Md5::digest(body).as_slice() {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "BadDigest",
            "The Content-MD5 you specified did not match what we received.",
        ));
    }
    Ok(())
}

/// Read the request's body whole, at most `max` bytes, and check its
/// `Content-MD5`; the request goes on with the bytes read. A refusal comes
/// with what is left of the body (to be drained).
pub async fn read(
    req: s3s::HttpRequest,
    max: u64,
) -> Result<s3s::HttpRequest, (Refusal, s3s::Body)> {
    let (parts, mut body) = req.into_parts();
    let declared = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max) {
        return Err((too_big(max), body));
    }
    let mut buf = Vec::new();
    while let Some(chunk) = futures_util::StreamExt::next(&mut body).await {
        let Ok(chunk) = chunk else {
            // s3s sees the same failure on the body it is given.
            break;
        };
        buf.extend_from_slice(&chunk);
        if buf.len() as u64 > max {
            return Err((too_big(max), body));
        }
    }
    check_md5(parts.headers.get("content-md5"), &buf).map_err(|r| (r, s3s::Body::empty()))?;
    Ok(http::Request::from_parts(
        parts,
        s3s::Body::from(bytes::Bytes::from(buf)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_bounded_and_their_md5_checked() {
        let put = http::Method::PUT;
        let h = http::HeaderMap::new();
        let uri = |s: &str| s.parse::<http::Uri>().unwrap();
        assert_eq!(limit_of(&put, &uri("/b?cors"), &h), Some(65536));
        assert_eq!(limit_of(&put, &uri("/b?cors="), &h), Some(65536));
        assert_eq!(limit_of(&http::Method::GET, &uri("/b?cors"), &h), None);
        assert_eq!(limit_of(&put, &uri("/b?tagging"), &h), None);
        let v = |s: &str| http::HeaderValue::from_str(s).unwrap();
        check_md5(None, b"x").unwrap();
        // MD5 of "" is 1B2M2Y8AsgTpgAmY7PhCfg==.
        check_md5(Some(&v("1B2M2Y8AsgTpgAmY7PhCfg==")), b"").unwrap();
        assert_eq!(
            check_md5(Some(&v("uU0nuZNNPgilLlLX2n2r+s==")), b"")
                .unwrap_err()
                .code,
            "BadDigest"
        );
        assert_eq!(
            check_md5(Some(&v("invalid")), b"").unwrap_err().code,
            "InvalidDigest"
        );
    }
}
