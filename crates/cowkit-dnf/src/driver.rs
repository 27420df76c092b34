//! One `cowkit dnf` run, from the request to its outcome:
//!
//! 1. dnf resolves (and, where cowkit cannot fetch as dnf would,
//!    downloads) against the root's database, or an empty scratch one for
//!    a new root: dnf 4 ([`crate::dnf4`]) or dnf5 ([`crate::dnf5`]),
//!    whichever the real dnf is ([`Resolver`]); what the transaction will
//!    ask the host is asked meanwhile ([`crate::ahead`]).
//! 2. By default cowkit fetches the packages of dnf's plan itself,
//!    streaming each through a confined transcoder into the cache as it
//!    arrives ([`crate::stream`]); else each package dnf downloaded is
//!    looked up in the cache, the misses transcoded ([`crate::cached`]).
//! 3. The cache entries are installed as one transaction
//!    ([`crate::transaction`]).
//!
//! Commands that install nothing (`remove`, `list`, `history`, ...) run
//! dnf itself on the root's database.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use cowkit_extents::cache::Cache;
use cowkit_fs::root::Root;

use crate::ahead::Ahead;
use crate::dnf5::Outcome as Dnf5Outcome;
use crate::error::RunError;
use crate::line::Line;
use crate::plan::Plan;
use crate::request::{Events, Note, Outcome, Request, Run, Summary};
use crate::shim::Resolver;
use crate::stream::Reporter;
use crate::transaction::{
    config_tsflags, import_keys, install_downloaded, install_entries, recover, repo_keys,
};

/// The prefix of the download directories in the cache.
pub const DOWNLOAD_PREFIX: &str = "download.";

/// What cowkit cannot honour in `line` when it installs, as one error.
pub fn refusals(line: &Line) -> Result<(), RunError> {
    if !line.installs() || line.refused.is_empty() {
        return Ok(());
    }
    Err(RunError::Unhonoured {
        refused: line.refused.clone(),
    })
}

/// Run `req`: dnf resolves, cowkit fetches (or dnf downloads), transcodes
/// into the cache and installs; or dnf runs a command that installs
/// nothing itself, on the root's database.
pub fn run(req: &Request, events: &dyn Events) -> Result<Outcome, RunError> {
    refusals(&req.line)?;
    let installs = req.line.installs();
    // dnf 4's configuration, read as dnf 4 reads it; dnf5's plugin says
    // what dnf5 holds once it resolved.
    if installs && !req.line.dnf5 {
        config_tsflags(req)?;
    }
    // rpm refuses a relative root (scriptlets run chrooted into it).
    if !req.root.is_absolute() {
        return Err(RunError::RelativeRoot {
            root: req.root.clone(),
        });
    }
    // Which dnf resolves, decided once, and what cowkit cannot do with
    // it refused before the root is touched.
    let dnf = crate::shim::real_dnf_named(if req.line.named_dnf5 { "dnf5" } else { "dnf" })?;
    let resolver = Resolver::of(&dnf);
    if installs && resolver == Resolver::Dnf5 {
        crate::dnf5::refusals(req)?;
    }
    cowkit_fs::dir::raise_fd_limit();
    let root_error = |what, e: Box<dyn std::error::Error + Send + Sync>| RunError::Root {
        what,
        root: req.root.clone(),
        source: e,
    };
    std::fs::create_dir_all(&req.root).map_err(|e| root_error("create", Box::new(e)))?;
    let root = Root::open(&req.root).map_err(|e| root_error("open", Box::new(e)))?;
    let run = Run {
        req,
        root: &root,
        events,
        resolver,
        tsflags: None,
        handed: &[],
    };
    let found = cowkit_rpmdb::find(&root, req.dbpath.as_deref()).map_err(RunError::FindDb)?;
    // A transaction a killed run left unfinished is finished before dnf
    // reads the database (its options, which ask the host's rpm, only
    // when there is one).
    let pending = cowkit_install::recovery_pending(&root, req.dbpath.as_deref())
        .map_err(RunError::RecoveryPending)?;
    let recovered = if pending { recover(&run)? } else { None };
    if !installs {
        drop(recovered);
        let db = match found {
            Some(db) => db,
            None => {
                cowkit_rpmdb::locate(&root, req.dbpath.as_deref()).map_err(RunError::LocateDb)?
            }
        };
        return Ok(Outcome::Dnf(match resolver {
            Resolver::Dnf4 => crate::dnf4::run_itself(req, &dnf, &db.path)?,
            Resolver::Dnf5 => {
                let home = crate::dnf4::home_with_dbpath(&db.path)?;
                crate::dnf5::run_itself(req, &dnf, home.path())?
            }
        }));
    }
    // The cache first: one others can change is refused before anything
    // is downloaded; downloads and scratch databases that killed runs
    // left are removed.
    let cache = Cache::open(&req.cache)?;
    cowkit_fs::workdir::sweep(cache.fd(), cache.dir(), DOWNLOAD_PREFIX).map_err(RunError::Sweep)?;
    resolve_and_install(
        &run,
        &cache,
        &dnf,
        found,
        Summary {
            recovered,
            ..Summary::default()
        },
    )
}

