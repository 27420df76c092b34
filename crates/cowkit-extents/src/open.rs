//! Reading an extents file back: footer, table, headers, and every
//! cross-check between them, before the installer trusts any of it.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use cowkit_archive::files::{FileList, Kind as FileKind};
use cowkit_archive::rpm::Package;
use sha2::{Digest, Sha256};

use crate::format::{self, Extent, FileRecord, Footer, Kind, FOOTER_LEN, NO_EXTENT};
use crate::Error;

/// Where a regular file's content is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content<'a> {
    /// The file is empty.
    Empty,
    /// The file's bytes are this extent.
    Extent(&'a Extent),
}

/// An opened, checked extents file.
pub struct ExtentsFile {
    file: File,
    path: PathBuf,
    len: u64,
    footer: Footer,
    package: Package,
    files: FileList,
    extents: Vec<Extent>,
    /// Per header file: its extent, [`NO_EXTENT`] when empty, `None` when
    /// not a regular file with content in the package.
    by_file: Vec<Option<u32>>,
}

impl std::fmt::Debug for ExtentsFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtentsFile")
            .field("path", &self.path)
            .field("footer", &self.footer)
            .finish_non_exhaustive()
    }
}

fn corrupt(what: impl Into<String>) -> Error {
    Error::Corrupt(what.into())
}

/// Whether the file at `path` ends with an extents footer.
pub fn is_extents_file(file: &File) -> std::io::Result<bool> {
    let len = file.metadata()?.len();
    if len < FOOTER_LEN as u64 {
        return Ok(false);
    }
    let mut magic = [0u8; 8];
    file.read_exact_at(&mut magic, len - 8)?;
    Ok(magic == format::MAGIC)
}

impl ExtentsFile {
    /// Open and check `file` (named `path` in messages).
    pub fn open(file: File, path: &Path) -> Result<ExtentsFile, Error> {
        let len = file
            .metadata()
            .map_err(|source| Error::Read {
                path: path.as_os_str().into(),
                source,
            })?
            .len();
        let (footer, table) = read_footer_and_table(&file, path, len)?;
        let (package, files) = read_header(&file, &footer)?;
        let (ext_bytes, file_bytes) =
            table.split_at(footer.extent_count as usize * format::EXTENT_LEN);
        let extents = decode_extents(ext_bytes, &footer)?;
        let by_file = decode_file_records(file_bytes, &files, &extents)?;
        Ok(ExtentsFile {
            file,
            path: path.to_path_buf(),
            len,
            footer,
            package,
            files,
            extents,
            by_file,
        })
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// Its path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its size in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it is empty (never, for a valid file).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The footer.
    pub fn footer(&self) -> &Footer {
        &self.footer
    }

    /// The package's verified headers.
    pub fn package(&self) -> &Package {
        &self.package
    }

    /// The header's file list.
    pub fn files(&self) -> &FileList {
        &self.files
    }

    /// The extent table.
    pub fn extents(&self) -> &[Extent] {
        &self.extents
    }

    /// Where the content of the header's file `index` is, `None` when it is
    /// not a regular file with content in this package.
    pub fn content(&self, index: u32) -> Option<Content<'_>> {
        match self.by_file.get(index as usize).copied().flatten()? {
            NO_EXTENT => Some(Content::Empty),
            i => Some(Content::Extent(&self.extents[i as usize])),
        }
    }
}

/// The footer of `file` (`len` bytes long, named `path` in messages) and the table before it,
/// checked against each other: where they lie, the block size, the table's bound and digest.
fn read_footer_and_table(file: &File, path: &Path, len: u64) -> Result<(Footer, Vec<u8>), Error> {
    let read_at = |buf: &mut [u8], at: u64| {
        file.read_exact_at(buf, at).map_err(|source| Error::Read {
            path: path.as_os_str().into(),
            source,
        })
    };
    if len < FOOTER_LEN as u64 {
        return Err(Error::NotExtents);
    }
    let mut fb = [0u8; FOOTER_LEN];
    read_at(&mut fb, len - FOOTER_LEN as u64)?;
    let footer = Footer::decode(&fb)?;
    let table_len = footer.table_len();
    if footer.table_offset.checked_add(table_len) != Some(len - FOOTER_LEN as u64) {
        return Err(corrupt("the table does not end where the footer begins"));
    }
    if footer.prefix_len > footer.table_offset
        || !footer.block_size.is_power_of_two()
        || footer.block_size < 512
        || footer.block_size > crate::transcode::MAX_BLOCK_SIZE
    {
        return Err(corrupt("the footer's offsets are inconsistent"));
    }
    // The table is at most a few MB for real packages; the header
    // limit bounds the file count, so bound the table the same way.
    if table_len > 64 << 20 {
        return Err(corrupt(format!("the table claims {table_len} bytes")));
    }
    let mut table = vec![0u8; table_len as usize];
    read_at(&mut table, footer.table_offset)?;
    Footer::verify(&fb, &table)?;
    Ok((footer, table))
}

