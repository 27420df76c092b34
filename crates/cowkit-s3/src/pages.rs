//! One page of a multipart listing, as S3 pages it: the parts of an upload
//! (ListParts: `part-number-marker`, `max-parts`) and a bucket's uploads
//! (ListMultipartUploads: `prefix`, `delimiter`, `key-marker`,
//! `upload-id-marker`, `max-uploads`). Pure functions of the records the
//! store listed; the gateway writes the page out.

use s3s::{S3Error, S3ErrorCode, S3Result};

use crate::multipart::{PartRecord, UploadInfo};

/// The most entries one page holds (and the default).
pub const MAX_PAGE: i32 = 1000;

/// One page of an upload's parts.
#[derive(Debug)]
pub struct PartsPage {
    /// The parts on this page, in part-number order.
    pub parts: Vec<PartRecord>,
    /// More parts follow.
    pub truncated: bool,
    /// The marker of the next page (only when truncated).
    pub next: Option<i32>,
    /// The page size used (`max-parts`, at most [`MAX_PAGE`]).
    pub max: usize,
}

/// The parts after `marker` (`part-number-marker`), at most `max_parts`
/// (clamped to 0..=1000; 1000 when not given). `parts` are in part-number
/// order, as the store lists them.
pub fn parts_page(
    parts: Vec<PartRecord>,
    marker: Option<i32>,
    max_parts: Option<i32>,
) -> PartsPage {
    let marker = marker.unwrap_or(0);
    let max = max_parts.unwrap_or(MAX_PAGE).clamp(0, MAX_PAGE) as usize;
    let rest: Vec<_> = parts.into_iter().filter(|p| p.number > marker).collect();
    let truncated = rest.len() > max;
    let parts: Vec<_> = rest.into_iter().take(max).collect();
    let next = parts.last().map(|p| p.number).filter(|_| truncated);
    PartsPage {
        parts,
        truncated,
        next,
        max,
    }
}

/// What a ListMultipartUploads asks for.
#[derive(Debug, Default, Clone)]
pub struct UploadsQuery {
    /// Only keys starting with this.
    pub prefix: String,
    /// Group keys by the part up to this after the prefix (never empty).
    pub delimiter: Option<String>,
    /// `key-marker` (empty when not given).
    pub key_marker: String,
    /// `upload-id-marker` as given.
    pub upload_id_marker: Option<String>,
    /// `max-uploads` as given.
    pub max_uploads: Option<i32>,
}

/// One page of a bucket's uploads.
#[derive(Debug, Default)]
pub struct UploadsPage {
    /// The uploads on this page.
    pub uploads: Vec<UploadInfo>,
    /// The common prefixes on this page.
    pub prefixes: Vec<String>,
    /// More entries follow.
    pub truncated: bool,
    /// The last entry (key or common prefix, and its upload id): the next
    /// page's markers when truncated.
    pub last: Option<(String, String)>,
    /// The page size used (`max-uploads`, at most [`MAX_PAGE`]).
    pub max: usize,
}

impl UploadsPage {
    /// The next page's key and upload id markers (only when truncated).
    pub fn next(&self) -> Option<&(String, String)> {
        self.last.as_ref().filter(|_| self.truncated)
    }
}

/// The page of `ups` (in the store's order: by key, then by start) that
/// `q` asks for. Completed uploads (kept for retries) are not listed. An
/// upload id marker counts only with a key marker; it must name an upload
/// (one of the key marker's, when that key has uploads), and the listing
/// goes on after it.
pub fn uploads_page(ups: Vec<UploadInfo>, q: &UploadsQuery) -> S3Result<UploadsPage> {
    let key_marker = q.key_marker.as_str();
    let id_marker = match (&q.upload_id_marker, key_marker.is_empty()) {
        (Some(m), false) if !m.is_empty() => Some(m.as_str()),
        _ => None,
    };
    let delimiter = q.delimiter.as_deref();
    let prefix = q.prefix.as_str();
    let max = q.max_uploads.unwrap_or(MAX_PAGE).clamp(0, MAX_PAGE) as usize;
    let ups: Vec<_> = ups.into_iter().filter(|u| !u.completed).collect();
    let marker_is_key = ups.iter().any(|u| u.key == key_marker);
    let skip = match id_marker {
        Some(m) => match ups
            .iter()
            .position(|u| u.id == m && (!marker_is_key || u.key == key_marker))
        {
            Some(at) => at + 1,
            None => {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "Invalid uploadId marker",
                ))
            }
        },
        None => 0,
    };
    let rest = ups
        .into_iter()
        .skip(skip)
        .filter(|u| u.key.starts_with(prefix))
        .filter(|u| id_marker.is_some() || key_marker.is_empty() || u.key.as_str() > key_marker)
        .filter(|u| {
            // After a common prefix as key marker, skip its keys.
            !(id_marker.is_none()
                && delimiter.is_some_and(|d| key_marker.ends_with(d))
                && u.key.starts_with(key_marker))
        });
    // Entries: an upload, or a common prefix (with its first upload id).
    let mut page = UploadsPage {
        max,
        ..Default::default()
    };
    for u in rest {
        let cp = delimiter.and_then(|d| {
            let tail = &u.key[prefix.len()..];
            tail.find(d)
                .map(|at| format!("{prefix}{}", &tail[..at + d.len()]))
        });
        if let Some(cp) = &cp {
            if page.prefixes.last() == Some(cp) {
                continue;
            }
        }
        if page.uploads.len() + page.prefixes.len() == max {
            page.truncated = true;
            break;
        }
        match cp {
            Some(cp) => {
                page.last = Some((cp.clone(), u.id.clone()));
                page.prefixes.push(cp);
            }
            None => {
                page.last = Some((u.key.clone(), u.id.clone()));
                page.uploads.push(u);
            }
        }
    }
    Ok(page)
}

