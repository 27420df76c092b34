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

/// A command line dnf itself would take, but cowkit cannot read.
#[derive(Debug, thiserror::Error)]
pub enum LineError {
    /// `--installroot` twice.
    #[error("`--installroot` is given twice (`{}`, then `{}`)", .0.display(), .1.display())]
    TwoRoots(PathBuf, PathBuf),
    /// A prefix of a long option (dnf 4 takes them; cowkit does not).
    #[error("`{given}` is short for `{full}`: cowkit reads dnf's options by their full names")]
    Abbreviated {
        /// As given.
        given: String,
        /// The option it is short for.
        full: &'static str,
    },
    /// An option whose value is missing.
    #[error("`{0}` needs a value")]
    NoValue(String),
    /// A value given to an option that takes none (dnf5: `--no-docs=1`).
    #[error("`{0}` takes no value")]
    Unexpected(String),
}

/// One word of a dnf command line, as dnf 4 and dnf5 both split them
/// (what each makes of an option is its own reader's).
#[derive(Debug, PartialEq, Eq)]
pub enum Word {
    /// No option: a command or an argument (every word after `--`, and
    /// `-` itself).
    Plain,
    /// `--`: no option follows.
    EndOfOptions,
    /// `--name` or `--name=value`: the name with its dashes, the value.
    Long(String, Option<OsString>),
    /// `-xyz`: the letters after the dash.
    Short(String),
}

/// A command line read word by word; an option's value taken from the
/// next word when it is not in the option's own.
pub struct Words<'a> {
    args: &'a [OsString],
    next: usize,
    options_ended: bool,
}

impl<'a> Words<'a> {
    /// Read `args` (without the program name).
    pub fn new(args: &'a [OsString]) -> Words<'a> {
        Words {
            args,
            next: 0,
            options_ended: false,
        }
    }

    /// The next word, as given and as read.
    pub fn next_word(&mut self) -> Option<(&'a OsString, Word)> {
        let arg = self.args.get(self.next)?;
        self.next += 1;
        let text = arg.to_string_lossy();
        let word = if self.options_ended || !text.starts_with('-') || text == "-" {
            Word::Plain
        } else if text == "--" {
            self.options_ended = true;
            Word::EndOfOptions
        } else if let Some(long) = text.strip_prefix("--") {
            match long.split_once('=') {
                Some((n, v)) => Word::Long(format!("--{n}"), Some(OsString::from(v))),
                None => Word::Long(text.to_string(), None),
            }
        } else {
            Word::Short(text[1..].to_string())
        };
        Some((arg, word))
    }

    /// Whether `--` was read: every word from there is [`Word::Plain`].
    pub fn options_ended(&self) -> bool {
        self.options_ended
    }

    /// The next word as the value of the option `name`.
    pub fn value_of(&mut self, name: &str) -> Result<&'a OsString, LineError> {
        let v = self
            .args
            .get(self.next)
            .ok_or_else(|| LineError::NoValue(name.to_string()))?;
        self.next += 1;
        Ok(v)
    }

    /// The value of the option `name` if it `takes` one: the one in its
    /// own word (`inline`), else the next word, then added to `given`
    /// (the words the option was given as). One that takes none has none.
    pub fn value(
        &mut self,
        name: &str,
        takes: bool,
        inline: Option<OsString>,
        given: &mut Vec<OsString>,
    ) -> Result<Option<OsString>, LineError> {
        if !takes {
            return Ok(None);
        }
        if let Some(v) = inline {
            return Ok(Some(v));
        }
        let v = self.value_of(name)?;
        given.push(v.clone());
        Ok(Some(v.clone()))
    }
}

impl Line {
    /// `--installroot`'s value; given twice, an error.
    pub fn set_root(&mut self, root: PathBuf) -> Result<(), LineError> {
        match self.root.take() {
            Some(old) => Err(LineError::TwoRoots(old, root)),
            None => {
                self.root = Some(root);
                Ok(())
            }
        }
    }

    /// At the end of the line: `destdir` (the option as given), when the
    /// line installs anything, is refused for `why`.
    pub fn refuse_destdir(&mut self, destdir: Option<String>, why: &'static str) {
        if let Some(option) = destdir {
            if self.dnf_only.is_none() {
                self.refuse(option, why);
            }
        }
    }

    /// `option` (as given) cannot be honoured, for `why`.
    pub fn refuse(&mut self, option: String, why: &'static str) {
        self.refused.push(crate::conf::Refusal { option, why });
    }

    /// The transaction flags `flags`, given as `option`, added: `nodocs`
    /// and `justdb` are carried out, any other refuses the option.
    pub fn add_tsflags(&mut self, flags: &str, option: String) {
        let t = crate::conf::Tsflags::read(flags);
        self.nodocs |= t.nodocs;
        self.justdb |= t.justdb;
        if t.unknown.is_some() {
            self.refuse(option, crate::conf::TSFLAGS);
        }
    }

    /// `keepcache` set to `value`, given as `option`; refused (`why`) when
    /// it is no boolean.
    pub fn set_keepcache(&mut self, value: &str, option: String, why: &'static str) {
        match crate::conf::parse_bool(value) {
            Some(b) => self.keepcache = Some(b),
            None => self.refuse(option, why),
        }
    }

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
