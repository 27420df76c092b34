//! dnf5 resolves for cowkit through cowkit's libdnf5 plugin (its source is
//! `crates/cowkit-dnf/dnf5-plugin/`): after dnf5 resolves, the plugin
//! writes the order in which dnf5 adds the transaction's packages to rpm
//! (the file `COWKIT_DNF_ORDER` names, read by [`crate::order`]; lines
//! `i`, `u`, `r` as dnf 4's wrapper writes them, and `e` for the erasures
//! dnf5 adds, which those readers skip) and the
//! plan of the downloads (`COWKIT_DNF_PLAN`, read by [`crate::plan`]).
//! When cowkit can fetch every package as dnf5 would, the plugin stops
//! dnf5 before it downloads anything: dnf5 then exits with
//! [`STOP_STATUS`] and prints nothing. When it cannot (the plan's `why`),
//! dnf5 goes on as it was asked (`--downloadonly`, an option of dnf5's
//! install, upgrade, downgrade, reinstall and distro-sync commands: it
//! downloads); with `COWKIT_DNF_PLAN_STRICT` set, dnf5 fails instead. A
//! transaction dnf5 cannot resolve is left to dnf5 to report: no plan.
//!
//! dnf5 reads its plugins' configuration files from the host, whatever
//! `--installroot` and `--use-host-config` say (`/etc/dnf/libdnf5-plugins`
//! and `/usr/share/dnf5/libdnf.plugins.conf.d`) and their libraries from
//! one directory, its `pluginpath` (`LIBDIR/libdnf5/plugins`). cowkit
//! gives dnf5 a directory of each ([`PluginDirs`]): links to the plugins
//! dnf5 would load anyway, and cowkit's own, named by
//! `--setopt=pluginpath=` and `--setopt=pluginconfpath=`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use crate::conf::{Refusal, TSFLAGS};
use crate::error::RunError;
use crate::plan::Plan;
use crate::request::{Downloader, Request, TxFlags};
use crate::{Error, Result};

/// Why `--offline` is refused.
const OFFLINE: &str = "dnf5 stores an offline transaction for the next boot; cowkit installs now";
/// Why `--transient` is refused.
const TRANSIENT: &str = "cowkit writes the root itself, not a transient overlay";
/// Why `--downloader dnf` is refused with dnf5.
const DNF5_DOWNLOADS: &str =
    "with dnf5 cowkit fetches the packages itself, and dnf5 keeps no copy of them";

/// What cowkit cannot honour when dnf5 resolves for it, by name: the
/// options that choose dnf5's plugins (cowkit loads its own), dnf5's
/// `--offline` and `--transient`, and dnf5 downloading for cowkit
/// (`--downloader dnf`).
pub fn refusals(req: &Request) -> std::result::Result<(), RunError> {
    refuse_plugin_options(&req.line.rest)?;
    let mut refused: Vec<Refusal> = req
        .line
        .rest
        .iter()
        .filter_map(|a| a.to_str())
        .filter_map(|a| match a {
            "--offline" => Some((a, OFFLINE)),
            "--transient" => Some((a, TRANSIENT)),
            _ => None,
        })
        .map(|(option, why)| Refusal {
            option: option.to_string(),
            why,
        })
        .collect();
    if req.downloader == Downloader::Dnf {
        refused.push(Refusal {
            option: "--downloader dnf".into(),
            why: DNF5_DOWNLOADS,
        });
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(RunError::Unhonoured { refused })
    }
}

/// Why a flag dnf5 does not know is refused.
const UNKNOWN_TSFLAG: &str =
    "not a transaction flag dnf5 knows (dnf5 fails on it: \"Invalid tsflag\")";

/// dnf5's transaction flags dnf5 5.4 knows (libdnf5's
/// `base/transaction.cpp`, exact names).
const DNF5_TSFLAGS: [&str; 10] = [
    "test",
    "nodocs",
    "noscripts",
    "notriggers",
    "justdb",
    "nocontexts",
    "nocaps",
    "nocrypto",
    "deploops",
    "noplugins",
];

