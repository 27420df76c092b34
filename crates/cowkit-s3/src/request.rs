//! What a request asks for, read and checked as S3 checks it: pure
//! functions of the request's input and headers, no store involved (the
//! gateway's operations in [`crate::gateway`] call them first).

use std::collections::BTreeMap;

use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Result};

use crate::error::{invalid_request, tag_error};
use crate::respond::with_error_elements;

/// The tags of an `x-amz-tagging` header (none without one).
pub(crate) fn header_tags(h: Option<&str>) -> S3Result<Vec<crate::tagging::Tag>> {
    h.map_or(Ok(Vec::new()), |h| {
        crate::tagging::parse_header(h).map_err(tag_error)
    })
}

/// The headers S3 stores with an object, from a request.
pub(crate) fn stored_headers(h: &http::HeaderMap) -> BTreeMap<String, String> {
    crate::store::STORED_HEADERS
        .iter()
        .filter_map(|n| {
            let v = h.get(*n)?.to_str().ok()?;
            Some((n.to_string(), v.to_string()))
        })
        .collect()
}

/// `?partNumber=` on GET and HEAD: in range, and not with a Range.
pub(crate) fn check_part_number(n: Option<i32>, has_range: bool) -> S3Result<()> {
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

/// A negative `max-keys`, `max-parts`, `max-uploads`, `max-buckets` or
/// `part-number-marker`.
pub(crate) fn check_max(name: &str, v: Option<i32>) -> S3Result<()> {
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

/// User metadata as stored: names in lower case.
pub(crate) fn metadata_of(m: Option<Metadata>) -> BTreeMap<String, String> {
    m.unwrap_or_default()
        .into_iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v))
        .collect()
}

/// A version id other than `null`, the only version an object has here
/// (no bucket is versioned), is refused as S3 refuses an invalid one.
pub(crate) fn check_version_id(v: Option<&str>) -> S3Result<()> {
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

/// The bucket and key a copy reads from.
pub(crate) fn copy_source(cs: &CopySource) -> S3Result<(String, String)> {
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
pub(crate) fn parse_copy_range(r: &str) -> S3Result<(u64, u64)> {
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
