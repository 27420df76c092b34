//! Shared helpers for the cowkit-fs integration tests.
#![allow(dead_code, missing_docs)]

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use cowkit_fs::{Chain, Copied, Copier, Handle, Result};
use cowkit_testutil::pattern;

/// A file shape to copy: size, and data ranges (the rest are holes).
pub struct Shape {
    pub name: &'static str,
    pub size: u64,
    pub data: Vec<(u64, u64)>,
}

impl Shape {
    fn dense(name: &'static str, size: u64) -> Shape {
        Shape {
            name,
            size,
            data: vec![(0, size)],
        }
    }

    pub fn is_sparse(&self) -> bool {
        self.data.iter().map(|d| d.1).sum::<u64>() < self.size
    }
}

const MIB: u64 = 1 << 20;

pub fn shapes() -> Vec<Shape> {
    vec![
        Shape::dense("empty", 0),
        Shape::dense("one-byte", 1),
        Shape::dense("block-minus-one", 4095),
        Shape::dense("one-block", 4096),
        Shape::dense("block-plus-one", 4097),
        Shape::dense("ends-mid-block", 3 * 4096 + 123),
        Shape::dense("large-unaligned", 3 * MIB + 13),
        Shape {
            name: "sparse-trailing-hole",
            size: 8 * MIB,
            data: vec![(0, 4096), (2 * MIB, 5000)],
        },
        Shape {
            name: "sparse-leading-hole",
            size: 4 * MIB + 77,
            data: vec![(3 * MIB, MIB + 77)],
        },
    ]
}

/// Write `shape` to `path` with the pattern `seed`, holes left unwritten.
pub fn make(path: &Path, shape: &Shape, seed: u64) -> Vec<u8> {
    let f = File::create(path).unwrap();
    let mut content = vec![0u8; shape.size as usize];
    for (i, &(off, len)) in shape.data.iter().enumerate() {
        let bytes = pattern(len as usize, seed + i as u64);
        f.write_all_at(&bytes, off).unwrap();
        content[off as usize..(off + len) as usize].copy_from_slice(&bytes);
    }
    f.set_len(shape.size).unwrap();
    f.sync_all().unwrap();
    content
}

/// Copy `src` to a new `dst` with `copier`.
pub fn copy_file(copier: &mut Copier, src: &Path, dst: &Path) -> Result<Copied> {
    let s = File::open(src).unwrap();
    let d = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(dst)
        .unwrap();
    copier.copy_file(Handle::new(&s, src), Handle::new(&d, dst))
}

pub fn copy_with(chain: Chain, src: &Path, dst: &Path) -> Result<Copied> {
    copy_file(&mut Copier::new(chain), src, dst)
}

/// Bytes allocated to `path` (st_blocks * 512).
pub fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

/// `(shared, total)` extent bytes of `path`, after a sync.
pub fn shared(path: &Path) -> (u64, u64) {
    let f = File::open(path).unwrap();
    cowkit_fs::fiemap::shared_bytes(&f).unwrap()
}

pub fn p(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}
