//! The policy in force, in a real process.
//!
//! Seccomp cannot be undone and this harness runs tests on several threads,
//! so nothing here confines the test process itself. Each test re-executes
//! this binary as `--exact child_confined_worker --nocapture
//! --test-threads=1` with `COWKIT_CONFINE_CHILD` naming what the child should
//! do; the child (see `support/child.rs`) confines itself, tries every
//! forbidden call, does a stream worker's job, and reports line by line on
//! stderr. The parent asserts on the report, on the bytes the child wrote,
//! and on the child's `/proc/<pid>/status`. The unconfined control runs the
//! same probes to show each of them can succeed: the policy makes the
//! difference.

mod support;

use std::os::unix::process::ExitStatusExt;
use std::sync::OnceLock;

use cowkit_confine::Policy;
use support::parent::{run, Run};
use support::{alloc_checksum, sha256_hex, streams, Mode, CHILD_ENV};

/// The child. Without `COWKIT_CONFINE_CHILD` (a plain `cargo test`) it
/// returns at once and passes.
#[test]
fn child_confined_worker() {
    let Ok(mode) = std::env::var(CHILD_ENV) else {
        return;
    };
    support::child::run(Mode::parse(&mode).expect("a known child mode"));
}

const EPERM: &str = "errno 1";

/// Every probe that must be denied with EPERM once confined.
const DENIED: &[&str] = &[
    "open_etc_passwd",
    "openat_dir",
    "create_file",
    "stat_path",
    "read_link",
    "mkdir",
    "rename",
    "unlink",
    "socket_inet",
    "socket_unix",
    "socketpair",
    "exec_missing",
    "exec_true",
    "spawn_process",
    "kill_parent",
    "setuid_self",
    "chroot_root",
    "ioctl_fionbio",
    "fcntl_setfl",
    "dup",
    "reapply",
    "read_proc_status",
];

fn confined() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| run(Mode::Confined))
}

fn threads() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| run(Mode::Threads))
}

