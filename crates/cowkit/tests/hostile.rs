//! Hostile packages, forged byte by byte (`cowkit_testutil::forge`), given
//! to `cowkit transcode` and `cowkit install --root R --no-db`: each run is
//! bounded in memory (the peak resident size of the whole process tree,
//! from `wait4`) and in time (killed after a deadline), ends with one
//! short, clear error, and leaves nothing behind: no output, no temporary
//! file, nothing outside the root (issue 14).

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::cowkit;
use cowkit_testutil::forge::{self, Cpio, File, Package, Piece};
use cowkit_testutil::process::wait4_nohang;

/// The most memory one run may use, process tree included.
const MAX_RSS_KIB: u64 = 256 << 10;
/// The longest one run may take (debug build, shared machine).
const DEADLINE: Duration = Duration::from_secs(120);
/// The longest error output accepted.
const MAX_STDERR: usize = 4096;

struct Ran {
    ok: bool,
    stdout: Vec<u8>,
    stderr: String,
    max_rss_kib: u64,
}

/// Run `cmd` with a deadline and its peak memory measured.
#[allow(
    clippy::zombie_processes,
    reason = "reaped by wait4_nohang, which std cannot see"
)]
fn bounded(cmd: &mut Command) -> Ran {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        out.read_to_end(&mut v).unwrap();
        v
    });
    let err_reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        err.read_to_end(&mut v).unwrap();
        v
    });
    let start = Instant::now();
    let reaped = loop {
        if let Some(r) = wait4_nohang(child.id()).unwrap() {
            break r;
        }
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("{cmd:?} still runs after {DEADLINE:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let stdout = reader.join().unwrap();
    let stderr = String::from_utf8(err_reader.join().unwrap()).unwrap();
    Ran {
        ok: reaped.status == 0,
        stdout,
        stderr,
        max_rss_kib: reaped.max_rss_kib,
    }
}

/// A fresh directory for one attack: `pkg`, `out/`, `root/`.
fn arena(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("hostile")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("out")).unwrap();
    std::fs::create_dir_all(d.join("root")).unwrap();
    d
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Every path under `dir` that is not a directory.
fn non_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            v.extend(non_dirs(&e.path()));
        } else {
            v.push(e.path());
        }
    }
    v
}

fn check_failure(what: &str, r: &Ran, expect: &[&str]) {
    assert!(!r.ok, "{what}: succeeded\n{}", r.stderr);
    assert!(
        r.max_rss_kib < MAX_RSS_KIB,
        "{what}: used {} MiB\n{}",
        r.max_rss_kib >> 10,
        r.stderr
    );
    assert!(
        r.stderr.len() < MAX_STDERR,
        "{what}: {} bytes of errors",
        r.stderr.len()
    );
    assert!(
        !r.stderr.chars().any(|c| c.is_control() && c != '\n'),
        "{what}: control characters in {:?}",
        r.stderr
    );
    assert!(r.stderr.starts_with("error: "), "{what}: {}", r.stderr);
    for e in expect {
        assert!(r.stderr.contains(e), "{what}: no `{e}` in\n{}", r.stderr);
    }
}

/// Give `bytes` (named `file`) to transcode and to install; both must fail
/// within bounds with a message holding `expect`, and leave nothing.
fn attack(name: &str, file: &str, bytes: &[u8], expect: &[&str]) {
    attack_allowing(name, file, bytes, expect, &[]);
}

