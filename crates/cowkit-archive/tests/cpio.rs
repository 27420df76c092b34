//! Tests of the cpio reader against archives written by GNU cpio and rpm, and against hostile
//! input. Fixtures and the script that made them are in `tests/fixtures/cpio/` (see `make.sh`).

use cowkit_archive::cpio::{Error, Format, Header, Reader, MAX_NAME_LEN};
use std::collections::HashMap;
use std::io::{self, Read};

// ---------------------------------------------------------------------------------------------
// Helpers

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/cpio/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fixture_text(name: &str) -> String {
    String::from_utf8(fixture(name)).unwrap()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// One entry as read: its header and its whole content.
#[derive(Debug, PartialEq, Eq)]
struct Entry {
    header: Header,
    content: Vec<u8>,
}

/// Reads every entry, its content in chunks of `chunk` bytes. Stripped entries get their size
/// from `size_of(file_index)`.
fn read_all_with<R: Read>(
    reader: &mut Reader<R>,
    chunk: usize,
    size_of: &dyn Fn(u32) -> u64,
) -> Result<Vec<Entry>, Error> {
    let mut entries = Vec::new();
    let mut buf = vec![0u8; chunk];
    while let Some(header) = reader.next_header()? {
        if let Some(fx) = header.file_index {
            reader.set_stripped_size(size_of(fx))?;
        }
        let mut content = Vec::new();
        loop {
            let n = reader.read_content(&mut buf)?;
            if n == 0 {
                break;
            }
            content.extend_from_slice(&buf[..n]);
        }
        entries.push(Entry { header, content });
    }
    Ok(entries)
}

fn no_stripped(fx: u32) -> u64 {
    panic!("unexpected stripped entry {fx}")
}

/// Reads a whole archive from a slice; returns the entries and the final offset.
fn read_all(archive: &[u8]) -> Result<(Vec<Entry>, u64), Error> {
    let mut reader = Reader::new(archive);
    let entries = read_all_with(&mut reader, 7, &no_stripped)?;
    Ok((entries, reader.offset()))
}

/// A reader that returns at most one byte per call, and `Interrupted` before every byte.
struct Stingy<R> {
    inner: R,
    interrupt: bool,
    interrupted_last: bool,
}

impl<R> Stingy<R> {
    fn one_byte(inner: R) -> Self {
        Stingy {
            inner,
            interrupt: false,
            interrupted_last: false,
        }
    }
    fn interrupting(inner: R) -> Self {
        Stingy {
            inner,
            interrupt: true,
            interrupted_last: false,
        }
    }
}

impl<R: Read> Read for Stingy<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.interrupt && !self.interrupted_last {
            self.interrupted_last = true;
            return Err(io::ErrorKind::Interrupted.into());
        }
        self.interrupted_last = false;
        let n = buf.len().min(1);
        self.inner.read(&mut buf[..n])
    }
}

/// A reader that fails after `ok` bytes.
struct Failing<'a> {
    data: &'a [u8],
    ok: usize,
}

impl Read for Failing<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.ok == 0 {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, "boom"));
        }
        let n = buf.len().min(self.ok);
        let n = self.data.read(&mut buf[..n])?;
        self.ok -= n;
        Ok(n)
    }
}

/// One line of `tree.manifest`: lstat of a file at archive time.
#[derive(Debug)]
struct Stat {
    name: String,
    mode: u32,
    uid: u32,
    gid: u32,
    nlink: u32,
    mtime: u32,
    size: u64,
    ino: u32,
    dev: (u32, u32),
    rdev: (u32, u32),
    content: Vec<u8>,
}

fn manifest() -> Vec<Stat> {
    fixture_text("tree.manifest")
        .lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 13, "{line:?}");
            let n = |i: usize| f[i].parse::<u32>().unwrap();
            Stat {
                name: f[0].to_owned(),
                mode: u32::from_str_radix(f[1], 16).unwrap(),
                uid: n(2),
                gid: n(3),
                nlink: n(4),
                mtime: n(5),
                size: f[6].parse().unwrap(),
                ino: n(7),
                dev: (n(8), n(9)),
                rdev: (n(10), n(11)),
                content: unhex(f[12]),
            }
        })
        .collect()
}

const S_IFMT: u32 = 0o170000;
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;

