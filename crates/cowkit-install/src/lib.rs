//! Installing RPM packages into a root directory: from an extents file by
//! cloning blocks, or from a plain `.rpm` by streaming the payload.
//!
//! Everything about a file (path, type, owner, mode, mtime, capabilities,
//! hardlinks) comes from the package's verified main header; the payload
//! or the extents file only supply content. Each entry is created under a
//! temporary name inside its parent directory, which is resolved inside
//! the root (`openat2(RESOLVE_IN_ROOT)`, see [`cowkit_fs::root`]), and
//! renamed into place once its content and metadata are complete. From a
//! `.rpm`, each file's content is checked against its header digest before
//! the rename.
//!
//! ```no_run
//! use std::path::Path;
//! use cowkit_fs::root::Root;
//! use cowkit_install::{install, NoProgress, Options, Owners};
//!
//! let root = Root::open(Path::new("/tmp/root"))?;
//! let owners = Owners::load(&root);
//! let summary = install(&root, &owners, Path::new("pkg.rpme"), &Options::default(), &NoProgress)?;
//! println!("{} files, {} bytes cloned", summary.files, summary.tally.bytes.cloned);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

use std::fs::File;
use std::path::{Path, PathBuf};

use cowkit_fs::root::Root;
use cowkit_fs::{Chain, IoError, Tally};
use serde::Serialize;

mod action;
mod config;
mod elem;
mod extents;
pub mod fate;
pub mod interrupt;
pub mod journal;
mod load;
pub mod nosync;
pub mod owners;
mod pkg;
mod placement;
pub mod plan;
mod prepared;
mod refuse;
mod runner;
pub mod scripts;
mod stream;
mod target;
pub mod txn;
mod verify;

pub use journal::pending as recovery_pending;
pub use owners::Owners;
pub use prepared::{Handed, InstallOnly, Prepared, Recovery, Stager, TxOptions, TxSummary};
pub use txn::{prepare, recover, transaction};

/// The host rpm's answers a transaction needs (its generation, the macros
/// of its file policy), asked on a thread of their own while the caller
/// does something else (dnf resolving): each is kept for the process, so
/// the transaction that follows finds them answered. A failure is left
/// for the transaction to ask again and report. Joined when dropped.
pub struct AskedAhead(Option<std::thread::JoinHandle<()>>);

/// Ask the host rpm's answers ahead ([`AskedAhead`]).
pub fn ask_host_ahead() -> AskedAhead {
    AskedAhead(Some(std::thread::spawn(|| {
        let _ = cowkit_rpmdb::check_generation();
        let _ = fate::Policy::from_host(false, Vec::new(), None);
    })))
}

impl Drop for AskedAhead {
    fn drop(&mut self) {
        if let Some(t) = self.0.take() {
            let _ = t.join();
        }
    }
}