/// [`attack`], where install may leave the files of `complete` (path in
/// the root, content) in place, each whole: a file placed before the
/// error was found passed its own digest first (`docs/install.md`).
fn attack_allowing(
    name: &str,
    file: &str,
    bytes: &[u8],
    expect: &[&str],
    complete: &[(&str, &[u8])],
) {
    let d = arena(name);
    let pkg = d.join(file);
    std::fs::write(&pkg, bytes).unwrap();

    let r = bounded(
        cowkit()
            .arg("transcode")
            .arg(&pkg)
            .arg("-o")
            .arg(d.join("out/x.rpme")),
    );
    check_failure(&format!("{name}: transcode"), &r, expect);
    assert_eq!(names(&d.join("out")), Vec::<String>::new(), "{name}");

    let r = bounded(
        cowkit()
            .args(["install", "--no-db", "--noscripts", "--root"])
            .arg(d.join("root"))
            .arg(&pkg),
    );
    check_failure(&format!("{name}: install"), &r, expect);
    for left in non_dirs(&d.join("root")) {
        let rel = left.strip_prefix(d.join("root")).unwrap().to_str().unwrap();
        let whole = complete.iter().find(|(p, _)| *p == rel);
        assert!(whole.is_some(), "{name}: `{rel}` left in the root");
        assert_eq!(
            std::fs::read(&left).unwrap(),
            whole.unwrap().1,
            "{name}: `{rel}`"
        );
    }
    let mut expected = vec![file.to_string(), "out".into(), "root".into()];
    expected.sort();
    assert_eq!(names(&d), expected, "{name}: something written outside");
}

fn bad_symlink(size: u64, carried: u64) -> File {
    let mut f = File::symlink("/usr/lib/forged/link", "target");
    f.size = size;
    f.content = vec![Piece::Repeat {
        byte: b'a',
        len: carried,
    }];
    f
}

#[test]
fn a_symlink_claiming_2_gib_is_refused_before_reading_it() {
    let p = Package::new("symlink2g", vec![bad_symlink(2 << 30, 2 << 30)]);
    let bytes = p.build();
    assert!(bytes.len() < 256 << 10, "{} bytes", bytes.len());
    attack(
        "symlink2g",
        "symlink2g.rpm",
        &bytes,
        &["symlink", "2147483648 bytes"],
    );
}

#[test]
fn a_stripped_symlink_of_2_pow_40_bytes_does_not_abort() {
    let mut p = Package::new("stripped40", vec![bad_symlink(1 << 40, 64)]);
    p.cpio = Cpio::Stripped;
    p.long_sizes = true;
    attack(
        "stripped40",
        "stripped40.rpm",
        &p.build(),
        &["symlink", "1099511627776 bytes"],
    );
}

#[test]
fn an_lzma_dictionary_of_4_gib_is_refused_by_the_memory_limit() {
    let mut p = Package::new(
        "lzmadict",
        vec![File::regular("/usr/lib/forged/a", &[7; 4096])],
    );
    p.compressor = "lzma".into();
    let mut payload = forge::compress("lzma", &p.archive());
    payload[1..5].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    attack(
        "lzmadict",
        "lzmadict.rpm",
        &p.rpm(&payload),
        &["lzma payload cannot be decompressed", "memory limit"],
    );
}

#[test]
fn a_zstd_window_over_128_mib_is_refused() {
    let mut p = Package::new(
        "zstdwin",
        vec![File::regular("/usr/lib/forged/a", &[7; 4096])],
    );
    p.compressor = "zstd".into();
    let archive = forge::compress("", &p.archive());
    let payload = forge::filter(
        "zstd",
        &["-q", "-c", "--long=30", "--no-content-size"],
        &archive,
    );
    attack(
        "zstdwin",
        "zstdwin.rpm",
        &p.rpm(&payload),
        &["zstd payload cannot be decompressed"],
    );
}

#[test]
fn a_lying_compressor_tag_is_named() {
    let mut p = Package::new("liar", vec![File::regular("/usr/lib/forged/a", b"hello\n")]);
    let zstd = forge::compress("zstd", &p.archive());
    p.compressor = "xz".into();
    attack(
        "liar",
        "liar.rpm",
        &p.rpm(&zstd),
        &["not compressed with xz as the header says"],
    );
}