/// Checks entries read from a `cpio -o` of the fixture tree against the lstat manifest and
/// against the entry order `cpio -it` reports.
fn check_against_manifest(entries: &[Entry], format: Format) {
    let order: Vec<&str> = fixture_text("newc.list").leak().lines().collect();
    let names: Vec<String> = entries
        .iter()
        .map(|e| String::from_utf8(e.header.name.clone()).unwrap())
        .collect();
    assert_eq!(names, order, "entry order differs from `cpio -it`");

    let stats = manifest();
    assert_eq!(entries.len(), stats.len());
    let by_name: HashMap<&str, &Stat> = stats.iter().map(|s| (s.name.as_str(), s)).collect();
    // Position of the last member of each hardlink set, which alone carries the data.
    let mut last_link: HashMap<u32, usize> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        last_link.insert(e.header.ino, i);
    }

    for (i, e) in entries.iter().enumerate() {
        let h = &e.header;
        let s = by_name[names[i].as_str()];
        let ctx = &s.name;
        assert_eq!(h.format, format, "{ctx}");
        assert_eq!(h.file_index, None, "{ctx}");
        assert_eq!(h.ino, s.ino, "{ctx}");
        assert_eq!(h.mode, s.mode, "{ctx}");
        assert_eq!(h.uid, s.uid, "{ctx}");
        assert_eq!(h.gid, s.gid, "{ctx}");
        assert_eq!(h.nlink, s.nlink, "{ctx}");
        assert_eq!(h.mtime, s.mtime, "{ctx}");
        assert_eq!((h.dev_major, h.dev_minor), s.dev, "{ctx}");
        assert_eq!((h.rdev_major, h.rdev_minor), s.rdev, "{ctx}");
        let (size, content) = match s.mode & S_IFMT {
            S_IFDIR => (0, &[][..]), // cpio stores no directory content
            S_IFREG if s.nlink > 1 && last_link[&h.ino] != i => (0, &[][..]),
            S_IFREG | S_IFLNK => (s.size, &s.content[..]),
            _ => (0, &[][..]),
        };
        assert_eq!(h.size, size, "{ctx}");
        assert_eq!(e.content, content, "{ctx}");
        assert_eq!(h.size, e.content.len() as u64, "{ctx}");
        let sum = e.content.iter().map(|&b| u32::from(b)).sum::<u32>();
        match format {
            Format::NewcCrc if h.mode & S_IFMT == S_IFREG => assert_eq!(h.check, sum, "{ctx}"),
            _ => assert_eq!(h.check, 0, "{ctx}"),
        }
    }
    // The fixture covers what it says it does.
    let has = |p: &dyn Fn(&Entry) -> bool| entries.iter().any(p);
    assert!(has(&|e| e.header.mode & S_IFMT == S_IFDIR));
    assert!(has(&|e| e.header.mode & S_IFMT == S_IFLNK));
    assert!(has(&|e| e.header.nlink == 2 && e.header.size == 0));
    assert!(has(&|e| e.header.size % 4 == 1));
    assert!(has(&|e| e.header.size == 8));
    assert!(has(
        &|e| e.header.name.contains(&b' ') && !e.header.name.is_ascii()
    ));
}

fn newc() -> Vec<u8> {
    fixture("newc.cpio")
}

fn crc() -> Vec<u8> {
    fixture("crc.cpio")
}

/// Offset of the header of the entry named `name` in a newc/crc archive.
fn entry_offset(archive: &[u8], name: &str) -> usize {
    let mut reader = Reader::new(archive);
    loop {
        // The previous entry's content has been read; its padding is what aligns.
        let at = reader.offset().next_multiple_of(4) as usize;
        match reader.next_header().unwrap() {
            Some(h) if h.name == name.as_bytes() => return at,
            Some(_) => {
                io::copy(&mut reader.content(), &mut io::sink()).unwrap();
            }
            None if name == "TRAILER!!!" => return at,
            None => panic!("no entry named {name}"),
        }
    }
}

/// Builds a newc header (magic given) with the 13 fields.
fn newc_header(magic: &[u8; 6], fields: [u32; 13]) -> Vec<u8> {
    let mut out = magic.to_vec();
    for f in fields {
        out.extend_from_slice(format!("{f:08x}").as_bytes());
    }
    out
}

/// Appends a whole newc entry for a regular file.
fn push_newc(out: &mut Vec<u8>, magic: &[u8; 6], name: &[u8], data: &[u8], check: u32) {
    push_newc_mode(out, magic, 0o100644, name, data, check);
}

/// Appends a whole newc entry.
fn push_newc_mode(
    out: &mut Vec<u8>,
    magic: &[u8; 6],
    mode: u32,
    name: &[u8],
    data: &[u8],
    check: u32,
) {
    let namesize = name.len() as u32 + 1;
    let fields = [
        7,
        mode,
        0,
        0,
        1,
        0,
        data.len() as u32,
        0,
        0,
        0,
        0,
        namesize,
        check,
    ];
    out.extend_from_slice(&newc_header(magic, fields));
    out.extend_from_slice(name);
    out.push(0);
    out.resize(out.len().next_multiple_of(4), 0);
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(4), 0);
}

fn push_trailer(out: &mut Vec<u8>) {
    push_newc_mode(out, b"070701", 0, b"TRAILER!!!", b"", 0);
}

/// Appends a stripped entry header and its data.
fn push_stripped(out: &mut Vec<u8>, fx: u32, data: &[u8]) {
    out.extend_from_slice(format!("07070X{fx:08x}\0\0").as_bytes());
    out.extend_from_slice(data);
    out.resize(out.len().next_multiple_of(4), 0);
}

