//! The transaction journal: what a transaction on a root with an rpm
//! database is about to do, written next to the database before the first
//! change to the root and removed once the database says what the tree
//! holds. A run killed in between (SIGKILL, an OOM kill, a container
//! stop) leaves it behind, and the next transaction on that root finishes
//! the interrupted one first ([`crate::recover`]).
//!
//! The journal is the file `cowkit-journal` in the database directory
//! (`<dbpath>` inside the root, e.g. `/var/lib/rpm/cowkit-journal`). It is
//! written through the directory's descriptor, resolved inside the root:
//! a temporary name, `fsync`, rename over the old one, `fsync` of the
//! directory. It is read only when it is a regular file owned by root (or
//! by the user running cowkit), not writable by its group or others, in a
//! directory that holds the same, and no larger than [`MAX_JOURNAL`].
//!
//! It holds, as JSON: the database path; the new packages (NEVRA, header
//! digest, the package file, whether it goes beside its installed
//! versions with rpm's `-i`); the installed headers the transaction
//! erases (NEVRA and database instance, and which new package replaces
//! each); the options the transaction was asked (`Asked`: the
//! registration's, its file policy, `--justdb`, `--noscripts`, `--nodeps`,
//! install-only packages beside), with which it is done again; and the
//! stage: `placing` (written before `%pretrans`: the files
//! are being placed, the database is untouched) or `registering` (every
//! element ran: the new packages' files are placed, the old versions'
//! dropped files removed; rpm is registering). The registration's own
//! progress, package by package, is read back from the database, which
//! rpm commits header by header.

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use cowkit_fs::root::{RelPath, Root};
use cowkit_fs::IoError;
use cowkit_rpmdb::{Check, DbPath, Rpm};
use serde::{Deserialize, Serialize};

use crate::fate::Policy;
use crate::pkg::Pkg;
use crate::prepared::{InstallOnly, Recovery, Registered, TxOptions, TxSummary};
use crate::{Error, Result};

/// The journal's file name in the database directory.
pub const JOURNAL: &str = "cowkit-journal";

/// The largest journal read (a transaction of 10,000 packages takes about
/// 3 MiB).
pub const MAX_JOURNAL: u64 = 16 << 20;

/// The journal's format.
const FORMAT: u32 = 1;

/// How far the transaction got.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Stage {
    /// Scriptlets run and files are placed; the database is untouched.
    Placing,
    /// Every element ran; rpm registers the placed packages.
    Registering,
}

/// A new package of the transaction.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Add {
    pub(crate) nevra: String,
    /// rpm's `%{SHA256HEADER}`.
    pub(crate) digest: String,
    /// The package file registered from (absolute).
    pub(crate) package: PathBuf,
    /// Registered beside its installed versions (`rpm -i`).
    pub(crate) beside: bool,
    /// Its files are placed (stage `registering`).
    pub(crate) placed: bool,
    /// Registered beside an installed package whose erasure failed
    /// (stage `registering`; [`Registered::Keeping`]).
    #[serde(default)]
    pub(crate) keeping: bool,
}

/// An installed header the transaction erases.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Old {
    pub(crate) nevra: String,
    /// Its database instance (rpm never reuses one).
    pub(crate) instance: u32,
    /// The NEVRA of the new package that replaces or obsoletes it.
    pub(crate) by: String,
}

/// The options of a transaction that decide what it places and runs,
/// beside the registration's own: a transaction interrupted while it
/// placed files is done again with them, whatever the run that finds it
/// was asked (`cowkit dnf` over dnf5 finishes it before dnf5 has said its
/// configuration's transaction flags).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Asked {
    /// Which files are placed: docs, languages, excluded and net shared
    /// paths, colours, defines.
    pub(crate) files: Policy,
    /// `--justdb`: nothing placed, no scriptlet.
    pub(crate) justdb: bool,
    /// `--noscripts`.
    pub(crate) noscripts: bool,
    /// `--nodeps`.
    pub(crate) nodeps: bool,
    /// Install-only packages beside their installed versions.
    pub(crate) install_only: InstallOnly,
    /// The elements as the resolver handed them to rpm
    /// ([`TxOptions::handed`]: dnf5's).
    #[serde(default)]
    pub(crate) handed: Vec<crate::prepared::Handed>,
}

impl Asked {
    fn of(opts: &TxOptions) -> Asked {
        Asked {
            files: opts.files.clone(),
            justdb: opts.justdb,
            noscripts: opts.noscripts,
            nodeps: opts.nodeps,
            install_only: opts.install_only,
            handed: opts.handed.clone(),
        }
    }
}

