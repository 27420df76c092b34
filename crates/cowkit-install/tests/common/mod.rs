//! Helpers for the install tests (also used by `crates/cowkit/tests/rpm.rs`):
//! fixture packages, small packages built from spec text, snapshots of
//! installed trees, what `rpm -qp` says about a header, and header edits
//! that keep the header digest valid.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufReader;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use cowkit_fs::root::Root;
use cowkit_install::{install, Error, NoProgress, Options, Owners, Summary};
use sha2::{Digest, Sha256};

/// Every payload compressor `rpmbuild` can write here.
pub const PAYLOADS: [&str; 6] = [
    "w19.zstdio",
    "w6.xzdio",
    "w9.gzdio",
    "w9.bzdio",
    "w9.lzdio",
    "w.ufdio",
];

/// Where the fixture package installs its files (relative to a root).
pub const FIXTURE: &str = "usr/share/cowkit-fixture";

/// Size of the fixture's `dir/large.bin` (and `dir/sub/same-content.bin`).
pub const LARGE: u64 = 1_048_581;

/// The `etc/passwd` and `etc/group` lines that give `nobody:nogroup`
/// (owner of the fixture's `name with spaces`) the ids 65534.
pub const PASSWD: &str = "root:x:0:0::/root:/bin/sh\nnobody:x:65534:65534::/:/bin/false\n";
/// See [`PASSWD`].
pub const GROUP: &str = "root:x:0:\nnogroup:x:65534:\n";

/// The shared temporary directory of the test binaries.
pub fn tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

/// The fixture package `cowkit-fixture` with `payload`, built once.
pub fn fixture(payload: &str) -> PathBuf {
    cowkit_testutil::rpm_fixture(tmp(), payload)
}

/// Write [`PASSWD`] and [`GROUP`] into `root/etc`.
pub fn write_owner_db(root: &Path) {
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("etc/passwd"), PASSWD).unwrap();
    std::fs::write(root.join("etc/group"), GROUP).unwrap();
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Lower-case hex SHA-256 of `b`.
pub fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// Where `needle` first occurs in `haystack`.
pub fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// How often `needle` occurs in `haystack`.
pub fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

/// Transcode `rpm` into `out` with the library, default options.
pub fn transcode(rpm: &Path, out: &Path) -> cowkit_extents::transcode::Summary {
    transcode_with(rpm, out, &cowkit_extents::transcode::Options::default())
}

/// Transcode `rpm` into `out` with the library and `opts`.
pub fn transcode_with(
    rpm: &Path,
    out: &Path,
    opts: &cowkit_extents::transcode::Options,
) -> cowkit_extents::transcode::Summary {
    let input = BufReader::new(File::open(rpm).unwrap());
    let begun = cowkit_extents::transcode::begin(input)
        .unwrap_or_else(|e| panic!("transcode {}: {e}", rpm.display()));
    begun
        .write(
            File::create(out).unwrap(),
            opts,
            &cowkit_extents::transcode::NoProgress,
        )
        .unwrap_or_else(|e| panic!("transcode {}: {e}", rpm.display()))
}

// ---------------------------------------------------------------------------
// Packages from spec text.

/// The spec of a package named `name`: `install` is its `%install` (shell,
/// with `%{buildroot}`), `files` its `%files`.
pub fn spec(name: &str, install: &str, files: &str) -> String {
    [
        &format!("Name: {name}\n"),
        "Version: 1\nRelease: 1\nSummary: cowkit install test package\nLicense: MIT\n",
        "BuildArch: noarch\n",
        "%global debug_package %{nil}\n%global __os_install_post %{nil}\n",
        "%global _build_id_links none\n",
        "%description\nBuilt by the cowkit install tests.\n",
        "%install\n",
        install,
        "\n%files\n",
        files,
        "\n",
    ]
    .concat()
}