/// What can go wrong installing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A filesystem operation failed (paths inside the root as seen from
    /// the host; an `IoError` converts into this).
    #[error(transparent)]
    Fs(#[from] cowkit_fs::Error),
    /// The package failed a check or could not be read.
    #[error(transparent)]
    Package(#[from] cowkit_archive::rpm::Error),
    /// The extents file is damaged or could not be read.
    #[error(transparent)]
    Extents(#[from] cowkit_extents::Error),
    /// A file named `.rpme` has no extents footer and is no plain package
    /// either: an extents file cut short.
    #[error("`{}` is a truncated extents file: its footer is missing", path.display())]
    TruncatedExtents {
        /// The file.
        path: PathBuf,
    },
    /// A path in the package cannot be placed inside the root.
    #[error(transparent)]
    BadPath(#[from] cowkit_fs::root::BadPath),
    /// A file's capabilities in the header cannot be encoded.
    #[error("`{path}` has file capabilities that cannot be set")]
    Caps {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: cowkit_fs::caps::CapsError,
    },
    /// The root's rpm database refused or failed.
    #[error(transparent)]
    Db(#[from] cowkit_rpmdb::Error),
    /// Package files whose paths cannot be placed inside the root: the
    /// transaction is refused whole, before anything is touched.
    #[error("cannot place these packages' files inside the root: {}", .problems.join("; "))]
    Unplaceable {
        /// One line per package, naming it and its first such path.
        problems: Vec<String>,
    },
    /// Scriptlets or triggers that cowkit cannot run as rpm would.
    #[error("cannot run these as rpm would: {}", .problems.join("; "))]
    Unsupported {
        /// One line per scriptlet or trigger, naming the package.
        problems: Vec<String>,
    },
    /// Installed packages the transaction would erase that are not the old
    /// version it replaces: rpm erases what a new package `Obsoletes`, and
    /// every other installed instance of an upgraded name.
    #[error("the transaction would erase installed packages, which cowkit does not do: {}", .problems.join("; "))]
    WouldErase {
        /// One line per package, naming it and why.
        problems: Vec<String>,
    },
    /// A new version of an install-only package (dnf's `installonlypkgs`:
    /// kernels) whose older version is installed: `rpm -U` erases the old
    /// one, dnf keeps both; cowkit does neither without being told which.
    #[error("{}", .problems.join("; "))]
    InstallOnly {
        /// One line per package, naming it and the installed versions.
        problems: Vec<String>,
    },
    /// A root given as a relative path to a transaction that runs
    /// scriptlets (chrooted into it) or uses the rpm database: rpm refuses
    /// one too (`--root` must begin with a `/`).
    #[error("the root `{}` is not an absolute path (rpm refuses one too: `--root` must begin with a /)", .path.display())]
    RelativeRoot {
        /// The path given.
        path: PathBuf,
    },
    /// Running scriptlets without sync calls: setting it up, or the final
    /// `syncfs` of the root's filesystems (a writeback error).
    #[error("scriptlets without sync calls")]
    Nosync(#[source] cowkit_nosync::Error),
    /// Two package files of one NEVRA that cowkit cannot tell apart as
    /// rpm would: different packages (rpm's check names the NEVRA it keeps,
    /// not the file), or any two without the database (`--no-db`: nothing
    /// decides as rpm would which one goes).
    #[error("`{}` and `{}` are both {nevra}: {why}", .first.display(), .second.display())]
    Duplicate {
        /// Its NEVRA.
        nevra: String,
        /// Why that is refused.
        why: &'static str,
        /// One file.
        first: PathBuf,
        /// The other.
        second: PathBuf,
    },
    /// A directory of the root is a symlink that rpm does not follow: it
    /// follows a symlink to a directory only when root or the
    /// directory's owner owns the link (`fsmOpenat` in `lib/fsm.c`).
    #[error("`{}` is a symlink owned by uid {link_uid} to a directory owned by uid {dir_uid}: rpm follows only symlinks owned by root or by the directory's owner", path.display())]
    UnsafeSymlink {
        /// The symlink.
        path: PathBuf,
        /// Its owner.
        link_uid: u32,
        /// The owner of the directory it leads to.
        dir_uid: u32,
    },
    /// rpm's Lua (the host process running `<lua>` scriptlets) failed.
    #[error("rpm's Lua")]
    Lua(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// A `<lua>` scriptlet reached the runner without rpm's Lua (the
    /// transaction should have refused it up front).
    #[error("{name}: a <lua> scriptlet, and rpm's Lua is not loaded")]
    NoLua {
        /// rpm's name for the scriptlet.
        name: String,
    },
    /// A critical scriptlet (`%pretrans`, `%pre`, `%preun`) failed.
    #[error("{package}: {phase} scriptlet failed ({status})")]
    ScriptFailed {
        /// The package's NEVRA.
        package: String,
        /// The scriptlet.
        phase: &'static str,
        /// How it ended.
        status: String,
    },
    /// The transaction's check, running while this package's files were
    /// placed unseen ([`Gate`]), did not pass: nothing of the package was
    /// made visible. The check's own error is the transaction's.
    #[error("not placed: the transaction's check did not pass")]
    Refused,
    /// The package is not the one that was checked.
    #[error(
        "`{path}` is not the package that was checked: header digest {found}, expected {expected}"
    )]
    NotTheCheckedPackage {
        /// The file.
        path: PathBuf,
        /// Its header digest.
        found: String,
        /// The checked one's.
        expected: String,
    },
    /// A file placed from an extents file does not match its header
    /// digest (`--verify`); it was not given its name.
    #[error("`{path}` does not match its header digest: the extents file is damaged or was altered; the file was not installed under its name")]
    DigestMismatch {
        /// The file (its final name).
        path: PathBuf,
    },
    /// An extents file whose owner or mode lets others change it.
    #[error("`{path}` {why}: an extents file's content is trusted without --verify, so it must be as protected as the root it installs into")]
    UntrustedExtents {
        /// The extents file.
        path: PathBuf,
        /// Who else could write it.
        why: String,
    },
    /// Transaction options that cannot be honoured together, or not as
    /// rpm honours them.
    #[error("{why}")]
    Options {
        /// Which options, and why.
        why: String,
    },
    /// A package could not be staged for installing (decoded by the
    /// confined worker).
    #[error("cannot decode `{path}`: {why}")]
    Staging {
        /// The package.
        path: PathBuf,
        /// What went wrong, causes joined.
        why: String,
    },
    /// The transaction journal a killed run left cannot be used: not
    /// read (owner, mode, size, content), or what it describes cannot be
    /// finished.
    #[error("the transaction journal `{}`: {why}", path.display())]
    Journal {
        /// The journal.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// Doing again the interrupted transaction a journal describes failed.
    #[error("cannot finish the interrupted transaction of the journal `{}`", path.display())]
    Interrupted {
        /// The journal.
        path: PathBuf,
        /// What failed.
        #[source]
        source: Box<Error>,
    },
    /// `--verify` found installed files that do not match the header.
    #[error("{count} installed file(s) do not match their header digest, first `{first}`")]
    VerifyFailed {
        /// How many.
        count: usize,
        /// The first one.
        first: PathBuf,
    },
}

impl From<cowkit_fs::IoError> for Error {
    fn from(e: cowkit_fs::IoError) -> Self {
        Error::Fs(e.into())
    }
}

/// `Result` with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Installer settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Methods to use for cloned extents.
    pub chain: Chain,
    /// Threads for one extents-file install.
    pub threads: usize,
    /// Re-hash every installed regular file against the header.
    pub verify: bool,
    /// Clone a file's partial last block and truncate (true), or write
    /// the tail (false). Measured (`bench/pack-below.sh`): writing is
    /// cheaper on XFS, whose truncate must unshare the block it cuts;
    /// cloning is cheaper on Btrfs. [`clone_tail_pays_off`] decides by the
    /// root's filesystem.
    pub clone_tail: bool,
    /// Files placed under another name in their directory (header path →
    /// new last component): rpm's `.rpmnew`, or a temporary name for a
    /// new version that is dropped afterwards.
    pub rename: std::collections::HashMap<cowkit_archive::files::Name, std::ffi::OsString>,
    /// Files (header indices) not placed: rpm's actions that skip them
    /// ([`fate::Action`]).
    pub skip: std::collections::HashSet<u32>,
    /// Files (header indices, regular files and symlinks without
    /// hardlinks) that rpm touches ([`fate::Action::Touch`]): when the
    /// entry is there, only its metadata is set; otherwise it is created.
    pub touch: std::collections::HashSet<u32>,
    /// Set no file capabilities (rpm's `--nocaps`): the database still
    /// records them.
    pub nocaps: bool,
    /// The header digest (rpm's `%{SHA256HEADER}`) the package must have:
    /// a transaction checked one file and installs another with the same
    /// header (its extents file).
    pub expect_header: Option<String>,
    /// Wait for this before changing anything that can be seen in the
    /// root ([`Gate`]).
    pub gate: Option<Gate>,
}

/// A verdict that an install waits for before it changes anything that
/// can be seen in the root: rpm's check of a new root's transaction, which
/// runs while the packages' new directories are built unseen. Until it
/// passes, files go only into those directories (under temporary names);
/// creating an entry in an existing directory, or renaming a new tree into
/// place, first waits for it. When it fails, every install waiting on it
/// fails with [`Error::Refused`] and takes its new trees away. Clones share
/// one verdict, asked for once.
#[derive(Clone)]
pub struct Gate(std::sync::Arc<std::sync::Mutex<Verdict>>);

type Ask = Box<dyn FnOnce() -> Result<()> + Send>;

enum Verdict {
    Pending(Ask),
    Asking,
    Passed,
    Failed(Option<Error>),
}

impl Gate {
    /// A gate whose verdict `ask` gives (it runs once, in the first
    /// thread that needs the answer).
    pub fn new(ask: impl FnOnce() -> Result<()> + Send + 'static) -> Gate {
        Gate(std::sync::Arc::new(std::sync::Mutex::new(
            Verdict::Pending(Box::new(ask)),
        )))
    }

    /// Wait for the verdict: `Ok` when it passed, else [`Error::Refused`].
    pub fn pass(&self) -> Result<()> {
        self.verdict().map(drop)
    }

    /// Wait for the verdict: the proof that it passed ([`Passed`]), else
    /// [`Error::Refused`].
    pub(crate) fn verdict(&self) -> Result<Passed> {
        let mut v = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Verdict::Pending(_) = &*v {
            let Verdict::Pending(ask) = std::mem::replace(&mut *v, Verdict::Asking) else {
                unreachable!("matched above");
            };
            // Asked with the lock held: the others wait for the answer.
            *v = match ask() {
                Ok(()) => Verdict::Passed,
                Err(e) => Verdict::Failed(Some(e)),
            };
        }
        match &*v {
            Verdict::Passed => Ok(Passed(())),
            _ => Err(Error::Refused),
        }
    }

    /// The verdict an install waits for: `gate`'s, or, with no gate, the
    /// one given before the install began (rpm's check ran first, or the
    /// caller asked for none).
    pub(crate) fn verdict_of(gate: Option<&Gate>) -> Result<Passed> {
        match gate {
            Some(g) => g.verdict(),
            None => Ok(Passed(())),
        }
    }

    /// The verdict's own error, for the one who owns the transaction
    /// (asked first if no install needed it); `None` when it passed.
    pub fn error(&self) -> Option<Error> {
        let _ = self.pass();
        match &mut *self.0.lock().unwrap_or_else(|e| e.into_inner()) {
            Verdict::Failed(e) => Some(e.take().unwrap_or(Error::Refused)),
            _ => None,
        }
    }
}

/// The proof that the verdict an install waits for has passed
/// ([`Gate`]): the leave to change what can be seen in the root. Only
/// [`Gate::verdict`] and [`Gate::verdict_of`] make one, so every step that
/// makes an entry visible, or changes one that is, takes it as an
/// argument and cannot run before the check has passed.
#[derive(Debug)]
pub(crate) struct Passed(());

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &*self.0.lock().unwrap_or_else(|e| e.into_inner()) {
            Verdict::Pending(_) | Verdict::Asking => "pending",
            Verdict::Passed => "passed",
            Verdict::Failed(_) => "failed",
        };
        f.debug_tuple("Gate").field(&state).finish()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options {
            chain: Chain::AUTO,
            threads: 1,
            verify: false,
            clone_tail: false,
            rename: std::collections::HashMap::new(),
            skip: std::collections::HashSet::new(),
            touch: std::collections::HashSet::new(),
            nocaps: false,
            expect_header: None,
            gate: None,
        }
    }
}

/// Told about progress; called from several threads.
pub trait Progress: Sync {
    /// `bytes` of file content were installed.
    fn on_bytes(&self, _bytes: u64) {}
    /// A regular file (or a hardlink) got its name in the root.
    fn on_file(&self) {}
    /// `files` reported by [`Progress::on_file`] were taken away again:
    /// they were in new directories of a package that then failed, which
    /// are removed whole (see `docs/install.md`).
    fn on_files_removed(&self, _files: u64) {}
}

/// Counts the files one package placed, passing everything on.
pub(crate) struct Counting<'a> {
    pub inner: &'a dyn Progress,
    pub files: std::sync::atomic::AtomicU64,
}

impl Progress for Counting<'_> {
    fn on_bytes(&self, bytes: u64) {
        self.inner.on_bytes(bytes);
    }
    fn on_file(&self) {
        self.files
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.on_file();
    }
    fn on_files_removed(&self, files: u64) {
        self.files
            .fetch_sub(files, std::sync::atomic::Ordering::Relaxed);
        self.inner.on_files_removed(files);
    }
}

