//! Issue 14 ("Hostile inputs and faults"): fifos where files are expected,
//! runs interrupted by signals, and installs and copies by a user who is
//! not root.
//!
//! Needs root (to become `nobody`, `mkfifo` in a scratch root) and the
//! rig's filesystems; without them the tests say SKIPPED (under CI, fail).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cowkit_testutil::rpm::{fixture_in, FIXTURE};
use cowkit_testutil::{scratch, Fs};

const COWKIT: &str = env!("CARGO_BIN_EXE_cowkit");

fn tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Skip (or, under CI/the rig, fail) when `what` is missing.
fn need(ok: bool, what: &str) -> bool {
    if !ok {
        if cowkit_testutil::required() {
            panic!("{what} is missing; the tests run as root");
        }
        eprintln!("SKIPPED: {what} is missing");
    }
    ok
}

fn sh(script: &str, dir: &Path) {
    let st = Command::new("bash")
        .arg("-ec")
        .arg(script)
        .current_dir(dir)
        .status()
        .unwrap();
    assert!(st.success(), "{script}");
}

/// Run `cmd`, killed after `secs`: a hang is a failure, not a stuck test.
fn within(secs: u64, cmd: &mut Command) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-s", "KILL", &secs.to_string()])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(d) = cmd.get_current_dir() {
        c.current_dir(d);
    }
    let out = c.output().unwrap();
    assert_ne!(
        out.status.code(),
        Some(137),
        "{:?} hung and was killed after {secs} s",
        cmd
    );
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo").arg(p).status().unwrap();
    assert!(st.success());
}

/// Names starting with `.ck` or ending in `.tmp` under `dir`.
fn temporaries(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(".ck") || name.ends_with(".tmp") {
                out.push(e.path());
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                todo.push(e.path());
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Item 5: fifos where regular files are expected.

#[test]
fn fifo_as_passwd_and_group_does_not_hang_install() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let rpm = fixture_in(tmp(), "w19.zstdio");
    let root = t.path().join("root");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    mkfifo(&root.join("etc/passwd"));
    mkfifo(&root.join("etc/group"));
    let out = within(
        120,
        Command::new(COWKIT)
            .args(["install", "--no-db", "--noscripts", "--root"])
            .arg(&root)
            .arg(&rpm),
    );
    // Names that cannot be looked up fall back as documented.
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(root.join(FIXTURE).join("suid-cap").exists());
}

#[test]
fn fifo_as_ld_so_preload_is_refused_not_waited_on() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let root = t.path().join("root");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    mkfifo(&root.join("etc/ld.so.preload"));
    let out = within(
        60,
        Command::new(COWKIT)
            .args(["nosync", "preload", "--install", "--root"])
            .arg(&root),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("not a regular file (it is a fifo)"), "{err}");
    // --remove reads it as well.
    let out = within(
        60,
        Command::new(COWKIT)
            .args(["nosync", "preload", "--remove", "--root"])
            .arg(&root),
    );
    assert!(!out.status.success(), "{}", stderr(&out));
}

// `cowkit cp` racing a file <-> fifo swap: crates/cowkit-tree/tests/fifo_swap.rs
// (in-process, so that enough copies run to catch the old hang).

// ---------------------------------------------------------------------------
// Item 6: interrupted transcodes and installs.

/// The children of `parent` whose command line holds `needle`.
fn children_with(parent: u32, needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let (Ok(cmd), Ok(stat)) = (
            std::fs::read(format!("/proc/{pid}/cmdline")),
            std::fs::read_to_string(format!("/proc/{pid}/stat")),
        ) else {
            continue;
        };
        let ppid = stat[stat.rfind(')').unwrap() + 1..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(parent) && String::from_utf8_lossy(&cmd).contains(needle) {
            out.push(pid);
        }
    }
    out
}

/// Whether `pid` runs (a zombie does not).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !s[s.rfind(')').unwrap() + 1..].trim_start().starts_with('Z'))
}

fn kill(pid: u32, sig: rustix::process::Signal) {
    let _ = rustix::process::kill_process(rustix::process::Pid::from_raw(pid as i32).unwrap(), sig);
}

