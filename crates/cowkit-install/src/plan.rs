//! The scriptlets and triggers of a transaction, in the order rpm 4.18
//! runs them (`lib/transaction.c`, `lib/psm.c`, `lib/rpmtriggers.c`).
//!
//! rpm decides which triggers fire from its database *as it is at that
//! moment*: a package is added to it right after its files, before its
//! `%post`, and removed at the end of its erasure. cowkit registers the
//! whole transaction at the end, so it follows the database's state here
//! instead (`Db`: what is installed, with instance numbers, provides,
//! files and triggers), element by element, and turns each element into
//! steps: the scriptlet runs (with their arguments and file lists)
//! around the placement or removal of the files.
//!
//! Per installed element (`rpmPackageInstall`): name triggers on it
//! (`%triggerprein`: installed packages' on this one, then this one's on
//! installed ones), `%pre`, files, database entry, file triggers with
//! priority ≥ 10000, `%post`, `%triggerin` (both directions), file
//! triggers below 10000. Erasures mirror it (`rpmPackageErase`). Around
//! the elements: `%pretrans`, `%transfiletriggerun`, ..., `%posttrans`,
//! installed packages' `%transfiletriggerin`, `%transfiletriggerpostun`
//! (in 4.18 only when a trigger's *first* prefix matches), the new
//! packages' own `%transfiletriggerin`.
//!
//! File triggers' arguments: rpm 4.18 gives every file trigger `$1` 0 and
//! no `$2`. rpm 4.20 (`lib/rpmtriggers.c`, `lib/psm.c`) gives `$1` the
//! trigger package's installed instances when it runs (or, for an
//! element's own triggers, that element's scriptlet argument), and
//! `%filetrigger*` a `$2`: the triggering element's scriptlet argument, or
//! for an element's own triggers the installed instances of the package
//! whose file comes first in the trigger's input.

use std::collections::{BTreeSet, HashSet};

use cowkit_rpmdb::sense;
use cowkit_rpmdb::triggers::{Dep, TriggerDef, TriggerKind};
use cowkit_rpmdb::vercmp::any_matches;

use crate::scripts::Scriptlet;

/// rpm's bound between the file triggers that run before `%post` and
/// those after it (`TRIGGER_PRIORITY_BOUND`).
const PRIORITY_BOUND: u32 = 10000;

/// A file in the database: its path and whether rpm counts it installed
/// (state normal or net-shared).
pub(crate) type DbFile = (Vec<u8>, bool);

/// A package in the database.
#[derive(Clone, Debug)]
pub(crate) struct DbPkg {
    /// rpm's header instance (the order of packages in its indexes).
    pub(crate) inst: u32,
    pub(crate) name: String,
    pub(crate) nevra: String,
    pub(crate) provides: Vec<Dep>,
    /// Files in header order.
    pub(crate) files: Vec<DbFile>,
    pub(crate) triggers: Vec<TriggerDef>,
    /// Install prefixes (rpm's `INSTPREFIXES`).
    pub(crate) prefixes: Vec<String>,
    /// The users and groups it provides as sysusers data, by source (a
    /// package being installed; none for an installed one).
    pub(crate) sysusers: Vec<Sysusers>,
}

/// The sysusers lines of a package that come from one source: a file of
/// the package (a `sysusers.d` file), or none (`%add_sysuser`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sysusers {
    /// The providing file's path, empty for none.
    pub(crate) file: String,
    /// The `sysusers.d` lines, decoded.
    pub(crate) lines: Vec<String>,
}

/// The database as rpm sees it during the transaction.
#[derive(Clone, Debug, Default)]
pub(crate) struct Db {
    /// By instance.
    pkgs: Vec<DbPkg>,
    next: u32,
    /// Instances added by this transaction.
    added: HashSet<u32>,
    /// Instances this transaction erases.
    removed: HashSet<u32>,
    /// `%transfiletriggerpostun`s to run at the end (instance, index,
    /// priority).
    postun: Vec<(u32, u32, u32)>,
    /// rpm 4.20's file triggers (their arguments, and
    /// `%transfiletriggerpostun` by every prefix), not rpm 4.18's.
    rpm420: bool,
    /// The rpm program's `%__systemd_sysusers` and the root it gets as
    /// `--root`, when users and groups provided as sysusers data are
    /// created (rpm 4.20 with the macro set).
    sysusers: Option<(String, String)>,
}