/// The transaction flags dnf5 holds, as its plugin wrote them in `plan`
/// (dnf5's configuration files, drop-ins and command line together):
/// `nodocs` and `justdb` carried out, every other flag refused by name.
/// `None`: the plan does not say (dnf 4's).
pub fn flags(plan: &Plan) -> std::result::Result<Option<TxFlags>, RunError> {
    let mut refused = Vec::new();
    let mut t = TxFlags::default();
    for f in plan.tsflags.iter().flatten() {
        match f.as_str() {
            "nodocs" => t.nodocs = true,
            "justdb" => t.justdb = true,
            _ => refused.push(Refusal {
                option: format!("tsflags={f}"),
                why: if DNF5_TSFLAGS.contains(&f.as_str()) {
                    TSFLAGS
                } else {
                    UNKNOWN_TSFLAG
                },
            }),
        }
    }
    if !refused.is_empty() {
        return Err(RunError::Unhonoured { refused });
    }
    Ok(plan.tsflags.as_ref().map(|_| t))
}

/// dnf5 on `req`'s root with `req`'s command line, `HOME` `home` (whose
/// `.rpmmacros` names the database), without cowkit's plugin.
fn without_plugin(req: &Request, dnf5: &Path, home: &Path) -> Command {
    let mut installroot = OsString::from("--installroot=");
    installroot.push(&req.root);
    let mut c = Command::new(dnf5);
    c.env("HOME", home)
        .env(crate::shim::ENV_INSIDE, dnf5)
        .arg(installroot)
        .args(&req.line.rest);
    c
}

/// dnf5 keeps its own copies of the packages (`keepcache`, as dnf5 holds
/// it): it runs once more, without cowkit's plugin, with `--downloadonly`
/// and no `destdir`, against the database `home` names, so that its cache
/// keeps the packages as a plain `dnf5 install` leaves them (remote
/// repositories' packages are then fetched twice: by dnf5 and by cowkit).
pub fn keep_copies(req: &Request, dnf5: &Path, home: &Path) -> std::result::Result<(), RunError> {
    let mut c = without_plugin(req, dnf5, home);
    c.args(["-y", "--downloadonly", "--setopt=installonly_limit=0"]);
    req.dnf_stdout(&mut c)?;
    let status = c.status().map_err(|source| RunError::RunDnf {
        dnf: dnf5.to_path_buf(),
        source,
    })?;
    if status.success() {
        Ok(())
    } else {
        Err(RunError::DnfFailed { status })
    }
}

/// dnf5 runs the command itself (one that installs nothing, or only
/// shows or downloads) on `req`'s root, with `HOME` `home` (whose
/// `.rpmmacros` names the database): its exit code. Without cowkit's
/// plugin.
pub fn run_itself(req: &Request, dnf5: &Path, home: &Path) -> std::result::Result<i32, RunError> {
    let mut c = without_plugin(req, dnf5, home);
    let status = c.status().map_err(|source| RunError::RunDnf {
        dnf: dnf5.to_path_buf(),
        source,
    })?;
    Ok(status.code().unwrap_or(1).clamp(0, 255))
}

