//! One place that shapes what goes back to the client: what the gateway
//! asks of a response that s3s 0.14 cannot write itself, and the fixes the
//! server makes to every answer before it leaves (`shape`).
//!
//! The gateway asks through the response: a successful one carries a
//! [`Shape`] extension (extra XML elements, a status); an error carries
//! [`ERROR_ELEMENT`] headers, the one channel s3s 0.14 gives an
//! [`s3s::S3Error`] (it has headers, no extensions), taken off here.

use s3s::S3Response;

use crate::answer::{standard_message, ERROR_ELEMENT};
use crate::checksum::Checksum;
use crate::refusal::Refusal;

/// What a successful response needs beyond what s3s 0.14 writes (a
/// response extension the gateway adds, `shape` applies): s3s's DTOs
/// have no field for the checksums of SHA-512, MD5 and the XXHASH family
/// and always quote an ETag, and s3s answers PutBucketTagging with 200
/// where S3 answers 204.
#[derive(Debug, Clone, Default)]
pub struct Shape {
    /// `(parent, n, name, value)`: `<name>value</name>` at the end of the
    /// `n`-th (from 1) `parent` element of the XML document.
    elements: Vec<(String, usize, String, String)>,
    /// The status instead of s3s's.
    status: Option<http::StatusCode>,
}

fn shape_of<T>(res: &mut S3Response<T>) -> &mut Shape {
    res.extensions.get_or_insert_default::<Shape>()
}

/// Ask for `<name>value</name>` in the `nth` `parent` of the response's
/// XML (see [`Shape`]).
pub(crate) fn add_xml_element<T>(
    res: &mut S3Response<T>,
    parent: &str,
    nth: usize,
    name: &str,
    value: &str,
) {
    shape_of(res)
        .elements
        .push((parent.into(), nth, name.into(), value.into()));
}

/// The checksum element of `c` in the `nth` `parent`, when s3s has no
/// field for its algorithm.
pub(crate) fn add_xml_checksum<T>(
    res: &mut S3Response<T>,
    parent: &str,
    nth: usize,
    c: Option<&Checksum>,
) {
    if let Some(c) = c.filter(|c| !c.algorithm.in_s3s()) {
        let name = format!("Checksum{}", c.algorithm.name());
        add_xml_element(res, parent, nth, &name, &c.value);
    }
}

/// Answer a successful `res` with `status` instead of s3s's.
pub(crate) fn set_status<T>(res: &mut S3Response<T>, status: http::StatusCode) {
    shape_of(res).status = Some(status);
}

/// Every answer on its way out, in this order: one XML declaration in a
/// response whose body started early, the gateway's [`Shape`], its error
/// elements, S3's messages for the errors s3s words itself, no body on a
/// 304, and 206 for a HEAD with a range.
pub(crate) fn shape(res: s3s::HttpResponse, method: &http::Method) -> s3s::HttpResponse {
    let res = one_declaration(res);
    let res = apply_shape(res);
    let res = error_elements(res);
    let res = standard_error(res);
    let mut res = not_modified(res);
    // s3s answers HEAD with 200 whatever the output says.
    if method == http::Method::HEAD
        && res.status() == http::StatusCode::OK
        && res.headers().contains_key(http::header::CONTENT_RANGE)
    {
        *res.status_mut() = http::StatusCode::PARTIAL_CONTENT;
    }
    res
}

/// The answer to a request refused by the prechecks.
pub(crate) fn refusal_response(r: &Refusal) -> s3s::HttpResponse {
    let mut res = hyper::Response::new(s3s::Body::from(r.to_xml()));
    *res.status_mut() = r.status;
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/xml"),
    );
    res
}

/// An error document with S3's message for its code (s3s writes its own
/// words, or none; clients and conformance suites compare S3's).
fn standard_error(mut res: s3s::HttpResponse) -> s3s::HttpResponse {
    if res.status().as_u16() < 400 {
        return res;
    }
    let Some(body) = res.body().bytes() else {
        return res;
    };
    let Ok(text) = std::str::from_utf8(&body) else {
        return res;
    };
    let between = |a: &str, b: &str| -> Option<(usize, usize)> {
        let s = text.find(a)? + a.len();
        let e = s + text[s..].find(b)?;
        Some((s, e))
    };
    let Some((cs, ce)) = between("<Code>", "</Code>") else {
        return res;
    };
    // Only codes s3s answers itself: the gateway's own errors carry their
    // messages already.
    use s3s::S3ErrorCode as C;
    let code = s3s::S3ErrorCode::from_bytes(&text.as_bytes()[cs..ce]).filter(|c| {
        matches!(
            c,
            C::SignatureDoesNotMatch
                | C::InvalidBucketName
                | C::MalformedXML
                | C::MethodNotAllowed
                | C::InvalidAccessKeyId
                | C::InvalidRange
        )
    });
    let Some(msg) = code.as_ref().and_then(standard_message) else {
        return res;
    };
    let msg = crate::text::xml_escape(msg);
    let fixed = match between("<Message>", "</Message>") {
        Some((ms, me)) => format!("{}{msg}{}", &text[..ms], &text[me..]),
        None => {
            let at = ce + "</Code>".len();
            format!("{}<Message>{msg}</Message>{}", &text[..at], &text[at..])
        }
    };
    res.headers_mut().remove(http::header::CONTENT_LENGTH);
    *res.body_mut() = s3s::Body::from(fixed);
    res
}

