//! The prechecks against requests S3 refuses and requests it takes.

use super::*;

fn pc() -> Prechecks {
    Prechecks {
        region: "us-east-1".into(),
        access_key: Some("AK".into()),
        accounts: None,
    }
}

fn headers(hs: &[(&str, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in hs {
        h.insert(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            v.parse().unwrap(),
        );
    }
    h
}

fn run(uri: &str, hs: &[(&str, &str)]) -> Result<(), Refusal> {
    pc().check(&Method::GET, &uri.parse().unwrap(), &headers(hs))
}

fn put(uri: &str, hs: &[(&str, &str)]) -> Result<(), Refusal> {
    pc().check(&Method::PUT, &uri.parse().unwrap(), &headers(hs))
}

#[test]
fn header_section_over_8_kib() {
    let big = "d".repeat(8 << 10);
    let e = run("/b/k", &[("x-amz-custom-header", &big)]).unwrap_err();
    assert_eq!(
        (e.status.as_u16(), e.code),
        (400, "RequestHeaderSectionTooLarge")
    );
    assert_eq!(e.extra, [("MaxSizeAllowed", "8192".to_string())]);
    let fits = "d".repeat(7 << 10);
    assert!(run("/b/k", &[("x-amz-meta-a", &fits)]).is_ok());
}

#[test]
fn ranges() {
    for r in [
        "bytes=,",
        "bytes= -1",
        "bytes=--1",
        "bytes=0 -1",
        "bytes=0--1",
        "bytes=10-5",
        "bytes=abc",
        "foo=0-1",
        "bytes=100-x",
        "bytes=0-0,1-2",
    ] {
        assert!(range_is_ignored(r), "{r}");
    }
    for r in [
        "bytes=00-01",
        "bytes=-1",
        "bytes=0-",
        "bytes=0-999999",
        "bytes=-0",
        "bytes=100-110",
    ] {
        assert!(!range_is_ignored(r), "{r}");
    }
}

#[test]
fn object_lock_and_acl() {
    // Object lock is the gateway's (issue 27): it goes on.
    assert!(run("/b", &[("x-amz-bucket-object-lock-enabled", "true")]).is_ok());
    // An object write's ACL is decided after authorisation, by the
    // bucket's ownership setting (`object_acl_refusal`).
    assert!(run("/b/k", &[("x-amz-acl", "public-read")]).is_ok());
    assert!(run("/b/k", &[("x-amz-acl", "private")]).is_ok());
    // Values S3 refuses come before NotImplemented.
    let e = run("/b", &[("x-amz-acl", "invalid_acl")]).unwrap_err();
    assert_eq!((e.status.as_u16(), e.code), (400, "InvalidArgument"));
    assert_eq!(e.extra[1], ("ArgumentValue", "invalid_acl".to_string()));
    let e = run("/b", &[("x-amz-object-ownership", "invalid_ownership")]).unwrap_err();
    assert_eq!(
        (e.status.as_u16(), e.code, e.message.as_str()),
        (
            400,
            "InvalidArgument",
            "Invalid x-amz-object-ownership header: invalid_ownership"
        )
    );
    for acl in [("x-amz-acl", "public-read"), ("x-amz-grant-read", "id=x")] {
        let e = run(
            "/b",
            &[("x-amz-object-ownership", "BucketOwnerEnforced"), acl],
        )
        .unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code),
            (400, "InvalidBucketAclWithObjectOwnership")
        );
        // With ACLs enabled, a bucket's ACL is the gateway's to keep.
        assert!(run("/b", &[("x-amz-object-ownership", "ObjectWriter"), acl]).is_ok());
    }
    for o in [
        "BucketOwnerEnforced",
        "BucketOwnerPreferred",
        "ObjectWriter",
    ] {
        assert!(run("/b", &[("x-amz-object-ownership", o)]).is_ok(), "{o}");
        assert!(run(
            "/b",
            &[("x-amz-object-ownership", o), ("x-amz-acl", "private")]
        )
        .is_ok());
    }
    assert_eq!(
        put("/b/k", &[("x-amz-storage-class", "GLACIER")])
            .unwrap_err()
            .status,
        StatusCode::NOT_IMPLEMENTED
    );
    assert!(put("/b/k", &[("x-amz-storage-class", "STANDARD")]).is_ok());
    let e = put("/b/k", &[("x-amz-object-lock-legal-hold", "maybe")]).unwrap_err();
    assert!(e.message.contains("Legal Hold"));
    // A valid value goes on to the gateway, which knows the bucket.
    assert!(put("/b/k", &[("x-amz-object-lock-legal-hold", "ON")]).is_ok());
    let e = put(
        "/b/k",
        &[
            ("x-amz-object-lock-mode", "GOVERNANCE"),
            (
                "x-amz-object-lock-retain-until-date",
                "2001-01-01T00:00:00Z",
            ),
        ],
    )
    .unwrap_err();
    assert!(e.message.contains("future"));
    assert_eq!(parse_iso8601("1970-01-02T00:00:01.5Z"), Some(86401));
}

