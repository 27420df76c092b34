//! A transaction: several packages installed or upgraded the way `rpm -U`
//! does it, with cowkit placing the files.
//!
//! 1. Every package's header is read and verified; rpm checks the whole
//!    transaction against the root's database ([`cowkit_rpmdb::Rpm::check`]:
//!    file conflicts, packages already installed, dependencies) and orders
//!    it. Scriptlets and triggers cowkit cannot run as rpm would, erasures
//!    it does not do (`Obsoletes`) and install-only packages `rpm -U`
//!    would upgrade away are refused here (see `refuse`); a relative root
//!    is refused as rpm refuses it. A refusal touches nothing. `--test`
//!    stops here.
//! 2. `%pretrans` of every package, in order.
//! 3. Per package, in rpm's order: `%pre`, its files (owners resolved after
//!    `%pre`, config files decided like rpm), `%post`; for an upgrade then
//!    the old version's `%preun`, its files that the new one does not
//!    have, its `%postun`. Consecutive packages with none of these
//!    scriptlets and no old version are placed in parallel.
//! 4. One header-only registration of every placed package
//!    ([`cowkit_rpmdb::Rpm::register_as`]: `-U`, or `-i` for install-only
//!    packages put beside their installed versions, [`InstallOnly`]).
//! 5. `%posttrans` of every placed package.
//!
//! A package whose `%pretrans`/`%pre` fails or whose files cannot be placed
//! is reported and not registered; the others go on, as with rpm. Files it
//! had already placed in existing directories stay (as rpm leaves them);
//! the new directories it was building, which nobody could see yet, are
//! removed with what is in them; see `docs/install.md`.

use std::collections::HashMap;
use std::path::PathBuf;

use cowkit_fs::root::Root;
use cowkit_rpmdb::{Check, DbPath, Installed, Rpm};

use crate::elem::{Elem, Erased};
use crate::pkg::{Pkg, KEEP_OPEN};
use crate::plan::Db;
use crate::prepared::{file_args, rpm_check, InDb, OrderSlot, Overlap};
pub use crate::prepared::{
    ConfigNote, FileAction, Handed, InstallOnly, LuaStarter, PackageFailure, Prepared, Stager,
    StartLua, Timings, TxOptions, TxSummary,
};
use crate::refuse;
use crate::{Error, Progress, Recovery, Result};

/// Install or upgrade `packages` in `root` as one transaction.
pub fn transaction(
    root: &Root,
    packages: &[PathBuf],
    opts: &TxOptions,
    progress: &dyn Progress,
) -> Result<TxSummary> {
    prepare(root, packages, opts)?.run(progress)
}

/// Finish a transaction a killed run left unfinished on `root` (its
/// journal, see [`crate::journal`]) before anything else reads the
/// database. `packages` are those of the transaction about to run (none
/// for `cowkit dnf`, whose resolver runs first): when they include every
/// package of an interrupted transaction that had registered nothing yet,
/// that transaction is left for them to do again. With `--test` or
/// without a database nothing is done.
pub fn recover(root: &Root, opts: &TxOptions, packages: &[PathBuf]) -> Result<Option<Recovery>> {
    let again = |paths: &[PathBuf], asked: &TxOptions| {
        prepare_inner(root, paths, asked, false)?.run(&crate::NoProgress)
    };
    crate::journal::recover(root, opts, packages, &again)
}

impl Prepared<'_> {
    /// Run it: scriptlets, files, registration (see the module docs).
    pub fn run(mut self, progress: &dyn Progress) -> Result<TxSummary> {
        // Scriptlets of a root being built run without sync calls, one
        // session for the whole transaction (also the Lua host's).
        let scripts = !self.opts.test && self.plan.iter().any(|e| e.run.is_some());
        let path = self.root.path();
        // From here to the registration signals wait, as with rpm's
        // transaction lock (see [`crate::interrupt`]).
        let _critical = crate::interrupt::Critical::enter();
        let session = match self.nosync.take() {
            Some(s) => Some(s),
            None => crate::nosync::start(path, self.opts.keep_syncs, scripts)?,
        };
        let inputs = self.inputs.take();
        let result = crate::runner::run(self, progress, session.as_ref());
        drop(inputs);
        // The final sync runs in any case; a failed transaction keeps its
        // own error.
        let synced = crate::nosync::finish(session);
        let mut sum = result?;
        if let Some((nosync, secs)) = synced {
            sum.seconds.final_sync = secs;
            sum.nosync = Some(nosync);
        }
        Ok(sum)
    }
}

