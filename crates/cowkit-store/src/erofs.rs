//! The EROFS metadata layer of an image: a small writer and a reader.
//!
//! The writer lays out one uncompressed EROFS (4 KiB blocks) holding every
//! entry of a tree with its owner, mode, ns mtime, extended attributes and
//! hardlinks. A regular file with content carries no data: it is a
//! chunk-based inode of the file's size whose one chunk is a hole, with
//! `trusted.overlay.metacopy` (empty) and `trusted.overlay.redirect`
//! (`/ab/cdef…`, the object's path) for overlayfs, and the fingerprint that
//! EROFS page cache sharing (Linux 7.0, `-o inode_share`) matches files by:
//! `"sha256:"` followed by the 32 raw digest bytes, under the long xattr
//! name prefix `erofs.fingerprint.v1` that `mkfs.erofs
//! --xattr-inode-digest` writes (a hidden name: no short prefix, so
//! `listxattr` does not show it). The superblock names that prefix in
//! `ishare_xattr_prefix_id` and sets `COMPAT_ISHARE_XATTRS`; the prefix
//! table is stored plain in the metadata area (`COMPAT_PLAIN_XATTR_PFX`),
//! which kernels read when there is no packed inode.
//!
//! The layout follows the on-disk format of `include/erofs_fs.h` (Linux
//! and erofs-utils): the superblock at byte 1024, the prefix table after
//! it, then 64-byte extended inodes (32-byte aligned; an inode with its
//! xattrs and inline data never straddles a block when it fits in one),
//! each followed by its inline xattrs and then its inline data (small
//! directories and symlinks) or its chunk map; directories too large to
//! be inline take whole blocks after the metadata.
//!
//! The reader ([`Reader`]) walks such an image (or any uncompressed,
//! non-chunk-indexed EROFS with inline xattrs) from memory or from a
//! file, with every offset checked and bounds its author cannot stretch
//! (see [`Reader`]).

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::tree::{Entry, Kind};
use crate::{Error, Result, Store};

mod read;
pub use read::{
    Inode, ReadError, Reader, KEPT_PER_BYTE, KEPT_SLACK, MAX_ENTRIES, MAX_PATH, MAX_TARGET,
};

/// The objects the EROFS image `img` refers to: (path in the image,
/// object path from `objects/`), one per file with a redirect.
pub fn objects(img: &[u8]) -> Result<Vec<(String, String)>> {
    Reader::new(img)?.objects()
}

/// [`objects`] of the image file `path`, read where its metadata points
/// (never whole).
pub fn objects_in(path: &Path) -> Result<Vec<(String, String)>> {
    Reader::open(path)?.objects()
}

/// The xattr name `mkfs.erofs --xattr-inode-digest` uses by default for
/// per-file fingerprints.
pub const FINGERPRINT_XATTR: &str = "erofs.fingerprint.v1";

const BLOCK: u64 = 4096;
const SB_OFFSET: usize = 1024;
const SB_SIZE: usize = 128;
const MAGIC: u32 = 0xE0F5_E1E2;
const INODE_SIZE: usize = 64;
const DIRENT_SIZE: usize = 12;

const COMPAT_MTIME: u32 = 0x2;
const COMPAT_PLAIN_XATTR_PFX: u32 = 0x10;
const COMPAT_ISHARE_XATTRS: u32 = 0x20;
const INCOMPAT_CHUNKED_FILE: u32 = 0x4;
const INCOMPAT_XATTR_PREFIXES: u32 = 0x40;

const FLAT_PLAIN: u16 = 0;
const FLAT_INLINE: u16 = 2;
const CHUNK_BASED: u16 = 4;
const CHUNK_INDEXES: u16 = 0x20;
const NULL_ADDR32: u32 = u32::MAX;
const LONG_PREFIX: u8 = 0x80;

/// Short xattr name prefixes and their EROFS indexes. An ACL's name is
/// the whole prefix (empty suffix).
const PREFIXES: &[(u8, &str)] = &[
    (2, "system.posix_acl_access"),
    (3, "system.posix_acl_default"),
    (1, "user."),
    (4, "trusted."),
    (6, "security."),
];

