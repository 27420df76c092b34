//! The file list of a verified RPM header.
//!
//! Everything the installer needs about a file comes from the main header,
//! which [`Package::read`] has checked against its digest: path, type, mode,
//! owner names, mtime, size, digest, link target, capabilities, hardlink
//! identity. The payload's cpio headers are only used to find which file a
//! payload entry is.

use std::collections::HashMap;

use rpm::IndexTag;

use crate::rpm::{Error, Package, Result};

/// `RPMFILE_GHOST`: listed in the header, absent from the payload.
const FLAG_GHOST: u32 = 1 << 6;
/// `RPMFILE_CONFIG`.
const FLAG_CONFIG: u32 = 1 << 0;

/// The kind of a file, from the type bits of its mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link; its target is [`FileInfo::link_target`].
    Symlink,
    /// A named pipe.
    Fifo,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A socket.
    Socket,
}

impl Kind {
    /// The kind named by the `S_IFMT` bits of `mode`.
    pub fn from_mode(mode: u32) -> Option<Kind> {
        Some(match mode & 0o170000 {
            0o100000 => Kind::Regular,
            0o040000 => Kind::Directory,
            0o120000 => Kind::Symlink,
            0o010000 => Kind::Fifo,
            0o020000 => Kind::CharDevice,
            0o060000 => Kind::BlockDevice,
            0o140000 => Kind::Socket,
            _ => return None,
        })
    }
}

pub use crate::digest::{DigestAlgo, Hasher};

/// One file of the header's file list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileInfo {
    /// Position in the header's file arrays.
    pub index: u32,
    /// Absolute path as the header gives it (`/usr/bin/foo`), byte for
    /// byte.
    pub path: Name,
    /// Type and permission bits.
    pub mode: u32,
    /// The type.
    pub kind: Kind,
    /// Owner name.
    pub user: String,
    /// Group name.
    pub group: String,
    /// Modification time, seconds since the epoch.
    pub mtime: u32,
    /// Size in bytes (for a symlink, the target's length).
    pub size: u64,
    /// Digest of the content (regular files with content), raw bytes.
    pub digest: Option<Vec<u8>>,
    /// Symlink target, byte for byte.
    pub link_target: Option<Name>,
    /// File capabilities in libcap's text form (`cap_net_raw=ep`).
    pub caps: Option<String>,
    /// Device number of a device node (`FILERDEVS`).
    pub rdev: u32,
    /// `FILEINODES`: files of one package with equal `(device, inode)`
    /// are one hardlink set.
    pub inode: u32,
    /// `FILEDEVICES`.
    pub device: u32,
    /// `%ghost`: not in the payload, not installed.
    pub ghost: bool,
    /// `%config`.
    pub config: bool,
}

impl FileInfo {
    /// The hardlink identity `(device, inode)`.
    pub fn link_id(&self) -> (u32, u32) {
        (self.device, self.inode)
    }
}

/// The header's file list, with lookups by path and hardlink set.
#[derive(Clone, Debug)]
pub struct FileList {
    /// Files in header order.
    pub files: Vec<FileInfo>,
    /// Digest algorithm of [`FileInfo::digest`].
    pub algo: DigestAlgo,
    by_path: HashMap<Name, u32>,
    /// For each file, the members (indices, ascending) of its hardlink set
    /// when it has more than one non-ghost regular member; empty otherwise.
    links: HashMap<(u32, u32), Vec<u32>>,
}

impl FileList {
    /// The file at `path` (as in the header: absolute).
    pub fn find(&self, path: impl AsRef<[u8]>) -> Option<&FileInfo> {
        self.by_path
            .get(path.as_ref())
            .map(|&i| &self.files[i as usize])
    }

    /// The members of `file`'s hardlink set, ascending, or an empty slice
    /// when it is not hardlinked.
    pub fn link_set(&self, file: &FileInfo) -> &[u32] {
        if file.kind != Kind::Regular || file.ghost {
            return &[];
        }
        self.links
            .get(&file.link_id())
            .map_or(&[], |v| v.as_slice())
    }

