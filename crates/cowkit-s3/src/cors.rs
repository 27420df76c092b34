//! Bucket CORS as S3 applies it: a configuration's rules checked
//! ([`check_rules`]), a preflight's headers read ([`Preflight::from_headers`])
//! and matched against the rules ([`allow`]), first matching rule first.
//! Pure functions: the gateway stores the rules (`gateway::config`), the
//! handler answers `OPTIONS` and adds the headers to actual requests.

use http::StatusCode;
use s3s::dto::CORSRule;

use crate::refusal::Refusal;

/// The bucket record holding the rules (`meta/<bucket>/cors.json`).
pub const RECORD: &str = "cors.json";
/// The largest CORS document taken (S3's limit: 64 KB).
pub const MAX_DOCUMENT: u64 = 64 * 1024;
/// The largest record read back (the rules of a document of at most
/// [`MAX_DOCUMENT`] bytes, as JSON, with room to spare).
pub const MAX_RECORD: u64 = 4 * MAX_DOCUMENT;
/// The `Vary` header of every CORS answer.
pub const VARY: &str = "Origin, Access-Control-Request-Headers, Access-Control-Request-Method";
/// The methods a rule may allow (case-sensitive, as on S3).
const METHODS: [&str; 5] = ["GET", "PUT", "POST", "DELETE", "HEAD"];

fn malformed() -> Refusal {
    Refusal::new(
        StatusCode::BAD_REQUEST,
        "MalformedXML",
        "The XML you provided was not well-formed or did not validate against our published schema.",
    )
}

/// Whether `h` is an HTTP token (RFC 9110 `tchar`s; `*` is one).
fn is_token(h: &str) -> bool {
    !h.is_empty()
        && h.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Check a configuration's rules as S3 does: at least one rule, each with
/// origins (at most one `*` in each) and methods (GET, PUT, POST, DELETE,
/// HEAD), headers that are tokens.
pub fn check_rules(rules: &[CORSRule]) -> Result<(), Refusal> {
    if rules.is_empty() {
        return Err(malformed());
    }
    for r in rules {
        if r.allowed_origins.is_empty() || r.allowed_methods.is_empty() {
            return Err(malformed());
        }
        if let Some(o) = r
            .allowed_origins
            .iter()
            .find(|o| o.matches('*').count() > 1)
        {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                format!("AllowedOrigin \"{o}\" can not have more than one wildcard."),
            ));
        }
        if let Some(m) = r
            .allowed_methods
            .iter()
            .find(|m| !METHODS.contains(&m.as_str()))
        {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                format!("Found unsupported HTTP method in CORS config. Unsupported method is {m}"),
            ));
        }
        let headers = r.allowed_headers.iter().chain(r.expose_headers.iter());
        if let Some(h) = headers.flatten().find(|h| !is_token(h)) {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "InvalidRequest",
                format!("AllowedHeader \"{h}\" contains invalid character."),
            ));
        }
    }
    Ok(())
}

/// What a CORS request asks: its origin, method and (preflight) headers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preflight {
    /// `Origin`.
    pub origin: String,
    /// `Access-Control-Request-Method` (for an actual request: its method).
    pub method: String,
    /// `Access-Control-Request-Headers`, as sent.
    pub headers: Vec<String>,
}

impl Preflight {
    /// Read an `OPTIONS` request's headers, refusing what S3 refuses: no
    /// `Origin`, a method that is not one of the five, a header that is
    /// not a token.
    pub fn from_headers(h: &http::HeaderMap) -> Result<Preflight, Refusal> {
        let get = |n: &str| {
            h.get(n)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .unwrap_or_default()
        };
        let origin = get("origin");
        if origin.is_empty() {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                "Insufficient information. Origin request header needed.",
            ));
        }
        let method = get("access-control-request-method");
        if !METHODS.contains(&method.as_str()) {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "BadRequest",
                format!("Invalid Access-Control-Request-Method: {method}"),
            ));
        }
        let headers = request_headers(&get("access-control-request-headers"))?;
        Ok(Preflight {
            origin,
            method,
            headers,
        })
    }
}

/// `Access-Control-Request-Headers` split at commas; each must be a token
/// (the refusal quotes it as sent).
pub fn request_headers(v: &str) -> Result<Vec<String>, Refusal> {
    if v.is_empty() {
        return Ok(Vec::new());
    }
    v.split(',')
        .map(|h| {
            let t = h.trim();
            if is_token(t) {
                Ok(t.to_string())
            } else {
                Err(Refusal::new(
                    StatusCode::BAD_REQUEST,
                    "BadRequest",
                    format!("Access-Control-Request-Headers \"{h}\" contains invalid character."),
                ))
            }
        })
        .collect()
}