/// One scriptlet run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Run {
    /// The NEVRA of the package whose scriptlet it is.
    pub owner: String,
    /// rpm's name for it, e.g. `%triggerin(httpd-2.4-1.x86_64)`.
    pub name: String,
    /// The scriptlet.
    #[serde(skip)]
    pub script: Scriptlet,
    /// `$1` and `$2` (none for rpm's "no argument").
    pub arg1: Option<i64>,
    /// `$2`.
    pub arg2: Option<i64>,
    /// A file trigger's input (stdin, or `rpm.next_file()` in Lua).
    #[serde(serialize_with = "lossy")]
    pub files: Option<Vec<Vec<u8>>>,
    /// Whether its failure fails the element (`%pre`, `%preun`,
    /// `%pretrans`); the others only warn.
    pub critical: bool,
    /// The install prefixes rpm gives it (`RPM_INSTALL_PREFIX*`): the
    /// owner's, for a relocatable package.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub prefixes: Vec<String>,
}

fn lossy<S: serde::Serializer>(v: &Option<Vec<Vec<u8>>>, s: S) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    v.as_ref()
        .map(|v| {
            v.iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect::<Vec<_>>()
        })
        .serialize(s)
}

/// One line of a printed plan: an element's action or a scriptlet run.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlanEntry {
    /// The element (NEVRA) it belongs to; empty for the transaction's own
    /// steps (`%transfiletrigger*` around the elements).
    pub element: String,
    /// `place`, `remove` or `run`.
    pub action: &'static str,
    /// The run, for `run`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run: Option<Run>,
}

/// What an element does, in order.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    Run(Box<Run>),
    /// Place the files of the new package.
    Place,
    /// Remove the files of the erased package.
    Remove,
}

impl Step {
    fn run(r: Run) -> Step {
        Step::Run(Box::new(r))
    }
}

impl Db {
    /// A database holding `pkgs` (instances as rpm numbered them).
    pub(crate) fn new(mut pkgs: Vec<DbPkg>) -> Db {
        pkgs.sort_by_key(|p| p.inst);
        let next = pkgs.last().map_or(1, |p| p.inst + 1);
        Db {
            pkgs,
            next,
            ..Db::default()
        }
    }

    /// Run file triggers as rpm 4.20 does (`true`) or as rpm 4.18 does.
    pub(crate) fn set_rpm420(&mut self, on: bool) {
        self.rpm420 = on;
    }

    /// Create the users and groups packages provide as sysusers data with
    /// `command` (the rpm program's `%__systemd_sysusers`) on `root`, as
    /// rpm 4.20 does before each package's `%pre`.
    pub(crate) fn set_sysusers(&mut self, command: String, root: String) {
        self.sysusers = Some((command, root));
    }

    /// Mark the installed `inst` as erased by this transaction.
    pub(crate) fn erasing(&mut self, inst: u32) {
        self.removed.insert(inst);
    }

    /// The instance of the installed `nevra`.
    pub(crate) fn instance_of(&self, nevra: &str) -> Option<u32> {
        self.pkgs.iter().find(|p| p.nevra == nevra).map(|p| p.inst)
    }

    pub(crate) fn get(&self, inst: u32) -> Option<&DbPkg> {
        self.pkgs.iter().find(|p| p.inst == inst)
    }

    pub(crate) fn count(&self, name: &str) -> i64 {
        self.pkgs.iter().filter(|p| p.name == name).count() as i64
    }

    fn add(&mut self, mut p: DbPkg) -> u32 {
        p.inst = self.next;
        self.next += 1;
        self.added.insert(p.inst);
        let inst = p.inst;
        self.pkgs.push(p);
        inst
    }

    fn set_installed(&mut self, inst: u32, on: bool) {
        if let Some(p) = self.pkgs.iter_mut().find(|p| p.inst == inst) {
            for f in &mut p.files {
                f.1 = on;
            }
        }
    }

    /// Take `inst` out (an erasure done, or an install that failed).
    pub(crate) fn remove(&mut self, inst: u32) {
        self.pkgs.retain(|p| p.inst != inst);
        self.added.remove(&inst);
    }

