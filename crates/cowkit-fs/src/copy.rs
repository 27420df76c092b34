//! The clone → `copy_file_range` → read/write fallback chain.
//!
//! A [`Copier`] is a small state machine, meant to be used for one
//! source/destination *pair of filesystems* (create one per pair):
//!
//! ```text
//!   untried(Clone) ──refused──▶ untried(CopyFileRange) ──refused──▶ untried(ReadWrite)
//!        │ worked                       │ worked                          │ worked
//!        ▼                              ▼                                 ▼
//!   confirmed(Clone)            confirmed(CopyFileRange)          confirmed(ReadWrite)
//! ```
//!
//! A method is *refused* when its first system call fails with an errno that
//! means "not here" (`EOPNOTSUPP`, `EXDEV`, `EINVAL`, `ENOTTY`, `ENOSYS`, and
//! `EBADF` for `copy_file_range`), before it has moved a byte. Only an
//! untried method falls back; once a method has worked, a later refusal is an
//! error ([`Error::ConfirmedMethodFailed`]), never a silent switch. Errors
//! that are not refusals (`ENOSPC`, `EIO`, …) are errors at any time.
//!
//! Every call returns a [`Copied`]: the method that moved the data, each
//! fallback taken and why, and the bytes moved per method.
//!
//! Holes are kept: `copy_file_range` and read/write copy only the data
//! segments found with `SEEK_DATA`/`SEEK_HOLE`, and clones share holes as
//! they are.

use std::collections::BTreeMap;
use std::fmt;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use rustix::fs::SeekFrom;
use rustix::io::Errno;
use serde::Serialize;

use crate::align::{align_down, align_up, block_size};
use crate::error::{io, Error, Result};
use crate::sys::clone::ficlonerange;

pub use crate::method::{errno_name, Method, Reason};

/// One step down the chain: the method that was refused, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Fallback {
    /// The method that was not used.
    pub from: Method,
    /// Why.
    pub reason: Reason,
    /// The method stays confirmed for the pair; only this file went one
    /// method down ([`Copier::with_retry_down`]).
    pub this_file_only: bool,
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scope = if self.this_file_only {
            " for single files"
        } else {
            ""
        };
        write!(f, "{} refused{scope}: {}", self.from, self.reason)
    }
}

/// What many copies did, in the shape every summary of cowkit uses
/// (`install`, `cp`): bytes per method, files per method, and each
/// fallback with the number of files it affected.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// File data moved, per method.
    pub bytes: Bytes,
    /// Files whose data each method moved.
    pub files_by_method: BTreeMap<Method, u64>,
    /// Fallbacks taken (their [`Fallback`] text), with how many files each.
    pub fallbacks: BTreeMap<String, u64>,
}

impl Tally {
    /// Count one copy.
    pub fn record(&mut self, c: &Copied) {
        self.bytes.add(c.bytes);
        *self.files_by_method.entry(c.method).or_default() += 1;
        for f in &c.fallbacks {
            *self.fallbacks.entry(f.to_string()).or_default() += 1;
        }
    }

    /// Count one file of `n` bytes written through user space by the
    /// caller (small files, streamed content).
    pub fn record_written(&mut self, n: u64) {
        self.bytes.written += n;
        *self.files_by_method.entry(Method::ReadWrite).or_default() += 1;
    }

    /// Add `other` to `self`.
    pub fn add(&mut self, other: &Tally) {
        self.bytes.add(other.bytes);
        for (k, v) in &other.files_by_method {
            *self.files_by_method.entry(*k).or_default() += v;
        }
        for (k, v) in &other.fallbacks {
            *self.fallbacks.entry(k.clone()).or_default() += v;
        }
    }
}

/// Which methods a [`Copier`] may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chain {
    first: Method,
    fallback: bool,
}

impl Chain {
    /// Clone, then `copy_file_range`, then read/write.
    pub const AUTO: Chain = Chain {
        first: Method::Clone,
        fallback: true,
    };

    /// Only `method`; a refusal is an error ([`Error::MethodRefused`]).
    pub fn only(method: Method) -> Chain {
        Chain {
            first: method,
            fallback: false,
        }
    }

    /// Start at `method` and fall back down the chain from there.
    pub fn starting_at(method: Method) -> Chain {
        Chain {
            first: method,
            fallback: true,
        }
    }

    /// The first method tried.
    pub fn first(self) -> Method {
        self.first
    }
}

impl Default for Chain {
    fn default() -> Self {
        Chain::AUTO
    }
}

