//! Issue 25, item 5: reading a hostile EROFS image is bounded. Each
//! hostile image is made with the crate's own writer (and then grown or
//! patched), put in a store's `images/`, and read by `fsck`, `gc` and the
//! mount path's reader (`image::carries_verity`) in a child process (this
//! test binary run again) whose address space is capped with
//! `RLIMIT_AS`: a reader that copies per entry, or reads the whole file,
//! dies there instead of passing.

use std::ffi::OsString;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cowkit_fs::meta::Xattr;
use cowkit_store::erofs::{self, Options};
use cowkit_store::image;
use cowkit_store::tree::{Entry, Kind};
use cowkit_store::Store;
use rustix::fs::Timespec;

/// The child's address-space cap: far below what the hostile images made
/// the old reader allocate (19 GB and 4 GiB), far above what reading them
/// needs.
const CHILD_AS: u64 = 768 << 20;
const CHILD_ENV: &str = "COWKIT_ISSUE25_CHILD";

fn entry(path: &str, kind: Kind) -> Entry {
    let t = Timespec {
        tv_sec: 1,
        tv_nsec: 0,
    };
    Entry {
        path: PathBuf::from(path),
        kind,
        perm: 0o644,
        uid: 0,
        gid: 0,
        atime: t,
        mtime: t,
        xattrs: Vec::new(),
        target: None,
        rdev: 0,
        size: 0,
        digest: None,
        link: None,
    }
}

const DIGEST: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

/// The image: 74,752 entries naming one inode that carries 260 KB
/// of xattrs (four values of 65,000 bytes). For EROFS this is 74,752
/// hardlinks of one file, which the writer makes as such.
fn hardlink_bomb() -> Vec<u8> {
    let mut v = vec![entry("", Kind::Dir)];
    let mut f = entry("f", Kind::File);
    f.size = 1;
    f.digest = Some(DIGEST.into());
    for i in 0..4 {
        f.xattrs.push(Xattr {
            name: OsString::from(format!("user.x{i}")),
            value: vec![b'x'; 65_000],
        });
    }
    v.push(f);
    for i in 1..74_752 {
        let mut l = entry(&base36(i), Kind::File);
        l.size = 1;
        l.digest = Some(DIGEST.into());
        l.link = Some(1);
        v.push(l);
    }
    let img = erofs::write(&v, &Options::default()).unwrap();
    assert!(img.len() < 1_500_000, "{} bytes", img.len());
    img
}

/// `i` in four base-36 digits: 74,752 short distinct names.
fn base36(mut i: u32) -> String {
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut s = [b'0'; 4];
    for c in s.iter_mut().rev() {
        *c = digits[(i % 36) as usize];
        i /= 36;
    }
    String::from_utf8(s.to_vec()).unwrap()
}

/// A small valid image.
fn small() -> Vec<u8> {
    let mut v = vec![entry("", Kind::Dir), entry("d", Kind::Dir)];
    let mut f = entry("d/f", Kind::File);
    f.size = 5;
    f.digest = Some(DIGEST.into());
    v.push(f);
    erofs::write(&v, &Options::default()).unwrap()
}

/// A store in a fresh directory with `img` as `images/NAME.erofs`, grown
/// to `len` bytes (a hole) when given.
fn store_with(name: &str, img: &[u8], len: Option<u64>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(dir.path()).unwrap());
    std::fs::create_dir_all(dir.path().join("images")).unwrap();
    let file = dir.path().join(format!("images/{name}.erofs"));
    let f = std::fs::File::create(&file).unwrap();
    f.write_all_at(img, 0).unwrap();
    if let Some(len) = len {
        f.set_len(len).unwrap();
    }
    dir
}

/// Run `op` (`fsck`, `gc` or `read`) on the store at `dir` in a child
/// capped at [`CHILD_AS`]; its one line of output, or a panic naming how it
/// died.
fn in_child(test: &str, op: &str, dir: &Path, name: &str) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{op}\n{}\n{name}", dir.display()))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.split_once("RESULT ").map(|(_, r)| r))
        .map(str::to_string);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if let Some(hwm) = stderr.lines().find(|l| l.contains("VmHWM")) {
        eprintln!("{}", hwm.split_whitespace().collect::<Vec<_>>().join(" "));
    }
    match line {
        Some(l) if out.status.success() => l,
        _ => panic!(
            "`{op}` died under a {} MiB address-space cap ({}): {}",
            CHILD_AS >> 20,
            out.status,
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .rev()
                .take(8)
                .collect::<Vec<_>>()
                .join(" | ")
        ),
    }
}

