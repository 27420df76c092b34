//! The crate's error: what failed, with the paths involved. Hints are the
//! caller's to add.

use std::path::PathBuf;

use crate::conf::Refusal;

/// What can go wrong in the dnf pipeline.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `COWKIT_DNF` names this binary.
    #[error("{var}=`{}` is cowkit itself", path.display())]
    DnfIsCowkit {
        /// The environment variable.
        var: &'static str,
        /// What it names.
        path: PathBuf,
    },
    /// No dnf on `PATH` but this binary.
    #[error("no `{}` on PATH but cowkit's own entry", name.display())]
    NoDnf {
        /// The name looked for.
        name: PathBuf,
    },
    /// cowkit stands in for `dnf5`, but `COWKIT_DNF` names a dnf that is
    /// not dnf5.
    #[error("cowkit runs as `dnf5`, but {var}=`{}` is not dnf5 (the file it names is not called dnf5)", path.display())]
    NotDnf5 {
        /// The environment variable.
        var: &'static str,
        /// What it names.
        path: PathBuf,
    },
    /// The shim directory is relative.
    #[error("--shim-dir `{}` is not an absolute path (it goes on PATH)", path.display())]
    ShimRelative {
        /// The directory.
        path: PathBuf,
    },
    /// This binary cannot be found.
    #[error("cannot find cowkit's own binary")]
    NoOwnBinary,
    /// A file system call on `path` failed.
    #[error("cannot {what} `{}`", path.display())]
    Io {
        /// What was done (`create`, `open`, `stat`, `read`).
        what: &'static str,
        /// On what.
        path: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// The shim directory cannot be opened as a directory.
    #[error("cannot open `{}`", path.display())]
    ShimNotDir {
        /// The directory.
        path: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// Others could change `path`, a directory that goes on `PATH`.
    #[error(
        "`{}` can be changed by others (owner uid {uid}, mode {:o}): they could put their own `dnf` on PATH",
        path.display(),
        mode & 0o7777
    )]
    OthersCanChange {
        /// The directory.
        path: PathBuf,
        /// Its owner.
        uid: u32,
        /// Its mode.
        mode: u32,
    },
    /// The shim's `dnf` links elsewhere.
    #[error("`{}` already links to `{}`, not to cowkit (`{}`)", link.display(), target.display(), me.display())]
    ShimLinksElsewhere {
        /// The link.
        link: PathBuf,
        /// Where it points.
        target: PathBuf,
        /// This binary.
        me: PathBuf,
    },
    /// The shim's `dnf` cannot be made.
    #[error("cannot make `{}`", link.display())]
    ShimLink {
        /// The link.
        link: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// The shim's `dnf` exists and is not a link.
    #[error("`{}` exists and is not a link to cowkit", link.display())]
    ShimNotLink {
        /// The entry.
        link: PathBuf,
        /// What reading it as a link said.
        #[source]
        source: std::io::Error,
    },
    /// dnf's download plan is too large.
    #[error("dnf's download plan `{}` is over {max} bytes", path.display())]
    PlanTooLarge {
        /// The plan.
        path: PathBuf,
        /// The limit.
        max: u64,
    },
    /// dnf's download plan is not the JSON its wrapper writes.
    #[error("cannot read dnf's download plan")]
    PlanJson {
        /// The plan.
        path: PathBuf,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// A package of dnf's plan cannot be fetched as it says.
    #[error("dnf's download plan for `{nevra}`: {why}")]
    PlanPackage {
        /// The package.
        nevra: String,
        /// What is wrong with it.
        why: String,
    },
    /// dnf's transaction mixes reinstalls with other installs.
    #[error("dnf's transaction reinstalls {} and installs or upgrades {}: cowkit checks and registers a transaction as one rpm command line, which reinstalls all its packages or none", reinstalls.join(", "), others.join(", "))]
    MixedReinstall {
        /// The order file dnf wrote.
        path: PathBuf,
        /// The packages reinstalled.
        reinstalls: Vec<String>,
        /// The others.
        others: Vec<String>,
    },
    /// The cache of transcoded packages failed.
    #[error("cannot use the cache")]
    Cache(#[from] cowkit_extents::cache::CacheError),
    /// The transcode worker's program cannot be found.
    #[error("cannot find cowkit itself")]
    OwnBinary(#[source] std::io::Error),
    /// The pipe to the transcode worker cannot be made.
    #[error("cannot make a pipe for the transcoder")]
    Pipe(#[source] std::io::Error),
    /// The transcode of a fetched package failed.
    #[error("cannot transcode `{}`", input.display())]
    Transcode {
        /// Where the package came from.
        input: PathBuf,
        /// The transcode's error.
        #[source]
        source: cowkit_extents::confined::Error,
    },
    /// A repository with `gpgcheck` served a package whose header signature
    /// its keys do not accept.
    #[error(
        "the repository `{repo}` requires signatures (gpgcheck) by its keys ({}), and the header signature of `{package}` is not accepted; nothing of it was decoded or cached",
        keys.iter().map(|k| format!("`{}`", k.display())).collect::<Vec<_>>().join(", ")
    )]
    SignatureRefused {
        /// The repository id.
        repo: String,
        /// Its key files.
        keys: Vec<PathBuf>,
        /// Where the package came from.
        package: String,
        /// What the signature check said.
        causes: Vec<String>,
    },
    /// Every mirror of a package failed, as often as dnf's `retries` allow.
    #[error(
        "no mirror served the package as the repository describes it ({attempts} failed attempt(s); dnf's retries={retries}); the last: {}",
        last.as_deref().unwrap_or("none")
    )]
    NoMirror {
        /// Failed attempts.
        attempts: usize,
        /// dnf's `retries`.
        retries: u64,
        /// The last attempt's failure.
        last: Option<String>,
    },
    /// Packages that could not be fetched: nothing was installed and
    /// nothing unverified was cached.
    #[error(
        "cannot fetch {} package(s); nothing was installed and nothing unverified was cached",
        failures.len()
    )]
    Fetch {
        /// Each package (NEVRA) and why.
        failures: Vec<(String, Error)>,
    },
    /// cowkit's dnf5 plugin is not where it is looked for.
    #[error("cowkit's dnf5 plugin `{}` is not a file (build it with crates/cowkit-dnf/dnf5-plugin/Makefile; COWKIT_DNF5_PLUGIN names it)", path.display())]
    NoDnf5Plugin {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// dnf5 downloaded without cowkit's plugin having run (dnf5's
    /// configuration turns its plugins off): its transaction flags and the
    /// order it hands rpm are unknown.
    #[error("dnf5 ran without cowkit's plugin (its configuration turns plugins off with `plugins=0`, or the plugin did not load), so cowkit cannot know dnf5's transaction flags and order: it installs none of the {downloaded} package(s) dnf5 downloaded")]
    Dnf5WithoutPlugin {
        /// How many packages dnf5 downloaded.
        downloaded: usize,
    },
    /// Options that choose dnf5's plugins, which cowkit sets itself.
    #[error("dnf5 runs with cowkit's plugin, so cowkit cannot pass on {}", options.join(", "))]
    Dnf5PluginOptions {
        /// The options as given.
        options: Vec<String>,
    },
    /// dnf5 finished (it did not stop) although the plugin's plan says
    /// cowkit can fetch every package: its plugin did not stop it.
    #[error("dnf5 went on after resolving although cowkit's plugin planned to fetch every package: the plugin did not stop it")]
    Dnf5WentOn,
    /// dnf5 went on to download its plan's packages, but none is where
    /// cowkit told it to put them.
    #[error("dnf5 went on to download the {planned} package(s) of its plan, but none is in `{}`: nothing was installed", dir.display())]
    Dnf5NoDownloads {
        /// How many packages the plan has.
        planned: usize,
        /// Where they were to be downloaded.
        dir: PathBuf,
    },
    /// dnf5 failed (any end but the plugin's stop with a plan cowkit fetches by).
    #[error("dnf5 failed ({status})")]
    Dnf5Failed {
        /// Its exit status.
        status: std::process::ExitStatus,
    },
}

