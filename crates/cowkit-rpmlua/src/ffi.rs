//! The one module with `unsafe`: rpm's libraries loaded with `dlopen`, the
//! few of their functions cowkit calls, the two C callbacks (`rpm.next_file`
//! and the rpm log hook), and the process-wide settings rpm makes with libc
//! (locale, signals, `_exit`).
//!
//! The prototypes are those of rpm 4.18 (`rpmio/rpmlua.h`, which Debian does
//! not install, `include/rpm/rpmlog.h`, `rpmmacro.h`, `rpmlib.h`,
//! `lib/rpmug.h`) and Lua 5.3 (`lua.h`), quoted next to each field of
//! [`Api`]; rpm 4.20 (`librpmio.so.10`, Lua 5.4) keeps every one of them
//! but `rpmugInit`, which it no longer has (its `rpmChrootSet` only resets
//! the user and group caches). Which rpm's libraries are loaded is decided
//! by the `rpm` program cowkit runs ([`Libraries::of_rpm`]). Nothing here
//! is called before [`load`] has resolved every symbol.
#![expect(
    unsafe_code,
    reason = "rpm's libraries are loaded with dlopen and called through C prototypes: the crate's one module with unsafe"
)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::os::fd::OwnedFd;
use std::ptr;
use std::sync::{Mutex, OnceLock};

use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
use rustix::fs::{Mode, OFlags};

/// rpm's I/O library: the Lua state, macros, logging.
pub const LIBRPMIO: &str = "librpmio.so.9";
/// rpm's library: configuration files, user/group lookups.
pub const LIBRPM: &str = "librpm.so.9";
/// The Lua that `librpmio.so.9` is linked against (rpm 4.18 on Debian 12).
pub const LIBLUA: &str = "liblua5.3.so.0";

/// The libraries of the rpm whose Lua runs the scriptlets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Libraries {
    /// `librpmio.so.N`, a soname or the path the rpm program loads.
    pub rpmio: String,
    /// `librpm.so.N`.
    pub rpm: String,
    /// The Lua library `rpmio` is linked against.
    pub lua: String,
    /// rpm 4.20's (`librpmio.so.10`): it has no `rpmugInit`, and its
    /// `runLuaScript` also keeps the package's builder rpm version in Lua's
    /// registry (which decides whether rpm warns that `posix.fork`,
    /// `exec`, `wait` and `redirect2null` are deprecated).
    pub rpm420: bool,
}

impl Libraries {
    /// rpm 4.18's, by soname, as Debian 12 installs them.
    pub fn rpm418() -> Libraries {
        Libraries {
            rpmio: LIBRPMIO.into(),
            rpm: LIBRPM.into(),
            lua: LIBLUA.into(),
            rpm420: false,
        }
    }

    /// The libraries the `rpm` program cowkit runs (`COWKIT_RPM`, else
    /// `rpm` from `PATH`) loads, as `ldd` shows them: rpm 4.20's
    /// (`librpmio.so.10`) by their paths; rpm 4.18's by soname, also when
    /// there is no such program or `ldd` shows no librpmio. An rpm with
    /// another librpmio is named in the error.
    pub fn of_rpm() -> Result<Libraries, String> {
        let program = std::env::var_os("COWKIT_RPM")
            .map(std::path::PathBuf::from)
            .or_else(|| {
                std::env::split_paths(&std::env::var_os("PATH")?)
                    .map(|d| d.join("rpm"))
                    .find(|p| p.is_file())
            });
        let Some(program) = program else {
            return Ok(Libraries::rpm418());
        };
        // Without `ldd`, as when it shows nothing: rpm 4.18's sonames.
        let Ok(out) = std::process::Command::new("ldd")
            .arg(&program)
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .output()
        else {
            return Ok(Libraries::rpm418());
        };
        Libraries::from_ldd(
            &program.display().to_string(),
            &String::from_utf8_lossy(&out.stdout),
        )
    }

    /// The four fields of the Lua host's start message: the three
    /// libraries, then the generation (`4.20` or `4.18`).
    pub fn to_fields(&self) -> [&[u8]; 4] {
        [
            self.rpmio.as_bytes(),
            self.rpm.as_bytes(),
            self.lua.as_bytes(),
            if self.rpm420 { b"4.20" } else { b"4.18" },
        ]
    }

