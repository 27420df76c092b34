//! `cowkit dnf`'s cache against another user, and what an interrupted run
//! leaves (issue 25): a cache others can change is refused before
//! anything is downloaded (an attacker racing a symlink into an entry's
//! name changes nothing); SIGINT cleans up at once, SIGKILL (and a
//! `%post` that kills cowkit) leaves what the next run removes.
//!
//! The interruption tests put a script in place of dnf (`COWKIT_DNF`) that
//! "downloads" and then sleeps, so that cowkit is stopped at a known
//! point. Needs root (ownership, `setpriv`, chrooted scriptlets).

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{as_root, cowkit, run, tmp, Run};
use cowkit_testutil::repo::build_repo;
use cowkit_testutil::rpm::rpmbuild;
use cowkit_testutil::tree::mkdir;
use cowkit_testutil::{run_ok, scratch, Fs};

/// The uid and gid of `nobody`.
const NOBODY: u32 = 65534;

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `cowkit dnf --root ROOT --cache CACHE -- ARGS` with the real dnf on
/// the test repository (`repo`), dnf's own cache in `dnf_cache`.
fn cowkit_dnf(repo: &Path, root: &Path, dnf_cache: &Path, cache: &Path, cmd: &[&str]) -> Run {
    let dnf_args = common::dnf_args(repo, root, dnf_cache);
    run(cowkit()
        .args(["dnf", "--root"])
        .arg(root)
        .arg("--cache")
        .arg(cache)
        .arg("--")
        .args(dnf_args)
        .args(cmd))
}

/// A script to stand in for dnf: on a download run (`--downloaddir=D`)
/// it copies `pkgs` into D, writes its pid to `state/dnf.pid`, and
/// either sleeps (`sleep`) or exits 0; any other run exits 0. It records
/// every call in `state/calls`.
fn fake_dnf(state: &Path, pkgs: &[PathBuf], sleep: bool) -> PathBuf {
    mkdir(state);
    let copies: String = pkgs
        .iter()
        .map(|p| format!("cp '{}' \"$dd\"/\n", p.display()))
        .collect();
    let s = state.display();
    let script = format!(
        "#!/bin/sh\necho \"$@\" >> '{s}/calls'\ndd=\n\
         for a in \"$@\"; do case \"$a\" in --downloaddir=*) dd=\"${{a#--downloaddir=}}\";; esac; done\n\
         [ -n \"$dd\" ] || exit 0\n{copies}echo $$ > '{s}/dnf.pid.tmp'\nmv '{s}/dnf.pid.tmp' '{s}/dnf.pid'\n{}",
        if sleep { "exec sleep 600\n" } else { "exit 0\n" }
    );
    let path = state.join(if sleep { "dnf-sleeps" } else { "dnf-empty" });
    std::fs::write(&path, script).unwrap();
    chmod(&path, 0o755);
    path
}

/// `cowkit dnf` on `root` and `cache` with `dnf` in place of dnf, started
/// (not waited for).
fn start_cowkit_dnf(dnf: &Path, root: &Path, cache: &Path) -> Child {
    // As from a terminal: SIGINT not ignored. The rig runs the tests as a
    // background job, which ignores SIGINT, and cowkit keeps a signal that
    // was ignored when it started ignored (as rpm does, and as `nohup`
    // needs).
    start_cowkit_dnf_with("--default-signal=INT,QUIT", dnf, root, cache)
}

