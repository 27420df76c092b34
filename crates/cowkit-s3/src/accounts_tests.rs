use super::*;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};

fn p(ak: &str, role: Role) -> Principal {
    Principal {
        access_key: ak.into(),
        role,
    }
}

fn hdrs(pairs: &[(&str, &str)]) -> http::HeaderMap {
    let mut h = http::HeaderMap::new();
    for (k, v) in pairs {
        h.insert(
            http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            http::HeaderValue::from_str(v).unwrap(),
        );
    }
    h
}

fn t(method: &str, uri: &str, h: &[(&str, &str)]) -> Target {
    target(&method.parse().unwrap(), &uri.parse().unwrap(), &hdrs(h))
}

#[test]
fn store_file_parsed_and_checked() {
    let path = Path::new("/x/accounts.json");
    let ok = br#"{"accounts":[{"access":"alice","secret":"s/3+cr=t","role":"user","userID":5},
        {"access":"bob","secret":"x","role":"userplus"},{"access":"root2","secret":"y","role":"admin"}]}"#;
    let list = parse(ok, path).unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[0].role, Role::User);
    assert_eq!(list[0].user_id, 5);
    assert_eq!(list[1].role, Role::UserPlus);
    assert_eq!(list[1].group_id, 0);
    for bad in [
        &br#"{"accounts":[{"access":"a","secret":"x","role":"superuser"}]}"#[..],
        br#"{"accounts":[{"access":"a","secret":"x","role":"user"},{"access":"a","secret":"y","role":"user"}]}"#,
        br#"{"accounts":[{"access":"a b","secret":"x","role":"user"}]}"#,
        br#"{"accounts":[{"access":"","secret":"x","role":"user"}]}"#,
        br#"{"accounts":[{"access":"a","secret":"","role":"user"}]}"#,
        br#"{"accounts":[{"access":"a","secret":"with space","role":"user"}]}"#,
        br#"{"accounts":[{"access":"a","role":"user"}]}"#,
        br#"{"accounts":[],"admins":[]}"#,
        b"not json",
    ] {
        let e = parse(bad, path).unwrap_err();
        assert!(matches!(e, AccountsError::Corrupt { .. }), "{e}");
        assert!(e.to_string().contains("/x/accounts.json"), "{e}");
    }
    // A secret never shows in Debug output.
    assert!(!format!("{:?}", list[0]).contains("s/3+cr=t"));
}

#[test]
fn access_and_secret_rules() {
    assert!(check_access("test-user-AbC123_.~+=@").is_ok());
    for bad in ["", "a:b", "a/b", "a b", "ä", "a?b", &"x".repeat(129)] {
        assert!(check_access(bad).is_err(), "{bad:?}");
    }
    assert!(check_secret("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY").is_ok());
    for bad in ["", "a b", "tab\t", &"x".repeat(257)] {
        assert!(check_secret(bad).is_err(), "{bad:?}");
    }
    assert_eq!(Role::parse("userplus"), Some(Role::UserPlus));
    assert_eq!(Role::parse("Admin"), None);
    for r in [Role::Admin, Role::User, Role::UserPlus] {
        assert_eq!(Role::parse(r.as_str()), Some(r));
    }
}

#[test]
fn targets_of_requests() {
    assert_eq!(t("GET", "/", &[]), Target::ListBuckets);
    let bucket = |b: &str, s: Option<&str>| Target::Bucket {
        bucket: b.into(),
        source: s.map(str::to_string),
    };
    // A PUT of a bucket is not told apart by its shape: which operation
    // it is, s3s says (CreateBucket or PutBucketTagging alike).
    assert_eq!(t("PUT", "/b", &[]), bucket("b", None));
    assert_eq!(t("PUT", "/b/", &[]), bucket("b", None));
    assert_eq!(t("PUT", "/b?x-id=CreateBucket", &[]), bucket("b", None));
    assert_eq!(t("PUT", "/b?tagging", &[]), bucket("b", None));
    assert_eq!(t("GET", "/b/k", &[]), bucket("b", None));
    assert_eq!(t("DELETE", "/b", &[]), bucket("b", None));
    assert_eq!(
        t(
            "PUT",
            "/b/k",
            &[("x-amz-copy-source", "/src/a/b?versionId=1")]
        ),
        bucket("b", Some("src"))
    );
    assert_eq!(
        t("PUT", "/b/k", &[("x-amz-copy-source", "sr%63/a")]),
        bucket("b", Some("src"))
    );
    // Only a PUT copies.
    assert_eq!(
        t("GET", "/b/k", &[("x-amz-copy-source", "src/a")]),
        bucket("b", None)
    );
}

