//! `cowkit install --root DIR PKG...`: one rpm-style transaction
//! (`cowkit_install::txn`): rpm checks and orders it, cowkit places the
//! files (extents files by cloning, plain RPMs by streaming), runs the
//! scriptlets and registers the packages in the root's rpm database.

use std::path::PathBuf;
use std::process::ExitCode;

use cowkit_fs::root::Root;
use cowkit_fs::{Chain, Method};
use cowkit_install::{Options, Progress, TxOptions, TxSummary};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::output::{print_fallbacks, print_json, report_error, tally_text, CliError};
use crate::transcode::Decoding;

/// How file data may be moved.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Reflink {
    /// Clone, fall back to copy_file_range, then to read/write.
    Auto,
    /// Clone or fail.
    Always,
    /// Never share blocks: read and write.
    Never,
}

/// Arguments of `cowkit install`.
#[derive(clap::Args)]
#[command(
    mut_arg("key", |a| a.help("Require a valid OpenPGP header signature by a key in FILE (or in any key file of a directory) on every package; may be repeated")),
    mut_arg("no_confine", |a| a.help("Decompress `.rpm` payloads in this process, as a stream, instead of in the confined transcode worker (faster where blocks cannot be shared, e.g. ext4; the decoders then run unconfined)")),
)]
pub struct Args {
    /// The directory to install into (it must exist; an absolute path, as
    /// rpm requires, unless with `--no-db --noscripts`).
    #[arg(long)]
    root: PathBuf,
    /// Packages: extents files (`.rpme`, from `cowkit transcode`) or plain
    /// `.rpm` files. Installed as one transaction in rpm's order; a newer
    /// version of an installed package upgrades it (`rpm -U`), except an
    /// install-only one (a kernel), which is refused: `cowkit dnf`
    /// installs it beside the old one, as dnf does, and so does `-i`.
    /// Packages rpm leaves out as it adds them (an older version of a name
    /// given twice, the same package again, one another obsoletes) are
    /// not installed, with rpm's warning.
    #[arg(required = true)]
    packages: Vec<PathBuf>,
    /// Install every package beside the installed versions of its name,
    /// never upgrading them (rpm's `-i`/`--install`): two versions given
    /// together are both installed.
    #[arg(short = 'i', long = "beside")]
    beside: bool,
    /// Parallel jobs (default: the number of CPUs).
    #[arg(short, long)]
    jobs: Option<usize>,
    /// Re-hash every installed file against the package header afterwards.
    #[arg(long)]
    verify: bool,
    /// Whether blocks may be shared with the extents file.
    #[arg(long, value_enum, default_value_t = Reflink::Auto)]
    reflink: Reflink,
    /// Clone each file's partial last block and truncate, instead of
    /// writing the tail (the default on Btrfs only, where it measured
    /// faster; for measurements elsewhere).
    #[arg(long, hide = true)]
    clone_tail: bool,
    /// Wait for rpm's check of a new root's transaction before placing
    /// any file (by default, packages without scriptlets have the files of
    /// their new directories placed, unseen, while rpm checks; for
    /// measurements).
    #[arg(long, hide = true)]
    check_first: bool,
    /// The rpm database inside the root (default: an existing one, else
    /// `%_dbpath` from the root's rpm macros, else /var/lib/rpm).
    #[arg(long, value_name = "DIR")]
    dbpath: Option<String>,
    /// Do not check with or register in the root's rpm database (no
    /// conflict checks, no upgrades, the order given).
    #[arg(long)]
    no_db: bool,
    /// Do not check dependencies (like `rpm --nodeps`).
    #[arg(long)]
    nodeps: bool,
    /// Let files of these packages replace other installed packages' files.
    #[arg(long)]
    replacefiles: bool,
    /// Allow downgrades: a package older than the installed version of its
    /// name replaces it (rpm's `--oldpackage`).
    #[arg(long)]
    oldpackage: bool,
    /// Allow a package that is installed already (the same NEVRA): it
    /// replaces the installed one (rpm's `--replacepkgs`).
    #[arg(long)]
    replacepkgs: bool,
    /// `--replacepkgs --replacefiles --oldpackage`, as rpm's `--force`.
    #[arg(long)]
    force: bool,
    /// Reinstall: each package replaces the installed package of the same
    /// NEVRA, and only that one (rpm's `--reinstall`).
    #[arg(long, conflicts_with = "freshen")]
    reinstall: bool,
    /// Upgrade only the packages whose name is installed in an older
    /// version (with `--oldpackage`, also a newer one); the others are left
    /// out silently, as by rpm's `-F`/`--freshen`.
    #[arg(short = 'F', long)]
    freshen: bool,
    /// Only register the packages in the database: no file is placed or
    /// removed and no scriptlet or trigger runs (rpm's `--justdb`).
    #[arg(long, conflicts_with = "no_db")]
    justdb: bool,
    /// Define an rpm macro for the transaction, `'NAME VALUE'` (rpm's
    /// `--define`); may be repeated. Only macros cowkit honours exactly:
    /// `_transaction_color`, `_prefer_color`, `_netsharedpath`,
    /// `_install_langs`, `_excludedocs`, `_minimize_writes`; any other
    /// is refused.
    #[arg(long, value_name = "'NAME VALUE'")]
    define: Vec<String>,
    /// Set no file capabilities (rpm's `--nocaps`); the database still
    /// records them.
    #[arg(long)]
    nocaps: bool,
    /// Run no scriptlets (like `rpm --noscripts`).
    #[arg(long)]
    noscripts: bool,
    /// Do not install documentation files (rpm's `--excludedocs`; also
    /// `--nodocs`, dnf's spelling).
    #[arg(long, alias = "nodocs")]
    excludedocs: bool,
    /// Do not install the files under PATH (an absolute path; rpm's
    /// `--excludepath`); may be repeated.
    #[arg(long, value_name = "PATH")]
    excludepath: Vec<String>,
    /// Let scriptlets' sync calls (`fsync`, `sync`, `syncfs`, ...), and
    /// those of rpm registering a new root's packages, reach the kernel.
    /// By default, in a root other than `/`, they are answered
    /// without running (the root is being built: a crash loses it anyway)
    /// and the root's filesystems get one `syncfs` at the end; `/` always
    /// keeps its syncs.
    #[arg(long)]
    keep_syncs: bool,
    /// Only check the transaction and print the plan (like `rpm --test`).
    #[arg(long)]
    test: bool,
    #[command(flatten)]
    decoding: Decoding,
    /// Print a JSON summary (scriptlets' output then goes to stderr).
    #[arg(long)]
    json: bool,
}