/// [`start_cowkit_dnf`] with the signal dispositions `env`'s `signals`
/// option sets (`env` execs cowkit: the child's pid is cowkit's).
fn start_cowkit_dnf_with(signals: &str, dnf: &Path, root: &Path, cache: &Path) -> Child {
    Command::new("env")
        .arg(signals)
        .arg(env!("CARGO_BIN_EXE_cowkit"))
        .args(["dnf", "--root"])
        .arg(root)
        .arg("--cache")
        .arg(cache)
        .args(["--", "install", "anything"])
        .env("COWKIT_DNF", dnf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Wait (60 s at most) for `path` to exist.
fn wait_for(path: &Path) {
    let t = Instant::now();
    while !path.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "{} never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Names in `dir` (none when it does not exist), sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Kill the process whose pid `file` holds (the fake dnf cowkit started).
fn kill_pid_in(file: &Path) {
    let pid: i32 = std::fs::read_to_string(file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let pid = rustix::process::Pid::from_raw(pid).unwrap();
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
}

/// The signal that ended `child`, and its stderr; the process whose pid
/// `dnf_pid` holds is killed once `child` is gone.
fn signal_of(mut child: Child, dnf_pid: &Path) -> (Option<i32>, String) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    let status = child.wait().unwrap();
    kill_pid_in(dnf_pid);
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    (status.signal(), stderr)
}

/// Interrupt a `cowkit dnf` (a fresh root: it makes a scratch database
/// for dnf) once its dnf "downloaded", with `sig`; returns the cache, the
/// root, and the directory of the fake dnf's state.
fn interrupted(name: &str, sig: rustix::process::Signal) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir_in(tmp()).unwrap();
    let (root, cache, state) = (
        d.path().join("root"),
        d.path().join("cache"),
        d.path().join("state"),
    );
    // What is downloaded does not matter: cowkit is stopped before it
    // reads it.
    let pkg = d.path().join("a-1-1.noarch.rpm");
    std::fs::write(&pkg, vec![7u8; 1 << 20]).unwrap();
    let dnf = fake_dnf(&state, &[pkg], true);
    let child = start_cowkit_dnf(&dnf, &root, &cache);
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    wait_for(&state.join("dnf.pid"));
    // The download and the scratch database exist while it runs.
    assert!(
        names(&cache).iter().any(|n| n.starts_with("download.")),
        "{name}: {:?}",
        names(&cache)
    );
    assert_eq!(names(&root.join("var/tmp")).len(), 1, "{name}");
    rustix::process::kill_process(pid, sig).unwrap();
    // The fake dnf holds cowkit's stderr: ended once cowkit is.
    let (got, stderr) = signal_of(child, &state.join("dnf.pid"));
    assert_eq!(got, Some(sig.as_raw()), "{name}: {stderr}");
    (d, root, cache)
}

/// Run `cowkit dnf` once more on `root` and `cache`, with a dnf that
/// downloads nothing: it succeeds and leaves the cache with its entries
/// only, the root's `/var/tmp` empty.
fn next_run_leaves_nothing(d: &Path, root: &Path, cache: &Path) {
    let dnf = fake_dnf(&d.join("state-next"), &[], false);
    let r = run(cowkit()
        .args(["dnf", "--root"])
        .arg(root)
        .arg("--cache")
        .arg(cache)
        .args(["--", "install", "anything"])
        .env("COWKIT_DNF", &dnf));
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(names(cache), ["rpme"], "left in the cache");
    assert_eq!(
        names(&root.join("var/tmp")),
        Vec::<String>::new(),
        "left in the root"
    );
}

/// A signal ignored when cowkit starts stays ignored, as `nohup` needs
/// and as rpm leaves it: a SIGHUP to a cowkit started with SIGHUP ignored
/// changes nothing; SIGTERM then ends it as before.
#[test]
fn a_signal_ignored_on_entry_stays_ignored() {
    if !as_root("a_signal_ignored_on_entry_stays_ignored", "root") {
        return;
    }
    let d = tempfile::tempdir_in(tmp()).unwrap();
    let (root, cache, state) = (
        d.path().join("root"),
        d.path().join("cache"),
        d.path().join("state"),
    );
    let pkg = d.path().join("a-1-1.noarch.rpm");
    std::fs::write(&pkg, vec![7u8; 1 << 10]).unwrap();
    let dnf = fake_dnf(&state, &[pkg], true);
    let mut child = start_cowkit_dnf_with("--ignore-signal=HUP", &dnf, &root, &cache);
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    wait_for(&state.join("dnf.pid"));
    rustix::process::kill_process(pid, rustix::process::Signal::HUP).unwrap();
    // Time for a cowkit that caught it to die of it.
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        child.try_wait().unwrap().is_none(),
        "SIGHUP ended a cowkit started with SIGHUP ignored"
    );
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let (got, stderr) = signal_of(child, &state.join("dnf.pid"));
    assert_eq!(got, Some(libc::SIGTERM), "{stderr}");
}

/// Ctrl-C (SIGINT) and SIGTERM: the download directory and the scratch
/// database go at once, and cowkit dies of the signal.
#[test]
fn sigint_and_sigterm_remove_the_download_and_the_scratch_database() {
    if !as_root(
        "sigint_and_sigterm_remove_the_download_and_the_scratch_database",
        "root",
    ) {
        return;
    }
    for (name, sig) in [
        ("SIGINT", rustix::process::Signal::INT),
        ("SIGTERM", rustix::process::Signal::TERM),
    ] {
        let (d, root, cache) = interrupted(name, sig);
        assert_eq!(names(&cache), ["rpme"], "{name}: left in the cache");
        assert_eq!(
            names(&root.join("var/tmp")),
            Vec::<String>::new(),
            "{name}: left in the root"
        );
        next_run_leaves_nothing(d.path(), &root, &cache);
    }
}

/// SIGKILL leaves the download (a full copy of the packages) and the
/// scratch database: the next run on that cache and root removes them.
#[test]
fn what_a_killed_cowkit_dnf_leaves_goes_with_the_next_run() {
    if !as_root(
        "what_a_killed_cowkit_dnf_leaves_goes_with_the_next_run",
        "root",
    ) {
        return;
    }
    let (d, root, cache) = interrupted("SIGKILL", rustix::process::Signal::KILL);
    assert!(
        names(&cache).iter().any(|n| n.starts_with("download.")),
        "{:?}",
        names(&cache)
    );
    assert_eq!(names(&root.join("var/tmp")).len(), 1);
    next_run_leaves_nothing(d.path(), &root, &cache);
}

/// A `%post` that kills the cowkit installing it (`kill -9 $PPID`: the
/// scriptlet's interpreter is cowkit's child) leaves the new root's
/// scratch database (and the scriptlet's own file) behind; the next
/// install into that root removes them.
#[test]
fn a_post_that_kills_cowkit_leaves_no_scratch_database_after_the_next_run() {
    if !as_root(
        "a_post_that_kills_cowkit_leaves_no_scratch_database_after_the_next_run",
        "root",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let killer = dir.path().join("ck-killer-1-1.noarch.rpm");
    rpmbuild(
        "Name: ck-killer\nVersion: 1\nRelease: 1\nSummary: x\nLicense: MIT\nBuildArch: noarch\n\
         Requires: ck-busybox\n\
         %description\nx\n%install\nmkdir -p %{buildroot}/usr/share/ck-killer\n\
         echo data > %{buildroot}/usr/share/ck-killer/file\n\
         %post\nkill -9 $PPID\nsleep 5\n\
         %files\n/usr/share/ck-killer\n",
        "w9.gzdio",
        &killer,
    );
    let root = mkdir(&dir.path().join("root"));
    let scratch_dirs = |root: &Path| -> Vec<String> {
        names(&root.join("var/tmp"))
            .into_iter()
            .filter(|n| root.join("var/tmp").join(n).is_dir())
            .collect()
    };
    let r = run(cowkit()
        .args(["install", "--root"])
        .arg(&root)
        .arg(repo.rpm("ck-filesystem"))
        .arg(repo.rpm("ck-busybox"))
        .arg(&killer));
    assert!(!r.ok, "the %post did not kill cowkit: {}", r.stderr);
    assert!(
        scratch_dirs(&root).iter().any(|n| !n.contains("script")),
        "no scratch database left by the kill: {:?}",
        names(&root.join("var/tmp"))
    );
    // The next install into the root (it still has no database).
    let r = run(cowkit()
        .args(["install", "--nodeps", "--noscripts", "--root"])
        .arg(&root)
        .arg(repo.rpm("ck-vi")));
    assert!(r.ok, "{}", r.stderr);
    // Neither the scratch database nor the killer's scriptlet file.
    assert_eq!(
        names(&root.join("var/tmp")),
        Vec::<String>::new(),
        "left in the root"
    );
}

/// The header digest of a package (what its cache entry is named after).
fn header_digest(rpm: &Path) -> String {
    let out = run_ok(
        Command::new("rpm")
            .args(["-qp", "--qf", "%{SHA256HEADER}"])
            .arg(rpm),
        "rpm -qp",
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Another user who can write a fan-out directory of the cache swaps a
/// symlink to a root-owned 0600 file into an entry's name, again and
/// again, while root builds: the run is refused before anything is
/// downloaded, and the file keeps its mode.
#[test]
fn a_fan_out_directory_of_another_user_is_refused_and_no_mode_changes() {
    if !as_root(
        "a_fan_out_directory_of_another_user_is_refused_and_no_mode_changes",
        "root",
    ) {
        return;
    }
    let repo = build_repo(tmp());
    // Not on the rig's mounts nor under the checkout: the attacker must
    // reach the fan-out directory, and the rig's directory (or a checkout
    // in a 0700 temporary directory) is root's alone. The system's
    // temporary directory is reachable by everyone.
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    chmod(d, 0o755);
    let secret = d.join("secret");
    std::fs::write(&secret, "root only\n").unwrap();
    chmod(&secret, 0o600);
    let cache = d.join("cache");
    let digest = header_digest(repo.rpm("ck-vi"));
    let fan = mkdir(&cache.join("rpme").join(&digest[..2]));
    std::os::unix::fs::chown(&fan, Some(NOBODY), Some(NOBODY)).unwrap();
    let entry = fan.join(format!("{digest}.rpme"));
    let mut racer = Command::new("setpriv")
        .args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "--",
        ])
        .args([
            "sh",
            "-c",
            "while :; do ln -sfn \"$1\" \"$2\"; done",
            "racer",
        ])
        .arg(&secret)
        .arg(&entry)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for(&entry);
    let root = mkdir(&d.join("root"));
    let dnf_cache = d.join("dnf-cache");
    let r = cowkit_dnf(&repo.dir, &root, &dnf_cache, &cache, &["install", "ck-vi"]);
    racer.kill().unwrap();
    racer.wait().unwrap();
    let m = std::fs::metadata(&secret).unwrap();
    assert_eq!(
        (m.uid(), m.mode() & 0o7777),
        (0, 0o600),
        "the file was changed"
    );
    assert!(
        !r.ok,
        "a cache another user can change was used:\n{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "the cache directory `{}` belongs to uid 65534",
            fan.display()
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("hint:") && r.stderr.contains("chown"),
        "{}",
        r.stderr
    );
    assert!(!root.join("usr/share/ck-vi").exists(), "installed anyway");
    assert_eq!(names(&cache), ["rpme"], "downloaded anyway");
}

/// A cache directory writable by its group or others, one under a
/// directory others may write (not sticky), and a symlink for a fan-out
/// directory are refused up front with a hint; dnf is not run. A cache
/// under a sticky world-writable directory (`/tmp`) is fine.
#[test]
fn a_cache_others_can_write_is_refused_up_front() {
    if !as_root("a_cache_others_can_write_is_refused_up_front", "root") {
        return;
    }
    let d = tempfile::tempdir_in(tmp()).unwrap();
    let state = d.path().join("state");
    let dnf = fake_dnf(&state, &[], false);
    let go = |cache: &Path| -> Run {
        let root = d.path().join("root");
        run(cowkit()
            .args(["dnf", "--root"])
            .arg(&root)
            .arg("--cache")
            .arg(cache)
            .args(["--", "install", "anything"])
            .env("COWKIT_DNF", &dnf))
    };
    let refused = |cache: &Path, what: &Path, says: &str, hint: &str| {
        let r = go(cache);
        assert!(!r.ok, "{} was used", cache.display());
        let line = format!("the cache directory `{}` {says}", what.display());
        assert!(r.stderr.contains(&line), "{line}:\n{}", r.stderr);
        assert!(r.stderr.contains(hint), "{hint}:\n{}", r.stderr);
        assert!(!state.join("calls").exists(), "dnf ran");
    };

    let group = mkdir(&d.path().join("group"));
    chmod(&group, 0o775);
    refused(
        &group,
        &group,
        "is writable by its group (mode 0775)",
        "chmod go-w",
    );
    let all = mkdir(&d.path().join("all"));
    chmod(&all, 0o777);
    refused(
        &all,
        &all,
        "is writable by others (mode 0777)",
        "chmod go-w",
    );
    let rpme = mkdir(&d.path().join("rpme-other").join("rpme"));
    chmod(&rpme, 0o757);
    refused(
        rpme.parent().unwrap(),
        &rpme,
        "is writable by others",
        "chmod go-w",
    );

    let open = mkdir(&d.path().join("open"));
    chmod(&open, 0o777);
    let below = mkdir(&open.join("cache"));
    refused(
        &below,
        &open,
        "is writable by its group or others and not sticky",
        "chmod go-w",
    );

    let linked = mkdir(&d.path().join("linked/rpme"));
    std::os::unix::fs::symlink(d.path(), linked.join("ab")).unwrap();
    refused(
        linked.parent().unwrap(),
        &linked.join("ab"),
        "is a symlink, not a directory",
        "remove",
    );

    // Sticky and world-writable, like /tmp: fine.
    let sticky = mkdir(&d.path().join("sticky"));
    chmod(&sticky, 0o1777);
    let r = go(&sticky.join("cache"));
    assert!(r.ok, "{}", r.stderr);
    let m = std::fs::metadata(sticky.join("cache")).unwrap();
    assert_eq!(m.mode() & 0o022, 0, "a new cache others can write");
    assert!(state.join("calls").exists(), "dnf did not run");
}
