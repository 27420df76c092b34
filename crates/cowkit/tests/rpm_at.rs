//! rpm 4.18's own install, upgrade, erase, config-file, file-replacement,
//! file-conflict, ordering, verify-after-install and scriptlet scenarios
//! (`tests/rpmconfig.at`, `rpmconfig2.at`, `rpmconfig3.at`,
//! `rpmreplace.at`, `rpmi.at`, `rpme.at`, `rpmconflict.at`, `rpmorder.at`,
//! `rpmverify.at`, `rpmscript.at` of `rpm-4.18.0-release`), each run on
//! twin roots: every install step once by the real `rpm` and once by
//! `cowkit install` (erase steps by `rpm -e` on both: cowkit has no
//! erase), compared after every step by exit status, the scenario's checks
//! (file contents, `.rpmnew`/`.rpmsave`/`.rpmorig`, `rpm -q` and `rpm -V`
//! answers, what the scriptlets and triggers print), `rpm -qa` with every
//! file's state, `rpm -Va` and the tree (type, mode, owner, content, link
//! target). rpm's side is held to the scenario's own expectations (exit
//! status, output, message): a port that rpm does not pass is broken.
//!
//! Each scenario ends equal, differing (the first difference), or refused
//! (cowkit refused a step rpm did, before touching its root). The expected
//! end of every scenario is one line of [`expected::EXPECTED`];
//! the test fails when a scenario ends otherwise, so that the table stays
//! true. `COWKIT_RPM_AT_REPORT=FILE` also writes the markdown table of
//! every scenario's end to FILE (`scripts/rpm-at-report.sh`);
//! `COWKIT_RPM_AT_ONLY=TEXT` runs only the scenarios whose id contains
//! TEXT; `COWKIT_RPM_AT_JOBS=N` runs N scenarios at once (default 4).
//!
//! Needs root (rpm `--root`, owners) and the rig's XFS.

mod common;

use common::{as_root, tmp};

#[path = "rpm_at/expected.rs"]
mod expected;
#[path = "rpm_at/harness.rs"]
mod harness;
#[path = "rpm_at/run.rs"]
mod run;
#[path = "rpm_at/scenarios.rs"]
mod scenarios;
#[path = "rpm_at/specs.rs"]
mod specs;

#[test]
fn rpm_at_scenarios_end_as_the_table_says() {
    if !as_root(
        "rpm_at_scenarios_end_as_the_table_says",
        "rpm --root, owners",
    ) {
        return;
    }
    run::run_table(
        expected::EXPECTED,
        &[],
        scenarios::all(),
        &tmp().join("rpm-at-packages"),
    );
}