/// Read and check `packages` for a transaction in `root`: headers, rpm's
/// check and order, what cannot run. Nothing in the root is changed,
/// except that a transaction a killed run left unfinished (its journal)
/// is finished first ([`crate::recover`], reported in
/// [`TxSummary::recovered`]).
pub fn prepare<'r>(root: &'r Root, packages: &[PathBuf], opts: &TxOptions) -> Result<Prepared<'r>> {
    prepare_inner(root, packages, opts, true)
}

/// [`prepare`]; `recover`: finish an interrupted transaction first.
pub(crate) fn prepare_inner<'r>(
    root: &'r Root,
    packages: &[PathBuf],
    opts: &TxOptions,
    recover: bool,
) -> Result<Prepared<'r>> {
    // Scriptlets run chrooted into the root, and rpm is handed it: rpm
    // refuses a relative `--root`, and so does cowkit, before anything
    // (only placing files does not need it absolute).
    if !root.path().is_absolute() && (opts.db || !opts.noscripts) {
        return Err(Error::RelativeRoot {
            path: root.path().to_path_buf(),
        });
    }
    // The rpm that registers the transaction must be the generation whose
    // rules cowkit runs it by.
    if opts.db {
        cowkit_rpmdb::check_generation()?;
    }
    let recovered = if recover {
        self::recover(root, opts, packages)?
    } else {
        None
    };
    let mut sum = TxSummary {
        test: opts.test,
        recovered,
        ..TxSummary::default()
    };
    let t0 = std::time::Instant::now();
    // 1. Headers, rpm's check and order, what cannot run.
    // A root without a database is checked against an empty scratch one:
    // where its database goes is decided after its files are placed, by
    // the root's own rpm configuration if the transaction brings one.
    let found = if opts.db {
        cowkit_rpmdb::find(root, opts.dbpath.as_deref())?
    } else {
        None
    };
    let scratch = new_root_scratch(root, &found, opts)?;
    let pre_register = scratch.is_some() && !opts.test;
    let check = rpm_check(opts, opts.install_only == InstallOnly::Every);
    // That registration is part of building the root: its sync calls
    // (sqlite's, rpm's closing `syncfs`) are answered by the
    // transaction's nosync session, started here for it, whose one final
    // `syncfs` makes the root durable. Declared before the check: dropped
    // after it.
    let nosync = match pre_register {
        true => crate::nosync::start(root.path(), opts.keep_syncs, true)?,
        false => None,
    };
    // rpm's check and registration into a scratch database needs nothing
    // from the headers: it runs while they are read (waited for if
    // anything below fails, before the scratch database goes).
    let early = match (&scratch, pre_register) {
        (Some(s), true) => Some(
            Rpm::new(root.path(), s.db())
                .with_file_args(file_args(&opts.files))
                .start_check_and_register(packages, &check, &|c| {
                    if let Some(s) = &nosync {
                        s.apply(c);
                    }
                })?,
        ),
        _ => None,
    };
    // Declared after `scratch`: dropped (waiting for rpm) before it.
    let gate: Option<Overlap>;
    let mut pkgs = read_packages(packages, opts.db)?;
    // A package that cannot be placed refuses the whole transaction.
    refuse::unplaceable(&pkgs)?;
    let mut checked = if opts.db {
        let db = found
            .as_ref()
            .or(scratch.as_ref().map(|s| s.db()))
            .expect("one of them");
        let fresh = scratch.is_some();
        let c = check_in_db(
            &Rpm::new(root.path(), db).with_file_args(file_args(&opts.files)),
            packages,
            &mut pkgs,
            opts,
            fresh,
            early,
        )?;
        gate = c.gate;
        c.db
    } else {
        gate = None;
        InDb {
            order: (0..pkgs.len()).collect(),
            elements: (0..pkgs.len()).map(Elem::Add).collect(),
            ..InDb::default()
        }
    };
    // rpm 4.20 creates the users and groups packages provide as sysusers
    // data with its `%__systemd_sysusers` (asked only when a package has
    // such data), before each package's `%pre`.
    if checked.rpm420 && pkgs.iter().any(|p| !p.sysusers.is_empty()) {
        let command = Rpm::host_macros(&["__systemd_sysusers"])?
            .into_iter()
            .next()
            .unwrap_or_default();
        if !command.is_empty() {
            refuse::sysusers_without_scripts(&pkgs, opts.noscripts, opts.justdb)?;
            checked
                .db
                .set_sysusers(command, root.path().to_string_lossy().into_owned());
        }
    }
    // The plan as it runs when nothing fails: every run is looked at
    // before anything is touched, `--test` shows it, and whether any runs
    // decides the nosync session.
    let plan = if opts.noscripts || opts.justdb {
        Vec::new()
    } else {
        crate::runner::simulate(&pkgs, &checked)
    };
    refuse::unsupported(&plan, opts.lua.is_some(), checked.rpm420)?;
    // Every file's action, decided before anything is touched.
    let owners = match (&found, opts.db) {
        (Some(db), true) => file_owners(
            &Rpm::new(root.path(), db),
            &pkgs,
            &checked,
            opts.files.min_writes,
        )?,
        _ => Vec::new(),
    };
    let fates = crate::fate::decide(
        root,
        &pkgs,
        &checked.elements,
        &checked.erased,
        &owners,
        &opts.files,
    )?;
    if opts.test {
        sum.files_plan = file_plan(&pkgs, &checked, &fates);
    }
    sum.db = found.clone();
    sum.dropped = checked.dropped.clone();
    sum.order = checked
        .order
        .iter()
        .map(|&i| pkgs[i].nevra.clone())
        .collect();
    sum.seconds.check = t0.elapsed().as_secs_f64();
    Ok(Prepared {
        root,
        opts: opts.clone(),
        pkgs,
        db: checked,
        found,
        scratch: scratch.filter(|_| pre_register),
        sum,
        stager: None,
        gate,
        plan,
        fates,
        inputs: None,
        nosync,
    })
}

