//! rpm's scenarios (`rpm_at.rs`) with rpm 4.20 as both the reference and
//! the rpm that registers cowkit's root, and the `%preuntrans` and
//! `%postuntrans` scenarios of rpm 4.20 (`rpm_at/untrans.rs`) and its file
//! trigger arguments (`rpm_at/ftargs.rs`): packages are
//! built by rpm 4.20's `rpmbuild`; each scenario must end as
//! `rpm_at/expected_420.rs` says, or else as `rpm_at/expected.rs` says.
//!
//! The tools come from `COWKIT_FEDORA_TOOLS`: the prefix
//! `scripts/fedora-tools.sh` prints (rpm 4.20 in `PREFIX/bin`). Without it,
//! or without rpm 4.20 there, the test fails and says so: it never passes
//! without running. Its `bin` goes first in `PATH` for everything the test
//! runs (`rpm`, `rpmbuild`, and `cowkit install`, whose rpm is the one in
//! `PATH`). `COWKIT_RPM_AT_REPORT`, `_ONLY`, `_JOBS` as in `rpm_at.rs`.
//!
//! Needs root (rpm `--root`, owners) and the rig's XFS.

mod common;

use common::{as_root, tmp};

#[path = "rpm_at/expected.rs"]
mod expected;
#[path = "rpm_at/expected_420.rs"]
mod expected_420;
#[path = "rpm_at/ftargs.rs"]
mod ftargs;
#[path = "rpm_at/harness.rs"]
mod harness;
#[path = "rpm_at/run.rs"]
mod run;
#[path = "rpm_at/scenarios.rs"]
mod scenarios;
#[path = "rpm_at/specs.rs"]
mod specs;
#[path = "rpm_at/untrans.rs"]
mod untrans;

/// The prefix of the Fedora tools, checked: its `bin/rpm` is rpm 4.20.
fn fedora_tools() -> std::path::PathBuf {
    let Some(prefix) = std::env::var_os("COWKIT_FEDORA_TOOLS") else {
        panic!(
            "COWKIT_FEDORA_TOOLS is not set: this tier runs rpm's scenarios against rpm 4.20; \
             build or find the tools with `bash scripts/fedora-tools.sh` and set \
             COWKIT_FEDORA_TOOLS to the prefix it prints"
        );
    };
    let prefix = std::path::PathBuf::from(prefix);
    let rpm = prefix.join("bin/rpm");
    let out = std::process::Command::new(&rpm)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| panic!("COWKIT_FEDORA_TOOLS: cannot run {}: {e}", rpm.display()));
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && v.starts_with("RPM version 4.20."),
        "COWKIT_FEDORA_TOOLS: {} is not rpm 4.20 ({})",
        rpm.display(),
        v.trim()
    );
    prefix
}

/// `sc` with rpm held only to the exit statuses its steps expect
/// ([`harness::Want::unheld`]), not to rpm 4.18's texts of what its
/// commands and queries print (what both roots show is still compared).
fn unheld(mut sc: harness::Scenario) -> harness::Scenario {
    use harness::Step;
    for step in &mut sc.steps {
        match step {
            Step::Rpm { want, .. } | Step::Erase { want, .. } => want.unheld = true,
            Step::Query { want, .. } | Step::Out { want, .. } => *want = None,
            _ => {}
        }
    }
    sc
}

/// A package with sysusers data, into a root without a database, by rpm
/// 4.20 and by cowkit: the same user and group (`/etc/passwd`,
/// `/etc/group`), the same `rpm -qa`. cowkit's early check and
/// registration of a new root runs rpm with `--nosysusers`; the user comes
/// from cowkit's own run of rpm's `%__systemd_sysusers`, before the
/// package's `%pre`.
fn sysusers_into_a_new_root() {
    let Some(dir) = cowkit_testutil::scratch(cowkit_testutil::Fs::Xfs) else {
        return;
    };
    let pkg = harness::build(
        &untrans::sysusers_spec(),
        &tmp().join("rpm-at-packages-420"),
    );
    let (ours, theirs) = (dir.path().join("cowkit"), dir.path().join("rpm"));
    for r in [&ours, &theirs] {
        std::fs::create_dir(r).unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_cowkit"))
        .args(["install", "--nodeps", "--root"])
        .arg(&ours)
        .arg(&pkg)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "cowkit install:\n{err}");
    let rpm = std::process::Command::new("rpm")
        .args(["-U", "--nodeps", "--root"])
        .arg(&theirs)
        .arg(&pkg)
        .output()
        .unwrap();
    assert!(
        rpm.status.success(),
        "rpm -U: {}",
        String::from_utf8_lossy(&rpm.stderr)
    );
    for f in ["etc/passwd", "etc/group"] {
        let a = std::fs::read_to_string(ours.join(f)).unwrap_or_default();
        let b = std::fs::read_to_string(theirs.join(f)).unwrap_or_default();
        assert!(b.contains("suuser:"), "rpm made no suuser in {f}: {b}");
        assert_eq!(a, b, "{f}\n{err}");
    }
    let qa = |r: &std::path::Path| {
        let o = std::process::Command::new("rpm")
            .arg("--root")
            .arg(r)
            .arg("-qa")
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(qa(&ours), qa(&theirs));
}

#[test]
#[ignore = "the rpm 4.20 tier needs the tools scripts/fedora-tools.sh builds: scripts/test-rpm420.sh runs it (scripts/test.sh, and so CI, after the workspace's tests)"]
fn rpm_at_scenarios_with_rpm_420_end_as_the_table_says() {
    let prefix = fedora_tools();
    if !as_root(
        "rpm_at_scenarios_with_rpm_420_end_as_the_table_says",
        "rpm --root, owners",
    ) {
        return;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![prefix.join("bin")];
    dirs.extend(std::env::split_paths(&path));
    // Set before any thread or child starts: the only test of this binary.
    std::env::set_var("PATH", std::env::join_paths(dirs).expect("a valid PATH"));
    std::env::remove_var("COWKIT_RPM");
    sysusers_into_a_new_root();
    // rpm 4.18's scenarios hold rpm to rpm 4.18's texts: here only to
    // their exit statuses (rpm's and cowkit's outputs are still compared).
    let mut all: Vec<harness::Scenario> = scenarios::all().into_iter().map(unheld).collect();
    all.extend(untrans::all());
    all.extend(ftargs::all());
    run::run_table(
        expected::EXPECTED,
        expected_420::OVER_420,
        all,
        &tmp().join("rpm-at-packages-420"),
    );
}
