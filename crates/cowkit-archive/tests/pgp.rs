//! OpenPGP header signatures, against packages signed here by `rpmsign`
//! with throwaway GnuPG keys: right, wrong and unusable keys, unsigned,
//! tampered and multiply signed packages.
#![cfg(feature = "pgp")]

use std::io::Cursor;
use std::path::{Path, PathBuf};

use cowkit_archive::pgp::{Error, Keyring, SignatureTag, Verified};
use cowkit_archive::rpm::{self as cowrpm, Package};
use cowkit_testutil::rpm::{edit_header, pgp_fingerprint, pgp_fixtures};

/// The keys and signed packages, made once (gpg and rpmsign are required:
/// `scripts/setup.sh` installs them).
fn fixtures() -> PathBuf {
    pgp_fixtures(Path::new(env!("CARGO_TARGET_TMPDIR")))
}

fn file(name: &str) -> PathBuf {
    fixtures().join(name)
}

fn bytes(name: &str) -> Vec<u8> {
    std::fs::read(file(name)).unwrap()
}

fn fingerprint(key: &str) -> String {
    pgp_fingerprint(&fixtures(), key)
}

fn key_id(key: &str) -> String {
    fingerprint(key)[24..].to_string()
}

fn package(bytes: &[u8]) -> Package {
    Package::read(&mut Cursor::new(bytes)).unwrap()
}

fn keyring(names: &[&str]) -> Keyring {
    let mut k = Keyring::new();
    for n in names {
        k.add(file(n)).unwrap();
    }
    k
}

fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("needle in haystack")
}

#[test]
fn rsa_signature_verifies_with_the_armored_key() {
    let pkg = package(&bytes("signed-rsa.rpm"));
    let got = keyring(&["rsa.asc"]).verify_header(&pkg).unwrap();
    assert_eq!(got.tag, SignatureTag::Rsa);
    assert_eq!(
        got.fingerprint.as_deref(),
        Some(fingerprint("rsa").as_str())
    );
    assert_eq!(got.key_id.as_deref(), Some(key_id("rsa").as_str()));
    assert_eq!(got.key_file, file("rsa.asc"));
}

#[test]
fn eddsa_signature_in_the_dsa_tag_verifies_with_the_binary_key() {
    let pkg = package(&bytes("signed-ed.rpm"));
    let got = keyring(&["ed.gpg"]).verify_header(&pkg).unwrap();
    assert_eq!(got.tag, SignatureTag::Dsa);
    assert_eq!(got.fingerprint.as_deref(), Some(fingerprint("ed").as_str()));
    assert_eq!(got.key_file, file("ed.gpg"));
}

#[test]
fn the_right_key_among_others_verifies_and_is_named() {
    let keys = keyring(&["wrong.asc", "ed.asc", "rsa.gpg"]);
    let got = keys
        .verify_header(&package(&bytes("signed-rsa.rpm")))
        .unwrap();
    assert_eq!(got.key_file, file("rsa.gpg"));
    let got = keys
        .verify_header(&package(&bytes("signed-ed.rpm")))
        .unwrap();
    assert_eq!(got.key_file, file("ed.asc"));
}

#[test]
fn a_wrong_key_is_unknown_key_naming_the_signer() {
    for (pkg, signer) in [("signed-rsa.rpm", "rsa"), ("signed-ed.rpm", "ed")] {
        let err = keyring(&["wrong.asc"])
            .verify_header(&package(&bytes(pkg)))
            .unwrap_err();
        match &err {
            Error::UnknownKey { key_id: id } => assert_eq!(*id, key_id(signer)),
            other => panic!("{pkg}: expected UnknownKey, got {other:?}"),
        }
        let msg = err.to_string();
        assert!(
            msg.contains(&key_id(signer)) && msg.contains("add its public key"),
            "{msg}"
        );
    }
}

#[test]
fn an_unsigned_package_is_no_signature_when_a_key_is_required() {
    let err = keyring(&["rsa.asc"])
        .verify_header(&package(&bytes("unsigned.rpm")))
        .unwrap_err();
    assert!(
        matches!(err, Error::NoSignature { legacy_only: false }),
        "{err:?}"
    );
    assert!(err.to_string().contains("not signed"), "{err}");
}

