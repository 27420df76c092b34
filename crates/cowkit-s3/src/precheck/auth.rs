//! The shape of a request's authentication, checked as S3 checks it
//! before the signature: a SigV4 `Authorization` header, a presigned URL's
//! query (credential scope, region, dates, `X-Amz-Expires` bounds,
//! expiry), SigV2 headers refused, `x-amz-*` headers that were not signed.

use super::*;
use crate::civil::days_from_civil;

/// Go's `%q` for the ASCII strings these messages quote.
pub(super) fn q(s: &str) -> String {
    format!("{s:?}")
}

pub(super) fn unsupported_mechanism() -> Refusal {
    bad_request(
        "InvalidRequest",
        "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.",
    )
}

pub(super) fn invalid_access_key(ak: &str) -> Refusal {
    forbidden(
        "InvalidAccessKeyId",
        "The AWS Access Key Id you provided does not exist in our records.",
    )
    .with("AWSAccessKeyId", ak)
}

/// `yyyyMMdd'T'HHmmss'Z'` → seconds since the epoch.
pub(crate) fn parse_amz_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    let (y, mo, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (h, mi, se) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    Some(days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + se)
}

pub(super) fn valid_ymd(s: &str) -> bool {
    s.len() == 8 && parse_amz_date(&format!("{s}T000000Z")).is_some()
}

pub(crate) fn now_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

pub(super) fn http_date(secs: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_secs(secs.max(0) as u64);
    let mut buf = Vec::new();
    match s3s::dto::Timestamp::from(t).format(s3s::dto::TimestampFormat::DateTime, &mut buf) {
        Ok(()) => String::from_utf8_lossy(&buf).into_owned(),
        Err(_) => String::new(),
    }
}

/// The credential scope's five parts, checked in S3's order. `malformed`,
/// `prefix` make the messages of the header and the query forms.
pub(crate) fn check_scope<'a>(
    cred: &'a str,
    region: &str,
    err: &dyn Fn(String) -> Refusal,
) -> Result<(&'a str, &'a str), Refusal> {
    let parts: Vec<&str> = cred.split('/').collect();
    if parts.len() != 5 {
        return Err(err(
            "the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\"."
                .into(),
        ));
    }
    if parts[4] != "aws4_request" {
        return Err(err(format!(
            "incorrect terminal {}. This endpoint uses \"aws4_request\".",
            q(parts[4])
        )));
    }
    if parts[3] != "s3" {
        return Err(err(format!(
            "incorrect service {}. This endpoint belongs to \"s3\".",
            q(parts[3])
        )));
    }
    if parts[2] != region {
        return Err(err(format!(
            "the region {} is wrong; expecting {}",
            q(parts[2]),
            q(region)
        ))
        .with("Region", region));
    }
    if !valid_ymd(parts[1]) {
        return Err(err(format!(
            "incorrect date format {}. This date in the credential must be in the format \"yyyyMMdd\".",
            q(parts[1])
        )));
    }
    Ok((parts[0], parts[1]))
}

pub(super) fn unsigned_amz_headers(headers: &HeaderMap, signed: &str) -> Result<(), Refusal> {
    let signed: Vec<&str> = signed.split(';').map(str::trim).collect();
    let mut missing: Vec<&str> = headers
        .keys()
        .map(|k| k.as_str())
        .filter(|k| k.starts_with("x-amz-") && !signed.contains(k))
        // Trailer-carrying uploads and the SDKs' own unsigned extras.
        .filter(|k| !matches!(*k, "x-amz-content-sha256" | "x-amz-user-agent"))
        .collect();
    missing.sort_unstable();
    missing.dedup();
    if missing.is_empty() {
        return Ok(());
    }
    Err(forbidden(
        "AccessDenied",
        "There were headers present in the request which were not signed",
    )
    .with("HeadersNotSigned", missing.join(", ")))
}

/// `x-amz-content-sha256`: a SHA-256 or one of S3's payload markers; the
/// empty body's hash when the body is known to be empty.
pub(super) fn check_payload_hash(headers: &HeaderMap) -> Result<(), Refusal> {
    if let Some(h) = headers.get("x-amz-content-sha256") {
        let h = h.to_str().unwrap_or("");
        let hex64 = h.len() == 64 && h.bytes().all(|c| c.is_ascii_hexdigit());
        if !hex64 && !PAYLOAD_HASHES.contains(&h) {
            return Err(bad_request(
                "InvalidArgument",
                "x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-UNSIGNED-PAYLOAD-TRAILER, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER, STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD, STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER or a valid sha256 value.",
            )
            .with("ArgumentName", "x-amz-content-sha256")
            .with("ArgumentValue", h));
        }
        // A body known to be empty has a known hash.
        if hex64 && body_known_empty(headers) && !h.eq_ignore_ascii_case(EMPTY_SHA256) {
            return Err(sha256_mismatch(h, EMPTY_SHA256));
        }
    }
    Ok(())
}

impl Prechecks {
    /// Whether `ak` is neither the server's access key nor an account's
    /// (when the store cannot be read, the request goes on to s3s, whose
    /// lookup answers with that error).
    fn unknown_key(&self, ak: &str) -> bool {
        let Some(mine) = &self.access_key else {
            return false;
        };
        ak != mine
            && !self
                .accounts
                .as_ref()
                .is_some_and(|a| !matches!(a.find(ak), Ok(None)))
    }

