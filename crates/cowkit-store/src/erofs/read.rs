//! The reader: an uncompressed EROFS image with inline xattrs (what
//! [`super::write`] makes, and what `mkfs.erofs` makes of such a tree),
//! from memory or from a file, read with bounds an image's author cannot
//! stretch (see [`Reader`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use cowkit_fs::IoError;
use rustix::fs::{Mode, OFlags};

use super::{
    BLOCK, CHUNK_BASED, CHUNK_INDEXES, COMPAT_ISHARE_XATTRS, COMPAT_PLAIN_XATTR_PFX, DIRENT_SIZE,
    FLAT_INLINE, FLAT_PLAIN, LONG_PREFIX, MAGIC, PREFIXES, SB_OFFSET, SB_SIZE,
};
use crate::{Error, Result};

/// At most this many entries in an image.
pub const MAX_ENTRIES: usize = 1 << 22;
/// At most this many bytes in a path inside an image (`PATH_MAX` less
/// its NUL); this also bounds the depth (2,048 levels).
pub const MAX_PATH: usize = 4095;
/// At most this many bytes in a symlink's target.
pub const MAX_TARGET: u64 = 4095;
/// A walk keeps at most this many bytes per image byte it read…
pub const KEPT_PER_BYTE: u64 = 16;
/// …plus this many.
pub const KEPT_SLACK: u64 = 4 << 20;
/// What one entry of a walk's result costs besides its path.
const ENTRY_COST: u64 = 128;
const MAX_NAME: usize = 255;

/// Why an image cannot be read (in [`Error::Erofs`], with its path).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// No EROFS superblock.
    #[error("not an EROFS image (bad magic)")]
    NotErofs,
    /// A feature the reader does not handle.
    #[error("it uses {0}, which cowkit's reader does not handle")]
    Unhandled(String),
    /// Something does not hold together.
    #[error("it is damaged: {0}")]
    Damaged(&'static str),
    /// Past one of the reader's bounds.
    #[error("it is past cowkit's bounds: {0}")]
    Bounds(String),
    /// A file's `trusted.overlay.redirect` that is not an object's path.
    #[error("`/{0}` redirects to `{1}`, which is not an object of the store")]
    Redirect(String, String),
}

/// One inode of an image, as the reader sees it. Cheap to clone: the
/// entries naming one inode (hardlinks) share its xattrs and target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inode {
    /// Node number (offset / 32).
    pub nid: u64,
    /// Type and permission bits.
    pub mode: u32,
    /// Size.
    pub size: u64,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Modification time (s, ns).
    pub mtime: (i64, u32),
    /// Link count.
    pub nlink: u32,
    /// Extended attributes by full name (a hidden long prefix is named by
    /// itself, e.g. `erofs.fingerprint.v1`).
    pub xattrs: Arc<BTreeMap<Vec<u8>, Vec<u8>>>,
    /// A symlink's target.
    pub target: Option<Arc<[u8]>>,
}

enum Src<'a> {
    Mem(&'a [u8]),
    File(File),
}

/// A readable image.
///
/// # Bounds
///
/// - A file is read with `pread` where the metadata points, a block at a
///   time at most for directories; nothing reads the whole file, so its
///   size (a hole of 4 GiB, say) costs nothing.
/// - Every inode is read once. Entries naming an inode already read are
///   hardlinks (as the kernel, which takes the nid for the inode number,
///   and `fsck.erofs` see them) and share its [`Inode`], whose xattrs and
///   symlink target are reference-counted; a directory named twice (a
///   cycle, or a hardlinked directory) is refused.
/// - No two things read may overlap: an inode with its xattrs and inline
///   data, a directory's or symlink's blocks, the superblock and prefix
///   table each claim their bytes, so every byte of the image is read at
///   most once.
/// - What a walk keeps (paths, inodes, xattrs, targets) is at most
///   [`KEPT_PER_BYTE`] bytes per image byte it read, plus [`KEPT_SLACK`];
///   names are at most 255 bytes, paths [`MAX_PATH`], symlink targets
///   [`MAX_TARGET`], xattr names 255, entries [`MAX_ENTRIES`].
///
/// Every offset is checked, so a damaged image gives an error naming the
/// image ([`Error::Erofs`]), never a panic.
pub struct Reader<'a> {
    src: Src<'a>,
    len: u64,
    path: PathBuf,
    prefixes: Vec<(u8, Vec<u8>)>,
    prefix_end: u64,
    root: u64,
    /// The fingerprint xattr's full name, if the image records one.
    pub fingerprint: Option<Vec<u8>>,
}

