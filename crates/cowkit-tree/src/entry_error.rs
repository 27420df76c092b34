//! Errors of single entries, built from the cowkit-fs error shape.

use std::path::Path;

use cowkit_fs::IoError;
use rustix::io::Errno;

use crate::EntryError;

/// An [`EntryError`] from what was being done and the kernel's answer.
pub fn entry_error(path: &Path, op: &'static str, e: Errno) -> EntryError {
    entry_error_of(path, &IoError::new(op, path, e))
}

/// An [`EntryError`] from a failed system call on its path.
pub fn entry_error_io(e: &IoError) -> EntryError {
    entry_error_of(&e.path, e)
}

/// An [`EntryError`] from a cowkit-fs error.
pub fn entry_error_fs(path: &Path, e: &cowkit_fs::Error) -> EntryError {
    entry_error_of(path, e)
}

fn entry_error_of(path: &Path, e: &(dyn std::error::Error + 'static)) -> EntryError {
    EntryError {
        path: path.to_path_buf(),
        error: cowkit_fs::error::chain(e),
        errno: cowkit_fs::error::errno_of(e)
            .map(cowkit_fs::copy::errno_name)
            .filter(|n| *n != "errno"),
    }
}

/// Errors after which going on is pointless: the destination is full or
/// read-only.
pub fn is_fatal(e: Option<Errno>) -> bool {
    matches!(e, Some(Errno::NOSPC | Errno::DQUOT | Errno::ROFS))
}
