//! The order in which dnf adds its packages to rpm's transaction, which
//! rpm's own ordering depends on (its queue breaks ties by insertion):
//! cowkit hands rpm the packages in that order, so that the scriptlets run
//! in the order they run under dnf.
//!
//! dnf is started through its own Python entry point (the program `dnf`
//! is a `#!/usr/bin/python3` script calling `dnf.cli.main.user_main`),
//! with one addition: after dnf resolves, the items of its transaction
//! are written, in the order `_populate_rpm_ts` would add them, to the
//! file `COWKIT_DNF_ORDER` names. A `dnf` that is not that script runs as
//! it is, and the order then falls back to the packages' file names.
//!
//! With `COWKIT_DNF_PLAN` set, the same wrapper also writes the plan of
//! the downloads instead of downloading (see [`crate::plan`]): when
//! dnf is about to download (after its confirmation), each package of the
//! transaction is written with the URLs of its repository's mirrors (as
//! dnf resolved them: the metalink's or mirrorlist's mirrors, else the
//! `baseurl`s), its size and its checksum from `primary.xml`, and each
//! repository with its `gpgcheck`, key files, `timeout`, `minrate`; dnf
//! then downloads nothing and skips its own signature check (cowkit's
//! confined worker checks the signatures against the repository's key
//! files, and cowkit imports them into the root's database afterwards, as
//! dnf's check does). Where cowkit cannot fetch as dnf would (a proxy,
//! client certificates, a checksum type it does not compute, a `gpgkey`
//! that is not a local file, a root whose database trusts keys the
//! repository does not list, ...), the reasons are written and dnf
//! downloads (and checks) as before (with `COWKIT_DNF_PLAN_STRICT` set,
//! dnf fails instead).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Error, Result};

/// The Python program: dnf's entry point, and the transaction's items
/// written after `Base.resolve` (`i` install element, `u` upgrade,
/// downgrade or obsoleting package, `r` reinstall, `e` erasure).
const WRAPPER: &str = r#"
import json, os, sys
import dnf.base, dnf.crypto, dnf.exceptions
import libdnf.transaction as T
from dnf.cli import main
HOW = {T.TransactionItemAction_INSTALL: "i", T.TransactionItemAction_UPGRADE: "u",
       T.TransactionItemAction_DOWNGRADE: "u", T.TransactionItemAction_OBSOLETE: "u",
       T.TransactionItemAction_REINSTALL: "r"}
_resolve = dnf.base.Base.resolve
def resolve(self, *a, **k):
    r = _resolve(self, *a, **k)
    lines = []
    for tsi in self.transaction:
        how = HOW.get(tsi.action)
        if how is None:
            continue
        try:
            lines.append("%s\t%s\n" % (how, tsi.pkg))
        except KeyError:
            pass
    with open(os.environ["COWKIT_DNF_ORDER"], "w") as f:
        f.writelines(lines)
    return r
dnf.base.Base.resolve = resolve

def why_not(base, pkgs):
    """What keeps cowkit from fetching `pkgs` as dnf would."""
    why = []
    for p in pkgs:
        if p._from_cmdline:
            if base.conf.localpkg_gpgcheck:
                why.append("%s: a local package with localpkg_gpgcheck" % p)
            continue
        r, name = p.repo, p.repo.id
        ctype = p.returnIdSum()[0]
        if ctype not in ("sha256", "sha512"):
            why.append("%s: its checksum is %s (cowkit checks sha256 and sha512)" % (p, ctype))
        for opt in ("proxy", "sslclientcert", "sslclientkey", "username", "sslcacert"):
            v = getattr(r, opt, "")
            if v and v != "_none_":
                why.append("repository %s: %s is set" % (name, opt))
        if not getattr(r, "sslverify", True):
            why.append("repository %s: sslverify is off" % name)
        if float(getattr(r, "throttle", 0) or 0) or int(getattr(r, "bandwidth", 0) or 0):
            why.append("repository %s: throttle/bandwidth is set" % name)
        if r.gpgcheck:
            keys = list(r.gpgkey or [])
            if not keys:
                why.append("repository %s: gpgcheck with no gpgkey" % name)
            for k in keys:
                if not k.startswith("file://"):
                    why.append("repository %s: gpgkey %s is not a file:// URL" % (name, k))
                elif "%" in k or not os.path.isfile(k[len("file://"):]):
                    why.append("repository %s: gpgkey %s is not a file:///PATH of a file" % (name, k))
        for u in urls(p):
            if u.split("://", 1)[0] not in ("http", "https", "file"):
                why.append("%s: URL %s (cowkit fetches http, https and file)" % (p, u))
    checked = {p.repo.id: p.repo for p in pkgs if not p._from_cmdline and p.repo.gpgcheck}
    if checked and base.conf.gpgkey_dns_verification:
        why.append("gpgkey_dns_verification is set (cowkit does not ask DNSSEC about keys)")
    for r in checked.values():
        why.extend(foreign_keys(base, r))
    return sorted(set(why))

