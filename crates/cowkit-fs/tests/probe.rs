//! The probe says the right thing on each rig filesystem and across them.

use cowkit_fs::probe::{probe_pair, CopyFileRange, Support};
use cowkit_fs::{Method, Reason};
use cowkit_testutil::{scratch, Fs};
use rustix::io::Errno;

#[test]
fn probe_on_each_filesystem() {
    for fs in Fs::MAIN {
        let Some(dir) = scratch(fs) else { continue };
        let pr = probe_pair(dir.path(), dir.path()).unwrap();
        assert_eq!(pr.src.fs_type, fs.type_name(), "{fs:?}");
        assert_eq!(pr.src.magic, fs.magic(), "{fs:?}");
        assert_eq!(pr.src.block_size, 4096, "{fs:?}");
        assert!(pr.same_device);
        assert!(pr.src.mount_point.is_some(), "{fs:?}");
        if fs.reflinks() {
            assert_eq!(pr.reflink, Support::Yes, "{fs:?}");
            assert_eq!(pr.copy_file_range, CopyFileRange::Clones, "{fs:?}");
            assert_eq!(pr.best, Method::Clone, "{fs:?}");
        } else {
            assert_eq!(
                pr.reflink,
                Support::No(Reason::Errno(Errno::OPNOTSUPP)),
                "{fs:?}"
            );
            assert_eq!(pr.copy_file_range, CopyFileRange::Copies, "{fs:?}");
            assert_eq!(pr.best, Method::CopyFileRange, "{fs:?}");
        }
        // The probe leaves nothing behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "{fs:?}");
    }
}

#[test]
fn probe_across_filesystems_says_exdev() {
    for (a, b) in [
        (Fs::Xfs, Fs::Ext4),
        (Fs::Xfs, Fs::Xfs2),
        (Fs::Btrfs, Fs::Tmpfs),
    ] {
        let (Some(da), Some(db)) = (scratch(a), scratch(b)) else {
            continue;
        };
        let pr = probe_pair(da.path(), db.path()).unwrap();
        assert!(!pr.same_device, "{a:?}->{b:?}");
        assert_eq!(pr.dst.fs_type, b.type_name());
        assert_eq!(
            pr.reflink,
            Support::No(Reason::Errno(Errno::XDEV)),
            "{a:?}->{b:?}"
        );
        assert_eq!(
            pr.copy_file_range,
            CopyFileRange::Refused(Reason::Errno(Errno::XDEV)),
            "{a:?}->{b:?}"
        );
        assert_eq!(pr.best, Method::ReadWrite);
    }
}

#[test]
fn probe_of_a_file_uses_its_directory() {
    let Some(dir) = scratch(Fs::Btrfs) else {
        return;
    };
    let f = dir.path().join("file");
    std::fs::write(&f, b"x").unwrap();
    let pr = probe_pair(&f, &f).unwrap();
    assert_eq!(pr.reflink, Support::Yes);
    assert_eq!(pr.src.path, f);
}