/// dnf resolves against the root's database `found` (or an empty scratch
/// one: where a new root's database goes is decided after its packages
/// are placed), then the packages are fetched or taken from dnf's
/// downloads, and installed.
fn resolve_and_install(
    run: &Run<'_>,
    cache: &Cache,
    dnf: &std::path::Path,
    found: Option<cowkit_rpmdb::DbPath>,
    mut summary: Summary,
) -> Result<Outcome, RunError> {
    let req = run.req;
    let resolver = run.resolver;
    let scratch = match &found {
        Some(_) => None,
        None => Some(cowkit_rpmdb::Scratch::new(run.root).map_err(RunError::Scratch)?),
    };
    let db_for_dnf = found
        .as_ref()
        .or(scratch.as_ref().map(|s| s.db()))
        .expect("one of them")
        .path
        .clone();
    // Held (locked) while in use; removed on drop, on SIGINT/SIGTERM, or
    // by the next run's sweep after a kill.
    let download =
        cowkit_fs::workdir::WorkDir::create(cache.fd(), cache.dir(), DOWNLOAD_PREFIX, 0o700)
            .map_err(RunError::DownloadDir)?;
    let home = crate::dnf4::home_with_dbpath(&db_for_dnf)?;
    // Who downloads: decided before dnf runs where cowkit can tell (dnf5
    // has refused what would make it download already).
    let dnf_downloads = match resolver {
        Resolver::Dnf4 => crate::dnf4::downloads(req)?,
        Resolver::Dnf5 => None,
    };
    let plan_path = crate::dnf4::plan_path(home.path());
    let order_path = crate::dnf4::order_path(home.path());
    let ahead = Ahead::ask();
    let t = Instant::now();
    // dnf's exit status (or dnf5's outcome), for the scratch keys.
    let resolved = match resolver {
        Resolver::Dnf4 => crate::dnf4::resolve(
            req,
            dnf,
            home.path(),
            download.path(),
            dnf_downloads.is_none().then_some(plan_path.as_path()),
        )
        .map(|status| (status, None)),
        Resolver::Dnf5 => crate::dnf5::resolve(
            req,
            dnf,
            home.path(),
            download.path(),
            &order_path,
            &plan_path,
        )
        .map(|o| (std::process::ExitStatus::default(), Some(o))),
    };
    let dnf_keys = match &resolved {
        Ok((status, _)) => crate::dnf4::scratch_keys(
            &req.root,
            scratch.as_ref(),
            &Ok(*status),
            download.path(),
            home.path(),
        )?,
        Err(_) => Vec::new(),
    };
    // dnf5's own transaction flags are refused by name before anything
    // is downloaded; with `keepcache` as dnf5 holds it, dnf5 then keeps
    // its own copies, against the database it resolved with.
    if let Ok((_, Some(o))) = &resolved {
        let plan = match o {
            Dnf5Outcome::Stopped(p) => Some(p),
            Dnf5Outcome::Finished(p) => p.as_ref(),
        };
        if let Some(p) = plan {
            crate::dnf5::flags(p)?;
            if p.keepcache == Some(true) {
                if req.downloader == crate::request::Downloader::Cowkit {
                    return Err(RunError::Keepcache);
                }
                crate::dnf5::keep_copies(req, dnf, home.path())?;
            }
        }
    }
    drop(scratch);
    let (status, dnf5) = resolved?;
    if !status.success() {
        return Err(RunError::DnfFailed { status });
    }
    summary.resolve_seconds = t.elapsed().as_secs_f64();
    ahead.wait();
    // dnf's reinstalls are rpm's `--reinstall` elements: all or none.
    let reinstall = crate::order::reinstalls(&order_path)?;
    // dnf5's elements as it hands them to rpm: erasures of their own
    // (what a package it installs obsoletes) are ordered and run as rpm
    // orders and runs them.
    let handed = match resolver {
        Resolver::Dnf5 => crate::dnf5::handed(&order_path)?,
        Resolver::Dnf4 => Vec::new(),
    };
    let plan = match (dnf5, &dnf_downloads) {
        (Some(Dnf5Outcome::Stopped(plan)), _) => Some(plan),
        // dnf5 went on: it downloaded, for the plan's reasons.
        (Some(Dnf5Outcome::Finished(Some(plan))), _) if !plan.why.is_empty() => Some(plan),
        (Some(Dnf5Outcome::Finished(Some(_))), _) => {
            return Err(crate::Error::Dnf5WentOn.into());
        }
        (Some(Dnf5Outcome::Finished(None)), _) => None,
        (None, None) => Plan::read(&plan_path)?,
        (None, Some(_)) => None,
    };
    // dnf5's own transaction flags, as it holds them (refused above).
    let flags = match &plan {
        Some(p) if resolver == Resolver::Dnf5 => crate::dnf5::flags(p)?,
        _ => None,
    };
    let run = &Run {
        tsflags: flags.or(run.tsflags),
        handed: &handed,
        ..*run
    };
    // What dnf5 went on to download, by its plan.
    let planned = plan.as_ref().map_or(0, |p| p.packages.len());
    let no_plan = plan.is_none();
    let reasons = match (dnf_downloads, plan) {
        (_, Some(plan)) if plan.why.is_empty() => {
            drop(download);
            return streamed(run, cache, &plan, summary, reinstall);
        }
        (_, Some(plan)) => plan.why,
        (Some(why), None) => vec![why],
        (None, None) if resolver == Resolver::Dnf5 => {
            vec!["dnf5 ran without cowkit's plugin writing a plan".into()]
        }
        (None, None) => vec![
            "dnf is not dnf's own Python entry point: cowkit cannot get its download plan".into(),
        ],
    };
    let rpms = crate::dnf4::downloaded(download.path(), home.path(), run.events)?;
    summary.downloaded = rpms.len();
    if rpms.is_empty() && resolver == Resolver::Dnf5 && planned > 0 {
        return Err(crate::Error::Dnf5NoDownloads {
            planned,
            dir: download.path().to_path_buf(),
        }
        .into());
    }
    if rpms.is_empty() {
        return Ok(Outcome::Nothing);
    }
    if resolver == Resolver::Dnf5 && no_plan {
        return Err(crate::Error::Dnf5WithoutPlugin {
            downloaded: rpms.len(),
        }
        .into());
    }
    if req.downloader == crate::request::Downloader::Cowkit {
        return Err(RunError::CannotFetch { reasons });
    }
    run.events.note(Note::DnfDownloads(&reasons));
    summary.downloaded_by = "dnf";
    summary.fallback_reasons = reasons;
    let total = match install_downloaded(
        run,
        cache,
        &rpms,
        Box::new(download),
        &mut summary,
        reinstall,
    )? {
        Ok(total) => total,
        Err(e) => return Ok(Outcome::Refused(e)),
    };
    import_keys(run, &dnf_keys)?;
    Ok(Outcome::Installed(Box::new(total), summary))
}