impl Journal {
    /// `opts` as the journal's transaction was asked: its registration's
    /// options and, where it recorded them, [`Asked`].
    pub(crate) fn options(&self, opts: &TxOptions) -> TxOptions {
        let mut o = opts.clone();
        o.replacefiles = self.replacefiles;
        o.oldpackage = self.oldpackage;
        o.replacepkgs = self.replacepkgs;
        o.reinstall = self.reinstall;
        if let Some(a) = &self.asked {
            o.files = a.files.clone();
            o.justdb = a.justdb;
            o.noscripts = a.noscripts;
            o.nodeps = a.nodeps;
            o.install_only = a.install_only;
            o.handed = a.handed.clone();
        }
        o
    }
}

/// The journal's content.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Journal {
    pub(crate) format: u32,
    pub(crate) stage: Stage,
    /// The database path inside the root.
    pub(crate) dbpath: String,
    /// The registration takes `--replacefiles`.
    pub(crate) replacefiles: bool,
    /// The registration takes `--oldpackage` (a downgrade).
    #[serde(default)]
    pub(crate) oldpackage: bool,
    /// The registration takes `--replacepkgs`.
    #[serde(default)]
    pub(crate) replacepkgs: bool,
    /// The registration is rpm's `--reinstall`.
    #[serde(default)]
    pub(crate) reinstall: bool,
    /// What else the transaction was asked to do, for doing it again as
    /// it was asked ([`Asked`]); a journal without it is done again with
    /// the options of the run that finds it.
    #[serde(default)]
    pub(crate) asked: Option<Asked>,
    pub(crate) add: Vec<Add>,
    pub(crate) erase: Vec<Old>,
    /// Installed packages whose erasure failed, kept beside their new
    /// versions: their file states before the transaction (name, NEVRA,
    /// states), put back after the registration (stage `registering`).
    #[serde(default)]
    pub(crate) kept_states: Vec<(String, String, Vec<u8>)>,
}

impl Journal {
    /// The journal of a transaction about to start.
    pub(crate) fn new(dbpath: &str, opts: &TxOptions, add: Vec<Add>, erase: Vec<Old>) -> Self {
        Journal {
            format: FORMAT,
            stage: Stage::Placing,
            dbpath: dbpath.to_string(),
            replacefiles: opts.replacefiles,
            oldpackage: opts.oldpackage,
            replacepkgs: opts.replacepkgs,
            reinstall: opts.reinstall,
            asked: Some(Asked::of(opts)),
            add,
            erase,
            kept_states: Vec::new(),
        }
    }

    /// Write it (atomically and durably) in the database directory.
    pub(crate) fn write(&self, root: &Root) -> Result<()> {
        let (dir, path) = db_dir(root, &self.dbpath)?;
        let data = serde_json::to_vec(self).map_err(|e| Error::Journal {
            path: path.join(JOURNAL),
            why: format!("cannot encode it: {e}"),
        })?;
        let target = path.join(JOURNAL);
        // Under a temporary name (`.ck<pid>.<n>`) until it is whole and
        // durable; one a kill leaves is removed by the next [`recover`].
        let mut f = cowkit_fs::dir::NewFile::named(std::os::fd::AsFd::as_fd(&dir), &path, 0o600)?;
        f.write_all(&data)?;
        f.sync()?;
        crash_point(match self.stage {
            Stage::Placing => "journal-temp-placing",
            Stage::Registering => "journal-temp-registering",
        });
        f.commit(std::os::fd::AsFd::as_fd(&dir), JOURNAL, &target)?;
        cowkit_fs::dir::sync_dir(&dir, &path)?;
        Ok(())
    }
}

/// Remove the journal of `dbpath` (the transaction's database is what the
/// tree holds).
pub(crate) fn clear(root: &Root, dbpath: &str) -> Result<()> {
    let (dir, path) = db_dir(root, dbpath)?;
    match rustix::fs::unlinkat(&dir, JOURNAL, rustix::fs::AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
        Err(e) => return Err(IoError::new("remove", path.join(JOURNAL), e).into()),
    }
    cowkit_fs::dir::sync_dir(&dir, &path)?;
    Ok(())
}