/// The RPM headers at the start of `file`, verified, their length, digest and file digest
/// algorithm checked against the footer; and their file list.
fn read_header(file: &File, footer: &Footer) -> Result<(Package, FileList), Error> {
    let package = Package::read(&mut file.take(footer.prefix_len))?;
    if package.prefix().len() as u64 != footer.prefix_len {
        return Err(corrupt(
            "the RPM headers are not as long as the footer says",
        ));
    }
    let header_sha: [u8; 32] = Sha256::digest(&package.prefix()[package.header_offset()..]).into();
    if header_sha != footer.header_sha256 {
        return Err(corrupt("the table belongs to another package's header"));
    }
    let files = package.files()?;
    if files.algo.rpm_number() != footer.digest_algo {
        return Err(corrupt("the table's digest algorithm is not the header's"));
    }
    Ok((package, files))
}

/// The table's extents, each checked to lie in the data area (a clone extent aligned, its
/// rounded-up end too) and not to be empty.
fn decode_extents(ext_bytes: &[u8], footer: &Footer) -> Result<Vec<Extent>, Error> {
    let extents = ext_bytes
        .chunks_exact(format::EXTENT_LEN)
        .map(format::decode_extent)
        .collect::<Result<Vec<_>, _>>()?;
    let bs = u64::from(footer.block_size);
    for (i, e) in extents.iter().enumerate() {
        let end = e.offset.checked_add(e.length);
        let aligned_end = e.offset.checked_add(e.length.next_multiple_of(bs));
        let ok = e.offset >= footer.prefix_len
            && end.is_some_and(|end| end <= footer.table_offset)
            && (e.kind == Kind::Write
                || (e.offset % bs == 0
                    && aligned_end.is_some_and(|end| end <= footer.table_offset)));
        if !ok || e.length == 0 {
            return Err(corrupt(format!("extent {i} lies outside the data area")));
        }
    }
    Ok(extents)
}

/// Every file's extent (by file index) from the table's file records: one record for each
/// regular, non-ghost file of the header and none for any other, its extent matching the
/// header's size and digest.
fn decode_file_records(
    file_bytes: &[u8],
    files: &FileList,
    extents: &[Extent],
) -> Result<Vec<Option<u32>>, Error> {
    let mut by_file = vec![None; files.files.len()];
    for r in file_bytes
        .chunks_exact(format::FILE_LEN)
        .map(format::decode_file)
    {
        let FileRecord { file_index, extent } = r;
        let f = files
            .files
            .get(file_index as usize)
            .ok_or_else(|| corrupt(format!("a file record names file {file_index}")))?;
        if f.kind != FileKind::Regular || f.ghost {
            return Err(corrupt(format!("`{}` is not a regular file", f.path)));
        }
        if by_file[file_index as usize].replace(extent).is_some() {
            return Err(corrupt(format!("`{}` has two file records", f.path)));
        }
        if extent == NO_EXTENT {
            if f.size != 0 {
                return Err(corrupt(format!("`{}` is not empty", f.path)));
            }
            continue;
        }
        let e = extents
            .get(extent as usize)
            .ok_or_else(|| corrupt(format!("`{}` names extent {extent}", f.path)))?;
        if e.length != f.size || Some(&e.digest) != f.digest.as_ref() {
            return Err(corrupt(format!(
                "the extent of `{}` does not match the header's size or digest",
                f.path
            )));
        }
    }
    if let Some(f) = files
        .files
        .iter()
        .find(|f| f.kind == FileKind::Regular && !f.ghost && by_file[f.index as usize].is_none())
    {
        return Err(corrupt(format!("`{}` has no file record", f.path)));
    }
    Ok(by_file)
}
