//! `cowkit dnf` with dnf's own command line (issue 26): `cowkit dnf
//! --installroot R ...`, the cowkit binary reached through a link named
//! `dnf` (made by `cowkit dnf --shim-dir`), the real dnf run unchanged
//! without `--installroot`, the options cowkit cannot honour refused by
//! name, and a real image builder (Debian's mkosi 14) building the same
//! root with cowkit's `dnf` first on `PATH` as with plain dnf.
//!
//! The mkosi test uses the Fedora-shaped repository (`cowkit_testutil::fedora`) by default;
//! `COWKIT_MKOSI_REPO` (a directory with `repodata/`) and
//! `COWKIT_MKOSI_PACKAGES` (space-separated) put another repository in.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{as_root, cowkit, run, tmp, Run};
use cowkit_testutil::repo::{build_repo, dbpath, installed, verify, EPOCH_V2, LOG, MAIN};
use cowkit_testutil::tree::{diff, hardlink_groups, mkdir, snapshot, Tree};
use cowkit_testutil::{required, run_ok, scratch, Fs};

/// The cowkit binary under test.
fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_cowkit")
}

/// `cowkit dnf --shim-dir DIR`: DIR, with `DIR/dnf` linking to cowkit.
fn shim_dir(dir: &Path) -> PathBuf {
    let r = run(cowkit().args(["dnf", "--shim-dir"]).arg(dir));
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(
        String::from_utf8(r.stdout).unwrap().trim(),
        dir.to_str().unwrap()
    );
    dir.to_path_buf()
}

