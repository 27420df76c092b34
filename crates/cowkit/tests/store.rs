//! `cowkit store` and `cowkit image` on the rig's filesystems: a mounted
//! image equals its source; objects are clones on XFS and copies on ext4;
//! two images share the page cache of their common content and the
//! second reads from the disk only what changed; missing and damaged
//! objects, concurrent imports, a killed import, hostile trees.
//!
//! Mounting needs root (overlayfs).

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{as_root, cowkit, run, Run};
use cowkit_testutil::tree::{diff, hardlink_groups, mkdir, snapshot, Tree};
use cowkit_testutil::{pattern, run_ok, scratch, Fs};

fn ck(args: &[&str], store: &Path) -> Run {
    run(cowkit().args(args).arg("--store").arg(store))
}

/// Unmounts on drop.
struct Mounted(PathBuf);
impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

fn mount(store: &Path, name: &str, at: &Path) -> Mounted {
    mkdir(at);
    let r = run(cowkit()
        .args(["image", "mount", name])
        .arg(at)
        .arg("--store")
        .arg(store));
    assert!(r.ok, "{}", r.stderr);
    Mounted(at.to_path_buf())
}

/// Every extended attribute of every entry (`getfattr`), by path.
fn xattrs(dir: &Path) -> BTreeMap<String, String> {
    let out = run_ok(
        Command::new("getfattr")
            .args(["-R", "-h", "-d", "-m", "-", "-e", "hex", "--absolute-names"])
            .arg(dir),
        "getfattr",
    );
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut m = BTreeMap::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut lines = block.lines();
        let file = lines.next().unwrap().trim_start_matches("# file: ");
        let rel = file
            .strip_prefix(dir.to_str().unwrap())
            .unwrap_or(file)
            .to_string();
        // XFS also lists its on-disk form of an ACL as `trusted.SGI_ACL_*`:
        // the same ACL, compared as `system.posix_acl_*`.
        m.insert(
            rel,
            lines
                .filter(|l| !l.starts_with("trusted.SGI_"))
                .collect::<Vec<_>>()
                .join("\n"),
        );
    }
    m
}

/// A tree with every kind of entry, odd names, owners, xattrs, an ACL,
/// capabilities, hardlinks, ns times, a symlink pointing out.
fn varied_tree(at: &Path) -> PathBuf {
    let t = mkdir(at);
    mkdir(&t.join("sub/deeper"));
    std::fs::write(t.join("small"), b"small\n").unwrap();
    std::fs::write(t.join("sub/big"), pattern(3 << 20, 7)).unwrap();
    std::fs::write(t.join("sub/deeper/same-as-small"), b"small\n").unwrap();
    std::fs::write(t.join("empty"), b"").unwrap();
    std::fs::write(t.join("name\nwith newline"), b"nl").unwrap();
    std::fs::hard_link(t.join("sub/big"), t.join("big-link")).unwrap();
    symlink("/etc/passwd", t.join("points-out")).unwrap();
    symlink("../../small", t.join("sub/deeper/rel")).unwrap();
    run_ok(Command::new("mkfifo").arg(t.join("fifo")), "mkfifo");
    run_ok(
        Command::new("mknod")
            .arg(t.join("null"))
            .args(["c", "1", "3"]),
        "mknod",
    );
    run_ok(
        Command::new("setfattr")
            .args(["-n", "user.k", "-v", "v\nw"])
            .arg(t.join("small")),
        "setfattr",
    );
    run_ok(
        Command::new("setfacl")
            .args(["-m", "u:1234:rw"])
            .arg(t.join("sub/big")),
        "setfacl",
    );
    run_ok(
        Command::new("setfacl")
            .args(["-d", "-m", "g:55:rx"])
            .arg(t.join("sub")),
        "setfacl -d",
    );
    run_ok(
        Command::new("setcap")
            .args(["cap_net_raw=ep"])
            .arg(t.join("small")),
        "setcap",
    );
    run_ok(
        Command::new("chown")
            .args(["-h", "1234:5678"])
            .arg(t.join("points-out")),
        "chown",
    );
    run_ok(
        Command::new("chown")
            .args(["4321:8765"])
            .arg(t.join("sub/deeper")),
        "chown",
    );
    run_ok(
        Command::new("chmod")
            .args(["2751"])
            .arg(t.join("sub/deeper")),
        "chmod",
    );
    run_ok(
        Command::new("touch")
            .args(["-h", "-d", "2001-02-03 04:05:06.123456789"])
            .arg(t.join("points-out"))
            .arg(t.join("sub/big"))
            .arg(t.join("sub")),
        "touch",
    );
    t
}