/// Bytes moved, per method.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Bytes {
    /// Shared by `FICLONE`/`FICLONERANGE`.
    pub cloned: u64,
    /// Moved by `copy_file_range` (the filesystem may have shared them).
    pub copied: u64,
    /// Written from a user-space buffer.
    pub written: u64,
}

impl Bytes {
    /// The sum over all methods.
    pub fn total(&self) -> u64 {
        self.cloned + self.copied + self.written
    }

    /// Add `other` to `self`.
    pub fn add(&mut self, other: Bytes) {
        self.cloned += other.cloned;
        self.copied += other.copied;
        self.written += other.written;
    }
}

/// The outcome of one copy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Copied {
    /// The method that moved the data (for a file without data, the method
    /// the chain was at).
    pub method: Method,
    /// Methods refused during this call, in order, with the reason.
    pub fallbacks: Vec<Fallback>,
    /// Bytes per method.
    pub bytes: Bytes,
}

/// An open file and the path used in error messages about it.
#[derive(Clone, Copy, Debug)]
pub struct Handle<'a> {
    fd: BorrowedFd<'a>,
    path: &'a Path,
}

impl<'a> Handle<'a> {
    /// Borrow `file`, naming it `path` in errors.
    pub fn new<F: AsFd>(file: &'a F, path: &'a Path) -> Self {
        Handle {
            fd: file.as_fd(),
            path,
        }
    }

    /// The path used in errors.
    pub fn path(&self) -> &'a Path {
        self.path
    }
}

impl AsFd for Handle<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd
    }
}

/// One range to move.
#[derive(Clone, Copy)]
struct Job<'a> {
    src: Handle<'a>,
    dst: Handle<'a>,
    src_off: u64,
    dst_off: u64,
    len: u64,
    src_size: u64,
    /// Destination size before this call.
    dst_size: u64,
    /// The source may have holes (fewer blocks allocated than its size).
    sparse: bool,
    /// Copy the whole file with `FICLONE` rather than a range.
    whole_file: bool,
}

/// Why an attempt did not complete.
enum Failure {
    /// The method is not possible here; nothing was moved by it.
    Refused(Reason),
    /// A real error.
    Fatal(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Fatal(e)
    }
}

/// Moves file data by the best method the kernel allows; see the module
/// documentation for the state machine.
#[derive(Debug)]
pub struct Copier {
    chain: Chain,
    current: Method,
    confirmed: bool,
    block_size: Option<u64>,
    clone_tail: bool,
    retry_down: bool,
    buf: Vec<u8>,
}

/// Size of the read/write buffer.
const BUF_SIZE: usize = 1 << 20;
/// Largest single `copy_file_range` request.
const CFR_CHUNK: u64 = 1 << 30;

impl Copier {
    /// A copier at the start of `chain`.
    pub fn new(chain: Chain) -> Self {
        Copier {
            chain,
            current: chain.first,
            confirmed: false,
            block_size: None,
            clone_tail: true,
            retry_down: false,
            buf: Vec::new(),
        }
    }

    /// Whether a refusal of the confirmed method is retried for that one
    /// file from the next method down (off by default: then it is
    /// [`Error::ConfirmedMethodFailed`]). For walks over many files of one
    /// filesystem pair where single files may refuse what the others take:
    /// a NOCOW file on Btrfs, a file on another mount inside the tree. The
    /// pair's confirmed method stays; the retry is reported as a
    /// [`Fallback`] with `this_file_only`. Only allowed when the chain may
    /// fall back.
    pub fn with_retry_down(mut self, yes: bool) -> Self {
        self.retry_down = yes;
        self
    }

    /// Use `block_size` for clone alignment instead of asking `fstatfs` on
    /// each range copy.
    pub fn with_block_size(mut self, block_size: u64) -> Self {
        assert!(
            block_size.is_power_of_two(),
            "block size must be a power of two"
        );
        self.block_size = Some(block_size);
        self
    }

    /// Whether a partial last block is cloned rounded up and the
    /// destination truncated back (the default), or written. On XFS the
    /// truncate must unshare the block it cuts, which costs more than
    /// writing the tail; see `bench/results/` for the measurement.
    pub fn with_tail_clone(mut self, yes: bool) -> Self {
        self.clone_tail = yes;
        self
    }

    /// The method that has worked for this pair, if one has.
    pub fn confirmed(&self) -> Option<Method> {
        self.confirmed.then_some(self.current)
    }

    /// The method the next copy will try first.
    pub fn current(&self) -> Method {
        self.current
    }

