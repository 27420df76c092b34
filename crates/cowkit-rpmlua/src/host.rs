//! The parent's side: starts the host process, sends it scriptlets, reads
//! its answers (bounded), and kills and reaps it when dropped.

use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::proto::{self, Dec, Enc};
use crate::{Error, HostConfig, LuaScript, Outcome, Result};

/// The host process of one transaction: rpm's Lua state, chrooted into the
/// root. Dropping it kills and reaps the process.
#[derive(Debug)]
pub struct LuaHost {
    child: Option<Child>,
    ctl: Option<Ctl>,
    root: PathBuf,
    pid: u32,
}

impl LuaHost {
    /// Starts `cfg.exe __lua-host`, which loads rpm's libraries, reads rpm's
    /// configuration (plus `cfg.defines`), and chroots into `cfg.root`.
    ///
    /// The host dies with the thread that starts it (`PR_SET_PDEATHSIG`,
    /// like cowkit's other workers): start it on a thread that outlives it.
    /// It inherits this process's environment, as rpm's scriptlets inherit
    /// rpm's.
    ///
    /// # Errors
    ///
    /// [`Error::RelativeRoot`] (rpm refuses a relative `--root` too);
    /// [`Error::Socket`], [`Error::Spawn`]; [`Error::Unavailable`] when the
    /// host cannot load rpm's Lua or enter the root (the reason says which);
    /// [`Error::Broken`] when it answers nothing sensible.
    pub fn start(cfg: &HostConfig) -> Result<LuaHost> {
        Self::start_with(cfg, &|_| {})
    }

    /// [`LuaHost::start`], with `prepare` applied to the host's command
    /// before it is spawned (e.g. a session that answers the sync calls of
    /// the host and of everything its scriptlets run).
    pub fn start_with(cfg: &HostConfig, prepare: &dyn Fn(&mut Command)) -> Result<LuaHost> {
        if !cfg.root.is_absolute() {
            return Err(Error::RelativeRoot {
                root: cfg.root.clone(),
            });
        }
        let (ours, theirs) = UnixStream::pair().map_err(Error::Socket)?;
        let mut cmd = Command::new(&cfg.exe);
        cmd.arg("__lua-host")
            .stdin(Stdio::from(OwnedFd::from(theirs)));
        if cfg.stdout_to_stderr {
            cmd.stdout(io::stderr());
        }
        prepare(&mut cmd);
        let child = cmd.spawn().map_err(|source| Error::Spawn {
            exe: cfg.exe.clone(),
            source,
        })?;
        // `cmd` holds the child's end of the socket: close it, or the
        // host's death is never seen as the end of the stream.
        drop(cmd);
        let ctl = Ctl::new(ours, child.id());
        let mut host = LuaHost {
            pid: child.id(),
            child: Some(child),
            ctl: Some(ctl),
            root: cfg.root.clone(),
        };
        let mut init = Enc::new(proto::INIT);
        let defines: Vec<String> = cfg
            .defines
            .iter()
            .map(|(n, v)| format!("{n} {v}"))
            .collect();
        // The libraries this process loaded (and checked): the host loads
        // the same ones, without asking `ldd` again.
        let libs = crate::ffi::loaded_libraries().map(crate::ffi::Libraries::to_fields);
        init.bytes(cfg.root.as_os_str().as_bytes())
            .list(&defines)
            .opt_list(libs.as_ref().map(|l| &l[..]));
        let reply = host.exchange(&init.0, "starting")?;
        let mut d = Dec(&reply);
        match d.u8() {
            Ok(proto::OK) if d.end().is_ok() => Ok(host),
            Ok(proto::UNAVAILABLE) => {
                let reason = d.bytes().map(String::from_utf8_lossy).unwrap_or_default();
                let reason = reason.into_owned();
                let _ = host.finish_inner();
                Err(Error::Unavailable {
                    root: cfg.root.clone(),
                    reason,
                })
            }
            _ => Err(host.broken("starting", "an unexpected answer".into(), None)),
        }
    }

