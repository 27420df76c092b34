//! Sync calls suppressed for the commands of one transaction, set up once.
//!
//! `cowkit nosync -- CMD` starts a supervisor per command; about 40 ms of
//! its 60 ms run is fixed start-up (the shim written out, the fanotify
//! watch, the worker `cowkit` started again). A transaction that runs
//! hundreds of scriptlets in a root being built cannot pay that per
//! scriptlet. A [`Session`] pays the set-up once:
//!
//! - [`Session::start`] builds the seccomp programs, opens the root of
//!   every filesystem the root's tree spans (before anything runs, so that
//!   `syncfs` reports writeback errors from then on), and starts one
//!   thread that answers the sync calls of every process it is applied
//!   to;
//! - [`Session::apply`] arranges for a [`Command`]'s child to install the
//!   filter on itself between `fork` and `exec` (a `pre_exec` that only
//!   makes system calls: no allocation in the child). The program and
//!   everything it starts inherit it: a scriptlet's interpreter, its
//!   children, or a long-lived helper (a Lua host) and
//!   whatever it runs;
//! - [`Session::finish`], once those processes have ended, runs one
//!   `syncfs` per filesystem of the root (those mounted under it meanwhile
//!   included) and reports what was answered.
//!
//! Only the seccomp layer is used, no preload shim: a scriptlet runs
//! chrooted, where a host path in `LD_PRELOAD` makes `ld.so` print an
//! error into the scriptlet's output, and putting the shim inside the root
//! would add a file to the tree being built. The filter covers every kind
//! of binary. Its calls are answered by this process through a
//! user-notification listener per command (the child sends it over a
//! socket): `EBADF` for a descriptor that is not open, as from the kernel,
//! 0 otherwise, each counted. What the shim would add is only speed:
//! `O_SYNC`/`O_DSYNC` opens still write through.
//!
//! ```no_run
//! use cowkit_nosync::scoped::Session;
//!
//! let session = Session::start(std::path::Path::new("/srv/image/root"))?;
//! let mut cmd = std::process::Command::new("chroot");
//! cmd.args(["/srv/image/root", "/sbin/ldconfig"]);
//! session.apply(&mut cmd);
//! let status = cmd.status()?;
//! let report = session.finish()?; // one syncfs per filesystem
//! println!("{status}: {:?} answered, {} synced", report.answered, report.syncs.len());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::net::{AddressFamily, RecvFlags, SocketFlags, SocketType};

use crate::error::{io_err, proc_err, Error, Result};
use crate::filter::SYNC_CALLS;
use crate::mounts::{self, Fallback, Mount, Target};
use crate::run::SyncReport;

/// The sync calls of a transaction's commands, answered without running;
/// one final sync of the root's filesystems.
pub struct Session {
    root: PathBuf,
    /// `None` when this process's own sync calls are already answered by
    /// a filter (a nested run): the commands inherit it.
    filter: Option<Arc<cowkit_sys::seccomp::ExecFilter>>,
    answerer: Option<Answerer>,
    before: Vec<Mount>,
    targets: Vec<Target>,
    setup: Duration,
}

/// What a session did.
#[derive(Debug)]
pub struct Report {
    /// The canonical root.
    pub root: PathBuf,
    /// Commands that installed the filter and handed over its listener.
    pub processes: u64,
    /// Commands that installed the filter answering 0 itself, because an
    /// outer supervisor holds the one listener the kernel allows in a
    /// chain: their calls are not counted.
    pub uncounted: u64,
    /// Calls answered without running, per system call.
    pub answered: Vec<(&'static str, u64)>,
    /// Commands (with their descendants) still running at the end. Their
    /// sync calls from now on fail with `ENOSYS` (nobody answers them).
    pub still_running: u64,
    /// The final syncs, in order (empty when suppressed).
    pub syncs: Vec<SyncReport>,
    /// Why `sync(2)` ran first, when the final sync could not be limited
    /// to the root's filesystems (see [`crate::mounts::Fallback`]).
    pub full_sync: Option<Fallback>,
    /// The final sync was not run: this process's own sync calls are
    /// answered by an outer filter (a nested `cowkit nosync`), which syncs
    /// at its end. The commands' calls were answered by that filter.
    pub sync_suppressed: bool,
    /// The time [`Session::start`] took.
    pub setup: Duration,
    /// The time the final sync took.
    pub sync_time: Duration,
}

impl Report {
    /// All calls answered.
    pub fn total_answered(&self) -> u64 {
        self.answered.iter().map(|(_, n)| n).sum()
    }
}

impl Session {
    /// Prepare the filter, open the filesystems of `root` and start the
    /// thread that answers the calls.
    pub fn start(root: &Path) -> Result<Session> {
        let t0 = Instant::now();
        let canonical = std::fs::canonicalize(root).map_err(|e| io_err("resolve", root, e))?;
        let before = cowkit_fs::mountinfo::read()?;
        let (targets, skipped) = mounts::open_all(spanned(&before, &canonical));
        if let Some(s) = skipped.into_iter().next() {
            return Err(io_err(
                "open for the final sync",
                s.mount.mount_point,
                s.error,
            ));
        }
        let (filter, answerer) = match crate::run::sync_calls_suppressed() {
            true => (None, None),
            false => {
                let [notify, plain, last] = crate::filter::raw_programs()?;
                let (ours, theirs) = socketpair(SocketType::DGRAM)?;
                let filter = cowkit_sys::seccomp::ExecFilter {
                    notify,
                    plain,
                    last,
                    sock: theirs,
                };
                (Some(Arc::new(filter)), Some(Answerer::start(ours)?))
            }
        };
        Ok(Session {
            root: canonical,
            filter,
            answerer,
            before,
            targets,
            setup: t0.elapsed(),
        })
    }