    /// [`Libraries::to_fields`]' fields read back.
    pub fn from_fields(f: &[&[u8]]) -> Result<Libraries, String> {
        let text = |b: &[u8]| {
            String::from_utf8(b.to_vec())
                .map_err(|_| "a library name that is not UTF-8".to_string())
        };
        match f {
            [io_lib, rpm_lib, lua_lib, generation] => Ok(Libraries {
                rpmio: text(io_lib)?,
                rpm: text(rpm_lib)?,
                lua: text(lua_lib)?,
                rpm420: match *generation {
                    b"4.20" => true,
                    b"4.18" => false,
                    _ => return Err("an rpm generation other than 4.18 or 4.20".into()),
                },
            }),
            _ => Err(format!("{} library fields instead of 4", f.len())),
        }
    }

    /// The libraries in `ldd PROGRAM`'s answer `text`.
    fn from_ldd(program: &str, text: &str) -> Result<Libraries, String> {
        let lib = |prefix: &str| -> Option<(String, String)> {
            text.lines().find_map(|l| {
                let (name, rest) = l.trim().split_once(" => ")?;
                let path = rest.split(" (").next()?.trim();
                (name.starts_with(prefix) && path.starts_with('/'))
                    .then(|| (name.to_string(), path.to_string()))
            })
        };
        match lib("librpmio.so.") {
            Some((n, _)) if n == LIBRPMIO => Ok(Libraries::rpm418()),
            Some((n, rpmio_path)) if n == "librpmio.so.10" => {
                match (lib("librpm.so.10"), lib("liblua")) {
                    (Some((_, rpm_path)), Some((_, lua_path))) => Ok(Libraries {
                        rpmio: rpmio_path,
                        rpm: rpm_path,
                        lua: lua_path,
                        rpm420: true,
                    }),
                    _ => Err(format!(
                        "`{program}` loads {n} but `ldd` shows no librpm.so.10 or liblua beside it"
                    )),
                }
            }
            Some((n, _)) => Err(format!(
                "`{program}` loads {n}: cowkit runs <lua> scriptlets with rpm 4.18's librpmio.so.9 or rpm 4.20's librpmio.so.10 only"
            )),
            // `ldd` shows no librpmio (or failed: a library it cannot load):
            // rpm 4.18's sonames, as cowkit loads them when there is no
            // rpm program, so that `dlopen` names what is missing.
            None => Ok(Libraries::rpm418()),
        }
    }
}

type LuaState = *mut c_void;
type LuaCFunction = unsafe extern "C" fn(LuaState) -> c_int;
type LogRec = *mut c_void;
type LogCallback = unsafe extern "C" fn(LogRec, *mut c_void) -> c_int;

/// `RPMLOG_ERR` (`rpmlog.h`): the level of every message runLuaScript logs.
const RPMLOG_ERR: c_int = 3;
/// `RPMLOG_DEBUG`.
const RPMLOG_DEBUG: c_int = 7;
/// `RPMLOG_DEFAULT`: a log callback's "and print it as usual".
const RPMLOG_DEFAULT: c_int = 0x01;
/// `RMIL_CMDLINE` (`rpmmacro.h`): the level of `rpm --define`.
const RMIL_CMDLINE: c_int = -7;

macro_rules! api {
    ($( $lib:ident $field:ident = $sym:literal : $ty:ty; )*) => {
        /// The resolved functions.
        struct Api { $( $field: $ty, )* }

        fn resolve(libs: &Libs) -> Result<Api, String> {
            Ok(Api { $( $field: symbol::<$ty>(&libs.$lib, $lib, $sym)?, )* })
        }
    };
}

#[expect(
    non_upper_case_globals,
    reason = "named as the library it names, the way the prototypes' macro reads"
)]
const rpmio: &str = LIBRPMIO;
#[expect(
    non_upper_case_globals,
    reason = "named as the library it names, the way the prototypes' macro reads"
)]
const rpm: &str = LIBRPM;
#[expect(
    non_upper_case_globals,
    reason = "named as the library it names, the way the prototypes' macro reads"
)]
const lua: &str = LIBLUA;