/// The caller's reporter, with the bytes received counted.
struct Counted<'a> {
    inner: Box<dyn Reporter + 'a>,
    bytes: AtomicU64,
}

impl Reporter for Counted<'_> {
    fn on_bytes(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
        self.inner.on_bytes(n);
    }
    fn on_start(&self, bytes: u64) {
        self.inner.on_start(bytes);
    }
    fn on_note(&self, line: &str) {
        self.inner.on_note(line);
    }
}

/// cowkit fetches `plan`'s packages into the cache, then installs the
/// entries as one transaction.
fn streamed(
    run: &Run<'_>,
    cache: &Cache,
    plan: &Plan,
    mut summary: Summary,
    reinstall: bool,
) -> Result<Outcome, RunError> {
    summary.downloaded_by = "cowkit";
    summary.downloaded = plan.packages.len();
    if plan.packages.is_empty() {
        return Ok(Outcome::Nothing);
    }
    let reporter = Counted {
        inner: run.events.fetching(),
        bytes: AtomicU64::new(0),
    };
    let t = Instant::now();
    let fetched = crate::stream::fetch_all(cache, plan, &reporter, &run.req.worker);
    // The caller's progress ends before anything else is said.
    let Counted { inner, bytes } = reporter;
    drop(inner);
    let fetched = fetched?;
    summary.transcode_seconds = t.elapsed().as_secs_f64();
    summary.cache_hits = fetched.cached + fetched.reused;
    summary.cache_misses = fetched.transcoded;
    summary.cache_damaged = fetched.damaged;
    summary.not_downloaded = fetched.cached;
    summary.downloaded_bytes = bytes.into_inner();
    summary.failed_attempts = fetched.failed_attempts;
    run.events.note(Note::Fetched {
        transcoded: fetched.transcoded + fetched.reused,
        bytes: summary.downloaded_bytes,
        seconds: summary.transcode_seconds,
        cached: fetched.cached,
    });
    let total = match install_entries(run, &fetched.paths, reinstall)? {
        Ok(total) => total,
        Err(e) => return Ok(Outcome::Refused(e)),
    };
    import_keys(run, &repo_keys(plan))?;
    Ok(Outcome::Installed(Box::new(total), summary))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conf::Refusal;
    use crate::request::Downloader;
    use std::path::{Path, PathBuf};

    /// Events that must not happen: the refusals come before anything.
    struct Silent;

    impl Events for Silent {
        fn recovered(&self, _: &cowkit_install::Recovery) {
            panic!("nothing is recovered before the refusals")
        }
        fn note(&self, note: Note<'_>) {
            panic!("no note before the refusals: {note:?}")
        }
        fn fetching(&self) -> Box<dyn Reporter + '_> {
            panic!("nothing is fetched before the refusals")
        }
    }

    fn request(root: &Path, line: Line) -> Request {
        Request {
            cache: PathBuf::from("/nonexistent/cowkit-cache"),
            ..crate::request::for_tests(root, line, Downloader::Auto)
        }
    }

    /// `install bash` as mkosi and kiwi ask it, with `refused` and a
    /// `--config` file.
    fn install(refused: Vec<Refusal>, config: Option<PathBuf>) -> Line {
        Line {
            command: Some("install".into()),
            rest: ["-y", "install", "bash"].map(Into::into).to_vec(),
            refused,
            config,
            ..Line::default()
        }
    }

    #[test]
    fn what_cowkit_cannot_honour_is_refused_before_the_root_is_touched() {
        let dir = tempfile::tempdir().unwrap();
        // The root is relative and does not exist: the options are
        // refused first, then dnf's configuration, then the root.
        let root = Path::new("relative/root");
        let comment = Refusal {
            option: "--comment=image build".into(),
            why: "no history",
        };
        let err = run(
            &request(root, install(vec![comment.clone()], None)),
            &Silent,
        )
        .unwrap_err();
        assert!(
            matches!(&err, RunError::Unhonoured { refused } if *refused == [comment.clone()]),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "cowkit cannot honour dnf's option: `--comment=image build`: no history"
        );
        let two = vec![comment.clone(), comment];
        let err = run(&request(root, install(two, None)), &Silent).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("cowkit cannot honour dnf's options: "),
            "{err}"
        );

        // dnf.conf's [main] with a flag cowkit does not carry out.
        let conf = dir.path().join("dnf.conf");
        std::fs::write(
            &conf,
            "[main]\ngpgcheck=True\ninstallonly_limit=3\ntsflags=nodocs,test\n",
        )
        .unwrap();
        let err = run(
            &request(root, install(Vec::new(), Some(conf.clone()))),
            &Silent,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "cowkit cannot honour dnf's configuration: `tsflags=test`: {}",
                crate::conf::TSFLAGS
            )
        );
        // The command line's `--setopt=tsflags=…` replaces the file's.
        let mut line = install(Vec::new(), Some(conf.clone()));
        line.tsflags_given = true;
        let err = run(&request(root, line), &Silent).unwrap_err();
        assert!(
            matches!(&err, RunError::RelativeRoot { root: r } if r == root),
            "{err}"
        );
        assert!(!root.exists());

        // A command that installs nothing: dnf's own business, but the
        // root must still be absolute.
        let remove = Line {
            command: Some("remove".into()),
            refused: vec![Refusal {
                option: "--comment=x".into(),
                why: "no history",
            }],
            config: Some(conf),
            ..Line::default()
        };
        let err = run(&request(root, remove), &Silent).unwrap_err();
        assert!(matches!(err, RunError::RelativeRoot { .. }), "{err}");
    }
}
