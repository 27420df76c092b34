//! `cowkit transcode` and `cowkit install` as a user runs them: JSON
//! summaries, stdin and stdout, damaged and unsigned packages, the
//! confined worker, and partly failing installs.

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{cowkit, run, tmp, Run};
use cowkit_testutil::rpm::{
    build_rpm_cached, edit_header, fixture_in, footer_u64, header_range, pgp_fingerprint,
    pgp_fixtures, replace_once, write_owner_db, FIXTURE, LARGE,
};
use cowkit_testutil::tree::{diff, mkdir, snapshot, Entry};
use cowkit_testutil::{find, scratch, sha256_hex, Fs};
use serde_json::Value;

// ---------------------------------------------------------------------------
// Helpers.

/// The fixture package `cowkit-fixture` with `payload`, built once.
fn fixture(payload: &str) -> PathBuf {
    fixture_in(tmp(), payload)
}

fn transcode(input: &Path, output: &Path, extra: &[&str]) -> Run {
    run(cowkit()
        .arg("transcode")
        .args(extra)
        .arg(input)
        .arg("-o")
        .arg(output))
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn flip(b: &[u8], at: usize) -> Vec<u8> {
    let mut b = b.to_vec();
    b[at] ^= 0x01;
    b
}

// ---------------------------------------------------------------------------
// 8. transcode + install end to end.

#[test]
fn transcode_then_install_with_json_on_xfs() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let rpm = fixture("w19.zstdio");
    let rpm_bytes = std::fs::read(&rpm).unwrap();
    let rpme = dir.path().join("pkg.rpme");

    let t = transcode(&rpm, &rpme, &["--json"]);
    assert!(t.ok, "{}", t.stderr);
    let j = t.json();
    assert_eq!(j["confined"], true, "{j}");
    assert_eq!(j["signed_by"], Value::Null, "{j}");
    assert_eq!(j["files"], 11, "{j}");
    assert_eq!(j["input_bytes"], rpm_bytes.len() as u64, "{j}");
    assert_eq!(j["input_sha256"], sha256_hex(&rpm_bytes), "{j}");
    assert_eq!(
        j["output_bytes"],
        std::fs::metadata(&rpme).unwrap().len(),
        "{j}"
    );
    assert_eq!(names_in(dir.path()), ["pkg.rpme"]);
    // Not the temporary file's 0600: 0666 minus the umask.
    let umask = std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .map(|v| u32::from_str_radix(v.trim(), 8).unwrap())
        .unwrap();
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&rpme).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o666 & !umask);

    // rpm reads the headers of the extents file as those of the package.
    let q = run(Command::new("rpm")
        .args(["-qp", "--qf", "%{NAME}"])
        .arg(&rpme));
    assert_eq!(
        String::from_utf8_lossy(&q.stdout),
        "cowkit-fixture",
        "{}",
        q.stderr
    );
    let list = |p: &Path| run(Command::new("rpm").arg("-qpl").arg(p)).stdout;
    assert_eq!(list(&rpme), list(&rpm));

    let root = mkdir(&dir.path().join("root"));
    write_owner_db(&root);
    let i = run(cowkit()
        .args(["install", "--json", "--verify", "--root"])
        .arg(&root)
        .arg(&rpme));
    assert!(i.ok, "{}", i.stderr);
    let j = i.json();
    assert_eq!(j["ok"], true, "{j}");
    assert_eq!(j["failed"], serde_json::json!([]), "{j}");
    assert_eq!(j["packages"], 1, "{j}");
    assert_eq!(j["files"], 11, "{j}");
    assert_eq!(j["hardlinks"], 2, "{j}");
    assert_eq!(j["verified"], 11, "{j}");
    assert_eq!(j["files_by_method"]["clone"], 2, "{j}");
    let cloned = j["bytes"]["cloned"].as_u64().unwrap();
    assert!(
        (2 * (LARGE / 4096 * 4096)..=2 * LARGE).contains(&cloned),
        "{j}"
    );
    assert_eq!(j["warnings"], serde_json::json!([]), "{j}");

    // The plain package, written through user space: the same tree.
    let root2 = mkdir(&dir.path().join("root2"));
    write_owner_db(&root2);
    let i = run(cowkit()
        .args(["install", "--json", "--reflink", "never", "--root"])
        .arg(&root2)
        .arg(&rpm));
    assert!(i.ok, "{}", i.stderr);
    assert_eq!(i.json()["bytes"]["cloned"], 0);
    let fields = |e: &Entry| (e.shape(), e.uid, e.gid, e.mtime, e.caps.clone());
    let (a, b) = (
        snapshot(&root.join(FIXTURE)),
        snapshot(&root2.join(FIXTURE)),
    );
    let d = diff(&a, &b, fields);
    assert!(d.is_empty(), "{d:#?}");
    let expected = std::fs::read(&rpme).unwrap();

    // `-` for stdin and stdout: a file on stdout (holes), then pipes.
    let out1 = dir.path().join("from-stdin.rpme");
    let r = run(cowkit()
        .args(["transcode", "-", "-o", "-"])
        .stdin(std::fs::File::open(&rpm).unwrap())
        .stdout(std::fs::File::create(&out1).unwrap()));
    assert!(r.ok, "{}", r.stderr);
    assert!(
        std::fs::read(&out1).unwrap() == expected,
        "stdout file differs"
    );

    let mut child = cowkit()
        .args(["transcode", "-", "-o", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || stdin.write_all(&rpm_bytes));
    let mut piped = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut piped)
        .unwrap();
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(piped == expected, "piped output differs");
    let out2 = dir.path().join("from-pipe.rpme");
    std::fs::write(&out2, &piped).unwrap();
    let root3 = mkdir(&dir.path().join("root3"));
    write_owner_db(&root3);
    let i = run(cowkit().args(["install", "--root"]).arg(&root3).arg(&out2));
    assert!(i.ok, "{}", i.stderr);
    let d = diff(&a, &snapshot(&root3.join(FIXTURE)), fields);
    assert!(d.is_empty(), "{d:#?}");
}

