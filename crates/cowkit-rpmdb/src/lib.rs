//! A root's rpm database, read and written by rpm's own code.
//!
//! cowkit places a package's files itself; the database is rpm's. This
//! crate finds the database a root uses ([`locate`]), asks rpm to check a
//! transaction and order it ([`Rpm::check`]: file conflicts, "already
//! installed", dependencies, rpm's own topological order), registers the
//! packages header-only in one transaction ([`Rpm::register`]: `rpm
//! --justdb`, which reads each package's header, verifies its digests and
//! never the payload, so an extents file registers like its `.rpm`), and
//! reads what is installed ([`Rpm::installed`]) with rpm's XML query.
//!
//! Why the `rpm` program and not librpm through FFI: both are rpm's code
//! and both register many packages in one transaction; measured on this
//! machine kind (`docs/research/rpmdb-registration.md`), one `rpm` process
//! for 50 packages took 0.37 s and librpm in-process 0.31–0.43 s, so the
//! FFI buys nothing measurable and would bring `unsafe` code, a link
//! dependency on one librpm ABI and rpm's global state into every cowkit
//! process. Every call passes `--dbpath` explicitly: rpm never reads the
//! root's macros, and without it Debian's rpm would use `~/.rpmdb` of the
//! host user inside the root.
#![deny(missing_docs)]

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use cowkit_fs::root::{RelPath, Root};
use serde::Serialize;

pub mod generation;
mod installed;
mod keys;
mod macros;
mod query;
pub mod triggers;
pub mod vercmp;

pub use installed::{Installed, InstalledFile};
pub use query::{Element, OwnedFile};
pub use triggers::Script;

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A filesystem operation in the root failed.
    #[error(transparent)]
    Fs(#[from] cowkit_fs::Error),
    /// The `rpm` program could not be started.
    #[error("cannot run `{program}`")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// rpm refused the transaction: the problems as rpm words them.
    #[error("rpm refuses the transaction: {}", .problems.join("; "))]
    Problems {
        /// One line per problem.
        problems: Vec<String>,
    },
    /// rpm failed for another reason.
    #[error("`rpm {what}` failed ({status}): {stderr}")]
    Rpm {
        /// What was asked.
        what: &'static str,
        /// The exit status.
        status: String,
        /// What rpm said.
        stderr: String,
    },
    /// A database path that cannot be used.
    #[error("the rpm database path `{path}` cannot be used: {why}")]
    BadDbPath {
        /// The path.
        path: String,
        /// Why.
        why: &'static str,
    },
    /// The root's rpm macro files go past cowkit's bounds (file sizes,
    /// expansion length or work): the database path is not guessed.
    #[error("cannot tell the root's rpm database path from its macros: `{file}` {why}")]
    Macros {
        /// The macro file.
        file: String,
        /// What bound it passes.
        why: String,
    },
    /// rpm's answer could not be understood.
    #[error("cannot read rpm's answer to `{what}`: {why}")]
    Answer {
        /// What was asked.
        what: &'static str,
        /// What is wrong.
        why: String,
    },
    /// Installed packages whose file lists hold names that are not UTF-8:
    /// cowkit reads installed file lists as text, so it cannot replace or
    /// erase them as rpm would (rpm can).
    #[error("the installed package(s) {} have file names that are not UTF-8: cowkit cannot yet upgrade or erase them as rpm would", .0.join(", "))]
    NotUtf8Installed(Vec<String>),
    /// The `rpm` program is of another generation than the one cowkit
    /// runs transactions as ([`generation`]).
    #[error("`{}` is rpm {version}, and cowkit runs transactions as rpm 4.18 or 4.20 does: {why}", .program.display())]
    UnsupportedRpm {
        /// The program.
        program: PathBuf,
        /// Its version.
        version: String,
        /// What differs.
        why: String,
    },
}

