//! `copy()` against `cp -a`: a fixture with every kind of entry, copied by
//! both, compared entry by entry, on each rig filesystem and across two.

use std::collections::{BTreeMap, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cowkit_testutil::tree::kind_of;
use cowkit_testutil::{scratch, Fs};
use cowkit_tree::{copy, CopyOptions, NoProgress};
use rustix::fs::SeekFrom;
use sha2::{Digest, Sha256};

/// Everything `cp -a` keeps of one entry.
#[derive(Debug, PartialEq, Eq)]
struct Rec {
    /// [`kind_of`] the entry's type.
    kind: char,
    mode: u32,
    uid: u32,
    gid: u32,
    mtime: (i64, i64),
    /// Files only: listing a directory changes its own atime.
    atime: Option<(i64, i64)>,
    size: Option<u64>,
    sha256: Option<Vec<u8>>,
    /// `(offset, length)` of each data segment (`SEEK_DATA`/`SEEK_HOLE`).
    data: Option<Vec<(u64, u64)>>,
    target: Option<Vec<u8>>,
    rdev: u64,
    xattrs: BTreeMap<Vec<u8>, Vec<u8>>,
    /// The first path (sorted) of the entry's hardlink group.
    group: Option<PathBuf>,
}

fn xattrs(p: &Path) -> BTreeMap<Vec<u8>, Vec<u8>> {
    let mut names = vec![0u8; 65536];
    let n = rustix::fs::llistxattr(p, &mut names[..]).unwrap();
    let mut out = BTreeMap::new();
    for name in names[..n].split(|&b| b == 0).filter(|n| !n.is_empty()) {
        // XFS's raw ACL view; cp skips it too (/etc/xattr.conf).
        if name.starts_with(b"trusted.SGI_") {
            continue;
        }
        let mut v = vec![0u8; 65536];
        let len = rustix::fs::lgetxattr(p, std::ffi::OsStr::from_bytes(name), &mut v[..]).unwrap();
        out.insert(name.to_vec(), v[..len].to_vec());
    }
    out
}

fn segments(f: &std::fs::File, size: u64) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < size {
        let Ok(start) = rustix::fs::seek(f, SeekFrom::Data(off)) else {
            break;
        };
        let end = rustix::fs::seek(f, SeekFrom::Hole(start)).unwrap();
        out.push((start, end - start));
        off = end;
    }
    out
}

/// Every entry below `root` (and `root` itself, as ""), by relative path.
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Rec> {
    let mut out = BTreeMap::new();
    let mut inodes: HashMap<u64, Vec<PathBuf>> = HashMap::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let p = root.join(&rel);
        let md = std::fs::symlink_metadata(&p).unwrap();
        let ft = md.file_type();
        let mut rec = Rec {
            kind: kind_of(ft),
            mode: md.mode(),
            uid: md.uid(),
            gid: md.gid(),
            mtime: (md.mtime(), md.mtime_nsec()),
            atime: ft.is_file().then_some((md.atime(), md.atime_nsec())),
            size: None,
            sha256: None,
            data: None,
            target: None,
            rdev: md.rdev(),
            xattrs: xattrs(&p),
            group: None,
        };
        if ft.is_file() {
            rec.size = Some(md.len());
        }
        if ft.is_symlink() {
            rec.target = Some(
                std::fs::read_link(&p)
                    .unwrap()
                    .as_os_str()
                    .as_bytes()
                    .to_vec(),
            );
        }
        if !ft.is_dir() && md.nlink() > 1 {
            inodes.entry(md.ino()).or_default().push(rel.clone());
        }
        if ft.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(rel.join(e.unwrap().file_name()));
            }
        }
        out.insert(rel, rec);
    }
    // Contents last: reading a file moves its atime, and that of every
    // other name of the inode.
    for (rel, rec) in out.iter_mut() {
        if let Some(size) = rec.size {
            let p = root.join(rel);
            let f = std::fs::File::open(&p).unwrap();
            rec.data = Some(segments(&f, size));
            rec.sha256 = Some(Sha256::digest(std::fs::read(&p).unwrap()).to_vec());
        }
    }
    for (_, mut paths) in inodes {
        paths.sort();
        for p in &paths {
            out.get_mut(p).unwrap().group = Some(paths[0].clone());
        }
    }
    out
}

fn build_fixture(dir: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tree.sh");
    let st = Command::new("bash").arg(script).arg(dir).status().unwrap();
    assert!(st.success(), "fixture script failed");
}

fn compare(ours: &Path, theirs: &Path) -> usize {
    let a = snapshot(ours);
    let b = snapshot(theirs);
    let only_a: Vec<_> = a.keys().filter(|k| !b.contains_key(*k)).collect();
    let only_b: Vec<_> = b.keys().filter(|k| !a.contains_key(*k)).collect();
    assert!(
        only_a.is_empty() && only_b.is_empty(),
        "only in ours: {only_a:?}; only in cp's: {only_b:?}"
    );
    let mut bad = Vec::new();
    for (k, ra) in &a {
        let rb = &b[k];
        if ra != rb {
            bad.push(format!("{}:\n  ours: {ra:?}\n  cp's: {rb:?}", k.display()));
        }
    }
    assert!(
        bad.is_empty(),
        "{} entries differ from cp -a:\n{}",
        bad.len(),
        bad.join("\n")
    );
    a.len()
}