api! {
    // rpmlua rpmluaGetGlobalState(void);
    rpmio global_state = "rpmluaGetGlobalState": unsafe extern "C" fn() -> *mut c_void;
    // void *rpmluaGetLua(rpmlua lua);
    rpmio get_lua = "rpmluaGetLua": unsafe extern "C" fn(*mut c_void) -> LuaState;
    // int rpmluaRunScript(rpmlua lua, const char *script, const char *name,
    //                     const char *opts, ARGV_t args);
    rpmio run_script = "rpmluaRunScript": unsafe extern "C" fn(
        *mut c_void, *const c_char, *const c_char, *const c_char, *const *mut c_char,
    ) -> c_int;
    // int rpmDefineMacro(rpmMacroContext mc, const char * macro, int level);
    rpmio define_macro = "rpmDefineMacro": unsafe extern "C" fn(*mut c_void, *const c_char, c_int) -> c_int;
    // void rpmlog(int code, const char *fmt, ...);
    rpmio rpmlog = "rpmlog": unsafe extern "C" fn(c_int, *const c_char, ...);
    // rpmlogCallback rpmlogSetCallback(rpmlogCallback cb, rpmlogCallbackData data);
    rpmio set_log_callback = "rpmlogSetCallback":
        unsafe extern "C" fn(Option<LogCallback>, *mut c_void) -> Option<LogCallback>;
    // const char * rpmlogRecMessage(rpmlogRec rec);
    rpmio rec_message = "rpmlogRecMessage": unsafe extern "C" fn(LogRec) -> *const c_char;
    // rpmlogLvl rpmlogRecPriority(rpmlogRec rec);
    rpmio rec_priority = "rpmlogRecPriority": unsafe extern "C" fn(LogRec) -> c_int;
    // int rpmReadConfigFiles(const char * file, const char * target);
    rpm read_config = "rpmReadConfigFiles": unsafe extern "C" fn(*const c_char, *const c_char) -> c_int;
    // int lua_getglobal(lua_State *L, const char *name);
    lua getglobal = "lua_getglobal": unsafe extern "C" fn(LuaState, *const c_char) -> c_int;
    // void lua_pushlightuserdata(lua_State *L, void *p);
    lua pushlightuserdata = "lua_pushlightuserdata": unsafe extern "C" fn(LuaState, *mut c_void);
    // void lua_pushcclosure(lua_State *L, lua_CFunction fn, int n);
    lua pushcclosure = "lua_pushcclosure": unsafe extern "C" fn(LuaState, LuaCFunction, c_int);
    // void lua_setfield(lua_State *L, int idx, const char *k);
    lua setfield = "lua_setfield": unsafe extern "C" fn(LuaState, c_int, *const c_char);
    // void lua_createtable(lua_State *L, int narr, int nrec);  (lua_newtable)
    lua createtable = "lua_createtable": unsafe extern "C" fn(LuaState, c_int, c_int);
    // const char *lua_pushstring(lua_State *L, const char *s);
    lua pushstring = "lua_pushstring": unsafe extern "C" fn(LuaState, *const c_char) -> *const c_char;
    // void lua_rawseti(lua_State *L, int idx, lua_Integer n);
    lua rawseti = "lua_rawseti": unsafe extern "C" fn(LuaState, c_int, i64);
    // void lua_setglobal(lua_State *L, const char *name);
    lua setglobal = "lua_setglobal": unsafe extern "C" fn(LuaState, *const c_char);
    // void lua_pushnil(lua_State *L);
    lua pushnil = "lua_pushnil": unsafe extern "C" fn(LuaState);
    // void lua_settop(lua_State *L, int idx);  (lua_pop)
    lua settop = "lua_settop": unsafe extern "C" fn(LuaState, c_int);
    // void lua_settable(lua_State *L, int idx);
    lua settable = "lua_settable": unsafe extern "C" fn(LuaState, c_int);
    // int lua_getfield(lua_State *L, int idx, const char *k);
    lua getfield = "lua_getfield": unsafe extern "C" fn(LuaState, c_int, *const c_char) -> c_int;
}

/// `LUA_REGISTRYINDEX` of Lua 5.3 and 5.4 (`-LUAI_MAXSTACK - 1000`, with
/// `LUAI_MAXSTACK` 1000000 on 64-bit builds of both).
const LUA_REGISTRYINDEX: c_int = -1_001_000;

