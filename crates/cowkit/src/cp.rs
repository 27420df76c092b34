//! `cowkit cp [-a] [-r] SRC... DST`: parallel tree copy with GNU cp's
//! meaning of SRC and DST.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cowkit_fs::{Chain, Method};
use cowkit_tree::{CopyOptions, Preserve, Summary};
use serde::Serialize;

use crate::install::Reflink;
use crate::output::{print_fallbacks, print_json, tally_text, CliError};
use crate::treebar::TreeBar;

/// Arguments of `cowkit cp`.
#[derive(clap::Args)]
pub struct Args {
    /// Archive: copy recursively, symlinks as symlinks, and preserve
    /// everything (owner, mode, times, xattrs and ACLs, hardlinks), like
    /// `cp -a`.
    #[arg(short = 'a', long)]
    archive: bool,
    /// Copy directories recursively (mode only, as `cp -r`).
    #[arg(short = 'r', short_alias = 'R', long)]
    recursive: bool,
    /// Whether file data may share blocks with the source.
    #[arg(long, value_enum, default_value_t = Reflink::Auto)]
    reflink: Reflink,
    /// Parallel workers (default: the number of CPUs).
    #[arg(short, long)]
    jobs: Option<usize>,
    /// Write files up to this many bytes instead of cloning them.
    #[arg(long, hide = true, default_value_t = 0)]
    small_write: u64,
    /// Print a JSON summary.
    #[arg(long)]
    json: bool,
    /// Sources, then the destination.
    #[arg(required = true, num_args = 2..)]
    paths: Vec<PathBuf>,
}

#[derive(Serialize)]
struct Report<'a> {
    ok: bool,
    copies: Vec<Copy<'a>>,
}

#[derive(Serialize)]
struct Copy<'a> {
    src: &'a Path,
    dst: PathBuf,
    error: Option<Vec<String>>,
    #[serde(flatten)]
    summary: Option<Summary>,
}

/// Where each source goes, GNU cp style.
fn targets(paths: &[PathBuf]) -> Result<Vec<(&Path, PathBuf)>, CliError> {
    let (dst, srcs) = paths.split_last().expect("clap asks for two paths");
    let dst_is_dir = dst.is_dir();
    if srcs.len() > 1 && !dst_is_dir {
        return Err(
            CliError::msg(format!("target `{}` is not a directory", dst.display()))
                .hint("with several sources, the destination must be an existing directory"),
        );
    }
    Ok(srcs
        .iter()
        .map(|s| {
            let to = match last_name(s) {
                Some(name) if dst_is_dir => dst.join(name),
                // `SRC/.`: the contents go into the directory.
                _ => dst.clone(),
            };
            (s.as_path(), to)
        })
        .collect())
}

/// The last component of `path` as the user wrote it (`Path::file_name`
/// reads `src/.` as `src`, where cp reads `.`); `None` for `.` and `..`.
fn last_name(path: &Path) -> Option<&std::ffi::OsStr> {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let end = bytes.iter().rposition(|&b| b != b'/')?;
    let last = bytes[..=end].rsplit(|&b| b == b'/').next()?;
    match last {
        b"." | b".." => None,
        _ => path.file_name(),
    }
}

pub fn run(args: Args, quiet: bool) -> Result<ExitCode, CliError> {
    cowkit_tree::raise_fd_limit();
    // Created entries then get exactly the modes asked for, which lets
    // the copy skip a chmod per file; the user's umask still applies where
    // modes are not preserved.
    let umask = rustix::process::umask(rustix::fs::Mode::empty()).bits();
    let opts = options(&args, umask);
    let targets = targets(&args.paths)?;

    let bar = TreeBar::new("copied", quiet || args.json, args.json);

    let mut copies = Vec::new();
    let mut ok = true;
    // One map for all sources: hardlinks between them are kept, as cp -a.
    let links = cowkit_tree::Links::new();
    for (src, dst) in targets {
        match cowkit_tree::copy_linked(src, &dst, &opts, &links, &bar) {
            Ok(s) => {
                ok &= s.ok();
                copies.push(Copy {
                    src,
                    dst,
                    error: None,
                    summary: Some(s),
                });
            }
            Err(e) => {
                ok = false;
                let err = CliError::new(format!("cannot copy `{}`", src.display()), e);
                if !args.json {
                    bar.suspend(|| crate::output::report_error(&err));
                }
                copies.push(Copy {
                    src,
                    dst,
                    error: Some(err.chain()),
                    summary: None,
                });
            }
        }
    }
    bar.finish_and_clear();

    if args.json {
        print_json(&Report { ok, copies });
    } else {
        say_copies(&copies, quiet);
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The copy options `args` ask for; created entries get exactly the modes
/// asked for, less `umask` where modes are not preserved.
fn options(args: &Args, umask: u32) -> CopyOptions {
    CopyOptions {
        chain: match args.reflink {
            Reflink::Auto => Chain::AUTO,
            Reflink::Always => Chain::only(Method::Clone),
            Reflink::Never => Chain::only(Method::ReadWrite),
        },
        threads: args
            .jobs
            .unwrap_or_else(cowkit_tree::default_threads)
            .max(1),
        preserve: if args.archive {
            Preserve::ALL
        } else {
            Preserve::NONE
        },
        recursive: args.archive || args.recursive,
        follow_top: !(args.archive || args.recursive),
        umask: Some(umask),
        small_file_max: args.small_write,
    }
}

/// Each copy's summary (without `quiet`, otherwise only copies stopped
/// early), on stderr.
fn say_copies(copies: &[Copy], quiet: bool) {
    for c in copies {
        let Some(s) = &c.summary else { continue };
        if let Some(why) = &s.aborted {
            eprintln!(
                "error: copy of `{}` to `{}` stopped, incomplete: {why}",
                c.src.display(),
                c.dst.display()
            );
            eprintln!("hint: free space on the destination (or fix it), then copy again");
        }
        if quiet {
            continue;
        }
        let verb = if s.ok() { "copied" } else { "partly copied" };
        eprintln!(
            "{verb} `{}` → `{}`: {} files, {} directories, {} symlinks, {} hardlinks, {} special; {}; errors: {}",
            c.src.display(),
            c.dst.display(),
            s.files,
            s.directories,
            s.symlinks,
            s.hardlinks,
            s.fifos + s.sockets + s.devices,
            tally_text(&s.tally),
            s.errors.len()
        );
        print_fallbacks(&s.tally);
        if s.xattrs_unsupported > 0 {
            eprintln!(
                "warning: {} extended attributes not supported by the destination filesystem",
                s.xattrs_unsupported
            );
        }
    }
}