// ---------------------------------------------------------------------------
// 9. Damaged packages: refused, and nothing left in the output directory.

#[test]
fn transcode_refuses_damaged_packages_and_leaves_no_file_behind() {
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let z = std::fs::read(fixture("w19.zstdio")).unwrap();
    let u = std::fs::read(fixture("w.ufdio")).unwrap();
    let (hz, ez) = header_range(&z);
    let (_, eu) = header_range(&u);
    let mid = ez + (z.len() - ez) / 2;

    let content = eu + find(&u[eu..], b"hello\n").expect("small.txt in the payload");
    let wrong_payload_digest = {
        let mut b = z.clone();
        let real = sha256_hex(&z[ez..]);
        let fake = sha256_hex(b"something else");
        edit_header(&mut b, |h| {
            replace_once(h, real.as_bytes(), fake.as_bytes())
        });
        b
    };
    let summary = hz + find(&z[hz..], b"cowkit test fixture").unwrap();

    // (what, input, words stderr must contain, `a|b` for either)
    let cases: Vec<(&str, Vec<u8>, &[&str])> = vec![
        ("empty", Vec::new(), &["truncated", "lead"]),
        ("not an rpm", b"hello, world\n".repeat(20), &["not an RPM"]),
        ("cut in the lead", z[..50].to_vec(), &["truncated", "lead"]),
        (
            "cut in the signature header",
            z[..96 + 40].to_vec(),
            &["truncated", "signature header"],
        ),
        (
            "cut in the header",
            z[..hz + 100].to_vec(),
            &["truncated", "header"],
        ),
        ("cut after the headers", z[..ez].to_vec(), &["payload"]),
        ("cut in the payload", z[..mid].to_vec(), &["payload"]),
        (
            "cut one byte short",
            z[..z.len() - 1].to_vec(),
            &["payload"],
        ),
        (
            "flipped header byte",
            flip(&z, summary),
            &["header digest mismatch"],
        ),
        // Depending on where it lands: a block the decoder rejects, or
        // (zstd frames here have no checksum) a file whose digest differs.
        (
            "flipped payload byte",
            flip(&z, mid),
            &["digest|damaged|cannot be decompressed"],
        ),
        (
            "flipped content byte",
            flip(&u, content),
            &["small.txt", "digest"],
        ),
        (
            "wrong payload digest",
            wrong_payload_digest,
            &["payload digest mismatch"],
        ),
    ];
    for (n, (what, bytes, words)) in cases.into_iter().enumerate() {
        let input = work.path().join(format!("in-{n}.rpm"));
        std::fs::write(&input, &bytes).unwrap();
        let out_dir = mkdir(&work.path().join(format!("out-{n}")));
        let r = transcode(&input, &out_dir.join("pkg.rpme"), &[]);
        assert!(!r.ok, "{what}: transcoded");
        assert!(
            r.stderr.contains("nothing was written"),
            "{what}: {}",
            r.stderr
        );
        for w in words {
            // `a|b`: either.
            let found = w.split('|').any(|w| r.stderr.contains(w));
            assert!(found, "{what}: no {w:?} in:\n{}", r.stderr);
        }
        assert_eq!(names_in(&out_dir), Vec::<String>::new(), "{what}");

        // An existing output is left as it was.
        std::fs::write(out_dir.join("pkg.rpme"), "previous\n").unwrap();
        let r = transcode(&input, &out_dir.join("pkg.rpme"), &[]);
        assert!(!r.ok, "{what}: transcoded");
        assert_eq!(names_in(&out_dir), ["pkg.rpme"], "{what}");
        assert_eq!(
            std::fs::read(out_dir.join("pkg.rpme")).unwrap(),
            b"previous\n"
        );
    }
}

