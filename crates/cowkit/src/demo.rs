//! `cowkit demo DIR`: what cowkit does, side by side with the usual way,
//! in DIR: a file cloned and copied the slow way, then a small package
//! repository (built on the spot, [`repo`]) installed into empty roots by
//! plain `dnf --installroot` and by `cowkit dnf`, timed, with the blocks
//! shared and the proof that the roots are equal ([`roots`], [`compare`]).

mod compare;
mod repo;
mod roots;

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use cowkit_fs::probe::probe_pair;
use cowkit_fs::{Chain, Copied, Copier, Handle, Method};
use serde::Serialize;

use crate::output::{human_bytes, print_json, CliError};

/// Arguments of `cowkit demo`.
#[derive(clap::Args)]
pub struct Args {
    /// Where to make the demo files and roots (removed afterwards). On XFS
    /// or Btrfs cowkit shares blocks; elsewhere it falls back to copying.
    #[arg(default_value = ".")]
    dir: PathBuf,
    /// Size of the demo file in MiB.
    #[arg(long, default_value_t = 256)]
    size_mib: u64,
    /// Only the file copy: no package repository, no dnf (which installs
    /// as root).
    #[arg(long)]
    no_packages: bool,
    /// Keep the repository and the roots of the package part (their
    /// directory is printed) instead of removing them.
    #[arg(long)]
    keep: bool,
    /// Print the results as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Run {
    method: Method,
    fallbacks: Vec<cowkit_fs::Fallback>,
    seconds: f64,
    shared_bytes: Option<u64>,
    identical: bool,
}

#[derive(Serialize)]
struct Report {
    dir: PathBuf,
    fs_type: String,
    bytes: u64,
    cowkit: Run,
    plain_copy: Run,
    speedup: f64,
    /// The package part (none with `--no-packages`).
    packages: Option<roots::Packages>,
}

