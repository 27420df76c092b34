//! The seccomp layer's answers, given by the supervisor.
//!
//! The filter sends the sync calls of static binaries, Go programs and raw
//! `syscall()` to a user-notification listener (`SECCOMP_RET_USER_NOTIF`)
//! instead of answering 0 itself. The worker that installs the filter
//! (before it execs the command) hands the listener to the supervisor
//! over a socket it inherited ([`ENV`] names its descriptor), and the
//! supervisor answers each call:
//!
//! - `fsync`, `fdatasync`, `syncfs`, `sync_file_range` on a descriptor
//!   the calling thread does not have open (`/proc/TID/fd/N`): `EBADF`, as
//!   the kernel would; otherwise 0, without syncing. `syncfs(INT_MAX)`
//!   gets 0: it is the probe by which a nested `cowkit nosync` sees that
//!   its sync calls are already answered (the old filter's answer).
//! - `sync`, `msync`: 0.
//!
//! Every answer is counted, so `-v` reports the static binaries' calls too.
//! Where no listener can be had (a nested run: the kernel allows one
//! listener per filter chain), the filter answers 0 itself, as before.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use rustix::io::Errno;

use crate::filter::{FD_CALLS, SYNC_CALLS};

/// The environment variable that gives the worker the socket's number.
pub const ENV: &str = "COWKIT_NOSYNC_NOTIFY_FD";

/// A connected pair: the supervisor's end (close-on-exec) and the
/// worker's (inherited).
pub fn channel() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let (a, b) = rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::STREAM,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )?;
    // The worker's end without close-on-exec, so the worker inherits it.
    let inheritable = rustix::io::dup(&b)?;
    drop(b);
    Ok((a, inheritable))
}

/// Worker side: send `listener` over `sock` (then both are closed).
pub fn send_listener(sock: OwnedFd, listener: OwnedFd) -> std::io::Result<()> {
    let fds = [listener.as_fd()];
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = rustix::net::SendAncillaryBuffer::new(&mut space);
    anc.push(rustix::net::SendAncillaryMessage::ScmRights(&fds));
    rustix::net::sendmsg(
        &sock,
        &[std::io::IoSlice::new(b"L")],
        &mut anc,
        rustix::net::SendFlags::empty(),
    )?;
    Ok(())
}

/// Supervisor side: answers the calls until [`Answerer::finish`].
pub struct Answerer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<bool>>,
    counts: Arc<[AtomicU64; 6]>,
}

/// One message of a Unix socket, as [`recv_message`] takes it: its byte
/// (`None`: the peer closed, or the message was empty) and the descriptors
/// it carried.
pub(crate) struct Message {
    pub(crate) byte: Option<u8>,
    pub(crate) fds: Vec<OwnedFd>,
}

/// Receive one [`Message`] of one byte and at most one descriptor (made
/// close-on-exec) from `sock`; `flags` besides `CMSG_CLOEXEC`.
pub(crate) fn recv_message(
    sock: &OwnedFd,
    flags: rustix::net::RecvFlags,
) -> rustix::io::Result<Message> {
    let mut space = [std::mem::MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut anc = rustix::net::RecvAncillaryBuffer::new(&mut space);
    let mut byte = [0u8; 1];
    let r = rustix::net::recvmsg(
        sock,
        &mut [std::io::IoSliceMut::new(&mut byte)],
        &mut anc,
        rustix::net::RecvFlags::CMSG_CLOEXEC | flags,
    )?;
    let mut fds = Vec::new();
    for msg in anc.drain() {
        if let rustix::net::RecvAncillaryMessage::ScmRights(got) = msg {
            fds.extend(got);
        }
    }
    Ok(Message {
        byte: (r.bytes > 0).then_some(byte[0]),
        fds,
    })
}

/// The listener the worker sent over `sock`.
fn receive(sock: &OwnedFd) -> Option<OwnedFd> {
    let m = recv_message(sock, rustix::net::RecvFlags::empty()).ok()?;
    m.byte?; // the worker had no listener to send
    m.fds.into_iter().next()
}

/// The answer to one call: 0, or an errno.
pub(crate) fn answer(n: &cowkit_sys::seccomp::Notif) -> i32 {
    if !FD_CALLS.contains(&(n.nr as u32)) {
        return 0;
    }
    let fd = n.args[0] as u32 as i32;
    if fd == i32::MAX {
        return 0;
    }
    let open = std::fs::symlink_metadata(format!("/proc/{}/fd/{fd}", n.pid)).is_ok();
    if open {
        0
    } else {
        Errno::BADF.raw_os_error()
    }
}

impl Answerer {
    /// Wait (in a thread) for the worker to send its listener, then answer
    /// every call.
    pub fn start(sock: OwnedFd) -> Answerer {
        let stop = Arc::new(AtomicBool::new(false));
        let counts: Arc<[AtomicU64; 6]> = Arc::new(Default::default());
        let (s, c) = (stop.clone(), counts.clone());
        let thread = std::thread::spawn(move || {
            let Some(listener) = receive(&sock) else {
                return false;
            };
            drop(sock);
            loop {
                let mut fds = [rustix::event::PollFd::new(
                    &listener,
                    rustix::event::PollFlags::IN,
                )];
                let timeout = rustix::event::Timespec {
                    tv_sec: 0,
                    tv_nsec: 50_000_000,
                };
                let ready = rustix::event::poll(&mut fds, Some(&timeout)).unwrap_or(0);
                if ready == 0 || !fds[0].revents().contains(rustix::event::PollFlags::IN) {
                    if s.load(Ordering::Relaxed) {
                        return true;
                    }
                    continue;
                }
                let n = match cowkit_sys::seccomp::notif_recv(&listener) {
                    Ok(n) => n,
                    // Interrupted, or the caller died meanwhile.
                    Err(_) => continue,
                };
                let errno = answer(&n);
                // The thread may have died while /proc was read.
                if !cowkit_sys::seccomp::notif_id_valid(&listener, n.id) {
                    continue;
                }
                if cowkit_sys::seccomp::notif_send(&listener, n.id, 0, errno).is_ok() {
                    if let Some(i) = SYNC_CALLS.iter().position(|&(_, nr)| nr == n.nr as u32) {
                        c[i].fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        });
        Answerer {
            stop,
            thread: Some(thread),
            counts,
        }
    }

    /// Stop (every descendant has ended) and give the counts per call, or
    /// `None` when the worker sent no listener.
    pub fn finish(mut self) -> Option<Vec<(&'static str, u64)>> {
        self.stop.store(true, Ordering::Relaxed);
        let had = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or(false);
        had.then(|| {
            SYNC_CALLS
                .iter()
                .zip(self.counts.iter())
                .map(|(&(name, _), c)| (name, c.load(Ordering::Relaxed)))
                .collect()
        })
    }
}

impl Drop for Answerer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // A thread still waiting for the worker's message ends when the
        // worker's end closes (it has exited by now).
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The raw number to put in [`ENV`] for the worker's end.
pub fn env_value(fd: &OwnedFd) -> String {
    fd.as_raw_fd().to_string()
}
