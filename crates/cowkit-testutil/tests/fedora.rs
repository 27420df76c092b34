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
            std::fs::write(spec_dir.join(name.replace(".rpm", ".spec")), text).unwrap();
        }
    }
    let mut before = 0;
    let mut logs = Vec::new();
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
        assert!(stderr.trim().is_empty(), "dnf {step} warned: {stderr}");
        logs.push(part);
    }
    assert_rpm_4_18_facts(&logs, &root);
}

/// What rpm 4.18 did with these shapes (the facts cowkit must match).
fn assert_rpm_4_18_facts(logs: &[String], root: &Path) {
    let [install, upgrade, remove] = logs else {
        unreachable!()
    };
    let has = |log: &str, line: &str| log.lines().any(|l| l == line);
    assert!(
        install.starts_with("filesystem-3.18 pretrans [<lua> 1]\nsetup-2.14.5 post [<lua> 1]\n"),
        "{install}"
    );
    // `%post -p /sbin/ldconfig`: no arguments.
    assert!(has(install, "ldconfig []"), "{install}");
    // A name trigger with a version condition: fires for httpd 1.3 only.
    assert!(
        has(install, "mod_legacy-1.0 triggerin(httpd<2.0) [1 1]"),
        "{install}"
    );
    assert!(!upgrade.contains("triggerin(httpd<2.0)"), "{upgrade}");
    assert!(
        has(upgrade, "mod_legacy-1.0 triggerun(httpd<2.0) [1 1]"),
        "{upgrade}"
    );
    // Lua globals persist between scriptlets of one process.
    assert!(
        has(
            install,
            "mandoc-1.14.6 makewhatis after install: 9 pending from this process"
        ),
        "{install}"
    );
    // rpm.expand at run time sees the installing rpm's macros.
    assert!(
        has(
            install,
            "systemd-255 rpm.expand: /usr /usr/lib64 /etc /root/.rpmdb"
        ),
        "{install}"
    );
    // rpm 4.18: a %transfiletriggerpostun fires only when an erased file
    // is under the trigger's *first* prefix in the header, where rpmbuild
    // has sorted them: glibc-common's first is `/lib` (a symlink: no
    // package file is below it), so it never fires; systemd's first is
    // `/etc/systemd/system`, so erasing httpd (nothing there) does not
    // fire it, while the upgrade erasing systemd 255 (which owns that
    // directory) does.
    for log in logs {
        assert!(
            !log.contains("glibc-common-2.39 transfiletriggerpostun"),
            "{log}"
        );
    }
    assert!(
        has(
            upgrade,
            "systemd-256 transfiletriggerpostun(1000100) [0] files:"
        ),
        "{upgrade}"
    );
    assert!(
        !remove.contains("systemd-256 transfiletriggerpostun"),
        "{remove}"
    );
    assert!(
        has(
            remove,
            "shared-mime-info-2.3 transfiletriggerpostun [0] files:"
        ),
        "{remove}"
    );
    assert!(has(remove, "kernel-install [remove 6.1.0]"), "{remove}");
    let qa = qa(root);
    for nevra in [
        "kernel-core-6.2.0-1.fc40.noarch",
        "procps-ng-4.0.4-1.fc40.noarch",
        "zlib-1.3.1-1.fc40.noarch",
    ] {
        assert!(qa.contains(&format!("{nevra}\n")), "{qa}");
    }
    assert!(
        !qa.contains("kernel-core-6.1.0") && !qa.contains("procps-3"),
        "{qa}"
    );
    assert!(
        std::fs::read_to_string(root.join("etc/passwd"))
            .unwrap()
            .contains("apache:x:48:48:"),
        "httpd's %pre added its user"
    );
}
