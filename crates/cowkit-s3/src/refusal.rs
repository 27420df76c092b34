//! A request refused before it reaches the gateway, as S3 answers it
//! (the prechecks, the handler's own checks, POST uploads).

use http::StatusCode;

use crate::text::xml_escape;

/// An S3 error answered without going further.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// HTTP status.
    pub status: StatusCode,
    /// S3 error code.
    pub code: &'static str,
    /// The message S3 gives.
    pub message: String,
    /// Extra elements of the `<Error>` document.
    pub extra: Vec<(&'static str, String)>,
}

impl Refusal {
    pub(crate) fn new(
        status: StatusCode,
        code: &'static str,
        message: impl Into<String>,
    ) -> Refusal {
        Refusal {
            status,
            code,
            message: message.into(),
            extra: Vec::new(),
        }
    }

    pub(crate) fn with(mut self, name: &'static str, value: impl Into<String>) -> Refusal {
        self.extra.push((name, value.into()));
        self
    }

    /// The `<Error>` XML document.
    pub fn to_xml(&self) -> String {
        let mut s = String::from(r#"<?xml version="1.0" encoding="UTF-8"?><Error>"#);
        s += &format!("<Code>{}</Code>", self.code);
        s += &format!("<Message>{}</Message>", xml_escape(&self.message));
        for (k, v) in &self.extra {
            s += &format!("<{k}>{}</{k}>", xml_escape(v));
        }
        s += "</Error>";
        s
    }
}
