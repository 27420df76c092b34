//! A multi-package upgrade (the test repository's version 2: scriptlets in
//! every phase, config files, files the upgrade drops, a new dependency)
//! killed with SIGKILL at chosen points, then the same command run again:
//! the root must end as an upgrade that was never killed leaves it, with
//! `rpm -qa` exact, `rpm -Va` clean, no file owned by nothing and no
//! temporaries. The points: cowkit's own kill points
//! (`COWKIT_TXN_CRASH_AT`), rpm's registration killed at an exact system
//! call together with cowkit's whole process group, and kills of cowkit
//! alone and of its group after fixed delays.
//!
//! `kill_bench` (ignored; `bench/txn-kill.sh` runs it) does the same for
//! `TXN_KILL_RUNS` runs at random delays, for cowkit and for `rpm -U`
//! itself, and writes the counts as JSON to `TXN_KILL_OUT`.
//!
//! Needs root (scriptlets run chrooted), `strace`, and the rig's XFS.

mod common;

use std::collections::BTreeSet;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{as_root, cowkit, tmp};
use cowkit_testutil::repo::{build_repo, dbpath, rpm_in, verify, MAIN};
use cowkit_testutil::tree::{mkdir, snapshot, temporary_names};
use cowkit_testutil::{run_ok, scratch, Fs};

/// How a root looks after a run: what the checks compare.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    /// `rpm -qa`, sorted.
    qa: Vec<String>,
    /// `rpm -Va` lines (clean: those of an upgrade never killed, the two
    /// config files `ck-users`' `%pre` edits).
    verify: Vec<String>,
    /// Paths in the tree that `rpm -qal` does not list (the database
    /// directory aside).
    unowned: BTreeSet<String>,
    /// cowkit's temporary names and scratch directories left.
    temporaries: Vec<String>,
    /// The journal is there.
    journal: bool,
}

fn outcome(root: &Path) -> Outcome {
    let out = run_ok(rpm_in(root).args(["-qa"]), "rpm -qa");
    let mut qa: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    qa.sort();
    let out = run_ok(rpm_in(root).args(["-qal"]), "rpm -qal");
    let owned: BTreeSet<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim_start_matches('/').to_string())
        .collect();
    let db = dbpath().trim_start_matches('/').to_string();
    let tree = snapshot(root);
    let unowned = tree
        .keys()
        .filter(|p| !owned.contains(*p))
        .filter(|p| {
            **p != db && !p.starts_with(&format!("{db}/")) && !db.starts_with(&format!("{p}/"))
        })
        .cloned()
        .collect();
    let mut temporaries = temporary_names(root);
    temporaries.extend(
        tree.keys()
            .filter(|p| {
                let name = p.rsplit('/').next().unwrap();
                name.starts_with("cowkit-") && !name.starts_with("cowkit-journal")
                    || name.starts_with("rpm-tmp.")
            })
            .cloned(),
    );
    Outcome {
        qa,
        verify: verify(root),
        unowned,
        temporaries,
        journal: root.join(&db).join("cowkit-journal").exists(),
    }
}

/// The upgrade's command line on `root`.
fn upgrade(root: &Path, pkgs: &[PathBuf]) -> Command {
    let mut c = cowkit();
    c.arg("install")
        .arg("--root")
        .arg(root)
        .arg("--dbpath")
        .arg(dbpath())
        .args(pkgs)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .env_remove("COWKIT_TXN_CRASH_AT")
        .env_remove("COWKIT_RPM");
    c
}