/// The database directory, opened inside the root, checked: only root (or
/// the user running cowkit) may write it. Also its host path.
fn db_dir(root: &Root, dbpath: &str) -> Result<(OwnedFd, PathBuf)> {
    let rel = RelPath::new(dbpath.trim_start_matches('/'))?;
    let path = root.display(&rel);
    let dir = root.open_dir(&rel)?;
    let st = rustix::fs::fstat(&dir).map_err(|e| IoError::new("stat", &path, e))?;
    if let Some(why) = cowkit_fs::trust::others_can_change(&st, rustix::process::geteuid().as_raw())
    {
        return Err(Error::Journal {
            path: path.join(JOURNAL),
            why: format!("the database directory cannot hold it: {why}"),
        });
    }
    Ok((dir, path))
}

/// Remove from the database directory of `dbpath` the temporary names
/// (`.ck<pid>.<n>`) of cowkit processes that no longer exist: a journal a
/// kill interrupted while it was being written. Returns how many.
fn sweep(root: &Root, dbpath: &str) -> Result<usize> {
    let (dir, dir_path) = db_dir(root, dbpath)?;
    Ok(cowkit_fs::dir::remove_stale_temporaries(
        std::os::fd::AsFd::as_fd(&dir),
        &dir_path,
    )?)
}

/// Read the journal of `dbpath`, if there is one: bounded, and only one
/// nobody but root (or this user) can have written.
pub(crate) fn read(root: &Root, dbpath: &str) -> Result<Option<Journal>> {
    use std::io::Read;
    let (dir, dir_path) = db_dir(root, dbpath)?;
    let path = dir_path.join(JOURNAL);
    let bad = |why: String| Error::Journal {
        path: path.clone(),
        why,
    };
    let fd = match rustix::fs::openat(
        &dir,
        JOURNAL,
        rustix::fs::OFlags::RDONLY
            | rustix::fs::OFlags::NOFOLLOW
            | rustix::fs::OFlags::NONBLOCK
            | rustix::fs::OFlags::NOCTTY
            | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => return Err(bad("it is a symlink".into())),
        Err(e) => return Err(IoError::new("open", &path, e).into()),
    };
    let st = rustix::fs::fstat(&fd).map_err(|e| IoError::new("stat", &path, e))?;
    cowkit_fs::dir::check_regular(&st).map_err(|e| bad(e.to_string()))?;
    if let Some(why) = cowkit_fs::trust::others_can_change(&st, rustix::process::geteuid().as_raw())
    {
        return Err(bad(format!("not read: {why}")));
    }
    let size = u64::try_from(st.st_size).unwrap_or(u64::MAX);
    if size > MAX_JOURNAL {
        return Err(bad(format!(
            "not read: {size} bytes, more than a journal's {MAX_JOURNAL}"
        )));
    }
    let mut data = Vec::new();
    std::fs::File::from(fd)
        .take(MAX_JOURNAL + 1)
        .read_to_end(&mut data)
        .map_err(|e| IoError::new("read", &path, e))?;
    if data.len() as u64 > MAX_JOURNAL {
        return Err(bad(format!(
            "not read: more than a journal's {MAX_JOURNAL} bytes"
        )));
    }
    let j: Journal =
        serde_json::from_slice(&data).map_err(|e| bad(format!("it cannot be read: {e}")))?;
    if j.format != FORMAT {
        return Err(bad(format!("format {} is not cowkit's {FORMAT}", j.format)));
    }
    if j.dbpath.trim_end_matches('/') != dbpath.trim_end_matches('/') {
        return Err(bad(format!(
            "it is for the database `{}`, and lies in `{dbpath}`",
            j.dbpath
        )));
    }
    // The macros it gives rpm when the transaction is done again: only
    // those a `--define` may set.
    if let Some(a) = &j.asked {
        for (name, value) in &a.files.defines {
            crate::fate::define(&format!("{name} {value}")).map_err(bad)?;
        }
    }
    Ok(Some(j))
}

/// The test hook for kill safety: with `COWKIT_TXN_CRASH_AT=<point>` in
/// the environment, the process sends itself `SIGKILL` at that point (no
/// destructor, no flush). Points: `journal-temp-placing` and
/// `journal-temp-registering` (the journal of that stage is written and
/// synced under its temporary name, not renamed yet), `journal-written`,
/// `pretrans-done`,
/// `element-N` (after the N-th element, from 1), `placed` (the journal
/// says `registering`, rpm not started), `registered` (rpm is done, the
/// journal not removed yet). Unset, each point costs one comparison.
pub(crate) fn crash_point(point: &str) {
    static AT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    if AT
        .get_or_init(|| std::env::var("COWKIT_TXN_CRASH_AT").ok())
        .as_deref()
        == Some(point)
    {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
        std::process::abort();
    }
}

