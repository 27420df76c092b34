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

use common::{as_root, tmp};
use cowkit_rpmlua::{argv, Error, HostConfig, LuaHost, LuaScript, Outcome};
use cowkit_testutil::rpm::{cpio_extract, rpmbuild};
use cowkit_testutil::run_ok;

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
fn issue_26_lua_scriptlets_run_as_rpm_runs_them() {
    if !as_root("issue_26_lua_scriptlets_run_as_rpm_runs_them", "chroot") {
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
fn issue_26_a_root_the_host_cannot_enter_is_refused_with_the_reason() {
    if !as_root(
        "issue_26_a_root_the_host_cannot_enter_is_refused_with_the_reason",
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
fn issue_26_a_missing_rpm_library_is_refused_naming_it() {
    if !as_root(
        "issue_26_a_missing_rpm_library_is_refused_naming_it",
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
fn issue_26_a_scriptlet_that_kills_the_host_is_an_error_not_an_outcome() {
    if !as_root(
        "issue_26_a_scriptlet_that_kills_the_host_is_an_error_not_an_outcome",
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