/// dnf5 resolves `req` through cowkit's plugin with `HOME` `home` (whose
/// `.rpmmacros` names the database dnf5 resolves against; the plugin's
/// directories are made there), writing the order to `order` and the
/// plan to `plan`. It stops before downloading when cowkit can fetch the
/// plan; else, as `--downloadonly`, it downloads into `dir` (with
/// `--downloader cowkit`, it fails instead). Its install-only packages
/// are never erased (`installonly_limit=0`: cowkit erases none either).
pub fn resolve(
    req: &Request,
    dnf5: &Path,
    home: &Path,
    dir: &Path,
    order: &Path,
    plan: &Path,
) -> std::result::Result<Outcome, RunError> {
    let so = find_plugin(dnf5)?;
    let dirs = PluginDirs::make(
        home,
        &so,
        &default_plugin_libs(dnf5),
        &CONF_DIRS.map(Path::new),
    )?;
    let mut args = req.line.rest.clone();
    // After the user's arguments, so that they win (cowkit's plugin
    // enabled whatever `--disable-plugin` globs said before).
    args.extend(
        [
            "-y",
            "--downloadonly",
            "--setopt=installonly_limit=0",
            "--enable-plugin=cowkit",
        ]
        .iter()
        .map(OsString::from),
    );
    let mut destdir = OsString::from("--setopt=destdir=");
    destdir.push(dir);
    args.push(destdir);
    let mut c = command(dnf5, &req.root, &dirs, order, plan, &args);
    c.env("HOME", home).env(crate::shim::ENV_INSIDE, dnf5);
    if req.downloader == Downloader::Cowkit {
        c.env("COWKIT_DNF_PLAN_STRICT", "1");
    }
    req.dnf_stdout(&mut c)?;
    let status = c.status().map_err(|source| RunError::RunDnf {
        dnf: dnf5.to_path_buf(),
        source,
    })?;
    Ok(outcome(status, plan)?)
}

/// dnf5's exit status when cowkit's plugin stopped it after resolving.
pub const STOP_STATUS: i32 = 79;

/// The plugin's name (`[main] name` of its configuration file, and its
/// library `cowkit.so`).
pub const PLUGIN_NAME: &str = "cowkit";

/// Where dnf5 reads its plugins' configuration files (libdnf5's
/// `PLUGINS_CONF_DIRS`, not below the installroot).
pub const CONF_DIRS: [&str; 2] = [
    "/etc/dnf/libdnf5-plugins",
    "/usr/share/dnf5/libdnf.plugins.conf.d",
];

/// dnf5's options that choose its plugins, which cowkit sets itself.
const PLUGIN_OPTIONS: [&str; 3] = ["pluginpath", "pluginconfpath", "plugin_conf_dir"];

/// The plugin library: `COWKIT_DNF5_PLUGIN` if set, else `cowkit.so` in
/// `lib/cowkit/dnf5-plugin/` beside dnf5's `bin/`.
pub fn find_plugin(dnf5: &Path) -> Result<PathBuf> {
    plugin_at(std::env::var_os("COWKIT_DNF5_PLUGIN"), dnf5)
}

/// [`find_plugin`] with `COWKIT_DNF5_PLUGIN`'s value `named`.
fn plugin_at(named: Option<OsString>, dnf5: &Path) -> Result<PathBuf> {
    let candidate = match named {
        Some(p) => PathBuf::from(p),
        None => dnf5
            .parent()
            .and_then(Path::parent)
            .map(|p| p.join("lib/cowkit/dnf5-plugin/cowkit.so"))
            .unwrap_or_default(),
    };
    if candidate.is_absolute() && candidate.is_file() {
        Ok(candidate)
    } else {
        Err(Error::NoDnf5Plugin { path: candidate })
    }
}

/// The directories cowkit gives dnf5: `lib` (its `pluginpath`) and
/// `conf` (its `pluginconfpath`).
#[derive(Debug)]
pub struct PluginDirs {
    /// Links to the plugin libraries, cowkit's among them.
    pub lib: PathBuf,
    /// Links to the plugins' configuration files, cowkit's among them.
    pub conf: PathBuf,
}

