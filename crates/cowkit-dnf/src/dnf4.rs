//! dnf 4 as the resolver: started on the root's database (a private
//! `HOME` whose `.rpmmacros` sets `%_dbpath`), its Python entry point
//! wrapped to write the order of its transaction and the plan of its
//! downloads ([`crate::order`]), and what it leaves read back: the plan,
//! whether it reinstalls, the packages it downloaded, the keys it
//! imported. Every place dnf 4 is started or its files are read is here.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

use crate::error::RunError;
use crate::request::{Downloader, Events, Note, Request};

/// A `HOME` whose `.rpmmacros` sets `%_dbpath`: dnf (and the librpm it
/// loads) read it after the system's macro files, so it wins on any host.
pub fn home_with_dbpath(dbpath: &str) -> Result<tempfile::TempDir, RunError> {
    let home = tempfile::Builder::new()
        .prefix("cowkit-dnf-home.")
        .tempdir()
        .map_err(RunError::Home)?;
    let path = home.path().join(".rpmmacros");
    std::fs::write(&path, format!("%_dbpath {dbpath}\n"))
        .map_err(|source| RunError::RpmMacros { path, source })?;
    Ok(home)
}

/// Where the wrapper writes the order of dnf's transaction, in `home`.
pub fn order_path(home: &Path) -> PathBuf {
    home.join("order")
}

/// Where the wrapper writes the plan of dnf's downloads, in `home`.
pub fn plan_path(home: &Path) -> PathBuf {
    home.join("plan")
}

/// The real dnf `dnf` on `req`'s root with `req`'s arguments, `HOME` set
/// to `home`.
fn command(req: &Request, dnf: &Path, home: &Path) -> Result<Command, RunError> {
    let mut c = crate::order::command(dnf, &order_path(home));
    c.env("HOME", home)
        .env(crate::shim::ENV_INSIDE, dnf)
        .arg(format!("--installroot={}", req.root.display()))
        .args(&req.line.rest);
    Ok(c)
}

/// `c`'s exit status.
fn status(c: &mut Command) -> Result<ExitStatus, RunError> {
    c.status().map_err(|source| RunError::RunDnf {
        dnf: c.get_program().into(),
        source,
    })
}

/// dnf (the program `dnf`) runs the command itself (one that installs
/// nothing, or only shows or downloads), on the database at `dbpath`
/// inside the root: its exit code.
pub fn run_itself(req: &Request, dnf: &Path, dbpath: &str) -> Result<i32, RunError> {
    let home = home_with_dbpath(dbpath)?;
    let status = status(&mut command(req, dnf, home.path())?)?;
    Ok(status.code().unwrap_or(1).clamp(0, 255))
}

/// Whether dnf keeps downloaded packages in its cache (`keepcache`: the
/// command line, else dnf's configuration file, else no).
pub fn keepcache(req: &Request) -> bool {
    req.line
        .keepcache
        .or_else(|| crate::conf::keepcache_in_config(req.line.config.as_deref(), &req.root))
        .unwrap_or(false)
}

/// Why dnf downloads (before dnf runs): `--downloader dnf`, or dnf keeps
/// its own copies (`keepcache`); `None`: cowkit fetches if dnf's plan
/// allows it.
pub fn downloads(req: &Request) -> Result<Option<String>, RunError> {
    match req.downloader {
        Downloader::Dnf => Ok(Some("of `--downloader dnf`".into())),
        _ if keepcache(req) => {
            if req.downloader == Downloader::Cowkit {
                return Err(RunError::Keepcache);
            }
            Ok(Some("dnf keeps its downloads (keepcache)".into()))
        }
        _ => Ok(None),
    }
}

/// dnf (the program `dnf_program`) resolves and downloads into `dir`, or,
/// given `plan`, writes the
/// plan of its downloads there and downloads only what cowkit cannot
/// fetch. With `keepcache`, dnf first downloads once more without
/// `--downloaddir`, so that its own cache keeps the packages as a plain
/// `dnf install` leaves them (remote repositories' packages are then
/// fetched twice; local ones never are).
pub fn resolve(
    req: &Request,
    dnf_program: &Path,
    home: &Path,
    dir: &Path,
    plan: Option<&Path>,
) -> Result<ExitStatus, RunError> {
    let to_stderr = |c: &mut Command| req.dnf_stdout(c);
    // dnf would erase the oldest install-only packages (kernels) beyond
    // its `installonly_limit` in the same transaction, which cowkit does
    // not do: with 0 (no limit), dnf's plan erases none either. Given
    // after the user's arguments, so that it wins.
    let ours = ["-y", "--downloadonly", "--setopt=installonly_limit=0"];
    if keepcache(req) {
        let mut dnf = command(req, dnf_program, home)?;
        dnf.args(ours);
        to_stderr(&mut dnf)?;
        let status = status(&mut dnf)?;
        if !status.success() {
            return Ok(status);
        }
    }
    let mut dnf = command(req, dnf_program, home)?;
    dnf.args(ours)
        .arg(format!("--downloaddir={}", dir.display()));
    if let Some(plan) = plan {
        // dnf writes its plan and downloads nothing (cowkit fetches),
        // or downloads where cowkit cannot (`crate::order`).
        dnf.env("COWKIT_DNF_PLAN", plan);
        if req.downloader == Downloader::Cowkit {
            dnf.env("COWKIT_DNF_PLAN_STRICT", "1");
        }
    }
    to_stderr(&mut dnf)?;
    status(&mut dnf)
}