// ---------------------------------------------------------------------------
// 10. --key.

/// Keys and signed packages from the archive crate's `make-signed.sh`.
fn pgp() -> PathBuf {
    pgp_fixtures(tmp())
}

fn fingerprint(key: &str) -> String {
    pgp_fingerprint(&pgp(), key)
}

#[test]
fn transcode_with_key_accepts_only_packages_signed_by_it() {
    let p = pgp();
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let out = mkdir(&work.path().join("out"));
    let key = |k: &str| p.join(k).to_str().unwrap().to_string();

    // Unsigned.
    let r = transcode(
        &p.join("unsigned.rpm"),
        &out.join("x.rpme"),
        &["--key", &key("rsa.asc")],
    );
    assert!(!r.ok);
    assert!(r.stderr.contains("not signed"), "{}", r.stderr);
    assert!(r.stderr.contains("hint:"), "{}", r.stderr);
    assert_eq!(names_in(&out), Vec::<String>::new());

    // Signed by the key.
    let r = transcode(
        &p.join("signed-rsa.rpm"),
        &out.join("rsa.rpme"),
        &["--json", "--key", &key("rsa.asc")],
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.json()["signed_by"], fingerprint("rsa"));

    // Signed by one of the keys of a directory.
    let keys = mkdir(&work.path().join("keys"));
    for k in ["wrong.asc", "ed.gpg", "rsa.asc"] {
        std::fs::copy(p.join(k), keys.join(k)).unwrap();
    }
    let r = transcode(
        &p.join("signed-ed.rpm"),
        &out.join("ed.rpme"),
        &["--json", "--key", keys.to_str().unwrap()],
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.json()["signed_by"], fingerprint("ed"));

    // Signed by another key.
    let r = transcode(
        &p.join("signed-rsa.rpm"),
        &out.join("x.rpme"),
        &["--key", &key("wrong.asc")],
    );
    assert!(!r.ok);
    let rsa_id = &fingerprint("rsa")[24..];
    assert!(r.stderr.contains(rsa_id), "{}", r.stderr);
    assert!(r.stderr.contains("nothing was written"), "{}", r.stderr);

    // Not a key.
    let garbage = work.path().join("garbage.asc");
    std::fs::write(&garbage, "not a key\n").unwrap();
    let r = transcode(
        &p.join("signed-rsa.rpm"),
        &out.join("x.rpme"),
        &["--key", garbage.to_str().unwrap()],
    );
    assert!(!r.ok);
    assert!(r.stderr.contains("garbage.asc"), "{}", r.stderr);

    assert_eq!(names_in(&out), ["ed.rpme", "rsa.rpme"]);
}

