//! RPM packages forged byte by byte, for hostile-input tests and fuzz
//! seeds: a lead, a signature header whose `RPMSIGTAG_SHA256` matches the
//! main header (so the package passes the header check and reaches the
//! payload), a main header with whatever file list the test wants, and a
//! payload that may disagree with it in any way.
//!
//! Payloads are lists of [`Piece`]s so that a package can carry gigabytes
//! in a few kilobytes: [`compress`] compresses each piece as its own
//! frame (zstd, gzip, bzip2) or stream (xz), and a repeated block once,
//! repeating the compressed frame; concatenated frames decode as the
//! concatenation.

use std::io::Write;
use std::process::{Command, Stdio};

use sha2::{Digest, Sha256};

use crate::hex;

/// A run of payload bytes.
#[derive(Clone, Debug)]
pub enum Piece {
    /// These bytes.
    Bytes(Vec<u8>),
    /// `len` copies of `byte`.
    Repeat {
        /// The byte.
        byte: u8,
        /// How many.
        len: u64,
    },
}

/// The cpio format of a forged payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cpio {
    /// `070701`.
    Newc,
    /// `070702` (the check field is the byte sum of regular files).
    Crc,
    /// `07070X`, RPM's stripped format (index only).
    Stripped,
}

/// One file of a forged package: the header's description and what its
/// payload entry carries.
#[derive(Clone, Debug)]
pub struct File {
    /// Absolute path (`/usr/bin/x`).
    pub path: String,
    /// Mode with type bits.
    pub mode: u16,
    /// The size the header gives.
    pub size: u64,
    /// The symlink target the header gives.
    pub link: String,
    /// The header's digest (SHA-256 hex; empty for none).
    pub digest: String,
    /// The payload entry's content.
    pub content: Vec<Piece>,
    /// The payload entry's size field (newc/crc), or `None` for the
    /// content's length.
    pub entry_size: Option<u64>,
    /// The payload entry's name (newc/crc), or `None` for `.` + `path`.
    pub entry_name: Option<Vec<u8>>,
    /// Leave the file out of the payload.
    pub absent: bool,
}

impl File {
    /// A regular file with `content`, its size and digest right.
    pub fn regular(path: &str, content: &[u8]) -> File {
        File {
            path: path.into(),
            mode: 0o100644,
            size: content.len() as u64,
            link: String::new(),
            digest: hex(&Sha256::digest(content)),
            content: vec![Piece::Bytes(content.to_vec())],
            entry_size: None,
            entry_name: None,
            absent: false,
        }
    }

    /// A symlink to `target`, its size right.
    pub fn symlink(path: &str, target: &str) -> File {
        File {
            path: path.into(),
            mode: 0o120777,
            size: target.len() as u64,
            link: target.into(),
            digest: String::new(),
            content: vec![Piece::Bytes(target.as_bytes().to_vec())],
            entry_size: None,
            entry_name: None,
            absent: false,
        }
    }

    /// A directory.
    pub fn dir(path: &str) -> File {
        File {
            path: path.into(),
            mode: 0o040755,
            size: 0,
            link: String::new(),
            digest: String::new(),
            content: Vec::new(),
            entry_size: None,
            entry_name: None,
            absent: false,
        }
    }

    fn content_len(&self) -> u64 {
        self.content
            .iter()
            .map(|p| match p {
                Piece::Bytes(b) => b.len() as u64,
                Piece::Repeat { len, .. } => *len,
            })
            .sum()
    }
}

/// A package to forge.
#[derive(Clone, Debug)]
pub struct Package {
    /// `NAME`.
    pub name: String,
    /// The files, in header order.
    pub files: Vec<File>,
    /// `PAYLOADCOMPRESSOR` (`zstd`, `xz`, `lzma`, `gzip`, `bzip2`; empty:
    /// no tag, uncompressed).
    pub compressor: String,
    /// The payload's cpio format.
    pub cpio: Cpio,
    /// Sizes in `LONGFILESIZES` (int64) instead of `FILESIZES`.
    pub long_sizes: bool,
}

