//! Bucket website configurations (PutBucketWebsite): S3's rules, checked
//! before a configuration is kept as the bucket's `website.json` record.
//! The gateway keeps and returns the configuration, as VersityGW's posix
//! gateway does; it serves no website endpoint (a GET of the bucket is
//! still a listing).
//!
//! The rules: `RedirectAllRequestsTo` (a host name, an optional protocol)
//! stands alone; otherwise an `IndexDocument` whose suffix is not empty and
//! has no `/`, an optional `ErrorDocument` with a key, and at most 50
//! routing rules, each with a non-empty redirect (not both `ReplaceKeyWith`
//! and `ReplaceKeyPrefixWith`; protocol `http` or `https`; a redirect code
//! of 301–305, 307 or 308) and, when it has one, a non-empty condition
//! (an error code of 400–417 or 500–505).

use s3s::dto::{Condition, Redirect, WebsiteConfiguration};

/// The bucket's website record.
pub const RECORD: &str = "website.json";

/// The longest PutBucketWebsite body taken (S3's limit), refused before
/// it is read.
pub const MAX_BODY: usize = 128 << 10;

/// The most routing rules a configuration has (S3's limit).
pub const MAX_ROUTING_RULES: usize = 50;

/// A website configuration S3 would refuse, with S3's code and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebsiteError {
    /// An element missing, empty, or beside one it cannot go with.
    #[error("The XML you provided was not well-formed or did not validate against our published schema.")]
    Malformed,
    /// `IndexDocument`'s suffix empty or with a `/`.
    #[error("The IndexDocument Suffix is not well formed")]
    IndexSuffix,
    /// `ErrorDocument` without a key.
    #[error("The ErrorDocument Key is not well formed")]
    ErrorKey,
    /// Over 50 routing rules.
    #[error("{0} routing rules provided, the number of routing rules in a website configuration is limited to 50.")]
    TooManyRules(usize),
    /// A redirect replacing both the key and its prefix.
    #[error("You can only define ReplaceKeyPrefix or ReplaceKey but not both.")]
    BothReplacements,
    /// A protocol other than `http` or `https`.
    #[error("Invalid protocol, protocol can be http or https. If not defined the protocol will be selected automatically.")]
    Protocol,
    /// A redirect code that is not one.
    #[error("The provided HTTP redirect code ({0}) is not valid. Valid codes are 3XX except 300.")]
    RedirectCode(i64),
    /// An error code that is not one.
    #[error("The provided HTTP error code ({0}) is not valid. Valid codes are 4XX or 5XX.")]
    ErrorCode(i64),
}

impl WebsiteError {
    /// S3's error code.
    pub fn code(&self) -> &'static str {
        match self {
            WebsiteError::Malformed => "MalformedXML",
            WebsiteError::IndexSuffix | WebsiteError::ErrorKey => "InvalidArgument",
            _ => "InvalidRequest",
        }
    }
}

/// Check a configuration as S3 does before keeping it.
pub fn check(c: &WebsiteConfiguration) -> Result<(), WebsiteError> {
    let rules = c.routing_rules.as_deref().unwrap_or_default();
    if let Some(all) = &c.redirect_all_requests_to {
        if c.index_document.is_some() || c.error_document.is_some() || !rules.is_empty() {
            return Err(WebsiteError::Malformed);
        }
        if all.host_name.is_empty() {
            return Err(WebsiteError::Malformed);
        }
        return check_protocol(all.protocol.as_ref().map(|p| p.as_str()));
    }
    let index = c.index_document.as_ref().ok_or(WebsiteError::Malformed)?;
    if index.suffix.is_empty() || index.suffix.contains('/') {
        return Err(WebsiteError::IndexSuffix);
    }
    if c.error_document.as_ref().is_some_and(|e| e.key.is_empty()) {
        return Err(WebsiteError::ErrorKey);
    }
    if rules.len() > MAX_ROUTING_RULES {
        return Err(WebsiteError::TooManyRules(rules.len()));
    }
    for rule in rules {
        check_redirect(&rule.redirect)?;
        if let Some(cond) = &rule.condition {
            check_condition(cond)?;
        }
    }
    Ok(())
}

fn empty(v: &Option<String>) -> bool {
    v.as_deref().is_none_or(str::is_empty)
}

fn check_redirect(r: &Redirect) -> Result<(), WebsiteError> {
    let protocol = r
        .protocol
        .as_ref()
        .map(|p| p.as_str())
        .filter(|p| !p.is_empty());
    if empty(&r.host_name)
        && empty(&r.http_redirect_code)
        && protocol.is_none()
        && empty(&r.replace_key_prefix_with)
        && empty(&r.replace_key_with)
    {
        return Err(WebsiteError::Malformed);
    }
    if !empty(&r.replace_key_with) && !empty(&r.replace_key_prefix_with) {
        return Err(WebsiteError::BothReplacements);
    }
    check_protocol(protocol)?;
    match http_code(&r.http_redirect_code)? {
        None | Some(301..=305 | 307 | 308) => Ok(()),
        Some(n) => Err(WebsiteError::RedirectCode(n)),
    }
}

