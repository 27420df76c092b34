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
fn operations_ask_for_their_actions() {
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

/// A retention a request's headers ask for needs its own action, on every
/// write that can set one (PostObject arrives as a PutObject).
#[test]
fn lock_headers_ask_for_the_lock_actions() {
    for (header, value, action) in [
        (
            "x-amz-object-lock-mode",
            "COMPLIANCE",
            "s3:PutObjectRetention",
        ),
        (
            "x-amz-object-lock-retain-until-date",
            "2099-01-01T00:00:00Z",
            "s3:PutObjectRetention",
        ),
        (
            "x-amz-object-lock-legal-hold",
            "ON",
            "s3:PutObjectLegalHold",
        ),
    ] {
        let mut h = http::HeaderMap::new();
        h.insert(header, value.parse().unwrap());
        for name in ["PutObject", "CopyObject", "CreateMultipartUpload"] {
            let a = operation(name).unwrap().actions(&ask(name, &h, None));
            assert_eq!(a, ["s3:PutObject", action], "{name} {header}");
        }
    }
}

/// AWS's "Mapping of ACL permissions and access policy permissions",
/// row by row, and what no ACL grants.
#[test]
fn acl_permissions_grant_what_aws_lists() {
    use crate::acl::Permission::{Read, ReadAcp, Write, WriteAcp};
    for (action, perm) in [
        // READ on a bucket: its listings; on an object: its data.
        ("s3:ListBucket", Read),
        ("s3:ListBucketVersions", Read),
        ("s3:ListBucketMultipartUploads", Read),
        ("s3:GetObject", Read),
        ("s3:GetObjectVersion", Read),
        ("s3:GetObjectAttributes", Read),
        ("s3:GetObjectVersionAttributes", Read),
        // WRITE on a bucket: create, overwrite and delete objects.
        ("s3:PutObject", Write),
        ("s3:DeleteObject", Write),
        ("s3:DeleteObjectVersion", Write),
        // READ_ACP and WRITE_ACP: the ACLs.
        ("s3:GetBucketAcl", ReadAcp),
        ("s3:GetObjectAcl", ReadAcp),
        ("s3:GetObjectVersionAcl", ReadAcp),
        ("s3:PutBucketAcl", WriteAcp),
        ("s3:PutObjectAcl", WriteAcp),
        ("s3:PutObjectVersionAcl", WriteAcp),
    ] {
        assert_eq!(acl_permission(action), Some(perm), "{action}");
    }
    for action in [
        "s3:PutObjectRetention",
        "s3:PutObjectLegalHold",
        "s3:BypassGovernanceRetention",
        "s3:GetObjectRetention",
        "s3:GetObjectLegalHold",
        "s3:DeleteBucket",
        "s3:CreateBucket",
        "s3:GetBucketPolicy",
        "s3:PutBucketPolicy",
        "s3:DeleteBucketPolicy",
        "s3:GetBucketPolicyStatus",
        "s3:PutBucketOwnershipControls",
        "s3:GetBucketOwnershipControls",
        "s3:PutBucketTagging",
        "s3:GetBucketTagging",
        "s3:PutBucketVersioning",
        "s3:GetBucketVersioning",
        "s3:PutBucketObjectLockConfiguration",
        "s3:PutBucketCORS",
        "s3:PutBucketWebsite",
        "s3:DeleteBucketWebsite",
        "s3:GetBucketLocation",
        "s3:PutObjectTagging",
        "s3:GetObjectTagging",
        "s3:DeleteObjectTagging",
        "s3:RestoreObject",
        "s3:ListAllMyBuckets",
    ] {
        assert_eq!(acl_permission(action), None, "{action}");
    }
    // The policy operations are the owner's, never locked out; the
    // ownership controls are the owner's, a Deny can refuse them.
    for op in ["GetBucketPolicy", "PutBucketPolicy", "DeleteBucketPolicy"] {
        assert_eq!(
            operation(op).unwrap().grantable,
            Grantable::OwnerAlways,
            "{op}"
        );
    }
    for op in [
        "PutBucketOwnershipControls",
        "DeleteBucketOwnershipControls",
    ] {
        assert_eq!(operation(op).unwrap().grantable, Grantable::OwnerOnly);
    }
}

#[test]
fn condition_keys_of_a_request() {
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
fn copy_sources_read() {
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
fn decisions_for_other_principals() {
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

/// The model of `docs/security.md` ("Who may do what"), rule by rule, on
/// a bucket `bkt` of the `user` alice: bob has WRITE, carol READ, dave
/// READ_ACP and WRITE_ACP, erin FULL_CONTROL; frank has nothing.
struct Model {
    _t: TempStore,
    z: Authz,
    store: Arc<Store>,
}

#[derive(Debug)]
struct People;

impl Accounts for People {
    fn exists(&self, k: &str) -> bool {
        matches!(
            k,
            "admin" | "alice" | "bob" | "carol" | "dave" | "erin" | "frank"
        )
    }
}

impl Model {
    fn new(name: &str) -> Model {
        let t = TempStore::new(name);
        let store = t.1.clone().unwrap();
        store
            .create_bucket_owned("bkt", Vec::new(), Some("alice"))
            .unwrap();
        let acl = Acl::from_headers(
            "alice",
            &crate::acl::GrantHeaders {
                write: Some("id=bob".into()),
                read: Some("id=carol".into()),
                read_acp: Some("id=dave".into()),
                write_acp: Some("id=dave".into()),
                full_control: Some("id=erin".into()),
            },
            &|k| People.exists(k),
        )
        .unwrap();
        init_bucket(&store, "bkt", &acl, Some(Ownership::BucketOwnerPreferred)).unwrap();
        let z = Authz {
            store: store.clone(),
            default_owner: "admin".into(),
            accounts: Arc::new(People),
        };
        Model { _t: t, z, store }
    }

    fn set_acl(&self, acl: &Acl) {
        self.store
            .set_bucket_record("bkt", ACL_RECORD, Some(acl))
            .unwrap();
    }

    fn set_policy(&self, doc: Option<&str>) {
        let p = doc.map(|d| StoredPolicy { policy: d.into() });
        self.store
            .set_bucket_record("bkt", POLICY_RECORD, p.as_ref())
            .unwrap();
    }

    fn set_ownership(&self, o: Ownership) {
        self.store
            .set_bucket_record(
                "bkt",
                OWNERSHIP_RECORD,
                Some(&StoredOwnership { ownership: o }),
            )
            .unwrap();
    }

    /// `who` (`None`: unsigned; a `user`, or the role given) doing `op`:
    /// `"ok"` or the refusal's code.
    fn ask(&self, who: Option<&str>, op: &str, key: &str, headers: &[(&str, &str)]) -> String {
        self.ask_q(who, op, key, headers, None)
    }

    fn ask_q(
        &self,
        who: Option<&str>,
        op: &str,
        key: &str,
        headers: &[(&str, &str)],
        query: Option<&str>,
    ) -> String {
        let mut h = http::HeaderMap::new();
        for (k, v) in headers {
            h.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        let p = Principal {
            access_key: who.unwrap_or("anonymous").into(),
            role: match who {
                Some("admin") => crate::accounts::Role::Admin,
                Some("plus") => crate::accounts::Role::UserPlus,
                _ => crate::accounts::Role::User,
            },
        };
        let a = Ask {
            op,
            bucket: if op == "ListBuckets" { "" } else { "bkt" },
            key,
            headers: &h,
            query,
            peer: Some("127.0.0.1:1".parse().unwrap()),
        };
        match self.z.check(&p, who.is_some(), &a) {
            Ok(()) => "ok".into(),
            Err(e) => e.code().as_str().to_string(),
        }
    }
}

const LOCK: &[(&str, &str)] = &[
    ("x-amz-object-lock-mode", "COMPLIANCE"),
    (
        "x-amz-object-lock-retain-until-date",
        "2099-01-01T00:00:00Z",
    ),
];
const HOLD: &[(&str, &str)] = &[("x-amz-object-lock-legal-hold", "ON")];

/// Bucket operations and whether an ACL grant (any, FULL_CONTROL
/// included) can give them: AWS's table.
const BUCKET_OPS_NO_ACL: &[&str] = &[
    "DeleteBucket",
    "GetBucketPolicy",
    "PutBucketPolicy",
    "DeleteBucketPolicy",
    "GetBucketPolicyStatus",
    "GetBucketOwnershipControls",
    "PutBucketOwnershipControls",
    "DeleteBucketOwnershipControls",
    "GetBucketTagging",
    "PutBucketTagging",
    "DeleteBucketTagging",
    "GetBucketVersioning",
    "PutBucketVersioning",
    "GetObjectLockConfiguration",
    "PutObjectLockConfiguration",
    "GetBucketCors",
    "PutBucketCors",
    "DeleteBucketCors",
    "GetBucketWebsite",
    "PutBucketWebsite",
    "DeleteBucketWebsite",
    "GetBucketLocation",
];
const OBJECT_OPS_NO_ACL: &[&str] = &[
    "PutObjectRetention",
    "PutObjectLegalHold",
    "GetObjectRetention",
    "GetObjectLegalHold",
    "GetObjectTagging",
    "PutObjectTagging",
    "DeleteObjectTagging",
    "RestoreObject",
];

#[test]
fn rule_admin_and_owner_may_do_everything() {
    let m = Model::new("owner");
    for who in ["admin", "alice"] {
        for op in BUCKET_OPS_NO_ACL {
            assert_eq!(m.ask(Some(who), op, "", &[]), "ok", "{who} {op}");
        }
        for op in OBJECT_OPS_NO_ACL {
            assert_eq!(m.ask(Some(who), op, "k", &[]), "ok", "{who} {op}");
        }
        assert_eq!(m.ask(Some(who), "PutObject", "k", LOCK), "ok");
        assert_eq!(m.ask(Some(who), "PutObject", "k", HOLD), "ok");
    }
    // Under BucketOwnerEnforced too, and with a policy that does not name
    // the owner (a policy adds to the owner's rights, never replaces them).
    m.set_ownership(Ownership::BucketOwnerEnforced);
    m.set_policy(Some(
        r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}"#,
    ));
    assert_eq!(m.ask(Some("alice"), "PutObject", "k", &[]), "ok");
    assert_eq!(m.ask(Some("alice"), "PutBucketVersioning", "", &[]), "ok");
}

/// S3 lets the bucket's owner and an upload's initiator list its parts
/// and abort it (and whoever a policy allows `s3:AbortMultipartUpload`,
/// `s3:ListMultipartUploadParts`); no ACL grants either, so a `WRITE`
/// grantee (or everyone, on `public-read-write`) cannot abort or list the
/// owner's uploads or another grantee's.
#[test]
fn rule_an_upload_is_its_initiators() {
    let m = Model::new("initiator");
    let start = |who: &str| {
        m.store
            .create_upload_with(
                "bkt",
                "k",
                crate::multipart::NewUpload {
                    initiator: Some(who.into()),
                    ..Default::default()
                },
            )
            .unwrap()
    };
    let (mine, bobs) = (start("alice"), start("bob"));
    for op in ["AbortMultipartUpload", "ListParts"] {
        let q = |id: &str| format!("uploadId={id}");
        // The initiator, and the owner whoever started it.
        assert_eq!(m.ask_q(Some("bob"), op, "k", &[], Some(&q(&bobs))), "ok");
        assert_eq!(m.ask_q(Some("alice"), op, "k", &[], Some(&q(&bobs))), "ok");
        assert_eq!(m.ask_q(Some("alice"), op, "k", &[], Some(&q(&mine))), "ok");
        // A WRITE or FULL_CONTROL grantee, on an upload not its own.
        for who in ["bob", "erin"] {
            assert_eq!(
                m.ask_q(Some(who), op, "k", &[], Some(&q(&mine))),
                "AccessDenied",
                "{who} {op}"
            );
        }
        assert_eq!(
            m.ask_q(Some("erin"), op, "k", &[], Some(&q(&bobs))),
            "AccessDenied"
        );
        // The upload is the initiator's on its own key only.
        assert_eq!(
            m.ask_q(Some("bob"), op, "other", &[], Some(&q(&bobs))),
            "AccessDenied"
        );
        // Without an upload id, or one that names no upload.
        assert_eq!(m.ask(Some("bob"), op, "k", &[]), "AccessDenied");
        assert_eq!(
            m.ask_q(Some("bob"), op, "k", &[], Some("uploadId=0123")),
            "AccessDenied"
        );
        // Unsigned, on a public-read-write bucket.
        m.set_acl(&Acl::canned("alice", "public-read-write").unwrap());
        assert_eq!(
            m.ask_q(None, op, "k", &[], Some(&q(&mine))),
            "AccessDenied",
            "public {op}"
        );
        m.set_acl(
            &Acl::from_headers(
                "alice",
                &crate::acl::GrantHeaders {
                    write: Some("id=bob".into()),
                    full_control: Some("id=erin".into()),
                    ..Default::default()
                },
                &|k| People.exists(k),
            )
            .unwrap(),
        );
    }
    // A policy may allow them; a Deny refuses the initiator too.
    let q = format!("uploadId={mine}");
    m.set_policy(Some(
        r#"{"Statement":[{"Effect":"Allow","Principal":{"AWS":"erin"},"Action":"s3:AbortMultipartUpload","Resource":"arn:aws:s3:::bkt/*"}]}"#,
    ));
    assert_eq!(
        m.ask_q(Some("erin"), "AbortMultipartUpload", "k", &[], Some(&q)),
        "ok"
    );
    m.set_policy(Some(
        r#"{"Statement":[{"Effect":"Deny","Principal":{"AWS":"bob"},"Action":"s3:ListMultipartUploadParts","Resource":"arn:aws:s3:::bkt/*"}]}"#,
    ));
    let q = format!("uploadId={bobs}");
    assert_ne!(m.ask_q(Some("bob"), "ListParts", "k", &[], Some(&q)), "ok");
}

#[test]
fn rule_acl_grants_map_as_aws_lists() {
    let m = Model::new("acl");
    // READ: listings and object reads.
    for (op, key) in [
        ("HeadBucket", ""),
        ("ListObjects", ""),
        ("ListObjectsV2", ""),
        ("ListObjectVersions", ""),
        ("ListMultipartUploads", ""),
        ("GetObject", "k"),
        ("HeadObject", "k"),
        ("GetObjectAttributes", "k"),
    ] {
        assert_eq!(m.ask(Some("carol"), op, key, &[]), "ok", "READ {op}");
        assert_eq!(
            m.ask(Some("bob"), op, key, &[]),
            "AccessDenied",
            "WRITE {op}"
        );
        assert_eq!(m.ask(Some("erin"), op, key, &[]), "ok", "FULL_CONTROL {op}");
    }
    assert_eq!(
        m.ask_q(Some("carol"), "GetObject", "k", &[], Some("versionId=v1")),
        "ok"
    );
    // WRITE: object writes and deletions, the multipart steps (aborting
    // an upload and listing its parts: its initiator's, see
    // rule_an_upload_is_its_initiators).
    for (op, key) in [
        ("PutObject", "k"),
        ("DeleteObject", "k"),
        ("DeleteObjects", ""),
        ("CreateMultipartUpload", "k"),
        ("UploadPart", "k"),
        ("CompleteMultipartUpload", "k"),
    ] {
        assert_eq!(m.ask(Some("bob"), op, key, &[]), "ok", "WRITE {op}");
        assert_eq!(
            m.ask(Some("carol"), op, key, &[]),
            "AccessDenied",
            "READ {op}"
        );
        assert_eq!(m.ask(Some("erin"), op, key, &[]), "ok", "FULL_CONTROL {op}");
    }
    assert_eq!(
        m.ask_q(Some("bob"), "DeleteObject", "k", &[], Some("versionId=v1")),
        "ok"
    );
    // READ_ACP and WRITE_ACP: the ACLs, nothing else.
    for (op, key) in [
        ("GetBucketAcl", ""),
        ("PutBucketAcl", ""),
        ("GetObjectAcl", "k"),
        ("PutObjectAcl", "k"),
    ] {
        assert_eq!(m.ask(Some("dave"), op, key, &[]), "ok", "ACP {op}");
        assert_eq!(
            m.ask(Some("bob"), op, key, &[]),
            "AccessDenied",
            "WRITE {op}"
        );
        assert_eq!(m.ask(Some("erin"), op, key, &[]), "ok", "FULL_CONTROL {op}");
    }
    assert_eq!(m.ask(Some("dave"), "GetObject", "k", &[]), "AccessDenied");
    // Nothing an ACL does not grant, FULL_CONTROL included.
    for who in ["bob", "carol", "dave", "erin", "frank"] {
        for op in BUCKET_OPS_NO_ACL {
            assert_eq!(m.ask(Some(who), op, "", &[]), "AccessDenied", "{who} {op}");
        }
        for op in OBJECT_OPS_NO_ACL {
            assert_eq!(m.ask(Some(who), op, "k", &[]), "AccessDenied", "{who} {op}");
        }
        // A write asking for a retention, a legal hold or tags needs
        // those actions too, which no ACL grants.
        for headers in [LOCK, HOLD, &[("x-amz-tagging", "a=b")][..]] {
            for op in ["PutObject", "CreateMultipartUpload"] {
                assert_eq!(
                    m.ask(Some(who), op, "k", headers),
                    "AccessDenied",
                    "{who} {op} {headers:?}"
                );
            }
        }
    }
    // Under BucketOwnerEnforced no grant counts.
    m.set_ownership(Ownership::BucketOwnerEnforced);
    assert_eq!(m.ask(Some("carol"), "GetObject", "k", &[]), "AccessDenied");
    assert_eq!(m.ask(Some("bob"), "PutObject", "k", &[]), "AccessDenied");
    assert_eq!(m.ask(Some("erin"), "GetBucketAcl", "", &[]), "AccessDenied");
}

/// The attack: a WRITE grantee (or any signed account on a
/// public-read-write bucket) put a policy allowing itself everything and
/// denying the owner, took the ownership controls, deleted the bucket.
#[test]
fn rule_policy_and_ownership_operations_are_the_owners() {
    let m = Model::new("policyops");
    let owner_ops = [
        "PutBucketPolicy",
        "DeleteBucketPolicy",
        "GetBucketPolicy",
        "PutBucketOwnershipControls",
        "DeleteBucketOwnershipControls",
        "DeleteBucket",
    ];
    for who in ["bob", "erin", "frank"] {
        for op in owner_ops {
            assert_eq!(m.ask(Some(who), op, "", &[]), "AccessDenied", "{who} {op}");
        }
    }
    m.set_acl(&Acl::canned("alice", "public-read-write").unwrap());
    for op in owner_ops {
        assert_eq!(m.ask(Some("frank"), op, "", &[]), "AccessDenied", "{op}");
        assert_eq!(m.ask(None, op, "", &[]), "AccessDenied", "unsigned {op}");
    }
    assert_eq!(m.ask(Some("frank"), "PutObject", "k", &[]), "ok");
    // A policy that allows another account the policy operations: S3's
    // 405 (it has the permission, but is not the owner's account); the
    // ownership controls stay the owner's; DeleteBucket is the policy's
    // to give.
    m.set_policy(Some(
        r#"{"Statement":[{"Effect":"Allow","Principal":{"AWS":"frank"},"Action":"s3:*","Resource":"arn:aws:s3:::bkt"}]}"#,
    ));
    for op in ["PutBucketPolicy", "DeleteBucketPolicy", "GetBucketPolicy"] {
        assert_eq!(
            m.ask(Some("frank"), op, "", &[]),
            "MethodNotAllowed",
            "{op}"
        );
    }
    for op in [
        "PutBucketOwnershipControls",
        "DeleteBucketOwnershipControls",
    ] {
        assert_eq!(m.ask(Some("frank"), op, "", &[]), "AccessDenied", "{op}");
    }
    assert_eq!(m.ask(Some("frank"), "DeleteBucket", "", &[]), "ok");
    assert_eq!(m.ask(Some("frank"), "PutBucketVersioning", "", &[]), "ok");
}

#[test]
fn rule_the_owner_is_never_locked_out_of_the_policy() {
    let m = Model::new("lockout");
    m.set_policy(Some(
        r#"{"Statement":[{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]}]}"#,
    ));
    // An explicit Deny refuses the owner everything else...
    for (op, key) in [
        ("GetObject", "k"),
        ("PutObject", "k"),
        ("DeleteBucket", ""),
        ("PutBucketOwnershipControls", ""),
    ] {
        assert_eq!(m.ask(Some("alice"), op, key, &[]), "AccessDenied", "{op}");
    }
    // ...but never the policy operations, so that it can mend the policy.
    for op in ["GetBucketPolicy", "PutBucketPolicy", "DeleteBucketPolicy"] {
        assert_eq!(m.ask(Some("alice"), op, "", &[]), "ok", "{op}");
    }
    // A stored policy that no longer reads: only the policy operations.
    m.set_policy(Some("{broken"));
    assert_eq!(m.ask(Some("alice"), "GetObject", "k", &[]), "AccessDenied");
    assert_eq!(m.ask(Some("alice"), "DeleteBucketPolicy", "", &[]), "ok");
    assert_eq!(m.ask(Some("carol"), "GetObject", "k", &[]), "AccessDenied");
}

#[test]
fn rule_a_policy_allows_and_denies_beside_the_acl() {
    let m = Model::new("policy");
    m.set_policy(Some(
        r#"{"Statement":[
        {"Effect":"Allow","Principal":{"AWS":"frank"},"Action":["s3:GetObject","s3:PutObjectRetention"],"Resource":"arn:aws:s3:::bkt/*"},
        {"Effect":"Deny","Principal":{"AWS":"carol"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/secret/*"}]}"#,
    ));
    // Allowed by the policy alone.
    assert_eq!(m.ask(Some("frank"), "GetObject", "k", &[]), "ok");
    assert_eq!(m.ask(Some("frank"), "PutObjectRetention", "k", &[]), "ok");
    assert_eq!(m.ask(Some("frank"), "PutObject", "k", &[]), "AccessDenied");
    // The ACL still grants beside a policy, and a Deny wins over it.
    assert_eq!(m.ask(Some("carol"), "GetObject", "k", &[]), "ok");
    assert_eq!(
        m.ask(Some("carol"), "GetObject", "secret/k", &[]),
        "AccessDenied"
    );
    // Every action of a request: bob's WRITE lets it put, the policy does
    // not give it the retention a lock header asks for.
    assert_eq!(m.ask(Some("bob"), "PutObject", "k", &[]), "ok");
    assert_eq!(m.ask(Some("bob"), "PutObject", "k", LOCK), "AccessDenied");
}

/// The attack: unsigned writers, a public policy granting only
/// s3:PutObject, and ACL grantees setting COMPLIANCE until 2099.
#[test]
fn rule_lock_actions_are_never_granted_by_an_acl_or_a_public_grant() {
    let m = Model::new("lock");
    m.set_acl(&Acl::canned("alice", "public-read-write").unwrap());
    assert_eq!(m.ask(None, "PutObject", "k", &[]), "ok");
    assert_eq!(m.ask(None, "GetObject", "k", &[]), "ok");
    for headers in [LOCK, HOLD] {
        assert_eq!(m.ask(None, "PutObject", "k", headers), "AccessDenied");
        assert_eq!(
            m.ask(Some("frank"), "PutObject", "k", headers),
            "AccessDenied"
        );
    }
    for op in ["PutObjectRetention", "PutObjectLegalHold"] {
        assert_eq!(m.ask(None, op, "k", &[]), "AccessDenied", "{op}");
        assert_eq!(m.ask(Some("bob"), op, "k", &[]), "AccessDenied", "{op}");
        assert_eq!(m.ask(Some("erin"), op, "k", &[]), "AccessDenied", "{op}");
    }
    // A public policy granting only s3:PutObject.
    m.set_acl(&Acl::private("alice"));
    m.set_policy(Some(
        r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:PutObject","Resource":"arn:aws:s3:::bkt/*"}]}"#,
    ));
    assert_eq!(m.ask(None, "PutObject", "k", &[]), "ok");
    assert_eq!(m.ask(Some("frank"), "PutObject", "k", &[]), "ok");
    for headers in [LOCK, HOLD] {
        assert_eq!(m.ask(None, "PutObject", "k", headers), "AccessDenied");
        assert_eq!(
            m.ask(Some("frank"), "PutObject", "k", headers),
            "AccessDenied"
        );
    }
    assert_eq!(m.ask(None, "PutObjectRetention", "k", &[]), "AccessDenied");
    // A policy that grants the retention to everyone does let them.
    m.set_policy(Some(
        r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":["s3:PutObject","s3:PutObjectRetention"],"Resource":"arn:aws:s3:::bkt/*"}]}"#,
    ));
    assert_eq!(m.ask(None, "PutObject", "k", LOCK), "ok");
    assert_eq!(m.ask(None, "PutObject", "k", HOLD), "AccessDenied");
}

#[test]
fn rule_public_acl_grants_map_as_aws_lists() {
    let m = Model::new("public");
    m.set_acl(&Acl::canned("alice", "public-read").unwrap());
    for (op, key) in [
        ("ListObjectsV2", ""),
        ("HeadBucket", ""),
        ("GetObject", "k"),
        ("HeadObject", "k"),
    ] {
        assert_eq!(m.ask(None, op, key, &[]), "ok", "{op}");
    }
    assert_eq!(
        m.ask_q(None, "GetObject", "k", &[], Some("versionId=v1")),
        "ok"
    );
    for (op, key) in [
        ("PutObject", "k"),
        ("GetBucketAcl", ""),
        ("GetObjectTagging", "k"),
        ("GetBucketVersioning", ""),
        ("GetObjectRetention", "k"),
    ] {
        assert_eq!(m.ask(None, op, key, &[]), "AccessDenied", "{op}");
    }
    // A grant to all authenticated users is not a grant to the unsigned.
    m.set_acl(&Acl::canned("alice", "authenticated-read").unwrap());
    assert_eq!(m.ask(None, "GetObject", "k", &[]), "AccessDenied");
    assert_eq!(m.ask(Some("frank"), "GetObject", "k", &[]), "ok");
}

/// The attack: a `user` made buckets with `PUT /NAME?x-id=CreateBucket`.
/// The role is decided on the operation s3s parsed, whatever the shape.
#[test]
fn rule_create_bucket_is_decided_by_role() {
    let m = Model::new("create");
    for q in [None, Some("x-id=CreateBucket"), Some("foo=bar")] {
        assert_eq!(
            m.ask_q(Some("frank"), "CreateBucket", "", &[], q),
            "AccessDenied"
        );
        assert_eq!(m.ask_q(Some("plus"), "CreateBucket", "", &[], q), "ok");
        assert_eq!(m.ask_q(Some("admin"), "CreateBucket", "", &[], q), "ok");
        assert_eq!(m.ask_q(None, "CreateBucket", "", &[], q), "AccessDenied");
    }
    // Grants on an existing bucket of the name do not matter either.
    m.set_acl(&Acl::canned("alice", "public-read-write").unwrap());
    assert_eq!(
        m.ask(Some("frank"), "CreateBucket", "", &[]),
        "AccessDenied"
    );
    assert_eq!(m.ask(Some("frank"), "ListBuckets", "", &[]), "ok");
}
