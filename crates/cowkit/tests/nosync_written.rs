//! `cowkit nosync`'s final sync covers what the command changed (issue
//! 15): while another, long-running process writes to a second filesystem,
//! only the command's filesystem is synced; the other one is reported as
//! not written and no `syncfs` reaches it.

use std::path::Path;
use std::process::{Command, Stdio};

use cowkit_testutil::{required, scratch, Fs};

fn mount_of(p: &Path) -> String {
    let o = Command::new("findmnt")
        .args(["-n", "-o", "TARGET", "--target"])
        .arg(p)
        .output()
        .unwrap();
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

#[test]
fn only_the_filesystems_the_command_changed_are_synced() {
    if !rustix::process::geteuid().is_root() {
        assert!(!required(), "fanotify needs root");
        eprintln!("SKIPPED: needs root");
        return;
    }
    let (Some(mine), Some(theirs)) = (scratch(Fs::Xfs), scratch(Fs::Ext4)) else {
        return;
    };
    // Another job keeps writing to the ext4 filesystem, one process all
    // along.
    let busy = theirs.path().join("busy");
    let mut writer = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import os, time\nwhile True:\n    with open({busy:?}, 'ab') as f:\n        f.write(b'x' * 4096)\n    time.sleep(0.01)\n",
            busy = busy.to_str().unwrap()
        ))
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let out = Command::new(env!("CARGO_BIN_EXE_cowkit"))
        .args(["nosync", "--json", "--", "sh", "-c"])
        .arg(format!(
            "echo data > {}/f && sync && sleep 0.5",
            mine.path().display()
        ))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let _ = writer.kill();
    let _ = writer.wait();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json = stderr.lines().rev().find(|l| l.starts_with('{')).unwrap();
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["watch_error"], serde_json::Value::Null, "{v}");
    let synced: Vec<&str> = v["final_sync"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["mount_point"].as_str().unwrap())
        .collect();
    let skipped: Vec<&str> = v["not_written"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["mount_point"].as_str().unwrap())
        .collect();
    let (m, t) = (mount_of(mine.path()), mount_of(theirs.path()));
    assert!(synced.contains(&m.as_str()), "{m} not synced: {v}");
    assert!(!synced.contains(&t.as_str()), "{t} synced: {v}");
    assert!(skipped.contains(&t.as_str()), "{t} not reported: {v}");
    assert_eq!(std::fs::read(mine.path().join("f")).unwrap(), b"data\n");
}

/// A static binary's sync calls reach the supervisor (seccomp user
/// notification): a descriptor that is not open still gets EBADF, an open
/// one gets 0 without a sync, and `-v` counts them (issue 15).
#[test]
fn static_binaries_keep_ebadf_and_are_counted() {
    if !rustix::process::geteuid().is_root() {
        assert!(!required(), "needs root");
        eprintln!("SKIPPED: needs root");
        return;
    }
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    let src = d.join("sfs.c");
    std::fs::write(
        &src,
        r#"#include <stdio.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/syscall.h>
int main(int argc, char **argv) {
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int good = fsync(fd);
    int bad = fsync(57);
    int bad_errno = errno;
    close(fd);
    int closed = syscall(SYS_syncfs, fd);
    int closed_errno = errno;
    printf("%d %d %d %d %d\n", good, bad, bad_errno == EBADF, closed, closed_errno == EBADF);
    return 0;
}
"#,
    )
    .unwrap();
    let bin = d.join("sfs");
    let cc = Command::new("cc")
        .args(["-static", "-O2", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .unwrap();
    assert!(cc.success(), "cc -static");
    let out = Command::new(env!("CARGO_BIN_EXE_cowkit"))
        .args(["-v", "nosync", "--json", "--"])
        .arg(&bin)
        .arg(d.join("f"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "0 -1 1 -1 1\n");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json = stderr.lines().rev().find(|l| l.starts_with('{')).unwrap();
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(v["answered_by_seccomp"]["fsync"], 2, "{v}");
    assert_eq!(v["answered_by_seccomp"]["syncfs"], 1, "{v}");
    assert!(stderr.contains("answered by the seccomp layer"), "{stderr}");
}