/// The packages among `packages` that rpm's `-F` (freshen) keeps with
/// `opts`' filters (`--oldpackage`), in the order given: those whose
/// name is installed in an older version (with `--oldpackage` also a
/// newer one). rpm leaves the others out silently. A root without a
/// database keeps none.
pub fn freshen(root: &Root, packages: &[PathBuf], opts: &TxOptions) -> Result<Vec<PathBuf>> {
    if !opts.db {
        return Err(Error::Options {
            why: "freshening (`-F`) needs the root's database: it upgrades only installed packages"
                .into(),
        });
    }
    cowkit_rpmdb::check_generation()?;
    let Some(db) = cowkit_rpmdb::find(root, opts.dbpath.as_deref())? else {
        return Ok(Vec::new());
    };
    let pkgs = read_packages(packages, true)?;
    let keeps = Rpm::new(root.path(), &db)
        .with_file_args(file_args(&opts.files))
        .freshen_keeps(packages, &rpm_check(opts, false))?;
    Ok(pkgs
        .into_iter()
        .filter(|p| keeps.contains(&p.nevra))
        .map(|p| p.path)
        .collect())
}

/// The installed packages, other than those the transaction erases, that
/// own a path whose action depends on them: the new packages' config
/// files and coloured files (with `min_writes`, every regular file and
/// symlink: `%_minimize_writes` touches those that are the same), and the
/// erased packages' files no new package has (another owner keeps them).
/// One rpm query, none when there is no such path.
fn file_owners(
    rpm: &Rpm,
    pkgs: &[Pkg],
    indb: &InDb,
    min_writes: bool,
) -> Result<Vec<crate::fate::Owner>> {
    let mut paths: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    for p in pkgs {
        for f in &p.files.files {
            let i = f.index as usize;
            let cfg = p
                .flags
                .get(i)
                .is_some_and(|x| x & crate::action::flag::CONFIG != 0);
            let colored = p.colors.get(i).is_some_and(|&c| c != 0);
            let same = min_writes
                && matches!(
                    f.kind,
                    cowkit_archive::files::Kind::Regular | cowkit_archive::files::Kind::Symlink
                );
            if cfg || colored || same {
                if let Some(s) = f.path.to_str() {
                    paths.insert(s);
                }
            }
        }
    }
    for e in &indb.erased {
        for f in &e.installed.files {
            if pkgs.iter().all(|p| p.files.find(&f.path).is_none()) {
                paths.insert(&f.path);
            }
        }
    }
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let paths: Vec<&str> = paths.into_iter().collect();
    let erased: Vec<u32> = indb.erased.iter().map(|e| e.inst).collect();
    let mut by: std::collections::BTreeMap<u32, crate::fate::Owner> = Default::default();
    for o in rpm.owner_files(&paths)? {
        if erased.contains(&o.inst) {
            continue;
        }
        by.entry(o.inst)
            .or_insert_with(|| crate::fate::Owner {
                inst: o.inst,
                algo: o.algo,
                files: Vec::new(),
            })
            .files
            .push(o.file);
    }
    Ok(by.into_values().collect())
}