/// In the child: cap the address space, do the operation, print
/// `RESULT …` and the peak RSS.
fn child(spec: &str) {
    let mut it = spec.split('\n');
    let (op, dir, name) = (it.next().unwrap(), it.next().unwrap(), it.next().unwrap());
    let lim = rustix::process::Rlimit {
        current: Some(CHILD_AS),
        maximum: Some(CHILD_AS),
    };
    rustix::process::setrlimit(rustix::process::Resource::As, lim).unwrap();
    let dir = Path::new(dir);
    let result = match op {
        "fsck" => Store::open(dir)
            .and_then(|s| s.fsck())
            .map(|f| format!("fsck ok, {} missing", f.missing.len())),
        "gc" => Store::open_exclusive(dir)
            .and_then(|s| s.gc())
            .map(|g| format!("gc ok, {} kept", g.kept)),
        "read" => Store::open(dir)
            .and_then(|s| image::carries_verity(&s, name))
            .map(|v| format!("read ok, verity {v}")),
        _ => unreachable!(),
    };
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM"))
        .unwrap_or("");
    eprintln!("{op}: {hwm}");
    match result {
        Ok(r) => println!("RESULT {r}"),
        Err(e) => println!("RESULT error: {e}"),
    }
}

fn run_all(test: &str, dir: &Path, name: &str) -> Vec<String> {
    ["fsck", "gc", "read"]
        .iter()
        .map(|op| in_child(test, op, dir, name))
        .collect()
}

/// 74,752 hardlinks of one inode with 260 KB of xattrs (a 1.3 MB image):
/// the old reader copied the xattrs for every entry (19 GB). Hardlinks are
/// valid EROFS (the kernel and fsck.erofs take entries naming one nid as
/// links): the image reads, its inode once.
#[test]
fn hardlinks_of_one_inode_with_large_xattrs_read_within_bounds() {
    const NAME: &str = "hardlinks_of_one_inode_with_large_xattrs_read_within_bounds";
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        return child(&spec);
    }
    let dir = store_with("bomb", &hardlink_bomb(), None);
    let got = run_all(NAME, dir.path(), "bomb");
    assert_eq!(
        got,
        [
            "fsck ok, 74752 missing",
            "gc ok, 0 kept",
            "read ok, verity false"
        ]
    );
}

/// A valid image extended to 4 GiB with a hole: the old code read the
/// whole file into memory. It is still a valid image (the kernel mounts
/// it): read within bounds, one reference found.
#[test]
fn image_grown_to_4_gib_with_a_hole_reads_within_bounds() {
    const NAME: &str = "image_grown_to_4_gib_with_a_hole_reads_within_bounds";
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        return child(&spec);
    }
    let dir = store_with("grown", &small(), Some(4 << 30));
    let got = run_all(NAME, dir.path(), "grown");
    assert_eq!(
        got,
        [
            "fsck ok, 1 missing",
            "gc ok, 0 kept",
            "read ok, verity false"
        ]
    );
}

// In-process checks of the reader's refusals and sharing, on images made
// by the writer and then patched.

fn nid_of(img: &[u8], path: &str) -> u64 {
    let r = erofs::Reader::new(img).unwrap();
    let walked = r.walk().unwrap();
    walked
        .iter()
        .find(|(p, _)| p == Path::new(path))
        .unwrap_or_else(|| panic!("{path} not in the image"))
        .1
        .nid
}

fn put_u64(img: &mut [u8], at: u64, v: u64) {
    img[at as usize..at as usize + 8].copy_from_slice(&v.to_le_bytes());
}

fn walk_err(img: &[u8]) -> String {
    match erofs::Reader::new(img).and_then(|r| r.walk()) {
        Ok(w) => panic!("read {} entries", w.len()),
        Err(e) => e.to_string(),
    }
}

/// A directory entry naming an ancestor (a cycle) or another directory (a
/// hardlinked directory) is refused: each directory is read once.
#[test]
fn directory_cycles_and_hardlinked_directories_are_refused() {
    let v = vec![
        entry("", Kind::Dir),
        entry("a", Kind::Dir),
        entry("a/b", Kind::Dir),
        entry("c", Kind::Dir),
    ];
    let img = erofs::write(&v, &Options::default()).unwrap();
    // `a` is inline (no xattrs): its third entry (`.`, `..`, `b`) is `b`.
    let b_entry = nid_of(&img, "a") * 32 + 64 + 24;
    for target in ["", "a", "c"] {
        let mut bad = img.clone();
        put_u64(&mut bad, b_entry, nid_of(&img, target));
        let e = walk_err(&bad);
        assert!(e.contains("directory named twice"), "{target}: {e}");
    }
}

/// Two directories sharing their blocks (each entry of the blocks listed
/// once per directory, a multiplier of the image's real size) are
/// refused: no two parts of an image may overlap. The old reader read
/// the blocks once per directory.
#[test]
fn directories_sharing_blocks_are_refused() {
    let mut v = vec![
        entry("", Kind::Dir),
        entry("p", Kind::Dir),
        entry("q", Kind::Dir),
    ];
    for d in ["p", "q"] {
        for i in 0..100 {
            v.push(entry(&format!("{d}/{i:03}-{}", "n".repeat(40)), Kind::File));
        }
    }
    let img = erofs::write(&v, &Options::default()).unwrap();
    let (p, q) = (nid_of(&img, "p") * 32, nid_of(&img, "q") * 32);
    // Both have their entries in blocks (layout 0): i_u is the block.
    assert_eq!(img[p as usize] >> 1 & 7, 0);
    let mut bad = img.clone();
    bad.copy_within(p as usize + 16..p as usize + 20, q as usize + 16);
    let e = walk_err(&bad);
    assert!(e.contains("overlap"), "{e}");
    assert!(e.contains("(in memory)"), "{e}");
}

