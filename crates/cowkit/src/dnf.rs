//! `cowkit dnf --root R [OPTIONS] [--] DNF-ARGS...`: dnf resolves and
//! downloads, cowkit transcodes (once, into a shared cache) and installs.
//!
//! 1. dnf runs as `dnf --installroot R -y DNF-ARGS --downloadonly
//!    --setopt=installonly_limit=0 --downloaddir TMP`, with `%_dbpath` set
//!    (through a private `HOME`'s `.rpmmacros`) to the database cowkit uses
//!    for R, so that it resolves against what is installed there. dnf keeps
//!    every choice: repositories, versions, dependencies, its own options,
//!    but for the limit, which would have it erase old kernels (cowkit does
//!    not erase them; install-only packages go beside the old versions).
//! 2. By default dnf downloads nothing: its Python wrapper
//!    ([`cowkit_dnf::order`]) writes the plan of the downloads, and cowkit
//!    fetches each package itself, streaming it through a confined
//!    transcoder into the cache as it arrives ([`cowkit_dnf::stream`]).
//!    Where cowkit cannot fetch as dnf would (`--downloader dnf`,
//!    `keepcache`, a proxy, ...: said on stderr), dnf downloads as before,
//!    each downloaded package is looked up in the cache by its verified
//!    header digest, and misses are transcoded in parallel (confined
//!    workers) straight into the cache (atomic commit: concurrent builds
//!    are safe).
//! 3. The cached extents files are installed as one transaction
//!    (`cowkit_install::txn`: rpm's check and order, scriptlets, database).
//!
//! Commands that download nothing (`remove`, `list`, `history`, ...) run
//! dnf itself with the same database setting, so `cowkit dnf --root R
//! remove NAME` works on a root cowkit installed.

use std::ffi::OsString;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use cowkit_extents::cache::{Cache, CacheError, Lookup, Unsafe};
use cowkit_extents::confined;
use cowkit_fs::root::Root;
use cowkit_install::{prepare, Options, TxOptions};

use crate::dnfcli::Line;
use serde::Serialize;

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
    /// Let scriptlets' sync calls (`fsync`, `sync`, `syncfs`, ...) reach
    /// the kernel. By default, in a root other than `/`, they are answered
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

/// The rest of `cowkit dnf --help`: the dnf form.
/// The cache's default directory.
pub const DEFAULT_CACHE: &str = "/var/cache/cowkit";

const DNF_FORM_HELP: &str = "\
dnf's own command line (for image builders):
  cowkit dnf --installroot R [DNF-OPTIONS] install|upgrade|... PKG...
  dnf --installroot R ...        (cowkit reached through a link named `dnf`)
  PATH=\"$(cowkit dnf --shim-dir /run/cowkit-dnf):$PATH\" mkosi ...
In this form every option is dnf's and goes to dnf unchanged; cowkit's own
come from the environment: COWKIT_CACHE (--cache), COWKIT_JOBS (--jobs),
COWKIT_JSON=1 (--json), COWKIT_NOSCRIPTS=1 (--noscripts), COWKIT_DBPATH
(--dbpath), COWKIT_DOWNLOADER (--downloader). Without --installroot, and for commands that install nothing
(remove, list, ...), the real dnf runs (COWKIT_DNF, or the first `dnf` on
PATH that is not cowkit). Refused when cowkit installs, as it cannot honour
them exactly: --setopt=tsflags=... other than nodocs and justdb, --comment, --downloaddir
without --downloadonly; --downloadonly, --assumeno and --help go to dnf.";

/// One `cowkit dnf` run, from either form.
pub struct Request {
    /// The root (`--root` or `--installroot`).
    pub root: PathBuf,
    /// The cache of transcoded packages.
    pub cache: PathBuf,
    /// The rpm database inside the root.
    pub dbpath: Option<String>,
    /// Parallel jobs.
    pub jobs: Option<usize>,
    /// Run no scriptlets.
    pub noscripts: bool,
    /// Let scriptlets' sync calls through.
    pub keep_syncs: bool,
    /// Who downloads.
    pub downloader: Downloader,
    /// A JSON summary on stdout.
    pub json: bool,
    /// Only errors.
    pub quiet: bool,
    /// dnf's command line, read.
    pub line: Line,
}