// ---------------------------------------------------------------------------
// 11. The worker is confined before it reads the package.

/// The per-process traces of `strace -ff -e trace=… cowkit ARGS`, as
/// (pid, lines).
fn strace(dir: &Path, args: &[&std::ffi::OsStr]) -> (Run, Vec<(String, Vec<String>)>) {
    let prefix = dir.join("trace");
    let r = run(Command::new("strace")
        .args([
            "-ff",
            "-qq",
            "-e",
            "trace=prctl,seccomp,openat,read,fcntl,dup,dup2,dup3",
            "-o",
        ])
        .arg(&prefix)
        .arg(env!("CARGO_BIN_EXE_cowkit"))
        .args(args));
    let mut traces = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_str().unwrap().to_string();
        if let Some(pid) = name.strip_prefix("trace.") {
            let text = std::fs::read_to_string(&p).unwrap();
            traces.push((pid.to_string(), text.lines().map(String::from).collect()));
        }
    }
    (r, traces)
}

#[test]
fn the_transcoding_worker_is_confined_before_it_reads_the_package() {
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let rpm = fixture("w19.zstdio");
    let confined = mkdir(&work.path().join("confined"));
    let out = work.path().join("confined.rpme");
    let (r, traces) = strace(
        &confined,
        &[
            "transcode".as_ref(),
            rpm.as_os_str(),
            "-o".as_ref(),
            out.as_os_str(),
        ],
    );
    assert!(r.ok, "{}", r.stderr);

    let filtered: Vec<_> = traces
        .iter()
        .filter(|(_, lines)| {
            lines
                .iter()
                .any(|l| l.starts_with("seccomp(SECCOMP_SET_MODE_FILTER"))
        })
        .collect();
    assert_eq!(filtered.len(), 1, "one process installs a filter");
    let (pid, lines) = filtered[0];
    let at = lines
        .iter()
        .position(|l| l.starts_with("seccomp(SECCOMP_SET_MODE_FILTER"))
        .unwrap();
    assert!(lines[at].ends_with("= 0"), "{}", lines[at]);
    // The package is the worker's stdin (or a duplicate of it): not one
    // byte of it is read before the filter, and its first read (the
    // lead's magic) comes after it.
    let mut stdin = std::collections::BTreeSet::from(["0".to_string()]);
    let mut first_read = None;
    for (i, l) in lines.iter().enumerate() {
        let Some((call, result)) = l.rsplit_once(" = ") else {
            continue;
        };
        let (name, args) = call.split_once('(').unwrap_or((call, ""));
        let fd = args.split(',').next().unwrap_or("").to_string();
        match name {
            "fcntl" if args.contains("F_DUPFD") && stdin.contains(&fd) => {
                stdin.insert(result.trim().to_string());
            }
            "dup" | "dup2" | "dup3" if stdin.contains(&fd) => {
                stdin.insert(result.trim().to_string());
            }
            "read" if stdin.contains(&fd) => {
                assert!(i > at, "worker {pid} read the package before seccomp: {l}");
                first_read.get_or_insert(l);
            }
            _ => {}
        }
    }
    let first_read =
        first_read.unwrap_or_else(|| panic!("worker {pid} never read the package: {lines:#?}"));
    assert!(
        first_read.contains(", \"\\355\\253\\356\\333"),
        "{first_read}"
    );
    let after = &lines[at + 1..];
    // Once confined, every open fails with EPERM (the self-check is one).
    let opens: Vec<_> = after.iter().filter(|l| l.starts_with("openat(")).collect();
    assert!(!opens.is_empty(), "no self-check open after the filter");
    for l in &opens {
        assert!(l.ends_with("= -1 EPERM (Operation not permitted)"), "{l}");
    }
    // The worker never opens the package or the output itself.
    let name = rpm.file_name().unwrap().to_str().unwrap();
    assert!(
        !lines.iter().any(|l| l.contains(name)),
        "worker opened the package"
    );

    // --no-confine: no filter, the same output.
    let unconfined = mkdir(&work.path().join("unconfined"));
    let out2 = work.path().join("unconfined.rpme");
    let (r, traces) = strace(
        &unconfined,
        &[
            "transcode".as_ref(),
            "--json".as_ref(),
            "--no-confine".as_ref(),
            rpm.as_os_str(),
            "-o".as_ref(),
            out2.as_os_str(),
        ],
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.json()["confined"], false);
    assert!(traces.len() >= 2, "no worker process");
    assert!(!traces
        .iter()
        .any(|(_, lines)| lines.iter().any(|l| l.starts_with("seccomp("))));
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&out2).unwrap());
}

