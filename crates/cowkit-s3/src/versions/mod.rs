//! Bucket versioning and object lock: their states, rules and version
//! ids. What they do to the files is the store's
//! ([`crate::store::versions`]).
//!
//! The current version of a key stays the plain file `DIR/<bucket>/<key>`
//! with its record, so a POSIX reader still sees the bucket as a tree. The
//! others live in the gateway's private area, one directory per key:
//!
//! ```text
//! DIR/.cowkit-s3/meta/<bucket>/versioning.json   {"status":"Enabled"|"Suspended"}
//! DIR/.cowkit-s3/meta/<bucket>/object-lock.json  object lock: enabled, default retention
//! DIR/.cowkit-s3/versions/<bucket>/<h>/<id>      an older version's bytes (h = SHA-256 of the key)
//! DIR/.cowkit-s3/versions/<bucket>/<h>/<id>.json its record (a delete marker has only this)
//! ```
//!
//! A write over a key of a versioned bucket first gives the current file a
//! second name in the key's directory (`linkat`: the same inode, no byte
//! copied or cloned), then renames the new file over the key as every
//! write does; a delete renames the current file there. Version ids
//! ([`id`]) are checked before they name a file. Every change of a key's
//! versions holds the key's fleet lock, the one every commit of the key
//! takes, and every request reads the records anew: gateways on one root
//! see the same versions, retention and holds.
//!
//! The invariant: the key's file exists exactly when the newest version is
//! not a delete marker. Deleting the current version (by id) brings the
//! newest older one back to the key by rename.

pub mod id;
pub mod listing;
pub mod lock;

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::{Result, VersionError};
use crate::store::ObjectMeta;

pub use lock::{LockConfig, Retention};

/// A bucket's versioning state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Status {
    /// Never configured: no versions are kept and none are named.
    #[default]
    Off,
    /// Every write makes a new version.
    Enabled,
    /// Writes make the `null` version; older versions are kept.
    Suspended,
}

impl Status {
    /// S3's name (`None` for a bucket never configured).
    pub fn name(self) -> Option<&'static str> {
        match self {
            Status::Off => None,
            Status::Enabled => Some("Enabled"),
            Status::Suspended => Some("Suspended"),
        }
    }
}

/// Now, in seconds since the epoch.
pub fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Refuse `v` unless it is a version id ([`id::check`]).
pub fn check_id(v: &str) -> Result<()> {
    if id::check(v) {
        Ok(())
    } else {
        Err(VersionError::InvalidVersionId {
            version: v.to_string(),
        }
        .into())
    }
}

/// A record's version id as S3 shows it (`null` for none).
pub fn version_of(m: &ObjectMeta) -> &str {
    m.version_id.as_deref().unwrap_or(id::NULL)
}

// ---- bucket state -------------------------------------------------------

/// A bucket's versioning status and object lock.
#[derive(Clone, Debug, Default)]
pub struct BucketState {
    /// Versioning.
    pub status: Status,
    /// Object lock, when enabled.
    pub lock: Option<LockConfig>,
}
