//! Entry point of the `extents` fuzz target in `fuzz/`, also called by the
//! stable smoke test that replays the committed corpus
//! (`tests/fuzz_corpus.rs`).
//!
//! The footer's checksum and header digest, and the package's
//! `RPMSIGTAG_SHA256`, are SHA-256 values a fuzzer cannot forge: they are
//! recomputed before the file is opened, as a forger would, so that the
//! cross-checks behind them are reached.

use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::format::{FOOTER_LEN, MAGIC};
use crate::open::{Content, ExtentsFile};

fn le(b: &[u8], at: usize, n: usize) -> u64 {
    let mut v = [0u8; 8];
    v[..n].copy_from_slice(&b[at..at + n]);
    u64::from_le_bytes(v)
}

/// Recompute the footer's header digest and checksum in `data` (a whole
/// extents file), when its footer and table are where it says.
pub fn refresh_footer(data: &mut [u8]) {
    let Some(foot) = data.len().checked_sub(FOOTER_LEN) else {
        return;
    };
    if data[foot..foot + 8] != MAGIC {
        return;
    }
    let f = &data[foot..];
    let prefix_len = le(f, 24, 8);
    let table_offset = le(f, 32, 8);
    let table_len = le(f, 40, 4) * 88 + le(f, 44, 4) * 8;
    if table_offset.checked_add(table_len) != Some(foot as u64) {
        return;
    }
    let mut prefix = data[..(prefix_len as usize).min(foot)].to_vec();
    cowkit_archive::fuzzing::resign(&mut prefix);
    let n = prefix.len();
    data[..n].copy_from_slice(&prefix);
    if let Ok(pkg) = cowkit_archive::rpm::Package::read(&mut &prefix[..]) {
        let sha = Sha256::digest(&prefix[pkg.header_offset()..pkg.prefix().len()]);
        data[foot + 88..foot + 120].copy_from_slice(&sha);
    }
    let mut h = Sha256::new();
    h.update(&data[table_offset as usize..foot]);
    h.update(&data[foot..foot + 128]);
    let sum = h.finalize();
    data[foot + 128..foot + 160].copy_from_slice(&sum);
}

/// Open `data` as an extents file (after [`refresh_footer`]) and read
/// every file's content range.
pub fn extents(data: &[u8]) {
    let mut data = data.to_vec();
    refresh_footer(&mut data);
    let Ok(fd) = rustix::fs::memfd_create("cowkit-fuzz", rustix::fs::MemfdFlags::CLOEXEC) else {
        return;
    };
    let mut file = std::fs::File::from(fd);
    if file.write_all(&data).is_err() {
        return;
    }
    let Ok(x) = ExtentsFile::open(file, Path::new("fuzz.rpme")) else {
        return;
    };
    let mut buf = vec![0u8; 4096];
    for f in &x.files().files {
        if let Some(Content::Extent(e)) = x.content(f.index) {
            use std::os::unix::fs::FileExt;
            let n = e.length.min(buf.len() as u64) as usize;
            let _ = x.file().read_exact_at(&mut buf[..n], e.offset);
        }
    }
}
