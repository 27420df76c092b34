//! The payload of a verified RPM as a stream of verified files.
//!
//! [`read_payload`] decompresses the payload, walks its cpio archive and
//! hands every regular file with content to a visitor as an [`Entry`]: the
//! header's [`FileInfo`] (the trusted description), the members of its
//! hardlink set, and a [`Read`] over the content that hashes as it goes.
//! [`Entry::finish`] drains the rest and checks the digest against
//! `FILEDIGESTS`; the driver calls it when the visitor did not, so no file
//! passes unverified. Symlink targets are checked against `FILELINKTOS`,
//! entry types and sizes against the header, every non-ghost file must be
//! present exactly once, and at the end the compressed payload is checked
//! against `PAYLOADDIGEST`.
//!
//! Nothing from a payload entry's own header is trusted except to find
//! which header file it is: names, modes and owners come from the header.

use std::cell::Cell;
use std::io::{self, Read};

use crate::cpio;
use crate::files::{DigestAlgo, FileInfo, FileList, Hasher, Kind};
use crate::rpm::{printable, Compressor, Error, Package, PayloadDigest, MAX_LINK_TARGET};

/// An error from [`read_payload`]: the archive's or the visitor's.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError<E> {
    /// The package failed a check or could not be read.
    #[error(transparent)]
    Archive(#[from] Error),
    /// The visitor failed.
    #[error(transparent)]
    Visit(E),
}

/// What [`read_payload`] saw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PayloadSummary {
    /// Compressed payload bytes read.
    pub compressed_bytes: u64,
    /// Uncompressed archive bytes.
    pub archive_bytes: u64,
    /// Entries in the archive.
    pub entries: u64,
    /// SHA-256 of the compressed payload (lower-case hex).
    pub payload_digest: String,
}

/// The one thing an [`Entry`] needs from the cpio reader.
trait ContentRead {
    fn read_content(&mut self, buf: &mut [u8]) -> Result<usize, cpio::Error>;
}

impl<R: Read> ContentRead for cpio::Reader<R> {
    fn read_content(&mut self, buf: &mut [u8]) -> Result<usize, cpio::Error> {
        cpio::Reader::read_content(self, buf)
    }
}

/// A regular file with content, handed to the visitor of [`read_payload`].
pub struct Entry<'a> {
    /// The header's description of the file.
    pub file: &'a FileInfo,
    /// Indices of the members of the file's hardlink set (empty when not
    /// hardlinked); `file` is one of them.
    pub links: &'a [u32],
    cpio: &'a mut dyn ContentRead,
    algo: DigestAlgo,
    hasher: Option<Hasher>,
    remaining: u64,
    mismatch: &'a mut Option<Error>,
}

impl std::fmt::Debug for Entry<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entry")
            .field("file", &self.file.path)
            .field("remaining", &self.remaining)
            .finish_non_exhaustive()
    }
}

impl Entry<'_> {
    /// Content size in bytes.
    pub fn size(&self) -> u64 {
        self.file.size
    }

    fn check(&mut self) -> Result<(), Error> {
        let Some(hasher) = self.hasher.take() else {
            return Ok(());
        };
        let actual = hasher.finish();
        let expected = self.file.digest.as_deref().unwrap_or_default();
        if actual != expected {
            return Err(Error::FileDigestMismatch {
                path: self.file.path.clone(),
                algo: self.algo,
                expected: hex::encode(expected),
                actual: hex::encode(&actual),
            });
        }
        Ok(())
    }

    /// Take over the digest check: from now on this entry's reads are not
    /// hashed, and the returned [`PendingDigest`] must be fed every byte of
    /// the content and [finished](PendingDigest::finish). This lets another
    /// thread hash while this one decompresses; whoever commits the result
    /// must wait for that check. `None` when there is nothing to check
    /// (already taken, or an empty file without a digest) — or when some
    /// content has been read already, which would make the digest partial.
    #[must_use = "the content is unverified until the pending digest is finished"]
    pub fn defer_digest(&mut self) -> Option<PendingDigest> {
        if self.remaining != self.file.size {
            return None;
        }
        Some(PendingDigest {
            hasher: self.hasher.take()?,
            expected: self.file.digest.clone().unwrap_or_default(),
            path: self.file.path.clone(),
            algo: self.algo,
        })
    }

    /// Read (and hash) whatever content is left, then check the digest.
    pub fn finish(&mut self) -> Result<(), Error> {
        let mut buf = vec![0u8; 64 * 1024];
        while self.remaining > 0 {
            let n = self.cpio.read_content(&mut buf)?;
            if n == 0 {
                break;
            }
            self.consume(&buf[..n]);
        }
        self.check()
    }

    fn consume(&mut self, data: &[u8]) {
        if let Some(h) = &mut self.hasher {
            h.update(data);
        }
        self.remaining -= data.len() as u64;
    }
}

