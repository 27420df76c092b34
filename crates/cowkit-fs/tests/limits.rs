//! Where the kernel says no for reasons other than the filesystem type:
//! Btrfs NOCOW files, and a full destination.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;
use cowkit_fs::{Chain, Error, Method, Reason};
use cowkit_testutil::{pattern, scratch, Fs};
use rustix::io::Errno;

fn run(cmd: &str, args: &[&str]) {
    let st = Command::new(cmd).args(args).status().unwrap();
    assert!(st.success(), "{cmd} {args:?} failed");
}

#[test]
fn btrfs_nocow_source_falls_back_from_clone_with_einval() {
    let Some(dir) = scratch(Fs::Btrfs) else {
        return;
    };
    let src = p(dir.path(), "nocow");
    std::fs::File::create(&src).unwrap();
    // NOCOW must be set while the file is empty.
    run("chattr", &["+C", src.to_str().unwrap()]);
    let want = pattern(1 << 20, 3);
    std::fs::write(&src, &want).unwrap();
    let dst = p(dir.path(), "dst");
    let done = copy_with(Chain::AUTO, &src, &dst).unwrap();
    assert_eq!(done.fallbacks.len(), 1, "{done:?}");
    assert_eq!(done.fallbacks[0].from, Method::Clone);
    assert_eq!(done.fallbacks[0].reason, Reason::Errno(Errno::INVAL));
    assert_eq!(done.method, Method::CopyFileRange);
    assert_eq!(std::fs::read(&dst).unwrap(), want);
}

/// A walk over one Btrfs pair: clone works and is confirmed, then a NOCOW
/// file refuses it. Without the per-file policy that is an error (no
/// silent switch); with it, that one file goes one method down, the pair
/// stays at clone, and the next file is cloned again.
#[test]
fn a_nocow_file_after_a_confirmed_clone_goes_one_method_down_only_with_retry_down() {
    use cowkit_fs::{Copier, Handle};
    let Some(dir) = scratch(Fs::Btrfs) else {
        return;
    };
    let cow = p(dir.path(), "cow");
    std::fs::write(&cow, pattern(1 << 20, 4)).unwrap();
    let nocow = p(dir.path(), "nocow");
    std::fs::File::create(&nocow).unwrap();
    run("chattr", &["+C", nocow.to_str().unwrap()]);
    let want = pattern(1 << 20, 5);
    std::fs::write(&nocow, &want).unwrap();
    let copy = |c: &mut Copier, src: &Path, name: &str| {
        let dst = p(dir.path(), name);
        let (s, d) = (
            std::fs::File::open(src).unwrap(),
            std::fs::File::create(&dst).unwrap(),
        );
        c.copy_file(Handle::new(&s, src), Handle::new(&d, &dst))
    };

    let mut strict = Copier::new(Chain::AUTO);
    assert_eq!(copy(&mut strict, &cow, "a1").unwrap().method, Method::Clone);
    match copy(&mut strict, &nocow, "a2") {
        Err(Error::ConfirmedMethodFailed { method, reason, .. }) => {
            assert_eq!(
                (method, reason),
                (Method::Clone, Reason::Errno(Errno::INVAL))
            );
        }
        other => panic!("a confirmed method must not switch silently: {other:?}"),
    }

    let mut walk = Copier::new(Chain::AUTO).with_retry_down(true);
    assert_eq!(copy(&mut walk, &cow, "b1").unwrap().method, Method::Clone);
    let done = copy(&mut walk, &nocow, "b2").unwrap();
    assert_eq!(done.method, Method::CopyFileRange, "{done:?}");
    assert_eq!(done.fallbacks.len(), 1, "{done:?}");
    assert!(done.fallbacks[0].this_file_only, "{done:?}");
    assert_eq!(done.fallbacks[0].reason, Reason::Errno(Errno::INVAL));
    assert_eq!(
        done.fallbacks[0].to_string(),
        "clone refused for single files: EINVAL (Invalid argument)"
    );
    assert_eq!(std::fs::read(p(dir.path(), "b2")).unwrap(), want);
    assert_eq!(walk.confirmed(), Some(Method::Clone));
    assert_eq!(copy(&mut walk, &cow, "b3").unwrap().method, Method::Clone);
}

/// A 1 MiB tmpfs mounted on `dir` for the test's lifetime.
struct TinyFs<'a>(&'a Path);

impl Drop for TinyFs<'_> {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0).status();
    }
}

#[test]
fn a_full_destination_is_an_error_naming_the_file_not_a_fallback() {
    let (Some(xfs), Some(ext4)) = (scratch(Fs::Xfs), scratch(Fs::Ext4)) else {
        return;
    };
    let mnt = p(ext4.path(), "tiny");
    std::fs::create_dir(&mnt).unwrap();
    run(
        "mount",
        &[
            "-t",
            "tmpfs",
            "-o",
            "size=1m",
            "tmpfs",
            mnt.to_str().unwrap(),
        ],
    );
    let _guard = TinyFs(&mnt);
    let src = p(xfs.path(), "big");
    std::fs::write(&src, pattern(4 << 20, 1)).unwrap();
    for chain in [Chain::AUTO, Chain::only(Method::ReadWrite)] {
        let dst = p(&mnt, "out");
        let err = copy_with(chain, &src, &dst).unwrap_err();
        match &err {
            Error::Io(cowkit_fs::IoError {
                op: "write",
                path,
                source,
            }) => {
                assert_eq!(path, &dst);
                assert_eq!(
                    source.raw_os_error(),
                    Some(Errno::NOSPC.raw_os_error()),
                    "{err}"
                );
            }
            other => panic!("{chain:?}: {other:?}"),
        }
        std::fs::remove_file(&dst).unwrap();
    }
    // Within one tmpfs, copy_file_range meets ENOSPC: an error, not a fallback.
    let inner = p(&mnt, "inner");
    let shape = Shape {
        name: "x",
        size: 640 << 10,
        data: vec![(0, 640 << 10)],
    };
    make(&inner, &shape, 4);
    let err = copy_with(Chain::AUTO, &inner, &p(&mnt, "inner-copy")).unwrap_err();
    assert!(
        matches!(&err, Error::Transfer { method: Method::CopyFileRange, source, .. }
            if source.raw_os_error() == Some(Errno::NOSPC.raw_os_error())),
        "{err:?}"
    );
}