    pub(super) fn check_header_auth(&self, auth: &str, headers: &HeaderMap) -> Result<(), Refusal> {
        if auth.starts_with("AWS ") {
            return Err(unsupported_mechanism());
        }
        let Some((algo, rest)) = auth.split_once(' ') else {
            return Err(bad_request(
                "InvalidArgument",
                "Authorization header is invalid -- one and only one ' ' (space) required.",
            )
            .with("ArgumentName", "Authorization")
            .with("ArgumentValue", auth));
        };
        if algo != "AWS4-HMAC-SHA256" {
            return Err(
                bad_request("InvalidArgument", "Unsupported Authorization Type")
                    .with("ArgumentName", "Authorization")
                    .with("ArgumentValue", algo),
            );
        }
        let malformed = |m: String| {
            bad_request(
                "AuthorizationHeaderMalformed",
                format!("The authorization header is malformed; {m}"),
            )
        };
        let comps: Vec<&str> = rest
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if comps.len() != 3 {
            return Err(malformed(
                "the authorization header requires three components: Credential, SignedHeaders, and Signature."
                    .into(),
            ));
        }
        let (mut cred, mut signed, mut sig) = (None, None, None);
        for c in &comps {
            let Some((k, v)) = c.split_once('=') else {
                return Err(malformed(format!(
                    "the authorization component {} is malformed.",
                    q(c)
                )));
            };
            match k {
                "Credential" => cred = Some(v),
                "SignedHeaders" => signed = Some(v),
                "Signature" => sig = Some(v),
                _ => {}
            }
        }
        let cred = cred.ok_or_else(|| malformed("missing Credential.".into()))?;
        let signed = signed.ok_or_else(|| malformed("missing SignedHeaders.".into()))?;
        sig.ok_or_else(|| malformed("missing Signature.".into()))?;
        let (ak, cred_date) = check_scope(cred, &self.region, &malformed)?;
        if self.unknown_key(ak) {
            return Err(invalid_access_key(ak));
        }
        let amz_date = headers
            .get("x-amz-date")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let missing_date = || {
            forbidden(
                "AccessDenied",
                "AWS authentication requires a valid Date or x-amz-date header.",
            )
        };
        if amz_date.is_empty() {
            if !headers.contains_key(http::header::DATE) {
                return Err(missing_date());
            }
        } else {
            parse_amz_date(amz_date).ok_or_else(missing_date)?;
            if &amz_date[..8] != cred_date {
                return Err(malformed(
                    "The authorization header is malformed; Invalid credential date. Date is not the same as X-Amz-Date."
                        .into(),
                ));
            }
        }
        check_payload_hash(headers)?;
        unsigned_amz_headers(headers, signed)
    }

    pub(super) fn check_presigned(
        &self,
        query: &[(String, String)],
        headers: &HeaderMap,
    ) -> Result<(), Refusal> {
        let get = |k: &str| param(query, k);
        let qerr = |m: String| bad_request("AuthorizationQueryParametersError", m);
        if get("X-Amz-Security-Token").is_some() {
            return Err(bad_request(
                "InvalidToken",
                "The provided token is malformed or otherwise invalid.",
            ));
        }
        match get("X-Amz-Algorithm") {
            Some("AWS4-HMAC-SHA256") | None => {}
            Some("AWS4-ECDSA-P256-SHA256") => {
                return Err(qerr(
                    "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"".into(),
                ))
            }
            Some(_) => {
                return Err(qerr(
                    "X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256 and AWS4-ECDSA-P256-SHA256\""
                        .into(),
                ))
            }
        }
        let need = [
            "X-Amz-Algorithm",
            "X-Amz-Credential",
            "X-Amz-Signature",
            "X-Amz-Date",
            "X-Amz-SignedHeaders",
            "X-Amz-Expires",
        ];
        if need.iter().any(|k| get(k).is_none()) {
            return Err(qerr("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.".into()));
        }
        let cred = get("X-Amz-Credential").unwrap_or("");
        let scope_err =
            |m: String| qerr(format!("Error parsing the X-Amz-Credential parameter; {m}"));
        let (ak, cred_date) = check_scope(cred, &self.region, &scope_err)?;
        let amz_date = get("X-Amz-Date").unwrap_or("");
        let date = parse_amz_date(amz_date).ok_or_else(|| {
            qerr("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\"".into())
        })?;
        if &amz_date[..8] != cred_date {
            return Err(qerr(format!(
                "Invalid credential date {}. This date is not the same as X-Amz-Date: {}.",
                q(cred_date),
                q(&amz_date[..8])
            )));
        }
        let expires_s = get("X-Amz-Expires").unwrap_or("");
        let expires: i64 = expires_s
            .parse()
            .map_err(|_| qerr("X-Amz-Expires should be a number".into()))?;
        if expires < 0 {
            return Err(qerr("X-Amz-Expires must be non-negative".into()));
        }
        if expires == 0 {
            return Err(qerr("X-Amz-Expires must be at least 1 second".into()));
        }
        if expires > MAX_EXPIRES {
            return Err(qerr("X-Amz-Expires must be less than a week (in seconds); that is, the given X-Amz-Expires must be less than 604800 seconds".into()));
        }
        if self.unknown_key(ak) {
            return Err(invalid_access_key(ak));
        }
        let now = now_secs();
        if date - now > MAX_SKEW.as_secs() as i64 {
            return Err(forbidden("AccessDenied", "Request is not valid yet."));
        }
        if now > date + expires {
            return Err(forbidden("AccessDenied", "Request has expired.")
                .with("X-Amz-Expires", expires.to_string())
                .with("Expires", http_date(date + expires))
                .with("ServerTime", http_date(now)));
        }
        unsigned_amz_headers(headers, get("X-Amz-SignedHeaders").unwrap_or(""))
    }
}
