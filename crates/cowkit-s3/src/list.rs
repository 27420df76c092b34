//! ListObjects / ListObjectsV2: prefix, delimiter, markers, max-keys, and
//! the `encoding-type=url` that botocore asks for by default.

use s3s::dto::{CommonPrefix, ETag, Object, Timestamp};

use crate::error::Result;
use crate::store::{ObjectInfo, Store};

/// What to list.
#[derive(Debug, Clone)]
pub struct Query {
    /// Only keys starting with this.
    pub prefix: String,
    /// Group keys by the part up to this after the prefix.
    pub delimiter: Option<String>,
    /// Only entries after this key or common prefix (marker, start-after or
    /// continuation token).
    pub after: Option<String>,
    /// At most this many keys and common prefixes together.
    pub max_keys: i32,
}

/// One page of a listing.
#[derive(Debug, Default)]
pub struct Listing {
    /// Keys with their records.
    pub keys: Vec<(String, ObjectInfo)>,
    /// Common prefixes.
    pub common: Vec<String>,
    /// More entries follow.
    pub truncated: bool,
    /// The last key or common prefix returned (the next marker).
    pub last: Option<String>,
}

impl Listing {
    /// The keys as S3 objects.
    pub fn objects(&self, enc: &Encoder) -> Vec<Object> {
        self.keys
            .iter()
            .map(|(k, info)| Object {
                key: Some(enc.enc(k)),
                size: Some(info.meta.size as i64),
                e_tag: Some(ETag::Strong(info.meta.etag.clone())),
                last_modified: Some(Timestamp::from(info.mtime)),
                storage_class: Some(s3s::dto::ObjectStorageClass::from_static(
                    s3s::dto::ObjectStorageClass::STANDARD,
                )),
                checksum_algorithm: info.meta.checksum.as_ref().map(|c| {
                    vec![s3s::dto::ChecksumAlgorithm::from(
                        c.algorithm.name().to_string(),
                    )]
                }),
                checksum_type: info
                    .meta
                    .checksum
                    .as_ref()
                    .map(|c| s3s::dto::ChecksumType::from(c.kind.name().to_string())),
                ..Default::default()
            })
            .collect()
    }

    /// The objects as versions: each object's only version, `null`.
    pub fn versions(&self, enc: &Encoder, owner: &s3s::dto::Owner) -> Vec<s3s::dto::ObjectVersion> {
        self.objects(enc)
            .into_iter()
            .map(|o| s3s::dto::ObjectVersion {
                checksum_algorithm: o.checksum_algorithm,
                checksum_type: o.checksum_type,
                e_tag: o.e_tag,
                is_latest: Some(true),
                key: o.key,
                last_modified: o.last_modified,
                owner: Some(owner.clone()),
                size: o.size,
                storage_class: Some(s3s::dto::ObjectVersionStorageClass::from_static(
                    s3s::dto::ObjectVersionStorageClass::STANDARD,
                )),
                version_id: Some("null".into()),
                ..Default::default()
            })
            .collect()
    }

    /// The common prefixes as S3 wants them.
    pub fn prefixes(&self, enc: &Encoder) -> Vec<CommonPrefix> {
        self.common
            .iter()
            .map(|p| CommonPrefix {
                prefix: Some(enc.enc(p)),
            })
            .collect()
    }
}

/// List one page of `bucket`.
pub fn list(store: &Store, bucket: &str, q: &Query) -> Result<Listing> {
    let keys = store.keys(bucket, &q.prefix)?;
    let max = q.max_keys.clamp(0, 1000) as usize;
    let mut out = Listing::default();
    let mut n = 0;
    for key in keys {
        if let Some(after) = &q.after {
            // After a common prefix, every key under it was covered.
            let under_prefix = q
                .delimiter
                .as_ref()
                .is_some_and(|d| after.ends_with(d.as_str()))
                && key.starts_with(after.as_str());
            if key.as_str() <= after.as_str() || under_prefix {
                continue;
            }
        }
        let common = q.delimiter.as_ref().and_then(|d| {
            key[q.prefix.len()..]
                .find(d.as_str())
                .map(|i| key[..q.prefix.len() + i + d.len()].to_string())
        });
        if let Some(c) = &common {
            if out.common.last() == Some(c) {
                continue;
            }
        }
        if n == max {
            out.truncated = true;
            break;
        }
        match common {
            Some(c) => {
                out.last = Some(c.clone());
                out.common.push(c);
            }
            None => {
                let Some(info) = store.stat_object(bucket, &key)? else {
                    continue;
                };
                out.last = Some(key.clone());
                out.keys.push((key, info));
            }
        }
        n += 1;
    }
    Ok(out)
}

/// The continuation token for `last`: the key itself (clients treat it as
/// opaque; the conformance suite expects the key).
pub fn encode_token(last: &str) -> String {
    last.to_string()
}

/// The marker in a continuation token.
pub fn decode_token(t: &str) -> Option<String> {
    (!t.is_empty()).then(|| t.to_string())
}

/// Percent-encodes keys when the client asked for `encoding-type=url`.
#[derive(Debug, Clone, Copy)]
pub struct Encoder {
    url: bool,
}

impl Encoder {
    /// From the request's `encoding-type`.
    pub fn new(encoding_type: Option<&str>) -> Self {
        Encoder {
            url: encoding_type.is_some_and(|e| e.eq_ignore_ascii_case("url")),
        }
    }

    /// `s`, percent-encoded if asked (everything but unreserved characters
    /// and `/`).
    pub fn enc(&self, s: &str) -> String {
        if !self.url {
            return s.to_string();
        }
        let mut out = String::with_capacity(s.len());
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_encoding() {
        let e = Encoder::new(Some("url"));
        assert_eq!(e.enc("a b+c/ü"), "a%20b%2Bc/%C3%BC");
        assert_eq!(Encoder::new(None).enc("a b"), "a b");
    }

    #[test]
    fn tokens() {
        assert_eq!(decode_token(&encode_token("ü/x")).as_deref(), Some("ü/x"));
        assert_eq!(decode_token(""), None);
    }
}
