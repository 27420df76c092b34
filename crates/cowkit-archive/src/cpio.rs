//! A streaming reader of cpio archives in the formats RPM payloads use.
//!
//! Three entry formats are read:
//!
//! - [`Format::Newc`], magic `070701`: the "new ASCII" format written by `cpio -H newc` and by
//!   rpm for ordinary packages. A 110-byte header (the magic and 13 fields of 8 hex digits), the
//!   NUL-terminated name, padding to a multiple of 4, the data, padding to a multiple of 4.
//! - [`Format::NewcCrc`], magic `070702`: the same layout written by `cpio -H crc`; for a
//!   regular file its `check` field is the wrapping 32-bit sum of the data bytes, and the reader
//!   verifies it. Like GNU cpio, it ignores `check` for other entry types (GNU cpio writes 0 for
//!   a symlink, whose target is its data).
//! - [`Format::Stripped`], magic `07070X`: RPM's format for packages with files of 4 GiB or more
//!   (header tag `LONGFILESIZES`). The header is only the magic, 8 hex digits naming the 0-based
//!   index into the RPM header's file list, and 2 bytes of padding. Nothing in the archive says
//!   how long the data is: the caller looks it up in the RPM header and passes it to
//!   [`Reader::set_stripped_size`] before the entry's content is read or skipped.
//!
//! Every archive ends with a newc entry named `TRAILER!!!`; [`Reader::next_header`] returns
//! `None` for it. All entries of one archive must share one format (the trailer may be
//! `070701` or `070702` in any archive), as both `cpio` and rpm write them.
//!
//! # Limits and hostile input
//!
//! - Memory is bounded: the only allocation is the entry name, at most [`MAX_NAME_LEN`] bytes
//!   including its NUL. Sizes read from the archive are never used to allocate.
//! - A stream that ends early gives [`Error::Truncated`] with the archive offset where it ended;
//!   a stream that ends cleanly at an entry boundary before the trailer gives
//!   [`Error::TrailerMissing`]. Every error carries the archive byte offset it concerns.
//! - Hex fields accept upper- and lower-case digits and nothing else (no spaces, signs or `0x`).
//! - The content of padding bytes is not checked (`cpio` and rpm write zeros, and neither checks).
//! - The reader never reads past the trailer entry's name padding. Whatever follows (GNU `cpio`
//!   pads its output with zeros to a multiple of 512 bytes; rpm writes nothing) is left unread in
//!   the inner reader; get it back with [`Reader::into_inner`] to check or drain it. The reader
//!   has no opinion about trailing bytes because only the caller knows what should follow.
//! - After an error that leaves the stream position unknown (I/O, truncation, bad header, CRC
//!   mismatch), every later call returns [`Error::Poisoned`]. Caller mistakes
//!   ([`Error::SizeNotSet`], [`Error::SizeAlreadyKnown`]) change nothing and can be corrected.
//! - Hardlinks, symlinks and file types get no special treatment: a symlink's target is its
//!   content, and in RPM hardlink sets only the last member carries content.
//!
//! # Reads
//!
//! The reader does no buffering of its own: it reads exactly the bytes it needs (a header in
//! two reads, the name and its padding in one, content straight into the caller's buffer).
//! Give it a buffered reader (a decompressor or a `BufReader`) when the source is a file.
//!
//! # Example
//!
//! ```
//! use cowkit_archive::cpio::Reader;
//! use std::io::Read;
//!
//! // A one-file newc archive, as `cpio -o -H newc` would write it (without the 512-byte padding).
//! fn entry(out: &mut Vec<u8>, name: &str, mode: u32, data: &[u8]) {
//!     let fields = [1, mode, 0, 0, 1, 0, data.len() as u32, 0, 0, 0, 0, name.len() as u32 + 1, 0];
//!     out.extend_from_slice(b"070701");
//!     for f in fields {
//!         out.extend_from_slice(format!("{f:08x}").as_bytes());
//!     }
//!     out.extend_from_slice(name.as_bytes());
//!     out.push(0);
//!     out.resize(out.len().next_multiple_of(4), 0);
//!     out.extend_from_slice(data);
//!     out.resize(out.len().next_multiple_of(4), 0);
//! }
//! let mut archive = Vec::new();
//! entry(&mut archive, "hello.txt", 0o100644, b"hello\n");
//! entry(&mut archive, "TRAILER!!!", 0, b"");
//!
//! let mut reader = Reader::new(archive.as_slice());
//! while let Some(header) = reader.next_header()? {
//!     let mut content = Vec::new();
//!     reader.content().read_to_end(&mut content)?;
//!     assert_eq!(header.name, b"hello.txt");
//!     assert_eq!(header.mode, 0o100644);
//!     assert_eq!(content, b"hello\n");
//! }
//! assert_eq!(reader.offset(), archive.len() as u64);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::io::{self, Read};

