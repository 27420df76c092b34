//! RPM packages read as a stream, verified before they are trusted.
//!
//! [`Package::read`] reads the lead, the signature header and the main
//! header, with size limits checked *before* anything is allocated, keeps
//! their bytes verbatim ([`Package::prefix`]), and checks the main header
//! against the SHA-256 digest in the signature header before returning. No
//! payload byte has been read at that point.
//!
//! The payload is then read through a [`PayloadDigest`], which hashes the
//! compressed bytes as they stream past, and a decompressor chosen from the
//! header ([`Package::decoder`]). [`Package::verify_payload`] drains the rest
//! of the input and compares the digest with `PAYLOADDIGEST` from the
//! (already verified) header.

use std::io::{Cursor, Read};

use rpm::{IndexSignatureTag, IndexTag};
use sha1::Sha1;
use sha2::{Digest, Sha256};

/// Length of the RPM lead.
pub const LEAD_LEN: usize = 96;
const LEAD_MAGIC: [u8; 4] = [0xED, 0xAB, 0xEE, 0xDB];
const HEADER_MAGIC: [u8; 4] = [0x8E, 0xAD, 0xE8, 0x01];
/// rpm's own limit on index entries per header (`hdrchkTags`).
const MAX_INDEX_ENTRIES: u32 = 0x10000;
/// cowkit's limit on the bytes of one header: far above real packages
/// (a 100 MB LibreOffice package has a header of about 1 MB) and small
/// enough to keep memory bounded.
pub const MAX_HEADER_BYTES: u64 = 32 << 20;
/// Memory the xz and lzma decoders may use (liblzma's `memlimit`). `xz -9`
/// (a 64 MiB dictionary, the largest preset) needs 65 MiB to decode; a
/// legacy lzma header can claim a 4 GiB dictionary, which liblzma would
/// allocate before reading any data.
pub const DECODER_MEMLIMIT: u64 = 128 << 20;
/// The largest zstd window accepted, as a power of two: 2^27 = 128 MiB,
/// zstd's own default limit for decoding and what `zstd --long` writes.
pub const ZSTD_WINDOW_LOG_MAX: u32 = 27;
/// The longest symlink target accepted, in bytes (Linux `PATH_MAX`).
pub const MAX_LINK_TARGET: u64 = 4096;

