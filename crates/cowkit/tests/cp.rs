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
        "mkdir -p src/a small && head -c 3145741 /dev/urandom > src/a/big && ln src/a/big src/big2 && for i in $(seq 1 50); do echo $i > src/f$i; done",
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
    // Nothing half-written keeps the big file's names: the second name
    // of its hardlink group was not linked to a partial copy.
    assert!(!d.join("small/dst/a/big").exists());
    assert!(!d.join("small/dst/big2").exists());
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

/// `rm -r DIR/.` and `DIR/..` are refused as GNU rm refuses them (issue
/// 14: `DIR/.` used to delete DIR), and a filesystem mounted inside the
/// tree is not entered: its files stay, the rest goes, the run fails
/// and says why.
#[test]
fn rm_r_refuses_dot_and_does_not_cross_mounts() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    sh(
        "mkdir -p tree/sub && echo x > tree/f && echo y > tree/sub/g",
        d,
    );
    for bad in ["tree/.", "tree/./", "tree/..", "tree/sub/..", "."] {
        let o = cowkit(&[&"rm", &"-rf", &d.join(bad)]);
        assert!(!o.status.success(), "rm -rf {bad} succeeded");
        assert!(stderr(&o).contains("refusing"), "{bad}: {}", stderr(&o));
        assert!(d.join("tree/sub/g").exists(), "{bad} removed files");
    }
    if !rustix::process::geteuid().is_root() {
        assert!(!cowkit_testutil::required(), "the mount case needs root");
        return;
    }
    sh(
        "mkdir -p tree/mnt tree/bind && mount -t tmpfs cowkit-test tree/mnt && echo z > tree/mnt/other \
         && mkdir -p elsewhere && echo w > elsewhere/w && mount --bind elsewhere tree/bind",
        d,
    );
    let o = cowkit(&[&"rm", &"-r", &"--json", &d.join("tree")]);
    let mnt_ok = d.join("tree/mnt/other").exists();
    let bind_ok = d.join("elsewhere/w").exists();
    let _ = Command::new("umount").arg(d.join("tree/mnt")).status();
    let _ = Command::new("umount").arg(d.join("tree/bind")).status();
    assert!(!o.status.success(), "rm -r crossed into mounts silently");
    assert!(mnt_ok, "the tmpfs mounted inside the tree lost its file");
    assert!(bind_ok, "the bind mount's files were removed");
    assert!(String::from_utf8_lossy(&o.stdout).contains("is a mount point"));
    assert!(!d.join("tree/f").exists() && !d.join("tree/sub").exists());
}

/// Build a chain of `depth` nested directories `d` under `top` (deeper
/// than PATH_MAX), with a file every 100 levels.
fn deep_chain(top: &Path, depth: usize) {
    let script = format!(
        "import os\nfd = os.open({top:?}, os.O_RDONLY)\nfor i in range({depth}):\n    os.mkdir('d', dir_fd=fd)\n    nfd = os.open('d', os.O_RDONLY, dir_fd=fd)\n    os.close(fd)\n    fd = nfd\n    if i % 100 == 0:\n        os.close(os.open('f', os.O_CREAT | os.O_WRONLY, dir_fd=fd))\n",
        top = top.to_str().unwrap()
    );
    let st = Command::new("python3")
        .arg("-c")
        .arg(script)
        .status()
        .unwrap();
    assert!(st.success());
}

/// `rm -r` of a 10,000-deep chain and of a wide tree within an open-file
/// limit of 64 (soft and hard): everything goes, with the counts `rm`
/// reports (issue 14: it stopped at depth ~1013 at `ulimit -n 1024`).
#[test]
fn rm_r_works_at_any_depth_within_a_low_fd_limit() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    std::fs::create_dir(d.join("chain")).unwrap();
    deep_chain(&d.join("chain"), 10_000);
    sh(
        "mkdir wide && for i in $(seq 1 200); do mkdir -p wide/d$i/e/f; echo $i > wide/d$i/e/f/x; echo $i > wide/d$i/y; done",
        d,
    );
    for (what, dirs, files) in [("chain", 10_001, 100), ("wide", 601, 400)] {
        let o = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -n 64 && exec {} rm -r --json {}",
                env!("CARGO_BIN_EXE_cowkit"),
                d.join(what).display()
            ))
            .output()
            .unwrap();
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(v["removed"][0]["directories"], dirs, "{what}: {v}");
        assert_eq!(v["removed"][0]["files"], files, "{what}: {v}");
        assert!(!d.join(what).exists(), "{what} is still there");
    }
}

