//! Issue 14 ("Hostile inputs and faults"): fifos where files are expected,
//! runs interrupted by signals, and installs and copies by a user who is
//! not root.
//!
//! Needs the rig's filesystems; without them the tests say SKIPPED (under
//! CI, fail).

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use cowkit_testutil::rpm::{fixture_in, FIXTURE};
use cowkit_testutil::{scratch, Fs};

const COWKIT: &str = env!("CARGO_BIN_EXE_cowkit");

fn tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

/// Run `cmd`, killed after `secs`: a hang is a failure, not a stuck test.
fn within(secs: u64, cmd: &mut Command) -> Output {
    let mut c = Command::new("timeout");
    c.args(["-s", "KILL", &secs.to_string()])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(d) = cmd.get_current_dir() {
        c.current_dir(d);
    }
    let out = c.output().unwrap();
    assert_ne!(
        out.status.code(),
        Some(137),
        "{:?} hung and was killed after {secs} s",
        cmd
    );
    out
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo").arg(p).status().unwrap();
    assert!(st.success());
}

// ---------------------------------------------------------------------------
// Item 5: fifos where regular files are expected.

#[test]
fn issue14_fifo_as_passwd_and_group_does_not_hang_install() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let rpm = fixture_in(tmp(), "w19.zstdio");
    let root = t.path().join("root");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    mkfifo(&root.join("etc/passwd"));
    mkfifo(&root.join("etc/group"));
    let out = within(
        120,
        Command::new(COWKIT)
            .args(["install", "--no-db", "--noscripts", "--root"])
            .arg(&root)
            .arg(&rpm),
    );
    // Names that cannot be looked up fall back as documented.
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(root.join(FIXTURE).join("suid-cap").exists());
}

#[test]
fn issue14_fifo_as_ld_so_preload_is_refused_not_waited_on() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let root = t.path().join("root");
    std::fs::create_dir_all(root.join("etc")).unwrap();
    mkfifo(&root.join("etc/ld.so.preload"));
    let out = within(
        60,
        Command::new(COWKIT)
            .args(["nosync", "preload", "--install", "--root"])
            .arg(&root),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("not a regular file (it is a fifo)"), "{err}");
    // --remove reads it as well.
    let out = within(
        60,
        Command::new(COWKIT)
            .args(["nosync", "preload", "--remove", "--root"])
            .arg(&root),
    );
    assert!(!out.status.success(), "{}", stderr(&out));
}

/// A source tree whose regular files are swapped for fifos and back while
/// `cowkit cp -a` copies it: no copy may block on a fifo, and every copied
/// regular file holds what the source held.
#[test]
fn issue14_cp_never_blocks_on_a_file_swapped_for_a_fifo() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let d = t.path();
    let src = d.join("src");
    std::fs::create_dir(&src).unwrap();
    const N: usize = 64;
    for i in 0..N {
        std::fs::write(src.join(format!("f{i}")), format!("file {i}\n")).unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (src, stop) = (src.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let i = (n as usize) % N;
                let name = src.join(format!("f{i}"));
                let fifo = src.join(format!(".fifo{i}"));
                let file = src.join(format!(".file{i}"));
                let _ = rustix::fs::mknodat(
                    rustix::fs::CWD,
                    &fifo,
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o644),
                    0,
                );
                let _ = std::fs::rename(&fifo, &name);
                std::fs::write(&file, format!("file {i}\n")).unwrap();
                let _ = std::fs::rename(&file, &name);
                n += 1;
            }
            n
        })
    };
    let start = Instant::now();
    let mut runs = 0;
    while start.elapsed() < Duration::from_secs(20) {
        let dst = d.join(format!("out{runs}"));
        let out = within(
            30,
            Command::new(COWKIT).args(["cp", "-a"]).arg(&src).arg(&dst),
        );
        // A file caught as a fifo is copied as a fifo or reported; it
        // never blocks the copy.
        for e in std::fs::read_dir(&dst).unwrap().flatten() {
            let md = e.metadata().unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if md.is_file() && name.starts_with('f') {
                let want = format!("file {}\n", &name[1..]);
                assert_eq!(std::fs::read_to_string(e.path()).unwrap(), want);
            }
        }
        let _ = out;
        std::fs::remove_dir_all(&dst).unwrap();
        runs += 1;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!("{runs} copies during {swaps} swaps");
    assert!(runs > 3 && swaps > 100, "{runs} copies, {swaps} swaps");
}

