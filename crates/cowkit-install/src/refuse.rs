//! What a transaction refuses before anything is touched, beyond rpm's own
//! check: scriptlets and triggers cowkit cannot run as rpm would (every
//! one the plan runs is looked at), and install-only packages (kernels)
//! that `rpm -U` would upgrade.

use std::collections::HashSet;

use cowkit_rpmdb::Installed;

use crate::elem::{Elem, Erased};
use crate::pkg::Pkg;
use crate::plan::PlanEntry;
use crate::prepared::InstallOnly;
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
/// the packages (indices) to install beside, with those given in more
/// than one version (dnf installs them all). [`InstallOnly::Every`]: all
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
        // dnf adds every install as rpm's install element: two versions of
        // an install-only name in one transaction both go in, beside.
        let twice =
            mode == InstallOnly::Beside && pkgs.iter().filter(|q| q.name == p.name).count() > 1;
        if old.is_empty() && !twice {
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
    let v: Vec<(&str, &str, &std::path::Path)> = pkgs
        .iter()
        .map(|p| (p.nevra.as_str(), p.digest.as_str(), p.path.as_path()))
        .collect();
    same_nevra_in(&v, db)
}

/// [`same_nevra`] of (NEVRA, header digest, file) triples.
fn same_nevra_in(pkgs: &[(&str, &str, &std::path::Path)], db: bool) -> Result<()> {
    let mut seen: std::collections::HashMap<&str, (&str, &std::path::Path)> =
        std::collections::HashMap::new();
    for &(nevra, digest, path) in pkgs {
        let Some((first_digest, first)) = seen.insert(nevra, (digest, path)) else {
            continue;
        };
        let why = if !db {
            "without the database, cowkit does not leave a package given twice out as rpm does"
        } else if first_digest != digest {
            "they are different packages (their headers differ), and rpm's answer names the NEVRA it keeps, not which file"
        } else {
            continue;
        };
        return Err(Error::Duplicate {
            nevra: nevra.to_string(),
            why,
            first: first.to_path_buf(),
            second: path.to_path_buf(),
        });
    }
    Ok(())
}

/// Whether rpm may leave some of `pkgs` out of the transaction as it adds
/// them: two share a name, or one obsoletes another's name. (rpm decides
/// which; this only tells whether its answer must be waited for before
/// any file is placed.)
pub(crate) fn may_leave_out(pkgs: &[Pkg]) -> bool {
    may_leave_out_in(
        &pkgs
            .iter()
            .map(|p| (p.name.as_str(), p.obsoletes.as_slice()))
            .collect::<Vec<_>>(),
    )
}

/// [`may_leave_out`] of (name, obsoleted names) pairs.
fn may_leave_out_in(pkgs: &[(&str, &[String])]) -> bool {
    let mut names = HashSet::new();
    if !pkgs.iter().all(|(n, _)| names.insert(*n)) {
        return true;
    }
    pkgs.iter()
        .any(|(_, obs)| obs.iter().any(|o| names.contains(o.as_str())))
}

/// Keep of `items` only those `order` (indices into them) names, in
/// their own order: the packages rpm kept.
pub(crate) fn keep_ordered<T>(items: &mut Vec<T>, order: &[usize]) {
    let mut keep = vec![false; items.len()];
    for &i in order {
        keep[i] = true;
    }
    let mut k = keep.into_iter();
    items.retain(|_| k.next().unwrap_or(false));
}