/// The package of [`spec`]`(name, install, files)` with `payload`, built
/// once and kept in the target's temporary directory under a hash of its
/// spec, for later runs too.
pub fn build_rpm(name: &str, install: &str, files: &str, payload: &str) -> PathBuf {
    let spec = spec(name, install, files);
    let tag = &sha256_hex(format!("{payload}\n{spec}").as_bytes())[..16];
    let dst = tmp().join("test-rpms").join(format!("{name}-{tag}.rpm"));
    if !dst.exists() {
        rpmbuild(&spec, payload, &dst);
    }
    dst
}

/// The package of [`spec`]`(name, install, files)` with `payload`, built
/// into `dir` (for specs that name paths of one test run).
pub fn build_rpm_in(dir: &Path, name: &str, install: &str, files: &str, payload: &str) -> PathBuf {
    let dst = dir.join(format!("{name}.rpm"));
    rpmbuild(&spec(name, install, files), payload, &dst);
    dst
}

/// Run `rpmbuild -bb` on `spec` in a fresh top directory and put the
/// package at `dst` (atomically: concurrent builds of one spec are fine).
pub fn rpmbuild(spec: &str, payload: &str, dst: &Path) {
    let top = tempfile::tempdir_in(tmp()).unwrap();
    for d in ["SPECS", "RPMS", "BUILD", "BUILDROOT", "SOURCES", "SRPMS"] {
        std::fs::create_dir_all(top.path().join(d)).unwrap();
    }
    let spec_path = top.path().join("SPECS/test.spec");
    std::fs::write(&spec_path, spec).unwrap();
    let out = Command::new("rpmbuild")
        .arg("--define")
        .arg(format!("_topdir {}", top.path().display()))
        .arg("--define")
        .arg(format!("_binary_payload {payload}"))
        .args(["--nodeps", "-bb"])
        .arg(&spec_path)
        .output()
        .expect("run rpmbuild (Debian package `rpm`)");
    assert!(
        out.status.success(),
        "rpmbuild failed:\n{}\n{spec}",
        String::from_utf8_lossy(&out.stderr)
    );
    let built = std::fs::read_dir(top.path().join("RPMS/noarch"))
        .unwrap()
        .next()
        .expect("rpmbuild made a package")
        .unwrap()
        .path();
    std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
    let part = dst.with_extension(format!("part{}", std::process::id()));
    std::fs::copy(&built, &part).unwrap();
    std::fs::rename(&part, dst).unwrap();
}

// ---------------------------------------------------------------------------
// What the header says, according to rpm itself.

/// One file of a package, as `rpm -qp` lists it.
#[derive(Clone, Debug)]
pub struct HeaderFile {
    /// Absolute path.
    pub path: String,
    /// Owner name.
    pub user: String,
    /// Group name.
    pub group: String,
    /// Modification time.
    pub mtime: i64,
    /// Mode with type bits.
    pub mode: u32,
    /// `%ghost`.
    pub ghost: bool,
}

/// The file list of `pkg` (an `.rpm` or `.rpme`) according to `rpm -qp`.
pub fn header_files(pkg: &Path) -> Vec<HeaderFile> {
    let out = Command::new("rpm")
        .args(["-qp", "--nosignature", "--nodigest", "--qf"])
        .arg(
            "[%{FILENAMES}\\t%{FILEUSERNAME}\\t%{FILEGROUPNAME}\\t%{FILEMTIMES}\\t\
             %{FILEMODES}\\t%{FILEFLAGS}\\n]",
        )
        .arg(pkg)
        .output()
        .expect("run rpm");
    assert!(
        out.status.success(),
        "rpm -qp {}: {}",
        pkg.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 6, "{l:?}");
            let mode: u32 = f[4].parse().unwrap();
            let flags: u32 = f[5].parse().unwrap();
            HeaderFile {
                path: f[0].to_string(),
                user: f[1].to_string(),
                group: f[2].to_string(),
                mtime: f[3].parse().unwrap(),
                mode: mode & 0o177777,
                ghost: flags & 64 != 0, // RPMFILE_GHOST
            }
        })
        .collect()
}