/// Files the demo makes, removed on every exit path.
struct Cleanup(Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let dir = &args.dir;
    let probe = probe_pair(dir, dir)
        .map_err(|e| CliError::new(format!("cannot probe `{}`", dir.display()), e))?;
    if !args.no_packages {
        can_install()?;
    }
    let (cowkit, plain_copy) = copies(dir, args.size_mib << 20)?;
    let speedup = plain_copy.seconds / cowkit.seconds.max(1e-9);
    if !args.json {
        print!("{}", crate::probe::describe(&probe, false));
        println!();
        print_copies(
            dir,
            &probe.src.fs_type,
            args.size_mib << 20,
            [&cowkit, &plain_copy],
            speedup,
        );
    }
    let packages = if args.no_packages {
        None
    } else {
        if !args.json {
            println!();
            println!(
                "building a repository of {} packages with rpmbuild and createrepo_c, \
                 then installing `{}` into empty roots in {} ...",
                repo::SPECS.len(),
                repo::TOP,
                dir.display()
            );
        }
        Some(roots::run(dir, args.keep)?)
    };
    let report = Report {
        dir: dir.clone(),
        fs_type: probe.src.fs_type.clone(),
        bytes: args.size_mib << 20,
        cowkit,
        plain_copy,
        speedup,
        packages,
    };
    if args.json {
        print_json(&report);
    } else if let Some(p) = &report.packages {
        print_packages(p);
    }
    match &report.packages {
        Some(p) if !p.equal => Err(CliError::msg(format!(
            "the roots differ:\n{}",
            p.differences.join("\n")
        ))),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// Refuse the package part up front when dnf cannot install here.
fn can_install() -> Result<(), CliError> {
    if !rustix::process::geteuid().is_root() {
        return Err(CliError::msg(
            "the package part of the demo needs root: dnf --installroot installs as root",
        )
        .hint("run it as root (`sudo scripts/demo.sh`), or add `--no-packages`"));
    }
    if let Some((tool, package)) = repo::missing_tool() {
        return Err(CliError::msg(format!(
            "the package part of the demo needs `{tool}`, which is not on PATH"
        ))
        .hint(format!(
            "install Debian package `{package}` (`scripts/setup.sh` installs everything), \
             or add `--no-packages`"
        )));
    }
    Ok(())
}

/// The file copied by cowkit and the slow way; both checked byte for byte.
fn copies(dir: &Path, bytes: u64) -> Result<(Run, Run), CliError> {
    let tag = std::process::id();
    let names = ["source", "cowkit-copy", "plain-copy"]
        .map(|n| dir.join(format!(".cowkit-demo-{tag}-{n}")));
    let _cleanup = Cleanup(names.to_vec());
    let [src, fast, slow] = &names;
    write_source(src, bytes)?;
    let cowkit = timed_copy(Chain::AUTO, src, fast)?;
    let plain_copy = timed_copy(Chain::only(Method::ReadWrite), src, slow)?;
    if !(cowkit.identical && plain_copy.identical) {
        return Err(CliError::new(
            "the copies differ from the source",
            std::io::Error::other("content mismatch"),
        ));
    }
    Ok((cowkit, plain_copy))
}

fn print_copies(dir: &Path, fs_type: &str, bytes: u64, runs: [&Run; 2], speedup: f64) {
    println!(
        "copying a {} file on {fs_type} in {}:",
        human_bytes(bytes),
        dir.display()
    );
    for (name, r) in [("cowkit", runs[0]), ("plain copy", runs[1])] {
        let shared = r
            .shared_bytes
            .map_or("n/a".to_string(), |b| format!("{} shared", human_bytes(b)));
        let why = r
            .fallbacks
            .iter()
            .map(|f| format!(", {} refused: {}", f.from, f.reason))
            .collect::<String>();
        println!(
            "  {name:<11} {:>10}  by {}{why} ({shared}), bytes identical",
            human_secs(r.seconds),
            r.method
        );
    }
    println!(
        "  plain copy time / cowkit time: {speedup:.1}x (one run, each copy timed until durable with fsync)"
    );
}

fn print_packages(p: &roots::Packages) {
    println!(
        "  {:<24} {:>9} {:>15} {:>11} {:>22}",
        "", "time", "after resolve", "disk used", "blocks shared"
    );
    for i in &p.installs {
        println!(
            "  {:<24} {:>9} {:>15} {:>11} {:>11} of {:>8}",
            i.method,
            human_secs(i.seconds),
            human_secs(i.seconds - i.resolve_seconds),
            human_bytes(i.disk_used_bytes),
            human_bytes(i.shared_bytes),
            human_bytes(i.file_bytes),
        );
    }
    println!(
        "  (one run each; dnf's metadata cache made beforehand; after resolve: without dnf's \
         resolve, which cowkit dnf runs too; disk used includes cowkit's cache of transcoded \
         packages, which the cold run fills and the warm one reuses)"
    );
    let va = if p.rpm_va.is_empty() {
        "no file differs from its package".to_string()
    } else {
        format!("{} line(s), the same in every root", p.rpm_va.len())
    };
    let verdict = if p.equal { "equal" } else { "NOT equal" };
    println!(
        "  the roots are {verdict}: `rpm -qa` ({} packages), `rpm -Va` ({va}), \
         {} entries (type, mode, owner, size, mtime, content, link target, xattrs, hardlinks; \
         not the rpm database, dnf's own state, logs and cache)",
        p.installed.len(),
        p.entries
    );
    if let Some(k) = &p.kept {
        println!("  kept: {}", k.display());
    }
}

fn write_source(path: &Path, bytes: u64) -> Result<(), CliError> {
    let err = |e: std::io::Error| CliError::new(format!("cannot write `{}`", path.display()), e);
    // A new file (`O_EXCL`): never one planted at this name, nor a symlink.
    let f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(err)?;
    let mut block = vec![0u8; 1 << 20];
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut off = 0;
    while off < bytes {
        for chunk in block.chunks_exact_mut(8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_le_bytes());
        }
        let n = (bytes - off).min(block.len() as u64) as usize;
        std::os::unix::fs::FileExt::write_all_at(&f, &block[..n], off).map_err(err)?;
        off += n as u64;
    }
    f.sync_all().map_err(err)
}

fn timed_copy(chain: Chain, src: &Path, dst: &Path) -> Result<Run, CliError> {
    let ctx = || format!("cannot copy `{}` to `{}`", src.display(), dst.display());
    let s = File::open(src).map_err(|e| CliError::new(ctx(), e))?;
    let d = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(dst)
        .map_err(|e| CliError::new(ctx(), e))?;
    let t = Instant::now();
    let done: Copied = Copier::new(chain)
        .copy_file(Handle::new(&s, src), Handle::new(&d, dst))
        .map_err(|e| CliError::new(ctx(), e))?;
    d.sync_all().map_err(|e| CliError::new(ctx(), e))?;
    let seconds = t.elapsed().as_secs_f64();
    let shared_bytes = cowkit_fs::fiemap::shared_bytes(&d).ok().map(|(s, _)| s);
    Ok(Run {
        method: done.method,
        fallbacks: done.fallbacks,
        seconds,
        shared_bytes,
        identical: same_content(src, dst).map_err(|e| CliError::new(ctx(), e))?,
    })
}

fn human_secs(s: f64) -> String {
    if s < 0.1 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

fn same_content(a: &Path, b: &Path) -> std::io::Result<bool> {
    let (mut fa, mut fb) = (File::open(a)?, File::open(b)?);
    let (mut ba, mut bb) = (vec![0u8; 1 << 20], vec![0u8; 1 << 20]);
    loop {
        let n = fa.read(&mut ba)?;
        if n == 0 {
            return Ok(fb.read(&mut bb)? == 0);
        }
        fb.read_exact(&mut bb[..n])?;
        if ba[..n] != bb[..n] {
            return Ok(false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 28 (found while reworking the demo): root runs the demo in a
    /// directory the user names, at predictable names; a symlink planted
    /// at one of them must not send the demo's writes elsewhere.
    #[test]
    fn demo_files_are_never_written_through_a_symlink() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, "keep\n").unwrap();
        let planted = d.path().join("planted");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        assert!(write_source(&planted, 4096).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");

        let src = d.path().join("source");
        write_source(&src, 4096).unwrap();
        assert!(timed_copy(Chain::AUTO, &src, &planted).is_err());
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep\n");
    }
}
