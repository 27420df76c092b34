//! RPM → extents file, verifying everything on the way.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::sync::mpsc::{self, Receiver, SyncSender};

use cowkit_archive::files::FileList;
use cowkit_archive::payload::{read_payload, Entry, PayloadError, PendingDigest};
use cowkit_archive::rpm::Package;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::format::{self, Extent, FileRecord, Footer, Kind, NO_EXTENT};
use crate::Error;

/// Default alignment of cloned extents.
pub const DEFAULT_BLOCK_SIZE: u32 = 4096;
/// Default size below which files are packed and written rather than
/// cloned; see `bench/results/` for the measurement behind it.
pub const DEFAULT_PACK_BELOW: u64 = 64 * 1024;
const CHUNK: usize = 256 * 1024;
/// The largest `block_size` accepted (and read back from a footer): 1 MiB,
/// above every filesystem block and page size Linux uses.
pub const MAX_BLOCK_SIZE: u32 = 1 << 20;
/// The largest extents file the transcoder writes: 1 TiB. The header says
/// how large every file is, so the output's size is known before the
/// payload is read; a package that declares more is refused up front
/// rather than filling the disk. The confined worker's `RLIMIT_FSIZE` is
/// set just above this.
pub const MAX_OUTPUT_BYTES: u64 = 1 << 40;

/// Transcoder settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Alignment of cloned extents (a power of two, at least 512).
    pub block_size: u32,
    /// Files smaller than this are packed and written, not cloned.
    pub pack_below: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            block_size: DEFAULT_BLOCK_SIZE,
            pack_below: DEFAULT_PACK_BELOW,
        }
    }
}

/// Told about progress while transcoding.
pub trait Progress {
    /// A file's content has been verified and stored (or found a
    /// duplicate); `bytes` is its size.
    fn on_file(&self, _path: &cowkit_archive::name::Name, _bytes: u64) {}
}

/// A [`Progress`] that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;
impl Progress for NoProgress {}

/// What a transcode did.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    /// Regular files with content in the package (hardlink members each).
    pub files: u64,
    /// Extents stored.
    pub extents: u64,
    /// Extents stored aligned, to be cloned.
    pub clone_extents: u64,
    /// Extents packed, to be written.
    pub write_extents: u64,
    /// Files whose content was already stored (same digest).
    pub deduplicated_files: u64,
    /// Extra members of hardlink sets.
    pub hardlinked_files: u64,
    /// Content bytes stored.
    pub stored_bytes: u64,
    /// Content bytes not stored because they were duplicates.
    pub deduplicated_bytes: u64,
    /// Zero blocks of aligned extents left as holes.
    pub hole_bytes: u64,
    /// Zero bytes written to align extents.
    pub padding_bytes: u64,
    /// Size of the extents file.
    pub output_bytes: u64,
    /// Size of the input package.
    pub input_bytes: u64,
    /// Uncompressed payload (cpio) bytes.
    pub archive_bytes: u64,
    /// SHA-256 of the input package.
    pub input_sha256: String,
    /// The payload's verified SHA-256 (`PAYLOADDIGEST`).
    pub payload_sha256: String,
}

/// Hashes and counts everything read through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    bytes: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
}

/// A package whose headers have been read and verified; no payload byte
/// has been read yet. Check signatures on [`Begun::package`] before
/// calling [`Begun::write`].
pub struct Begun<R> {
    input: Hashing<R>,
    pkg: Package,
    files: FileList,
}

impl<R> std::fmt::Debug for Begun<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Begun")
            .field("pkg", &self.pkg)
            .finish_non_exhaustive()
    }
}

/// Read and verify the headers of the package in `input`.
pub fn begin<R: Read>(input: R) -> Result<Begun<R>, Error> {
    let mut input = Hashing {
        inner: input,
        hasher: Sha256::new(),
        bytes: 0,
    };
    let pkg = Package::read(&mut input)?;
    let files = pkg.files()?;
    Ok(Begun { input, pkg, files })
}