/// What to write besides the tree.
#[derive(Clone, Debug)]
pub struct Options {
    /// The fingerprint xattr name (as `mkfs.erofs --xattr-inode-digest=X`),
    /// or `None` for no fingerprints.
    pub fingerprint: Option<String>,
    /// fs-verity digests of objects (by object digest), put in the
    /// metacopy xattrs for overlayfs `verity=require`.
    pub verity: HashMap<String, [u8; 32]>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            fingerprint: Some(FINGERPRINT_XATTR.to_string()),
            verity: HashMap::new(),
        }
    }
}

/// The value of `trusted.overlay.metacopy` for an object: empty, or
/// overlayfs's `struct ovl_metacopy` (version 0, length 36, flags 0,
/// `FS_VERITY_HASH_ALG_SHA256`, the 32-byte fs-verity digest).
pub fn metacopy_value(verity: Option<&[u8; 32]>) -> Vec<u8> {
    match verity {
        None => Vec::new(),
        Some(d) => {
            let mut v = vec![0, 36, 0, cowkit_fs::verity::FS_VERITY_HASH_ALG_SHA256];
            v.extend_from_slice(d);
            v
        }
    }
}

fn file_type(k: Kind) -> u8 {
    match k {
        Kind::File => 1,
        Kind::Dir => 2,
        Kind::Char => 3,
        Kind::Block => 4,
        Kind::Fifo => 5,
        Kind::Socket => 6,
        Kind::Symlink => 7,
    }
}

fn mode_type(k: Kind) -> u32 {
    match k {
        Kind::File => 0o100000,
        Kind::Dir => 0o040000,
        Kind::Char => 0o020000,
        Kind::Block => 0o060000,
        Kind::Fifo => 0o010000,
        Kind::Socket => 0o140000,
        Kind::Symlink => 0o120000,
    }
}

/// (base index, infix) of a long prefix name: a known short prefix if the
/// name starts with one, else the whole name as a hidden prefix.
fn split_long_prefix(name: &str) -> (u8, &str) {
    for (i, p) in PREFIXES.iter().filter(|(_, p)| p.ends_with('.')) {
        if let Some(rest) = name.strip_prefix(p) {
            return (*i, rest);
        }
    }
    (0, name)
}

/// One encoded xattr: (name index, name suffix, value).
type Xattr = (u8, Vec<u8>, Vec<u8>);

fn encode_name(name: &[u8], path: &Path) -> Result<(u8, Vec<u8>)> {
    for (i, p) in PREFIXES {
        if let Some(rest) = name.strip_prefix(p.as_bytes()) {
            if !p.ends_with('.') && !rest.is_empty() {
                continue;
            }
            if rest.len() > 255 {
                break;
            }
            return Ok((*i, rest.to_vec()));
        }
    }
    Err(Error::Unsupported {
        path: path.to_path_buf(),
        why: "an extended attribute outside user., trusted., security. and POSIX ACLs (or a name over 255 bytes)",
    })
}

fn xattr_body_len(xattrs: &[Xattr]) -> usize {
    if xattrs.is_empty() {
        return 0;
    }
    12 + xattrs
        .iter()
        .map(|(_, n, v)| (4 + n.len() + v.len()).next_multiple_of(4))
        .sum::<usize>()
}

fn put_xattrs(out: &mut Vec<u8>, xattrs: &[Xattr]) {
    if xattrs.is_empty() {
        return;
    }
    out.extend_from_slice(&[0u8; 12]); // no name filter, no shared xattrs
    for (i, n, v) in xattrs {
        let start = out.len();
        out.push(n.len() as u8);
        out.push(*i);
        out.extend_from_slice(&(v.len() as u16).to_le_bytes());
        out.extend_from_slice(n);
        out.extend_from_slice(v);
        out.resize(start + (out.len() - start).next_multiple_of(4), 0);
    }
}

/// What follows an inode and its xattrs.
enum Data {
    /// Nothing (empty files, devices).
    None,
    /// Bytes: inline after the inode when they fit, else whole blocks.
    Bytes(Vec<u8>),
    /// A directory's blocks; names resolved to nids once laid out.
    Dir(Vec<Vec<(Vec<u8>, usize, u8)>>),
    /// A chunk map of `n` holes with chunk size `BLOCK << bits`.
    Holes { bits: u16, n: u64 },
}

struct Node {
    kind: Kind,
    entry: usize,
    nlink: u32,
    size: u64,
    xattrs: Vec<Xattr>,
    data: Data,
    // Laid out:
    pos: u64,
    inline: bool,
    blkaddr: u32,
}