fn compare(src: &Path, mnt: &Path, what: &str) {
    let (a, b) = (snapshot(src), snapshot(mnt));
    let d = diff(&a, &b, |e| {
        (
            e.shape(),
            e.uid,
            e.gid,
            (e.kind != 'd').then_some(e.mtime),
            e.caps.clone(),
        )
    });
    assert!(
        d.is_empty(),
        "{what}: the mount differs from its source:\n{d:#?}"
    );
    assert_eq!(
        hardlink_groups(&a),
        hardlink_groups(&b),
        "{what}: hardlinks"
    );
    assert_eq!(xattrs(src), xattrs(mnt), "{what}: extended attributes");
    // Directory times too, and ns precision.
    for (p, e) in &a {
        let (m1, m2) = (
            std::fs::symlink_metadata(src.join(p)).unwrap(),
            std::fs::symlink_metadata(mnt.join(p)).unwrap(),
        );
        assert_eq!(
            (m1.mtime(), m1.mtime_nsec()),
            (m2.mtime(), m2.mtime_nsec()),
            "{what}: mtime of {p} ({})",
            e.kind
        );
    }
}

fn image_equals_source_on(fs: Fs, format: &str) {
    let Some(dir) = scratch(fs) else { return };
    let src = varied_tree(&dir.path().join("src"));
    let store = dir.path().join("store");
    let r = run(cowkit()
        .args([
            "image", "create", "varied", "--json", "--format", format, "--from",
        ])
        .arg(&src)
        .arg("--store")
        .arg(&store));
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["files"], 5, "{j}");
    // small and same-as-small are one object; the hardlink is not
    // imported twice; an empty file needs none.
    assert_eq!(j["objects_new"], 3, "{j}");
    assert_eq!(j["objects_reused"], 1, "{j}");
    assert_eq!(j["empty_files"], 1, "{j}");
    let method = if fs.reflinks() {
        "clone"
    } else {
        "copy_file_range"
    };
    assert!(
        j["bytes_by_method"][method].as_u64().unwrap_or(0) >= 3 << 20,
        "{j}"
    );
    let mnt = dir.path().join("mnt");
    let _m = mount(&store, "varied", &mnt);
    compare(&src, &mnt, &format!("{} {format}", fs.type_name()));
    // Read-only.
    assert!(std::fs::write(mnt.join("small"), b"x").is_err());

    // The objects share their blocks with the sources on XFS.
    let big = std::fs::File::open(src.join("sub/big")).unwrap();
    let (shared, total) = cowkit_fs::fiemap::shared_bytes(&big).unwrap();
    if fs.reflinks() {
        assert_eq!(
            shared, total,
            "the source's blocks are not shared with its object"
        );
    } else {
        assert_eq!(shared, 0);
    }
    let f = ck(&["store", "fsck", "--json"], &store);
    assert!(f.ok, "{}", f.stderr);
    assert_eq!(f.json()["checked"], 3);
    if format == "erofs" {
        fingerprints_are_right(&src, &store, "varied");
    }
}

/// `sha256sum` of a file: the 32 digest bytes.
fn sha256(path: &Path) -> Vec<u8> {
    let out = run_ok(Command::new("sha256sum").arg(path), "sha256sum");
    let text = String::from_utf8_lossy(&out.stdout);
    // A name with a newline gets a leading `\\`.
    hex::decode(
        text.split_whitespace()
            .next()
            .unwrap()
            .trim_start_matches('\\'),
    )
    .unwrap()
}

/// Every regular file of `src` with content carries, in the EROFS image
/// `name`, the fingerprint `mkfs.erofs --xattr-inode-digest` writes:
/// `erofs.fingerprint.v1` (a hidden long prefix named by the superblock)
/// = `sha256:` + the 32 digest bytes; empty files carry none. Read with
/// cowkit's reader; then written under a visible name
/// (`trusted.ck.fp`) and read back through the kernel's own EROFS
/// driver, which resolves the long prefix table and the entries.
fn fingerprints_are_right(src: &Path, store: &Path, name: &str) {
    let image = store.join(format!("images/{name}.erofs"));
    let bytes = std::fs::read(&image).unwrap();
    let r = cowkit_store::erofs::Reader::new(&bytes).unwrap();
    assert_eq!(r.fingerprint.as_deref(), Some(&b"erofs.fingerprint.v1"[..]));
    let walked: BTreeMap<String, cowkit_store::erofs::Inode> = r
        .walk()
        .unwrap()
        .into_iter()
        .map(|(p, i)| (p.to_str().unwrap().to_string(), i))
        .collect();
    let mut checked = 0;
    for (p, e) in snapshot(src) {
        let inode = &walked[&p];
        let fp = inode.xattrs.get(&b"erofs.fingerprint.v1"[..]);
        if e.kind == 'f' && e.size > 0 {
            let mut want = b"sha256:".to_vec();
            want.extend(sha256(&src.join(&p)));
            assert_eq!(fp, Some(&want), "the fingerprint of {p}");
            checked += 1;
        } else {
            assert_eq!(fp, None, "{p} ({}) has a fingerprint", e.kind);
        }
    }
    assert!(checked >= 4, "{checked} fingerprints");

    let visible = format!("{name}-visible");
    let r = run(cowkit()
        .args([
            "image",
            "create",
            &visible,
            "--fingerprint-xattr",
            "trusted.ck.fp",
            "--from",
        ])
        .arg(src)
        .arg("--store")
        .arg(store));
    assert!(r.ok, "{}", r.stderr);
    let raw = store.join("raw-mount");
    mkdir(&raw);
    run_ok(
        Command::new("mount")
            .args(["-t", "erofs", "-o", "ro,loop"])
            .arg(store.join(format!("images/{visible}.erofs")))
            .arg(&raw),
        "mount -t erofs",
    );
    let _m = Mounted(raw.clone());
    let seen = xattrs(&raw);
    for (p, e) in snapshot(src) {
        // getfattr writes a newline in a name as `\012`.
        let key = if p.is_empty() {
            String::new()
        } else {
            format!("/{}", p.replace('\n', "\\012"))
        };
        let attrs = seen.get(&key).map_or("", String::as_str);
        let fp = attrs
            .lines()
            .find_map(|l| l.strip_prefix("trusted.ck.fp=0x"))
            .map(|h| hex::decode(h).unwrap());
        if e.kind == 'f' && e.size > 0 {
            let mut want = b"sha256:".to_vec();
            want.extend(sha256(&src.join(&p)));
            assert_eq!(fp, Some(want), "the kernel's view of {p}'s fingerprint");
        } else {
            assert_eq!(fp, None, "{p}");
        }
    }
}