/// Walk a tree with directory descriptors (any depth): its entries as
/// (depth, name, kind, mode, content) lines.
fn fd_walk(top: &Path) -> Vec<String> {
    let script = format!(
        "import os, stat\nout = []\ndef walk(fd, depth):\n    for n in sorted(os.listdir(fd)):\n        st = os.stat(n, dir_fd=fd, follow_symlinks=False)\n        if stat.S_ISDIR(st.st_mode):\n            out.append(f'{{depth}} {{n}} d {{oct(st.st_mode)}} {{st.st_mtime_ns}}')\n            c = os.open(n, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)\n            walk(c, depth + 1)\n            os.close(c)\n        else:\n            f = os.open(n, os.O_RDONLY, dir_fd=fd)\n            data = os.read(f, 1 << 20)\n            os.close(f)\n            out.append(f'{{depth}} {{n}} f {{oct(st.st_mode)}} {{st.st_mtime_ns}} {{data!r}}')\n\nimport sys\nsys.setrecursionlimit(100000)\nimport threading\nthreading.stack_size(512 << 20)\nt = threading.Thread(target=lambda: walk(os.open({top:?}, os.O_RDONLY), 0))\nt.start(); t.join()\nprint('\\n'.join(out))\n",
        top = top.to_str().unwrap()
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(script)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `cp -a` of a 10,000-deep chain and of a wide tree within an open-file
/// limit of 64 (soft and hard): the copy equals the source (issue 14: it
/// stopped at depth ~1013 at `ulimit -n 1024`).
#[test]
fn cp_a_works_at_any_depth_within_a_low_fd_limit() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    std::fs::create_dir(d.join("chain")).unwrap();
    deep_chain(&d.join("chain"), 10_000);
    sh(
        "mkdir wide && for i in $(seq 1 200); do mkdir -p wide/d$i/e/f; echo $i > wide/d$i/e/f/x; echo $i > wide/d$i/y; chmod 751 wide/d$i/e; done",
        d,
    );
    for what in ["chain", "wide"] {
        let o = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "ulimit -n 64 && exec {} cp -a --json {} {}",
                env!("CARGO_BIN_EXE_cowkit"),
                d.join(what).display(),
                d.join(format!("{what}-copy")).display()
            ))
            .output()
            .unwrap();
        assert!(o.status.success(), "{what}: {}", stderr(&o));
        let (a, b) = (
            fd_walk(&d.join(what)),
            fd_walk(&d.join(format!("{what}-copy"))),
        );
        assert!(a.len() > 600, "{what}: {} entries", a.len());
        assert!(a == b, "{what}: the copy differs");
    }
}