/// A [`Progress`] that ignores everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoProgress;
impl Progress for NoProgress {}

/// What an install did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    /// Packages installed.
    pub packages: u64,
    /// Regular files created (each hardlink member counts).
    pub files: u64,
    /// Of which hardlinks to another member.
    pub hardlinks: u64,
    /// Regular files and symlinks rpm touches (already the package's on
    /// disk: only their metadata set), counted in `files`/`symlinks`.
    pub touched: u64,
    /// Directories of the packages.
    pub directories: u64,
    /// Symlinks.
    pub symlinks: u64,
    /// Fifos, sockets and device nodes.
    pub nodes: u64,
    /// Device nodes skipped (not root).
    pub skipped_nodes: u64,
    /// Ghost files (not installed).
    pub ghosts: u64,
    /// Content moved: bytes and files per method (`cloned`: shared
    /// blocks, `copied`: `copy_file_range`, `written`: through user
    /// space), and why cloning fell back, with how many files each reason
    /// affected (the shape `cowkit cp` reports too).
    #[serde(flatten)]
    pub tally: Tally,
    /// Regular files re-hashed by `--verify`.
    pub verified: u64,
    /// Warnings (unknown owners, skipped nodes).
    pub warnings: Vec<String>,
}

impl Summary {
    /// Add `other` into `self`.
    pub fn add(&mut self, other: Summary) {
        self.packages += other.packages;
        self.files += other.files;
        self.hardlinks += other.hardlinks;
        self.touched += other.touched;
        self.directories += other.directories;
        self.symlinks += other.symlinks;
        self.nodes += other.nodes;
        self.skipped_nodes += other.skipped_nodes;
        self.ghosts += other.ghosts;
        self.tally.add(&other.tally);
        self.verified += other.verified;
        for w in other.warnings {
            if !self.warnings.contains(&w) {
                self.warnings.push(w);
            }
        }
    }
}

