//! Metadata apply order and extended attributes, as root, on each
//! filesystem.

use std::fs::File;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use cowkit_fs::meta::{apply, copy_xattrs, list_xattrs, xattr, Meta};
use cowkit_fs::Handle;
use cowkit_testutil::{scratch, Fs};
use rustix::fs::Timespec;

/// `security.capability` v2 granting `cap_net_raw` (bit 13), effective.
fn cap_net_raw() -> Vec<u8> {
    let mut v = Vec::new();
    for word in [0x0200_0001u32, 1 << 13, 0, 0, 0] {
        v.extend_from_slice(&word.to_le_bytes());
    }
    v
}

fn get(list: &[cowkit_fs::meta::Xattr], name: &str) -> Option<Vec<u8>> {
    list.iter()
        .find(|x| x.name == name)
        .map(|x| x.value.clone())
}

#[test]
fn owner_then_xattrs_then_mode_then_times_keeps_setuid_and_capabilities() {
    for fs in Fs::MAIN {
        let Some(dir) = scratch(fs) else { continue };
        let path = dir.path().join("ping");
        let f = File::create(&path).unwrap();
        let h = Handle::new(&f, &path);
        let meta = Meta {
            uid: Some(1234),
            gid: Some(5678),
            mode: Some(0o4755),
            atime: Some(Timespec {
                tv_sec: 1_000_000_000,
                tv_nsec: 123_456_789,
            }),
            mtime: Some(Timespec {
                tv_sec: 1_500_000_000,
                tv_nsec: 987_654_321,
            }),
            xattrs: vec![
                xattr("security.capability", cap_net_raw()),
                xattr("user.origin", "test"),
            ],
        };
        let done = apply(h, &meta, None).unwrap();
        assert!(done.chown && done.chmod && done.times, "{fs:?}");
        assert_eq!(done.xattrs, 2);
        let md = std::fs::metadata(&path).unwrap();
        assert_eq!((md.uid(), md.gid()), (1234, 5678), "{fs:?}");
        assert_eq!(
            md.permissions().mode() & 0o7777,
            0o4755,
            "{fs:?}: setuid lost"
        );
        assert_eq!(
            (md.mtime(), md.mtime_nsec()),
            (1_500_000_000, 987_654_321),
            "{fs:?}"
        );
        assert_eq!(
            (md.atime(), md.atime_nsec()),
            (1_000_000_000, 123_456_789),
            "{fs:?}"
        );
        let xs = list_xattrs(h).unwrap();
        assert_eq!(
            get(&xs, "security.capability"),
            Some(cap_net_raw()),
            "{fs:?}: capability lost"
        );
        assert_eq!(get(&xs, "user.origin"), Some(b"test".to_vec()), "{fs:?}");

        // The order matters: a chown after these would clear both, which is
        // why `apply` chowns first.
        rustix::fs::fchown(&f, Some(rustix::fs::Uid::from_raw(1)), None).unwrap();
        let md = std::fs::metadata(&path).unwrap();
        assert_eq!(
            md.permissions().mode() & 0o4000,
            0,
            "{fs:?}: kernel kept setuid over chown?"
        );
        assert_eq!(
            get(&list_xattrs(h).unwrap(), "security.capability"),
            None,
            "{fs:?}"
        );
    }
}

#[test]
fn unchanged_owner_and_mode_are_not_reapplied() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let path = dir.path().join("f");
    let f = File::create(&path).unwrap();
    let st = rustix::fs::fstat(&f).unwrap();
    let meta = Meta::from_stat(&st);
    let done = apply(Handle::new(&f, &path), &meta, Some(&st)).unwrap();
    assert!(!done.chown && !done.chmod, "{done:?}");
    assert!(done.times);
    // A different owner is applied, and then the mode is re-applied too,
    // because chown may have cleared setuid/setgid.
    let other = Meta {
        uid: Some(st.st_uid + 1),
        ..meta
    };
    let done = apply(Handle::new(&f, &path), &other, Some(&st)).unwrap();
    assert!(done.chown && done.chmod, "{done:?}");
}