#[test]
fn dates() {
    assert_eq!(parse_amz_date("19700101T000000Z"), Some(0));
    assert_eq!(parse_amz_date("20000301T000001Z"), Some(951_868_801));
    assert_eq!(parse_amz_date("03032006"), None);
    assert!(!valid_ymd("32234Z34"));
}

#[test]
fn presigned_bounds() {
    let base = "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20250101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20250101T000000Z&X-Amz-SignedHeaders=host&X-Amz-Signature=00";
    let e = run(&format!("{base}&X-Amz-Expires=604801"), &[]).unwrap_err();
    assert_eq!(e.code, "AuthorizationQueryParametersError");
    let e = run(&format!("{base}&X-Amz-Expires=-1"), &[]).unwrap_err();
    assert!(e.message.contains("non-negative"));
    let e = run(&format!("{base}&X-Amz-Expires=x"), &[]).unwrap_err();
    assert!(e.message.contains("number"));
    let e = run(&format!("{base}&X-Amz-Expires=60"), &[]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("AccessDenied", "Request has expired.")
    );
    let e = run(&format!("{base}&X-Amz-Expires=0"), &[]).unwrap_err();
    assert!(e.message.contains("at least 1 second"), "{e:?}");
    // Dated ahead of the clock by more than the allowed skew: not valid
    // yet. The day after tomorrow, at midnight, is at least a day ahead
    // (tomorrow's midnight is within the 15-minute skew from 23:45 UTC).
    let tomorrow: String = http_date(now_secs() + 2 * 86_400)
        .chars()
        .filter(char::is_ascii_digit)
        .take(8)
        .collect();
    assert_eq!(tomorrow.len(), 8, "{tomorrow}");
    // The credential scope's date and X-Amz-Date both.
    let future = base.replace("20250101", &tomorrow);
    let e = run(&format!("{future}&X-Amz-Expires=60"), &[]).unwrap_err();
    assert_eq!(
        (e.code, e.message.as_str()),
        ("AccessDenied", "Request is not valid yet.")
    );
    let e = run(
        &base
            .replace("us-east-1", "eu-west-1")
            .replace("&X-Amz-Signature", "&X-Amz-Expires=60&X-Amz-Signature"),
        &[],
    )
    .unwrap_err();
    assert!(e.message.contains("region \"eu-west-1\" is wrong"), "{e:?}");
    let e = run("/b/k", &[("authorization", "AWS AK:sig")]).unwrap_err();
    assert_eq!(e.code, "InvalidRequest");
}

#[test]
fn list_parts_integers() {
    for (q, name, v) in [
        (
            "part-number-marker=invalid",
            "part-number-marker",
            "invalid",
        ),
        (
            "part-number-marker=2736457823532448723",
            "part-number-marker",
            "2736457823532448723",
        ),
        ("max-parts=x", "max-parts", "x"),
    ] {
        let e = run(&format!("/b/k?uploadId=u&{q}"), &[]).unwrap_err();
        assert_eq!((e.status.as_u16(), e.code), (400, "InvalidArgument"));
        assert_eq!(
            e.message,
            format!("Provided {v} not an integer or within integer range")
        );
        assert_eq!(e.extra[0], ("ArgumentName", name.to_string()));
    }
    // Negative numbers parse: the gateway refuses them (its own message).
    assert!(run("/b/k?uploadId=u&part-number-marker=-14", &[]).is_ok());
    assert!(run("/b/k?uploadId=u&part-number-marker=3&max-parts=2", &[]).is_ok());
}

