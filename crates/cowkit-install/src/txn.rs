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
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use cowkit_archive::files::FileList;
use cowkit_fs::root::Root;
use cowkit_fs::IoError;
use cowkit_rpmdb::{Check, DbPath, Installed, Rpm};
use rpm::IndexTag;
use serde::Serialize;

use crate::refuse;
use crate::scripts::{Phase, Scriptlet};
use crate::{install, Error, Options, Owners, Progress, Result, Summary};

use crate::config::{decide_config, remove_old_files, unlink, Others, CONFIG};

/// Transaction settings.
#[derive(Clone, Debug, Default)]
pub struct TxOptions {
    /// How each package's files are placed (`threads` is per package).
    pub install: Options,
    /// Packages placed at once where no scriptlet orders them.
    pub jobs: usize,
    /// Register in the rpm database (`--no-db` turns it off).
    pub db: bool,
    /// The database path inside the root (`--dbpath`); otherwise found by
    /// [`cowkit_rpmdb::locate`].
    pub dbpath: Option<String>,
    /// Do not check dependencies.
    pub nodeps: bool,
    /// Let files replace other packages' files.
    pub replacefiles: bool,
    /// Run no scriptlets.
    pub noscripts: bool,
    /// Check and plan only.
    pub test: bool,
    /// Send scriptlets' stdout to stderr.
    pub script_stdout_to_stderr: bool,
    /// Wait for rpm's check of a new root's transaction before placing
    /// any file, instead of placing the files of new directories (unseen)
    /// while it runs.
    pub no_overlap: bool,
    /// What to do with an install-only package (a kernel) whose older
    /// version is installed.
    pub install_only: InstallOnly,
    /// Let scriptlets' sync calls reach the kernel. Otherwise, in a root
    /// that is not `/`, they are answered without running and the root's
    /// filesystems get one `syncfs` at the end ([`crate::nosync`]).
    pub keep_syncs: bool,
}

/// What a transaction does with a new version of an install-only package
/// (one that provides an entry of dnf's default `installonlypkgs`, such as
/// `installonlypkg(kernel)`) when an older version is installed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InstallOnly {
    /// Refuse the transaction ([`Error::InstallOnly`]): `rpm -U` would
    /// erase the old version, dnf would keep it.
    #[default]
    Refuse,
    /// Install it beside the old versions, as dnf asks rpm to (`rpm -i`).
    /// Only for a transaction that upgrades nothing else: one rpm
    /// transaction is `-i` or `-U` for all its packages.
    Beside,
}

/// What happened to a config file.
#[derive(Clone, Debug, Serialize)]
pub struct ConfigNote {
    /// The file.
    pub path: String,
    /// `rpmnew` (the new version was written beside the edited one),
    /// `rpmsave` (the edited one was saved, the new one installed),
    /// `rpmorig` (an unowned file was saved), `kept` (edited, and the new
    /// version brings no change).
    pub action: &'static str,
}

/// A package that failed.
#[derive(Clone, Debug, Serialize)]
pub struct PackageFailure {
    /// The package file.
    pub package: PathBuf,
    /// Its NEVRA.
    pub nevra: String,
    /// The error and its causes.
    pub error: Vec<String>,
    /// Files of it that had been placed under their names when it failed
    /// and are still there (they stay, as with rpm; those in the new
    /// directories it was building are removed with them).
    pub placed_files: u64,
}

/// Where a transaction's time went, in seconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Timings {
    /// Reading the headers and rpm's check and order. For a new root
    /// whose packages have no scriptlets, rpm's check runs during `place`
    /// instead (files of new directories are placed unseen meanwhile), and
    /// this is the time to start it.
    pub check: f64,
    /// Waiting after `place` for a check that ran beside it.
    pub check_wait: f64,
    /// Placing files (and removing old versions' files).
    pub place: f64,
    /// Running scriptlets.
    pub scriptlets: f64,
    /// Registering in the database.
    pub register: f64,
    /// The final `syncfs` of the root's filesystems, after scriptlets ran
    /// without sync calls ([`crate::nosync`]).
    pub final_sync: f64,
}

