//! The transaction's types, below both the steps that check it
//! ([`crate::txn`]) and the one that runs it ([`crate::runner`]): its
//! options, a prepared transaction (checked by rpm and ordered, nothing
//! touched yet), what it did, and its one registration in the database.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use cowkit_fs::root::Root;
use cowkit_rpmdb::{Check, DbPath, Rpm};
use serde::Serialize;

use crate::elem::{Elem, Erased};
use crate::pkg::Pkg;
use crate::plan::Db;
use crate::{install, Options, Owners, Progress, Result, Summary};

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
    /// Allow downgrades: a package older than the installed version of
    /// its name replaces it (rpm's `--oldpackage`).
    pub oldpackage: bool,
    /// Allow a package whose NEVRA is installed: it replaces the installed
    /// one (rpm's `--replacepkgs`).
    pub replacepkgs: bool,
    /// Reinstall: each package replaces the installed package of the same
    /// NEVRA, and only that one (rpm's `--reinstall`).
    pub reinstall: bool,
    /// Only register the packages: no file is placed or removed and no
    /// scriptlet or trigger runs (rpm's `--justdb`).
    pub justdb: bool,
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
    /// Let scriptlets' sync calls (and those of rpm's registration into a
    /// new root's database) reach the kernel. Otherwise, in a root that is
    /// not `/`, they are answered without running and the root's
    /// filesystems get one `syncfs` at the end ([`crate::nosync`]).
    pub keep_syncs: bool,
    /// Starts rpm's Lua for `<lua>` scriptlets (the CLI's
    /// `cowkit_rpmlua::LuaHost`); without it they are refused up front.
    pub lua: Option<LuaStarter>,
    /// Which files are installed: docs, languages, excluded and net
    /// shared paths, colours ([`crate::fate::Policy`]).
    pub files: crate::fate::Policy,
    /// The elements as the resolver hands them to rpm, in its order (dnf5:
    /// each package as an install or upgrade element, each installed
    /// package it erases as an erasure of its own). Where it erases a
    /// package that no upgrade element replaces or obsoletes (dnf5's
    /// erasure of what a newly installed package `Obsoletes`), rpm orders
    /// and runs that erasure as one depending on nothing, and so does
    /// cowkit; otherwise (and when empty) the transaction is `rpm -U`'s.
    pub handed: Vec<Handed>,
}

/// One element of the transaction as the resolver hands it to rpm
/// ([`TxOptions::handed`]), by NEVRA.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Handed {
    /// A package of the transaction as an install element
    /// (`rpmtsAddInstallElement` with `upgrade` 0).
    Install(String),
    /// A package of the transaction as an upgrade element (upgrades and
    /// downgrades: `upgrade` 1).
    Upgrade(String),
    /// A package of the transaction as a reinstall element.
    Reinstall(String),
    /// An installed package as an erasure of its own
    /// (`rpmtsAddEraseElement`).
    Erase(String),
}

/// Starts rpm's Lua for a transaction's `<lua>` scriptlets, chrooted into
/// the given root (scriptlets' stdout to stderr when asked).
#[derive(Clone)]
pub struct LuaStarter(pub std::sync::Arc<StartLua>);

/// The function behind a [`LuaStarter`]: root, scriptlets' stdout to
/// stderr, and what to do to the host's command before it is spawned
/// (the transaction's nosync session).
pub type StartLua = dyn Fn(&Path, bool, &dyn Fn(&mut std::process::Command)) -> Result<Box<dyn crate::scripts::Lua>>
    + Send
    + Sync;

impl std::fmt::Debug for LuaStarter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LuaStarter")
    }
}

/// What a transaction does with a new version of an install-only package
/// (one that provides an entry of dnf's default `installonlypkgs`, such as
/// `installonlypkg(kernel)`) when an older version is installed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InstallOnly {
    /// Refuse the transaction ([`crate::Error::InstallOnly`]): `rpm -U` would
    /// erase the old version, dnf would keep it.
    #[default]
    Refuse,
    /// Install it beside the old versions, as dnf asks rpm to (`rpm -i`).
    /// Only for a transaction that upgrades nothing else: one rpm
    /// transaction is `-i` or `-U` for all its packages.
    Beside,
    /// Every package is installed beside the installed versions of its
    /// name, none is upgraded, as `rpm -i` does: the whole transaction is
    /// rpm's `-i` (two versions of one name given together are both
    /// installed).
    Every,
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

