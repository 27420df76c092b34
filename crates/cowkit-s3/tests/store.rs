//! The storage backend without HTTP: 10,000 parts complete on ext4 and XFS
//! (no per-upload metadata that could outgrow an xattr), and a retried
//! complete returns the recorded answer.

use std::io::Read;

use cowkit_s3::multipart::{multipart_etag, PartSums, Prepared, MAX_PARTS};
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
            .commit_part(&id, "many", "k", n, f, PartSums::md5(md5.clone()))
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

/// Two stores on one root in one process (as two gateways are, with
/// their own descriptors): completes of one upload race from two threads,
/// one through each store; the upload lock is an open-file-description
/// lock, so it excludes threads as it excludes processes: one assembles,
/// the other gets its recorded answer, never `InvalidPart`. A sweep by one
/// store leaves the other's temporary directory alone while it is open;
/// a store removes its own when dropped.
fn two_stores_one_root(fs: Fs) {
    let Some(dir) = scratch(fs) else { return };
    let opts = Options {
        min_part_size: 1,
        ..Options::default()
    };
    let a = Store::open(dir.path(), opts.clone()).unwrap();
    let b = Store::open(dir.path(), opts).unwrap();
    a.create_bucket("two").unwrap();
    let tmp = dir.path().join(".cowkit-s3/tmp");
    for n in 0..200u64 {
        let key = format!("k{n}");
        let id = a
            .create_upload("two", &key, None, Default::default())
            .unwrap();
        let data = cowkit_testutil::pattern(100 + n as usize, n);
        let md5 = hex::encode(md5::Md5::digest(&data));
        let mut f = b.new_part_file(&id, "two", &key, 1).unwrap();
        f.write_all(&data).unwrap();
        b.commit_part(&id, "two", &key, 1, f, PartSums::md5(md5.clone()))
            .unwrap();
        let want = multipart_etag([md5.as_str()]);
        let outcomes: Vec<bool> = std::thread::scope(|s| {
            let hs: Vec<_> = [&a, &b]
                .into_iter()
                .map(|st| {
                    let (id, key, md5, want) = (&id, &key, &md5, &want);
                    s.spawn(move || {
                        match st
                            .complete_prepare(id, "two", key, vec![(1, md5.clone())])
                            .unwrap()
                        {
                            Prepared::Assemble(plan) => {
                                assert_eq!(&st.complete_assemble(plan).unwrap().record.etag, want);
                                true
                            }
                            Prepared::Done(r) => {
                                assert_eq!(&r.etag, want);
                                false
                            }
                        }
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(
            outcomes.iter().filter(|x| **x).count(),
            1,
            "upload {n}: exactly one complete assembles"
        );
        let (mut f, info) = b.open_object("two", &key).unwrap();
        assert_eq!(info.meta.etag, want);
        let mut back = Vec::new();
        f.read_to_end(&mut back).unwrap();
        assert!(back == data, "object {key} bytes");
    }
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 2);
    let swept = b.sweep().unwrap();
    assert_eq!(swept.dead_tmp, 0, "a live store's tmp/ is not swept");
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 2);
    drop(a);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 1);
    drop(b);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
}

#[test]
fn two_stores_one_root_xfs() {
    two_stores_one_root(Fs::Xfs);
}

#[test]
fn two_stores_one_root_ext4() {
    two_stores_one_root(Fs::Ext4);
}

/// A put whose key's directory is emptied and removed by a delete of a
/// sibling key (on another store of the same root) between making the
/// directory and renaming the object in: the put makes the directory again
/// and lands, never a 500. Two stores put and delete their own keys under
/// one shared directory, so its removal races every put.
fn put_races_a_delete_that_prunes_its_directory(fs: Fs) {
    let Some(dir) = scratch(fs) else { return };
    let a = Store::open(dir.path(), Options::default()).unwrap();
    let b = Store::open(dir.path(), Options::default()).unwrap();
    a.create_bucket("prune").unwrap();
    std::thread::scope(|s| {
        for (who, st) in [("a", &a), ("b", &b)] {
            s.spawn(move || {
                for n in 0..3000u64 {
                    let key = format!("d1/d2/d3/{who}{n}");
                    let data = cowkit_testutil::pattern(10 + (n % 50) as usize, n);
                    let mut f = st.new_file().unwrap();
                    f.write_all(&data).unwrap();
                    let meta = cowkit_s3::store::ObjectMeta {
                        etag: hex::encode(md5::Md5::digest(&data)),
                        ..Default::default()
                    };
                    st.commit_object("prune", &key, f, meta)
                        .unwrap_or_else(|e| panic!("put {key}: {e}"));
                    let (mut f, _) = st.open_object("prune", &key).unwrap();
                    let mut back = Vec::new();
                    f.read_to_end(&mut back).unwrap();
                    assert!(back == data, "object {key} bytes");
                    st.delete_object("prune", &key).unwrap();
                }
            });
        }
    });
    assert!(a.keys("prune", "").unwrap().is_empty());
    assert!(
        !dir.path().join("prune/d1").exists(),
        "emptied directories are removed"
    );
}

#[test]
fn put_races_a_delete_that_prunes_its_directory_xfs() {
    put_races_a_delete_that_prunes_its_directory(Fs::Xfs);
}

#[test]
fn put_races_a_delete_that_prunes_its_directory_ext4() {
    put_races_a_delete_that_prunes_its_directory(Fs::Ext4);
}