#[test]
fn huge_header_counts_are_refused_before_allocating() {
    let p = Package::new(
        "counts",
        vec![File::regular("/usr/lib/forged/a", b"hello\n")],
    );
    let good = p.build();
    // The signature header's entry count, then its data size.
    for (at, name) in [(96 + 8, "entries"), (96 + 12, "datasize")] {
        let mut b = good.clone();
        b[at..at + 4].copy_from_slice(&0xFFFF_FFFFu32.to_be_bytes());
        attack(
            &format!("counts-{name}"),
            "counts.rpm",
            &b,
            &["over the limits"],
        );
    }
    // An index entry of the signature header whose count runs past its data.
    let mut b = good.clone();
    b[96 + 16 + 12..96 + 16 + 16].copy_from_slice(&0x4000_0000u32.to_be_bytes());
    attack("counts-entry", "counts.rpm", &b, &["damaged"]);
}

#[test]
fn truncated_packages_say_so_at_every_offset() {
    let p = Package::new(
        "trunc",
        vec![File::regular("/usr/lib/forged/a", &[0x5a; 300_000])],
    );
    let good = p.build();
    let header_end = good.len() - forge::compress("zstd", &p.archive()).len();
    let mut cuts: Vec<usize> = (1..good.len()).step_by(good.len() / 12).collect();
    cuts.extend([
        95,
        96,
        112,
        header_end - 1,
        header_end,
        header_end + 3,
        good.len() - 1,
    ]);
    for cut in cuts {
        attack_allowing(
            &format!("trunc-{cut}"),
            "trunc.rpm",
            &good[..cut],
            &["the package is truncated"],
            &[("usr/lib/forged/a", &[0x5a; 300_000])],
        );
    }
}

#[test]
fn a_truncated_extents_file_is_named() {
    let d = arena("rpme");
    let p = Package::new(
        "rpme",
        vec![File::regular("/usr/lib/forged/a", &[0x5a; 300_000])],
    );
    std::fs::write(d.join("p.rpm"), p.build()).unwrap();
    let r = bounded(
        cowkit()
            .arg("transcode")
            .arg(d.join("p.rpm"))
            .arg("-o")
            .arg(d.join("p.rpme")),
    );
    assert!(r.ok, "{}", r.stderr);
    let whole = std::fs::read(d.join("p.rpme")).unwrap();
    for cut in [
        whole.len() - 1,
        whole.len() - 177,
        whole.len() / 2,
        2000,
        100,
    ] {
        let name = format!("rpme-{cut}");
        let d = arena(&name);
        let pkg = d.join("p.rpme");
        std::fs::write(&pkg, &whole[..cut]).unwrap();
        let r = bounded(
            cowkit()
                .args(["install", "--no-db", "--noscripts", "--root"])
                .arg(d.join("root"))
                .arg(&pkg),
        );
        check_failure(&name, &r, &["truncated extents file"]);
        assert_eq!(non_dirs(&d.join("root")), Vec::<PathBuf>::new());
    }
}

#[test]
fn quiet_transcode_prints_nothing() {
    let d = arena("quiet");
    let p = Package::new("quiet", vec![File::regular("/usr/lib/forged/a", b"hi\n")]);
    std::fs::write(d.join("p.rpm"), p.build()).unwrap();
    let r = bounded(
        cowkit()
            .args(["-q", "transcode"])
            .arg(d.join("p.rpm"))
            .arg("-o")
            .arg(d.join("p.rpme")),
    );
    assert!(r.ok, "{}", r.stderr);
    assert_eq!(r.stderr, "");
    assert!(r.stdout.is_empty());
}

#[test]
fn append_mode_stdout_is_refused() {
    let d = arena("append");
    let p = Package::new(
        "append",
        vec![File::regular("/usr/lib/forged/a", &[1; 100_000])],
    );
    std::fs::write(d.join("p.rpm"), p.build()).unwrap();
    std::fs::write(d.join("out.rpme"), b"already here\n").unwrap();
    let out = std::fs::OpenOptions::new()
        .append(true)
        .open(d.join("out.rpme"))
        .unwrap();
    let r = cowkit()
        .arg("transcode")
        .arg(d.join("p.rpm"))
        .args(["-o", "-"])
        .stdout(out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&r.stderr);
    assert!(!r.status.success(), "{stderr}");
    assert!(stderr.contains("open for appending"), "{stderr}");
    assert_eq!(
        std::fs::read(d.join("out.rpme")).unwrap(),
        b"already here\n",
        "nothing appended"
    );
}