impl From<cowkit_fs::IoError> for Error {
    fn from(e: cowkit_fs::IoError) -> Self {
        Error::Fs(e.into())
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The `rpm` program cowkit runs: `COWKIT_RPM`, else `rpm` from `PATH`.
fn program() -> PathBuf {
    std::env::var_os("COWKIT_RPM").map_or_else(|| "rpm".into(), PathBuf::from)
}

/// The generation of the `rpm` program, refused when cowkit does not run
/// transactions as it does ([`generation::check`]); its version is asked
/// once per process.
pub fn check_generation() -> Result<generation::Generation> {
    let program = program();
    generation::check(&program, generation::of_program(&program)?)
}

/// Where the `rpm` program's own Python module is, when it is not the
/// system's: `PREFIX/lib/python3/site-packages` beside `PREFIX/bin/rpm`
/// (an rpm built into its own prefix); `None` for an rpm whose prefix has
/// none (the system's module is then imported, and its version checked).
fn python_path() -> Option<PathBuf> {
    let program = program();
    let exe = if program.components().count() > 1 {
        program
    } else {
        std::env::split_paths(&std::env::var_os("PATH")?)
            .map(|d| d.join(&program))
            .find(|p| p.is_file())?
    };
    let exe = std::fs::canonicalize(exe).ok()?;
    let dir = exe.parent()?.parent()?.join("lib/python3/site-packages");
    dir.join("rpm/__init__.py").is_file().then_some(dir)
}

/// The lines put before every Python program run with rpm's bindings: the
/// rpm program's own module first on the path, and its version checked
/// against the program's (`sys.argv[1]`: the path or empty,
/// `sys.argv[2]`: the version, both removed before the program reads its
/// arguments).
const PY_PROLOGUE: &str = concat!(
    "import sys\n",
    "_p = sys.argv.pop(1)\n",
    "_v = sys.argv.pop(1)\n",
    "if _p:\n",
    "    sys.path.insert(0, _p)\n",
    "import rpm\n",
    "if rpm.__version__.split('.')[:2] != _v.split('.')[:2]:\n",
    "    sys.exit(\"rpm's Python module %s (%s) is not of the rpm program (%s)\" % (rpm.__version__, rpm.__file__, _v))\n",
);

/// `python -I -c PROGRAM` with rpm's bindings of the `rpm` program: the
/// prologue's arguments are added; the caller adds its own after.
fn python_with_rpm(script: &str) -> Result<(OsString, Command)> {
    let python = std::env::var_os("COWKIT_PYTHON").unwrap_or_else(|| "/usr/bin/python3".into());
    let version = generation::of_program(&program())?;
    let mut c = Command::new(&python);
    c.args(["-I", "-c"])
        .arg(format!("{PY_PROLOGUE}{script}"))
        .arg(
            python_path()
                .map(PathBuf::into_os_string)
                .unwrap_or_default(),
        )
        .arg(version.to_string());
    Ok((python, c))
}

/// Why a database path was chosen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "from", content = "detail")]
pub enum Source {
    /// Given by the caller (`--dbpath`).
    Option,
    /// A database already exists there in the root.
    Existing,
    /// The root's own rpm configuration sets `%_dbpath` (the file).
    RootMacros(String),
    /// Nothing in the root says: upstream rpm's default, `/var/lib/rpm`.
    Default,
    /// Nothing in the root says, and the `rpm` program is rpm 4.20: its
    /// own `%_dbpath` (Fedora's is `/usr/lib/sysimage/rpm`).
    Rpm,
}

/// The database a root uses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DbPath {
    /// Absolute inside the root, with no symlink in any component (so
    /// that rpm, which prefixes it with the root and follows symlinks on
    /// the host, cannot be led outside the root).
    pub path: String,
    /// Why this one.
    pub source: Source,
}

/// Where rpm keeps its database, newest layout first: Fedora 36+,
/// openSUSE and rpm-ostree use `/usr/lib/sysimage/rpm` (with
/// `/var/lib/rpm` a symlink to it), upstream rpm `/var/lib/rpm`.
const KNOWN: [&str; 2] = ["/usr/lib/sysimage/rpm", "/var/lib/rpm"];

/// Files that make a directory an rpm database: sqlite (rpm ≥ 4.16),
/// Berkeley DB, ndb.
const DB_FILES: [&str; 3] = ["rpmdb.sqlite", "Packages", "Packages.db"];

/// The upstream default.
pub const DEFAULT_DBPATH: &str = "/var/lib/rpm";

/// Decide which database `root` uses, and create its directory (inside
/// the root) so that its real, symlink-free path can be given to rpm.
///
/// `option` (an absolute path inside the root) wins; then an existing
/// database at a known location; then `%_dbpath` from the root's own rpm
/// macro files; then [`DEFAULT_DBPATH`]. A transaction that installs the
/// root's own `rpm` package into a fresh root should call this after its
/// files are placed, so that the root's configuration decides (see
/// [`find`] for the check before).
pub fn locate(root: &Root, option: Option<&str>) -> Result<DbPath> {
    if let Some(p) = option {
        return create(root, p, Source::Option);
    }
    if let Some(db) = find(root, None)? {
        return Ok(db);
    }
    let (wanted, source) = match macros::dbpath_of(root)? {
        Some((p, file)) => (p, Source::RootMacros(file)),
        None => default_dbpath()?,
    };
    create(root, &wanted, source)
}

/// The database `root` already has, or the directory `option` names if it
/// exists; `None` for a root without one (whose configuration may arrive
/// with the packages). Creates nothing.
pub fn find(root: &Root, option: Option<&str>) -> Result<Option<DbPath>> {
    if let Some(p) = option {
        let rel = in_root(p)?;
        return Ok(root.real_path(&rel)?.map(|path| DbPath {
            path,
            source: Source::Option,
        }));
    }
    Ok(existing(root)?.map(|path| DbPath {
        path,
        source: Source::Existing,
    }))
}

/// Where a root whose own configuration says nothing keeps its database:
/// rpm 4.20's own `%_dbpath`; for rpm 4.18 (and when the program cannot
/// tell its version) upstream's default, as before.
fn default_dbpath() -> Result<(String, Source)> {
    let program = program();
    if let Ok(generation::Generation::Rpm420) =
        generation::of_program(&program).and_then(|v| generation::check(&program, v))
    {
        let v = Rpm::host_macros(&["_dbpath"])?;
        let p = v.into_iter().next().unwrap_or_default();
        if !p.starts_with('/') {
            return Err(Error::BadDbPath {
                path: p,
                why: "the rpm program's `%_dbpath` is not an absolute path",
            });
        }
        return Ok((p, Source::Rpm));
    }
    Ok((DEFAULT_DBPATH.to_string(), Source::Default))
}

fn create(root: &Root, wanted: &str, source: Source) -> Result<DbPath> {
    let rel = in_root(wanted)?;
    root.create_dirs(&rel, 0o755)?;
    let path = root.real_path(&rel)?.ok_or(Error::BadDbPath {
        path: wanted.to_string(),
        why: "it vanished while being created",
    })?;
    Ok(DbPath { path, source })
}

/// An empty database in a temporary directory of the root (`/var/tmp`),
/// removed on drop: what a transaction into a root without a database is
/// checked against before the root's configuration is known.
///
/// Its directory (`/var/tmp/cowkit-rpmdb.…`) is a
/// [`cowkit_fs::workdir::WorkDir`]: held under a lock while in use,
/// removed on SIGINT/SIGTERM by the CLI's signal thread, and by the next
/// [`sweep_scratch`] (which [`Scratch::new`] runs first) when its process
/// was killed.
pub struct Scratch<'r> {
    root: &'r Root,
    /// `None` only while dropped.
    work: Option<cowkit_fs::workdir::WorkDir>,
    db: DbPath,
    /// Directories made for it (`var`, `var/tmp`), removed with it.
    made: Vec<&'static str>,
}