def foreign_keys(base, r):
    """dnf also accepts packages signed by the keys the root's database
    holds (gpg-pubkey); cowkit checks against the repository's key files:
    why not, where the database holds others."""
    if not r.gpgkey or any(not k.startswith("file://") or "%" in k for k in r.gpgkey):
        return []
    listed = set()
    for k in r.gpgkey:
        try:
            listed.update(i.rpm_id for i in dnf.crypto.retrieve(k, r))
        except Exception as e:
            return ["repository %s: cannot read gpgkey %s: %s" % (r.id, k, e)]
    have = set(str(h["version"]).lower() for h in base._ts.dbMatch("name", "gpg-pubkey"))
    if have - listed:
        return ["repository %s: the root's rpm database holds key(s) %s, which its gpgkey "
                "does not (dnf accepts packages signed by them; cowkit checks against the "
                "repository's keys only)" % (r.id, ", ".join(sorted(have - listed)))]
    return []

def urls(p):
    loc = p.location
    if "://" in loc:
        return [loc]
    bases = [p.baseurl] if p.baseurl else (p.repo._repo.getMirrors() or list(p.repo.baseurl))
    return [b.rstrip("/") + "/" + loc.lstrip("/") for b in bases]

def plan(base, pkgs):
    want = set(pkgs)
    out, repos = [], {}
    for tsi in base.transaction:
        p = tsi.pkg
        if p not in want:
            continue
        want.discard(p)
        ctype, csum = p.returnIdSum()
        # A package file given on dnf's command line belongs to no
        # configured repository (its reponame, "@commandline", is not in
        # base.repos): read from where it was given, no key to check
        # (why_not refuses localpkg_gpgcheck).
        rid = p.reponame if p._from_cmdline else p.repo.id
        e = {"nevra": str(p), "name": p.name, "epoch": p.epoch, "version": p.version,
             "release": p.release, "arch": p.arch, "size": p.downloadsize,
             "checksum": [ctype, csum], "repo": rid, "urls": [], "local": None}
        if p._from_cmdline:
            e["local"] = os.path.abspath(p.location)
        elif p._is_local_pkg():
            e["local"] = p.localPkg()
        else:
            e["urls"] = urls(p)
        out.append(e)
        if p._from_cmdline:
            repos[rid] = {"gpgcheck": False, "keys": [], "timeout": 30, "minrate": 1000}
            continue
        r = p.repo
        repos[r.id] = {"gpgcheck": bool(r.gpgcheck),
                       "keys": [k[len("file://"):] for k in (r.gpgkey or [])],
                       "timeout": int(getattr(r, "timeout", 30)),
                       "minrate": int(getattr(r, "minrate", 1000))}
    return out, repos

