//! The S3 answers to what went wrong: an [`Error`] mapped to the code,
//! message and status S3 gives (in one place, [`to_s3_error`]), the
//! gateway's own refusals, and the extra elements of an error document
//! (carried to [`crate::respond`], which writes them).

use s3s::{s3_error, S3Error, S3ErrorCode, S3Result};

use crate::checksum::base64_lite;
use crate::conditions::{Outcome, WriteOutcome};
use crate::error::{Error, TagError, VersionError};
use crate::names::MAX_KEY_LEN;
use crate::refusal::Refusal;

/// A response header carrying an extra element of an error document
/// (`Name=value`; s3s 0.14 writes only Code, Message, Resource and
/// RequestId): `shape` moves them into the XML.
pub const ERROR_ELEMENT: &str = "x-cowkit-error-element";

/// A [`Refusal`] as an s3s error (its extra elements carried as
/// [`ERROR_ELEMENT`] headers).
pub(crate) fn refusal_error(r: Refusal) -> S3Error {
    let code = s3s::S3ErrorCode::from_bytes(r.code.as_bytes())
        .unwrap_or_else(|| s3s::S3ErrorCode::Custom(r.code.into()));
    let mut e = S3Error::with_message(code, r.message);
    e.set_status_code(r.status);
    let extra: Vec<(&str, &str)> = r.extra.iter().map(|(k, v)| (*k, v.as_str())).collect();
    with_error_elements(&mut e, &extra);
    e
}

/// Give `err` extra `<Error>` elements (see [`ERROR_ELEMENT`]).
pub(crate) fn with_error_elements(err: &mut S3Error, elements: &[(&str, &str)]) {
    let mut h = http::HeaderMap::new();
    for (k, v) in elements {
        if let Ok(v) = http::HeaderValue::from_str(&format!("{k}={v}")) {
            h.append(ERROR_ELEMENT, v);
        }
    }
    err.set_headers(h);
}

/// Map a store error to the S3 error a client expects.
pub fn to_s3_error(e: Error) -> S3Error {
    use S3ErrorCode as C;
    let (code, status) = match &e {
        Error::Fs(fe)
            if matches!(
                cowkit_fs::error::errno_of(fe),
                Some(rustix::io::Errno::NOSPC | rustix::io::Errno::DQUOT)
            ) =>
        {
            log::error!("{}", crate::error_chain(&e));
            let mut err = S3Error::with_message(
                C::Custom("InsufficientStorage".into()),
                "No space left on device.",
            );
            err.set_status_code(hyper::StatusCode::INSUFFICIENT_STORAGE);
            return err;
        }
        Error::Fs(_) | Error::Corrupt { .. } | Error::Accounts(_) => {
            log::error!("{}", crate::error_chain(&e));
            (C::InternalError, None)
        }
        Error::NoSuchBucket { .. } => (C::NoSuchBucket, None),
        Error::BucketExists { .. } => (C::BucketAlreadyOwnedByYou, None),
        Error::BucketTaken { .. } => (C::BucketAlreadyExists, None),
        Error::BucketNotEmpty { .. } => (C::BucketNotEmpty, None),
        Error::InvalidBucketName { .. } => (C::InvalidBucketName, None),
        Error::InvalidKey { key, .. } if key.len() > MAX_KEY_LEN => (C::KeyTooLongError, None),
        Error::InvalidKey { .. } => (C::InvalidArgument, None),
        Error::KeyPath { .. } => {
            // S3 answers a dot segment in the path with a bare 400, which
            // clients report as code `400`, message `Bad Request` (the
            // aws CLI's "An error occurred (400) ... Bad Request"); the
            // same in an error document, for clients that need one.
            let mut err = S3Error::with_message(C::Custom("400".into()), "Bad Request");
            err.set_status_code(hyper::StatusCode::BAD_REQUEST);
            log::debug!("{e}");
            return err;
        }
        Error::KeyConflict { .. } => (
            C::Custom("KeyConflict".into()),
            Some(hyper::StatusCode::CONFLICT),
        ),
        Error::NoSuchKey { .. } => (C::NoSuchKey, None),
        Error::NoSuchUpload { .. } => (C::NoSuchUpload, None),
        Error::InvalidPart { .. } => (C::InvalidPart, None),
        Error::InvalidPartOrder { .. } => (C::InvalidPartOrder, None),
        Error::EntityTooSmall { .. } => (C::EntityTooSmall, None),
        Error::InvalidArgument(_) => (C::InvalidArgument, None),
        Error::InvalidRange { .. } => (C::InvalidRange, None),
        Error::BadDigest { expected, actual } => return bad_digest(expected, actual),
        Error::InvalidRequest(m) => return S3Error::with_message(C::InvalidRequest, m.clone()),
        Error::ChecksumMismatch { .. } | Error::PartChecksum { .. } => {
            return S3Error::with_message(C::BadDigest, e.to_string())
        }
        Error::MalformedXml => (C::MalformedXML, None),
        Error::Version(v) => return version_error(v),
        Error::InvalidTag(t) => return tag_error(*t),
        Error::DirectoryObjectContainsData => {
            let mut err = S3Error::with_message(
                C::Custom("DirectoryObjectContainsData".into()),
                e.to_string(),
            );
            err.set_status_code(hyper::StatusCode::BAD_REQUEST);
            return err;
        }
    };
    let msg = match code {
        C::InternalError => "internal error; see the server log".to_string(),
        _ => match standard_message(&code) {
            Some(m) => {
                log::debug!("{code:?}: {e}");
                m.to_string()
            }
            None => e.to_string(),
        },
    };
    let mut err = S3Error::with_message(code, msg);
    if let Some(s) = status {
        err.set_status_code(s);
    }
    err
}