/// The longest entry name accepted, in bytes, including the terminating NUL (Linux `PATH_MAX`).
pub const MAX_NAME_LEN: u32 = 4096;

/// The name of the entry that ends every archive.
const TRAILER: &[u8] = b"TRAILER!!!";

/// Length of a newc/crc header: the 6-byte magic and 13 fields of 8 hex digits.
const NEWC_HEADER_LEN: usize = 110;

/// Length of the part of a header read before the format is known: enough for a whole stripped
/// header (magic, 8 hex digits, 2 bytes of padding) and the start of a newc header.
const PREFIX_LEN: usize = 16;

/// File type bits of `mode`, and the type of a regular file.
const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;

/// Size of the stack buffer used to skip unread content.
const SKIP_BUF_LEN: usize = 16 * 1024;

/// Names of the 13 newc header fields, in order, as used in [`Error::BadHex`].
const FIELD_NAMES: [&str; 13] = [
    "ino",
    "mode",
    "uid",
    "gid",
    "nlink",
    "mtime",
    "filesize",
    "devmajor",
    "devminor",
    "rdevmajor",
    "rdevminor",
    "namesize",
    "check",
];

/// The format of one cpio entry, given by its magic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `070701`: the "new ASCII" (SVR4) format without checksum.
    Newc,
    /// `070702`: the "new ASCII" format whose `check` field is the sum of the data bytes.
    NewcCrc,
    /// `07070X`: RPM's stripped format; the header holds only an index into the RPM header's
    /// file list.
    Stripped,
}

impl Format {
    /// The 6-byte magic that starts an entry of this format.
    pub fn magic(self) -> &'static [u8; 6] {
        match self {
            Format::Newc => b"070701",
            Format::NewcCrc => b"070702",
            Format::Stripped => b"07070X",
        }
    }

    fn from_magic(magic: &[u8]) -> Option<Format> {
        [Format::Newc, Format::NewcCrc, Format::Stripped]
            .into_iter()
            .find(|f| f.magic() == magic)
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Newc => "newc (070701)",
            Format::NewcCrc => "crc (070702)",
            Format::Stripped => "stripped (07070X)",
        })
    }
}

/// The header of one archive entry.
///
/// For [`Format::Stripped`] entries only `format` and `file_index` carry information; every
/// other field is zero or empty, and the metadata must come from the RPM header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The entry's format.
    pub format: Format,
    /// Inode number; entries with equal `(dev_major, dev_minor, ino)` are hardlinks.
    pub ino: u32,
    /// File type and permission bits, as in `st_mode`.
    pub mode: u32,
    /// Owner user id.
    pub uid: u32,
    /// Owner group id.
    pub gid: u32,
    /// Number of links.
    pub nlink: u32,
    /// Modification time, seconds since the Unix epoch.
    pub mtime: u32,
    /// Content length in bytes. For stripped entries it is 0 here; the length the caller passes
    /// to [`Reader::set_stripped_size`] is what counts.
    pub size: u64,
    /// Major number of the device holding the file.
    pub dev_major: u32,
    /// Minor number of the device holding the file.
    pub dev_minor: u32,
    /// Major number of the device a character or block special file stands for.
    pub rdev_major: u32,
    /// Minor number of the device a character or block special file stands for.
    pub rdev_minor: u32,
    /// The `check` field: for a regular file in [`Format::NewcCrc`], the sum of the data bytes
    /// (verified by the time the content has been read or skipped); usually 0 otherwise.
    pub check: u32,
    /// The entry name without its terminating NUL; never empty and never containing NUL for
    /// newc entries, empty for stripped entries. Names are bytes, not necessarily UTF-8, and
    /// are not checked for `..` or absolute paths: that is the extractor's job.
    pub name: Vec<u8>,
    /// For stripped entries, the 0-based index into the RPM header's file list. Any `u32` is
    /// accepted here: the caller must check it against the header's file count (and that no
    /// index appears twice).
    pub file_index: Option<u32>,
}