/// Where a directory's or symlink's data is: whole blocks from `plain`,
/// the last partial one at `tail` when it is inline.
struct Loc {
    plain: u64,
    tail: Option<u64>,
    size: u64,
}

/// An inode's fixed part, read before anything it points to.
struct Head {
    nid: u64,
    at: u64,
    isize: u64,
    xsize: u64,
    layout: u16,
    mode: u32,
    size: u64,
    i_u: u32,
    uid: u32,
    gid: u32,
    mtime: (i64, u32),
    nlink: u32,
}

const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;
const S_IFLNK: u32 = 0o120000;
const S_IFREG: u32 = 0o100000;

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn le64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl<'a> Reader<'a> {
    /// Open an image held in memory.
    pub fn new(img: &'a [u8]) -> Result<Self> {
        Self::init(
            Src::Mem(img),
            img.len() as u64,
            PathBuf::from("(in memory)"),
        )
    }

    /// An error about this image.
    fn fail(&self, why: ReadError) -> Error {
        Error::Erofs {
            path: self.path.clone(),
            why,
        }
    }

    fn damaged(&self, what: &'static str) -> Error {
        self.fail(ReadError::Damaged(what))
    }

    /// `len` bytes at `at` (callers keep `len` to a block or an inode's
    /// xattrs, 256 KiB).
    fn bytes(&self, at: u64, len: u64) -> Result<Cow<'a, [u8]>> {
        let end = at
            .checked_add(len)
            .filter(|&e| e <= self.len)
            .ok_or_else(|| self.damaged("a reference past its end"))?;
        match &self.src {
            Src::Mem(img) => {
                let img: &'a [u8] = img;
                Ok(Cow::Borrowed(&img[at as usize..end as usize]))
            }
            Src::File(f) => {
                let mut buf = vec![0u8; len as usize];
                f.read_exact_at(&mut buf, at).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::UnexpectedEof {
                        self.damaged("a reference past its end (the file shrank)")
                    } else {
                        IoError::new("read", self.path.clone(), e).into()
                    }
                })?;
                Ok(Cow::Owned(buf))
            }
        }
    }

    fn init(src: Src<'a>, len: u64, path: PathBuf) -> Result<Self> {
        let mut r = Reader {
            src,
            len,
            path,
            prefixes: Vec::new(),
            prefix_end: (SB_OFFSET + SB_SIZE) as u64,
            root: 0,
            fingerprint: None,
        };
        if len < r.prefix_end {
            return Err(r.fail(ReadError::NotErofs));
        }
        let sb = r.bytes(SB_OFFSET as u64, SB_SIZE as u64)?;
        if le32(&sb, 0) != MAGIC {
            return Err(r.fail(ReadError::NotErofs));
        }
        if sb[12] != 12 {
            let what = format!("a block size of 2^{}", sb[12]);
            return Err(r.fail(ReadError::Unhandled(what)));
        }
        if le32(&sb, 40) != 0 {
            let what = "metadata that does not start at block 0".into();
            return Err(r.fail(ReadError::Unhandled(what)));
        }
        r.root = u64::from(le16(&sb, 14));
        let compat = le32(&sb, 8);
        let count = sb[91];
        if count > 0 && compat & COMPAT_PLAIN_XATTR_PFX == 0 && le64(&sb, 96) != 0 {
            let what = "xattr prefixes kept in a packed inode".into();
            return Err(r.fail(ReadError::Unhandled(what)));
        }
        let mut at = u64::from(le32(&sb, 92)) * 4;
        for _ in 0..count {
            let len = u64::from(le16(&r.bytes(at, 2)?, 0));
            if len == 0 {
                return Err(r.damaged("an empty xattr prefix"));
            }
            if len > 1 + MAX_NAME as u64 {
                let what = format!("an xattr prefix of {len} bytes (at most 256)");
                return Err(r.fail(ReadError::Bounds(what)));
            }
            let p = r.bytes(at + 2, len)?;
            r.prefixes.push((p[0], p[1..].to_vec()));
            at = (at + 2 + len).next_multiple_of(4);
        }
        if count > 0 {
            r.prefix_end = at;
        }
        if compat & COMPAT_ISHARE_XATTRS != 0 {
            let id = sb[105];
            let (base, infix) = r
                .prefixes
                .get(usize::from(id))
                .ok_or_else(|| r.damaged("the fingerprint prefix is missing"))?;
            r.fingerprint = Some(r.prefix_name(*base, infix)?);
        }
        Ok(r)
    }

    fn prefix_name(&self, base: u8, infix: &[u8]) -> Result<Vec<u8>> {
        let mut n = match base {
            0 => Vec::new(),
            _ => PREFIXES
                .iter()
                .find(|(i, _)| *i == base)
                .ok_or_else(|| self.damaged("an xattr of no known prefix"))?
                .1
                .as_bytes()
                .to_vec(),
        };
        n.extend_from_slice(infix);
        Ok(n)
    }

    /// The root directory's inode.
    pub fn root(&self) -> Result<Inode> {
        let head = self.head(self.root)?;
        Ok(self.body(&head, &mut 0)?.0)
    }

    /// The fixed part of the inode `nid`.
    fn head(&self, nid: u64) -> Result<Head> {
        let at = nid
            .checked_mul(32)
            .ok_or_else(|| self.damaged("a nid out of range"))?;
        let mut b = self.bytes(at, 32)?;
        let format = le16(&b, 0);
        let extended = format & 1 == 1;
        if extended {
            b = self.bytes(at, 64)?;
        }
        let icount = u64::from(le16(&b, 2));
        let mode = u32::from(le16(&b, 4));
        let (isize, size, i_u) = match extended {
            true => (64, le64(&b, 8), le32(&b, 16)),
            false => (32, u64::from(le32(&b, 8)), le32(&b, 16)),
        };
        let (uid, gid, mtime, nlink) = match extended {
            true => (
                le32(&b, 24),
                le32(&b, 28),
                (le64(&b, 32) as i64, le32(&b, 40)),
                le32(&b, 44),
            ),
            false => (
                u32::from(le16(&b, 24)),
                u32::from(le16(&b, 26)),
                (i64::from(le32(&b, 12)), 0),
                u32::from(le16(&b, 6)),
            ),
        };
        if !matches!(
            mode & S_IFMT,
            S_IFREG | S_IFDIR | S_IFLNK | 0o020000 | 0o060000 | 0o010000 | 0o140000
        ) {
            return Err(self.damaged("an inode of no known type"));
        }
        Ok(Head {
            nid,
            at,
            isize,
            xsize: if icount == 0 {
                0
            } else {
                12 + 4 * (icount - 1)
            },
            layout: (format >> 1) & 7,
            mode,
            size,
            i_u,
            uid,
            gid,
            mtime,
            nlink,
        })
    }

    /// Where a directory's or symlink's data is, or `None` for other
    /// inodes (whose data cowkit never reads).
    fn loc(&self, h: &Head) -> Result<Option<Loc>> {
        let kind = h.mode & S_IFMT;
        if kind != S_IFDIR && kind != S_IFLNK {
            if kind == S_IFREG && h.layout == CHUNK_BASED && h.i_u as u16 & CHUNK_INDEXES != 0 {
                return Err(self.fail(ReadError::Unhandled("chunk indexes".into())));
            }
            return Ok(None);
        }
        if kind == S_IFLNK && h.size > MAX_TARGET {
            let what = format!("a symlink target of {} bytes (at most 4,095)", h.size);
            return Err(self.fail(ReadError::Bounds(what)));
        }
        let plain = u64::from(h.i_u) * BLOCK;
        let loc = match h.layout {
            FLAT_PLAIN => Loc {
                plain,
                tail: None,
                size: h.size,
            },
            FLAT_INLINE => {
                let at = h.at + h.isize + h.xsize;
                let rest = h.size % BLOCK;
                if rest > 0 && at % BLOCK + rest > BLOCK {
                    return Err(self.damaged("inline data across a block boundary"));
                }
                Loc {
                    plain,
                    tail: (rest > 0).then_some(at),
                    size: h.size,
                }
            }
            l => {
                let what = format!("a directory or symlink of layout {l}");
                return Err(self.fail(ReadError::Unhandled(what)));
            }
        };
        Ok(Some(loc))
    }

    /// The byte ranges `h` covers: the inode with its xattrs and inline
    /// tail, and its blocks.
    fn ranges(&self, h: &Head, loc: Option<&Loc>) -> Result<[(u64, u64); 2]> {
        let tail = loc
            .filter(|l| l.tail.is_some())
            .map_or(0, |l| l.size % BLOCK);
        let inode = (h.at, h.at + h.isize + h.xsize + tail);
        let blocks = match loc {
            Some(l) => {
                let whole = if l.tail.is_some() {
                    l.size - l.size % BLOCK
                } else {
                    l.size
                };
                let end = l
                    .plain
                    .checked_add(whole)
                    .filter(|&e| e <= self.len || whole == 0)
                    .ok_or_else(|| self.damaged("a directory or symlink past its end"))?;
                (l.plain, end.max(l.plain))
            }
            None => (0, 0),
        };
        Ok([inode, blocks])
    }

    /// The inode's xattrs and target, and where a directory's entries are;
    /// adds the bytes read to `read`.
    fn body(&self, h: &Head, read: &mut u64) -> Result<(Inode, Option<Loc>)> {
        let loc = self.loc(h)?;
        let xattrs = if h.xsize > 0 {
            *read += h.xsize;
            self.xattrs(&self.bytes(h.at + h.isize, h.xsize)?)?
        } else {
            BTreeMap::new()
        };
        let mut target = None;
        if let (S_IFLNK, Some(l)) = (h.mode & S_IFMT, &loc) {
            *read += l.size;
            target = Some(match l.size {
                0 => Arc::from(&[][..]),
                n => Arc::from(&*self.bytes(l.tail.unwrap_or(l.plain), n)?),
            });
        }
        let inode = Inode {
            nid: h.nid,
            mode: h.mode,
            size: h.size,
            uid: h.uid,
            gid: h.gid,
            mtime: h.mtime,
            nlink: h.nlink,
            xattrs: Arc::new(xattrs),
            target,
        };
        Ok((inode, loc.filter(|_| h.mode & S_IFMT == S_IFDIR)))
    }

    /// The inline xattrs in `body` (an inode's xattr area).
    fn xattrs(&self, body: &[u8]) -> Result<BTreeMap<Vec<u8>, Vec<u8>>> {
        if body[4] > 0 {
            return Err(self.fail(ReadError::Unhandled("shared xattrs".into())));
        }
        let mut out = BTreeMap::new();
        let mut p = 12;
        while p < body.len() {
            let h = body
                .get(p..p + 4)
                .ok_or_else(|| self.damaged("an xattr past its inode's xattr area"))?;
            let (nlen, idx, vlen) = (usize::from(h[0]), h[1], usize::from(le16(h, 2)));
            let end = p + 4 + nlen + vlen;
            if end > body.len() {
                return Err(self.damaged("an xattr past its inode's xattr area"));
            }
            let mut name = if idx & LONG_PREFIX != 0 {
                let (b, infix) = self
                    .prefixes
                    .get(usize::from(idx & !LONG_PREFIX))
                    .ok_or_else(|| self.damaged("an xattr names a missing prefix"))?;
                self.prefix_name(*b, infix)?
            } else if idx == 0 {
                return Err(self.damaged("an xattr of no known prefix"));
            } else {
                self.prefix_name(idx, b"")?
            };
            name.extend_from_slice(&body[p + 4..p + 4 + nlen]);
            if name.is_empty() || name.len() > MAX_NAME {
                let what = format!("an xattr name of {} bytes (1 to 255)", name.len());
                return Err(self.fail(ReadError::Bounds(what)));
            }
            if out.insert(name, body[p + 4 + nlen..end].to_vec()).is_some() {
                return Err(self.damaged("an xattr named twice"));
            }
            p = end.next_multiple_of(4);
        }
        Ok(out)
    }

    /// Every inode below the root with its path (the root itself first,
    /// with an empty path), in directory order. Hardlinks share one
    /// [`Inode`]'s xattrs and target.
    pub fn walk(&self) -> Result<Vec<(PathBuf, Inode)>> {
        let mut w = Walk::default();
        w.claim(self, (SB_OFFSET as u64, self.prefix_end))?;
        let mut out: Vec<(PathBuf, Inode)> = Vec::new();
        let mut stack = vec![(PathBuf::new(), self.root)];
        while let Some((path, nid)) = stack.pop() {
            let (inode, dir) = w.inode(self, nid)?;
            out.push((path, inode));
            if let Some(loc) = dir {
                let base = &out.last().expect("just pushed").0;
                let sub = w.dir(self, &loc, base)?;
                stack.extend(sub.into_iter().rev());
            }
        }
        Ok(out)
    }

    /// The objects the image refers to: (path in the image, object path
    /// from `objects/`), one per file with a redirect.
    pub fn objects(&self) -> Result<Vec<(String, String)>> {
        let mut out = Vec::new();
        for (path, inode) in self.walk()? {
            if let Some(v) = inode.xattrs.get(&b"trusted.overlay.redirect"[..]) {
                let rel = object_rel(v).ok_or_else(|| {
                    let shown = String::from_utf8_lossy(&v[..v.len().min(80)]).into_owned();
                    self.fail(ReadError::Redirect(path.display().to_string(), shown))
                })?;
                out.push((format!("/{}", path.display()), rel));
            }
        }
        Ok(out)
    }
}