/// What can go wrong reading an RPM.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the input failed.
    #[error("read failed at byte {offset}")]
    Io {
        /// Offset in the package.
        offset: u64,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// The input ended inside the lead or a header.
    #[error("the package is truncated: it ends inside the {what} (at byte {offset})")]
    Truncated {
        /// The part that was being read.
        what: &'static str,
        /// Where the input ended.
        offset: u64,
    },
    /// The lead's magic is wrong: not an RPM package.
    #[error("not an RPM package (lead magic is {found:02x?})")]
    NotRpm {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// A header's magic is wrong.
    #[error("the {what} is damaged: bad magic {found:02x?} at byte {offset}")]
    BadHeaderMagic {
        /// Which header.
        what: &'static str,
        /// Where.
        offset: u64,
        /// What was there.
        found: [u8; 4],
    },
    /// A header declares more entries or data than allowed.
    #[error("the {what} claims {entries} entries and {bytes} bytes, over the limits ({MAX_INDEX_ENTRIES} entries, {MAX_HEADER_BYTES} bytes)")]
    HeaderTooLarge {
        /// Which header.
        what: &'static str,
        /// Declared index entries.
        entries: u32,
        /// Declared size in bytes.
        bytes: u64,
    },
    /// The headers could not be parsed.
    #[error("the headers cannot be parsed: {0}")]
    Parse(String),
    /// The signature header has neither a SHA-256 nor a SHA-1 digest of
    /// the main header (a package whose header is covered only by the MD5
    /// of header and payload, as rpm before 4.0 wrote them).
    #[error("the package has neither a SHA-256 nor a SHA-1 header digest (RPMSIGTAG_SHA256, RPMSIGTAG_SHA1), so its header cannot be verified before its payload is read")]
    HeaderDigestMissing,
    /// The main header does not match its digest.
    #[error("header digest mismatch: the signature header says {algo} {expected}, the header hashes to {actual}")]
    HeaderDigestMismatch {
        /// The digest that failed (`SHA-256` or `SHA-1`).
        algo: &'static str,
        /// From the signature header.
        expected: String,
        /// Computed.
        actual: String,
    },
    /// The compressed payload does not match `PAYLOADDIGEST`.
    #[error("payload digest mismatch: the header says {expected}, the payload hashes to {actual}")]
    PayloadDigestMismatch {
        /// From the header.
        expected: String,
        /// Computed.
        actual: String,
    },
    /// The header names a payload digest algorithm other than SHA-256.
    #[error("unsupported payload digest algorithm {0} (only SHA-256, 8, is supported)")]
    UnsupportedDigestAlgorithm(u32),
    /// The header names a compressor cowkit cannot decode.
    #[error("unsupported payload compressor `{0}`")]
    UnsupportedCompressor(String),
    /// The cpio archive inside the payload is malformed or truncated.
    #[error("the payload archive is damaged")]
    Cpio(#[from] crate::cpio::Error),
    /// The payload goes on after the cpio archive's trailer.
    #[error("the payload holds more than {limit} bytes after the end of its archive")]
    TrailingData {
        /// How many bytes are accepted there.
        limit: u64,
    },
    /// The payload does not start as the header's compressor says it should.
    #[error("{}", not_compressed_as(*.compressor, .found))]
    NotCompressedAs {
        /// The compressor named by the header.
        compressor: Compressor,
        /// The first bytes of the payload.
        found: Vec<u8>,
    },
    /// A payload entry names a file the header does not list.
    #[error("the payload has an entry `{name}` that the header does not list")]
    UnknownEntry {
        /// The entry's name (or stripped file index).
        name: String,
    },
    /// A file appears twice in the payload.
    #[error("the payload holds `{path}` twice")]
    DuplicateEntry {
        /// The file.
        path: crate::name::Name,
    },
    /// A ghost file appears in the payload.
    #[error("the payload holds `{path}`, which the header marks as a ghost")]
    GhostInPayload {
        /// The file.
        path: crate::name::Name,
    },
    /// The payload's entry disagrees with the header about a file.
    #[error("the payload disagrees with the header about `{path}`: {what}")]
    EntryMismatch {
        /// The file.
        path: crate::name::Name,
        /// What differs.
        what: String,
    },
    /// A file's content does not match its digest in the header.
    #[error("`{path}` does not match its {algo} digest in the header: expected {expected}, got {actual}")]
    FileDigestMismatch {
        /// The file.
        path: crate::name::Name,
        /// The algorithm.
        algo: crate::digest::DigestAlgo,
        /// From the header.
        expected: String,
        /// Computed.
        actual: String,
    },
    /// A regular file with content has no digest in the header.
    #[error("`{path}` has no digest in the header, so its content cannot be verified")]
    FileDigestMissing {
        /// The file.
        path: crate::name::Name,
    },
    /// A file listed by the header is missing from the payload.
    #[error("`{path}` is listed by the header but missing from the payload")]
    MissingFromPayload {
        /// The file.
        path: crate::name::Name,
    },
    /// The payload could not be decompressed.
    #[error("the {compressor} payload cannot be decompressed")]
    Decompress {
        /// The compressor.
        compressor: Compressor,
        /// The decoder's error.
        #[source]
        source: std::io::Error,
    },
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Payload compressors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compressor {
    /// No compression (`w.ufdio`).
    None,
    /// gzip.
    Gzip,
    /// bzip2.
    Bzip2,
    /// xz.
    Xz,
    /// Legacy lzma (`.lzma`, "lzma_alone").
    Lzma,
    /// zstd.
    Zstd,
}

impl std::fmt::Display for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Compressor::None => "uncompressed",
            Compressor::Gzip => "gzip",
            Compressor::Bzip2 => "bzip2",
            Compressor::Xz => "xz",
            Compressor::Lzma => "lzma",
            Compressor::Zstd => "zstd",
        })
    }
}