/// The id of `name` in [`PASSWD`] / [`GROUP`].
pub fn id_of(name: &str) -> u32 {
    match name {
        "root" => 0,
        "nobody" | "nogroup" => 65534,
        other => panic!("no id for {other}"),
    }
}

// ---------------------------------------------------------------------------
// Installed trees.

/// One entry of an installed tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// `d`, `f`, `l`, `p`, `s`, `c` or `b`.
    pub kind: char,
    /// Permission bits, with setuid, setgid and sticky.
    pub perm: u32,
    /// Size of a regular file (0 otherwise).
    pub size: u64,
    /// SHA-256 of a regular file's content.
    pub sha256: Option<String>,
    /// A symlink's target.
    pub target: Option<PathBuf>,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Modification time, seconds.
    pub mtime: i64,
    /// `(device, inode)`.
    pub ino: (u64, u64),
    /// `security.capability` of a regular file.
    pub caps: Option<Vec<u8>>,
    /// `(major, minor)` of a device node.
    pub rdev: Option<(u32, u32)>,
}

/// Type, permissions, size, content hash, link target, device number.
pub type Shape = (
    char,
    u32,
    u64,
    Option<String>,
    Option<PathBuf>,
    Option<(u32, u32)>,
);

impl Entry {
    /// What `rpm2cpio | cpio -idm` must agree on: type, permissions, size,
    /// content, link target and device number.
    pub fn shape(&self) -> Shape {
        (
            self.kind,
            self.perm,
            self.size,
            self.sha256.clone(),
            self.target.clone(),
            self.rdev,
        )
    }
}

/// A tree: relative path → entry.
pub type Tree = BTreeMap<String, Entry>;

/// `security.capability` of `path` (not following a symlink), if any.
pub fn caps_of(path: &Path) -> Option<Vec<u8>> {
    let mut buf = [0u8; 256];
    match rustix::fs::lgetxattr(path, "security.capability", &mut buf[..]) {
        Ok(n) => Some(buf[..n].to_vec()),
        Err(rustix::io::Errno::NODATA) | Err(rustix::io::Errno::OPNOTSUPP) => None,
        Err(e) => panic!("lgetxattr {}: {e}", path.display()),
    }
}

/// Every entry under `dir` (not `dir` itself), symlinks not followed.
pub fn snapshot(dir: &Path) -> Tree {
    fn walk(base: &Path, dir: &Path, out: &mut Tree) {
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for p in names {
            let m = std::fs::symlink_metadata(&p).unwrap();
            let t = m.file_type();
            let kind = if t.is_dir() {
                'd'
            } else if t.is_file() {
                'f'
            } else if t.is_symlink() {
                'l'
            } else if t.is_fifo() {
                'p'
            } else if t.is_socket() {
                's'
            } else if t.is_char_device() {
                'c'
            } else {
                'b'
            };
            let rel = p.strip_prefix(base).unwrap().to_str().unwrap().to_string();
            out.insert(
                rel,
                Entry {
                    kind,
                    perm: m.mode() & 0o7777,
                    size: if kind == 'f' { m.len() } else { 0 },
                    sha256: (kind == 'f').then(|| sha256_hex(&std::fs::read(&p).unwrap())),
                    target: (kind == 'l').then(|| std::fs::read_link(&p).unwrap()),
                    uid: m.uid(),
                    gid: m.gid(),
                    mtime: m.mtime(),
                    ino: (m.dev(), m.ino()),
                    caps: if kind == 'f' { caps_of(&p) } else { None },
                    rdev: matches!(kind, 'c' | 'b').then(|| {
                        let d = m.rdev();
                        (rustix::fs::major(d), rustix::fs::minor(d))
                    }),
                },
            );
            if kind == 'd' {
                walk(base, &p, out);
            }
        }
    }
    let mut out = Tree::new();
    walk(dir, dir, &mut out);
    out
}

/// The hardlink sets of a tree: regular files sharing an inode, two or
/// more, by relative path.
pub fn hardlink_groups(tree: &Tree) -> BTreeSet<Vec<String>> {
    let mut by_ino: BTreeMap<(u64, u64), Vec<String>> = BTreeMap::new();
    for (p, e) in tree {
        if e.kind == 'f' {
            by_ino.entry(e.ino).or_default().push(p.clone());
        }
    }
    by_ino.into_values().filter(|v| v.len() > 1).collect()
}

