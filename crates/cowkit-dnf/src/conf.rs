//! dnf's configuration as dnf 4 reads it: its list and boolean values,
//! the `[main]` options of dnf's configuration file (`keepcache`,
//! `tsflags`), and the transaction flags cowkit carries out ([`Tsflags`]).

use std::path::Path;

/// A dnf list option's items (separated by commas or white space).
pub fn list(val: &str) -> Vec<&str> {
    val.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|x| !x.is_empty())
        .collect()
}

/// The `[main]` value of `key` in dnf's configuration file (`--config`'s,
/// else the root's `/etc/dnf/dnf.conf`, else the host's), if set.
pub fn main_option(config: Option<&Path>, root: &Path, key: &str) -> Option<String> {
    let text = match config {
        Some(c) => read_conf(c)?,
        None => read_conf(&root.join("etc/dnf/dnf.conf"))
            .or_else(|| read_conf(Path::new("/etc/dnf/dnf.conf")))?,
    };
    let mut main = false;
    let mut found = None;
    for l in text.lines() {
        let l = l.trim();
        if l.starts_with('[') {
            main = l == "[main]";
        } else if main {
            if let Some((k, v)) = l.split_once('=') {
                if k.trim() == key {
                    found = Some(v.trim().to_string());
                }
            }
        }
    }
    found
}

/// An option of dnf's that cowkit cannot honour exactly when it runs the
/// transaction: refused, never ignored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The option as given (`--comment=x`, `--setopt=tsflags=test`,
    /// `tsflags=test` in dnf's configuration file).
    pub option: String,
    /// Why cowkit cannot honour it.
    pub why: &'static str,
}

/// Why a transaction flag other than nodocs and justdb is refused.
pub const TSFLAGS: &str = "cowkit runs the transaction itself and implements only the transaction \
                           flags nodocs and justdb (not test, noscripts, notriggers, …)";

/// A `tsflags` value read: the flags cowkit carries out, and the first
/// one it does not.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Tsflags {
    /// `nodocs`: rpm's `--excludedocs`.
    pub nodocs: bool,
    /// `justdb`: rpm's `--justdb`.
    pub justdb: bool,
    /// The first flag cowkit does not carry out (`test`, `noscripts`, …).
    pub unknown: Option<String>,
}

impl Tsflags {
    /// Read `value` (`nodocs,justdb`, `nodocs noscripts`), as dnf reads a
    /// list; flag names in any case.
    pub fn read(value: &str) -> Tsflags {
        let mut t = Tsflags::default();
        for flag in list(value) {
            if flag.eq_ignore_ascii_case("nodocs") {
                t.nodocs = true;
            } else if flag.eq_ignore_ascii_case("justdb") {
                t.justdb = true;
            } else if t.unknown.is_none() {
                t.unknown = Some(flag.to_string());
            }
        }
        t
    }
}

/// The transaction flags of dnf's configuration file, as
/// [`main_option`] finds them (`tsflags` in `[main]`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ConfigTsflags {
    /// `nodocs`: rpm's `--excludedocs`.
    pub nodocs: bool,
    /// `justdb`: rpm's `--justdb`.
    pub justdb: bool,
    /// A flag cowkit does not carry out, as `tsflags=FLAG`.
    pub refused: Option<Refusal>,
}

/// The `tsflags` of dnf's configuration (see [`ConfigTsflags`]). dnf 4
/// has no `install_langs`: given, it warns and installs every language;
/// the languages come from rpm's own `%_install_langs`.
pub fn tsflags_in_config(config: Option<&Path>, root: &Path) -> ConfigTsflags {
    let t = Tsflags::read(
        main_option(config, root, "tsflags")
            .as_deref()
            .unwrap_or(""),
    );
    ConfigTsflags {
        nodocs: t.nodocs,
        justdb: t.justdb,
        refused: t.unknown.map(|flag| Refusal {
            option: format!("tsflags={flag}"),
            why: TSFLAGS,
        }),
    }
}

/// dnf's booleans: 1/yes/true/on and 0/no/false/off.
pub fn parse_bool(v: &str) -> Option<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "yes" | "true" | "on" => Some(true),
        "0" | "no" | "false" | "off" => Some(false),
        _ => None,
    }
}

/// The largest dnf configuration file read for `keepcache`.
pub const MAX_CONF: u64 = 1 << 20;

/// `keepcache` in the `[main]` section of dnf's configuration file for
/// `root`: `--config`'s file, else the root's `/etc/dnf/dnf.conf`, else
/// the host's (dnf looks in the installroot first, following links as it
/// does). `None` where no file says. The file is opened non-blocking
/// (a fifo cannot hold cowkit up), must be a regular file, and is read
/// within [`MAX_CONF`]; one that cannot be read says nothing (dnf itself
/// then fails on it).
pub fn keepcache_in_config(config: Option<&Path>, root: &Path) -> Option<bool> {
    main_option(config, root, "keepcache").and_then(|v| parse_bool(&v))
}