/// The packages rpm kept (`kept`, indices into `nevras`) in the order rpm
/// holds them in its transaction set, which decides its order among
/// packages nothing else orders: the order given, except that a package
/// that replaced another (rpm's `package A was already added, replacing
/// with B`, in `dropped`) takes A's place.
pub(crate) fn add_order(nevras: &[String], kept: &[usize], dropped: &[String]) -> Vec<usize> {
    let mut place: Vec<usize> = (0..nevras.len()).collect();
    let is_kept = |i: usize| kept.contains(&i);
    for line in dropped {
        let Some((a, b)) = line
            .strip_prefix("package ")
            .and_then(|l| l.split_once(" was already added, replacing with "))
        else {
            continue;
        };
        let old = (0..nevras.len()).find(|&i| nevras[i] == a && !is_kept(i));
        let new = (0..nevras.len()).find(|&i| nevras[i] == b);
        if let (Some(old), Some(new)) = (old, new) {
            place[new] = place[old];
        }
    }
    let mut v = kept.to_vec();
    v.sort_by_key(|&i| (place[i], i));
    v
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
///
/// `rpm420`: the rpm that registers the transaction is rpm 4.20, whose Lua
/// reads the package's builder rpm version (`RPMVERSION`): a `<lua>`
/// scriptlet of a header without one is refused.
pub(crate) fn unsupported(plan: &[PlanEntry], lua: bool, rpm420: bool) -> Result<()> {
    let mut problems = Vec::new();
    let mut seen = HashSet::new();
    for e in plan {
        let Some(run) = &e.run else { continue };
        let why = match run.script.runnable(lua) {
            Err(why) => Some(why),
            Ok(()) if rpm420 => rpm420_unsupported(run),
            Ok(()) => None,
        };
        if let Some(why) = why {
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

/// What of `run` cowkit cannot do as rpm 4.20 does (see [`unsupported`]).
fn rpm420_unsupported(run: &crate::plan::Run) -> Option<&'static str> {
    if run.script.is_lua() && run.script.rpmver.is_none() {
        return Some("its package's header has no RPMVERSION, which rpm 4.20's Lua takes from it (rpm 4.20 itself would fail on it)");
    }
    None
}

/// rpm 4.20 creates the users and groups a package provides as sysusers
/// data before its `%pre` even with `--noscripts` or `--justdb` (only its
/// `--nosysusers` stops that, `lib/psm.c`); cowkit runs nothing then, so
/// such a package is refused by name under those options.
pub(crate) fn sysusers_without_scripts(pkgs: &[Pkg], noscripts: bool, justdb: bool) -> Result<()> {
    let option = match (noscripts, justdb) {
        (_, true) => "--justdb",
        (true, false) => "--noscripts",
        (false, false) => return Ok(()),
    };
    let problems: Vec<String> = pkgs
        .iter()
        .filter(|p| !p.sysusers.is_empty())
        .map(|p| {
            format!(
                "{}: it provides users or groups as sysusers data, which rpm 4.20 creates even with {option}; cowkit runs nothing with {option}",
                p.nevra
            )
        })
        .collect();
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn the_same_package_twice_is_rpms_to_leave_out() {
        let (a, b) = (Path::new("/p/a.rpm"), Path::new("/p/b.rpm"));
        let same = [("v-1-1.noarch", "d1", a), ("v-1-1.noarch", "d1", b)];
        assert!(same_nevra_in(&same, true).is_ok());
        // Without the database nothing leaves one out.
        let e = same_nevra_in(&same, false).unwrap_err();
        assert!(matches!(&e, Error::Duplicate { first, second, .. } if first == a && second == b));
        assert!(e.to_string().contains("without the database"), "{e}");
        // Two different packages of one NEVRA: rpm's answer cannot say which.
        let other = [("v-1-1.noarch", "d1", a), ("v-1-1.noarch", "d2", b)];
        let e = same_nevra_in(&other, true).unwrap_err();
        assert!(e.to_string().contains("their headers differ"), "{e}");
        // Other NEVRAs of one name are rpm's to decide.
        let versions = [("v-1-1.noarch", "d1", a), ("v-2-1.noarch", "d2", b)];
        assert!(same_nevra_in(&versions, true).is_ok());
        assert!(same_nevra_in(&versions, false).is_ok());
    }

    #[test]
    fn only_what_rpm_ordered_is_kept() {
        let mut v = vec!["one", "two", "three", "one again"];
        keep_ordered(&mut v, &[2, 0]);
        assert_eq!(v, ["one", "three"]);
        let mut all = vec![1, 2];
        keep_ordered(&mut all, &[1, 0]);
        assert_eq!(all, [1, 2]);
    }

    #[test]
    fn a_replacing_package_takes_the_replaced_ones_place() {
        let nevras: Vec<String> = ["v-1-1.noarch", "b-1-1.noarch", "v-2-1.noarch"]
            .map(String::from)
            .to_vec();
        let replaced =
            ["package v-1-1.noarch was already added, replacing with v-2-1.noarch".to_string()];
        assert_eq!(add_order(&nevras, &[2, 1], &replaced), [2, 1]);
        // Skipped packages move nothing.
        let skipped = ["package v-1-1.noarch was already added, skipping v-2-1.noarch".to_string()];
        assert_eq!(add_order(&nevras, &[1, 0], &skipped), [0, 1]);
        // A chain: v-1 replaced by v-2, v-2 by o (which obsoletes v).
        let nevras: Vec<String> = [
            "v-1-1.noarch",
            "a-1-1.noarch",
            "v-2-1.noarch",
            "o-1-1.noarch",
        ]
        .map(String::from)
        .to_vec();
        let chain = [
            "package v-1-1.noarch was already added, replacing with v-2-1.noarch".to_string(),
            "package v-2-1.noarch was already added, replacing with o-1-1.noarch".to_string(),
        ];
        assert_eq!(add_order(&nevras, &[1, 3], &chain), [3, 1]);
    }

    #[test]
    fn what_rpm_may_leave_out() {
        let none: &[String] = &[];
        let obs = ["deptest-two".to_string()];
        assert!(!may_leave_out_in(&[("a", none), ("b", none)]));
        assert!(may_leave_out_in(&[("v", none), ("v", none)]));
        assert!(may_leave_out_in(&[
            ("deptest-two", none),
            ("deptest-one", &obs)
        ]));
        assert!(may_leave_out_in(&[
            ("deptest-one", &obs),
            ("deptest-two", none)
        ]));
        // Obsoleting what is not in the transaction leaves nothing out.
        assert!(!may_leave_out_in(&[("deptest-one", &obs)]));
    }

    #[test]
    fn rpms_order_maps_to_the_first_of_a_nevra_given_twice() {
        let plan = cowkit_rpmdb::Plan {
            order: vec!["b-1-1.noarch".into(), "a-1-1.noarch".into()],
            ..Default::default()
        };
        let nevras: Vec<String> = ["a-1-1.noarch", "b-1-1.noarch", "a-1-1.noarch"]
            .map(String::from)
            .to_vec();
        assert_eq!(plan_order(&plan, &nevras).unwrap(), [1, 0]);
        let unknown = cowkit_rpmdb::Plan {
            order: vec!["c-1-1.noarch".into()],
            ..Default::default()
        };
        assert!(plan_order(&unknown, &nevras).is_err());
    }
}
