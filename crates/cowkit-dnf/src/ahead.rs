//! What the transaction will ask the host, asked while dnf resolves: rpm's
//! generation and file policy (`cowkit_install::ask_host_ahead`), and
//! whether rpm's Lua loads (`ldd rpm`, `dlopen`; kept for the process).

use std::thread::JoinHandle;

/// The questions asked ahead, answered on their own threads.
pub struct Ahead {
    host: cowkit_install::AskedAhead,
    lua: JoinHandle<()>,
}

impl Ahead {
    /// Start asking (right before dnf starts).
    pub fn ask() -> Ahead {
        Ahead {
            host: cowkit_install::ask_host_ahead(),
            lua: std::thread::spawn(|| {
                let _ = cowkit_rpmlua::available();
            }),
        }
    }

    /// Wait for the answers (once dnf resolved, before the transaction
    /// asks them). Dropped without this, only rpm's answers are waited
    /// for; the Lua question ends on its own.
    pub fn wait(self) {
        drop(self.host);
        let _ = self.lua.join();
    }
}
