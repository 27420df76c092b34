//! Transcoding packages built by `rpmbuild`, reading them back, and
//! rejecting damaged extents files.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::process::{Command, Stdio};

use cowkit_extents::format::Kind;
use cowkit_extents::open::{Content, ExtentsFile};
use cowkit_extents::transcode::{begin, NoProgress, Options, Summary};
use cowkit_extents::Error;
use cowkit_testutil::rpm::{build_rpm_in, cpio_extract, fixture_in, PAYLOADS};
const ROOT: &str = "/usr/share/cowkit-fixture";

fn tmp() -> &'static Path {
    Path::new(env!("CARGO_TARGET_TMPDIR"))
}

fn transcode(input: &Path, out: &Path, opts: &Options) -> Result<Summary, Error> {
    let begun = begin(File::open(input).unwrap())?;
    begun.write(File::create(out).unwrap(), opts, &NoProgress)
}

fn content(x: &ExtentsFile, index: u32) -> Vec<u8> {
    match x.content(index).unwrap() {
        Content::Empty => Vec::new(),
        Content::Extent(e) => {
            let mut buf = vec![0u8; e.length as usize];
            x.file().read_exact_at(&mut buf, e.offset).unwrap();
            buf
        }
    }
}

#[test]
fn every_compressor_transcodes_to_the_same_files_as_rpm2cpio() {
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    for payload in PAYLOADS {
        let pkg = fixture_in(tmp(), payload);
        let out = dir.path().join(format!("{payload}.rpme"));
        let s =
            transcode(&pkg, &out, &Options::default()).unwrap_or_else(|e| panic!("{payload}: {e}"));
        // The prefix is verbatim: rpm still reads the package.
        let q = Command::new("rpm")
            .args(["-qp", "--nosignature", "--qf", "%{NAME}-%{VERSION}"])
            .arg(&out)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&q.stdout),
            "cowkit-fixture-1.0",
            "{payload}"
        );

        let x = ExtentsFile::open(File::open(&out).unwrap(), &out).unwrap();
        let tree = dir.path().join(format!("{payload}.tree"));
        cpio_extract(&pkg, &tree);
        let mut regular = 0;
        for f in &x.files().files {
            if f.kind != cowkit_archive::files::Kind::Regular || f.ghost {
                assert!(x.content(f.index).is_none());
                continue;
            }
            regular += 1;
            let want = std::fs::read(tree.join(std::ffi::OsStr::from_bytes(&f.path[1..]))).unwrap();
            assert!(content(&x, f.index) == want, "{payload}: {}", f.path);
        }
        assert_eq!(regular, 11, "{payload}");
        assert_eq!(s.files, 11);
        // Two files with equal content, and a set of three hardlinks.
        assert_eq!(s.deduplicated_files, 1, "{payload}");
        assert_eq!(s.hardlinked_files, 2, "{payload}");
        let large = x.files().find(format!("{ROOT}/dir/large.bin")).unwrap();
        let same = x
            .files()
            .find(format!("{ROOT}/dir/sub/same-content.bin"))
            .unwrap();
        assert_eq!(x.content(large.index), x.content(same.index));
        let Some(Content::Extent(e)) = x.content(large.index) else {
            panic!()
        };
        assert_eq!((e.kind, e.offset % 4096), (Kind::Clone, 0));
        let small = x.files().find(format!("{ROOT}/small.txt")).unwrap();
        let Some(Content::Extent(e)) = x.content(small.index) else {
            panic!()
        };
        assert_eq!(e.kind, Kind::Write);
        assert_eq!(s.output_bytes, std::fs::metadata(&out).unwrap().len());
    }
}

#[test]
fn a_pipe_gets_the_same_bytes_as_a_file() {
    let pkg = fixture_in(tmp(), "w19.zstdio");
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let as_file = dir.path().join("file.rpme");
    transcode(&pkg, &as_file, &Options::default()).unwrap();

    let mut cat = Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdin: std::os::fd::OwnedFd = cat.stdin.take().unwrap().into();
    let mut stdout = cat.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        stdout.read_to_end(&mut v).unwrap();
        v
    });
    let begun = begin(File::open(&pkg).unwrap()).unwrap();
    begun
        .write(File::from(stdin), &Options::default(), &NoProgress)
        .unwrap();
    let piped = reader.join().unwrap();
    cat.wait().unwrap();
    assert!(piped == std::fs::read(&as_file).unwrap());
}

