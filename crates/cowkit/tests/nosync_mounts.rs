//! `cowkit nosync` syncs the filesystems its command mounted (issue 25):
//! the command mounts a fresh ext4 image itself, writes 16 MiB into it
//! with its sync calls swallowed, and exits without unmounting. The data
//! must be in the image when `cowkit nosync` returns.
//!
//! The image is read through its backing file: the loop device writes a
//! block there only when the mounted filesystem writes it back, so the
//! image holds the written blocks exactly when the filesystem was synced
//! (or wrote back on its own). Each run's blocks carry a fresh marker, and
//! the command first shows that none of them is in the image while it
//! still runs (after its own, swallowed, sync calls): only the final sync
//! can have put them there.
//!
//! Needs root (loop mounts), `mkfs.ext4`, `unshare`; runs on the rig's
//! XFS (`scripts/rig.sh`).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use cowkit_testutil::{required, scratch, Fs};

const COWKIT: &str = env!("CARGO_BIN_EXE_cowkit");
const BLOCK: usize = 4096;
/// 16 MiB.
const BLOCKS: usize = 4096;

/// Each test mounts something that every other `cowkit nosync` run of this
/// binary would see appear in its mount table: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Root, the tools, and a scratch directory on the rig's XFS.
fn setup() -> Option<tempfile::TempDir> {
    let ok = rustix::process::geteuid().is_root() && have("mkfs.ext4") && have("unshare");
    if !ok {
        assert!(!required(), "root, mkfs.ext4 and unshare are needed");
        eprintln!("SKIPPED: needs root, mkfs.ext4 and unshare");
        return None;
    }
    scratch(Fs::Xfs)
}

/// A 64 MiB ext4 image with 4 KiB blocks (so file blocks are 4 KiB-aligned
/// in the image), and a mount point for it.
fn image(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let img = dir.join(format!("{name}.img"));
    std::fs::File::create(&img)
        .unwrap()
        .set_len(64 << 20)
        .unwrap();
    let o = Command::new("mkfs.ext4")
        .args(["-q", "-F", "-b", "4096"])
        .arg(&img)
        .output()
        .unwrap();
    assert!(o.status.success(), "{o:?}");
    let mnt = dir.join(name);
    std::fs::create_dir(&mnt).unwrap();
    (img, mnt)
}

/// A marker unique to this run (time and pid), and 16 MiB of blocks that
/// each begin with it.
fn payload(dir: &Path) -> (Vec<u8>, PathBuf) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    let marker = format!(
        "cowkit-issue-25:{:016x}:{:08x}:",
        now.as_nanos() as u64,
        std::process::id()
    )
    .into_bytes();
    let fill = cowkit_testutil::pattern(BLOCK, now.as_nanos() as u64);
    let mut data = Vec::with_capacity(BLOCK * BLOCKS);
    for i in 0..BLOCKS {
        let mut b = fill.clone();
        b[..marker.len()].copy_from_slice(&marker);
        b[marker.len()..marker.len() + 8].copy_from_slice(&(i as u64).to_le_bytes());
        data.extend_from_slice(&b);
    }
    let p = dir.join("payload");
    std::fs::write(&p, &data).unwrap();
    (marker, p)
}

/// How many 4 KiB blocks of the image begin with `marker`.
fn blocks_in(img: &Path, marker: &[u8]) -> usize {
    let mut f = std::fs::File::open(img).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut n = 0;
    loop {
        let got = read_full(&mut f, &mut buf);
        n += buf[..got]
            .chunks_exact(BLOCK)
            .filter(|b| b.starts_with(marker))
            .count();
        if got < buf.len() {
            return n;
        }
    }
}

fn read_full(f: &mut std::fs::File, buf: &mut [u8]) -> usize {
    let mut at = 0;
    while at < buf.len() {
        match f.read(&mut buf[at..]).unwrap() {
            0 => break,
            k => at += k,
        }
    }
    at
}

