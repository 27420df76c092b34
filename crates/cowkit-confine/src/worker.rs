//! The protocol between an unconfined parent and the worker it starts to
//! handle untrusted input: the worker confines itself before it reads a
//! byte, the parent checks that from outside before it lets the worker
//! start, and the result (or the error) comes back as JSON.
//!
//! ```text
//! parent: Worker::start                    worker: serve
//!   spawn: stdin=input, stdout=output,
//!          stderr=control socket        ─▶ prepare (trusted inputs: key files)
//!                                           apply the policy, self_check
//!   read "confined"                      ◀─ write "confined" on the control socket
//!   /proc/<worker>/status says Seccomp: 2
//!   write "G"                            ─▶ read "G", then work on stdin/stdout
//! Worker::finish
//!   read the reply, wait                 ◀─ reply JSON: the value, or the error
//!                                           and its causes and a hint; exit
//! ```
//!
//! The worker prints nothing: its stderr is the control socket, so passing
//! it needs no descriptor juggling, and it holds stdin, stdout and that
//! socket only. Without a policy ([`serve`] given `None`) the worker says
//! `unconfined`, which the parent accepts only when told to
//! ([`Worker::start`]'s `allow_unconfined`).

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::{Mode, Policy};

const CONFINED: &str = "confined";
const UNCONFINED: &str = "unconfined";
const GO: [u8; 1] = *b"G";

/// What the worker sends back, the last thing on the control socket.
#[derive(Serialize, Deserialize)]
struct Reply<T> {
    value: Option<T>,
    /// The error and its causes, outermost first.
    error: Vec<String>,
    hint: Option<String>,
}

/// Why the worker did not deliver a result.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The control socket pair could not be created.
    #[error("cannot create the worker's control socket")]
    Socket(#[source] io::Error),

    /// The worker process could not be started.
    #[error("cannot start the worker `{}`", program.display())]
    Spawn {
        /// The program of the command.
        program: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },

    /// The worker did not prove that it is confined; it was killed before
    /// it was let go.
    #[error("the worker is not confined: it said {said:?}, seccomp check: {check:?}")]
    NotConfined {
        /// What the worker wrote instead of `confined` (or `unconfined`
        /// when that was not allowed).
        said: String,
        /// Whether `/proc/<pid>/status` showed a seccomp filter: `Ok(false)`
        /// also when the worker did not claim to be confined, so it was not
        /// looked at.
        check: Result<bool, crate::Error>,
    },

    /// The worker went away before it could be told to start.
    #[error("the worker went away")]
    Gone(#[source] io::Error),

    /// Waiting for the worker to exit failed.
    #[error("cannot wait for the worker")]
    Wait(#[source] io::Error),

    /// The worker reported an error.
    #[error("the worker failed")]
    Failed {
        /// The worker's error and its causes.
        #[source]
        error: RemoteError,
        /// What the user may do about it.
        hint: Option<String>,
    },

    /// The worker exited without a result or an error (it crashed, was
    /// killed, or wrote something that is not a reply).
    #[error("the worker failed ({status}){}", colon_then(output))]
    Crashed {
        /// How it exited.
        status: ExitStatus,
        /// What it wrote on the control socket, if anything.
        output: String,
    },
}

fn colon_then(output: &str) -> String {
    if output.is_empty() {
        String::new()
    } else {
        format!(": {}", output.trim())
    }
}

/// An error the worker reported: its message and causes, carried across
/// the process boundary as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteError {
    message: String,
    source: Option<Box<RemoteError>>,
}

impl RemoteError {
    /// The error whose message is the first of `messages` and whose causes
    /// are the others, in order.
    pub fn from_messages(messages: Vec<String>) -> RemoteError {
        let mut it = messages.into_iter().rev();
        let mut e = RemoteError {
            message: it.next().unwrap_or_default(),
            source: None,
        };
        for message in it {
            e = RemoteError {
                message,
                source: Some(Box::new(e)),
            };
        }
        e
    }

    /// The message and its causes, outermost first.
    pub fn messages(&self) -> Vec<String> {
        let mut v = vec![self.message.clone()];
        let mut s = self.source.as_deref();
        while let Some(e) = s {
            v.push(e.message.clone());
            s = e.source.as_deref();
        }
        v
    }
}

impl std::fmt::Display for RemoteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RemoteError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source.as_deref().map(|e| e as _)
    }
}

