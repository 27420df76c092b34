//! Browser-based uploads: S3's PostObject, an HTML form POSTed to
//! `/<bucket>` as `multipart/form-data` (`docs/s3.md`, "POST uploads").
//!
//! The pure parts live here: the form read up to its file, every field
//! bounded ([`parse`]), the POST policy document and its conditions
//! ([`policy`]), and the SigV4 signature of the policy ([`sign`]). The
//! request path that uses them (authentication, the policy, the file
//! streamed into the store by PutObject's own path) is
//! `crate::handler`'s `form_upload` module.
//!
//! ```
//! use cowkit_s3::form::policy::Policy;
//! let doc = r#"{"expiration":"2030-01-01T00:00:00Z","conditions":[{"bucket":"b"},["starts-with","$key","user/"]]}"#;
//! let p = Policy::parse(&base64_of(doc)).unwrap();
//! assert_eq!(p.conditions.len(), 2);
//! # fn base64_of(s: &str) -> String {
//! #     use base64::Engine;
//! #     base64::engine::general_purpose::STANDARD.encode(s)
//! # }
//! ```

pub mod parse;
pub mod policy;
pub mod sign;

use http::StatusCode;

use crate::refusal::Refusal;

/// AWS's `InvalidArgument` naming a form field.
pub(crate) fn invalid_argument(message: String, name: &str, value: &str) -> Refusal {
    Refusal::new(StatusCode::BAD_REQUEST, "InvalidArgument", message)
        .with("ArgumentName", name)
        .with("ArgumentValue", value)
}

/// A field the form must have (or must have before its file).
pub(crate) fn missing_field(name: &str) -> Refusal {
    invalid_argument(
        format!(
            "Bucket POST must contain a field named '{name}'.  If it is specified, please check the order of the fields."
        ),
        name,
        "",
    )
}

/// The body is not a `multipart/form-data` document S3 can read.
pub(crate) fn malformed() -> Refusal {
    Refusal::new(
        StatusCode::BAD_REQUEST,
        "MalformedPOSTRequest",
        "The body of your POST request is not well-formed multipart/form-data.",
    )
}

/// The fields before the file are over the limits of [`parse::Limits`].
pub(crate) fn too_much_before_file() -> Refusal {
    Refusal::new(
        StatusCode::BAD_REQUEST,
        "MaxPostPreDataLengthExceededError",
        "Your POST request fields preceding the upload file were too large.",
    )
}
