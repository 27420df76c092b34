//! rpm's Lua for `<lua>` scriptlets: the hidden `cowkit __lua-host`
//! process (`cowkit_rpmlua`), started once per transaction that has one.

use std::path::Path;
use std::sync::Arc;

use cowkit_install::scripts::{Invocation, Lua};
use cowkit_install::txn::LuaStarter;
use cowkit_rpmlua::{HostConfig, LuaHost, LuaScript, Outcome};

/// How transactions start rpm's Lua here; `None` when it cannot be loaded
/// (then `<lua>` scriptlets are refused up front, saying why), or when
/// `COWKIT_RPMLUA=off` asks cowkit to behave as on such a host.
pub fn starter() -> Option<LuaStarter> {
    if std::env::var_os("COWKIT_RPMLUA").is_some_and(|v| v == "off") {
        return None;
    }
    cowkit_rpmlua::available().ok()?;
    let exe = std::env::current_exe().ok()?;
    Some(LuaStarter(Arc::new(
        move |root: &Path, to_stderr: bool, prepare: &dyn Fn(&mut std::process::Command)| {
            let cfg = HostConfig {
                exe: exe.clone(),
                root: root.to_path_buf(),
                stdout_to_stderr: to_stderr,
                defines: Vec::new(),
            };
            let host = LuaHost::start_with(&cfg, prepare)
                .map_err(|e| cowkit_install::Error::Lua(Box::new(e)))?;
            Ok(Box::new(Host(host)) as Box<dyn Lua>)
        },
    )))
}

/// A [`LuaHost`] as the transaction's [`Lua`].
struct Host(LuaHost);

impl Lua for Host {
    fn run(
        &mut self,
        body: &str,
        prog: &[String],
        how: &Invocation<'_>,
    ) -> cowkit_install::Result<Option<String>> {
        let mut argv = prog.to_vec();
        argv.extend(how.args.iter().map(i64::to_string));
        let s = LuaScript {
            name: how.name,
            body,
            args: &argv,
            arg1: !how.args.is_empty(),
            arg2: how.args.len() > 1,
            prefixes: (!how.prefixes.is_empty()).then_some(how.prefixes),
            next_files: how.files,
            rpmver: how.rpmver,
        };
        match self.0.run(&s) {
            Ok(Outcome::Ok) => Ok(None),
            Ok(Outcome::Failed(why)) => Ok(Some(why)),
            Err(cowkit_rpmlua::Error::Broken {
                pid, what, status, ..
            }) => Ok(Some(host_died(pid, &what, status))),
            Err(e) => Err(cowkit_install::Error::Lua(Box::new(e))),
        }
    }

    fn alive(&mut self) -> bool {
        !self.0.ended_while_idle()
    }

    fn pid(&self) -> u32 {
        self.0.pid()
    }

    fn flush(&mut self) {
        // A host that broke is found so by the next scriptlet it is
        // given; its buffered output went with it.
        let _ = self.0.flush_output();
    }
}

impl Drop for Host {
    /// What the scriptlets printed is written out before the host is
    /// ended (which kills it): rpm's exit flushes its `stdout` too.
    fn drop(&mut self) {
        let _ = self.0.flush_output();
    }
}

/// Why a scriptlet failed whose Lua host died under it: how the host
/// ended, in the words of a shell scriptlet's status (`signal: 9
/// (SIGKILL)`), then that the host is gone.
fn host_died(pid: u32, what: &str, status: Option<std::process::ExitStatus>) -> String {
    let host = format!(
        "cowkit's Lua host (process {pid}) running it is gone ({what}); a new host runs the later <lua> scriptlets, without the earlier ones' globals"
    );
    match status {
        Some(s) => format!("{s}: {host}"),
        None => host,
    }
}
