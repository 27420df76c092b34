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

/// A store in a directory of its own under the system's temporary
/// directory (removed when dropped).
struct TempStore(std::path::PathBuf, Option<Arc<Store>>);

impl TempStore {
    fn new(name: &str) -> TempStore {
        let dir = std::env::temp_dir().join(format!("cowkit-authz-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir(&dir).unwrap();
        let store = Store::open(&dir, Default::default()).unwrap();
        TempStore(dir, Some(Arc::new(store)))
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        self.1.take();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[derive(Debug)]
struct Known;

impl Accounts for Known {
    fn exists(&self, k: &str) -> bool {
        matches!(k, "admin" | "alice" | "bob")
    }
}

fn user(k: &str) -> Principal {
    Principal {
        access_key: k.into(),
        role: crate::accounts::Role::User,
    }
}

/// `who` doing `op` on `b`/`k` (with `headers`): the error code and
/// message, or `None` when allowed.
fn try_op(
    z: &Authz,
    who: Option<&Principal>,
    op: &str,
    b: &str,
    k: &str,
    headers: &http::HeaderMap,
) -> Option<(String, String)> {
    let anon = Principal {
        access_key: "anonymous".into(),
        role: crate::accounts::Role::User,
    };
    let ask = Ask {
        op,
        bucket: b,
        key: k,
        headers,
        query: None,
        peer: Some("127.0.0.1:1".parse().unwrap()),
    };
    z.check(who.unwrap_or(&anon), who.is_some(), &ask)
        .err()
        .map(|e| {
            (
                e.code().as_str().to_string(),
                e.message().unwrap_or("").to_string(),
            )
        })
}

#[test]
fn issue_27_decisions_for_other_principals() {
    let t = TempStore::new("decide");
    let store = t.1.clone().unwrap();
    let z = Authz {
        store: store.clone(),
        default_owner: "admin".into(),
        accounts: Arc::new(Known),
    };
    let none = http::HeaderMap::new();
    let (alice, bob) = (user("alice"), user("bob"));
    let denied = Some(("AccessDenied".to_string(), "Access Denied.".to_string()));
    store.create_bucket("shared").unwrap();
    // No ACL record: the admin's bucket, private.
    assert_eq!(
        try_op(&z, Some(&alice), "GetObject", "shared", "k", &none),
        denied
    );
    assert_eq!(
        try_op(
            &z,
            Some(&Principal {
                access_key: "admin".into(),
                role: crate::accounts::Role::Admin,
            }),
            "DeleteBucket",
            "shared",
            "",
            &none
        ),
        None
    );
    // A grant of READ: reads, not writes, not the ACL.
    let acl = Acl::from_headers(
        "admin",
        &crate::acl::GrantHeaders {
            read: Some("alice".into()),
            ..Default::default()
        },
        &|k| Known.exists(k),
    )
    .unwrap();
    init_bucket(
        &store,
        "shared",
        &acl,
        Some(Ownership::BucketOwnerPreferred),
    )
    .unwrap();
    assert_eq!(
        try_op(&z, Some(&alice), "GetObject", "shared", "k", &none),
        None
    );
    assert_eq!(
        try_op(&z, Some(&alice), "ListObjectsV2", "shared", "", &none),
        None
    );
    assert_eq!(
        try_op(&z, Some(&alice), "PutObject", "shared", "k", &none),
        denied
    );
    assert_eq!(
        try_op(&z, Some(&alice), "GetBucketAcl", "shared", "", &none),
        denied
    );
    assert_eq!(
        try_op(&z, Some(&bob), "GetObject", "shared", "k", &none),
        denied
    );
    // Under BucketOwnerEnforced the grant no longer counts.
    // (A missing bucket takes no record.)
    assert!(store
        .set_bucket_record(
            "nosuch",
            OWNERSHIP_RECORD,
            Some(&StoredOwnership {
                ownership: Ownership::ObjectWriter
            })
        )
        .is_err());
    store
        .set_bucket_record(
            "shared",
            OWNERSHIP_RECORD,
            Some(&StoredOwnership {
                ownership: Ownership::BucketOwnerEnforced,
            }),
        )
        .unwrap();
    assert_eq!(
        try_op(&z, Some(&alice), "GetObject", "shared", "k", &none),
        denied
    );
    // A policy decides alone: bob may put under public/, never under secret/.
    let doc = r#"{"Statement":[{"Effect":"Allow","Principal":{"AWS":"bob"},"Action":"s3:PutObject","Resource":"arn:aws:s3:::shared/*"},
        {"Effect":"Deny","Principal":"bob","Action":"s3:PutObject","Resource":"arn:aws:s3:::shared/secret/*"}]}"#;
    store
        .set_bucket_record(
            "shared",
            POLICY_RECORD,
            Some(&StoredPolicy { policy: doc.into() }),
        )
        .unwrap();
    assert_eq!(
        try_op(&z, Some(&bob), "PutObject", "shared", "public/k", &none),
        None
    );
    let (code, msg) = try_op(&z, Some(&bob), "PutObject", "shared", "secret/k", &none).unwrap();
    assert_eq!(code, "AccessDenied");
    assert_eq!(msg, "User: bob is not authorized to perform: s3:PutObject on resource: \"arn:aws:s3:::shared/secret/k\" with an explicit deny in a resource-based policy");
    assert_eq!(
        try_op(&z, Some(&bob), "GetObject", "shared", "public/k", &none),
        denied
    );
    // Tagging on a put needs its own action.
    let mut tagged = http::HeaderMap::new();
    tagged.insert("x-amz-tagging", "a=b".parse().unwrap());
    assert_eq!(
        try_op(&z, Some(&bob), "PutObject", "shared", "public/k", &tagged),
        denied
    );
    // DeleteObjects: any Deny for the principal and action refuses it whole.
    assert_eq!(
        try_op(&z, Some(&bob), "DeleteObjects", "shared", "", &none)
            .unwrap()
            .0,
        "AccessDenied"
    );
    // A copy reads its source: alice owns `mine` but may not read `shared`.
    store
        .create_bucket_owned("mine", Vec::new(), Some("alice"))
        .unwrap();
    init_bucket(
        &store,
        "mine",
        &Acl::private("alice"),
        Some(Ownership::BucketOwnerEnforced),
    )
    .unwrap();
    assert_eq!(
        try_op(&z, Some(&alice), "PutObject", "mine", "k", &none),
        None
    );
    let mut copy = http::HeaderMap::new();
    copy.insert("x-amz-copy-source", "shared/public/k".parse().unwrap());
    assert_eq!(
        try_op(&z, Some(&alice), "CopyObject", "mine", "k", &copy),
        denied
    );
    copy.insert("x-amz-copy-source", "mine/other".parse().unwrap());
    assert_eq!(
        try_op(&z, Some(&alice), "CopyObject", "mine", "k", &copy),
        None
    );
    // The owner is the store's: an ACL record naming another owner does
    // not make it the owner.
    let before = bucket_acl(&store, "mine", "admin").unwrap();
    store
        .set_bucket_record("mine", ACL_RECORD, Some(&Acl::private("bob")))
        .unwrap();
    assert_eq!(bucket_acl(&store, "mine", "admin").unwrap().owner, "alice");
    store
        .set_bucket_record("mine", ACL_RECORD, Some(&before))
        .unwrap();
    // A missing bucket is the operation's to answer (NoSuchBucket).
    assert_eq!(
        try_op(&z, Some(&alice), "GetObject", "nosuch", "k", &none),
        None
    );
    // Anonymous: a public-read ACL serves reads only; some operations never.
    store.create_bucket("open").unwrap();
    init_bucket(
        &store,
        "open",
        &Acl::canned("admin", "public-read").unwrap(),
        Some(Ownership::ObjectWriter),
    )
    .unwrap();
    assert_eq!(try_op(&z, None, "GetObject", "open", "k", &none), None);
    assert_eq!(try_op(&z, None, "HeadBucket", "open", "", &none), None);
    assert_eq!(try_op(&z, None, "PutObject", "open", "k", &none), denied);
    let anon = Principal {
        access_key: "anonymous".into(),
        role: crate::accounts::Role::User,
    };
    let over = Ask {
        op: "GetObject",
        bucket: "open",
        key: "k",
        headers: &none,
        query: Some("response-content-type=x"),
        peer: None,
    };
    assert_eq!(
        z.check(&anon, false, &over).unwrap_err().code().as_str(),
        "InvalidRequest"
    );
    assert_eq!(try_op(&z, None, "ListParts", "open", "k", &none), denied);
    assert_eq!(
        try_op(&z, None, "CreateMultipartUpload", "open", "k", &none)
            .unwrap()
            .1,
        "Anonymous users cannot initiate multipart uploads. Please authenticate."
    );
    assert_eq!(try_op(&z, None, "GetObject", "nosuch", "k", &none), denied);
    // The admin API's change of owner: recorded, a private ACL, no policy.
    set_bucket_owner(&store, "shared", "alice").unwrap();
    assert_eq!(
        store.bucket_owner("shared").unwrap().as_deref(),
        Some("alice")
    );
    assert_eq!(
        bucket_acl(&store, "shared", "admin").unwrap(),
        Acl::private("alice")
    );
    assert_eq!(bucket_policy(&store, "shared").unwrap(), None);
}