/// The headers of an RPM package, verified against their digest.
pub struct Package {
    prefix: Vec<u8>,
    header_start: usize,
    header_digest: String,
    metadata: rpm::PackageMetadata,
    compressor: Compressor,
    payload_digest: Option<String>,
}

impl std::fmt::Debug for Package {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Package")
            .field("prefix_len", &self.prefix.len())
            .field("compressor", &self.compressor)
            .finish_non_exhaustive()
    }
}

/// Reads exactly `buf.len()` bytes, mapping a short input to `Truncated`.
fn read_exact_at<R: Read>(
    r: &mut R,
    buf: &mut [u8],
    offset: u64,
    what: &'static str,
) -> Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match r.read(&mut buf[done..]) {
            Ok(0) => {
                return Err(Error::Truncated {
                    what,
                    offset: offset + done as u64,
                })
            }
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err(Error::Io {
                    offset: offset + done as u64,
                    source: e,
                })
            }
        }
    }
    Ok(())
}

/// Read one header structure (intro, index, store) onto `out`; returns its
/// length. Limits are checked before the body is read.
fn read_header<R: Read>(r: &mut R, out: &mut Vec<u8>, what: &'static str) -> Result<usize> {
    let offset = out.len() as u64;
    let mut intro = [0u8; 16];
    read_exact_at(r, &mut intro, offset, what)?;
    let magic: [u8; 4] = intro[..4].try_into().expect("4 bytes");
    if magic != HEADER_MAGIC {
        return Err(Error::BadHeaderMagic {
            what,
            offset,
            found: magic,
        });
    }
    let entries = u32::from_be_bytes(intro[8..12].try_into().expect("4 bytes"));
    let data = u32::from_be_bytes(intro[12..16].try_into().expect("4 bytes"));
    let body = entries as u64 * 16 + data as u64;
    if entries == 0 || entries > MAX_INDEX_ENTRIES || body + 16 > MAX_HEADER_BYTES {
        return Err(Error::HeaderTooLarge {
            what,
            entries,
            bytes: body + 16,
        });
    }
    out.extend_from_slice(&intro);
    let start = out.len();
    out.resize(start + body as usize, 0);
    read_exact_at(r, &mut out[start..], offset + 16, what)?;
    check_index(&out[start..], entries as usize, data as usize, what, offset)?;
    Ok(16 + body as usize)
}

/// Check that every index entry's data lies inside the store, as rpm's
/// `hdrchkRange` does: rpm-rs slices the store at the entry's offset without
/// checking, so a damaged header (the signature header has no digest) must
/// not reach it.
fn check_index(
    body: &[u8],
    entries: usize,
    data: usize,
    what: &'static str,
    offset: u64,
) -> Result<()> {
    let (index, store) = body.split_at(entries * 16);
    debug_assert_eq!(store.len(), data);
    for (i, e) in index.chunks_exact(16).enumerate() {
        let word = |k: usize| u32::from_be_bytes(e[k..k + 4].try_into().expect("4 bytes"));
        let (ty, off, count) = (word(4), word(8) as usize, word(12) as usize);
        let bad = |why: &str| {
            Error::Parse(format!(
                "the {what} at byte {offset} is damaged: index entry {i} (tag {}) {why}",
                word(0)
            ))
        };
        if off > data {
            return Err(bad("points past the end of its data"));
        }
        let rest = &store[off..];
        let size = match ty {
            0 => 0,
            1 | 2 | 7 => 1,
            3 => 2,
            4 => 4,
            5 => 8,
            6 | 8 | 9 => {
                // `count` NUL-terminated strings must fit.
                let mut at = 0;
                for _ in 0..count {
                    match rest[at..].iter().position(|&b| b == 0) {
                        Some(n) => at += n + 1,
                        None => return Err(bad("has a string that runs past the end of its data")),
                    }
                }
                continue;
            }
            _ => return Err(bad(&format!("has unknown type {ty}"))),
        };
        if count.checked_mul(size).is_none_or(|n| n > rest.len()) {
            return Err(bad("has more data than its header holds"));
        }
    }
    Ok(())
}

