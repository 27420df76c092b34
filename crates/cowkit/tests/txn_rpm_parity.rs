//! `cowkit install` and `cowkit dnf` next to the real rpm 4.18 and dnf on
//! the same packages, built from spec text: what rpm runs cowkit runs the
//! same way (a program-only scriptlet's arguments, the scriptlets' `PATH`)
//! or refuses before touching anything (installed packages' triggers, an
//! installed `<lua>` `%postun`, a relative root, `Obsoletes`); install-only
//! packages (kernels) are never upgraded away behind the user's back.
//!
//! Needs root (scriptlets are run chrooted) and the rig's XFS.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{as_root, cowkit, cowkit_dnf, run, tmp, Run};
use cowkit_testutil::repo::{build_repo, dbpath, dnf, installed, rpm_in};
use cowkit_testutil::rpm::rpmbuild;
use cowkit_testutil::tree::{diff, mkdir, snapshot, Tree};
use cowkit_testutil::{run_ok, scratch, Fs};

/// The package `name`-`version`: `preamble` before `%description`,
/// `install` its `%install` shell (`$B` the build root), `files` its
/// `%files`, `scripts` whole scriptlet sections; built into `dir`.
fn package(
    dir: &Path,
    (name, version): (&str, u32),
    preamble: &str,
    install: &str,
    files: &str,
    scripts: &str,
) -> PathBuf {
    let spec = format!(
        "Name: {name}\nVersion: {version}\nRelease: 1\nSummary: x\nLicense: MIT\n\
         BuildArch: noarch\n{preamble}\n\
         %global debug_package %{{nil}}\n%global __os_install_post %{{nil}}\n\
         %description\nx\n%install\nB=\"$RPM_BUILD_ROOT\"\n{install}\n\
         %files\n{files}\n{scripts}\n"
    );
    let dst = dir.join(format!("{name}-{version}-1.noarch.rpm"));
    rpmbuild(&spec, "w9.gzdio", &dst);
    dst
}

/// A package owning `/usr/share/NAME/vVERSION`, whose `%post` appends
/// `NAME-VERSION post $*` to `/log`.
fn plain(dir: &Path, name: &str, version: u32, preamble: &str) -> PathBuf {
    package(
        dir,
        (name, version),
        preamble,
        &format!(
            "mkdir -p \"$B/usr/share/{name}\"\necho {version} > \"$B/usr/share/{name}/v{version}\""
        ),
        &format!("/usr/share/{name}"),
        &format!("%post\necho \"{name}-{version} post $*\" >> /log"),
    )
}

/// A root with the test repository's `ck-filesystem` and `ck-busybox`
/// (a static busybox as `/bin/sh`) and `more`, installed by the real rpm.
fn base(root: &Path, more: &[&Path]) -> PathBuf {
    let repo = build_repo(tmp());
    mkdir(root);
    run_ok(
        rpm_in(root)
            .args(["-i", "--nodeps"])
            .arg(repo.rpm("ck-filesystem"))
            .arg(repo.rpm("ck-busybox"))
            .args(more),
        "rpm -i (base root)",
    );
    root.to_path_buf()
}

/// The same root twice: `a` for rpm, `b` for cowkit.
fn twin(from: &Path, to: &Path) -> PathBuf {
    run_ok(
        Command::new("cp").arg("-a").arg(from).arg(to),
        "cp -a (twin root)",
    );
    to.to_path_buf()
}

/// `cowkit install --root ROOT --dbpath` (the database [`rpm_in`] uses)
/// `ARGS…`.
fn install(root: &Path, args: &[&str], pkgs: &[&Path]) -> Run {
    run(cowkit()
        .arg("install")
        .arg("--root")
        .arg(root)
        .arg("--dbpath")
        .arg(dbpath())
        .args(args)
        .args(pkgs))
}

fn rpm_ok(root: &Path, args: &[&str], pkgs: &[&Path]) {
    run_ok(rpm_in(root).args(args).args(pkgs), "rpm");
}

