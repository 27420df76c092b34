//! The parent: re-executes this test binary as the child, feeds it, and
//! collects what it reported and wrote.

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::{framed_input, Mode, CHILD_ENV, CHILD_TEST, DIR_ENV, TAG};

/// How long a child may take (debug builds decode ~6 MiB and touch 128 MiB).
const DEADLINE: Duration = Duration::from_secs(300);

/// Everything a child run left behind.
pub struct Run {
    pub mode: Mode,
    pub status: ExitStatus,
    /// All of the child's stderr, for failure messages.
    pub stderr: String,
    /// The report lines, without the tag.
    pub report: Vec<String>,
    /// What the child wrote to its stdout, the output file.
    pub output: Vec<u8>,
    /// `mode_of(child)` read by the parent once the child said `ready`.
    pub mode_seen: Option<Result<cowkit_confine::Mode, String>>,
    /// The scratch directory (kept until the run is dropped).
    pub dir: tempfile::TempDir,
}

impl Run {
    fn find(&self, prefix: &str) -> Option<&str> {
        self.report
            .iter()
            .find_map(|l| l.strip_prefix(prefix).map(str::trim))
    }

    /// `ok`, `errno N` or `error TEXT` for probe `name`.
    pub fn probe(&self, name: &str) -> &str {
        self.find(&format!("probe {name} "))
            .unwrap_or_else(|| panic!("{:?}: no probe `{name}`\n{}", self.mode, self.stderr))
    }

    pub fn value(&self, name: &str) -> &str {
        self.find(&format!("value {name} "))
            .unwrap_or_else(|| panic!("{:?}: no value `{name}`\n{}", self.mode, self.stderr))
    }

    pub fn said(&self, line: &str) -> bool {
        self.report.iter().any(|l| l == line)
    }

    /// Panics with the child's stderr unless it exited 0 and said `done`.
    pub fn assert_completed(&self) {
        assert!(
            self.status.success() && self.said("done"),
            "{:?} child: {}\n{}",
            self.mode,
            self.status,
            self.stderr
        );
    }
}

/// Runs this test binary's child test in `mode` and waits for it.
pub fn run(mode: Mode) -> Run {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("victim"),
        b"must survive the confined child\n",
    )
    .unwrap();
    let output_path = dir.path().join("output");
    let output = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&output_path)
        .unwrap();

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, mode.name())
        .env(DIR_ENV, dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::from(output))
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();

    // Read stderr as it comes, passing the lines on.
    let (tx, rx) = mpsc::channel::<String>();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line.clone());
            all.push(line);
        }
        all
    });

    // Once the child has confined itself, look at it from outside, then let
    // it read its input.
    let ready = format!("{TAG} ready");
    let start = Instant::now();
    let mut mode_seen = None;
    while let Ok(line) = rx.recv_timeout(DEADLINE.saturating_sub(start.elapsed())) {
        if line == ready {
            mode_seen = Some(cowkit_confine::mode_of(pid).map_err(|e| format!("{e}: {e:?}")));
            break;
        }
    }
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        // The abort child is gone by now: a broken pipe is expected there.
        let _ = stdin.write_all(&framed_input());
    });

    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{mode:?} child took more than {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    writer.join().unwrap();
    let lines = reader.join().unwrap();
    let report = lines
        .iter()
        .filter_map(|l| l.strip_prefix(TAG).map(|r| r.trim().to_owned()))
        .collect();
    Run {
        mode,
        status,
        stderr: lines.join("\n"),
        report,
        output: std::fs::read(&output_path).unwrap(),
        mode_seen,
        dir,
    }
}