/// Extra elements the gateway gave an error (see
/// [`ERROR_ELEMENT`]) moved into its XML document.
fn error_elements(mut res: s3s::HttpResponse) -> s3s::HttpResponse {
    let name = ERROR_ELEMENT;
    if !res.headers().contains_key(name) {
        return res;
    }
    let extra: String = res
        .headers()
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok()?.split_once('='))
        .filter(|(k, _)| !k.is_empty() && k.bytes().all(|c| c.is_ascii_alphanumeric()))
        .map(|(k, v)| format!("<{k}>{}</{k}>", crate::text::xml_escape(v)))
        .collect();
    res.headers_mut().remove(name);
    let Some(body) = res.body().bytes() else {
        return res;
    };
    let text = String::from_utf8_lossy(&body);
    let Some(at) = text.rfind("</Error>") else {
        return res;
    };
    let fixed = format!("{}{extra}{}", &text[..at], &text[at..]);
    res.headers_mut().remove(http::header::CONTENT_LENGTH);
    res.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/xml"),
    );
    *res.body_mut() = s3s::Body::from(fixed);
    res
}

/// The gateway's [`Shape`] applied: its elements put into a successful
/// response's XML document, then its status.
fn apply_shape(mut res: s3s::HttpResponse) -> s3s::HttpResponse {
    let Some(shape) = res.extensions_mut().remove::<Shape>() else {
        return res;
    };
    if !shape.elements.is_empty() {
        if let Some(body) = res.body().bytes() {
            let mut text = String::from_utf8_lossy(&body).into_owned();
            for (parent, nth, name, value) in &shape.elements {
                if let Some(at) = insert_at(&text, parent, *nth, name, value) {
                    text.insert_str(at.0, &at.1);
                }
            }
            res.headers_mut().remove(http::header::CONTENT_LENGTH);
            *res.body_mut() = s3s::Body::from(text);
        }
    }
    if let Some(s) = shape.status.filter(|_| res.status().is_success()) {
        *res.status_mut() = s;
    }
    res
}

/// Where in `text` the element `<name>value</name>` goes (at the end of
/// the `nth` `parent`), and its XML.
fn insert_at(
    text: &str,
    parent: &str,
    nth: usize,
    name: &str,
    value: &str,
) -> Option<(usize, String)> {
    let ok = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric());
    if !ok(parent) || !ok(name) || nth == 0 {
        return None;
    }
    let close = format!("</{parent}>");
    let (at, _) = text.match_indices(&close).nth(nth - 1)?;
    Some((
        at,
        format!("<{name}>{}</{name}>", crate::text::xml_escape(value)),
    ))
}

/// A 304 has no body (s3s writes an error document).
fn not_modified(mut res: s3s::HttpResponse) -> s3s::HttpResponse {
    if res.status() == http::StatusCode::NOT_MODIFIED {
        res.headers_mut().remove(http::header::CONTENT_LENGTH);
        res.headers_mut().remove(http::header::CONTENT_TYPE);
        *res.body_mut() = s3s::Body::empty();
    }
    res
}

/// A response whose body started before its result was known (the
/// keepalive of a slow CompleteMultipartUpload) gets its result's XML
/// declaration removed: s3s writes one before the whitespace and another
/// one with an error document, and a document has one.
fn one_declaration(res: s3s::HttpResponse) -> s3s::HttpResponse {
    let chunked = res
        .headers()
        .get(http::header::TRANSFER_ENCODING)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"chunked"));
    if !chunked {
        return res;
    }
    res.map(|inner| s3s::Body::http_body(OneDeclaration { inner, first: true }))
}

struct OneDeclaration {
    inner: s3s::Body,
    first: bool,
}