/// The fields `cowkit dnf --json` adds to the install summary.
#[derive(Serialize, Default)]
struct Extra {
    /// A transaction a killed run left, finished first.
    #[serde(skip_serializing_if = "Option::is_none")]
    recovered: Option<cowkit_install::Recovery>,
    /// Downloaded packages.
    downloaded: usize,
    /// Found in the cache / transcoded now / damaged entries replaced.
    cache_hits: usize,
    cache_misses: usize,
    cache_damaged: Vec<String>,
    /// Seconds: dnf (resolve and download); transcoding the misses, with
    /// rpm's check of the transaction running at the same time (so
    /// `seconds.check` overlaps it).
    resolve_seconds: f64,
    transcode_seconds: f64,
    /// Who downloaded (`cowkit` or `dnf`), and why not cowkit.
    downloaded_by: &'static str,
    fallback_reasons: Vec<String>,
    /// cowkit's downloads: found by checksum (nothing downloaded),
    /// bytes received, failed attempts (retried).
    not_downloaded: usize,
    downloaded_bytes: u64,
    failed_attempts: Vec<String>,
}

/// A `HOME` whose `.rpmmacros` sets `%_dbpath`: dnf (and the librpm it
/// loads) read it after the system's macro files, so it wins on any host.
fn home_with_dbpath(dbpath: &str) -> Result<tempfile::TempDir, CliError> {
    let home = tempfile::Builder::new()
        .prefix("cowkit-dnf-home.")
        .tempdir()
        .map_err(|e| CliError::new("cannot make a temporary directory", e))?;
    std::fs::write(
        home.path().join(".rpmmacros"),
        format!("%_dbpath {dbpath}\n"),
    )
    .map_err(|e| CliError::new("cannot write .rpmmacros", e))?;
    Ok(home)
}

/// The real dnf on `req`'s root with `req`'s arguments, `HOME` set to
/// `home`.
fn dnf_command(req: &Request, home: &Path) -> Result<Command, CliError> {
    let dnf = cowkit_dnf::shim::real_dnf().map_err(dnf_error)?;
    let mut c = cowkit_dnf::order::command(&dnf, &home.join("order"));
    c.env("HOME", home)
        .env(cowkit_dnf::shim::ENV_INSIDE, &dnf)
        .arg(format!("--installroot={}", req.root.display()))
        .args(&req.line.rest);
    Ok(c)
}

/// `cowkit dnf --root R [OPTIONS] [--] DNF-ARGS` (or `--shim-dir`).
pub fn run(args: Args, quiet: bool) -> Result<ExitCode, CliError> {
    if let Some(dir) = &args.shim_dir {
        cowkit_dnf::shim::make_shim(dir).map_err(dnf_error)?;
        println!("{}", dir.display());
        return Ok(ExitCode::SUCCESS);
    }
    let root = args.root.expect("clap requires --root");
    let line =
        Line::parse(&args.dnf).map_err(|e| CliError::new("cannot read dnf's arguments", e))?;
    if let Some(r) = &line.root {
        return Err(CliError::msg(format!(
            "the root is given twice: `--root {}` and dnf's `--installroot {}`",
            root.display(),
            r.display()
        ))
        .hint("give one: `cowkit dnf --root R -- ARGS`, or dnf's own `cowkit dnf --installroot R ARGS`"));
    }
    run_request(Request {
        root,
        cache: args.cache,
        dbpath: args.dbpath,
        jobs: args.jobs,
        noscripts: args.noscripts,
        keep_syncs: args.keep_syncs,
        downloader: args.downloader,
        json: args.json,
        quiet: quiet || line.quiet,
        line,
    })
}

/// What cowkit cannot honour in `line`, as one error.
fn refusals(line: &Line) -> Result<(), CliError> {
    if !line.installs() || line.refused.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = line
        .refused
        .iter()
        .map(|r| format!("`{}`: {}", r.option, r.why))
        .collect();
    Err(CliError::with_lines(
        format!(
            "cowkit cannot honour dnf's {}:",
            if list.len() == 1 { "option" } else { "options" },
        ),
        list,
    )
    .hint("drop them, or run plain dnf for this root"))
}