/// A hand-built stripped archive: (archive, sizes by file index).
fn hand_built_stripped() -> (Vec<u8>, HashMap<u32, Vec<u8>>) {
    let contents: HashMap<u32, Vec<u8>> = [
        (0, b"".to_vec()),
        (3, b"abcde".to_vec()),
        (1, b"four".to_vec()),
        (2, b"x".to_vec()),
        (0xfeed_beef, b"last one!".to_vec()),
    ]
    .into_iter()
    .collect();
    let mut out = Vec::new();
    for fx in [0, 3, 1, 2, 0xfeed_beef] {
        push_stripped(&mut out, fx, &contents[&fx]);
    }
    push_trailer(&mut out);
    (out, contents)
}

// ---------------------------------------------------------------------------------------------
// Archives from GNU cpio

#[test]
fn newc_fixture_matches_lstat_and_cpio_listing() {
    let (entries, _) = read_all(&newc()).unwrap();
    check_against_manifest(&entries, Format::Newc);
}

#[test]
fn crc_fixture_matches_lstat_and_cpio_listing() {
    let (entries, _) = read_all(&crc()).unwrap();
    check_against_manifest(&entries, Format::NewcCrc);
}

#[test]
fn newc_and_crc_fixtures_agree() {
    let (a, _) = read_all(&newc()).unwrap();
    let (b, _) = read_all(&crc()).unwrap();
    for (a, b) in a.iter().zip(&b) {
        let mut bh = b.header.clone();
        bh.format = Format::Newc;
        bh.check = 0; // the sum of the data bytes for regular files, 0 for others
        assert_eq!(a.header, bh);
        assert_eq!(a.content, b.content);
    }
}

#[test]
fn data_after_trailer_is_left_unread() {
    for archive in [newc(), crc()] {
        let mut reader = Reader::new(archive.as_slice());
        read_all_with(&mut reader, 4096, &no_stripped).unwrap();
        // The trailer is the last entry: its 110-byte header, 11-byte name, 3 bytes padding.
        let end = reader.offset() as usize;
        assert_eq!(&archive[end - 14..end - 3], b"TRAILER!!!\0");
        // None again, and nothing more consumed.
        assert!(reader.next_header().unwrap().is_none());
        assert_eq!(reader.offset() as usize, end);
        let rest = reader.into_inner();
        assert_eq!(rest.len(), archive.len() - end);
        assert!(rest.iter().all(|&b| b == 0), "GNU cpio pads with zeros");
        assert_eq!(archive.len() % 512, 0);
    }
}

#[test]
fn short_and_interrupted_reads_give_identical_results() {
    for archive in [newc(), crc()] {
        let (expected, end) = read_all(&archive).unwrap();
        for chunk in [1, 3, 4096] {
            let mut r = Reader::new(Stingy::one_byte(archive.as_slice()));
            assert_eq!(
                read_all_with(&mut r, chunk, &no_stripped).unwrap(),
                expected
            );
            assert_eq!(r.offset(), end);
            let mut r = Reader::new(Stingy::interrupting(archive.as_slice()));
            assert_eq!(
                read_all_with(&mut r, chunk, &no_stripped).unwrap(),
                expected
            );
            assert_eq!(r.offset(), end);
        }
    }
    let (archive, contents) = hand_built_stripped();
    let size = |fx: u32| contents[&fx].len() as u64;
    let mut r = Reader::new(archive.as_slice());
    let expected = read_all_with(&mut r, 5, &size).unwrap();
    let mut r = Reader::new(Stingy::one_byte(archive.as_slice()));
    assert_eq!(read_all_with(&mut r, 5, &size).unwrap(), expected);
    let mut r = Reader::new(Stingy::interrupting(archive.as_slice()));
    assert_eq!(read_all_with(&mut r, 1, &size).unwrap(), expected);
}

#[test]
fn unread_content_is_skipped() {
    for archive in [newc(), crc()] {
        let (expected, end) = read_all(&archive).unwrap();
        // Headers only.
        let mut r = Reader::new(Stingy::one_byte(archive.as_slice()));
        let mut headers = Vec::new();
        while let Some(h) = r.next_header().unwrap() {
            headers.push(h);
        }
        let want: Vec<Header> = expected.iter().map(|e| e.header.clone()).collect();
        assert_eq!(headers, want);
        assert_eq!(r.offset(), end);
        // Part of each content.
        let mut r = Reader::new(archive.as_slice());
        for e in &expected {
            assert_eq!(r.next_header().unwrap().as_ref(), Some(&e.header));
            let mut two = [0u8; 2];
            let n = r.read_content(&mut two).unwrap();
            assert_eq!(&two[..n], &e.content[..n]);
        }
        assert!(r.next_header().unwrap().is_none());
        assert_eq!(r.offset(), end);
    }
}

