//! dnf's own command line, read the way dnf 4 reads it, for `cowkit dnf`
//! (into a [`cowkit_dnf::line::Line`]): which root (`--installroot`),
//! which command, and which options cowkit cannot honour when it runs the
//! transaction itself.
//!
//! Everything but `--installroot` is passed to dnf unchanged, in order.
//! The table of dnf's general options ([`OPTIONS`]) says which take a
//! value, so that the command is found as dnf finds it (`-d 2 install x`:
//! the command is `install`). A long option written as a prefix of one of
//! them (Python's argparse accepts `--installr`) is refused: cowkit reads
//! only full names.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

pub use cowkit_dnf::line::Line;
pub use cowkit_dnf::line::LineError;
use cowkit_dnf::line::{Word, Words};

/// One of dnf's options: long names, short letter, whether a value
/// follows.
type Opt = (&'static [&'static str], Option<char>, bool);

/// dnf's general options (dnf 4.14 `cli/option_parser.py`).
const OPTIONS: &[Opt] = &[
    (&["--config"], Some('c'), true),
    (&["--quiet"], Some('q'), false),
    (&["--verbose"], Some('v'), false),
    (&["--version"], None, false),
    (&["--installroot"], None, true),
    (&["--nodocs"], None, false),
    (&["--noplugins"], None, false),
    (&["--enableplugin"], None, true),
    (&["--disableplugin"], None, true),
    (&["--releasever"], None, true),
    (&["--setopt"], None, true),
    (&["--skip-broken"], None, false),
    (&["--help", "--help-cmd"], Some('h'), false),
    (&["--allowerasing"], None, false),
    (&["--best"], Some('b'), false),
    (&["--nobest"], None, false),
    (&["--cacheonly"], Some('C'), false),
    (&["--randomwait"], Some('R'), true),
    (&["--debuglevel"], Some('d'), true),
    (&["--debugsolver"], None, false),
    (&["--showduplicates"], None, false),
    (&["--errorlevel"], Some('e'), true),
    (&["--obsoletes"], None, false),
    (&["--rpmverbosity"], None, true),
    (&["--assumeyes"], Some('y'), false),
    (&["--assumeno"], None, false),
    (&["--enablerepo"], None, true),
    (&["--disablerepo"], None, true),
    (&["--repo", "--repoid"], None, true),
    (&["--enable"], None, false),
    (&["--disable"], None, false),
    (&["--exclude", "--excludepkgs"], Some('x'), true),
    (&["--disableexcludes", "--disableexcludepkgs"], None, true),
    (&["--repofrompath"], None, true),
    (&["--noautoremove"], None, false),
    (&["--nogpgcheck"], None, false),
    (&["--color"], None, true),
    (&["--refresh"], None, false),
    (&[], Some('4'), false),
    (&[], Some('6'), false),
    (&["--destdir", "--downloaddir"], None, true),
    (&["--downloadonly"], None, false),
    (&["--comment"], None, true),
    (&["--bugfix"], None, false),
    (&["--enhancement"], None, false),
    (&["--newpackage"], None, false),
    (&["--security"], None, false),
    (&["--advisory", "--advisories"], None, true),
    (&["--bz", "--bzs"], None, true),
    (&["--cve", "--cves"], None, true),
    (&["--sec-severity", "--secseverity"], None, true),
    (&["--forcearch"], None, true),
];

const DESTDIR: &str = "without --downloadonly dnf refuses it, and cowkit downloads into a \
                       directory of its own";
const COMMENT: &str = "cowkit writes no dnf history transaction for what it installs, so the \
                       comment would be lost";

/// Read `args` (dnf's arguments, without the program name).
pub fn parse(args: &[OsString]) -> Result<Line, LineError> {
    let mut line = Line::default();
    let mut destdir = None;
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
                let spec = OPTIONS.iter().find(|o| o.1 == Some(c));
                let rest = &letters[c.len_utf8()..];
                match spec {
                    // `-c/x`, `-d2`: the value is the rest of the word.
                    Some(s) if s.2 => (
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
        let mut tokens = vec![arg.clone()];
        let value = words.value(&name, spec.2, inline, &mut tokens)?;
        let first = spec.0.first().copied().unwrap_or("");
        if first == "--installroot" {
            line.set_root(PathBuf::from(value.expect("takes a value")))?;
            continue;
        }
        line.rest.extend(tokens);
        option(
            &mut line,
            first,
            spec.1,
            &name,
            value.as_deref(),
            &mut destdir,
        );
    }
    line.refuse_destdir(destdir, DESTDIR);
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

/// One of dnf's general options, `name` (standing for `first`/`short`),
/// with its value, read into `line`.
fn option(
    line: &mut Line,
    first: &str,
    short: Option<char>,
    name: &str,
    value: Option<&OsStr>,
    destdir: &mut Option<String>,
) {
    let shown = || match value {
        Some(v) => format!("{name}={}", v.to_string_lossy()),
        None => name.to_string(),
    };
    match (first, short) {
        ("--quiet", _) => line.quiet = true,
        ("--help", _) | ("--version", _) | ("--downloadonly", _) | ("--assumeno", _) => {
            line.dnf_only = Some(name.to_string())
        }
        ("--nodocs", _) => line.nodocs = true,
        ("--destdir", _) => *destdir = Some(shown()),
        ("--comment", _) => line.refuse(shown(), COMMENT),
        ("--config", _) => line.config = value.map(PathBuf::from),
        ("--setopt", _) => {
            let v = value.expect("takes a value").to_string_lossy();
            let (key, val) = v.split_once('=').unwrap_or((&v, ""));
            match key.trim() {
                "tsflags" => {
                    line.tsflags_given = true;
                    line.add_tsflags(val, shown());
                }
                "keepcache" => line.set_keepcache(val, shown(), "not a boolean dnf knows"),
                _ => {}
            }
        }
        _ => {}
    }
}

/// The option `name` (`--installroot`) stands for; an error for a prefix
/// of one; `None` for an option dnf's general options do not have.
fn long_spec(name: &str) -> Result<Option<&'static Opt>, LineError> {
    if let Some(o) = OPTIONS.iter().find(|o| o.0.contains(&name)) {
        return Ok(Some(o));
    }
    if name.len() > 3 {
        if let Some(full) = OPTIONS
            .iter()
            .flat_map(|o| o.0.iter())
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
