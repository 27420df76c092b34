//! The policy reader and evaluator on documents of the shapes AWS
//! documents, and on every refusal the VersityGW suite checks.

use super::condition::Context;
use super::*;

fn known(k: &str) -> bool {
    matches!(k, "alice" | "bob" | "root")
}

fn parse(doc: &str) -> Result<Policy, PolicyError> {
    Policy::parse(doc, "photos", &known)
}

fn one(effect: &str, principal: &str, action: &str, resource: &str) -> String {
    format!(
        r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"{effect}","Principal":{principal},"Action":{action},"Resource":{resource}}}]}}"#
    )
}

fn cx(pairs: &[(&str, &str)]) -> Context {
    let mut c = Context::default();
    for (k, v) in pairs {
        c.set(k, *v);
    }
    c
}

const ALICE: Requester<'static> = Requester::Key("alice");

#[test]
fn public_read_policy_from_the_aws_guide() {
    // "Granting read-only permission to anonymous users" (AWS S3 user guide).
    let p = parse(
        r#"{"Version":"2012-10-17","Statement":[{"Sid":"PublicRead","Effect":"Allow",
        "Principal":"*","Action":["s3:GetObject","s3:GetObjectVersion"],
        "Resource":["arn:aws:s3:::photos/*"]}]}"#,
    )
    .unwrap();
    let none = Context::default();
    assert_eq!(
        p.decide(Requester::Anonymous, "s3:GetObject", "photos/a.jpg", &none),
        Decision::Allow
    );
    assert_eq!(
        p.decide(ALICE, "s3:GetObjectVersion", "photos/x/y", &none),
        Decision::Allow
    );
    assert_eq!(
        p.decide(Requester::Anonymous, "s3:PutObject", "photos/a.jpg", &none),
        Decision::NoMatch
    );
    assert_eq!(
        p.decide(Requester::Anonymous, "s3:ListBucket", "photos", &none),
        Decision::NoMatch
    );
    assert!(p.is_public());
}

#[test]
fn explicit_deny_wins_over_allow() {
    let p = parse(
        r#"{"Statement":[
        {"Effect":"Allow","Principal":{"AWS":["alice","bob"]},"Action":"s3:*",
         "Resource":["arn:aws:s3:::photos","arn:aws:s3:::photos/*"]},
        {"Effect":"Deny","Principal":{"AWS":"bob"},"Action":["s3:PutObject","s3:DeleteObject"],
         "Resource":"arn:aws:s3:::photos/private/*"}]}"#,
    )
    .unwrap();
    assert_eq!(p.version, Version::V2008);
    let none = Context::default();
    let bob = Requester::Key("bob");
    assert_eq!(
        p.decide(bob, "s3:PutObject", "photos/private/k", &none),
        Decision::Deny
    );
    assert_eq!(
        p.decide(bob, "s3:PutObject", "photos/public/k", &none),
        Decision::Allow
    );
    assert_eq!(
        p.decide(ALICE, "s3:PutObject", "photos/private/k", &none),
        Decision::Allow
    );
    assert_eq!(
        p.decide(Requester::Key("carol"), "s3:GetObject", "photos/k", &none),
        Decision::NoMatch
    );
    assert!(p.denies_anywhere(bob, "s3:DeleteObject"));
    assert!(!p.denies_anywhere(ALICE, "s3:DeleteObject"));
}

#[test]
fn wildcards_in_actions_and_resources() {
    let p = parse(&one(
        "Allow",
        r#""alice""#,
        r#"["s3:Get*","s3:List?ucket"]"#,
        r#"["arn:aws:s3:::photos/m?-obj/*","arn:aws:s3:::photos"]"#,
    ))
    .unwrap();
    let none = Context::default();
    assert_eq!(
        p.decide(ALICE, "s3:GetObjectTagging", "photos/my-obj/k", &none),
        Decision::Allow
    );
    assert_eq!(
        p.decide(ALICE, "s3:GetObject", "photos/myy-obj/k", &none),
        Decision::NoMatch
    );
    assert_eq!(
        p.decide(ALICE, "s3:ListBucket", "photos", &none),
        Decision::Allow
    );
    assert!(wildcard_match("a*b?c", "a-long-b-c"));
    assert!(!wildcard_match("a*b?c", "a-long-bc"));
    assert!(wildcard_match("*", ""));
}

