//! Which filesystems the command's process tree wrote to.
//!
//! One fanotify group (`FAN_REPORT_FID`, so events carry a filesystem id
//! and no descriptor) marks every candidate filesystem of the final sync
//! (`FAN_MARK_FILESYSTEM`) for every kind of change: data (`FAN_MODIFY`,
//! and `FAN_CLOSE_WRITE`, which also covers writes through `mmap`, whose
//! last reference is dropped at the latest when the process exits),
//! metadata (`FAN_ATTRIB`) and names (`FAN_CREATE`, `FAN_DELETE`,
//! `FAN_MOVED_FROM/TO`, `*_SELF`, directories included). The kernel
//! reports them for every process and every kind of binary (dynamic,
//! static, Go, raw `syscall()`), from inside the VFS.
//!
//! An event is the command's when its pid is a descendant of this
//! supervisor (the command's tree; orphans are reparented to the
//! supervisor, a child subreaper), found by walking `PPid` in `/proc`. A
//! pid that is already gone counts as the command's: a filesystem is
//! never left out because its writer exited early; at worst one more is
//! synced. A queue overflow counts every filesystem as written. Once a
//! filesystem is known to be written, its mark is removed, so a busy
//! filesystem costs few events.
//!
//! Needs `CAP_SYS_ADMIN` and Linux 5.1 (`FAN_REPORT_FID`); without them
//! [`Watch::start`] fails and the caller syncs every candidate, as before.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rustix::io::Errno;

use crate::mounts::Target;

const FAN_MODIFY: u64 = 0x2;
const FAN_CLOSE_WRITE: u64 = 0x8;
const FAN_ATTRIB: u64 = 0x4;
const FAN_MOVED_FROM: u64 = 0x40;
const FAN_MOVED_TO: u64 = 0x80;
const FAN_CREATE: u64 = 0x100;
const FAN_DELETE: u64 = 0x200;
const FAN_DELETE_SELF: u64 = 0x400;
const FAN_MOVE_SELF: u64 = 0x800;
const FAN_Q_OVERFLOW: u64 = 0x4000;
const FAN_ONDIR: u64 = 0x4000_0000;
const MASK: u64 = FAN_MODIFY
    | FAN_CLOSE_WRITE
    | FAN_ATTRIB
    | FAN_MOVED_FROM
    | FAN_MOVED_TO
    | FAN_CREATE
    | FAN_DELETE
    | FAN_DELETE_SELF
    | FAN_MOVE_SELF
    | FAN_ONDIR;
/// `FAN_EVENT_INFO_TYPE_FID`, `..._DFID_NAME`, `..._DFID`.
const FID_RECORDS: [u8; 3] = [1, 2, 3];

/// Whose an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Owner {
    Command,
    Other,
    Gone,
}

/// The fsid (`statfs`'s `f_fsid`, as the two 32-bit words an event
/// carries) of an open file. `statvfs` gives it as `val[0] | val[1] << 32`.
fn fsid_of(file: &std::fs::File) -> Option<[u8; 8]> {
    let v = rustix::fs::fstatvfs(file).ok()?.f_fsid;
    let mut b = [0u8; 8];
    b[..4].copy_from_slice(&(v as u32).to_ne_bytes());
    b[4..].copy_from_slice(&((v >> 32) as u32).to_ne_bytes());
    Some(b)
}

/// Whether `pid` belongs to the tree below `supervisor` (the supervisor
/// itself excluded).
fn owner(pid: i32, supervisor: i32) -> Owner {
    if pid == supervisor {
        return Owner::Other;
    }
    let mut p = pid;
    for _ in 0..4096 {
        if p == supervisor {
            return Owner::Command;
        }
        if p <= 1 {
            return Owner::Other;
        }
        let Ok(stat) = std::fs::read(format!("/proc/{p}/stat")) else {
            return if p == pid { Owner::Gone } else { Owner::Other };
        };
        // `pid (comm) state ppid ...`: comm may hold anything but `)` ends it last.
        let Some(close) = stat.iter().rposition(|&b| b == b')') else {
            return Owner::Gone;
        };
        let ppid = stat[close + 1..]
            .split(|&b| b == b' ')
            .filter(|f| !f.is_empty())
            .nth(1)
            .and_then(|f| std::str::from_utf8(f).ok()?.parse().ok());
        match ppid {
            Some(pp) => p = pp,
            None => return Owner::Gone,
        }
    }
    Owner::Other
}

/// What the watch found.
#[derive(Debug, Default)]
struct State {
    /// Per target: written by the command.
    written: Vec<bool>,
    /// Events of other processes (for `-v`).
    others: u64,
}

/// A running watch over the final sync's candidates.
pub struct Watch {
    group: Arc<OwnedFd>,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<()>>,
    fsids: Arc<Vec<Option<[u8; 8]>>>,
    paths: Arc<Vec<CString>>,
}

/// Per target: whether the command wrote to it; and how many events were
/// other processes'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// One flag per target, in order.
    pub targets: Vec<bool>,
    /// Events of other processes seen.
    pub other_events: u64,
}

