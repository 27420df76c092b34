//! Streaming readers of package archives.
//!
//! - [`cpio`]: the cpio `newc` format and RPM's stripped `07070X` variant,
//!   read from any `Read` with bounded memory.
//! - [`rpm`]: RPM headers read and verified before any payload byte, and
//!   the payload decompressed while its digest is checked.
#![deny(missing_docs)]

pub mod cpio;
pub mod rpm;
