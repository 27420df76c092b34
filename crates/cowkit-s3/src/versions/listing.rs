//! One page of ListObjectVersions, pure: keys in byte order, each key's
//! versions newest first, the key and version-id markers, common prefixes,
//! `max-keys` counting versions and prefixes together, as S3 pages them.

/// One version (or delete marker) of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<T> {
    /// Its version id (`null` for the null version).
    pub version: String,
    /// Its place among the key's versions: larger is newer.
    pub seq: String,
    /// What the caller lists (record, file time).
    pub item: T,
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct Query {
    /// Only keys starting with this.
    pub prefix: String,
    /// Group keys by the part up to this after the prefix.
    pub delimiter: Option<String>,
    /// Start after this key (all of its versions, without a version id
    /// marker).
    pub key_marker: Option<String>,
    /// With `key_marker`: start after this version of that key.
    pub version_id_marker: Option<String>,
    /// At most this many versions and common prefixes together.
    pub max_keys: usize,
}

/// One page.
#[derive(Debug)]
pub struct Page<T> {
    /// Versions in order: (key, entry, is it the key's latest).
    pub versions: Vec<(String, Entry<T>, bool)>,
    /// Common prefixes.
    pub common: Vec<String>,
    /// More follow.
    pub truncated: bool,
    /// Where the next page starts: key (or prefix) and version id.
    pub next: Option<(String, Option<String>)>,
}

/// Sort one key's versions newest first.
pub fn newest_first<T>(v: &mut [Entry<T>]) {
    v.sort_by(|a, b| b.seq.cmp(&a.seq).then_with(|| b.version.cmp(&a.version)));
}

/// The page `q` asks for of `keys` (sorted by key; each key's versions
/// newest first, see [`newest_first`]).
pub fn page<T>(keys: Vec<(String, Vec<Entry<T>>)>, q: &Query) -> Page<T> {
    let mut out = Page {
        versions: Vec::new(),
        common: Vec::new(),
        truncated: false,
        next: None,
    };
    let km = q.key_marker.as_deref().filter(|k| !k.is_empty());
    let vm = q.version_id_marker.as_deref().filter(|v| !v.is_empty());
    let mut n = 0;
    for (key, versions) in keys {
        if !key.starts_with(&q.prefix) {
            continue;
        }
        let common = q.delimiter.as_deref().and_then(|d| {
            key[q.prefix.len()..]
                .find(d)
                .map(|i| key[..q.prefix.len() + i + d.len()].to_string())
        });
        if let Some(m) = km {
            let under_marker = common.as_deref() == Some(m);
            if key.as_str() < m || under_marker || (key.as_str() == m && vm.is_none()) {
                continue;
            }
        }
        if let Some(c) = common {
            if out.common.last() == Some(&c) {
                continue;
            }
            if n == q.max_keys {
                out.truncated = true;
                break;
            }
            out.next = Some((c.clone(), None));
            out.common.push(c);
            n += 1;
            continue;
        }
        // With both markers, this key's versions start after the marker.
        let skip = match (km, vm) {
            (Some(m), Some(v)) if m == key => versions
                .iter()
                .position(|e| e.version == v)
                .map_or(versions.len(), |i| i + 1),
            _ => 0,
        };
        for (i, e) in versions.into_iter().enumerate().skip(skip) {
            if n == q.max_keys {
                out.truncated = true;
                return out;
            }
            out.next = Some((key.clone(), Some(e.version.clone())));
            out.versions.push((key.clone(), e, i == 0));
            n += 1;
        }
    }
    if !out.truncated {
        out.next = None;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str, versions: &[&str]) -> (String, Vec<Entry<()>>) {
        let mut v: Vec<Entry<()>> = versions
            .iter()
            .map(|s| Entry {
                version: s.to_string(),
                seq: s.to_string(),
                item: (),
            })
            .collect();
        newest_first(&mut v);
        (k.to_string(), v)
    }

    fn listed(p: &Page<()>) -> Vec<(String, String, bool)> {
        p.versions
            .iter()
            .map(|(k, e, l)| (k.clone(), e.version.clone(), *l))
            .collect()
    }

    fn q(max: usize) -> Query {
        Query {
            max_keys: max,
            ..Default::default()
        }
    }

    #[test]
    fn keys_in_order_versions_newest_first_pages_resume_at_the_markers() {
        let all = || vec![key("bar", &["B1", "B2"]), key("foo", &["F1", "F2", "F3"])];
        let p = page(all(), &q(3));
        assert_eq!(
            listed(&p),
            [
                ("bar".into(), "B2".into(), true),
                ("bar".into(), "B1".into(), false),
                ("foo".into(), "F3".into(), true),
            ]
        );
        assert!(p.truncated);
        assert_eq!(p.next, Some(("foo".into(), Some("F3".into()))));
        let mut next = q(3);
        next.key_marker = Some("foo".into());
        next.version_id_marker = Some("F3".into());
        let p2 = page(all(), &next);
        assert_eq!(
            listed(&p2),
            [
                ("foo".into(), "F2".into(), false),
                ("foo".into(), "F1".into(), false)
            ]
        );
        assert!(!p2.truncated && p2.next.is_none());
        // A key marker alone skips all of that key's versions.
        let mut after = q(10);
        after.key_marker = Some("bar".into());
        assert_eq!(page(all(), &after).versions.len(), 3);
        // An exact fit is not truncated.
        assert!(!page(all(), &q(5)).truncated);
        assert!(page(all(), &q(0)).truncated);
    }

    #[test]
    fn prefixes_and_delimiters_group_keys_and_count_once() {
        let all = || {
            vec![
                key("a/1", &["A"]),
                key("a/2", &["B", "C"]),
                key("b", &["D"]),
                key("c/1", &["E"]),
            ]
        };
        let mut d = q(2);
        d.delimiter = Some("/".into());
        let p = page(all(), &d);
        assert_eq!(p.common, ["a/"]);
        assert_eq!(listed(&p), [("b".into(), "D".into(), true)]);
        assert!(p.truncated);
        assert_eq!(p.next, Some(("b".into(), Some("D".into()))));
        let mut d2 = d.clone();
        d2.key_marker = Some("a/".into());
        let p2 = page(all(), &d2);
        assert_eq!(listed(&p2), [("b".into(), "D".into(), true)]);
        assert_eq!(p2.common, ["c/"]);
        let mut pre = q(10);
        pre.prefix = "a/".into();
        assert_eq!(page(all(), &pre).versions.len(), 3);
    }
}
