//! Install from an extents file: clone the aligned extents, write the
//! packed ones, several files at a time.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use cowkit_archive::files::{FileInfo, FileList, Kind};
use cowkit_extents::format::Kind as ExtentKind;
use cowkit_extents::open::{Content, ExtentsFile};
use cowkit_fs::root::Root;
use cowkit_fs::{Copier, Handle, IoError};

use crate::target::{Place, Target};
use crate::{finish, Error, Options, Owners, Progress, Result, Summary};

pub(crate) fn install(
    root: &Root,
    owners: &Owners,
    file: File,
    path: &Path,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Summary> {
    if !opts.verify {
        trusted(&file, path)?;
    }
    let x = ExtentsFile::open(file, path)?;
    install_open(root, owners, &x, path, opts, progress)
}

/// [`install`] from an extents file opened (and checked) already, e.g.
/// when its header was read for the transaction's check.
pub(crate) fn install_open(
    root: &Root,
    owners: &Owners,
    x: &ExtentsFile,
    path: &Path,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Summary> {
    if !opts.verify {
        trusted(x.file(), path)?;
    }
    crate::check_expected(x.package(), path, opts)?;
    let files = x.files();
    let mut target =
        Target::new(root, owners, progress, opts.gate.as_ref()).without_caps(opts.nocaps);
    let places = target.prepare(files, &opts.rename, &opts.skip)?;
    let items = work_items(files);
    // Threads take batches of files that are next to each other in the
    // header (mostly one directory), so that they seldom wait for the
    // same directory's lock.
    let batches: Vec<&[&[u32]]> = items.chunks(BATCH).collect();
    // Extents aligned below the destination's block size cannot be
    // cloned: align to the larger, so that they are found misaligned and
    // written (and reported) instead of failing the clone.
    let dest_block = cowkit_fs::align::block_size(root.fd()).unwrap_or(4096);
    let job = Job {
        x,
        files,
        places: &places,
        target: &target,
        opts,
        progress,
        block: u64::from(x.footer().block_size).max(dest_block),
    };
    let threads = opts.threads.clamp(1, batches.len().max(1));
    let mut summary = in_parallel(threads, batches.len(), |take| {
        Worker::new(&job).run(&batches, take)
    })?;
    finish(&mut target, files, &places, opts, &mut summary, true)?;
    Ok(summary)
}

/// Files per batch a thread takes.
const BATCH: usize = 64;

/// The most bytes of packed contents read at once for a batch.
const PACKED_MAX: u64 = 4 << 20;

/// One work item per regular file, or per hardlink set (its indexes, the
/// first the one whose content is written).
fn work_items(files: &FileList) -> Vec<&[u32]> {
    files
        .files
        .iter()
        .filter(|f| f.kind == Kind::Regular && !f.ghost)
        .filter_map(|f| {
            let set = files.link_set(f);
            match set.first() {
                None => Some(std::slice::from_ref(&f.index)),
                Some(&first) if first == f.index => Some(set),
                Some(_) => None,
            }
        })
        .collect()
}

/// Run `work` on `threads` threads (on this one when 1), each taking the
/// next of `n` batches until none is left or a thread has failed: the sum
/// of their summaries, or the first error.
fn in_parallel(
    threads: usize,
    n: usize,
    work: impl Fn(&mut dyn FnMut() -> Option<usize>) -> Result<Summary> + Sync,
) -> Result<Summary> {
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let one = || -> Result<Summary> {
        let r = work(&mut || {
            if failed.load(Ordering::Relaxed) {
                return None;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            (i < n).then_some(i)
        });
        if r.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        r
    };
    let mut summary = Summary::default();
    if threads == 1 {
        summary.add(one()?);
    } else {
        let results: Vec<Result<Summary>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads).map(|_| scope.spawn(one)).collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("install worker panicked"))
                .collect()
        });
        for r in results {
            summary.add(r?);
        }
    }
    Ok(summary)
}

/// What every thread of one install shares.
struct Job<'a, 't> {
    x: &'a ExtentsFile,
    files: &'a FileList,
    places: &'a [Option<Place>],
    target: &'a Target<'t>,
    opts: &'a Options,
    progress: &'a dyn Progress,
    /// The block size clones are aligned to.
    block: u64,
}

/// One thread's copier, buffers and summary.
struct Worker<'j, 'a, 't> {
    job: &'j Job<'a, 't>,
    copier: Copier,
    buf: Vec<u8>,
    packed: Packed,
    s: Summary,
}

impl<'j, 'a, 't> Worker<'j, 'a, 't> {
    fn new(job: &'j Job<'a, 't>) -> Self {
        Worker {
            job,
            copier: Copier::new(job.opts.chain)
                .with_block_size(job.block)
                .with_tail_clone(job.opts.clone_tail),
            buf: Vec::new(),
            packed: Packed::default(),
            s: Summary::default(),
        }
    }

    /// Install the batches `take` hands out until it says none is left.
    fn run(
        mut self,
        batches: &[&[&[u32]]],
        take: &mut dyn FnMut() -> Option<usize>,
    ) -> Result<Summary> {
        while let Some(b) = take() {
            self.batch(batches[b])?;
        }
        Ok(self.s)
    }

