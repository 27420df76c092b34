//! Signals during a transaction, as rpm takes them.
//!
//! rpm 4.18 blocks every signal while it holds the transaction lock
//! (`rpmtxnBegin` → `rpmsqBlock(SIG_BLOCK)`): a SIGINT, SIGTERM or SIGHUP
//! that arrives while packages are placed and their scriptlets run takes
//! effect only after the transaction, when the database agrees with the
//! tree; then rpm exits with 128 + the signal (`rpmsqTerm`, which takes
//! the caught signals in the order SIGINT, SIGQUIT, SIGHUP, SIGTERM). Its
//! scriptlets run with SIGINT and SIGQUIT blocked (`doScriptExec`), so a
//! terminal's Ctrl-C, which reaches the whole process group, does not stop
//! them either: a scriptlet that never ends holds the transaction until
//! its process is killed, and the transaction then goes on with that
//! scriptlet failed.
//!
//! cowkit's transaction does the same. [`crate::Prepared::run`] holds a
//! critical section; the program's signal handler calls [`deliver`], which
//! keeps the signal for [`take_deferred`] when a transaction runs and
//! returns the scriptlets running now (so that the user can be told which
//! process to kill), and otherwise lets the handler exit at once. Shell
//! scriptlets get rpm's signal mask ([`SCRIPTLET_BLOCKED`]); the Lua host
//! takes rpm's transaction mask itself (`cowkit_rpmlua`).

use std::sync::{Mutex, MutexGuard};

/// The signals a shell scriptlet starts with blocked, as rpm's
/// `doScriptExec` leaves them.
pub const SCRIPTLET_BLOCKED: [i32; 2] = [libc::SIGINT, libc::SIGQUIT];

/// rpm's order of the signals it exits on (`rpmsigTbl`).
const RPM_ORDER: [i32; 5] = [
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGHUP,
    libc::SIGTERM,
    libc::SIGPIPE,
];

/// A scriptlet running now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Running {
    /// rpm's name for it, e.g. `%post(httpd-2.4.62-1.x86_64)`.
    pub name: String,
    /// Its process once started: a shell scriptlet's interpreter, or for a
    /// `<lua>` scriptlet the transaction's Lua host it runs in.
    pub pid: Option<u32>,
    /// A `<lua>` scriptlet: its process is the Lua host, which blocks the
    /// signals rpm's transaction blocks (SIGTERM among them), so only a
    /// SIGKILL ends it.
    pub lua: bool,
}

struct State {
    depth: usize,
    caught: Vec<i32>,
    running: Vec<(u64, Running)>,
    next: u64,
}

static STATE: Mutex<State> = Mutex::new(State {
    depth: 0,
    caught: Vec::new(),
    running: Vec::new(),
    next: 0,
});

fn state() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A signal arrived. Outside a transaction `exit` is called with the lock
/// held, so that no transaction can begin before it ends the process (it
/// should not return). Inside one the signal is kept for
/// [`take_deferred`], and the scriptlets running now are returned.
pub fn deliver(signal: i32, exit: impl FnOnce()) -> Vec<Running> {
    let mut s = state();
    if s.depth == 0 {
        exit();
        return Vec::new();
    }
    if !s.caught.contains(&signal) {
        s.caught.push(signal);
    }
    s.running.iter().map(|(_, r)| r.clone()).collect()
}

/// The signal a transaction deferred, to exit with now that it has ended:
/// the first of those caught in rpm's order. Taking it forgets them all.
pub fn take_deferred() -> Option<i32> {
    let mut s = state();
    if s.depth > 0 {
        return None;
    }
    let caught = std::mem::take(&mut s.caught);
    RPM_ORDER
        .iter()
        .copied()
        .find(|sig| caught.contains(sig))
        .or_else(|| caught.first().copied())
}

/// A transaction in progress: signals are deferred while it lives.
#[must_use]
pub(crate) struct Critical(());

impl Critical {
    pub(crate) fn enter() -> Critical {
        state().depth += 1;
        Critical(())
    }
}

impl Drop for Critical {
    fn drop(&mut self) {
        state().depth -= 1;
    }
}

/// A scriptlet listed as running while it lives.
#[must_use]
pub(crate) struct Listed(u64);

impl Listed {
    pub(crate) fn new(name: &str, lua: bool) -> Listed {
        let mut s = state();
        s.next += 1;
        let id = s.next;
        s.running.push((
            id,
            Running {
                name: name.to_string(),
                pid: None,
                lua,
            },
        ));
        Listed(id)
    }

    /// Its process, once spawned.
    pub(crate) fn set_pid(&self, pid: u32) {
        let mut s = state();
        if let Some((_, r)) = s.running.iter_mut().find(|(id, _)| *id == self.0) {
            r.pid = Some(pid);
        }
    }
}

impl Drop for Listed {
    fn drop(&mut self) {
        state().running.retain(|(id, _)| *id != self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One test, since the state is the process's.
    #[test]
    fn signals_wait_for_the_transaction_and_name_its_scriptlets() {
        let mut exited = false;
        assert!(deliver(libc::SIGTERM, || exited = true).is_empty());
        assert!(exited, "outside a transaction the handler exits");
        {
            let _t = Critical::enter();
            let post = Listed::new("%post(a-1-1.noarch)", false);
            post.set_pid(42);
            let lua = Listed::new("%posttrans(b-1-1.noarch)", true);
            lua.set_pid(43);
            let mut exited = false;
            let running = deliver(libc::SIGTERM, || exited = true);
            assert!(!exited);
            assert_eq!(
                running,
                [
                    Running {
                        name: "%post(a-1-1.noarch)".into(),
                        pid: Some(42),
                        lua: false,
                    },
                    Running {
                        name: "%posttrans(b-1-1.noarch)".into(),
                        pid: Some(43),
                        lua: true,
                    }
                ]
            );
            drop(post);
            assert_eq!(deliver(libc::SIGINT, || exited = true).len(), 1);
            assert_eq!(take_deferred(), None, "not while it runs");
        }
        assert_eq!(take_deferred(), Some(libc::SIGINT), "rpm's order");
        assert_eq!(take_deferred(), None);
    }
}