#[test]
fn conditions_source_ip_prefix_and_dates() {
    let p = parse(
        r#"{"Version":"2012-10-17","Statement":[
        {"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::photos",
         "Condition":{"StringLike":{"s3:prefix":["home/${aws:username}/*","public/*"]},
                      "IpAddress":{"aws:SourceIp":["192.0.2.0/24","2001:db8::/32"]}}},
        {"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::photos/*",
         "Condition":{"DateGreaterThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"}}},
        {"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/*",
         "Condition":{"NotIpAddress":{"aws:SourceIp":"203.0.113.7"},"Bool":{"aws:SecureTransport":"false"}}}]}"#,
    )
    .unwrap();
    let list = |ip: &str, prefix: &str| {
        p.decide(
            Requester::Anonymous,
            "s3:ListBucket",
            "photos",
            &cx(&[
                ("aws:SourceIp", ip),
                ("s3:prefix", prefix),
                ("aws:username", "ann"),
            ]),
        )
    };
    assert_eq!(list("192.0.2.9", "public/x"), Decision::Allow);
    assert_eq!(list("192.0.2.9", "home/ann/docs"), Decision::Allow);
    assert_eq!(list("192.0.2.9", "home/bob/docs"), Decision::NoMatch);
    assert_eq!(list("198.51.100.1", "public/x"), Decision::NoMatch);
    assert_eq!(list("2001:db8::5", "public/"), Decision::Allow);
    let get = |ip: &str, now: &str| {
        p.decide(
            Requester::Anonymous,
            "s3:GetObject",
            "photos/k",
            &cx(&[
                ("aws:SourceIp", ip),
                ("aws:CurrentTime", now),
                ("aws:SecureTransport", "false"),
            ]),
        )
    };
    assert_eq!(get("192.0.2.1", "2026-11-26T10:00:00Z"), Decision::Allow);
    assert_eq!(
        get("203.0.113.7", "2026-11-26T10:00:00Z"),
        Decision::NoMatch
    );
    assert_eq!(
        get("192.0.2.1", "2031-01-01T00:00:00+01:00"),
        Decision::Deny
    );
}

#[test]
fn null_numeric_and_if_exists_operators() {
    let p = parse(
        r#"{"Statement":[{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket",
        "Resource":"arn:aws:s3:::photos","Condition":{"Null":{"s3:delimiter":"true"},
        "NumericLessThanEquals":{"s3:max-keys":"10"},"StringEqualsIfExists":{"aws:Referer":"ok"}}}]}"#,
    )
    .unwrap();
    let d = |c: &[(&str, &str)]| p.decide(Requester::Anonymous, "s3:ListBucket", "photos", &cx(c));
    assert_eq!(d(&[("s3:max-keys", "5")]), Decision::Allow);
    assert_eq!(d(&[("s3:max-keys", "11")]), Decision::NoMatch);
    assert_eq!(
        d(&[("s3:max-keys", "5"), ("s3:delimiter", "/")]),
        Decision::NoMatch
    );
    assert_eq!(
        d(&[("s3:max-keys", "5"), ("aws:Referer", "no")]),
        Decision::NoMatch
    );
    assert_eq!(d(&[]), Decision::NoMatch); // max-keys absent: no IfExists.
}

