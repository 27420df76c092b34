//! S3's conditional requests, read from the raw header values.
//!
//! s3s 0.14 parses `If-Match` and its relatives as RFC 9110 entity tags and
//! refuses a request whose value is not quoted; S3 takes `abc`, `"abc"`,
//! `W/"abc"` and `*` alike, and ignores a date it cannot read. So the
//! server takes these headers off the request before s3s parses it (see
//! `handler.rs`: after the signature is verified when they are signed), and
//! hands their values over as a [`Conditions`] request extension, which the
//! gateway evaluates here.

use http::HeaderMap;
use std::time::{SystemTime, UNIX_EPOCH};

/// The headers [`Conditions`] holds, taken off requests before s3s parses
/// them.
pub const HEADERS: [&str; 10] = [
    "if-match",
    "if-none-match",
    "if-modified-since",
    "if-unmodified-since",
    "x-amz-copy-source-if-match",
    "x-amz-copy-source-if-none-match",
    "x-amz-copy-source-if-modified-since",
    "x-amz-copy-source-if-unmodified-since",
    "x-amz-if-match-size",
    "x-amz-if-match-last-modified-time",
];

/// A request's precondition headers, as sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Conditions {
    /// `If-Match`.
    pub if_match: Option<String>,
    /// `If-None-Match`.
    pub if_none_match: Option<String>,
    /// `If-Modified-Since`.
    pub if_modified_since: Option<String>,
    /// `If-Unmodified-Since`.
    pub if_unmodified_since: Option<String>,
    /// `x-amz-copy-source-if-match`.
    pub copy_if_match: Option<String>,
    /// `x-amz-copy-source-if-none-match`.
    pub copy_if_none_match: Option<String>,
    /// `x-amz-copy-source-if-modified-since`.
    pub copy_if_modified_since: Option<String>,
    /// `x-amz-copy-source-if-unmodified-since`.
    pub copy_if_unmodified_since: Option<String>,
    /// `x-amz-if-match-size` (DeleteObject).
    pub if_match_size: Option<String>,
    /// `x-amz-if-match-last-modified-time` (DeleteObject).
    pub if_match_last_modified_time: Option<String>,
}

/// How a read's preconditions turned out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Go on.
    Proceed,
    /// 304 Not Modified.
    NotModified,
    /// 412 Precondition Failed.
    PreconditionFailed,
}

/// How a write's `If-Match` / `If-None-Match` turn out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Go on.
    Proceed,
    /// 412 Precondition Failed.
    PreconditionFailed,
    /// 404 NoSuchKey: `If-Match` on a key with no object.
    NoSuchKey,
    /// 501: both headers, or `If-None-Match` with an entity tag (S3 only
    /// takes `*`).
    NotImplemented,
}

/// What the conditions are compared with.
#[derive(Debug, Clone, Copy)]
pub struct Current<'a> {
    /// The object's entity tag, without quotes.
    pub etag: &'a str,
    /// Its modification time.
    pub mtime: SystemTime,
    /// Its size.
    pub size: u64,
}

