//! Installing RPM packages into roots on the rig's real filesystems: the
//! tree is the one `rpm2cpio | cpio -idm` extracts, with owners, times and
//! capabilities from the header; cloned files share their blocks with the
//! extents file; reinstalls replace; hostile roots and packages never
//! reach outside the root; damaged extents files are refused before
//! anything is written; `--verify` catches what the table cannot.
//!
//! Run on the rig: `bash scripts/rig.sh cargo test -p cowkit-install --test install`.

mod common;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use cowkit_extents::open::{Content, ExtentsFile};
use cowkit_fs::fiemap;
use cowkit_fs::{Chain, Method};
use cowkit_install::{Error, Options};
use cowkit_testutil::{scratch, Fs};

// ---------------------------------------------------------------------------
// 1. The same tree as rpm2cpio | cpio, owners and times from the header.

fn same_tree_as_rpm2cpio(fs: Fs) {
    let Some(dir) = scratch(fs) else { return };
    let caps = setcap_reference(dir.path());
    for payload in PAYLOADS {
        let what = format!("{fs:?} {payload}");
        let rpm = fixture(payload);
        let case = mkdir(&dir.path().join(payload));
        let rpme = case.join("pkg.rpme");
        transcode(&rpm, &rpme);
        let (a, b, c) = (
            mkdir(&case.join("a")),
            mkdir(&case.join("b")),
            case.join("c"),
        );
        write_owner_db(&a);
        write_owner_db(&b);
        let sa = install_ok(&a, &rpme);
        let sb = install_ok(&b, &rpm);
        cpio_extract(&rpm, &c);
        let (ta, tb, tc) = (snapshot(&a), snapshot(&b), snapshot(&c));
        assert_eq!(top_level(&ta), ["etc", "usr"], "{what}: from .rpme");
        assert_eq!(top_level(&tb), ["etc", "usr"], "{what}: from .rpm");
        assert_eq!(top_level(&tc), ["usr"], "{what}: cpio");
        let (ua, ub, uc) = (under(&ta, "usr"), under(&tb, "usr"), under(&tc, "usr"));

        // Types, permissions (setuid included), sizes, contents, link targets.
        let d = diff(&ua, &uc, Entry::shape);
        assert!(d.is_empty(), "{what}: .rpme install vs cpio: {d:#?}");
        let d = diff(&ub, &uc, Entry::shape);
        assert!(d.is_empty(), "{what}: .rpm install vs cpio: {d:#?}");

        // Hardlink sets.
        let want = expected_hardlinks(FIXTURE);
        assert_eq!(hardlink_groups(&uc), want, "{what}: cpio's hardlinks");
        assert_eq!(hardlink_groups(&ua), want, "{what}: .rpme hardlinks");
        assert_eq!(hardlink_groups(&ub), want, "{what}: .rpm hardlinks");

        // Owners, times, capabilities: the header's (cpio has none of those
        // right: every owner is 0, and a cpio archive carries no xattrs).
        let header = header_files(&rpm);
        assert_as_the_header_says(&format!("{what} .rpme"), &ua, &header, &caps);
        assert_as_the_header_says(&format!("{what} .rpm"), &ub, &header, &caps);
        assert_eq!(uc[&format!("{FIXTURE}/suid-cap")].caps, None);
        for (t, root) in [(&ua, &a), (&ub, &b)] {
            let s = &t[&format!("{FIXTURE}/suid-cap")];
            assert_eq!(
                s.perm, 0o4755,
                "{what}: setuid kept after the caps were set"
            );
            let n = &t[&format!("{FIXTURE}/name with spaces")];
            assert_eq!((n.uid, n.gid, n.perm), (65534, 65534, 0o640), "{what}");
            assert_eq!(t[&format!("{FIXTURE}/emptydir")].kind, 'd');
            assert!(is_empty_dir(&root.join(FIXTURE).join("emptydir")));
            assert!(!t.contains_key(&format!("{FIXTURE}/ghost.log")));
        }

        // The summaries count what the header lists.
        let regular = header
            .iter()
            .filter(|h| !h.ghost && h.mode & 0o170000 == 0o100000)
            .count() as u64;
        for (s, how) in [(&sa, ".rpme"), (&sb, ".rpm")] {
            assert_eq!(s.packages, 1, "{what} {how}");
            assert_eq!(s.files, regular, "{what} {how}");
            assert_eq!(s.hardlinks, 2, "{what} {how}");
            assert_eq!(s.symlinks, 2, "{what} {how}");
            assert_eq!(s.directories, 4, "{what} {how}");
            assert_eq!(s.ghosts, 1, "{what} {how}");
            assert!(s.warnings.is_empty(), "{what} {how}: {:?}", s.warnings);
        }
        assert!(temporary_names(&a).is_empty() && temporary_names(&b).is_empty());
        std::fs::remove_dir_all(&case).unwrap();
    }
}

#[test]
fn same_tree_as_rpm2cpio_on_xfs() {
    same_tree_as_rpm2cpio(Fs::Xfs);
}

#[test]
fn same_tree_as_rpm2cpio_on_btrfs() {
    same_tree_as_rpm2cpio(Fs::Btrfs);
}

#[test]
fn same_tree_as_rpm2cpio_on_ext4() {
    same_tree_as_rpm2cpio(Fs::Ext4);
}

#[test]
fn same_tree_as_rpm2cpio_on_tmpfs() {
    same_tree_as_rpm2cpio(Fs::Tmpfs);
}

// ---------------------------------------------------------------------------
// 2. Cloned files share their blocks with the extents file.

const CLONED: [&str; 2] = ["dir/large.bin", "dir/sub/same-content.bin"];

fn physical_ranges(p: &Path) -> Vec<(u64, u64)> {
    fiemap::extents(File::open(p).unwrap(), true)
        .unwrap()
        .iter()
        .map(|e| (e.physical, e.physical + e.length))
        .collect()
}