impl Header {
    /// The header of a stripped entry: only its format and file index carry information.
    fn stripped(file_index: u32) -> Self {
        Header {
            format: Format::Stripped,
            ino: 0,
            mode: 0,
            uid: 0,
            gid: 0,
            nlink: 0,
            mtime: 0,
            size: 0,
            dev_major: 0,
            dev_minor: 0,
            rdev_major: 0,
            rdev_minor: 0,
            check: 0,
            name: Vec::new(),
            file_index: Some(file_index),
        }
    }
}

/// An error reading a cpio archive. Every variant that concerns the archive carries the byte
/// offset (from the start of the archive) where the problem was found.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The inner reader failed.
    #[error("cpio: read error at archive offset {offset}")]
    Io {
        /// Archive offset of the failed read.
        offset: u64,
        /// The error from the inner reader.
        #[source]
        source: io::Error,
    },
    /// The stream ended in the middle of an entry.
    #[error("cpio: archive truncated at offset {offset} (in the {what})")]
    Truncated {
        /// Archive offset where the stream ended.
        offset: u64,
        /// The part being read: `header`, `name`, `name padding`, `content` or `content padding`.
        what: &'static str,
    },
    /// An entry does not start with one of the supported magics.
    #[error("cpio: bad magic {} at offset {offset} (expected 070701, 070702 or 07070X)", String::from_utf8_lossy(.found).escape_debug())]
    BadMagic {
        /// Archive offset of the magic.
        offset: u64,
        /// The six bytes found.
        found: [u8; 6],
    },
    /// A header field is not 8 hex digits.
    #[error("cpio: header field `{field}` at offset {offset} is not 8 hex digits")]
    BadHex {
        /// Archive offset of the field.
        offset: u64,
        /// The field's name (`ino`, `mode`, …, `check`, or `file_index` in a stripped header).
        field: &'static str,
    },
    /// The name size is larger than [`MAX_NAME_LEN`].
    #[error("cpio: name of {len} bytes at offset {offset} exceeds the limit of {MAX_NAME_LEN}")]
    NameTooLong {
        /// Archive offset of the name.
        offset: u64,
        /// The name size from the header, including the NUL.
        len: u32,
    },
    /// The name's last byte is not NUL.
    #[error("cpio: name at offset {offset} is not NUL-terminated")]
    NameNotTerminated {
        /// Archive offset of the name.
        offset: u64,
    },
    /// The name size is 0 or 1 (no name at all, or only the NUL).
    #[error("cpio: empty name at offset {offset}")]
    EmptyName {
        /// Archive offset of the name.
        offset: u64,
    },
    /// The name contains a NUL byte before its end.
    #[error("cpio: name at offset {offset} contains a NUL byte")]
    NameHasNul {
        /// Archive offset of the name.
        offset: u64,
    },
    /// The data of a `070702` regular file does not sum to its `check` field.
    #[error("cpio: checksum mismatch for `{name}` (entry at offset {offset}): header says {expected:#010x}, data sums to {actual:#010x}")]
    CrcMismatch {
        /// Archive offset of the entry's header.
        offset: u64,
        /// The entry name (lossily converted to UTF-8).
        name: String,
        /// The `check` field.
        expected: u32,
        /// The sum of the data bytes.
        actual: u32,
    },
    /// The stream ended cleanly at an entry boundary, but no `TRAILER!!!` entry came first.
    #[error("cpio: archive ends at offset {offset} without a TRAILER!!! entry")]
    TrailerMissing {
        /// Archive offset where the stream ended.
        offset: u64,
    },
    /// The `TRAILER!!!` entry has a non-zero file size (neither cpio nor rpm writes one).
    #[error("cpio: TRAILER!!! entry at offset {offset} has {size} bytes of data")]
    TrailerHasData {
        /// Archive offset of the trailer's header.
        offset: u64,
        /// Its file size.
        size: u32,
    },
    /// An entry's format differs from the first entry's.
    #[error("cpio: {found} entry at offset {offset} in a {expected} archive")]
    MixedFormats {
        /// Archive offset of the entry.
        offset: u64,
        /// The format of the archive's first entry.
        expected: Format,
        /// The format of this entry.
        found: Format,
    },
    /// The content of a stripped entry was read or skipped before
    /// [`Reader::set_stripped_size`] was called. Call it, then retry.
    #[error("cpio: size of stripped entry {file_index} (offset {offset}) not set; call set_stripped_size first")]
    SizeNotSet {
        /// Archive offset of the entry's content.
        offset: u64,
        /// The entry's index into the RPM header's file list.
        file_index: u32,
    },
    /// [`Reader::set_stripped_size`] was called when no stripped entry is waiting for its size
    /// (a newc entry, a size already set, or no current entry).
    #[error(
        "cpio: set_stripped_size at offset {offset}, but no stripped entry is waiting for a size"
    )]
    SizeAlreadyKnown {
        /// The reader's current archive offset.
        offset: u64,
    },
    /// An earlier error left the stream at an unknown position; the reader cannot go on.
    #[error("cpio: reader used after an earlier error at offset {offset}")]
    Poisoned {
        /// Archive offset where the earlier error happened.
        offset: u64,
    },
}

