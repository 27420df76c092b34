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

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Python program: dnf's entry point, and the transaction's items
/// written after `Base.resolve` (`i` install element, `u` upgrade,
/// downgrade or obsoleting package, `r` reinstall, `e` erasure).
const WRAPPER: &str = r#"
import os, sys
import dnf.base
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
