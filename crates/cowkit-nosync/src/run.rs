//! The supervisor: run a command with both layers, wait for every
//! descendant, make the skipped work durable, report.
//!
//! ```text
//! cowkit nosync -- CMD           supervisor: child subreaper, forwards
//!  └─ cowkit __nosync-exec CMD   worker: installs the seccomp filter on
//!      (execs into CMD)          itself, then execvp(CMD) with LD_PRELOAD
//! ```
//!
//! The worker is the same `cowkit` binary started again ([`RunOptions::exec_helper`]),
//! so the filter is installed between fork and exec without `pre_exec`.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::Signal;
use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;

use crate::error::{io_err, proc_err, Error, Result};
use crate::mounts::{self, Fallback, Skipped, Target};
use crate::stats::Stats;
use crate::tree::{Forward, Left};

/// The hidden subcommand of the `cowkit` binary that runs [`exec`].
pub const EXEC_SUBCOMMAND: &str = "__nosync-exec";

/// What to make durable after the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FinalSync {
    /// `syncfs` on each writable, storage-backed filesystem (see
    /// [`mounts`]) that the command's process tree changed
    /// ([`crate::written`]), each timed and checked for writeback errors;
    /// on all of them where that cannot be known (not root, an old
    /// kernel).
    #[default]
    Auto,
    /// `sync(2)`, then `syncfs` on the same filesystems as `Auto` to collect
    /// their writeback errors (`sync` reports none).
    All,
    /// Nothing: the data stays in the page cache; the kernel writes it back
    /// in its own time.
    None,
}

/// How to run the command.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// A `cowkit` binary that answers [`EXEC_SUBCOMMAND`].
    pub exec_helper: PathBuf,
    /// The command (looked up in `PATH`).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The final sync.
    pub final_sync: FinalSync,
    /// Put the shim in `LD_PRELOAD`.
    pub preload: bool,
    /// Install the seccomp filter.
    pub seccomp: bool,
    /// Collect the shim's counters.
    pub stats: bool,
    /// Where the shim file is written ([`crate::shim::default_cache_dir`]);
    /// `None`, or a directory that is not safe ([`crate::shim::check_private`]),
    /// gives a fresh private directory for this run.
    pub cache_dir: Option<PathBuf>,
    /// Called (from another thread) when a first SIGINT has been passed on
    /// to processes the command left behind, with what is left: a second
    /// SIGINT stops waiting for them.
    pub on_waiting: Option<fn(&[Left])>,
}

impl RunOptions {
    /// Both layers, `FinalSync::Auto`, no counters.
    pub fn new(exec_helper: PathBuf, program: OsString) -> RunOptions {
        RunOptions {
            exec_helper,
            program,
            args: Vec::new(),
            final_sync: FinalSync::Auto,
            preload: true,
            seccomp: true,
            stats: false,
            cache_dir: crate::shim::default_cache_dir(),
            on_waiting: None,
        }
    }
}

/// The final `syncfs` of one filesystem.
#[derive(Debug)]
pub struct SyncReport {
    /// Mount point (the first mount of the filesystem).
    pub mount_point: PathBuf,
    /// Filesystem type, or `sync(2)` for the `All` mode's global sync.
    pub fs_type: String,
    /// How long it took.
    pub elapsed: Duration,
    /// The writeback error it reported, if any.
    pub error: Option<std::io::Error>,
}

/// The most of the shim's stats file that is read: about 100,000
/// processes' lines. The file is writable by every process of the command
/// (programs that drop privileges report too), so its size is not trusted.
pub const STATS_LIMIT: u64 = 16 << 20;

