//! The `erofs` fuzz target's committed corpus (`fuzz/corpus/erofs/`),
//! replayed through its entry point (`cowkit_store::fuzzing::erofs`) on
//! stable: every input that once crashed the target, or seeds it, must go
//! through without a panic. `cargo test -p cowkit-store --test
//! fuzz_corpus -- --ignored` rewrites the seeds: images of small trees made
//! by the crate's own writer (`cowkit_store::erofs::write`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Instant;

use cowkit_fs::meta::Xattr;
use cowkit_store::erofs::{self, Options};
use cowkit_store::tree::{Entry, Kind};
use rustix::fs::Timespec;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/erofs")
}

#[test]
fn fuzz_corpus_erofs() {
    let start = Instant::now();
    let mut n = 0;
    for e in std::fs::read_dir(corpus()).unwrap() {
        let data = std::fs::read(e.unwrap().path()).unwrap();
        cowkit_store::fuzzing::erofs(&data);
        n += 1;
    }
    assert!(n > 0, "no corpus in {}", corpus().display());
    eprintln!("erofs: {n} inputs in {:?}", start.elapsed());
}

fn entry(path: &str, kind: Kind, size: u64) -> Entry {
    let t = Timespec {
        tv_sec: 1_700_000_000,
        tv_nsec: 5,
    };
    Entry {
        path: PathBuf::from(path),
        kind,
        perm: if kind == Kind::Dir { 0o755 } else { 0o644 },
        uid: 1000,
        gid: 100,
        atime: t,
        mtime: t,
        xattrs: Vec::new(),
        target: None,
        rdev: if matches!(kind, Kind::Char | Kind::Block) {
            0x0103
        } else {
            0
        },
        size,
        digest: (kind == Kind::File && size > 0).then(|| format!("{:064x}", size)),
        link: None,
    }
}

/// Trees whose images together reach every layout the writer makes.
fn seeds() -> Vec<(&'static str, Vec<Entry>, Options)> {
    let mut small = vec![
        entry("", Kind::Dir, 0),
        entry("d", Kind::Dir, 0),
        entry("d/a", Kind::File, 6),
        entry("d/empty", Kind::File, 0),
        entry("fifo", Kind::Fifo, 0),
        entry("null", Kind::Char, 0),
        entry("sda", Kind::Block, 0),
        entry("sock", Kind::Socket, 0),
    ];
    let mut l = entry("d/l", Kind::Symlink, 0);
    l.target = Some("a".into());
    small.push(l);
    let mut h = entry("hard", Kind::File, 6);
    h.link = Some(2);
    small.push(h);
    small[2].xattrs.push(Xattr {
        name: OsString::from("user.seed"),
        value: b"value".to_vec(),
    });
    small[1].xattrs.push(Xattr {
        name: OsString::from("system.posix_acl_default"),
        value: vec![2, 0, 0, 0, 1, 0, 7, 0, 255, 255, 255, 255],
    });

    let mut wide = vec![entry("", Kind::Dir, 0), entry("w", Kind::Dir, 0)];
    for i in 0..90 {
        let name = format!("w/file-{i:02}-{}", "x".repeat(32));
        wide.push(entry(&name, Kind::File, i * 4097));
    }
    let mut long = entry("long", Kind::Symlink, 0);
    long.target = Some("t".repeat(3000).into());
    wide.push(long);

    let mut verity = Options::default();
    verity.verity.insert(format!("{:064x}", 6), [7; 32]);
    let plain = Options {
        fingerprint: None,
        ..Options::default()
    };
    let visible = Options {
        fingerprint: Some("trusted.ck.fp".into()),
        ..Options::default()
    };
    vec![
        ("small", small.clone(), Options::default()),
        ("small-plain", small.clone(), plain),
        ("small-verity", small.clone(), verity),
        ("small-visible-prefix", small, visible),
        ("wide", wide, Options::default()),
        (
            "root-only",
            vec![entry("", Kind::Dir, 0)],
            Options::default(),
        ),
    ]
}

#[test]
#[ignore = "rewrites the seed corpus"]
fn write_seeds() {
    std::fs::create_dir_all(corpus()).unwrap();
    for (name, entries, opts) in seeds() {
        let img = erofs::write(&entries, &opts).unwrap();
        assert!(img.len() <= 65536, "{name}: {} bytes", img.len());
        // Each seed reads back whole: the fuzzer starts from valid images.
        let r = erofs::Reader::new(&img).unwrap();
        assert_eq!(r.walk().unwrap().len(), entries.len(), "{name}");
        std::fs::write(corpus().join(format!("seed-{name}")), &img).unwrap();
    }
}