#[test]
fn sse_and_metadata() {
    let e = run("/b/k", &[("x-amz-server-side-encryption", "AES256")]).unwrap_err();
    assert_eq!(e.status, StatusCode::NOT_IMPLEMENTED);
    let e = run("/b/k", &[("content-md5", "")]).unwrap_err();
    assert_eq!(e.code, "InvalidDigest");
    let big = "v".repeat(2100);
    let e = put("/b/k", &[("x-amz-meta-a", &big)]).unwrap_err();
    assert_eq!(e.code, "MetadataTooLarge");
}

#[test]
fn copy_sources() {
    for ok in [
        "b1k/obj",
        "/b1k/a/b/c",
        "b1k/a%20b",
        "b1k/%E2%82%AC",
        "b1k/k?versionId=x%",
        "b1k/dir/",
    ] {
        assert_eq!(check_copy_source(ok), Ok(()), "{ok}");
    }
    let arg = |e: Refusal| {
        assert_eq!((e.status.as_u16(), e.code), (400, "InvalidArgument"));
        (e.message, e.extra[1].1.clone())
    };
    for enc in [
        "bucket/%ZZ",
        "100%/foo",
        "bucket/%A/bar",
        "%",
        "bucket/%1",
        "bucket/%C3%",
        "bucket/%C3%28",
    ] {
        let (m, v) = arg(check_copy_source(enc).unwrap_err());
        assert_eq!(
            (m.as_str(), v.as_str()),
            ("Invalid copy source encoding", enc)
        );
    }
    for b in ["192.168.1.1/foo", "my-buc@k&()t/obj", "Copy-Source", "ab/k"] {
        let (m, v) = arg(check_copy_source(b).unwrap_err());
        assert_eq!(
            (m.as_str(), v.as_str()),
            ("Invalid copy source bucket name", b)
        );
    }
    // A `?versionId=` that came percent-encoded is still the version.
    let e = check_copy_source("bucket/src-obj%3FversionId%3D..%2f..%2fsecret.txt").unwrap_err();
    assert_eq!(
        (e.status.as_u16(), e.code, e.message.as_str()),
        (400, "InvalidArgument", "Invalid version id specified")
    );
    assert_eq!(
        e.extra[1],
        ("ArgumentValue", "../../secret.txt".to_string())
    );
    assert_eq!(check_copy_source("bucket/k%3FversionId%3Dnull"), Ok(()));
    for (k, key) in [
        ("bucket", ""),
        ("bucket/", ""),
        ("bucket/.", "."),
        ("bucket/../", "../"),
        ("bucket/a/../../b", "a/../../b"),
    ] {
        let (m, v) = arg(check_copy_source(k).unwrap_err());
        assert_eq!(
            (m.as_str(), v.as_str()),
            ("Invalid copy source object key", key)
        );
    }
}

#[test]
fn empty_body_hash() {
    let auth = "AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=00";
    let wrong = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b854";
    let h = |sha: &'static str, len: Option<&'static str>| {
        let mut v = vec![
            ("authorization", auth),
            ("x-amz-date", "20250101T000000Z"),
            ("x-amz-content-sha256", sha),
        ];
        v.extend(len.map(|l| ("content-length", l)));
        v
    };
    let e = run("/b/k?tagging", &h(wrong, None)).unwrap_err();
    assert_eq!(
        (e.status.as_u16(), e.code),
        (400, "XAmzContentSHA256Mismatch")
    );
    assert!(e
        .extra
        .contains(&("S3ComputedContentSHA256", EMPTY_SHA256.to_string())));
    assert!(e
        .extra
        .contains(&("ClientComputedContentSHA256", wrong.to_string())));
    let e = run("/b/k", &h(wrong, Some("0"))).unwrap_err();
    assert_eq!(e.code, "XAmzContentSHA256Mismatch");
    // A body of some length is hashed later (by s3s).
    assert!(run("/b/k", &h(wrong, Some("3"))).is_ok());
    assert!(run("/b/k", &h(EMPTY_SHA256, None)).is_ok());
    assert!(run("/b/k", &h("UNSIGNED-PAYLOAD", Some("0"))).is_ok());
}

