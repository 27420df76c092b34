//! The worker protocol between real processes: each test starts this test
//! binary again as `--exact worker_child --nocapture --test-threads=1` with
//! `COWKIT_WORKER_CHILD` naming what the worker does, through
//! `Worker::start`, and checks what comes back.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;

use cowkit_confine::worker::{serve, Failure, Worker, WorkerError};
use cowkit_confine::Policy;
use serde::{Deserialize, Serialize};

const CHILD_ENV: &str = "COWKIT_WORKER_CHILD";
const INPUT: &[u8] = b"read only once confined\n";

/// The worker's result.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Copied {
    bytes: u64,
}

#[derive(Debug, thiserror::Error)]
#[error("cannot frobnicate the input")]
struct Outer(#[source] io::Error);

/// Uppercases stdin into stdout.
fn upper(mut input: File, mut output: File) -> Result<Copied, Failure> {
    let mut buf = Vec::new();
    input.read_to_end(&mut buf)?;
    output.write_all(&buf.to_ascii_uppercase())?;
    Ok(Copied {
        bytes: buf.len() as u64,
    })
}

/// The worker. Without `COWKIT_WORKER_CHILD` (a plain `cargo test`) it
/// returns at once and passes.
#[test]
fn worker_child() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    // The test harness wrote its header to our stdout (the output file):
    // start the file over.
    io::stdout().flush().unwrap();
    let mut out = File::from(io::stdout().as_fd().try_clone_to_owned().unwrap());
    out.set_len(0).unwrap();
    out.seek(SeekFrom::Start(0)).unwrap();
    drop(out);

    let policy = Policy::stream_worker();
    let confined = Some(&policy);
    let ok = match mode.as_str() {
        "upper" => serve(confined, || Ok(()), |(), i, o| upper(i, o)),
        "unconfined" => serve(None, || Ok(()), |(), i, o| upper(i, o)),
        "fail" => serve(
            confined,
            || Ok(()),
            |(), _, _| -> Result<Copied, Failure> {
                Err(Failure::from(Outer(io::Error::other("the inner cause"))).hint("try harder"))
            },
        ),
        "prepare_fails" => serve(
            confined,
            || -> Result<(), Failure> { Err(io::Error::other("no key file").into()) },
            |(), i, o| upper(i, o),
        ),
        "crash" => serve(
            confined,
            || Ok(()),
            |(), _, _| -> Result<Copied, Failure> { std::process::exit(3) },
        ),
        "liar" => {
            // Claims confinement without a filter.
            let mut control = File::from(io::stderr().as_fd().try_clone_to_owned().unwrap());
            control.write_all(b"confined\n").unwrap();
            let mut go = [0u8; 1];
            let _ = control.read_exact(&mut go);
            true
        }
        other => panic!("unknown child mode {other}"),
    };
    // Leave before the test harness appends its summary to the output file.
    std::process::exit(if ok { 0 } else { 1 });
}

/// Starts the worker in `mode` on [`INPUT`], writing to `dir/out`.
fn start(dir: &Path, mode: &str, allow_unconfined: bool) -> Result<Worker, WorkerError> {
    std::fs::write(dir.join("in"), INPUT).unwrap();
    let input = File::open(dir.join("in")).unwrap();
    let output = File::create(dir.join("out")).unwrap();
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "worker_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode);
    Worker::start(cmd, input, output, allow_unconfined)
}

/// What a refused worker said, and what the parent saw in `/proc`.
fn refused(r: Result<Worker, WorkerError>) -> (String, Result<bool, cowkit_confine::Error>) {
    match r {
        Err(WorkerError::NotConfined { said, check }) => (said, check),
        other => panic!("not refused: {other:?}"),
    }
}

fn output(dir: &Path) -> Vec<u8> {
    std::fs::read(dir.join("out")).unwrap()
}

#[test]
fn a_confined_worker_is_let_go_and_its_result_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let w = start(dir.path(), "upper", false).unwrap();
    assert!(w.confined());
    let got: Copied = w.finish().unwrap();
    assert_eq!(
        got,
        Copied {
            bytes: INPUT.len() as u64
        }
    );
    assert_eq!(output(dir.path()), INPUT.to_ascii_uppercase());
}

#[test]
fn the_error_chain_and_hint_come_back() {
    let dir = tempfile::tempdir().unwrap();
    let w = start(dir.path(), "fail", false).unwrap();
    match w.finish::<Copied>() {
        Err(WorkerError::Failed { error, hint }) => {
            assert_eq!(
                error.messages(),
                ["cannot frobnicate the input", "the inner cause"]
            );
            let source = std::error::Error::source(&error).expect("the cause");
            assert_eq!(source.to_string(), "the inner cause");
            assert_eq!(hint.as_deref(), Some("try harder"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(output(dir.path()), b"");
}

#[test]
fn an_unconfined_worker_is_refused_unless_allowed() {
    let dir = tempfile::tempdir().unwrap();
    let (said, check) = refused(start(dir.path(), "unconfined", false));
    assert_eq!(said, "unconfined");
    assert!(matches!(check, Ok(false)), "{check:?}");
    assert_eq!(output(dir.path()), b"", "the refused worker wrote");

    let w = start(dir.path(), "unconfined", true).unwrap();
    assert!(!w.confined());
    assert_eq!(w.finish::<Copied>().unwrap().bytes, INPUT.len() as u64);
    assert_eq!(output(dir.path()), INPUT.to_ascii_uppercase());
}

#[test]
fn a_claim_of_confinement_is_checked_from_outside() {
    if cowkit_confine::mode().unwrap() != cowkit_confine::Mode::Disabled {
        eprintln!("SKIPPED: this process is already under seccomp: the claim cannot be told apart");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (said, check) = refused(start(dir.path(), "liar", false));
    assert_eq!(said, "confined");
    assert!(matches!(check, Ok(false)), "{check:?}");
}

#[test]
fn a_worker_that_fails_before_confining_is_refused_with_its_reply() {
    let dir = tempfile::tempdir().unwrap();
    let (said, _) = refused(start(dir.path(), "prepare_fails", false));
    assert!(said.contains("no key file"), "{said}");
}

#[test]
fn a_worker_that_exits_without_a_reply_crashed() {
    let dir = tempfile::tempdir().unwrap();
    let w = start(dir.path(), "crash", false).unwrap();
    match w.finish::<Copied>() {
        Err(e @ WorkerError::Crashed { .. }) => {
            let WorkerError::Crashed { status, output } = &e else {
                unreachable!()
            };
            assert_eq!(status.code(), Some(3), "{status:?}");
            assert!(status.signal().is_none());
            assert_eq!(output, "");
            assert_eq!(e.to_string(), "the worker failed (exit status: 3)");
        }
        other => panic!("{other:?}"),
    }
}
