//! Package scriptlets, run the way `rpm --root` runs them.
//!
//! rpm writes a scriptlet's body to a temporary file in the root's
//! `/var/tmp` (creating it when missing; cowkit: `script` in a directory
//! `/var/tmp/cowkit-script.*` of its own), chroots into the root, and runs
//! the interpreter from the header (`/bin/sh` when none is given) with the
//! file and `$1`: the number of instances of the package that will be
//! installed when the operation completes (1 install, 2 upgrade, 1 for the
//! old package's `%preun`/`%postun` during an upgrade, 0 on erase). The
//! working directory is `/`, stdin is `/dev/null`, `PATH` is rpm's
//! `%_install_script_path` and the umask 022. A scriptlet that is only a
//! program (`%post -p /sbin/ldconfig`) runs without a file and without
//! arguments: rpm 4.18 (`runExtScript`) adds `$1` only after a body's
//! file.
//!
//! What cowkit cannot run exactly like rpm is refused before anything is
//! touched ([`Scriptlet::runnable`]): `<lua>` scriptlets (rpm runs them in
//! its own embedded interpreter), and bodies rpm expands with its own
//! macros (`-e`) or query formats (`-q`) at install time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cowkit_fs::root::{RelPath, Root};
use cowkit_fs::IoError;
use rpm::IndexTag;

use crate::{Error, Result};

/// The prefix of the directories in the root's `/var/tmp` that hold a
/// scriptlet's body while it runs.
pub const SCRIPT_PREFIX: &str = "cowkit-script.";

/// Remove from `root`'s `/var/tmp` the scriptlet directories no live
/// process holds (a scriptlet that killed cowkit left its own); returns
/// how many.
pub fn sweep(root: &Root) -> Result<usize> {
    let rel = RelPath::new("var/tmp").expect("a valid path");
    if root.real_path(&rel)?.is_none() {
        return Ok(0);
    }
    let dir = root.open_dir(&rel)?;
    Ok(cowkit_fs::workdir::sweep(
        std::os::fd::AsFd::as_fd(&dir),
        &root.display(&rel),
        SCRIPT_PREFIX,
    )?)
}

/// When a scriptlet runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
pub enum Phase {
    /// `%pretrans`: before anything of the transaction is placed.
    PreTrans,
    /// `%pre`: before the package's files.
    Pre,
    /// `%post`: after its files.
    Post,
    /// `%posttrans`: after the whole transaction.
    PostTrans,
    /// `%preun`: of an old version, before its files are removed.
    PreUn,
    /// `%postun`: of an old version, after its files are removed.
    PostUn,
    /// `%preuntrans` (rpm 4.20): of an old version, before anything of the
    /// transaction is changed (after every `%pretrans`).
    PreUnTrans,
    /// `%postuntrans` (rpm 4.20): of an old version, after the whole
    /// transaction (after every `%posttrans`).
    PostUnTrans,
    /// A trigger of any kind (its name is in the plan's [`crate::plan::Run`]).
    Trigger,
    /// rpm 4.20's creation of the users and groups a package provides as
    /// sysusers data: the rpm program's `%__systemd_sysusers`, run on the
    /// host (not chrooted) with `--root`, the `sysusers.d` lines on stdin,
    /// before the package's `%pre` (`runSysusers`, `lib/psm.c`).
    Sysusers,
}