/// Pack a directory's sorted (name, inode, type) list into dirent blocks.
fn dir_blocks(list: Vec<(Vec<u8>, usize, u8)>) -> Vec<Vec<(Vec<u8>, usize, u8)>> {
    let mut blocks = vec![Vec::new()];
    let mut used = 0usize;
    for d in list {
        let need = DIRENT_SIZE + d.0.len();
        if used + need > BLOCK as usize {
            blocks.push(Vec::new());
            used = 0;
        }
        used += need;
        blocks.last_mut().expect("one block").push(d);
    }
    blocks
}

/// The size of a directory's data: full blocks, then the last one's used
/// bytes.
fn dir_size(blocks: &[Vec<(Vec<u8>, usize, u8)>]) -> u64 {
    let last: usize = blocks
        .last()
        .map(|b| b.iter().map(|d| DIRENT_SIZE + d.0.len()).sum())
        .unwrap_or(0);
    (blocks.len() as u64 - 1) * BLOCK + last as u64
}

fn dir_bytes(blocks: &[Vec<(Vec<u8>, usize, u8)>], nid: impl Fn(usize) -> u64) -> Vec<u8> {
    let mut out = Vec::new();
    for (bi, b) in blocks.iter().enumerate() {
        let start = out.len();
        let mut nameoff = b.len() * DIRENT_SIZE;
        for (name, node, t) in b {
            out.extend_from_slice(&nid(*node).to_le_bytes());
            out.extend_from_slice(&(nameoff as u16).to_le_bytes());
            out.push(*t);
            out.push(0);
            nameoff += name.len();
        }
        for (name, _, _) in b {
            out.extend_from_slice(name);
        }
        if bi + 1 < blocks.len() {
            out.resize(start + BLOCK as usize, 0);
        }
    }
    out
}

/// The EROFS bytes of `entries` (from [`crate::tree::read_tree`]; the
/// first is the root directory).
pub fn write(entries: &[Entry], opts: &Options) -> Result<Vec<u8>> {
    let fingerprint = checked(entries, opts)?;

    // Inodes: one per entry, a hardlink shares its first's.
    let mut node_of = vec![usize::MAX; entries.len()];
    let mut nodes: Vec<Node> = Vec::new();
    let mut children: HashMap<&Path, Vec<usize>> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            let parent = e.path.parent().unwrap_or(Path::new(""));
            children.entry(parent).or_default().push(i);
        }
        if let Some(first) = e.link {
            node_of[i] = node_of[first];
            nodes[node_of[first]].nlink += 1;
            continue;
        }
        let (size, data, xattrs) = inode(e, opts, fingerprint.is_some())?;
        node_of[i] = nodes.len();
        nodes.push(Node {
            kind: e.kind,
            entry: i,
            nlink: if e.kind == Kind::Dir { 2 } else { 1 },
            size,
            xattrs,
            data,
            pos: 0,
            inline: false,
            blkaddr: 0,
        });
    }
    directories(entries, &node_of, &children, &mut nodes)?;

    // Layout: superblock, prefix table, inodes (root first), data blocks.
    let mut prefix_table = Vec::new();
    if let Some((base, infix)) = fingerprint {
        prefix_table.extend_from_slice(&((1 + infix.len()) as u16).to_le_bytes());
        prefix_table.push(base);
        prefix_table.extend_from_slice(infix.as_bytes());
        prefix_table.resize(prefix_table.len().next_multiple_of(4), 0);
    }
    let (prefix_start, blk) = lay_out(&mut nodes, prefix_table.len())?;
    let nid = |node: usize| nodes[node].pos / 32;
    if nid(0) > u64::from(u16::MAX) {
        return Err(Error::Image("the root inode is out of reach".into()));
    }

    let mut img = vec![0u8; (blk * BLOCK) as usize];
    for (ino, n) in nodes.iter().enumerate() {
        let e = &entries[n.entry];
        let mut b = inode_head(ino, n, e)?;
        let data = match &n.data {
            Data::None => Vec::new(),
            Data::Bytes(v) => v.clone(),
            Data::Dir(blocks) => dir_bytes(blocks, nid),
            Data::Holes { n, .. } => NULL_ADDR32.to_le_bytes().repeat(*n as usize),
        };
        if n.inline {
            b.extend_from_slice(&data);
        } else if !data.is_empty() {
            let at = u64::from(n.blkaddr) * BLOCK;
            img[at as usize..at as usize + data.len()].copy_from_slice(&data);
        }
        img[n.pos as usize..n.pos as usize + b.len()].copy_from_slice(&b);
    }
    let pt = prefix_start as usize;
    img[pt..pt + prefix_table.len()].copy_from_slice(&prefix_table);
    let sb = superblock(
        nid(0),
        nodes.len(),
        blk,
        fingerprint.is_some(),
        prefix_start,
    );
    img[SB_OFFSET..SB_OFFSET + SB_SIZE].copy_from_slice(&sb);
    Ok(img)
}