/// The prefix of scratch database directories in a root's `/var/tmp`.
pub const SCRATCH_PREFIX: &str = "cowkit-rpmdb.";

/// Remove from `root`'s `/var/tmp` the scratch databases no live process
/// holds (left by a cowkit that was killed); returns how many.
pub fn sweep_scratch(root: &Root) -> Result<usize> {
    let rel = RelPath::new("var/tmp").expect("a valid path");
    if root.real_path(&rel)?.is_none() {
        return Ok(0);
    }
    let dir = root.open_dir(&rel)?;
    Ok(cowkit_fs::workdir::sweep(
        dir.as_fd(),
        &root.display(&rel),
        SCRATCH_PREFIX,
    )?)
}

impl<'r> Scratch<'r> {
    /// Make one (after removing those killed runs left).
    pub fn new(root: &'r Root) -> Result<Scratch<'r>> {
        sweep_scratch(root)?;
        let mut made = Vec::new();
        for d in ["var/tmp", "var"] {
            if root
                .real_path(&RelPath::new(d).expect("a valid path"))?
                .is_none()
            {
                made.push(d);
            }
        }
        let rel = RelPath::new("var/tmp").expect("a valid path");
        let dir = root.create_dirs(&rel, 0o755)?;
        let work = cowkit_fs::workdir::WorkDir::create(
            dir.as_fd(),
            &root.display(&rel),
            SCRATCH_PREFIX,
            0o700,
        )?;
        let real = root.real_path(&rel)?.ok_or(Error::BadDbPath {
            path: "/var/tmp".into(),
            why: "it vanished while being created",
        })?;
        Ok(Scratch {
            db: DbPath {
                path: format!("{}/{}", real.trim_end_matches('/'), work.name()),
                source: Source::Default,
            },
            root,
            work: Some(work),
            made,
        })
    }

    /// The database path.
    pub fn db(&self) -> &DbPath {
        &self.db
    }
}

impl Scratch<'_> {
    /// Move the database built here into `to` (a directory with no
    /// database yet), file by file, never over an existing file. The
    /// files that could not be moved stay here (and are removed with the
    /// scratch directory): an error names the first.
    pub fn move_to(&self, to: &DbPath) -> Result<()> {
        let rel = in_root(&to.path)?;
        let dest = self.root.open_dir(&rel)?;
        let work = self.work.as_ref().expect("held until dropped");
        let (src, host) = (work.fd(), work.path());
        let mut names: Vec<std::ffi::OsString> = Vec::new();
        for (n, _) in cowkit_fs::dir::read_names(src, host)? {
            let s = n.to_string_lossy();
            if s.ends_with("-shm") {
                // sqlite's shared-memory index: rebuilt by the next reader.
                continue;
            }
            if s.ends_with("-wal") {
                // rpm checkpoints its write-ahead log when it closes the
                // database; one with content left is not moved piecemeal.
                let st =
                    rustix::fs::statat(src, n.as_os_str(), rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
                        .map_err(|e| cowkit_fs::IoError::new("stat", host.join(&n), e))?;
                if st.st_size > 0 {
                    return Err(Error::BadDbPath {
                        path: self.db.path.clone(),
                        why: "its write-ahead log was not checkpointed",
                    });
                }
                continue;
            }
            names.push(n);
        }
        // The database itself last: a reader never finds it without its
        // companions.
        names.sort_by_key(|n| n.as_os_str() == "rpmdb.sqlite");
        for n in names {
            rustix::fs::renameat_with(
                src,
                n.as_os_str(),
                &dest,
                n.as_os_str(),
                rustix::fs::RenameFlags::NOREPLACE,
            )
            .map_err(|e| {
                cowkit_fs::IoError::new(
                    "move the new database into",
                    self.root.display(&rel).join(&n),
                    e,
                )
            })?;
        }
        Ok(())
    }

    /// Keep the directories made for the scratch database (`var`,
    /// `var/tmp`) that `owned` says a package placed since owns; the
    /// others are removed with it when empty.
    pub fn keep_owned(&mut self, owned: impl Fn(&str) -> bool) {
        self.made.retain(|d| !owned(&format!("/{d}")));
    }
}

impl Drop for Scratch<'_> {
    fn drop(&mut self) {
        // The database directory first (with everything in it), then the
        // directories made for it, only when still empty: nothing else
        // may have been put there.
        drop(self.work.take());
        for d in &self.made {
            let _ = rustix::fs::unlinkat(self.root.fd(), *d, rustix::fs::AtFlags::REMOVEDIR);
        }
    }
}

