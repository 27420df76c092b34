//! The source of the `cowkit nosync` preload shim, and the names it shares
//! with the supervisor in `cowkit-nosync`.
//!
//! The shim itself is `src/shim.rs`
//! next to this file: a `#![no_std]` cdylib with `panic=abort`, which a
//! workspace crate cannot be (Cargo sets `panic` per profile, not per
//! crate). `crates/cowkit-nosync/build.rs` compiles that one file with
//! `$RUSTC --crate-type cdylib -C panic=abort` and embeds the result; this
//! library only holds what both sides must agree on, so that a change on
//! one side that the other does not follow fails to compile or fails a test.
//!
//! ```
//! use cowkit_nosync_shim::{KINDS, STATS_ENV, STATS_PREFIX};
//! let line = "cowkit-nosync-stats pid=7 fsync=3 fdatasync=0 sync=0 syncfs=0 \
//!             sync_file_range=0 msync=0 open=1 pwritev2=0";
//! assert!(line.starts_with(STATS_PREFIX));
//! assert_eq!(KINDS[0], "fsync");
//! assert_eq!(STATS_ENV, "COWKIT_NOSYNC_STATS");
//! ```
#![deny(missing_docs)]

/// The environment variable naming the stats file the shim appends to at
/// process exit (read once, when the shim is loaded).
pub const STATS_ENV: &str = "COWKIT_NOSYNC_STATS";

/// How each stats line starts; `pid=P` and `KIND=N` for each of [`KINDS`]
/// follow, separated by single spaces.
pub const STATS_PREFIX: &str = "cowkit-nosync-stats ";

/// What the shim counts, in the order of the stats line: the six sync calls
/// it turned into no-ops, then opens whose `O_SYNC`/`O_DSYNC` it removed and
/// `pwritev2` calls whose `RWF_SYNC`/`RWF_DSYNC` it removed.
pub const KINDS: [&str; 8] = [
    "fsync",
    "fdatasync",
    "sync",
    "syncfs",
    "sync_file_range",
    "msync",
    "open",
    "pwritev2",
];

/// The shim's source, compiled by `cowkit-nosync`'s build script.
pub const SOURCE: &str = include_str!("shim.rs");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_source_agrees_on_the_names() {
        assert!(SOURCE.contains(&format!("b\"{STATS_ENV}=\"")));
        assert!(SOURCE.contains(&format!("b\"{STATS_PREFIX}pid=\"")));
        for k in KINDS {
            assert!(SOURCE.contains(&format!("b\"{k}\",")), "{k}");
        }
    }
}