impl PluginDirs {
    /// Made under `home` (a directory of cowkit's own, new): links to the
    /// libraries in `plugin_libs` (dnf5's `pluginpath`) and the `.conf`
    /// files in `conf_dirs` (dnf5's plugin configuration directories),
    /// then cowkit's plugin `so` and its configuration file.
    pub fn make(
        home: &Path,
        so: &Path,
        plugin_libs: &Path,
        conf_dirs: &[&Path],
    ) -> Result<PluginDirs> {
        let dirs = PluginDirs {
            lib: home.join("dnf5-plugins"),
            conf: home.join("dnf5-plugins.conf.d"),
        };
        for d in [&dirs.lib, &dirs.conf] {
            std::fs::create_dir(d).map_err(|source| Error::Io {
                what: "create",
                path: d.clone(),
                source,
            })?;
        }
        let own_so = OsString::from(format!("{PLUGIN_NAME}.so"));
        let own_conf = OsString::from(format!("{PLUGIN_NAME}.conf"));
        link_all(plugin_libs, ".so", &own_so, &dirs.lib)?;
        for d in conf_dirs {
            link_all(d, ".conf", &own_conf, &dirs.conf)?;
        }
        symlink(so, &dirs.lib.join(&own_so))?;
        let conf = dirs.conf.join(&own_conf);
        std::fs::write(
            &conf,
            format!("[main]\nname = {PLUGIN_NAME}\nenabled = 1\n"),
        )
        .map_err(|source| Error::Io {
            what: "write",
            path: conf.clone(),
            source,
        })?;
        Ok(dirs)
    }

    /// dnf5's options naming these directories.
    pub fn args(&self) -> [OsString; 2] {
        let mut lib = OsString::from("--setopt=pluginpath=");
        lib.push(&self.lib);
        let mut conf = OsString::from("--setopt=pluginconfpath=");
        conf.push(&self.conf);
        [lib, conf]
    }
}

/// dnf5's default `pluginpath` for the dnf5 at `dnf5`
/// (`PREFIX/bin/dnf5`: the first of `PREFIX/lib64/libdnf5/plugins` and
/// `PREFIX/lib/libdnf5/plugins` that exists; the first when neither).
pub fn default_plugin_libs(dnf5: &Path) -> PathBuf {
    let prefix = dnf5
        .parent()
        .and_then(Path::parent)
        .unwrap_or(Path::new("/usr"));
    let lib64 = prefix.join("lib64/libdnf5/plugins");
    if lib64.is_dir() {
        lib64
    } else {
        prefix.join("lib/libdnf5/plugins")
    }
}

/// The options among `args` that choose dnf5's plugins, which cowkit
/// cannot pass on with its own plugin loaded: the error names them
/// (`--no-plugins` and its alias `--noplugins`, which disable every
/// plugin, and the `--setopt`s of `plugins` and of the plugin
/// directories). `--disable-plugin` may name any plugin, by globs too:
/// cowkit enables its own after the caller's options (dnf5's last
/// pattern that matches a plugin decides).
pub fn refuse_plugin_options(args: &[OsString]) -> Result<()> {
    let mut named = Vec::new();
    let mut words = args.iter().filter_map(|a| a.to_str()).peekable();
    while let Some(a) = words.next() {
        if a == "--" {
            break;
        }
        if a == "--no-plugins" || a == "--noplugins" {
            named.push(a.to_string());
            continue;
        }
        let (shown, setting) = match a.strip_prefix("--setopt=") {
            Some(v) => (a.to_string(), v),
            None if a == "--setopt" => match words.next() {
                Some(v) => (format!("--setopt {v}"), v),
                None => break,
            },
            None => continue,
        };
        let key = setting.split_once('=').map_or(setting, |(k, _)| k);
        if PLUGIN_OPTIONS.contains(&key) || key == "plugins" {
            named.push(shown);
        }
    }
    if named.is_empty() {
        Ok(())
    } else {
        Err(Error::Dnf5PluginOptions { options: named })
    }
}

/// How dnf5's run ended.
#[derive(Debug)]
pub enum Outcome {
    /// The plugin stopped dnf5 after it resolved: cowkit fetches what the
    /// plan names (no package was downloaded).
    Stopped(Plan),
    /// dnf5 finished (status 0): it downloaded (the plan, if one was
    /// written, says why cowkit could not), or there was nothing to
    /// resolve.
    Finished(Option<Plan>),
}

