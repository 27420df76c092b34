//! `cowkit nosync` end to end: dynamic, static, Go and `ldconfig` programs,
//! counted at the kernel's syscall tracepoints (which fire after seccomp),
//! against a plain run and `eatmydata`.
//!
//! Needs root (tracefs, device-mapper, setcap), `cc` with a static libc,
//! `go`, `eatmydata`, `strace`, `dmsetup`: all from `scripts/setup.sh`.
//! Without them the tests say SKIPPED; under `CI`/the rig they fail.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};

use cowkit_nosync::shim::KINDS;
use cowkit_testutil::required;

const COWKIT: &str = env!("CARGO_BIN_EXE_cowkit");

/// The failing disk of `a_failing_final_syncfs_fails_the_run` is mounted
/// where every test of this binary sees it, and the default final sync
/// covers every writable filesystem: while it exists, no other test may
/// run `cowkit nosync`. Tests take the lock shared, that one exclusive.
static DISK: RwLock<()> = RwLock::new(());

fn shared() -> RwLockReadGuard<'static, ()> {
    DISK.read().unwrap_or_else(|e| e.into_inner())
}

fn exclusive() -> RwLockWriteGuard<'static, ()> {
    DISK.write().unwrap_or_else(|e| e.into_inner())
}
const PROGRAMS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../cowkit-nosync/tests/programs"
);
/// The sync system calls, traced at `sys_enter_*`: the first six of what
/// the shim counts (`open` and `pwritev2` follow them).
const EVENTS: &[&str] = KINDS.split_at(6).0;

/// Skip (or, under CI/the rig, fail) when `what` is missing.
fn need(ok: bool, what: &str) -> bool {
    if !ok {
        if required() {
            panic!("{what} is missing; scripts/setup.sh installs it and the tests run as root");
        }
        eprintln!("SKIPPED: {what} is missing");
    }
    ok
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The test programs, built once per test binary.
struct Programs {
    _dir: tempfile::TempDir,
    dynamic: PathBuf,
    static_: PathBuf,
    go: Option<PathBuf>,
}

fn programs() -> &'static Programs {
    static P: OnceLock<Programs> = OnceLock::new();
    P.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let src = Path::new(PROGRAMS).join("syncer.c");
        let cc = |out: &Path, extra: &[&str]| {
            let st = Command::new("cc")
                .args(["-O1", "-Wall", "-o"])
                .arg(out)
                .arg(&src)
                .args(extra)
                .status()
                .expect("run cc");
            assert!(st.success(), "cc {extra:?} failed");
        };
        let dynamic = dir.path().join("syncer");
        cc(&dynamic, &[]);
        let static_ = dir.path().join("syncer-static");
        cc(&static_, &["-static"]);
        let go = if have("go") {
            let gosrc = dir.path().join("gosrc");
            std::fs::create_dir(&gosrc).unwrap();
            for f in ["syncer.go", "sysnr_amd64.go", "sysnr_arm64.go"] {
                std::fs::copy(Path::new(PROGRAMS).join(f), gosrc.join(f)).unwrap();
            }
            let out = dir.path().join("syncer-go");
            let st = Command::new("go")
                .args(["build", "-o"])
                .arg(&out)
                .arg(".")
                .current_dir(&gosrc)
                .env("GO111MODULE", "off")
                .env("CGO_ENABLED", "0")
                .env("GOTOOLCHAIN", "local")
                .env("GOCACHE", dir.path().join("gocache"))
                .env("GOPATH", dir.path().join("gopath"))
                .status()
                .expect("run go build");
            assert!(st.success(), "go build failed");
            Some(out)
        } else {
            None
        };
        Programs {
            _dir: dir,
            dynamic,
            static_,
            go,
        }
    })
}

/// A tracefs instance of our own, recording the sync-family
/// `sys_enter_*` events of one process and its descendants.
struct Tracer {
    dir: PathBuf,
}