impl Conditions {
    /// The conditions in `headers`; `None` when there are none. An empty
    /// value counts as absent; of repeated values, the first.
    pub fn from_headers(headers: &HeaderMap) -> Option<Conditions> {
        let get = |name: &str| {
            headers
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let c = Conditions {
            if_match: get(HEADERS[0]),
            if_none_match: get(HEADERS[1]),
            if_modified_since: get(HEADERS[2]),
            if_unmodified_since: get(HEADERS[3]),
            copy_if_match: get(HEADERS[4]),
            copy_if_none_match: get(HEADERS[5]),
            copy_if_modified_since: get(HEADERS[6]),
            copy_if_unmodified_since: get(HEADERS[7]),
            if_match_size: get(HEADERS[8]),
            if_match_last_modified_time: get(HEADERS[9]),
        };
        (c != Conditions::default()).then_some(c)
    }

    /// GetObject and HeadObject (RFC 9110 §13.2.2, which S3 follows):
    /// `If-Match` (or, without it, `If-Unmodified-Since`) failing is 412;
    /// then `If-None-Match` matching (or, without it, the object not
    /// modified since `If-Modified-Since`) is 304.
    pub fn read(&self, cur: Current<'_>) -> Outcome {
        evaluate(
            [
                self.if_match.as_deref(),
                self.if_none_match.as_deref(),
                self.if_modified_since.as_deref(),
                self.if_unmodified_since.as_deref(),
            ],
            cur,
        )
    }

    /// CopyObject and UploadPartCopy's `x-amz-copy-source-if-*`, on the
    /// source: the same evaluation, but S3 answers every failed one with
    /// 412, also where a read gets 304.
    pub fn copy_source(&self, cur: Current<'_>) -> Outcome {
        match evaluate(
            [
                self.copy_if_match.as_deref(),
                self.copy_if_none_match.as_deref(),
                self.copy_if_modified_since.as_deref(),
                self.copy_if_unmodified_since.as_deref(),
            ],
            cur,
        ) {
            Outcome::Proceed => Outcome::Proceed,
            _ => Outcome::PreconditionFailed,
        }
    }

    /// Whether there is anything for [`Conditions::write`] to check.
    pub fn has_write(&self) -> bool {
        self.if_match.is_some() || self.if_none_match.is_some()
    }

    /// PutObject, CompleteMultipartUpload and CopyObject's destination:
    /// `If-None-Match: *` (no object there yet) or `If-Match` (the object
    /// there has that entity tag). Both at once, or `If-None-Match` with
    /// an entity tag, are not implemented by S3 either.
    pub fn write(&self, cur: Option<Current<'_>>) -> WriteOutcome {
        match (self.if_match.as_deref(), self.if_none_match.as_deref()) {
            (None, None) => WriteOutcome::Proceed,
            (Some(_), Some(_)) => WriteOutcome::NotImplemented,
            (None, Some(n)) if n != "*" => WriteOutcome::NotImplemented,
            (None, Some(_)) => match cur {
                Some(_) => WriteOutcome::PreconditionFailed,
                None => WriteOutcome::Proceed,
            },
            (Some(m), None) => match cur {
                None => WriteOutcome::NoSuchKey,
                Some(c) if etag_matches(m, c.etag) => WriteOutcome::Proceed,
                Some(_) => WriteOutcome::PreconditionFailed,
            },
        }
    }

    /// Whether there is anything for [`Conditions::delete`] to check.
    pub fn has_delete(&self) -> bool {
        self.if_match.is_some()
            || self.if_match_size.is_some()
            || self.if_match_last_modified_time.is_some()
    }

    /// DeleteObject: `If-Match`, `x-amz-if-match-size` and
    /// `x-amz-if-match-last-modified-time` must all hold (404 NoSuchKey
    /// when there is no object). A size or time S3 could not read fails.
    pub fn delete(&self, cur: Option<Current<'_>>) -> WriteOutcome {
        if !self.has_delete() {
            return WriteOutcome::Proceed;
        }
        let Some(c) = cur else {
            return WriteOutcome::NoSuchKey;
        };
        let etag_ok = self
            .if_match
            .as_deref()
            .is_none_or(|m| etag_matches(m, c.etag));
        let size_ok = self
            .if_match_size
            .as_deref()
            .is_none_or(|s| s.parse::<u64>().ok() == Some(c.size));
        let time_ok = self
            .if_match_last_modified_time
            .as_deref()
            .is_none_or(|t| parse_http_date(t) == Some(secs(c.mtime)));
        if etag_ok && size_ok && time_ok {
            WriteOutcome::Proceed
        } else {
            WriteOutcome::PreconditionFailed
        }
    }
}

/// `[if-match, if-none-match, if-modified-since, if-unmodified-since]`.
fn evaluate(h: [Option<&str>; 4], cur: Current<'_>) -> Outcome {
    let [m, n, ims, ius] = h;
    let mtime = secs(cur.mtime);
    match m {
        Some(m) if !etag_matches(m, cur.etag) => return Outcome::PreconditionFailed,
        Some(_) => {}
        // A date that does not parse is ignored, as S3 does.
        None => {
            if ius
                .and_then(parse_http_date)
                .is_some_and(|since| mtime > since)
            {
                return Outcome::PreconditionFailed;
            }
        }
    }
    match n {
        Some(n) if etag_matches(n, cur.etag) => Outcome::NotModified,
        Some(_) => Outcome::Proceed,
        None => {
            if ims
                .and_then(parse_http_date)
                .is_some_and(|since| mtime <= since)
            {
                Outcome::NotModified
            } else {
                Outcome::Proceed
            }
        }
    }
}

/// Whether a condition's list of entity tags (or `*`) names `etag`;
/// quotes and a weak `W/` prefix are optional.
pub fn etag_matches(list: &str, etag: &str) -> bool {
    let etag = crate::text::bare_etag(etag);
    list.split(',').map(str::trim).any(|t| {
        t == "*" || {
            let t = t.strip_prefix("W/").unwrap_or(t);
            let t = t
                .strip_prefix('"')
                .and_then(|t| t.strip_suffix('"'))
                .unwrap_or(t);
            t == etag
        }
    })
}

/// Whole seconds since the epoch (HTTP dates have no finer resolution).
fn secs(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs_f64().ceil() as i64),
    }
}

