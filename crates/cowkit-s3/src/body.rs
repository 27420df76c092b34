//! The body of a GetObject: a byte range of the object's file, read with
//! `pread` on tokio's blocking pool in large chunks, a few chunks ahead of
//! the socket, into buffers that are reused once hyper has written them.
//!
//! Each chunk is its own blocking task (no thread waits on a slow client),
//! and is handed to hyper as one [`Bytes`] without another copy: the bytes
//! move from the page cache into the buffer and from the buffer into the
//! socket. A file that ends before the range does (truncated by another
//! tool during the read) ends the stream with an error, which makes hyper
//! abort the response: the client sees a short body, never padding.

use std::collections::VecDeque;
use std::fs::File;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::Stream;
use tokio::task::JoinHandle;

use crate::error::{io, Error};

/// Bytes per read (and per body frame).
pub const CHUNK: usize = 2 << 20;
/// Reads in flight ahead of the frame being written.
const AHEAD: usize = 2;
/// Written chunks kept for reuse.
const KEEP: usize = AHEAD + 2;

/// Bytes `start..end` of `file` as a stream of chunks; `path` names the
/// object in errors.
pub fn file_range(file: File, path: PathBuf, start: u64, end: u64) -> FileRange {
    FileRange {
        file: Arc::new(file),
        path: Arc::new(path),
        next: start,
        end,
        reads: VecDeque::new(),
        written: VecDeque::new(),
        failed: false,
    }
}

/// The stream returned by [`file_range`].
#[derive(Debug)]
pub struct FileRange {
    file: Arc<File>,
    path: Arc<PathBuf>,
    /// The offset of the next read to start.
    next: u64,
    end: u64,
    /// Reads started, in offset order.
    reads: VecDeque<JoinHandle<Result<BytesMut, Error>>>,
    /// Chunks handed out, oldest first: reused once hyper has dropped them.
    written: VecDeque<Bytes>,
    failed: bool,
}

impl FileRange {
    /// A buffer of `len` bytes: a written chunk nobody else holds any
    /// more, or a new one.
    fn buffer(&mut self, len: usize) -> BytesMut {
        if self.written.front().is_some_and(Bytes::is_unique) {
            if let Some(Ok(mut b)) = self.written.pop_front().map(Bytes::try_into_mut) {
                b.resize(len, 0);
                return b;
            }
        }
        BytesMut::zeroed(len)
    }

    /// Start reads until `AHEAD` are in flight or the range is covered.
    fn start_reads(&mut self) {
        while self.reads.len() < AHEAD && self.next < self.end {
            let len = (self.end - self.next).min(CHUNK as u64) as usize;
            let buf = self.buffer(len);
            let (file, path, off, end) =
                (self.file.clone(), self.path.clone(), self.next, self.end);
            self.reads.push_back(tokio::task::spawn_blocking(move || {
                read_at(&file, &path, buf, off, end)
            }));
            self.next += len as u64;
        }
    }

    fn fail(&mut self, e: Error) -> Poll<Option<Result<Bytes, Error>>> {
        self.failed = true;
        for r in self.reads.drain(..) {
            r.abort();
        }
        Poll::Ready(Some(Err(e)))
    }
}

/// Bytes `[start, end)` of `file`, read whole (for small bodies); the
/// file ending first is an error.
pub fn read_range(file: &File, path: &PathBuf, start: u64, end: u64) -> Result<Bytes, Error> {
    let len = usize::try_from(end.saturating_sub(start)).unwrap_or(usize::MAX);
    read_at(file, path, BytesMut::zeroed(len), start, end).map(BytesMut::freeze)
}

/// Fill `buf` from `file` at `off`; the file ending first is an error
/// (`end`: where the whole range ends, for the message).
fn read_at(
    file: &File,
    path: &PathBuf,
    mut buf: BytesMut,
    off: u64,
    end: u64,
) -> Result<BytesMut, Error> {
    crate::fault::stale("read-object", "read", || path.clone())?;
    let mut done = 0;
    while done < buf.len() {
        let at = off + done as u64;
        match rustix::io::pread(file, &mut buf[done..], at) {
            Ok(0) => {
                return Err(cowkit_fs::Error::UnexpectedEof {
                    path: path.clone(),
                    at,
                    wanted: end,
                }
                .into())
            }
            Ok(n) => done += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(io("read", path, e)),
        }
    }
    Ok(buf)
}