// ---------------------------------------------------------------------------
// 12. Install errors.

#[test]
fn install_into_a_missing_root_fails_with_a_hint() {
    let work = tempfile::tempdir_in(tmp()).unwrap();
    let missing = work.path().join("no-such-root");
    let r = run(cowkit()
        .args(["install", "--root"])
        .arg(&missing)
        .arg(fixture("w.ufdio")));
    assert!(!r.ok);
    assert!(
        r.stderr.contains(&format!(
            "error: cannot install into `{}`",
            missing.display()
        )),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("hint:"), "{}", r.stderr);
    assert!(!missing.exists());
}

#[test]
fn install_goes_on_past_a_damaged_package_and_reports_it() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let good1 = dir.path().join("fixture.rpme");
    let t = transcode(&fixture("w19.zstdio"), &good1, &[]);
    assert!(t.ok, "{}", t.stderr);
    let good2 = build_rpm_cached(
        tmp(),
        "cowkit-other",
        "mkdir -p %{buildroot}/opt/other\necho other > %{buildroot}/opt/other/file",
        "/opt/other",
        "w9.gzdio",
    );
    // A flipped table byte in an extents file, and a cut plain package.
    let b = std::fs::read(&good1).unwrap();
    let table = footer_u64(&b, 32);
    let bad1 = dir.path().join("bad-table.rpme");
    std::fs::write(&bad1, flip(&b, table as usize + 3)).unwrap();
    let bad2 = dir.path().join("cut.rpm");
    let r = std::fs::read(&good2).unwrap();
    // Cut inside the payload (its last bytes): the header is intact.
    std::fs::write(&bad2, &r[..r.len() - 16]).unwrap();

    // A package whose header or table cannot be read refuses the whole
    // transaction before anything is touched, as rpm does.
    let root = mkdir(&dir.path().join("root"));
    let i = run(cowkit()
        .args(["install", "--json", "--nodeps", "-j", "2", "--root"])
        .arg(&root)
        .args([&good1, &bad1, &good2]));
    assert!(!i.ok, "exit status 0 with a damaged package");
    let j = i.json();
    assert_eq!(j["ok"], false, "{j}");
    assert!(j["error"].to_string().contains("damaged"), "{j}");
    assert!(
        std::fs::read_dir(&root).unwrap().next().is_none(),
        "the root was touched: {:?}",
        names_in(&root)
    );

    // By default a `.rpm`'s payload is decoded by the confined worker just
    // before the package is placed: one that breaks off fails that
    // package alone, before any of its files is placed; the others are
    // placed and registered.
    let root0 = mkdir(&dir.path().join("root0"));
    let i = run(cowkit()
        .args(["install", "--json", "--nodeps", "-j", "2", "--root"])
        .arg(&root0)
        .args([&good1, &bad2]));
    assert!(!i.ok, "exit status 0 with a damaged package");
    let j = i.json();
    assert_eq!(j["ok"], false, "{j}");
    assert_eq!(j["registered"], 1, "{j}");
    let failed = j["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 1, "{j}");
    assert_eq!(failed[0]["package"], bad2.to_str().unwrap(), "{j}");
    assert!(
        failed[0]["error"].to_string().contains("cannot decode"),
        "{j}"
    );
    assert_eq!(failed[0]["placed_files"], 0, "{j}");
    assert!(!root0.join("opt/other").exists());

    // Decoded in-process as a stream (`--no-confine`), a payload that
    // breaks off is found while placing: that package fails and is not
    // registered, the others are placed and registered.
    let i = run(cowkit()
        .args([
            "install",
            "--json",
            "--no-confine",
            "--nodeps",
            "-j",
            "2",
            "--root",
        ])
        .arg(&root)
        .args([&good1, &bad2]));
    assert!(!i.ok, "exit status 0 with failed packages");
    let j = i.json();
    assert_eq!(j["ok"], false, "{j}");
    assert_eq!(j["packages"], 1, "{j}");
    assert_eq!(j["registered"], 1, "{j}");
    let failed = j["failed"].as_array().unwrap();
    let names: Vec<&str> = failed
        .iter()
        .map(|f| f["package"].as_str().unwrap())
        .collect();
    assert_eq!(names, [bad2.to_str().unwrap()], "{j}");
    let why = failed[0]["error"].to_string();
    assert!(
        why.contains("payload") || why.contains("truncated"),
        "{why}"
    );
    // Its one file was placed (checked against its digest) before the
    // payload broke off, in a directory the package brought: that new
    // directory was still under a temporary name, and goes with the
    // failed package. Nothing of it is left, and the summary says so.
    assert_eq!(failed[0]["placed_files"], 0, "{j}");
    assert!(!root.join("opt").exists());
    let top: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        top.iter().all(|n| !n.to_string_lossy().starts_with(".ck")),
        "{top:?}"
    );
    assert_eq!(
        std::fs::read(root.join(FIXTURE).join("small.txt")).unwrap(),
        b"hello\n"
    );
    let db = j["db"]["path"].as_str().unwrap();
    let q = Command::new("rpm")
        .args(["--root"])
        .arg(&root)
        .args(["--dbpath", db, "-qa", "--qf", "%{NAME}\\n"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&q.stdout), "cowkit-fixture\n");

    // Without --json: one error per failed package on stderr, and the
    // summary of the others.
    let root2 = mkdir(&dir.path().join("root2"));
    let i = run(cowkit()
        .args(["install", "--no-confine", "--nodeps", "--root"])
        .arg(&root2)
        .args([&good1, &bad2]));
    assert!(!i.ok);
    assert!(
        i.stderr
            .contains(&format!("error: cannot install `{}`", bad2.display())),
        "{}",
        i.stderr
    );
    assert!(i.stderr.contains("installed 1 package(s)"), "{}", i.stderr);
    assert!(i.stderr.contains("registered 1 package(s)"), "{}", i.stderr);
}

