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
pub mod mountinfo;
pub mod probe;
pub mod root;
pub mod send;
mod sys;
pub mod trust;
pub mod workdir;

/// fs-verity: enable it on a file, read a file's digest.
pub mod verity {
    pub use crate::sys::{
        enable_verity as enable, measure_verity as measure, FS_VERITY_HASH_ALG_SHA256,
    };
}

/// fanotify: a notification group reporting file ids, filesystem marks.
pub mod fanotify {
    pub use crate::sys::{
        fanotify_init_fid as init_fid, fanotify_mark_filesystem as mark_filesystem,
    };
}

/// Seccomp for `cowkit nosync`: installing a filter without `no_new_privs`,
/// or with a user-notification listener (also in a child between `fork`
/// and `exec`: `seccomp_on_exec`), and answering its notifications
/// (system calls rustix does not wrap).
pub mod seccomp {
    pub use crate::sys::{
        seccomp_filter_with_listener, seccomp_notif_id_valid, seccomp_notif_recv,
        seccomp_notif_send, seccomp_on_exec, seccomp_set_mode_filter,
        syncfs_answers_a_bad_descriptor, take_inherited_fd, BpfInsn, ExecFilter, SeccompNotif,
    };
}

/// Byte-range locks owned by an open file description (OFD locks): they
/// exclude threads of one process as well as other processes and hosts.
pub mod lock {
    pub use crate::sys::ofd_lock_write as write;
}

/// Reaping a child with its resource usage (`wait4`), for tests that bound
/// the memory of what they run; a child's starting signal mask; whether a
/// signal is ignored.
pub mod process {
    pub use crate::sys::{block_signals_on_exec, signal_ignored, wait4_nohang, Reaped};
}

pub use copy::{Bytes, Chain, Copied, Copier, Fallback, Handle, Method, Reason, Tally};
pub use error::{Error, IoError, Result};

/// The bytes of the hex string `s` (either case), or `None` if it is not
/// hex.
pub fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Lower-case hex of `b` (digests in names, messages and records).
pub fn hex(b: &[u8]) -> String {
    use std::fmt::Write;
    b.iter()
        .fold(String::with_capacity(b.len() * 2), |mut s, x| {
            let _ = write!(s, "{x:02x}");
            s
        })
}