    /// The steps of installing `te` (not in the database yet); it is in
    /// the database afterwards, as instance the returned number.
    /// `skipping` says, per file of `te`, whether its action skips it
    /// (rpm's `XFA_SKIPPING`: not placed by this element); rpm gives the
    /// element's file triggers only the other files (`matchFilesNext`),
    /// and the database's only the files recorded installed.
    pub(crate) fn install(
        &mut self,
        te: DbPkg,
        skipping: &[bool],
        scripts: &[Scriptlet],
    ) -> (Vec<Step>, u32) {
        use crate::scripts::Phase;
        let mut out: Vec<Step> = Vec::new();
        let arg = self.count(&te.name) + 1;
        let script = |ph: Phase| scripts.iter().find(|s| s.phase == ph);
        if let Some((command, root)) = &self.sysusers {
            for su in &te.sysusers {
                out.push(Step::run(sysusers_run(&te, su, command, root, arg)));
            }
        }
        out.extend(
            self.name_triggers(&te, sense::TRIGGERPREIN, 0)
                .into_iter()
                .map(Step::run),
        );
        out.extend(
            self.immed_name_triggers(&te, sense::TRIGGERPREIN, 0)
                .into_iter()
                .map(Step::run),
        );
        if let Some(s) = script(Phase::Pre) {
            out.push(Step::run(plain(&te.nevra, &te.prefixes, s, arg)));
        }
        out.push(Step::Place);
        let files: Vec<DbFile> = te
            .files
            .iter()
            .enumerate()
            .map(|(fx, f)| (f.0.clone(), !skipping.get(fx).copied().unwrap_or(false)))
            .collect();
        let states: Vec<bool> = te.files.iter().map(|f| f.1).collect();
        // rpm counts the element's own files installed (for the database
        // side of its triggers) only once the element is done.
        let inst = self.add(te);
        self.set_installed(inst, false);
        let te = self.get(inst).expect("just added").clone();
        out.extend(
            self.file_triggers(&files, sense::TRIGGERIN, 1, arg)
                .into_iter()
                .map(Step::run),
        );
        out.extend(
            self.immed_file_triggers(&te, TriggerKind::File, sense::TRIGGERIN, 1, arg)
                .into_iter()
                .map(Step::run),
        );
        if let Some(s) = script(Phase::Post) {
            out.push(Step::run(plain(&te.nevra, &te.prefixes, s, arg)));
        }
        out.extend(
            self.name_triggers(&te, sense::TRIGGERIN, 0)
                .into_iter()
                .map(Step::run),
        );
        out.extend(
            self.immed_name_triggers(&te, sense::TRIGGERIN, 0)
                .into_iter()
                .map(Step::run),
        );
        out.extend(
            self.file_triggers(&files, sense::TRIGGERIN, 2, arg)
                .into_iter()
                .map(Step::run),
        );
        out.extend(
            self.immed_file_triggers(&te, TriggerKind::File, sense::TRIGGERIN, 2, arg)
                .into_iter()
                .map(Step::run),
        );
        if let Some(p) = self.pkgs.iter_mut().find(|p| p.inst == inst) {
            for (f, on) in p.files.iter_mut().zip(states) {
                f.1 = on;
            }
        }
        (out, inst)
    }

    /// The steps of erasing the installed `inst`, whose removed files are
    /// `gone` (its installed files no new package keeps). It stays in the
    /// database until [`Db::erased`] says the steps ran: rpm keeps an
    /// erasure whose `%preun` fails registered.
    pub(crate) fn erase(&self, inst: u32, gone: &[DbFile], scripts: &[Scriptlet]) -> Vec<Step> {
        use crate::scripts::Phase;
        let Some(te) = self.get(inst).cloned() else {
            return Vec::new();
        };
        let arg = self.count(&te.name) - 1;
        let script = |ph: Phase| scripts.iter().find(|s| s.phase == ph);
        let mut out: Vec<Step> = Vec::new();
        let un = sense::TRIGGERUN;
        out.extend(
            self.immed_file_triggers(&te, TriggerKind::File, un, 1, arg)
                .into_iter()
                .map(Step::run),
        );
        out.extend(
            self.file_triggers(gone, un, 1, arg)
                .into_iter()
                .map(Step::run),
        );
        out.extend(
            self.immed_name_triggers(&te, un, -1)
                .into_iter()
                .map(Step::run),
        );
        out.extend(self.name_triggers(&te, un, -1).into_iter().map(Step::run));
        if let Some(s) = script(Phase::PreUn) {
            out.push(Step::run(plain(&te.nevra, &te.prefixes, s, arg)));
        }
        out.extend(
            self.immed_file_triggers(&te, TriggerKind::File, un, 2, arg)
                .into_iter()
                .map(Step::run),
        );
        out.extend(
            self.file_triggers(gone, un, 2, arg)
                .into_iter()
                .map(Step::run),
        );
        out.push(Step::Remove);
        out.extend(
            self.file_triggers(gone, sense::TRIGGERPOSTUN, 1, arg)
                .into_iter()
                .map(Step::run),
        );
        if let Some(s) = script(Phase::PostUn) {
            out.push(Step::run(plain(&te.nevra, &te.prefixes, s, arg)));
        }
        out.extend(
            self.name_triggers(&te, sense::TRIGGERPOSTUN, -1)
                .into_iter()
                .map(Step::run),
        );
        out.extend(
            self.file_triggers(gone, sense::TRIGGERPOSTUN, 2, arg)
                .into_iter()
                .map(Step::run),
        );
        out
    }