/// Run one request: dnf resolves and downloads, cowkit installs (or dnf
/// runs the command itself on the root's database).
pub fn run_request(req: Request) -> Result<ExitCode, CliError> {
    refusals(&req.line)?;
    if req.line.installs() {
        config_tsflags(&req)?;
    }
    let args = &req;
    crate::install::absolute_root(&args.root)?;
    cowkit_fs::dir::raise_fd_limit();
    std::fs::create_dir_all(&args.root)
        .map_err(|e| CliError::new(format!("cannot create `{}`", args.root.display()), e))?;
    let root = Root::open(&args.root)
        .map_err(|e| CliError::new(format!("cannot open `{}`", args.root.display()), e))?;
    let forward = args.line.installs();
    let found = cowkit_rpmdb::find(&root, args.dbpath.as_deref())
        .map_err(|e| CliError::new("cannot find the root's rpm database", e))?;
    // A transaction a killed run left unfinished is finished before dnf
    // reads the database.
    // (Its options, which ask the host's rpm, only when there is one.)
    let pending = cowkit_install::recovery_pending(&root, args.dbpath.as_deref())
        .map_err(|e| CliError::new("cannot look for a transaction a killed run left", e))?;
    let recovered = if pending {
        crate::install::recover(&root, &tx_options(args, &root, false)?, &[])?
    } else {
        None
    };

    if !forward {
        drop(recovered);
        return dnf_itself(args, &root, found);
    }

    // The cache first: one others can change is refused before anything
    // is downloaded; downloads and scratch databases that killed runs
    // left are removed.
    let cache = open_cache(&args.cache)?;
    cowkit_fs::workdir::sweep(cache.fd(), cache.dir(), DOWNLOAD_PREFIX)
        .map_err(|e| CliError::new("cannot remove the downloads that interrupted runs left", e))?;

    // 1. dnf resolves and downloads, against the root's database (or an
    // empty one: where a new root's database goes is decided after its
    // packages are placed).
    let scratch = match &found {
        Some(_) => None,
        None => Some(
            cowkit_rpmdb::Scratch::new(&root)
                .map_err(|e| CliError::new("cannot make a scratch database", e))?,
        ),
    };
    let db_for_dnf = found
        .as_ref()
        .or(scratch.as_ref().map(|s| s.db()))
        .expect("one of them")
        .path
        .clone();
    let mut extra = Extra {
        recovered,
        ..Extra::default()
    };
    // Held (locked) while in use; removed on drop, on SIGINT/SIGTERM, or
    // by the next run's sweep after a kill.
    let download =
        cowkit_fs::workdir::WorkDir::create(cache.fd(), cache.dir(), DOWNLOAD_PREFIX, 0o700)
            .map_err(|e| CliError::new("cannot make a download directory in the cache", e))?;
    let home = home_with_dbpath(&db_for_dnf)?;
    // Who downloads: decided before dnf runs where cowkit can tell.
    let dnf_downloads = dnf_downloads(args)?;
    let plan_path = home.path().join("plan");
    // What the transaction asks the host's rpm is asked while dnf runs.
    let ahead = cowkit_install::ask_host_ahead();
    // So is whether rpm's Lua loads (`ldd rpm`, `dlopen`), kept for the
    // process as well.
    let lua_ahead = std::thread::spawn(|| {
        let _ = cowkit_rpmlua::available();
    });
    let t = Instant::now();
    let status = resolve_and_download(
        args,
        home.path(),
        download.path(),
        dnf_downloads.is_none().then_some(plan_path.as_path()),
    );
    let dnf_keys = scratch_keys(args, scratch.as_ref(), &status, &download, &home)?;
    drop(scratch);
    let status = status?;
    if !status.success() {
        return Err(CliError::msg(format!(
            "dnf could not resolve or download the packages ({status})"
        )));
    }
    extra.resolve_seconds = t.elapsed().as_secs_f64();
    drop(ahead);
    let _ = lua_ahead.join();
    // dnf's reinstalls are rpm's `--reinstall` elements: all or none.
    let reinstall = cowkit_dnf::order::reinstalls(&home.path().join("order")).map_err(dnf_error)?;
    let plan = match dnf_downloads {
        None => cowkit_dnf::plan::Plan::read(&plan_path).map_err(dnf_error)?,
        Some(_) => None,
    };
    let reasons = match (dnf_downloads, plan) {
        (_, Some(plan)) if plan.why.is_empty() => {
            drop(download);
            return streamed(args, &root, &cache, &plan, extra, reinstall);
        }
        (_, Some(plan)) => plan.why,
        (Some(why), None) => vec![why],
        (None, None) => vec![
            "dnf is not dnf's own Python entry point: cowkit cannot get its download plan".into(),
        ],
    };
    let rpms = downloaded_rpms(download.path(), &home.path().join("order"))?;
    extra.downloaded = rpms.len();
    if rpms.is_empty() {
        return Ok(nothing_to_install(args));
    }
    say_dnf_downloaded(args, &reasons)?;
    extra.downloaded_by = "dnf";
    extra.fallback_reasons = reasons;

    let total = match install(args, &root, &cache, &rpms, download, &mut extra, reinstall)? {
        Ok(total) => total,
        Err(e) => return refused(&args.root, args.json, e),
    };
    import_keys(args, &root, &dnf_keys)?;
    Ok(done(args, &total, extra))
}

