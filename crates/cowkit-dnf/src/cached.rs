//! Packages dnf downloaded, into the cache: each looked up by its
//! verified header digest, the misses (and damaged entries) transcoded in
//! parallel by confined workers straight into new entries, each named only
//! once complete (concurrent builds are safe).

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use cowkit_extents::cache::{Cache, Lookup};
use cowkit_extents::confined;

use crate::error::{Error, RunError};
use crate::request::{Events, Note, Summary, WorkerCommand};

/// Look every package of `rpms` up in the cache by its header digest and
/// transcode the misses (and damaged entries) into it, `jobs` at a time;
/// the cache paths, in order. Hits and misses are counted in `summary`.
pub fn lookup_and_transcode(
    cache: &Cache,
    rpms: &[PathBuf],
    jobs: usize,
    worker: WorkerCommand,
    summary: &mut Summary,
    events: &dyn Events,
) -> Result<Vec<PathBuf>, RunError> {
    let mut cached = Vec::with_capacity(rpms.len());
    let mut todo: Vec<(PathBuf, String)> = Vec::new();
    for rpm in rpms {
        let file = std::fs::File::open(rpm).map_err(|source| Error::Io {
            what: "open",
            path: rpm.clone(),
            source,
        })?;
        let pkg =
            cowkit_archive::rpm::Package::read(&mut BufReader::new(file)).map_err(|source| {
                RunError::ReadRpm {
                    path: rpm.clone(),
                    source,
                }
            })?;
        let digest = pkg.header_digest();
        match cache.lookup(digest)? {
            Lookup::Hit(p) => {
                summary.cache_hits += 1;
                cached.push(p);
            }
            Lookup::Miss(p) => {
                summary.cache_misses += 1;
                todo.push((rpm.clone(), digest.to_string()));
                cached.push(p);
            }
            Lookup::Damaged(p, why) => {
                summary.cache_misses += 1;
                summary.cache_damaged.push(format!(
                    "{}: {}",
                    p.display(),
                    cowkit_fs::error::chain(&why).join(": ")
                ));
                events.note(Note::Damaged {
                    entry: &p,
                    why: &why,
                });
                todo.push((rpm.clone(), digest.to_string()));
                cached.push(p);
            }
        }
    }
    transcode_all(cache, &todo, jobs, worker)?;
    Ok(cached)
}

/// Transcode every (package, header digest) pair into a new cache entry,
/// `jobs` at a time, each in its own confined worker; an entry gets its
/// mode and name only when complete. Every failure is collected: one
/// error names them all.
fn transcode_all(
    cache: &Cache,
    todo: &[(PathBuf, String)],
    jobs: usize,
    worker: WorkerCommand,
) -> Result<(), RunError> {
    let next = AtomicUsize::new(0);
    let failures: Mutex<Vec<(PathBuf, Error)>> = Mutex::new(Vec::new());
    let one = |rpm: &Path, digest: &str| -> Result<(), Error> {
        let entry = cache.new_entry(digest)?;
        let command = worker(&[]).map_err(Error::OwnBinary)?;
        confined::transcode(
            command,
            confined::Input::Path(rpm),
            confined::Output::File(entry.file()),
            false,
        )
        .map_err(|source| Error::Transcode {
            input: rpm.to_path_buf(),
            source,
        })?;
        entry.commit()?;
        Ok(())
    };
    std::thread::scope(|s| {
        for _ in 0..jobs.min(todo.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((rpm, digest)) = todo.get(i) else {
                    break;
                };
                if let Err(e) = one(rpm, digest) {
                    failures
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push((rpm.clone(), e));
                }
            });
        }
    });
    let failures = failures.into_inner().unwrap_or_else(|e| e.into_inner());
    if failures.is_empty() {
        Ok(())
    } else {
        Err(RunError::Transcodes { failures })
    }
}