/// EROFS layouts past the simple ones: a directory of 700 entries (many
/// blocks), names of 255 bytes, a symlink of 4,000 bytes, a file whose
/// extended attributes (60 KB) make its inode span blocks — mounted, equal
/// to the source; and a file past 4 GiB (sparse in the source).
#[test]
fn erofs_layouts_beyond_one_block_mount_right() {
    if !as_root(
        "erofs_layouts_beyond_one_block_mount_right",
        "overlayfs mounts",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let src = mkdir(&dir.path().join("src"));
    mkdir(&src.join("many"));
    for i in 0..700 {
        std::fs::write(src.join(format!("many/entry-{i:04}")), format!("{i}\n")).unwrap();
    }
    let long = "n".repeat(255);
    std::fs::write(src.join(&long), b"long name").unwrap();
    mkdir(&src.join(format!("many/{long}")));
    // XFS allows 1,024 bytes of symlink target; with 3,500 bytes of
    // xattrs, the target no longer fits inline beside the inode.
    symlink("x/".repeat(500), src.join("long-link")).unwrap();
    run_ok(
        Command::new("setfattr")
            .args(["-h", "-n", "trusted.big", "-v", &"t".repeat(3_500)])
            .arg(src.join("long-link")),
        "setfattr -h",
    );
    std::fs::write(src.join("fat-xattrs"), b"x").unwrap();
    for k in 0..4 {
        run_ok(
            Command::new("setfattr")
                .args(["-n", &format!("user.big{k}"), "-v", &"v".repeat(15_000)])
                .arg(src.join("fat-xattrs")),
            "setfattr",
        );
    }
    let store = dir.path().join("store");
    let r = ck(
        &[
            "image",
            "create",
            "layouts",
            "--from",
            src.to_str().unwrap(),
        ],
        &store,
    );
    assert!(r.ok, "{}", r.stderr);
    let mnt = dir.path().join("mnt");
    let _m = mount(&store, "layouts", &mnt);
    compare(&src, &mnt, "layouts");
    assert_eq!(
        std::fs::read(mnt.join("many/entry-0699")).unwrap(),
        b"699\n"
    );

    // A file past 4 GiB (its size does not fit 32 bits), in an image of
    // its own: not hashed again through the mount, its end read.
    let big = mkdir(&dir.path().join("big"));
    let f = std::fs::File::create(big.join("huge-sparse")).unwrap();
    f.set_len((5 << 30) + 12_345).unwrap();
    use std::os::unix::fs::FileExt;
    f.write_all_at(b"the end", (5 << 30) + 12_338).unwrap();
    drop(f);
    let r = ck(
        &["image", "create", "big", "--from", big.to_str().unwrap()],
        &store,
    );
    assert!(r.ok, "{}", r.stderr);
    let mnt2 = dir.path().join("mnt2");
    let _m2 = mount(&store, "big", &mnt2);
    let f = std::fs::File::open(mnt2.join("huge-sparse")).unwrap();
    assert_eq!(f.metadata().unwrap().len(), (5 << 30) + 12_345);
    let mut tail = [0u8; 7];
    f.read_exact_at(&mut tail, (5 << 30) + 12_338).unwrap();
    assert_eq!(&tail, b"the end");
}

#[test]
fn image_equals_source_on_xfs() {
    if as_root("image_equals_source_on_xfs", "overlayfs mounts") {
        image_equals_source_on(Fs::Xfs, "erofs");
        image_equals_source_on(Fs::Xfs, "dir");
    }
}

#[test]
fn image_equals_source_on_ext4() {
    if as_root("image_equals_source_on_ext4", "overlayfs mounts") {
        image_equals_source_on(Fs::Ext4, "erofs");
    }
}

/// The block device under `dir` and its "sectors read" counter.
fn sectors_read(dir: &Path) -> u64 {
    let out = run_ok(
        Command::new("findmnt")
            .args(["-n", "-o", "SOURCE", "--target"])
            .arg(dir),
        "findmnt",
    );
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let name = Path::new(&dev)
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let stat = std::fs::read_to_string(format!("/sys/block/{name}/stat"))
        .unwrap_or_else(|e| panic!("/sys/block/{name}/stat ({dev}): {e}"));
    stat.split_whitespace().nth(2).unwrap().parse().unwrap()
}

fn drop_caches() {
    run_ok(&mut Command::new("sync"), "sync");
    std::fs::write("/proc/sys/vm/drop_caches", "3").unwrap();
}

fn read_all(dir: &Path) -> u64 {
    let mut n = 0;
    for (p, e) in snapshot(dir) {
        if e.kind == 'f' {
            n += std::fs::read(dir.join(p)).unwrap().len() as u64;
        }
    }
    n
}

/// Resident bytes of every file below `dir` (`fincore`).
fn resident(dir: &Path) -> u64 {
    let mut total = 0;
    for (p, e) in snapshot(dir) {
        if e.kind != 'f' || e.size == 0 {
            continue;
        }
        let out = run_ok(
            Command::new("fincore")
                .args(["-b", "-n", "-o", "RES"])
                .arg(dir.join(p)),
            "fincore",
        );
        total += String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u64>()
            .unwrap();
    }
    total
}

/// A loop-mounted XFS (reflink) of its own, on an image file in `at`.
struct PrivateXfs {
    mnt: PathBuf,
}

impl PrivateXfs {
    fn new(at: &Path) -> PrivateXfs {
        let img = at.join("private-xfs.img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(512 << 20)
            .unwrap();
        run_ok(
            Command::new("mkfs.xfs")
                .args(["-q", "-m", "reflink=1"])
                .arg(&img),
            "mkfs.xfs",
        );
        let mnt = mkdir(&at.join("private-xfs"));
        run_ok(
            Command::new("mount")
                .args(["-o", "loop"])
                .arg(&img)
                .arg(&mnt),
            "mount -o loop",
        );
        PrivateXfs { mnt }
    }
}

impl Drop for PrivateXfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mnt).status();
    }
}