impl http_body::Body for OneDeclaration {
    type Data = bytes::Bytes;
    type Error = s3s::StdError;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<std::result::Result<http_body::Frame<bytes::Bytes>, s3s::StdError>>>
    {
        let this = &mut *self;
        let frame = std::task::ready!(std::pin::Pin::new(&mut this.inner).poll_frame(cx));
        let Some(Ok(frame)) = frame else {
            return std::task::Poll::Ready(frame);
        };
        let frame = match frame.into_data() {
            Ok(data) if this.first => {
                this.first = false;
                http_body::Frame::data(data)
            }
            Ok(data) => http_body::Frame::data(strip_declaration(data)),
            Err(f) => f,
        };
        std::task::Poll::Ready(Some(Ok(frame)))
    }
}

/// `data` without a leading `<?xml …?>`.
fn strip_declaration(data: bytes::Bytes) -> bytes::Bytes {
    let start = data
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(data.len());
    if data[start..].starts_with(b"<?xml") {
        if let Some(end) = data[start..].windows(2).position(|w| w == b"?>") {
            return data.slice(start + end + 2..);
        }
    }
    data
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xml(body: &str) -> s3s::HttpResponse {
        let mut res = http::Response::new(s3s::Body::from(body.to_string()));
        res.headers_mut()
            .insert(http::header::CONTENT_LENGTH, body.len().into());
        res
    }

    fn text(res: s3s::HttpResponse) -> String {
        String::from_utf8(res.body().bytes().unwrap().to_vec()).unwrap()
    }

    #[test]
    fn shape_puts_elements_and_status() {
        let mut out = S3Response::new(());
        add_xml_element(&mut out, "Part", 2, "ETag", "a&b");
        add_xml_element(&mut out, "Part", 3, "ETag", "missing");
        add_xml_element(&mut out, "Bad Name", 1, "ETag", "x");
        set_status(&mut out, http::StatusCode::NO_CONTENT);
        let mut res = xml("<R><Part></Part><Part></Part></R>");
        *res.extensions_mut() = out.extensions;
        let res = shape(res, &http::Method::PUT);
        assert_eq!(res.status(), http::StatusCode::NO_CONTENT);
        assert!(!res.headers().contains_key(http::header::CONTENT_LENGTH));
        assert_eq!(
            text(res),
            "<R><Part></Part><Part><ETag>a&amp;b</ETag></Part></R>"
        );
    }

    #[test]
    fn error_elements_go_into_the_document() {
        let mut e = s3s::S3Error::new(s3s::S3ErrorCode::InvalidArgument);
        crate::answer::with_error_elements(&mut e, &[("ArgumentName", "versionId")]);
        let mut res = xml("<Error><Code>InvalidArgument</Code></Error>");
        *res.status_mut() = http::StatusCode::BAD_REQUEST;
        *res.headers_mut() = e.headers().unwrap().clone();
        let res = shape(res, &http::Method::GET);
        assert!(!res.headers().contains_key(ERROR_ELEMENT));
        assert_eq!(
            text(res),
            "<Error><Code>InvalidArgument</Code><ArgumentName>versionId</ArgumentName></Error>"
        );
    }

    #[test]
    fn standard_messages_for_what_s3s_words() {
        let mut res = xml("<Error><Code>InvalidRange</Code><Message>x</Message></Error>");
        *res.status_mut() = http::StatusCode::RANGE_NOT_SATISFIABLE;
        assert_eq!(
            text(shape(res, &http::Method::GET)),
            "<Error><Code>InvalidRange</Code><Message>The requested range is not satisfiable</Message></Error>"
        );
    }

    #[test]
    fn not_modified_and_head_ranges() {
        let mut res = xml("<Error/>");
        *res.status_mut() = http::StatusCode::NOT_MODIFIED;
        let res = shape(res, &http::Method::GET);
        assert!(res.body().bytes().is_some_and(|b| b.is_empty()));
        let mut res = xml("");
        res.headers_mut()
            .insert(http::header::CONTENT_RANGE, "bytes 0-0/5".parse().unwrap());
        assert_eq!(
            shape(res, &http::Method::HEAD).status(),
            http::StatusCode::PARTIAL_CONTENT
        );
    }

    #[test]
    fn one_xml_declaration() {
        let d = bytes::Bytes::from_static(b"  <?xml version=\"1.0\"?><R/>");
        assert_eq!(&strip_declaration(d)[..], b"<R/>");
        let d = bytes::Bytes::from_static(b"<R/>");
        assert_eq!(&strip_declaration(d)[..], b"<R/>");
    }
}