/// Whether cloning partial last blocks (and truncating) is the faster
/// choice for `root`'s filesystem: true on Btrfs, false elsewhere.
pub fn clone_tail_pays_off(root: &Root) -> bool {
    const BTRFS_SUPER_MAGIC: u64 = 0x9123_683e;
    rustix::fs::fstatfs(root.fd()).is_ok_and(|st| st.f_type as u64 == BTRFS_SUPER_MAGIC)
}

/// Install the package at `package` (an extents file or a plain `.rpm`)
/// into `root`.
pub fn install(
    root: &Root,
    owners: &Owners,
    package: &Path,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Summary> {
    let file = File::open(package)
        .map_err(|source| Error::from(IoError::new("open", package.to_path_buf(), source)))?;
    install_file(root, owners, file, package, opts, progress)
}

/// [`install`] from the package opened already as `file`, read from its
/// start; `package` names it in messages (and, ending in `.rpme`, marks a
/// file without an extents footer as a truncated extents file).
pub(crate) fn install_file(
    root: &Root,
    owners: &Owners,
    file: File,
    package: &Path,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Summary> {
    let is_extents = cowkit_extents::open::is_extents_file(&file)
        .map_err(|source| Error::from(IoError::new("read", package.to_path_buf(), source)))?;
    if !is_extents {
        check_not_truncated_extents(&file, package)?;
    }
    let mut summary = if is_extents {
        extents::install(root, owners, file, package, opts, progress)?
    } else {
        stream::install(root, owners, file, package, opts, progress)?
    };
    summary.packages = 1;
    summary.warnings.extend(owners.warnings());
    Ok(summary)
}

/// [`install`] from an extents file opened already (its header was read
/// for the transaction's check): the header is not parsed again.
pub(crate) fn install_extents(
    root: &Root,
    owners: &Owners,
    x: &cowkit_extents::open::ExtentsFile,
    path: &Path,
    opts: &Options,
    progress: &dyn Progress,
) -> Result<Summary> {
    let mut summary = extents::install_open(root, owners, x, path, opts, progress)?;
    summary.packages = 1;
    summary.warnings.extend(owners.warnings());
    Ok(summary)
}

/// A file named `*.rpme` without an extents footer is refused as a
/// truncated extents file unless it reads as a plain package: headers
/// complete and a payload that starts as the header's compressor says.
/// (Without this, the data area would be reported as a damaged payload.)
/// Leaves `file`'s offset at 0.
pub(crate) fn check_not_truncated_extents(file: &File, path: &Path) -> Result<()> {
    use std::io::{Seek, SeekFrom};
    if path.extension().is_none_or(|e| e != "rpme") {
        return Ok(());
    }
    let mut r = std::io::BufReader::new(file);
    let plain = cowkit_archive::rpm::Package::read(&mut r)
        .ok()
        .is_some_and(|pkg| pkg.decoder(&mut r).is_ok());
    (&*file)
        .seek(SeekFrom::Start(0))
        .map_err(|source| Error::from(IoError::new("read", path.to_path_buf(), source)))?;
    if plain {
        Ok(())
    } else {
        Err(Error::TruncatedExtents {
            path: path.to_path_buf(),
        })
    }
}

/// What both install paths do after the regular files: symlinks and
/// nodes, the new directories renamed into place, directory metadata
/// (deepest first), and `--verify`.
fn finish(
    target: &mut target::Target<'_>,
    files: &cowkit_archive::files::FileList,
    places: &[Option<target::Place>],
    opts: &Options,
    s: &mut Summary,
    verified_inline: bool,
) -> Result<()> {
    use cowkit_archive::files::Kind;
    for (f, p) in files.files.iter().zip(places) {
        let Some(p) = p else {
            if f.ghost {
                s.ghosts += 1;
            }
            continue;
        };
        match f.kind {
            Kind::Regular | Kind::Directory => {}
            Kind::Symlink => {
                if opts.touch.contains(&f.index) && target.touch(f, p)? {
                    s.touched += 1;
                } else {
                    target.symlink(f, p)?;
                }
                s.symlinks += 1;
            }
            _ => {
                if target.node(f, p)? {
                    s.nodes += 1;
                } else {
                    s.skipped_nodes += 1;
                    s.warnings.push(format!(
                        "device node `{}` skipped: creating device nodes needs root",
                        f.path
                    ));
                }
            }
        }
    }
    // The new trees become visible with the check's verdict only.
    let passed = target.verdict()?;
    target.publish(passed)?;
    s.directories += target.finish_dirs(files, places)? as u64;
    if opts.verify && !verified_inline {
        s.verified += verify::verify(target, files, places)?;
    }
    Ok(())
}

/// Refuse a package whose header is not the one [`Options::expect_header`]
/// names.
fn check_expected(pkg: &cowkit_archive::rpm::Package, path: &Path, opts: &Options) -> Result<()> {
    match &opts.expect_header {
        Some(want) if want != pkg.header_digest() => Err(Error::NotTheCheckedPackage {
            path: path.to_path_buf(),
            found: pkg.header_digest().to_string(),
            expected: want.clone(),
        }),
        _ => Ok(()),
    }
}
