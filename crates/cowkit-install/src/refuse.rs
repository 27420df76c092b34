//! What a transaction refuses before anything is touched, beyond rpm's own
//! check: scriptlets and triggers cowkit cannot run as rpm would (every
//! one the plan runs is looked at), and install-only packages (kernels)
//! that `rpm -U` would upgrade.

use std::collections::HashSet;

use cowkit_rpmdb::Installed;

use crate::plan::PlanEntry;
use crate::runner::{Elem, Erased};
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
        .find(|k| p.name == *k || p.provides_name(k))
}

/// Whether the transaction installs its install-only packages beside
/// their installed versions (`rpm -i`, as dnf does) rather than upgrading
/// (`rpm -U`). `instances` are the installed packages named like the
/// transaction's. [`InstallOnly::Refuse`] refuses a transaction with an
/// install-only package that has an installed version: `rpm -U` would
/// erase that version. [`InstallOnly::Beside`] installs beside, as dnf
/// asks rpm to (an install element, not an upgrade, among the others):
/// the packages (indices) to install beside. [`InstallOnly::Every`]: all
/// of them.
pub(crate) fn install_beside(
    pkgs: &[Pkg],
    instances: &[Installed],
    mode: InstallOnly,
) -> Result<Vec<usize>> {
    let installed = |name: &str| -> Vec<&str> {
        instances
            .iter()
            .filter(|i| i.name == name)
            .map(|i| i.nevra.as_str())
            .collect()
    };
    let mut beside = Vec::new();
    for (i, p) in pkgs.iter().enumerate() {
        let old = installed(&p.name);
        if old.is_empty() {
            continue;
        }
        if let Some(what) = install_only_provide(p) {
            beside.push((i, p, what, old));
        }
    }
    if mode == InstallOnly::Every {
        // rpm's `-i`: every package is an install element.
        return Ok((0..pkgs.len()).collect());
    }
    if beside.is_empty() || mode == InstallOnly::Beside {
        return Ok(beside.into_iter().map(|(i, ..)| i).collect());
    }
    let problems: Vec<String> = beside
        .iter()
        .map(|(_, p, what, old)| {
            format!(
                "{} is install-only (it provides `{what}`): `rpm -U` would erase the installed {}, dnf installs it beside, and so does `cowkit install -i` (rpm's `-i`)",
                p.nevra,
                old.join(", ")
            )
        })
        .collect();
    Err(Error::InstallOnly { problems })
}

/// Two package files of one NEVRA: rpm keeps one of them (it leaves the
/// same package given again out of the transaction), and its answer names
/// the NEVRA, so cowkit keeps the first only when both are the same
/// package (one header digest). Two different packages of one NEVRA are
/// refused, and without the database (`db` false), where rpm decides
/// nothing, any two.
pub(crate) fn same_nevra(pkgs: &[Pkg], db: bool) -> Result<()> {
    let mut seen: std::collections::HashMap<&str, &Pkg> = std::collections::HashMap::new();
    for p in pkgs {
        let Some(first) = seen.insert(&p.nevra, p) else {
            continue;
        };
        let why = if !db {
            "without the database, cowkit does not leave a package given twice out as rpm does"
        } else if first.digest != p.digest {
            "they are different packages (their headers differ), and rpm's answer names the NEVRA it keeps, not which file"
        } else {
            continue;
        };
        return Err(Error::Duplicate {
            nevra: p.nevra.clone(),
            why,
            first: first.path.clone(),
            second: p.path.clone(),
        });
    }
    Ok(())
}

/// Whether rpm may leave some of `pkgs` out of the transaction as it adds
/// them: two share a name, or one obsoletes another's name. (rpm decides
/// which; this only tells whether its answer must be waited for before
/// any file is placed.)
pub(crate) fn may_leave_out(pkgs: &[Pkg]) -> bool {
    let mut names = HashSet::new();
    if !pkgs.iter().all(|p| names.insert(p.name.as_str())) {
        return true;
    }
    pkgs.iter()
        .any(|p| p.obsoletes.iter().any(|o| names.contains(o.as_str())))
}

/// rpm left packages out of a transaction whose files were being placed
/// on the assumption that it would not.
pub(crate) fn left_out(ordered: usize, given: usize) -> Error {
    Error::Db(cowkit_rpmdb::Error::Answer {
        what: "--test -vv -U",
        why: format!("it ordered {ordered} element(s) for {given} package(s)"),
    })
}

/// Every package file whose path cannot be placed inside the root (an
/// empty, `.` or `..` component, a NUL byte, `/` as anything but a
/// directory), in one error: the whole transaction is refused before
/// anything is touched, instead of that package failing after others
/// were placed.
pub(crate) fn unplaceable(pkgs: &[Pkg]) -> Result<()> {
    let none = std::collections::HashMap::new();
    let problems: Vec<String> = pkgs
        .iter()
        .filter_map(|p| {
            p.files.files.iter().find_map(|f| {
                crate::target::Place::of(f, &none)
                    .err()
                    .map(|e| format!("{}: {e}", p.nevra))
            })
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Unplaceable { problems })
    }
}

/// Everything that cowkit cannot run as rpm would, in one error: every
/// scriptlet and trigger the transaction's plan runs when nothing fails
/// (new packages', erased packages', installed packages' triggers) is
/// looked at before anything is touched (`plan`:
/// [`crate::runner::simulate`]'s). `lua`: rpm's Lua can be started.
pub(crate) fn unsupported(plan: &[PlanEntry], lua: bool) -> Result<()> {
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for e in plan {
        let Some(run) = &e.run else { continue };
        if let Err(why) = run.script.runnable(lua) {
            let line = format!("{}: {why}", run.name);
            if seen.insert(line.clone()) {
                problems.push(line);
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Unsupported { problems })
    }
}

/// The installs (indices into `nevras`) in rpm's order.
pub(crate) fn plan_order(plan: &cowkit_rpmdb::Plan, nevras: &[String]) -> Result<Vec<usize>> {
    let mut order = Vec::with_capacity(plan.order.len());
    let mut taken = vec![false; nevras.len()];
    for n in &plan.order {
        let i = (0..nevras.len())
            .find(|&i| !taken[i] && &nevras[i] == n)
            .ok_or_else(|| unknown(n))?;
        taken[i] = true;
        order.push(i);
    }
    Ok(order)
}

fn unknown(n: &str) -> Error {
    Error::Db(cowkit_rpmdb::Error::Answer {
        what: "--test -vv -U",
        why: format!("it ordered `{n}`, which is not one of the packages"),
    })
}

/// Installs and erasures in rpm's order, as elements.
pub(crate) fn elements(
    plan: &cowkit_rpmdb::Plan,
    nevras: &[String],
    erased: &[Erased],
) -> Result<Vec<Elem>> {
    let mut out = Vec::with_capacity(plan.elements.len());
    let mut taken = vec![false; nevras.len()];
    for (added, n) in &plan.elements {
        if *added {
            let i = (0..nevras.len())
                .find(|&i| !taken[i] && &nevras[i] == n)
                .ok_or_else(|| unknown(n))?;
            taken[i] = true;
            out.push(Elem::Add(i));
        } else {
            let k = erased
                .iter()
                .position(|e| &e.installed.nevra == n)
                .ok_or_else(|| unknown(n))?;
            out.push(Elem::Erase(k));
        }
    }
    Ok(out)
}
