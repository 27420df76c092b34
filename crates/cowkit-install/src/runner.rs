//! The one runner of a transaction's plan: the elements in rpm's order,
//! each turned into steps by [`crate::plan::Db`] as the database stands
//! when it comes (so that an element that failed is not in it for the
//! next ones), the scriptlets run, the files placed or removed, one
//! registration, then `%posttrans` and the transaction file triggers.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use cowkit_fs::root::Root;
use cowkit_rpmdb::Installed;

use crate::config::{apply_fates, erase_files};
use crate::elem::{Elem, Erased};
use crate::pkg::Pkg;
use crate::plan::{plain, Db, DbPkg, PlanEntry, Run, Step};
use crate::prepared::{
    install_staged, register, InDb, PackageFailure, Prepared, Registration, Stager, TxOptions,
    TxSummary,
};
use crate::scripts::{Lua, Phase, RunContext};
use crate::{Error, Gate, Options, Owners, Progress, Result, Summary};

/// The whole plan as it runs when nothing fails: what `--test` shows and
/// what is checked before anything is touched.
pub(crate) fn simulate(pkgs: &[Pkg], indb: &InDb) -> Vec<PlanEntry> {
    let mut db = indb.db.clone();
    let mut out = Vec::new();
    let entry = |element: &str, action, run| PlanEntry {
        element: element.to_string(),
        action,
        run,
    };
    for &i in &indb.order {
        if let Some(s) = pkgs[i].script(Phase::PreTrans) {
            let r = plain(
                &pkgs[i].nevra,
                &pkgs[i].prefixes,
                s,
                db.count(&pkgs[i].name) + 1,
            );
            out.push(entry(&pkgs[i].nevra, "run", Some(r)));
        }
    }
    for (k, r) in untrans(indb, Phase::PreUnTrans, &db) {
        out.push(entry(&indb.erased[k].installed.nevra, "run", Some(r)));
    }
    let erased: Vec<(u32, bool)> = indb.erased.iter().map(|e| (e.inst, e.tied)).collect();
    for r in db.trans_un(&erased) {
        out.push(entry("", "run", Some(r)));
    }
    let mut new = Vec::new();
    for e in &indb.elements {
        let (nevra, steps) = match *e {
            Elem::Add(i) => {
                let (steps, inst) = db.install(pkgs[i].db_pkg(None), &[], &pkgs[i].scripts);
                new.push((i, inst));
                (pkgs[i].nevra.as_str(), steps)
            }
            Elem::Erase(k) => {
                let o = &indb.erased[k];
                let steps = db.erase(o.inst, &o.gone(pkgs), &o.scripts());
                db.erased(o.inst);
                (o.installed.nevra.as_str(), steps)
            }
        };
        for s in steps {
            out.push(match s {
                Step::Run(r) => entry(nevra, "run", Some(*r)),
                Step::Place => entry(nevra, "place", None),
                Step::Remove => entry(nevra, "remove", None),
            });
        }
    }
    for &(i, _) in &new {
        if let Some(s) = pkgs[i].script(Phase::PostTrans) {
            let r = plain(
                &pkgs[i].nevra,
                &pkgs[i].prefixes,
                s,
                posttrans_arg(&db, pkgs, indb, i),
            );
            out.push(entry(&pkgs[i].nevra, "run", Some(r)));
        }
    }
    for (k, r) in untrans(indb, Phase::PostUnTrans, &db) {
        out.push(entry(&indb.erased[k].installed.nevra, "run", Some(r)));
    }
    let insts: Vec<(u32, i64)> = new
        .iter()
        .map(|&(i, inst)| (inst, posttrans_arg(&db, pkgs, indb, i)))
        .collect();
    for r in db.trans_in(&insts) {
        out.push(entry("", "run", Some(r)));
    }
    out
}

/// rpm 4.20's `runTransScripts` of `%preuntrans` or `%postuntrans`: the
/// erased elements in the transaction's order, each with its index in
/// `indb.erased`; nothing under rpm 4.18. (rpm runs none of a failed
/// element: `rpmteOpen` refuses it; the runner skips those.)
fn untrans(indb: &InDb, phase: Phase, db: &Db) -> Vec<(usize, crate::plan::Run)> {
    if !indb.rpm420 {
        return Vec::new();
    }
    indb.elements
        .iter()
        .filter_map(|e| match *e {
            Elem::Erase(k) => Some(k),
            Elem::Add(_) => None,
        })
        .filter_map(|k| indb.erased[k].untrans(phase, db).map(|r| (k, r)))
        .collect()
}