/// S3's `BadDigest` for a `Content-MD5` that did not match: it names both
/// digests, the one computed in base64, the one given in hex.
fn bad_digest(expected: &str, actual: &str) -> S3Error {
    use base64::Engine as _;
    let calculated = hex::decode(actual)
        .map(|b| base64::engine::general_purpose::STANDARD.encode(b))
        .unwrap_or_else(|_| actual.to_string());
    let given = base64_lite::decode(expected)
        .map(hex::encode)
        .unwrap_or_else(|| expected.to_string());
    let mut err = S3Error::with_message(
        S3ErrorCode::BadDigest,
        "The Content-MD5 you specified did not match what we received.",
    );
    with_error_elements(
        &mut err,
        &[
            ("CalculatedDigest", &calculated),
            ("ExpectedDigest", &given),
        ],
    );
    err
}

/// The message S3 gives with `code` (clients and conformance suites compare
/// it); the details go to the debug log.
pub fn standard_message(code: &S3ErrorCode) -> Option<&'static str> {
    use S3ErrorCode as C;
    Some(match code {
        C::NoSuchBucket => "The specified bucket does not exist.",
        C::NoSuchKey => "The specified key does not exist.",
        C::NoSuchUpload => "The specified multipart upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.",
        C::BucketNotEmpty => "The bucket you tried to delete is not empty.",
        C::BucketAlreadyOwnedByYou => "Your previous request to create the named bucket succeeded and you already own it.",
        C::BucketAlreadyExists => "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.",
        C::InvalidBucketName => "The specified bucket is not valid.",
        C::InvalidPart => "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.",
        C::InvalidPartOrder => "The list of parts was not in ascending order. Parts must be ordered by part number.",
        C::EntityTooSmall => "Your proposed upload is smaller than the minimum allowed size",
        C::BadDigest => "The Content-MD5 you specified did not match what we received.",
        C::InvalidRange => "The requested range is not satisfiable",
        C::KeyTooLongError => "Your key is too long.",
        C::InvalidDigest => "The Content-Md5 you specified is not valid.",
        C::MalformedXML => "The XML you provided was not well-formed or did not validate against our published schema.",
        C::MetadataTooLarge => "Your metadata headers exceed the maximum allowed metadata size",
        C::PreconditionFailed => "At least one of the pre-conditions you specified did not hold.",
        C::SignatureDoesNotMatch => "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
        C::MethodNotAllowed => "The specified method is not allowed against this resource.",
        C::InvalidAccessKeyId => "The AWS Access Key Id you provided does not exist in our records.",
        _ => return None,
    })
}

/// S3's answer to a refused tag set.
pub(crate) fn tag_error(t: TagError) -> S3Error {
    use TagError as T;
    let msg = t.to_string();
    match t {
        T::Encoding => {
            let mut e = S3Error::with_message(S3ErrorCode::InvalidArgument, msg);
            with_error_elements(&mut e, &[("ArgumentName", "x-amz-tagging")]);
            e
        }
        T::Key | T::Value | T::Duplicate => S3Error::with_message(S3ErrorCode::InvalidTag, msg),
        T::TooMany | T::TooManyOnBucket => {
            let mut e = S3Error::with_message(S3ErrorCode::Custom("BadRequest".into()), msg);
            e.set_status_code(http::StatusCode::BAD_REQUEST);
            e
        }
    }
}

/// An internal error: logged, answered without its details.
pub(crate) fn internal(e: impl std::fmt::Display) -> S3Error {
    log::error!("{e}");
    s3_error!(InternalError, "internal error; see the server log")
}

/// `e` with HTTP status `status`.
pub(crate) fn with_status(mut e: S3Error, status: http::StatusCode) -> S3Error {
    e.set_status_code(status);
    e
}

/// S3's answer to a header asking for what is not implemented.
pub(crate) fn not_implemented_header() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NotImplemented,
        "A header you provided implies functionality that is not implemented.",
    )
}

