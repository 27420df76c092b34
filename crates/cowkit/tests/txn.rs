//! `cowkit install` as an rpm transaction, against the real `dnf` and
//! `rpm` on the test repository of `cowkit_testutil::repo`: the same
//! packages, database, trees and scriptlet effects as `dnf --installroot`,
//! upgrades with config files, removal and upgrade by rpm and dnf
//! afterwards, and the refusals (Lua, triggers, conflicts, dependencies,
//! packages already installed), a failing `%pre` and a full disk.
//!
//! Needs root (scriptlets are run chrooted) and the rig's filesystems.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{as_root, cowkit, cowkit_dnf, run, tmp, Run};
use cowkit_testutil::repo::{
    build_repo, dbpath, dnf, installed, owner_mode, rpm_in, verify, TestRepo, EPOCH_V2, LOG, MAIN,
    UID,
};
use cowkit_testutil::rpm::rpmbuild;
use cowkit_testutil::tree::{diff, hardlink_groups, mkdir, snapshot, Tree};
use cowkit_testutil::{run_ok, scratch, Fs};

/// `cowkit install --root ROOT --dbpath` (the database `dnf` and
/// [`rpm_in`] use on this host, so that both sides compare) `ARGS…`.
fn install(root: &Path, args: &[&str], pkgs: &[PathBuf]) -> Run {
    run(cowkit()
        .arg("install")
        .arg("--root")
        .arg(root)
        .arg("--dbpath")
        .arg(dbpath())
        .args(args)
        .args(pkgs))
}

/// Transcode `pkgs` into `dir` (next to the roots: same filesystem, so
/// installs clone).
fn transcode_all(pkgs: &[&Path], dir: &Path) -> Vec<PathBuf> {
    mkdir(dir);
    pkgs.iter()
        .map(|p| {
            let out = dir.join(p.file_name().unwrap()).with_extension("rpme");
            let r = run(cowkit().arg("transcode").arg(p).arg("-o").arg(&out));
            assert!(r.ok, "transcode {}: {}", p.display(), r.stderr);
            out
        })
        .collect()
}

/// What dnf and cowkit both leave that belongs to neither the packages
/// nor their scriptlets: the databases, dnf's own state and logs, and the
/// copy of dnf's cache path dnf makes inside the root.
fn comparable(tree: Tree, cache: &Path) -> Tree {
    let cache_rel = cache.to_str().unwrap().trim_start_matches('/').to_string();
    let db = dbpath().trim_start_matches('/').to_string();
    let skip = |p: &str| {
        let first = |pre: &str| p == pre || p.starts_with(&format!("{pre}/"));
        first(&db)
            || first("var/lib/dnf")
            || first("var/log")
            // dnf's module state: `cowkit install` has none to make
            // (`cowkit dnf`'s is compared by fedora_roots and dnf_entry).
            || first("etc/dnf")
            || first("var/cache")
            || first(&cache_rel)
            // Parents of the above that only they created.
            || (cache_rel.starts_with(&format!("{p}/")))
            || (db.starts_with(&format!("{p}/")))
    };
    tree.into_iter().filter(|(p, _)| !skip(p)).collect()
}

/// The two roots agree on everything rpm decides: types, modes, content,
/// link targets, owners, caps, file mtimes (directories' differ: rpm and
/// dnf make unowned parents at their own pace), hardlinks.
fn assert_same_trees(a: &Path, b: &Path, cache: &Path, what: &str) {
    let ta = comparable(snapshot(a), cache);
    let tb = comparable(snapshot(b), cache);
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
    assert!(
        d.is_empty(),
        "{what}: dnf's and cowkit's roots differ:\n{d:#?}"
    );
    assert_eq!(
        hardlink_groups(&ta),
        hardlink_groups(&tb),
        "{what}: hardlinks"
    );
}

fn log(root: &Path) -> String {
    std::fs::read_to_string(root.join(LOG)).unwrap_or_default()
}

fn main_packages(repo: &TestRepo) -> Vec<&Path> {
    MAIN.iter().map(|n| repo.rpm(n)).collect()
}

fn edit_configs(root: &Path) {
    for f in ["etc/ck/app.conf", "etc/ck/plain.conf", "etc/ck/same.conf"] {
        let p = root.join(f);
        let mut s = std::fs::read_to_string(&p).unwrap();
        s.push_str("edited by the user\n");
        std::fs::write(&p, s).unwrap();
    }
}