/// Two releases of a tree (8 files of 2 MiB; the second changes 2 of them)
/// as two images: reading both through their mounts caches the distinct
/// content once, and the second image reads from the disk only what
/// changed. Side by side: the same trees as plain copies cache both.
#[test]
fn two_images_share_the_page_cache_of_their_common_content() {
    if !as_root(
        "two_images_share_the_page_cache_of_their_common_content",
        "overlayfs mounts",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    // A private XFS, so the sectors it reads are this test's alone (the
    // rig's filesystems serve tests running beside it).
    let private = PrivateXfs::new(dir.path());
    let d = private.mnt.as_path();
    const MIB: usize = 1 << 20;
    let (v1, v2) = (mkdir(&d.join("v1")), mkdir(&d.join("v2")));
    for i in 0..8u64 {
        std::fs::write(v1.join(format!("f{i}")), pattern(2 * MIB, i)).unwrap();
        let seed = if i < 2 { 100 + i } else { i };
        std::fs::write(v2.join(format!("f{i}")), pattern(2 * MIB, seed)).unwrap();
    }
    let store = d.join("store");
    for (name, src) in [("v1", &v1), ("v2", &v2)] {
        let r = run(cowkit()
            .args(["image", "create", name, "--from"])
            .arg(src)
            .arg("--store")
            .arg(&store));
        assert!(r.ok, "{}", r.stderr);
    }
    let (m1, m2) = (d.join("m1"), d.join("m2"));
    let _a = mount(&store, "v1", &m1);
    let _b = mount(&store, "v2", &m2);

    drop_caches();
    let s0 = sectors_read(d);
    assert_eq!(read_all(&m1), 16 * MIB as u64);
    let s1 = sectors_read(d);
    assert_eq!(read_all(&m2), 16 * MIB as u64);
    let s2 = sectors_read(d);
    let first = (s1 - s0) * 512;
    let second = (s2 - s1) * 512;
    // The first image read its 16 MiB; the second only the 4 MiB that
    // changed (plus metadata).
    assert!(first >= 16 * MIB as u64, "first image read {first} bytes");
    assert!(
        second >= 4 * MIB as u64 && second < 6 * MIB as u64,
        "the second image read {second} bytes from the disk (4 MiB changed)"
    );
    let distinct = 20 * MIB as u64;
    let cached = resident(&store.join("objects"));
    assert!(
        cached.abs_diff(distinct) <= distinct / 20,
        "page cache over the objects: {cached} bytes, distinct content {distinct}"
    );

    // Plain copies of the same trees: both are read and cached in full.
    drop_caches();
    let s0 = sectors_read(d);
    read_all(&v1);
    read_all(&v2);
    let plain = (sectors_read(d) - s0) * 512;
    assert!(plain >= 32 * MIB as u64, "plain trees read {plain} bytes");
    let both = resident(&v1) + resident(&v2);
    assert!(both >= 31 * MIB as u64, "plain trees cached {both} bytes");
}

/// A missing object: the file cannot be opened, the rest of the image
/// can, and `fsck` names it; a damaged object: `fsck` names it.
#[test]
fn missing_and_damaged_objects_are_found() {
    if !as_root("missing_and_damaged_objects_are_found", "overlayfs mounts") {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let src = mkdir(&dir.path().join("src"));
    std::fs::write(src.join("a"), b"a\n").unwrap();
    std::fs::write(src.join("b"), b"b\n").unwrap();
    std::fs::write(src.join("c"), b"c\n").unwrap();
    let store = dir.path().join("store");
    let r = run(cowkit()
        .args(["image", "create", "abc", "--from"])
        .arg(&src)
        .arg("--store")
        .arg(&store));
    assert!(r.ok, "{}", r.stderr);
    let obj = |content: &[u8]| {
        let h = cowkit_testutil::sha256_hex(content);
        store.join("objects").join(&h[..2]).join(&h[2..])
    };
    std::fs::remove_file(obj(b"a\n")).unwrap();
    let damaged = obj(b"b\n");
    let mut perm = std::fs::metadata(&damaged).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o644);
    std::fs::set_permissions(&damaged, perm).unwrap();
    std::fs::write(&damaged, b"B\n").unwrap();

    let mnt = dir.path().join("mnt");
    let _m = mount(&store, "abc", &mnt);
    let e = std::fs::read(mnt.join("a")).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{e}");
    assert!(
        std::fs::symlink_metadata(mnt.join("a")).is_ok(),
        "stat still works"
    );
    assert_eq!(std::fs::read(mnt.join("c")).unwrap(), b"c\n");

    let f = ck(&["store", "fsck"], &store);
    assert!(!f.ok, "fsck passed a damaged store");
    let h = cowkit_testutil::sha256_hex(b"a\n");
    assert!(
        f.stderr
            .contains(&format!("missing: objects/{}/{}", &h[..2], &h[2..])),
        "{}",
        f.stderr
    );
    assert!(f.stderr.contains("of the image `abc`"), "{}", f.stderr);
    let h = cowkit_testutil::sha256_hex(b"b\n");
    assert!(
        f.stderr
            .contains(&format!("damaged: objects/{}/{}", &h[..2], &h[2..])),
        "{}",
        f.stderr
    );
}

/// Two imports of one tree at once both succeed with one object per
/// content; an import killed with SIGKILL leaves no object whose content
/// is not its name.
#[test]
fn concurrent_and_killed_imports_leave_a_sound_store() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let src = mkdir(&dir.path().join("src"));
    for i in 0..64u64 {
        std::fs::write(src.join(format!("f{i}")), pattern(256 << 10, i % 40)).unwrap();
    }
    let store = dir.path().join("store");
    let (a, b) = std::thread::scope(|s| {
        let ta = s.spawn(|| {
            ck(
                &["store", "import", "--json", src.to_str().unwrap()],
                &store,
            )
        });
        let tb = s.spawn(|| {
            ck(
                &["store", "import", "--json", src.to_str().unwrap()],
                &store,
            )
        });
        (ta.join().unwrap(), tb.join().unwrap())
    });
    assert!(a.ok, "{}", a.stderr);
    assert!(b.ok, "{}", b.stderr);
    let new = a.json()["objects_new"].as_u64().unwrap() + b.json()["objects_new"].as_u64().unwrap();
    assert_eq!(new, 40, "one new object per distinct content");
    let f = ck(&["store", "fsck", "--json"], &store);
    assert!(f.ok, "{}", f.stderr);
    assert_eq!(f.json()["checked"], 40);

    // Killed in the middle of a larger import.
    let big = mkdir(&dir.path().join("big"));
    for i in 0..200u64 {
        std::fs::write(big.join(format!("g{i}")), pattern(1 << 20, 1000 + i)).unwrap();
    }
    let store2 = dir.path().join("store2");
    let mut child = cowkit()
        .args(["store", "import"])
        .arg(&big)
        .arg("--store")
        .arg(&store2)
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(150));
    child.kill().unwrap();
    child.wait().unwrap();
    let f = ck(&["store", "fsck", "--json"], &store2);
    assert!(f.ok, "{}", f.stderr);
    let j = f.json();
    assert_eq!(j["damaged"], serde_json::json!([]), "{j}");
    assert!(
        j["checked"].as_u64().unwrap() < 200,
        "the import was not interrupted: {j}"
    );
}

