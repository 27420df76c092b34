//! rpm's Lua for `<lua>` scriptlets: the hidden `cowkit __lua-host`
//! process (`cowkit_rpmlua`), started once per transaction that has one.

use std::path::Path;
use std::sync::Arc;

use cowkit_install::scripts::Lua;
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
    Some(LuaStarter(Arc::new(move |root: &Path, to_stderr: bool| {
        let host = LuaHost::start(&HostConfig {
            exe: exe.clone(),
            root: root.to_path_buf(),
            stdout_to_stderr: to_stderr,
            defines: Vec::new(),
        })
        .map_err(|e| cowkit_install::Error::Lua(Box::new(e)))?;
        Ok(Box::new(Host(host)) as Box<dyn Lua>)
    })))
}

/// A [`LuaHost`] as the transaction's [`Lua`].
struct Host(LuaHost);

impl Lua for Host {
    fn run(
        &mut self,
        name: &str,
        body: &str,
        prog: &[String],
        args: (Option<i64>, Option<i64>),
        files: Option<&[Vec<u8>]>,
    ) -> cowkit_install::Result<Option<String>> {
        let mut argv = prog.to_vec();
        argv.extend(args.0.iter().chain(args.1.iter()).map(i64::to_string));
        let s = LuaScript {
            name,
            body,
            args: &argv,
            arg1: args.0.is_some(),
            arg2: args.1.is_some(),
            prefixes: None,
            next_files: files,
        };
        match self.0.run(&s) {
            Ok(Outcome::Ok) => Ok(None),
            Ok(Outcome::Failed(why)) => Ok(Some(why)),
            Err(e) => Err(cowkit_install::Error::Lua(Box::new(e))),
        }
    }
}
