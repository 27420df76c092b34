//! Install from an extents file: clone the aligned extents, write the
//! packed ones, several files at a time.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use cowkit_archive::files::Kind;
use cowkit_extents::format::Kind as ExtentKind;
use cowkit_extents::open::{Content, ExtentsFile};
use cowkit_fs::root::Root;
use cowkit_fs::{Copier, Handle, IoError};

use crate::target::Target;
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
    let mut target = Target::new(root, owners, progress, opts.gate.as_ref());
    let places = target.prepare(files, &opts.rename)?;

    // One work item per regular file, or per hardlink set.
    let items: Vec<&[u32]> = files
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
        .collect();

    // Threads take batches of files that are next to each other in the
    // header (mostly one directory), so that they seldom wait for the
    // same directory's lock.
    let batches: Vec<&[&[u32]]> = items.chunks(64).collect();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let threads = opts.threads.clamp(1, items.len().div_ceil(64).max(1));
    // Extents aligned below the destination's block size cannot be
    // cloned: align to the larger, so that they are found misaligned and
    // written (and reported) instead of failing the clone.
    let dest_block = cowkit_fs::align::block_size(root.fd()).unwrap_or(4096);
    let block = u64::from(x.footer().block_size).max(dest_block);
    let work_items = |take: &mut dyn FnMut() -> Option<usize>| -> Result<Summary> {
        let mut s = Summary::default();
        let mut copier = Copier::new(opts.chain)
            .with_block_size(block)
            .with_tail_clone(opts.clone_tail);
        let mut buf = Vec::new();
        // The packed (written) contents of a batch's files sit next to
        // each other in the extents file: one read for them all when they
        // span at most 4 MiB, instead of one per file.
        let mut packed: (u64, Vec<u8>) = (0, Vec::new());
        while let Some(b) = take() {
            let span = batches[b]
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
            packed.1.clear();
            if let Some((start, end)) = span.filter(|(a, z)| z - a <= 4 << 20) {
                packed.0 = start;
                packed.1.resize((end - start) as usize, 0);
                x.file()
                    .read_exact_at(&mut packed.1, start)
                    .map_err(|source| {
                        Error::from(IoError::new("read", x.path().to_path_buf(), source))
                    })?;
            }
            for &set in batches[b] {
                let first = &files.files[set[0] as usize];
                let place = places[set[0] as usize].as_ref().expect("not a ghost");
                target.regular(first, place, |dst, dst_path| {
                    match x.content(first.index) {
                        None | Some(Content::Empty) => {}
                        Some(Content::Extent(e)) if e.kind == ExtentKind::Clone => {
                            let done = copier.copy_range(
                                Handle::new(x.file(), x.path()),
                                e.offset,
                                Handle::new(dst, dst_path),
                                0,
                                e.length,
                            )?;
                            s.tally.record(&done);
                        }
                        Some(Content::Extent(e)) => {
                            let in_packed = e
                                .offset
                                .checked_sub(packed.0)
                                .map(|at| (at as usize, (at + e.length) as usize))
                                .and_then(|(a, z)| packed.1.get(a..z));
                            let data = match in_packed {
                                Some(d) => d,
                                _ => {
                                    buf.resize(e.length as usize, 0);
                                    x.file().read_exact_at(&mut buf, e.offset).map_err(
                                        |source| {
                                            Error::from(IoError::new(
                                                "read",
                                                x.path().to_path_buf(),
                                                source,
                                            ))
                                        },
                                    )?;
                                    &buf[..]
                                }
                            };
                            (&*dst).write_all(data).map_err(|source| {
                                Error::from(IoError::new("write", dst_path.to_path_buf(), source))
                            })?;
                            s.tally.record_written(e.length);
                        }
                    }
                    if opts.verify {
                        crate::verify::check_new(dst, dst_path, first, files.algo)?;
                        // Its hardlinks share the content checked.
                        s.verified += set.len() as u64;
                    }
                    Ok(())
                })?;
                progress.on_bytes(first.size);
                s.files += 1;
                progress.on_file();
                for &m in &set[1..] {
                    target.hardlink(place, places[m as usize].as_ref().expect("not a ghost"))?;
                    s.files += 1;
                    progress.on_file();
                    s.hardlinks += 1;
                }
            }
        }
        Ok(s)
    };

    let work = || -> Result<Summary> {
        let r = work_items(&mut || {
            if failed.load(Ordering::Relaxed) {
                return None;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            (i < batches.len()).then_some(i)
        });
        if r.is_err() {
            failed.store(true, Ordering::Relaxed);
        }
        r
    };
    let mut summary = Summary::default();
    if threads == 1 {
        summary.add(work()?);
    } else {
        let results: Vec<Result<Summary>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("install worker panicked"))
                .collect()
        });
        for r in results {
            summary.add(r?);
        }
    }
    finish(&mut target, files, &places, opts, &mut summary, true)?;
    Ok(summary)
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
