//! Hostile packages forged byte by byte (`cowkit_testutil::forge`) against
//! the payload reader: each is refused with the right typed error, before
//! anything is sized from what the header does not vouch for (issue 14).
//! The same packages go through the CLI, with memory measured, in
//! `crates/cowkit/tests/hostile.rs`.

use std::io::Cursor;

use cowkit_archive::payload::{read_payload, PayloadError};
use cowkit_archive::rpm::{Compressor, Error, Package};
use cowkit_testutil::forge::{self, Cpio, File, Piece};

fn walk(bytes: &[u8]) -> Result<(), Error> {
    let mut input = Cursor::new(bytes);
    let pkg = Package::read(&mut input)?;
    let files = pkg.files()?;
    read_payload(&pkg, &files, input, |e| -> std::io::Result<()> {
        std::io::copy(e, &mut std::io::sink())?;
        Ok(())
    })
    .map(|_| ())
    .map_err(|e| match e {
        PayloadError::Archive(e) => e,
        PayloadError::Visit(e) => panic!("visitor: {e}"),
    })
}

fn symlink_claiming(size: u64, carried: u64) -> File {
    let mut f = File::symlink("/l", "target");
    f.size = size;
    f.content = vec![Piece::Repeat {
        byte: b'a',
        len: carried,
    }];
    f
}

#[test]
fn symlink_sizes_are_checked_against_the_target_before_reading() {
    let p = forge::Package::new("s", vec![symlink_claiming(2 << 30, 2 << 30)]);
    let e = walk(&p.build()).unwrap_err();
    assert!(matches!(e, Error::EntryMismatch { .. }), "{e}");
    assert!(e.to_string().len() < 300, "{e}");

    let mut p = forge::Package::new("s", vec![symlink_claiming(1 << 40, 64)]);
    p.cpio = Cpio::Stripped;
    p.long_sizes = true;
    let e = walk(&p.build()).unwrap_err();
    assert!(e.to_string().contains("1099511627776 bytes"), "{e}");

    // Right size, wrong target: the message shows it escaped and short.
    let mut f = File::symlink("/l", "target");
    f.content = vec![Piece::Bytes(b"\x1b[2Jxx".to_vec())];
    let e = walk(&forge::Package::new("s", vec![f]).build()).unwrap_err();
    assert!(e.to_string().contains("\\u{1b}[2Jxx"), "{e}");
}

#[test]
fn lzma_dictionary_over_the_memlimit_is_refused() {
    let mut p = forge::Package::new("l", vec![File::regular("/a", &[1; 1000])]);
    p.compressor = "lzma".into();
    let mut payload = forge::compress("lzma", &p.archive());
    payload[1..5].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    let e = walk(&p.rpm(&payload)).unwrap_err();
    match &e {
        Error::Decompress { compressor, source } => {
            assert_eq!(*compressor, Compressor::Lzma);
            assert!(source.to_string().contains("memory limit"), "{source}");
        }
        e => panic!("{e}"),
    }
}

#[test]
fn a_lying_compressor_tag_is_named() {
    for (real, said) in [
        ("zstd", "xz"),
        ("xz", "zstd"),
        ("gzip", "bzip2"),
        ("", "gzip"),
        ("zstd", ""),
    ] {
        let mut p = forge::Package::new("t", vec![File::regular("/a", b"hi\n")]);
        let payload = forge::compress(real, &p.archive());
        p.compressor = said.into();
        let e = walk(&p.rpm(&payload)).unwrap_err();
        assert!(
            matches!(e, Error::NotCompressedAs { .. }),
            "{real} as {said}: {e}"
        );
    }
}

#[test]
fn a_truncated_payload_is_a_truncated_package() {
    for c in ["zstd", "xz", "gzip", "bzip2", "lzma", ""] {
        let mut p = forge::Package::new("t", vec![File::regular("/a", &[9; 50_000])]);
        p.compressor = c.into();
        let whole = p.build();
        let payload_len = forge::compress(c, &p.archive()).len();
        let start = whole.len() - payload_len;
        for cut in [start, start + 3, start + payload_len / 2, whole.len() - 1] {
            let e = walk(&whole[..cut]).unwrap_err();
            assert!(
                matches!(
                    e,
                    Error::Truncated {
                        what: "payload",
                        ..
                    }
                ),
                "{c} cut at {cut}: {e}"
            );
        }
    }
}

#[test]
fn data_after_the_trailer_is_bounded() {
    let p = forge::Package::new("t", vec![File::regular("/a", b"hi\n")]);
    let mut archive = p.archive();
    archive.push(Piece::Repeat {
        byte: 0,
        len: 1 << 20,
    });
    let e = walk(&p.rpm(&forge::compress("zstd", &archive))).unwrap_err();
    assert!(matches!(e, Error::TrailingData { .. }), "{e}");
    // GNU cpio's padding to 512 bytes is fine.
    let mut archive = p.archive();
    archive.push(Piece::Bytes(vec![0; 400]));
    walk(&p.rpm(&forge::compress("zstd", &archive))).unwrap();
}

#[test]
fn fuzzing_resign_makes_a_forged_header_verify() {
    let p = forge::Package::new("resignme", vec![File::regular("/a", b"hi\n")]);
    let mut b = p.build();
    // Change the name in the header: its digest no longer matches...
    let at = 96 + b[96..].windows(9).position(|w| w == b"resignme\0").unwrap();
    b[at] = b'u';
    assert!(matches!(
        Package::read(&mut &b[..]),
        Err(Error::HeaderDigestMismatch { .. })
    ));
    // ...until the forger re-signs it.
    assert!(cowkit_archive::fuzzing::resign(&mut b));
    Package::read(&mut &b[..]).unwrap();
}
