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

/// dnf5's commands (and the aliases of its default `aliases.d`) whose
/// packages cowkit installs (dnf5 5.4: `install`, `upgrade`, `reinstall`,
/// `downgrade`, `distro-sync`); the others, `swap`, `do`, `group` and
/// `remove` among them, run dnf5 itself.
pub const INSTALLING_DNF5: &[&str] = &[
    "install",
    "in",
    "upgrade",
    "up",
    "update",
    "upgrade-minimal",
    "reinstall",
    "rei",
    "downgrade",
    "dg",
    "distro-sync",
    "dsync",
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
    /// Read as dnf5 reads its command line (the real dnf is dnf5): its
    /// commands install ([`INSTALLING_DNF5`]).
    pub dnf5: bool,
    /// cowkit stands in for `dnf5` by name (a link named `dnf5`): the real
    /// dnf is the first `dnf5` on `PATH` (or `COWKIT_DNF`, which must be
    /// dnf5).
    pub named_dnf5: bool,
}

impl Line {
    /// Whether the command is one whose packages cowkit installs.
    pub fn installs(&self) -> bool {
        let installing = if self.dnf5 {
            INSTALLING_DNF5
        } else {
            INSTALLING
        };
        self.dnf_only.is_none()
            && self
                .command
                .as_deref()
                .is_some_and(|c| installing.contains(&c))
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

    #[test]
    fn dnf5s_installing_commands_are_its_own() {
        let dnf5 = |c: &str| Line {
            dnf5: true,
            ..line(c, None)
        };
        for c in INSTALLING_DNF5 {
            assert!(dnf5(c).installs(), "{c}");
        }
        // dnf 4's that dnf5 does not have, and dnf5's that install but
        // run dnf5 itself.
        for c in [
            "localinstall",
            "update-to",
            "distrosync",
            "up-min",
            "swap",
            "do",
            "group",
            "remove",
            "makecache",
            "repoquery",
        ] {
            assert!(!dnf5(c).installs(), "{c}");
        }
    }
}