    /// The erasure of `inst` ran ([`Db::erase`]'s steps): rpm prepares the
    /// `%transfiletriggerpostun`s its files fire and takes it out of the
    /// database (the end of `rpmPackageErase`).
    pub(crate) fn erased(&mut self, inst: u32) {
        let Some(te) = self.get(inst).cloned() else {
            return;
        };
        // rpm looks at every installed file of the erased package here,
        // also those a new version keeps.
        self.prepare_postun(&te.files);
        self.remove(inst);
    }

    /// `%transfiletriggerun` before the elements: installed packages'
    /// (not erased) on the erased files, then each erased package's own
    /// on the whole database, with its `$1` under rpm 4.20 (`rpmpsmNew`'s
    /// `PKG_TRANSFILETRIGGERUN`: the installed instances of its name, less
    /// one unless the erasure depends on an install). `erased`: each
    /// erased instance and whether its erasure depends on an install (the
    /// old version an upgrade element replaces or obsoletes).
    pub(crate) fn trans_un(&self, erased: &[(u32, bool)]) -> Vec<Run> {
        let mut out = self.trans_triggers(sense::TRIGGERUN);
        for &(i, tied) in erased {
            if let Some(te) = self.get(i) {
                out.extend(self.immed_file_triggers(
                    te,
                    TriggerKind::TransFile,
                    sense::TRIGGERUN,
                    0,
                    self.count(&te.name) - i64::from(!tied),
                ));
            }
        }
        out
    }

    /// After `%posttrans`: installed packages' `%transfiletriggerin` on
    /// this transaction's files, the `%transfiletriggerpostun`s prepared
    /// by the erasures, then the new packages' own `%transfiletriggerin`
    /// on the whole database. `new`: each new package's instance and its
    /// `$1` under rpm 4.20 (`rpmpsmNew`'s `PKG_TRANSFILETRIGGERIN`: that of
    /// its `%posttrans`).
    pub(crate) fn trans_in(&mut self, new: &[(u32, i64)]) -> Vec<Run> {
        let mut out = self.trans_triggers(sense::TRIGGERIN);
        let mut postun = std::mem::take(&mut self.postun);
        sort_uniq(&mut postun);
        for (inst, tix, _) in postun {
            let Some(p) = self.get(inst) else { continue };
            if let Some(t) = find(p, TriggerKind::TransFile, tix) {
                // `runPostUnTransFileTrigs`.
                let arg1 = self.trigger_count(p);
                out.push(trigger_run(
                    p,
                    t,
                    sense::TRIGGERPOSTUN,
                    Some(arg1),
                    None,
                    None,
                ));
            }
        }
        for &(i, arg) in new {
            if let Some(te) = self.get(i) {
                out.extend(self.immed_file_triggers(
                    te,
                    TriggerKind::TransFile,
                    sense::TRIGGERIN,
                    0,
                    arg,
                ));
            }
        }
        out
    }

    /// `$1` of an installed package's file trigger that an element (or
    /// the transaction) sets off: rpm 4.20 counts the trigger package's
    /// installed instances (`rpmdbCountPackages`), rpm 4.18 gives 0.
    fn trigger_count(&self, owner: &DbPkg) -> i64 {
        if self.rpm420 {
            self.count(&owner.name)
        } else {
            0
        }
    }

