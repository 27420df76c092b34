//! Transcoding in a confined worker process: the untrusted work (headers,
//! signature, payload, digests) happens in a worker that confined itself
//! with seccomp; this (unconfined) side only opens files, checks that the
//! worker is confined, and commits the output when it succeeded. The
//! protocol is [`cowkit_confine::worker`]'s.
//!
//! ```text
//! parent: transcode                        worker: worker
//!   open IN, create OUT's temp file
//!   spawn the worker command:
//!     stdin=IN, stdout=temp              ─▶ load the keys (trusted files)
//!                                           seccomp filter, self-check
//!   check /proc/<worker>/status, "G"     ─▶ begin: headers, signature;
//!                                           write: payload, digests
//!   read the outcome                     ◀─ outcome JSON, exit 0
//!   rename temp → OUT
//! ```
//!
//! The caller supplies the worker as a [`Command`] that runs a program
//! calling [`worker`] (the `cowkit` CLI re-executes itself with a hidden
//! subcommand) and passes it the [`WorkerOptions`] as it sees fit.

use std::fs::File;
use std::io::{self, BufReader};
use std::os::fd::AsFd;

use std::path::{Path, PathBuf};
use std::process::Command;

use cowkit_archive::pgp::Keyring;
use cowkit_confine::worker::{serve, Failure, Worker, WorkerError};
use cowkit_confine::{Limits, Policy};
use cowkit_fs::dir::{self, NewFile};
use cowkit_fs::IoError;
use serde::{Deserialize, Serialize};

use crate::transcode::{begin, check_output, NoProgress, Options, Summary};

/// The worker's resource limits, set before it confines itself (see
/// `docs/confinement.md` for how they were chosen):
///
/// - address space 2 GiB (15–17 MiB resident measured on 512 MiB
///   packages): the decoders are held to 128 MiB
///   ([`cowkit_archive::rpm::DECODER_MEMLIMIT`]), the headers to 32 MiB,
///   the pipeline to a few MiB of buffers; the rest is the program, thread
///   stacks and glibc's per-thread heap reservations (64 MiB each);
/// - CPU time 900 s (all threads): transcoding a 512 MiB xz package takes
///   13 s in a debug build here;
/// - file size [`MAX_OUTPUT_BYTES`](crate::transcode::MAX_OUTPUT_BYTES)
///   plus 1 GiB: the output is checked against the header's sizes before
///   it is written; this is the backstop.
pub const WORKER_LIMITS: Limits = Limits {
    address_space: 2 << 30,
    cpu_seconds: 900,
    file_size: crate::transcode::MAX_OUTPUT_BYTES + (1 << 30),
};

/// The hint given when `--key` was passed and no signature verified.
const KEY_HINT: &str = "check that the package is signed and that --key names the right public key";

/// The first message of the worker's error when keys were given and the
/// package's header signature was not accepted (its causes say why:
/// unsigned, an unknown key, a signature that does not verify): callers
/// tell a refused signature from other failures by it
/// ([`signature_refused`]).
pub const SIGNATURE_REFUSED: &str =
    "its header signature is not accepted (checked before any payload byte was decoded)";

/// Whether `e` is the worker's refusal of the package's header signature
/// ([`SIGNATURE_REFUSED`]).
pub fn signature_refused(e: &Error) -> bool {
    matches!(e, Error::Worker(WorkerError::Failed { error, .. })
        if error.messages().first().map(String::as_str) == Some(SIGNATURE_REFUSED))
}

/// What a confined transcode did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    /// What the transcoder wrote.
    pub summary: Summary,
    /// Who signed the package (the key's fingerprint, else its key ID,
    /// else the key file) when keys were given.
    pub signed_by: Option<String>,
    /// Whether the worker was confined, as the parent saw it (not sent by
    /// the worker).
    #[serde(skip)]
    pub confined: bool,
}