impl Phase {
    /// The spec file's name (`%pre`).
    pub fn name(self) -> &'static str {
        match self {
            Phase::PreTrans => "%pretrans",
            Phase::Pre => "%pre",
            Phase::Post => "%post",
            Phase::PostTrans => "%posttrans",
            Phase::PreUn => "%preun",
            Phase::PostUn => "%postun",
            Phase::PreUnTrans => "%preuntrans",
            Phase::PostUnTrans => "%postuntrans",
            Phase::Trigger => "%trigger",
            Phase::Sysusers => "%sysusers",
        }
    }

    /// rpm's word for it in a scriptlet's name (`%prein(NEVRA)`).
    pub fn rpm_name(self) -> &'static str {
        match self {
            Phase::PreTrans => "pretrans",
            Phase::Pre => "prein",
            Phase::Post => "post",
            Phase::PostTrans => "posttrans",
            Phase::PreUn => "preun",
            Phase::PostUn => "postun",
            Phase::PreUnTrans => "preuntrans",
            Phase::PostUnTrans => "postuntrans",
            Phase::Trigger => "trigger",
            Phase::Sysusers => "sysusers",
        }
    }

    /// rpm stops the package when one of these fails (rpm 4.18
    /// `lib/rpmscript.c`: pretrans, pre, preun are critical; rpm 4.20 adds
    /// preuntrans); the others only warn.
    pub fn critical(self) -> bool {
        matches!(
            self,
            Phase::PreTrans | Phase::Pre | Phase::PreUn | Phase::PreUnTrans | Phase::Sysusers
        )
    }

    fn tags(self) -> (IndexTag, IndexTag, IndexTag) {
        use IndexTag::*;
        match self {
            Phase::PreTrans => (RPMTAG_PRETRANS, RPMTAG_PRETRANSPROG, RPMTAG_PRETRANSFLAGS),
            Phase::Pre => (RPMTAG_PREIN, RPMTAG_PREINPROG, RPMTAG_PREINFLAGS),
            Phase::Post => (RPMTAG_POSTIN, RPMTAG_POSTINPROG, RPMTAG_POSTINFLAGS),
            Phase::PostTrans => (
                RPMTAG_POSTTRANS,
                RPMTAG_POSTTRANSPROG,
                RPMTAG_POSTTRANSFLAGS,
            ),
            Phase::PreUn => (RPMTAG_PREUN, RPMTAG_PREUNPROG, RPMTAG_PREUNFLAGS),
            Phase::PostUn => (RPMTAG_POSTUN, RPMTAG_POSTUNPROG, RPMTAG_POSTUNFLAGS),
            Phase::PreUnTrans => (
                RPMTAG_PREUNTRANS,
                RPMTAG_PREUNTRANSPROG,
                RPMTAG_PREUNTRANSFLAGS,
            ),
            Phase::PostUnTrans => (
                RPMTAG_POSTUNTRANS,
                RPMTAG_POSTUNTRANSPROG,
                RPMTAG_POSTUNTRANSFLAGS,
            ),
            // Triggers are read by `cowkit_rpmdb::triggers`; sysusers data
            // by `crate::pkg`, from the provides.
            Phase::Trigger | Phase::Sysusers => (
                RPMTAG_TRIGGERSCRIPTS,
                RPMTAG_TRIGGERSCRIPTPROG,
                RPMTAG_TRIGGERSCRIPTFLAGS,
            ),
        }
    }
}

/// rpm's scriptlet flags (`lib/rpmscript.h`).
const FLAG_EXPAND: u32 = 1;
const FLAG_QFORMAT: u32 = 2;

/// rpm's `%_install_script_path`: its value in rpm 4.18's `macros.in`,
/// and `SCRIPT_PATH` in its `lib/rpmscript.c` (`rpm -E
/// %_install_script_path` on the host says the same).
pub const SCRIPT_PATH: &str = "/sbin:/bin:/usr/sbin:/usr/bin:/usr/X11R6/bin";