    /// Make `dst` a copy of all of `src`: same bytes, same size, holes kept.
    /// Whatever `dst` held before is discarded.
    pub fn copy_file(&mut self, src: Handle<'_>, dst: Handle<'_>) -> Result<Copied> {
        let st = rustix::fs::fstat(src).map_err(|e| io("stat", src.path, e))?;
        let dst_size = rustix::fs::fstat(dst)
            .map_err(|e| io("stat", dst.path, e))?
            .st_size as u64;
        if dst_size != 0 {
            rustix::fs::ftruncate(dst, 0).map_err(|e| io("truncate", dst.path, e))?;
        }
        self.copy_new_file(src, dst, st.st_size as u64, st.st_blocks as u64)
    }

    /// [`Copier::copy_file`] into a new, empty `dst`, when the caller
    /// already knows the source's size and its allocated size (from a
    /// `stat` it made anyway): no `fstat` of either file. `blocks` is
    /// `st_blocks` (512-byte units), which tells whether the source may
    /// have holes.
    pub fn copy_new_file(
        &mut self,
        src: Handle<'_>,
        dst: Handle<'_>,
        size: u64,
        blocks: u64,
    ) -> Result<Copied> {
        self.run(Job {
            src,
            dst,
            src_off: 0,
            dst_off: 0,
            len: size,
            src_size: size,
            dst_size: 0,
            sparse: blocks * 512 < size,
            whole_file: true,
        })
    }

    /// Copy `len` bytes of `src` from `src_off` into `dst` at `dst_off`.
    ///
    /// The aligned part is cloned when the chain is at [`Method::Clone`];
    /// the unaligned head and tail (less than a block each) are written.
    /// When the range ends at the end of `dst`, a partial last block is
    /// cloned whole and `dst` truncated back, the extents-file install
    /// pattern. Fails with [`Error::UnexpectedEof`] when `src` is shorter
    /// than the range.
    pub fn copy_range(
        &mut self,
        src: Handle<'_>,
        src_off: u64,
        dst: Handle<'_>,
        dst_off: u64,
        len: u64,
    ) -> Result<Copied> {
        let st = rustix::fs::fstat(src).map_err(|e| io("stat", src.path, e))?;
        let src_size = st.st_size as u64;
        let end = src_off
            .checked_add(len)
            .ok_or_else(|| Error::UnexpectedEof {
                path: src.path.to_path_buf(),
                at: src_size,
                wanted: u64::MAX,
            })?;
        if end > src_size {
            return Err(Error::UnexpectedEof {
                path: src.path.to_path_buf(),
                at: src_size,
                wanted: end,
            });
        }
        let dst_size = rustix::fs::fstat(dst)
            .map_err(|e| io("stat", dst.path, e))?
            .st_size as u64;
        self.run(Job {
            src,
            dst,
            src_off,
            dst_off,
            len,
            src_size,
            dst_size,
            sparse: (st.st_blocks as u64) * 512 < src_size,
            whole_file: false,
        })
    }