#[test]
fn content_adapter_reads_each_entry() {
    let archive = newc();
    let (expected, _) = read_all(&archive).unwrap();
    let mut r = Reader::new(archive.as_slice());
    for e in &expected {
        r.next_header().unwrap().unwrap();
        let mut content = Vec::new();
        r.content().read_to_end(&mut content).unwrap();
        assert_eq!(content, e.content);
        // The end of an entry is sticky.
        assert_eq!(r.read_content(&mut [0u8; 8]).unwrap(), 0);
    }
    assert!(r.next_header().unwrap().is_none());
    assert_eq!(r.read_content(&mut [0u8; 8]).unwrap(), 0);
}

#[test]
fn content_adapter_wraps_typed_errors() {
    let archive = newc();
    let odd = entry_offset(&archive, "odd.txt");
    let mut r = Reader::new(&archive[..odd + 120 + 5]);
    r.next_header().unwrap().unwrap();
    let h = r.next_header().unwrap().unwrap();
    assert_eq!(h.name, b"odd.txt");
    let err = r.content().read_to_end(&mut Vec::new()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    let inner = err.get_ref().unwrap().downcast_ref::<Error>().unwrap();
    assert!(
        matches!(inner, Error::Truncated { offset, what: "content" } if *offset == (odd + 125) as u64),
        "{inner:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Stripped (07070X) archives

/// `stripped.files`: (index, size, mode, inode, flags) in RPM header order.
fn stripped_files() -> Vec<(u32, u64, u32, u32, u32)> {
    fixture_text("stripped.files")
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                u32::from_str_radix(f[2], 8).unwrap(),
                f[3].parse().unwrap(),
                f[4].parse().unwrap(),
            )
        })
        .collect()
}

const HUGE: u64 = 4_294_967_297;

/// The payload of a real rpm with a 4 GiB + 1 file: the committed head and tail with the
/// file's zero bytes generated in between.
fn real_stripped_payload() -> impl Read {
    let head = fixture("stripped-head.bin");
    let tail = fixture("stripped-tail.bin");
    io::Cursor::new(head)
        .chain(io::repeat(0).take(HUGE))
        .chain(io::Cursor::new(tail))
}

#[test]
fn real_rpm_stripped_payload_with_4gib_file() {
    let files = stripped_files();
    const GHOST: u32 = 64;
    // What the RPM layer does: sizes from LONGFILESIZES; in a hardlink set only the member
    // with the highest index carries data; ghosts are not in the archive.
    let mut last_link: HashMap<u32, u32> = HashMap::new();
    for &(fx, _, _, ino, _) in &files {
        last_link.insert(ino, fx);
    }
    let size_of = |fx: u32| {
        let (_, size, _, ino, _) = files[fx as usize];
        if last_link[&ino] == fx {
            size
        } else {
            0
        }
    };
    // rpm's archive order: unlinked non-ghost files in header order, then each hardlink set.
    let mut links: HashMap<u32, Vec<u32>> = HashMap::new();
    for &(fx, _, _, ino, _) in &files {
        links.entry(ino).or_default().push(fx);
    }
    let mut order: Vec<u32> = files
        .iter()
        .filter(|f| f.4 & GHOST == 0 && links[&f.3].len() == 1)
        .map(|f| f.0)
        .collect();
    let mut sets: Vec<&Vec<u32>> = links.values().filter(|v| v.len() > 1).collect();
    sets.sort();
    order.extend(sets.into_iter().flatten());

    let mut r = Reader::new(real_stripped_payload());
    let mut seen = Vec::new();
    let mut contents = HashMap::new();
    while let Some(h) = r.next_header().unwrap() {
        assert_eq!(h.format, Format::Stripped);
        assert!(h.name.is_empty());
        assert_eq!(h.size, 0);
        let fx = h.file_index.unwrap();
        seen.push(fx);
        let size = size_of(fx);
        r.set_stripped_size(size).unwrap();
        if size == HUGE {
            // Read a little, leave the rest (4 GiB of zeros) for next_header to skip.
            let mut buf = vec![1u8; 1 << 16];
            r.content().read_exact(&mut buf).unwrap();
            assert!(buf.iter().all(|&b| b == 0));
        } else {
            let mut c = Vec::new();
            r.content().read_to_end(&mut c).unwrap();
            assert_eq!(c.len() as u64, size);
            contents.insert(fx, c);
        }
    }
    assert_eq!(seen, order);
    assert_eq!(seen, [0, 2, 3, 4, 7, 9, 1, 5, 8]);
    assert_eq!(contents[&2], b"a-small"); // symlink target
    assert_eq!(contents[&9], b"tail\n");
    assert_eq!(contents[&8], b"small\n"); // last member of the hardlink set
    assert!(contents[&1].is_empty() && contents[&5].is_empty());
    let total = fixture("stripped-head.bin").len() as u64
        + HUGE
        + fixture("stripped-tail.bin").len() as u64;
    assert_eq!(r.offset(), total, "rpm writes nothing after the trailer");
}