    /// Runs one scriptlet exactly as rpm 4.18's `runLuaScript` would, in
    /// this transaction's Lua state. A scriptlet that fails is
    /// [`Outcome::Failed`] with rpm's reason (rpm has also logged it on
    /// stderr, as `error: lua script failed: ...`).
    ///
    /// # Errors
    ///
    /// [`Error::Nul`] and [`Error::TooLarge`] before anything is sent;
    /// [`Error::Broken`] when the host died while it ran (killed, crashed,
    /// exited, its socket closed) or answered nonsense: the host is then
    /// gone, reaped, with how it ended in the error, and its Lua state
    /// with it; [`LuaHost::is_broken`] says so from then on. A process the
    /// scriptlet forked that still holds the host's socket does not hide
    /// the host's death.
    pub fn run(&mut self, s: &LuaScript<'_>) -> Result<Outcome> {
        let req = encode_run(s)?;
        let reply = self.exchange(&req, s.name)?;
        let mut d = Dec(&reply);
        let out = match d.u8() {
            Ok(proto::OK) => Outcome::Ok,
            Ok(proto::FAILED) => match d.bytes() {
                Ok(r) => Outcome::Failed(String::from_utf8_lossy(r).into_owned()),
                Err(_) => return Err(self.broken(s.name, "a truncated answer".into(), None)),
            },
            _ => return Err(self.broken(s.name, "an unexpected answer".into(), None)),
        };
        if d.end().is_err() {
            return Err(self.broken(s.name, "an answer with trailing bytes".into(), None));
        }
        Ok(out)
    }

    /// Has the host write out what Lua's `print` left in C's `stdout`
    /// buffer: the scriptlets' prints stay there, as in rpm's process,
    /// until rpm's progress callback would flush them.
    ///
    /// # Errors
    ///
    /// [`Error::Broken`] when the host is gone or answers wrongly.
    pub fn flush_output(&mut self) -> Result<()> {
        let reply = self.exchange(&[proto::FLUSH], "a flush of its output")?;
        if reply != [proto::OK] {
            return Err(self.broken("a flush of its output", "an unexpected answer".into(), None));
        }
        Ok(())
    }

    /// Ends the host: closes its socket and waits for it to exit.
    ///
    /// # Errors
    ///
    /// [`Error::Exit`] when it did not exit with status 0.
    pub fn finish(mut self) -> Result<()> {
        self.finish_inner()
    }

    /// The host's process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the host was found dead or broken (and has been reaped):
    /// it runs nothing more, and a transaction needs a new one for its
    /// later scriptlets.
    pub fn is_broken(&self) -> bool {
        self.ctl.is_none()
    }

    /// Whether the host has ended while it ran nothing (an OOM kill, a
    /// signal between two scriptlets): reaped then, and
    /// [`LuaHost::is_broken`] from then on, so that the next scriptlet
    /// goes to a new host instead of failing on this one.
    pub fn ended_while_idle(&mut self) -> bool {
        if self.is_broken() {
            return true;
        }
        match self.child.as_mut().map(Child::try_wait) {
            Some(Ok(Some(_))) => {
                drop(self.ctl.take());
                self.child = None;
                true
            }
            _ => false,
        }
    }

    fn finish_inner(&mut self) -> Result<()> {
        drop(self.ctl.take());
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let status = child
            .wait()
            .map_err(|e| self.broken("ending", "cannot wait".into(), Some(e)))?;
        if status.success() {
            Ok(())
        } else {
            Err(Error::Exit {
                pid: self.pid,
                root: self.root.clone(),
                status,
            })
        }
    }

    /// Sends `req`, reads one reply (at most [`proto::MAX_REPLY`] bytes).
    fn exchange(&mut self, req: &[u8], what: &str) -> Result<Vec<u8>> {
        let Some(ctl) = self.ctl.as_mut() else {
            return Err(self.broken(what, "it was already found broken".into(), None));
        };
        let res =
            proto::write_frame(ctl, req).and_then(|()| proto::read_frame(ctl, proto::MAX_REPLY));
        match res {
            Ok(Some(reply)) => Ok(reply),
            Ok(None) => Err(self.broken(what, "its socket closed".into(), None)),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                Err(self.broken(what, "its socket closed".into(), None))
            }
            Err(e) if Ctl::is_gone(&e) => Err(self.broken(what, "it ended".into(), None)),
            Err(e) => Err(self.broken(what, "its socket failed".into(), Some(e))),
        }
    }

    /// The error for a host that broke; kills and reaps it, and says how it
    /// ended.
    fn broken(&mut self, during: &str, what: String, source: Option<io::Error>) -> Error {
        drop(self.ctl.take());
        let status = self.child.take().map(reap);
        Error::Broken {
            pid: self.pid,
            root: self.root.clone(),
            during: during.to_string(),
            what,
            status: status.flatten(),
            source,
        }
    }
}