/// What a transaction did.
#[derive(Debug, Default, Serialize)]
pub struct TxSummary {
    /// Where the time went.
    pub seconds: Timings,
    /// Files placed (all packages).
    #[serde(flatten)]
    pub files: Summary,
    /// The database, when registering.
    pub db: Option<DbPath>,
    /// rpm's order of the transaction (NEVRAs).
    pub order: Vec<String>,
    /// Packages placed.
    pub installed: Vec<String>,
    /// Upgrades: (old NEVRA, new NEVRA).
    pub upgraded: Vec<(String, String)>,
    /// Install-only packages installed beside their installed versions
    /// ([`InstallOnly::Beside`]): (new NEVRA, the versions kept).
    pub installed_beside: Vec<(String, Vec<String>)>,
    /// Packages registered in the database.
    pub registered: u64,
    /// Scriptlets run.
    pub scriptlets: u64,
    /// Scriptlets that failed without stopping their package (`%post`,
    /// `%postun`, `%posttrans`), as "package %phase: status".
    pub scriptlet_warnings: Vec<String>,
    /// Files of old versions removed.
    pub old_files_removed: u64,
    /// Config files that were not simply replaced.
    pub config: Vec<ConfigNote>,
    /// Packages that failed.
    pub failed: Vec<PackageFailure>,
    /// Only checked and planned (`--test`).
    pub test: bool,
    /// Scriptlets ran without sync calls ([`crate::nosync`]).
    pub nosync: Option<crate::nosync::NosyncSummary>,
}

/// A package of the transaction, from its verified header.
pub(crate) struct Pkg {
    path: PathBuf,
    /// rpm's `%{SHA256HEADER}`, verified.
    digest: String,
    pub(crate) name: String,
    pub(crate) nevra: String,
    /// What it provides (names only).
    pub(crate) provides: Vec<String>,
    pub(crate) scripts: Vec<Scriptlet>,
    pub(crate) triggers: Vec<&'static str>,
    pub(crate) files: FileList,
    /// rpm's file flags, by header index.
    pub(crate) flags: Vec<u32>,
    /// The extents file as read for the check, kept open for the install
    /// (which then does not parse its header again); taken once.
    opened: Mutex<Option<cowkit_extents::open::ExtentsFile>>,
}

/// Packages of a transaction whose extents files stay open from the check
/// to the install: each holds its header in memory until placed.
const KEEP_OPEN: usize = 16;

impl Pkg {
    /// Read the package at `path`; an extents file is kept open when
    /// `keep_open`.
    fn read(path: &Path, keep_open: bool) -> Result<Pkg> {
        let io = |op, e| Error::from(IoError::new(op, path.to_path_buf(), e));
        let file = std::fs::File::open(path).map_err(|e| io("open", e))?;
        let pkg = if cowkit_extents::open::is_extents_file(&file).map_err(|e| io("read", e))? {
            let x = cowkit_extents::open::ExtentsFile::open(file, path)?;
            let mut pkg = Self::from_package(path, x.package(), x.files().clone())?;
            if keep_open {
                pkg.opened = Mutex::new(Some(x));
            }
            pkg
        } else {
            crate::check_not_truncated_extents(&file, path)?;
            let p = cowkit_archive::rpm::Package::read(&mut BufReader::new(file))?;
            let files = p.files()?;
            Self::from_package(path, &p, files)?
        };
        Ok(pkg)
    }