/// An error on its way from the worker to the parent: the message and its
/// causes as text, and a hint for the user. Made from any error with
/// `From` (so `?` works in [`serve`]'s closures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    /// The error and its causes, outermost first.
    pub messages: Vec<String>,
    /// What the user may do about it.
    pub hint: Option<String>,
}

impl Failure {
    /// Adds a hint.
    #[must_use]
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl<E: std::error::Error + 'static> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            messages: cowkit_fs::error::chain(&e),
            hint: None,
        }
    }
}

/// The parent's handle on a worker that has proven it is confined and has
/// been let go.
#[derive(Debug)]
pub struct Worker {
    child: Child,
    control: BufReader<UnixStream>,
    confined: bool,
}

impl Worker {
    /// Starts `cmd` as a worker (a program that calls [`serve`]) with stdin
    /// `input`, stdout `output` and stderr the control socket; waits until
    /// it says it is confined, checks that `/proc/<pid>/status` shows a
    /// seccomp filter, and only then lets it go.
    ///
    /// With `allow_unconfined`, a worker that says `unconfined` (one given
    /// no policy) is let go too.
    ///
    /// # Errors
    ///
    /// [`WorkerError::Socket`], [`WorkerError::Spawn`];
    /// [`WorkerError::NotConfined`] after killing and reaping the worker
    /// (this includes a worker that failed before it could confine itself:
    /// `said` is then its reply); [`WorkerError::Gone`] if the go-ahead
    /// cannot be written.
    pub fn start(
        mut cmd: Command,
        input: impl Into<OwnedFd>,
        output: impl Into<OwnedFd>,
        allow_unconfined: bool,
    ) -> Result<Worker, WorkerError> {
        let (ours, theirs) = UnixStream::pair().map_err(WorkerError::Socket)?;
        let child = cmd
            .stdin(Stdio::from(input.into()))
            .stdout(Stdio::from(output.into()))
            .stderr(Stdio::from(OwnedFd::from(theirs)))
            .spawn()
            .map_err(|source| WorkerError::Spawn {
                program: PathBuf::from(cmd.get_program()),
                source,
            })?;
        // `cmd` keeps the child's ends of its standard streams open: close
        // them, or the control socket never reports the worker's exit.
        drop(cmd);
        let mut worker = Worker {
            child,
            control: BufReader::new(ours),
            confined: false,
        };

        let mut line = String::new();
        let _ = worker.control.read_line(&mut line);
        let said = line.trim_end();
        let check = if said == CONFINED {
            crate::mode_of(worker.child.id()).map(|m| m == Mode::Filter)
        } else {
            Ok(false)
        };
        worker.confined = match (&check, said) {
            (Ok(true), _) => true,
            (_, UNCONFINED) if allow_unconfined => false,
            _ => {
                let _ = worker.child.kill();
                let _ = worker.child.wait();
                return Err(WorkerError::NotConfined {
                    said: said.to_owned(),
                    check,
                });
            }
        };
        worker
            .control
            .get_mut()
            .write_all(&GO)
            .map_err(WorkerError::Gone)?;
        Ok(worker)
    }

    /// Whether the worker is confined (seen from outside); `false` only
    /// when unconfined workers were allowed.
    pub fn confined(&self) -> bool {
        self.confined
    }