    /// `runTriggers`: installed packages' name triggers on `te`.
    fn name_triggers(&self, te: &DbPkg, sense: u32, correction: i64) -> Vec<Run> {
        let arg2 = self.count(&te.name) + correction;
        let mut out = Vec::new();
        for p in &self.pkgs {
            let watches = p
                .triggers
                .iter()
                .filter(|t| t.kind == TriggerKind::Name)
                .any(|t| t.entries.iter().any(|e| e.name == te.name));
            if watches {
                out.extend(self.one_trigger(te, p, sense, 0, arg2, None));
            }
        }
        out
    }

    /// `runImmedTriggers`: `te`'s name triggers on installed packages.
    fn immed_name_triggers(&self, te: &DbPkg, sense: u32, correction: i64) -> Vec<Run> {
        let mut done: BTreeSet<u32> = BTreeSet::new();
        let mut out = Vec::new();
        for t in te.triggers.iter().filter(|t| t.kind == TriggerKind::Name) {
            for e in &t.entries {
                if done.contains(&t.index) {
                    continue;
                }
                let sources: Vec<&DbPkg> = self.pkgs.iter().filter(|p| p.name == e.name).collect();
                let n = sources.len() as i64;
                for s in sources {
                    out.extend(self.one_trigger(s, te, sense, correction, n, Some(&mut done)));
                }
            }
        }
        out
    }

    /// `handleOneTrigger`: the first entry of `owner`'s name triggers
    /// that `source` fires runs (once per pair).
    fn one_trigger(
        &self,
        source: &DbPkg,
        owner: &DbPkg,
        sense: u32,
        correction: i64,
        arg2: i64,
        done: Option<&mut BTreeSet<u32>>,
    ) -> Option<Run> {
        for t in owner
            .triggers
            .iter()
            .filter(|t| t.kind == TriggerKind::Name)
        {
            for e in &t.entries {
                if e.flags & sense == 0
                    || e.name != source.name
                    || !any_matches(&source.provides, e)
                {
                    continue;
                }
                let first = match done {
                    Some(d) => d.insert(t.index),
                    None => true,
                };
                if !first {
                    return None;
                }
                let arg1 = self.count(&owner.name) + correction;
                return Some(trigger_run(owner, t, sense, Some(arg1), Some(arg2), None));
            }
        }
        None
    }

    /// `runFileTriggers` for `%filetrigger*`: the database's triggers on
    /// the element's `files`, priority class 1 (≥ 10000) or 2; `arg`: the
    /// element's scriptlet argument, rpm 4.20's `$2`.
    fn file_triggers(&self, files: &[DbFile], sense: u32, class: u8, arg: i64) -> Vec<Run> {
        let mut found = Vec::new();
        for p in &self.pkgs {
            for t in p.triggers.iter().filter(|t| t.kind == TriggerKind::File) {
                if t.entries
                    .iter()
                    .any(|e| files.iter().any(|f| f.0.starts_with(e.name.as_bytes())))
                {
                    found.push((p.inst, t.index, t.priority));
                }
            }
        }
        sort_uniq(&mut found);
        let mut out = Vec::new();
        for (inst, tix, prio) in found {
            if !in_class(prio, class) {
                continue;
            }
            let p = self.get(inst).expect("found above");
            let t = find(p, TriggerKind::File, tix).expect("found above");
            if t.sense() & sense == 0 {
                continue;
            }
            let list: Vec<Vec<u8>> = t
                .entries
                .iter()
                .flat_map(|e| {
                    files
                        .iter()
                        .filter(|f| f.1 && f.0.starts_with(e.name.as_bytes()))
                        .map(|f| f.0.clone())
                })
                .collect();
            if !list.is_empty() {
                let arg2 = self.rpm420.then_some(arg);
                let arg1 = self.trigger_count(p);
                out.push(trigger_run(p, t, sense, Some(arg1), arg2, Some(list)));
            }
        }
        out
    }