#[test]
fn verification_needs_no_payload_byte() {
    let all = bytes("signed-rsa.rpm");
    let pkg = package(&all);
    let headers_only = &all[..pkg.prefix().len()];
    let mut input = Cursor::new(headers_only);
    let pkg = Package::read(&mut input).unwrap();
    assert_eq!(input.position() as usize, headers_only.len());
    keyring(&["rsa.asc"]).verify_header(&pkg).unwrap();
}

#[test]
fn the_header_range_checked_is_the_one_rpm_signs() {
    // header.bin was cut out by the fixture script with od and dd.
    let pkg = package(&bytes("signed-rsa.rpm"));
    assert_eq!(
        &pkg.prefix()[pkg.header_offset()..],
        &bytes("header.bin")[..]
    );
}

#[test]
fn a_flipped_header_byte_is_caught_by_the_digest_before_the_signature() {
    // A byte of the store (the Summary): a flipped index byte can make
    // rpm-rs 0.30.2 panic inside `Package::read` before the digest is
    // checked (an entry offset past the store), which is rpm.rs's to fix.
    let mut b = bytes("signed-rsa.rpm");
    let start = package(&b).header_offset();
    let at = start + find(&b[start..], b"cowkit test fixture");
    b[at] ^= 0x01;
    let err = Package::read(&mut Cursor::new(&b)).unwrap_err();
    assert!(
        matches!(err, cowrpm::Error::HeaderDigestMismatch { .. }),
        "{err:?}"
    );
}

/// Change the Summary in the main header and write the new header's
/// SHA-256 into the signature header, as a forger would: the digest check
/// passes and only the signature can catch it.
fn forge_header(original: &[u8]) -> Vec<u8> {
    let mut b = original.to_vec();
    edit_header(&mut b, |h| {
        let at = find(h, b"cowkit test fixture");
        h[at] = b'C';
    });
    b
}

#[test]
fn a_changed_header_with_a_recomputed_digest_is_bad_signature() {
    for (pkg, key) in [("signed-rsa.rpm", "rsa"), ("signed-ed.rpm", "ed")] {
        let forged = forge_header(&bytes(pkg));
        let pkg = package(&forged); // the digest check passes
        let key_file = format!("{key}.asc");
        let err = keyring(&[&key_file]).verify_header(&pkg).unwrap_err();
        match &err {
            Error::BadSignature {
                key_id: id,
                key_file: f,
                ..
            } => {
                assert_eq!(*id, key_id(key));
                assert_eq!(*f, file(&key_file));
            }
            other => panic!("expected BadSignature, got {other:?}"),
        }
        assert!(err.to_string().contains("do not use it"), "{err}");
    }
}

#[test]
fn a_flipped_signature_byte_is_bad_signature() {
    let mut b = bytes("signed-rsa.rpm");
    let pkg = package(&b);
    let sig = pkg
        .metadata()
        .signature
        .get_entry_data_as_binary(::rpm::IndexSignatureTag::RPMSIGTAG_RSA)
        .unwrap()
        .to_vec();
    let at = find(&b[..pkg.header_offset()], &sig) + sig.len() - 1;
    b[at] ^= 0x01;
    let err = keyring(&["rsa.asc"])
        .verify_header(&package(&b))
        .unwrap_err();
    assert!(matches!(err, Error::BadSignature { .. }), "{err:?}");
}

/// signed-rsa.rpm with the ed25519 key's detached signature of its header
/// added by rpm-rs: `RPMSIGTAG_OPENPGP` then holds both signatures.
fn doubly_signed(ed_signature: Vec<u8>) -> Vec<u8> {
    let mut p = ::rpm::Package::open(file("signed-rsa.rpm")).unwrap();
    p.apply_signature(ed_signature).unwrap();
    let mut out = Vec::new();
    p.write(&mut out).unwrap();
    let sigs = p
        .metadata
        .signature
        .get_entry_data_as_string_array(::rpm::IndexSignatureTag::RPMSIGTAG_OPENPGP)
        .unwrap();
    assert_eq!(sigs.len(), 2);
    out
}