impl Tracer {
    fn new() -> Option<Tracer> {
        if !need(is_root(), "root (for tracefs)") {
            return None;
        }
        let base = Path::new("/sys/kernel/tracing");
        if !base.join("instances").exists() {
            let _ = Command::new("mount")
                .args(["-t", "tracefs", "nodev", "/sys/kernel/tracing"])
                .status();
        }
        if !need(
            base.join("events/syscalls/sys_enter_fsync").exists(),
            "tracefs with syscall events",
        ) {
            return None;
        }
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = base.join(format!(
            "instances/cowkit-nosync-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        std::fs::create_dir(&dir).expect("create a tracefs instance");
        let t = Tracer { dir };
        t.write("options/event-fork", "1");
        Some(t)
    }

    fn write(&self, file: &str, v: &str) {
        std::fs::write(self.dir.join(file), v)
            .unwrap_or_else(|e| panic!("write {v} to {}: {e}", self.dir.join(file).display()));
    }

    /// Trace `pid` and its descendants. The events are enabled only after
    /// the pid filter is set: with an empty filter they would record every
    /// process on the machine (other tests' syncs among them).
    fn follow(&self, pid: u32) {
        self.write("set_event_pid", &pid.to_string());
        for ev in EVENTS {
            self.write(&format!("events/syscalls/sys_enter_{ev}/enable"), "1");
        }
    }

    fn counts(&self) -> BTreeMap<&'static str, usize> {
        let text = std::fs::read_to_string(self.dir.join("trace")).unwrap();
        EVENTS
            .iter()
            .map(|ev| {
                let pat = format!(": sys_{ev}(");
                (*ev, text.lines().filter(|l| l.contains(&pat)).count())
            })
            .collect()
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        for ev in EVENTS {
            let _ = std::fs::write(
                self.dir
                    .join(format!("events/syscalls/sys_enter_{ev}/enable")),
                "0",
            );
        }
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// Run `args` traced from its first instruction: a shell waits for a line
/// on stdin, the tracer follows the shell's pid, then the shell execs.
fn traced(args: &[&OsStr]) -> Option<(Output, BTreeMap<&'static str, usize>)> {
    let t = Tracer::new()?;
    let mut child = Command::new("sh")
        .args(["-c", "read go; exec \"$@\"", "sh"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    t.follow(child.id());
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let out = child.wait_with_output().unwrap();
    Some((out, t.counts()))
}

fn total(c: &BTreeMap<&str, usize>) -> usize {
    c.values().sum()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A scratch directory (0755, so that programs run as another user reach it).
fn scratch() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d
}

fn pattern() -> Vec<u8> {
    (0..4096u32).map(|i| (i * 7 + 1) as u8).collect()
}

/// The runs of one program: plain, eatmydata, cowkit nosync.
fn three_ways(
    name: &str,
    prog: &[&OsStr],
    check: impl Fn(&Path),
) -> Option<[BTreeMap<&'static str, usize>; 3]> {
    let mut res = Vec::new();
    for how in ["plain", "eatmydata", "nosync"] {
        let d = scratch();
        let mut args: Vec<&OsStr> = match how {
            "plain" => vec![],
            "eatmydata" => vec!["eatmydata".as_ref()],
            _ => vec![
                COWKIT.as_ref(),
                "nosync".as_ref(),
                "--final-sync=none".as_ref(),
                "--".as_ref(),
            ],
        };
        args.extend(prog.iter().copied());
        let dir = d.path().to_path_buf();
        let dir_s = dir.as_os_str().to_owned();
        let args: Vec<&OsStr> = args
            .into_iter()
            .map(|a| if a == "DIR" { dir_s.as_os_str() } else { a })
            .collect();
        let (out, counts) = traced(&args)?;
        assert!(
            out.status.success(),
            "{name} {how}: {:?}\n{}\n{}",
            out.status,
            stdout(&out),
            String::from_utf8_lossy(&out.stderr)
        );
        check(&dir);
        eprintln!("{name:>10} {how:>9}: {counts:?}");
        res.push(counts);
    }
    res.try_into().ok()
}

fn syncer_data_intact(dir: &Path) {
    let p = pattern();
    let a = std::fs::read(dir.join("syncer.dat")).unwrap();
    assert_eq!(a, p);
    let b = std::fs::read(dir.join("syncer2.dat")).unwrap();
    assert_eq!(b, p);
}

#[test]
fn sync_calls_never_reach_the_kernel_for_any_kind_of_binary() {
    let _disk = shared();
    if !need(have("eatmydata"), "eatmydata") || !need(have("go"), "go") {
        return;
    }
    let p = programs();
    let Some([plain, eat, ours]) = three_ways(
        "dynamic C",
        &[p.dynamic.as_os_str(), "DIR".as_ref()],
        syncer_data_intact,
    ) else {
        return;
    };
    assert!(total(&plain) >= 6, "{plain:?}");
    assert_eq!(total(&ours), 0, "{ours:?}");
    // eatmydata catches the libc calls of a dynamic program.
    assert!(total(&eat) < total(&plain), "{eat:?}");

    for (name, prog) in [
        ("static C", vec![p.static_.as_os_str(), "DIR".as_ref()]),
        (
            "static raw",
            vec![
                p.static_.as_os_str(),
                "DIR".as_ref(),
                "0".as_ref(),
                "raw".as_ref(),
            ],
        ),
    ] {
        let [plain, eat, ours] = three_ways(name, &prog, syncer_data_intact).unwrap();
        assert!(total(&plain) >= 6, "{plain:?}");
        assert!(total(&eat) >= 6, "eatmydata does not catch {name}: {eat:?}");
        assert_eq!(total(&ours), 0, "{ours:?}");
    }

    let go = p.go.as_ref().unwrap();
    let [plain, eat, ours] = three_ways("Go", &[go.as_os_str(), "DIR".as_ref()], |d| {
        assert_eq!(std::fs::read(d.join("go.dat")).unwrap(), pattern());
    })
    .unwrap();
    assert!(total(&plain) >= 4, "{plain:?}");
    assert!(total(&eat) >= 4, "eatmydata does not catch Go: {eat:?}");
    assert_eq!(total(&ours), 0, "{ours:?}");
}

#[test]
fn ldconfig_static_pie_is_covered() {
    let _disk = shared();
    if !need(have("eatmydata"), "eatmydata") {
        return;
    }
    let ldconfig = ["/sbin/ldconfig", "/usr/sbin/ldconfig"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("ldconfig");
    let setup = |d: &Path| {
        std::fs::create_dir_all(d.join("etc")).unwrap();
        std::fs::create_dir_all(d.join("lib")).unwrap();
        std::fs::write(d.join("etc/ld.so.conf"), "/lib\n").unwrap();
    };
    let mut res = Vec::new();
    for how in ["plain", "eatmydata", "nosync"] {
        let d = scratch();
        setup(d.path());
        let mut args: Vec<&OsStr> = match how {
            "plain" => vec![],
            "eatmydata" => vec!["eatmydata".as_ref()],
            _ => vec![
                COWKIT.as_ref(),
                "nosync".as_ref(),
                "--final-sync=none".as_ref(),
                "--".as_ref(),
            ],
        };
        args.extend([ldconfig.as_ref(), "-r".as_ref(), d.path().as_os_str()]);
        let Some((out, counts)) = traced(&args) else {
            return;
        };
        assert!(out.status.success(), "{how}: {out:?}");
        let cache = std::fs::metadata(d.path().join("etc/ld.so.cache")).unwrap();
        assert!(cache.len() > 0);
        eprintln!("  ldconfig {how:>9}: {counts:?}");
        res.push(total(&counts));
    }
    assert!(res[0] >= 1 && res[1] >= 1, "{res:?}");
    assert_eq!(res[2], 0);
}

fn nosync(args: &[&OsStr]) -> Output {
    Command::new(COWKIT)
        .arg("nosync")
        .args(args)
        .output()
        .unwrap()
}

fn kv(out: &str) -> BTreeMap<String, String> {
    out.lines()
        .flat_map(|l| l.split(' '))
        .filter_map(|f| f.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn sync_open_flags_are_stripped_and_bad_descriptors_still_fail() {
    let _disk = shared();
    let p = programs();
    let d = scratch();
    let dir = d.path().as_os_str();
    let plain = Command::new(&p.dynamic).arg(dir).output().unwrap();
    let plain = kv(&stdout(&plain));
    assert_eq!(plain["open_o_sync"], "1");
    assert_eq!(plain["openat_o_dsync"], "1");

    for raw in ["libc", "raw"] {
        let out = nosync(&[
            "--final-sync=none".as_ref(),
            "--".as_ref(),
            p.dynamic.as_os_str(),
            dir,
            "0".as_ref(),
            raw.as_ref(),
        ]);
        assert!(out.status.success(), "{out:?}");
        let v = kv(&stdout(&out));
        assert_eq!(v["open_o_sync"], "0", "{v:?}");
        assert_eq!(v["open_o_dsync_bit"], "0", "{v:?}");
        assert_eq!(v["openat_o_dsync"], "0", "{v:?}");
        assert_eq!(v["pwritev2"], "4096");
        for k in ["fsync", "fdatasync", "syncfs", "sync_file_range", "msync"] {
            assert_eq!(v[k], "0", "{k}: {v:?}");
        }
        // Negative descriptors: EBADF from the shim (libc) or the filter (raw).
        assert_eq!(v["fsync_neg"], "-1");
        // The line is "fsync_neg=-1 errno=EBADF": kv keeps the last errno.
        let text = stdout(&out);
        assert!(text.contains("fsync_neg=-1 errno=EBADF"), "{text}");
        assert!(text.contains("fdatasync_neg=-1 errno=EBADF"), "{text}");
        if raw == "libc" {
            // The shim checks the descriptor table: a closed fd is EBADF too.
            assert!(text.contains("fsync_closed=-1 errno=EBADF"), "{text}");
        }
        syncer_data_intact(d.path());
    }
    // The static program gets the filter only: EBADF for a negative fd.
    let out = nosync(&[
        "--final-sync=none".as_ref(),
        "--".as_ref(),
        p.static_.as_os_str(),
        dir,
    ]);
    let text = stdout(&out);
    assert!(text.contains("fsync_neg=-1 errno=EBADF"), "{text}");
    assert!(text.contains("fdatasync_neg=-1 errno=EBADF"), "{text}");
}

#[test]
fn exit_codes_and_signals_propagate() {
    let _disk = shared();
    let p = programs();
    let d = scratch();
    let dir = d.path().as_os_str();
    for prog in [&p.dynamic, &p.static_] {
        let out = nosync(&["--".as_ref(), prog.as_os_str(), dir, "7".as_ref()]);
        assert_eq!(out.status.code(), Some(7), "{out:?}");
        for sig in [15, 9, 6] {
            let arg = format!("kill-{sig}");
            let out = nosync(&[
                "--final-sync=none".as_ref(),
                "--".as_ref(),
                prog.as_os_str(),
                dir,
                arg.as_ref(),
            ]);
            assert_eq!(out.status.signal(), Some(sig), "{out:?}");
        }
    }
    // A missing command: 127, as a shell says.
    let out = nosync(&["--".as_ref(), "/nonexistent/cmd".as_ref()]);
    assert_eq!(out.status.code(), Some(127), "{out:?}");
}

#[test]
fn descendants_are_waited_for() {
    let _disk = shared();
    let d = scratch();
    let flag = d.path().join("late");
    // The shell exits at once; its orphaned grandchild writes later.
    let script = format!("(sleep 0.3; echo done > '{}') & exit 0", flag.display());
    let out = nosync(&[
        "-v".as_ref(),
        "--".as_ref(),
        "sh".as_ref(),
        "-c".as_ref(),
        script.as_ref(),
    ]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(std::fs::read_to_string(&flag).unwrap(), "done\n");
}

#[test]
fn verbose_counts_what_the_shim_suppressed() {
    let _disk = shared();
    let p = programs();
    let d = scratch();
    let out = Command::new(COWKIT)
        .args(["-v", "nosync", "--final-sync=none", "--"])
        .arg(&p.dynamic)
        .arg(d.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fsync 1, fdatasync 1, sync 1, syncfs 1, sync_file_range 1, msync 1, open 2, pwritev2 2"),
        "{err}"
    );
    // The seccomp layer's answers are counted too (here the shim's msync,
    // turned into MS_ASYNC, reaches it).
    assert!(
        err.contains("answered by the seccomp layer") && err.contains("msync 1"),
        "{err}"
    );
}

#[test]
fn the_final_syncfs_happens_and_is_reported() {
    let _disk = shared();
    if !need(have("strace"), "strace") {
        return;
    }
    let d = scratch();
    let trace = d.path().join("strace.out");
    // The command changes the scratch filesystem: that one is synced.
    let out = Command::new("strace")
        .args(["-f", "-e", "trace=syncfs,sync", "-o"])
        .arg(&trace)
        .args([COWKIT, "-v", "nosync", "--", "sh", "-c"])
        .arg(format!("echo x > {}/changed", d.path().display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let t = std::fs::read_to_string(&trace).unwrap();
    // With -f, strace may split a call into `syncfs(3 <unfinished ...>` and
    // `<... syncfs resumed>) = 0` when another thread runs in between.
    let n = t.lines().filter(|l| l.contains("syncfs(")).count();
    assert!(n >= 1, "{t}");
    // The probe for an outer filter (a descriptor that cannot be open)
    // fails with EBADF, as it must; no real final syncfs fails.
    let probe = format!("syncfs({})", i32::MAX);
    assert!(
        t.lines().any(|l| l.contains(&probe) && l.contains("EBADF")),
        "{t}"
    );
    assert!(
        !t.lines()
            .any(|l| l.contains("syncfs") && l.contains("= -1") && !l.contains(&probe)),
        "{t}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("final syncfs: `"), "{err}");

    let out = Command::new("strace")
        .args(["-f", "-e", "trace=syncfs,sync", "-o"])
        .arg(&trace)
        .args([COWKIT, "nosync", "--final-sync=none", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = std::fs::read_to_string(&trace).unwrap();
    assert!(!t.contains("syncfs("), "{t}");

    let out = Command::new("strace")
        .args(["-f", "-e", "trace=syncfs,sync", "-o"])
        .arg(&trace)
        .args([COWKIT, "nosync", "--final-sync=all", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let t = std::fs::read_to_string(&trace).unwrap();
    assert!(t.lines().any(|l| l.contains(" sync(")), "{t}");
}

/// An ext4 on a loop device whose backing file lives on a tmpfs too small
/// for it: once the tmpfs is full, every write of the loop device fails
/// (ENOSPC below, EIO for ext4), as a dying disk would. Device-mapper
/// (`dm-error`, `dm-flakey`) would be the usual tool, but kernels built
/// without it exist (this one); a full backing store needs only loop and
/// tmpfs. Everything is torn down on drop.
struct FailingDisk {
    loopdev: Option<String>,
    mnt: tempfile::TempDir,
    store: tempfile::TempDir,
    store_mounted: bool,
}

impl FailingDisk {
    fn new() -> Option<FailingDisk> {
        if !need(is_root(), "root (for loop devices)") || !need(have("mkfs.ext4"), "mkfs.ext4") {
            return None;
        }
        let run = |cmd: &mut Command| {
            let o = cmd.output().unwrap();
            assert!(o.status.success(), "{cmd:?}: {o:?}");
            String::from_utf8(o.stdout).unwrap().trim().to_string()
        };
        let mut disk = FailingDisk {
            loopdev: None,
            mnt: tempfile::tempdir().unwrap(),
            store: tempfile::tempdir().unwrap(),
            store_mounted: false,
        };
        run(Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=24m", "cowkit-test"])
            .arg(disk.store.path()));
        disk.store_mounted = true;
        let img = disk.store.path().join("disk.img");
        std::fs::File::create(&img)
            .unwrap()
            .set_len(256 << 20)
            .unwrap();
        run(Command::new("mkfs.ext4")
            .args(["-q", "-F", "-O", "^has_journal"])
            .arg(&img));
        disk.loopdev = Some(run(Command::new("losetup")
            .args(["-f", "--show"])
            .arg(&img)));
        run(Command::new("mount")
            .arg(disk.loopdev.as_ref().unwrap())
            .arg(disk.mnt.path()));
        Some(disk)
    }
}

impl Drop for FailingDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.mnt.path())
            .status();
        if let Some(l) = &self.loopdev {
            let _ = Command::new("losetup").args(["-d", l]).status();
        }
        if self.store_mounted {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.store.path())
                .status();
        }
    }
}

#[test]
fn a_failing_final_syncfs_fails_the_run() {
    let _only_me = exclusive();
    let Some(disk) = FailingDisk::new() else {
        return;
    };
    let file = disk.mnt.path().join("data");
    // 64 MiB stays dirty in the page cache (nosync skipped the fsync); the
    // final syncfs writes it back and the loop device runs out of space.
    let script = format!(
        "head -c 67108864 /dev/urandom > '{}' && sync '{}'",
        file.display(),
        file.display()
    );
    let out = nosync(&["--".as_ref(), "sh".as_ref(), "-c".as_ref(), script.as_ref()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        err.contains(&format!("final syncfs of `{}`", disk.mnt.path().display())),
        "{err}"
    );
    // And the same command with its own sync reaching the kernel fails
    // by itself: the error is real, not made up by cowkit.
    let plain = Command::new("sh").args(["-c", &script]).output().unwrap();
    assert!(!plain.status.success(), "{plain:?}");
}

#[test]
fn setuid_and_file_capabilities_keep_working_as_root() {
    let _disk = shared();
    if !need(is_root(), "root")
        || !need(have("setcap"), "setcap")
        || !need(have("setpriv"), "setpriv")
    {
        return;
    }
    let out = nosync(&[
        "--".as_ref(),
        "grep".as_ref(),
        "NoNewPrivs".as_ref(),
        "/proc/self/status".as_ref(),
    ]);
    assert!(stdout(&out).contains("NoNewPrivs:\t0"), "{out:?}");

    let d = scratch();
    // A copy of `cat` with cap_net_raw: run as nobody, it still gets it.
    let capcat = d.path().join("capcat");
    std::fs::copy("/bin/cat", &capcat).unwrap();
    std::fs::set_permissions(&capcat, std::fs::Permissions::from_mode(0o755)).unwrap();
    let st = Command::new("setcap")
        .args(["cap_net_raw+ep"])
        .arg(&capcat)
        .status()
        .unwrap();
    assert!(st.success());
    // A setuid-root copy of `id`.
    let suid = d.path().join("suid-id");
    std::fs::copy("/usr/bin/id", &suid).unwrap();
    std::fs::set_permissions(&suid, std::fs::Permissions::from_mode(0o4755)).unwrap();
    let as_nobody = |prog: &Path, arg: &str| {
        nosync(&[
            "--final-sync=none".as_ref(),
            "--".as_ref(),
            "setpriv".as_ref(),
            "--reuid=65534".as_ref(),
            "--regid=65534".as_ref(),
            "--clear-groups".as_ref(),
            prog.as_os_str(),
            arg.as_ref(),
        ])
    };
    let out = as_nobody(&capcat, "/proc/self/status");
    let text = stdout(&out);
    let capeff = text
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:\t"))
        .unwrap_or_else(|| panic!("{out:?}"));
    let capeff = u64::from_str_radix(capeff.trim(), 16).unwrap();
    assert_ne!(capeff & (1 << 13), 0, "cap_net_raw lost: {text}");
    let out = as_nobody(&suid, "-u");
    assert_eq!(stdout(&out).trim(), "0", "setuid lost: {out:?}");
}

#[test]
fn preload_install_and_remove_through_the_cli() {
    let _disk = shared();
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    std::fs::write(root.join("etc/ld.so.preload"), "/usr/lib/other.so\n").unwrap();
    let run = |what: &str| {
        let out = Command::new(COWKIT)
            .args(["nosync", "preload", what, "--root"])
            .arg(root)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        stdout(&out)
    };
    let first = run("--install");
    assert!(
        first.starts_with("wrote `/usr/lib/libcowkit-nosync-"),
        "{first}"
    );
    let second = run("--install");
    assert!(
        second.contains("already had") && second.contains("already lists it"),
        "{second}"
    );
    let text = std::fs::read_to_string(root.join("etc/ld.so.preload")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0], "/usr/lib/other.so");
    let so = root.join(lines[1].trim_start_matches('/'));
    assert!(so.exists());
    let removed = run("--remove");
    assert!(removed.starts_with("removed"), "{removed}");
    assert_eq!(
        std::fs::read_to_string(root.join("etc/ld.so.preload")).unwrap(),
        "/usr/lib/other.so\n"
    );
    assert!(!so.exists());
    assert!(run("--remove").starts_with("no "));
}

#[test]
fn kickstart_prints_pre_and_post() {
    let _disk = shared();
    let out = Command::new(COWKIT)
        .args(["nosync", "kickstart"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = stdout(&out);
    assert!(text.starts_with("%pre --interpreter=/bin/bash"), "{text}");
    assert!(text.contains("\n%post --nochroot"), "{text}");
}

#[test]
fn unprivileged_runs_set_no_new_privs_and_say_so() {
    let _disk = shared();
    if !need(is_root(), "root (to become nobody)") || !need(have("setpriv"), "setpriv") {
        return;
    }
    let d = scratch();
    let exe = d.path().join("cowkit");
    std::fs::copy(COWKIT, &exe).unwrap();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::os::unix::fs::chown(&tmp, Some(65534), Some(65534)).unwrap();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "env",
            "-u",
            "XDG_RUNTIME_DIR",
        ])
        .arg(format!("TMPDIR={}", tmp.display()))
        .arg(&exe)
        .args([
            "nosync",
            "--",
            "sh",
            "-c",
            "grep NoNewPrivs /proc/self/status; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert!(stdout(&out).contains("NoNewPrivs:\t1"), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no_new_privs is set"), "{err}");
}

#[test]
fn a_signal_sent_to_cowkit_reaches_the_command() {
    let _disk = shared();
    use std::io::BufRead;
    let mut child = Command::new(COWKIT)
        .args([
            "nosync",
            "--final-sync=none",
            "--",
            "sh",
            "-c",
            "echo ready; exec sleep 60",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n");
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = child.wait().unwrap();
    // sleep died of the forwarded SIGTERM, and cowkit ends the same way.
    assert_eq!(status.signal(), Some(15), "{status:?}");
}

/// The JSON summaries on stderr, in order (a nested run prints its own
/// first).
fn json_lines(o: &Output) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn alive(pid: i32) -> bool {
    // A zombie is not alive: it only waits for its parent to reap it.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'))
}

#[test]
fn sigterm_after_the_command_exited_reaches_the_daemon_it_left() {
    let _disk = shared();
    use std::io::BufRead;
    let d = scratch();
    let pidfile = d.path().join("daemon.pid");
    let script = format!(
        "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $! > {}; echo ready",
        pidfile.display()
    );
    let mut child = Command::new(COWKIT)
        .args(["-v", "nosync", "--json", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n");
    let daemon: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Wait until the command has exited and the daemon was adopted.
    let me = child.id() as i32;
    let start = std::time::Instant::now();
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{daemon}/stat")).unwrap();
        let ppid: i32 = stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        if ppid == me {
            break;
        }
        assert!(start.elapsed().as_secs() < 10, "the command did not exit");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pid = rustix::process::Pid::from_raw(me).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed().as_secs() > 20 {
            let _ = child.kill();
            let _ = rustix::process::kill_process(
                rustix::process::Pid::from_raw(daemon).unwrap(),
                rustix::process::Signal::KILL,
            );
            panic!("cowkit nosync ignored SIGTERM while a daemon was left");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(!alive(daemon), "the daemon was not signalled");
    let out = child.wait_with_output().unwrap();
    let v = json_lines(&out).pop().expect("a JSON summary");
    assert_eq!(status.code(), Some(0), "the command's own status: {v}");
    assert_eq!(v["descendants_signalled"], 1, "{v}");
    assert_eq!(v["orphans_reaped"], 1, "{v}");
    assert_eq!(v["final_sync_ran"], true, "{v}");
    assert!(!v["final_sync"].as_array().unwrap().is_empty(), "{v}");
}

#[test]
fn a_nested_nosync_does_not_claim_syncs_that_never_ran() {
    let _disk = shared();
    let out = nosync(&[
        "--json".as_ref(),
        "--".as_ref(),
        COWKIT.as_ref(),
        "nosync".as_ref(),
        "--json".as_ref(),
        "--".as_ref(),
        "true".as_ref(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let v = json_lines(&out);
    assert_eq!(v.len(), 2, "{out:?}");
    let (inner, outer) = (&v[0], &v[1]);
    assert_eq!(inner["final_sync_suppressed"], true, "{inner}");
    assert_eq!(inner["final_sync_ran"], false, "{inner}");
    assert_eq!(inner["final_sync"].as_array().unwrap().len(), 0, "{inner}");
    assert_eq!(outer["final_sync_suppressed"], false, "{outer}");
    assert_eq!(outer["final_sync_ran"], true, "{outer}");
    assert!(
        !outer["final_sync"].as_array().unwrap().is_empty(),
        "{outer}"
    );
}

#[test]
fn a_huge_stats_file_is_read_only_up_to_its_bound() {
    let _disk = shared();
    // The command can write to the counters file (every process may):
    // 24 MiB of junk lines, more than the bound.
    let out = nosync(&[
        "--json".as_ref(),
        "--final-sync=none".as_ref(),
        "--".as_ref(),
        "sh".as_ref(),
        "-c".as_ref(),
        "yes 'cowkit-nosync-stats junk' | head -c 25165824 >> \"$COWKIT_NOSYNC_STATS\"".as_ref(),
    ]);
    assert!(out.status.success(), "{out:?}");
    let v = json_lines(&out).pop().unwrap();
    assert_eq!(v["stats_truncated"], true, "{v}");
}

#[test]
fn another_users_tmp_directory_does_not_stop_nosync() {
    let _disk = shared();
    if !need(is_root(), "root (to become nobody)") || !need(have("setpriv"), "setpriv") {
        return;
    }
    let d = scratch();
    let exe = d.path().join("cowkit");
    std::fs::copy(COWKIT, &exe).unwrap();
    let tmp = d.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    // Squatted by "another user" (root here) before nobody's first run.
    std::fs::create_dir(tmp.join("cowkit-65534")).unwrap();
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "env",
            "-u",
            "XDG_RUNTIME_DIR",
        ])
        .arg(format!("TMPDIR={}", tmp.display()))
        .arg(&exe)
        .args(["nosync", "--", "sh", "-c", "echo \"$LD_PRELOAD\""])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let preload = stdout(&out);
    assert!(
        preload.starts_with(&format!("{}/cowkit-nosync.", tmp.display())),
        "{preload}"
    );
    // The private directory goes away with the run; the squatted one is
    // untouched.
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, ["cowkit-65534"], "{left:?}");
}