/// What happened.
#[derive(Debug)]
pub struct Outcome {
    /// How the command (the direct child) ended.
    pub status: ExitStatus,
    /// Other descendants reaped after being orphaned.
    pub orphans_reaped: u64,
    /// The final syncs, in order (empty when they were suppressed).
    pub syncs: Vec<SyncReport>,
    /// The final sync was not run because this process's own sync calls
    /// are answered without running (a seccomp filter, as when `cowkit
    /// nosync` runs inside another one): reporting them as done would be
    /// false. The outer run syncs at its end.
    pub sync_suppressed: bool,
    /// Descendants that were still running after the command ended and
    /// were sent a signal that reached `cowkit nosync` (SIGTERM, …).
    pub descendants_signalled: u64,
    /// The stats file was larger than [`STATS_LIMIT`]; only that much of
    /// it was counted.
    pub stats_truncated: bool,
    /// Filesystems that could not be opened for the final sync.
    pub skipped: Vec<Skipped>,
    /// The shim's counters (with `stats`).
    pub stats: Option<Stats>,
    /// The shim file used (with `preload`).
    pub shim: Option<PathBuf>,
    /// From start until the last descendant ended.
    pub command_time: Duration,
    /// The final sync, all filesystems.
    pub sync_time: Duration,
    /// Candidates not synced because the command did not change them
    /// (`Auto` with [`crate::written`] working): (mount point, type).
    pub not_written: Vec<(PathBuf, String)>,
    /// Why every candidate was synced in `Auto` mode: the watch of what
    /// the command wrote could not start.
    pub watch_error: Option<String>,
    /// The sync calls the seccomp layer answered (static binaries, Go, raw
    /// `syscall()`), per call, when the supervisor answered them
    /// ([`crate::notify`]); `None` when the filter answered alone.
    pub seccomp_answered: Option<Vec<(&'static str, u64)>>,
    /// Filesystems mounted (or made writable) during the run, found in the
    /// mount table read again at its end and synced too: (mount point,
    /// type).
    pub mounted: Vec<(PathBuf, String)>,
    /// Why `sync(2)` ran before the `syncfs` calls: the run may have
    /// written a filesystem that no `syncfs` here can reach.
    pub full_sync: Option<Fallback>,
    /// The wait for what the command left behind was given up by a second
    /// SIGINT; the exit code is then 130.
    pub interrupted: bool,
    /// What was still running then.
    pub left_running: Vec<Left>,
}

impl Outcome {
    /// Whether a final sync reported an error.
    pub fn sync_failed(&self) -> bool {
        self.syncs.iter().any(|s| s.error.is_some())
    }

    /// The signal that killed the command, if one did.
    pub fn signal(&self) -> Option<i32> {
        self.status.signal()
    }

