//! The Fedora-shaped repository of `cowkit_testutil::fedora` with the real
//! `dnf` (as root): install on an empty root, upgrade to v2 (a second
//! install-only kernel, a rename by `Obsoletes`, a changed library, httpd
//! 2.x), removal; every scriptlet and trigger logs a line. With
//! `COWKIT_FEDORA_REF=DIR` the logs and `rpm -qa`/`rpm -Va` outputs are
//! written to `DIR` for reading.

use std::path::Path;

use cowkit_testutil::fedora::{build, specs, INSTALL, LOG, REMOVE};
use cowkit_testutil::repo::{dnf, rpm_in, verify};
use cowkit_testutil::{required, run_ok, scratch, Fs};

fn as_root(test: &str) -> bool {
    if rustix::process::geteuid().is_root() {
        return true;
    }
    assert!(
        !required(),
        "{test} needs root (rpm chroots to run scriptlets)"
    );
    eprintln!("SKIPPED: {test} needs root");
    false
}

fn log(root: &Path) -> String {
    std::fs::read_to_string(root.join(LOG.trim_start_matches('/'))).unwrap_or_default()
}

fn qa(root: &Path) -> String {
    let out = run_ok(rpm_in(root).args(["-qa", "--qf", "%{NEVRA}\\n"]), "rpm -qa");
    let mut l: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    l.sort();
    l.join("\n") + "\n"
}

#[test]
fn dnf_runs_every_scriptlet_of_the_fedora_shaped_repository() {
    if !as_root("dnf_runs_every_scriptlet_of_the_fedora_shaped_repository") {
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let repo = build(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let d = dir.path();
    let root = d.join("root");
    let cache = d.join("cache");
    let out_dir = std::env::var_os("COWKIT_FEDORA_REF").map(std::path::PathBuf::from);
    if let Some(o) = &out_dir {
        let spec_dir = o.join("specs");
        std::fs::create_dir_all(&spec_dir).unwrap();
        for (name, text) in specs() {
            std::fs::write(spec_dir.join(name.replace(".noarch.rpm", ".spec")), text).unwrap();
        }
    }
    let mut before = 0;
    for (step, args) in [
        ("install", INSTALL.to_vec()),
        ("upgrade", vec![]),
        ("remove", REMOVE.to_vec()),
    ] {
        let r = if step == "install" {
            &repo.v1
        } else {
            &repo.v2
        };
        let out = dnf(r, &root, &cache)
            .arg(step)
            .args(&args)
            .output()
            .unwrap();
        let all = log(&root);
        let part = all[before..].to_string();
        before = all.len();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        eprintln!("== dnf {step}: {}\n{stderr}\n{part}", out.status);
        if let Some(o) = &out_dir {
            std::fs::create_dir_all(o).unwrap();
            std::fs::write(o.join(format!("{step}.log")), &part).unwrap();
            std::fs::write(o.join(format!("{step}.dnf-stderr")), &stderr).unwrap();
            std::fs::write(o.join(format!("rpm-qa.{step}")), qa(&root)).unwrap();
            std::fs::write(
                o.join(format!("rpm-Va.{step}")),
                verify(&root).join("\n") + "\n",
            )
            .unwrap();
        }
        assert!(out.status.success(), "dnf {step}: {stderr}");
    }
}
