//! The transaction library: a package swapped for another after the check
//! is refused when it is opened, and nothing of it is placed.

mod common;

use cowkit_fs::root::Root;
use cowkit_install::{prepare, NoProgress, TxOptions};
use cowkit_testutil::tree::mkdir;
use cowkit_testutil::{scratch, Fs};

use common::{build_rpm, transcode};

#[test]
fn a_file_swapped_after_the_check_is_refused() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let a = build_rpm(
        "cowkit-swap-a",
        "mkdir -p %{buildroot}/opt/a\necho a > %{buildroot}/opt/a/file",
        "/opt/a",
        "w9.gzdio",
    );
    let b = build_rpm(
        "cowkit-swap-b",
        "mkdir -p %{buildroot}/opt/b\necho b > %{buildroot}/opt/b/file",
        "/opt/b",
        "w9.gzdio",
    );
    let b_rpme = dir.path().join("b.rpme");
    transcode(&b, &b_rpme);
    let root_dir = mkdir(&dir.path().join("root"));
    let root = Root::open(&root_dir).unwrap();
    let opts = TxOptions {
        jobs: 1,
        noscripts: true,
        ..TxOptions::default()
    };
    let mut prepared = prepare(&root, std::slice::from_ref(&a), &opts).unwrap();
    prepared.use_files(|_| b_rpme.clone());
    let sum = prepared.run(&NoProgress).unwrap();
    assert_eq!(sum.failed.len(), 1, "{sum:?}");
    let why = sum.failed[0].error.join(": ");
    assert!(why.contains("is not the package that was checked"), "{why}");
    assert!(!root_dir.join("opt").exists(), "something was placed");
}
