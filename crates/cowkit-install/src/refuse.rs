//! What a transaction refuses before anything is touched, beyond rpm's own
//! check: scriptlets and triggers cowkit cannot run as rpm would, installed
//! packages rpm would erase that are not the old versions cowkit replaces,
//! and install-only packages (kernels) that `rpm -U` would upgrade.

use std::collections::HashSet;

use cowkit_rpmdb::{sense, Installed, Rpm};

use crate::scripts::{Phase, Scriptlet};
use crate::txn::{InstallOnly, Pkg};
use crate::{Error, Result};

/// dnf's default `installonlypkgs` (dnf 4.14, `dnf/const.py`): a package
/// that provides one of these is installed beside its older versions.
pub(crate) const INSTALL_ONLY: [&str; 6] = [
    "kernel",
    "kernel-PAE",
    "installonlypkg(kernel)",
    "installonlypkg(kernel-module)",
    "installonlypkg(vm)",
    "multiversion(kernel)",
];

/// What `p` provides that makes it install-only, if anything (every
/// package provides its own name).
pub(crate) fn install_only_provide(p: &Pkg) -> Option<&'static str> {
    INSTALL_ONLY
        .into_iter()
        .find(|k| p.name == *k || p.provides.iter().any(|pr| pr == k))
}

/// Whether the transaction installs its install-only packages beside
/// their installed versions (`rpm -i`, as dnf does) rather than upgrading
/// (`rpm -U`). `instances` are the installed packages named like the
/// transaction's. [`InstallOnly::Refuse`] refuses a transaction with an
/// install-only package that has an installed version: `rpm -U` would
/// erase that version. [`InstallOnly::Beside`] installs beside, which one
/// rpm transaction can only do for all its packages (`rpm -i`), so it
/// refuses a transaction that also upgrades other packages.
pub(crate) fn install_beside(
    pkgs: &[Pkg],
    instances: &[Installed],
    mode: InstallOnly,
) -> Result<bool> {
    let installed = |name: &str| -> Vec<&str> {
        instances
            .iter()
            .filter(|i| i.name == name)
            .map(|i| i.nevra.as_str())
            .collect()
    };
    let mut beside = Vec::new();
    let mut upgrades = Vec::new();
    for p in pkgs {
        let old = installed(&p.name);
        if old.is_empty() {
            continue;
        }
        match install_only_provide(p) {
            Some(what) => beside.push((p, what, old)),
            None => upgrades.push(format!("{} (over {})", p.nevra, old.join(", "))),
        }
    }
    if beside.is_empty() {
        return Ok(false);
    }
    let problems: Vec<String> = match mode {
        InstallOnly::Refuse => beside
            .iter()
            .map(|(p, what, old)| {
                format!(
                    "{} is install-only (it provides `{what}`): `rpm -U` would erase the installed {}, dnf installs it beside; cowkit install does neither",
                    p.nevra,
                    old.join(", ")
                )
            })
            .collect(),
        InstallOnly::Beside if upgrades.is_empty() => return Ok(true),
        InstallOnly::Beside => vec![format!(
            "{} would be installed beside the installed versions (install-only) and {} upgraded, which one rpm transaction cannot do (`rpm -i` or `rpm -U`); cowkit does them separately only when told to",
            beside
                .iter()
                .map(|(p, _, _)| p.nevra.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            upgrades.join(", ")
        )],
    };
    Err(Error::InstallOnly { problems })
}

/// Everything that cowkit cannot run as rpm would, in one error: the new
/// packages' scriptlets and triggers, the `%preun`/`%postun` of the
/// installed packages the transaction erases (`erased`: every installed
/// instance of an upgraded name), and the installed packages' triggers
/// that would fire (`rpm`: the database; `None` for a new root's).
pub(crate) fn unsupported(pkgs: &[Pkg], erased: &[&Installed], rpm: Option<&Rpm>) -> Result<()> {
    let mut problems = Vec::new();
    for p in pkgs {
        for s in &p.scripts {
            if let Err(why) = s.runnable() {
                problems.push(format!("{} {}: {why}", p.nevra, s.phase.name()));
            }
        }
        for t in &p.triggers {
            problems.push(format!(
                "{}: has {t} scriptlets, which cowkit does not run",
                p.nevra
            ));
        }
    }
    for o in erased {
        for (s, ph) in [(&o.preun, Phase::PreUn), (&o.postun, Phase::PostUn)] {
            if let Some(s) = s {
                if let Err(why) = Scriptlet::of_installed(s, ph).runnable() {
                    problems.push(format!("{} {} (installed): {why}", o.nevra, ph.name()));
                }
            }
        }
    }
    if let Some(rpm) = rpm {
        problems.extend(firing_triggers(pkgs, erased, rpm)?);
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Unsupported { problems })
    }
}

