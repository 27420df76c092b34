//! Typed errors of the gateway, carrying the names and paths involved.

use std::path::PathBuf;

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