    /// The exit code to end with: the command's; 128 + signal if a signal
    /// killed it (for callers that cannot re-raise it); 1 if it succeeded
    /// but the final sync failed; 130 (SIGINT) when the wait for what it
    /// left behind was given up.
    pub fn exit_code(&self) -> i32 {
        if self.interrupted {
            return 128 + SIGINT;
        }
        match (self.status.code(), self.status.signal()) {
            (Some(0), _) if self.sync_failed() => 1,
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            (None, None) => 1,
        }
    }
}

/// Run the command under both layers and wait for all its descendants.
pub fn run(opts: &RunOptions) -> Result<Outcome> {
    // Opened before the command starts, so that syncfs reports writeback
    // errors during it; the table is kept, to find what the run mounted.
    let before = match opts.final_sync {
        FinalSync::None => None,
        _ => Some(cowkit_fs::mountinfo::read()?),
    };
    let (targets, mut skipped) = match &before {
        None => (Vec::new(), Vec::new()),
        Some(m) => mounts::open_all(mounts::candidates(m)),
    };

    // Watched from before the command starts: its first write counts.
    let watch = match opts.final_sync {
        FinalSync::Auto if !targets.is_empty() => Some(crate::written::Watch::start(&targets)),
        _ => None,
    };
    let mut p = prepare(opts)?;

    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(|e| proc_err("become a child subreaper", e))?;

    // Registered before the child exists: no signal is lost in between.
    // `fwd` says where a signal goes: the command while it runs, every
    // remaining descendant once it has ended (daemons it left behind).
    // SIGCHLD, and a wait given up, wake the reaping loop.
    let fwd = Arc::new(Forward::new(opts.on_waiting));
    let (handle, forwarder, woken) = forward_signals(&fwd)?;

    let start = Instant::now();
    let child = match p.cmd.spawn() {
        Ok(c) => c,
        Err(source) => {
            handle.close();
            let _ = forwarder.join();
            let program = opts.exec_helper.clone();
            return Err(Error::Spawn { program, source });
        }
    };
    drop(p.worker_end);
    let answerer = p.answer_end.map(crate::notify::Answerer::start);
    let pid = child.id() as i32;
    fwd.command.store(pid, Ordering::SeqCst);
    drop(child); // reaped below, with every other descendant

    let reaped = crate::tree::wait_all(pid, &fwd, &woken);
    let command_time = start.elapsed();
    handle.close();
    let _ = forwarder.join();
    let reaped = reaped.map_err(|e| proc_err("wait for the command", e))?;
    let status = reaped
        .status
        .ok_or_else(|| proc_err("find the command's exit status", Errno::CHILD))?;
    let left_running = match reaped.abandoned {
        true => crate::tree::left_behind(),
        false => Vec::new(),
    };

    let seccomp_answered = answerer.and_then(crate::notify::Answerer::finish);
    // Every descendant has ended (or the wait was given up): the events
    // of what it did are queued.
    let (mut targets, not_written, watch_error) = split_written(watch, targets);
    let (mounted, full_sync) = match &before {
        Some(before) => add_mounted(before, &left_running, &mut targets, &mut skipped),
        None => (Vec::new(), None),
    };
    let (syncs, sync_suppressed, sync_time) =
        final_sync_timed(opts.final_sync, full_sync.is_some(), &targets);

    let (stats, stats_truncated) = match &p.stats_dir {
        Some(dir) => read_stats(&dir.path().join("stats"))?,
        None => (None, false),
    };
    drop(p.fresh);
    Ok(Outcome {
        status,
        orphans_reaped: reaped.orphans,
        syncs,
        sync_suppressed,
        descendants_signalled: fwd.signalled.load(Ordering::SeqCst),
        stats_truncated,
        skipped,
        stats,
        shim: p.shim,
        command_time,
        sync_time,
        not_written,
        watch_error,
        seccomp_answered,
        mounted,
        full_sync,
        interrupted: reaped.abandoned,
        left_running,
    })
}

/// The worker's command line and environment, and what the run keeps for
/// it.
struct Prepared {
    cmd: Command,
    /// The supervisor's end of the listener's socket, and the worker's.
    answer_end: Option<std::os::fd::OwnedFd>,
    worker_end: Option<std::os::fd::OwnedFd>,
    /// A private directory made for this run, removed at its end.
    fresh: Option<tempfile::TempDir>,
    shim: Option<PathBuf>,
    stats_dir: Option<tempfile::TempDir>,
}

fn prepare(opts: &RunOptions) -> Result<Prepared> {
    let mut cmd = Command::new(&opts.exec_helper);
    cmd.arg(EXEC_SUBCOMMAND);
    if !opts.seccomp {
        cmd.arg("--no-seccomp");
    }
    // The socket over which the worker hands over its filter's listener.
    let (answer_end, worker_end) = if opts.seccomp {
        let (a, w) = crate::notify::channel().map_err(|e| {
            proc_err(
                "create a socket pair",
                Errno::from_io_error(&e).unwrap_or(Errno::IO),
            )
        })?;
        cmd.env(crate::notify::ENV, crate::notify::env_value(&w));
        (Some(a), Some(w))
    } else {
        (None, None)
    };
    cmd.arg("--").arg(&opts.program).args(&opts.args);

    // A default directory that someone else owns or may write to is not
    // used (nor trusted): this run gets a fresh private one instead.
    let safe = opts
        .cache_dir
        .as_deref()
        .filter(|d| match std::fs::symlink_metadata(d) {
            Err(e) => e.kind() == std::io::ErrorKind::NotFound,
            Ok(_) => crate::shim::check_private(d).is_ok(),
        });
    let fresh = match safe {
        Some(_) => None,
        None => Some(crate::shim::private_dir()?),
    };
    let cache_dir: &Path = match (&fresh, safe) {
        (Some(t), _) => t.path(),
        (None, Some(d)) => d,
        (None, None) => unreachable!("one of them is set"),
    };
    let shim = if opts.preload {
        let path = crate::shim::materialize(cache_dir)?;
        cmd.env(
            "LD_PRELOAD",
            ld_preload(std::env::var_os("LD_PRELOAD"), &path),
        );
        Some(path)
    } else {
        None
    };
    let stats_dir = if opts.stats {
        let dir = stats_dir(cache_dir)?;
        cmd.env(crate::shim::STATS_ENV, dir.path().join("stats"));
        Some(dir)
    } else {
        None
    };
    Ok(Prepared {
        cmd,
        answer_end,
        worker_end,
        fresh,
        shim,
        stats_dir,
    })
}

/// The thread that passes signals on ([`Forward`]) and wakes the reaping
/// loop on SIGCHLD and when the wait is given up.
fn forward_signals(
    fwd: &Arc<Forward>,
) -> Result<(
    signal_hook::iterator::Handle,
    std::thread::JoinHandle<()>,
    std::sync::mpsc::Receiver<()>,
)> {
    let mut signals = SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD])
        .map_err(|e| proc_err("register signal handlers", e))?;
    let handle = signals.handle();
    let forward = Arc::clone(fwd);
    let (wake, woken) = std::sync::mpsc::channel();
    let forwarder = std::thread::spawn(move || {
        for info in signals.forever() {
            if info.signal != SIGCHLD {
                forward.signal(info.signal, info.process.is_some());
            }
            if info.signal == SIGCHLD || forward.abandoned() {
                let _ = wake.send(());
            }
        }
    });
    Ok((handle, forwarder, woken))
}