/// `%posttrans`'s `$1` (and, under rpm 4.20, its own
/// `%transfiletriggerin`'s): the instances installed now, plus one when
/// an erasure depends on the package (rpm's `isUpdate`).
fn posttrans_arg(db: &Db, pkgs: &[Pkg], indb: &InDb, i: usize) -> i64 {
    let update = indb.erased.iter().any(|e| e.by == i && e.tied);
    db.count(&pkgs[i].name) + i64::from(update)
}

/// Installed packages whose erasure failed, kept beside the packages that
/// were to replace them ([`Runner::kept`]).
struct Kept {
    /// The placed packages registered beside them
    /// ([`crate::prepared::Registered::Keeping`]).
    keeping: Vec<usize>,
    /// Their file states before the transaction (name, NEVRA, states), put
    /// back after the registration.
    states: Vec<(String, String, Vec<u8>)>,
}

/// What runs a transaction.
struct Runner<'a> {
    root: &'a Root,
    opts: &'a TxOptions,
    pkgs: &'a [Pkg],
    indb: &'a InDb,
    db: Db,
    sum: TxSummary,
    owners: Owners,
    lua: Option<Box<dyn Lua>>,
    progress: &'a dyn Progress,
    stager: Option<&'a Stager>,
    /// Every file's action.
    fates: &'a crate::fate::Fates,
    /// The session answering scriptlets' sync calls, if any.
    nosync: Option<&'a cowkit_nosync::scoped::Session>,
    failed: HashSet<usize>,
    /// The erasures (indices into `indb.erased`) that failed: their
    /// `%preuntrans` (rpm 4.20) or `%preun` failed.
    erase_failed: HashSet<usize>,
    /// Placed packages and their instances.
    placed: Vec<(usize, u32)>,
}