    /// Sum of the sizes of non-ghost regular files, counting each hardlink
    /// set once.
    pub fn content_bytes(&self) -> u64 {
        self.files
            .iter()
            .filter(|f| f.kind == Kind::Regular && !f.ghost)
            .filter(|f| self.link_set(f).last().is_none_or(|&l| l == f.index))
            .map(|f| f.size)
            .sum()
    }
}

fn bad(what: impl Into<String>) -> Error {
    Error::Parse(what.into())
}

pub use crate::name::{escape_bytes, Name};

impl Package {
    /// Refuses a package whose header declares `ENCODING: utf-8` but holds
    /// a file name, directory name or symlink target that is not UTF-8:
    /// the header contradicts itself (rpm-rs refuses such strings too).
    /// Without that tag, names are bytes and installed as they are.
    fn refuse_false_utf8(&self) -> Result<()> {
        let declared = self
            .header_strings(IndexTag::RPMTAG_ENCODING)
            .is_some_and(|v| v.first().is_some_and(|e| e.eq_ignore_ascii_case(b"utf-8")));
        if !declared {
            return Ok(());
        }
        for (tag, what) in [
            (IndexTag::RPMTAG_DIRNAMES, "a directory name"),
            (IndexTag::RPMTAG_BASENAMES, "a file name"),
            (IndexTag::RPMTAG_FILELINKTOS, "a symlink target"),
        ] {
            let strings = self.header_strings(tag).unwrap_or_default();
            if let Some(b) = strings.iter().find(|b| std::str::from_utf8(b).is_err()) {
                return Err(bad(format!(
                    "{what} is not UTF-8 (`{}`) although the header declares `ENCODING: utf-8`",
                    escape_bytes(b)
                )));
            }
        }
        Ok(())
    }

    /// The names of the string array `tag`, byte for byte (rpm-rs would
    /// convert them lossily); empty when the header has no such entry.
    fn names(&self, tag: IndexTag) -> Result<Vec<Name>> {
        if !self.metadata().header.entry_is_present(tag) {
            return Ok(Vec::new());
        }
        self.header_strings(tag)
            .map(|v| v.into_iter().map(Name::from).collect())
            .ok_or_else(|| bad(format!("{tag:?}: not a string array")))
    }
}

/// The string array `tag` of `h`; empty when the header has no such entry.
fn strings(h: &rpm::Header<IndexTag>, tag: IndexTag) -> Result<Vec<String>> {
    if !h.entry_is_present(tag) {
        return Ok(Vec::new());
    }
    h.get_entry_data_as_string_array(tag)
        .map(|v| v.into_iter().map(str::to_owned).collect())
        .map_err(|e| bad(format!("{tag:?}: {e}")))
}

/// The `u32` array `tag` of `h`; empty when the header has no such entry.
fn u32s(h: &rpm::Header<IndexTag>, tag: IndexTag) -> Result<Vec<u32>> {
    if !h.entry_is_present(tag) {
        return Ok(Vec::new());
    }
    h.get_entry_data_as_u32_array(tag)
        .map_err(|e| bad(format!("{tag:?}: {e}")))
}

/// The `u16` array `tag` of `h`; empty when the header has no such entry.
fn u16s(h: &rpm::Header<IndexTag>, tag: IndexTag) -> Result<Vec<u16>> {
    if !h.entry_is_present(tag) {
        return Ok(Vec::new());
    }
    h.get_entry_data_as_u16_array(tag)
        .map_err(|e| bad(format!("{tag:?}: {e}")))
}

/// The header's per-file arrays other than `BASENAMES`, each checked to have one entry per
/// file (the optional ones may also be empty).
struct Columns {
    dirnames: Vec<Name>,
    dirindexes: Vec<u32>,
    modes: Vec<u16>,
    sizes: Vec<u64>,
    mtimes: Vec<u32>,
    digests: Vec<String>,
    links: Vec<Name>,
    flags: Vec<u32>,
    users: Vec<String>,
    groups: Vec<String>,
    inodes: Vec<u32>,
    devices: Vec<u32>,
    rdevs: Vec<u16>,
    caps: Vec<String>,
}