impl Reader<'static> {
    /// Open the image file `path` (not through a symlink; a regular file
    /// only), to be read where its metadata points.
    pub fn open(path: &Path) -> Result<Self> {
        let (fd, _) = cowkit_fs::dir::open_regular(|f| {
            rustix::fs::open(path, f | OFlags::NOFOLLOW, Mode::empty())
        })
        .map_err(|e| IoError::new("open", path, e))?;
        Self::from_file(File::from(fd), path)
    }

    /// Read the image in `file`, named `path` in errors.
    pub fn from_file(file: File, path: &Path) -> Result<Self> {
        let len = file
            .metadata()
            .map_err(|e| IoError::new("stat", path, e))?
            .len();
        Self::init(Src::File(file), len, path.to_path_buf())
    }
}

/// `ab/cdef…` of a redirect `/ab/cdef…` naming an object, or `None`.
fn object_rel(v: &[u8]) -> Option<String> {
    let hex = |b: &[u8]| b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    let ok = v.len() == 66 && v[0] == b'/' && v[3] == b'/' && hex(&v[1..3]) && hex(&v[4..]);
    ok.then(|| String::from_utf8_lossy(&v[1..]).into_owned())
}

/// The state of one walk: what was read, claimed and kept.
#[derive(Default)]
struct Walk {
    /// Byte ranges read so far (start → end), disjoint.
    claims: BTreeMap<u64, u64>,
    /// Inodes other than directories read so far, by nid.
    files: HashMap<u64, Inode>,
    /// Directories read so far.
    dirs: HashSet<u64>,
    read: u64,
    kept: u64,
    entries: usize,
}