fn pump(
    group: &OwnedFd,
    state: &Mutex<State>,
    fsids: &[Option<[u8; 8]>],
    paths: &[CString],
    supervisor: i32,
    buf: &mut [u8],
) {
    loop {
        let n = match rustix::io::read(group, &mut *buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(Errno::INTR) => continue,
            Err(_) => return, // EAGAIN: drained
        };
        let mut at = 0;
        while at + 24 <= n {
            let ev = &buf[at..n];
            let len = u32::from_ne_bytes(ev[0..4].try_into().expect("4")) as usize;
            let meta_len = u16::from_ne_bytes(ev[6..8].try_into().expect("2")) as usize;
            if len < 24 || len > ev.len() || meta_len < 24 || meta_len > len {
                break;
            }
            let mask = u64::from_ne_bytes(ev[8..16].try_into().expect("8"));
            let pid = i32::from_ne_bytes(ev[20..24].try_into().expect("4"));
            let mut st = state.lock().unwrap_or_else(|e| e.into_inner());
            if mask & FAN_Q_OVERFLOW != 0 {
                st.written.iter_mut().for_each(|w| *w = true);
            } else {
                // The first fid record names the filesystem.
                let mut rec = meta_len;
                let mut fsid = None;
                while rec + 12 <= len {
                    let kind = ev[rec];
                    let rlen =
                        u16::from_ne_bytes(ev[rec + 2..rec + 4].try_into().expect("2")) as usize;
                    if rlen < 4 || rec + rlen > len {
                        break;
                    }
                    if FID_RECORDS.contains(&kind) {
                        let mut b = [0u8; 8];
                        b.copy_from_slice(&ev[rec + 4..rec + 12]);
                        fsid = Some(b);
                        break;
                    }
                    rec += rlen;
                }
                let hit: Vec<usize> = fsids
                    .iter()
                    .enumerate()
                    .filter(|(i, f)| fsid.is_some() && **f == fsid && !st.written[*i])
                    .map(|(i, _)| i)
                    .collect();
                if !hit.is_empty() {
                    match owner(pid, supervisor) {
                        Owner::Command | Owner::Gone => {
                            for i in hit {
                                st.written[i] = true;
                                // Known now: no more events from it.
                                let _ = cowkit_sys::fanotify::mark_filesystem(
                                    group.as_fd(),
                                    false,
                                    MASK,
                                    &paths[i],
                                );
                            }
                        }
                        Owner::Other => st.others += 1,
                    }
                }
            }
            drop(st);
            at += len;
        }
    }
}

impl Watch {
    /// Start watching `targets` for this process's descendants. Fails
    /// without `CAP_SYS_ADMIN`, on kernels without `FAN_REPORT_FID`, or
    /// when a target's filesystem cannot be marked.
    pub fn start(targets: &[Target]) -> std::io::Result<Watch> {
        let group = Arc::new(cowkit_sys::fanotify::init_fid()?);
        let mut paths = Vec::with_capacity(targets.len());
        let mut fsids = Vec::with_capacity(targets.len());
        for t in targets {
            let p = CString::new(t.mount.mount_point.as_os_str().as_bytes())
                .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
            cowkit_sys::fanotify::mark_filesystem(group.as_fd(), true, MASK, &p)?;
            fsids.push(fsid_of(&t.file));
            paths.push(p);
        }
        if fsids.iter().any(Option::is_none) {
            return Err(std::io::Error::other("a filesystem has no fsid"));
        }
        let state = Arc::new(Mutex::new(State {
            written: vec![false; targets.len()],
            others: 0,
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let (fsids, paths) = (Arc::new(fsids), Arc::new(paths));
        let supervisor = rustix::process::getpid().as_raw_nonzero().get();
        let reader = {
            let (group, state, stop, fsids, paths) = (
                group.clone(),
                state.clone(),
                stop.clone(),
                fsids.clone(),
                paths.clone(),
            );
            std::thread::spawn(move || {
                let mut buf = vec![0u8; 64 * 1024];
                while !stop.load(Ordering::Relaxed) {
                    let mut fds = [rustix::event::PollFd::new(
                        &*group,
                        rustix::event::PollFlags::IN,
                    )];
                    let timeout = rustix::event::Timespec {
                        tv_sec: 0,
                        tv_nsec: 50_000_000,
                    };
                    let _ = rustix::event::poll(&mut fds, Some(&timeout));
                    pump(&group, &state, &fsids, &paths, supervisor, &mut buf);
                }
            })
        };
        Ok(Watch {
            group,
            state,
            stop,
            reader: Some(reader),
            fsids,
            paths,
        })
    }

    /// Stop (once every descendant has ended: their events are queued by
    /// then) and say which targets were written.
    pub fn finish(mut self) -> Written {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let supervisor = rustix::process::getpid().as_raw_nonzero().get();
        let mut buf = vec![0u8; 64 * 1024];
        pump(
            &self.group,
            &self.state,
            &self.fsids,
            &self.paths,
            supervisor,
            &mut buf,
        );
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        Written {
            targets: st.written.clone(),
            other_events: st.others,
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_is_the_commands_and_the_parent_is_not() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert_eq!(owner(child.id() as i32, me), Owner::Command);
        assert_eq!(owner(me, me), Owner::Other);
        let parent = rustix::process::getppid().map_or(1, |p| p.as_raw_nonzero().get());
        assert_eq!(owner(parent, me), Owner::Other);
        assert_eq!(owner(i32::MAX - 7, me), Owner::Gone);
        let _ = child.kill();
        let _ = child.wait();
    }
}
