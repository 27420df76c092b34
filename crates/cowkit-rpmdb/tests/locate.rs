//! Where a root's rpm database is: an existing one (through in-root
//! symlinks), the root's own macros, the default; never outside the root.

use std::os::unix::fs::symlink;
use std::path::Path;

use cowkit_fs::root::Root;
use cowkit_rpmdb::{find, locate, Source};

fn root_in(dir: &Path) -> Root {
    Root::open(dir).unwrap()
}

#[test]
fn an_empty_root_gets_the_default_and_nothing_before_it_is_needed() {
    let d = tempfile::tempdir().unwrap();
    let root = root_in(d.path());
    assert_eq!(find(&root, None).unwrap(), None);
    assert_eq!(find(&root, Some("/var/lib/rpm")).unwrap(), None);
    assert!(
        std::fs::read_dir(d.path()).unwrap().next().is_none(),
        "find created something"
    );
    let db = locate(&root, None).unwrap();
    assert_eq!(db.path, "/var/lib/rpm");
    assert_eq!(db.source, Source::Default);
    assert!(d.path().join("var/lib/rpm").is_dir());
}

#[test]
fn an_existing_database_wins_through_an_in_root_symlink() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("usr/lib/sysimage/rpm")).unwrap();
    std::fs::write(d.path().join("usr/lib/sysimage/rpm/rpmdb.sqlite"), b"").unwrap();
    std::fs::create_dir_all(d.path().join("var/lib")).unwrap();
    symlink("../../usr/lib/sysimage/rpm", d.path().join("var/lib/rpm")).unwrap();
    // Macros that say otherwise lose against the existing database.
    std::fs::create_dir_all(d.path().join("etc/rpm")).unwrap();
    std::fs::write(d.path().join("etc/rpm/macros"), "%_dbpath /elsewhere\n").unwrap();
    let root = root_in(d.path());
    let db = locate(&root, None).unwrap();
    assert_eq!(db.path, "/usr/lib/sysimage/rpm");
    assert_eq!(db.source, Source::Existing);
    // --dbpath through the symlink resolves to the real directory.
    let db = locate(&root, Some("/var/lib/rpm")).unwrap();
    assert_eq!(db.path, "/usr/lib/sysimage/rpm");
    assert_eq!(db.source, Source::Option);
}

#[test]
fn the_roots_macros_decide_a_new_database() {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("usr/lib/rpm/macros.d")).unwrap();
    std::fs::write(
        d.path().join("usr/lib/rpm/macros"),
        "%_var /var\n%_usr /usr\n%_dbpath %{_var}/lib/rpm\n",
    )
    .unwrap();
    std::fs::write(
        d.path().join("usr/lib/rpm/macros.d/macros.fedora"),
        "%_dbpath\t\t%{_usr}/lib/sysimage/rpm\n",
    )
    .unwrap();
    let root = root_in(d.path());
    let db = locate(&root, None).unwrap();
    assert_eq!(db.path, "/usr/lib/sysimage/rpm");
    assert_eq!(
        db.source,
        Source::RootMacros("/usr/lib/rpm/macros.d/macros.fedora".into())
    );

    // A definition that would need a shell is not evaluated: the default.
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("etc/rpm")).unwrap();
    std::fs::write(
        d.path().join("etc/rpm/macros"),
        "%_dbpath %(touch /tmp/cowkit-must-not-run; echo ~)/.rpmdb\n",
    )
    .unwrap();
    let root = root_in(d.path());
    let db = locate(&root, None).unwrap();
    assert_eq!(db.path, "/var/lib/rpm");
    assert_eq!(db.source, Source::Default);
}

#[test]
fn an_absolute_symlink_never_leads_outside_the_root() {
    let outside = tempfile::tempdir().unwrap();
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(d.path().join("var/lib")).unwrap();
    symlink(outside.path(), d.path().join("var/lib/rpm")).unwrap();
    let root = root_in(d.path());
    // The link resolves inside the root, where its target does not exist:
    // locate makes it there, or fails; the host directory stays empty.
    if let Ok(db) = locate(&root, None) {
        assert!(
            d.path().join(db.path.trim_start_matches('/')).is_dir(),
            "{db:?}"
        );
    }
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    // A relative path or `..` is refused.
    assert!(locate(&root, Some("var/lib/rpm")).is_err());
    assert!(locate(&root, Some("/var/../../etc")).is_err());
}