impl Package {
    /// A package named `name` with `files`, zstd, newc.
    pub fn new(name: &str, files: Vec<File>) -> Package {
        Package {
            name: name.into(),
            files,
            compressor: "zstd".into(),
            cpio: Cpio::Newc,
            long_sizes: false,
        }
    }

    /// The uncompressed payload (a cpio archive) as pieces.
    pub fn archive(&self) -> Vec<Piece> {
        let mut out = Vec::new();
        let mut at = 0u64;
        let push = |out: &mut Vec<Piece>, p: Piece, at: &mut u64| {
            *at += match &p {
                Piece::Bytes(b) => b.len() as u64,
                Piece::Repeat { len, .. } => *len,
            };
            out.push(p);
        };
        let pad = |at: u64| Piece::Bytes(vec![0; ((4 - at % 4) % 4) as usize]);
        for (i, f) in self.files.iter().enumerate() {
            if f.absent {
                continue;
            }
            let size = f.entry_size.unwrap_or(f.content_len());
            let mut head = Vec::new();
            match self.cpio {
                Cpio::Stripped => {
                    head.extend_from_slice(format!("07070X{i:08x}\0\0").as_bytes());
                }
                Cpio::Newc | Cpio::Crc => {
                    let name = f
                        .entry_name
                        .clone()
                        .unwrap_or_else(|| format!(".{}", f.path).into_bytes());
                    let sum = f.content.iter().fold(0u32, |s, p| match p {
                        Piece::Bytes(b) => b.iter().fold(s, |s, &x| s.wrapping_add(x.into())),
                        Piece::Repeat { byte, len } => {
                            s.wrapping_add((u64::from(*byte) * len) as u32)
                        }
                    });
                    let check = if self.cpio == Cpio::Crc && f.mode & 0o170000 == 0o100000 {
                        sum
                    } else {
                        0
                    };
                    head.extend_from_slice(self.cpio_magic());
                    let fields = [
                        i as u32 + 1,
                        u32::from(f.mode),
                        0,
                        0,
                        1,
                        0,
                        size as u32,
                        0,
                        0,
                        0,
                        0,
                        name.len() as u32 + 1,
                        check,
                    ];
                    for v in fields {
                        head.extend_from_slice(format!("{v:08x}").as_bytes());
                    }
                    head.extend_from_slice(&name);
                    head.push(0);
                }
            }
            push(&mut out, Piece::Bytes(head), &mut at);
            let p = pad(at);
            push(&mut out, p, &mut at);
            for p in &f.content {
                push(&mut out, p.clone(), &mut at);
            }
            let p = pad(at);
            push(&mut out, p, &mut at);
        }
        let mut t = b"070701".to_vec();
        for v in [0u32, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 11, 0] {
            t.extend_from_slice(format!("{v:08x}").as_bytes());
        }
        t.extend_from_slice(b"TRAILER!!!\0");
        push(&mut out, Piece::Bytes(t), &mut at);
        let p = pad(at);
        push(&mut out, p, &mut at);
        out
    }

