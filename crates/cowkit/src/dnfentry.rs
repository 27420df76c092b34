//! `cowkit` as `dnf` (and `dnf5`): the entry point image builders find on
//! `PATH`.
//!
//! - Invoked as `dnf` (a symlink named `dnf` to the cowkit binary, e.g.
//!   the one `cowkit dnf --shim-dir DIR` makes), or as `cowkit dnf` with
//!   dnf's own command line (`--installroot R`, no `--root`), cowkit reads
//!   the command line as dnf does ([`crate::dnfcli`]); as dnf5 does
//!   ([`crate::dnf5cli`]) where the real dnf is dnf5.
//! - Invoked as `dnf5` (the link `--shim-dir` makes where there is a real
//!   dnf5), cowkit stands in for dnf5: the real dnf is the first `dnf5`
//!   on `PATH` that is not cowkit (or `COWKIT_DNF`, which must be dnf5),
//!   and the command line is dnf5's.
//! - With `--installroot R`, `cowkit dnf` builds R: it installs the
//!   packages of `install`, `upgrade`, ... itself, and runs the real dnf
//!   on R's database for every other command.
//! - Without `--installroot` (the host's own dnf use), the real dnf is
//!   executed with the arguments unchanged.
//!
//! cowkit's own options cannot be dnf options: in this form they come from
//! the environment ([`ENV_CACHE`], [`ENV_JOBS`], [`ENV_JSON`],
//! [`ENV_NOSCRIPTS`], [`ENV_DBPATH`]). The real dnf is `COWKIT_DNF`, or
//! the first `dnf` on `PATH` that is not this binary.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use crate::dnf::DEFAULT_CACHE;
use cowkit_dnf::shim::{Resolver, ENV_DNF, ENV_INSIDE};

use crate::dnf::dnf_error;
use crate::output::CliError;
use cowkit_dnf::line::Line;

/// The cache of transcoded packages (`--cache`).
pub const ENV_CACHE: &str = "COWKIT_CACHE";
/// Parallel jobs (`--jobs`).
pub const ENV_JOBS: &str = "COWKIT_JOBS";
/// `1`: a JSON summary on stdout (`--json`).
pub const ENV_JSON: &str = "COWKIT_JSON";
/// `1`: run no scriptlets (`--noscripts`).
pub const ENV_NOSCRIPTS: &str = "COWKIT_NOSCRIPTS";
/// `--keep-syncs` in dnf's form (`1`).
pub const ENV_KEEP_SYNCS: &str = "COWKIT_KEEP_SYNCS";
/// Who downloads the packages (`--downloader`: `auto`, `cowkit`, `dnf`).
pub const ENV_DOWNLOADER: &str = "COWKIT_DOWNLOADER";
/// The rpm database inside the root (`--dbpath`).
pub const ENV_DBPATH: &str = "COWKIT_DBPATH";

/// How cowkit was reached: through a link named `dnf`, or `dnf5`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Invoked {
    /// `dnf` (or `cowkit dnf` with dnf's command line).
    Dnf,
    /// `dnf5`: cowkit stands in for dnf5.
    Dnf5,
}

/// Whether `argv[0]` names `dnf` or `dnf5` (the cowkit binary reached
/// through a link of that name).
pub fn invoked_as_dnf(argv: &[OsString]) -> Option<Invoked> {
    let name = argv.first().and_then(|a| Path::new(a).file_name())?;
    if name == "dnf" {
        Some(Invoked::Dnf)
    } else if name == "dnf5" {
        Some(Invoked::Dnf5)
    } else {
        None
    }
}

/// `cowkit [-q|-v…] dnf ARGS` where ARGS is dnf's own command line (no
/// `--root`, `--shim-dir` or `--help` of cowkit's before a `--`): whether
/// `-q` was given, and ARGS. `None` for any other command line (clap reads
/// it).
pub fn dnf_form(argv: &[OsString]) -> Option<(bool, Vec<OsString>)> {
    let mut quiet = false;
    let mut i = 1;
    loop {
        let a = argv.get(i)?.to_str()?;
        match a {
            "-q" | "--quiet" => quiet = true,
            "dnf" => break,
            _ if a.starts_with("--verbose") || (a.starts_with("-v") && !a.starts_with("--")) => {}
            _ => return None,
        }
        i += 1;
    }
    let rest = &argv[i + 1..];
    let cowkits = rest
        .iter()
        .take_while(|a| *a != "--")
        .filter_map(|a| a.to_str())
        .any(|a| {
            a == "--root"
                || a.starts_with("--root=")
                || a == "--shim-dir"
                || a.starts_with("--shim-dir=")
        });
    let help = matches!(
        rest.first().and_then(|a| a.to_str()),
        None | Some("-h" | "--help")
    );
    (!cowkits && !help).then(|| (quiet, rest.to_vec()))
}

/// Run dnf's command line `args` as cowkit's `dnf` (or `dnf5`).
pub fn main(args: Vec<OsString>, quiet: bool, invoked: Invoked) -> ExitCode {
    match run(args, quiet, invoked) {
        Ok(code) => code,
        Err(e) => {
            crate::output::report_error(&e);
            ExitCode::FAILURE
        }
    }
}