    /// The state machine: try the current method, fall back on refusal
    /// while untried, fail on refusal once confirmed.
    fn run(&mut self, job: Job<'_>) -> Result<Copied> {
        let mut fallbacks = Vec::new();
        loop {
            let method = self.current;
            let attempt = match method {
                Method::Clone => self.clone_job(&job, &mut fallbacks),
                Method::CopyFileRange => self.cfr_job(&job),
                Method::ReadWrite => self.rw_job(&job).map_err(Failure::Fatal),
            };
            match attempt {
                Ok(bytes) => {
                    self.finish_size(&job)?;
                    let method = if bytes.cloned > 0 {
                        Method::Clone
                    } else if bytes.copied > 0 {
                        Method::CopyFileRange
                    } else if bytes.written > 0 {
                        Method::ReadWrite
                    } else {
                        method
                    };
                    return Ok(Copied {
                        method,
                        fallbacks,
                        bytes,
                    });
                }
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Refused(reason)) => {
                    let (src, dst) = (job.src.path.to_path_buf(), job.dst.path.to_path_buf());
                    if self.confirmed {
                        if let Some(next) = method
                            .next()
                            .filter(|_| self.retry_down && self.chain.fallback)
                        {
                            log::debug!(
                                "{method} refused for {} alone ({reason}); copying it by {next}",
                                job.src.path.display()
                            );
                            let mut one = Copier {
                                chain: Chain::starting_at(next),
                                current: next,
                                confirmed: false,
                                block_size: self.block_size,
                                clone_tail: self.clone_tail,
                                retry_down: false,
                                buf: std::mem::take(&mut self.buf),
                            };
                            let done = one.run(job);
                            self.buf = one.buf;
                            let mut done = done?;
                            fallbacks.push(Fallback {
                                from: method,
                                reason,
                                this_file_only: true,
                            });
                            fallbacks.append(&mut done.fallbacks);
                            done.fallbacks = fallbacks;
                            return Ok(done);
                        }
                        return Err(Error::ConfirmedMethodFailed {
                            method,
                            src,
                            dst,
                            reason,
                        });
                    }
                    match method.next().filter(|_| self.chain.fallback) {
                        Some(next) => {
                            log::debug!(
                                "{method} refused from {} to {} ({reason}); falling back to {next}",
                                job.src.path.display(),
                                job.dst.path.display()
                            );
                            fallbacks.push(Fallback {
                                from: method,
                                reason,
                                this_file_only: false,
                            });
                            self.current = next;
                        }
                        None => {
                            return Err(Error::MethodRefused {
                                method,
                                src,
                                dst,
                                reason,
                            })
                        }
                    }
                }
            }
        }
    }

    /// A refusal while untried, or a transfer error.
    fn classify(&self, method: Method, job: &Job<'_>, e: Errno) -> Failure {
        let refusal = matches!(
            e,
            Errno::OPNOTSUPP | Errno::XDEV | Errno::INVAL | Errno::NOTTY | Errno::NOSYS
        ) || (method == Method::CopyFileRange && e == Errno::BADF);
        if refusal {
            Failure::Refused(Reason::Errno(e))
        } else {
            Failure::Fatal(Error::Transfer {
                method,
                src: job.src.path.to_path_buf(),
                dst: job.dst.path.to_path_buf(),
                source: e.into(),
            })
        }
    }

    fn clone_job(
        &mut self,
        job: &Job<'_>,
        fallbacks: &mut Vec<Fallback>,
    ) -> Result<Bytes, Failure> {
        if job.whole_file {
            return match rustix::fs::ioctl_ficlone(job.dst, job.src) {
                Ok(()) => {
                    self.confirmed = true;
                    Ok(Bytes {
                        cloned: job.len,
                        ..Bytes::default()
                    })
                }
                Err(e) => Err(self.classify(Method::Clone, job, e)),
            };
        }
        if job.len == 0 {
            return Ok(Bytes::default());
        }
        let bs = match self.block_size {
            Some(bs) => bs,
            None => block_size(job.dst).map_err(|e| io("statfs", job.dst.path, e))?,
        };
        if job.src_off % bs != job.dst_off % bs {
            // No block can be shared: this range goes through user space,
            // without deciding anything about the pair.
            fallbacks.push(Fallback {
                from: Method::Clone,
                reason: Reason::Misaligned { block_size: bs },
                this_file_only: false,
            });
            return self.rw_job(job).map_err(Failure::Fatal);
        }
        let end = job.src_off + job.len;
        let mid_start = align_up(job.src_off, bs).min(end);
        let mid_end = align_down(end, bs).max(mid_start);
        let dst_end = job.dst_off + job.len;
        // A partial last block can be cloned when nothing in `dst` lies after
        // the range and the source has the block (or ends right there).
        let tail_clonable = self.clone_tail
            && end > mid_end
            && dst_end >= job.dst_size
            && (end == job.src_size || align_up(end, bs) <= job.src_size);
        let clone_end = match (tail_clonable, end == job.src_size) {
            (true, true) => end,
            (true, false) => align_up(end, bs),
            (false, _) => mid_end,
        };
        let mut bytes = Bytes::default();
        if clone_end > mid_start {
            let at = job.dst_off + (mid_start - job.src_off);
            if let Err(e) = ficlonerange(job.src, mid_start, clone_end - mid_start, job.dst, at) {
                return Err(self.classify(Method::Clone, job, e));
            }
            self.confirmed = true;
            if clone_end > end {
                // The clone ran past the range into the source's padding.
                rustix::fs::ftruncate(job.dst, dst_end)
                    .map_err(|e| io("truncate", job.dst.path, e))?;
            }
            bytes.cloned = clone_end.min(end) - mid_start;
        }
        let head = Job {
            len: mid_start - job.src_off,
            ..*job
        };
        bytes.written += self.rw_job(&head)?.written;
        if !tail_clonable && end > mid_end {
            let tail = Job {
                src_off: mid_end,
                dst_off: job.dst_off + (mid_end - job.src_off),
                len: end - mid_end,
                ..*job
            };
            bytes.written += self.rw_job(&tail)?.written;
        }
        Ok(bytes)
    }

    fn cfr_job(&mut self, job: &Job<'_>) -> Result<Bytes, Failure> {
        let mut copied = 0;
        for (start, seg_len) in data_segments(job)? {
            let mut off_in = start;
            let mut off_out = job.dst_off + (start - job.src_off);
            let seg_end = start + seg_len;
            while off_in < seg_end {
                let want = (seg_end - off_in).min(CFR_CHUNK) as usize;
                match rustix::fs::copy_file_range(
                    job.src,
                    Some(&mut off_in),
                    job.dst,
                    Some(&mut off_out),
                    want,
                ) {
                    Ok(0) if !self.confirmed => return Err(Failure::Refused(Reason::ShortCopy)),
                    Ok(0) => {
                        return Err(Failure::Fatal(Error::UnexpectedEof {
                            path: job.src.path.to_path_buf(),
                            at: off_in,
                            wanted: seg_end,
                        }))
                    }
                    Ok(n) => {
                        self.confirmed = true;
                        copied += n as u64;
                    }
                    Err(e) => return Err(self.classify(Method::CopyFileRange, job, e)),
                }
            }
        }
        Ok(Bytes {
            copied,
            ..Bytes::default()
        })
    }

    fn rw_job(&mut self, job: &Job<'_>) -> Result<Bytes> {
        if job.len == 0 {
            return Ok(Bytes::default());
        }
        if self.buf.is_empty() {
            self.buf = vec![0; BUF_SIZE];
        }
        let mut written = 0;
        for (start, seg_len) in data_segments(job)? {
            let seg_end = start + seg_len;
            let mut off = start;
            while off < seg_end {
                let want = (seg_end - off).min(self.buf.len() as u64) as usize;
                let n = match rustix::io::pread(job.src, &mut self.buf[..want], off) {
                    Ok(0) => {
                        return Err(Error::UnexpectedEof {
                            path: job.src.path.to_path_buf(),
                            at: off,
                            wanted: seg_end,
                        })
                    }
                    Ok(n) => n,
                    Err(Errno::INTR) => continue,
                    Err(e) => return Err(io("read", job.src.path, e)),
                };
                let mut done = 0;
                while done < n {
                    let at = job.dst_off + (off - job.src_off) + done as u64;
                    match rustix::io::pwrite(job.dst, &self.buf[done..n], at) {
                        Ok(0) => return Err(io("write", job.dst.path, Errno::NOSPC)),
                        Ok(w) => done += w,
                        Err(Errno::INTR) => {}
                        Err(e) => return Err(io("write", job.dst.path, e)),
                    }
                }
                off += n as u64;
                written += n as u64;
            }
        }
        if self.current == Method::ReadWrite {
            self.confirmed = true;
        }
        Ok(Bytes {
            written,
            ..Bytes::default()
        })
    }

    /// Give `dst` its full size when the range ended in a hole. A dense
    /// source had every byte written or cloned, so no check is needed.
    fn finish_size(&self, job: &Job<'_>) -> Result<()> {
        let dst_end = job.dst_off + job.len;
        if !job.sparse || dst_end <= job.dst_size {
            return Ok(());
        }
        let now = rustix::fs::fstat(job.dst)
            .map_err(|e| io("stat", job.dst.path, e))?
            .st_size as u64;
        if now < dst_end {
            rustix::fs::ftruncate(job.dst, dst_end).map_err(|e| io("truncate", job.dst.path, e))?;
        }
        Ok(())
    }
}

/// The data segments of `job`'s source range, as `(offset, len)`; holes are
/// left out. A file that is not sparse is one segment without a system call.
fn data_segments(job: &Job<'_>) -> Result<Vec<(u64, u64)>> {
    let (start, end) = (job.src_off, job.src_off + job.len);
    if start == end {
        return Ok(Vec::new());
    }
    if !job.sparse {
        return Ok(vec![(start, end - start)]);
    }
    let mut segs = Vec::new();
    let mut pos = start;
    while pos < end {
        let data = match rustix::fs::seek(job.src, SeekFrom::Data(pos)) {
            Ok(d) => d,
            Err(Errno::NXIO) => break,
            Err(Errno::INVAL) if segs.is_empty() => return Ok(vec![(start, end - start)]),
            Err(e) => return Err(io("seek in", job.src.path, e)),
        };
        if data >= end {
            break;
        }
        let hole = match rustix::fs::seek(job.src, SeekFrom::Hole(data)) {
            Ok(h) => h.min(end),
            Err(e) => return Err(io("seek in", job.src.path, e)),
        };
        segs.push((data, hole - data));
        pos = hole;
    }
    Ok(segs)
}