/// Run `cowkit nosync --json -- sh -c SCRIPT`; SCRIPT prints `ready` and
/// waits for a line on stdin. Before the line is sent, `check` runs. Gives
/// the exit status and the last JSON line.
fn run_held(script: &str, check: impl FnOnce()) -> (std::process::ExitStatus, serde_json::Value) {
    let mut child = Command::new(COWKIT)
        .args(["-v", "nosync", "--json", "--", "sh", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    if line != "ready\n" {
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        panic!(
            "the command failed before it was ready: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    check();
    child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    eprintln!("{err}");
    let json = err
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .expect("a JSON summary");
    (out.status, serde_json::from_str(json).unwrap())
}

/// The script's part that writes: copy the payload, then every kind of
/// sync call (swallowed), then say `ready` and wait.
fn write_and_wait(payload: &Path, mnt: &Path) -> String {
    format!(
        "cp '{p}' '{m}/data' && sync '{m}/data' && sync -f '{m}/data' && sync && echo ready && read go",
        p = payload.display(),
        m = mnt.display()
    )
}

#[test]
fn a_filesystem_the_command_mounted_is_synced() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = setup() else {
        return;
    };
    let (img, mnt) = image(d.path(), "target");
    let (marker, payload) = payload(d.path());
    let script = format!(
        "mount -o loop '{}' '{}' && {}",
        img.display(),
        mnt.display(),
        write_and_wait(&payload, &mnt)
    );
    let (status, v) = run_held(&script, || {
        // The command wrote and "synced": nothing reached the image.
        assert_eq!(
            blocks_in(&img, &marker),
            0,
            "the sync calls were not swallowed"
        );
    });
    let on_disk = blocks_in(&img, &marker);
    let _ = Command::new("umount").arg(&mnt).status();
    assert!(status.success(), "{status:?}: {v}");
    assert_eq!(on_disk, BLOCKS, "the 16 MiB are not in the image: {v}");
    let m = mnt.to_str().unwrap();
    assert_eq!(v["mounted_during_run"][0]["mount_point"], m, "{v}");
    assert!(
        v["final_sync"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["mount_point"] == m && s["error"].is_null()),
        "{v}"
    );
    // The new mount is in this namespace: syncfs reaches it, no sync(2).
    assert!(v["full_sync_reason"].is_null(), "{v}");
}

#[test]
fn a_mount_in_a_pinned_namespace_falls_back_to_sync() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let Some(d) = setup() else {
        return;
    };
    let (img, mnt) = image(d.path(), "hidden");
    let (marker, payload) = payload(d.path());
    let pin = d.path().join("ns");
    std::fs::write(&pin, b"").unwrap();
    // The command mounts in a mount namespace of its own, kept after it
    // exits by a bind mount of the namespace on `pin`: its filesystem is
    // invisible to cowkit and alive. The kernel refuses (EINVAL) to pin a
    // mount namespace whose id is not above the pinning process's; on
    // Linux 6.18 ids come from per-CPU batches, so a namespace made on
    // another CPU than the rig's may have a lower one. unshare then fails
    // before it runs the inner command: each CPU is tried in turn.
    let script = format!(
        "for c in $(seq 0 $(($(getconf _NPROCESSORS_ONLN) - 1))); do taskset -c $c unshare --mount='{pin}' --propagation private sh -c \"mount -o loop '{img}' '{mnt}' && {w}\" && break; done",
        pin = pin.display(),
        img = img.display(),
        mnt = mnt.display(),
        w = write_and_wait(&payload, &mnt).replace('"', "\\\"")
    );
    let (status, v) = run_held(&script, || {
        assert_eq!(
            blocks_in(&img, &marker),
            0,
            "the sync calls were not swallowed"
        );
    });
    let on_disk = blocks_in(&img, &marker);
    // Unpinning the namespace unmounts its filesystem.
    let _ = Command::new("umount").arg(&pin).status();
    assert!(status.success(), "{status:?}: {v}");
    assert_eq!(on_disk, BLOCKS, "the 16 MiB are not in the image: {v}");
    let why = v["full_sync_reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("namespace was pinned") && why.contains(pin.to_str().unwrap()),
        "{v}"
    );
    assert_eq!(v["final_sync"][0]["fs_type"], "sync(2)", "{v}");
}