#[test]
fn real_rpm_stripped_payload_truncated_inside_huge_file() {
    let head = fixture("stripped-head.bin");
    let n = head.len() as u64;
    let stream = io::Cursor::new(head).chain(io::repeat(0).take(1000));
    let mut r = Reader::new(stream);
    let mut last = None;
    loop {
        match r.next_header() {
            Ok(Some(h)) => {
                let fx = h.file_index.unwrap();
                last = Some(fx);
                r.set_stripped_size(if fx == 7 {
                    HUGE
                } else if fx == 2 {
                    7
                } else {
                    0
                })
                .unwrap();
            }
            Ok(None) => panic!("trailer in a truncated stream"),
            Err(e) => {
                assert_eq!(last, Some(7));
                assert!(
                    matches!(e, Error::Truncated { offset, what: "content" } if offset == n + 1000),
                    "{e:?}"
                );
                break;
            }
        }
    }
}

#[test]
fn hand_built_stripped_archive() {
    let (archive, contents) = hand_built_stripped();
    let mut r = Reader::new(archive.as_slice());
    let entries = read_all_with(&mut r, 3, &|fx| contents[&fx].len() as u64).unwrap();
    assert_eq!(r.offset() as usize, archive.len());
    let got: Vec<(u32, &[u8])> = entries
        .iter()
        .map(|e| (e.header.file_index.unwrap(), e.content.as_slice()))
        .collect();
    assert_eq!(
        got,
        [
            (0, &b""[..]),
            (3, b"abcde"),
            (1, b"four"),
            (2, b"x"),
            (0xfeed_beef, b"last one!")
        ]
    );
    for e in &entries {
        let h = &e.header;
        assert_eq!(h.format, Format::Stripped);
        assert_eq!(
            (h.ino, h.mode, h.uid, h.gid, h.nlink, h.mtime, h.size, h.check),
            (0, 0, 0, 0, 0, 0, 0, 0)
        );
        assert_eq!(
            (h.dev_major, h.dev_minor, h.rdev_major, h.rdev_minor),
            (0, 0, 0, 0)
        );
        assert!(h.name.is_empty());
    }
}

#[test]
fn stripped_size_must_be_set_before_content() {
    let (archive, _) = hand_built_stripped();
    let mut r = Reader::new(archive.as_slice());
    assert_eq!(r.next_header().unwrap().unwrap().file_index, Some(0));
    r.set_stripped_size(0).unwrap();
    assert_eq!(r.next_header().unwrap().unwrap().file_index, Some(3));
    // Neither reading nor skipping works without the size; the mistake is recoverable.
    let e = r.read_content(&mut [0u8; 4]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::SizeNotSet {
                file_index: 3,
                offset: 32
            }
        ),
        "{e:?}"
    );
    let e = r.next_header().unwrap_err();
    assert!(
        matches!(
            e,
            Error::SizeNotSet {
                file_index: 3,
                offset: 32
            }
        ),
        "{e:?}"
    );
    r.set_stripped_size(5).unwrap();
    // Only once.
    let e = r.set_stripped_size(5).unwrap_err();
    assert!(matches!(e, Error::SizeAlreadyKnown { offset: 32 }), "{e:?}");
    let mut buf = [0u8; 8];
    assert_eq!(r.read_content(&mut buf).unwrap(), 5);
    assert_eq!(&buf[..5], b"abcde");
    assert_eq!(r.next_header().unwrap().unwrap().file_index, Some(1));
}

#[test]
fn set_stripped_size_on_newc_entry_is_an_error() {
    let archive = newc();
    let mut r = Reader::new(archive.as_slice());
    let e = r.set_stripped_size(1).unwrap_err();
    assert!(matches!(e, Error::SizeAlreadyKnown { offset: 0 }), "{e:?}");
    r.next_header().unwrap().unwrap();
    let e = r.set_stripped_size(1).unwrap_err();
    assert!(matches!(e, Error::SizeAlreadyKnown { .. }), "{e:?}");
    // Not poisoned.
    assert_eq!(read_all_with(&mut r, 64, &no_stripped).unwrap().len(), 9);
}

