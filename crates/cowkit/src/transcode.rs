//! `cowkit transcode IN.rpm -o OUT.rpme`: arguments, output, errors.
//!
//! The work is `cowkit_extents::confined`: a confined worker process does
//! the untrusted work, the (unconfined) parent only opens files, checks
//! that the worker is confined (the protocol of `cowkit_confine::worker`),
//! and commits the output when it succeeded. The worker is this program
//! again, as the hidden `cowkit __transcode-worker`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use cowkit_confine::worker::WorkerError;
use cowkit_extents::confined::{self, Error, Input, Output, WorkerOptions};
use cowkit_extents::transcode::{Options, Summary, DEFAULT_PACK_BELOW};
use serde::Serialize;

use crate::output::{human_bytes, print_json, CliError};

/// Arguments of `cowkit transcode`.
#[derive(clap::Args)]
pub struct Args {
    /// The package (`-` for stdin).
    input: PathBuf,
    /// The extents file to write (`-` for stdout: a pipe, an empty file,
    /// or a file positioned at its end; a file with bytes past its
    /// position, as `1<>` leaves it, or one open for appending is
    /// refused).
    #[arg(short, long)]
    output: PathBuf,
    /// Align cloned files to this many bytes (the target filesystem's
    /// block size): a power of two from 512 to 1 MiB.
    #[arg(long, default_value_t = 4096, value_parser = block_size)]
    block_size: u32,
    /// Pack files smaller than this and write them at install instead of
    /// cloning.
    #[arg(long, default_value_t = DEFAULT_PACK_BELOW)]
    pack_below: u64,
    #[command(flatten)]
    decoding: Decoding,
    /// Print a JSON summary.
    #[arg(long)]
    json: bool,
}

/// How a package is decoded: `--key`, the keys its header must be signed
/// by, and `--no-confine`. Shared by `cowkit transcode` and `cowkit
/// install` (which says what `--no-confine` means there).
#[derive(clap::Args)]
pub struct Decoding {
    /// Require a valid OpenPGP header signature by a key in FILE (or in
    /// any key file of a directory); may be repeated.
    #[arg(long, value_name = "FILE|DIR")]
    pub key: Vec<PathBuf>,
    /// Run the decoders without the seccomp confinement (for platforms
    /// where it is not available).
    #[arg(long)]
    pub no_confine: bool,
}

/// `--block-size`: a power of two from 512 to 1 MiB.
fn block_size(s: &str) -> Result<u32, String> {
    let n: u32 = s.parse().map_err(|e| format!("{e}"))?;
    let max = cowkit_extents::transcode::MAX_BLOCK_SIZE;
    if n.is_power_of_two() && (512..=max).contains(&n) {
        Ok(n)
    } else {
        Err(format!("must be a power of two from 512 to {max}"))
    }
}

/// Arguments of the hidden worker.
#[derive(clap::Args)]
pub struct WorkerArgs {
    #[arg(long)]
    block_size: u32,
    #[arg(long)]
    pack_below: u64,
    #[arg(long)]
    key: Vec<PathBuf>,
    #[arg(long)]
    no_confine: bool,
}

/// The JSON summary of `cowkit transcode`.
#[derive(Serialize)]
struct Report<'a> {
    input: &'a Path,
    output: &'a Path,
    confined: bool,
    signed_by: Option<String>,
    #[serde(flatten)]
    summary: &'a Summary,
}

/// The command that runs the confined transcode worker (this program).
pub(crate) fn worker_command(
    block_size: u32,
    pack_below: u64,
    keys: &[PathBuf],
    no_confine: bool,
) -> Result<Command, CliError> {
    worker_command_io(block_size, pack_below, keys, no_confine)
        .map_err(|e| CliError::new("cannot find cowkit itself", e))
}

/// [`worker_command`]; the error is that this program cannot be found.
pub(crate) fn worker_command_io(
    block_size: u32,
    pack_below: u64,
    keys: &[PathBuf],
    no_confine: bool,
) -> std::io::Result<Command> {
    // `/proc/self/exe` starts this very binary even where its path cannot
    // be walked by the user running it (a directory of another user).
    let exe = match Path::new("/proc/self/exe") {
        p if p.exists() => p.to_path_buf(),
        _ => std::env::current_exe()?,
    };
    let mut cmd = Command::new(exe);
    cmd.arg("__transcode-worker")
        .arg("--block-size")
        .arg(block_size.to_string())
        .arg("--pack-below")
        .arg(pack_below.to_string());
    for k in keys {
        cmd.arg("--key").arg(k);
    }
    if no_confine {
        cmd.arg("--no-confine");
    }
    Ok(cmd)
}

