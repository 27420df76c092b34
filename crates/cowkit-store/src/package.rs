//! Packages as sources: the files of an `.rpme` (extents file) imported
//! straight from it, no install needed.
//!
//! An `.rpme` holds the package's verified header and each regular file's
//! content as one extent, block-aligned for large files. A file's object
//! is named by the header's digest when the package uses SHA-256
//! (`FILEDIGESTALGO` 8, rpm's default since 4.14): an object the store
//! has costs no I/O at all. A new object is cloned from the extent
//! (copied where the filesystem cannot clone, or where a small file is
//! packed unaligned) and hashed once before it is named, so a damaged or
//! tampered `.rpme` cannot put wrong bytes under a digest's name. With
//! another digest algorithm, the extent is hashed first and named by what
//! it hashes to.
//!
//! An `.rpm` is transcoded into an `.rpme` first (by the caller: the CLI
//! does it in the confined transcode worker).

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use cowkit_archive::files::{DigestAlgo, Kind as RpmKind, Name};
use cowkit_extents::open::{Content, ExtentsFile};
use cowkit_fs::{Copier, Method};
use rustix::fs::Timespec;

use crate::tree::{Entry, Kind};
use crate::{Error, Result, Store, Summary};

/// Resolves an owner and a group name to numbers.
pub type Ids<'a> = &'a dyn Fn(&str, &str) -> (u32, u32);

fn bad(path: &Name, why: &'static str) -> Error {
    Error::Unsupported {
        path: path.as_path().to_path_buf(),
        why,
    }
}

/// The header path `p` (absolute, bytes) as a relative path of plain names.
fn rel_path(p: &Name) -> Result<PathBuf> {
    let rel = Path::new(OsStr::from_bytes(p.strip_prefix("/").unwrap_or(p)));
    if rel.as_os_str().is_empty() {
        return Err(bad(p, "the package names its root"));
    }
    for c in rel.components() {
        if !matches!(c, Component::Normal(_)) {
            return Err(bad(p, "a `.`, `..` or empty component in a package path"));
        }
    }
    if p.windows(2).any(|w| w == b"//") || p.ends_with("/") {
        return Err(bad(p, "an empty component in a package path"));
    }
    Ok(rel.to_path_buf())
}

fn ts(s: u32) -> Timespec {
    Timespec {
        tv_sec: i64::from(s),
        tv_nsec: 0,
    }
}

/// Read the package `x` into entries (root first) and import its regular
/// files' contents. Directories the header does not list but its files
/// need are added (root-owned, 0755, the package's newest mtime), as rpm
/// would create them.
pub fn read_package(store: &Store, x: &ExtentsFile, ids: Ids<'_>) -> Result<(Vec<Entry>, Summary)> {
    let files = x.files();
    let mut sum = Summary::default();
    let newest = files.files.iter().map(|f| f.mtime).max().unwrap_or(0);
    let mut entries = vec![dir_entry(PathBuf::new(), 0o755, 0, 0, newest)];
    let mut at: HashMap<PathBuf, usize> = HashMap::new();
    let mut first_of_set: HashMap<u32, usize> = HashMap::new();
    let mut copier = Copier::new(cowkit_fs::Chain::AUTO).with_retry_down(true);
    for f in files.files.iter().filter(|f| !f.ghost) {
        let rel = rel_path(&f.path)?;
        let (uid, gid) = ids(&f.user, &f.group);
        let kind = match f.kind {
            RpmKind::Regular => Kind::File,
            RpmKind::Directory => Kind::Dir,
            RpmKind::Symlink => Kind::Symlink,
            RpmKind::Fifo => Kind::Fifo,
            RpmKind::Socket => Kind::Socket,
            RpmKind::CharDevice => Kind::Char,
            RpmKind::BlockDevice => Kind::Block,
        };
        let mut e = Entry {
            path: rel.clone(),
            kind,
            perm: f.mode & 0o7777,
            uid,
            gid,
            atime: ts(f.mtime),
            mtime: ts(f.mtime),
            xattrs: Vec::new(),
            target: f.link_target.as_ref().map(Into::into),
            // FILERDEVS holds the old 16-bit encoding: major << 8 | minor.
            rdev: rustix::fs::makedev((f.rdev >> 8) & 0xff, f.rdev & 0xff),
            size: 0,
            digest: None,
            link: None,
        };
        if let Some(text) = f.caps.as_deref().filter(|t| !t.is_empty()) {
            if let Some(v) = cowkit_fs::caps::from_text(text)
                .map_err(|_| bad(&f.path, "capabilities that cannot be encoded"))?
            {
                e.xattrs
                    .push(cowkit_fs::meta::xattr("security.capability", v));
            }
        }
        if kind == Kind::File {
            let set = files.link_set(f);
            if set.len() > 1 && set[0] != f.index {
                e.link = first_of_set.get(&set[0]).copied();
                if e.link.is_none() {
                    return Err(bad(&f.path, "a hardlink whose first member is missing"));
                }
                let first = &entries[e.link.expect("checked")];
                e.size = first.size;
                e.digest = first.digest.clone();
            } else {
                e.size = f.size;
                match x.content(f.index) {
                    None | Some(Content::Empty) if f.size == 0 => {
                        sum.empty_files += 1;
                    }
                    Some(Content::Extent(ext)) if ext.length == f.size => {
                        let sha = (files.algo == DigestAlgo::Sha256)
                            .then(|| f.digest.as_deref().map(hex::encode))
                            .flatten();
                        let digest =
                            import(store, x, ext.offset, f.size, sha, &mut copier, &mut sum)?;
                        e.digest = Some(digest);
                    }
                    _ => return Err(bad(&f.path, "its content is missing from the package")),
                }
                if set.len() > 1 {
                    first_of_set.insert(f.index, entries.len());
                }
            }
        }
        if let Some(&i) = at.get(&rel) {
            return Err(Error::Image(format!(
                "the package lists `{}` twice (as entries {i} and {})",
                f.path,
                entries.len()
            )));
        }
        at.insert(rel, entries.len());
        entries.push(e);
    }
    add_parents(&mut entries, &mut at, newest);
    for e in &entries[1..] {
        let parent = e.path.parent().unwrap_or(Path::new(""));
        if !parent.as_os_str().is_empty() && entries[at[parent]].kind != Kind::Dir {
            return Err(Error::Image(format!(
                "`/{}` is inside `/{}`, which is not a directory",
                e.path.display(),
                parent.display()
            )));
        }
    }
    Ok((sort(entries), sum))
}

