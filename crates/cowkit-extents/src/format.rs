//! The on-disk layout: table records and the footer. See
//! `docs/extents-format.md` for the specification this code implements.

use sha2::{Digest, Sha256};

use crate::Error;

/// The footer's magic, first and last 8 bytes of the footer.
pub const MAGIC: [u8; 8] = *b"CoWkExT\x01";
/// The format version this code writes and reads.
pub const VERSION: u32 = 1;
/// Footer length in bytes.
pub const FOOTER_LEN: usize = 176;
/// Extent record length in bytes.
pub const EXTENT_LEN: usize = 88;
/// File record length in bytes.
pub const FILE_LEN: usize = 8;
/// A file record's extent for an empty file.
pub const NO_EXTENT: u32 = u32::MAX;
/// The largest digest an extent record holds (SHA-512).
pub const MAX_DIGEST: usize = 64;

/// How the installer should put an extent's bytes into a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Block-aligned, followed by zeros to the next block boundary: clone
    /// it (`FICLONERANGE`, rounded up, then truncate).
    Clone,
    /// Packed without alignment: write it.
    Write,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Clone => 1,
            Kind::Write => 2,
        }
    }

    fn from_code(c: u8) -> Option<Kind> {
        match c {
            1 => Some(Kind::Clone),
            2 => Some(Kind::Write),
            _ => None,
        }
    }
}

/// One stored content: a range of the extents file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Byte offset in the extents file.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// How to install it.
    pub kind: Kind,
    /// The content's digest, in the package's file digest algorithm.
    pub digest: Vec<u8>,
}

/// A regular file of the header and the extent holding its content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileRecord {
    /// Index in the header's file list.
    pub file_index: u32,
    /// Index in the extent table, or [`NO_EXTENT`] for an empty file.
    pub extent: u32,
}

/// The fixed-size trailer of an extents file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Footer {
    /// Format version.
    pub version: u32,
    /// Alignment of [`Kind::Clone`] extents.
    pub block_size: u32,
    /// rpm's number of the digest algorithm of the extent digests.
    pub digest_algo: u32,
    /// Length of the RPM lead and headers at the start.
    pub prefix_len: u64,
    /// Offset of the table (extent records, then file records).
    pub table_offset: u64,
    /// Number of extent records.
    pub extent_count: u32,
    /// Number of file records.
    pub file_count: u32,
    /// Size of the original package.
    pub input_size: u64,
    /// SHA-256 of the original package, whole.
    pub input_sha256: [u8; 32],
    /// SHA-256 of the main header (as `RPMSIGTAG_SHA256`).
    pub header_sha256: [u8; 32],
}

impl Footer {
    /// Length of the table the footer describes.
    pub fn table_len(&self) -> u64 {
        self.extent_count as u64 * EXTENT_LEN as u64 + self.file_count as u64 * FILE_LEN as u64
    }

    /// The footer's bytes, with the checksum over `table` and the footer.
    pub fn encode(&self, table: &[u8]) -> [u8; FOOTER_LEN] {
        let mut b = [0u8; FOOTER_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[12..16].copy_from_slice(&0u32.to_le_bytes());
        b[16..20].copy_from_slice(&self.block_size.to_le_bytes());
        b[20..24].copy_from_slice(&self.digest_algo.to_le_bytes());
        b[24..32].copy_from_slice(&self.prefix_len.to_le_bytes());
        b[32..40].copy_from_slice(&self.table_offset.to_le_bytes());
        b[40..44].copy_from_slice(&self.extent_count.to_le_bytes());
        b[44..48].copy_from_slice(&self.file_count.to_le_bytes());
        b[48..56].copy_from_slice(&self.input_size.to_le_bytes());
        b[56..88].copy_from_slice(&self.input_sha256);
        b[88..120].copy_from_slice(&self.header_sha256);
        let sum = checksum(table, &b[..128]);
        b[128..160].copy_from_slice(&sum);
        b[160..168].copy_from_slice(&(FOOTER_LEN as u64).to_le_bytes());
        b[168..176].copy_from_slice(&MAGIC);
        b
    }

    /// Parse the footer; the checksum is checked by [`Footer::verify`]
    /// once the table has been read.
    pub fn decode(b: &[u8; FOOTER_LEN]) -> Result<Footer, Error> {
        if b[0..8] != MAGIC || b[168..176] != MAGIC {
            return Err(Error::NotExtents);
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let version = u32_at(8);
        if version != VERSION {
            return Err(Error::UnsupportedVersion(version));
        }
        if u32_at(12) != 0 || u64_at(160) != FOOTER_LEN as u64 || b[120..128] != [0; 8] {
            return Err(Error::Corrupt(
                "the footer's reserved fields are not zero".into(),
            ));
        }
        Ok(Footer {
            version,
            block_size: u32_at(16),
            digest_algo: u32_at(20),
            prefix_len: u64_at(24),
            table_offset: u64_at(32),
            extent_count: u32_at(40),
            file_count: u32_at(44),
            input_size: u64_at(48),
            input_sha256: b[56..88].try_into().expect("32 bytes"),
            header_sha256: b[88..120].try_into().expect("32 bytes"),
        })
    }

    /// Check the footer's checksum over `table` and itself.
    pub fn verify(b: &[u8; FOOTER_LEN], table: &[u8]) -> Result<(), Error> {
        if checksum(table, &b[..128]) != b[128..160] {
            return Err(Error::Corrupt(
                "the table checksum does not match: the file is damaged".into(),
            ));
        }
        Ok(())
    }
}

fn checksum(table: &[u8], footer_head: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(table);
    h.update(footer_head);
    h.finalize().into()
}

/// Append the record of `e` to `out`.
pub fn encode_extent(e: &Extent, out: &mut Vec<u8>) {
    out.extend_from_slice(&e.offset.to_le_bytes());
    out.extend_from_slice(&e.length.to_le_bytes());
    out.push(e.kind.code());
    out.push(e.digest.len() as u8);
    out.extend_from_slice(&[0u8; 6]);
    let mut d = [0u8; MAX_DIGEST];
    d[..e.digest.len()].copy_from_slice(&e.digest);
    out.extend_from_slice(&d);
}

/// Parse one extent record.
pub fn decode_extent(b: &[u8]) -> Result<Extent, Error> {
    let offset = u64::from_le_bytes(b[0..8].try_into().expect("8 bytes"));
    let length = u64::from_le_bytes(b[8..16].try_into().expect("8 bytes"));
    let kind = Kind::from_code(b[16])
        .ok_or_else(|| Error::Corrupt(format!("unknown extent kind {}", b[16])))?;
    let dlen = b[17] as usize;
    if dlen > MAX_DIGEST || b[18..24] != [0; 6] {
        return Err(Error::Corrupt("malformed extent record".into()));
    }
    Ok(Extent {
        offset,
        length,
        kind,
        digest: b[24..24 + dlen].to_vec(),
    })
}

/// Append the record of `f` to `out`.
pub fn encode_file(f: &FileRecord, out: &mut Vec<u8>) {
    out.extend_from_slice(&f.file_index.to_le_bytes());
    out.extend_from_slice(&f.extent.to_le_bytes());
}

/// Parse one file record.
pub fn decode_file(b: &[u8]) -> FileRecord {
    FileRecord {
        file_index: u32::from_le_bytes(b[0..4].try_into().expect("4 bytes")),
        extent: u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")),
    }
}