/// Every file's action, for `--test`: the files of each element in
/// order.
fn file_plan(pkgs: &[Pkg], indb: &InDb, fates: &crate::fate::Fates) -> Vec<FileAction> {
    let mut v = Vec::new();
    for e in &indb.elements {
        match *e {
            Elem::Add(i) => {
                for f in &pkgs[i].files.files {
                    v.push(FileAction {
                        element: pkgs[i].nevra.clone(),
                        path: f.path.to_string(),
                        action: fates.added[i][f.index as usize],
                    });
                }
            }
            Elem::Erase(k) => {
                let o = &indb.erased[k].installed;
                for (fx, f) in o.files.iter().enumerate() {
                    v.push(FileAction {
                        element: o.nevra.clone(),
                        path: f.path.clone(),
                        action: fates.erased[k][fx],
                    });
                }
            }
        }
    }
    v
}

/// A new root's database is built aside: rpm checks the transaction and
/// registers it in one call (nothing else reads that database), and it is
/// moved into place once the files are (see `run`). First, what killed
/// runs left in the root's /var/tmp goes: scratch databases
/// (`Scratch::new` removes them too) and scriptlet bodies.
fn new_root_scratch<'r>(
    root: &'r Root,
    found: &Option<DbPath>,
    opts: &TxOptions,
) -> Result<Option<cowkit_rpmdb::Scratch<'r>>> {
    if !opts.test {
        cowkit_rpmdb::sweep_scratch(root)?;
        crate::scripts::sweep(root)?;
    }
    Ok(match (found, opts.db) {
        (None, true) => Some(cowkit_rpmdb::Scratch::new(root)?),
        _ => None,
    })
}

/// The headers of `packages`. The same package given twice is rpm's to
/// leave out (its check says which it keeps); two different packages of
/// one NEVRA are refused: rpm's answer names the NEVRA it keeps, not
/// which of them.
fn read_packages(packages: &[PathBuf], db: bool) -> Result<Vec<Pkg>> {
    let pkgs = packages
        .iter()
        .map(|p| Pkg::read(p, packages.len() <= KEEP_OPEN))
        .collect::<Result<Vec<_>>>()?;
    refuse::same_nevra(&pkgs, db)?;
    Ok(pkgs)
}

/// [`InDb`], and rpm's check still running beside the placement.
struct Checked {
    db: InDb,
    gate: Option<Overlap>,
}

