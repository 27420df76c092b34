//! The decoding of an unsigned aws-chunked body
//! (`x-amz-content-sha256: STREAMING-UNSIGNED-PAYLOAD-TRAILER` on a request
//! without a signature, which a public bucket may take): s3s decodes such
//! a body only for a signed request. The handler decodes it once the
//! request is authorised ([`Unchunked`]), so that the object stored is the
//! data, not its framing, and hands the trailer to the gateway
//! ([`DecodedTrailers`]), which checks the checksum in it as it checks a
//! signed request's.
//!
//! The framing is `SIZE[;ext]\r\nDATA\r\n` chunks, a last chunk of size 0,
//! then trailer lines (`name:value\r\n`) up to an empty line. S3's framing
//! rules (chunk sizes, trailer lines, an early end) are watched before
//! ([`crate::chunked`]); the decoder refuses what it cannot follow, and a
//! body whose data is not `x-amz-decoded-content-length` bytes long. Lines
//! are bounded ([`MAX_LINE`]) and so is the trailer ([`MAX_TRAILER`]).
//!
//! ```
//! use cowkit_s3::unchunk::Decoder;
//!
//! let mut d = Decoder::new(11);
//! let mut out = Vec::new();
//! d.feed(bytes::Bytes::from_static(b"B\r\nhello world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n"), &mut out).unwrap();
//! assert_eq!(out.concat(), b"hello world");
//! let trailer = d.finish().unwrap();
//! assert_eq!(trailer["x-amz-checksum-crc32"], "DUoRhQ==");
//! ```

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;
use http::HeaderMap;

/// The longest chunk header or trailer line.
pub const MAX_LINE: usize = 4096;
/// The most trailer bytes taken (S3's checksum trailers are one short line).
pub const MAX_TRAILER: usize = 16 << 10;

