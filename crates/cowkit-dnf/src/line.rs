//! dnf's command line as the pipeline needs it, read: the root, the
//! arguments dnf gets, the command, and what cowkit cannot honour when it
//! runs the transaction itself. The CLI reads the words into a [`Line`].

use std::ffi::OsString;
use std::path::PathBuf;

use crate::conf::Refusal;

/// Which dnf reads a command word or an option: cowkit reads dnf 4's
/// command line (dnf 4.14) or dnf5's (dnf5 5.4), and most words are both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reader {
    /// dnf 4 and dnf5 alike.
    Both,
    /// dnf 4 only.
    Dnf4,
    /// dnf5 only.
    Dnf5,
}

impl Reader {
    /// Whether the dnf that reads the line (`dnf5` or dnf 4) reads this.
    pub fn reads(self, dnf5: bool) -> bool {
        match self {
            Reader::Both => true,
            Reader::Dnf4 => !dnf5,
            Reader::Dnf5 => dnf5,
        }
    }
}

use Reader::{Both, Dnf4, Dnf5};

/// dnf commands (and their aliases) whose packages cowkit installs, with
/// the dnf that has each: dnf 4.14's, and dnf5 5.4's (`install`,
/// `upgrade`, `reinstall`, `downgrade`, `distro-sync`) with the aliases of
/// its default `aliases.d`. The others run dnf itself, dnf5's `swap`,
/// `do`, `group` and `remove` among them.
pub const INSTALLING: &[(&str, Reader)] = &[
    ("install", Both),
    ("in", Both),
    ("localinstall", Dnf4),
    ("upgrade", Both),
    ("up", Both),
    ("update", Both),
    ("upgrade-to", Dnf4),
    ("update-to", Dnf4),
    ("localupdate", Dnf4),
    ("reinstall", Both),
    ("rei", Both),
    ("downgrade", Both),
    ("dg", Both),
    ("distro-sync", Both),
    ("dsync", Both),
    ("distrosync", Dnf4),
    ("distribution-synchronization", Dnf4),
    ("upgrade-minimal", Both),
    ("update-minimal", Dnf4),
    ("up-min", Dnf4),
];

/// One option of dnf's command line.
#[derive(Debug)]
pub struct DnfOption {
    /// Its long names with their dashes; readers match on the first.
    pub names: &'static [&'static str],
    /// Its short letter.
    pub short: Option<char>,
    /// Whether a value follows.
    pub value: bool,
    /// Which dnf has it so.
    pub reader: Reader,
}

const fn opt(
    names: &'static [&'static str],
    short: Option<char>,
    value: bool,
    reader: Reader,
) -> DnfOption {
    DnfOption {
        names,
        short,
        value,
        reader,
    }
}