/// Refuse what the reader would not take back (its bounds): the tree's
/// first entry not a directory, too many entries, paths or targets too
/// long, a fingerprint name out of bounds. The fingerprint xattr's name,
/// split as a long prefix, when one is asked for.
fn checked<'o>(entries: &[Entry], opts: &'o Options) -> Result<Option<(u8, &'o str)>> {
    if entries.first().map(|e| e.kind) != Some(Kind::Dir) {
        return Err(Error::Image(
            "an image's tree starts with a directory".into(),
        ));
    }
    // What the reader takes back (its bounds).
    if entries.len() > MAX_ENTRIES {
        return Err(Error::Image(format!(
            "an image holds at most {MAX_ENTRIES} entries, not {}",
            entries.len()
        )));
    }
    for e in entries {
        let target = e.target.as_ref().map_or(0, |t| t.len());
        if e.path.as_os_str().len() > MAX_PATH || target as u64 > MAX_TARGET {
            return Err(Error::Unsupported {
                path: e.path.clone(),
                why: "a path or symlink target over 4,095 bytes",
            });
        }
    }
    let fingerprint = opts.fingerprint.as_deref().map(split_long_prefix);
    if let Some((_, infix)) = fingerprint {
        if infix.is_empty() || infix.len() > 255 {
            return Err(Error::Image(
                "the fingerprint xattr name must be 1 to 255 bytes past its prefix".into(),
            ));
        }
    }
    Ok(fingerprint)
}

/// One entry's inode: its size, its data and its extended attributes
/// (for a regular file's content, overlay's `metacopy` and `redirect` to
/// its object, and the fingerprint when `fingerprint`).
fn inode(e: &Entry, opts: &Options, fingerprint: bool) -> Result<(u64, Data, Vec<Xattr>)> {
    let mut xattrs = Vec::with_capacity(e.xattrs.len() + 3);
    for x in &e.xattrs {
        let (idx, suffix) = encode_name(x.name.as_bytes(), &e.path)?;
        if x.value.len() > usize::from(u16::MAX) {
            return Err(Error::Unsupported {
                path: e.path.clone(),
                why: "an extended attribute value over 65535 bytes",
            });
        }
        xattrs.push((idx, suffix, x.value.clone()));
    }
    let (size, data) = match e.kind {
        Kind::File if e.size > 0 => {
            let digest = e
                .digest
                .as_deref()
                .ok_or_else(|| Error::Image(format!("`{}` was not imported", e.path.display())))?;
            let raw = hex::decode(digest)
                .ok()
                .filter(|r| r.len() == 32)
                .ok_or_else(|| Error::Image(format!("bad digest `{digest}`")))?;
            xattrs.push((
                4,
                b"overlay.metacopy".to_vec(),
                metacopy_value(opts.verity.get(digest)),
            ));
            xattrs.push((
                4,
                b"overlay.redirect".to_vec(),
                format!("/{}", Store::object_rel(digest)).into_bytes(),
            ));
            if fingerprint {
                let mut v = b"sha256:".to_vec();
                v.extend_from_slice(&raw);
                xattrs.push((LONG_PREFIX, Vec::new(), v));
            }
            // One hole chunk covers the file (up to 8 TiB a chunk).
            let blocks = e.size.div_ceil(BLOCK);
            let bits = (u64::BITS - (blocks - 1).leading_zeros()).min(31) as u16;
            let n = blocks.div_ceil(1u64 << bits);
            (e.size, Data::Holes { bits, n })
        }
        Kind::Symlink => {
            let t = e.target.as_deref().unwrap_or_default().as_bytes().to_vec();
            (t.len() as u64, Data::Bytes(t))
        }
        _ => (0, Data::None),
    };
    Ok((size, data, xattrs))
}

