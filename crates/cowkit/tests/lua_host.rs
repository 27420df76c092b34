//! rpm's `<lua>` scriptlets through `cowkit_rpmlua::LuaHost` (the hidden
//! `cowkit __lua-host`) next to the real rpm 4.18 on the same packages:
//! rpm installs them into one root, the host runs the same bodies (read
//! back from the packages' headers) with rpm's names and arguments in rpm's
//! order on a twin root with the same files, and what they leave (the log
//! the scripts write, other files, what `print` wrote, rpm's error lines)
//! must be the same bytes.
//!
//! Needs root (chroot).

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{as_root, cowkit, tmp};
use cowkit_rpmlua::{argv, Error, HostConfig, LuaHost, LuaScript, Outcome};
use cowkit_testutil::repo::{build_repo, dbpath, installed, rpm_in, verify};
use cowkit_testutil::rpm::{cpio_extract, rpmbuild};
use cowkit_testutil::run_ok;
use cowkit_testutil::tree::mkdir;

/// Defines `log` and `describe` for every later scriptlet (globals must
/// persist), then describes itself.
const PRETRANS_A: &str = r##"
function log(...)
  local f = assert(io.open("/log", "a"))
  f:write(table.concat({...}, " "), "\n")
  f:close()
end
function describe(label, ...)
  local opt, a = ...
  local t = {}
  for i = 1, #a do t[#t + 1] = tostring(a[i]) .. ":" .. (math.type(a[i]) or type(a[i])) end
  count = (count or 0) + 1
  log(label, "args=" .. table.concat(t, ","), "n=" .. select("#", ...), "opt=" .. type(opt),
      "optn=" .. tostring(next(opt)), "cwd=" .. posix.getcwd(), "umask=" .. posix.umask(),
      "prefix=" .. tostring(RPM_INSTALL_PREFIX and RPM_INSTALL_PREFIX[1]),
      "next_file=" .. type(rpm.next_file), "count=" .. count)
end
describe("pretrans-a", ...)
"##;

const PRE_A: &str = r##"describe("pre-a", ...)
log("pre-a sees", tostring(posix.stat("/opt/a/f1")))
"##;

/// Macros at run time, rpm.execute, fork/exec/wait, os.exit in a child and
/// in the scriptlet itself, exec without fork, a child returning without
/// exec, print, the chroot, cwd and umask changes (undone by rpm).
const POST_A: &str = r##"describe("post-a", ...)
-- "%" and "{" apart: rpmbuild expands macros in scriptlet bodies.
local pct = string.char(37)
local m = function(s) return (s:gsub("@", pct .. pct)) end
log("expand", rpm.expand(m("@{_bindir}|@{_rpmconfigdir}|@{?cowkit_lua_test}|@{lua: print(6 * 7)}|@{_dbpath}")))
rpm.define("cowkit_lua_later 1")
log("execute", tostring(rpm.execute("/bin/sh", "-c", "echo execute $0 >> /log", "zero")))
log("execute-fails", tostring(select("#", rpm.execute("/bin/sh", "-c", "exit 3"))))
rpm.execute("/bin/sh", "-c", "grep -E '^Sig(Blk|Ign)' /proc/self/status >> /log; umask >> /log")
local pid = posix.fork()
if pid == 0 then
  posix.exec("/bin/sh", "-c", "echo forked-exec $0 >> /log", "arg0")
end
log("waited", tostring(posix.wait(pid) == pid))
pid = posix.fork()
if pid == 0 then
  log("child before os.exit")
  local ok, e = pcall(os.exit, 7)
  log("child os.exit returned", tostring(e))
end
posix.wait(pid)
pid = posix.fork()
if pid == 0 then
  log("child returns without exec")
  return
end
posix.wait(pid)
log("parent os.exit", select(2, pcall(os.exit, 1)))
log("exec without fork", select(2, pcall(posix.exec, "/bin/sh", "-c", "true")))
print("print from post-a", 1, nil, true)
local x = assert(io.open("/x", "w")) x:write("x\n") x:close()
posix.chdir("../../../..")
log("dotdot", posix.getcwd())
local e = assert(io.open("../../cowkit-lua-escape-check", "w")) e:write("inside\n") e:close()
posix.chdir("/opt")
posix.umask("rwx------")
"##;

const FILETRIGGER_A: &str = r##"describe("filetriggerin-a", ...)
while true do
  local f = rpm.next_file()
  if not f then break end
  log("F", f)
end
log("F again", tostring(rpm.next_file()), tostring(rpm.next_file()))
"##;

const TRANSFILETRIGGER_A: &str = r##"describe("transfiletriggerin-a", ...)
local n = 0
for f in rpm.next_file do n = n + 1 log("T", f) end
log("T count", n, "then", tostring(rpm.next_file()))
"##;

const TRIGGER_A: &str = r##"describe("triggerin-a", ...)"##;

const POSTTRANS_A: &str = r##"describe("posttrans-a", ...)
log("defined earlier", rpm.expand("%" .. "{?cowkit_lua_later}"))
"##;

const POST_B: &str = r##"describe("post-b", ...)
local kept = assert(io.open("/umask-after-post-a", "w")) kept:close()
error("boom from post-b")
"##;

const POSTTRANS_B: &str = r##"describe("posttrans-b", ...)
log("survived the failure, global count is", count, "log is", type(log))
print("print from posttrans-b")
"##;

/// The package `name` (files `files` made by `install`), with `scripts`.
fn package(
    dir: &Path,
    name: &str,
    preamble: &str,
    install: &str,
    files: &str,
    scripts: &str,
) -> PathBuf {
    let spec = format!(
        "Name: {name}\nVersion: 1\nRelease: 1\nSummary: x\nLicense: MIT\nBuildArch: noarch\n\
         {preamble}\n%global debug_package %{{nil}}\n%global __os_install_post %{{nil}}\n\
         %description\nx\n%install\nB=\"$RPM_BUILD_ROOT\"\n{install}\n%files\n{files}\n{scripts}\n"
    );
    let dst = dir.join(format!("{name}.rpm"));
    rpmbuild(&spec, "w9.gzdio", &dst);
    dst
}