fn log(root: &Path) -> String {
    std::fs::read_to_string(root.join("log")).unwrap_or_default()
}

/// The tree but the database (whose sqlite shared-memory file changes when
/// rpm only reads it), and the database's content.
fn state(root: &Path) -> (Tree, std::collections::BTreeMap<String, String>) {
    let db = dbpath().trim_start_matches('/').to_string();
    let tree = snapshot(root)
        .into_iter()
        .filter(|(p, _)| *p != db && !p.starts_with(&format!("{db}/")))
        .collect();
    (tree, installed(root))
}

/// Refused with `says` in the message and a hint, and nothing changed.
fn assert_refused(
    root: &Path,
    before: &(Tree, std::collections::BTreeMap<String, String>),
    r: &Run,
    says: &[&str],
) {
    assert!(!r.ok, "exit status 0:\n{}", r.stderr);
    for s in says {
        assert!(r.stderr.contains(s), "`{s}` not in:\n{}", r.stderr);
    }
    assert!(r.stderr.contains("hint:"), "{}", r.stderr);
    let now = state(root);
    let d = diff(&before.0, &now.0, |e| (e.shape(), e.uid, e.gid, e.mtime));
    assert!(d.is_empty(), "the tree changed: {d:#?}");
    assert_eq!(now.1, before.1, "the database changed");
}