fn same_as_dnf_on(fs: Fs) {
    let Some(dir) = scratch(fs) else { return };
    let repo = build_repo(tmp());
    let d = dir.path();
    let (a, b) = (mkdir(&d.join("dnf")), mkdir(&d.join("cowkit")));
    let cache = d.join("dnf-cache");

    // Version 1: dnf resolves and installs; cowkit installs the same
    // packages, transcoded.
    run_ok(
        dnf(&repo.dir, &a, &cache).args(["install", repo.top]),
        "dnf install",
    );
    let rpme = transcode_all(&main_packages(&repo), &d.join("rpme"));
    let r = install(&b, &["--json"], &rpme);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["registered"], MAIN.len(), "{j}");
    assert_eq!(j["failed"], serde_json::json!([]), "{j}");
    assert!(j["files_by_method"]["clone"].as_u64().unwrap() > 0, "{j}");
    assert_eq!(j["db"]["source"]["from"], "option", "{j}");

    assert_eq!(installed(&a), installed(&b));
    assert_eq!(verify(&a), verify(&b));
    assert_same_trees(&a, &b, &cache, "after install");
    assert_eq!(log(&a), log(&b), "scriptlets");
    assert!(!log(&b).is_empty());
    // The %pre user owns its files.
    let (uid, _, _) = owner_mode(&b, "usr/share/ck-users/secret");
    assert_eq!(uid, UID);

    // Version 2 over files the user edited: same .rpmnew/.rpmsave, same
    // removed files, same scriptlets with the same $1.
    edit_configs(&a);
    edit_configs(&b);
    run_ok(
        dnf(&repo.upgrade_dir, &a, &cache).args(["upgrade"]),
        "dnf upgrade",
    );
    // rpm itself upgrades one package cowkit installed; cowkit the rest.
    run_ok(
        rpm_in(&b)
            .args(["-U", "--nodeps"])
            .arg(repo.rpm_v2("ck-data")),
        "rpm -U",
    );
    let v2: Vec<&Path> = repo
        .v2
        .iter()
        .map(PathBuf::as_path)
        .filter(|p| !p.to_string_lossy().contains("/ck-data-"))
        .collect();
    let rpme2 = transcode_all(&v2, &d.join("rpme2"));
    let r = install(&b, &["--json"], &rpme2);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["db"]["source"]["from"], "option", "{j}");
    let actions: BTreeSet<String> = j["config"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{} {}",
                c["path"].as_str().unwrap(),
                c["action"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        actions,
        BTreeSet::from([
            "/etc/ck/app.conf rpmnew".to_string(),
            "/etc/ck/plain.conf rpmsave".to_string(),
            "/etc/ck/same.conf kept".to_string(),
        ]),
        "{j}"
    );
    assert!(j["old_files_removed"].as_u64().unwrap() > 0, "{j}");
    assert_eq!(installed(&a), installed(&b));
    assert_eq!(verify(&a), verify(&b));
    assert_same_trees(&a, &b, &cache, "after upgrade");
    assert_eq!(log(&a), log(&b), "scriptlets");

    // rpm and dnf work on what cowkit installed: dnf sees every package,
    // rpm removes one (running its %preun/%postun with 0), dnf another.
    let listed = run_ok(
        dnf(&repo.upgrade_dir, &b, &cache).args(["list", "--installed"]),
        "dnf list --installed",
    );
    let listed = String::from_utf8_lossy(&listed.stdout).into_owned();
    for n in MAIN {
        assert!(
            listed.contains(&format!("{n}.noarch")),
            "{n} not in\n{listed}"
        );
    }
    run_ok(rpm_in(&b).args(["-e", "--nodeps", "ck-scripts"]), "rpm -e");
    assert!(log(&b).contains("ck-scripts-2 preun 0"), "{}", log(&b));
    assert!(!b.join("usr/share/ck-scripts").exists());
    run_ok(
        dnf(&repo.upgrade_dir, &b, &cache).args(["remove", "ck-doc"]),
        "dnf remove",
    );
    assert!(!installed(&b).contains_key("ck-doc"));
    assert_eq!(verify(&b), verify_expected_after_edits());
}