/// rpm's check and order of the transaction in `rpm`'s database (`fresh`:
/// a new root's scratch database, empty, whose check `early` started),
/// the erasures it implies and the database the triggers see.
///
/// rpm leaves out of a transaction the packages it finds redundant as it
/// adds them (an older version of a name given twice in an upgrade, the
/// same package again, a package another one obsoletes): those are taken
/// out of `pkgs`, and the transaction is the packages rpm kept.
fn check_in_db(
    rpm: &Rpm,
    packages: &[PathBuf],
    pkgs: &mut Vec<Pkg>,
    opts: &TxOptions,
    fresh: bool,
    early: Option<cowkit_rpmdb::PendingCheck>,
) -> Result<Checked> {
    let names: Vec<&str> = pkgs.iter().map(|p| p.name.as_str()).collect();
    // A scratch database is new and empty: nothing to ask it (each rpm
    // query costs a process start and the database's opening).
    let instances: Vec<Installed> = if fresh {
        Vec::new()
    } else {
        rpm.installed(&names)?
    };
    // A reinstall replaces the installed package of the same NEVRA and
    // nothing else: no other version of an install-only name is erased.
    let beside_of = |pkgs: &[Pkg]| -> Result<Vec<usize>> {
        if opts.reinstall {
            Ok(Vec::new())
        } else {
            refuse::install_beside(pkgs, &instances, opts.install_only)
        }
    };
    let beside = beside_of(pkgs)?;
    // With nothing else upgraded, the whole transaction is rpm's `-i`;
    // otherwise rpm's `-U` checks and orders it (its erasures of the kept
    // versions are dropped) and `-i` checks the install-only packages
    // among themselves and the installed ones.
    let upgrades = pkgs
        .iter()
        .enumerate()
        .any(|(i, p)| !beside.contains(&i) && instances.iter().any(|x| x.name == p.name));
    let all_i = !beside.is_empty() && !upgrades;
    let nevras: Vec<String> = pkgs.iter().map(|p| p.nevra.clone()).collect();
    let check = rpm_check(opts, all_i);
    let (plan, gate) = rpm_plan(rpm, packages, pkgs, opts, early, check)?;
    let mut plan = plan;
    // Erasures the resolver hands rpm on their own, which no upgrade
    // element replaces or obsoletes: rpm orders them as it adds them, and
    // the transaction is built as the resolver builds it.
    let alone = alone_erasures(&opts.handed, pkgs);
    if !alone.is_empty() {
        plan = handed_plan(rpm, packages, pkgs, &opts.handed, &beside, check)?;
    } else if !beside.is_empty() && !all_i {
        plan = mixed_plan(rpm, packages, &beside, check)?;
    }
    let mut order = refuse::plan_order(&plan, &nevras)?;
    let (mut beside, mut nevras) = (beside, nevras);
    let mut added: Vec<usize> = (0..pkgs.len()).collect();
    if order.len() < pkgs.len() {
        let held = refuse::add_order(&nevras, &order, &plan.dropped);
        refuse::keep_ordered(pkgs, &order);
        // Indices among the packages kept.
        let mut kept_at = vec![0; nevras.len()];
        let mut sorted = order.clone();
        sorted.sort_unstable();
        for (k, &i) in sorted.iter().enumerate() {
            kept_at[i] = k;
        }
        added = held.iter().map(|&i| kept_at[i]).collect();
        beside = beside_of(pkgs)?;
        nevras = pkgs.iter().map(|p| p.nevra.clone()).collect();
        order = refuse::plan_order(&plan, &nevras)?;
    }
    let pkgs: &[Pkg] = pkgs;
    let mut kept: HashMap<String, Vec<String>> = HashMap::new();
    for i in &instances {
        if beside.iter().any(|&b| pkgs[b].name == i.name) {
            kept.entry(i.name.clone())
                .or_default()
                .push(i.nevra.clone());
        }
    }
    let erased = erasures(rpm, pkgs, &plan.erase, instances, &alone)?;
    let (mut db, erased_at) = database(rpm, pkgs, erased, fresh)?;
    let elements = refuse::elements(&plan, &nevras, &erased_at)?;
    let rpm420 = cowkit_rpmdb::check_generation()? == cowkit_rpmdb::generation::Generation::Rpm420;
    db.set_rpm420(rpm420);
    Ok(Checked {
        db: InDb {
            order,
            elements,
            erased: erased_at,
            db,
            beside,
            kept,
            dropped: plan.dropped,
            added,
            rpm420,
        },
        gate,
    })
}