impl Error {
    /// The archive byte offset the error concerns.
    pub fn offset(&self) -> u64 {
        match *self {
            Error::Io { offset, .. }
            | Error::Truncated { offset, .. }
            | Error::BadMagic { offset, .. }
            | Error::BadHex { offset, .. }
            | Error::NameTooLong { offset, .. }
            | Error::NameNotTerminated { offset }
            | Error::EmptyName { offset }
            | Error::NameHasNul { offset }
            | Error::CrcMismatch { offset, .. }
            | Error::TrailerMissing { offset }
            | Error::TrailerHasData { offset, .. }
            | Error::MixedFormats { offset, .. }
            | Error::SizeNotSet { offset, .. }
            | Error::SizeAlreadyKnown { offset }
            | Error::Poisoned { offset } => offset,
        }
    }

    pub(crate) fn io_kind(&self) -> io::ErrorKind {
        match self {
            Error::Io { source, .. } => source.kind(),
            Error::Truncated { .. } => io::ErrorKind::UnexpectedEof,
            Error::SizeNotSet { .. } | Error::SizeAlreadyKnown { .. } => {
                io::ErrorKind::InvalidInput
            }
            Error::Poisoned { .. } => io::ErrorKind::Other,
            _ => io::ErrorKind::InvalidData,
        }
    }
}

impl From<Error> for io::Error {
    /// Wraps the error, keeping it as the inner error (get it back with
    /// [`io::Error::get_ref`] and `downcast_ref::<Error>()`). Truncation maps to
    /// [`io::ErrorKind::UnexpectedEof`], malformed input to [`io::ErrorKind::InvalidData`].
    fn from(e: Error) -> io::Error {
        io::Error::new(e.io_kind(), e)
    }
}

/// Running state of a `070702` checksum.
#[derive(Debug)]
struct Crc {
    entry_offset: u64,
    name: Vec<u8>,
    expected: u32,
    sum: u32,
}

#[derive(Debug)]
enum State {
    /// Between entries: `pad` bytes of padding precede the next header.
    Between { pad: usize },
    /// A stripped entry whose size the caller has not given yet.
    AwaitSize { file_index: u32 },
    /// Inside an entry's content.
    Content {
        remaining: u64,
        crc: Option<Box<Crc>>,
    },
    /// The trailer has been read.
    Done,
    /// An error left the stream position unknown.
    Failed { offset: u64 },
}

/// A streaming cpio reader over any [`Read`]. See the [module docs](self) for the formats,
/// limits and behaviour on hostile input.
pub struct Reader<R: Read> {
    inner: R,
    offset: u64,
    state: State,
    format: Option<Format>,
}

impl<R: Read> fmt::Debug for Reader<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reader")
            .field("offset", &self.offset)
            .field("state", &self.state)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

fn padding(offset: u64) -> usize {
    ((4 - offset % 4) % 4) as usize
}

