//! What the gateway asks of a response that s3s 0.14 cannot write itself,
//! and where the server reads it back: extra elements of an error
//! document, extra XML elements of a successful response, a status.

use s3s::{S3Error, S3Response};

use crate::checksum::Checksum;

/// A response header carrying an extra element of an error document
/// (`Name=value`; s3s 0.14 writes only Code, Message, Resource and
/// RequestId): the server moves them into the XML.
pub const ERROR_ELEMENT: &str = "x-cowkit-error-element";

/// Give `err` extra `<Error>` elements (see [`ERROR_ELEMENT`]).
pub(crate) fn with_error_elements(err: &mut S3Error, elements: &[(&str, &str)]) {
    let mut h = http::HeaderMap::new();
    for (k, v) in elements {
        if let Ok(v) = http::HeaderValue::from_str(&format!("{k}={v}")) {
            h.append(ERROR_ELEMENT, v);
        }
    }
    err.set_headers(h);
}

/// A response header asking the server to add an element to a successful
/// response's XML document: `Parent#n/Name=value` puts
/// `<Name>value</Name>` at the end of the `n`-th (from 1) `Parent`
/// element. s3s 0.14's DTOs have no field for the checksums of SHA-512,
/// MD5 and the XXHASH family, and always quote an ETag.
pub const XML_ELEMENT: &str = "x-cowkit-xml-element";

/// A response header carrying the HTTP status a successful response must
/// have where s3s 0.14 writes another (PutBucketTagging: S3 answers 204,
/// s3s 200); the server applies it.
pub const STATUS: &str = "x-cowkit-status";

/// Ask for `<name>value</name>` in the `nth` `parent` of the response's XML
/// (see [`XML_ELEMENT`]).
pub(crate) fn add_xml_element<T>(
    res: &mut S3Response<T>,
    parent: &str,
    nth: usize,
    name: &str,
    value: &str,
) {
    if let Ok(v) = http::HeaderValue::from_str(&format!("{parent}#{nth}/{name}={value}")) {
        res.headers.append(XML_ELEMENT, v);
    }
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