/// What the worker is asked to do (the caller passes these to the worker
/// process, on its command line for instance).
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// Transcoder settings.
    pub options: Options,
    /// Key files or directories: if any, the package's header signature
    /// must verify with one of their keys.
    pub keys: Vec<PathBuf>,
    /// Confine the worker (`false` only where seccomp is not available).
    pub confine: bool,
}

/// Where the package comes from.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// This process's standard input.
    Stdin,
    /// A file.
    Path(&'a Path),
}

/// Where the extents file goes.
#[derive(Clone, Copy, Debug)]
pub enum Output<'a> {
    /// This process's standard output, written as it goes (a failed
    /// transcode leaves a partial output there). A pipe, a device, an
    /// empty file, or a file positioned at its end; a file with bytes past
    /// its position (the shell's `1<>`) or open for appending is refused
    /// before anything is read or written
    /// ([`check_output`]).
    Stdout,
    /// A file, created (or replaced) only when the transcode succeeded.
    Path(&'a Path),
    /// An open, empty file of the caller's (e.g. an unnamed temporary),
    /// written from its start; the caller decides what a failure leaves.
    File(&'a File),
}

/// Why a confined transcode failed. In every case, an output path was
/// neither created nor changed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The package could not be opened.
    #[error("cannot open `{}`", path.display())]
    Open {
        /// The package.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: io::Error,
    },
    /// Standard input could not be duplicated for the worker.
    #[error("cannot pass standard input to the worker")]
    Stdin(#[source] io::Error),
    /// Standard output could not be duplicated for the worker.
    #[error("cannot pass standard output to the worker")]
    Stdout(#[source] io::Error),
    /// Standard output cannot take an extents file (open for appending,
    /// or a file with bytes past its position:
    /// [`check_output`]); refused before
    /// the worker is started.
    #[error("standard output cannot take the extents file")]
    StdoutRefused(#[source] crate::Error),
    /// The output file could not be created, passed to the worker or
    /// named (cowkit-fs: `O_TMPFILE` + `linkat`, or a temporary name and a
    /// rename).
    #[error(transparent)]
    Output(#[from] cowkit_fs::IoError),
    /// The worker could not be started, was not confined, or failed; its
    /// own error is in [`WorkerError::Failed`].
    #[error(transparent)]
    Worker(#[from] WorkerError),
}

/// Transcodes `input` into `output` in a worker started from `worker`,
/// which must run a program that calls [`worker`].
///
/// A file `output` is written to a temporary file in its directory and
/// renamed into place only once the worker has reported success; on any
/// error the temporary file is removed and `output` is left as it was.
/// With `allow_unconfined`, a worker that runs without confinement
/// ([`WorkerOptions::confine`] `false`) is accepted; otherwise it is
/// killed before it reads anything.
///
/// # Errors
///
/// [`Error::Worker`] when the worker could not be started, was not
/// confined, or failed ([`WorkerError::Failed`] carries its error chain
/// and hint); the others name the file that could not be opened,
/// created, or committed.
pub fn transcode(
    worker: Command,
    input: Input<'_>,
    output: Output<'_>,
    allow_unconfined: bool,
) -> Result<Outcome, Error> {
    let input = match input {
        Input::Stdin => stdio_file(io::stdin()).map_err(Error::Stdin)?,
        Input::Path(path) => File::open(path).map_err(|source| Error::Open {
            path: path.to_owned(),
            source,
        })?,
    };
    transcode_from(worker, input, output, allow_unconfined)
}

/// [`transcode`] from `input`, an open file or the read end of a pipe,
/// handed to the worker: this process keeps no descriptor of it, so that
/// the writer of a pipe gets `EPIPE` as soon as the worker stops reading
/// (it failed, or it is done) instead of blocking.
///
/// # Errors
///
/// As [`transcode`].
pub fn transcode_from(
    worker: Command,
    input: File,
    output: Output<'_>,
    allow_unconfined: bool,
) -> Result<Outcome, Error> {
    let run = |out: File| -> Result<Outcome, Error> {
        let w = Worker::start(worker, input, out, allow_unconfined)?;
        let confined = w.confined();
        let mut outcome: Outcome = w.finish()?;
        outcome.confined = confined;
        Ok(outcome)
    };
    match output {
        Output::Stdout => {
            let out = stdio_file(io::stdout()).map_err(Error::Stdout)?;
            // Up front, before the worker reads anything; the worker checks
            // again before it writes.
            check_output(&out).map_err(Error::StdoutRefused)?;
            run(out)
        }
        Output::Path(path) => create_committed(path, run),
        Output::File(f) => run(f.try_clone().map_err(Error::Stdout)?),
    }
}

/// A standard stream as a `File` of its own.
fn stdio_file(fd: impl AsFd) -> io::Result<File> {
    Ok(File::from(fd.as_fd().try_clone_to_owned()?))
}

/// Creates `path` with what `write` writes to the file it is given: a new
/// unnamed file in `path`'s directory (`O_TMPFILE`, so it gets the mode of
/// a new file, 0666 minus the umask), given its name when `write`
/// succeeded; nothing is left when anything failed
/// ([`cowkit_fs::dir::NewFile`]).
fn create_committed<T>(
    path: &Path,
    write: impl FnOnce(File) -> Result<T, Error>,
) -> Result<T, Error> {
    let dir_path = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = path.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
        IoError::new("create", path, io::Error::from(io::ErrorKind::InvalidInput))
    })?;
    let dir = dir::open_dir(rustix::fs::CWD, dir_path, dir_path)?;
    let new = NewFile::anonymous(dir.as_fd(), dir_path, 0o666)?;
    let file = new
        .file()
        .try_clone()
        .map_err(|e| IoError::new("pass to the worker the new file for", path, e))?;
    let value = write(file)?;
    new.commit(dir.as_fd(), name, path)?;
    Ok(value)
}

/// The worker: call it from the program that [`transcode`]'s `worker`
/// command runs, with the options the caller passed on. Loads the keys,
/// confines this process (unless `opts.confine` is `false`), and once the
/// parent has checked that, transcodes stdin into stdout and sends the
/// [`Outcome`] or the error back. Prints nothing.
///
/// Returns whether the package was transcoded: exit with status 0 then, 1
/// otherwise.
pub fn worker(opts: &WorkerOptions) -> bool {
    // Killed with the parent: a parent ended by a signal must not leave a
    // worker writing on. Set before anything else; a parent that died
    // before this point never answers the handshake, and the worker stops
    // there without writing.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    let policy = Policy::stream_worker().allow_threads(true);
    serve(
        opts.confine.then_some(&policy),
        || -> Result<Option<Keyring>, Failure> {
            // Limits first: setrlimit is denied once confined.
            WORKER_LIMITS.apply()?;
            // Trusted inputs first: nothing can be opened once confined.
            if opts.keys.is_empty() {
                return Ok(None);
            }
            let mut k = Keyring::new();
            for p in &opts.keys {
                k.add(p)?;
            }
            Ok(Some(k))
        },
        |keyring, input, output| -> Result<Outcome, Failure> {
            let begun = begin(BufReader::with_capacity(256 * 1024, input))?;
            let signed_by = match &keyring {
                None => None,
                Some(k) => {
                    let v = k.verify_header(begun.package()).map_err(|e| {
                        let mut f = Failure::from(e).hint(KEY_HINT);
                        f.messages.insert(0, SIGNATURE_REFUSED.to_string());
                        f
                    })?;
                    Some(
                        v.fingerprint
                            .or(v.key_id)
                            .unwrap_or_else(|| v.key_file.display().to_string()),
                    )
                }
            };
            let summary = begun.write(output, &opts.options, &NoProgress)?;
            Ok(Outcome {
                summary,
                signed_by,
                confined: opts.confine,
            })
        },
    )
}