/// Check `--key` on the extents files given (their headers only: no
/// payload is decoded here), and make the stager that decodes each plain
/// `.rpm` just before it is placed: the confined transcode worker (with
/// the `--key` check) writes an `.rpme` into an unnamed file in the root's
/// filesystem, whose blocks the install then clones, and which is dropped
/// once the package is placed.
fn stager(
    root: &Root,
    packages: &[PathBuf],
    keys: &[PathBuf],
    confine: bool,
) -> Result<Option<cowkit_install::Stager>, CliError> {
    if !confine && !keys.is_empty() {
        return Err(CliError::msg(
            "--key needs the confined worker: leave out --no-confine",
        ));
    }
    if !keys.is_empty() {
        let mut k = cowkit_archive::pgp::Keyring::new();
        for p in keys {
            k.add(p)
                .map_err(|e| CliError::new(format!("cannot load the key `{}`", p.display()), e))?;
        }
        for p in packages {
            let ctx = || format!("cannot install `{}`", p.display());
            let file = std::fs::File::open(p).map_err(|e| CliError::new(ctx(), e))?;
            if cowkit_extents::open::is_extents_file(&file).map_err(|e| CliError::new(ctx(), e))? {
                let x = cowkit_extents::open::ExtentsFile::open(file, p)
                    .map_err(|e| CliError::new(ctx(), e))?;
                k.verify_header(x.package()).map_err(|e| {
                    CliError::new(ctx(), e).hint(
                        "check that the package is signed and that --key names the right public key",
                    )
                })?;
            }
        }
    }
    if !confine {
        return Ok(None);
    }
    let dir = rustix::io::fcntl_dupfd_cloexec(root.fd(), 0)
        .map_err(|e| CliError::new(format!("cannot open `{}`", root.path().display()), e))?;
    let dir_path = root.path().to_path_buf();
    let block = cowkit_fs::align::block_size(root.fd()).unwrap_or(4096) as u32;
    let keys = keys.to_vec();
    Ok(Some(std::sync::Arc::new(
        move |p: &std::path::Path| -> cowkit_install::Result<Option<std::fs::File>> {
            let fail = |why: String| cowkit_install::Error::Staging {
                path: p.to_path_buf(),
                why,
            };
            let file = std::fs::File::open(p).map_err(|e| fail(e.to_string()))?;
            if cowkit_extents::open::is_extents_file(&file).map_err(|e| fail(e.to_string()))? {
                return Ok(None);
            }
            let new = cowkit_fs::dir::NewFile::anonymous(
                std::os::fd::AsFd::as_fd(&dir),
                &dir_path,
                0o600,
            )
            .map_err(|e| fail(e.to_string()))?;
            let cmd = crate::transcode::worker_command(
                block,
                cowkit_extents::transcode::DEFAULT_PACK_BELOW,
                &keys,
                false,
            )
            .map_err(|e| fail(e.chain().join(": ")))?;
            cowkit_extents::confined::transcode(
                cmd,
                cowkit_extents::confined::Input::Path(p),
                cowkit_extents::confined::Output::File(new.file()),
                false,
            )
            .map_err(|e| {
                let c = crate::transcode::cli_error(e, p).chain();
                fail(
                    c.get(1..)
                        .filter(|r| !r.is_empty())
                        .unwrap_or(&c)
                        .join(": "),
                )
            })?;
            let f = new.file().try_clone().map_err(|e| fail(e.to_string()))?;
            Ok(Some(f))
        },
    )))
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn on_bytes(&self, bytes: u64) {
        self.0.inc(bytes);
    }
}

