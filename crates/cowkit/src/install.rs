//! `cowkit install --root DIR PKG...`: extents files by cloning, plain
//! RPMs by streaming; several packages at once.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use cowkit_fs::root::Root;
use cowkit_fs::{Chain, Method};
use cowkit_install::{install, Options, Owners, Progress, Summary};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use crate::output::{print_fallbacks, print_json, report_error, tally_text, CliError};

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
pub struct Args {
    /// The directory to install into (it must exist).
    #[arg(long)]
    root: PathBuf,
    /// Packages: extents files (`.rpme`, from `cowkit transcode`) or plain
    /// `.rpm` files.
    #[arg(required = true)]
    packages: Vec<PathBuf>,
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
    /// Print a JSON summary.
    #[arg(long)]
    json: bool,
}

struct Bar(ProgressBar);

impl Progress for Bar {
    fn on_bytes(&self, bytes: u64) {
        self.0.inc(bytes);
    }
}

#[derive(Serialize)]
struct Report<'a> {
    root: &'a std::path::Path,
    ok: bool,
    failed: Vec<Failure>,
    #[serde(flatten)]
    summary: &'a Summary,
}

#[derive(Serialize)]
struct Failure {
    package: PathBuf,
    error: Vec<String>,
}

pub fn run(args: Args, quiet: bool) -> Result<ExitCode, CliError> {
    let root = Root::open(&args.root).map_err(|e| {
        CliError::new(format!("cannot install into `{}`", args.root.display()), e)
            .hint("create the root directory first (`mkdir -p`)")
    })?;
    let owners = Owners::load(&root);
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .max(1);
    let workers = jobs.min(args.packages.len());
    let opts = Options {
        chain: match args.reflink {
            Reflink::Auto => Chain::AUTO,
            Reflink::Always => Chain::only(Method::Clone),
            Reflink::Never => Chain::only(Method::ReadWrite),
        },
        threads: (jobs / workers).max(1),
        verify: args.verify,
        clone_tail: args.clone_tail || cowkit_install::clone_tail_pays_off(&root),
    };
    let bar = ProgressBar::new(0);
    if quiet || args.json {
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

    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Result<Summary, cowkit_install::Error>)>> =
        Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(pkg) = args.packages.get(i) else {
                    break;
                };
                let r = install(&root, &owners, pkg, &opts, &progress);
                bar.set_message(format!("{}/{} packages", i + 1, args.packages.len()));
                results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((i, r));
            });
        }
    });
    bar.finish_and_clear();

    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(i, _)| *i);
    let mut total = Summary::default();
    let mut failed = Vec::new();
    for (i, r) in results {
        let pkg = &args.packages[i];
        match r {
            Ok(s) => total.add(s),
            Err(e) => {
                let err = CliError::new(format!("cannot install `{}`", pkg.display()), e);
                failed.push(Failure {
                    package: pkg.clone(),
                    error: err.chain(),
                });
                if !args.json {
                    report_error(&err);
                }
            }
        }
    }
    let ok = failed.is_empty();
    if args.json {
        print_json(&Report {
            root: &args.root,
            ok: failed.is_empty(),
            failed,
            summary: &total,
        });
    } else if !quiet {
        for w in &total.warnings {
            eprintln!("warning: {w}");
        }
        eprintln!(
            "installed {} package(s) into `{}`: {} files ({} hardlinks), {} directories, {} symlinks; {}{}",
            total.packages,
            args.root.display(),
            total.files,
            total.hardlinks,
            total.directories,
            total.symlinks,
            tally_text(&total.tally),
            if args.verify {
                format!("; {} files verified", total.verified)
            } else {
                String::new()
            }
        );
        print_fallbacks(&total.tally);
    }
    if ok {
        Ok(ExitCode::SUCCESS)
    } else {
        Ok(ExitCode::FAILURE)
    }
}