pub(crate) fn run(
    prepared: Prepared<'_>,
    progress: &dyn Progress,
    nosync: Option<&cowkit_nosync::scoped::Session>,
) -> Result<TxSummary> {
    let Prepared {
        root,
        opts,
        pkgs,
        db: indb,
        found,
        mut scratch,
        sum,
        stager,
        gate,
        plan,
        fates,
        inputs: _,
        nosync: _,
    } = prepared;
    let mut opts = opts;
    opts.install.gate = gate.as_ref().map(|o| o.gate.clone());
    let mut r = Runner {
        root,
        opts: &opts,
        pkgs: &pkgs,
        indb: &indb,
        db: indb.db.clone(),
        sum,
        owners: Owners::load(root),
        lua: None,
        progress,
        stager: stager.as_ref(),
        fates: &fates,
        nosync,
        failed: HashSet::new(),
        erase_failed: HashSet::new(),
        placed: Vec::new(),
    };
    if opts.test {
        r.sum.plan = plan;
        for e in &indb.erased {
            r.note_erased(e);
        }
        return Ok(r.sum);
    }
    if opts.justdb {
        // rpm's `--justdb`: one registration of every package (rpm's own
        // `--justdb` transaction, which erases the replaced headers and
        // records the file states rpm records without installing);
        // nothing placed, removed or run.
        for e in &indb.erased {
            r.note_erased(e);
        }
        r.sum.installed = indb.order.iter().map(|&i| pkgs[i].nevra.clone()).collect();
        if let Some(s) = &mut scratch {
            s.keep_owned(|_| false);
        }
        let registration = Registration {
            root,
            opts: &opts,
            pkgs: &pkgs,
            placed: &indb.order,
            found,
            scratch,
            beside: &indb.beside,
            added: &indb.added,
            states: Vec::new(),
            unregister: Vec::new(),
            keeping: Vec::new(),
            kept_states: Vec::new(),
        };
        register(registration, &mut r.sum)?;
        return Ok(r.sum);
    }
    // The journal: written before the first change to the root, so that
    // a run killed from here on is finished by the next one.
    let journal = match (&found, opts.db) {
        (Some(db), true) => {
            let j = begin_journal(root, &db.path, &opts, &pkgs, &indb)?;
            crate::journal::crash_point("journal-written");
            Some(j)
        }
        _ => None,
    };
    r.pretrans()?;
    // rpm's file check after `%pretrans` reports its progress.
    r.progress_flush();
    crate::journal::crash_point("pretrans-done");
    for (k, run) in untrans(r.indb, Phase::PreUnTrans, &r.db) {
        if r.depends_on_failed(k) {
            // rpm marked it failed with the install it depends on.
            continue;
        }
        if let Some(why) = r.script(&run)? {
            // rpm 4.20 marks the element failed: its erasure is skipped.
            r.erase_failure(k, &run, &why, "erase skipped");
        }
    }
    let erased: Vec<(u32, bool)> = indb.erased.iter().map(|e| (e.inst, e.tied)).collect();
    for run in r.db.trans_un(&erased) {
        r.script(&run)?;
    }
    let t_place = std::time::Instant::now();
    let scripts_before = r.sum.seconds.scriptlets;
    r.elements()?;
    for w in r.owners.warnings() {
        if !r.sum.files.warnings.contains(&w) {
            r.sum.files.warnings.push(w);
        }
    }
    r.sum.seconds.place =
        t_place.elapsed().as_secs_f64() - (r.sum.seconds.scriptlets - scripts_before);
    if let Some(o) = &gate {
        let t = std::time::Instant::now();
        if let Some(e) = o.gate.error() {
            return Err(e);
        }
        r.sum.seconds.check_wait = t.elapsed().as_secs_f64();
        if let Some(order) = o.slot.lock().unwrap_or_else(|e| e.into_inner()).take() {
            r.sum.order = order.iter().map(|&i| pkgs[i].nevra.clone()).collect();
        }
    }
    // Which were placed; registration hands them to rpm in the order its
    // check held them (`InDb::added`), not the order a parallel batch
    // finished in.
    let placed: Vec<usize> = r.placed.iter().map(|&(i, _)| i).collect();
    if let Some(s) = &mut scratch {
        s.keep_owned(|dir| placed.iter().any(|&i| pkgs[i].files.find(dir).is_some()));
    }
    let Kept {
        keeping,
        states: kept_states,
    } = r.kept(&placed);
    if let Some(mut j) = journal.clone() {
        j.stage = crate::journal::Stage::Registering;
        for a in &mut j.add {
            let i = placed.iter().find(|&&i| pkgs[i].digest == a.digest);
            a.placed = i.is_some();
            a.keeping = i.is_some_and(|i| keeping.contains(i));
        }
        j.kept_states = kept_states.clone();
        let ran: Vec<bool> = (0..indb.erased.len())
            .map(|k| r.erasure_ran(k, &placed))
            .collect();
        let mut k = 0;
        j.erase.retain(|_| {
            k += 1;
            ran[k - 1]
        });
        j.write(root)?;
        crate::journal::crash_point("placed");
    }
    let registration = Registration {
        root,
        opts: &opts,
        pkgs: &pkgs,
        placed: &placed,
        found,
        scratch,
        beside: &indb.beside,
        added: &indb.added,
        states: placed
            .iter()
            .filter(|&&i| fates.added[i].iter().any(|a| a.state() != 0))
            .map(|&i| {
                (
                    pkgs[i].name.clone(),
                    pkgs[i].nevra.clone(),
                    fates.states_of(i),
                )
            })
            .collect(),
        unregister: indb
            .erased
            .iter()
            .enumerate()
            .filter(|&(k, e)| {
                r.erasure_ran(k, &placed) && (!placed.contains(&e.by) || keeping.contains(&e.by))
            })
            .map(|(_, e)| e.installed.nevra.clone())
            .collect(),
        kept_states,
        keeping,
    };
    register(registration, &mut r.sum)?;
    if let Some(j) = &journal {
        crate::journal::crash_point("registered");
        crate::journal::clear(root, &j.dbpath)?;
    }
    r.posttrans()?;
    if let Some(lua) = r.lua.take() {
        drop(lua);
    }
    Ok(r.sum)
}