fn not_compressed_as(c: Compressor, found: &[u8]) -> String {
    let start = found
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ");
    match c {
        Compressor::None => format!(
            "the header says the payload is not compressed, but it is not a cpio archive (it starts with {start})"
        ),
        c => format!(
            "the payload is not compressed with {c} as the header says (it starts with {start})"
        ),
    }
}

pub use crate::name::printable;

/// Whether `head`, the first bytes of a payload, can start a stream of
/// compressor `c`.
fn magic_fits(c: Compressor, head: &[u8]) -> bool {
    let starts = |m: &[u8]| head.starts_with(m);
    match c {
        Compressor::None => starts(b"07070"),
        Compressor::Gzip => starts(&[0x1f, 0x8b]),
        Compressor::Bzip2 => starts(b"BZh"),
        Compressor::Xz => starts(&[0xfd, b'7', b'z', b'X', b'Z', 0]),
        // No magic: a properties byte (lc, lp, pb) below 9 * 5 * 5.
        Compressor::Lzma => head[0] < 225,
        // A frame, or a skippable frame (0x184D2A50..=0x184D2A5F).
        Compressor::Zstd => {
            starts(&[0x28, 0xb5, 0x2f, 0xfd])
                || (head[0] & 0xf0 == 0x50 && head[1..4] == [0x2a, 0x4d, 0x18])
        }
    }
}

/// Check the main header against the signature header's digest of it as
/// rpm 4.18 does at its default `%_pkgverify_level` (`digest`): the SHA-256
/// when the package has one, else the SHA-1 (packages built by rpm before
/// 4.14). Never weaker: a package with neither is refused, since its only
/// other digest (MD5) covers the payload too and cannot vouch for the header
/// before the payload is read.
fn verify_header_digest(signature: &rpm::Header<IndexSignatureTag>, header: &[u8]) -> Result<()> {
    let declared = |tag| {
        signature
            .get_entry_data_as_string(tag)
            .ok()
            .map(str::to_ascii_lowercase)
    };
    let (algo, expected, actual) =
        if let Some(expected) = declared(IndexSignatureTag::RPMSIGTAG_SHA256) {
            ("SHA-256", expected, hex::encode(Sha256::digest(header)))
        } else if let Some(expected) = declared(IndexSignatureTag::RPMSIGTAG_SHA1) {
            ("SHA-1", expected, hex::encode(Sha1::digest(header)))
        } else {
            return Err(Error::HeaderDigestMissing);
        };
    if expected != actual {
        return Err(Error::HeaderDigestMismatch {
            algo,
            expected,
            actual,
        });
    }
    Ok(())
}

/// Bytes needed to recognise each compressor's start.
const MAGIC_LEN: usize = 6;