/// Wait up to 5 s for `pid` to end: a worker killed with its parent goes
/// at once; one that waits for more input never does.
fn ends(pid: i32) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn killed_transcode_leaves_no_file_and_no_worker() {
    use std::io::Write;
    let Some(t) = scratch(Fs::Xfs) else { return };
    let rpm = std::fs::read(fixture_in(tmp(), "w19.zstdio")).unwrap();
    let out_dir = t.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("pkg.rpme");
    let signals = [rustix::process::Signal::TERM, rustix::process::Signal::KILL];
    for round in 0..8usize {
        let sig = signals[round % 2];
        // The package comes through a pipe that stays open: the worker is
        // in the middle of it (at a different point each round) when its
        // parent is killed.
        let mut child = Command::new(COWKIT)
            .arg("transcode")
            .arg("-")
            .arg("-o")
            .arg(&out)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let part = rpm.len() * (round + 1) / 10;
        stdin.write_all(&rpm[..part]).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        let workers = children_with(child.id(), "__transcode-worker");
        assert_eq!(workers.len(), 1, "round {round}");
        kill(child.id(), sig);
        let st = child.wait().unwrap();
        assert!(!st.success(), "round {round}: {st:?}");
        assert!(
            ends(workers[0]),
            "the worker outlived its parent (round {round}, {sig:?})"
        );
        drop(stdin);
        let left = std::fs::read_dir(&out_dir).unwrap().count();
        assert_eq!(left, 0, "round {round} ({sig:?}) left files");
    }
}

#[test]
fn temporaries_left_by_killed_installs_are_swept() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let rpm = fixture_in(tmp(), "w19.zstdio");
    let root = t.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let install = || {
        Command::new(COWKIT)
            .args(["install", "--no-db", "--noscripts", "--root"])
            .arg(&root)
            .arg(&rpm)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    assert!(install().wait().unwrap().success());
    // Re-installs (every file replaces one, links are made under temporary
    // names) killed at many points.
    let mut leftovers = 0;
    for round in 0..40u64 {
        let sig = if round % 2 == 0 {
            rustix::process::Signal::KILL
        } else {
            rustix::process::Signal::TERM
        };
        let mut child = install();
        std::thread::sleep(Duration::from_micros(500 + round * 397));
        kill(child.id(), sig);
        child.wait().unwrap();
        leftovers += temporaries(&root).len();
    }
    eprintln!("{leftovers} temporary names seen after the kills");
    // What a kill between `symlinkat(.ck…)` and the rename leaves, for
    // certain: a temporary name of a process that is gone.
    let mut gone = Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let planted = root.join(FIXTURE).join(format!(".ck{dead:x}.0"));
    std::os::unix::fs::symlink("target", &planted).unwrap();
    // The next install clears what SIGKILL left.
    assert!(install().wait().unwrap().success());
    assert_eq!(temporaries(&root), Vec::<PathBuf>::new());
}

// ---------------------------------------------------------------------------
// Item 8: a user who is not root.

fn as_nobody(dir: &Path, prog: &str, args: &[&str]) -> Output {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", prog]);
    c.args(args).current_dir(dir);
    c.output().unwrap()
}

#[test]
fn install_as_a_user_keeps_the_users_ownership() {
    if !need(is_root(), "root (to become nobody)") {
        return;
    }
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    let rpm = fixture_in(tmp(), "w19.zstdio");
    std::fs::copy(&rpm, d.join("pkg.rpm")).unwrap();
    std::fs::copy(COWKIT, d.join("cowkit")).unwrap();
    sh(
        "mkdir root theirs && chown nobody: root theirs && chmod 755 .",
        d,
    );
    let out = as_nobody(
        d,
        "./cowkit",
        &[
            "install",
            "--no-db",
            "--noscripts",
            "--root",
            "root",
            "pkg.rpm",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert_eq!(err.matches("not running as root").count(), 1, "{err}");
    // As rpm2cpio | cpio -idm run by the same user, but without the
    // setuid bit on a file that should have been root's.
    let cpio = as_nobody(
        d,
        "sh",
        &["-c", "rpm2cpio pkg.rpm | cpio -idm --quiet -D theirs"],
    );
    assert!(cpio.status.success(), "{}", stderr(&cpio));
    let f = |p: &str| std::fs::symlink_metadata(d.join(p)).unwrap();
    let suid = format!("{FIXTURE}/suid-cap");
    let ours = f(&format!("root/{suid}"));
    let theirs = f(&format!("theirs/{suid}"));
    assert_eq!((ours.uid(), ours.gid()), (theirs.uid(), theirs.gid()));
    assert_eq!(ours.uid(), 65534);
    assert_eq!(theirs.mode() & 0o7777, 0o4755, "cpio keeps it");
    assert_eq!(ours.mode() & 0o7777, 0o0755, "setuid must not stay");
    assert_eq!(
        std::fs::read(d.join(format!("root/{suid}"))).unwrap(),
        std::fs::read(d.join(format!("theirs/{suid}"))).unwrap()
    );
}

#[test]
fn cp_a_as_a_user_clears_setuid_it_cannot_keep() {
    if !need(is_root(), "root (to become nobody)") {
        return;
    }
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    std::fs::copy(COWKIT, d.join("cowkit")).unwrap();
    sh(
        "mkdir src out && echo x > src/rootsuid && chmod 4755 src/rootsuid \
         && echo y > src/rootsgid && chmod 2755 src/rootsgid \
         && echo z > src/mine && chown nobody:nogroup src/mine && chmod 4755 src/mine \
         && chown nobody: out && chmod 755 .",
        d,
    );
    let ours = as_nobody(d, "./cowkit", &["cp", "-a", "src", "out/ours"]);
    assert!(ours.status.success(), "{}", stderr(&ours));
    let theirs = as_nobody(d, "cp", &["-a", "src", "out/theirs"]);
    assert!(theirs.status.success(), "{}", stderr(&theirs));
    let mode = |p: &str| std::fs::symlink_metadata(d.join(p)).unwrap().mode() & 0o7777;
    for name in ["rootsuid", "rootsgid", "mine"] {
        assert_eq!(
            mode(&format!("out/ours/{name}")),
            mode(&format!("out/theirs/{name}")),
            "{name}"
        );
    }
    assert_eq!(mode("out/ours/rootsuid"), 0o755);
    assert_eq!(mode("out/ours/rootsgid"), 0o755);
    // Its owner was kept: so is its setuid bit.
    assert_eq!(mode("out/ours/mine"), 0o4755);
}

// ---------------------------------------------------------------------------
// Issue 15: a new root's directories are built under a temporary name and
// renamed into place whole.

/// Every regular file and symlink under `dir` (relative paths), with its
/// content or target; names starting with `.ck` are not entered.
fn visible_tree(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with(".ck") {
                continue;
            }
            let ft = e.file_type().unwrap();
            let rel = e.path().strip_prefix(dir).unwrap().to_path_buf();
            if ft.is_dir() {
                todo.push(e.path());
            } else if ft.is_symlink() {
                let t = std::fs::read_link(e.path()).unwrap();
                out.insert(rel, t.into_os_string().into_encoded_bytes());
            } else if ft.is_file() {
                out.insert(rel, std::fs::read(e.path()).unwrap());
            }
        }
    }
    out
}

