//! The database a transaction's triggers see, read from rpm: every
//! installed package's instance and name (for counts and order), and in
//! full (provides, triggers, files) the ones triggers need: those with
//! triggers, those the transaction erases, those a name trigger watches;
//! every installed file only when a package's own file triggers look at
//! the whole database.

use std::collections::{BTreeSet, HashMap, HashSet};

use cowkit_rpmdb::triggers::TriggerKind;
use cowkit_rpmdb::{Installed, Rpm};

use crate::pkg::Pkg;
use crate::plan::{Db, DbPkg};
use crate::Result;

/// Whether rpm counts a file in this state installed (normal, net-shared).
fn installed_state(state: u32) -> bool {
    state == 0 || state == 3
}

fn full(inst: u32, i: &Installed) -> DbPkg {
    DbPkg {
        inst,
        name: i.name.clone(),
        nevra: i.nevra.clone(),
        provides: i.provides.clone(),
        files: i
            .files
            .iter()
            .map(|f| (f.path.as_bytes().to_vec(), installed_state(f.state)))
            .collect(),
        triggers: i.triggers.clone(),
        prefixes: i.prefixes.clone(),
        sysusers: Vec::new(),
    }
}

/// The database of `rpm` as the transaction of `pkgs` erasing `erased`
/// (NEVRA, header, replacer) needs it.
pub(crate) fn database(
    rpm: &Rpm,
    pkgs: &[Pkg],
    erased: &[(String, Installed, usize, bool)],
) -> Result<Db> {
    let all = rpm.instances()?;
    if all.is_empty() {
        return Ok(Db::default());
    }
    let mut want: BTreeSet<String> = BTreeSet::new();
    let mut watched: HashSet<String> = HashSet::new();
    for t in rpm.installed_triggers()? {
        want.insert(t.owner.clone());
        if t.kind == "%trigger" {
            watched.insert(t.watched);
        }
    }
    for p in pkgs {
        for t in p.triggers.iter().filter(|t| t.kind == TriggerKind::Name) {
            watched.extend(t.entries.iter().map(|e| e.name.clone()));
        }
    }
    for (_, name, nevra) in &all {
        if watched.contains(name) {
            want.insert(nevra.clone());
        }
    }
    let mut headers: HashMap<String, Installed> = erased
        .iter()
        .map(|(n, i, _, _)| (n.clone(), i.clone()))
        .collect();
    let ask: Vec<&str> = want
        .iter()
        .filter(|n| !headers.contains_key(*n))
        .map(String::as_str)
        .collect();
    for i in rpm.installed(&ask)? {
        headers.insert(i.nevra.clone(), i);
    }
    // A package's own file triggers (`%filetrigger*`, `%transfiletrigger*`
    // of a new or erased package) list files of the whole database.
    let file_kinds =
        |t: &[cowkit_rpmdb::triggers::TriggerDef]| t.iter().any(|t| t.kind != TriggerKind::Name);
    let whole = pkgs.iter().any(|p| file_kinds(&p.triggers))
        || erased.iter().any(|(_, i, _, _)| file_kinds(&i.triggers));
    let mut files: HashMap<u32, Vec<(Vec<u8>, bool)>> = HashMap::new();
    if whole {
        for (inst, state, path) in rpm.all_files()? {
            files
                .entry(inst)
                .or_default()
                .push((path.into_bytes(), installed_state(state)));
        }
    }
    let pkgs: Vec<DbPkg> = all
        .into_iter()
        .map(|(inst, name, nevra)| match headers.get(&nevra) {
            Some(i) => full(inst, i),
            None => DbPkg {
                inst,
                files: files.remove(&inst).unwrap_or_default(),
                name,
                nevra,
                provides: Vec::new(),
                triggers: Vec::new(),
                prefixes: Vec::new(),
                sysusers: Vec::new(),
            },
        })
        .collect();
    Ok(Db::new(pkgs))
}