/// A file digest check handed off by [`Entry::defer_digest`].
#[derive(Debug)]
pub struct PendingDigest {
    hasher: Hasher,
    expected: Vec<u8>,
    path: crate::name::Name,
    algo: DigestAlgo,
}

impl PendingDigest {
    /// Hash the next bytes of the content.
    pub fn update(&mut self, data: &[u8]) {
        self.hasher.update(data);
    }

    /// Compare with the header's digest.
    pub fn finish(self) -> Result<(), Error> {
        let actual = self.hasher.finish();
        if actual != self.expected {
            return Err(Error::FileDigestMismatch {
                path: self.path,
                algo: self.algo,
                expected: hex::encode(&self.expected),
                actual: hex::encode(&actual),
            });
        }
        Ok(())
    }
}

impl Read for Entry<'_> {
    /// Reads content; after the last byte, checks the digest and returns
    /// an [`io::ErrorKind::InvalidData`] error on a mismatch. The typed
    /// error of a mismatch or a damaged archive is what [`read_payload`]
    /// returns, whatever the visitor makes of the `io::Error`.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.remaining == 0 {
            return match self.check() {
                Ok(()) => Ok(0),
                Err(e) => {
                    let msg = e.to_string();
                    *self.mismatch = Some(e);
                    Err(io::Error::new(io::ErrorKind::InvalidData, msg))
                }
            };
        }
        let n = match self.cpio.read_content(buf) {
            Ok(n) => n,
            Err(e) => {
                let io = io::Error::new(e.io_kind(), e.to_string());
                *self.mismatch = Some(e.into());
                return Err(io);
            }
        };
        self.consume(&buf[..n]);
        if self.remaining == 0 {
            if let Err(e) = self.check() {
                let msg = e.to_string();
                *self.mismatch = Some(e);
                return Err(io::Error::new(io::ErrorKind::InvalidData, msg));
            }
        }
        Ok(n)
    }
}

fn mismatch(f: &FileInfo, what: String) -> Error {
    Error::EntryMismatch {
        path: f.path.clone(),
        what,
    }
}

/// Walk the payload of `pkg` read from `input` (positioned at the first
/// payload byte), calling `visit` for every regular file that carries
/// content (one call per hardlink set), in payload order.
///
/// Returns only after every check passed: each file's digest, the
/// header/payload agreement, completeness, and `PAYLOADDIGEST`.
pub fn read_payload<'p, R, E>(
    pkg: &Package,
    files: &'p FileList,
    input: R,
    mut visit: impl FnMut(&mut Entry<'_>) -> Result<(), E>,
) -> Result<PayloadSummary, PayloadError<E>>
where
    R: Read + 'p,
{
    let eof = Cell::new(false);
    let mut digest = PayloadDigest::new(Watch {
        inner: input,
        eof: &eof,
    });
    let mut seen = vec![false; files.files.len()];
    let mut summary = PayloadSummary::default();
    let walked = walk(pkg, files, &mut digest, &mut seen, &mut summary, &mut visit);
    if let Err(e) = walked {
        return Err(match e {
            PayloadError::Archive(e) => {
                let offset = pkg.prefix().len() as u64 + PayloadDigest::bytes(&digest);
                PayloadError::Archive(classify(e, pkg.compressor(), eof.get(), offset))
            }
            visit => visit,
        });
    }
    if let Some(f) = files
        .files
        .iter()
        .find(|f| !f.ghost && !seen[f.index as usize])
    {
        return Err(Error::MissingFromPayload {
            path: f.path.clone(),
        }
        .into());
    }
    summary.compressed_bytes = PayloadDigest::bytes(&digest);
    summary.payload_digest = pkg.verify_payload(digest)?;
    Ok(summary)
}