/// The targets the watch saw written (all of them without a watch), those
/// it did not as (mount point, type), and why there was no watch.
fn split_written(
    watch: Option<std::io::Result<crate::written::Watch>>,
    targets: Vec<Target>,
) -> (Vec<Target>, Vec<(PathBuf, String)>, Option<String>) {
    let (written, watch_error) = match watch {
        Some(Ok(w)) => (Some(w.finish()), None),
        Some(Err(e)) => (None, Some(e.to_string())),
        None => (None, None),
    };
    let (targets, not_written): (Vec<Target>, Vec<Target>) = match &written {
        Some(w) => {
            let mut flags = w.targets.iter();
            targets
                .into_iter()
                .partition(|_| *flags.next().unwrap_or(&true))
        }
        None => (targets, Vec::new()),
    };
    let not_written = not_written
        .into_iter()
        .map(|t| (t.mount.mount_point, t.mount.fs_type))
        .collect();
    (targets, not_written, watch_error)
}

/// Add what the run mounted to the targets ([`mounted_during_run`]); give
/// them as (mount point, type), and the reason for `sync(2)` if any.
fn add_mounted(
    before: &[mounts::Mount],
    left: &[Left],
    targets: &mut Vec<Target>,
    skipped: &mut Vec<Skipped>,
) -> (Vec<(PathBuf, String)>, Option<Fallback>) {
    let after = mounted_during_run(before, left);
    let m = after
        .targets
        .iter()
        .map(|t| (t.mount.mount_point.clone(), t.mount.fs_type.clone()))
        .collect();
    targets.extend(after.targets);
    skipped.extend(after.skipped);
    (m, after.fallback)
}

/// What the end of the run adds to the final sync.
struct AfterRun {
    /// Filesystems mounted (or made writable) during the run, opened now.
    targets: Vec<Target>,
    /// Those that could not be opened.
    skipped: Vec<Skipped>,
    /// Why `sync(2)` must run as well.
    fallback: Option<Fallback>,
}