#[test]
fn formats_cannot_be_mixed() {
    // A newc entry in a stripped archive.
    let mut a = Vec::new();
    push_stripped(&mut a, 0, b"");
    push_newc(&mut a, b"070701", b"x", b"", 0);
    push_trailer(&mut a);
    let mut r = Reader::new(a.as_slice());
    r.next_header().unwrap();
    r.set_stripped_size(0).unwrap();
    let e = r.next_header().unwrap_err();
    assert!(
        matches!(
            e,
            Error::MixedFormats {
                offset: 16,
                expected: Format::Stripped,
                found: Format::Newc
            }
        ),
        "{e:?}"
    );
    // A crc entry in a newc archive.
    let mut a = Vec::new();
    push_newc(&mut a, b"070701", b"x", b"", 0);
    push_newc(&mut a, b"070702", b"y", b"", 0);
    push_trailer(&mut a);
    let e = read_all(&a).unwrap_err();
    assert!(
        matches!(
            e,
            Error::MixedFormats {
                offset: 112,
                expected: Format::Newc,
                found: Format::NewcCrc
            }
        ),
        "{e:?}"
    );
    // A stripped entry in a newc archive.
    let mut a = Vec::new();
    push_newc(&mut a, b"070701", b"x", b"", 0);
    push_stripped(&mut a, 0, b"");
    push_trailer(&mut a);
    let e = read_all(&a).unwrap_err();
    assert!(
        matches!(
            e,
            Error::MixedFormats {
                offset: 112,
                found: Format::Stripped,
                ..
            }
        ),
        "{e:?}"
    );
    // The trailer may be 070701 or 070702 in either.
    let mut a = Vec::new();
    push_newc(&mut a, b"070701", b"x", b"", 0);
    push_newc(&mut a, b"070702", b"TRAILER!!!", b"", 0);
    assert_eq!(read_all(&a).unwrap().0.len(), 1);
}

// ---------------------------------------------------------------------------------------------
// Hostile input

/// Every prefix of an archive fails cleanly: `Truncated` where the stream ended inside an
/// entry, `TrailerMissing` where it ended between entries, both at the offset where it ended.
fn check_every_truncation(archive: &[u8], size_of: &dyn Fn(u32) -> u64) {
    let end = {
        let mut r = Reader::new(archive);
        read_all_with(&mut r, 64, size_of).unwrap();
        r.offset() as usize
    };
    let mut boundaries = 0;
    for len in 0..end {
        let cut = &archive[..len];
        for one_byte in [false, true] {
            let result = if one_byte {
                read_all_with(&mut Reader::new(Stingy::one_byte(cut)), 3, size_of)
            } else {
                read_all_with(&mut Reader::new(cut), 64, size_of)
            };
            match result {
                Err(Error::Truncated { offset, .. }) => assert_eq!(offset, len as u64),
                Err(Error::TrailerMissing { offset }) => {
                    assert_eq!(offset, len as u64);
                    assert_eq!(len % 4, 0, "entries start aligned");
                    boundaries += 1;
                }
                other => panic!("prefix of {len} bytes: {other:?}"),
            }
        }
    }
    assert!(boundaries > 0);
}

#[test]
fn truncated_at_every_offset_newc() {
    check_every_truncation(&newc(), &no_stripped);
}

#[test]
fn truncated_at_every_offset_crc() {
    check_every_truncation(&crc(), &no_stripped);
}

#[test]
fn truncated_at_every_offset_stripped() {
    let (archive, contents) = hand_built_stripped();
    check_every_truncation(&archive, &|fx| contents[&fx].len() as u64);
}

#[test]
fn empty_stream_has_no_trailer() {
    let e = read_all(&[]).unwrap_err();
    assert!(matches!(e, Error::TrailerMissing { offset: 0 }), "{e:?}");
}

#[test]
fn missing_trailer() {
    let archive = newc();
    let trailer = entry_offset(&archive, "TRAILER!!!");
    let e = read_all(&archive[..trailer]).unwrap_err();
    assert!(
        matches!(e, Error::TrailerMissing { offset } if offset == trailer as u64),
        "{e:?}"
    );
    // Zeros where the trailer should be.
    let mut a = archive[..trailer].to_vec();
    a.extend_from_slice(&[0; 512]);
    let e = read_all(&a).unwrap_err();
    assert!(
        matches!(e, Error::BadMagic { offset, found: [0, 0, 0, 0, 0, 0] } if offset == trailer as u64),
        "{e:?}"
    );
}

#[test]
fn bad_magic() {
    for magic in [
        &b"070707"[..],
        b"070703",
        b"\xc7\x71\0\0\0\0",
        b"07070x",
        b"170701",
    ] {
        let mut a = newc();
        a[..6].copy_from_slice(magic);
        let e = read_all(&a).unwrap_err();
        assert!(
            matches!(e, Error::BadMagic { offset: 0, found } if found == magic),
            "{e:?}"
        );
        assert!(e.to_string().contains("bad magic"), "{e}");
    }
    // In a later entry.
    let mut a = newc();
    let at = entry_offset(&a, "empty");
    a[at + 5] = b'9';
    let e = read_all(&a).unwrap_err();
    assert!(
        matches!(e, Error::BadMagic { offset, .. } if offset == at as u64),
        "{e:?}"
    );
}