/// Entry points for the fuzz targets (`fuzz/`), not an API.
#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing {
    /// `data` as a root's rpm macro file: its plain definitions read and
    /// every one expanded within the expander's bounds.
    pub fn macros(data: &[u8]) {
        crate::macros::fuzz(&String::from_utf8_lossy(data));
    }
}

fn in_root(p: &str) -> Result<RelPath> {
    if !p.starts_with('/') {
        return Err(Error::BadDbPath {
            path: p.to_string(),
            why: "it is not an absolute path inside the root",
        });
    }
    let rel = RelPath::new(p.trim_matches('/')).map_err(|e| Error::BadDbPath {
        path: p.to_string(),
        why: e.why,
    })?;
    if rel.is_root() {
        return Err(Error::BadDbPath {
            path: p.to_string(),
            why: "it is the root itself",
        });
    }
    Ok(rel)
}

/// The first known location that holds a database.
fn existing(root: &Root) -> Result<Option<String>> {
    for k in KNOWN {
        let rel = in_root(k)?;
        let Some(real) = root.real_path(&rel)? else {
            continue;
        };
        let dir = root.open_dir(&rel)?;
        for f in DB_FILES {
            if cowkit_fs::dir::stat_at(&dir, f).ok().flatten().is_some() {
                return Ok(Some(real));
            }
        }
    }
    Ok(None)
}

/// rpm's verification settings for header-only reads: no payload digest
/// (an extents file carries other bytes after the header), no MD5; the
/// header's own digests are still checked, so a damaged header is refused.
/// (`--nodigest` would let a damaged header into the database.)
const HEADER_ONLY: [&str; 4] = [
    "--define",
    "_pkgverify_level none",
    "--define",
    "_pkgverify_flags 0x30000",
];

/// What [`Rpm::check`] should let pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct Check {
    /// Do not check dependencies (`--nodeps`).
    pub nodeps: bool,
    /// Allow files to replace other packages' files (`--replacefiles`).
    pub replacefiles: bool,
    /// Install beside the installed versions (`rpm -i`, as dnf installs
    /// install-only packages such as kernels) instead of upgrading them
    /// (`rpm -U`).
    pub install: bool,
    /// Allow a package older than the installed version of its name: a
    /// downgrade (`--oldpackage`, rpm's `RPMPROB_FILTER_OLDPACKAGE`).
    pub oldpackage: bool,
    /// Allow a package whose NEVRA is installed: it replaces the installed
    /// one (`--replacepkgs`, rpm's `RPMPROB_FILTER_REPLACEPKG`).
    pub replacepkgs: bool,
    /// Reinstall: each package replaces the installed package of the same
    /// NEVRA (`rpm --reinstall`, rpm's `RPMTE_REINSTALL` elements).
    pub reinstall: bool,
    /// Freshen: only packages whose name is installed in an older version
    /// are upgraded, the others left out silently (`rpm -F`).
    pub freshen: bool,
}

impl Check {
    fn mode(&self) -> &'static str {
        if self.reinstall {
            "--reinstall"
        } else if self.freshen {
            "-F"
        } else if self.install {
            "-i"
        } else {
            "-U"
        }
    }

    /// rpm's problem filters this check passes (`--oldpackage`,
    /// `--replacepkgs`, `--replacefiles`) and `--nodeps`.
    fn filters(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        if self.nodeps {
            v.push("--nodeps");
        }
        if self.replacefiles {
            v.push("--replacefiles");
        }
        if self.oldpackage {
            v.push("--oldpackage");
        }
        if self.replacepkgs {
            v.push("--replacepkgs");
        }
        v
    }
}

/// rpm's plan for a transaction.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The packages to install, in rpm's order (NEVRAs).
    pub order: Vec<String>,
    /// Installed packages rpm would erase: the old versions of upgraded
    /// packages, and packages the new ones obsolete.
    pub erase: Vec<String>,
    /// Both, in the one order rpm processes them: `(true, NEVRA)` an
    /// install, `(false, NEVRA)` an erasure.
    pub elements: Vec<(bool, String)>,
    /// What rpm said of the packages it left out of the transaction, in
    /// its words ([`dropped`]): another version of the same name, the
    /// same package again, or a package another one obsoletes. Those
    /// packages are not in [`Plan::order`].
    pub dropped: Vec<String>,
}

/// An rpm check (and registration) running in the background
/// ([`Rpm::start_check_and_register`]).
/// Dropped without [`PendingCheck::wait`], it still waits for rpm, so
/// that nothing (a scratch database being removed) happens under it.
#[derive(Debug)]
pub struct PendingCheck {
    handle: Option<std::thread::JoinHandle<Result<Plan>>>,
}

impl PendingCheck {
    /// Wait for rpm: its plan, or its problems as [`Error::Problems`].
    pub fn wait(mut self) -> Result<Plan> {
        self.handle
            .take()
            .expect("waited for once")
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    }
}

