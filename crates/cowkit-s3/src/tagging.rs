//! Object tags: S3's rules for a tag set, from the URL-encoded
//! `x-amz-tagging` header (PutObject, CreateMultipartUpload, CopyObject)
//! or from a `<Tagging>` document (PutObjectTagging).
//!
//! A tag key has 1 to 128 characters, a value 0 to 256; both may hold
//! letters, digits, spaces and `_ . : / = + - @` only. An object has at
//! most [`MAX_OBJECT_TAGS`] tags, with distinct keys. Tags are kept in the
//! object's record (see `store`), in the order given.
//!
//! ```
//! use cowkit_s3::error::TagError;
//! use cowkit_s3::tagging::{parse_header, Tag};
//!
//! let tags = parse_header("project=blue&team=a+b")?;
//! assert_eq!(tags[1], Tag { key: "team".into(), value: "a b".into() });
//! assert_eq!(parse_header("k=v&k=w"), Err(TagError::Encoding));
//! # Ok::<(), TagError>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::error::TagError;

/// The most tags an object may have.
pub const MAX_OBJECT_TAGS: usize = 10;
/// The most tags a bucket may have.
pub const MAX_BUCKET_TAGS: usize = 50;
/// The longest tag key, in characters.
pub const MAX_KEY_CHARS: usize = 128;
/// The longest tag value, in characters.
pub const MAX_VALUE_CHARS: usize = 256;

/// One tag.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tag {
    /// The key.
    pub key: String,
    /// The value (may be empty).
    pub value: String,
}

/// Whether `c` may appear in a tag key or value.
fn allowed(c: char) -> bool {
    c.is_alphanumeric() || (c.is_whitespace() && !c.is_control()) || "_.:/=+-@".contains(c)
}

fn check_key(k: &str) -> Result<(), TagError> {
    if k.is_empty() || k.chars().count() > MAX_KEY_CHARS || !k.chars().all(allowed) {
        return Err(TagError::Key);
    }
    Ok(())
}

fn check_value(v: &str) -> Result<(), TagError> {
    if v.chars().count() > MAX_VALUE_CHARS || !v.chars().all(allowed) {
        return Err(TagError::Value);
    }
    Ok(())
}

/// Decode one `application/x-www-form-urlencoded` component: `+` is a
/// space, `%XX` a byte; the bytes must be UTF-8.
fn form_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// The tags of an `x-amz-tagging` header. Empty pairs (`&&`) are skipped;
/// a key without `=` has an empty value; an empty key before `=`, a bad
/// escape or a repeated key is [`TagError::Encoding`].
pub fn parse_header(h: &str) -> Result<Vec<Tag>, TagError> {
    let mut tags: Vec<Tag> = Vec::new();
    for pair in h.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k.is_empty() {
            return Err(TagError::Encoding);
        }
        let key = form_decode(k).ok_or(TagError::Encoding)?;
        let value = form_decode(v).ok_or(TagError::Encoding)?;
        check_key(&key)?;
        check_value(&value)?;
        if tags.iter().any(|t| t.key == key) {
            return Err(TagError::Encoding);
        }
        tags.push(Tag { key, value });
    }
    if tags.len() > MAX_OBJECT_TAGS {
        return Err(TagError::TooMany);
    }
    Ok(tags)
}

/// The tags of an object's `<Tagging>` document, as (key, value)
/// elements; a missing value is empty.
pub fn check_set<'a>(
    set: impl IntoIterator<Item = (Option<&'a str>, Option<&'a str>)>,
) -> Result<Vec<Tag>, TagError> {
    check_set_of(set, MAX_OBJECT_TAGS, TagError::TooMany)
}

/// The tags of a bucket (PutBucketTagging, CreateBucket), as
/// [`check_set`] reads an object's.
pub fn check_bucket_set<'a>(
    set: impl IntoIterator<Item = (Option<&'a str>, Option<&'a str>)>,
) -> Result<Vec<Tag>, TagError> {
    check_set_of(set, MAX_BUCKET_TAGS, TagError::TooManyOnBucket)
}