/// Differences between two trees on `field`, one line per path.
pub fn diff<T: PartialEq + std::fmt::Debug>(
    a: &Tree,
    b: &Tree,
    field: impl Fn(&Entry) -> T,
) -> Vec<String> {
    let paths: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let mut out = Vec::new();
    for p in paths {
        match (a.get(p), b.get(p)) {
            (Some(x), Some(y)) if field(x) == field(y) => {}
            (Some(x), Some(y)) => out.push(format!("{p}: {:?} != {:?}", field(x), field(y))),
            (Some(_), None) => out.push(format!("{p}: only in the first tree")),
            (None, Some(_)) => out.push(format!("{p}: only in the second tree")),
            (None, None) => unreachable!(),
        }
    }
    out
}

/// Every path under `dir` whose name starts with `.ck` (the installer's
/// temporary names), or whose name ends in `.tmp`.
pub fn temporary_names(dir: &Path) -> Vec<String> {
    snapshot(dir)
        .into_keys()
        .filter(|p| {
            let name = p.rsplit('/').next().unwrap();
            name.starts_with(".ck") || name.ends_with(".tmp")
        })
        .collect()
}

/// The capabilities `setcap cap_net_raw=ep` writes, read back from a file
/// made in `dir` (which must support `security.*` xattrs).
pub fn setcap_reference(dir: &Path) -> Vec<u8> {
    let f = dir.join(format!("setcap-reference-{}", std::process::id()));
    std::fs::write(&f, b"x").unwrap();
    let out = Command::new("setcap")
        .arg("cap_net_raw=ep")
        .arg(&f)
        .output()
        .expect("run setcap (Debian package `libcap2-bin`)");
    assert!(
        out.status.success(),
        "setcap: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let caps = caps_of(&f).expect("setcap wrote security.capability");
    std::fs::remove_file(&f).unwrap();
    caps
}

// ---------------------------------------------------------------------------
// Package bytes.

fn be32(b: &[u8], at: usize) -> usize {
    u32::from_be_bytes(b[at..at + 4].try_into().unwrap()) as usize
}

/// `(start, end)` of the main header in an RPM's bytes, found from the
/// lead and header intros (independently of cowkit).
pub fn header_range(b: &[u8]) -> (usize, usize) {
    let sig_len = 16 + be32(b, 96 + 8) * 16 + be32(b, 96 + 12);
    let start = 96 + sig_len.next_multiple_of(8);
    let end = start + 16 + be32(b, start + 8) * 16 + be32(b, start + 12);
    (start, end)
}

/// Change the main header with `edit`, then write the new header's
/// SHA-256 (hex) over the old one in the signature header, so that the
/// header digest check passes, as a forger would do.
pub fn edit_header(b: &mut [u8], edit: impl FnOnce(&mut [u8])) {
    let (start, end) = header_range(b);
    let old = sha256_hex(&b[start..end]);
    edit(&mut b[start..end]);
    let new = sha256_hex(&b[start..end]);
    let at = find(&b[..start], old.as_bytes()).expect("RPMSIGTAG_SHA256 in the signature header");
    b[at..at + 64].copy_from_slice(new.as_bytes());
}

/// Replace the only occurrence of `old` in `region` by `new` (same length).
pub fn replace_once(region: &mut [u8], old: &[u8], new: &[u8]) {
    assert_eq!(old.len(), new.len());
    assert_eq!(
        count(region, old),
        1,
        "{:?} must occur exactly once",
        String::from_utf8_lossy(old)
    );
    let at = find(region, old).unwrap();
    region[at..at + old.len()].copy_from_slice(new);
}

/// A sentinel directory outside the roots under test, with one file in
/// it; [`Outside::assert_untouched`] checks that nothing appeared in it and
/// the file is unchanged.
pub struct Outside {
    /// The directory.
    pub dir: PathBuf,
    before: Tree,
}

impl Outside {
    /// Make `dir` with a file `victim`.
    pub fn new(dir: PathBuf) -> Outside {
        Outside::with(dir, &[("victim", "host data\n")])
    }

    /// Make `dir` holding `files` (name, content).
    pub fn with(dir: PathBuf, files: &[(&str, &str)]) -> Outside {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, content) in files {
            std::fs::write(dir.join(name), content).unwrap();
        }
        let before = snapshot(&dir);
        Outside { dir, before }
    }

    /// Nothing was created, changed or removed in the directory.
    pub fn assert_untouched(&self, what: &str) {
        let now = snapshot(&self.dir);
        let d = diff(&self.before, &now, |e| e.clone());
        assert!(
            d.is_empty(),
            "{what}: the directory outside the root changed: {d:#?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Installing and checking installed trees.

/// An error and its causes on one line.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(x) = src {
        s.push_str(": ");
        s.push_str(&x.to_string());
        src = x.source();
    }
    s
}

pub fn install_with(root: &Path, pkg: &Path, opts: &Options) -> Result<Summary, Error> {
    let r = Root::open(root).expect("open the root");
    let owners = Owners::load(&r);
    install(&r, &owners, pkg, opts, &NoProgress)
}

pub fn install_ok(root: &Path, pkg: &Path) -> Summary {
    install_with(root, pkg, &Options::default()).unwrap_or_else(|e| {
        panic!(
            "install {} into {}: {}",
            pkg.display(),
            root.display(),
            chain(&e)
        )
    })
}

pub fn mkdir(p: &Path) -> PathBuf {
    std::fs::create_dir_all(p).unwrap();
    p.to_path_buf()
}

/// `rpm2cpio RPM | cpio -idm` in `dir` (as root: owners and modes kept).
pub fn cpio_extract(rpm: &Path, dir: &Path) {
    mkdir(dir);
    let out = Command::new("bash")
        .args([
            "-o",
            "pipefail",
            "-c",
            "rpm2cpio \"$1\" | cpio -idm --quiet",
            "sh",
        ])
        .arg(rpm)
        .current_dir(dir)
        .output()
        .expect("run rpm2cpio and cpio");
    assert!(
        out.status.success(),
        "rpm2cpio | cpio: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The entries of `tree` under `prefix` (itself included).
pub fn under(tree: &Tree, prefix: &str) -> Tree {
    tree.iter()
        .filter(|(p, _)| *p == prefix || p.starts_with(&format!("{prefix}/")))
        .map(|(p, e)| (p.clone(), e.clone()))
        .collect()
}

pub fn top_level(tree: &Tree) -> Vec<&str> {
    tree.keys()
        .filter(|p| !p.contains('/'))
        .map(|p| p.as_str())
        .collect()
}

pub fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p).unwrap().next().is_none()
}

pub fn regular_files(dir: &Path) -> Vec<String> {
    snapshot(dir)
        .into_iter()
        .filter(|(_, e)| e.kind == 'f')
        .map(|(p, _)| p)
        .collect()
}

/// The fixture's files as `rpm2cpio | cpio -idm` extracts them (ufdio
/// payload; every payload has the same files), once per process.
pub fn cpio_tree() -> &'static Tree {
    static T: OnceLock<Tree> = OnceLock::new();
    T.get_or_init(|| {
        let dir = tempfile::tempdir_in(tmp()).unwrap();
        cpio_extract(&fixture("w.ufdio"), dir.path());
        snapshot(dir.path())
    })
}