impl Package {
    /// Read and verify the lead, signature header and main header from `r`,
    /// leaving `r` at the first payload byte.
    pub fn read<R: Read>(r: &mut R) -> Result<Package> {
        let mut prefix = vec![0u8; LEAD_LEN];
        read_exact_at(r, &mut prefix, 0, "lead")?;
        let magic: [u8; 4] = prefix[..4].try_into().expect("4 bytes");
        if magic != LEAD_MAGIC {
            return Err(Error::NotRpm { found: magic });
        }
        let sig_len = read_header(r, &mut prefix, "signature header")?;
        let pad = (8 - sig_len % 8) % 8;
        let at = prefix.len();
        prefix.resize(at + pad, 0);
        read_exact_at(r, &mut prefix[at..], at as u64, "signature header padding")?;
        let header_start = prefix.len();
        read_header(r, &mut prefix, "header")?;

        let metadata = rpm::PackageMetadata::parse(&mut Cursor::new(&prefix[..]))
            .map_err(|e| Error::Parse(e.to_string()))?;
        if metadata.get_package_segment_offsets().payload != prefix.len() as u64 {
            return Err(Error::Parse(
                "header lengths disagree with the parser".into(),
            ));
        }

        verify_header_digest(&metadata.signature, &prefix[header_start..])?;
        // The package's identity is the SHA-256 of its header, also when
        // the header was verified by its SHA-1.
        let header_digest = hex::encode(Sha256::digest(&prefix[header_start..]));

        // Everything below comes from the verified header.
        let h = &metadata.header;
        let compressor = match h.get_entry_data_as_string(IndexTag::RPMTAG_PAYLOADCOMPRESSOR) {
            Err(_) => Compressor::None,
            Ok("gzip") => Compressor::Gzip,
            Ok("bzip2") => Compressor::Bzip2,
            Ok("xz") => Compressor::Xz,
            Ok("lzma") => Compressor::Lzma,
            Ok("zstd") => Compressor::Zstd,
            Ok(other) => return Err(Error::UnsupportedCompressor(other.to_string())),
        };
        let payload_digest = match h.get_entry_data_as_string_array(IndexTag::RPMTAG_PAYLOADSHA256)
        {
            Ok(v) if !v.is_empty() => {
                let algo = h
                    .get_entry_data_as_u32(IndexTag::RPMTAG_PAYLOADSHA256ALGO)
                    .unwrap_or(8);
                if algo != 8 {
                    return Err(Error::UnsupportedDigestAlgorithm(algo));
                }
                Some(v[0].to_ascii_lowercase())
            }
            _ => None,
        };
        Ok(Package {
            prefix,
            header_start,
            header_digest,
            metadata,
            compressor,
            payload_digest,
        })
    }

    /// Lead, signature header (with padding) and main header, verbatim.
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// Offset of the main header in [`Package::prefix`].
    pub fn header_offset(&self) -> usize {
        self.header_start
    }

    /// SHA-256 of the main header (lower-case hex), checked against the
    /// signature header's `RPMSIGTAG_SHA256`: the package's identity
    /// (rpm's `%{SHA256HEADER}`), the same for a `.rpm` and its extents file.
    pub fn header_digest(&self) -> &str {
        &self.header_digest
    }

    /// The strings of the main header's entry `tag` (a string, string
    /// array or i18n string) as the header holds them, or `None` when the
    /// header has no such entry. rpm-rs hands out these strings converted
    /// to UTF-8 lossily; this is how to see a name that is not UTF-8 as it
    /// is. The entry's data was checked to lie inside the header when it
    /// was read.
    pub fn header_strings(&self, tag: IndexTag) -> Option<Vec<&[u8]>> {
        let h = &self.prefix[self.header_start..];
        let word = |at: usize| -> Option<u32> {
            Some(u32::from_be_bytes(h.get(at..at + 4)?.try_into().ok()?))
        };
        let entries = word(8)? as usize;
        let store = h.get(16 + entries * 16..)?;
        let entry = (0..entries)
            .map(|i| 16 + i * 16)
            .find(|&at| word(at) == Some(tag as u32))?;
        let (ty, offset, count) = (word(entry + 4)?, word(entry + 8)?, word(entry + 12)?);
        let count = match ty {
            6 => 1,
            8 | 9 => count as usize,
            _ => return None,
        };
        let mut rest = store.get(offset as usize..)?;
        let mut out = Vec::with_capacity(count.min(rest.len()));
        for _ in 0..count {
            let nul = rest.iter().position(|&b| b == 0)?;
            out.push(&rest[..nul]);
            rest = &rest[nul + 1..];
        }
        Some(out)
    }