    fn cpio_magic(&self) -> &'static [u8] {
        match self.cpio {
            Cpio::Newc => b"070701",
            Cpio::Crc => b"070702",
            Cpio::Stripped => b"07070X",
        }
    }

    /// The main header, for a payload whose SHA-256 is `payload_sha256`.
    pub fn header(&self, payload_sha256: &str) -> Vec<u8> {
        let mut h = Header::default();
        h.string(1000, &self.name);
        h.string(1001, "1.0");
        h.string(1002, "1");
        h.string(1004, "forged by cowkit's tests");
        h.string(1014, "MIT");
        h.string(1021, "linux");
        h.string(1022, "noarch");
        let n = self.files.len();
        if n > 0 {
            let mut dirs: Vec<String> = Vec::new();
            let mut dirindexes = Vec::new();
            let mut bases = Vec::new();
            for f in &self.files {
                let (d, b) = f.path.rsplit_once('/').unwrap_or(("", &f.path));
                let d = format!("{d}/");
                let i = dirs.iter().position(|x| *x == d).unwrap_or_else(|| {
                    dirs.push(d);
                    dirs.len() - 1
                });
                dirindexes.push(i as u32);
                bases.push(b.to_string());
            }
            if self.long_sizes {
                h.int64s(5008, &self.files.iter().map(|f| f.size).collect::<Vec<_>>());
            } else {
                h.int32s(
                    1028,
                    &self.files.iter().map(|f| f.size as u32).collect::<Vec<_>>(),
                );
            }
            h.int16s(1030, &self.files.iter().map(|f| f.mode).collect::<Vec<_>>());
            h.int16s(1033, &vec![0; n]);
            h.int32s(1034, &vec![1_700_000_000; n]);
            h.strings(
                1035,
                &self
                    .files
                    .iter()
                    .map(|f| f.digest.clone())
                    .collect::<Vec<_>>(),
            );
            h.strings(
                1036,
                &self
                    .files
                    .iter()
                    .map(|f| f.link.clone())
                    .collect::<Vec<_>>(),
            );
            h.int32s(1037, &vec![0; n]);
            h.strings(1039, &vec!["root".to_string(); n]);
            h.strings(1040, &vec!["root".to_string(); n]);
            h.int32s(1095, &vec![1; n]);
            h.int32s(1096, &(1..=n as u32).collect::<Vec<_>>());
            h.int32s(1116, &dirindexes);
            h.strings(1117, &bases);
            h.strings(1118, &dirs);
            h.int32s(5011, &[8]);
        }
        h.string(1124, "cpio");
        if !self.compressor.is_empty() {
            h.string(1125, &self.compressor);
        }
        h.strings(5092, &[payload_sha256.to_string()]);
        h.int32s(5093, &[8]);
        h.bytes()
    }

    /// The whole package around `payload` (the compressed payload).
    pub fn rpm(&self, payload: &[u8]) -> Vec<u8> {
        let header = self.header(&hex(&Sha256::digest(payload)));
        let mut out = lead(&self.name);
        let mut sig = Header::default();
        sig.string(273, &hex(&Sha256::digest(&header)));
        let sig = sig.bytes();
        out.extend_from_slice(&sig);
        out.resize(out.len() + (8 - sig.len() % 8) % 8, 0);
        out.extend_from_slice(&header);
        out.extend_from_slice(payload);
        out
    }

    /// The package with its payload compressed by [`compress`].
    pub fn build(&self) -> Vec<u8> {
        self.rpm(&compress(&self.compressor, &self.archive()))
    }
}

/// The 96-byte lead of a binary package.
pub fn lead(name: &str) -> Vec<u8> {
    let mut l = vec![0xED, 0xAB, 0xEE, 0xDB, 3, 0, 0, 0, 0, 1];
    let mut n = name.as_bytes().to_vec();
    n.resize(66, 0);
    l.extend_from_slice(&n);
    l.extend_from_slice(&[0, 1, 0, 5]);
    l.resize(96, 0);
    l
}

/// A header being built: index entries and their store.
#[derive(Default)]
struct Header {
    index: Vec<[u32; 4]>,
    store: Vec<u8>,
}

