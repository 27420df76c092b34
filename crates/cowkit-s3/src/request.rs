//! What a request asks for, read and checked as S3 checks it: pure
//! functions of the request's input and headers, no store involved (the
//! gateway's operations in [`crate::gateway`] call them first).

use std::collections::BTreeMap;

use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Result};

use crate::answer::{invalid_request, tag_error, to_s3_error, with_error_elements, with_status};
use crate::checksum::{Algorithm, PartChecksum, Type, UNSUPPORTED_ALGORITHM};
use crate::error::Error;
use crate::text::bare_etag;

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

/// A version id that is not one (`null` or the form the gateway makes,
/// see [`crate::versions::id`]) is refused as S3 refuses an invalid one.
pub(crate) fn check_version_id(v: Option<&str>) -> S3Result<()> {
    match v {
        Some(v) if !crate::versions::id::check(v) => {
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

/// The version a copy reads (`None`: the current one); checked by
/// [`copy_source`].
pub(crate) fn copy_source_version(cs: &CopySource) -> Option<String> {
    match cs {
        CopySource::Bucket { version_id, .. } => version_id.as_deref().map(str::to_string),
        _ => None,
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

/// `x-amz-checksum-type` (CreateMultipartUpload, CompleteMultipartUpload).
pub(crate) fn checksum_type(t: Option<&ChecksumType>) -> S3Result<Option<Type>> {
    t.map(|t| {
        Type::parse(t.as_str())
            .ok_or_else(|| invalid_request("Value for x-amz-checksum-type header is invalid."))
    })
    .transpose()
}

/// `x-amz-checksum-algorithm` (CreateMultipartUpload, CopyObject).
pub(crate) fn checksum_algorithm(a: Option<&ChecksumAlgorithm>) -> S3Result<Option<Algorithm>> {
    a.map(|a| Algorithm::parse(a.as_str()).ok_or_else(|| invalid_request(UNSUPPORTED_ALGORITHM)))
        .transpose()
}

/// The checksum algorithm and type of a new multipart upload: the type
/// only with an algorithm, and one the algorithm supports; the
/// algorithm's default type when none is given.
pub(crate) fn upload_checksum(
    algorithm: Option<&ChecksumAlgorithm>,
    kind: Option<&ChecksumType>,
) -> S3Result<Option<(Algorithm, Type)>> {
    match (checksum_algorithm(algorithm)?, checksum_type(kind)?) {
        (None, Some(_)) => Err(invalid_request(
            "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.",
        )),
        (None, None) => Ok(None),
        (Some(a), None) => Ok(Some((a, a.default_type()))),
        (Some(a), Some(t)) if !a.supports(t) => Err(invalid_request(format!(
            "The {} checksum type cannot be used with the {} checksum algorithm.",
            t.name(),
            a.name().to_ascii_lowercase()
        ))),
        (Some(a), Some(t)) => Ok(Some((a, t))),
    }
}

/// `x-amz-mp-object-size`: the object size a CompleteMultipartUpload
/// expects.
pub(crate) fn mp_object_size(h: &http::HeaderMap) -> S3Result<Option<i64>> {
    let Some(v) = h.get("x-amz-mp-object-size") else {
        return Ok(None);
    };
    let v = v.to_str().unwrap_or("");
    v.trim().parse::<i64>().map(Some).map_err(|_| {
        invalid_request(format!(
            "Value for x-amz-mp-object-size header is invalid: '{v}'"
        ))
    })
}

/// The part list of a CompleteMultipartUpload document.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PartList {
    /// Each `<Part>`'s number and ETag (unquoted), in document order.
    pub requested: Vec<(i32, String)>,
    /// Each `<Part>`'s checksum, if it gave one.
    pub checksums: Vec<Option<(Algorithm, String)>>,
}

/// The part list of a CompleteMultipartUpload: every part has a number
/// and an ETag, and at most one checksum, well-formed; `taken` are the
/// checksums the server took out of the document for s3s (see
/// [`crate::checksum::take_part_checksums`]), by `<Part>` position.
pub(crate) fn complete_parts(
    parts: Vec<CompletedPart>,
    taken: &[PartChecksum],
) -> S3Result<PartList> {
    let mut list = PartList::default();
    for (n, p) in parts.into_iter().enumerate() {
        let mut given: Vec<(Algorithm, &String)> = [
            (Algorithm::Crc32, p.checksum_crc32.as_ref()),
            (Algorithm::Crc32c, p.checksum_crc32c.as_ref()),
            (Algorithm::Crc64Nvme, p.checksum_crc64nvme.as_ref()),
            (Algorithm::Sha1, p.checksum_sha1.as_ref()),
            (Algorithm::Sha256, p.checksum_sha256.as_ref()),
        ]
        .into_iter()
        .filter_map(|(a, v)| Some((a, v?)))
        .collect();
        given.extend(
            taken
                .iter()
                .filter(|t| t.part == n + 1)
                .map(|t| (t.algorithm, &t.value)),
        );
        let bad_part = |v: &str| {
            log::debug!("complete: part checksum `{v}`");
            with_status(
                S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "Invalid Base64 or multiple checksums present in request",
                ),
                http::StatusCode::BAD_REQUEST,
            )
        };
        match given.as_slice() {
            [] => list.checksums.push(None),
            [(a, v)] => {
                if crate::checksum::decode(*a, v).is_none() {
                    return Err(bad_part(v));
                }
                list.checksums.push(Some((*a, v.to_string())));
            }
            _ => return Err(bad_part("")),
        }
        let (Some(number), Some(e_tag)) = (p.part_number, p.e_tag) else {
            return Err(to_s3_error(Error::MalformedXml));
        };
        list.requested
            .push((number, bare_etag(e_tag.value()).to_string()));
    }
    Ok(list)
}

/// `x-amz-metadata-directive`: whether a copy replaces the metadata.
pub(crate) fn replaces_metadata(d: Option<&MetadataDirective>) -> S3Result<bool> {
    match d.map(|d| d.as_str()) {
        None | Some(MetadataDirective::COPY) => Ok(false),
        Some(MetadataDirective::REPLACE) => Ok(true),
        Some(_) => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "Unknown metadata directive.",
        )),
    }
}

/// `x-amz-tagging-directive`: the tags a copy gets instead of the
/// source's (`REPLACE`: those of `x-amz-tagging`), or none to keep them.
pub(crate) fn replaced_tags(
    d: Option<&TaggingDirective>,
    tagging: Option<&str>,
) -> S3Result<Option<Vec<crate::tagging::Tag>>> {
    match d.map(|d| d.as_str()) {
        None | Some(TaggingDirective::COPY) => Ok(None),
        Some(TaggingDirective::REPLACE) => Ok(Some(header_tags(tagging)?)),
        Some(d) => {
            let mut e =
                S3Error::with_message(S3ErrorCode::InvalidArgument, "Unknown tagging directive.");
            with_error_elements(
                &mut e,
                &[
                    ("ArgumentName", "x-amz-tagging-directive"),
                    ("ArgumentValue", d),
                ],
            );
            Err(e)
        }
    }
}

/// `x-amz-object-attributes` (one header, comma-separated, or several):
/// not empty, and only attributes S3 knows.
pub(crate) fn object_attributes(attrs: &[ObjectAttributes]) -> S3Result<Vec<String>> {
    let attrs: Vec<String> = attrs
        .iter()
        .flat_map(|a| a.as_str().split(','))
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .collect();
    if attrs.is_empty() {
        return Err(invalid_request(
            "The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty",
        ));
    }
    let known = [
        "ETag",
        "Checksum",
        "ObjectParts",
        "StorageClass",
        "ObjectSize",
    ];
    if attrs.iter().any(|a| !known.contains(&a.as_str())) {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "Invalid attribute name specified.",
        ));
    }
    Ok(attrs)
}

