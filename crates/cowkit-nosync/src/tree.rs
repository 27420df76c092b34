//! The command's process tree: signals passed on, every descendant
//! waited for, and what is left when a second Ctrl-C gives up the wait.

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use rustix::io::Errno;
use rustix::process::{Pid, Signal, WaitOptions};
use signal_hook::consts::SIGINT;

/// A process the command left behind, still running when the wait for it
/// was given up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    /// Its pid.
    pub pid: i32,
    /// Its command line (arguments joined by spaces, at most 4 KiB read),
    /// or its name in brackets when it has none; control characters are
    /// written as `\xNN`.
    pub command: String,
}

/// The longest command line read for [`Left::command`]: the process
/// writes it, so its length is not trusted.
const CMDLINE_LIMIT: u64 = 4096;

/// Every descendant still running (not a zombie waiting to be reaped),
/// with its command line.
pub fn left_behind() -> Vec<Left> {
    descendants(rustix::process::getpid())
        .into_iter()
        .filter_map(|p| describe(p.as_raw_nonzero().get()))
        .collect()
}

fn describe(pid: i32) -> Option<Left> {
    use std::io::Read;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (open, close) = (stat.find('(')?, stat.rfind(')')?);
    if stat[close + 1..].trim_start().starts_with(['Z', 'X']) {
        return None;
    }
    let mut raw = Vec::new();
    std::fs::File::open(format!("/proc/{pid}/cmdline"))
        .ok()?
        .take(CMDLINE_LIMIT)
        .read_to_end(&mut raw)
        .ok()?;
    let args: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let command = if args.is_empty() {
        format!("[{}]", stat.get(open + 1..close).unwrap_or(""))
    } else {
        args.join(" ")
    };
    Some(Left {
        pid,
        command: printable(&command),
    })
}

