//! dnf5's own command line, read the way dnf5 5.4 reads it (its
//! `dnf5/main.cpp` global options, the aliases of its default
//! `aliases.d/compatibility.conf`, the options of its installing
//! commands), for `cowkit dnf` standing in for dnf5 (into a
//! [`cowkit_dnf::line::Line`] marked `dnf5`).
//!
//! How dnf5 reads, and so cowkit: long options by their full names only
//! (no prefixes), `--name=value` or `--name value`; short flags in
//! clusters (`-yq`), a short option's value the rest of its word or the
//! next word (`-x foo`); the global options anywhere, before or after the
//! command; the command the first word that is no option or value before
//! `--`. Everything but `--installroot` and its value is passed to dnf5
//! unchanged, in order.

use std::ffi::OsString;
use std::path::PathBuf;

pub use cowkit_dnf::line::Line;
pub use cowkit_dnf::line::LineError;
use cowkit_dnf::line::{Given, Word, Words};

const DESTDIR: &str = "without --downloadonly dnf5 keeps the packages it installs there, and \
                       cowkit downloads into a directory of its own";
const COMMENT: &str = "cowkit writes no dnf5 history transaction for what it installs, so the \
                       comment would be lost";

/// Read `args` (dnf5's arguments, without the program name).
pub fn parse(args: &[OsString]) -> Result<Line, LineError> {
    let mut line = Line {
        dnf5: true,
        ..Line::default()
    };
    let mut words = Words::new(args);
    while let Some((arg, word)) = words.next_word() {
        let (name, inline) = match word {
            Word::Plain => {
                if line.command.is_none() && !words.options_ended() {
                    line.command = Some(arg.to_string_lossy().into_owned());
                }
                line.rest.push(arg.clone());
                continue;
            }
            Word::EndOfOptions => {
                line.rest.push(arg.clone());
                continue;
            }
            Word::Long(name, inline) => (name, inline),
            Word::Short(letters) => {
                line.rest.push(arg.clone());
                shorts(&mut line, &letters, &mut words)?;
                continue;
            }
        };
        let Some(spec) = cowkit_dnf::line::long_option(&name, true) else {
            // Another command's option, or one dnf5 does not know: dnf5
            // says which.
            line.rest.push(arg.clone());
            continue;
        };
        if !spec.value && inline.is_some() {
            return Err(LineError::Unexpected(arg.to_string_lossy().into_owned()));
        }
        if let Some(given) = line.take_option(&mut words, arg, spec, name, inline)? {
            option(&mut line, &given);
        }
    }
    line.refuse_destdir(DESTDIR);
    Ok(line)
}

/// Short options `letters` (the word after its dash, already in
/// `line.rest`): flags in a cluster; a value option takes the rest of the
/// word or the next word.
fn shorts(line: &mut Line, letters: &str, words: &mut Words<'_>) -> Result<(), LineError> {
    let letters: Vec<char> = letters.chars().collect();
    for (k, c) in letters.iter().enumerate() {
        let Some(spec) = cowkit_dnf::line::short_option(*c, true) else {
            // dnf5 refuses it: it says which.
            break;
        };
        let name = format!("-{c}");
        let value = if spec.value {
            let rest: String = letters[k + 1..].iter().collect();
            Some(if rest.is_empty() {
                let v = words.value_of(&name)?;
                line.rest.push(v.clone());
                v.clone()
            } else {
                OsString::from(rest)
            })
        } else {
            None
        };
        let takes_rest = value.is_some();
        let given = Given {
            first: spec.names[0],
            name,
            value,
        };
        option(line, &given);
        if takes_rest {
            break;
        }
    }
    Ok(())
}