/// Every directory's sorted dirents with `.` and `..`, and its nlink
/// counting its subdirectories.
fn directories(
    entries: &[Entry],
    node_of: &[usize],
    children: &HashMap<&Path, Vec<usize>>,
    nodes: &mut [Node],
) -> Result<()> {
    let dir_at: HashMap<&Path, usize> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| e.kind == Kind::Dir)
        .map(|(i, e)| (e.path.as_path(), i))
        .collect();
    let mut parent_node = vec![0usize; nodes.len()];
    for (i, e) in entries.iter().enumerate().skip(1) {
        let parent = e.path.parent().unwrap_or(Path::new(""));
        let p = dir_at.get(parent).copied();
        if e.kind == Kind::Dir || p.is_none() {
            let p = p.ok_or_else(|| {
                Error::Image(format!("`{}` has no parent directory", e.path.display()))
            })?;
            if e.kind == Kind::Dir {
                parent_node[node_of[i]] = node_of[p];
            }
        }
    }
    for (i, e) in entries.iter().enumerate() {
        if e.kind != Kind::Dir {
            continue;
        }
        let me = node_of[i];
        let mut list: Vec<(Vec<u8>, usize, u8)> =
            vec![(b".".to_vec(), me, 2), (b"..".to_vec(), parent_node[me], 2)];
        if i == 0 {
            list[1].1 = me;
        }
        for &c in children
            .get(e.path.as_path())
            .map(Vec::as_slice)
            .unwrap_or(&[])
        {
            let ce = &entries[c];
            let name = ce
                .path
                .file_name()
                .expect("entries below the root have names");
            if name.len() > 255 {
                return Err(Error::Unsupported {
                    path: ce.path.clone(),
                    why: "a name over 255 bytes",
                });
            }
            if ce.kind == Kind::Dir {
                nodes[me].nlink += 1;
            }
            list.push((name.as_bytes().to_vec(), node_of[c], file_type(ce.kind)));
        }
        list.sort_by(|a, b| a.0.cmp(&b.0));
        let blocks = dir_blocks(list);
        nodes[me].size = dir_size(&blocks);
        nodes[me].data = Data::Dir(blocks);
    }
    Ok(())
}

/// Lay the inodes out after the superblock and a prefix table of
/// `prefix_len` bytes (root first, each in one block when it fits, data
/// inline when it fits), then the data blocks: where the prefix table
/// starts, and the image's size in blocks.
fn lay_out(nodes: &mut [Node], prefix_len: usize) -> Result<(u64, u64)> {
    let prefix_start = (SB_OFFSET + SB_SIZE) as u64;
    let mut pos = (prefix_start + prefix_len as u64).next_multiple_of(32);
    for n in nodes.iter_mut() {
        let head = (INODE_SIZE + xattr_body_len(&n.xattrs)) as u64;
        let tail = match &n.data {
            Data::None => 0,
            Data::Bytes(_) | Data::Dir(_) => n.size,
            Data::Holes { n, .. } => 4 * n,
        };
        n.inline = match n.data {
            Data::Holes { .. } => true,
            Data::None => false,
            _ => n.size > 0 && head + tail <= BLOCK,
        };
        let total = head + if n.inline { tail } else { 0 };
        if total <= BLOCK && pos % BLOCK + total > BLOCK {
            pos = pos.next_multiple_of(BLOCK);
        }
        n.pos = pos;
        pos = (pos + total).next_multiple_of(32);
    }
    let mut blk = pos.div_ceil(BLOCK);
    for n in nodes.iter_mut() {
        if !n.inline && n.size > 0 {
            n.blkaddr = u32::try_from(blk)
                .map_err(|_| Error::Image("the image would exceed 16 TiB".into()))?;
            blk += n.size.div_ceil(BLOCK);
        }
    }
    Ok((prefix_start, blk))
}

