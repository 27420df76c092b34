//! The real dnf cowkit runs, which resolver it is ([`Resolver`]), and the
//! shim directory that puts cowkit first on `PATH` as `dnf` (and as
//! `dnf5` where there is a dnf5).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::{Error, Result};

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
pub fn real_dnf() -> Result<PathBuf> {
    real_dnf_named("dnf")
}

/// The real dnf for cowkit run as `name` (`dnf` or `dnf5`): `COWKIT_DNF`
/// (a path, or a name looked up on `PATH`), or the first `name` on `PATH`
/// that is not this binary. As `dnf5`, `COWKIT_DNF` must name dnf5.
pub fn real_dnf_named(name: &str) -> Result<PathBuf> {
    let given = std::env::var_os(ENV_DNF).filter(|d| !d.is_empty());
    let dnf = find_dnf(given.clone().unwrap_or_else(|| name.into()))?;
    if name == "dnf5" && given.is_some() && Resolver::of(&dnf) != Resolver::Dnf5 {
        return Err(Error::NotDnf5 {
            var: ENV_DNF,
            path: dnf,
        });
    }
    Ok(dnf)
}

/// `wanted` (a path, or a name looked up on `PATH`), not this binary.
fn find_dnf(wanted: std::ffi::OsString) -> Result<PathBuf> {
    let me = this_binary();
    let is_me = |p: &Path| me.is_some() && p.canonicalize().ok() == me;
    if Path::new(&wanted).components().count() > 1 {
        let p = PathBuf::from(&wanted);
        if is_me(&p) {
            return Err(Error::DnfIsCowkit {
                var: ENV_DNF,
                path: p,
            });
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
    Err(Error::NoDnf {
        name: PathBuf::from(wanted),
    })
}

/// Which dnf resolves: decided once per run from the real dnf's program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolver {
    /// dnf 4 (its Python entry point, [`crate::dnf4`]).
    Dnf4,
    /// dnf5 (through cowkit's plugin, [`crate::dnf5`]).
    Dnf5,
}

impl Resolver {
    /// The resolver the program at `dnf` is: dnf5 when the file it names,
    /// its links resolved, is called `dnf5` (Fedora 41 and later install
    /// dnf5 as `/usr/bin/dnf5`, `/usr/bin/dnf` a link to it); dnf 4
    /// otherwise. Nothing is run to find out.
    pub fn of(dnf: &Path) -> Resolver {
        let real = dnf.canonicalize().unwrap_or_else(|_| dnf.to_path_buf());
        if real.file_name().is_some_and(|n| n == "dnf5") {
            Resolver::Dnf5
        } else {
            Resolver::Dnf4
        }
    }
}

/// `cowkit dnf --shim-dir DIR`: make `DIR/dnf` a link to this binary
/// (DIR is created if missing), to be put first on `PATH`; and `DIR/dnf5`
/// too where there is a real dnf5 (`COWKIT_DNF` naming dnf5, or `dnf5` on
/// `PATH`), since image builders run `dnf5` when they find one. DIR (and
/// every directory above it) must be one others cannot change, or someone
/// could put their own `dnf` there. The names made are returned.
pub fn make_shim(dir: &Path) -> Result<Vec<&'static str>> {
    if !dir.is_absolute() {
        return Err(Error::ShimRelative {
            path: dir.to_path_buf(),
        });
    }
    let me = this_binary().ok_or(Error::NoOwnBinary)?;
    let io = |what, path: &Path, e: std::io::Error| Error::Io {
        what,
        path: path.to_path_buf(),
        source: e,
    };
    match std::fs::create_dir(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io("create", dir, e)),
    }
    use rustix::fs::{Mode, OFlags};
    let fd = rustix::fs::open(
        dir,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| Error::ShimNotDir {
        path: dir.to_path_buf(),
        source: e.into(),
    })?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io("stat", dir, e.into()))?;
    let me_uid = rustix::process::geteuid().as_raw();
    if st.st_uid != me_uid || st.st_mode & 0o022 != 0 {
        return Err(Error::OthersCanChange {
            path: dir.to_path_buf(),
            uid: st.st_uid,
            mode: st.st_mode,
        });
    }
    for up in dir.ancestors().skip(1) {
        let m = std::fs::metadata(up).map_err(|e| io("stat", up, e))?;
        let (uid, mode) = (
            std::os::unix::fs::MetadataExt::uid(&m),
            m.permissions().mode(),
        );
        let sticky = mode & 0o1000 != 0;
        if (uid != 0 && uid != me_uid) || (mode & 0o022 != 0 && !sticky) {
            return Err(Error::OthersCanChange {
                path: up.to_path_buf(),
                uid,
                mode,
            });
        }
    }
    let mut names = vec!["dnf"];
    if real_dnf_named("dnf5").is_ok() {
        names.push("dnf5");
    }
    for name in &names {
        link_me(&fd, dir, name, &me)?;
    }
    Ok(names)
}