/// Runs `<lua>` scriptlets in rpm's own interpreter, one state per
/// transaction (`cowkit_rpmlua::LuaHost` through the CLI).
///
/// The interpreter lives in a process of its own. When that process dies
/// while a scriptlet runs (killed because the scriptlet hung, crashed), the
/// scriptlet has failed, as a shell scriptlet whose process died has:
/// [`Lua::run`] says `Ok(Some(why))` with how the process ended, and
/// [`Lua::alive`] is false from then on. The transaction then starts a new
/// one for its later `<lua>` scriptlets (without the globals of the dead
/// one) and goes on.
pub trait Lua {
    /// Run `body` with the header's `prog` (`"<lua>"`, ...) as `how`
    /// says (rpm's name, `$1`, `$2`, a file trigger's files for
    /// `rpm.next_file()`, the install prefixes). `Ok(None)` when it
    /// succeeded, `Ok(Some(why))` when it failed (also when the
    /// interpreter's process died meanwhile).
    fn run(&mut self, body: &str, prog: &[String], how: &Invocation<'_>) -> Result<Option<String>>;

    /// Whether it can run another scriptlet: false once its process has
    /// died, with a scriptlet or between two.
    fn alive(&mut self) -> bool;

    /// Its process, which a user kills to end a scriptlet that never ends.
    fn pid(&self) -> u32;

    /// Write out what the scriptlets' `print` left buffered in rpm's
    /// `stdout`, as rpm's progress callback does (`fflush(stdout)` in
    /// `rpmShowProgress`). A host that is gone has nothing to write.
    fn flush(&mut self);
}

/// How a scriptlet is run: rpm's name for it, `$1`/`$2` (none, one or
/// both), a file trigger's input, the package's install prefixes.
#[derive(Clone, Copy, Debug)]
pub struct Invocation<'a> {
    /// rpm's name, e.g. `%post(bash-5.2-1.x86_64)`.
    pub name: &'a str,
    /// `$1`, then `$2`.
    pub args: &'a [i64],
    /// A file trigger's files.
    pub files: Option<&'a [Vec<u8>]>,
    /// `RPM_INSTALL_PREFIX*`.
    pub prefixes: &'a [String],
    /// The version of the rpm that built the scriptlet's package.
    pub rpmver: Option<&'a str>,
}

/// What every scriptlet run of a transaction shares.
pub struct RunContext<'a> {
    /// Scriptlets' stdout goes to stderr.
    pub stdout_to_stderr: bool,
    /// rpm's Lua, when it can be loaded.
    pub lua: Option<&'a mut dyn Lua>,
    /// The transaction's session that answers sync calls, if any.
    pub nosync: Option<&'a cowkit_nosync::scoped::Session>,
}

/// One scriptlet of one package.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scriptlet {
    /// When it runs.
    pub phase: Phase,
    /// The body (empty for a program-only scriptlet).
    pub body: String,
    /// Interpreter and arguments.
    pub prog: Vec<String>,
    /// rpm's flags.
    pub flags: u32,
    /// The version of the rpm that built its package (`RPMVERSION`): rpm
    /// 4.20's Lua warns of deprecated calls by it.
    pub rpmver: Option<String>,
}

impl Scriptlet {
    /// The `phase` scriptlet of a package header, if it has one.
    pub fn of_header(h: &rpm::Header<IndexTag>, phase: Phase) -> Option<Scriptlet> {
        let (body_tag, prog_tag, flags_tag) = phase.tags();
        let body = h.get_entry_data_as_string(body_tag).ok();
        // Old packages store the program as one string, newer ones as an
        // array (interpreter and arguments).
        let prog: Vec<String> = match h.get_entry_data_as_string_array(prog_tag) {
            Ok(v) => v.into_iter().map(str::to_string).collect(),
            Err(_) => h
                .get_entry_data_as_string(prog_tag)
                .map(|s| vec![s.to_string()])
                .unwrap_or_default(),
        };
        if body.is_none() && prog.is_empty() {
            return None;
        }
        Some(Scriptlet {
            phase,
            rpmver: h
                .get_entry_data_as_string(IndexTag::RPMTAG_RPMVERSION)
                .ok()
                .map(str::to_string),
            body: body.unwrap_or("").to_string(),
            prog: if prog.is_empty() {
                vec!["/bin/sh".to_string()]
            } else {
                prog
            },
            flags: h.get_entry_data_as_u32(flags_tag).unwrap_or(0),
        })
    }

    /// An installed package's scriptlet (from the database).
    pub fn of_installed(s: &cowkit_rpmdb::Script, phase: Phase) -> Scriptlet {
        Scriptlet {
            phase,
            body: s.body.clone(),
            prog: s.prog.clone(),
            flags: s.flags,
            rpmver: s.rpmver.clone(),
        }
    }

    /// A trigger's scriptlet.
    pub fn of_trigger(s: &cowkit_rpmdb::Script, _name: &str) -> Scriptlet {
        Scriptlet::of_installed(s, Phase::Trigger)
    }

