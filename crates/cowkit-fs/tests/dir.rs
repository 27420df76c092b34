//! The directory-descriptor layer (`cowkit_fs::dir`) on each filesystem:
//! new files appear complete under their name or not at all, temporary
//! names never outlive a failure, renames report the errno they failed
//! with.

use std::io::{Read, Seek};
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use cowkit_fs::dir::{self, NewFile, TEMP_PREFIX};
use cowkit_testutil::{scratch, Fs};
use rustix::io::Errno;

/// Every name in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn open(dir: &Path) -> std::os::fd::OwnedFd {
    dir::open_dir(rustix::fs::CWD, dir, dir).unwrap()
}

#[test]
fn anonymous_file_has_no_name_until_commit_then_replaces_the_old_one() {
    for fs in Fs::MAIN {
        let Some(d) = scratch(fs) else { continue };
        let fd = open(d.path());
        let target = d.path().join("out");
        std::fs::write(&target, b"old").unwrap();
        let mut f = NewFile::anonymous(fd.as_fd(), d.path(), 0o640).unwrap();
        f.write_all(b"new content").unwrap();
        assert_eq!(names(d.path()), ["out"], "{fs:?}: a name appeared early");
        assert_eq!(std::fs::read(&target).unwrap(), b"old", "{fs:?}");
        let mut file = f.commit(fd.as_fd(), "out", &target).unwrap();
        assert_eq!(names(d.path()), ["out"], "{fs:?}: a temporary name is left");
        assert_eq!(std::fs::read(&target).unwrap(), b"new content", "{fs:?}");
        // The returned file is the committed one.
        let mut back = String::new();
        file.rewind().unwrap();
        file.read_to_string(&mut back).unwrap();
        assert_eq!(back, "new content", "{fs:?}");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        let umask = dir::process_umask().unwrap();
        assert_eq!(mode, 0o640 & !umask, "{fs:?}");
    }
}

#[test]
fn a_new_file_dropped_before_commit_leaves_nothing() {
    for fs in Fs::MAIN {
        let Some(d) = scratch(fs) else { continue };
        let fd = open(d.path());
        let mut a = NewFile::anonymous(fd.as_fd(), d.path(), 0o644).unwrap();
        a.write_all(b"a").unwrap();
        let mut n = NewFile::named(fd.as_fd(), d.path(), 0o644).unwrap();
        n.write_all(b"n").unwrap();
        let shown = n.path();
        let temp = shown.file_name().unwrap().to_str().unwrap();
        assert!(temp.starts_with(TEMP_PREFIX), "{fs:?}: {temp}");
        assert_eq!(names(d.path()), [temp], "{fs:?}");
        drop((a, n));
        assert!(names(d.path()).is_empty(), "{fs:?}: {:?}", names(d.path()));
    }
}

#[test]
fn named_file_commits_by_rename_and_into_named_hands_over_the_name() {
    for fs in Fs::MAIN {
        let Some(d) = scratch(fs) else { continue };
        let fd = open(d.path());
        let mut n = NewFile::named(fd.as_fd(), d.path(), 0o644).unwrap();
        n.write_all(b"x").unwrap();
        n.commit(fd.as_fd(), "x", &d.path().join("x")).unwrap();
        assert_eq!(names(d.path()), ["x"], "{fs:?}");

        let a = NewFile::anonymous(fd.as_fd(), d.path(), 0o644).unwrap();
        let (_file, temp) = a.into_named(fd.as_fd()).unwrap();
        assert!(temp.starts_with(TEMP_PREFIX), "{fs:?}: {temp}");
        assert_eq!(names(d.path()), [temp.as_str(), "x"], "{fs:?}");
        // Moved elsewhere by the caller, as the S3 store does.
        let sub = dir::mkdir_open(fd.as_fd(), "sub", 0o755, &d.path().join("sub")).unwrap();
        dir::replace_at(fd.as_fd(), &temp, sub.as_fd(), "y", &d.path().join("sub/y")).unwrap();
        assert_eq!(names(d.path()), ["sub", "x"], "{fs:?}");
        assert_eq!(names(&d.path().join("sub")), ["y"], "{fs:?}");
    }
}

#[test]
fn a_failed_rename_keeps_its_errno_and_removes_the_source() {
    for fs in Fs::MAIN {
        let Some(d) = scratch(fs) else { continue };
        let fd = open(d.path());
        std::fs::create_dir(d.path().join("busy")).unwrap();
        std::fs::write(d.path().join("busy/child"), b"").unwrap();
        std::fs::write(d.path().join(".ck-src"), b"data").unwrap();
        let err = dir::replace_at(
            fd.as_fd(),
            ".ck-src",
            fd.as_fd(),
            "busy",
            &d.path().join("busy"),
        )
        .unwrap_err();
        assert_eq!(err.errno(), Some(Errno::ISDIR), "{fs:?}: {err}");
        assert_eq!(err.path, d.path().join("busy"), "{fs:?}");
        assert_eq!(names(d.path()), ["busy"], "{fs:?}: the source is left");
    }
}