fn shares_blocks_with_the_extents_file(fs: Fs) {
    let Some(dir) = scratch(fs) else { return };
    let rpm = fixture("w19.zstdio");
    let rpme = dir.path().join("pkg.rpme");
    transcode(&rpm, &rpme);
    let source = physical_ranges(&rpme);
    let block = 4096;
    let aligned = LARGE / block * block;

    // By default a file's partial last block is written, not cloned (see
    // `Options::clone_tail`); with `clone_tail` every block is cloned.
    for clone_tail in [false, true] {
        let what = format!("{fs:?}, clone_tail {clone_tail}");
        let a = mkdir(&dir.path().join(format!("a-{clone_tail}")));
        let opts = Options {
            clone_tail,
            ..Options::default()
        };
        let sa = install_with(&a, &rpme, &opts).unwrap();
        let cloned = if clone_tail { LARGE } else { aligned };
        assert_eq!(sa.tally.bytes.cloned, 2 * cloned, "{what}: {sa:?}");
        assert_eq!(sa.tally.bytes.copied, 0, "{what}: {sa:?}");
        assert_eq!(
            sa.tally.files_by_method.get(&cowkit_fs::Method::Clone),
            Some(&2),
            "{what}: {sa:?}"
        );
        assert!(sa.tally.fallbacks.is_empty(), "{what}: {sa:?}");
        for rel in CLONED {
            let p = a.join(FIXTURE).join(rel);
            assert_eq!(file_sha(&p), expected_sha(rel), "{what} {rel}");
            let ext = fiemap::extents(File::open(&p).unwrap(), true).unwrap();
            assert!(!ext.is_empty(), "{what} {rel}: no extents");
            // XFS unshares the block a truncate cuts: a cloned tail is
            // shared only on Btrfs.
            let tail_shared = clone_tail && fs == Fs::Btrfs;
            for e in ext.iter().filter(|e| tail_shared || e.logical < aligned) {
                assert!(e.is_shared(), "{what} {rel}: extent not shared: {e:?}");
                let inside = source
                    .iter()
                    .any(|&(s, t)| s <= e.physical && e.physical + e.length <= t);
                assert!(
                    inside,
                    "{what} {rel}: extent {e:?} is not in the extents file's blocks {source:?}"
                );
            }
            let (shared, _) = fiemap::shared_bytes(File::open(&p).unwrap()).unwrap();
            assert!(shared >= aligned, "{what} {rel}: {shared} bytes shared");
        }
        // Small files are packed and written, not cloned.
        let small = File::open(a.join(FIXTURE).join("ends-mid-block")).unwrap();
        let (shared, _) = fiemap::shared_bytes(small).unwrap();
        assert_eq!(shared, 0, "{what}: a packed file was cloned");
    }

    // From the .rpm nothing is shared.
    let b = mkdir(&dir.path().join("b"));
    let sb = install_ok(&b, &rpm);
    assert_eq!(sb.tally.bytes.cloned, 0, "{fs:?}: {sb:?}");
    for rel in CLONED {
        let p = b.join(FIXTURE).join(rel);
        assert_eq!(file_sha(&p), expected_sha(rel), "{fs:?} {rel} from .rpm");
        let (shared, total) = fiemap::shared_bytes(File::open(&p).unwrap()).unwrap();
        assert_eq!(shared, 0, "{fs:?} {rel} from .rpm shares blocks ({total})");
    }

    // `--reflink never`: the same tree, nothing shared.
    let c = mkdir(&dir.path().join("c"));
    let never = Options {
        chain: Chain::only(Method::ReadWrite),
        ..Options::default()
    };
    let sc = install_with(&c, &rpme, &never).unwrap();
    assert_eq!(
        (sc.tally.bytes.cloned, sc.tally.bytes.copied),
        (0, 0),
        "{sc:?}"
    );
    for rel in CLONED {
        let p = c.join(FIXTURE).join(rel);
        assert_eq!(file_sha(&p), expected_sha(rel));
        let (shared, _) = fiemap::shared_bytes(File::open(&p).unwrap()).unwrap();
        assert_eq!(shared, 0, "{fs:?} {rel}: shared with --reflink never");
    }
    let d = diff(&snapshot(&b), &snapshot(&c), Entry::shape);
    assert!(d.is_empty(), "{d:#?}");
}

#[test]
fn clones_share_every_extent_with_the_extents_file_on_xfs() {
    shares_blocks_with_the_extents_file(Fs::Xfs);
}

#[test]
fn clones_share_every_extent_with_the_extents_file_on_btrfs() {
    shares_blocks_with_the_extents_file(Fs::Btrfs);
}

#[test]
fn ext4_falls_back_to_copying_and_installs_the_same_tree() {
    let Some(dir) = scratch(Fs::Ext4) else { return };
    let rpm = fixture("w19.zstdio");
    let rpme = dir.path().join("pkg.rpme");
    transcode(&rpm, &rpme);
    let (a, b) = (mkdir(&dir.path().join("a")), mkdir(&dir.path().join("b")));
    write_owner_db(&a);
    write_owner_db(&b);
    let sa = install_ok(&a, &rpme);
    install_ok(&b, &rpm);
    assert_eq!(sa.tally.bytes.cloned, 0, "{sa:?}");
    assert_eq!(sa.tally.bytes.copied, 2 * LARGE, "{sa:?}");
    assert_eq!(
        sa.tally
            .files_by_method
            .get(&cowkit_fs::Method::CopyFileRange),
        Some(&2),
        "{sa:?}"
    );
    assert!(!sa.tally.fallbacks.is_empty(), "{sa:?}");
    assert!(
        sa.tally
            .fallbacks
            .keys()
            .all(|k| k.starts_with("clone refused: EOPNOTSUPP")),
        "{:?}",
        sa.tally.fallbacks
    );
    let (ta, tb) = (snapshot(&a), snapshot(&b));
    let d = diff(&ta, &tb, |e| (e.shape(), e.uid, e.gid, e.caps.clone()));
    assert!(d.is_empty(), "{d:#?}");
    let header = header_files(&rpm);
    let caps = setcap_reference(dir.path());
    assert_as_the_header_says("ext4 .rpme", &ta, &header, &caps);
    assert_eq!(hardlink_groups(&ta), expected_hardlinks(FIXTURE));

    // `--reflink always` refuses, and leaves no temporary file behind.
    let c = mkdir(&dir.path().join("c"));
    let always = Options {
        chain: Chain::only(Method::Clone),
        ..Options::default()
    };
    let err = install_with(&c, &rpme, &always).unwrap_err();
    assert!(chain(&err).contains("EOPNOTSUPP"), "{}", chain(&err));
    assert_eq!(temporary_names(&c), Vec::<String>::new());
    assert!(!c.join(FIXTURE).join("dir/large.bin").exists());
}