    /// Make `cmd`'s child install the filter on itself before it executes
    /// the program; the program and all its descendants inherit it. Call
    /// before spawning; the session must outlive the processes.
    pub fn apply(&self, cmd: &mut Command) {
        if let Some(f) = &self.filter {
            cowkit_sys::seccomp::on_exec(cmd, Arc::clone(f));
        }
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Stop answering (the commands have ended), then `syncfs` every
    /// filesystem of the root, those mounted under it meanwhile included.
    /// A writeback error is [`Error::FinalSync`], after every filesystem
    /// was synced.
    pub fn finish(mut self) -> Result<Report> {
        let tally = self.answerer.take().map(Answerer::stop).unwrap_or_default();
        let (added, full_sync) = self.mounted_meanwhile();
        let mut targets = std::mem::take(&mut self.targets);
        targets.extend(added);
        let sync_suppressed = self.filter.is_none();
        let t = Instant::now();
        let syncs = match sync_suppressed {
            true => Vec::new(),
            false => {
                crate::run::final_sync(crate::run::FinalSync::Auto, full_sync.is_some(), &targets)
            }
        };
        let sync_time = t.elapsed();
        if let Some(i) = syncs.iter().position(|s| s.error.is_some()) {
            let mut syncs = syncs;
            let s = syncs.swap_remove(i);
            return Err(Error::FinalSync {
                mount_point: s.mount_point,
                fs_type: s.fs_type,
                source: s.error.expect("checked"),
            });
        }
        Ok(Report {
            root: std::mem::take(&mut self.root),
            processes: tally.processes,
            uncounted: tally.uncounted,
            answered: SYNC_CALLS
                .iter()
                .zip(tally.answered)
                .map(|(&(name, _), n)| (name, n))
                .collect(),
            still_running: tally.still_running,
            syncs,
            full_sync,
            sync_suppressed,
            setup: self.setup,
            sync_time,
        })
    }

    /// The root's filesystems mounted since the start, opened now, and a
    /// reason for `sync(2)` (as `cowkit nosync` decides it).
    fn mounted_meanwhile(&self) -> (Vec<Target>, Option<Fallback>) {
        let after = match cowkit_fs::mountinfo::read() {
            Ok(a) => a,
            Err(e) => {
                let error = e.to_string();
                return (Vec::new(), Some(Fallback::Unreadable { error }));
            }
        };
        let d = mounts::diff(&self.before, &after);
        let ours: Vec<Mount> = spanned(&d.added, &self.root);
        let (targets, skipped) = mounts::open_all(ours);
        let fallback = d.fallback.or_else(|| {
            skipped.first().map(|s| Fallback::Unopenable {
                at: s.mount.mount_point.clone(),
                error: s.error.to_string(),
            })
        });
        (targets, fallback)
    }
}

/// The filesystems the tree at `root` (canonical) spans: the mount that
/// holds it and every mount at or below it, writable and storing data
/// ([`mounts::candidates`]), one per device.
pub fn spanned(all: &[Mount], root: &Path) -> Vec<Mount> {
    // The last of the longest mount points above `root` is the one seen
    // there (later mounts cover earlier ones at the same place).
    let holder = all
        .iter()
        .enumerate()
        .filter(|(_, m)| root.starts_with(&m.mount_point))
        .max_by_key(|(i, m)| (m.mount_point.components().count(), *i))
        .map(|(i, _)| i);
    let ours: Vec<Mount> = all
        .iter()
        .enumerate()
        .filter(|(i, m)| Some(*i) == holder || m.mount_point.starts_with(root))
        .map(|(_, m)| m.clone())
        .collect();
    mounts::candidates(&ours)
}

fn socketpair(kind: SocketType) -> Result<(OwnedFd, OwnedFd)> {
    rustix::net::socketpair(AddressFamily::UNIX, kind, SocketFlags::CLOEXEC, None)
        .map_err(|e| proc_err("create a socket pair", e))
}

/// What the answering thread counted.
#[derive(Debug, Default)]
struct Tally {
    answered: [u64; 6],
    processes: u64,
    uncounted: u64,
    still_running: u64,
}

/// The thread that receives each command's listener and answers its
/// calls; dropping `wake` stops it.
struct Answerer {
    wake: Option<OwnedFd>,
    thread: Option<JoinHandle<Tally>>,
}

impl Answerer {
    fn start(sock: OwnedFd) -> Result<Answerer> {
        let (wake, woken) = socketpair(SocketType::STREAM)?;
        let thread = std::thread::Builder::new()
            .name("cowkit-nosync".into())
            .spawn(move || answer_all(&sock, &woken))
            .map_err(|e| proc_err("start the thread that answers sync calls", e))?;
        Ok(Answerer {
            wake: Some(wake),
            thread: Some(thread),
        })
    }

