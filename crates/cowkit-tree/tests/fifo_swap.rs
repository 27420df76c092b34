//! Issue 14 item 5: a source file swapped for a fifo between the moment
//! the copy stats it and the moment it opens it must not block the copy
//! (GNU `cp` blocks in `open` forever). Copies run in-process, many times,
//! while another thread swaps a few names between a regular file and a
//! fifo as fast as it can.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use cowkit_testutil::{scratch, Fs};
use cowkit_tree::{copy, CopyOptions, NoProgress};

const N: usize = 16;

fn swap_until(src: &Path, stop: &AtomicBool) -> u64 {
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let i = (n as usize) % 2;
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
}

#[test]
fn copy_never_blocks_on_a_file_swapped_for_a_fifo() {
    let Some(t) = scratch(Fs::Xfs) else { return };
    let src = t.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for i in 0..N {
        std::fs::write(src.join(format!("f{i}")), format!("file {i}\n")).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (src, stop) = (src.clone(), stop.clone());
        std::thread::spawn(move || swap_until(&src, &stop))
    };
    let mut o = CopyOptions::archive();
    o.threads = 1;
    let start = Instant::now();
    let mut runs = 0u64;
    let mut hung = false;
    while start.elapsed() < Duration::from_secs(15) {
        let dst = t.path().join(format!("out{runs}"));
        let (tx, rx) = mpsc::channel();
        {
            let (src, dst, o) = (src.clone(), dst.clone(), o.clone());
            // A copy that blocks forever stays behind in its thread; the
            // test fails instead of hanging.
            std::thread::spawn(move || {
                let _ = tx.send(copy(&src, &dst, &o, &NoProgress));
            });
        }
        let Ok(sum) = rx.recv_timeout(Duration::from_secs(10)) else {
            hung = true;
            break;
        };
        let sum = sum.unwrap();
        // A name caught as a fifo is copied as a fifo or reported; a
        // regular file copied holds what the source held.
        for e in std::fs::read_dir(&dst).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.metadata().unwrap().is_file() && name.starts_with('f') {
                let want = format!("file {}\n", &name[1..]);
                assert_eq!(std::fs::read_to_string(e.path()).unwrap(), want);
            }
        }
        for err in &sum.errors {
            assert!(
                err.to_string().contains("replaced by something") || err.errno == Some("ENOENT"),
                "{err}"
            );
        }
        std::fs::remove_dir_all(&dst).unwrap();
        runs += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    eprintln!("{runs} copies during {swaps} swaps");
    assert!(!hung, "a copy blocked on a fifo (after {runs} copies)");
    assert!(runs > 100, "{runs} copies");
}
