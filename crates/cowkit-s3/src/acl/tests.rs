//! ACL grants from canned ACLs, headers and documents, and what they allow.

use super::*;

fn known(k: &str) -> bool {
    matches!(k, "alice" | "bob")
}

const ALICE: Requester<'static> = Requester::Key("alice");

#[test]
fn canned_acls() {
    let p = Acl::canned("own", "private").unwrap();
    assert_eq!(p, Acl::private("own"));
    assert!(p.allows(Requester::Key("own"), Permission::WriteAcp));
    assert!(!p.allows(ALICE, Permission::Read));
    let pr = Acl::canned("own", "public-read").unwrap();
    assert!(pr.allows(Requester::Anonymous, Permission::Read));
    assert!(!pr.allows(Requester::Anonymous, Permission::Write));
    let prw = Acl::canned("own", "public-read-write").unwrap();
    assert!(prw.is_public(Permission::Write));
    assert!(!prw.is_public(Permission::ReadAcp));
    let ar = Acl::canned("own", "authenticated-read").unwrap();
    assert!(ar.allows(ALICE, Permission::Read));
    assert!(!ar.allows(Requester::Anonymous, Permission::Read));
    assert_eq!(
        Acl::canned("own", "invalid").unwrap_err().code(),
        "InvalidArgument"
    );
    assert_eq!(
        Acl::canned("own", "log-delivery-write").unwrap_err().code(),
        "NotImplemented"
    );
}

#[test]
fn grant_headers_in_both_forms() {
    let h = GrantHeaders {
        full_control: Some(r#"id="bob""#.into()),
        read: Some(format!(r#"alice, uri="{ALL_USERS_URI}",alice"#)),
        write_acp: Some("alice".into()),
        ..Default::default()
    };
    let acl = Acl::from_headers("own", &h, &known).unwrap();
    assert_eq!(acl.grants.len(), 5, "{acl:?}"); // owner, bob, alice, everyone, alice
    assert!(acl.allows(Requester::Key("bob"), Permission::Write));
    assert!(acl.allows(ALICE, Permission::Read));
    assert!(acl.allows(ALICE, Permission::WriteAcp));
    assert!(!acl.allows(ALICE, Permission::Write));
    assert!(acl.is_public(Permission::Read));
    let unknown = GrantHeaders {
        read: Some("mallory".into()),
        ..Default::default()
    };
    assert_eq!(
        Acl::from_headers("own", &unknown, &known).unwrap_err(),
        AclError::InvalidId
    );
    let email = GrantHeaders {
        read: Some(r#"emailAddress="a@b""#.into()),
        ..Default::default()
    };
    assert_eq!(
        Acl::from_headers("own", &email, &known).unwrap_err().code(),
        "NotImplemented"
    );
    assert!(!GrantHeaders {
        read: Some(String::new()),
        ..Default::default()
    }
    .any());
}

fn grant(kind: &str, id: Option<&str>, uri: Option<&str>, perm: &str) -> s3s::dto::Grant {
    s3s::dto::Grant {
        grantee: Some(s3s::dto::Grantee {
            display_name: None,
            email_address: None,
            id: id.map(str::to_string),
            type_: s3s::dto::Type::from(kind.to_string()),
            uri: uri.map(str::to_string),
        }),
        permission: Some(s3s::dto::Permission::from(perm.to_string())),
    }
}

fn doc(grants: Vec<s3s::dto::Grant>, owner: Option<&str>) -> s3s::dto::AccessControlPolicy {
    s3s::dto::AccessControlPolicy {
        grants: Some(grants),
        owner: Some(s3s::dto::Owner {
            display_name: None,
            id: owner.map(str::to_string),
        }),
    }
}

#[test]
fn access_control_policy_documents() {
    let ok = doc(
        vec![
            grant("CanonicalUser", Some("alice"), None, "READ"),
            grant("Group", None, Some(ALL_USERS_URI), "READ"),
            grant("Group", Some("all-users"), None, "WRITE"),
        ],
        Some("own"),
    );
    let acl = Acl::from_document("own", &ok, &known).unwrap();
    assert_eq!(acl.grants.len(), 4);
    assert!(acl.is_public(Permission::Write));
    let (owner, out) = acl.to_s3s();
    assert_eq!(owner.id.as_deref(), Some("own"));
    assert_eq!(out[2].grantee.as_ref().unwrap().type_.as_str(), "Group");
    assert_eq!(
        out[2].grantee.as_ref().unwrap().id.as_deref(),
        Some(ALL_USERS_ID)
    );
    let bad = |g: s3s::dto::Grant, owner: Option<&str>| {
        Acl::from_document("own", &doc(vec![g], owner), &known).unwrap_err()
    };
    let alice = || grant("CanonicalUser", Some("alice"), None, "READ");
    assert_eq!(
        bad(
            grant("CanonicalUser", Some("alice"), None, "invalid_permission"),
            Some("own")
        ),
        AclError::Malformed
    );
    assert_eq!(
        bad(
            grant("invalid_type", Some("alice"), None, "READ"),
            Some("own")
        ),
        AclError::Malformed
    );
    assert_eq!(
        bad(grant("CanonicalUser", Some(""), None, "READ"), Some("own")),
        AclError::Malformed
    );
    assert_eq!(bad(alice(), None), AclError::Malformed);
    assert_eq!(bad(alice(), Some("")), AclError::Malformed);
    assert_eq!(bad(alice(), Some("someone-else")), AclError::InvalidId);
    assert_eq!(
        bad(
            grant("CanonicalUser", Some("mallory"), None, "READ"),
            Some("own")
        ),
        AclError::InvalidId
    );
    let many = doc((0..=MAX_GRANTS).map(|_| alice()).collect(), Some("own"));
    assert_eq!(
        Acl::from_document("own", &many, &known).unwrap_err(),
        AclError::TooManyGrants
    );
}

#[test]
fn ownership_of_a_new_bucket() {
    use Ownership::*;
    assert_eq!(
        Ownership::for_new_bucket(None, None),
        Some(BucketOwnerEnforced)
    );
    assert_eq!(
        Ownership::for_new_bucket(None, Some("private")),
        Some(BucketOwnerPreferred)
    );
    assert_eq!(
        Ownership::for_new_bucket(Some("ObjectWriter"), Some("public-read")),
        Some(ObjectWriter)
    );
    assert_eq!(Ownership::for_new_bucket(Some("nonsense"), None), None);
    for o in [BucketOwnerEnforced, BucketOwnerPreferred, ObjectWriter] {
        assert_eq!(Ownership::parse(o.name()), Some(o));
    }
}