    fn from_package(path: &Path, p: &cowkit_archive::rpm::Package, files: FileList) -> Result<Pkg> {
        let m = p.metadata();
        let h = &m.header;
        let bad = |why: String| {
            Error::Package(cowkit_archive::rpm::Error::Parse(format!(
                "{}: {why}",
                path.display()
            )))
        };
        let name = m.get_name().map_err(|e| bad(e.to_string()))?.to_string();
        let version = m.get_version().map_err(|e| bad(e.to_string()))?;
        let release = m.get_release().map_err(|e| bad(e.to_string()))?;
        let arch = m.get_arch().unwrap_or("noarch");
        let nevra = match h.get_entry_data_as_u32(IndexTag::RPMTAG_EPOCH) {
            Ok(e) => format!("{name}-{e}:{version}-{release}.{arch}"),
            Err(_) => format!("{name}-{version}-{release}.{arch}"),
        };
        let scripts = [Phase::PreTrans, Phase::Pre, Phase::Post, Phase::PostTrans]
            .into_iter()
            .filter_map(|ph| Scriptlet::of_header(h, ph))
            .collect();
        let mut triggers = Vec::new();
        for (tag, what) in [
            (IndexTag::RPMTAG_TRIGGERSCRIPTS, "%trigger"),
            (IndexTag::RPMTAG_FILETRIGGERSCRIPTS, "%filetrigger"),
            (
                IndexTag::RPMTAG_TRANSFILETRIGGERSCRIPTS,
                "%transfiletrigger",
            ),
        ] {
            if h.entry_is_present(tag) {
                triggers.push(what);
            }
        }
        let provides = h
            .get_entry_data_as_string_array(IndexTag::RPMTAG_PROVIDENAME)
            .map(|v| v.into_iter().map(str::to_string).collect())
            .unwrap_or_default();
        let flags = if h.entry_is_present(IndexTag::RPMTAG_FILEFLAGS) {
            h.get_entry_data_as_u32_array(IndexTag::RPMTAG_FILEFLAGS)
                .map_err(|e| bad(e.to_string()))?
        } else {
            Vec::new()
        };
        Ok(Pkg {
            path: path.to_path_buf(),
            digest: p.header_digest().to_string(),
            name,
            nevra,
            provides,
            scripts,
            triggers,
            files,
            flags,
            opened: Mutex::new(None),
        })
    }

    fn script(&self, phase: Phase) -> Option<&Scriptlet> {
        self.scripts.iter().find(|s| s.phase == phase)
    }
}

/// Install or upgrade `packages` in `root` as one transaction.
pub fn transaction(
    root: &Root,
    packages: &[PathBuf],
    opts: &TxOptions,
    progress: &dyn Progress,
) -> Result<TxSummary> {
    prepare(root, packages, opts)?.run(progress)
}

/// A transaction checked by rpm and ordered, nothing touched yet.
pub struct Prepared<'r> {
    root: &'r Root,
    /// rpm's check still running (a new root's transaction); declared
    /// before `scratch`, so that it is waited for first when dropped.
    gate: Option<Overlap>,
    opts: TxOptions,
    pkgs: Vec<Pkg>,
    db: InDb,
    found: Option<DbPath>,
    /// A new root's database, the transaction registered in it already.
    scratch: Option<cowkit_rpmdb::Scratch<'r>>,
    sum: TxSummary,
    stager: Option<Stager>,
}

/// Turns a package into the file to install from, just before it is
/// placed (e.g. a plain `.rpm` transcoded by a confined worker into an
/// unnamed file in the root's filesystem); `None`: the package as it is.
/// The file is dropped once the package is placed, so at most one staged
/// copy per running job takes space.
pub type Stager = std::sync::Arc<dyn Fn(&Path) -> Result<Option<std::fs::File>> + Send + Sync>;

/// Install `p` through `stager`'s file for it, if any.
fn install_staged(
    root: &Root,
    owners: &Owners,
    p: &Pkg,
    opts: &Options,
    progress: &dyn Progress,
    stager: Option<&Stager>,
) -> Result<Summary> {
    let path = p.path.as_path();
    let opened = p.opened.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(x) = opened {
        return crate::install_extents(root, owners, &x, path, opts, progress);
    }
    let staged = match stager {
        Some(s) => s(path)?,
        None => None,
    };
    match &staged {
        Some(f) => {
            let via = PathBuf::from(format!(
                "/proc/self/fd/{}",
                std::os::fd::AsRawFd::as_raw_fd(f)
            ));
            install(root, owners, &via, opts, progress)
        }
        None => install(root, owners, path, opts, progress),
    }
}