#[test]
fn xattrs_copy_between_filesystems() {
    for (a, b) in [
        (Fs::Xfs, Fs::Btrfs),
        (Fs::Btrfs, Fs::Ext4),
        (Fs::Ext4, Fs::Tmpfs),
        (Fs::Tmpfs, Fs::Xfs),
    ] {
        let (Some(da), Some(db)) = (scratch(a), scratch(b)) else {
            continue;
        };
        let (sp, dp) = (da.path().join("s"), db.path().join("d"));
        let (s, d) = (File::create(&sp).unwrap(), File::create(&dp).unwrap());
        let hs = Handle::new(&s, &sp);
        for x in [
            xattr("user.a", "1"),
            xattr("user.empty", ""),
            xattr("trusted.t", vec![0u8, 1, 2, 255]),
            xattr("security.capability", cap_net_raw()),
        ] {
            cowkit_fs::meta::set_xattr(hs, &x).unwrap();
        }
        let n = copy_xattrs(hs, Handle::new(&d, &dp)).unwrap();
        let mut want = list_xattrs(hs).unwrap();
        let mut got = list_xattrs(Handle::new(&d, &dp)).unwrap();
        want.sort_by(|x, y| x.name.cmp(&y.name));
        got.sort_by(|x, y| x.name.cmp(&y.name));
        assert!(n >= 4, "{a:?}->{b:?}: {n}");
        assert_eq!(got, want, "{a:?}->{b:?}");
    }
}

#[test]
fn xattr_errors_name_the_file_and_attribute() {
    let Some(dir) = scratch(Fs::Ext4) else { return };
    let path = dir.path().join("f");
    let f = File::create(&path).unwrap();
    let err =
        cowkit_fs::meta::set_xattr(Handle::new(&f, &path), &xattr("bogus.ns", "x")).unwrap_err();
    let msg = format!("{err}: {}", std::error::Error::source(&err).unwrap());
    assert!(
        msg.contains("bogus.ns") && msg.contains(&path.display().to_string()),
        "{msg}"
    );
}

#[test]
fn symlink_metadata_is_applied_to_the_link_not_its_target() {
    use cowkit_fs::meta::apply_symlink_at;
    for fs in Fs::MAIN {
        let Some(dir) = scratch(fs) else { continue };
        let target = dir.path().join("target");
        std::fs::write(&target, b"t").unwrap();
        let before = std::fs::metadata(&target).unwrap();
        std::os::unix::fs::symlink("target", dir.path().join("link")).unwrap();
        let d = File::open(dir.path()).unwrap();
        let meta = Meta {
            uid: Some(4321),
            gid: Some(8765),
            mode: Some(0o777),
            mtime: Some(Timespec {
                tv_sec: 1_234_567_890,
                tv_nsec: 5,
            }),
            atime: None,
            xattrs: vec![xattr("trusted.link", "yes")],
        };
        apply_symlink_at(&d, dir.path(), "link".as_ref(), &meta).unwrap();
        let l = std::fs::symlink_metadata(dir.path().join("link")).unwrap();
        assert_eq!((l.uid(), l.gid()), (4321, 8765), "{fs:?}");
        assert_eq!((l.mtime(), l.mtime_nsec()), (1_234_567_890, 5), "{fs:?}");
        let t = std::fs::metadata(&target).unwrap();
        assert_eq!(
            (t.uid(), t.gid(), t.mtime()),
            (before.uid(), before.gid(), before.mtime()),
            "{fs:?}"
        );
        let mut buf = [0u8; 16];
        let n = rustix::fs::lgetxattr(dir.path().join("link"), "trusted.link", &mut buf).unwrap();
        assert_eq!(&buf[..n], b"yes", "{fs:?}");
    }
}

/// Issue 28: the reader tries a small buffer first (the kernel allocates
/// as much as it is given); name lists and values longer than that are
/// asked their size and still read whole.
#[test]
fn xattrs_longer_than_the_first_try_are_read_whole() {
    for fs in [Fs::Xfs, Fs::Tmpfs] {
        let Some(dir) = scratch(fs) else { continue };
        let p = dir.path().join("f");
        let f = File::create(&p).unwrap();
        let h = Handle::new(&f, &p);
        let mut want = vec![xattr("user.big", vec![7u8; 10_000])];
        for i in 0..20 {
            want.push(xattr(
                &format!("user.{i:02}-{}", "n".repeat(40)),
                vec![i; 300],
            ));
        }
        for x in &want {
            cowkit_fs::meta::set_xattr(h, x).unwrap();
        }
        let mut got = list_xattrs(h).unwrap();
        want.sort_by(|x, y| x.name.cmp(&y.name));
        got.sort_by(|x, y| x.name.cmp(&y.name));
        assert_eq!(got, want, "{fs:?}");
    }
}