/// Bad image names and trees with overlay attributes are refused.
#[test]
fn bad_names_and_overlay_attributes_are_refused() {
    if !as_root(
        "bad_names_and_overlay_attributes_are_refused",
        "overlayfs mounts",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let src = mkdir(&dir.path().join("src"));
    std::fs::write(src.join("a"), b"a").unwrap();
    let store = dir.path().join("store");
    for name in ["../x", ".hidden", "a/b", ""] {
        let r = run(cowkit()
            .args(["image", "create", name, "--from"])
            .arg(&src)
            .arg("--store")
            .arg(&store));
        assert!(!r.ok, "the name {name:?} was accepted");
    }
    run_ok(
        Command::new("setfattr")
            .args(["-n", "trusted.overlay.redirect", "-v", "/etc"])
            .arg(src.join("a")),
        "setfattr",
    );
    let r = run(cowkit()
        .args(["image", "create", "x", "--from"])
        .arg(&src)
        .arg("--store")
        .arg(&store));
    assert!(!r.ok);
    assert!(r.stderr.contains("trusted.overlay"), "{}", r.stderr);
    let images = store.join("images");
    if images.exists() {
        let t: Tree = snapshot(&images);
        assert!(t.is_empty(), "{t:?}");
    }
}

/// `gc` removes exactly the objects no image needs, and waits for no one:
/// while another process holds the store it refuses.
#[test]
fn gc_removes_what_no_image_needs_and_never_runs_beside_an_import() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let store = dir.path().join("store");
    let (a, b) = (mkdir(&dir.path().join("a")), mkdir(&dir.path().join("b")));
    std::fs::write(a.join("shared"), b"shared\n").unwrap();
    std::fs::write(b.join("shared"), b"shared\n").unwrap();
    std::fs::write(a.join("only-a"), b"a\n").unwrap();
    std::fs::write(b.join("only-b"), b"b\n").unwrap();
    for (n, src) in [("a", &a), ("b", &b)] {
        let r = run(cowkit()
            .args(["image", "create", n, "--from"])
            .arg(src)
            .arg("--store")
            .arg(&store));
        assert!(r.ok, "{}", r.stderr);
    }
    // An object no image refers to (a plain import).
    let loose = mkdir(&dir.path().join("loose"));
    std::fs::write(loose.join("x"), b"loose\n").unwrap();
    assert!(ck(&["store", "import", loose.to_str().unwrap()], &store).ok);

    // Busy while another process holds the store.
    // (`-o`: the lock stays with flock itself, not with its child.)
    let mut holder = Command::new("flock")
        .args(["-s", "-o"])
        .arg(store.join("lock"))
        .args(["sleep", "30"])
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let g = ck(&["store", "gc"], &store);
    holder.kill().unwrap();
    holder.wait().unwrap();
    assert!(!g.ok, "gc ran beside another user of the store");
    assert!(
        g.stderr.contains("in use by another process"),
        "{}",
        g.stderr
    );

    let g = ck(&["store", "gc", "--json"], &store);
    assert!(g.ok, "{}", g.stderr);
    assert_eq!(g.json()["removed"], 1, "{}", g.json());
    assert_eq!(g.json()["kept"], 3);
    assert!(ck(&["image", "rm", "a"], &store).ok);
    let g = ck(&["store", "gc", "--json"], &store);
    assert_eq!(g.json()["removed"], 1, "{}", g.json());
    assert_eq!(g.json()["kept"], 2);
    let f = ck(&["store", "fsck", "--json"], &store);
    assert!(f.ok, "{}", f.stderr);
    assert_eq!(f.json()["missing"], serde_json::json!([]));
}