/// The parent's end of the control socket. Every wait on it also waits
/// for the host's exit (its pidfd), so that a host that died is seen as
/// gone even when a process it forked still holds the other end.
#[derive(Debug)]
struct Ctl {
    sock: UnixStream,
    /// `None` where the kernel has no pidfds (before Linux 5.3): then only
    /// the socket's end tells.
    pidfd: Option<OwnedFd>,
}

/// The payload of the error that says the host exited.
#[derive(Debug)]
struct Gone;

impl std::fmt::Display for Gone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the Lua host exited")
    }
}

impl std::error::Error for Gone {}

impl Ctl {
    fn new(sock: UnixStream, pid: u32) -> Ctl {
        // The child is not reaped before the `Ctl` is dropped (`broken`
        // and `finish_inner` drop it first), so `pid` is still the host's.
        let pidfd = rustix::process::Pid::from_raw(pid as i32)
            .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok())
            .filter(|_| sock.set_nonblocking(true).is_ok());
        Ctl { sock, pidfd }
    }

    fn is_gone(e: &io::Error) -> bool {
        e.get_ref().is_some_and(|i| i.is::<Gone>())
    }

    /// Waits until the socket is ready for `events`, or fails with
    /// [`Gone`] once the host has exited and the socket is not ready.
    fn wait(&self, events: rustix::event::PollFlags) -> io::Result<()> {
        use rustix::event::{poll, PollFd, PollFlags};
        let Some(pidfd) = &self.pidfd else {
            return Ok(());
        };
        loop {
            let mut fds = [
                PollFd::new(&self.sock, events),
                PollFd::new(pidfd, PollFlags::IN),
            ];
            match poll(&mut fds, None) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
            if !fds[0].revents().is_empty() {
                return Ok(());
            }
            if !fds[1].revents().is_empty() {
                return Err(io::Error::other(Gone));
            }
        }
    }

    /// Runs `op` on the socket until it does not say "would block".
    fn retry<T>(
        &mut self,
        events: rustix::event::PollFlags,
        mut op: impl FnMut(&mut UnixStream) -> io::Result<T>,
    ) -> io::Result<T> {
        loop {
            match op(&mut self.sock) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.wait(events)?,
                r => return r,
            }
        }
    }
}

impl Read for Ctl {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.retry(rustix::event::PollFlags::IN, |s| s.read(buf))
    }
}

impl Write for Ctl {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.retry(rustix::event::PollFlags::OUT, |s| s.write(buf))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Gives a host whose socket closed a moment to exit with its own status
/// (up to 5 s), then kills it; returns its status.
fn reap(mut child: Child) -> Option<ExitStatus> {
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break,
        }
    }
    let _ = child.kill();
    child.wait().ok()
}

impl Drop for LuaHost {
    fn drop(&mut self) {
        drop(self.ctl.take());
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn encode_run(s: &LuaScript<'_>) -> Result<Vec<u8>> {
    let nul = |what: &str| Error::Nul {
        scriptlet: s.name.to_string(),
        what: what.to_string(),
    };
    let has_nul = |b: &[u8]| b.contains(&0);
    if has_nul(s.name.as_bytes()) {
        return Err(nul("its name"));
    }
    if has_nul(s.body.as_bytes()) {
        return Err(nul("its body"));
    }
    if s.args.iter().any(|a| has_nul(a.as_bytes())) {
        return Err(nul("an argument"));
    }
    if s.prefixes
        .unwrap_or_default()
        .iter()
        .any(|a| has_nul(a.as_bytes()))
    {
        return Err(nul("an install prefix"));
    }
    if s.next_files.unwrap_or_default().iter().any(|f| has_nul(f)) {
        return Err(nul("a file name for rpm.next_file()"));
    }
    if s.rpmver.is_some_and(|v| has_nul(v.as_bytes())) {
        return Err(nul("its package's rpm version"));
    }
    let rpmver: Option<[&[u8]; 1]> = s.rpmver.map(|v| [v.as_bytes()]);
    let mut e = Enc::new(proto::RUN);
    e.bytes(s.name.as_bytes())
        .bytes(s.body.as_bytes())
        .list(s.args)
        .u8(u8::from(s.arg1) | (u8::from(s.arg2) << 1))
        .opt_list(s.prefixes)
        .opt_list(s.next_files)
        .opt_list(rpmver.as_ref().map(|v| &v[..]));
    if e.0.len() > proto::MAX_REQUEST {
        return Err(Error::TooLarge {
            scriptlet: s.name.to_string(),
            len: e.0.len(),
            max: proto::MAX_REQUEST,
        });
    }
    Ok(e.0)
}