/// `x-amz-if-match-initiated-time` in seconds since the epoch (0 when it
/// cannot be read).
pub(crate) fn epoch_seconds(t: &Timestamp) -> u64 {
    let mut buf = Vec::new();
    match t.format(TimestampFormat::EpochSeconds, &mut buf) {
        Ok(()) => String::from_utf8_lossy(&buf)
            .split('.')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(e: S3Error) -> (String, Option<String>) {
        (
            e.code().as_str().to_string(),
            e.message().map(str::to_string),
        )
    }

    fn refused(e: S3Error, want_code: &str, want_message: &str) {
        assert_eq!(code(e), (want_code.into(), Some(want_message.into())));
    }

    fn part(n: Option<i32>, etag: Option<&str>) -> CompletedPart {
        CompletedPart {
            part_number: n,
            e_tag: etag.map(|e| ETag::Strong(e.to_string())),
            ..Default::default()
        }
    }

    #[test]
    fn complete_part_list_numbers_etags_and_checksums() {
        let mut p2 = part(Some(2), Some("\"bb\""));
        p2.checksum_crc32 = Some("AAAAAA==".into());
        let taken = [PartChecksum {
            part: 1,
            algorithm: Algorithm::Sha512,
            value: crate::checksum::b64(&[0u8; 64]),
        }];
        let l = complete_parts(vec![part(Some(1), Some("aa")), p2], &taken).unwrap();
        assert_eq!(l.requested, [(1, "aa".to_string()), (2, "bb".to_string())]);
        assert_eq!(
            l.checksums,
            [
                Some((Algorithm::Sha512, crate::checksum::b64(&[0u8; 64]))),
                Some((Algorithm::Crc32, "AAAAAA==".to_string()))
            ]
        );
        assert_eq!(complete_parts(vec![], &[]).unwrap(), PartList::default());
    }

    #[test]
    fn complete_part_list_refusals() {
        // No number, or no ETag: malformed.
        for p in [part(None, Some("aa")), part(Some(1), None)] {
            assert_eq!(
                code(complete_parts(vec![p], &[]).unwrap_err()).0,
                "MalformedXML"
            );
        }
        // A checksum that is not base64 of the algorithm's size, or two.
        let mut bad = part(Some(1), Some("aa"));
        bad.checksum_crc32 = Some("not base64".into());
        let mut two = part(Some(1), Some("aa"));
        two.checksum_crc32 = Some("AAAAAA==".into());
        two.checksum_crc32c = Some("AAAAAA==".into());
        for p in [bad, two] {
            let e = complete_parts(vec![p], &[]).unwrap_err();
            assert_eq!(e.status_code(), Some(http::StatusCode::BAD_REQUEST));
            refused(
                e,
                "InvalidArgument",
                "Invalid Base64 or multiple checksums present in request",
            );
        }
    }

    #[test]
    fn upload_checksum_algorithm_and_type() {
        let a = |s: &str| ChecksumAlgorithm::from(s.to_string());
        let t = |s: &str| ChecksumType::from(s.to_string());
        assert_eq!(upload_checksum(None, None).unwrap(), None);
        assert_eq!(
            upload_checksum(Some(&a("CRC32")), None).unwrap(),
            Some((Algorithm::Crc32, Algorithm::Crc32.default_type()))
        );
        assert_eq!(
            upload_checksum(Some(&a("SHA256")), Some(&t("COMPOSITE"))).unwrap(),
            Some((Algorithm::Sha256, Type::Composite))
        );
        let msg = |r: S3Result<_>| code(r.unwrap_err()).1.unwrap_or_default();
        assert!(msg(upload_checksum(None, Some(&t("COMPOSITE")))).contains("can only be used"));
        assert!(
            msg(upload_checksum(Some(&a("SHA256")), Some(&t("FULL_OBJECT"))))
                .contains("cannot be used with the sha256")
        );
        assert_eq!(
            msg(upload_checksum(Some(&a("CRC7")), None)),
            UNSUPPORTED_ALGORITHM
        );
        assert!(msg(upload_checksum(None, Some(&t("PARTIAL")))).contains("x-amz-checksum-type"));
    }

    #[test]
    fn mp_object_size_header() {
        let mut h = http::HeaderMap::new();
        assert_eq!(mp_object_size(&h).unwrap(), None);
        h.insert(
            "x-amz-mp-object-size",
            http::HeaderValue::from_static(" 42 "),
        );
        assert_eq!(mp_object_size(&h).unwrap(), Some(42));
        h.insert("x-amz-mp-object-size", http::HeaderValue::from_static("x"));
        assert_eq!(
            code(mp_object_size(&h).unwrap_err()).1.as_deref(),
            Some("Value for x-amz-mp-object-size header is invalid: 'x'")
        );
    }

    #[test]
    fn copy_range_and_source() {
        assert_eq!(parse_copy_range("bytes=0-9").unwrap(), (0, 9));
        for bad in ["bytes=9-0", "0-9", "bytes=a-9", "bytes=-9"] {
            assert_eq!(
                code(parse_copy_range(bad).unwrap_err()).0,
                "InvalidArgument"
            );
        }
        let src = |v: Option<&str>| CopySource::Bucket {
            bucket: "b".into(),
            key: "k/x".into(),
            version_id: v.map(Into::into),
        };
        assert_eq!(
            copy_source(&src(Some("null"))).unwrap(),
            ("b".to_string(), "k/x".to_string())
        );
        let e = copy_source(&src(Some("v1"))).unwrap_err();
        refused(e, "InvalidArgument", "Invalid version id specified");
    }

    #[test]
    fn copy_directives() {
        let md = |s: &str| MetadataDirective::from(s.to_string());
        assert!(!replaces_metadata(None).unwrap());
        assert!(replaces_metadata(Some(&md("REPLACE"))).unwrap());
        assert!(replaces_metadata(Some(&md("MOVE"))).is_err());
        let td = |s: &str| TaggingDirective::from(s.to_string());
        assert_eq!(replaced_tags(Some(&td("COPY")), Some("a=1")).unwrap(), None);
        let tags = replaced_tags(Some(&td("REPLACE")), Some("a=1"))
            .unwrap()
            .unwrap();
        assert_eq!((tags[0].key.as_str(), tags[0].value.as_str()), ("a", "1"));
        assert_eq!(
            replaced_tags(Some(&td("REPLACE")), None).unwrap(),
            Some(vec![])
        );
        assert!(replaced_tags(Some(&td("MOVE")), None).is_err());
    }

    #[test]
    fn object_attribute_lists() {
        let a = |s: &str| ObjectAttributes::from(s.to_string());
        assert_eq!(
            object_attributes(&[a("ETag, ObjectSize"), a("Checksum")]).unwrap(),
            ["ETag", "ObjectSize", "Checksum"]
        );
        assert_eq!(
            code(object_attributes(&[]).unwrap_err()).0,
            "InvalidRequest"
        );
        assert_eq!(
            code(object_attributes(&[a(" , ")]).unwrap_err()).0,
            "InvalidRequest"
        );
        assert_eq!(
            code(object_attributes(&[a("Size")]).unwrap_err()).0,
            "InvalidArgument"
        );
    }

    #[test]
    fn limits_part_numbers_and_version_ids() {
        assert!(check_max("max-keys", Some(0)).is_ok() && check_max("max-keys", None).is_ok());
        assert_eq!(
            code(check_max("max-keys", Some(-1)).unwrap_err()).0,
            "InvalidArgument"
        );
        assert!(check_part_number(Some(1), false).is_ok());
        assert_eq!(
            code(check_part_number(Some(0), false).unwrap_err()).0,
            "InvalidArgument"
        );
        assert_eq!(
            code(check_part_number(Some(1), true).unwrap_err()).0,
            "InvalidRequest"
        );
        assert!(check_version_id(None).is_ok() && check_version_id(Some("null")).is_ok());
        assert!(check_version_id(Some("x")).is_err());
    }
}
