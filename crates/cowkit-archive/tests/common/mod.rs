//! Fixture packages shared by the RPM tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cowkit_archive::rpm::Compressor;
use cowkit_testutil::rpm::fixture_in;

pub const PAYLOADS: [(&str, Compressor); 6] = [
    ("w19.zstdio", Compressor::Zstd),
    ("w6.xzdio", Compressor::Xz),
    ("w9.gzdio", Compressor::Gzip),
    ("w9.bzdio", Compressor::Bzip2),
    ("w9.lzdio", Compressor::Lzma),
    ("w.ufdio", Compressor::None),
];

/// The fixture, built once per payload (rpmbuild is required: CI installs
/// it), in the order of [`PAYLOADS`].
pub fn fixtures() -> &'static Vec<PathBuf> {
    static F: OnceLock<Vec<PathBuf>> = OnceLock::new();
    F.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
        PAYLOADS.iter().map(|(p, _)| fixture_in(dir, p)).collect()
    })
}