/// `cowkit transcode P -o -` with stdout the file `name` in `d`, opened
/// read-write (the shell's `1<>`, which does not empty it) at `offset`.
fn transcode_to_read_write_stdout(d: &Path, name: &str, offset: u64) -> std::process::Output {
    use std::io::{Seek, SeekFrom};
    let mut out = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(d.join(name))
        .unwrap();
    out.seek(SeekFrom::Start(offset)).unwrap();
    cowkit()
        .arg("transcode")
        .arg(d.join("p.rpm"))
        .args(["-o", "-"])
        .stdout(out)
        .output()
        .unwrap()
}

#[test]
fn read_write_stdout_over_a_longer_file() {
    let d = arena("read-write-stdout");
    // A cloned extent with zero blocks (holes where the output can seek)
    // and data around them.
    let mut content = vec![0u8; 256 << 10];
    content[..5].copy_from_slice(b"start");
    content[200_000..200_003].copy_from_slice(b"end");
    let p = Package::new(
        "readwrite",
        vec![File::regular("/usr/lib/forged/a", &content)],
    );
    std::fs::write(d.join("p.rpm"), p.build()).unwrap();
    let r = cowkit()
        .arg("transcode")
        .arg(d.join("p.rpm"))
        .arg("-o")
        .arg(d.join("expected.rpme"))
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let expected = std::fs::read(d.join("expected.rpme")).unwrap();
    let old: Vec<u8> = (0..expected.len() * 2)
        .map(|i| (i % 251) as u8 + 1)
        .collect();

    // Over the start of a longer file, and over its middle: refused before
    // anything is written, the file as it was.
    for offset in [0, 4096] {
        std::fs::write(d.join("longer"), &old).unwrap();
        let r = transcode_to_read_write_stdout(&d, "longer", offset);
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "offset {offset}: {stderr}");
        assert!(stderr.contains("already holds"), "{stderr}");
        assert!(stderr.contains("hint:"), "{stderr}");
        assert!(
            std::fs::read(d.join("longer")).unwrap() == old,
            "offset {offset}: changed"
        );
    }

    // An empty file: the extents file, as `-o FILE` writes it.
    std::fs::write(d.join("empty"), b"").unwrap();
    let r = transcode_to_read_write_stdout(&d, "empty", 0);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(std::fs::read(d.join("empty")).unwrap() == expected);

    // At the end of a file (what `{ printf x; cowkit transcode -o -; } > f`
    // does): appended after it, as to a pipe.
    std::fs::write(d.join("after"), b"before\n").unwrap();
    let r = transcode_to_read_write_stdout(&d, "after", 7);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let got = std::fs::read(d.join("after")).unwrap();
    assert!(
        got[..7] == *b"before\n" && got[7..] == expected,
        "{} bytes",
        got.len()
    );
}

#[test]
fn block_size_is_bounded() {
    let d = arena("bs");
    let p = Package::new("bs", vec![File::regular("/usr/lib/forged/a", b"hi\n")]);
    std::fs::write(d.join("p.rpm"), p.build()).unwrap();
    for bs in ["2147483648", "4294967296", "256", "3000", "2097152"] {
        let r = bounded(
            cowkit()
                .args(["transcode", "--block-size", bs])
                .arg(d.join("p.rpm"))
                .arg("-o")
                .arg(d.join("p.rpme")),
        );
        assert!(!r.ok, "--block-size {bs} accepted");
        assert!(!d.join("p.rpme").exists());
    }
    let r = bounded(
        cowkit()
            .args(["transcode", "--block-size", "1048576"])
            .arg(d.join("p.rpm"))
            .arg("-o")
            .arg(d.join("p.rpme")),
    );
    assert!(r.ok, "{}", r.stderr);
}

