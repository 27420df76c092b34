//! Which rpm registers a root. cowkit runs a transaction's scriptlets,
//! triggers and file decisions itself, by the rules of the rpm that
//! registers it: rpm 4.18 or rpm 4.20 ([`Generation`]). An rpm of another
//! generation would register what cowkit did by rules it does not follow,
//! so it is refused before anything is touched, naming what differs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};

use crate::{Error, Result};

/// An rpm's version, as `rpm --version` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    /// 4.
    pub major: u32,
    /// 18.
    pub minor: u32,
    /// 0.
    pub patch: u32,
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// The version in `rpm --version`'s line (`RPM version 4.18.0`; a
/// distribution may append to the number, as in `4.18.0.90`).
pub fn parse(line: &str) -> Option<Version> {
    let number = line.trim().strip_prefix("RPM version ")?;
    let mut parts = number
        .split(|c: char| !c.is_ascii_digit())
        .map(|p| p.parse::<u32>().ok());
    Some(Version {
        major: parts.next()??,
        minor: parts.next()??,
        patch: parts.next().flatten().unwrap_or(0),
    })
}

/// The generations of rpm whose rules cowkit runs transactions by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Generation {
    /// rpm 4.18 (`librpm.so.9`, Lua 5.3 on Debian 12).
    Rpm418,
    /// rpm 4.20 (`librpm.so.10`): `%preuntrans`/`%postuntrans`, sysusers,
    /// the changed file trigger rules; what cowkit does not do of it is
    /// refused by name when a transaction needs it.
    Rpm420,
}

impl Generation {
    /// The major number of `librpm.so.N`/`librpmio.so.N`.
    pub fn soname_major(self) -> u32 {
        match self {
            Generation::Rpm418 => 9,
            Generation::Rpm420 => 10,
        }
    }
}

/// What rpm 4.19 does differently from rpm 4.18 and 4.20, unmeasured.
pub const RPM_419: &str = "rpm 4.19 has sysusers and `librpm.so.10` but neither `%preuntrans`/`%postuntrans` nor 4.20's file trigger rules, and cowkit's transactions are checked against rpm 4.18 and 4.20 only";

/// The version of `program`, asked once per process.
pub fn of_program(program: &Path) -> Result<Version> {
    static SEEN: OnceLock<Mutex<HashMap<PathBuf, Version>>> = OnceLock::new();
    let seen = SEEN.get_or_init(Default::default);
    if let Some(v) = seen.lock().unwrap_or_else(|e| e.into_inner()).get(program) {
        return Ok(*v);
    }
    let out = Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|source| Error::Spawn {
            program: program.to_path_buf(),
            source,
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .lines()
        .next()
        .and_then(parse)
        .filter(|_| out.status.success())
        .ok_or_else(|| Error::Answer {
            what: "--version",
            why: format!("expected `RPM version X.Y.Z`, got `{}`", text.trim()),
        })?;
    seen.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(program.to_path_buf(), version);
    Ok(version)
}

/// The generation of an rpm of `version`; any rpm but 4.18 and 4.20 is
/// refused.
pub fn check(program: &Path, version: Version) -> Result<Generation> {
    let why = match (version.major, version.minor) {
        (4, 18) => return Ok(Generation::Rpm418),
        (4, 20) => return Ok(Generation::Rpm420),
        (4, 19) => RPM_419.to_string(),
        (4, 21..) | (5.., _) => "cowkit's transactions are checked against rpm 4.18 and 4.20 only, and newer rpms may change their scriptlet, trigger and file rules".to_string(),
        _ => "cowkit's transactions are checked against rpm 4.18 and 4.20 only, and older rpms differ in their file, trigger and scriptlet rules".to_string(),
    };
    Err(Error::UnsupportedRpm {
        program: program.to_path_buf(),
        version: version.to_string(),
        why,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: u32, minor: u32, patch: u32) -> Version {
        Version {
            major,
            minor,
            patch,
        }
    }

    #[test]
    fn versions_as_rpm_prints_them() {
        assert_eq!(parse("RPM version 4.18.0\n"), Some(v(4, 18, 0)));
        assert_eq!(parse("RPM version 4.20.1"), Some(v(4, 20, 1)));
        assert_eq!(parse("RPM version 4.19.1.1"), Some(v(4, 19, 1)));
        assert_eq!(parse("RPM version 4.18"), Some(v(4, 18, 0)));
        assert_eq!(parse("RPM version 6.0.0-alpha"), Some(v(6, 0, 0)));
        assert_eq!(parse("rpm (RPM) 4.18.0"), None);
        assert_eq!(parse("RPM version x.y"), None);
    }

    #[test]
    fn only_rpm_418_and_420_are_taken() {
        let p = Path::new("rpm");
        assert_eq!(check(p, v(4, 18, 0)).unwrap(), Generation::Rpm418);
        assert_eq!(check(p, v(4, 18, 2)).unwrap(), Generation::Rpm418);
        assert_eq!(check(p, v(4, 20, 1)).unwrap(), Generation::Rpm420);
        let e = check(p, v(4, 19, 1)).unwrap_err().to_string();
        assert!(e.contains("4.19.1") && e.contains("%preuntrans"), "{e}");
        for other in [v(6, 0, 0), v(4, 21, 0), v(4, 16, 1)] {
            let e = check(p, other).unwrap_err().to_string();
            assert!(
                e.contains(&other.to_string()) && e.contains("rpm 4.18 and 4.20 only"),
                "{e}"
            );
        }
    }
}