/// What dnf5's exit `status` means, with the plan at `plan`: the stop
/// only with the status the plugin asks for and the plan it wrote, a plan
/// that cowkit can fetch by; any other failure is dnf5's own.
pub fn outcome(status: ExitStatus, plan: &Path) -> Result<Outcome> {
    match status.code() {
        Some(0) => Ok(Outcome::Finished(Plan::read(plan)?)),
        Some(STOP_STATUS) => match Plan::read(plan)? {
            Some(p) if p.why.is_empty() => Ok(Outcome::Stopped(p)),
            _ => Err(Error::Dnf5Failed { status }),
        },
        _ => Err(Error::Dnf5Failed { status }),
    }
}

/// The command that runs dnf5 with cowkit's plugin: `dnf5 --installroot
/// ROOT PLUGIN-OPTIONS ARGS`, with the order written to `order` and the
/// plan to `plan`.
pub fn command(
    dnf5: &Path,
    root: &Path,
    dirs: &PluginDirs,
    order: &Path,
    plan: &Path,
    args: &[OsString],
) -> Command {
    let mut c = Command::new(dnf5);
    let mut installroot = OsString::from("--installroot=");
    installroot.push(root);
    c.arg(installroot)
        .args(dirs.args())
        .args(args)
        .env("COWKIT_DNF_ORDER", order)
        .env("COWKIT_DNF_PLAN", plan);
    c
}

/// The transaction as dnf5 hands it to rpm (`Transaction::fill` in
/// libdnf5's `rpm/transaction.cpp`), from its order file at `order`: an
/// install as an install element (`i`), an upgrade or downgrade as an
/// upgrade element (`u`), a reinstall as a reinstall element (`r`), and
/// each package it removes or replaces as an erasure of its own (`e`,
/// `rpmtsAddEraseElement`), in dnf5's order. No order file: nothing.
pub fn handed(order: &Path) -> Result<Vec<cowkit_install::Handed>> {
    let text = match std::fs::read_to_string(order) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Io {
                what: "read",
                path: order.to_path_buf(),
                source,
            })
        }
    };
    Ok(handed_in(&text))
}

/// [`handed`] of the order's text.
fn handed_in(text: &str) -> Vec<cowkit_install::Handed> {
    use cowkit_install::Handed;
    text.lines()
        .filter_map(|l| l.split_once('\t'))
        .filter_map(|(how, n)| {
            let n = n.to_string();
            Some(match how {
                "i" => Handed::Install(n),
                "u" => Handed::Upgrade(n),
                "r" => Handed::Reinstall(n),
                "e" => Handed::Erase(n),
                _ => return None,
            })
        })
        .collect()
}

/// Links in `to` to each regular file named `*SUFFIX` in `from` but
/// `own` (a missing `from` has none).
fn link_all(from: &Path, suffix: &str, own: &OsString, to: &Path) -> Result<()> {
    let entries = match std::fs::read_dir(from) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(Error::Io {
                what: "read",
                path: from.to_path_buf(),
                source,
            })
        }
    };
    for e in entries {
        let e = e.map_err(|source| Error::Io {
            what: "read",
            path: from.to_path_buf(),
            source,
        })?;
        let name = e.file_name();
        if name == *own || !name.to_string_lossy().ends_with(suffix) {
            continue;
        }
        symlink(&e.path(), &to.join(&name))?;
    }
    Ok(())
}

