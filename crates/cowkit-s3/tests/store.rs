//! The storage backend without HTTP: 10,000 parts complete on ext4 and XFS
//! (no per-upload metadata that could outgrow an xattr), and a retried
//! complete returns the recorded answer.

use std::io::Read;

use cowkit_s3::multipart::{multipart_etag, Prepared, MAX_PARTS};
use cowkit_s3::store::{Options, Store};
use cowkit_testutil::{scratch, Fs};
use md5::Digest;

fn ten_thousand_parts(fs: Fs) {
    let Some(dir) = scratch(fs) else { return };
    let opts = Options {
        min_part_size: 1,
        ..Options::default()
    };
    let store = Store::open(dir.path(), opts).unwrap();
    store.create_bucket("many").unwrap();
    let id = store
        .create_upload("many", "k", None, Default::default())
        .unwrap();
    let mut whole = Vec::new();
    let mut list = Vec::new();
    for n in 1..=MAX_PARTS {
        // 4096 + n % 7 bytes: most parts land at unaligned offsets.
        let data: Vec<u8> = (0..4096 + n % 7).map(|i| (i * 31 + n) as u8).collect();
        let md5 = hex::encode(md5::Md5::digest(&data));
        let mut f = store.new_part_file(&id, "many", "k", n).unwrap();
        f.write_all(&data).unwrap();
        store
            .commit_part(&id, "many", "k", n, f, md5.clone())
            .unwrap();
        whole.extend_from_slice(&data);
        list.push((n, md5));
    }
    assert_eq!(
        store.list_parts(&id, "many", "k").unwrap().len(),
        MAX_PARTS as usize
    );
    let etag = multipart_etag(list.iter().map(|(_, m)| m.as_str()));
    let Prepared::Assemble(plan) = store
        .complete_prepare(&id, "many", "k", list.clone())
        .unwrap()
    else {
        panic!("a first complete must assemble")
    };
    let done = store.complete_assemble(plan).unwrap();
    assert_eq!(done.record.etag, etag);
    assert_eq!(done.bytes.total(), whole.len() as u64);
    let (mut f, info) = store.open_object("many", "k").unwrap();
    assert_eq!(info.meta.etag, etag);
    let mut back = Vec::new();
    f.read_to_end(&mut back).unwrap();
    assert!(back == whole, "object bytes differ");
    // Retry: same answer, nothing assembled.
    match store.complete_prepare(&id, "many", "k", list).unwrap() {
        Prepared::Done(r) => assert_eq!(r.etag, etag),
        Prepared::Assemble(_) => panic!("a retried complete must not assemble again"),
    }
    // No xattrs anywhere: the part list lives in files.
    let p = dir.path().join("many/k");
    let n = rustix::fs::listxattr(&p, &mut [0u8; 256][..]).unwrap();
    assert_eq!(n, 0, "the object carries no xattrs");
}

#[test]
fn ten_thousand_parts_ext4() {
    ten_thousand_parts(Fs::Ext4);
}

#[test]
fn ten_thousand_parts_xfs() {
    ten_thousand_parts(Fs::Xfs);
}