impl Drop for PendingCheck {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// The `rpm` program working on one root and database.
#[derive(Clone, Debug)]
pub struct Rpm {
    program: PathBuf,
    root: PathBuf,
    dbpath: String,
    force_debian: bool,
    /// rpm 4.20: `--nosysusers` on every check and registration.
    nosysusers: bool,
    /// What the transaction's file policy adds to its check and
    /// registration (`--excludedocs`, `--excludepath`, `--define`s).
    file_args: Vec<OsString>,
}

impl Rpm {
    /// rpm on the root at `root` (host path) with the database `db`.
    pub fn new(root: &Path, db: &DbPath) -> Rpm {
        let program = program();
        // Debian's rpm warns on every install that alien should be used
        // instead; its own `--force-debian` silences that. Other rpms do
        // not know the option (an rpm 4.20 built on Debian is not
        // Debian's).
        let version = generation::of_program(&program).ok();
        let force_debian = Path::new("/etc/debian_version").exists()
            && version.is_none_or(|v| (v.major, v.minor) == (4, 18));
        // rpm 4.20 creates the users and groups of a package's sysusers
        // provides even in a header-only (`--justdb`) transaction: never
        // while cowkit only registers (a package that needs them is
        // refused before).
        let nosysusers = version.is_some_and(|v| (v.major, v.minor) == (4, 20));
        Rpm {
            program,
            root: std::path::absolute(root).unwrap_or_else(|_| root.to_path_buf()),
            dbpath: db.path.clone(),
            force_debian,
            nosysusers,
            file_args: Vec::new(),
        }
    }

    /// The same, with `args` added to every check and registration: the
    /// options that decide which files rpm takes as installed
    /// (`--excludedocs`, `--excludepath P`, `--define '_install_langs
    /// ...'`), so that rpm records what cowkit placed.
    pub fn with_file_args(mut self, args: Vec<OsString>) -> Rpm {
        self.file_args = args;
        self
    }

    /// The database path inside the root.
    pub fn dbpath(&self) -> &str {
        &self.dbpath
    }

    /// The arguments that select this root and database, for a user's own
    /// rpm command line (`--root R --dbpath D`).
    pub fn selector(&self) -> Vec<OsString> {
        vec![
            "--root".into(),
            self.root.clone().into(),
            "--dbpath".into(),
            self.dbpath.clone().into(),
        ]
    }

    fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        c.args(self.selector())
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    fn run(&self, mut c: Command) -> Result<std::process::Output> {
        c.output().map_err(|source| Error::Spawn {
            program: self.program.clone(),
            source,
        })
    }

    fn install_args(&self, c: &mut Command, check: &Check) {
        if self.force_debian {
            c.arg("--force-debian");
        }
        if self.nosysusers {
            c.arg("--nosysusers");
        }
        c.args(HEADER_ONLY)
            .args(["--justdb", "--noscripts", "--notriggers"])
            .args(&self.file_args)
            .args(check.filters());
    }

    /// Ask rpm whether installing (or upgrading to) `packages` in one
    /// transaction would succeed, without changing anything: file
    /// conflicts with installed packages and among the new ones, packages
    /// already installed (or newer ones), and unless `check.nodeps`,
    /// dependencies. Returns the packages' NEVRAs (`name-version-release.arch`)
    /// in rpm's own transaction order, or [`Error::Problems`].
    pub fn check(&self, packages: &[PathBuf], check: &Check) -> Result<Plan> {
        self.check_or_register(packages, check, true)
    }

    /// [`Rpm::check`], and when it passes, register the packages in the
    /// same rpm transaction (`-U --justdb` without `--test`): for a
    /// database nothing else reads yet (a new root's, built aside and
    /// moved into place by [`Scratch::move_to`]).
    pub fn check_and_register(&self, packages: &[PathBuf], check: &Check) -> Result<Plan> {
        self.check_or_register(packages, check, false)
    }

    /// [`Rpm::check_and_register`] in the background: rpm runs while the
    /// caller goes on; [`PendingCheck::wait`] gives its answer. For a new
    /// root's database, whose files are placed (unseen) while rpm checks.
    /// `prepare` is applied to rpm's command before it is spawned (e.g. a
    /// session that answers its sync calls).
    pub fn start_check_and_register(
        &self,
        packages: &[PathBuf],
        check: &Check,
        prepare: &dyn Fn(&mut Command),
    ) -> Result<PendingCheck> {
        let mut c = self.check_command(packages, check, false);
        prepare(&mut c);
        let rpm = self.clone();
        let n = packages.len();
        let handle = std::thread::Builder::new()
            .name("rpm-check".into())
            .spawn(move || {
                let out = rpm.run(c)?;
                rpm.plan(out, n)
            })
            .map_err(|source| Error::Spawn {
                program: self.program.clone(),
                source,
            })?;
        Ok(PendingCheck {
            handle: Some(handle),
        })
    }

    fn check_command(&self, packages: &[PathBuf], check: &Check, test: bool) -> Command {
        let mut c = self.command();
        self.install_args(&mut c, check);
        if test {
            c.arg("--test");
        }
        c.args(["-vv", check.mode()]).args(packages);
        c
    }

    fn check_or_register(&self, packages: &[PathBuf], check: &Check, test: bool) -> Result<Plan> {
        let c = self.check_command(packages, check, test);
        let out = self.run(c)?;
        self.plan(out, packages.len())
    }

    /// The NEVRAs of the packages among `packages` that `rpm -F` keeps
    /// (each upgrades an installed older version of its name; with
    /// `check.oldpackage` also a newer one), in rpm's order: rpm's own
    /// choice, from a `--test -F` of them with `check`'s filters. None
    /// kept is no error (rpm then runs no transaction and succeeds).
    pub fn freshen_keeps(&self, packages: &[PathBuf], check: &Check) -> Result<Vec<String>> {
        let c = self.check_command(
            packages,
            &Check {
                freshen: true,
                reinstall: false,
                install: false,
                ..*check
            },
            true,
        );
        let out = self.run(c)?;
        let stderr = self.transaction_output(out, "--test -vv -F")?;
        Ok(order(&stderr).0)
    }