    fn stop(mut self) -> Tally {
        self.wake.take();
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Answerer {
    fn drop(&mut self) {
        self.wake.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn answer_all(sock: &OwnedFd, woken: &OwnedFd) -> Tally {
    let mut listeners: Vec<OwnedFd> = Vec::new();
    let mut t = Tally::default();
    let gone = PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL;
    loop {
        let mut fds = Vec::with_capacity(listeners.len() + 2);
        fds.push(PollFd::new(woken, PollFlags::IN));
        fds.push(PollFd::new(sock, PollFlags::IN));
        fds.extend(listeners.iter().map(|l| PollFd::new(l, PollFlags::IN)));
        if rustix::event::poll(&mut fds, None).is_err() {
            continue; // EINTR
        }
        let revents: Vec<PollFlags> = fds.iter().map(PollFd::revents).collect();
        drop(fds);
        if !revents[0].is_empty() {
            receive(sock, &mut listeners, &mut t);
            t.still_running = listeners.iter().filter(|l| !hung_up(l)).count() as u64;
            return t;
        }
        if !revents[1].is_empty() {
            receive(sock, &mut listeners, &mut t);
        }
        for (i, r) in revents[2..].iter().enumerate().rev() {
            if r.contains(PollFlags::IN) {
                answer_one(&listeners[i], &mut t);
            } else if r.intersects(gone) {
                // Every process of that filter has ended.
                listeners.swap_remove(i);
            }
        }
    }
}

/// Whether every process that had the listener's filter has ended.
fn hung_up(l: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(l, PollFlags::IN)];
    let zero = rustix::event::Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    rustix::event::poll(&mut fds, Some(&zero)).is_ok()
        && fds[0].revents().intersects(PollFlags::HUP | PollFlags::ERR)
}

/// Take every message waiting on `sock`: a listener (`L`), or a command
/// that could only install the filter answering 0 itself (`P`).
fn receive(sock: &OwnedFd, listeners: &mut Vec<OwnedFd>, t: &mut Tally) {
    loop {
        match crate::notify::recv_message(sock, RecvFlags::DONTWAIT) {
            Ok(m) if m.byte == Some(b'P') => t.uncounted += 1,
            Ok(m) => {
                if !m.fds.is_empty() {
                    listeners.extend(m.fds);
                    t.processes += 1;
                }
            }
            Err(_) => return,
        }
    }
}

/// Answer one call waiting on `l`, as `cowkit nosync`'s supervisor does.
fn answer_one(l: &OwnedFd, t: &mut Tally) {
    let Ok(n) = cowkit_sys::seccomp::notif_recv(l) else {
        return; // the caller died meanwhile
    };
    let errno = crate::notify::answer(&n);
    if !cowkit_sys::seccomp::notif_id_valid(l, n.id) {
        return;
    }
    if cowkit_sys::seccomp::notif_send(l, n.id, 0, errno).is_ok() {
        if let Some(i) = SYNC_CALLS.iter().position(|&(_, nr)| nr == n.nr as u32) {
            t.answered[i] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw
25 22 7:0 / /mnt/xfs rw - xfs /dev/loop0 rw
26 22 7:0 /sub /elsewhere rw - xfs /dev/loop0 rw
30 25 7:1 / /mnt/xfs/root/boot rw - ext4 /dev/loop1 rw
31 25 0:40 / /mnt/xfs/root/run rw - tmpfs tmpfs rw
32 22 7:2 / /mnt/other rw - btrfs /dev/loop2 rw
33 25 7:3 / /mnt/xfs/root/var rw - ext4 /dev/loop3 rw
34 33 7:4 / /mnt/xfs/root/var rw - btrfs /dev/loop4 rw
";

    fn points(m: &[Mount]) -> Vec<String> {
        m.iter()
            .map(|m| m.mount_point.display().to_string())
            .collect()
    }

    #[test]
    fn the_holder_and_everything_below_storing_data() {
        let all = cowkit_fs::mountinfo::parse(TABLE);
        let root = Path::new("/mnt/xfs/root");
        assert_eq!(
            points(&spanned(&all, root)),
            [
                "/mnt/xfs",
                "/mnt/xfs/root/boot",
                "/mnt/xfs/root/var",
                "/mnt/xfs/root/var"
            ]
        );
        // A root that is itself a mount point: the last mount there.
        let var = spanned(&all, Path::new("/mnt/xfs/root/var"));
        assert_eq!(var.len(), 2);
        assert_eq!(var[1].fs_type, "btrfs");
        // `/`: every filesystem.
        assert_eq!(spanned(&all, Path::new("/")).len(), 6);
    }
}
