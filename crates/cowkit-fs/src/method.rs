//! The ways the copy chain moves file data ([`Method`]), why one was not
//! used ([`Reason`]), and errno names for messages: below both the chain
//! (`copy`) and the errors that name them (`error`).

use std::fmt;

use rustix::io::Errno;
use serde::Serialize;

/// A way of moving file data, in the order the chain tries them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Share blocks: `FICLONE` / `FICLONERANGE`.
    Clone,
    /// `copy_file_range(2)`: in-kernel copy, which XFS and Btrfs turn into a
    /// clone when aligned and NFS into a server-side copy.
    CopyFileRange,
    /// `pread`/`pwrite` through a user-space buffer.
    ReadWrite,
}

impl Method {
    /// All methods, in chain order.
    pub const ALL: [Method; 3] = [Method::Clone, Method::CopyFileRange, Method::ReadWrite];

    /// The method tried after this one.
    pub fn next(self) -> Option<Method> {
        match self {
            Method::Clone => Some(Method::CopyFileRange),
            Method::CopyFileRange => Some(Method::ReadWrite),
            Method::ReadWrite => None,
        }
    }

    /// The name used in messages and `--json` output.
    pub fn name(self) -> &'static str {
        match self {
            Method::Clone => "clone",
            Method::CopyFileRange => "copy_file_range",
            Method::ReadWrite => "read/write",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a method was not used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    /// The kernel answered with this errno.
    Errno(Errno),
    /// `copy_file_range` returned 0 before the end of the source's data.
    ShortCopy,
    /// Source and destination offsets differ modulo the block size, so no
    /// block can be shared; the range was copied through user space.
    Misaligned {
        /// The filesystem block size.
        block_size: u64,
    },
}

impl Reason {
    /// The errno, if the kernel gave one.
    pub fn errno(self) -> Option<Errno> {
        match self {
            Reason::Errno(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::Errno(e) => {
                let text = std::io::Error::from(*e).to_string();
                let text = text.split(" (os error").next().unwrap_or_default();
                write!(f, "{} ({text})", errno_name(*e))
            }
            Reason::ShortCopy => f.write_str("copy_file_range returned 0 before the end of data"),
            Reason::Misaligned { block_size } => write!(
                f,
                "source and destination offsets are not aligned alike to the {block_size}-byte block"
            ),
        }
    }
}

impl Serialize for Reason {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Reason::Errno(e) => s.serialize_str(errno_name(*e)),
            Reason::ShortCopy => s.serialize_str("short_copy"),
            Reason::Misaligned { .. } => s.serialize_str("misaligned"),
        }
    }
}

/// The symbolic name of the errnos that matter to cowkit (`"EXDEV"`), or
/// `"errno N"`.
pub fn errno_name(e: Errno) -> &'static str {
    const NAMES: &[(Errno, &str)] = &[
        (Errno::OPNOTSUPP, "EOPNOTSUPP"),
        (Errno::XDEV, "EXDEV"),
        (Errno::INVAL, "EINVAL"),
        (Errno::NOTTY, "ENOTTY"),
        (Errno::NOSYS, "ENOSYS"),
        (Errno::BADF, "EBADF"),
        (Errno::PERM, "EPERM"),
        (Errno::ACCESS, "EACCES"),
        (Errno::ROFS, "EROFS"),
        (Errno::NOSPC, "ENOSPC"),
        (Errno::DQUOT, "EDQUOT"),
        (Errno::IO, "EIO"),
        (Errno::NOENT, "ENOENT"),
        (Errno::ISDIR, "EISDIR"),
        (Errno::TXTBSY, "ETXTBSY"),
        (Errno::FBIG, "EFBIG"),
        (Errno::NODATA, "ENODATA"),
        (Errno::RANGE, "ERANGE"),
    ];
    NAMES
        .iter()
        .find(|(n, _)| *n == e)
        .map_or("errno", |(_, s)| s)
}
