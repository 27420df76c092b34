//! The child: confines itself (or not), tries what must be denied, does the
//! work that must still function, and reports each result on stderr.
//!
//! Its stdio is the worker's: stdin a pipe with the compressed input, stdout
//! a regular file opened read-write by the parent (the output), stderr a pipe
//! for the report and the log lines. The probes go through std and rustix,
//! the same libraries the worker uses, so no `unsafe` is needed here.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime};

use cowkit_confine::{Error, Policy};
use rustix::fs::{FallocateFlags, OFlags, SeekFrom};
use rustix::net::{AddressFamily, SocketType};
use sha2::{Digest, Sha256};

use super::{alloc_pattern, hex, Mode, ALLOC_LEN, DIR_ENV, KINDS, TAG};

fn say(line: &str) {
    eprintln!("{TAG} {line}");
}

/// `probe NAME ok`, `probe NAME errno N` or `probe NAME error TEXT`.
fn probe<T, E: Into<io::Error>>(name: &str, result: Result<T, E>) {
    match result.map_err(Into::into) {
        Ok(_) => say(&format!("probe {name} ok")),
        Err(e) => match e.raw_os_error() {
            Some(n) => say(&format!("probe {name} errno {n}")),
            None => say(&format!("probe {name} error {e}")),
        },
    }
}

fn value(name: &str, v: impl std::fmt::Display) {
    say(&format!("value {name} {v}"));
}

/// Writes straight to a descriptor, with no buffer between.
struct FdWriter<'a>(BorrowedFd<'a>);

impl Write for FdWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(rustix::io::write(self.0, buf)?)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Hashes and counts what passes through to the output.
struct Tee<'a> {
    out: FdWriter<'a>,
    hash: &'a mut Sha256,
    len: u64,
}

impl Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.hash.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

pub fn run(mode: Mode) {
    let dir = PathBuf::from(std::env::var_os(DIR_ENV).expect("the scratch directory"));
    // What the probes need from before confinement.
    let ppid = rustix::process::getppid().expect("a parent");
    let uid = rustix::process::getuid();
    value(
        "pre_mode",
        cowkit_confine::mode().map_or_else(|e| e.to_string(), |m| m.to_string()),
    );
    // The test harness wrote its header to our stdout (the output file):
    // push out whatever it buffered, then start the file over.
    io::stdout().flush().unwrap();

    match mode {
        Mode::Control => value("applied", "no"),
        Mode::Confined | Mode::Threads | Mode::Abort => {
            if mode == Mode::Abort {
                // No core file in the working directory.
                rustix::process::setrlimit(
                    rustix::process::Resource::Core,
                    rustix::process::Rlimit {
                        current: Some(0),
                        maximum: Some(0),
                    },
                )
                .unwrap();
            }
            let applied = Policy::stream_worker()
                .allow_threads(mode == Mode::Threads)
                .apply()
                .expect("apply the policy");
            value("applied", applied.allowed);
            value("threads", applied.threads);
        }
    }
    // The parent reads /proc/<pid>/status now, then sends the input.
    say("ready");
    if mode == Mode::Abort {
        std::process::abort();
    }

    match cowkit_confine::self_check() {
        Ok(()) => value("self_check", "ok"),
        Err(Error::NotConfined) => value("self_check", "not_confined"),
        Err(e) => value("self_check", format!("error {e}")),
    }
    probe(
        "read_proc_status",
        cowkit_confine::mode().map_err(|e| match e {
            Error::Status { source, .. } => source,
            e => io::Error::other(e),
        }),
    );

    if mode == Mode::Threads {
        // The whole job in a thread created after confinement.
        std::thread::scope(|s| s.spawn(work).join().unwrap());
    } else {
        work();
    }

    denied_probes(mode, &dir, ppid, uid);
    thread_probe();
    say("done");
    // Leave before the test harness appends its summary to the output file.
    std::process::exit(0);
}