/// Images straight from packages, against rpm itself: `cowkit image
/// create --from A.rpm --from B.rpm …` mounts as the same tree that `rpm
/// -i --noscripts` installs (files, owners, modes, mtimes, hardlinks,
/// symlinks, capabilities; rpm's own database and the directories rpm
/// makes for unlisted parents aside). Objects are named by the header's
/// SHA-256: importing the `.rpme` of a package whose objects are in the
/// store reads and hashes nothing. A tampered `.rpme` is refused and
/// leaves no object.
#[test]
fn package_images_equal_what_rpm_installs() {
    if !as_root("package_images_equal_what_rpm_installs", "overlayfs mounts") {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let repo = cowkit_testutil::repo::build_repo(d);
    let names = [
        "ck-filesystem",
        "ck-setup",
        "ck-links",
        "ck-data",
        "ck-doc",
        "ck-busybox",
    ];
    let pkgs: Vec<&Path> = names.iter().map(|n| repo.rpm(n)).collect();
    let store = d.join("store");
    let mut create = cowkit();
    create.args(["image", "create", "pkgs", "--json"]);
    for p in &pkgs {
        create.arg("--from").arg(p);
    }
    let r = run(create.arg("--store").arg(&store));
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["digests_from_header"], j["files"], "{j}");
    assert!(
        j["bytes_by_method"]["clone"].as_u64().unwrap() > 256 << 10,
        "{j}"
    );

    let reference = mkdir(&d.join("rpm-root"));
    let mut rpm = cowkit_testutil::repo::rpm_in(&reference);
    rpm.args(["-i", "--nodeps", "--noscripts", "--notriggers"]);
    if run_ok(Command::new("rpm").arg("--help"), "rpm --help")
        .stdout
        .windows(12)
        .any(|w| w == b"force-debian")
    {
        rpm.arg("--force-debian");
    }
    run_ok(rpm.args(&pkgs), "rpm -i");
    let mnt = d.join("mnt");
    let _m = mount(&store, "pkgs", &mnt);
    // rpm's database and its parents (which rpm makes) are left aside.
    let db = cowkit_testutil::repo::dbpath();
    let db = db.trim_start_matches('/').to_string();
    let keep = |p: &String| !(p.starts_with(&db) || (!p.is_empty() && db.starts_with(p.as_str())));
    let theirs: BTreeMap<String, _> = snapshot(&reference)
        .into_iter()
        .filter(|(p, _)| keep(p))
        .collect();
    let ours: BTreeMap<String, _> = snapshot(&mnt)
        .into_iter()
        .filter(|(p, _)| keep(p))
        .collect();
    let d1 = diff(&theirs, &ours, |e| {
        (
            e.shape(),
            e.uid,
            e.gid,
            (e.kind != 'd').then_some(e.mtime),
            e.caps.clone(),
        )
    });
    assert!(
        d1.is_empty(),
        "the image differs from rpm's install:\n{d1:#?}"
    );
    assert!(ours.len() > 40, "{} entries", ours.len());
    assert!(ours["usr/share/ck-links/cap"].caps.is_some(), "caps");
    assert_eq!(
        hardlink_groups(&theirs),
        hardlink_groups(&ours),
        "hardlinks"
    );
    assert_eq!(
        std::fs::read(mnt.join("usr/share/ck-data/blob.txt")).unwrap(),
        std::fs::read(reference.join("usr/share/ck-data/blob.txt")).unwrap()
    );

    // The same package again, as an `.rpme`: nothing hashed, nothing new.
    let rpme = d.join("ck-data.rpme");
    let t = run(cowkit()
        .arg("transcode")
        .arg(repo.rpm("ck-data"))
        .arg("-o")
        .arg(&rpme));
    assert!(t.ok, "{}", t.stderr);
    let again = ck(
        &["store", "import", "--json", rpme.to_str().unwrap()],
        &store,
    );
    assert!(again.ok, "{}", again.stderr);
    let j = again.json();
    assert_eq!(
        (j["objects_new"].as_u64(), j["bytes_hashed"].as_u64()),
        (Some(0), Some(0)),
        "{j}"
    );

    // A tampered `.rpme` (a byte of blob.txt flipped, in a store that lacks
    // it): refused, no object under its digest, fsck clean.
    let bytes = std::fs::read(&rpme).unwrap();
    let content = std::fs::read(reference.join("usr/share/ck-data/blob.txt")).unwrap();
    let at = cowkit_testutil::find(&bytes, &content[..4096]).expect("blob.txt in the .rpme");
    let mut bad = bytes.clone();
    bad[at + 5000] ^= 0x55;
    let bad_path = d.join("bad.rpme");
    std::fs::write(&bad_path, &bad).unwrap();
    let fresh = d.join("fresh-store");
    let r = ck(&["store", "import", bad_path.to_str().unwrap()], &fresh);
    assert!(!r.ok, "a tampered .rpme was imported");
    assert!(r.stderr.contains("header says"), "{}", r.stderr);
    let f = ck(&["store", "fsck", "--json"], &fresh);
    assert!(f.ok, "{}", f.stderr);
    assert_eq!(f.json()["checked"], 0, "{}", f.json());
}

