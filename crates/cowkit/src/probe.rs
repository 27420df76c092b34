//! `cowkit probe PATH [PATH2]`.

use std::path::PathBuf;
use std::process::ExitCode;

use cowkit_fs::probe::{probe_pair, CopyFileRange, FsInfo, PairProbe, Support};
use cowkit_fs::Method;

use crate::output::{print_json, CliError};

/// Arguments of `cowkit probe`.
#[derive(clap::Args)]
pub struct Args {
    /// A directory (or file) to probe; sources would be read from here.
    path: PathBuf,
    /// Where copies would be written (default: PATH itself).
    path2: Option<PathBuf>,
    /// Print the findings as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let dst = args.path2.as_ref().unwrap_or(&args.path);
    let pr = probe_pair(&args.path, dst).map_err(|e| {
        CliError::new(format!("cannot probe `{}`", args.path.display()), e)
            .hint("give an existing directory you can write to")
    })?;
    if args.json {
        print_json(&pr);
    } else {
        print!("{}", describe(&pr, args.path2.is_some()));
    }
    Ok(ExitCode::SUCCESS)
}

fn fs_line(fs: &FsInfo) -> String {
    let mount = match (&fs.mount_point, &fs.mount_source) {
        (Some(p), Some(s)) => format!(", mounted at {} from {s}", p.display()),
        (Some(p), None) => format!(", mounted at {}", p.display()),
        _ => String::new(),
    };
    format!(
        "{}: {}, block size {}, device {}{mount}",
        fs.path.display(),
        fs.fs_type,
        fs.block_size,
        fs.device
    )
}

/// The probe's findings in words.
pub fn describe(pr: &PairProbe, pair: bool) -> String {
    let mut s = String::new();
    if pair {
        s += &format!("source:          {}\n", fs_line(&pr.src));
        s += &format!("destination:     {}\n", fs_line(&pr.dst));
        s += &format!(
            "same device:     {}\n",
            if pr.same_device { "yes" } else { "no" }
        );
    } else {
        s += &format!("filesystem:      {}\n", fs_line(&pr.src));
    }
    s += &format!(
        "reflink:         {}\n",
        match pr.reflink {
            Support::Yes => "yes (FICLONE shares blocks)".to_string(),
            Support::No(r) => format!("no ({r})"),
            Support::Untested(r) => format!("not tested ({r})"),
        }
    );
    s += &format!(
        "copy_file_range: {}\n",
        match pr.copy_file_range {
            CopyFileRange::Clones => "clones (the copy shares blocks)".to_string(),
            CopyFileRange::Copies => "copies the bytes in the kernel".to_string(),
            CopyFileRange::Refused(r) => format!("refused ({r})"),
            CopyFileRange::Untested(r) => format!("not tested ({r})"),
        }
    );
    s += &format!(
        "cowkit will:     {}\n",
        match pr.best {
            Method::Clone => "clone (share blocks; no data written)",
            Method::CopyFileRange => "copy in the kernel with copy_file_range",
            Method::ReadWrite => "copy through a buffer (read/write)",
        }
    );
    if pr.best != Method::Clone {
        s += "hint: to share blocks, put source and destination on one XFS (mkfs.xfs -m reflink=1) or Btrfs filesystem\n";
    }
    s
}