#[test]
fn zero_blocks_become_holes_and_read_back_as_zeros() {
    // A package whose file is mostly zeros (gzip: rpmbuild's default).
    let spec_dir = tempfile::tempdir_in(tmp()).unwrap();
    let pkg = build_rpm_in(
        spec_dir.path(),
        "zeros",
        "mkdir -p %{buildroot}/z\n\
         head -c 1048576 /dev/zero > %{buildroot}/z/zeros\nprintf x >> %{buildroot}/z/zeros",
        "/z/zeros",
        "w9.gzdio",
    );
    let out = spec_dir.path().join("zeros.rpme");
    let s = transcode(&pkg, &out, &Options::default()).unwrap();
    assert_eq!(s.hole_bytes, 1 << 20);
    let x = ExtentsFile::open(File::open(&out).unwrap(), &out).unwrap();
    let data = content(&x, 0);
    assert_eq!(data.len(), (1 << 20) + 1);
    assert!(data[..1 << 20].iter().all(|&b| b == 0) && data[1 << 20] == b'x');
}

#[test]
fn damaged_extents_files_are_rejected() {
    let pkg = fixture_in(tmp(), "w19.zstdio");
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let good = dir.path().join("good.rpme");
    transcode(&pkg, &good, &Options::default()).unwrap();
    let bytes = std::fs::read(&good).unwrap();
    let x = ExtentsFile::open(File::open(&good).unwrap(), &good).unwrap();
    let table = x.footer().table_offset as usize;
    let header = x.package().header_offset() + 100;
    let n = bytes.len();
    let bad = dir.path().join("bad.rpme");
    type Damage = Box<dyn Fn(&mut Vec<u8>)>;
    let cases: Vec<(&str, Damage)> = vec![
        (
            "table byte",
            Box::new(move |b: &mut Vec<u8>| b[table + 3] ^= 1),
        ),
        (
            "footer byte",
            Box::new(move |b: &mut Vec<u8>| b[n - 60] ^= 1),
        ),
        (
            "header byte",
            Box::new(move |b: &mut Vec<u8>| b[header] ^= 1),
        ),
        (
            "truncated",
            Box::new(|b: &mut Vec<u8>| b.truncate(b.len() - 1)),
        ),
        (
            "cut in half",
            Box::new(|b: &mut Vec<u8>| b.truncate(b.len() / 2)),
        ),
        ("magic", Box::new(move |b: &mut Vec<u8>| b[n - 1] ^= 1)),
    ];
    for (what, damage) in cases {
        let mut b = bytes.clone();
        damage(&mut b);
        std::fs::write(&bad, &b).unwrap();
        let r = ExtentsFile::open(File::open(&bad).unwrap(), &bad);
        assert!(r.is_err(), "{what}: accepted");
    }
    // A plain RPM is not an extents file.
    let r = ExtentsFile::open(File::open(&pkg).unwrap(), &pkg);
    assert!(matches!(r, Err(Error::NotExtents)), "{r:?}");
}

#[test]
fn damaged_packages_leave_an_error() {
    let pkg = fixture_in(tmp(), "w.ufdio");
    let bytes = std::fs::read(&pkg).unwrap();
    let dir = tempfile::tempdir_in(tmp()).unwrap();
    let at = bytes.windows(6).rposition(|w| w == b"hello\n").unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("file content", {
            let mut b = bytes.clone();
            b[at] = b'j';
            b
        }),
        ("truncated payload", bytes[..bytes.len() - 100].to_vec()),
        ("truncated header", bytes[..2000].to_vec()),
    ];
    for (what, b) in cases {
        let input = dir.path().join("in.rpm");
        std::fs::File::create(&input)
            .unwrap()
            .write_all(&b)
            .unwrap();
        let r = transcode(&input, &dir.path().join("out.rpme"), &Options::default());
        assert!(r.is_err(), "{what}: accepted");
    }
}
