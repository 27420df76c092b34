//! RPM reading against packages built here by `rpmbuild`, compared with
//! `rpm2cpio`; damaged and hostile packages.

use std::io::{Cursor, Read};
use std::process::Command;

use cowkit_archive::rpm::{Error, Package, PayloadDigest};

mod common;
use common::{fixtures, PAYLOADS};

/// Read headers and the whole decompressed payload, verifying both.
fn read_all(bytes: &[u8]) -> Result<(Package, Vec<u8>), Error> {
    let mut input = Cursor::new(bytes);
    let pkg = Package::read(&mut input)?;
    let mut digest = PayloadDigest::new(&mut input);
    let mut cpio = Vec::new();
    pkg.decoder(&mut digest)?
        .read_to_end(&mut cpio)
        .map_err(|source| Error::Decompress {
            compressor: pkg.compressor(),
            source,
        })?;
    pkg.verify_payload(digest)?;
    Ok((pkg, cpio))
}

#[test]
fn every_compressor_gives_the_same_payload_as_rpm2cpio() {
    for ((payload, compressor), path) in PAYLOADS.iter().zip(fixtures()) {
        let bytes = std::fs::read(path).unwrap();
        let (pkg, cpio) = read_all(&bytes).unwrap_or_else(|e| panic!("{payload}: {e}"));
        assert_eq!(pkg.compressor(), *compressor, "{payload}");
        assert!(pkg.payload_digest().is_some(), "{payload}");
        assert_eq!(
            pkg.prefix(),
            &bytes[..pkg.prefix().len()],
            "{payload}: prefix not verbatim"
        );
        let rpm2cpio = Command::new("rpm2cpio").arg(path).output().unwrap();
        assert!(rpm2cpio.status.success());
        assert!(
            cpio == rpm2cpio.stdout,
            "{payload}: payload differs from rpm2cpio's"
        );
        let name = pkg.metadata().get_name().unwrap();
        assert_eq!(name, "cowkit-fixture");
    }
}

fn first_error(bytes: &[u8]) -> Error {
    match read_all(bytes) {
        Ok(_) => panic!("damaged package accepted"),
        Err(e) => e,
    }
}

#[test]
fn a_flipped_byte_in_the_header_is_caught_before_the_payload() {
    let bytes = std::fs::read(&fixtures()[0]).unwrap();
    let pkg = Package::read(&mut Cursor::new(&bytes)).unwrap();
    // A byte in the header's data store (the last byte of the header).
    let mut bad = bytes.clone();
    bad[pkg.prefix().len() - 1] ^= 0x01;
    assert!(matches!(
        first_error(&bad),
        Error::HeaderDigestMismatch { .. }
    ));
    // Headers only: the payload does not need to be there to fail.
    let err = Package::read(&mut Cursor::new(&bad[..pkg.prefix().len()])).unwrap_err();
    assert!(matches!(err, Error::HeaderDigestMismatch { .. }), "{err}");
}

#[test]
fn a_flipped_byte_in_the_payload_is_an_error_for_every_compressor() {
    for ((payload, _), path) in PAYLOADS.iter().zip(fixtures()) {
        let bytes = std::fs::read(path).unwrap();
        let start = Package::read(&mut Cursor::new(&bytes))
            .unwrap()
            .prefix()
            .len();
        for at in [start + 20, (start + bytes.len()) / 2, bytes.len() - 2] {
            let mut bad = bytes.clone();
            bad[at] ^= 0x10;
            let err = first_error(&bad);
            assert!(
                matches!(
                    err,
                    Error::PayloadDigestMismatch { .. } | Error::Decompress { .. }
                ),
                "{payload} at {at}: {err}"
            );
        }
    }
}

#[test]
fn truncation_anywhere_is_an_error() {
    let bytes = std::fs::read(&fixtures()[1]).unwrap();
    let prefix = Package::read(&mut Cursor::new(&bytes))
        .unwrap()
        .prefix()
        .len();
    for cut in [
        0,
        10,
        95,
        96,
        100,
        200,
        prefix - 1,
        prefix,
        prefix + 1,
        bytes.len() / 2,
        bytes.len() - 1,
    ] {
        let err = first_error(&bytes[..cut]);
        let ok = match &err {
            Error::Truncated { offset, .. } => *offset == cut as u64,
            Error::Decompress { .. } | Error::PayloadDigestMismatch { .. } => cut >= prefix,
            _ => false,
        };
        assert!(ok, "cut at {cut}: {err}");
    }
}

#[test]
fn not_an_rpm_and_absurd_header_sizes_are_refused_before_allocating() {
    assert!(matches!(first_error(&[0u8; 200]), Error::NotRpm { .. }));
    let bytes = std::fs::read(&fixtures()[0]).unwrap();
    let mut bad = bytes[..96 + 16].to_vec();
    // Signature header claiming 0xFFFFFFF0 bytes of data.
    bad[96 + 12..96 + 16].copy_from_slice(&0xFFFF_FFF0u32.to_be_bytes());
    assert!(matches!(first_error(&bad), Error::HeaderTooLarge { .. }));
    let mut bad = bytes[..96 + 16].to_vec();
    bad[96 + 8..96 + 12].copy_from_slice(&0x0100_0000u32.to_be_bytes());
    assert!(matches!(first_error(&bad), Error::HeaderTooLarge { .. }));
    let mut bad = bytes.clone();
    bad[96] = 0x8F;
    assert!(matches!(
        first_error(&bad),
        Error::BadHeaderMagic {
            what: "signature header",
            ..
        }
    ));
}