/// Records whether the raw input has ended.
struct Watch<'a, R> {
    inner: R,
    eof: &'a Cell<bool>,
}

impl<R: Read> Read for Watch<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.eof.set(true);
        }
        Ok(n)
    }
}

/// Name what went wrong in the payload for what it is: an input that
/// ended early is a truncated package, whatever the decoder or the cpio
/// reader made of it; a decoder's failure is not a damaged archive.
fn classify(e: Error, compressor: Compressor, eof: bool, offset: u64) -> Error {
    use crate::cpio::Error as C;
    let early_end = matches!(
        &e,
        Error::Cpio(C::Truncated { .. } | C::TrailerMissing { .. } | C::Io { .. })
            | Error::Decompress { .. }
            | Error::Io { .. }
            | Error::TrailingData { .. }
    );
    if eof && early_end {
        return Error::Truncated {
            what: "payload",
            offset,
        };
    }
    match e {
        Error::Cpio(C::Io { source, .. }) if compressor != Compressor::None => {
            Error::Decompress { compressor, source }
        }
        e => e,
    }
}

/// The walk of [`read_payload`], up to the completeness and payload digest
/// checks.
fn walk<R: Read, E>(
    pkg: &Package,
    files: &FileList,
    digest: &mut PayloadDigest<R>,
    seen: &mut [bool],
    summary: &mut PayloadSummary,
    visit: &mut impl FnMut(&mut Entry<'_>) -> Result<(), E>,
) -> Result<(), PayloadError<E>> {
    let decoder = pkg.decoder(digest)?;
    let mut cpio = cpio::Reader::new(decoder);
    while let Some(h) = cpio.next_header().map_err(Error::from)? {
        summary.entries += 1;
        let f = entry_file(files, &h)?;
        admit(f, &h, seen)?;
        let links = files.link_set(f);
        let carries = links.iter().all(|&i| i == f.index || seen[i as usize]);
        let target = f.link_target.as_deref().unwrap_or_default();
        let size = content_size(f, carries, target)?;
        if h.format == cpio::Format::Stripped {
            cpio.set_stripped_size(size).map_err(Error::from)?;
        } else if h.size != size {
            return Err(mismatch(
                f,
                format!("the entry holds {} bytes, expected {size}", h.size),
            )
            .into());
        }
        match f.kind {
            Kind::Regular if carries => {
                if f.digest.is_none() && f.size > 0 {
                    return Err(Error::FileDigestMissing {
                        path: f.path.clone(),
                    }
                    .into());
                }
                let mut slot = None;
                let mut entry = Entry {
                    file: f,
                    links,
                    cpio: &mut cpio,
                    algo: files.algo,
                    // An empty file without a digest has nothing to check.
                    hasher: f.digest.as_ref().map(|_| files.algo.hasher()),
                    remaining: size,
                    mismatch: &mut slot,
                };
                let visited = visit(&mut entry);
                let finished = match visited {
                    Ok(()) => entry.finish(),
                    Err(_) => Ok(()),
                };
                drop(entry);
                if let Some(e) = slot.take() {
                    return Err(e.into());
                }
                visited.map_err(PayloadError::Visit)?;
                finished?;
            }
            Kind::Symlink => check_symlink(&mut cpio, f, size, target)?,
            _ => {}
        }
    }
    summary.archive_bytes = cpio.offset();
    drain_after_trailer(pkg, cpio)?;
    Ok(())
}

/// The header's file that the payload entry `h` is: by its index for a stripped entry, else
/// by its name (byte for byte, with or without the leading `.`).
fn entry_file<'f>(files: &'f FileList, h: &cpio::Header) -> Result<&'f FileInfo, Error> {
    let f = match h.file_index {
        Some(i) => files.files.get(i as usize),
        None => {
            // Byte for byte: the header's names need not be UTF-8.
            let path = h.name.strip_prefix(b".").unwrap_or(&h.name);
            if path.starts_with(b"/") {
                files.find(path)
            } else {
                files.find([b"/", path].concat())
            }
        }
    };
    f.ok_or_else(|| Error::UnknownEntry {
        name: match h.file_index {
            Some(i) => format!("#{i}"),
            None => printable(&h.name, 200),
        },
    })
}

