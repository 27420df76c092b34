//! The process-level system calls cowkit needs and rustix does not wrap,
//! one module per domain, each with its own `unsafe` and a `// SAFETY:`
//! comment on every block (as rustix does). The filesystem calls rustix
//! does not wrap are `cowkit-fs`'s; these are about processes: what they
//! may call, what they are told, what they inherit.
//!
//! - [`seccomp`]: installing a filter without `no_new_privs`, or with a
//!   user-notification listener (also in a child between `fork` and
//!   `exec`: [`seccomp::on_exec`]), and answering its notifications;
//! - [`fanotify`]: a notification group reporting file ids, filesystem
//!   marks;
//! - [`fd`]: a descriptor inherited from the parent for one purpose;
//! - [`process`]: the signal mask a child starts its program with, and
//!   whether a signal is ignored.
//!
//! ```no_run
//! // Watch for writes anywhere on the filesystem holding `/var`.
//! let group = cowkit_sys::fanotify::init_fid()?;
//! cowkit_sys::fanotify::mark_filesystem(&group, true, libc::FAN_MODIFY, c"/var")?;
//! # Ok::<(), std::io::Error>(())
//! ```
#![deny(missing_docs)]

pub mod fanotify;
pub mod fd;
pub mod process;
pub mod seccomp;

/// The `errno` of the call that just failed.
fn last_errno() -> rustix::io::Errno {
    rustix::io::Errno::from_raw_os_error(
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0),
    )
}