#[test]
fn control_characters_in_names_are_escaped() {
    let mut f = File::regular("/usr/lib/forged/a", b"hello\n");
    f.entry_name = Some(b"./usr/lib/\x1b[31mred\x07".to_vec());
    let p = Package::new("names", vec![f]);
    attack("names", "names.rpm", &p.build(), &["\\u{1b}[31mred"]);
}

#[test]
fn forged_packages_install_when_they_are_honest() {
    // The forge itself: an honest forged package transcodes and installs,
    // so the failures above are the attacks', not the forge's.
    let d = arena("honest");
    let p = Package::new(
        "honest",
        vec![
            File::dir("/usr/lib/forged"),
            File::regular("/usr/lib/forged/a", b"hello\n"),
            File::symlink("/usr/lib/forged/l", "a"),
        ],
    );
    for (cpio, comp) in [
        (Cpio::Newc, "zstd"),
        (Cpio::Crc, "xz"),
        (Cpio::Stripped, "gzip"),
    ] {
        let mut p = p.clone();
        p.cpio = cpio;
        p.compressor = comp.into();
        std::fs::write(d.join("p.rpm"), p.build()).unwrap();
        let r = bounded(
            cowkit()
                .arg("transcode")
                .arg(d.join("p.rpm"))
                .arg("-o")
                .arg(d.join("out/p.rpme")),
        );
        assert!(r.ok, "{cpio:?} {comp}: {}", r.stderr);
        let r = bounded(
            cowkit()
                .args(["install", "--no-db", "--noscripts", "--root"])
                .arg(d.join("root"))
                .arg(d.join("p.rpm")),
        );
        assert!(r.ok, "{cpio:?} {comp}: {}", r.stderr);
        assert_eq!(
            std::fs::read(d.join("root/usr/lib/forged/a")).unwrap(),
            b"hello\n"
        );
        let _ = std::io::stderr().write_all(b"");
    }
}

/// The measurement behind `WORKER_LIMITS` (`docs/confinement.md`): an
/// honest 512 MiB package per compressor, transcoded and installed under
/// the limits, with the peak resident memory of each run printed.
#[test]
#[ignore = "a measurement: builds and installs 512 MiB packages"]
fn measure_honest_large_packages() {
    use sha2::Digest;
    let len: u64 = 512 << 20;
    let mut h = sha2::Sha256::new();
    let block = vec![0x61u8; 1 << 20];
    for _ in 0..len >> 20 {
        h.update(&block);
    }
    let digest = cowkit_testutil::hex(&h.finalize());
    for comp in ["zstd", "xz", "gzip"] {
        let d = arena(&format!("large-{comp}"));
        let mut f = File::regular("/usr/lib/forged/big", b"");
        f.size = len;
        f.digest = digest.clone();
        f.content = vec![Piece::Repeat { byte: 0x61, len }];
        let mut p = Package::new("large", vec![f]);
        p.compressor = comp.into();
        std::fs::write(d.join("p.rpm"), p.build()).unwrap();
        let t = Instant::now();
        let r = bounded(
            cowkit()
                .arg("transcode")
                .arg(d.join("p.rpm"))
                .arg("-o")
                .arg(d.join("out/p.rpme")),
        );
        assert!(r.ok, "{}", r.stderr);
        eprintln!(
            "{comp}: transcode {:?}, peak {} MiB",
            t.elapsed(),
            r.max_rss_kib >> 10
        );
        let t = Instant::now();
        let r = bounded(
            cowkit()
                .args(["install", "--no-db", "--noscripts", "--root"])
                .arg(d.join("root"))
                .arg(d.join("p.rpm")),
        );
        assert!(r.ok, "{}", r.stderr);
        eprintln!(
            "{comp}: install .rpm {:?}, peak {} MiB",
            t.elapsed(),
            r.max_rss_kib >> 10
        );
        let _ = std::fs::remove_dir_all(&d);
    }
}