fn check_condition(c: &Condition) -> Result<(), WebsiteError> {
    if empty(&c.http_error_code_returned_equals) && empty(&c.key_prefix_equals) {
        return Err(WebsiteError::Malformed);
    }
    match http_code(&c.http_error_code_returned_equals)? {
        None | Some(400..=417 | 500..=505) => Ok(()),
        Some(n) => Err(WebsiteError::ErrorCode(n)),
    }
}

fn check_protocol(p: Option<&str>) -> Result<(), WebsiteError> {
    match p {
        None | Some("" | "http" | "https") => Ok(()),
        Some(_) => Err(WebsiteError::Protocol),
    }
}

/// An HTTP code given as text: none when absent or empty, `Malformed`
/// when it is no integer.
fn http_code(v: &Option<String>) -> Result<Option<i64>, WebsiteError> {
    match v.as_deref().filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(s) => s.parse().map(Some).map_err(|_| WebsiteError::Malformed),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use s3s::dto::{ErrorDocument, IndexDocument, RedirectAllRequestsTo, RoutingRule};

    fn index(suffix: &str) -> WebsiteConfiguration {
        WebsiteConfiguration {
            index_document: Some(IndexDocument {
                suffix: suffix.into(),
            }),
            ..Default::default()
        }
    }

    fn with_rule(redirect: Redirect, condition: Option<Condition>) -> WebsiteConfiguration {
        WebsiteConfiguration {
            routing_rules: Some(vec![RoutingRule {
                condition,
                redirect,
            }]),
            ..index("index.html")
        }
    }

    fn host() -> Redirect {
        Redirect {
            host_name: Some("example.com".into()),
            ..Default::default()
        }
    }

    #[test]
    fn website_configurations_checked_as_s3_checks_them() {
        assert_eq!(check(&index("index.html")), Ok(()));
        assert_eq!(check(&index("")), Err(WebsiteError::IndexSuffix));
        assert_eq!(check(&index("/index.html")), Err(WebsiteError::IndexSuffix));
        assert_eq!(
            check(&WebsiteConfiguration::default()),
            Err(WebsiteError::Malformed)
        );
        let mut c = index("index.html");
        c.error_document = Some(ErrorDocument { key: String::new() });
        assert_eq!(check(&c), Err(WebsiteError::ErrorKey));
        // A redirect of everything stands alone, with a host.
        let all = RedirectAllRequestsTo {
            host_name: "example.com".into(),
            protocol: Some("https".to_string().into()),
        };
        let mut c = WebsiteConfiguration {
            redirect_all_requests_to: Some(all.clone()),
            ..Default::default()
        };
        assert_eq!(check(&c), Ok(()));
        c.index_document = index("index.html").index_document;
        assert_eq!(check(&c), Err(WebsiteError::Malformed));
        let ftp = WebsiteConfiguration {
            redirect_all_requests_to: Some(RedirectAllRequestsTo {
                protocol: Some("ftp".to_string().into()),
                ..all
            }),
            ..Default::default()
        };
        assert_eq!(check(&ftp), Err(WebsiteError::Protocol));
    }

    #[test]
    fn routing_rules_checked_as_s3_checks_them() {
        assert_eq!(check(&with_rule(host(), None)), Ok(()));
        assert_eq!(
            check(&with_rule(Redirect::default(), None)),
            Err(WebsiteError::Malformed)
        );
        assert_eq!(
            check(&with_rule(host(), Some(Condition::default()))),
            Err(WebsiteError::Malformed)
        );
        let both = Redirect {
            replace_key_with: Some("a".into()),
            replace_key_prefix_with: Some("b/".into()),
            ..host()
        };
        assert_eq!(
            check(&with_rule(both, None)),
            Err(WebsiteError::BothReplacements)
        );
        for (code, want) in [
            ("301", Ok(())),
            ("308", Ok(())),
            ("300", Err(WebsiteError::RedirectCode(300))),
            ("306", Err(WebsiteError::RedirectCode(306))),
            ("3xx", Err(WebsiteError::Malformed)),
        ] {
            let r = Redirect {
                http_redirect_code: Some(code.into()),
                ..host()
            };
            assert_eq!(check(&with_rule(r, None)), want, "{code}");
        }
        for (code, want) in [
            ("404", Ok(())),
            ("503", Ok(())),
            ("418", Err(WebsiteError::ErrorCode(418))),
            ("506", Err(WebsiteError::ErrorCode(506))),
            ("4xx", Err(WebsiteError::Malformed)),
        ] {
            let cond = Condition {
                http_error_code_returned_equals: Some(code.into()),
                ..Default::default()
            };
            assert_eq!(check(&with_rule(host(), Some(cond))), want, "{code}");
        }
        let mut many = with_rule(host(), None);
        let rule = many.routing_rules.as_ref().unwrap()[0].clone();
        many.routing_rules = Some(vec![rule; 51]);
        assert_eq!(check(&many), Err(WebsiteError::TooManyRules(51)));
        assert_eq!(
            WebsiteError::TooManyRules(51).to_string(),
            "51 routing rules provided, the number of routing rules in a website configuration is limited to 50."
        );
    }
}