fn parse_hex(digits: &[u8]) -> Option<u32> {
    debug_assert_eq!(digits.len(), 8);
    digits.iter().try_fold(0u32, |acc, &b| {
        let d = (b as char).to_digit(16)?;
        Some(acc << 4 | d)
    })
}

fn byte_sum(data: &[u8]) -> u32 {
    data.iter().fold(0u32, |s, &b| s.wrapping_add(u32::from(b)))
}

impl<R: Read> Reader<R> {
    /// A reader of the archive that starts at the current position of `inner`. Padding is
    /// computed from offsets relative to that position, so it must be the start of the archive.
    pub fn new(inner: R) -> Self {
        Reader {
            inner,
            offset: 0,
            state: State::Between { pad: 0 },
            format: None,
        }
    }

    /// The number of archive bytes consumed so far. After `next_header` returns `None`, this is
    /// the archive length up to the end of the trailer entry.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Gives back the inner reader, positioned at [`offset`](Self::offset).
    pub fn into_inner(self) -> R {
        self.inner
    }

    /// Reads as much of `buf` as the stream has, retrying on `Interrupted`; returns the number
    /// of bytes read, less than `buf.len()` only at end of stream.
    fn fill(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        let mut n = 0;
        while n < buf.len() {
            match self.inner.read(&mut buf[n..]) {
                Ok(0) => break,
                Ok(k) => {
                    let k = k.min(buf.len() - n);
                    n += k;
                    self.offset += k as u64;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(Error::Io {
                        offset: self.offset,
                        source,
                    })
                }
            }
        }
        Ok(n)
    }

    fn read_exact(&mut self, buf: &mut [u8], what: &'static str) -> Result<(), Error> {
        if self.fill(buf)? < buf.len() {
            return Err(Error::Truncated {
                offset: self.offset,
                what,
            });
        }
        Ok(())
    }

    /// Records a fatal error: later calls return [`Error::Poisoned`].
    fn fail(&mut self, e: Error) -> Error {
        if !matches!(e, Error::SizeNotSet { .. } | Error::SizeAlreadyKnown { .. }) {
            self.state = State::Failed { offset: e.offset() };
        }
        e
    }

    /// Returns the next entry's header, first skipping whatever content of the previous entry
    /// was not read (and verifying its checksum, for a `070702` regular file). Returns `None` once the
    /// `TRAILER!!!` entry has been read, and on every call after that.
    ///
    /// If the current entry is stripped and its size has not been set, returns
    /// [`Error::SizeNotSet`] and changes nothing.
    pub fn next_header(&mut self) -> Result<Option<Header>, Error> {
        self.next_header_inner().map_err(|e| self.fail(e))
    }

    fn next_header_inner(&mut self) -> Result<Option<Header>, Error> {
        let pad = match self.state {
            State::Failed { offset } => return Err(Error::Poisoned { offset }),
            State::Done => return Ok(None),
            State::AwaitSize { file_index } => {
                return Err(Error::SizeNotSet {
                    offset: self.offset,
                    file_index,
                })
            }
            State::Content { .. } => {
                self.skip_content()?;
                padding(self.offset)
            }
            State::Between { pad } => pad,
        };

        let (header_offset, mut head) = self.read_prefix(pad)?;
        let magic: [u8; 6] = head[..6].try_into().expect("6 bytes");
        let Some(format) = Format::from_magic(&magic) else {
            return Err(Error::BadMagic {
                offset: header_offset,
                found: magic,
            });
        };

        if format == Format::Stripped {
            self.check_format(format, header_offset)?;
            let file_index = parse_hex(&head[6..14]).ok_or(Error::BadHex {
                offset: header_offset + 6,
                field: "file_index",
            })?;
            // The 2 bytes after the index are padding to a multiple of 4 (the header is 16
            // bytes and starts aligned), already read as part of the prefix.
            self.state = State::AwaitSize { file_index };
            return Ok(Some(Header::stripped(file_index)));
        }

        let [ino, mode, uid, gid, nlink, mtime, filesize, dev_major, dev_minor, rdev_major, rdev_minor, namesize, check] =
            self.read_fields(&mut head, header_offset)?;
        let name = self.read_name(namesize)?;

        let crc = (format == Format::NewcCrc && mode & S_IFMT == S_IFREG).then(|| {
            Box::new(Crc {
                entry_offset: header_offset,
                name: name.clone(),
                expected: check,
                sum: 0,
            })
        });

        if name == TRAILER {
            if filesize != 0 {
                return Err(Error::TrailerHasData {
                    offset: header_offset,
                    size: filesize,
                });
            }
            self.state = State::Done;
            return Ok(None);
        }
        self.check_format(format, header_offset)?;

        self.state = State::Content {
            remaining: filesize.into(),
            crc,
        };
        self.finish_if_empty()?;
        Ok(Some(Header {
            format,
            ino,
            mode,
            uid,
            gid,
            nlink,
            mtime,
            size: filesize.into(),
            dev_major,
            dev_minor,
            rdev_major,
            rdev_minor,
            check,
            name,
            file_index: None,
        }))
    }