/// A directory entry rpm would create for a package's files.
fn dir_entry(path: PathBuf, perm: u32, uid: u32, gid: u32, mtime: u32) -> Entry {
    Entry {
        path,
        kind: Kind::Dir,
        perm,
        uid,
        gid,
        atime: ts(mtime),
        mtime: ts(mtime),
        xattrs: Vec::new(),
        target: None,
        rdev: 0,
        size: 0,
        digest: None,
        link: None,
    }
}

/// The `len` bytes at `offset` of the extents file `x` imported into the
/// store (checked against `sha`, the header's digest, when given), counted
/// in `sum`: the object's digest.
fn import(
    store: &Store,
    x: &ExtentsFile,
    offset: u64,
    len: u64,
    sha: Option<String>,
    copier: &mut Copier,
    sum: &mut Summary,
) -> Result<String> {
    let sha_given = sha.is_some();
    let (digest, new, method) = store.import_range(x.file(), x.path(), offset, len, sha, copier)?;
    sum.files += 1;
    if new {
        sum.objects_new += 1;
        let m = match method {
            Some(Method::Clone) => "clone",
            Some(Method::CopyFileRange) => "copy_file_range",
            _ => "read_write",
        };
        *sum.bytes_by_method.entry(m.into()).or_default() += len;
        sum.bytes_hashed += len;
    } else {
        sum.objects_reused += 1;
    }
    if sha_given {
        sum.digests_from_header += 1;
    }
    Ok(digest)
}

/// Add the parents the header does not list (root-owned, 0755, `mtime`),
/// recording where each went in `at`.
fn add_parents(entries: &mut Vec<Entry>, at: &mut HashMap<PathBuf, usize>, mtime: u32) {
    let mut missing: BTreeMap<PathBuf, ()> = BTreeMap::new();
    for e in &entries[1..] {
        let mut p = e.path.parent();
        while let Some(d) = p.filter(|d| !d.as_os_str().is_empty()) {
            if !at.contains_key(d) {
                missing.insert(d.to_path_buf(), ());
            }
            p = d.parent();
        }
    }
    for (d, ()) in missing {
        at.insert(d.clone(), entries.len());
        entries.push(dir_entry(d, 0o755, 0, 0, mtime));
    }
}

/// Entries in path order (parents before children), hardlinks pointing
/// at the first of their set in the new order.
fn sort(entries: Vec<Entry>) -> Vec<Entry> {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by(|&a, &b| entries[a].path.cmp(&entries[b].path));
    let mut new_index = vec![0usize; entries.len()];
    for (new, &old) in order.iter().enumerate() {
        new_index[old] = new;
    }
    // Each set's representative: its earliest member in the new order.
    let set_of = |i: usize| entries[i].link.unwrap_or(i);
    let mut first: HashMap<usize, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if e.kind == Kind::File {
            let f = first.entry(set_of(i)).or_insert(new_index[i]);
            *f = (*f).min(new_index[i]);
        }
    }
    let mut out: Vec<Option<Entry>> = entries.into_iter().map(Some).collect();
    let mut sorted = Vec::with_capacity(out.len());
    for &old in &order {
        let mut e = out[old].take().expect("once");
        if e.kind == Kind::File {
            let f = first[&e.link.unwrap_or(old)];
            e.link = (f != new_index[old]).then_some(f);
        }
        sorted.push(e);
    }
    sorted
}

/// Merge the trees of several packages into one: a directory listed by
/// several keeps the first one's metadata; a file listed by several must
/// be the same (type, content, mode, owner), as rpm allows shared files.
pub fn merge(trees: Vec<Vec<Entry>>) -> Result<Vec<Entry>> {
    let mut trees = trees.into_iter();
    let Some(mut out) = trees.next() else {
        return Err(Error::Image("no packages".into()));
    };
    let mut at: HashMap<PathBuf, usize> = out
        .iter()
        .enumerate()
        .map(|(i, e)| (e.path.clone(), i))
        .collect();
    for tree in trees {
        let mut remap = vec![usize::MAX; tree.len()];
        for (i, mut e) in tree.into_iter().enumerate() {
            if let Some(&j) = at.get(&e.path) {
                let o = &out[j];
                let same = o.kind == e.kind
                    && (e.kind == Kind::Dir
                        || (&o.digest, o.size, &o.target, o.perm, o.uid, o.gid, o.rdev)
                            == (&e.digest, e.size, &e.target, e.perm, e.uid, e.gid, e.rdev));
                if !same {
                    return Err(Error::Image(format!(
                        "`/{}` differs between the packages",
                        e.path.display()
                    )));
                }
                remap[i] = j;
                continue;
            }
            e.link = e.link.map(|l| remap[l]);
            remap[i] = out.len();
            at.insert(e.path.clone(), out.len());
            out.push(e);
        }
    }
    Ok(sort(out))
}