/// rpm's check and plan of the transaction (`early`: a new root's check
/// already started). A new root whose packages run nothing has its files
/// placed while rpm checks (new directories unseen until it passes): the
/// plan's order then comes later, through the returned [`Overlap`].
fn rpm_plan(
    rpm: &Rpm,
    packages: &[PathBuf],
    pkgs: &[Pkg],
    opts: &TxOptions,
    early: Option<cowkit_rpmdb::PendingCheck>,
    check: Check,
) -> Result<(cowkit_rpmdb::Plan, Option<Overlap>)> {
    let nevras: Vec<String> = pkgs.iter().map(|p| p.nevra.clone()).collect();
    // Where rpm may leave packages out, the files wait for its answer.
    let overlap = early.is_some()
        && !opts.no_overlap
        && !refuse::may_leave_out(pkgs)
        && !opts.justdb
        && (opts.noscripts
            || pkgs
                .iter()
                .all(|p| p.scripts.is_empty() && !p.has_triggers()));
    Ok(match early {
        Some(pending) if overlap => {
            let slot: OrderSlot = Default::default();
            let answer = std::sync::Arc::clone(&slot);
            let names = nevras.clone();
            let gate = Overlap {
                gate: crate::Gate::new(move || {
                    let order = refuse::plan_order(&pending.wait()?, &names)?;
                    if order.len() != names.len() {
                        return Err(refuse::left_out(order.len(), names.len()));
                    }
                    *answer.lock().unwrap_or_else(|e| e.into_inner()) = Some(order);
                    Ok(())
                }),
                slot,
            };
            // A new root: nothing to erase, and the order comes later.
            let plan = cowkit_rpmdb::Plan {
                order: nevras.clone(),
                erase: Vec::new(),
                elements: nevras.iter().map(|n| (true, n.clone())).collect(),
                dropped: Vec::new(),
            };
            (plan, Some(gate))
        }
        Some(pending) => (pending.wait()?, None),
        None => (rpm.check(packages, &check)?, None),
    })
}

/// rpm's `-i` check of the install-only packages `beside` (indices into
/// `packages`) against the installed ones, dependencies left to the
/// check of the whole transaction.
fn check_beside(rpm: &Rpm, packages: &[PathBuf], beside: &[usize], check: Check) -> Result<()> {
    let paths: Vec<PathBuf> = beside.iter().map(|&b| packages[b].clone()).collect();
    rpm.check(
        &paths,
        &Check {
            nodeps: true,
            install: true,
            ..check
        },
    )?;
    Ok(())
}

/// The plan of a transaction that installs the packages `beside` next to
/// their installed versions and upgrades the others, as dnf builds it:
/// `rpm -i` checks the install-only packages against the installed ones
/// (`-U`, already run, checked the rest), and rpm's Python bindings order
/// install elements for these and upgrades for the others (the kept
/// versions are not in it, and would change rpm's order). The packages
/// come in the order dnf adds them (`cowkit dnf` sorts them so).
fn mixed_plan(
    rpm: &Rpm,
    packages: &[PathBuf],
    beside: &[usize],
    check: Check,
) -> Result<cowkit_rpmdb::Plan> {
    check_beside(rpm, packages, beside, check)?;
    let how: Vec<(PathBuf, bool)> = packages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.clone(), beside.contains(&i)))
        .collect();
    Ok(rpm.order_mixed(&how)?)
}

/// `nevra` with a zero epoch left out (`name-0:1-1.noarch` as dnf5
/// writes it, `name-1-1.noarch`).
fn plain_nevra(nevra: &str) -> String {
    match nevra.rsplitn(3, '-').collect::<Vec<_>>()[..] {
        [ra, v, n] => format!("{n}-{}-{ra}", v.strip_prefix("0:").unwrap_or(v)),
        _ => nevra.to_string(),
    }
}

