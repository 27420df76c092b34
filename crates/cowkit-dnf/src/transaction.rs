//! The transaction `cowkit dnf` runs in dnf's place: its options as dnf
//! would have rpm run it ([`options`]), the packages installed from the
//! cache as one transaction, dnf's module state, and the repositories'
//! keys imported into the root's database as dnf imports them.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use cowkit_extents::cache::Cache;
use cowkit_install::{prepare, Options, TxOptions, TxSummary};

use crate::cached::lookup_and_transcode;
use crate::conf::{tsflags_in_config, ConfigTsflags};
use crate::error::RunError;
use crate::request::{Request, Run, Summary, TxFlags};

/// A transaction's result: the outer error is cowkit's, the inner one
/// the transaction's (refused as a whole: nothing changed).
pub type Ran = Result<Result<TxSummary, cowkit_install::Error>, RunError>;

/// The `tsflags` of dnf's configuration file, unless the command line
/// set its own (dnf's `--setopt` replaces them); a flag cowkit does not
/// carry out is refused by name.
pub fn config_tsflags(req: &Request) -> Result<ConfigTsflags, RunError> {
    if req.line.tsflags_given {
        return Ok(ConfigTsflags::default());
    }
    let mut conf = tsflags_in_config(req.line.config.as_deref(), &req.root);
    match conf.refused.take() {
        Some(refused) => Err(RunError::ConfigUnhonoured { refused }),
        None => Ok(conf),
    }
}

/// The options of `cowkit dnf`'s transaction on `root` (`reinstall`:
/// every package is a reinstall, [`crate::order::reinstalls`]).
pub fn options(run: &Run<'_>, reinstall: bool) -> Result<TxOptions, RunError> {
    let (req, root) = (run.req, run.root);
    // dnf's nodocs is rpm's `--excludedocs`: the command line's, else its
    // configuration's (dnf5's own, where it said). The languages are
    // rpm's own `%_install_langs`, as for dnf's rpm (dnf 4 has no option
    // for them).
    let flags = match run.tsflags {
        Some(t) => t,
        None if req.line.dnf5 => TxFlags {
            nodocs: req.line.nodocs,
            justdb: req.line.justdb,
        },
        None => {
            let conf = config_tsflags(req)?;
            TxFlags {
                nodocs: req.line.nodocs || conf.nodocs,
                justdb: req.line.justdb || conf.justdb,
            }
        }
    };
    let files = cowkit_install::fate::Policy::from_host(flags.nodocs, Vec::new(), None)
        .map_err(RunError::Policy)?;
    Ok(TxOptions {
        install: Options {
            clone_tail: cowkit_install::clone_tail_pays_off(root),
            ..Options::default()
        },
        jobs: req.jobs,
        db: true,
        dbpath: req.dbpath.clone(),
        noscripts: req.noscripts,
        // dnf lets rpm downgrade (its problem filter always holds
        // RPMPROB_FILTER_OLDPACKAGE): `dnf downgrade` and distro-sync.
        oldpackage: true,
        reinstall,
        // `--setopt=tsflags=justdb`: rpm's `--justdb`.
        justdb: flags.justdb,
        script_stdout_to_stderr: req.scripts_to_stderr,
        // dnf installs install-only packages (kernels) beside the old
        // versions (rpm -i), where `rpm -U` would erase them.
        install_only: cowkit_install::InstallOnly::Beside,
        lua: (req.lua)(),
        keep_syncs: req.keep_syncs,
        files,
        handed: run.handed.to_vec(),
        ..TxOptions::default()
    })
}

/// The transaction a killed run left on the root finished, said through
/// the run's events.
pub fn recover(run: &Run<'_>) -> Result<Option<cowkit_install::Recovery>, RunError> {
    let root = run.root;
    let r = cowkit_install::recover(root, &options(run, false)?, &[]).map_err(|source| {
        RunError::Recover {
            root: root.path().to_path_buf(),
            source,
        }
    })?;
    if let Some(r) = &r {
        run.events.recovered(r);
    }
    Ok(r)
}