/// Fingerprints are computed once: a second import of an unchanged tree
/// takes every digest from the store's digest cache and reads nothing; a
/// file whose content changed, or whose mtime was set back after a change
/// (its ctime still moved), is hashed again; `--rehash` trusts nothing.
#[test]
fn unchanged_files_are_not_hashed_twice() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let src = mkdir(&d.join("src"));
    for i in 0..6u64 {
        std::fs::write(src.join(format!("f{i}")), pattern(100_000 + i as usize, i)).unwrap();
    }
    // Files changed in the last 2 s are not recorded (coarse timestamps).
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let store = d.join("store");
    let import = |extra: &[&str]| {
        let mut args = vec!["store", "import", "--json"];
        args.extend_from_slice(extra);
        args.push(src.to_str().unwrap());
        let r = ck(&args, &store);
        assert!(r.ok, "{}", r.stderr);
        r.json()
    };
    let j = import(&[]);
    assert_eq!(
        (j["files"].as_u64(), j["digests_cached"].as_u64()),
        (Some(6), Some(0)),
        "{j}"
    );
    let j = import(&[]);
    assert_eq!(j["digests_cached"], 6, "{j}");
    assert_eq!(j["bytes_hashed"], 0, "{j}");

    // f0 changes; f1 changes and gets its old mtime back.
    std::fs::write(src.join("f0"), b"new content").unwrap();
    let old = std::fs::metadata(src.join("f1"))
        .unwrap()
        .modified()
        .unwrap();
    std::fs::write(src.join("f1"), pattern(100_001, 99)).unwrap();
    std::fs::File::options()
        .write(true)
        .open(src.join("f1"))
        .unwrap()
        .set_modified(old)
        .unwrap();
    let j = import(&[]);
    assert_eq!(j["digests_cached"], 4, "{j}");
    assert_eq!(j["objects_new"], 2, "{j}");
    let j = import(&["--rehash"]);
    assert_eq!(j["digests_cached"], 0, "{j}");
    // Every object is what its name says, f0 and f1 included.
    let f = ck(&["store", "fsck", "--json"], &store);
    assert!(f.ok, "{}", f.stderr);
    assert_eq!(f.json()["damaged"].as_array().unwrap().len(), 0);
    let want = cowkit_testutil::file_sha(&src.join("f1"));
    assert!(store
        .join("objects")
        .join(&want[..2])
        .join(&want[2..])
        .exists());
}