#[derive(Serialize)]
struct Report<'a, E: Serialize> {
    root: &'a std::path::Path,
    ok: bool,
    #[serde(flatten)]
    extra: E,
    #[serde(flatten)]
    summary: &'a TxSummary,
}

/// How a transaction's outcome is shown.
pub(crate) struct Show<'a> {
    pub root: &'a std::path::Path,
    pub json: bool,
    pub quiet: bool,
    pub verify: bool,
}

/// Print a transaction's outcome (JSON with `extra` fields, or text) and
/// turn it into the exit status.
pub(crate) fn finish(show: &Show<'_>, total: &TxSummary, extra: impl Serialize) -> ExitCode {
    let sync_error = total
        .nosync
        .as_ref()
        .and_then(|n| n.final_sync_error.as_ref());
    let ok = total.failed.is_empty() && total.erase_failed.is_empty() && sync_error.is_none();
    // What failed is said on stderr in either form: a `--json` reader
    // finds it in the report too, a person reading the log finds it here.
    for f in &total.failed {
        report_error(&CliError::from_chain(
            format!("cannot install `{}`", f.package.display()),
            &f.error,
        ));
        if f.placed_files > 0 {
            eprintln!(
                "note: {} file(s) of {} had been placed before it failed; they stay, as with rpm",
                f.placed_files, f.nevra
            );
        }
    }
    for f in &total.erase_failed {
        report_error(&CliError::from_chain(
            format!(
                "{}: {}; it stays installed, files and database entry, as with rpm",
                f.nevra, f.outcome
            ),
            &f.error,
        ));
    }
    if let Some(chain) = sync_error {
        report_error(&CliError::from_chain(
            "the final sync of the root failed: what the transaction wrote may not be on disk"
                .to_string(),
            chain,
        ));
    }
    if show.json {
        print_json(&Report {
            root: show.root,
            ok,
            extra,
            summary: total,
        });
    } else if !show.quiet {
        print_text(show, total);
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// rpm refuses a relative `--root` (scriptlets run chrooted into it), and
/// so does cowkit where rpm or scriptlets are involved, before anything.
pub(crate) fn absolute_root(root: &std::path::Path) -> Result<(), CliError> {
    if root.is_absolute() {
        return Ok(());
    }
    Err(relative_root(root))
}

/// The error for a relative root ([`absolute_root`]).
pub(crate) fn relative_root(root: &std::path::Path) -> CliError {
    CliError::msg(format!(
        "--root `{}` is not an absolute path (rpm refuses one too: `--root` must begin with a /)",
        root.display()
    ))
    .hint(format!(
        "give the root as an absolute path, e.g. `--root \"$PWD/{}\"`",
        root.display()
    ))
}

pub fn run(args: Args, quiet: bool) -> Result<ExitCode, CliError> {
    // Only placing files (`--no-db --noscripts`) is not rpm's business: a
    // relative root is fine there.
    if !(args.no_db && args.noscripts) {
        absolute_root(&args.root)?;
    }
    cowkit_fs::dir::raise_fd_limit();
    let root = Root::open(&args.root).map_err(|e| {
        CliError::new(format!("cannot install into `{}`", args.root.display()), e)
            .hint("create the root directory first (`mkdir -p`)")
    })?;
    let jobs = crate::output::jobs(args.jobs);
    if let Some(bad) = args.excludepath.iter().find(|p| !p.starts_with('/')) {
        return Err(CliError::msg(format!(
            "--excludepath `{bad}` is not an absolute path (rpm refuses it too: exclude paths must begin with a /)"
        )));
    }
    let defines = args
        .define
        .iter()
        .map(|d| cowkit_install::fate::define(d))
        .collect::<Result<Vec<_>, String>>()
        .map_err(|why| {
            CliError::msg(why).hint(
                "leave the macro out, or run rpm itself for this transaction (`rpm --root DIR --define ... -U PKG`)",
            )
        })?;
    let files = cowkit_install::fate::Policy::from_host_defined(
        args.excludedocs,
        args.excludepath.clone(),
        None,
        defines,
    )
    .map_err(|e| CliError::new("cannot read rpm's file policy", e))?;
    let opts = TxOptions {
        install: Options {
            chain: match args.reflink {
                Reflink::Auto => Chain::AUTO,
                Reflink::Always => Chain::only(Method::Clone),
                Reflink::Never => Chain::only(Method::ReadWrite),
            },
            // The transaction gives a package more threads when it is
            // placed alone.
            threads: 1,
            verify: args.verify,
            clone_tail: args.clone_tail || cowkit_install::clone_tail_pays_off(&root),
            nocaps: args.nocaps,
            ..Options::default()
        },
        jobs,
        db: !args.no_db,
        dbpath: args.dbpath.clone(),
        nodeps: args.nodeps,
        replacefiles: args.replacefiles || args.force,
        oldpackage: args.oldpackage || args.force,
        replacepkgs: args.replacepkgs || args.force,
        reinstall: args.reinstall,
        justdb: args.justdb,
        noscripts: args.noscripts,
        test: args.test,
        script_stdout_to_stderr: args.json,
        no_overlap: args.check_first,
        install_only: if args.beside {
            cowkit_install::InstallOnly::Every
        } else {
            cowkit_install::InstallOnly::Refuse
        },
        lua: crate::lua::starter(),
        keep_syncs: args.keep_syncs,
        files,
        // `rpm -U`'s elements.
        handed: Vec::new(),
    };
    let bar = ProgressBar::new(0);
    if quiet || args.json || args.test {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {binary_bytes} installed ({binary_bytes_per_sec}) {msg}",
        )
        .expect("valid template"),
    );
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let progress = Bar(bar.clone());
    // A transaction a killed run left unfinished is finished first.
    let recovered = match recover(&root, &opts, &args.packages) {
        Ok(r) => r,
        Err(e) => {
            bar.finish_and_clear();
            return refused_with(&args.root, args.json, e);
        }
    };
    // `-F`: rpm's own choice of the packages to upgrade; the others are
    // left out silently, and with none left nothing is done (as rpm).
    let packages = if args.freshen {
        match cowkit_install::txn::freshen(&root, &args.packages, &opts) {
            Ok(p) => p,
            Err(e) => {
                bar.finish_and_clear();
                return refused(&args.root, args.json, e);
            }
        }
    } else {
        args.packages.clone()
    };
    if packages.is_empty() {
        bar.finish_and_clear();
        let total = TxSummary {
            recovered,
            ..TxSummary::default()
        };
        return Ok(finish(
            &Show {
                root: &args.root,
                json: args.json,
                quiet: true,
                verify: false,
            },
            &total,
            (),
        ));
    }
    let result = match cowkit_install::prepare(&root, &packages, &opts) {
        Ok(mut prepared) => {
            match stager(
                &root,
                &packages,
                &args.decoding.key,
                !args.decoding.no_confine,
            ) {
                Ok(Some(s)) => prepared.stage_with(s),
                Ok(None) => {}
                Err(e) => {
                    bar.finish_and_clear();
                    return refused_with(&args.root, args.json, e);
                }
            }
            prepared.run(&progress)
        }
        Err(e) => Err(e),
    };
    bar.finish_and_clear();
    let mut total = match result {
        Ok(t) => t,
        Err(e) => return refused(&args.root, args.json, e),
    };
    if recovered.is_some() {
        total.recovered = recovered;
    }
    Ok(finish(
        &Show {
            root: &args.root,
            json: args.json,
            quiet,
            verify: args.verify,
        },
        &total,
        (),
    ))
}

/// Finish the transaction a killed run left on `root` (its journal), and
/// say what was found and done (on stderr; `--json` also has it as
/// `recovered`).
pub(crate) fn recover(
    root: &Root,
    opts: &TxOptions,
    packages: &[PathBuf],
) -> Result<Option<cowkit_install::Recovery>, CliError> {
    let r = cowkit_install::recover(root, opts, packages).map_err(|e| {
        recover_error(
            format!(
                "cannot finish the transaction a killed run left in `{}`",
                root.path().display()
            ),
            e,
        )
    })?;
    if let Some(r) = &r {
        say_recovered(r);
    }
    Ok(r)
}

/// A transaction a killed run left that cannot be finished: `context`,
/// why, and what the user can do.
pub(crate) fn recover_error(
    context: impl std::fmt::Display,
    e: impl std::error::Error + Send + Sync + 'static,
) -> CliError {
    CliError::new(context, e).hint("the journal names the packages: make them readable again where it says, or remove the journal to leave the root as it is (then `rpm -Va` shows what differs)")
}

/// Say on stderr what was found and done of a transaction a killed run
/// left.
pub(crate) fn say_recovered(r: &cowkit_install::Recovery) {
    eprintln!(
        "cowkit: `{}` holds a transaction a killed run left (stage {})",
        r.journal.display(),
        r.stage
    );
    for f in &r.found {
        eprintln!("  found: {f}");
    }
    for d in &r.did {
        eprintln!("  done: {d}");
    }
}

/// The whole transaction was refused (nothing was changed): the error,
/// with a hint, as text or JSON.
pub(crate) fn refused(
    root: &std::path::Path,
    json: bool,
    e: cowkit_install::Error,
) -> Result<ExitCode, CliError> {
    let hint = hint_for(&e);
    let mut err = CliError::new(format!("cannot install into `{}`", root.display()), e);
    if let Some(h) = hint {
        err = err.hint(h);
    }
    refused_with(root, json, err)
}

/// The whole transaction was refused with `err`: as text or JSON.
fn refused_with(root: &std::path::Path, json: bool, err: CliError) -> Result<ExitCode, CliError> {
    if !json {
        return Err(err);
    }
    #[derive(Serialize)]
    struct Refused<'a> {
        root: &'a std::path::Path,
        ok: bool,
        error: Vec<String>,
    }
    print_json(&Refused {
        root,
        ok: false,
        error: err.chain(),
    });
    report_error(&err);
    Ok(ExitCode::FAILURE)
}

