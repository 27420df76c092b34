//! A watch on the framing of an aws-chunked request body, on its way into
//! s3s (which decodes it, tells the gateway neither the chunk sizes nor
//! where a body went wrong, and takes some bodies S3 refuses).
//!
//! The watch reads the framing as the bytes pass, without changing them:
//! chunk headers (`SIZE[;chunk-signature=…]\r\n`), the CRLF after each
//! chunk's data, and after the last chunk (size 0) the trailer lines
//! (`name:value\r\n`) up to the empty line that ends the body. It fails the
//! body, recording the refusal in a [`ChunkVerdict`] the gateway reads when
//! the body fails, where S3 refuses it:
//! - a chunk with data after one under [`MIN_CHUNK`] bytes (only the last
//!   chunk with data may be short): `InvalidChunkSizeError`;
//! - a trailer line without a name, or bytes after the end of a body that
//!   declared a trailer: `MalformedTrailerError`;
//! - the body ending before its empty last line: `IncompleteBody`.
//!
//! Anything else it cannot follow (a size that is not hex, a missing CRLF
//! after a chunk's data) it leaves to s3s' decoder and stops watching.
//!
//! ```
//! use cowkit_s3::chunked::{ChunkError, Watch};
//!
//! let mut w = Watch::default();
//! assert_eq!(w.feed(b"a\r\n0123456789\r\n"), Ok(()));
//! assert_eq!(w.feed(b"5\r\nabcde\r\n"), Err(ChunkError::TooSmall));
//! ```

/// The smallest size of a chunk that is not the last one with data.
pub const MIN_CHUNK: u64 = 8192;

/// The longest chunk header followed (a signed one is about 85 bytes).
const MAX_HEADER: usize = 4096;

/// Why the watch failed a body.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    /// A chunk with data came after one shorter than [`MIN_CHUNK`]
    /// (S3: `InvalidChunkSizeError`).
    #[error("Only the last chunk is allowed to have a size less than 8192 bytes")]
    TooSmall,
    /// A trailer line without a name, or bytes after the end of a body
    /// with a declared trailer (S3: `MalformedTrailerError`).
    #[error("The request contained trailing data that was not well-formed or did not conform to our published schema.")]
    MalformedTrailer,
    /// The body ended before its last, empty line (S3: `IncompleteBody`).
    #[error("The request body terminated unexpectedly")]
    Incomplete,
}

/// Where the watch of a request's body leaves its verdict (a request
/// extension).
pub type ChunkVerdict = crate::inspect::Verdict<ChunkError>;

/// A request body with its aws-chunked framing watched (see the module).
pub type Watched = crate::inspect::Inspected<Watch>;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum State {
    /// Reading a chunk header up to its CRLF.
    #[default]
    Header,
    /// Inside a chunk's data: bytes left.
    Data(u64),
    /// After a chunk's data: CR and LF expected (how many seen).
    Crlf(u8),
    /// After the last chunk's header: trailer lines, up to an empty one.
    Trailer,
    /// The empty line that ends the body was seen.
    Finished,
    /// The framing could not be followed: s3s decides.
    Done,
}

/// The state of the watch over one body.
#[derive(Debug, Default)]
pub struct Watch {
    state: State,
    line: Vec<u8>,
    /// The previous chunk with data was shorter than [`MIN_CHUNK`].
    short: bool,
    /// The request declared a trailer (`x-amz-trailer`).
    declared: bool,
}

impl Watch {
    /// A watch for a body whose request declared a trailer or not.
    pub fn new(trailer_declared: bool) -> Watch {
        Watch {
            declared: trailer_declared,
            ..Watch::default()
        }
    }

    /// The body ended here: [`ChunkError::Incomplete`] unless it ended
    /// after its empty last line (or the watch gave up following it).
    pub fn end(&self) -> Result<(), ChunkError> {
        match self.state {
            State::Finished | State::Done => Ok(()),
            _ => Err(ChunkError::Incomplete),
        }
    }

    /// Bytes of an unfinished line held (at most [`MAX_HEADER`]: a longer
    /// line stops the watch). For the fuzz target's bound.
    #[cfg(feature = "fuzzing")]
    pub(crate) fn held(&self) -> usize {
        self.line.len()
    }

