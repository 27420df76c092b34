//! rpm's `<lua>` scriptlets run as rpm runs them: in rpm's own embedded
//! Lua (rpm 4.18's `librpmio.so.9` with Lua 5.3, or rpm 4.20's
//! `librpmio.so.10` with Lua 5.4: those the `rpm` program cowkit runs
//! loads), with rpm's `rpm` and `posix`
//! modules, rpm's macros, one process-global state per transaction, and
//! the whole process chrooted into the root.
//!
//! rpm runs a Lua scriptlet inside its own process. cowkit places the files
//! itself, so it keeps a process that plays that part: [`LuaHost::start`]
//! spawns `cowkit __lua-host` ([`host_main`]), which loads rpm's libraries
//! with `dlopen`, reads rpm's configuration as the `rpm` program does
//! (`rpmReadConfigFiles`, then each `--define`), which creates the Lua
//! state, takes the signal state and umask of rpm's transaction, chroots
//! into the root and stays there. [`LuaHost::run`] then does what rpm
//! 4.18's `runLuaScript` (lib/rpmscript.c) does for one scriptlet: sets
//! `rpm.next_file` for a file trigger and `RPM_INSTALL_PREFIX` for a
//! relocatable package, saves cwd and umask, `chdir("/")`, calls
//! `rpmluaRunScript` with rpm's arguments, ends a forked child that did not
//! `exec` as rpm does, restores cwd and umask. Globals persist between
//! scriptlets, as in rpm.
//!
//! The requests go over a private socket (length-prefixed frames with
//! caps, `proto`); the host's stdin is `/dev/null`, its stdout (Lua's
//! `print`) and stderr (rpm's `error: ...` lines) are cowkit's.
//!
//! A host that dies while a scriptlet runs (killed, crashed, its socket
//! closed) makes [`LuaHost::run`] return [`Error::Broken`] with how it
//! ended, at once: the parent waits on the host's process (a pidfd) as well
//! as on its socket, which a process the scriptlet forked may still hold.
//! Its Lua state is gone with it; a caller that goes on starts a new
//! [`LuaHost`] for the later scriptlets.
//!
//! ```no_run
//! use cowkit_rpmlua::{HostConfig, LuaHost, LuaScript, Outcome};
//!
//! cowkit_rpmlua::available().map_err(|why| format!("no Lua scriptlets: {why}"))?;
//! let mut host = LuaHost::start(&HostConfig {
//!     exe: std::env::current_exe()?,
//!     root: "/srv/root".into(),
//!     stdout_to_stderr: false,
//!     defines: vec![],
//! })?;
//! let args = cowkit_rpmlua::argv(&["<lua>".to_string()], Some(1), None);
//! let out = host.run(&LuaScript {
//!     name: "%post(foo-1-1.noarch)",
//!     body: "print(arg[2] + 1)",
//!     args: &args,
//!     arg1: true,
//!     arg2: false,
//!     prefixes: None,
//!     next_files: None,
//!     rpmver: Some("4.18.0"),
//! })?;
//! assert_eq!(out, Outcome::Ok);
//! host.finish()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod ffi;
mod host;
mod proto;
mod worker;

use std::path::PathBuf;
use std::process::ExitStatus;

pub use host::LuaHost;

/// How to start a [`LuaHost`].
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The cowkit binary: it answers the hidden `__lua-host` subcommand
    /// (which only calls [`host_main`]).
    pub exe: PathBuf,
    /// The root the scriptlets run in, absolute (as rpm's `--root`).
    pub root: PathBuf,
    /// Send the scriptlets' stdout (Lua's `print`, their children's output)
    /// to cowkit's stderr instead of its stdout.
    pub stdout_to_stderr: bool,
    /// Extra macros, as `rpm --define "NAME VALUE"` (rpm's rules: in
    /// `NAME`, `-` becomes `_` and a leading `%` is dropped).
    pub defines: Vec<(String, String)>,
}

