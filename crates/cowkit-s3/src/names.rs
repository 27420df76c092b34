//! Bucket and key names: which ones the gateway accepts and the paths they
//! become.
//!
//! A key is stored as the file `DIR/<bucket>/<key>`, so it must be a safe
//! relative path: no empty, `.` or `..` component, no leading `/`, no NUL,
//! components of at most 255 bytes. Such keys are refused with
//! `InvalidArgument` rather than mangled, so that every stored object is
//! readable by other tools under its own name. A key ending in one `/` is a
//! directory object: the directory `DIR/<bucket>/<key>`, empty as an object.

use crate::error::{Error, Result};

/// The directory under the root that holds the gateway's own state; it is
/// not a valid bucket name (S3 names cannot start with `.`).
pub const SYS_DIR: &str = ".cowkit-s3";

/// Longest key S3 allows, in bytes.
pub const MAX_KEY_LEN: usize = 1024;

/// Check `bucket` against the S3 bucket naming rules.
pub fn check_bucket(bucket: &str) -> Result<()> {
    let bad = |why| {
        Err(Error::InvalidBucketName {
            bucket: bucket.to_string(),
            why,
        })
    };
    if bucket == SYS_DIR {
        return bad("the name is reserved for the gateway's own state");
    }
    if !(3..=63).contains(&bucket.len()) {
        return bad("it must have 3 to 63 characters");
    }
    let b = bucket.as_bytes();
    if !b
        .iter()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'.' || *c == b'-')
    {
        return bad("only lowercase letters, digits, `.` and `-` are allowed");
    }
    let edge = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !edge(b[0]) || !edge(b[b.len() - 1]) {
        return bad("it must begin and end with a letter or digit");
    }
    if bucket.contains("..") {
        return bad("it must not contain `..`");
    }
    if bucket.parse::<std::net::Ipv4Addr>().is_ok() {
        return bad("it must not look like an IP address");
    }
    if bucket.starts_with("xn--") || bucket.ends_with("-s3alias") {
        return bad("the prefix `xn--` and the suffix `-s3alias` are reserved");
    }
    Ok(())
}

/// Check that `key` can be stored as a relative path, and return it.
pub fn check_key(key: &str) -> Result<&str> {
    let bad = |why| {
        Err(Error::InvalidKey {
            key: key.to_string(),
            why,
        })
    };
    if key.is_empty() {
        return bad("it is empty");
    }
    if key.len() > MAX_KEY_LEN {
        return bad("it is longer than 1024 bytes");
    }
    if key.contains('\0') {
        return bad("it contains a NUL byte");
    }
    let not_a_path = |why| {
        Err(Error::KeyPath {
            key: key.to_string(),
            why,
        })
    };
    // Dot segments (and keys of slashes only) get S3's bare 400. Keys S3
    // would store but a path cannot hold (`/x`, `a//b`) get
    // `InvalidArgument` saying why, so that the user learns it is this
    // gateway's limit.
    if key.bytes().all(|c| c == b'/') {
        return not_a_path("it is only `/`");
    }
    for c in key.split('/') {
        match c {
            "." => return not_a_path("it has a `.` component"),
            ".." => return not_a_path("it has a `..` component"),
            _ => {}
        }
    }
    if key.starts_with('/') {
        return bad("it starts with `/` (an absolute path)");
    }
    let path = key.strip_suffix('/').unwrap_or(key);
    for c in path.split('/') {
        match c {
            "" => return bad("it has an empty component (`//`)"),
            _ if c.len() > 255 => return bad("a component is longer than 255 bytes"),
            _ => {}
        }
    }
    Ok(key)
}