/// The registry key of rpm 4.20's runLuaScript.
const RPM_PACKAGE_RPMVERSION: &CStr = c"RPM_PACKAGE_RPMVERSION";

/// The three libraries, kept loaded for the life of the process.
struct Libs {
    rpmio: Library,
    rpm: Library,
    lua: Library,
}

struct Loaded {
    /// The libraries loaded.
    names: Libraries,
    api: Api,
    /// rpm 4.18's `rpmugInit`; rpm 4.20 has none.
    ug_init: Option<unsafe extern "C" fn() -> c_int>,
    /// rpm 4.20's libraries.
    rpm420: bool,
    _libs: Libs,
}

static LOADED: OnceLock<Result<Loaded, String>> = OnceLock::new();

fn symbol<T: Copy>(lib: &Library, file: &str, name: &str) -> Result<T, String> {
    // SAFETY: every `T` this is called with is the C prototype of `name` in
    // rpm 4.18 / Lua 5.3, quoted above each field of `Api`; the function
    // pointer copied out stays valid because the library is never closed
    // (it lives in the `LOADED` static).
    unsafe { lib.get::<T>(name.as_bytes()) }
        .map(|s| *s)
        .map_err(|e| format!("{file} has no `{name}` (is it rpm 4.18's?): {}", chain(&e)))
}

/// `e` and its sources, joined by `: ` (libloading puts `dlerror()`'s
/// text in the source).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

fn open(file: &str, extra: c_int) -> Result<Library, String> {
    // SAFETY: loading rpm's libraries runs their ELF constructors (and
    // those of libraries they link), which only initialise their own
    // state; no other thread of this process is calling `dlopen` on them.
    unsafe { Library::open(Some(file), RTLD_NOW | RTLD_GLOBAL | extra) }
        .map_err(|e| format!("cannot load {file}: {}", chain(&e)))
}

/// Loads rpm's libraries once per process (`RTLD_NOW | RTLD_GLOBAL`, as the
/// `rpm` program links them: C modules that a scriptlet `require`s find
/// Lua's symbols) and resolves every function used here. The error says
/// which library or symbol is missing.
pub fn load() -> Result<(), String> {
    load_these(None)
}

/// [`load`], of `given` when given (the libraries the parent process
/// chose and loaded, handed to the Lua host in its start message), else
/// of those the `rpm` program loads ([`Libraries::of_rpm`]).
pub fn load_these(given: Option<Libraries>) -> Result<(), String> {
    LOADED
        .get_or_init(|| {
            let names = match given {
                Some(l) => l,
                None => Libraries::of_rpm()?,
            };
            let rpmio_lib = open(&names.rpmio, 0)?;
            let rpm_lib = open(&names.rpm, 0)?;
            // The Lua rpm's I/O library was linked against, already loaded
            // by it: `RTLD_NOLOAD` fails if it is another Lua.
            let lua_lib = open(&names.lua, libc::RTLD_NOLOAD).map_err(|e| {
                format!(
                    "{} does not use {} (it is not loaded with it): {e}",
                    names.rpmio, names.lua
                )
            })?;
            let libs = Libs {
                rpmio: rpmio_lib,
                rpm: rpm_lib,
                lua: lua_lib,
            };
            let ug_init = if names.rpm420 {
                None
            } else {
                Some(symbol::<unsafe extern "C" fn() -> c_int>(
                    &libs.rpm,
                    &names.rpm,
                    "rpmugInit",
                )?)
            };
            Ok(Loaded {
                api: resolve(&libs)?,
                ug_init,
                rpm420: names.rpm420,
                names,
                _libs: libs,
            })
        })
        .as_ref()
        .map(|_| ())
        .map_err(Clone::clone)
}

/// The libraries this process loaded, if [`load`] succeeded.
pub fn loaded_libraries() -> Option<&'static Libraries> {
    match LOADED.get() {
        Some(Ok(l)) => Some(&l.names),
        _ => None,
    }
}

fn loaded() -> &'static Loaded {
    match LOADED.get() {
        Some(Ok(l)) => l,
        _ => unreachable!("ffi::load succeeded before any other call"),
    }
}

fn api() -> &'static Api {
    &loaded().api
}