impl std::fmt::Debug for Prepared<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("order", &self.sum.order)
            .finish_non_exhaustive()
    }
}

impl Prepared<'_> {
    /// rpm's order (NEVRAs).
    pub fn order(&self) -> &[String] {
        &self.sum.order
    }

    /// Install each package from another file with the same header (the
    /// extents file of a checked `.rpm`): `path_of` gives the file for a
    /// package's path. Each is checked when it is opened for installing:
    /// one whose header digest is not the checked package's is refused
    /// ([`Error::NotTheCheckedPackage`]).
    pub fn use_files(&mut self, mut path_of: impl FnMut(&Path) -> PathBuf) {
        for p in &mut self.pkgs {
            p.path = path_of(&p.path);
            *p.opened.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// Stage each package through `stager` just before it is placed.
    pub fn stage_with(&mut self, stager: Stager) {
        self.stager = Some(stager);
    }

    /// Run it: scriptlets, files, registration (see the module docs).
    pub fn run(self, progress: &dyn Progress) -> Result<TxSummary> {
        let scripts = !self.opts.noscripts
            && !self.opts.test
            && (self.pkgs.iter().any(|p| !p.scripts.is_empty())
                || self
                    .db
                    .old
                    .values()
                    .any(|o| o.preun.is_some() || o.postun.is_some()));
        let path = self.root.path();
        let session = crate::nosync::start(path, self.opts.keep_syncs, scripts)?;
        let result = run(self, progress, session.as_ref());
        crate::nosync::finish(session, result)
    }
}

/// Read and check `packages` for a transaction in `root`: headers, rpm's
/// check and order, what cannot run. Nothing in the root is changed.
pub fn prepare<'r>(root: &'r Root, packages: &[PathBuf], opts: &TxOptions) -> Result<Prepared<'r>> {
    // Scriptlets run chrooted into the root, and rpm is handed it: rpm
    // refuses a relative `--root`, and so does cowkit, before anything
    // (only placing files does not need it absolute).
    if !root.path().is_absolute() && (opts.db || !opts.noscripts) {
        return Err(Error::RelativeRoot {
            path: root.path().to_path_buf(),
        });
    }
    let mut sum = TxSummary {
        test: opts.test,
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
    // A new root's database is built aside: rpm checks the transaction
    // and registers it in one call (nothing else reads that database),
    // and it is moved into place once the files are (see `run`).
    // What killed runs left in the root's /var/tmp: scratch databases
    // (`Scratch::new` removes them too) and scriptlet bodies.
    if !opts.test {
        cowkit_rpmdb::sweep_scratch(root)?;
        crate::scripts::sweep(root)?;
    }
    let scratch = match (&found, opts.db) {
        (None, true) => Some(cowkit_rpmdb::Scratch::new(root)?),
        _ => None,
    };
    let pre_register = scratch.is_some() && !opts.test;
    let check = Check {
        nodeps: opts.nodeps,
        replacefiles: opts.replacefiles,
        install: false,
    };
    // rpm's check and registration into a scratch database needs nothing
    // from the headers: it runs while they are read (waited for if
    // anything below fails, before the scratch database goes).
    let early = match (&scratch, pre_register) {
        (Some(s), true) => {
            Some(Rpm::new(root.path(), s.db()).start_check_and_register(packages, &check)?)
        }
        _ => None,
    };
    // Declared after `scratch`: dropped (waiting for rpm) before it.
    let gate: Option<Overlap>;
    let pkgs = packages
        .iter()
        .map(|p| Pkg::read(p, packages.len() <= KEEP_OPEN))
        .collect::<Result<Vec<_>>>()?;
    let mut seen: HashMap<&str, &Path> = HashMap::new();
    for p in &pkgs {
        if let Some(first) = seen.insert(&p.nevra, &p.path) {
            return Err(Error::Duplicate {
                nevra: p.nevra.clone(),
                first: first.to_path_buf(),
                second: p.path.clone(),
            });
        }
    }
    let checked = if opts.db {
        let db = found
            .as_ref()
            .or(scratch.as_ref().map(|s| s.db()))
            .expect("one of them");
        let fresh = scratch.is_some();
        let c = check_in_db(
            &Rpm::new(root.path(), db),
            packages,
            &pkgs,
            opts,
            fresh,
            early,
        )?;
        gate = c.gate;
        c.db
    } else {
        gate = None;
        if !opts.noscripts {
            refuse::unsupported(&pkgs, &[], None)?;
        }
        InDb {
            order: (0..pkgs.len()).collect(),
            ..InDb::default()
        }
    };
    sum.db = found.clone();
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
    })
}

