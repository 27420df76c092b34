//! Bucket website configurations checked as S3 checks them
//! ([`check`]). The gateway stores and returns them (`gateway::config`);
//! it does not serve the website endpoint.

use http::StatusCode;
use s3s::dto::{RoutingRule, WebsiteConfiguration};

use crate::precheck::Refusal;

/// The bucket record holding the configuration (`meta/<bucket>/website.json`).
pub const RECORD: &str = "website.json";
/// The largest website document taken (S3's and VersityGW's limit).
pub const MAX_DOCUMENT: u64 = 128 * 1024;
/// The largest record read back.
pub const MAX_RECORD: u64 = 4 * MAX_DOCUMENT;
/// The most routing rules a configuration may have.
const MAX_RULES: usize = 50;

fn malformed() -> Refusal {
    Refusal::new(
        StatusCode::BAD_REQUEST,
        "MalformedXML",
        "The XML you provided was not well-formed or did not validate against our published schema.",
    )
}

fn invalid_request(message: String) -> Refusal {
    Refusal::new(StatusCode::BAD_REQUEST, "InvalidRequest", message)
}

fn invalid_argument(message: &str, name: &str, value: &str) -> Refusal {
    Refusal::new(StatusCode::BAD_REQUEST, "InvalidArgument", message)
        .with("ArgumentName", name.to_string())
        .with("ArgumentValue", value.to_string())
}

fn check_protocol(p: Option<&str>) -> Result<(), Refusal> {
    match p {
        None | Some("http" | "https") => Ok(()),
        Some(_) => Err(invalid_request(
            "Invalid protocol, protocol can be http or https. If not defined the protocol will be \
             selected automatically."
                .into(),
        )),
    }
}

/// An HTTP code as written in the document: digits, else MalformedXML.
fn code_of(s: &str) -> Result<u16, Refusal> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed());
    }
    s.parse().map_err(|_| malformed())
}

fn check_rule(r: &RoutingRule) -> Result<(), Refusal> {
    if let Some(c) = &r.condition {
        if c.http_error_code_returned_equals.is_none() && c.key_prefix_equals.is_none() {
            return Err(malformed());
        }
        if let Some(s) = &c.http_error_code_returned_equals {
            let code = code_of(s)?;
            if !(400..=417).contains(&code) && !(500..=505).contains(&code) {
                return Err(invalid_request(format!(
                    "The provided HTTP error code ({code}) is not valid. Valid codes are 4XX or 5XX."
                )));
            }
        }
    }
    let d = &r.redirect;
    if d.host_name.is_none()
        && d.http_redirect_code.is_none()
        && d.protocol.is_none()
        && d.replace_key_prefix_with.is_none()
        && d.replace_key_with.is_none()
    {
        return Err(malformed());
    }
    check_protocol(d.protocol.as_ref().map(|p| p.as_str()))?;
    if d.replace_key_prefix_with.is_some() && d.replace_key_with.is_some() {
        return Err(invalid_request(
            "You can only define ReplaceKeyPrefix or ReplaceKey but not both.".into(),
        ));
    }
    if let Some(s) = &d.http_redirect_code {
        let code = code_of(s)?;
        if ![301, 302, 303, 304, 305, 307, 308].contains(&code) {
            return Err(invalid_request(format!(
                "The provided HTTP redirect code ({code}) is not valid. Valid codes are 3XX \
                 except 300."
            )));
        }
    }
    Ok(())
}

/// Check a website configuration as S3 does: `RedirectAllRequestsTo`
/// alone, or an `IndexDocument` whose suffix is not empty and holds no
/// `/`, an `ErrorDocument` key that is not empty, at most 50 routing rules,
/// each with a redirect that says something and a condition, when given,
/// that does; protocols `http` or `https`; S3's redirect and error codes.
pub fn check(w: &WebsiteConfiguration) -> Result<(), Refusal> {
    if let Some(all) = &w.redirect_all_requests_to {
        if w.index_document.is_some() || w.error_document.is_some() || w.routing_rules.is_some() {
            return Err(malformed());
        }
        return check_protocol(all.protocol.as_ref().map(|p| p.as_str()));
    }
    let Some(index) = &w.index_document else {
        return Err(malformed());
    };
    if index.suffix.is_empty() || index.suffix.contains('/') {
        return Err(invalid_argument(
            "The IndexDocument Suffix is not well formed",
            "IndexDocument",
            &index.suffix,
        ));
    }
    if let Some(e) = &w.error_document {
        if e.key.is_empty() {
            return Err(invalid_argument(
                "The ErrorDocument Key is not well formed",
                "ErrorDocument",
                &e.key,
            ));
        }
    }
    let rules = w.routing_rules.as_deref().unwrap_or_default();
    if rules.len() > MAX_RULES {
        return Err(invalid_request(format!(
            "{} routing rules provided, the number of routing rules in a website configuration is \
             limited to 50.",
            rules.len()
        )));
    }
    rules.iter().try_for_each(check_rule)
}

#[cfg(test)]
mod tests {
    use super::*;
    use s3s::dto::{Condition, IndexDocument, Redirect, RedirectAllRequestsTo};

    fn index(suffix: &str) -> WebsiteConfiguration {
        WebsiteConfiguration {
            index_document: Some(IndexDocument {
                suffix: suffix.into(),
            }),
            ..Default::default()
        }
    }

    fn with_rule(condition: Option<Condition>, redirect: Redirect) -> WebsiteConfiguration {
        WebsiteConfiguration {
            routing_rules: Some(vec![RoutingRule {
                condition,
                redirect,
            }]),
            ..index("index.html")
        }
    }

    #[test]
    fn issue_27_website_checked_as_s3_checks_it() {
        check(&index("index.html")).unwrap();
        assert_eq!(check(&index("")).unwrap_err().code, "InvalidArgument");
        assert_eq!(
            check(&index("/i.html")).unwrap_err().code,
            "InvalidArgument"
        );
        let all = Some(RedirectAllRequestsTo {
            host_name: "example.com".into(),
            protocol: Some("ftp".to_string().into()),
        });
        let w = WebsiteConfiguration {
            redirect_all_requests_to: all.clone(),
            ..Default::default()
        };
        assert!(check(&w)
            .unwrap_err()
            .message
            .starts_with("Invalid protocol"));
        let w = WebsiteConfiguration {
            redirect_all_requests_to: all,
            ..index("index.html")
        };
        assert_eq!(check(&w).unwrap_err().code, "MalformedXML");
        let host = Redirect {
            host_name: Some("h".into()),
            ..Default::default()
        };
        assert_eq!(
            check(&with_rule(Some(Condition::default()), host.clone()))
                .unwrap_err()
                .code,
            "MalformedXML"
        );
        assert_eq!(
            check(&with_rule(None, Redirect::default()))
                .unwrap_err()
                .code,
            "MalformedXML"
        );
        check(&with_rule(None, host.clone())).unwrap();
        let code = |c: &str| Redirect {
            http_redirect_code: Some(c.into()),
            ..host.clone()
        };
        assert_eq!(
            check(&with_rule(None, code("3xx"))).unwrap_err().code,
            "MalformedXML"
        );
        assert!(check(&with_rule(None, code("306"))).is_err());
        check(&with_rule(None, code("308"))).unwrap();
        let on = |c: &str| {
            Some(Condition {
                http_error_code_returned_equals: Some(c.into()),
                ..Default::default()
            })
        };
        assert!(check(&with_rule(on("418"), host.clone())).is_err());
        check(&with_rule(on("404"), host)).unwrap();
    }
}
