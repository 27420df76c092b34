//! `cowkit transcode IN.rpm -o OUT.rpme`: a confined worker process does
//! the untrusted work; this (unconfined) parent only opens files, checks
//! that the worker is confined, and commits the output when it succeeded.
//!
//! ```text
//! parent                                   worker (`cowkit __transcode-worker`)
//!   open IN, create OUT's temp file
//!   spawn worker: stdin=IN, stdout=temp  ─▶ load keys (trusted files)
//!                                           seccomp filter, self-check
//!   read "C"                             ◀─ write "C" on the control socket
//!   /proc/<worker>/status says Seccomp: 2
//!   write "G"                            ─▶ read "G", then read IN: headers,
//!                                           signature, payload, digests
//!   read the result                      ◀─ result JSON, exit 0
//!   rename temp → OUT
//! ```

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use cowkit_extents::transcode::{begin, NoProgress, Options, Summary, DEFAULT_PACK_BELOW};
use serde::{Deserialize, Serialize};

use crate::output::{human_bytes, print_json, CliError};

/// Arguments of `cowkit transcode`.
#[derive(clap::Args)]
pub struct Args {
    /// The package (`-` for stdin).
    input: PathBuf,
    /// The extents file to write (`-` for stdout).
    #[arg(short, long)]
    output: PathBuf,
    /// Align cloned files to this many bytes (the target filesystem's
    /// block size).
    #[arg(long, default_value_t = 4096)]
    block_size: u32,
    /// Pack files smaller than this and write them at install instead of
    /// cloning.
    #[arg(long, default_value_t = DEFAULT_PACK_BELOW)]
    pack_below: u64,
    /// Require a valid OpenPGP header signature by a key in FILE (or in
    /// any key file of a directory); may be repeated.
    #[arg(long, value_name = "FILE|DIR")]
    key: Vec<PathBuf>,
    /// Run the decoders without the seccomp confinement (for platforms
    /// where it is not available).
    #[arg(long)]
    no_confine: bool,
    /// Print a JSON summary.
    #[arg(long)]
    json: bool,
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

/// What the worker sends back.
#[derive(Serialize, Deserialize)]
struct Outcome {
    summary: Option<Summary>,
    signed_by: Option<String>,
    /// The error and its causes, outermost first.
    error: Vec<String>,
    hint: Option<String>,
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

fn stdio_file(fd: impl AsFd) -> std::io::Result<File> {
    Ok(File::from(fd.as_fd().try_clone_to_owned()?))
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let input = if args.input.as_os_str() == "-" {
        stdio_file(std::io::stdin())
    } else {
        File::open(&args.input)
    }
    .map_err(|e| CliError::new(format!("cannot open `{}`", args.input.display()), e))?;

    let to_stdout = args.output.as_os_str() == "-";
    let temp = if to_stdout {
        None
    } else {
        let dir = match args.output.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        let name = args
            .output
            .file_name()
            .unwrap_or_default()
            .to_string_lossy();
        Some(
            tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(".tmp")
                .tempfile_in(dir)
                .map_err(|e| {
                    CliError::new(format!("cannot create a file in `{}`", dir.display()), e)
                })?,
        )
    };
    let out = match &temp {
        Some(t) => t.as_file().try_clone(),
        None => stdio_file(std::io::stdout()),
    }
    .map_err(|e| CliError::new("cannot open the output", e))?;

    // The control socket is the worker's stderr: the worker prints
    // nothing, and passing it as a standard stream needs no descriptor
    // juggling.
    let (ours, theirs) =
        UnixStream::pair().map_err(|e| CliError::new("cannot create a socket", e))?;
    let exe = std::env::current_exe().map_err(|e| CliError::new("cannot find cowkit itself", e))?;
    let mut cmd = Command::new(exe);
    cmd.arg("__transcode-worker")
        .arg("--block-size")
        .arg(args.block_size.to_string())
        .arg("--pack-below")
        .arg(args.pack_below.to_string());
    for k in &args.key {
        cmd.arg("--key").arg(k);
    }
    if args.no_confine {
        cmd.arg("--no-confine");
    }
    let mut child = cmd
        .stdin(Stdio::from(input))
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(OwnedFd::from(theirs)))
        .spawn()
        .map_err(|e| CliError::new("cannot start the transcoding worker", e))?;
    // `cmd` keeps the child's ends of its standard streams open: close
    // them, or the control socket never reports the worker's exit.
    drop(cmd);