fn run(args: Vec<OsString>, quiet: bool, invoked: Invoked) -> Result<ExitCode, CliError> {
    if let Some(by) = std::env::var_os(ENV_INSIDE) {
        return Err(CliError::msg(format!(
            "cowkit's `dnf` was started by the dnf it runs (`{}`): that would never end",
            Path::new(&by).display()
        ))
        .hint(format!("set {ENV_DNF} to the real dnf")));
    }
    // The real dnf, and so how its command line is read: as dnf5 reads
    // it where cowkit stands in for dnf5 (run as `dnf5`, or as `dnf` where
    // the real dnf is dnf5).
    let named_dnf5 = invoked == Invoked::Dnf5;
    let dnf = cowkit_dnf::shim::real_dnf_named(if named_dnf5 { "dnf5" } else { "dnf" })
        .map_err(dnf_error)?;
    let dnf5 = named_dnf5 || Resolver::of(&dnf) == Resolver::Dnf5;
    // dnf 4: `--ins…`, `--installroot` or a prefix of it (the only dnf
    // option that begins so); dnf5 reads full names only. Without one,
    // dnf's command line is not read at all.
    let rooted = args.iter().take_while(|a| *a != "--").any(|a| {
        let a = a.to_string_lossy();
        if dnf5 {
            a == "--installroot" || a.starts_with("--installroot=")
        } else {
            a.starts_with("--ins")
        }
    });
    let line = if rooted {
        own_options(&args)?;
        crate::dnf::read_line(&args, dnf5, named_dnf5)?
    } else {
        Line::default()
    };
    let Some(root) = line.root.clone() else {
        // The host's own dnf: unchanged.
        let err = Command::new(&dnf).args(&args).env(ENV_INSIDE, &dnf).exec();
        return Err(CliError::new(
            format!("cannot run `{}`", dnf.display()),
            err,
        ));
    };
    let cache = std::env::var_os(ENV_CACHE)
        .filter(|c| !c.is_empty())
        .map_or_else(|| PathBuf::from(DEFAULT_CACHE), PathBuf::from);
    let dbpath = env_text(ENV_DBPATH)?;
    let jobs = env_text(ENV_JOBS)?
        .map(|j| {
            j.parse::<usize>()
                .map_err(|e| CliError::new(format!("{ENV_JOBS}=`{j}` is not a number of jobs"), e))
        })
        .transpose()?;
    let noscripts = env_flag(ENV_NOSCRIPTS)?;
    let keep_syncs = env_flag(ENV_KEEP_SYNCS)?;
    let downloader = match env_text(ENV_DOWNLOADER)? {
        None => crate::dnf::Downloader::Auto,
        Some(d) => <crate::dnf::Downloader as clap::ValueEnum>::from_str(&d, false)
            .map_err(|e| CliError::msg(format!("{ENV_DOWNLOADER}=`{d}`: {e}")))?,
    };
    // In the order of the options in `cowkit dnf --help`.
    let shown = crate::dnf::Shown {
        json: env_flag(ENV_JSON)?,
        quiet: quiet || line.quiet,
    };
    let request = cowkit_dnf::request::Request {
        dbpath,
        jobs: crate::output::jobs(jobs),
        noscripts,
        keep_syncs,
        downloader: downloader.into(),
        ..crate::dnf::request(root, cache, line, &shown)
    };
    crate::dnf::run_request(request, &shown)
}

/// cowkit's own options are not dnf's: in dnf's command line they are
/// refused, saying where they go.
fn own_options(args: &[OsString]) -> Result<(), CliError> {
    let own = [
        ("--cache", ENV_CACHE),
        ("--dbpath", ENV_DBPATH),
        ("--jobs", ENV_JOBS),
        ("-j", ENV_JOBS),
        ("--json", ENV_JSON),
        ("--noscripts", ENV_NOSCRIPTS),
        ("--keep-syncs", ENV_KEEP_SYNCS),
        ("--downloader", ENV_DOWNLOADER),
    ];
    for a in args.iter().take_while(|a| *a != "--") {
        let a = a.to_string_lossy();
        let name = a.split_once('=').map_or(&*a, |(n, _)| n);
        if let Some((opt, var)) = own.iter().find(|(o, _)| *o == name) {
            return Err(CliError::msg(format!(
                "`{opt}` is cowkit's option, not dnf's: with dnf's command line cowkit reads it from {var}"
            ))
            .hint(format!(
                "set {var}, or use `cowkit dnf --root R {opt} ... -- DNF-ARGS`"
            )));
        }
    }
    Ok(())
}

/// A variable's value, `None` when unset or empty.
fn env_text(name: &str) -> Result<Option<String>, CliError> {
    match std::env::var_os(name) {
        None => Ok(None),
        Some(v) if v.is_empty() => Ok(None),
        Some(v) => v
            .into_string()
            .map(Some)
            .map_err(|v| CliError::msg(format!("{name}=`{}` is not UTF-8", v.to_string_lossy()))),
    }
}

/// `1` or `0` (unset and empty: `0`); anything else is refused.
fn env_flag(name: &str) -> Result<bool, CliError> {
    match env_text(name)?.as_deref() {
        None | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(v) => Err(CliError::msg(format!("{name}=`{v}`: give 1 or 0"))),
    }
}