/// The output: sequential, buffered, with holes where it can seek.
struct Output {
    file: File,
    pos: u64,
    buf: Vec<u8>,
    seekable: bool,
    /// The file ends in a hole that has not been materialised yet.
    pending_hole: bool,
}

fn werr(offset: u64) -> impl FnOnce(io::Error) -> Error {
    move |source| Error::Write { offset, source }
}

/// Checks that the extents file can be written to `out` from its current
/// position with nothing stale left in it, and returns whether zero blocks
/// may be left as holes (seeking over them).
///
/// - A regular file must hold nothing past its position: an empty file,
///   or one positioned at its end (the output then follows what is there,
///   as on a pipe). A file with bytes past the position (stdout opened
///   with the shell's `1<>`, which does not empty it) is refused: the
///   extents file would overwrite part of it, holes would keep its old
///   bytes, and its old tail would stay after the new footer.
/// - Append mode (`>>`) is refused: every write lands at the end whatever
///   the position says, so holes would be lost.
/// - Holes are made only in a regular file written from its first byte;
///   anything else (a pipe, a device, a file positioned after other bytes)
///   gets every byte written in order.
///
/// # Errors
///
/// [`Error::OutputAppends`], [`Error::OutputNotEmpty`], or
/// [`Error::Write`] when the file cannot be examined.
pub fn check_output(out: &File) -> Result<bool, Error> {
    use rustix::fs::{fcntl_getfl, fstat, FileType, OFlags};
    let flags = fcntl_getfl(out).map_err(|e| werr(0)(e.into()))?;
    if flags.contains(OFlags::APPEND) {
        return Err(Error::OutputAppends);
    }
    let st = fstat(out).map_err(|e| werr(0)(e.into()))?;
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        return Ok(false);
    }
    let offset =
        rustix::fs::seek(out, rustix::fs::SeekFrom::Current(0)).map_err(|e| werr(0)(e.into()))?;
    let size = st.st_size as u64;
    if size > offset {
        return Err(Error::OutputNotEmpty { offset, size });
    }
    Ok(offset == 0)
}

impl Output {
    /// `seekable`: zero blocks may be skipped ([`check_output`]).
    fn new(file: File, seekable: bool) -> Output {
        Output {
            file,
            pos: 0,
            buf: Vec::with_capacity(CHUNK),
            seekable,
            pending_hole: false,
        }
    }

    fn flush(&mut self) -> Result<(), Error> {
        if !self.buf.is_empty() {
            let at = self.pos - self.buf.len() as u64;
            self.file.write_all(&self.buf).map_err(werr(at))?;
            self.buf.clear();
        }
        Ok(())
    }

    fn write(&mut self, data: &[u8]) -> Result<(), Error> {
        self.pending_hole = false;
        if self.buf.len() + data.len() > CHUNK {
            self.flush()?;
        }
        if data.len() >= CHUNK {
            self.file.write_all(data).map_err(werr(self.pos))?;
        } else {
            self.buf.extend_from_slice(data);
        }
        self.pos += data.len() as u64;
        Ok(())
    }

    fn zeros(&mut self, n: u64) -> Result<(), Error> {
        const Z: [u8; 4096] = [0; 4096];
        let mut left = n;
        while left > 0 {
            let k = left.min(Z.len() as u64) as usize;
            self.write(&Z[..k])?;
            left -= k as u64;
        }
        Ok(())
    }

    /// Skip `n` zero bytes: a hole when seekable.
    fn hole(&mut self, n: u64) -> Result<(), Error> {
        if !self.seekable {
            return self.zeros(n);
        }
        self.flush()?;
        self.file
            .seek(SeekFrom::Current(n as i64))
            .map_err(werr(self.pos))?;
        self.pos += n;
        self.pending_hole = true;
        Ok(())
    }

    fn finish(mut self) -> Result<u64, Error> {
        self.flush()?;
        if self.seekable && self.pending_hole {
            self.file.set_len(self.pos).map_err(werr(self.pos))?;
        }
        self.file.flush().map_err(werr(self.pos))?;
        Ok(self.pos)
    }
}