/// The largest `max-buckets` (and the default), as on S3.
pub const MAX_BUCKETS: i32 = 10_000;

/// One page of a ListBuckets.
#[derive(Debug, PartialEq, Eq)]
pub struct BucketsPage<T> {
    /// The buckets on this page, in name order.
    pub buckets: Vec<T>,
    /// The token of the next page (the last name on this one), only when
    /// more buckets follow.
    pub next: Option<String>,
}

/// `max-buckets` as given: 1 to [`MAX_BUCKETS`] ([`MAX_BUCKETS`] when not
/// given); anything else is S3's `InvalidArgument`.
pub fn max_buckets(v: Option<i32>) -> S3Result<usize> {
    match v {
        None => Ok(MAX_BUCKETS as usize),
        Some(n) if (1..=MAX_BUCKETS).contains(&n) => Ok(n as usize),
        Some(n) => {
            let mut e = S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "Argument max-buckets must be an integer between 1 and 10000.",
            );
            crate::answer::with_error_elements(
                &mut e,
                &[
                    ("ArgumentName", "max-buckets"),
                    ("ArgumentValue", &n.to_string()),
                ],
            );
            Err(e)
        }
    }
}

/// The buckets (sorted by name, those the caller may see) whose names
/// start with `prefix` and sort after `token` (`continuation-token`: the
/// last name of the previous page), at most `max`.
pub fn buckets_page<T>(
    buckets: Vec<T>,
    name: impl Fn(&T) -> &str,
    prefix: &str,
    token: Option<&str>,
    max: usize,
) -> BucketsPage<T> {
    let mut rest = buckets
        .into_iter()
        .filter(|b| name(b).starts_with(prefix) && token.is_none_or(|t| name(b) > t));
    let page: Vec<T> = rest.by_ref().take(max).collect();
    let more = rest.next().is_some();
    let next = page.last().filter(|_| more).map(|b| name(b).to_string());
    BucketsPage {
        buckets: page,
        next,
    }
}

#[cfg(test)]
mod bucket_tests {
    use super::*;

    fn page(
        all: &[&str],
        prefix: &str,
        token: Option<&str>,
        max: usize,
    ) -> (Vec<String>, Option<String>) {
        let all: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        let p = buckets_page(all, |s| s.as_str(), prefix, token, max);
        (p.buckets, p.next)
    }

    #[test]
    fn list_buckets_pages_by_name() {
        let all = ["a", "b", "c", "d", "e"];
        assert_eq!(
            page(&all, "", None, 3),
            (vec!["a".into(), "b".into(), "c".into()], Some("c".into()))
        );
        assert_eq!(
            page(&all, "", Some("c"), 3),
            (vec!["d".into(), "e".into()], None)
        );
        // Exactly the page size: no token.
        assert_eq!(page(&all, "", None, 5).1, None);
        // A token that names no bucket still pages by order.
        assert_eq!(page(&all, "", Some("bb"), 10).0, vec!["c", "d", "e"]);
        assert_eq!(page(&all, "", Some("z"), 10), (vec![], None));
    }

    #[test]
    fn list_buckets_prefix_before_paging() {
        let all = ["my-a", "my-b", "other", "my-c", "zz"];
        let mut all = all.to_vec();
        all.sort();
        assert_eq!(
            page(&all, "my-", None, 2),
            (vec!["my-a".into(), "my-b".into()], Some("my-b".into()))
        );
        assert_eq!(
            page(&all, "my-", Some("my-b"), 2),
            (vec!["my-c".into()], None)
        );
        assert_eq!(page(&all, "nothing", None, 2), (vec![], None));
    }