/// What the database says about a transaction's packages.
#[derive(Default)]
struct InDb {
    /// rpm's order (indices of the packages).
    order: Vec<usize>,
    /// The installed version each upgraded package replaces, by name.
    old: HashMap<String, Installed>,
    /// Installed instances of each name of the transaction.
    counts: HashMap<String, u32>,
    /// Install-only packages go beside their installed versions: the
    /// transaction is rpm's `-i` ([`InstallOnly::Beside`]).
    beside: bool,
    /// Then the installed versions kept, by name.
    kept: HashMap<String, Vec<String>>,
}

/// [`InDb`], and rpm's check still running beside the placement.
struct Checked {
    db: InDb,
    gate: Option<Overlap>,
}

/// rpm's check and order of the transaction in `rpm`'s database (`fresh`:
/// a new root's scratch database, empty, whose check `early` started),
/// and the refusals that need the installed packages.
fn check_in_db(
    rpm: &Rpm,
    packages: &[PathBuf],
    pkgs: &[Pkg],
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
    let beside = refuse::install_beside(pkgs, &instances, opts.install_only)?;
    let mut counts: HashMap<String, u32> = HashMap::new();
    let mut kept: HashMap<String, Vec<String>> = HashMap::new();
    for i in &instances {
        *counts.entry(i.name.clone()).or_default() += 1;
        if beside {
            kept.entry(i.name.clone())
                .or_default()
                .push(i.nevra.clone());
        }
    }
    // `rpm -U` erases every installed instance of an upgraded name.
    let erased: Vec<&Installed> = if beside {
        Vec::new()
    } else {
        instances.iter().collect()
    };
    let pairs: Vec<(String, String)> = instances
        .iter()
        .map(|i| (i.nevra.clone(), i.name.clone()))
        .collect();
    let old: HashMap<String, Installed> = erased
        .iter()
        .map(|i| (i.name.clone(), (*i).clone()))
        .collect();
    let nevras: Vec<String> = pkgs.iter().map(|p| p.nevra.clone()).collect();
    let replaced: Vec<String> = old.values().map(|o| o.nevra.clone()).collect();
    let check = Check {
        nodeps: opts.nodeps,
        replacefiles: opts.replacefiles,
        install: beside,
    };
    // A new root, and packages with no scriptlet to run: their files can
    // be placed while rpm checks (new directories unseen until it
    // passes), since nothing in between depends on rpm's order.
    let overlap = early.is_some()
        && !opts.no_overlap
        && (opts.noscripts || pkgs.iter().all(|p| p.scripts.is_empty()));
    if !opts.noscripts {
        // In a scratch database the only triggers are the new packages'
        // own, which their headers give.
        refuse::unsupported(pkgs, &erased, (!fresh).then_some(rpm))?;
    }
    let mut gate = None;
    let order = match early {
        Some(pending) if overlap => {
            let slot: OrderSlot = Default::default();
            let answer = std::sync::Arc::clone(&slot);
            gate = Some(Overlap {
                gate: crate::Gate::new(move || {
                    let order = refuse::plan_order(&pending.wait()?, &nevras, &replaced, &pairs)?;
                    *answer.lock().unwrap_or_else(|e| e.into_inner()) = Some(order);
                    Ok(())
                }),
                slot,
            });
            (0..pkgs.len()).collect()
        }
        Some(pending) => refuse::plan_order(&pending.wait()?, &nevras, &replaced, &pairs)?,
        None => refuse::plan_order(&rpm.check(packages, &check)?, &nevras, &replaced, &pairs)?,
    };
    Ok(Checked {
        db: InDb {
            order,
            old,
            counts,
            beside,
            kept,
        },
        gate,
    })
}

