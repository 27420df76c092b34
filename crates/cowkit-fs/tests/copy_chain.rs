//! The fallback chain on real filesystems: every method forced on every
//! filesystem, bytes compared, extents checked with FIEMAP.

mod common;

use std::fs::File;

use common::*;
use cowkit_fs::{Chain, Copier, Error, Method, Reason};
use cowkit_testutil::{scratch, Fs};
use rustix::io::Errno;

#[test]
fn every_method_on_every_filesystem_gives_identical_bytes() {
    for fs in Fs::MAIN {
        let Some(dir) = scratch(fs) else { continue };
        for (n, shape) in shapes().iter().enumerate() {
            let src = p(dir.path(), &format!("src-{}", shape.name));
            let want = make(&src, shape, n as u64);
            for method in Method::ALL {
                let dst = p(dir.path(), &format!("dst-{}-{method:?}", shape.name));
                let res = copy_with(Chain::only(method), &src, &dst);
                let ctx = format!("{fs:?} {method} {}", shape.name);
                if method == Method::Clone && !fs.reflinks() {
                    match res {
                        Err(Error::MethodRefused {
                            method: Method::Clone,
                            reason,
                            ..
                        }) => {
                            assert_eq!(reason, Reason::Errno(Errno::OPNOTSUPP), "{ctx}")
                        }
                        other => panic!("{ctx}: clone must be refused, got {other:?}"),
                    }
                    continue;
                }
                let done = res.unwrap_or_else(|e| panic!("{ctx}: {e}"));
                assert!(done.fallbacks.is_empty(), "{ctx}: {:?}", done.fallbacks);
                let got = std::fs::read(&dst).unwrap();
                assert_eq!(got.len(), want.len(), "{ctx}: size");
                assert!(got == want, "{ctx}: content differs");
                let moved = match method {
                    Method::Clone => done.bytes.cloned,
                    Method::CopyFileRange => done.bytes.copied,
                    Method::ReadWrite => done.bytes.written,
                };
                assert_eq!(moved, done.bytes.total(), "{ctx}: bytes by other methods");
                if method == Method::Clone || !shape.is_sparse() {
                    assert_eq!(moved, shape.size, "{ctx}");
                } else {
                    // Only data blocks move (SEEK_DATA works in whole blocks).
                    let data: u64 = shape.data.iter().map(|d| d.1).sum();
                    assert!(
                        moved >= data && moved < shape.size / 2,
                        "{ctx}: moved {moved}"
                    );
                }
                if shape.is_sparse() {
                    // Holes stay holes: far fewer bytes allocated than the size.
                    let alloc = allocated(&dst);
                    assert!(
                        alloc < shape.size / 2,
                        "{ctx}: {alloc} bytes allocated, holes lost"
                    );
                }
            }
        }
    }
}

#[test]
fn clones_share_extents_on_xfs_and_btrfs_and_copies_do_not() {
    for fs in Fs::MAIN {
        let Some(dir) = scratch(fs) else { continue };
        if fs == Fs::Tmpfs {
            continue; // no FIEMAP on tmpfs; bytes are checked above
        }
        let src = p(dir.path(), "src");
        make(&src, &shapes()[6], 42);
        for method in Method::ALL {
            if method == Method::Clone && !fs.reflinks() {
                continue;
            }
            let dst = p(dir.path(), &format!("dst-{method:?}"));
            copy_with(Chain::only(method), &src, &dst).unwrap();
            let (sh, total) = shared(&dst);
            assert!(total >= 3 << 20, "{fs:?} {method}: {total} bytes mapped");
            let expect_shared = fs.reflinks() && method != Method::ReadWrite;
            if expect_shared {
                assert_eq!(
                    sh, total,
                    "{fs:?} {method}: only {sh} of {total} bytes shared"
                );
            } else {
                assert_eq!(sh, 0, "{fs:?} {method}: {sh} bytes shared by a plain copy");
            }
        }
        if fs.reflinks() {
            let (sh, total) = shared(&src);
            assert_eq!(sh, total, "{fs:?}: source extents not marked shared");
        }
    }
}