    #[test]
    fn max_buckets_range() {
        assert_eq!(max_buckets(None).unwrap(), 10_000);
        assert_eq!(max_buckets(Some(1)).unwrap(), 1);
        assert_eq!(max_buckets(Some(10_000)).unwrap(), 10_000);
        for bad in [0, -3, 10_001, 2_000_000] {
            let e = max_buckets(Some(bad)).unwrap_err();
            assert_eq!(e.code(), &S3ErrorCode::InvalidArgument);
            assert_eq!(
                e.message(),
                Some("Argument max-buckets must be an integer between 1 and 10000.")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(number: i32) -> PartRecord {
        PartRecord {
            number,
            size: 5,
            md5: String::new(),
            ino: 0,
            modified: 0,
            checksum: None,
            crc64nvme: None,
        }
    }

    fn numbers(p: &PartsPage) -> Vec<i32> {
        p.parts.iter().map(|p| p.number).collect()
    }

    #[test]
    fn parts_after_the_marker_up_to_max() {
        let all = || (1..=5).map(part).collect::<Vec<_>>();
        let p = parts_page(all(), None, None);
        assert_eq!(
            (numbers(&p), p.truncated, p.next, p.max),
            (vec![1, 2, 3, 4, 5], false, None, 1000)
        );
        let p = parts_page(all(), Some(1), Some(2));
        assert_eq!(
            (numbers(&p), p.truncated, p.next),
            (vec![2, 3], true, Some(3))
        );
        let p = parts_page(all(), Some(3), Some(2));
        assert_eq!(
            (numbers(&p), p.truncated, p.next),
            (vec![4, 5], false, None)
        );
        // max-parts 0: an empty page, truncated when parts follow.
        let p = parts_page(all(), None, Some(0));
        assert_eq!((numbers(&p), p.truncated, p.next), (vec![], true, None));
        // Above 1000: 1000.
        assert_eq!(parts_page(all(), None, Some(5000)).max, 1000);
    }

    fn up(key: &str, id: &str) -> UploadInfo {
        UploadInfo {
            id: id.into(),
            key: key.into(),
            initiated: std::time::SystemTime::UNIX_EPOCH,
            completed: false,
            checksum: None,
        }
    }

    fn ups() -> Vec<UploadInfo> {
        vec![
            up("a", "1"),
            up("a", "2"),
            up("d/x", "3"),
            up("d/y", "4"),
            up("e", "5"),
        ]
    }

    fn ids(p: &UploadsPage) -> Vec<&str> {
        p.uploads.iter().map(|u| u.id.as_str()).collect()
    }

    #[test]
    fn uploads_with_max_and_markers() {
        let q = UploadsQuery {
            max_uploads: Some(2),
            ..Default::default()
        };
        let p = uploads_page(ups(), &q).unwrap();
        assert_eq!(ids(&p), ["1", "2"]);
        assert_eq!(p.next(), Some(&("a".to_string(), "2".to_string())));
        // Key marker and id marker: after that upload.
        let q = UploadsQuery {
            key_marker: "a".into(),
            upload_id_marker: Some("1".into()),
            ..Default::default()
        };
        assert_eq!(ids(&uploads_page(ups(), &q).unwrap()), ["2", "3", "4", "5"]);
        // A key marker alone: keys after it.
        let q = UploadsQuery {
            key_marker: "a".into(),
            ..Default::default()
        };
        assert_eq!(ids(&uploads_page(ups(), &q).unwrap()), ["3", "4", "5"]);
        // An id marker without a key marker counts for nothing.
        let q = UploadsQuery {
            upload_id_marker: Some("9".into()),
            ..Default::default()
        };
        assert_eq!(ids(&uploads_page(ups(), &q).unwrap()).len(), 5);
    }

    #[test]
    fn an_upload_id_marker_must_name_an_upload_of_the_key_marker() {
        for (key, id) in [("a", "9"), ("a", "3")] {
            let q = UploadsQuery {
                key_marker: key.into(),
                upload_id_marker: Some(id.into()),
                ..Default::default()
            };
            let e = uploads_page(ups(), &q).unwrap_err();
            assert_eq!(e.code(), &S3ErrorCode::InvalidArgument);
            assert_eq!(e.message(), Some("Invalid uploadId marker"));
        }
    }

    #[test]
    fn common_prefixes_and_completed_uploads() {
        let mut all = ups();
        all[4].completed = true;
        let q = UploadsQuery {
            delimiter: Some("/".into()),
            ..Default::default()
        };
        let p = uploads_page(all.clone(), &q).unwrap();
        assert_eq!(ids(&p), ["1", "2"]);
        assert_eq!(p.prefixes, ["d/"]);
        assert!(!p.truncated);
        // A common prefix as key marker skips its keys.
        let q = UploadsQuery {
            delimiter: Some("/".into()),
            key_marker: "d/".into(),
            ..Default::default()
        };
        let p = uploads_page(all, &q).unwrap();
        assert!(p.uploads.is_empty() && p.prefixes.is_empty());
    }
}