/// One Lua scriptlet, as rpm would run it.
#[derive(Debug, Clone, Copy)]
pub struct LuaScript<'a> {
    /// rpm's scriptlet name, e.g. `%post(foo-1.0-1.noarch)`: rpm's
    /// `"%" + prefix ("", "file", "transfile") + tag name + "(" + NEVRA +
    /// ")"` (tag names: `prein`, `preun`, `post`, `postun`, `pretrans`,
    /// `posttrans`, `triggerprein`, `triggerun`, `triggerin`,
    /// `triggerpostun`, `verify`). It is the Lua chunk's name, so it shows
    /// in error messages (`[string "%post(...)"]:1: ...`).
    pub name: &'a str,
    /// The body, as in the header (after any `-e`/`-q` expansion, which is
    /// the caller's: rpm does it when it reads the script).
    pub body: &'a str,
    /// rpm's argv: `<lua>` and whatever else the header's program has, then
    /// `$1` and `$2` in decimal as rpm adds them (see [`argv`]). Lua sees it
    /// as `arg` and as the second value of `...`.
    pub args: &'a [String],
    /// rpm passed `$1` (its `arg1 >= 0`): the script gets rpm's prologue
    /// `arg[2] = tonumber(arg[2]);`.
    pub arg1: bool,
    /// rpm passed `$2` (`arg2 >= 0`): the prologue also has
    /// `arg[3] = tonumber(arg[3]);`.
    pub arg2: bool,
    /// The package's install prefixes (`RPMTAG_INSTPREFIXES`), which rpm
    /// gives as the global table `RPM_INSTALL_PREFIX` during the run;
    /// `None` when the header has none (the global is then left alone).
    pub prefixes: Option<&'a [String]>,
    /// What `rpm.next_file()` yields, in order, for a file trigger; `None`
    /// otherwise (then `rpm.next_file` is not set). After the last name it
    /// returns `nil`, and a further call starts the list again, as rpm 4.18
    /// does.
    pub next_files: Option<&'a [Vec<u8>]>,
    /// The version of the rpm that built the scriptlet's package
    /// (`RPMVERSION`). rpm 4.20 keeps it in Lua's registry while the
    /// scriptlet runs (its Lua warns that `posix.fork`, `exec`, `wait` and
    /// `redirect2null` are deprecated unless the package was built by an
    /// older rpm); rpm 4.18 does not use it.
    pub rpmver: Option<&'a str>,
}

/// What became of a scriptlet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// rpm would say `RPMRC_OK`.
    Ok,
    /// rpm would say it failed; its reason, as rpm logged it (e.g. `lua
    /// script failed: [string "%post(foo-1-1.noarch)"]:1: boom`).
    Failed(String),
}

/// Why a [`LuaHost`] could not do its part.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The root is not an absolute path.
    #[error("the root `{}` is not an absolute path (rpm's --root must begin with a /)", root.display())]
    RelativeRoot {
        /// The root given.
        root: PathBuf,
    },
    /// The socket to the host could not be made.
    #[error("cannot create the Lua host's socket")]
    Socket(#[source] std::io::Error),
    /// The host process could not be started.
    #[error("cannot start the Lua host `{} __lua-host`", exe.display())]
    Spawn {
        /// The program.
        exe: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The host started but cannot run rpm's Lua in this root.
    #[error("rpm's Lua cannot run scriptlets in `{}`: {reason}", root.display())]
    Unavailable {
        /// The root.
        root: PathBuf,
        /// What the host said (a missing library, a failed chroot, ...).
        reason: String,
    },
    /// The host died or answered nonsense; it has been killed and reaped.
    #[error("the Lua host (pid {pid}) for `{}` broke while {during}: {what}{}", root.display(), status.map(|s| format!(" ({s})")).unwrap_or_default())]
    Broken {
        /// Its process id.
        pid: u32,
        /// The root.
        root: PathBuf,
        /// What it was doing: `starting`, `ending` or the scriptlet's name.
        during: String,
        /// What went wrong.
        what: String,
        /// How the process ended, if known.
        status: Option<ExitStatus>,
        /// The I/O error, if any.
        #[source]
        source: Option<std::io::Error>,
    },
    /// The host exited with a failure when told to end.
    #[error("the Lua host (pid {pid}) for `{}` exited with {status}", root.display())]
    Exit {
        /// Its process id.
        pid: u32,
        /// The root.
        root: PathBuf,
        /// Its status.
        status: ExitStatus,
    },
    /// Part of a scriptlet has a NUL byte, which rpm's C strings cannot hold.
    #[error("scriptlet `{scriptlet}`: {what} contains a NUL byte, which rpm cannot pass to Lua")]
    Nul {
        /// The scriptlet's name.
        scriptlet: String,
        /// Which part.
        what: String,
    },
    /// The request would be over the host's limit.
    #[error(
        "scriptlet `{scriptlet}`: its request is {len} bytes, over the Lua host's limit of {max}"
    )]
    TooLarge {
        /// The scriptlet's name.
        scriptlet: String,
        /// The request's size.
        len: usize,
        /// The limit.
        max: usize,
    },
}

/// This crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Whether rpm's Lua can be loaded here (the `librpmio` and `librpm` of the
/// `rpm` program cowkit runs, 4.18's `.so.9` or 4.20's `.so.10`, with the
/// Lua they link, every function this crate calls); the reason if not.
/// It loads the libraries into this process (and keeps them) without
/// calling any of their functions.
pub fn available() -> std::result::Result<(), String> {
    ffi::load()
}

/// rpm's argv for a scriptlet: the header's program (`<lua>` and any
/// arguments after it), then `arg1` and `arg2` in decimal when given, as
/// `argvAddNum` adds them (rpm passes a count only when it is `>= 0`).
pub fn argv(prog: &[String], arg1: Option<u32>, arg2: Option<u32>) -> Vec<String> {
    let mut v = prog.to_vec();
    v.extend(arg1.map(|n| n.to_string()));
    v.extend(arg2.map(|n| n.to_string()));
    v
}

/// The host process's side: what the CLI's hidden `__lua-host` subcommand
/// calls, and nothing else. It serves one [`LuaHost`] on its stdin (a
/// socket) until that closes.
pub fn host_main() -> std::process::ExitCode {
    worker::main()
}
