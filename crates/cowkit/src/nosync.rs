//! `cowkit nosync`: run a command without sync calls, then make its data
//! durable. See `docs/nosync.md`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};
use cowkit_nosync::run::{self, FinalSync, RunOptions};

use crate::output::CliError;

/// `cowkit nosync [OPTIONS] -- CMD [ARGS...]`
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    action: Option<Action>,
    /// After the command: `auto` syncfs's the writable, storage-backed
    /// filesystems the command's process tree changed (seen with fanotify;
    /// all of them where that is not possible: not root, an old kernel),
    /// each timed, writeback errors reported; `all` runs sync(2), then
    /// syncfs on every such filesystem to collect errors; `none` skips it.
    #[arg(long, value_enum, default_value_t = FinalSyncArg::Auto)]
    final_sync: FinalSyncArg,
    /// Do not preload the shim (only the seccomp layer).
    #[arg(long)]
    no_preload: bool,
    /// Do not install the seccomp filter (only the shim).
    #[arg(long)]
    no_seccomp: bool,
    /// Print a JSON summary on stderr at the end.
    #[arg(long)]
    json: bool,
    /// The command and its arguments.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "CMD"
    )]
    command: Vec<OsString>,
}

#[derive(Clone, Copy, ValueEnum)]
enum FinalSyncArg {
    Auto,
    All,
    None,
}

#[derive(Subcommand)]
enum Action {
    /// Install the shim into a root and register it in its
    /// /etc/ld.so.preload (or remove it), for installer environments.
    Preload(PreloadArgs),
    /// Print a kickstart %pre section that recreates and registers the
    /// shim with only bash, printf and gzip, and a %post that removes it.
    Kickstart,
}

#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("what").required(true).args(["install", "remove"])))]
struct PreloadArgs {
    /// Write the shim and add it to ROOT/etc/ld.so.preload.
    #[arg(long)]
    install: bool,
    /// Take it out of ROOT/etc/ld.so.preload and delete it.
    #[arg(long)]
    remove: bool,
    /// The root directory.
    #[arg(long, default_value = "/")]
    root: PathBuf,
}

/// `cowkit __nosync-exec [--no-seccomp] -- CMD [ARGS...]`
#[derive(clap::Args)]
pub struct ExecArgs {
    #[arg(long)]
    no_seccomp: bool,
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    command: Vec<OsString>,
}

pub fn run(args: Args, verbose: u8, quiet: bool) -> Result<ExitCode, CliError> {
    match args.action {
        Some(Action::Preload(p)) => return preload(p, quiet),
        Some(Action::Kickstart) => {
            print!("{}", cowkit_nosync::kickstart::snippet());
            return Ok(ExitCode::SUCCESS);
        }
        None => {}
    }
    let opts = options(&args, verbose, quiet)?;
    let outcome = run::run(&opts).map_err(|e| CliError::new("nosync failed", e))?;

    for s in &outcome.skipped {
        log::debug!(
            "final sync: skipped `{}` ({}): {}",
            s.mount.mount_point.display(),
            s.mount.fs_type,
            s.error
        );
    }
    if verbose > 0 && !quiet {
        say_details(&outcome);
    }
    say_problems(&outcome);
    if args.json {
        eprintln!("{}", json_report(&outcome, opts.final_sync));
    }
    if outcome.interrupted {
        // As a shell expects of a program that stops on Ctrl-C.
        run::die_like(libc::SIGINT);
    } else if let Some(sig) = outcome.signal() {
        run::die_like(sig);
    }
    Ok(ExitCode::from(outcome.exit_code().clamp(0, 255) as u8))
}

/// The run's options from the command line.
fn options(args: &Args, verbose: u8, quiet: bool) -> Result<RunOptions, CliError> {
    let Some((program, rest)) = args.command.split_first() else {
        return Err(
            CliError::msg("no command given").hint("cowkit nosync [OPTIONS] -- CMD [ARGS...]")
        );
    };
    let exe = std::env::current_exe().map_err(|e| CliError::new("cannot find cowkit itself", e))?;
    let mut opts = RunOptions::new(exe, program.clone());
    opts.args = rest.to_vec();
    opts.final_sync = match args.final_sync {
        FinalSyncArg::Auto => FinalSync::Auto,
        FinalSyncArg::All => FinalSync::All,
        FinalSyncArg::None => FinalSync::None,
    };
    opts.preload = !args.no_preload;
    opts.seccomp = !args.no_seccomp;
    opts.stats = verbose > 0 || args.json;
    if !quiet {
        opts.on_waiting = Some(say_waiting);
    }
    Ok(opts)
}