/// S3's `PreconditionFailed`.
pub(crate) fn precondition_failed() -> S3Error {
    S3Error::with_message(
        S3ErrorCode::PreconditionFailed,
        "At least one of the pre-conditions you specified did not hold.",
    )
}

/// A write condition's outcome as S3 answers it.
pub(crate) fn write_outcome(o: WriteOutcome, bucket: &str, key: &str) -> S3Result<()> {
    match o {
        WriteOutcome::Proceed => Ok(()),
        WriteOutcome::PreconditionFailed => Err(precondition_failed()),
        WriteOutcome::NotImplemented => Err(not_implemented_header()),
        WriteOutcome::NoSuchKey => Err(to_s3_error(Error::NoSuchKey {
            bucket: bucket.to_string(),
            key: key.to_string(),
        })),
    }
}

/// A read condition's outcome as S3 answers it.
pub(crate) fn read_outcome(o: Outcome) -> S3Result<()> {
    match o {
        Outcome::Proceed => Ok(()),
        Outcome::PreconditionFailed => Err(precondition_failed()),
        Outcome::NotModified => Err(S3Error::with_message(
            S3ErrorCode::NotModified,
            "Not Modified",
        )),
    }
}

/// S3's `InvalidRequest` with message `m`.
pub(crate) fn invalid_request(m: impl Into<String>) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidRequest, m.into())
}

/// A body that failed because the watch of its aws-chunked framing
/// refused it (see [`crate::chunked`]) gets that refusal, not `e`. (A body
/// without the SHA-256 its unsigned request declared is answered by the
/// handler, for every operation: [`crate::payload`].)
pub(crate) fn chunk_refusal(ext: &http::Extensions, e: S3Error) -> S3Error {
    match ext
        .get::<crate::chunked::ChunkVerdict>()
        .and_then(|v| v.get())
    {
        Some(c) => {
            use crate::chunked::ChunkError as C;
            let code = match c {
                C::TooSmall => S3ErrorCode::Custom("InvalidChunkSizeError".into()),
                C::MalformedTrailer => S3ErrorCode::Custom("MalformedTrailerError".into()),
                C::Incomplete => S3ErrorCode::IncompleteBody,
            };
            let mut err = S3Error::with_message(code, c.to_string());
            err.set_status_code(http::StatusCode::BAD_REQUEST);
            err
        }
        None => e,
    }
}

/// S3's answer to a refusal of versioning or object lock.
fn version_error(v: &VersionError) -> S3Error {
    use http::StatusCode as H;
    let (code, status) = match v {
        VersionError::InvalidVersionId { version } => {
            let mut e = S3Error::with_message(S3ErrorCode::InvalidArgument, v.to_string());
            with_error_elements(
                &mut e,
                &[("ArgumentName", "versionId"), ("ArgumentValue", version)],
            );
            return e;
        }
        VersionError::NoSuchVersion { .. } => (S3ErrorCode::NoSuchVersion, H::NOT_FOUND),
        VersionError::DeleteMarker { version, by_id } => {
            let (code, status) = if *by_id {
                (S3ErrorCode::MethodNotAllowed, H::METHOD_NOT_ALLOWED)
            } else {
                (S3ErrorCode::NoSuchKey, H::NOT_FOUND)
            };
            let msg = if *by_id {
                v.to_string()
            } else {
                "The specified key does not exist.".to_string()
            };
            let mut e = S3Error::with_message(code, msg);
            e.set_status_code(status);
            let mut h = http::HeaderMap::new();
            h.insert(
                "x-amz-delete-marker",
                http::HeaderValue::from_static("true"),
            );
            if let Ok(v) = http::HeaderValue::from_str(version) {
                h.insert("x-amz-version-id", v);
            }
            e.set_headers(h);
            return e;
        }
        VersionError::ObjectLocked { .. } => (S3ErrorCode::AccessDenied, H::FORBIDDEN),
        VersionError::MissingLockConfiguration => (S3ErrorCode::InvalidRequest, H::BAD_REQUEST),
        VersionError::LockConfigurationNotFound => (
            S3ErrorCode::Custom("ObjectLockConfigurationNotFoundError".into()),
            H::NOT_FOUND,
        ),
        VersionError::NoObjectLock => (
            S3ErrorCode::Custom("NoSuchObjectLockConfiguration".into()),
            H::BAD_REQUEST,
        ),
        VersionError::LockNeedsVersioning => (S3ErrorCode::InvalidBucketState, H::CONFLICT),
        VersionError::BucketHasVersions { .. } => (S3ErrorCode::BucketNotEmpty, H::CONFLICT),
        VersionError::LockKeepsVersioning => (S3ErrorCode::InvalidBucketState, H::BAD_REQUEST),
    };
    let mut e = S3Error::with_message(code, v.to_string());
    e.set_status_code(status);
    e
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
