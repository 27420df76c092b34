//! `confined::transcode` with a real worker process: this test binary
//! again, as `--exact worker_child --nocapture --test-threads=1` with
//! `COWKIT_EXTENTS_WORKER` set, calling `confined::worker`.

use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use cowkit_confine::worker::WorkerError;
use cowkit_extents::confined::{self, Error, Input, Outcome, Output, WorkerOptions};
use cowkit_extents::transcode::{begin, NoProgress, Options};
use cowkit_testutil::rpm::fixture_in;

/// `confine` or `unconfined`: what the worker child does.
const CHILD_ENV: &str = "COWKIT_EXTENTS_WORKER";

fn tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

/// The worker. Without `COWKIT_EXTENTS_WORKER` (a plain `cargo test`) it
/// returns at once and passes.
#[test]
fn worker_child() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    // The test harness wrote its header to our stdout (the output file):
    // start the file over.
    std::io::stdout().flush().unwrap();
    let mut out = File::from(std::io::stdout().as_fd().try_clone_to_owned().unwrap());
    out.set_len(0).unwrap();
    out.seek(SeekFrom::Start(0)).unwrap();
    drop(out);
    let ok = confined::worker(&WorkerOptions {
        options: Options::default(),
        keys: Vec::new(),
        confine: mode == "confine",
    });
    // Leave before the test harness appends its summary to the output file.
    std::process::exit(if ok { 0 } else { 1 });
}

fn worker(mode: &str) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", "worker_child", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode);
    cmd
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<_> = dir
        .read_dir()
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    v.sort();
    v.into_iter().map(|n| n.into_string().unwrap()).collect()
}

fn package() -> PathBuf {
    fixture_in(tmp(), "w.ufdio")
}

fn transcode(input: &Path, output: &Path) -> Result<Outcome, Error> {
    confined::transcode(
        worker("confine"),
        Input::Path(input),
        Output::Path(output),
        false,
    )
}

#[test]
fn the_confined_worker_writes_what_the_transcoder_writes() {
    let pkg = package();
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let out = dir.path().join("pkg.rpme");
    let outcome = transcode(&pkg, &out).unwrap();
    assert!(outcome.confined);
    assert_eq!(outcome.signed_by, None);
    assert_eq!(names_in(dir.path()), ["pkg.rpme"]);

    let direct = dir.path().join("direct");
    let summary = begin(File::open(&pkg).unwrap())
        .unwrap()
        .write(
            File::create(&direct).unwrap(),
            &Options::default(),
            &NoProgress,
        )
        .unwrap();
    assert_eq!(outcome.summary.output_bytes, summary.output_bytes);
    assert_eq!(outcome.summary.input_sha256, summary.input_sha256);
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&direct).unwrap());

    // A new file's mode, not the temporary file's 0600.
    let mask = rustix::process::umask(rustix::fs::Mode::empty());
    rustix::process::umask(mask);
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666 & !mask.bits());
}

#[test]
fn a_failed_worker_leaves_nothing_behind_and_its_error_comes_back() {
    let pkg = std::fs::read(package()).unwrap();
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let input = dir.path().join("cut.rpm");
    std::fs::write(&input, &pkg[..pkg.len() - 1]).unwrap();
    let out_dir = dir.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let out = out_dir.join("pkg.rpme");

    let check = |r: Result<Outcome, Error>| match r {
        Err(Error::Worker(WorkerError::Failed { error, hint })) => {
            let messages = error.messages();
            assert!(
                messages.iter().any(|m| m.contains("payload")),
                "{messages:?}"
            );
            assert_eq!(hint, None);
        }
        other => panic!("{other:?}"),
    };
    check(transcode(&input, &out));
    assert_eq!(names_in(&out_dir), Vec::<String>::new());

    // An existing output is left as it was.
    std::fs::write(&out, "previous\n").unwrap();
    check(transcode(&input, &out));
    assert_eq!(names_in(&out_dir), ["pkg.rpme"]);
    assert_eq!(std::fs::read(&out).unwrap(), b"previous\n");
}

#[test]
fn an_unconfined_worker_is_refused_unless_allowed() {
    let pkg = package();
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let out = dir.path().join("pkg.rpme");
    let r = confined::transcode(
        worker("unconfined"),
        Input::Path(&pkg),
        Output::Path(&out),
        false,
    );
    assert!(
        matches!(r, Err(Error::Worker(WorkerError::NotConfined { .. }))),
        "{r:?}"
    );
    assert_eq!(names_in(dir.path()), Vec::<String>::new());

    let outcome = confined::transcode(
        worker("unconfined"),
        Input::Path(&pkg),
        Output::Path(&out),
        true,
    )
    .unwrap();
    assert!(!outcome.confined);
    assert_eq!(names_in(dir.path()), ["pkg.rpme"]);
}

#[test]
fn a_missing_package_is_named() {
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let missing = dir.path().join("missing.rpm");
    match transcode(&missing, &dir.path().join("pkg.rpme")) {
        Err(e @ Error::Open { .. }) => {
            assert_eq!(
                e.to_string(),
                format!("cannot open `{}`", missing.display())
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(names_in(dir.path()), Vec::<String>::new());
}