impl Columns {
    /// Checks that every array has one entry per file (`n`), or none where it is optional.
    fn check_lengths(&self, n: usize) -> Result<()> {
        let need = |name: &str, len: usize, optional: bool| -> Result<()> {
            if len == n || (optional && len == 0) {
                Ok(())
            } else {
                Err(bad(format!(
                    "the header's {name} has {len} entries for {n} files"
                )))
            }
        };
        need("DIRINDEXES", self.dirindexes.len(), false)?;
        need("FILEMODES", self.modes.len(), false)?;
        need("FILESIZES", self.sizes.len(), false)?;
        need("FILEMTIMES", self.mtimes.len(), true)?;
        need("FILEDIGESTS", self.digests.len(), true)?;
        need("FILELINKTOS", self.links.len(), true)?;
        need("FILEFLAGS", self.flags.len(), true)?;
        need("FILEUSERNAME", self.users.len(), true)?;
        need("FILEGROUPNAME", self.groups.len(), true)?;
        need("FILEINODES", self.inodes.len(), true)?;
        need("FILEDEVICES", self.devices.len(), true)?;
        need("FILERDEVS", self.rdevs.len(), true)?;
        need("FILECAPS", self.caps.len(), true)
    }

    /// File `i`, named `basename` in its directory, its digest of algorithm `algo`.
    fn file(&self, i: usize, basename: &Name, algo: DigestAlgo) -> Result<FileInfo> {
        let dir = self
            .dirnames
            .get(self.dirindexes[i] as usize)
            .ok_or_else(|| bad(format!("file {i} names directory {}", self.dirindexes[i])))?;
        let path = Name::from([dir.as_bytes(), basename.as_bytes()].concat());
        let mode = u32::from(self.modes[i]);
        let kind = Kind::from_mode(mode)
            .ok_or_else(|| bad(format!("`{path}` has an unknown file type (mode {mode:o})")))?;
        let flag = self.flags.get(i).copied().unwrap_or(0);
        let digest = match self.digests.get(i).map(String::as_str) {
            None | Some("") => None,
            Some(text) => {
                let d = hex::decode(text)
                    .ok()
                    .filter(|d| d.len() == algo.digest_len())
                    .ok_or_else(|| {
                        bad(format!("`{path}` has a malformed {algo} digest `{text}`"))
                    })?;
                Some(d)
            }
        };
        Ok(FileInfo {
            index: i as u32,
            mode,
            kind,
            user: self.users.get(i).cloned().unwrap_or_else(|| "root".into()),
            group: self.groups.get(i).cloned().unwrap_or_else(|| "root".into()),
            mtime: self.mtimes.get(i).copied().unwrap_or(0),
            size: self.sizes[i],
            digest,
            link_target: self.links.get(i).filter(|l| !l.is_empty()).cloned(),
            caps: self.caps.get(i).filter(|c| !c.is_empty()).cloned(),
            rdev: u32::from(self.rdevs.get(i).copied().unwrap_or(0)),
            inode: self.inodes.get(i).copied().unwrap_or(i as u32 + 1),
            device: self.devices.get(i).copied().unwrap_or(1),
            ghost: flag & FLAG_GHOST != 0,
            config: flag & FLAG_CONFIG != 0,
            path,
        })
    }
}

/// The hardlink sets of `files` (regular, not ghost, sharing a link id), each checked to have
/// members of one size and digest.
fn hardlink_sets(files: &[FileInfo]) -> Result<HashMap<(u32, u32), Vec<u32>>> {
    let mut links: HashMap<(u32, u32), Vec<u32>> = HashMap::new();
    for f in files.iter().filter(|f| f.kind == Kind::Regular && !f.ghost) {
        links.entry(f.link_id()).or_default().push(f.index);
    }
    links.retain(|_, v| v.len() > 1);
    for set in links.values() {
        let first = &files[set[0] as usize];
        if set.iter().any(|&i| {
            files[i as usize].size != first.size || files[i as usize].digest != first.digest
        }) {
            return Err(bad(format!(
                "the hardlink set of `{}` has members of different sizes or digests",
                first.path
            )));
        }
    }
    Ok(links)
}