#[test]
fn streaming_bodies() {
    let unsigned = ("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER");
    let signed = (
        "x-amz-content-sha256",
        "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
    );
    let len = ("x-amz-decoded-content-length", "5");
    assert!(put("/b/k", &[unsigned, len]).is_ok());
    assert!(put("/b/k?partNumber=1&uploadId=u", &[unsigned, len]).is_ok());
    assert!(put("/b/k", &[("x-amz-content-sha256", "UNSIGNED-PAYLOAD")]).is_ok());
    for uri in ["/b?cors", "/b?tagging", "/b", "/b/k?tagging"] {
        let e = put(uri, &[unsigned, len]).unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code),
            (400, "InvalidRequest"),
            "{uri}"
        );
    }
    for bad in ["", "abc", "12x"] {
        let e = put("/b/k", &[unsigned, ("x-amz-decoded-content-length", bad)]).unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code),
            (411, "MissingContentLength"),
            "{bad}"
        );
    }
    let e = put("/b/k", &[unsigned]).unwrap_err();
    assert_eq!(e.code, "MissingContentLength");
    let auth = (
        "authorization",
        "AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-content-sha256;x-amz-date;x-amz-decoded-content-length;x-amz-trailer, Signature=00",
    );
    let date = ("x-amz-date", "20250101T000000Z");
    let e = put("/b/k", &[auth, date, signed, len]).unwrap_err();
    assert_eq!(e.code, "MalformedTrailerError");
    assert!(put(
        "/b/k",
        &[
            auth,
            date,
            signed,
            len,
            ("x-amz-trailer", "x-amz-checksum-crc32")
        ]
    )
    .is_ok());
    // Issue 27: an unsigned request (which a public bucket may take)
    // cannot carry a signed stream.
    let e = put(
        "/b/k",
        &[signed, len, ("x-amz-trailer", "x-amz-checksum-crc32")],
    )
    .unwrap_err();
    assert_eq!((e.status.as_u16(), e.code), (400, "InvalidRequest"));
    assert!(e.message.starts_with("Anonymous requests don't support"));
}

#[test]
fn acl_headers_on_bucket_puts_and_access_bodies() {
    let acl = ("x-amz-acl", "public-read");
    let grant = ("x-amz-grant-read", "id=x");
    let writer = ("x-amz-object-ownership", "ObjectWriter");
    // CreateBucket and PutBucketAcl take ACLs; PutObjectAcl is authorised
    // first (then NotImplemented); object writes are authorised, then
    // refused by their bucket's ownership setting.
    assert!(put("/b", &[acl, writer]).is_ok());
    assert!(put("/b?acl", &[grant]).is_ok());
    assert!(put("/b/k?acl", &[acl]).is_ok());
    for h in [acl, grant] {
        assert!(put("/b/k", &[h]).is_ok());
    }
    // Bodies over the caps are refused by their length, before reading.
    let big = (crate::limits::MAX_POLICY_BODY + 1).to_string();
    let e = put("/b?policy", &[("content-length", &big)]).unwrap_err();
    assert_eq!((e.status.as_u16(), e.code), (400, "MalformedPolicy"));
    assert!(put("/b?policy", &[("content-length", "20480")]).is_ok());
    let big = (crate::limits::MAX_ACL_BODY + 1).to_string();
    let e = put("/b?acl", &[("content-length", &big)]).unwrap_err();
    assert_eq!((e.status.as_u16(), e.code), (400, "MalformedACLError"));
}

#[test]
fn part_number_without_upload_id_names_the_argument() {
    let e = pc()
        .check(
            &Method::PUT,
            &"/b/k?partNumber=1".parse().unwrap(),
            &HeaderMap::new(),
        )
        .unwrap_err();
    assert_eq!((e.status.as_u16(), e.code), (400, "InvalidArgument"));
    assert_eq!(
        e.extra,
        vec![
            ("ArgumentName", "partNumber".to_string()),
            ("ArgumentValue", "partNumber".to_string())
        ]
    );
}