#[test]
fn an_extents_file_on_another_filesystem_falls_back_with_exdev() {
    let (Some(src), Some(dst)) = (scratch(Fs::Xfs2), scratch(Fs::Xfs)) else {
        return;
    };
    let rpme = src.path().join("pkg.rpme");
    transcode(&fixture("w19.zstdio"), &rpme);
    let s = install_ok(dst.path(), &rpme);
    assert_eq!(s.tally.bytes.cloned, 0, "{s:?}");
    assert!(
        s.tally.fallbacks.keys().any(|k| k.contains("EXDEV")),
        "{:?}",
        s.tally.fallbacks
    );
    for rel in CLONED {
        assert_eq!(
            file_sha(&dst.path().join(FIXTURE).join(rel)),
            expected_sha(rel)
        );
    }
}

// Regression (found by this test): an extents file aligned to fewer bytes
// than the target filesystem's block (`--block-size 512`, or a 4096-byte
// file on a 64 KiB-block Btrfs) made FICLONERANGE fail with EINVAL after an
// earlier clone had worked, which is fatal. The installer now aligns to the
// larger block size, so such extents are found misaligned and written.
#[test]
fn an_extents_file_aligned_below_the_filesystem_block_still_installs() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpm = fixture("w19.zstdio");
    let rpme = dir.path().join("pkg.rpme");
    let opts = cowkit_extents::transcode::Options {
        block_size: 512,
        pack_below: 0,
    };
    transcode_with(&rpm, &rpme, &opts);
    let root = mkdir(&dir.path().join("root"));
    let verify = Options {
        verify: true,
        ..Options::default()
    };
    let s =
        install_with(&root, &rpme, &verify).unwrap_or_else(|e| panic!("install: {}", chain(&e)));
    assert_eq!(s.verified, 11);
    let d = diff(
        &under(cpio_tree(), FIXTURE),
        &under(&snapshot(&root), FIXTURE),
        Entry::shape,
    );
    assert!(d.is_empty(), "{d:#?}");
}

// ---------------------------------------------------------------------------
// 3. Existing files are replaced; nothing is left under a temporary name.

#[test]
fn a_second_install_replaces_every_changed_file_and_leaves_no_temporary_names() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpm = fixture("w19.zstdio");
    let rpme = dir.path().join("pkg.rpme");
    transcode(&rpm, &rpme);
    let root = mkdir(&dir.path().join("root"));
    write_owner_db(&root);
    install_ok(&root, &rpme);
    let first = snapshot(&root);
    let f = root.join(FIXTURE);
    let header = header_files(&rpm);
    let caps = setcap_reference(dir.path());

    for pkg in [&rpme, &rpm] {
        // Damage the installed tree in every way a file can differ.
        std::fs::write(f.join("small.txt"), "changed\n").unwrap();
        OpenOptions::new()
            .write(true)
            .open(f.join("dir/large.bin"))
            .unwrap()
            .set_len(10)
            .unwrap();
        std::fs::remove_file(f.join("hl-b")).unwrap();
        std::fs::write(f.join("hl-b"), "not a link any more\n").unwrap();
        std::fs::remove_file(f.join("link-rel")).unwrap();
        std::os::unix::fs::symlink("elsewhere", f.join("link-rel")).unwrap();
        std::fs::remove_dir(f.join("emptydir")).unwrap();
        std::os::unix::fs::chown(f.join("name with spaces"), Some(0), Some(0)).unwrap();
        let set_mode = |p: &str, m: u32| {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(f.join(p), std::fs::Permissions::from_mode(m)).unwrap();
        };
        set_mode("ends-mid-block", 0o600);
        set_mode("dir", 0o700);
        std::fs::write(f.join("not-from-the-package"), "mine\n").unwrap();
        let ino_before = std::fs::metadata(f.join("dir/large.bin")).unwrap().ino();

        let s = install_ok(&root, pkg);
        assert_eq!(s.hardlinks, 2);
        let again = snapshot(&root);
        let d = diff(&first, &again, |e| {
            (e.shape(), e.uid, e.gid, e.caps.clone())
        });
        assert_eq!(
            d,
            [format!(
                "{FIXTURE}/not-from-the-package: only in the second tree"
            )],
            "{}",
            pkg.display()
        );
        assert_eq!(
            hardlink_groups(&under(&again, FIXTURE)),
            expected_hardlinks(FIXTURE)
        );
        // Replaced by a rename, not rewritten in place.
        assert_ne!(
            std::fs::metadata(f.join("dir/large.bin")).unwrap().ino(),
            ino_before
        );
        assert_eq!(temporary_names(&root), Vec::<String>::new());
        let mut listed = again.clone();
        listed.remove(&format!("{FIXTURE}/not-from-the-package"));
        assert_as_the_header_says(&pkg.display().to_string(), &listed, &header, &caps);
        std::fs::remove_file(f.join("not-from-the-package")).unwrap();
    }
}

#[test]
fn existing_files_are_replaced_and_directory_symlinks_followed_inside_the_root() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpme = dir.path().join("pkg.rpme");
    transcode(&fixture("w19.zstdio"), &rpme);
    let root = mkdir(&dir.path().join("root"));
    write_owner_db(&root);
    let f = mkdir(&root.join(FIXTURE));
    // A file with other content and mode at a package path.
    std::fs::write(
        f.join("small.txt"),
        "old content, longer than the new one\n",
    )
    .unwrap();
    // A symlink at a file path: replaced, never written through.
    std::os::unix::fs::symlink("/etc/passwd", f.join("hl-a")).unwrap();
    std::os::unix::fs::symlink("../../../etc/group", f.join("ends-mid-block")).unwrap();
    // A directory symlink at a directory path: followed, as rpm does.
    mkdir(&f.join("real-dir"));
    std::os::unix::fs::symlink("real-dir", f.join("dir")).unwrap();

    install_ok(&root, &rpme);

    assert_eq!(std::fs::read(f.join("small.txt")).unwrap(), b"hello\n");
    for rel in ["hl-a", "ends-mid-block"] {
        let m = std::fs::symlink_metadata(f.join(rel)).unwrap();
        assert!(m.is_file(), "{rel} is still a symlink");
        assert_eq!(file_sha(&f.join(rel)), expected_sha(rel));
    }
    assert_eq!(
        std::fs::read_to_string(root.join("etc/passwd")).unwrap(),
        PASSWD
    );
    assert_eq!(
        std::fs::read_to_string(root.join("etc/group")).unwrap(),
        GROUP
    );
    assert_eq!(
        std::fs::read_link(f.join("dir")).unwrap(),
        Path::new("real-dir")
    );
    for rel in ["large.bin", "sub/same-content.bin", "hl-c"] {
        assert_eq!(
            file_sha(&f.join("real-dir").join(rel)),
            expected_sha(&format!("dir/{rel}")),
            "{rel}"
        );
    }
    let ino = |p: &str| std::fs::metadata(f.join(p)).unwrap().ino();
    assert_eq!(ino("dir/hl-c"), ino("hl-a"));
    assert_eq!(ino("hl-b"), ino("hl-a"));
    assert_eq!(temporary_names(&root), Vec::<String>::new());
}