/// `setlocale(LC_ALL, "")`, as `rpmcliInit` does first.
pub fn set_locale_from_env() {
    // SAFETY: the host is single-threaded; the argument is a valid C string.
    unsafe { libc::setlocale(libc::LC_ALL, c"".as_ptr()) };
}

/// `rpmReadConfigFiles(NULL, NULL)`: rpm's rc and macro files, as
/// `rpmcliConfigured` reads them (`--rcfile` unset); it also creates the
/// process-global Lua state. rpm logs what went wrong.
pub fn read_config_files() -> bool {
    // SAFETY: NULL file and target are documented defaults.
    unsafe { (api().read_config)(ptr::null(), ptr::null()) == 0 }
}

/// `rpmDefineMacro(NULL, def, RMIL_CMDLINE)`: one `rpm --define` (`def` is
/// already in `cliDefine`'s form). rpm logs what went wrong.
pub fn define_macro(def: &CStr) -> bool {
    // SAFETY: a NULL context is the global macro context; `def` is valid.
    unsafe { (api().define_macro)(ptr::null_mut(), def.as_ptr(), RMIL_CMDLINE) == 0 }
}

/// `rpmugInit()`: what rpm 4.18's `rpmChrootSet` does before rpm enters a
/// root, so the name-service libraries are loaded from the host. rpm 4.20
/// has none (its `rpmChrootSet` resets caches that are still empty here).
pub fn ug_init() {
    if let Some(f) = loaded().ug_init {
        // SAFETY: takes nothing; idempotent (pthread_once).
        unsafe { f() };
    }
}

/// Logs `msg` through rpm's `rpmlog` at `level` (rpm's default output:
/// `error: ...` on stderr), as rpm's own message would be.
fn rpmlog(level: c_int, msg: &str) {
    let msg = CString::new(msg.replace('\0', "?")).unwrap_or_default();
    // SAFETY: the format is "%s" with one valid C string argument.
    unsafe { (api().rpmlog)(level, c"%s".as_ptr(), msg.as_ptr()) };
}

/// The rpm log messages of level `RPMLOG_ERR` or worse, collected while a
/// scriptlet runs (rpm's reason for a failure). `None`: not collecting.
static CAPTURED: Mutex<Option<Vec<String>>> = Mutex::new(None);

unsafe extern "C" fn log_hook(rec: LogRec, _data: *mut c_void) -> c_int {
    let api = api();
    // SAFETY: rpm passes a valid record for the duration of the call.
    let (pri, msg) = unsafe { ((api.rec_priority)(rec), (api.rec_message)(rec)) };
    if pri <= RPMLOG_ERR && !msg.is_null() {
        // SAFETY: a non-NULL message is a NUL-terminated string.
        let text = unsafe { CStr::from_ptr(msg) }
            .to_string_lossy()
            .into_owned();
        if let Ok(mut c) = CAPTURED.lock() {
            if let Some(v) = c.as_mut() {
                v.push(text);
            }
        }
    }
    RPMLOG_DEFAULT
}

/// Installs the log hook: every message still goes where rpm sends it.
pub fn hook_log() {
    // SAFETY: `log_hook` has rpm's `rpmlogCallback` signature and never
    // unwinds; the data pointer is unused.
    unsafe { (api().set_log_callback)(Some(log_hook), ptr::null_mut()) };
}

/// What `rpm.next_file()` yields, one list per file trigger run.
struct NextFiles {
    files: Vec<CString>,
    pos: usize,
}

static NEXT_FILES: Mutex<NextFiles> = Mutex::new(NextFiles {
    files: Vec::new(),
    pos: 0,
});

/// rpm's `next_file` closure. rpm 4.18's file iterator, called again after
/// it returned nil, starts over (its `rpmdsNext` wraps around): so does
/// this. It reads the one static list, so a closure a script kept in a
/// global stays harmless after its trigger (rpm's would read freed memory).
unsafe extern "C" fn next_file(l: LuaState) -> c_int {
    let mut nf = match NEXT_FILES.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    let nf = &mut *nf;
    let p = match nf.files.get(nf.pos) {
        Some(f) => {
            nf.pos += 1;
            f.as_ptr()
        }
        None => {
            nf.pos = 0;
            ptr::null()
        }
    };
    // SAFETY: `l` is the calling state; `p` is NULL (pushes nil, as
    // `lua_pushstring(L, NULL)` does for rpm) or a valid C string that Lua
    // copies before the lock (and so the list) is released.
    unsafe { (api().pushstring)(l, p) };
    1
}

