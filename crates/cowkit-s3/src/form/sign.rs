//! The SigV4 fields of a POST form (`x-amz-algorithm`, `x-amz-credential`,
//! `x-amz-date`, `x-amz-signature`, `policy`) checked as S3 checks them,
//! and the signature: the HMAC-SHA256 of the base64 policy with the key
//! derived from the account's secret, the credential's date and region
//! and `s3` (AWS, "Browser-Based Uploads Using POST (AWS Signature
//! Version 4)").

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use super::{invalid_argument, missing_field};
use crate::refusal::Refusal;

/// The five fields that make a signed form, in the order they are
/// reported missing.
pub const AUTH_FIELDS: [&str; 5] = [
    "policy",
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-date",
    "x-amz-algorithm",
];

/// A signed form's claims, their shape checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The credential's access key.
    pub access_key: String,
    /// `yyyyMMdd` of the credential.
    pub date: String,
    /// The credential's region (the server's).
    pub region: String,
    /// `x-amz-signature`.
    pub signature: String,
    /// `policy`, as sent (what is signed).
    pub policy: String,
    /// `x-amz-date`, in seconds since the epoch (`None`: SigV2).
    pub time: Option<i64>,
}

/// How long after its `x-amz-date` a form is taken: S3 answers an older
/// one "Policy expired" whatever its policy's `expiration` says.
pub const MAX_AGE: i64 = 3600;

fn hmac(key: &[u8], data: &[u8]) -> [u8; 32] {
    let mut m =
        <Hmac<Sha256> as KeyInit>::new_from_slice(key).expect("HMAC takes keys of any length");
    m.update(data);
    m.finalize().into_bytes().into()
}

/// The SigV4 signing key of `secret` for `date` (`yyyyMMdd`), `region`
/// and `service`.
pub fn signing_key(secret: &str, date: &str, region: &str, service: &str) -> [u8; 32] {
    let k = hmac(format!("AWS4{secret}").as_bytes(), date.as_bytes());
    let k = hmac(&k, region.as_bytes());
    let k = hmac(&k, service.as_bytes());
    hmac(&k, b"aws4_request")
}

/// The signature of a form: hex of the policy's HMAC.
pub fn signature(secret: &str, date: &str, region: &str, policy: &str) -> String {
    hex::encode(hmac(
        &signing_key(secret, date, region, "s3"),
        policy.as_bytes(),
    ))
}