/// The name of `nevra` (`name-[epoch:]version-release.arch`).
fn name_of(nevra: &str) -> &str {
    nevra.rsplitn(3, '-').nth(2).unwrap_or(nevra)
}

/// The erasures among `handed` (NEVRAs, zero epochs left out) that no
/// upgrade or reinstall element replaces (same name) and no upgrade
/// element obsoletes (by name): rpm adds those as elements depending on
/// nothing (`rpmtsAddEraseElement`), the others as the erasures an
/// upgrade element brings (`addSelfErasures`, `addObsoleteErasures`).
fn alone_erasures(handed: &[Handed], pkgs: &[Pkg]) -> Vec<String> {
    let pkg = |nevra: &str| {
        pkgs.iter()
            .find(|p| plain_nevra(&p.nevra) == plain_nevra(nevra))
    };
    handed
        .iter()
        .filter_map(|h| match h {
            Handed::Erase(n) => Some(n),
            _ => None,
        })
        .filter(|n| {
            let name = name_of(n);
            !handed.iter().any(|h| match h {
                Handed::Upgrade(u) => {
                    name_of(u) == name
                        || pkg(u).is_some_and(|p| p.obsoletes.iter().any(|o| o == name))
                }
                Handed::Reinstall(r) => name_of(r) == name,
                _ => false,
            })
        })
        .map(|n| plain_nevra(n))
        .collect()
}

/// The plan of the transaction as the resolver hands it to rpm
/// (`handed`, see [`TxOptions::handed`]): rpm's Python bindings add its
/// elements in that order, the packages as install or upgrade elements,
/// the erasures as elements of their own. `-U`, already run, checked the
/// transaction; `-i` checks the install-only packages (`beside`) against
/// the installed ones.
fn handed_plan(
    rpm: &Rpm,
    packages: &[PathBuf],
    pkgs: &[Pkg],
    handed: &[Handed],
    beside: &[usize],
    check: Check,
) -> Result<cowkit_rpmdb::Plan> {
    if !beside.is_empty() {
        check_beside(rpm, packages, beside, check)?;
    }
    let at = |nevra: &str| {
        pkgs.iter()
            .position(|p| plain_nevra(&p.nevra) == plain_nevra(nevra))
    };
    let mut elements = Vec::new();
    let mut problems = Vec::new();
    for h in handed {
        let e = match h {
            Handed::Install(n) | Handed::Upgrade(n) => match at(n) {
                Some(i) if matches!(h, Handed::Install(_)) => {
                    cowkit_rpmdb::Element::Install(packages[i].clone())
                }
                Some(i) => cowkit_rpmdb::Element::Upgrade(packages[i].clone()),
                None => {
                    problems.push(format!("{n}: the resolver hands it to rpm, and it is not among the transaction's packages"));
                    continue;
                }
            },
            Handed::Reinstall(n) => {
                problems.push(format!(
                    "{n}: a reinstall beside erasures of their own, which cowkit does not order"
                ));
                continue;
            }
            Handed::Erase(n) => cowkit_rpmdb::Element::Erase(n.clone()),
        };
        elements.push(e);
    }
    for (i, p) in pkgs.iter().enumerate() {
        if !handed.iter().any(|h| match h {
            Handed::Install(n) | Handed::Upgrade(n) => plain_nevra(n) == plain_nevra(&p.nevra),
            _ => false,
        }) {
            problems.push(format!(
                "{}: a package of the transaction the resolver does not hand to rpm",
                pkgs[i].nevra
            ));
        }
    }
    if !problems.is_empty() {
        return Err(Error::WouldErase { problems });
    }
    Ok(rpm.order_elements(&elements)?)
}

