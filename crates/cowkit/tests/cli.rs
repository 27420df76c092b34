//! The `cowkit` binary on the rig's filesystems.

use std::path::Path;
use std::process::Command;

use cowkit_testutil::{scratch, Fs};

fn cowkit(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_cowkit"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn probe_json(a: &Path, b: Option<&Path>) -> serde_json::Value {
    let mut args = vec!["probe".as_ref(), "--json".as_ref(), a.as_os_str()];
    args.extend(b.map(|b| b.as_os_str()));
    let (ok, out, err) = cowkit(&args);
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn probe_says_the_right_thing_on_each_filesystem() {
    for fs in Fs::MAIN {
        let Some(dir) = scratch(fs) else { continue };
        let v = probe_json(dir.path(), None);
        assert_eq!(v["src"]["fs_type"], fs.type_name(), "{fs:?}");
        assert_eq!(v["src"]["block_size"], 4096);
        let (ok, text, _) = cowkit(&["probe".as_ref(), dir.path().as_os_str()]);
        assert!(ok);
        assert!(
            text.contains(&format!(": {}, block size 4096", fs.type_name())),
            "{text}"
        );
        if fs.reflinks() {
            assert_eq!(v["reflink"]["result"], "yes", "{fs:?}");
            assert_eq!(v["copy_file_range"]["result"], "clones", "{fs:?}");
            assert_eq!(v["best"], "clone");
            assert!(text.contains("reflink:         yes"), "{text}");
            assert!(!text.contains("hint:"), "{text}");
        } else {
            assert_eq!(v["reflink"]["result"], "no", "{fs:?}");
            assert_eq!(v["reflink"]["reason"], "EOPNOTSUPP", "{fs:?}");
            assert_eq!(v["copy_file_range"]["result"], "copies", "{fs:?}");
            assert_eq!(v["best"], "copy_file_range");
            assert!(text.contains("reflink:         no (EOPNOTSUPP"), "{text}");
            assert!(text.contains("hint:"), "{text}");
        }
    }
}

#[test]
fn probe_of_a_cross_filesystem_pair_says_exdev() {
    let (Some(a), Some(b)) = (scratch(Fs::Xfs), scratch(Fs::Btrfs)) else {
        return;
    };
    let v = probe_json(a.path(), Some(b.path()));
    assert_eq!(v["same_device"], false);
    assert_eq!(v["dst"]["fs_type"], "btrfs");
    assert_eq!(v["reflink"]["reason"], "EXDEV");
    assert_eq!(v["copy_file_range"]["result"], "refused");
    assert_eq!(v["best"], "read_write");
}

#[test]
fn probe_of_a_missing_path_fails_with_the_path_and_a_hint() {
    let (ok, _, err) = cowkit(&["probe".as_ref(), "/nonexistent/cowkit".as_ref()]);
    assert!(!ok);
    assert!(
        err.contains("error: cannot probe `/nonexistent/cowkit`"),
        "{err}"
    );
    assert!(err.contains("caused by:") && err.contains("hint:"), "{err}");
}

#[test]
fn demo_clones_on_xfs_and_falls_back_on_ext4() {
    for fs in [Fs::Xfs, Fs::Ext4] {
        let Some(dir) = scratch(fs) else { continue };
        let (ok, out, err) = cowkit(&[
            "demo".as_ref(),
            "--json".as_ref(),
            "--size-mib".as_ref(),
            "8".as_ref(),
            dir.path().as_os_str(),
        ]);
        assert!(ok, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(v["cowkit"]["identical"], true);
        if fs.reflinks() {
            assert_eq!(v["cowkit"]["method"], "clone");
            assert_eq!(v["cowkit"]["shared_bytes"], 8 << 20);
        } else {
            assert_eq!(v["cowkit"]["method"], "copy_file_range");
            assert_eq!(v["cowkit"]["fallbacks"][0]["reason"], "EOPNOTSUPP");
        }
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "demo files left behind"
        );
    }
}

#[test]
fn every_subcommand_has_help_and_there_is_a_version() {
    for args in [
        &["--help"][..],
        &["--version"],
        &["probe", "--help"],
        &["demo", "--help"],
    ] {
        let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_ref()).collect();
        let (ok, out, _) = cowkit(&args);
        assert!(ok && !out.is_empty(), "{args:?}");
    }
}