#[test]
fn a_failed_install_keeps_the_installed_file_and_leaves_no_temporary_names() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpm = fixture("w.ufdio");
    let root = mkdir(&dir.path().join("root"));
    install_ok(&root, &rpm);
    let large = root.join(FIXTURE).join("dir/large.bin");
    let ino = std::fs::metadata(&large).unwrap().ino();

    // One byte of large.bin's content in the (uncompressed) payload.
    let mut b = std::fs::read(&rpm).unwrap();
    let (_, payload) = header_range(&b);
    let at = payload + find(&b[payload..], b"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n").unwrap();
    b[at + 500_000] ^= 0x01;
    let bad = dir.path().join("bad.rpm");
    std::fs::write(&bad, &b).unwrap();

    let err = install_with(&root, &bad, &Options::default()).unwrap_err();
    let msg = chain(&err);
    assert!(msg.contains("large.bin") && msg.contains("digest"), "{msg}");
    assert_eq!(file_sha(&large), expected_sha("dir/large.bin"));
    assert_eq!(std::fs::metadata(&large).unwrap().ino(), ino);
    assert_eq!(temporary_names(&root), Vec::<String>::new());
}

#[test]
fn a_directory_where_the_package_has_a_file_is_an_error_without_leftovers() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpme = dir.path().join("pkg.rpme");
    transcode(&fixture("w19.zstdio"), &rpme);
    for pkg in [&rpme, &fixture("w19.zstdio")] {
        let root = mkdir(&dir.path().join("root"));
        let f = mkdir(&root.join(FIXTURE));
        mkdir(&f.join("dir/large.bin/inside"));
        // A ghost that exists is left alone.
        std::fs::write(f.join("ghost.log"), "logged\n").unwrap();
        let err = install_with(&root, pkg, &Options::default()).unwrap_err();
        assert!(chain(&err).contains("large.bin"), "{}", chain(&err));
        assert!(f.join("dir/large.bin/inside").is_dir());
        assert_eq!(std::fs::read(f.join("ghost.log")).unwrap(), b"logged\n");
        assert_eq!(temporary_names(&root), Vec::<String>::new());
        std::fs::remove_dir_all(&root).unwrap();
    }
}

/// A package with 300 files in five directories (more than one batch of
/// work per thread), hardlinks across directories, cloned files, and a
/// setuid-setgid file with capabilities owned by `nobody:nogroup` (the
/// owner must be set before the capabilities and the mode, or chown
/// clears both).
fn many_files_rpm() -> PathBuf {
    build_rpm(
        "cowkit-many",
        "r=%{buildroot}/opt/many\n\
         for d in 0 1 2 3 4; do mkdir -p $r/d$d\n\
           for i in $(seq 1 60); do printf 'file %s %s\\n' $d $i > $r/d$d/f$i; done\n\
         done\n\
         for i in 1 2 3 4 5 6; do seq $i 9999999 | head -c $((65536 + i * 4099)) > $r/d$((i % 5))/big$i; done\n\
         ln $r/d0/f1 $r/d4/link-to-d0-f1\n\
         ln $r/d1/big1 $r/d3/link-to-big1\n\
         printf '#!/bin/sh\\n' > $r/suid-nobody",
        "%dir /opt/many\n/opt/many/d0\n/opt/many/d1\n/opt/many/d2\n/opt/many/d3\n/opt/many/d4\n\
         %attr(6755,nobody,nogroup) %caps(cap_net_admin=ep) /opt/many/suid-nobody",
        "w19.zstdio",
    )
}

/// [`many_files_rpm`], its extents file in `dir`, and its tree as
/// `rpm2cpio | cpio` extracts it (below `opt/many`).
fn many_files_in(dir: &Path) -> (PathBuf, PathBuf, Tree) {
    let rpm = many_files_rpm();
    let rpme = dir.join("many.rpme");
    transcode(&rpm, &rpme);
    let c = dir.join("cpio");
    cpio_extract(&rpm, &c);
    let expected = snapshot(&c.join("opt/many"));
    (rpm, rpme, expected)
}

#[test]
fn several_threads_install_the_same_tree_as_one() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let (rpm, rpme, expected) = many_files_in(dir.path());
    assert_eq!(expected.values().filter(|e| e.kind == 'f').count(), 309);
    let mut trees = Vec::new();
    for threads in [1, 4] {
        for pkg in [&rpme, &rpm] {
            let root = mkdir(&dir.path().join(format!("root-{threads}-{}", trees.len())));
            write_owner_db(&root);
            let opts = Options {
                threads,
                ..Options::default()
            };
            let s = install_with(&root, pkg, &opts).unwrap();
            assert_eq!((s.files, s.hardlinks), (309, 2), "{threads} threads");
            let t = snapshot(&root.join("opt/many"));
            let d = diff(&expected, &t, Entry::shape);
            assert!(d.is_empty(), "{threads} threads, {}: {d:#?}", pkg.display());
            assert_eq!(
                hardlink_groups(&t),
                [
                    vec!["d0/f1".to_string(), "d4/link-to-d0-f1".to_string()],
                    vec!["d1/big1".to_string(), "d3/link-to-big1".to_string()],
                ]
                .into()
            );
            let suid = &t["suid-nobody"];
            assert_eq!((suid.uid, suid.gid, suid.perm), (65534, 65534, 0o6755));
            let caps = suid.caps.as_deref().expect("capabilities set");
            assert_eq!(caps.len(), 20, "{caps:?}"); // VFS_CAP_REVISION_2
            assert_eq!(temporary_names(&root), Vec::<String>::new());
            trees.push(t);
        }
    }
    let d = diff(&trees[0], &trees[2], |e| {
        (e.shape(), e.uid, e.gid, e.mtime, e.caps.clone())
    });
    assert!(d.is_empty(), "1 vs 4 threads: {d:#?}");
}

