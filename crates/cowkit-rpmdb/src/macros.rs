//! `%_dbpath` from the root's own rpm macro files.
//!
//! rpm itself never reads them under `--root` (it uses the host's macros),
//! and evaluating them with rpm would run their `%(...)` shell and lua
//! code on the host. So only plain one-line definitions are read, and
//! only `%name`/`%{name}` references to other such definitions are
//! expanded; a `%_dbpath` that needs more is ignored.

use std::collections::HashMap;

use cowkit_fs::root::{RelPath, Root};

/// rpm's macro file order, as far as it concerns a root: later
/// definitions win.
fn files(root: &Root) -> Vec<String> {
    let glob = |dir: &str, prefix: &str| -> Vec<String> {
        let Ok(rel) = RelPath::new(dir) else {
            return Vec::new();
        };
        let Ok(fd) = root.open_dir(&rel) else {
            return Vec::new();
        };
        let Ok(names) = cowkit_fs::dir::read_names(&fd, root.path()) else {
            return Vec::new();
        };
        let mut n: Vec<String> = names
            .into_iter()
            .filter_map(|(n, _)| n.into_string().ok())
            .filter(|n| n.starts_with(prefix))
            .map(|n| format!("{dir}/{n}"))
            .collect();
        n.sort();
        n
    };
    let mut v = vec!["usr/lib/rpm/macros".to_string()];
    v.extend(glob("usr/lib/rpm/macros.d", "macros."));
    v.push("usr/lib/rpm/redhat/macros".to_string());
    v.extend(glob("etc/rpm", "macros."));
    v.push("etc/rpm/macros".to_string());
    v
}

fn read(root: &Root, rel: &str) -> Option<String> {
    // Macro files are small; a huge one is not a macro file.
    root.read_text(rel, 1 << 20)
}

/// The definitions of one file: `%name value` lines (no parameters, no
/// continuation lines).
fn definitions(
    text: &str,
    into: &mut HashMap<String, String>,
    file: &str,
    dbpath: &mut Option<String>,
) {
    let mut continued = false;
    for line in text.lines() {
        let was_continued = continued;
        continued = line.ends_with('\\');
        if was_continued {
            continue;
        }
        let Some(rest) = line.strip_prefix('%') else {
            continue;
        };
        let name_end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let (name, value) = rest.split_at(name_end);
        if name.is_empty() || continued || !value.starts_with([' ', '\t']) {
            continue;
        }
        into.insert(name.to_string(), value.trim().to_string());
        if name == "_dbpath" {
            *dbpath = Some(file.to_string());
        }
    }
}

/// Expand `%name` and `%{name}` from `defs`; `None` when anything else
/// (`%(`, `%{?`, `%{lua:`, unknown names) is left.
fn expand(value: &str, defs: &HashMap<String, String>, depth: u32) -> Option<String> {
    if depth > 16 {
        return None;
    }
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, tail) = if let Some(b) = after.strip_prefix('{') {
            let end = b.find('}')?;
            (&b[..end], &b[end + 1..])
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        out.push_str(&expand(defs.get(name)?, defs, depth + 1)?);
        rest = tail;
    }
    out.push_str(rest);
    Some(out)
}

/// `%_dbpath` as the root's macro files set it, with the file that set it
/// last.
pub(crate) fn dbpath_of(root: &Root) -> Option<(String, String)> {
    // rpm's built-in defaults for the names dbpath definitions use.
    let mut defs: HashMap<String, String> = [
        ("_usr", "/usr"),
        ("_var", "/var"),
        ("_prefix", "/usr"),
        ("_localstatedir", "/var"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    let mut from = None;
    for f in files(root) {
        if let Some(text) = read(root, &f) {
            definitions(&text, &mut defs, &format!("/{f}"), &mut from);
        }
    }
    let file = from?;
    let value = expand(defs.get("_dbpath")?, &defs, 0)?;
    value.starts_with('/').then_some((value, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_plain_definitions_only() {
        let mut defs = HashMap::new();
        let mut from = None;
        definitions(
            "%_var /var\n%_usr\t/usr\n%_dbpath\t\t%{_usr}/lib/sysimage/rpm\n%x() y\n%multi a\\\n%_dbpath /no\n",
            &mut defs,
            "/m",
            &mut from,
        );
        assert_eq!(from.as_deref(), Some("/m"));
        assert_eq!(
            expand(&defs["_dbpath"], &defs, 0).as_deref(),
            Some("/usr/lib/sysimage/rpm")
        );
        assert_eq!(expand("%(echo ~)/.rpmdb", &defs, 0), None);
        assert_eq!(expand("%{?_x}/a", &defs, 0), None);
        assert_eq!(
            expand("%_var/lib/rpm", &defs, 0).as_deref(),
            Some("/var/lib/rpm")
        );
        defs.insert("loop".into(), "%loop".into());
        assert_eq!(expand("%loop", &defs, 0), None);
    }
}