/// A `hint:` for errors that have a known fix.
fn hint_for(e: &cowkit_install::Error) -> Option<&'static str> {
    use cowkit_install::Error;
    use cowkit_rpmdb::Error as Db;
    match e {
        Error::Unsupported { problems } if problems.iter().any(|p| p.contains("librpmio")) => {
            Some("install rpm's library (Debian: `apt-get install librpmio9 librpm9`), which has the Lua rpm runs scriptlets in")
        }
        Error::WouldErase { .. } => Some(
            "erase these packages first (`rpm -e`, `cowkit dnf -- remove`), then install",
        ),
        Error::InstallOnly { problems } if problems.iter().any(|p| p.contains("upgraded")) => Some(
            "install the install-only packages in a transaction of their own (e.g. `cowkit dnf -- upgrade kernel*`, then `cowkit dnf -- upgrade --exclude 'kernel*'`)",
        ),
        Error::InstallOnly { .. } => Some(
            "`cowkit install -i` (rpm's `-i`) or `cowkit dnf -- install PKG.rpm` installs it beside the old version, as dnf does; to replace the old version, erase it first (`rpm -e`)",
        ),
        Error::RelativeRoot { .. } => Some("give the root as an absolute path"),
        Error::Db(Db::Problems { problems }) if problems.iter().any(|p| p.contains("is needed by")) => {
            Some("install the packages that provide them in the same transaction, or pass `--nodeps`")
        }
        Error::Db(Db::Problems { problems }) if problems.iter().any(|p| p.contains("conflicts")) => {
            Some("`--replacefiles` lets these packages replace installed packages' files")
        }
        Error::Db(Db::Problems { problems })
            if problems.iter().any(|p| p.contains("which is newer than")) =>
        {
            Some("`--oldpackage` lets an older version replace the installed one (a downgrade)")
        }
        Error::Db(Db::Problems { problems })
            if problems.iter().any(|p| p.contains("already installed")) =>
        {
            Some("`rpm -q` shows what is installed; nothing needs doing for these packages (`--reinstall` installs them again)")
        }
        Error::Db(Db::Macros { .. }) => {
            Some("`--dbpath DIR` says where the root's database is (e.g. /usr/lib/sysimage/rpm)")
        }
        Error::Db(Db::Spawn { .. }) => {
            Some("install rpm (Debian: `apt-get install rpm`), or pass `--no-db`")
        }
        Error::Db(Db::UnsupportedRpm { .. }) => Some(
            "run cowkit where rpm 4.18 is the `rpm` program, or name one with COWKIT_RPM=/path/to/rpm; `--no-db` places the files without registering them",
        ),
        _ => None,
    }
}