/// Made `rel` (a directory, with a file `theirs` in it) in the root the
/// first time a file is reported placed: as another package of the
/// transaction, or another process, would while this install's new
/// directories are still under their temporary names.
struct MakesDirMeanwhile {
    root: PathBuf,
    rel: &'static str,
    done: std::sync::Once,
}

impl cowkit_install::Progress for MakesDirMeanwhile {
    fn on_file(&self) {
        self.done.call_once(|| {
            let d = self.root.join(self.rel);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("theirs"), b"kept\n").unwrap();
        });
    }
}

#[test]
fn a_new_directory_made_meanwhile_by_someone_else_is_merged_into() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let (rpm, rpme, expected) = many_files_in(dir.path());
    // The top of the new tree (`opt`), and a directory inside it that the
    // package has too (`opt/many/d2`).
    for rel in ["opt", "opt/many/d2"] {
        for pkg in [&rpme, &rpm] {
            let root = mkdir(&dir.path().join(format!("root-{}", rel.replace('/', "-"))));
            write_owner_db(&root);
            let r = cowkit_fs::root::Root::open(&root).unwrap();
            let owners = cowkit_install::Owners::load(&r);
            let progress = MakesDirMeanwhile {
                root: root.clone(),
                rel,
                done: std::sync::Once::new(),
            };
            let opts = Options {
                threads: 2,
                ..Options::default()
            };
            let s = cowkit_install::install(&r, &owners, pkg, &opts, &progress).unwrap();
            assert!(progress.done.is_completed());
            assert_eq!(s.files, 309);
            assert_eq!(
                std::fs::read(root.join(rel).join("theirs")).unwrap(),
                b"kept\n"
            );
            std::fs::remove_file(root.join(rel).join("theirs")).unwrap();
            let t = snapshot(&root.join("opt/many"));
            let d = diff(&expected, &t, Entry::shape);
            assert!(d.is_empty(), "{rel}, {}: {d:#?}", pkg.display());
            assert_eq!(temporary_names(&root), Vec::<String>::new());
            std::fs::remove_dir_all(&root).unwrap();
        }
    }
}

#[test]
fn device_nodes_fifos_and_special_directory_modes_match_cpio() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpm = build_rpm(
        "cowkit-nodes",
        "mkdir -p %{buildroot}/opt/dev/tmp %{buildroot}/opt/dev/sgid\n\
         mkfifo %{buildroot}/opt/dev/fifo\n\
         echo x > %{buildroot}/opt/dev/sgid/file",
        "%dir /opt/dev\n/opt/dev/fifo\n\
         %dev(c, 1, 3) /opt/dev/null\n\
         %attr(0620,root,root) %dev(c, 4, 64) /opt/dev/tty\n\
         %dev(b, 7, 200) /opt/dev/loop200\n\
         %dir %attr(1777,root,root) /opt/dev/tmp\n\
         %dir %attr(2750,root,root) /opt/dev/sgid\n\
         /opt/dev/sgid/file",
        "w.ufdio",
    );
    let rpme = dir.path().join("nodes.rpme");
    transcode(&rpm, &rpme);
    let c = dir.path().join("cpio");
    cpio_extract(&rpm, &c);
    let expected = snapshot(&c.join("opt/dev"));
    assert_eq!(expected["null"].rdev, Some((1, 3)));
    for pkg in [&rpme, &rpm] {
        let root = mkdir(&dir.path().join("root"));
        let s = install_ok(&root, pkg);
        assert_eq!((s.nodes, s.skipped_nodes), (4, 0), "{}", pkg.display());
        let t = snapshot(&root.join("opt/dev"));
        let d = diff(&expected, &t, Entry::shape);
        assert!(d.is_empty(), "{}: {d:#?}", pkg.display());
        assert_as_the_header_says_under(pkg, &root, "opt/dev");
        std::fs::remove_dir_all(&root).unwrap();
    }
}

// Regression (found by this test): files, symlinks and directories created
// in an existing setgid directory (Debian's /usr/local is `2775 root:staff`)
// inherit its group; the installer skipped the chown when the header's group
// was its own, so they kept the inherited one. It now compares with the
// group a new entry really gets, and with the actual owner of directories.
#[test]
fn header_groups_win_over_a_setgid_directory() {
    installed_as_the_header_says("into a setgid directory", |root| {
        let f = mkdir(&root.join(FIXTURE));
        std::os::unix::fs::chown(&f, Some(0), Some(65534)).unwrap();
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o2775)).unwrap();
    });
}