fn check_set_of<'a>(
    set: impl IntoIterator<Item = (Option<&'a str>, Option<&'a str>)>,
    max: usize,
    too_many: TagError,
) -> Result<Vec<Tag>, TagError> {
    let set: Vec<_> = set.into_iter().collect();
    if set.len() > max {
        return Err(too_many);
    }
    let mut tags: Vec<Tag> = Vec::with_capacity(set.len());
    for (k, v) in set {
        let (key, value) = (k.unwrap_or(""), v.unwrap_or(""));
        check_key(key)?;
        check_value(value)?;
        if tags.iter().any(|t| t.key == key) {
            return Err(TagError::Duplicate);
        }
        tags.push(Tag {
            key: key.to_string(),
            value: value.to_string(),
        });
    }
    Ok(tags)
}

/// The text of an XML element's content, entities decoded; `None` when
/// an entity is not one XML defines.
fn xml_text(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';')? + i;
        let c = match &rest[i + 1..end] {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            e => {
                let n = match e.strip_prefix("#x").or_else(|| e.strip_prefix("#X")) {
                    Some(h) => u32::from_str_radix(h, 16).ok()?,
                    None => e.strip_prefix('#')?.parse().ok()?,
                };
                char::from_u32(n)?
            }
        };
        out.push(c);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Some(out)
}

/// The content of the first `<name>` element in `s` (`Some("")` for
/// `<name/>`).
fn element<'a>(s: &'a str, name: &str) -> Option<&'a str> {
    if s.contains(&format!("<{name}/>")) {
        return Some("");
    }
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let start = s.find(&open)? + open.len();
    let len = s[start..].find(&close)?;
    Some(&s[start..start + len])
}

/// The (key, value) pairs of a `<Tags>` element, as [`check_bucket_set`]
/// takes them.
pub type TagPairs = Vec<(Option<String>, Option<String>)>;

