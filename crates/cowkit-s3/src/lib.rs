//! An S3 gateway over a directory, with multipart uploads completed by
//! cloning blocks instead of writing the object a second time.
//!
//! - [`store`]: buckets are directories, objects plain files
//!   (`DIR/<bucket>/<key>`, readable by any tool), records of ETag, content
//!   type and user metadata in `DIR/.cowkit-s3/`; every write lands by
//!   rename, atomically.
//! - [`multipart`]: parts are files; a complete validates the part list and
//!   assembles the object by `FICLONERANGE` where a part starts at a
//!   block-aligned offset, `copy_file_range` elsewhere (the cowkit-fs
//!   chain), and is idempotent under retries and races.
//! - [`tagging`]: S3's rules for object tags, kept in the object's record.
//! - [`authz`]: who may do what, decided once per request from the
//!   bucket's [`acl`] (owner, grants, object ownership) and [`policy`].
//! - [`versions`]: bucket versioning (older versions kept by a second name
//!   of the same inode) and object lock (retention, legal hold).
//! - [`accounts`]: accounts with roles besides the server's key pair;
//!   [`admin`]: VersityGW's admin API over them.
//! - [`gateway`]: the [`s3s::S3`] implementation; [`server`]: hyper, the
//!   access log, graceful shutdown.
//!
//! ```no_run
//! use cowkit_s3::{store::{Options, Store}, multipart::{PartSums, Prepared}};
//! use std::io::Write;
//!
//! let store = Store::open("/srv/s3".as_ref(), Options::default())?;
//! store.create_bucket("photos")?;
//! let id = store.create_upload("photos", "big.raw", None, Default::default())?;
//! let mut f = store.new_part_file(&id, "photos", "big.raw", 1)?;
//! f.write_all(b"hello")?;
//! let md5 = PartSums::md5("5d41402abc4b2a76b9719d911017c592".into());
//! let part = store.commit_part(&id, "photos", "big.raw", 1, f, md5)?;
//! if let Prepared::Assemble(plan) = store.complete_prepare(&id, "photos", "big.raw", vec![(1, part.md5)])? {
//!     let done = store.complete_assemble(plan)?;
//!     println!("{} cloned, {} copied", done.bytes.cloned, done.bytes.copied);
//! }
//! # Ok::<(), cowkit_s3::Error>(())
//! ```
#![deny(missing_docs)]

pub mod accounts;
pub mod acl;
pub mod admin;
pub mod answer;
pub mod authz;
pub mod body;
pub mod checksum;
pub mod chunked;
mod civil;
pub mod conditions;
pub mod config;
pub mod config_doc;
pub mod cors;
pub mod error;
pub mod fault;
pub mod fleet;
pub mod form;
mod fsutil;
#[doc(hidden)]
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod gateway;
pub mod handler;
pub mod inspect;
pub mod limits;
pub mod list;
pub mod multipart;
pub mod names;
pub mod pages;
pub mod payload;
pub mod policy;
pub mod precheck;
pub mod refusal;
pub mod request;
pub mod respond;
pub mod sendfile;
pub mod server;
mod stale;
pub mod store;
pub mod tagging;
pub mod text;
pub mod unchunk;
pub mod versions;
pub mod website;

pub use error::{Error, Result};
pub use fsutil::NewFile;
pub use gateway::S3Gateway;

/// `e` and its causes, joined with `: `.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    cowkit_fs::error::chain(e).join(": ")
}