#[test]
fn any_of_several_signatures_may_verify() {
    let pkg = package(&doubly_signed(bytes("header-ed.sig")));
    for key in ["rsa", "ed"] {
        let got: Verified = keyring(&[&format!("{key}.asc")])
            .verify_header(&pkg)
            .unwrap();
        assert_eq!(got.tag, SignatureTag::OpenPgp);
        assert_eq!(got.fingerprint.as_deref(), Some(fingerprint(key).as_str()));
    }
    let err = keyring(&["wrong.asc"]).verify_header(&pkg).unwrap_err();
    match err {
        Error::UnknownKey { key_id: ids } => {
            assert_eq!(ids, format!("{}, {}", key_id("rsa"), key_id("ed")))
        }
        other => panic!("expected UnknownKey, got {other:?}"),
    }
}

#[test]
fn a_bad_signature_does_not_hide_a_good_one_but_is_reported_alone() {
    let mut ed = bytes("header-ed.sig");
    *ed.last_mut().unwrap() ^= 0x01;
    let pkg = package(&doubly_signed(ed));
    let got = keyring(&["ed.asc", "rsa.asc"]).verify_header(&pkg).unwrap();
    assert_eq!(got.key_file, file("rsa.asc"));
    let err = keyring(&["ed.asc"]).verify_header(&pkg).unwrap_err();
    assert!(
        matches!(&err, Error::BadSignature { key_id: id, .. } if *id == key_id("ed")),
        "{err:?}"
    );
}

#[test]
fn a_key_directory_loads_every_key_file_and_skips_the_rest() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();
    std::fs::copy(file("rsa.asc"), d.join("RPM-GPG-KEY-cowkit-rsa")).unwrap();
    std::fs::copy(file("ed.gpg"), d.join("ed.gpg")).unwrap();
    std::fs::copy(file("wrong.asc"), d.join("wrong.pub")).unwrap();
    std::fs::write(d.join("README.txt"), "not a key\n").unwrap();
    std::fs::write(d.join("notes.asc~"), "not a key either\n").unwrap();
    std::fs::create_dir(d.join("nested.asc")).unwrap();

    let keys = Keyring::load(d).unwrap();
    let names: Vec<_> = keys
        .files()
        .map(|p| p.file_name().unwrap().to_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["RPM-GPG-KEY-cowkit-rsa", "ed.gpg", "wrong.pub"]);
    assert_eq!(keys.len(), 3);

    let got = keys
        .verify_header(&package(&bytes("signed-rsa.rpm")))
        .unwrap();
    assert_eq!(got.key_file, d.join("RPM-GPG-KEY-cowkit-rsa"));
    let got = keys
        .verify_header(&package(&bytes("signed-ed.rpm")))
        .unwrap();
    assert_eq!(got.key_file, d.join("ed.gpg"));
}

#[test]
fn a_directory_without_key_files_is_an_error() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    std::fs::write(dir.path().join("README"), "no keys here\n").unwrap();
    let err = Keyring::load(dir.path()).unwrap_err();
    assert!(
        matches!(&err, Error::NoKeyFiles { dir: d } if d == dir.path()),
        "{err:?}"
    );
    assert!(err.to_string().contains("RPM-GPG-KEY-*"), "{err}");
}

