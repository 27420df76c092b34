//! `cowkit cp` and `cowkit rm` end to end: GNU cp's SRC/DST meaning, the
//! bad cases (into itself, per-entry failures, a full destination), rm -r
//! against rm -rf.

use std::path::Path;
use std::process::{Command, Output};

use cowkit_testutil::{scratch, Fs};

fn cowkit(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cowkit"));
    for a in args {
        c.arg(a);
    }
    c.output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
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

fn same_tree(a: &Path, b: &Path) {
    let o = Command::new("diff")
        .arg("-r")
        .arg("--no-dereference")
        .arg(a)
        .arg(b)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn cp_gnu_target_meaning() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    sh(
        "mkdir -p src/x && echo 1 > src/x/f && echo 2 > file && mkdir into",
        d,
    );
    // DST absent: becomes the copy.
    let o = cowkit(&[&"cp", &"-a", &d.join("src"), &d.join("new")]);
    assert!(o.status.success(), "{}", stderr(&o));
    same_tree(&d.join("src"), &d.join("new"));
    // DST an existing directory: the copies go inside.
    let o = cowkit(&[
        &"cp",
        &"-a",
        &d.join("src"),
        &d.join("file"),
        &d.join("into"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    same_tree(&d.join("src"), &d.join("into/src"));
    assert_eq!(std::fs::read(d.join("into/file")).unwrap(), b"2\n");
    // Several sources need a directory.
    let o = cowkit(&[
        &"cp",
        &"-a",
        &d.join("src"),
        &d.join("file"),
        &d.join("nodir"),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("is not a directory"), "{}", stderr(&o));
    // A directory without -r/-a is refused.
    let o = cowkit(&[&"cp", &d.join("src"), &d.join("norec")]);
    assert!(!o.status.success());
}

#[test]
fn cp_refuses_directory_into_itself() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    sh("mkdir -p src/a/b", d);
    for dst in ["src/a/b/copy", "src/copy", "src"] {
        let o = cowkit(&[&"cp", &"-a", &d.join("src"), &d.join(dst)]);
        assert!(!o.status.success(), "{dst}");
        assert!(stderr(&o).contains("into itself"), "{dst}: {}", stderr(&o));
    }
    assert!(!d.join("src/a/b/copy").exists() && !d.join("src/copy").exists());
    assert!(!d.join("src/src").exists());
}

#[test]
fn cp_copies_symlink_loop_as_symlinks() {
    let Some(t) = scratch(Fs::Ext4) else { return };
    let d = t.path();
    sh(
        "mkdir src && ln -s l1 src/l2 && ln -s l2 src/l1 && ln -s . src/self",
        d,
    );
    let o = cowkit(&[&"cp", &"-a", &d.join("src"), &d.join("dst")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_link(d.join("dst/l1")).unwrap(),
        Path::new("l2")
    );
    assert_eq!(
        std::fs::read_link(d.join("dst/self")).unwrap(),
        Path::new(".")
    );
}

/// A failure on one entry is reported with its path, the rest is copied,
/// and the exit code says something failed.
#[test]
fn cp_entry_error_goes_on_and_exits_nonzero() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    sh(
        "mkdir -p src/sub src/ok && echo a > src/sub/f && echo b > src/ok/g && mkdir -p dst/src && echo x > dst/src/sub",
        d,
    );
    let o = cowkit(&[&"cp", &"-a", &"--json", &d.join("src"), &d.join("dst")]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let errors = v["copies"][0]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1, "{v}");
    assert!(errors[0]["path"].as_str().unwrap().ends_with("sub"), "{v}");
    assert_eq!(std::fs::read(d.join("dst/src/ok/g")).unwrap(), b"b\n");
    // Without --json: the error and the count on stderr.
    let o = cowkit(&[&"cp", &"-a", &d.join("src"), &d.join("dst")]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("sub`") && e.contains("errors: 1"), "{e}");
}

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn cp_full_destination_fails_clearly() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    sh(
        "mkdir -p src/a small && head -c 3145741 /dev/urandom > src/a/big && for i in $(seq 1 50); do echo $i > src/f$i; done",
        d,
    );
    let st = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
        .arg(d.join("small"))
        .status()
        .unwrap();
    assert!(st.success(), "mounting a 1 MiB tmpfs needs the rig (root)");
    let _m = Mount(d.join("small"));
    let o = cowkit(&[&"cp", &"-a", &d.join("src"), &d.join("small/dst")]);
    let e = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{e}");
    assert!(e.contains("No space left on device"), "{e}");
    assert!(e.contains("incomplete"), "{e}");
    assert!(!e.contains("\ncopied `"), "claimed done: {e}");
    // Nothing half-written keeps the big file's name.
    assert!(!d.join("small/dst/a/big").exists());
}

#[test]
fn cp_btrfs_nocow_sources() {
    let Some(t) = scratch(Fs::Btrfs) else { return };
    let d = t.path();
    sh(
        "mkdir -p src/cow src/nocow && chattr +C src/nocow && head -c 1048576 /dev/urandom > src/cow/a && for i in 1 2 3; do head -c 300000 /dev/urandom > src/nocow/n$i; done",
        d,
    );
    let o = cowkit(&[
        &"cp",
        &"-a",
        &"-j",
        &"1",
        &"--json",
        &d.join("src"),
        &d.join("dst"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    same_tree(&d.join("src"), &d.join("dst"));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(
        !v["copies"][0]["fallbacks"].as_object().unwrap().is_empty(),
        "{v}"
    );
}

#[test]
fn rm_r_matches_rm_rf() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    sh(
        "mkdir -p tree/a/b/c && for i in $(seq 1 300); do mkdir tree/d$i; echo $i > tree/d$i/f; ln -s f tree/d$i/l; done; mkfifo tree/a/p; chmod 000 tree/a/b; cp -a tree t1; cp -a tree t2; echo keep > keep",
        d,
    );
    let o = cowkit(&[&"rm", &"-r", &"--json", &d.join("t1")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["removed"][0]["directories"], 304, "{v}");
    assert!(Command::new("rm")
        .arg("-rf")
        .arg(d.join("t2"))
        .status()
        .unwrap()
        .success());
    let mut left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    left.sort();
    assert_eq!(left, ["keep", "tree"]);
    // Missing: an error, unless -f.
    assert!(!cowkit(&[&"rm", &"-r", &d.join("t1")]).status.success());
    assert!(cowkit(&[&"rm", &"-rf", &d.join("t1")]).status.success());
    // A directory without -r is refused; a symlink to one is removed, not followed.
    assert!(!cowkit(&[&"rm", &d.join("tree")]).status.success());
    std::os::unix::fs::symlink(d.join("tree"), d.join("link")).unwrap();
    assert!(cowkit(&[&"rm", &"-r", &d.join("link")]).status.success());
    assert!(d.join("tree/d1/f").exists());
}
