//! The S3 fuzz targets' committed corpora (`fuzz/corpus/s3_request/`,
//! `fuzz/corpus/s3_names/`), replayed through their entry points
//! (`cowkit_s3::fuzzing`) on stable. `cargo test -p cowkit-s3 --test
//! fuzz_corpus -- --ignored` writes the seeds again.

use std::path::{Path, PathBuf};

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target)
}

fn replay(target: &str, run: impl Fn(&[u8])) {
    let mut n = 0;
    for e in std::fs::read_dir(corpus(target)).unwrap() {
        run(&std::fs::read(e.unwrap().path()).unwrap());
        n += 1;
    }
    assert!(n > 0, "{target}: empty corpus");
}

#[test]
fn fuzz_corpus_s3_request() {
    replay("s3_request", |d| {
        let _ = cowkit_s3::fuzzing::request(d);
    });
    cowkit_s3::fuzzing::finish();
}

/// The rig itself: requests reach the store, in order, with S3's answers
/// (so that the fuzzer explores the gateway, not a rig that refuses all).
#[test]
fn fuzz_rig_reaches_the_store() {
    let run = |r: &str| cowkit_s3::fuzzing::request(r.as_bytes());
    assert_eq!(run("GET /fuzz/obj\n\n"), Some(200));
    assert_eq!(run("GET /fuzz/obj\nRange: bytes=0-4\n\n"), Some(206));
    assert_eq!(run("PUT /fuzz/a/../../x\n\nx"), Some(400));
    assert_eq!(
        run("PUT /fuzz/n\nx-amz-server-side-encryption: aws:kms\n\nx"),
        Some(501)
    );
    assert_eq!(run("GET /fuzz/big?uploadId=@UPLOAD@\n\n"), Some(200));
    // A part list with a wrong ETag, then the right one.
    let complete = |etag: &str| {
        format!(
            "POST /fuzz/big?uploadId=@UPLOAD@\n\n<CompleteMultipartUpload>\
             <Part><PartNumber>1</PartNumber><ETag>{etag}</ETag></Part>\
             </CompleteMultipartUpload>"
        )
    };
    assert_eq!(
        run(&complete("\"00000000000000000000000000000000\"")),
        Some(400)
    );
    let md5 = cowkit_s3::multipart::md5_hex(&b"part bytes"[..]).unwrap();
    assert_eq!(run(&complete(&md5)), Some(200));
    assert_eq!(run("GET /fuzz/big\n\n"), Some(200));
    assert_eq!(run("not a request"), None);
    cowkit_s3::fuzzing::finish();
}

#[test]
fn fuzz_corpus_s3_names() {
    replay("s3_names", cowkit_s3::fuzzing::names);
}

#[test]
fn fuzz_corpus_s3_chunked() {
    replay("s3_chunked", cowkit_s3::fuzzing::chunked);
}

/// Seeds of `s3_chunked`: flags, cut count, body (see
/// `cowkit_s3::fuzzing::chunked`).
#[test]
#[ignore = "rewrites the seed corpus"]
fn write_chunked_seeds() {
    let sig = ";chunk-signature=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let big = "x".repeat(8192);
    let bodies: Vec<(&str, u8, String)> = vec![
        ("plain", 0, format!("2000{sig}\r\n{big}\r\n5{sig}\r\nhello\r\n0{sig}\r\n\r\n")),
        ("short-then-data", 0, "5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n".into()),
        (
            "trailer",
            1,
            "5\r\nhello\r\n0\r\nx-amz-checksum-crc32:hB5k+A==\r\nx-amz-trailer-signature:00\r\n\r\n".into(),
        ),
        ("trailer-no-name", 1, "5\r\nhello\r\n0\r\n:v\r\n\r\n".into()),
        ("after-end", 1, "0\r\n\r\nextra".into()),
        ("incomplete", 0, "5\r\nhel".into()),
        ("not-hex", 0, "zz\r\nhello\r\n".into()),
        ("long-trailer", 1, format!("0\r\n{}\r\n\r\n", "y".repeat(5000))),
    ];
    let dir = corpus("s3_chunked");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, flags, body) in bodies {
        let mut d = vec![flags, 3, 6, 0, 200];
        d.extend_from_slice(body.as_bytes());
        std::fs::write(dir.join(name), d).unwrap();
    }
}

const COMPLETE: &str = "<CompleteMultipartUpload>\
<Part><PartNumber>1</PartNumber><ETag>\"a8c0ed5d9a3d2d8c1a1ee4fd2b84ce35\"</ETag></Part>\
<Part><PartNumber>2</PartNumber><ETag>a8c0ed5d9a3d2d8c1a1ee4fd2b84ce35</ETag></Part>\
</CompleteMultipartUpload>";