    /// Follow `data`, the next bytes of the raw body.
    pub fn feed(&mut self, mut data: &[u8]) -> Result<(), ChunkError> {
        while !data.is_empty() {
            match self.state {
                State::Done => return Ok(()),
                State::Finished => {
                    if !self.declared {
                        self.state = State::Done;
                        return Ok(());
                    }
                    return Err(ChunkError::MalformedTrailer);
                }
                State::Header | State::Trailer => match data.iter().position(|&c| c == b'\n') {
                    // A line longer than `MAX_HEADER` is not followed,
                    // however the body was cut into frames.
                    Some(i) if self.line.len() + i > MAX_HEADER => {
                        self.state = State::Done;
                        return Ok(());
                    }
                    Some(i) => {
                        self.line.extend_from_slice(&data[..i]);
                        data = &data[i + 1..];
                        if self.state == State::Header {
                            self.header()?;
                        } else {
                            self.trailer()?;
                        }
                    }
                    None => {
                        self.line.extend_from_slice(data);
                        if self.line.len() > MAX_HEADER {
                            self.state = State::Done;
                            self.line = Vec::new();
                        }
                        return Ok(());
                    }
                },
                State::Data(left) => {
                    let n = left.min(data.len() as u64);
                    data = &data[n as usize..];
                    self.state = match left - n {
                        0 => State::Crlf(0),
                        rest => State::Data(rest),
                    };
                }
                State::Crlf(seen) => {
                    let want = if seen == 0 { b'\r' } else { b'\n' };
                    self.state = match (data[0] == want, seen) {
                        (true, 0) => State::Crlf(1),
                        (true, _) => State::Header,
                        (false, _) => State::Done,
                    };
                    data = &data[1..];
                }
            }
        }
        Ok(())
    }

    /// A whole header line (without its LF) is in `line`.
    fn header(&mut self) -> Result<(), ChunkError> {
        let line = std::mem::take(&mut self.line);
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        let size = line.split(|&c| c == b';').next().unwrap_or(b"");
        let size = std::str::from_utf8(size)
            .ok()
            .and_then(|s| u64::from_str_radix(s.trim(), 16).ok());
        self.state = match size {
            None => State::Done,
            Some(0) => State::Trailer,
            Some(_) if self.short => return Err(ChunkError::TooSmall),
            Some(n) => {
                self.short = n < MIN_CHUNK;
                State::Data(n)
            }
        };
        Ok(())
    }

    /// A whole trailer line (without its LF) is in `line`.
    fn trailer(&mut self) -> Result<(), ChunkError> {
        let line = std::mem::take(&mut self.line);
        let line = line.strip_suffix(b"\r").unwrap_or(&line);
        if line.is_empty() {
            self.state = State::Finished;
            return Ok(());
        }
        match line.iter().position(|&c| c == b':') {
            Some(i) if i > 0 => Ok(()),
            _ => Err(ChunkError::MalformedTrailer),
        }
    }
}

impl crate::inspect::Inspector for Watch {
    type Refusal = ChunkError;

    fn feed(&mut self, data: &[u8]) -> Result<(), ChunkError> {
        Watch::feed(self, data)
    }