// Regression (found by this test): files whose header mode the umask keeps
// are created with that mode and no fchmod; a default ACL on the directory
// replaces the umask, so they got the ACL's bits. The fchmod is now skipped
// only where the parent has no default ACL.
#[test]
fn header_modes_win_over_a_default_acl() {
    installed_as_the_header_says("under a default ACL", |root| {
        let d = mkdir(&root.join(FIXTURE).join("dir"));
        let out = Command::new("setfacl")
            .args(["-d", "-m", "u::rwx,g::---,o::---"])
            .arg(&d)
            .output()
            .expect("run setfacl (Debian package `acl`)");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

/// Installs the fixture, as `.rpme` and as `.rpm`, each into a fresh root with an owner
/// database that `prepare` has changed first, and checks the result against the header
/// (`what`: how the root was prepared).
fn installed_as_the_header_says(what: &str, prepare: impl Fn(&Path)) {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpm = fixture("w19.zstdio");
    let rpme = dir.path().join("pkg.rpme");
    transcode(&rpm, &rpme);
    let caps = setcap_reference(dir.path());
    for pkg in [&rpme, &rpm] {
        let root = mkdir(&dir.path().join("root"));
        write_owner_db(&root);
        prepare(&root);
        install_ok(&root, pkg);
        let what = format!("{} {what}", pkg.display());
        assert_as_the_header_says(&what, &snapshot(&root), &header_files(&rpm), &caps);
        std::fs::remove_dir_all(&root).unwrap();
    }
}

// ---------------------------------------------------------------------------
// 4. Hostile roots and packages never write outside the root.

#[test]
fn symlinks_already_in_the_root_resolve_inside_it() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let outside = Outside::new(dir.path().join("outside"));
    // An `etc` outside the root whose ids must never be used.
    let host_etc = Outside::with(
        dir.path().join("host-etc"),
        &[
            ("passwd", "nobody:x:4242:4242::/:/bin/false\n"),
            ("group", "nogroup:x:4242:\n"),
        ],
    );
    let rpm = fixture("w19.zstdio");
    let rpme = dir.path().join("pkg.rpme");
    transcode(&rpm, &rpme);
    let up = "../".repeat(16);
    let out_rel = outside.dir.strip_prefix("/").unwrap().to_str().unwrap();

    // (symlink inside the root, its target, where the fixture must land
    // when the target exists inside the root)
    let cases: [(&str, String, String); 3] = [
        (
            "usr",
            outside.dir.to_str().unwrap().into(),
            format!("{out_rel}/share/cowkit-fixture"),
        ),
        (
            "usr/share",
            format!("{up}{out_rel}"),
            format!("{out_rel}/cowkit-fixture"),
        ),
        (
            "usr/share/cowkit-fixture",
            format!("{up}{out_rel}"),
            out_rel.to_string(),
        ),
    ];
    for (n, (link, target, lands)) in cases.iter().enumerate() {
        for (m, pkg) in [&rpm, &rpme].into_iter().enumerate() {
            let root = dir.path().join(format!("root-{n}-{m}"));
            let l = root.join(link);
            mkdir(l.parent().unwrap());
            std::os::unix::fs::symlink(target, &l).unwrap();
            // The root's etc is the host's, by an absolute symlink.
            std::os::unix::fs::symlink(&host_etc.dir, root.join("etc")).unwrap();
            let what = format!("{link} -> {target} ({})", pkg.display());

            // The target does not exist inside the root: the install fails
            // (as rpm's does) and writes nothing outside. Where the
            // symlink is a directory the package lists itself, rpm (and
            // cowkit) replaces the link with the directory, inside the
            // root; the link is then made again for what follows.
            let r = install_with(&root, pkg, &Options::default());
            if *link == "usr/share/cowkit-fixture" {
                r.unwrap_or_else(|e| panic!("{what}: {}", chain(&e)));
                let m = std::fs::symlink_metadata(&l).unwrap();
                assert!(m.is_dir(), "{what}: the link was not replaced");
                outside.assert_untouched(&what);
                std::fs::remove_dir_all(&l).unwrap();
                std::os::unix::fs::symlink(target, &l).unwrap();
            } else {
                assert!(r.is_err(), "{what}: installed through a dangling symlink");
            }
            outside.assert_untouched(&what);

            // It does: the files land there, inside the root.
            mkdir(&in_root(&root, &outside.dir));
            let s = install_with(&root, pkg, &Options::default())
                .unwrap_or_else(|e| panic!("{what}: {}", chain(&e)));
            let f = root.join(lands);
            assert_eq!(
                file_sha(&f.join("dir/large.bin")),
                expected_sha("dir/large.bin")
            );
            assert_eq!(std::fs::read(f.join("small.txt")).unwrap(), b"hello\n");
            outside.assert_untouched(&what);
            host_etc.assert_untouched(&what);
            // Owners were looked up in the root's etc (it has none), never
            // through the symlink in the host's.
            let m = std::fs::metadata(f.join("name with spaces")).unwrap();
            assert_eq!((m.uid(), m.gid()), (0, 0), "{what}");
            assert!(
                s.warnings.iter().any(|w| w.contains("nobody")),
                "{what}: {:?}",
                s.warnings
            );
            assert_eq!(temporary_names(&root), Vec::<String>::new());
        }
    }
}

#[test]
fn a_symlink_from_one_package_cannot_lead_another_outside_the_root() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let outside = Outside::new(dir.path().join("outside"));
    let target = outside.dir.to_str().unwrap();
    let pkg1 = build_rpm_in(
        dir.path(),
        "cowkit-escape-link",
        &format!("mkdir -p %{{buildroot}}/opt\nln -s {target} %{{buildroot}}/opt/esc"),
        "/opt/esc",
        "w.ufdio",
    );
    let pkg2 = build_rpm_in(
        dir.path(),
        "cowkit-escape-file",
        "mkdir -p %{buildroot}/opt/esc\n\
         head -c 20000 /dev/zero | tr '\\0' p > %{buildroot}/opt/esc/pwned\n\
         echo small > %{buildroot}/opt/esc/pwned-small",
        "/opt/esc/pwned\n/opt/esc/pwned-small",
        "w.ufdio",
    );
    let rpme1 = dir.path().join("1.rpme");
    let rpme2 = dir.path().join("2.rpme");
    transcode(&pkg1, &rpme1);
    transcode(&pkg2, &rpme2);

    for (how, p1, p2) in [("rpm", &pkg1, &pkg2), ("rpme", &rpme1, &rpme2)] {
        let root = mkdir(&dir.path().join(format!("root-{how}")));
        install_ok(&root, p1);
        assert_eq!(
            std::fs::read_link(root.join("opt/esc")).unwrap(),
            outside.dir,
            "{how}"
        );
        // The link's target does not exist inside the root.
        let r = install_with(&root, p2, &Options::default());
        assert!(r.is_err(), "{how}: installed through a dangling symlink");
        outside.assert_untouched(how);
        assert!(
            regular_files(&root).is_empty(),
            "{how}: {:?}",
            regular_files(&root)
        );

        // It does: pwned lands inside the root.
        let inside = mkdir(&in_root(&root, &outside.dir));
        let s = install_with(&root, p2, &Options::default())
            .unwrap_or_else(|e| panic!("{how}: {}", chain(&e)));
        assert_eq!(s.files, 2);
        assert_eq!(
            std::fs::read(inside.join("pwned")).unwrap(),
            vec![b'p'; 20000]
        );
        assert_eq!(
            std::fs::read(inside.join("pwned-small")).unwrap(),
            b"small\n"
        );
        outside.assert_untouched(how);
        assert_eq!(temporary_names(&root), Vec::<String>::new());
    }
}

#[test]
fn a_header_path_with_dotdot_is_refused_before_anything_is_written() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let outside = Outside::new(dir.path().join("outside"));
    let rpm = fixture("w.ufdio");
    let good_rpme = dir.path().join("good.rpme");
    transcode(&rpm, &good_rpme);
    // Same length as `name with spaces`, so that only the string changes.
    for (n, evil) in ["../../../../evil", "a/../../../../ev", "/../../../../evi"]
        .into_iter()
        .enumerate()
    {
        let mut b = std::fs::read(&rpm).unwrap();
        edit_header(&mut b, |h| {
            replace_once(h, b"name with spaces", evil.as_bytes())
        });
        let bad = dir.path().join(format!("bad-{n}.rpm"));
        std::fs::write(&bad, &b).unwrap();
        let mut x = std::fs::read(&good_rpme).unwrap();
        edit_header(&mut x, |h| {
            replace_once(h, b"name with spaces", evil.as_bytes())
        });
        refresh_footer(&mut x);
        let bad_rpme = dir.path().join(format!("bad-{n}.rpme"));
        std::fs::write(&bad_rpme, &x).unwrap();

        for pkg in [&bad, &bad_rpme] {
            let root = mkdir(&dir.path().join(format!("root-{n}")));
            let err = install_with(&root, pkg, &Options::default()).unwrap_err();
            assert!(
                matches!(err, Error::BadPath(_)),
                "{evil} {}: {}",
                pkg.display(),
                chain(&err)
            );
            let msg = err.to_string();
            assert!(msg.contains(&format!("cowkit-fixture/{evil}")), "{msg}");
            assert!(is_empty_dir(&root), "{evil}: {:?}", snapshot(&root));
            std::fs::remove_dir(&root).unwrap();
        }
        // Where `..` would have led from the root.
        assert!(!dir.path().join("evil").exists());
        assert!(!dir.path().join("ev").exists());
        outside.assert_untouched(evil);

        // The transcoder refuses the package too: its payload holds a file
        // that the header no longer lists.
        let begun = cowkit_extents::transcode::begin(File::open(&bad).unwrap());
        let r = begun.and_then(|b| {
            b.write(
                File::create(dir.path().join("out.rpme")).unwrap(),
                &Default::default(),
                &cowkit_extents::transcode::NoProgress,
            )
        });
        assert!(r.is_err(), "{evil}: transcoded");
    }
}