/// A regular file's first [`MAX_CONF`] bytes, as text.
fn read_conf(path: &Path) -> Option<String> {
    use rustix::fs::{Mode, OFlags};
    use std::io::Read;
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    )
    .ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return None;
    }
    let mut text = String::new();
    std::fs::File::from(fd)
        .take(MAX_CONF)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keepcache_is_read_from_main_and_a_fifo_holds_nothing_up() {
        let d = tempfile::tempdir().unwrap();
        let conf = d.path().join("dnf.conf");
        std::fs::write(&conf, "[main]\nkeepcache = True\n[x]\nkeepcache=0\n").unwrap();
        assert_eq!(keepcache_in_config(Some(&conf), d.path()), Some(true));
        std::fs::write(&conf, "[other]\nkeepcache=1\n").unwrap();
        assert_eq!(keepcache_in_config(Some(&conf), d.path()), None);
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(keepcache_in_config(Some(&fifo), d.path()), None);
    }

    #[test]
    fn the_configuration_files_tsflags_are_read_and_unknown_ones_refused() {
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("dnf.conf");
        let flags = |text: &str| {
            std::fs::write(&conf, text).unwrap();
            tsflags_in_config(Some(&conf), dir.path())
        };
        let t = flags("[main]\ngpgcheck=1\ntsflags=nodocs\n[other]\ntsflags=test\n");
        assert!(t.nodocs && !t.justdb && t.refused.is_none(), "{t:?}");
        let t = flags("[main]\ntsflags=justdb, nodocs\n");
        assert!(t.nodocs && t.justdb && t.refused.is_none(), "{t:?}");
        let t = flags("[main]\ntsflags=nodocs noscripts\n");
        assert_eq!(
            t.refused.map(|r| r.option).as_deref(),
            Some("tsflags=noscripts")
        );
        assert_eq!(flags("[main]\n"), ConfigTsflags::default());
    }

    #[test]
    fn tsflags_as_dnf_takes_them() {
        // `--setopt=tsflags=…` values and dnf.conf's `tsflags=` lines.
        let t = Tsflags::read("nodocs");
        assert!(t.nodocs && !t.justdb && t.unknown.is_none(), "{t:?}");
        let t = Tsflags::read("justdb,nodocs");
        assert!(t.nodocs && t.justdb && t.unknown.is_none(), "{t:?}");
        let t = Tsflags::read("NoDocs");
        assert!(t.nodocs, "{t:?}");
        // rpm's other flags dnf passes on: the first one is named.
        assert_eq!(Tsflags::read("test").unknown.as_deref(), Some("test"));
        let t = Tsflags::read("nodocs noscripts notriggers");
        assert!(t.nodocs, "{t:?}");
        assert_eq!(t.unknown.as_deref(), Some("noscripts"));
        assert_eq!(Tsflags::read(""), Tsflags::default());
    }

    #[test]
    fn a_dnf_conf_with_spaces_and_comments_is_read_as_dnf_reads_it() {
        let d = tempfile::tempdir().unwrap();
        // The root's /etc/dnf/dnf.conf, as Fedora ships it, with the
        // options image builders add (spaces around `=`).
        let etc = d.path().join("etc/dnf");
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(
            etc.join("dnf.conf"),
            "# see `man dnf.conf` for defaults and possible options\n\n[main]\ngpgcheck=True\ninstallonly_limit=3\nclean_requirements_on_remove=True\nbest=False\nskip_if_unavailable=True\nkeepcache = 1\ntsflags = nodocs\n",
        )
        .unwrap();
        assert_eq!(keepcache_in_config(None, d.path()), Some(true));
        let t = tsflags_in_config(None, d.path());
        assert!(t.nodocs && !t.justdb && t.refused.is_none(), "{t:?}");
        assert_eq!(
            main_option(None, d.path(), "installonly_limit").as_deref(),
            Some("3")
        );
        assert_eq!(main_option(None, d.path(), "exclude"), None);
    }

    #[test]
    fn lists_and_booleans_as_dnf_reads_them() {
        assert_eq!(list("a, b\tc,,d"), ["a", "b", "c", "d"]);
        for (v, b) in [
            ("1", true),
            ("Yes", true),
            (" on ", true),
            ("False", false),
            ("0", false),
        ] {
            assert_eq!(parse_bool(v), Some(b), "{v}");
        }
        assert_eq!(parse_bool("maybe"), None);
    }
}