/// The inode `ino` (its fixed part and its extended attributes) of the
/// node `n` for the entry `e`.
fn inode_head(ino: usize, n: &Node, e: &Entry) -> Result<Vec<u8>> {
    let layout = match (&n.data, n.inline) {
        (Data::Holes { .. }, _) => CHUNK_BASED,
        (_, true) => FLAT_INLINE,
        _ => FLAT_PLAIN,
    };
    let icount = match xattr_body_len(&n.xattrs) {
        0 => 0,
        l => u16::try_from((l - 12) / 4 + 1).map_err(|_| Error::Unsupported {
            path: e.path.clone(),
            why: "extended attributes over 256 KiB",
        })?,
    };
    let i_u: u32 = match (&n.data, e.kind) {
        (Data::Holes { bits, .. }, _) => u32::from(*bits),
        (_, Kind::Char | Kind::Block) => {
            let (maj, min) = (rustix::fs::major(e.rdev), rustix::fs::minor(e.rdev));
            (min & 0xff) | (maj << 8) | ((min & !0xff) << 12)
        }
        _ => n.blkaddr,
    };
    let mut b = Vec::with_capacity(INODE_SIZE + 64);
    b.extend_from_slice(&(1 | (layout << 1)).to_le_bytes());
    b.extend_from_slice(&icount.to_le_bytes());
    b.extend_from_slice(&((mode_type(n.kind) | (e.perm & 0o7777)) as u16).to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&n.size.to_le_bytes());
    b.extend_from_slice(&i_u.to_le_bytes());
    b.extend_from_slice(&(ino as u32 + 1).to_le_bytes());
    b.extend_from_slice(&e.uid.to_le_bytes());
    b.extend_from_slice(&e.gid.to_le_bytes());
    b.extend_from_slice(&(e.mtime.tv_sec as u64).to_le_bytes());
    b.extend_from_slice(&(e.mtime.tv_nsec as u32).to_le_bytes());
    b.extend_from_slice(&n.nlink.to_le_bytes());
    b.resize(INODE_SIZE, 0);
    put_xattrs(&mut b, &n.xattrs);
    Ok(b)
}

