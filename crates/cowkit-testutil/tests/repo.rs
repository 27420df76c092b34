//! The test repository of `cowkit_testutil::repo`, checked with the real
//! `dnf` and `rpm`: one `dnf install` of the top-level package, scriptlets
//! run chrooted by the packaged busybox, the `%pre` user owning files, an
//! upgrade with `.rpmnew` and `.rpmsave`, Lua scriptlets and file
//! triggers, a file conflict, removal, and `--downloadonly`.
//!
//! Needs root (rpm chroots into the root to run scriptlets), `dnf`,
//! `createrepo_c`, `rpmbuild`, `busybox-static` and `setcap`. Outside CI and
//! the rig a non-root run prints `SKIPPED`; in CI it fails.

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use cowkit_testutil::repo::{
    build_repo, dnf, installed, owner_mode, verify, EPOCH_V1, EXTRA, LOG, MAIN, NEW_IN_V2, TOP,
    UID, UPGRADED, USER,
};
use cowkit_testutil::tree::{caps_of, setcap_reference};
use cowkit_testutil::{required, run_ok};

fn work() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

/// Whether the test can run: as root. Not root: a failure in CI and
/// under the rig, a `SKIPPED` line elsewhere.
fn as_root(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    assert!(
        !required(),
        "{test} needs root (rpm chroots to run scriptlets)"
    );
    eprintln!("SKIPPED: {test} needs root");
    false
}

