//! `cowkit_nosync::scoped::Session`: the sync calls of every command it is
//! applied to are answered (and counted) without running, a closed
//! descriptor still gets `EBADF`, commands it is not applied to keep their
//! calls, and the final sync covers the root's filesystem. Needs root
//! (the filter is installed without `no_new_privs`).

use std::process::Command;

use cowkit_nosync::scoped::Session;

fn answered(r: &cowkit_nosync::scoped::Report, call: &str) -> u64 {
    r.answered
        .iter()
        .find(|(n, _)| *n == call)
        .map_or(0, |(_, n)| *n)
}

#[test]
fn a_session_answers_every_command_once_set_up() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("f");
    let session = Session::start(dir.path()).unwrap();
    for _ in 0..3 {
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg("echo x > \"$1\" && sync && sync -f \"$1\" && dd if=\"$1\" of=\"$1.2\" conv=fsync status=none")
            .arg("sh")
            .arg(&f);
        session.apply(&mut c);
        assert!(c.status().unwrap().success());
    }
    // Not applied: not answered.
    assert!(Command::new("sync").status().unwrap().success());
    let r = session.finish().unwrap();
    assert_eq!(r.processes, 3, "{r:?}");
    assert_eq!(answered(&r, "sync"), 3, "{r:?}");
    assert_eq!(answered(&r, "syncfs"), 3, "{r:?}");
    assert!(answered(&r, "fsync") >= 3, "{r:?}");
    assert_eq!(r.still_running, 0);
    assert!(!r.sync_suppressed);
    assert!(!r.syncs.is_empty(), "{r:?}");
}

#[test]
fn a_closed_descriptor_still_gets_ebadf() {
    let dir = tempfile::tempdir().unwrap();
    let session = Session::start(dir.path()).unwrap();
    let mut c = Command::new("python3");
    c.args([
        "-c",
        "import os\ntry:\n os.fsync(57)\nexcept OSError as e:\n print(e.errno)\nos.fsync(1)\nprint('ok')",
    ]);
    session.apply(&mut c);
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "9\nok\n");
    let r = session.finish().unwrap();
    assert_eq!(answered(&r, "fsync"), 2, "{r:?}");
}