/// One scriptlet as `runLuaScript` receives it.
pub struct Script<'a> {
    /// `sname`, the chunk name.
    pub name: &'a CStr,
    /// The script with rpm's `tonumber` prologue already prepended.
    pub script: &'a CStr,
    /// `*argvp` after `argvAddNum`.
    pub argv: &'a [CString],
    /// `prefixes`: `RPM_INSTALL_PREFIX` for the run.
    pub prefixes: Option<&'a [CString]>,
    /// `nextFileFunc`'s list.
    pub next_files: Option<Vec<CString>>,
    /// `script->rpmver` (rpm 4.20): the package's builder rpm version.
    pub rpmver: Option<&'a CStr>,
}

/// `runLuaScript`'s result (`rpmRC`).
#[derive(Debug, PartialEq, Eq)]
pub enum Rc {
    /// `RPMRC_OK`.
    Ok,
    /// `RPMRC_FAIL`.
    Fail,
    /// `RPMRC_NOTFOUND`: the working directory could not be restored.
    NotFound,
}

/// rpm 4.18's `runLuaScript` (lib/rpmscript.c), step for step, in the
/// process-global Lua state; returns its result and the rpm error messages
/// logged meanwhile. A child forked by the script that returns here is
/// ended as rpm ends it.
pub fn run_lua_script(s: Script<'_>) -> (Rc, Vec<String>) {
    let api = api();
    if let Ok(mut c) = CAPTURED.lock() {
        *c = Some(Vec::new());
    }
    // SAFETY: the global state exists (rpmReadConfigFiles made it) and the
    // Lua calls below follow runLuaScript's own stack discipline.
    let l = unsafe { (api.get_lua)((api.global_state)()) };
    rpmlog(
        RPMLOG_DEBUG,
        &format!("{}: running <lua> scriptlet.\n", s.name.to_string_lossy()),
    );
    let Script {
        name,
        script,
        argv,
        prefixes,
        next_files,
        rpmver,
    } = s;
    let has_next = next_files.is_some();
    if let Some(files) = next_files {
        if let Ok(mut nf) = NEXT_FILES.lock() {
            *nf = NextFiles { files, pos: 0 };
        }
        // SAFETY: as above; the upvalue points at a static, never freed.
        unsafe {
            (api.getglobal)(l, c"rpm".as_ptr());
            (api.pushlightuserdata)(l, ptr::addr_of!(NEXT_FILES).cast_mut().cast());
            (api.pushcclosure)(l, next_file, 1);
            (api.setfield)(l, -2, c"next_file".as_ptr());
        }
    }
    if let Some(prefixes) = prefixes {
        // SAFETY: as above; the strings are valid for the calls (Lua copies).
        unsafe {
            (api.createtable)(l, 0, 0);
            for (i, p) in prefixes.iter().enumerate() {
                (api.pushstring)(l, p.as_ptr());
                (api.rawseti)(l, -2, i as i64 + 1);
            }
            (api.setglobal)(l, c"RPM_INSTALL_PREFIX".as_ptr());
        }
    }
    let rc = run_in_root(api, name, script, argv, rpmver);
    if prefixes.is_some() {
        // SAFETY: as above.
        unsafe {
            (api.pushnil)(l);
            (api.setglobal)(l, c"RPM_INSTALL_PREFIX".as_ptr());
        }
    }
    if has_next {
        // SAFETY: the calls runLuaScript makes here, on the stack it leaves:
        // index -2 is the `rpm` table pushed above (values a script
        // `return`s stay on the stack, in rpm as here: the same calls have
        // the same effect, a Lua panic included).
        unsafe {
            (api.pushnil)(l);
            (api.setfield)(l, -2, c"next_file".as_ptr());
            (api.settop)(l, -2);
        }
        if let Ok(mut nf) = NEXT_FILES.lock() {
            *nf = NextFiles {
                files: Vec::new(),
                pos: 0,
            };
        }
    }
    let errors = CAPTURED
        .lock()
        .ok()
        .and_then(|mut c| c.take())
        .unwrap_or_default();
    (rc, errors)
}

