//! The system calls rustix does not wrap, one module per domain, each
//! with its own `unsafe` and a `// SAFETY:` comment on every block (as
//! rustix does); everything else in cowkit-fs goes through safe `rustix`
//! calls. Opcodes come from `linux-raw-sys`, never written by hand, except
//! XFS's, which it does not have (built with `rustix::ioctl::opcode`).
//!
//! - [`clone`]: the `FICLONERANGE` ioctl;
//! - [`fiemap`]: the `FS_IOC_FIEMAP` ioctl;
//! - [`verity`]: the `FS_IOC_ENABLE_VERITY` and `FS_IOC_MEASURE_VERITY` ioctls;
//! - [`lock`]: the `F_OFD_SETLK` and `F_OFD_SETLKW` commands of `fcntl`;
//! - [`xfs`]: the `XFS_IOC_FSGEOMETRY_V1` ioctl.

pub mod clone;
pub mod fiemap;
pub mod lock;
pub mod verity;
pub mod xfs;