/// The packages dnf downloaded, `rpms`, installed from the cache as one
/// transaction: rpm checks and orders them (the same headers as their
/// extents files) while the misses are transcoded. The downloads, in
/// `download`, go before the transaction's final sync.
pub fn install_downloaded(
    run: &Run<'_>,
    cache: &Cache,
    rpms: &[PathBuf],
    download: Box<dyn Send>,
    summary: &mut Summary,
    reinstall: bool,
) -> Ran {
    let (req, root) = (run.req, run.root);
    let opts = options(run, reinstall)?;
    let t = Instant::now();
    let (prepared, cached) = std::thread::scope(|s| {
        let check = s.spawn(|| prepare(root, rpms, &opts));
        let cached = lookup_and_transcode(cache, rpms, req.jobs, req.worker, summary, run.events);
        (check.join().expect("the check does not panic"), cached)
    });
    summary.transcode_seconds = t.elapsed().as_secs_f64();
    let cached = cached?;
    let mut prepared = match prepared {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    let by_rpm: HashMap<&Path, &PathBuf> = rpms.iter().map(PathBuf::as_path).zip(&cached).collect();
    prepared.use_files(|p| by_rpm[p].clone());
    // The downloads go before the transaction's final `syncfs` of the
    // filesystem they share with the root, which would write back their
    // dirty pages first (most of the 0.46 s that the transaction of 450
    // MiB of packages spent outside its parts in
    // bench/results/2026-11-26-image-build-fedora-e46e9c1.md).
    prepared.release_before_final_sync(download);
    dnf_state(run)?;
    Ok(prepared.run(&cowkit_install::NoProgress))
}

/// The cache entries `entries` (in dnf's order) installed as one
/// transaction.
pub fn install_entries(run: &Run<'_>, entries: &[PathBuf], reinstall: bool) -> Ran {
    let root = run.root;
    let opts = options(run, reinstall)?;
    let prepared = match prepare(root, entries, &opts) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    dnf_state(run)?;
    Ok(prepared.run(&cowkit_install::NoProgress))
}

/// The directory dnf makes in the root (when missing) right before it
/// hands the checked transaction to rpm, which a root built through
/// cowkit gets at the same point: dnf 4 saves its module state in
/// `/etc/dnf/modules.d`; dnf5 takes its transaction lock in `/run/dnf`
/// (`/run/dnf/rpmtransaction.lock`, the file removed afterwards).
fn dnf_state(run: &Run<'_>) -> Result<(), RunError> {
    let root = run.root;
    let dir = match run.resolver {
        crate::shim::Resolver::Dnf4 => "etc/dnf/modules.d",
        crate::shim::Resolver::Dnf5 => "run/dnf",
    };
    let rel = cowkit_fs::root::RelPath::new(dir).expect("a relative path");
    root.create_dirs(&rel, 0o755)
        .map(drop)
        .map_err(|source| RunError::ModuleState {
            path: root.display(&rel),
            source,
        })
}

/// The key files of the repositories of `plan` that required signatures
/// (in the order of their first package), as dnf's signature check
/// imports a repository's `gpgkey` into the root it installs into (dnf
/// before its transaction, cowkit after it, once the database is where it
/// stays).
pub fn repo_keys(plan: &crate::plan::Plan) -> Vec<PathBuf> {
    let mut seen = HashSet::new();
    plan.packages
        .iter()
        .filter(|p| seen.insert(&p.repo))
        .map(|p| &plan.repos[&p.repo])
        .filter(|r| r.gpgcheck)
        .flat_map(|r| r.keys.iter().cloned())
        .collect()
}

/// The key files `files` imported into the root's database
/// (`gpg-pubkey` entries).
pub fn import_keys(run: &Run<'_>, files: &[PathBuf]) -> Result<(), RunError> {
    if files.is_empty() {
        return Ok(());
    }
    let req = run.req;
    let db = cowkit_rpmdb::find(run.root, req.dbpath.as_deref())
        .map_err(RunError::ImportKeys)?
        .ok_or(RunError::ImportKeysNoDb)?;
    cowkit_rpmdb::Rpm::new(&req.root, &db)
        .import_keys(files)
        .map_err(RunError::ImportKeys)
}