/// The superblock: root inode `root_nid`, `inodes` inodes, `blocks`
/// blocks, the prefix table at `prefix_start` when `fingerprint`.
fn superblock(
    root_nid: u64,
    inodes: usize,
    blocks: u64,
    fingerprint: bool,
    prefix_start: u64,
) -> Vec<u8> {
    let mut sb = Vec::with_capacity(SB_SIZE);
    let mut compat = COMPAT_MTIME;
    let mut incompat = INCOMPAT_CHUNKED_FILE;
    if fingerprint {
        compat |= COMPAT_PLAIN_XATTR_PFX | COMPAT_ISHARE_XATTRS;
        incompat |= INCOMPAT_XATTR_PREFIXES;
    }
    sb.extend_from_slice(&MAGIC.to_le_bytes());
    sb.extend_from_slice(&0u32.to_le_bytes()); // no checksum feature
    sb.extend_from_slice(&compat.to_le_bytes());
    sb.push(12); // blkszbits
    sb.push(0); // sb_extslots
    sb.extend_from_slice(&(root_nid as u16).to_le_bytes());
    sb.extend_from_slice(&(inodes as u64).to_le_bytes());
    sb.extend_from_slice(&0u64.to_le_bytes()); // epoch
    sb.extend_from_slice(&0u32.to_le_bytes()); // fixed_nsec
    sb.extend_from_slice(&(blocks as u32).to_le_bytes());
    sb.extend_from_slice(&0u32.to_le_bytes()); // meta_blkaddr
    sb.extend_from_slice(&0u32.to_le_bytes()); // xattr_blkaddr
    sb.extend_from_slice(&[0u8; 16]); // uuid
    let mut vol = [0u8; 16];
    vol[..6].copy_from_slice(b"cowkit");
    sb.extend_from_slice(&vol);
    sb.extend_from_slice(&incompat.to_le_bytes());
    sb.extend_from_slice(&[0u8; 6]); // compr algs, extra devices, devt slot
    sb.push(0); // dirblkbits
    sb.push(u8::from(fingerprint)); // xattr_prefix_count
    sb.extend_from_slice(&((prefix_start / 4) as u32).to_le_bytes());
    sb.extend_from_slice(&0u64.to_le_bytes()); // packed_nid
    sb.push(0); // xattr_filter_reserved
    sb.push(0); // ishare_xattr_prefix_id: long prefix 0
    sb.resize(SB_SIZE, 0);
    sb
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustix::fs::Timespec;
    use std::path::PathBuf;

    fn entry(path: &str, kind: Kind, size: u64) -> Entry {
        Entry {
            path: PathBuf::from(path),
            kind,
            perm: 0o644,
            uid: 1,
            gid: 2,
            atime: Timespec {
                tv_sec: 5,
                tv_nsec: 6,
            },
            mtime: Timespec {
                tv_sec: 7,
                tv_nsec: 8,
            },
            xattrs: Vec::new(),
            target: (kind == Kind::Symlink).then(|| "t".repeat(size as usize).into()),
            rdev: 0,
            size: if kind == Kind::File { size } else { 0 },
            digest: (kind == Kind::File && size > 0).then(|| format!("{size:064x}")),
            link: None,
        }
    }

    fn sample() -> Vec<Entry> {
        let mut v = vec![entry("", Kind::Dir, 0), entry("d", Kind::Dir, 0)];
        for i in 0..400 {
            v.push(entry(&format!("d/file-{i:03}"), Kind::File, i * 1000));
        }
        v.push(entry("long", Kind::Symlink, 3000));
        v.push(entry("huge", Kind::File, 9 << 40));
        let mut h = entry("d/hl", Kind::File, 2000);
        h.link = Some(3);
        v.push(h);
        v
    }

    #[test]
    fn written_images_read_back() {
        let img = write(&sample(), &Options::default()).unwrap();
        let r = Reader::new(&img).unwrap();
        assert_eq!(r.fingerprint.as_deref(), Some(FINGERPRINT_XATTR.as_bytes()));
        let all: HashMap<PathBuf, Inode> = r.walk().unwrap().into_iter().collect();
        assert_eq!(all.len(), 405);
        let f = &all[Path::new("d/file-123")];
        assert_eq!((f.size, f.uid, f.gid, f.mtime), (123_000, 1, 2, (7, 8)));
        let mut fp = b"sha256:".to_vec();
        fp.extend(hex::decode(format!("{:064x}", 123_000)).unwrap());
        assert_eq!(f.xattrs[FINGERPRINT_XATTR.as_bytes()], fp);
        assert_eq!(all[Path::new("d")].nlink, 2);
        assert_eq!(all[Path::new("d/hl")].nid, all[Path::new("d/file-001")].nid);
        assert_eq!(all[Path::new("d/hl")].nlink, 2);
        assert_eq!(all[Path::new("long")].target.as_ref().unwrap().len(), 3000);
        assert_eq!(all[Path::new("huge")].size, 9 << 40);
        assert_eq!(objects(&img).unwrap().len(), 401);
    }

    /// The layouts past one block read back within the reader's bounds:
    /// a directory of 700 entries in blocks, names of 255 bytes, a symlink
    /// pushed out of line by 3.5 KB of xattrs, 60 KB of xattrs on one
    /// file, a 5 GiB file; from memory and from a file alike.
    #[test]
    fn layouts_beyond_one_block_read_back() {
        let mut v = vec![entry("", Kind::Dir, 0), entry("big", Kind::Dir, 0)];
        for i in 0..700 {
            v.push(entry(
                &format!("big/{i:03}-{}", "n".repeat(250)),
                Kind::File,
                1,
            ));
        }
        let mut l = entry("l", Kind::Symlink, 1000);
        let x = |n: &str, len| cowkit_fs::meta::Xattr {
            name: n.into(),
            value: vec![b'v'; len],
        };
        l.xattrs.push(x("user.pad", 3500));
        v.push(l);
        let mut f = entry("x", Kind::File, 5 << 30);
        f.xattrs.push(x("user.a", 30_000));
        f.xattrs.push(x("user.b", 30_000));
        v.push(f);
        let img = write(&v, &Options::default()).unwrap();
        let walked = Reader::new(&img).unwrap().walk().unwrap();
        assert_eq!(walked.len(), v.len());
        let all: HashMap<PathBuf, Inode> = walked.iter().cloned().collect();
        assert_eq!(
            all[Path::new("l")].target.as_deref(),
            Some(&[b't'; 1000][..])
        );
        assert_eq!(all[Path::new("x")].xattrs[&b"user.b"[..]].len(), 30_000);
        assert_eq!(all[Path::new("x")].size, 5 << 30);
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("i"), &img).unwrap();
        let from_file = Reader::open(&dir.path().join("i")).unwrap().walk().unwrap();
        assert_eq!(from_file, walked);
    }

    /// Damage anywhere gives an error or a different reading, never a
    /// panic or a hang.
    #[test]
    fn damaged_images_never_panic() {
        let img = write(&sample(), &Options::default()).unwrap();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..3000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut bad = img.clone();
            let at = (x as usize) % bad.len().min(64 * 1024);
            bad[at] ^= (x >> 32) as u8 | 1;
            if x.is_multiple_of(7) {
                bad.truncate((x >> 20) as usize % bad.len());
            }
            if let Ok(r) = Reader::new(&bad) {
                let _ = r.walk();
            }
        }
    }
}
