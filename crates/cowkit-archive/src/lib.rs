//! Streaming readers of package archives.
//!
//! - [`cpio`]: the cpio `newc` format and RPM's stripped `07070X` variant,
//!   read from any `Read` with bounded memory.
//! - [`rpm`]: RPM headers read and verified before any payload byte, and
//!   the payload decompressed while its digest is checked.
//! - [`files`]: the header's file list (the trusted description of every file).
//! - [`name`]: file names as bytes, shown escaped (`\xNN`).
//! - [`payload`]: the payload as a stream of files verified against the header.
#![deny(missing_docs)]

pub mod cpio;
pub mod digest;
pub mod files;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod name;
pub mod payload;
#[cfg(feature = "pgp")]
pub mod pgp;
pub mod rpm;
