//! What the parent tests and the child share: the environment protocol, the
//! input streams, the report format.

pub mod child;
pub mod parent;

use std::io::Read;
use std::sync::OnceLock;

pub use cowkit_testutil::{hex, sha256_hex};

/// Set in the child's environment to what it should do (a [`Mode`] name).
/// Absent: the child test returns at once.
pub const CHILD_ENV: &str = "COWKIT_CONFINE_CHILD";
/// A scratch directory with an existing file `victim`, for the path probes.
pub const DIR_ENV: &str = "COWKIT_CONFINE_DIR";
/// The name of the child test in this binary.
pub const CHILD_TEST: &str = "child_confined_worker";
/// Every report line on the child's stderr starts with this.
pub const TAG: &str = "cowkit-confine:";

/// What the child does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `Policy::stream_worker().apply()`, then the probes and the work.
    Confined,
    /// The same with `.allow_threads(true)`; the work runs in a new thread.
    Threads,
    /// No confinement: the same probes and work, to show they can succeed.
    Control,
    /// Confine, then `std::process::abort()`.
    Abort,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Confined => "confined",
            Mode::Threads => "threads",
            Mode::Control => "control",
            Mode::Abort => "abort",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        [Mode::Confined, Mode::Threads, Mode::Control, Mode::Abort]
            .into_iter()
            .find(|m| m.name() == s)
    }
}

/// The four compressors of RPM payloads, in the order they are sent.
pub const KINDS: [&str; 4] = ["zstd", "xz", "gzip", "bzip2"];

/// One input stream: its plain bytes and their compressed form.
pub struct Stream {
    pub kind: &'static str,
    pub plain: Vec<u8>,
    pub packed: Vec<u8>,
}

/// Deterministic, compressible, not trivially repetitive text.
fn plain_text(seed: u64, lines: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(lines * 48);
    for i in 0..lines {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let word = ["usr", "lib", "share", "doc", "bin", "etc", "locale", "man"][(x % 8) as usize];
        out.extend_from_slice(format!("/{word}/{seed}/{i:08}/{:016x}\n", x >> 20).as_bytes());
    }
    out
}

fn pack(kind: &str, plain: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    match kind {
        "zstd" => out = zstd::stream::encode_all(plain, 3).unwrap(),
        "xz" => {
            liblzma::read::XzEncoder::new(plain, 6)
                .read_to_end(&mut out)
                .unwrap();
        }
        "gzip" => {
            flate2::read::GzEncoder::new(plain, flate2::Compression::default())
                .read_to_end(&mut out)
                .unwrap();
        }
        "bzip2" => {
            bzip2::read::BzEncoder::new(plain, bzip2::Compression::default())
                .read_to_end(&mut out)
                .unwrap();
        }
        _ => unreachable!("{kind}"),
    }
    out
}

/// The four streams, built once per test process.
pub fn streams() -> &'static [Stream] {
    static STREAMS: OnceLock<Vec<Stream>> = OnceLock::new();
    STREAMS.get_or_init(|| {
        KINDS
            .iter()
            .enumerate()
            .map(|(i, &kind)| {
                // About 1.5 MiB of plain text each.
                let plain = plain_text(i as u64 + 1, 32 * 1024 + i * 1000);
                let packed = pack(kind, &plain);
                Stream {
                    kind,
                    plain,
                    packed,
                }
            })
            .collect()
    })
}

/// What the child reads on stdin: for each stream, its compressed length as
/// 8 little-endian bytes, then the compressed bytes.
pub fn framed_input() -> Vec<u8> {
    let mut out = Vec::new();
    for s in streams() {
        out.extend_from_slice(&(s.packed.len() as u64).to_le_bytes());
        out.extend_from_slice(&s.packed);
    }
    out
}

/// The checksum the child reports for its 64 MiB allocation.
pub const ALLOC_LEN: usize = 64 << 20;

pub fn alloc_pattern(i: usize) -> u8 {
    (i.wrapping_mul(31) >> 3) as u8
}

pub fn alloc_checksum() -> u64 {
    (0..ALLOC_LEN).map(|i| u64::from(alloc_pattern(i))).sum()
}
