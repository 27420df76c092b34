//! The fuzz targets' committed corpus (`fuzz/corpus/<target>/`), replayed
//! through the same entry points the targets call
//! (`cowkit_archive::fuzzing`), on stable: every input that once crashed
//! a target, or seeds it, must go through without a panic, in seconds.
//! `cargo test -p cowkit-archive --test fuzz_corpus -- --ignored` rewrites
//! the seeds (forged packages and archives, `cowkit_testutil::forge`).

use std::path::{Path, PathBuf};
use std::time::Instant;

use cowkit_archive::fuzzing;
use cowkit_testutil::forge::{self, Cpio, File, Package, Piece};

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

fn replay(target: &str, entry: fn(&[u8])) {
    let dir = corpus(target);
    let mut n = 0;
    let start = Instant::now();
    for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = e.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        entry(&data);
        n += 1;
    }
    assert!(n > 0, "no corpus in {}", dir.display());
    eprintln!("{target}: {n} inputs in {:?}", start.elapsed());
}

#[test]
fn fuzz_corpus_rpm_header() {
    replay("rpm_header", fuzzing::rpm_header);
}

#[test]
fn fuzz_corpus_cpio() {
    replay("cpio", fuzzing::cpio);
}

#[test]
fn fuzz_corpus_payload() {
    replay("payload", fuzzing::payload);
}

/// Small packages of every kind the targets should start from.
pub fn seed_packages() -> Vec<(String, Package)> {
    let files = vec![
        File::dir("/usr/lib/seed"),
        File::regular("/usr/lib/seed/a", b"hello\n"),
        File::regular("/usr/lib/seed/empty", b""),
        File::symlink("/usr/lib/seed/l", "a"),
    ];
    let mut out = Vec::new();
    for (cpio, c) in [
        (Cpio::Newc, ""),
        (Cpio::Crc, ""),
        (Cpio::Stripped, ""),
        (Cpio::Newc, "zstd"),
        (Cpio::Newc, "gzip"),
        (Cpio::Newc, "xz"),
        (Cpio::Newc, "bzip2"),
        (Cpio::Newc, "lzma"),
    ] {
        let mut p = Package::new("seed", files.clone());
        p.cpio = cpio;
        p.compressor = c.into();
        p.long_sizes = cpio == Cpio::Stripped;
        out.push((
            format!("{cpio:?}-{}", if c.is_empty() { "none" } else { c }),
            p,
        ));
    }
    out
}

#[test]
#[ignore = "rewrites the seed corpus"]
fn write_seeds() {
    for t in ["rpm_header", "cpio", "payload"] {
        std::fs::create_dir_all(corpus(t)).unwrap();
    }
    for (name, p) in seed_packages() {
        let rpm = p.build();
        std::fs::write(corpus("payload").join(format!("seed-{name}")), &rpm).unwrap();
        if name.ends_with("none") {
            let header_len = rpm.len() - forge::compress("", &p.archive()).len();
            std::fs::write(
                corpus("rpm_header").join(format!("seed-{name}")),
                &rpm[..header_len],
            )
            .unwrap();
            std::fs::write(
                corpus("cpio").join(format!("seed-{name}")),
                forge::compress("", &p.archive()),
            )
            .unwrap();
        }
    }
    // A stripped archive with a size from its index, as the target reads it.
    let mut p = Package::new("seed", vec![File::regular("/a", &[1; 3])]);
    p.cpio = Cpio::Stripped;
    p.files[0].content = vec![Piece::Bytes(vec![1; 0])];
    std::fs::write(
        corpus("cpio").join("seed-stripped-index0"),
        forge::compress("", &p.archive()),
    )
    .unwrap();
}