/// The database the triggers see (empty for a new root) and the erased
/// packages with their instances, marked erased in it.
fn database(
    rpm: &Rpm,
    pkgs: &[Pkg],
    erased: Vec<(String, Installed, usize, bool)>,
    fresh: bool,
) -> Result<(Db, Vec<Erased>)> {
    let mut db = if fresh {
        Db::default()
    } else {
        crate::load::database(rpm, pkgs, &erased)?
    };
    let mut out = Vec::new();
    for (nevra, installed, by, tied) in erased {
        // An erasure the database does not list would run none of its
        // scriptlets and triggers: refused, never skipped.
        let inst = db.instance_of(&nevra).ok_or_else(|| {
            Error::Db(cowkit_rpmdb::Error::Answer {
                what: "-qa (instances)",
                why: format!("rpm plans to erase `{nevra}`, which it does not list as installed"),
            })
        })?;
        db.erasing(inst);
        out.push(Erased {
            installed,
            inst,
            by,
            tied,
        });
    }
    Ok((db, out))
}

/// The installed packages rpm's plan erases (`erase`, NEVRAs), each with
/// the new package that replaces it (same name) or obsoletes it, and
/// whether its erasure depends on that package (not one of `alone`, the
/// erasures the resolver adds on their own). One that no new package
/// accounts for is refused.
fn erasures(
    rpm: &Rpm,
    pkgs: &[Pkg],
    erase: &[String],
    mut instances: Vec<Installed>,
    alone: &[String],
) -> Result<Vec<(String, Installed, usize, bool)>> {
    let missing: Vec<&str> = erase
        .iter()
        .filter(|n| !instances.iter().any(|i| &i.nevra == *n))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        instances.extend(rpm.installed(&missing)?);
    }
    let arch = |nevra: &str| nevra.rsplit_once('.').map(|(_, a)| a.to_string());
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for nevra in erase {
        let Some(o) = instances.iter().find(|i| &i.nevra == nevra) else {
            problems.push(format!(
                "{nevra} (installed): rpm erases it, and its header could not be read"
            ));
            continue;
        };
        // The same package reinstalled, else the same name and arch (one
        // of a multilib pair), else the same name, else what obsoletes it.
        let by = pkgs
            .iter()
            .position(|p| p.nevra == o.nevra)
            .or_else(|| {
                pkgs.iter()
                    .position(|p| p.name == o.name && arch(&p.nevra) == arch(&o.nevra))
            })
            .or_else(|| pkgs.iter().position(|p| p.name == o.name))
            .or_else(|| {
                pkgs.iter()
                    .position(|p| p.obsoletes.iter().any(|n| n == &o.name))
            });
        match by {
            Some(by) => out.push((
                nevra.clone(),
                o.clone(),
                by,
                !alone.contains(&plain_nevra(nevra)),
            )),
            None => problems.push(format!(
                "{nevra} (installed): rpm erases it, and no package of the transaction replaces or obsoletes it by name"
            )),
        }
    }
    if !problems.is_empty() {
        return Err(Error::WouldErase { problems });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erasures_of_their_own_are_those_no_upgrade_or_reinstall_replaces() {
        assert_eq!(plain_nevra("a-0:1-1.noarch"), "a-1-1.noarch");
        assert_eq!(plain_nevra("a-b-1:1-1.noarch"), "a-b-1:1-1.noarch");
        assert_eq!(name_of("procps-ng-4.0.4-1.fc40.noarch"), "procps-ng");
        // dnf5's upgrade of the Fedora-shaped repository: procps-ng
        // obsoletes procps (an install element), zlib is upgraded, bash
        // reinstalled (its installed copy listed as erased).
        let handed = [
            Handed::Install("procps-ng-4.0.4-1.fc40.noarch".into()),
            Handed::Upgrade("zlib-1.3.1-1.fc40.noarch".into()),
            Handed::Reinstall("bash-5.2.26-1.fc40.x86_64".into()),
            Handed::Erase("zlib-1.2.13-1.fc40.noarch".into()),
            Handed::Erase("procps-0:3.2.8-1.fc40.noarch".into()),
            Handed::Erase("bash-5.2.26-1.fc40.x86_64".into()),
        ];
        assert_eq!(alone_erasures(&handed, &[]), ["procps-3.2.8-1.fc40.noarch"]);
        assert!(alone_erasures(&handed[1..4], &[]).is_empty());
        assert!(alone_erasures(&[], &[]).is_empty());
    }
}