fn is_zero(b: &[u8]) -> bool {
    let mut words = b.chunks_exact(16);
    words
        .by_ref()
        .all(|c| u128::from_ne_bytes(c.try_into().expect("16 bytes")) == 0)
        && words.remainder().iter().all(|&x| x == 0)
}

/// Fill `buf` from `r` as far as it goes; returns the count.
fn fill(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl<R: Read> Begun<R> {
    /// The verified headers.
    pub fn package(&self) -> &Package {
        &self.pkg
    }

    /// The header's file list.
    pub fn files(&self) -> &FileList {
        &self.files
    }

    /// Stream the payload into `out` as an extents file, verifying every
    /// file and the payload. On error, `out` holds garbage: the caller
    /// writes to a temporary file and discards it.
    ///
    /// Two threads: this one decompresses and lays out the file; a writer
    /// thread hashes each file's content against its header digest and
    /// writes it (zero blocks of aligned extents become holes). The result
    /// is `Ok` only when both finished without error.
    pub fn write(
        self,
        out: File,
        opts: &Options,
        progress: &dyn Progress,
    ) -> Result<Summary, Error> {
        if !opts.block_size.is_power_of_two() || !(512..=MAX_BLOCK_SIZE).contains(&opts.block_size)
        {
            return Err(Error::BadOption(format!(
                "block size {} is not a power of two from 512 to {MAX_BLOCK_SIZE}",
                opts.block_size
            )));
        }
        let holes = check_output(&out)?;
        let bs = u64::from(opts.block_size);
        let declared = self.declared_output(bs);
        if declared > MAX_OUTPUT_BYTES {
            return Err(Error::TooLarge {
                declared,
                limit: MAX_OUTPUT_BYTES,
            });
        }
        let (tx, rx) = mpsc::sync_channel::<Msg>(8);
        let (pool_tx, pool_rx) = mpsc::sync_channel::<Vec<u8>>(12);
        std::thread::scope(|scope| {
            let writer = scope.spawn(move || write_out(Output::new(out, holes), bs, rx, pool_tx));
            let layout = self.lay_out(opts, progress, &tx, &pool_rx);
            drop(tx);
            let written = writer.join().expect("the writer thread panicked");
            // The writer's error (a digest mismatch, a full disk) is the
            // cause when both failed: the layout only saw the channel close.
            let (out_bytes, holes) = written?;
            let mut s = layout?;
            s.hole_bytes = holes;
            s.output_bytes = out_bytes;
            Ok(s)
        })
    }

    /// An upper bound of the output's size from the header: the prefix,
    /// every content aligned, the table and the footer.
    fn declared_output(&self, bs: u64) -> u64 {
        let files = &self.files.files;
        let content = files
            .iter()
            .filter(|f| f.kind == cowkit_archive::files::Kind::Regular && !f.ghost)
            .fold(0u64, |sum, f| sum.saturating_add(f.size.saturating_add(bs)));
        let table = (files.len() as u64) * (format::EXTENT_LEN as u64 + 8);
        (self.pkg.prefix().len() as u64)
            .saturating_add(content)
            .saturating_add(table)
            .saturating_add(format::FOOTER_LEN as u64 + bs)
    }

    /// The decoding side of [`Begun::write`]: verifies the payload and
    /// sends the file's bytes, in order, to the writer.
    fn lay_out(
        self,
        opts: &Options,
        progress: &dyn Progress,
        tx: &SyncSender<Msg>,
        pool: &Receiver<Vec<u8>>,
    ) -> Result<Summary, Error> {
        let Begun {
            mut input,
            pkg,
            files,
        } = self;
        let mut l = Layout {
            opts,
            progress,
            tx,
            pool,
            pos: 0,
            extents: Vec::new(),
            records: Vec::new(),
            by_digest: HashMap::new(),
            s: Summary::default(),
        };
        l.send(Msg::Bytes(pkg.prefix().to_vec()))?;
        l.pos += pkg.prefix().len() as u64;

        let payload = read_payload(&pkg, &files, &mut input, |entry| l.visit(entry)).map_err(
            |e| match e {
                PayloadError::Archive(e) => Error::Package(e),
                PayloadError::Visit(e) => e,
            },
        )?;
        // Drain anything after the payload's end (there should be nothing).
        io::copy(&mut input, &mut io::sink()).map_err(|source| Error::Read {
            path: "<input>".into(),
            source,
        })?;

        // The data area ends on a block boundary, so a rounded-up clone of
        // the last extent stays inside the file.
        l.pad_to_block()?;
        let table = l.table();
        let header_sha256: [u8; 32] = Sha256::digest(&pkg.prefix()[pkg.header_offset()..]).into();
        let footer = Footer {
            version: format::VERSION,
            block_size: opts.block_size,
            digest_algo: files.algo.rpm_number(),
            prefix_len: pkg.prefix().len() as u64,
            table_offset: l.pos,
            extent_count: l.extents.len() as u32,
            file_count: l.records.len() as u32,
            input_size: input.bytes,
            input_sha256: input.hasher.finalize().into(),
            header_sha256,
        };
        let footer_bytes = footer.encode(&table).to_vec();
        l.send(Msg::Bytes(table))?;
        l.send(Msg::Bytes(footer_bytes))?;
        let mut s = l.s;
        s.extents = l.extents.len() as u64;
        s.input_bytes = footer.input_size;
        s.input_sha256 = hex::encode(footer.input_sha256);
        s.payload_sha256 = payload.payload_digest;
        s.archive_bytes = payload.archive_bytes;
        Ok(s)
    }
}

/// The state of [`Begun::lay_out`]: where the output is, the extents stored so far (by their
/// digest too, to store each content once) and every file's record.
struct Layout<'a> {
    opts: &'a Options,
    progress: &'a dyn Progress,
    tx: &'a SyncSender<Msg>,
    pool: &'a Receiver<Vec<u8>>,
    /// The output offset the next byte sent goes to.
    pos: u64,
    extents: Vec<Extent>,
    records: Vec<FileRecord>,
    by_digest: HashMap<Vec<u8>, u32>,
    s: Summary,
}