#[test]
#[ignore = "rewrites the seed corpus"]
fn write_seeds() {
    let requests: Vec<(&str, String)> = vec![
        ("list-buckets", "GET /\n\n".into()),
        ("create-bucket", "PUT /other\n\n".into()),
        ("head-bucket", "HEAD /fuzz\n\n".into()),
        ("location", "GET /fuzz?location\n\n".into()),
        ("put", "PUT /fuzz/a/b.txt\nContent-Type: text/plain\nx-amz-meta-k: v\n\nbytes".into()),
        (
            "put-checksum",
            "PUT /fuzz/c\nx-amz-checksum-crc32: DUoRhQ==\nx-amz-sdk-checksum-algorithm: CRC32\n\nhello world".into(),
        ),
        ("put-md5", "PUT /fuzz/m\nContent-MD5: XrY7u+Ae7tCTyyK7j1rNww==\n\nhello world".into()),
        ("put-dir", "PUT /fuzz/d/\n\n".into()),
        ("put-if-none-match", "PUT /fuzz/obj\nIf-None-Match: *\n\nx".into()),
        ("get", "GET /fuzz/obj\n\n".into()),
        ("get-range", "GET /fuzz/obj\nRange: bytes=2-5\n\n".into()),
        ("get-range-suffix", "GET /fuzz/obj\nRange: bytes=-3\n\n".into()),
        ("get-if", "GET /fuzz/obj\nIf-Match: \"x\"\nIf-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT\n\n".into()),
        ("get-part", "GET /fuzz/obj?partNumber=1\n\n".into()),
        ("head", "HEAD /fuzz/obj\nx-amz-checksum-mode: ENABLED\n\n".into()),
        ("attributes", "GET /fuzz/obj?attributes\nx-amz-object-attributes: ETag,ObjectSize,Checksum\n\n".into()),
        ("copy", "PUT /fuzz/copy\nx-amz-copy-source: /fuzz/obj\n\n".into()),
        ("list-v2", "GET /fuzz?list-type=2&prefix=a/&delimiter=/&max-keys=2\n\n".into()),
        ("list-v1", "GET /fuzz?marker=a&max-keys=1000\n\n".into()),
        ("versions", "GET /fuzz?versions\n\n".into()),
        ("delete", "DELETE /fuzz/obj\n\n".into()),
        (
            "delete-objects",
            "POST /fuzz?delete\n\n<Delete><Object><Key>obj</Key></Object><Object><Key>dir/</Key></Object><Quiet>true</Quiet></Delete>".into(),
        ),
        ("create-upload", "POST /fuzz/k?uploads\nx-amz-checksum-algorithm: SHA256\n\n".into()),
        ("upload-part", "PUT /fuzz/big?partNumber=3&uploadId=@UPLOAD@\n\nmore".into()),
        (
            "upload-part-copy",
            "PUT /fuzz/big?partNumber=3&uploadId=@UPLOAD@\nx-amz-copy-source: /fuzz/obj\nx-amz-copy-source-range: bytes=0-3\n\n".into(),
        ),
        ("list-parts", "GET /fuzz/big?uploadId=@UPLOAD@\n\n".into()),
        ("list-uploads", "GET /fuzz?uploads\n\n".into()),
        ("complete", format!("POST /fuzz/big?uploadId=@UPLOAD@\n\n{COMPLETE}")),
        (
            "complete-full",
            format!("POST /fuzz/big?uploadId=@UPLOAD@\nx-amz-checksum-type: FULL_OBJECT\nx-amz-mp-object-size: 20\n\n{COMPLETE}"),
        ),
        ("abort", "DELETE /fuzz/big?uploadId=@UPLOAD@\n\n".into()),
        ("delete-bucket", "DELETE /other\n\n".into()),
        ("sse", "PUT /fuzz/e\nx-amz-server-side-encryption: aws:kms\n\nx".into()),
        ("dotdot", "PUT /fuzz/a/../../x\n\nx".into()),
        ("encoded-dotdot", "PUT /fuzz/%2e%2e/%2e%2e/x\n\nx".into()),
        (
            "presigned",
            "GET /fuzz/obj?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20260101T000000Z&X-Amz-Expires=604801&X-Amz-SignedHeaders=host&X-Amz-Signature=00\n\n".into(),
        ),
    ];
    let dir = corpus("s3_request");
    std::fs::create_dir_all(&dir).unwrap();
    for (name, r) in requests {
        std::fs::write(dir.join(name), r).unwrap();
    }
    let dir = corpus("s3_names");
    std::fs::create_dir_all(&dir).unwrap();
    for (i, n) in [
        "a/b/c.txt",
        "dir/",
        "../x",
        "a//b",
        "./a",
        "my-bucket.1",
        "192.168.1.1",
        "xn--abc",
        "0123456789abcdef0123456789abcdef",
    ]
    .iter()
    .enumerate()
    {
        std::fs::write(dir.join(format!("seed-{i}")), n).unwrap();
    }
}