_download = dnf.base.Base.download_packages
def download_packages(self, pkglist, *a, **k):
    path = os.environ.get("COWKIT_DNF_PLAN")
    if not path:
        return _download(self, pkglist, *a, **k)
    pkgs = list(pkglist)
    why = why_not(self, pkgs)
    out, repos = plan(self, pkgs)
    with open(path + ".tmp", "w") as f:
        json.dump({"why": why, "packages": out, "repos": repos,
                   "max_parallel_downloads": int(self.conf.max_parallel_downloads),
                   "retries": int(self.conf.retries)}, f)
    os.rename(path + ".tmp", path)
    if why and os.environ.get("COWKIT_DNF_PLAN_STRICT"):
        raise dnf.exceptions.Error("cowkit cannot fetch these packages itself: " + "; ".join(why))
    if why:
        return _download(self, pkglist, *a, **k)
    self._cowkit_fetches = True
dnf.base.Base.download_packages = download_packages

import dnf.cli.cli
_gpgsigcheck = dnf.cli.cli.BaseCli.gpgsigcheck
def gpgsigcheck(self, pkgs):
    if getattr(self, "_cowkit_fetches", False):
        return
    return _gpgsigcheck(self, pkgs)
dnf.cli.cli.BaseCli.gpgsigcheck = gpgsigcheck
main.user_main(sys.argv[1:], exit_code=True)
"#;

/// The command that runs `dnf` and writes its order to `order`: through
/// its Python entry point when `dnf` is dnf's own script, else `dnf` as
/// it is (no order written).
pub fn command(dnf: &Path, order: &Path) -> Command {
    match python_of(dnf) {
        Some(python) => {
            let mut c = Command::new(python);
            c.args(["-I", "-c", WRAPPER]).env("COWKIT_DNF_ORDER", order);
            c
        }
        None => Command::new(dnf),
    }
}

/// The interpreter of `dnf` when it is dnf's own entry-point script.
fn python_of(dnf: &Path) -> Option<PathBuf> {
    let path = if dnf.components().count() > 1 {
        dnf.to_path_buf()
    } else {
        let paths = std::env::var_os("PATH")?;
        std::env::split_paths(&paths)
            .map(|d| d.join(dnf))
            .find(|p| p.is_file())?
    };
    // Bounded: the script is a few kilobytes.
    let mut head = vec![0u8; 16 * 1024];
    let n = {
        use std::io::Read;
        std::fs::File::open(&path).ok()?.read(&mut head).ok()?
    };
    let text = std::str::from_utf8(&head[..n]).ok()?;
    let python = text.lines().next()?.strip_prefix("#!")?.trim();
    let python = python.split_whitespace().next()?;
    (python.contains("python") && text.contains("from dnf.cli import main"))
        .then(|| PathBuf::from(python))
}

/// Sort the downloaded `rpms` into dnf's order as `order` gives it (files
/// named `NAME-VERSION-RELEASE.ARCH.rpm`, dnf's NEVRA without a zero
/// epoch); what it does not name stays after, by file name. Without an
/// order file, by file name: `false` then (the caller says so).
pub fn sort(rpms: &mut [PathBuf], order: &Path) -> bool {
    rpms.sort();
    let Ok(text) = std::fs::read_to_string(order) else {
        return false;
    };
    let pos: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .filter(|(how, _)| *how != "e")
        .map(|(_, nevra)| without_epoch(nevra))
        .collect();
    rpms.sort_by_key(|p| {
        let stem = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".rpm"))
            .unwrap_or_default();
        pos.iter().position(|n| n == stem).unwrap_or(usize::MAX)
    });
    true
}

/// How dnf's transaction, as `order` gives it, is handed to rpm: `false`
/// for install and upgrade elements (downgrades are upgrades to rpm, with
/// dnf's `RPMPROB_FILTER_OLDPACKAGE`), `true` when every package is a
/// reinstall (dnf's `addReinstall`: rpm's `--reinstall`). A transaction
/// that mixes reinstalls with other packages cannot be checked and
/// registered as one rpm command line: why, as an error. Without an
/// order file, `false` (rpm's check then refuses a reinstall as
/// "already installed").
pub fn reinstalls(order: &Path) -> Result<bool> {
    let Ok(text) = std::fs::read_to_string(order) else {
        return Ok(false);
    };
    reinstalls_in(&text).map_err(|(reinstalls, others)| Error::MixedReinstall {
        path: order.to_path_buf(),
        reinstalls,
        others,
    })
}