impl Layout<'_> {
    /// Sends `m` to the writer.
    fn send(&self, m: Msg) -> Result<(), Error> {
        self.tx.send(m).map_err(|_| Error::WriterStopped)
    }

    /// Zeros up to the next block boundary.
    fn pad_to_block(&mut self) -> Result<(), Error> {
        let pad = self.pos.next_multiple_of(u64::from(self.opts.block_size)) - self.pos;
        self.s.padding_bytes += pad;
        self.send(Msg::Zeros(pad))?;
        self.pos += pad;
        Ok(())
    }

    /// One payload entry: its records, pointing at an extent stored before with the same
    /// digest or at a new one holding its content.
    fn visit(&mut self, entry: &mut Entry<'_>) -> Result<(), Error> {
        let size = entry.size();
        let members: Vec<u32> = if entry.links.is_empty() {
            vec![entry.file.index]
        } else {
            entry.links.to_vec()
        };
        self.s.files += members.len() as u64;
        self.s.hardlinked_files += members.len() as u64 - 1;
        let record = |extent| {
            members
                .iter()
                .map(move |&file_index| FileRecord { file_index, extent })
        };
        if size == 0 {
            self.records.extend(record(NO_EXTENT));
            return Ok(());
        }
        let digest = entry.file.digest.clone().unwrap_or_default();
        if let Some(&i) = self.by_digest.get(&digest) {
            // Stored already: the header digest is trusted, and this
            // copy is still hashed and checked (by `finish`).
            entry.finish()?;
            self.s.deduplicated_files += 1;
            self.s.deduplicated_bytes += size;
            self.records.extend(record(i));
            self.progress.on_file(&entry.file.path, size);
            return Ok(());
        }
        let kind = if size >= self.opts.pack_below {
            Kind::Clone
        } else {
            Kind::Write
        };
        if kind == Kind::Clone {
            self.pad_to_block()?;
        }
        let offset = self.pos;
        self.send_content(entry, size, kind)?;
        let i = self.extents.len() as u32;
        self.extents.push(Extent {
            offset,
            length: size,
            kind,
            digest: digest.clone(),
        });
        self.by_digest.insert(digest, i);
        match kind {
            Kind::Clone => self.s.clone_extents += 1,
            Kind::Write => self.s.write_extents += 1,
        }
        self.s.stored_bytes += size;
        self.records.extend(record(i));
        self.progress.on_file(&entry.file.path, size);
        Ok(())
    }

    /// Sends the entry's `size` bytes of content as one file of `kind`, its digest checked.
    fn send_content(&mut self, entry: &mut Entry<'_>, size: u64, kind: Kind) -> Result<(), Error> {
        self.send(Msg::BeginFile(entry.defer_digest().map(Box::new)))?;
        let mut left = size;
        while left > 0 {
            let want = left.min(CHUNK as u64) as usize;
            let mut buf = self
                .pool
                .try_recv()
                .unwrap_or_else(|_| Vec::with_capacity(CHUNK));
            buf.resize(want, 0);
            let n = fill(entry, &mut buf).map_err(|source| Error::Read {
                path: entry.file.path.clone(),
                source,
            })?;
            if n < want {
                // The payload layer reports the typed cause.
                entry.finish()?;
                return Err(Error::Corrupt(format!(
                    "`{}` ended early in the payload",
                    entry.file.path
                )));
            }
            self.send(match kind {
                Kind::Clone => Msg::Aligned(buf),
                Kind::Write => Msg::Bytes(buf),
            })?;
            left -= n as u64;
        }
        self.send(Msg::EndFile)?;
        self.pos += size;
        entry.finish()?;
        Ok(())
    }

    /// The table: the extents, then the file records in file order.
    fn table(&mut self) -> Vec<u8> {
        self.records.sort_by_key(|r| r.file_index);
        let mut table = Vec::with_capacity(
            self.extents.len() * format::EXTENT_LEN + self.records.len() * format::FILE_LEN,
        );
        for e in &self.extents {
            format::encode_extent(e, &mut table);
        }
        for r in &self.records {
            format::encode_file(r, &mut table);
        }
        table
    }
}