    /// Whether it is a `<lua>` scriptlet.
    pub fn is_lua(&self) -> bool {
        self.prog.first().map(String::as_str) == Some("<lua>")
    }

    /// Why cowkit cannot run this scriptlet exactly as rpm would, if so
    /// (`lua`: whether rpm's own Lua is there to run `<lua>` ones).
    pub fn runnable(&self, lua: bool) -> std::result::Result<(), &'static str> {
        if self.is_lua() && !lua {
            return Err("it is a <lua> scriptlet, and rpm's Lua (librpmio) cannot be loaded here");
        }
        if self.flags & FLAG_EXPAND != 0 {
            return Err("rpm expands its body with rpm's own macros at install time (-e)");
        }
        if self.flags & FLAG_QFORMAT != 0 {
            return Err("rpm expands its body as a query format at install time (-q)");
        }
        Ok(())
    }

    /// Run it chrooted into `root` as rpm's `runExtScript` does, with
    /// `args` (`$1`, `$2`: a body only; a program-only scriptlet gets
    /// none) and a file trigger's `files` on stdin. Its output goes to
    /// ours (stdout to stderr when `stdout_to_stderr`, so that a JSON
    /// summary on stdout stays clean); with the transaction's nosync
    /// session its sync calls (and its children's) are answered without
    /// running. A `<lua>` scriptlet goes to `lua`
    /// (rpm's own interpreter), named `name`. `Ok(None)` when it
    /// succeeded, `Ok(Some(why))` when it ran and failed.
    pub fn run(
        &self,
        root: &Root,
        how: &Invocation<'_>,
        ctx: &mut RunContext<'_>,
    ) -> Result<Option<String>> {
        let Invocation {
            name,
            args,
            files,
            prefixes,
            rpmver: _,
        } = *how;
        let listed = crate::interrupt::Listed::new(name, self.is_lua());
        if self.is_lua() {
            let Some(lua) = ctx.lua.as_deref_mut() else {
                return Err(Error::NoLua {
                    name: name.to_string(),
                });
            };
            listed.set_pid(lua.pid());
            return lua.run(&self.body, &self.prog, how);
        }
        if self.phase == Phase::Sysusers {
            // It runs on the host and writes the root's user files through
            // host paths (`$ROOT/etc/passwd`): a root whose `etc` is not a
            // directory of its own (a symlink a package left) would have
            // it write outside the root. rpm follows it; cowkit fails the
            // package instead.
            let etc = root.path().join("etc");
            if let Ok(m) = std::fs::symlink_metadata(&etc) {
                if !m.is_dir() {
                    return Ok(Some(format!(
                        "`{}` is not a directory: the host's sysusers command would write through it",
                        etc.display()
                    )));
                }
            }
            // rpm runs it on the host, not chrooted (`execSysusers`): its
            // interpreter with the command line as the script, and `$1`.
            let mut argv: Vec<String> = self.prog.clone();
            argv.extend(["-c".to_string(), self.body.clone(), "sh".to_string()]);
            argv.extend(args.iter().map(i64::to_string));
            return self.exec(None, &argv, files, prefixes, ctx, &listed);
        }
        let mut argv: Vec<String> = self.prog.clone();
        // The body goes in a working directory of its own: removed after
        // the run, on SIGINT/SIGTERM, or by the next transaction's
        // [`sweep`] when a scriptlet killed cowkit.
        let mut tmp: Option<cowkit_fs::workdir::WorkDir> = None;
        if !self.body.is_empty() {
            let rel = RelPath::new("var/tmp").expect("a valid path");
            let dir = root.create_dirs(&rel, 0o755)?;
            let work = cowkit_fs::workdir::WorkDir::create(
                std::os::fd::AsFd::as_fd(&dir),
                &root.display(&rel),
                SCRIPT_PREFIX,
                0o700,
            )?;
            let path = work.path().join("script");
            cowkit_fs::dir::write_file_at(
                work.fd(),
                "script",
                &path,
                self.body.as_bytes(),
                0o600,
                false,
            )?;
            argv.push(format!("/var/tmp/{}/script", work.name()));
            // rpm passes the counts only to a body (`runExtScript`).
            argv.extend(args.iter().map(i64::to_string));
            tmp = Some(work);
        }
        let result = self.exec(Some(root.path()), &argv, files, prefixes, ctx, &listed);
        drop(tmp);
        result
    }

    /// Run `argv` chrooted into `root`, or on the host (`None`).
    fn exec(
        &self,
        root: Option<&Path>,
        argv: &[String],
        files: Option<&[Vec<u8>]>,
        prefixes: &[String],
        ctx: &RunContext<'_>,
        listed: &crate::interrupt::Listed,
    ) -> Result<Option<String>> {
        // What errors name: the root, or the program run on the host.
        let shown = root.map_or_else(|| PathBuf::from(&argv[0]), Path::to_path_buf);
        let mut c = match root {
            // The child takes rpm's umask, chroots into the root and runs
            // the interpreter there, as rpm's child does. rpm runs it by
            // its path (`execv`), which `rpmbuild` requires absolute.
            Some(root) => {
                if !argv[0].starts_with('/') {
                    return Ok(Some(format!(
                        "its interpreter `{}` is not an absolute path",
                        argv[0]
                    )));
                }
                let mut c = Command::new(&argv[0]);
                c.args(&argv[1..]);
                cowkit_sys::process::chroot_on_exec(&mut c, root, 0o022)
                    .map_err(|e| IoError::new("chroot into", shown.clone(), e))?;
                c
            }
            // On the host: sh sets rpm's umask and becomes the interpreter.
            None => {
                let mut c = Command::new("/bin/sh");
                c.args(["-c", "umask 022 && exec \"$@\"", "sh"]).args(argv);
                c
            }
        };
        c.env("PATH", SCRIPT_PATH)
            .current_dir("/")
            // rpm gives every scriptlet a pipe: a file trigger's files,
            // one per line, else nothing.
            .stdin(Stdio::piped());
        // A relocatable package's prefixes, as rpm's `doScriptExec` sets
        // them.
        for (i, p) in prefixes.iter().enumerate() {
            c.env(format!("RPM_INSTALL_PREFIX{i}"), p);
            if i == 0 {
                c.env("RPM_INSTALL_PREFIX", p);
            }
        }
        if ctx.stdout_to_stderr {
            let err = std::io::stderr();
            let fd = std::os::fd::AsFd::as_fd(&err)
                .try_clone_to_owned()
                .map_err(|e| IoError::new("duplicate", PathBuf::from("stderr"), e))?;
            c.stdout(Stdio::from(fd));
        }
        if let Some(session) = ctx.nosync {
            session.apply(&mut c);
        }
        // rpm's signal mask: SIGINT and SIGQUIT blocked (a terminal's
        // Ctrl-C leaves the scriptlet running, see [`crate::interrupt`]).
        cowkit_sys::process::block_signals_on_exec(&mut c, &crate::interrupt::SCRIPTLET_BLOCKED);
        let mut child = match c.spawn() {
            Ok(child) => child,
            // The child could not chroot or start the interpreter: the
            // scriptlet fails, as in rpm ("failed to exec scriptlet
            // interpreter", exit status 127).
            Err(e) if root.is_some() => {
                return Ok(Some(format!(
                    "cannot run its interpreter `{}` in the root: {e}",
                    argv[0]
                )));
            }
            Err(e) => return Err(Error::from(IoError::new("run", shown.clone(), e))),
        };
        listed.set_pid(child.id());
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write;
            for f in files.unwrap_or_default() {
                let mut line = f.clone();
                line.push(b'\n');
                // A trigger that stops reading (EPIPE) ends the list, as
                // in rpm.
                if stdin.write_all(&line).is_err() {
                    break;
                }
            }
        }
        let status = child
            .wait()
            .map_err(|e| Error::from(IoError::new("wait for", shown.clone(), e)))?;
        Ok((!status.success()).then(|| status.to_string()))
    }
}