/// The packages dnf downloaded into `dir`, in dnf's order (from the
/// wrapper's order file in `home`; file-name order, with a note, without
/// it).
pub fn downloaded(dir: &Path, home: &Path, events: &dyn Events) -> Result<Vec<PathBuf>, RunError> {
    let mut rpms: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| RunError::ListDownloads {
            dir: dir.to_path_buf(),
            source,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "rpm"))
        .collect();
    if !crate::order::sort(&mut rpms, &order_path(home)) && !rpms.is_empty() {
        // Not a skip, but not dnf's order either: said, not hidden.
        events.note(Note::NoOrder);
    }
    Ok(rpms)
}

/// The public keys in the `scratch` database after dnf ran (with
/// `status`), each written to a file in `dir`: those dnf imported as it
/// checked the signatures of what it downloaded into `downloads`, which
/// the root's database gets after the transaction. None when dnf
/// downloaded nothing (cowkit fetches: dnf checked nothing).
pub fn scratch_keys(
    root: &Path,
    scratch: Option<&cowkit_rpmdb::Scratch<'_>>,
    status: &Result<ExitStatus, RunError>,
    downloads: &Path,
    dir: &Path,
) -> Result<Vec<PathBuf>, RunError> {
    let (Some(scratch), Ok(status)) = (scratch, status) else {
        return Ok(Vec::new());
    };
    let downloaded = std::fs::read_dir(downloads).is_ok_and(|mut d| d.next().is_some());
    if !status.success() || !downloaded {
        return Ok(Vec::new());
    }
    let keys = cowkit_rpmdb::Rpm::new(root, scratch.db())
        .public_keys()
        .map_err(|e| RunError::ScratchKeys(Box::new(e)))?;
    keys.iter()
        .enumerate()
        .map(|(i, k)| {
            let p = dir.join(format!("key-{i}.asc"));
            std::fs::write(&p, k).map_err(|e| RunError::ScratchKeys(Box::new(e)))?;
            Ok(p)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::line::Line;

    fn request(line: Line, downloader: Downloader, root: &Path) -> Request {
        crate::request::for_tests(root, line, downloader)
    }

    #[test]
    fn the_home_sets_dnfs_dbpath_in_rpmmacros() {
        let home = home_with_dbpath("/usr/lib/sysimage/rpm").unwrap();
        let text = std::fs::read_to_string(home.path().join(".rpmmacros")).unwrap();
        assert_eq!(text, "%_dbpath /usr/lib/sysimage/rpm\n");
        assert_eq!(order_path(home.path()), home.path().join("order"));
        assert_eq!(plan_path(home.path()), home.path().join("plan"));
    }

    #[test]
    fn who_downloads_follows_the_downloader_and_keepcache() {
        let root = tempfile::tempdir().unwrap();
        // mkosi's dnf.conf in the root: keepcache as dnf reads it.
        let etc = root.path().join("etc/dnf");
        std::fs::create_dir_all(&etc).unwrap();
        std::fs::write(
            etc.join("dnf.conf"),
            "[main]\ngpgcheck=True\ninstallonly_limit=3\nclean_requirements_on_remove=True\nbest=False\nskip_if_unavailable=True\n",
        )
        .unwrap();
        let line = || Line::default();
        assert_eq!(
            downloads(&request(line(), Downloader::Auto, root.path())).unwrap(),
            None
        );
        assert_eq!(
            downloads(&request(line(), Downloader::Dnf, root.path()))
                .unwrap()
                .as_deref(),
            Some("of `--downloader dnf`")
        );
        // `--setopt=keepcache=True` on the command line wins over the file.
        let kept = || Line {
            keepcache: Some(true),
            ..Line::default()
        };
        assert_eq!(
            downloads(&request(kept(), Downloader::Auto, root.path()))
                .unwrap()
                .as_deref(),
            Some("dnf keeps its downloads (keepcache)")
        );
        assert!(matches!(
            downloads(&request(kept(), Downloader::Cowkit, root.path())),
            Err(RunError::Keepcache)
        ));
        // The root's dnf.conf saying keepcache=1.
        std::fs::write(etc.join("dnf.conf"), "[main]\nkeepcache=1\n").unwrap();
        assert!(keepcache(&request(line(), Downloader::Auto, root.path())));
        let off = Line {
            keepcache: Some(false),
            ..Line::default()
        };
        assert!(!keepcache(&request(off, Downloader::Auto, root.path())));
    }

    struct Notes(std::sync::Mutex<Vec<String>>);

    impl Events for Notes {
        fn recovered(&self, _: &cowkit_install::Recovery) {}
        fn note(&self, note: Note<'_>) {
            self.0.lock().unwrap().push(format!("{note:?}"));
        }
        fn fetching(&self) -> Box<dyn crate::stream::Reporter + '_> {
            unreachable!("nothing is fetched here")
        }
    }

    #[test]
    fn downloads_come_in_dnfs_order_or_file_name_order_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let home = tempfile::tempdir().unwrap();
        for f in [
            "bash-5.2.26-3.fc40.x86_64.rpm",
            "filesystem-3.18-8.fc40.x86_64.rpm",
            "repomd.xml",
        ] {
            std::fs::write(dir.path().join(f), b"").unwrap();
        }
        let notes = Notes(Default::default());
        let rpms = downloaded(dir.path(), home.path(), &notes).unwrap();
        let names: Vec<_> = rpms
            .iter()
            .map(|p| p.file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "bash-5.2.26-3.fc40.x86_64.rpm",
                "filesystem-3.18-8.fc40.x86_64.rpm"
            ]
        );
        assert_eq!(*notes.0.lock().unwrap(), ["NoOrder"]);
        // Nothing downloaded: nothing to say.
        let empty = tempfile::tempdir().unwrap();
        let notes = Notes(Default::default());
        assert!(downloaded(empty.path(), home.path(), &notes)
            .unwrap()
            .is_empty());
        assert!(notes.0.lock().unwrap().is_empty());
    }
}