/// Whether `root` holds a journal a killed run left ([`crate::recover`] has a
/// transaction to finish), its database found with `dbpath`. Only reads:
/// a caller that needs costly options only for a recovery asks this
/// first.
pub fn pending(root: &Root, dbpath: Option<&str>) -> Result<bool> {
    let Some(db) = cowkit_rpmdb::find(root, dbpath)? else {
        return Ok(false);
    };
    Ok(read(root, &db.path)?.is_some())
}

/// Finish the transaction a killed run left on `root`, if its journal is
/// there, before anything else reads the database. `packages` are those
/// of the transaction about to run (none for `cowkit dnf`, whose resolver
/// runs first): when they include every package of an interrupted
/// transaction that had registered nothing yet, that transaction is left
/// for them to do again.
///
/// The rules (`docs/rpm-transactions.md`, "A kill"):
/// - stage `placing`: the database is the one before the transaction,
///   the tree partly the new versions'. The transaction is done again,
///   from its package files (each must still have the recorded header
///   digest), by the transaction about to run or first, on its own.
/// - stage `registering`: rolled forward, as the database alone decides:
///   installed headers it erases whose replacement is registered are
///   erased (`rpm -e --justdb`), new packages not registered yet are
///   registered (`rpm -U`/`-i --justdb`, which erases their old versions),
///   then any header of the erase list still registered is erased.
///
/// Before that, the rpm program must be of the generation cowkit runs
/// transactions as ([`cowkit_rpmdb::check_generation`]). Temporary names a
/// killed run left in the database directory (a journal being written) are
/// removed, journal or not.
///
/// With `--test` or without a database nothing is done.
///
/// `again` runs a transaction of the given packages without recovering
/// first (an interrupted transaction still placing is run again).
pub(crate) fn recover(
    root: &Root,
    opts: &TxOptions,
    packages: &[PathBuf],
    again: &dyn Fn(&[PathBuf], &TxOptions) -> Result<TxSummary>,
) -> Result<Option<Recovery>> {
    if opts.test || !opts.db {
        return Ok(None);
    }
    let Some(db) = cowkit_rpmdb::find(root, opts.dbpath.as_deref())? else {
        return Ok(None);
    };
    let Some(j) = read(root, &db.path)? else {
        sweep(root, &db.path)?;
        return Ok(None);
    };
    // Finishing registers through rpm: only the generation whose rules
    // cowkit runs transactions by, checked before anything is done.
    cowkit_rpmdb::check_generation()?;
    sweep(root, &db.path)?;
    let journal = root
        .display(&RelPath::new(db.path.trim_start_matches('/'))?)
        .join(JOURNAL);
    let mut rec = Recovery {
        journal: journal.clone(),
        stage: match j.stage {
            Stage::Placing => "placing",
            Stage::Registering => "registering",
        }
        .to_string(),
        ..Recovery::default()
    };
    let names = |v: &mut dyn Iterator<Item = &String>| v.cloned().collect::<Vec<_>>().join(", ");
    match j.stage {
        Stage::Placing => {
            rec.found.push(format!(
                "an interrupted transaction of {} placing files, nothing registered: {}",
                j.add.len(),
                names(&mut j.add.iter().map(|a| &a.nevra))
            ));
            let digests: Vec<String> = packages
                .iter()
                .filter_map(|p| Pkg::read(p, false).ok().map(|p| p.digest))
                .collect();
            if j.add.iter().all(|a| digests.contains(&a.digest)) {
                rec.did
                    .push("this transaction installs the same packages again".into());
                return Ok(Some(rec));
            }
            check_packages(&journal, j.add.iter())?;
            let paths: Vec<PathBuf> = j.add.iter().map(|a| a.package.clone()).collect();
            let again = again(&paths, &j.options(opts)).map_err(|e| Error::Interrupted {
                path: journal.clone(),
                source: Box::new(e),
            })?;
            rec.did.push(format!(
                "installed its packages again: {}",
                again.installed.join(", ")
            ));
            if !again.failed.is_empty() {
                rec.did.push(format!(
                    "failed again: {}",
                    names(&mut again.failed.iter().map(|f| &f.nevra))
                ));
            }
            for f in &again.erase_failed {
                rec.did.push(format!(
                    "{}: {} again; it stays installed",
                    f.nevra, f.outcome
                ));
            }
        }
        Stage::Registering => {
            roll_forward(root, &db, &j, &journal, &mut rec)?;
            clear(root, &db.path)?;
            rec.did.push("removed the journal".into());
        }
    }
    Ok(Some(rec))
}