#[test]
fn bad_hex_digit_in_each_field() {
    let names = [
        "ino",
        "mode",
        "uid",
        "gid",
        "nlink",
        "mtime",
        "filesize",
        "devmajor",
        "devminor",
        "rdevmajor",
        "rdevminor",
        "namesize",
        "check",
    ];
    let base = newc();
    let at = entry_offset(&base, "odd.txt");
    for (i, want) in names.iter().enumerate() {
        for bad in [b'g', b' ', b'-', b'+', b'x', 0xff, 0] {
            let mut a = base.clone();
            let field_at = at + 6 + 8 * i;
            a[field_at + i % 8] = bad;
            match read_all(&a).unwrap_err() {
                Error::BadHex { offset, field } => {
                    assert_eq!(offset, field_at as u64);
                    assert_eq!(field, *want);
                }
                other => panic!("{want} {bad:#x}: {other:?}"),
            }
        }
    }
    // A stripped index.
    let mut a = Vec::new();
    a.extend_from_slice(b"07070X0000000g\0\0");
    push_trailer(&mut a);
    let e = read_all(&a).unwrap_err();
    assert!(
        matches!(
            e,
            Error::BadHex {
                offset: 6,
                field: "file_index"
            }
        ),
        "{e:?}"
    );
}

#[test]
fn upper_and_lower_case_hex_are_accepted() {
    let mut a = Vec::new();
    a.extend_from_slice(&newc_header(
        b"070701",
        [0xabcdef01, 0o100644, 0, 0, 1, 0, 0, 0, 0, 0, 0, 2, 0],
    ));
    a.extend_from_slice(b"a\0");
    push_trailer(&mut a);
    let upper = String::from_utf8(a[..14].to_vec()).unwrap().to_uppercase();
    let mut b = a.clone();
    b[..14].copy_from_slice(upper.as_bytes());
    assert_eq!(read_all(&a).unwrap().0[0].header.ino, 0xabcdef01);
    assert_eq!(read_all(&b).unwrap().0[0].header.ino, 0xabcdef01);
}

/// A newc archive whose first entry has the given namesize field and name bytes.
fn with_name(namesize: u32, name: &[u8]) -> Vec<u8> {
    let mut a = newc_header(
        b"070701",
        [1, 0o100644, 0, 0, 1, 0, 0, 0, 0, 0, 0, namesize, 0],
    );
    a.extend_from_slice(name);
    a.resize(a.len().next_multiple_of(4), 0);
    push_trailer(&mut a);
    a
}

#[test]
fn name_without_nul() {
    let e = read_all(&with_name(4, b"abcd")).unwrap_err();
    assert!(
        matches!(e, Error::NameNotTerminated { offset: 110 }),
        "{e:?}"
    );
}

#[test]
fn name_with_interior_nul() {
    let e = read_all(&with_name(4, b"a\0b\0")).unwrap_err();
    assert!(matches!(e, Error::NameHasNul { offset: 110 }), "{e:?}");
}

#[test]
fn empty_names() {
    for (size, name) in [(0, &b""[..]), (1, b"\0")] {
        let e = read_all(&with_name(size, name)).unwrap_err();
        assert!(
            matches!(e, Error::EmptyName { offset: 110 }),
            "{size}: {e:?}"
        );
    }
}

#[test]
fn name_length_limit() {
    // The longest allowed name (4095 bytes + NUL) works.
    let long = vec![b'n'; MAX_NAME_LEN as usize - 1];
    let mut name = long.clone();
    name.push(0);
    let (entries, _) = read_all(&with_name(MAX_NAME_LEN, &name)).unwrap();
    assert_eq!(entries[0].header.name, long);
    // One more is refused before anything is read or allocated, however large.
    for size in [MAX_NAME_LEN + 1, 0x7fff_ffff, u32::MAX] {
        let e = read_all(&with_name(size, b"short\0")).unwrap_err();
        assert!(
            matches!(e, Error::NameTooLong { offset: 110, len } if len == size),
            "{size}: {e:?}"
        );
    }
}

#[test]
fn enormous_filesize_with_short_stream() {
    let mut a = newc_header(
        b"070701",
        [1, 0o100644, 0, 0, 1, 0, u32::MAX, 0, 0, 0, 0, 2, 0],
    );
    a.extend_from_slice(b"a\0");
    a.extend_from_slice(b"only a few bytes");
    let mut r = Reader::new(a.as_slice());
    assert_eq!(r.next_header().unwrap().unwrap().size, u64::from(u32::MAX));
    let e = r.next_header().unwrap_err();
    let end = a.len() as u64;
    assert!(
        matches!(e, Error::Truncated { offset, what: "content" } if offset == end),
        "{e:?}"
    );
    // Reading gives the bytes that exist, then the same error.
    let mut r = Reader::new(a.as_slice());
    r.next_header().unwrap();
    let mut buf = vec![0u8; 1 << 20];
    assert_eq!(r.read_content(&mut buf).unwrap(), 16);
    let e = r.read_content(&mut buf).unwrap_err();
    assert!(
        matches!(e, Error::Truncated { offset, .. } if offset == end),
        "{e:?}"
    );
}

