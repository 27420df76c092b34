//! Text helpers shared across the crate: XML escaping, the pairs of a
//! query string, an ETag as a client gives it.

/// Escape text for XML.
pub fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c => o.push(c),
        }
    }
    o
}

/// A query string's pairs, percent-decoded.
///
/// `a=b&c=d` with percent-decoding (`+` stays a plus, as in S3 queries).
pub fn query_pairs(q: &str) -> Vec<(String, String)> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (pct_decode(k), pct_decode(v))
        })
        .collect()
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        // Bytes, not `&s[..]`: a `%` followed by a multi-byte character
        // is no escape, and must not split the character (found by the
        // `s3_request` fuzzer: a panic in the request's task).
        if b[i] == b'%' {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (
                b.get(i + 1).copied().and_then(hex),
                b.get(i + 2).copied().and_then(hex),
            ) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An ETag as given by a client, without quotes or a `W/` prefix.
pub fn bare_etag(s: &str) -> &str {
    s.trim().trim_start_matches("W/").trim_matches('"')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_before_a_multibyte_character_is_kept() {
        // Found by the `s3_request` fuzzer: `%2` then U+FEFF panicked.
        assert_eq!(pct_decode("a%2\u{feff}Fs3%2F"), "a%2\u{feff}Fs3/");
        assert_eq!(pct_decode("%41%4"), "A%4");
        assert_eq!(pct_decode("%"), "%");
        assert_eq!(pct_decode("%zz%e2%82%ac"), "%zz\u{20ac}");
    }
}