/// An installed package whose erasure failed: its `%preun` (or, under rpm
/// 4.20, its `%preuntrans`) failed. rpm keeps it, files and database
/// entry, beside the package that was to replace it, and counts the
/// element failed.
#[derive(Clone, Debug, Serialize)]
pub struct EraseFailure {
    /// Its NEVRA.
    pub nevra: String,
    /// rpm's word for what happened to it: `erase failed` (its `%preun`
    /// failed) or `erase skipped` (its `%preuntrans` did).
    pub outcome: &'static str,
    /// The error and its causes.
    pub error: Vec<String>,
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
    /// Other installed packages erased: (NEVRA, the new package that
    /// obsoletes or replaces it).
    pub erased: Vec<(String, String)>,
    /// The scriptlets and triggers the transaction runs, in order, with
    /// their arguments and file lists (`--test` only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<crate::plan::PlanEntry>,
    /// Every file's action, element by element (`--test` only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub files_plan: Vec<FileAction>,
    /// Install-only packages installed beside their installed versions
    /// ([`InstallOnly::Beside`]): (new NEVRA, the versions kept).
    pub installed_beside: Vec<(String, Vec<String>)>,
    /// Packages given that rpm left out of the transaction, in rpm's
    /// words (`package A was already added, skipping B`: an older version
    /// of a name given twice, the same package again, a package another
    /// one obsoletes). They are not installed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dropped: Vec<String>,
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
    /// Files of the placed packages not installed, as rpm records them
    /// (docs, languages, excluded or net shared paths, another colour).
    pub not_installed: u64,
    /// Packages that failed.
    pub failed: Vec<PackageFailure>,
    /// Installed packages whose erasure failed (kept, as rpm keeps them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub erase_failed: Vec<EraseFailure>,
    /// Only checked and planned (`--test`).
    pub test: bool,
    /// Scriptlets ran without sync calls ([`crate::nosync`]).
    pub nosync: Option<crate::nosync::NosyncSummary>,
    /// An interrupted transaction found on the root (its journal) and
    /// what was done about it before this one ([`crate::recover`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovered: Option<Recovery>,
}

/// A transaction checked by rpm and ordered, nothing touched yet.
pub struct Prepared<'r> {
    pub(crate) root: &'r Root,
    /// rpm's check still running (a new root's transaction); declared
    /// before `scratch`, so that it is waited for first when dropped.
    pub(crate) gate: Option<Overlap>,
    pub(crate) opts: TxOptions,
    pub(crate) pkgs: Vec<Pkg>,
    pub(crate) db: InDb,
    pub(crate) found: Option<DbPath>,
    /// A new root's database, the transaction registered in it already.
    pub(crate) scratch: Option<cowkit_rpmdb::Scratch<'r>>,
    pub(crate) sum: TxSummary,
    pub(crate) stager: Option<Stager>,
    /// What the transaction runs when nothing fails (empty without
    /// scriptlets).
    pub(crate) plan: Vec<crate::plan::PlanEntry>,
    /// Every file's action.
    pub(crate) fates: crate::fate::Fates,
    /// What holds the package files given to [`crate::prepare`] (see
    /// [`Prepared::release_before_final_sync`]).
    pub(crate) inputs: Option<Box<dyn Send>>,
    /// The nosync session a new root's check started (see
    /// [`crate::nosync`]); the transaction goes on in it. Declared last:
    /// dropped after the check it answers for.
    pub(crate) nosync: Option<cowkit_nosync::scoped::Session>,
}

/// Turns a package into the file to install from, just before it is
/// placed (e.g. a plain `.rpm` transcoded by a confined worker into an
/// unnamed file in the root's filesystem); `None`: the package as it is.
/// The file is dropped once the package is placed, so at most one staged
/// copy per running job takes space.
pub type Stager = std::sync::Arc<dyn Fn(&Path) -> Result<Option<std::fs::File>> + Send + Sync>;