impl Walk {
    /// Claim `range` of the image for one thing.
    fn claim(&mut self, r: &Reader, (start, end): (u64, u64)) -> Result<()> {
        if start >= end {
            return Ok(());
        }
        if self
            .claims
            .range(..end)
            .next_back()
            .is_some_and(|(_, &e)| e > start)
        {
            return Err(r.damaged(
                "two of its parts overlap (inodes, xattrs, directory blocks, the superblock)",
            ));
        }
        self.claims.insert(start, end);
        Ok(())
    }

    /// Count `n` more bytes kept.
    fn keep(&mut self, r: &Reader, n: u64) -> Result<()> {
        self.kept += n;
        if self.kept > KEPT_SLACK + KEPT_PER_BYTE * self.read {
            let what = format!(
                "reading it would keep {} bytes for the {} bytes of it read (at most {KEPT_PER_BYTE} per byte, plus 4 MiB)",
                self.kept, self.read
            );
            return Err(r.fail(ReadError::Bounds(what)));
        }
        Ok(())
    }

    /// The inode `nid`, read once; where its entries are for a directory.
    fn inode(&mut self, r: &Reader, nid: u64) -> Result<(Inode, Option<Loc>)> {
        if let Some(i) = self.files.get(&nid) {
            return Ok((i.clone(), None));
        }
        if !self.dirs.insert(nid) {
            return Err(r.damaged("a directory named twice (a cycle, or a hardlinked directory)"));
        }
        let head = r.head(nid)?;
        self.read += head.isize;
        let [inode, blocks] = r.ranges(&head, r.loc(&head)?.as_ref())?;
        self.claim(r, inode)?;
        self.claim(r, blocks)?;
        let (inode, dir) = r.body(&head, &mut self.read)?;
        let xattr_bytes: usize = inode
            .xattrs
            .iter()
            .map(|(k, v)| 48 + k.len() + v.len())
            .sum();
        let target = inode.target.as_ref().map_or(0, |t| t.len());
        self.keep(r, ENTRY_COST + (xattr_bytes + target) as u64)?;
        if dir.is_none() {
            self.dirs.remove(&nid);
            self.files.insert(nid, inode.clone());
        }
        Ok((inode, dir))
    }