/// The work of a stream worker, on stdin and stdout.
fn work() {
    let stdout = io::stdout();
    let out = stdout.as_fd();
    rustix::fs::ftruncate(out, 0).unwrap();
    rustix::fs::seek(out, SeekFrom::Start(0)).unwrap();
    // A header to fill in at the end, as a transcoder does.
    FdWriter(out).write_all(&[0u8; 8]).unwrap();

    let started = Instant::now();
    let mut stdin = io::stdin().lock();
    let mut hash = Sha256::new();
    let mut total = 0u64;
    for kind in KINDS {
        let mut len = [0u8; 8];
        stdin.read_exact(&mut len).unwrap();
        let mut frame = (&mut stdin).take(u64::from_le_bytes(len));
        let mut tee = Tee {
            out: FdWriter(out),
            hash: &mut hash,
            len: 0,
        };
        let copied = match kind {
            "zstd" => io::copy(
                &mut zstd::stream::read::Decoder::new(&mut frame).unwrap(),
                &mut tee,
            ),
            "xz" => io::copy(&mut liblzma::read::XzDecoder::new(&mut frame), &mut tee),
            "gzip" => io::copy(&mut flate2::read::GzDecoder::new(&mut frame), &mut tee),
            "bzip2" => io::copy(&mut bzip2::read::BzDecoder::new(&mut frame), &mut tee),
            _ => unreachable!(),
        }
        .unwrap();
        assert_eq!(copied, tee.len);
        value(&format!("{kind}_len"), tee.len);
        total += tee.len;
        // Whatever the decoder left of its frame.
        io::copy(&mut frame, &mut io::sink()).unwrap();
    }
    value("sha256", hex(&hash.finalize()));
    eprintln!("log: decoded {total} bytes");

    // Back-patch the header, then grow and shrink the file.
    probe("pwrite", rustix::io::pwrite(out, &total.to_le_bytes(), 0));
    let end = 8 + total;
    probe("write_past_end", FdWriter(out).write_all(&[0xEE; 4096]));
    probe("ftruncate", rustix::fs::ftruncate(out, end));
    probe(
        "fallocate",
        rustix::fs::fallocate(out, FallocateFlags::KEEP_SIZE, end, 1 << 20),
    );
    match rustix::fs::fstat(out) {
        Ok(st) => value("fstat_size", st.st_size),
        Err(e) => probe("fstat", Err::<(), _>(e)),
    }
    probe("lseek", rustix::fs::seek(out, SeekFrom::Start(0)));
    let mut header = [0u8; 8];
    probe("read_back", rustix::io::read(out, &mut header));
    value("header", u64::from_le_bytes(header));
    match rustix::fs::fcntl_getfl(out) {
        Ok(fl) => value("getfl_rdwr", fl & OFlags::RWMODE == OFlags::RDWR),
        Err(e) => probe("fcntl_getfl", Err::<(), _>(e)),
    }

    // Memory: a Vec grown by realloc (mremap) and a calloc, 64 MiB each.
    let mut grown: Vec<u8> = Vec::with_capacity(4096);
    for i in 0..ALLOC_LEN {
        grown.push(alloc_pattern(i));
    }
    value(
        "alloc_grown",
        grown.iter().map(|&b| u64::from(b)).sum::<u64>(),
    );
    drop(grown);
    let zeroed = vec![0u8; ALLOC_LEN];
    value("alloc_zeroed", zeroed.iter().filter(|&&b| b != 0).count());
    drop(zeroed);

    // Randomly keyed hash map (getrandom), clocks.
    let map: HashMap<u32, u32> = (0..1000).map(|i| (i, i * 2)).collect();
    value("hashmap", map[&999]);
    let wall = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH);
    value("clock", wall.is_ok() && started.elapsed().as_secs() < 3600);
}

/// Each of these must fail with EPERM once confined.
fn denied_probes(mode: Mode, dir: &Path, ppid: rustix::process::Pid, uid: rustix::process::Uid) {
    let victim = dir.join("victim");
    probe("open_etc_passwd", File::open("/etc/passwd"));
    probe(
        "openat_dir",
        rustix::fs::openat(
            rustix::fs::CWD,
            dir,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        ),
    );
    probe("create_file", File::create(dir.join("created")));
    probe("stat_path", std::fs::metadata(&victim));
    probe("read_link", std::fs::read_link("/proc/self/exe"));
    probe("mkdir", std::fs::create_dir(dir.join("newdir")));
    probe("rename", std::fs::rename(&victim, dir.join("renamed")));
    probe("unlink", std::fs::remove_file(dir.join("renamed")));
    probe(
        "socket_inet",
        rustix::net::socket(AddressFamily::INET, SocketType::STREAM, None),
    );
    probe(
        "socket_unix",
        rustix::net::socket(AddressFamily::UNIX, SocketType::DGRAM, None),
    );
    probe("socketpair", std::os::unix::net::UnixStream::pair());
    // ENOENT when allowed, so this one is safe to try unconfined.
    probe(
        "exec_missing",
        Err::<(), _>(Command::new(dir.join("no-such-program")).exec()),
    );
    if mode != Mode::Control {
        // Had it been allowed, this process would now be /bin/true, and the
        // parent would miss the rest of the report.
        probe("exec_true", Err::<(), _>(Command::new("/bin/true").exec()));
    }
    probe("spawn_process", Command::new("/bin/true").status());
    probe("kill_parent", rustix::process::test_kill_process(ppid));
    probe("setuid_self", rustix::thread::set_thread_uid(uid));
    probe("chroot_root", rustix::process::chroot("/"));
    probe(
        "ioctl_fionbio",
        rustix::io::ioctl_fionbio(io::stdin(), false),
    );
    probe(
        "fcntl_setfl",
        rustix::fs::fcntl_setfl(io::stdin(), OFlags::empty()),
    );
    probe("dup", rustix::io::dup(io::stderr()));
    // EPERM, except with threads allowed: ENOSYS (glibc's fallback).
    probe("sched_getaffinity", rustix::thread::sched_getaffinity(None));
    if mode != Mode::Control {
        // Neither another filter nor prctl: seccomp itself is denied.
        probe(
            "reapply",
            Policy::stream_worker().apply().map_err(|e| match e {
                Error::NoNewPrivs(e) | Error::Install(e) => e,
                e => io::Error::other(e),
            }),
        );
    }
}

/// A thread: denied unless allowed; the work it does must be right.
fn thread_probe() {
    let spawned = std::thread::Builder::new().spawn(|| {
        let mut h = Sha256::new();
        h.update(b"from a thread");
        hex(&h.finalize())
    });
    match spawned {
        Ok(handle) => {
            value("thread_result", handle.join().unwrap());
            probe("thread_spawn", Ok::<_, io::Error>(()));
        }
        Err(e) => probe("thread_spawn", Err::<(), _>(e)),
    }
}
