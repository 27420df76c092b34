//! `cowkit`: put file data where it must go without copying the bytes.
//!
//! A thin command line over the `cowkit-*` libraries: argument parsing,
//! human and `--json` output, progress, exit codes.
#![deny(missing_docs)]

mod cp;
mod demo;
mod dnf;
mod dnf5cli;
mod dnfcli;
mod dnfentry;
mod install;
mod lua;
mod nosync;
mod output;
mod probe;
mod rm;
mod s3;
mod store;
mod transcode;
mod treebar;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Put file data where it must go without copying the bytes: reflinks on
/// XFS and Btrfs, a correct fallback everywhere else.
#[derive(Parser)]
#[command(name = "cowkit", version, about, long_about = None, propagate_version = true)]
struct Cli {
    /// More detail (repeat for more); `RUST_LOG` also works.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Only errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Say what a filesystem can do: type, block size, whether reflinks and
    /// copy_file_range clones work (between PATH and PATH2 if given).
    Probe(probe::Args),
    /// Show what cowkit does, side by side with the usual way, in DIR: a
    /// file cloned and copied the slow way; then (as root) a small package
    /// repository built on the spot and installed into empty roots by
    /// `dnf --installroot` and by `cowkit dnf`, timed, with the blocks
    /// shared and the proof that the roots are equal.
    Demo(demo::Args),
    /// Rewrite an RPM as an extents file (`.rpme`) that installs by
    /// cloning blocks; verifies the header, every file and the payload
    /// first, in a confined worker.
    Transcode(transcode::Args),
    /// Install or upgrade packages (`.rpme` or `.rpm`) in a root directory
    /// as one rpm transaction: rpm checks and orders it, cowkit places the
    /// files, runs the scriptlets chrooted and registers the packages in
    /// the root's rpm database.
    Install(install::Args),
    /// dnf resolves and downloads for a root (`--installroot`); cowkit
    /// transcodes into a shared cache and installs: `cowkit dnf --root R
    /// -- --releasever 40 install bash`, or dnf's own command line
    /// `cowkit dnf --installroot R --releasever 40 install bash` (also as
    /// `dnf`, through a link: see `--shim-dir`). Other dnf commands
    /// (remove, list) run dnf on the same database.
    Dnf(dnf::Args),
    /// The content store: files named by SHA-256, imported by cloning
    /// (`cowkit store import TREE`, `cowkit store fsck`).
    #[command(subcommand)]
    Store(store::StoreCmd),
    /// Read-only images over the store that share page cache between
    /// images (`cowkit image create NAME --from TREE`, `mount`, `umount`).
    #[command(subcommand)]
    Image(store::ImageCmd),
    /// Copy files and directory trees in parallel, cloning file data
    /// (`-a`: everything preserved, like `cp -a`).
    Cp(cp::Args),
    /// Remove files and directory trees in parallel (`-r`, like `rm -r`).
    Rm(rm::Args),
    /// S3 gateway over a directory (`cowkit s3 serve --root DIR`):
    /// objects are plain files, multipart uploads complete by cloning.
    S3(s3::Args),
    /// Run a command with every sync call (fsync, fdatasync, sync, syncfs,
    /// sync_file_range, msync, O_SYNC opens) turned into a no-op, for every
    /// kind of binary; then syncfs what it wrote and exit with its status.
    Nosync(nosync::Args),
    /// (internal) installs the nosync seccomp filter, then runs the command.
    #[command(name = "__nosync-exec", hide = true)]
    NosyncExec(nosync::ExecArgs),
    /// (internal) the confined transcoding worker.
    #[command(name = "__transcode-worker", hide = true)]
    TranscodeWorker(transcode::WorkerArgs),
    /// (internal) the host process of rpm's Lua for one transaction's
    /// `<lua>` scriptlets (`cowkit_rpmlua::host_main`).
    #[command(name = "__lua-host", hide = true)]
    LuaHost,
}