/// With `-v`: what the shim and the filter answered, and every final sync.
fn say_details(outcome: &run::Outcome) {
    if let Some(st) = &outcome.stats {
        eprintln!(
            "cowkit nosync: suppressed by the shim in {} process(es): {st}",
            st.processes
        );
        match &outcome.seccomp_answered {
            Some(c) => eprintln!(
                "cowkit nosync: answered by the seccomp layer (static binaries, Go, raw syscall): {}",
                c.iter()
                    .map(|(n, v)| format!("{n} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            None => eprintln!(
                "cowkit nosync: calls answered by the seccomp filter (static binaries, Go, raw syscall) are not counted"
            ),
        }
        if outcome.stats_truncated {
            eprintln!(
                "cowkit nosync: the counters file was larger than {} bytes; only that much was counted",
                run::STATS_LIMIT
            );
        }
    }
    if outcome.sync_suppressed {
        eprintln!(
            "cowkit nosync: final sync NOT run: this process's own sync calls are answered without running (cowkit nosync inside another one?); the outer run makes the data durable"
        );
    }
    if outcome.descendants_signalled > 0 {
        eprintln!(
            "cowkit nosync: signalled {} process(es) the command left behind",
            outcome.descendants_signalled
        );
    }
    for s in &outcome.syncs {
        eprintln!(
            "cowkit nosync: final {}: `{}` ({}) {:.1} ms{}",
            if s.fs_type == "sync(2)" {
                "sync"
            } else {
                "syncfs"
            },
            s.mount_point.display(),
            s.fs_type,
            s.elapsed.as_secs_f64() * 1e3,
            s.error
                .as_ref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        );
    }
    for (m, t) in &outcome.not_written {
        eprintln!(
            "cowkit nosync: not synced: `{}` ({t}): the command did not change it",
            m.display()
        );
    }
    for (m, t) in &outcome.mounted {
        eprintln!(
            "cowkit nosync: `{}` ({t}) was mounted during the run: synced too",
            m.display()
        );
    }
    if let Some(why) = &outcome.full_sync {
        eprintln!("cowkit nosync: sync(2) run for every filesystem: {why}");
    }
    if let Some(e) = &outcome.watch_error {
        eprintln!(
            "cowkit nosync: every writable filesystem synced: what the command changed cannot be watched ({e})"
        );
    }
    eprintln!(
        "cowkit nosync: command {:.3} s, final sync {:.3} s ({} filesystem(s)), {} orphan(s) reaped",
        outcome.command_time.as_secs_f64(),
        outcome.sync_time.as_secs_f64(),
        outcome.syncs.len(),
        outcome.orphans_reaped
    );
}

/// What went wrong at the end: failed final syncs, processes left running
/// after an interruption.
fn say_problems(outcome: &run::Outcome) {
    for s in outcome.syncs.iter().filter(|s| s.error.is_some()) {
        let e = s.error.as_ref().expect("filtered");
        eprintln!(
            "error: final syncfs of `{}` ({}) failed: {e}: data the command wrote there may not be on disk",
            s.mount_point.display(),
            s.fs_type
        );
    }
    if outcome.interrupted {
        eprintln!(
            "warning: cowkit nosync: interrupted: stopped waiting for {} process(es) the command left behind, still running; the data they write from now on is not synced:",
            outcome.left_running.len()
        );
        for l in &outcome.left_running {
            eprintln!("  {} {}", l.pid, l.command);
        }
    }
}

/// The `--json` report of the run (on stderr: stdout is the command's).
fn json_report(outcome: &run::Outcome, final_sync: FinalSync) -> serde_json::Value {
    serde_json::json!({
        "exit_code": outcome.status.code(),
        "signal": outcome.signal(),
        "orphans_reaped": outcome.orphans_reaped,
        "command_seconds": outcome.command_time.as_secs_f64(),
        "final_sync_seconds": outcome.sync_time.as_secs_f64(),
        "final_sync_ran": !outcome.sync_suppressed && final_sync != FinalSync::None,
        "final_sync_suppressed": outcome.sync_suppressed,
        "descendants_signalled": outcome.descendants_signalled,
        "stats_truncated": outcome.stats_truncated,
        "final_sync": outcome.syncs.iter().map(|s| serde_json::json!({
            "mount_point": s.mount_point,
            "fs_type": s.fs_type,
            "seconds": s.elapsed.as_secs_f64(),
            "error": s.error.as_ref().map(|e| e.to_string()),
        })).collect::<Vec<_>>(),
        "not_written": outcome.not_written.iter().map(|(m, t)| serde_json::json!({
            "mount_point": m,
            "fs_type": t,
        })).collect::<Vec<_>>(),
        "watch_error": outcome.watch_error,
        "answered_by_seccomp": outcome.seccomp_answered.as_ref().map(|c| c.iter().copied().collect::<std::collections::BTreeMap<_, _>>()),
        "suppressed_by_shim": outcome.stats.as_ref().map(|st| st.iter().collect::<std::collections::BTreeMap<_, _>>()),
        "shim": outcome.shim,
        "mounted_during_run": outcome.mounted.iter().map(|(m, t)| serde_json::json!({
            "mount_point": m,
            "fs_type": t,
        })).collect::<Vec<_>>(),
        "full_sync_reason": outcome.full_sync.as_ref().map(|f| f.to_string()),
        "interrupted": outcome.interrupted,
        "left_running": outcome.left_running.iter().map(|l| serde_json::json!({
            "pid": l.pid,
            "command": l.command,
        })).collect::<Vec<_>>(),
    })
}

/// A first Ctrl-C, once the command has ended, was passed on to what it
/// left behind: say what keeps the run waiting.
fn say_waiting(left: &[cowkit_nosync::tree::Left]) {
    let list: Vec<String> = left
        .iter()
        .map(|l| format!("{} ({})", l.pid, l.command))
        .collect();
    eprintln!(
        "cowkit nosync: waiting for {} process(es) the command left behind: {}; press Ctrl-C again to stop waiting (the final sync still runs)",
        left.len(),
        list.join(", ")
    );
}

fn preload(p: PreloadArgs, quiet: bool) -> Result<ExitCode, CliError> {
    use cowkit_nosync::preload;
    let root = p.root.display().to_string();
    if p.install {
        let c = preload::install(&p.root)
            .map_err(|e| CliError::new(format!("cannot install the shim into `{root}`"), e))?;
        if !quiet {
            println!(
                "{} `{}` in `{root}`; `{}` {}",
                if c.shim_changed {
                    "wrote"
                } else {
                    "already had"
                },
                c.shim,
                preload::PRELOAD_FILE,
                if c.preload_changed {
                    "updated"
                } else {
                    "already lists it"
                }
            );
        }
    } else {
        let c = preload::remove(&p.root)
            .map_err(|e| CliError::new(format!("cannot remove the shim from `{root}`"), e))?;
        if !quiet {
            println!(
                "{} `{}` in `{root}`; `{}` {}",
                if c.shim_changed { "removed" } else { "no" },
                c.shim,
                preload::PRELOAD_FILE,
                if c.preload_changed {
                    "updated"
                } else {
                    "did not list it"
                }
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The worker: install the filter on this process, then become CMD.
pub fn exec(args: ExecArgs) -> ExitCode {
    let Some((program, rest)) = args.command.split_first() else {
        return ExitCode::from(2);
    };
    let err = run::exec(program, rest, !args.no_seccomp, |installed| {
        if installed == Some(cowkit_nosync::filter::Installed::NoNewPrivs) {
            eprintln!(
                "warning: cowkit nosync: not privileged: no_new_privs is set, so setuid programs and file capabilities run without their privileges"
            );
        }
    });
    let code = match &err {
        cowkit_nosync::Error::Spawn { source, .. }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            127
        }
        cowkit_nosync::Error::Spawn { .. } => 126,
        _ => 125,
    };
    crate::output::report_error(&CliError::new("cowkit nosync", err));
    ExitCode::from(code)
}
