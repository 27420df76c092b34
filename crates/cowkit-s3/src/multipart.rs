//! Multipart uploads and the zero-copy complete: the records of an
//! upload, its parts and its complete, and the plan of a complete. The
//! store does them (`store::uploads`, the complete in
//! `store::uploads::complete`).
//!
//! ```text
//! DIR/.cowkit-s3/uploads/<id>/upload.json     bucket, key, content type, metadata, start, initiator
//! DIR/.cowkit-s3/uploads/<id>/p00001          part 1's bytes
//! DIR/.cowkit-s3/uploads/<id>/p00001.json     part 1's record: number, size, MD5, inode
//! DIR/.cowkit-s3/uploads/<id>/completed.json  after a complete: its answer, for retries
//! ```
//!
//! One small file per part, never an xattr: 10,000 parts are 10,000 small
//! records, whatever the filesystem's xattr limit.
//!
//! A complete is validated (strictly ascending part numbers, every part
//! present with the ETag given, every part but the last at least
//! `min_part_size`), then assembled into an unnamed file on the same
//! filesystem: a part that lands at a block-aligned offset is cloned
//! (`FICLONERANGE`, through the cowkit-fs chain, which falls back to
//! `copy_file_range` and read/write where cloning is refused); a part that
//! lands at an unaligned offset (a previous part's size was not a multiple
//! of the block size) cannot share blocks and goes through
//! `copy_file_range`. The object is then committed like a PutObject, the
//! answer recorded in `completed.json` and the part files removed.
//!
//! Every change to an upload (a part commit, the whole of a complete, an
//! abort) holds the upload's lock, which other gateways on the root see
//! (see `fleet`), and re-reads the upload's records from disk once it has
//! it. An upload's directory appears (made in `tmp/`, then renamed) and
//! disappears (renamed into `tmp/`, then emptied) in one rename each.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use cowkit_fs::Bytes;
use md5::Digest;
use serde::{Deserialize, Serialize};

use crate::checksum::{Algorithm, Checksum, Type};

/// The most parts an upload may have.
pub const MAX_PARTS: i32 = 10_000;

/// What is kept about an upload in progress.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UploadRecord {
    /// Target bucket.
    pub bucket: String,
    /// Target key.
    pub key: String,
    /// `Content-Type` for the object.
    pub content_type: Option<String>,
    /// User metadata for the object.
    pub metadata: BTreeMap<String, String>,
    /// Start, seconds since the epoch.
    pub initiated: u64,
    /// Nanoseconds of the start (orders uploads started in one second).
    #[serde(default)]
    pub initiated_nanos: u32,
    /// The checksum algorithm and type asked for at the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<(Algorithm, Type)>,
    /// Response headers for the object (see `ObjectMeta::headers`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    /// Tags for the object (`x-amz-tagging`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<crate::tagging::Tag>,
    /// Object lock retention for the object (`x-amz-object-lock-*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<crate::versions::Retention>,
    /// Object lock legal hold for the object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal_hold: Option<bool>,
    /// The access key that started the upload (S3's initiator, who may
    /// list its parts and abort it); `None` for uploads recorded without
    /// one, which only the bucket's owner, an admin or a policy may.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiator: Option<String>,
}

/// What a new upload's object will carry besides its bytes.
#[derive(Clone, Debug, Default)]
pub struct NewUpload {
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// User metadata, names lowercase.
    pub metadata: BTreeMap<String, String>,
    /// The checksum algorithm and type of the parts and the object.
    pub checksum: Option<(Algorithm, Type)>,
    /// Stored response headers (see `ObjectMeta::headers`).
    pub headers: BTreeMap<String, String>,
    /// Tags.
    pub tags: Vec<crate::tagging::Tag>,
    /// Object lock retention.
    pub retention: Option<crate::versions::Retention>,
    /// Object lock legal hold.
    pub legal_hold: Option<bool>,
    /// The access key that starts the upload.
    pub initiator: Option<String>,
}

/// What a new part's bytes are checked by, as its record keeps them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartSums {
    /// MD5 of the part, hex (the part's ETag).
    pub md5: String,
    /// The part's additional checksum (of its bytes).
    pub checksum: Option<Checksum>,
    /// Its CRC64NVME when `checksum` is another algorithm and the upload
    /// has none.
    pub crc64nvme: Option<String>,
}

impl PartSums {
    /// A part checked by its MD5 alone.
    pub fn md5(md5: String) -> PartSums {
        PartSums {
            md5,
            ..PartSums::default()
        }
    }
}