/// The options cowkit reads: dnf 4.14's general options
/// (`cli/option_parser.py`); dnf5 5.4.4's global options (`dnf5/main.cpp`,
/// with the aliases of its `aliases.d/compatibility.conf`) and those of
/// its installing commands (`dnf5/shared_options.cpp`, `commands/*/`).
/// An option whose names, letter or value differ between the two stands
/// once for each.
pub const OPTIONS: &[DnfOption] = &[
    opt(&["--config"], Some('c'), true, Both),
    opt(&["--quiet"], Some('q'), false, Both),
    opt(&["--verbose"], Some('v'), false, Dnf4),
    opt(&["--version"], None, false, Both),
    opt(&["--installroot"], None, true, Both),
    opt(&["--nodocs"], None, false, Dnf4),
    opt(&["--no-docs", "--nodocs"], None, false, Dnf5),
    opt(&["--noplugins"], None, false, Dnf4),
    opt(&["--no-plugins", "--noplugins"], None, false, Dnf5),
    opt(&["--enableplugin"], None, true, Dnf4),
    opt(&["--enable-plugin", "--enableplugin"], None, true, Dnf5),
    opt(&["--disableplugin"], None, true, Dnf4),
    opt(&["--disable-plugin", "--disableplugin"], None, true, Dnf5),
    opt(&["--releasever"], None, true, Both),
    opt(&["--releasever-major"], None, true, Dnf5),
    opt(&["--releasever-minor"], None, true, Dnf5),
    opt(&["--setopt"], None, true, Both),
    opt(&["--setvar"], None, true, Dnf5),
    opt(&["--skip-broken"], None, false, Dnf4),
    opt(&["--help", "--help-cmd"], Some('h'), false, Dnf4),
    opt(&["--help"], Some('h'), false, Dnf5),
    opt(&["--allowerasing"], None, false, Dnf4),
    opt(&["--best"], Some('b'), false, Dnf4),
    opt(&["--best"], None, false, Dnf5),
    opt(&["--nobest"], None, false, Dnf4),
    opt(&["--no-best", "--nobest"], None, false, Dnf5),
    opt(&["--allow-vendor-change"], None, false, Dnf5),
    opt(&["--no-allow-vendor-change"], None, false, Dnf5),
    opt(&["--cacheonly"], Some('C'), false, Both),
    opt(&["--randomwait"], Some('R'), true, Dnf4),
    opt(&["--debuglevel"], Some('d'), true, Dnf4),
    opt(&["--debugsolver"], None, false, Both),
    opt(&["--showduplicates"], None, false, Dnf4),
    opt(&["--errorlevel"], Some('e'), true, Dnf4),
    opt(&["--obsoletes"], None, false, Dnf4),
    opt(&["--rpmverbosity"], None, true, Dnf4),
    opt(&["--assumeyes"], Some('y'), false, Both),
    opt(&["--assumeno"], None, false, Both),
    opt(&["--enablerepo"], None, true, Dnf4),
    opt(&["--enable-repo", "--enablerepo"], None, true, Dnf5),
    opt(&["--disablerepo"], None, true, Dnf4),
    opt(&["--disable-repo", "--disablerepo"], None, true, Dnf5),
    opt(&["--repo", "--repoid"], None, true, Both),
    opt(&["--enable"], None, false, Dnf4),
    opt(&["--disable"], None, false, Dnf4),
    opt(&["--exclude", "--excludepkgs"], Some('x'), true, Dnf4),
    opt(&["--exclude"], Some('x'), true, Dnf5),
    opt(
        &["--disableexcludes", "--disableexcludepkgs"],
        None,
        true,
        Dnf4,
    ),
    opt(&["--repofrompath"], None, true, Both),
    opt(&["--noautoremove"], None, false, Dnf4),
    opt(&["--nogpgcheck"], None, false, Dnf4),
    opt(&["--no-gpgchecks", "--nogpgcheck"], None, false, Dnf5),
    opt(&["--color"], None, true, Both),
    opt(&["--refresh"], None, false, Both),
    opt(&[], Some('4'), false, Dnf4),
    opt(&[], Some('6'), false, Dnf4),
    opt(&["--destdir", "--downloaddir"], None, true, Dnf4),
    opt(&["--destdir"], None, true, Dnf5),
    opt(&["--downloadonly"], None, false, Both),
    opt(&["--store"], None, true, Dnf5),
    opt(&["--comment"], None, true, Both),
    opt(&["--use-host-config"], None, false, Dnf5),
    opt(&["--show-new-leaves"], None, false, Dnf5),
    opt(&["--dump-main-config"], None, false, Dnf5),
    opt(&["--dump-repo-config"], None, true, Dnf5),
    opt(&["--dump-variables"], None, false, Dnf5),
    opt(&["--skip-file-locks"], None, false, Dnf5),
    opt(&["--from-repo"], None, true, Dnf5),
    opt(&["--from-vendor"], None, true, Dnf5),
    opt(&["--installed-from-repo"], None, true, Dnf5),
    opt(&["--bugfix"], None, false, Dnf4),
    opt(&["--enhancement"], None, false, Dnf4),
    opt(&["--newpackage"], None, false, Dnf4),
    opt(&["--security"], None, false, Dnf4),
    opt(&["--advisory", "--advisories"], None, true, Dnf4),
    opt(&["--advisories", "--advisory"], None, true, Dnf5),
    opt(&["--advisory-severities"], None, true, Dnf5),
    opt(&["--bz", "--bzs"], None, true, Dnf4),
    opt(&["--bzs", "--bz"], None, true, Dnf5),
    opt(&["--cve", "--cves"], None, true, Dnf4),
    opt(&["--cves", "--cve"], None, true, Dnf5),
    opt(&["--sec-severity", "--secseverity"], None, true, Dnf4),
    opt(&["--forcearch"], None, true, Both),
];