/// Where a check running in the background leaves rpm's order.
type OrderSlot = std::sync::Arc<Mutex<Option<Vec<usize>>>>;

/// rpm's check of a new root's transaction, running while its files are
/// placed ([`crate::Gate`]), and where it leaves its order. Dropped, it
/// waits for rpm (the gate holds the [`cowkit_rpmdb::PendingCheck`]): the
/// scratch database must not be removed under it.
struct Overlap {
    gate: crate::Gate,
    slot: OrderSlot,
}

fn run(
    prepared: Prepared<'_>,
    progress: &dyn Progress,
    nosync: Option<&cowkit_nosync::scoped::Session>,
) -> Result<TxSummary> {
    let Prepared {
        root,
        opts,
        pkgs,
        db:
            InDb {
                order,
                old,
                counts,
                beside,
                kept,
            },
        found,
        mut scratch,
        mut sum,
        stager,
        gate,
    } = prepared;
    let stager = stager.as_ref();
    let mut opts = opts;
    opts.install.gate = gate.as_ref().map(|o| o.gate.clone());
    let opts = &opts;
    if opts.test {
        for &i in &order {
            if let Some(o) = old.get(&pkgs[i].name) {
                sum.upgraded.push((o.nevra.clone(), pkgs[i].nevra.clone()));
            }
        }
        return Ok(sum);
    }

    let run = |s: &Scriptlet, p: &Pkg, arg: u32, sum: &mut TxSummary| -> Result<bool> {
        if opts.noscripts {
            return Ok(true);
        }
        sum.scriptlets += 1;
        let t = std::time::Instant::now();
        let r = s.run(root, arg, opts.script_stdout_to_stderr, nosync);
        sum.seconds.scriptlets += t.elapsed().as_secs_f64();
        match r? {
            None => Ok(true),
            Some(status) if s.phase.critical() => Err(Error::ScriptFailed {
                package: p.nevra.clone(),
                phase: s.phase.name(),
                status,
            }),
            Some(status) => {
                sum.scriptlet_warnings
                    .push(format!("{} {}: {status}", p.nevra, s.phase.name()));
                Ok(false)
            }
        }
    };
    // `$1`: the instances of the package's name once it is installed.
    let arg_of = |p: &Pkg| {
        counts
            .get(&p.name)
            .map_or(1, |n| if beside { n + 1 } else { 2 })
    };
    let fail = |sum: &mut TxSummary, p: &Pkg, e: Error, placed_files: u64| {
        sum.failed.push(PackageFailure {
            package: p.path.clone(),
            nevra: p.nevra.clone(),
            error: cowkit_fs::error::chain(&e),
            placed_files,
        });
    };

    // 2. %pretrans.
    let mut alive: Vec<usize> = Vec::new();
    for &i in &order {
        let p = &pkgs[i];
        match p.script(Phase::PreTrans) {
            Some(s) => match run(s, p, arg_of(p), &mut sum) {
                Ok(_) => alive.push(i),
                Err(e) => fail(&mut sum, p, e, 0),
            },
            None => alive.push(i),
        }
    }

    // 3. Packages, in order; runs without scriptlets in parallel.
    let t_place = std::time::Instant::now();
    let scripts_before = sum.seconds.scriptlets;
    let check_rpm = found.as_ref().map(|db| Rpm::new(root.path(), db));
    let mut owners = Owners::load(root);
    let mut placed: Vec<usize> = Vec::new();
    let mut k = 0;
    while k < alive.len() {
        let quiet = |i: usize| {
            let p = &pkgs[i];
            !old.contains_key(&p.name)
                && (opts.noscripts
                    || (p.script(Phase::Pre).is_none() && p.script(Phase::Post).is_none()))
        };
        if quiet(alive[k]) {
            let mut end = k;
            while end < alive.len() && quiet(alive[end]) {
                end += 1;
            }
            let batch: Vec<&Pkg> = alive[k..end].iter().map(|&i| &pkgs[i]).collect();
            // Config files already on disk are decided first (cheap: only
            // config files are looked at); a package whose decision fails
            // fails alone.
            let mut decided: Vec<Result<Options>> = Vec::with_capacity(batch.len());
            for p in &batch {
                // Deciding may rename a config file already on disk: not
                // before the check passed.
                if let Some(g) = &opts.install.gate {
                    if p.flags.iter().any(|f| f & CONFIG != 0) {
                        if let Err(e) = g.pass() {
                            decided.push(Err(e));
                            continue;
                        }
                    }
                }
                let mut o = opts.install.clone();
                decided.push(decide_config(root, p, None, &mut o, &mut sum).map(|_| o));
            }
            let results =
                place_parallel(root, &owners, &batch, decided, opts.jobs, progress, stager);
            for (j, (r, n)) in results.into_iter().enumerate() {
                match r {
                    Ok(s) => {
                        sum.files.add(s);
                        sum.installed.push(batch[j].nevra.clone());
                        if let Some(kept) = kept.get(&batch[j].name) {
                            sum.installed_beside
                                .push((batch[j].nevra.clone(), kept.clone()));
                        }
                        placed.push(alive[k + j]);
                    }
                    Err(e) => fail(&mut sum, batch[j], e, n),
                }
            }
            k = end;
            continue;
        }
        let i = alive[k];
        k += 1;
        let p = &pkgs[i];
        let o = old.get(&p.name);
        let counting = crate::Counting {
            inner: progress,
            files: Default::default(),
        };
        match one_package(
            root,
            &mut owners,
            (p, arg_of(p)),
            o,
            opts,
            &counting,
            &run,
            &Others {
                pkgs: &pkgs,
                rpm: check_rpm.as_ref(),
            },
            &mut sum,
            stager,
        ) {
            Ok(s) => {
                sum.files.add(s);
                sum.installed.push(p.nevra.clone());
                if let Some(o) = o {
                    sum.upgraded.push((o.nevra.clone(), p.nevra.clone()));
                }
                if let Some(k) = kept.get(&p.name) {
                    sum.installed_beside.push((p.nevra.clone(), k.clone()));
                }
                placed.push(i);
            }
            Err(e) => fail(&mut sum, p, e, counting.files.into_inner()),
        }
    }
    for w in owners.warnings() {
        if !sum.files.warnings.contains(&w) {
            sum.files.warnings.push(w);
        }
    }
    sum.seconds.place = t_place.elapsed().as_secs_f64() - (sum.seconds.scriptlets - scripts_before);
    // The check that ran beside the placement: its error is the
    // transaction's (every package then took its new trees away).
    if let Some(o) = &gate {
        let t = std::time::Instant::now();
        if let Some(e) = o.gate.error() {
            return Err(e);
        }
        sum.seconds.check_wait = t.elapsed().as_secs_f64();
        if let Some(order) = o.slot.lock().unwrap_or_else(|e| e.into_inner()).take() {
            sum.order = order.iter().map(|&i| pkgs[i].nevra.clone()).collect();
        }
    }

    if let Some(s) = &mut scratch {
        s.keep_owned(|dir| placed.iter().any(|&i| pkgs[i].files.find(dir).is_some()));
    }

    // 4. One registration (none when nothing was placed).
    if opts.db && !placed.is_empty() {
        let t = std::time::Instant::now();
        let db = match found {
            Some(db) => db,
            None => cowkit_rpmdb::locate(root, opts.dbpath.as_deref())?,
        };
        let paths: Vec<PathBuf> = placed.iter().map(|&i| pkgs[i].path.clone()).collect();
        let moved = match &scratch {
            // Registered at the check: drop what was not placed, move it
            // into place.
            Some(scratch) => {
                let unplaced: Vec<String> = (0..pkgs.len())
                    .filter(|i| !placed.contains(i))
                    .map(|i| pkgs[i].nevra.clone())
                    .collect();
                let moved = Rpm::new(root.path(), scratch.db())
                    .unregister(&unplaced)
                    .and_then(|()| scratch.move_to(&db));
                match moved {
                    Ok(()) => true,
                    Err(e) => {
                        sum.files.warnings.push(format!(
                            "the database registered at the check could not be moved into place ({}); registering again",
                            cowkit_fs::error::chain(&e).join(": ")
                        ));
                        false
                    }
                }
            }
            None => false,
        };
        drop(scratch);
        if !moved {
            let how = Check {
                nodeps: true,
                replacefiles: opts.replacefiles,
                install: beside,
            };
            Rpm::new(root.path(), &db).register_as(&paths, &how)?;
        }
        sum.seconds.register = t.elapsed().as_secs_f64();
        sum.registered = paths.len() as u64;
        sum.db = Some(db);
    }

    // 5. %posttrans.
    for &i in &placed {
        let p = &pkgs[i];
        if let Some(s) = p.script(Phase::PostTrans) {
            run(s, p, arg_of(p), &mut sum)?;
        }
    }
    Ok(sum)
}

