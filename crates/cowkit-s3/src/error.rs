//! Typed errors of the gateway, carrying the names and paths involved.

use std::path::PathBuf;

use s3s::{s3_error, S3Error, S3ErrorCode, S3Result};

use crate::conditions::{Outcome, WriteOutcome};
use crate::respond::with_error_elements;

/// Everything that can go wrong in the storage backend.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call on one file or directory failed, or moving data
    /// between files did (cowkit-fs; an `IoError` converts into this).
    #[error(transparent)]
    Fs(#[from] cowkit_fs::Error),
    /// A metadata record is unreadable.
    #[error("metadata record `{path}` is damaged: {why}")]
    Corrupt {
        /// The record.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// The bucket does not exist.
    #[error("bucket `{bucket}` does not exist")]
    NoSuchBucket {
        /// The bucket.
        bucket: String,
    },
    /// The bucket exists already.
    #[error("bucket `{bucket}` exists already")]
    BucketExists {
        /// The bucket.
        bucket: String,
    },
    /// The bucket exists already and belongs to another account.
    #[error("bucket `{bucket}` exists already and belongs to another account")]
    BucketTaken {
        /// The bucket.
        bucket: String,
    },
    /// The bucket still holds objects or uploads.
    #[error("bucket `{bucket}` is not empty")]
    BucketNotEmpty {
        /// The bucket.
        bucket: String,
    },
    /// The bucket name breaks the S3 naming rules or is reserved.
    #[error("`{bucket}` is not a valid bucket name: {why}")]
    InvalidBucketName {
        /// The name.
        bucket: String,
        /// Which rule.
        why: &'static str,
    },
    /// The key cannot be stored as a path inside the bucket. (The key is
    /// escaped: the message goes into an XML error document, where a NUL
    /// or another control character would make the document unreadable.)
    #[error("`{}` is not a key this gateway can store: {why}", key.escape_debug())]
    InvalidKey {
        /// The key.
        key: String,
        /// Why.
        why: &'static str,
    },
    /// The key is not a plain relative path (it starts with `/`, or has an
    /// empty, `.` or `..` component): S3 refuses the dot segments before
    /// looking at the request (400, no S3 error code), and this gateway,
    /// which stores a key as a path, refuses the rest the same way.
    #[error("`{}` is not a key this gateway can store: {why}", key.escape_debug())]
    KeyPath {
        /// The key.
        key: String,
        /// Why.
        why: &'static str,
    },
    /// The key's path collides with another key's (a file where a directory
    /// is needed or the reverse: keys `a` and `a/b`).
    #[error("key `{key}` collides with another key at `{path}` (a key cannot be both an object and a prefix of other keys followed by `/`)")]
    KeyConflict {
        /// The key.
        key: String,
        /// The path in the way.
        path: PathBuf,
    },
    /// The object does not exist.
    #[error("object `{key}` does not exist in bucket `{bucket}`")]
    NoSuchKey {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
    },
    /// The multipart upload does not exist (or belongs to another key).
    #[error("multipart upload `{upload_id}` does not exist")]
    NoSuchUpload {
        /// The upload id.
        upload_id: String,
    },
    /// A part named by a complete is missing or has another ETag.
    #[error("part {part} of upload `{upload_id}`: {why}")]
    InvalidPart {
        /// The upload id.
        upload_id: String,
        /// The part number.
        part: i32,
        /// What is wrong.
        why: String,
    },
    /// Part numbers of a complete are not strictly ascending.
    #[error("the parts of a complete must be listed in strictly ascending order (part {part} follows {after})")]
    InvalidPartOrder {
        /// The part out of order.
        part: i32,
        /// The part before it.
        after: i32,
    },
    /// A part other than the last is below the minimum part size.
    #[error("part {part} has {size} bytes; every part but the last needs at least {min}")]
    EntityTooSmall {
        /// The part number.
        part: i32,
        /// Its size.
        size: u64,
        /// The minimum.
        min: u64,
    },
    /// A request argument is out of range.
    #[error("{0}")]
    InvalidArgument(String),
    /// The requested byte range is outside the object.
    #[error("range `{range}` is outside the object's {size} bytes")]
    InvalidRange {
        /// The range asked for.
        range: String,
        /// The object's size.
        size: u64,
    },
    /// A request S3 refuses with `InvalidRequest`; the message is S3's.
    #[error("{0}")]
    InvalidRequest(String),
    /// The body did not match the checksum the request gave.
    #[error("The {algorithm} you specified did not match the calculated checksum.")]
    ChecksumMismatch {
        /// `CRC32`, ...
        algorithm: &'static str,
    },
    /// A complete named a part with a checksum of another algorithm than
    /// the upload's.
    #[error("The {} you specified for part {part} did not match what we received.", algorithm.name().to_ascii_lowercase())]
    PartChecksum {
        /// The algorithm given.
        algorithm: crate::checksum::Algorithm,
        /// The part.
        part: i32,
    },
    /// A directory object (a key ending in `/`) cannot hold bytes.
    #[error("Directory object contains data payload.")]
    DirectoryObjectContainsData,
    /// The request's XML is not what S3 expects.
    #[error("The XML you provided was not well-formed or did not validate against our published schema.")]
    MalformedXml,
    /// A tag set breaks S3's rules.
    #[error(transparent)]
    InvalidTag(#[from] crate::tagging::TagError),
    /// Versioning or object lock refused the request.
    #[error(transparent)]
    Version(#[from] crate::versions::VersionError),
    /// The account store cannot be used.
    #[error(transparent)]
    Accounts(#[from] crate::accounts::AccountsError),
    /// The body did not match its Content-MD5.
    #[error("the body's MD5 is {actual}, the request said {expected}")]
    BadDigest {
        /// From the request.
        expected: String,
        /// Computed.
        actual: String,
    },
}

impl From<cowkit_fs::IoError> for Error {
    fn from(e: cowkit_fs::IoError) -> Self {
        Error::Fs(e.into())
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub(crate) fn io(
    op: &'static str,
    path: impl Into<PathBuf>,
    e: impl Into<std::io::Error>,
) -> Error {
    Error::from(cowkit_fs::IoError::new(op, path, e))
}

// The S3 errors the gateway answers with: a store error mapped to the
// code and message S3 gives, and the gateway's own refusals.

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
        Error::InvalidKey { key, .. } if key.len() > crate::names::MAX_KEY_LEN => {
            (C::KeyTooLongError, None)
        }
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
        Error::Version(v) => return v.to_s3(),
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
    let given = crate::checksum::base64_lite::decode(expected)
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
pub(crate) fn tag_error(t: crate::tagging::TagError) -> S3Error {
    use crate::tagging::TagError as T;
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
