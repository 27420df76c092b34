//! dnf's own command line, read the way dnf 4 reads it, for `cowkit dnf`
//! (into a [`cowkit_dnf::line::Line`]): which root (`--installroot`),
//! which command, and which options cowkit cannot honour when it runs the
//! transaction itself.
//!
//! Everything but `--installroot` is passed to dnf unchanged, in order.
//! The table of dnf's options ([`cowkit_dnf::line::OPTIONS`], those dnf 4
//! reads) says which take a value, so that the command is found as dnf finds it (`-d 2 install x`:
//! the command is `install`). A long option written as a prefix of one of
//! them (Python's argparse accepts `--installr`) is refused: cowkit reads
//! only full names.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

pub use cowkit_dnf::line::Line;
pub use cowkit_dnf::line::LineError;
use cowkit_dnf::line::{DnfOption, Given, Word, Words, OPTIONS};

const DESTDIR: &str = "without --downloadonly dnf refuses it, and cowkit downloads into a \
                       directory of its own";
const COMMENT: &str = "cowkit writes no dnf history transaction for what it installs, so the \
                       comment would be lost";

/// Read `args` (dnf's arguments, without the program name).
pub fn parse(args: &[OsString]) -> Result<Line, LineError> {
    let mut line = Line::default();
    let mut words = Words::new(args);
    while let Some((arg, word)) = words.next_word() {
        let (spec, name, inline) = match word {
            Word::Plain => {
                positional(&mut line, arg);
                continue;
            }
            Word::EndOfOptions => {
                line.rest.push(arg.clone());
                continue;
            }
            Word::Long(name, inline) => (long_spec(&name)?, name, inline),
            Word::Short(letters) => {
                let c = letters.chars().next().expect("not empty");
                let spec = cowkit_dnf::line::short_option(c, false);
                let rest = &letters[c.len_utf8()..];
                match spec {
                    // `-c/x`, `-d2`: the value is the rest of the word.
                    Some(s) if s.value => (
                        Some(s),
                        format!("-{c}"),
                        (!rest.is_empty()).then(|| OsString::from(rest)),
                    ),
                    // `-yq`: flags only (a value option inside a cluster
                    // is left to dnf).
                    _ => {
                        flags(&mut line, &letters);
                        line.rest.push(arg.clone());
                        continue;
                    }
                }
            }
        };
        let Some(spec) = spec else {
            // An option of one command (or one dnf does not know):
            // dnf says which.
            line.rest.push(arg.clone());
            continue;
        };
        if let Some(given) = line.take_option(&mut words, arg, spec, name, inline)? {
            option(&mut line, &given);
        }
    }
    line.refuse_destdir(DESTDIR);
    Ok(line)
}

/// A word that is no option: the command if it is the first.
fn positional(line: &mut Line, arg: &OsStr) {
    if line.command.is_none() {
        line.command = Some(arg.to_string_lossy().into_owned());
    }
    line.rest.push(arg.to_os_string());
}

/// A cluster of short flags (`yq`), read into `line`.
fn flags(line: &mut Line, letters: &str) {
    for c in letters.chars() {
        match c {
            'q' => line.quiet = true,
            'h' => line.dnf_only = Some("-h".into()),
            _ => {}
        }
    }
}

/// One of dnf's general options, as `given` (standing for `first`), read
/// into `line`.
fn option(line: &mut Line, given: &Given) {
    match given.first {
        "--quiet" => line.quiet = true,
        "--help" | "--version" | "--downloadonly" | "--assumeno" => {
            line.dnf_only = Some(given.name.clone())
        }
        "--nodocs" => line.nodocs = true,
        "--destdir" => line.destdir = Some(given.shown()),
        "--comment" => line.refuse(given.shown(), COMMENT),
        "--config" => line.config = given.value.as_ref().map(PathBuf::from),
        "--setopt" => {
            let (key, val) = given.setting();
            match key.trim() {
                "tsflags" => {
                    line.tsflags_given = true;
                    line.add_tsflags(&val, given.shown());
                }
                "keepcache" => line.set_keepcache(&val, given.shown(), "not a boolean dnf knows"),
                _ => {}
            }
        }
        _ => {}
    }
}