/// `PATH` with `first` in front of the test's own.
fn path_with(first: &[&Path]) -> std::ffi::OsString {
    let mut dirs: Vec<PathBuf> = first.iter().map(|p| p.to_path_buf()).collect();
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// A stand-in for the real dnf in `dir`: it writes each argument on a
/// line of `dir/calls` (a call ends with `--end--`) and exits with 7.
fn fake_dnf(dir: &Path) -> PathBuf {
    mkdir(dir);
    let p = dir.join("dnf");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\" >> '{0}/calls'; done\n\
             echo --end-- >> '{0}/calls'\nexit 7\n",
            dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The calls `fake_dnf` in `dir` recorded, each as its arguments.
fn calls(dir: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(dir.join("calls")).unwrap_or_default();
    let mut out = vec![];
    let mut cur = vec![];
    for l in text.lines() {
        if l == "--end--" {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(l.to_string());
        }
    }
    out
}

/// What the roots agree on: everything but the rpm database (compared
/// with `rpm -qa` and `rpm -Va`), dnf's own state and logs, and the copy
/// of dnf's cache path dnf makes inside the root.
fn comparable(tree: Tree, dnf_cache: &Path, db: &str) -> Tree {
    let cache_rel = dnf_cache
        .to_str()
        .unwrap()
        .trim_start_matches('/')
        .to_string();
    let db = db.trim_start_matches('/').to_string();
    let skip = |p: &str| {
        let first = |pre: &str| p == pre || p.starts_with(&format!("{pre}/"));
        first(&db)
            || first("var/lib/dnf")
            || first("var/log")
            || first("var/cache")
            || first(&cache_rel)
            || cache_rel.starts_with(&format!("{p}/"))
            || db.starts_with(&format!("{p}/"))
    };
    tree.into_iter().filter(|(p, _)| !skip(p)).collect()
}

/// Types, modes, content, link targets, owners, caps, package files'
/// mtimes, hardlinks: equal.
fn assert_same_trees(a: &Path, b: &Path, dnf_cache: &Path, db: &str, what: &str) {
    let ta = comparable(snapshot(a), dnf_cache, db);
    let tb = comparable(snapshot(b), dnf_cache, db);
    let d = diff(&ta, &tb, |e| {
        (
            e.shape(),
            e.uid,
            e.gid,
            e.caps.clone(),
            // Files the scriptlets write have the time of the run.
            (e.kind != 'd' && e.mtime <= EPOCH_V2 + 86_400).then_some(e.mtime),
        )
    });
    assert!(d.is_empty(), "{what}: the roots differ:\n{d:#?}");
    assert_eq!(
        hardlink_groups(&ta),
        hardlink_groups(&tb),
        "{what}: hardlinks"
    );
}

fn log(root: &Path) -> String {
    std::fs::read_to_string(root.join(LOG)).unwrap()
}

/// The same root three ways: `cowkit dnf --root R -- ARGS`, `cowkit dnf
/// ARGS --installroot R`, and `dnf ARGS --installroot R` found on PATH
/// (a link to cowkit): equal trees, packages, `rpm -Va`, scriptlet logs;
/// a removal through the link runs the real dnf on cowkit's database.
#[test]
fn dnf_command_line_and_dnf_link_build_what_the_root_form_builds() {
    let name = "dnf_command_line_and_dnf_link_build_what_the_root_form_builds";
    if !as_root(name, "scriptlets run chrooted") {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let d = dir.path();
    let (a, b, c) = (d.join("root-form"), d.join("dnf-form"), d.join("dnf-link"));
    let dnf_cache = d.join("dnf-cache");
    let ck_cache = d.join("cowkit-cache");
    let db = dbpath();
    let dnf_args = |root: &Path| common::dnf_args(&repo.dir, root, &dnf_cache);

    let r = run(cowkit()
        .args(["dnf", "--json", "--root"])
        .arg(&a)
        .arg("--cache")
        .arg(&ck_cache)
        .args(["--dbpath", &db, "--"])
        .args(dnf_args(&a))
        .args(["install", repo.top]));
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.json()["cache_misses"], MAIN.len());

    // dnf's command line, the root in the middle.
    let mut args = dnf_args(&b);
    args.insert(2, format!("--installroot={}", b.display()).into());
    let r = run(cowkit()
        .arg("dnf")
        .args(&args)
        .args(["install", repo.top])
        .env("COWKIT_CACHE", &ck_cache)
        .env("COWKIT_DBPATH", &db)
        .env("COWKIT_JSON", "1"));
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["cache_hits"], MAIN.len(), "cowkit installed: {j}");
    assert_eq!(j["registered"], MAIN.len(), "{j}");

    // `dnf` on PATH: the link; the root as two words.
    let shim = shim_dir(&d.join("shim"));
    let r = run(Command::new("dnf")
        .args(dnf_args(&c))
        .arg("--installroot")
        .arg(&c)
        .args(["install", repo.top])
        .env("PATH", path_with(&[&shim]))
        .env("COWKIT_CACHE", &ck_cache)
        .env("COWKIT_DBPATH", &db)
        .env("COWKIT_JSON", "1"));
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.json()["cache_hits"], MAIN.len(), "through the link");

    for (other, what) in [(&b, "cowkit dnf --installroot"), (&c, "dnf link")] {
        assert_eq!(installed(&a), installed(other), "{what}");
        assert_eq!(verify(&a), verify(other), "{what}");
        assert_same_trees(&a, other, &dnf_cache, &db, what);
        assert_eq!(log(&a), log(other), "{what}: scriptlets");
    }

    // Through the link, a removal is the real dnf's, on the same database.
    let r = run(Command::new("dnf")
        .args(dnf_args(&c))
        .arg(format!("--installroot={}", c.display()))
        .args(["remove", "ck-doc"])
        .env("PATH", path_with(&[&shim]))
        .env("COWKIT_DBPATH", &db));
    assert!(r.ok, "{}", r.stderr);
    assert!(!installed(&c).contains_key("ck-doc"));
    assert!(installed(&c).contains_key("ck-app"));
}

