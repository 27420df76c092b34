//! Typed errors of the gateway, carrying the names and paths involved:
//! what went wrong, not how S3 answers it (that is [`crate::answer`]).

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
    #[error("The {} you specified for part {part} did not match what we received.", algorithm.to_ascii_lowercase())]
    PartChecksum {
        /// The name of the algorithm given (`CRC32`, ...).
        algorithm: &'static str,
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
    InvalidTag(#[from] TagError),
    /// Versioning or object lock refused the request.
    #[error(transparent)]
    Version(#[from] VersionError),
    /// The account store cannot be used.
    #[error(transparent)]
    Accounts(#[from] AccountsError),
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

/// Why a tag set is refused; each maps to one S3 error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TagError {
    /// The `x-amz-tagging` header is not URL-encoded `key=value` pairs
    /// with distinct keys (S3: `InvalidArgument`).
    #[error("The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.")]
    Encoding,
    /// A key is empty, too long or holds a character S3 refuses
    /// (`InvalidTag`).
    #[error("The TagKey you have provided is invalid")]
    Key,
    /// A value is too long or holds a character S3 refuses (`InvalidTag`).
    #[error("The TagValue you have provided is invalid")]
    Value,
    /// Two tags of a `<Tagging>` document have the same key (`InvalidTag`).
    #[error("Cannot provide multiple Tags with the same key")]
    Duplicate,
    /// More than [`crate::tagging::MAX_OBJECT_TAGS`] tags on an object (`BadRequest`).
    #[error("Object tags cannot be greater than 10")]
    TooMany,
    /// More than [`crate::tagging::MAX_BUCKET_TAGS`] tags on a bucket (`BadRequest`).
    #[error("Bucket tag count cannot be greater than 50")]
    TooManyOnBucket,
}

/// The S3 errors of versioning and object lock.
#[derive(Debug, thiserror::Error)]
pub enum VersionError {
    /// Not a version id this gateway makes (or `null`).
    #[error("Invalid version id specified")]
    InvalidVersionId {
        /// What the request gave.
        version: String,
    },
    /// No such version of the key.
    #[error("The specified version does not exist.")]
    NoSuchVersion {
        /// The key.
        key: String,
        /// The version.
        version: String,
    },
    /// The version read is a delete marker (`by_id`: named by its id,
    /// 405; else the key's current version is one, 404).
    #[error("The specified method is not allowed against this resource.")]
    DeleteMarker {
        /// The marker's version id.
        version: String,
        /// Named by its id.
        by_id: bool,
    },
    /// Retention or a legal hold protects the version.
    #[error("Access Denied because object protected by object lock.")]
    ObjectLocked {
        /// The key.
        key: String,
    },
    /// Object lock headers or calls on a bucket without object lock.
    #[error("Bucket is missing Object Lock Configuration")]
    MissingLockConfiguration,
    /// GetObjectLockConfiguration of a bucket without one.
    #[error("Object Lock configuration does not exist for this bucket.")]
    LockConfigurationNotFound,
    /// A version without retention (or a legal hold) was asked for it.
    #[error("The specified object does not have a ObjectLock configuration.")]
    NoObjectLock,
    /// Object lock on a bucket whose versioning is not enabled.
    #[error("Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration")]
    LockNeedsVersioning,
    /// DeleteBucket of a bucket that holds only older versions or delete
    /// markers.
    #[error(
        "The bucket you tried to delete is not empty. You must delete all versions in the bucket."
    )]
    BucketHasVersions {
        /// The bucket.
        bucket: String,
    },
    /// Suspending versioning of a bucket with object lock.
    #[error("An Object Lock configuration is present on this bucket, so the versioning state cannot be changed.")]
    LockKeepsVersioning,
}

/// What can go wrong with the account store ([`crate::accounts`]).
#[derive(Debug, thiserror::Error)]
pub enum AccountsError {
    /// A system call failed.
    #[error(transparent)]
    Fs(#[from] cowkit_fs::Error),
    /// The file or its directory can be changed by someone else.
    #[error("`{}` can be changed by someone other than this server's user and root ({why}): whoever can write it can make themselves an admin", path.display())]
    Untrusted {
        /// The file or directory.
        path: PathBuf,
        /// Who else can change it.
        why: String,
    },
    /// The file is larger than the store reads
    /// ([`crate::accounts::MAX_FILE`]).
    #[error("`{}` holds more than {max} bytes", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The largest file read.
        max: u64,
    },
    /// The file cannot be read as an account list.
    #[error("`{}` is not a valid account list: {why}", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        why: String,
    },
    /// An account given to the store breaks a rule.
    #[error("{0}")]
    Invalid(String),
    /// An account with this access key exists already.
    #[error("an account with access key `{access}` exists already")]
    Exists {
        /// The access key.
        access: String,
    },
    /// No account has this access key.
    #[error("no account has access key `{access}`")]
    NotFound {
        /// The access key.
        access: String,
    },
}

impl From<cowkit_fs::IoError> for AccountsError {
    fn from(e: cowkit_fs::IoError) -> Self {
        AccountsError::Fs(e.into())
    }
}
