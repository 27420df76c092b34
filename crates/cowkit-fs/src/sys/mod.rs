//! The system calls rustix does not wrap, one module per domain, each
//! with its own `unsafe` and a `// SAFETY:` comment on every block (as
//! rustix does); everything else in cowkit-fs goes through safe `rustix`
//! calls. Opcodes come from `linux-raw-sys`, never written by hand, except
//! XFS's, which it does not have (built with `rustix::ioctl::opcode`).
//!
//! - [`clone`]: `FICLONERANGE`;
//! - [`fiemap`]: `FS_IOC_FIEMAP`;
//! - [`verity`]: `FS_IOC_ENABLE_VERITY`, `FS_IOC_MEASURE_VERITY`;
//! - [`lock`]: `F_OFD_SETLK`, `F_OFD_SETLKW`;
//! - [`xfs`]: `XFS_IOC_FSGEOMETRY_V1`.

pub mod clone;
pub mod fiemap;
pub mod lock;
pub mod verity;
pub mod xfs;
