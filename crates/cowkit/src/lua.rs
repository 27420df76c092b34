//! rpm's Lua for `<lua>` scriptlets: the hidden `cowkit __lua-host`
//! process, started once per transaction.

use cowkit_install::txn::LuaStarter;

/// How transactions start rpm's Lua here; `None` when it cannot be loaded
/// (then `<lua>` scriptlets are refused up front, saying why).
pub fn starter() -> Option<LuaStarter> {
    None
}