fn print_text(args: &Show<'_>, total: &TxSummary) {
    // rpm's own words (it prints them with `-v`) for the packages it left
    // out: they are not installed.
    for d in &total.dropped {
        eprintln!("warning: {d}");
    }
    if total.test {
        eprintln!(
            "test only: {} package(s) would be installed in this order, nothing was changed:",
            total.order.len()
        );
        for n in &total.order {
            eprintln!("  {n}");
        }
        for (o, n) in &total.upgraded {
            eprintln!("  {o} would be upgraded to {n}");
        }
        for (o, n) in &total.erased {
            eprintln!("  {o} would be erased (replaced by {n})");
        }
        if !total.plan.is_empty() {
            eprintln!("the plan, in rpm's order:");
        }
        for e in &total.plan {
            match &e.run {
                Some(r) => {
                    let args: Vec<String> =
                        r.arg1.iter().chain(&r.arg2).map(i64::to_string).collect();
                    let files = r
                        .files
                        .as_ref()
                        .map(|f| format!(" ({} file(s) on its input)", f.len()))
                        .unwrap_or_default();
                    eprintln!("  run {} {}{files}", r.name, args.join(" "));
                }
                None => eprintln!("  {} {}", e.action, e.element),
            }
        }
        return;
    }
    let s = &total.files;
    for w in s.warnings.iter().chain(&total.scriptlet_warnings) {
        eprintln!("warning: {w}");
    }
    for c in &total.config {
        let text = match c.action {
            "rpmnew" => format!("{} created as {}.rpmnew", c.path, c.path),
            "rpmsave" => format!("{} saved as {}.rpmsave", c.path, c.path),
            "rpmorig" => format!("{} saved as {}.rpmorig", c.path, c.path),
            _ => format!("{} kept (edited; the new version changes nothing)", c.path),
        };
        eprintln!("warning: {text}");
    }
    eprintln!(
        "installed {} package(s) into `{}`: {} files ({} hardlinks), {} directories, {} symlinks; {}{}",
        s.packages,
        args.root.display(),
        s.files,
        s.hardlinks,
        s.directories,
        s.symlinks,
        tally_text(&s.tally),
        if args.verify {
            format!("; {} files verified", s.verified)
        } else {
            String::new()
        }
    );
    if let Some(db) = &total.db {
        eprintln!(
            "registered {} package(s) in the rpm database `{}`{}; {} scriptlet(s) run{}",
            total.registered,
            db.path,
            match &db.source {
                cowkit_rpmdb::Source::Option => " (--dbpath)".to_string(),
                cowkit_rpmdb::Source::Existing => " (existing)".to_string(),
                cowkit_rpmdb::Source::RootMacros(f) => format!(" (%_dbpath in {f})"),
                cowkit_rpmdb::Source::Default => " (rpm's default)".to_string(),
                cowkit_rpmdb::Source::Rpm => " (%_dbpath of the rpm program)".to_string(),
            },
            total.scriptlets,
            if total.upgraded.is_empty() && total.erased.is_empty() {
                String::new()
            } else {
                format!(
                    "; {} upgrade(s), {} erased, {} old file(s) removed",
                    total.upgraded.len(),
                    total.erased.len(),
                    total.old_files_removed
                )
            }
        );
    }
    if let Some(n) = &total.nosync {
        print_nosync(n);
    }
    for (new, kept) in &total.installed_beside {
        eprintln!(
            "{new} installed beside {} (install-only: nothing erased)",
            kept.join(", ")
        );
    }
    print_fallbacks(&s.tally);
}

