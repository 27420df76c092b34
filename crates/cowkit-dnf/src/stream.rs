//! `cowkit dnf`'s own downloads: each package of dnf's plan
//! ([`crate::plan`]) is fetched ([`crate::fetch`]) and streamed
//! through the confined transcoder straight into the cache, while the
//! bytes are counted and hashed.
//!
//! For each package, in `max_parallel_downloads` threads:
//!
//! 1. The cache's checksum record for the repository's whole-file checksum
//!    names a header digest whose entry checks (and, where the repository
//!    has `gpgcheck`, was signature-checked with its key files holding the
//!    same bytes as now): the entry is used, nothing is downloaded.
//! 2. Otherwise the body is read: the lead and headers first (bounded,
//!    the header digest verified), whose name, epoch, version, release and
//!    arch must be the ones dnf resolved. An entry with that header digest
//!    already in the cache (and no signature to check) is kept: the rest
//!    of the body is only hashed. Else a confined worker gets the bytes
//!    through a pipe as they arrive; with `gpgcheck` it checks the header
//!    signature against the repository's key files before it decodes any
//!    payload byte (a refused signature fails the run, naming the
//!    repository, as dnf's check would), and writes the extents file into
//!    an unnamed cache entry.
//! 3. When the body ends, its length and checksum must be the ones of
//!    `primary.xml`; only then is the entry named and the checksum
//!    recorded. A body that is longer, shorter, different, or stalls,
//!    leaves nothing behind and the next mirror is tried; a package all
//!    of whose mirrors failed is tried again while the run has had no more
//!    than dnf's `retries` such failed downloads.

use std::fs::File;
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use cowkit_archive::rpm::Package;
use cowkit_extents::cache::{Cache, ChecksumRecord, Lookup};
use cowkit_extents::confined;
use sha2::Digest;

use crate::fetch::{Fetcher, MirrorError, Source};
use crate::plan::{Plan, PlannedPackage, Repo};
use crate::{Error, Result};

/// The command of a confined transcode worker that checks signatures
/// against the given key files (none: no check); its error is that the
/// program cannot be found.
pub type Worker = dyn Fn(&[PathBuf]) -> io::Result<Command> + Sync;

/// What the downloads report as they go.
pub trait Reporter: Sync {
    /// `n` more bytes received.
    fn on_bytes(&self, n: u64);
    /// A download of `bytes` bytes starts.
    fn on_start(&self, bytes: u64);
    /// A line for the user (a failed attempt, a damaged entry).
    fn on_note(&self, line: &str);
}

/// What the downloads did.
#[derive(Debug, Default)]
pub struct Fetched {
    /// The cache entries, in the plan's order.
    pub paths: Vec<PathBuf>,
    /// Found by their checksum: not downloaded.
    pub cached: usize,
    /// Downloaded, whose entry was in the cache already.
    pub reused: usize,
    /// Downloaded and transcoded.
    pub transcoded: usize,
    /// Failed attempts (retried).
    pub failed_attempts: Vec<String>,
    /// Damaged entries replaced.
    pub damaged: Vec<String>,
}

/// How one package came into the cache.
enum Done {
    Cached(PathBuf),
    Reused(PathBuf),
    Transcoded(PathBuf),
}

/// Why an attempt failed.
enum Failure {
    /// The mirror's bytes (another mirror may do).
    Mirror(String),
    /// Not the mirror's fault: no retry.
    Fatal(Error),
}

impl From<MirrorError> for Failure {
    fn from(e: MirrorError) -> Self {
        Failure::Mirror(e.0)
    }
}

/// What every download thread shares.
struct Run<'a> {
    cache: &'a Cache,
    plan: &'a Plan,
    fetcher: Fetcher,
    reporter: &'a dyn Reporter,
    worker: &'a Worker,
    failures: AtomicU64,
    stop: AtomicBool,
    out: Mutex<Fetched>,
}