/// The middle of runLuaScript: cwd and umask saved, `chdir("/")`, the run,
/// the fork check, cwd and umask restored.
/// With rpm 4.20's libraries, `rpmver` goes into Lua's registry around the
/// run as 4.20's runLuaScript puts it there.
fn run_in_root(
    api: &Api,
    name: &CStr,
    script: &CStr,
    argv: &[CString],
    rpmver: Option<&CStr>,
) -> Rc {
    // rpm: `cwd = open(".", O_RDONLY)` (no O_CLOEXEC); nothing runs without it.
    let Ok(cwd) = rustix::fs::open(".", OFlags::RDONLY, Mode::empty()) else {
        return Rc::Fail;
    };
    let oldmask = rustix::process::umask(Mode::empty());
    rustix::process::umask(oldmask);
    let pid = rustix::process::getpid();
    let mut argv: Vec<*mut c_char> = argv.iter().map(|a| a.as_ptr().cast_mut()).collect();
    argv.push(ptr::null_mut());
    let mut rc = Rc::Fail;
    let rpm420 = loaded().rpm420;
    // SAFETY: the global state exists; rpm 4.20's runLuaScript makes these
    // calls here, on a stack they leave as they found it (a NULL version
    // pushes nil, as `lua_pushstring` does for rpm).
    let l = unsafe { (api.get_lua)((api.global_state)()) };
    if rpm420 {
        // SAFETY: as above.
        unsafe {
            (api.pushstring)(l, RPM_PACKAGE_RPMVERSION.as_ptr());
            (api.pushstring)(l, rpmver.map_or(ptr::null(), CStr::as_ptr));
            (api.settable)(l, LUA_REGISTRYINDEX);
        }
    }
    if rustix::process::chdir("/").is_ok() {
        // SAFETY: the global state exists; script and name are C strings;
        // `argv` is a NULL-terminated array of C strings that outlive the
        // call (rpmluaRunScript only reads them); opts is NULL as rpm's.
        let r = unsafe {
            (api.run_script)(
                (api.global_state)(),
                script.as_ptr(),
                name.as_ptr(),
                ptr::null(),
                argv.as_ptr(),
            )
        };
        if r == 0 {
            rc = Rc::Ok;
        }
    }
    if rustix::process::getpid() != pid {
        forked_child_exit();
    }
    if rpm420 {
        // SAFETY: as above: rpm 4.20's own calls after the run (which set
        // `registry[version] = nil` and leave the version in place; a
        // version is always there, the transaction refuses a <lua>
        // scriptlet without one under rpm 4.20).
        unsafe {
            (api.getfield)(l, LUA_REGISTRYINDEX, RPM_PACKAGE_RPMVERSION.as_ptr());
            (api.pushnil)(l);
            (api.settable)(l, LUA_REGISTRYINDEX);
        }
    }
    if let Err(e) = rustix::process::fchdir(&cwd) {
        rpmlog(
            RPMLOG_ERR,
            &format!("Unable to restore current directory: {e}"),
        );
        rc = Rc::NotFound;
    }
    drop::<OwnedFd>(cwd);
    rustix::process::umask(oldmask);
    rc
}

/// A child that `posix.fork()` made and that returned from the script
/// without `exec`: rpm logs its error and `_exit(EXIT_FAILURE)`s.
fn forked_child_exit() -> ! {
    rpmlog(
        RPMLOG_ERR,
        "No exec() called after fork() in lua scriptlet\n",
    );
    // SAFETY: `_exit` ends this forked child at once, as rpm does, without
    // running the parent's exit handlers or touching the control socket.
    unsafe { libc::_exit(libc::EXIT_FAILURE) }
}

/// `fflush(NULL)`: what Lua's `print` (C `stdout`) wrote so far goes out
/// before the host answers, so it is not held until the transaction ends.
pub fn flush_stdio() {
    // SAFETY: flushing all C streams is always valid.
    unsafe { libc::fflush(ptr::null_mut()) };
}

