//! `cowkit dnf --root R [OPTIONS] [--] DNF-ARGS...`: dnf resolves, cowkit
//! fetches, transcodes (once, into a shared cache) and installs. The
//! pipeline is `cowkit_dnf`'s ([`cowkit_dnf::driver`]); here are its
//! command line, its progress bar and notes on stderr, the summary
//! (`--json`) and its errors with their hints.
//!
//! Commands that download nothing (`remove`, `list`, `history`, ...) run
//! dnf itself with the same database setting, so `cowkit dnf --root R
//! remove NAME` works on a root cowkit installed.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use cowkit_dnf::request::{Events, Note, Outcome, Request, Summary};
use cowkit_dnf::RunError;
use cowkit_extents::cache::{CacheError, Unsafe};

use crate::dnfcli::Line;
use crate::install::{finish, refused, Show};
use crate::output::CliError;

/// Arguments of `cowkit dnf`.
#[derive(clap::Args)]
#[command(after_long_help = DNF_FORM_HELP)]
pub struct Args {
    /// The root to build (dnf's `--installroot`; created if missing; an
    /// absolute path).
    #[arg(long, required_unless_present = "shim_dir")]
    root: Option<PathBuf>,
    /// The cache of transcoded packages, shared by builds. Put it on the
    /// filesystem of the roots: installs from it then clone.
    #[arg(long, default_value = DEFAULT_CACHE)]
    cache: PathBuf,
    /// The rpm database inside the root (default: an existing one, else
    /// `%_dbpath` from the root's rpm macros, else /var/lib/rpm).
    #[arg(long, value_name = "DIR")]
    dbpath: Option<String>,
    /// Parallel jobs (default: the number of CPUs).
    #[arg(short, long)]
    jobs: Option<usize>,
    /// Run no scriptlets (like `rpm --noscripts`).
    #[arg(long)]
    noscripts: bool,
    /// Let scriptlets' sync calls (`fsync`, `sync`, `syncfs`, ...), and
    /// those of rpm registering a new root's packages, reach the kernel.
    /// By default, in a root other than `/`, they are answered
    /// without running (the root is being built: a crash loses it anyway)
    /// and the root's filesystems get one `syncfs` at the end; `/` always
    /// keeps its syncs.
    #[arg(long)]
    keep_syncs: bool,
    /// Who downloads the packages. `cowkit`: cowkit fetches them itself
    /// (HTTP(S) or local files; dnf's mirrors, `max_parallel_downloads`,
    /// `retries`, `timeout`, `minrate`) and streams each through the
    /// confined transcoder into the cache as it arrives; an entry is named
    /// only once the whole file matched the repository's checksum, and
    /// with `gpgcheck` the header signature is checked against the
    /// repository's keys before the payload is decoded. `dnf`: dnf
    /// downloads (`--downloadonly`), cowkit transcodes afterwards. `auto`:
    /// cowkit where it can fetch as dnf would, else dnf, saying why.
    #[arg(long, value_enum, default_value_t = Downloader::Auto)]
    downloader: Downloader,
    /// Print a JSON summary (dnf's and the scriptlets' output go to stderr).
    #[arg(long)]
    json: bool,
    /// Make DIR/dnf a link to cowkit (DIR created if missing; it and its
    /// parents must be writable by you alone) and print DIR: put it first
    /// on PATH and image builders' `dnf --installroot` runs cowkit.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["root", "dnf"])]
    shim_dir: Option<PathBuf>,
    /// dnf's options and command, e.g. `--releasever 40 install bash`.
    #[arg(
        required_unless_present = "shim_dir",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "DNF-ARGS"
    )]
    dnf: Vec<OsString>,
}

/// Who downloads the packages (`--downloader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Downloader {
    /// cowkit where it can fetch as dnf would, else dnf (said on stderr).
    Auto,
    /// cowkit; an error where it cannot fetch as dnf would.
    Cowkit,
    /// dnf (`--downloadonly`), then cowkit transcodes.
    Dnf,
}