/// Whether the order's items are all reinstalls; else the reinstalls and
/// the others, when there are both.
fn reinstalls_in(text: &str) -> std::result::Result<bool, (Vec<String>, Vec<String>)> {
    let hows: Vec<(&str, &str)> = text
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .filter(|(how, _)| *how != "e")
        .collect();
    let r: Vec<&str> = hows
        .iter()
        .filter(|(how, _)| *how == "r")
        .map(|(_, n)| *n)
        .collect();
    if r.is_empty() {
        return Ok(false);
    }
    if r.len() == hows.len() {
        return Ok(true);
    }
    let others = hows
        .iter()
        .filter(|(how, _)| *how != "r")
        .map(|(_, n)| n.to_string())
        .collect();
    Err((r.iter().map(|n| n.to_string()).collect(), others))
}

/// `name-E:V-R.A` as its file is named: `name-V-R.A`.
fn without_epoch(nevra: &str) -> String {
    // The epoch sits after the last `-` before the version.
    let Some((name, rest)) = nevra.rsplit_once('-').and_then(|(nv, r)| {
        let (n, v) = nv.rsplit_once('-')?;
        Some((n, format!("{v}-{r}")))
    }) else {
        return nevra.to_string();
    };
    match rest.split_once(':') {
        Some((e, vr)) if e.bytes().all(|c| c.is_ascii_digit()) => format!("{name}-{vr}"),
        _ => format!("{name}-{rest}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_of_nevras() {
        assert_eq!(
            without_epoch("bash-5.2-1.fc40.x86_64"),
            "bash-5.2-1.fc40.x86_64"
        );
        assert_eq!(
            without_epoch("kbd-1:2.6-1.fc40.x86_64"),
            "kbd-2.6-1.fc40.x86_64"
        );
        assert_eq!(without_epoch("a-b-c-1.0-2.noarch"), "a-b-c-1.0-2.noarch");
    }

    #[test]
    fn reinstalls_all_or_none() {
        assert_eq!(
            reinstalls_in("u\ta-2-1.noarch\ni\tb-1-1.noarch\n"),
            Ok(false)
        );
        assert_eq!(reinstalls_in(""), Ok(false));
        assert_eq!(
            reinstalls_in("r\ta-1-1.noarch\nr\tb-1-1.noarch\n"),
            Ok(true)
        );
        let dir = tempfile::tempdir().unwrap();
        let order = dir.path().join("order");
        std::fs::write(&order, "r\ta-1-1.noarch\nu\tb-2-1.noarch\n").unwrap();
        let mixed = reinstalls(&order).unwrap_err();
        assert!(matches!(&mixed, Error::MixedReinstall { path, .. } if *path == order));
        let mixed = mixed.to_string();
        assert!(mixed.contains("reinstalls a-1-1.noarch") && mixed.contains("b-2-1.noarch"));
        assert!(matches!(reinstalls(&dir.path().join("none")), Ok(false)));
    }

    #[test]
    fn sorted_as_dnf_adds_them() {
        let dir = tempfile::tempdir().unwrap();
        let order = dir.path().join("order");
        std::fs::write(
            &order,
            "e\tt-a-1-1.noarch\nu\tt-a-2-1.noarch\ni\tt-kern-2-1.noarch\n",
        )
        .unwrap();
        let mut v: Vec<PathBuf> = [
            "t-kern-2-1.noarch.rpm",
            "t-a-2-1.noarch.rpm",
            "zz-1-1.noarch.rpm",
        ]
        .iter()
        .map(|n| dir.path().join(n))
        .collect();
        assert!(sort(&mut v, &order));
        let names: Vec<_> = v
            .iter()
            .map(|p| p.file_name().unwrap().to_owned())
            .collect();
        assert_eq!(
            names,
            [
                "t-a-2-1.noarch.rpm",
                "t-kern-2-1.noarch.rpm",
                "zz-1-1.noarch.rpm"
            ]
        );
    }
}