/// Paths are what a walk keeps per entry; a tree 15 levels of 250-byte
/// names deep with 20,000 hardlinks at the bottom (a 0.5 MB image) would
/// keep 78 MB of paths: refused by the bound on bytes kept per byte read.
#[test]
fn deep_paths_of_many_entries_are_bounded() {
    let mut v = vec![entry("", Kind::Dir)];
    let mut base = String::new();
    for i in 0..15 {
        base.push_str(&format!("{i:x}{}/", "d".repeat(249)));
        v.push(entry(base.trim_end_matches('/'), Kind::Dir));
    }
    let first = v.len();
    v.push(entry(&format!("{base}f"), Kind::File));
    for i in 1..20_000 {
        let mut l = entry(&format!("{base}{}", base36(i)), Kind::File);
        l.link = Some(first);
        v.push(l);
    }
    let img = erofs::write(&v, &Options::default()).unwrap();
    assert!(img.len() < 600_000, "{} bytes", img.len());
    let e = walk_err(&img);
    assert!(
        e.contains("past cowkit's bounds") && e.contains("per byte"),
        "{e}"
    );
}

/// The 74,752 hardlinks share one inode's xattrs: read once.
#[test]
fn hardlinks_share_one_inode() {
    let img = hardlink_bomb();
    let r = erofs::Reader::new(&img).unwrap();
    let w = r.walk().unwrap();
    assert_eq!(w.len(), 74_753);
    let first = &w.iter().find(|(p, _)| p == Path::new("f")).unwrap().1;
    assert_eq!(first.xattrs.len(), 4 + 3);
    for (_, i) in &w[1..] {
        assert!(std::sync::Arc::ptr_eq(&i.xattrs, &first.xattrs));
    }
}

/// A redirect that is not `/ab/cdef…` (an object's path) is refused by
/// `objects`, naming the file; the old reader passed any bytes on.
#[test]
fn redirects_that_are_not_objects_are_refused() {
    let img = small();
    let rel = format!("/{}/{}", &DIGEST[..2], &DIGEST[2..]);
    let at = img
        .windows(rel.len())
        .position(|w| w == rel.as_bytes())
        .unwrap();
    for (patch, what) in [(b'/', "a slash"), (b'G', "not hex")] {
        let mut bad = img.clone();
        bad[at + 10] = patch;
        let e = erofs::objects(&bad).unwrap_err().to_string();
        assert!(
            e.contains("`/d/f` redirects to") && e.contains("not an object"),
            "{what}: {e}"
        );
    }
    assert_eq!(erofs::objects(&img).unwrap().len(), 1);
}

/// An image file is opened without following a symlink, and a fifo in its
/// place is refused, not waited on; errors name the file.
#[test]
fn image_files_are_regular_files_read_where_the_metadata_points() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("i.erofs");
    std::fs::write(&file, small()).unwrap();
    let r = erofs::Reader::open(&file).unwrap();
    let m = erofs::Reader::new(&std::fs::read(&file).unwrap())
        .unwrap()
        .walk()
        .unwrap();
    assert_eq!(r.walk().unwrap(), m);
    let link = dir.path().join("l.erofs");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    let e = erofs::Reader::open(&link).err().unwrap().to_string();
    assert!(e.contains("l.erofs"), "{e}");
    let fifo = dir.path().join("f.erofs");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let e = erofs::Reader::open(&fifo).err().unwrap();
    assert!(e.to_string().contains("f.erofs"), "{e}");
    assert!(cowkit_fs::dir::is_not_regular(&e), "{e:?}");
    // Cut short: the error names the file.
    let cut = dir.path().join("cut.erofs");
    std::fs::write(&cut, &small()[..1300]).unwrap();
    let e = erofs::Reader::open(&cut)
        .and_then(|r| r.walk())
        .unwrap_err();
    assert!(e.to_string().contains("cut.erofs"), "{e}");
}

/// The writer refuses what the reader would: a path over 4,095 bytes.
#[test]
fn the_writer_refuses_paths_the_reader_would() {
    let mut v = vec![entry("", Kind::Dir)];
    let mut base = String::new();
    for _ in 0..17 {
        base.push_str(&"e".repeat(250));
        v.push(entry(&base, Kind::Dir));
        base.push('/');
    }
    let e = erofs::write(&v, &Options::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("over 4,095 bytes"), "{e}");
}
