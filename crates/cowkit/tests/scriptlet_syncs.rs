//! Issue 26: scriptlets of a root being built run without sync calls, set
//! up once per transaction, with one final `syncfs` of the root's
//! filesystem; `--keep-syncs` lets their calls through.
//!
//! A package's `%post` runs a static probe twice (static: no preload shim
//! could reach it). The probe writes a file, calls `fsync`, `fdatasync`,
//! `syncfs`, `sync` and `fsync` on a closed descriptor, then
//! `syncfs(INT_MAX)`: the kernel answers that one `EBADF`, the nosync
//! layer 0, so the probe sees from inside whether its calls reached the
//! kernel. `strace` without `-f` watches cowkit's main thread for the
//! final `syncfs`.
//!
//! Needs root (scriptlets run chrooted), the rig's XFS, `cc` with a static
//! libc and `strace`.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{as_root, tmp};
use cowkit_testutil::repo::{build_repo, dbpath, MAIN};
use cowkit_testutil::rpm::rpmbuild;
use cowkit_testutil::tree::mkdir;
use cowkit_testutil::{run_ok, scratch, Fs};

const PROBE: &str = r#"
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd < 0) return 2;
    if (write(fd, "data\n", 5) != 5) return 3;
    int a = fsync(fd), b = fdatasync(fd), c = syncfs(fd);
    sync();
    int bad = fsync(1000), bad_errno = errno;
    int probe = syncfs(INT_MAX);
    dprintf(fd, "fsync=%d fdatasync=%d syncfs=%d bad=%d/%d probe=%s\n", a, b, c, bad,
            bad_errno, probe == 0 ? "answered" : "kernel");
    return 0;
}
"#;

/// A package whose `%post` runs the static probe twice.
fn syncer(dir: &Path) -> PathBuf {
    let src = dir.join("probe.c");
    std::fs::write(&src, PROBE).unwrap();
    let bin = dir.join("ck-syncprobe");
    run_ok(
        Command::new("cc")
            .args(["-static", "-O1", "-o"])
            .arg(&bin)
            .arg(&src),
        "cc -static (Debian: libc6-dev)",
    );
    let spec = format!(
        "Name: ck-syncer\nVersion: 1\nRelease: 1\nSummary: x\nLicense: MIT\nBuildArch: noarch\n\
         Requires(post): ck-busybox ck-filesystem\n\
         %global debug_package %{{nil}}\n%global __os_install_post %{{nil}}\n\
         %global _build_id_links none\n%global _binaries_in_noarch_packages_terminate_build 0\n\
         %description\nx\n%install\nmkdir -p %{{buildroot}}/usr/bin\n\
         install -m 0755 {} %{{buildroot}}/usr/bin/ck-syncprobe\n\
         %files\n/usr/bin/ck-syncprobe\n\
         %post\n/usr/bin/ck-syncprobe /var/lib/ck-syncprobe.log\n\
         /usr/bin/ck-syncprobe /var/lib/ck-syncprobe.log\n",
        bin.display()
    );
    let p = dir.join("ck-syncer-1-1.noarch.rpm");
    rpmbuild(&spec, "w9.gzdio", &p);
    p
}

struct Outcome {
    json: serde_json::Value,
    /// The probe's two lines.
    probe: Vec<String>,
    /// `syncfs` calls of cowkit's main thread that succeeded.
    final_syncfs: usize,
}