    /// The worker's process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Reads the worker's reply and waits for it to exit.
    ///
    /// # Errors
    ///
    /// [`WorkerError::Failed`] with the worker's error chain and hint;
    /// [`WorkerError::Crashed`] if it exited unsuccessfully or without a
    /// reply; [`WorkerError::Wait`].
    pub fn finish<T: DeserializeOwned>(mut self) -> Result<T, WorkerError> {
        let mut text = String::new();
        // The reply is a few KiB; a worker that sends more is not trusted
        // with the parent's memory.
        let _ = (&mut self.control)
            .take(MAX_REPLY_BYTES)
            .read_to_string(&mut text);
        // Drain the rest, if any, so that the worker is not left blocked.
        let _ = io::copy(&mut self.control, &mut io::sink());
        let status = self.child.wait().map_err(WorkerError::Wait)?;
        match serde_json::from_str::<Reply<T>>(&text).ok() {
            Some(Reply {
                value: Some(value), ..
            }) if status.success() => Ok(value),
            Some(r) if !r.error.is_empty() => Err(WorkerError::Failed {
                error: RemoteError::from_messages(r.error),
                hint: r.hint,
            }),
            _ => Err(WorkerError::Crashed {
                status,
                output: text,
            }),
        }
    }
}

/// The longest reply the parent reads from a worker.
pub const MAX_REPLY_BYTES: u64 = 1 << 20;

/// A standard stream as a `File` of its own.
fn stdio_file(fd: impl AsFd) -> io::Result<File> {
    Ok(File::from(fd.as_fd().try_clone_to_owned()?))
}

fn send<T: Serialize>(control: &mut File, reply: &Reply<T>) {
    let _ = control.write_all(serde_json::to_string(reply).unwrap_or_default().as_bytes());
}

fn send_failure<T: Serialize>(control: &mut File, f: Failure) {
    send::<T>(
        control,
        &Reply {
            value: None,
            error: f.messages,
            hint: f.hint,
        },
    );
}

/// The worker's side, in a process started by [`Worker::start`].
///
/// 1. `prepare` reads the trusted inputs (key files): nothing can be opened
///    once confined.
/// 2. With a `policy`, applies it and proves it with
///    [`self_check`](crate::self_check), then says `confined`; without,
///    says `unconfined`.
/// 3. Waits for the parent's go-ahead, then calls `work` with what
///    `prepare` returned, stdin (the input) and stdout (the output) as
///    `File`s.
/// 4. Sends the result, or the error of whichever step failed.
///
/// Returns whether `work` succeeded (exit with status 0 then, 1
/// otherwise). Without a go-ahead (the parent refused the worker or went
/// away) nothing is read from stdin and nothing is sent.
pub fn serve<P, T: Serialize>(
    policy: Option<&Policy>,
    prepare: impl FnOnce() -> Result<P, Failure>,
    work: impl FnOnce(P, File, File) -> Result<T, Failure>,
) -> bool {
    // A `File`, not a `UnixStream`: plain read(2)/write(2), which the
    // filter allows (a stream would use sendto/recvfrom).
    let Ok(mut control) = stdio_file(io::stderr()) else {
        return false;
    };
    let ready = || -> Result<_, Failure> {
        let prepared = prepare()?;
        let input = stdio_file(io::stdin())?;
        let output = stdio_file(io::stdout())?;
        if let Some(policy) = policy {
            policy.apply()?;
            crate::self_check()?;
        }
        Ok((prepared, input, output))
    };
    let (prepared, input, output) = match ready() {
        Ok(r) => r,
        Err(f) => {
            send_failure::<T>(&mut control, f);
            return false;
        }
    };
    let said = if policy.is_some() {
        CONFINED
    } else {
        UNCONFINED
    };
    let _ = control.write_all(format!("{said}\n").as_bytes());
    let mut go = [0u8; 1];
    if control.read_exact(&mut go).is_err() || go != GO {
        return false;
    }
    match work(prepared, input, output) {
        Ok(value) => {
            send(
                &mut control,
                &Reply {
                    value: Some(value),
                    error: Vec::new(),
                    hint: None,
                },
            );
            true
        }
        Err(f) => {
            send_failure::<T>(&mut control, f);
            false
        }
    }
}