/// Found while adding signature checks: a changed index entry in the
/// signature header (which no digest covers) made rpm-rs slice past the
/// store and panic. Every byte of both indexes, set to 0xff or 0x00 in
/// turn, must give an error or a package, never a panic.
#[test]
fn damaged_header_indexes_are_errors_not_panics() {
    let bytes = std::fs::read(&fixtures()[0]).unwrap();
    let sig_entries = u32::from_be_bytes(bytes[96 + 8..96 + 12].try_into().unwrap()) as usize;
    let sig_data = u32::from_be_bytes(bytes[96 + 12..96 + 16].try_into().unwrap()) as usize;
    let sig_len = 16 + sig_entries * 16 + sig_data;
    let hdr = 96 + sig_len.next_multiple_of(8);
    let hdr_entries = u32::from_be_bytes(bytes[hdr + 8..hdr + 12].try_into().unwrap()) as usize;
    let ranges = [
        96 + 16..96 + 16 + sig_entries * 16,
        hdr + 16..hdr + 16 + hdr_entries * 16,
    ];
    for range in ranges {
        for at in range {
            for value in [0xff, 0x00] {
                let mut b = bytes.clone();
                if b[at] == value {
                    continue;
                }
                b[at] = value;
                if let Ok(pkg) = Package::read(&mut std::io::Cursor::new(&b)) {
                    let _ = pkg.files();
                }
            }
        }
    }
}

/// `bytes` with the signature header's entry `tag` renamed to a tag no
/// reader knows: the shape of a package built before that digest existed
/// (rpm before 4.14 wrote no SHA-256 header digest).
fn without_sig_tag(bytes: &[u8], tag: u32) -> Vec<u8> {
    let be32 = |b: &[u8], at: usize| u32::from_be_bytes(b[at..at + 4].try_into().unwrap());
    let mut out = bytes.to_vec();
    let entries = be32(bytes, 96 + 8) as usize;
    let at = (0..entries)
        .map(|i| 96 + 16 + i * 16)
        .find(|&at| be32(bytes, at) == tag)
        .unwrap_or_else(|| panic!("signature tag {tag} in the package"));
    out[at..at + 4].copy_from_slice(&(0x7fff_0000 | tag).to_be_bytes());
    out
}

/// Where `needle` first starts in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// What `rpm -Kv` says of a package: its digest lines, trimmed.
fn rpm_k(bytes: &[u8], dir: &std::path::Path) -> (bool, Vec<String>) {
    let path = dir.join("pkg.rpm");
    std::fs::write(&path, bytes).unwrap();
    let out = Command::new("rpm").arg("-Kv").arg(&path).output().unwrap();
    let lines = String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .map(|l| l.trim().to_string())
        .collect();
    (out.status.success(), lines)
}

#[test]
fn a_header_without_sha256_is_verified_by_its_sha1_as_rpm_does() {
    const SHA256: u32 = 273;
    const SHA1: u32 = 269;
    let dir = tempfile::tempdir().unwrap();
    let bytes = std::fs::read(&fixtures()[0]).unwrap();
    let sha1_only = without_sig_tag(&bytes, SHA256);
    // rpm sees the shape of an older package: the SHA-1 header digest only.
    let (ok, lines) = rpm_k(&sha1_only, dir.path());
    assert!(ok, "{lines:?}");
    assert!(
        lines.iter().any(|l| l == "Header SHA1 digest: OK"),
        "{lines:?}"
    );
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("SHA256 digest") && l.starts_with("Header")),
        "{lines:?}"
    );
    // cowkit installs what rpm installs; its identity stays the header's SHA-256.
    let (pkg, _) = read_all(&sha1_only).unwrap();
    let original = Package::read(&mut Cursor::new(&bytes)).unwrap();
    assert_eq!(pkg.header_digest(), original.header_digest());

    // A changed header byte (in the package's name): rpm says BAD, cowkit
    // refuses by the SHA-1.
    let name_at = pkg.header_offset()
        + find(
            &sha1_only[pkg.header_offset()..pkg.prefix().len()],
            b"cowkit-fixture",
        )
        .unwrap();
    let mut bad = sha1_only.clone();
    bad[name_at] ^= 0x01;
    let (ok, lines) = rpm_k(&bad, dir.path());
    assert!(
        !ok && lines
            .iter()
            .any(|l| l.starts_with("Header SHA1 digest: BAD")),
        "{lines:?}"
    );
    let err = Package::read(&mut Cursor::new(&bad)).unwrap_err();
    assert!(
        matches!(err, Error::HeaderDigestMismatch { algo: "SHA-1", .. }),
        "{err}"
    );

    // Neither header digest (the header covered only by the MD5 of header
    // and payload): refused before any payload byte, never weaker.
    let md5_only = without_sig_tag(&sha1_only, SHA1);
    let err = Package::read(&mut Cursor::new(&md5_only[..pkg.prefix().len()])).unwrap_err();
    assert!(matches!(err, Error::HeaderDigestMissing), "{err}");
    assert!(
        err.to_string().contains("neither a SHA-256 nor a SHA-1"),
        "{err}"
    );

    // With both present the SHA-256 decides (a forged SHA-256 still fails).
    let mut forged = bytes.clone();
    forged[name_at] ^= 0x01;
    let err = Package::read(&mut Cursor::new(&forged)).unwrap_err();
    assert!(
        matches!(
            err,
            Error::HeaderDigestMismatch {
                algo: "SHA-256",
                ..
            }
        ),
        "{err}"
    );
}