#[test]
fn copy_source_keys_are_checked_apart_from_their_shape() {
    // The shape is refused before authorisation; the key after it.
    assert_eq!(
        copy_source_key("b1k/public/../private.txt").as_deref(),
        Ok("public/../private.txt")
    );
    let e = check_copy_source_key("public/../private.txt").unwrap_err();
    assert_eq!(e.message, "Invalid copy source object key");
    assert!(copy_source_key("ab/k").is_err());
    assert_eq!(check_copy_source_key("public/x"), Ok(()));
}

#[test]
fn object_acls_by_bucket_ownership() {
    let hs = headers;
    let owner_full = ("x-amz-acl", "bucket-owner-full-control");
    let public = ("x-amz-acl", "public-read");
    let grant = ("x-amz-grant-read", "id=x");
    // No ACL asked for: nothing to decide.
    for enforced in [true, false] {
        assert_eq!(object_acl_refusal(&hs(&[]), enforced), None);
        assert_eq!(
            object_acl_refusal(&hs(&[("x-amz-acl", "private")]), enforced),
            None
        );
    }
    // ACLs disabled: only the bucket owner's full control, which they
    // have anyway, is taken (as S3 takes it).
    assert_eq!(object_acl_refusal(&hs(&[owner_full]), true), None);
    for h in [public, grant] {
        let e = object_acl_refusal(&hs(&[h]), true).unwrap();
        assert_eq!(
            (e.status.as_u16(), e.code),
            (400, "AccessControlListNotSupported")
        );
    }
    let e = object_acl_refusal(&hs(&[owner_full, grant]), true).unwrap();
    assert_eq!(e.code, "AccessControlListNotSupported");
    // ACLs enabled: an object ACL would have to be kept, which it is not.
    for h in [owner_full, public, grant] {
        let e = object_acl_refusal(&hs(&[h]), false).unwrap();
        assert_eq!(e.status, StatusCode::NOT_IMPLEMENTED);
    }
}

/// `versionId=` (empty) is S3's 400, not "the current version".
#[test]
fn an_empty_version_id_is_refused() {
    let check = |m: Method, uri: &str, hs: &[(&str, &str)]| {
        pc().check(&m, &uri.parse().unwrap(), &headers(hs))
    };
    for (m, uri) in [
        (Method::GET, "/b/k?versionId="),
        (Method::GET, "/b/k?versionId"),
        (Method::HEAD, "/b/k?versionId="),
        (Method::DELETE, "/b/k?versionId="),
        (Method::GET, "/b/k?tagging&versionId="),
        (Method::PUT, "/b/k?tagging&versionId="),
        (Method::PUT, "/b/k?retention&versionId="),
        (Method::PUT, "/b/k?legal-hold&versionId="),
        (Method::POST, "/b/k?restore&versionId="),
    ] {
        let e = check(m.clone(), uri, &[]).unwrap_err();
        assert_eq!(
            (e.status.as_u16(), e.code),
            (400, "InvalidArgument"),
            "{m} {uri}"
        );
        assert_eq!(e.message, "Version id cannot be the empty string");
        assert_eq!(
            e.extra,
            [
                ("ArgumentName", "versionId".into()),
                ("ArgumentValue", String::new())
            ]
        );
    }
    assert!(check(Method::GET, "/b/k?versionId=abc", &[]).is_ok());
    assert!(check(Method::GET, "/b?versions&version-id-marker=", &[]).is_ok());
    // The copy source's, named as S3 names it.
    for raw in ["src/k?versionId=", "/src/k%3FversionId%3D"] {
        let e = copy_source_key(raw).unwrap_err();
        assert_eq!(e.message, "Version id cannot be the empty string", "{raw}");
        assert_eq!(e.extra[0], ("ArgumentName", "x-amz-copy-source".into()));
    }
    assert!(copy_source_key("src/k?versionId=null").is_ok());
}
