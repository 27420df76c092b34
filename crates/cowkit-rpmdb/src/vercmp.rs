//! rpm's version comparison (`rpmvercmp`) and the overlap of two
//! dependency ranges (`rpmdsCompare`), as rpm 4.18 defines them: what
//! decides whether a versioned trigger (`%triggerin -- httpd < 2.0`)
//! fires.

use std::cmp::Ordering;

use crate::triggers::Dep;

/// rpm's comparison bits.
const LESS: u32 = 2;
const GREATER: u32 = 4;
const EQUAL: u32 = 8;
const SENSEMASK: u32 = 15;

/// Compare two version (or release) strings as rpm does: alternating
/// runs of digits (numerically) and letters (as text), other characters
/// only separate, `~` sorts before anything (even the end), `^` after
/// the end but before anything else.
pub fn rpmvercmp(a: &str, b: &str) -> Ordering {
    if a == b {
        return Ordering::Equal;
    }
    let (mut x, mut y) = (a.as_bytes(), b.as_bytes());
    let sep = |c: u8| !c.is_ascii_alphanumeric() && c != b'~' && c != b'^';
    loop {
        while x.first().is_some_and(|&c| sep(c)) {
            x = &x[1..];
        }
        while y.first().is_some_and(|&c| sep(c)) {
            y = &y[1..];
        }
        let (cx, cy) = (x.first().copied(), y.first().copied());
        if cx == Some(b'~') || cy == Some(b'~') {
            if cx != Some(b'~') {
                return Ordering::Greater;
            }
            if cy != Some(b'~') {
                return Ordering::Less;
            }
            x = &x[1..];
            y = &y[1..];
            continue;
        }
        if cx == Some(b'^') || cy == Some(b'^') {
            match (cx, cy) {
                (None, _) => return Ordering::Less,
                (_, None) => return Ordering::Greater,
                (Some(c), _) if c != b'^' => return Ordering::Greater,
                (_, Some(c)) if c != b'^' => return Ordering::Less,
                _ => {}
            }
            x = &x[1..];
            y = &y[1..];
            continue;
        }
        let (Some(c), Some(_)) = (cx, cy) else { break };
        let numeric = c.is_ascii_digit();
        let run = |s: &[u8]| {
            s.iter()
                .take_while(|c| {
                    if numeric {
                        c.is_ascii_digit()
                    } else {
                        c.is_ascii_alphabetic()
                    }
                })
                .count()
        };
        let (nx, ny) = (run(x), run(y));
        let (sx, sy) = (&x[..nx], &y[..ny]);
        x = &x[nx..];
        y = &y[ny..];
        if sy.is_empty() {
            // Segments of different kinds: a number is newer.
            return if numeric {
                Ordering::Greater
            } else {
                Ordering::Less
            };
        }
        let ord = if numeric {
            let tx = strip_zeros(sx);
            let ty = strip_zeros(sy);
            tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty))
        } else {
            sx.cmp(sy)
        };
        if ord != Ordering::Equal {
            return ord;
        }
    }
    match (x.is_empty(), y.is_empty()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Less,
        _ => Ordering::Greater,
    }
}

fn strip_zeros(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&c| c == b'0').count();
    &s[n..]
}

/// `[epoch:]version[-release]` split; a missing epoch is 0.
fn split_evr(evr: &str) -> (u64, &str, Option<&str>) {
    let (epoch, rest) = match evr.split_once(':') {
        Some((e, r)) if e.bytes().all(|c| c.is_ascii_digit()) => (e.parse().unwrap_or(0), r),
        _ => (0, evr),
    };
    match rest.rsplit_once('-') {
        Some((v, r)) => (epoch, v, Some(r)),
        None => (epoch, rest, None),
    }
}

/// Compare two EVRs as rpm does: epoch, version, and the release only
/// when both have one.
pub fn evrcmp(a: &str, b: &str) -> Ordering {
    let (ea, va, ra) = split_evr(a);
    let (eb, vb, rb) = split_evr(b);
    ea.cmp(&eb)
        .then_with(|| rpmvercmp(va, vb))
        .then_with(|| match (ra, rb) {
            (Some(x), Some(y)) => rpmvercmp(x, y),
            _ => Ordering::Equal,
        })
}

/// Whether the ranges of `a` and `b` (same name) overlap (`rpmdsCompare`).
pub fn overlaps(a: &Dep, b: &Dep) -> bool {
    if a.name != b.name {
        return false;
    }
    let (fa, fb) = (a.flags, b.flags);
    if fa & SENSEMASK == 0 || fb & SENSEMASK == 0 || a.version.is_empty() || b.version.is_empty() {
        return true;
    }
    match evrcmp(&a.version, &b.version) {
        Ordering::Less => fa & GREATER != 0 || fb & LESS != 0,
        Ordering::Greater => fa & LESS != 0 || fb & GREATER != 0,
        Ordering::Equal => {
            (fa & EQUAL != 0 && fb & EQUAL != 0)
                || (fa & LESS != 0 && fb & LESS != 0)
                || (fa & GREATER != 0 && fb & GREATER != 0)
        }
    }
}

/// Whether a package with `provides` satisfies `req`
/// (`rpmdsAnyMatchesDep`): always when `req` has no version.
pub fn any_matches(provides: &[Dep], req: &Dep) -> bool {
    if req.flags & SENSEMASK == 0 {
        return true;
    }
    provides.iter().any(|p| overlaps(p, req))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_as_rpm() {
        use Ordering::*;
        for (a, b, o) in [
            ("1.0", "1.0", Equal),
            ("1.0", "2.0", Less),
            ("2.0.1", "2.0", Greater),
            ("1.0010", "1.9", Greater),
            ("1.05", "1.5", Equal),
            ("1.0", "1.0a", Less),
            ("2.50", "2.5", Greater),
            ("fc4", "fc.4", Equal),
            ("1.0~rc1", "1.0", Less),
            ("1.0~rc1", "1.0~rc2", Less),
            ("1.0^", "1.0", Greater),
            ("1.0^git1", "1.0.1", Less),
            ("a", "1", Less),
            ("1", "a", Greater),
        ] {
            assert_eq!(rpmvercmp(a, b), o, "{a} vs {b}");
        }
    }

    #[test]
    fn trigger_conditions() {
        let dep = |n: &str, f: u32, v: &str| Dep {
            name: n.into(),
            flags: f,
            version: v.into(),
        };
        let httpd24 = [dep("httpd", EQUAL, "2.4.57-1")];
        let httpd13 = [dep("httpd", EQUAL, "1.3-1")];
        let lt2 = dep("httpd", LESS, "2.0");
        assert!(!any_matches(&httpd24, &lt2));
        assert!(any_matches(&httpd13, &lt2));
        assert!(any_matches(&httpd24, &dep("httpd", 0, "")));
        assert!(any_matches(&httpd24, &dep("httpd", GREATER | EQUAL, "2.4")));
        assert!(!any_matches(&httpd24, &dep("httpd", EQUAL, "2.4.57-2")));
    }
}
