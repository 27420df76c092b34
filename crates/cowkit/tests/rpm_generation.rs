//! The rpm that registers a root must be of a generation whose rules
//! cowkit runs transactions by (rpm 4.18 or 4.20): another one is refused
//! before the root is touched, naming its version and what differs.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use cowkit_testutil::rpm::build_rpm_cached;
use cowkit_testutil::tree::snapshot;
use cowkit_testutil::{scratch, Fs};

mod common;
use common::{as_root, cowkit, run, tmp, Run};

/// An `rpm` that answers `--version` as `version` and is the host's rpm
/// for everything else.
fn rpm_reporting(dir: &Path, version: &str) -> std::path::PathBuf {
    let path = dir.join(format!("rpm-{version}"));
    let real = String::from_utf8(
        std::process::Command::new("sh")
            .args(["-c", "command -v rpm"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'RPM version {version}'; exit 0; fi\nexec {} \"$@\"\n",
            real.trim()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn install(root: &Path, rpm: Option<&Path>, pkg: &Path) -> Run {
    let mut c = cowkit();
    if let Some(rpm) = rpm {
        c.env("COWKIT_RPM", rpm);
    }
    run(c.arg("install").arg("--root").arg(root).arg(pkg))
}

#[test]
fn an_rpm_of_another_generation_is_refused_before_the_root_is_touched() {
    if !as_root(
        "an_rpm_of_another_generation_is_refused_before_the_root_is_touched",
        "packages are installed as root",
    ) {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let pkg = build_rpm_cached(
        tmp(),
        "ck-generation",
        "mkdir -p %{buildroot}/usr/share/ck-generation\necho hi > %{buildroot}/usr/share/ck-generation/a",
        "/usr/share/ck-generation/a",
        "zstd",
    );
    for (version, names) in [
        ("4.19.1.1", &["rpm 4.19.1", "%postuntrans", "sysusers"][..]),
        ("4.16.1.3", &["rpm 4.16.1", "rpm 4.18 and 4.20 only"][..]),
        ("4.21.0", &["rpm 4.21.0", "rpm 4.18 and 4.20 only"][..]),
    ] {
        let root = dir.path().join(format!("root-{version}"));
        std::fs::create_dir(&root).unwrap();
        let before = snapshot(&root);
        let r = install(&root, Some(&rpm_reporting(dir.path(), version)), &pkg);
        assert!(!r.ok, "rpm {version} taken:\n{}", r.stderr);
        for n in names {
            assert!(
                r.stderr.contains(n),
                "rpm {version}: no `{n}` in:\n{}",
                r.stderr
            );
        }
        assert!(r.stderr.contains("hint:"), "{}", r.stderr);
        assert_eq!(snapshot(&root), before, "rpm {version}: the root changed");
    }
    // rpm 4.18 itself, through the same wrapper: installed and registered.
    let root = dir.path().join("root-4.18");
    std::fs::create_dir(&root).unwrap();
    let r = install(&root, Some(&rpm_reporting(dir.path(), "4.18.0")), &pkg);
    assert!(r.ok, "{}", r.stderr);
    assert!(root.join("usr/share/ck-generation/a").exists());
}