/// The packages dnf downloaded into `dir`, in dnf's order (from the
/// wrapper's `order` file; file-name order, with a warning, without it).
fn downloaded_rpms(dir: &Path, order: &Path) -> Result<Vec<PathBuf>, CliError> {
    let mut rpms: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| CliError::new("cannot list the downloaded packages", e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rpm"))
        .collect();
    if !cowkit_dnf::order::sort(&mut rpms, order) && !rpms.is_empty() {
        // Not a skip, but not dnf's order either: said, not hidden.
        eprintln!(
            "warning: dnf did not say in which order it adds the packages (it is not dnf's own Python entry point): rpm orders them from their file names, and scriptlets may run in another order than under dnf"
        );
    }
    Ok(rpms)
}

/// dnf downloaded the packages for `reasons`: refused with
/// `--downloader cowkit`, else said (unless quiet).
fn say_dnf_downloaded(args: &Request, reasons: &[String]) -> Result<(), CliError> {
    if args.downloader == Downloader::Cowkit {
        return Err(CliError::msg(format!(
            "cowkit cannot fetch these packages itself: {}",
            reasons.join("; ")
        ))
        .hint("`--downloader auto` (COWKIT_DOWNLOADER=auto) lets dnf download them"));
    }
    if !args.quiet {
        eprintln!(
            "note: dnf downloads the packages and cowkit transcodes them afterwards, because {}",
            reasons.join("; ")
        );
    }
    Ok(())
}

/// Why dnf downloads (before dnf runs): `--downloader dnf`, or dnf keeps
/// its own copies (`keepcache`); `None`: cowkit fetches if dnf's plan
/// allows it.
fn dnf_downloads(req: &Request) -> Result<Option<String>, CliError> {
    match req.downloader {
        Downloader::Dnf => Ok(Some("of `--downloader dnf`".into())),
        _ if keepcache(req) => {
            let why = "dnf keeps its downloads (keepcache)";
            if req.downloader == Downloader::Cowkit {
                return Err(CliError::msg(format!(
                    "cowkit cannot fetch the packages itself: {why}"
                ))
                .hint("drop `--setopt=keepcache=True`, or use `--downloader auto`"));
            }
            Ok(Some(why.into()))
        }
        _ => Ok(None),
    }
}

/// The summary of an install (`extra` filled in), as an exit code.
fn done(args: &Request, total: &cowkit_install::TxSummary, extra: Extra) -> ExitCode {
    if !args.json && !args.quiet {
        eprintln!(
            "dnf: {:.2} s to resolve{} {} package(s); cache `{}`: {} hit(s), {} transcoded in {:.2} s",
            extra.resolve_seconds,
            if extra.downloaded_by == "dnf" { " and download" } else { "" },
            extra.downloaded,
            args.cache.display(),
            extra.cache_hits,
            extra.cache_misses,
            extra.transcode_seconds
        );
    }
    finish(
        &Show {
            root: &args.root,
            json: args.json,
            quiet: args.quiet,
            verify: false,
        },
        total,
        extra,
    )
}

/// cowkit fetches `plan`'s packages into the cache, then installs the
/// entries as one transaction.
fn streamed(
    args: &Request,
    root: &Root,
    cache: &Cache,
    plan: &cowkit_dnf::plan::Plan,
    mut extra: Extra,
    reinstall: bool,
) -> Result<ExitCode, CliError> {
    extra.downloaded_by = "cowkit";
    extra.downloaded = plan.packages.len();
    if plan.packages.is_empty() {
        return Ok(nothing_to_install(args));
    }
    let bar = DownloadBar::new(args.json || args.quiet, args.quiet);
    let t = Instant::now();
    let worker = |keys: &[PathBuf]| {
        crate::transcode::worker_command_io(
            4096,
            cowkit_extents::transcode::DEFAULT_PACK_BELOW,
            keys,
            false,
        )
    };
    let fetched = cowkit_dnf::stream::fetch_all(cache, plan, &bar, &worker);
    bar.bar.finish_and_clear();
    let fetched = fetched.map_err(dnf_error)?;
    extra.transcode_seconds = t.elapsed().as_secs_f64();
    extra.cache_hits = fetched.cached + fetched.reused;
    extra.cache_misses = fetched.transcoded;
    extra.cache_damaged = fetched.damaged;
    extra.not_downloaded = fetched.cached;
    extra.downloaded_bytes = bar.bytes.load(Ordering::Relaxed);
    extra.failed_attempts = fetched.failed_attempts;
    if !args.json && !args.quiet {
        eprintln!(
            "cowkit: {} package(s) fetched and transcoded as they arrived ({}) in {:.2} s, {} found in the cache by checksum",
            fetched.transcoded + fetched.reused,
            crate::output::human_bytes(extra.downloaded_bytes),
            extra.transcode_seconds,
            fetched.cached
        );
    }
    let total = match install_entries(args, root, &fetched.paths, reinstall)? {
        Ok(total) => total,
        Err(e) => return refused(&args.root, args.json, e),
    };
    import_repo_keys(args, root, plan)?;
    Ok(done(args, &total, extra))
}

/// The public keys in the `scratch` database after dnf ran (with
/// `status`), each written to a file in `dir`: those dnf imported as it
/// checked the signatures of what it downloaded into `downloads`, which
/// the root's database gets after the transaction. None when dnf
/// downloaded nothing (cowkit fetches: dnf checked nothing).
fn scratch_keys(
    args: &Request,
    scratch: Option<&cowkit_rpmdb::Scratch<'_>>,
    status: &Result<std::process::ExitStatus, CliError>,
    downloads: &cowkit_fs::workdir::WorkDir,
    dir: &tempfile::TempDir,
) -> Result<Vec<PathBuf>, CliError> {
    let (Some(scratch), Ok(status)) = (scratch, status) else {
        return Ok(Vec::new());
    };
    let (root, dir) = (&args.root, dir.path());
    let downloaded = std::fs::read_dir(downloads.path()).is_ok_and(|mut d| d.next().is_some());
    if !status.success() || !downloaded {
        return Ok(Vec::new());
    }
    let db = scratch.db();
    let what = "cannot read the keys dnf imported into the scratch database";
    let keys = cowkit_rpmdb::Rpm::new(root, db)
        .public_keys()
        .map_err(|e| CliError::new(what, e))?;
    keys.iter()
        .enumerate()
        .map(|(i, k)| {
            let p = dir.join(format!("key-{i}.asc"));
            std::fs::write(&p, k).map_err(|e| CliError::new(what, e))?;
            Ok(p)
        })
        .collect()
}

/// The key files of the repositories that required signatures imported
/// into the root's database (`gpg-pubkey` entries), as dnf's signature
/// check imports a repository's `gpgkey` into the root it installs into
/// (dnf before its transaction, cowkit after it, once the database is
/// where it stays); repositories in the order of their first package.
fn import_repo_keys(
    args: &Request,
    root: &Root,
    plan: &cowkit_dnf::plan::Plan,
) -> Result<(), CliError> {
    let mut seen = std::collections::HashSet::new();
    let files: Vec<PathBuf> = plan
        .packages
        .iter()
        .filter(|p| seen.insert(&p.repo))
        .map(|p| &plan.repos[&p.repo])
        .filter(|r| r.gpgcheck)
        .flat_map(|r| r.keys.iter().cloned())
        .collect();
    import_keys(args, root, &files)
}

/// The key files `files` imported into the root's database.
fn import_keys(args: &Request, root: &Root, files: &[PathBuf]) -> Result<(), CliError> {
    if files.is_empty() {
        return Ok(());
    }
    let what = "cannot import the repositories' keys into the root's rpm database, as dnf does";
    let db = cowkit_rpmdb::find(root, args.dbpath.as_deref())
        .map_err(|e| CliError::new(what, e))?
        .ok_or_else(|| CliError::msg(format!("{what}: the root has no rpm database")))?;
    cowkit_rpmdb::Rpm::new(&args.root, &db)
        .import_keys(files)
        .map_err(|e| CliError::new(what, e))
}

/// The download progress bar (hidden with `--json` or `--quiet`).
struct DownloadBar {
    bar: indicatif::ProgressBar,
    bytes: std::sync::atomic::AtomicU64,
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
        DownloadBar {
            bar,
            bytes: std::sync::atomic::AtomicU64::new(0),
            hidden,
            quiet,
        }
    }
}

