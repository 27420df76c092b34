//! One `cowkit dnf` run as the caller asks it ([`Request`]), what it hears
//! on the way ([`Events`]: the library prints nothing), and how it ended
//! ([`Outcome`], with the [`Summary`] of an install).

use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

use crate::line::Line;
use crate::stream::Reporter;

/// The cache's default directory.
pub const DEFAULT_CACHE: &str = "/var/cache/cowkit";

/// Who downloads the packages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Downloader {
    /// cowkit where it can fetch as dnf would, else dnf (said).
    Auto,
    /// cowkit; an error where it cannot fetch as dnf would.
    Cowkit,
    /// dnf (`--downloadonly`), then cowkit transcodes.
    Dnf,
}

/// The command that starts a confined transcode worker, with the key
/// files it checks header signatures against.
pub type WorkerCommand = fn(&[PathBuf]) -> io::Result<Command>;

/// How a transaction starts rpm's Lua (`None`: it cannot be loaded, and
/// `<lua>` scriptlets are refused up front). Called when the transaction's
/// options are made, after dnf resolved.
pub type LuaStarter = fn() -> Option<cowkit_install::txn::LuaStarter>;

/// One `cowkit dnf` run.
pub struct Request {
    /// The root (`--root` or dnf's `--installroot`).
    pub root: PathBuf,
    /// The cache of transcoded packages.
    pub cache: PathBuf,
    /// The rpm database inside the root.
    pub dbpath: Option<String>,
    /// Parallel jobs (at least 1).
    pub jobs: usize,
    /// Run no scriptlets.
    pub noscripts: bool,
    /// Let scriptlets' sync calls through.
    pub keep_syncs: bool,
    /// Who downloads.
    pub downloader: Downloader,
    /// dnf's output goes to stderr (stdout is kept for the caller's
    /// summary, or the caller shows only errors).
    pub stdout_to_stderr: bool,
    /// The scriptlets' stdout goes to stderr (stdout is kept for the
    /// caller's summary).
    pub scripts_to_stderr: bool,
    /// dnf's command line, read.
    pub line: Line,
    /// The transcode worker.
    pub worker: WorkerCommand,
    /// rpm's Lua for `<lua>` scriptlets.
    pub lua: LuaStarter,
}

impl Request {
    /// Sends dnf's stdout where the request says: to our stderr when our
    /// stdout is kept for the caller's summary.
    pub(crate) fn dnf_stdout(&self, c: &mut Command) -> Result<(), crate::error::RunError> {
        if self.stdout_to_stderr {
            use std::os::fd::AsFd;
            let err = std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map_err(crate::error::RunError::Stderr)?;
            c.stdout(std::process::Stdio::from(err));
        }
        Ok(())
    }
}

/// A run under way: the request, its root (open), and where its events go.
pub struct Run<'a> {
    /// The request.
    pub req: &'a Request,
    /// The root.
    pub root: &'a cowkit_fs::root::Root,
    /// Where notes and progress go.
    pub events: &'a dyn Events,
    /// Which dnf resolves.
    pub resolver: crate::shim::Resolver,
    /// The transaction flags dnf5 holds (its configuration files and its
    /// command line together, as its plugin wrote them), which replace
    /// cowkit's own reading of dnf's; `None` before dnf5 resolved, and
    /// with dnf 4.
    pub tsflags: Option<TxFlags>,
    /// The elements as dnf5 hands them to rpm ([`crate::dnf5::handed`]);
    /// empty before dnf5 resolved, and with dnf 4.
    pub handed: &'a [cowkit_install::Handed],
}

/// The transaction flags cowkit carries out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TxFlags {
    /// `nodocs`: rpm's `--excludedocs`.
    pub nodocs: bool,
    /// `justdb`: rpm's `--justdb`.
    pub justdb: bool,
}

/// A note on the way, for the user.
#[derive(Debug)]
pub enum Note<'a> {
    /// dnf did not say in which order it adds the packages (it is not
    /// dnf's own Python entry point): rpm orders them from their file
    /// names.
    NoOrder,
    /// dnf downloads the packages and cowkit transcodes them afterwards,
    /// for these reasons.
    DnfDownloads(&'a [String]),
    /// A damaged cache entry is transcoded again.
    Damaged {
        /// The entry.
        entry: &'a Path,
        /// What is wrong with it.
        why: &'a cowkit_extents::Error,
    },
    /// cowkit fetched and transcoded the plan's packages.
    Fetched {
        /// Packages transcoded as they arrived (or reused).
        transcoded: usize,
        /// Bytes received.
        bytes: u64,
        /// Seconds it took.
        seconds: f64,
        /// Found in the cache by checksum, not downloaded.
        cached: usize,
    },
}

/// What a run tells its caller as it goes.
pub trait Events: Sync {
    /// A transaction a killed run left was finished first.
    fn recovered(&self, recovery: &cowkit_install::Recovery);
    /// A note for the user.
    fn note(&self, note: Note<'_>);
    /// cowkit starts fetching: where the downloads' progress goes, until
    /// the returned reporter is dropped.
    fn fetching(&self) -> Box<dyn Reporter + '_>;
}

/// How a run ended (its errors are [`crate::RunError`]).
#[derive(Debug)]
pub enum Outcome {
    /// dnf ran the command itself (it installs nothing): its exit status.
    Dnf(i32),
    /// dnf's transaction has no package to install.
    Nothing,
    /// rpm's check (or cowkit) refused the whole transaction: nothing was
    /// changed.
    Refused(cowkit_install::Error),
    /// The transaction ran (it may have failed packages, as under rpm).
    Installed(Box<cowkit_install::TxSummary>, Summary),
}

/// What `cowkit dnf` adds to an install's summary.
#[derive(Debug, Serialize, Default)]
pub struct Summary {
    /// A transaction a killed run left, finished first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovered: Option<cowkit_install::Recovery>,
    /// Downloaded packages.
    pub downloaded: usize,
    /// Found in the cache / transcoded now / damaged entries replaced.
    pub cache_hits: usize,
    /// Transcoded now.
    pub cache_misses: usize,
    /// Damaged entries replaced.
    pub cache_damaged: Vec<String>,
    /// Seconds: dnf (resolve and download); transcoding the misses, with
    /// rpm's check of the transaction running at the same time (so
    /// `seconds.check` overlaps it).
    pub resolve_seconds: f64,
    /// Seconds transcoding (or fetching and transcoding).
    pub transcode_seconds: f64,
    /// Who downloaded (`cowkit` or `dnf`), and why not cowkit.
    pub downloaded_by: &'static str,
    /// Why not cowkit.
    pub fallback_reasons: Vec<String>,
    /// cowkit's downloads: found by checksum (nothing downloaded),
    /// bytes received, failed attempts (retried).
    pub not_downloaded: usize,
    /// Bytes received.
    pub downloaded_bytes: u64,
    /// Failed attempts (retried).
    pub failed_attempts: Vec<String>,
}

/// A request for the unit tests: `line` into `root` with `downloader`,
/// the default cache, no scriptlets' Lua and a worker that fails.
#[cfg(test)]
pub(crate) fn for_tests(root: &Path, line: Line, downloader: Downloader) -> Request {
    Request {
        root: root.to_path_buf(),
        cache: PathBuf::from(DEFAULT_CACHE),
        dbpath: None,
        jobs: 1,
        noscripts: false,
        keep_syncs: false,
        downloader,
        stdout_to_stderr: false,
        scripts_to_stderr: false,
        line,
        worker: |_| Ok(Command::new("false")),
        lua: || None,
    }
}