fn main() -> ExitCode {
    // dnf's own command line: as `dnf` (a link to cowkit), or `cowkit dnf
    // --installroot R ...`.
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let dnf = if let Some(invoked) = dnfentry::invoked_as_dnf(&argv) {
        Some((false, argv[1..].to_vec(), invoked))
    } else {
        dnfentry::dnf_form(&argv).map(|(q, a)| (q, a, dnfentry::Invoked::Dnf))
    };
    if let Some((quiet, args, invoked)) = dnf {
        init_logging(
            if quiet {
                log::LevelFilter::Error
            } else {
                log::LevelFilter::Warn
            },
            false,
        );
        remove_temporaries_on_signals();
        let code = dnfentry::main(args, quiet, invoked);
        exit_if_interrupted();
        return code;
    }
    let cli = Cli::parse();
    let cli = match cli.command {
        Command::TranscodeWorker(args) => return transcode::worker(args),
        Command::NosyncExec(args) => return nosync::exec(args),
        Command::LuaHost => return cowkit_rpmlua::host_main(),
        _ => cli,
    };
    let level = match (cli.quiet, cli.verbose) {
        (true, _) => log::LevelFilter::Error,
        (false, 0) => log::LevelFilter::Warn,
        (false, 1) => log::LevelFilter::Info,
        (false, 2) => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    init_logging(level, matches!(cli.command, Command::S3(_)) && !cli.quiet);
    if matches!(
        cli.command,
        Command::Transcode(_)
            | Command::Install(_)
            | Command::Dnf(_)
            | Command::Store(_)
            | Command::Image(_)
    ) {
        remove_temporaries_on_signals();
    }
    let res = match cli.command {
        Command::Probe(args) => probe::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Transcode(args) => transcode::run(args, cli.quiet),
        Command::Install(args) => install::run(args, cli.quiet),
        Command::Dnf(args) => dnf::run(args, cli.quiet),
        Command::Store(cmd) => store::run_store(cmd, cli.quiet),
        Command::Image(cmd) => store::run_image(cmd, cli.quiet),
        Command::Cp(args) => cp::run(args, cli.quiet),
        Command::Rm(args) => rm::run(args, cli.quiet),
        Command::S3(args) => s3::run(args),
        Command::Nosync(args) => nosync::run(args, cli.verbose, cli.quiet),
        Command::TranscodeWorker(_) | Command::NosyncExec(_) | Command::LuaHost => {
            unreachable!("handled above")
        }
    };
    let code = match res {
        Ok(code) => code,
        Err(e) => {
            output::report_error(&e);
            ExitCode::FAILURE
        }
    };
    exit_if_interrupted();
    code
}

/// The logger at `level` (`RUST_LOG` also read); with `access_log`, the S3
/// gateway's access log (one JSON line per request) at least at info.
fn init_logging(level: log::LevelFilter, access_log: bool) {
    let mut logger = env_logger::Builder::new();
    logger.filter_level(level);
    if access_log {
        logger.filter_module("cowkit_s3", level.max(log::LevelFilter::Info));
    }
    logger
        .parse_env("RUST_LOG")
        .format_target(false)
        .format_timestamp(None)
        .init();
}

/// On SIGINT, SIGTERM or SIGHUP: remove the named temporary files this
/// process has not committed yet (`cowkit_fs::dir::remove_live_temporaries`:
/// where a filesystem has no `O_TMPFILE`, a new file has a name from the
/// start) and its working directories (`cowkit_fs::workdir::remove_live`:
/// `cowkit dnf`'s download directory, a new root's scratch database),
/// then die of the signal as if it had not been caught. A worker
/// (`__transcode-worker`) dies with us (`PR_SET_PDEATHSIG`).
///
/// While a transaction places packages and runs their scriptlets, the
/// signal waits for its end instead, as rpm's does
/// (`cowkit_install::interrupt`): the user is told which scriptlets run,
/// and [`exit_if_interrupted`] dies of it afterwards.
///
/// A signal ignored on entry stays ignored, as rpm and shells leave it
/// (`nohup cowkit ...` survives the hangup).
fn remove_temporaries_on_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let caught = [SIGINT, SIGTERM, SIGHUP]
        .into_iter()
        .filter(|&s| !cowkit_sys::process::signal_ignored(s));
    let Ok(mut signals) = signal_hook::iterator::Signals::new(caught) else {
        return;
    };
    std::thread::spawn(move || {
        for sig in signals.forever() {
            let running = cowkit_install::interrupt::deliver(sig, || die_of(sig));
            output::report_deferred_signal(sig, &running);
        }
    });
}

/// Clean up as [`remove_temporaries_on_signals`] does and die of `sig`.
fn die_of(sig: i32) {
    cowkit_fs::dir::remove_live_temporaries();
    cowkit_fs::workdir::remove_live();
    let _ = signal_hook::low_level::emulate_default_handler(sig);
    std::process::exit(128 + sig);
}

/// After a command: die of a signal a transaction deferred (rpm exits
/// the same way once its transaction has ended).
fn exit_if_interrupted() {
    if let Some(sig) = cowkit_install::interrupt::take_deferred() {
        die_of(sig);
    }
}
