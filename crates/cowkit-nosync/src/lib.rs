//! Run programs without sync calls, safely, for every kind of binary.
//!
//! Two layers, both on by default:
//!
//! - **the preload shim** ([`shim`]): a small `no_std` cdylib put in
//!   `LD_PRELOAD`. In dynamically linked programs it turns `fsync`,
//!   `fdatasync`, `sync`, `syncfs`, `sync_file_range` and `msync(MS_SYNC)`
//!   into no-ops (keeping `EBADF` for bad descriptors), strips
//!   `O_SYNC`/`O_DSYNC` from the `open` family and `RWF_SYNC`/`RWF_DSYNC`
//!   from `pwritev2`, and counts what it suppressed;
//! - **the seccomp filter** ([`filter`]): inherited by every descendant,
//!   it answers the sync system calls with 0 before they run (`EBADF` for a
//!   negative descriptor), whatever the binary: static, Go, raw `syscall()`.
//!
//! The supervisor ([`run`]) is a child subreaper: it waits for every
//! descendant ([`tree`]; a second Ctrl-C stops waiting for what ignores
//! the first), then makes the skipped work durable with `syncfs` on the
//! filesystems that may have been written ([`mounts`], those mounted
//! during the run included) and reports a writeback error. [`preload`] manages `/etc/ld.so.preload` in a root and
//! [`kickstart`] prints an installer snippet that recreates the shim.
//! [`scoped`] is the same seccomp layer for the many commands of one
//! transaction (a package manager's scriptlets), set up once.
//! `docs/nosync.md` has the design and the limits.
//!
//! ```no_run
//! use cowkit_nosync::run::{run, FinalSync, RunOptions};
//!
//! let exe = std::env::current_exe()?; // answers `__nosync-exec`
//! let mut opts = RunOptions::new(exe, "dpkg".into());
//! opts.args = vec!["-i".into(), "pkg.deb".into()];
//! opts.final_sync = FinalSync::Auto;
//! let outcome = run(&opts)?;
//! for fs in &outcome.syncs {
//!     println!("{}: {:?}", fs.mount_point.display(), fs.elapsed);
//! }
//! std::process::exit(outcome.exit_code());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod error;
pub mod filter;
pub mod kickstart;
pub mod mounts;
pub mod notify;
pub mod preload;
pub mod run;
pub mod scoped;
pub mod shim;
pub mod stats;
pub mod tree;
pub mod written;

pub use error::{Error, Result};