/// Fetch every package of `plan` into `cache` (see the module doc),
/// transcoding through `worker`'s programs. A package that cannot be
/// fetched stops the others; all that failed are in [`Error::Fetch`].
pub fn fetch_all(
    cache: &Cache,
    plan: &Plan,
    reporter: &dyn Reporter,
    worker: &Worker,
) -> Result<Fetched> {
    let n = plan.packages.len();
    let run = Run {
        cache,
        plan,
        fetcher: Fetcher::new(),
        reporter,
        worker,
        failures: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        out: Mutex::new(Fetched {
            paths: vec![PathBuf::new(); n],
            ..Fetched::default()
        }),
    };
    let next = AtomicUsize::new(0);
    let errors: Mutex<Vec<(String, Error)>> = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..plan.max_parallel_downloads.clamp(1, 64).min(n) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(pkg) = plan.packages.get(i) else {
                    break;
                };
                if run.stop.load(Ordering::Relaxed) {
                    break;
                }
                match one(&run, pkg) {
                    Ok(done) => run.record(i, done),
                    Err(e) => {
                        run.stop.store(true, Ordering::Relaxed);
                        lock(&errors).push((pkg.nevra.clone(), e));
                    }
                }
            });
        }
    });
    let errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    if !errors.is_empty() {
        return Err(Error::Fetch { failures: errors });
    }
    Ok(run.out.into_inner().unwrap_or_else(|e| e.into_inner()))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Run<'_> {
    fn record(&self, i: usize, done: Done) {
        let mut out = lock(&self.out);
        out.paths[i] = match done {
            Done::Cached(p) => {
                out.cached += 1;
                p
            }
            Done::Reused(p) => {
                out.reused += 1;
                p
            }
            Done::Transcoded(p) => {
                out.transcoded += 1;
                p
            }
        };
    }

    fn note(&self, line: String, failed: bool) {
        self.reporter.on_note(&line);
        let mut out = lock(&self.out);
        if failed {
            out.failed_attempts.push(line);
        } else {
            out.damaged.push(line);
        }
    }

    /// A damaged cache entry, said once however often it is met (its
    /// checksum record and then its header digest lead to the same one).
    fn note_damaged(&self, p: &Path, why: &dyn std::fmt::Display, then: &str) {
        let head = format!("the cache entry `{}` is damaged", p.display());
        if lock(&self.out).damaged.iter().any(|l| l.starts_with(&head)) {
            return;
        }
        self.note(format!("{head} ({why}); {then}"), false);
    }

    fn repo(&self, pkg: &PlannedPackage) -> &Repo {
        &self.plan.repos[&pkg.repo]
    }
}

/// One package into the cache: from its checksum record, else from its
/// mirrors in turn until one serves the right bytes.
fn one(run: &Run<'_>, pkg: &PlannedPackage) -> Result<Done> {
    if let Some(p) = cached(run, pkg)? {
        return Ok(Done::Cached(p));
    }
    let sources: Vec<Source> = match &pkg.local {
        Some(p) => vec![Source::Local(p.clone())],
        None => pkg.urls.iter().cloned().map(Source::Url).collect(),
    };
    // dnf's way: each mirror in turn; when all failed, that is one failed
    // download, and the package is tried again while the run has had no
    // more than `retries` of them.
    let mut seen = Vec::new();
    loop {
        for source in &sources {
            match fetch(run, pkg, source) {
                Ok(done) => return Ok(done),
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Mirror(why)) => {
                    run.note(format!("[MIRROR] {}: {why}", pkg.nevra), true);
                    seen.push(why);
                }
            }
        }
        let failures = run.failures.fetch_add(1, Ordering::Relaxed) + 1;
        let out_of_retries = run.plan.retries != 0 && failures > run.plan.retries;
        if pkg.local.is_some() || out_of_retries || run.stop.load(Ordering::Relaxed) {
            break;
        }
    }
    Err(Error::NoMirror {
        attempts: seen.len(),
        retries: run.plan.retries,
        last: seen.pop(),
    })
}