#[test]
fn create_replacing_removes_the_temporary_name_when_finishing_fails() {
    for fs in Fs::MAIN {
        let Some(d) = scratch(fs) else { continue };
        let fd = open(d.path());
        let path = d.path().join("link");
        let err = dir::create_replacing(
            fd.as_fd(),
            "link",
            &path,
            "create symlink",
            |tmp| rustix::fs::symlinkat("target", fd.as_fd(), tmp),
            |_| Err(cowkit_fs::IoError::new("set owner of", &path, Errno::PERM).into()),
        )
        .unwrap_err();
        assert!(err.to_string().contains("set owner of"), "{fs:?}: {err}");
        assert!(names(d.path()).is_empty(), "{fs:?}: {:?}", names(d.path()));

        std::fs::write(&path, b"a file in the way").unwrap();
        dir::create_replacing(
            fd.as_fd(),
            "link",
            &path,
            "create symlink",
            |tmp| rustix::fs::symlinkat("target", fd.as_fd(), tmp),
            |_| Ok(()),
        )
        .unwrap();
        assert_eq!(std::fs::read_link(&path).unwrap(), Path::new("target"));
        assert_eq!(names(d.path()), ["link"], "{fs:?}");
    }
}

#[test]
fn write_file_at_replaces_atomically() {
    for fs in Fs::MAIN {
        let Some(d) = scratch(fs) else { continue };
        let fd = open(d.path());
        let path = d.path().join("rec.json");
        dir::write_file_at(fd.as_fd(), "rec.json", &path, b"{}", 0o644, true).unwrap();
        dir::write_file_at(fd.as_fd(), "rec.json", &path, b"{\"a\":1}", 0o644, false).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"{\"a\":1}");
        assert_eq!(names(d.path()), ["rec.json"], "{fs:?}");
    }
}

#[test]
fn listing_and_lookups_do_not_follow_symlinks() {
    for fs in Fs::MAIN {
        let Some(d) = scratch(fs) else { continue };
        let fd = open(d.path());
        std::fs::create_dir(d.path().join("real")).unwrap();
        std::os::unix::fs::symlink("real", d.path().join("link")).unwrap();
        let got = dir::read_names(fd.as_fd(), d.path()).unwrap();
        let mut kinds: Vec<_> = got
            .iter()
            .map(|(n, t)| (n.to_str().unwrap().to_string(), *t))
            .collect();
        kinds.sort_by(|a, b| a.0.cmp(&b.0));
        let listed: Vec<_> = kinds.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(listed, ["link", "real"], "{fs:?}");
        use rustix::fs::FileType;
        for (n, t) in &kinds {
            // d_type may be unknown on some filesystems; never the target's.
            let want = if n == "link" {
                FileType::Symlink
            } else {
                FileType::Directory
            };
            assert!(*t == want || *t == FileType::Unknown, "{fs:?}: {n} {t:?}");
        }
        assert!(
            dir::open_dir(fd.as_fd(), "link", &d.path().join("link")).is_err(),
            "{fs:?}"
        );
        assert!(dir::open_dir_opt(fd.as_fd(), "missing", d.path())
            .unwrap()
            .is_none());
        assert!(dir::open_read_opt(fd.as_fd(), "missing", d.path())
            .unwrap()
            .is_none());
        let st = dir::stat_at(fd.as_fd(), "link").unwrap().unwrap();
        assert_eq!(st.st_mode & 0o170000, 0o120000, "{fs:?}: followed the link");
    }
}

#[test]
fn live_named_temporaries_can_be_removed_by_a_signal_handler() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let fd = open(t.path());
    let a = NewFile::named(fd.as_fd(), t.path(), 0o644).unwrap();
    let b = NewFile::named(fd.as_fd(), t.path(), 0o644).unwrap();
    // Committed ones are no longer listed.
    b.commit(fd.as_fd(), "kept", &t.path().join("kept"))
        .unwrap();
    assert_eq!(names(t.path()).len(), 2);
    assert_eq!(dir::remove_live_temporaries(), 1);
    assert_eq!(names(t.path()), ["kept"]);
    // Dropping it afterwards is harmless.
    drop(a);
    assert_eq!(names(t.path()), ["kept"]);
}

#[test]
fn stale_temporaries_of_dead_processes_are_swept() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let me = std::process::id();
    for name in [
        format!("{TEMP_PREFIX}{dead:x}.0"),
        format!("{TEMP_PREFIX}{me:x}.7"),
        format!("{TEMP_PREFIX}1.3"),
        format!("{TEMP_PREFIX}notapid"),
        "file".to_string(),
    ] {
        std::fs::write(t.path().join(name), b"x").unwrap();
    }
    let fd = open(t.path());
    assert_eq!(
        dir::remove_stale_temporaries(fd.as_fd(), t.path()).unwrap(),
        1
    );
    let mut want = vec![
        format!("{TEMP_PREFIX}{me:x}.7"),
        format!("{TEMP_PREFIX}1.3"),
        format!("{TEMP_PREFIX}notapid"),
        "file".to_string(),
    ];
    want.sort();
    assert_eq!(names(t.path()), want);
}