/// fs-verity. This kernel is built without `CONFIG_FS_VERITY`, so no
/// filesystem here can enable it: `--verity` must refuse clearly and leave
/// no image. An image that records fs-verity digests in its metacopy
/// xattrs (written through the library with digests its objects do not
/// have, as a replaced object would not) is mounted with
/// `verity=require` and its files fail to read (EIO); mounted by hand
/// with `verity=off`, the same image reads right, so the xattr format is
/// one overlayfs accepts.
#[test]
fn verity_is_refused_clearly_and_required_when_recorded() {
    if !as_root(
        "verity_is_refused_clearly_and_required_when_recorded",
        "overlayfs mounts",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let src = mkdir(&d.join("src"));
    std::fs::write(src.join("a"), pattern(50_000, 1)).unwrap();
    std::fs::write(src.join("b"), b"bee").unwrap();
    let store = d.join("store");
    let r = ck(
        &[
            "image",
            "create",
            "v",
            "--verity",
            "--from",
            src.to_str().unwrap(),
        ],
        &store,
    );
    assert!(!r.ok, "--verity on a store without fs-verity succeeded");
    assert!(r.stderr.contains("cannot keep fs-verity"), "{}", r.stderr);
    assert!(r.stderr.contains("hint:"), "{}", r.stderr);
    assert!(!store.join("images/v.erofs").exists());

    let st = cowkit_store::Store::open(&store).unwrap();
    let (entries, _) = cowkit_store::tree::read_tree(&st, &src).unwrap();
    let verity = entries
        .iter()
        .filter_map(|e| e.digest.clone())
        .map(|dg| (dg, [0x5a; 32]))
        .collect();
    for (name, format) in [("fake-verity", "erofs"), ("fake-verity-dir", "dir")] {
        if format == "erofs" {
            let opts = cowkit_store::erofs::Options {
                verity: std::collections::HashMap::clone(&verity),
                ..Default::default()
            };
            cowkit_store::image::create_erofs(&st, name, &entries, &opts).unwrap();
        } else {
            cowkit_store::image::create(&st, name, &entries, &verity).unwrap();
        }
        assert!(cowkit_store::image::carries_verity(&st, name).unwrap());
        let mnt = d.join(format!("mnt-{format}"));
        let m = mount(&store, name, &mnt);
        let opts = run_ok(
            Command::new("findmnt")
                .args(["-n", "-o", "OPTIONS"])
                .arg(&mnt),
            "findmnt",
        );
        assert!(
            String::from_utf8_lossy(&opts.stdout).contains("verity=require"),
            "{}",
            String::from_utf8_lossy(&opts.stdout)
        );
        let err = std::fs::read(mnt.join("a")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc_eio()), "{format}: {err}");
        drop(m);
        if format == "dir" {
            // verity=off: the same layers read right.
            let layers = format!(
                "ro,metacopy=on,verity=off,lowerdir={}::{}",
                store.join("images").join(name).display(),
                store.join("objects").display()
            );
            mkdir(&mnt);
            run_ok(
                Command::new("mount")
                    .args(["-t", "overlay", "overlay", "-o", &layers])
                    .arg(&mnt),
                "mount verity=off",
            );
            let _m = Mounted(mnt.clone());
            assert_eq!(std::fs::read(mnt.join("a")).unwrap(), pattern(50_000, 1));
            assert_eq!(std::fs::read(mnt.join("b")).unwrap(), b"bee");
        }
    }
}

fn libc_eio() -> i32 {
    rustix::io::Errno::IO.raw_os_error()
}
