//! Directory trees: snapshots of every entry below a directory, their
//! differences, hardlink groups, and a sentinel directory that must stay
//! untouched.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::FileType;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{run_ok, sha256_hex};

/// One entry of a tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// [`kind_of`] its type: `d`, `f`, `l`, `p`, `s`, `c` or `b`.
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

/// The letter of a file type: `d` directory, `f` regular file, `l`
/// symlink, `p` fifo, `s` socket, `c` character and `b` block device.
pub fn kind_of(t: FileType) -> char {
    if t.is_dir() {
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
    }
}

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
            let kind = kind_of(m.file_type());
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

/// The entries of `tree` under `prefix` (itself included).
pub fn under(tree: &Tree, prefix: &str) -> Tree {
    tree.iter()
        .filter(|(p, _)| *p == prefix || p.starts_with(&format!("{prefix}/")))
        .map(|(p, e)| (p.clone(), e.clone()))
        .collect()
}

/// The paths of `tree` that are not below another entry.
pub fn top_level(tree: &Tree) -> Vec<&str> {
    tree.keys()
        .filter(|p| !p.contains('/'))
        .map(|p| p.as_str())
        .collect()
}

/// The relative paths of the regular files under `dir`.
pub fn regular_files(dir: &Path) -> Vec<String> {
    snapshot(dir)
        .into_iter()
        .filter(|(_, e)| e.kind == 'f')
        .map(|(p, _)| p)
        .collect()
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

/// Whether the directory `p` has no entries.
pub fn is_empty_dir(p: &Path) -> bool {
    std::fs::read_dir(p).unwrap().next().is_none()
}

/// Create the directory `p` and its parents; returns `p`.
pub fn mkdir(p: &Path) -> PathBuf {
    std::fs::create_dir_all(p).unwrap_or_else(|e| panic!("mkdir {}: {e}", p.display()));
    p.to_path_buf()
}

/// `path` with its leading `/` removed, joined onto `root`.
pub fn in_root(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap())
}

/// The capabilities `setcap cap_net_raw=ep` writes, read back from a file
/// made in `dir` (which must support `security.*` xattrs).
pub fn setcap_reference(dir: &Path) -> Vec<u8> {
    let f = dir.join(format!("setcap-reference-{}", std::process::id()));
    std::fs::write(&f, b"x").unwrap();
    run_ok(
        Command::new("setcap").arg("cap_net_raw=ep").arg(&f),
        "setcap (Debian package `libcap2-bin`)",
    );
    let caps = caps_of(&f).expect("setcap wrote security.capability");
    std::fs::remove_file(&f).unwrap();
    caps
}

/// A sentinel directory outside the roots under test, with files in it;
/// [`Outside::assert_untouched`] checks that nothing appeared in it and
/// the files are unchanged.
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