#[test]
fn refusals_with_the_suites_messages() {
    let msg = |doc: &str| parse(doc).unwrap_err().to_string();
    let first = "Policies must be valid JSON and the first byte must be '{'";
    for doc in ["false", "invalid_json", r#""Statement": []}"#, ""] {
        assert_eq!(msg(doc), first, "{doc}");
    }
    for doc in [
        "{true}",
        "{asdfsdaf",
        r#"{"Principal": "*" "#,
        r#"{"Statement":"x"}"#,
    ] {
        assert_eq!(msg(doc), "This policy contains invalid Json", "{doc}");
    }
    assert_eq!(msg("{}"), "Missing required field Statement");
    assert_eq!(
        msg(r#"{"Statement": []}"#),
        "Could not parse the policy: Statement is empty!"
    );
    let any = r#""arn:aws:s3:::photos/*""#;
    assert_eq!(
        msg(&one("invalid_effect", r#""*""#, r#""s3:*""#, any)),
        "Invalid effect: invalid_effect"
    );
    for p in [
        r#""""#,
        "[]",
        r#"{"AWS": ""}"#,
        r#"{"AWS": []}"#,
        r#"["*", "alice"]"#,
        r#"["nobody"]"#,
    ] {
        assert_eq!(
            msg(&one("Allow", p, r#""s3:*""#, any)),
            "Invalid principal in policy",
            "{p}"
        );
    }
    for a in [
        r#""""#,
        "[]",
        r#""invalid_action""#,
        r#"["s3:GetObject","ec2:Run"]"#,
        r#""s3:NoSuch*""#,
    ] {
        assert_eq!(
            msg(&one("Allow", r#""*""#, a, any)),
            "Policy has invalid action",
            "{a}"
        );
    }
    for r in [
        r#""""#,
        "[]",
        r#""arn:aws:iam:::photos""#,
        r#""arn:aws:s3:::/photos""#,
        r#""arn:aws:s3:::prefix-photos""#,
    ] {
        assert_eq!(
            msg(&one("Allow", r#""*""#, r#""s3:*""#, r)),
            "Policy has invalid resource",
            "{r}"
        );
    }
    let mismatch = "Action does not apply to any resource(s) in statement";
    for (a, r) in [
        (r#""s3:GetObject""#, r#""arn:aws:s3:::photos""#),
        (r#""s3:*Multipart*""#, r#""arn:aws:s3:::photos""#),
        (r#""s3:GetBucket*""#, any),
        (r#""s3:ListBucket""#, any),
    ] {
        assert_eq!(msg(&one("Allow", r#""*""#, a, r)), mismatch, "{a} {r}");
    }
    for v in ["", "invalid", "2012-10-16"] {
        let doc = format!(
            r#"{{"Version":"{v}","Statement":[{{"Effect":"Deny","Principal":"root","Action":"s3:GetObject","Resource":"arn:aws:s3:::photos/obj"}}]}}"#
        );
        assert_eq!(msg(&doc), "The policy must contain a valid version string");
    }
    let not = r#"{"Statement":[{"Effect":"Deny","NotPrincipal":"*","Action":"s3:*","Resource":"arn:aws:s3:::photos"}]}"#;
    assert!(msg(not).contains("NotPrincipal"));
}

#[test]
fn condition_refusals() {
    let with = |action: &str, cond: &str| {
        parse(&format!(r#"{{"Statement":[{{"Effect":"Allow","Principal":"*","Action":{action},"Resource":"arn:aws:s3:::photos/*","Condition":{cond}}}]}}"#))
            .unwrap_err()
            .to_string()
    };
    let get = r#""s3:GetObject""#;
    for (c, op) in [
        (
            r#"{"NotARealOperator":{"aws:SourceIp":"1.2.3.4/32"}}"#,
            "NotARealOperator",
        ),
        (
            r#"{"stringequals":{"aws:UserAgent":"foo"}}"#,
            "stringequals",
        ),
        (
            r#"{"NullIfExists":{"aws:UserAgent":"true"}}"#,
            "NullIfExists",
        ),
        (
            r#"{"ForSomeValues:StringEquals":{"aws:UserAgent":"foo"}}"#,
            "ForSomeValues:StringEquals",
        ),
    ] {
        assert_eq!(with(get, c), format!("Invalid Condition type : {op}"));
    }
    for c in [
        r#"{"StringEquals":{"s3:FakeKey":"foo"}}"#,
        r#"{"IpAddress":{"aws:NotARealIpKey":"10.0.0.0/8"}}"#,
    ] {
        assert_eq!(with(get, c), "Policy has an invalid condition key");
    }
    let mismatch = "Conditions do not apply to combination of actions and resources in statement";
    assert_eq!(
        with(get, r#"{"StringEquals":{"s3:prefix":"foo"}}"#),
        mismatch
    );
    assert_eq!(
        with(
            r#"["s3:GetObject","s3:PutObject"]"#,
            r#"{"StringEquals":{"s3:x-amz-acl":"public-read"}}"#
        ),
        mismatch
    );
    for c in [
        r#"{"IpAddress":{"aws:SourceIp":"not-an-ip"}}"#,
        r#"{"IpAddress":{"aws:SourceIp":"300.1.1.1/40"}}"#,
        r#"{"Null":{"aws:SourceIp":"true"}}"#,
    ] {
        assert_eq!(with(get, c), "Invalid IP address in Conditions");
    }
}

#[test]
fn size_and_nesting_bounded() {
    let big = format!(
        r#"{{"Statement":[],"Sid":"{}"}}"#,
        "x".repeat(MAX_POLICY_BYTES)
    );
    assert_eq!(parse(&big).unwrap_err(), PolicyError::TooLarge);
    let deep = format!("{{\"a\":{}1{}}}", "[".repeat(40), "]".repeat(40));
    assert_eq!(parse(&deep).unwrap_err(), PolicyError::TooDeep);
    // Brackets inside strings do not count.
    let quoted = format!(r#"{{"Sid":"{}","Statement":[]}}"#, "[[[[".repeat(10));
    assert_eq!(parse(&quoted).unwrap_err(), PolicyError::EmptyStatement);
}

#[test]
fn dates_read() {
    use condition::{date_nanos, rfc3339};
    assert_eq!(date_nanos("1970-01-01T00:00:01Z"), Some(1_000_000_000));
    assert_eq!(date_nanos("1970-01-01T01:00:00+01:00"), Some(0));
    assert_eq!(date_nanos("1.5"), Some(1_500_000_000));
    assert_eq!(date_nanos("2026-13-01T00:00:00Z"), None);
    assert_eq!(rfc3339(1_764_151_200), "2025-11-26T10:00:00Z");
    assert_eq!(
        date_nanos(&rfc3339(1_764_151_200)),
        Some(1_764_151_200_000_000_000)
    );
}