/// Refuses a payload entry for a ghost, a file seen before (marking `f` seen), or one whose
/// mode names another type than the header's.
fn admit(f: &FileInfo, h: &cpio::Header, seen: &mut [bool]) -> Result<(), Error> {
    if f.ghost {
        return Err(Error::GhostInPayload {
            path: f.path.clone(),
        });
    }
    if std::mem::replace(&mut seen[f.index as usize], true) {
        return Err(Error::DuplicateEntry {
            path: f.path.clone(),
        });
    }
    if h.format != cpio::Format::Stripped && Kind::from_mode(h.mode) != Some(f.kind) {
        return Err(mismatch(f, format!("the entry's mode is {:o}", h.mode)));
    }
    Ok(())
}

/// The content size the payload entry for `f` must have: a regular file's size when this
/// entry `carries` its hardlink set's content, a symlink's target (checked against the
/// header's size before any byte is read: it is read into memory), else 0.
fn content_size(f: &FileInfo, carries: bool, target: &[u8]) -> Result<u64, Error> {
    if f.kind == Kind::Symlink && (f.size > MAX_LINK_TARGET || f.size != target.len() as u64) {
        return Err(mismatch(
            f,
            format!(
                "the header gives the symlink {} bytes, but its target has {} (at most {MAX_LINK_TARGET})",
                f.size,
                target.len()
            ),
        ));
    }
    Ok(match f.kind {
        Kind::Regular if carries => f.size,
        Kind::Symlink => f.size,
        _ => 0,
    })
}

/// Reads the symlink entry's `size` bytes (at most [`MAX_LINK_TARGET`], checked by
/// [`content_size`]) and checks them against the header's `target`.
fn check_symlink<D: Read>(
    cpio: &mut cpio::Reader<D>,
    f: &FileInfo,
    size: u64,
    target: &[u8],
) -> Result<(), Error> {
    let mut got = vec![0u8; size as usize];
    cpio.content().read_exact(&mut got).map_err(|e| {
        match e.into_inner().map(|e| e.downcast::<crate::cpio::Error>()) {
            Some(Ok(e)) => Error::Cpio(*e),
            _ => Error::Cpio(crate::cpio::Error::Truncated {
                offset: cpio.offset(),
                what: "content",
            }),
        }
    })?;
    if got != target {
        return Err(mismatch(
            f,
            format!("the entry links to `{}`", printable(&got, 200)),
        ));
    }
    Ok(())
}

/// Reads the decompressed stream to its end after the cpio trailer: it must end cleanly too
/// (a cut in its last frame is a truncated package, not a digest mismatch), and what it holds
/// after the trailer (GNU cpio pads to 512 bytes) is bounded.
fn drain_after_trailer<D: Read>(pkg: &Package, cpio: cpio::Reader<D>) -> Result<(), Error> {
    let offset = cpio.offset();
    let mut rest = cpio.into_inner().take(MAX_AFTER_TRAILER + 1);
    let after = io::copy(&mut rest, &mut io::sink()).map_err(|source| match pkg.compressor() {
        Compressor::None => Error::Io { offset, source },
        compressor => Error::Decompress { compressor, source },
    })?;
    if after > MAX_AFTER_TRAILER {
        return Err(Error::TrailingData {
            limit: MAX_AFTER_TRAILER,
        });
    }
    Ok(())
}

/// The most uncompressed bytes accepted after the cpio trailer.
const MAX_AFTER_TRAILER: u64 = 64 << 10;
