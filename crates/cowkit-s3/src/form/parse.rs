//! A `multipart/form-data` body read as S3 reads a POST upload: the
//! fields up to the one named `file` (each bounded, their count and the
//! bytes before the file bounded: anyone can send this), then the file's
//! bytes as a stream ([`FileBody`]) that ends at the next boundary, counts
//! what it passes on against the policy's `content-length-range`, and
//! reads and drops (a bounded amount of) whatever follows.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};

use super::{malformed, too_much_before_file};
use crate::refusal::Refusal;

/// What a form may hold before its file.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Fields before the file.
    pub max_fields: usize,
    /// Bytes of one field's value (a policy document is one).
    pub max_field: usize,
    /// Bytes of the body before the file's first byte: boundaries, part
    /// headers and values.
    pub max_total: usize,
}

/// S3 allows 20 KB of form fields before the file; cowkit allows a
/// little more of everything, and no more.
pub const LIMITS: Limits = Limits {
    max_fields: 100,
    max_field: 20 << 10,
    max_total: 64 << 10,
};

/// What follows the file that is read and dropped (an unread body closes
/// the connection under a client still sending it).
const MAX_TRAILING: usize = 8 << 20;

/// How far past a `content-length-range` maximum the file is still
/// counted (not kept), to tell the client the size it proposed.
const MAX_COUNTED_PAST: u64 = 8 << 20;

/// The fields of a form, before its file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fields {
    /// `(name, value)` in the order sent, names in lowercase (S3's field
    /// names are not case-sensitive).
    pub fields: Vec<(String, String)>,
    /// The file part's `filename`.
    pub file_name: Option<String>,
}

impl Fields {
    /// The value of field `name` (lowercase).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// A request body.
pub type BodyStream = Pin<Box<dyn Stream<Item = Result<Bytes, s3s::StdError>> + Send + Sync>>;

/// Where `needle` first occurs in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// A body being read, with what has been read and not consumed.
struct Reader<'a> {
    body: &'a mut BodyStream,
    buf: BytesMut,
    /// Bytes consumed so far.
    consumed: usize,
    limits: Limits,
}

impl Reader<'_> {
    /// Read one more chunk; `Err` once the bytes before the file would
    /// pass the limit, or the body ends or fails.
    async fn more(&mut self) -> Result<(), Refusal> {
        if self.consumed + self.buf.len() > self.limits.max_total {
            return Err(too_much_before_file());
        }
        match self.body.next().await {
            Some(Ok(b)) => {
                self.buf.extend_from_slice(&b);
                Ok(())
            }
            Some(Err(e)) => {
                log::debug!("form body: {e}");
                Err(crate::refusal::Refusal::new(
                    http::StatusCode::BAD_REQUEST,
                    "IncompleteBody",
                    "The request body terminated unexpectedly",
                ))
            }
            None => Err(malformed()),
        }
    }

    /// Consume up to and including the first `needle`; what came before it.
    async fn until(&mut self, needle: &[u8], max: usize) -> Result<Bytes, Refusal> {
        loop {
            if let Some(at) = find(&self.buf, needle) {
                let got = self.buf.split_to(at).freeze();
                let _ = self.buf.split_to(needle.len());
                self.consumed += at + needle.len();
                return Ok(got);
            }
            if self.buf.len() > max + needle.len() {
                return Err(too_much_before_file());
            }
            self.more().await?;
        }
    }

    /// The next `n` bytes, consumed.
    async fn take(&mut self, n: usize) -> Result<Bytes, Refusal> {
        while self.buf.len() < n {
            self.more().await?;
        }
        self.consumed += n;
        Ok(self.buf.split_to(n).freeze())
    }
}

/// A part's name and filename from its headers (`Content-Disposition:
/// form-data; name="x"; filename="y"`).
pub fn part_names(headers: &str) -> Option<(String, Option<String>)> {
    let line = headers.split("\r\n").find(|l| {
        l.split_once(':')
            .is_some_and(|(n, _)| n.trim().eq_ignore_ascii_case("content-disposition"))
    })?;
    let (_, v) = line.split_once(':')?;
    let mut parts = params(v);
    let kind = parts.next()?;
    if !kind.0.eq_ignore_ascii_case("form-data") {
        return None;
    }
    let (mut name, mut file) = (None, None);
    for (k, v) in parts {
        if k.eq_ignore_ascii_case("name") {
            name = Some(v);
        } else if k.eq_ignore_ascii_case("filename") {
            file = Some(v);
        }
    }
    Some((name?, file))
}

/// `a; k="v"; k2=v2` as `(a, "")`, `(k, v)`, `(k2, v2)` (quotes and their
/// backslash escapes taken off).
fn params(v: &str) -> impl Iterator<Item = (String, String)> + '_ {
    let mut out = Vec::new();
    let (mut cur, mut quoted, mut escaped) = (String::new(), false, false);
    for c in v.chars().chain(std::iter::once(';')) {
        match c {
            _ if escaped => {
                cur.push(c);
                escaped = false;
            }
            '\\' if quoted => escaped = true,
            '"' => quoted = !quoted,
            ';' if !quoted => out.push(std::mem::take(&mut cur)),
            c => cur.push(c),
        }
    }
    out.into_iter().filter(|p| !p.trim().is_empty()).map(|p| {
        let p = p.trim().to_string();
        match p.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), v.trim().to_string()),
            None => (p, String::new()),
        }
    })
}

