use super::*;

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn doc(conditions: &str) -> String {
    b64(&format!(
        r#"{{"expiration":"2100-01-01T00:00:00.000Z","conditions":{conditions}}}"#
    ))
}

#[test]
fn policy_documents_refused_with_aws_messages() {
    use PolicyError as E;
    let cases: Vec<(String, PolicyError)> = vec![
        (String::new(), E::Empty),
        ("invalid_base64".into(), E::Base64),
        (b64("invalid json"), E::Json),
        (b64(r#"{"conditions": []}"#), E::MissingExpiration),
        (b64(r#"{"expiration": true, "conditions": []}"#), E::Json),
        (
            b64(r#"{"expiration": "invalid", "conditions": []}"#),
            E::InvalidExpiration("invalid".into()),
        ),
        (
            b64(r#"{"expiration": "2100-01-01T00:00:00Z"}"#),
            E::MissingConditions,
        ),
        (
            b64(r#"{"expiration": "2100-01-01T00:00:00Z", "conditions": true}"#),
            E::InvalidConditions,
        ),
        (doc("[true]"), E::InvalidCondition),
        (
            b64(r#"{"conditions": [], "expiration": "2100-01-01T00:00:00Z", "extra": "field"}"#),
            E::Unexpected("extra".into()),
        ),
        (doc("[[]]"), E::MissingOperation),
        (
            doc(r#"[["invalid", "$a", "b"]]"#),
            E::UnknownOperation("invalid".into()),
        ),
        (
            doc(r#"[["eq", "$a", "b", "c"]]"#),
            E::ArgumentCount("eq".into()),
        ),
        (doc(r#"[["eq", false, "b"]]"#), E::Json),
        (doc(r#"[["eq", "$a", true]]"#), E::Json),
        (doc(r#"[["content-length-range", 12, false]]"#), E::Json),
        (doc(r#"[["content-length-range", "1", "14"]]"#), E::Json),
        (doc(r#"[{"expires": "a", "cache": "b"}]"#), E::OneProperty),
        (doc(r#"[{"expires": true}]"#), E::SimpleValue),
    ];
    for (policy, want) in cases {
        assert_eq!(Policy::parse(&policy), Err(want.clone()), "{policy}");
    }
    assert_eq!(
        PolicyError::Unexpected("extra".into()).to_string(),
        "Invalid Policy: Unexpected: \"extra\""
    );
}

#[test]
fn expiration_formats() {
    assert_eq!(parse_expiration("1970-01-02T00:00:01Z"), Some(86_401));
    assert_eq!(parse_expiration("1970-01-02T00:00:01.123Z"), Some(86_401));
    for bad in [
        "1970-01-02",
        "1970-01-02T00:00:01",
        "1970-01-02T00:00:01.Z",
        "x",
    ] {
        assert_eq!(parse_expiration(bad), None, "{bad}");
    }
}

/// The form of the tests below: `bucket` from the URL, then the fields.
fn check(conditions: &str, fields: &[(&str, &str)], now: i64) -> Result<(), Violation> {
    let p = Policy::parse(&doc(conditions)).unwrap();
    let value = |f: &str| -> String {
        if f == "bucket" {
            return "bkt".into();
        }
        fields
            .iter()
            .find(|(k, _)| *k == f)
            .map(|(_, v)| v.to_string())
            .unwrap_or_default()
    };
    let names: Vec<&str> = fields.iter().map(|(k, _)| *k).collect();
    p.check(now, &value, &names)
}

#[test]
fn policy_conditions() {
    let ok = |c: &str, f: &[(&str, &str)]| assert_eq!(check(c, f, 0), Ok(()), "{c}");
    ok(
        r#"[["eq", "$Content-Type", "text/plain"]]"#,
        &[("content-type", "text/plain")],
    );
    ok(
        r#"[["starts-with", "$x-amz-meta-env", "prod"]]"#,
        &[("x-amz-meta-env", "production")],
    );
    ok(
        r#"[["starts-with", "$x-amz-meta-tag", ""]]"#,
        &[("x-amz-meta-tag", "x")],
    );
    ok(
        r#"[{"content-type": "image/png"}]"#,
        &[("content-type", "image/png")],
    );
    ok(r#"[["eq", "$bucket", "bkt"]]"#, &[]);
    ok(
        "[]",
        &[
            ("x-ignore-me", "v"),
            ("policy", "p"),
            ("x-amz-signature", "s"),
        ],
    );
    ok(
        r#"[["starts-with", "$content-type", "text/"]]"#,
        &[("content-type", "text/plain, text/html")],
    );
    // An absent field is empty.
    ok(r#"[["starts-with", "$content-type", ""]]"#, &[]);
    let failed = |c: &str, f: &[(&str, &str)], echo: &str| {
        assert_eq!(check(c, f, 0), Err(Violation::Failed(echo.into())), "{c}");
    };
    failed(
        r#"[["eq","$content-type","text/plain"]]"#,
        &[("content-type", "image/jpeg")],
        r#"["eq","$content-type","text/plain"]"#,
    );
    failed(
        r#"[["eq", "$bucket", "other"]]"#,
        &[],
        r#"["eq","$bucket","other"]"#,
    );
    failed(
        r#"[{"content-type": "application/xml"}]"#,
        &[("content-type", "text/html")],
        r#"["eq", "$content-type", "application/xml"]"#,
    );
    failed(
        r#"[["starts-with", "$content-type", "text/"]]"#,
        &[("content-type", "text/plain, image/jpeg")],
        r#"["starts-with","$content-type","text/"]"#,
    );
    // Without its `$`, a condition names no field and fails.
    failed(
        r#"[["eq", "content-type", "binary/octet-stream"]]"#,
        &[],
        r#"["eq","content-type","binary/octet-stream"]"#,
    );
    assert_eq!(
        check("[]", &[("x-amz-meta-custom", "v")], 0),
        Err(Violation::Extra("x-amz-meta-custom".into()))
    );
    assert_eq!(
        check("[]", &[("bucket", "bkt")], 0),
        Err(Violation::Extra("bucket".into()))
    );
    assert_eq!(
        Violation::Extra("bucket".into()).to_string(),
        "Invalid according to Policy: Extra input fields: bucket"
    );
}

#[test]
fn expired_policy() {
    let p = Policy::parse(&doc("[]")).unwrap();
    assert_eq!(
        p.check(p.expiration, &|_| String::new(), &[]),
        Err(Violation::Expired)
    );
    assert_eq!(p.check(p.expiration - 1, &|_| String::new(), &[]), Ok(()));
}

#[test]
fn length_ranges_intersect() {
    let p = Policy::parse(&doc(
        r#"[["content-length-range", 1, 100], ["content-length-range", 10, 1000]]"#,
    ))
    .unwrap();
    assert_eq!(p.length_range(), (10, 100));
    assert_eq!(
        Policy::parse(&doc("[]")).unwrap().length_range(),
        (0, u64::MAX)
    );
}
