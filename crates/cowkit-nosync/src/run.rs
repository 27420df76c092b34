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
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;

use crate::error::{io_err, proc_err, Error, Result};
use crate::mounts::{self, Skipped, Target};
use crate::stats::Stats;

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
    /// Where the shim file is written ([`crate::shim::default_cache_dir`]).
    pub cache_dir: PathBuf,
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

/// What happened.
#[derive(Debug)]
pub struct Outcome {
    /// How the command (the direct child) ended.
    pub status: ExitStatus,
    /// Other descendants reaped after being orphaned.
    pub orphans_reaped: u64,
    /// The final syncs, in order.
    pub syncs: Vec<SyncReport>,
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
    /// but the final sync failed.
    pub fn exit_code(&self) -> i32 {
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
    // Opened before the command starts, so that writeback errors during the
    // command are reported by syncfs on these descriptors.
    let (targets, skipped) = match opts.final_sync {
        FinalSync::None => (Vec::new(), Vec::new()),
        _ => mounts::open_targets()?,
    };

    // Watched from before the command starts: its first write counts.
    let watch = match opts.final_sync {
        FinalSync::Auto if !targets.is_empty() => Some(crate::written::Watch::start(&targets)),
        _ => None,
    };
    let mut cmd = Command::new(&opts.exec_helper);
    cmd.arg(EXEC_SUBCOMMAND);
    if !opts.seccomp {
        cmd.arg("--no-seccomp");
    }
    cmd.arg("--").arg(&opts.program).args(&opts.args);

    let shim = if opts.preload {
        let path = crate::shim::materialize(&opts.cache_dir)?;
        cmd.env(
            "LD_PRELOAD",
            ld_preload(std::env::var_os("LD_PRELOAD"), &path),
        );
        Some(path)
    } else {
        None
    };
    let stats_dir = if opts.stats {
        let dir = stats_dir(&opts.cache_dir)?;
        cmd.env(crate::shim::STATS_ENV, dir.path().join("stats"));
        Some(dir)
    } else {
        None
    };

    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(|e| proc_err("become a child subreaper", e))?;

    // Registered before the child exists: no signal is lost in between.
    let child_pid = Arc::new(AtomicI32::new(0));
    let mut signals = SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT])
        .map_err(|e| proc_err("register signal handlers", e))?;
    let handle = signals.handle();
    let forward_to = Arc::clone(&child_pid);
    let forwarder = std::thread::spawn(move || {
        for info in signals.forever() {
            // A signal from the terminal (no sending process) reaches the
            // whole foreground process group, the command included; pass on
            // only signals sent to us by a process (kill, a service manager).
            if info.process.is_none() {
                continue;
            }
            let pid = Pid::from_raw(forward_to.load(Ordering::SeqCst));
            if let (Some(pid), Some(sig)) = (pid, Signal::from_named_raw(info.signal)) {
                let _ = rustix::process::kill_process(pid, sig);
            }
        }
    });

    let start = Instant::now();
    let child = cmd.spawn().map_err(|source| Error::Spawn {
        program: opts.exec_helper.clone(),
        source,
    });
    let child = match child {
        Ok(c) => c,
        Err(e) => {
            handle.close();
            let _ = forwarder.join();
            return Err(e);
        }
    };
    let pid = child.id() as i32;
    child_pid.store(pid, Ordering::SeqCst);
    drop(child); // reaped below, with every other descendant

    let mut status = None;
    let mut orphans = 0u64;
    loop {
        match rustix::process::wait(WaitOptions::empty()) {
            Ok(Some((p, st))) => {
                if p.as_raw_nonzero().get() == pid {
                    status = Some(ExitStatus::from_raw(st.as_raw()));
                } else {
                    orphans += 1;
                }
            }
            Ok(None) => {}
            Err(Errno::INTR) => {}
            Err(Errno::CHILD) => break,
            Err(e) => {
                handle.close();
                let _ = forwarder.join();
                return Err(proc_err("wait for the command", e));
            }
        }
    }
    let command_time = start.elapsed();
    child_pid.store(0, Ordering::SeqCst);
    handle.close();
    let _ = forwarder.join();
    let status = status.ok_or_else(|| proc_err("find the command's exit status", Errno::CHILD))?;

    // Every descendant has ended: its events are queued.
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
    let sync_start = Instant::now();
    let syncs = final_sync(opts.final_sync, &targets);
    let sync_time = sync_start.elapsed();

    let stats = match &stats_dir {
        Some(dir) => {
            let p = dir.path().join("stats");
            let text = std::fs::read_to_string(&p).map_err(|e| io_err("read", p, e))?;
            Some(Stats::parse(&text))
        }
        None => None,
    };
    Ok(Outcome {
        status,
        orphans_reaped: orphans,
        syncs,
        skipped,
        stats,
        shim,
        command_time,
        sync_time,
        not_written,
        watch_error,
    })
}

fn final_sync(mode: FinalSync, targets: &[Target]) -> Vec<SyncReport> {
    let mut out = Vec::new();
    if mode == FinalSync::None {
        return out;
    }
    if mode == FinalSync::All {
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
        match crate::filter::install() {
            Ok(i) => Some(i),
            Err(e) => return e,
        }
    } else {
        None
    };
    before_exec(installed);
    let source = Command::new(program).args(args).exec();
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