/// `rpm -U` of `pkgs` on `root`, as a user would run it.
fn rpm_upgrade(root: &Path, pkgs: &[PathBuf]) -> Command {
    let mut c = rpm_in(root);
    c.arg("-U")
        .args(pkgs)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

/// The shared set-up: the repository, version 1 installed in `base`, the
/// version-2 packages, and what an upgrade that is not killed leaves.
struct Setup {
    base: PathBuf,
    v2: Vec<PathBuf>,
    want: Outcome,
    wrapper: PathBuf,
}

fn setup(dir: &Path, tool: Tool) -> Setup {
    let repo = build_repo(tmp());
    let base = mkdir(&dir.join(format!("base-{tool:?}")));
    let v1: Vec<PathBuf> = MAIN.iter().map(|n| repo.rpm(n).to_path_buf()).collect();
    match tool {
        Tool::Cowkit => {
            let out = upgrade(&base, &v1).output().unwrap();
            assert!(
                out.status.success(),
                "v1: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Tool::Rpm => {
            run_ok(rpm_in(&base).arg("-i").args(&v1), "rpm -i v1");
        }
    }
    let v2 = repo.v2.clone();
    let reference = dir.join(format!("reference-{tool:?}"));
    copy_root(&base, &reference);
    let out = tool.command(&reference, &v2).output().unwrap();
    assert!(
        out.status.success(),
        "v2: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want = outcome(&reference);
    // `ck-users`' %pre adds its user to these config files: the only
    // lines `rpm -Va` has after an upgrade that is not killed.
    assert_eq!(
        want.verify,
        ["S.5....T.  c /etc/group", "S.5....T.  c /etc/passwd"],
        "rpm -Va after a plain upgrade"
    );
    assert!(want.temporaries.is_empty(), "{:?}", want.temporaries);
    assert!(!want.journal);
    assert!(
        want.qa.iter().any(|n| n.starts_with("ck-drop-2-")),
        "{:?}",
        want.qa
    );
    // The registration's rpm killed at its N-th `fdatasync` (rpm commits each
    // header on its own), and then cowkit's whole process group.
    let wrapper = dir.join("rpm-killed-at");
    std::fs::write(
        &wrapper,
        r#"#!/bin/sh
case " $* " in
*" --justdb "*)
  case " $* " in
  *" --test "*|*" -e "*) ;;
  *)
    strace -f -qq -o /dev/null -e trace=fdatasync -e "inject=fdatasync:signal=KILL:when=$KILL_AT_SYNC" rpm "$@"
    kill -KILL 0
    exit 137;;
  esac;;
esac
exec rpm "$@"
"#,
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    Setup {
        base,
        v2,
        want,
        wrapper,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    Cowkit,
    Rpm,
}

impl Tool {
    fn command(self, root: &Path, pkgs: &[PathBuf]) -> Command {
        match self {
            Tool::Cowkit => upgrade(root, pkgs),
            Tool::Rpm => rpm_upgrade(root, pkgs),
        }
    }
}

fn copy_root(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    run_ok(
        Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(from)
            .arg(to),
        "cp -a",
    );
}

/// Where a run is killed.
#[derive(Clone, Debug)]
enum Kill {
    /// cowkit kills itself at this point of `COWKIT_TXN_CRASH_AT`.
    At(&'static str),
    /// rpm's registration is killed at its N-th `fdatasync`, then the group.
    InRegistration(u32),
    /// After this many milliseconds: the process alone, or its group.
    After { ms: u64, group: bool },
}

/// Run `tool`'s upgrade on `root`, killed as `kill` says. Whether it was
/// killed (a run that ended first is not).
fn killed_run(tool: Tool, s: &Setup, root: &Path, kill: &Kill) -> bool {
    let mut c = tool.command(root, &s.v2);
    c.process_group(0);
    match kill {
        Kill::At(point) => {
            c.env("COWKIT_TXN_CRASH_AT", point);
        }
        Kill::InRegistration(n) => {
            c.env("COWKIT_RPM", &s.wrapper)
                .env("KILL_AT_SYNC", n.to_string());
        }
        Kill::After { .. } => {}
    }
    let mut child = c.spawn().unwrap();
    if let Kill::After { ms, group } = kill {
        std::thread::sleep(Duration::from_millis(*ms));
        let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        let _ = if *group {
            rustix::process::kill_process_group(pid, rustix::process::Signal::KILL)
        } else {
            rustix::process::kill_process(pid, rustix::process::Signal::KILL)
        };
    }
    let status = child.wait().unwrap();
    if matches!(kill, Kill::After { group: false, .. }) {
        // Its children (rpm, scriptlets) end on their own; wait for the
        // group to be empty before looking at the root.
        let pgid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
        for _ in 0..500 {
            if rustix::process::test_kill_process_group(pgid).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    status.signal() == Some(9)
}

/// One run: a copy of the base, the killed upgrade, the same command again.
/// The outcome, whether the kill landed, and the second run's stderr.
fn one(
    tool: Tool,
    s: &Setup,
    dir: &Path,
    name: &str,
    kill: &Kill,
) -> (Outcome, Outcome, bool, String) {
    let root = dir.join(name);
    copy_root(&s.base, &root);
    let landed = killed_run(tool, s, &root, kill);
    let between = outcome(&root);
    let out = tool.command(&root, &s.v2).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let after = outcome(&root);
    let _ = std::fs::remove_dir_all(&root);
    (between, after, landed, stderr)
}

fn duplicates(qa: &[String]) -> bool {
    let names: Vec<&str> = qa
        .iter()
        .map(|n| n.rsplitn(3, '-').nth(2).unwrap_or(n))
        .collect();
    let set: BTreeSet<&str> = names.iter().copied().collect();
    set.len() != names.len()
}

/// `cowkit install --nodeps ARGS PKG` on `root`, killed at `crash`
/// (`COWKIT_TXN_CRASH_AT`) if given.
fn install_at(root: &Path, args: &[&str], pkg: &Path, crash: Option<&str>) -> std::process::Output {
    let mut c = cowkit();
    c.args(["install", "--nodeps", "--root"])
        .arg(root)
        .arg("--dbpath")
        .arg(dbpath())
        .args(args)
        .arg(pkg)
        .stdin(Stdio::null())
        .env_remove("COWKIT_RPM");
    match crash {
        Some(at) => c.env("COWKIT_TXN_CRASH_AT", at),
        None => c.env_remove("COWKIT_TXN_CRASH_AT"),
    };
    c.output().unwrap()
}

/// A reinstall (`--reinstall`, the installed package replaced by the same
/// package) killed after its files were placed: the next run registers it
/// again as rpm's `--reinstall` does, and does not take the header it
/// replaces, which has the same digest, for the new one (which would
/// erase the package from the database).
#[test]
fn a_reinstall_killed_before_its_registration_is_finished() {
    if !as_root(
        "a_reinstall_killed_before_its_registration_is_finished",
        "rpm --root",
    ) {
        return;
    }
    let Some(d) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let root = mkdir(&d.path().join("root"));
    let install = |args: &[&str], pkg: &Path, crash| install_at(&root, args, pkg, crash);
    let fs = repo.rpm("ck-filesystem");
    let out = install(&[], fs, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = outcome(&root);
    let out = install(&["--reinstall"], fs, Some("placed"));
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    assert!(outcome(&root).journal, "no journal after the kill");
    // Another package: the interrupted reinstall is finished first.
    let out = install(&[], repo.rpm("ck-data"), None);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("killed run left"), "{said}");
    let after = outcome(&root);
    let mut want = before.qa.clone();
    want.extend(
        after
            .qa
            .iter()
            .filter(|n| n.starts_with("ck-data-"))
            .cloned(),
    );
    want.sort();
    assert_eq!(after.qa, want, "{said}");
    assert!(!after.journal);
    assert!(after.temporaries.is_empty(), "{:?}", after.temporaries);
}

/// A transaction asked with `--excludedocs` killed while it placed files
/// (its journal at `placing`), then another command without that option:
/// the interrupted transaction is done again first as it was asked, its
/// docs left out as `rpm -U --excludedocs` leaves them, not with the
/// options of the run that finds it.
#[test]
fn a_transaction_killed_while_placing_is_done_again_as_it_was_asked() {
    if !as_root(
        "a_transaction_killed_while_placing_is_done_again_as_it_was_asked",
        "rpm --root",
    ) {
        return;
    }
    let Some(d) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let (ours, theirs) = (
        mkdir(&d.path().join("cowkit")),
        mkdir(&d.path().join("rpm")),
    );
    let install = |args: &[&str], pkg: &Path, crash| install_at(&ours, args, pkg, crash);
    let rpm_u = |args: &[&str], pkg: &Path| {
        run_ok(
            rpm_in(&theirs).args(["-U", "--nodeps"]).args(args).arg(pkg),
            "rpm -U",
        )
    };
    let fs = repo.rpm("ck-filesystem");
    let out = install(&[], fs, None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rpm_u(&[], fs);
    let out = install(
        &["--excludedocs"],
        repo.rpm("ck-doc"),
        Some("pretrans-done"),
    );
    assert_eq!(out.status.signal(), Some(9), "{out:?}");
    assert!(outcome(&ours).journal, "no journal after the kill");
    let out = install(&[], repo.rpm("ck-data"), None);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("killed run left"), "{said}");
    rpm_u(&["--excludedocs"], repo.rpm("ck-doc"));
    rpm_u(&[], repo.rpm("ck-data"));
    let readme = "usr/share/doc/ck-doc/README";
    assert!(!theirs.join(readme).exists(), "rpm placed the doc");
    assert!(
        !ours.join(readme).exists(),
        "the interrupted transaction was done again with its docs: {said}"
    );
    assert!(ours.join("usr/share/licenses/ck-doc/LICENSE").exists());
    let (a, b) = (outcome(&ours), outcome(&theirs));
    assert_eq!(a.qa, b.qa, "{said}");
    assert_eq!(a.verify, b.verify, "{said}");
    assert_eq!(a.unowned, b.unowned, "{said}");
    assert!(!a.journal);
    assert!(a.temporaries.is_empty(), "{:?}", a.temporaries);
}

/// `kf` 1, whose `<lua>` `%preun` fails, and `kf` 2; each with a file of
/// its own and one they share (different content).
fn failing_preun_packages(dir: &Path) -> [PathBuf; 2] {
    [1, 2].map(|v| {
        let preun = if v == 1 {
            "%preun -p <lua>\nerror('refused')\n"
        } else {
            ""
        };
        let spec = format!(
            "Name: kf\nVersion: {v}\nRelease: 1\nSummary: x\nLicense: MIT\nBuildArch: noarch\n\
             %global debug_package %{{nil}}\n%global __os_install_post %{{nil}}\n\
             %description\nx\n%install\nmkdir -p \"$RPM_BUILD_ROOT/usr/share/kf\"\n\
             echo {v} > \"$RPM_BUILD_ROOT/usr/share/kf/shared\"\n\
             echo {v} > \"$RPM_BUILD_ROOT/usr/share/kf/only-{v}\"\n\
             %files\n/usr/share/kf\n{preun}"
        );
        let dst = dir.join(format!("kf-{v}-1.noarch.rpm"));
        cowkit_testutil::rpm::rpmbuild(&spec, "w9.gzdio", &dst);
        dst
    })
}

/// An upgrade whose old version's `%preun` fails, killed while it placed
/// files (its journal at `placing`: done again by the next run, whose
/// erasure fails again and says so) and killed after its elements ran,
/// before its registration (the next run registers the new version beside
/// the old one, which rpm keeps when its erasure fails, not over it, and
/// puts the old one's file states back). The root ends as `rpm -U` of the
/// same upgrade leaves it (both versions in `rpm -qa`, the same file
/// states, `rpm -Va`, nothing unowned).
#[test]
fn an_upgrade_whose_erasure_failed_killed_before_its_registration_is_finished() {
    if !as_root(
        "an_upgrade_whose_erasure_failed_killed_before_its_registration_is_finished",
        "rpm --root",
    ) {
        return;
    }
    let Some(d) = scratch(Fs::Xfs) else { return };
    let [v1, v2] = failing_preun_packages(&d.path().join("pkgs"));
    let repo = build_repo(tmp());
    let theirs = mkdir(&d.path().join("rpm"));
    run_ok(
        rpm_in(&theirs).args(["-U", "--nodeps"]).arg(&v1),
        "rpm -U v1",
    );
    let out = rpm_in(&theirs)
        .args(["-U", "--nodeps"])
        .arg(&v2)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "rpm: the erasure fails");
    run_ok(
        rpm_in(&theirs)
            .args(["-U", "--nodeps"])
            .arg(repo.rpm("ck-data")),
        "rpm -U ck-data",
    );
    let states = |root: &Path| {
        let out = run_ok(
            rpm_in(root).args(["-q", "--qf", "%{NEVRA} [%{FILESTATES}]\n", "kf"]),
            "rpm -q",
        );
        String::from_utf8(out.stdout).unwrap()
    };
    for (crash, says) in [
        ("pretrans-done", "kf-1-1.noarch: erase failed again"),
        ("placed", "killed run left"),
    ] {
        let ours = mkdir(&d.path().join(format!("cowkit-{crash}")));
        let out = install_at(&ours, &[], &v1, None);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let out = install_at(&ours, &[], &v2, Some(crash));
        assert_eq!(out.status.signal(), Some(9), "{crash}: {out:?}");
        assert!(outcome(&ours).journal, "{crash}: no journal after the kill");
        let out = install_at(&ours, &[], repo.rpm("ck-data"), None);
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{crash}: {said}");
        assert!(said.contains("killed run left"), "{crash}: {said}");
        assert!(said.contains(says), "{crash}: {said}");
        assert_eq!(states(&ours), states(&theirs), "{crash}: {said}");
        let (a, b) = (outcome(&ours), outcome(&theirs));
        assert!(a.qa.iter().any(|n| n.starts_with("kf-1-")), "{:?}", a.qa);
        assert_eq!(a.qa, b.qa, "{crash}: {said}");
        assert_eq!(a.verify, b.verify, "{crash}: {said}");
        assert_eq!(a.unowned, b.unowned, "{crash}: {said}");
        assert!(!a.journal);
        assert!(a.temporaries.is_empty(), "{:?}", a.temporaries);
    }
}

#[test]
fn an_upgrade_killed_anywhere_is_finished_by_the_next_run() {
    if !as_root(
        "an_upgrade_killed_anywhere_is_finished_by_the_next_run",
        "scriptlets chroot",
    ) {
        return;
    }
    let Some(d) = scratch(Fs::Xfs) else { return };
    let dir = d.path();
    let s = setup(dir, Tool::Cowkit);
    let kills = [
        Kill::At("journal-temp-placing"),
        Kill::At("journal-written"),
        Kill::At("pretrans-done"),
        Kill::At("element-2"),
        Kill::At("element-6"),
        Kill::At("journal-temp-registering"),
        Kill::At("placed"),
        Kill::At("registered"),
        Kill::InRegistration(5),
        Kill::InRegistration(9),
        Kill::After {
            ms: 150,
            group: true,
        },
        Kill::After {
            ms: 300,
            group: false,
        },
    ];
    let mut inside = 0;
    let mut failures = Vec::new();
    for (k, kill) in kills.iter().enumerate() {
        let (between, after, landed, stderr) = one(Tool::Cowkit, &s, dir, &format!("run{k}"), kill);
        if !matches!(kill, Kill::After { .. }) {
            assert!(landed, "{kill:?}: the run was not killed");
        }
        if matches!(kill, Kill::InRegistration(_)) && duplicates(&between.qa) {
            inside += 1;
        }
        if after != s.want {
            failures.push(format!(
                "{kill:?}: after the kill {between:#?}\nafter the second run {after:#?}\nits stderr: {stderr}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "expected {:#?}\n{}",
        s.want,
        failures.join("\n")
    );
    // The kills inside the registration left old and new versions
    // registered side by side: the state the next run must finish.
    assert!(inside >= 1, "no kill landed inside the registration");

    // Finishing registers through rpm: an rpm of another generation is
    // refused before the interrupted transaction is touched.
    let root = dir.join("other-rpm");
    copy_root(&s.base, &root);
    assert!(killed_run(Tool::Cowkit, &s, &root, &Kill::At("placed")));
    assert!(outcome(&root).journal);
    let other = dir.join("rpm-4.19.1");
    std::fs::write(
        &other,
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'RPM version 4.19.1'; exit 0; fi\nexec rpm \"$@\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&other, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let before = snapshot(&root);
    let out = upgrade(&root, &s.v2)
        .env("COWKIT_RPM", &other)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "rpm 4.19.1 taken:\n{stderr}");
    assert!(stderr.contains("4.19.1"), "{stderr}");
    assert_eq!(snapshot(&root), before, "the root changed:\n{stderr}");
    // With rpm 4.18 the registration is finished (and the same packages,
    // now installed, are refused as rpm refuses them).
    let out = upgrade(&root, &s.v2).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("done: registered"), "{stderr}");
    assert_eq!(outcome(&root), s.want, "{stderr}");
}

/// The benchmark's runs (see the module docs).
#[test]
#[ignore = "run by bench/txn-kill.sh"]
fn kill_bench() {
    let runs: usize = std::env::var("TXN_KILL_RUNS").map_or(50, |v| v.parse().unwrap());
    let out = PathBuf::from(std::env::var("TXN_KILL_OUT").expect("TXN_KILL_OUT"));
    let fs_dir = std::env::var("TXN_KILL_DIR").map(PathBuf::from).ok();
    let d = match &fs_dir {
        Some(p) => tempfile::tempdir_in(p).unwrap(),
        None => scratch(Fs::Xfs).expect("the rig's XFS"),
    };
    let dir = d.path();
    let mut seed: u64 = std::env::var("TXN_KILL_SEED").map_or(0x5eed, |v| v.parse().unwrap());
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut report = Vec::new();
    for tool in [Tool::Cowkit, Tool::Rpm] {
        let s = setup(dir, tool);
        // How long an unkilled upgrade takes: kills fall within it.
        let probe = dir.join("probe");
        copy_root(&s.base, &probe);
        let t = std::time::Instant::now();
        let _ = tool.command(&probe, &s.v2).output().unwrap();
        let span = t.elapsed().as_millis() as u64;
        let mut rows = Vec::new();
        for k in 0..runs {
            let group = k % 2 == 1;
            let ms = rand() % span.max(1);
            let kill = Kill::After { ms, group };
            let (between, after, landed, stderr) = one(tool, &s, dir, &format!("b{k}"), &kill);
            rows.push(serde_json::json!({
                "ms": ms,
                "group": group,
                "killed": landed,
                "duplicates_after_kill": duplicates(&between.qa),
                "qa_exact": after.qa == s.want.qa,
                "verify_clean": after.verify == s.want.verify,
                "no_unowned": after.unowned == s.want.unowned,
                "no_temporaries": after.temporaries.is_empty() && !after.journal,
                "temporaries": after.temporaries,
                "journal_left": after.journal,
                "temporaries_after_kill": between.temporaries,
                "second_run_stderr": stderr.lines().take(6).collect::<Vec<_>>(),
                "qa": after.qa,
                "unowned_extra": after.unowned.difference(&s.want.unowned).collect::<Vec<_>>(),
                "verify": after.verify,
            }));
        }
        report.push(serde_json::json!({
            "tool": format!("{tool:?}").to_lowercase(),
            "upgrade_ms": span,
            "runs": rows,
        }));
    }
    std::fs::write(&out, serde_json::to_vec_pretty(&report).unwrap()).unwrap();
}