/// One of dnf5's options, as `given` (standing for `first`), read into
/// `line`.
fn option(line: &mut Line, given: &Given) {
    match given.first {
        "--quiet" => line.quiet = true,
        // dnf5 only shows, stores or downloads: it runs such a line itself.
        "--help" | "--version" | "--downloadonly" | "--assumeno" | "--store" => {
            line.dnf_only = Some(given.name.clone())
        }
        // dnf5 appends `nodocs` to its tsflags.
        "--no-docs" => line.nodocs = true,
        "--destdir" => line.destdir = Some(given.shown()),
        "--comment" => line.refuse(given.shown(), COMMENT),
        "--config" => line.config = given.value.as_ref().map(PathBuf::from),
        "--setopt" => {
            let (key, val) = given.setting();
            match key.as_str() {
                // dnf5 appends the command line's tsflags to its
                // configuration's; an empty value clears them all.
                "tsflags" if val.is_empty() => {
                    line.tsflags_given = true;
                    line.nodocs = false;
                    line.justdb = false;
                }
                "tsflags" => line.add_tsflags(&val, given.shown()),
                "keepcache" => line.set_keepcache(&val, given.shown(), "not a boolean dnf5 knows"),
                "destdir" => line.destdir = Some(given.shown()),
                _ => {}
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn parse(args: &[&str]) -> Result<Line, LineError> {
        let v: Vec<OsString> = args.iter().map(OsString::from).collect();
        super::parse(&v)
    }

    fn rest(l: &Line) -> Vec<&str> {
        l.rest.iter().map(|a| a.to_str().unwrap()).collect()
    }

    /// mkosi's command line for dnf5 (`mkosi/installer/dnf.py`, `Dnf.cmd`),
    /// then the operation.
    const MKOSI: &[&str] = &[
        "--assumeyes",
        "--best",
        "--releasever=41",
        "--installroot=/buildroot",
        "--setopt=logdir=/var/log",
        "--setopt=cachedir=/var/cache/libdnf5",
        "--setopt=persistdir=/var/lib/libdnf5",
        "--setopt=install_weak_deps=0",
        "--setopt=check_config_file_age=0",
        "--disable-plugin=*",
        "--enable-plugin",
        "builddep",
        "--enable-plugin",
        "versionlock",
        "--enable-repo=fedora",
        "--setopt=metadata_expire=never",
        "--setopt=cacheonly=metadata",
        "--no-docs",
        "--use-host-config",
    ];

    #[test]
    fn mkosis_command_line_is_read_as_dnf5_reads_it() {
        let mut args = MKOSI.to_vec();
        args.extend(["install", "bash", "systemd"]);
        let l = parse(&args).unwrap();
        assert!(l.dnf5);
        assert_eq!(l.root.as_deref(), Some(Path::new("/buildroot")));
        // `--enable-plugin builddep`: the value is no command.
        assert_eq!(l.command.as_deref(), Some("install"));
        assert!(l.installs() && l.refused.is_empty(), "{:?}", l.refused);
        assert!(l.nodocs && !l.justdb && !l.tsflags_given);
        let mut expected: Vec<&str> = args.clone();
        expected.retain(|a| *a != "--installroot=/buildroot");
        assert_eq!(rest(&l), expected);
        // makecache installs nothing: dnf5 runs it.
        let mut args = MKOSI.to_vec();
        args.extend(["makecache", "--refresh"]);
        let l = parse(&args).unwrap();
        assert_eq!(l.command.as_deref(), Some("makecache"));
        assert!(!l.installs());
    }

    #[test]
    fn global_options_go_anywhere_and_values_are_skipped() {
        // After the command, as a separate word, and `-x` with its value.
        let l = parse(&[
            "install",
            "-y",
            "bash",
            "--installroot",
            "/r",
            "-x",
            "foo",
            "--setopt",
            "tsflags=justdb",
            "-qC",
        ])
        .unwrap();
        assert_eq!(l.root.as_deref(), Some(Path::new("/r")));
        assert_eq!(l.command.as_deref(), Some("install"));
        assert!(l.quiet && l.justdb);
        assert_eq!(
            rest(&l),
            [
                "install",
                "-y",
                "bash",
                "-x",
                "foo",
                "--setopt",
                "tsflags=justdb",
                "-qC"
            ]
        );
        // A value option before the command: its value is no command.
        let l = parse(&["-c", "/c.conf", "--repo", "local", "-xq", "up"]).unwrap();
        assert_eq!(l.config.as_deref(), Some(Path::new("/c.conf")));
        assert_eq!(l.command.as_deref(), Some("up"));
        assert!(!l.quiet, "`-xq`: q is -x's value");
        let l = parse(&["-yc/c.conf", "dg", "zlib"]).unwrap();
        assert_eq!(l.config.as_deref(), Some(Path::new("/c.conf")));
        assert_eq!(l.command.as_deref(), Some("dg"));
        assert!(l.installs());
        // After `--` nothing is an option or a command.
        let l = parse(&["--", "install"]).unwrap();
        assert_eq!(l.command, None);
    }

    #[test]
    fn dnf5s_tsflags_append_and_an_empty_one_clears() {
        let l = parse(&["--no-docs", "--setopt=tsflags=", "install", "a"]).unwrap();
        assert!(l.tsflags_given && !l.nodocs);
        let l = parse(&["--setopt=tsflags=", "--nodocs", "install", "a"]).unwrap();
        assert!(l.tsflags_given && l.nodocs);
        let l = parse(&["--setopt=tsflags=nodocs,justdb", "install", "a"]).unwrap();
        assert!(!l.tsflags_given && l.nodocs && l.justdb);
    }

    #[test]
    fn what_cowkit_cannot_honour_is_named_and_dnf5s_own_goes_to_dnf5() {
        let l = parse(&[
            "--installroot=/r",
            "--setopt",
            "tsflags=test",
            "--comment=x",
            "install",
            "a",
            "--setopt=destdir=/d",
        ])
        .unwrap();
        let named: Vec<_> = l.refused.iter().map(|r| r.option.as_str()).collect();
        assert_eq!(
            named,
            [
                "--setopt=tsflags=test",
                "--comment=x",
                "--setopt=destdir=/d"
            ]
        );
        for only in [
            &["install", "--downloadonly", "a"][..],
            &["--assumeno", "install", "a"],
            &["install", "--store", "/s", "a"],
            &["--version"],
            &["-h", "install"],
        ] {
            let l = parse(only).unwrap();
            assert!(l.dnf_only.is_some() && !l.installs(), "{only:?}");
            assert!(l.refused.is_empty(), "{only:?}");
        }
        // `--destdir` goes with `--downloadonly` (dnf5's upgrade).
        let l = parse(&["upgrade", "--destdir=/d", "--downloadonly"]).unwrap();
        assert!(l.refused.is_empty());
        let l = parse(&["upgrade", "--destdir", "/d"]).unwrap();
        assert_eq!(l.refused[0].option, "--destdir=/d");
        // dnf5 takes no prefix: `--installr` is not the root (dnf5 refuses
        // it), and a flag with a value is dnf5's error too.
        let l = parse(&["--installr=/r", "install", "a"]).unwrap();
        assert_eq!(l.root, None);
        assert!(matches!(
            parse(&["--nodocs=1", "install"]),
            Err(LineError::Unexpected(_))
        ));
        assert!(matches!(
            parse(&["--installroot=/r", "--installroot", "/s"]),
            Err(LineError::TwoRoots(..))
        ));
        assert!(matches!(
            parse(&["install", "--installroot"]),
            Err(LineError::NoValue(_))
        ));
        let l = parse(&["--setopt=keepcache=True", "install"]).unwrap();
        assert_eq!(l.keepcache, Some(true));
        // dnf 4's names dnf5 does not have are not dnf5's commands that
        // install.
        for c in ["localinstall", "upgrade-to", "swap", "remove"] {
            assert!(!parse(&[c, "a"]).unwrap().installs(), "{c}");
        }
    }
}