/// Read the mount table again: every storage-backed filesystem that
/// appeared during the run is synced too; a change no `syncfs` can reach
/// (a pinned mount namespace, a new filesystem that cannot be opened, a
/// process left running in another mount namespace) makes it `sync(2)`.
fn mounted_during_run(before: &[mounts::Mount], left: &[Left]) -> AfterRun {
    let after = match cowkit_fs::mountinfo::read() {
        Ok(a) => a,
        Err(e) => {
            return AfterRun {
                targets: Vec::new(),
                skipped: Vec::new(),
                fallback: Some(Fallback::Unreadable {
                    error: e.to_string(),
                }),
            }
        }
    };
    let diff = mounts::diff(before, &after);
    let (targets, skipped) = mounts::open_all(diff.added);
    let ours = mounts::mount_namespace(None);
    let fallback = diff
        .fallback
        .or_else(|| {
            skipped.first().map(|s| Fallback::Unopenable {
                at: s.mount.mount_point.clone(),
                error: s.error.to_string(),
            })
        })
        .or_else(|| {
            left.iter()
                .find(|l| mounts::mount_namespace(Some(l.pid)).is_some_and(|n| Some(n) != ours))
                .map(|l| Fallback::ForeignNamespace { pid: l.pid })
        });
    AfterRun {
        targets,
        skipped,
        fallback,
    }
}

/// Whether this process's sync calls are answered without running: a
/// `syncfs` on a descriptor that cannot exist (`i32::MAX`, above any
/// `RLIMIT_NOFILE`) fails with `EBADF` from the kernel, but succeeds under
/// the nosync seccomp filter (which cannot see the descriptor table) or
/// any other filter that answers sync calls with 0.
pub fn sync_calls_suppressed() -> bool {
    cowkit_sys::seccomp::syncfs_answers_a_bad_descriptor()
}

/// The counters of the stats file, at most [`STATS_LIMIT`] bytes of it,
/// and whether it was longer.
fn read_stats(p: &Path) -> Result<(Option<Stats>, bool)> {
    use std::io::Read;
    let (fd, _) = cowkit_fs::dir::open_regular(|f| {
        rustix::fs::open(
            p,
            f | rustix::fs::OFlags::NOFOLLOW,
            rustix::fs::Mode::empty(),
        )
    })
    .map_err(|e| io_err("open", p, e))?;
    let mut buf = Vec::new();
    std::fs::File::from(fd)
        .take(STATS_LIMIT + 1)
        .read_to_end(&mut buf)
        .map_err(|e| io_err("read", p, e))?;
    let truncated = buf.len() as u64 > STATS_LIMIT;
    buf.truncate(STATS_LIMIT as usize);
    let text = String::from_utf8_lossy(&buf);
    Ok((Some(Stats::parse(&text)), truncated))
}

/// [`final_sync`], timed; none when this process's own sync calls are
/// answered without running (inside another `cowkit nosync`, whose run
/// makes the data durable), which the second value says.
fn final_sync_timed(
    mode: FinalSync,
    full: bool,
    targets: &[Target],
) -> (Vec<SyncReport>, bool, Duration) {
    let start = Instant::now();
    let suppressed = mode != FinalSync::None && sync_calls_suppressed();
    let syncs = if suppressed {
        Vec::new()
    } else {
        final_sync(mode, full, targets)
    };
    (syncs, suppressed, start.elapsed())
}

pub(crate) fn final_sync(mode: FinalSync, full: bool, targets: &[Target]) -> Vec<SyncReport> {
    let mut out = Vec::new();
    if mode == FinalSync::None {
        return out;
    }
    if mode == FinalSync::All || full {
        let t = Instant::now();
        rustix::fs::sync();
        out.push(SyncReport {
            mount_point: PathBuf::from("/"),
            fs_type: "sync(2)".to_string(),
            elapsed: t.elapsed(),
            error: None,
        });
    }
    for t in targets {
        let start = Instant::now();
        let r = rustix::fs::syncfs(&t.file);
        out.push(SyncReport {
            mount_point: t.mount.mount_point.clone(),
            fs_type: t.mount.fs_type.clone(),
            elapsed: start.elapsed(),
            error: r.err().map(std::io::Error::from),
        });
    }
    out
}