impl Stream for FileRange {
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.failed {
            return Poll::Ready(None);
        }
        this.start_reads();
        let Some(front) = this.reads.front_mut() else {
            return Poll::Ready(None);
        };
        let done = std::task::ready!(Pin::new(front).poll(cx));
        this.reads.pop_front();
        let buf = match done {
            Ok(Ok(buf)) => buf,
            Ok(Err(e)) => return this.fail(e),
            Err(e) => {
                return this.fail(io(
                    "read",
                    &*this.path,
                    std::io::Error::other(format!("read task failed: {e}")),
                ))
            }
        };
        let chunk = buf.freeze();
        this.written.push_back(chunk.clone());
        if this.written.len() > KEEP {
            this.written.pop_front();
        }
        // The next read starts before this chunk is written.
        this.start_reads();
        Poll::Ready(Some(Ok(chunk)))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.end - self.next).div_ceil(CHUNK as u64) as usize + self.reads.len();
        (n, Some(n))
    }
}

impl Drop for FileRange {
    fn drop(&mut self) {
        for r in self.reads.drain(..) {
            r.abort();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use std::io::Write;

    fn temp_file(name: &str, data: &[u8]) -> (PathBuf, File) {
        let p = std::env::temp_dir().join(format!("cowkit-s3-body-{}-{name}", std::process::id()));
        let mut f = File::create(&p).unwrap();
        f.write_all(data).unwrap();
        (p.clone(), File::open(&p).unwrap())
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i % 251) as u8 ^ (i >> 12) as u8).collect()
    }

    async fn collect(mut s: FileRange) -> (Vec<u8>, Option<Error>) {
        let mut out = Vec::new();
        while let Some(c) = s.next().await {
            match c {
                Ok(c) => out.extend_from_slice(&c),
                Err(e) => return (out, Some(e)),
            }
        }
        (out, None)
    }

    #[test]
    fn read_range_whole_or_error() {
        let d = data(10_000);
        let (p, f) = temp_file("small", &d);
        assert_eq!(&read_range(&f, &p, 0, 10_000).unwrap()[..], &d[..]);
        assert_eq!(&read_range(&f, &p, 17, 4_000).unwrap()[..], &d[17..4_000]);
        assert!(read_range(&f, &p, 5, 5).unwrap().is_empty());
        // The file is shorter than the range: an error, not padding.
        assert!(read_range(&f, &p, 9_000, 10_001).is_err());
        std::fs::remove_file(p).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ranges_byte_for_byte() {
        let d = data(5 * CHUNK + 333);
        let (p, f) = temp_file("ranges", &d);
        let f = Arc::new(f);
        for (a, b) in [
            (0, 0),
            (0, 1),
            (0, d.len()),
            (CHUNK - 1, CHUNK + 1),
            (CHUNK, 3 * CHUNK),
            (7, 4 * CHUNK + 9),
            (d.len() - 1, d.len()),
        ] {
            let file = f.try_clone().unwrap();
            let (got, err) = collect(file_range(file, p.clone(), a as u64, b as u64)).await;
            assert!(err.is_none(), "{a}..{b}: {err:?}");
            assert!(got == d[a..b], "{a}..{b}");
        }
        std::fs::remove_file(&p).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_file_shorter_than_its_range_ends_in_an_error() {
        let d = data(3 * CHUNK);
        let (p, f) = temp_file("short", &d);
        // The record said 4 chunks; the file holds 3 (truncated meanwhile).
        let (got, err) = collect(file_range(f, p.clone(), 0, 4 * CHUNK as u64)).await;
        let err = err.expect("an error, not a short clean end");
        assert!(
            matches!(&err, Error::Fs(cowkit_fs::Error::UnexpectedEof { at, .. }) if *at == 3 * CHUNK as u64),
            "{err:?}"
        );
        assert!(got.len() <= d.len() && got == d[..got.len()]);
        std::fs::remove_file(&p).unwrap();
    }
}