/// What the decoding thread sends the writer, in file order.
enum Msg {
    /// Bytes to write as they are.
    Bytes(Vec<u8>),
    /// Content of an aligned extent: whole zero blocks become holes.
    Aligned(Vec<u8>),
    /// Zero padding.
    Zeros(u64),
    /// The next `Bytes`/`Aligned` are one file's content, to hash with this.
    BeginFile(Option<Box<PendingDigest>>),
    /// The file's content is complete: check its digest.
    EndFile,
}

/// The writer thread: returns the output's length and the bytes left as
/// holes.
fn write_out(
    mut out: Output,
    bs: u64,
    rx: Receiver<Msg>,
    pool: SyncSender<Vec<u8>>,
) -> Result<(u64, u64), Error> {
    let mut digest: Option<Box<PendingDigest>> = None;
    let mut holes = 0;
    for msg in rx {
        match msg {
            Msg::Bytes(b) | Msg::Aligned(b) if b.is_empty() => drop(b),
            Msg::Bytes(mut b) => {
                if let Some(d) = &mut digest {
                    d.update(&b);
                }
                out.write(&b)?;
                b.clear();
                let _ = pool.try_send(b);
            }
            Msg::Aligned(mut b) => {
                if let Some(d) = &mut digest {
                    d.update(&b);
                }
                // Whole zero blocks become holes; a partial last block is
                // written.
                for block in b.chunks(bs as usize) {
                    if block.len() == bs as usize && is_zero(block) {
                        holes += bs;
                        out.hole(bs)?;
                    } else {
                        out.write(block)?;
                    }
                }
                b.clear();
                let _ = pool.try_send(b);
            }
            Msg::Zeros(n) => out.zeros(n)?,
            Msg::BeginFile(d) => digest = d,
            Msg::EndFile => {
                if let Some(d) = digest.take() {
                    d.finish()?;
                }
            }
        }
    }
    Ok((out.finish()?, holes))
}