/// The option `name` (`--installroot`) stands for; an error for a prefix
/// of one; `None` for an option dnf's general options do not have.
fn long_spec(name: &str) -> Result<Option<&'static DnfOption>, LineError> {
    if let Some(o) = cowkit_dnf::line::long_option(name, false) {
        return Ok(Some(o));
    }
    if name.len() > 3 {
        if let Some(full) = OPTIONS
            .iter()
            .filter(|o| o.reader.reads(false))
            .flat_map(|o| o.names.iter())
            .find(|full| full.starts_with(name))
        {
            return Err(LineError::Abbreviated {
                given: name.to_string(),
                full,
            });
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(args: &[&str]) -> Result<Line, LineError> {
        let v: Vec<OsString> = args.iter().map(OsString::from).collect();
        super::parse(&v)
    }

    #[test]
    fn the_root_is_taken_out_and_the_rest_kept_in_order() {
        let args = [
            "-y",
            "--installroot",
            "/r",
            "-c",
            "/c.conf",
            "--setopt=a=b",
            "-d",
            "2",
            "install",
            "bash",
            "-x",
            "foo",
        ];
        let l = parse(&args).unwrap();
        assert_eq!(l.root.as_deref(), Some(Path::new("/r")));
        assert_eq!(l.command.as_deref(), Some("install"));
        assert!(l.installs());
        // Every word but `--installroot /r`, in order.
        let rest: Vec<_> = l.rest.iter().map(|a| a.to_str().unwrap()).collect();
        assert_eq!(rest, [&args[..1], &args[3..]].concat());
        assert_eq!(l.config.as_deref(), Some(Path::new("/c.conf")));
        let l = parse(&["--installroot=/r", "-d2", "-yq", "upgrade"]).unwrap();
        assert_eq!(l.root.as_deref(), Some(Path::new("/r")));
        assert_eq!(l.command.as_deref(), Some("upgrade"));
        assert!(l.quiet);
    }

    #[test]
    fn image_builders_command_lines_are_read_as_dnf_reads_them() {
        // In the shape mkosi gives dnf 4 its command line.
        let l = parse(&[
            "--assumeyes",
            "--best",
            "--releasever=40",
            "--installroot=/work/root",
            "--setopt=keepcache=1",
            "--setopt=logdir=/work/root/var/log",
            "--setopt=install_weak_deps=0",
            "--setopt=check_config_file_age=0",
            "--disableplugin=*",
            "--enableplugin=builddep",
            "--setopt=reposdir=/work/repos",
            "--config=/work/dnf.conf",
            "install",
            "bash",
            "systemd",
        ])
        .unwrap();
        assert_eq!(l.root.as_deref(), Some(Path::new("/work/root")));
        assert_eq!(l.command.as_deref(), Some("install"));
        assert!(l.installs() && l.refused.is_empty());
        assert_eq!(l.keepcache, Some(true));
        assert_eq!(l.config.as_deref(), Some(Path::new("/work/dnf.conf")));
        assert!(!l.tsflags_given && !l.nodocs);
        assert_eq!(l.rest.len(), 14);
        assert!(l
            .rest
            .iter()
            .all(|a| !a.to_string_lossy().contains("installroot")));
        // In the shape kiwi gives it: values as separate words.
        let l = parse(&[
            "--config",
            "/var/tmp/kiwi/dnf.conf",
            "-y",
            "--installroot",
            "/image/root",
            "--releasever=40",
            "--setopt=tsflags=nodocs",
            "install",
            "kernel-core",
        ])
        .unwrap();
        assert_eq!(l.root.as_deref(), Some(Path::new("/image/root")));
        assert_eq!(
            l.config.as_deref(),
            Some(Path::new("/var/tmp/kiwi/dnf.conf"))
        );
        assert!(l.installs() && l.refused.is_empty());
        assert!(l.tsflags_given && l.nodocs && !l.justdb);
        assert_eq!(l.rest.len(), 7);
    }

    #[test]
    fn what_cowkit_cannot_honour_is_named() {
        let l = parse(&[
            "--installroot=/r",
            "--nodocs",
            "--setopt",
            "tsflags=test",
            "--comment=x",
            "--downloaddir=/d",
            "install",
            "a",
        ])
        .unwrap();
        let named: Vec<_> = l.refused.iter().map(|r| r.option.as_str()).collect();
        assert_eq!(
            named,
            ["--setopt=tsflags=test", "--comment=x", "--downloaddir=/d"]
        );
        // nodocs is rpm's `--excludedocs`, honoured.
        assert!(l.nodocs);
        let l = parse(&[
            "--installroot=/r",
            "--setopt=tsflags=nodocs",
            "--setopt=install_langs=en,de_DE",
            "install",
            "a",
        ])
        .unwrap();
        // dnf 4 has no install_langs (it warns, and installs every
        // language): neither refused nor taken.
        assert!(l.refused.is_empty());
        assert!(l.nodocs);
        assert!(!l.justdb);
        // justdb is rpm's `--justdb`, honoured.
        let l = parse(&[
            "--installroot=/r",
            "--setopt=tsflags=justdb,nodocs",
            "install",
            "a",
        ])
        .unwrap();
        assert!(l.refused.is_empty());
        assert!(l.justdb && l.nodocs);
        for only in ["--downloadonly", "--assumeno", "--help", "-h", "--version"] {
            let l = parse(&["--installroot=/r", only, "install", "a"]).unwrap();
            assert!(!l.installs(), "{only}");
        }
        let l = parse(&[
            "--installroot=/r",
            "--downloadonly",
            "--downloaddir=/d",
            "install",
        ])
        .unwrap();
        assert!(l.refused.is_empty());
        assert!(matches!(
            parse(&["--installr=/r", "install"]),
            Err(LineError::Abbreviated { .. })
        ));
        assert!(matches!(
            parse(&["--installroot=/r", "--installroot=/s"]),
            Err(LineError::TwoRoots(..))
        ));
        let l = parse(&["--setopt=keepcache=True", "--installroot=/r", "install"]).unwrap();
        assert_eq!(l.keepcache, Some(true));
        let l = parse(&["--installroot=/r", "remove", "a"]).unwrap();
        assert!(!l.installs());
    }
}
