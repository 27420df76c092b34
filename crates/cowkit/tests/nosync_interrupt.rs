//! A second Ctrl-C ends `cowkit nosync`'s wait for a daemon that ignores
//! SIGINT (issue 25): a shell's background job does. The signals go to
//! cowkit's process group, as a terminal sends them; the run still syncs,
//! names what it left running, and dies of SIGINT (130 in a shell).

use std::io::{BufRead, BufReader};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};

const COWKIT: &str = env!("CARGO_BIN_EXE_cowkit");
const PATIENCE: Duration = Duration::from_secs(20);

/// Kills the daemon the test left, whatever happens.
struct Daemon(i32);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(p) = Pid::from_raw(self.0) {
            let _ = rustix::process::kill_process(p, Signal::KILL);
        }
    }
}

fn parent_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 1..]
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Ctrl-C as a terminal sends it: to the whole foreground process group.
fn ctrl_c(group: i32) {
    rustix::process::kill_process_group(Pid::from_raw(group).unwrap(), Signal::INT).unwrap();
}

/// The next stderr line that contains `what`, within [`PATIENCE`].
fn line_with(lines: &mpsc::Receiver<String>, what: &str, seen: &mut Vec<String>) -> String {
    let start = Instant::now();
    while let Some(left) = PATIENCE.checked_sub(start.elapsed()) {
        match lines.recv_timeout(left) {
            Ok(l) => {
                seen.push(l.clone());
                if l.contains(what) {
                    return l;
                }
            }
            Err(_) => break,
        }
    }
    panic!("no line with {what:?} on stderr: {seen:#?}");
}

/// Run `cowkit nosync --json -- sh -c "trap '' INT; DAEMON & ..."`, where
/// DAEMON ends up as `sleep 1000` ignoring SIGINT; once the command has
/// exited, Ctrl-C twice. Checks what every such run must show and gives
/// the JSON summary and the daemon (killed when dropped).
fn ctrl_c_twice(daemon_cmd: &str) -> (serde_json::Value, Daemon) {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("daemon.pid");
    let script = format!(
        "trap '' INT; {daemon_cmd} </dev/null >/dev/null 2>&1 & echo $! > '{}'; echo ready",
        pidfile.display()
    );
    let mut child = Command::new(COWKIT)
        .args(["nosync", "--json", "--", "sh", "-c", &script])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let me = child.id() as i32;
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    assert_eq!(ready, "ready\n");
    let daemon = Daemon(
        std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap(),
    );
    let (tx, lines) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(l);
        }
    });
    // The command has exited once cowkit has adopted the daemon.
    let start = Instant::now();
    while parent_of(daemon.0) != Some(me) {
        assert!(start.elapsed() < PATIENCE, "the command did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
    // ... and the daemon is `sleep` (unshare execs it only after
    // unsharing; before, cowkit would name it `unshare …`).
    let cmdline = format!("/proc/{}/cmdline", daemon.0);
    while !std::fs::read(&cmdline).is_ok_and(|c| c.starts_with(b"sleep\0")) {
        assert!(start.elapsed() < PATIENCE, "the daemon did not start sleep");
        std::thread::sleep(Duration::from_millis(20));
    }

    let mut seen = Vec::new();
    ctrl_c(me);
    // The first one reached the daemon, which ignores it: cowkit says what
    // it waits for.
    let hint = line_with(&lines, "press Ctrl-C again", &mut seen);
    assert!(
        hint.contains(&format!("{} (sleep 1000)", daemon.0)),
        "{hint}"
    );
    assert_eq!(parent_of(daemon.0), Some(me), "the daemon ignores SIGINT");

    ctrl_c(me);
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > PATIENCE {
            let _ = child.kill();
            panic!("a second Ctrl-C did not end the wait: {seen:#?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // Dies of SIGINT, as a shell expects of a program stopped by Ctrl-C.
    assert_eq!(status.signal(), Some(libc::SIGINT), "{status:?}");
    line_with(
        &lines,
        "interrupted: stopped waiting for 1 process(es)",
        &mut seen,
    );
    line_with(&lines, &format!("  {} sleep 1000", daemon.0), &mut seen);
    let json = line_with(&lines, "{", &mut seen);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["interrupted"], true, "{v}");
    assert_eq!(v["left_running"][0]["pid"], daemon.0, "{v}");
    assert_eq!(v["left_running"][0]["command"], "sleep 1000", "{v}");
    assert_eq!(v["exit_code"], 0, "the command's own status: {v}");
    assert_eq!(v["final_sync_ran"], true, "{v}");
    // It was left running, not killed.
    assert!(
        std::fs::read_to_string(format!("/proc/{}/cmdline", daemon.0))
            .is_ok_and(|c| c.starts_with("sleep")),
        "the daemon is gone"
    );
    (v, daemon)
}

#[test]
fn a_second_ctrl_c_stops_waiting_for_a_daemon_that_ignores_it() {
    let (v, _daemon) = ctrl_c_twice("sleep 1000");
    // In this mount namespace: syncfs reaches all it can write.
    assert!(v["full_sync_reason"].is_null(), "{v}");
}

#[test]
fn a_daemon_left_in_another_mount_namespace_gets_sync() {
    if !rustix::process::geteuid().is_root() {
        assert!(!cowkit_testutil::required(), "unshare -m needs root");
        eprintln!("SKIPPED: needs root");
        return;
    }
    // unshare execs sleep in a mount namespace of its own, whose mounts
    // cowkit cannot see and which outlives the run.
    let (v, daemon) = ctrl_c_twice("unshare -m --propagation private sleep 1000");
    let why = v["full_sync_reason"].as_str().unwrap_or_default();
    assert!(
        why.contains(&format!("process {}", daemon.0)) && why.contains("another mount namespace"),
        "{v}"
    );
    assert_eq!(v["final_sync"][0]["fs_type"], "sync(2)", "{v}");
}