/// Take the `<Tags>` element out of a CreateBucketConfiguration document
/// (s3s 0.14 has no field for it and would drop it): the document without
/// it, and its tags when there was one; [`crate::Error::MalformedXml`] when
/// the element is not well formed.
pub fn take_create_bucket_tags(xml: &str) -> crate::Result<(String, Option<TagPairs>)> {
    let bad = || crate::Error::MalformedXml;
    let (start, end, inner) = if let Some(at) = xml.find("<Tags/>") {
        (at, at + "<Tags/>".len(), "")
    } else if let Some(at) = xml.find("<Tags>") {
        let len = xml[at..].find("</Tags>").ok_or_else(bad)?;
        (
            at,
            at + len + "</Tags>".len(),
            &xml[at + "<Tags>".len()..at + len],
        )
    } else {
        return Ok((xml.to_string(), None));
    };
    let mut pairs = Vec::new();
    let mut rest = inner;
    while let Some(at) = rest.find("<Tag>") {
        let len = rest[at..].find("</Tag>").ok_or_else(bad)?;
        let tag = &rest[at + "<Tag>".len()..at + len];
        let text = |name| match element(tag, name) {
            None => Ok(None),
            Some(t) => xml_text(t).map(Some).ok_or_else(bad),
        };
        pairs.push((text("Key")?, text("Value")?));
        rest = &rest[at + len + "</Tag>".len()..];
    }
    Ok((format!("{}{}", &xml[..start], &xml[end..]), Some(pairs)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(tags: &[Tag]) -> Vec<(&str, &str)> {
        tags.iter()
            .map(|t| (t.key.as_str(), t.value.as_str()))
            .collect()
    }

    #[test]
    fn header_shapes() {
        assert!(parse_header("").unwrap().is_empty());
        assert!(parse_header("&&&").unwrap().is_empty());
        assert_eq!(pairs(&parse_header("key").unwrap()), [("key", "")]);
        assert_eq!(pairs(&parse_header("key=&").unwrap()), [("key", "")]);
        assert_eq!(
            pairs(&parse_header("a=1&b").unwrap()),
            [("a", "1"), ("b", "")]
        );
        assert_eq!(pairs(&parse_header("k@=v@").unwrap()), [("k@", "v@")]);
        assert_eq!(pairs(&parse_header("a=b=c").unwrap()), [("a", "b=c")]);
        assert_eq!(
            pairs(&parse_header("key%2E=value%2F&k++k=v%20v").unwrap()),
            [("key.", "value/"), ("k  k", "v v")]
        );
        assert_eq!(
            pairs(&parse_header("caf%C3%A9=%C3%BC1").unwrap()),
            [("café", "ü1")]
        );
        // Symbols other than the few listed are refused (here `€`).
        assert_eq!(parse_header("k=%E2%82%AC1"), Err(TagError::Value));
    }

    #[test]
    fn header_refusals() {
        for bad in ["=", "=v", "key%", "key%zz=v", "k=%FF", "k=v&k=w"] {
            assert_eq!(parse_header(bad), Err(TagError::Encoding), "{bad}");
        }
        for bad in ["key?=v", "key(=v", "k*=v", "k$=v", "k#=v", "k!=v", "k%21=v"] {
            assert_eq!(parse_header(bad), Err(TagError::Key), "{bad}");
        }
        for bad in ["k=v?", "k=v(", "k=v*", "k=v$", "k=v#", "k=v!", "k=a%2Cb"] {
            assert_eq!(parse_header(bad), Err(TagError::Value), "{bad}");
        }
        let eleven: Vec<String> = (0..11).map(|i| format!("k{i}=v")).collect();
        assert_eq!(parse_header(&eleven.join("&")), Err(TagError::TooMany));
        assert_eq!(parse_header(&eleven[..10].join("&")).unwrap().len(), 10);
        assert_eq!(
            parse_header(&format!("{}=v", "k".repeat(129))),
            Err(TagError::Key)
        );
        assert!(parse_header(&format!("{}=v", "k".repeat(128))).is_ok());
        assert_eq!(
            parse_header(&format!("k={}", "v".repeat(257))),
            Err(TagError::Value)
        );
    }

    #[test]
    fn document_sets() {
        let ok = check_set([(Some("a"), Some("1")), (Some("b c"), None)]).unwrap();
        assert_eq!(pairs(&ok), [("a", "1"), ("b c", "")]);
        assert_eq!(
            check_set([(Some("a"), Some("1")), (Some("a"), Some("2"))]),
            Err(TagError::Duplicate)
        );
        assert_eq!(check_set([(None, Some("1"))]), Err(TagError::Key));
        assert_eq!(
            check_set([(Some("data%20"), Some("1"))]),
            Err(TagError::Key)
        );
        assert_eq!(
            check_set([(Some("k"), Some("comma,separated"))]),
            Err(TagError::Value)
        );
        let long = "x".repeat(129);
        assert_eq!(check_set([(Some(long.as_str()), None)]), Err(TagError::Key));
        let keys: Vec<String> = (0..11).map(|i| format!("k{i}")).collect();
        assert_eq!(
            check_set(keys.iter().map(|k| (Some(k.as_str()), Some("v")))),
            Err(TagError::TooMany)
        );
        assert!(check_set([]).unwrap().is_empty());
        let fifty: Vec<String> = (0..51).map(|i| format!("k{i}")).collect();
        let pairs = |n: usize| fifty[..n].iter().map(|k| (Some(k.as_str()), Some("v")));
        assert_eq!(check_bucket_set(pairs(51)), Err(TagError::TooManyOnBucket));
        assert_eq!(check_bucket_set(pairs(50)).unwrap().len(), 50);
    }

    #[test]
    fn create_bucket_tags_taken_out() {
        let doc = "<CreateBucketConfiguration><LocationConstraint>eu</LocationConstraint>\
                   <Tags><Tag><Key>a&amp;b</Key><Value>1</Value></Tag><Tag><Key>c</Key></Tag>\
                   </Tags></CreateBucketConfiguration>";
        let (left, tags) = take_create_bucket_tags(doc).unwrap();
        assert_eq!(
            left,
            "<CreateBucketConfiguration><LocationConstraint>eu</LocationConstraint>\
             </CreateBucketConfiguration>"
        );
        assert_eq!(
            tags.unwrap(),
            [
                (Some("a&b".to_string()), Some("1".to_string())),
                (Some("c".to_string()), None)
            ]
        );
        let (left, tags) = take_create_bucket_tags("<C><Tags/></C>").unwrap();
        assert_eq!((left.as_str(), tags), ("<C></C>", Some(vec![])));
        let (left, tags) = take_create_bucket_tags("<C></C>").unwrap();
        assert_eq!((left.as_str(), tags), ("<C></C>", None));
        assert!(take_create_bucket_tags("<C><Tags><Tag><Key>k</Key></Tags></C>").is_err());
        assert!(
            take_create_bucket_tags("<C><Tags><Tag><Key>&bogus;</Key></Tag></Tags></C>").is_err()
        );
        assert_eq!(xml_text("&#65;&#x42;&lt;").as_deref(), Some("AB<"));
    }
}
