//! `cowkit rm -r PATH...`: parallel delete.

use std::path::PathBuf;
use std::process::ExitCode;

use cowkit_tree::{RemoveOptions, RemoveSummary};
use serde::Serialize;

use crate::output::{print_json, CliError};
use crate::treebar::TreeBar;

/// Arguments of `cowkit rm`.
#[derive(clap::Args)]
pub struct Args {
    /// Remove directories and their contents (required for directories).
    #[arg(short = 'r', short_alias = 'R', long)]
    recursive: bool,
    /// Ignore missing paths.
    #[arg(short, long)]
    force: bool,
    /// Parallel workers (default: the number of CPUs).
    #[arg(short, long)]
    jobs: Option<usize>,
    /// Pin each worker to its own CPU (with no more workers than CPUs):
    /// faster on XFS on an otherwise idle machine, much slower when other
    /// processes keep a CPU busy.
    #[arg(long)]
    pin: bool,
    /// Print a JSON summary.
    #[arg(long)]
    json: bool,
    /// What to remove.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
}

#[derive(Serialize)]
struct Report {
    ok: bool,
    removed: Vec<Removed>,
}

#[derive(Serialize)]
struct Removed {
    path: PathBuf,
    error: Option<Vec<String>>,
    #[serde(flatten)]
    summary: Option<RemoveSummary>,
}

impl Removed {
    /// A path that could not be removed: its error reported now (above
    /// the progress line, unless the report is JSON) and kept for the
    /// summary.
    fn failed(path: PathBuf, err: CliError, json: bool, bar: &TreeBar) -> Removed {
        if !json {
            bar.suspend(|| crate::output::report_error(&err));
        }
        Removed {
            path,
            error: Some(err.chain()),
            summary: None,
        }
    }
}

pub fn run(args: Args, quiet: bool) -> Result<ExitCode, CliError> {
    cowkit_tree::raise_fd_limit();
    let opts = RemoveOptions {
        threads: args
            .jobs
            .unwrap_or_else(cowkit_tree::default_threads)
            .max(1),
        force: args.force,
        pin: args.pin,
    };
    let bar = TreeBar::new("removed", quiet || args.json, args.json);
    let mut ok = true;
    let mut removed = Vec::new();
    for path in args.paths {
        if !args.recursive && path.symlink_metadata().is_ok_and(|m| m.is_dir()) {
            ok = false;
            let err = CliError::msg(format!(
                "cannot remove `{}`: is a directory",
                path.display()
            ))
            .hint("use -r to remove directories and their contents");
            removed.push(Removed::failed(path, err, args.json, &bar));
            continue;
        }
        match cowkit_tree::remove(&path, &opts, &bar) {
            Ok(s) => {
                ok &= s.errors.is_empty();
                removed.push(Removed {
                    path,
                    error: None,
                    summary: Some(s),
                });
            }
            Err(e) => {
                ok = false;
                let err = CliError::new(format!("cannot remove `{}`", path.display()), e);
                removed.push(Removed::failed(path, err, args.json, &bar));
            }
        }
    }
    bar.finish_and_clear();
    if args.json {
        print_json(&Report { ok, removed });
    } else if !quiet {
        for r in &removed {
            if let Some(s) = &r.summary {
                eprintln!(
                    "removed `{}`: {} files, {} directories; errors: {}",
                    r.path.display(),
                    s.files,
                    s.directories,
                    s.errors.len()
                );
            }
        }
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
