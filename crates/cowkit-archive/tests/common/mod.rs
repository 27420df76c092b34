//! Fixture packages shared by the RPM tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use cowkit_archive::rpm::Compressor;

pub const PAYLOADS: [(&str, Compressor); 6] = [
    ("w19.zstdio", Compressor::Zstd),
    ("w6.xzdio", Compressor::Xz),
    ("w9.gzdio", Compressor::Gzip),
    ("w9.bzdio", Compressor::Bzip2),
    ("w9.lzdio", Compressor::Lzma),
    ("w.ufdio", Compressor::None),
];

/// Build the fixture once per payload (rpmbuild is required: CI installs it).
pub fn fixtures() -> &'static Vec<PathBuf> {
    static F: OnceLock<Vec<PathBuf>> = OnceLock::new();
    F.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("rpm-fixtures");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rpm/build.sh");
        PAYLOADS
            .iter()
            .map(|(p, _)| {
                let out = Command::new("bash")
                    .arg(&script)
                    .arg(&dir)
                    .arg(p)
                    .output()
                    .unwrap();
                assert!(
                    out.status.success(),
                    "building the {p} fixture: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
            })
            .collect()
    })
}