/// An HTTP date (RFC 9110 §5.6.7: IMF-fixdate, RFC 850 or asctime form)
/// → seconds since the epoch.
pub fn parse_http_date(s: &str) -> Option<i64> {
    let s = s.trim();
    let words: Vec<&str> = s.split_ascii_whitespace().collect();
    let (day, month, year, time) = match words.as_slice() {
        // Sun, 06 Nov 1994 08:49:37 GMT
        [_, d, m, y, t, "GMT"] => (d.parse().ok()?, *m, y.parse().ok()?, *t),
        // Sunday, 06-Nov-94 08:49:37 GMT
        [_, dmy, t, "GMT"] => {
            let mut p = dmy.split('-');
            let (d, m, y) = (p.next()?, p.next()?, p.next()?);
            let y: i64 = y.parse().ok()?;
            // Two-digit years: the nearest century that is not more than
            // 50 years ahead (RFC 9110).
            let y = if y < 50 {
                2000 + y
            } else if y < 100 {
                1900 + y
            } else {
                y
            };
            (d.parse().ok()?, m, y, *t)
        }
        // Sun Nov  6 08:49:37 1994
        [_, m, d, t, y] => (d.parse().ok()?, *m, y.parse().ok()?, *t),
        _ => return None,
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|x| *x == month)? as i64 + 1;
    let mut hms = time.split(':').map(|x| {
        (x.len() == 2 && x.bytes().all(|c| c.is_ascii_digit()))
            .then(|| x.parse::<i64>().ok())
            .flatten()
    });
    let (h, mi, se) = (hms.next()??, hms.next()??, hms.next()??);
    if hms.next().is_some() || !(1..=31).contains(&day) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    Some(crate::civil::days_from_civil(year, month, day) * 86400 + h * 3600 + mi * 60 + se)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const ETAG: &str = "0123456789abcdef0123456789abcdef";
    // 2024-05-01 12:00:00 UTC.
    const T: u64 = 1_714_564_800;

    fn cur() -> Current<'static> {
        Current {
            etag: ETAG,
            mtime: UNIX_EPOCH + Duration::from_millis(T * 1000 + 250),
            size: 5,
        }
    }

    const BEFORE: &str = "Tue, 30 Apr 2024 12:00:00 GMT";
    const AT: &str = "Wed, 01 May 2024 12:00:00 GMT";
    const AFTER: &str = "Thu, 02 May 2024 12:00:00 GMT";

    #[test]
    fn http_dates_in_all_three_forms() {
        assert_eq!(parse_http_date(AT), Some(T as i64));
        assert_eq!(
            parse_http_date("Wednesday, 01-May-24 12:00:00 GMT"),
            Some(T as i64)
        );
        assert_eq!(parse_http_date("Wed May  1 12:00:00 2024"), Some(T as i64));
        assert_eq!(
            parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(784_111_777)
        );
        for bad in [
            "",
            "yesterday",
            "Wed, 01 May 2024 12:00 GMT",
            "Wed, 01 Foo 2024 12:00:00 GMT",
            "Wed, 32 May 2024 12:00:00 GMT",
            "2024-05-01T12:00:00Z",
        ] {
            assert_eq!(parse_http_date(bad), None, "{bad}");
        }
    }

    #[test]
    fn entity_tags_quoted_or_not() {
        for ok in [
            ETAG,
            &format!("\"{ETAG}\""),
            &format!("W/\"{ETAG}\""),
            "*",
            &format!("\"x\", \"{ETAG}\""),
        ] {
            assert!(etag_matches(ok, &format!("\"{ETAG}\"")), "{ok}");
            assert!(etag_matches(ok, ETAG), "{ok}");
        }
        for no in ["x", "\"x\"", "", &ETAG[1..], &format!("{ETAG}0")] {
            assert!(!etag_matches(no, ETAG), "{no}");
        }
    }

    fn read(m: Option<&str>, n: Option<&str>, ims: Option<&str>, ius: Option<&str>) -> Outcome {
        let c = Conditions {
            if_match: m.map(str::to_string),
            if_none_match: n.map(str::to_string),
            if_modified_since: ims.map(str::to_string),
            if_unmodified_since: ius.map(str::to_string),
            ..Default::default()
        };
        c.read(cur())
    }

    #[test]
    fn read_precedence() {
        use Outcome::*;
        let (good, bad) = (Some(ETAG), Some("other"));
        let dates = [None, Some(BEFORE), Some(AFTER)];
        for ims in dates {
            for ius in dates {
                // A failing If-Match is 412 whatever else.
                for n in [None, good, bad] {
                    assert_eq!(read(bad, n, ims, ius), PreconditionFailed);
                }
                // A matching If-None-Match is 304 once If-Match holds.
                assert_eq!(read(good, good, ims, ius), NotModified);
                // If-Match holding overrides If-Unmodified-Since; a
                // non-matching If-None-Match overrides If-Modified-Since.
                assert_eq!(read(good, bad, ims, ius), Proceed);
            }
        }
        // Without If-Match, If-Unmodified-Since decides 412 first.
        assert_eq!(read(None, good, None, Some(BEFORE)), PreconditionFailed);
        assert_eq!(
            read(None, None, Some(AFTER), Some(BEFORE)),
            PreconditionFailed
        );
        assert_eq!(read(None, good, None, Some(AFTER)), NotModified);
        assert_eq!(read(None, bad, Some(AFTER), Some(AFTER)), Proceed);
        assert_eq!(
            read(None, bad, Some(AFTER), Some(BEFORE)),
            PreconditionFailed
        );
        // If-Modified-Since alone.
        assert_eq!(read(None, None, Some(AFTER), None), NotModified);
        assert_eq!(read(None, None, Some(BEFORE), None), Proceed);
        assert_eq!(read(good, None, Some(AFTER), Some(BEFORE)), NotModified);
        assert_eq!(read(good, None, Some(BEFORE), Some(BEFORE)), Proceed);
        // Second resolution: modified at T.25 is not modified since T, and
        // is unmodified since T.
        assert_eq!(read(None, None, Some(AT), None), NotModified);
        assert_eq!(read(None, None, None, Some(AT)), Proceed);
        // Dates that do not parse are ignored.
        assert_eq!(read(None, None, Some("soon"), Some("never")), Proceed);
        assert_eq!(read(None, None, None, None), Proceed);
    }

    /// The VersityGW suite's table of the four conditions (`*_conditional_reads`):
    /// `If-Match` and `If-None-Match` each wrong, right or absent; the two
    /// dates each before the object's time (so it was modified since), after
    /// it, or absent, in the order (before, before), (before, after),
    /// (before, -), (after, before), ... (-, -). `C` 412, `M` 304, `.` go on.
    const SUITE_TABLE: [(Option<&str>, Option<&str>, &str); 9] = [
        (Some("bad"), Some("bad"), "CCCCCCCCC"),
        (Some("bad"), Some(ETAG), "CCCCCCCCC"),
        (Some("bad"), None, "CCCCCCCCC"),
        (Some(ETAG), Some("bad"), "........."),
        (Some(ETAG), Some(ETAG), "MMMMMMMMM"),
        (Some(ETAG), None, "...MMM..."),
        (None, Some("bad"), "C..C..C.."),
        (None, Some(ETAG), "CMMCMMCMM"),
        (None, None, "C..CMMC.."),
    ];

    #[test]
    fn precedence_is_the_suites_for_reads_and_copies() {
        let dates = [Some(BEFORE), Some(AFTER), None];
        for (m, n, want) in SUITE_TABLE {
            let mut want = want.chars();
            for ims in dates {
                for ius in dates {
                    let w = want.next().unwrap();
                    let got = read(m, n, ims, ius);
                    let expect = match w {
                        'C' => Outcome::PreconditionFailed,
                        'M' => Outcome::NotModified,
                        _ => Outcome::Proceed,
                    };
                    assert_eq!(got, expect, "{m:?} {n:?} {ims:?} {ius:?}");
                    // The same order on a copy's source; where a read gets
                    // 304, S3 documents 412 for a copy (the suite wants 304).
                    let c = Conditions {
                        copy_if_match: m.map(str::to_string),
                        copy_if_none_match: n.map(str::to_string),
                        copy_if_modified_since: ims.map(str::to_string),
                        copy_if_unmodified_since: ius.map(str::to_string),
                        ..Default::default()
                    };
                    let copy = if w == '.' {
                        Outcome::Proceed
                    } else {
                        Outcome::PreconditionFailed
                    };
                    assert_eq!(c.copy_source(cur()), copy, "{m:?} {n:?} {ims:?} {ius:?}");
                }
            }
        }
    }

    #[test]
    fn copy_source_failures_are_412() {
        let c = Conditions {
            copy_if_none_match: Some(ETAG.into()),
            ..Default::default()
        };
        assert_eq!(c.copy_source(cur()), Outcome::PreconditionFailed);
        let c = Conditions {
            copy_if_modified_since: Some(AFTER.into()),
            ..Default::default()
        };
        assert_eq!(c.copy_source(cur()), Outcome::PreconditionFailed);
        let c = Conditions {
            copy_if_match: Some(ETAG.into()),
            copy_if_unmodified_since: Some(BEFORE.into()),
            // The plain headers are the destination's, not the source's.
            if_none_match: Some(ETAG.into()),
            ..Default::default()
        };
        assert_eq!(c.copy_source(cur()), Outcome::Proceed);
    }

    fn write(m: Option<&str>, n: Option<&str>, exists: bool) -> WriteOutcome {
        let c = Conditions {
            if_match: m.map(str::to_string),
            if_none_match: n.map(str::to_string),
            ..Default::default()
        };
        c.write(exists.then(cur))
    }

    #[test]
    fn write_conditions() {
        use WriteOutcome::*;
        for exists in [true, false] {
            assert_eq!(write(None, None, exists), Proceed);
            assert_eq!(write(Some(ETAG), Some("*"), exists), NotImplemented);
            assert_eq!(write(Some("x"), Some(ETAG), exists), NotImplemented);
            assert_eq!(write(None, Some(ETAG), exists), NotImplemented);
            assert_eq!(write(None, Some("\"x\""), exists), NotImplemented);
        }
        assert_eq!(write(None, Some("*"), true), PreconditionFailed);
        assert_eq!(write(None, Some("*"), false), Proceed);
        assert_eq!(write(Some(ETAG), None, true), Proceed);
        assert_eq!(write(Some(&format!("\"{ETAG}\"")), None, true), Proceed);
        assert_eq!(write(Some("*"), None, true), Proceed);
        assert_eq!(write(Some("x"), None, true), PreconditionFailed);
        assert_eq!(write(Some(ETAG), None, false), NoSuchKey);
    }

    #[test]
    fn delete_conditions() {
        use WriteOutcome::*;
        let del = |m: Option<&str>, size: Option<&str>, t: Option<&str>, exists: bool| {
            Conditions {
                if_match: m.map(str::to_string),
                if_match_size: size.map(str::to_string),
                if_match_last_modified_time: t.map(str::to_string),
                ..Default::default()
            }
            .delete(exists.then(cur))
        };
        assert_eq!(del(None, None, None, false), Proceed);
        assert_eq!(del(Some(ETAG), Some("5"), Some(AT), true), Proceed);
        assert_eq!(del(None, Some("5"), None, true), Proceed);
        assert_eq!(
            del(Some("x"), Some("5"), Some(AT), true),
            PreconditionFailed
        );
        assert_eq!(
            del(Some(ETAG), Some("6"), Some(AT), true),
            PreconditionFailed
        );
        assert_eq!(
            del(Some(ETAG), Some("five"), None, true),
            PreconditionFailed
        );
        assert_eq!(del(None, None, Some(BEFORE), true), PreconditionFailed);
        assert_eq!(del(Some(ETAG), None, None, false), NoSuchKey);
    }

    #[test]
    fn from_headers_takes_raw_values() {
        let mut h = HeaderMap::new();
        assert_eq!(Conditions::from_headers(&h), None);
        h.insert("if-match", http::HeaderValue::from_static("abc"));
        h.insert("if-none-match", http::HeaderValue::from_static(""));
        h.insert(
            "x-amz-copy-source-if-modified-since",
            http::HeaderValue::from_static(" Wed, 01 May 2024 12:00:00 GMT "),
        );
        let c = Conditions::from_headers(&h).expect("conditions");
        assert_eq!(c.if_match.as_deref(), Some("abc"));
        assert_eq!(c.if_none_match, None);
        assert_eq!(c.copy_if_modified_since.as_deref(), Some(AT));
    }
}