/// Place a run of packages without scriptlets, `opts.jobs` at a time.
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

#[allow(clippy::too_many_arguments)]
fn one_package(
    root: &Root,
    owners: &mut Owners,
    (p, arg): (&Pkg, u32),
    old: Option<&Installed>,
    opts: &TxOptions,
    progress: &dyn Progress,
    run: &dyn Fn(&Scriptlet, &Pkg, u32, &mut TxSummary) -> Result<bool>,
    others: &Others<'_>,
    sum: &mut TxSummary,
    stager: Option<&Stager>,
) -> Result<Summary> {
    if let Some(s) = p.script(Phase::Pre) {
        run(s, p, arg, sum)?;
        if !opts.noscripts {
            // A %pre may have added the users and groups that own the
            // files.
            *owners = Owners::load(root);
        }
    }
    let mut install_opts = opts.install.clone();
    install_opts.threads = install_opts.threads.max(opts.jobs);
    install_opts.expect_header = Some(p.digest.clone());
    let discard = decide_config(root, p, old, &mut install_opts, sum)?;
    let s_placed = install_staged(root, owners, p, &install_opts, progress, stager)?;
    for (dir, name, path) in discard {
        unlink(&dir, &name, &path)?;
    }
    if let Some(s) = p.script(Phase::Post) {
        run(s, p, arg, sum)?;
    }
    if let Some(o) = old {
        if let Some(s) = &o.preun {
            // rpm keeps the old version (files and entry) when its %preun
            // fails; cowkit has placed the new one already and registers
            // it over the old entry, so it keeps the old files and says so.
            if let Err(e) = run(&Scriptlet::of_installed(s, Phase::PreUn), p, 1, sum) {
                sum.scriptlet_warnings.push(format!(
                    "{}: {e}; its files that {} does not have were left in place",
                    o.nevra, p.nevra
                ));
                return Ok(s_placed);
            }
        }
        sum.old_files_removed += remove_old_files(root, p, o, others, sum)?;
        if let Some(s) = &o.postun {
            run(&Scriptlet::of_installed(s, Phase::PostUn), p, 1, sum)?;
        }
    }
    Ok(s_placed)
}