/// `cowkit install --json ARGS` of the test repository's base packages
/// and the syncer into a new root on XFS, under `strace` (main thread).
fn install(dir: &Path, name: &str, args: &[&str]) -> Outcome {
    let repo = build_repo(tmp());
    let mut pkgs: Vec<PathBuf> = MAIN.iter().map(|n| repo.rpm(n).to_path_buf()).collect();
    pkgs.push(syncer(dir));
    let root = mkdir(&dir.join(name));
    let trace = dir.join(format!("{name}.strace"));
    let out = Command::new("strace")
        .args(["-qq", "-e", "trace=syncfs", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_cowkit"))
        .args(["install", "--json", "--root"])
        .arg(&root)
        .args(["--dbpath", &dbpath()])
        .args(args)
        .args(&pkgs)
        .output()
        .expect("strace (Debian package `strace`)");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    let log = std::fs::read_to_string(root.join("var/lib/ck-syncprobe.log")).unwrap_or_default();
    let probe: Vec<String> = log
        .lines()
        .filter(|l| l.starts_with("fsync="))
        .map(str::to_string)
        .collect();
    let traced = std::fs::read_to_string(&trace).unwrap();
    let final_syncfs = traced
        .lines()
        .filter(|l| l.starts_with("syncfs(") && l.trim_end().ends_with("= 0"))
        .count();
    Outcome {
        json,
        probe,
        final_syncfs,
    }
}

#[test]
fn scriptlet_syncs_are_answered_once_set_up_and_the_root_synced_at_the_end() {
    if !as_root(
        "scriptlet_syncs_are_answered_once_set_up_and_the_root_synced_at_the_end",
        "scriptlets run chrooted",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let o = install(dir.path(), "root", &[]);
    // The same transaction without scriptlets: what rpm's registration
    // into the new root's database asked of the session.
    let check = install(dir.path(), "check", &["--noscripts"]);
    let c = &check.json["nosync"]["answered"];
    let rpm = |call: &str| c[call].as_u64().unwrap_or(0);
    assert_eq!(o.probe.len(), 2, "{:?}", o.probe);
    for line in &o.probe {
        assert_eq!(
            line, "fsync=0 fdatasync=0 syncfs=0 bad=-1/9 probe=answered",
            "the scriptlet's calls reached the kernel"
        );
    }
    let n = &o.json["nosync"];
    assert!(n.is_object(), "no nosync session: {}", o.json);
    // Each probe: fsync twice (one on a closed descriptor), fdatasync,
    // syncfs twice, sync: answered by the session, not run; so were
    // rpm's.
    assert_eq!(n["answered"]["fsync"], 4 + rpm("fsync"), "{n}");
    assert_eq!(n["answered"]["fdatasync"], 2 + rpm("fdatasync"), "{n}");
    assert_eq!(n["answered"]["syncfs"], 4 + rpm("syncfs"), "{n}");
    assert_eq!(n["answered"]["sync"], 2 + rpm("sync"), "{n}");
    // One session for every scriptlet of the transaction (the base
    // packages have some too) and rpm's check.
    assert!(n["processes"].as_u64().unwrap() >= 3, "{n}");
    assert_eq!(
        n["processes"].as_u64(),
        o.json["scriptlets"].as_u64().map(|s| s + 1),
        "{n}"
    );
    assert_eq!(n["still_running"], 0, "{n}");
    // The final sync: the XFS that holds the root, done by cowkit.
    let syncs = n["final_sync"].as_array().unwrap();
    assert_eq!(syncs.len(), 1, "{n}");
    assert_eq!(syncs[0][1], "xfs", "{n}");
    assert!(dir.path().starts_with(syncs[0][0].as_str().unwrap()), "{n}");
    assert_eq!(o.final_syncfs, 1, "cowkit's own syncfs calls");
}

#[test]
fn keep_syncs_lets_them_through() {
    if !as_root("keep_syncs_lets_them_through", "scriptlets run chrooted") {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let o = install(dir.path(), "kept", &["--keep-syncs"]);
    for line in &o.probe {
        assert_eq!(line, "fsync=0 fdatasync=0 syncfs=0 bad=-1/9 probe=kernel");
    }
    assert!(o.json["nosync"].is_null(), "{}", o.json);
    assert_eq!(o.final_syncfs, 0, "no final syncfs with --keep-syncs");
}

/// rpm's check of a new root registers the transaction into the root's
/// new database: part of building the root, so its sync calls (sqlite's,
/// rpm's closing `syncfs`) are answered by the session, which then syncs
/// the root once; also without any scriptlet.
#[test]
fn a_new_roots_registration_runs_in_the_session_too() {
    if !as_root(
        "a_new_roots_registration_runs_in_the_session_too",
        "rpm registers with --root",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let o = install(dir.path(), "noscripts", &["--noscripts"]);
    assert!(o.probe.is_empty(), "{:?}", o.probe);
    let n = &o.json["nosync"];
    assert!(n.is_object(), "no nosync session: {}", o.json);
    assert_eq!(n["processes"], 1, "rpm's check alone: {n}");
    // sqlite's writes of the database, and rpm's syncfs at its end.
    assert!(n["answered"]["fdatasync"].as_u64().unwrap() > 0, "{n}");
    assert_eq!(n["answered"]["syncfs"], 1, "{n}");
    assert_eq!(n["final_sync"].as_array().unwrap().len(), 1, "{n}");
    assert_eq!(o.final_syncfs, 1, "cowkit's own syncfs calls");
    // rpm registered every package all the same.
    let q = Command::new("rpm")
        .arg("--root")
        .arg(dir.path().join("noscripts"))
        .args(["--dbpath", &dbpath(), "-qa"])
        .output()
        .unwrap();
    assert!(q.status.success());
    assert_eq!(
        String::from_utf8_lossy(&q.stdout).lines().count(),
        MAIN.len() + 1
    );
    // --keep-syncs: rpm's calls reach the kernel, no session.
    let kept = install(
        dir.path(),
        "noscripts-kept",
        &["--noscripts", "--keep-syncs"],
    );
    assert!(kept.json["nosync"].is_null(), "{}", kept.json);
    assert_eq!(kept.final_syncfs, 0);
}