#[test]
fn auto_falls_back_on_ext4_and_tmpfs_and_clones_on_xfs_and_btrfs() {
    for fs in Fs::MAIN {
        let Some(dir) = scratch(fs) else { continue };
        let src = p(dir.path(), "src");
        let want = make(&src, &shapes()[5], 7);
        let dst = p(dir.path(), "dst");
        let mut copier = Copier::new(Chain::AUTO);
        let done = copy_file(&mut copier, &src, &dst).unwrap();
        assert_eq!(std::fs::read(&dst).unwrap(), want, "{fs:?}");
        if fs.reflinks() {
            assert_eq!(done.method, Method::Clone, "{fs:?}");
            assert!(done.fallbacks.is_empty(), "{fs:?}");
        } else {
            assert_eq!(done.method, Method::CopyFileRange, "{fs:?}");
            assert_eq!(done.fallbacks.len(), 1, "{fs:?}");
            assert_eq!(done.fallbacks[0].from, Method::Clone);
            assert_eq!(
                done.fallbacks[0].reason,
                Reason::Errno(Errno::OPNOTSUPP),
                "{fs:?}"
            );
        }
        assert_eq!(copier.confirmed(), Some(done.method), "{fs:?}");
        // The second file goes straight to the confirmed method.
        let again = copy_file(&mut copier, &src, &p(dir.path(), "dst2")).unwrap();
        assert!(again.fallbacks.is_empty(), "{fs:?}: {:?}", again.fallbacks);
        assert_eq!(again.method, done.method);
    }
}

#[test]
fn cross_filesystem_pairs_fall_back_to_read_write_on_exdev() {
    let pairs = [
        (Fs::Xfs, Fs::Ext4),
        (Fs::Xfs, Fs::Xfs2),
        (Fs::Btrfs, Fs::Xfs),
        (Fs::Ext4, Fs::Tmpfs),
    ];
    for (a, b) in pairs {
        let (Some(da), Some(db)) = (scratch(a), scratch(b)) else {
            continue;
        };
        let src = p(da.path(), "src");
        let want = make(&src, &shapes()[7], 3);
        let dst = p(db.path(), "dst");
        let done = copy_with(Chain::AUTO, &src, &dst).unwrap();
        let ctx = format!("{a:?}->{b:?}");
        assert_eq!(std::fs::read(&dst).unwrap(), want, "{ctx}");
        assert_eq!(done.method, Method::ReadWrite, "{ctx}");
        let reasons: Vec<_> = done.fallbacks.iter().map(|f| (f.from, f.reason)).collect();
        assert_eq!(
            reasons,
            vec![
                (Method::Clone, Reason::Errno(Errno::XDEV)),
                (Method::CopyFileRange, Reason::Errno(Errno::XDEV))
            ],
            "{ctx}"
        );
        assert!(allocated(&dst) < 1 << 20, "{ctx}: holes lost");
    }
}

#[test]
fn a_failure_after_a_confirmed_method_is_an_error_not_a_fallback() {
    let (Some(xfs), Some(ext4)) = (scratch(Fs::Xfs), scratch(Fs::Ext4)) else {
        return;
    };
    let a = p(xfs.path(), "a");
    make(&a, &shapes()[4], 1);
    let mut copier = Copier::new(Chain::AUTO);
    copy_file(&mut copier, &a, &p(xfs.path(), "b")).unwrap();
    assert_eq!(copier.confirmed(), Some(Method::Clone));
    let other = p(ext4.path(), "other");
    make(&other, &shapes()[4], 2);
    match copy_file(&mut copier, &other, &p(xfs.path(), "c")) {
        Err(Error::ConfirmedMethodFailed {
            method,
            reason,
            src,
            ..
        }) => {
            assert_eq!(method, Method::Clone);
            assert_eq!(reason, Reason::Errno(Errno::XDEV));
            assert_eq!(src, other);
        }
        res => panic!("expected ConfirmedMethodFailed, got {res:?}"),
    }
}

#[test]
fn forced_clone_across_filesystems_is_refused_with_exdev() {
    let (Some(xfs), Some(xfs2)) = (scratch(Fs::Xfs), scratch(Fs::Xfs2)) else {
        return;
    };
    let a = p(xfs.path(), "a");
    make(&a, &shapes()[3], 1);
    let err = copy_with(Chain::only(Method::Clone), &a, &p(xfs2.path(), "b")).unwrap_err();
    assert!(
        matches!(
            err,
            Error::MethodRefused {
                method: Method::Clone,
                reason: Reason::Errno(Errno::XDEV),
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("EXDEV"), "{err}");
}

#[test]
fn copy_file_replaces_longer_destination_content() {
    for fs in Fs::MAIN {
        let Some(dir) = scratch(fs) else { continue };
        let src = p(dir.path(), "src");
        let want = make(&src, &shapes()[4], 9);
        let dst = p(dir.path(), "dst");
        make(&dst, &shapes()[6], 10);
        let s = File::open(&src).unwrap();
        let d = std::fs::OpenOptions::new().write(true).open(&dst).unwrap();
        Copier::new(Chain::AUTO)
            .copy_file(
                cowkit_fs::Handle::new(&s, &src),
                cowkit_fs::Handle::new(&d, &dst),
            )
            .unwrap();
        assert_eq!(std::fs::read(&dst).unwrap(), want, "{fs:?}");
    }
}
