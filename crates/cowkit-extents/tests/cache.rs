//! The cache of extents files against a symlink or a file of another
//! user at an entry's name (issue 25): lookups do not follow it, a new
//! entry gets its mode on its descriptor and replaces the name, never
//! what it points to; a cache directory others can change is refused.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use cowkit_extents::cache::{Cache, CacheError, Lookup, Unsafe, ENTRY_MODE};

const DIGEST: &str = "c3e0963ccf3f2472405289b0abaf058ca7ef164ed57c800cd65e0ec0b5c9f1ee";

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn an_entry_that_is_a_symlink_is_damaged_and_replaced_not_followed() {
    let d = tempfile::tempdir().unwrap();
    let target = d.path().join("target");
    std::fs::write(&target, "not yours\n").unwrap();
    chmod(&target, 0o600);
    let cache = Cache::open(&d.path().join("cache")).unwrap();
    let entry = cache.path_for(DIGEST).unwrap();
    std::os::unix::fs::symlink(&target, &entry).unwrap();

    match cache.lookup(DIGEST).unwrap() {
        Lookup::Damaged(p, why) => {
            assert_eq!(p, entry);
            assert!(why.to_string().contains("symlink"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    let new = cache.new_entry(DIGEST).unwrap();
    new.file().write_all(b"an extents file\n").unwrap();
    assert_eq!(new.commit().unwrap(), entry);

    let m = std::fs::symlink_metadata(&entry).unwrap();
    assert!(m.file_type().is_file(), "{m:?}");
    assert_eq!(m.mode() & 0o7777, ENTRY_MODE);
    let t = std::fs::metadata(&target).unwrap();
    assert_eq!(t.mode() & 0o7777, 0o600, "the symlink's target was changed");
    assert_eq!(std::fs::read(&target).unwrap(), b"not yours\n");
    // Not an extents file, but a regular one of ours: damaged, not a symlink.
    match cache.lookup(DIGEST).unwrap() {
        Lookup::Damaged(_, why) => assert!(!why.to_string().contains("symlink"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_entry_others_may_write_is_damaged() {
    let d = tempfile::tempdir().unwrap();
    let cache = Cache::open(&d.path().join("cache")).unwrap();
    let entry = cache.path_for(DIGEST).unwrap();
    std::fs::write(&entry, "x").unwrap();
    chmod(&entry, 0o666);
    match cache.lookup(DIGEST).unwrap() {
        Lookup::Damaged(_, why) => assert!(why.to_string().contains("writable"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn cache_directories_others_can_write_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("cache");
    let cache = Cache::open(&dir).unwrap();
    let fan = cache.path_for(DIGEST).unwrap();
    let fan = fan.parent().unwrap();
    drop(cache);
    for (what, mode) in [(fan, 0o775), (fan, 0o757), (dir.as_path(), 0o777)] {
        chmod(what, mode);
        match Cache::open(&dir) {
            Err(CacheError::Unsafe {
                path,
                why: Unsafe::Writable { mode: m },
            }) => assert_eq!((path.as_path(), m), (what, mode)),
            other => panic!("{what:?} {mode:o}: {other:?}"),
        }
        chmod(what, 0o755);
    }
    let open = d.path().join("open");
    std::fs::create_dir(&open).unwrap();
    chmod(&open, 0o777);
    match Cache::open(&open.join("cache")) {
        Err(CacheError::Unsafe {
            path,
            why: Unsafe::Parent { mode: 0o777 },
        }) => assert_eq!(path, open),
        other => panic!("{other:?}"),
    }
    chmod(&open, 0o1777);
    Cache::open(&open.join("cache")).unwrap();
    // The cache's own path may be a symlink: its target is checked.
    std::os::unix::fs::symlink(&dir, d.path().join("link")).unwrap();
    Cache::open(&d.path().join("link")).unwrap();
    chmod(&dir, 0o777);
    match Cache::open(&d.path().join("link")) {
        Err(CacheError::Unsafe {
            why: Unsafe::Writable { mode: 0o777 },
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
}
