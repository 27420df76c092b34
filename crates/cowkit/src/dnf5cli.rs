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

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

pub use cowkit_dnf::line::Line;
pub use cowkit_dnf::line::LineError;
use cowkit_dnf::line::{Word, Words};

/// One of dnf5's options: long names, short letter, whether a value
/// follows.
type Opt = (&'static [&'static str], Option<char>, bool);

/// dnf5's global options (dnf5 5.4.4 `dnf5/main.cpp`, and the aliases of
/// its `aliases.d/compatibility.conf`), and the options of the commands
/// that install (`dnf5/shared_options.cpp`, `commands/*/`) cowkit reads.
const OPTIONS: &[Opt] = &[
    (&["--help"], Some('h'), false),
    (&["--config"], Some('c'), true),
    (&["--quiet"], Some('q'), false),
    (&["--cacheonly"], Some('C'), false),
    (&["--color"], None, true),
    (&["--refresh"], None, false),
    (&["--repofrompath"], None, true),
    (&["--setopt"], None, true),
    (&["--setvar"], None, true),
    (&["--assumeyes"], Some('y'), false),
    (&["--assumeno"], None, false),
    (&["--best"], None, false),
    (&["--no-best", "--nobest"], None, false),
    (&["--allow-vendor-change"], None, false),
    (&["--no-allow-vendor-change"], None, false),
    (&["--no-docs", "--nodocs"], None, false),
    (&["--exclude"], Some('x'), true),
    (&["--enable-repo", "--enablerepo"], None, true),
    (&["--disable-repo", "--disablerepo"], None, true),
    (&["--repo", "--repoid"], None, true),
    (&["--no-gpgchecks", "--nogpgcheck"], None, false),
    (&["--no-plugins", "--noplugins"], None, false),
    (&["--enable-plugin", "--enableplugin"], None, true),
    (&["--disable-plugin", "--disableplugin"], None, true),
    (&["--comment"], None, true),
    (&["--installroot"], None, true),
    (&["--use-host-config"], None, false),
    (&["--releasever"], None, true),
    (&["--releasever-major"], None, true),
    (&["--releasever-minor"], None, true),
    (&["--show-new-leaves"], None, false),
    (&["--debugsolver"], None, false),
    (&["--dump-main-config"], None, false),
    (&["--dump-repo-config"], None, true),
    (&["--dump-variables"], None, false),
    (&["--version"], None, false),
    (&["--forcearch"], None, true),
    (&["--skip-file-locks"], None, false),
    // The installing commands' own (after the command word).
    (&["--downloadonly"], None, false),
    (&["--destdir"], None, true),
    (&["--store"], None, true),
    (&["--from-repo"], None, true),
    (&["--from-vendor"], None, true),
    (&["--installed-from-repo"], None, true),
    (&["--advisories", "--advisory"], None, true),
    (&["--advisory-severities"], None, true),
    (&["--bzs", "--bz"], None, true),
    (&["--cves", "--cve"], None, true),
];

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
    let mut destdir = None;
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
                shorts(&mut line, &letters, &mut words, &mut destdir)?;
                continue;
            }
        };
        let Some(spec) = OPTIONS.iter().find(|o| o.0.contains(&name.as_str())) else {
            // Another command's option, or one dnf5 does not know: dnf5
            // says which.
            line.rest.push(arg.clone());
            continue;
        };
        if !spec.2 && inline.is_some() {
            return Err(LineError::Unexpected(arg.to_string_lossy().into_owned()));
        }
        let mut tokens = vec![arg.clone()];
        let value = words.value(&name, spec.2, inline, &mut tokens)?;
        let first = spec.0[0];
        if first == "--installroot" {
            line.set_root(PathBuf::from(value.expect("takes a value")))?;
            continue;
        }
        line.rest.extend(tokens);
        option(&mut line, first, &name, value.as_deref(), &mut destdir);
    }
    line.refuse_destdir(destdir, DESTDIR);
    Ok(line)
}

/// Short options `letters` (the word after its dash, already in
/// `line.rest`): flags in a cluster; a value option takes the rest of the
/// word or the next word.
fn shorts(
    line: &mut Line,
    letters: &str,
    words: &mut Words<'_>,
    destdir: &mut Option<String>,
) -> Result<(), LineError> {
    let letters: Vec<char> = letters.chars().collect();
    for (k, c) in letters.iter().enumerate() {
        let Some(spec) = OPTIONS.iter().find(|o| o.1 == Some(*c)) else {
            // dnf5 refuses it: it says which.
            break;
        };
        let first = spec.0[0];
        let name = format!("-{c}");
        if spec.2 {
            let rest: String = letters[k + 1..].iter().collect();
            let value = if rest.is_empty() {
                let v = words.value_of(&name)?;
                line.rest.push(v.clone());
                v.clone()
            } else {
                OsString::from(rest)
            };
            option(line, first, &name, Some(&value), destdir);
            break;
        }
        option(line, first, &name, None, destdir);
    }
    Ok(())
}

/// One of dnf5's options, `name` (standing for `first`), with its value,
/// read into `line`.
fn option(
    line: &mut Line,
    first: &str,
    name: &str,
    value: Option<&OsStr>,
    destdir: &mut Option<String>,
) {
    let shown = || match value {
        Some(v) => format!("{name}={}", v.to_string_lossy()),
        None => name.to_string(),
    };
    match first {
        "--quiet" => line.quiet = true,
        // dnf5 only shows, stores or downloads: it runs such a line itself.
        "--help" | "--version" | "--downloadonly" | "--assumeno" | "--store" => {
            line.dnf_only = Some(name.to_string())
        }
        // dnf5 appends `nodocs` to its tsflags.
        "--no-docs" => line.nodocs = true,
        "--destdir" => *destdir = Some(shown()),
        "--comment" => line.refuse(shown(), COMMENT),
        "--config" => line.config = value.map(PathBuf::from),
        "--setopt" => {
            let v = value.expect("takes a value").to_string_lossy();
            let (key, val) = v.split_once('=').unwrap_or((&v, ""));
            match key {
                // dnf5 appends the command line's tsflags to its
                // configuration's; an empty value clears them all.
                "tsflags" if val.is_empty() => {
                    line.tsflags_given = true;
                    line.nodocs = false;
                    line.justdb = false;
                }
                "tsflags" => line.add_tsflags(val, shown()),
                "keepcache" => line.set_keepcache(val, shown(), "not a boolean dnf5 knows"),
                "destdir" => *destdir = Some(shown()),
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