    /// rpm's plan from the output of a `-vv -U` run for `n` packages.
    fn plan(&self, out: std::process::Output, n: usize) -> Result<Plan> {
        let stderr = self.transaction_output(out, "-vv -U")?;
        let elements = elements(&stderr);
        let (order, erase) = order(&stderr);
        // rpm leaves out packages it finds redundant when it adds them
        // (and says so): fewer elements than packages is its answer, none
        // or more is not.
        if order.len() > n || (order.is_empty() && n > 0) {
            return Err(Error::Answer {
                what: "--test -vv -U",
                why: format!("it ordered {} element(s) for {} package(s)", order.len(), n),
            });
        }
        Ok(Plan {
            order,
            erase,
            elements,
            dropped: dropped(&stderr),
        })
    }

    /// Register `packages` in the database in one transaction (`rpm -U
    /// --justdb`, header only): installs, and upgrades that replace the
    /// installed version's entry. Nothing is placed and no scriptlet runs.
    /// Dependencies are not checked again (see [`Rpm::check`]).
    pub fn register(&self, packages: &[PathBuf], replacefiles: bool) -> Result<()> {
        self.register_as(
            packages,
            &Check {
                replacefiles,
                ..Check::default()
            },
        )
    }

    /// [`Rpm::register`] as `check` says: `check.install` registers beside
    /// the installed versions (`rpm -i --justdb`); `check.nodeps` is
    /// ignored (dependencies are not checked again).
    pub fn register_as(&self, packages: &[PathBuf], check: &Check) -> Result<()> {
        if packages.is_empty() {
            return Ok(());
        }
        let mut c = self.command();
        self.install_args(
            &mut c,
            &Check {
                nodeps: true,
                ..*check
            },
        );
        // The files are in place already: rpm's disk-space check would
        // count them a second time and refuse a nearly full root.
        c.args(["--ignoresize", check.mode()]).args(packages);
        self.transaction(c, "--justdb -U/-i").map(drop)
    }

    /// Run an rpm transaction command: its problems (in rpm's words) or
    /// another failure as an error, else its stderr (the `-vv` trace).
    fn transaction(&self, c: Command, what: &'static str) -> Result<String> {
        let out = self.run(c)?;
        self.transaction_output(out, what)
    }

    fn transaction_output(&self, out: std::process::Output, what: &'static str) -> Result<String> {
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let problems = problems(&stderr);
        if !problems.is_empty() {
            return Err(Error::Problems { problems });
        }
        if !out.status.success() {
            return Err(rpm_failed(what, &out));
        }
        Ok(stderr)
    }

    /// Remove the entries of `nevras` from the database, header only
    /// (`rpm -e --justdb --nodeps --noscripts --notriggers`): nothing in
    /// the root is touched.
    pub fn unregister(&self, nevras: &[String]) -> Result<()> {
        if nevras.is_empty() {
            return Ok(());
        }
        let mut c = self.command();
        if self.force_debian {
            c.arg("--force-debian");
        }
        c.args(["-e", "--justdb", "--nodeps", "--noscripts", "--notriggers"])
            .args(nevras);
        let out = self.run(c)?;
        if !out.status.success() {
            return Err(rpm_failed("-e --justdb", &out));
        }
        Ok(())
    }

    /// The installed packages named `names` (every instance of each), as
    /// rpm's database holds them. Names that are not installed are left
    /// out.
    pub fn installed(&self, names: &[&str]) -> Result<Vec<Installed>> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let mut c = self.command();
        c.args(["-q", "--xml"]).args(names);
        let out = self.run(c)?;
        // rpm exits non-zero when some name is not installed; those are
        // reported as "package X is not installed" on stdout.
        match std::str::from_utf8(&out.stdout) {
            Ok(xml) => installed::parse(xml),
            // Never a lossy file list: a name read wrong is a file that
            // is not removed, or a config file taken for unowned.
            Err(_) => Err(Error::NotUtf8Installed(self.not_utf8(names)?)),
        }
    }

    /// Which of `names` have an answer to `-q --xml` that is not UTF-8.
    fn not_utf8(&self, names: &[&str]) -> Result<Vec<String>> {
        let mut bad = Vec::new();
        for name in names {
            let mut c = self.command();
            c.args(["-q", "--qf", "%{NEVRA}\\n[%{FILENAMES}\\n]", name]);
            let out = self.run(c)?;
            if std::str::from_utf8(&out.stdout).is_err() {
                let nevra = out.stdout.split(|&b| b == b'\n').next().unwrap_or_default();
                bad.push(String::from_utf8_lossy(nevra).into_owned());
            }
        }
        Ok(bad)
    }

