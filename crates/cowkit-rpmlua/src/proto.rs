//! The private protocol between [`crate::LuaHost`] and the host process:
//! length-prefixed frames (a `u32` little-endian length, then the payload)
//! on a Unix socket, each reader with its own cap. A payload is a tag byte
//! and fields: byte strings (`u32` length, bytes), lists of them (`u32`
//! count, strings), optional lists (a byte 0/1, then the list).

use std::io::{self, Read, Write};

/// The largest request the host reads: a file trigger's list of a whole
/// root's library files fits many times over.
pub const MAX_REQUEST: usize = 256 << 20;
/// The largest reply the parent reads.
pub const MAX_REPLY: usize = 1 << 20;
/// The longest failure reason the host sends (longer ones are cut).
pub const MAX_REASON: usize = 64 << 10;

/// Parent → host: the first frame.
pub const INIT: u8 = 1;
/// Parent → host: run one scriptlet.
pub const RUN: u8 = 2;
/// Parent → host: write out what Lua's `print` left in C's `stdout`
/// buffer, where rpm's progress callback flushes it (`fflush(stdout)`).
pub const FLUSH: u8 = 3;
/// Host → parent: ready, or the scriptlet ran and rpm says OK.
pub const OK: u8 = 10;
/// Host → parent: the host cannot start (the reason follows).
pub const UNAVAILABLE: u8 = 11;
/// Host → parent: the scriptlet failed (rpm's reason follows).
pub const FAILED: u8 = 12;

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame over 4 GiB"))?;
    w.write_all(&len.to_le_bytes())?;
    w.write_all(payload)?;
    w.flush()
}

/// Reads one frame of at most `max` bytes; `None` at a clean end of stream
/// (before a frame starts).
pub fn read_frame(r: &mut impl Read, max: usize) -> io::Result<Option<Vec<u8>>> {
    let mut len = [0u8; 4];
    let mut got = 0;
    while got < len.len() {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes(len) as usize;
    if len > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {len} bytes, over the limit of {max}"),
        ));
    }
    let mut buf = vec![0u8; len];
    r.read_exact(&mut buf)?;
    Ok(Some(buf))
}

/// Builds a payload.
#[derive(Default)]
pub struct Enc(pub Vec<u8>);

impl Enc {
    /// A payload starting with `tag`.
    pub fn new(tag: u8) -> Enc {
        Enc(vec![tag])
    }
    /// One byte.
    pub fn u8(&mut self, v: u8) -> &mut Enc {
        self.0.push(v);
        self
    }
    /// A byte string.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Enc {
        self.0.extend_from_slice(&(b.len() as u32).to_le_bytes());
        self.0.extend_from_slice(b);
        self
    }
    /// A list of byte strings.
    pub fn list<T: AsRef<[u8]>>(&mut self, l: &[T]) -> &mut Enc {
        self.0.extend_from_slice(&(l.len() as u32).to_le_bytes());
        for b in l {
            self.bytes(b.as_ref());
        }
        self
    }
    /// An optional list of byte strings.
    pub fn opt_list<T: AsRef<[u8]>>(&mut self, l: Option<&[T]>) -> &mut Enc {
        match l {
            None => self.u8(0),
            Some(l) => self.u8(1).list(l),
        }
    }
}

/// Reads a payload; every read is checked against what is left.
pub struct Dec<'a>(pub &'a [u8]);

fn short() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "a truncated message")
}

impl<'a> Dec<'a> {
    /// One byte.
    pub fn u8(&mut self) -> io::Result<u8> {
        let (&b, rest) = self.0.split_first().ok_or_else(short)?;
        self.0 = rest;
        Ok(b)
    }
    fn u32(&mut self) -> io::Result<usize> {
        if self.0.len() < 4 {
            return Err(short());
        }
        let (n, rest) = self.0.split_at(4);
        self.0 = rest;
        Ok(u32::from_le_bytes([n[0], n[1], n[2], n[3]]) as usize)
    }
    /// A byte string.
    pub fn bytes(&mut self) -> io::Result<&'a [u8]> {
        let n = self.u32()?;
        if self.0.len() < n {
            return Err(short());
        }
        let (b, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(b)
    }
    /// A list of byte strings.
    pub fn list(&mut self) -> io::Result<Vec<&'a [u8]>> {
        let n = self.u32()?;
        // Each element takes at least its 4-byte length: bound the count.
        if n > self.0.len() / 4 {
            return Err(short());
        }
        (0..n).map(|_| self.bytes()).collect()
    }
    /// An optional list of byte strings.
    pub fn opt_list(&mut self) -> io::Result<Option<Vec<&'a [u8]>>> {
        match self.u8()? {
            0 => Ok(None),
            1 => self.list().map(Some),
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "a bad option byte",
            )),
        }
    }
    /// Checks that nothing is left.
    pub fn end(&self) -> io::Result<()> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(io::Error::new(io::ErrorKind::InvalidData, "trailing bytes"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_truncation() {
        let mut e = Enc::new(RUN);
        e.bytes(b"name")
            .list(&["a", "bc"])
            .opt_list::<&str>(None)
            .opt_list(Some(&[b"x".to_vec()][..]));
        let mut d = Dec(&e.0);
        assert_eq!(d.u8().unwrap(), RUN);
        assert_eq!(d.bytes().unwrap(), b"name");
        assert_eq!(d.list().unwrap(), vec![&b"a"[..], b"bc"]);
        assert_eq!(d.opt_list().unwrap(), None);
        assert_eq!(d.opt_list().unwrap(), Some(vec![&b"x"[..]]));
        d.end().unwrap();
        for cut in 1..e.0.len() {
            let mut d = Dec(&e.0[..cut]);
            let r = (|| {
                d.u8()?;
                d.bytes()?;
                d.list()?;
                d.opt_list()?;
                d.opt_list()?;
                d.end()
            })();
            assert!(r.is_err(), "a message cut at {cut} bytes was accepted");
        }
    }

    #[test]
    fn frames_over_the_cap_are_refused_before_reading() {
        let mut buf = Vec::new();
        write_frame(&mut buf, &[7u8; 100]).unwrap();
        let e = read_frame(&mut &buf[..], 99).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert_eq!(
            read_frame(&mut &buf[..], 100).unwrap().unwrap(),
            vec![7u8; 100]
        );
        assert!(read_frame(&mut &b""[..], 100).unwrap().is_none());
        assert!(read_frame(&mut &buf[..2], 100).is_err());
    }
}