    /// Reads the `pad` bytes of padding of the previous entry and the first 16 bytes of the
    /// next header, in one read; returns the header's offset and a header buffer holding
    /// those 16 bytes.
    fn read_prefix(&mut self, pad: usize) -> Result<(u64, [u8; NEWC_HEADER_LEN]), Error> {
        let mut prefix = [0u8; 3 + PREFIX_LEN];
        let prefix = &mut prefix[..pad + PREFIX_LEN];
        let start = self.offset;
        let n = self.fill(prefix)?;
        if n < prefix.len() {
            return Err(if n == pad {
                Error::TrailerMissing {
                    offset: self.offset,
                }
            } else if n < pad {
                Error::Truncated {
                    offset: self.offset,
                    what: "content padding",
                }
            } else {
                Error::Truncated {
                    offset: self.offset,
                    what: "header",
                }
            });
        }
        let mut head = [0u8; NEWC_HEADER_LEN];
        head[..PREFIX_LEN].copy_from_slice(&prefix[pad..]);
        Ok((start + pad as u64, head))
    }

    /// Reads the rest of a `newc`/`crc` header into `head` and parses its 13 hex fields.
    fn read_fields(
        &mut self,
        head: &mut [u8; NEWC_HEADER_LEN],
        header_offset: u64,
    ) -> Result<[u32; 13], Error> {
        self.read_exact(&mut head[PREFIX_LEN..], "header")?;
        let mut fields = [0u32; 13];
        for (i, field) in fields.iter_mut().enumerate() {
            let at = 6 + 8 * i;
            *field = parse_hex(&head[at..at + 8]).ok_or(Error::BadHex {
                offset: header_offset + at as u64,
                field: FIELD_NAMES[i],
            })?;
        }
        Ok(fields)
    }

    /// Reads an entry's name of `namesize` bytes (its NUL included) and its padding, bounded
    /// by [`MAX_NAME_LEN`]; returns the name without its NUL.
    fn read_name(&mut self, namesize: u32) -> Result<Vec<u8>, Error> {
        let name_offset = self.offset;
        if namesize > MAX_NAME_LEN {
            return Err(Error::NameTooLong {
                offset: name_offset,
                len: namesize,
            });
        }
        if namesize <= 1 {
            return Err(Error::EmptyName {
                offset: name_offset,
            });
        }
        // The name and its padding, in one read; bounded by MAX_NAME_LEN + 3.
        let name_len = namesize as usize;
        let mut name = vec![0u8; name_len + padding(name_offset + namesize as u64)];
        let n = self.fill(&mut name)?;
        if n < name.len() {
            return Err(Error::Truncated {
                offset: self.offset,
                what: if n < name_len { "name" } else { "name padding" },
            });
        }
        name.truncate(name_len);
        if name.pop() != Some(0) {
            return Err(Error::NameNotTerminated {
                offset: name_offset,
            });
        }
        if name.contains(&0) {
            return Err(Error::NameHasNul {
                offset: name_offset,
            });
        }
        Ok(name)
    }

    fn check_format(&mut self, found: Format, offset: u64) -> Result<(), Error> {
        match self.format {
            None => {
                self.format = Some(found);
                Ok(())
            }
            Some(expected) if expected == found => Ok(()),
            Some(expected) => Err(Error::MixedFormats {
                offset,
                expected,
                found,
            }),
        }
    }

