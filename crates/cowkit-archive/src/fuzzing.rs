//! Entry points of the fuzz targets in `fuzz/` (run with `cargo +nightly
//! fuzz`), also called by the stable smoke test that replays the committed
//! corpus (`tests/fuzz_corpus.rs`). Each takes arbitrary bytes and must
//! return without panicking, aborting or allocating without bound,
//! whatever they hold.
//!
//! A fuzzer cannot forge SHA-256, so [`resign`] rewrites a package's
//! `RPMSIGTAG_SHA256` to match its main header, as a forger who builds
//! the package would: the targets that need a verified header reach the
//! code behind the check. (`PAYLOADDIGEST` is left alone: the payload is
//! walked in full before it is compared.)

use std::io::{self, Read};

use sha2::{Digest, Sha256};

use crate::cpio;
use crate::payload::read_payload;
use crate::rpm::{Package, LEAD_LEN};

/// The tag of the header digest in the signature header.
const SIGTAG_SHA256: usize = 273;

fn be32(b: &[u8], at: usize) -> Option<usize> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?) as usize)
}

/// Where the main header is in `data`: `(start, end)`, and the offset of
/// the 64 hex digits of `RPMSIGTAG_SHA256`, if the layout holds together.
fn layout(data: &[u8]) -> Option<(usize, usize, Option<usize>)> {
    let sig = LEAD_LEN;
    let (n, d) = (be32(data, sig + 8)?, be32(data, sig + 12)?);
    let store = sig.checked_add(16)?.checked_add(n.checked_mul(16)?)?;
    let mut digest_at = None;
    for i in 0..n.min(0x10000) {
        let e = sig + 16 + i * 16;
        if be32(data, e)? == SIGTAG_SHA256 && be32(data, e + 4)? == 6 {
            digest_at = Some(store.checked_add(be32(data, e + 8)?)?);
        }
    }
    let sig_end = store.checked_add(d)?;
    let start = sig_end.checked_add((8 - sig_end % 8) % 8)?;
    let (n2, d2) = (be32(data, start + 8)?, be32(data, start + 12)?);
    let end = start
        .checked_add(16)?
        .checked_add(n2.checked_mul(16)?)?
        .checked_add(d2)?;
    (end <= data.len()).then_some((start, end, digest_at))
}

/// Rewrite `RPMSIGTAG_SHA256` in `data` (a whole package) to the SHA-256
/// of its main header, when the signature header has room for it; returns
/// whether it did.
pub fn resign(data: &mut [u8]) -> bool {
    let Some((start, end, Some(at))) = layout(data) else {
        return false;
    };
    let digest = hex::encode(Sha256::digest(&data[start..end]));
    match data.get_mut(at..at + 64) {
        Some(slot) if at + 64 <= start => {
            slot.copy_from_slice(digest.as_bytes());
            true
        }
        _ => false,
    }
}

/// The lead and headers: `Package::read` as given, then re-signed, and the
/// file list of what verifies.
pub fn rpm_header(data: &[u8]) {
    let _ = Package::read(&mut &data[..]);
    let mut data = data.to_vec();
    if resign(&mut data) {
        if let Ok(p) = Package::read(&mut &data[..]) {
            let _ = p.files();
        }
    }
}

/// The cpio reader alone, in any of its three formats: every entry's
/// content read; a stripped entry gets a size taken from its index.
pub fn cpio(data: &[u8]) {
    let mut r = cpio::Reader::new(data);
    let mut buf = [0u8; 4096];
    while let Ok(Some(h)) = r.next_header() {
        if let Some(i) = h.file_index {
            if r.set_stripped_size(u64::from(i % 8192)).is_err() {
                return;
            }
        }
        loop {
            match r.read_content(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }
    let _ = r.offset();
}

/// A whole package, re-signed, and its payload walked against the header
/// (every file read to its end).
pub fn payload(data: &[u8]) {
    let mut data = data.to_vec();
    resign(&mut data);
    let mut input = &data[..];
    let Ok(pkg) = Package::read(&mut input) else {
        return;
    };
    let Ok(files) = pkg.files() else {
        return;
    };
    let _ = read_payload(&pkg, &files, input, |e| -> io::Result<()> {
        let mut buf = [0u8; 4096];
        while e.read(&mut buf)? > 0 {}
        Ok(())
    });
}
