//! Kernel primitives for putting file data where it must go without copying
//! the bytes, and the fallback when the kernel says no.
//!
//! - [`copy`]: the clone → `copy_file_range` → read/write state machine
//!   ([`Copier`]), which reports the method used and why it fell back.
//! - [`probe`]: filesystem type, block size, and whether reflinks and
//!   `copy_file_range` clones work between two places.
//! - [`fiemap`]: a file's extents, to see which blocks are shared.
//! - [`dir`]: everything relative to a directory descriptor: open/create
//!   directories, `statx`, listing, the atomic new file ([`dir::NewFile`]:
//!   `O_TMPFILE` + `linkat`), rename into place, temporary names, umask.
//! - [`meta`]: the one metadata apply (owner → xattrs → mode → times, on a
//!   descriptor or a name) and the one extended-attribute reader.
//! - [`mountinfo`]: the one `/proc/self/mountinfo` parser.
//! - [`error`]: the one I/O error shape ([`IoError`]) other crates wrap,
//!   and error-chain helpers ([`error::chain`], [`error::errno_of`]).
//! - [`align`]: block alignment helpers.
//! - [`root`]: paths resolved inside a root directory, never outside it.
//! - [`caps`]: file capabilities, libcap text ↔ `security.capability`.
//! - [`send`]: `sendfile` from a file into a socket.
//! - [`trust`]: who else can change a file, and a directory opened one
//!   component at a time, each one passed checked.
//! - [`verity`]: fs-verity, enabled on a file and its digest read.
//! - [`lock`]: byte-range locks owned by an open file description.
//! - [`workdir`]: working directories held under a `flock`, removed on
//!   drop, on a signal, or by the next sweep after a kill.
//!
//! ```no_run
//! use std::fs::File;
//! use std::path::Path;
//! use cowkit_fs::{Chain, Copier, Handle};
//!
//! let (sp, dp) = (Path::new("a.img"), Path::new("b.img"));
//! let src = File::open(sp)?;
//! let dst = File::create(dp)?;
//! let mut copier = Copier::new(Chain::AUTO);
//! let done = copier.copy_file(Handle::new(&src, sp), Handle::new(&dst, dp))?;
//! println!("{} bytes by {}", done.bytes.total(), done.method);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod align;
pub mod caps;
pub mod copy;
pub mod dir;
pub mod error;
pub mod fiemap;
pub mod meta;
pub mod method;
pub mod mountinfo;
pub mod probe;
pub mod root;
pub mod send;
mod sys;
pub mod trust;
pub mod workdir;

pub use sys::{lock, verity};

pub use copy::{Bytes, Chain, Copied, Copier, Fallback, Handle, Method, Reason, Tally};
pub use error::{Error, IoError, Result};