/// `rpm -Va` after the edits: the config files the user changed (and the
/// %pre that edited passwd and group), nothing else.
fn verify_expected_after_edits() -> Vec<String> {
    let mut v: Vec<String> = [
        "S.5....T.  c /etc/ck/app.conf",
        "S.5....T.  c /etc/ck/same.conf",
        "S.5....T.  c /etc/group",
        "S.5....T.  c /etc/passwd",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    v.sort();
    v
}

#[test]
fn same_as_dnf_on_xfs() {
    if as_root("same_as_dnf_on_xfs", "scriptlets run chrooted") {
        same_as_dnf_on(Fs::Xfs);
    }
}

#[test]
fn same_as_dnf_on_btrfs() {
    if as_root("same_as_dnf_on_btrfs", "scriptlets run chrooted") {
        same_as_dnf_on(Fs::Btrfs);
    }
}

/// A root with the version-1 packages installed by cowkit.
fn base_root(d: &Path, repo: &TestRepo) -> PathBuf {
    let root = mkdir(&d.join("root"));
    let pkgs: Vec<PathBuf> = main_packages(repo)
        .iter()
        .map(|p| p.to_path_buf())
        .collect();
    let r = install(&root, &[], &pkgs);
    assert!(r.ok, "{}", r.stderr);
    root
}

/// Refused before the root is touched: same tree, same database.
fn assert_refused(root: &Path, r: &Run, says: &[&str]) {
    assert!(!r.ok, "exit status 0");
    for s in says {
        assert!(r.stderr.contains(s), "`{s}` not in:\n{}", r.stderr);
    }
    assert!(r.stderr.contains("hint:"), "{}", r.stderr);
    let _ = root;
}

#[test]
fn what_cannot_run_as_rpm_would_is_refused_up_front() {
    if !as_root(
        "what_cannot_run_as_rpm_would_is_refused_up_front",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let root = base_root(dir.path(), &repo);
    // The tree but the database (whose sqlite shared-memory file changes
    // when rpm only reads it); the database is compared by its content.
    let db = dbpath().trim_start_matches('/').to_string();
    let files = |r: &Path| -> Tree {
        snapshot(r)
            .into_iter()
            .filter(|(p, _)| *p != db && !p.starts_with(&format!("{db}/")))
            .collect()
    };
    let before = (files(&root), installed(&root));
    let untouched = |what: &str| {
        let d = diff(&before.0, &files(&root), |e| {
            (e.shape(), e.uid, e.gid, e.mtime)
        });
        assert!(d.is_empty(), "{what}: the tree changed: {d:#?}");
        assert_eq!(installed(&root), before.1, "{what}: the database changed");
    };

    // A Lua scriptlet where rpm's Lua cannot be loaded: named with its
    // package and scriptlet, and why.
    let lua = repo.rpm("ck-lua").to_path_buf();
    let r = run(cowkit()
        .env("COWKIT_RPMLUA", "off")
        .arg("install")
        .arg("--root")
        .arg(&root)
        .arg("--dbpath")
        .arg(dbpath())
        .arg(&lua));
    assert_refused(
        &root,
        &r,
        &["%post(ck-lua-1-1.noarch)", "<lua>", "librpmio"],
    );
    untouched("lua");
    // Two packages that own one file with different content.
    let (ca, cb) = (
        repo.rpm("ck-conflict-a").to_path_buf(),
        repo.rpm("ck-conflict-b").to_path_buf(),
    );
    let r = install(&root, &[], &[ca.clone(), cb.clone()]);
    assert_refused(&root, &r, &["conflicts between attempted installs"]);
    untouched("conflict in the transaction");
    // A package already installed.
    let vi = repo.rpm("ck-vi").to_path_buf();
    let r = install(&root, &[], std::slice::from_ref(&vi));
    assert_refused(&root, &r, &["ck-vi-1-1.noarch is already installed"]);
    untouched("already installed");
    // Missing dependencies, in an empty root.
    let empty = mkdir(&dir.path().join("empty"));
    let app = repo.rpm("ck-app").to_path_buf();
    let r = install(&empty, &[], std::slice::from_ref(&app));
    assert_refused(&empty, &r, &["is needed by ck-app-1-1.noarch", "--nodeps"]);
    assert_eq!(snapshot(&empty), Tree::new(), "the empty root was touched");
    // A conflict within the transaction, into a new root whose `usr/share`
    // exists: the files are placed while rpm checks (new directories under
    // temporary names), and nothing of them is left when it refuses. The
    // same with the check first.
    for extra in [&["--nodeps"][..], &["--nodeps", "--check-first"][..]] {
        let fresh = mkdir(&dir.path().join("fresh"));
        mkdir(&fresh.join("usr/share"));
        let before = snapshot(&fresh);
        let r = install(&fresh, extra, &[ca.clone(), cb.clone()]);
        assert_refused(&fresh, &r, &["conflicts between attempted installs"]);
        assert!(!r.stderr.contains("not placed"), "{}", r.stderr);
        // (The existing `usr/share` held the temporary tree for a while:
        // its mtime may change, nothing else.)
        let d = diff(&before, &snapshot(&fresh), |e| (e.shape(), e.uid, e.gid));
        assert!(d.is_empty(), "{extra:?}: the new root changed: {d:#?}");
        std::fs::remove_dir_all(&fresh).unwrap();
    }
    // --test: the plan, nothing changed.
    let r = install(&root, &["--test"], std::slice::from_ref(&ca));
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stderr.contains("ck-conflict-a-1-1.noarch"),
        "{}",
        r.stderr
    );
    untouched("--test");

    // With --noscripts the Lua package installs; a conflict with an
    // installed package is refused, and allowed by --replacefiles.
    let r = install(&root, &["--noscripts"], &[lua]);
    assert!(r.ok, "{}", r.stderr);
    assert!(installed(&root).contains_key("ck-lua"));
    let r = install(&root, &[], std::slice::from_ref(&ca));
    assert!(r.ok, "{}", r.stderr);
    let r = install(&root, &[], std::slice::from_ref(&cb));
    assert_refused(
        &root,
        &r,
        &["conflicts with file from package ck-conflict-a"],
    );
    let r = install(&root, &["--replacefiles"], std::slice::from_ref(&cb));
    assert!(r.ok, "{}", r.stderr);
    assert!(installed(&root).contains_key("ck-conflict-b"));
}

/// A package whose `%pre` fails: none of its files is placed, it is not
/// registered, the others are, and the exit status says so.
#[test]
fn a_failing_pre_stops_its_package_only() {
    if !as_root(
        "a_failing_pre_stops_its_package_only",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let bad = dir.path().join("ck-prefail-1-1.noarch.rpm");
    rpmbuild(
        "Name: ck-prefail\nVersion: 1\nRelease: 1\nSummary: x\nLicense: MIT\nBuildArch: noarch\n\
         %description\nx\n%install\nmkdir -p %{buildroot}/usr/share/ck-prefail\n\
         echo data > %{buildroot}/usr/share/ck-prefail/file\n\
         %pre\necho 'ck-prefail refuses' >&2\nexit 3\n\
         %files\n/usr/share/ck-prefail\n",
        "w9.gzdio",
        &bad,
    );
    let root = mkdir(&dir.path().join("root"));
    let mut pkgs: Vec<PathBuf> = main_packages(&repo)
        .iter()
        .map(|p| p.to_path_buf())
        .collect();
    pkgs.push(bad.clone());
    let r = install(&root, &["--json"], &pkgs);
    assert!(!r.ok, "exit status 0");
    assert!(r.stderr.contains("ck-prefail refuses"), "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["registered"], MAIN.len(), "{j}");
    let failed = j["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{j}");
    assert_eq!(failed[0]["nevra"], "ck-prefail-1-1.noarch", "{j}");
    assert!(
        failed[0]["error"]
            .to_string()
            .contains("%pre scriptlet failed"),
        "{j}"
    );
    assert!(!root.join("usr/share/ck-prefail").exists());
    assert!(!installed(&root).contains_key("ck-prefail"));
    assert_eq!(
        verify(&root),
        ["S.5....T.  c /etc/group", "S.5....T.  c /etc/passwd"]
    );
}

/// rpm's own disk-space check refuses a transaction that cannot fit
/// before anything is touched. When the disk fills up in the middle (here
/// a `%post` eats the space), the package being placed fails and leaves no
/// file under a final name and is not registered; the packages placed
/// before and after it are registered and verify clean.
#[test]
fn a_full_disk_fails_one_package_and_the_database_agrees() {
    if !as_root(
        "a_full_disk_fails_one_package_and_the_database_agrees",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let spec = |name: &str, extra: &str, mib: u32| {
        format!(
            "Name: {name}\nVersion: 1\nRelease: 1\nSummary: x\nLicense: MIT\nBuildArch: noarch\n{extra}\n\
             %description\nx\n%install\nmkdir -p %{{buildroot}}/usr/share/{name}\n\
             yes cowkit | head -c {} > %{{buildroot}}/usr/share/{name}/file\n\
             %files\n/usr/share/{name}\n",
            mib << 20
        )
    };
    let pkg = |name: &str, extra: &str, mib: u32| {
        let p = dir.path().join(format!("{name}-1-1.noarch.rpm"));
        rpmbuild(&spec(name, extra, mib), "w9.gzdio", &p);
        p
    };
    let huge = pkg("ck-huge", "", 12);
    // Fills the disk from its %post; ck-big comes after it.
    let filler = pkg(
        "ck-filler",
        "Requires(post): ck-busybox\n%post\ncat /usr/bin/busybox /usr/bin/busybox > /var/tmp/fill\n",
        0,
    );
    let big = pkg("ck-big", "Requires: ck-filler", 2);

    let root = mkdir(&dir.path().join("root"));
    run_ok(
        Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8m", "cowkit-full"])
            .arg(&root),
        "mount tmpfs",
    );
    struct Umount(PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Umount(root.clone());
    let main: Vec<PathBuf> = main_packages(&repo)
        .iter()
        .map(|p| p.to_path_buf())
        .collect();

    let mut pkgs = main.clone();
    pkgs.push(huge);
    let r = install(&root, &["--json"], &pkgs);
    assert!(!r.ok, "exit status 0");
    let j = r.json();
    assert!(j["error"].to_string().contains("needs"), "{j}");
    assert!(j["error"].to_string().contains("more space"), "{j}");
    assert_eq!(snapshot(&root), Tree::new(), "the root was touched");

    let mut pkgs = main;
    pkgs.push(filler);
    pkgs.push(big);
    let r = install(&root, &["--json", "-j", "1"], &pkgs);
    assert!(!r.ok, "exit status 0");
    let j = r.json();
    let failed = j["failed"]
        .as_array()
        .unwrap_or_else(|| panic!("{j}\n{}", r.stderr));
    assert_eq!(failed.len(), 1, "{j}");
    assert_eq!(failed[0]["nevra"], "ck-big-1-1.noarch", "{j}");
    assert!(
        failed[0]["error"].to_string().contains("No space left"),
        "{j}"
    );
    assert_eq!(j["registered"], MAIN.len() + 1, "{j}");
    assert!(!installed(&root).contains_key("ck-big"));
    assert!(installed(&root).contains_key("ck-filler"));
    assert!(!root.join("usr/share/ck-big/file").exists());
    assert_eq!(
        cowkit_testutil::tree::temporary_names(&root),
        Vec::<String>::new(),
        "temporary files left"
    );
    assert_eq!(
        verify(&root),
        ["S.5....T.  c /etc/group", "S.5....T.  c /etc/passwd"]
    );
}

/// dnf resolves and downloads, cowkit transcodes into its cache and
/// installs: the same root as plain dnf; a second build clones from the
/// cache without transcoding; a damaged cache entry is found, reported and
/// replaced; upgrades and removals through `cowkit dnf` work.
#[test]
fn cowkit_dnf_builds_what_dnf_builds_and_caches_transcodes() {
    if !as_root(
        "cowkit_dnf_builds_what_dnf_builds_and_caches_transcodes",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let d = dir.path();
    let (a, b, c) = (
        mkdir(&d.join("dnf")),
        mkdir(&d.join("cowkit")),
        mkdir(&d.join("cowkit-warm")),
    );
    let dnf_cache = d.join("dnf-cache");
    let ck_cache = d.join("cowkit-cache");
    run_ok(
        dnf(&repo.dir, &a, &dnf_cache).args(["install", repo.top]),
        "dnf install",
    );

    // Cold: everything transcoded, installed by cloning from the cache.
    let r = cowkit_dnf(&repo.dir, &b, &dnf_cache, &ck_cache, &["install", repo.top]);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["downloaded"], MAIN.len(), "{j}");
    assert_eq!(j["cache_misses"], MAIN.len(), "{j}");
    assert_eq!(j["cache_hits"], 0, "{j}");
    assert_eq!(j["registered"], MAIN.len(), "{j}");
    assert!(j["files_by_method"]["clone"].as_u64().unwrap() > 0, "{j}");
    assert_eq!(installed(&a), installed(&b));
    assert_eq!(verify(&a), verify(&b));
    assert_same_trees(&a, &b, &dnf_cache, "cowkit dnf install");
    assert_eq!(log(&a), log(&b), "scriptlets");

    // Warm: no transcoding.
    let r = cowkit_dnf(&repo.dir, &c, &dnf_cache, &ck_cache, &["install", repo.top]);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["cache_hits"], MAIN.len(), "{j}");
    assert_eq!(j["cache_misses"], 0, "{j}");
    assert_same_trees(&b, &c, &dnf_cache, "warm cache");

    // A damaged entry (one header byte): found, reported, transcoded again.
    let entries: Vec<PathBuf> = cowkit_testutil::tree::regular_files(&ck_cache.join("rpme"))
        .into_iter()
        .map(|p| ck_cache.join("rpme").join(p))
        .collect();
    assert_eq!(entries.len(), MAIN.len(), "{entries:?}");
    let victim = &entries[0];
    let mut bytes = std::fs::read(victim).unwrap();
    let (start, end) = cowkit_testutil::rpm::header_range(&bytes);
    bytes[(start + end) / 2] ^= 0x40;
    std::fs::write(victim, &bytes).unwrap();
    let e = mkdir(&d.join("cowkit-damaged"));
    let r = cowkit_dnf(&repo.dir, &e, &dnf_cache, &ck_cache, &["install", repo.top]);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["cache_misses"], 1, "{j}");
    assert_eq!(j["cache_damaged"].as_array().unwrap().len(), 1, "{j}");
    assert_ne!(
        std::fs::read(victim).unwrap(),
        bytes,
        "the entry was not replaced"
    );
    assert_same_trees(&b, &e, &dnf_cache, "after a damaged cache entry");

    // Upgrade and removal through cowkit dnf, as plain dnf does them.
    edit_configs(&a);
    edit_configs(&b);
    run_ok(
        dnf(&repo.upgrade_dir, &a, &dnf_cache).args(["upgrade"]),
        "dnf upgrade",
    );
    let r = cowkit_dnf(&repo.upgrade_dir, &b, &dnf_cache, &ck_cache, &["upgrade"]);
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(installed(&a), installed(&b));
    assert_eq!(verify(&a), verify(&b));
    assert_same_trees(&a, &b, &dnf_cache, "cowkit dnf upgrade");
    assert_eq!(log(&a), log(&b), "scriptlets");
    let r = cowkit_dnf(
        &repo.upgrade_dir,
        &b,
        &dnf_cache,
        &ck_cache,
        &["remove", "ck-doc"],
    );
    assert!(r.ok, "{}", r.stderr);
    assert!(!installed(&b).contains_key("ck-doc"));
}

/// `tsflags` in dnf's configuration file count as on the command line:
/// `justdb` registers without placing, as plain dnf does; a flag cowkit
/// does not carry out (`noscripts`) is refused by name before the root
/// is touched.
#[test]
fn tsflags_in_dnf_conf_are_honoured_or_refused() {
    if !as_root(
        "tsflags_in_dnf_conf_are_honoured_or_refused",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let d = dir.path();
    let (a, b, c) = (
        mkdir(&d.join("dnf")),
        mkdir(&d.join("cowkit")),
        mkdir(&d.join("refused")),
    );
    let dnf_cache = d.join("dnf-cache");
    let ck_cache = d.join("cowkit-cache");
    let conf = |name: &str, flags: &str| -> String {
        let path = d.join(name);
        std::fs::write(&path, format!("[main]\ntsflags={flags}\n")).unwrap();
        format!("--config={}", path.display())
    };
    let justdb = conf("justdb.conf", "justdb");
    run_ok(
        dnf(&repo.dir, &a, &dnf_cache).args([justdb.as_str(), "install", repo.top]),
        "dnf install with tsflags=justdb in dnf.conf",
    );
    let r = cowkit_dnf(
        &repo.dir,
        &b,
        &dnf_cache,
        &ck_cache,
        &[justdb.as_str(), "install", repo.top],
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(installed(&a), installed(&b));
    assert!(!installed(&b).is_empty());
    assert_eq!(verify(&a), verify(&b));
    assert_same_trees(&a, &b, &dnf_cache, "tsflags=justdb in dnf.conf");

    let noscripts = conf("noscripts.conf", "nodocs,noscripts");
    let r = cowkit_dnf(
        &repo.dir,
        &c,
        &dnf_cache,
        &ck_cache,
        &[noscripts.as_str(), "install", repo.top],
    );
    assert!(!r.ok);
    assert!(
        r.stderr.contains("`tsflags=noscripts`"),
        "the flag is not named: {}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_dir(&c).unwrap().count(),
        0,
        "the root was touched"
    );
}

/// A package file given on dnf's command line (dnf's `@commandline`
/// repository) installs through `cowkit dnf` as through plain dnf, beside
/// packages of a repository.
#[test]
fn cowkit_dnf_installs_package_files_given_on_the_command_line() {
    if !as_root(
        "cowkit_dnf_installs_package_files_given_on_the_command_line",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let d = dir.path();
    let (a, b) = (mkdir(&d.join("dnf")), mkdir(&d.join("cowkit")));
    let dnf_cache = d.join("dnf-cache");
    let ck_cache = d.join("cowkit-cache");
    let local = d.join("ck-local-1-1.noarch.rpm");
    rpmbuild(
        "Name: ck-local\nVersion: 1\nRelease: 1\nSummary: x\nLicense: MIT\nBuildArch: noarch\n\
         %description\nx\n%install\nmkdir -p %{buildroot}/usr/share/ck-local\n\
         echo local > %{buildroot}/usr/share/ck-local/file\n\
         %files\n/usr/share/ck-local\n",
        "w9.gzdio",
        &local,
    );
    let file = local.to_str().unwrap();
    run_ok(
        dnf(&repo.dir, &a, &dnf_cache).args(["install", repo.top, file]),
        "dnf install",
    );
    let r = cowkit_dnf(
        &repo.dir,
        &b,
        &dnf_cache,
        &ck_cache,
        &["install", repo.top, file],
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(installed(&a), installed(&b));
    assert!(installed(&b).contains_key("ck-local"));
    assert_eq!(verify(&a), verify(&b));
    assert_same_trees(&a, &b, &dnf_cache, "with a package file");
    assert_eq!(log(&a), log(&b), "scriptlets");
}

/// A `cowkit dnf upgrade` killed after placing its files leaves its
/// journal; the next `cowkit dnf` finishes that transaction before dnf
/// reads the database (the root's options are asked of rpm only then), and
/// the root ends as plain dnf's upgrade leaves it.
#[test]
fn a_killed_cowkit_dnf_upgrade_is_finished_before_dnf_reads_the_database() {
    if !as_root(
        "a_killed_cowkit_dnf_upgrade_is_finished_before_dnf_reads_the_database",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let d = dir.path();
    let (a, b) = (mkdir(&d.join("dnf")), mkdir(&d.join("cowkit")));
    let dnf_cache = d.join("dnf-cache");
    let ck_cache = d.join("cowkit-cache");
    run_ok(
        dnf(&repo.dir, &a, &dnf_cache).args(["install", repo.top]),
        "dnf install",
    );
    let r = cowkit_dnf(&repo.dir, &b, &dnf_cache, &ck_cache, &["install", repo.top]);
    assert!(r.ok, "{}", r.stderr);
    run_ok(
        dnf(&repo.upgrade_dir, &a, &dnf_cache).args(["upgrade"]),
        "dnf upgrade",
    );
    let journal = b
        .join(dbpath().trim_start_matches('/'))
        .join("cowkit-journal");
    let killed = run(cowkit()
        .env("COWKIT_TXN_CRASH_AT", "placed")
        .args(["dnf", "--json", "--root"])
        .arg(&b)
        .arg("--cache")
        .arg(&ck_cache)
        .arg("--dbpath")
        .arg(dbpath())
        .arg("--")
        .args(common::dnf_args(&repo.upgrade_dir, &b, &dnf_cache))
        .arg("upgrade"));
    assert!(!killed.ok, "not killed: {}", killed.stderr);
    assert!(journal.exists(), "no journal after the kill");
    let r = cowkit_dnf(&repo.upgrade_dir, &b, &dnf_cache, &ck_cache, &["upgrade"]);
    assert!(r.ok, "{}", r.stderr);
    assert!(
        r.stderr.contains("holds a transaction a killed run left"),
        "the journal was not finished first: {}",
        r.stderr
    );
    assert!(!journal.exists());
    assert_eq!(installed(&a), installed(&b));
    assert_eq!(verify(&a), verify(&b));
}

/// `dnf downgrade` and `dnf reinstall` (with scriptlets and edited
/// config files) and `--setopt=tsflags=justdb` through `cowkit dnf`: the
/// same roots, databases, `rpm -Va` and scriptlet logs as plain dnf.
#[test]
fn cowkit_dnf_downgrades_and_reinstalls_as_dnf_does() {
    if !as_root(
        "cowkit_dnf_downgrades_and_reinstalls_as_dnf_does",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let d = dir.path();
    let (a, b) = (mkdir(&d.join("dnf")), mkdir(&d.join("cowkit")));
    let dnf_cache = d.join("dnf-cache");
    let ck_cache = d.join("cowkit-cache");
    let both = |repo_dir: &Path, cmd: &[&str], what: &str| {
        run_ok(
            dnf(repo_dir, &a, &dnf_cache).args(cmd),
            &format!("dnf {what}"),
        );
        let r = cowkit_dnf(repo_dir, &b, &dnf_cache, &ck_cache, cmd);
        assert!(r.ok, "cowkit dnf {what}: {}", r.stderr);
        assert_eq!(installed(&a), installed(&b), "{what}");
        assert_eq!(verify(&a), verify(&b), "{what}");
        assert_same_trees(&a, &b, &dnf_cache, &format!("cowkit dnf {what}"));
        assert_eq!(log(&a), log(&b), "scriptlets of {what}");
        r
    };
    both(&repo.dir, &["install", repo.top], "install");
    both(&repo.upgrade_dir, &["upgrade"], "upgrade");
    edit_configs(&a);
    edit_configs(&b);
    // Version 2 back to 1: scriptlets with the downgrade's arguments, the
    // edited config files kept or saved as rpm decides.
    let r = both(
        &repo.upgrade_dir,
        &["downgrade", "ck-scripts", "ck-config"],
        "downgrade",
    );
    assert_eq!(
        r.json()["upgraded"].as_array().unwrap().len(),
        2,
        "{}",
        r.json()
    );
    assert_eq!(installed(&b)["ck-scripts"], installed(&b)["ck-filesystem"]);
    // The same version again, over a removed file.
    std::fs::remove_file(a.join("usr/share/ck-scripts/version")).unwrap();
    std::fs::remove_file(b.join("usr/share/ck-scripts/version")).unwrap();
    both(
        &repo.upgrade_dir,
        &["reinstall", "ck-scripts", "ck-config"],
        "reinstall",
    );
    assert!(b.join("usr/share/ck-scripts/version").exists());
    // Only the database: the files of the package are not placed.
    let r = both(
        &repo.upgrade_dir,
        &["--setopt=tsflags=justdb", "install", "ck-lua"],
        "install with tsflags=justdb",
    );
    assert_eq!(r.json()["files"], 0, "{}", r.json());
    assert!(installed(&b).contains_key("ck-lua"));
}

/// Config files that exist, owned by no package, when a package brings
/// them: the same `.rpmnew`/`.rpmorig` as `rpm -U`, with rpm's words.
#[test]
fn unowned_config_files_are_kept_aside_as_rpm_does() {
    if !as_root(
        "unowned_config_files_are_kept_aside_as_rpm_does",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let pkg = repo.rpm("ck-config").to_path_buf();
    let prepare = |name: &str| {
        let r = mkdir(&dir.path().join(name));
        mkdir(&r.join("etc/ck"));
        std::fs::write(r.join("etc/ck/app.conf"), "mine\n").unwrap();
        std::fs::write(r.join("etc/ck/plain.conf"), "mine\n").unwrap();
        r
    };
    let (a, b) = (prepare("rpm"), prepare("cowkit"));
    let out = run_ok(
        rpm_in(&a).args(["--nodeps", "--noscripts", "-U"]).arg(&pkg),
        "rpm -U",
    );
    let rpm_said = String::from_utf8_lossy(&out.stderr).into_owned();
    let r = install(&b, &["--nodeps"], std::slice::from_ref(&pkg));
    assert!(r.ok, "{}", r.stderr);
    for line in rpm_said.lines().filter(|l| l.starts_with("warning: /etc")) {
        assert!(
            r.stderr.contains(line),
            "rpm said `{line}`; cowkit said:\n{}",
            r.stderr
        );
    }
    let etc = |r: &Path| cowkit_testutil::tree::under(&snapshot(r), "etc");
    // (Directory mtimes differ: rpm's are the time of the last entry it
    // made in them, cowkit sets the header's after the entries.)
    let d = diff(&etc(&a), &etc(&b), |e| {
        (e.shape(), e.uid, e.gid, (e.kind != 'd').then_some(e.mtime))
    });
    assert!(d.is_empty(), "{d:#?}");
    assert!(b.join("etc/ck/app.conf.rpmnew").exists());
    assert!(b.join("etc/ck/plain.conf.rpmorig").exists());
    assert_eq!(verify(&a), verify(&b));
}

/// An absolute symlink where the database would go points into the root,
/// never at the host's directory it names.
#[test]
fn the_database_stays_inside_the_root() {
    if !as_root(
        "the_database_stays_inside_the_root",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build_repo(tmp());
    let host = mkdir(&dir.path().join("host-db"));
    let root = mkdir(&dir.path().join("root"));
    mkdir(&root.join("var/lib"));
    std::os::unix::fs::symlink(&host, root.join("var/lib/rpm")).unwrap();
    // Its target, inside the root, exists: the database goes there.
    mkdir(&root.join(host.strip_prefix("/").unwrap()));
    let pkgs: Vec<PathBuf> = main_packages(&repo)
        .iter()
        .map(|p| p.to_path_buf())
        .collect();
    let r = run(cowkit()
        .args(["install", "--json", "--root"])
        .arg(&root)
        .args(&pkgs));
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["db"]["path"], host.to_str().unwrap(), "{j}");
    assert!(root
        .join(host.strip_prefix("/").unwrap())
        .join("rpmdb.sqlite")
        .exists());
    assert!(
        std::fs::read_dir(&host).unwrap().next().is_none(),
        "the host directory was written"
    );
}

/// Two builds at once with one cold cache both succeed and leave one
/// entry per package; a cache on another filesystem than the root works,
/// and the summary says the data was copied and why.
#[test]
fn the_cache_is_shared_by_concurrent_builds_and_may_live_elsewhere() {
    if !as_root(
        "the_cache_is_shared_by_concurrent_builds_and_may_live_elsewhere",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let Some(other) = scratch(Fs::Ext4) else {
        return;
    };
    let repo = build_repo(tmp());
    let d = dir.path();
    let dnf_cache = d.join("dnf-cache");
    let ck_cache = d.join("cowkit-cache");
    // Warm dnf's metadata cache first: two dnf processes filling one
    // metadata cache at once is dnf's business, not the point here.
    let warm = mkdir(&d.join("warm"));
    let r = cowkit_dnf(
        &repo.dir,
        &warm,
        &dnf_cache,
        &other.path().join("c0"),
        &["install", "ck-vi"],
    );
    assert!(r.ok, "{}", r.stderr);

    let (a, b) = (mkdir(&d.join("a")), mkdir(&d.join("b")));
    let (ra, rb) = std::thread::scope(|s| {
        let ta =
            s.spawn(|| cowkit_dnf(&repo.dir, &a, &dnf_cache, &ck_cache, &["install", repo.top]));
        let tb =
            s.spawn(|| cowkit_dnf(&repo.dir, &b, &dnf_cache, &ck_cache, &["install", repo.top]));
        (ta.join().unwrap(), tb.join().unwrap())
    });
    for r in [&ra, &rb] {
        assert!(
            r.ok,
            "stderr:\n{}\nstdout:\n{}",
            r.stderr,
            String::from_utf8_lossy(&r.stdout)
        );
    }
    let entries = cowkit_testutil::tree::regular_files(&ck_cache.join("rpme"));
    assert_eq!(entries.len(), MAIN.len(), "{entries:?}");
    assert_eq!(
        cowkit_testutil::tree::temporary_names(&ck_cache),
        Vec::<String>::new(),
        "temporary files left in the cache"
    );
    assert_same_trees(&a, &b, &dnf_cache, "two concurrent builds");
    assert_eq!(installed(&a), installed(&b));

    // The cache on ext4, the root on XFS: copied, and said so.
    let c = mkdir(&d.join("c"));
    let far = other.path().join("cache");
    let r = cowkit_dnf(&repo.dir, &c, &dnf_cache, &far, &["install", repo.top]);
    assert!(r.ok, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["files_by_method"].get("clone"), None, "{j}");
    assert!(
        j["fallbacks"].as_object().is_some_and(|f| !f.is_empty()),
        "{j}"
    );
    assert_same_trees(&a, &c, &dnf_cache, "cache on another filesystem");
}
