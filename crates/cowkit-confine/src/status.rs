//! Checking that confinement is in force: from inside by trying a forbidden
//! call, from outside by reading `/proc/<pid>/status`.

use std::fmt;
use std::io;
use std::path::PathBuf;

use rustix::fs::{Mode as FileMode, OFlags, CWD};
use rustix::io::Errno;

use crate::Error;

/// Proves from inside that our filter is in force, with one system call:
/// `openat(AT_FDCWD, "/", O_RDONLY|O_DIRECTORY|O_CLOEXEC)` must fail with
/// `EPERM`.
///
/// Call it after [`Policy::apply`](crate::Policy::apply) and before reading
/// the first untrusted byte, and exit if it fails: it is what makes the
/// worker fail closed even if `apply` were skipped or changed by mistake.
/// Unlike [`mode`], it needs no file to be opened, which a confined process
/// cannot do.
///
/// # Errors
///
/// [`Error::NotConfined`] if `/` could be opened; [`Error::SelfCheck`] if
/// opening it failed with another error than `EPERM` (some other policy is
/// in force, not ours).
pub fn self_check() -> Result<(), Error> {
    match rustix::fs::openat(
        CWD,
        "/",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        FileMode::empty(),
    ) {
        Ok(_fd) => Err(Error::NotConfined),
        Err(Errno::PERM) => Ok(()),
        Err(e) => Err(Error::SelfCheck(e.into())),
    }
}

/// A process's seccomp mode, as `/proc/<pid>/status` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `0`: no seccomp.
    Disabled,
    /// `1`: strict mode (read, write, exit, sigreturn only).
    Strict,
    /// `2`: one or more filters, such as the one [`Policy`](crate::Policy)
    /// installs.
    Filter,
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Mode::Disabled => "disabled",
            Mode::Strict => "strict",
            Mode::Filter => "filter",
        })
    }
}

/// The seccomp mode of this process, from `/proc/self/status`.
///
/// Useful **before** confining (to log it, or to see that an outer sandbox
/// already filters). A confined process cannot open the file: use
/// [`self_check`] there.
///
/// # Errors
///
/// [`Error::Status`] if the file cannot be read (`EPERM` once confined) or
/// has no `Seccomp:` line (a kernel without `CONFIG_SECCOMP`).
pub fn mode() -> Result<Mode, Error> {
    read_mode(PathBuf::from("/proc/self/status"))
}

/// The seccomp mode of another process, from `/proc/<pid>/status`: lets the
/// unconfined parent check that its worker really is confined.
///
/// # Errors
///
/// As for [`mode`]; also when the process has exited.
pub fn mode_of(pid: u32) -> Result<Mode, Error> {
    read_mode(PathBuf::from(format!("/proc/{pid}/status")))
}

fn read_mode(path: PathBuf) -> Result<Mode, Error> {
    match std::fs::read_to_string(&path).and_then(|text| parse_mode(&text)) {
        Ok(mode) => Ok(mode),
        Err(source) => Err(Error::Status { path, source }),
    }
}

/// The `Seccomp:` line of a `/proc/<pid>/status` text.
pub(crate) fn parse_mode(status: &str) -> io::Result<Mode> {
    let value = status
        .lines()
        .find_map(|line| line.strip_prefix("Seccomp:"))
        .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no `Seccomp:` line"))?;
    match value.trim() {
        "0" => Ok(Mode::Disabled),
        "1" => Ok(Mode::Strict),
        "2" => Ok(Mode::Filter),
        other => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("unknown seccomp mode `{other}`"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_seccomp_line_not_seccomp_filters() {
        let text = "Name:\tcat\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\n";
        assert_eq!(parse_mode(text).unwrap(), Mode::Filter);
        let text = "Seccomp_filters:\t0\nSeccomp:\t0\n";
        assert_eq!(parse_mode(text).unwrap(), Mode::Disabled);
        assert_eq!(parse_mode("Seccomp:\t1\n").unwrap(), Mode::Strict);
    }

    #[test]
    fn missing_or_unknown_mode_is_an_error() {
        let e = parse_mode("Name:\tcat\n").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let e = parse_mode("Seccomp:\t7\n").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn this_test_process_is_readable_and_not_confined_by_us() {
        // An outer sandbox (a container runtime) may already filter, so only
        // check that the file reads and parses.
        mode().unwrap();
        mode_of(std::process::id()).unwrap();
    }
}