// ---------------------------------------------------------------------------
// 13. Names that are not UTF-8 (issue 25 item 8c).

/// The package of `spec(name, install, files)`, built with rpmbuild's
/// check for UTF-8 header strings turned off (rpm 4.18 refuses such names
/// by default; older packages have them).
fn non_utf8_package(dir: &Path, name: &str, install: &str) -> PathBuf {
    let spec = format!(
        "%global _invalid_encoding_terminates_build 0\n{}",
        cowkit_testutil::rpm::spec(name, install, "/usr/share/latin\n")
    );
    let dst = dir.join(format!("{name}.rpm"));
    cowkit_testutil::rpm::rpmbuild(&spec, "w2.xzdio", &dst);
    dst
}

/// An entry's type (`d`, `f`, `l`) and content (a file's bytes, a
/// symlink's target).
type Shape = (char, Vec<u8>);

/// Every entry under `dir`, by its name's bytes relative to `dir`: its
/// type, permission bits, and a regular file's content or a symlink's
/// target, byte for byte (names need not be UTF-8).
fn byte_tree(dir: &Path) -> std::collections::BTreeMap<Vec<u8>, (char, u32, Vec<u8>)> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    fn walk(
        base: &Path,
        dir: &Path,
        out: &mut std::collections::BTreeMap<Vec<u8>, (char, u32, Vec<u8>)>,
    ) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p
                .strip_prefix(base)
                .unwrap()
                .as_os_str()
                .as_bytes()
                .to_vec();
            let perm = m.permissions().mode() & 0o7777;
            let entry = if m.is_dir() {
                walk(base, &p, out);
                ('d', perm, Vec::new())
            } else if m.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                ('l', 0, t.as_os_str().as_bytes().to_vec())
            } else {
                ('f', perm, std::fs::read(&p).unwrap())
            };
            out.insert(rel, entry);
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn names_that_are_not_utf8_install_byte_for_byte() {
    use cowkit_testutil::repo::{dbpath, rpm_in, verify};
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let d = dir.path();
    // `printf` in octal: the spec's shell may be dash, without `\x`.
    // A file, a symlink whose target and a directory whose name are
    // Latin-1 (not UTF-8), and a name holding U+FFFD itself (UTF-8).
    let pkg = non_utf8_package(
        d,
        "latin",
        "mkdir -p %{buildroot}/usr/share/latin\ncd %{buildroot}/usr/share/latin\n\
         printf 'x' > \"$(printf 'caf\\351')\"\n\
         ln -s \"$(printf 'caf\\351')\" link\n\
         mkdir \"$(printf 'dir\\351')\"\n\
         printf 'y' > \"$(printf 'dir\\351')/inner\"\n\
         printf 'z' > \"$(printf 'a\\357\\277\\275b')\"",
    );
    let rpme = d.join("latin.rpme");
    let t = transcode(&pkg, &rpme, &[]);
    assert!(t.ok, "{}", t.stderr);

    let by_rpm = mkdir(&d.join("by-rpm"));
    let r = run(rpm_in(&by_rpm).args(["-i", "--nodeps"]).arg(&pkg));
    assert!(r.ok, "rpm -i: {}", r.stderr);
    let want = byte_tree(&by_rpm.join("usr/share/latin"));
    let expect: Vec<(&[u8], Shape)> = vec![
        (b"a\xEF\xBF\xBDb", ('f', b"z".to_vec())),
        (b"caf\xE9", ('f', b"x".to_vec())),
        (b"dir\xE9", ('d', Vec::new())),
        (b"dir\xE9/inner", ('f', b"y".to_vec())),
        (b"link", ('l', b"caf\xE9".to_vec())),
    ];
    let got: Vec<(&[u8], Shape)> = want
        .iter()
        .map(|(k, (kind, _, data))| (k.as_slice(), (*kind, data.clone())))
        .collect();
    assert_eq!(got, expect, "what rpm installs");

    for (what, src) in [("rpm", &pkg), ("rpme", &rpme)] {
        let root = mkdir(&d.join(format!("by-cowkit-{what}")));
        let i = run(cowkit()
            .args(["install", "--nodeps", "--root"])
            .arg(&root)
            .arg("--dbpath")
            .arg(dbpath())
            .arg(src));
        assert!(i.ok, "{what}: {}", i.stderr);
        assert_eq!(byte_tree(&root.join("usr/share/latin")), want, "{what}");
        assert_eq!(verify(&root), Vec::<String>::new(), "{what}: rpm -Va");
    }

    // An upgrade reads the installed file list through rpm's text answer:
    // refused up front, naming the package, never read lossily (a file
    // the new version drops would stay behind).
    let spec = format!(
        "%global _invalid_encoding_terminates_build 0\n{}",
        cowkit_testutil::rpm::spec(
            "latin",
            "mkdir -p %{buildroot}/usr/share/latin",
            "/usr/share/latin\n"
        )
    )
    .replace("Version: 1\n", "Version: 2\n");
    let v2 = d.join("latin-2.rpm");
    cowkit_testutil::rpm::rpmbuild(&spec, "w2.xzdio", &v2);
    let root = d.join("by-cowkit-rpm");
    let u = run(cowkit()
        .args(["install", "--nodeps", "--root"])
        .arg(&root)
        .arg("--dbpath")
        .arg(dbpath())
        .arg(&v2));
    assert!(
        !u.ok,
        "an upgrade of names that are not UTF-8 must be refused"
    );
    assert!(
        u.stderr.contains("latin-1-1.noarch") && u.stderr.contains("not UTF-8"),
        "{}",
        u.stderr
    );
    assert_eq!(byte_tree(&root.join("usr/share/latin")), want, "untouched");
}
