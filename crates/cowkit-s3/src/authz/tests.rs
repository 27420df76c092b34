//! The operation table and the request's condition keys.

use super::*;

fn ask<'a>(op: &'a str, headers: &'a http::HeaderMap, query: Option<&'a str>) -> Ask<'a> {
    Ask {
        op,
        bucket: "b",
        key: "k",
        headers,
        query,
        peer: Some("[::ffff:192.0.2.1]:5000".parse().unwrap()),
    }
}

#[test]
fn issue_27_operations_ask_for_their_actions() {
    let mut h = http::HeaderMap::new();
    let get = operation("GetObject").unwrap();
    assert_eq!(get.actions(&ask("GetObject", &h, None)), ["s3:GetObject"]);
    assert_eq!(
        get.actions(&ask("GetObject", &h, Some("versionId=v1"))),
        ["s3:GetObjectVersion"]
    );
    h.insert("x-amz-tagging", "a=b".parse().unwrap());
    h.insert("x-amz-object-lock-legal-hold", "ON".parse().unwrap());
    let put = operation("PutObject").unwrap();
    assert_eq!(
        put.actions(&ask("PutObject", &h, None)),
        [
            "s3:PutObject",
            "s3:PutObjectTagging",
            "s3:PutObjectLegalHold"
        ]
    );
    assert!(put.public_by_acl() && get.public_by_acl());
    assert!(!operation("ListParts").unwrap().public_by_acl());
    assert_eq!(
        operation("UploadPart").unwrap().permission,
        Permission::Write
    );
    assert_eq!(
        operation("PutBucketAcl").unwrap().permission,
        Permission::WriteAcp
    );
    assert_eq!(
        operation("GetBucketAcl").unwrap().permission,
        Permission::ReadAcp
    );
    assert!(operation("CopyObject").unwrap().copies);
    assert!(operation("DeleteObjects").unwrap().every_key);
    assert!(operation("NoSuchOperation").is_none());
    let refusal = operation("CreateMultipartUpload")
        .unwrap()
        .anonymous_refusal()
        .unwrap();
    assert_eq!(refusal.code().as_str(), "AccessDenied");
    assert!(operation("GetObject")
        .unwrap()
        .anonymous_refusal()
        .is_none());
}

#[test]
fn issue_27_condition_keys_of_a_request() {
    let mut h = http::HeaderMap::new();
    h.insert("user-agent", "boto3".parse().unwrap());
    h.insert("x-amz-acl", "public-read".parse().unwrap());
    let a = ask("ListObjects", &h, Some("prefix=a%2Fb&max-keys=5"));
    let cx = a.context();
    // A v4-mapped peer is its IPv4 address, as policies name it.
    let doc = r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::b",
        "Condition":{"IpAddress":{"aws:SourceIp":"192.0.2.0/24"},"StringEquals":{"s3:prefix":"a/b","aws:UserAgent":"boto3","s3:max-keys":"5"}}}]}"#;
    let p = Policy::parse(doc, "b", &|_| true).unwrap();
    assert_eq!(
        p.decide(Requester::Anonymous, "s3:ListBucket", "b", &cx),
        Decision::Allow
    );
}

#[test]
fn issue_27_copy_sources_read() {
    assert_eq!(
        copy_source("src/a%20b"),
        Some(("src".into(), ("a b".into(), false)))
    );
    assert_eq!(
        copy_source("/src/k?versionId=1"),
        Some(("src".into(), ("k".into(), true)))
    );
    assert_eq!(copy_source("nokey"), None);
}