    let mut control = BufReader::new(ours);
    let mut line = String::new();
    let _ = control.read_line(&mut line);
    let confined = line.trim_end() == "confined";
    let checked = if confined {
        cowkit_confine::mode_of(child.id()).map(|m| m == cowkit_confine::Mode::Filter)
    } else {
        Ok(false)
    };
    let go = matches!(
        (&checked, args.no_confine, line.trim_end()),
        (Ok(true), _, _) | (_, true, "unconfined")
    );
    if !go {
        let _ = child.kill();
        let _ = child.wait();
        return Err(CliError::new(
            "the transcoding worker is not confined: nothing was written",
            std::io::Error::other(format!("worker said {:?}, seccomp check: {checked:?}", line.trim_end())),
        )
        .hint("on a platform without seccomp support, pass --no-confine to run the decoders unconfined"));
    }
    control
        .get_mut()
        .write_all(b"G")
        .map_err(|e| CliError::new("the transcoding worker went away", e))?;
    let mut result = String::new();
    let _ = control.read_to_string(&mut result);
    let status = child
        .wait()
        .map_err(|e| CliError::new("cannot wait for the transcoding worker", e))?;
    let outcome: Option<Outcome> = serde_json::from_str(&result).ok();
    let (summary, signed_by) = match outcome {
        Some(Outcome {
            summary: Some(s),
            signed_by,
            ..
        }) if status.success() => (s, signed_by),
        Some(o) if !o.error.is_empty() => {
            let mut e = CliError::new(
                format!(
                    "cannot transcode `{}`: nothing was written",
                    args.input.display()
                ),
                ChainError::from_messages(o.error),
            );
            if let Some(h) = o.hint {
                e = e.hint(h);
            }
            return Err(e);
        }
        _ => {
            return Err(CliError::new(
                format!(
                    "cannot transcode `{}`: nothing was written",
                    args.input.display()
                ),
                std::io::Error::other(format!(
                    "the worker failed ({status}){}",
                    if result.is_empty() {
                        String::new()
                    } else {
                        format!(": {}", result.trim())
                    }
                )),
            ))
        }
    };
    if let Some(t) = temp {
        // A temporary file is created 0600; the output gets the usual
        // 0666 minus the umask.
        let mask = rustix::process::umask(rustix::fs::Mode::empty());
        rustix::process::umask(mask);
        let mode = 0o666 & !mask.bits();
        t.as_file()
            .set_permissions(std::os::unix::fs::PermissionsExt::from_mode(mode))
            .map_err(|e| CliError::new("cannot set the output's mode", e))?;
        t.persist(&args.output).map_err(|e| {
            CliError::new(
                format!("cannot rename the output to `{}`", args.output.display()),
                e.error,
            )
        })?;
    }
    if args.json {
        print_json(&Report {
            input: &args.input,
            output: &args.output,
            confined: !args.no_confine,
            signed_by,
            summary: &summary,
        });
    } else if !to_stdout {
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
            signed_by.map(|s| format!("; signed by {s}")).unwrap_or_default(),
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// An error message and its causes, carried across the process boundary.
#[derive(Debug)]
struct ChainError(String, Option<Box<ChainError>>);

impl ChainError {
    fn from_messages(messages: Vec<String>) -> ChainError {
        let mut it = messages.into_iter().rev();
        let mut e = ChainError(it.next().unwrap_or_default(), None);
        for m in it {
            e = ChainError(m, Some(Box::new(e)));
        }
        e
    }
}

impl std::fmt::Display for ChainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ChainError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.1.as_deref().map(|e| e as _)
    }
}

fn chain(e: &dyn std::error::Error) -> Vec<String> {
    let mut v = vec![e.to_string()];
    let mut s = e.source();
    while let Some(x) = s {
        v.push(x.to_string());
        s = x.source();
    }
    v
}

/// The worker: everything untrusted happens here, confined.
pub fn worker(args: WorkerArgs) -> ExitCode {
    // The control socket is our stderr (see `run`).
    // A `File`, not a `UnixStream`: plain read(2)/write(2), which the
    // filter allows (a stream would use sendto/recvfrom).
    let mut control = match stdio_file(std::io::stderr()) {
        Ok(f) => f,
        Err(_) => return ExitCode::FAILURE,
    };
    let reply = |control: &mut File, o: Outcome| {
        let _ = control.write_all(serde_json::to_string(&o).unwrap_or_default().as_bytes());
    };
    let fail = |control: &mut File, error: Vec<String>, hint: Option<String>| {
        reply(
            control,
            Outcome {
                summary: None,
                signed_by: None,
                error,
                hint,
            },
        );
        ExitCode::FAILURE
    };

    // Trusted inputs first: key files, before the filter forbids open().
    let keyring = if args.key.is_empty() {
        None
    } else {
        let mut k = cowkit_archive::pgp::Keyring::new();
        for p in &args.key {
            if let Err(e) = k.add(p) {
                return fail(&mut control, chain(&e), None);
            }
        }
        Some(k)
    };
    let input = stdio_file(std::io::stdin());
    let output = stdio_file(std::io::stdout());
    let (input, output) = match (input, output) {
        (Ok(i), Ok(o)) => (i, o),
        (Err(e), _) | (_, Err(e)) => return fail(&mut control, chain(&e), None),
    };

    if args.no_confine {
        let _ = control.write_all(b"unconfined\n");
    } else {
        let confined = cowkit_confine::Policy::stream_worker()
            .allow_threads(true)
            .apply()
            .map(|_| ())
            .and_then(|()| cowkit_confine::self_check());
        if let Err(e) = confined {
            return fail(&mut control, chain(&e), None);
        }
        let _ = control.write_all(b"confined\n");
    }
    let mut go = [0u8; 1];
    if control.read_exact(&mut go).is_err() || go != *b"G" {
        return ExitCode::FAILURE;
    }

    type Failed = (Vec<String>, Option<String>);
    let run = || -> Result<(Summary, Option<String>), Failed> {
        let begun =
            begin(BufReader::with_capacity(256 * 1024, input)).map_err(|e| (chain(&e), None))?;
        let signed_by = match &keyring {
            None => None,
            Some(k) => {
                let v = k.verify_header(begun.package()).map_err(|e| {
                    (
                        chain(&e),
                        Some("check that the package is signed and that --key names the right public key".into()),
                    )
                })?;
                Some(
                    v.fingerprint
                        .or(v.key_id)
                        .unwrap_or_else(|| v.key_file.display().to_string()),
                )
            }
        };
        let opts = Options {
            block_size: args.block_size,
            pack_below: args.pack_below,
        };
        let summary = begun
            .write(output, &opts, &NoProgress)
            .map_err(|e| (chain(&e), None))?;
        Ok((summary, signed_by))
    };
    match run() {
        Ok((summary, signed_by)) => {
            reply(
                &mut control,
                Outcome {
                    summary: Some(summary),
                    signed_by,
                    error: Vec::new(),
                    hint: None,
                },
            );
            ExitCode::SUCCESS
        }
        Err((error, hint)) => fail(&mut control, error, hint),
    }
}