fn symlink(target: &Path, link: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, link).map_err(|source| Error::Io {
        what: "create",
        path: link.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn plugin_options_are_refused_by_name() {
        let args: Vec<OsString> = [
            "install",
            "--setopt=pluginpath=/x",
            "--setopt=tsflags=nodocs",
            "--no-plugins",
            "--noplugins",
            "--setopt",
            "plugins=0",
            "--disable-plugin=actions",
            "--disable-plugin=*",
            "--disable-plugin",
            "cowkit",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        let e = refuse_plugin_options(&args).unwrap_err();
        let Error::Dnf5PluginOptions { options } = &e else {
            panic!("{e}");
        };
        assert_eq!(
            options,
            &[
                "--setopt=pluginpath=/x",
                "--no-plugins",
                "--noplugins",
                "--setopt plugins=0"
            ]
        );
        // mkosi's: every plugin disabled, some enabled again; cowkit
        // enables its own after them.
        let mkosi: Vec<OsString> = [
            "--disable-plugin=*",
            "--enable-plugin",
            "builddep",
            "install",
            "a",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        assert!(refuse_plugin_options(&mkosi).is_ok());
        assert!(refuse_plugin_options(&args[..1]).is_ok());
    }

    #[test]
    fn the_plugin_is_named_or_beside_dnf5_and_must_be_a_file() {
        let d = tempfile::tempdir().unwrap();
        let dnf5 = d.path().join("bin/dnf5");
        let beside = d.path().join("lib/cowkit/dnf5-plugin/cowkit.so");
        let missing = plugin_at(None, &dnf5).unwrap_err();
        assert!(
            matches!(&missing, Error::NoDnf5Plugin { path } if *path == beside),
            "{missing}"
        );
        std::fs::create_dir_all(beside.parent().unwrap()).unwrap();
        std::fs::write(&beside, "").unwrap();
        assert_eq!(plugin_at(None, &dnf5).unwrap(), beside);
        let named = d.path().join("other.so");
        assert!(
            plugin_at(Some(named.clone().into()), &dnf5).is_err(),
            "named, but not there"
        );
        std::fs::write(&named, "").unwrap();
        assert_eq!(plugin_at(Some(named.clone().into()), &dnf5).unwrap(), named);
        assert!(
            plugin_at(Some("cowkit.so".into()), &dnf5).is_err(),
            "a relative name is not looked up"
        );
    }

    #[test]
    fn the_dirs_hold_dnf5s_plugins_and_cowkits() {
        let d = tempfile::tempdir().unwrap();
        let libs = d.path().join("libs");
        let confs = d.path().join("confs");
        std::fs::create_dir_all(&libs).unwrap();
        std::fs::create_dir_all(&confs).unwrap();
        std::fs::write(libs.join("actions.so"), "").unwrap();
        std::fs::write(libs.join("cowkit.so"), "an older one").unwrap();
        std::fs::write(
            confs.join("actions.conf"),
            "[main]\nname=actions\nenabled=1\n",
        )
        .unwrap();
        std::fs::write(confs.join("README"), "").unwrap();
        let so = d.path().join("built.so");
        std::fs::write(&so, "").unwrap();
        let home = d.path().join("home");
        std::fs::create_dir(&home).unwrap();
        let dirs =
            PluginDirs::make(&home, &so, &libs, &[&confs, &d.path().join("missing")]).unwrap();
        let names = |p: &Path| {
            let mut v: Vec<_> = std::fs::read_dir(p)
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&dirs.lib), ["actions.so", "cowkit.so"]);
        assert_eq!(std::fs::read_link(dirs.lib.join("cowkit.so")).unwrap(), so);
        assert_eq!(names(&dirs.conf), ["actions.conf", "cowkit.conf"]);
        let [a, b] = dirs.args();
        assert_eq!(
            a,
            OsString::from(format!("--setopt=pluginpath={}", dirs.lib.display()))
        );
        assert_eq!(
            b,
            OsString::from(format!("--setopt=pluginconfpath={}", dirs.conf.display()))
        );
    }

    fn request(rest: &[&str], downloader: Downloader) -> Request {
        let line = crate::line::Line {
            command: Some("install".into()),
            rest: rest.iter().map(OsString::from).collect(),
            ..crate::line::Line::default()
        };
        crate::request::for_tests(Path::new("/nonexistent/root"), line, downloader)
    }

    #[test]
    fn what_dnf5_would_do_otherwise_is_refused_by_name() {
        let ok = request(&["-y", "install", "bash"], Downloader::Auto);
        refusals(&ok).unwrap();
        let err = refusals(&request(
            &["install", "--offline", "--transient", "bash"],
            Downloader::Dnf,
        ))
        .unwrap_err();
        let RunError::Unhonoured { refused } = &err else {
            panic!("{err}");
        };
        let options: Vec<&str> = refused.iter().map(|r| r.option.as_str()).collect();
        assert_eq!(options, ["--offline", "--transient", "--downloader dnf"]);
        assert_eq!(refused[0].why, OFFLINE);
        // The plugin's options first, on their own.
        let err = refusals(&request(
            &["--no-plugins", "install", "--offline"],
            Downloader::Auto,
        ))
        .unwrap_err();
        assert!(
            matches!(&err, RunError::Pipeline(Error::Dnf5PluginOptions { options }) if options == &["--no-plugins"]),
            "{err}"
        );
    }

    #[test]
    fn the_order_is_read_as_dnf5_hands_it_to_rpm() {
        use cowkit_install::Handed;
        // dnf5's upgrade of the Fedora-shaped repository: procps-ng
        // obsoletes procps (an install, `i`), the others are upgrades; the
        // replaced packages come last.
        let upgrade = "i\tprocps-ng-4.0.4-1.fc40.noarch\n\
                       u\tzlib-1.3.1-1.fc40.noarch\n\
                       r\tbash-5.2.26-1.fc40.x86_64\n\
                       e\tprocps-3.2.8-1.fc40.noarch\n\
                       e\tcrypto-policies-1:20230301-1.fc40.noarch\n";
        assert_eq!(
            handed_in(upgrade),
            [
                Handed::Install("procps-ng-4.0.4-1.fc40.noarch".into()),
                Handed::Upgrade("zlib-1.3.1-1.fc40.noarch".into()),
                Handed::Reinstall("bash-5.2.26-1.fc40.x86_64".into()),
                Handed::Erase("procps-3.2.8-1.fc40.noarch".into()),
                Handed::Erase("crypto-policies-1:20230301-1.fc40.noarch".into()),
            ]
        );
        let d = tempfile::tempdir().unwrap();
        assert!(handed(&d.path().join("none")).unwrap().is_empty());
    }

    #[test]
    fn only_the_plugins_stop_with_a_plan_is_a_stop() {
        let d = tempfile::tempdir().unwrap();
        let plan = d.path().join("plan");
        let exit = |code: i32| ExitStatus::from_raw(code << 8);
        // The status alone (dnf5 failing with it, or no plan) is a failure.
        assert!(matches!(
            outcome(exit(STOP_STATUS), &plan),
            Err(Error::Dnf5Failed { .. })
        ));
        assert!(matches!(
            outcome(exit(1), &plan),
            Err(Error::Dnf5Failed { .. })
        ));
        assert!(matches!(
            outcome(exit(0), &plan),
            Ok(Outcome::Finished(None))
        ));
        std::fs::write(
            &plan,
            r#"{"why": [], "packages": [], "repos": {}, "max_parallel_downloads": 3, "retries": 1}"#,
        )
        .unwrap();
        assert!(matches!(
            outcome(exit(STOP_STATUS), &plan),
            Ok(Outcome::Stopped(_))
        ));
        assert!(matches!(
            outcome(exit(1), &plan),
            Err(Error::Dnf5Failed { .. })
        ));
        std::fs::write(
            &plan,
            r#"{"why": ["repository r: proxy is set"], "packages": [], "repos": {}, "max_parallel_downloads": 3, "retries": 1}"#,
        )
        .unwrap();
        assert!(matches!(
            outcome(exit(STOP_STATUS), &plan),
            Err(Error::Dnf5Failed { .. })
        ));
        assert!(
            matches!(outcome(exit(0), &plan), Ok(Outcome::Finished(Some(p))) if p.why.len() == 1)
        );
    }
}