    /// `runFileTriggers` for `%transfiletrigger*` (no element): installed
    /// packages' (not of this transaction) on this transaction's added
    /// (`TRIGGERIN`) or erased files.
    fn trans_triggers(&self, sense: u32) -> Vec<Run> {
        let set = if sense == sense::TRIGGERIN {
            &self.added
        } else {
            &self.removed
        };
        let mut found = Vec::new();
        for p in &self.pkgs {
            if self.added.contains(&p.inst) || self.removed.contains(&p.inst) {
                continue;
            }
            for t in p
                .triggers
                .iter()
                .filter(|t| t.kind == TriggerKind::TransFile)
            {
                let hit = t.entries.iter().any(|e| {
                    self.pkgs
                        .iter()
                        .any(|q| set.contains(&q.inst) && dir_match(&q.files, &e.name))
                });
                if hit {
                    found.push((p.inst, t.index, t.priority));
                }
            }
        }
        sort_uniq(&mut found);
        let mut out = Vec::new();
        for (inst, tix, _) in found {
            let p = self.get(inst).expect("found above");
            let t = find(p, TriggerKind::TransFile, tix).expect("found above");
            if t.sense() & sense == 0 {
                continue;
            }
            let (list, _) = self.db_files(t, Some(set));
            if !list.is_empty() {
                let arg1 = self.trigger_count(p);
                out.push(trigger_run(p, t, sense, Some(arg1), None, Some(list)));
            }
        }
        out
    }

    /// `runImmedFileTriggers`: `te`'s own triggers of `kind` on the whole
    /// database (class 0: all priorities). Under rpm 4.20, `$1` is `arg`
    /// (`te`'s scriptlet argument), and a `%filetrigger*`'s `$2` the
    /// installed instances of the package whose file comes first in its
    /// input (`runHandleTriggersInPkg`: `mfi->pkgname`).
    fn immed_file_triggers(
        &self,
        te: &DbPkg,
        kind: TriggerKind,
        sense: u32,
        class: u8,
        arg: i64,
    ) -> Vec<Run> {
        let mut found: Vec<(u32, u32, u32)> = te
            .triggers
            .iter()
            .filter(|t| t.kind == kind)
            .map(|t| (0, t.index, t.priority))
            .collect();
        sort_uniq(&mut found);
        let mut out = Vec::new();
        for (_, tix, prio) in found {
            if !in_class(prio, class) {
                continue;
            }
            let t = find(te, kind, tix).expect("found above");
            if t.sense() & sense == 0 {
                continue;
            }
            let (list, first) = self.db_files(t, None);
            if list.is_empty() {
                continue;
            }
            let (arg1, arg2) = match (self.rpm420, first) {
                (false, _) => (0, None),
                (true, Some(name)) if kind == TriggerKind::File => (arg, Some(self.count(name))),
                (true, _) => (arg, None),
            };
            out.push(trigger_run(te, t, sense, Some(arg1), arg2, Some(list)));
        }
        out
    }

    /// The installed files a trigger's prefixes match, as rpm's database
    /// iterator gives them: per prefix, the packages with a directory
    /// under it (by instance; only those of `only` when given), each one's
    /// installed files under it in header order; and the name of the
    /// package the first of them is from.
    fn db_files(
        &self,
        t: &TriggerDef,
        only: Option<&HashSet<u32>>,
    ) -> (Vec<Vec<u8>>, Option<&str>) {
        let mut out = Vec::new();
        let mut first = None;
        for e in &t.entries {
            for p in &self.pkgs {
                if only.is_some_and(|s| !s.contains(&p.inst)) || !dir_match(&p.files, &e.name) {
                    continue;
                }
                let before = out.len();
                out.extend(
                    p.files
                        .iter()
                        .filter(|f| f.1 && f.0.starts_with(e.name.as_bytes()))
                        .map(|f| f.0.clone()),
                );
                if first.is_none() && out.len() > before {
                    first = Some(p.name.as_str());
                }
            }
        }
        (out, first)
    }

    /// `rpmtriggersPrepPostUnTransFileTrigs`: the `%transfiletriggerpostun`s
    /// an erasure's files fire, to run at the end. rpm 4.18 keeps a
    /// trigger only when the prefix that matched is its *first* one (and
    /// looks at that entry's sense only); rpm 4.20 when any of its
    /// prefixes matched, by that entry's sense (`addTriggers`).
    fn prepare_postun(&mut self, files: &[DbFile]) {
        let mut add = Vec::new();
        for p in &self.pkgs {
            for t in p
                .triggers
                .iter()
                .filter(|t| t.kind == TriggerKind::TransFile)
            {
                for e in &t.entries {
                    let hit = files
                        .iter()
                        .any(|f| f.1 && f.0.starts_with(e.name.as_bytes()));
                    let kept = if self.rpm420 {
                        e.flags & sense::TRIGGERPOSTUN != 0
                    } else {
                        let first = t.entries.first().map(|f| &f.name) == Some(&e.name);
                        first && t.sense() & sense::TRIGGERPOSTUN != 0
                    };
                    if hit && kept {
                        add.push((p.inst, t.index, t.priority));
                    }
                }
            }
        }
        self.postun.extend(add);
    }
}