/// The signal state of rpm 4.18's `rpmtsRun` around every scriptlet:
/// `SIGPIPE` ignored, and `rpmsqBlock(SIG_BLOCK)` (taken with the
/// transaction lock): every signal blocked except `SIGABRT`, `SIGBUS`,
/// `SIGFPE`, `SIGILL`, `SIGSEGV`, `SIGTSTP`. Programs a Lua scriptlet
/// starts (`rpm.execute`, `posix.exec`) inherit both, as under rpm.
pub fn transaction_signals() -> Result<(), String> {
    // SAFETY: a zeroed sigaction with SIG_IGN is valid; the sets are
    // initialised by sigfillset before use; the host is single-threaded.
    unsafe {
        let mut act: libc::sigaction = std::mem::zeroed();
        act.sa_sigaction = libc::SIG_IGN;
        if libc::sigaction(libc::SIGPIPE, &act, ptr::null_mut()) != 0 {
            return Err(format!(
                "sigaction(SIGPIPE): {}",
                std::io::Error::last_os_error()
            ));
        }
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        for sig in [
            libc::SIGABRT,
            libc::SIGBUS,
            libc::SIGFPE,
            libc::SIGILL,
            libc::SIGSEGV,
            libc::SIGTSTP,
        ] {
            libc::sigdelset(&mut set, sig);
        }
        let r = libc::pthread_sigmask(libc::SIG_BLOCK, &set, ptr::null_mut());
        if r != 0 {
            return Err(format!(
                "pthread_sigmask: {}",
                std::io::Error::from_raw_os_error(r)
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_libraries_go_to_the_lua_host_as_they_were_chosen() {
        let rpm420 = Libraries {
            rpmio: "/usr/local/fedora-tools/lib/librpmio.so.10".into(),
            rpm: "/usr/local/fedora-tools/lib/librpm.so.10".into(),
            lua: "/lib/x86_64-linux-gnu/liblua5.4.so.0".into(),
            rpm420: true,
        };
        for l in [Libraries::rpm418(), rpm420] {
            assert_eq!(Libraries::from_fields(&l.to_fields()).unwrap(), l);
        }
        let e =
            Libraries::from_fields(&[b"librpmio.so.9", b"librpm.so.9", b"liblua5.3.so.0", b"4.19"])
                .unwrap_err();
        assert!(e.contains("4.18 or 4.20"), "{e}");
        let e = Libraries::from_fields(&[b"librpmio.so.9"]).unwrap_err();
        assert!(e.contains("1 library fields"), "{e}");
    }

    #[test]
    fn the_libraries_of_the_rpm_program_as_ldd_shows_them() {
        let debian = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibrpm.so.9 => /lib/x86_64-linux-gnu/librpm.so.9 (0x00007f)\n\tlibrpmio.so.9 => /lib/x86_64-linux-gnu/librpmio.so.9 (0x00007f)\n\tliblua5.3.so.0 => /lib/x86_64-linux-gnu/liblua5.3.so.0 (0x00007f)\n";
        assert_eq!(
            Libraries::from_ldd("rpm", debian).unwrap(),
            Libraries::rpm418()
        );
        let prefix = "\tlibrpm.so.10 => /usr/local/fedora-tools/lib/librpm.so.10 (0x00007f)\n\tlibrpmio.so.10 => /usr/local/fedora-tools/lib/librpmio.so.10 (0x00007f)\n\tliblua5.4.so.0 => /lib/x86_64-linux-gnu/liblua5.4.so.0 (0x00007f)\n";
        assert_eq!(
            Libraries::from_ldd("rpm", prefix).unwrap(),
            Libraries {
                rpmio: "/usr/local/fedora-tools/lib/librpmio.so.10".into(),
                rpm: "/usr/local/fedora-tools/lib/librpm.so.10".into(),
                lua: "/lib/x86_64-linux-gnu/liblua5.4.so.0".into(),
                rpm420: true,
            }
        );
        let e = Libraries::from_ldd("rpm", "\tlibrpmio.so.8 => /lib/librpmio.so.8 (0x1)\n")
            .unwrap_err();
        assert!(e.contains("librpmio.so.8"), "{e}");
        // Nothing ldd can show: rpm 4.18's sonames, whose dlopen says why.
        for text in ["\tlibrpmio.so.10 => not found\n", ""] {
            assert_eq!(
                Libraries::from_ldd("rpm", text).unwrap(),
                Libraries::rpm418()
            );
        }
    }
}