fn read(root: &Path, path: &str) -> String {
    let p = root.join(path);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn exists(root: &Path, path: &str) -> bool {
    root.join(path).symlink_metadata().is_ok()
}

fn log_lines(root: &Path) -> Vec<String> {
    read(root, LOG).lines().map(str::to_string).collect()
}

fn versions(names: &[&str], version: &str) -> BTreeMap<String, String> {
    names
        .iter()
        .map(|n| (n.to_string(), version.to_string()))
        .collect()
}

#[test]
fn the_packages_are_as_documented_and_built_reproducibly() {
    let t = Instant::now();
    let repo = build_repo(work());
    eprintln!("build_repo: {:.2?}", t.elapsed());
    assert_eq!(repo.top, TOP);
    assert_eq!(repo.v1.len(), MAIN.len() + EXTRA.len());
    assert_eq!(repo.v2.len(), UPGRADED.len() + 1);
    for p in repo.v1.iter().chain(&repo.v2) {
        assert!(p.is_file(), "{}", p.display());
    }
    for dir in [&repo.dir, &repo.upgrade_dir] {
        assert!(dir.join("repodata/repomd.xml").is_file());
    }
    let q = |p: &Path, qf: &str| {
        String::from_utf8(
            run_ok(
                Command::new("rpm").args(["-qp", "--qf", qf]).arg(p),
                "rpm -qp",
            )
            .stdout,
        )
        .unwrap()
    };
    for name in MAIN.iter().chain(&EXTRA) {
        let p = repo.rpm(name);
        assert_eq!(
            q(p, "%{NAME} %{VERSION} %{ARCH} %{BUILDTIME}"),
            format!("{name} 1 noarch {EPOCH_V1}")
        );
    }
    for name in UPGRADED {
        assert_eq!(
            q(repo.rpm_v2(name), "%{NAME} %{VERSION}"),
            format!("{name} 2")
        );
    }
    assert_eq!(q(repo.rpm("ck-lua"), "%{POSTINPROG}"), "<lua>");
    assert_eq!(
        q(repo.rpm("ck-trigger"), "%{FILETRIGGERNAME}"),
        "/usr/lib/ck"
    );
    assert_eq!(
        q(repo.rpm("ck-links"), "[%{FILENAMES} %{FILECAPS}\\n]")
            .lines()
            .find(|l| l.starts_with("/usr/share/ck-links/cap "))
            .unwrap(),
        "/usr/share/ck-links/cap cap_net_raw=ep"
    );

    // A second build in another directory makes the same bytes.
    let other = tempfile::tempdir_in(work()).unwrap();
    let t = Instant::now();
    let again = build_repo(other.path());
    eprintln!("build_repo again: {:.2?}", t.elapsed());
    for (a, b) in repo
        .v1
        .iter()
        .zip(&again.v1)
        .chain(repo.v2.iter().zip(&again.v2))
    {
        assert_eq!(
            std::fs::read(a).unwrap(),
            std::fs::read(b).unwrap(),
            "{}",
            a.display()
        );
    }
    for (a, b) in [
        (&repo.dir, &again.dir),
        (&repo.upgrade_dir, &again.upgrade_dir),
    ] {
        let (a, b) = (a.join("repodata"), b.join("repodata"));
        let names = |d: &Path| -> BTreeSet<_> {
            std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect()
        };
        assert_eq!(names(&a), names(&b), "{}", a.display());
        for n in names(&a) {
            assert_eq!(
                std::fs::read(a.join(&n)).unwrap(),
                std::fs::read(b.join(&n)).unwrap(),
                "{n:?}"
            );
        }
    }
}

#[test]
fn dnf_installs_upgrades_and_removes() {
    if !as_root("dnf_installs_upgrades_and_removes") {
        return;
    }
    let repo = build_repo(work());
    let tmp = tempfile::tempdir_in(work()).unwrap();
    let root = tmp.path().join("root");
    let cache = tmp.path().join("cache");

    // One transaction of the top-level name installs all of MAIN.
    let t = Instant::now();
    run_ok(
        dnf(&repo.dir, &root, &cache).args(["install", TOP]),
        "dnf install",
    );
    eprintln!("dnf install {TOP}: {:.2?}", t.elapsed());
    assert_eq!(installed(&root), versions(&MAIN, "1-1"));

    // The %pre user, and its files.
    let uid_line = format!("{USER}:x:{UID}:{UID}:");
    assert!(read(&root, "etc/passwd")
        .lines()
        .any(|l| l.starts_with(&uid_line)));
    assert!(read(&root, "etc/group")
        .lines()
        .any(|l| l == format!("{USER}:x:{UID}:")));
    assert_eq!(
        owner_mode(&root, "usr/share/ck-users/secret"),
        (UID, UID, 0o640)
    );
    assert_eq!(
        owner_mode(&root, "usr/share/ck-users/group-readable"),
        (0, UID, 0o644)
    );
    assert_eq!(owner_mode(&root, "var/lib/ck-users"), (UID, UID, 0o750));

    // The scriptlets ran, in this order, with these arguments.
    assert_eq!(
        log_lines(&root),
        [
            "ck-users-1 pre 1",
            "ck-scripts-1 pre 1",
            "ck-scripts-1 post 1",
            "ck-scripts-1 posttrans 1",
        ]
    );
    assert_eq!(read(&root, "var/lib/ck/post-ck-scripts"), "1\n");
    assert_eq!(read(&root, "var/lib/ck/posttrans-ck-scripts"), "1\n");

    // The skeleton and the special entries.
    assert_eq!(
        std::fs::read_link(root.join("bin")).unwrap(),
        Path::new("usr/bin")
    );
    assert_eq!(
        std::fs::read_link(root.join("usr/bin/sh")).unwrap(),
        Path::new("busybox")
    );
    assert_eq!(owner_mode(&root, "tmp"), (0, 0, 0o1777));
    let links = root.join("usr/share/ck-links");
    let ino = |n: &str| links.join(n).metadata().unwrap().ino();
    assert_eq!(ino("hl-a"), ino("hl-b"));
    assert_eq!(
        std::fs::read_link(links.join("sym")).unwrap(),
        Path::new("hl-a")
    );
    assert_eq!(links.join("empty").metadata().unwrap().len(), 0);
    assert!(links.join("emptydir").is_dir());
    assert_eq!(
        caps_of(&links.join("cap")),
        Some(setcap_reference(tmp.path()))
    );
    assert!(
        !exists(&root, "var/lib/ck-links/state"),
        "the %ghost is not made"
    );
    assert_eq!(
        root.join("usr/share/ck-data/blob.txt")
            .metadata()
            .unwrap()
            .len(),
        262_144
    );
    assert_eq!(
        root.join("usr/share/ck-data/blob.txt")
            .metadata()
            .unwrap()
            .mtime(),
        EPOCH_V1
    );

    // Only the %pre edits differ from the packages.
    assert_eq!(
        verify(&root),
        ["S.5....T.  c /etc/group", "S.5....T.  c /etc/passwd"]
    );

    // The upgrade: edited configs, a dropped file, a new dependency.
    for conf in ["app", "plain", "same"] {
        let p = root.join(format!("etc/ck/{conf}.conf"));
        let mut s = std::fs::read_to_string(&p).unwrap();
        s.push_str("edited\n");
        std::fs::write(&p, s).unwrap();
    }
    let t = Instant::now();
    run_ok(
        dnf(&repo.upgrade_dir, &root, &cache).arg("upgrade"),
        "dnf upgrade",
    );
    eprintln!("dnf upgrade: {:.2?}", t.elapsed());
    let mut want = versions(&MAIN, "1-1");
    want.extend(versions(&UPGRADED, "2-1"));
    want.insert(NEW_IN_V2.to_string(), "1-1".to_string());
    assert_eq!(installed(&root), want);
    assert_eq!(
        log_lines(&root)[4..],
        [
            "ck-scripts-2 pre 2",
            "ck-scripts-2 post 2",
            "ck-scripts-1 preun 1",
            "ck-scripts-1 postun 1",
            "ck-scripts-2 posttrans 2",
        ]
    );
    assert_eq!(read(&root, "etc/ck/app.conf"), "setting = 1\nedited\n");
    assert_eq!(read(&root, "etc/ck/app.conf.rpmnew"), "setting = 2\n");
    assert_eq!(read(&root, "etc/ck/plain.conf"), "plain = 2\n");
    assert_eq!(
        read(&root, "etc/ck/plain.conf.rpmsave"),
        "plain = 1\nedited\n"
    );
    assert_eq!(read(&root, "etc/ck/same.conf"), "same = 1\nedited\n");
    assert!(!exists(&root, "etc/ck/same.conf.rpmnew"));
    assert_eq!(read(&root, "usr/share/ck-drop/keep"), "keep 2\n");
    assert_eq!(read(&root, "usr/share/ck-drop/added"), "new in 2\n");
    assert!(!exists(&root, "usr/share/ck-drop/gone"));
    assert!(!exists(&root, "usr/share/ck-drop/olddir"));
    assert_eq!(
        verify(&root),
        [
            "S.5....T.  c /etc/ck/app.conf",
            "S.5....T.  c /etc/ck/same.conf",
            "S.5....T.  c /etc/group",
            "S.5....T.  c /etc/passwd",
        ]
    );

    // The packages nothing pulls in: a Lua scriptlet, a file trigger that
    // fires for the files already installed.
    run_ok(
        dnf(&repo.upgrade_dir, &root, &cache).args(["install", "ck-lua", "ck-trigger"]),
        "dnf install ck-lua ck-trigger",
    );
    assert_eq!(read(&root, "var/lib/ck/post-ck-lua"), "1\n");
    assert_eq!(log_lines(&root).last().unwrap(), "ck-lua-1 post 1");
    let triggered: BTreeSet<String> = read(&root, "var/lib/ck/filetrigger-ck-trigger")
        .lines()
        .map(str::to_string)
        .collect();
    let want: BTreeSet<String> = ["", "/lib1.txt", "/lib2.txt", "/lib3.txt", "/lib4.txt"]
        .iter()
        .map(|f| format!("/usr/lib/ck{f}"))
        .collect();
    assert_eq!(triggered, want);

    // Two packages with different content at one path.
    let out = dnf(&repo.dir, &root, &cache)
        .args(["install", "ck-conflict-a", "ck-conflict-b"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "installed both conflicting packages");
    assert!(
        stderr.contains("file /usr/share/ck-conflict/file conflicts between attempted installs"),
        "{stderr}"
    );
    assert!(!exists(&root, "usr/share/ck-conflict"));

    // Removal runs the version-2 %preun and %postun with 0; only what
    // requires the removed packages goes with them.
    run_ok(
        dnf(&repo.upgrade_dir, &root, &cache).args(["remove", "ck-scripts", "ck-lua"]),
        "dnf remove",
    );
    let lines = log_lines(&root);
    assert_eq!(
        lines[lines.len() - 3..],
        [
            "ck-scripts-2 preun 0",
            "ck-scripts-2 postun 0",
            "ck-lua-1 postun 0"
        ]
    );
    let now = installed(&root);
    // MAIN, ck-lib4, ck-lua and ck-trigger, less ck-scripts, ck-lua and
    // ck-suite.
    assert_eq!(now.len(), MAIN.len() + 3 - 3, "{now:?}");
    for gone in ["ck-scripts", "ck-lua", TOP] {
        assert!(!now.contains_key(gone), "{gone} is still installed");
    }
    assert!(!exists(&root, "usr/share/ck-scripts"));
}

#[test]
fn dnf_downloadonly_with_installroot_downloads_and_installs_nothing() {
    if !as_root("dnf_downloadonly_with_installroot_downloads_and_installs_nothing") {
        return;
    }
    let repo = build_repo(work());
    let tmp = tempfile::tempdir_in(work()).unwrap();
    let (root, down) = (tmp.path().join("root"), tmp.path().join("down"));
    let t = Instant::now();
    run_ok(
        dnf(&repo.dir, &root, &tmp.path().join("cache"))
            .args(["install", "--downloadonly", "--downloaddir"])
            .arg(&down)
            .arg(TOP),
        "dnf install --downloadonly",
    );
    eprintln!("dnf install --downloadonly: {:.2?}", t.elapsed());
    let got: BTreeSet<String> = std::fs::read_dir(&down)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let want: BTreeSet<String> = MAIN.iter().map(|n| format!("{n}-1-1.noarch.rpm")).collect();
    assert_eq!(got, want);
    for name in MAIN {
        let f = down.join(format!("{name}-1-1.noarch.rpm"));
        assert_eq!(
            std::fs::read(&f).unwrap(),
            std::fs::read(repo.rpm(name)).unwrap()
        );
    }
    assert!(installed(&root).is_empty());
    assert!(!exists(&root, "usr"), "nothing was installed");
}
