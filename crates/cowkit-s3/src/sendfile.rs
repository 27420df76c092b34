//! GetObject bodies by `sendfile(2)` on HTTP/1 connections: the file's
//! pages go from the page cache into the socket without being copied into
//! user memory and out again.
//!
//! hyper owns the socket and writes every body byte itself, counting them
//! against `Content-Length`. So the body handed to hyper is made of
//! *stand-ins*: frames of the right lengths that all point into one static
//! block, `STAND_IN`, and for each one a `Pending` range of the file is
//! queued on the connection. The connection's I/O object, [`SendfileIo`],
//! recognises the stand-in bytes by their address when hyper writes them and
//! sends the queued file range in their place; everything else it writes
//! as given. hyper is built with `writev(true)`, so it queues body frames
//! as they are (it never copies them into a buffer of its own), and the
//! stand-ins reach [`SendfileIo`] untouched.
//!
//! Safety nets: stand-ins are only made for a request that carries the
//! connection's [`Splicer`] (HTTP/1 through [`SendfileIo`]; tests and fuzz
//! targets calling the handler directly and HTTP/2 get the `pread` body of
//! [`crate::body`]); stand-in bytes with no queued range end the connection
//! with an error rather than sending them; a file that ends before its
//! range (truncated by another tool during the GET) ends the connection
//! with an error too, so the client sees a short body, never padding.
//!
//! And a stand-in frame that hyper let go of without writing it through
//! [`SendfileIo`] ends the connection before anything more is written
//! (each range holds a weak reference to its frame). On a connection hyper
//! keeps, it writes every frame it takes; one it let go of was either
//! abandoned (the connection is failing anyway) or copied into a buffer of
//! hyper's own, whose stand-in bytes would otherwise go out as the
//! object's content. So a hyper that changed how it buffers bodies fails
//! GETs loudly instead of sending zeros.

use std::collections::VecDeque;
use std::fs::File;
use std::io::IoSlice;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;
use hyper_util::rt::TokioIo;
use tokio::io::Interest;
use tokio::net::TcpStream;

use crate::body::CHUNK;
use crate::error::Error;

/// The block every stand-in frame points into. Its bytes are never sent.
static STAND_IN: [u8; CHUNK] = [0; CHUNK];

fn is_stand_in(b: &[u8]) -> bool {
    let base = STAND_IN.as_ptr() as usize;
    let p = b.as_ptr() as usize;
    !b.is_empty() && p >= base && p + b.len() <= base + CHUNK
}

/// A file range waiting to be sent in place of stand-in bytes.
#[derive(Debug)]
struct Pending {
    file: Arc<File>,
    path: Arc<PathBuf>,
    offset: u64,
    left: u64,
    /// Alive as long as its stand-in frame is: a range whose frame is
    /// gone unwritten ends the connection (see the module).
    frame: Weak<()>,
}

/// The owner of a stand-in frame's bytes.
struct StandIn {
    len: usize,
    _alive: Arc<()>,
}

impl AsRef<[u8]> for StandIn {
    fn as_ref(&self) -> &[u8] {
        &STAND_IN[..self.len]
    }
}

/// The queue of file ranges of one connection, shared between its
/// [`SendfileIo`] and the requests it serves (as a request extension).
#[derive(Debug, Clone, Default)]
pub struct Splicer(Arc<Mutex<VecDeque<Pending>>>);

impl Splicer {
    fn push(&self, p: Pending) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(p);
    }
}

/// Bytes `start..end` of `file` as stand-in frames for `splicer`'s
/// connection; `path` names the object in errors.
pub fn file_range(splicer: Splicer, file: File, path: PathBuf, start: u64, end: u64) -> StandIns {
    StandIns {
        splicer,
        file: Arc::new(file),
        path: Arc::new(path),
        next: start,
        end,
    }
}

/// The stream returned by [`file_range`].
#[derive(Debug)]
pub struct StandIns {
    splicer: Splicer,
    file: Arc<File>,
    path: Arc<PathBuf>,
    next: u64,
    end: u64,
}

impl Stream for StandIns {
    type Item = Result<Bytes, Error>;

    fn poll_next(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.next >= this.end {
            return Poll::Ready(None);
        }
        let len = (this.end - this.next).min(CHUNK as u64);
        // Queued when hyper takes the frame: hyper writes frames in the
        // order it takes them, so the queue and the stand-ins match.
        let alive = Arc::new(());
        this.splicer.push(Pending {
            file: this.file.clone(),
            path: this.path.clone(),
            offset: this.next,
            left: len,
            frame: Arc::downgrade(&alive),
        });
        this.next += len;
        Poll::Ready(Some(Ok(Bytes::from_owner(StandIn {
            len: len as usize,
            _alive: alive,
        }))))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.end - self.next).div_ceil(CHUNK as u64) as usize;
        (n, Some(n))
    }
}

/// A TCP connection as hyper's I/O, sending queued file ranges in place of
/// stand-in bytes.
#[derive(Debug)]
pub struct SendfileIo {
    io: TokioIo<TcpStream>,
    splicer: Splicer,
}

impl SendfileIo {
    /// Wrap `sock`; requests on it get `splicer()` as an extension.
    pub fn new(sock: TcpStream) -> Self {
        SendfileIo {
            io: TokioIo::new(sock),
            splicer: Splicer::default(),
        }
    }

    /// The connection's queue, for its requests.
    pub fn splicer(&self) -> Splicer {
        self.splicer.clone()
    }