/// The installed packages' triggers that the transaction would fire: a
/// name trigger on a new package (`%triggerprein`, `%triggerin`) or on an
/// erased one (`%triggerun`, `%triggerpostun`; version conditions are not
/// looked at, so this may say more than rpm would run), a file trigger
/// whose prefix matches a new or an erased file, and any trigger of an
/// erased package (rpm runs its `%triggerun`s as it goes).
fn firing_triggers(pkgs: &[Pkg], erased: &[&Installed], rpm: &Rpm) -> Result<Vec<String>> {
    let new: HashSet<&str> = pkgs.iter().map(|p| p.name.as_str()).collect();
    let gone: HashSet<&str> = erased.iter().map(|o| o.name.as_str()).collect();
    let gone_nevras: HashSet<&str> = erased.iter().map(|o| o.nevra.as_str()).collect();
    let mut problems = Vec::new();
    let mut owners_told: HashSet<String> = HashSet::new();
    for t in rpm.installed_triggers()? {
        if gone_nevras.contains(t.owner.as_str()) {
            if owners_told.insert(t.owner.clone()) {
                problems.push(format!(
                    "{} (installed, to be erased): has {} scriptlets, which cowkit does not run",
                    t.owner, t.kind
                ));
            }
            continue;
        }
        let fires = if t.kind == "%trigger" {
            let on_install = t.flags & (sense::TRIGGERPREIN | sense::TRIGGERIN) != 0;
            let on_erase = t.flags & (sense::TRIGGERUN | sense::TRIGGERPOSTUN) != 0;
            (on_install && new.contains(t.watched.as_str()))
                || (on_erase && gone.contains(t.watched.as_str()))
        } else {
            let w = t.watched.as_str();
            pkgs.iter()
                .any(|p| p.files.files.iter().any(|f| f.path.starts_with(w)))
                || erased
                    .iter()
                    .any(|o| o.files.iter().any(|f| f.path.starts_with(w)))
        };
        if fires {
            problems.push(format!(
                "{} (installed): its {} on `{}` would fire, and cowkit does not run triggers",
                t.owner, t.kind, t.watched
            ));
        }
    }
    problems.dedup();
    Ok(problems)
}

/// The packages (indices into `nevras`) in rpm's order, after refusing
/// what cowkit cannot do: erasing installed packages other than the old
/// versions it replaces (`replaced`, NEVRAs), which rpm does for a new
/// package's `Obsoletes` and for the other installed instances of an
/// upgraded name (`instances`: NEVRA and name of each).
pub(crate) fn plan_order(
    plan: &cowkit_rpmdb::Plan,
    nevras: &[String],
    replaced: &[String],
    instances: &[(String, String)],
) -> Result<Vec<usize>> {
    // Erasures other than the old versions of upgraded packages: cowkit
    // would have to remove those packages' files and run their
    // scriptlets, which it does not do yet.
    let problems: Vec<String> = plan
        .erase
        .iter()
        .filter(|e| !replaced.contains(e))
        .map(|e| match instances.iter().find(|(n, _)| n == e) {
            Some((_, name)) => format!(
                "{e} (installed): another installed instance of {name}, which `rpm -U` erases with the one it upgrades"
            ),
            None => format!("{e} (installed): a new package obsoletes it (`Obsoletes`)"),
        })
        .collect();
    if !problems.is_empty() {
        return Err(Error::WouldErase { problems });
    }
    let mut order = Vec::with_capacity(plan.order.len());
    let mut taken = vec![false; nevras.len()];
    for n in &plan.order {
        let i = (0..nevras.len())
            .find(|&i| !taken[i] && &nevras[i] == n)
            .ok_or_else(|| {
                Error::Db(cowkit_rpmdb::Error::Answer {
                    what: "--test -vv -U",
                    why: format!("it ordered `{n}`, which is not one of the packages"),
                })
            })?;
        taken[i] = true;
        order.push(i);
    }
    Ok(order)
}
