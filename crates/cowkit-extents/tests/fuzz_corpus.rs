//! The `extents` fuzz target's committed corpus (`fuzz/corpus/extents/`),
//! replayed through its entry point (`cowkit_extents::fuzzing::extents`)
//! on stable. `cargo test -p cowkit-extents --test fuzz_corpus --
//! --ignored` rewrites the seeds: forged packages, transcoded.

use std::io::Read;
use std::path::{Path, PathBuf};

use cowkit_extents::transcode::{begin, NoProgress, Options};
use cowkit_testutil::forge::{Cpio, File, Package};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/extents")
}

#[test]
fn fuzz_corpus_extents() {
    let mut n = 0;
    for e in std::fs::read_dir(corpus()).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        cowkit_extents::fuzzing::extents(&data);
        n += 1;
    }
    assert!(n > 0);
}

#[test]
#[ignore = "rewrites the seed corpus"]
fn write_seeds() {
    std::fs::create_dir_all(corpus()).unwrap();
    let files = vec![
        File::dir("/usr/lib/seed"),
        File::regular("/usr/lib/seed/a", b"hello\n"),
        File::regular("/usr/lib/seed/b", &[0x42; 5000]),
        File::regular("/usr/lib/seed/empty", b""),
        File::symlink("/usr/lib/seed/l", "a"),
    ];
    for (name, cpio, pack_below) in [
        ("packed", Cpio::Newc, 65536),
        ("cloned", Cpio::Newc, 0),
        ("stripped", Cpio::Stripped, 100),
    ] {
        let mut p = Package::new("seed", files.clone());
        p.cpio = cpio;
        p.long_sizes = cpio == Cpio::Stripped;
        p.compressor = String::new();
        let rpm = p.build();
        let out = tempfile::tempfile().unwrap();
        let opts = Options {
            block_size: 512,
            pack_below,
        };
        begin(&rpm[..])
            .unwrap()
            .write(out.try_clone().unwrap(), &opts, &NoProgress)
            .unwrap();
        let mut bytes = Vec::new();
        let mut f = out;
        std::io::Seek::rewind(&mut f).unwrap();
        f.read_to_end(&mut bytes).unwrap();
        std::fs::write(corpus().join(format!("seed-{name}")), bytes).unwrap();
    }
}