/// Without `--installroot` (the host's own dnf use), the link runs the
/// real dnf (the first `dnf` on PATH that is not cowkit) with the
/// arguments unchanged and returns its status; a `COWKIT_DNF` that is
/// cowkit itself, and a `dnf` started by the dnf cowkit runs, are refused.
#[test]
fn without_installroot_the_real_dnf_runs_unchanged() {
    let d = tempfile::tempdir_in(tmp()).unwrap();
    let shim = shim_dir(&d.path().join("shim"));
    let fake = d.path().join("real");
    fake_dnf(&fake);
    // Options cowkit would refuse when it installs are dnf's business here.
    let args = ["-q", "--nodocs", "--setopt=tsflags=test", "install", "a b"];
    let out = Command::new("dnf")
        .args(args)
        .env("PATH", path_with(&[&shim, &fake]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert_eq!(calls(&fake), [args.map(String::from).to_vec()]);

    // The real dnf, through the link.
    let real = run_ok(Command::new("dnf").arg("--version"), "dnf --version");
    let via = run_ok(
        Command::new("dnf")
            .arg("--version")
            .env("PATH", path_with(&[&shim])),
        "dnf --version through the link",
    );
    assert_eq!(real.stdout, via.stdout);

    // `cowkit dnf` with dnf's command line and no root: the same.
    let out = cowkit()
        .args(["dnf", "list", "--installed"])
        .env("COWKIT_DNF", fake.join("dnf"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(7), "{out:?}");
    assert_eq!(calls(&fake)[1], ["list", "--installed"]);

    let r = run(Command::new("dnf")
        .arg("--version")
        .env("PATH", path_with(&[&shim]))
        .env("COWKIT_DNF", shim.join("dnf")));
    assert!(!r.ok);
    assert!(r.stderr.contains("is cowkit itself"), "{}", r.stderr);
    let r = run(Command::new("dnf")
        .arg("--version")
        .env("PATH", path_with(&[&shim, &fake]))
        .env("COWKIT_DNF_ENTRY", "/usr/bin/dnf"));
    assert!(!r.ok);
    assert!(
        r.stderr.contains("started by the dnf it runs"),
        "{}",
        r.stderr
    );
    assert_eq!(calls(&fake).len(), 2, "the fake dnf ran again");
}

/// Several options cowkit cannot honour are said in one error, one line
/// each under it (no escaped line break inside one line), with one hint.
#[test]
fn refused_options_are_one_error_with_a_line_each() {
    let d = tempfile::tempdir_in(tmp()).unwrap();
    let dnf = fake_dnf(&d.path().join("real"));
    let root = d.path().join("root");
    let r = run(cowkit()
        .arg("dnf")
        .arg(format!("--installroot={}", root.display()))
        .args([
            "--setopt=tsflags=noscripts",
            "--comment=built",
            "install",
            "ck-suite",
        ])
        .env("COWKIT_DNF", &dnf)
        .env("COWKIT_CACHE", d.path().join("cache")));
    assert!(!r.ok);
    assert!(!r.stderr.contains("\\n"), "{}", r.stderr);
    let lines: Vec<&str> = r.stderr.lines().collect();
    let at = lines
        .iter()
        .position(|l| *l == "error: cowkit cannot honour dnf's options:")
        .unwrap_or_else(|| panic!("{}", r.stderr));
    assert!(
        lines[at + 1].starts_with("  `--setopt=tsflags=noscripts`: "),
        "{}",
        r.stderr
    );
    assert!(
        lines[at + 2].starts_with("  `--comment=built`: "),
        "{}",
        r.stderr
    );
    assert_eq!(
        lines[at + 3],
        "hint: drop them, or run plain dnf for this root"
    );
    assert_eq!(lines.iter().filter(|l| l.starts_with("error:")).count(), 1);
    assert!(!root.exists());
}

/// What cowkit cannot honour when it installs is refused before dnf runs
/// or the root is made, naming the option; what only shows or downloads
/// goes to dnf; a command that installs nothing goes to dnf whatever its
/// options.
#[test]
fn options_cowkit_cannot_honour_are_refused_by_name() {
    let d = tempfile::tempdir_in(tmp()).unwrap();
    let fake = d.path().join("real");
    let dnf = fake_dnf(&fake);
    let root = d.path().join("root");
    let cowkit_dnf = |args: &[&str]| -> Run {
        run(cowkit()
            .arg("dnf")
            .arg(format!("--installroot={}", root.display()))
            .args(args)
            .env("COWKIT_DNF", &dnf)
            .env("COWKIT_CACHE", d.path().join("cache")))
    };
    for (opt, why) in [
        (&["--setopt=tsflags=noscripts"][..], "transaction flag"),
        (&["--setopt", "tsflags=test"], "transaction flag"),
        (&["--setopt=tsflags=nodocs,notriggers"], "transaction flag"),
        (&["--comment=built"], "no dnf history"),
        (&["--downloaddir=/tmp/x"], "without --downloadonly"),
        (&["--setopt=keepcache=maybe"], "not a boolean"),
    ] {
        let r = cowkit_dnf(&[opt, &["install", "ck-suite"]].concat());
        assert!(!r.ok, "{opt:?}");
        let named = if opt.len() == 2 {
            format!("{}={}", opt[0], opt[1])
        } else {
            opt[0].to_string()
        };
        assert!(
            r.stderr.contains(&format!("`{named}`")) && r.stderr.contains(why),
            "{opt:?}: {}",
            r.stderr
        );
        assert!(!root.exists(), "{opt:?}: the root was made");
        assert!(calls(&fake).is_empty(), "{opt:?}: dnf ran");
    }
    // cowkit's own options, in dnf's command line.
    let r = cowkit_dnf(&["--cache=/c", "install", "a"]);
    assert!(!r.ok);
    assert!(
        r.stderr.contains("reads it from COWKIT_CACHE"),
        "{}",
        r.stderr
    );
    // A prefix of --installroot (dnf's argparse would take it).
    let r = run(cowkit()
        .args(["dnf", "--installr=/x", "install", "a"])
        .env("COWKIT_DNF", &dnf));
    assert!(!r.ok);
    assert!(
        r.stderr.contains("short for `--installroot`"),
        "{}",
        r.stderr
    );
    // The root twice.
    let r = run(cowkit()
        .args([
            "dnf",
            "--root",
            "/x",
            "--",
            "--installroot=/y",
            "install",
            "a",
        ])
        .env("COWKIT_DNF", &dnf));
    assert!(!r.ok);
    assert!(r.stderr.contains("the root is given twice"), "{}", r.stderr);
    assert!(calls(&fake).is_empty());

    // Only showing or downloading: dnf's business, unchanged.
    for opt in ["--downloadonly", "--assumeno"] {
        let r = cowkit_dnf(&[opt, "--nodocs", "install", "ck-suite"]);
        assert!(!r.ok, "the fake dnf exits 7");
        let last = calls(&fake).pop().unwrap();
        assert_eq!(
            last,
            [
                format!("--installroot={}", root.display()).as_str(),
                opt,
                "--nodocs",
                "install",
                "ck-suite"
            ]
        );
    }
    let r = cowkit_dnf(&["--nodocs", "remove", "ck-doc"]);
    assert!(!r.ok, "the fake dnf exits 7");
    assert_eq!(
        calls(&fake).pop().unwrap()[1..],
        ["--nodocs", "remove", "ck-doc"]
    );
}

/// `--shim-dir` makes a link only in a directory nobody else can change,
/// never replaces another `dnf`, and is idempotent.
#[test]
fn shim_dir_is_refused_where_others_can_write() {
    let d = tempfile::tempdir_in(tmp()).unwrap();
    let shim = d.path().join("shim");
    shim_dir(&shim);
    shim_dir(&shim);
    assert_eq!(
        std::fs::read_link(shim.join("dnf")).unwrap(),
        Path::new(binary()).canonicalize().unwrap()
    );
    let open = mkdir(&d.path().join("open"));
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
    let r = run(cowkit().args(["dnf", "--shim-dir"]).arg(&open));
    assert!(!r.ok);
    assert!(
        r.stderr.contains("can be changed by others"),
        "{}",
        r.stderr
    );
    assert!(!open.join("dnf").exists());
    let under = open.join("sub");
    let r = run(cowkit().args(["dnf", "--shim-dir"]).arg(&under));
    assert!(!r.ok);
    assert!(
        r.stderr.contains("can be changed by others"),
        "{}",
        r.stderr
    );
    let other = mkdir(&d.path().join("other"));
    std::os::unix::fs::symlink("/usr/bin/dnf", other.join("dnf")).unwrap();
    let r = run(cowkit().args(["dnf", "--shim-dir"]).arg(&other));
    assert!(!r.ok);
    assert!(r.stderr.contains("not to cowkit"), "{}", r.stderr);
    let r = run(cowkit().args(["dnf", "--shim-dir", "relative"]));
    assert!(!r.ok);
    assert!(r.stderr.contains("not an absolute path"), "{}", r.stderr);
}

/// `rpm -qa` of a mkosi root (mkosi moves Debian's `~/.rpmdb` to
/// `/var/lib/rpm`), sorted.
fn rpm_qa(root: &Path) -> Vec<String> {
    let out = run_ok(
        Command::new("rpm")
            .arg(format!("--root={}", root.display()))
            .args([
                "--dbpath=/var/lib/rpm",
                "-qa",
                "--qf",
                "%{NEVRA} %{SIGMD5}\\n",
            ]),
        "rpm -qa",
    );
    let mut v: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// mkosi 14 (Debian bookworm) builds a Fedora root from a local repository
/// with plain dnf, and again with cowkit's `dnf` first on PATH, with the
/// same command line: the same packages (`rpm -qa`, `rpm -Va` clean) and
/// the same tree. The legitimate differences are left out: the rpm
/// database (install times; compared with rpm), dnf's history and logs
/// (`var/lib/dnf`, `var/log`: cowkit's dnf run only resolves and
/// downloads), and the times of files scriptlets write.
#[test]
fn mkosi_builds_the_same_root_through_cowkit() {
    let name = "mkosi_builds_the_same_root_through_cowkit";
    if !as_root(name, "mkosi builds as root") {
        return;
    }
    if Command::new("mkosi").arg("--version").output().is_err() {
        assert!(!required(), "{name} needs mkosi (`apt-get install mkosi`)");
        eprintln!("SKIPPED: {name} needs mkosi");
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let (repo, packages) = match std::env::var_os("COWKIT_MKOSI_REPO") {
        Some(r) => (
            PathBuf::from(r),
            std::env::var("COWKIT_MKOSI_PACKAGES")
                .expect("COWKIT_MKOSI_PACKAGES with COWKIT_MKOSI_REPO"),
        ),
        // The repository with the scriptlet shapes of Fedora's own
        // packages (Lua, triggers, a kernel): what image builders build.
        None => (
            cowkit_testutil::fedora::build(tmp()).v1,
            cowkit_testutil::fedora::INSTALL.join(" "),
        ),
    };
    // mkosi's configuration: a repository file (no GPG key: the test
    // packages are unsigned), only that repository, no base packages,
    // mkosi's default `--nodocs` (no `--with-docs`), the package database
    // kept for the comparison.
    let repos = mkdir(&d.join("repos.d"));
    std::fs::write(
        repos.join("local.repo"),
        format!(
            "[local]\nname=local\nbaseurl=file://{}\ngpgcheck=0\nenabled=1\n",
            repo.display()
        ),
    )
    .unwrap();
    let shim = shim_dir(&d.join("shim"));
    let build = |out: &Path, path: &std::ffi::OsStr| -> Run {
        let project = mkdir(&out.with_extension("project"));
        run(Command::new("mkosi")
            .current_dir(&project)
            .args([
                "--distribution",
                "fedora",
                "--release",
                "40",
                "--format",
                "directory",
            ])
            .arg("--output")
            .arg(out)
            .args(["--base-packages", "no", "--clean-package-metadata", "no"])
            .arg("--repository-directory")
            .arg(&repos)
            .args(["--repositories", "local", "--force"])
            .args(packages.split_whitespace().flat_map(|p| ["-p", p]))
            .arg("build")
            .env("PATH", path)
            .env("COWKIT_CACHE", d.join("cowkit-cache")))
    };
    let (plain, via) = (d.join("plain"), d.join("cowkit"));
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
        - 1;
    let r = build(&plain, &path_with(&[]));
    assert!(r.ok, "plain mkosi: {}", r.stderr);
    let r = build(&via, &path_with(&[&shim]));
    assert!(r.ok, "mkosi with cowkit's dnf: {}", r.stderr);
    assert!(
        r.stderr.contains("cache `"),
        "cowkit did not install:\n{}",
        r.stderr
    );

    let qa = rpm_qa(&plain);
    assert!(!qa.is_empty());
    assert_eq!(qa, rpm_qa(&via));
    let va = |root: &Path| {
        Command::new("rpm")
            .arg(format!("--root={}", root.display()))
            .args(["--dbpath=/var/lib/rpm", "-Va"])
            .output()
            .unwrap()
            .stdout
    };
    assert_eq!(va(&plain), va(&via), "rpm -Va");
    let files = |root: &Path| -> Tree {
        snapshot(root)
            .into_iter()
            .filter(|(p, _)| {
                let under = |pre: &str| p == pre || p.starts_with(&format!("{pre}/"));
                !(under("var/lib/rpm") || under("var/lib/dnf") || under("var/log"))
            })
            .collect()
    };
    let (tp, tv) = (files(&plain), files(&via));
    let d = diff(&tp, &tv, |e| (e.shape(), e.uid, e.gid, e.caps.clone()));
    assert!(d.is_empty(), "mkosi's roots differ:\n{d:#?}");
    assert_eq!(hardlink_groups(&tp), hardlink_groups(&tv));
    // Package files keep their packaged times; the rest (and package
    // files a scriptlet changed, such as /etc/group) has the time of the
    // build.
    let owned = run_ok(
        Command::new("rpm")
            .arg(format!("--root={}", plain.display()))
            .args(["--dbpath=/var/lib/rpm", "-qa", "--qf", "[%{FILENAMES}\\n]"]),
        "rpm -qa --qf FILENAMES",
    );
    for f in String::from_utf8(owned.stdout).unwrap().lines() {
        let rel = f.trim_start_matches('/');
        if let (Some(a), Some(b)) = (tp.get(rel), tv.get(rel)) {
            if a.kind != 'd' && a.mtime < started {
                assert_eq!(a.mtime, b.mtime, "{rel}: mtime");
            }
        }
    }
    // The database's file states (not installed, wrong color) agree.
    let states = |root: &Path| -> Vec<String> {
        let out = run_ok(
            Command::new("rpm")
                .arg(format!("--root={}", root.display()))
                .args(["--dbpath=/var/lib/rpm", "-qa", "--qf"])
                .arg("[%{=NEVRA} %{FILESTATES:fstate} %{FILENAMES}\\n]"),
            "rpm -qa --qf FILESTATES",
        );
        let mut v: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect();
        v.sort();
        v
    };
    // The scriptlet log (under `var/log`, left out of the trees) is the
    // same, byte for byte, where the repository writes one.
    let log = |root: &Path| std::fs::read(root.join("var/log/scriptlets.log")).ok();
    assert!(
        log(&plain) == log(&via),
        "the scriptlet logs differ\n--- mkosi ---\n{}\n--- through cowkit ---\n{}",
        String::from_utf8_lossy(&log(&plain).unwrap_or_default()),
        String::from_utf8_lossy(&log(&via).unwrap_or_default())
    );
    let sp = states(&plain);
    assert_eq!(sp, states(&via), "file states");
    if std::env::var_os("COWKIT_MKOSI_REPO").is_none() {
        // mkosi's default (no `--with-docs`) is dnf's `--nodocs`: the
        // `%doc` files of the Fedora-shaped repository are left out, the
        // `%license` ones installed; the multilib pair's losing file is
        // "wrong color".
        for line in [
            "cyrus-sasl-lib-2.1.28-1.fc40.x86_64 not installed /usr/share/doc/cyrus-sasl-lib/AUTHORS",
            "cyrus-sasl-lib-2.1.28-1.fc40.x86_64 normal /usr/share/licenses/cyrus-sasl-lib/COPYING",
            "cyrus-sasl-lib-2.1.28-1.fc40.i686 wrong color /usr/sbin/saslpasswd2",
            "bash-5.2.26-1.fc40.noarch not installed /usr/share/man/man1/bash.1.gz",
        ] {
            assert!(sp.iter().any(|l| l == line), "no `{line}` in\n{}", sp.join("\n"));
        }
    }
}