fn fidelity(src_fs: Fs, dst_fs: Fs) {
    let Some(s) = scratch(src_fs) else { return };
    let other = if dst_fs == src_fs {
        None
    } else {
        scratch(dst_fs)
    };
    let d = other.as_ref().map_or(s.path(), |t| t.path());
    let src = s.path().join("src");
    std::fs::create_dir(&src).unwrap();
    build_fixture(&src);
    let ours = d.join("ours");
    let theirs = d.join("theirs");
    // Ours first: it opens files with O_NOATIME, cp's reads move the
    // source's atimes.
    let sum = copy(&src, &ours, &CopyOptions::archive(), &NoProgress).unwrap();
    assert!(sum.ok(), "{:?}", sum.errors);
    assert_eq!(sum.hardlinks, 2, "{sum:?}");
    assert_eq!((sum.fifos, sum.sockets, sum.devices), (1, 1, 1));
    assert_eq!(sum.symlinks, 5);
    let st = Command::new("cp")
        .arg("-a")
        .arg(&src)
        .arg(&theirs)
        .status()
        .unwrap();
    assert!(st.success());
    let n = compare(&ours, &theirs);
    assert!(n > 2050, "only {n} entries compared");

    // Holes kept.
    let md = std::fs::metadata(ours.join("a/sparse")).unwrap();
    assert!(md.blocks() * 512 < md.len(), "sparse file lost its holes");
    if dst_fs == src_fs && src_fs.reflinks() {
        let f = std::fs::File::open(ours.join("a/large")).unwrap();
        let (shared, total) = cowkit_fs::fiemap::shared_bytes(&f).unwrap();
        assert!(
            total > 3 << 20 && shared == total,
            "shared {shared} of {total}"
        );
        assert_eq!(
            sum.tally.bytes.copied + sum.tally.bytes.written,
            0,
            "{sum:?}"
        );
    } else {
        assert_eq!(sum.tally.bytes.cloned, 0);
    }
}

/// Every entry's type and mode bits under `root`, by relative path.
fn modes(root: &Path) -> BTreeMap<PathBuf, u32> {
    let mut out = BTreeMap::new();
    let mut todo = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                todo.push(p.clone());
            }
            out.insert(p.strip_prefix(root).unwrap().to_path_buf(), m.mode());
        }
    }
    out
}

/// Without `-p` (`cp -r`): the same types and mode bits as GNU `cp -r`
/// on the fixture (setuid and setgid files, a sticky directory, a setgid
/// directory), with the same umask.
#[test]
fn modes_without_preserve_as_gnu_cp_r() {
    let Some(s) = scratch(Fs::Xfs) else { return };
    let src = s.path().join("src");
    std::fs::create_dir(&src).unwrap();
    build_fixture(&src);
    let (ours, theirs) = (s.path().join("ours"), s.path().join("theirs"));
    let opts = CopyOptions {
        preserve: cowkit_tree::copy::Preserve::NONE,
        ..CopyOptions::archive()
    };
    let sum = copy(&src, &ours, &opts, &NoProgress).unwrap();
    assert!(sum.ok(), "{:?}", sum.errors);
    let st = Command::new("cp")
        .arg("-r")
        .arg(&src)
        .arg(&theirs)
        .status()
        .unwrap();
    assert!(st.success());
    let (a, b) = (modes(&ours), modes(&theirs));
    assert!(a.len() > 2050, "only {} entries", a.len());
    let differ: Vec<_> = a
        .iter()
        .filter(|(p, m)| b.get(*p) != Some(m))
        .map(|(p, m)| {
            format!(
                "{}: ours {m:o}, cp -r {:o}",
                p.display(),
                b.get(p).copied().unwrap_or(0)
            )
        })
        .collect();
    assert!(differ.is_empty(), "{differ:#?}");
    assert_eq!(a.len(), b.len());
}

#[test]
fn fidelity_xfs() {
    fidelity(Fs::Xfs, Fs::Xfs);
}

#[test]
fn fidelity_btrfs() {
    fidelity(Fs::Btrfs, Fs::Btrfs);
}

#[test]
fn fidelity_ext4() {
    fidelity(Fs::Ext4, Fs::Ext4);
}

#[test]
fn fidelity_tmpfs() {
    fidelity(Fs::Tmpfs, Fs::Tmpfs);
}

#[test]
fn fidelity_xfs_to_ext4() {
    fidelity(Fs::Xfs, Fs::Ext4);
}

#[test]
fn fidelity_xfs_to_xfs2() {
    fidelity(Fs::Xfs, Fs::Xfs2);
}
