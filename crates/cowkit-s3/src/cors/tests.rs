use super::*;

fn rule(origins: &[&str], methods: &[&str], headers: &[&str]) -> CORSRule {
    let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    CORSRule {
        allowed_origins: v(origins),
        allowed_methods: v(methods),
        allowed_headers: (!headers.is_empty()).then(|| v(headers)),
        ..Default::default()
    }
}

fn ask(origin: &str, method: &str, headers: &str) -> Preflight {
    Preflight {
        origin: origin.into(),
        method: method.into(),
        headers: request_headers(headers).unwrap(),
    }
}

#[test]
fn rules_checked_as_s3_checks_them() {
    assert_eq!(check_rules(&[]).unwrap_err().code, "MalformedXML");
    assert_eq!(
        check_rules(&[rule(&[], &["GET"], &[])]).unwrap_err().code,
        "MalformedXML"
    );
    assert_eq!(
        check_rules(&[rule(&["*"], &[], &[])]).unwrap_err().code,
        "MalformedXML"
    );
    let e = check_rules(&[rule(&["http://a", "https://*:7070/*"], &["GET"], &[])]).unwrap_err();
    assert_eq!(
        e.message,
        "AllowedOrigin \"https://*:7070/*\" can not have more than one wildcard."
    );
    let e = check_rules(&[rule(&["*"], &["GET", "get"], &[])]).unwrap_err();
    assert_eq!(
        e.message,
        "Found unsupported HTTP method in CORS config. Unsupported method is get"
    );
    let e = check_rules(&[rule(&["*"], &["GET"], &["X-Amz-Date", "Bad/Header"])]).unwrap_err();
    assert_eq!(
        e.message,
        "AllowedHeader \"Bad/Header\" contains invalid character."
    );
    check_rules(&[rule(
        &["*"],
        &["GET", "PUT", "POST", "DELETE", "HEAD"],
        &["x-amz-*"],
    )])
    .unwrap();
}

#[test]
fn preflight_headers_read_as_s3_reads_them() {
    let h = |pairs: &[(&'static str, &str)]| {
        let mut m = http::HeaderMap::new();
        for (k, v) in pairs {
            m.insert(*k, v.parse().unwrap());
        }
        m
    };
    let e = Preflight::from_headers(&h(&[("access-control-request-method", "GET")])).unwrap_err();
    assert_eq!(e.code, "BadRequest");
    let e = Preflight::from_headers(&h(&[
        ("origin", "o"),
        ("access-control-request-method", "Get"),
    ]))
    .unwrap_err();
    assert_eq!(e.message, "Invalid Access-Control-Request-Method: Get");
    let e = Preflight::from_headers(&h(&[
        ("origin", "o"),
        ("access-control-request-method", "GET"),
        (
            "access-control-request-headers",
            "Content-Encoding, Bad/Header",
        ),
    ]))
    .unwrap_err();
    assert_eq!(
        e.message,
        "Access-Control-Request-Headers \" Bad/Header\" contains invalid character."
    );
    let p = Preflight::from_headers(&h(&[
        ("origin", "o"),
        ("access-control-request-method", "PUT"),
        ("access-control-request-headers", "X-Amz-Date, Content-Type"),
    ]))
    .unwrap();
    assert_eq!(p.headers, ["X-Amz-Date", "Content-Type"]);
}

#[test]
fn first_matching_rule_answers() {
    let mut first = rule(
        &["http://example.com"],
        &["GET", "HEAD"],
        &["X-Amz-Date", "X-Amz-Content-Sha256"],
    );
    first.expose_headers = Some(vec!["Content-Type".into()]);
    first.max_age_seconds = Some(100);
    let rules = [
        first,
        rule(&["*"], &["HEAD"], &["X-Amz-Meta-Something"]),
        rule(&["http://www*"], &["GET"], &["x-amz-*"]),
    ];
    let a = allow(&rules, &ask("http://example.com", "GET", "X-Amz-Date")).unwrap();
    assert_eq!(a.origin, "http://example.com");
    assert!(a.credentials);
    assert_eq!(a.methods, "GET, HEAD");
    assert_eq!(a.headers, "x-amz-date");
    assert_eq!(a.expose, "Content-Type, ETag");
    assert_eq!(a.max_age, Some(100));
    let a = allow(&rules, &ask("hello.com", "HEAD", "")).unwrap();
    assert_eq!(
        (a.origin.as_str(), a.credentials, a.expose.as_str()),
        ("*", false, "ETag")
    );
    let a = allow(&rules, &ask("http://www.x.com", "GET", "X-Amz-Meta-A")).unwrap();
    assert_eq!(a.headers, "x-amz-meta-a");
    // Refused: origin, method, one header of several, a wildcard that is not met.
    assert!(allow(&rules, &ask("http://other.net", "GET", "")).is_none());
    assert!(allow(&rules, &ask("http://example.com", "PUT", "")).is_none());
    assert!(allow(
        &rules,
        &ask("http://example.com", "GET", "X-Amz-Date,Extra")
    )
    .is_none());
    assert!(allow(&rules, &ask("http://www.x.com", "GET", "X-Amz")).is_none());
}

#[test]
fn wildcards_match_one_run() {
    assert!(wildcard_match("*", ""));
    assert!(wildcard_match("http://origin*", "http://origin.com"));
    assert!(!wildcard_match("http://origin*", "https://origin.com"));
    assert!(wildcard_match("a*a", "aa"));
    assert!(!wildcard_match("a*a", "a"));
    assert!(wildcard_match("x", "x"));
}