/// `SRC/.` copies the contents of SRC into an existing DST, as GNU cp.
#[test]
fn cp_dot_source_merges_into_destination() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    sh(
        "mkdir -p src/x ours theirs && echo 1 > src/x/f && echo 2 > src/g && echo old > ours/keep && echo old > theirs/keep && cp -a src/. theirs",
        d,
    );
    let o = cowkit(&[
        &"cp",
        &"-a",
        &format!("{}/.", d.join("src").display()),
        &d.join("ours"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    same_tree(&d.join("theirs"), &d.join("ours"));
    assert!(!d.join("ours/src").exists());
    assert_eq!(std::fs::read(d.join("ours/x/f")).unwrap(), b"1\n");
}

fn ino(p: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    std::fs::symlink_metadata(p).unwrap().ino()
}

/// Names of one hardlink group given as different sources (or inside
/// different source trees) stay one group in the copies, as `cp -a`.
#[test]
fn cp_keeps_hardlinks_across_sources() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    sh(
        "mkdir -p s1 s2 ours theirs && echo data > s1/f && ln s1/f s2/g && ln s1/f top && cp -a s1 s2 top theirs",
        d,
    );
    let o = cowkit(&[
        &"cp",
        &"-a",
        &d.join("s1"),
        &d.join("s2"),
        &d.join("top"),
        &d.join("ours"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    for root in ["theirs", "ours"] {
        let r = d.join(root);
        assert_eq!(ino(&r.join("s1/f")), ino(&r.join("s2/g")), "{root}");
        assert_eq!(ino(&r.join("s1/f")), ino(&r.join("top")), "{root}");
    }
    same_tree(&d.join("theirs"), &d.join("ours"));
}

/// As an unprivileged user: unreadable files and directories are errors
/// with their paths, everything else is copied, the exit code is 1, like
/// GNU cp.
#[test]
fn cp_unreadable_entries_as_user() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    sh(
        "mkdir -p src/open src/shut && echo a > src/open/a && echo b > src/secret && echo c > src/shut/c && chmod 000 src/secret src/shut && mkdir out && chown -R nobody: src out && chmod 755 .",
        d,
    );
    // Relative paths from inside the scratch directory: the rig's own
    // directories above it are root's alone.
    let as_nobody = |prog: &str, args: &[&str]| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups", prog]);
        c.args(args).current_dir(d);
        c.output().unwrap()
    };
    let theirs = as_nobody("cp", &["-a", "src", "out/theirs"]);
    assert_eq!(theirs.status.code(), Some(1), "{}", stderr(&theirs));
    // A copy of the binary the user can reach, wherever the build is.
    std::fs::copy(env!("CARGO_BIN_EXE_cowkit"), d.join("cowkit")).unwrap();
    let ours = as_nobody("./cowkit", &["cp", "-a", "--json", "src", "out/ours"]);
    assert_eq!(ours.status.code(), Some(1), "{}", stderr(&ours));
    let v: serde_json::Value = serde_json::from_slice(&ours.stdout).unwrap();
    let errors = v["copies"][0]["errors"].as_array().unwrap();
    let mut failed: Vec<(&str, &str)> = errors
        .iter()
        .map(|e| {
            let p = e["path"].as_str().unwrap();
            (
                &p[p.rfind('/').unwrap() + 1..],
                e["errno"].as_str().unwrap(),
            )
        })
        .collect();
    failed.sort();
    assert_eq!(failed, [("secret", "EACCES"), ("shut", "EACCES")], "{v}");
    assert_eq!(std::fs::read(d.join("out/ours/open/a")).unwrap(), b"a\n");
    assert!(!d.join("out/ours/secret").exists());
    // The same entries are missing from both copies, but for the
    // unreadable directory: GNU cp leaves an empty one behind, cowkit does
    // not create what it cannot fill.
    let names = |p: &Path| {
        let mut v: Vec<_> = walk(p)
            .into_iter()
            .map(|x| x.strip_prefix(p).unwrap().to_owned())
            .collect();
        v.sort();
        v
    };
    let mut theirs = names(&d.join("out/theirs"));
    theirs.retain(|p| p != Path::new("shut"));
    assert_eq!(names(&d.join("out/ours")), theirs);
}

fn walk(p: &Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    for e in std::fs::read_dir(p).unwrap() {
        let e = e.unwrap();
        out.push(e.path());
        if e.file_type().unwrap().is_dir() {
            if let Ok(rd) = std::fs::read_dir(e.path()) {
                drop(rd);
                out.extend(walk(&e.path()));
            }
        }
    }
    out
}

/// A source that changes while it is copied: files and directories
/// vanish, files grow, new ones appear. The copy must not crash or leave
/// a torn file: every copied file is one version of its source, and every
/// error is a vanished entry, reported with its path.
#[test]
fn cp_source_changing_during_copy() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    let src = d.join("src");
    let line = |i: usize, k: usize| format!("file {i} line {k}\n");
    let base = |i: usize| (0..200).map(|k| line(i, k)).collect::<String>();
    for dir in 0..20 {
        std::fs::create_dir_all(src.join(format!("d{dir}"))).unwrap();
        for i in 0..100 {
            let n = dir * 100 + i;
            std::fs::write(src.join(format!("d{dir}/f{n}")), base(n)).unwrap();
        }
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mutator = {
        let (src, stop) = (src.clone(), stop.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            let mut round = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let dir = round % 20;
                let n = dir * 100 + (round * 7) % 100;
                let p = src.join(format!("d{dir}/f{n}"));
                match round % 3 {
                    0 => {
                        let _ = std::fs::remove_file(&p);
                    }
                    1 => {
                        if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&p) {
                            f.write_all(line(n, 200 + round).as_bytes()).unwrap();
                        }
                    }
                    _ => {
                        let _ = std::fs::write(src.join(format!("d{dir}/new{round}")), "new\n");
                    }
                }
                if round == 500 {
                    let _ = std::fs::remove_dir_all(src.join("d19"));
                }
                round += 1;
            }
        })
    };
    let o = cowkit(&[&"cp", &"-a", &"-j", &"2", &"--json", &src, &d.join("dst")]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    mutator.join().unwrap();
    assert!(matches!(o.status.code(), Some(0 | 1)), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    for e in v["copies"][0]["errors"].as_array().unwrap() {
        assert_eq!(e["errno"], "ENOENT", "{v}");
        assert!(
            e["path"]
                .as_str()
                .unwrap()
                .starts_with(src.to_str().unwrap()),
            "{v}"
        );
    }
    assert_eq!(o.status.code() == Some(0), v["ok"] == true);
    let mut checked = 0;
    for p in walk(&d.join("dst")) {
        if p.is_dir() {
            continue;
        }
        let name = p.file_name().unwrap().to_str().unwrap();
        let got = std::fs::read_to_string(&p).unwrap();
        if name.starts_with("new") {
            // Copied before or after its one write.
            assert!(got.is_empty() || got == "new\n", "{}", p.display());
            continue;
        }
        let n: usize = name[1..].parse().unwrap();
        // The original 200 lines, then whole appended lines only.
        let b = base(n);
        assert!(got.starts_with(&b), "{} torn", p.display());
        for l in got[b.len()..].lines() {
            assert!(
                l.starts_with(&format!("file {n} line ")),
                "{}: {l:?}",
                p.display()
            );
        }
        checked += 1;
    }
    assert!(checked > 1000, "only {checked} files copied");
}
