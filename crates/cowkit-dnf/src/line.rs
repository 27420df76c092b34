//! dnf's command line as the pipeline needs it, read: the root, the
//! arguments dnf gets, the command, and what cowkit cannot honour when it
//! runs the transaction itself. The CLI reads the words into a [`Line`].

use std::ffi::OsString;
use std::path::PathBuf;

use crate::conf::Refusal;

/// dnf commands (and their aliases) whose packages cowkit installs; the
/// others run dnf itself.
pub const INSTALLING: &[&str] = &[
    "install",
    "in",
    "localinstall",
    "upgrade",
    "up",
    "update",
    "upgrade-to",
    "update-to",
    "localupdate",
    "reinstall",
    "rei",
    "downgrade",
    "dg",
    "distro-sync",
    "dsync",
    "distrosync",
    "distribution-synchronization",
    "upgrade-minimal",
    "update-minimal",
    "up-min",
];

/// A dnf command line, read.
#[derive(Debug, Default)]
pub struct Line {
    /// `--installroot`'s value, if given.
    pub root: Option<PathBuf>,
    /// The arguments but `--installroot` and its value, in order,
    /// unchanged.
    pub rest: Vec<OsString>,
    /// The command (the first argument that is no option or value).
    pub command: Option<String>,
    /// `-q`/`--quiet`.
    pub quiet: bool,
    /// `--setopt=keepcache=…`, the last one.
    pub keepcache: Option<bool>,
    /// `--config`'s value, the last one.
    pub config: Option<PathBuf>,
    /// An option after which dnf only shows or downloads, never installs
    /// (`--downloadonly`, `--assumeno`, `--help`, `--version`): dnf runs
    /// such a command line itself.
    pub dnf_only: Option<String>,
    /// What cowkit cannot honour if it installs.
    pub refused: Vec<Refusal>,
    /// `--nodocs` or `--setopt=tsflags=nodocs`: rpm's `--excludedocs`.
    pub nodocs: bool,
    /// `--setopt=tsflags=justdb`: rpm's `--justdb`.
    pub justdb: bool,
    /// `--setopt=tsflags=…` given: the command line's flags replace those
    /// of dnf's configuration file.
    pub tsflags_given: bool,
}

impl Line {
    /// Whether the command is one whose packages cowkit installs.
    pub fn installs(&self) -> bool {
        self.dnf_only.is_none()
            && self
                .command
                .as_deref()
                .is_some_and(|c| INSTALLING.contains(&c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(command: &str, dnf_only: Option<&str>) -> Line {
        Line {
            command: Some(command.into()),
            dnf_only: dnf_only.map(String::from),
            ..Line::default()
        }
    }

    #[test]
    fn installing_commands_and_their_aliases_install_and_the_others_go_to_dnf() {
        // The commands mkosi and kiwi give (`install`, `upgrade`,
        // `reinstall`, `distro-sync`) and dnf 4's aliases of them.
        for c in [
            "install",
            "in",
            "upgrade",
            "update",
            "reinstall",
            "downgrade",
            "distro-sync",
            "dsync",
            "upgrade-minimal",
        ] {
            assert!(line(c, None).installs(), "{c}");
        }
        for c in [
            "remove",
            "erase",
            "autoremove",
            "list",
            "history",
            "makecache",
            "clean",
            "repoquery",
            "download",
            "group",
        ] {
            assert!(!line(c, None).installs(), "{c}");
        }
        // An option after which dnf only shows or downloads.
        for only in ["--downloadonly", "--assumeno", "--help", "-h", "--version"] {
            assert!(!line("install", Some(only)).installs(), "{only}");
        }
        assert!(!Line::default().installs());
    }
}