/// Why a body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnchunkError {
    /// Its framing is not aws-chunked.
    #[error("the aws-chunked body is malformed: {0}")]
    Malformed(&'static str),
    /// Its data is not as long as `x-amz-decoded-content-length` says.
    #[error("the aws-chunked body holds {got} bytes of data, not the {declared} x-amz-decoded-content-length declares")]
    Length {
        /// What the header declared.
        declared: u64,
        /// What the chunks held (so far).
        got: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Header,
    Data(u64),
    /// After a chunk's data: how many of its CR LF seen.
    Crlf(u8),
    Trailer,
    Finished,
}

/// The state of the decoding of one body.
#[derive(Debug)]
pub struct Decoder {
    state: State,
    line: Vec<u8>,
    declared: u64,
    decoded: u64,
    trailer_bytes: usize,
    trailers: HeaderMap,
}

impl Decoder {
    /// A decoder for a body of `declared` data bytes.
    pub fn new(declared: u64) -> Decoder {
        Decoder {
            state: State::Header,
            line: Vec::new(),
            declared,
            decoded: 0,
            trailer_bytes: 0,
            trailers: HeaderMap::new(),
        }
    }

    /// Decode `data`, the next bytes of the body: its chunks' data go to
    /// `out` (slices of `data`, nothing copied).
    pub fn feed(&mut self, mut data: Bytes, out: &mut Vec<Bytes>) -> Result<(), UnchunkError> {
        while !data.is_empty() {
            match self.state {
                State::Finished => return Err(UnchunkError::Malformed("bytes after its end")),
                State::Header | State::Trailer => {
                    let nl = data.iter().position(|&c| c == b'\n');
                    let take = nl.map_or(data.len(), |i| i + 1);
                    if self.line.len() + take > MAX_LINE + 1 {
                        return Err(UnchunkError::Malformed("a line too long"));
                    }
                    self.line.extend_from_slice(&data[..take]);
                    data = data.slice(take..);
                    if nl.is_some() {
                        let line = std::mem::take(&mut self.line);
                        let line = line.strip_suffix(b"\n").unwrap_or(&line);
                        let line = line
                            .strip_suffix(b"\r")
                            .ok_or(UnchunkError::Malformed("a line not ended by CR LF"))?;
                        if self.state == State::Header {
                            self.header(line)?;
                        } else {
                            self.trailer(line)?;
                        }
                    }
                }
                State::Data(left) => {
                    let n = left.min(data.len() as u64) as usize;
                    out.push(data.slice(..n));
                    data = data.slice(n..);
                    self.decoded += n as u64;
                    self.state = match left - n as u64 {
                        0 => State::Crlf(0),
                        rest => State::Data(rest),
                    };
                }
                State::Crlf(seen) => {
                    let want = if seen == 0 { b'\r' } else { b'\n' };
                    if data[0] != want {
                        return Err(UnchunkError::Malformed(
                            "a chunk's data not followed by CR LF",
                        ));
                    }
                    self.state = if seen == 0 {
                        State::Crlf(1)
                    } else {
                        State::Header
                    };
                    data = data.slice(1..);
                }
            }
        }
        Ok(())
    }

    fn header(&mut self, line: &[u8]) -> Result<(), UnchunkError> {
        let size = line.split(|&c| c == b';').next().unwrap_or(b"");
        let size = std::str::from_utf8(size)
            .ok()
            .filter(|s| !s.is_empty() && s.len() <= 16)
            .and_then(|s| u64::from_str_radix(s, 16).ok())
            .ok_or(UnchunkError::Malformed(
                "a chunk size that is not hexadecimal",
            ))?;
        if size == 0 {
            self.state = State::Trailer;
            return Ok(());
        }
        if self.decoded.saturating_add(size) > self.declared {
            return Err(UnchunkError::Length {
                declared: self.declared,
                got: self.decoded.saturating_add(size),
            });
        }
        self.state = State::Data(size);
        Ok(())
    }

    fn trailer(&mut self, line: &[u8]) -> Result<(), UnchunkError> {
        if line.is_empty() {
            self.state = State::Finished;
            return Ok(());
        }
        self.trailer_bytes += line.len();
        if self.trailer_bytes > MAX_TRAILER {
            return Err(UnchunkError::Malformed("a trailer too long"));
        }
        let (name, value) = line
            .iter()
            .position(|&c| c == b':')
            .filter(|&i| i > 0)
            .map(|i| (&line[..i], &line[i + 1..]))
            .ok_or(UnchunkError::Malformed("a trailer line without a name"))?;
        let name = http::HeaderName::from_bytes(name.trim_ascii())
            .map_err(|_| UnchunkError::Malformed("a trailer name that is not a header name"))?;
        let value = http::HeaderValue::from_bytes(value.trim_ascii())
            .map_err(|_| UnchunkError::Malformed("a trailer value that is not a header value"))?;
        self.trailers.append(name, value);
        Ok(())
    }

    /// The body ended: its trailer, when it ended after its empty last
    /// line with all its declared data.
    pub fn finish(&mut self) -> Result<HeaderMap, UnchunkError> {
        if self.state != State::Finished {
            return Err(UnchunkError::Malformed(
                "it ends before its last, empty line",
            ));
        }
        if self.decoded != self.declared {
            return Err(UnchunkError::Length {
                declared: self.declared,
                got: self.decoded,
            });
        }
        Ok(std::mem::take(&mut self.trailers))
    }
}

/// The trailer of a decoded body, once the body has been read to its end
/// (a request extension).
#[derive(Debug, Clone, Default)]
pub struct DecodedTrailers(Arc<Mutex<Option<HeaderMap>>>);

impl DecodedTrailers {
    /// `f` of the trailer (`None` until the body has ended).
    pub fn read<R>(&self, f: impl FnOnce(&HeaderMap) -> R) -> Option<R> {
        self.0.lock().ok()?.as_ref().map(f)
    }

    fn set(&self, h: HeaderMap) {
        if let Ok(mut g) = self.0.lock() {
            *g = Some(h);
        }
    }
}

/// A body decoded as it is read (see the module).
pub struct Unchunked {
    inner: s3s::Body,
    dec: Decoder,
    ready: VecDeque<Bytes>,
    trailers: DecodedTrailers,
    left: u64,
    done: bool,
}

impl Unchunked {
    /// Decode `inner`, of `declared` data bytes; its trailer goes to
    /// `trailers` when it ends.
    pub fn new(inner: s3s::Body, declared: u64, trailers: DecodedTrailers) -> Unchunked {
        Unchunked {
            inner,
            dec: Decoder::new(declared),
            ready: VecDeque::new(),
            trailers,
            left: declared,
            done: false,
        }
    }
}

impl Stream for Unchunked {
    type Item = Result<Bytes, s3s::StdError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if let Some(b) = this.ready.pop_front() {
                this.left -= b.len() as u64;
                return Poll::Ready(Some(Ok(b)));
            }
            if this.done {
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.inner).poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Ok(data))) => {
                    let mut out = Vec::new();
                    if let Err(e) = this.dec.feed(data, &mut out) {
                        this.done = true;
                        return Poll::Ready(Some(Err(Box::new(e))));
                    }
                    this.ready.extend(out.into_iter().filter(|b| !b.is_empty()));
                }
                Poll::Ready(Some(Err(e))) => {
                    this.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    this.done = true;
                    match this.dec.finish() {
                        Ok(t) => this.trailers.set(t),
                        Err(e) => return Poll::Ready(Some(Err(Box::new(e)))),
                    }
                }
            }
        }
    }
}