/// What the scriptlets' session did (`--keep-syncs` turns it off).
fn print_nosync(n: &cowkit_install::nosync::NosyncSummary) {
    let calls: Vec<String> = n
        .answered
        .iter()
        .filter(|(_, c)| **c > 0)
        .map(|(k, c)| format!("{k} {c}"))
        .collect();
    let calls = match calls.is_empty() {
        true => "none".to_string(),
        false => calls.join(", "),
    };
    eprintln!(
        "scriptlets' sync calls answered without running (--keep-syncs lets them through): {calls}"
    );
    if n.uncounted > 0 {
        eprintln!(
            "  {} scriptlet(s) ran under another supervisor's filter: their calls were not counted",
            n.uncounted
        );
    }
    if n.final_sync_suppressed {
        eprintln!("  final sync NOT run: cowkit itself runs under a filter that answers sync calls (the outer one syncs at its end)");
    }
    if let Some(why) = &n.full_sync_reason {
        eprintln!("  sync(2) run for every filesystem: {why}");
    }
    for (at, ty, secs) in &n.final_sync {
        eprintln!("  final sync of `{}` ({ty}): {secs:.3} s", at.display());
    }
    if n.still_running > 0 {
        eprintln!("  warning: {} scriptlet process(es) still running: their sync calls now fail with ENOSYS", n.still_running);
    }
}