/// `key` with its `.` and `..` segments resolved lexically, as a path
/// would resolve them (`public/../private.txt` is `private.txt`); a `..`
/// above the bucket stays. Such keys are never stored ([`check_key`]
/// refuses them), but a bucket policy is decided on what the key would
/// name, so that a caller refused `private.txt` cannot learn more by
/// spelling it `public/../private.txt` than by spelling it plainly.
pub fn lexical_key(key: &str) -> std::borrow::Cow<'_, str> {
    if !key.split('/').any(|c| c == "." || c == "..") {
        return key.into();
    }
    let mut kept: Vec<&str> = Vec::new();
    for c in key.split('/') {
        match c {
            "." => {}
            ".." if kept.last().is_some_and(|l| *l != "..") => {
                kept.pop();
            }
            _ => kept.push(c),
        }
    }
    let mut out = kept.join("/");
    if key.ends_with('/') && !out.is_empty() && !out.ends_with('/') {
        out.push('/');
    }
    out.into()
}

/// Whether `key` names a directory object (it ends with `/`).
pub fn is_dir_key(key: &str) -> bool {
    key.ends_with('/')
}

/// Whether `name` is a valid multipart upload id (32 lowercase hex digits,
/// as this gateway makes them): anything else never reaches a path.
pub fn is_upload_id(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets() {
        for ok in ["abc", "my-bucket.1", "a".repeat(63).as_str()] {
            check_bucket(ok).unwrap();
        }
        for bad in [
            "ab",
            ".cowkit-s3",
            "ABC",
            "-abc",
            "abc-",
            "a..b",
            "192.168.1.1",
            "xn--abc",
            "a_b",
            &"a".repeat(64),
        ] {
            assert!(check_bucket(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys() {
        for ok in [
            "a",
            "a/b/c",
            "ünïcödé/ключ/鍵",
            "a b+c=d&e",
            ".hidden",
            "a..b",
            "a/",
            "a/b/",
        ] {
            check_key(ok).unwrap();
        }
        for bad in [
            "",
            "/etc/passwd",
            "../x",
            "a/../b",
            "a/./b",
            "a//b",
            "a//",
            "/",
            "./",
            ".",
            "..",
            "a\0b",
        ] {
            assert!(check_key(bad).is_err(), "{bad:?}");
        }
        assert!(check_key(&"x".repeat(256)).is_err());
        assert!(check_key(&"x/".repeat(600)).is_err());
    }

    #[test]
    fn lexical_keys_resolve_dot_segments() {
        for (k, want) in [
            ("private.txt", "private.txt"),
            ("a//b", "a//b"),
            ("public/../private.txt", "private.txt"),
            ("public/./x", "public/x"),
            ("a/b/../../c/", "c/"),
            ("../x", "../x"),
            ("a/../../x", "../x"),
            ("./", ""),
            ("public/..", ""),
        ] {
            assert_eq!(lexical_key(k), want, "{k:?}");
        }
    }

    #[test]
    fn keys_that_are_not_relative_paths_are_key_path_errors() {
        // The ones S3 answers with a bare 400 (dot segments, only
        // slashes, as the conformance suite's list); not the keys S3 would
        // store but a path cannot hold, nor NUL or length.
        for k in [
            "../x",
            "a/../b",
            "a/./b",
            "/",
            "./",
            ".",
            "..",
            "//",
            "/.",
            "/..",
            "for/../../bar/",
            "/a/../../b/../../c/../../../etc/passwd",
        ] {
            assert!(matches!(check_key(k), Err(Error::KeyPath { .. })), "{k:?}");
        }
        for k in [
            "/etc/passwd",
            "a//b",
            "a/b//",
            "",
            "a\0b",
            "x".repeat(256).as_str(),
            "k".repeat(1025).as_str(),
        ] {
            assert!(
                matches!(check_key(k), Err(Error::InvalidKey { .. })),
                "{k:?}"
            );
        }
    }

    #[test]
    fn upload_ids() {
        assert!(is_upload_id("0123456789abcdef0123456789abcdef"));
        assert!(!is_upload_id("../../../../etc/passwd0123456789ab"));
        assert!(!is_upload_id("0123456789ABCDEF0123456789abcdef"));
    }
}