    /// The installed owners of `paths`: (path, package name) for every
    /// owner, from one `rpm -qf` that lists each owner's files.
    pub fn owners(&self, paths: &[&str]) -> Result<Vec<(String, String)>> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let wanted: std::collections::HashSet<&str> = paths.iter().copied().collect();
        let mut c = self.command();
        c.args(["-qf", "--qf", "[%{FILENAMES}\\t%{NAME}\\n]"])
            .args(paths);
        let out = self.run(c)?;
        // Unowned paths make rpm exit 1 ("not owned by any package").
        let mut v = Vec::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((path, name)) = line.rsplit_once('\t') {
                if wanted.contains(path) {
                    v.push((path.to_string(), name.to_string()));
                }
            }
        }
        v.sort();
        v.dedup();
        Ok(v)
    }

    /// Every installed package's NEVRA.
    pub fn all(&self) -> Result<Vec<String>> {
        let mut c = self.command();
        c.args(["-qa", "--qf", "%{NEVRA}\\n"]);
        let out = self.run(c)?;
        if !out.status.success() {
            return Err(rpm_failed("-qa", &out));
        }
        Ok(String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect())
    }

    /// Every trigger and file trigger of the installed packages: who owns
    /// it, its kind, its flags and what it watches.
    ///
    /// rpm prints a package's array tags together only when they have the
    /// same number of elements, so the NEVRA (one string) is taken as a
    /// scalar (`%{=NEVRA}`) next to each trigger array. Otherwise rpm 4.18
    /// prints `error: incorrect format: array iterator used with different
    /// sized arrays` for every package with more than one trigger entry,
    /// leaves the package out and still exits 0: any `error:` line in its
    /// answer is therefore an error here.
    pub fn installed_triggers(&self) -> Result<Vec<Trigger>> {
        let mut c = self.command();
        c.args(["-qa", "--qf", TRIGGER_QUERY]);
        let out = self.run(c)?;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let bad = stderr.lines().find(|l| l.starts_with("error:"));
        if !out.status.success() || bad.is_some() {
            return Err(Error::Rpm {
                what: "-qa --qf (triggers)",
                status: out.status.to_string(),
                stderr: bad.map_or_else(|| stderr.trim().to_string(), str::to_string),
            });
        }
        parse_triggers(&String::from_utf8_lossy(&out.stdout))
    }
}

/// The query of [`Rpm::installed_triggers`]: one line per trigger entry,
/// `NEVRA TAB kind TAB flags TAB watched` (kind `t` name trigger, `f` file
/// trigger, `F` transaction file trigger).
const TRIGGER_QUERY: &str = "[%{=NEVRA}\\tt\\t%{TRIGGERFLAGS}\\t%{TRIGGERNAME}\\n]\
[%{=NEVRA}\\tf\\t%{FILETRIGGERFLAGS}\\t%{FILETRIGGERNAME}\\n]\
[%{=NEVRA}\\tF\\t%{TRANSFILETRIGGERFLAGS}\\t%{TRANSFILETRIGGERNAME}\\n]";

/// rpm's trigger sense flags (`rpmds.h`).
pub mod sense {
    /// `%triggerin`, `%filetriggerin`, `%transfiletriggerin`.
    pub const TRIGGERIN: u32 = 1 << 16;
    /// `%triggerun`, `%filetriggerun`, `%transfiletriggerun`.
    pub const TRIGGERUN: u32 = 1 << 17;
    /// `%triggerpostun`, `%filetriggerpostun`, `%transfiletriggerpostun`.
    pub const TRIGGERPOSTUN: u32 = 1 << 18;
    /// `%triggerprein`.
    pub const TRIGGERPREIN: u32 = 1 << 25;
    /// All four.
    pub const ALL: u32 = TRIGGERIN | TRIGGERUN | TRIGGERPOSTUN | TRIGGERPREIN;
}

/// One trigger entry of an installed package.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Trigger {
    /// The package that owns it (NEVRA).
    pub owner: String,
    /// `%trigger`, `%filetrigger` or `%transfiletrigger`.
    pub kind: &'static str,
    /// rpm's flags ([`sense`]: when it fires).
    pub flags: u32,
    /// A package name (`%trigger`) or a path prefix (file triggers).
    pub watched: String,
}

fn parse_triggers(stdout: &str) -> Result<Vec<Trigger>> {
    let mut v = Vec::new();
    for line in stdout.lines() {
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        let bad = || Error::Answer {
            what: "-qa --qf (triggers)",
            why: format!("unexpected line `{line}`"),
        };
        let [owner, k, flags, watched] = f[..] else {
            return Err(bad());
        };
        let kind = match k {
            "t" => "%trigger",
            "f" => "%filetrigger",
            "F" => "%transfiletrigger",
            _ => return Err(bad()),
        };
        v.push(Trigger {
            owner: owner.to_string(),
            kind,
            flags: flags.parse().map_err(|_| bad())?,
            watched: watched.to_string(),
        });
    }
    v.sort();
    v.dedup();
    Ok(v)
}

fn rpm_failed(what: &'static str, out: &std::process::Output) -> Error {
    Error::Rpm {
        what,
        status: out.status.to_string(),
        stderr: String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.starts_with("D: "))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// rpm's problem lines: the indented lines after `error: Failed
/// dependencies:`, and the indented lines rpm prints after `... problems
/// ...` (file conflicts, "already installed"), plus `error:` lines about a
/// package that cannot be read (a damaged header).
pub fn problems(stderr: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in stderr.lines() {
        if line.starts_with("D: ") {
            continue;
        }
        if let Some(p) = line.strip_prefix('\t') {
            out.push(p.trim().to_string());
        } else if let Some(e) = line.strip_prefix("error: ") {
            if e != "Failed dependencies:" {
                out.push(e.trim().to_string());
            }
        }
    }
    out
}

/// What rpm says, when verbose, of each package it leaves out as it adds
/// the transaction's packages: `package A was already added, skipping B`
/// (B is an older version of A's name, the same package again, or a
/// package A obsoletes) and `package A was already added, replacing with
/// B` (A is left out: B is newer, or obsoletes it). The lines without
/// rpm's `warning: ` prefix.
pub fn dropped(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("warning: "))
        .filter(|l| {
            l.starts_with("package ")
                && (l.contains(" was already added, skipping ")
                    || l.contains(" was already added, replacing with "))
        })
        .map(str::to_string)
        .collect()
}

