//! The real dnf cowkit runs, and the shim directory that puts cowkit
//! first on `PATH` as `dnf`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::output::CliError;

/// The real dnf (a path, or a name looked up on `PATH`).
pub const ENV_DNF: &str = "COWKIT_DNF";
/// Set on the real dnf cowkit runs: a `dnf` entry started with it set was
/// started by that dnf, and refuses (instead of running in a loop).
pub const ENV_INSIDE: &str = "COWKIT_DNF_ENTRY";

/// This binary, its links resolved.
fn this_binary() -> Option<PathBuf> {
    std::env::current_exe().ok()?.canonicalize().ok()
}

/// The real dnf: `COWKIT_DNF` (a path, or a name looked up on `PATH`), or
/// the first `dnf` on `PATH` that is not this binary.
pub fn real_dnf() -> Result<PathBuf, CliError> {
    let me = this_binary();
    let wanted = std::env::var_os(ENV_DNF)
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "dnf".into());
    let is_me = |p: &Path| me.is_some() && p.canonicalize().ok() == me;
    if Path::new(&wanted).components().count() > 1 {
        let p = PathBuf::from(&wanted);
        if is_me(&p) {
            return Err(
                CliError::msg(format!("{ENV_DNF}=`{}` is cowkit itself", p.display()))
                    .hint(format!("set {ENV_DNF} to the real dnf, e.g. /usr/bin/dnf")),
            );
        }
        return Ok(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/local/bin:/usr/bin:/bin".into());
    for dir in std::env::split_paths(&path) {
        let c = dir.join(&wanted);
        let executable =
            std::fs::metadata(&c).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
        if executable && !is_me(&c) {
            return Ok(c);
        }
    }
    Err(CliError::msg(format!(
        "no `{}` on PATH but cowkit's own entry",
        Path::new(&wanted).display()
    ))
    .hint("install dnf (Debian: `apt-get install dnf`), or set COWKIT_DNF to it"))
}

/// `cowkit dnf --shim-dir DIR`: make `DIR/dnf` a link to this binary
/// (DIR is created if missing) and print DIR, to be put first on `PATH`.
/// DIR (and every directory above it) must be one others cannot change,
/// or someone could put their own `dnf` there.
pub fn make_shim(dir: &Path) -> Result<(), CliError> {
    if !dir.is_absolute() {
        return Err(CliError::msg(format!(
            "--shim-dir `{}` is not an absolute path (it goes on PATH)",
            dir.display()
        )));
    }
    let me = this_binary().ok_or_else(|| CliError::msg("cannot find cowkit's own binary"))?;
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(CliError::new(
                format!("cannot create `{}`", dir.display()),
                e,
            ))
        }
    }
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        dir,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        CliError::new(
            format!("cannot open `{}`", dir.display()),
            std::io::Error::from(e),
        )
        .hint("give a directory, not a symlink")
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| {
        CliError::new(
            format!("cannot stat `{}`", dir.display()),
            std::io::Error::from(e),
        )
    })?;
    let me_uid = rustix::process::geteuid().as_raw();
    if st.st_uid != me_uid || st.st_mode & 0o022 != 0 {
        return Err(others_can_change(dir, st.st_uid, st.st_mode));
    }
    for up in dir.ancestors().skip(1) {
        let m = std::fs::metadata(up)
            .map_err(|e| CliError::new(format!("cannot stat `{}`", up.display()), e))?;
        let (uid, mode) = (
            std::os::unix::fs::MetadataExt::uid(&m),
            m.permissions().mode(),
        );
        let sticky = mode & 0o1000 != 0;
        if (uid != 0 && uid != me_uid) || (mode & 0o022 != 0 && !sticky) {
            return Err(others_can_change(up, uid, mode));
        }
    }
    match rustix::fs::readlinkat(&fd, "dnf", Vec::new()) {
        Ok(t) if Path::new(t.to_str().unwrap_or("")) == me => {}
        Ok(t) => {
            return Err(CliError::msg(format!(
                "`{}/dnf` already links to `{}`, not to cowkit (`{}`)",
                dir.display(),
                t.to_string_lossy(),
                me.display()
            ))
            .hint("remove it, or use another directory"))
        }
        Err(rustix::io::Errno::NOENT) => rustix::fs::symlinkat(&me, &fd, "dnf").map_err(|e| {
            CliError::new(
                format!("cannot make `{}/dnf`", dir.display()),
                std::io::Error::from(e),
            )
        })?,
        Err(e) => {
            return Err(CliError::new(
                format!("`{}/dnf` exists and is not a link to cowkit", dir.display()),
                std::io::Error::from(e),
            )
            .hint("remove it, or use another directory"))
        }
    }
    println!("{}", dir.display());
    Ok(())
}

fn others_can_change(path: &Path, uid: u32, mode: u32) -> CliError {
    CliError::msg(format!(
        "`{}` can be changed by others (owner uid {uid}, mode {:o}): they could put their own `dnf` on PATH",
        path.display(),
        mode & 0o7777
    ))
    .hint("use a directory of your own that only you can write, e.g. /run/cowkit-dnf")
}