fn assert_denied(run: &Run) {
    let wrong: Vec<String> = DENIED
        .iter()
        .map(|name| (name, run.probe(name)))
        .filter(|(_, got)| *got != EPERM)
        .map(|(name, got)| format!("{name}: {got}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "{:?}: not denied with EPERM: {wrong:#?}\n{}",
        run.mode,
        run.stderr
    );
    // The path probes changed nothing.
    let dir = run.dir.path();
    assert!(dir.join("victim").exists());
    for made in ["created", "newdir", "renamed"] {
        assert!(!dir.join(made).exists(), "{made} exists");
    }
}

/// The stream worker's job came out right, byte for byte.
fn assert_work_done(run: &Run) {
    let plain: Vec<u8> = streams()
        .iter()
        .flat_map(|s| s.plain.iter().copied())
        .collect();
    let total = plain.len() as u64;
    for s in streams() {
        assert_eq!(
            run.value(&format!("{}_len", s.kind)),
            s.plain.len().to_string(),
            "{}",
            s.kind
        );
    }
    assert_eq!(run.value("sha256"), sha256_hex(&plain));
    for op in [
        "pwrite",
        "write_past_end",
        "ftruncate",
        "lseek",
        "read_back",
    ] {
        assert_eq!(run.probe(op), "ok", "{op}\n{}", run.stderr);
    }
    // EOPNOTSUPP on a filesystem without it; never EPERM.
    let fallocate = run.probe("fallocate");
    assert!(
        fallocate == "ok" || fallocate == "errno 95",
        "fallocate: {fallocate}"
    );
    assert_eq!(run.value("fstat_size"), (8 + total).to_string());
    assert_eq!(run.value("header"), total.to_string());
    assert_eq!(run.value("getfl_rdwr"), "true");
    assert_eq!(run.value("alloc_grown"), alloc_checksum().to_string());
    assert_eq!(run.value("alloc_zeroed"), "0");
    assert_eq!(run.value("hashmap"), "1998");
    assert_eq!(run.value("clock"), "true");
    assert!(
        run.stderr
            .lines()
            .any(|l| l == format!("log: decoded {total} bytes")),
        "no log line on stderr:\n{}",
        run.stderr
    );

    assert_eq!(run.output.len() as u64, 8 + total, "output length");
    assert_eq!(run.output[..8], total.to_le_bytes(), "back-patched header");
    assert!(
        run.output[8..] == plain[..],
        "output bytes differ from the plain streams"
    );
}

#[test]
fn confined_worker_is_denied_every_forbidden_call_with_eperm() {
    let run = confined();
    run.assert_completed();
    assert_denied(run);
    assert_eq!(run.value("self_check"), "ok");
    assert_eq!(run.value("threads"), "false");
    assert_eq!(
        run.value("applied"),
        Policy::stream_worker().allowed_syscalls().len().to_string()
    );
    // glibc's clone3 failed with our EPERM; there is no fallback from it.
    assert_eq!(run.probe("thread_spawn"), EPERM);
    assert_eq!(run.probe("sched_getaffinity"), EPERM);
}

#[test]
fn confined_worker_still_decodes_and_writes_its_output() {
    let run = confined();
    run.assert_completed();
    assert_work_done(run);
}

#[test]
fn parent_sees_the_confined_worker_in_seccomp_filter_mode() {
    let run = confined();
    run.assert_completed();
    match &run.mode_seen {
        Some(Ok(mode)) => assert_eq!(*mode, cowkit_confine::Mode::Filter),
        other => panic!("mode_of the child: {other:?}\n{}", run.stderr),
    }
}

#[test]
fn unconfined_control_can_do_what_the_policy_denies() {
    let run = run(Mode::Control);
    run.assert_completed();
    assert_eq!(run.value("applied"), "no");
    assert_eq!(run.value("self_check"), "not_confined");
    assert_eq!(run.probe("open_etc_passwd"), "ok", "{}", run.stderr);
    let must_succeed = [
        "openat_dir",
        "create_file",
        "stat_path",
        "read_link",
        "mkdir",
        "rename",
        "unlink",
        "socket_inet",
        "socket_unix",
        "socketpair",
        "spawn_process",
        "kill_parent",
        "setuid_self",
        "ioctl_fionbio",
        "fcntl_setfl",
        "dup",
        "read_proc_status",
        "thread_spawn",
        "sched_getaffinity",
    ];
    let wrong: Vec<String> = must_succeed
        .iter()
        .map(|name| (name, run.probe(name)))
        .filter(|(_, got)| *got != "ok")
        .map(|(name, got)| format!("{name}: {got}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "failed unconfined: {wrong:#?}\n{}",
        run.stderr
    );
    // Not EPERM but ENOENT: the program does not exist.
    assert_eq!(run.probe("exec_missing"), "errno 2");
    let dir = run.dir.path();
    assert!(dir.join("created").exists() && dir.join("newdir").exists());
    assert!(!dir.join("victim").exists() && !dir.join("renamed").exists());
    assert_work_done(&run);
}

#[test]
fn allowing_threads_allows_threads_but_still_no_process() {
    let run = threads();
    run.assert_completed();
    assert_eq!(run.value("threads"), "true");
    assert_eq!(
        run.value("applied"),
        Policy::stream_worker()
            .allow_threads(true)
            .allowed_syscalls()
            .len()
            .to_string()
    );
    assert_eq!(run.probe("thread_spawn"), "ok", "{}", run.stderr);
    assert_eq!(run.value("thread_result"), sha256_hex(b"from a thread"));
    // Answered by the older filter, so that glibc takes its fallback.
    assert_eq!(run.probe("sched_getaffinity"), "errno 38");
    // Everything else is still denied, fork and exec included.
    assert_denied(run);
    assert_eq!(run.value("self_check"), "ok");
    // The whole job ran in a thread created after confinement.
    assert_work_done(run);
}

#[test]
fn abort_in_the_confined_worker_kills_it_with_sigabrt() {
    // glibc's abort() needs getpid, gettid, tgkill (to this process),
    // rt_sigaction and rt_sigprocmask; without them the process would still
    // die, but by SIGSEGV from abort's last resort, hiding what happened.
    let run = run(Mode::Abort);
    assert!(run.said("ready"), "{}", run.stderr);
    assert_eq!(
        run.status.signal(),
        Some(6),
        "{}: {}",
        run.status,
        run.stderr
    );
    match &run.mode_seen {
        Some(Ok(mode)) => assert_eq!(*mode, cowkit_confine::Mode::Filter),
        other => panic!("mode_of the child: {other:?}"),
    }
}