/// `DIR/name` (DIR open as `fd`) a link to `me`: made, or found so.
fn link_me(fd: &rustix::fd::OwnedFd, dir: &Path, name: &str, me: &Path) -> Result<()> {
    let link = || PathBuf::from(format!("{}/{name}", dir.display()));
    match rustix::fs::readlinkat(fd, name, Vec::new()) {
        Ok(t) if Path::new(t.to_str().unwrap_or("")) == me => {}
        Ok(t) => {
            return Err(Error::ShimLinksElsewhere {
                link: link(),
                target: PathBuf::from(t.to_string_lossy().into_owned()),
                me: me.to_path_buf(),
            })
        }
        Err(rustix::io::Errno::NOENT) => {
            rustix::fs::symlinkat(me, fd, name).map_err(|e| Error::ShimLink {
                link: link(),
                source: e.into(),
            })?
        }
        Err(e) => {
            return Err(Error::ShimNotLink {
                link: link(),
                source: e.into(),
            })
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn dnf5_is_the_program_named_dnf5_its_links_resolved() {
        let d = tempfile::tempdir().unwrap();
        let bin = d.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        // dnf 4's entry point is a Python script named dnf.
        std::fs::write(bin.join("dnf-3"), "#!/usr/bin/python3\n").unwrap();
        std::os::unix::fs::symlink("dnf-3", bin.join("dnf")).unwrap();
        assert_eq!(Resolver::of(&bin.join("dnf")), Resolver::Dnf4);
        // Fedora 41: /usr/bin/dnf -> dnf5.
        std::fs::write(bin.join("dnf5"), "").unwrap();
        std::fs::remove_file(bin.join("dnf")).unwrap();
        std::os::unix::fs::symlink("dnf5", bin.join("dnf")).unwrap();
        assert_eq!(Resolver::of(&bin.join("dnf")), Resolver::Dnf5);
        assert_eq!(Resolver::of(&bin.join("dnf5")), Resolver::Dnf5);
        assert_eq!(Resolver::of(&bin.join("missing")), Resolver::Dnf4);
    }

    #[test]
    fn the_shim_is_a_link_to_this_binary_in_a_directory_only_its_owner_writes() {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let dir = d.path().join("shim");
        // The temporary directory's parents (/tmp is sticky) pass.
        make_shim(&dir).unwrap();
        let me = this_binary().unwrap();
        assert_eq!(std::fs::read_link(dir.join("dnf")).unwrap(), me);
        make_shim(&dir).unwrap();
        assert!(matches!(
            make_shim(Path::new("shim")),
            Err(Error::ShimRelative { .. })
        ));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(matches!(
            make_shim(&dir),
            Err(Error::OthersCanChange { path, .. }) if path == dir
        ));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::remove_file(dir.join("dnf")).unwrap();
        std::os::unix::fs::symlink("/usr/bin/dnf", dir.join("dnf")).unwrap();
        let e = make_shim(&dir).unwrap_err();
        assert!(matches!(&e, Error::ShimLinksElsewhere { .. }), "{e}");
        assert!(
            e.to_string().contains("already links to `/usr/bin/dnf`"),
            "{e}"
        );
    }
}