/// The expected content hash of a fixture file (`rel` under [`FIXTURE`]).
pub fn expected_sha(rel: &str) -> String {
    cpio_tree()[&format!("{FIXTURE}/{rel}")]
        .sha256
        .clone()
        .unwrap()
}

pub fn file_sha(p: &Path) -> String {
    sha256_hex(&std::fs::read(p).unwrap())
}

pub const HARDLINKS: [&str; 3] = ["dir/hl-c", "hl-a", "hl-b"];

pub fn expected_hardlinks(prefix: &str) -> std::collections::BTreeSet<Vec<String>> {
    [HARDLINKS.iter().map(|h| format!("{prefix}/{h}")).collect()].into()
}

/// Owners, modes, mtimes and capabilities of an installed tree are the
/// header's; no file is missing or extra; the ghost is absent.
pub fn assert_as_the_header_says(what: &str, tree: &Tree, header: &[HeaderFile], caps: &[u8]) {
    let mut listed = Vec::new();
    for h in header {
        let rel = h.path.trim_start_matches('/');
        if h.ghost {
            assert!(!tree.contains_key(rel), "{what}: ghost {rel} was installed");
            continue;
        }
        listed.push(rel.to_string());
        let e = tree
            .get(rel)
            .unwrap_or_else(|| panic!("{what}: {rel} is missing"));
        let kind = match h.mode & 0o170000 {
            0o040000 => 'd',
            0o100000 => 'f',
            0o120000 => 'l',
            m => panic!("unexpected type {m:o} of {rel}"),
        };
        assert_eq!(e.kind, kind, "{what}: type of {rel}");
        assert_eq!(
            format!("{:o}", e.perm),
            format!("{:o}", h.mode & 0o7777),
            "{what}: mode of {rel}"
        );
        assert_eq!(
            (e.uid, e.gid),
            (id_of(&h.user), id_of(&h.group)),
            "{what}: owner of {rel} ({}:{})",
            h.user,
            h.group
        );
        assert_eq!(e.mtime, h.mtime, "{what}: mtime of {rel}");
        let want_caps = rel.ends_with("/suid-cap").then_some(caps);
        assert_eq!(
            e.caps.as_deref(),
            want_caps,
            "{what}: capabilities of {rel}"
        );
    }
    listed.sort();
    let mut have: Vec<String> = under(tree, FIXTURE).into_keys().collect();
    have.sort();
    assert_eq!(have, listed, "{what}: the installed files are the header's");
}