/// `s` with control characters written as `\xNN`: the process chose its
/// command line, and it is printed on a terminal.
fn printable(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() {
            out.push_str(&format!("\\x{:02x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// How the wait ended.
#[derive(Debug)]
pub(crate) struct Reaped {
    /// The command's status, once it was reaped.
    pub(crate) status: Option<ExitStatus>,
    /// Other descendants reaped.
    pub(crate) orphans: u64,
    /// The wait was given up (a second SIGINT) with descendants left.
    pub(crate) abandoned: bool,
}

/// Reap every descendant until none is left or the wait is given up.
/// `wake` gets a message on each SIGCHLD and when the wait is given up;
/// between them, nothing is polled (a timeout of a second only guards
/// against a lost message).
pub(crate) fn wait_all(command: i32, fwd: &Forward, wake: &Receiver<()>) -> Result<Reaped, Errno> {
    let mut r = Reaped {
        status: None,
        orphans: 0,
        abandoned: false,
    };
    loop {
        match rustix::process::wait(WaitOptions::NOHANG) {
            Ok(Some((p, st))) => {
                if p.as_raw_nonzero().get() == command {
                    r.status = Some(ExitStatus::from_raw(st.as_raw()));
                    fwd.command_ended();
                } else {
                    r.orphans += 1;
                }
            }
            Ok(None) if fwd.abandoned() => {
                r.abandoned = true;
                return Ok(r);
            }
            Ok(None) => {
                let _ = wake.recv_timeout(Duration::from_secs(1));
            }
            Err(Errno::INTR) => {}
            Err(Errno::CHILD) => return Ok(r),
            Err(e) => return Err(e),
        }
    }
}

/// Where forwarded signals go.
#[derive(Debug, Default)]
pub(crate) struct Forward {
    /// The command's pid while it runs; 0 before it starts and once it
    /// has been reaped (its pid may then belong to another process).
    pub(crate) command: AtomicI32,
    /// Set once the command has been reaped.
    ended: AtomicBool,
    /// The last signal forwarded to the command (0: none), passed on to
    /// what is left of the tree when the command ends.
    last: AtomicI32,
    /// Descendants signalled after the command ended.
    pub(crate) signalled: std::sync::atomic::AtomicU64,
    /// Serialises the walks of the process tree.
    lock: std::sync::Mutex<()>,
    /// SIGINTs received (from the terminal or a process).
    interrupts: AtomicU32,
    /// Set by a second SIGINT once the command has ended: stop waiting
    /// for what it left behind.
    abandoned: AtomicBool,
    /// Told what is left after a first SIGINT passed on to it.
    on_waiting: Option<fn(&[Left])>,
}

impl Forward {
    /// Nothing forwarded yet; `on_waiting` as [`crate::run::RunOptions::on_waiting`].
    pub(crate) fn new(on_waiting: Option<fn(&[Left])>) -> Forward {
        Forward {
            on_waiting,
            ..Forward::default()
        }
    }

    /// A signal reached us. From the terminal (no sending process) it
    /// reached the whole foreground process group already, the command
    /// included: passed on only to descendants the command left behind
    /// (they may sit in other groups). From a process (kill, a service
    /// manager): to the command while it runs, else to every remaining
    /// descendant.
    /// A second SIGINT (from anywhere, counted over the whole run) that
    /// arrives once the command has ended gives up the wait for what it
    /// left behind: a daemon that ignores SIGINT (as a shell's background
    /// jobs do) would keep us waiting for ever.
    pub(crate) fn signal(&self, signal: i32, from_process: bool) {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        if signal == SIGINT {
            self.interrupts.fetch_add(1, Ordering::SeqCst);
        }
        if !self.ended.load(Ordering::SeqCst) {
            if !from_process {
                return;
            }
            self.last.store(signal, Ordering::SeqCst);
            let pid = Pid::from_raw(self.command.load(Ordering::SeqCst));
            if let (Some(pid), Some(sig)) = (pid, Signal::from_named_raw(signal)) {
                let _ = rustix::process::kill_process(pid, sig);
            }
            return;
        }
        self.to_descendants(signal);
        if signal != SIGINT {
            return;
        }
        if self.interrupts.load(Ordering::SeqCst) >= 2 {
            self.abandoned.store(true, Ordering::SeqCst);
        } else {
            self.tell_waiting();
        }
    }

    /// Whether the wait has been given up.
    pub(crate) fn abandoned(&self) -> bool {
        self.abandoned.load(Ordering::SeqCst)
    }

    /// The command has been reaped: a signal it was sent goes on to the
    /// descendants it left behind, which would otherwise keep us waiting.
    pub(crate) fn command_ended(&self) {
        let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.command.store(0, Ordering::SeqCst);
        self.ended.store(true, Ordering::SeqCst);
        let last = self.last.load(Ordering::SeqCst);
        if last != 0 {
            self.to_descendants(last);
        }
        // After a Ctrl-C, what is left now may ignore it: say so.
        if self.interrupts.load(Ordering::SeqCst) > 0 {
            self.tell_waiting();
        }
    }

    fn tell_waiting(&self) {
        if let Some(tell) = self.on_waiting {
            let left = left_behind();
            if !left.is_empty() {
                tell(&left);
            }
        }
    }

    fn to_descendants(&self, signal: i32) {
        let Some(sig) = Signal::from_named_raw(signal) else {
            return;
        };
        for pid in descendants(rustix::process::getpid()) {
            if rustix::process::kill_process(pid, sig).is_ok() {
                self.signalled.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

/// Every descendant of `me`, from the parent pids in `/proc/*/stat`. As a
/// child subreaper, `me` inherits the orphans of its tree, so this is
/// every process the command left behind. A process that forks during the
/// walk may be missed; its parent is not.
fn descendants(me: Pid) -> Vec<Pid> {
    let mut children: std::collections::HashMap<i32, Vec<i32>> = Default::default();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(ppid) = parent_of(&stat) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut out = Vec::new();
    let mut todo = vec![me.as_raw_nonzero().get()];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map(Vec::as_slice).unwrap_or_default() {
            if let Some(pid) = Pid::from_raw(c) {
                out.push(pid);
                todo.push(c);
            }
        }
    }
    out
}

/// The parent pid in a `/proc/PID/stat` line: `pid (comm) state ppid …`,
/// where `comm` may hold spaces and parentheses.
fn parent_of(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_lines_are_printable() {
        assert_eq!(printable("sleep 1000"), "sleep 1000");
        assert_eq!(printable("a\x1b[2Jb\n"), "a\\x1b[2Jb\\x0a");
    }
}
