//! The built shim: what it imports, and the kickstart snippet that
//! recreates it.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use cowkit_nosync::shim::{KINDS, OLDEST_GLIBC, SHIM};

fn need(ok: bool, what: &str) -> bool {
    if !ok {
        if cowkit_testutil::required() {
            panic!("{what} is missing; scripts/setup.sh installs it");
        }
        eprintln!("SKIPPED: {what} is missing");
    }
    ok
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success())
}

/// `GLIBC_2.2.5` → (2, 2); only major and minor matter for the bound.
fn version(v: &str) -> (u32, u32) {
    let mut it = v.trim_start_matches("GLIBC_").split('.');
    let major = it.next().unwrap().parse().unwrap();
    let minor = it.next().unwrap_or("0").parse().unwrap();
    (major, minor)
}

#[test]
fn the_shim_imports_only_errno_location_from_an_old_glibc() {
    if !need(have("objdump"), "objdump (binutils)") {
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let so = t.path().join("shim.so");
    std::fs::write(&so, SHIM).unwrap();
    let out = Command::new("objdump").arg("-T").arg(&so).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let mut strong_imports = Vec::new();
    let mut exports = Vec::new();
    for line in text.lines().filter(|l| l.contains(" D")) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let name = *fields.last().unwrap();
        if let Some(v) = fields.iter().find(|f| f.starts_with("(GLIBC_")) {
            let v = version(v.trim_matches(|c| c == '(' || c == ')'));
            assert!(v <= OLDEST_GLIBC, "{name} needs glibc {v:?}: {line}");
        }
        if line.contains("*UND*") {
            // Weak references from the C runtime objects resolve to nothing
            // when absent.
            if !fields.contains(&"w") {
                strong_imports.push(name);
            }
        } else if line.contains(".text") {
            exports.push(name);
        }
    }
    assert_eq!(strong_imports, ["__errno_location"], "{text}");
    // What the shim counts (the sync calls, `open`, `pwritev2`), and the
    // other entry points of open.
    let other_opens = [
        "open64",
        "openat",
        "openat64",
        "__open_2",
        "__open64_2",
        "creat",
    ];
    for f in KINDS.into_iter().chain(other_opens) {
        assert!(exports.contains(&f), "{f} not exported: {text}");
    }
}

/// Lines between `start` (a line starting with it) and the next `%end`.
fn section(snippet: &str, start: &str) -> String {
    let mut out = String::new();
    let mut on = false;
    for l in snippet.lines() {
        if on && l == "%end" {
            break;
        }
        if on {
            out.push_str(l);
            out.push('\n');
        }
        if l.starts_with(start) {
            on = true;
        }
    }
    out
}

fn bash(script: &str, root: &Path) {
    let out = Command::new("bash")
        .arg("-c")
        .arg(script)
        .env("COWKIT_NOSYNC_ROOT", root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn the_kickstart_snippet_recreates_the_shim_byte_for_byte() {
    if !need(have("gzip"), "gzip") || !need(have("cc"), "cc") {
        return;
    }
    let snippet = cowkit_nosync::kickstart::snippet();
    let pre = section(&snippet, "%pre ");
    let post = section(&snippet, "%post ");
    assert!(!pre.is_empty() && !post.is_empty());
    // Only builtins, printf and gzip in %pre.
    for word in [
        "cat ", "mv ", "cp ", "chmod", "base64", "xxd", "grep", "mkdir",
    ] {
        assert!(!pre.contains(word), "%pre uses {word}");
    }

    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    std::fs::create_dir_all(root.join("usr/lib")).unwrap();
    std::fs::create_dir_all(root.join("etc")).unwrap();
    // An existing entry, without a final newline.
    std::fs::write(root.join("etc/ld.so.preload"), "/usr/lib/other.so").unwrap();
    bash(&pre, root);
    let so = cowkit_nosync::preload::host_shim_path(root);
    assert_eq!(std::fs::read(&so).unwrap(), SHIM, "not byte for byte");
    let mode = std::fs::metadata(&so).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o644);
    let listed = format!(
        "/usr/lib/other.so\n{}\n",
        cowkit_nosync::preload::shim_path()
    );
    assert_eq!(
        std::fs::read_to_string(root.join("etc/ld.so.preload")).unwrap(),
        listed
    );
    // Again: nothing changes.
    bash(&pre, root);
    assert_eq!(
        std::fs::read_to_string(root.join("etc/ld.so.preload")).unwrap(),
        listed
    );
    assert_eq!(std::fs::read(&so).unwrap(), SHIM);
    assert_eq!(std::fs::read_dir(root.join("usr/lib")).unwrap().count(), 1);

    // The recreated shim works.
    let prog = root.join("syncer");
    let st = Command::new("cc")
        .args(["-O1", "-o"])
        .arg(&prog)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/programs/syncer.c"
        ))
        .status()
        .unwrap();
    assert!(st.success());
    let data = tempfile::tempdir().unwrap();
    let out = Command::new(&prog)
        .arg(data.path())
        .env("LD_PRELOAD", &so)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("open_o_sync=0"), "{text}");
    assert!(text.contains("openat_o_dsync=0"), "{text}");
    assert!(text.contains("fsync_closed=-1 errno=EBADF"), "{text}");

    // %post unregisters and deletes it, keeping the other entry.
    bash(&post, root);
    assert_eq!(
        std::fs::read_to_string(root.join("etc/ld.so.preload")).unwrap(),
        "/usr/lib/other.so\n"
    );
    assert!(!so.exists());
}