/// Transcode the package `input` into the new file `output` in the
/// confined worker, every file aligned to `block_size` (none packed), as
/// a store import wants them.
pub fn transcode_aligned(input: &Path, output: &Path, block_size: u32) -> Result<(), CliError> {
    let cmd = worker_command(block_size, 0, &[], false)?;
    confined::transcode(cmd, Input::Path(input), Output::Path(output), false)
        .map_err(|e| cli_error(e, input))?;
    Ok(())
}

pub fn run(args: Args, quiet: bool) -> Result<ExitCode, CliError> {
    let cmd = worker_command(
        args.block_size,
        args.pack_below,
        &args.decoding.key,
        args.decoding.no_confine,
    )?;
    let to_stdout = args.output.as_os_str() == "-";
    let input = if args.input.as_os_str() == "-" {
        Input::Stdin
    } else {
        Input::Path(&args.input)
    };
    let output = if to_stdout {
        Output::Stdout
    } else {
        Output::Path(&args.output)
    };
    let outcome = confined::transcode(cmd, input, output, args.decoding.no_confine)
        .map_err(|e| cli_error(e, &args.input))?;
    let summary = &outcome.summary;
    if args.json {
        print_json(&Report {
            input: &args.input,
            output: &args.output,
            confined: outcome.confined,
            signed_by: outcome.signed_by,
            summary,
        });
    } else if !to_stdout && !quiet {
        eprintln!(
            "transcoded `{}` ({}) → `{}` ({}): {} files, {} extents ({} cloned, {} packed), {} deduplicated{}",
            args.input.display(),
            human_bytes(summary.input_bytes),
            args.output.display(),
            human_bytes(summary.output_bytes),
            summary.files,
            summary.extents,
            summary.clone_extents,
            summary.write_extents,
            human_bytes(summary.deduplicated_bytes),
            outcome.signed_by.map(|s| format!("; signed by {s}")).unwrap_or_default(),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The library's error as the CLI has always reported it.
pub(crate) fn cli_error(e: Error, input: &Path) -> CliError {
    let not_transcoded = || {
        format!(
            "cannot transcode `{}`: nothing was written",
            input.display()
        )
    };
    match e {
        Error::Open { source, .. } | Error::Stdin(source) => {
            CliError::new(format!("cannot open `{}`", input.display()), source)
        }
        Error::Stdout(source) => CliError::new("cannot open the output", source),
        Error::StdoutRefused(e) => CliError::new(
            "cannot write the extents file to standard output: nothing was written",
            e,
        )
        .hint("give it a file of its own with `-o FILE`, or redirect with `>` (which empties the file first)"),
        Error::Output(e) => CliError::new("cannot write the output", e),
        Error::Worker(WorkerError::Socket(source)) => {
            CliError::new("cannot create a socket", source)
        }
        Error::Worker(WorkerError::Spawn { source, .. }) => {
            CliError::new("cannot start the transcoding worker", source)
        }
        Error::Worker(WorkerError::NotConfined { said, check }) => CliError::new(
            "the transcoding worker is not confined: nothing was written",
            std::io::Error::other(format!("worker said {said:?}, seccomp check: {check:?}")),
        )
        .hint("on a platform without seccomp support, pass --no-confine to run the decoders unconfined"),
        Error::Worker(WorkerError::Gone(source)) => {
            CliError::new("the transcoding worker went away", source)
        }
        Error::Worker(WorkerError::Wait(source)) => {
            CliError::new("cannot wait for the transcoding worker", source)
        }
        Error::Worker(WorkerError::Failed { error, hint }) => {
            let e = CliError::new(not_transcoded(), error);
            match hint {
                Some(h) => e.hint(h),
                None => e,
            }
        }
        Error::Worker(WorkerError::Crashed { status, output }) => {
            let hint = crash_hint(&status);
            let e = CliError::new(not_transcoded(), WorkerError::Crashed { status, output });
            match hint {
                Some(h) => e.hint(h),
                None => e,
            }
        }
    }
}

/// What a worker killed by one of its resource limits ran into.
fn crash_hint(status: &std::process::ExitStatus) -> Option<String> {
    use std::os::unix::process::ExitStatusExt;
    let limits = confined::WORKER_LIMITS;
    match status.signal()? {
        libc::SIGXCPU | libc::SIGKILL => Some(format!(
            "the worker is limited to {} s of CPU time; a package that takes longer is refused",
            limits.cpu_seconds
        )),
        libc::SIGXFSZ => Some(format!(
            "the worker may write at most {} to a file",
            human_bytes(limits.file_size)
        )),
        libc::SIGABRT => Some(format!(
            "the worker is limited to {} of address space; an allocation past it aborts it",
            human_bytes(limits.address_space)
        )),
        _ => None,
    }
}

/// The worker: everything untrusted happens here, confined.
pub fn worker(args: WorkerArgs) -> ExitCode {
    let opts = WorkerOptions {
        options: Options {
            block_size: args.block_size,
            pack_below: args.pack_below,
        },
        keys: args.key,
        confine: !args.no_confine,
    };
    if confined::worker(&opts) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
