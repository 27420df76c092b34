//! Range copies: unaligned offsets and lengths, the clone-rounded-up-then-
//! truncate pattern of extents-file installs, and ranges past the source.

mod common;

use std::fs::{File, OpenOptions};
use std::path::Path;

use common::*;
use cowkit_fs::{Chain, Copied, Copier, Error, Handle, Method, Reason};
use cowkit_testutil::{pattern, scratch, Fs};

fn copy_range(
    chain: Chain,
    src: &Path,
    so: u64,
    dst: &Path,
    d_o: u64,
    len: u64,
) -> cowkit_fs::Result<Copied> {
    let s = File::open(src).unwrap();
    let d = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dst)
        .unwrap();
    Copier::new(chain).copy_range(Handle::new(&s, src), so, Handle::new(&d, dst), d_o, len)
}

/// Apply the same copy to an in-memory model of the destination.
fn model(dst: &mut Vec<u8>, src: &[u8], so: u64, d_o: u64, len: u64) {
    let (so, d_o, len) = (so as usize, d_o as usize, len as usize);
    if dst.len() < d_o + len {
        dst.resize(d_o + len, 0);
    }
    dst[d_o..d_o + len].copy_from_slice(&src[so..so + len]);
}

#[test]
fn unaligned_ranges_give_the_right_bytes_with_every_method() {
    const SRC_LEN: u64 = 64 * 1024;
    // (src offset, dst offset, length): congruent and misaligned offsets,
    // inside, across and past the end of the destination, up to source EOF.
    let cases: [(u64, u64, u64); 8] = [
        (0, 0, 4096),
        (100, 100, 5000),
        (4096 + 7, 3, 10_000),
        (8192, 16_384, 12_288),
        (4096, 30_000, 30_000),
        (60_000, 60_000, SRC_LEN - 60_000),
        (12_288, 40_960, SRC_LEN - 12_288),
        (5, 9, 0),
    ];
    for fs in Fs::MAIN {
        let Some(dir) = scratch(fs) else { continue };
        let src = p(dir.path(), "src");
        let src_bytes = pattern(SRC_LEN as usize, 1);
        std::fs::write(&src, &src_bytes).unwrap();
        for method in Method::ALL {
            if method == Method::Clone && !fs.reflinks() {
                continue;
            }
            for (i, &(so, d_o, len)) in cases.iter().enumerate() {
                let ctx = format!("{fs:?} {method} case {i} ({so}, {d_o}, {len})");
                let dst = p(dir.path(), &format!("dst-{method:?}-{i}"));
                let mut want = pattern(32 * 1024, 2);
                std::fs::write(&dst, &want).unwrap();
                let done = copy_range(Chain::only(method), &src, so, &dst, d_o, len)
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
                model(&mut want, &src_bytes, so, d_o, len);
                let got = std::fs::read(&dst).unwrap();
                assert_eq!(got.len(), want.len(), "{ctx}: size");
                assert!(got == want, "{ctx}: content differs");
                assert_eq!(done.bytes.total(), len, "{ctx}: {:?}", done.bytes);
                if method == Method::Clone {
                    let misaligned = so % 4096 != d_o % 4096;
                    let noted = done
                        .fallbacks
                        .iter()
                        .any(|f| matches!(f.reason, Reason::Misaligned { block_size: 4096 }));
                    assert_eq!(misaligned && len > 0, noted, "{ctx}: {:?}", done.fallbacks);
                    if misaligned {
                        assert_eq!(done.bytes.cloned, 0, "{ctx}");
                    }
                }
            }
        }
    }
}

#[test]
fn congruent_unaligned_range_clones_the_middle_and_writes_head_and_tail() {
    let Some(dir) = scratch(Fs::Xfs) else { return };
    let src = p(dir.path(), "src");
    std::fs::write(&src, pattern(1 << 20, 5)).unwrap();
    let dst = p(dir.path(), "dst");
    std::fs::write(&dst, pattern(1 << 20, 6)).unwrap();
    // 100 bytes of head, 200 aligned blocks, 50 bytes of tail, all inside
    // the destination, so the tail cannot be rounded up.
    let done = copy_range(
        Chain::AUTO,
        &src,
        4096 - 100,
        &dst,
        4096 - 100,
        100 + 200 * 4096 + 50,
    )
    .unwrap();
    assert_eq!(done.method, Method::Clone);
    assert_eq!(done.bytes.cloned, 200 * 4096);
    assert_eq!(done.bytes.written, 150);
    let (sh, _) = shared(&dst);
    assert_eq!(sh, 200 * 4096, "exactly the aligned middle is shared");
}

#[test]
fn extents_install_pattern_clones_a_partial_last_block_and_truncates() {
    for fs in [Fs::Xfs, Fs::Btrfs] {
        let Some(dir) = scratch(fs) else { continue };
        // A packed source: file A (5000 bytes) at 0, file B (3 blocks + 1
        // byte) at 8192, padding after each up to the next block.
        let pack = p(dir.path(), "pack");
        let bytes = pattern(8192 + 4 * 4096, 11);
        std::fs::write(&pack, &bytes).unwrap();
        for (name, off, len) in [("a", 0u64, 5000u64), ("b", 8192, 3 * 4096 + 1)] {
            let dst = p(dir.path(), name);
            let done = copy_range(Chain::AUTO, &pack, off, &dst, 0, len).unwrap();
            let ctx = format!("{fs:?} {name}");
            assert_eq!(done.method, Method::Clone, "{ctx}");
            assert_eq!(done.bytes.cloned, len, "{ctx}: {:?}", done.bytes);
            assert_eq!(done.bytes.written, 0, "{ctx}");
            let got = std::fs::read(&dst).unwrap();
            assert_eq!(got, bytes[off as usize..(off + len) as usize], "{ctx}");
            let (sh, _) = shared(&dst);
            assert!(sh >= len / 4096 * 4096, "{ctx}: {sh} bytes shared");
        }
    }
}

#[test]
fn a_range_past_the_source_end_is_an_error() {
    for fs in Fs::MAIN {
        let Some(dir) = scratch(fs) else { continue };
        let src = p(dir.path(), "src");
        std::fs::write(&src, pattern(10_000, 1)).unwrap();
        let dst = p(dir.path(), "dst");
        let err = copy_range(Chain::AUTO, &src, 8192, &dst, 0, 4096).unwrap_err();
        match err {
            Error::UnexpectedEof { at, wanted, .. } => assert_eq!((at, wanted), (10_000, 12_288)),
            other => panic!("{fs:?}: {other:?}"),
        }
        assert_eq!(
            std::fs::metadata(&dst).unwrap().len(),
            0,
            "{fs:?}: nothing written"
        );
    }
}