impl s3s::stream::ByteStream for Unchunked {
    fn remaining_length(&self) -> s3s::stream::RemainingLength {
        usize::try_from(self.left).map_or_else(
            |_| s3s::stream::RemainingLength::unknown(),
            s3s::stream::RemainingLength::new_exact,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `raw` fed in pieces of `step` bytes.
    fn decode(
        raw: &[u8],
        declared: u64,
        step: usize,
    ) -> Result<(Vec<u8>, HeaderMap), UnchunkError> {
        let mut d = Decoder::new(declared);
        let mut out = Vec::new();
        for piece in raw.chunks(step) {
            d.feed(Bytes::copy_from_slice(piece), &mut out)?;
        }
        let t = d.finish()?;
        Ok((out.concat(), t))
    }

    #[test]
    fn bodies_decode_in_any_pieces() {
        let body = b"2000\r\n"
            .iter()
            .copied()
            .chain(std::iter::repeat_n(b'a', 0x2000))
            .chain(*b"\r\n3;ext=1\r\nbcd\r\n0\r\nx-amz-checksum-crc32:abc=\r\n\r\n")
            .collect::<Vec<u8>>();
        for step in [1, 2, 7, 100, body.len()] {
            let (data, t) = decode(&body, 0x2003, step).unwrap();
            assert_eq!(data.len(), 0x2003);
            assert!(data.ends_with(b"abcd"));
            assert_eq!(t["x-amz-checksum-crc32"], "abc=");
        }
        let (data, t) = decode(b"0\r\n\r\n", 0, 1).unwrap();
        assert!(data.is_empty() && t.is_empty());
    }

    #[test]
    fn malformed_bodies_are_refused() {
        let long = format!("{}\r\n", "1".repeat(MAX_LINE + 1));
        for (raw, declared) in [
            (&b"B\r\nhello world\r\n0\r\n"[..], 11),
            (b"B\r\nhello world\r\n0\r\n\r\nmore", 11),
            (b"zz\r\nhello world\r\n0\r\n\r\n", 11),
            (b"B\r\nhello worldXX0\r\n\r\n", 11),
            (b"B\nhello world\r\n0\r\n\r\n", 11),
            (b"B\r\nhello world\r\n0\r\n:v\r\n\r\n", 11),
            (b"B\r\nhello world\r\n0\r\n\r\n", 12),
            (b"B\r\nhello world\r\n0\r\n\r\n", 10),
            (b"FFFFFFFFFFFFFFFFF\r\n", 10),
            (long.as_bytes(), 10),
        ] {
            assert!(
                decode(raw, declared, 3).is_err(),
                "{:?}",
                String::from_utf8_lossy(raw)
            );
        }
    }
}
