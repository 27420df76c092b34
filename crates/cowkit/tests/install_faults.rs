//! Installs under faults (issue 14). The trust model of extents files:
//! without `--verify` an
//! `.rpme`'s bytes are installed as they are, so cowkit refuses one that
//! someone other than root or the user could have changed; with
//! `--verify` every file is hashed before it gets its name, so a tampered
//! `.rpme` leaves no wrong file under a final name. And a package with more
//! directories than the open-file limit.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{cowkit, run};
use cowkit_testutil::rpm::{fixture_in, write_owner_db, FIXTURE};
use cowkit_testutil::tree::{mkdir, snapshot};
use cowkit_testutil::{find, scratch, Fs};

fn install(root: &Path, pkg: &Path, extra: &[&str]) -> common::Run {
    run(cowkit()
        .arg("install")
        .args(extra)
        .arg("--root")
        .arg(root)
        .arg(pkg))
}

#[test]
fn a_tampered_rpme_never_puts_wrong_bytes_under_a_name_with_verify() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let rpm = fixture_in(Path::new(env!("CARGO_TARGET_TMPDIR")), "w19.zstdio");
    let rpme = d.join("pkg.rpme");
    let t = run(cowkit().arg("transcode").arg(&rpm).arg("-o").arg(&rpme));
    assert!(t.ok, "{}", t.stderr);
    let good = mkdir(&d.join("good"));
    write_owner_db(&good);
    let r = install(&good, &rpme, &["--verify"]);
    assert!(r.ok, "{}", r.stderr);
    let large = good.join(FIXTURE).join("dir/large.bin");
    let content = std::fs::read(&large).unwrap();

    // One byte of large.bin's extent flipped.
    let mut bytes = std::fs::read(&rpme).unwrap();
    let at = find(&bytes, &content[300_000..304_096]).expect("large.bin in the .rpme") + 100;
    bytes[at] ^= 0x20;
    let bad = d.join("bad.rpme");
    std::fs::write(&bad, &bytes).unwrap();

    let root = mkdir(&d.join("verified"));
    write_owner_db(&root);
    let r = install(&root, &bad, &["--verify"]);
    assert!(!r.ok, "a tampered .rpme installed with --verify");
    assert!(
        r.stderr.contains("does not match its header digest"),
        "{}",
        r.stderr
    );
    assert!(!root.join(FIXTURE).join("dir/large.bin").exists());
    for (p, _) in snapshot(&root) {
        let name = Path::new(&p)
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(!name.starts_with(".ck"), "a temporary was left: {p}");
    }

    // Without --verify the bytes are trusted, as documented.
    let trusting = mkdir(&d.join("trusting"));
    write_owner_db(&trusting);
    let r = install(&trusting, &bad, &[]);
    assert!(r.ok, "{}", r.stderr);
    assert_ne!(
        std::fs::read(trusting.join(FIXTURE).join("dir/large.bin")).unwrap(),
        content
    );

    // An .rpme anyone could have changed is refused unless verified.
    std::fs::set_permissions(&rpme, std::fs::Permissions::from_mode(0o666)).unwrap();
    let open = mkdir(&d.join("open"));
    write_owner_db(&open);
    let r = install(&open, &rpme, &[]);
    assert!(!r.ok, "a world-writable .rpme was trusted");
    assert!(r.stderr.contains("writable by everyone"), "{}", r.stderr);
    assert!(!open.join(FIXTURE).exists());
    let r = install(&open, &rpme, &["--verify"]);
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        std::fs::read(open.join(FIXTURE).join("dir/large.bin")).unwrap(),
        content
    );
}

/// A package with more directories than the open-file limit (1,500 at
/// `ulimit -n 256`, soft and hard) installs, from the `.rpm` and from its
/// `.rpme` (issue 14: it failed with EMFILE and left ~1,000 empty
/// directories).
#[test]
fn a_package_with_more_directories_than_the_fd_limit_installs() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let rpm = cowkit_testutil::rpm::build_rpm_cached(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "cowkit-many-dirs",
        "for i in $(seq 1 1500); do mkdir -p %{buildroot}/opt/many/d$i; echo $i > %{buildroot}/opt/many/d$i/f; done",
        "/opt/many",
        "w19.zstdio",
    );
    let rpme = d.join("many.rpme");
    let t = run(cowkit().arg("transcode").arg(&rpm).arg("-o").arg(&rpme));
    assert!(t.ok, "{}", t.stderr);
    for (what, pkg) in [("rpm", &rpm), ("rpme", &rpme)] {
        let root = mkdir(&d.join(format!("root-{what}")));
        write_owner_db(&root);
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -n 256 && exec {} install --no-db --root {} {}",
                env!("CARGO_BIN_EXE_cowkit"),
                root.display(),
                pkg.display()
            ))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{what}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(root.join("opt/many/d1234/f")).unwrap(),
            "1234\n"
        );
        assert_eq!(
            std::fs::read_dir(root.join("opt/many")).unwrap().count(),
            1500
        );
    }
}

/// A file name that is not UTF-8 in a header that declares `ENCODING:
/// utf-8` is refused with a clear error, not installed under a lossy name
/// (issue 14: it was installed as `caf�…`). Without that tag such a name
/// is installed byte for byte, as rpm does (issue 25 item 8, `rpm.rs`).
#[test]
fn a_name_that_is_not_utf8_is_refused_not_renamed() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let good = cowkit_testutil::rpm::build_rpm_cached(
        Path::new(env!("CARGO_TARGET_TMPDIR")),
        "cowkit-utf8-name",
        "mkdir -p %{buildroot}/opt/utf\necho x > '%{buildroot}/opt/utf/caf-\u{e9}-name'",
        "/opt/utf",
        "w9.gzdio",
    );
    let mut b = std::fs::read(&good).unwrap();
    cowkit_testutil::rpm::edit_header(&mut b, |h| {
        cowkit_testutil::rpm::replace_once(h, b"caf-\xc3\xa9-name", b"caf-\xe9\xff-name");
        // The tag is there: rpm >= 4.16 writes it for UTF-8 names.
        assert_eq!(cowkit_testutil::find(h, b"utf-8\0").map(|_| ()), Some(()));
    });
    let bad = d.join("bad-name.rpm");
    std::fs::write(&bad, &b).unwrap();
    let root = mkdir(&d.join("root"));
    let r = install(&root, &bad, &["--no-db"]);
    assert!(!r.ok, "a package with a non-UTF-8 name installed");
    assert!(
        r.stderr.contains(
            "a file name is not UTF-8 (`caf-\\xE9\\xFF-name`) although the header declares `ENCODING: utf-8`"
        ),
        "{}",
        r.stderr
    );
    assert!(!root.join("opt").exists(), "the root was touched");
    let t = run(cowkit()
        .arg("transcode")
        .arg(&bad)
        .arg("-o")
        .arg(d.join("x.rpme")));
    assert!(!t.ok);
    assert!(t.stderr.contains("UTF-8"), "{}", t.stderr);
    assert!(!d.join("x.rpme").exists());
}
