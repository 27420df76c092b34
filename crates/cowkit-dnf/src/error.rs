//! The crate's error: what failed, with the paths involved. Hints are the
//! caller's to add.

use std::path::PathBuf;

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
    /// Options that choose dnf5's plugins, which cowkit sets itself.
    #[error("dnf5 runs with cowkit's plugin, so cowkit cannot pass on {}", options.join(", "))]
    Dnf5PluginOptions {
        /// The options as given.
        options: Vec<String>,
    },
    /// dnf5 failed (any end but the plugin's stop with a plan cowkit fetches by).
    #[error("dnf5 failed ({status})")]
    Dnf5Failed {
        /// Its exit status.
        status: std::process::ExitStatus,
    },
}

/// The crate's result.
pub type Result<T, E = Error> = std::result::Result<T, E>;