/// The entry the cache's checksum record names, if it checks.
fn cached(run: &Run<'_>, pkg: &PlannedPackage) -> Result<Option<PathBuf>> {
    let (kind, hex) = &pkg.checksum;
    let hex = hex.to_ascii_lowercase();
    let Some(rec) = run.cache.checksum_record(kind, &hex)? else {
        return Ok(None);
    };
    let repo = run.repo(pkg);
    // Checked with keys of the same content (a key file replaced since
    // then, or one that cannot be read now, does not match).
    if repo.gpgcheck && (rec.signed_with.is_none() || rec.signed_with != key_identity(&repo.keys)) {
        return Ok(None);
    }
    match run.cache.lookup(&rec.header_digest)? {
        Lookup::Hit(p) => Ok(Some(p)),
        Lookup::Miss(_) => Ok(None),
        Lookup::Damaged(p, why) => {
            run.note_damaged(&p, &why, "fetching again");
            Ok(None)
        }
    }
}

/// What identifies the key files `keys` in a checksum record: each one's
/// SHA-256 and path (`sha256:HEX PATH`), sorted; `None` when one cannot be
/// read (within [`cowkit_archive::pgp::MAX_KEY_FILE_BYTES`]) or its path
/// is not UTF-8.
fn key_identity(keys: &[PathBuf]) -> Option<Vec<String>> {
    let mut v = Vec::with_capacity(keys.len());
    for k in keys {
        let path = k.to_str().filter(|p| !p.contains('\n'))?;
        let mut bytes = Vec::new();
        File::open(k)
            .ok()?
            .take(cowkit_archive::pgp::MAX_KEY_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .ok()?;
        if bytes.len() as u64 > cowkit_archive::pgp::MAX_KEY_FILE_BYTES {
            return None;
        }
        v.push(format!(
            "sha256:{} {path}",
            hex(&sha2::Sha256::digest(&bytes))
        ));
    }
    v.sort();
    Some(v)
}

/// One attempt at `pkg` from `source`.
fn fetch(run: &Run<'_>, pkg: &PlannedPackage, source: &Source) -> Result<Done, Failure> {
    let repo = run.repo(pkg);
    let (body, announced) = run.fetcher.open(source, repo)?;
    if let Some(n) = announced.filter(|n| *n != pkg.size) {
        return Err(Failure::Mirror(format!(
            "`{source}` is {n} bytes, the repository's metadata says {}",
            pkg.size
        )));
    }
    run.reporter.on_start(pkg.size);
    let mut body = BufReader::with_capacity(
        256 * 1024,
        Verified::new(body, &pkg.checksum.0, pkg.size, run.reporter),
    );
    let header = Package::read(&mut body).map_err(|e| {
        Failure::Mirror(format!(
            "`{source}`: {}",
            cowkit_fs::error::chain(&e).join(": ")
        ))
    })?;
    let found = nevra_of(&header);
    if found != expected_nevra(pkg) {
        return Err(Failure::Mirror(format!(
            "`{source}` holds {found}, not the {} dnf resolved (its header changed)",
            expected_nevra(pkg)
        )));
    }
    let digest = header.header_digest().to_string();
    let lookup = run
        .cache
        .lookup(&digest)
        .map_err(|e| Failure::Fatal(e.into()))?;
    // The keys as the worker is about to load them; recorded only if they
    // are the same once it is done.
    let keys_before = repo.gpgcheck.then(|| key_identity(&repo.keys)).flatten();
    let (done, signed) = match lookup {
        Lookup::Hit(p) if !repo.gpgcheck => {
            io::copy(&mut body, &mut io::sink())
                .map_err(|e| Failure::Mirror(format!("`{source}`: {e}")))?;
            finish(body, pkg, source)?;
            (Done::Reused(p), false)
        }
        other => {
            if let Lookup::Damaged(p, why) = &other {
                run.note_damaged(p, why, "transcoding again");
            }
            let p = stream(run, pkg, repo, source, &header, body)?;
            (Done::Transcoded(p), repo.gpgcheck)
        }
    };
    let signed_with = match signed {
        true => keys_before.filter(|b| Some(b) == key_identity(&repo.keys).as_ref()),
        false => None,
    };
    let record = ChecksumRecord {
        header_digest: digest,
        signed_with,
    };
    run.cache
        .record_checksum(
            &pkg.checksum.0,
            &pkg.checksum.1.to_ascii_lowercase(),
            &record,
        )
        .map_err(|e| Failure::Fatal(e.into()))?;
    Ok(done)
}

/// The body's end: its length and checksum as `primary.xml` says.
fn finish(
    body: BufReader<Verified<'_>>,
    pkg: &PlannedPackage,
    source: &Source,
) -> Result<(), Failure> {
    body.into_inner()
        .finish(&pkg.checksum.1)
        .map_err(|why| Failure::Mirror(format!("`{source}`: {why}")))
}

/// The rest of the body (after `header`) through a confined worker into a
/// new cache entry, named only when the worker succeeded and the whole
/// body matched the repository's checksum.
fn stream(
    run: &Run<'_>,
    pkg: &PlannedPackage,
    repo: &Repo,
    source: &Source,
    header: &Package,
    mut body: BufReader<Verified<'_>>,
) -> Result<PathBuf, Failure> {
    let fatal = |e: Error| Failure::Fatal(e);
    let entry = run
        .cache
        .new_entry(header.header_digest())
        .map_err(|e| fatal(e.into()))?;
    let keys: &[PathBuf] = if repo.gpgcheck { &repo.keys } else { &[] };
    let worker = (run.worker)(keys).map_err(|e| fatal(Error::OwnBinary(e)))?;
    let (reader, mut writer) = io::pipe().map_err(|e| fatal(Error::Pipe(e)))?;
    let reader = File::from(std::os::fd::OwnedFd::from(reader));
    let (fed, outcome) = std::thread::scope(|s| {
        let worker = s.spawn(|| {
            confined::transcode_from(worker, reader, confined::Output::File(entry.file()), false)
        });
        let fed = feed(&mut writer, header.prefix(), &mut body);
        drop(writer);
        (fed, worker.join().expect("the transcode does not panic"))
    });
    // The mirror's failures first: a worker stopped by a short or wrong
    // body is not the package's fault.
    fed.map_err(|e| Failure::Mirror(format!("`{source}`: {e}")))?;
    finish(body, pkg, source)?;
    outcome.map_err(|e| fatal(worker_error(e, pkg, repo, source)))?;
    entry.commit().map_err(|e| fatal(e.into()))
}

/// The worker's error: a refused header signature said as the
/// repository's requirement (which repository, which keys), anything else
/// as the transcode's error.
fn worker_error(e: confined::Error, pkg: &PlannedPackage, repo: &Repo, source: &Source) -> Error {
    let name = source.to_string();
    if !confined::signature_refused(&e) {
        return Error::Transcode {
            input: PathBuf::from(name),
            source: e,
        };
    }
    let causes = match &e {
        confined::Error::Worker(cowkit_confine::worker::WorkerError::Failed { error, .. }) => {
            error.messages().split_off(1)
        }
        _ => Vec::new(),
    };
    Error::SignatureRefused {
        repo: pkg.repo.clone(),
        keys: repo.keys.clone(),
        package: name,
        causes,
    }
}

/// Write `prefix` then the rest of `body` to the worker's pipe; once the
/// worker stops reading (`EPIPE`), the body is only read on (to be
/// hashed). An error is the body's.
fn feed(pipe: &mut io::PipeWriter, prefix: &[u8], body: &mut impl Read) -> io::Result<()> {
    let mut open = write_or_closed(pipe, prefix, true)?;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        open = write_or_closed(pipe, &buf[..n], open)?;
    }
}