#[test]
fn crc_mismatch_is_detected_when_reading_and_when_skipping() {
    let base = crc();
    let at = entry_offset(&base, "odd.txt");
    let mut a = base.clone();
    let data = at + 120; // 110-byte header, "odd.txt\0", 2 bytes of padding
    assert_eq!(&a[data..data + 5], b"hello");
    a[data] = b'j'; // 'h' + 2
    let check = "hello world\n!".bytes().map(u32::from).sum::<u32>();
    let expect = |e: &Error| {
        matches!(e, Error::CrcMismatch { offset, name, expected, actual }
            if *offset == at as u64 && name == "odd.txt" && *expected == check && *actual == check + 2)
    };
    // Reading: the last read reports it.
    let e = read_all(&a).unwrap_err();
    assert!(expect(&e), "{e:?}");
    assert!(e.to_string().contains("`odd.txt`"), "{e}");
    // Skipping.
    let mut r = Reader::new(a.as_slice());
    let e = loop {
        match r.next_header() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("mismatch not detected"),
            Err(e) => break e,
        }
    };
    assert!(expect(&e), "{e:?}");
    // And with one byte per read.
    let mut r = Reader::new(Stingy::one_byte(a.as_slice()));
    let e = read_all_with(&mut r, 1, &no_stripped).unwrap_err();
    assert!(expect(&e), "{e:?}");
}

#[test]
fn crc_is_checked_for_regular_files_only() {
    // An empty regular file must have check 0.
    let mut a = Vec::new();
    push_newc(&mut a, b"070702", b"e", b"", 5);
    push_trailer(&mut a);
    let e = read_all(&a).unwrap_err();
    assert!(
        matches!(
            e,
            Error::CrcMismatch {
                offset: 0,
                expected: 5,
                actual: 0,
                ..
            }
        ),
        "{e:?}"
    );
    // GNU cpio writes check 0 for symlinks (see the `link` entry of crc.cpio) and does not
    // check other types; neither does the reader.
    let mut a = Vec::new();
    push_newc_mode(&mut a, b"070702", 0o120777, b"l", b"target", 0);
    push_newc_mode(&mut a, b"070702", 0o040755, b"d", b"", 77);
    push_newc_mode(&mut a, b"070702", 0, b"TRAILER!!!", b"", 1);
    let (entries, _) = read_all(&a).unwrap();
    assert_eq!(entries[0].content, b"target");
    assert_eq!(entries[1].header.check, 77);
}

#[test]
fn trailer_with_data_is_refused() {
    let mut a = Vec::new();
    push_newc(&mut a, b"070701", b"TRAILER!!!", b"junk", 0);
    let e = read_all(&a).unwrap_err();
    assert!(
        matches!(e, Error::TrailerHasData { offset: 0, size: 4 }),
        "{e:?}"
    );
}

#[test]
fn errors_poison_the_reader() {
    let mut a = newc();
    a[0] = b'x';
    let mut r = Reader::new(a.as_slice());
    assert!(matches!(r.next_header(), Err(Error::BadMagic { .. })));
    assert!(matches!(
        r.next_header(),
        Err(Error::Poisoned { offset: 0 })
    ));
    assert!(matches!(
        r.read_content(&mut [0; 4]),
        Err(Error::Poisoned { offset: 0 })
    ));
    assert!(matches!(
        r.set_stripped_size(1),
        Err(Error::Poisoned { offset: 0 })
    ));
}

#[test]
fn io_errors_carry_offset_and_source() {
    let archive = newc();
    for ok in [0, 5, 110, 200] {
        let mut r = Reader::new(Failing { data: &archive, ok });
        let e = read_all_with(&mut r, 64, &no_stripped).unwrap_err();
        match &e {
            Error::Io { offset, source } => {
                assert_eq!(*offset, ok as u64);
                assert_eq!(source.kind(), io::ErrorKind::PermissionDenied);
            }
            other => panic!("{other:?}"),
        }
        let as_io = io::Error::from(e);
        assert_eq!(as_io.kind(), io::ErrorKind::PermissionDenied);
    }
}

/// Random single- and multi-byte corruptions of every fixture: each must end in a result
/// (any), without panicking or hanging.
#[test]
fn random_corruption_never_panics() {
    let (stripped, contents) = hand_built_stripped();
    let fixtures = [newc(), crc(), stripped];
    let size_of = |fx: u32| contents.get(&fx).map_or(3, |c| c.len() as u64);
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut rand = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let interesting = b"0123456789abcdefABCDEFX!\0\xff ";
    for round in 0..3000 {
        let mut a = fixtures[round % fixtures.len()].clone();
        for _ in 0..1 + rand() % 4 {
            let i = (rand() % a.len() as u64) as usize;
            a[i] = if rand() % 2 == 0 {
                interesting[(rand() % interesting.len() as u64) as usize]
            } else {
                rand() as u8
            };
        }
        if rand() % 4 == 0 {
            a.truncate((rand() % a.len() as u64) as usize);
        }
        let mut r = Reader::new(a.as_slice());
        let _ = read_all_with(&mut r, 13, &size_of);
        assert!(r.offset() <= a.len() as u64);
    }
}