/// Each of `adds`' package files still has the header the journal names.
fn check_packages<'a>(journal: &Path, adds: impl Iterator<Item = &'a Add>) -> Result<()> {
    let mut problems = Vec::new();
    for a in adds {
        match Pkg::read(&a.package, false) {
            Ok(p) if p.digest == a.digest => {}
            Ok(p) => problems.push(format!(
                "`{}` is no longer {} (header digest {}, the journal says {})",
                a.package.display(),
                a.nevra,
                p.digest,
                a.digest
            )),
            Err(e) => problems.push(format!(
                "`{}` ({}) cannot be read: {}",
                a.package.display(),
                a.nevra,
                cowkit_fs::error::chain(&e).join(": ")
            )),
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(Error::Journal {
            path: journal.to_path_buf(),
            why: format!(
                "the interrupted transaction cannot be finished: {}",
                problems.join("; ")
            ),
        })
    }
}

/// Stage `registering`: the database is brought to the transaction's end.
fn roll_forward(
    root: &Root,
    db: &DbPath,
    j: &Journal,
    journal: &Path,
    rec: &mut Recovery,
) -> Result<()> {
    let rpm = Rpm::new(root.path(), db);
    let heads = rpm.headers()?;
    // A header the transaction erases is not its new package's, even
    // with the same digest (a reinstall): rpm never reuses an instance.
    let has_digest = |h: &[(u32, String, String)], d: &str| {
        h.iter()
            .any(|(i, x, _)| x == d && !j.erase.iter().any(|o| o.instance == *i))
    };
    let has_old = |h: &[(u32, String, String)], o: &Old| {
        h.iter().any(|(i, _, n)| *i == o.instance && *n == o.nevra)
    };
    let placed: Vec<&Add> = j.add.iter().filter(|a| a.placed).collect();
    let registered: Vec<&Add> = placed
        .iter()
        .copied()
        .filter(|a| has_digest(&heads, &a.digest))
        .collect();
    let missing: Vec<&Add> = placed
        .iter()
        .copied()
        .filter(|a| !has_digest(&heads, &a.digest))
        .collect();
    let olds: Vec<&Old> = j.erase.iter().filter(|o| has_old(&heads, o)).collect();
    rec.found.push(format!(
        "an interrupted registration: {} of {} placed package(s) registered, {} of {} replaced header(s) still registered",
        registered.len(),
        placed.len(),
        olds.len(),
        j.erase.len()
    ));
    // Headers whose replacement is registered go first: a file that moved
    // from one package to another would otherwise conflict when the rest
    // is registered.
    let superseded: Vec<String> = olds
        .iter()
        .filter(|o| registered.iter().any(|a| a.nevra == o.by))
        .map(|o| o.nevra.clone())
        .collect();
    if !superseded.is_empty() {
        rpm.unregister(&superseded)?;
        rec.did.push(format!(
            "erased from the database (their new versions are registered): {}",
            superseded.join(", ")
        ));
    }
    if !missing.is_empty() {
        check_packages(journal, missing.iter().copied())?;
        let upgrade = Check {
            nodeps: true,
            replacefiles: j.replacefiles,
            install: false,
            oldpackage: j.oldpackage,
            replacepkgs: j.replacepkgs,
            reinstall: j.reinstall,
            freshen: false,
        };
        for k in Registered::ALL {
            let group: Vec<PathBuf> = missing
                .iter()
                .filter(|a| Registered::of(a.beside, a.keeping) == k)
                .map(|a| a.package.clone())
                .collect();
            if !group.is_empty() {
                rpm.register_as(&group, &k.check(upgrade))?;
            }
        }
        rec.did.push(format!(
            "registered: {}",
            missing
                .iter()
                .map(|a| a.nevra.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let heads = rpm.headers()?;
    let left: Vec<String> = j
        .erase
        .iter()
        .filter(|o| has_old(&heads, o))
        .map(|o| o.nevra.clone())
        .collect();
    if !left.is_empty() {
        rpm.unregister(&left)?;
        rec.did
            .push(format!("erased from the database: {}", left.join(", ")));
    }
    // (Written again even when they were: they are the states as they
    // were before the transaction.)
    rpm.restore_file_states(&j.kept_states)?;
    if superseded.is_empty() && missing.is_empty() && left.is_empty() {
        rec.did
            .push("nothing: the database already holds the transaction's end".into());
    }
    // Every element ran before the registration: the old versions'
    // dropped files are gone already.
    Ok(())
}