    /// Gives the content length of the current stripped entry, which the archive does not
    /// record: the RPM header's `LONGFILESIZES` value for the entry's file index, or 0 for a
    /// hardlink member that is not the last of its set (rpm writes a set's members
    /// consecutively in header order, and only the one with the highest index carries data).
    ///
    /// Returns [`Error::SizeAlreadyKnown`] (and changes nothing) unless the current entry is a
    /// stripped entry whose size has not been set yet.
    pub fn set_stripped_size(&mut self, size: u64) -> Result<(), Error> {
        match self.state {
            State::AwaitSize { .. } => {
                self.state = State::Content {
                    remaining: size,
                    crc: None,
                };
                self.finish_if_empty().map_err(|e| self.fail(e))
            }
            State::Failed { offset } => Err(Error::Poisoned { offset }),
            _ => Err(Error::SizeAlreadyKnown {
                offset: self.offset,
            }),
        }
    }

    /// Moves to `Between` if the current content is exhausted, verifying the checksum.
    fn finish_if_empty(&mut self) -> Result<(), Error> {
        if let State::Content { remaining: 0, crc } = &self.state {
            if let Some(crc) = crc {
                verify(crc)?;
            }
            self.state = State::Between {
                pad: padding(self.offset),
            };
        }
        Ok(())
    }

    /// Reads the current entry's content into `buf`, never past the end of the entry. Returns
    /// 0 at the end of the entry (and when `buf` is empty, or before the first header or after
    /// the trailer). For `070702` regular files the checksum is verified when the last byte has been
    /// read, and a mismatch is returned instead of that final count.
    ///
    /// For a stripped entry whose size has not been set, returns [`Error::SizeNotSet`].
    pub fn read_content(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        self.read_content_inner(buf).map_err(|e| self.fail(e))
    }

    fn read_content_inner(&mut self, buf: &mut [u8]) -> Result<usize, Error> {
        let remaining = match self.state {
            State::Failed { offset } => return Err(Error::Poisoned { offset }),
            State::AwaitSize { file_index } => {
                return Err(Error::SizeNotSet {
                    offset: self.offset,
                    file_index,
                })
            }
            State::Content { remaining, .. } => remaining,
            State::Between { .. } | State::Done => return Ok(0),
        };
        if buf.is_empty() {
            return Ok(0);
        }
        let want = usize::try_from(remaining).map_or(buf.len(), |r| r.min(buf.len()));
        let buf = &mut buf[..want];
        let n = loop {
            match self.inner.read(buf) {
                Ok(0) => {
                    return Err(Error::Truncated {
                        offset: self.offset,
                        what: "content",
                    })
                }
                Ok(n) => break n.min(want),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(source) => {
                    return Err(Error::Io {
                        offset: self.offset,
                        source,
                    })
                }
            }
        };
        self.offset += n as u64;
        if let State::Content { remaining, crc } = &mut self.state {
            *remaining -= n as u64;
            if let Some(crc) = crc {
                crc.sum = crc.sum.wrapping_add(byte_sum(&buf[..n]));
            }
        }
        self.finish_if_empty()?;
        Ok(n)
    }

    /// Reads and discards the rest of the current entry's content.
    fn skip_content(&mut self) -> Result<(), Error> {
        let mut scratch = [0u8; SKIP_BUF_LEN];
        while matches!(self.state, State::Content { .. }) {
            self.read_content_inner(&mut scratch)?;
        }
        Ok(())
    }

    /// A [`Read`] adapter over the current entry's content. Errors are returned as
    /// [`io::Error`]s wrapping the typed [`Error`] (see its `From` impl).
    pub fn content(&mut self) -> Content<'_, R> {
        Content { reader: self }
    }
}

fn verify(crc: &Crc) -> Result<(), Error> {
    if crc.sum == crc.expected {
        return Ok(());
    }
    Err(Error::CrcMismatch {
        offset: crc.entry_offset,
        name: crate::name::printable(&crc.name, 200),
        expected: crc.expected,
        actual: crc.sum,
    })
}

/// A [`Read`] over the current entry's content, returned by [`Reader::content`].
#[derive(Debug)]
pub struct Content<'a, R: Read> {
    reader: &'a mut Reader<R>,
}

impl<R: Read> Read for Content<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Ok(self.reader.read_content(buf)?)
    }
}