/// `bytes` to the pipe while it is `open`; whether it still is.
fn write_or_closed(pipe: &mut io::PipeWriter, bytes: &[u8], open: bool) -> io::Result<bool> {
    if !open {
        return Ok(false);
    }
    match pipe.write_all(bytes) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(io::Error::other(format!(
            "cannot write to the transcoder: {e}"
        ))),
    }
}

/// `name-[epoch:]version-release.arch` of a header.
fn nevra_of(p: &Package) -> String {
    let m = p.metadata();
    let or = |r: Result<&str, _>| r.unwrap_or("?").to_string();
    nevra(
        &or(m.get_name()),
        m.get_epoch().unwrap_or(0),
        &or(m.get_version()),
        &or(m.get_release()),
        &or(m.get_arch()),
    )
}

fn expected_nevra(p: &PlannedPackage) -> String {
    nevra(&p.name, p.epoch, &p.version, &p.release, &p.arch)
}

fn nevra(name: &str, epoch: u32, version: &str, release: &str, arch: &str) -> String {
    match epoch {
        0 => format!("{name}-{version}-{release}.{arch}"),
        e => format!("{name}-{e}:{version}-{release}.{arch}"),
    }
}

/// The whole-file checksum kinds of `primary.xml` that cowkit computes.
enum Hasher {
    Sha256(sha2::Sha256),
    Sha512(sha2::Sha512),
}