/// Errors of the driver: running dnf, the root, its database and the
/// transaction around the pipeline.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Options of dnf's command line cowkit cannot honour when it installs.
    #[error(
        "cowkit cannot honour dnf's {}: {}",
        if refused.len() == 1 { "option" } else { "options" },
        refused.iter().map(|r| format!("`{}`: {}", r.option, r.why)).collect::<Vec<_>>().join("; ")
    )]
    Unhonoured {
        /// Each option and why.
        refused: Vec<Refusal>,
    },
    /// A transaction flag of dnf's configuration file cowkit does not
    /// carry out.
    #[error("cowkit cannot honour dnf's configuration: `{}`: {}", refused.option, refused.why)]
    ConfigUnhonoured {
        /// The flag and why.
        refused: Refusal,
    },
    /// The root is a relative path (rpm refuses one too).
    #[error("--root `{}` is not an absolute path (rpm refuses one too: `--root` must begin with a /)", root.display())]
    RelativeRoot {
        /// The root.
        root: PathBuf,
    },
    /// The root cannot be created or opened.
    #[error("cannot {what} `{}`", root.display())]
    Root {
        /// `create` or `open`.
        what: &'static str,
        /// The root.
        root: PathBuf,
        /// Why not.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The root's rpm database cannot be looked for.
    #[error("cannot find the root's rpm database")]
    FindDb(#[source] cowkit_rpmdb::Error),
    /// The root's rpm database cannot be set up for dnf.
    #[error("cannot set up the root's rpm database")]
    LocateDb(#[source] cowkit_rpmdb::Error),
    /// A scratch database for a new root cannot be made.
    #[error("cannot make a scratch database")]
    Scratch(#[source] cowkit_rpmdb::Error),
    /// The journal of a killed run cannot be looked for.
    #[error("cannot look for a transaction a killed run left")]
    RecoveryPending(#[source] cowkit_install::Error),
    /// The transaction a killed run left cannot be finished.
    #[error("cannot finish the transaction a killed run left in `{}`", root.display())]
    Recover {
        /// The root.
        root: PathBuf,
        /// Why not.
        #[source]
        source: cowkit_install::Error,
    },
    /// rpm's file policy (`%_excludedocs`, `%_install_langs`, ...) cannot be read.
    #[error("cannot read rpm's file policy")]
    Policy(#[source] cowkit_install::Error),
    /// Downloads that killed runs left in the cache cannot be removed.
    #[error("cannot remove the downloads that interrupted runs left")]
    Sweep(#[source] cowkit_fs::error::IoError),
    /// The download directory in the cache cannot be made.
    #[error("cannot make a download directory in the cache")]
    DownloadDir(#[source] cowkit_fs::error::IoError),
    /// dnf's private `HOME` cannot be made.
    #[error("cannot make a temporary directory")]
    Home(#[source] std::io::Error),
    /// dnf's `.rpmmacros` cannot be written.
    #[error("cannot write .rpmmacros")]
    RpmMacros {
        /// The file.
        path: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// dnf's output cannot be sent to stderr.
    #[error("cannot duplicate stderr")]
    Stderr(#[source] std::io::Error),
    /// dnf cannot be started.
    #[error("cannot run dnf")]
    RunDnf {
        /// The program.
        dnf: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// dnf failed to resolve or download.
    #[error("dnf could not resolve or download the packages ({status})")]
    DnfFailed {
        /// dnf's exit status.
        status: std::process::ExitStatus,
    },
    /// The keys dnf imported into the scratch database cannot be read.
    #[error("cannot read the keys dnf imported into the scratch database")]
    ScratchKeys(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The repositories' keys cannot be imported into the root's database.
    #[error("cannot import the repositories' keys into the root's rpm database, as dnf does")]
    ImportKeys(#[source] cowkit_rpmdb::Error),
    /// The root has no rpm database to import the keys into.
    #[error("cannot import the repositories' keys into the root's rpm database, as dnf does: the root has no rpm database")]
    ImportKeysNoDb,
    /// The packages dnf downloaded cannot be listed.
    #[error("cannot list the downloaded packages")]
    ListDownloads {
        /// The download directory.
        dir: PathBuf,
        /// Why not.
        #[source]
        source: std::io::Error,
    },
    /// With `--downloader cowkit`: dnf keeps its downloads (`keepcache`).
    #[error("cowkit cannot fetch the packages itself: dnf keeps its downloads (keepcache)")]
    Keepcache,
    /// With `--downloader cowkit`: dnf's plan says cowkit cannot fetch.
    #[error("cowkit cannot fetch these packages itself: {}", reasons.join("; "))]
    CannotFetch {
        /// Why not.
        reasons: Vec<String>,
    },
    /// A downloaded package cannot be read.
    #[error("cannot read `{}`", path.display())]
    ReadRpm {
        /// The package.
        path: PathBuf,
        /// Why not.
        #[source]
        source: cowkit_archive::rpm::Error,
    },
    /// Downloaded packages that could not be transcoded into the cache:
    /// nothing was installed.
    #[error("cannot transcode {} package(s); nothing was installed", failures.len())]
    Transcodes {
        /// Each package and why.
        failures: Vec<(PathBuf, Error)>,
    },
    /// dnf's state directory (dnf 4's module state, dnf5's transaction
    /// lock) cannot be made in the root.
    #[error("cannot make dnf's state directory `{}`", path.display())]
    ModuleState {
        /// The directory, as seen from the host.
        path: PathBuf,
        /// Why not.
        #[source]
        source: cowkit_fs::Error,
    },
    /// A pipeline error.
    #[error(transparent)]
    Pipeline(#[from] Error),
}

impl From<cowkit_extents::cache::CacheError> for RunError {
    fn from(e: cowkit_extents::cache::CacheError) -> Self {
        RunError::Pipeline(e.into())
    }
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