/// `pattern` with at most one `*` (any run of bytes) matching `s`.
pub fn wildcard_match(pattern: &str, s: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == s,
        Some((head, tail)) => {
            s.len() >= head.len() + tail.len() && s.starts_with(head) && s.ends_with(tail)
        }
    }
}

/// The headers of an allowed CORS request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allowed {
    /// `Access-Control-Allow-Origin`: the origin, or `*` for a rule allowing any.
    pub origin: String,
    /// `Access-Control-Allow-Credentials`: `false` with `*`.
    pub credentials: bool,
    /// `Access-Control-Allow-Methods`: the rule's methods.
    pub methods: String,
    /// `Access-Control-Allow-Headers`: the requested headers, lowercase.
    pub headers: String,
    /// `Access-Control-Expose-Headers`: the rule's, and `ETag`.
    pub expose: String,
    /// `Access-Control-Max-Age`.
    pub max_age: Option<i32>,
}

impl Allowed {
    /// The answer's headers (empty values left out).
    pub fn header_pairs(&self) -> Vec<(&'static str, String)> {
        let mut v = vec![
            ("access-control-allow-origin", self.origin.clone()),
            ("access-control-allow-methods", self.methods.clone()),
            ("access-control-allow-headers", self.headers.clone()),
            ("access-control-expose-headers", self.expose.clone()),
            (
                "access-control-allow-credentials",
                self.credentials.to_string(),
            ),
            ("vary", VARY.to_string()),
        ];
        if let Some(a) = self.max_age {
            v.push(("access-control-max-age", a.to_string()));
        }
        v.retain(|(_, val)| !val.is_empty());
        v
    }
}

/// Whether one rule allows the request; `Some(wildcard)` when it does
/// (`wildcard`: through an origin of `*`).
fn rule_allows(r: &CORSRule, p: &Preflight) -> Option<bool> {
    let o = r
        .allowed_origins
        .iter()
        .find(|o| wildcard_match(o, &p.origin))?;
    if !r.allowed_methods.contains(&p.method) {
        return None;
    }
    let allowed = r.allowed_headers.as_deref().unwrap_or_default();
    let every = p.headers.iter().all(|h| {
        let h = h.to_ascii_lowercase();
        allowed
            .iter()
            .any(|a| wildcard_match(&a.to_ascii_lowercase(), &h))
    });
    every.then_some(o == "*")
}

/// The first rule allowing the request, as S3 answers it; `None`: refused.
pub fn allow(rules: &[CORSRule], p: &Preflight) -> Option<Allowed> {
    rules.iter().find_map(|r| {
        let wildcard = rule_allows(r, p)?;
        let mut expose: Vec<String> = r.expose_headers.clone().unwrap_or_default();
        if !expose.iter().any(|e| e.eq_ignore_ascii_case("etag")) {
            expose.push("ETag".into());
        }
        Some(Allowed {
            origin: if wildcard {
                "*".into()
            } else {
                p.origin.clone()
            },
            credentials: !wildcard,
            methods: r.allowed_methods.join(", "),
            headers: p
                .headers
                .iter()
                .map(|h| h.to_ascii_lowercase())
                .collect::<Vec<_>>()
                .join(", "),
            expose: expose.join(", "),
            max_age: r.max_age_seconds,
        })
    })
}

/// S3's refusal of a preflight no rule allows.
pub fn forbidden() -> Refusal {
    Refusal::new(
        StatusCode::FORBIDDEN,
        "AccessForbidden",
        "CORSResponse: This CORS request is not allowed. This is usually because the evalution of \
         Origin, request method / Access-Control-Request-Method or Access-Control-Request-Headers \
         are not whitelisted by the resource's CORS spec.",
    )
    .with("Method", "OPTIONS")
    .with("ResourceType", "OBJECT")
}

/// S3's refusal of a preflight to a bucket without CORS rules.
pub fn not_enabled() -> Refusal {
    Refusal::new(
        StatusCode::FORBIDDEN,
        "AccessForbidden",
        "CORSResponse: CORS is not enabled for this bucket.",
    )
    .with("Method", "OPTIONS")
    .with("ResourceType", "OBJECT")
}

pub mod serve;

#[cfg(test)]
mod tests;