    /// An error if a stand-in frame was let go of unwritten (see the
    /// module): nothing more may be written on this connection.
    fn check_frames(&self) -> std::io::Result<()> {
        let q = self.splicer.0.lock().unwrap_or_else(|e| e.into_inner());
        if q.iter().any(|p| p.frame.strong_count() == 0) {
            log::error!(
                "GET: a body frame of {} was let go of unwritten (copied or abandoned); \
                 closing the connection",
                q.front()
                    .map_or_else(String::new, |p| p.path.display().to_string())
            );
            return Err(std::io::Error::other(
                "GetObject body: a stand-in frame was not written through the connection",
            ));
        }
        Ok(())
    }

    /// Send up to `want` bytes of the first queued range in place of as
    /// many stand-in bytes.
    fn poll_send(&mut self, cx: &mut Context<'_>, want: usize) -> Poll<std::io::Result<usize>> {
        let mut q = self.splicer.0.lock().unwrap_or_else(|e| e.into_inner());
        let Some(p) = q.front_mut() else {
            return Poll::Ready(Err(std::io::Error::other(
                "GetObject body: stand-in bytes without a file range (not sent)",
            )));
        };
        let count = (want as u64).min(p.left) as usize;
        if let Err(e) = crate::fault::stale("read-object", "send", || p.path.to_path_buf()) {
            log::warn!("GET: {e}; closing the connection");
            q.clear();
            return Poll::Ready(Err(std::io::Error::other(e)));
        }
        let sock = self.io.inner();
        loop {
            std::task::ready!(sock.poll_write_ready(cx))?;
            let r = sock.try_io(Interest::WRITABLE, || {
                cowkit_fs::send::send_file(sock, &*p.file, &mut p.offset, count)
                    .map_err(std::io::Error::from)
            });
            match r {
                Ok(0) => {
                    let e = cowkit_fs::Error::UnexpectedEof {
                        path: p.path.to_path_buf(),
                        at: p.offset,
                        wanted: p.offset + p.left,
                    };
                    log::warn!("GET: {e}; closing the connection");
                    q.clear();
                    return Poll::Ready(Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        e,
                    )));
                }
                Ok(n) => {
                    p.left -= n as u64;
                    if p.left == 0 {
                        q.pop_front();
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl hyper::rt::Read for SendfileIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for SendfileIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.poll_write_vectored(cx, &[IoSlice::new(buf)])
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = &mut *self;
        if let Err(e) = this.check_frames() {
            return Poll::Ready(Err(e));
        }
        let mut done = 0;
        let mut i = 0;
        // In order: runs of ordinary slices by writev, stand-ins by
        // sendfile; stop at the first short write. Bytes already written
        // are reported even when the next step is pending or failed (it
        // is tried again on the next call).
        while i < bufs.len() {
            let (step, want) = if is_stand_in(&bufs[i]) {
                let want = bufs[i].len();
                i += 1;
                (this.poll_send(cx, want), want)
            } else {
                let j = (i..bufs.len())
                    .find(|&j| is_stand_in(&bufs[j]))
                    .unwrap_or(bufs.len());
                let want = bufs[i..j].iter().map(|b| b.len()).sum();
                let step = Pin::new(&mut this.io).poll_write_vectored(cx, &bufs[i..j]);
                i = j;
                (step, want)
            };
            match step {
                Poll::Ready(Ok(n)) => {
                    done += n;
                    if n < want {
                        break;
                    }
                }
                Poll::Ready(Err(e)) if done == 0 => return Poll::Ready(Err(e)),
                Poll::Pending if done == 0 => return Poll::Pending,
                _ => break,
            }
        }
        Poll::Ready(Ok(done))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::StreamExt;
    use hyper::rt::Write as _;
    use tokio::io::AsyncReadExt;

    fn temp_file(name: &str, data: &[u8]) -> (PathBuf, File) {
        let p = std::env::temp_dir().join(format!(
            "cowkit-sendfile-test-{}-{name}",
            std::process::id()
        ));
        std::fs::write(&p, data).unwrap();
        let f = File::open(&p).unwrap();
        (p, f)
    }

    async fn write(io: &mut SendfileIo, b: &[u8]) -> std::io::Result<usize> {
        std::future::poll_fn(|cx| Pin::new(&mut *io).poll_write(cx, b)).await
    }

    /// A stand-in frame written as hyper writes it sends the file's bytes;
    /// one copied out of its frame (as a hyper that buffered bodies
    /// itself would) fails the write, and its zeros never reach the
    /// client.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stand_in_copied_out_of_its_frame_is_never_sent() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = tokio::spawn(async move {
            let mut s = TcpStream::connect(addr).await.unwrap();
            let mut got = Vec::new();
            let _ = s.read_to_end(&mut got).await;
            got
        });
        let (sock, _) = listener.accept().await.unwrap();
        let mut io = SendfileIo::new(sock);
        let (p, f) = temp_file("copied", b"the object's bytes");
        let f2 = f.try_clone().unwrap();

        let mut frames = file_range(io.splicer(), f, p.clone(), 0, 18);
        let frame = frames.next().await.unwrap().unwrap();
        assert_eq!(write(&mut io, &frame).await.unwrap(), 18);
        drop(frame);
        // The response's head of the next GET, then its body frame copied.
        assert_eq!(write(&mut io, b"|next:").await.unwrap(), 6);
        let mut frames = file_range(io.splicer(), f2, p.clone(), 4, 10);
        let frame = frames.next().await.unwrap().unwrap();
        let copy = frame.to_vec();
        drop(frame);
        let err = write(&mut io, &copy).await.unwrap_err();
        assert!(err.to_string().contains("not written through"), "{err}");
        drop(io);
        assert_eq!(client.await.unwrap(), b"the object's bytes|next:");
        std::fs::remove_file(p).unwrap();
    }
}