/// The body as received: counted (no more than the expected size),
/// hashed, reported.
pub(crate) struct Verified<'r> {
    inner: Box<dyn Read + Send>,
    hasher: Hasher,
    bytes: u64,
    size: u64,
    reporter: &'r dyn Reporter,
}

impl<'r> Verified<'r> {
    fn new(inner: Box<dyn Read + Send>, kind: &str, size: u64, reporter: &'r dyn Reporter) -> Self {
        let hasher = match kind {
            "sha512" => Hasher::Sha512(sha2::Sha512::new()),
            // The plan was checked: sha256 or sha512.
            _ => Hasher::Sha256(sha2::Sha256::new()),
        };
        Verified {
            inner,
            hasher,
            bytes: 0,
            size,
            reporter,
        }
    }

    /// Every byte was received: the length and the checksum must match.
    fn finish(self, expected: &str) -> Result<(), String> {
        if self.bytes != self.size {
            return Err(format!(
                "the body ended after {} of the {} bytes the repository's metadata says (truncated)",
                self.bytes, self.size
            ));
        }
        let (kind, got) = match self.hasher {
            Hasher::Sha256(h) => ("sha256", hex(&h.finalize())),
            Hasher::Sha512(h) => ("sha512", hex(&h.finalize())),
        };
        if !got.eq_ignore_ascii_case(expected) {
            return Err(format!(
                "its {kind} is {got}, the repository's metadata says {expected} (wrong checksum)"
            ));
        }
        Ok(())
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl Read for Verified<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        if self.bytes > self.size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the body is longer than the {} bytes the repository's metadata says",
                    self.size
                ),
            ));
        }
        match &mut self.hasher {
            Hasher::Sha256(h) => h.update(&buf[..n]),
            Hasher::Sha512(h) => h.update(&buf[..n]),
        }
        self.reporter.on_bytes(n as u64);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts what the downloads report.
    #[derive(Default)]
    struct Seen {
        bytes: AtomicU64,
        notes: Mutex<Vec<String>>,
    }

    impl Reporter for Seen {
        fn on_bytes(&self, n: u64) {
            self.bytes.fetch_add(n, Ordering::Relaxed);
        }
        fn on_start(&self, _: u64) {}
        fn on_note(&self, line: &str) {
            lock(&self.notes).push(line.to_string());
        }
    }

    fn verified<'r>(body: &[u8], kind: &str, size: u64, seen: &'r Seen) -> Verified<'r> {
        Verified::new(Box::new(io::Cursor::new(body.to_vec())), kind, size, seen)
    }

    #[test]
    fn a_body_is_taken_only_at_the_repositorys_length_and_checksum() {
        let body = b"an rpm's bytes, as the mirror sent them";
        let sha256 = hex(&sha2::Sha256::digest(body));
        let sha512 = hex(&sha2::Sha512::digest(body));
        let seen = Seen::default();
        let n = body.len() as u64;
        for (kind, sum) in [("sha256", &sha256), ("sha512", &sha512)] {
            let mut v = verified(body, kind, n, &seen);
            io::copy(&mut v, &mut io::sink()).unwrap();
            v.finish(&sum.to_ascii_uppercase()).unwrap();
        }
        assert_eq!(seen.bytes.load(Ordering::Relaxed), 2 * n);
        // Shorter than the metadata says.
        let mut v = verified(&body[..10], "sha256", n, &seen);
        io::copy(&mut v, &mut io::sink()).unwrap();
        assert!(v.finish(&sha256).unwrap_err().contains("(truncated)"));
        // Longer: the read fails as the excess arrives.
        let mut v = verified(body, "sha256", n - 1, &seen);
        let e = io::copy(&mut v, &mut io::sink()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        // Other bytes of the same length.
        let mut other = body.to_vec();
        other[0] ^= 1;
        let mut v = verified(&other, "sha256", n, &seen);
        io::copy(&mut v, &mut io::sink()).unwrap();
        assert!(v.finish(&sha256).unwrap_err().contains("(wrong checksum)"));
    }

    #[test]
    fn nevras_name_the_epoch_only_when_there_is_one() {
        assert_eq!(
            nevra("bash", 0, "5.2.26", "3.fc40", "x86_64"),
            "bash-5.2.26-3.fc40.x86_64"
        );
        assert_eq!(
            nevra("kbd", 1, "2.6.4", "3.fc40", "x86_64"),
            "kbd-1:2.6.4-3.fc40.x86_64"
        );
    }

    /// A package no mirror serves fails the run with its NEVRA and the
    /// attempts, each attempt reported; nothing is cached for it.
    #[test]
    fn a_package_no_source_serves_is_one_line_of_the_fetch_error() {
        let d = tempfile::tempdir().unwrap();
        let cache_dir = d.path().join("cache");
        std::fs::create_dir(&cache_dir).unwrap();
        std::fs::set_permissions(
            &cache_dir,
            std::os::unix::fs::PermissionsExt::from_mode(0o700),
        )
        .unwrap();
        let cache = Cache::open(&cache_dir).unwrap();
        let missing = d.path().join("bash-5.2.26-3.fc40.x86_64.rpm");
        let plan: Plan = serde_json::from_value(serde_json::json!({
            "why": [],
            "packages": [{"nevra": "bash-5.2.26-3.fc40.x86_64", "name": "bash", "epoch": 0,
                          "version": "5.2.26", "release": "3.fc40", "arch": "x86_64",
                          "size": 1875633, "checksum": ["sha256", "00".repeat(32)],
                          "repo": "@commandline", "urls": [], "local": missing}],
            "repos": {"@commandline": {"gpgcheck": false, "keys": [], "timeout": 30, "minrate": 1000}},
            "max_parallel_downloads": 3,
            "retries": 10
        }))
        .unwrap();
        let seen = Seen::default();
        let worker = |_: &[PathBuf]| -> io::Result<Command> { panic!("nothing to transcode") };
        let e = fetch_all(&cache, &plan, &seen, &worker).unwrap_err();
        let Error::Fetch { failures } = &e else {
            panic!("{e}")
        };
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].0, "bash-5.2.26-3.fc40.x86_64");
        assert!(
            matches!(&failures[0].1, Error::NoMirror { attempts: 1, retries: 10, last: Some(l) } if l.contains("cannot open")),
            "{}",
            failures[0].1
        );
        let notes = lock(&seen.notes);
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("[MIRROR] bash-5.2.26-3.fc40.x86_64: cannot open"));
        assert!(
            e.to_string().starts_with("cannot fetch 1 package(s)"),
            "{e}"
        );
    }
}