#[test]
fn unusable_key_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let d = dir.path();

    let garbage = d.join("garbage.asc");
    std::fs::write(&garbage, "hello, I am not a key\n").unwrap();
    let err = Keyring::load(&garbage).unwrap_err();
    assert!(
        matches!(&err, Error::NotAKey { path } if *path == garbage),
        "{err:?}"
    );
    assert!(err.to_string().contains("garbage.asc"), "{err}");

    let err = Keyring::load(file("wrong-secret.asc")).unwrap_err();
    assert!(
        matches!(&err, Error::NotAPublicKey { found, .. } if found == "a secret key"),
        "{err:?}"
    );
    assert!(err.to_string().contains("gpg --armor --export"), "{err}");

    // Armor that is right around a damaged body.
    let asc = std::fs::read_to_string(file("rsa.asc")).unwrap();
    let mut lines: Vec<String> = asc.lines().map(String::from).collect();
    let body = lines.iter().position(|l| l.is_empty()).unwrap() + 1;
    for line in &mut lines[body..body + 4] {
        *line = "A".repeat(line.len());
    }
    let damaged = d.join("damaged.asc");
    std::fs::write(&damaged, lines.join("\n")).unwrap();
    let err = Keyring::load(&damaged).unwrap_err();
    assert!(
        matches!(&err, Error::BadKey { path, .. } if *path == damaged),
        "{err:?}"
    );

    // Truncated binary key.
    let truncated = d.join("truncated.gpg");
    std::fs::write(&truncated, &bytes("rsa.gpg")[..100]).unwrap();
    let err = Keyring::load(&truncated).unwrap_err();
    assert!(
        matches!(&err, Error::BadKey { path, .. } | Error::NotAKey { path } if *path == truncated),
        "{err:?}"
    );

    let missing = d.join("missing.asc");
    let err = Keyring::load(&missing).unwrap_err();
    assert!(
        matches!(&err, Error::Io { path, .. } if *path == missing),
        "{err:?}"
    );

    // In a directory, the bad file is named, not the directory.
    let keys = d.join("keys");
    std::fs::create_dir(&keys).unwrap();
    std::fs::copy(file("rsa.asc"), keys.join("a.asc")).unwrap();
    std::fs::copy(&garbage, keys.join("b.asc")).unwrap();
    let err = Keyring::load(&keys).unwrap_err();
    assert!(
        matches!(&err, Error::NotAKey { path } if *path == keys.join("b.asc")),
        "{err:?}"
    );
}

#[test]
fn an_empty_keyring_refuses_to_verify() {
    let err = Keyring::new()
        .verify_header(&package(&bytes("signed-rsa.rpm")))
        .unwrap_err();
    assert!(matches!(err, Error::EmptyKeyring), "{err:?}");
}

#[test]
fn a_key_file_may_hold_several_keys_armored_or_binary() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    // Armored blocks one after the other, with text around them, as in
    // some distributions' RPM-GPG-KEY files (rPGP alone reads the first).
    let armored = dir.path().join("RPM-GPG-KEY-both");
    let mut text = b"Keys for cowkit tests\n\n".to_vec();
    text.extend(bytes("wrong.asc"));
    text.extend(bytes("rsa.asc"));
    text.extend(b"\n");
    text.extend(bytes("ed.asc"));
    std::fs::write(&armored, text).unwrap();
    // Binary keys one after the other, as `gpg --export A B` writes them.
    let binary = dir.path().join("both.gpg");
    std::fs::write(&binary, [bytes("rsa.gpg"), bytes("ed.gpg")].concat()).unwrap();

    for path in [armored, binary] {
        let keys = Keyring::load(&path).unwrap();
        assert_eq!(keys.len(), 1);
        for (pkg, key) in [("signed-rsa.rpm", "rsa"), ("signed-ed.rpm", "ed")] {
            let got = keys.verify_header(&package(&bytes(pkg))).unwrap();
            assert_eq!(got.fingerprint.unwrap(), fingerprint(key), "{path:?} {pkg}");
            assert_eq!(got.key_file, path);
        }
    }
}

#[test]
fn a_secret_key_block_after_a_public_one_is_refused() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mixed = dir.path().join("mixed.asc");
    std::fs::write(
        &mixed,
        [bytes("rsa.asc"), bytes("wrong-secret.asc")].concat(),
    )
    .unwrap();
    let mut keys = keyring(&["ed.asc"]);
    let err = keys.add(&mixed).unwrap_err();
    assert!(
        matches!(&err, Error::NotAPublicKey { path, found } if *path == mixed && found == "a secret key"),
        "{err:?}"
    );
    assert_eq!(keys.len(), 1, "a failed add leaves the keyring as it was");
}
