//! The verified payload stream against packages built by `rpmbuild`.

use std::collections::BTreeMap;
use std::io::{Cursor, Read};
use std::process::Command;

use cowkit_archive::files::Kind;
use cowkit_archive::payload::{read_payload, PayloadError};
use cowkit_archive::rpm::{Error, Package};

mod common;
use common::{fixtures, PAYLOADS};

type Seen = BTreeMap<String, (Vec<String>, Vec<u8>)>;

fn walk(bytes: &[u8]) -> Result<Seen, Error> {
    let mut input = Cursor::new(bytes);
    let pkg = Package::read(&mut input)?;
    let files = pkg.files()?;
    let mut seen = Seen::new();
    read_payload(&pkg, &files, input, |e| -> Result<(), std::io::Error> {
        let mut data = Vec::new();
        e.read_to_end(&mut data)?;
        let links = e
            .links
            .iter()
            .map(|&i| files.files[i as usize].path.to_string())
            .collect();
        seen.insert(e.file.path.to_string(), (links, data));
        Ok(())
    })
    .map_err(|e| match e {
        PayloadError::Archive(e) => e,
        PayloadError::Visit(e) => panic!("visitor failed: {e}"),
    })?;
    Ok(seen)
}

const ROOT: &str = "/usr/share/cowkit-fixture";

#[test]
fn every_compressor_yields_every_file_once_with_the_right_bytes() {
    let large: Vec<u8> = {
        let out = Command::new("sh")
            .args(["-c", "seq 1 1000000 | head -c 1048581"])
            .output()
            .unwrap();
        out.stdout
    };
    for ((payload, _), path) in PAYLOADS.iter().zip(fixtures()) {
        let bytes = std::fs::read(path).unwrap();
        let seen = walk(&bytes).unwrap_or_else(|e| panic!("{payload}: {e}"));
        let names: Vec<&str> = seen.keys().map(|k| &k[ROOT.len() + 1..]).collect();
        assert_eq!(
            names,
            [
                "dir/large.bin",
                "dir/sub/same-content.bin",
                "empty",
                "ends-mid-block",
                "hl-b",
                "name with spaces",
                "small.txt",
                "suid-cap",
                "ünïcødé-名前"
            ],
            "{payload}"
        );
        assert_eq!(seen[&format!("{ROOT}/dir/large.bin")].1, large);
        assert_eq!(seen[&format!("{ROOT}/small.txt")].1, b"hello\n");
        assert!(seen[&format!("{ROOT}/empty")].1.is_empty());
        // One call for the hardlink set, naming all three members.
        let (links, data) = &seen[&format!("{ROOT}/hl-b")];
        assert_eq!(data, b"linked\n");
        let mut links = links.clone();
        links.sort();
        assert_eq!(
            links,
            [
                format!("{ROOT}/dir/hl-c"),
                format!("{ROOT}/hl-a"),
                format!("{ROOT}/hl-b")
            ]
        );
    }
}

#[test]
fn the_header_file_list_describes_every_kind() {
    let bytes = std::fs::read(&fixtures()[0]).unwrap();
    let pkg = Package::read(&mut Cursor::new(&bytes)).unwrap();
    let files = pkg.files().unwrap();
    let get = |name: &str| files.find(format!("{ROOT}/{name}")).unwrap();
    assert_eq!(get("dir").kind, Kind::Directory);
    assert_eq!(get("link-abs").kind, Kind::Symlink);
    assert_eq!(
        get("link-abs").link_target.as_deref(),
        Some(b"/etc/hostname".as_slice())
    );
    assert!(get("ghost.log").ghost);
    let suid = get("suid-cap");
    assert_eq!(suid.mode & 0o7777, 0o4755);
    assert_eq!(suid.caps.as_deref(), Some("cap_net_raw=ep"));
    let spaces = get("name with spaces");
    assert_eq!(
        (spaces.user.as_str(), spaces.group.as_str()),
        ("nobody", "nogroup")
    );
    assert_eq!(spaces.mode & 0o7777, 0o640);
    assert_eq!(files.link_set(get("hl-a")).len(), 3);
    assert!(files.link_set(get("small.txt")).is_empty());
    assert_eq!(get("dir/large.bin").size, 1048581);
    assert!(get("small.txt").mtime > 1_600_000_000);
}

/// Replace the first occurrence of `needle` in the payload of an
/// uncompressed package (the ufdio fixture).
fn tamper(needle: &[u8], with: &[u8]) -> Vec<u8> {
    let (i, _) = PAYLOADS
        .iter()
        .enumerate()
        .find(|(_, (p, _))| *p == "w.ufdio")
        .unwrap();
    let mut bytes = std::fs::read(&fixtures()[i]).unwrap();
    let pkg = Package::read(&mut Cursor::new(&bytes)).unwrap();
    let start = pkg.prefix().len();
    let at = start
        + bytes[start..]
            .windows(needle.len())
            .position(|w| w == needle)
            .expect("needle in payload");
    bytes[at..at + with.len()].copy_from_slice(with);
    bytes
}

#[test]
fn a_changed_file_fails_its_own_digest_before_the_payload_digest() {
    let bytes = tamper(b"hello\n", b"jello\n");
    match walk(&bytes) {
        Err(Error::FileDigestMismatch { path, .. }) => {
            assert_eq!(path, format!("{ROOT}/small.txt"))
        }
        other => panic!("expected a file digest mismatch, got {other:?}"),
    }
}

#[test]
fn a_changed_symlink_target_is_caught() {
    let bytes = tamper(b"/etc/hostname", b"/etc/shadow\0\0");
    match walk(&bytes) {
        Err(Error::EntryMismatch { path, .. }) => assert!(path.ends_with("link-abs")),
        other => panic!("expected an entry mismatch, got {other:?}"),
    }
}

#[test]
fn a_renamed_entry_is_not_in_the_header() {
    let bytes = tamper(b"name with spaces", b"name with spacex");
    match walk(&bytes) {
        Err(Error::UnknownEntry { name }) => assert!(name.ends_with("spacex")),
        other => panic!("expected an unknown entry, got {other:?}"),
    }
}

#[test]
fn a_payload_changed_outside_any_file_fails_the_payload_digest() {
    // Bytes after the cpio trailer belong to no file.
    let mut bytes = tamper(b"TRAILER!!!", b"TRAILER!!!");
    walk(&bytes).unwrap();
    bytes.extend_from_slice(&[0u8; 3]);
    match walk(&bytes) {
        Err(Error::PayloadDigestMismatch { .. }) => {}
        other => panic!("expected a payload digest mismatch, got {other:?}"),
    }
}

#[test]
fn truncated_payloads_fail() {
    let bytes = std::fs::read(&fixtures()[0]).unwrap();
    let pkg = Package::read(&mut Cursor::new(&bytes)).unwrap();
    let start = pkg.prefix().len();
    for cut in [start + 10, (start + bytes.len()) / 2, bytes.len() - 1] {
        assert!(walk(&bytes[..cut]).is_err(), "cut at {cut}");
    }
}