/// `LD_PRELOAD` with the shim appended to what was there.
fn ld_preload(existing: Option<OsString>, shim: &Path) -> OsString {
    match existing {
        Some(e) if !e.is_empty() => {
            let mut v = e;
            v.push(":");
            v.push(shim);
            v
        }
        _ => shim.as_os_str().to_owned(),
    }
}

/// A directory only we can list, holding a stats file every process may
/// append to (programs that drop privileges report too).
fn stats_dir(cache: &Path) -> Result<tempfile::TempDir> {
    std::fs::create_dir_all(cache).map_err(|e| io_err("create", cache, e))?;
    let dir = tempfile::Builder::new()
        .prefix("stats.")
        .tempdir_in(cache)
        .map_err(|e| io_err("create a directory in", cache, e))?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711))
        .map_err(|e| io_err("set the mode of", dir.path().to_path_buf(), e))?;
    let f = dir.path().join("stats");
    std::fs::File::create(&f).map_err(|e| io_err("create", &f, e))?;
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o622))
        .map_err(|e| io_err("set the mode of", &f, e))?;
    Ok(dir)
}

/// The worker side: install the filter on this process (unless `seccomp`
/// is false), then replace it with `program` (looked up in `PATH`).
/// Returns only on failure; `Ok` carries how the filter was installed for
/// a message before the `exec` error is reported.
pub fn exec(
    program: &OsStr,
    args: &[OsString],
    seccomp: bool,
    before_exec: impl FnOnce(Option<crate::filter::Installed>),
) -> Error {
    let installed = if seccomp {
        // The supervisor's socket, if it gave one: the filter's listener
        // goes there, and the supervisor answers the sync calls.
        let sock = std::env::var(crate::notify::ENV)
            .ok()
            .and_then(|v| v.parse().ok())
            .and_then(|n| cowkit_sys::fd::take_inherited(n).ok());
        let r = match sock {
            Some(sock) => crate::filter::install_with_listener().and_then(|(i, listener)| {
                // Without its listener the filter's calls would fail with
                // ENOSYS: better not to run the command at all.
                if let Some(l) = listener {
                    crate::notify::send_listener(sock, l).map_err(|source| Error::Install {
                        how: "handing its listener to the supervisor",
                        source,
                    })?;
                }
                Ok(i)
            }),
            None => crate::filter::install(),
        };
        match r {
            Ok(i) => Some(i),
            Err(e) => return e,
        }
    } else {
        None
    };
    before_exec(installed);
    let source = Command::new(program)
        .args(args)
        .env_remove(crate::notify::ENV)
        .exec();
    Error::Spawn {
        program: PathBuf::from(program),
        source,
    }
}

/// End this process the way the command ended: by the same signal, with
/// its default action (so a parent shell sees "killed by SIGTERM", not an
/// exit code). Returns only if the signal did not end the process.
pub fn die_like(signal: i32) {
    if signal == signal_hook::consts::SIGKILL || signal == signal_hook::consts::SIGSTOP {
        if let Some(sig) = Signal::from_named_raw(signal) {
            let _ = rustix::process::kill_process(rustix::process::getpid(), sig);
        }
        return;
    }
    let _ = signal_hook::low_level::emulate_default_handler(signal);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ld_preload_appends() {
        let s = Path::new("/run/cowkit/x.so");
        assert_eq!(ld_preload(None, s), "/run/cowkit/x.so");
        assert_eq!(ld_preload(Some("".into()), s), "/run/cowkit/x.so");
        assert_eq!(
            ld_preload(Some("/a.so".into()), s),
            "/a.so:/run/cowkit/x.so"
        );
    }
}