    /// The parsed headers.
    pub fn metadata(&self) -> &rpm::PackageMetadata {
        &self.metadata
    }

    /// The payload compressor named by the header.
    pub fn compressor(&self) -> Compressor {
        self.compressor
    }

    /// `PAYLOADDIGEST` (SHA-256 of the compressed payload, lower-case hex),
    /// absent in packages older than rpm 4.14.
    pub fn payload_digest(&self) -> Option<&str> {
        self.payload_digest.as_deref()
    }

    /// A decompressing reader of the payload (the cpio archive) over
    /// `payload`, which should be a [`PayloadDigest`].
    ///
    /// The first bytes are read here and must start a stream of the
    /// header's compressor ([`Error::NotCompressedAs`] otherwise; a payload
    /// shorter than that is [`Error::Truncated`]). The decoders' memory is
    /// bounded: [`DECODER_MEMLIMIT`] for xz and lzma, a window of at most
    /// 2^[`ZSTD_WINDOW_LOG_MAX`] bytes for zstd.
    pub fn decoder<'a, R: Read + 'a>(&self, mut payload: R) -> Result<Box<dyn Read + 'a>> {
        let c = self.compressor;
        let map = |source| Error::Decompress {
            compressor: c,
            source,
        };
        let mut head = [0u8; MAGIC_LEN];
        read_exact_at(&mut payload, &mut head, self.prefix.len() as u64, "payload")?;
        if !magic_fits(c, &head) {
            return Err(Error::NotCompressedAs {
                compressor: c,
                found: head.to_vec(),
            });
        }
        let payload = Cursor::new(head).chain(payload);
        let lzma = |stream: std::result::Result<
            liblzma::stream::Stream,
            liblzma::stream::Error,
        >| { stream.map_err(|e| map(std::io::Error::other(e))) };
        Ok(match c {
            Compressor::None => Box::new(payload),
            Compressor::Gzip => Box::new(flate2::read::MultiGzDecoder::new(payload)),
            Compressor::Bzip2 => Box::new(bzip2::read::MultiBzDecoder::new(payload)),
            Compressor::Xz => {
                let stream = lzma(liblzma::stream::Stream::new_stream_decoder(
                    DECODER_MEMLIMIT,
                    liblzma::stream::CONCATENATED,
                ))?;
                Box::new(liblzma::read::XzDecoder::new_stream(payload, stream))
            }
            Compressor::Lzma => {
                let stream = lzma(liblzma::stream::Stream::new_lzma_decoder(DECODER_MEMLIMIT))?;
                Box::new(liblzma::read::XzDecoder::new_stream(payload, stream))
            }
            Compressor::Zstd => {
                let mut d = zstd::stream::read::Decoder::new(payload).map_err(map)?;
                d.window_log_max(ZSTD_WINDOW_LOG_MAX).map_err(map)?;
                Box::new(d)
            }
        })
    }

    /// Drain what is left of the payload through `digest` and compare with
    /// `PAYLOADDIGEST`. Returns the computed digest.
    pub fn verify_payload<R: Read>(&self, mut digest: PayloadDigest<R>) -> Result<String> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            match digest.read(&mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    return Err(Error::Io {
                        offset: self.prefix.len() as u64 + digest.bytes,
                        source: e,
                    })
                }
            }
        }
        let actual = hex::encode(digest.hasher.finalize());
        match &self.payload_digest {
            Some(expected) if *expected != actual => Err(Error::PayloadDigestMismatch {
                expected: expected.clone(),
                actual,
            }),
            _ => Ok(actual),
        }
    }
}

/// Hashes the compressed payload as it is read.
pub struct PayloadDigest<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> PayloadDigest<R> {
    /// Wrap the input positioned at the first payload byte.
    pub fn new(inner: R) -> Self {
        PayloadDigest {
            inner,
            hasher: Sha256::new(),
            bytes: 0,
        }
    }

    /// Compressed bytes read so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl<R: Read> Read for PayloadDigest<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}
