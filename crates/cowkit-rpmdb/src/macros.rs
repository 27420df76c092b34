//! `%_dbpath` from the root's own rpm macro files.
//!
//! rpm itself never reads them under `--root` (it uses the host's macros),
//! and evaluating them with rpm would run their `%(...)` shell and lua
//! code on the host. So only plain one-line definitions are read, and
//! only `%name`/`%{name}` references to other such definitions are
//! expanded; a `%_dbpath` that needs more is ignored.
//!
//! The files are the root's, written by whatever packages it holds, so
//! everything is bounded: each file to [`MAX_FILE`] bytes, all of them to
//! [`MAX_TOTAL`] bytes and [`MAX_FILES`] files, the expansion to
//! [`MAX_REFERENCES`] references and a result of [`MAX_RESULT`] bytes
//! (nested definitions grow exponentially: `%a %b%b`, `%b %c%c`, ...).
//! Past a bound the database path is not guessed: [`Error::Macros`].

use std::collections::HashMap;
use std::io::Read;

use cowkit_fs::root::{RelPath, Root};

use crate::Error;

/// The largest macro file read (rpm's own `macros` is about 40 KB).
pub const MAX_FILE: u64 = 1 << 20;
/// The most bytes read from all macro files of a root.
pub const MAX_TOTAL: u64 = 8 << 20;
/// The most macro files read.
pub const MAX_FILES: usize = 4096;
/// The longest expansion (a path: `PATH_MAX`).
pub const MAX_RESULT: usize = 4096;
/// The most macro references one expansion may follow.
pub const MAX_REFERENCES: usize = 10_000;

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

fn too_much(file: &str, why: String) -> Error {
    Error::Macros {
        file: format!("/{file}"),
        why,
    }
}

/// The text of the macro file `rel`: `None` when it is missing, not a
/// regular file, unreadable or not UTF-8 (as rpm, which skips such
/// files); an error past [`MAX_FILE`] bytes, or past `budget` (what is
/// left of [`MAX_TOTAL`]), which it is charged.
fn read(root: &Root, rel: &str, budget: &mut u64) -> Result<Option<String>, Error> {
    let Ok(path) = RelPath::new(rel) else {
        return Ok(None);
    };
    let Ok(fd) = root.open_read(&path) else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    let limit = MAX_FILE.min(*budget);
    if std::fs::File::from(fd)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .is_err()
    {
        return Ok(None);
    }
    if bytes.len() as u64 > limit {
        return Err(too_much(
            rel,
            if limit == MAX_FILE {
                format!("is larger than {MAX_FILE} bytes")
            } else {
                format!("takes the root's macro files past {MAX_TOTAL} bytes")
            },
        ));
    }
    *budget -= bytes.len() as u64;
    Ok(String::from_utf8(bytes).ok())
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

/// Why an expansion was given up.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Something else than plain references (`%(`, `%{?`, `%{lua:`,
    /// unknown names, nesting deeper than 16): not evaluated.
    NotPlain,
    /// A bound was reached: the result cannot be known within them.
    Bound(String),
}

/// Expand `%name` and `%{name}` from `defs`, within [`MAX_REFERENCES`]
/// and [`MAX_RESULT`].
pub(crate) fn expand(value: &str, defs: &HashMap<String, String>) -> Result<String, Stop> {
    let mut out = String::new();
    let mut references = 0;
    expand_into(value, defs, 0, &mut references, &mut out)?;
    Ok(out)
}

fn expand_into(
    value: &str,
    defs: &HashMap<String, String>,
    depth: u32,
    references: &mut usize,
    out: &mut String,
) -> Result<(), Stop> {
    if depth > 16 {
        return Err(Stop::NotPlain);
    }
    let push = |out: &mut String, s: &str| {
        if out.len() + s.len() > MAX_RESULT {
            return Err(Stop::Bound(format!(
                "expands to more than {MAX_RESULT} bytes"
            )));
        }
        out.push_str(s);
        Ok(())
    };
    let mut rest = value;
    while let Some(i) = rest.find('%') {
        push(out, &rest[..i])?;
        let after = &rest[i + 1..];
        let (name, tail) = if let Some(b) = after.strip_prefix('{') {
            let end = b.find('}').ok_or(Stop::NotPlain)?;
            (&b[..end], &b[end + 1..])
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(Stop::NotPlain);
        }
        *references += 1;
        if *references > MAX_REFERENCES {
            return Err(Stop::Bound(format!(
                "needs more than {MAX_REFERENCES} macro references"
            )));
        }
        let def = defs.get(name).ok_or(Stop::NotPlain)?;
        expand_into(def, defs, depth + 1, references, out)?;
        rest = tail;
    }
    push(out, rest)
}

/// rpm's built-in defaults for the names dbpath definitions use.
fn builtins() -> HashMap<String, String> {
    [
        ("_usr", "/usr"),
        ("_var", "/var"),
        ("_prefix", "/usr"),
        ("_localstatedir", "/var"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

/// `%_dbpath` as the root's macro files set it, with the file that set it
/// last; `None` when none does, or in a way that needs more than plain
/// references; [`Error::Macros`] when the files or the expansion go past
/// the bounds (the path is then not guessed).
pub(crate) fn dbpath_of(root: &Root) -> Result<Option<(String, String)>, Error> {
    let mut defs = builtins();
    let mut from = None;
    let mut budget = MAX_TOTAL;
    let files = files(root);
    if files.len() > MAX_FILES {
        return Err(too_much(
            "usr/lib/rpm/macros.d",
            format!("and /etc/rpm hold more than {MAX_FILES} macro files"),
        ));
    }
    for f in files {
        if let Some(text) = read(root, &f, &mut budget)? {
            definitions(&text, &mut defs, &format!("/{f}"), &mut from);
        }
    }
    let Some(file) = from else {
        return Ok(None);
    };
    let Some(value) = defs.get("_dbpath") else {
        return Ok(None);
    };
    match expand(value, &defs) {
        Ok(v) => Ok(v.starts_with('/').then_some((v, file))),
        Err(Stop::NotPlain) => Ok(None),
        Err(Stop::Bound(why)) => Err(Error::Macros {
            file,
            why: format!("`%_dbpath` {why}"),
        }),
    }
}

/// The fuzz target's work: `text` as a macro file, every definition in it
/// expanded within the bounds.
#[cfg(feature = "fuzzing")]
pub(crate) fn fuzz(text: &str) {
    let mut defs = builtins();
    let mut from = None;
    definitions(text, &mut defs, "/fuzz", &mut from);
    for v in defs.values() {
        if let Ok(out) = expand(v, &defs) {
            assert!(out.len() <= MAX_RESULT, "an expansion past the bound");
        }
    }
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
            expand(&defs["_dbpath"], &defs).as_deref(),
            Ok("/usr/lib/sysimage/rpm")
        );
        assert_eq!(expand("%(echo ~)/.rpmdb", &defs), Err(Stop::NotPlain));
        assert_eq!(expand("%{?_x}/a", &defs), Err(Stop::NotPlain));
        assert_eq!(
            expand("%_var/lib/rpm", &defs).as_deref(),
            Ok("/var/lib/rpm")
        );
        defs.insert("loop".into(), "%loop".into());
        assert_eq!(expand("%loop", &defs), Err(Stop::NotPlain));
    }
}