    /// Each file of `batch` created with its content, then its hardlinks.
    fn batch(&mut self, batch: &[&[u32]]) -> Result<()> {
        let Job {
            x,
            files,
            places,
            target,
            progress,
            ..
        } = *self.job;
        self.packed.load(x, batch)?;
        for &set in batch {
            // The content is the set's first file's; it goes to the first
            // member that is installed (rpm's actions may skip some).
            let first = &files.files[set[0] as usize];
            let live: Vec<u32> = set
                .iter()
                .copied()
                .filter(|&m| places[m as usize].is_some())
                .collect();
            let Some((&head, rest)) = live.split_first() else {
                continue;
            };
            let place = places[head as usize].as_ref().expect("installed");
            // rpm's touch: the file on disk is the package's already.
            if rest.is_empty()
                && self.job.opts.touch.contains(&head)
                && target.touch(&files.files[head as usize], place)?
            {
                progress.on_bytes(first.size);
                self.s.files += 1;
                self.s.touched += 1;
                progress.on_file();
                continue;
            }
            target.regular(&files.files[head as usize], place, |dst, dst_path| {
                self.fill(first, set, dst, dst_path)
            })?;
            progress.on_bytes(first.size);
            self.s.files += 1;
            progress.on_file();
            for &m in rest {
                target.hardlink(place, places[m as usize].as_ref().expect("installed"))?;
                self.s.files += 1;
                progress.on_file();
                self.s.hardlinks += 1;
            }
        }
        Ok(())
    }

    /// The content of `first` (the first of the hardlink set `set`) into
    /// `dst`: cloned, or written from the packed bytes; then checked with
    /// `--verify`.
    fn fill(&mut self, first: &FileInfo, set: &[u32], dst: &File, dst_path: &Path) -> Result<()> {
        let x = self.job.x;
        match x.content(first.index) {
            None | Some(Content::Empty) => {}
            Some(Content::Extent(e)) if e.kind == ExtentKind::Clone => {
                let done = self.copier.copy_range(
                    Handle::new(x.file(), x.path()),
                    e.offset,
                    Handle::new(dst, dst_path),
                    0,
                    e.length,
                )?;
                self.s.tally.record(&done);
            }
            Some(Content::Extent(e)) => {
                let data = match self.packed.get(e.offset, e.length) {
                    Some(d) => d,
                    None => {
                        self.buf.resize(e.length as usize, 0);
                        read_at(x, &mut self.buf, e.offset)?;
                        &self.buf[..]
                    }
                };
                (&*dst).write_all(data).map_err(|source| {
                    Error::from(IoError::new("write", dst_path.to_path_buf(), source))
                })?;
                self.s.tally.record_written(e.length);
            }
        }
        if self.job.opts.verify {
            crate::verify::check_new(dst, dst_path, first, self.job.files.algo)?;
            // Its hardlinks share the content checked.
            self.s.verified += set.len() as u64;
        }
        Ok(())
    }
}

/// The packed (written) contents of a batch's files, which sit next to
/// each other in the extents file: one read for them all when they span
/// at most [`PACKED_MAX`] bytes, instead of one per file.
#[derive(Default)]
struct Packed {
    start: u64,
    bytes: Vec<u8>,
}

impl Packed {
    /// Read the packed contents of `batch`'s files, if they are close
    /// enough; otherwise hold none.
    fn load(&mut self, x: &ExtentsFile, batch: &[&[u32]]) -> Result<()> {
        let span = batch
            .iter()
            .filter_map(|set| match x.content(set[0]) {
                Some(Content::Extent(e)) if e.kind != ExtentKind::Clone => {
                    Some((e.offset, e.offset + e.length))
                }
                _ => None,
            })
            .fold(None, |acc: Option<(u64, u64)>, (a, z)| match acc {
                None => Some((a, z)),
                Some((a0, z0)) => Some((a0.min(a), z0.max(z))),
            });
        self.bytes.clear();
        if let Some((start, end)) = span.filter(|(a, z)| z - a <= PACKED_MAX) {
            self.start = start;
            self.bytes.resize((end - start) as usize, 0);
            read_at(x, &mut self.bytes, start)?;
        }
        Ok(())
    }

    /// The `len` bytes at `offset` of the extents file, if held.
    fn get(&self, offset: u64, len: u64) -> Option<&[u8]> {
        offset
            .checked_sub(self.start)
            .map(|at| (at as usize, (at + len) as usize))
            .and_then(|(a, z)| self.bytes.get(a..z))
    }
}

/// `buf.len()` bytes of the extents file at `at`.
fn read_at(x: &ExtentsFile, buf: &mut [u8], at: u64) -> Result<()> {
    x.file()
        .read_exact_at(buf, at)
        .map_err(|source| Error::from(IoError::new("read", x.path().to_path_buf(), source)))
}

/// Refuse an extents file that someone other than root or this user could
/// have changed: without `--verify`, its bytes are installed as they are.
fn trusted(file: &File, path: &Path) -> Result<()> {
    let st = rustix::fs::fstat(file)
        .map_err(|e| Error::from(IoError::new("stat", path.to_path_buf(), e)))?;
    let me = rustix::process::geteuid().as_raw();
    let my_group = rustix::process::getegid().as_raw();
    let why = if st.st_uid != 0 && st.st_uid != me {
        Some(format!("belongs to uid {}", st.st_uid))
    } else if st.st_mode & 0o002 != 0 {
        Some("is writable by everyone".to_string())
    } else if st.st_mode & 0o020 != 0 && st.st_gid != 0 && st.st_gid != my_group {
        Some(format!("is writable by group {}", st.st_gid))
    } else {
        None
    };
    match why {
        None => Ok(()),
        Some(why) => Err(Error::UntrustedExtents {
            path: path.to_path_buf(),
            why,
        }),
    }
}