/// Install `p` through `stager`'s file for it, if any.
pub(crate) fn install_staged(
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
    match staged {
        // Through the staged file's own descriptor, from its start (the
        // stager wrote it through the same open file); messages name the
        // package it was made from.
        Some(mut f) => {
            std::io::Seek::rewind(&mut f).map_err(|source| {
                crate::Error::from(cowkit_fs::IoError::new("read", path.to_path_buf(), source))
            })?;
            crate::install_file(root, owners, f, path, opts, progress)
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
    /// ([`crate::Error::NotTheCheckedPackage`]).
    pub fn use_files(&mut self, mut path_of: impl FnMut(&Path) -> PathBuf) {
        for p in &mut self.pkgs {
            p.path = path_of(&p.path);
            *p.opened.get_mut().unwrap_or_else(|e| e.into_inner()) = None;
        }
    }

    /// Drop `inputs` (e.g. the directory of the package files given to
    /// [`crate::prepare`], once [`Prepared::use_files`] named others) as soon as
    /// the transaction no longer reads them: after rpm's check and the
    /// registration, before the final `syncfs` of the root's filesystems,
    /// which would otherwise write back their dirty pages first.
    pub fn release_before_final_sync(&mut self, inputs: Box<dyn Send>) {
        self.inputs = Some(inputs);
    }

    /// Stage each package through `stager` just before it is placed.
    pub fn stage_with(&mut self, stager: Stager) {
        self.stager = Some(stager);
    }
}

/// rpm's check (and registration) of a transaction with `opts`:
/// `install` for rpm's `-i` (install-only packages beside their installed
/// versions), else `-U`, or `--reinstall`.
pub(crate) fn rpm_check(opts: &TxOptions, install: bool) -> Check {
    Check {
        nodeps: opts.nodeps,
        replacefiles: opts.replacefiles,
        install,
        oldpackage: opts.oldpackage,
        replacepkgs: opts.replacepkgs,
        reinstall: opts.reinstall && !install,
        freshen: false,
    }
}

/// The options that tell rpm's check and registration the same file
/// policy cowkit follows.
pub(crate) fn file_args(p: &crate::fate::Policy) -> Vec<std::ffi::OsString> {
    let mut v: Vec<std::ffi::OsString> = Vec::new();
    if p.nodocs {
        v.push("--excludedocs".into());
    }
    for x in &p.exclude {
        v.push("--excludepath".into());
        v.push(x.into());
    }
    v.push("--define".into());
    v.push(
        match &p.langs {
            Some(l) => format!("_install_langs {}", l.join(":")),
            None => "_install_langs all".to_string(),
        }
        .into(),
    );
    if !p.netshared.is_empty() {
        v.push("--define".into());
        v.push(format!("_netsharedpath {}", p.netshared.join(":")).into());
    }
    for (n, val) in &p.defines {
        v.push("--define".into());
        v.push(format!("{n} {val}").into());
    }
    v
}

/// One file's action in the printed plan.
#[derive(Clone, Debug, Serialize)]
pub struct FileAction {
    /// The element (NEVRA) it belongs to.
    pub element: String,
    /// The file.
    pub path: String,
    /// rpm's action for it.
    pub action: crate::action::Action,
}

/// What the database says about a transaction's packages.
#[derive(Default)]
pub(crate) struct InDb {
    /// rpm's order of the installs (indices of the packages).
    pub(crate) order: Vec<usize>,
    /// Installs and erasures, in rpm's order.
    pub(crate) elements: Vec<Elem>,
    /// The installed packages the transaction erases.
    pub(crate) erased: Vec<Erased>,
    /// The database before the transaction, as far as its triggers need.
    pub(crate) db: Db,
    /// Install-only packages that go beside their installed versions
    /// ([`InstallOnly::Beside`]): registered with rpm's `-i`.
    pub(crate) beside: Vec<usize>,
    /// Then the installed versions kept, by name.
    pub(crate) kept: HashMap<String, Vec<String>>,
    /// What rpm said of the packages it left out ([`cowkit_rpmdb::Plan::dropped`]).
    pub(crate) dropped: Vec<String>,
    /// The packages in the order rpm's transaction set holds them (the
    /// order given, a replacing package in the replaced one's place): the
    /// registration gives them to rpm in this order, so that rpm orders
    /// them as its check did.
    pub(crate) added: Vec<usize>,
    /// The rpm that registers the transaction is rpm 4.20: the erased
    /// packages' `%preuntrans` and `%postuntrans` run, and file triggers
    /// run as rpm 4.20 runs them (`db` knows it too).
    pub(crate) rpm420: bool,
}

/// Where a check running in the background leaves rpm's order.
pub(crate) type OrderSlot = std::sync::Arc<Mutex<Option<Vec<usize>>>>;

/// rpm's check of a new root's transaction, running while its files are
/// placed ([`crate::Gate`]), and where it leaves its order. Dropped, it
/// waits for rpm (the gate holds the [`cowkit_rpmdb::PendingCheck`]): the
/// scratch database must not be removed under it.
pub(crate) struct Overlap {
    pub(crate) gate: crate::Gate,
    pub(crate) slot: OrderSlot,
}

/// What a transaction's registration needs.
pub(crate) struct Registration<'a, 'r> {
    pub(crate) root: &'r Root,
    pub(crate) opts: &'a TxOptions,
    pub(crate) pkgs: &'a [Pkg],
    /// The packages placed (none when nothing was placed).
    pub(crate) placed: &'a [usize],
    /// The database the root had before the transaction.
    pub(crate) found: Option<DbPath>,
    /// A new root's database, the transaction registered in it already.
    pub(crate) scratch: Option<cowkit_rpmdb::Scratch<'r>>,
    /// Install-only packages placed beside their installed versions.
    pub(crate) beside: &'a [usize],
    /// Every package, in the order rpm's check held them ([`InDb::added`]).
    pub(crate) added: &'a [usize],
    /// The placed packages with files in another state than normal:
    /// (name, NEVRA, each file's state).
    pub(crate) states: Vec<(String, String, Vec<u8>)>,
    /// Installed packages erased as elements of their own whose entries
    /// the registration of the placed packages does not erase (the package
    /// obsoleting them was not placed, or is registered beside): taken out
    /// of the database after it, as rpm's erasure takes them out.
    pub(crate) unregister: Vec<String>,
    /// Placed packages an installed package whose erasure failed stays
    /// beside ([`TxSummary::erase_failed`]): registered with
    /// `-i --replacefiles`, which erases nothing.
    pub(crate) keeping: Vec<usize>,
    /// Those installed packages' file states before the transaction
    /// (name, NEVRA, states), put back after the registration.
    pub(crate) kept_states: Vec<(String, String, Vec<u8>)>,
}

/// How rpm registers a placed package, header only.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Registered {
    /// `-U`: its old versions and what it obsoletes are erased.
    Upgrade,
    /// `-i`: an install-only package beside its installed versions.
    Beside,
    /// `-i --replacefiles --replacepkgs`: beside an installed package
    /// whose erasure failed.
    Keeping,
}

impl Registered {
    /// Every kind, in the order they are registered.
    pub(crate) const ALL: [Registered; 3] =
        [Registered::Upgrade, Registered::Beside, Registered::Keeping];

    /// The kind of a package registered beside its installed versions
    /// (`beside`) or beside one whose erasure failed (`keeping`).
    pub(crate) fn of(beside: bool, keeping: bool) -> Registered {
        match (keeping, beside) {
            (true, _) => Registered::Keeping,
            (false, true) => Registered::Beside,
            (false, false) => Registered::Upgrade,
        }
    }

    /// How rpm registers this kind, from the transaction's own options
    /// as an upgrade's (`upgrade`); dependencies were checked already.
    pub(crate) fn check(self, upgrade: Check) -> Check {
        let install = Check {
            nodeps: true,
            install: true,
            reinstall: false,
            ..upgrade
        };
        match self {
            Registered::Upgrade => Check {
                nodeps: true,
                ..upgrade
            },
            Registered::Beside => install,
            // The files the kept package shares with it were checked as
            // an upgrade's.
            Registered::Keeping => Check {
                replacefiles: true,
                replacepkgs: true,
                ..install
            },
        }
    }
}

/// One registration of the placed packages: a new root's database
/// registered at the check is trimmed to them and moved into place;
/// otherwise rpm registers them, header only.
pub(crate) fn register(reg: Registration<'_, '_>, sum: &mut TxSummary) -> Result<()> {
    let Registration {
        root,
        opts,
        pkgs,
        placed,
        found,
        scratch,
        beside,
        added,
        states,
        unregister,
        keeping,
        kept_states,
    } = reg;
    if !opts.db || (placed.is_empty() && unregister.is_empty()) {
        return Ok(());
    }
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
        // One call per kind of registration there is.
        let rpm = Rpm::new(root.path(), &db).with_file_args(file_args(&opts.files));
        let kind = |i: &usize| Registered::of(beside.contains(i), keeping.contains(i));
        for k in Registered::ALL {
            // In the order rpm's check held them, not the order placed:
            // rpm orders packages nothing else orders by how they come.
            let group: Vec<PathBuf> = added
                .iter()
                .filter(|i| placed.contains(i) && kind(i) == k)
                .map(|&i| pkgs[i].path.clone())
                .collect();
            if !group.is_empty() {
                rpm.register_as(&group, &k.check(rpm_check(opts, false)))?;
            }
        }
    }
    Rpm::new(root.path(), &db).unregister(&unregister)?;
    Rpm::new(root.path(), &db).restore_file_states(&kept_states)?;
    // rpm's header-only registration records every file "normal": the
    // files rpm would not have installed get their states as its install
    // records them.
    Rpm::new(root.path(), &db).record_file_states(&states)?;
    sum.seconds.register = t.elapsed().as_secs_f64();
    sum.registered = paths.len() as u64;
    sum.db = Some(db);
    Ok(())
}

/// What the next transaction found of an interrupted one, and did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Recovery {
    /// The journal (host path).
    pub journal: PathBuf,
    /// How far the interrupted transaction got: `placing` (files were being
    /// placed, nothing registered) or `registering`.
    pub stage: String,
    /// What was found, one line each.
    pub found: Vec<String>,
    /// What was done about it, one line each.
    pub did: Vec<String>,
}