impl Header {
    fn add(&mut self, tag: u32, ty: u32, align: usize, count: usize, data: &[u8]) {
        self.store
            .resize(self.store.len().next_multiple_of(align), 0);
        self.index
            .push([tag, ty, self.store.len() as u32, count as u32]);
        self.store.extend_from_slice(data);
    }
    fn string(&mut self, tag: u32, s: &str) {
        self.add(tag, 6, 1, 1, format!("{s}\0").as_bytes());
    }
    fn strings(&mut self, tag: u32, v: &[String]) {
        let data: Vec<u8> = v
            .iter()
            .flat_map(|s| format!("{s}\0").into_bytes())
            .collect();
        self.add(tag, 8, 1, v.len(), &data);
    }
    fn int16s(&mut self, tag: u32, v: &[u16]) {
        let data: Vec<u8> = v.iter().flat_map(|x| x.to_be_bytes()).collect();
        self.add(tag, 3, 2, v.len(), &data);
    }
    fn int32s(&mut self, tag: u32, v: &[u32]) {
        let data: Vec<u8> = v.iter().flat_map(|x| x.to_be_bytes()).collect();
        self.add(tag, 4, 4, v.len(), &data);
    }
    fn int64s(&mut self, tag: u32, v: &[u64]) {
        let data: Vec<u8> = v.iter().flat_map(|x| x.to_be_bytes()).collect();
        self.add(tag, 5, 8, v.len(), &data);
    }
    fn bytes(mut self) -> Vec<u8> {
        self.index.sort_by_key(|e| e[0]);
        let mut out = vec![0x8E, 0xAD, 0xE8, 0x01, 0, 0, 0, 0];
        out.extend_from_slice(&(self.index.len() as u32).to_be_bytes());
        out.extend_from_slice(&(self.store.len() as u32).to_be_bytes());
        for e in &self.index {
            for w in e {
                out.extend_from_slice(&w.to_be_bytes());
            }
        }
        out.extend_from_slice(&self.store);
        out
    }
}

/// Run `tool args` on `input`, returning its output (a compressor with
/// options of the test's choosing).
pub fn filter(tool: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {tool}: {e}"));
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().expect("wait");
    feeder.join().expect("feeder").expect("write");
    assert!(out.status.success(), "{tool} failed");
    out.stdout
}

/// Compress `data` whole with `compressor` (`zstd`, `xz`, `lzma`, `gzip`,
/// `bzip2`, or empty for none), with the command-line tools.
pub fn compress_bytes(compressor: &str, data: &[u8]) -> Vec<u8> {
    match compressor {
        "" => data.to_vec(),
        "zstd" => filter("zstd", &["-q", "-c", "-3"], data),
        "xz" => filter("xz", &["-c", "-1"], data),
        "lzma" => filter("xz", &["--format=lzma", "-c", "-1"], data),
        "gzip" => filter("gzip", &["-c", "-n"], data),
        "bzip2" => filter("bzip2", &["-c"], data),
        other => panic!("unknown compressor {other}"),
    }
}

/// Compress `pieces`, each as its own frame (a repeat as one compressed
/// 1 MiB block repeated, plus the rest); `lzma` and none, which cannot be
/// concatenated, get the pieces expanded and compressed whole.
pub fn compress(compressor: &str, pieces: &[Piece]) -> Vec<u8> {
    if compressor.is_empty() || compressor == "lzma" {
        let mut all = Vec::new();
        for p in pieces {
            match p {
                Piece::Bytes(b) => all.extend_from_slice(b),
                Piece::Repeat { byte, len } => all.resize(all.len() + *len as usize, *byte),
            }
        }
        return compress_bytes(compressor, &all);
    }
    const BLOCK: u64 = 1 << 20;
    let mut out = Vec::new();
    let mut bytes = Vec::new();
    for p in pieces {
        match p {
            Piece::Bytes(b) => bytes.extend_from_slice(b),
            Piece::Repeat { byte, len } => {
                if !bytes.is_empty() {
                    out.extend(compress_bytes(compressor, &std::mem::take(&mut bytes)));
                }
                let block = compress_bytes(compressor, &vec![*byte; BLOCK as usize]);
                for _ in 0..len / BLOCK {
                    out.extend_from_slice(&block);
                }
                bytes.resize((len % BLOCK) as usize, *byte);
            }
        }
    }
    if !bytes.is_empty() {
        out.extend(compress_bytes(compressor, &bytes));
    }
    out
}