impl Package {
    /// The file list from the (verified) main header.
    pub fn files(&self) -> Result<FileList> {
        let basenames = self.names(IndexTag::RPMTAG_BASENAMES)?;
        let n = basenames.len();
        let algo = self.file_digest_algo()?;
        if n == 0 {
            return Ok(FileList {
                files: Vec::new(),
                algo,
                by_path: HashMap::new(),
                links: HashMap::new(),
            });
        }
        let columns = self.columns()?;
        columns.check_lengths(n)?;

        let mut files = Vec::with_capacity(n);
        let mut by_path = HashMap::with_capacity(n);
        for (i, basename) in basenames.iter().enumerate() {
            let info = columns.file(i, basename, algo)?;
            if by_path.insert(info.path.clone(), i as u32).is_some() {
                return Err(bad(format!("the header lists `{}` twice", info.path)));
            }
            files.push(info);
        }
        let links = hardlink_sets(&files)?;
        Ok(FileList {
            files,
            algo,
            by_path,
            links,
        })
    }

    /// `FILEDIGESTALGO`, MD5 when the header has none.
    fn file_digest_algo(&self) -> Result<DigestAlgo> {
        let h = &self.metadata().header;
        if !h.entry_is_present(IndexTag::RPMTAG_FILEDIGESTALGO) {
            return Ok(DigestAlgo::Md5);
        }
        let a = h
            .get_entry_data_as_u32(IndexTag::RPMTAG_FILEDIGESTALGO)
            .map_err(|e| bad(format!("FILEDIGESTALGO: {e}")))?;
        DigestAlgo::from_rpm(a).ok_or(Error::UnsupportedDigestAlgorithm(a))
    }

    /// The header's per-file arrays, read in the order rpm's tags are checked (names that
    /// claim to be UTF-8 and are not refused after `DIRNAMES`).
    fn columns(&self) -> Result<Columns> {
        let h = &self.metadata().header;
        let dirnames = self.names(IndexTag::RPMTAG_DIRNAMES)?;
        self.refuse_false_utf8()?;
        let dirindexes = u32s(h, IndexTag::RPMTAG_DIRINDEXES)?;
        let modes = u16s(h, IndexTag::RPMTAG_FILEMODES)?;
        let sizes: Vec<u64> = if h.entry_is_present(IndexTag::RPMTAG_LONGFILESIZES) {
            h.get_entry_data_as_u64_array(IndexTag::RPMTAG_LONGFILESIZES)
                .map_err(|e| bad(format!("LONGFILESIZES: {e}")))?
        } else {
            u32s(h, IndexTag::RPMTAG_FILESIZES)?
                .into_iter()
                .map(u64::from)
                .collect()
        };
        Ok(Columns {
            dirnames,
            dirindexes,
            modes,
            sizes,
            mtimes: u32s(h, IndexTag::RPMTAG_FILEMTIMES)?,
            digests: strings(h, IndexTag::RPMTAG_FILEDIGESTS)?,
            links: self.names(IndexTag::RPMTAG_FILELINKTOS)?,
            flags: u32s(h, IndexTag::RPMTAG_FILEFLAGS)?,
            users: strings(h, IndexTag::RPMTAG_FILEUSERNAME)?,
            groups: strings(h, IndexTag::RPMTAG_FILEGROUPNAME)?,
            inodes: u32s(h, IndexTag::RPMTAG_FILEINODES)?,
            devices: u32s(h, IndexTag::RPMTAG_FILEDEVICES)?,
            rdevs: u16s(h, IndexTag::RPMTAG_FILERDEVS)?,
            caps: strings(h, IndexTag::RPMTAG_FILECAPS)?,
        })
    }
}