/// Issue 26, item 1: an installed package with several triggers (two
/// `%triggerin` on different names and a `%triggerun`) and one with a
/// file trigger on two prefixes. rpm runs them when a watched package is
/// installed, upgraded or erased, with its counts; so does cowkit, the
/// same runs in the same order (it used to install without running any:
/// rpm's query of the triggers failed for every package with more than
/// one entry, and the failure went unseen; then it refused them).
#[test]
fn installed_triggers_run_as_rpm_runs_them() {
    if !as_root(
        "installed_triggers_run_as_rpm_runs_them",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let pk = mkdir(&d.join("pkgs"));
    let trig = package(
        &pk,
        ("t-trig", 1),
        "",
        "mkdir -p \"$B/usr/share/t-trig\"\necho x > \"$B/usr/share/t-trig/f\"",
        "/usr/share/t-trig",
        "%triggerin -- t-a\necho \"t-trig triggerin t-a $*\" >> /log\n\
         %triggerin -- t-b\necho \"t-trig triggerin t-b $*\" >> /log\n\
         %triggerun -- t-a\necho \"t-trig triggerun t-a $*\" >> /log",
    );
    let ftrig = package(
        &pk,
        ("t-ftrig", 1),
        "",
        "mkdir -p \"$B/usr/share/t-ftrig\"\necho x > \"$B/usr/share/t-ftrig/f\"",
        "/usr/share/t-ftrig",
        "%filetriggerin -- /usr/share/t-b /usr/share/t-c\n\
         echo \"t-ftrig filetriggerin $* $(cat)\" >> /log",
    );
    let (a1, a2, b1) = (
        plain(&pk, "t-a", 1, ""),
        plain(&pk, "t-a", 2, ""),
        plain(&pk, "t-b", 1, ""),
    );
    let rpm_root = base(&d.join("rpm"), &[&trig, &ftrig]);
    let ck = twin(&rpm_root, &d.join("cowkit"));

    rpm_ok(&rpm_root, &["-i"], &[&a1]);
    rpm_ok(&rpm_root, &["-U"], &[&a2]);
    rpm_ok(&rpm_root, &["-i"], &[&b1]);
    assert_eq!(
        log(&rpm_root),
        "t-a-1 post 1\nt-trig triggerin t-a 1 1\n\
         t-a-2 post 2\nt-trig triggerin t-a 1 2\nt-trig triggerun t-a 1 1\n\
         t-ftrig filetriggerin 0 /usr/share/t-b\n/usr/share/t-b/v1\nt-b-1 post 1\nt-trig triggerin t-b 1 1\n",
        "rpm 4.18's runs (a file trigger of priority >= 10000 before %post)"
    );
    for (args, p) in [(&[][..], &a1), (&[][..], &a2), (&[][..], &b1)] {
        let r = install(&ck, args, &[p]);
        assert!(r.ok, "{}", r.stderr);
    }
    assert_eq!(log(&ck), log(&rpm_root));
    assert_same_roots(&rpm_root, &ck);
}

/// The two roots hold the same files (content, type, mode, owner) and
/// the same database entries.
fn assert_same_roots(a: &Path, b: &Path) {
    let (ta, da) = state(a);
    let (tb, db) = state(b);
    let d = diff(&ta, &tb, |e| (e.shape(), e.uid, e.gid));
    assert!(d.is_empty(), "the trees differ: {d:#?}");
    assert_eq!(da.keys().collect::<Vec<_>>(), db.keys().collect::<Vec<_>>());
}

/// A scriptlet body that appends `TAG $* files:` and its stdin to /log.
fn logs(tag: &str) -> String {
    format!("f=\"\"\nwhile read -r l; do f=\"$f $l\"; done\necho \"{tag} $* files:$f\" >> /log")
}

/// The packages of [`new_packages_triggers_run_as_rpm_runs_them`]
/// and the upgrade test: a "system" package with file triggers of both
/// priority classes, transaction file triggers (one on two prefixes, so
/// that a file under both is listed twice), a "web" package and a module
/// with name triggers, one of them versioned.
fn trigger_set(pk: &Path, v: u32) -> Vec<PathBuf> {
    let sys = package(
        pk,
        ("t-sys", v),
        "",
        &format!(
            "mkdir -p \"$B/usr/share/t-units\" \"$B/usr/lib/t-sys\"\n\
             echo {v} > \"$B/usr/share/t-units/sys.unit\"\necho {v} > \"$B/usr/lib/t-sys/lib{v}\""
        ),
        "/usr/share/t-units\n/usr/lib/t-sys",
        &format!(
            "%post\n{}\n\
             %filetriggerin -P 20000 -- /usr/share/t-units\n{}\n\
             %filetriggerin -P 100 -- /usr/share/t-tmp\n{}\n\
             %filetriggerun -- /usr/share/t-units\n{}\n\
             %transfiletriggerin -P 500000 -- /usr/share/t-units /usr/share\n{}\n\
             %transfiletriggerin -- /usr/lib\n{}\n\
             %transfiletriggerpostun -- /usr/share/t-units\n{}\n\
             %transfiletriggerpostun -P 10 -- /usr/share/nothing /usr/share/t-units\n{}\n\
             %triggerun -- t-sys < 2\n{}",
            logs(&format!("t-sys-{v} post")),
            logs(&format!("t-sys-{v} filetriggerin(20000)")),
            logs(&format!("t-sys-{v} filetriggerin(100)")),
            logs(&format!("t-sys-{v} filetriggerun")),
            logs(&format!("t-sys-{v} transfiletriggerin(500000)")),
            logs(&format!("t-sys-{v} transfiletriggerin")),
            logs(&format!("t-sys-{v} transfiletriggerpostun")),
            logs(&format!("t-sys-{v} transfiletriggerpostun(second prefix)")),
            logs(&format!("t-sys-{v} triggerun(t-sys<2)")),
        ),
    );
    let web = package(
        pk,
        ("t-web", v),
        "",
        &format!(
            "mkdir -p \"$B/usr/share/t-units\" \"$B/usr/share/t-tmp\"\n\
             echo {v} > \"$B/usr/share/t-units/web.unit\"\necho {v} > \"$B/usr/share/t-tmp/web{v}.conf\""
        ),
        "/usr/share/t-units/web.unit\n/usr/share/t-tmp",
        &format!(
            "%pre\n{}\n%post\n{}\n%preun\n{}\n%postun\n{}\n%posttrans\n{}",
            logs(&format!("t-web-{v} pre")),
            logs(&format!("t-web-{v} post")),
            logs(&format!("t-web-{v} preun")),
            logs(&format!("t-web-{v} postun")),
            logs(&format!("t-web-{v} posttrans")),
        ),
    );
    let module = package(
        pk,
        ("t-mod", 1),
        "",
        "mkdir -p \"$B/usr/share/t-mod\"\necho x > \"$B/usr/share/t-mod/m\"",
        "/usr/share/t-mod",
        &format!(
            "%triggerin -- t-web < 2\n{}\n%triggerun -- t-web < 2\n{}\n\
             %triggerpostun -- t-web < 2\n{}\n%triggerin -- t-sys\n{}\n%triggerprein -- t-web\n{}",
            logs("t-mod triggerin(t-web<2)"),
            logs("t-mod triggerun(t-web<2)"),
            logs("t-mod triggerpostun(t-web<2)"),
            logs("t-mod triggerin(t-sys)"),
            logs("t-mod triggerprein(t-web)"),
        ),
    );
    if v == 1 {
        let old = package(
            pk,
            ("t-old", 1),
            "",
            "mkdir -p \"$B/usr/share/t-units\"\necho o > \"$B/usr/share/t-units/old.unit\"",
            "/usr/share/t-units/old.unit",
            &format!(
                "%preun\n{}\n%postun\n{}",
                logs("t-old-1 preun"),
                logs("t-old-1 postun")
            ),
        );
        vec![sys, web, module, old]
    } else {
        let new = package(
            pk,
            ("t-new", 2),
            "Obsoletes: t-old < 2\nProvides: t-old = 2",
            "mkdir -p \"$B/usr/share/t-units\"\necho n > \"$B/usr/share/t-units/new.unit\"",
            "/usr/share/t-units/new.unit",
            &format!("%post\n{}", logs("t-new-2 post")),
        );
        vec![sys, web, new]
    }
}

/// Issue 26: a new root's transaction whose packages trigger each other
/// (file triggers before and after `%post` by priority, transaction file
/// triggers with their file lists, versioned name triggers, `%pre`,
/// `%posttrans`): cowkit runs what `rpm -i` runs, in its order, with its
/// arguments and inputs.
#[test]
fn new_packages_triggers_run_as_rpm_runs_them() {
    if !as_root(
        "new_packages_triggers_run_as_rpm_runs_them",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let pk = mkdir(&d.join("pkgs"));
    let v1 = trigger_set(&pk, 1);
    let v1: Vec<&Path> = v1.iter().map(PathBuf::as_path).collect();
    let rpm_root = base(&d.join("rpm"), &[]);
    let ck = twin(&rpm_root, &d.join("cowkit"));
    rpm_ok(&rpm_root, &["-i"], &v1);
    // The plan `--test --json` gives: nothing run, and one run per line
    // rpm's scriptlets log, the first with its arguments.
    let t = install(&ck, &["--test", "--json"], &v1);
    assert!(t.ok, "{}", t.stderr);
    assert_eq!(log(&ck), "", "--test ran something");
    let r = install(&ck, &[], &v1);
    assert!(r.ok, "{}", r.stderr);
    let want = log(&rpm_root);
    assert!(
        want.contains("t-sys-1 transfiletriggerin(500000) 0 files:"),
        "{want}"
    );
    assert_eq!(log(&ck), want);
    let plan = t.json()["plan"].as_array().unwrap().clone();
    let runs: Vec<&serde_json::Value> = plan.iter().filter(|e| e["action"] == "run").collect();
    assert_eq!(runs.len(), want.lines().count(), "{plan:#?}");
    assert_eq!(runs[0]["run"]["name"], "%triggerprein(t-mod-1-1.noarch)");
    assert_eq!(
        (&runs[0]["run"]["arg1"], &runs[0]["run"]["arg2"]),
        (&1.into(), &0.into())
    );
    assert_same_roots(&rpm_root, &ck);
}

/// Issue 26: an upgrade that erases: new versions (their old versions'
/// `%preun`/`%postun`, `%triggerun`/`%triggerpostun` on them, file
/// triggers on the erased files, `%transfiletriggerpostun` as 4.18 runs
/// it: only when a trigger's first prefix matches) and a renamed package
/// that `Obsoletes` an installed one, which is erased with its scriptlets
/// and files in the same transaction, as `rpm -U` does.
#[test]
fn upgrade_and_obsoletes_erase_as_rpm_does() {
    if !as_root(
        "upgrade_and_obsoletes_erase_as_rpm_does",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let pk = mkdir(&d.join("pkgs"));
    let v1 = trigger_set(&pk, 1);
    let v2 = trigger_set(&pk, 2);
    let v1: Vec<&Path> = v1.iter().map(PathBuf::as_path).collect();
    let v2: Vec<&Path> = v2.iter().map(PathBuf::as_path).collect();
    let start = base(&d.join("start"), &v1);
    std::fs::remove_file(start.join("log")).unwrap();
    let rpm_root = twin(&start, &d.join("rpm"));
    let ck = twin(&start, &d.join("cowkit"));
    rpm_ok(&rpm_root, &["-U"], &v2);
    let r = install(&ck, &[], &v2);
    assert!(r.ok, "{}", r.stderr);
    let want = log(&rpm_root);
    assert!(want.contains("t-old-1 postun 0"), "{want}");
    assert!(want.contains("t-mod triggerpostun(t-web<2) 1 1"), "{want}");
    assert_eq!(log(&ck), want);
    assert!(!ck.join("usr/share/t-units/old.unit").exists());
    assert_same_roots(&rpm_root, &ck);
}

/// Issue 26, items 3 and 4: a scriptlet that is only a program (`%post -p
/// PROG`, no body) gets no arguments, as rpm runs it (cowkit used to pass
/// `1`), and scriptlets get rpm's `PATH` (`%_install_script_path`).
#[test]
fn program_only_scriptlet_args_and_path_as_rpm() {
    if !as_root(
        "program_only_scriptlet_args_and_path_as_rpm",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let pk = mkdir(&d.join("pkgs"));
    let argv = package(
        &pk,
        ("t-argv", 1),
        "",
        "mkdir -p \"$B/usr/bin\"\n\
         printf '#!/bin/sh\\necho \"argv($#):$*\" >> /log\\n' > \"$B/usr/bin/t-argv\"\n\
         chmod 0755 \"$B/usr/bin/t-argv\"",
        "/usr/bin/t-argv",
        "%post -p /usr/bin/t-argv\n%posttrans\necho \"PATH=$PATH $*\" >> /log",
    );
    let rpm_root = base(&d.join("rpm"), &[]);
    let ck = twin(&rpm_root, &d.join("cowkit"));
    rpm_ok(&rpm_root, &["-i"], &[&argv]);
    let r = install(&ck, &[], &[&argv]);
    assert!(r.ok, "{}", r.stderr);
    let path = String::from_utf8(
        run_ok(
            Command::new("rpm").args(["-E", "%_install_script_path"]),
            "rpm -E",
        )
        .stdout,
    )
    .unwrap();
    assert_eq!(
        log(&rpm_root),
        format!("argv(0):\nPATH={} 1\n", path.trim()),
        "rpm 4.18's runs"
    );
    assert_eq!(log(&ck), log(&rpm_root));
}

/// Issue 26, item 2: an install-only package (`Provides:
/// installonlypkg(kernel)`). `rpm -U` erases the old version; dnf installs
/// the new one beside it. `cowkit install` (rpm -U-like) refuses instead of
/// erasing a kernel nobody asked to erase; `cowkit dnf` does what dnf does.
#[test]
fn install_only_packages_are_never_upgraded_away() {
    if !as_root(
        "install_only_packages_are_never_upgraded_away",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let pk = mkdir(&d.join("pkgs"));
    let kern = |v: u32| {
        package(
            &pk,
            ("t-kern", v),
            "Provides: installonlypkg(kernel)",
            &format!("mkdir -p \"$B/boot\"\necho {v} > \"$B/boot/t-kern-{v}\""),
            &format!("/boot/t-kern-{v}"),
            &format!(
                "%post\necho \"t-kern-{v} post $*\" >> /log\n\
                 %postun\necho \"t-kern-{v} postun $*\" >> /log"
            ),
        )
    };
    let (k1, k2) = (kern(1), kern(2));
    let (a1, a2) = (plain(&pk, "t-a", 1, ""), plain(&pk, "t-a", 2, ""));
    let start = base(&d.join("start"), &[&k1, &a1]);
    let kernels = |root: &Path| {
        let out = run_ok(rpm_in(root).args(["-q", "t-kern"]), "rpm -q");
        String::from_utf8(out.stdout).unwrap()
    };

    // rpm -U erases the old kernel.
    let rpm_u = twin(&start, &d.join("rpm-U"));
    rpm_ok(&rpm_u, &["-U"], &[&k2]);
    assert_eq!(kernels(&rpm_u), "t-kern-2-1.noarch\n");
    // cowkit install refuses, names it, and changes nothing.
    let ck = twin(&start, &d.join("cowkit"));
    let before = state(&ck);
    let r = install(&ck, &[], &[&k2]);
    assert_refused(
        &ck,
        &before,
        &r,
        &[
            "t-kern-2-1.noarch is install-only",
            "installonlypkg(kernel)",
            "t-kern-1-1.noarch",
            "cowkit dnf",
        ],
    );

    // dnf installs it beside the old one (`dnf upgrade`; `dnf install
    // t-kern` says it is installed already); so does cowkit dnf.
    let repo = mkdir(&d.join("repo"));
    for p in [&k2, &a2] {
        std::fs::copy(p, repo.join(p.file_name().unwrap())).unwrap();
    }
    run_ok(
        Command::new("createrepo_c").arg("--quiet").arg(&repo),
        "createrepo_c",
    );
    let dnf_root = twin(&start, &d.join("dnf"));
    let ck_dnf = twin(&start, &d.join("cowkit-dnf"));
    let dnf_cache = d.join("dnf-cache");
    // `dnf upgrade`: the new kernel beside the old one and t-a upgraded,
    // in one transaction (rpm's install element among upgrades); cowkit
    // dnf does the same (it used to refuse it).
    run_ok(
        dnf(&repo, &dnf_root, &dnf_cache).args(["upgrade"]),
        "dnf upgrade",
    );
    assert_eq!(kernels(&dnf_root), "t-kern-1-1.noarch\nt-kern-2-1.noarch\n");
    let r = cowkit_dnf(
        &repo,
        &ck_dnf,
        &dnf_cache,
        &d.join("ck-cache"),
        &["upgrade"],
    );
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(
        j["installed_beside"],
        serde_json::json!([["t-kern-2-1.noarch", ["t-kern-1-1.noarch"]]]),
        "{j}"
    );
    assert_eq!(kernels(&ck_dnf), kernels(&dnf_root));
    assert_eq!(log(&ck_dnf), log(&dnf_root), "scriptlets");
    assert_eq!(
        log(&dnf_root),
        "t-kern-1 post 1\nt-a-1 post 1\nt-a-2 post 2\nt-kern-2 post 2\n"
    );
    assert_eq!(
        installed(&ck_dnf).keys().collect::<Vec<_>>(),
        installed(&dnf_root).keys().collect::<Vec<_>>()
    );
    assert!(ck_dnf.join("boot/t-kern-1").exists() && ck_dnf.join("boot/t-kern-2").exists());

    // A reinstall replaces that version only, the other kernel stays:
    // `dnf reinstall` and `cowkit dnf` alike, `rpm --reinstall` and
    // `cowkit install --reinstall` alike (neither refused as an upgrade).
    std::fs::remove_file(dnf_root.join("boot/t-kern-2")).unwrap();
    std::fs::remove_file(ck_dnf.join("boot/t-kern-2")).unwrap();
    run_ok(
        dnf(&repo, &dnf_root, &dnf_cache).args(["reinstall", "t-kern-2-1.noarch"]),
        "dnf reinstall",
    );
    let r = cowkit_dnf(
        &repo,
        &ck_dnf,
        &dnf_cache,
        &d.join("ck-cache"),
        &["reinstall", "t-kern-2-1.noarch"],
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(kernels(&ck_dnf), kernels(&dnf_root));
    assert_eq!(log(&ck_dnf), log(&dnf_root), "scriptlets of the reinstall");
    assert!(ck_dnf.join("boot/t-kern-2").exists());
    // (dnf's own state, its history and logs, is dnf's only.)
    let boot = |r: &Path| cowkit_testutil::tree::under(&state(r).0, "boot");
    let delta = diff(&boot(&dnf_root), &boot(&ck_dnf), |e| {
        (e.shape(), e.uid, e.gid)
    });
    assert!(delta.is_empty(), "{delta:#?}");
    let rpm_re = twin(&start, &d.join("rpm-reinstall"));
    rpm_ok(&rpm_re, &["--reinstall"], &[&k1]);
    let ck_re = twin(&start, &d.join("cowkit-reinstall"));
    let r = install(&ck_re, &["--reinstall"], &[&k1]);
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(kernels(&ck_re), kernels(&rpm_re));
    assert_eq!(log(&ck_re), log(&rpm_re), "scriptlets of rpm --reinstall");
    assert_same_roots(&rpm_re, &ck_re);

    // dnf's `installonly_limit` (3) erases the oldest kernel when a fourth
    // comes; cowkit dnf erases nothing it was not asked to: it runs dnf
    // with `installonly_limit=0`, so that dnf's plan keeps them all too.
    for v in [3, 4] {
        let k = kern(v);
        let repo_v = mkdir(&d.join(format!("repo{v}")));
        std::fs::copy(&k, repo_v.join(k.file_name().unwrap())).unwrap();
        run_ok(
            Command::new("createrepo_c").arg("--quiet").arg(&repo_v),
            "createrepo_c",
        );
        let cache = d.join(format!("dnf-cache{v}"));
        run_ok(
            dnf(&repo_v, &dnf_root, &cache).args(["upgrade", "t-kern"]),
            "dnf upgrade t-kern",
        );
        let r = cowkit_dnf(
            &repo_v,
            &ck_dnf,
            &cache,
            &d.join("ck-cache"),
            &["upgrade", "t-kern"],
        );
        assert!(r.ok, "{}", r.stderr);
    }
    assert_eq!(
        kernels(&dnf_root),
        "t-kern-2-1.noarch\nt-kern-3-1.noarch\nt-kern-4-1.noarch\n"
    );
    assert_eq!(
        kernels(&ck_dnf),
        "t-kern-1-1.noarch\nt-kern-2-1.noarch\nt-kern-3-1.noarch\nt-kern-4-1.noarch\n"
    );
}

/// Issue 26, item 5: an installed package whose `%postun` is `<lua>`,
/// then upgrades of it: cowkit runs it in rpm's Lua as `rpm -U` does (it
/// used to upgrade without checking it, then refused it); with two
/// installed instances (`rpm -i` of another version) `rpm -U` erases both,
/// and so does cowkit.
#[test]
fn installed_lua_postun_runs_as_rpm_runs_it() {
    if !as_root(
        "installed_lua_postun_runs_as_rpm_runs_it",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let pk = mkdir(&d.join("pkgs"));
    let lua = |v: u32| {
        package(
            &pk,
            ("t-lua", v),
            "",
            &format!("mkdir -p \"$B/usr/share/t-lua\"\necho {v} > \"$B/usr/share/t-lua/v{v}\""),
            "/usr/share/t-lua",
            &format!(
                "%postun -p <lua>\n\
                 local f = io.open(\"/log\", \"a\"); f:write(\"t-lua-{v} postun \", table.concat(arg, \" \"), \"\\n\"); f:close()"
            ),
        )
    };
    let (l1, l2, l3) = (lua(1), lua(2), lua(3));
    let start = base(&d.join("start"), &[&l1]);
    let rpm_root = twin(&start, &d.join("rpm"));
    let ck = twin(&start, &d.join("cowkit"));
    rpm_ok(&rpm_root, &["-i"], &[&l2]);
    rpm_ok(&ck, &["-i"], &[&l2]);
    rpm_ok(&rpm_root, &["-U"], &[&l3]);
    let r = install(&ck, &[], &[&l3]);
    assert!(r.ok, "{}", r.stderr);
    let want = log(&rpm_root);
    assert!(want.contains("t-lua-1 postun <lua> 1"), "{want}");
    assert!(want.contains("t-lua-2 postun <lua> 2"), "{want}");
    assert_eq!(log(&ck), want);
    assert_same_roots(&rpm_root, &ck);
}

/// Issue 26, item 6: a relative `--root` is refused up front, as rpm
/// refuses it (cowkit used to install, and every scriptlet failed in
/// `chroot`).
#[test]
fn relative_root_is_refused_like_rpm() {
    if !as_root(
        "relative_root_is_refused_like_rpm",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let pk = mkdir(&d.join("pkgs"));
    let a1 = plain(&pk, "t-a", 1, "");
    let root = base(&d.join("root"), &[]);
    let out = Command::new("rpm")
        .current_dir(d)
        .args(["--root", "root", "--dbpath"])
        .arg(dbpath())
        .arg("-i")
        .arg(&a1)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("must begin with a /"),
        "rpm: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let before = state(&root);
    let r = run(cowkit()
        .current_dir(d)
        .args(["install", "--root", "root", "--dbpath"])
        .arg(dbpath())
        .arg(&a1));
    assert_refused(&root, &before, &r, &["`root` is not an absolute path"]);
}

/// A relocatable package (`Prefix: /opt`): rpm gives its shell scriptlets
/// `RPM_INSTALL_PREFIX` and `RPM_INSTALL_PREFIX0`, its Lua ones the table
/// `RPM_INSTALL_PREFIX` (not in `%pretrans`), and its triggers the
/// owner's; cowkit gives the same (it used to give none).
#[test]
fn install_prefixes_as_rpm_gives_them() {
    if !as_root(
        "install_prefixes_as_rpm_gives_them",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let pk = mkdir(&d.join("pkgs"));
    let reloc = package(
        &pk,
        ("t-reloc", 1),
        "Prefix: /opt",
        "mkdir -p \"$B/opt/t-reloc\"\necho x > \"$B/opt/t-reloc/f\"",
        "/opt/t-reloc",
        "%post\necho \"post $* [$RPM_INSTALL_PREFIX] [$RPM_INSTALL_PREFIX0]\" >> /log\n\
         %pretrans -p <lua>\n\
         local f = io.open(\"/log\", \"a\"); f:write(\"pretrans \", tostring(RPM_INSTALL_PREFIX), \"\\n\"); f:close()\n\
         %posttrans -p <lua>\n\
         local f = io.open(\"/log\", \"a\"); f:write(\"posttrans \", RPM_INSTALL_PREFIX[1], \"\\n\"); f:close()\n\
         %filetriggerin -- /usr/share/t-a\n\
         echo \"filetriggerin [$RPM_INSTALL_PREFIX]\" >> /log",
    );
    let a1 = plain(&pk, "t-a", 1, "");
    let rpm_root = base(&d.join("rpm"), &[]);
    let ck = twin(&rpm_root, &d.join("cowkit"));
    rpm_ok(&rpm_root, &["-i"], &[&reloc, &a1]);
    let r = install(&ck, &[], &[&reloc, &a1]);
    assert!(r.ok, "{}", r.stderr);
    let want = log(&rpm_root);
    assert!(want.contains("post 1 [/opt] [/opt]"), "{want}");
    assert!(want.contains("filetriggerin [/opt]"), "{want}");
    assert_eq!(log(&ck), want);
}