/// `rpm -qp --qf FORMAT pkg`: a script body exactly as in the header.
fn query(pkg: &Path, format: &str) -> String {
    let out = run_ok(
        Command::new("rpm").args(["-qp", "--qf", format]).arg(pkg),
        "rpm -qp",
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A root with a static busybox as `/bin/sh` (for `rpm.execute` and
/// `posix.exec`), `/opt`, and `/proc` (a mount point).
fn new_root(dir: &Path) -> PathBuf {
    std::fs::create_dir_all(dir.join("bin")).unwrap();
    std::fs::create_dir_all(dir.join("proc")).unwrap();
    std::fs::create_dir_all(dir.join("opt")).unwrap();
    std::fs::copy("/usr/bin/busybox", dir.join("bin/sh")).unwrap();
    dir.to_path_buf()
}

/// `sh -c` text that mounts a `/proc` on `ROOT/proc` in a mount namespace
/// of its own (gone with the process) and runs `PROGRAM ARGS...`; its
/// arguments are `ROOT PROGRAM ARGS...`.
const WITH_PROC: &str =
    r#"root=$0; prog=$1; shift; mount -t proc proc "$root/proc" && exec "$prog" "$@""#;

/// A program that runs `cowkit` with `/proc` in `root` and stdout and
/// stderr appended to files.
fn capturing_exe(dir: &Path, root: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let (out, err, exe) = (
        dir.join("host.out"),
        dir.join("host.err"),
        dir.join("host.sh"),
    );
    std::fs::write(
        &exe,
        format!(
            "#!/bin/sh\nexec unshare -m sh -c '{WITH_PROC}' '{}' '{}' \"$@\" >>'{}' 2>>'{}'\n",
            root.display(),
            env!("CARGO_BIN_EXE_cowkit"),
            out.display(),
            err.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    (exe, out, err)
}

/// Files of `pkg` under each of the trigger prefixes (`format` queries
/// them, in header order: rpmbuild sorts them) in turn, as rpm's file
/// trigger iterator lists them (a file under two prefixes is listed twice).
fn matching(pkg: &Path, format: &str) -> Vec<Vec<u8>> {
    let files = query(pkg, "[%{FILENAMES}\n]");
    let prefixes = query(pkg, format);
    let mut v = Vec::new();
    for p in prefixes.lines() {
        for f in files.lines() {
            if f == p || f.starts_with(&format!("{p}/")) {
                v.push(f.as_bytes().to_vec());
            }
        }
    }
    v
}

struct Twin<'a> {
    host: &'a mut LuaHost,
    failures: Vec<String>,
}

impl Twin<'_> {
    fn run(
        &mut self,
        name: &str,
        body: &str,
        (arg1, arg2): (Option<u32>, Option<u32>),
        prefixes: Option<&[String]>,
        next_files: Option<&[Vec<u8>]>,
    ) {
        let args = argv(&["<lua>".to_string()], arg1, arg2);
        let out = self
            .host
            .run(&LuaScript {
                name,
                body,
                args: &args,
                arg1: arg1.is_some(),
                arg2: arg2.is_some(),
                prefixes,
                next_files,
                rpmver: None,
            })
            .unwrap_or_else(|e| panic!("{name}: {}", cowkit_testutil::chain(&e)));
        if let Outcome::Failed(why) = out {
            self.failures.push(why);
        }
    }
}

/// The two packages: `lua-a` (relocatable, every kind of Lua scriptlet,
/// a trigger on `lua-b`) and `lua-b` (a failing `%post`).
fn build_packages(d: &Path) -> (PathBuf, PathBuf) {
    let a = package(
        d,
        "lua-a",
        "Prefix: /opt",
        "mkdir -p $B/opt/a/sub $B/opt/b\necho 1 > $B/opt/a/f1\necho 3 > $B/opt/a/sub/f3\necho 2 > $B/opt/b/f2",
        "/opt/a\n/opt/b",
        &format!(
            "%pretrans -p <lua>\n{PRETRANS_A}\n%pre -p <lua>\n{PRE_A}\n%post -p <lua>\n{POST_A}\n\
             %posttrans -p <lua>\n{POSTTRANS_A}\n\
             %filetriggerin -p <lua> -- /opt/a /opt/b\n{FILETRIGGER_A}\n\
             %transfiletriggerin -p <lua> -- /opt/b /opt\n{TRANSFILETRIGGER_A}\n\
             %triggerin -p <lua> -- lua-b\n{TRIGGER_A}\n"
        ),
    );
    let b = package(
        d,
        "lua-b",
        "",
        "mkdir -p $B/srv/b\necho b > $B/srv/b/f",
        "/srv/b",
        &format!("%post -p <lua>\n{POST_B}\n%posttrans -p <lua>\n{POSTTRANS_B}\n"),
    );
    (a, b)
}

/// `rpm --root r1 --define "cowkit_lua_test 42" -i --nodeps a b`, with
/// `/proc` in the root.
fn rpm_install(r1: &Path, a: &Path, b: &Path) -> std::process::Output {
    Command::new("unshare")
        .args(["-m", "sh", "-c", WITH_PROC])
        .arg(r1)
        .args(["rpm", "--root"])
        .arg(r1)
        .args(["--define", "cowkit_lua_test 42", "-i", "--nodeps"])
        .arg(a)
        .arg(b)
        .output()
        .unwrap()
}

/// One step of the twin install.
enum Step<'a> {
    /// Place a package's files (`rpm2cpio | cpio`).
    Files(&'a Path),
    /// A scriptlet: package, its name in rpm, the query of its body, `$1`
    /// and `$2`, whether the package's prefixes apply, the query of the
    /// trigger prefixes whose files `rpm.next_file()` yields.
    Run(&'a Path, &'a str, &'a str, Counts, bool, Option<&'a str>),
}

type Counts = (Option<u32>, Option<u32>);

/// The same scriptlets through `LuaHost` on `r2`, in rpm's order (as
/// rpm's log shows it): every %pretrans (no install prefixes yet); lua-b
/// first (lua-a triggers on it); file triggers of priority >= 10000 before
/// %post, then this package's triggers on installed ones; %posttrans in
/// element order; then the new packages' own %transfiletriggerin. Returns
/// the failures' reasons and the files with the host's stdout and stderr.
fn host_install(d: &Path, r2: &Path, a: &Path, b: &Path) -> (Vec<String>, PathBuf, PathBuf) {
    let (exe, out, err) = capturing_exe(d, r2);
    let mut host = LuaHost::start(&HostConfig {
        exe,
        root: r2.to_path_buf(),
        stdout_to_stderr: false,
        defines: vec![("cowkit_lua_test".into(), "42".into())],
    })
    .unwrap_or_else(|e| panic!("{}", cowkit_testutil::chain(&e)));
    let mut t = Twin {
        host: &mut host,
        failures: Vec::new(),
    };
    let one = (Some(1), None);
    let file = (Some(0), None);
    let steps = [
        Step::Run(a, "pretrans", "%{PRETRANS}", one, false, None),
        Step::Files(b),
        Step::Run(b, "post", "%{POSTIN}", one, false, None),
        Step::Run(a, "prein", "%{PREIN}", one, true, None),
        Step::Files(a),
        Step::Run(
            a,
            "filetriggerin",
            "[%{FILETRIGGERSCRIPTS}]",
            file,
            true,
            Some("[%{FILETRIGGERNAME}\n]"),
        ),
        Step::Run(a, "post", "%{POSTIN}", one, true, None),
        Step::Run(
            a,
            "triggerin",
            "[%{TRIGGERSCRIPTS}]",
            (Some(1), Some(1)),
            true,
            None,
        ),
        Step::Run(b, "posttrans", "%{POSTTRANS}", one, false, None),
        Step::Run(a, "posttrans", "%{POSTTRANS}", one, true, None),
        Step::Run(
            a,
            "transfiletriggerin",
            "[%{TRANSFILETRIGGERSCRIPTS}]",
            file,
            true,
            Some("[%{TRANSFILETRIGGERNAME}\n]"),
        ),
    ];
    for step in steps {
        match step {
            Step::Files(pkg) => cpio_extract(pkg, r2),
            Step::Run(pkg, tag, body, counts, relocatable, files) => {
                let name = format!("%{tag}({})", query(pkg, "%{NEVRA}"));
                let pfx = query(pkg, "[%{PREFIXES}\n]");
                let pfx: Vec<String> = pfx.lines().map(String::from).collect();
                let files = files.map(|f| matching(pkg, f));
                let pfx = relocatable.then_some(&pfx[..]);
                t.run(&name, &query(pkg, body), counts, pfx, files.as_deref());
            }
        }
    }
    let failures = std::mem::take(&mut t.failures);
    host.finish().unwrap();
    (failures, out, err)
}

/// What rpm's log must show, so that comparing with it means something.
fn check_rpm_log(log: &str) {
    for want in [
        "pretrans-a args=<lua>:string,1:integer n=2 opt=table optn=nil cwd=/ umask=rwxr-xr-x prefix=nil next_file=nil count=1",
        "pre-a sees nil",
        // Debian's `%_dbpath` is `%(bash -c 'echo ~/.rpmdb')`, expanded
        // when asked, inside the root (which has no bash).
        "expand /usr/bin|/usr/lib/rpm|42|42|\n", "defined earlier 1\n",
        "execute zero\nexecute 0.0\nexecute-fails 3\n",
        "forked-exec arg0\nwaited true\n",
        // rpmtsRun's signal mask (rpmsqBlock: all but ILL, ABRT, BUS, FPE,
        // SEGV, TSTP, and what cannot be blocked) and umask; the ignored
        // set (SIGPIPE, and what the test inherited) is compared with rpm's.
        "SigBlk:\tfffffffe7ff3fa17\nSigIgn:\t",
        "\n0022\n",
        "child before os.exit\nchild returns without exec\n",
        "parent os.exit exit not permitted in this context\n",
        "exec without fork exec not permitted in this context\n",
        "dotdot /\n",
        "F /opt/a\nF /opt/a/f1\nF /opt/a/sub\nF /opt/a/sub/f3\nF /opt/b\nF /opt/b/f2\nF again /opt/a /opt/a/f1\n",
        "post-b args=<lua>:string,1:integer n=2 opt=table optn=nil cwd=/ umask=rwxr-xr-x prefix=nil",
        "triggerin-a args=<lua>:string,1:integer,1:integer",
        "survived the failure, global count is 7 log is function",
        "T /opt/a\nT /opt/a/f1\nT /opt/a/sub\nT /opt/a/sub/f3\nT /opt/b\nT /opt/b/f2\nT /opt/b\nT /opt/b/f2\nT count 8 then /opt/a\n",
    ] {
        assert!(log.contains(want), "rpm's log lacks {want:?}:\n{log}");
    }
    assert!(!log.contains("child os.exit returned"), "{log}");
}

#[test]
fn lua_scriptlets_run_as_rpm_runs_them() {
    if !as_root("lua_scriptlets_run_as_rpm_runs_them", "chroot") {
        return;
    }
    cowkit_rpmlua::available().expect("rpm's Lua loads on this machine");
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let d = dir.path();
    let (a, b) = build_packages(d);
    let escape = Path::new("/cowkit-lua-escape-check");
    let _ = std::fs::remove_file(escape);
    let r1 = new_root(&d.join("r1"));
    let rpm = rpm_install(&r1, &a, &b);
    let rpm_err = String::from_utf8_lossy(&rpm.stderr).into_owned();
    let r2 = new_root(&d.join("r2"));
    let (failures, out, err) = host_install(d, &r2, &a, &b);

    let log1 = std::fs::read_to_string(r1.join("log")).unwrap();
    let log2 = std::fs::read_to_string(r2.join("log")).unwrap();
    assert_eq!(
        log2, log1,
        "the scripts' log differs from rpm's (left: cowkit, right: rpm)"
    );
    check_rpm_log(&log1);
    for f in [
        "x",
        "cowkit-lua-escape-check",
        "umask-after-post-a",
        "opt/a/f1",
    ] {
        let mode = |r: &Path| {
            std::fs::metadata(r.join(f))
                .map(|m| m.permissions().mode())
                .ok()
        };
        assert_eq!(mode(&r2), mode(&r1), "/{f}");
        assert!(r2.join(f).exists(), "/{f}");
    }
    assert!(!escape.exists(), "a scriptlet escaped the root through ..");

    // print, and rpm's own lines.
    let out = std::fs::read_to_string(out).unwrap();
    assert_eq!(
        out,
        String::from_utf8_lossy(&rpm.stdout),
        "print's output differs from rpm's"
    );
    assert!(out.contains("print from post-a\t1\tnil\ttrue\n"), "{out}");
    assert_eq!(failures.len(), 1, "{failures:?}");
    let boom = "lua script failed: [string \"%post(lua-b-1-1.noarch)\"]:3: boom from post-b";
    assert!(failures[0].starts_with(boom), "{failures:?}");
    let err = std::fs::read_to_string(err).unwrap();
    for line in [
        format!("error: {}\n", failures[0]),
        "error: No exec() called after fork() in lua scriptlet\n".into(),
    ] {
        assert!(
            rpm_err.contains(&line),
            "rpm did not say {line:?}:\n{rpm_err}"
        );
        assert!(err.contains(&line), "the host did not say {line:?}:\n{err}");
    }
}

#[test]
fn a_root_the_host_cannot_enter_is_refused_with_the_reason() {
    if !as_root(
        "a_root_the_host_cannot_enter_is_refused_with_the_reason",
        "chroot",
    ) {
        return;
    }
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let missing = dir.path().join("no-such-root");
    let cfg = |root: PathBuf| HostConfig {
        exe: env!("CARGO_BIN_EXE_cowkit").into(),
        root,
        stdout_to_stderr: true,
        defines: vec![],
    };
    match LuaHost::start(&cfg(missing.clone())) {
        Err(Error::Unavailable { root, reason }) => {
            assert_eq!(root, missing);
            assert!(
                reason.contains("cannot chroot") && reason.contains("no-such-root"),
                "{reason}"
            );
        }
        other => panic!("{other:?}"),
    }
    match LuaHost::start(&cfg("relative/root".into())) {
        Err(Error::RelativeRoot { .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_missing_rpm_library_is_refused_naming_it() {
    if !as_root(
        "a_missing_rpm_library_is_refused_naming_it",
        "mount namespace",
    ) {
        return;
    }
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    // The host runs where rpm's I/O library is /dev/null (a private mount
    // namespace): the library cannot be loaded.
    let lib = std::fs::canonicalize("/usr/lib/x86_64-linux-gnu/librpmio.so.9").unwrap();
    let exe = dir.path().join("no-rpmio.sh");
    std::fs::write(
        &exe,
        format!(
            "#!/bin/sh\nexec unshare -m sh -c 'mount --bind /dev/null {} && exec \"$0\" \"$@\"' '{}' \"$@\"\n",
            lib.display(),
            env!("CARGO_BIN_EXE_cowkit")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let root = new_root(&dir.path().join("root"));
    let res = LuaHost::start(&HostConfig {
        exe,
        root: root.clone(),
        stdout_to_stderr: true,
        defines: vec![],
    });
    match res {
        Err(e @ Error::Unavailable { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("cannot load librpmio.so.9: dlopen failed: "),
                "{msg}"
            );
            assert!(msg.contains(&root.display().to_string()), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_host_loads_the_libraries_the_parent_chose_without_asking_ldd_again() {
    if !as_root(
        "the_host_loads_the_libraries_the_parent_chose_without_asking_ldd_again",
        "chroot",
    ) {
        return;
    }
    cowkit_rpmlua::available().expect("rpm's Lua loads on this machine");
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    // An `ldd` first on the host's PATH that names a librpmio cowkit
    // refuses: a host that asked `ldd` itself would not start.
    let bin = dir.path().join("bin");
    mkdir(&bin);
    let ldd = bin.join("ldd");
    std::fs::write(
        &ldd,
        "#!/bin/sh\nprintf '\\tlibrpmio.so.8 => /lib/librpmio.so.8 (0x1)\\n'\n",
    )
    .unwrap();
    std::fs::set_permissions(&ldd, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:/usr/sbin:/usr/bin:/sbin:/bin", bin.display());
    let root = new_root(&dir.path().join("root"));
    let cfg = HostConfig {
        exe: env!("CARGO_BIN_EXE_cowkit").into(),
        root: root.clone(),
        stdout_to_stderr: true,
        defines: vec![],
    };
    let mut host = LuaHost::start_with(&cfg, &|c| {
        c.env("PATH", &path);
    })
    .expect("the host starts with the parent's libraries");
    let out = host
        .run(&LuaScript {
            name: "%post(t)",
            body: "local f = io.open('/ran', 'w'); f:write(rpm.expand('%{?_dbpath:2}')); f:close()",
            args: &argv(&["<lua>".into()], Some(1), None),
            arg1: true,
            arg2: false,
            prefixes: None,
            next_files: None,
            rpmver: None,
        })
        .unwrap();
    assert!(matches!(out, Outcome::Ok), "{out:?}");
    assert_eq!(std::fs::read_to_string(root.join("ran")).unwrap(), "2");
}

#[test]
fn a_scriptlet_that_kills_the_host_is_an_error_not_an_outcome() {
    if !as_root(
        "a_scriptlet_that_kills_the_host_is_an_error_not_an_outcome",
        "chroot",
    ) {
        return;
    }
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let root = new_root(&dir.path().join("root"));
    let mut host = LuaHost::start(&HostConfig {
        exe: env!("CARGO_BIN_EXE_cowkit").into(),
        root,
        stdout_to_stderr: true,
        defines: vec![],
    })
    .unwrap();
    let args = argv(&["<lua>".to_string()], Some(1), None);
    let script = |body| LuaScript {
        name: "%post(killer-1-1.noarch)",
        body,
        args: &args,
        arg1: true,
        arg2: false,
        prefixes: None,
        next_files: None,
        rpmver: None,
    };
    assert_eq!(host.run(&script("x = 1")).unwrap(), Outcome::Ok);
    // A syntax error is a scriptlet failure, in rpm's words; the host goes on.
    let why = "invalid syntax in lua script: [string \"%post(killer-1-1.noarch)\"]:1: ";
    match host.run(&script("x = = 1")).unwrap() {
        Outcome::Failed(reason) => assert!(reason.starts_with(why), "{reason}"),
        Outcome::Ok => panic!("a syntax error ran"),
    }
    assert_eq!(host.run(&script("assert(x == 1)")).unwrap(), Outcome::Ok);
    match host.run(&script(r#"rpm.execute("/bin/sh", "-c", "kill -9 $PPID")"#)) {
        Err(e @ Error::Broken { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("while %post(killer-1-1.noarch)"), "{msg}");
            assert!(msg.contains("signal: 9"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
    // It stays broken, saying so, and dropping it is fine.
    assert!(matches!(
        host.run(&script("x = 2")),
        Err(Error::Broken { .. })
    ));
}

// ---------------------------------------------------------------------------
// The Lua host killed while a scriptlet hangs.

/// What the hanging scriptlet of [`hang_packages`] is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Lua,
    Shell,
}

/// `hang` (owns `/usr/share/hang`), whose Lua `%pretrans` sets the global
/// `mark` and logs its process, and whose `%{phase}` (`pre` or `post`),
/// in `kind`, logs `hang PHASE $1`, writes `/hang.pid` (the shell's
/// process id, `lua` from Lua) and never ends; `after`, which requires it
/// (so it comes later in the transaction), with a Lua `%post` and
/// `%posttrans` that log `mark` and their process. Built into `dir`.
fn hang_packages(dir: &Path, kind: Kind, phase: &str) -> [PathBuf; 2] {
    let d = mkdir(dir);
    let log = |what: &str| {
        format!("local f = assert(io.open(\"/log\", \"a\")) f:write({what}, \"\\n\") f:close()")
    };
    let me = "math.tointeger(posix.getprocessid(\"pid\"))";
    let hang = match kind {
        Kind::Lua => format!(
            "%{phase} -p <lua>\n{}\n\
             local p = assert(io.open(\"/hang.pid\", \"w\")) p:write(\"lua\\n\") p:close()\n\
             posix.sleep(100000)\n",
            log(&format!("\"hang {phase} \", arg[2]"))
        ),
        Kind::Shell => format!(
            "%{phase}\necho \"hang {phase} $1\" >> /log\necho $$ > /hang.pid\nexec sleep 100000\n"
        ),
    };
    let hang = package(
        &d,
        "hang",
        "",
        "mkdir -p $B/usr/share/hang\necho h > $B/usr/share/hang/f",
        "/usr/share/hang",
        &format!(
            "%pretrans -p <lua>\nmark = \"kept\"\n{}\n{hang}",
            log(&format!("\"hang pretrans pid=\", {me}"))
        ),
    );
    let after = package(
        &d,
        "after",
        "Requires: hang",
        "mkdir -p $B/usr/share/after\necho a > $B/usr/share/after/f",
        "/usr/share/after",
        &format!(
            "%post -p <lua>\n{}\n%posttrans -p <lua>\n{}\n",
            log(&format!("\"after post \", tostring(mark), \" pid=\", {me}")),
            log(&format!(
                "\"after posttrans \", tostring(mark), \" pid=\", {me}"
            ))
        ),
    );
    [hang, after]
}

/// A root with the test repository's `ck-filesystem` and `ck-busybox` (a
/// static busybox as `/bin/sh`, with `sleep`), installed by the real rpm.
fn base_root(root: &Path) -> PathBuf {
    let repo = build_repo(tmp());
    mkdir(root);
    run_ok(
        rpm_in(root)
            .args(["-i", "--nodeps"])
            .arg(repo.rpm("ck-filesystem"))
            .arg(repo.rpm("ck-busybox")),
        "rpm -i (base root)",
    );
    std::fs::canonicalize(root).unwrap()
}

/// The process of a `cowkit __lua-host` chrooted into `root`, if one runs.
fn lua_host_in(root: &Path) -> Option<u32> {
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        if args.get(1) != Some(&&b"__lua-host"[..]) {
            continue;
        }
        if std::fs::read_link(e.path().join("root")).ok().as_deref() == Some(root) {
            return Some(pid);
        }
    }
    None
}

/// `cmd` (installing [`hang_packages`] into `root`) run until the hanging
/// scriptlet runs; then its process is killed with SIGKILL: the shell's,
/// or for Lua the Lua host chrooted into `root`. Returns the process
/// killed and what `cmd` did.
fn kill_the_hang(mut cmd: Command, root: &Path, kind: Kind) -> (u32, std::process::Output) {
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    let victim = loop {
        let said = std::fs::read_to_string(root.join("hang.pid")).unwrap_or_default();
        let found = match (kind, said.trim()) {
            (Kind::Lua, "lua") => lua_host_in(root),
            (Kind::Shell, pid) if !pid.is_empty() => {
                let comm = std::fs::read_to_string(format!("/proc/{pid}/comm"));
                (comm.unwrap_or_default().trim() == "sleep").then(|| pid.parse().unwrap())
            }
            _ => None,
        };
        if let Some(pid) = found {
            break pid;
        }
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "{kind:?}: ended before the scriptlet hung: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            started.elapsed().as_secs() < 300,
            "{kind:?}: the scriptlet never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let pid = rustix::process::Pid::from_raw(victim as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
    (victim, child.wait_with_output().unwrap())
}

/// One transaction of [`hang_packages`] with its hanging `%{phase}` killed.
struct Killed {
    /// The process killed.
    victim: u32,
    /// cowkit's (or rpm's) exit status.
    status: std::process::ExitStatus,
    /// cowkit's JSON summary (`Null` for rpm).
    json: serde_json::Value,
    stderr: String,
    /// `/log`, each process id a scriptlet logged (`pid=N`) replaced by
    /// `P0` when it is the killed one's, else `P1`, `P2`, ... in order of
    /// appearance.
    log: String,
    /// `rpm -qa` (but the base root's packages), `rpm -Va`, and whether
    /// `hang`'s file is there.
    installed: std::collections::BTreeMap<String, String>,
    verify: Vec<String>,
    hang_files: bool,
}

/// Installs `[hang, after]` ([`hang_packages`] of `kind` with `%{phase}`
/// hanging) into a new root under `d` (with `rpm -i` when `rpm`, else
/// `cowkit install --json`), kills the hang, and says how it ended.
fn killed(d: &Path, [hang, after]: &[PathBuf; 2], kind: Kind, phase: &str, rpm: bool) -> Killed {
    let name = format!("{kind:?}-{phase}-{}", if rpm { "rpm" } else { "cowkit" });
    let root = base_root(&d.join(&name));
    let cmd = if rpm {
        let mut c = rpm_in(&root);
        c.arg("-i").arg(hang).arg(after);
        c
    } else {
        let mut c = cowkit();
        c.args(["install", "--json", "--root"])
            .arg(&root)
            .arg("--dbpath")
            .arg(dbpath())
            .arg(hang)
            .arg(after);
        c
    };
    let (victim, out) = kill_the_hang(cmd, &root, kind);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = if rpm {
        serde_json::Value::Null
    } else {
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{name}: no JSON ({e}): {stderr}"))
    };
    let raw = std::fs::read_to_string(root.join("log")).unwrap_or_default();
    let mut pids: Vec<String> = vec![victim.to_string()];
    let mut log = String::new();
    for line in raw.lines() {
        let words: Vec<String> = line
            .split(' ')
            .map(|w| match w.strip_prefix("pid=") {
                Some(pid) => {
                    let n = pids.iter().position(|p| p == pid).unwrap_or_else(|| {
                        pids.push(pid.to_string());
                        pids.len() - 1
                    });
                    format!("P{n}")
                }
                None => w.to_string(),
            })
            .collect();
        log.push_str(&words.join(" "));
        log.push('\n');
    }
    Killed {
        victim,
        status: out.status,
        json,
        stderr,
        log,
        installed: installed(&root)
            .into_iter()
            .filter(|(n, _)| !n.starts_with("ck-"))
            .collect(),
        verify: verify(&root),
        hang_files: root.join("usr/share/hang/f").exists(),
    }
}

/// Issue 38: a `<lua>` scriptlet that never ends is ended by killing the
/// Lua host it runs in (SIGKILL: the host blocks the other signals, as
/// rpm's transaction does), and the transaction then ends as it does when
/// a hanging shell scriptlet's process is killed: the same exit status,
/// the same packages registered, `rpm -Va` alike, the same warning
/// (`%post`) or failure (`%pre`: the package is not installed), naming
/// the scriptlet, the package and the signal, for Lua followed by a note
/// that the host is gone. The later `<lua>` scriptlets run in a new host
/// (another process, without the dead host's globals). rpm itself runs
/// Lua in its own process and would die with it; the shell side is
/// checked against rpm.
#[test]
fn a_killed_lua_host_fails_its_scriptlet_and_the_transaction_goes_on() {
    if !as_root(
        "a_killed_lua_host_fails_its_scriptlet_and_the_transaction_goes_on",
        "chroot",
    ) {
        return;
    }
    cowkit_rpmlua::available().expect("rpm's Lua loads on this machine");
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let d = dir.path();
    for (phase, tag, fails) in [("post", "post", false), ("pre", "prein", true)] {
        let pkgs =
            |kind: Kind| hang_packages(&d.join(format!("pkgs-{kind:?}-{phase}")), kind, phase);
        let (sh_pkgs, lua_pkgs) = (pkgs(Kind::Shell), pkgs(Kind::Lua));
        let rpm = killed(d, &sh_pkgs, Kind::Shell, phase, true);
        let sh = killed(d, &sh_pkgs, Kind::Shell, phase, false);
        let lua = killed(d, &lua_pkgs, Kind::Lua, phase, false);
        let what = format!("%{phase} killed");

        // The shell scriptlet killed ends under cowkit as under rpm.
        assert!(
            rpm.stderr.contains(&format!(
                "%{tag}(hang-1-1.noarch) scriptlet failed, signal 9"
            )),
            "{what}, rpm: {}",
            rpm.stderr
        );
        assert_eq!(rpm.status.success(), !fails, "{what}, rpm: {}", rpm.stderr);
        assert_eq!(
            sh.status.success(),
            rpm.status.success(),
            "{what}: {}",
            sh.stderr
        );
        assert_eq!(sh.installed, rpm.installed, "{what}");
        assert_eq!(sh.verify, rpm.verify, "{what}");
        assert_eq!(sh.hang_files, rpm.hang_files, "{what}");
        assert_eq!(sh.log, rpm.log, "{what}");

        // The Lua one ends as the shell one.
        assert_eq!(
            lua.status.code(),
            sh.status.code(),
            "{what}: {}",
            lua.stderr
        );
        assert_eq!(lua.installed, sh.installed, "{what}");
        assert_eq!(lua.verify, sh.verify, "{what}");
        assert_eq!(lua.hang_files, sh.hang_files, "{what}");
        assert_eq!(lua.json["registered"], sh.json["registered"], "{what}");
        let mut want = vec![("after", "1-1")];
        if !fails {
            want.push(("hang", "1-1"));
        }
        let want: std::collections::BTreeMap<String, String> = want
            .into_iter()
            .map(|(n, v)| (n.into(), v.into()))
            .collect();
        assert_eq!(lua.installed, want, "{what}");
        // With `hang` failed, `after` misses it (as under rpm); no file
        // differs from the database.
        assert!(
            lua.verify.iter().all(|l| fails
                && (l == "Unsatisfied dependencies for after-1-1.noarch:"
                    || l == "\thang is needed by (installed) after-1-1.noarch")),
            "{what}: {:?}",
            lua.verify
        );
        assert_eq!(lua.hang_files, !fails, "{what}");

        // The same warning (%post) or failure (%pre), plus the note.
        let (sh_says, lua_says) = if fails {
            let f = |k: &Killed| {
                let failed = k.json["failed"].as_array().unwrap().clone();
                assert_eq!(failed.len(), 1, "{what}: {}", k.json);
                assert_eq!(failed[0]["nevra"], "hang-1-1.noarch", "{what}");
                failed[0]["error"][0].as_str().unwrap().to_string()
            };
            (f(&sh), f(&lua))
        } else {
            let w = |k: &Killed| {
                let w = k.json["scriptlet_warnings"].as_array().unwrap().clone();
                assert_eq!(w.len(), 1, "{what}: {}", k.json);
                assert!(k.json["failed"].as_array().unwrap().is_empty(), "{what}");
                w[0].as_str().unwrap().to_string()
            };
            (w(&sh), w(&lua))
        };
        let status = "signal: 9 (SIGKILL)";
        let sh_want = if fails {
            format!(
                "hang-1-1.noarch: %pre scriptlet failed (%prein(hang-1-1.noarch) failed: {status})"
            )
        } else {
            format!("hang-1-1.noarch %post(hang-1-1.noarch): {status}")
        };
        assert_eq!(sh_says, sh_want, "{what}");
        let head = if fails {
            sh_want.strip_suffix(')').unwrap()
        } else {
            &sh_want
        };
        let note = format!(
            ": cowkit's Lua host (process {}) running it is gone (",
            lua.victim
        );
        assert!(
            lua_says.starts_with(&format!("{head}{note}")),
            "{what}: {lua_says:?} is not {sh_want:?} with the note"
        );
        assert!(
            lua_says.contains("a new host runs the later <lua> scriptlets"),
            "{what}: {lua_says}"
        );

        // The later Lua scriptlets ran: in the same host after the shell
        // scriptlet, in a new one after the Lua host was killed.
        assert_eq!(
            sh.log,
            format!(
                "hang pretrans P1\nhang {phase} 1\nafter post kept P1\nafter posttrans kept P1\n"
            ),
            "{what}"
        );
        assert_eq!(
            lua.log,
            format!(
                "hang pretrans P0\nhang {phase} 1\nafter post nil P1\nafter posttrans nil P1\n"
            ),
            "{what}: the killed host ran %pretrans, a new one the later scriptlets"
        );
    }
}

/// Issue 38: a host that dies while a process its scriptlet forked (and
/// did not exec) still holds the host's end of the socket is seen as dead
/// at once, not when that process ends: `run` says `Broken`, with the
/// host's signal, while the forked process still sleeps. (A watchdog
/// kills that process after 60 s, so that a `run` waiting for it fails
/// the test instead of hanging it.)
#[test]
fn a_dead_host_is_seen_dead_while_its_forked_child_lives() {
    if !as_root(
        "a_dead_host_is_seen_dead_while_its_forked_child_lives",
        "chroot",
    ) {
        return;
    }
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let root = new_root(&dir.path().join("root"));
    let mut host = LuaHost::start(&HostConfig {
        exe: env!("CARGO_BIN_EXE_cowkit").into(),
        root: root.clone(),
        stdout_to_stderr: true,
        defines: vec![],
    })
    .unwrap();
    let args = argv(&["<lua>".to_string()], Some(1), None);
    let body = r#"
local pid = posix.fork()
if pid == 0 then posix.sleep(100000) os.exit(0) end
local f = assert(io.open("/child.pid", "w")) f:write(math.tointeger(pid)) f:close()
rpm.execute("/bin/sh", "-c", "kill -9 $PPID")
"#;
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let pid_file = root.join("child.pid");
    let watchdog = std::thread::spawn(move || {
        let child = loop {
            if let Ok(s) = std::fs::read_to_string(&pid_file) {
                if let Ok(pid) = s.trim().parse::<i32>() {
                    break rustix::process::Pid::from_raw(pid).unwrap();
                }
            }
            if wait.try_recv().is_ok() {
                panic!("the scriptlet ended before it forked");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let fired = wait
            .recv_timeout(std::time::Duration::from_secs(60))
            .is_err();
        let _ = rustix::process::kill_process(child, rustix::process::Signal::KILL);
        fired
    });
    let res = host.run(&LuaScript {
        name: "%post(forker-1-1.noarch)",
        body,
        args: &args,
        arg1: true,
        arg2: false,
        prefixes: None,
        next_files: None,
        rpmver: None,
    });
    let _ = done.send(());
    let fired = watchdog.join().unwrap();
    match res {
        Err(e @ Error::Broken { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("while %post(forker-1-1.noarch)"), "{msg}");
            assert!(msg.contains("signal: 9"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
    assert!(!fired, "`run` waited for the forked child to end");
    assert!(host.is_broken());
}

/// A Lua host that dies between two scriptlets (here killed by a process
/// its first scriptlet left behind, as an OOM kill would end it) ran none
/// of the next one: that one goes to a new host and succeeds, with no
/// warning, rather than failing on the dead one.
#[test]
fn a_host_that_died_between_scriptlets_is_replaced_before_the_next() {
    if !as_root(
        "a_host_that_died_between_scriptlets_is_replaced_before_the_next",
        "packages are installed as root",
    ) {
        return;
    }
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let d = mkdir(&dir.path().join("pkgs"));
    // The first %post forks a process that kills the host a second later,
    // while the next package's shell %pre sleeps.
    let first = package(
        &d,
        "idle-a",
        "",
        "mkdir -p $B/usr/share/idle-a\necho a > $B/usr/share/idle-a/f",
        "/usr/share/idle-a",
        "%post -p <lua>\n\
         local host = posix.getprocessid(\"pid\")\n\
         if posix.fork() == 0 then posix.sleep(1) posix.kill(host, 9) os.exit(0) end\n\
         local f = assert(io.open(\"/host.pid\", \"w\")) f:write(math.tointeger(host)) f:close()\n",
    );
    let second = package(
        &d,
        "idle-b",
        "Requires: idle-a",
        "mkdir -p $B/usr/share/idle-b\necho b > $B/usr/share/idle-b/f",
        "/usr/share/idle-b",
        "%pre\nsleep 3\n%post -p <lua>\n\
         local f = assert(io.open(\"/second.pid\", \"w\")) \
         f:write(math.tointeger(posix.getprocessid(\"pid\"))) f:close()\n",
    );
    let root = base_root(&dir.path().join("root"));
    let out = cowkit()
        .args(["install", "--json", "--root"])
        .arg(&root)
        .arg("--dbpath")
        .arg(dbpath())
        .arg(&first)
        .arg(&second)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["scriptlet_warnings"].as_array().map(Vec::len),
        Some(0),
        "{json}\n{stderr}"
    );
    let host = std::fs::read_to_string(root.join("host.pid")).unwrap();
    let second_host = std::fs::read_to_string(root.join("second.pid"))
        .unwrap_or_else(|e| panic!("the second %post did not run ({e}): {stderr}"));
    assert_ne!(host, second_host, "the second %post ran in the killed host");
    let names: Vec<String> = installed(&root).into_keys().collect();
    assert!(
        names.iter().any(|n| n.starts_with("idle-a"))
            && names.iter().any(|n| n.starts_with("idle-b")),
        "{names:?}"
    );
}

/// What a `<lua>` scriptlet's `rpm.expand` gives is what it gives under
/// rpm: rpm 4.18 expands a transaction's scriptlets' macros from its
/// configuration, whatever `--dbpath` said (Debian's
/// `%_dbpath` is `%(bash -c 'echo ~/.rpmdb')`, run on the host even when
/// the root has a `bash` of its own that cannot run there).
#[test]
fn lua_scriptlets_expand_macros_as_rpm_does() {
    if !as_root(
        "lua_scriptlets_expand_macros_as_rpm_does",
        "packages are installed as root",
    ) {
        return;
    }
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let d = mkdir(&dir.path().join("pkgs"));
    let pkg = package(
        &d,
        "expand-lua",
        "",
        "mkdir -p $B/usr/share/expand-lua\necho a > $B/usr/share/expand-lua/f",
        "/usr/share/expand-lua",
        "%post -p <lua>\n\
         local f = assert(io.open(\"/expanded\", \"w\"))\n\
         f:write(rpm.expand(\"%{_dbpath} %{?foo} %{_prefix}\"))\n\
         f:close()\n",
    );
    let cases: [(&str, &[&str], bool); 3] = [
        ("no options", &[], false),
        ("--dbpath", &["--dbpath", "/var/lib/rpm"], false),
        ("a bash in the root that cannot run there", &[], true),
    ];
    for (n, (what, opts, bash)) in cases.into_iter().enumerate() {
        let expanded = |who: &str| {
            let root = new_root(&dir.path().join(format!("{who}-{n}")));
            if bash {
                // Dynamically linked, without its libraries in the root.
                mkdir(&root.join("usr/bin"));
                std::fs::copy("/bin/bash", root.join("usr/bin/bash")).unwrap();
                std::fs::copy("/bin/bash", root.join("bin/bash")).unwrap();
            }
            let mut cmd = if who == "rpm" {
                let mut c = Command::new("rpm");
                c.env("HOME", cowkit_testutil::repo::HOME)
                    .arg("--root")
                    .arg(&root)
                    .args(["-U", "--nodeps"]);
                c
            } else {
                let mut c = cowkit();
                c.env("HOME", cowkit_testutil::repo::HOME)
                    .args(["install", "--root"])
                    .arg(&root);
                c
            };
            let out = cmd.args(opts).arg(&pkg).output().unwrap();
            assert!(
                out.status.success(),
                "{who}, {what}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::fs::read_to_string(root.join("expanded")).unwrap()
        };
        assert_eq!(expanded("cowkit"), expanded("rpm"), "{what}");
    }
}