/// The option of the dnf that reads the line (`dnf5` or dnf 4) named
/// `name` (`--installroot`), if it has one.
pub fn long_option(name: &str, dnf5: bool) -> Option<&'static DnfOption> {
    OPTIONS
        .iter()
        .find(|o| o.reader.reads(dnf5) && o.names.contains(&name))
}

/// The option of the dnf that reads the line with the letter `short`.
pub fn short_option(short: char, dnf5: bool) -> Option<&'static DnfOption> {
    OPTIONS
        .iter()
        .find(|o| o.reader.reads(dnf5) && o.short == Some(short))
}

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
    /// `--destdir` (or dnf5's `--setopt=destdir=…`) as given, the last
    /// one: refused at the end of the line unless dnf only downloads.
    pub destdir: Option<String>,
    /// `--setopt=tsflags=…` given: the command line's flags replace those
    /// of dnf's configuration file.
    pub tsflags_given: bool,
    /// Read as dnf5 reads its command line (the real dnf is dnf5): its
    /// commands install (those of [`INSTALLING`] dnf5 reads).
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

/// One option as the line gives it: the option it stands for, the name
/// it is written with and its value.
pub struct Given {
    /// The first name of the option it stands for in [`OPTIONS`] (given
    /// to dnf5 as `--nodocs`: `--no-docs`).
    pub first: &'static str,
    /// The name as written (`--nodocs`, `-x`).
    pub name: String,
    /// Its value, if it takes one.
    pub value: Option<OsString>,
}

impl Given {
    /// The option as written: `--name=value`, or `--name`.
    pub fn shown(&self) -> String {
        match &self.value {
            Some(v) => format!("{}={}", self.name, v.to_string_lossy()),
            None => self.name.to_string(),
        }
    }

    /// `--setopt`'s `key=value`, split at its first `=` (no `=`: the whole
    /// value is the key).
    pub fn setting(&self) -> (String, String) {
        let v = self.value.as_deref().unwrap_or_default().to_string_lossy();
        match v.split_once('=') {
            Some((k, val)) => (k.to_string(), val.to_string()),
            None => (v.into_owned(), String::new()),
        }
    }
}

impl Line {
    /// The option `spec`, written as the word `arg` (its name `name`, and
    /// `inline`, a value in that word), read off the line: its value, the
    /// next word of `words` when it takes one that `arg` lacks;
    /// `--installroot` becomes the root (`None`), every other option stays
    /// in [`Line::rest`] as given, and is returned for its dnf's reader.
    pub fn take_option(
        &mut self,
        words: &mut Words<'_>,
        arg: &OsString,
        spec: &'static DnfOption,
        name: String,
        inline: Option<OsString>,
    ) -> Result<Option<Given>, LineError> {
        let mut tokens = vec![arg.clone()];
        let value = words.value(&name, spec.value, inline, &mut tokens)?;
        let first = spec.names.first().copied().unwrap_or("");
        if first == "--installroot" {
            self.set_root(PathBuf::from(value.expect("takes a value")))?;
            return Ok(None);
        }
        self.rest.extend(tokens);
        Ok(Some(Given { first, name, value }))
    }

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

    /// At the end of the line: [`Line::destdir`], when the line installs
    /// anything, is refused for `why`.
    pub fn refuse_destdir(&mut self, why: &'static str) {
        if let Some(option) = self.destdir.take() {
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
        self.dnf_only.is_none()
            && self.command.as_deref().is_some_and(|c| {
                INSTALLING
                    .iter()
                    .any(|(word, reader)| *word == c && reader.reads(self.dnf5))
            })
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
        for c in [
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
        ] {
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
