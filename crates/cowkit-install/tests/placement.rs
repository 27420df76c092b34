//! Nothing an install places can be seen before the verdict it waits for
//! (`cowkit_install::Gate`, rpm's check of a new root's transaction):
//! while the verdict is asked, the root looks as it did before the
//! install (only the install's temporary names are new), and a verdict
//! that does not pass leaves it so.
//!
//! Run on the rig: `bash scripts/rig.sh cargo test -p cowkit-install --test placement`.

#[expect(
    unused_imports,
    reason = "the shared helpers re-export more than this suite uses"
)]
mod common;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::*;
use cowkit_install::{Error, Gate, Options};
use cowkit_testutil::{scratch, Fs};

/// What can be seen of an entry: everything but a directory's times
/// (a directory gets a temporary name in it, unseen, while the install
/// builds a new tree there).
type Seen = (Shape, u32, u32, (u64, u64), i64);

fn seen(e: &Entry) -> Seen {
    let mtime = if e.kind == 'd' { 0 } else { e.mtime };
    (e.shape(), e.uid, e.gid, e.ino, mtime)
}

/// The root as it can be seen: the install's temporary names (`.ck…`)
/// and what is below them left out.
fn visible(root: &Path) -> Tree {
    snapshot(root)
        .into_iter()
        .filter(|(p, _)| !p.split('/').any(|c| c.starts_with(".ck")))
        .collect()
}

/// The roots the install goes into: a new one (the package's whole tree
/// is new); one where the package's directory exists, with a file the
/// package replaces and a file of someone else's; one where a file stands
/// where the package has a directory.
fn roots(dir: &Path, name: &str) -> [(&'static str, PathBuf); 3] {
    let root = |kind: &str| {
        let r = mkdir(&dir.join(format!("{name}-{kind}")));
        write_owner_db(&r);
        r
    };
    let new = root("new");
    let existing = root("existing");
    let d = mkdir(&existing.join(FIXTURE));
    std::fs::write(d.join("small.txt"), b"the old version\n").unwrap();
    std::fs::write(d.join("theirs"), b"kept\n").unwrap();
    let in_the_way = root("in-the-way");
    let d = mkdir(&in_the_way.join(FIXTURE));
    std::fs::write(d.join("emptydir"), b"in the way\n").unwrap();
    [
        ("new", new),
        ("existing", existing),
        ("in-the-way", in_the_way),
    ]
}

fn packages(dir: &Path) -> [PathBuf; 2] {
    let rpm = fixture(PAYLOADS[0]);
    let rpme = dir.join("pkg.rpme");
    transcode(&rpm, &rpme);
    [rpm, rpme]
}

fn install_gated(root: &Path, pkg: &Path, gate: Gate) -> Result<cowkit_install::Summary, Error> {
    let opts = Options {
        threads: 2,
        gate: Some(gate),
        ..Options::default()
    };
    install_with(root, pkg, &opts)
}

#[test]
fn nothing_placed_can_be_seen_while_the_verdict_is_asked() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    for pkg in packages(dir.path()) {
        let name = pkg.extension().unwrap().to_str().unwrap().to_string();
        for (kind, root) in roots(dir.path(), &name) {
            let what = format!("{kind} root, from .{name}");
            let before = visible(&root);
            let at_ask: Arc<Mutex<Option<Tree>>> = Arc::default();
            let gate = {
                let (root, at_ask) = (root.clone(), Arc::clone(&at_ask));
                Gate::new(move || {
                    *at_ask.lock().unwrap() = Some(visible(&root));
                    Ok(())
                })
            };
            let s = install_gated(&root, &pkg, gate)
                .unwrap_or_else(|e| panic!("{what}: {}", chain(&e)));
            let at_ask = at_ask.lock().unwrap().take();
            let at_ask = at_ask.unwrap_or_else(|| panic!("{what}: the verdict was never asked"));
            let d = diff(&before, &at_ask, seen);
            assert!(d.is_empty(), "{what}: seen before the verdict: {d:#?}");

            // Then everything is in place.
            assert_eq!((s.files, s.symlinks), (11, 2), "{what}");
            let t = snapshot(&root.join(FIXTURE));
            for (rel, e) in cpio_tree()
                .iter()
                .filter_map(|(p, e)| Some((p.strip_prefix(&format!("{FIXTURE}/"))?, e)))
            {
                assert_eq!(t[rel].shape(), e.shape(), "{what}: {rel}");
            }
            if kind == "existing" {
                let theirs = std::fs::read(root.join(FIXTURE).join("theirs")).unwrap();
                assert_eq!(theirs, b"kept\n", "{what}");
            }
            assert_eq!(temporary_names(&root), Vec::<String>::new(), "{what}");
        }
    }
}

#[test]
fn a_verdict_that_does_not_pass_leaves_the_root_as_it_was() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    for pkg in packages(dir.path()) {
        let name = pkg.extension().unwrap().to_str().unwrap().to_string();
        for (what, root) in roots(dir.path(), &name) {
            let what = format!("{what} root, from .{name}");
            let before = snapshot(&root);
            let gate = Gate::new(|| Err(Error::Refused));
            match install_gated(&root, &pkg, gate) {
                Err(Error::Refused) => {}
                other => panic!("{what}: {other:?}"),
            }
            let d = diff(&before, &snapshot(&root), seen);
            assert!(d.is_empty(), "{what}: changed: {d:#?}");
            assert_eq!(temporary_names(&root), Vec::<String>::new(), "{what}");
        }
    }
}

/// Packages placed side by side (the runner places a run of packages
/// without scriptlets in parallel) make the same new directories: each
/// builds its own under a temporary name, and whichever renames second
/// finds the directory there, at any point of its own placing (here, into
/// new roots, where every directory is new to both).
#[test]
fn packages_placed_side_by_side_share_their_new_directories() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let dirs: Vec<String> = (0..48).map(|i| format!("/top{i}/sub")).collect();
    let pkgs: Vec<PathBuf> = ["a", "b"]
        .iter()
        .map(|n| {
            let install: String = dirs
                .iter()
                .map(|d| {
                    format!("mkdir -p %{{buildroot}}{d}/{n}; echo {n} > %{{buildroot}}{d}/{n}/f\n")
                })
                .collect();
            let files: String = dirs.iter().map(|d| format!("{d}/{n}\n")).collect();
            let rpm = build_rpm(&format!("cowkit-side-{n}"), &install, &files, "w19.zstdio");
            let rpme = dir.path().join(format!("{n}.rpme"));
            transcode(&rpm, &rpme);
            rpme
        })
        .collect();
    for round in 0..300 {
        let root = mkdir(&dir.path().join(format!("root{round}")));
        write_owner_db(&root);
        let go = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            for (i, pkg) in pkgs.iter().enumerate() {
                let (root, go) = (&root, &go);
                s.spawn(move || {
                    go.wait();
                    // The second starts later and later: its placing
                    // meets the first's at every point.
                    std::thread::sleep(std::time::Duration::from_micros((i * round * 40) as u64));
                    install_with(root, pkg, &Options::default()).unwrap_or_else(|e| {
                        panic!("round {round}: {}: {}", pkg.display(), chain(&e))
                    });
                });
            }
        });
        for d in &dirs {
            for n in ["a", "b"] {
                let f = root.join(d.trim_start_matches('/')).join(n).join("f");
                assert_eq!(
                    std::fs::read_to_string(&f).unwrap(),
                    format!("{n}\n"),
                    "round {round}"
                );
            }
        }
        assert_eq!(
            temporary_names(&root),
            Vec::<String>::new(),
            "round {round}"
        );
    }
}