/// The transaction order from rpm's `-vv` trace: after `tsorting
/// packages`, one line per element, `D: ORDER PRED SUCC DEPTH +NEVRA`
/// (`-` for erasures): installs and erasures.
pub fn order(stderr: &str) -> (Vec<String>, Vec<String>) {
    let mut out = Vec::new();
    let mut erase = Vec::new();
    for (added, nevra) in elements(stderr) {
        if added {
            out.push(nevra);
        } else {
            erase.push(nevra);
        }
    }
    (out, erase)
}

/// The elements of the `-vv` trace's order, installs and erasures as
/// they come (see [`order`]).
pub fn elements(stderr: &str) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let mut on = false;
    for line in stderr.lines() {
        if line.contains("tsorting packages") {
            on = true;
            continue;
        }
        if !on {
            continue;
        }
        let Some(rest) = line.strip_prefix("D:") else {
            break;
        };
        let f: Vec<&str> = rest.split_whitespace().collect();
        if f.len() != 5 || !f[..4].iter().all(|n| n.parse::<u64>().is_ok()) {
            break;
        }
        if let Some(nevra) = f[4].strip_prefix('+') {
            out.push((true, nevra.to_string()));
        } else if let Some(nevra) = f[4].strip_prefix('-') {
            out.push((false, nevra.to_string()));
        } else {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_from_trace() {
        let t = "D: ========== recording tsort relations\n\
                 D: ========== tsorting packages (order, #predecessors, #succesors, depth)\n\
                 D:     0    0    0    1   +conf2-1.0-1.noarch\n\
                 D:     1    0    0    1   -old-1.0-1.noarch\n\
                 D:     2    1    0    2   +pkga-1:1.0-1.noarch\n\
                 D: installing in order\n";
        let (i, e) = order(t);
        assert_eq!(i, ["conf2-1.0-1.noarch", "pkga-1:1.0-1.noarch"]);
        assert_eq!(e, ["old-1.0-1.noarch"]);
        assert!(order("D: nothing\n").0.is_empty());
    }

    #[test]
    fn dropped_from_trace() {
        let t = "D: loading keyring\n\
                 warning: package versiontest-1.0-1.noarch was already added, replacing with versiontest-2.0-1.noarch\n\
                 warning: package versiontest-2.0-1.noarch was already added, skipping versiontest-1.0-1.noarch\n\
                 warning: package versiontest-2.0-1.noarch: header V4 RSA/SHA256 Signature, key ID 1: NOKEY\n\
                 D: package x was already added, skipping y\n";
        assert_eq!(
            dropped(t),
            [
                "package versiontest-1.0-1.noarch was already added, replacing with versiontest-2.0-1.noarch",
                "package versiontest-2.0-1.noarch was already added, skipping versiontest-1.0-1.noarch",
            ]
        );
        assert!(dropped("warning: package a was added\n").is_empty());
    }

    #[test]
    fn check_as_rpm_options() {
        let c = Check::default();
        assert_eq!((c.mode(), c.filters()), ("-U", vec![]));
        let c = Check {
            install: true,
            ..Check::default()
        };
        assert_eq!(c.mode(), "-i");
        // rpm's --force: these three filters.
        let force = Check {
            replacefiles: true,
            oldpackage: true,
            replacepkgs: true,
            ..Check::default()
        };
        assert_eq!(
            force.filters(),
            ["--replacefiles", "--oldpackage", "--replacepkgs"]
        );
        let c = Check {
            reinstall: true,
            nodeps: true,
            ..Check::default()
        };
        assert_eq!((c.mode(), c.filters()), ("--reinstall", vec!["--nodeps"]));
        let c = Check {
            freshen: true,
            oldpackage: true,
            ..Check::default()
        };
        assert_eq!((c.mode(), c.filters()), ("-F", vec!["--oldpackage"]));
    }

    #[test]
    fn triggers_from_answer() {
        let t = parse_triggers(
            "t-trig-1-1.noarch\tt\t65536\tt-a\nt-trig-1-1.noarch\tt\t131072\tt-a\n\
             f-1-1.noarch\tf\t65536\t/usr/share/a b\n",
        )
        .unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0].kind, "%filetrigger");
        assert_eq!(t[0].watched, "/usr/share/a b");
        assert_eq!(t[2].flags, sense::TRIGGERUN);
        assert!(parse_triggers("x\t(none)\n").is_err());
    }

    #[test]
    fn problems_from_stderr() {
        let e = "D: x\nerror: Failed dependencies:\n\t/bin/sh is needed by a-1-1.noarch\n";
        assert_eq!(problems(e), ["/bin/sh is needed by a-1-1.noarch"]);
        let e = "\tfile /x from install of b-1-1.noarch conflicts with file from package a-1-1.noarch\n";
        assert_eq!(problems(e).len(), 1);
        assert!(problems("D: only debug\nwarning: w\n").is_empty());
    }
}