#[test]
fn roles_decide() {
    // Only userplus and admin create buckets; what an account may do in a
    // bucket is the bucket's to say (authz: owner, ACL, policy).
    assert!(!may_create_buckets(&p("alice", Role::User)));
    assert!(may_create_buckets(&p("bob", Role::UserPlus)));
    assert!(may_create_buckets(&p("carol", Role::Admin)));
}

fn key_pair() -> Option<(String, String)> {
    Some(("root".into(), "rootsecret".into()))
}

fn acc(ak: &str, role: Role) -> Account {
    Account {
        access: ak.into(),
        secret: format!("{ak}-secret"),
        role,
        user_id: 0,
        group_id: 0,
        project_id: 0,
    }
}

#[test]
fn store_round_trip() {
    let d = cowkit_testutil::TempDir::new().unwrap();
    let a = Accounts::open_dir(&d.path().join("acc"), key_pair(), false).unwrap();
    assert_eq!(a.find("root").unwrap().unwrap().role, Role::Admin);
    assert!(a.find("alice").unwrap().is_none());
    a.create(acc("alice", Role::User)).unwrap();
    a.create(acc("bob", Role::UserPlus)).unwrap();
    assert!(matches!(
        a.create(acc("alice", Role::Admin)),
        Err(AccountsError::Exists { .. })
    ));
    assert!(matches!(
        a.create(acc("root", Role::User)),
        Err(AccountsError::Exists { .. })
    ));
    assert!(matches!(
        a.create(acc("bad key", Role::User)),
        Err(AccountsError::Invalid(_))
    ));
    // Another handle on the same directory (another gateway) sees it.
    let b = Accounts::open_dir(&d.path().join("acc"), key_pair(), false).unwrap();
    assert_eq!(b.find("alice").unwrap().unwrap().secret, "alice-secret");
    b.update(
        "alice",
        Update {
            role: Some(Role::UserPlus),
            secret: Some("new".into()),
            ..Update::default()
        },
    )
    .unwrap();
    assert_eq!(
        a.principal("alice").unwrap(),
        Some(p("alice", Role::UserPlus))
    );
    a.delete("bob").unwrap();
    assert!(matches!(
        a.delete("bob"),
        Err(AccountsError::NotFound { .. })
    ));
    assert!(matches!(
        a.update("bob", Update::default()),
        Err(AccountsError::NotFound { .. })
    ));
    assert_eq!(a.load().unwrap().len(), 1);
    let mode = std::fs::metadata(a.path()).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "the file holds secrets: {mode:o}");
}

#[test]
fn store_others_can_write_is_refused() {
    let d = cowkit_testutil::TempDir::new().unwrap();
    let dir = d.path().join("acc");
    let a = Accounts::open_dir(&dir, key_pair(), false).unwrap();
    a.create(acc("alice", Role::User)).unwrap();
    std::fs::set_permissions(a.path(), std::fs::Permissions::from_mode(0o666)).unwrap();
    let e = a.find("alice").unwrap_err();
    assert!(matches!(e, AccountsError::Untrusted { .. }), "{e}");
    assert!(e.to_string().contains("accounts.json"), "{e}");
    // The root key pair does not depend on the file.
    assert!(a.find("root").unwrap().is_some());
    assert!(Accounts::open_dir(&dir, key_pair(), false).is_err());
    std::fs::set_permissions(a.path(), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let e = Accounts::open_dir(&dir, key_pair(), false).unwrap_err();
    assert!(matches!(e, AccountsError::Untrusted { .. }), "{e}");
}

#[test]
fn store_size_is_bounded() {
    let d = cowkit_testutil::TempDir::new().unwrap();
    let dir = d.path().join("acc");
    let a = Accounts::open_dir(&dir, key_pair(), false).unwrap();
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(a.path())
        .unwrap();
    f.set_len(MAX_FILE + 1).unwrap();
    assert!(matches!(
        a.find("alice"),
        Err(AccountsError::TooLarge { .. })
    ));
}