/// Owners (all `root` here), modes and mtimes of everything the header
/// of `pkg` lists under `prefix`, in the installed `root`.
pub fn assert_as_the_header_says_under(pkg: &Path, root: &Path, prefix: &str) {
    let tree = snapshot(root);
    for h in header_files(pkg) {
        let rel = h.path.trim_start_matches('/');
        if h.ghost || !(rel == prefix || rel.starts_with(&format!("{prefix}/"))) {
            continue;
        }
        let e = &tree[rel];
        assert_eq!(
            format!("{:o}", e.perm),
            format!("{:o}", h.mode & 0o7777),
            "{}: mode of {rel}",
            pkg.display()
        );
        assert_eq!(
            (e.uid, e.gid),
            (id_of(&h.user), id_of(&h.group)),
            "{}: owner of {rel}",
            pkg.display()
        );
        assert_eq!(e.mtime, h.mtime, "{}: mtime of {rel}", pkg.display());
    }
}

/// `path` with its leading `/` removed, for joining onto a root.
pub fn in_root(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap())
}

/// The footer of an extents file after its prefix was changed: the new
/// header digest, and the checksum over table and footer recomputed.
pub fn refresh_footer(b: &mut [u8]) {
    let len = b.len();
    let footer = len - 176;
    let table = u64::from_le_bytes(b[footer + 32..footer + 40].try_into().unwrap()) as usize;
    let (start, end) = header_range(b);
    let header_sha: [u8; 32] = Sha256::digest(&b[start..end]).into();
    b[footer + 88..footer + 120].copy_from_slice(&header_sha);
    let mut h = Sha256::new();
    h.update(&b[table..footer]);
    h.update(&b[footer..footer + 128]);
    let sum: [u8; 32] = h.finalize().into();
    b[footer + 128..footer + 160].copy_from_slice(&sum);
}

pub fn footer_u64(b: &[u8], at: usize) -> u64 {
    let f = b.len() - 176;
    u64::from_le_bytes(b[f + at..f + at + 8].try_into().unwrap())
}