/// Write the journal of the transaction about to run on a root whose
/// database is at `dbpath`.
fn begin_journal(
    root: &Root,
    dbpath: &str,
    opts: &TxOptions,
    pkgs: &[Pkg],
    indb: &InDb,
) -> Result<crate::journal::Journal> {
    use crate::journal::{Add, Journal, Old};
    let add = indb
        .order
        .iter()
        .map(|&i| Add {
            nevra: pkgs[i].nevra.clone(),
            digest: pkgs[i].digest.clone(),
            package: std::path::absolute(&pkgs[i].path).unwrap_or_else(|_| pkgs[i].path.clone()),
            beside: indb.beside.contains(&i),
            placed: false,
            keeping: false,
        })
        .collect();
    let erase = indb
        .erased
        .iter()
        .map(|e| Old {
            nevra: e.installed.nevra.clone(),
            instance: e.inst,
            by: pkgs[e.by].nevra.clone(),
        })
        .collect();
    let j = Journal::new(dbpath, opts, add, erase);
    j.write(root)?;
    Ok(j)
}

impl Runner<'_> {
    /// Run one scriptlet; `Ok(Some(why))` when it failed (a warning unless
    /// critical: then the caller fails the element).
    fn script(&mut self, run: &Run) -> Result<Option<String>> {
        if self.opts.noscripts {
            return Ok(None);
        }
        // A Lua host that died, with its scriptlet or since: a new host
        // runs this one.
        if run.script.is_lua() && self.lua.as_mut().is_some_and(|l| !l.alive()) {
            self.lua = None;
        }
        if run.script.is_lua() && self.lua.is_none() {
            if let Some(start) = &self.opts.lua {
                // Started inside the nosync session: the host and what its
                // scriptlets run get their sync calls answered too.
                let nosync = self.nosync;
                let wrap = move |c: &mut std::process::Command| {
                    if let Some(s) = nosync {
                        s.apply(c);
                    }
                };
                self.lua = Some((start.0)(
                    self.root.path(),
                    self.opts.script_stdout_to_stderr,
                    &wrap,
                )?);
            }
        }
        self.sum.scriptlets += 1;
        let t = std::time::Instant::now();
        let args: Vec<i64> = run.arg1.into_iter().chain(run.arg2).collect();
        let mut ctx = RunContext {
            nosync: self.nosync,
            stdout_to_stderr: self.opts.script_stdout_to_stderr,
            lua: match self.lua.as_mut() {
                Some(b) => Some(&mut **b),
                None => None,
            },
        };
        let how = crate::scripts::Invocation {
            name: &run.name,
            args: &args,
            files: run.files.as_deref(),
            prefixes: &run.prefixes,
            rpmver: run.script.rpmver.as_deref(),
        };
        let r = run.script.run(self.root, &how, &mut ctx);
        self.sum.seconds.scriptlets += t.elapsed().as_secs_f64();
        let why = r?;
        if let Some(status) = &why {
            if !run.critical {
                self.sum
                    .scriptlet_warnings
                    .push(format!("{} {}: {status}", run.owner, run.name));
            }
        }
        Ok(why)
    }

    /// Where rpm's progress callback runs (an element's files placed or
    /// removed, the file check after `%pretrans`): it flushes rpm's
    /// `stdout`, so what `<lua>` scriptlets printed until then comes out
    /// there, after the output of shell scriptlets that ran since.
    fn progress_flush(&mut self) {
        if let Some(lua) = self.lua.as_mut() {
            lua.flush();
        }
    }

    fn fail(&mut self, i: usize, e: Error, placed_files: u64) {
        let p = &self.pkgs[i];
        self.failed.insert(i);
        self.sum.failed.push(PackageFailure {
            package: p.path.clone(),
            nevra: p.nevra.clone(),
            error: cowkit_fs::error::chain(&e),
            placed_files,
        });
    }

    fn critical(&mut self, i: usize, run: &Run, why: &str) {
        let e = Error::ScriptFailed {
            package: run.owner.clone(),
            phase: run.script.phase.name(),
            status: format!("{} failed: {why}", run.name),
        };
        self.fail(i, e, 0);
    }

    fn pretrans(&mut self) -> Result<()> {
        for &i in &self.indb.order {
            let p = &self.pkgs[i];
            if let Some(s) = p.script(Phase::PreTrans) {
                let run = plain(&p.nevra, &p.prefixes, s, self.db.count(&p.name) + 1);
                if let Some(why) = self.script(&run)? {
                    self.critical(i, &run, &why);
                }
            }
        }
        Ok(())
    }

    fn posttrans(&mut self) -> Result<()> {
        for k in 0..self.placed.len() {
            let i = self.placed[k].0;
            let p = &self.pkgs[i];
            if let Some(s) = p.script(Phase::PostTrans) {
                let arg = posttrans_arg(&self.db, self.pkgs, self.indb, i);
                self.script(&plain(&p.nevra, &p.prefixes, s, arg))?;
            }
        }
        for (k, run) in untrans(self.indb, Phase::PostUnTrans, &self.db) {
            if !self.depends_on_failed(k) && !self.erase_failed.contains(&k) {
                self.script(&run)?;
            }
        }
        let insts: Vec<(u32, i64)> = self
            .placed
            .iter()
            .map(|&(i, inst)| (inst, posttrans_arg(&self.db, self.pkgs, self.indb, i)))
            .collect();
        for run in self.db.trans_in(&insts) {
            self.script(&run)?;
        }
        Ok(())
    }

    /// Erasure `k` depends on an install that failed: rpm marks it failed
    /// too (`rpmteMarkFailed`) and keeps the package.
    fn depends_on_failed(&self, k: usize) -> bool {
        let e = &self.indb.erased[k];
        e.tied && self.failed.contains(&e.by)
    }

    /// The old version `i` replaces, if it upgrades one.
    fn old_of(&self, i: usize) -> Option<&'_ Installed> {
        self.indb
            .erased
            .iter()
            .find(|e| e.by == i && e.installed.name == self.pkgs[i].name)
            .map(|e| &e.installed)
    }

    fn elements(&mut self) -> Result<()> {
        let elements = &self.indb.elements;
        let mut k = 0;
        while k < elements.len() {
            if k > 0 {
                crate::journal::crash_point(&format!("element-{k}"));
            }
            match elements[k] {
                Elem::Add(i) if self.failed.contains(&i) => k += 1,
                Elem::Add(i) => {
                    let batch = self.quiet_run(&elements[k..]);
                    if batch.is_empty() {
                        self.install_one(i)?;
                        k += 1;
                    } else {
                        k += batch.len();
                        self.place_batch(batch);
                    }
                }
                Elem::Erase(e) => {
                    self.erase_one(e)?;
                    k += 1;
                }
            }
        }
        Ok(())
    }

    /// The installs at the head of `elements` that only place files (no
    /// scriptlet, no trigger fires, no old version): placed in parallel.
    /// They are in the database on return.
    fn quiet_run(&mut self, elements: &[Elem]) -> Vec<(usize, u32)> {
        let mut batch = Vec::new();
        for e in elements {
            let Elem::Add(i) = *e else { break };
            if self.failed.contains(&i) || self.old_of(i).is_some() {
                break;
            }
            let (te, skipping) = self.te(i);
            let (steps, inst) = self.db.install(te, &skipping, &self.pkgs[i].scripts);
            let quiet = steps
                .iter()
                .all(|s| matches!(s, Step::Place) || self.opts.noscripts);
            if !quiet {
                self.db.remove(inst);
                break;
            }
            batch.push((i, inst));
        }
        batch
    }

    fn place_batch(&mut self, batch: Vec<(usize, u32)>) {
        self.progress_flush();
        let pkgs: Vec<&Pkg> = batch.iter().map(|&(i, _)| &self.pkgs[i]).collect();
        // Config files already on disk are decided first (cheap: only
        // config files are looked at); a package whose decision fails
        // fails alone.
        let mut decided: Vec<Result<Options>> = Vec::with_capacity(pkgs.len());
        for (&(i, _), p) in batch.iter().zip(&pkgs) {
            let actions = &self.fates.added[i];
            let mut o = self.opts.install.clone();
            let kept = |fx: u32| self.fates.kept.contains(&(i, fx as usize));
            decided
                .push(apply_fates(self.root, p, actions, kept, &mut o, &mut self.sum).map(|_| o));
        }
        let results = place_parallel(
            self.root,
            &self.owners,
            &pkgs,
            decided,
            self.opts.jobs,
            self.progress,
            self.stager,
        );
        for ((i, inst), (r, n)) in batch.into_iter().zip(results) {
            match r {
                Ok(s) => self.placed_ok(i, inst, s),
                Err(e) => {
                    self.db.remove(inst);
                    self.fail(i, e, n);
                }
            }
        }
    }

    fn placed_ok(&mut self, i: usize, inst: u32, s: Summary) {
        let p = &self.pkgs[i];
        self.sum.files.add(s);
        self.sum.installed.push(p.nevra.clone());
        if let Some(kept) = self.indb.kept.get(&p.name) {
            self.sum
                .installed_beside
                .push((p.nevra.clone(), kept.clone()));
        }
        self.placed.push((i, inst));
    }

    /// Package `i` as the database entry its install adds (its files'
    /// states as its actions leave them) and, per file, whether its
    /// action skips it.
    fn te(&self, i: usize) -> (DbPkg, Vec<bool>) {
        let actions = &self.fates.added[i];
        (
            self.pkgs[i].db_pkg(Some(actions)),
            actions.iter().map(|a| a.skipping()).collect(),
        )
    }

    /// One install element, step by step; a critical scriptlet or the
    /// placement failing stops it and takes it out of the database.
    fn install_one(&mut self, i: usize) -> Result<()> {
        let p = &self.pkgs[i];
        let (te, skipping) = self.te(i);
        let (steps, inst) = self.db.install(te, &skipping, &p.scripts);
        let mut placed_yet = false;
        for step in steps {
            match step {
                Step::Run(run) => {
                    if let Some(why) = self.script(&run)?.filter(|_| run.critical) {
                        self.db.remove(inst);
                        self.critical(i, &run, &why);
                        return Ok(());
                    }
                    if !self.opts.noscripts && !placed_yet {
                        // What runs before the files (rpm 4.20's sysusers,
                        // `%pretrigger`s, `%pre`) may have added the users
                        // and groups that own them.
                        self.owners = Owners::load(self.root);
                    }
                }
                Step::Place => {
                    placed_yet = true;
                    self.progress_flush();
                    let counting = crate::Counting {
                        inner: self.progress,
                        files: Default::default(),
                    };
                    match self.place(i, &counting) {
                        Ok(s) => self.placed_ok(i, inst, s),
                        Err(e) => {
                            self.db.remove(inst);
                            self.fail(i, e, counting.files.into_inner());
                            return Ok(());
                        }
                    }
                }
                Step::Remove => {}
            }
        }
        Ok(())
    }

    fn place(&mut self, i: usize, progress: &dyn Progress) -> Result<Summary> {
        let p = &self.pkgs[i];
        let mut o = self.opts.install.clone();
        o.threads = o.threads.max(self.opts.jobs);
        o.expect_header = Some(p.digest.clone());
        let fates = self.fates;
        let kept = |fx: u32| fates.kept.contains(&(i, fx as usize));
        apply_fates(self.root, p, &fates.added[i], kept, &mut o, &mut self.sum)?;
        install_staged(self.root, &self.owners, p, &o, progress, self.stager)
    }

    /// One erase element: skipped when the package replacing it failed
    /// (rpm keeps the old one then).
    fn erase_one(&mut self, e: usize) -> Result<()> {
        let o = &self.indb.erased[e];
        if self.depends_on_failed(e) {
            return Ok(());
        }
        if self.erase_failed.contains(&e) {
            // Its %preuntrans failed: rpm 4.20 skips the element.
            return Ok(());
        }
        let steps = self.db.erase(o.inst, &o.gone(self.pkgs), &o.scripts());
        for step in steps {
            match step {
                Step::Run(run) => {
                    if let Some(why) = self.script(&run)?.filter(|_| run.critical) {
                        // rpm keeps the old version, files and entry.
                        self.erase_failure(e, &run, &why, "erase failed");
                        return Ok(());
                    }
                }
                Step::Remove => {
                    self.progress_flush();
                    let passed = Gate::verdict_of(self.opts.install.gate.as_ref())?;
                    self.sum.old_files_removed += erase_files(
                        self.root,
                        &o.installed,
                        &self.fates.erased[e],
                        &mut self.sum,
                        &passed,
                    )?;
                }
                Step::Place => {}
            }
        }
        self.db.erased(o.inst);
        self.note_erased(o);
        Ok(())
    }

    /// Erasure `k` failed with `run` (its `%preun`, or rpm 4.20's
    /// `%preuntrans`): rpm keeps the installed package, files and entry,
    /// and counts the element failed (`outcome` is rpm's word for it).
    fn erase_failure(&mut self, k: usize, run: &Run, why: &str, outcome: &'static str) {
        self.erase_failed.insert(k);
        let e = Error::ScriptFailed {
            package: run.owner.clone(),
            phase: run.script.phase.name(),
            status: format!("{} failed: {why}", run.name),
        };
        self.sum.erase_failed.push(crate::prepared::EraseFailure {
            nevra: self.indb.erased[k].installed.nevra.clone(),
            outcome,
            error: cowkit_fs::error::chain(&e),
        });
    }

    /// Whether erasure `k` ran, once the elements are done (`placed`: the
    /// packages placed): one an install replaces ran if that package was
    /// placed, one of its own always; neither if it failed.
    fn erasure_ran(&self, k: usize, placed: &[usize]) -> bool {
        let e = &self.indb.erased[k];
        (!e.tied || placed.contains(&e.by)) && !self.erase_failed.contains(&k)
    }

    /// The installed packages whose erasure failed, kept beside the placed
    /// packages (`placed`) that were to replace them.
    fn kept(&self, placed: &[usize]) -> Kept {
        let erased = &self.indb.erased;
        let keeping: Vec<usize> = placed
            .iter()
            .copied()
            .filter(|&i| self.erase_failed.iter().any(|&k| erased[k].by == i))
            .collect();
        let states = erased
            .iter()
            .enumerate()
            .filter(|&(k, e)| self.erase_failed.contains(&k) && keeping.contains(&e.by))
            // (A package without files has no states to put back.)
            .filter(|(_, e)| !e.installed.files.is_empty())
            .map(|(_, e)| {
                let i = &e.installed;
                let states = i.files.iter().map(|f| f.state as u8).collect();
                (i.name.clone(), i.nevra.clone(), states)
            })
            .collect();
        Kept { keeping, states }
    }

    fn note_erased(&mut self, o: &Erased) {
        let by = self.pkgs[o.by].nevra.clone();
        if o.installed.name == self.pkgs[o.by].name {
            self.sum.upgraded.push((o.installed.nevra.clone(), by));
        } else {
            self.sum.erased.push((o.installed.nevra.clone(), by));
        }
    }
}