/// Whether a package has a directory (`DIRNAMES`) starting with `pfx`.
fn dir_match(files: &[DbFile], pfx: &str) -> bool {
    files.iter().any(|f| {
        let dir = match f.0.iter().rposition(|&c| c == b'/') {
            Some(i) => &f.0[..=i],
            None => &f.0[..],
        };
        dir.starts_with(pfx.as_bytes())
    })
}

fn in_class(prio: u32, class: u8) -> bool {
    match class {
        1 => prio >= PRIORITY_BOUND,
        2 => prio < PRIORITY_BOUND,
        _ => true,
    }
}

/// rpm's order of triggers: priority descending, then instance, index.
fn sort_uniq(v: &mut Vec<(u32, u32, u32)>) {
    v.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)).then(a.1.cmp(&b.1)));
    v.dedup();
}

fn find(p: &DbPkg, kind: TriggerKind, tix: u32) -> Option<&TriggerDef> {
    p.triggers.iter().find(|t| t.kind == kind && t.index == tix)
}

fn sense_name(sense: u32) -> &'static str {
    match sense {
        sense::TRIGGERPREIN => "triggerprein",
        sense::TRIGGERIN => "triggerin",
        sense::TRIGGERUN => "triggerun",
        _ => "triggerpostun",
    }
}

fn trigger_run(
    owner: &DbPkg,
    t: &TriggerDef,
    sense: u32,
    arg1: Option<i64>,
    arg2: Option<i64>,
    files: Option<Vec<Vec<u8>>>,
) -> Run {
    let name = format!("%{}{}({})", t.kind.prefix(), sense_name(sense), owner.nevra);
    Run {
        owner: owner.nevra.clone(),
        script: Scriptlet::of_trigger(&t.script, &name),
        name,
        arg1,
        arg2,
        files,
        critical: false,
        prefixes: owner.prefixes.clone(),
    }
}

/// A package's own scriptlet (`%pre`, ...) with `$1`, and the package's
/// install prefixes (none in `%pretrans`: rpm has not set them yet).
/// rpm 4.20's run of `%__systemd_sysusers` for one source of `te`'s
/// sysusers data (`execSysusers`, `lib/psm.c`): the command's words joined
/// by spaces (`--replace FILE` for a file's lines, `--root ROOT` unless the
/// root is `/`, `-`: the lines on stdin), run by `/bin/sh` on the host with
/// the package's `$1`; critical.
fn sysusers_run(te: &DbPkg, su: &Sysusers, command: &str, root: &str, arg1: i64) -> Run {
    let mut body = command.to_string();
    if !su.file.is_empty() {
        body.push_str(" --replace ");
        body.push_str(&su.file);
    }
    if root != "/" {
        body.push_str(" --root ");
        body.push_str(root);
    }
    body.push_str(" -");
    Run {
        owner: te.nevra.clone(),
        name: format!("%sysusers({})", te.nevra),
        script: Scriptlet {
            phase: crate::scripts::Phase::Sysusers,
            body,
            prog: vec!["/bin/sh".into()],
            flags: 0,
            rpmver: None,
        },
        arg1: Some(arg1),
        arg2: None,
        files: Some(su.lines.iter().map(|l| l.as_bytes().to_vec()).collect()),
        critical: true,
        prefixes: te.prefixes.clone(),
    }
}

pub(crate) fn plain(nevra: &str, prefixes: &[String], s: &Scriptlet, arg1: i64) -> Run {
    Run {
        owner: nevra.to_string(),
        name: format!("%{}({nevra})", s.phase.rpm_name()),
        script: s.clone(),
        arg1: Some(arg1),
        arg2: None,
        files: None,
        critical: s.phase.critical(),
        prefixes: if s.phase == crate::scripts::Phase::PreTrans {
            Vec::new()
        } else {
            prefixes.to_vec()
        },
    }
}