/// Whether two signatures are equal, in time that does not depend on
/// where they differ.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// `s`'s bytes in hex, space-separated (S3's `StringToSignBytes`).
pub fn hex_bytes(s: &str) -> String {
    s.bytes()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The form's signature fields: `Ok(None)` for an unsigned form (none
/// of them), else all of them in the shape S3 accepts, for `region`.
pub fn signed_fields(
    get: &dyn Fn(&str) -> Option<String>,
    region: &str,
) -> Result<Option<Signed>, Refusal> {
    let v4 = AUTH_FIELDS[1..].iter().any(|f| get(f).is_some());
    if !v4 && (get("signature").is_some() || get("awsaccesskeyid").is_some()) {
        return signed_v2(get);
    }
    if !v4 && get("policy").is_none() {
        return Ok(None);
    }
    let need = |f: &str| get(f).ok_or_else(|| missing_field(f));
    let (policy, signature) = (need("policy")?, need("x-amz-signature")?);
    let (cred, date, algo) = (
        need("x-amz-credential")?,
        need("x-amz-date")?,
        need("x-amz-algorithm")?,
    );
    if algo != "AWS4-HMAC-SHA256" {
        return Err(invalid_argument(
            "Only AWS4-HMAC-SHA256 is supported".into(),
            "X-Amz-Algorithm",
            &algo,
        ));
    }
    let err = |m: String| invalid_argument(m, "x-amz-credential", &cred);
    let (access_key, day) = crate::precheck::auth::check_scope(&cred, region, &err)?;
    let Some(time) = crate::precheck::auth::parse_amz_date(&date) else {
        return Err(invalid_argument(
            "X-Amz-Date must be formated via ISO8601 Long format".into(),
            "X-Amz-Date",
            &date,
        ));
    };
    Ok(Some(Signed {
        access_key: access_key.to_string(),
        date: day.to_string(),
        region: region.to_string(),
        signature,
        policy,
        time: Some(time),
    }))
}

/// A SigV2 form (`AWSAccessKeyId`, `signature`, `policy`: what boto3's
/// `generate_presigned_post` makes by default for `us-east-1`), or none.
fn signed_v2(get: &dyn Fn(&str) -> Option<String>) -> Result<Option<Signed>, Refusal> {
    let need = |f: &str| get(f).ok_or_else(|| missing_field(f));
    Ok(Some(Signed {
        policy: need("policy")?,
        signature: need("signature")?,
        access_key: need("awsaccesskeyid")?,
        date: String::new(),
        region: String::new(),
        time: None,
    }))
}

/// Whether `s`'s signature is the one `secret` makes: SigV4's hex
/// HMAC-SHA256 with the derived key, or SigV2's base64 HMAC-SHA1.
pub fn verify(s: &Signed, secret: &str) -> bool {
    if s.time.is_some() {
        let want = signature(secret, &s.date, &s.region, &s.policy);
        return same(&want, &s.signature.to_ascii_lowercase());
    }
    let mut m = <Hmac<sha1::Sha1> as KeyInit>::new_from_slice(secret.as_bytes())
        .expect("HMAC takes keys of any length");
    m.update(s.policy.as_bytes());
    same(
        &crate::checksum::b64(&m.finalize().into_bytes()),
        &s.signature,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signing_key_of_aws_example() {
        // AWS's "Deriving the signing key" example (SigV4 documentation).
        let k = signing_key(
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            "20120215",
            "us-east-1",
            "iam",
        );
        assert_eq!(
            hex::encode(k),
            "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d"
        );
    }

    fn fields<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |f| {
            pairs
                .iter()
                .find(|(k, _)| *k == f)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn signature_fields_checked_as_s3_does() {
        let good = [
            ("policy", "e30="),
            ("x-amz-signature", "00"),
            ("x-amz-credential", "AK/20260101/us-east-1/s3/aws4_request"),
            ("x-amz-date", "20260101T000000Z"),
            ("x-amz-algorithm", "AWS4-HMAC-SHA256"),
        ];
        let s = signed_fields(&fields(&good), "us-east-1").unwrap().unwrap();
        assert_eq!((s.access_key.as_str(), s.date.as_str()), ("AK", "20260101"));
        assert_eq!(signed_fields(&fields(&[]), "us-east-1"), Ok(None));
        for (i, (name, _)) in good.iter().enumerate() {
            let mut partial = good.to_vec();
            partial.remove(i);
            let e = signed_fields(&fields(&partial), "us-east-1").unwrap_err();
            assert_eq!(e.code, "InvalidArgument");
            assert!(
                e.extra.contains(&("ArgumentName", name.to_string())),
                "{e:?}"
            );
        }
        let with = |k: &str, v: &'static str| {
            let mut f = good.to_vec();
            f.retain(|(n, _)| *n != k);
            f.push((Box::leak(k.to_string().into_boxed_str()), v));
            let e = signed_fields(&fields(&f), "us-east-1").unwrap_err();
            e.message
        };
        assert_eq!(
            with("x-amz-algorithm", "invalid"),
            "Only AWS4-HMAC-SHA256 is supported"
        );
        assert!(with("x-amz-date", "invalid_date").starts_with("X-Amz-Date must be"));
        assert!(with("x-amz-credential", "malformed").contains("mal-formed"));
        assert_eq!(
            with("x-amz-credential", "AK/20260101/us-west-2/s3/aws4_request"),
            "the region \"us-west-2\" is wrong; expecting \"us-east-1\""
        );
    }

    #[test]
    fn sigv2_forms() {
        let f = [
            ("policy", "e30="),
            ("AWSAccessKeyId", "AK"),
            ("signature", "x"),
        ];
        let lower: Vec<(String, &str)> = f
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), *v))
            .collect();
        let get = |n: &str| {
            lower
                .iter()
                .find(|(k, _)| k == n)
                .map(|(_, v)| v.to_string())
        };
        let mut s = signed_fields(&get, "us-east-1").unwrap().unwrap();
        assert_eq!((s.access_key.as_str(), s.time), ("AK", None));
        // base64(HMAC-SHA1("secret", "e30=")), computed with Python's hmac.
        s.signature = "3KeROaoASbxgUSU+Qu1QG4MqvzI=".into();
        assert!(verify(&s, "secret"));
        assert!(!verify(&s, "other"));
    }

    #[test]
    fn signatures_compare_whole() {
        assert!(same("abcd", "abcd"));
        assert!(!same("abcd", "abce"));
        assert!(!same("abcd", "abc"));
        assert_eq!(hex_bytes("e3="), "65 33 3d");
    }
}
