//! File names as a package holds them: bytes, not necessarily UTF-8.
//!
//! rpm installs a name byte for byte, whatever its encoding. A [`Name`]
//! keeps those bytes; it is shown to a user escaped ([`escape_bytes`]:
//! every byte that is not UTF-8 as `\xNN`), never converted lossily.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A path or symlink target from a package header, as bytes.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(Vec<u8>);

impl Name {
    /// The name's bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// The name as an `OsStr`, for system calls.
    pub fn as_os_str(&self) -> &OsStr {
        OsStr::from_bytes(&self.0)
    }

    /// The name as a `Path`, for system calls.
    pub fn as_path(&self) -> &Path {
        Path::new(self.as_os_str())
    }

    /// The name as text when it is UTF-8.
    pub fn to_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.0).ok()
    }

    /// Whether the name starts with `prefix` (bytewise).
    pub fn starts_with(&self, prefix: &str) -> bool {
        self.0.starts_with(prefix.as_bytes())
    }

    /// Whether the name ends with `suffix` (bytewise).
    pub fn ends_with(&self, suffix: &str) -> bool {
        self.0.ends_with(suffix.as_bytes())
    }

    /// The name without the leading `prefix`, when it has it.
    pub fn strip_prefix(&self, prefix: &str) -> Option<&[u8]> {
        self.0.strip_prefix(prefix.as_bytes())
    }

    /// The name followed by `suffix`.
    pub fn with_suffix(&self, suffix: &str) -> Name {
        let mut v = self.0.clone();
        v.extend_from_slice(suffix.as_bytes());
        Name(v)
    }
}

/// `b` for a message: its UTF-8 text with controls, backquotes and
/// backslashes escaped, and every byte that is not UTF-8 as `\xNN`.
pub fn escape_bytes(b: &[u8]) -> String {
    let mut out = String::new();
    for chunk in b.utf8_chunks() {
        out.push_str(&printable(chunk.valid().as_bytes(), usize::MAX));
        for x in chunk.invalid() {
            out.push_str(&format!("\\x{x:02X}"));
        }
    }
    out
}

impl std::fmt::Display for Name {
    /// The name escaped ([`escape_bytes`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&escape_bytes(&self.0))
    }
}

impl std::fmt::Debug for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\"{self}\"")
    }
}

impl From<Vec<u8>> for Name {
    fn from(v: Vec<u8>) -> Name {
        Name(v)
    }
}

impl From<&[u8]> for Name {
    fn from(v: &[u8]) -> Name {
        Name(v.to_vec())
    }
}

impl From<&str> for Name {
    fn from(s: &str) -> Name {
        Name(s.as_bytes().to_vec())
    }
}

impl From<String> for Name {
    fn from(s: String) -> Name {
        Name(s.into_bytes())
    }
}

impl From<&OsStr> for Name {
    fn from(s: &OsStr) -> Name {
        Name(s.as_bytes().to_vec())
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<String> for Name {
    fn eq(&self, other: &String) -> bool {
        self.0 == other.as_bytes()
    }
}

impl PartialEq<Name> for &str {
    fn eq(&self, other: &Name) -> bool {
        self.as_bytes() == other.0
    }
}

impl std::ops::Deref for Name {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<[u8]> for Name {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl AsRef<OsStr> for Name {
    fn as_ref(&self) -> &OsStr {
        self.as_os_str()
    }
}

impl AsRef<Path> for Name {
    fn as_ref(&self) -> &Path {
        self.as_path()
    }
}

impl std::borrow::Borrow<[u8]> for Name {
    fn borrow(&self) -> &[u8] {
        &self.0
    }
}

/// `bytes` for a one-line message: lossy UTF-8, control characters and
/// quotes escaped, at most `max` characters (then `…`).
pub fn printable(bytes: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    for (i, c) in text.chars().enumerate() {
        if i == max {
            out.push('…');
            break;
        }
        if c.is_control() || c == '`' || c == '\\' {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shown_escaped_compared_bytewise() {
        let n = Name::from(b"/usr/caf\xE9".as_slice());
        assert_eq!(n.to_string(), "/usr/caf\\xE9");
        assert_eq!(format!("{n:?}"), "\"/usr/caf\\xE9\"");
        assert!(n.starts_with("/usr/"));
        assert_eq!(n.strip_prefix("/usr/"), Some(b"caf\xE9".as_slice()));
        assert_eq!(Name::from("/a"), "/a");
        assert_eq!(n.to_str(), None);
    }
}