/// Read `body` (a form with `boundary`) up to its file: the fields, and
/// the file's first bytes already read.
pub async fn read_fields(
    body: &mut BodyStream,
    boundary: &str,
    limits: Limits,
) -> Result<(Fields, BytesMut), Refusal> {
    let mut r = Reader {
        body,
        buf: BytesMut::new(),
        consumed: 0,
        limits,
    };
    let dash = format!("--{boundary}");
    let delim = format!("\r\n--{boundary}");
    // A preamble may come before the first boundary.
    r.until(dash.as_bytes(), limits.max_total).await?;
    let mut fields = Fields::default();
    loop {
        let end = r.take(2).await?;
        if &end[..] != b"\r\n" {
            // `--` (the form ended) or garbage: no file either way.
            return Err(if &end[..] == b"--" {
                super::missing_field("file")
            } else {
                malformed()
            });
        }
        let head = r.until(b"\r\n\r\n", limits.max_total).await?;
        let head = std::str::from_utf8(&head).map_err(|_| malformed())?;
        let (name, file) = part_names(head).ok_or_else(malformed)?;
        let name = name.to_ascii_lowercase();
        if name == "file" {
            fields.file_name = file;
            return Ok((fields, r.buf));
        }
        if fields.fields.len() >= limits.max_fields {
            return Err(too_much_before_file());
        }
        let value = r.until(delim.as_bytes(), limits.max_field).await?;
        if value.len() > limits.max_field {
            return Err(too_much_before_file());
        }
        let value = String::from_utf8(value.to_vec()).map_err(|_| malformed())?;
        if fields.get(&name).is_some() {
            return Err(super::invalid_argument(
                format!("Bucket POST must not contain more than one field named '{name}'."),
                &name,
                &value,
            ));
        }
        fields.fields.push((name, value));
    }
}

/// Why a [`FileBody`] failed (read by the request path once PutObject's
/// path has given up on the body).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileError {
    /// Over `content-length-range`'s maximum: the size proposed (as far
    /// as it was counted) and the maximum.
    TooLarge {
        /// Bytes counted.
        size: u64,
        /// The maximum.
        max: u64,
    },
    /// Under its minimum.
    TooSmall {
        /// Bytes sent.
        size: u64,
        /// The minimum.
        min: u64,
    },
    /// The body ended before the boundary after the file.
    Unterminated,
}

/// Where a [`FileBody`] leaves its [`FileError`].
pub type Verdict = Arc<Mutex<Option<FileError>>>;

/// The file's bytes, from the body after its part's headers to the
/// boundary that ends it.
pub struct FileBody {
    body: BodyStream,
    delim: Vec<u8>,
    pending: BytesMut,
    /// The boundary after the file has been seen.
    found: bool,
    /// Bytes of the file so far.
    size: u64,
    /// `content-length-range`.
    range: (u64, u64),
    /// Bytes after the file read and dropped.
    trailing: usize,
    finished: bool,
    verdict: Verdict,
}

impl FileBody {
    /// The rest of `body`, whose file part began with `first`; `range` is
    /// the sizes allowed.
    pub fn new(body: BodyStream, first: BytesMut, boundary: &str, range: (u64, u64)) -> Self {
        FileBody {
            body,
            delim: format!("\r\n--{boundary}").into_bytes(),
            pending: first,
            found: false,
            size: 0,
            range,
            trailing: 0,
            finished: false,
            verdict: Verdict::default(),
        }
    }

    /// Where its failure will be.
    pub fn verdict(&self) -> Verdict {
        self.verdict.clone()
    }

    fn fail(&mut self, e: FileError) -> Poll<Option<Result<Bytes, s3s::StdError>>> {
        self.finished = true;
        if let Ok(mut v) = self.verdict.lock() {
            *v = Some(e);
        }
        Poll::Ready(Some(Err(format!("form upload: {e:?}").into())))
    }

    /// `out`, the file's next bytes, passed on; `None` when they are over
    /// the maximum (then only counted).
    fn pass(&mut self, out: BytesMut) -> Option<Bytes> {
        self.size += out.len() as u64;
        (self.size <= self.range.1 && !out.is_empty()).then(|| out.freeze())
    }

    /// The file's next bytes in `pending`, if any can be told apart from
    /// a boundary yet.
    fn next_pending(&mut self) -> Option<Poll<Option<Result<Bytes, s3s::StdError>>>> {
        if let Some(at) = find(&self.pending, &self.delim) {
            let out = self.pending.split_to(at);
            self.pending.clear();
            self.found = true;
            if let Some(b) = self.pass(out) {
                return Some(Poll::Ready(Some(Ok(b))));
            }
            return None;
        }
        let keep = self.delim.len() - 1;
        if self.pending.len() > keep {
            let out = self.pending.split_to(self.pending.len() - keep);
            if let Some(b) = self.pass(out) {
                return Some(Poll::Ready(Some(Ok(b))));
            }
        }
        None
    }
}

impl Stream for FileBody {
    type Item = Result<Bytes, s3s::StdError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            let (min, max) = this.range;
            if this.size > max && (this.found || this.size > max.saturating_add(MAX_COUNTED_PAST)) {
                return this.fail(FileError::TooLarge {
                    size: this.size,
                    max,
                });
            }
            if !this.found {
                if let Some(p) = this.next_pending() {
                    return p;
                }
                if this.found {
                    continue;
                }
            }
            match this.body.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(Err(e))) => {
                    this.finished = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(Some(Ok(b))) if this.found => {
                    this.trailing += b.len();
                    if this.trailing > MAX_TRAILING {
                        this.finished = true;
                    }
                }
                Poll::Ready(Some(Ok(b))) => this.pending.extend_from_slice(&b),
                Poll::Ready(None) if !this.found => return this.fail(FileError::Unterminated),
                Poll::Ready(None) if this.size < min => {
                    return this.fail(FileError::TooSmall {
                        size: this.size,
                        min,
                    });
                }
                Poll::Ready(None) => this.finished = true,
            }
        }
    }
}

impl s3s::stream::ByteStream for FileBody {}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