// ---------------------------------------------------------------------------
// 5. Damaged extents files.

#[test]
fn a_flipped_byte_in_the_table_footer_or_header_is_refused_before_anything_is_written() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpme = dir.path().join("pkg.rpme");
    transcode(&fixture("w19.zstdio"), &rpme);
    let b = std::fs::read(&rpme).unwrap();
    let len = b.len();
    let table = footer_u64(&b, 32) as usize;
    let (h_start, h_end) = header_range(&b);
    let root = mkdir(&dir.path().join("root"));
    let file = OpenOptions::new().write(true).open(&rpme).unwrap();
    // Every byte of the main header, the table and the footer but its
    // last 8 (the trailing magic, see below).
    let offsets = (h_start..h_end).chain(table..len - 8);
    let mut tried = 0;
    for at in offsets {
        file.write_all_at(&[b[at] ^ 0x01], at as u64).unwrap();
        let r = install_with(&root, &rpme, &Options::default());
        file.write_all_at(&b[at..at + 1], at as u64).unwrap();
        match r {
            Err(Error::Extents(_)) => {}
            Err(e) => panic!("byte {at}: unexpected error {}", chain(&e)),
            Ok(_) => panic!("byte {at} (table at {table}, header {h_start}..{h_end}): installed"),
        }
        assert!(is_empty_dir(&root), "byte {at}: {:?}", snapshot(&root));
        tried += 1;
    }
    assert!(tried > 1000, "{tried}");
    // Without its trailing magic the file is not an extents file: it is
    // read as a plain RPM, whose payload is not what the header says.
    for at in len - 8..len {
        file.write_all_at(&[b[at] ^ 0x01], at as u64).unwrap();
        let r = install_with(&root, &rpme, &Options::default());
        file.write_all_at(&b[at..at + 1], at as u64).unwrap();
        assert!(r.is_err(), "byte {at}: installed");
        assert!(regular_files(&root).is_empty(), "byte {at}");
        assert_eq!(temporary_names(&root), Vec::<String>::new());
    }
    install_ok(&root, &rpme);
}

#[test]
fn a_truncated_extents_file_is_an_error() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpme = dir.path().join("pkg.rpme");
    transcode(&fixture("w19.zstdio"), &rpme);
    let b = std::fs::read(&rpme).unwrap();
    let len = b.len();
    let table = footer_u64(&b, 32) as usize;
    let prefix = footer_u64(&b, 24) as usize;
    let (h_start, _) = header_range(&b);
    for cut in [
        0,
        50,
        h_start + 20,
        prefix - 1,
        prefix,
        prefix + 4096,
        table - 1,
        table,
        table + 1,
        len - 176,
        len - 100,
        len - 8,
        len - 1,
    ] {
        let p = dir.path().join(format!("cut-{cut}.rpme"));
        std::fs::write(&p, &b[..cut]).unwrap();
        let root = mkdir(&dir.path().join(format!("root-{cut}")));
        let r = install_with(&root, &p, &Options::default());
        assert!(r.is_err(), "cut at {cut} of {len}: installed");
        assert!(regular_files(&root).is_empty(), "cut at {cut}");
        assert_eq!(temporary_names(&root), Vec::<String>::new());
    }
}

// ---------------------------------------------------------------------------
// 6. --verify catches content the table does not cover.