    fn end(&mut self) -> Result<(), ChunkError> {
        Watch::end(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(sizes: &[usize], signed: bool) -> Vec<u8> {
        let mut b = Vec::new();
        for &n in sizes {
            b.extend_from_slice(format!("{n:x}").as_bytes());
            if signed {
                b.extend_from_slice(b";chunk-signature=0123456789abcdef");
            }
            b.extend_from_slice(b"\r\n");
            b.extend(std::iter::repeat_n(b'x', n));
            if n > 0 {
                b.extend_from_slice(b"\r\n");
            }
        }
        b.extend_from_slice(b"x-amz-checksum-crc32:AAAAAA==\r\n\r\n");
        b
    }

    fn verdict(sizes: &[usize], signed: bool, step: usize) -> Result<(), ChunkError> {
        let mut w = Watch::new(true);
        for piece in body(sizes, signed).chunks(step) {
            w.feed(piece)?;
        }
        w.end()
    }

    fn whole(raw: &[u8], declared: bool) -> Result<(), ChunkError> {
        let mut w = Watch::new(declared);
        w.feed(raw)?;
        w.end()
    }

    /// A line longer than the watch follows gets the same verdict
    /// whether it comes in one frame or several (it once was refused as a
    /// malformed trailer in one frame and let through in pieces).
    #[test]
    fn a_long_line_is_judged_alike_in_any_frames() {
        let body = format!("0\r\n{}\r\n\r\n", "y".repeat(MAX_HEADER + 10));
        let whole = {
            let mut w = Watch::new(true);
            w.feed(body.as_bytes()).and_then(|()| w.end())
        };
        let pieces = {
            let mut w = Watch::new(true);
            body.as_bytes()
                .chunks(100)
                .try_for_each(|c| w.feed(c))
                .and_then(|()| w.end())
        };
        assert_eq!(whole, pieces);
        assert_eq!(whole, Ok(()), "a line it cannot follow is left to s3s");
    }

    #[test]
    fn ends_and_trailers() {
        let sig = "0123456789abcdef";
        for ok in [
            "a\r\n0123456789\r\n0\r\n\r\n".to_string(),
            "a\r\n0123456789\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n".to_string(),
            format!("0;chunk-signature={sig}\r\n\r\n"),
            format!("0;chunk-signature={sig}\r\nx-amz-checksum-crc32:AA==\r\nx-amz-trailer-signature:{sig}\r\n\r\n"),
        ] {
            assert_eq!(whole(ok.as_bytes(), true), Ok(()), "{ok}");
        }
        for cut in [
            &b"a\r\n0123456789\r\n0\r\n"[..],
            b"a\r\n0123456789\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n",
            b"a\r\n",
            b"a\r\n01234",
            b"0;chunk-signature=0123bbbb",
            b"",
        ] {
            assert_eq!(whole(cut, false), Err(ChunkError::Incomplete), "{cut:?}");
        }
        assert_eq!(
            whole(b"5\r\nhello\r\n0\r\n:M3eFcAZSQlc=\r\n\r\n", true),
            Err(ChunkError::MalformedTrailer)
        );
        assert_eq!(
            whole(b"0\r\nno-colon\r\n\r\n", true),
            Err(ChunkError::MalformedTrailer)
        );
        // Bytes after the end: malformed when a trailer was declared.
        let extra = format!("0;chunk-signature={sig}\r\n\r\nx-amz-trailer-signature:{sig}\r\n\r\n");
        assert_eq!(
            whole(extra.as_bytes(), true),
            Err(ChunkError::MalformedTrailer)
        );
        assert_eq!(whole(extra.as_bytes(), false), Ok(()));
    }

    #[test]
    fn only_the_last_chunk_with_data_may_be_short() {
        let ok: [&[usize]; 5] = [
            &[8192, 8192, 100, 0],
            &[100, 0],
            &[10000, 9500, 20, 0],
            &[8200, 8201, 10000, 10, 0],
            &[0],
        ];
        let bad: [&[usize]; 5] = [
            &[100, 8192, 100, 0],
            &[8192, 10, 100, 0],
            &[10, 10, 10, 0],
            &[10000, 10, 8192, 8192, 0],
            &[8192, 10, 10, 8192, 20, 20000, 0],
        ];
        // Fed whole, in odd pieces and byte by byte: headers and CRLFs split
        // across frames.
        for step in [usize::MAX, 7, 1] {
            for signed in [false, true] {
                for s in ok {
                    assert_eq!(verdict(s, signed, step), Ok(()), "{s:?} {step}");
                }
                for s in bad {
                    assert_eq!(verdict(s, signed, step), Err(ChunkError::TooSmall), "{s:?}");
                }
            }
        }
    }

    #[test]
    fn framing_it_cannot_follow_is_left_to_s3s() {
        for raw in [
            &b"zz\r\nhello\r\n5\r\nhello\r\n"[..],
            b"5\r\nhelloXX5\r\nhello\r\n",
            b"5\nhello\r\n5\r\nhello\r\n",
        ] {
            let mut w = Watch::default();
            // A short chunk then another, but the framing is off first (or,
            // for a bare LF, accepted and the second chunk is refused).
            let r = w.feed(raw);
            if raw.starts_with(b"5\n") {
                assert_eq!(r, Err(ChunkError::TooSmall));
            } else {
                assert_eq!(r, Ok(()), "{:?}", String::from_utf8_lossy(raw));
            }
        }
        let mut w = Watch::default();
        assert_eq!(w.feed(&vec![b'1'; MAX_HEADER + 1]), Ok(()));
        assert_eq!(w.feed(b"\r\n5\r\nhello\r\n5\r\nhello\r\n"), Ok(()));
    }
}
