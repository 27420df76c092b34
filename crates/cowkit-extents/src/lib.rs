//! The extents file: a package transcoded once so that installing it is
//! mostly cloning blocks.
//!
//! An extents file starts with the RPM's lead, signature header and main
//! header, byte for byte (so `rpm -qp` still reads it), then holds every
//! distinct file content uncompressed — large ones aligned to the block
//! size so they can be cloned, small ones packed — then a table of extents
//! and a footer with a checksum. The layout is specified in
//! `docs/extents-format.md`.
//!
//! - [`transcode`]: [`transcode::begin`] reads and verifies the headers,
//!   [`transcode::Begun::write`] streams the payload into an extents file,
//!   checking every file's digest and the payload digest.
//! - [`open`]: [`open::ExtentsFile::open`] reads the footer and table and
//!   checks them against the (verified) header before anything is trusted.
//! - [`confined`]: the transcoder run in a seccomp-confined worker process
//!   (the protocol of [`cowkit_confine::worker`]): [`confined::transcode`]
//!   is the parent, which commits the output by rename only on success;
//!   [`confined::worker`] is what the worker process runs.
//!
//! ```no_run
//! use std::fs::File;
//! use cowkit_extents::transcode::{begin, NoProgress, Options};
//!
//! let input = File::open("pkg.rpm")?;
//! let begun = begin(input)?;            // headers verified, no payload read
//! let out = File::create("pkg.rpme")?;  // (use a temporary name in real code)
//! let summary = begun.write(out, &Options::default(), &NoProgress)?;
//! println!("{} extents", summary.extents);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod cache;
pub mod confined;
pub mod format;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod open;
pub mod transcode;

/// What can go wrong with an extents file.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The package failed a check, or could not be read.
    #[error(transparent)]
    Package(#[from] cowkit_archive::rpm::Error),
    /// Reading failed.
    #[error("cannot read `{path}`")]
    Read {
        /// What was being read.
        path: cowkit_archive::name::Name,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Writing the output failed.
    #[error("cannot write the extents file at byte {offset}")]
    Write {
        /// Where.
        offset: u64,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The file has no extents footer.
    #[error("not an extents file (no cowkit footer at the end)")]
    NotExtents,
    /// The file is a newer format.
    #[error("extents format version {0} is not supported (this cowkit reads version {v})", v = format::VERSION)]
    UnsupportedVersion(u32),
    /// The file is damaged or inconsistent.
    #[error("the extents file is damaged: {0}")]
    Corrupt(String),
    /// The writer thread stopped (its own error is reported instead).
    #[error("the output writer stopped")]
    WriterStopped,
    /// An option is out of range.
    #[error("{0}")]
    BadOption(String),
    /// The output is open for appending: every write would land at its
    /// end whatever the file position says.
    #[error(
        "the output is open for appending (`>>`): an extents file must start at its first byte"
    )]
    OutputAppends,
    /// The output is a regular file that already holds bytes past the
    /// position writing would start at (stdout opened with the shell's
    /// `1<>`, which does not empty the file): the extents file would be
    /// written over part of them and the rest left after it.
    #[error("the output already holds {size} bytes and writing would start at byte {offset}: the extents file would be written over them and the old tail kept")]
    OutputNotEmpty {
        /// Where writing would start.
        offset: u64,
        /// The file's size.
        size: u64,
    },
    /// The header declares more content than the transcoder writes.
    #[error("the header declares {declared} bytes of output, over the limit of {limit}")]
    TooLarge {
        /// The output size the header implies.
        declared: u64,
        /// The limit.
        limit: u64,
    },
}
