//! Version ids: 26 characters of Crockford's base32 (the ULID form that
//! VersityGW gives too), a 48-bit time in milliseconds then 80 random bits.
//! Ids made by one gateway are strictly increasing, so ordering records by
//! id orders them by when they were written; the literal `null` names the
//! version written while a bucket was not (or no longer) versioned.
//!
//! A version id becomes a file name under `.cowkit-s3/versions/`, so
//! nothing else may: [`check`] accepts `null` and the 26-character form
//! only (no `/`, no `.`), before any path is made from it.

use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// The version of objects written while the bucket was not versioned.
pub const NULL: &str = "null";

/// Length of a version id.
pub const LEN: usize = 26;

const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// The last id this process made (so the next one is larger).
static LAST: Mutex<u128> = Mutex::new(0);

/// `v` as a version id.
pub fn encode(v: u128) -> String {
    (0..LEN)
        .rev()
        .map(|i| ALPHABET[((v >> (5 * i)) & 31) as usize] as char)
        .collect()
}

/// A version id's value; `None` when `s` is not one.
pub fn decode(s: &str) -> Option<u128> {
    if s.len() != LEN || s.as_bytes()[0] > b'7' {
        return None;
    }
    s.bytes().try_fold(0u128, |acc, c| {
        let d = ALPHABET.iter().position(|a| *a == c)?;
        Some((acc << 5) | d as u128)
    })
}

/// Whether `s` names a version: `null` or an id of the form this module
/// makes.
pub fn check(s: &str) -> bool {
    s == NULL || decode(s).is_some()
}

/// A new version id, larger than every id this process made before.
pub fn new_id() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis()
        & ((1 << 48) - 1);
    let rand = u128::from_str_radix(&crate::fsutil::rand_hex(10), 16).unwrap_or(0);
    let mut last = LAST.lock().unwrap_or_else(|p| p.into_inner());
    let v = ((ms << 80) | rand).max(*last + 1);
    *last = v;
    encode(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_increase() {
        let mut prev = String::new();
        for _ in 0..1000 {
            let id = new_id();
            assert_eq!(id.len(), LEN);
            assert!(check(&id), "{id}");
            assert_eq!(encode(decode(&id).unwrap()), id);
            assert!(id > prev, "{id} after {prev}");
            prev = id;
        }
    }

    #[test]
    fn only_null_and_the_ulid_form_are_version_ids() {
        assert!(check("null"));
        // VersityGW's own form, as its suite sends it.
        assert!(check("01G65Z755AFWAKHE12NY0CQ9FH"));
        for bad in [
            "",
            "NULL",
            "invalid_version_id",
            "../../secret.txt",
            "01G65Z755AFWAKHE12NY0CQ9F",
            "01G65Z755AFWAKHE12NY0CQ9FHX",
            "01g65z755afwakhe12ny0cq9fh",
            "01G65Z755AFWAKHE12NY0CQ9F/",
            "01G65Z755AFWAKHE12NY0CQ9FI",
            "81G65Z755AFWAKHE12NY0CQ9FH",
        ] {
            assert!(!check(bad), "{bad:?}");
        }
    }
}