impl From<Downloader> for cowkit_dnf::request::Downloader {
    fn from(d: Downloader) -> Self {
        match d {
            Downloader::Auto => Self::Auto,
            Downloader::Cowkit => Self::Cowkit,
            Downloader::Dnf => Self::Dnf,
        }
    }
}

/// The cache's default directory.
pub use cowkit_dnf::request::DEFAULT_CACHE;

/// The rest of `cowkit dnf --help`: the dnf form.
const DNF_FORM_HELP: &str = "\
dnf's own command line (for image builders):
  cowkit dnf --installroot R [DNF-OPTIONS] install|upgrade|... PKG...
  dnf --installroot R ...        (cowkit reached through a link named `dnf`)
  dnf5 --installroot R ...       (a link named `dnf5`: dnf5's command line, the real dnf5)
  PATH=\"$(cowkit dnf --shim-dir /run/cowkit-dnf):$PATH\" mkosi ...
In this form every option is dnf's and goes to dnf unchanged; cowkit's own
come from the environment: COWKIT_CACHE (--cache), COWKIT_JOBS (--jobs),
COWKIT_JSON=1 (--json), COWKIT_NOSCRIPTS=1 (--noscripts), COWKIT_DBPATH
(--dbpath), COWKIT_DOWNLOADER (--downloader). Without --installroot, and for commands that install nothing
(remove, list, ...), the real dnf runs (COWKIT_DNF, or the first `dnf` on
PATH that is not cowkit). Refused when cowkit installs, as it cannot honour
them exactly: --setopt=tsflags=... other than nodocs and justdb, --comment, --downloaddir
without --downloadonly; --downloadonly, --assumeno and --help go to dnf. Where the real dnf
is dnf5, the command line is read as dnf5 reads it, and dnf5's own tsflags are honoured or
refused by name after it resolved.";

/// `cowkit dnf --root R [OPTIONS] [--] DNF-ARGS` (or `--shim-dir`).
pub fn run(args: Args, quiet: bool) -> Result<ExitCode, CliError> {
    if let Some(dir) = &args.shim_dir {
        cowkit_dnf::shim::make_shim(dir).map_err(dnf_error)?;
        println!("{}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let root = args.root.expect("clap requires --root");
    // Read as the real dnf reads it (dnf5 or dnf 4); where there is no
    // dnf, the run says so.
    let dnf5 = cowkit_dnf::shim::real_dnf()
        .is_ok_and(|d| cowkit_dnf::shim::Resolver::of(&d) == cowkit_dnf::shim::Resolver::Dnf5);
    let line = read_line(&args.dnf, dnf5, false)?;
    if let Some(r) = &line.root {
        return Err(CliError::msg(format!(
            "the root is given twice: `--root {}` and dnf's `--installroot {}`",
            root.display(),
            r.display()
        ))
        .hint("give one: `cowkit dnf --root R -- ARGS`, or dnf's own `cowkit dnf --installroot R ARGS`"));
    }
    let shown = Shown {
        json: args.json,
        quiet: quiet || line.quiet,
    };
    let req = Request {
        dbpath: args.dbpath,
        jobs: crate::output::jobs(args.jobs),
        noscripts: args.noscripts,
        keep_syncs: args.keep_syncs,
        downloader: args.downloader.into(),
        ..request(root, args.cache, line, &shown)
    };
    run_request(req, &shown)
}

/// dnf's command line `args` read as dnf5 (`dnf5`) or dnf 4 reads it;
/// `named_dnf5`: cowkit runs as `dnf5`.
pub fn read_line(args: &[OsString], dnf5: bool, named_dnf5: bool) -> Result<Line, CliError> {
    if dnf5 {
        let mut line = crate::dnf5cli::parse(args)
            .map_err(|e| CliError::new("cannot read dnf5's command line", e))?;
        line.named_dnf5 = named_dnf5;
        Ok(line)
    } else {
        crate::dnfcli::parse(args).map_err(|e| CliError::new("cannot read dnf's command line", e))
    }
}

/// How a run is shown: `--json` (a JSON summary on stdout; dnf's and the
/// scriptlets' output go to stderr), `--quiet` (only errors).
pub struct Shown {
    /// A JSON summary on stdout.
    pub json: bool,
    /// Only errors.
    pub quiet: bool,
}

/// A request for `root` with dnf's command line `line`, cowkit's defaults
/// (the caller sets its options), shown as `shown` says.
pub fn request(root: PathBuf, cache: PathBuf, line: Line, shown: &Shown) -> Request {
    Request {
        root,
        cache,
        dbpath: None,
        jobs: crate::output::jobs(None),
        noscripts: false,
        keep_syncs: false,
        downloader: cowkit_dnf::request::Downloader::Auto,
        stdout_to_stderr: shown.json || shown.quiet,
        scripts_to_stderr: shown.json,
        line,
        worker: |keys| {
            crate::transcode::worker_command_io(
                4096,
                cowkit_extents::transcode::DEFAULT_PACK_BELOW,
                keys,
                false,
            )
        },
        lua: crate::lua::starter,
    }
}

/// Run one request and show its outcome (dnf's exit code where dnf ran
/// the command itself).
pub fn run_request(req: Request, shown: &Shown) -> Result<ExitCode, CliError> {
    let outcome = cowkit_dnf::driver::run(&req, shown).map_err(run_error)?;
    match outcome {
        Outcome::Dnf(code) => Ok(ExitCode::from(code.clamp(0, 255) as u8)),
        Outcome::Nothing => Ok(nothing_to_install(&req, shown)),
        Outcome::Refused(e) => refused(&req.root, shown.json, e),
        Outcome::Installed(total, summary) => Ok(done(&req, shown, &total, summary)),
    }
}

/// The summary of an install, as an exit code.
fn done(
    req: &Request,
    shown: &Shown,
    total: &cowkit_install::TxSummary,
    summary: Summary,
) -> ExitCode {
    if !shown.json && !shown.quiet {
        eprintln!(
            "dnf: {:.2} s to resolve{} {} package(s); cache `{}`: {} hit(s), {} transcoded in {:.2} s",
            summary.resolve_seconds,
            if summary.downloaded_by == "dnf" { " and download" } else { "" },
            summary.downloaded,
            req.cache.display(),
            summary.cache_hits,
            summary.cache_misses,
            summary.transcode_seconds
        );
    }
    finish(
        &Show {
            root: &req.root,
            json: shown.json,
            quiet: shown.quiet,
            verify: false,
        },
        total,
        summary,
    )
}

/// dnf downloaded nothing: said so (or `{"downloaded": 0}`), success.
fn nothing_to_install(req: &Request, shown: &Shown) -> ExitCode {
    if !shown.quiet && !shown.json {
        eprintln!("nothing to install: dnf downloaded no packages");
    }
    if shown.json {
        crate::output::print_json(&serde_json::json!({
            "root": req.root, "ok": true, "downloaded": 0
        }));
    }
    ExitCode::SUCCESS
}

impl Events for Shown {
    fn recovered(&self, recovery: &cowkit_install::Recovery) {
        crate::install::say_recovered(recovery);
    }

    fn note(&self, note: Note<'_>) {
        match note {
            // Not a skip, but not dnf's order either: said, not hidden.
            Note::NoOrder => eprintln!(
                "warning: dnf did not say in which order it adds the packages (it is not dnf's own Python entry point): rpm orders them from their file names, and scriptlets may run in another order than under dnf"
            ),
            Note::DnfDownloads(reasons) if !self.quiet => eprintln!(
                "note: dnf downloads the packages and cowkit transcodes them afterwards, because {}",
                reasons.join("; ")
            ),
            Note::Damaged { entry, why } if !self.json && !self.quiet => eprintln!(
                "warning: the cache entry `{}` is damaged ({why}); transcoding again",
                entry.display()
            ),
            Note::Fetched {
                transcoded,
                bytes,
                seconds,
                cached,
            } if !self.json && !self.quiet => eprintln!(
                "cowkit: {transcoded} package(s) fetched and transcoded as they arrived ({}) in {seconds:.2} s, {cached} found in the cache by checksum",
                crate::output::human_bytes(bytes),
            ),
            _ => {}
        }
    }

    fn fetching(&self) -> Box<dyn cowkit_dnf::stream::Reporter + '_> {
        Box::new(DownloadBar::new(self.json || self.quiet, self.quiet))
    }
}

/// The download progress bar (hidden with `--json` or `--quiet`), cleared
/// when dropped.
struct DownloadBar {
    bar: indicatif::ProgressBar,
    /// No bar drawn (`--json`, `--quiet`): notes go to stderr.
    hidden: bool,
    /// Only errors (`--quiet`).
    quiet: bool,
}

impl DownloadBar {
    fn new(hidden: bool, quiet: bool) -> Self {
        let bar = indicatif::ProgressBar::new(0);
        if hidden {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {binary_bytes}/{binary_total_bytes} fetched and transcoded ({binary_bytes_per_sec})",
            )
            .expect("valid template"),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        DownloadBar { bar, hidden, quiet }
    }
}

impl Drop for DownloadBar {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

impl cowkit_dnf::stream::Reporter for DownloadBar {
    fn on_bytes(&self, n: u64) {
        self.bar.inc(n);
    }
    fn on_start(&self, bytes: u64) {
        self.bar.inc_length(bytes);
    }
    fn on_note(&self, line: &str) {
        if self.quiet {
            return;
        }
        if self.hidden {
            eprintln!("warning: {line}");
        } else {
            self.bar.println(format!("warning: {line}"));
        }
    }
}

const DNF_HINT: &str = "install dnf (Debian: `apt-get install dnf`)";

/// A run's error as the CLI reports it: the lines of one that names
/// several items under it, and a `hint:` where the user can do something
/// about it.
fn run_error(e: RunError) -> CliError {
    let hint = match &e {
        RunError::ConfigUnhonoured { .. } => {
            Some("remove it from dnf.conf's [main], or run plain dnf for this root")
        }
        RunError::LocateDb(cowkit_rpmdb::Error::Macros { .. }) => {
            Some("`--dbpath DIR` says where the root's database is")
        }
        RunError::RunDnf { .. } => Some(DNF_HINT),
        RunError::Keepcache => Some("drop `--setopt=keepcache=True`, or use `--downloader auto`"),
        RunError::CannotFetch { .. } => {
            Some("`--downloader auto` (COWKIT_DOWNLOADER=auto) lets dnf download them")
        }
        _ => None,
    };
    let cli = match e {
        RunError::Pipeline(e) => return dnf_error(e),
        RunError::RelativeRoot { root } => return crate::install::relative_root(&root),
        RunError::Recover { root, source } => {
            return crate::install::recover_error(
                format!(
                    "cannot finish the transaction a killed run left in `{}`",
                    root.display()
                ),
                source,
            )
        }
        RunError::Unhonoured { refused } => {
            let list: Vec<String> = refused
                .iter()
                .map(|r| format!("`{}`: {}", r.option, r.why))
                .collect();
            return CliError::with_lines(
                format!(
                    "cowkit cannot honour dnf's {}:",
                    if list.len() == 1 { "option" } else { "options" },
                ),
                list,
            )
            .hint("drop them, or run plain dnf for this root");
        }
        RunError::Transcodes { failures } => {
            let head = format!(
                "cannot transcode {} package(s); nothing was installed:",
                failures.len()
            );
            let lines = failures
                .into_iter()
                .map(|(rpm, e)| format!("{}: {}", rpm.display(), dnf_error(e).chain().join(": ")))
                .collect();
            return CliError::with_lines(head, lines);
        }
        e => chained(&e),
    };
    hinted(cli, hint)
}

/// A dnf pipeline error as the CLI reports it, with a `hint:` where the
/// user can do something about it.
pub(crate) fn dnf_error(e: cowkit_dnf::Error) -> CliError {
    use cowkit_dnf::Error as E;
    let hint = match &e {
        E::DnfIsCowkit { var, .. } => Some(format!("set {var} to the real dnf, e.g. /usr/bin/dnf")),
        E::NoDnf { .. } => {
            Some("install dnf (Debian: `apt-get install dnf`), or set COWKIT_DNF to it".into())
        }
        E::ShimNotDir { .. } => Some("give a directory, not a symlink".into()),
        E::OthersCanChange { .. } => {
            Some("use a directory of your own that only you can write, e.g. /run/cowkit-dnf".into())
        }
        E::ShimLinksElsewhere { .. } | E::ShimNotLink { .. } => {
            Some("remove it, or use another directory".into())
        }
        E::MixedReinstall { .. } => Some(
            "reinstall these packages in a transaction of their own (`dnf reinstall PKG`)".into(),
        ),
        E::Cache(CacheError::Unsafe { path, why }) => Some(match why {
            Unsafe::Owner { me, .. } => format!(
                "the cache's content is trusted by installs: use a cache of your own, or `chown {me} {}` if it is yours",
                path.display()
            ),
            Unsafe::Writable { .. } | Unsafe::Parent { .. } => format!(
                "the cache's content is trusted by installs: `chmod go-w {}`, or use another --cache",
                path.display()
            ),
            Unsafe::NotDir(_) => format!("remove `{}`", path.display()),
        }),
        E::SignatureRefused { repo, .. } => Some(format!(
            "dnf refuses such a package too (`GPG check FAILED`); to install without the check, as dnf would: `--nogpgcheck`, or `--setopt={repo}.gpgcheck=0`"
        )),
        _ => None,
    };
    let cli = match e {
        E::Transcode { input, source } => return crate::transcode::cli_error(source, &input),
        E::SignatureRefused { ref causes, .. } => CliError::from_chain(e.to_string(), causes),
        E::Fetch { failures } => {
            // One line per package; the hints once each.
            let head = format!(
                "cannot fetch {} package(s); nothing was installed and nothing unverified was cached:",
                failures.len()
            );
            let mut lines = Vec::new();
            let mut hints: Vec<String> = Vec::new();
            for (nevra, e) in failures {
                let e = dnf_error(e);
                lines.push(format!("{nevra}: {}", e.chain().join(": ")));
                if let Some(h) = e.hint_text() {
                    if !hints.iter().any(|x| x == h) {
                        hints.push(h.to_string());
                    }
                }
            }
            let cli = CliError::with_lines(head, lines);
            return match hints.is_empty() {
                true => cli,
                false => cli.hint(hints.join("; ")),
            };
        }
        e => chained(&e),
    };
    hinted(cli, hint)
}

/// An error whose message and causes are its chain.
fn chained(e: &(dyn std::error::Error + 'static)) -> CliError {
    let chain = cowkit_fs::error::chain(e);
    CliError::from_chain(&chain[0], &chain[1..])
}

/// `cli` with `hint`, if there is one.
fn hinted(cli: CliError, hint: Option<impl std::fmt::Display>) -> CliError {
    match hint {
        Some(h) => cli.hint(h),
        None => cli,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--quiet` sends dnf's output to stderr but leaves the scriptlets'
    /// stdout where it is; `--json` keeps stdout for the summary alone.
    #[test]
    fn quiet_and_json_send_to_stderr_what_they_always_did() {
        let req = |json, quiet| {
            request(
                PathBuf::from("/r"),
                PathBuf::from(DEFAULT_CACHE),
                Line::default(),
                &Shown { json, quiet },
            )
        };
        let r = req(false, false);
        assert!(!r.stdout_to_stderr && !r.scripts_to_stderr);
        let r = req(false, true);
        assert!(r.stdout_to_stderr && !r.scripts_to_stderr);
        let r = req(true, false);
        assert!(r.stdout_to_stderr && r.scripts_to_stderr);
    }
}