/// Place a run of packages without scriptlets, `jobs` at a time.
fn place_parallel(
    root: &Root,
    owners: &Owners,
    batch: &[&Pkg],
    decided: Vec<Result<Options>>,
    jobs: usize,
    progress: &dyn Progress,
    stager: Option<&Stager>,
) -> Vec<(Result<Summary>, u64)> {
    let workers = jobs.clamp(1, batch.len().max(1));
    // The CPUs the packages do not use go to threads within a package.
    let threads = (jobs / workers).max(1);
    let next = AtomicUsize::new(0);
    let decided: Vec<Mutex<Option<Result<Options>>>> = decided
        .into_iter()
        .map(|d| {
            Mutex::new(Some(d.map(|mut o| {
                o.threads = o.threads.max(threads);
                o
            })))
        })
        .collect();
    let results: Mutex<Vec<(usize, Result<Summary>, u64)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(p) = batch.get(i) else { break };
                let o = decided[i]
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take()
                    .expect("taken once");
                let counting = crate::Counting {
                    inner: progress,
                    files: Default::default(),
                };
                let r = o.and_then(|mut o| {
                    o.expect_header = Some(p.digest.clone());
                    install_staged(root, owners, p, &o, &counting, stager)
                });
                results.lock().unwrap_or_else(|e| e.into_inner()).push((
                    i,
                    r,
                    counting.files.into_inner(),
                ));
            });
        }
    });
    let mut r = results.into_inner().unwrap_or_else(|e| e.into_inner());
    r.sort_by_key(|(i, _, _)| *i);
    r.into_iter().map(|(_, r, n)| (r, n)).collect()
}