    /// The entries of the directory at `loc`, whose path is `base`: (path,
    /// nid), `.` and `..` left out.
    fn dir(&mut self, r: &Reader, loc: &Loc, base: &Path) -> Result<Vec<(PathBuf, u64)>> {
        let mut sub = Vec::new();
        let blocks = loc.size.div_ceil(BLOCK);
        for k in 0..blocks {
            let len = (loc.size - k * BLOCK).min(BLOCK);
            let at = match loc.tail {
                Some(t) if k + 1 == blocks => t,
                _ => loc.plain + k * BLOCK,
            };
            let block = r.bytes(at, len)?;
            self.read += len;
            self.block(r, &block, base, &mut sub)?;
        }
        Ok(sub)
    }

    /// The entries of one directory block.
    fn block(
        &mut self,
        r: &Reader,
        block: &[u8],
        base: &Path,
        sub: &mut Vec<(PathBuf, u64)>,
    ) -> Result<()> {
        if block.len() < DIRENT_SIZE {
            return Err(r.damaged("a short directory block"));
        }
        let first_off = usize::from(le16(block, 8));
        let n = first_off / DIRENT_SIZE;
        if n == 0 || first_off > block.len() {
            return Err(r.damaged("a directory block without entries"));
        }
        for k in 0..n {
            let d = &block[k * DIRENT_SIZE..(k + 1) * DIRENT_SIZE];
            let child = le64(d, 0);
            let off = usize::from(le16(d, 8));
            let end = if k + 1 < n {
                usize::from(le16(block, (k + 1) * DIRENT_SIZE + 8))
            } else {
                let rest = block.get(off..).unwrap_or_default();
                off + rest.iter().position(|&b| b == 0).unwrap_or(rest.len())
            };
            let name = block
                .get(off..end)
                .ok_or_else(|| r.damaged("a name past its directory block"))?;
            if name == b"." || name == b".." {
                continue;
            }
            if name.is_empty() || name.len() > MAX_NAME || name.contains(&b'/') {
                return Err(
                    r.damaged("a name in a directory that is empty, over 255 bytes or holds `/`")
                );
            }
            self.entries += 1;
            if self.entries > MAX_ENTRIES {
                let what = format!("more than {MAX_ENTRIES} entries");
                return Err(r.fail(ReadError::Bounds(what)));
            }
            let path = base.join(OsStr::from_bytes(name));
            if path.as_os_str().len() > MAX_PATH {
                let what = format!("a path over {MAX_PATH} bytes");
                return Err(r.fail(ReadError::Bounds(what)));
            }
            self.keep(r, ENTRY_COST + path.as_os_str().len() as u64)?;
            sub.push((path, child));
        }
        Ok(())
    }
}
