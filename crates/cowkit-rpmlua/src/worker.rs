//! The host process (`cowkit __lua-host`): loads rpm's libraries, reads
//! rpm's configuration as the `rpm` program does, takes the signal state
//! and umask of rpm's transaction, chroots into the root once and then runs
//! one scriptlet per request, in rpm's one process-global Lua state.
//!
//! It prints nothing of its own: what it has to say goes back on the
//! control socket. Lua's `print`, rpm's log lines and the scriptlets'
//! children write to its stdout and stderr, as they would from rpm.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::ExitCode;

use rustix::fs::{Mode, OFlags};

use crate::ffi;
use crate::proto::{self, Dec, Enc};

/// The worker side; see [`crate::host_main`].
pub fn main() -> ExitCode {
    let Ok(ctl) = take_control() else {
        return ExitCode::FAILURE;
    };
    let mut ctl = UnixStream::from(ctl);
    match serve(&mut ctl) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

/// The parent gives the control socket as stdin: move it to a private
/// close-on-exec descriptor and put `/dev/null` on stdin, as rpm's
/// scriptlets have it.
fn take_control() -> io::Result<OwnedFd> {
    let ctl = rustix::io::fcntl_dupfd_cloexec(io::stdin().as_fd(), 3)?;
    let null = rustix::fs::open("/dev/null", OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    rustix::stdio::dup2_stdin(&null)?;
    Ok(ctl)
}

fn serve(ctl: &mut UnixStream) -> io::Result<()> {
    let Some(init) = proto::read_frame(ctl, proto::MAX_REQUEST)? else {
        return Ok(());
    };
    let reply = match decode_init(&init).and_then(|i| start(&i.root, &i.defines, i.libraries)) {
        Ok(()) => Enc::new(proto::OK),
        Err(reason) => {
            let mut e = Enc::new(proto::UNAVAILABLE);
            e.bytes(cut(reason).as_bytes());
            proto::write_frame(ctl, &e.0)?;
            return Ok(());
        }
    };
    proto::write_frame(ctl, &reply.0)?;
    // Lua's `print` goes to C's `stdout`, buffered as in rpm's process
    // (fully, unless it is a terminal): written out when the parent says
    // rpm would flush it, and at the end, as rpm's exit does.
    while let Some(frame) = proto::read_frame(ctl, proto::MAX_REQUEST)? {
        let reply = if frame == [proto::FLUSH] {
            ffi::flush_stdio();
            Enc::new(proto::OK)
        } else {
            run(&frame)?
        };
        proto::write_frame(ctl, &reply.0)?;
    }
    ffi::flush_stdio();
    Ok(())
}

/// The start message.
struct Init {
    root: std::path::PathBuf,
    defines: Vec<CString>,
    /// The libraries the parent loaded; `None`: those of the `rpm` program.
    libraries: Option<ffi::Libraries>,
}

fn decode_init(b: &[u8]) -> Result<Init, String> {
    let bad = |e: io::Error| format!("a malformed start message: {e}");
    let mut d = Dec(b);
    if d.u8().map_err(bad)? != proto::INIT {
        return Err("the first message is not a start message".into());
    }
    let root = Path::new(std::ffi::OsStr::from_bytes(d.bytes().map_err(bad)?)).to_path_buf();
    let defines = d
        .list()
        .map_err(bad)?
        .into_iter()
        .map(cli_define)
        .collect::<Result<Vec<_>, _>>()?;
    let libraries = match d.opt_list().map_err(bad)? {
        Some(f) => Some(ffi::Libraries::from_fields(&f)?),
        None => None,
    };
    d.end().map_err(bad)?;
    Ok(Init {
        root,
        defines,
        libraries,
    })
}

/// `cliDefine` (lib/poptALL.c): in the macro's name (up to white space or
/// `(`), `-` becomes `_`; a leading `%` is dropped.
fn cli_define(arg: &[u8]) -> Result<CString, String> {
    let mut s = arg.to_vec();
    for c in s.iter_mut() {
        if c.is_ascii_whitespace() || *c == b'(' {
            break;
        }
        if *c == b'-' {
            *c = b'_';
        }
    }
    if s.first() == Some(&b'%') {
        s.remove(0);
    }
    CString::new(s).map_err(|_| "a macro definition contains a NUL byte".to_string())
}

/// Everything rpm has done by the time it runs a transaction's first
/// scriptlet, in its order.
fn start(
    root: &Path,
    defines: &[CString],
    libraries: Option<ffi::Libraries>,
) -> Result<(), String> {
    // Die with the parent (the thread that started us), like the other
    // cowkit workers; the control socket's end stops us otherwise.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    ffi::load_these(libraries)?;
    // rpmcliInit: the locale, then rpmcliConfigured: the configuration
    // (which creates the global Lua state, before any chroot).
    ffi::set_locale_from_env();
    if !ffi::read_config_files() {
        return Err("rpmReadConfigFiles failed: rpm cannot read its configuration".into());
    }
    for d in defines {
        if !ffi::define_macro(d) {
            return Err(format!(
                "rpm refused the macro definition `{}`",
                d.to_string_lossy()
            ));
        }
    }
    ffi::hook_log();
    // rpmtsRun: SIGPIPE ignored, umask 022, signals blocked with the
    // transaction lock; rpmChrootSet: rpmugInit; rpmChrootIn: the chroot.
    ffi::transaction_signals()?;
    rustix::process::umask(Mode::from_raw_mode(0o022));
    ffi::ug_init();
    rustix::process::chroot(root)
        .map_err(|e| format!("cannot chroot into `{}`: {e}", root.display()))?;
    rustix::process::chdir("/")
        .map_err(|e| format!("cannot chdir to / in `{}`: {e}", root.display()))?;
    Ok(())
}

/// One request: the scriptlet as runLuaScript gets it, then its result.
fn run(frame: &[u8]) -> io::Result<Enc> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    let c = |b: &[u8]| CString::new(b).map_err(|_| bad("a NUL byte in a request"));
    let cs = |l: Vec<&[u8]>| l.into_iter().map(c).collect::<io::Result<Vec<_>>>();
    let mut d = Dec(frame);
    if d.u8()? != proto::RUN {
        return Err(bad("not a run request"));
    }
    let name = c(d.bytes()?)?;
    let body = d.bytes()?;
    let argv = cs(d.list()?)?;
    let flags = d.u8()?;
    let prefixes = d.opt_list()?.map(cs).transpose()?;
    let next_files = d.opt_list()?.map(cs).transpose()?;
    let rpmver = match d.opt_list()? {
        None => None,
        Some(l) if l.len() == 1 => Some(c(l[0])?),
        Some(_) => return Err(bad("more than one rpm version")),
    };
    d.end()?;
    // runLuaScript: "Hack to convert arguments to numbers for backwards
    // compat", prepended on the script's first line.
    let mut script = Vec::with_capacity(body.len() + 64);
    if flags & 1 != 0 {
        script.extend_from_slice(b"arg[2] = tonumber(arg[2]);");
    }
    if flags & 2 != 0 {
        script.extend_from_slice(b"arg[3] = tonumber(arg[3]);");
    }
    script.extend_from_slice(body);
    let script = c(&script)?;
    let (rc, errors) = ffi::run_lua_script(ffi::Script {
        name: &name,
        script: &script,
        argv: &argv,
        prefixes: prefixes.as_deref(),
        next_files,
        rpmver: rpmver.as_deref(),
    });
    if rc == ffi::Rc::Ok {
        return Ok(Enc::new(proto::OK));
    }
    let mut reason = errors.concat().trim_end().to_string();
    if reason.is_empty() {
        reason = "the scriptlet failed and rpm logged no reason".into();
    }
    let mut e = Enc::new(proto::FAILED);
    e.bytes(cut(reason).as_bytes());
    Ok(e)
}

/// `s` cut to [`proto::MAX_REASON`] bytes on a character boundary.
fn cut(mut s: String) -> String {
    if s.len() > proto::MAX_REASON {
        let mut at = proto::MAX_REASON;
        while !s.is_char_boundary(at) {
            at -= 1;
        }
        s.truncate(at);
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macro_definitions_as_cli_define_makes_them() {
        let d = |s: &str| cli_define(s.as_bytes()).unwrap().into_string().unwrap();
        assert_eq!(d("%_my-macro a-b"), "_my_macro a-b");
        assert_eq!(d("f-g(x) x-y"), "f_g(x) x-y");
        assert!(cli_define(b"a\0b").is_err());
    }

    #[test]
    fn reasons_are_cut_on_a_character_boundary() {
        let long = "é".repeat(proto::MAX_REASON);
        let c = cut(long);
        assert!(c.len() <= proto::MAX_REASON && c.len() > proto::MAX_REASON - 2);
        assert_eq!(cut("short".into()), "short");
    }
}