/// What is kept about one part.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct PartRecord {
    /// Part number, 1 to 10,000.
    pub number: i32,
    /// Size in bytes.
    pub size: u64,
    /// MD5 of the part, hex (the part's ETag).
    pub md5: String,
    /// Inode of the part file.
    pub ino: u64,
    /// When it was uploaded, seconds since the epoch.
    pub modified: u64,
    /// The part's additional checksum (of its bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<Checksum>,
    /// Its CRC64NVME when `checksum` is another algorithm and the upload
    /// has none (the object's default checksum is made from these).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc64nvme: Option<String>,
}

/// The answer of a complete, kept for retries.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct CompletedRecord {
    /// Bucket.
    pub bucket: String,
    /// Key.
    pub key: String,
    /// The multipart ETag, `md5(md5s)-N`, without quotes.
    pub etag: String,
    /// Object size.
    pub size: u64,
    /// The part list the complete was asked with.
    pub parts: Vec<(i32, String)>,
    /// The object's additional checksum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum: Option<Checksum>,
    /// The version the complete made, in a versioned bucket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
}

/// What a complete request says about checksums and size, checked against
/// the upload.
#[derive(Clone, Debug, Default)]
pub struct CompleteChecks {
    /// Per requested part (same order): the checksum its element gave.
    pub parts: Vec<Option<(Algorithm, String)>>,
    /// `x-amz-checksum-*` of the whole object.
    pub object: Option<(Algorithm, String)>,
    /// `x-amz-checksum-type`.
    pub kind: Option<Type>,
    /// `x-amz-mp-object-size`.
    pub size: Option<i64>,
}

/// An upload as listed.
#[derive(Clone, Debug)]
pub struct UploadInfo {
    /// Upload id.
    pub id: String,
    /// Target key.
    pub key: String,
    /// Start.
    pub initiated: SystemTime,
    /// Completed already (kept only for retries).
    pub completed: bool,
    /// Checksum algorithm and type of the upload.
    pub checksum: Option<(Algorithm, Type)>,
}

/// A validated complete, ready to assemble.
#[derive(Debug)]
pub struct Plan {
    pub(crate) _lock: crate::fleet::Held,
    pub(crate) id: String,
    pub(crate) dir: OwnedFd,
    pub(crate) dir_path: PathBuf,
    pub(crate) upload: UploadRecord,
    pub(crate) parts: Vec<PartRecord>,
    pub(crate) requested: Vec<(i32, String)>,
    pub(crate) etag: String,
    pub(crate) checksum: Option<Checksum>,
    pub(crate) bypass_governance: bool,
}

impl Plan {
    /// Let the complete replace an object under GOVERNANCE retention (in a
    /// bucket locked without versioning), when the caller may
    /// ([`crate::authz::may_bypass_governance`]).
    pub fn bypass_governance(&mut self, bypass: bool) {
        self.bypass_governance = bypass;
    }

    /// Number of parts.
    pub fn parts(&self) -> usize {
        self.parts.len()
    }

    /// Size of the object to be.
    pub fn size(&self) -> u64 {
        self.parts.iter().map(|p| p.size).sum()
    }
}

/// What a validated complete needs.
#[derive(Debug)]
pub enum Prepared {
    /// The same complete had already succeeded: its answer.
    Done(CompletedRecord),
    /// The parts to assemble (boxed: the plan is large beside a record).
    Assemble(Box<Plan>),
}

/// The outcome of an assembled complete.
#[derive(Clone, Debug)]
pub struct Completed {
    /// The answer.
    pub record: CompletedRecord,
    /// Bytes per method: `cloned` shared blocks, `copied` went through
    /// `copy_file_range`, `written` through a buffer.
    pub bytes: Bytes,
    /// Parts that were at an unaligned offset in the object.
    pub unaligned_parts: usize,
    /// Time spent assembling and committing.
    pub elapsed: Duration,
}

/// The part files of a committed complete, still to be removed (after
/// the answer: [`crate::store::Store::complete_commit`]). Dropped unremoved, they stay
/// for a retried complete or the fleet's sweep to remove.
#[derive(Debug)]
pub struct PartFiles {
    pub(crate) dir: OwnedFd,
    pub(crate) path: std::path::PathBuf,
}

pub(crate) fn part_name(n: i32) -> String {
    format!("p{n:05}")
}

pub(crate) fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

/// The multipart ETag of parts with these MD5s (hex).
pub fn multipart_etag<'a>(md5s: impl IntoIterator<Item = &'a str>) -> String {
    let mut h = md5::Md5::new();
    let mut n = 0;
    for m in md5s {
        h.update(hex::decode(m).unwrap_or_default());
        n += 1;
    }
    format!("{}-{n}", hex::encode(h.finalize()))
}

/// MD5 of a whole reader, hex.
pub fn md5_hex(mut r: impl Read) -> std::io::Result<String> {
    let mut h = md5::Md5::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            return Ok(hex::encode(h.finalize()));
        }
        h.update(&buf[..n]);
    }
}