#[test]
fn verify_catches_a_changed_data_byte_that_the_table_does_not_cover() {
    for fs in [Fs::Xfs, Fs::Ext4] {
        let Some(dir) = scratch(fs) else { continue };
        let rpme = dir.path().join("pkg.rpme");
        transcode(&fixture("w19.zstdio"), &rpme);
        let verify = Options {
            verify: true,
            ..Options::default()
        };
        // A good install verifies, from either form.
        for (n, pkg) in [&rpme, &fixture("w19.zstdio")].into_iter().enumerate() {
            let good = mkdir(&dir.path().join(format!("good-{n}")));
            let s = install_with(&good, pkg, &verify).unwrap();
            assert_eq!((s.verified, s.files), (11, 11), "{fs:?}");
        }

        // Flip a byte inside large.bin's cloned extent and one inside
        // small.txt's packed one.
        let (large, small) = {
            let x = ExtentsFile::open(File::open(&rpme).unwrap(), &rpme).unwrap();
            let at = |path: &str| {
                let f = x.files().find(path).unwrap();
                match x.content(f.index) {
                    Some(Content::Extent(e)) => e.offset,
                    other => panic!("{path}: {other:?}"),
                }
            };
            (
                at(&format!("/{FIXTURE}/dir/large.bin")),
                at(&format!("/{FIXTURE}/small.txt")),
            )
        };
        let f = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&rpme)
            .unwrap();
        for at in [large + 5000, small + 2] {
            let mut byte = [0u8];
            f.read_exact_at(&mut byte, at).unwrap();
            f.write_all_at(&[byte[0] ^ 0x20], at).unwrap();
        }
        drop(f);

        // Without --verify: installed, wrong.
        let quiet = mkdir(&dir.path().join("unverified"));
        install_ok(&quiet, &rpme);
        let q = quiet.join(FIXTURE);
        for rel in [CLONED[0], CLONED[1], "small.txt"] {
            assert_ne!(file_sha(&q.join(rel)), expected_sha(rel), "{fs:?} {rel}");
        }
        assert_eq!(file_sha(&q.join("hl-a")), expected_sha("hl-a"));

        // With --verify: a damaged file is found before it is named (fail
        // closed), and none of the three is left under its name.
        let checked = mkdir(&dir.path().join("verified"));
        let err = install_with(&checked, &rpme, &verify).unwrap_err();
        match &err {
            Error::DigestMismatch { path } => {
                let bad = [CLONED[0], CLONED[1], "small.txt"];
                assert!(
                    bad.iter().any(|b| path.ends_with(b)),
                    "{fs:?}: {}",
                    path.display()
                );
            }
            other => panic!("{fs:?}: expected DigestMismatch, got {}", chain(other)),
        }
        let c = checked.join(FIXTURE);
        for rel in [CLONED[0], CLONED[1], "small.txt"] {
            assert!(!c.join(rel).exists(), "{fs:?}: {rel} was named");
        }
    }
}

// ---------------------------------------------------------------------------
// 7. A file over 4 GiB: LONGFILESIZES and the stripped cpio format.

const HUGE: u64 = 4_294_967_297;

/// A package with a sparse 4 GiB + 1 byte file (and data at both ends):
/// about 16 s of rpmbuild, kept for later runs (the package is 140 KB).
fn huge_rpm() -> PathBuf {
    build_rpm(
        "cowkit-huge",
        "r=%{buildroot}/opt/huge\n\
         mkdir -p $r\n\
         truncate -s 4294967297 $r/huge.img\n\
         printf head | dd of=$r/huge.img conv=notrunc status=none\n\
         printf tail-of-huge | dd of=$r/huge.img bs=1 seek=4294967285 conv=notrunc status=none\n\
         printf 'small\\n' > $r/small",
        "/opt/huge",
        "w1.zstdio",
    )
}

/// About 20 s: hashing 4 GiB needs the optimised sha2 that the workspace's
/// `[profile.dev.package.sha2]` gives debug builds.
#[test]
fn a_file_over_4_gib_in_a_stripped_cpio_payload_is_transcoded_with_holes_and_cloned() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpm = huge_rpm();
    // rpmbuild used the stripped `07070X` cpio format for this payload.
    let (_, payload) = header_range(&std::fs::read(&rpm).unwrap());
    let out = Command::new("bash")
        .args([
            "-c",
            "tail -c +$(($2 + 1)) \"$1\" | zstd -dc 2>/dev/null | head -c 6",
            "sh",
        ])
        .arg(&rpm)
        .arg(payload.to_string())
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"07070X");

    let rpme = dir.path().join("huge.rpme");
    let t = transcode(&rpm, &rpme);
    assert!(t.hole_bytes >= HUGE - 3 * 4096, "{t:?}");
    let m = std::fs::metadata(&rpme).unwrap();
    assert!(m.len() > HUGE);
    assert!(
        m.blocks() * 512 < 16 << 20,
        "{} bytes allocated",
        m.blocks() * 512
    );

    let root = mkdir(&dir.path().join("root"));
    let s = install_ok(&root, &rpme);
    assert_eq!(s.tally.bytes.cloned, HUGE / 4096 * 4096, "{s:?}");
    let p = root.join("opt/huge/huge.img");
    let m = std::fs::metadata(&p).unwrap();
    assert_eq!(m.len(), HUGE);
    assert!(
        m.blocks() * 512 < 16 << 20,
        "{} bytes allocated",
        m.blocks() * 512
    );
    let f = File::open(&p).unwrap();
    let mut buf = [0u8; 12];
    f.read_exact_at(&mut buf, HUGE - 12).unwrap();
    assert_eq!(&buf, b"tail-of-huge");
    f.read_exact_at(&mut buf[..4], 0).unwrap();
    assert_eq!(&buf[..4], b"head");
    f.read_exact_at(&mut buf[..4], 1 << 31).unwrap();
    assert_eq!(&buf[..4], &[0; 4]);
    assert_eq!(
        std::fs::read(root.join("opt/huge/small")).unwrap(),
        b"small\n"
    );
}

/// The transaction library: a package swapped for another after the
/// check is refused when it is opened, and nothing of it is placed.
#[test]
fn a_file_swapped_after_the_check_is_refused() {
    let Some(dir) = cowkit_testutil::scratch(cowkit_testutil::Fs::Xfs) else {
        return;
    };
    let a = build_rpm(
        "cowkit-swap-a",
        "mkdir -p %{buildroot}/opt/a\necho a > %{buildroot}/opt/a/file",
        "/opt/a",
        "w9.gzdio",
    );
    let b = build_rpm(
        "cowkit-swap-b",
        "mkdir -p %{buildroot}/opt/b\necho b > %{buildroot}/opt/b/file",
        "/opt/b",
        "w9.gzdio",
    );
    let b_rpme = dir.path().join("b.rpme");
    transcode(&b, &b_rpme);
    let root_dir = mkdir(&dir.path().join("root"));
    let root = cowkit_fs::root::Root::open(&root_dir).unwrap();
    let opts = cowkit_install::TxOptions {
        jobs: 1,
        noscripts: true,
        ..cowkit_install::TxOptions::default()
    };
    let mut prepared = cowkit_install::prepare(&root, std::slice::from_ref(&a), &opts).unwrap();
    prepared.use_files(|_| b_rpme.clone());
    let sum = prepared.run(&cowkit_install::NoProgress).unwrap();
    assert_eq!(sum.failed.len(), 1, "{sum:?}");
    let why = sum.failed[0].error.join(": ");
    assert!(why.contains("is not the package that was checked"), "{why}");
    assert!(!root_dir.join("opt").exists(), "something was placed");
}