impl cowkit_dnf::stream::Reporter for DownloadBar {
    fn on_bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
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

/// dnf downloaded nothing: said so (or `{"downloaded": 0}`), success.
fn nothing_to_install(req: &Request) -> ExitCode {
    if !req.quiet && !req.json {
        eprintln!("nothing to install: dnf downloaded no packages");
    }
    if req.json {
        crate::output::print_json(&serde_json::json!({
            "root": req.root, "ok": true, "downloaded": 0
        }));
    }
    ExitCode::SUCCESS
}

/// The downloaded packages `rpms` installed from the cache as one
/// transaction; the outer error is cowkit's (the cache), the inner one the
/// transaction's (refused, as [`refused`] reports it).
fn install(
    args: &Request,
    root: &Root,
    cache: &Cache,
    rpms: &[PathBuf],
    download: cowkit_fs::workdir::WorkDir,
    extra: &mut Extra,
    reinstall: bool,
) -> Result<Result<cowkit_install::TxSummary, cowkit_install::Error>, CliError> {
    // 2. The cache: hits by header digest, misses transcoded in parallel.
    let jobs = crate::output::jobs(args.jobs);
    // 3. One transaction. rpm checks and orders the downloaded packages
    // (the same headers as their extents files) while the misses are
    // transcoded.
    let opts = tx_options(args, root, reinstall)?;
    let t = Instant::now();
    let (prepared, cached) = std::thread::scope(|s| {
        let check = s.spawn(|| prepare(root, rpms, &opts));
        let cached = lookup_and_transcode(cache, rpms, jobs, extra, args.json || args.quiet);
        (check.join().expect("the check does not panic"), cached)
    });
    extra.transcode_seconds = t.elapsed().as_secs_f64();
    let cached = cached?;
    let mut prepared = match prepared {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    let by_rpm: std::collections::HashMap<&Path, &PathBuf> =
        rpms.iter().map(PathBuf::as_path).zip(&cached).collect();
    prepared.use_files(|p| by_rpm[p].clone());
    // The downloads go before the transaction's final `syncfs` of the
    // filesystem they share with the root, which would write back their
    // dirty pages first (most of the 0.46 s that the transaction of 450
    // MiB of packages spent outside its parts in
    // bench/results/2026-11-26-image-build-fedora-e46e9c1.md).
    prepared.release_before_final_sync(Box::new(download));
    dnf_module_state(root)?;
    Ok(prepared.run(&cowkit_install::NoProgress))
}

/// The options of `cowkit dnf`'s transaction on `root` (`reinstall`:
/// every package is a reinstall, [`cowkit_dnf::order::reinstalls`]).
fn tx_options(args: &Request, root: &Root, reinstall: bool) -> Result<TxOptions, CliError> {
    // dnf's nodocs is rpm's `--excludedocs`: the command line's, else its
    // configuration's. The languages are rpm's own `%_install_langs`, as
    // for dnf's rpm (dnf 4 has no option for them).
    let conf = config_tsflags(args)?;
    let files =
        cowkit_install::fate::Policy::from_host(args.line.nodocs || conf.nodocs, Vec::new(), None)
            .map_err(|e| CliError::new("cannot read rpm's file policy", e))?;
    Ok(TxOptions {
        install: Options {
            clone_tail: cowkit_install::clone_tail_pays_off(root),
            ..Options::default()
        },
        jobs: crate::output::jobs(args.jobs),
        db: true,
        dbpath: args.dbpath.clone(),
        noscripts: args.noscripts,
        // dnf lets rpm downgrade (its problem filter always holds
        // RPMPROB_FILTER_OLDPACKAGE): `dnf downgrade` and distro-sync.
        oldpackage: true,
        reinstall,
        // `--setopt=tsflags=justdb`: rpm's `--justdb`.
        justdb: args.line.justdb || conf.justdb,
        script_stdout_to_stderr: args.json,
        // dnf installs install-only packages (kernels) beside the old
        // versions (rpm -i), where `rpm -U` would erase them.
        install_only: cowkit_install::InstallOnly::Beside,
        lua: crate::lua::starter(),
        keep_syncs: args.keep_syncs,
        files,
        ..TxOptions::default()
    })
}

/// The `tsflags` of dnf's configuration file, unless the command line
/// set its own (dnf's `--setopt` replaces them); a flag cowkit does not
/// carry out is refused by name.
fn config_tsflags(args: &Request) -> Result<crate::dnfcli::ConfigTsflags, CliError> {
    if args.line.tsflags_given {
        return Ok(Default::default());
    }
    let conf = crate::dnfcli::tsflags_in_config(args.line.config.as_deref(), &args.root);
    if let Some(r) = &conf.refused {
        return Err(CliError::msg(format!(
            "cowkit cannot honour dnf's configuration: `{}`: {}",
            r.option, r.why
        ))
        .hint("remove it from dnf.conf's [main], or run plain dnf for this root"));
    }
    Ok(conf)
}

/// The cache entries `entries` (in dnf's order) installed as one
/// transaction; the inner error is the transaction's.
fn install_entries(
    args: &Request,
    root: &Root,
    entries: &[PathBuf],
    reinstall: bool,
) -> Result<Result<cowkit_install::TxSummary, cowkit_install::Error>, CliError> {
    let opts = tx_options(args, root, reinstall)?;
    let prepared = match prepare(root, entries, &opts) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    dnf_module_state(root)?;
    Ok(prepared.run(&cowkit_install::NoProgress))
}

/// dnf 4 saves its module state in the root (`/etc/dnf/modules.d`, made
/// when missing) right before it hands the checked transaction to rpm; a
/// root built through cowkit gets it at the same point.
fn dnf_module_state(root: &Root) -> Result<(), CliError> {
    let rel = cowkit_fs::root::RelPath::new("etc/dnf/modules.d").expect("a relative path");
    root.create_dirs(&rel, 0o755).map(drop).map_err(|e| {
        CliError::new(
            format!(
                "cannot make dnf's module state directory `{}`",
                root.display(&rel).display()
            ),
            e,
        )
    })
}

/// dnf runs the command itself (one that installs nothing, or only shows
/// or downloads), on the database cowkit uses for the root.
fn dnf_itself(
    req: &Request,
    root: &Root,
    found: Option<cowkit_rpmdb::DbPath>,
) -> Result<ExitCode, CliError> {
    let db = match found {
        Some(db) => db,
        None => cowkit_rpmdb::locate(root, req.dbpath.as_deref()).map_err(|e| {
            let macros = matches!(e, cowkit_rpmdb::Error::Macros { .. });
            let e = CliError::new("cannot set up the root's rpm database", e);
            if macros {
                e.hint("`--dbpath DIR` says where the root's database is")
            } else {
                e
            }
        })?,
    };
    let home = home_with_dbpath(&db.path)?;
    let status = dnf_command(req, home.path())?
        .status()
        .map_err(|e| CliError::new("cannot run dnf", e).hint(DNF_HINT))?;
    Ok(ExitCode::from(
        status.code().unwrap_or(1).clamp(0, 255) as u8
    ))
}

/// Whether dnf keeps downloaded packages in its cache (`keepcache`: the
/// command line, else dnf's configuration file, else no).
fn keepcache(req: &Request) -> bool {
    req.line
        .keepcache
        .or_else(|| cowkit_dnf::conf::keepcache_in_config(req.line.config.as_deref(), &req.root))
        .unwrap_or(false)
}

/// dnf resolves and downloads into `dir`. With `keepcache`, dnf first
/// downloads once more without `--downloaddir`, so that its own cache
/// keeps the packages as a plain `dnf install` leaves them (remote
/// repositories' packages are then fetched twice; local ones never are).
fn resolve_and_download(
    req: &Request,
    home: &Path,
    dir: &Path,
    plan: Option<&Path>,
) -> Result<std::process::ExitStatus, CliError> {
    let to_stderr = |c: &mut Command| -> Result<(), CliError> {
        if req.json || req.quiet {
            // Keep stdout for the summary.
            c.stdout(Stdio::from(
                std::io::stderr()
                    .lock()
                    .as_fd_owned()
                    .map_err(|e| CliError::new("cannot duplicate stderr", e))?,
            ));
        }
        Ok(())
    };
    // dnf would erase the oldest install-only packages (kernels) beyond
    // its `installonly_limit` in the same transaction, which cowkit does
    // not do: with 0 (no limit), dnf's plan erases none either. Given
    // after the user's arguments, so that it wins.
    let ours = ["-y", "--downloadonly", "--setopt=installonly_limit=0"];
    if keepcache(req) {
        let mut dnf = dnf_command(req, home)?;
        dnf.args(ours);
        to_stderr(&mut dnf)?;
        let status = dnf
            .status()
            .map_err(|e| CliError::new("cannot run dnf", e).hint(DNF_HINT))?;
        if !status.success() {
            return Ok(status);
        }
    }
    let mut dnf = dnf_command(req, home)?;
    dnf.args(ours)
        .arg(format!("--downloaddir={}", dir.display()));
    if let Some(plan) = plan {
        // dnf writes its plan and downloads nothing (cowkit fetches),
        // or downloads where cowkit cannot (`cowkit_dnf::order`).
        dnf.env("COWKIT_DNF_PLAN", plan);
        if req.downloader == Downloader::Cowkit {
            dnf.env("COWKIT_DNF_PLAN_STRICT", "1");
        }
    }
    to_stderr(&mut dnf)?;
    dnf.status()
        .map_err(|e| CliError::new("cannot run dnf", e).hint(DNF_HINT))
}

/// Look every package up in the cache by its header digest and transcode
/// the misses (and damaged entries) into it; the cache paths, in order.
fn lookup_and_transcode(
    cache: &Cache,
    rpms: &[PathBuf],
    jobs: usize,
    extra: &mut Extra,
    quiet: bool,
) -> Result<Vec<PathBuf>, CliError> {
    let mut cached = Vec::with_capacity(rpms.len());
    let mut todo: Vec<(PathBuf, String)> = Vec::new();
    for rpm in rpms {
        let file = std::fs::File::open(rpm)
            .map_err(|e| CliError::new(format!("cannot open `{}`", rpm.display()), e))?;
        let pkg = cowkit_archive::rpm::Package::read(&mut BufReader::new(file))
            .map_err(|e| CliError::new(format!("cannot read `{}`", rpm.display()), e))?;
        let digest = pkg.header_digest();
        let lookup = cache.lookup(digest).map_err(cache_error)?;
        match lookup {
            Lookup::Hit(p) => {
                extra.cache_hits += 1;
                cached.push(p);
            }
            Lookup::Miss(p) => {
                extra.cache_misses += 1;
                todo.push((rpm.clone(), digest.to_string()));
                cached.push(p);
            }
            Lookup::Damaged(p, why) => {
                extra.cache_misses += 1;
                extra.cache_damaged.push(format!(
                    "{}: {}",
                    p.display(),
                    cowkit_fs::error::chain(&why).join(": ")
                ));
                if !quiet {
                    eprintln!(
                        "warning: the cache entry `{}` is damaged ({why}); transcoding again",
                        p.display()
                    );
                }
                todo.push((rpm.clone(), digest.to_string()));
                cached.push(p);
            }
        }
    }
    transcode_all(cache, &todo, jobs)?;
    Ok(cached)
}

const DNF_HINT: &str = "install dnf (Debian: `apt-get install dnf`)";

/// The prefix of the download directories in the cache.
const DOWNLOAD_PREFIX: &str = "download.";

/// The cache at `dir`, checked ([`Cache::open`]).
fn open_cache(dir: &Path) -> Result<Cache, CliError> {
    Cache::open(dir).map_err(cache_error)
}

/// Transcode every (package, header digest) pair into a new cache entry,
/// `jobs` at a time, each in its own confined worker; an entry gets its
/// mode and name only when complete.
fn transcode_all(cache: &Cache, todo: &[(PathBuf, String)], jobs: usize) -> Result<(), CliError> {
    let next = AtomicUsize::new(0);
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let one = |rpm: &Path, digest: &str| -> Result<(), CliError> {
        let entry = cache.new_entry(digest).map_err(cache_error)?;
        let worker = crate::transcode::worker_command(
            4096,
            cowkit_extents::transcode::DEFAULT_PACK_BELOW,
            &[],
            false,
        )?;
        confined::transcode(
            worker,
            confined::Input::Path(rpm),
            confined::Output::File(entry.file()),
            false,
        )
        .map_err(|e| crate::transcode::cli_error(e, rpm))?;
        entry.commit().map_err(cache_error)?;
        Ok(())
    };
    std::thread::scope(|s| {
        for _ in 0..jobs.min(todo.len()) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((rpm, digest)) = todo.get(i) else {
                    break;
                };
                if let Err(e) = one(rpm, digest) {
                    errors
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(format!("{}: {}", rpm.display(), e.chain().join(": ")));
                }
            });
        }
    });
    let errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    if errors.is_empty() {
        Ok(())
    } else {
        Err(CliError::with_lines(
            format!(
                "cannot transcode {} package(s); nothing was installed:",
                errors.len()
            ),
            errors,
        ))
    }
}

trait AsFdOwned {
    fn as_fd_owned(&self) -> std::io::Result<std::os::fd::OwnedFd>;
}

impl<T: std::os::fd::AsFd> AsFdOwned for T {
    fn as_fd_owned(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        self.as_fd().try_clone_to_owned()
    }
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
        e => {
            let chain = cowkit_fs::error::chain(&e);
            CliError::from_chain(&chain[0], &chain[1..])
        }
    };
    match hint {
        Some(h) => cli.hint(h),
        None => cli,
    }
}

/// A cache error, with a hint for a cache others can change.
fn cache_error(e: CacheError) -> CliError {
    dnf_error(e.into())
}
