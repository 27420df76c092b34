//! Issue 28: `cowkit demo`, the quick start's first command, shows what it
//! says. On the rig's XFS it builds its repository, installs it by plain
//! `dnf --installroot` and by `cowkit dnf` (cold, then warm cache), and
//! this test checks the kept roots again by itself, not only through the
//! demo's own comparison: the same `rpm -qa`, a clean `rpm -Va`, equal
//! package trees (type, mode, size, content, link target, owner, file
//! capabilities, mtime, hardlinks), the `%post` scriptlet run in each, and
//! blocks shared in cowkit's roots (FIEMAP) but not in dnf's.
//!
//! Needs root (dnf installs as root), `dnf`, `createrepo_c`, `rpmbuild`
//! and the rig's XFS.

mod common;

use std::path::{Path, PathBuf};

use common::{as_root, cowkit, run};
use cowkit_testutil::run_ok;
use cowkit_testutil::tree::{diff, hardlink_groups, snapshot, under, Tree};
use cowkit_testutil::{scratch, Fs};

/// `rpm --root ROOT --dbpath /var/lib/rpm ARGS`, its sorted lines.
fn rpm(root: &Path, args: &[&str]) -> Vec<String> {
    let out = std::process::Command::new("rpm")
        .arg(format!("--root={}", root.display()))
        .arg("--dbpath=/var/lib/rpm")
        .args(args)
        .output()
        .unwrap();
    let mut l: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    l.sort();
    l
}

/// What the demo packages place: their trees in `root`.
fn packaged(root: &Path) -> Tree {
    let t = snapshot(root);
    ["bin", "etc/demo", "usr", "var/lib/demo"]
        .iter()
        .flat_map(|p| under(&t, p))
        .collect()
}

/// Bytes in shared extents of `path`.
fn shared(path: &Path) -> u64 {
    let f = std::fs::File::open(path).unwrap();
    cowkit_fs::fiemap::shared_bytes(&f).unwrap().0
}

#[test]
fn demo_installs_equal_roots_that_share_blocks() {
    if !as_root(
        "demo_installs_equal_roots_that_share_blocks",
        "dnf installs as root",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let r = run(cowkit()
        .args(["demo", "--json", "--size-mib", "8", "--keep"])
        .arg(dir.path()));
    assert!(r.ok, "cowkit demo failed:\n{}", r.stderr);
    let v = r.json();
    let p = &v["packages"];
    assert_eq!(p["equal"], true, "{p:#}");
    let installs = p["installs"].as_array().unwrap();
    let methods: Vec<&str> = installs
        .iter()
        .map(|i| i["method"].as_str().unwrap())
        .collect();
    assert_eq!(
        methods,
        ["dnf", "cowkit dnf (cold cache)", "cowkit dnf (warm cache)"]
    );
    let roots: Vec<PathBuf> = installs
        .iter()
        .map(|i| PathBuf::from(i["root"].as_str().unwrap()))
        .collect();

    // The demo's claims ...
    let dnf = &installs[0];
    assert_eq!(dnf["shared_bytes"], 0, "{dnf:#}");
    for i in &installs[1..] {
        assert_eq!(i["file_bytes"], dnf["file_bytes"], "{i:#}");
        assert!(i["shared_bytes"].as_u64().unwrap() > 0, "{i:#}");
    }
    let warm = installs[2]["disk_used_bytes"].as_u64().unwrap();
    let plain = dnf["disk_used_bytes"].as_u64().unwrap();
    assert!(
        warm < plain / 2,
        "warm cowkit dnf used {warm} B, dnf {plain} B"
    );

    // ... checked here without the demo's code.
    let nevras = rpm(&roots[0], &["-qa", "--qf", "%{NEVRA}\\n"]);
    assert_eq!(nevras.len(), 6, "{nevras:?}");
    assert!(nevras.contains(&"demo-app-1-1.noarch".to_string()));
    let trees: Vec<Tree> = roots.iter().map(|r| packaged(r)).collect();
    assert!(trees[0].contains_key("usr/share/demo-data/table.txt"));
    for (root, tree) in roots.iter().zip(&trees) {
        assert_eq!(rpm(root, &["-qa", "--qf", "%{NEVRA}\\n"]), nevras);
        assert_eq!(rpm(root, &["-Va"]), Vec::<String>::new(), "{root:?}");
        let posted = std::fs::read_to_string(root.join("var/lib/demo/installed")).unwrap();
        assert_eq!(posted, "demo-app %post ran with argument 1\n");
        let d = diff(&trees[0], tree, |e| {
            let packaged_mtime = e.kind != 'd' && e.mtime < 1_500_000_000;
            (
                e.shape(),
                e.uid,
                e.gid,
                e.caps.clone(),
                packaged_mtime.then_some(e.mtime),
            )
        });
        assert!(d.is_empty(), "{root:?}: {d:#?}");
        assert_eq!(hardlink_groups(&trees[0]), hardlink_groups(tree));
    }
    assert!(trees[0]["usr/bin/demo-app"].caps.is_some());
    let table = "usr/share/demo-data/table.txt";
    assert_eq!(shared(&roots[0].join(table)), 0);
    assert!(shared(&roots[1].join(table)) > 0);
    assert!(shared(&roots[2].join(table)) > 0);

    let kept = PathBuf::from(p["kept"].as_str().unwrap());
    run_ok(
        std::process::Command::new("rm").arg("-rf").arg(&kept),
        "rm -rf",
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the demo left more than its kept directory behind"
    );
}