#[test]
fn a_new_root_gets_its_tree_whole_or_not_at_all_when_killed() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    // 1,500 files in 30 new directories: long enough to be killed while
    // placing.
    let rpm = cowkit_testutil::rpm::build_rpm_cached(
        tmp(),
        "cowkit-killed-new-root",
        "r=%{buildroot}/opt/killed\n\
         for d in $(seq 1 30); do mkdir -p $r/d$d/sub\n\
           for i in $(seq 1 50); do printf 'file %s %s\\n' $d $i > $r/d$d/sub/f$i; done\n\
           ln -s sub/f1 $r/d$d/link\n\
         done",
        "/opt/killed",
        "w19.zstdio",
    );
    let rpme = t.path().join("killed.rpme");
    let st = Command::new(COWKIT)
        .arg("transcode")
        .arg(&rpm)
        .arg("-o")
        .arg(&rpme)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(st.success());
    let install = |root: &Path| {
        Command::new(COWKIT)
            .args(["install", "--no-db", "--noscripts", "--root"])
            .arg(root)
            .arg(&rpme)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let whole = t.path().join("whole");
    std::fs::create_dir(&whole).unwrap();
    let t0 = Instant::now();
    assert!(install(&whole).wait().unwrap().success());
    let took = t0.elapsed();
    let expected = visible_tree(&whole);
    assert_eq!(expected.len(), 30 * 51);
    // Kills spread over the length of a whole install.
    let (mut none, mut staged, mut complete) = (0, 0, 0);
    let mut left_over = None;
    for round in 0..40u32 {
        let root = t.path().join(format!("root{round}"));
        std::fs::create_dir(&root).unwrap();
        let mut child = install(&root);
        std::thread::sleep(took * round / 32);
        kill(child.id(), rustix::process::Signal::KILL);
        child.wait().unwrap();
        let seen = visible_tree(&root);
        if seen.is_empty() {
            none += 1;
        } else {
            assert_eq!(seen, expected, "round {round}: a partial tree is visible");
            complete += 1;
        }
        if !temporaries(&root).is_empty() {
            staged += 1;
            assert!(seen.is_empty(), "round {round}: published and staged");
            left_over = Some(root);
        }
    }
    eprintln!(
        "kills: {none} with nothing visible ({staged} of them mid-build), {complete} complete"
    );
    // Some kills landed while the tree was being built: the test saw the
    // case it is about.
    let left_over = left_over.expect("no kill landed while the new tree was built");
    // The next install into that root sweeps the dead one's tree.
    assert!(install(&left_over).wait().unwrap().success());
    assert_eq!(temporaries(&left_over), Vec::<PathBuf>::new());
    assert_eq!(visible_tree(&left_over), expected);
}
